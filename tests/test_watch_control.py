"""The watcher's small parts: the control message and its round trip through a store, a rank's answer to it,
the torch and interpreter patches and their undo, fail-fast's count-out on a fake clock, the heartbeat
bookkeeping's one writer. No job, no sleeping."""

from __future__ import annotations

import json
import sys

import pytest

from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.control import (
    CONTROL_VERSION,
    MAX_INSPECT,
    AbortOrder,
    ControlMessage,
    read_control,
    write_control,
)
from syncdoctor.watch.failfast import leave_together, reachable_ranks
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.local import ActivityMeter, Identity
from syncdoctor.watch.p2p import P2PLedger
from syncdoctor.watch.patches import hook_optimizer_steps, patch_destroy_process_group, patch_excepthook
from syncdoctor.watch.publisher import Publisher
from syncdoctor.watch.recorder import GroupDirectory
from syncdoctor.watch.records import RankRecord
from syncdoctor.watch.sampler import Sampler
from syncdoctor.watch.signature import Signature, signature_from_compact
from syncdoctor.watch.snapshot import DetectorState, RankSeen, note_heartbeats
from test_watch_screen import MemoryStore


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


KEYS = JobKeys("syncdoctor/v1", 0)


def test_control_message_round_trips_in_the_wire_form_the_ranks_read() -> None:
    message = ControlMessage(stacks={3: 2}, inspect={4242: "host1#1"}, dump=1,
                             abort=AbortOrder(75, "rank 3 is late", "rank 0 (host0, pid 1)", 4))
    wire = json.loads(message.to_json())
    assert wire == {"version": CONTROL_VERSION, "stacks": {"3": 2}, "inspect": {"4242": "host1#1"}, "dump": 1,
                    "abort": {"code": 75, "reason": "rank 3 is late", "by": "rank 0 (host0, pid 1)", "expected": 4}}
    assert ControlMessage.from_json(message.to_json()) == message
    assert ControlMessage.from_json(message.to_json().encode()) == message
    assert ControlMessage.from_json(ControlMessage().to_json()) == ControlMessage()


@pytest.mark.parametrize("raw", [
    None, b"", b"not json", b"[]", b'{"stacks": {}}',  # no version: another writer
    b'{"version": 2, "stacks": {}}', b'{"version": 1, "stacks": {"x": 1}}', b'{"version": 1, "stacks": []}',
    b'{"version": 1, "dump": 1.5}', b'{"version": 1, "abort": {"reason": "no code"}}',
    b'{"version": 1, "inspect": {"12": 7}}', b'{"version": 1, "stacks": {"1": true}}',
])
def test_a_foreign_or_malformed_control_message_reads_as_none(raw: bytes | None) -> None:
    assert ControlMessage.from_json(raw) is None


def test_asking_adds_requests_and_keeps_the_newest_process_states() -> None:
    message = ControlMessage().asking({1: 1}, {10: "a"}).asking({2: 1, 1: 2}, {})
    assert message.stacks == {1: 2, 2: 1} and message.inspect == {10: "a"}
    many = ControlMessage().asking({}, {pid: "h" for pid in range(MAX_INSPECT + 1)})
    assert list(many.inspect) == list(range(MAX_INSPECT + 1 - 32, MAX_INSPECT + 1))


def test_read_control_reads_the_message_only_when_its_generation_moved() -> None:
    store = ScopedStore(MemoryStore())
    store.add(KEYS.ctl_gen, 0)
    assert read_control(store, KEYS, 0) == (0, None)
    write_control(store, KEYS, ControlMessage(stacks={1: 1}))
    gen, message = read_control(store, KEYS, 0)
    assert gen == 1 and message == ControlMessage(stacks={1: 1})
    assert read_control(store, KEYS, gen) == (1, None)


def _publisher(store: ScopedStore, clock: FakeClock, **config: object) -> Publisher:
    sampler = Sampler()
    config.setdefault("node_aggregation", False)  # each rank publishes its own record (tests/test_watch_node.py)
    publisher = Publisher(WatchConfig(**config), sampler, P2PLedger(), GroupDirectory(), ActivityMeter(window_s=5.0),
                          [], lambda: "flight_recorder", main_ident=None, clock=clock, wall_clock=lambda: 1.0e9)
    publisher.attach(store, KEYS, Identity(rank=1, world_size=4, local_rank=1, node=0, host="host0", pid=4242,
                                           attempt=0))
    return publisher


def test_a_rank_answers_the_control_message_and_hands_back_the_abort_order() -> None:
    store, clock = ScopedStore(MemoryStore()), FakeClock()
    publisher = _publisher(store, clock, stacks=False)
    assert publisher.state == "running" and json.loads(store.get(KEYS.meta))["world_size"] == 4
    assert publisher.poll_control() is None and publisher.ack == 0  # nothing asked yet
    order = AbortOrder(75, "late", "rank 0", 3)
    # a stack for another rank, a process state on another host: nothing for this rank to do but acknowledge
    write_control(store, KEYS, ControlMessage(stacks={2: 1}, inspect={99: "host9#9"}, abort=order))
    assert publisher.poll_control() == order and publisher.ack == 1 and publisher.inspect == {}
    assert publisher.poll_control() is None  # read once per generation
    store.set(KEYS.ctl_msg, b"{garbage")
    store.add(KEYS.ctl_gen, 1)
    assert publisher.poll_control() is None and publisher.ctl_gen == 2 and publisher.ack == 1


def test_the_publisher_record_uses_the_clocks_it_was_given() -> None:
    store, clock = ScopedStore(MemoryStore()), FakeClock(50.0)
    publisher = _publisher(store, clock)
    publisher.solo.append((1, "checkpoint", 40.0, None))
    publisher.activity.sample = lambda now: None  # type: ignore[method-assign]  # no /proc in a unit test
    record = publisher.record()
    assert isinstance(record, RankRecord) and record.published == 1.0e9 and record.rank == 1
    assert record.solo is not None and record.solo.name == "checkpoint" and record.solo.elapsed_s == 10.0


def test_fail_fast_counts_out_and_waits_no_longer_than_its_deadline() -> None:
    store, clock = ScopedStore(MemoryStore()), FakeClock()
    leave_together(store, KEYS, expected=3, rank=2, deadline_s=1.0, clock=clock, sleep=clock.sleep)
    assert store.add(KEYS.aborted, 0) == 1 and 1.0 <= clock.now - 100.0 < 1.1  # the others never came
    clock.slept.clear()
    store.add(KEYS.aborted, 1)
    leave_together(store, KEYS, expected=3, rank=0, deadline_s=1.0, clock=clock, sleep=clock.sleep)
    assert clock.slept == [0.3]  # everyone counted out: rank 0 only lets the others read the count


def test_reachable_ranks_are_running_and_recently_heard_from() -> None:
    records = {r: RankRecord(rank=r, world_size=4, host="h", node=0, pid=r, state=state)
               for r, state in enumerate(("running", "aborting", "running", "exited"))}
    seen = {0: RankSeen(1, 99.0), 1: RankSeen(1, 95.0), 2: RankSeen(1, 80.0), 3: RankSeen(1, 99.0)}
    assert reachable_ranks(records, seen, now=100.0, dead_s=10.0) == {0, 1}


def test_note_heartbeats_stamps_only_new_or_moved_heartbeats() -> None:
    state = DetectorState()
    note_heartbeats(state, 10.0, [(0, 1), (1, 1)])
    note_heartbeats(state, 11.0, [(0, 2), (1, 1)])
    assert (state.seen[0].heartbeat, state.seen[0].changed_at) == (2, 11.0)
    assert (state.seen[1].heartbeat, state.seen[1].changed_at) == (1, 10.0)


def test_thresholds_as_numbers_and_the_monitor_rank() -> None:
    auto = WatchConfig()
    assert auto.warn_s == auto.resolved().warn_after_s and auto.confirm_s == auto.resolved().confirm_after_s
    fixed = WatchConfig(warn_after_s=2, confirm_after_s=5.0)
    assert (fixed.warn_s, fixed.confirm_s) == (2.0, 5.0)
    assert [WatchConfig(monitor=m).monitor_rank for m in ("auto", "off", "3")] == [0, -1, 3]


def test_signature_compact_form_round_trips() -> None:
    sig = Signature("all_reduce", ((1000,), (4, 5)), ("Float", "Float"), ((1000,),))
    assert signature_from_compact(sig.to_compact()) == sig
    assert signature_from_compact("no|pipes") is None


def test_excepthook_patch_reports_then_chains_and_undoes() -> None:
    seen: list[str] = []
    previous = sys.excepthook
    chained: list[type[BaseException]] = []
    sys.excepthook = lambda exc_type, exc, tb: chained.append(exc_type)
    try:
        before = sys.excepthook
        undo = patch_excepthook(lambda exc_type, exc: seen.append(str(exc)), lambda: None, lambda: False)
        assert sys.excepthook is not before
        sys.excepthook(ValueError, ValueError("bad batch"), None)
        assert seen == ["bad batch"] and chained == [ValueError]
        undo()
        assert sys.excepthook is before
    finally:
        sys.excepthook = previous


def test_torch_patches_call_back_and_undo() -> None:
    dist = pytest.importorskip("torch.distributed")
    from torch.distributed import distributed_c10d as c10d

    original = c10d.destroy_process_group
    called: list[bool] = []
    undo = patch_destroy_process_group(lambda: called.append(True))
    try:
        assert dist.destroy_process_group is not original and c10d.destroy_process_group is not original
    finally:
        undo()
    assert dist.destroy_process_group is original and c10d.destroy_process_group is original
    remove = hook_optimizer_steps(lambda optimizer, args, kwargs: None)
    remove()


def test_an_empty_flight_recorder_is_reported_every_40_empty_reads_when_collectives_were_issued() -> None:
    from types import SimpleNamespace

    from syncdoctor.watch.recorder import FlightRecorderSource

    issued = {"n": 0}
    group = SimpleNamespace(group_name="0", _get_sequence_number_for_group=lambda: issued["n"])
    c10d = SimpleNamespace(_get_default_group=lambda: group)
    source = FlightRecorderSource(GroupDirectory(), dumps={})
    source.empty_reads = 40
    assert not source.records_nothing(c10d)  # nothing issued either
    issued["n"] = 3
    assert source.records_nothing(c10d)
    source.empty_reads = 41
    assert not source.records_nothing(c10d)  # asked again 40 empty reads later
    source.empty_reads = 80
    assert source.records_nothing(SimpleNamespace(_get_default_group=lambda: 1 / 0)) is False  # never raises
