"""The detector: a pure function from one snapshot of every rank's record to events.

Pure: no I/O, no clock, no sleeping (``snapshot.now`` is the only time). ``detect(snapshot, config,
state)`` updates the caller-owned :class:`~syncdoctor.watch.snapshot.DetectorState` and returns the new
events plus what the monitor should ask the ranks for (stacks, process states).

Rules, in the order they are checked:

- **dead rank (W105) / host unreachable (W106)**: a rank's heartbeat has not moved for ``dead_s``
  (monitor clock). When every rank of a host went silent together while other hosts still report, the
  host is named instead. A rank on the same host may be asked to read the silent pid's process state
  (``stopped`` for SIGSTOP, ``gone`` for a killed process).
- per process group, let S be the oldest collective some member has entered and not completed:
  - **late rank (W101)**: some members are inside S and have waited ``warn_after_s``, others (alive,
    reporting) have not entered S. Their stacks are requested at ``suspect_s``; the event waits for
    them for up to two intervals.
  - **rank left early (W108)**: the rank that has not entered S has exited or is dying of an exception.
  - **collective mismatch (W102)**: every member entered S but they called different things there
    (op, sizes or dtypes): the minority are named with both signatures.
  - **transport hang (W104)**: every member entered S, with the same signature, and S has not completed
    for ``warn_after_s``: not a straggler, the network or the transport.
- **collective count drift (W103)**: at the same training step, members of a group have entered different
  numbers of collectives: a rank skipped (or added) one, so later collectives pair with the wrong partners.
- **chronic straggler (W107)**: see :mod:`syncdoctor.watch.straggler`.

An incident is reported once when it crosses its threshold (status ``warning``, or ``confirmed`` for
conditions that never recover by themselves), again when a late rank or transport hang lasts
``confirm_after_s`` (``confirmed``), and once more when it clears (``resolved``), unless it was
superseded by a more specific incident about the same ranks or collective.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from syncdoctor.watch import straggler
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.records import GroupProgress, RankRecord, Signature, format_ranks
from syncdoctor.watch.snapshot import DetectorState, Incident, RankSeen, Requests, Snapshot

__all__ = ["Detection", "detect"]

_ALIVE_STATES = ("starting", "running", "aborting")
_STICKY = ("W102", "W103", "W108")
_DEFAULT_GROUP = "0"
# collectives that complete on a rank only once every member has entered them (unlike broadcast, whose
# root may finish first)
_SYMMETRIC = ("all_reduce", "allreduce", "all_gather", "allgather", "_allgather_base", "all_gather_into_tensor",
              "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "all_to_all", "alltoall",
              "alltoall_base", "all_to_all_single", "barrier", "all_reduce_coalesced", "allreduce_coalesced",
              "coalesced")


@dataclass(frozen=True)
class Detection:
    events: tuple[Event, ...]
    requests: Requests


@dataclass
class _Condition:
    event: Event
    ready: bool = True
    late_for: tuple[str, int, tuple[int, ...], tuple[int, ...]] | None = None  # W101: group, seq, waiting, late


@dataclass
class _Blocked:
    """Context of a group blocked by ranks that are dead, missing or gone."""

    group: str
    seq: int
    signature: Signature | None
    waiting: tuple[int, ...]
    waited: float


@dataclass
class _Context:
    snapshot: Snapshot
    config: WatchConfig
    state: DetectorState
    live: dict[int, str]  # rank -> alive | stale | exited | failed | missing
    groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    requests: Requests = field(default_factory=Requests)
    blocked: dict[int, _Blocked] = field(default_factory=dict)

    def age(self, rank: int) -> float:
        seen = self.state.seen.get(rank)
        return 0.0 if seen is None else self.snapshot.now - seen.changed_at

    def elapsed(self, rank: int) -> float:
        """Seconds since the rank published its current record, to add to the durations it reports.

        The monitor's own clock gives a lower bound (since it first saw the record, up to one cycle late);
        the publication time on the rank's wall clock is used within one interval above that, so that
        clocks that disagree cannot stretch a wait by more than an interval.
        """
        low = self.age(rank)
        rec = self.snapshot.records.get(rank)
        if rec is None or not rec.published or not self.snapshot.wall:
            return low
        return min(max(self.snapshot.wall - rec.published, low), low + self.config.interval_s)

    def silent(self, rank: int) -> bool:
        """Alive by the dead threshold, but its heartbeat already missed a couple of intervals."""
        return self.age(rank) >= min(self.config.dead_s, 2.0 * self.config.interval_s)

    def record(self, rank: int) -> RankRecord | None:
        return self.snapshot.records.get(rank)

    def who(self, rank: int) -> str:
        rec = self.record(rank)
        if rec is None:
            return f"rank {rank}"
        return f"rank {rank} ({rec.where}, pid {rec.pid})"

    def hosts(self, ranks: Iterable[int]) -> tuple[str, ...]:
        out: list[str] = []
        for rank in ranks:
            rec = self.record(rank)
            if rec is not None and rec.where not in out:
                out.append(rec.where)
        return tuple(out)

    def pids(self, ranks: Iterable[int]) -> tuple[int, ...]:
        return tuple(rec.pid for rec in (self.record(r) for r in ranks) if rec is not None)


def detect(snapshot: Snapshot, config: WatchConfig, state: DetectorState) -> Detection:
    """Analyse one snapshot; update ``state``; return new events and requests for the ranks."""
    if state.started_at is None:
        state.started_at = snapshot.now
    _track(snapshot, state)
    ctx = _Context(snapshot, config, state, _liveness(snapshot, config, state), _groups(snapshot))
    conditions: list[_Condition] = []
    for group, members in sorted(ctx.groups.items()):
        conditions.extend(_group_conditions(ctx, group, members))
    conditions = _deadlocks(ctx, conditions)
    conditions = _drop_consequences(conditions)
    conditions.extend(_dead_conditions(ctx))
    conditions.extend(_drift_conditions(ctx))
    conditions.extend(
        _Condition(event)
        for event in straggler.evaluate(snapshot, config, state, alive=[r for r, k in ctx.live.items() if k == "alive"],
                                        groups=ctx.groups)
    )
    events = _reconcile(ctx, conditions)
    return Detection(tuple(events), ctx.requests)


# --- bookkeeping ---------------------------------------------------------------------------------


def _track(snapshot: Snapshot, state: DetectorState) -> None:
    now = snapshot.now
    seen_all = state.seen
    for rank, rec in snapshot.records.items():
        seen = seen_all.get(rank)
        if seen is None:
            seen_all[rank] = RankSeen(rec.heartbeat, now)
        elif rec.heartbeat != seen.heartbeat:
            seen.heartbeat = rec.heartbeat
            seen.changed_at = now


def _liveness(snapshot: Snapshot, config: WatchConfig, state: DetectorState) -> dict[int, str]:
    live: dict[int, str] = {}
    dead_s = config.dead_s
    started = state.started_at if state.started_at is not None else snapshot.now
    for rank in range(snapshot.world_size):
        rec = snapshot.records.get(rank)
        if rec is None:
            live[rank] = "missing" if snapshot.now - started >= dead_s else "unknown"
        elif rec.state == "exited":
            live[rank] = "exited"
        elif rec.state == "failed":
            live[rank] = "failed"
        elif snapshot.now - state.seen[rank].changed_at >= dead_s:
            live[rank] = "stale"
        else:
            live[rank] = "alive"
    return live


def _groups(snapshot: Snapshot) -> dict[str, tuple[int, ...]]:
    groups = {name: tuple(sorted(members)) for name, members in snapshot.groups.items()}
    groups.setdefault(_DEFAULT_GROUP, tuple(range(snapshot.world_size)))
    for rank, rec in snapshot.records.items():  # groups whose table has not been read yet
        for name in rec.groups:
            if name not in groups:
                groups[name] = tuple(sorted(r for r, other in snapshot.records.items() if name in other.groups))
            elif name not in snapshot.groups and rank not in groups[name]:
                groups[name] = tuple(sorted({*groups[name], rank}))
    return groups


def _key(code: str, *parts: Any) -> str:
    return ":".join([code, *(str(p) for p in parts)])


# --- per group: late, left early, mismatch, transport ---------------------------------------------


def _group_conditions(ctx: _Context, group: str, members: tuple[int, ...]) -> list[_Condition]:
    config = ctx.config
    progress: dict[int, GroupProgress | None] = {}
    for rank in members:
        rec = ctx.record(rank)
        progress[rank] = rec.groups.get(group) if rec is not None else None
    pending = [p for p in progress.values() if p is not None and p.pending]
    if not pending:
        return []
    seq = min(p.completed + 1 for p in pending)
    waiting = tuple(r for r, p in progress.items() if p is not None and p.completed < seq <= p.entered)
    entered = {r for r, p in progress.items() if p is not None and p.entered >= seq}
    not_entered = tuple(r for r in members if r not in entered)
    alive_waiting = [r for r in waiting if ctx.live.get(r) == "alive"]
    if not alive_waiting:
        return []
    waited = max((progress[r].stalled_s or 0.0) + ctx.elapsed(r) for r in alive_waiting)  # type: ignore[union-attr]
    signature = _common_signature(progress, waiting, seq)
    if waited < config.suspect_s:
        return []
    if not_entered:
        if signature is not None and signature.op in _SYMMETRIC and any(
            p is not None and p.completed >= seq for p in progress.values()
        ):
            return []  # completed somewhere, so everyone entered it: the "late" records are just older
        return _not_entered_conditions(ctx, group, members, seq, signature, waiting, not_entered, waited)
    if waited < config.warn_after_s:
        return []
    if any(ctx.live.get(r) != "alive" or ctx.silent(r) for r in members):
        for rank in members:
            if ctx.live.get(rank) in ("stale", "missing"):
                ctx.blocked.setdefault(rank, _Blocked(group, seq, signature, waiting, waited))
        return []  # the dead-rank rule names them
    return [_inside_condition(ctx, group, members, seq, progress, waited)]


def _common_signature(progress: Mapping[int, GroupProgress | None], ranks: Iterable[int], seq: int) -> Signature | None:
    sigs = Counter(p.signature for r in ranks if (p := progress.get(r)) and p.signature and p.signature_seq == seq)
    return sigs.most_common(1)[0][0] if sigs else None


def _not_entered_conditions(
    ctx: _Context,
    group: str,
    members: tuple[int, ...],
    seq: int,
    signature: Signature | None,
    waiting: tuple[int, ...],
    not_entered: tuple[int, ...],
    waited: float,
) -> list[_Condition]:
    config, state = ctx.config, ctx.state
    late = tuple(r for r in not_entered if ctx.live.get(r) == "alive")
    left = tuple(r for r in not_entered if ctx.live.get(r) in ("exited", "failed"))
    for rank in not_entered:
        if ctx.live.get(rank) in ("stale", "missing"):
            ctx.blocked.setdefault(rank, _Blocked(group, seq, signature, waiting, waited))
    conditions: list[_Condition] = []
    op = signature.short() if signature else "collective"
    if late:
        key = _key("W101", group, seq, format_ranks(late))
        if config.stacks:
            for rank in late:
                asked = state.stack_asked.get(rank)
                if asked is None or asked[1] != key:
                    state.stack_gen += 1
                    state.stack_asked[rank] = (state.stack_gen, key)
                    ctx.requests.stacks[rank] = state.stack_gen
        if not any(ctx.silent(r) for r in late):
            # below the threshold it is only a candidate: it cannot be emitted yet, but it may pair with
            # the opposite wait in another group (a deadlock, see _deadlocks)
            cond = _late_condition(ctx, key, group, members, seq, signature, waiting, late, waited)
            cond.ready = cond.ready and waited >= config.warn_after_s
            conditions.append(cond)
    if left and waited >= config.warn_after_s:
        recs = [ctx.record(r) for r in left]
        how = "; ".join(
            f"rank {rec.rank} {'failed: ' + (rec.error or 'an exception') if rec.state == 'failed' else 'exited'}"
            for rec in recs
            if rec is not None
        )
        title = (
            f"{_ranks_text(left)} left the job without entering {op} #{seq} of group {group}; "
            f"{_ranks_text(waiting)} {_have(waiting)} waited {waited:.1f} s for {'it' if len(left) == 1 else 'them'} ({how})"
        )
        conditions.append(
            _Condition(
                Event(
                    "W108", "confirmed", title, ranks=left, hosts=ctx.hosts(left), pids=ctx.pids(left),
                    group=group, group_ranks=members, seq=seq, signature=signature, waiting_ranks=waiting,
                    waited_s=waited, key=_key("W108", group, format_ranks(left)), at=ctx.snapshot.wall,
                    detail={"errors": {str(r.rank): r.error for r in recs if r is not None and r.error}},
                )
            )
        )
    return conditions


def _late_condition(
    ctx: _Context,
    key: str,
    group: str,
    members: tuple[int, ...],
    seq: int,
    signature: Signature | None,
    waiting: tuple[int, ...],
    late: tuple[int, ...],
    waited: float,
) -> _Condition:
    config, snap, state = ctx.config, ctx.snapshot, ctx.state
    op = signature.short() if signature else "collective"
    per_rank: dict[str, Any] = {}
    wheres: list[str] = []
    ready = True
    for rank in late:
        rec = ctx.record(rank)
        info: dict[str, Any] = {}
        if rec is not None and rec.quiet_s is not None:
            still = rec.quiet_s + ctx.age(rank)
            info["activity"] = (
                f"still working elsewhere (its step or collectives moved {still:.1f} s ago)"
                if still < 2 * config.interval_s + config.sample_interval_s
                else f"no progress for {still:.1f} s (same step, same collectives)"
            )
        if rec is not None and rec.step is not None:
            info["step"] = rec.step
        asked = state.stack_asked.get(rank)
        stack = snap.stacks.get(rank)
        if config.stacks and asked is not None and stack is not None and stack.gen >= asked[0]:
            info["where"] = stack.summary()
            info["stack"] = [f.short() for f in stack.frames[-8:]]
            if stack.where is not None:
                wheres.append(stack.summary())
            elif stack.note:
                info["stack_note"] = stack.note
        elif config.stacks:
            info["stack_note"] = "stack not captured (the rank's watcher did not answer in time)"
            if waited < config.warn_after_s + 2 * config.interval_s:
                ready = False
        per_rank[str(rank)] = info
    steps = sorted({r.step for w in waiting if (r := ctx.record(w)) is not None and r.step is not None})
    where_text = f"; it is in {', '.join(wheres)}" if wheres else ""
    title = (
        f"{_who_list(ctx, late)} has not entered {op} #{seq} of group {group}; "
        f"{_ranks_text(waiting)} {_have(waiting)} waited {waited:.1f} s for it{where_text}"
    )
    if len(late) > 1:
        title = title.replace(" has not ", " have not ").replace(" for it", " for them")
    status = "confirmed" if waited >= config.confirm_after_s else "warning"
    detail: dict[str, Any] = {"late": per_rank}
    if wheres:
        detail["where"] = wheres[0] if len(wheres) == 1 else ", ".join(wheres)
    if steps:
        detail["waiting_steps"] = steps
    return _Condition(
        Event(
            "W101", status, title, ranks=late, hosts=ctx.hosts(late), pids=ctx.pids(late), group=group,
            group_ranks=members, seq=seq, signature=signature, waiting_ranks=waiting, waited_s=waited,
            detail=detail, key=key, at=snap.wall,
        ),
        ready=ready,
        late_for=(group, seq, waiting, late),
    )


def _drop_consequences(conditions: list[_Condition]) -> list[_Condition]:
    """A "late" rank that is itself stuck in a hung or mismatched collective of another group is not late."""
    stuck = {r for c in conditions if c.event.code in ("W102", "W104") for r in c.event.waiting_ranks}
    return [
        c for c in conditions
        if not (c.event.code == "W101" and c.late_for is not None and set(c.late_for[3]) <= stuck
                and c.event.group not in {o.event.group for o in conditions if o.event.code in ("W102", "W104")})
    ]


def _deadlocks(ctx: _Context, conditions: list[_Condition]) -> list[_Condition]:
    """Two groups waiting for each other: ranks A wait in group G for ranks B, which wait in group H for A.

    That is no late rank but control flow that differs between ranks (typically a skipped collective:
    the skipping side went on to the next collective of another group). The smaller side is named.
    """
    late = [c for c in conditions if c.late_for is not None]
    replaced: set[int] = set()
    extra: list[_Condition] = []
    for i, first in enumerate(late):
        for second in late[i + 1:]:
            if id(first) in replaced or id(second) in replaced:
                continue
            g1, s1, wait1, late1 = first.late_for  # type: ignore[misc]
            g2, s2, wait2, late2 = second.late_for  # type: ignore[misc]
            if g1 == g2 or not (set(late1) & set(wait2)) or not (set(late2) & set(wait1)):
                continue
            if len(late2) < len(late1):
                first, second = second, first
                g1, s1, wait1, late1, g2, s2, wait2, late2 = g2, s2, wait2, late2, g1, s1, wait1, late1
            replaced.update((id(first), id(second)))
            e1, e2 = first.event, second.event
            op1 = e1.signature.short() if e1.signature else "collective"
            op2 = e2.signature.short() if e2.signature else "a collective"
            title = (
                f"{_who_list(ctx, late1)} never entered {op1} #{s1} of group {g1}, where {_ranks_text(wait1)} "
                f"wait for it, and waits in {op2} #{s2} of group {g2}, which they have not entered: the ranks "
                f"took different paths (a skipped collective); deadlock for {max(e1.waited_s or 0, e2.waited_s or 0):.1f} s"
            )
            detail = {"other_group": g2, "other_seq": s2, "other_signature": op2, **dict(e1.detail)}
            extra.append(
                _Condition(
                    Event(
                        "W103", "confirmed", title, ranks=late1, hosts=e1.hosts, pids=e1.pids, group=g1,
                        group_ranks=e1.group_ranks, seq=s1, signature=e1.signature, other_signature=e2.signature,
                        waiting_ranks=wait1, waited_s=e1.waited_s, key=_key("W103", "deadlock", g1, s1),
                        at=ctx.snapshot.wall, detail=detail,
                    ),
                    ready=max(e1.waited_s or 0, e2.waited_s or 0) >= ctx.config.warn_after_s,
                )
            )
    return [c for c in conditions if id(c) not in replaced] + extra


def _inside_condition(
    ctx: _Context,
    group: str,
    members: tuple[int, ...],
    seq: int,
    progress: Mapping[int, GroupProgress | None],
    waited: float,
) -> _Condition:
    config, snap = ctx.config, ctx.snapshot
    sigs: dict[int, Signature] = {
        r: p.signature for r, p in progress.items() if p is not None and p.signature and p.signature_seq == seq
    }
    distinct = Counter(sigs.values())
    if len(distinct) > 1:
        ordered = sorted(distinct.items(), key=lambda item: (-item[1], min(r for r, s in sigs.items() if s == item[0])))
        majority = ordered[0][0]
        odd = tuple(sorted(r for r, s in sigs.items() if s != majority))
        other = sigs[odd[0]]
        agree = tuple(sorted(r for r, s in sigs.items() if s == majority))
        title = (
            f"{_who_list(ctx, odd)} called {other.short()} as collective #{seq} of group {group} while "
            f"{_ranks_text(agree)} called {majority.short()}; all have waited {waited:.1f} s"
        )
        return _Condition(
            Event(
                "W102", "confirmed", title, ranks=odd, hosts=ctx.hosts(odd), pids=ctx.pids(odd), group=group,
                group_ranks=members, seq=seq, signature=majority, other_signature=other, waiting_ranks=agree,
                waited_s=waited, key=_key("W102", group, seq), at=snap.wall,
                detail={"signatures": {str(r): s.short() for r, s in sorted(sigs.items())}},
            )
        )
    unknown = tuple(r for r in members if r not in sigs and not (progress.get(r) and progress[r].completed >= seq))  # type: ignore[union-attr]
    signature = next(iter(distinct), None)
    op = signature.short() if signature else "a collective"
    status = "confirmed" if waited >= config.confirm_after_s else "warning"
    done = tuple(r for r, p in progress.items() if p is not None and p.completed >= seq)
    fresh = True
    if done:
        # Records are published at different moments: the stuck ranks' records may predate the completion
        # their peers already report. Only records published after that completion count as evidence.
        seen_at = ctx.state.partial_seen.setdefault((group, seq), ctx.snapshot.now)
        if len(ctx.state.partial_seen) > 256:
            ctx.state.partial_seen.pop(next(iter(ctx.state.partial_seen)))
        fresh = all(ctx.state.seen[r].changed_at > seen_at for r in members if r not in done and r in ctx.state.seen)
        stuck = tuple(r for r in members if r not in done)
        title = (
            f"every rank of group {group} ({format_ranks(members)}) entered {op} #{seq}; it completed on "
            f"{_ranks_text(done)} but not on {_ranks_text(stuck)} for {waited:.1f} s: not a late rank: the "
            f"network, the transport or a GPU ahead of it is stuck"
        )
    else:
        title = (
            f"every rank of group {group} ({format_ranks(members)}) entered {op} #{seq} and it has not "
            f"completed for {waited:.1f} s: not a late rank: the network, the transport or a GPU ahead of it is stuck"
        )
    detail: dict[str, Any] = {
        "hosts": list(ctx.hosts(members)),
        "next": "run `syncdoctor probe` between these hosts; check NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME "
        "and the links (MTU, firewall, a cut or flapping cable); with NCCL, the GPUs too (nvidia-smi, Xid errors)",
    }
    if unknown:
        detail["signatures_unknown_for"] = format_ranks(unknown)
    return _Condition(
        Event(
            "W104", status, title, ranks=(), hosts=ctx.hosts(members), group=group, group_ranks=members, seq=seq,
            signature=signature, waiting_ranks=members, waited_s=waited, key=_key("W104", group, seq),
            at=snap.wall, detail=detail,
        ),
        ready=fresh and (not unknown or waited >= config.warn_after_s + 2 * config.interval_s),
    )


# --- dead ranks and hosts ---------------------------------------------------------------------------


def _dead_conditions(ctx: _Context) -> list[_Condition]:
    snap, config, state = ctx.snapshot, ctx.config, ctx.state
    alive = [r for r, kind in ctx.live.items() if kind == "alive"]
    if not alive:
        return []  # nobody left to compare with: the job ended or the monitor is cut off itself
    suspicious_after = min(config.dead_s, 1.5 * config.interval_s)
    horizon = snap.now - suspicious_after
    quiet = [r for r, seen in state.seen.items() if seen.changed_at <= horizon and r in snap.records]
    dead = sorted(r for r, kind in ctx.live.items() if kind in ("stale", "missing"))
    if not quiet and not dead:
        return []  # the common case: every rank's heartbeat moves
    by_host: dict[str, list[int]] = {}
    for rank, rec in snap.records.items():
        by_host.setdefault(rec.host_key, []).append(rank)
    # ask a sibling on the same host to read the process state of ranks that start to look silent
    for rank in quiet:
        rec = snap.records[rank]
        if rec.state in _ALIVE_STATES:
            siblings = [r for r in by_host.get(rec.host_key, ()) if r != rank and ctx.live.get(r) == "alive"]
            if siblings and rec.pid and rec.pid not in state.inspect_asked:
                state.inspect_asked[rec.pid] = snap.now
                ctx.requests.inspect[rec.pid] = rec.host_key
    if not dead:
        return []
    conditions: list[_Condition] = []
    named: set[int] = set()
    for host, ranks in sorted(by_host.items()):
        if len(ranks) < 2 or not all(ctx.live.get(r) == "stale" for r in ranks):
            continue
        if all(snap.records[r].host_key == host for r in alive):
            continue
        times = [state.seen[r].changed_at for r in ranks]
        if max(times) - min(times) > 2 * config.interval_s + 1.0:
            continue
        named.update(ranks)
        rec = snap.records[ranks[0]]
        silent = max(ctx.age(r) for r in ranks)
        title = (
            f"host {rec.where}: all its ranks ({format_ranks(ranks)}) stopped reporting together "
            f"{silent:.1f} s ago while other hosts still report: the host is down or cut off the network"
        )
        conditions.append(_Condition(_dead_event(ctx, "W106", tuple(sorted(ranks)), title, _key("W106", host))))
    for rank in dead:
        if rank in named:
            continue
        rec = ctx.record(rank)
        if rec is None:
            title = f"rank {rank} never reported: it did not start the watcher, or never got past init"
        else:
            state_text = _process_state(ctx, rec)
            title = f"{ctx.who(rank)} stopped reporting {ctx.age(rank):.1f} s ago{state_text}"
        ready = True
        if rec is not None and rec.pid in state.inspect_asked and "its process" not in title:
            # a sibling was asked for the process state: give it two intervals to answer
            ready = ctx.age(rank) >= config.dead_s + 2 * config.interval_s
        conditions.append(_Condition(_dead_event(ctx, "W105", (rank,), title, _key("W105", rank)), ready=ready))
    return conditions


def _process_state(ctx: _Context, rec: RankRecord) -> str:
    for other in ctx.snapshot.records.values():
        state = other.inspected.get(rec.pid) if other.host_key == rec.host_key else None
        if state == "stopped":
            return ": its process is stopped (SIGSTOP or a debugger), so its watcher is frozen too"
        if state == "gone":
            return ": its process is gone (killed, OOM-killed or crashed without an exception)"
        if state == "zombie":
            return ": its process has exited (zombie)"
        if state == "running":
            return ": its process still runs but its watcher is silent (a long call holding the GIL?)"
    return ": dead, frozen, or its host is cut off"


def _dead_event(ctx: _Context, code: str, ranks: tuple[int, ...], title: str, key: str) -> Event:
    detail: dict[str, Any] = {"silent_s": {str(r): round(ctx.age(r), 1) for r in ranks if ctx.record(r)}}
    for rank in ranks:
        rec = ctx.record(rank)
        if rec is None:
            continue
        for other in ctx.snapshot.records.values():
            if other.host_key == rec.host_key and rec.pid in other.inspected:
                detail.setdefault("process", {})[str(rank)] = other.inspected[rec.pid]
        inside = [f"{g} #{p.completed + 1}" for g, p in rec.groups.items() if p.pending]
        if inside:
            detail.setdefault("inside", {})[str(rank)] = inside
    blocked = next((ctx.blocked[r] for r in ranks if r in ctx.blocked), None)
    title_tail = ""
    event = Event(code, "confirmed", title, ranks=ranks, hosts=ctx.hosts(ranks), pids=ctx.pids(ranks),
                  key=key, at=ctx.snapshot.wall, detail=detail)
    if blocked is not None:
        op = blocked.signature.short() if blocked.signature else "collective"
        title_tail = f"; {_ranks_text(blocked.waiting)} wait for it in {op} #{blocked.seq} of group {blocked.group}"
        event = replace(
            event, title=title + title_tail, group=blocked.group, seq=blocked.seq, signature=blocked.signature,
            waiting_ranks=blocked.waiting, waited_s=blocked.waited,
            group_ranks=ctx.groups.get(blocked.group, ()),
        )
    return event


# --- drift: different collective counts at the same step -------------------------------------------


def _drift_conditions(ctx: _Context) -> list[_Condition]:
    """Members of a group that entered a different number of collectives by the same step.

    A skipped collective shifts every later count, so comparing the counts at the latest step all
    members have marked finds it in O(members); the earliest differing step is then looked up in the
    odd ranks' recent marks only.
    """
    snap = ctx.snapshot
    conditions: list[_Condition] = []
    latest: dict[int, int] = {}
    for rank, rec in snap.records.items():
        if rec.step_marks:
            latest[rank] = max(m.step for m in rec.step_marks)
    if len(latest) < 2:
        return []
    for group, members in ctx.groups.items():
        marked = [r for r in members if r in latest]
        if len(marked) < 2:
            continue
        common = min(latest[r] for r in marked)
        counts = {}
        for rank in marked:
            for mark in snap.records[rank].step_marks:
                if mark.step == common:
                    value = mark.entered.get(group, 0)
                    counts[rank] = value if type(value) is int else 0
                    break
        if len(counts) < 2 or len(set(counts.values())) == 1:
            continue
        step, counts = _earliest_drift(snap, group, common, counts)
        tally = Counter(counts.values())
        ordered = sorted(tally.items(), key=lambda item: (-item[1], min(r for r, v in counts.items() if v == item[0])))
        majority = ordered[0][0]
        odd = tuple(sorted(r for r, v in counts.items() if v != majority))
        diffs = sorted({counts[r] - majority for r in odd})
        what = ", ".join(
            f"{abs(d)} {'fewer' if d < 0 else 'more'} collective{'s' if abs(d) > 1 else ''}" for d in diffs
        )
        title = (
            f"{_who_list(ctx, odd)} had entered {what} than {_ranks_text(sorted(set(counts) - set(odd)))} "
            f"in group {group} by step {step}: a collective was skipped or added (control flow differs "
            f"between ranks), so later collectives pair with the wrong partners"
        )
        conditions.append(
            _Condition(
                Event(
                    "W103", "confirmed", title, ranks=odd, hosts=ctx.hosts(odd), pids=ctx.pids(odd), group=group,
                    group_ranks=members, seq=majority, key=_key("W103", group, format_ranks(odd)), at=snap.wall,
                    detail={"step": step, "entered_by_step": {str(r): v for r, v in sorted(counts.items())}},
                )
            )
        )
    return conditions


def _earliest_drift(snap: Snapshot, group: str, common: int, counts: dict[int, int]) -> tuple[int, dict[int, int]]:
    """Walk back through the steps every rank still has marks for; return the first step that differs."""
    by_step: dict[int, dict[int, int]] = {}
    for rank in counts:
        for mark in snap.records[rank].step_marks:
            if mark.step <= common:
                value = mark.entered.get(group, 0)
                by_step.setdefault(mark.step, {})[rank] = value if type(value) is int else 0
    for step in sorted(by_step):
        values = by_step[step]
        if len(values) == len(counts) and len(set(values.values())) > 1:
            return step, values
    return common, counts


# --- incidents -> events ---------------------------------------------------------------------------


def _reconcile(ctx: _Context, conditions: list[_Condition]) -> list[Event]:
    state, snap = ctx.state, ctx.snapshot
    events: list[Event] = []
    present: dict[str, _Condition] = {}
    for cond in conditions:
        present.setdefault(cond.event.key, cond)
    for key, cond in present.items():
        event = cond.event
        incident = state.incidents.get(key)
        if incident is None:
            if not cond.ready or key in state.closed:
                continue
            state.incidents[key] = Incident(
                key, event.code, event.status, snap.now, event.title, event.group, event.seq, event.ranks,
                event.waited_s, sticky=event.code in _STICKY,
            )
            events.append(event)
        else:
            incident.waited_s = event.waited_s
            incident.last_title = event.title
            if event.status == "confirmed" and incident.status == "warning":
                incident.status = "confirmed"
                events.append(event)
    for key in list(state.incidents):
        if key in present:
            continue
        incident = state.incidents[key]
        if incident.sticky:
            del state.incidents[key]
            state.closed.add(key)
            continue
        if _superseded(incident, (c for c in present.values() if c.ready)):
            del state.incidents[key]  # a more specific incident took over (e.g. the late rank died)
            continue
        if _superseded(incident, (c for c in present.values() if not c.ready)):
            continue  # something about the same ranks is still being judged: keep it open meanwhile
        del state.incidents[key]
        if _cleared(ctx, incident):
            events.append(_resolved(ctx, incident))
    return events


def _superseded(incident: Incident, conditions: Iterable[_Condition]) -> bool:
    """Another hang-type condition now covers the same ranks or collective (e.g. the late rank died)."""
    for cond in conditions:
        event = cond.event
        if event.code in ("W107", "W109"):
            continue
        if set(event.ranks) & set(incident.ranks):
            return True
        if incident.group is not None and event.group == incident.group and event.seq == incident.seq:
            return True
    return False


def _cleared(ctx: _Context, incident: Incident) -> bool:
    """Resolved means progress, not that everyone died or left: the group moved on, or the rank is back."""
    if incident.code in ("W105", "W106", "W107"):
        return all(ctx.live.get(r) == "alive" for r in incident.ranks)
    if incident.group is None or incident.seq is None:
        return False
    for rank, rec in ctx.snapshot.records.items():
        progress = rec.groups.get(incident.group)
        if ctx.live.get(rank) in ("alive", "exited") and progress is not None and progress.completed >= incident.seq:
            return True
    return False


def _resolved(ctx: _Context, incident: Incident) -> Event:
    duration = ctx.snapshot.now - incident.since
    ranks = incident.ranks
    if incident.code == "W101":
        title = (
            f"{_ranks_text(ranks)} arrived; collective #{incident.seq} of group {incident.group} completed "
            f"(the others had waited at least {incident.waited_s or 0.0:.1f} s)"
        )
    elif incident.code in ("W105", "W106"):
        title = f"{_ranks_text(ranks)} reporting again (silent for at least {duration:.1f} s more after the event)"
    elif incident.code == "W107":
        title = f"{_ranks_text(ranks)} no longer arrives last most of the time"
    else:
        title = f"collective #{incident.seq} of group {incident.group} completed after the event ({incident.last_title})"
    return Event(
        incident.code, "resolved", title, ranks=ranks, hosts=ctx.hosts(ranks), pids=ctx.pids(ranks),
        group=incident.group, seq=incident.seq, waited_s=incident.waited_s, key=incident.key, at=ctx.snapshot.wall,
        detail={"open_s": round(duration, 1)},
    )


# --- text helpers ------------------------------------------------------------------------------------


def _have(ranks: Iterable[int]) -> str:
    return "has" if len(list(ranks)) == 1 else "have"


def _ranks_text(ranks: Iterable[int]) -> str:
    ordered = sorted(ranks)
    if not ordered:
        return "no rank"
    return ("rank " if len(ordered) == 1 else "ranks ") + format_ranks(ordered)


def _who_list(ctx: _Context, ranks: Iterable[int]) -> str:
    ordered = sorted(ranks)
    if len(ordered) > 4:
        return f"ranks {format_ranks(ordered)} (hosts {', '.join(ctx.hosts(ordered))})"
    return ", ".join(ctx.who(r) for r in ordered)
