"""The monitor: read every rank's record from the store, run the detector, act on the events.

Does I/O (the job's store, sinks). One :meth:`Monitor.cycle` reads all records with one ``multi_get``,
fetches group tables and stacks only when new, calls the pure :func:`~syncdoctor.watch.detector.detect`,
writes the detector's requests into the control message the ranks poll, and hands events to the sinks.
It runs as a thread on one rank (:class:`MonitorThread`) or in ``syncdoctor watch`` outside the job.

A monitor holds a lease (``monitor`` key: who and a beat counter) so that ``syncdoctor watch`` can tell
whether a monitor already acts, and a rank can take over when the monitor's rank dies (only possible
when the store outlives it, as with torchrun's agent store).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.detector import detect
from syncdoctor.watch.events import Event
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.records import (
    RankRecord,
    StackReport,
    decode_record,
    decode_stack,
    format_ranks,
    parse_ranks,
)
from syncdoctor.watch.sinks import Sink
from syncdoctor.watch.snapshot import DetectorState, Requests, Snapshot

__all__ = ["HANG_CODES", "Monitor", "MonitorThread"]

logger = logging.getLogger(__name__)

# confirmed events of these codes end the job in fail-fast mode (W107, a straggler, never does)
HANG_CODES = ("W101", "W102", "W103", "W104", "W105", "W106", "W108")


class Monitor:
    """One monitor over one job attempt. Not thread-safe: one caller drives :meth:`cycle`."""

    def __init__(
        self,
        store: ScopedStore,
        keys: JobKeys,
        config: WatchConfig,
        world_size: int,
        sinks: Sequence[Sink] = (),
        *,
        who: str = "monitor",
        send_requests: bool = True,
        on_confirmed: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.keys = keys
        self.config = config
        self.world_size = world_size
        self.sinks = list(sinks)
        self.who = who
        self.send_requests = send_requests
        self.on_confirmed = on_confirmed
        self.clock = clock
        self.state = DetectorState()
        self.records: dict[int, RankRecord] = {}
        self.groups: dict[str, tuple[int, ...]] = {}
        self.stacks: dict[int, StackReport] = {}
        self.events: deque[Event] = deque(maxlen=200)
        self.last_cycle_s = 0.0
        self.cycles = 0
        self._stack_gens: dict[int, int] = {}
        self._group_misses: dict[str, int] = {}
        self._ensured = False
        self._rank_keys = [keys.rank(r) for r in range(world_size)]
        self._ctl: dict[str, Any] = {"stacks": {}, "inspect": {}, "dump": 0, "abort": None}
        self._beat = 0
        self._dumped = False
        self._said_hooks = False

    # --- one cycle -----------------------------------------------------------------------------------
    def cycle(self) -> list[Event]:
        started = time.perf_counter()
        if not self._ensured:
            for key in self._rank_keys:  # create missing record keys empty so multi_get never blocks
                self.store.ensure(key)
            self.store.ensure(self.keys.monitor)
            self._ensured = True
        raws = self.store.multi_get(self._rank_keys)
        records: dict[int, RankRecord] = {}
        for rank, raw in enumerate(raws):
            record = decode_record(raw)
            if record is not None and record.rank == rank:
                records[rank] = record
        self.records = records
        self._read_groups(records)
        self._read_stacks(records)
        snapshot = Snapshot(self.clock(), time.time(), self.world_size, records, dict(self.groups), dict(self.stacks))
        detection = detect(snapshot, self.config, self.state)
        events = list(detection.events)
        hooked = tuple(sorted(r for r, rec in records.items() if rec.source == "hooks"))
        if hooked and not self._said_hooks:  # what the watcher cannot see is said once, here
            self._said_hooks = True
            events.insert(0, Event(
                "W109", "info",
                f"rank{'s' if len(hooked) > 1 else ''} {format_ranks(hooked)} read their progress from patched "
                "collectives, not the Flight Recorder (unavailable in this torch build, or its buffer is off): "
                "collectives called through references taken before start(), and DDP models with a built-in "
                "C++ comm hook, are invisible there",
                ranks=hooked, key="W109:hooks", at=snapshot.wall, detail={"recorder": "hooks"},
            ))
        if self.send_requests:
            self._send(detection.requests, events)
            self._beat += 1
            self.store.set(self.keys.monitor, json.dumps({"who": self.who, "beat": self._beat}))
        for event in events:
            self.events.append(event)
            for sink in self.sinks:
                sink.emit(event)
        for event in events:
            if event.status == "confirmed" and event.code in HANG_CODES and self.on_confirmed is not None:
                self.on_confirmed(event)
        self.cycles += 1
        self.last_cycle_s = time.perf_counter() - started
        return events

    def _read_groups(self, records: dict[int, RankRecord]) -> None:
        names = {name for rec in records.values() for name in rec.groups}
        for name in sorted(names - set(self.groups)):
            misses = self._group_misses.get(name, 0)
            if misses and misses % 5:  # not published yet: look again every 5 cycles
                self._group_misses[name] = misses + 1
                continue
            raw = self.store.get_optional(self.keys.group(name))
            try:
                self.groups[name] = parse_ranks(raw) if raw else ()
            except ValueError:
                raw = None
            if not raw:
                self.groups.pop(name, None)
                self._group_misses[name] = misses + 1

    def _read_stacks(self, records: dict[int, RankRecord]) -> None:
        wanted = [r for r, rec in records.items() if rec.stack_gen > self._stack_gens.get(r, 0)]
        if not wanted:
            return
        raws = self.store.multi_get([self.keys.stack(r) for r in wanted])
        for rank, raw in zip(wanted, raws, strict=True):
            report = decode_stack(raw)
            self._stack_gens[rank] = records[rank].stack_gen
            if report is not None:
                self.stacks[rank] = report

    def _send(self, requests: Requests, events: Sequence[Event]) -> None:
        changed = False
        for rank, gen in requests.stacks.items():
            self._ctl["stacks"][str(rank)] = gen
            changed = True
        for pid, host_key in requests.inspect.items():
            self._ctl["inspect"][str(pid)] = host_key
            changed = True
        if len(self._ctl["inspect"]) > 64:
            self._ctl["inspect"] = dict(list(self._ctl["inspect"].items())[-32:])
        if self.config.flight_recorder_dump and not self._dumped:
            if any(e.status == "confirmed" and e.code in HANG_CODES for e in events):
                self._dumped = True
                self._ctl["dump"] = int(self._ctl["dump"]) + 1
                changed = True
        if changed:
            self.publish_control()

    def publish_control(self) -> None:
        self.store.set(self.keys.ctl_msg, json.dumps(self._ctl, separators=(",", ":")))
        self.store.add(self.keys.ctl_gen, 1)

    def request_abort(self, code: int, reason: str, expected: int) -> None:
        """Ask every rank to end with ``code``; ``expected`` ranks (the reachable ones) will count themselves
        out on the ``aborted`` counter and leave together, so no rank's exit breaks a peer's connection
        before that peer has read the order."""
        self._ctl["abort"] = {"code": code, "reason": reason[:2000], "by": self.who, "expected": expected}
        self.publish_control()


class MonitorThread:
    """Runs :meth:`Monitor.cycle` every interval on a daemon thread; contains its own errors."""

    def __init__(self, monitor: Monitor, interval_s: float) -> None:
        self.monitor = monitor
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="syncdoctor-watch-monitor", daemon=True)
        self._failing = False

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        delay = self.interval_s
        while not self._stop.wait(delay):
            try:
                self.monitor.cycle()
            except Exception as exc:  # the store may be unreachable or gone
                if not self._failing:
                    self._failing = True
                    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    event = Event("W109", "info", f"the monitor cannot read the job's store ({text}); retrying "
                                  "quietly: nothing can be detected meanwhile", key="W109:store", at=time.time())
                    for sink in self.monitor.sinks:
                        sink.emit(event)
                delay = min(max(delay * 2, self.interval_s), 30.0)
                continue
            if self._failing:
                self._failing = False
                logger.warning("syncdoctor.watch: monitor reaches the store again")
            # never take more than a fifth of a core from the training process: with very many ranks
            # the cycles space out instead (a 100 ms cycle keeps 1 s; a 400 ms one runs every 2 s)
            delay = max(self.interval_s - self.monitor.last_cycle_s, 4 * self.monitor.last_cycle_s, 0.05)
