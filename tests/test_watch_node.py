"""Node-level aggregation: node values on plain data (round trips, malformed values, the newest heartbeat
wins), the takeover policy, the node channel's files on a real directory (lease, takeover, resignation,
control mirror, cleanup), and publishers of one node against a store that counts its requests: one store
request per node and publication, all ranks' records read back. The lab runs it for real
(tests/test_watch_lab.py: a dead rank, a dead leader, a whole node cut off)."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncdoctor.watch.aggregate import _merge_plain, merge, pack_node, takeover_due, unpack_node
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.control import AbortOrder, ControlMessage, write_control
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.local import ActivityMeter, Identity
from syncdoctor.watch.node import NodeChannel
from syncdoctor.watch.p2p import P2PLedger
from syncdoctor.watch.publisher import Publisher
from syncdoctor.watch.reader import RecordReader
from syncdoctor.watch.recorder import GroupDirectory
from syncdoctor.watch.records import RankRecord, decode_record, encode_record
from syncdoctor.watch.sampler import Sampler
from syncdoctor.watch.screen import header_table
from test_watch_screen import MemoryStore

KEYS = JobKeys("syncdoctor/v1", 0)


def record(rank: int, beat: int, world: int = 8) -> bytes:
    return encode_record(RankRecord(rank=rank, world_size=world, host=f"h{rank // 4}", node=rank // 4, pid=100 + rank,
                                    heartbeat=beat))


def test_node_values_round_trip_and_merge() -> None:
    node0 = pack_node([record(0, 5), record(1, 5), record(2, 5)])
    node1 = pack_node([record(4, 7), record(5, 7)])
    assert unpack_node(node0) == [record(0, 5), record(1, 5), record(2, 5)]
    raws, missing = merge(8, [node0, node1, b"", b"garbage"])
    assert missing == [3, 6, 7]
    assert [decode_record(raws[r]).heartbeat for r in (0, 1, 2, 4, 5)] == [5, 5, 5, 7, 7]  # type: ignore[union-attr]
    # a takeover: two leaders published rank 1 for a moment; the newest heartbeat wins, in either order
    stale = pack_node([record(1, 3)])
    for blobs in ([node0, stale], [stale, node0]):
        assert decode_record(merge(8, blobs)[0][1]).heartbeat == 5  # type: ignore[union-attr]
    # records naming a rank outside the job, or of another format, are left out
    values, missing = merge(2, [pack_node([record(5, 1), b"SDW0" + b"x" * 600])])
    assert (list(values), missing) == ([b"", b""], [0, 1])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(-1, 9), st.integers(0, 4), st.sampled_from(["ok", "short", "old"])),
                         max_size=5), max_size=6), st.lists(st.integers(0, 7), max_size=3))
def test_merge_in_one_buffer_is_the_plain_merge(nodes: list[list[tuple[int, int, str]]], own: list[int]) -> None:
    """The monitor's merge (one buffer, headers as arrays) gives what cutting out every record gives: the same
    record per rank (the newest heartbeat), the same missing ranks, and the headers of exactly those records."""
    def value(rank: int, beat: int, kind: str) -> bytes:
        raw = record(max(rank, 0), beat)
        if rank < 0:  # a record naming a rank outside the job
            raw = raw[:4] + struct.pack("<i", -1) + raw[8:]
        return {"ok": raw, "short": raw[:40], "old": b"SDW\x05" + raw[4:]}[kind]

    blobs = [pack_node([value(*item) for item in node]) for node in nodes] + [b"garbage"]
    values, missing = merge(8, blobs)
    plain, plain_missing = _merge_plain(8, blobs)
    assert list(values) == plain and missing == plain_missing
    for rank in own:  # ranks that publish alone: their own key's value takes the place
        values[rank] = plain[rank] = record(rank, 9)
    table = header_table(values)
    expected = header_table(plain)
    assert (table is None) == (expected is None)
    if table is not None:
        assert table.tobytes() == expected.tobytes()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=8), st.binary(max_size=64))
def test_unpack_is_exact_and_never_raises(records: list[bytes], noise: bytes) -> None:
    assert unpack_node(pack_node(records)) == records
    assert unpack_node(pack_node(records) + b"x") == []  # a length that disagrees: nothing
    unpack_node(noise)
    unpack_node(b"SDN1" + noise)
    for blobs in ([noise, b"SDN1" + noise], [pack_node(records), noise, b"SDN1" + noise[:4] + noise]):
        values, missing = merge(4, blobs)
        assert (list(values), missing) == _merge_plain(4, blobs)


def test_takeover_policy() -> None:
    assert not takeover_due(1.4, 0, 1.0) and takeover_due(1.5, 0, 1.0)
    assert not takeover_due(1.7, 1, 1.0) and takeover_due(1.75, 1, 1.0)  # the second candidate waits longer
    assert takeover_due(3.0, 5, 2.0) is False and takeover_due(5.5, 5, 2.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _channels(tmp_path: Path, ranks: range, clock: Clock) -> dict[int, NodeChannel]:
    out = {}
    for rank in ranks:
        channel, why = NodeChannel.open(tmp_path, "tok", "host0#0", rank, clock)
        assert channel is not None, why
        out[rank] = channel
    return out


def test_lease_takeover_and_resignation(tmp_path: Path) -> None:
    clock = Clock()
    node = _channels(tmp_path, range(4), clock)
    for rank, channel in node.items():
        channel.write_record(record(rank, 1))
    assert [node[r].lead(1.0) for r in range(4)] == [True, False, False, False]  # the first to create it
    assert unpack_node(node[0].gather() or b"").__len__() == 4
    # the leader stops renewing: rank 1 (first in line) takes over after 1.5 intervals, rank 2 not yet
    clock.now += 1.5
    for rank in (1, 2, 3):
        node[rank].write_record(record(rank, 2))
    assert node[2].lead(1.0) is False and node[1].lead(1.0) is True
    clock.now += 0.1
    assert node[0].lead(1.0) is False and not node[0].leading  # the old leader, back, steps down
    assert node[1].lead(1.0) is True
    # the leader resigns at its end: the next rank to publish leads at once
    node[1].resign()
    assert node[3].lead(1.0) is True and node[2].lead(1.0) is False


def test_control_mirror_and_node_index(tmp_path: Path) -> None:
    node = _channels(tmp_path, range(2), Clock())
    assert node[1].read_control() is None  # nothing mirrored yet
    node[0].mirror_control(3, b'{"version": 1}')
    assert node[1].read_control() == (3, b'{"version": 1}')
    assert node[1].read_control() is None  # unchanged since
    registered = []
    assert node[0].node_index(lambda: registered.append(1) or 7) == 7
    assert node[1].node_index(lambda: registered.append(1) or 9) == 7 and registered == [1]  # from the file


def test_the_node_directory_is_private(tmp_path: Path) -> None:
    node = _channels(tmp_path, range(1), Clock())[0]
    assert oct(node.directory.stat().st_mode & 0o777) == "0o700"
    trap = tmp_path / "elsewhere"
    trap.mkdir()
    user_dir = tmp_path / f"syncdoctor-{os.getuid()}"
    (user_dir / "tok2-host0").symlink_to(trap)
    channel, why = NodeChannel.open(tmp_path, "tok2", "host0", 0)
    assert channel is None and "not a directory of this user" in why


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    def __getattribute__(self, name: str) -> Any:
        attribute = super().__getattribute__(name)
        if name in ("set", "get", "add", "check", "compare_set", "multi_get"):
            calls = super().__getattribute__("calls")

            def counted(*args: Any) -> Any:
                calls.append((name, str(args[0]) if args else ""))
                return attribute(*args)

            return counted
        return attribute


def _node_publishers(store: ScopedStore, tmp_path: Path, world: int = 4) -> list[Publisher]:
    out = []
    for rank in range(world):
        publisher = Publisher(WatchConfig(node_dir=str(tmp_path), stacks=False, node_aggregation="on"), Sampler(),
                              P2PLedger(),
                              GroupDirectory(), ActivityMeter(), [], lambda: "flight_recorder", main_ident=None)
        publisher.activity.sample = lambda now: None  # type: ignore[method-assign]
        publisher.attach(store, KEYS, Identity(rank=rank, world_size=world, local_rank=rank, node=0, host="host0",
                                               pid=os.getpid(), attempt=0))
        out.append(publisher)
    return out


def test_a_node_publishes_one_value_and_relays_the_control_message(tmp_path: Path) -> None:
    counting = CountingStore()
    store = ScopedStore(counting)
    publishers = _node_publishers(store, tmp_path)
    assert all(p.node is not None for p in publishers)
    counting.calls.clear()
    for publisher in publishers:
        publisher.publish()
    sets = [key for name, key in counting.calls if name == "set"]
    assert sets == [KEYS.node(0)], counting.calls  # the leader's node value only: no rank/<R> keys
    assert [name for name, _ in counting.calls].count("add") == 1  # the node registered its index once
    counting.calls.clear()
    for publisher in publishers:
        publisher.publish()
    assert counting.calls == [("set", KEYS.node(0))]  # then one request per node and publication
    raws = RecordReader(store, KEYS, 4).read()
    assert [decode_record(raw).rank for raw in raws] == [0, 1, 2, 3]  # type: ignore[union-attr]
    # the control message: the leader polls the store and mirrors it; the others read the mirror
    order = AbortOrder(75, "rank 2 is late", "rank 0", 4)
    write_control(store, KEYS, ControlMessage(abort=order))
    counting.calls.clear()
    assert [p.poll_control() for p in publishers] == [order] * 4
    assert {name for name, _ in counting.calls} <= {"add", "get"} and len(counting.calls) == 2  # the leader's


def test_a_rank_without_a_node_directory_publishes_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = ScopedStore(MemoryStore())
    publisher = Publisher(WatchConfig(node_dir=str(blocker), node_aggregation="on"), Sampler(), P2PLedger(),
                          GroupDirectory(),
                          ActivityMeter(), [], lambda: "hooks", main_ident=None)
    publisher.activity.sample = lambda now: None  # type: ignore[method-assign]
    publisher.attach(store, KEYS, Identity(1, 4, 1, 0, "host0", os.getpid(), 0))
    assert publisher.node is None and "publishes its own record" in caplog.text
    publisher.publish()
    assert decode_record(store.get(KEYS.rank(1))).rank == 1  # type: ignore[union-attr]
    # a reader takes the ranks no node value holds from their own keys
    node = _node_publishers(store, tmp_path / "shm", world=4)[0]
    node.publish()
    raws = RecordReader(store, KEYS, 4).read()
    assert [decode_record(r).rank if r else None for r in raws] == [0, 1, None, None]  # type: ignore[union-attr]


def test_the_setting_and_its_automatic_choice() -> None:
    from syncdoctor.errors import UsageError
    from syncdoctor.watch.config import AGGREGATE_FROM_RANKS

    auto = WatchConfig()
    assert auto.node_aggregation == "auto" and not auto.aggregates(AGGREGATE_FROM_RANKS - 1)
    assert auto.aggregates(AGGREGATE_FROM_RANKS)  # a big job: the store's load matters
    assert WatchConfig(node_aggregation="on").aggregates(2) and not WatchConfig(node_aggregation="off").aggregates(10**5)
    assert WatchConfig(node_aggregation=True).node_aggregation == "on"  # type: ignore[arg-type]
    assert WatchConfig.load({"SYNCDOCTOR_WATCH_NODE_AGGREGATION": "0"}).node_aggregation == "off"
    with pytest.raises(UsageError, match="SYNCDOCTOR_WATCH_NODE_AGGREGATION='sometimes': must be auto, on or off"):
        WatchConfig.load({"SYNCDOCTOR_WATCH_NODE_AGGREGATION": "sometimes"})


def test_a_dead_leader_is_replaced_at_once(tmp_path: Path) -> None:
    import subprocess

    clock = Clock()
    node = _channels(tmp_path, range(3), clock)
    for rank, channel in node.items():
        channel.write_record(record(rank, 1))
    gone = subprocess.Popen(["true"])
    gone.wait()
    (node[0].directory / "lease").write_text(f"0 {gone.pid} {clock.now}")  # rank 0 led, and its process is gone
    assert node[2].lead(1.0) is False  # second in line: waits
    assert node[1].lead(1.0) is True  # first in line: no takeover delay


def test_one_rank_per_node_or_off_publishes_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ScopedStore(MemoryStore())
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    assert _node_publishers(store, tmp_path, world=1)[0].node is None
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    publisher = Publisher(WatchConfig(node_aggregation=False), Sampler(), P2PLedger(), GroupDirectory(),
                          ActivityMeter(), [], lambda: "hooks", main_ident=None)
    publisher.attach(store, KEYS, Identity(0, 1, 0, 0, "host0", os.getpid(), 0))
    assert publisher.node is None


def test_final_records_are_published_at_once_and_the_last_rank_cleans_up(tmp_path: Path) -> None:
    store = ScopedStore(MemoryStore())
    publishers = _node_publishers(store, tmp_path)
    for publisher in publishers:
        publisher.publish()
    directory = publishers[0].node.directory  # type: ignore[union-attr]
    publishers[2].state = "failed"
    publishers[2].publish(final=True)  # not the leader: publishes the node value itself
    assert decode_record(RecordReader(store, KEYS, 4).read()[2]).state == "failed"  # type: ignore[union-attr]
    publishers[0].state = "exited"
    publishers[0].publish(final=True)  # the leader resigns
    assert publishers[1].node.lead(1.0)  # type: ignore[union-attr]
    for rank in (1, 3):
        publishers[rank].state = "exited"
        publishers[rank].publish(final=True)
    assert not directory.exists()  # every rank said goodbye: the last one removed the directory
    states = [decode_record(raw).state for raw in RecordReader(store, KEYS, 4).read()]  # type: ignore[union-attr]
    assert states == ["exited", "exited", "failed", "exited"]


def test_a_leader_relaying_after_the_last_rank_removed_the_directory_keeps_the_final_records(tmp_path: Path) -> None:
    # a CI lab run under load: the leader, its final record written, relayed once more after its node-mates' last
    # publication removed the directory, and replaced the node value with an empty one (ranks read as absent)
    store = ScopedStore(MemoryStore())
    publishers = _node_publishers(store, tmp_path)
    for publisher in publishers:
        publisher.publish()
    leader = publishers[0]
    assert leader.node is not None and leader.node.leading
    directory = leader.node.directory
    leader.state = "exited"
    leader.node.write_record(encode_record(leader.record()))  # its final record, its publication not done yet
    for rank in (1, 2, 3):
        publishers[rank].state = "exited"
        publishers[rank].publish(final=True)
    assert not directory.exists()  # every file final: the last rank removed the directory
    leader.relay()  # the leader's relay, late
    states = [decode_record(raw).state if raw else None for raw in RecordReader(store, KEYS, 4).read()]  # type: ignore[union-attr]
    assert states == ["exited"] * 4, states
    # a rank that left the channel (its file removed) before the listing: the value without it
    fresh = _channels(tmp_path / "again", range(2), Clock())
    for rank, channel in fresh.items():
        channel.write_record(record(rank, 1))
    assert fresh[0].gather() is not None
    (fresh[1].directory / "rank-1").unlink()
    assert len(unpack_node(fresh[0].gather() or b"")) == 1


def test_stale_directories_of_jobs_long_gone_are_removed(tmp_path: Path) -> None:
    old = _channels(tmp_path, range(1), Clock())[0]
    old.write_record(record(0, 1))
    day_ago = time.time() - 2 * 86400
    for path in (*old.directory.iterdir(), old.directory):
        os.utime(path, (day_ago, day_ago))
    fresh, _ = NodeChannel.open(tmp_path, "new", "host0", 0)
    assert fresh is not None and fresh.node_index(lambda: 0) == 0
    assert not old.directory.exists() and fresh.directory.exists()


def test_a_rank_that_loses_its_channel_leaves_it_and_is_read_from_its_own_key(tmp_path: Path) -> None:
    store = ScopedStore(MemoryStore())
    publishers = _node_publishers(store, tmp_path)
    for publisher in publishers:
        publisher.publish()
    lost = publishers[3]
    original = lost.node.write_record  # type: ignore[union-attr]

    def full(blob: bytes) -> None:
        raise OSError(28, "No space left on device")

    lost.node.write_record = full  # type: ignore[union-attr,method-assign]
    lost.publish()  # falls back: its own key, and its file gone from the node directory
    assert lost.node is None and original is not None
    for publisher in publishers[:3]:
        publisher.publish()
    beats = [decode_record(raw).heartbeat for raw in RecordReader(store, KEYS, 4).read()]  # type: ignore[union-attr]
    # rank 3's newest record (its second), from its own key, not the first one the leader relayed; ranks 1 and 2
    # published after the leader's relay: their second records go out with its next one
    assert beats == [2, 1, 1, 2]


def test_the_leader_relays_between_its_publications(tmp_path: Path) -> None:
    counting = CountingStore()
    store = ScopedStore(counting)
    publishers = _node_publishers(store, tmp_path)
    for publisher in publishers:
        publisher.publish()
    publishers[0].publish()
    publishers[2].publish()  # after the leader's relay: waits for the next one
    assert decode_record(RecordReader(store, KEYS, 4).read()[2]).heartbeat == 1  # type: ignore[union-attr]
    counting.calls.clear()
    for publisher in publishers:
        publisher.relay()  # the runtime calls it half an interval after each publication; only a leader relays
    assert counting.calls == [("set", KEYS.node(0))]
    assert decode_record(RecordReader(store, KEYS, 4).read()[2]).heartbeat == 2  # type: ignore[union-attr]
