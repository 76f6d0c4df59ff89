"""Explain a multi-rank run that did not finish: which ranks wait in which collective, which rank is
missing from it and where that rank is. Pure: parses text and plain records, no I/O.

Inputs are each rank's last progress record (written by the rank on entering and leaving every
collective, see :mod:`syncdoctor.testing._rank_child`) and its Python stacks as printed by
:mod:`faulthandler` when the parent asked for them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Diagnosis",
    "Frame",
    "ProgressRecord",
    "diagnose",
    "is_internal_file",
    "main_thread_frames",
    "parse_faulthandler",
    "user_frame",
]

_THREAD_RE = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+)", re.MULTILINE)
_FRAME_RE = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', re.MULTILINE)

# Our own runner and wrappers: never shown in tracebacks and stacks.
_RUNNER_PATTERNS = (
    re.compile(r"[/\\]syncdoctor[/\\](faults|testing[/\\](_rank_child|multirank|symmetry|_hang))"),
    re.compile(r"(^<frozen runpy>$|[/\\]runpy\.py$)"),
)
# Files that are never "where the user's code is": the runner, torch, the standard library's threading.
_INTERNAL_PATTERNS = (
    *_RUNNER_PATTERNS,
    re.compile(r"[/\\]torch[/\\]"),
    re.compile(r"[/\\]threading\.py$"),
)


def is_internal_file(path: str) -> bool:
    """True for files of syncdoctor's runner and wrappers (hidden from tracebacks and stacks)."""
    return any(p.search(path) for p in _RUNNER_PATTERNS)


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


@dataclass(frozen=True)
class ProgressRecord:
    """A rank's last known position. ``entered``/``completed`` are per-group sequence numbers."""

    rank: int
    state: str  # "running" (between collectives), "in_collective", "done", "failed"
    entered: Mapping[str, int] = field(default_factory=dict)
    completed: Mapping[str, int] = field(default_factory=dict)
    current: Mapping[str, Any] | None = None  # the collective it is in: CollectiveCall JSON + "group", "seq"
    last: Mapping[str, Any] | None = None  # the last collective it entered
    failed_in: Mapping[str, Any] | None = None  # the collective that raised on this rank, if one did
    host: str = ""
    pid: int = 0
    time: float = 0.0  # wall-clock time the record was written (entering or leaving a collective)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProgressRecord:
        return cls(
            rank=int(data["rank"]),
            state=str(data.get("state", "running")),
            entered={str(k): int(v) for k, v in dict(data.get("entered") or {}).items()},
            completed={str(k): int(v) for k, v in dict(data.get("completed") or {}).items()},
            current=data.get("current"),
            last=data.get("last"),
            failed_in=data.get("failed_in"),
            host=str(data.get("host", "")),
            pid=int(data.get("pid", 0)),
            time=float(data.get("time", 0.0)),
        )


def parse_faulthandler(text: str) -> list[tuple[bool, list[Frame]]]:
    """Threads in a faulthandler dump: (is_current_thread, frames most recent first)."""
    threads = []
    matches = list(_THREAD_RE.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        block = text[match.end() : end]
        frames = [Frame(m["file"], int(m["line"]), m["func"]) for m in _FRAME_RE.finditer(block)]
        threads.append((match.group(1) == "Current thread", frames))
    return threads


def _is_internal(frame: Frame) -> bool:
    return any(p.search(frame.file) for p in _INTERNAL_PATTERNS)


def main_thread_frames(text: str) -> list[Frame]:
    """The frames of the thread running the rank's function (its bottom frame is in our child entry)."""
    threads = parse_faulthandler(text)
    for _, frames in threads:
        if any("_rank_child" in f.file for f in frames):
            return frames
    for current, frames in threads:
        if current:
            return frames
    return threads[0][1] if threads else []


def user_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame in the user's code (not torch, not syncdoctor's runner)."""
    for frame in frames:
        if not _is_internal(frame):
            return frame
    return None


def _describe_current(current: Mapping[str, Any]) -> str:
    sizes = current.get("sizes")
    text = str(current.get("op", "?"))
    detail = []
    if sizes is not None:
        detail.append(" ".join(str(list(s)) for s in sizes))
        if current.get("dtype"):
            detail[-1] += f" {current['dtype']}"
    if current.get("reduce_op"):
        detail.append(str(current["reduce_op"]))
    text += f"({', '.join(detail)})"
    site = current.get("site")
    if site:
        text += f" at {site.get('file')}:{site.get('line')} in {site.get('function')}"
    return text


@dataclass(frozen=True)
class Diagnosis:
    """Lines explaining the hang, and the ranks that hold the others up (culprits), first one first."""

    lines: tuple[str, ...]
    culprits: tuple[int, ...]
    summary: str = ""
    watch: tuple[str, ...] = ()  # the same state judged by syncdoctor.watch's detector: one line per event


def diagnose(
    records: Mapping[int, ProgressRecord | None],
    stuck: Sequence[int],
    where: Mapping[int, Frame | None],
    exited: Mapping[int, int] | None = None,
) -> Diagnosis:
    """One line per finding about the ranks that did not finish, and the culprits.

    ``records``: each rank's last progress record (None if it never wrote one); ``stuck``: ranks still
    running when the run was stopped; ``where``: each stuck rank's innermost user frame from its stack;
    ``exited``: ranks that ended early with a non-zero code (those that failed inside a collective count
    as being in it: gloo raises "connection closed" in the ranks left waiting when a peer exits).
    """
    lines: list[str] = []
    culprits: list[int] = []
    summaries: list[str] = []
    exited = dict(exited or {})
    waiting: dict[tuple[str, int], list[int]] = {}
    positions: dict[int, Mapping[str, Any]] = {}
    for rank in sorted(set(stuck) | set(exited)):
        record = records.get(rank)
        if record is None:
            continue
        position = record.current if rank in stuck and record.state == "in_collective" else None
        if rank in exited and record.failed_in:
            position = record.failed_in
        if position:
            positions[rank] = position
            key = (str(position.get("group", "")), int(position.get("seq", 0)))
            waiting.setdefault(key, []).append(rank)
    for (group, seq), ranks in sorted(waiting.items()):
        first = positions[ranks[0]]
        members = [int(r) for r in first.get("group_ranks", [])] or sorted(records)
        ops = {r: _describe_current(positions[r]) for r in ranks}
        distinct = sorted(set(ops.values()))
        who = ", ".join(str(r) for r in ranks)
        plural = "s" if len(ranks) > 1 else ""
        failed_here = [r for r in ranks if r in exited]
        verb = ("wait" if plural else "waits") if not failed_here else ("were" if plural else "was")
        if len(distinct) == 1:
            lines.append(f"rank{plural} {who} {verb} in collective #{seq} of group {group}: {distinct[0]}")
            if failed_here:
                several = len(failed_here) > 1
                lines.append(
                    f"rank{'s' if several else ''} {', '.join(map(str, failed_here))} failed inside it "
                    f"(the peer {'they' if several else 'it'} waited for went away)"
                )
        else:
            lines.append(f"desync at collective #{seq} of group {group}: ranks issued different collectives:")
            lines.extend(f"  rank {r}: {ops[r]}" for r in ranks)
            by_op: dict[str, list[int]] = {}
            for r in ranks:
                by_op.setdefault(ops[r], []).append(r)
            odd = min(by_op.values(), key=lambda rs: (len(rs), -rs[0]))
            culprits.extend(r for r in odd if r not in culprits)
            summaries.append(
                f"rank{'s' if len(odd) > 1 else ''} {', '.join(map(str, odd))} issued {ops[odd[0]].split(' at ')[0]} "
                f"where the others issued another collective (#{seq})"
            )
        op_name = str(first.get("op", "collective"))
        they_wait = f"rank{plural} {who} {verb} in"
        for member in members:
            if member in ranks:
                continue
            record = records.get(member)
            entered = record.entered.get(group, 0) if record else 0
            if member not in culprits:
                culprits.append(member)
            if member in exited and member not in positions:
                after = f"after collective #{entered}" if entered else "before its first collective"
                lines.append(f"rank {member} never entered collective #{seq}: it exited with code {exited[member]} {after}")
                summaries.append(f"rank {member} exited before {op_name} #{seq} that {they_wait}")
            elif member in stuck:
                place = where.get(member)
                at = f"; it is at {place}" if place else ""
                if record is not None and record.state == "in_collective" and record.current:
                    other = record.current
                    lines.append(
                        f"rank {member} never entered collective #{seq} of group {group}: it waits in "
                        f"#{other.get('seq')} of group {other.get('group')}: {_describe_current(other)}"
                    )
                    summaries.append(f"rank {member} waits in another group's collective, not in {op_name} #{seq}")
                else:
                    lines.append(
                        f"rank {member} never entered collective #{seq}: it completed #{entered} and is "
                        f"still working elsewhere{at}"
                    )
                    summaries.append(
                        f"rank {member} never reached {op_name} #{seq} that {they_wait}"
                        + (f" (it is at {place})" if place else "")
                    )
            elif record is not None and record.state == "done":
                lines.append(
                    f"rank {member} never entered collective #{seq}: it finished after issuing {entered} "
                    f"collective(s) in group {group} (a skipped collective?)"
                )
                summaries.append(
                    f"rank {member} finished without issuing {op_name} #{seq} that {they_wait}"
                )
    for rank in stuck:
        if any(rank in ranks for ranks in waiting.values()):
            continue
        if any(f"rank {rank} never entered" in line for line in lines):
            continue
        place = where.get(rank)
        lines.append(f"rank {rank} did not finish and is in no collective" + (f": it is at {place}" if place else ""))
        if rank not in culprits:
            culprits.append(rank)
    return Diagnosis(tuple(lines), tuple(culprits), "; ".join(summaries))
