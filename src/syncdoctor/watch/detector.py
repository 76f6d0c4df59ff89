"""The detector: a pure function from one snapshot of every rank's record to events.

Pure: no I/O, no clock, no sleeping (``snapshot.now`` is the only time). ``detect(snapshot, config,
state)`` updates the caller-owned :class:`~syncdoctor.watch.snapshot.DetectorState` and returns the new
events plus what the monitor should ask the ranks for (stacks, process states).

The rules are in :mod:`syncdoctor.watch.rules`, one module per family, checked in this order:

- **waits** (:mod:`~syncdoctor.watch.rules.waits`): who waits for whom in every process group and
  point-to-point channel; one incident per root of that wait-for graph: a late rank (W101, with the chain of
  waits that lead to it), a rank that left early (W108), a cycle of waits (W103 deadlock), or a collective
  every member entered that does not complete (W102 mismatch, W104 transport hang). Stacks of root ranks are
  requested at ``suspect_s``; the event waits for them for up to two intervals.
- **dead rank (W105) / host unreachable (W106)** (:mod:`~syncdoctor.watch.rules.dead`): a heartbeat that
  has not moved for ``dead_s``, with what the rank holds up.
- **collective count drift (W103)** (:mod:`~syncdoctor.watch.rules.drift`): at the same training step,
  members of a group entered different numbers of collectives.
- **chronic straggler (W107)**: see :mod:`syncdoctor.watch.straggler`.

An incident is reported once when it crosses its threshold (status ``warning``, or ``confirmed`` for
conditions that never recover by themselves), again when a late rank or transport hang lasts
``confirm_after_s`` (``confirmed``), and once more when it clears (``resolved``), unless it was
superseded by a more specific incident about the same ranks or collective.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from syncdoctor.watch import straggler
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.rules import dead_conditions, drift_conditions, wait_conditions
from syncdoctor.watch.rules.context import DEFAULT_GROUP, STICKY, Condition, Context, ranks_text
from syncdoctor.watch.snapshot import DetectorState, Incident, Requests, Snapshot, note_heartbeats

__all__ = ["Detection", "detect"]


@dataclass(frozen=True)
class Detection:
    events: tuple[Event, ...]
    requests: Requests


def detect(snapshot: Snapshot, config: WatchConfig, state: DetectorState) -> Detection:
    """Analyse one snapshot; update ``state``; return new events and requests for the ranks."""
    config = config.resolved()  # "auto" thresholds: the monitor passes learned ones; alone, the warm-up's
    if state.started_at is None:
        state.started_at = snapshot.now
    columns = snapshot.columns
    note_heartbeats(state, snapshot.now, columns.heartbeats() if columns is not None else (
        (rank, rec.heartbeat) for rank, rec in snapshot.records.items()))
    state.due_at = None
    ctx = Context(snapshot, config, state, _liveness(snapshot, config, state), _groups(snapshot))
    if columns is not None:
        ctx.changed_at = columns.changed_at_of(state.seen)
        ctx.alive = (columns.states() == 0) & ((snapshot.now - ctx.changed_at) < config.dead_s)
    conditions = wait_conditions(ctx)
    conditions.extend(dead_conditions(ctx))
    conditions.extend(drift_conditions(ctx))
    conditions.extend(
        Condition(event)
        for event in straggler.evaluate(snapshot, config, state, alive=[r for r, k in ctx.live.items() if k == "alive"],
                                        groups=ctx.groups)
    )
    # each event names its culprits' machines by their bare host names too (exclusion lists, the node history)
    events = [replace(e, nodes=ctx.nodes(e.ranks)) if e.ranks and not e.nodes else e for e in _reconcile(ctx, conditions)]
    return Detection(tuple(events), ctx.requests)


# --- bookkeeping ---------------------------------------------------------------------------------


def _liveness(snapshot: Snapshot, config: WatchConfig, state: DetectorState) -> dict[int, str]:
    live: dict[int, str] = {}
    dead_s = config.dead_s
    started = state.started_at if state.started_at is not None else snapshot.now
    columns = snapshot.columns
    if columns is not None:  # every rank has a record; its state is in the header
        import numpy as np

        stale = (snapshot.now - columns.changed_at_of(state.seen)) >= dead_s
        codes = columns.states()
        codes = np.where((codes == 0) & stale, 3, codes)
        return dict(enumerate(map(("alive", "exited", "failed", "stale").__getitem__, codes.tolist())))
    for rank in range(snapshot.world_size):
        rec = snapshot.records.get(rank)
        if rec is None and rank in state.seen:
            # read before, absent from this read (a node value republished without it while its node's leader changes,
            # at the end of a job): silent since its last heartbeat, not a rank that never reported
            seen_for = snapshot.now - state.seen[rank].changed_at
            live[rank] = "stale" if seen_for >= dead_s else "unknown"
        elif rec is None:
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
    groups.setdefault(DEFAULT_GROUP, tuple(range(snapshot.world_size)))
    if snapshot.columns is not None:  # the monitor built columns: every group in the records has its table
        return groups
    for rank, rec in snapshot.records.items():  # groups whose table has not been read yet
        for name in rec.groups:
            if name not in groups:
                groups[name] = tuple(sorted(r for r, other in snapshot.records.items() if name in other.groups))
            elif name not in snapshot.groups and rank not in groups[name]:
                groups[name] = tuple(sorted({*groups[name], rank}))
    return groups


# --- incidents -> events ---------------------------------------------------------------------------


def _reconcile(ctx: Context, conditions: list[Condition]) -> list[Event]:
    state, snap = ctx.state, ctx.snapshot
    events: list[Event] = []
    present: dict[str, Condition] = {}
    for cond in conditions:
        present.setdefault(cond.event.key, cond)
    for key, cond in present.items():
        event = cond.event
        incident = state.incidents.get(key)
        if incident is None:
            if not cond.ready or key in state.closed:
                continue
            channel = event.detail.get("p2p") if event.code == "W101" else None
            state.incidents[key] = Incident(
                key, event.code, event.status, snap.now, event.title, event.group, event.seq, event.ranks,
                event.waited_s, sticky=event.code in STICKY,
                channel=(int(channel["waiter"]), int(channel["peer"]), str(channel["kind"])) if channel else None,
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
        cleared = _cleared(ctx, incident)
        if not cleared and _superseded(incident, (c for c in present.values() if not c.ready)):
            continue  # something about the same ranks is still being judged: keep it open meanwhile
        del state.incidents[key]
        if cleared:  # its collective completed: over, even if the same ranks are late again already
            events.append(_resolved(ctx, incident))
    return events


def _superseded(incident: Incident, conditions: Iterable[Condition]) -> bool:
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


def _cleared(ctx: Context, incident: Incident) -> bool:
    """Resolved means progress, not that everyone died or left: the group moved on, or the rank is back."""
    if incident.code in ("W105", "W106", "W107"):
        return all(ctx.live.get(r) == "alive" for r in incident.ranks)
    if incident.group is None or incident.seq is None:
        return False
    if incident.channel is not None:  # a message: the waiter's end of the channel finished it
        waiter, peer, kind = incident.channel
        rec = ctx.snapshot.records.get(waiter)
        return rec is not None and any(
            c.group == incident.group and c.peer == peer and c.kind == kind and c.completed >= incident.seq
            for c in rec.p2p
        )
    return ctx.any_completed(incident.group, incident.seq, ("alive", "exited"))


def _resolved(ctx: Context, incident: Incident) -> Event:
    duration = ctx.snapshot.now - incident.since
    ranks = incident.ranks
    if incident.code == "W101" and incident.channel is not None:
        waiter, peer, kind = incident.channel
        title = (
            f"{ranks_text(ranks)} arrived; {kind} #{incident.seq} of rank {waiter} {'to' if kind == 'send' else 'from'} "
            f"rank {peer} in group {incident.group} finished (the others had waited at least {incident.waited_s or 0.0:.1f} s)"
        )
    elif incident.code == "W101":
        title = (
            f"{ranks_text(ranks)} arrived; collective #{incident.seq} of group {incident.group} completed "
            f"(the others had waited at least {incident.waited_s or 0.0:.1f} s)"
        )
    elif incident.code == "W110":
        title = (
            f"{ranks_text(ranks)} finished {'its' if len(ranks) == 1 else 'their'} solo work; #{incident.seq} of "
            f"group {incident.group} completed (the others had waited at least {incident.waited_s or 0.0:.1f} s)"
        )
    elif incident.code in ("W105", "W106"):
        title = f"{ranks_text(ranks)} reporting again (silent for at least {duration:.1f} s more after the event)"
    elif incident.code == "W107":
        title = f"{ranks_text(ranks)} no longer arrives last most of the time"
    else:
        title = f"collective #{incident.seq} of group {incident.group} completed after the event ({incident.last_title})"
    return Event(
        incident.code, "resolved", title, ranks=ranks, hosts=ctx.hosts(ranks), pids=ctx.pids(ranks),
        group=incident.group, seq=incident.seq, waited_s=incident.waited_s, key=incident.key, at=ctx.snapshot.wall,
        detail={"open_s": round(duration, 1)},
    )
