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

The lab's workload (:mod:`syncdoctor.testing.workload`) reads the same JSON objects as :class:`StepFault`
(:func:`parse_step_faults`): faults that act at a training step of a known program (``at``, 0-based), inside a
named function of its step (``where``), with the workload's own kinds besides the shared ones (``spin``,
``trigger``, ``swap``, ``block`` and the healthy solo work ``checkpoint``, ``evaluate``, ``dcp``). Both read
their text with one reader and name kinds from one table (:data:`KINDS`, :data:`STEP_KINDS` and the aliases
between them); :meth:`StepFault.to_fault` gives the injection fault for the kinds both have.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from syncdoctor.errors import UsageError

__all__ = [
    "CRASH_MODES",
    "KINDS",
    "LATE_WHERE",
    "STEP_KINDS",
    "Fault",
    "FaultPlan",
    "StepFault",
    "parse_faults",
    "parse_step_faults",
]

# The kinds injection applies, and the names the lab's workload uses for the same things.
KINDS = ("delay", "skip", "resize", "other_op", "crash", "freeze", "slow")
_ALIASES = {"late": "delay", "other_size": "resize", "exception": "crash", "sleep": "delay"}
_CRASH_MODES = ("exception", "exit", "sigkill")
_OTHER_OPS = ("broadcast", "barrier", "all_reduce")

# The kinds the lab's workload applies at a step: the shared ones under their workload names, its own, and
# healthy solo work one rank does alone while the others wait.
STEP_KINDS = ("late", "skip", "other_op", "other_size", "crash", "freeze", "spin", "slow", "trigger", "swap",
              "block", "checkpoint", "evaluate", "dcp")
SOLO_KINDS = ("checkpoint", "evaluate", "dcp")
CRASH_MODES = (*_CRASH_MODES, "abort")  # the workload can also abort()
# Named functions of the workload's step in which a delay can sit (so a Python stack shows where it waits);
# the parallel shapes (:mod:`syncdoctor.testing.shapes`) add the data-parallel part of their step.
LATE_WHERE = ("load_batch", "forward", "optimizer_step", "checkpoint_pause", "data_parallel")
STEP_OTHER_OPS = ("broadcast", "all_gather", "barrier", "reduce")


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


def _json_items(text: str) -> list[Any]:
    """A JSON fault spec (an object or a list of them) as a list; raises :class:`UsageError` when malformed."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"fault spec is not valid JSON ({exc.msg} at column {exc.colno}): {text!r}") from None
    return data if isinstance(data, list) else [data]


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
            return parse_faults(_json_items(text))
        return tuple(_parse_compact(text))
    if isinstance(spec, Sequence):
        out: list[Fault] = []
        for item in spec:
            if not isinstance(item, (Mapping, Fault)):
                raise UsageError(f"fault list items must be objects, got {item!r}")
            out.extend(parse_faults(item))
        return tuple(out)
    raise UsageError(f"cannot read a fault spec from {type(spec).__name__}")


# -- the lab workload's faults, at a training step ----------------------------------------------------------

_STEP_FIELDS = {"rank", "kind", "at", "seconds", "where", "mode", "code", "factor", "op", "size", "name"}


@dataclass(frozen=True)
class StepFault:
    """One fault of the lab's workload: what rank ``rank`` does differently from step ``at`` (0-based).

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

    def to_fault(self) -> Fault:
        """The injection :class:`Fault` doing the same at the step marker ``at`` (and from it on for ``slow``).

        Raises :class:`UsageError` for the workload's own kinds and for values injection cannot apply.
        """
        kind = _ALIASES.get(self.kind, self.kind)
        if kind not in KINDS:
            raise UsageError(f"fault {self.kind} is the lab workload's own; injection has {', '.join(KINDS)}")
        values: dict[str, Any] = {"rank": self.rank, "step": self.at}
        if kind == "delay":
            values["seconds"] = self.seconds
        elif kind == "resize":
            values["delta"] = (self.size or 2) - 1
        elif kind == "other_op":
            values["op_to"] = self.op
        elif kind == "crash":
            values.update(mode=self.mode, exit_code=self.code)
        elif kind == "slow":
            values["factor"] = self.factor
        return Fault(kind, **values)


def parse_step_faults(text: str | None) -> tuple[StepFault, ...]:
    """The lab workload's faults from a JSON spec (an object or a list of objects); empty or None: none."""
    if text is None or not text.strip():
        return ()
    return tuple(_step_fault(item, index) for index, item in enumerate(_json_items(text)))


def _step_fault(item: object, index: int) -> StepFault:
    where = f"fault #{index}"
    if not isinstance(item, Mapping):
        raise UsageError(f"{where}: expected a JSON object like {{\"rank\": 1, \"kind\": \"late\"}}, got {item!r}")
    unknown = set(item) - _STEP_FIELDS
    if unknown:
        raise UsageError(
            f"{where}: unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_STEP_FIELDS))}")
    kind = item.get("kind")
    if kind not in STEP_KINDS:
        raise UsageError(f"{where}: kind must be one of {', '.join(STEP_KINDS)}, got {kind!r}")
    if "rank" not in item:
        raise UsageError(f"{where}: a fault needs the \"rank\" it applies to")
    spec = StepFault(
        rank=_json_int(item, "rank", where, 0),
        kind=kind,
        at=_json_int(item, "at", where, 0),
        seconds=_json_float(item, "seconds", where, 0.0),
        where=str(item.get("where", "forward" if kind == "slow" else "load_batch")),
        mode=str(item.get("mode", "exception")),
        code=_json_int(item, "code", where, 1),
        factor=_json_float(item, "factor", where, 1.0),
        op=str(item.get("op", "broadcast")),
        size=_json_int(item, "size", where, 0),
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
    if kind == "other_op" and spec.op not in STEP_OTHER_OPS:
        raise UsageError(f"{where}: op must be one of {', '.join(STEP_OTHER_OPS)}, got {spec.op!r}")
    if kind == "trigger" and not re.fullmatch(r"[A-Za-z0-9_.-]+", spec.name):
        raise UsageError(f"{where}: a trigger fault needs a \"name\" made of letters, digits, '-', '_', '.'")
    return spec


def _json_int(item: Mapping[str, object], key: str, where: str, default: int) -> int:
    value = item.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{where}: {key} must be a non-negative integer, got {value!r}")
    return value


def _json_float(item: Mapping[str, object], key: str, where: str, default: float) -> float:
    value = item.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise UsageError(f"{where}: {key} must be a non-negative number, got {value!r}")
    return float(value)


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
