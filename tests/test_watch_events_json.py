"""The watch event document: Event.to_json/from_json round trips (the fixture event file, synthetic and generated
events), one schema constant, and malformed lines as InputError only."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncdoctor.errors import InputError
from syncdoctor.report import html, synthetic
from syncdoctor.watch.events import CODES, SCHEMA, STATUSES, Event
from syncdoctor.watch.records import Signature

DEMO = Path(__file__).parent / "fixtures" / "docs" / "demo-events.jsonl"


def test_one_schema_constant() -> None:
    assert html.WATCH_KIND is SCHEMA == "syncdoctor.watch/events"


def test_event_files_round_trip() -> None:
    lines = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
    lines += synthetic.watch_events(64, straggler=5, late=9, dead=3)
    for line in lines:
        event = Event.from_json(line)
        written = event.to_json()
        # derived, not read: files written before it existed are read as well
        assert written.pop("suspect_nodes") == [s.to_json() for s in event.suspect_nodes]
        line.pop("suspect_nodes", None)
        assert written.pop("nodes") == line.pop("nodes", [])  # files of older versions have no nodes
        assert written == line
        assert Event.from_json(event.to_json()) == event


_small = st.integers(min_value=0, max_value=4096)
_names = st.text(alphabet="abcdefgh-_.0123456789", min_size=1, max_size=10)
_signature = st.builds(Signature, op=_names, input_sizes=st.lists(st.tuples(_small), max_size=2).map(tuple),
                       dtypes=st.lists(_names, max_size=2).map(tuple),
                       output_sizes=st.lists(st.tuples(_small, _small), max_size=2).map(tuple))
_event = st.builds(
    Event, code=st.sampled_from(sorted(CODES)), status=st.sampled_from(STATUSES), title=st.text(max_size=40),
    ranks=st.lists(_small, max_size=3).map(tuple), hosts=st.lists(_names, max_size=2).map(tuple),
    pids=st.lists(_small, max_size=2).map(tuple), group=st.none() | _names,
    group_ranks=st.sets(_small, max_size=6).map(lambda s: tuple(sorted(s))), seq=st.none() | _small,
    signature=st.none() | _signature, other_signature=st.none() | _signature,
    waiting_ranks=st.lists(_small, max_size=3).map(tuple),
    waited_s=st.none() | st.integers(0, 10**6).map(lambda n: n / 100),
    detail=st.dictionaries(_names, st.none() | _small | _names, max_size=3), key=st.text(max_size=12),
    at=st.integers(0, 2 * 10**12).map(lambda n: n / 1000), nodes=st.lists(_names, max_size=2).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(event=_event)
def test_round_trip(event: Event) -> None:
    line = json.loads(json.dumps(event.to_json()))
    assert Event.from_json(line) == event
    assert Event.from_json(line).to_json() == line


@pytest.mark.parametrize(("line", "message"), [
    ([1], "expected a JSON object"),
    ({"status": "warning"}, "no code"),
    ({"code": "W101", "ranks": "1"}, "ranks must be a JSON list"),
    ({"code": "W101", "ranks": [1.5]}, "ranks must be an integer"),
    ({"code": "W101", "group_ranks": "0-x"}, "is not a rank list"),
    ({"code": "W101", "signature": ["all_reduce", "big"]}, "signature"),
    ({"code": "W101", "waited_s": "3 s"}, "waited_s must be a number"),
    ({"code": "W101", "detail": [1]}, "detail must be a JSON object"),
])
def test_malformed_lines_are_input_errors(line: Any, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        Event.from_json(line)


@settings(max_examples=200, deadline=None)
@given(line=st.dictionaries(st.sampled_from(["code", "status", "ranks", "group_ranks", "signature", "waited_s", "at",
                                             "detail", "hosts", "seq", "key", "title"]),
                            st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
                                         lambda inner: st.lists(inner, max_size=3), max_leaves=6), max_size=6))
def test_from_json_raises_only_input_error(line: dict[str, Any]) -> None:
    try:
        Event.from_json(line)
    except InputError:
        pass


def test_report_reads_typed_events(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(DEMO.read_text())
    report = html.load_report_input(path)
    assert report.kind == "watch" and all(isinstance(e, Event) for e in report.data)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"code": "W101", "status": "warning", "ranks": "three"}\n')
    with pytest.raises(InputError, match=re.escape(f"{bad}: watch event: ranks must be a JSON list")):
        html.load_report_input(bad)
