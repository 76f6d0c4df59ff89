"""The monitor's cheap first look: from every rank's binary record header, decide whether the full
detector could say or ask anything this cycle.

Pure: no I/O, no clock (``now`` is passed in). Needs numpy (all ranks' headers are screened as one
array: a few milliseconds for 4096 ranks where decoding every record took about 80 ms); the monitor
runs every cycle in full when numpy is missing.

:func:`screen` is conservative: it answers *quiet* only when the full detector (:func:`syncdoctor.watch.
detector.detect`) provably emits no event and requests nothing, given the same records and state:

- every rank reports a valid header of this version (its own rank, state ``running``, no overflow flag), every
  group id in the headers is a group whose member table the monitor has read, no rank published a
  stack the monitor has not read, and the hooks notice (W109) was already said when a rank uses hooks;
- no incident is open, no stack request is unanswered, no process-state request is recent, the
  detector has run before;
- every heartbeat changed within ``min(dead_s, 1.5 * interval_s)`` (no dead or silent rank, no
  process-state request), and every rank's longest stall plus its record's age plus one interval is
  below ``suspect_s`` (no group has waited long enough for any group rule to look at it);
- no drift: in each group, the members' entered counts at the latest step all members marked are
  equal (a member without that step among its header's marks makes the cycle not quiet);
- the straggler bookkeeping can take the new waits without dropping or expiring any.

Whether the new waits make the window call a chronic straggler (W107) is checked by the monitor after
ingesting them (:func:`syncdoctor.watch.straggler.stragglers`); that step is idempotent, so the full
detector can still run afterwards with the same result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.watch.aggregate import NodeRecords
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.records import (
    HEADER_FIELDS,
    HEADER_GROUPS,
    HEADER_MARKS,
    HEADER_SIZE,
    HEADER_WAITS,
    MAGIC,
    OVERFLOW,
    SOURCES,
    STATES,
    WaitSample,
    group_id,
)
from syncdoctor.watch.snapshot import DetectorState

__all__ = ["GroupIndex", "Verdict", "drift_check", "header_dtype", "header_table", "new_waits", "screen"]

_RUNNING = STATES.index("running")
_HOOKS = SOURCES.index("hooks")


def header_dtype() -> Any:
    """The numpy structured dtype of one header (the layout of :data:`~syncdoctor.watch.records.HEADER_FIELDS`)."""
    import numpy as np

    codes = {"i": "<i4", "I": "<u4", "q": "<i8", "d": "<f8", "B": "u1", "4s": "S4", "2s": "S2"}
    return np.dtype([(name, codes[code], (count,)) if count > 1 else (name, codes[code])
                     for name, code, count in HEADER_FIELDS])


_DTYPE: Any = None


def header_table(raws: Sequence[bytes]) -> Any | None:
    """All headers as one numpy record array, or ``None`` when any value is not a complete record of this version."""
    import numpy as np

    global _DTYPE
    if _DTYPE is None:
        _DTYPE = header_dtype()
    count = len(raws)
    if isinstance(raws, NodeRecords):  # node values: the headers come as arrays, no record is cut out
        rows = raws.header_rows()
        if rows is None:
            return None
        table = rows.reshape(-1).view(_DTYPE)
        lengths = raws.lengths()
    else:
        heads = b"".join([raw[:HEADER_SIZE] for raw in raws])
        if len(heads) != count * HEADER_SIZE:
            return None
        table = np.frombuffer(heads, dtype=_DTYPE)
        lengths = np.fromiter(map(len, raws), dtype=np.int64, count=count)
    if count and not (table["magic"] == MAGIC).all():
        return None
    if not (lengths == HEADER_SIZE + table["detail_len"].astype(np.int64)).all():
        return None
    return table


def used_slots(table: Any, rows: Any = None) -> Any:
    """``(rows, HEADER_GROUPS)`` booleans: which group slots of each header hold a group (those below its
    ``ngroups``). ``rows``: row indices (all rows when None)."""
    import numpy as np

    ngroups = table["ngroups"] if rows is None else table["ngroups"][rows]
    return np.arange(HEADER_GROUPS)[None, :] < ngroups[:, None]


def group_slots(table: Any, rows: Any, gids: Any) -> tuple[Any, Any]:
    """``(has, slot)`` for each row: whether its header holds group ``gids`` (one id for all rows, or one per
    row) and in which slot (0 where it does not)."""
    import numpy as np

    wanted = np.asarray(gids)
    match = (table["gid"][rows] == (wanted[:, None] if wanted.ndim else wanted)) & used_slots(table, rows)
    return match.any(axis=1), match.argmax(axis=1)


@dataclass
class Verdict:
    """What :func:`screen` found. ``reason`` says why a cycle is not quiet (empty when quiet);
    ``completed`` is, per group, the lowest sequence number all its members completed (for the straggler
    window), filled in when quiet."""

    quiet: bool
    reason: str = ""
    completed: dict[str, int] = field(default_factory=dict)


@dataclass
class GroupIndex:
    """The member tables flattened for the screen: one (group, member) pair per entry, groups in order.

    Built once per change of the tables (the monitor keeps it), so that a cycle checks all groups with a
    few array operations: a job with a tensor-parallel group per 8 ranks has 512 groups at 4096 ranks,
    and a loop over them cost 100 ms a cycle.
    """

    names: list[str]
    gids: Any  # uint32 per group
    by_id: dict[int, str]  # group id -> name
    shared_id: bool  # two names hash to one id
    outside: str | None  # the first group that names a rank outside the job
    pair_group: Any  # int64 per pair: index of its group in ``names``
    pair_rank: Any  # int64 per pair
    starts: Any  # offsets of the nonempty groups' first pairs (for ufunc.reduceat)
    nonempty: Any  # indexes of the nonempty groups, in order

    @classmethod
    def build(cls, groups: Mapping[str, Sequence[int]], world_size: int) -> GroupIndex:
        import numpy as np

        names = list(groups)
        ids = [group_id(name) for name in names]
        sizes = np.fromiter((len(groups[name]) for name in names), dtype=np.int64, count=len(names))
        pair_rank = np.fromiter((r for name in names for r in groups[name]), dtype=np.int64, count=int(sizes.sum()))
        pair_group = np.repeat(np.arange(len(names), dtype=np.int64), sizes)
        bad = (pair_rank < 0) | (pair_rank >= world_size)
        outside = names[int(pair_group[np.flatnonzero(bad)[0]])] if bad.any() else None
        nonempty = np.flatnonzero(sizes > 0)
        starts = (np.cumsum(sizes) - sizes)[nonempty]
        return cls(names, np.asarray(ids, dtype=np.uint32), dict(zip(ids, names, strict=True)),
                   len(set(ids)) != len(ids), outside, pair_group, pair_rank, starts, nonempty)


def screen(
    table: Any | None,
    *,
    now: float,
    config: WatchConfig,
    state: DetectorState,
    world_size: int,
    changed_at: Any,
    stack_gens: Any,
    groups: Mapping[str, tuple[int, ...]] | GroupIndex,
    hooks_said: bool,
    new_wait_count: int = 0,
) -> Verdict:
    """Decide whether this cycle is quiet (see the module docstring).

    ``changed_at``: per rank, the monitor time its heartbeat last changed, this cycle's headers
    included; ``stack_gens``: per rank, the generation of the last stack the monitor read;
    ``groups``: the member tables the monitor has read (or their :class:`GroupIndex`); ``new_wait_count``:
    an upper bound of the waits
    the straggler bookkeeping will take this cycle.
    """
    import numpy as np

    if table is None or len(table) != world_size:
        return Verdict(False, "a rank has no valid record")
    if state.started_at is None:
        return Verdict(False, "first cycle")
    if state.incidents:
        return Verdict(False, "an incident is open")
    ranks = np.arange(world_size)
    if not (table["rank"] == ranks).all():
        return Verdict(False, "a record names another rank")
    if not (table["state"] == _RUNNING).all():
        return Verdict(False, "a rank is not running")
    if (table["flags"] & OVERFLOW).any() or (table["ngroups"] > HEADER_GROUPS).any():
        return Verdict(False, "a header cannot hold its record")
    if not hooks_said and (table["source"] == _HOOKS).any():
        return Verdict(False, "hooks notice not said yet")
    if (table["stack_gen"] > stack_gens).any():
        return Verdict(False, "a new stack to read")
    for rank, (gen, _key) in state.stack_asked.items():
        if 0 <= rank < world_size and table["stack_gen"][rank] < gen:
            return Verdict(False, "a stack request is unanswered")
    recent = now - (config.dead_s + 2 * config.interval_s)
    if any(when > recent for when in state.inspect_asked.values()):
        return Verdict(False, "a process-state request is recent")
    # liveness, in the detector's own arithmetic: silent after min(dead_s, 1.5 intervals)
    if not (changed_at > now - min(config.dead_s, 1.5 * config.interval_s)).all() or not (
        (now - changed_at) < config.dead_s
    ).all():
        return Verdict(False, "a heartbeat is late")
    stall = np.maximum(table["max_stall_ms"], 0).astype(np.float64) + 1.0  # +1 ms: rounding margin
    if not (stall / 1000.0 + (now - changed_at) + config.interval_s < config.suspect_s).all():
        return Verdict(False, "a rank has stalled long enough to be judged")
    slots = used_slots(table)
    gids = table["gid"]
    index = groups if isinstance(groups, GroupIndex) else GroupIndex.build(groups, world_size)
    if index.shared_id:
        return Verdict(False, "two groups share an id")
    if not np.isin(gids[slots], index.gids).all():
        return Verdict(False, "a group's member table is not read yet")
    if len(state.pending_waits) + new_wait_count > state.max_pending:
        return Verdict(False, "the straggler bookkeeping is full")
    window_s = config.straggler_window_s
    if any(now - first_seen > window_s for first_seen, _ in state.pending_waits.values()):
        return Verdict(False, "pending waits expire")
    if index.outside is not None:
        return Verdict(False, f"group {index.outside} names ranks outside the job")
    completed: dict[str, int] = {}
    pr, starts = index.pair_rank, index.starts
    if not len(pr):
        return Verdict(True, completed=completed)
    # each member's slot of its group: which header slot holds the group's id
    slot = (gids[pr] == index.gids[index.pair_group][:, None]) & slots[pr]  # (pairs, G)
    has = slot.any(axis=1)
    where = slot.argmax(axis=1)
    every = np.logical_and.reduceat(has, starts)
    lowest = np.minimum.reduceat(table["completed"][pr, where].astype(np.int64), starts)
    for g, ok, low in zip(index.nonempty.tolist(), every.tolist(), lowest.tolist(), strict=True):
        if ok:
            completed[index.names[g]] = low
    drift = drift_check(table, index)
    if drift is None:
        return Verdict(True, completed=completed)
    lacks, differ, common = drift
    failed = np.flatnonzero(lacks | differ)
    if len(failed):
        first = int(failed[0])
        name = index.names[int(index.nonempty[first])]
        if lacks[first]:
            return Verdict(False, f"group {name}: a member's header lacks the common step")
        return Verdict(False, f"group {name}: entered counts differ at step {int(common[first])}")
    return Verdict(True, completed=completed)


def drift_check(table: Any, index: GroupIndex) -> tuple[Any, Any, Any] | None:
    """Collective count drift, per nonempty group of ``index`` (in ``index.nonempty`` order): ``(lacks,
    differ, common)``, or ``None`` when fewer than two ranks marked a step (no group can drift).

    In each group with two or more marked members, the entered counts at ``common`` (the latest step all of
    them marked) must be equal (``differ`` where not), and every one of them must still hold that step in
    its header (``lacks`` where not: the header cannot tell, the records must).
    """
    import numpy as np

    world_size = len(table)
    nmarks = table["nmarks"].astype(np.int64)
    marked = nmarks > 0
    pr, starts = index.pair_rank, index.starts
    if int(marked.sum()) < 2 or not len(pr):
        return None
    has, where = group_slots(table, pr, index.gids[index.pair_group])
    latest = table["mark_step"][np.arange(world_size), np.maximum(nmarks - 1, 0)]
    mark_ok = np.arange(HEADER_MARKS)[None, :] < nmarks[:, None]
    counts = table["mark_entered"].reshape(world_size, HEADER_MARKS, HEADER_GROUPS)
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    pick = marked[pr]
    judged = np.add.reduceat(pick.astype(np.int64), starts) >= 2
    common = np.minimum.reduceat(np.where(pick, latest[pr], big), starts)
    per_pair = np.repeat(common, np.diff(np.append(starts, len(pr))))
    hit = (table["mark_step"][pr] == per_pair[:, None]) & mark_ok[pr]
    lacks = judged & np.logical_or.reduceat(pick & ~hit.any(axis=1), starts)
    values = np.where(has, counts[pr, hit.argmax(axis=1), where].astype(np.int64), 0)
    differ = judged & ~lacks & (
        np.maximum.reduceat(np.where(pick, values, small), starts)
        != np.minimum.reduceat(np.where(pick, values, big), starts))
    return lacks, differ, common


def new_waits(
    table: Any, seen_pid: Any, seen_total: Any, names: Mapping[int, str]
) -> tuple[list[tuple[int, list[WaitSample]]], list[int]]:
    """Waits appended since the monitor last took a rank's waits: ``(from_headers, to_decode)``.

    ``seen_pid``/``seen_total``: per rank, the pid and ``waits_total`` of the record whose waits were
    last taken (pid -1: none). A rank whose count moved by at most the waits its header holds gets
    them from the header (``names``: group id -> name); others (a new process, or more new waits than
    the header holds) must be decoded.
    """
    import numpy as np

    total = table["waits_total"]
    same = table["pid"] == seen_pid
    moved = np.flatnonzero(~same | (total != seen_total))
    if not len(moved):
        return [], []
    delta = np.where(same[moved], total[moved] - seen_total[moved], -1)
    held = table["nwaits"][moved].astype(np.int64)
    ok = (delta >= 0) & (delta <= held)
    to_decode = set(moved[~ok].tolist())
    rows, delta, held = moved[ok], delta[ok], held[ok]
    index = np.arange(HEADER_WAITS)[None, :]
    new = (index >= (held - delta)[:, None]) & (index < held[:, None])  # the newest `delta` of `held`
    owner = np.repeat(rows, new.sum(axis=1))
    gids = table["wait_gid"][rows][new]
    unknown = ~np.isin(gids, np.fromiter(names, dtype=np.uint32, count=len(names)))
    to_decode.update(owner[unknown].tolist())
    by_rank: dict[int, list[WaitSample]] = {}
    for rank, gid, seq, ms in zip(owner.tolist(), gids.tolist(), table["wait_seq"][rows][new].tolist(),
                                  table["wait_ms"][rows][new].tolist(), strict=True):
        if rank not in to_decode:
            by_rank.setdefault(rank, []).append(WaitSample(names[gid], seq, ms / 1000))
    return sorted(by_rank.items()), sorted(to_decode)
