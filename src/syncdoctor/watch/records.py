"""What each rank publishes and what the monitor reads: frozen records and their compact binary+JSON form.

Pure: no I/O. One :class:`RankRecord` per rank per interval is written to the job's store under
``<prefix>/attempt<N>/rank/<rank>``; stacks, group tables and control messages have their own keys (see
:mod:`syncdoctor.watch.keys`). A record (version 7) is a fixed-size binary header, which the monitor
screens for all ranks at once in healthy cycles (:mod:`syncdoctor.watch.screen`), followed by the detail
as positional JSON, decoded only when needed. :func:`decode_record` never raises on bad input: it
returns ``None`` (older versions, foreign or truncated values too) and the monitor treats the rank as
not reporting. Signatures and stack reports have modules of their own (:mod:`syncdoctor.watch.signature`,
:mod:`syncdoctor.watch.stacks`); their names are importable from here too.
"""

from __future__ import annotations

import itertools
import json
import math
import struct
import zlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from syncdoctor.units import format_ranks
from syncdoctor.watch.signature import Signature, signature_from_compact, sizes_from
from syncdoctor.watch.stacks import Frame, StackReport, decode_stack, encode_stack

__all__ = [
    "HAS_STEP",
    "HEADER_FIELDS",
    "HEADER_GROUPS",
    "HEADER_MARKS",
    "HEADER_SIZE",
    "HEADER_WAITS",
    "INSPECTED",
    "OVERFLOW",
    "P2P",
    "P2P_KINDS",
    "RECORD_VERSION",
    "SOURCES",
    "STATES",
    "Activity",
    "Frame",
    "GroupProgress",
    "P2PProgress",
    "RankRecord",
    "Signature",
    "Solo",
    "StackReport",
    "StepMark",
    "WaitSample",
    "decode_header",
    "decode_record",
    "decode_stack",
    "encode_record",
    "encode_stack",
    "format_ranks",
    "group_id",
    "parse_ranks",
    "signature_crc",
    "sizes_from",
]

RECORD_VERSION = 8
# starting: watcher running, process group not there yet; running; exited: said goodbye (clean exit or
# destroy_process_group); failed: dying of an exception (``error`` says which); aborting: fail-fast.
STATES = ("starting", "running", "exited", "failed", "aborting")


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


P2P_KINDS = ("send", "recv")


class P2PProgress(NamedTuple):
    """One rank's point-to-point traffic with one peer in one group, in one direction (a *channel*).

    Attributes:
        group: the process group's name. peer: the other rank (global), ``-1`` for a receive from any source.
        kind: ``send`` (this rank to ``peer``) or ``recv`` (from ``peer``).
        entered: operations this rank posted on the channel; completed: those that finished, in order.
        stalled_s: seconds the oldest unfinished one has been pending, at publication; ``None`` if none is.
    """

    group: str
    peer: int
    kind: str
    entered: int
    completed: int
    stalled_s: float | None = None

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


class Activity(NamedTuple):
    """What the rank's main thread did over the last few seconds, measured by its own watcher
    (:mod:`syncdoctor.watch.activity`).

    Attributes:
        kind: ``working`` (its stack changes, or it moves bytes), ``spinning`` (CPU in the same functions,
            no bytes) or ``stuck`` (no CPU, the same stack, no bytes).
        cpu: share of one core the main thread used. io_bps: bytes per second it read or wrote.
        stacks: distinct stacks (by function) in the window.
        phase: the solo phase its stack makes certain (``torch.save``…), or ``""``.
        window_s: the span the numbers cover.
    """

    kind: str
    cpu: float = 0.0
    io_bps: float = 0.0
    stacks: int = 0
    phase: str = ""
    window_s: float = 0.0


class Solo(NamedTuple):
    """A solo phase the user marked on this rank (``syncdoctor.watch.solo``): its name, how long it has
    lasted, and how long the others may wait for it (``None``: the watcher's ``busy_after_s``)."""

    name: str
    elapsed_s: float
    up_to_s: float | None = None


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
        waits_total: how many waits this process has appended so far (grows only with ``waits``), so the
            monitor ingests a rank's waits only when it moved.
        p2p: its point-to-point channels (sends and receives per peer and group).
        activity: what its main thread is doing (busy or stuck), ``None`` until measured.
        solo: the solo phase the user marked and it is in, if any.
        read_age_s: seconds between the progress reading that ``groups`` carries and this publication
            (``None`` before the first reading). Small while the sampler keeps up; large where its thread
            was held up, and then ``groups`` may show a collective the rank has long left.
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
    waits_total: int = 0
    p2p: tuple[P2PProgress, ...] = ()
    activity: Activity | None = None
    solo: Solo | None = None
    read_age_s: float | None = None

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


# Record v5-v7: a fixed-size little-endian binary *screen header* followed by the *detail* (positional JSON).
#
# The monitor reads every rank's value each interval. In a healthy cycle it looks at the headers only,
# all at once (:mod:`syncdoctor.watch.screen`), and decodes the detail of a rank only when something
# needs it; when the screen sees anything unusual, the detector runs over the headers in bulk and decodes the
# records it names (:mod:`syncdoctor.watch.columns`; v7 added what that needs). Header and
# detail share one store key: a multi_get of 4096 keys cost the same with 120-byte and 430-byte values
# here (the store's cost is per key; see docs/performance.md), and one key keeps header and detail from
# the same publication. The header is authoritative for the fields it holds (rank, world, pid,
# heartbeat, published, stack_gen, ack, state, source); the detail holds the rest:
# host, node, local rank, attempt, groups {name: [entered, completed, stalled or -1, signature seq,
# compact signature]}, step or null, step age, quiet or null, step marks [[step, {group: entered}]],
# waits [[group, seq, s]], error or null, fail order or null, inspected {pid: state}, point-to-point
# channels [[group, peer, 0 send / 1 recv, entered, completed, stalled or -1]] (v5; v4 had no channels),
# activity [kind, cpu, io bytes/s, stacks, phase, window] or null and solo [name, elapsed, up_to or -1] or
# null (v6).
# G: group slots (group id = zlib.crc32 of the name, entered, completed). A rank with more groups sets
# OVERFLOW and every cycle takes the full path (at 4096 ranks with 6 groups: 424 ms instead of 34), so
# there are enough for a data/tensor/pipeline/context/expert-parallel job with a default group whose
# cpu:gloo,cuda:nccl sides count as two (v3 had 4)
HEADER_GROUPS = 8
HEADER_MARKS = 4  # K: the newest step marks (step, entered count per slot)
HEADER_WAITS = 8  # the newest waits (group id, seq, milliseconds), so the monitor can ingest them cheaply
MAGIC = b"SDW" + bytes([RECORD_VERSION])
# name, struct code, repeat: one list serves struct (the ranks) and numpy (the monitor's screen)
HEADER_FIELDS: tuple[tuple[str, str, int], ...] = (
    ("magic", "4s", 1), ("rank", "i", 1), ("world", "i", 1), ("pid", "q", 1), ("heartbeat", "q", 1),
    ("published", "d", 1), ("stack_gen", "q", 1), ("ack", "q", 1), ("waits_total", "q", 1),
    ("max_stall_ms", "i", 1), ("detail_len", "I", 1), ("state", "B", 1), ("source", "B", 1), ("flags", "B", 1),
    ("ngroups", "B", 1), ("nmarks", "B", 1), ("nwaits", "B", 1), ("pad", "2s", 1),
    ("gid", "I", HEADER_GROUPS), ("entered", "I", HEADER_GROUPS), ("completed", "I", HEADER_GROUPS),
    ("mark_step", "q", HEADER_MARKS), ("mark_entered", "I", HEADER_MARKS * HEADER_GROUPS),
    ("wait_gid", "I", HEADER_WAITS), ("wait_seq", "I", HEADER_WAITS), ("wait_ms", "I", HEADER_WAITS),
    # v7: what the detector's bulk pass (syncdoctor.watch.columns) reads per slot and rank, so that an incident
    # cycle decodes only the records it names: the stall per group (ms, -1: nothing pending), the signature
    # (its sequence number, and crc32 of its compact form | 1; 0: none) and the step (valid with HAS_STEP)
    ("stall_ms", "i", HEADER_GROUPS), ("sig_seq", "I", HEADER_GROUPS), ("sig_crc", "I", HEADER_GROUPS),
    ("step", "q", 1),
)
_HEADER = struct.Struct("<" + "".join(f"{n}{code}" if n > 1 else code for _, code, n in HEADER_FIELDS))
HEADER_SIZE = _HEADER.size
# flags
OVERFLOW = 1  # more groups than slots, a number out of the header's range, marks it cannot represent
P2P = 2  # the record has point-to-point channels (the detector reads those records)
INSPECTED = 4  # the record answers process-state requests (``inspected`` is not empty)
HAS_STEP = 8  # ``step`` holds the record's step (else the record has none)
SOURCES = ("", "flight_recorder", "hooks")  # header codes of RankRecord.source (others read back as "")
_U32 = 0xFFFFFFFF
_I32 = 0x7FFFFFFF


def group_id(name: str) -> int:
    """The header's id of a process group: ``zlib.crc32`` of its name."""
    return zlib.crc32(name.encode())


def signature_crc(compact: str | None) -> int:
    """The header's form of a signature (its :meth:`~Signature.to_compact` text): ``crc32 | 1``, 0 for none
    (a text that does not parse back is none, as :func:`decode_record` reads it)."""
    if compact is None or signature_from_compact(compact) is None:
        return 0
    return zlib.crc32(compact.encode()) | 1


def _stall_ms(stalled: float | None) -> int:
    """The detail's stall (rounded to ms; negative reads back as none) in ms, -1 for none."""
    if stalled is None or round(stalled, 3) < 0:
        return -1
    return round(round(stalled, 3) * 1000)


def _header(record: RankRecord, detail_len: int, compacts: dict[str, str | None]) -> bytes:
    flags = 0
    groups = list(record.groups.values())
    if len(groups) > HEADER_GROUPS:
        flags |= OVERFLOW
    slots = groups[:HEADER_GROUPS]
    names = [g.group for g in slots]
    gids = [group_id(g.group) for g in slots]
    entered = [g.entered for g in slots]
    completed = [g.completed for g in slots]
    stall_ms = [_stall_ms(g.stalled_s) for g in slots]
    sig_seq = [g.signature_seq for g in slots]
    sig_crc = [signature_crc(compacts.get(g.group)) for g in slots]
    if record.p2p:
        flags |= P2P
    if record.inspected:
        flags |= INSPECTED
    step = 0
    if record.step is not None:
        flags |= HAS_STEP
        step = record.step
    stalls = [round(g.stalled_s, 3) for g in groups if g.stalled_s is not None]
    stalls += [round(c.stalled_s, 3) for c in record.p2p if c.stalled_s is not None]  # a blocked recv counts too
    max_stall = -1 if not stalls else min(max(math.ceil(max(stalls) * 1000), 0), _I32)
    marks = record.step_marks
    steps = [m.step for m in marks]
    if any(b <= a for a, b in itertools.pairwise(steps)):  # repeated steps: the detector reads the first one
        flags |= OVERFLOW
    mark_steps, mark_entered = [], []
    for mark in marks[-HEADER_MARKS:]:
        mark_steps.append(mark.step)
        if any(name not in names for name in mark.entered):
            flags |= OVERFLOW
        for name in names:
            value = mark.entered.get(name, 0)
            mark_entered.append(value if type(value) is int else 0)
        mark_entered.extend([0] * (HEADER_GROUPS - len(names)))
    waits: list[tuple[int, int, int]] = []
    for wait in reversed(record.waits):  # the newest run of waits the header can hold
        if len(waits) == HEADER_WAITS or wait.group not in names:
            break
        ms = round(round(wait.wait_s, 3) * 1000)
        if not 0 <= wait.seq <= _U32 or not 0 <= ms <= _U32:
            break
        waits.append((group_id(wait.group), wait.seq, ms))
    waits.reverse()
    if any(not 0 <= v <= _U32 for v in (*entered, *completed, *mark_entered, *sig_seq)) or any(
        not -(2**63) <= v < 2**63 for v in (*mark_steps, step)
    ) or any(not -1 <= v <= _I32 for v in stall_ms):
        flags |= OVERFLOW
        entered = [min(max(v, 0), _U32) for v in entered]
        completed = [min(max(v, 0), _U32) for v in completed]
        mark_entered = [min(max(v, 0), _U32) for v in mark_entered]
        sig_seq = [min(max(v, 0), _U32) for v in sig_seq]
        mark_steps = [min(max(v, -(2**63)), 2**63 - 1) for v in mark_steps]
        step = min(max(step, -(2**63)), 2**63 - 1)
        stall_ms = [min(max(v, -1), _I32) for v in stall_ms]

    def pad(values: list[int], size: int) -> list[int]:
        return values + [0] * (size - len(values))

    state = STATES.index(record.state) if record.state in STATES else 1
    source = SOURCES.index(record.source) if record.source in SOURCES else 0
    return _HEADER.pack(
        MAGIC, record.rank, record.world_size, record.pid, record.heartbeat, round(record.published, 3),
        record.stack_gen, record.ack, record.waits_total, max_stall, detail_len, state, source, flags,
        len(slots), len(mark_steps), len(waits), b"",
        *pad(gids, HEADER_GROUPS), *pad(entered, HEADER_GROUPS), *pad(completed, HEADER_GROUPS),
        *pad(mark_steps, HEADER_MARKS), *pad(mark_entered, HEADER_MARKS * HEADER_GROUPS),
        *pad([w[0] for w in waits], HEADER_WAITS), *pad([w[1] for w in waits], HEADER_WAITS),
        *pad([w[2] for w in waits], HEADER_WAITS),
        *(stall_ms + [-1] * (HEADER_GROUPS - len(stall_ms))), *pad(sig_seq, HEADER_GROUPS), *pad(sig_crc, HEADER_GROUPS),
        step,
    )


def encode_record(record: RankRecord) -> bytes:
    """Header + detail (see above). Raises ``struct.error`` only for a rank, pid or counter beyond 64 bits."""
    compacts = {name: g.signature.to_compact() if g.signature else None for name, g in record.groups.items()}
    detail = json.dumps([
        record.host,
        record.node,
        record.local_rank,
        record.attempt,
        {
            name: [
                g.entered,
                g.completed,
                -1 if g.stalled_s is None else round(g.stalled_s, 3),
                g.signature_seq,
                compacts[name],
            ]
            for name, g in record.groups.items()
        },
        record.step,
        round(record.step_age_s or 0.0, 3),
        None if record.quiet_s is None else round(record.quiet_s, 3),
        [[m.step, dict(m.entered)] for m in record.step_marks],
        [[w.group, w.seq, round(w.wait_s, 3)] for w in record.waits],
        record.error[:500] if record.error else None,
        record.fail_order,
        {str(pid): state for pid, state in record.inspected.items()},
        [[c.group, c.peer, P2P_KINDS.index(c.kind) if c.kind in P2P_KINDS else 0, c.entered, c.completed,
          -1 if c.stalled_s is None else round(c.stalled_s, 3)] for c in record.p2p],
        None if record.activity is None else [
            record.activity.kind, round(record.activity.cpu, 3), round(record.activity.io_bps, 1),
            record.activity.stacks, record.activity.phase[:80], round(record.activity.window_s, 2)],
        None if record.solo is None else [
            record.solo.name[:80], round(record.solo.elapsed_s, 3),
            -1 if record.solo.up_to_s is None else round(record.solo.up_to_s, 3)],
        None if record.read_age_s is None else round(record.read_age_s, 3),
    ], separators=(",", ":")).encode()
    return _header(record, len(detail), compacts) + detail


_NUMBERS = (int, float)
_DETAIL_FIELDS = 17


def decode_header(raw: bytes | None) -> tuple[Any, ...] | None:
    """The header's values in :data:`HEADER_FIELDS` order (repeated fields flattened), or ``None`` when
    ``raw`` is no v6 record: empty, short, foreign, another version, or a length that disagrees."""
    if not raw or len(raw) < HEADER_SIZE or raw[:4] != MAGIC:
        return None
    values = _HEADER.unpack_from(raw)
    if len(raw) != HEADER_SIZE + values[10]:
        return None
    return values


def decode_record(raw: bytes | str | None) -> RankRecord | None:
    """Parse a record; ``None`` for empty, foreign, old-version or malformed data (never raises).

    Written for speed (the full detector needs every rank's record): types are checked inline, only
    where a wrong type could break the detector's arithmetic or comparisons.
    """
    if isinstance(raw, str):
        raw = raw.encode(errors="replace")
    try:
        head = decode_header(raw)
        if head is None:
            return None
        (_, rank, world, pid, beat, published, stack_gen, ack, waits_total, _stall, _len, state, source) = head[:13]
        data = json.loads(raw[HEADER_SIZE:])  # type: ignore[index]
        if type(data) is not list or len(data) != _DETAIL_FIELDS:
            return None
        (host, node, local_rank, attempt, raw_groups, step, step_age, quiet, marks, waits, error, fail_order,
         inspected, raw_p2p, raw_activity, raw_solo, read_age) = data
        if type(node) is not int:
            return None
        groups = {}
        for name, (entered, completed, stalled, sig_seq, sig) in raw_groups.items():
            if type(entered) is not int or type(completed) is not int or type(stalled) not in _NUMBERS:
                return None
            groups[name] = GroupProgress(name, entered, completed, None if stalled < 0 else stalled,
                                         signature_from_compact(sig) if type(sig) is str else None, sig_seq)
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
        p2p: list[P2PProgress] | tuple[()] = [] if raw_p2p else ()
        for group, peer, kind, entered, completed, stalled in raw_p2p:
            if (type(peer) is not int or type(entered) is not int or type(completed) is not int
                    or type(stalled) not in _NUMBERS or kind not in (0, 1)):
                return None
            p2p.append(P2PProgress(str(group), peer, P2P_KINDS[kind], entered, completed,  # type: ignore[union-attr]
                                   None if stalled < 0 else stalled))
        return RankRecord(
            rank, world, host if type(host) is str else str(host), node, pid, local_rank, attempt, beat,
            STATES[state] if state < len(STATES) else "running", SOURCES[source] if source < len(SOURCES) else "",
            step, None if step is None else step_age, quiet, groups, tuple(mark_list), tuple(wait_list),
            stack_gen, ack, str(error) if error else None, fail_order if type(fail_order) is int else None,
            {int(k): str(v) for k, v in inspected.items()} if inspected else _EMPTY, published, waits_total,
            tuple(p2p), _activity(raw_activity), _solo(raw_solo),
            read_age if type(read_age) in _NUMBERS and read_age >= 0 else None,
        )
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, struct.error):
        return None


def _activity(raw: Any) -> Activity | None:
    if raw is None:
        return None
    kind, cpu, io, stacks, phase, window = raw
    if type(kind) is not str or type(cpu) not in _NUMBERS or type(io) not in _NUMBERS or type(stacks) is not int \
            or type(window) not in _NUMBERS:
        raise TypeError("activity")
    return Activity(kind, float(cpu), float(io), stacks, str(phase), float(window))


def _solo(raw: Any) -> Solo | None:
    if raw is None:
        return None
    name, elapsed, up_to = raw
    if type(elapsed) not in _NUMBERS or type(up_to) not in _NUMBERS:
        raise TypeError("solo")
    return Solo(str(name), float(elapsed), None if up_to < 0 else float(up_to))


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
