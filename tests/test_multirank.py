"""The multi-rank runner on real gloo processes (few, small runs) and its pure hang analysis."""

from __future__ import annotations

import dataclasses
import time

import psutil
import pytest

from syncdoctor.errors import UsageError
from syncdoctor.testing._hang import Frame, ProgressRecord, diagnose, main_thread_frames, user_frame
from syncdoctor.testing.multirank import MultiRankFailure, rank_context, run_multirank

# --- functions run on the ranks (module level, so the rank processes can import them) ---------------


def skip_second_all_reduce_on_rank_1(then_sleep: float) -> None:
    import torch
    import torch.distributed as dist

    from syncdoctor.faults import Fault, inject

    with inject(Fault("skip", rank=1, collective=2)):
        for _ in range(2):
            dist.all_reduce(torch.ones(4))
    evaluate(then_sleep)


def evaluate(seconds: float) -> None:
    time.sleep(seconds)


def fail_on_rank_1() -> None:
    import torch
    import torch.distributed as dist

    if dist.get_rank() == 1:
        raise ValueError("bad batch on rank 1")
    dist.all_reduce(torch.ones(2))


def _no_children_left() -> list[psutil.Process]:
    deadline = time.monotonic() + 5
    while True:
        children = [c for c in psutil.Process().children(recursive=True) if c.status() != psutil.STATUS_ZOMBIE]
        if not children or time.monotonic() > deadline:
            return children
        time.sleep(0.1)


# --- real runs --------------------------------------------------------------------------------------


def test_hang_names_the_rank_and_collective_and_leaves_nothing_behind() -> None:
    start = time.monotonic()
    result = run_multirank(skip_second_all_reduce_on_rank_1, world_size=2, args=(600.0,), timeout=12)
    elapsed = time.monotonic() - start
    assert result.timed_out and result.hung_ranks == [0, 1]
    line = skip_second_all_reduce_on_rank_1.__code__.co_firstlineno + 8
    summary = f"rank 1 never reached all_reduce #2 that rank 0 waits in (it is at {__file__}"
    assert summary in result.headline()
    assert result.diagnosis.culprits == (1,)
    report = result.report()
    assert f"rank 0 waits in collective #2 of group 0,1: all_reduce([4] float32, SUM) at {__file__}:{line}" in report
    assert result.ranks[1].where is not None and result.ranks[1].where.function == "evaluate"
    # the watch detector, fed the same state, reaches the same verdict
    assert any(
        line.startswith("W101 late-rank: rank 1 ") and "has not entered all_reduce float32[4] #2 of group 0" in line
        and "it is in evaluate (test_multirank.py:" in line
        for line in result.diagnosis.watch
    ), result.diagnosis.watch
    assert result.startup_s is not None
    assert elapsed < result.startup_s + 12 + 10  # start-up, the timeout, then the stack dump and reaping
    assert _no_children_left() == []
    with pytest.raises(MultiRankFailure, match="rank 1 never reached all_reduce #2"):
        result.check()


def test_rank_that_finished_early_leaves_its_peer_failing_in_the_collective() -> None:
    result = run_multirank(skip_second_all_reduce_on_rank_1, world_size=2, args=(0.0,), timeout=60, grace_s=1.0)
    assert result.ranks[1].status == "ok" and result.ranks[0].status == "failed"
    assert "rank 1 finished without issuing all_reduce #2 that rank 0 was in" in result.headline()


def test_first_failure_is_named_and_waiting_ranks_are_stopped() -> None:
    result = run_multirank(fail_on_rank_1, world_size=2, timeout=60, grace_s=1.0)
    assert result.failed_ranks[0] == 1
    assert result.ranks[1].error_type == "ValueError"
    assert "bad batch on rank 1" in result.ranks[1].error
    assert "_rank_child" not in result.ranks[1].error  # the runner's frames are hidden
    assert result.headline().startswith("rank 1 failed with ValueError first; rank 0 failed with RuntimeError")
    assert "rank 1 exited before all_reduce #1 that rank 0 was in" in result.headline()
    assert result.elapsed_s < 60
    assert _no_children_left() == []


def test_unrunnable_functions_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="module-level function"):
        run_multirank(lambda: None, world_size=2)
    with pytest.raises(UsageError, match="world_size"):
        run_multirank(evaluate, world_size=0)
    with pytest.raises(UsageError, match="only available inside"):
        rank_context()


# --- pure analysis ----------------------------------------------------------------------------------

_STACK = """Thread 0x00007f1 (most recent call first):
  File "/venv/lib/python3.11/threading.py", line 324 in wait
  File "/venv/lib/python3.11/site-packages/torch/utils/watch.py", line 10 in run

Current thread 0x00007f2 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252 in all_reduce
  File "/src/syncdoctor/faults/intercept.py", line 209 in proceed
  File "/work/proj/train.py", line 14 in step
  File "/src/syncdoctor/testing/_rank_child.py", line 155 in main
"""


def test_stack_parsing_finds_the_user_frame() -> None:
    frames = main_thread_frames(_STACK)
    assert frames[0].function == "all_reduce"
    assert user_frame(frames) == Frame("/work/proj/train.py", 14, "step")


def _record(rank: int, state: str, entered: int, current_seq: int | None = None, op: str = "all_reduce") -> ProgressRecord:
    current = None
    if current_seq is not None:
        current = {"op": op, "group": "0,1,2", "seq": current_seq, "group_ranks": [0, 1, 2], "sizes": [[4]],
                   "dtype": "float32", "site": {"file": "train.py", "line": 9, "function": "step"}}
    return ProgressRecord(rank, state, {"0,1,2": entered}, {"0,1,2": entered - (current_seq is not None)}, current)


def test_diagnose_late_rank() -> None:
    records = {0: _record(0, "in_collective", 5, 5), 1: _record(1, "running", 4), 2: _record(2, "in_collective", 5, 5)}
    where = {1: Frame("train.py", 30, "load_batch")}
    diagnosis = diagnose(records, [0, 1, 2], where)
    assert diagnosis.culprits == (1,)
    assert diagnosis.lines[0].startswith("ranks 0, 2 wait in collective #5 of group 0,1,2: all_reduce([4] float32)")
    assert "rank 1 never entered collective #5: it completed #4" in diagnosis.lines[1]
    assert "train.py:30 in load_batch" in diagnosis.summary


def test_diagnose_desync_names_the_odd_rank() -> None:
    records = {0: _record(0, "in_collective", 3, 3), 1: _record(1, "in_collective", 3, 3, op="broadcast"),
               2: _record(2, "in_collective", 3, 3)}
    diagnosis = diagnose(records, [0, 1, 2], {})
    assert diagnosis.culprits == (1,)
    assert "desync at collective #3" in diagnosis.lines[0]
    assert "rank 1 issued broadcast([4] float32)" in diagnosis.summary


def test_diagnose_finished_rank() -> None:
    records = {0: _record(0, "in_collective", 2, 2), 1: _record(1, "done", 1), 2: _record(2, "in_collective", 2, 2)}
    diagnosis = diagnose(records, [0, 2], {})
    assert diagnosis.culprits == (1,)
    assert "rank 1 finished without issuing all_reduce #2 that ranks 0, 2 wait in" == diagnosis.summary


def test_diagnose_exited_rank() -> None:
    records = {0: _record(0, "in_collective", 2, 2), 1: _record(1, "failed", 1), 2: _record(2, "in_collective", 2, 2)}
    diagnosis = diagnose(records, [0, 2], {}, exited={1: 1})
    assert diagnosis.culprits == (1,)
    assert "rank 1 never entered collective #2: it exited with code 1 after collective #1" in diagnosis.lines


def test_watch_detector_sees_a_desync() -> None:
    from syncdoctor.testing._watch_bridge import watch_events

    records = {0: _record(0, "in_collective", 3, 3), 1: _record(1, "in_collective", 3, 3, op="broadcast"),
               2: _record(2, "in_collective", 3, 3)}
    records = {r: dataclasses.replace(rec, time=100.0) for r, rec in records.items()}
    lines = watch_events(records, 3, {}, {}, {}, wall=110.0)
    assert len(lines) == 1 and lines[0].startswith("W102 collective-mismatch: rank 1 ")
    assert "called broadcast float32[4] as collective #3 of group 0" in lines[0]
