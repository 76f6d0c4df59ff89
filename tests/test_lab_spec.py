"""The lab's fault-spec and option parsers (pure, table-driven)."""

from __future__ import annotations

import pytest

from syncdoctor.errors import UsageError
from syncdoctor.faults.spec import StepFault, parse_step_faults
from syncdoctor.testing.faults_spec import CutSpec, parse_cut, parse_duration, parse_host_value, parse_rate


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"rank": 3, "kind": "late", "at": 5, "seconds": 20, "where": "load_batch"}',
         (StepFault(rank=3, kind="late", at=5, seconds=20.0),)),
        ('[{"rank": 1, "kind": "skip", "at": 2}, {"rank": 0, "kind": "crash", "at": 4, "mode": "exit", "code": 7}]',
         (StepFault(rank=1, kind="skip", at=2), StepFault(rank=0, kind="crash", at=4, mode="exit", code=7))),
        ('{"rank": 2, "kind": "slow", "factor": 1.5}', (StepFault(rank=2, kind="slow", factor=1.5, where="forward"),)),
        ('{"rank": 0, "kind": "other_op", "op": "barrier"}', (StepFault(rank=0, kind="other_op", op="barrier"),)),
        ('{"rank": 0, "kind": "trigger", "at": 3, "name": "cut-host1"}',
         (StepFault(rank=0, kind="trigger", at=3, name="cut-host1"),)),
        ("", ()),
        (None, ()),
    ],
)
def test_parse_faults_accepts(text: str | None, expected: tuple[StepFault, ...]) -> None:
    assert parse_step_faults(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{rank: 1}", "not valid JSON"),
        ('{"rank": 1, "kind": "melt"}', "kind must be one of"),
        ('{"kind": "skip"}', "needs the \"rank\""),
        ('{"rank": -1, "kind": "skip"}', "non-negative integer"),
        ('{"rank": 1, "kind": "late"}', "seconds"),
        ('{"rank": 1, "kind": "crash", "mode": "explode"}', "crash mode"),
        ('{"rank": 1, "kind": "slow", "factor": 0.5}', "factor"),
        ('{"rank": 1, "kind": "skip", "colour": "red"}', "unknown field"),
        ('{"rank": 1, "kind": "late", "seconds": 1, "where": "nowhere"}', "where must be"),
        ('{"rank": 1, "kind": "trigger"}', "needs a \"name\""),
        ("[1]", "expected a JSON object"),
    ],
)
def test_parse_faults_rejects_with_a_message(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_step_faults(text)


def test_fault_applies_at_its_step_and_slow_from_its_step_on() -> None:
    late = StepFault(rank=1, kind="late", at=3, seconds=1)
    slow = StepFault(rank=1, kind="slow", at=3, factor=2)
    assert [step for step in range(6) if late.applies(1, step)] == [3]
    assert [step for step in range(6) if slow.applies(1, step)] == [3, 4, 5]
    assert not late.applies(0, 3)


@pytest.mark.parametrize(
    ("text", "bits"),
    [("40mbit", 40_000_000), ("500kbit", 500_000), ("1gbit", 1_000_000_000), ("1.5mbit", 1_500_000),
     ("10mbps", 80_000_000), ("64000", 64_000)],
)
def test_parse_rate(text: str, bits: int) -> None:
    assert parse_rate(text) == bits


@pytest.mark.parametrize("text", ["fast", "40 parsecs", "", "1bit"])
def test_parse_rate_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_rate(text)


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30.0), ("500ms", 0.5), ("2m", 120.0), ("1.5", 1.5)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "expected"),
    [("host1@30s", CutSpec("host1", 30.0)), ("host1@2s+500ms", CutSpec("host1", 2.0, 0.5)),
     ("host0@trigger", CutSpec("host0", None))],
)
def test_parse_cut(text: str, expected: CutSpec) -> None:
    assert parse_cut(text) == expected


def test_cut_on_trigger_names_its_file() -> None:
    assert parse_cut("host1@trigger").trigger == "cut-host1"
    assert parse_cut("host1@3s").trigger is None


@pytest.mark.parametrize("text", ["host1", "@30s", "host1@soon", "host1@3s+later"])
def test_parse_cut_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_cut(text)


def test_parse_host_value() -> None:
    assert parse_host_value("host1=50mbit", "--throttle") == ("host1", "50mbit")
    with pytest.raises(UsageError, match="--mtu expects HOST=VALUE"):
        parse_host_value("host1:9000", "--mtu")
