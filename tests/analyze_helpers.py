"""Helpers for the analyze tests: parse lines the way production does (through the scanner)."""

from __future__ import annotations

from pathlib import Path

from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.api import Analysis
from syncdoctor.analyze.collect import dedup_events
from syncdoctor.analyze.model import Category, Diagnosis, Event, Hypothesis, Kind, Origin, Ref
from syncdoctor.analyze.parsers import make_line, parse_line
from syncdoctor.analyze.scan import Scanner
from syncdoctor.analyze.textlog import read_text
from syncdoctor.analyze.timeline import Timeline

NO_ORIGIN = Origin()
FIXTURES = Path(__file__).parent / "fixtures" / "analyze"


def read(text: str, source: str = "t.log", origin: Origin = NO_ORIGIN) -> list[Event]:
    """Every event of a multi-line text, read like a file."""
    events: list[Event] = []
    read_text([text.encode() if text.endswith("\n") else text.encode() + b"\n"], source, origin, events, Scanner())
    return dedup_events(events)


def events_of(text: str, origin: Origin = NO_ORIGIN) -> list[Event]:
    """Events of one line, through the scanner; fails if a parser finds something no scanner anchor covers."""
    events = read(text.rstrip("\n"), origin=origin)
    direct = parse_line(make_line(text, Ref("t.log", 1), origin))
    assert {e.kind for e in direct} <= {e.kind for e in events}, f"no scanner anchor covers: {text!r}"
    return events


def one(text: str, kind: Kind, origin: Origin = NO_ORIGIN) -> Event:
    found = [e for e in events_of(text, origin) if e.kind is kind]
    assert len(found) == 1, (text, events_of(text, origin))
    return found[0]


def _analyze_paste(tmp_path: Path, text: str) -> Analysis:
    path = tmp_path / "paste.txt"
    path.write_text(text.strip("\n") + "\n")
    return analyze_paths([str(path)])


def diagnose_paste(tmp_path: Path, text: str) -> Diagnosis:
    """The diagnosis of ``text`` written to a file, as a user's paste would be analysed."""
    return _analyze_paste(tmp_path, text).diagnosis


def top_of(tmp_path: Path, text: str) -> Hypothesis:
    """The first hypothesis of ``text``'s diagnosis (the paste must give one)."""
    hypotheses = diagnose_paste(tmp_path, text).hypotheses
    assert hypotheses, text
    return hypotheses[0]


def timeline_of(tmp_path: Path, text: str) -> Timeline:
    """The timeline of ``text`` written to a file (the events after attribution and the timeline's own checks)."""
    return _analyze_paste(tmp_path, text).timeline


def each_read(tmp_path: Path, lines: dict[str, Category | None], quiet: str = "") -> None:
    """Each line alone gets a hypothesis, of the category given (None: any); the look-alikes in ``quiet`` (one
    paste) get none."""
    for line, category in lines.items():
        hypotheses = diagnose_paste(tmp_path, line + "\n").hypotheses
        assert hypotheses, line
        assert category is None or hypotheses[0].category is category, (line, hypotheses[0].code)
    if quiet:
        assert diagnose_paste(tmp_path, quiet).hypotheses == (), quiet
