"""Readings added after the twenty-fourth blind harvest (the r27* cases of the real corpus), one behaviour per test,
each with the look-alike it must not catch: torchrun 2.3+'s death signal followed by the agent's own traceback,
torch's elastic log prefix whose number is a thread id, a CUDA error inside a JSON failure report, an XPU's
out-of-device-memory in its runtime's words. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, one
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.prefixes import split_prefix
from syncdoctor.analyze.rules.phrases import read_as

diagnose = diagnose_paste

_AGENT = """W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/agent/server/api.py:688] Received \
Signals.SIGTERM death signal, shutting down workers
W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/multiprocessing/api.py:857] Sending process 6236 \
closing signal SIGTERM
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 33, in <module>
    sys.exit(load_entry_point('torch==2.4.0', 'console_scripts', 'torchrun')())
"""


def test_the_agents_own_traceback_after_its_death_signal_is_its_end(tmp_path: Path) -> None:
    # real: pytorch/pytorch#114097 (a node killed on purpose to test elastic training)
    top = diagnose(tmp_path, _AGENT).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "stopped by SIGTERM" in top.title
    assert "139733055988160" not in top.title  # a thread id, not a process
    # a worker's own exception after the signal is a failure of its own, not the agent's end
    worker = _AGENT + "[rank3]: ValueError: bad batch\n"
    assert diagnose(tmp_path, worker).hypotheses[0].category is not Category.RANK_KILLED


def test_torchs_elastic_prefix_number_is_a_pid_only_when_it_can_be_one() -> None:
    line = ("W0823 16:54:02.337000 {} torch/distributed/elastic/multiprocessing/api.py:857] Sending process 6236 "
            "closing signal SIGTERM")
    assert split_prefix(line.format("139733055988160")).origin.pid is None  # over Linux's PID_MAX_LIMIT
    assert split_prefix(line.format("4242")).origin.pid == 4242
    assert one(line.format("139733055988160"), Kind.WORKER_TERMINATED).data["worker_pid"] == 6236


def test_a_cuda_error_inside_a_json_failure_report(tmp_path: Path) -> None:
    # real: DLRover's blog (a job master's report: the message of the error file, newlines escaped)
    line = ('      "message": "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution\\\\nCUDA '
            'kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be '
            'incorrect.\\\\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.",\n')
    event = one(line, Kind.GPU_ERROR)
    assert event.data["message"] == "uncorrectable NVLink error detected during the execution"
    assert event.data["hardware"] is True
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.GPU_ERROR


def test_an_xpus_out_of_device_memory_in_its_runtimes_words() -> None:
    # real: intel/torch-ccl#65 (Level Zero's result code, through oneCCL)
    reading = read_as("terminate called after throwing an instance of 'ccl::v1::exception' what(): oneCCL: "
                      "ze_call.cpp:43 do_call: EXCEPTION: ze error at zeMemAllocDevice, code: "
                      "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY")
    assert reading is not None and reading.category is Category.RANK_OUT_OF_MEMORY


def test_a_kernel_line_quoted_in_an_alert_keeps_its_host(tmp_path: Path) -> None:
    # real: the IDEFICS-80B logbook (an alert quoting each node's kernel line)
    line = ("Xid errors on instance: ip-26-0-146-100, Error: May 19 07:08:57 ip-26-0-146-100 kernel: [680111.646286] "
            "NVRM: Xid (PCI:0000:10:1c): 63, pid=1850, Row Remapper: New row marked for remapping, reset gpu to activate")
    assert one(line, Kind.GPU_ERROR).origin.host == "ip-26-0-146-100"
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_hosts == ("ip-26-0-146-100",)
    # a line that names no syslog header keeps no host
    assert one("[680111.646286] NVRM: Xid (PCI:0000:10:1c): 63, pid=1850, x", Kind.GPU_ERROR).origin.host is None
