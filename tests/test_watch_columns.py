"""The detector's bulk pass (syncdoctor.watch.columns): the headers' columns say what the records say, the
detector over them names the same roots as over decoded records, and a monitor's incident cycle decodes only
the records it names.

The detector's own scenarios (tests/test_watch_detector.py, test_watch_chains.py, test_watch_busy.py) run
both ways on every snapshot (tests/columns_check.py); the tests here make sure that check really runs on
columns, and look at the columns themselves.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import columns_check
from syncdoctor.watch.columns import Columns, headers_hold_all
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.monitor import LazyRecords, Monitor
from syncdoctor.watch.records import (
    P2P,
    GroupProgress,
    P2PProgress,
    RankRecord,
    StepMark,
    encode_record,
)
from syncdoctor.watch.screen import GroupIndex, header_table
from test_watch_chains import Job as ChainJob
from test_watch_chains import _pipeline_programs, _tp_dp
from test_watch_detector import AR, BC, Job, codes
from test_watch_screen import MemoryStore


def _columns(records: list[RankRecord], groups: dict[str, tuple[int, ...]]) -> tuple[Columns, LazyRecords]:
    raws = [encode_record(r) for r in records]
    table = header_table(raws)
    assert table is not None
    lazy = LazyRecords(raws)
    return Columns(table, GroupIndex.build(groups, len(records)), lazy, {}, []), lazy


def test_the_detector_scenarios_ran_on_columns() -> None:
    before = columns_check.RUNS["columns"]
    job = Job()
    job.all_done(4)
    job.enter([0, 1, 2], 5)
    assert job.tick() == []
    job.answer_stacks()
    assert codes(job.run(3)) == [("W101", "warning")]
    chained = _tp_dp(steps=4, late={5: (2, "tp", 30.0)})
    assert [e.ranks for e in chained.run(6) if e.code == "W101"] == [(5,)]
    pipeline = ChainJob({"0": (0, 1, 2, 3)}, _pipeline_programs(4, 5, stuck=2))
    assert [e.ranks for e in pipeline.run(5) if e.code == "W101"] == [(2,)]
    # every snapshot of these had a record per rank and known groups: each was compared on columns
    assert columns_check.RUNS["columns"] - before >= 4 + 6 + 5


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 3), st.one_of(st.none(), st.floats(0, 1e4)),
                          st.booleans(), st.booleans()), min_size=1, max_size=12))
def test_group_columns_are_the_records_values(rows: list[tuple[int, int, float | None, bool, bool]]) -> None:
    records = []
    for rank, (completed, ahead, stalled, signed, member) in enumerate(rows):
        groups = {"0": GroupProgress("0", completed + ahead, completed, stalled if ahead else None,
                                     (AR if rank % 3 else BC) if signed else None, completed + 1 if signed else 0)}
        if member:
            groups["t"] = GroupProgress("t", 7, 6, 0.5, AR, 7)
        records.append(RankRecord(rank, len(rows), host=f"h{rank // 2}", pid=100 + rank, groups=groups,
                                  step=completed if signed else None))
    world = len(rows)
    columns, _lazy = _columns(records, {"0": tuple(range(world)), "t": tuple(range(world))})
    cols = columns.group("0")
    for rank, record in enumerate(records):
        decoded = _lazy[rank].groups["0"]
        assert cols.has[rank] and cols.entered[rank] == decoded.entered and cols.completed[rank] == decoded.completed
        stall = cols.stalled[rank]
        assert (decoded.stalled_s is None and stall != stall) or stall == decoded.stalled_s
        assert (cols.sig_crc[rank] != 0) == (decoded.signature is not None)
        if decoded.signature is not None:
            assert columns.signature_of("0", int(cols.sig_crc[rank]), int(cols.sig_seq[rank]), rank) == \
                decoded.signature
        assert columns.group("t").has[rank] == ("t" in record.groups)
    assert columns.steps(list(range(world))) == {r.step for r in records if r.step is not None}


def test_identity_and_signatures_decode_once_per_process() -> None:
    records = [RankRecord(r, 4, host=f"box{'ab'[r // 2]}", node=r // 2, pid=10 + r,
                          groups={"0": GroupProgress("0", 5, 4, 1.0, AR, 5)}) for r in range(4)]
    identity: dict[int, tuple[int, str, str]] = {}
    raws = [encode_record(r) for r in records]
    lazy = LazyRecords(raws)
    columns = Columns(header_table(raws), GroupIndex.build({"0": (0, 1, 2, 3)}, 4), lazy, identity, [])
    assert columns.where(3) == "boxb (node 1)" and columns.host_key(3) == "boxb#1" and columns.where(2)
    assert set(lazy._cache) == {2, 3}
    cols = columns.group("0")
    for rank in range(4):  # one signature, read from the first rank that has it
        assert columns.signature_of("0", int(cols.sig_crc[rank]), 5, rank) == AR
    assert set(lazy._cache) == {0, 2, 3}
    # a later cycle: the identity is known for the same process, and read again for a new one
    raws[3] = encode_record(records[3]._replace(pid=99, host="elsewhere", node=-1))
    raws[2] = encode_record(records[2]._replace(heartbeat=5))
    lazy = LazyRecords(raws)
    columns = Columns(header_table(raws), columns.index, lazy, identity, [])
    assert columns.where(2) == "boxb (node 1)" and columns.where(3) == "elsewhere"
    assert set(lazy._cache) == {3} and identity[3][0] == 99


def test_headers_that_cannot_hold_everything_are_refused() -> None:
    base = [RankRecord(r, 2, pid=r + 1, groups={"0": GroupProgress("0", 1, 1)}) for r in range(2)]
    raws = [encode_record(r) for r in base]
    assert headers_hold_all(header_table(raws), GroupIndex.build({"0": (0, 1)}, 2))
    assert not headers_hold_all(header_table(raws), GroupIndex.build({"1": (0, 1)}, 2))  # group "0" unread
    assert not headers_hold_all(header_table(raws), GroupIndex.build({"0": (0, 1, 5)}, 2))  # outside the job
    many = {str(i): GroupProgress(str(i), 1, 1) for i in range(9)}
    crowded = [encode_record(base[0]._replace(groups=many)), raws[1]]
    assert not headers_hold_all(header_table(crowded), GroupIndex.build(dict.fromkeys(many, (0, 1)), 2))
    swapped = [raws[1], raws[0]]  # a value that names another rank
    assert not headers_hold_all(header_table(swapped), GroupIndex.build({"0": (0, 1)}, 2))


def test_flags_pick_the_records_with_channels() -> None:
    records = [RankRecord(r, 3, pid=r + 1, groups={"0": GroupProgress("0", 1, 1)},
                          p2p=(P2PProgress("0", 2, "send", 1, 0, 0.5),) if r == 1 else ()) for r in range(3)]
    columns, lazy = _columns(records, {"0": (0, 1, 2)})
    assert columns.flagged(P2P) == [1]
    assert [r for r, _ in columns.with_records(P2P)] == [1] and set(lazy._cache) == {1}


def test_drifting_names_only_the_groups_whose_counts_differ() -> None:
    def rec(rank: int, tp_count: int) -> RankRecord:
        tp = f"tp{rank // 2}"
        return RankRecord(rank, 4, pid=rank + 1, step=3,
                          groups={"0": GroupProgress("0", 6, 6), tp: GroupProgress(tp, tp_count, tp_count)},
                          step_marks=(StepMark(3, {"0": 6, tp: tp_count}),))
    groups = {"0": (0, 1, 2, 3), "tp0": (0, 1), "tp1": (2, 3)}
    columns, _ = _columns([rec(0, 4), rec(1, 4), rec(2, 4), rec(3, 3)], groups)
    assert columns.drifting() == {"tp1"}
    columns, _ = _columns([rec(r, 4) for r in range(4)], groups)
    assert columns.drifting() == set()


@pytest.mark.parametrize("fault", ["late", "hang"])
def test_an_incident_cycle_decodes_only_what_it_names(fault: str) -> None:
    """512 ranks: one late rank (or every rank inside a hung all_reduce) for 12 s; the monitor's cycles
    name it from the headers and decode a handful of records, where the reference decodes all 512."""
    world = 512
    store = MemoryStore()
    keys = JobKeys("syncdoctor/v1", 0)
    scoped = ScopedStore(store)
    scoped.set(keys.group("0"), f"0-{world - 1}")
    config = WatchConfig(interval_s=1.0, warn_after_s=10.0, confirm_after_s=60.0, suspect_after_s=5.0)
    clock = [100.0]
    monitor = Monitor(scoped, keys, config, world, who="m", clock=lambda: clock[0], wall_clock=lambda: clock[0])

    def publish(beat: int, stuck: bool) -> None:
        for rank in range(world):
            late = stuck and fault == "late" and rank == 7
            progress = GroupProgress("0", 40 + (not late), 40, 12.0 + beat, AR, 41) if stuck and not late else \
                GroupProgress("0", 40, 40)
            store.set(keys.rank(rank), encode_record(RankRecord(
                rank, world, host=f"n{rank // 8}", node=rank // 8, pid=1000 + rank, heartbeat=beat, step=9,
                groups={"0": progress}, published=clock[0])))

    for beat in range(1, 4):
        clock[0] += 1.0
        publish(beat, stuck=False)
        monitor.cycle()
    events = []
    for beat in range(4, 8):
        clock[0] += 1.0
        publish(beat, stuck=True)
        events += monitor.cycle()
        assert monitor.last_path == "full"
        assert isinstance(monitor.records, LazyRecords)
        assert len(monitor.records._cache) <= 4, sorted(monitor.records._cache)
        # the heartbeat arrays the monitor hands the columns are the detector's own bookkeeping
        assert monitor._changed_at.tolist() == [monitor.state.seen[r].changed_at for r in range(world)]
    assert monitor.column_cycles == 4
    if fault == "late":
        assert [(e.code, e.ranks) for e in events] == [("W101", (7,))]
        assert events[0].waiting_ranks == tuple(r for r in range(world) if r != 7)
        assert events[0].hosts == ("n0",) and events[0].pids == (1007,)
    else:
        assert [(e.code, e.waiting_ranks) for e in events] == [("W104", tuple(range(world)))]
        assert events[0].detail["hosts"] == [f"n{i}" for i in range(world // 8)]
