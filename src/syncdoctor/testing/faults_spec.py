"""Parsing of fault specifications for the lab and its workload. Pure: no I/O.

Two families:

* process faults, read by :mod:`syncdoctor.testing.workload` from ``--fault JSON`` or ``SYNCDOCTOR_FAULT``: a JSON
  object or a list of objects such as ``{"rank": 3, "kind": "late", "at": 5, "seconds": 20}``;
* network faults given to ``syncdoctor lab``: ``--throttle host1=50mbit``, ``--cut host1@30s[+5s]`` or
  ``--cut host1@trigger``, ``--mtu host1=9000``.

Bad input raises :class:`syncdoctor.errors.UsageError` with a message that says what was expected.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from syncdoctor.errors import UsageError

__all__ = [
    "CRASH_MODES",
    "FAULT_KINDS",
    "LATE_WHERE",
    "CutSpec",
    "FaultSpec",
    "parse_cut",
    "parse_duration",
    "parse_faults",
    "parse_host_value",
    "parse_rate",
]

FAULT_KINDS = ("late", "skip", "other_op", "other_size", "crash", "freeze", "spin", "slow", "trigger", "swap",
               "block", "checkpoint", "evaluate", "dcp")
SOLO_KINDS = ("checkpoint", "evaluate", "dcp")  # healthy work one rank does alone while the others wait
CRASH_MODES = ("exception", "exit", "sigkill", "abort")
# Named functions of the workload's step in which a delay can sit (so a Python stack shows where it waits);
# the parallel shapes (:mod:`syncdoctor.testing.shapes`) add the data-parallel part of their step.
LATE_WHERE = ("load_batch", "forward", "optimizer_step", "checkpoint_pause", "data_parallel")
OTHER_OPS = ("broadcast", "all_gather", "barrier", "reduce")

_FIELDS = {"rank", "kind", "at", "seconds", "where", "mode", "code", "factor", "op", "size", "name"}


@dataclass(frozen=True)
class FaultSpec:
    """One process fault: what rank ``rank`` does differently from step ``at`` (0-based training step).

    Fields by kind:
      late        sleep ``seconds`` inside the function named ``where`` at step ``at``
      skip        do not issue the step's metric all_reduce at step ``at`` (the other ranks do); in a
                  pipeline shape, do not send the step's activations to the next stage
      swap        issue the step's metric all_reduce (default group) before its tensor-parallel one at
                  step ``at``: the tensor-parallel peer calls them the other way round (a deadlock)
      other_op    issue ``op`` (broadcast by default) instead of the metric all_reduce at step ``at``
      other_size  all_reduce ``size`` elements (default 2x) instead of the metric's at step ``at``
      crash       at step ``at``: ``mode`` exception (raise), exit (``os._exit(code)``), sigkill, abort
      freeze      SIGSTOP itself at step ``at``
      spin        busy-loop in Python for ``seconds`` (0: forever) at step ``at``, inside ``where``
      slow        from step ``at`` on, every step takes ``factor`` times as long (sleep inside ``where``)
      trigger     touch ``$SYNCDOCTOR_TRIGGER_DIR/<name>`` at step ``at`` and wait up to ``seconds``
                  (default 10) until the lab has acted on it (renamed it to ``<name>.done``)
      block       block in a read of a pipe nobody writes to, for ``seconds`` (0: forever), inside ``where``
    Healthy solo work (not faults: the job is fine), after the optimizer step of step ``at`` while the others
    go on to the step's metric all_reduce; ``name`` marks it with ``syncdoctor.watch.solo(name)`` (up to
    ``factor`` x ``seconds`` when ``factor`` > 1), empty: unmarked:
      checkpoint  a loop of ``torch.save`` of the model and an optimizer-sized state for ``seconds``
      evaluate    an evaluation loop (forward passes, a metric) for ``seconds``
      dcp         a loop of ``torch.distributed.checkpoint.save`` (this rank alone) for ``seconds``
    """

    rank: int
    kind: str
    at: int = 0
    seconds: float = 0.0
    where: str = "load_batch"
    mode: str = "exception"
    code: int = 1
    factor: float = 1.0
    op: str = "broadcast"
    size: int = 0
    name: str = ""

    def applies(self, rank: int, step: int) -> bool:
        """True when this fault fires for ``rank`` at ``step`` (``slow`` fires at every step from ``at``)."""
        if rank != self.rank:
            return False
        return step >= self.at if self.kind == "slow" else step == self.at


def parse_faults(text: str | None) -> tuple[FaultSpec, ...]:
    """Parse a JSON fault spec (object or list of objects); empty or None gives no faults."""
    if text is None or not text.strip():
        return ()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"fault spec is not valid JSON ({exc.msg} at column {exc.colno}): {text!r}") from exc
    items = data if isinstance(data, list) else [data]
    return tuple(_parse_one(item, index) for index, item in enumerate(items))


def _parse_one(item: object, index: int) -> FaultSpec:
    where = f"fault #{index}"
    if not isinstance(item, Mapping):
        raise UsageError(f"{where}: expected a JSON object like {{\"rank\": 1, \"kind\": \"late\"}}, got {item!r}")
    unknown = set(item) - _FIELDS
    if unknown:
        raise UsageError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_FIELDS))}")
    kind = item.get("kind")
    if kind not in FAULT_KINDS:
        raise UsageError(f"{where}: kind must be one of {', '.join(FAULT_KINDS)}, got {kind!r}")
    if "rank" not in item:
        raise UsageError(f"{where}: a fault needs the \"rank\" it applies to")
    spec = FaultSpec(
        rank=_int(item, "rank", where, 0),
        kind=kind,
        at=_int(item, "at", where, 0),
        seconds=_float(item, "seconds", where, 0.0),
        where=str(item.get("where", "forward" if kind == "slow" else "load_batch")),
        mode=str(item.get("mode", "exception")),
        code=_int(item, "code", where, 1),
        factor=_float(item, "factor", where, 1.0),
        op=str(item.get("op", "broadcast")),
        size=_int(item, "size", where, 0),
        name=str(item.get("name", "")),
    )
    if spec.where not in LATE_WHERE:
        raise UsageError(f"{where}: where must be one of {', '.join(LATE_WHERE)}, got {spec.where!r}")
    if kind == "crash" and spec.mode not in CRASH_MODES:
        raise UsageError(f"{where}: crash mode must be one of {', '.join(CRASH_MODES)}, got {spec.mode!r}")
    if kind in SOLO_KINDS and spec.seconds <= 0:
        raise UsageError(f"{where}: {kind} needs seconds > 0")
    if kind == "late" and spec.seconds <= 0:
        raise UsageError(f"{where}: a late fault needs \"seconds\" > 0")
    if kind == "slow" and spec.factor < 1.0:
        raise UsageError(f"{where}: slow needs \"factor\" >= 1.0 (1.5 = 50% slower), got {spec.factor}")
    if kind == "other_op" and spec.op not in OTHER_OPS:
        raise UsageError(f"{where}: op must be one of {', '.join(OTHER_OPS)}, got {spec.op!r}")
    if kind == "trigger" and not re.fullmatch(r"[A-Za-z0-9_.-]+", spec.name):
        raise UsageError(f"{where}: a trigger fault needs a \"name\" made of letters, digits, '-', '_', '.'")
    return spec


def _int(item: Mapping[str, object], key: str, where: str, default: int) -> int:
    value = item.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{where}: {key} must be a non-negative integer, got {value!r}")
    return value


def _float(item: Mapping[str, object], key: str, where: str, default: float) -> float:
    value = item.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise UsageError(f"{where}: {key} must be a non-negative number, got {value!r}")
    return float(value)


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
