"""The detector on the shapes large jobs have: several process groups per rank and send/recv pipelines.

Plain records advanced by a fake monitor clock (no torch, no sleeping). In every case the first event
names the root of the waiting, never a rank that itself waits, and shows the chain that leads to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from columns_check import detect_both
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.records import Frame, GroupProgress, P2PProgress, RankRecord, Signature, StackReport
from syncdoctor.watch.snapshot import DetectorState, Snapshot

AR = Signature("all_reduce", ((256,),), ("Float",), ((256,),))
BARRIER = Signature("barrier")
CFG = WatchConfig(warn_after_s=3.0, suspect_after_s=1.0, dead_after_s=3.0, confirm_after_s=20.0, interval_s=1.0)


Op = tuple  # ("coll", group, signature) | ("send", peer) | ("recv", peer) | ("sleep", seconds) | ("stuck",)


@dataclass
class Rank:
    rank: int
    program: list[Op]
    pc: int = 0
    started: float = 0.0  # when the current op began
    entered: bool = False  # the current op has been entered (collective or message posted)
    groups: dict[str, list] = field(default_factory=dict)  # name -> [entered, completed, stall start, signature]
    channels: dict[tuple[str, int, str], list] = field(default_factory=dict)  # -> [entered, completed, stall start]
    heartbeat: int = 0
    frozen: bool = False
    state: str = "running"


class Job:
    """Ranks that run programs of blocking operations (as gloo's send, recv and collectives are): a
    collective completes once every member entered it, a message once both ends posted it. Two ranks per
    host; the monitor looks every second; time advances in steps of 0.1 s."""

    def __init__(self, groups: dict[str, tuple[int, ...]], programs: dict[int, list[Op]], config: WatchConfig = CFG) -> None:
        self.config, self.groups = config, groups
        self.world = len(programs)
        self.ranks = [Rank(r, list(programs[r])) for r in range(self.world)]
        for name, members in groups.items():
            for r in members:
                self.ranks[r].groups[name] = [0, 0, None, None]
        self.state = DetectorState()
        self.now = 100.0
        self.stacks: dict[int, StackReport] = {}
        self.events: list[Event] = []

    def _channel(self, rank: int, group: str, peer: int, kind: str) -> list:
        return self.ranks[rank].channels.setdefault((group, peer, kind), [0, 0, None])

    def _done(self, r: Rank, op: Op) -> bool:
        if op[0] == "coll":
            seq = r.groups[op[1]][0]
            return all(self.ranks[m].groups[op[1]][0] >= seq for m in self.groups[op[1]])
        if op[0] in ("send", "recv"):
            other = "recv" if op[0] == "send" else "send"
            group = op[2] if len(op) > 2 else "0"
            return self._channel(op[1], group, r.rank, other)[0] >= self._channel(r.rank, group, op[1], op[0])[0]
        if op[0] == "sleep":
            return self.now - r.started >= op[1]
        return False  # stuck

    def _step(self) -> None:
        for _ in range(4 * self.world):  # settle: completing one op may let others complete
            moved = False
            for r in self.ranks:
                if r.frozen or r.pc >= len(r.program):
                    continue
                op = r.program[r.pc]
                if not r.entered:
                    r.entered, r.started, moved = True, self.now, True
                    if op[0] == "coll":
                        g = r.groups[op[1]]
                        g[0] += 1
                        g[2], g[3] = self.now, op[2] if len(op) > 2 else AR
                    elif op[0] in ("send", "recv"):
                        c = self._channel(r.rank, op[2] if len(op) > 2 else "0", op[1], op[0])
                        c[0] += 1
                        c[2] = self.now
                if self._done(r, op):
                    if op[0] == "coll":
                        g = r.groups[op[1]]
                        g[1], g[2] = g[0], None
                    elif op[0] in ("send", "recv"):
                        c = self._channel(r.rank, op[2] if len(op) > 2 else "0", op[1], op[0])
                        c[1], c[2] = c[0], None
                    r.pc, r.entered, moved = r.pc + 1, False, True
            if not moved:
                break

    def tick(self, seconds: float = 1.0) -> list[Event]:
        for _ in range(round(seconds * 10)):
            self.now = round(self.now + 0.1, 6)
            self._step()
        records = {}
        for r in self.ranks:
            if not r.frozen:
                r.heartbeat += 1
            records[r.rank] = RankRecord(
                rank=r.rank, world_size=self.world, host=f"host{r.rank // 2}", node=r.rank // 2, pid=1000 + r.rank,
                heartbeat=r.heartbeat, state=r.state, quiet_s=5.0,
                groups={n: GroupProgress(n, g[0], g[1], None if g[2] is None else self.now - g[2], g[3],
                                         g[1] + 1 if g[3] and g[0] > g[1] else 0) for n, g in r.groups.items()},
                p2p=tuple(P2PProgress(k[0], k[1], k[2], c[0], c[1], None if c[2] is None else self.now - c[2])
                          for k, c in r.channels.items()),
            )
        snap = Snapshot(now=self.now, wall=self.now, world_size=self.world, records=records, groups=dict(self.groups),
                        stacks=dict(self.stacks))
        result = detect_both(snap, self.config, self.state)
        for rank, gen in result.requests.stacks.items():
            frames = (Frame("/job/train.py", 10, "main"), Frame("/job/train.py", 40 + rank, f"work_of_{rank}"))
            self.stacks[rank] = StackReport(rank, gen, frames, frames[-1])
        self.events.extend(result.events)
        return list(result.events)

    def run(self, seconds: int) -> list[Event]:
        out: list[Event] = []
        for _ in range(seconds):
            out.extend(self.tick())
        return out


def _tp_dp_groups(world: int = 8) -> dict[str, tuple[int, ...]]:
    """Tensor-parallel pairs {0,1},{2,3}... and two data-parallel groups {0,2,4,6},{1,3,5,7}."""
    groups = {"0": tuple(range(world))}
    for i in range(world // 2):
        groups[f"tp{i}"] = (2 * i, 2 * i + 1)
    groups["dp0"] = tuple(range(0, world, 2))
    groups["dp1"] = tuple(range(1, world, 2))
    return groups


def _tp_dp(steps: int, late: dict[int, tuple[int, str, float]], world: int = 8) -> Job:
    """Every step: the tensor-parallel all_reduce, then the data-parallel one. ``late``: rank ->
    (step, "tp" or "dp", seconds) it sleeps before that collective (inf: it never comes)."""
    programs: dict[int, list[Op]] = {}
    for r in range(world):
        ops: list[Op] = []
        for step in range(steps):
            for part, group in (("tp", f"tp{r // 2}"), ("dp", f"dp{r % 2}")):
                if late.get(r, (None,))[:2] == (step, part):
                    seconds = late[r][2]
                    ops.append(("stuck",) if seconds == float("inf") else ("sleep", seconds))
                ops.append(("coll", group))
        programs[r] = ops
    return Job(_tp_dp_groups(world), programs)


def _only(events: list[Event], code: str = "W101") -> Event:
    found = [e for e in events if e.status != "resolved"]
    assert [e.code for e in found] == [code], [e.line() for e in found]
    return found[0]


def test_late_rank_in_a_tensor_parallel_group_is_the_root_not_its_partner() -> None:
    job = _tp_dp(10, {5: (3, "tp", 8.0)})  # rank 4 waits in tp2; ranks 0,2,6 wait in dp0 for rank 4
    events = job.run(5)
    event = _only(events)
    assert event.ranks == (5,) and event.hosts == ("host2",) and event.group == "tp2" and event.seq == 4
    assert event.waiting_ranks == (0, 1, 2, 3, 4, 6, 7)
    assert ("ranks 0,2,6 wait in all_reduce float[256] #4 of group dp0 for rank 4, which waits in all_reduce "
            "float[256] #4 of group tp2 for rank 5") in event.title
    assert "ranks 1,3,7 wait in all_reduce float[256] #4 of group dp1 for rank 5" in event.title
    assert "work_of_5" in event.title and event.detail["hops"][0]["depth"] == 1
    assert 3.0 <= event.waited_s <= 4.0  # named within warn_after_s + 1 s
    resolved = job.run(6)
    assert [(e.code, e.status, e.ranks) for e in resolved] == [("W101", "resolved", (5,))]
    assert not any(e.code == "W101" and e.ranks != (5,) for e in job.events)


def test_late_rank_in_a_data_parallel_group() -> None:
    job = _tp_dp(10, {2: (3, "dp", float("inf"))})  # rank 3 goes on, then waits in tp1 for rank 2
    event = _only(job.run(5))
    # dp0 #4, where ranks 0,4,6 wait, and tp1 #5, where rank 3 waits, began within the same sample
    assert event.ranks == (2,) and event.group in ("dp0", "tp1") and event.waiting_ranks == (0, 1, 3, 4, 5, 6, 7)
    assert "rank 3 waits in" in event.title


def test_two_late_ranks_held_up_together() -> None:
    job = _tp_dp(10, {1: (2, "tp", float("inf")), 5: (2, "tp", float("inf"))})
    event = _only(job.run(5))
    assert event.ranks == (1, 5) and " have not " in event.title  # dp1 waits for both


def _pipeline_programs(stages: int, steps: int, stuck: int | None = None, skip_send: int | None = None,
                       at: int = 1) -> dict[int, list[Op]]:
    """Stage r receives from r-1 and sends to r+1 (gloo's send waits for its receive), then a barrier."""
    programs: dict[int, list[Op]] = {}
    for stage in range(stages):
        ops: list[Op] = []
        for step in range(steps):
            if step == at and stage == stuck:
                ops.append(("stuck",))
            if stage > 0:
                ops.append(("recv", stage - 1))
            if stage < stages - 1 and not (step == at and stage == skip_send):
                ops.append(("send", stage + 1))
            ops.append(("coll", "0", BARRIER))
        programs[stage] = ops
    return programs


def test_pipeline_stage_stuck_in_the_middle() -> None:
    job = Job({"0": (0, 1, 2, 3)}, _pipeline_programs(4, 5, stuck=2))
    event = _only(job.run(5))
    assert event.ranks == (2,) and event.waiting_ranks == (0, 1, 3)
    assert "rank 3 waits in recv #2 from rank 2 in group 0 for rank 2" in event.title
    assert "rank 1 waits in send #2 to rank 2 in group 0 for rank 2" in event.title


def test_pipeline_first_stage_stuck_names_it_through_every_stage() -> None:
    job = Job({"0": (0, 1, 2, 3)}, _pipeline_programs(4, 5, stuck=0))
    event = _only(job.run(5))
    assert event.ranks == (0,) and event.waiting_ranks == (1, 2, 3)
    assert "rank 3 waits in recv #2 from rank 2 in group 0 for rank 2, which waits in recv #2 from rank 1 in " \
           "group 0 for rank 1, which waits in recv #2 from rank 0 in group 0 for rank 0" in event.title
    job.ranks[0].program[job.ranks[0].pc] = ("sleep", 0.0)  # it comes back
    resolved = [e for e in job.run(3) if e.status == "resolved"]
    assert [(e.code, e.ranks) for e in resolved] == [("W101", (0,))]


def test_pipeline_first_stage_stuck_with_only_messages_is_told_in_the_message() -> None:
    programs = {s: [op for op in ops if op[0] != "coll"] for s, ops in _pipeline_programs(3, 4, stuck=0).items()}
    job = Job({"0": (0, 1, 2)}, programs)
    event = _only(job.run(5))
    assert event.ranks == (0,) and event.detail["p2p"] == {"waiter": 1, "peer": 0, "kind": "recv"}
    assert "has not posted send #2 to rank 1 in group 0, which rank 1 waits in" in event.title
    job.ranks[0].program[job.ranks[0].pc] = ("sleep", 0.0)
    assert [(e.code, e.status) for e in job.run(3)] == [("W101", "resolved")]


def test_pipeline_last_stage_stuck() -> None:
    job = Job({"0": (0, 1, 2, 3)}, _pipeline_programs(4, 5, stuck=3))
    event = _only(job.run(5))
    assert event.ranks == (3,) and event.waiting_ranks == (0, 1, 2)


def test_a_stage_that_skips_its_send_is_a_deadlock_not_a_late_rank() -> None:
    job = Job({"0": (0, 1, 2, 3)}, _pipeline_programs(4, 5, skip_send=1))
    event = _only(job.run(5), "W103")
    # stage 1 went on to the barrier (it waits there for stages 2 and 3), stage 3 waits for stage 2, which
    # waits for stage 1's message: stage 1 is the one that took another path
    assert event.ranks == (1,) and event.waiting_ranks == (0, 2, 3) and "deadlock" in event.title
    assert "rank 2 waits in recv #2 from rank 1 in group 0 for rank 1" in event.detail["chain"]


def test_two_groups_called_in_opposite_orders_is_a_deadlock() -> None:
    groups = {"0": (0, 1, 2, 3), "a": (0, 1), "b": (0, 1)}
    programs = {0: [("coll", "a"), ("coll", "b")], 1: [("coll", "b"), ("coll", "a")],
                2: [("coll", "0", BARRIER)], 3: [("coll", "0", BARRIER)]}
    job = Job(groups, programs)
    event = _only(job.run(5), "W103")
    assert event.ranks == (0, 1) and set(event.waiting_ranks) == {2, 3}
    assert "rank 0 waits in all_reduce float[256] #1 of group a for rank 1" in event.title
    assert "rank 1 waits in all_reduce float[256] #1 of group b for rank 0" in event.title


def test_a_skipped_collective_names_the_skipping_side() -> None:
    """Rank 1 skips the metric all_reduce (group m) and waits in the next gradient all_reduce."""
    groups = {"0": (0, 1, 2, 3), "m": (0, 1, 2, 3)}
    programs = {r: [("coll", "0"), ("coll", "m"), ("coll", "0"), ("coll", "m")] for r in range(4)}
    programs[1] = [("coll", "0"), ("coll", "0"), ("coll", "m")]
    event = _only(Job(groups, programs).run(5), "W103")
    assert event.ranks == (1,) and event.waiting_ranks == (0, 2, 3) and "skipped" in event.title
    assert event.group == "m" and event.detail["other_group"] == "0"


def test_a_deadlock_is_named_at_the_first_look_past_the_threshold_which_the_monitor_is_told() -> None:
    """The monitor wakes when the cycle's wait crosses a threshold, and that look names it: a cycle registered
    only once past the warning would wait for a second record, an interval later (the lab measured 2 s)."""
    groups = {"0": (0, 1, 2, 3), "m": (0, 1, 2, 3)}
    programs = {r: [("coll", "0"), ("coll", "m"), ("coll", "0"), ("coll", "m")] for r in range(4)}
    programs[1] = [("coll", "0"), ("coll", "0"), ("coll", "m")]
    job = Job(groups, programs)  # everyone waits from 100.1 on
    assert job.run(2) == [] and job.state.due_at is not None
    assert job.state.due_at == pytest.approx(100.1 + CFG.warn_after_s)  # the next threshold: the warning
    assert job.tick(0.9) == []  # 102.9: 2.8 s
    events = job.tick(0.3)  # 103.2: 3.1 s, one record after the threshold
    assert [e.code for e in events] == ["W103"] and events[0].ranks == (1,)


def test_dead_root_is_named_dead_with_what_it_holds_up() -> None:
    job = _tp_dp(10, {5: (3, "tp", float("inf"))})
    job.run(1)
    job.ranks[5].frozen = True
    events = job.run(6)
    assert not any(e.code == "W101" for e in events), [e.line() for e in events]
    dead = [e for e in events if e.code == "W105"]
    assert len(dead) == 1 and dead[0].ranks == (5,)
    assert "rank 4, which waits in" in dead[0].title and dead[0].waiting_ranks == (0, 1, 2, 3, 4, 6, 7)


def test_hung_collective_with_ranks_waiting_behind_it() -> None:
    job = _tp_dp(10, {})

    def hung(r: Rank, op: Op, original=job._done) -> bool:  # tp2 #4: both entered, it never completes
        return False if op[:2] == ("coll", "tp2") and r.groups["tp2"][0] >= 4 else original(r, op)

    job._done = hung  # type: ignore[method-assign]
    event = _only(job.run(5), "W104")
    assert event.group == "tp2" and event.seq == 4 and set(event.waiting_ranks) == {4, 5}
    assert event.detail["held_up"] == "0-3,6-7" and "wait behind it" in event.title
    assert not any(e.code == "W101" for e in job.events)


def test_send_and_receive_both_posted_and_stuck_is_a_transport_hang() -> None:
    job = Job({"0": (0, 1)}, {0: [("send", 1)], 1: [("recv", 0)]})
    job._done = lambda r, op: False  # type: ignore[method-assign]
    event = _only(job.run(5), "W104")
    assert event.detail["p2p"] == {"sender": 0, "receiver": 1, "seq": 1} and "network" in event.title


def test_healthy_pipeline_and_tensor_data_parallel_jobs_are_quiet() -> None:
    assert Job({"0": (0, 1, 2, 3)}, _pipeline_programs(4, 30)).run(4) == []
    assert _tp_dp(30, {}).run(4) == []
    slow = _tp_dp(30, {3: (1, "tp", 1.5)})  # late, but by less than the threshold
    assert slow.run(6) == []
