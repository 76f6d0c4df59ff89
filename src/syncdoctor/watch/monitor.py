"""The monitor: read every rank's record from the store, run the detector, act on the events.

Does I/O (the job's store, sinks). One :meth:`Monitor.cycle` reads all records (the node values node leaders
publish, and the own keys of ranks no node value holds: :class:`~syncdoctor.watch.reader.RecordReader`).
Then, in two tiers:

- **fast path**: the binary headers of all records are screened at once (:mod:`syncdoctor.watch.screen`);
  when the screen finds the cycle quiet (nothing the detector could report or ask), the monitor only
  notes the heartbeats, takes the waits of ranks whose wait counter moved (from their headers, or by
  decoding those records), advances the straggler window, and writes its lease. Nothing else is decoded:
  :attr:`Monitor.records` is a mapping that decodes a rank's record when someone reads it.
- **full path**: every record is decoded, group tables and stacks are fetched when new, the pure
  :func:`~syncdoctor.watch.detector.detect` runs, the detector's requests go into the control message
  the ranks poll, and events go to the sinks. Its results are those of the fast path whenever the
  screen says quiet (tests/test_watch_screen.py drives both over the same records).

It runs as a thread on one rank (:class:`MonitorThread`) or in ``syncdoctor watch`` outside the job.

A monitor holds a lease (``monitor`` key: who and a beat counter) so that ``syncdoctor watch`` can tell
whether a monitor already acts, and a rank can take over when the monitor's rank dies (only possible
when the store outlives it, as with torchrun's agent store).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from syncdoctor.history import resolve_path
from syncdoctor.outputs import output_problem
from syncdoctor.watch import straggler
from syncdoctor.watch.columns import identity_of
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.control import AbortOrder, ControlMessage, write_control
from syncdoctor.watch.detector import detect
from syncdoctor.watch.events import HANG_CODES, Event
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.priority import lower_thread_priority
from syncdoctor.watch.reader import RecordReader
from syncdoctor.watch.records import (
    MAGIC,
    SOURCES,
    RankRecord,
    StackReport,
    WaitSample,
    decode_record,
    decode_stack,
    format_ranks,
    parse_ranks,
)
from syncdoctor.watch.sinks import HistorySink, JsonlSink, LogSink, Sink, StoreSink, close_sinks, job_run_id
from syncdoctor.watch.snapshot import DetectorState, Requests, Snapshot, note_heartbeats
from syncdoctor.watch.thresholds import AUTO_CONFIRM_START_S, Learner, Thresholds

if TYPE_CHECKING:
    from syncdoctor.watch.columns import Columns

__all__ = ["LazyRecords", "Monitor", "MonitorThread", "monitor_sinks", "next_delay"]

logger = logging.getLogger(__name__)

NATIVE_POLLS = 30  # cycles a monitor reads a stack again for its native part before giving up


@dataclass
class _Inputs:
    """What the screen computed from this cycle's headers, for the detector's columns when it is not quiet."""

    table: Any
    changed: Any
    changed_at: Any
    from_headers: list[tuple[int, list[WaitSample]]]
    to_decode: list[int]
    upper: int  # at most this many waits to take


class LazyRecords(Mapping[int, RankRecord]):
    """The records of one cycle, decoded from the raw values when read (each at most once).

    Ranks whose value is missing, foreign or malformed, or names another rank, are absent. Reading one
    rank (``records.get(r)``) decodes that record only; iterating decodes all of them.
    """

    def __init__(self, raws: Sequence[bytes]) -> None:
        self.raws = raws
        self._cache: dict[int, RankRecord | None] = {}
        self._all: dict[int, RankRecord] | None = None
        self.headers_valid = False  # every value has a valid header (the monitor's columns): membership is cheap

    def __contains__(self, rank: object) -> bool:
        if self.headers_valid:  # a detail that does not parse reads as None from get()
            return type(rank) is int and 0 <= rank < len(self.raws)
        return super().__contains__(rank)

    def _one(self, rank: int) -> RankRecord | None:
        if rank in self._cache:
            return self._cache[rank]
        record = decode_record(self.raws[rank])
        if record is not None and record.rank != rank:
            record = None
        self._cache[rank] = record
        return record

    def decoded(self) -> dict[int, RankRecord]:
        """Every valid record, decoded (those already read are not decoded again)."""
        if self._all is None:
            self._all = {r: rec for r in range(len(self.raws)) if (rec := self._one(r)) is not None}
        return self._all

    def __getitem__(self, rank: object) -> RankRecord:
        if type(rank) is not int or not 0 <= rank < len(self.raws):
            raise KeyError(rank)
        record = self._one(rank)
        if record is None:
            raise KeyError(rank)
        return record

    def __iter__(self) -> Iterator[int]:
        return iter(self.decoded())

    def __len__(self) -> int:
        return len(self.decoded())


class Monitor:
    """One monitor over one job attempt. Not thread-safe: one caller drives :meth:`cycle`.

    ``fast=False`` runs every cycle in full (the reference the fast path is tested against);
    ``wall_clock`` stamps events and measures the age of records by their publication time.
    """

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
        wall_clock: Callable[[], float] = time.time,
        fast: bool = True,
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
        self.wall_clock = wall_clock
        self.state = DetectorState()
        # thresholds in force: the configured ones, or learned from the job (warn/confirm_after_s="auto")
        self.learner = Learner()
        self.effective = config.resolved()
        self.thresholds = Thresholds(float(self.effective.warn_after_s), float(self.effective.confirm_after_s), False,
                                     "set" if not (config.auto_warn or config.auto_confirm) else "warming up")
        self.records: Mapping[int, RankRecord] = {}
        self.groups: dict[str, tuple[int, ...]] = {}
        self.stacks: dict[int, StackReport] = {}
        self.events: deque[Event] = deque(maxlen=200)
        self.last_cycle_s = 0.0  # wall time of the last cycle
        self.last_cycle_cpu_s = 0.0  # and the CPU time it took
        self.cycles = 0
        self._stack_gens: dict[int, int] = {}
        self._native_polls: dict[int, int] = {}
        self._stack_polls: dict[tuple[int, int], int] = {}  # (rank, request) -> direct reads so far
        self._stack_keys: set[int] = set()  # stack keys created (empty) before a first direct read
        self._group_misses: dict[str, int] = {}
        self._ensured = False
        self.reader = RecordReader(store, keys, world_size)
        self._ctl = ControlMessage()  # what the ranks were asked so far (syncdoctor.watch.control)
        self._beat = 0
        self._dumped = False
        self._said_hooks = False
        self._hooks_seen_at: float | None = None
        self._said_version = False
        self._index: Any = None  # the screen's GroupIndex of self.groups, rebuilt when they grow
        self._index_size = -1
        self._tables: dict[str, tuple[int, ...]] = {}
        # the fast path: which cycles took it, why the last full one did not, and where the time went
        self.fast_cycles = 0
        self.column_cycles = 0  # full cycles whose detector read the headers as columns
        self.last_path = ""
        self.last_reason = ""
        self.timings: dict[str, float] = {}
        self._np: Any = None
        if fast:
            try:
                import numpy

                self._np = numpy
            except ImportError:  # pragma: no cover - numpy comes with the torch extra
                logger.info("syncdoctor.watch: numpy is missing; the monitor decodes every record each cycle")
        if self._np is not None:
            np = self._np
            self._hb = np.zeros(world_size, dtype=np.int64)  # per rank: last heartbeat seen
            self._changed_at = np.zeros(world_size, dtype=np.float64)  # when it last changed
            self._known = np.zeros(world_size, dtype=bool)  # in state.seen
            self._wait_pid = np.full(world_size, -1, dtype=np.int64)  # waits taken from this process...
            self._wait_total = np.zeros(world_size, dtype=np.int64)  # ...up to this count
            self._stack_arr = np.zeros(world_size, dtype=np.int64)
        self._dropped = 0
        self._screened = 0.0
        self._detected = 0.0
        self._inputs: _Inputs | None = None
        # rank -> (pid, host key, where, host), for the columns
        self._identity: dict[int, tuple[int, str, str, str]] = {}

    # --- one cycle -----------------------------------------------------------------------------------
    def cycle(self) -> list[Event]:
        started, cpu = time.perf_counter(), time.thread_time()
        if not self._ensured:
            self.store.ensure(self.keys.monitor)
            self._ensured = True
        raws = self.reader.read()
        read = time.perf_counter()
        now, wall = self.clock(), self.wall_clock()
        self._refresh_thresholds(now)
        lazy = LazyRecords(raws)  # one decoding per record per cycle, whichever path reads it
        self._inputs = None
        if self._np is not None and self._fast(raws, lazy, now):
            self.state.due_at = None  # quiet: no wait is near a threshold
            self.timings = {"multi_get": read - started, "screen": self._screened - read}
            self.fast_cycles += 1
            self.last_path, self.last_reason = "fast", ""
            if self.send_requests:
                self._write_lease()
            self.cycles += 1
            self.last_cycle_s = time.perf_counter() - started
            self.last_cycle_cpu_s = time.thread_time() - cpu
            self.timings["rest"] = self.last_cycle_s - self.timings["multi_get"] - self.timings["screen"]
            return []
        self.last_path = "full"
        events = self._full(lazy, now, wall, self._inputs)
        self.cycles += 1
        self.last_cycle_s = time.perf_counter() - started
        self.last_cycle_cpu_s = time.thread_time() - cpu
        screened = max(self._screened - read, 0.0) if self._inputs is not None else 0.0
        self.timings = {"multi_get": read - started, "screen": screened, "detect": self._detected,
                        "rest": self.last_cycle_s - (read - started) - screened - self._detected}
        return events

    def _refresh_thresholds(self, now: float) -> None:
        config = self.config
        if not (config.auto_warn or config.auto_confirm):
            return
        before = self.thresholds
        static_warn = AUTO_CONFIRM_START_S if config.auto_warn else float(config.warn_after_s)
        static_confirm = AUTO_CONFIRM_START_S if config.auto_confirm else float(config.confirm_after_s)
        self.thresholds = self.learner.thresholds(now, (row[4] for row in self.state.window), static_warn,
                                                  static_confirm, config.auto_warn, config.auto_confirm)
        if (self.thresholds.warn_s, self.thresholds.confirm_s) != (before.warn_s, before.confirm_s):
            self.effective = config.with_thresholds(self.thresholds.warn_s, self.thresholds.confirm_s)
            if self.thresholds.learned and (not before.learned or not 0.5 <= self.thresholds.warn_s / before.warn_s <= 2):
                logger.info("syncdoctor.watch: thresholds %s", self.thresholds.how)

    def _observe_step(self, now: float, step: int | None) -> None:
        if self.config.auto_warn or self.config.auto_confirm:
            self.learner.observe(now, step)

    def due_in(self) -> float:
        """Seconds until a wait the detector saw crosses its threshold (infinite when none is near)."""
        due = self.state.due_at
        return float("inf") if due is None else due - self.clock() + 0.02

    def _say_version(self, raws: Sequence[bytes]) -> None:
        """Records of another syncdoctor version read as missing: say so once, naming both versions."""
        for raw in raws:
            if len(raw) >= 4 and raw[:3] == MAGIC[:3] and raw[3] != MAGIC[3]:
                self._said_version = True
                logger.warning(
                    "syncdoctor.watch: the job publishes records of version %d, this syncdoctor reads version %d "
                    "(those ranks read as not reporting): watch with the syncdoctor version the job uses",
                    raw[3], MAGIC[3],
                )
                return

    def _write_lease(self) -> None:
        self._beat += 1
        self.store.set(self.keys.monitor, json.dumps({"who": self.who, "beat": self._beat}))

    def _fast(self, raws: Sequence[bytes], records: LazyRecords, now: float) -> bool:
        """Screen the headers; when quiet, do the cycle's bookkeeping and return True (nothing to say)."""
        from syncdoctor.watch.screen import GroupIndex, header_table, new_waits, screen

        np, state = self._np, self.state
        self._screened = time.perf_counter()
        table = header_table(raws)
        if table is None or len(table) != self.world_size:
            self.last_reason = "a rank has no valid record"
            return False
        if state.waits_dropped != self._dropped:
            self.last_reason = "the straggler bookkeeping dropped waits last cycle"
            return False
        beats = table["heartbeat"]
        changed = ~self._known | (beats != self._hb)
        changed_at = np.where(changed, now, self._changed_at)
        if self._index is None or self._index_size != len(self.groups):  # tables only ever grow
            self._tables = {name: tuple(sorted(members)) for name, members in self.groups.items()}
            self._index = GroupIndex.build(self._tables, self.world_size)
            self._index_size = len(self.groups)
        tables, index = self._tables, self._index
        from_headers, to_decode = new_waits(table, self._wait_pid, self._wait_total, index.by_id)
        upper = sum(len(w) for _, w in from_headers) + 64 * len(to_decode)
        self._inputs = _Inputs(table, changed, changed_at, from_headers, to_decode, upper)
        if self.config.auto_warn or self.config.auto_confirm:
            marks = table["nmarks"]
            if marks.any():
                newest = table["mark_step"][np.arange(len(table)), np.maximum(marks.astype(np.int64) - 1, 0)]
                self._observe_step(now, int(newest[marks > 0].max()))
        verdict = screen(
            table, now=now, config=self.effective, state=state, world_size=self.world_size, changed_at=changed_at,
            stack_gens=self._stack_arr, groups=index, hooks_said=self._said_hooks,
            new_wait_count=upper,
        )
        if not verdict.quiet:
            self.last_reason = verdict.reason
            self._screened = time.perf_counter()
            return False
        waits: list[tuple[int, Sequence[WaitSample]]] = list(from_headers)
        for rank in to_decode:
            record = records.get(rank)
            if record is None:  # a valid header with a detail that does not parse: let the full path judge
                self.last_reason = f"rank {rank}'s record does not decode"
                return False
            waits.append((rank, record.waits))
        self._screened = time.perf_counter()
        # the detector's own bookkeeping, by the function detect() uses on these records
        moved = np.flatnonzero(changed)
        note_heartbeats(state, now, zip(moved.tolist(), beats[moved].tolist(), strict=True))
        self._hb = beats.astype(np.int64)
        self._changed_at = changed_at
        self._known[:] = True
        self._wait_pid = table["pid"].astype(np.int64)
        self._wait_total = table["waits_total"].astype(np.int64)
        groups = dict(tables)
        groups.setdefault("0", tuple(range(self.world_size)))
        straggler.ingest(state, now, sorted(waits))
        straggler.finalize(now, self.effective, state, groups, verdict.completed)
        straggler.trim(now, self.effective, state)
        self.records = records
        if straggler.stragglers(state, self.effective, range(self.world_size)):
            # a chronic straggler to report: the steps above are idempotent, the full path repeats them
            self.last_reason = "the straggler window names a rank"
            return False
        self._dropped = state.waits_dropped
        return True

    def _columns(self, lazy: LazyRecords, inputs: _Inputs | None) -> Columns | None:
        """The headers as columns for the detector (:mod:`syncdoctor.watch.columns`), when they hold all it
        reads; ``None`` to decode every record instead."""
        if inputs is None or self._index is None or self._index_size != len(self.groups):
            return None
        from syncdoctor.watch.columns import Columns, headers_hold_all

        state = self.state
        if state.waits_dropped != self._dropped or len(state.pending_waits) + inputs.upper > state.max_pending:
            return None  # the straggler bookkeeping must take every record's waits again
        if not headers_hold_all(inputs.table, self._index):
            return None
        waits: list[tuple[int, Sequence[WaitSample]]] = list(inputs.from_headers)
        for rank in inputs.to_decode:
            record = lazy.get(rank)
            if record is None:
                return None
            waits.append((rank, record.waits))
        lazy.headers_valid = True
        return Columns(inputs.table, self._index, lazy, self._identity, sorted(waits), inputs.changed,
                       inputs.changed_at)

    def _full(self, lazy: LazyRecords, now: float, wall: float, inputs: _Inputs | None = None) -> list[Event]:
        columns = self._columns(lazy, inputs)
        records: Mapping[int, RankRecord]
        if columns is not None:
            self.column_cycles += 1
            records = lazy
            table = columns.table
            ahead = self._np.flatnonzero(table["stack_gen"] > self._stack_arr)  # the fast path's stack generations
            self._read_stacks(records, dict(zip(ahead.tolist(), table["stack_gen"][ahead].tolist(), strict=True)))
            self._observe_step(now, columns.max_step())
        else:
            records = lazy.decoded()
            if len(records) < self.world_size and not self._said_version:  # only then can a version differ
                self._say_version(lazy.raws)
            for rank, rec in records.items():
                self._identity[rank] = identity_of(rec)
            self._read_groups(records)
            self._read_stacks(records, {r: rec.stack_gen for r, rec in records.items()})
            steps = [rec.step for rec in records.values() if rec.step is not None]
            self._observe_step(now, max(steps) if steps else None)
        self.records = records
        snapshot = Snapshot(now, wall, self.world_size, records, dict(self.groups), dict(self.stacks), columns)
        began = time.perf_counter()
        detection = detect(snapshot, self.effective, self.state)
        self._detected = time.perf_counter() - began
        events = list(detection.events)
        if self.config.auto_warn or self.config.auto_confirm:  # say which thresholds made the call
            events = [replace(e, detail={**e.detail, "thresholds": self.thresholds.to_json()}) for e in events]
        if columns is not None:
            hooked = tuple(self._np.flatnonzero(columns.table["source"] == SOURCES.index("hooks")).tolist())
        else:
            hooked = tuple(sorted(r for r, rec in records.items() if rec.source == "hooks"))
        if hooked and self._hooks_seen_at is None:
            self._hooks_seen_at = now
        # what the watcher cannot see is said once, here: when every rank has reported (records relayed by
        # node leaders arrive an interval apart), or a dead rank's delay after the first such record
        if hooked and not self._said_hooks and (
                columns is not None or len(records) == self.world_size or now - (self._hooks_seen_at or now) >= self.effective.dead_s):
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
            self._write_lease()
        if columns is not None and inputs is not None:
            self._sync_columns(inputs)
        elif self._np is not None:
            self._sync(records)
        for event in events:
            self.events.append(event)
            for sink in self.sinks:
                sink.emit(event)
        for event in events:
            if event.status == "confirmed" and event.code in HANG_CODES and self.on_confirmed is not None:
                self.on_confirmed(event)
        return events

    def _sync(self, records: Mapping[int, RankRecord]) -> None:
        """After a full cycle: the fast path's per-rank arrays from what the detector now holds."""
        seen = self.state.seen
        for rank in range(self.world_size):
            entry = seen.get(rank)
            self._known[rank] = entry is not None
            if entry is not None:
                self._hb[rank], self._changed_at[rank] = entry.heartbeat, entry.changed_at
            rec = records.get(rank)  # the detector took the waits of exactly these records
            self._wait_pid[rank], self._wait_total[rank] = (rec.pid, rec.waits_total) if rec is not None else (-1, 0)
        for rank, gen in self._stack_gens.items():
            if 0 <= rank < self.world_size:
                self._stack_arr[rank] = gen
        self._dropped = self.state.waits_dropped

    def _sync_columns(self, inputs: _Inputs) -> None:
        """After a cycle on columns: the fast path's per-rank arrays, as the fast path keeps them (the detector
        took the same heartbeats and waits from the same headers)."""
        np, table = self._np, inputs.table
        self._hb = table["heartbeat"].astype(np.int64)
        self._changed_at = inputs.changed_at
        self._known[:] = True
        self._wait_pid = table["pid"].astype(np.int64)
        self._wait_total = table["waits_total"].astype(np.int64)
        for rank, gen in self._stack_gens.items():
            if 0 <= rank < self.world_size:
                self._stack_arr[rank] = gen
        self._dropped = self.state.waits_dropped

    def _read_groups(self, records: Mapping[int, RankRecord]) -> None:
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

    def _read_stacks(self, records: Mapping[int, RankRecord], stack_gens: Mapping[int, int]) -> None:
        """Read the stacks the records announce (``stack_gens``: per rank, the generation its record names)."""
        wanted = [r for r, gen in stack_gens.items() if gen > self._stack_gens.get(r, 0)]
        # stacks asked for and not answered in the records yet: read their keys directly (a node leader relays
        # the record that announces a stack up to an interval later); stacks whose native part the rank is
        # still taking: read again. A few ranks, for a few cycles each.
        asked = [r for r, gen in self._ctl.stacks.items() if self._stack_gens.get(r, 0) < gen and r not in wanted
                 and 0 <= r < self.world_size and self._stack_polls.get((r, gen), 0) < NATIVE_POLLS][:64]
        for rank in asked:
            key = (rank, self._ctl.stacks[rank])
            self._stack_polls[key] = self._stack_polls.get(key, 0) + 1
            if rank not in self._stack_keys:  # create it empty: multi_get must not meet a missing key
                self.store.ensure(self.keys.stack(rank))
                self._stack_keys.add(rank)
        wanted += asked
        pending = [r for r, stack in self.stacks.items() if stack.native_pending and r not in wanted]
        if not wanted and not pending:
            return
        raws = self.store.multi_get([self.keys.stack(r) for r in (*wanted, *pending)])
        for rank, raw in zip(wanted, raws, strict=False):
            report = decode_stack(raw)
            announced = stack_gens.get(rank)
            if announced is not None and announced > self._stack_gens.get(rank, 0):
                self._stack_gens[rank] = announced
            if report is not None and report.gen >= self._stack_gens.get(rank, 0):
                self._stack_gens[rank] = report.gen
                self.stacks[rank] = report
                self._native_polls.pop(rank, None)
        if len(self._stack_polls) > 4096:  # bounded: forget the polls of requests long answered or given up
            self._stack_polls = {k: v for k, v in self._stack_polls.items() if self._stack_gens.get(k[0], 0) < k[1]}
        for rank, raw in zip(pending, raws[len(wanted):], strict=True):
            report = decode_stack(raw)
            polls = self._native_polls[rank] = self._native_polls.get(rank, 0) + 1
            if report is not None and report.gen == self.stacks[rank].gen and not report.native_pending:
                self.stacks[rank] = report
            elif polls >= NATIVE_POLLS:  # the rank's py-spy never answered (the rank died, or it hangs)
                self.stacks[rank] = replace(self.stacks[rank], native_note=(
                    f"py-spy gave no native stack within {NATIVE_POLLS} monitor cycles"))

    def _send(self, requests: Requests, events: Sequence[Event]) -> None:
        message = self._ctl
        if requests.stacks or requests.inspect:
            message = message.asking(requests.stacks, requests.inspect)
        if self.config.flight_recorder_dump and not self._dumped:
            if any(e.status == "confirmed" and e.code in HANG_CODES for e in events):
                self._dumped = True
                message = replace(message, dump=message.dump + 1)
        if message is not self._ctl:
            self._ctl = message
            self.publish_control()

    def publish_control(self) -> None:
        """Publish the control message (whole) and bump its generation, so the ranks read it."""
        write_control(self.store, self.keys, self._ctl)

    def request_abort(self, code: int, reason: str, expected: int) -> None:
        """Ask every rank to end with ``code``; ``expected`` ranks (the reachable ones) will count themselves
        out on the ``aborted`` counter and leave together, so no rank's exit breaks a peer's connection
        before that peer has read the order."""
        self._ctl = replace(self._ctl, abort=AbortOrder(code, reason[:2000], self.who, expected))
        self.publish_control()


class MonitorThread:
    """Runs :meth:`Monitor.cycle` every interval on a daemon thread; contains its own errors."""

    def __init__(self, monitor: Monitor, interval_s: float, nice: int = 0) -> None:
        self.monitor = monitor
        self.interval_s = interval_s
        self.nice = nice  # added to the thread's nice value (see syncdoctor.watch.priority)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="syncdoctor-watch-monitor", daemon=True)
        self._failing = False

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        close_sinks(self.monitor.sinks, timeout)  # the node history's pending writes

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        lower_thread_priority(self.nice)
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
            delay = next_delay(self.interval_s, self.monitor.last_cycle_s, self.monitor.last_cycle_cpu_s,
                               self.monitor.due_in())


def next_delay(interval_s: float, wall_s: float, cpu_s: float, due_in_s: float) -> float:
    """Seconds from the end of a cycle that took ``wall_s`` (``cpu_s`` of them on the CPU) to the next one.

    Cycles start an interval apart. They never take more than a fifth of a core from the training process,
    nor a fifth of the job's store: with very many ranks, or a store slow to answer, they space out instead
    (a cycle of 100 ms keeps 1 s; one of 400 ms runs every 2 s, and so does one that waited 400 ms on the
    store). A wait that crosses a threshold in ``due_in_s`` wakes the monitor earlier, bounded by the cycle's
    CPU time only: on a loaded machine a thread preempted in the middle of a 3 ms cycle took 500 ms of wall
    time without costing anyone anything, and spacing by that would postpone a threshold by 2 s. A threshold
    is crossed once, so that wake-up cannot become a cadence that loads a slow store.
    """
    cadence = max(interval_s - wall_s, 4 * wall_s, 0.05)
    return min(cadence, max(due_in_s, 4 * cpu_s, 0.05))


def monitor_sinks(config: WatchConfig, store: ScopedStore, keys: JobKeys, rank: int,
                  env: Mapping[str, str] | None = None) -> list[Sink]:
    """Where a rank's monitor sends its events: the log, the store, the node history (unless
    ``SYNCDOCTOR_HISTORY=off``) and, when set, the events file."""
    env = os.environ if env is None else env
    sinks: list[Sink] = [LogSink(), StoreSink(store, keys)]
    history = resolve_path(None, False, env)
    if history is not None:
        fallback = f"{socket.gethostname()}:{os.getpid()}:{int(time.time())}"
        sinks.append(HistorySink(history, job_run_id(env, keys.attempt, fallback)))
    if config.events_file:
        path = config.events_file.replace("{rank}", str(rank))
        problem = output_problem(path)
        if problem is None:
            sinks.append(JsonlSink(path))
        else:  # never fail the training for it: say so once, keep the other sinks
            logging.getLogger("syncdoctor.watch").warning(
                "syncdoctor.watch: SYNCDOCTOR_WATCH_EVENTS_FILE %s: cannot write there (%s); events go to the log and "
                "the store only", path, problem)
    return sinks
