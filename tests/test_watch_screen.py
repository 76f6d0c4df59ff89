"""The monitor's fast path against its full path: same records, same clock, same events.

A simulated job (8 ranks on 2 hosts, two process groups) publishes v3 records into two in-memory stores
each cycle; one Monitor may take the fast path (screen the headers, skip the detector when quiet), the
other always decodes everything and runs the detector. Every cycle both must emit the same events
(compared as whole JSON objects), write the same control message and lease; in the healthy stretches
the first must have taken the fast path. Faults are drawn by hypothesis: late rank, skipped collective
(drift), mismatched collective, transport hang, dead rank, host cut, a rank that exits, chronic
straggler, restarted ranks, garbage values, a slow publisher, a rank on hooks.

No sleeping, no torch, no sockets: the clocks are fake.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.monitor import Monitor, next_delay
from syncdoctor.watch.records import (
    HEADER_GROUPS,
    RECORD_VERSION,
    GroupProgress,
    RankRecord,
    Signature,
    StackReport,
    StepMark,
    WaitSample,
    encode_record,
    encode_stack,
)

AR = Signature("all_reduce", ((1000,),), ("Float",), ((1000,),))
BC = Signature("broadcast", ((1000,),), ("Float",), ((1000,),))
# suspect_s - interval_s (3 s) > 1.5 intervals: a rank silent for two intervals is caught by the liveness rule,
# not by the stall rule
CFG = WatchConfig(interval_s=1.0, warn_after_s=8.0, suspect_after_s=4.0, dead_after_s=3.0, confirm_after_s=16.0,
                  straggler_window_s=30.0, straggler_min_events=3, straggler_min_share=0.5)
WORLD = 8
GROUPS = {"0": tuple(range(WORLD)), "7": (0, 2, 4, 6)}
WALL0 = 1_700_000_000.0
BLOCKING = ("late", "dead", "hostcut", "exit", "mismatch", "transport")


class MemoryStore:
    """The few TCPStore calls the watcher makes, on a dict."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def set(self, key: str, value: bytes | str) -> None:
        self.data[key] = value.encode() if isinstance(value, str) else bytes(value)

    def get(self, key: str) -> bytes:
        return self.data[key]

    def add(self, key: str, amount: int) -> int:
        value = int(self.data.get(key) or b"0") + amount
        self.data[key] = str(value).encode()
        return value

    def check(self, keys: list[str]) -> bool:
        return all(k in self.data for k in keys)

    def compare_set(self, key: str, expected: bytes | str, desired: bytes | str) -> bytes:
        expected_b = expected.encode() if isinstance(expected, str) else expected
        desired_b = desired.encode() if isinstance(desired, str) else desired
        current = self.data.get(key)
        if (current is None and not expected_b) or current == expected_b:
            self.data[key] = desired_b
            return desired_b
        return current if current is not None else expected_b

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return [self.data[k] for k in keys]


@dataclass
class SimRank:
    rank: int
    pid: int
    entered: dict[str, int] = field(default_factory=dict)
    completed: dict[str, int] = field(default_factory=dict)
    stall_from: dict[str, float] = field(default_factory=dict)
    sig: dict[str, Signature] = field(default_factory=dict)
    beat: int = 0
    step: int = 0
    marks: deque[StepMark] = field(default_factory=lambda: deque(maxlen=8))
    waits: deque[WaitSample] = field(default_factory=lambda: deque(maxlen=64))
    waits_total: int = 0
    state: str = "running"
    source: str = "flight_recorder"
    stack_gen: int = 0
    frozen: bytes | None = None  # last value, republished unchanged while frozen

    @property
    def host(self) -> str:
        return f"host{self.rank // 4}"

    def groups(self) -> list[str]:
        return [g for g, members in GROUPS.items() if self.rank in members]

    def wait(self, group: str, seq: int, wait_s: float) -> None:
        self.waits.append(WaitSample(group, seq, wait_s))
        self.waits_total += 1

    def record(self, now: float, small_stall: float | None) -> RankRecord:
        groups = {}
        for g in self.groups():
            stalled = now - self.stall_from[g] if g in self.stall_from else None
            entered, completed = self.entered[g], self.completed[g]
            if stalled is None and small_stall is not None and g == "0":
                entered, stalled = entered + 1, small_stall  # healthy: inside the next collective briefly
            sig = self.sig.get(g) if entered > completed else None
            groups[g] = GroupProgress(g, entered, completed, stalled, sig, completed + 1 if sig else 0)
        return RankRecord(
            rank=self.rank, world_size=WORLD, host=self.host, node=self.rank // 4, pid=self.pid,
            local_rank=self.rank % 4, heartbeat=self.beat, state=self.state, source=self.source, step=self.step,
            step_age_s=0.1, quiet_s=0.05, groups=groups, step_marks=tuple(self.marks), waits=tuple(self.waits),
            stack_gen=self.stack_gen, published=WALL0 + now, waits_total=self.waits_total,
        )


GARBAGE = (b"", b"\x00" * 40, b"not a record", b'[2,1,8,"h",0,1,0,0,1,"running","",{},null,0,null,[],[],0,0,null,null,{},0]',
           b"SDW\x02" + b"\x00" * 400, b"SDW")


class SimJob:
    """Ranks that progress in lockstep, with faults switched on and off by the test."""

    def __init__(self) -> None:
        self.ranks = [SimRank(r, 1000 + r) for r in range(WORLD)]
        for rank in self.ranks:
            for g in rank.groups():
                rank.entered[g] = rank.completed[g] = 0
        self.stores = (MemoryStore(), MemoryStore())
        self.keys = JobKeys("syncdoctor/v1", 0)
        for store in self.stores:
            for name, members in GROUPS.items():
                store.set(self.keys.group(name), ",".join(map(str, members)))
        self.next_pid = 5000
        self.cycle = 0
        self.drift: set[int] = set()
        self.straggler: int | None = None
        self.block: tuple[str, int] | None = None

    # faults ------------------------------------------------------------------------------------------
    def start_block(self, kind: str, who: int, now: float) -> None:
        """From now on group 0 waits in collective S: entered by the ranks that are not at fault."""
        self.block = (kind, who)
        faulty = self.faulty(kind, who)
        latest = max(r.step for r in self.ranks)
        for rank in self.ranks:
            if rank.step < latest and rank.state == "running":
                self.step_rank(rank, 0)  # the ranks one step behind catch up first
        for rank in self.ranks:
            if rank.state != "running":
                continue
            if kind in ("mismatch", "transport") or rank.rank not in faulty:
                rank.entered["0"] += 1
                rank.stall_from["0"] = now
                rank.sig["0"] = BC if kind == "mismatch" and rank.rank == who else AR
            if kind in ("dead", "hostcut") and rank.rank in faulty:
                rank.frozen = rank.frozen or b""  # frozen at its next publication
            if kind == "exit" and rank.rank == who:
                rank.state = "exited"

    def end_block(self, now: float) -> None:
        assert self.block is not None
        kind, who = self.block
        self.block = None
        for rank in self.ranks:
            if kind == "exit" and rank.rank == who:
                self.restart(rank)
            rank.frozen = None
            started = rank.stall_from.pop("0", None)
            target = max(r.entered["0"] for r in self.ranks)
            rank.entered["0"] = rank.completed["0"] = target
            if started is not None and now - started >= 0.05:
                rank.wait("0", target, round(now - started, 3))

    def faulty(self, kind: str, who: int) -> set[int]:
        if kind == "hostcut":
            return {r.rank for r in self.ranks if r.host == self.ranks[who].host}
        return {who}

    def restart(self, rank: SimRank) -> None:
        rank.pid = self.next_pid
        self.next_pid += 1
        rank.beat, rank.waits_total, rank.state, rank.stack_gen = 0, 0, "running", 0
        rank.waits.clear()
        rank.marks.clear()

    # one interval ------------------------------------------------------------------------------------
    def advance(self, now: float, rng: int) -> None:
        if self.block is None:
            for rank in self.ranks:
                if rank.state != "running":
                    continue
                if rank.rank % 4 == 1 and self.cycle % 2:
                    continue  # publishes before its step ends: one step behind at odd cycles
                for _ in range(2 if rank.rank % 4 == 1 and self.cycle % 2 == 0 and self.cycle else 1):
                    self.step_rank(rank, rng)

    def step_rank(self, rank: SimRank, rng: int) -> None:
        rank.step += 1
        for g in rank.groups():
            count = 2 if g == "0" else 1
            if g == "0" and rank.rank in self.drift and self.cycle % 3 == 0:
                count -= 1  # skips a collective
            for _ in range(count):
                rank.entered[g] += 1
                seq = rank.entered[g]
                if g != "0":
                    continue
                if self.straggler is not None and rank.rank != self.straggler:
                    rank.wait(g, seq, 0.3)
                elif self.straggler is None and (rank.rank * 7 + seq + rng) % 11 == 0:
                    rank.wait(g, seq, 0.1)
            rank.completed[g] = rank.entered[g]
        rank.marks.append(StepMark(rank.step, {g: rank.entered[g] for g in rank.groups()}))

    def publish(self, now: float, small_stall: float | None, skip: set[int], garbage: dict[int, bytes]) -> None:
        for rank in self.ranks:
            if rank.rank in skip or (rank.frozen is not None and rank.frozen != b""):
                continue
            rank.beat += 1
            value = encode_record(rank.record(now, small_stall if rank.rank % 3 == 0 else None))
            if rank.frozen == b"":
                rank.frozen = value
            for store in self.stores:
                store.set(self.keys.rank(rank.rank), garbage.get(rank.rank, value))

    def answer_stacks(self) -> None:
        raw = self.stores[0].data.get(self.keys.ctl_msg)
        if not raw:
            return
        wanted = json.loads(raw).get("stacks", {})
        for rank in self.ranks:
            gen = int(wanted.get(str(rank.rank), 0))
            if gen > rank.stack_gen and rank.frozen is None and rank.state == "running":
                rank.stack_gen = gen
                for store in self.stores:
                    store.set(self.keys.stack(rank.rank), encode_stack(StackReport(rank.rank, gen, note="sim")))


# segments: (kind, rank, duration in cycles, healthy cycles after it)
KINDS = (*BLOCKING, "drift", "straggler", "restart", "garbage", "skip", "hooks")
segment = st.tuples(st.sampled_from(KINDS), st.integers(0, WORLD - 1), st.integers(1, 12), st.integers(0, 6))


def run_job(segments: list[tuple[str, int, int, int]], lead: int = 4, jitter: tuple[float, ...] = (1.0,),
            stall: float | None = 0.2) -> tuple[Monitor, Monitor, list[str], list[bool]]:
    """Drive both monitors; return them, the paths the fast one took, and which cycles were healthy."""
    job = SimJob()
    now = 100.0
    clock = [now]
    monitors = [
        Monitor(ScopedStore(store), job.keys, CFG, WORLD, who="m", clock=lambda: clock[0],
                wall_clock=lambda: WALL0 + clock[0], fast=fast)
        for store, fast in zip(job.stores, (True, False), strict=True)
    ]
    plan: list[tuple[str, int, bool]] = [("healthy", 0, True)] * lead
    for kind, who, duration, after in segments:
        plan += [(kind, who, i == 0) for i in range(duration)] + [("end", 0, False)] + [("healthy", 0, True)] * after
    paths: list[str] = []
    healthy: list[bool] = []
    calm = 0  # healthy cycles in a row since the job's last disturbance
    for index, (kind, who, first) in enumerate(plan):
        now += jitter[index % len(jitter)]
        clock[0] = now
        job.cycle = index
        skip: set[int] = set()
        garbage: dict[int, bytes] = {}
        if kind in BLOCKING and first:
            job.start_block(kind, who, now)
        elif kind == "end" and job.block is not None:
            job.end_block(now)
        if kind == "drift":
            job.drift.add(who)
        if kind == "straggler":
            job.straggler = who
        elif kind == "end":
            job.straggler = None
        if kind == "restart" and first:
            job.restart(job.ranks[who])
        if kind == "garbage":
            garbage[who] = GARBAGE[(index + who) % len(GARBAGE)]
        if kind == "skip":
            skip.add(who)
        if kind == "hooks":
            job.ranks[who].source = "hooks"
        job.advance(now, index)
        job.publish(now, stall, skip, garbage)
        results = [m.cycle() for m in monitors]
        fast, full = ([e.to_json() for e in events] for events in results)
        assert fast == full, f"cycle {index} ({kind}): events differ"
        for key in (job.keys.ctl_msg, job.keys.monitor, job.keys.ctl_gen):
            assert job.stores[0].data.get(key) == job.stores[1].data.get(key), f"cycle {index}: {key} differs"
        job.answer_stacks()
        paths.append(monitors[0].last_path)
        calm = calm + 1 if kind == "healthy" and not job.drift else 0
        healthy.append(calm >= 8 and not monitors[1].state.incidents)
    return monitors[0], monitors[1], paths, healthy


def test_healthy_job_takes_the_fast_path_and_says_nothing() -> None:
    fast, full, paths, _ = run_job([], lead=30, jitter=(1.0, 0.7, 1.3))
    assert paths[0] == "full" and set(paths[1:]) == {"fast"}, (paths, fast.last_reason)
    assert not fast.events and not full.events
    assert fast.fast_cycles == 29 and full.fast_cycles == 0
    # the bookkeeping the fast path keeps is the detector's own
    assert fast.state.window == full.state.window and fast.state.waits_done == full.state.waits_done
    assert {r: (s.heartbeat, s.changed_at) for r, s in fast.state.seen.items()} == {
        r: (s.heartbeat, s.changed_at) for r, s in full.state.seen.items()}
    assert len(full.state.window) > 0  # the healthy waits were taken and moved to the window
    # records read lazily still give the full records
    assert set(fast.records) == set(range(WORLD)) and fast.records[3] == full.records[3]


@pytest.mark.parametrize(
    ("wall", "cpu", "due", "expected"),
    [(0.003, 0.003, float("inf"), 0.997),  # an interval apart
     (0.003, 0.003, 0.4, 0.4),  # earlier when a wait crosses a threshold
     (0.5, 0.003, 0.4, 0.4),  # preempted in a cheap cycle: the threshold still wakes it (was 2.0 s)
     (0.5, 0.003, float("inf"), 2.0),  # but without a threshold near, the cadence spaces out by wall time,
     (1.5, 0.003, float("inf"), 6.0),  # so a store slow to answer is not read again 50 ms later (was 0.05)
     (0.2, 0.003, float("inf"), 0.8),  # the interval counts from the cycle's start
     (0.4, 0.4, 0.1, 1.6), (0.4, 0.4, float("inf"), 1.6),  # a cycle of 0.4 s of CPU: a fifth of a core
     (0.001, 0.001, -3.0, 0.05)],  # a threshold already past: at once, within 50 ms
)
def test_cycles_space_out_by_wall_time_thresholds_by_cpu_time(wall: float, cpu: float, due: float,
                                                              expected: float) -> None:
    assert next_delay(1.0, wall, cpu, due) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("kind", "code"),
    [("late", "W101"), ("dead", "W105"), ("hostcut", "W106"), ("exit", "W108"), ("mismatch", "W102"),
     ("transport", "W104"), ("drift", "W103"), ("straggler", "W107"), ("hooks", "W109")],
)
def test_each_fault_is_reported_the_same_way(kind: str, code: str) -> None:
    fast, full, paths, healthy = run_job([(kind, 5, 12, 8)])
    assert code in {e.code for e in full.events}, [e.line() for e in full.events]
    assert [e.to_json() for e in fast.events] == [e.to_json() for e in full.events]
    assert all(p == "fast" for p, h in zip(paths, healthy, strict=True) if h)
    assert "full" in paths[4:]
    # the incident's cycles ran the detector over the headers' columns, and said the same as the reference
    assert fast.column_cycles >= (1 if kind == "hooks" else 3) and full.column_cycles == 0, fast.column_cycles


def test_garbage_restart_and_skipped_publication_agree() -> None:
    fast, full, paths, _healthy = run_job([("garbage", 2, 3, 4), ("restart", 6, 1, 4), ("skip", 1, 1, 3),
                                          ("skip", 3, 3, 5)])
    assert [e.to_json() for e in fast.events] == [e.to_json() for e in full.events]
    assert {e.code for e in full.events} >= {"W105"}  # three silent publications: dead, then back
    assert sum(p == "fast" for p in paths) >= 10


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(segment, max_size=4), st.sampled_from([(1.0,), (1.0, 0.6, 1.4), (1.2,)]),
       st.sampled_from([None, 0.0, 0.2, 0.9]))
def test_fast_path_matches_full_path(segments: list[tuple[str, int, int, int]], jitter: tuple[float, ...],
                                     stall: float | None) -> None:
    _fast, _full, paths, healthy = run_job(segments, jitter=jitter, stall=stall)
    # the cycles after the lead-in, before any fault, are healthy: all on the fast path
    assert paths[0] == "full"
    assert all(p == "fast" for p in paths[2:4]), paths
    assert all(p == "fast" for p, h in zip(paths, healthy, strict=True) if h) or any(
        kind in ("drift", "exit", "mismatch") for kind, *_ in segments), paths


# --- the screen on plain data ------------------------------------------------------------------------


def _rank_record(rank: int, **changes: object) -> RankRecord:
    groups = {"0": GroupProgress("0", 40, 40), "7": GroupProgress("7", 10, 9, 0.5)} if rank % 2 == 0 else {
        "0": GroupProgress("0", 40, 39, 0.2)}
    marks = tuple(StepMark(s, {"0": 4 * s, **({"7": s} if rank % 2 == 0 else {})}) for s in range(5, 11))
    record = RankRecord(rank=rank, world_size=4, host="h", pid=10 + rank, heartbeat=3, groups=groups,
                        step_marks=marks, published=WALL0)
    return record._replace(**changes)  # type: ignore[arg-type]


def _screen(records: list[RankRecord | bytes], *, now: float = 50.0, changed: float = 50.0,
            state: object = None, **kwargs: object) -> object:
    import numpy as np

    from syncdoctor.watch.screen import header_table, screen
    from syncdoctor.watch.snapshot import DetectorState

    if state is None:
        state = DetectorState(started_at=1.0)
    raws = [r if isinstance(r, bytes) else encode_record(r) for r in records]
    options: dict[str, object] = {"groups": {"0": (0, 1, 2, 3), "7": (0, 2)}, "hooks_said": False,
                                  "stack_gens": np.zeros(4, dtype=np.int64)}
    options.update(kwargs)
    return screen(header_table(raws), now=now, config=CFG, state=state, world_size=4,  # type: ignore[arg-type]
                  changed_at=np.full(4, changed), **options)  # type: ignore[arg-type]


def test_screen_quiet_and_completed_per_group() -> None:
    verdict = _screen([_rank_record(r) for r in range(4)])
    assert verdict.quiet, verdict.reason  # type: ignore[attr-defined]
    assert verdict.completed == {"0": 39, "7": 9}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"state": "starting"}, "not running"),
        ({"state": "exited"}, "not running"),
        ({"source": "hooks"}, "hooks"),
        ({"stack_gen": 2}, "new stack"),
        ({"groups": {"0": GroupProgress("0", 40, 39, 3.1)}}, "stalled"),  # 3.1 + 1 s interval >= suspect 4 s
        ({"groups": {"0": GroupProgress("0", 40, 40), "9": GroupProgress("9", 1, 1)}}, "not read"),
        ({"groups": {str(i): GroupProgress(str(i), 1, 1) for i in range(HEADER_GROUPS + 1)}}, "cannot hold"),
        ({"step_marks": tuple(StepMark(s, {"0": 4 * s + (s == 10)}) for s in range(5, 11))}, "differ at step 10"),
        ({"step_marks": tuple(StepMark(s, {"0": 4 * s}) for s in range(20, 26))}, "lacks the common step"),
        ({"rank": 2}, "another rank"),
    ],
)
def test_screen_not_quiet(change: dict[str, object], reason: str) -> None:
    records = [_rank_record(r) for r in range(4)]
    records[1] = records[1]._replace(**change)  # type: ignore[arg-type]
    verdict = _screen(records)
    assert not verdict.quiet and reason in verdict.reason, verdict.reason  # type: ignore[attr-defined]


def test_screen_not_quiet_for_bad_values_and_state() -> None:
    from syncdoctor.watch.snapshot import DetectorState, Incident

    good = [_rank_record(r) for r in range(4)]
    raw = encode_record(good[3])
    for bad in (b"", raw[:-1], raw[:20], b"SDW\x02" + raw[4:], b"garbage" * 50):
        assert not _screen([*good[:3], bad]).quiet  # type: ignore[attr-defined]
    assert "first cycle" in _screen(good, state=DetectorState()).reason  # type: ignore[attr-defined]
    assert "heartbeat" in _screen(good, changed=48.4).reason  # type: ignore[attr-defined]  # 1.6 s > 1.5 intervals
    assert _screen(good, changed=48.6).quiet  # type: ignore[attr-defined]
    busy = DetectorState(started_at=1.0)
    busy.incidents["W101:0:5:3"] = Incident("W101:0:5:3", "W101", "warning", 1.0, "", "0", 5, (3,))
    assert "incident" in _screen(good, state=busy).reason  # type: ignore[attr-defined]
    asked = DetectorState(started_at=1.0, stack_asked={1: (3, "W101:x")})
    assert "unanswered" in _screen(good, state=asked).reason  # type: ignore[attr-defined]
    answered = [*good[:1], good[1]._replace(stack_gen=3), *good[2:]]
    stacks = __import__("numpy").array([0, 3, 0, 0])
    assert _screen(answered, state=asked, stack_gens=stacks).quiet  # type: ignore[attr-defined]
    inspecting = DetectorState(started_at=1.0, inspect_asked={4242: 47.0})
    assert "process-state" in _screen(good, state=inspecting).reason  # type: ignore[attr-defined]
    expiring = DetectorState(started_at=1.0, pending_waits={("0", 41): (50.0 - CFG.straggler_window_s - 1, {})})
    assert "expire" in _screen(good, state=expiring).reason  # type: ignore[attr-defined]
    full = DetectorState(started_at=1.0, max_pending=10)
    assert "full" in _screen(good, state=full, new_wait_count=11).reason  # type: ignore[attr-defined]
    assert "outside" in _screen(good, groups={"0": (0, 1, 2, 9), "7": (0, 2)}).reason  # type: ignore[attr-defined]
    assert _screen(good, hooks_said=True).quiet  # type: ignore[attr-defined]


def test_new_waits_from_headers_or_decoding() -> None:
    import numpy as np

    from syncdoctor.watch.records import group_id
    from syncdoctor.watch.screen import header_table, new_waits

    waits = tuple(WaitSample("0", 30 + i, 0.1 * (i + 1)) for i in range(10))
    records = [_rank_record(r, waits=waits, waits_total=10) for r in range(4)]
    table = header_table([encode_record(r) for r in records])
    names = {group_id("0"): "0", group_id("7"): "7"}
    pids = np.array([10, 11, 12, 99])
    totals = np.array([10, 8, 1, 10])  # rank 0 unchanged, 1 two new, 2 nine new (header holds 8), 3 new process
    from_headers, to_decode = new_waits(table, pids, totals, names)
    assert from_headers == [(1, [WaitSample("0", 38, 0.9), WaitSample("0", 39, 1.0)])]
    assert from_headers[0][1][1].wait_s == records[1].waits[-1].wait_s == round(1.0, 3)
    assert to_decode == [2, 3]


def test_lazy_records_decode_on_read_and_leave_bad_values_out() -> None:
    from syncdoctor.watch.monitor import LazyRecords

    good = [encode_record(_rank_record(r)) for r in range(4)]
    raws = [good[0], b"garbage", encode_record(_rank_record(0)), good[3]]  # rank 2's key holds rank 0's record
    records = LazyRecords(raws)
    assert records.get(3) == _rank_record(3) and records._cache.keys() == {3}  # one decoded, no more
    assert records.get(1) is None and records.get(2) is None and records.get(9) is None and "x" not in records
    assert sorted(records) == [0, 3] and len(records) == 2 and dict(records)[0] == _rank_record(0)
    with pytest.raises(KeyError):
        records[1]


def test_records_of_another_version_are_named_once(caplog: pytest.LogCaptureFixture) -> None:
    job = SimJob()
    store = job.stores[0]
    old = b"SDW\x03" + bytes(400)  # what a job running an older syncdoctor publishes
    for rank in range(WORLD):
        store.set(job.keys.rank(rank), old)
    monitor = Monitor(ScopedStore(store), job.keys, CFG, WORLD, who="m", clock=lambda: 100.0,
                      wall_clock=lambda: WALL0 + 100.0)
    with caplog.at_level(logging.WARNING, logger="syncdoctor.watch"):
        monitor.cycle()
        monitor.cycle()
    said = [r.getMessage() for r in caplog.records if "records of version" in r.getMessage()]
    assert len(said) == 1 and "version 3" in said[0] and f"reads version {RECORD_VERSION}" in said[0]


def _per_group_reference(table: object, groups: dict[str, tuple[int, ...]], world: int) -> tuple[str, dict]:
    """The screen's group checks written as a plain loop over groups (as it was before GroupIndex)."""
    import numpy as np

    from syncdoctor.watch.records import HEADER_MARKS, group_id

    t = table  # type: ignore[assignment]
    slots = np.arange(HEADER_GROUPS)[None, :] < t["ngroups"][:, None]
    nmarks = t["nmarks"].astype(np.int64)
    marked = nmarks > 0
    latest = t["mark_step"][np.arange(world), np.maximum(nmarks - 1, 0)]
    mark_ok = np.arange(HEADER_MARKS)[None, :] < nmarks[:, None]
    counts = t["mark_entered"].reshape(world, HEADER_MARKS, HEADER_GROUPS)
    completed = {}
    for name, members in groups.items():
        mem = np.asarray(members, dtype=np.int64)
        slot = (t["gid"][mem] == group_id(name)) & slots[mem]
        has, where = slot.any(axis=1), slot.argmax(axis=1)
        if len(mem) and has.all():
            completed[name] = int(t["completed"][mem, where].min())
        if int(marked.sum()) < 2 or int(marked[mem].sum()) < 2:
            continue
        pick = marked[mem]
        mm, mhas, mwhere = mem[pick], has[pick], where[pick]
        common = latest[mm].min()
        hit = (t["mark_step"][mm] == common) & mark_ok[mm]
        if not hit.any(axis=1).all():
            return f"group {name}: a member's header lacks the common step", completed
        values = np.where(mhas, counts[mm, hit.argmax(axis=1), mwhere], 0)
        if (values != values[0]).any():
            return f"group {name}: entered counts differ at step {int(common)}", completed
    return "", completed


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_screen_group_checks_match_a_plain_loop(data: st.DataObject) -> None:
    # many small groups (as tensor-parallel groups per block of ranks) plus the default group; random
    # progress and step marks, some drifting: the vectorised checks must say what a loop over groups says
    import numpy as np

    from syncdoctor.watch.screen import GroupIndex, header_table, screen
    from syncdoctor.watch.snapshot import DetectorState

    world = data.draw(st.integers(2, 12))
    block = data.draw(st.integers(1, 4))
    groups = {"0": tuple(range(world))} | {
        f"t{first}": tuple(range(first, min(first + block, world))) for first in range(0, world, block)}
    if data.draw(st.booleans()):
        groups["empty"] = ()
    steps = sorted(data.draw(st.sets(st.integers(1, 6), max_size=HEADER_GROUPS)))
    records = []
    for rank in range(world):
        mine = ["0", f"t{rank - rank % block}"]
        progress = {g: GroupProgress(g, e, e - data.draw(st.integers(0, 1)))
                    for g in mine for e in [data.draw(st.integers(1, 3))]}
        own_steps = [s for s in steps if data.draw(st.integers(0, 4))]  # some ranks miss some steps
        marks = tuple(StepMark(s, {g: data.draw(st.integers(0, 2)) for g in mine}) for s in own_steps)
        records.append(RankRecord(rank=rank, world_size=world, host="h", pid=10 + rank, heartbeat=3,
                                  groups=progress, step_marks=marks, published=WALL0))
    table = header_table([encode_record(r) for r in records])
    expected_reason, expected_completed = _per_group_reference(table, groups, world)
    event(expected_reason.split(":")[-1].split(" at step")[0].strip() or "quiet")
    for given_groups in (groups, GroupIndex.build(groups, world)):
        verdict = screen(table, now=50.0, config=CFG, state=DetectorState(started_at=1.0), world_size=world,
                         changed_at=np.full(world, 50.0), stack_gens=np.zeros(world, dtype=np.int64),
                         groups=given_groups, hooks_said=True)
        assert verdict.reason == expected_reason
        assert verdict.quiet == (expected_reason == "")
        if verdict.quiet:
            assert verdict.completed == expected_completed
