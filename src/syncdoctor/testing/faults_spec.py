"""Parsing of the lab's network faults. Pure: no I/O.

Network faults given to ``syncdoctor lab``: ``--throttle host1=50mbit``, ``--cut host1@30s[+5s]`` or
``--cut host1@trigger``, ``--mtu host1=9000``. Process faults (``--fault JSON`` or ``SYNCDOCTOR_FAULT`` of
:mod:`syncdoctor.testing.workload`, such as ``{"rank": 3, "kind": "late", "at": 5, "seconds": 20}``) share the
fault injection's specification: :class:`syncdoctor.faults.spec.StepFault`, read by
:func:`syncdoctor.faults.spec.parse_step_faults`.

Bad input raises :class:`syncdoctor.errors.UsageError` with a message that says what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from syncdoctor.errors import UsageError

__all__ = ["CutSpec", "parse_cut", "parse_duration", "parse_host_value", "parse_rate"]

_RATE_UNITS = {
    "bit": 1,
    "kbit": 1_000,
    "mbit": 1_000_000,
    "gbit": 1_000_000_000,
    "bps": 8,
    "kbps": 8_000,
    "mbps": 8_000_000,
    "gbps": 8_000_000_000,
}


def parse_rate(text: str) -> int:
    """A ``tc``-style rate (``40mbit``, ``500kbit``, ``1gbit``, ``10mbps`` = bytes/s) in bits per second."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = (match[2].lower() or "bit") if match else ""
    if not match or unit not in _RATE_UNITS:
        raise UsageError(f"rate {text!r} not understood; use e.g. 40mbit, 500kbit, 1gbit (or kbps/mbps for bytes)")
    bits = int(float(match[1]) * _RATE_UNITS[unit])
    if bits < 8_000:
        raise UsageError(f"rate {text!r} is below 8kbit, too slow to be useful")
    return bits


def parse_duration(text: str) -> float:
    """``30s``, ``1.5s``, ``500ms``, ``2m`` or a bare number of seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|)\s*", text)
    if not match:
        raise UsageError(f"duration {text!r} not understood; use e.g. 30s, 500ms, 2m")
    return float(match[1]) * {"ms": 0.001, "s": 1.0, "": 1.0, "m": 60.0}[match[2]]


def parse_host_value(text: str, option: str) -> tuple[str, str]:
    """``host1=50mbit`` -> ``("host1", "50mbit")``."""
    host, sep, value = text.partition("=")
    if not sep or not host or not value:
        raise UsageError(f"{option} expects HOST=VALUE (e.g. host1=50mbit), got {text!r}")
    return host.strip(), value.strip()


@dataclass(frozen=True)
class CutSpec:
    """Cut ``host``'s link ``at`` seconds after the job starts (or on the trigger file ``cut-<host>``), and
    restore it ``duration`` seconds later (never when ``duration`` is None)."""

    host: str
    at: float | None
    duration: float | None = None

    @property
    def trigger(self) -> str | None:
        return f"cut-{self.host}" if self.at is None else None


def parse_cut(text: str) -> CutSpec:
    """``host1@30s``, ``host1@30s+5s`` (restore after 5 s) or ``host1@trigger`` (on ``triggers/cut-host1``)."""
    host, sep, when = text.partition("@")
    if not sep or not host or not when:
        raise UsageError(f"--cut expects HOST@TIME[+DURATION] or HOST@trigger (e.g. host1@30s+5s), got {text!r}")
    at_text, plus, duration_text = when.partition("+")
    duration = parse_duration(duration_text) if plus else None
    if at_text.strip() == "trigger":
        return CutSpec(host.strip(), None, duration)
    return CutSpec(host.strip(), parse_duration(at_text), duration)
