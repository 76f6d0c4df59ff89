"""The wait-for graph on plain data: the shapes of real jobs, and properties on random wait states checked
against a brute-force reachability closure."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from syncdoctor.watch.waitgraph import Op, Wait, analyse, describe_chain


def _w(group: str, seq: int, waiters: tuple[int, ...], blockers: tuple[int, ...], waited: float = 5.0, **op: object) -> Wait:
    return Wait(Op(group, seq, label=str(op.pop("label", "all_reduce")), **op), waiters, blockers, waited)  # type: ignore[arg-type]


def test_tensor_by_data_parallel_names_the_rank_the_tensor_parallel_peer_waits_for() -> None:
    """Ranks 0,2,6 wait in a data-parallel group for rank 4, which waits in its tensor-parallel pair for 5."""
    waits = [_w("5", 6, (0, 2, 6), (4,), 4.8), _w("3", 6, (4,), (5,), 4.7), _w("6", 6, (1, 3, 7), (5,), 4.8)]
    (root,) = analyse(waits)
    assert root.ranks == (5,) and not root.cycle and root.affected == (0, 1, 2, 3, 4, 6, 7)
    assert root.waited_s == 4.8 and {w.op.group for w in root.direct} == {"3", "6"}
    assert describe_chain(root) == (
        "ranks 0,2,6 wait in all_reduce #6 of group 5 for rank 4, which waits in all_reduce #6 of group 3 for "
        "rank 5; ranks 1,3,7 wait in all_reduce #6 of group 6 for rank 5"
    )


def test_pipeline_stage_stuck_before_its_receive() -> None:
    waits = [_w("0", 6, (0,), (1, 2, 3), label="barrier"), Wait(Op("0", 6, "send", peer=2), (1,), (2,), 5.0),
             Wait(Op("0", 6, "recv", peer=2), (3,), (2,), 5.0)]
    (root,) = analyse(waits)
    assert root.ranks == (2,) and root.affected == (0, 1, 3)
    text = describe_chain(root)
    assert "rank 3 waits in recv #6 from rank 2 in group 0 for rank 2" in text
    assert "rank 0 waits in barrier #6 of group 0 for ranks 1-3" in text


def test_two_groups_in_opposite_orders_is_a_cycle() -> None:
    waits = [_w("1", 3, (0,), (1,)), _w("2", 3, (1,), (0,)), _w("0", 9, (2, 3), (0, 1), label="barrier")]
    (root,) = analyse(waits)
    assert root.cycle and root.ranks == (0, 1) and root.affected == (2, 3)


def test_late_ranks_of_one_wait_are_one_root_and_independent_ones_are_not() -> None:
    shared = analyse([_w("0", 4, (0, 1), (2, 3))])
    assert [r.ranks for r in shared] == [(2, 3)]
    apart = analyse([_w("1", 4, (0,), (1,)), _w("2", 4, (2,), (3,))])
    assert [r.ranks for r in apart] == [(1,), (3,)]


def test_a_long_pipeline_is_walked_without_recursion() -> None:
    stages = 3000
    waits = [Wait(Op("0", 1, "recv", peer=s - 1), (s,), (s - 1,), 2.0) for s in range(1, stages)]
    (root,) = analyse(waits)
    assert root.ranks == (0,) and len(root.affected) == stages - 1
    assert "more hops" in describe_chain(root)


# --- properties ---------------------------------------------------------------------------------------

_RANKS = 8


@st.composite
def _waits(draw: st.DrawFn) -> list[Wait]:
    out = []
    for index in range(draw(st.integers(0, 10))):
        waiters = tuple(sorted(draw(st.sets(st.integers(0, _RANKS - 1), min_size=1, max_size=4))))
        blockers = tuple(sorted(draw(st.sets(st.integers(0, _RANKS - 1), min_size=1, max_size=3)) - set(waiters)))
        out.append(_w(str(index % 3), index, waiters, blockers, float(draw(st.integers(0, 9)))))
    return out


def _reach(waits: list[Wait]) -> dict[int, set[int]]:
    """rank -> every rank it waits for, directly or through others (transitive closure)."""
    reach = {r: set() for r in range(_RANKS)}
    for wait in waits:
        for waiter in wait.waiters:
            reach[waiter] |= set(wait.blockers)
    changed = True
    while changed:
        changed = False
        for rank in reach:
            extra = set().union(*(reach[b] for b in reach[rank])) - reach[rank]
            if extra:
                reach[rank] |= extra
                changed = True
    return reach


@settings(max_examples=300)
@given(_waits())
def test_roots_are_sinks_or_exactly_the_cycles(waits: list[Wait]) -> None:
    roots = analyse(waits)
    reach = _reach(waits)
    waiters = {r for w in waits if w.blockers for r in w.waiters}
    blockers = {b for w in waits if w.waiters for b in w.blockers}
    cycles = {frozenset(r for r in reach if r in reach[r] and (r == s or (s in reach[r] and r in reach[s])))
              for s in reach if s in reach[s]}
    found_cycles = {frozenset(root.ranks) for root in roots if root.cycle}
    assert found_cycles == {c for c in cycles if len(c) > 1}
    sinks = {r for root in roots if not root.cycle for r in root.ranks}
    # a root rank never waits for anyone, and every rank waited for that waits for nobody is a root
    assert not sinks & waiters
    assert sinks == blockers - waiters - {r for c in found_cycles for r in c}
    for root in roots:
        held = {r for r in reach if set(root.ranks) & reach[r]} - set(root.ranks)
        assert set(root.affected) == held
        assert all(h.toward and set(h.toward) <= set(h.wait.blockers) for h in root.hops)
        text = describe_chain(root)
        assert " for " in text and "rank" in text
    # every waiting rank ends at some root: a sink or a cycle it can reach
    for rank in waiters:
        assert any(set(root.ranks) & (reach[rank] | {rank}) for root in roots)
