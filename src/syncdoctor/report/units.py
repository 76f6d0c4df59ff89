"""Number formatting shared by the HTML report and its charts. Pure: no I/O.

Sizes in bytes print the nccl-tests way (``4K``, ``16M``), rates in bits per second like link rates
(``9.87 Gb/s``), durations in the unit that keeps two or three significant digits.
"""

from __future__ import annotations

import math

__all__ = ["format_bytes", "format_count", "format_rate", "format_seconds"]


def format_bytes(value: float) -> str:
    """1024 -> ``"1K"``, 1536 -> ``"1.5K"``, 67108864 -> ``"64M"``, 100 -> ``"100B"``."""
    if not math.isfinite(value):
        return "?"
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if abs(value) >= scale:
            shown = value / scale
            return f"{shown:g}{unit}" if shown == int(shown) else f"{shown:.1f}{unit}"
    return f"{int(value)}B"


def format_rate(bytes_per_s: float) -> str:
    """Bytes per second as a rate in bits: ``"38.2 Mb/s"``, ``"2.1 Gb/s"``."""
    if not math.isfinite(bytes_per_s):
        return "?"
    bits = bytes_per_s * 8
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bits) >= scale:
            return f"{bits / scale:.3g} {unit}"
    return f"{bits:.0f} b/s"


def format_seconds(seconds: float) -> str:
    """``"12 us"``, ``"3.4 ms"``, ``"1.25 s"``, ``"12.5 min"``."""
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


def format_count(value: int) -> str:
    """12345 -> ``"12,345"``."""
    return f"{value:,}"
