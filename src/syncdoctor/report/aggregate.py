"""Make large jobs fit a page: bin a node x node matrix, pick the lanes worth drawing. Pure: no I/O.

A 1024 x 1024 matrix drawn cell by cell is a million SVG elements; binned to at most 64 x 64 it is 4096,
and each bin keeps its worst value (the slowest link, the largest latency), so an outlier never averages
away. Timelines keep the culprit lanes and the top ``k`` others and summarise the rest in one line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Binned", "bin_labels", "bin_matrix", "pick_top"]


@dataclass(frozen=True)
class Binned:
    """A matrix reduced to ``bins x bins``: values, one label per bin, and the original indexes per bin."""

    values: tuple[tuple[float | None, ...], ...]
    labels: tuple[str, ...]
    members: tuple[tuple[int, ...], ...]
    size: int  # the original side

    @property
    def binned(self) -> bool:
        return any(len(m) > 1 for m in self.members)


def bin_labels(labels: Sequence[str], members: Sequence[Sequence[int]]) -> tuple[str, ...]:
    """``node3`` for a single member, ``node0..node15`` for a range."""
    out = []
    for group in members:
        if len(group) == 1:
            out.append(labels[group[0]])
        else:
            out.append(f"{labels[group[0]]}..{labels[group[-1]]}")
    return tuple(out)


def bin_matrix(
    values: Sequence[Sequence[float | None]],
    labels: Sequence[str],
    *,
    max_side: int = 64,
    reduce: Callable[[Iterable[float]], float] = min,
) -> Binned:
    """Group consecutive rows and columns so that the side is at most ``max_side``; each bin is ``reduce``
    over its measured cells (``None`` when none were measured)."""
    size = len(values)
    per_bin = max(1, math.ceil(size / max(max_side, 1)))
    members = tuple(tuple(range(start, min(start + per_bin, size))) for start in range(0, size, per_bin))
    if per_bin == 1:
        rows = tuple(tuple(row) for row in values)
        return Binned(rows, tuple(labels), members, size)
    out: list[tuple[float | None, ...]] = []
    for row_bin in members:
        line: list[float | None] = []
        for cols in members:
            cells = [
                v for i in row_bin for j in cols
                if j < len(values[i]) and (v := values[i][j]) is not None and math.isfinite(v)
            ]
            line.append(reduce(cells) if cells else None)
        out.append(tuple(line))
    return Binned(tuple(out), bin_labels(labels, members), members, size)


def pick_top(scores: Sequence[tuple[int, float]], keep: Iterable[int], k: int) -> list[int]:
    """The ids in ``keep`` first (in order), then the ``k`` best-scoring others (score descending)."""
    chosen = list(dict.fromkeys(keep))
    seen = set(chosen)
    extra = 0
    for ident, _score in sorted(scores, key=lambda item: (-item[1], item[0])):
        if extra >= k:
            break
        if ident not in seen:
            chosen.append(ident)
            seen.add(ident)
            extra += 1
    return chosen
