"""Read one text log: find candidate lines with the scanner, parse them, follow multi-line blocks.

Pure apart from consuming the blocks it is given (see :func:`syncdoctor.analyze.inputs.iter_blocks`).
Every line is counted (evidence cites ``file:line``) but only lines containing an anchor are decoded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from syncdoctor.analyze.model import Event, Origin, Ref
from syncdoctor.analyze.parsers import make_line, parse_line, start_followers
from syncdoctor.analyze.parsers.base import Follower
from syncdoctor.analyze.parsers.torchrun import drop_records_inside_tables
from syncdoctor.analyze.scan import Scanner

__all__ = ["TextStats", "read_text"]


@dataclass
class TextStats:
    """How much of a text input was read."""

    lines: int = 0
    bytes: int = 0
    candidates: int = 0
    repeats: int = 0  # NCCL INFO lines skipped as repeats of one already parsed


_INFO = b" NCCL INFO "
_MAX_SEEN = 200_000  # distinct NCCL INFO keys remembered (bounded memory whatever the log)


def _info_key(raw: bytes, at: int) -> bytes | None:
    """A key under which repeated NCCL INFO lines are the same for the analysis, or None (always parse).

    ``at`` is where ``" NCCL INFO "`` starts in ``raw``. NCCL prints its configuration (bootstrap, NET/IB,
    network) again for every communicator a process joins, and an ``Init START`` and ``Init COMPLETE`` per
    communicator: only the first of each per process and message (per process and communicator size for ``Init
    COMPLETE``, per process and GPU for ``Init START``) says something new. The key is the line without the thread id of ``host:pid:tid``.
    """
    space = raw.rfind(b" ", 0, at)
    colon = raw.rfind(b":", 0, space) if space > 0 else -1
    if colon <= 0:
        return None
    if raw.find(b"Init START", at) >= 0:  # which GPU a process starts on: its first communicator per GPU says it
        bus = raw.find(b" busId ", at)
        return raw[:colon] + b"|START|" + (raw[bus + 7: bus + 24].split(b" ", 1)[0] if bus >= 0 else b"")
    complete = raw.find(b"Init COMPLETE", at)
    if complete < 0:
        return raw[:colon] + raw[space:]
    sized = raw.find(b" nranks ", at)
    if sized < 0:
        return None
    return raw[:colon] + b"|COMPLETE|" + raw[sized + 8: sized + 16].split(b" ", 1)[0]


@dataclass
class _Active:
    follower: Follower
    fed: int = 0


@dataclass
class _State:
    source: str
    file_origin: Origin
    events: list[Event]
    active: list[_Active] = field(default_factory=list)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _feed(state: _State, active: _Active, block: bytes, pos: int, number: int) -> bool:
    """Feed lines from ``pos`` (line ``number``) on; True when the follower is still waiting for more."""
    follower = active.follower
    size = len(block)
    while pos < size:
        if active.fed >= follower.max_lines:
            state.events.extend(follower.finish())
            return False
        end = block.find(b"\n", pos)
        if end == -1:
            end = size
        line = make_line(_decode(block[pos:end]), Ref(state.source, number), state.file_origin)
        active.fed += 1
        if not follower.feed(line):
            state.events.extend(follower.finish())
            return False
        pos = end + 1
        number += 1
    return True


def read_text(
    blocks: Iterable[bytes],
    source: str,
    file_origin: Origin,
    events: list[Event],
    scanner: Scanner | None = None,
) -> TextStats:
    """Parse the lines of ``blocks`` (each ending with a newline) into ``events``; returns what was read."""
    scanner = scanner or Scanner()
    state = _State(source, file_origin, events)
    stats = TextStats()
    first = len(events)  # this input's events start here
    seen: set[bytes] = set()
    lines_before = 0  # lines in the blocks already read
    for block in blocks:
        stats.bytes += len(block)
        if state.active:
            state.active = [a for a in state.active if _feed(state, a, block, 0, lines_before + 1)]
        counted_pos = 0
        counted = lines_before
        find = block.find
        for start in scanner.line_starts(block):
            end = find(b"\n", start)
            if end == -1:
                end = len(block)
            raw = block[start:end]
            at = raw.find(_INFO)
            if at >= 0:  # NCCL chatter: most of it repeats per communicator, skip what was seen
                key = _info_key(raw, at)
                if key is not None:
                    if key in seen:
                        stats.repeats += 1
                        continue
                    if len(seen) < _MAX_SEEN:
                        seen.add(key)
            counted += block.count(b"\n", counted_pos, start)
            counted_pos = start
            number = counted + 1
            line = make_line(_decode(raw), Ref(source, number), file_origin)
            stats.candidates += 1
            events.extend(parse_line(line))
            for follower in start_followers(line):
                active = _Active(follower)
                if _feed(state, active, block, end + 1, number + 1):
                    state.active.append(active)
        lines_before = counted + block.count(b"\n", counted_pos)
    for active in state.active:
        events.extend(active.follower.finish())
    events[first:] = drop_records_inside_tables(events[first:])
    stats.lines = lines_before
    return stats
