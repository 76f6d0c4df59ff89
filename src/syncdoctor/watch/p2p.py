"""One rank's point-to-point traffic: sends and receives per peer, what is pending, and since when.

Pure: no I/O, no torch, no clock (times are passed in). Thread-safe: the training thread enters and
completes operations (a lock held for about a microsecond), the sampler thread polls the works of
asynchronous ones and reads the progress for the record. :mod:`syncdoctor.watch.p2p_hooks` feeds it from
patched ``torch.distributed`` calls.

A *channel* is (group, peer, kind): the sends of this rank to ``peer`` in ``group``, or its receives
from ``peer``. Messages between two ranks are matched in order, as NCCL and gloo match them: this rank's
k-th receive from B pairs with B's k-th send to it. So the monitor can tell, from both ranks' counters
alone, whether a rank waiting in receive #k waits for a peer that has not posted send #k yet (a wait-for
edge) or for a message both sides posted (in transit). Peer ``-1`` is a receive from any source.

It also keeps the *operation ids* of point-to-point calls per group where the backend counts them: gloo
numbers every operation, collectives and point-to-point alike, and its Flight Recorder status reports
the id of the last collective, while recording no point-to-point entry (seen with torch 2.13, gloo). A
rank that sent twice then entered a barrier reports 3 where its peers report 1 for the same barrier.
:meth:`P2PLedger.collectives_up_to` turns such an id back into the number of collectives.

Memory is bounded: at most ``max_channels`` channels (the least recently used idle one is dropped),
``max_pending`` asynchronous works and ``max_ids`` operation ids per group.
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.watch.records import P2PProgress

__all__ = ["KINDS", "P2PLedger"]

KINDS = ("send", "recv")


@dataclass
class _Channel:
    entered: int = 0
    completed: int = 0
    done: set[int] = field(default_factory=set)  # completed out of order, above ``completed``
    starts: deque[float] = field(default_factory=deque)  # entry times of ops above ``completed``
    used: int = 0  # ledger clock at the last use (least-recently-used eviction)


class _OpIds:
    """Sorted operation ids of one group's point-to-point calls, the oldest folded into a count."""

    __slots__ = ("folded", "ids")

    def __init__(self) -> None:
        self.folded = 0
        self.ids: list[int] = []


class P2PLedger:
    """Counters, pending operations and operation ids of one rank's sends and receives."""

    def __init__(self, *, max_channels: int = 256, max_pending: int = 256, max_ids: int = 4096) -> None:
        self._lock = threading.Lock()
        self._channels: dict[tuple[str, int, str], _Channel] = {}
        self._pending: deque[tuple[tuple[str, int, str], int, Any]] = deque()
        self._ids: dict[str, _OpIds] = {}
        self._clock = 0
        self.max_channels = max_channels
        self.max_pending = max_pending
        self.max_ids = max_ids
        self.changes = 0  # grows with every enter and completion: the sampler's "still working" signal
        self.dropped = 0  # channels or works left out to stay bounded

    # --- the training thread ---------------------------------------------------------------------------
    def enter(self, now: float, group: str, peer: int, kind: str) -> int:
        """This rank posts a send or receive; returns its number on the channel (1, 2, ...)."""
        key = (group, peer, kind)
        with self._lock:
            self._clock += 1
            self.changes += 1
            channel = self._channels.get(key)
            if channel is None:
                if len(self._channels) >= self.max_channels:
                    self._evict()
                channel = self._channels[key] = _Channel()
            channel.entered += 1
            channel.used = self._clock
            if len(channel.starts) < 64:
                channel.starts.append(now)
            return channel.entered

    def complete(self, group: str, peer: int, kind: str, number: int) -> None:
        """Operation ``number`` of the channel finished (or failed): it is pending no more."""
        with self._lock:
            self._complete((group, peer, kind), number)

    def track(self, group: str, peer: int, kind: str, number: int, work: Any) -> None:
        """An asynchronous operation: :meth:`poll` completes it once ``work.is_completed()`` says so."""
        with self._lock:
            if len(self._pending) >= self.max_pending:
                key, old, _work = self._pending.popleft()  # cannot watch it any more: count it done
                self._complete(key, old)
                self.dropped += 1
            self._pending.append(((group, peer, kind), number, work))

    def note_op_ids(self, group: str, ids: Iterable[int]) -> None:
        """The backend numbered these point-to-point calls of ``group`` among its operations."""
        with self._lock:
            record = self._ids.get(group)
            if record is None:
                record = self._ids[group] = _OpIds()
            for op_id in ids:
                if not record.ids or op_id > record.ids[-1]:
                    record.ids.append(op_id)
                else:
                    bisect.insort(record.ids, op_id)
            if len(record.ids) > self.max_ids:
                cut = len(record.ids) - self.max_ids // 2
                record.folded += cut
                del record.ids[:cut]

    # --- the sampler thread ------------------------------------------------------------------------------
    def poll(self, is_done: Callable[[Any], bool] | None = None) -> None:
        """Complete the asynchronous operations whose work finished (``work.is_completed()`` by default)."""
        check = is_done or _is_completed
        with self._lock:
            if not self._pending:
                return
            pending = list(self._pending)
        finished = [(key, number) for key, number, work in pending if check(work)]
        if not finished:
            return
        with self._lock:
            gone = set(finished)
            self._pending = deque(item for item in self._pending if (item[0], item[1]) not in gone)
            for key, number in finished:
                self._complete(key, number)

    def progress(self, now: float) -> tuple[P2PProgress, ...]:
        """Every channel's counters and, where something is pending, how long its oldest op has waited."""
        with self._lock:
            out = []
            for (group, peer, kind), ch in self._channels.items():
                stalled = None
                if ch.entered > ch.completed and ch.starts:
                    stalled = max(0.0, now - ch.starts[0])
                out.append(P2PProgress(group, peer, kind, ch.entered, ch.completed, stalled))
            return tuple(out)

    def collectives_up_to(self, group: str, op_id: int) -> int:
        """How many collectives ``group`` had issued when it issued operation ``op_id`` (a collective's id).

        ``op_id`` minus the point-to-point calls numbered at or below it. Unchanged where the backend does not
        number point-to-point calls among its operations (no ids were noted for the group).
        """
        with self._lock:
            record = self._ids.get(group)
            if record is None or op_id <= 0:
                return op_id
            return max(0, op_id - record.folded - bisect.bisect_right(record.ids, op_id))

    def ids_version(self) -> int:
        """Changes whenever an operation id is noted (readings translated with the old ids are stale)."""
        with self._lock:
            return sum(len(r.ids) + r.folded for r in self._ids.values())

    def p2p_ops(self, group: str) -> int:
        """Point-to-point calls of ``group`` numbered among its operations so far."""
        with self._lock:
            record = self._ids.get(group)
            return 0 if record is None else record.folded + len(record.ids)

    def forget_ids_below(self, group: str, op_id: int) -> None:
        """Fold the ids at or below ``op_id`` (no reading will ask about an older collective any more)."""
        with self._lock:
            record = self._ids.get(group)
            if record is None:
                return
            cut = bisect.bisect_right(record.ids, op_id)
            if cut:
                record.folded += cut
                del record.ids[:cut]

    # --- internals (lock held) ------------------------------------------------------------------------------
    def _complete(self, key: tuple[str, int, str], number: int) -> None:
        channel = self._channels.get(key)
        if channel is None or number <= channel.completed:
            return
        self.changes += 1
        channel.done.add(number)
        while channel.completed + 1 in channel.done:  # in order, like the entries of the Flight Recorder
            channel.completed += 1
            channel.done.discard(channel.completed)
            if channel.starts:
                channel.starts.popleft()

    def _evict(self) -> None:
        idle = [(ch.used, key) for key, ch in self._channels.items() if ch.entered == ch.completed]
        if not idle:
            idle = [(ch.used, key) for key, ch in self._channels.items()]
        _used, key = min(idle)
        del self._channels[key]
        self.dropped += 1


def _is_completed(work: Any) -> bool:
    try:
        return bool(work.is_completed())
    except Exception:  # a failed or foreign work: nothing to wait for any more
        return True
