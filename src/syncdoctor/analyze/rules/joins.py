"""Who and why, joined: a hypothesis that names the worker at fault from what others saw or a launcher recorded,
and the reading of the line that worker printed, which says why. Pure: no I/O.

Two rules often see one failure from two sides. **A launcher's record** (torchrun's ``failed (exitcode: 1)
local_rank: 3`` and its summary's table, srun's ``task 3: Exited with exit code 1``, mpirun's ``Process name:
[[43814,1],3] Exit code: 1``, DeepSpeed's ``exits with return code = 1``) closes most pasted failures; on its own it
says who (:mod:`.crash` and :mod:`.node` read it: "rank 3 died", a lead) but not why, and the line that says why
stands above it, printed without a rank (a node's console, a paste without prefixes). **The others' view** (their
timeouts waiting for rank 3, their connections to it closed: :mod:`.progress` and :mod:`.crash`, "rank 3 never
reached the collective", "rank 3 died; ranks 0-2 then failed waiting for it") names rank 3 surely, while rank 3's
own line (an Xid, a GPU's error, peer access refused, an IB port's error) is read by a rule that cannot see the
others. :func:`joined` makes each pair one hypothesis: the reading's category and words, the rank and host of the
other, the others' failures as its consequence, a little above both; the bare "who" just below it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import replace

from syncdoctor.analyze.model import Category, Event, Evidence, Hypothesis, Kind, Ref
from syncdoctor.analyze.rules.common import fmt_ranks
from syncdoctor.analyze.timeline import Timeline

__all__ = ["LAUNCHERS_REPORT", "OWN_FAILURE", "UNREAD", "WORDS_SAY", "abort_of_read_exception", "joined", "launcher_record",
           "lines_that_may_say_why"]

# readings that name no cause of the writer's own: a wait that others held up, a lost peer, a store or rendezvous
# that timed out waiting for others; the writer of such a line is a victim, and the rank at fault is not their
# culprit; nor a kill (a process killed, a scheduler ending the job: not what an exit code or a crash says), nor
# the bare "who" itself or an error no rule explains
_NOT_ITS_OWN = frozenset({
    Category.RANK_KILLED, Category.LAGGING_RANK, Category.COLLECTIVE_DESYNC, Category.RANK_NEVER_JOINED,
    Category.WATCHDOG_STUCK, Category.COLLECTIVE_STALLED, Category.UNEXPLAINED_TIMEOUT, Category.RENDEZVOUS_TIMEOUT,
    Category.NETWORK_PARTITION, Category.RANK_CRASHED, Category.UNRECOGNISED,
})
# of those, the readings that say the writer itself waited or failed with the others (not that it saw another
# rank lag or stay away: a straggler detector's report ends a job on purpose)
_VICTIMS = frozenset({Category.COLLECTIVE_DESYNC, Category.WATCHDOG_STUCK, Category.COLLECTIVE_STALLED,
                      Category.UNEXPLAINED_TIMEOUT, Category.RENDEZVOUS_TIMEOUT, Category.NETWORK_PARTITION})
# the hypotheses that name a rank from what the others saw: it never arrived, it was late, it died under them
_SEEN_BY_OTHERS = frozenset({Category.LAGGING_RANK, Category.RANK_NEVER_JOINED, Category.RANK_CRASHED})
# the events whose words no parser read (an error line, an exception's message, an NCCL WARN or error of no known
# form): the others' parsers read their format; these may be a worker's last words
UNREAD = frozenset({Kind.ERROR_LINE, Kind.EXCEPTION, Kind.NCCL_ERROR, Kind.NCCL_WARN})
# an error line that only holds the word somewhere (a message's advice, an INFO line's path), a traceback's first
# line, the launcher's own exception: no worker's last words
_WEAK_WORDS = ("error", "Traceback", "ChildFailedError")
# the lines of torchrun's failure summary, the launcher's own words (a paste may start inside its table)
_SUMMARYS = re.compile(r"Root Cause \(first observed failure\)|Structured Error Msg|^\s*(?:error_file|traceback)\s*:"
                       r"|^\s*\S+ FAILED\s*$|^\s*job aborted:\s*$"
                       # (Paddle's launcher on its pod and container: ``LAUNCH INFO … Pod failed``, ``Container failed !!!``)
                       r"|\bPod failed\s*$|\bContainer failed !!!")
OWN_FAILURE = "the rank's own failure"  # the note rules.crash gives a culprit's own line
LAUNCHERS_REPORT = "the launcher's report"  # and rules.node a launcher's record of a worker it saw die
WORDS_SAY = "says "  # the note rules.fallback gives the line whose words it read, before what they say


def launcher_record(tl: Timeline, crash: Hypothesis) -> Event | None:
    """The launcher's record of a worker's non-zero exit (no signal), when it is all a crash hypothesis of one place
    knows: every line it cites is such a record, or a line without a rank above one, in the same file, that
    rules.crash or rules.node took for the worker's own, and no other worker failed in that file. None for any
    other hypothesis."""
    if crash.category is not Category.RANK_CRASHED or len(crash.culprit_ranks) > 1 or len(crash.culprit_hosts) > 1:
        return None
    records = {e.ref: e for e in tl.of(Kind.WORKER_FAILED)
               if (e.data.get("exitcode") not in (0, None) and not e.data.get("signal")) or _uncaught_above(tl, e)}
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


def _uncaught_above(tl: Timeline, record: Event) -> bool:
    """A launcher's record of a worker killed by SIGABRT (mpirun's ``exited on signal 6 (Aborted)``, torchrun's
    ``exitcode: -6``) under the C++ runtime's ``terminate called after throwing …`` printed without a rank in the
    same file: the abort is that exception's end, and the lines below it (its ``what():``) say why, as an exit
    code's record does with the error above it."""
    starts = tl.uncaught_lines.get(record.ref.source, [])
    return record.data.get("signal") == "SIGABRT" and bool(starts) and starts[0] < record.ref.line


def abort_of_read_exception(tl: Timeline, signal: Event) -> bool:
    """A process's own report of its abort (``Fatal Python error: Aborted``, a signal whose name the paste mangled)
    under the C++ runtime's ``terminate called after throwing …`` in the same file, a line between them read as a
    failure of a known kind (gloo's size check in the exception's ``what():``): the abort is that exception's end,
    and that reading says why; no crash of its own."""
    if signal.data.get("signal") not in ("SIGABRT", None):
        return False
    starts = tl.uncaught_lines.get(signal.ref.source)
    if not starts or starts[0] >= signal.ref.line:
        return False
    # (the first such exception in the file: the processes' outputs interleave, its what() may come after another's)
    read = tl.reading_lines.get(signal.ref.source, [])
    at = bisect_left(read, starts[0])
    return at < len(read) and read[at] <= signal.ref.line


def lines_that_may_say_why(tl: Timeline, hypothesis: Hypothesis) -> Callable[[Event], bool] | None:
    """For a hypothesis that names its one culprit from a launcher's record, or from what the other ranks saw, with
    no line of the culprit's own that says why: which lines may (those above a record, printed without a rank:
    any; those of the rank the others name). None for any other hypothesis."""
    if launcher_record(tl, hypothesis) is not None:
        return lambda _event: True
    if len(hypothesis.culprit_ranks) != 1:
        return None
    rank = hypothesis.culprit_ranks[0]
    if hypothesis.category in (Category.LAGGING_RANK, Category.RANK_NEVER_JOINED):
        return lambda event: event.origin.rank == rank
    if hypothesis.category is Category.RANK_CRASHED:
        # a crash whose own line no parser read (an error line of no known format; not an exception, whose words
        # rules.crash reads itself): that it failed is sure, why is in its words
        own = {e.ref for e in hypothesis.evidence if e.note == OWN_FAILURE}
        kinds = {e.kind for e in tl.events if e.ref in own}
        if own and kinds <= UNREAD - {Kind.EXCEPTION}:
            return lambda event: event.origin.rank == rank
    return None


def joined(tl: Timeline, hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
    """Each hypothesis that names who (a launcher's record; the rank the others waited for or lost) with the reading
    of a cause in that worker's own line, as one hypothesis: the reading, with the rank and host, and the others'
    failures, a little above both. A reading that says the worker itself waited (a desync, a timeout), of a line
    above a launcher's record, is the verdict instead of the record, the worker among those affected."""
    out = list(hypotheses)
    apart = _worker_log_apart(tl)
    for who in hypotheses:
        if not who.root_cause:
            continue
        record = launcher_record(tl, who)
        if record is None and not (who.category in _SEEN_BY_OTHERS and len(who.culprit_ranks) == 1):
            continue
        own = {e.ref for e in who.evidence if e.note in (OWN_FAILURE, LAUNCHERS_REPORT)}

        # (a kill is no cause of an exit with a code; it is why a rank the others lost went away)
        causes = _NOT_ITS_OWN if record is not None else _NOT_ITS_OWN - {Category.RANK_KILLED}
        why = [h for h in out if h is not who and h.root_cause and (h.category not in causes or _worded(h, record))
               and h.evidence and _its_line(h.evidence[0], who, record, own, apart)
               and set(h.culprit_ranks) <= set(who.culprit_ranks)]
        if why:
            best = max(why, key=lambda h: h.confidence)
            together = _its_cause(best, who, record)
        elif record is not None:
            waited = [h for h in out if h is not who and h.root_cause and h.category in _VICTIMS and h.evidence
                      and _its_line(h.evidence[0], who, record, own)]  # (a wait apart may be another host's)
            if not waited:
                quoted = _its_last_words(tl, who, record, own, out)
                out = [quoted if h is who else h for h in out]
                continue
            best = max(waited, key=lambda h: h.confidence)
            together = replace(best, confidence=min(0.95, max(best.confidence, who.confidence) + 0.02),
                               affected_ranks=tuple(sorted({*best.affected_ranks, *who.culprit_ranks})))
        else:
            continue
        out = [together if h is best else replace(h, confidence=together.confidence - 0.05) if h is who else h
               for h in out]
    return out


def _worded(reading: Hypothesis, record: Event | None) -> bool:
    """A reading of the setup from an error line's own words (rules.fallback's: ``train.py: error: unrecognized
    arguments: --local-rank=0``, the configuration), above a launcher's record of an exit: what the worker died of,
    though no rule knows the line's format. An error no rule explains, quoted bare, is no such reading."""
    return record is not None and reading.category is Category.UNRECOGNISED \
        and reading.evidence[0].note.startswith(WORDS_SAY)


def _its_last_words(tl: Timeline, who: Hypothesis, record: Event, own: set[Ref],
                    hypotheses: Sequence[Hypothesis]) -> Hypothesis:
    """A launcher's record that no reading explains, with the first error line above it in the same file that no
    other hypothesis cites (printed without a rank, or with the record's): what the worker most likely died of, in
    its own words; the record's hypothesis as it was where there is none."""
    cited = {e.ref for h in hypotheses if h is not who for e in h.evidence}
    # (above the launcher's first record in that file: its own report, a summary's table, follows it)
    end = min(e.ref.line for e in tl.of(Kind.WORKER_FAILED) if e.ref.source == record.ref.source)
    lines = [e for e in tl.events if e.kind in UNREAD and e.ref.source == record.ref.source and e.ref.line < end
             and e.ref not in cited and e.ref not in own and e.data.get("word") not in _WEAK_WORDS
             and not _SUMMARYS.search(e.text)
             and (e.origin.rank is None or (e.origin.rank,) == who.culprit_ranks)
             and _same_host(e.origin.host, who.culprit_hosts)]
    if not lines:
        return who
    first = lines[0]
    return replace(who, title=f"{who.title}; the error above the launcher's record, most likely its own: "
                              f"{first.text.strip()[:140]}",
                   what=(f"{who.what} Above the launcher's record, without a rank, stands an error no rule reads: "
                         "most likely the worker's own (its output, or its log file, says more).").strip(),
                   evidence=(*who.evidence, Evidence(first.ref, first.text, "the error above the launcher's record",
                                                     first.origin.rank, first.origin.host)))


def _worker_log_apart(tl: Timeline) -> frozenset[str]:
    """The inputs that may hold the worker's own output apart from its launcher's console: where the launchers'
    records in all the inputs name one worker, each input without a record (``workerlog.0`` beside the console of
    Paddle's launcher, which says only that container rank 0 failed); none where they name several."""
    records = tl.of(Kind.WORKER_FAILED)
    workers = {(e.origin.rank, e.origin.local_rank, e.origin.host, e.origin.pid) for e in records}
    if len(workers) != 1:
        return frozenset()
    with_records = {e.ref.source for e in records}
    return frozenset({e.ref.source for e in tl.events} - with_records)


def _its_line(line: Evidence, who: Hypothesis, record: Event | None, own: set[Ref],
              apart: frozenset[str] = frozenset()) -> bool:
    """Whether ``line`` is the worker's own that ``who`` names: above its launcher's record in the same file, without
    another rank or host (not the record itself), or in an input of its own beside the launcher's (``apart``) that
    names no rank but the worker's and no host; a crash's own line (its exception); any line of a rank the others
    waited for."""
    if record is not None:
        if line.ref.source in apart:
            return (line.rank is None or (line.rank,) == who.culprit_ranks) and line.host is None
        return line.ref != record.ref and (line.ref in own or (
            line.ref.source == record.ref.source and line.ref.line < record.ref.line
            and (line.rank is None or (line.rank,) == who.culprit_ranks) and _same_host(line.host, who.culprit_hosts)))
    if who.category is Category.RANK_CRASHED:
        return line.ref in own
    return line.rank == who.culprit_ranks[0]


def _its_cause(reading: Hypothesis, who: Hypothesis, record: Event | None) -> Hypothesis:
    """The reading of the worker's line, with the place the other hypothesis names and the others it took down."""
    where = _place(who)
    affected = tuple(sorted(set(who.affected_ranks) | set(reading.affected_ranks)))
    if record is not None:
        code = record.data.get("exitcode")
        # (a record with a signal is an abort under an uncaught exception: _uncaught_above)
        how = f"aborted ({record.data['signal']}, exit code {code})" if record.data.get("signal") else \
            f"exited with code {code}"
        title = f"{reading.title} ({where}, which then {how})"
        said = (f" The launcher's record below it says {where} {how}: the line is that worker's, "
                "printed without its rank, and the others' failures follow from it.")
    else:
        title = reading.title if where in reading.title else f"{reading.title} ({where})"
        said = f" The other ranks' failures name {where} as the one they waited for or lost: this is why."
    if affected and record is None:
        title += f"; ranks {fmt_ranks(affected)} then failed waiting for it or lost it"
    evidence = list(reading.evidence)
    if record is not None:
        evidence.append(Evidence(record.ref, record.text, "the launcher's record of its exit", record.origin.rank,
                                 record.origin.host))
    else:
        seen = {e.ref for e in evidence}
        evidence += [e for e in who.evidence if e.ref not in seen][:4]
    return replace(
        reading,
        confidence=min(0.95, max(reading.confidence, who.confidence) + 0.02),
        title=title,
        culprit_ranks=who.culprit_ranks,
        culprit_hosts=reading.culprit_hosts or who.culprit_hosts,
        culprit_processes=reading.culprit_processes or who.culprit_processes,
        culprit_local_ranks=reading.culprit_local_ranks or who.culprit_local_ranks,
        affected_ranks=affected,
        what=(reading.what + said).strip(),
        evidence=tuple(evidence),
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


def _place(who: Hypothesis) -> str:
    rank = f"rank {who.culprit_ranks[0]}" if who.culprit_ranks else ""
    process = who.culprit_processes[0] if who.culprit_processes else ""
    host = who.culprit_hosts[0] if who.culprit_hosts else ""
    name = rank or process or "a worker"
    return f"{name} on {host}" if host and host not in name else name
