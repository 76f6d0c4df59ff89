"""Judge a stopped multi-rank run with :mod:`syncdoctor.watch`'s detector. Pure: no I/O, no clock.

The runner's per-rank progress records and faulthandler stacks are turned into one watch
:class:`~syncdoctor.watch.snapshot.Snapshot` (records as the ranks would have published them, stacks as
their watchers would have captured them) and :func:`syncdoctor.watch.detect` runs once over it, so a
test that hangs is explained by the same rules (late rank W101, rank left early W108, mismatch W102,
transport hang W104...) as a production job under ``syncdoctor.watch``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from syncdoctor.testing._hang import Frame, ProgressRecord

__all__ = ["WORLD_GROUP", "watch_events"]

if TYPE_CHECKING:
    from syncdoctor.watch.events import Event

logger = logging.getLogger(__name__)

WORLD_GROUP = "0"  # the watch's name of the default group


def _group_name(key: str, world_size: int) -> str:
    return WORLD_GROUP if key == ",".join(str(r) for r in range(world_size)) else f"ranks {key}"


def _signature(call: Mapping[str, Any] | None) -> Any:
    from syncdoctor.watch.records import Signature

    if not call:
        return None
    sizes = tuple(tuple(int(d) for d in s) for s in (call.get("sizes") or ()))
    dtype = str(call.get("dtype") or "")
    return Signature(str(call.get("op", "?")), sizes, tuple(dtype for _ in sizes) if dtype else ())


def watch_events(
    records: Mapping[int, ProgressRecord | None],
    world_size: int,
    states: Mapping[int, str],
    stacks: Mapping[int, Sequence[Frame]],
    where: Mapping[int, Frame | None],
    wall: float,
) -> tuple[str, ...]:
    """One line per event of the watch detector (``W101 late-rank: ...``); empty if it has nothing.

    ``states``: each rank's watch state (``running`` for ranks still alive, ``exited`` for ranks that
    returned, ``failed`` for ranks that raised or crashed); ``stacks``: main-thread frames, innermost
    first; ``wall``: the time the run was stopped (to age the records).
    """
    try:
        from syncdoctor.watch import DetectorState, Snapshot, WatchConfig, detect
        from syncdoctor.watch.records import Frame as WatchFrame
        from syncdoctor.watch.records import GroupProgress, RankRecord, StackReport
    except ImportError:  # pragma: no cover - the watch package ships with syncdoctor
        return ()
    ranks: dict[int, Any] = {}
    groups: dict[str, tuple[int, ...]] = {}
    for rank in range(world_size):
        record = records.get(rank)
        if record is None:
            continue
        progress = {}
        position = record.current or record.failed_in
        for key, entered in record.entered.items():
            name = _group_name(key, world_size)
            groups[name] = tuple(int(r) for r in key.split(",")) if key else tuple(range(world_size))
            completed = record.completed.get(key, 0)
            here = position if position and position.get("group") == key else None
            stalled = max(0.0, wall - record.time) if here is not None and entered > completed else None
            progress[name] = GroupProgress(
                name, entered, completed, stalled, _signature(here), int(here["seq"]) if here else 0
            )
        ranks[rank] = RankRecord(
            rank=rank, world_size=world_size, host=record.host, pid=record.pid, heartbeat=1,
            state=states.get(rank, "running"), source="hooks", quiet_s=max(0.0, wall - record.time),
            groups=progress, published=record.time,
        )
    stack_reports = {}
    for rank, frames in stacks.items():
        outer_first = tuple(WatchFrame(f.file, f.line, f.function) for f in reversed(frames))
        user = where.get(rank)
        stack_reports[rank] = StackReport(
            rank=rank, gen=1, frames=outer_first,
            where=WatchFrame(user.file, user.line, user.function) if user else None, captured=wall,
        )
    config = WatchConfig(warn_after_s=0.5, suspect_after_s=0.25, dead_after_s=3600.0, confirm_after_s=3600.0)
    snapshot = Snapshot(now=0.0, wall=wall, world_size=world_size, records=ranks, groups=groups,
                        stacks=stack_reports)
    # The snapshot is the ranks' final state: shown twice, as two publications of the same records, it
    # passes the detector's rule that a root is named once a second record of it confirms it.
    again = Snapshot(now=0.0, wall=wall, world_size=world_size,
                     records={r: rec._replace(heartbeat=2) for r, rec in ranks.items()}, groups=groups,
                     stacks=stack_reports)
    state = DetectorState()
    events: list[Event] = []
    try:
        for shown in (snapshot, again):
            events.extend(detect(shown, config, state).events)
    except Exception:  # the runner's report must not fail because of the second opinion
        logger.debug("the watch detector failed on a multi-rank snapshot", exc_info=True)
        return ()
    # W109 (watch-degraded) speaks of a live watcher's own recorder, which this post-mortem does not use.
    return tuple(f"{event.code} {event.kind}: {event.title}" for event in events if event.kind != "watch-degraded")
