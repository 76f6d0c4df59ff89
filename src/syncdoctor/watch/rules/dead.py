"""Ranks that stopped reporting: dead (W105) or a whole host cut off (W106). Pure: no I/O.

A rank whose heartbeat has not moved for ``dead_s`` (monitor clock) is dead; when every rank of a host went
silent together while other hosts still report, the host is named instead. A rank on the same host may be
asked to read the silent pid's process state (``stopped`` for SIGSTOP, ``gone`` for a killed process).
What a dead rank holds up (the wait nearest to it and the chain behind it) comes from the wait rules
through :attr:`Context.blocked`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from syncdoctor.watch.events import Event
from syncdoctor.watch.records import INSPECTED, RankRecord, format_ranks
from syncdoctor.watch.rules.context import ALIVE_STATES, Condition, Context, key, ranks_text

__all__ = ["dead_conditions"]


def dead_conditions(ctx: Context) -> list[Condition]:
    snap, config, state = ctx.snapshot, ctx.config, ctx.state
    suspicious_after = min(config.dead_s, 1.5 * config.interval_s)
    horizon = snap.now - suspicious_after
    if ctx.alive is not None:  # columns: every rank has a record
        import numpy as np

        alive = np.flatnonzero(ctx.alive).tolist()
        quiet = np.flatnonzero(ctx.changed_at <= horizon).tolist()
        dead = [r for r in np.flatnonzero(~ctx.alive).tolist() if ctx.live.get(r) == "stale"]
    else:
        alive = [r for r, kind in ctx.live.items() if kind == "alive"]
        quiet = [r for r, seen in state.seen.items() if seen.changed_at <= horizon and r in snap.records]
        dead = sorted(r for r, kind in ctx.live.items() if kind in ("stale", "missing"))
    if not alive:
        return []  # nobody left to compare with: the job ended or the monitor is cut off itself
    if not quiet and not dead:
        return []  # the common case: every rank's heartbeat moves
    by_host: dict[str, list[int]] = {}
    for rank in snap.records if snap.columns is None else range(snap.world_size):
        host_key = ctx.host_key(rank)
        if host_key is not None:
            by_host.setdefault(host_key, []).append(rank)
    # ask a sibling on the same host to read the process state of ranks that start to look silent
    for rank in quiet:
        rec = snap.records.get(rank)
        if rec is not None and rec.state in ALIVE_STATES:
            siblings = [r for r in by_host.get(rec.host_key, ()) if r != rank and ctx.live.get(r) == "alive"]
            if siblings and rec.pid and rec.pid not in state.inspect_asked:
                state.inspect_asked[rec.pid] = snap.now
                ctx.requests.inspect[rec.pid] = rec.host_key
    if not dead:
        return []
    conditions: list[Condition] = []
    named: set[int] = set()
    for host, ranks in sorted(by_host.items()):
        if len(ranks) < 2 or not all(ctx.live.get(r) == "stale" for r in ranks):
            continue
        if all(ctx.host_key(r) == host for r in alive):
            continue
        times = [state.seen[r].changed_at for r in ranks]
        if max(times) - min(times) > 2 * config.interval_s + 1.0:
            continue
        named.update(ranks)
        where = ctx.hosts(ranks[:1])
        silent = max(ctx.age(r) for r in ranks)
        title = (
            f"host {where[0] if where else host}: all its ranks ({format_ranks(ranks)}) stopped reporting together "
            f"{silent:.1f} s ago while other hosts still report: the host is down or cut off the network"
        )
        conditions.append(Condition(_dead_event(ctx, "W106", tuple(sorted(ranks)), title, key("W106", host))))
    for rank in dead:
        if rank in named:
            continue
        last = ctx.record(rank)
        if last is None and rank in state.seen:  # it reported, then its record was gone from the store
            title = (f"rank {rank} stopped reporting {ctx.age(rank):.1f} s ago, and its record is no longer in the job's "
                     "store: dead, frozen, or its host is cut off")
        elif last is None:
            title = f"rank {rank} never reported: it did not start the watcher, or never got past init"
        else:
            state_text = _process_state(ctx, last)
            title = f"{ctx.who(rank)} stopped reporting {ctx.age(rank):.1f} s ago{state_text}"
        ready = True
        if last is not None and last.pid in state.inspect_asked and "its process" not in title:
            # a sibling was asked for the process state: give it two intervals to answer
            ready = ctx.age(rank) >= config.dead_s + 2 * config.interval_s
        conditions.append(Condition(_dead_event(ctx, "W105", (rank,), title, key("W105", rank)), ready=ready))
    return conditions


def _process_state(ctx: Context, rec: RankRecord) -> str:
    for _, other in ctx.records_with(INSPECTED):
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


def _dead_event(ctx: Context, code: str, ranks: tuple[int, ...], title: str, incident_key: str) -> Event:
    detail: dict[str, Any] = {"silent_s": {str(r): round(ctx.age(r), 1) for r in ranks if ctx.record(r)}}
    for rank in ranks:
        rec = ctx.record(rank)
        if rec is None:
            continue
        for _, other in ctx.records_with(INSPECTED):
            if other.host_key == rec.host_key and rec.pid in other.inspected:
                detail.setdefault("process", {})[str(rank)] = other.inspected[rec.pid]
        inside = [f"{g} #{p.completed + 1}" for g, p in rec.groups.items() if p.pending]
        if inside:
            detail.setdefault("inside", {})[str(rank)] = inside
    blocked = next((ctx.blocked[r] for r in ranks if r in ctx.blocked), None)
    title_tail = ""
    event = Event(code, "confirmed", title, ranks=ranks, hosts=ctx.hosts(ranks), pids=ctx.pids(ranks),
                  key=incident_key, at=ctx.snapshot.wall, detail=detail)
    if blocked is not None:
        op = blocked.signature.short() if blocked.signature else "collective"
        title_tail = f"; {ranks_text(blocked.waiting)} wait for it in {op} #{blocked.seq} of group {blocked.group}"
        if blocked.chain:
            title_tail = f"; {ranks_text(blocked.waiting)} wait for it: {blocked.chain}"
            detail["chain"] = blocked.chain
        event = replace(
            event, title=title + title_tail, group=blocked.group, seq=blocked.seq, signature=blocked.signature,
            waiting_ranks=blocked.waiting, waited_s=blocked.waited,
            group_ranks=ctx.groups.get(blocked.group, ()), detail=detail,
        )
    return event
