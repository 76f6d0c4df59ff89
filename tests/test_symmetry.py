"""assert_collectives_symmetric on real ranks (two small runs) and find_divergence on plain data."""

from __future__ import annotations

import pytest

from syncdoctor.faults.intercept import CallSite, CollectiveCall
from syncdoctor.testing.symmetry import CollectivesDiverged, assert_collectives_symmetric, find_divergence

# --- steps run on the ranks -------------------------------------------------------------------------


def symmetric_step(steps: int) -> None:
    import torch
    import torch.distributed as dist

    pair = dist.new_group([0, 1])
    flag = torch.tensor([1.0 if dist.get_rank() == 0 else 0.0])
    for _ in range(steps):
        grads = torch.ones(8)
        dist.all_reduce(grads)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # data-dependent flow sees real results
        if flag.item() > 0:  # true on every rank after the MAX
            dist.broadcast(grads, src=0)
        if dist.get_rank() in (0, 1):
            dist.all_reduce(grads, group=pair)


def cross_group_step() -> None:
    import torch
    import torch.distributed as dist

    pair = dist.new_group([0, 1])
    if dist.get_rank() == 0:  # rank 1 skips the pair's all_reduce and goes on to the world's
        dist.all_reduce(torch.ones(2), group=pair)
    dist.all_reduce(torch.ones(3))


def test_symmetric_loop_with_a_subgroup_passes() -> None:
    report = assert_collectives_symmetric(symmetric_step, world_size=3, args=(3,), timeout=60)
    assert [len(report.calls[r]) for r in range(3)] == [12, 12, 9]
    assert [c.op for c in report.calls[1][:4]] == ["all_reduce", "all_reduce", "broadcast", "all_reduce"]
    assert report.calls[1][3].group_ranks == (0, 1)


def test_skip_across_groups_is_found_instead_of_deadlocking() -> None:
    # rank 0 waits before the pair's all_reduce for rank 1, rank 1 before the world's for rank 0
    with pytest.raises(CollectivesDiverged) as info:
        assert_collectives_symmetric(cross_group_step, world_size=3, timeout=60)
    message = str(info.value)
    line = cross_group_step.__code__.co_firstlineno + 6
    assert message.startswith(
        f"collectives differ between ranks: rank 1 skipped all_reduce([2] float32, SUM) at tests/test_symmetry.py:"
        f"{line} in cross_group_step (#1 of group 0,1, issued by rank 0)"
    )
    assert "rank 1: (no more collectives in this group)" in message
    assert info.value.divergence.group == (0, 1)


# --- pure comparison --------------------------------------------------------------------------------


def _call(op: str, size: int, line: int, group: tuple[int, ...] = (0, 1, 2)) -> CollectiveCall:
    return CollectiveCall(op, group, ((size,),), "float32", "SUM" if op == "all_reduce" else None,
                          0 if op == "broadcast" else None, site=CallSite("train.py", line, "step"))


A, B, C = _call("all_reduce", 4, 10), _call("broadcast", 4, 11), _call("all_reduce", 2, 12)


def test_identical_sequences_have_no_divergence() -> None:
    assert find_divergence({0: [A, B, A], 1: [A, B, A], 2: [A, B, A]}) is None


def test_majority_names_the_rank_that_skipped() -> None:
    divergence = find_divergence({0: [A, B, C], 1: [A, C], 2: [A, B, C]})
    assert divergence is not None and divergence.index == 2 and divergence.reference == (0, 2)
    assert divergence.explanation == (
        "rank 1 skipped broadcast([4] float32, root 0) at train.py:11 in step (#2 of group 0,1,2, issued by "
        "ranks 0, 2); its #2 is all_reduce([2] float32, SUM) at train.py:12 in step, the one ranks 0, 2 issue next",
    )


def test_extra_different_and_missing_collectives() -> None:
    extra = find_divergence({0: [A, C], 1: [A, B, C], 2: [A, C]})
    assert extra is not None and extra.explanation[0].startswith("rank 1 issued an extra broadcast")
    different = find_divergence({0: [A, B], 1: [A, C], 2: [A, B]})
    assert different is not None and "rank 1 issued all_reduce([2] float32, SUM) at train.py:12 in step where" in (
        different.explanation[0]
    )
    missing = find_divergence({0: [A, B], 1: [A], 2: [A, B]})
    assert missing is not None and missing.calls[1] is None
    assert "rank 1 issued only 1 collective(s)" in missing.explanation[0]
    assert "(no more collectives in this group)" in missing.report()


def test_groups_are_compared_separately_and_p2p_is_ignored() -> None:
    sub = _call("all_reduce", 4, 20, group=(0, 1))
    send = CollectiveCall("send", (0, 1, 2), ((4,),), "float32", None, 1, is_p2p=True)
    # rank 2 is not in group (0, 1): its sequence differs from theirs without any divergence
    assert find_divergence({0: [A, sub, send], 1: [sub, A], 2: [A]}) is None
    divergence = find_divergence({0: [A, sub], 1: [A], 2: [A]})
    assert divergence is not None and divergence.group == (0, 1)
