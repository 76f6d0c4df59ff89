"""What a rank called at one sequence number: the op and its tensors' shapes and dtypes.

Pure: no I/O. A :class:`Signature` travels in a rank's record in its compact text form
(:meth:`Signature.to_compact`, read back by :func:`signature_from_compact`) and in events as JSON.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Signature", "signature_from_compact", "sizes_from"]


@dataclass(frozen=True)
class Signature:
    """What a rank called at one sequence number: op name and tensor shapes and dtypes."""

    op: str
    input_sizes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    output_sizes: tuple[tuple[int, ...], ...] = ()

    def short(self) -> str:
        shapes = ",".join("x".join(str(d) for d in s) or "scalar" for s in self.input_sizes)
        dtype = "/".join(sorted(set(self.dtypes))).lower()
        parts = [self.op]
        if dtype or shapes:
            parts.append(f"{dtype}[{shapes}]")
        return " ".join(parts)

    def to_compact(self) -> str:
        """``all_reduce|1000;4x5|Float|1000;4x5`` (the record form: short, and parsed once per distinct value)."""
        return "|".join(
            (self.op, ";".join("x".join(map(str, s)) for s in self.input_sizes), ";".join(self.dtypes),
             ";".join("x".join(map(str, s)) for s in self.output_sizes))
        )

    def to_json(self) -> list[Any]:
        return [self.op, [list(s) for s in self.input_sizes], list(self.dtypes), [list(s) for s in self.output_sizes]]

    @classmethod
    def from_json(cls, data: Any) -> Signature | None:
        if not isinstance(data, list) or not data or not isinstance(data[0], str):
            return None
        try:
            ins = tuple(tuple(int(d) for d in s) for s in (data[1] if len(data) > 1 else []))
            dts = tuple(str(d) for d in (data[2] if len(data) > 2 else []))
            outs = tuple(tuple(int(d) for d in s) for s in (data[3] if len(data) > 3 else []))
        except (TypeError, ValueError):
            return None
        return cls(data[0], ins, dts, outs)


@functools.lru_cache(maxsize=4096)
def signature_from_compact(text: str) -> Signature | None:
    """The signature in its record form (:meth:`Signature.to_compact`), or ``None`` when malformed (cached)."""
    parts = text.split("|")
    if len(parts) != 4 or not parts[0]:
        return None

    def shapes(field: str) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(int(d) for d in shape.split("x") if d) for shape in field.split(";")) if field else ()

    try:
        return Signature(parts[0], shapes(parts[1]), tuple(parts[2].split(";")) if parts[2] else (), shapes(parts[3]))
    except ValueError:
        return None



def sizes_from(values: Sequence[Any] | None) -> tuple[tuple[int, ...], ...]:
    """FR ``input_sizes`` (list of shape lists) as a tuple of tuples; tolerant of odd shapes."""
    out = []
    for shape in values or ():
        try:
            out.append(tuple(int(d) for d in shape))
        except (TypeError, ValueError):
            continue
    return tuple(out)
