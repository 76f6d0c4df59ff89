"""The pure detector on plain records: each W code fires on its fault and stays quiet otherwise.

No sleeping, no torch, no store: a tiny simulated job advances a fake monitor clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from columns_check import detect_both
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.records import (
    Activity,
    Frame,
    GroupProgress,
    RankRecord,
    Signature,
    Solo,
    StackReport,
    StepMark,
    WaitSample,
)
from syncdoctor.watch.snapshot import DetectorState, Snapshot

AR = Signature("all_reduce", ((1000,),), ("Float",), ((1000,),))
BC = Signature("broadcast", ((1000,),), ("Float",), ((1000,),))
CFG = WatchConfig(warn_after_s=3.0, suspect_after_s=1.0, dead_after_s=3.0, confirm_after_s=20.0, interval_s=1.0)


@dataclass
class FakeRank:
    rank: int
    host: str
    node: int
    entered: int = 0
    completed: int = 0
    stalled: float | None = None
    sig: Signature | None = None
    step: int | None = None
    state: str = "running"
    heartbeat: int = 0
    frozen: bool = False  # heartbeat stops
    marks: list[StepMark] = field(default_factory=list)
    waits: list[WaitSample] = field(default_factory=list)
    inspected: dict[int, str] = field(default_factory=dict)
    error: str | None = None
    quiet: float = 0.0
    extra: dict[str, GroupProgress] = field(default_factory=dict)
    source: str = "flight_recorder"
    activity: Activity | None = None
    solo: Solo | None = None
    read_age: float | None = None  # the age of the progress reading its record carries

    def record(self, world: int) -> RankRecord:
        if not self.frozen:
            self.heartbeat += 1
        return RankRecord(
            rank=self.rank, world_size=world, host=self.host, node=self.node, pid=1000 + self.rank,
            heartbeat=self.heartbeat, state=self.state, step=self.step, quiet_s=self.quiet,
            groups={"0": GroupProgress("0", self.entered, self.completed, self.stalled, self.sig,
                                       self.completed + 1 if self.sig else 0), **self.extra},
            step_marks=tuple(self.marks), waits=tuple(self.waits), inspected=dict(self.inspected),
            error=self.error, source=self.source, activity=self.activity, solo=self.solo, read_age_s=self.read_age,
        )


class Job:
    """Four ranks on two hosts (0,1 on host0; 2,3 on host1) and a monitor clock stepping 1 s."""

    def __init__(self, config: WatchConfig = CFG, world: int = 4) -> None:
        self.config = config
        self.world = world
        self.ranks = [FakeRank(r, f"host{r * 2 // world}", r * 2 // world) for r in range(world)]
        self.state = DetectorState()
        self.now = 100.0
        self.stacks: dict[int, StackReport] = {}
        self.requested: dict[int, int] = {}
        self.events: list[Event] = []

    def tick(self, seconds: float = 1.0) -> list[Event]:
        self.now += seconds
        for rank in self.ranks:
            if not rank.frozen:
                rank.quiet += seconds
                if rank.stalled is not None:
                    rank.stalled += seconds
        records = {r.rank: r.record(self.world) for r in self.ranks if r.state != "never"}
        snap = Snapshot(now=self.now, wall=self.now, world_size=self.world, records=records,
                        groups={"0": tuple(range(self.world)), "1": tuple(range(self.world))}, stacks=dict(self.stacks))
        result = detect_both(snap, self.config, self.state)
        self.requested.update(result.requests.stacks)
        self.events.extend(result.events)
        return list(result.events)

    def run(self, seconds: int) -> list[Event]:
        out: list[Event] = []
        for _ in range(seconds):
            out.extend(self.tick())
        return out

    def all_done(self, seq: int) -> None:
        for r in self.ranks:
            r.entered = r.completed = seq
            r.stalled = None
            r.sig = None
            r.quiet = 0.0

    def enter(self, ranks: list[int], seq: int, sig: Signature = AR) -> None:
        for r in ranks:
            fr = self.ranks[r]
            fr.entered, fr.completed, fr.stalled, fr.sig, fr.quiet = seq, seq - 1, 0.0, sig, 0.0

    def answer_stacks(self, where: str = "load_batch", inside: bool = False) -> None:
        """Each asked rank's stack: in ``where`` of the training script, and (``inside``) in a collective called
        from there, as a rank waiting in one is captured (its innermost user frame still ``where``)."""
        for rank, gen in self.requested.items():
            frames = (Frame("/job/train.py", 10, "main"), Frame("/job/train.py", 88, where))
            user = frames[-1]
            if inside:
                frames += (C10D_FRAME,)
            self.stacks[rank] = StackReport(rank, gen, frames, user)


C10D_FRAME = Frame("/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", 2501, "all_reduce")


def codes(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.code, e.status) for e in events]


def test_clean_training_gives_no_event() -> None:
    job = Job()
    for seq in range(1, 200):
        job.all_done(seq)
        for r in job.ranks:
            r.step = seq
            r.marks = [StepMark(seq, {"0": seq})]
        assert job.tick(0.2) == []


def test_a_pause_on_every_rank_together_gives_no_event() -> None:
    job = Job()
    job.all_done(10)
    assert job.run(30) == []  # 30 s of checkpointing: nobody is inside a collective


def test_late_rank_named_with_its_function_then_resolved() -> None:
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    assert job.tick() == []
    assert job.requested == {3: 1}  # stack asked at suspect time (1 s), before the warning
    job.answer_stacks()
    events = job.run(2)
    assert codes(events) == [("W101", "warning")]
    event = events[0]
    assert event.ranks == (3,) and event.hosts == ("host1",) and event.pids == (1003,)
    assert event.seq == 5 and event.group == "0" and event.waiting_ranks == (0, 1, 2)
    assert event.signature == AR and event.waited_s is not None and 3.0 <= event.waited_s < 4.0
    assert event.detail["where"] == "load_batch (train.py:88)"
    assert "load_batch" in event.line() and "ranks=3" in event.line()
    assert "no progress" in event.detail["late"]["3"]["activity"]
    assert job.run(10) == []  # reported once
    assert codes(job.run(10)) == [("W101", "confirmed")]  # confirm_after_s = 20
    job.all_done(5)
    resolved = job.tick()
    assert codes(resolved) == [("W101", "resolved")] and resolved[0].ranks == (3,)


def test_late_rank_waits_for_its_stack_but_not_forever() -> None:
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    assert job.run(3) == []  # warn reached at 3 s, but the stack is not there yet
    events = job.run(2)
    assert codes(events) == [("W101", "warning")]
    assert "stack not captured" in events[0].detail["late"]["3"]["stack_note"]


def test_the_monitor_is_told_when_to_look_again_for_the_stack() -> None:
    """At suspicion (to ask for the stack), then at the warning; an event held for its stack only is
    looked at again a quarter interval later, not one interval later (CI: named 1 s late under load)."""
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    job.tick(0.4)
    assert job.state.due_at == pytest.approx(job.now + 0.6)  # suspect_after_s = 1
    job.tick(0.6)
    assert job.requested == {3: 1} and job.state.due_at == pytest.approx(job.now + 2.0)  # warn_after_s = 3
    assert job.tick(2.0) == []  # warned, but the stack has not come
    assert job.state.due_at == pytest.approx(job.now + 0.25)
    job.answer_stacks()
    events = job.tick(0.25)
    assert codes(events) == [("W101", "warning")] and events[0].detail["where"] == "load_batch (train.py:88)"


def test_a_short_wait_is_not_reported() -> None:
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    assert job.run(2) == []
    job.all_done(5)
    assert job.run(5) == []


def test_mismatch_names_the_odd_rank_with_both_signatures() -> None:
    job = Job()
    job.all_done(4)
    job.enter([0, 2, 3], 5, AR)
    job.enter([1], 5, BC)
    assert job.run(2) == []
    events = job.run(2)
    assert codes(events) == [("W102", "confirmed")]
    event = events[0]
    assert event.ranks == (1,) and event.signature == AR and event.other_signature == BC
    assert "broadcast" in event.title and "all_reduce" in event.title


def test_transport_hang_when_everyone_entered_the_same_collective() -> None:
    job = Job()
    job.all_done(7)
    job.enter([0, 1, 2, 3], 8, AR)
    assert job.run(2) == []
    events = job.run(2)
    assert codes(events) == [("W104", "warning")]
    assert events[0].ranks == () and events[0].waiting_ranks == (0, 1, 2, 3)
    assert "syncdoctor probe" in events[0].detail["next"]


def test_transport_hang_waits_for_signatures() -> None:
    job = Job()
    job.all_done(7)
    job.enter([0, 1, 2, 3], 8, AR)
    job.ranks[2].sig = None
    assert job.run(4) == []
    events = job.run(2)
    assert codes(events) == [("W104", "warning")] and events[0].detail["signatures_unknown_for"] == "2"


def test_frozen_rank_is_dead_and_its_process_state_is_told() -> None:
    job = Job()
    job.all_done(4)
    job.ranks[3].frozen = True
    job.enter([0, 1, 2], 5)
    events = job.run(2)
    assert not [e for e in events if e.code == "W105"]
    job.ranks[2].inspected = {1003: "stopped"}
    events = job.run(2)
    dead = [e for e in events if e.code == "W105"]
    assert len(dead) == 1 and dead[0].ranks == (3,) and dead[0].status == "confirmed"
    assert "stopped (SIGSTOP" in dead[0].title and dead[0].seq == 5 and dead[0].waiting_ranks == (0, 1, 2)
    assert dead[0].detail["process"] == {"3": "stopped"}
    job.ranks[3].frozen = False  # SIGCONT: now merely late, which supersedes the dead-rank event
    assert codes(job.tick()) == [("W101", "warning")]


def test_rank_frozen_inside_the_collective_then_resumed() -> None:
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2, 3], 5)
    job.ranks[3].frozen = True
    events = job.run(2)
    job.ranks[2].inspected = {1003: "gone"}  # rank 2, same host, answers the monitor's question
    events += job.run(2)
    assert codes(events) == [("W105", "confirmed")] and "process is gone" in events[0].title
    assert events[0].waiting_ranks == (0, 1, 2, 3) and events[0].detail["inside"] == {"3": ["0 #5"]}
    job.ranks[3].frozen = False
    job.all_done(5)
    assert codes(job.tick()) == [("W105", "resolved")]


def test_late_rank_that_dies_is_reported_dead_without_a_resolution_of_the_late_event() -> None:
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    job.tick()
    job.answer_stacks()
    job.run(2)
    job.ranks[3].frozen = True
    events = job.run(6)  # nobody answers the process-state question: reported after a short grace
    assert ("W105", "confirmed") in codes(events)
    assert ("W101", "resolved") not in codes(events)


def test_host_cut_names_the_host() -> None:
    job = Job()
    job.all_done(4)
    job.ranks[2].frozen = job.ranks[3].frozen = True
    job.enter([0, 1], 5)
    events = [e for e in job.run(4) if e.code in ("W105", "W106")]
    assert codes(events) == [("W106", "confirmed")]
    assert events[0].ranks == (2, 3) and events[0].hosts == ("host1",) and events[0].nodes == ("host1",)
    assert [s.node for s in events[0].suspect_nodes] == ["host1"]


def test_one_dead_rank_on_a_host_is_not_a_host_cut() -> None:
    job = Job()
    job.ranks[3].frozen = True
    assert job.run(4) == []  # waiting for rank 2 to tell the process state
    assert job.state.inspect_asked == {1003: 103.0}  # at 1.5 intervals of silence
    events = job.run(2)
    assert codes(events) == [("W105", "confirmed")] and events[0].ranks == (3,)
    assert "dead, frozen, or its host is cut off" in events[0].title


def test_rank_that_never_reports() -> None:
    job = Job()
    job.ranks[3].state = "never"
    events = job.run(4)
    assert codes(events) == [("W105", "confirmed")] and "never reported" in events[0].title


def test_a_rank_whose_record_is_missing_from_one_read_is_not_one_that_never_reported() -> None:
    # a CI lab run (a loaded machine, the end of the job): rank 1's record absent from one read of the node values
    # was taken for a rank that never reported (W105 at once)
    job = Job()
    job.run(4)
    job.ranks[1].state = "never"  # absent from the read
    assert job.run(2) == []  # within dead_s: no event
    job.ranks[1].state = "running"
    assert job.run(3) == []  # back: nothing to resolve
    job.ranks[1].state = "never"
    events = job.run(5)  # absent past dead_s: silent since its last heartbeat
    assert codes(events) == [("W105", "confirmed")] and events[0].ranks == (1,)
    assert "never reported" not in events[0].title and "no longer in the job's store" in events[0].title


def test_rank_that_exited_while_others_wait() -> None:
    job = Job()
    job.all_done(4)
    job.ranks[3].state = "exited"
    job.enter([0, 1, 2], 5)
    events = job.run(4)
    assert codes(events) == [("W108", "confirmed")] and events[0].ranks == (3,)
    job.all_done(9)
    job.ranks[3].state = "exited"
    assert job.run(3) == []  # sticky: no "resolved" for a rank that left


def test_normal_end_of_job_gives_no_event() -> None:
    job = Job()
    job.all_done(50)
    for r in job.ranks:
        r.state = "exited"
    job.ranks[0].state = "running"
    assert job.run(20) == []


def test_skipped_collective_is_seen_at_the_step_marker() -> None:
    job = Job()
    job.all_done(6)
    for r in job.ranks:
        r.marks = [StepMark(4, {"0": 4}), StepMark(5, {"0": 5})]
    job.ranks[1].marks = [StepMark(4, {"0": 4}), StepMark(5, {"0": 4}), StepMark(6, {"0": 5})]
    events = job.tick()
    assert codes(events) == [("W103", "confirmed")]
    assert events[0].ranks == (1,) and events[0].detail["step"] == 5 and "1 fewer" in events[0].title
    assert job.run(3) == []


def test_same_counts_at_each_step_is_not_drift() -> None:
    job = Job()
    for r in job.ranks:
        r.marks = [StepMark(k, {"0": 2 * k}) for k in range(1, 6)]
    job.ranks[2].marks = job.ranks[2].marks[:3]  # rank 2 is just behind: fewer marks, same counts
    assert job.run(2) == []


def _straggle(job: Job, last: int, lag: float, seqs: range) -> None:
    for seq in seqs:
        for r in job.ranks:
            if r.rank != last:
                r.waits.append(WaitSample("0", seq, lag + 0.01 * r.rank))
        job.all_done(seq)
        job.tick(0.5)


def test_chronic_straggler() -> None:
    job = Job()
    _straggle(job, last=3, lag=0.4, seqs=range(1, 8))
    assert not [e for e in job.events if e.code == "W107"]  # not enough evidence yet (min 10)
    _straggle(job, last=3, lag=0.4, seqs=range(8, 14))
    events = [e for e in job.events if e.code == "W107"]
    assert codes(events) == [("W107", "warning")] and events[0].ranks == (3,)
    assert events[0].detail["share"] == 1.0 and 0.39 < events[0].detail["lag_p50"] < 0.43


def test_everyone_waiting_alike_is_not_a_straggler() -> None:
    job = Job()
    for seq in range(1, 30):
        for r in job.ranks:
            r.waits.append(WaitSample("0", seq, 0.3))
        job.all_done(seq)
        job.tick(0.5)
    assert job.events == []


def test_rotating_last_rank_is_not_a_straggler() -> None:
    job = Job()
    for seq in range(1, 30):
        _straggle(job, last=seq % 4, lag=0.3, seqs=range(seq, seq + 1))
    assert job.events == []


@pytest.mark.parametrize("name", ["interval_s", "warn_after_s"])
def test_config_rejects_nonsense(name: str) -> None:
    from syncdoctor.errors import UsageError

    with pytest.raises(UsageError):
        WatchConfig(**{name: 0})


def test_cross_group_deadlock_from_a_skipped_collective() -> None:
    """Rank 1 skipped the metric all_reduce (group 1) and waits in the next gradient all_reduce (group 0)."""
    job = Job()
    job.all_done(4)
    for r in job.ranks:
        r.extra = {"1": GroupProgress("1", 2, 2)}
    for r in (0, 2, 3):
        job.ranks[r].extra = {"1": GroupProgress("1", 3, 2, 0.0, AR, 3)}
    job.enter([1], 5)
    events = []
    for _ in range(4):
        for r in (0, 2, 3):
            g = job.ranks[r].extra["1"]
            job.ranks[r].extra["1"] = GroupProgress("1", 3, 2, (g.stalled_s or 0) + 1, AR, 3)
        events += job.tick()
    assert codes(events) == [("W103", "confirmed")]
    event = events[0]
    assert event.ranks == (1,) and event.group == "1" and event.seq == 3 and event.waiting_ranks == (0, 2, 3)
    assert "skipped" in event.title and event.detail["other_group"] == "0"


def test_ranks_stuck_in_a_transport_hang_are_not_called_late_elsewhere() -> None:
    """Ranks 2,3 hang inside group 0's all_reduce; ranks 0,1 finished it and wait in group 1 for them."""
    job = Job()
    job.all_done(7)
    job.enter([0, 1, 2, 3], 8, AR)
    for r in (0, 1):
        job.ranks[r].completed = 8
        job.ranks[r].stalled = None
        job.ranks[r].sig = None
        job.ranks[r].extra = {"1": GroupProgress("1", 3, 2, 0.0, AR, 3)}
    for r in (2, 3):
        job.ranks[r].extra = {"1": GroupProgress("1", 2, 2)}
    events = []
    for _ in range(6):
        for r in (0, 1):
            g = job.ranks[r].extra["1"]
            job.ranks[r].extra["1"] = GroupProgress("1", 3, 2, (g.stalled_s or 0) + 1, AR, 3)
        events += job.tick()
    assert codes(events) == [("W104", "warning")]
    assert "completed on ranks 0-1 but not on ranks 2-3" in events[0].title


def test_a_rank_stuck_in_a_collective_its_peers_completed_is_not_late_in_the_next() -> None:
    """A link cut while every rank is in group 1's all_reduce #3 (a metric): rank 1's last chunk is lost, its
    peers complete #3 and enter group 0's #8, where they wait for rank 1. Rank 1's wait in #3 reads 0.6 s
    shorter than theirs (each is known to a sampling interval), so theirs crosses the threshold first: still
    a transport hang of #3 with rank 1 stuck inside it, never rank 1 late for #8 (seen once in CI)."""
    job = Job()
    job.all_done(7)
    job.enter([0, 2, 3], 8, AR)
    for r in (0, 2, 3):
        job.ranks[r].stalled = 0.6
        job.ranks[r].extra = {"1": GroupProgress("1", 3, 3)}
    job.ranks[1].extra = {"1": GroupProgress("1", 3, 2, 0.0, AR, 3)}
    events = []
    for _ in range(12):
        g = job.ranks[1].extra["1"]
        job.ranks[1].extra["1"] = GroupProgress("1", 3, 2, (g.stalled_s or 0) + 0.5, AR, 3)
        events += job.tick(0.5)
        job.answer_stacks("reduce_metric", inside=True)
    assert codes(events) == [("W104", "warning")], [e.title for e in events]
    assert events[0].group == "1" and events[0].seq == 3 and events[0].ranks == ()
    assert "completed on ranks 0,2-3 but not on rank 1" in events[0].title, events[0].title


def test_a_record_older_than_the_peers_completion_is_no_evidence_of_a_hang() -> None:
    """Rank 1's last record still shows it inside #8, its peers' newer records show #8 done: wait for a
    newer record from rank 1 before calling it a hang (it arrives and says done)."""
    job = Job()
    job.all_done(7)
    job.enter([0, 1, 2, 3], 8, AR)
    assert job.run(2) == []
    for r in (0, 2, 3):
        job.ranks[r].completed, job.ranks[r].stalled, job.ranks[r].sig = 8, None, None
    job.ranks[1].frozen = True  # its record of 2 s ago is all the monitor has this cycle
    assert job.tick(1.5) == []
    job.ranks[1].frozen = False
    job.all_done(8)
    assert job.run(3) == []


def test_late_rank_resolves_even_when_its_peer_record_lags_behind() -> None:
    """Rank 3 arrived and its record says so, rank 0's record still shows it waiting: no W104 from that, and
    the late-rank event resolves (the collective completed on the others, so it is over at once)."""
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    job.tick()
    job.answer_stacks()
    assert codes(job.run(3)) == [("W101", "warning")]
    for r in (1, 2, 3):
        fr = job.ranks[r]
        fr.entered = fr.completed = 5
        fr.stalled, fr.sig, fr.quiet = None, None, 0.0
    job.ranks[0].frozen = True  # its next record is late
    events = job.tick(0.5)
    job.ranks[0].frozen = False
    job.all_done(5)
    events += job.tick(0.5)
    assert codes(events) == [("W101", "resolved")]


def test_a_late_rank_whose_records_carry_an_old_reading_is_late_not_hung() -> None:
    """Ranks 0-2 completed all_reduce #5 and wait in #6; rank 3 completed #5 too and sleeps before #6, but its
    sampler's last reading was taken inside #5 and its publisher keeps publishing that reading with fresh
    heartbeats (the reading held up: seen twice in one CI run). Its records say how old the reading is:
    no evidence of a transport hang in #5, so rank 3 is named late. Without the reading's age the same records
    read as a W104 (the second half), unless its stack says it left the collective (the first half of the third).
    """
    def play(with_age: bool, inside: bool = False) -> list[Event]:
        job = Job()
        job.all_done(4)
        job.enter([0, 1, 2, 3], 5)
        job.tick(0.2)
        for r in (0, 1, 2):
            fr = job.ranks[r]
            fr.completed = 5
            fr.entered, fr.stalled, fr.sig, fr.quiet = 6, 0.0, AR, 0.0
        job.ranks[3].read_age = 0.2 if with_age else None
        events = []
        for _ in range(8):
            events += job.tick()
            job.answer_stacks(inside=inside)
            if with_age:
                job.ranks[3].read_age = (job.ranks[3].read_age or 0.0) + 1.0
        return events

    events = play(with_age=True)
    assert codes(events) == [("W101", "warning")], [e.title for e in events]
    assert events[0].ranks == (3,), events[0].title
    stale = play(with_age=False, inside=True)
    assert [e.code for e in stale] == ["W104"], [e.title for e in stale]
    left = play(with_age=False)  # its stack in load_batch: it left #5
    assert [(e.code, e.ranks) for e in left] == [("W101", (3,))], [e.title for e in left]


def test_a_stale_reading_inside_a_broadcast_neither_hides_a_stuck_relay_nor_goes_silent() -> None:
    """Broadcast #5: ranks 0 and 2 finished it and wait in all_reduce #6; rank 3 shows itself inside #5 with a
    reading its publisher could not refresh. With rank 1 stuck inside #5 too (fresh readings: the relay rank 3
    receives from), the hang in #5 names rank 1, whose readings are evidence, and not rank 3 as late. Alone
    (rank 1 finished as well), rank 3 is still named: late for #6, the one rank its peers wait for (leaving it
    inside #5 instead would keep the watcher silent until its reading refreshes, if it ever does)."""
    def play(relay_stuck: bool) -> list[Event]:
        job = Job()
        job.all_done(4)
        job.enter([0, 1, 2, 3], 5, BC)
        job.tick(0.2)
        for r in (0, 2) if relay_stuck else (0, 1, 2):
            fr = job.ranks[r]
            fr.completed = 5
            fr.entered, fr.stalled, fr.sig, fr.quiet = 6, 0.0, AR, 0.0
        job.ranks[3].read_age = 0.2
        events = []
        for _ in range(8):
            events += job.tick()
            job.answer_stacks(inside=True)  # (the relay waits in the broadcast; rank 3's reading is stale)
            job.ranks[3].read_age = (job.ranks[3].read_age or 0.0) + 1.0
        return events

    relay = play(relay_stuck=True)
    assert [e.code for e in relay] == ["W104"], [e.title for e in relay]
    assert relay[0].title.endswith("not on rank 1 for 5.2 s: not a late rank: the network, the transport or a GPU "
                                   "ahead of it is stuck") and "broadcast" in relay[0].title, relay[0].title
    alone = play(relay_stuck=False)
    assert codes(alone) == [("W101", "warning")] and alone[0].ranks == (3,), [e.title for e in alone]


def test_a_stale_reading_is_not_settled_while_a_member_is_down() -> None:
    """Seen in the lab on a loaded machine: rank 3 is stopped inside all_reduce #28 after delivering its part to
    rank 0 only, so rank 0 completed #28 and waits in #29 while ranks 1 and 2 still wait inside #28, their readings
    held up. A peer's completion says nothing of theirs while a member is down: rank 3 is named, not ranks 1 and 2
    as late for #29 (which the stale-reading settlement alone would say)."""
    job = Job()
    job.all_done(27)
    job.enter([0, 1, 2, 3], 28)
    job.tick(0.2)
    fr0 = job.ranks[0]
    fr0.completed = 28
    fr0.entered, fr0.stalled, fr0.sig, fr0.quiet = 29, 0.0, AR, 0.0
    job.ranks[3].frozen = True
    for r in (1, 2):
        job.ranks[r].read_age = 0.2
    events: list[Event] = []
    for _ in range(8):
        events += job.tick()
        job.answer_stacks()
        for r in (1, 2):
            job.ranks[r].read_age = (job.ranks[r].read_age or 0.0) + 1.0
    assert not [e for e in events if e.code == "W101"], [e.title for e in events]
    assert [e.ranks for e in events if e.status != "resolved"] == [(3,)], [e.title for e in events]


def test_a_completed_all_reduce_proves_the_late_rank_record_is_just_old() -> None:
    """At the job's end the monitor reads its own fresh goodbye (completed #5) and its peers' older records
    (still waiting, rank 3 not entered): an all_reduce completes only when all entered, so this resolves."""
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    job.tick()
    job.answer_stacks()
    assert codes(job.run(3)) == [("W101", "warning")]
    fr0 = job.ranks[0]
    fr0.entered = fr0.completed = 7
    fr0.stalled, fr0.sig, fr0.state = None, None, "exited"
    for r in (1, 2, 3):
        job.ranks[r].frozen = True  # their newer records are not there yet
    assert codes(job.tick(0.2)) == [("W101", "resolved")]


@pytest.mark.parametrize(("lag", "expected"), [(0.8, 2.8), (100.0, 3.0), (-50.0, 2.0)])
def test_wait_uses_the_publication_time_within_one_interval(lag: float, expected: float) -> None:
    """Waiters published 2.0 s of stall `lag` s ago (their wall clock); the monitor saw the records just now.
    Agreeing clocks add the lag; a skewed clock adds at most one interval (1 s), never less than nothing."""
    def rec(rank: int, entered: int, stalled: float | None, beat: int = 1) -> RankRecord:
        return RankRecord(rank=rank, world_size=2, host="h", heartbeat=beat, published=1000.0 - lag,
                          groups={"0": GroupProgress("0", entered, 4, stalled, AR if stalled else None, 5)})

    config = WatchConfig(warn_after_s=2.5, suspect_after_s=1.0, interval_s=1.0, stacks=False)
    state = DetectorState()
    for beat in (1, 2):  # a late rank is named once a second record of it still shows it late
        snap = Snapshot(now=50.0, wall=1000.0, world_size=2, records={0: rec(0, 5, 2.0), 1: rec(1, 4, None, beat)},
                        groups={"0": (0, 1)})
        events = detect_both(snap, config, state).events
    if expected >= 2.5:
        assert [e.code for e in events] == ["W101"] and events[0].waited_s == pytest.approx(expected)
    else:
        assert events == ()


def test_late_again_before_the_monitor_saw_it_arrive_is_a_new_incident() -> None:
    """Rank 3 arrives at #5 and is late again at #6 before the next cycle: the first incident resolves (its
    collective completed) and the second is raised once a newer record confirms rank 3 as the root."""
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    job.tick()
    job.answer_stacks()
    assert codes(job.run(3)) == [("W101", "warning")]
    job.all_done(5)
    job.enter([0, 1, 2], 6)  # the next late episode, in the same cycle
    first = job.tick()
    job.answer_stacks()
    later = job.run(4)
    assert codes(first) == [("W101", "resolved")] and first[0].seq == 5
    assert codes(later) == [("W101", "warning")] and later[0].seq == 6 and later[0].ranks == (3,)


def test_dead_rank_whose_last_record_was_published_mid_collective() -> None:
    """Rank 3 froze after collective #5, but its last record was published while it was inside #5: the
    others wait in #6 for it, and the dead-rank event says so."""
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2, 3], 5)
    job.tick()
    job.ranks[3].frozen = True  # its record: inside #5; in truth it completed #5 and froze before #6
    job.all_done(5)
    job.ranks[3].entered, job.ranks[3].completed = 5, 4
    job.enter([0, 1, 2], 6)
    dead = [e for e in job.run(6) if e.code == "W105"]
    assert len(dead) == 1 and dead[0].ranks == (3,) and dead[0].waiting_ranks == (0, 1, 2) and dead[0].seq == 6


def test_a_lagging_completion_on_a_rank_already_in_the_next_collective_is_not_a_hang() -> None:
    """Seen under mpirun in the lab: rank 2 entered #5 and waits in it for the late rank 3, but its record
    (gloo's Flight Recorder) still shows #4 unfinished, which ranks 0, 1 and 3 completed. That is the late
    rank 3, not a transport hang of #4 on rank 2."""
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    job.ranks[2].completed = 3  # its completion of #4 not marked yet
    job.tick()
    job.answer_stacks()
    events = job.run(3)
    assert codes(events) == [("W101", "warning")]
    assert events[0].ranks == (3,) and events[0].seq == 5 and events[0].waiting_ranks == (0, 1, 2)
    assert not [e for e in job.run(5) if e.code == "W104"]


def test_a_collective_stuck_on_a_rank_that_moved_on_is_still_a_hang() -> None:
    """Rank 2 really never finishes #4 (async collectives: it entered #5 meanwhile) and neither #5 completes
    anywhere: everyone is inside #5, a transport hang, not a late rank."""
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2, 3], 5)
    job.ranks[2].completed = 3
    job.tick()
    events = job.run(6)
    assert [e.code for e in events if e.status != "resolved"][:1] == ["W104"]
    assert not [e for e in events if e.code == "W101"]


def _recorder_lags(where: tuple[Frame, ...], native: tuple[str, ...] = ()) -> list[Event]:
    """Three ranks: ranks 0 and 1 completed all_reduce #20 and wait in #21; rank 2's fresh readings still show #20
    unfinished. Each rank asked for its stack answers with ``where`` below ``main`` (and, given ``native``, as
    a thread in a native call with those native frames)."""
    job = Job(world=3)
    job.all_done(19)
    job.enter([0, 1, 2], 20)
    job.tick(0.2)
    for r in (0, 1):
        fr = job.ranks[r]
        fr.completed = 20
        fr.entered, fr.stalled, fr.sig, fr.quiet = 21, 0.0, AR, 0.0
    job.ranks[2].read_age = 0.01  # fresh readings: the recorder, not the sampler, lags
    events: list[Event] = []
    for _ in range(6):
        events += job.tick()
        for rank, gen in job.requested.items():
            frames = (Frame("/job/train.py", 10, "main"), *where)
            job.stacks[rank] = StackReport(rank, gen, frames, frames[1], in_native=bool(native), native=native)
    assert job.requested, "the rank behind was never asked for its stack"
    return events


def test_a_late_rank_whose_recorder_lags_behind_its_return_is_late_not_a_transport_hang() -> None:
    """Seen in CI (3 local gloo ranks on a loaded host): rank 2 returned from all_reduce #20 and slept in its data
    loading; its Flight Recorder still showed #20 unfinished, with fresh readings, while ranks 0 and 1 completed it
    and waited in #21. Counted as it stood, #20 was entered by all and completed by two: a transport hang (W104)
    naming no rank. The stack it sends when asked shows it outside any collective: late for #21, named."""
    asleep = _recorder_lags((Frame("/job/train.py", 41, "load_batch"),))
    assert [(e.code, e.ranks) for e in asleep] == [("W101", (2,))], [e.title for e in asleep]
    assert "#21" in asleep[0].title, asleep[0].title
    # really stuck inside #20 (its last part never arrived): its stack is in the collective, the hang stands
    inside = _recorder_lags((Frame("/job/train.py", 41, "reduce_metric"), C10D_FRAME))
    assert [(e.code, e.ranks) for e in inside] == [("W104", ())], [e.title for e in inside]


@pytest.mark.parametrize("frame", [
    # DDP launches and waits on its bucket all_reduce from C++ inside backward(): no torch.distributed frame
    Frame("/venv/lib/python3.11/site-packages/torch/autograd/graph.py", 825, "_engine_run_backward"),
    # and in its forward (buffers broadcast, the previous iteration's unused-parameter bookkeeping)
    Frame("/venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", 1633, "forward"),
    # a library waiting on the work handle it keeps (DeepSpeed ZeRO-3's all_gather handle)
    Frame("/venv/lib/python3.11/site-packages/deepspeed/runtime/zero/partition_parameters.py", 780, "wait"),
    # a CUDA synchronisation behind a collective on the stream (Windows paths too)
    Frame("C:\\venv\\Lib\\site-packages\\torch\\cuda\\__init__.py", 954, "synchronize"),
    # a functional collective's wait (FSDP2, DTensor, compiled code) through torch's operator dispatch
    Frame("/venv/lib/python3.11/site-packages/torch/_ops.py", 1123, "__call__"),
])
def test_a_rank_waiting_in_a_collective_without_a_c10d_frame_is_not_counted_as_having_left(frame: Frame) -> None:
    """A rank behind a collective a peer completed whose main thread waits on it from a place with no
    torch.distributed frame of Python (DDP's backward, a library's work handle, a CUDA synchronisation) has not
    left it: the hang stands (W104), it is not named late for the next collective."""
    events = _recorder_lags((Frame("/job/train.py", 60, "train_step"), frame))
    assert [(e.code, e.ranks) for e in events] == [("W104", ())], [e.title for e in events]


SITE = "/venv/lib/python3.11/site-packages"
DATALOADER = Frame(f"{SITE}/torch/utils/data/dataloader.py", 708, "__next__")


@pytest.mark.parametrize("where", [
    # Megatron's own training loop (pretrain_gpt.py -> megatron/training/training.py) fetching its next batch
    (Frame(f"{SITE}/megatron/training/training.py", 1301, "train"),
     Frame(f"{SITE}/megatron/training/training.py", 742, "train_step"), DATALOADER),
    # DeepSpeed's pipeline engine reading its data iterator, in the user's dataset
    (Frame(f"{SITE}/deepspeed/runtime/pipe/engine.py", 802, "_next_batch"), DATALOADER,
     Frame("/job/data.py", 33, "__getitem__")),
])
def test_a_rank_loading_data_inside_a_library_training_loop_has_left_the_collective(where: tuple[Frame, ...]) -> None:
    """Only the innermost frame tells where the thread waits: a training loop that lives in Megatron's or
    DeepSpeed's tree has their frames outside while the rank loads data. Its recorder lagging behind a
    collective a peer completed, it is late for the next one (W101), not a transport hang."""
    events = _recorder_lags(where)
    assert [(e.code, e.ranks) for e in events] == [("W101", (2,))], [e.title for e in events]


def test_a_rank_waiting_on_its_own_work_handle_is_told_by_its_native_frames() -> None:
    """The user's own ``work.wait()`` has no Python frame of torch: the thread is in a native call of the user's
    code, and its native frames (py-spy's) wait in c10d: the hang stands (W104). The same frame asleep in
    ``time.sleep`` (native frames of libc only) has left the collective: late for the next one (W101)."""
    user = (Frame("/job/train.py", 60, "sync_grads"),)
    waiting = ("c10d::ProcessGroupGloo::AsyncWork::wait (libtorch_cpu.so)", "torch::autograd::THPVariable_wait "
               "(libtorch_python.so)", "_PyEval_EvalFrameDefault (python3.11)")
    events = _recorder_lags(user, waiting)
    assert [(e.code, e.ranks) for e in events] == [("W104", ())], [e.title for e in events]
    asleep = _recorder_lags(user, ("clock_nanosleep (libc.so.6)", "pysleep (python3.11)"))
    assert [(e.code, e.ranks) for e in asleep] == [("W101", (2,))], [e.title for e in asleep]
