"""The start-up guard: consistency rules on plain records (one positive and one negative case per code),
the real guard in-process and on two local ranks, and in a lab cluster (see test_guard_lab.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from syncdoctor.guard import RankFacts, evaluate
from syncdoctor.guard.consistency import hosts_text

V = {"torch": "2.13.0", "nccl": None, "cuda": None, "python": "3.11.7"}


def _facts(rank: int, host: str, env: dict[str, str] | None = None, **kw: Any) -> RankFacts:
    return RankFacts(rank=rank, host=host, env=env or {}, versions=kw.pop("versions", V), backend="gloo",
                     timeout_s=kw.pop("timeout_s", 1800.0), **kw)


def _cluster(**per_rank: dict[str, str]) -> dict[int, RankFacts]:
    """4 ranks on 2 hosts; per_rank["r2"] = env of rank 2."""
    return {r: _facts(r, f"host{r // 2}", per_rank.get(f"r{r}", {})) for r in range(4)}


def _codes(findings: list) -> list[str]:
    return [f.code for f in findings]


def test_healthy_cluster_has_no_findings() -> None:
    same = {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_TIMEOUT": "22"}
    assert evaluate(_cluster(r0=same, r1=same, r2=same, r3=same), range(4)) == []


def test_g101_setting_on_one_host_names_that_host() -> None:
    bad = {"NCCL_PROTO": "LL"}
    (finding,) = evaluate(_cluster(r2=bad, r3=bad), range(4))
    assert finding.code == "G101" and finding.severity.label == "error"
    assert finding.title == ("NCCL_PROTO differs between ranks: host1 (ranks 2, 3) has NCCL_PROTO=LL, "
                             "while host0 (ranks 0, 1) leaves it unset")
    assert finding.evidence["odd_hosts"] == ["host1"] and finding.fix == "unset NCCL_PROTO on host1"


def test_g101_tie_names_the_side_without_rank_0_and_harmless_variables_are_ignored() -> None:
    facts = {0: _facts(0, "a", {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"}), 1: _facts(1, "b", {"NCCL_ALGO": "Tree"})}
    (finding,) = evaluate(facts, [0, 1])
    assert finding.evidence["odd_ranks"] == [1] and "export NCCL_ALGO=Ring on every host" == finding.fix
    other = evaluate({0: _facts(0, "a", {"NCCL_CHECKS_X": "1"}), 1: _facts(1, "b")}, [0, 1])
    assert _codes(other) == ["G101"] and other[0].severity.label == "warning"  # not in the must-agree list


def test_g102_interface_selection_on_some_hosts_only() -> None:
    facts = _cluster(r0={"GLOO_SOCKET_IFNAME": "eth0"}, r1={"GLOO_SOCKET_IFNAME": "eth0"})
    (finding,) = evaluate(facts, range(4), "gloo")
    assert finding.code == "G102" and finding.evidence["unset_on"] == ["host1"]
    assert "set on host0 (ranks 0, 1) (eth0) but not on host1 (ranks 2, 3)" in finding.title
    # different interface names on different hosts are fine
    names = {f"r{r}": {"GLOO_SOCKET_IFNAME": f"eth{r // 2}"} for r in range(4)}
    assert evaluate(_cluster(**names), range(4), "gloo") == []


def test_g103_versions() -> None:
    facts = _cluster()
    facts[3] = _facts(3, "host1", versions={**V, "torch": "2.12.1"})
    (finding,) = evaluate(facts, range(4))
    assert finding.code == "G103" and finding.severity.label == "error"
    assert "host1 (rank 3) runs torch 2.12.1, while host0 (ranks 0, 1), host1 (rank 2) runs 2.13.0" in finding.title
    facts[3] = _facts(3, "host1", versions={**V, "nccl": None})
    assert evaluate(facts, range(4)) == []  # unknown versions are not a mismatch


def test_g104_validation_findings_name_their_hosts() -> None:
    facts = _cluster()
    facts[2] = _facts(2, "host1", validation=(("E201", "error", "NCCL_IB_TIMEOUT=60 is outside 0-31"),))
    (finding,) = evaluate(facts, range(4))
    assert finding.code == "G104" and finding.title == "E201 on host1 (rank 2): NCCL_IB_TIMEOUT=60 is outside 0-31"
    assert finding.severity.label == "error"
    info_only = _cluster()
    info_only[0] = _facts(0, "host0", validation=(("E900", "info", "just a fact"),))
    assert evaluate(info_only, range(4)) == []


def test_g105_timeouts() -> None:
    facts = _cluster()
    facts[1] = _facts(1, "host0", timeout_s=300.0)
    (finding,) = evaluate(facts, range(4))
    assert finding.code == "G105" and "host0 (rank 1) uses 300 s" in finding.title
    assert evaluate(_cluster(), range(4)) == []


def test_g201_missing_ranks() -> None:
    facts = _cluster()
    del facts[3]
    (finding,) = evaluate(facts, range(4))
    assert finding.code == "G201" and finding.evidence["odd_ranks"] == [3]
    assert hosts_text(_cluster(), [0, 2, 3]) == "host0 (rank 0), host1 (ranks 2, 3)"


# --- the real guard in this process (one rank) ------------------------------------------------------


@pytest.fixture
def one_rank() -> Iterator[Any]:
    dist = pytest.importorskip("torch.distributed")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield dist
    finally:
        dist.destroy_process_group()


def test_guard_passes_on_a_healthy_rank(one_rank: Any) -> None:
    from syncdoctor.guard import assert_ready

    report = assert_ready()
    assert report.ok and report.ranks == (0,) and report.facts[0].timeout_s == 1800.0
    assert report.phases_s["check_all_reduce"] > 0
    again = assert_ready()  # a second call uses fresh keys
    assert again.ok


def test_g202_wrong_all_reduce_result_is_caught(one_rank: Any) -> None:
    from syncdoctor.faults.intercept import Invocation, intercept
    from syncdoctor.guard import NotReadyError, assert_ready

    def corrupt(inv: Invocation) -> Any:
        result = inv.proceed()
        inv.bound.arguments["tensor"][17] += 1.0  # silent corruption on the wire
        return result

    with intercept(corrupt), pytest.raises(NotReadyError) as info:
        assert_ready()
    assert [f.code for f in info.value.report.errors] == ["G202"]
    assert "element 17 is 19.0, expected 18.0" in str(info.value)


def test_g203_failing_all_reduce_and_g204_budget_and_warn_mode(one_rank: Any, caplog: pytest.LogCaptureFixture) -> None:
    from syncdoctor.faults import Fault, inject
    from syncdoctor.guard import assert_ready

    with inject(Fault("crash", rank=0, collective=1)):
        report = assert_ready(mode="warn", budget_s=0.0)
    assert [f.code for f in report.findings] == ["G203", "G204"]
    assert "InjectedCrash" in report.findings[0].title
    assert "syncdoctor guard: the job is not ready to train: 1 error(s)" in caplog.text
    assert "G204" not in _codes(list(assert_ready(budget_s=30.0).findings))


def test_bad_mode_is_a_usage_error(one_rank: Any) -> None:
    from syncdoctor.errors import UsageError
    from syncdoctor.guard import assert_ready

    with pytest.raises(UsageError, match="mode must be"):
        assert_ready(mode="loud")


# --- two real ranks with different settings -----------------------------------------------------------


def guard_twice() -> tuple[bool, str, int, bool]:
    import torch.distributed as dist

    from syncdoctor.guard import NotReadyError, assert_ready
    from syncdoctor.testing.multirank import rank_context

    context = rank_context()
    healthy = assert_ready()
    environ = {"NCCL_ALGO": "Tree"} if dist.get_rank() == 1 else {}
    try:
        assert_ready(environ=environ)
    except NotReadyError as exc:
        return healthy.ok, str(exc), context.world_size, context.store is not None
    return healthy.ok, "", context.world_size, context.store is not None


def test_two_ranks_agree_on_the_verdict() -> None:
    from syncdoctor.testing.multirank import run_multirank

    (ok0, message0, *context0), (ok1, message1, *context1) = run_multirank(guard_twice, world_size=2, timeout=60).check()
    assert ok0 and ok1
    assert context0 == context1 == [2, True]  # rank_context() inside the ranks
    assert message0 == message1 != ""
    assert "G101 setting-differs-between-ranks (error): NCCL_ALGO differs between ranks: " in message0
    assert "(rank 1) has NCCL_ALGO=Tree, while" in message0 and "(rank 0) leaves it unset" in message0
