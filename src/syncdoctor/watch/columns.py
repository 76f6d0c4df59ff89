"""The detector's bulk pass: one cycle's record headers as columns, so that an incident cycle decodes only the
records it names.

Pure: no I/O, no clock. Needs numpy. While an incident is open, every cycle runs the whole detector, and
decoding every rank's record was most of it (16,384 ranks: 360 ms of a 600 ms cycle, the rest Python loops
over the ranks). With :class:`Columns` on the snapshot (:attr:`syncdoctor.watch.snapshot.Snapshot.columns`),
the rules read the per-rank, per-group numbers from the binary headers (:mod:`syncdoctor.watch.records`, v7:
entered, completed, stall and signature per group slot, the step, the heartbeat, the state, whether a record
has point-to-point channels or process states) as arrays, and decode a record only for what the headers do
not hold: the ranks they name (late, dead, odd), one record per distinct signature, and the records with
channels or process states. Host names come from an identity cache that the monitor keeps per rank and
process (a rank's host does not change while its pid does not).

The monitor builds columns only when the headers hold everything the detector reads: every rank's header
valid, none overflowing its slots, every group in them one whose member table the monitor read, and the
waits bookkeeping whole (:class:`~syncdoctor.watch.monitor.Monitor`); otherwise it decodes every record.
Both ways give the same events (tests/test_watch_screen.py drives a monitor of each kind over the same
records; tests/test_watch_columns.py runs the detector's own scenarios both ways).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from syncdoctor.watch.records import (
    HAS_STEP,
    HEADER_GROUPS,
    OVERFLOW,
    STATES,
    GroupProgress,
    RankRecord,
    Signature,
    WaitSample,
    group_id,
)
from syncdoctor.watch.screen import GroupIndex, drift_check, group_slots, used_slots

__all__ = ["Columns", "GroupColumns", "headers_hold_all", "identity_of"]

_EXITED = STATES.index("exited")
_FAILED = STATES.index("failed")


@dataclass(frozen=True)
class GroupColumns:
    """One group's numbers for some ranks (``ranks``, in order): whether each has the group in its header, and
    its entered, completed, stall (NaN: nothing pending), signature sequence number and signature crc (0: none)."""

    name: str
    ranks: Any
    has: Any
    entered: Any
    completed: Any
    stalled: Any
    sig_seq: Any
    sig_crc: Any


def identity_of(record: RankRecord) -> tuple[int, str, str, str]:
    """What the identity cache keeps of a record: its pid, host key, where (for messages) and bare host."""
    return record.pid, record.host_key, record.where, record.host


def headers_hold_all(table: Any, index: GroupIndex) -> bool:
    """Whether the headers hold everything the detector reads in bulk: every rank's own header, none
    overflowing its slots, and every group in them one of ``index`` (whose member tables were read), no two
    of those sharing an id, none naming a rank outside the job."""
    import numpy as np

    if index.shared_id or index.outside is not None:
        return False
    if (table["flags"] & OVERFLOW).any() or (table["ngroups"] > HEADER_GROUPS).any() or not (
            table["rank"] == np.arange(len(table))).all():
        return False
    return bool(np.isin(table["gid"][used_slots(table)], index.gids).all())


class Columns:
    """Every rank's header of one cycle, with the records (decoded on read) for what the headers lack.

    ``identity``: rank -> (pid, host key, where, host), kept by the caller across cycles and completed here from
    the records of ranks it lacks (or whose pid changed). ``waits``: the waits the straggler bookkeeping
    takes this cycle (the ones appended since it last took a rank's waits).
    """

    def __init__(self, table: Any, index: GroupIndex, records: Mapping[int, RankRecord],
                 identity: dict[int, tuple[int, str, str, str]], waits: Sequence[tuple[int, Sequence[WaitSample]]],
                 moved: Any = None, changed_at: Any = None) -> None:
        self.table = table
        self.index = index
        self.records = records
        self.identity = identity
        self.waits = waits
        # from a caller that keeps the detector's heartbeats as arrays (the monitor): which ranks' heartbeats
        # the detector has not seen yet, and when each heartbeat last changed once this cycle's are noted
        self.moved = moved
        self.changed_at = changed_at
        self.world_size = len(table)
        self._pids: list[int] | None = None
        self._groups: dict[str, tuple[Sequence[int] | None, GroupColumns]] = {}
        self._signatures: dict[tuple[str, int, int], Signature | None] = {}
        self._pair_columns: tuple[Any, Any, Any] | None = None

    # --- per rank -------------------------------------------------------------------------------------
    def pid(self, rank: int) -> int:
        if self._pids is None:
            self._pids = self.table["pid"].tolist()
        return self._pids[rank]

    def heartbeats(self) -> Iterator[tuple[int, int]]:
        """``(rank, heartbeat)`` for the detector's heartbeat bookkeeping: the ranks whose heartbeat it has
        not seen (all, when the caller does not say)."""
        import numpy as np

        beats = self.table["heartbeat"]
        if self.moved is None:
            return enumerate(beats.tolist())
        moved = np.flatnonzero(self.moved)
        return zip(moved.tolist(), beats[moved].tolist(), strict=True)

    def changed_at_of(self, seen: Mapping[int, Any]) -> Any:
        """Per rank, when its heartbeat last changed (``seen``: the detector's, after this cycle's heartbeats)."""
        import numpy as np

        if self.changed_at is not None:
            return self.changed_at
        return np.fromiter((seen[r].changed_at for r in range(self.world_size)), dtype=np.float64,
                           count=self.world_size)

    def states(self) -> Any:
        """Per rank: 0 running or starting or aborting, 1 exited, 2 failed."""
        import numpy as np

        state = self.table["state"]
        return np.where(state == _EXITED, 1, np.where(state == _FAILED, 2, 0))

    def _known(self, rank: int) -> tuple[int, str, str, str] | None:
        pid = self.pid(rank)
        known = self.identity.get(rank)
        if known is None or known[0] != pid:
            record = self.records.get(rank)
            if record is None:
                return None
            known = self.identity[rank] = identity_of(record)
        return known

    def host(self, rank: int) -> str | None:
        """:attr:`RankRecord.host` of the rank's record, likewise."""
        known = self._known(rank)
        return None if known is None else known[3]

    def host_key(self, rank: int) -> str | None:
        """:attr:`RankRecord.host_key` of the rank's record, without decoding it when its process is known."""
        known = self._known(rank)
        return None if known is None else known[1]

    def where(self, rank: int) -> str | None:
        """:attr:`RankRecord.where` of the rank's record, likewise."""
        known = self._known(rank)
        return None if known is None else known[2]

    def flagged(self, flag: int) -> list[int]:
        """The ranks whose header has ``flag`` set (:data:`~syncdoctor.watch.records.P2P`, ``INSPECTED``)."""
        import numpy as np

        return np.flatnonzero(self.table["flags"] & flag).tolist()

    def with_records(self, flag: int) -> Iterator[tuple[int, RankRecord]]:
        """The records of the flagged ranks, in rank order (decoded)."""
        for rank in self.flagged(flag):
            record = self.records.get(rank)
            if record is not None:
                yield rank, record

    def steps(self, ranks: Sequence[int]) -> set[int]:
        """The steps of these ranks' records (ranks without one left out)."""
        import numpy as np

        rows = np.asarray(ranks, dtype=np.int64)
        if not len(rows):
            return set()
        has = (self.table["flags"][rows] & HAS_STEP) != 0
        return set(self.table["step"][rows][has].tolist())

    def max_step(self) -> int | None:
        steps = self.steps(range(self.world_size))
        return max(steps) if steps else None

    # --- per group ------------------------------------------------------------------------------------
    def group(self, name: str, ranks: Sequence[int] | None = None) -> GroupColumns:
        """The group's numbers for ``ranks`` (default: every rank of the job)."""
        import numpy as np

        cached = self._groups.get(name)
        if cached is not None and cached[0] is ranks:  # the same member table (or None: all ranks) again
            return cached[1]
        table = self.table
        rows = np.arange(self.world_size, dtype=np.int64) if ranks is None else np.asarray(ranks, dtype=np.int64)
        if not len(rows):
            rows = np.zeros(0, dtype=np.int64)
        has, slot = group_slots(table, rows, group_id(name))

        def column(field: str, dtype: Any) -> Any:
            return np.where(has, table[field][rows, slot].astype(dtype), 0)

        stall = column("stall_ms", np.int64)
        stalled = np.where(has & (stall >= 0), stall / 1000.0, np.nan)
        out = GroupColumns(name, rows, has, column("entered", np.int64), column("completed", np.int64), stalled,
                           column("sig_seq", np.int64), column("sig_crc", np.int64))
        self._groups[name] = (ranks, out)
        return out

    def signature(self, name: str, rank: int) -> Signature | None:
        """The signature of ``rank``'s progress in group ``name`` (decoded; one record per distinct crc and seq
        is enough: the caller passes the first rank that has it)."""
        record = self.records.get(rank)
        progress = record.groups.get(name) if record is not None else None
        return progress.signature if progress is not None else None

    def signature_of(self, name: str, crc: int, seq: int, rank: int) -> Signature | None:
        """The signature a crc stands for (decoded from ``rank``'s record once per cycle)."""
        cache_key = (name, crc, seq)
        if cache_key not in self._signatures:
            self._signatures[cache_key] = self.signature(name, rank)
        return self._signatures[cache_key]

    def progress(self, cols: GroupColumns, completed: Any) -> dict[int, GroupProgress | None]:
        """The group's progress per rank as records would give it (``completed`` replacing the column: settled
        values), for the rare rule that reads every member's (a hang every member entered)."""
        out: dict[int, GroupProgress | None] = {}
        stalled = cols.stalled.tolist()
        for i, (rank, has, entered, done, sig_seq, crc) in enumerate(zip(
                cols.ranks.tolist(), cols.has.tolist(), cols.entered.tolist(), completed.tolist(),
                cols.sig_seq.tolist(), cols.sig_crc.tolist(), strict=True)):
            if not has:
                out[rank] = None
                continue
            signature = self.signature_of(cols.name, crc, sig_seq, rank) if crc else None
            stall = stalled[i]
            out[rank] = GroupProgress(cols.name, entered, done, None if stall != stall else stall, signature, sig_seq)
        return out

    def any_completed(self, name: str, seq: int, among: Any = None) -> bool:
        """Some rank (of those where ``among`` is true, default all) has the group and completed ``seq``."""
        cols = self.group(name)
        hit = cols.has & (cols.completed >= seq)
        if among is not None:
            hit &= among
        return bool(hit.any())

    def _pairs(self) -> tuple[Any, Any, Any]:
        """For every (group, member) pair of the index: whether the member's header has the group, and its
        entered and completed counts there (all groups at once: a job with a tensor-parallel group per 8
        ranks has thousands of groups, and a call per group costs more than the whole cycle)."""
        import numpy as np

        if self._pair_columns is None:
            index, table = self.index, self.table
            pr = index.pair_rank
            has, slot = group_slots(table, pr, index.gids[index.pair_group])
            self._pair_columns = (has, np.where(has, table["entered"][pr, slot].astype(np.int64), 0),
                                  np.where(has, table["completed"][pr, slot].astype(np.int64), 0))
        return self._pair_columns

    def pending_groups(self, alive: Any) -> set[str]:
        """The groups of the index in which some alive member is inside a collective (the others have no wait)."""
        import numpy as np

        index = self.index
        if not len(index.pair_rank):
            return set()
        has, entered, completed = self._pairs()
        pending = np.logical_or.reduceat(has & (entered > completed) & alive[index.pair_rank], index.starts)
        return {index.names[g] for g in index.nonempty[pending].tolist()}

    def completed_by_group(self, groups: Mapping[str, Sequence[int]]) -> dict[str, int]:
        """:func:`syncdoctor.watch.straggler.completed_by_group` from the headers."""
        import numpy as np

        index = self.index
        completed: dict[str, int] = {}
        if len(index.pair_rank):
            has, _entered, done = self._pairs()
            every = np.logical_and.reduceat(has, index.starts)
            lowest = np.minimum.reduceat(done, index.starts)
            names = [index.names[g] for g in index.nonempty.tolist()]
            by_index = {name: (bool(ok), int(low)) for name, ok, low in zip(names, every, lowest, strict=True)}
        else:
            by_index = {}
        indexed = set(index.names)
        for name, members in groups.items():
            if not len(members):
                continue
            if name in indexed:  # the index holds the same member tables (the monitor's, the snapshot's)
                ok, low = by_index.get(name, (False, 0))
                if ok:
                    completed[name] = low
                continue
            cols = self.group(name, members)
            if bool(cols.has.all()):
                completed[name] = int(cols.completed.min())
        return completed

    def drifting(self) -> set[str] | None:
        """The groups whose members' entered counts may differ at a common step (``None``: fewer than two ranks
        marked a step, so none can); the drift rule reads only their members' records."""
        import numpy as np

        result = drift_check(self.table, self.index)
        if result is None:
            return None
        lacks, differ, _common = result
        return {self.index.names[int(self.index.nonempty[i])] for i in np.flatnonzero(lacks | differ).tolist()}
