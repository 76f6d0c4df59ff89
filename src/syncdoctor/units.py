"""Number formatting shared by every report: sizes, rates, durations, counts and rank lists. Pure: no I/O.

Two kinds of rate, named apart because they print different units:

- :func:`format_link_rate`: bytes per second shown in *bits*, the way links are rated (``"9.87 Gb/s"``);
- :func:`format_byte_rate`: bytes per second shown in *bytes* (``"540 MB/s"``), for disk and memory traffic.

Sizes print the nccl-tests way (``4K``, ``16M``, powers of 1024). Durations: :func:`format_seconds` keeps two
or three significant digits (``"3.4 ms"``); :func:`format_duration` prints one decimal up to hours
(``"4.3 s"``, ``"1.2 h"``). Rank lists: :func:`format_ranks` compacts runs (``"0-3,7"``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = [
    "format_byte_rate",
    "format_bytes",
    "format_count",
    "format_duration",
    "format_link_rate",
    "format_ranks",
    "format_seconds",
]


def format_bytes(value: float) -> str:
    """1024 -> ``"1K"``, 1536 -> ``"1.5K"``, 67108864 -> ``"64M"``, 100 -> ``"100B"``; ``"?"`` if not finite."""
    if not math.isfinite(value):
        return "?"
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(value) >= scale:
            shown = value / scale
            return f"{shown:g}{unit}" if shown == int(shown) else f"{shown:.1f}{unit}"
    return f"{int(value)}B"


def format_link_rate(bytes_per_s: float) -> str:
    """Bytes per second as a link rate in *bits*: ``"38.2 Mb/s"``, ``"2.1 Gb/s"``; ``"?"`` if not finite."""
    if not math.isfinite(bytes_per_s):
        return "?"
    bits = bytes_per_s * 8
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bits) >= scale:
            return f"{bits / scale:.3g} {unit}"
    return f"{bits:.0f} b/s"


def format_byte_rate(bytes_per_s: float) -> str:
    """Bytes per second in *bytes*: ``"540 MB/s"``, ``"2.1 GB/s"`` (decimal units, 1 MB = 1e6 bytes)."""
    return f"{bytes_per_s / 1e6:.3g} MB/s" if bytes_per_s < 1e9 else f"{bytes_per_s / 1e9:.3g} GB/s"


def format_seconds(seconds: float) -> str:
    """``"12 us"``, ``"3.4 ms"``, ``"1.25 s"``, ``"12.5 min"`` (three significant digits)."""
    if not math.isfinite(seconds):
        return "?"
    value = abs(seconds)
    sign = "-" if seconds < 0 else ""
    if value == 0:
        return "0 s"
    if value < 1e-3:
        return f"{sign}{value * 1e6:.3g} us"
    if value < 1:
        return f"{sign}{value * 1e3:.3g} ms"
    if value < 600:
        return f"{sign}{value:.3g} s"
    return f"{sign}{value / 60:.3g} min"


def format_duration(seconds: float) -> str:
    """``"4.1 µs"``, ``"268.4 ms"``, ``"4.3 s"``, ``"2.5 min"``, ``"1.2 h"`` (one decimal; for timeouts)."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def format_count(value: int) -> str:
    """12345 -> ``"12,345"``."""
    return f"{value:,}"


def format_ranks(ranks: Iterable[int], sep: str = ",", empty: str = "") -> str:
    """``[0, 1, 2, 3, 7]`` -> ``"0-3,7"``: sorted, without duplicates, runs as ranges (compact for 4096 ranks).
    ``sep=", "`` gives the prose form (``"0-3, 7"``); ``empty`` is what no rank reads as."""
    ordered = sorted(set(ranks))
    if not ordered:
        return empty
    parts: list[str] = []
    index = 0
    while index < len(ordered):
        start = end = ordered[index]
        while index + 1 < len(ordered) and ordered[index + 1] == end + 1:
            index += 1
            end = ordered[index]
        parts.append(str(start) if start == end else f"{start}-{end}")
        index += 1
    return sep.join(parts)
