"""Fault injection and the collective interception layer on a real one-rank gloo group, in-process.

What reached the backend is read from PyTorch's own Flight Recorder (on by default in torch 2.13), so
the assertions do not depend on our interception's own account.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from syncdoctor.faults import Fault, InjectedCrash, inject, step  # noqa: E402
from syncdoctor.faults.intercept import CollectiveCall, Invocation, intercept, is_installed  # noqa: E402


@pytest.fixture
def one_rank() -> Iterator[None]:
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def _issued() -> list[tuple[str, list[list[int]]]]:
    """(op, input sizes) of every collective the backend saw, from the Flight Recorder."""
    raw = torch._C._distributed_c10d._dump_fr_trace_json(includeCollectives=True, onlyActive=False)
    entries = json.loads(raw).get("entries", [])
    return [(e["profiling_name"].split(":")[-1], e["input_sizes"]) for e in entries]


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[CollectiveCall] = []

    def __call__(self, inv: Invocation) -> object:
        self.calls.append(inv.call)
        return inv.proceed()


def test_skip_is_not_issued_and_originals_come_back(one_rank: None) -> None:
    original = dist.all_reduce
    before = len(_issued())
    with inject(Fault("skip", rank=0, collective=2)) as injector:
        assert dist.all_reduce is not original
        for _ in range(3):
            dist.all_reduce(torch.ones(4))
    assert dist.all_reduce is original and not is_installed()
    assert len(_issued()) - before == 2
    assert len(injector.events) == 1 and "skipping collective #2 all_reduce([4] float32, SUM)" in injector.events[0]
    assert "test_faults_inject.py" in injector.events[0]


def test_recorder_sees_what_the_fault_left(one_rank: None) -> None:
    recorder = _Recorder()
    with intercept(recorder), inject(Fault("resize", rank=0, collective=1, delta=2), Fault("skip", rank=0, collective=2)):
        dist.all_reduce(torch.ones(3, 2))
        dist.broadcast(torch.ones(5), src=0)
        dist.all_gather_object([None], {"a": 1})
    assert [c.op for c in recorder.calls] == ["all_reduce", "all_gather_object"]  # nested all_gather not counted
    assert recorder.calls[0].sizes == ((5, 2),)
    assert recorder.calls[0].dtype == "float32" and recorder.calls[0].reduce_op == "SUM"
    assert recorder.calls[0].site is not None and recorder.calls[0].site.function == "test_recorder_sees_what_the_fault_left"
    assert recorder.calls[1].sizes is None
    ops = [op for op, _ in _issued()]
    assert "broadcast" not in ops
    assert [5, 2] in [sizes[0] for op, sizes in _issued() if op == "all_reduce"]


def test_other_op_issues_another_collective(one_rank: None) -> None:
    recorder = _Recorder()
    with intercept(recorder), inject(Fault("other_op", rank=0, collective=1, op_to="broadcast")):
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.MAX)
    assert [c.op for c in recorder.calls] == ["broadcast"]
    assert recorder.calls[0].root == 0
    assert _issued()[-1][0] == "broadcast"


def test_crash_raises_at_the_step_marker(one_rank: None) -> None:
    with inject(Fault("crash", rank=0, step=2)), pytest.raises(InjectedCrash, match="rank 0 at step 2"):
        for number in range(4):
            step(number)
            dist.all_reduce(torch.ones(1))
    assert not is_installed()


def test_delay_and_slow_use_the_injected_clock(one_rank: None) -> None:
    from syncdoctor.faults.inject import FaultInjector

    slept: list[float] = []
    now = [100.0]

    def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    injector = FaultInjector(
        [Fault("delay", rank=0, collective=1, seconds=7), Fault("slow", rank=0, factor=3)],
        sleep=fake_sleep,
        clock=lambda: now[0],
    )
    with intercept(injector):
        dist.all_reduce(torch.ones(1))  # delay 7 s; slow has no previous collective to measure
        now[0] += 2.0  # two seconds of "compute"
        dist.all_reduce(torch.ones(1))  # slow x3: two more times the compute
    assert slept == [7, pytest.approx(4.0)]


def test_faults_for_other_ranks_change_nothing(one_rank: None) -> None:
    before = len(_issued())
    with inject("skip:rank=1,collective=1") as injector:
        dist.all_reduce(torch.ones(1))
    assert len(_issued()) - before == 1 and injector.events == []


def test_async_skip_returns_a_completed_work(one_rank: None) -> None:
    with inject(Fault("skip", rank=0, collective=1)):
        work = dist.all_reduce(torch.ones(1), async_op=True)
        assert work.wait() and work.is_completed()


def test_install_from_env(one_rank: None) -> None:
    from syncdoctor.faults import install_from_env

    assert install_from_env({}) is None
    handle = install_from_env({"SYNCDOCTOR_FAULTS": "skip:rank=0,collective=1"})
    assert handle is not None
    try:
        dist.all_reduce(torch.ones(1))
        assert handle.injector.events
    finally:
        handle.stop()
    assert not is_installed()
