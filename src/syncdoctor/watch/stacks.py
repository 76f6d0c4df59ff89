"""A rank's Python stack as its watcher captures it on request, and its JSON form in the job's store.

Pure: no I/O (the capture itself is :func:`syncdoctor.watch.local.capture_stack`). :func:`decode_stack`
never raises on bad input: it returns ``None``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["Frame", "StackReport", "decode_stack", "encode_stack"]


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str

    def short(self) -> str:
        name = self.file.rsplit("/", 1)[-1]
        function = self.function.rsplit("<locals>.", 1)[-1]
        return f"{function} ({name}:{self.line})"


@dataclass(frozen=True)
class StackReport:
    """The main thread's Python stack of one rank, captured by its watcher on request.

    ``frames`` are outermost first. ``where`` is the innermost frame in the user's code (not in torch,
    the standard library or syncdoctor): the function the rank is in; ``callers`` are the next user
    frames outwards (innermost first). ``note`` says why there are no frames when capture failed.
    """

    rank: int
    gen: int
    frames: tuple[Frame, ...] = ()
    where: Frame | None = None
    note: str = ""
    captured: float = 0.0
    callers: tuple[Frame, ...] = ()

    def summary(self) -> str:
        """``stall (workload.py:120) < load_batch (workload.py:237)``: innermost user frame first."""
        if self.where is not None:
            return " < ".join(f.short() for f in (self.where, *self.callers))
        return self.note or "no stack"


def encode_stack(report: StackReport) -> bytes:
    data = {
        "r": report.rank,
        "gen": report.gen,
        "f": [[f.file, f.line, f.function] for f in report.frames[-40:]],
        "w": [report.where.file, report.where.line, report.where.function] if report.where else None,
        "note": report.note,
        "t": round(report.captured, 3),
        "c": [[f.file, f.line, f.function] for f in report.callers],
    }
    return json.dumps(data, separators=(",", ":")).encode()


def decode_stack(raw: bytes | str | None) -> StackReport | None:
    if not raw:
        return None
    try:
        data = json.loads(raw)
        where = data.get("w")
        return StackReport(
            rank=int(data["r"]),
            gen=int(data["gen"]),
            frames=tuple(Frame(str(f[0]), int(f[1]), str(f[2])) for f in data.get("f", ())),
            where=Frame(str(where[0]), int(where[1]), str(where[2])) if where else None,
            note=str(data.get("note", "")),
            captured=float(data.get("t", 0.0)),
            callers=tuple(Frame(str(f[0]), int(f[1]), str(f[2])) for f in data.get("c", ())),
        )
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
