"""The control message: what the monitor asks of the ranks (stacks, process states, a dump, an abort).

The message itself (:class:`ControlMessage`) is pure: a frozen dataclass with its JSON form. The monitor
builds a new one whenever it asks for more, publishes it whole to ``keys.ctl_msg`` and bumps the
generation counter ``keys.ctl_gen``; the ranks poll the counter and read the message when it moved
(:func:`write_control`, :func:`read_control`: I/O only through the store object they are given). With node
aggregation, a node's leader polls and mirrors it for the node's ranks (:mod:`syncdoctor.watch.node`).

Wire form (JSON, keys as text)::

    {"version": 1, "stacks": {"<rank>": <request number>}, "inspect": {"<pid>": "<host key>"},
     "dump": <request number>, "abort": null | {"code": n, "reason": "...", "by": "...", "expected": n}}

:meth:`ControlMessage.from_json` never raises: a value that is not JSON, not an object of this version, or
malformed anywhere reads as ``None``, and a rank ignores it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from syncdoctor.watch.keys import JobKeys, ScopedStore

__all__ = ["CONTROL_VERSION", "AbortOrder", "ControlMessage", "read_control", "write_control"]

CONTROL_VERSION = 1
MAX_INSPECT = 64  # process-state requests a message holds; beyond, the newest 32 are kept
_KEEP_INSPECT = 32


@dataclass(frozen=True)
class AbortOrder:
    """Fail-fast: every rank ends with exit code ``code``; ``expected`` ranks (the reachable ones) count
    themselves out before they leave. ``by`` names the monitor; ``reason`` is the event's line."""

    code: int
    reason: str = ""
    by: str = ""
    expected: int = 1


@dataclass(frozen=True)
class ControlMessage:
    """Everything the monitor asks of the ranks so far. Requests only grow: a rank acts on what is newer
    than what it already did (a higher stack or dump number, a pid it has not inspected).

    Attributes:
        stacks: rank -> stack request number; the rank publishes a stack of that number.
        inspect: pid -> host key; the rank on that host (not the pid itself) reads the pid's process state.
        dump: Flight Recorder dump request number: every rank writes its dump when it rises.
        abort: the fail-fast order, or ``None``.
        version: :data:`CONTROL_VERSION`; a message of another version is not read.
    """

    stacks: Mapping[int, int] = field(default_factory=dict)
    inspect: Mapping[int, str] = field(default_factory=dict)
    dump: int = 0
    abort: AbortOrder | None = None
    version: int = CONTROL_VERSION

    def asking(self, stacks: Mapping[int, int], inspect: Mapping[int, str]) -> ControlMessage:
        """This message with more stack and process-state requests (the oldest of many pids dropped)."""
        pids = {**self.inspect, **inspect}
        if len(pids) > MAX_INSPECT:
            pids = dict(list(pids.items())[-_KEEP_INSPECT:])
        return replace(self, stacks={**self.stacks, **stacks}, inspect=pids)

    def to_json(self) -> str:
        abort = None
        if self.abort is not None:
            abort = {"code": self.abort.code, "reason": self.abort.reason, "by": self.abort.by,
                     "expected": self.abort.expected}
        return json.dumps({
            "version": self.version,
            "stacks": {str(rank): gen for rank, gen in self.stacks.items()},
            "inspect": {str(pid): host_key for pid, host_key in self.inspect.items()},
            "dump": self.dump,
            "abort": abort,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: bytes | str | None) -> ControlMessage | None:
        """The message in ``raw``, or ``None`` when it is missing, foreign or malformed (never raises)."""
        try:
            data = json.loads(raw) if raw else None
            if not isinstance(data, dict) or data.get("version") != CONTROL_VERSION:
                return None
            abort = None
            if data.get("abort") is not None:
                order = _mapping(data["abort"])
                abort = AbortOrder(_integer(order["code"]), _text(order.get("reason", "")), _text(order.get("by", "")),
                                   _integer(order.get("expected", 1)))
            return cls(
                stacks={_integer(rank): _integer(gen) for rank, gen in _mapping(data.get("stacks")).items()},
                inspect={_integer(pid): _text(host_key) for pid, host_key in _mapping(data.get("inspect")).items()},
                dump=_integer(data.get("dump") or 0),
                abort=abort,
            )
        except (ValueError, TypeError, KeyError, RecursionError):
            return None


def _mapping(value: Any) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


def _integer(value: Any) -> int:
    """An integer, or its decimal text (JSON object keys are text); bools and floats are not integers."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"expected an integer, got {value!r}")
    return int(value)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {value!r}")
    return value


def write_control(store: ScopedStore, keys: JobKeys, message: ControlMessage) -> None:
    """Write ``message`` whole, then bump the generation so the ranks read it."""
    store.set(keys.ctl_msg, message.to_json())
    store.add(keys.ctl_gen, 1)


def read_control(store: ScopedStore, keys: JobKeys, seen: int) -> tuple[int, ControlMessage | None]:
    """The current generation and, when it is not ``seen``, the message (``None``: unchanged or unreadable)."""
    gen, text = read_control_text(store, keys, seen)
    return gen, None if text is None else ControlMessage.from_json(text)


def read_control_text(store: ScopedStore, keys: JobKeys, seen: int) -> tuple[int, bytes | None]:
    """The current generation and, when it is not ``seen``, the message's text (``b""`` before any message:
    generation 0). A node's leader mirrors it for the node's other ranks (:mod:`syncdoctor.watch.node`)."""
    gen = store.add(keys.ctl_gen, 0)
    if gen == seen:
        return gen, None
    return gen, store.get(keys.ctl_msg) if gen > 0 else b""
