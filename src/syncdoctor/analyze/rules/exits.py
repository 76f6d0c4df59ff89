"""A launcher's record of a worker's exit, joined to the reading of the error that worker printed. Pure: no I/O.

torchrun's summary (``failed (exitcode: 1) local_rank: 3 … rank : 3 (local_rank: 3) … host : node-3``), srun's
``task 3: Exited with exit code 1`` and their likes close most pasted failures. On its own such a record says who
(:mod:`.crash` reads it: "rank 3 died", a lead at 0.55) but not why. When the line that says why stands above it,
printed without a rank (a node's console, a paste without prefixes), another rule reads that line: a GPU's fault,
a port in use, memory the NIC could not register, a node's health check. The two are one failure: the record names
the rank and host, the line its cause. :func:`explained_exits` makes them one hypothesis, the reading's category
with the record's rank, above the bare record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from syncdoctor.analyze.model import Category, Event, Evidence, Hypothesis, Kind, Ref
from syncdoctor.analyze.timeline import Timeline

__all__ = ["explained_exits", "launcher_record"]

# readings that name no cause of the writer's own: a wait that others held up, a lost peer, a store or rendezvous
# that timed out waiting for others; the writer of such a line is a victim, and the record's rank is not their culprit
_NOT_ITS_OWN = frozenset({
    Category.RANK_KILLED,  # (a process killed, or the scheduler ending the job: not what an exit code says)
    Category.LAGGING_RANK, Category.COLLECTIVE_DESYNC, Category.RANK_NEVER_JOINED, Category.WATCHDOG_STUCK,
    Category.COLLECTIVE_STALLED, Category.UNEXPLAINED_TIMEOUT, Category.RENDEZVOUS_TIMEOUT,
    Category.NETWORK_PARTITION, Category.RANK_CRASHED, Category.UNRECOGNISED,
})
# of those, the readings that say the writer itself waited or failed with the others (not that it saw another
# rank lag or stay away: a straggler detector's report ends a job on purpose)
_VICTIMS = frozenset({Category.COLLECTIVE_DESYNC, Category.WATCHDOG_STUCK, Category.COLLECTIVE_STALLED,
                      Category.UNEXPLAINED_TIMEOUT, Category.RENDEZVOUS_TIMEOUT, Category.NETWORK_PARTITION})
OWN_FAILURE = "the rank's own failure"  # the note rules.crash gives a culprit's own line
LAUNCHERS_REPORT = "the launcher's report"  # and rules.node a launcher's record of a worker it saw die


def launcher_record(tl: Timeline, crash: Hypothesis) -> Event | None:
    """The launcher's record of a worker's non-zero exit (no signal), when it is all a crash hypothesis of one place
    knows: every line it cites is such a record, or a line without a rank above one, in the same file, that
    rules.crash or rules.node took for the worker's own. None for any other hypothesis."""
    if crash.category is not Category.RANK_CRASHED or len(crash.culprit_ranks) > 1 or len(crash.culprit_hosts) > 1:
        return None
    records = {e.ref: e for e in tl.of(Kind.WORKER_FAILED)
               if e.data.get("exitcode") not in (0, None) and not e.data.get("signal")}
    cited = [e for e in crash.evidence if e.note in (OWN_FAILURE, LAUNCHERS_REPORT)]
    found = [records[e.ref] for e in cited if e.ref in records] or \
        [e for r in crash.culprit_ranks if r in tl.ranks for e in tl.ranks[r].of(Kind.WORKER_FAILED) if e.ref in records]
    if not found:
        return None
    record = found[0]
    if any(_other_worker(record, e) for e in tl.of(Kind.WORKER_FAILED) if e.ref.source == record.ref.source and
           (e.data.get("exitcode") not in (0, None) or e.data.get("unknown_exit")) and
           e.data.get("signal") not in ("SIGTERM", "SIGKILL")):
        return None  # (two workers failed in that file: whose the line above is, is not known)
    if all(e.ref in records or (e.rank is None and e.ref.source == record.ref.source and e.ref.line < record.ref.line)
           for e in cited):
        return record
    return None


def explained_exits(tl: Timeline, hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
    """Each crash hypothesis that only a launcher's record makes, with a reading of a cause whose first line stands
    above that record, in the same file, without a rank or with the record's: the reading, with the record's rank
    and host, a little above the record's own confidence; the bare record just below it."""
    out = list(hypotheses)
    for crash in hypotheses:
        record = launcher_record(tl, crash)
        if record is None:
            continue
        own = {e.ref for e in crash.evidence if e.note in (OWN_FAILURE, LAUNCHERS_REPORT)}

        def above(line: Evidence, record: Event = record, crash: Hypothesis = crash, own: set[Ref] = own) -> bool:
            return line.ref in own or (line.ref.source == record.ref.source and line.ref.line < record.ref.line
                                       and (line.rank is None or (line.rank,) == crash.culprit_ranks)
                                       and _same_host(line.host, crash.culprit_hosts))

        why = [h for h in out if h is not crash and h.root_cause and h.category not in _NOT_ITS_OWN and h.evidence
               and above(h.evidence[0]) and set(h.culprit_ranks) <= set(crash.culprit_ranks)]
        if why:
            best = max(why, key=lambda h: h.confidence)
            joined = _its_cause(best, crash, record)
        else:
            # the line is read by another rule as a victim's (a wait the others held up, a collective they called
            # otherwise): that reading, the worker among those it affected
            waited = [h for h in out if h is not crash and h.root_cause and h.category in _VICTIMS and h.evidence
                      and above(h.evidence[0]) and h.evidence[0].ref != record.ref]
            if not waited:
                continue
            best = max(waited, key=lambda h: h.confidence)
            joined = replace(best, confidence=min(0.95, max(best.confidence, crash.confidence) + 0.02),
                             affected_ranks=tuple(sorted({*best.affected_ranks, *crash.culprit_ranks})))
        out = [joined if h is best else replace(h, confidence=joined.confidence - 0.05) if h is crash else h
               for h in out]
    return out


def _its_cause(reading: Hypothesis, crash: Hypothesis, record: Event) -> Hypothesis:
    """The reading of the line above a launcher's record, with the record's place (rank, host, process)."""
    where = _place(crash)
    code = record.data.get("exitcode")
    return replace(
        reading,
        confidence=min(0.95, max(reading.confidence, crash.confidence) + 0.02),
        title=f"{reading.title} ({where}, which then exited with code {code})",
        culprit_ranks=crash.culprit_ranks,
        culprit_hosts=reading.culprit_hosts or crash.culprit_hosts,
        culprit_processes=reading.culprit_processes or crash.culprit_processes,
        culprit_local_ranks=reading.culprit_local_ranks or crash.culprit_local_ranks,
        what=(f"{reading.what} The launcher's record below it says {where} exited with code {code}: the line is "
              "that worker's, printed without its rank, and the others' failures follow from it.").strip(),
        evidence=(*reading.evidence, Evidence(record.ref, record.text, "the launcher's record of its exit",
                                              record.origin.rank, record.origin.host)),
    )


def _other_worker(a: Event, b: Event) -> bool:
    """Two launchers' records of different workers: a rank, local rank, host or pid that both name and that differ
    (torchrun's one-line record and its summary's table are one worker's)."""
    x, y = a.origin, b.origin
    return any(p is not None and q is not None and p != q for p, q in (
        (x.rank, y.rank), (x.local_rank, y.local_rank), (x.pid, y.pid),
        (x.host and x.host.split(".")[0], y.host and y.host.split(".")[0])))


def _same_host(host: str | None, hosts: tuple[str, ...]) -> bool:
    """A line's host is the record's, or either is not known (``node-3`` and ``node-3.cluster.local`` are one)."""
    return host is None or not hosts or any(host.split(".")[0] == h.split(".")[0] for h in hosts)


def _place(crash: Hypothesis) -> str:
    rank = f"rank {crash.culprit_ranks[0]}" if crash.culprit_ranks else ""
    process = crash.culprit_processes[0] if crash.culprit_processes else ""
    host = crash.culprit_hosts[0] if crash.culprit_hosts else ""
    who = rank or process or "a worker"
    return f"{who} on {host}" if host and host not in who else who
