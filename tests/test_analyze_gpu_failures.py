"""Failures recorded on a real GPU machine by ``scripts/gpu-check.sh`` (part ``failures``, 2026-12-04: 1x H200,
torch 2.11.0+cu130, NCCL 2.28.9; tests/fixtures/analyze/gpu/README.md), analyzed through the API, and the readings
they showed missing, with plain lines: a device-side assert met by PyTorch's NCCL watchdog (no Python traceback), a
worker's exception printed without its rank above torchrun's record of it, the one worker that failed where the
launcher stopped the others with SIGTERM, NCCL's timestamped WARN prefix shared with the other events of its line,
NCCL_NET=IB on a host without InfiniBand."""

from __future__ import annotations

import pytest

from analyze_helpers import FIXTURES
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind, Origin, Ref
from syncdoctor.analyze.parsers import make_line, parse_line

GPU = FIXTURES / "gpu"


def root_of(case: str):
    analysis = analyze_paths([str(GPU / case)])
    root = analysis.diagnosis.root_cause
    assert root is not None, case
    return analysis, root


def quoted(root) -> list[str]:
    return [e.text for e in root.evidence]


# --- the recordings ------------------------------------------------------------------------------------------

def test_device_side_assert_met_by_the_watchdog_is_the_programs_own() -> None:
    analysis, root = root_of("assert")
    assert root.category is Category.RANK_CRASHED and root.code == "A003"
    assert (root.culprit_ranks, root.culprit_hosts) == ((0,), ("vm",))
    assert "device-side assertion" in root.title and "index out of bounds" in root.what
    assert "CUDA_LAUNCH_BLOCKING=1" in root.fix and "SIGKILL" not in root.fix
    texts = quoted(root)
    assert any("watchdog thread terminated with exception: CUDA error: device-side assert" in t for t in texts)
    assert any('"index out of bounds"` failed' in t for t in texts)  # the kernel's own assertion, above it
    assert Category.GPU_ERROR not in {h.category for h in analysis.diagnosis.hypotheses}  # not the GPU's fault


def test_more_processes_than_gpus_names_the_one_that_asked() -> None:
    _, root = root_of("ordinal")
    assert root.category is Category.UNRECOGNISED  # (more processes than visible GPUs: the launch, A028)
    assert root.culprit_ranks == (1,)  # torchrun's table: rank 1 (local_rank 1) exited 1; rank 0 got SIGTERM
    assert "invalid device ordinal" in root.title and "LOCAL_RANK" in root.fix


def test_two_ranks_on_one_gpu() -> None:
    _, root = root_of("dupgpu")
    assert root.category is Category.DUPLICATE_GPU and root.culprit_hosts == ("vm",)
    assert set(root.culprit_ranks) == {0, 1}


@pytest.mark.parametrize(("case", "words"), [
    ("netib", "NCCL_NET names IB, and NCCL's IB transport found no InfiniBand or RoCE device"),
    ("netnosuch", "the NCCL_NET it was told to use is not there"),
])
def test_nccl_net_naming_a_transport_that_does_not_start(case: str, words: str) -> None:
    _, root = root_of(case)
    assert root.category is Category.UNRECOGNISED and words in root.title and root.culprit_hosts == ("vm",)
    assert "NCCL_NET" in root.fix


def test_nccl_net_ib_and_a_plugin_name_get_different_fixes() -> None:
    _, ib = root_of("netib")
    _, other = root_of("netnosuch")
    assert "InfiniBand/RoCE" in ib.fix and "plugin" in other.fix and ib.fix != other.fix


def test_comm_id_that_is_no_address() -> None:
    _, root = root_of("commid")
    assert root.title.startswith("NCCL_COMM_ID is not an address NCCL can use") and root.culprit_hosts == ("vm",)


def test_no_gpu_visible_reads_the_unprefixed_traceback() -> None:
    _, root = root_of("nogpu")
    assert root.category is Category.RANK_CRASHED and root.culprit_ranks == (0,)
    assert "no GPU visible" in root.title and "No CUDA GPUs are available" in root.what
    assert root.confidence > 0.55  # its own error is read, not only the launcher's record of an exit


def test_nccl_setup_with_the_gpu_memory_full() -> None:
    _, root = root_of("oom")
    assert root.category is Category.RANK_OUT_OF_MEMORY and root.culprit_ranks == (0,)
    assert root.culprit_hosts == ("vm",)
    assert any("NCCL WARN Cuda failure 2 'out of memory'" in t for t in quoted(root))


def test_a_healthy_job_on_loopback_is_quiet() -> None:
    analysis = analyze_paths([str(GPU / "iflo")])
    assert analysis.diagnosis.hypotheses == ()
    (bootstrap,) = analysis.timeline.of(Kind.NCCL_BOOTSTRAP)
    assert (bootstrap.data["ifname"], bootstrap.data["addr"]) == ("lo", "127.0.0.1")


def test_nccl_228_warn_lines_carry_a_timestamp_before_the_prefix() -> None:
    analysis = analyze_paths([str(GPU / "commid")])
    warns = [w for w in analysis.timeline.of(Kind.NCCL_WARN) if not w.data.get("last_error")]
    assert warns and all(w.origin.host == "vm" and w.origin.pid == 773 for w in warns)
    assert all(w.text.startswith("[2026-12-04 10:01:21] vm:773:773 [0] ") for w in warns)


def test_a_training_step_out_of_memory() -> None:
    _, root = root_of("trainoom")
    assert root.category is Category.RANK_OUT_OF_MEMORY and root.culprit_ranks == (0,) and "279.60 GiB" in root.what


# --- the same failures without NCCL_DEBUG, as most jobs log them ---------------------------------------------

def test_quiet_two_ranks_on_one_gpu_from_interleaved_tracebacks() -> None:
    # both processes wrote their traceback at once: "torch.distributedtorch.distributed..DistBackendError…" and
    # "…both on CUDA device 60NCCL error in: …" on the lines PyTorch's 'Last error:' leads
    _, root = root_of("dupgpu-quiet")
    assert root.category is Category.DUPLICATE_GPU and set(root.culprit_ranks) == {0, 1}


def test_quiet_nccl_net_ib_read_from_pytorchs_last_error() -> None:
    analysis, root = root_of("netib-quiet")
    assert root.category is Category.UNRECOGNISED and "network transport" in root.title
    (warn,) = analysis.timeline.of(Kind.NCCL_WARN)  # the echo after 'Last error:' is NCCL's WARN
    assert warn.data["last_error"] and warn.data["message"] == "Failed to initialize any NET plugin"


def test_quiet_nccl_setup_out_of_memory_names_the_rank_from_torchruns_table() -> None:
    analysis, root = root_of("oom-quiet")
    assert root.category is Category.RANK_OUT_OF_MEMORY and root.culprit_ranks == (0,)
    # NCCL's result code under PyTorch's DistBackendError is not the rank's own exception
    assert not any(h.category is Category.RANK_CRASHED and h.confidence > root.confidence
                   for h in analysis.diagnosis.hypotheses)


@pytest.mark.parametrize(("case", "category"), [("assert-quiet", Category.RANK_CRASHED),
                                                ("trainoom-quiet", Category.RANK_OUT_OF_MEMORY)])
def test_quiet_recordings_read_as_with_nccls_info(case: str, category: Category) -> None:
    _, root = root_of(case)
    _, loud = root_of(case.removesuffix("-quiet"))
    assert root.category is category is loud.category and root.culprit_ranks == loud.culprit_ranks == (0,)


# --- the readings, with plain lines --------------------------------------------------------------------------

def events_of(text: str, origin: Origin | None = None) -> list:
    return parse_line(make_line(text, Ref("x.log", 1), origin or Origin()))


def test_kernel_assertion_line_is_an_exception_with_its_words() -> None:
    (event,) = events_of('/w/aten/src/ATen/native/cuda/Loss.cu:94: operator(): block: [117,0,0], thread: [26,0,0] '
                         'Assertion `input_val >= zero && input_val <= one` failed.')
    assert event.kind is Kind.EXCEPTION and event.data["source"] == "cuda-kernel"
    assert event.data["where"] == "Loss.cu:94" and "input_val >= zero" in event.data["message"]
    (bounds,) = events_of('/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:111: operator(): block: [0,0,0], '
                          'thread: [0,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` '
                          'failed.')
    assert "index out of bounds (IndexKernel.cu:111)" in bounds.data["message"]


def test_c_assertion_is_still_an_abort() -> None:
    (event,) = events_of("python: pthread_mutex_lock.c:81: __pthread_mutex_lock: Assertion `mutex->__data.__owner "
                         "== 0' failed.")
    assert event.kind is Kind.FATAL_SIGNAL and event.data["signal"] == "SIGABRT"


@pytest.mark.parametrize("message", ["device-side assert triggered", "out of memory", "invalid device ordinal"])
def test_watchdog_ended_by_a_program_cuda_error_is_the_ranks_exception(message: str) -> None:
    (event,) = events_of(f"[PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with "
                         f"exception: CUDA error: {message}")
    assert event.kind is Kind.EXCEPTION and event.origin.rank == 3
    assert event.data["message"] == f"CUDA error: {message}" and event.data["source"] == "watchdog"


def test_program_cuda_error_elsewhere_is_left_to_the_traceback() -> None:
    assert events_of("RuntimeError: CUDA error: device-side assert triggered")[0].data["type"] == "RuntimeError"
    assert not [e for e in events_of("CUDA error: device-side assert triggered") if e.kind is Kind.EXCEPTION]


def test_watchdog_ended_by_a_gpu_fault_stays_a_gpu_error() -> None:
    (event,) = events_of("[PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with "
                         "exception: CUDA error: an illegal memory access was encountered")
    assert event.kind is Kind.GPU_ERROR


def test_events_of_an_nccl_warn_line_share_its_writer() -> None:
    events = events_of("[2026-06-23 15:45:07] gpu-7:420:437 [5] transport/nvls.cc:379 NCCL WARN Failed to bind "
                       "NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be "
                       "performed in the present state'.")
    kinds = {e.kind for e in events}
    assert {Kind.NCCL_WARN, Kind.GPU_ERROR} <= kinds
    assert all((e.origin.host, e.origin.pid, e.origin.device) == ("gpu-7", 420, 5) for e in events)


def test_a_line_prefix_origin_is_kept_where_no_warn_names_another() -> None:
    events = events_of("RuntimeError: CUDA error: an illegal memory access was encountered", Origin(rank=2))
    assert events and all(e.origin.rank == 2 for e in events)


def write(tmp_path, text: str):
    path = tmp_path / "node.log"
    path.write_text(text)
    return analyze_paths([str(path)])


_TABLE = """Traceback (most recent call last):
  File "/w/train.py", line 9, in <module>
    load()
{error}
E1204 10:01:30.410000 802 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: 1) local_rank: {local} (pid: 820) of binary: /usr/bin/python3
{others}Root Cause (first observed failure):
[0]:
  time      : 2026-12-04_10:01:30
  host      : node-3
  rank      : {rank} (local_rank: {local})
  exitcode  : 1 (pid: 820)
"""


def test_unprefixed_exception_above_the_one_failed_worker_is_its_own(tmp_path) -> None:
    analysis = write(tmp_path, _TABLE.format(error="KeyError: 'labels'", local=0, rank=8, others=""))
    root = analysis.diagnosis.root_cause
    assert root is not None and root.culprit_ranks == (8,) and "KeyError: 'labels'" in root.what


def test_unprefixed_exception_is_not_given_to_one_of_two_failed_workers(tmp_path) -> None:
    second = ("E1204 10:01:30.510000 802 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: 1) "
              "local_rank: 1 (pid: 821) of binary: /usr/bin/python3")
    analysis = write(tmp_path, _TABLE.format(error="KeyError: 'labels'", local=0, rank=8, others=second + "\n"))
    assert not any("KeyError" in h.what and len(h.culprit_ranks) == 1 for h in analysis.diagnosis.hypotheses)


def test_unprefixed_communication_error_is_not_adopted(tmp_path) -> None:
    analysis = write(tmp_path, _TABLE.format(
        error="torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited",
        local=0, rank=8, others=""))
    assert not any("raised DistBackendError" in h.what for h in analysis.diagnosis.hypotheses)
