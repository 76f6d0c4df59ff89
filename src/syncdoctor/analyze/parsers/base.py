"""What every line parser receives and may return. Pure: no I/O.

A line parser is a module with ``KEYWORDS`` (the line must contain one of them for ``parse`` to be called)
and ``parse(line) -> list[Event]``. A parser that needs the lines after a header (a Python traceback,
torchrun's failure table, a desync report) also has ``follow(line) -> Follower | None``: the reader then
feeds the follower the next lines until it says it is done.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from syncdoctor.analyze.model import Event, Kind, Origin, Ref

__all__ = ["MAX_TEXT", "Follower", "Line", "clip", "make_event", "masked", "normalize_op"]

MAX_TEXT = 400  # characters of a line kept as evidence text


_MASKED = re.compile(r"[xX]+|\*+|<[^>]*>|\.{3}")


def masked(name: str) -> bool:
    """A host or address the poster hid (``xxxxxx``, ``***``, ``<redacted>``, ``...``): no name at all. A placeholder
    that reads as a name (``HOSTNAME``) is the name the paste gives."""
    return _MASKED.fullmatch(name) is not None


def clip(text: str, limit: int = MAX_TEXT) -> str:
    text = text.rstrip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Line:
    """One decoded line: the full text, the body after the prefixes, and what the prefixes said."""

    text: str
    body: str
    ref: Ref
    origin: Origin
    time: float | None = None
    time_text: str = ""
    severity: str = ""
    glog_file: str = ""


def make_event(
    kind: Kind,
    line: Line,
    *,
    origin: Origin | None = None,
    group: str | None = None,
    seq: int | None = None,
    op: str | None = None,
    data: Mapping[str, Any] | None = None,
    time: float | None = None,
    time_text: str = "",
) -> Event:
    """An event at ``line``; ``origin`` (what the message itself says) wins over the line's prefix/file."""
    merged = origin.filled_from(line.origin) if origin is not None else line.origin
    return Event(
        kind=kind,
        ref=line.ref,
        text=clip(line.text),
        origin=merged,
        time=time if time is not None else line.time,
        time_text=time_text or line.time_text,
        group=group,
        seq=seq,
        op=op,
        data=dict(data or {}),
    )


class Follower(Protocol):
    """Collects the lines after a header line, then turns them into events."""

    max_lines: int

    def feed(self, line: Line) -> bool:
        """Take the next line; return False when the block has ended (the line is not part of it)."""

    def finish(self) -> list[Event]:
        """The events of the collected block (called once, when feeding stopped)."""


_BACKENDS = ("nccl:", "gloo:", "xccl:", "ucc:", "mpi:", "c10d:", "ncclx:")


def normalize_op(op: str) -> str:
    """``ALLREDUCE``, ``all_reduce``, ``nccl:all_reduce``, ``_ALLGATHER_BASE`` -> ``allreduce``, ``allgather``.

    Point-to-point names keep their peers (``send 1->2``)."""
    text = op.strip().lower()
    for prefix in _BACKENDS:
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    head, _, rest = text.partition(" ")
    head = head.replace("_", "")
    if head.endswith("base") and head != "base":
        head = head[: -len("base")]
    return f"{head} {rest}".strip()
