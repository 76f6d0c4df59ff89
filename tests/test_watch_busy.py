"""Busy or stuck, on plain data: the classification of a rank's samples, the phases its stack makes certain,
the meter on real threads, ``syncdoctor.watch.solo``, and what the detector makes of a late rank that works
alone (W110, never confirmed within its bound) or does not (W101 as ever)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import syncdoctor.watch as watch
from syncdoctor.errors import UsageError
from syncdoctor.watch.activity import CPU_SPINNING, IO_WORKING_BPS, Sample, classify, recognise_phase
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.local import ActivityMeter
from syncdoctor.watch.records import Activity, Solo, decode_record, encode_record
from test_watch_detector import Job, codes

LOOP = (("/job/train.py", "main"), ("/job/train.py", "train"))
SAVE = (*LOOP, ("/job/train.py", "save_checkpoint"), ("/venv/lib/python3.11/site-packages/torch/serialization.py", "save"))


def samples(cpu_per_s: float, io_per_s: float, stacks: list[tuple[tuple[str, str], ...]],
            runq_per_s: float | None = None) -> list[Sample]:
    return [Sample(float(i), cpu_per_s * i, int(io_per_s * i), stack, None if runq_per_s is None else runq_per_s * i)
            for i, stack in enumerate(stacks)]


# --- classification ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("cpu", "io", "stacks", "kind"), [
    (0.0, 0.0, [LOOP] * 4, "stuck"),  # sleeping, blocked in a read or a lock
    (1.0, 0.0, [LOOP] * 4, "spinning"),  # CPU in the same functions
    (0.9, 0.0, [LOOP, SAVE, LOOP, SAVE], "working"),  # the stack changes while it computes
    (0.2, 500e6, [SAVE] * 4, "working"),  # one long write: bytes move
    (0.0, 0.0, [LOOP, SAVE, LOOP, SAVE], "stuck"),  # a changing stack without CPU or bytes is no work
    (0.6, IO_WORKING_BPS / 4, [LOOP, SAVE, LOOP], "working"),
])
def test_classify(cpu, io, stacks, kind) -> None:
    activity = classify(samples(cpu, io, stacks))
    assert activity is not None and activity.kind == kind
    assert activity.stacks == len(set(stacks)) and activity.window_s == len(stacks) - 1


@pytest.mark.parametrize(("cpu", "runq", "stacks", "kind"), [
    (0.3, 0.65, [LOOP] * 4, "spinning"),  # a busy loop on a crowded host: a third of a core, waiting for the rest
    (0.03, 0.6, [LOOP, SAVE, LOOP], "working"),  # a computing thread starved of cores
    (0.02, 0.01, [LOOP] * 4, "stuck"),  # a thread that wakes now and then (a polling sleep)
    (0.0, 0.0, [LOOP] * 4, "stuck"),  # blocked: waits on no run queue
    (0.3, 0.0, [LOOP] * 4, "stuck"),  # a third of a core with cores free: not a busy loop
])
def test_time_waiting_for_a_core_counts_as_wanting_one(cpu, runq, stacks, kind) -> None:
    activity = classify(samples(cpu, 0.0, stacks, runq))
    assert activity is not None and activity.kind == kind
    assert activity.cpu == pytest.approx(cpu)  # the record says the CPU it got


def test_not_measured_yet() -> None:
    assert classify([]) is None
    assert classify(samples(1.0, 0, [LOOP])) is None
    assert classify([Sample(0.0, 0.0, 0, LOOP), Sample(0.2, 0.2, 0, LOOP)]) is None  # under half a second


def test_what_cannot_be_read_is_left_out() -> None:
    no_io = [Sample(float(i), float(i), None, LOOP) for i in range(3)]
    assert classify(no_io).kind == "spinning"  # type: ignore[union-attr]
    nothing = [Sample(float(i), None, None, s) for i, s in enumerate((LOOP, SAVE, LOOP))]
    assert classify(nothing).kind == "working"  # type: ignore[union-attr]


@given(cpu=st.floats(0, 1.0), io=st.floats(0, 1e9), flips=st.lists(st.booleans(), min_size=2, max_size=10),
       runq=st.none() | st.floats(0, 1.0))
def test_classification_properties(cpu: float, io: float, flips: list[bool], runq: float | None) -> None:
    stacks = [SAVE if flip else LOOP for flip in flips]
    activity = classify(samples(cpu, io, stacks, runq))
    assert activity is not None and activity.kind in ("working", "spinning", "stuck")
    if io >= IO_WORKING_BPS:
        assert activity.kind == "working"  # moving bytes is work, whatever the stack
    if activity.kind == "spinning":  # spinning needs CPU wanted (got or waited for) in one unchanging stack
        assert activity.stacks == 1 and cpu + (runq or 0.0) >= CPU_SPINNING
    if cpu == 0 and io == 0 and not runq:
        assert activity.kind == "stuck"
    if runq is None or runq == 0:
        assert activity == classify(samples(cpu, io, stacks))  # nothing waited: the CPU it got decides
    assert (activity.phase == "torch.save") == any(flips)


@pytest.mark.parametrize(("frames", "phase"), [
    (SAVE, "torch.save"),
    ((*LOOP, ("/venv/lib/python3.11/site-packages/torch/distributed/checkpoint/state_dict_saver.py", "save")),
     "torch.distributed.checkpoint"),
    ((*LOOP, ("/venv/lib/python3.11/site-packages/safetensors/torch.py", "save_file")), "safetensors.save_file"),
    # a phase inside another: the outer one says what the job does (DCP's writer calls torch.save)
    ((*LOOP, ("/venv/lib/python3.11/site-packages/torch/distributed/checkpoint/state_dict_saver.py", "save"),
      ("/venv/lib/python3.11/site-packages/torch/distributed/checkpoint/filesystem.py", "_write_item"),
      ("/venv/lib/python3.11/site-packages/torch/serialization.py", "save")), "torch.distributed.checkpoint"),
    ((*LOOP, ("/venv/lib/python3.11/site-packages/transformers/trainer.py", "_save_checkpoint"),
      ("/venv/lib/python3.11/site-packages/safetensors/torch.py", "save_file")), "transformers checkpoint"),
    ((*LOOP, ("/venv/lib/python3.11/site-packages/torch/serialization.py", "load")), ""),  # loading is not saving
    (LOOP, ""),
])
def test_phases_the_stack_makes_certain(frames, phase) -> None:
    assert recognise_phase(frames) == phase


# --- the meter on real threads -----------------------------------------------------------------------------

def _measure(work, seconds: float = 1.6) -> Activity | None:
    """Run ``work`` on this (the main) thread while a second thread samples it, as the watcher does."""
    meter = ActivityMeter(window_s=10)

    def sampler() -> None:
        time.sleep(0.1)  # once the main thread is inside ``work``, and done before it returns
        for _ in range(5):
            meter.sample(time.monotonic())
            time.sleep(seconds / 6)

    thread = threading.Thread(target=sampler)
    thread.start()
    work(seconds)
    thread.join()
    return meter.current()


@pytest.mark.alone  # a spinning thread's CPU share: not with another test process on the same cores
def test_meter_on_a_sleeping_spinning_and_writing_main_thread(tmp_path: Path) -> None:
    def spin(seconds: float) -> None:
        deadline, total = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            total += 1

    def write(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            (tmp_path / "blob").write_bytes(b"x" * (1 << 20))

    assert _measure(time.sleep).kind == "stuck"  # type: ignore[union-attr]
    spinning = _measure(spin)
    assert spinning is not None and spinning.kind == "spinning" and spinning.cpu > 0.5
    writing = _measure(write)
    assert writing is not None and writing.kind == "working" and writing.io_bps > IO_WORKING_BPS


_CROWDED = r"""
import os, sys, threading, time
sys.path.insert(0, sys.argv[1])
from syncdoctor.watch.local import ActivityMeter
cpu = min(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpu})  # this process and three busy ones on one core
spinners = [os.fork() for _ in range(3)]
if 0 in spinners:
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        pass
    os._exit(0)
meter = ActivityMeter(window_s=10)
def sampler():
    time.sleep(0.3)  # once the main thread is in its loop
    for _ in range(6):
        meter.sample(time.monotonic())
        time.sleep(0.3)
thread = threading.Thread(target=sampler)
thread.start()
deadline, total = time.monotonic() + 2.5, 0
while time.monotonic() < deadline:
    total += 1
thread.join()
for pid in spinners:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
activity = meter.current()
print(activity.kind, activity.cpu)
"""


def test_meter_on_a_busy_loop_that_shares_its_core() -> None:
    """A spinning main thread pinned to one core beside three busy processes gets a fraction of the core and
    waits runnable for the rest: spinning, not stuck (CI, a 2-core host: a lab rank's busy loop read as stuck)."""
    import subprocess
    import sys

    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run([sys.executable, "-c", _CROWDED, src], capture_output=True, text=True, timeout=60, check=True)
    kind, cpu = out.stdout.split()
    assert float(cpu) < CPU_SPINNING, out.stdout  # it did not get the core: the CPU share alone says stuck
    assert kind == "spinning", out.stdout


def test_meter_reads_its_proc_files_afresh_through_one_descriptor_each_and_leaves_out_the_unreadable(
        tmp_path: Path) -> None:
    meter = ActivityMeter()
    meter.sample(0.0)
    first = meter.samples[-1]
    if first.io_bytes is None or first.runq_s is None:
        pytest.fail("this host's /proc has the main thread's io and schedstat (the meter's sources)")
    fds = dict(meter._fds)
    assert len(fds) == 2
    (tmp_path / "blob").write_bytes(b"x" * 100_000)  # the main thread writes: its wchar grows
    meter.sample(1.0)
    assert meter._fds == fds  # the same descriptors, read again from their start
    assert meter.samples[-1].io_bytes is not None and meter.samples[-1].io_bytes >= first.io_bytes + 100_000
    meter.close()
    assert not meter._fds
    meter.sample(2.0)
    assert len(meter._fds) == 2  # opened again
    meter.close()
    gone = ActivityMeter()
    gone._io_path = str(tmp_path / "no-such-io")
    gone._sched_path = str(tmp_path / "no-such-schedstat")
    gone.sample(0.0)
    assert gone.samples[-1].io_bytes is None and gone.samples[-1].runq_s is None
    assert gone._io_path is None and gone._sched_path is None and not gone._fds  # not tried again


def test_meter_since_only_looks_at_what_came_after() -> None:
    meter = ActivityMeter()
    for i in range(4):
        meter.samples.append(Sample(float(i), float(i), 0, LOOP if i < 2 else SAVE))
    assert meter.current().kind == "working"  # type: ignore[union-attr]
    assert meter.current(since=2.0).kind == "spinning"  # type: ignore[union-attr]
    assert meter.current(since=3.0) is None


def test_activity_and_solo_travel_in_the_record() -> None:
    from syncdoctor.watch.records import RankRecord

    record = RankRecord(rank=1, world_size=2, activity=Activity("working", 0.87, 5.4e8, 2, "torch.save", 4.0),
                        solo=Solo("checkpoint", 12.5, 900.0))
    back = decode_record(encode_record(record))
    assert back is not None and back.activity == record.activity and back.solo == record.solo
    plain = decode_record(encode_record(RankRecord(rank=1, world_size=2, solo=Solo("eval", 1.0))))
    assert plain is not None and plain.activity is None and plain.solo == Solo("eval", 1.0, None)


# --- solo() ---------------------------------------------------------------------------------------------

class FakeWatcher:
    stopped = False

    def __init__(self) -> None:
        self.phases: list[tuple[int, str, float | None]] = []
        self.count = 0

    def enter_solo(self, name: str, up_to_s: float | None) -> int:
        self.count += 1
        self.phases.append((self.count, name, up_to_s))
        return self.count

    def exit_solo(self, token: int) -> None:
        self.phases = [p for p in self.phases if p[0] != token]


def test_solo_marks_and_unmarks_nested_phases(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeWatcher()
    monkeypatch.setattr(watch, "_current", fake)

    @watch.solo("evaluate", up_to_s=60)
    def evaluate() -> list[str]:
        return [name for _, name, _ in fake.phases]

    with watch.solo("checkpoint"):
        assert [(n, u) for _, n, u in fake.phases] == [("checkpoint", None)]
        assert evaluate() == ["checkpoint", "evaluate"]
        assert evaluate() == ["checkpoint", "evaluate"]  # a decorator runs again
    assert fake.phases == []


def test_solo_without_a_watcher_does_nothing_and_bad_arguments_are_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "_current", None)
    with watch.solo("checkpoint", up_to_s=5):
        pass
    for bad in ({"name": ""}, {"name": "x", "up_to_s": 0}, {"name": "x", "up_to_s": "ten"}):
        with pytest.raises(UsageError):
            watch.solo(**bad)  # type: ignore[arg-type]


# --- the detector ---------------------------------------------------------------------------------------

BUSY = WatchConfig(warn_after_s=3.0, suspect_after_s=1.0, dead_after_s=3.0, confirm_after_s=6.0, interval_s=1.0,
                   busy_after_s=30.0)
WORKING = Activity("working", 0.9, 4e8, 2, "torch.save", 5.0)


def _late_rank_3(job: Job, activity: Activity | None = None, solo: Solo | None = None) -> None:
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    job.ranks[3].activity = activity
    job.ranks[3].solo = solo


def test_a_working_rank_is_info_until_its_bound_then_late() -> None:
    job = Job(BUSY)
    _late_rank_3(job, WORKING)
    job.tick()
    job.answer_stacks("save_checkpoint")
    events = job.run(27)
    assert codes(events) == [("W110", "info")]  # never confirmed within 30 s, though confirm_after_s is 6
    info = events[0]
    assert info.ranks == (3,) and info.waiting_ranks == (0, 1, 2) and "torch.save" in info.title
    assert "expected for up to 30 s" in info.title and info.detail["busy"]["solo"] is False
    late = job.run(3)
    assert codes(late) == [("W101", "warning")] and "past 30 s" in late[0].title
    assert codes(job.run(3)) == [("W101", "confirmed")]  # confirm_after_s - warn_after_s later


def test_the_solo_work_resolves_when_the_rank_arrives() -> None:
    job = Job(BUSY)
    _late_rank_3(job, WORKING)
    assert codes(job.run(5)) == [("W110", "info")]
    job.all_done(5)
    resolved = job.tick()
    assert codes(resolved) == [("W110", "resolved")] and "finished its solo work" in resolved[0].title


def test_a_marked_solo_phase_has_the_users_bound() -> None:
    job = Job(BUSY)
    _late_rank_3(job, Activity("stuck", 0.0, 0.0, 1), Solo("checkpoint", 0.0, 10.0))  # even when idle inside
    events = job.run(6)
    assert codes(events) == [("W110", "info")] and "solo phase 'checkpoint'" in events[0].title
    assert "expected for up to 10 s" in events[0].title and events[0].detail["busy"]["solo"] is True
    for second in range(6):
        job.ranks[3].solo = Solo("checkpoint", 6.0 + second, 10.0)
        job.tick()
    assert ("W101", "warning") in codes(job.events)


@pytest.mark.parametrize("activity", [Activity("stuck", 0.0, 0.0, 1, "", 5.0), Activity("spinning", 1.0, 0.0, 1),
                                      None])
def test_a_stuck_spinning_or_unmeasured_rank_is_late_as_ever(activity) -> None:
    job = Job(BUSY)
    _late_rank_3(job, activity)
    job.tick()
    job.answer_stacks()
    events = job.run(7)
    assert codes(events) == [("W101", "warning"), ("W101", "confirmed")]
    if activity is not None:
        assert f"({activity.kind})" in events[0].title
        assert events[0].detail["late"]["3"]["busy"] == activity.kind


def test_one_busy_and_one_stuck_late_rank_is_late() -> None:
    job = Job(BUSY)
    job.all_done(4)
    job.enter([0, 1], 5)
    job.ranks[2].activity = WORKING
    job.ranks[3].activity = Activity("stuck", 0.0, 0.0, 1)
    job.tick()
    job.answer_stacks()
    assert ("W101", "warning") in codes(job.run(3))


def test_a_rank_that_stops_working_is_late_at_once() -> None:
    job = Job(BUSY)
    _late_rank_3(job, WORKING)
    assert codes(job.run(8)) == [("W110", "info")]
    job.ranks[3].activity = Activity("stuck", 0.0, 0.0, 1, "", 5.0)
    job.answer_stacks()
    # late now, but confirmed only once it has been stuck as long as any late rank must be (a checkpoint that
    # pauses for a slow flush must not be ended because the others had waited long already)
    assert codes(job.run(2)) == [("W101", "warning")]
    assert codes(job.run(1)) == [("W101", "confirmed")]  # stuck for confirm_after_s - warn_after_s = 3 s
