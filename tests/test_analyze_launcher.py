"""torchrun failure summaries and agent lines, Python tracebacks, CUDA OOM and fatal signals."""

from __future__ import annotations

import pytest

from analyze_helpers import FIXTURES, events_of, one, read
from syncdoctor.analyze.model import Kind, Origin
from syncdoctor.analyze.parsers.torchrun import signal_name

TABLE = """Traceback (most recent call last):
  File "/usr/bin/torchrun", line 8, in <module>
    sys.exit(main())
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-05-01_12:00:05
  host      : node1
  rank      : 3 (local_rank: 1)
  exitcode  : -15 (pid: 1235)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 1235
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-01_12:00:00
  host      : node1
  rank      : 2 (local_rank: 0)
  exitcode  : -9 (pid: 1234)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 1234
============================================================
after the table
"""


def test_failure_table_records() -> None:
    records = {e.origin.rank: e for e in read(TABLE, "node1/agent.log") if e.kind is Kind.WORKER_FAILED}
    assert set(records) == {2, 3}
    root, other = records[2], records[3]
    assert root.data["root_cause"] and not other.data["root_cause"]
    assert (root.data["exitcode"], root.data["signal"], root.origin.pid) == (-9, "SIGKILL", 1234)
    assert (other.data["exitcode"], other.data["signal"]) == (-15, "SIGTERM")
    assert root.origin.local_rank == 0 and root.origin.host == "node1"
    assert root.time_text == "2024-05-01_12:00:00" and root.time is not None and other.time > root.time
    assert root.ref.line == 22


def test_failure_table_with_launcher_prefix_and_no_other_failures() -> None:
    text = "\n".join(f"0: {line}" for line in [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "=" * 60, "train.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
        "Root Cause (first observed failure):", "[0]:", "  time      : 2024-05-01_12:00:00", "  host      : localhost",
        "  rank      : 5 (local_rank: 1)", "  exitcode  : 1 (pid: 99)", "  error_file: /tmp/err.json",
        "  traceback : Traceback (most recent call last):", "    File \"x.py\", line 1", "  ValueError: bad", "=" * 60,
    ])
    records = [e for e in read(text) if e.kind is Kind.WORKER_FAILED]
    assert len(records) == 1
    assert records[0].origin.rank == 5 and records[0].data["exitcode"] == 1 and records[0].data["signal"] is None
    assert records[0].origin.host is None and records[0].data["table_host"] == "localhost"  # localhost says nothing


def test_agent_lines() -> None:
    failed = one("E1129 13:49:48.896000 11678 .venv/lib/python3.11/site-packages/torch/distributed/elastic/"
                 "multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 0 (pid: 11865) of binary: sh",
                 Kind.WORKER_FAILED, Origin(host="host1"))
    assert failed.data["signal"] == "SIGKILL" and failed.data["worker_pid"] == 11865
    assert failed.origin.local_rank == 0 and failed.origin.host == "host1"
    old = one("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 2 (pid: 77) of "
              "binary: /usr/bin/python3", Kind.WORKER_FAILED)
    assert old.data["exitcode"] == 1
    term = one("W1129 13:49:48.860000 11678 .venv/lib/python3.11/site-packages/torch/distributed/elastic/"
               "multiprocessing/api.py:1028] Sending process 11868 closing signal SIGTERM", Kind.WORKER_TERMINATED)
    assert term.data == {"worker_pid": 11868, "signal": "SIGTERM"}


@pytest.mark.parametrize(("code", "name"), [(-9, "SIGKILL"), (-15, "SIGTERM"), (-6, "SIGABRT"), (-11, "SIGSEGV"),
                                             (1, None), (0, None), (None, None), (-64, "signal 64")])
def test_signal_name(code, name) -> None:
    assert signal_name(code) == name


def test_traceback_frames_and_exception() -> None:
    text = (FIXTURES / "lab" / "crash" / "host1" / "rank3.log").read_text()
    exceptions = [e for e in read(text, "rank3.log", Origin(rank=3)) if e.kind is Kind.EXCEPTION]
    assert len(exceptions) == 1
    data = exceptions[0].data
    assert data["type"] == "RuntimeError" and "injected fault" in data["message"]
    assert data["where"].endswith("in _crash") and len(data["frames"]) == 4


def test_interleaved_tracebacks_keep_their_rank() -> None:
    text = "\n".join([
        "[rank0]: Traceback (most recent call last):",
        "[rank1]: Traceback (most recent call last):",
        '[rank0]:   File "a.py", line 1, in f0',
        '[rank1]:   File "b.py", line 2, in f1',
        "[rank1]: ValueError: one",
        "[rank0]: KeyError: 'zero'",
    ])
    found = {e.origin.rank: e.data for e in read(text) if e.kind is Kind.EXCEPTION}
    assert found[0]["type"] == "KeyError" and found[0]["where"] == "a.py:1 in f0"
    assert found[1]["type"] == "ValueError" and found[1]["where"] == "b.py:2 in f1"


def test_launcher_traceback_is_not_a_rank_exception() -> None:
    assert not [e for e in read(TABLE) if e.kind is Kind.EXCEPTION]


@pytest.mark.parametrize(("line", "tried", "gpu"), [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 79.15 GiB total capacity)",
     "2.00 GiB", 3),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
     "79.15 GiB of which 3.94 MiB is free.", "20.00 MiB", 0),  # the 2.1+ wording names the device too
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.", "1.00 GiB", None),
    ("RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 1; 15.78 GiB total capacity)",
     "512.00 MiB", 1),
])
def test_cuda_oom(line, tried, gpu) -> None:
    event = one(line, Kind.CUDA_OOM)
    assert event.data["tried"] == tried and event.data["gpu"] == gpu
    assert one(line, Kind.EXCEPTION).data["type"].endswith(("OutOfMemoryError", "RuntimeError"))


@pytest.mark.parametrize(("line", "signal"), [
    ("Fatal Python error: Segmentation fault", "SIGSEGV"),
    ("Fatal Python error: Aborted", "SIGABRT"),
])
def test_fatal_signals(line, signal) -> None:
    assert one(line, Kind.FATAL_SIGNAL).data["signal"] == signal


def test_exception_needs_an_exception_line() -> None:
    assert not [e for e in events_of("the error rate is low today") if e.kind is Kind.EXCEPTION]
    assert not [e for e in events_of("Errors: 0, warnings: 2") if e.kind is Kind.EXCEPTION]
