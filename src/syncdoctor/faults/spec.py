"""Fault specifications and the per-rank plan that decides when each fires. Pure: no I/O, no torch.

A fault is a frozen :class:`Fault`: what to do (``kind``), on which rank(s), and when (before the
``collective``-th collective the rank issues, counting from 1, or at the first collective of training
step ``step`` as marked with :func:`syncdoctor.faults.step`; neither means every collective).

Kinds (``late``, ``other_size`` and ``exception`` are accepted as the lab's names for the same things):

=============  ================================================================================
``delay``      sleep ``seconds`` before the collective (a late rank)
``skip``       do not issue the collective on this rank (control-flow asymmetry)
``resize``     issue it with ``delta`` more elements in the first tensor's first dimension
``other_op``   issue ``op_to`` (``broadcast`` or ``barrier``) instead (a different op at one point)
``crash``      end the rank: ``mode`` ``exception`` (raise), ``exit`` (``os._exit(exit_code)``), ``sigkill``
``freeze``     stop the process with SIGSTOP (alive but frozen)
``slow``       make the rank ``factor`` times slower: before each collective, sleep ``factor - 1`` times the
               time it spent since its previous collective returned (its compute)
=============  ================================================================================

Specs come from Python (``Fault("skip", rank=1, collective=3)``), from JSON objects or lists (the lab's
workload format, ``{"rank": 1, "kind": "skip", "at": 3}`` where ``at`` counts steps) or from a compact
string for environment variables: ``"skip:rank=1,collective=3;delay:rank=0,step=2,seconds=1.5"``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from syncdoctor.errors import UsageError

__all__ = ["KINDS", "Fault", "FaultPlan", "parse_faults"]

KINDS = ("delay", "skip", "resize", "other_op", "crash", "freeze", "slow")
_ALIASES = {"late": "delay", "other_size": "resize", "exception": "crash", "sleep": "delay"}
_CRASH_MODES = ("exception", "exit", "sigkill")
_OTHER_OPS = ("broadcast", "barrier", "all_reduce")


@dataclass(frozen=True)
class Fault:
    """One fault to inject.

    Attributes:
        kind: one of :data:`KINDS`.
        rank: the global rank(s) it applies to; ``None`` means every rank.
        collective: fire before this collective (1 = the first the rank issues after injection starts).
        step: fire at the first collective of this step (steps are marked with ``faults.step(i)``).
        op: only count and act on collectives of this op (e.g. ``all_reduce``); ``None`` means any.
        seconds: delay length (``delay``).
        factor: slowdown factor (``slow``), greater than 1.
        delta: elements added to the first dimension (``resize``), non-zero.
        op_to: the op issued instead (``other_op``).
        mode: how ``crash`` ends the rank.
        exit_code: exit code for ``crash`` with ``mode="exit"``.
        times: how many times it fires; ``None`` means every matching collective from then on
            (default: once, except ``slow`` which applies until the end).
    """

    kind: str
    rank: int | tuple[int, ...] | None = None
    collective: int | None = None
    step: int | None = None
    op: str | None = None
    seconds: float = 0.0
    factor: float = 1.0
    delta: int = 1
    op_to: str = "broadcast"
    mode: str = "exception"
    exit_code: int = 1
    times: int | None = field(default=1)

    def __post_init__(self) -> None:
        kind = _ALIASES.get(self.kind, self.kind)
        object.__setattr__(self, "kind", kind)
        if kind not in KINDS:
            raise UsageError(f"unknown fault kind {self.kind!r}: use one of {', '.join(KINDS)}")
        if isinstance(self.rank, list):
            object.__setattr__(self, "rank", tuple(self.rank))
        for name in ("collective", "step"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise UsageError(f"fault {kind}: {name} must be a non-negative integer, got {value!r}")
        if self.collective is not None and self.collective < 1:
            raise UsageError(f"fault {kind}: collective counts from 1, got {self.collective}")
        if kind == "delay" and not self.seconds > 0:
            raise UsageError(f"fault delay needs seconds > 0, got {self.seconds!r}")
        if kind == "slow":
            if not self.factor > 1:
                raise UsageError(f"fault slow needs factor > 1, got {self.factor!r}")
            if self.times == 1:
                object.__setattr__(self, "times", None)
        if kind == "resize" and self.delta == 0:
            raise UsageError("fault resize needs a non-zero delta")
        if kind == "crash" and self.mode not in _CRASH_MODES:
            raise UsageError(f"fault crash: mode must be one of {', '.join(_CRASH_MODES)}, got {self.mode!r}")
        if kind == "other_op" and self.op_to not in _OTHER_OPS:
            raise UsageError(f"fault other_op: op_to must be one of {', '.join(_OTHER_OPS)}, got {self.op_to!r}")
        if self.times is not None and self.times < 1:
            raise UsageError(f"fault {kind}: times must be at least 1 (or null for always)")
        if kind not in ("slow",) and self.collective is None and self.step is None and self.times == 1:
            # a one-shot fault with no trigger fires at the first collective: say so explicitly
            object.__setattr__(self, "collective", 1)

    def applies_to(self, rank: int) -> bool:
        if self.rank is None:
            return True
        if isinstance(self.rank, int):
            return self.rank == rank
        return rank in self.rank

    def describe(self) -> str:
        """A short human description, e.g. ``skip on rank 1 before collective #3``."""
        who = "every rank" if self.rank is None else f"rank {self.rank}"
        if isinstance(self.rank, tuple):
            who = "ranks " + ", ".join(str(r) for r in self.rank)
        when = "every collective"
        if self.collective is not None:
            when = f"collective #{self.collective}"
        elif self.step is not None:
            when = f"the first collective of step {self.step}"
        if self.op:
            when += f" (counting only {self.op})"
        extra = {
            "delay": f" ({self.seconds:g} s)",
            "slow": f" (x{self.factor:g})",
            "resize": f" ({self.delta:+d} elements)",
            "other_op": f" ({self.op_to} instead)",
            "crash": f" ({self.mode})",
        }.get(self.kind, "")
        return f"{self.kind}{extra} on {who} before {when}"

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if isinstance(data["rank"], tuple):
            data["rank"] = list(data["rank"])
        return data


_FIELD_NAMES = {f.name for f in fields(Fault)}
_INT_FIELDS = {"collective", "step", "delta", "exit_code", "times"}
_FLOAT_FIELDS = {"seconds", "factor"}


def _coerce(name: str, value: Any) -> Any:
    if value is None:
        return None
    try:
        if name in _INT_FIELDS:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if name in _FLOAT_FIELDS:
            return float(value)
        if name == "rank":
            if isinstance(value, str):
                if value in ("all", "*"):
                    return None
                parts = [int(p) for p in value.replace("+", " ").replace("|", " ").split()]
                return parts[0] if len(parts) == 1 else tuple(parts)
            if isinstance(value, (list, tuple)):
                return tuple(int(v) for v in value)
            return int(value)
    except (TypeError, ValueError):
        raise UsageError(f"fault field {name!r} has a bad value {value!r}") from None
    return str(value)


def _from_mapping(data: Mapping[str, Any]) -> Fault:
    values = dict(data)
    if "kind" not in values:
        raise UsageError(f"fault {dict(data)!r} has no 'kind'")
    kind = str(values.pop("kind"))
    # The lab workload's names: "at" counts steps, "where" names the function (informational here).
    if "at" in values:
        values.setdefault("step", values.pop("at"))
    values.pop("where", None)
    unknown = sorted(set(values) - _FIELD_NAMES)
    if unknown:
        raise UsageError(f"fault {kind}: unknown field(s) {', '.join(unknown)}")
    return Fault(kind, **{name: _coerce(name, value) for name, value in values.items()})


def _parse_compact(text: str) -> list[Fault]:
    faults = []
    for chunk in text.split(";"):
        chunk = chunk.strip()
        if not chunk:
            continue
        kind, _, rest = chunk.partition(":")
        values: dict[str, Any] = {"kind": kind.strip()}
        for item in rest.split(","):
            if not item.strip():
                continue
            name, sep, value = item.partition("=")
            if not sep:
                raise UsageError(f"fault {chunk!r}: expected name=value, got {item!r}")
            values[name.strip()] = value.strip()
        faults.append(_from_mapping(values))
    return faults


def parse_faults(spec: str | Mapping[str, Any] | Sequence[Any] | Fault | None) -> tuple[Fault, ...]:
    """Faults from a :class:`Fault`, a mapping, a list of either, a JSON text or a compact string.

    Raises :class:`UsageError` with the offending part for anything malformed.
    """
    if spec is None:
        return ()
    if isinstance(spec, Fault):
        return (spec,)
    if isinstance(spec, Mapping):
        return (_from_mapping(spec),)
    if isinstance(spec, str):
        text = spec.strip()
        if not text:
            return ()
        if text[0] in "[{":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(f"fault spec is not valid JSON: {exc}") from None
            return parse_faults(data)
        return tuple(_parse_compact(text))
    if isinstance(spec, Sequence):
        out: list[Fault] = []
        for item in spec:
            if not isinstance(item, (Mapping, Fault)):
                raise UsageError(f"fault list items must be objects, got {item!r}")
            out.extend(parse_faults(item))
        return tuple(out)
    raise UsageError(f"cannot read a fault spec from {type(spec).__name__}")


# Kinds that need no collective to act on: with a ``step`` and no ``collective`` they fire at the step marker.
_MARKER_KINDS = ("delay", "crash", "freeze")


class FaultPlan:
    """Which faults fire for one rank and when. Pure state machine: no clock, no torch.

    Call :meth:`on_collective` once per collective the rank is about to issue, in order; it returns the
    faults to apply to that collective. Call :meth:`on_step` at each step marker; it returns the faults
    that act at the marker itself (``delay``, ``crash`` and ``freeze`` given a ``step`` but no
    ``collective``). Step-triggered faults never fire if the program marks no steps.
    """

    def __init__(self, faults: Iterable[Fault], rank: int) -> None:
        self.rank = rank
        self.faults = tuple(f for f in faults if f.applies_to(rank))
        self._counts = [0] * len(self.faults)  # matching collectives seen per fault
        self._fired = [0] * len(self.faults)
        self._step: int | None = None

    @property
    def step(self) -> int | None:
        return self._step

    @staticmethod
    def _at_marker(fault: Fault) -> bool:
        return fault.kind in _MARKER_KINDS and fault.step is not None and fault.collective is None

    def on_step(self, step: int) -> tuple[Fault, ...]:
        self._step = step
        firing = []
        for index, fault in enumerate(self.faults):
            if not self._at_marker(fault) or step < (fault.step or 0):
                continue
            if fault.times is not None and self._fired[index] >= fault.times:
                continue
            firing.append(fault)
            self._fired[index] += 1
        return tuple(firing)

    def on_collective(self, op: str) -> tuple[Fault, ...]:
        firing = []
        for index, fault in enumerate(self.faults):
            if self._at_marker(fault):
                continue
            if fault.op is not None and fault.op != op:
                continue
            self._counts[index] += 1
            if fault.times is not None and self._fired[index] >= fault.times:
                continue
            if fault.collective is not None and self._counts[index] < fault.collective:
                continue
            if fault.step is not None and (self._step is None or self._step < fault.step):
                continue
            firing.append(fault)
            self._fired[index] += 1
        return tuple(firing)

    def fired(self) -> dict[Fault, int]:
        return {fault: n for fault, n in zip(self.faults, self._fired, strict=True) if n}
