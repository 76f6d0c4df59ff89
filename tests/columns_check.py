"""The detector on plain records against the detector on the same records' headers as columns.

:func:`detect_both` runs :func:`~syncdoctor.watch.detector.detect` as the test asked (its result is the
test's) and, on copies of the detector's state, twice more on the records as the monitor would read them
(encoded and decoded): once decoding every record, once over the headers' columns
(:mod:`syncdoctor.watch.columns`) where the headers hold everything. Those two must give the same events,
requests and state, so every scenario of the detector's tests also tests the bulk pass.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from syncdoctor.watch.columns import Columns, headers_hold_all
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.detector import Detection, detect
from syncdoctor.watch.monitor import LazyRecords
from syncdoctor.watch.records import decode_record, encode_record
from syncdoctor.watch.screen import GroupIndex, header_table
from syncdoctor.watch.snapshot import DetectorState, Snapshot

RUNS = {"columns": 0, "records": 0}  # how many snapshots each way went (the tests check columns were used)


def _state_view(state: DetectorState) -> object:
    return (
        {r: (s.heartbeat, s.changed_at) for r, s in state.seen.items()}, sorted(state.incidents.items()),
        state.stack_gen, state.stack_asked, state.inspect_asked, state.pending_waits, state.waits_done,
        list(state.window), state.closed, state.partial_seen, state.waits_dropped, state.roots, state.due_at,
        state.busy_at,
    )


def detect_both(snapshot: Snapshot, config: WatchConfig, state: DetectorState) -> Detection:
    before = copy.deepcopy(state)
    result = detect(snapshot, config, state)
    world = snapshot.world_size
    if set(snapshot.records) != set(range(world)):
        RUNS["records"] += 1
        return result  # a rank without a record: the monitor decodes every record then
    raws = [encode_record(snapshot.records[r]) for r in range(world)]
    decoded = {r: decode_record(raw) for r, raw in enumerate(raws)}
    assert all(rec is not None for rec in decoded.values())
    tables = {name: tuple(sorted(members)) for name, members in snapshot.groups.items()}
    table = header_table(raws)
    index = GroupIndex.build(tables, world)
    if table is None or not headers_hold_all(table, index):
        RUNS["records"] += 1
        return result
    plain_state, bulk_state = copy.deepcopy(before), copy.deepcopy(before)
    plain = detect(replace(snapshot, records=decoded), config, plain_state)  # type: ignore[arg-type]
    lazy = LazyRecords(raws)
    lazy.headers_valid = True
    waits = [(r, rec.waits) for r, rec in decoded.items() if rec is not None]  # every wait: ingest is idempotent
    bulk = detect(replace(snapshot, records=lazy, columns=Columns(table, index, lazy, {}, waits)), config, bulk_state)
    assert [e.to_json() for e in bulk.events] == [e.to_json() for e in plain.events]
    assert bulk.requests == plain.requests
    assert _state_view(bulk_state) == _state_view(plain_state)
    RUNS["columns"] += 1
    return result
