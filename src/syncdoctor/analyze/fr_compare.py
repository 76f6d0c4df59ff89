"""Compare Flight Recorder dumps of all ranks: who got how far in each group, and where they disagree.

Pure: no I/O. Groups are keyed by their name, the same on every rank (``process_group[0]`` of the entries):
a dump's pg ids are numbers each process counts for itself (gloo), so pg 1 of rank 0 and pg 1 of rank 2
can be two different tensor-parallel groups. For each process group:

* progress: each rank's ``last_enqueued`` from ``pg_status``; the ranks below the maximum never entered
  the collective the others are in (for gloo, ``last_completed`` is not trusted: a timed-out work also
  counts as retired);
* mismatches: at each sequence number present in several dumps, the operation, input sizes and dtypes of
  each rank; the first sequence number where they differ, and the minority ranks;
* missing dumps: members of the group (``pg_config`` ranks) with no dump.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from syncdoctor.analyze.model import FrDump, FrEntry

__all__ = ["GroupMismatch", "GroupProgress", "compare_mismatches", "compare_progress"]


@dataclass(frozen=True)
class GroupProgress:
    """How far each rank with a dump got in one group."""

    pg_id: str
    members: tuple[int, ...]
    enqueued: dict[int, int]  # rank -> last enqueued sequence number
    missing_dumps: tuple[int, ...]

    @property
    def top(self) -> int:
        return max(self.enqueued.values(), default=0)

    @property
    def behind(self) -> tuple[int, ...]:
        top = self.top
        return tuple(sorted(rank for rank, seq in self.enqueued.items() if seq < top))


@dataclass(frozen=True)
class GroupMismatch:
    """The first sequence number of a group where ranks issued different collectives."""

    pg_id: str
    seq: int
    signatures: dict[int, str]  # rank -> "all_reduce [[4]] Float"
    majority: str
    culprits: tuple[int, ...]
    entries: dict[int, FrEntry]


def _signature(entry: FrEntry) -> str:
    sizes = ",".join("x".join(str(d) for d in shape) or "scalar" for shape in entry.input_sizes) or "-"
    dtypes = ",".join(entry.dtypes) or "-"
    return f"{entry.op} in=[{sizes}] {dtypes}"


def compare_progress(dumps: Sequence[FrDump]) -> list[GroupProgress]:
    by_group: dict[str, dict[int, int]] = defaultdict(dict)
    members: dict[str, set[int]] = defaultdict(set)
    for dump in dumps:
        if dump.rank is None:
            continue
        for group in dump.groups:
            key = group.name or group.pg_id
            members[key].update(group.ranks)
            if group.last_enqueued is not None:
                by_group[key][dump.rank] = group.last_enqueued
            else:
                by_group[key].setdefault(dump.rank, 0)
    result = []
    for pg_id, enqueued in sorted(by_group.items()):
        group_members = tuple(sorted(members[pg_id])) or tuple(sorted(enqueued))
        missing = tuple(r for r in group_members if r not in enqueued)
        result.append(GroupProgress(pg_id, group_members, dict(enqueued), missing))
    return result


def compare_mismatches(dumps: Sequence[FrDump]) -> list[GroupMismatch]:
    per_group: dict[str, dict[int, dict[int, FrEntry]]] = defaultdict(lambda: defaultdict(dict))
    for dump in dumps:
        if dump.rank is None:
            continue
        for entry in dump.entries:
            if entry.is_p2p or entry.seq <= 0:
                continue
            per_group[entry.pg_name or entry.pg_id][entry.seq][dump.rank] = entry
    result = []
    for pg_id, by_seq in sorted(per_group.items()):
        for seq in sorted(by_seq):
            entries = by_seq[seq]
            if len(entries) < 2:
                continue
            signatures = {rank: _signature(entry) for rank, entry in entries.items()}
            counts = Counter(signatures.values())
            if len(counts) < 2:
                continue
            (majority, top), *rest = counts.most_common()
            if rest and rest[0][1] == top:  # a tie: nobody is the odd one out
                culprits = tuple(sorted(signatures))
            else:
                culprits = tuple(sorted(rank for rank, sig in signatures.items() if sig != majority))
            result.append(GroupMismatch(pg_id, seq, signatures, majority, culprits, dict(entries)))
            break  # the first divergence explains the rest
    return result
