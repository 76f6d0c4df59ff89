"""Fault specs and the per-rank plan: pure, table-driven, no torch."""

from __future__ import annotations

import pytest

from syncdoctor.errors import UsageError
from syncdoctor.faults import Fault, FaultPlan, parse_faults


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("skip:rank=1,collective=3", Fault("skip", rank=1, collective=3)),
        ("delay:rank=0,step=2,seconds=1.5", Fault("delay", rank=0, step=2, seconds=1.5)),
        ('{"kind": "late", "rank": 3, "at": 5, "seconds": 20, "where": "load_batch"}',
         Fault("delay", rank=3, step=5, seconds=20.0)),
        ('[{"kind": "other_size", "rank": 1, "collective": 2, "delta": 3}]',
         Fault("resize", rank=1, collective=2, delta=3)),
        ("crash:rank=2,step=4,mode=sigkill", Fault("crash", rank=2, step=4, mode="sigkill")),
        ("slow:rank=1 2,factor=3", Fault("slow", rank=(1, 2), factor=3.0)),
        ("other_op:rank=all,collective=1,op_to=barrier", Fault("other_op", collective=1, op_to="barrier")),
    ],
)
def test_parse_forms(text: str, expected: Fault) -> None:
    assert parse_faults(text) == (expected,)


def test_parse_several_and_round_trip() -> None:
    faults = parse_faults("skip:rank=1,collective=3; delay:rank=0,collective=1,seconds=2")
    assert [f.kind for f in faults] == ["skip", "delay"]
    assert parse_faults([f.to_json() for f in faults]) == faults
    assert parse_faults(None) == () and parse_faults("  ") == ()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("explode:rank=1", "unknown fault kind"),
        ("delay:rank=1,collective=2", "seconds > 0"),
        ("slow:rank=1,factor=0.5", "factor > 1"),
        ("crash:rank=1,mode=melt", "mode must be one of"),
        ("skip:rank=1,collective=0", "counts from 1"),
        ("skip:rank=one", "bad value"),
        ("skip:rank=1,colective=2", "unknown field"),
        ("skip rank 1", "unknown fault kind"),
        ('{"rank": 1}', "no 'kind'"),
        ("{not json", "not valid JSON"),
        ("resize:rank=1,delta=0", "non-zero delta"),
        ("skip:rank=1,collective", "expected name=value"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_faults(spec)


def test_plan_counts_collectives_and_fires_once() -> None:
    plan = FaultPlan([Fault("skip", rank=1, collective=3)], rank=1)
    fired = [bool(plan.on_collective("all_reduce")) for _ in range(5)]
    assert fired == [False, False, True, False, False]


def test_plan_ignores_other_ranks_and_filters_ops() -> None:
    faults = [Fault("skip", rank=1, collective=2, op="broadcast")]
    assert FaultPlan(faults, rank=0).faults == ()
    plan = FaultPlan(faults, rank=1)
    ops = ["all_reduce", "broadcast", "all_reduce", "broadcast", "broadcast"]
    assert [bool(plan.on_collective(op)) for op in ops] == [False, False, False, True, False]


def test_plan_step_triggers() -> None:
    plan = FaultPlan(
        [Fault("resize", rank=0, step=2), Fault("crash", rank=0, step=3), Fault("slow", rank=0, factor=2, step=1)],
        rank=0,
    )
    assert plan.on_collective("all_reduce") == ()  # no step marked yet
    assert plan.on_step(1) == ()
    assert [f.kind for f in plan.on_collective("all_reduce")] == ["slow"]
    assert plan.on_step(2) == ()
    assert sorted(f.kind for f in plan.on_collective("all_reduce")) == ["resize", "slow"]
    assert [f.kind for f in plan.on_collective("all_reduce")] == ["slow"]
    assert [f.kind for f in plan.on_step(3)] == ["crash"]  # crash acts at the marker itself
    assert plan.on_step(4) == ()
    assert {f.kind: n for f, n in plan.fired().items()} == {"resize": 1, "crash": 1, "slow": 3}


def test_plan_times() -> None:
    plan = FaultPlan([Fault("delay", rank=0, collective=2, seconds=1, times=2)], rank=0)
    assert [bool(plan.on_collective("barrier")) for _ in range(4)] == [False, True, True, False]


def test_describe() -> None:
    assert Fault("skip", rank=1, collective=3).describe() == "skip on rank 1 before collective #3"
    assert "x2.5" in Fault("slow", rank=(0, 1), factor=2.5).describe()


def test_lab_step_faults_share_the_injection_vocabulary() -> None:
    from syncdoctor.faults import parse_step_faults

    late, skip, bigger, crash, slow = parse_step_faults(
        '[{"rank": 3, "kind": "late", "at": 5, "seconds": 20}, {"rank": 1, "kind": "skip", "at": 2},'
        ' {"rank": 1, "kind": "other_size", "at": 2, "size": 3}, {"rank": 0, "kind": "crash", "at": 4, "mode": "exit",'
        ' "code": 7}, {"rank": 2, "kind": "slow", "at": 1, "factor": 1.5}]'
    )
    assert late.to_fault() == parse_faults('{"kind": "late", "rank": 3, "at": 5, "seconds": 20}')[0]
    assert late.to_fault() == Fault("delay", rank=3, step=5, seconds=20.0)
    assert skip.to_fault() == Fault("skip", rank=1, step=2)
    assert bigger.to_fault() == Fault("resize", rank=1, step=2, delta=2)  # 3 elements instead of 1
    assert crash.to_fault() == Fault("crash", rank=0, step=4, mode="exit", exit_code=7)
    assert slow.to_fault() == Fault("slow", rank=2, step=1, factor=1.5)


@pytest.mark.parametrize(
    "text",
    ['{"rank": 0, "kind": "spin", "at": 2, "seconds": 1}', '{"rank": 0, "kind": "crash", "mode": "abort"}',
     '{"rank": 0, "kind": "other_op", "op": "all_gather"}'],
)
def test_lab_only_step_faults_have_no_injection_fault(text: str) -> None:
    from syncdoctor.faults import parse_step_faults

    with pytest.raises(UsageError):
        parse_step_faults(text)[0].to_fault()


def test_both_parsers_read_json_alike() -> None:
    from syncdoctor.faults import parse_step_faults

    for parse in (parse_faults, parse_step_faults):
        with pytest.raises(UsageError, match="not valid JSON"):
            parse("{rank: 1}")
