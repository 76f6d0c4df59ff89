"""``py-spy dump`` stacks of hung processes: the parser (every layout py-spy prints) and the rule that names the
process outside any collective while the others wait in one. The dumps in tests/fixtures/analyze/pyspy were
taken from a real 3-rank gloo job hung on purpose (its generate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import events_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.pyspy import classify

DUMPS = Path(__file__).resolve().parent / "fixtures" / "analyze" / "pyspy"

WAITING = '''Process 4242: python train.py --local_rank=0
Python v3.10.12 (/usr/bin/python3.10)

Thread 4242 (idle): "MainThread"
    all_gather_into_tensor (torch/distributed/distributed_c10d.py:2897)
    wrapper (torch/distributed/c10d_logger.py:75)
    _all_gather_flat_param (torch/distributed/fsdp/_flat_param.py:1314)
    forward (model.py:88)
    train (train.py:120)
    <module> (train.py:300)
Thread 4300 (idle): "Thread-1 (_pin_memory_loop)"
    select (selectors.py:416)
'''

LATE = '''Thread 4243 (active+gil): "MainThread"
    save (torch/serialization.py:628)
        Arguments:
            obj: {...}
            f: "/ckpt/step_1000.pt"
    save_checkpoint (train.py:210)
    train (train.py:131)
    <module> (train.py:300)
'''


def test_a_waiting_main_thread() -> None:
    (event,) = [e for e in events_of(WAITING) if e.kind is Kind.STACK_DUMP]
    assert event.origin.pid == 4242 and event.op == "allgatherintotensor"
    assert event.data["where"] == ("all_gather_into_tensor (torch/distributed/distributed_c10d.py:2897) called from "
                                   "forward (model.py:88)")
    assert event.data["status"] == "idle"
    assert len(event.data["frames"]) == 6  # the next thread is not part of it


def test_locals_are_skipped_and_a_process_elsewhere_has_no_collective() -> None:
    (event,) = events_of(LATE)
    assert event.kind is Kind.STACK_DUMP and event.op is None and event.origin.pid == 4243
    assert event.data["where"] == "save (torch/serialization.py:628) called from save_checkpoint (train.py:210)"
    assert len(event.data["frames"]) == 4


@pytest.mark.parametrize(("header", "pid"), [
    ('Thread 0x7F1C2A6B5740 (idle): "MainThread"', None),  # py-spy 0.3 without --native: the pthread id
    ('Thread 5120 (active): "MainThread"', 5120),
    ('> Thread 5120 (idle): "MainThread"', 5120),  # quoted in a forum post
])
def test_thread_header_layouts(header: str, pid: int | None) -> None:
    (event,) = events_of(header + "\n    barrier (torch/distributed/distributed_c10d.py:4167)\n"
                         "    ncclCommInitRank (libnccl.so.2)\n")
    assert event.origin.pid == pid and event.op == "barrier"


def test_other_threads_are_not_read() -> None:
    assert events_of('Thread 77 (idle): "QueueFeederThread"\n    wait (threading.py:327)\n') == []


def test_classify_stops_at_the_standard_library_and_skips_wrappers() -> None:
    frames = [("Condition.wait", "threading.py", 327), ("get", "queue.py", 179),
              ("_try_get_data", "torch/utils/data/dataloader.py", 1011), ("evaluate", "megatron/training.py", 983)]
    collective, where, backward = classify(frames)
    assert collective is None and not backward
    assert where == ("_try_get_data (torch/utils/data/dataloader.py:1011) called from evaluate "
                     "(megatron/training.py:983)")
    assert classify([("backward", "torch/_tensor.py", 521), ("step", "train.py", 9)])[2]


def test_the_real_hung_job_names_the_rank_outside_the_collective() -> None:
    analysis = analyze_paths([str(DUMPS / f"rank{r}.txt") for r in range(3)])
    root = analysis.diagnosis.root_cause
    assert root is not None and root.category is Category.LAGGING_RANK and root.confidence == 0.8
    assert root.culprit_ranks == (1,) and root.affected_ranks == (0, 2)
    assert "evaluate (generate.py:" in root.title and "allreduce" in root.title
    pids = dict(line.split()[1::2] for line in (DUMPS / "pids.txt").read_text().splitlines())
    stacks = {e.origin.rank: e.origin.pid for e in analysis.collected.events if e.kind is Kind.STACK_DUMP}
    assert stacks == {int(rank): int(pid) for rank, pid in pids.items()}  # the main thread's id is the pid


def test_one_paste_of_several_processes(tmp_path: Path) -> None:
    (tmp_path / "dumps.txt").write_text(WAITING + "\n" + LATE)
    root = analyze_paths([str(tmp_path / "dumps.txt")]).diagnosis.hypotheses[0]
    assert root.category is Category.LAGGING_RANK and root.confidence == 0.8
    assert root.culprit_processes == ("pid 4243",) and "save_checkpoint (train.py:210)" in root.title


def test_only_a_stack_outside_any_collective_is_a_weak_lead(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text(LATE)
    top = analyze_paths([str(tmp_path / "one.txt")]).diagnosis.hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.confidence == 0.35


def test_stacks_in_different_collectives_are_a_desync(tmp_path: Path) -> None:
    other = WAITING.replace("4242", "4244").replace("all_gather_into_tensor", "broadcast")
    (tmp_path / "two.txt").write_text(WAITING + other)
    top = analyze_paths([str(tmp_path / "two.txt")]).diagnosis.hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and top.confidence == 0.5


def test_negative_every_stack_in_the_same_collective_or_in_backward_names_nobody(tmp_path: Path) -> None:
    in_backward = ('Thread 4250 (active): "MainThread"\n    backward (torch/_tensor.py:521)\n'
                   '    step (train.py:90)\n')
    (tmp_path / "same.txt").write_text(WAITING + WAITING.replace("4242", "4245") + in_backward)
    hypotheses = analyze_paths([str(tmp_path / "same.txt")]).diagnosis.hypotheses
    # at most that the process they wait for is not among the dumps, blaming none of them
    assert all(not h.culprit_ranks and not h.culprit_processes and h.confidence <= 0.3 for h in hypotheses)
