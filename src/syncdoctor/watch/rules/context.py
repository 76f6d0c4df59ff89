"""What every detector rule reads: one cycle's snapshot with the detector's memory, and the condition a rule
returns. Pure: no I/O, no clock (``snapshot.now`` is the only time)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.records import RankRecord, Signature, format_ranks
from syncdoctor.watch.snapshot import DetectorState, Requests, Snapshot

__all__ = [
    "ALIVE_STATES",
    "DEFAULT_GROUP",
    "STICKY",
    "SYMMETRIC",
    "Blocked",
    "Condition",
    "Context",
    "have",
    "key",
    "ranks_text",
    "who_list",
]

ALIVE_STATES = ("starting", "running", "aborting")
STICKY = ("W102", "W103", "W108")  # conditions that never clear by themselves: reported once
DEFAULT_GROUP = "0"
# collectives that complete on a rank only once every member has entered them (unlike broadcast, whose
# root may finish first)
SYMMETRIC = ("all_reduce", "allreduce", "all_gather", "allgather", "_allgather_base", "all_gather_into_tensor",
             "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "all_to_all", "alltoall",
             "alltoall_base", "all_to_all_single", "barrier", "all_reduce_coalesced", "allreduce_coalesced",
             "coalesced")


@dataclass
class Condition:
    """What a rule sees this cycle: the event it would raise, and whether it may be raised yet."""

    event: Event
    ready: bool = True


@dataclass
class Blocked:
    """What a dead, missing or gone rank holds up: the wait nearest to it and everyone behind it."""

    group: str
    seq: int
    signature: Signature | None
    waiting: tuple[int, ...]
    waited: float
    chain: str = ""


@dataclass
class Context:
    snapshot: Snapshot
    config: WatchConfig
    state: DetectorState
    live: dict[int, str]  # rank -> alive | stale | exited | failed | missing | unknown
    groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    requests: Requests = field(default_factory=Requests)
    blocked: dict[int, Blocked] = field(default_factory=dict)
    # with columns (snapshot.columns): per rank, whether it is alive, and when its heartbeat last changed
    alive: Any = None
    changed_at: Any = None

    def age(self, rank: int) -> float:
        seen = self.state.seen.get(rank)
        return 0.0 if seen is None else self.snapshot.now - seen.changed_at

    def read_age(self, rank: int) -> float | None:
        """How old the progress reading in ``rank``'s record was when it was published (``None``: unknown)."""
        rec = self.snapshot.records.get(rank)
        return None if rec is None else rec.read_age_s

    def elapsed(self, rank: int) -> float:
        """Seconds since the rank published its current record, to add to the durations it reports.

        The monitor's own clock gives a lower bound (since it first saw the record, up to one cycle late);
        the publication time on the rank's wall clock is used within one interval above that, so that
        clocks that disagree cannot stretch a wait by more than an interval.
        """
        low = self.age(rank)
        rec = self.snapshot.records.get(rank)
        if rec is None or not rec.published or not self.snapshot.wall:
            return low
        return min(max(self.snapshot.wall - rec.published, low), low + self.config.interval_s)

    @property
    def silent_s(self) -> float:
        """How long a heartbeat may stay unchanged before its rank counts as falling silent."""
        return min(self.config.dead_s, 2.0 * self.config.interval_s)

    def silent(self, rank: int) -> bool:
        """Alive by the dead threshold, but its heartbeat already missed a couple of intervals."""
        return self.age(rank) >= self.silent_s

    def record(self, rank: int) -> RankRecord | None:
        return self.snapshot.records.get(rank)

    def host_key(self, rank: int) -> str | None:
        """The rank's :attr:`~RankRecord.host_key` (from the columns' identity cache when there are columns)."""
        columns = self.snapshot.columns
        if columns is not None:
            return columns.host_key(rank)
        rec = self.record(rank)
        return None if rec is None else rec.host_key

    def records_with(self, flag: int) -> Iterator[tuple[int, RankRecord]]:
        """The records that may have what ``flag`` says (channels, process states): with columns, those whose
        header has the flag; else all."""
        columns = self.snapshot.columns
        if columns is not None:
            return columns.with_records(flag)
        return iter(self.snapshot.records.items())

    def steps(self, ranks: Iterable[int]) -> set[int]:
        """The training steps of these ranks' records."""
        columns = self.snapshot.columns
        if columns is not None:
            return columns.steps(list(ranks))
        return {rec.step for r in ranks if (rec := self.record(r)) is not None and rec.step is not None}

    def any_completed(self, group: str, seq: int, live: tuple[str, ...] = ()) -> bool:
        """Some rank (whose liveness is one of ``live``, when given) completed ``seq`` of ``group``."""
        columns = self.snapshot.columns
        if columns is not None:
            import numpy as np

            among = None if not live else np.fromiter(
                (self.live.get(r) in live for r in range(columns.world_size)), dtype=bool, count=columns.world_size)
            return columns.any_completed(group, seq, among)
        return any(
            (not live or self.live.get(rank) in live) and (p := rec.groups.get(group)) is not None
            and p.completed >= seq
            for rank, rec in self.snapshot.records.items())

    def who(self, rank: int) -> str:
        rec = self.record(rank)
        if rec is None:
            return f"rank {rank}"
        return f"rank {rank} ({rec.where}, pid {rec.pid})"

    def hosts(self, ranks: Iterable[int]) -> tuple[str, ...]:
        """Where these ranks run, as messages write it (``host1 (node 1)``), in order, each once."""
        return self._machines(ranks, "where")

    def due(self, waited: float) -> None:
        """A wait now ``waited`` long will cross the suspicion, warning or confirmation threshold: look again
        then (at suspicion the late ranks' stacks are asked for, so that they are there by the warning)."""
        for threshold in (self.config.suspect_s, self.config.warn_s, self.config.confirm_s):
            if waited < threshold:
                at = self.snapshot.now + threshold - waited
                due = self.state.due_at
                self.state.due_at = at if due is None or at < due else due
                return

    def due_in(self, seconds: float) -> None:
        """Look again ``seconds`` from now (a bound other than the warning and confirmation thresholds)."""
        if seconds > 0:
            at = self.snapshot.now + seconds
            due = self.state.due_at
            self.state.due_at = at if due is None or at < due else due

    def nodes(self, ranks: Iterable[int]) -> tuple[str, ...]:
        """The bare host names of these ranks' machines, in order, each once."""
        return self._machines(ranks, "host")

    def _machines(self, ranks: Iterable[int], what: str) -> tuple[str, ...]:
        """``what`` (``where`` or ``host``) of each rank's record, from the columns' identity cache when there
        are columns."""
        columns = self.snapshot.columns
        out: dict[str, None] = {}
        for rank in ranks:
            if columns is not None:
                name = columns.where(rank) if what == "where" else columns.host(rank)
            else:
                rec = self.record(rank)
                name = None if rec is None else getattr(rec, what)
            if name:
                out.setdefault(name)
        return tuple(out)

    def pids(self, ranks: Iterable[int]) -> tuple[int, ...]:
        columns = self.snapshot.columns
        if columns is not None:  # every rank has a record
            return tuple(columns.pid(r) for r in ranks)
        return tuple(rec.pid for rec in (self.record(r) for r in ranks) if rec is not None)


def key(code: str, *parts: Any) -> str:
    """An incident's identity: the same across its warning, confirmed and resolved events."""
    return ":".join([code, *(str(p) for p in parts)])


def have(ranks: Iterable[int]) -> str:
    return "has" if len(list(ranks)) == 1 else "have"


def ranks_text(ranks: Iterable[int]) -> str:
    ordered = sorted(ranks)
    if not ordered:
        return "no rank"
    return ("rank " if len(ordered) == 1 else "ranks ") + format_ranks(ordered)


def who_list(ctx: Context, ranks: Iterable[int]) -> str:
    ordered = sorted(ranks)
    if len(ordered) > 4:
        return f"ranks {format_ranks(ordered)} (hosts {', '.join(ctx.hosts(ordered))})"
    return ", ".join(ctx.who(r) for r in ordered)
