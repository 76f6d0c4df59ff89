"""``assert_collectives_symmetric``: run a step on N real ranks, record every collective each rank
issues (op, group, sizes, dtype, reduce op, root, call site) and fail with the first divergence.

    from syncdoctor.testing.symmetry import assert_collectives_symmetric

    def test_train_step_is_symmetric():
        assert_collectives_symmetric(train_step, world_size=2, args=(config,))

How it avoids hanging on the very bug it looks for: before each collective, every rank posts the
collective's signature in the job's store under its per-group sequence number and waits for the other
members' signatures (or their "finished" marker). When all agree, the collective is issued for real, so
data-dependent control flow behaves as in training. At the first disagreement every member sees the
same posts, so all stop issuing collectives together: they keep recording what they would issue
(without communicating, up to a bound) so the report can tell a skipped collective from an extra or a
different one, and each rank's step ends normally. Point-to-point ops are recorded but not compared.

I/O: runs processes through :mod:`syncdoctor.testing.multirank`; the comparison itself is pure.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from syncdoctor.faults.intercept import CollectiveCall, Invocation, intercept, register_internal_module
from syncdoctor.testing.multirank import MultiRankFailure, _function_reference, rank_context, run_multirank

__all__ = [
    "CollectivesDiverged",
    "Divergence",
    "SymmetryReport",
    "assert_collectives_symmetric",
    "find_divergence",
]

register_internal_module(__name__)

_END = "end"
_WAIT = "waiting"
_MAX_AFTER_DIVERGENCE = 64  # collectives recorded (not issued) per rank after the divergence
_CONTEXT_BEFORE = 2


class CollectivesDiverged(AssertionError):
    """Ranks issued different sequences of collectives; the message shows the first divergence."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.report())
        self.divergence = divergence


class _StopRecording(Exception):
    """Ends a step that goes on issuing collectives after the divergence."""


def _group_key(ranks: Sequence[int]) -> str:
    return ",".join(str(r) for r in ranks)


class _Checker:
    """The per-rank interception handler: post, compare, then issue or record only."""

    def __init__(self, store: Any, rank: int, world_size: int, poll_s: float = 0.002) -> None:
        self.store = store
        self.rank = rank
        self.world_size = world_size
        self.deadlock: list[int] | None = None
        self.poll_s = poll_s
        self.calls: list[CollectiveCall] = []
        self.issued: list[bool] = []
        self.seq: dict[str, int] = {}
        self.dry_since: int | None = None  # index into self.calls of the first call not issued

    def _arrived(self, group: str, index: int, member: int) -> str | None:
        """What ``member`` posted at ``index`` of ``group``: its signature, "end", or None (not yet)."""
        key = f"{group}/{index}/{member}"
        if self.store.check([key]):
            return self.store.get(key).decode()
        end = f"{group}/{_END}/{member}"
        if self.store.check([end]) and int(self.store.get(end).decode()) <= index:
            return _END
        return None

    def _deadlocked(self) -> list[int] | None:
        """A cycle of ranks each waiting, before a collective of its own group, for the next one.

        Ranks waiting at different groups' collectives for each other (rank 0 before a subgroup
        all_reduce that rank 1 skipped, rank 1 before a world all_reduce) can never all arrive: that is
        a divergence too, and every rank of the cycle finds the same cycle. Returns it, or None.
        """
        waits: dict[int, tuple[str, int, list[int]]] = {}
        for rank in range(self.world_size):
            key = f"{_WAIT}/{rank}"
            raw = self.store.get(key).decode() if self.store.check([key]) else ""
            if raw:
                data = json.loads(raw)
                waits[rank] = (str(data["group"]), int(data["index"]), [int(m) for m in data["members"]])

        def blockers(rank: int) -> list[int]:
            group, index, members = waits[rank]
            return [m for m in members if m != rank and self._arrived(group, index, m) is None]

        path, seen = [self.rank], {self.rank}
        while True:
            nxt = [m for m in blockers(path[-1]) if m in waits] if path[-1] in waits else []
            if not nxt:
                return None
            if self.rank in nxt:
                return path
            step = next((m for m in nxt if m not in seen), None)
            if step is None:
                return None
            path.append(step)
            seen.add(step)

    def _post_and_compare(self, group: str, members: Sequence[int], index: int, mine: str) -> bool:
        """True when every member posted the same signature at ``index`` and none is recording only."""
        self.store.set(f"{group}/{index}/{self.rank}", mine)
        pending = [m for m in members if m != self.rank]
        seen: dict[int, str] = {}
        self.store.set(f"{_WAIT}/{self.rank}", json.dumps({"group": group, "index": index, "members": list(members)}))
        polls = 0
        try:
            while pending:
                for member in list(pending):
                    arrived = self._arrived(group, index, member)
                    if arrived is not None:
                        seen[member] = arrived
                        pending.remove(member)
                if pending:
                    polls += 1
                    if polls % 25 == 0:
                        cycle = self._deadlocked()
                        if cycle is not None:
                            self.deadlock = cycle
                            return False
                    time.sleep(self.poll_s)
        finally:
            self.store.set(f"{_WAIT}/{self.rank}", "")
        return all(value == mine for value in seen.values()) and not json.loads(mine)["dry"]

    def __call__(self, inv: Invocation) -> Any:
        call = inv.call
        self.calls.append(call)
        if call.is_p2p:
            self.issued.append(self.dry_since is None)
            return inv.proceed() if self.dry_since is None else inv.not_issued()
        group = _group_key(call.group_ranks)
        index = self.seq.get(group, 0) + 1
        self.seq[group] = index
        mine = json.dumps({"signature": call.signature(), "dry": self.dry_since is not None})
        agree = self._post_and_compare(group, call.group_ranks or (self.rank,), index, mine)
        if agree:
            self.issued.append(True)
            return inv.proceed()
        if self.dry_since is None:
            self.dry_since = len(self.calls) - 1
        self.issued.append(False)
        if len(self.calls) - self.dry_since > _MAX_AFTER_DIVERGENCE:
            raise _StopRecording
        return inv.not_issued()

    def finish(self, all_groups: Sequence[Sequence[int]]) -> None:
        """Tell every group this rank belongs to that it issues no more collectives."""
        for ranks in all_groups:
            if self.rank in ranks:
                group = _group_key(ranks)
                self.store.set(f"{group}/{_END}/{self.rank}", str(self.seq.get(group, 0) + 1))


def _groups_of_this_job() -> list[tuple[int, ...]]:
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    groups = {tuple(range(dist.get_world_size()))}
    for mapping in c10d._world.pg_group_ranks.values():
        groups.add(tuple(sorted(mapping)))
    return sorted(groups)


def _record_step(target: tuple[str, str, str | None], args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Runs on each rank: the step under the checker; returns the recorded calls."""
    import torch.distributed as dist

    from syncdoctor.testing._rank_child import resolve

    context = rank_context()
    store = dist.PrefixStore("syncdoctor/symmetry/", context.store)
    checker = _Checker(store, context.rank, context.world_size)
    step_fn = resolve(*target)
    error = ""
    with intercept(checker):
        try:
            step_fn(*args, **kwargs)
        except _StopRecording:
            error = f"stopped after recording {_MAX_AFTER_DIVERGENCE} collectives past the divergence"
        except Exception as exc:
            if checker.dry_since is None:
                checker.finish(_groups_of_this_job())
                raise
            # after the divergence, collectives return nothing: the step may well fail on that
            error = f"the step raised {type(exc).__name__} after the divergence (collectives were not issued)"
    checker.finish(_groups_of_this_job())
    return {
        "calls": [c.to_json() for c in checker.calls],
        "issued": checker.issued,
        "dry_since": checker.dry_since,
        "deadlock": checker.deadlock,
        "note": error,
    }


@dataclass(frozen=True)
class Divergence:
    """The first collective at which ranks disagree.

    ``index`` is the 1-based sequence number within ``group``; ``calls`` maps each member rank to the
    call it issued there (None: it issued no more collectives in the group); ``explanation`` has one
    sentence per odd rank; ``sequences`` holds each member's calls in this group.
    """

    group: tuple[int, ...]
    index: int
    calls: Mapping[int, CollectiveCall | None]
    reference: tuple[int, ...]
    explanation: tuple[str, ...]
    sequences: Mapping[int, tuple[CollectiveCall, ...]]

    def report(self) -> str:
        group = _group_key(self.group)
        lines = [
            "collectives differ between ranks: " + "; ".join(self.explanation),
            f"first divergence at collective #{self.index} of group {group}:",
        ]
        for rank in sorted(self.calls):
            call = self.calls[rank]
            lines.append(f"  rank {rank}: " + (_show(call) if call else "(no more collectives in this group)"))
        lines.append("collectives around it, per rank:")
        for rank in sorted(self.sequences):
            sequence = self.sequences[rank]
            start = max(0, self.index - 1 - _CONTEXT_BEFORE)
            lines.append(f"  rank {rank}:")
            for position in range(start, min(len(sequence), self.index + 2)):
                marker = ">" if position == self.index - 1 else " "
                lines.append(f"   {marker} #{position + 1} {_show(sequence[position])}")
            if len(sequence) < self.index:
                lines.append(f"   > #{self.index} (none: {len(sequence)} collective(s) in all)")
        lines.append("(collectives after the divergence were recorded without being issued)")
        return "\n".join(lines)


def _show(call: CollectiveCall) -> str:
    return f"{call.describe()} at {call.site}" if call.site else call.describe()


def _signature_at(sequence: Sequence[CollectiveCall], position: int) -> tuple[Any, ...] | None:
    return sequence[position].signature() if position < len(sequence) else None


def _explain(rank: int, mine: Sequence[CollectiveCall], ref_ranks: Sequence[int], ref: Sequence[CollectiveCall],
             k: int, group: str) -> str:
    """One sentence about an odd rank at (0-based) position ``k``."""
    plural = len(ref_ranks) > 1
    others = f"rank{'s' if plural else ''} {', '.join(map(str, ref_ranks))}"
    expected = ref[k] if k < len(ref) else None
    got = mine[k] if k < len(mine) else None
    if expected is None and got is not None:
        return f"rank {rank} issued an extra {_show(got)} (#{k + 1} of group {group}) that {others} never issued"
    if got is None and expected is not None:
        return (f"rank {rank} skipped {_show(expected)} (#{k + 1} of group {group}, issued by {others}); "
                f"rank {rank} issued only {len(mine)} collective(s) in the group")
    assert got is not None and expected is not None
    if got.signature() == _signature_at(ref, k + 1):
        return (f"rank {rank} skipped {_show(expected)} (#{k + 1} of group {group}, issued by {others}); "
                f"its #{k + 1} is {_show(got)}, the one {others} {'issue' if plural else 'issues'} next")
    if _signature_at(mine, k + 1) == expected.signature():
        return f"rank {rank} issued an extra {_show(got)} before {expected.describe()} (#{k + 1} of group {group})"
    return (f"rank {rank} issued {_show(got)} where {others} issued {_show(expected)} "
            f"(#{k + 1} of group {group})")


def find_divergence(calls_by_rank: Mapping[int, Sequence[CollectiveCall]]) -> Divergence | None:
    """The first collective where the ranks' sequences disagree, or None when they are symmetric. Pure."""
    per_group: dict[tuple[int, ...], dict[int, list[CollectiveCall]]] = {}
    for rank, calls in calls_by_rank.items():
        for call in calls:
            if call.is_p2p:
                continue
            members = call.group_ranks or tuple(sorted(calls_by_rank))
            per_group.setdefault(members, {m: [] for m in members if m in calls_by_rank})
            per_group[members].setdefault(rank, []).append(call)
    found: list[tuple[int, int, tuple[int, ...]]] = []
    for members, sequences in per_group.items():
        length = max(len(s) for s in sequences.values())
        for k in range(length):
            if len({_signature_at(s, k) for s in sequences.values()}) > 1:
                found.append((k, -len(members), members))
                break
    if not found:
        return None
    k, _, members = min(found)
    sequences = per_group[members]
    partitions: dict[Any, list[int]] = {}
    for rank in sorted(sequences):
        partitions.setdefault(_signature_at(sequences[rank], k), []).append(rank)
    # the reference side: most ranks, then ranks that issued something, then the lowest rank
    reference = max(partitions.values(), key=lambda rs: (len(rs), _signature_at(sequences[rs[0]], k) is not None, -rs[0]))
    ref_seq = sequences[reference[0]]
    group = _group_key(members)
    explanation = tuple(
        _explain(rank, sequences[rank], reference, ref_seq, k, group)
        for rank in sorted(sequences)
        if rank not in reference
    )
    return Divergence(
        group=members,
        index=k + 1,
        calls={rank: (s[k] if k < len(s) else None) for rank, s in sorted(sequences.items())},
        reference=tuple(reference),
        explanation=explanation,
        sequences={rank: tuple(s) for rank, s in sorted(sequences.items())},
    )


@dataclass(frozen=True)
class SymmetryReport:
    """What a symmetric step issued: the calls of each rank (identical signatures by construction)."""

    calls: Mapping[int, tuple[CollectiveCall, ...]]

    @property
    def count(self) -> int:
        return len(next(iter(self.calls.values()), ()))


def assert_collectives_symmetric(
    step_fn: Callable[..., Any],
    world_size: int = 2,
    *,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    timeout: float = 60.0,
    backend: str = "gloo",
    env: Mapping[str, str | None] | None = None,
) -> SymmetryReport:
    """Run ``step_fn(*args, **kwargs)`` on ``world_size`` ranks and check every rank issued the same
    collectives in the same order (per process group: op, sizes, dtype, reduce op, root).

    Raises :class:`CollectivesDiverged` (an AssertionError) with the first divergence and each side's call
    site, or :class:`~syncdoctor.testing.multirank.MultiRankFailure` when a rank fails or hangs for
    another reason. ``step_fn`` must be a module-level function (see :mod:`.multirank`).
    """
    __tracebackhide__ = True  # pytest shows the divergence, not this function's code
    target = _function_reference(step_fn)
    result = run_multirank(
        _record_step, world_size, args=(target, tuple(args), dict(kwargs or {})), timeout=timeout,
        backend=backend, env=env,
    )
    if not result.ok:
        raise MultiRankFailure(result)
    calls = {
        rank: tuple(CollectiveCall.from_json(c) for c in value["calls"]) for rank, value in enumerate(result.values)
    }
    divergence = find_divergence(calls)
    if divergence is not None:
        raise CollectivesDiverged(divergence)
    return SymmetryReport(calls)
