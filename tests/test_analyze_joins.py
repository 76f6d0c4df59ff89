"""Who and why joined (rules.joins): a launcher's record of a worker's exit, or the rank the others waited for or
lost, with the reading of the line that worker printed: the one names the rank and host, the other the cause. Each
line is a real one from the source sweeps (NVIDIA's Xid catalogue, TensorFlow's BFC allocator, aws-ofi-nccl, CUDA's
runtime, JAX, Horovod, NeMo's straggler callback); the records and the others' failures are the launchers' and
PyTorch's own formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste
from syncdoctor.analyze.model import Category

TORCHRUN = """\
[2024-05-02 10:11:12,345] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 3 (pid: 41235) of binary: /usr/bin/python
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 263, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-02_10:11:12
  host      : node-3.cluster.local
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 41235)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""

MPIRUN = """\
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[43814,1],3]
  Exit code:    1
--------------------------------------------------------------------------
"""

DEEPSPEED = """\
[2024-05-02 10:11:12,345] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 41235
[2024-05-02 10:11:12,346] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', '--local_rank=3', '--deepspeed'] exits with return code = 1
"""

XID = "XID 149.2 (err status 0x004505c6) NVLINK_NETIR_ERROR NVLINK: NETIR Error detected on GPU PCI:0018:01:00"
BFC = ("W1205 04:05:13.220341   77812 bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate "
       "8.00GiB (rounded to 8589934592)requested by op AddV2")
REGISTER = ("node-3:48213:48390 [3] nccl_ofi_ofiutils_mr_regattr:468 NCCL WARN NET/OFI Couldn't register memory "
            "region with regattr. RC: -12, ERROR: Cannot allocate memory")


@pytest.mark.parametrize(("line", "category"), [
    (XID, Category.GPU_ERROR),
    (BFC, Category.RANK_OUT_OF_MEMORY),
    (REGISTER, Category.MEMLOCK_LIMIT),
])
def test_a_line_without_its_rank_above_torchruns_summary_is_that_ranks_cause(
        tmp_path: Path, line: str, category: Category) -> None:
    alone = diagnose_paste(tmp_path, line).hypotheses[0]
    assert alone.category is category and alone.culprit_ranks == ()
    top, *rest = diagnose_paste(tmp_path, line + "\n" + TORCHRUN).hypotheses
    # before: "rank 3 on node-3.cluster.local died" (0.55) took the verdict and the line's reading was not made
    assert top.category is category
    assert top.culprit_ranks == (3,) and [h.split(".")[0] for h in top.culprit_hosts] == ["node-3"]
    assert "rank 3 on node-3.cluster.local, which then exited with code 1" in top.title
    assert any(e.note == "the launcher's record of its exit" for e in top.evidence)
    crash = next(h for h in rest if h.category is Category.RANK_CRASHED)
    assert crash.confidence < top.confidence


@pytest.mark.parametrize("record", [MPIRUN, DEEPSPEED], ids=["mpirun", "deepspeed"])
def test_other_launchers_records_join_the_line_above_alike(tmp_path: Path, record: str) -> None:
    top = diagnose_paste(tmp_path, XID + "\n" + record).hypotheses[0]
    assert top.category is Category.GPU_ERROR
    assert "which then exited with code 1" in top.title


def test_a_line_that_says_the_writer_waited_keeps_its_reading_and_the_worker_is_affected(tmp_path: Path) -> None:
    # Horovod's check of a collective's shapes across ranks: the worker that raised it is not the culprit
    line = ("horovod.common.exceptions.HorovodInternalError: Mismatched allgather tensor shapes: One rank sent a tensor "
            "with dimension 1 equal to 768, but another rank sent a tensor with dimension 1 equal to 512.")
    top = diagnose_paste(tmp_path, line + "\n" + DEEPSPEED).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC
    assert "which then exited" not in top.title


def test_a_straggler_detectors_report_stays_the_workers_own_exit(tmp_path: Path) -> None:
    # NeMo's straggler callback ends the job on purpose (r58a): the worker's exit is the failure, not a lagging rank
    line = "[NeMo W 2025-03-07 22:43:02 straggler_det_callback:203] Some GPUs have worse relative performance. Affected ranks: {2, 5}"
    top = diagnose_paste(tmp_path, line + "\n" + TORCHRUN).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,)


def test_a_line_of_another_rank_or_host_or_below_the_record_is_not_joined(tmp_path: Path) -> None:
    labelled = "[rank6]: " + XID
    hypotheses = diagnose_paste(tmp_path, labelled + "\n" + TORCHRUN).hypotheses
    assert not any("which then exited" in h.title for h in hypotheses)
    elsewhere = diagnose_paste(tmp_path, REGISTER.replace("node-3:", "node-5:") + "\n" + TORCHRUN).hypotheses
    assert not any("which then exited" in h.title for h in elsewhere)
    below = diagnose_paste(tmp_path, TORCHRUN + XID + "\n").hypotheses
    assert not any("which then exited" in h.title for h in below)


def test_an_exit_by_a_signal_is_not_joined(tmp_path: Path) -> None:
    # a SIGABRT after the watchdog's timeout or a SIGKILL: the record's own reading, not the line's
    killed = TORCHRUN.replace("(exitcode: 1)", "(exitcode: -9)").replace("exitcode  : 1", "exitcode  : -9 (pid: 41235)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 41235")
    hypotheses = diagnose_paste(tmp_path, XID + "\n" + killed).hypotheses
    assert not any("which then exited" in h.title for h in hypotheses)


def _the_others(kind: str, culprit: int = 3, world: int = 8) -> str:
    """What the other ranks print when rank ``culprit`` stops: ProcessGroupNCCL's watchdog timeouts, or gloo's lost
    connections."""
    out = []
    for r in (r for r in range(world) if r != culprit):
        if kind == "watchdog":
            out.append(f"[rank{r}]:[E502 10:41:12.413551830 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
                       "collective operation timeout: WorkNCCL(SeqNum=1423, OpType=ALLREDUCE, NumelIn=26214400, "
                       "NumelOut=26214400, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.")
        else:
            out.append(f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
                       f"closed by peer [10.0.0.{culprit}]:{20000 + culprit}")
    return "\n".join(out) + "\n"


PEER_ACCESS = "Cuda failure 217 'peer access is not supported between these two devices'"
SXID = "[Sat Dec  5 01:12:44 2026] nvidia-nvswitch0: SXid (PCI:0000:84:00.0): 20034, Non-fatal, Link 12 LTSSM Fault Up"
JAX_999 = ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: jaxlib/gpu/triton_kernels.cc:112: operation "
           "cuModuleLoadData(...) failed: Unknown CUDA error 999; cuGetErrorName failed")


@pytest.mark.parametrize(("line", "category"), [
    (PEER_ACCESS, Category.PEER_ACCESS),
    (SXID, Category.GPU_ERROR),
])
def test_the_rank_the_others_waited_for_is_named_with_the_cause_its_own_line_gives(
        tmp_path: Path, line: str, category: Category) -> None:
    own = f"[rank3]: {line}\n"
    alone = diagnose_paste(tmp_path, own).hypotheses[0]
    assert alone.category is category and alone.confidence < 0.5
    top, *rest = diagnose_paste(tmp_path, own + _the_others("watchdog")).hypotheses
    # before: "rank 3 never reached the collective" (0.8) and the line's reading not made at all
    assert top.category is category and top.culprit_ranks == (3,)
    assert set(top.affected_ranks) == {0, 1, 2, 4, 5, 6, 7}
    assert "then failed waiting for it or lost it" in top.title
    never = next(h for h in rest if h.category is Category.LAGGING_RANK)
    assert never.culprit_ranks == (3,) and never.confidence < top.confidence


def test_a_crashs_own_line_read_by_a_more_specific_rule_keeps_that_rule_above_the_crash(tmp_path: Path) -> None:
    own = f"[rank3]: {JAX_999}\n"
    hypotheses = diagnose_paste(tmp_path, own + _the_others("reset")).hypotheses
    # before: the crash with its cascade (0.9) above the GPU's error (0.8), the same line
    assert hypotheses[0].category is Category.GPU_ERROR and hypotheses[0].culprit_ranks == (3,)
    crash = next(h for h in hypotheses if h.category is Category.RANK_CRASHED)
    assert crash.confidence < hypotheses[0].confidence


def test_another_ranks_line_or_a_plain_exception_is_not_joined_to_the_rank_the_others_name(tmp_path: Path) -> None:
    # rank 5's GPU line is not why rank 3 never arrived
    paste = f"[rank5]: {SXID}\n" + _the_others("watchdog")
    assert not any(h.category is Category.GPU_ERROR and h.culprit_ranks == (3,)
                   for h in diagnose_paste(tmp_path, paste).hypotheses)
    # rank 3's own exception of no cause is its crash, the others' failures its consequence
    paste = "[rank3]: ValueError: too many values to unpack (expected 2)\n" + _the_others("reset")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,)


def test_a_record_no_reading_explains_quotes_the_workers_last_words_above_it(tmp_path: Path) -> None:
    # an error of no known format above torchrun's record: the record's rank, and that line as its most likely cause
    line = "[ERROR] GE(48213,python):2026-12-05-07:36:30.112 [davinci_model.cc:3718] DistributeTask: load task fail"
    top = diagnose_paste(tmp_path, line + "\n" + TORCHRUN).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,)
    assert "the error above the launcher's record, most likely its own: [ERROR] GE(48213" in top.title
    assert any(e.note == "the error above the launcher's record" for e in top.evidence)
    # the word alone in a line of advice, torchrun's own table, a traceback's first line: no worker's words
    for other in ("INFO Setting worker0 reply file to: /tmp/error.json", "Traceback (most recent call last):",
                  "Root Cause (first observed failure):"):
        top = diagnose_paste(tmp_path, other + "\n" + TORCHRUN).hypotheses[0]
        assert "the error above the launcher's record" not in top.title, other
