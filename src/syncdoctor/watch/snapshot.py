"""The monitor's view of one cycle (:class:`Snapshot`) and the detector's memory between cycles.

Pure: no I/O, no clock. The monitor builds a snapshot from the store; tests build them by hand with any
``now`` they like, so the detector is tested without sleeping.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from syncdoctor.watch.records import RankRecord, StackReport

if TYPE_CHECKING:
    from syncdoctor.watch.columns import Columns

__all__ = ["DetectorState", "Incident", "RankSeen", "Requests", "Snapshot", "note_heartbeats"]


@dataclass(frozen=True)
class Snapshot:
    """Everything the monitor read in one cycle.

    Attributes:
        now: the monitor's monotonic clock (seconds). Ages are measured on this clock only, from the
            moment the monitor first saw each record version, so host clocks need not agree.
        wall: the monitor's wall clock, stamped on events.
        world_size: number of ranks in the job.
        records: the latest record of each rank that has published one.
        groups: process group name -> member global ranks, as published by the ranks.
        stacks: the latest stack each rank published on request.
        columns: every rank's record header as arrays (:mod:`syncdoctor.watch.columns`), when the monitor
            has them: the rules then read the headers in bulk and decode only the records they name, and
            ``records`` decodes a record when read (every rank has one).
    """

    now: float
    wall: float
    world_size: int
    records: Mapping[int, RankRecord]
    groups: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    stacks: Mapping[int, StackReport] = field(default_factory=dict)
    columns: Columns | None = None


@dataclass(slots=True)
class RankSeen:
    """A rank's heartbeat as the monitor last saw it (written by :func:`note_heartbeats` only)."""

    heartbeat: int
    changed_at: float  # monitor time the heartbeat last changed


@dataclass
class Incident:
    key: str
    code: str
    status: str  # last status emitted: warning or confirmed
    since: float
    last_title: str
    group: str | None
    seq: int | None
    ranks: tuple[int, ...]
    waited_s: float | None = None
    sticky: bool = False
    channel: tuple[int, int, str] | None = None  # a late rank awaited in a message: (waiter, peer, kind)


@dataclass
class Requests:
    """What the monitor should ask ranks for (the detector cannot do I/O).

    ``stacks``: rank -> request number; ``inspect``: pid -> host key of the rank that should read that
    pid's process state (a sibling on the same host).
    """

    stacks: dict[int, int] = field(default_factory=dict)
    inspect: dict[int, str] = field(default_factory=dict)


@dataclass
class DetectorState:
    """The detector's memory. Owned by the caller; :func:`~syncdoctor.watch.detector.detect` updates it.

    Bounded: per-rank entries (one per rank), open incidents, and the straggler window (a deque capped by
    ``max_window``) plus the pending waits (capped by ``max_pending``).
    """

    started_at: float | None = None
    seen: dict[int, RankSeen] = field(default_factory=dict)  # written by note_heartbeats() only
    incidents: dict[str, Incident] = field(default_factory=dict)
    stack_gen: int = 0
    stack_asked: dict[int, tuple[int, str]] = field(default_factory=dict)  # rank -> (gen, incident key)
    inspect_asked: dict[int, float] = field(default_factory=dict)  # pid -> when
    # chronic straggler: waits seen per (group, seq) until every member completed it, then one window row
    pending_waits: dict[tuple[str, int], tuple[float, dict[int, float]]] = field(default_factory=dict)
    waits_done: dict[str, int] = field(default_factory=dict)  # group -> highest seq moved to the window
    window: deque[tuple[float, str, int, int | None, float, float]] = field(default_factory=deque)
    closed: set[str] = field(default_factory=set)  # sticky incidents already reported
    # (group, seq) -> monitor time a member was first seen having completed it while others had not
    partial_seen: dict[tuple[str, int], float] = field(default_factory=dict)
    waits_dropped: int = 0  # waits left out or expired (see straggler.ingest): the monitor then runs in full
    # rank -> its heartbeat when it was first seen as the root of a wait (late, or in a cycle): an event
    # about a root waits for a newer record of it (a rank passing between two operations looks like one)
    roots: dict[int, int] = field(default_factory=dict)
    # monitor time at which a wait the detector saw crosses its threshold (warn or confirm), if any: the
    # monitor looks again then instead of a whole interval later
    due_at: float | None = None
    # rank -> monitor time it was last seen working alone while others waited for it (W110): a rank that
    # stops working is late, but confirmed only once it has been stuck as long as any late rank must be
    busy_at: dict[int, float] = field(default_factory=dict)
    max_window: int = 20000
    max_pending: int = 20000


def note_heartbeats(state: DetectorState, now: float, beats: Iterable[tuple[int, int]]) -> None:
    """Note each ``(rank, heartbeat)`` read at ``now``: a rank seen for the first time, or whose heartbeat
    moved, is stamped ``now`` (``state.seen[rank].changed_at``); the others keep their stamp.

    The one writer of ``state.seen``: the detector calls it with every record of a snapshot, the
    monitor's fast path with the ranks whose header shows a new heartbeat.
    """
    seen = state.seen
    for rank, heartbeat in beats:
        entry = seen.get(rank)
        if entry is None:
            seen[rank] = RankSeen(heartbeat, now)
        elif entry.heartbeat != heartbeat:
            entry.heartbeat = heartbeat
            entry.changed_at = now
