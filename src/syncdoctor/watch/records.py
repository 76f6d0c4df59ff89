"""What each rank publishes and what the monitor reads: frozen records and their compact JSON form.

Pure: no I/O. One :class:`RankRecord` per rank per interval is written to the job's store under
``<prefix>/attempt<N>/rank/<rank>``; stacks, group tables and control messages have their own keys (see
:mod:`syncdoctor.watch.keys`). The JSON uses short field names because the monitor parses one record per
rank per second (4096 ranks: a few milliseconds). :func:`decode_record` never raises on bad input: it
returns ``None`` and the monitor treats the rank as not reporting.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

__all__ = [
    "RECORD_VERSION",
    "STATES",
    "Frame",
    "GroupProgress",
    "RankRecord",
    "Signature",
    "StackReport",
    "StepMark",
    "WaitSample",
    "decode_record",
    "decode_stack",
    "encode_record",
    "encode_stack",
    "format_ranks",
    "parse_ranks",
]

RECORD_VERSION = 2
# starting: watcher running, process group not there yet; running; exited: said goodbye (clean exit or
# destroy_process_group); failed: dying of an exception (``error`` says which); aborting: fail-fast.
STATES = ("starting", "running", "exited", "failed", "aborting")


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

    @staticmethod
    def from_compact(text: str) -> Signature | None:
        return _signature_from_compact(text) if isinstance(text, str) else None

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
def _signature_from_compact(text: str) -> Signature | None:
    parts = text.split("|")
    if len(parts) != 4 or not parts[0]:
        return None

    def shapes(field: str) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(int(d) for d in shape.split("x") if d) for shape in field.split(";")) if field else ()

    try:
        return Signature(parts[0], shapes(parts[1]), tuple(parts[2].split(";")) if parts[2] else (), shapes(parts[3]))
    except ValueError:
        return None


_EMPTY: Mapping[Any, Any] = MappingProxyType({})  # shared read-only default of the mapping fields


class GroupProgress(NamedTuple):
    """One rank's progress in one process group (a named tuple: the monitor builds thousands per second).

    Attributes:
        group: the group's name (``pg.group_name``; ``"0"`` is the default group), the same on every rank.
        entered: sequence number of the last collective this rank entered in the group (0: none yet).
        completed: sequence number of the last collective that completed here.
        stalled_s: seconds this rank has had an unfinished collective with no completion, measured at
            publication; ``None`` when nothing is pending.
        signature: what this rank called at ``signature_seq`` (normally ``completed + 1``), once known.
        signature_seq: the sequence number ``signature`` belongs to.
    """

    group: str
    entered: int
    completed: int
    stalled_s: float | None = None
    signature: Signature | None = None
    signature_seq: int = 0

    @property
    def pending(self) -> bool:
        return self.entered > self.completed


class StepMark(NamedTuple):
    """At training step ``step`` (optimizer step or ``step(i)``), the last sequence entered per group."""

    step: int
    entered: Mapping[str, int]


class WaitSample(NamedTuple):
    """This rank waited ``wait_s`` seconds in collective ``seq`` of ``group`` for the others."""

    group: str
    seq: int
    wait_s: float


class RankRecord(NamedTuple):
    """The compact per-interval record of one rank (a named tuple: the monitor builds one per rank per second).

    Attributes:
        rank, world_size, local_rank: as in ``torch.distributed`` / torchrun.
        host: host name (``SYNCDOCTOR_HOST`` or ``socket.gethostname()``); node: torchrun's node rank
            (``GROUP_RANK``), -1 outside torchrun; pid: process id.
        attempt: torchrun restart count.
        heartbeat: increases with every publication; the monitor judges liveness by its changes, so
            clocks need not agree across hosts.
        state: one of :data:`STATES`. source: ``flight_recorder`` or ``hooks`` (how progress is read).
        step: last training step marker, ``None`` without any; step_age_s: seconds since it changed.
        quiet_s: seconds since this rank's step or any of its sequence numbers last changed (measured
            locally): large while it sits still, small while it works.
        groups: progress per group name. step_marks: recent step markers. waits: recent waits (chronic
            straggler statistics).
        stack_gen: request number of the last stack this rank published (0: none).
        ack: last control generation this rank has processed.
        error: the exception that is killing this rank (state ``failed``). fail_order: 1 for the first
            rank of the job to fail, 2 for the second...
        inspected: process states of pids the monitor asked this rank to look at (same host), e.g.
            ``{1234: "stopped"}``.
        published: wall-clock time of publication (for display only).
    """

    rank: int
    world_size: int
    host: str = ""
    node: int = -1
    pid: int = 0
    local_rank: int = -1
    attempt: int = 0
    heartbeat: int = 0
    state: str = "running"
    source: str = ""
    step: int | None = None
    step_age_s: float | None = None
    quiet_s: float | None = None
    groups: Mapping[str, GroupProgress] = _EMPTY
    step_marks: tuple[StepMark, ...] = ()
    waits: tuple[WaitSample, ...] = ()
    stack_gen: int = 0
    ack: int = 0
    error: str | None = None
    fail_order: int | None = None
    inspected: Mapping[int, str] = _EMPTY
    published: float = 0.0

    @property
    def host_key(self) -> str:
        """Identity of the machine: host name, qualified by node rank when torchrun gives one."""
        return f"{self.host}#{self.node}" if self.node >= 0 else self.host

    @property
    def where(self) -> str:
        """``host1`` or ``host1 (node 1)`` for messages."""
        if self.node >= 0 and f"{self.node}" not in self.host:
            return f"{self.host} (node {self.node})"
        return self.host or "?"


# The record is one JSON array, positional (parsing arrays is cheaper than objects, and the monitor parses
# one per rank per second): version, rank, world size, host, node, pid, local rank, attempt, heartbeat,
# state, source, groups {name: [entered, completed, stalled or -1, signature seq, compact signature]},
# step or null, step age, quiet or null, step marks [[step, {group: entered}]], waits [[group, seq, s]],
# stack gen, ack, error or null, fail order or null, inspected {pid: state}, published.
_FIELDS = 23
_INT = int


def encode_record(record: RankRecord) -> bytes:
    data = [
        RECORD_VERSION,
        record.rank,
        record.world_size,
        record.host,
        record.node,
        record.pid,
        record.local_rank,
        record.attempt,
        record.heartbeat,
        record.state,
        record.source,
        {
            name: [
                g.entered,
                g.completed,
                -1 if g.stalled_s is None else round(g.stalled_s, 3),
                g.signature_seq,
                g.signature.to_compact() if g.signature else None,
            ]
            for name, g in record.groups.items()
        },
        record.step,
        round(record.step_age_s or 0.0, 3),
        None if record.quiet_s is None else round(record.quiet_s, 3),
        [[m.step, dict(m.entered)] for m in record.step_marks],
        [[w.group, w.seq, round(w.wait_s, 3)] for w in record.waits],
        record.stack_gen,
        record.ack,
        record.error[:500] if record.error else None,
        record.fail_order,
        {str(pid): state for pid, state in record.inspected.items()},
        round(record.published, 3),
    ]
    return json.dumps(data, separators=(",", ":")).encode()


_NUMBERS = (int, float)


def decode_record(raw: bytes | str | None) -> RankRecord | None:
    """Parse a record; ``None`` for empty, foreign or malformed data (never raises).

    Written for speed (the monitor decodes one record per rank per second): types are checked inline,
    only where a wrong type could break the detector's arithmetic or comparisons.
    """
    if not raw:
        return None
    try:
        data = json.loads(raw)
        if type(data) is not list or len(data) != _FIELDS or data[0] != RECORD_VERSION:
            return None
        (_, rank, world, host, node, pid, local_rank, attempt, beat, state, source, raw_groups, step, step_age,
         quiet, marks, waits, stack_gen, ack, error, fail_order, inspected, published) = data
        if (type(rank) is not int or type(world) is not int or type(beat) is not int or type(stack_gen) is not int
                or type(ack) is not int or type(pid) is not int or type(node) is not int):
            return None
        groups = {}
        for name, (entered, completed, stalled, sig_seq, sig) in raw_groups.items():
            if type(entered) is not int or type(completed) is not int or type(stalled) not in _NUMBERS:
                return None
            groups[name] = GroupProgress(name, entered, completed, None if stalled < 0 else stalled,
                                         _signature_from_compact(sig) if type(sig) is str else None, sig_seq)
        if (step is not None and type(step) is not int) or (quiet is not None and type(quiet) not in _NUMBERS):
            return None
        mark_list = []
        for mark_step, counts in marks:
            if type(mark_step) is not int or type(counts) is not dict:
                return None
            mark_list.append(StepMark(mark_step, counts))
        wait_list = []
        for group, seq, wait_s in waits:
            if type(seq) is not int or type(wait_s) not in _NUMBERS:
                return None
            wait_list.append(WaitSample(str(group), seq, wait_s))
        return RankRecord(
            rank, world, host if type(host) is str else str(host), node, pid, local_rank, attempt, beat,
            state if state in STATES else "running", source,
            step, None if step is None else step_age, quiet, groups, tuple(mark_list), tuple(wait_list),
            stack_gen, ack, str(error) if error else None, fail_order if type(fail_order) is int else None,
            {int(k): str(v) for k, v in inspected.items()} if inspected else _EMPTY, published,
        )
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


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
    """

    rank: int
    gen: int
    frames: tuple[Frame, ...] = ()
    where: Frame | None = None
    note: str = ""
    captured: float = 0.0
    callers: tuple[Frame, ...] = ()

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
        )
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def format_ranks(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 7]`` -> ``"0-3,7"`` (compact for 4096-rank groups)."""
    ordered = sorted(set(ranks))
    parts: list[str] = []
    index = 0
    while index < len(ordered):
        start = end = ordered[index]
        while index + 1 < len(ordered) and ordered[index + 1] == end + 1:
            index += 1
            end = ordered[index]
        parts.append(str(start) if start == end else f"{start}-{end}")
        index += 1
    return ",".join(parts)


def parse_ranks(text: str | bytes) -> tuple[int, ...]:
    """Inverse of :func:`format_ranks`; raises ``ValueError`` on malformed text."""
    if isinstance(text, bytes):
        text = text.decode()
    ranks: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "-" in part:
            low, high = (int(x) for x in part.split("-", 1))
            if high < low or high - low > 1_000_000:
                raise ValueError(f"bad rank range {part!r}")
            ranks.extend(range(low, high + 1))
        else:
            ranks.append(int(part))
    return tuple(ranks)


def sizes_from(values: Sequence[Any] | None) -> tuple[tuple[int, ...], ...]:
    """FR ``input_sizes`` (list of shape lists) as a tuple of tuples; tolerant of odd shapes."""
    out = []
    for shape in values or ():
        try:
            out.append(tuple(int(d) for d in shape))
        except (TypeError, ValueError):
            continue
    return tuple(out)
