"""A rank's Python stack as its watcher captures it on request (with its native stack when it sits in a call
into C++: :mod:`syncdoctor.watch.native`), and its JSON form in the job's store.

Pure: no I/O (the capture itself is :func:`syncdoctor.watch.local.capture_stack`). :func:`decode_stack`
never raises on bad input: it returns ``None``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["NATIVE_PENDING", "Frame", "StackReport", "decode_stack", "encode_stack"]

NATIVE_PENDING = "being taken with py-spy --native"


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
    ``in_native``: the innermost Python frame was in a call into native code (C++, CUDA, NCCL, I/O);
    ``native``: then its native frames, innermost first (``name (library)``), or ``native_note`` says why
    not, or that they are still being taken (:data:`NATIVE_PENDING`).
    """

    rank: int
    gen: int
    frames: tuple[Frame, ...] = ()
    where: Frame | None = None
    note: str = ""
    captured: float = 0.0
    callers: tuple[Frame, ...] = ()
    in_native: bool = False
    native: tuple[str, ...] = ()
    native_note: str = ""

    @property
    def native_pending(self) -> bool:
        return self.native_note == NATIVE_PENDING

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
    if report.in_native:
        data |= {"in": 1, "n": list(report.native[:40]), "nn": report.native_note}
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
            in_native=bool(data.get("in", 0)),
            native=tuple(str(f) for f in data.get("n", ())),
            native_note=str(data.get("nn", "")),
        )
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
