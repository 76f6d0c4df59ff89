"""A launcher's record of a worker's exit joined to the reading of the line that worker printed above it
(rules.exits): the record names the rank and host, the line its cause. Each line is a real one from the source
sweeps (NVIDIA's Xid catalogue, TensorFlow's BFC allocator, NCCL's UDS socket, aws-ofi-nccl, Horovod, NeMo's
straggler callback); the records are the launchers' own formats."""

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
