"""Read every input once and gather what it says: events from logs, RAS reports and watch files, and
Flight Recorder dumps. Does I/O (through :mod:`syncdoctor.analyze.inputs`).

Unreadable or unrecognised inputs never stop the analysis: each becomes a note in the result.
"""

from __future__ import annotations

import io
import json
import logging
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import BinaryIO

from syncdoctor.analyze import lastlook
from syncdoctor.analyze.inputs import (
    MAX_LINE,
    Source,
    archive_members,
    chunks_stream,
    iter_blocks,
    open_source,
    sniff,
)
from syncdoctor.analyze.model import Event, FrDump, Kind, Origin, Ref
from syncdoctor.analyze.parsers import flight_recorder, ras, watch_events
from syncdoctor.analyze.parsers.prefixes import origin_from_path
from syncdoctor.analyze.paste import (
    double_spaced,
    json_records,
    plain_spaces,
    records_text,
    runners_line,
    strings_text,
    unjsoned,
    unquoted,
    unspaced,
)
from syncdoctor.analyze.scan import Scanner
from syncdoctor.analyze.textlog import read_text
from syncdoctor.errors import InputError

__all__ = ["Collected", "collect", "dedup_events"]

logger = logging.getLogger(__name__)

_HEAD = 64 * 1024
_MAX_RAS_TEXT = 16 * 1024 * 1024
_MAX_JSON = flight_recorder.MAX_DUMP_BYTES


@dataclass
class Collected:
    """Everything read from the inputs."""

    events: list[Event] = field(default_factory=list)
    dumps: list[FrDump] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bytes_read: int = 0
    lines_read: int = 0
    file_ranks: dict[int, str | None] = field(default_factory=dict)  # rank -> host, from log file names
    # the whole text of each plain-text input no larger than lastlook.MAX_BYTES (its name, its file's origin), as read
    # (what pasting did undone), kept for a last look when nothing else was found (a paste)
    small_texts: list[tuple[str, Origin, bytes]] = field(default_factory=list)


def _read_capped(stream: BinaryIO, head: bytes, cap: int) -> bytes | None:
    rest = stream.read(cap + 1 - len(head)) if len(head) <= cap else b""
    data = head + rest
    return None if len(data) > cap else data


def _read_json_doc(source: Source, stream: BinaryIO, head: bytes, out: Collected, origin: Origin,
                   scanner: Scanner) -> None:
    data = _read_capped(stream, head, _MAX_JSON)
    if data is None:
        out.notes.append(f"{source.name}: JSON larger than {_MAX_JSON // 2**20} MiB, skipped")
        return
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        # a log whose first line merely starts with a brace: read it as text
        stats = read_text(iter_blocks(io.BytesIO(data)), source.name, origin, out.events, scanner)
        out.bytes_read += stats.bytes
        out.lines_read += stats.lines
        return
    out.bytes_read += len(data)
    if flight_recorder.looks_like_dump(doc):
        rank = flight_recorder.rank_from_name(source.name, origin.rank)
        try:
            out.dumps.append(flight_recorder.parse_dump(data, "json", Ref(source.name), rank, origin.host))
        except InputError as exc:
            out.notes.append(str(exc))
    elif ras.looks_like_ras_json(doc):
        out.events.extend(ras.parse_json(doc, source.name))
    elif isinstance(doc, (dict, list)) and _watch_records(doc, source.name, out):
        pass
    elif (text := records_text(doc)) is not None:  # a log collector's records (one, or a list): the lines they hold
        stats = read_text(iter_blocks(io.BytesIO(text)), source.name, origin, out.events, scanner)
        out.lines_read += stats.lines
    elif text := strings_text(doc):  # torchelastic's error file, an object some tool printed: the text it holds
        out.notes.append(f"{source.name}: JSON that is neither a Flight Recorder dump nor a RAS report; its strings "
                         f"read as lines")
        stats = read_text(iter_blocks(io.BytesIO(text)), source.name, origin, out.events, scanner)
        out.lines_read += stats.lines
    else:
        out.notes.append(f"{source.name}: JSON that is neither a Flight Recorder dump nor a RAS report; skipped")


def _watch_records(doc: object, name: str, out: Collected) -> bool:
    """A single watch event, or a JSON list of them; True when at least one was read."""
    records = doc if isinstance(doc, list) else [doc]
    found = 0
    for index, record in enumerate(records[:1_000_000], start=1):
        if isinstance(record, dict):
            event = watch_events.parse_record(record, Ref(name, index if isinstance(doc, list) else 1))
            if event is not None:
                out.events.append(event)
                found += 1
    return found > 0


def _read_pickle(source: Source, stream: BinaryIO, head: bytes, out: Collected, origin: Origin) -> None:
    data = _read_capped(stream, head, flight_recorder.MAX_DUMP_BYTES)
    if data is None:
        out.notes.append(f"{source.name}: pickle larger than {flight_recorder.MAX_DUMP_BYTES // 2**20} MiB, skipped")
        return
    out.bytes_read += len(data)
    rank = flight_recorder.rank_from_name(source.name, origin.rank)
    try:
        out.dumps.append(flight_recorder.parse_dump(data, "pickle", Ref(source.name), rank, origin.host))
    except InputError as exc:
        out.notes.append(f"{source.name}: {exc}")


def _watch_event_first(head: bytes) -> bool:
    """Whether a file of one object per line starts with a watch event: a log whose first lines are a trainer's
    metric dicts (``{'loss': 0.9, 'epoch': 0.25}``, Hugging Face's Trainer) is read as text, not skipped."""
    first = head.lstrip().partition(b"\n")[0][:MAX_LINE]
    try:
        record = json.loads(first.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return False
    # (a runner's record of its child's line is a collector's, read as that line)
    return isinstance(record, Mapping) and not runners_line(record) and \
        watch_events.parse_record(record, Ref("", 1)) is not None


def _read_jsonl(source: Source, stream: BinaryIO, head: bytes, out: Collected) -> None:
    number = 0
    for block in iter_blocks(stream, prefix=head):
        out.bytes_read += len(block)
        for raw in block.split(b"\n")[:-1]:
            number += 1
            event = watch_events.parse_line(raw[:MAX_LINE].decode("utf-8", "replace"), Ref(source.name, number))
            if event is not None:
                out.events.append(event)
    out.lines_read += number


def _read_source(source: Source, stream: BinaryIO, out: Collected, scanner: Scanner, origin: Origin) -> None:
    head = stream.read(_HEAD)
    kind = sniff(head)
    if kind == "jsonl" and not _watch_event_first(head) and json_records(head):
        # a collector's records (Docker's json-file, a structured logger): the lines they hold, block by block
        stream = chunks_stream(unjsoned(block) for block in iter_blocks(stream, prefix=head))
        head = stream.read(_HEAD)
        kind = sniff(head)
    if kind == "pickle":
        _read_pickle(source, stream, head, out, origin)
    elif kind == "json":
        _read_json_doc(source, stream, head, out, origin, scanner)
    elif kind == "jsonl" and _watch_event_first(head):
        _read_jsonl(source, stream, head, out)
    elif ras.looks_like_ras_text(plain_spaces(unquoted(head[:8192])).decode("utf-8", "replace")):
        # the report, then the same bytes (and whatever follows) as a log: a paste often puts the ranks' own
        # lines (a watchdog timeout) after ncclras's output
        rest = stream.read(_MAX_RAS_TEXT + 1 - len(head)) if len(head) <= _MAX_RAS_TEXT else b""
        data = head + rest
        report = plain_spaces(unquoted(data[:_MAX_RAS_TEXT]))
        if double_spaced(report):
            report = unspaced(report)
        out.events.extend(ras.parse_text(report.decode("utf-8", "replace"), source.name))
        stats = read_text(iter_blocks(stream, prefix=data), source.name, origin, out.events, scanner)
        out.bytes_read += stats.bytes
        out.lines_read += stats.lines
    else:
        stats = read_text(iter_blocks(stream, prefix=head), source.name, origin, out.events, scanner)
        out.bytes_read += stats.bytes
        out.lines_read += stats.lines
        if stats.blocks == 1 and stats.bytes <= lastlook.MAX_BYTES \
                and sum(len(raw) for _, _, raw in out.small_texts) + stats.bytes <= 4 * lastlook.MAX_BYTES:
            out.small_texts.append((source.name, origin, stats.first_block))


def _read_members(members: Iterator[tuple[Source, BinaryIO]], out: Collected, scanner: Scanner) -> None:
    """An archive's files, each an input of its own: its name (``logs.tar.gz!node1/rank3.log``) read as a path."""
    out.sources.pop()  # the archive itself: its files are named instead
    for member, stream in members:
        origin = origin_from_path(member.name.partition("!")[2])
        out.sources.append(member.name)
        if origin.rank is not None:
            out.file_ranks.setdefault(origin.rank, origin.host)
        try:
            _read_source(member, stream, out, scanner, origin)
        except (OSError, EOFError, zlib.error) as exc:  # this file cut or corrupt: the archive's next one is read
            out.notes.append(f"{member.name}: read stopped early ({exc}); using what was read")


def collect(sources: Sequence[Source], *, stdin: BinaryIO | None = None, scanner: Scanner | None = None) -> Collected:
    """Read ``sources`` in order; see the module docstring."""
    scanner = scanner or Scanner()
    out = Collected()
    for source in sources:
        origin = origin_from_path(source.name) if source.path is not None else Origin()
        out.sources.append(source.name)
        if origin.rank is not None:
            out.file_ranks.setdefault(origin.rank, origin.host)
        try:
            with open_source(source, stdin=stdin) as stream:
                members = archive_members(source, stream)
                if members is None:
                    _read_source(source, stream, out, scanner, origin)
                else:
                    _read_members(members, out, scanner)
        except InputError as exc:
            out.notes.append(str(exc))
        except (OSError, EOFError, zlib.error) as exc:
            out.notes.append(f"{source.name}: read stopped early ({exc}); using what was read")
    out.events = dedup_events(out.events)
    return out


def dedup_events(events: Sequence[Event]) -> list[Event]:
    """One event per (kind, file, line, rank), merging the fields found by several parsers or followers."""
    merged: dict[tuple[object, ...], Event] = {}
    for event in events:
        key: tuple[object, ...] = (event.kind, event.ref.source, event.ref.line, event.origin.rank, event.seq,
                                   event.data.get("piece"))  # lines a paste ran together: one number, several lines
        if event.ref.line == 0:
            key += (event.text,)
        previous = merged.get(key)
        if previous is None:
            merged[key] = event
        else:
            data = {**event.data, **previous.data}
            merged[key] = replace(previous, data=data, op=previous.op or event.op, group=previous.group or event.group,
                                  text=event.text if len(event.text) > len(previous.text) else previous.text)
    # a rank's error that another rank printed for it (a distributed checkpoint's report): the line's reading as
    # the printer's own error goes
    reported = {(e.ref.source, e.ref.line, e.data["reported_by"]) for e in merged.values()
                if e.kind is Kind.EXCEPTION and "reported_by" in e.data}
    if not reported:
        return list(merged.values())
    # and the report's summary line for a rank whose own error it also printed
    told = {(e.ref.source, e.origin.rank) for e in merged.values()
            if e.kind is Kind.EXCEPTION and "reported_by" in e.data and not e.data.get("report")}
    return [e for e in merged.values() if not (e.kind is Kind.EXCEPTION and (
        ("reported_by" not in e.data and (e.ref.source, e.ref.line, e.origin.rank) in reported)
        or (e.data.get("report") and (e.ref.source, e.origin.rank) in told)))]
