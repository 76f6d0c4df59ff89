"""The join protocol with an in-memory store and a fake clock, naming missing nodes, clock offsets, skew."""

from __future__ import annotations

import json

import pytest

from syncdoctor.probe.join import (
    estimate_offset,
    label_nodes,
    missing_expected_nodes,
    missing_nodes,
    node_skews,
    read_registered,
    register_and_wait,
    wait_for_readers,
)
from syncdoctor.probe.launch import LaunchInfo
from syncdoctor.probe.records import RankInfo


class MemoryStore:
    """The subset of c10d's Store API the join uses, with the same compare_set semantics."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def set(self, key: str, value: str | bytes) -> None:
        self.data[key] = value.encode() if isinstance(value, str) else value

    def get(self, key: str) -> bytes:
        return self.data[key]

    def add(self, key: str, value: int) -> int:
        current = int(self.data.get(key, b"0")) + value
        self.data[key] = str(current).encode()
        return current

    def compare_set(self, key: str, expected: str, desired: str) -> bytes:
        current = self.data.get(key)
        if (current is None and expected == "") or current == expected.encode():
            self.data[key] = desired.encode()
        return self.data[key]

    def check(self, keys: list[str]) -> bool:
        return all(k in self.data for k in keys)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds


def _rank(rank: int, node: int, arrival: float = 1000.0, host: str = "", addr: str | None = None) -> RankInfo:
    return RankInfo(rank, rank % 2, node, host or f"host{node}", addr or f"10.0.0.{node + 1}", 100 + rank, arrival)


def _launch(world: int = 6, local: int = 2, **extra: object) -> LaunchInfo:
    return LaunchInfo("explicit", 0, world, 0, local, 0, world // local, "10.0.0.1", 29500, **extra)  # type: ignore[arg-type]


def test_last_rank_completes_the_join() -> None:
    store, clock = MemoryStore(), FakeClock()
    for rank in range(3):
        store.set(f"join/rank/{rank}", json.dumps(_rank(rank, rank // 2).to_json()))
        store.add("join/count", 1)
    outcome = register_and_wait(store, _rank(3, 1), 4, 10.0, clock=clock, sleep=clock.sleep)
    assert outcome.complete and outcome.state == "complete" and clock.sleeps == 0
    assert [r.rank for r in outcome.registered] == [0, 1, 2, 3]
    assert store.get("join/read") == b"1"


def test_deadline_closes_the_join_and_names_the_missing_node() -> None:
    store, clock = MemoryStore(), FakeClock()
    store.set("join/rank/1", json.dumps(_rank(1, 0).to_json()))
    store.add("join/count", 1)
    waits: list[int] = []
    outcome = register_and_wait(store, _rank(0, 0), 6, 5.0, clock=clock, sleep=clock.sleep,
                                on_wait=lambda count, waited: waits.append(count))
    assert not outcome.complete and outcome.state == "closed"
    assert 5.0 <= outcome.waited_s < 5.2 and waits[0] == 2
    missing = missing_nodes(outcome.registered, _launch(), ("a", "b", "c"))
    assert [(m.node, m.name, m.ranks, m.partial) for m in missing] == [(1, "b", (2, 3), False), (2, "c", (4, 5), False)]
    assert missing[0].describe() == "node 1 (b) never joined: rank(s) 2, 3"


def test_a_rank_arriving_after_the_close_gets_the_same_verdict() -> None:
    store, clock = MemoryStore(), FakeClock()
    store.set("join/state", "closed")
    outcome = register_and_wait(store, _rank(5, 2), 6, 60.0, clock=clock, sleep=clock.sleep)
    assert not outcome.complete and outcome.state == "closed" and clock.sleeps == 0


def test_nobody_missing_when_every_rank_registered() -> None:
    assert missing_nodes([_rank(r, r // 2) for r in range(6)], _launch()) == []


def test_partial_node_is_reported_with_its_missing_ranks() -> None:
    registered = [_rank(0, 0), _rank(1, 0), _rank(2, 1)]
    missing = missing_nodes(registered, _launch(world=4))
    assert len(missing) == 1 and missing[0].partial and missing[0].ranks == (3,)
    assert "rank(s) 3 never joined" in missing[0].describe()


def test_elastic_job_formed_without_an_expected_host() -> None:
    registered = [_rank(0, 0, host="host0"), _rank(1, 1, host="host1")]
    launch = LaunchInfo("torchrun", 0, 2, 0, 1, 0, 2, "10.0.0.1", 29500, expected_nodes=3)
    missing = missing_expected_nodes(registered, launch, ("host0", "host1", "host2"))
    assert [(m.node, m.name, m.ranks) for m in missing] == [(None, "host2", (2,))]
    assert missing_expected_nodes(registered, LaunchInfo("torchrun", 0, 2, 0, 1, 0, 2, "a", 1)) == []


def test_malformed_records_are_skipped() -> None:
    store = MemoryStore()
    store.set("join/rank/0", "not json")
    store.set("join/rank/1", json.dumps(_rank(1, 0).to_json()))
    assert [r.rank for r in read_registered(store, 3)] == [1]


def test_store_host_waits_for_readers_with_a_deadline() -> None:
    store, clock = MemoryStore(), FakeClock()
    store.add("join/read", 2)
    assert wait_for_readers(store, 2, 1.0, clock=clock, sleep=clock.sleep)
    assert not wait_for_readers(store, 3, 1.0, clock=clock, sleep=clock.sleep)


def test_offset_estimate_uses_the_minimum_round_trip() -> None:
    # peer clock 30 s ahead; the second sample has the shortest round trip and an asymmetric delay in others
    samples = [(0.0, 30.004, 0.010), (1.0, 31.0005, 1.001), (2.0, 32.0, 2.020)]
    offset, rtt = estimate_offset(samples)
    assert offset == pytest.approx(30.0, abs=1e-6) and rtt == pytest.approx(0.001)
    with pytest.raises(ValueError):
        estimate_offset([])


def test_skew_is_corrected_by_the_clock_offset() -> None:
    # node 1's clock is 30 s ahead and it really arrived 2 s late
    registered = [_rank(0, 0, 1000.0), _rank(1, 0, 1000.5), _rank(2, 1, 1032.0), _rank(3, 1, 1032.1)]
    skews = node_skews(registered, {0: 0.0, 1: 30.0}, {0: "a", 1: "b"})
    assert [s.label for s in skews] == ["a", "b"]
    assert skews[1].first_s == pytest.approx(2.0) and skews[1].last_s == pytest.approx(2.1)
    assert skews[1].raw_first_s == pytest.approx(32.0)
    assert skews[0].last_s == pytest.approx(0.5)
    assert node_skews([], {}) == []


def test_labels_prefer_distinct_hostnames_then_given_names_then_addresses() -> None:
    distinct = label_nodes([_rank(0, 0), _rank(2, 1)])
    assert [n.label for n in distinct] == ["host0", "host1"]
    same = [_rank(0, 0, host="x", addr="10.0.0.1"), _rank(2, 1, host="x", addr="10.0.0.2")]
    assert [n.label for n in label_nodes(same)] == ["10.0.0.1", "10.0.0.2"]
    assert [n.label for n in label_nodes(same, ("a", "b"))] == ["a", "b"]
    both_same = [_rank(0, 0, host="x", addr="1.1.1.1"), _rank(2, 1, host="x", addr="1.1.1.1")]
    assert [n.label for n in label_nodes(both_same)] == ["node0", "node1"]
    assert label_nodes([_rank(0, 0), _rank(1, 0)])[0].ranks == (0, 1)
