"""Who waits for whom, and the root where the waiting ends: late (W101), left early (W108), a cycle of waits
(W103 deadlock), or a collective or message every side entered (W102/W104, :mod:`.hang`). Pure: no I/O.

1. Per process group, S is the oldest collective some member has entered and not completed. Members
   inside S wait for the members that have not entered it. When every member entered S, nobody is
   waited for: with different signatures it is a mismatch (W102); when it has not completed for
   ``warn_after_s``, a transport hang (W104).
2. Per point-to-point channel, a rank inside its receive #k from B waits for B while B has not posted its
   send #k (and a send waits likewise for the receive). When both posted it and neither finished for
   ``warn_after_s``, the pair is a transport hang (W104).
3. The roots of the wait-for graph (:mod:`syncdoctor.watch.waitgraph`) are the incidents, one per root:

   - a root rank inside no operation (or only in one everybody entered, not yet hung) is late: W101
     names it, with its stack, the chain of waits that lead to it and every rank held up;
   - one that exited or is dying of an exception left early: W108;
   - a dead, frozen or cut-off one is named by the dead-rank rule (:mod:`.dead`), which is told what it
     holds up;
   - a member of a hung or mismatched collective: that W104/W102 incident, told who waits behind it;
   - a cycle is a deadlock (W103): the smaller side is named where one side is smaller.

A rank that waits for someone is never the subject of a W101: in a tensor x data parallel job, the data
parallel peers of a rank that waits in its tensor-parallel group for a late rank wait for the late rank,
not for it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from syncdoctor.watch.events import Event
from syncdoctor.watch.records import Activity, Signature, format_ranks
from syncdoctor.watch.rules.context import (
    Blocked,
    Condition,
    Context,
    have,
    key,
    ranks_text,
    who_list,
)
from syncdoctor.watch.rules.edges import Graph, ask_stacks, channel_waits, group_waits, seen_before
from syncdoctor.watch.snapshot import Incident
from syncdoctor.watch.waitgraph import Root, Wait, analyse, describe_chain

__all__ = ["describe_activity", "wait_conditions"]

def wait_conditions(ctx: Context) -> list[Condition]:
    """The conditions of every root of this cycle's wait-for graph, plus the hangs and mismatches."""
    graph = Graph([], {}, dict(ctx.groups), {}, {})
    conditions: list[Condition] = []
    columns = ctx.snapshot.columns
    # with columns, the groups in which no alive member is inside a collective are known at once: no wait there
    quiet = set(columns.index.names) - columns.pending_groups(ctx.alive) if columns is not None else set()
    for group, members in sorted(ctx.groups.items()):
        if group not in quiet:
            conditions.extend(group_waits(ctx, graph, group, members))
    conditions.extend(channel_waits(ctx, graph))
    chains: dict[int, list[Root]] = {}  # id(hang condition) -> roots that end in it
    by_id = {id(c): c for c in conditions}
    for root in analyse(graph.waits):
        if root.cycle:
            conditions.extend(_cycle(ctx, graph, root))
            continue
        for cond in {id(graph.hung[r]): graph.hung[r] for r in root.ranks if r in graph.hung}.values():
            chains.setdefault(id(cond), []).append(root)
        conditions.extend(_root(ctx, graph, root))
    for cond_id, roots in chains.items():
        _attach_chain(by_id[cond_id], roots)
    ctx.state.roots = {r: beat for r, beat in ctx.state.roots.items() if r in graph.roots}
    return conditions


# --- roots -> conditions ------------------------------------------------------------------------------


def _root(ctx: Context, graph: Graph, root: Root) -> list[Condition]:
    config = ctx.config
    late = tuple(r for r in root.ranks if ctx.live.get(r) == "alive" and r not in graph.hung)
    left = tuple(r for r in root.ranks if ctx.live.get(r) in ("exited", "failed"))
    chain = describe_chain(root, ranks_text) if len(root.hops) > 1 else ""
    out: list[Condition] = []
    for rank in root.ranks:
        if ctx.live.get(rank) in ("stale", "missing"):
            seen_before(ctx, graph, (rank,))  # a dead root that comes back is late at once
            wait = _primary(ctx, graph, "W105", (rank,), root)
            ctx.blocked.setdefault(
                rank, Blocked(wait.op.group, wait.op.seq, graph.signatures.get(wait), root.affected, root.waited_s, chain)
            )
    if late and root.waited_s >= config.suspect_s:
        out.extend(_late(ctx, graph, root, late, chain))
    elif late:
        ctx.due(root.waited_s)  # the stacks are asked for at suspicion, not up to an interval after it
    if left and root.waited_s >= config.warn_s:
        out.append(_left(ctx, graph, root, left))
    elif left:
        ctx.due(root.waited_s)  # named at the threshold, not up to an interval after it
    return out


def _primary(ctx: Context, graph: Graph, code: str, ranks: tuple[int, ...], root: Root) -> Wait:
    """The wait an event about ``ranks`` is told in: one that waits for them directly, the longest, in the
    smallest group among those as long (a tensor-parallel pair before a data-parallel group, a message
    between two stages before a barrier), and the same one as long as the incident is open."""
    direct = [h.wait for h in root.hops if h.depth == 1 and set(h.wait.blockers) & set(ranks)]
    direct = direct or [h.wait for h in root.hops if h.depth == 1]
    for incident in ctx.state.incidents.values():
        if incident.code == code and set(incident.ranks) == set(ranks):
            for wait in direct:
                if (wait.op.group, wait.op.seq) == (incident.group, incident.seq) and (
                    incident.channel is None if wait.op.kind == "collective"
                    else incident.channel == (wait.waiters[0], wait.op.peer, wait.op.kind)
                ):
                    return wait
    # the wait that began first is the one the root is most likely stuck before; waits that began within a
    # sampling interval of each other cannot be told apart, and the smallest group goes first among them
    longest = max(w.waited_s for w in direct)
    first = [w for w in direct if w.waited_s >= longest - ctx.config.sample_interval_s]
    return min(first, key=lambda w: (
        # a stage receives before it sends: a peer blocked in its send to the root tells what the root does first
        2 if w.op.kind != "collective" else len(graph.members.get(w.op.group, ())), w.op.kind != "send",
        _group_order(w.op.group), w.op.seq, w.waiters,
    ))


def _group_order(name: str) -> tuple[int, int, str]:
    return (0, int(name), "") if name.isdecimal() else (1, 0, name)


def _subject(wait: Wait, ranks: tuple[int, ...], signature: Signature | None) -> str:
    """What ``ranks`` have not done that ``wait`` waits for."""
    op = wait.op
    if op.kind == "collective":
        return f"has not entered {signature.short() if signature else 'collective'} #{op.seq} of group {op.group}"
    peer = wait.waiters[0]
    matching = "receive" if op.kind == "send" else "send"
    where = "from" if op.kind == "send" else "to"
    return f"has not posted {matching} #{op.seq} {where} rank {peer} in group {op.group}, which rank {peer} waits in"


def _late(ctx: Context, graph: Graph, root: Root, late: tuple[int, ...], chain: str) -> list[Condition]:
    config, state, snap = ctx.config, ctx.state, ctx.snapshot
    wait = _primary(ctx, graph, "W101", late, root)
    signature = graph.signatures.get(wait)
    op = wait.op
    incident = key("W101", op.group, op.seq, format_ranks(late)) if op.kind == "collective" else key(
        "W101", op.group, op.kind, wait.waiters[0], op.seq, format_ranks(late))
    # while it is open, the incident about these roots stays the same one, whatever wait is nearest to them:
    # as a chain unwinds, the waits that lead to a root change before the root arrives. Once its own wait
    # finished, the roots arrived: being the root of a wait again is another incident, confirmed afresh.
    for open_key, open_incident in state.incidents.items():
        if open_incident.code == "W101" and open_incident.ranks == late:
            if _finished(ctx, open_incident):
                for rank in late:
                    state.roots.pop(rank, None)
            else:
                incident = open_key
            break
    if config.stacks:
        ask_stacks(ctx, late)
    seen = seen_before(ctx, graph, late)  # after the reset above
    if any(ctx.silent(r) for r in late):
        return []  # it may be dead: the dead-rank rule decides after dead_after_s
    waited = root.waited_s
    busy = _busy(ctx, late, waited)
    if busy is None:
        ctx.due(waited)
    else:  # look again when it crosses its bound, then when it would be confirmed
        ctx.due_in(-busy.over if busy.over < 0 else config.confirm_s - config.warn_s - busy.over)
    per_rank: dict[str, Any] = {}
    wheres: list[str] = []
    ready = True
    for rank in late:
        rec = ctx.record(rank)
        info: dict[str, Any] = {}
        if rec is not None and rec.activity is not None:
            info["activity"] = describe_activity(rec.activity)
            info["busy"] = rec.activity.kind
            if rec.activity.phase:
                info["phase"] = rec.activity.phase
        elif rec is not None and rec.quiet_s is not None:
            still = rec.quiet_s + ctx.age(rank)
            info["activity"] = (
                f"still working elsewhere (its step or collectives moved {still:.1f} s ago)"
                if still < 2 * config.interval_s + config.sample_interval_s
                else f"no progress for {still:.1f} s (same step, same collectives)"
            )
        if rec is not None and rec.solo is not None:
            info["solo"] = {"name": rec.solo.name, "elapsed_s": round(rec.solo.elapsed_s + ctx.elapsed(rank), 1),
                            "up_to_s": rec.solo.up_to_s}
        if rec is not None and rec.step is not None:
            info["step"] = rec.step
        if rank in graph.inside:
            info["inside"] = graph.inside[rank].text
        asked = state.stack_asked.get(rank)
        stack = snap.stacks.get(rank)
        if config.stacks and asked is not None and stack is not None and stack.gen >= asked[0]:
            info["where"] = stack.summary()
            info["stack"] = [f.short() for f in stack.frames[-8:]]
            if stack.where is not None:
                wheres.append(stack.summary())
            elif stack.note:
                info["stack_note"] = stack.note
            if stack.native:
                info["native_stack"] = list(stack.native[:12])
            elif stack.in_native and stack.native_note:
                info["native_note"] = stack.native_note
        elif config.stacks:
            info["stack_note"] = "stack not captured (the rank's watcher did not answer in time)"
            if waited < config.warn_s + 2 * config.interval_s:
                ready = False
                if waited >= config.warn_s:  # held for the stack only: look again soon, not an interval later
                    ctx.due_in(config.interval_s / 4)
        per_rank[str(rank)] = info
    if _stuck_inside(ctx, graph, late, waited):
        ready = False
    affected = root.affected
    steps = sorted(ctx.steps(affected))
    kinds = sorted({str(info["busy"]) for info in per_rank.values() if info.get("busy")})
    where_text = f"; it is in {', '.join(wheres)}" if wheres else ""
    if kinds and busy is None:
        where_text += f" ({'/'.join(kinds)})"
    chain_text = f": {chain}" if chain else ""
    if busy is not None and busy.over < 0:
        for rank in late:
            state.busy_at[rank] = snap.now
        return [_solo_work(ctx, graph, root, late, wait, signature, per_rank, busy, chain, wheres, ready)]
    title = (
        f"{who_list(ctx, late)} {_subject(wait, late, signature)}; {ranks_text(affected)} {have(affected)} "
        f"waited {waited:.1f} s for it{chain_text}{where_text}"
    )
    if len(late) > 1:
        title = title.replace(" has not ", " have not ").replace(" for it", " for them")
    if busy is not None:  # busy, but past the bound the others may wait for it: late after all
        title += f"; {busy.text}, past {busy.bound:.0f} s"
        status = "confirmed" if busy.over >= config.confirm_s - config.warn_s else "warning"
    else:
        # a rank seen working alone a moment ago counts its lateness from then (a pause in a checkpoint)
        stuck_for = min((snap.now - state.busy_at[r] for r in late if r in state.busy_at), default=waited)
        status = ("confirmed" if waited >= config.confirm_s and
                  stuck_for >= config.confirm_s - config.warn_s else "warning")
        if status == "warning" and waited >= config.confirm_s:
            ctx.due_in(config.confirm_s - config.warn_s - stuck_for)
    detail: dict[str, Any] = {"late": per_rank}
    if busy is not None:
        detail["busy"] = {"text": busy.text, "bound_s": busy.bound, "over_s": round(busy.over, 1)}
    if wheres:
        detail["where"] = wheres[0] if len(wheres) == 1 else ", ".join(wheres)
    if steps:
        detail["waiting_steps"] = steps
    if chain:
        detail["chain"] = chain
        detail["hops"] = _hops(root)
    if op.kind != "collective":
        detail["p2p"] = {"waiter": wait.waiters[0], "peer": op.peer, "kind": op.kind}
    event = Event(
        "W101", status, title, ranks=late, hosts=ctx.hosts(late), pids=ctx.pids(late), group=op.group,
        group_ranks=graph.members.get(op.group, ()), seq=op.seq, signature=signature, waiting_ranks=affected,
        waited_s=waited, detail=detail, key=incident, at=snap.wall,
    )
    return [Condition(event, ready=ready and waited >= config.warn_s and seen)]


def _stuck_inside(ctx: Context, graph: Graph, late: tuple[int, ...], waited: float) -> bool:
    """Whether a late rank is inside an operation every side entered that began waiting about when the others
    began waiting for the rank (within a publication interval: each wait is known to a sampling interval).

    Such a rank is no straggler: it arrived where its peers already were and is stuck there with them. In a
    job with a gradient group and a metric group, a link cut while every rank is in the metric all_reduce can
    leave one rank inside it (its last chunk lost) while its peers completed it and wait for that rank in the
    next gradient all_reduce: that rank's wait and its peers' begin within milliseconds of each other, and
    either may cross the threshold first. The late-rank event is held (looked at again when that operation
    reaches the threshold) until that operation is a transport hang or a mismatch of its own, which then names
    the root, or completes. The hold lasts at most that interval.
    """
    margin = ctx.config.interval_s
    inside = [graph.inside[r].waited_s for r in late if r in graph.inside]
    if not inside or max(inside) < waited - margin:
        return False
    ctx.due_in(max(ctx.config.sample_interval_s, ctx.config.warn_s - max(inside)))
    return True


@dataclass(frozen=True)
class _Busy:
    """Every late rank is doing work of its own (or is in a solo phase): for how much longer that is
    expected (``over`` < 0) or how far past its bound it is (``over`` >= 0), and what it is doing."""

    over: float
    bound: float
    text: str
    solo: bool


def _busy(ctx: Context, late: tuple[int, ...], waited: float) -> _Busy | None:
    """Whether the late ranks are busy rather than stuck: each in a solo phase (marked, or recognised on
    its stack) or working (:mod:`syncdoctor.watch.activity`). ``None`` when any is not (stuck, spinning,
    not measured yet): that is a late rank as ever."""
    overs: list[float] = []
    bounds: list[float] = []
    texts: list[str] = []
    solo = False
    for rank in late:
        rec = ctx.record(rank)
        if rec is None:
            return None
        if rec.solo is not None:
            bound = rec.solo.up_to_s if rec.solo.up_to_s is not None else ctx.config.busy_after_s
            elapsed = rec.solo.elapsed_s + ctx.elapsed(rank)
            overs.append(elapsed - bound)
            bounds.append(bound)
            texts.append(f"in its solo phase '{rec.solo.name}' for {elapsed:.0f} s")
            solo = True
            continue
        activity = rec.activity
        if activity is None or (activity.kind != "working" and not activity.phase):
            return None
        overs.append(waited - ctx.config.busy_after_s)
        bounds.append(ctx.config.busy_after_s)
        texts.append(f"working alone ({describe_activity(activity)})")
    index = max(range(len(overs)), key=lambda i: overs[i])
    text = texts[0] if len(texts) == 1 else "; ".join(f"rank {r} {t}" for r, t in zip(late, texts, strict=True))
    return _Busy(overs[index], bounds[index], text, solo)


def describe_activity(activity: Activity) -> str:
    """``working: torch.save, 86% CPU, 540 MB/s read or written`` for titles and details."""
    numbers = f"{activity.cpu:.0%} CPU"
    if activity.io_bps >= 1024:
        numbers += f", {_rate(activity.io_bps)} read or written"
    if activity.kind == "working":
        what = activity.phase or ("its stack changes" if activity.stacks > 1 else "moving data")
        return f"working: {what}, {numbers}"
    if activity.kind == "spinning":
        return f"spinning: {numbers} in the same functions, no I/O for {activity.window_s:.0f} s"
    return f"{activity.kind}: no CPU, the same stack, no I/O for {activity.window_s:.0f} s" + (
        f" (in {activity.phase})" if activity.phase else "")


def _rate(bps: float) -> str:
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= size:
            return f"{bps / size:.0f} {unit}" if bps / size >= 10 else f"{bps / size:.1f} {unit}"
    return f"{bps:.0f} B/s"


def _solo_work(ctx: Context, graph: Graph, root: Root, late: tuple[int, ...], wait: Wait,
               signature: Signature | None, per_rank: dict[str, Any], busy: _Busy, chain: str, wheres: list[str],
               ready: bool) -> Condition:
    """W110 (info): the others wait for a rank that works alone, as expected for up to its bound."""
    op, waited, affected = wait.op, root.waited_s, root.affected
    where = f" (in {', '.join(wheres)})" if wheres else ""
    subject = who_list(ctx, late)
    title = (f"{subject} {'is' if len(late) == 1 else 'are'} {busy.text}{where}; {ranks_text(affected)} "
             f"{have(affected)} waited {waited:.1f} s for {'it' if len(late) == 1 else 'them'} in "
             f"{signature.short() if signature else op.kind} #{op.seq} of group {op.group}: expected for up to "
             f"{busy.bound:.0f} s")
    incident = key("W110", op.group, op.seq, format_ranks(late))
    for open_key, open_incident in ctx.state.incidents.items():
        if open_incident.code == "W110" and open_incident.ranks == late and not _finished(ctx, open_incident):
            incident = open_key
            break
    detail: dict[str, Any] = {"late": per_rank, "busy": {"text": busy.text, "bound_s": busy.bound,
                                                         "remaining_s": round(-busy.over, 1), "solo": busy.solo}}
    if chain:
        detail["chain"] = chain
    event = Event(
        "W110", "info", title, ranks=late, hosts=ctx.hosts(late), pids=ctx.pids(late), group=op.group,
        group_ranks=graph.members.get(op.group, ()), seq=op.seq, signature=signature, waiting_ranks=affected,
        waited_s=waited, detail=detail, key=incident, at=ctx.snapshot.wall,
    )
    return Condition(event, ready=ready and waited >= ctx.config.warn_s and seen_before(ctx, graph, late))


def _left(ctx: Context, graph: Graph, root: Root, left: tuple[int, ...]) -> Condition:
    wait = _primary(ctx, graph, "W108", left, root)
    signature = graph.signatures.get(wait)
    op = wait.op
    recs = [ctx.record(r) for r in left]
    how = "; ".join(
        f"rank {rec.rank} {'failed: ' + (rec.error or 'an exception') if rec.state == 'failed' else 'exited'}"
        for rec in recs
        if rec is not None
    )
    what = f"{signature.short() if signature else 'collective'} #{op.seq} of group {op.group}" if (
        op.kind == "collective") else f"the {'receive' if op.kind == 'send' else 'send'} rank {wait.waiters[0]} waits for"
    affected = root.affected
    title = (
        f"{ranks_text(left)} left the job without entering {what}; {ranks_text(affected)} {have(affected)} "
        f"waited {root.waited_s:.1f} s for {'it' if len(left) == 1 else 'them'} ({how})"
    )
    detail: dict[str, Any] = {"errors": {str(r.rank): r.error for r in recs if r is not None and r.error}}
    if len(root.hops) > 1:
        detail["chain"] = describe_chain(root, ranks_text)
    return Condition(
        Event(
            "W108", "confirmed", title, ranks=left, hosts=ctx.hosts(left), pids=ctx.pids(left), group=op.group,
            group_ranks=graph.members.get(op.group, ()), seq=op.seq, signature=signature, waiting_ranks=affected,
            waited_s=root.waited_s, key=key("W108", op.group, format_ranks(left)), at=ctx.snapshot.wall, detail=detail,
        )
    )


def _cycle(ctx: Context, graph: Graph, root: Root) -> list[Condition]:
    """Ranks that wait for each other. The ones named are those that wait for the most others of the cycle:
    a rank that entered a collective of a group the others have not reached took the other path (it skipped
    a collective, or called the groups in another order); when all wait for as many, all are named."""
    # a cycle is seen (and its members' records asked for twice) from its first cycle on, and looked at again
    # when its wait crosses a threshold: judged only at the first look past the warning, it would be named up
    # to two intervals late (the second record after the threshold)
    seen = seen_before(ctx, graph, root.ranks)
    ctx.due(root.waited_s)
    members = set(root.ranks)
    waits_for: dict[int, set[int]] = {r: set() for r in members}
    own_wait: dict[int, Wait] = {}
    for hop in root.hops:
        if hop.depth != 1:
            continue
        for rank in set(hop.wait.waiters) & members:
            waits_for[rank] |= set(hop.wait.blockers) & members
            own_wait.setdefault(rank, hop.wait)
    counts = {r: len(b) for r, b in waits_for.items()}
    top, low = max(counts.values()), min(counts.values())
    culprits = tuple(sorted(r for r in members if counts[r] == top)) if top > low else tuple(sorted(members))
    own = own_wait.get(culprits[0]) if top > low else None
    if own is not None and any(own_wait.get(c) is not own for c in culprits):
        own = None
    candidates = [w for w in {id(w): w for w in own_wait.values()}.values()
                  if w is not own and set(w.blockers) & set(culprits)] or list(own_wait.values())
    named = max(candidates, key=lambda w: (len(w.waiters), -_group_order(w.op.group)[1], w.op.group))
    waited = root.waited_s
    others = tuple(sorted((members - set(culprits)) | set(root.affected)))
    chain = describe_chain(root, ranks_text)
    if own is not None and set(own.blockers) >= set(named.waiters):
        them = "it" if len(culprits) == 1 else "them"
        if named.op.kind == "collective":
            missed = f"never entered {named.op.text()}, where {ranks_text(named.waiters)} wait for {them}"
        else:
            missed = _subject(named, culprits, None).replace("has not posted", "never posted")
        title = (
            f"{who_list(ctx, culprits)} {missed}, and {'waits' if len(culprits) == 1 else 'wait'} in "
            f"{own.op.text()}, which {'it has' if len(named.waiters) == 1 else 'they have'} not entered: the ranks "
            f"took different paths (a skipped collective or message); deadlock for {waited:.1f} s"
        )
    else:
        title = (
            f"deadlock for {waited:.1f} s: these ranks wait for each other (groups called in different orders on "
            f"different ranks, a skipped collective, or sends and receives posted in opposite orders): {chain}"
        )
    incident = key("W103", "deadlock", named.op.group, named.op.seq)
    if ctx.config.stacks and waited >= ctx.config.suspect_s:
        ask_stacks(ctx, culprits)
    detail: dict[str, Any] = {"chain": chain, "cycle": format_ranks(members), "hops": _hops(root)}
    where = {str(r): s.summary() for r in culprits if (s := ctx.snapshot.stacks.get(r)) is not None and s.where}
    if where:
        detail["where"] = ", ".join(where.values())
        detail["late"] = {r: {"where": w} for r, w in where.items()}
    if own is not None:
        detail.update(other_group=own.op.group, other_seq=own.op.seq,
                      other_signature=(graph.signatures.get(own) or Signature(own.op.label or "collective")).short())
    return [
        Condition(
            Event(
                "W103", "confirmed", title, ranks=culprits, hosts=ctx.hosts(culprits), pids=ctx.pids(culprits),
                group=named.op.group, group_ranks=graph.members.get(named.op.group, ()), seq=named.op.seq,
                signature=graph.signatures.get(named), other_signature=graph.signatures.get(own) if own else None,
                waiting_ranks=others, waited_s=waited, key=incident,
                at=ctx.snapshot.wall, detail=detail,
            ),
            ready=waited >= ctx.config.warn_s and seen,
        )
    ]


def _finished(ctx: Context, incident: Incident) -> bool:
    """The wait an incident was raised about has completed on some rank (the root arrived)."""
    if incident.group is None or incident.seq is None:
        return False
    if incident.channel is not None:
        waiter, peer, kind = incident.channel
        rec = ctx.record(waiter)
        return rec is not None and any(c.group == incident.group and c.peer == peer and c.kind == kind
                                       and c.completed >= incident.seq for c in rec.p2p)
    return ctx.any_completed(incident.group, incident.seq)


def _attach_chain(cond: Condition, roots: list[Root]) -> None:
    """A hang or mismatch that others wait behind: say who, and through which waits."""
    event = cond.event
    affected = sorted({r for root in roots for r in root.affected} - set(event.waiting_ranks))
    if not affected:
        return
    chain = "; ".join(describe_chain(root, ranks_text) for root in roots)
    cond.event = replace(
        event, title=f"{event.title}; {ranks_text(affected)} wait behind it: {chain}",
        detail={**event.detail, "chain": chain, "held_up": format_ranks(affected)},
    )


def _hops(root: Root) -> list[dict[str, Any]]:
    """The chain as data: who waits, in what, for whom, how far from the root."""
    return [
        {"depth": h.depth, "waiters": format_ranks(h.wait.waiters), "group": h.wait.op.group, "seq": h.wait.op.seq,
         "op": h.wait.op.label or h.wait.op.kind, "kind": h.wait.op.kind, "for": format_ranks(h.toward),
         "waited_s": round(h.wait.waited_s, 1)}
        for h in root.hops[:32]
    ]
