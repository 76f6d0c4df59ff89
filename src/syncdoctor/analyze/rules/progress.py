"""Which rank never reached the collective the others timed out in. Pure: no I/O.

Evidence, strongest first: a desync report or monitored_barrier naming the ranks; the wait-for graph of
the Flight Recorder dumps and the logs (:mod:`syncdoctor.analyze.chains`: the root of the waiting, with the
chain of ranks that waited for it through other groups and send/recv); sequence numbers (watchdog
timeouts, ``last enqueued`` status lines, Flight Recorder ``pg_status``) where some ranks are behind; watch
or RAS events naming ranks; and, when logs carry no sequence numbers (gloo), the ranks that show no error
at all while the others timed out waiting. A rank the inputs show waiting itself (in another group, or in a
send or receive) is never named late: in a tensor x data parallel job the data-parallel peers of a rank
that waits in its tensor-parallel group are behind in their group, but it is not the culprit.
"""

from __future__ import annotations

from collections import defaultdict

from syncdoctor.analyze.chains import Chains, chains, where_waited
from syncdoctor.analyze.fr_compare import compare_progress
from syncdoctor.analyze.model import Category, Event, Hypothesis, Kind
from syncdoctor.analyze.rules.common import (
    LOOPBACK_STORE,
    MAX_CASCADE,
    evidence_of,
    fmt_ranks,
    hypothesis,
    is_aftermath,
    look_at,
)
from syncdoctor.analyze.rules.desync import diverged_groups
from syncdoctor.analyze.rules.node import watchdog_abort
from syncdoctor.analyze.rules.partial import (
    bar_words,
    busy_bar,
    busy_phase,
    first_barrier_sources,
    from_exit_barrier,
    from_horovod,
    from_rankless,
    from_runs_first,
    from_stacks,
    ras_all_launched,
)
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, RankState, Timeline
from syncdoctor.watch.waitgraph import describe_chain

__all__ = ["lagging_rank", "rank_never_joined"]

_CRASHED = ("crashed", "killed")


def _timed_out(tl: Timeline) -> list[int]:
    return [rank for rank, state in tl.ranks.items() if state.has(*TIMEOUT_KINDS)]


def _inside(tl: Timeline) -> set[int]:
    """Ranks the inputs show inside the collective the others timed out in, although they wrote no timeout:
    their ``last enqueued`` (a dump-signal or status line) reached the sequence number another rank timed out
    at in that group, the watchdog's failure status puts them inside a work they had not completed, their own or
    another rank's dump signal names them as the rank whose collective timed out, or a desync report lists them
    as joined."""
    top: dict[str, int] = {}
    for rank in _timed_out(tl):
        for event in tl.ranks[rank].of(*TIMEOUT_KINDS):
            if event.seq is not None:
                group = event.group or "0"
                top[group] = min(top.get(group, event.seq), event.seq)
    inside = {rank for rank, state in tl.ranks.items()
              if any(state.reached.get(group, -1) >= seq for group, seq in top.items())}
    for event in tl.of(Kind.WORK_STATUS):  # the watchdog's failure status: stuck inside that work, not elsewhere
        done = event.data.get("last_completed")
        if event.origin.rank is not None and event.seq is not None and isinstance(done, int) and done < event.seq:
            inside.add(event.origin.rank)
    for event in tl.of(Kind.DUMP_SIGNAL):
        source = event.data.get("from_rank")
        timeout = "timeout" in str(event.data.get("reason", ""))
        if isinstance(source, int) and source != event.origin.rank and timeout:
            inside.add(source)
        elif event.data.get("self") and timeout and event.origin.rank is not None:
            inside.add(event.origin.rank)  # its own collective timed out (in a group the line may not name)
    for event in tl.of(Kind.DESYNC_REPORT):  # the report's "joined but didn't finish": inside, not late
        inside.update(int(r) for r in event.data.get("joined_not_finished") or [])
    for event in tl.of(Kind.ERROR_LINE):  # its own watchdog caught a failed or timed-out collective: waiting too
        if event.origin.rank is not None and is_aftermath(event):
            inside.add(event.origin.rank)
    return inside


def _timeout_lines(tl: Timeline, ranks: list[int]) -> list[Event]:
    lines = []
    for rank in ranks:
        found = tl.ranks[rank].of(*TIMEOUT_KINDS)
        if found:
            lines.append(found[0])
    return lines


def _waits_inside(state: RankState, group: str) -> bool:
    """The rank entered its last collective of ``group`` and that one had not completed (its status says so, or
    its own watchdog timed out in it): it was waiting."""
    reached = state.reached.get(group, -1)
    done = state.completed.get(group)
    if done is not None:
        return done < reached
    return any(e.seq == reached and (e.group or "0") == group for e in state.of(*TIMEOUT_KINDS))


def _from_sequences(tl: Timeline) -> list[Hypothesis]:
    reached: dict[str, dict[int, int]] = defaultdict(dict)
    proof: dict[tuple[str, int], Event] = {}
    for rank, state in tl.ranks.items():
        for group, seq in state.reached.items():
            reached[group][rank] = seq
        for event in state.events:
            if event.kind in (Kind.WORK_STATUS, Kind.DUMP_SIGNAL, Kind.FR_STATUS, Kind.WATCHDOG_TIMEOUT,
                              Kind.BLOCKING_WAIT_TIMEOUT):
                proof.setdefault((event.group or "0", rank), event)
    out = []
    diverged = diverged_groups(tl)
    for group, per_rank in sorted(reached.items()):
        if len(per_rank) < 2:
            continue
        if group in diverged and len(diverged[group]) == len(per_rank):
            continue  # every rank waits inside its own collective of the group: a desync (desync.py), none is late
        top = max(per_rank.values())
        behind = sorted(r for r, seq in per_rank.items() if seq < top and tl.ranks[r].outcome not in _CRASHED)
        waiting = sorted(r for r, seq in per_rank.items() if seq == top)
        if not behind or len(behind) >= len(per_rank):
            continue
        if all(_waits_inside(tl.ranks[r], group) for r in behind):
            # the ranks behind wait inside collectives of their own, which the others passed: they numbered other
            # calls (a desync) or, outside the default group, the same id names another group on them; either
            # way they did not stop on their own, so none is named late here
            continue
        last = {r: per_rank[r] for r in behind}
        detail = ", ".join(f"rank {r} last entered #{s}" for r, s in sorted(last.items()))
        title = (f"rank{'s' if len(behind) > 1 else ''} {fmt_ranks(behind)} never reached collective #{top} of "
                 f"group {group}; ranks {fmt_ranks(waiting)} waited for {'them' if len(behind) > 1 else 'it'}")
        what = (f"Ranks {fmt_ranks(waiting)} entered collective #{top} and timed out there; {detail}. The timeouts "
                "on the waiting ranks are symptoms: the culprit is the rank that did not arrive.")
        evidence = evidence_of([proof[(group, r)] for r in behind if (group, r) in proof], "how far the culprit got")
        evidence += evidence_of([proof[(group, r)] for r in waiting if (group, r) in proof],
                                f"waiting in #{top}", MAX_CASCADE)
        out.append(hypothesis(tl, Category.LAGGING_RANK, 0.9, title, culprits=behind, affected=waiting,
                              what=what, fix=look_at(tl, behind), evidence=evidence))
    return out


def _from_fr_trace(tl: Timeline, event: Event) -> list[Hypothesis]:
    """The Flight Recorder analyser's findings (``torchfrtrace``): the ranks missing from a collective the others
    joined (late, A001), or the ranks it names culprits of a mismatch (another collective, size or state, A002)."""
    collective = f"collective #{event.seq}" if event.seq is not None else "a collective"
    op = f" ({event.op})" if event.op else ""
    group = f" of group {event.data['group']}" if event.data.get("group") else ""
    evidence = evidence_of([event], "the Flight Recorder analyser's report")
    missing = [int(r) for r in event.data.get("not_joined") or []]
    if missing:
        world = event.data.get("world")
        joined = [r for r in range(int(world)) if r not in missing] if isinstance(world, int) and world <= 4096 else []
        title = (f"rank{'s' if len(missing) > 1 else ''} {fmt_ranks(missing)} never joined {collective}{op}{group}, "
                 "as PyTorch's Flight Recorder analyser found")
        what = ("The analyser matched the ranks' Flight Recorder dumps: the other ranks scheduled this collective and "
                "these never did. They were elsewhere (a step of their own, a data loader, a save) or had failed; "
                "their own logs or stacks say which.")
        seen = [r for r in missing if r in tl.ranks]
        return [hypothesis(tl, Category.LAGGING_RANK, 0.9, title, culprits=missing, affected=joined, what=what,
                           fix=look_at(tl, seen) if seen else None, evidence=evidence)]
    mismatch = [(int(m["rank"]), str(m["error"])) for m in event.data.get("mismatch") or []]
    if not mismatch:
        return []
    ranks = sorted({rank for rank, _ in mismatch})
    errors = ", ".join(sorted({error.lower().replace("_", " ") for _, error in mismatch}))
    title = (f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} ran {collective}{op} unlike the others "
             f"({errors}), as PyTorch's Flight Recorder analyser found")
    what = ("The analyser matched the ranks' Flight Recorder dumps and found these ranks' entry at that sequence "
            "number different from the others': another collective, other sizes or dtypes, or another state. The "
            "ranks took different code paths (a condition on the rank or on local data).")
    return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.8, title, culprits=ranks, what=what, evidence=evidence)]


# a process's own crash (a watchdog that gives up after a timeout aborts: SIGABRT is no sign of the laggard)
_CRASH_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE")


def _its_crash(tl: Timeline, culprits: list[int]) -> list[Event]:
    """A fatal signal whose line names no rank, where the report names one rank that never joined and no rank's
    own line shows a crash: the laggard's, most likely."""
    if len(culprits) != 1 or any(e.kind is Kind.FATAL_SIGNAL for state in tl.ranks.values() for e in state.events):
        return []
    return [e for e in tl.unattributed if e.kind is Kind.FATAL_SIGNAL and e.data.get("signal") in _CRASH_SIGNALS]


def _from_reports(tl: Timeline) -> list[Hypothesis]:
    out = []
    reports = tl.of(Kind.DESYNC_REPORT)
    headed = {(e.seq, tuple(e.data.get("not_joined") or ())) for e in reports if e.data.get("source") is None}
    for event in reports:
        if event.data.get("source") == "fr_trace":
            out += _from_fr_trace(tl, event)
            continue
        culprits = list(event.data.get("lagging") or []) + list(event.data.get("not_joined") or [])
        if not culprits or (event.data.get("source") == "finding"
                            and (event.seq, tuple(event.data.get("not_joined") or ())) in headed):
            continue
        of = f" of rank {event.data.get('reporter')}" if event.data.get("reporter") is not None else ""
        title = (f"desync report{of}: rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} never joined "
                 f"collective #{event.seq}{f' ({event.op})' if event.op else ''}")
        if event.data.get("source") == "ray-train":  # Ray Train's barrier of its workers (no sequence number)
            title = (f"Ray Train: rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} never reached "
                     f"{f'the `{event.op}` call' if event.op else 'the collective'} the other workers wait in")
        crashed = _its_crash(tl, culprits)
        if crashed:
            signal = crashed[0].data.get("signal")
            title += f", and a process died of {signal}: most likely rank {culprits[0]}, which stopped there"
            out.append(hypothesis(
                tl, Category.RANK_CRASHED, 0.9, title, culprits=culprits,
                affected=list(event.data.get("joined_not_finished") or []),
                what=(f"PyTorch's desync report names rank {culprits[0]} as the one that never joined, and a "
                      f"process of the job died of {signal}, its line naming no rank. A rank that reports the "
                      "timeout is alive; the one that stopped between two collectives is the one a crash stops: "
                      f"rank {culprits[0]} crashed, and the others waited for it until their timeout."),
                fix=("Read the crashed process's native stack (the lines after its signal, or a core dump: "
                     "ulimit -c unlimited) and the versions of the library it died in."),
                evidence=evidence_of(crashed[:2], "a process died of a fatal signal")
                + evidence_of([event], "TORCH_NCCL_DESYNC_DEBUG report")))
            continue
        out.append(hypothesis(tl, Category.LAGGING_RANK, 0.95, title, culprits=culprits,
                              affected=list(event.data.get("joined_not_finished") or []),
                              what="PyTorch's desync debug report names the lagging ranks directly.",
                              evidence=evidence_of([event], "TORCH_NCCL_DESYNC_DEBUG report")))
    barrier = tl.of(Kind.MONITORED_BARRIER)
    # "Rank N successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank
    # 0": rank 0 (which gathers the barrier) never answered. Any exception of that wait says it: rank 0 failed,
    # or found another rank missing and left (its log names it), or is late (the wait ran into the group's
    # timeout while rank 0 was still elsewhere, preprocessing or saving). Late is what the field pastes most.
    unanswered: dict[int, list[Event]] = defaultdict(list)
    for event in barrier:
        if event.data.get("role") == "victim" and event.data.get("errors_from") is not None:
            unanswered[int(event.data["errors_from"])].append(event)
    if unanswered and not any(e.data.get("role") == "detector" and e.data.get("failed_ranks") for e in barrier):
        culprits = sorted(unanswered)
        victims = sorted({e.origin.rank for events in unanswered.values() for e in events
                          if e.origin.rank is not None})
        title = (f"rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} never answered monitored_barrier: "
                 f"{'ranks' if len(victims) > 1 else 'rank'} {fmt_ranks(victims)} reached it and "
                 f"{'were' if len(victims) > 1 else 'was'} left waiting")
        out.append(hypothesis(
            tl, Category.LAGGING_RANK, 0.45, title, culprits=culprits, affected=victims,
            what=("monitored_barrier's other ranks wait for rank 0's answer; any error of that wait is reported so, a "
                  "timeout included. Rank 0 was late (still working elsewhere: preprocessing, a checkpoint), "
                  "failed, or found another rank missing and left; its own log says which, and names the rank."),
            fix=("Read rank 0's log around that time. If it was preprocessing or saving, do that before the "
                 "barrier on every rank, or raise the process group's timeout."),
            evidence=evidence_of([e for events in unanswered.values() for e in events], "monitored_barrier")))
    for event in barrier:
        failed = list(event.data.get("failed_ranks") or [])
        if event.data.get("role") != "detector" or not failed:
            continue
        title = (f"rank{'s' if len(failed) > 1 else ''} {fmt_ranks(failed)} failed to reach monitored_barrier in "
                 f"{event.data.get('ms')} ms")
        out.append(hypothesis(tl, Category.LAGGING_RANK, 0.85, title, culprits=failed,
                              what="monitored_barrier on rank 0 names the ranks that did not arrive in time.",
                              evidence=evidence_of([event], "monitored_barrier")))
    return out


def _from_fr(tl: Timeline) -> list[Hypothesis]:
    out = []
    for progress in compare_progress(tl.dumps):
        behind = [r for r in progress.behind if r in tl.ranks and tl.ranks[r].outcome not in _CRASHED]
        if not behind or len(behind) >= len(progress.enqueued):
            continue
        top = progress.top
        waiting = sorted(r for r, s in progress.enqueued.items() if s == top)
        title = (f"rank{'s' if len(behind) > 1 else ''} {fmt_ranks(behind)} never entered collective #{top} of "
                 f"group {progress.pg_id} (Flight Recorder); ranks {fmt_ranks(waiting)} did")
        what = ("Flight Recorder status: " + ", ".join(f"rank {r} last enqueued #{progress.enqueued[r]}"
                                                       for r in sorted(progress.enqueued)) + ".")
        if progress.missing_dumps:
            what += f" No dump from ranks {fmt_ranks(progress.missing_dumps)}."
        evidence = [e for e in tl.of(Kind.FR_STATUS) if e.origin.rank in behind and e.group == progress.pg_id]
        evidence += [e for e in tl.of(Kind.FR_STATUS) if e.origin.rank in waiting and e.group == progress.pg_id]
        out.append(hypothesis(tl, Category.LAGGING_RANK, 0.9, title, culprits=behind, affected=waiting, what=what,
                              evidence=evidence_of(evidence, "Flight Recorder pg_status", MAX_CASCADE + 4)))
    return out


def _raised(state: RankState) -> bool:
    """The rank began a traceback that the paste cut before its exception: it failed, how is not shown (the
    same timeout as the others, as often as not), so it is no quiet rank."""
    return any(e.data.get("word") == "Traceback" for e in state.of(Kind.ERROR_LINE))


def _aborted(state: RankState) -> bool:
    """The rank's process aborted its NCCL communicator (``… rank 11 nranks 16 … - Abort COMPLETE``), as PyTorch
    does after a timeout or an error of its own: its timeout line may be cut or interleaved away, but it is no quiet
    rank."""
    return any(e.data.get("aborted") for e in state.of(Kind.NCCL_INIT_START))


def _from_silence(tl: Timeline, claimed: set[int]) -> list[Hypothesis]:
    timed_out = _timed_out(tl)
    if not timed_out:
        return []
    inside = _inside(tl)
    # (a rank whose own exit was PyTorch's abort after a timeout in that output timed out too: it is no quiet one)
    silent = sorted(rank for rank, state in tl.ranks.items()
                    if state.outcome in ("silent", "terminated") and state.logged and rank not in claimed
                    and rank not in inside and not _raised(state) and not _aborted(state)
                    and not any(watchdog_abort(tl, e) for e in state.of(Kind.WORKER_FAILED)))
    if not silent or len(silent) >= len(tl.ranks):
        return []
    stopped = [r for r in silent if tl.ranks[r].outcome == "terminated"]
    confidence = 0.8 if len(silent) <= max(1, len(timed_out) // 2) else 0.55
    if len(silent) > len(timed_out):
        confidence = 0.4  # more quiet ranks than failing ones: more likely logs are missing
    # (a rank the launcher stopped afterwards logged its end: the cut took no line of its that says otherwise)
    cut = None if stopped else _cut_after_timeouts(tl, timed_out)
    if cut is not None:
        confidence = min(confidence, 0.25)  # the quiet rank's own timeout may be the line the paste cut (A019 first)
    unseen = tl.unseen(tl.world_size or 0)
    if 2 * len(unseen) > (tl.world_size or 0):
        # most of the job's ranks (below the highest seen) are not in the inputs: a quiet one among the few that are
        # says little, the others' timeouts may be what the paste left out (A019 first)
        confidence = min(confidence, 0.25)
    evidence = []
    for rank in silent:
        evidence += evidence_of(tl.ranks[rank].of(Kind.WORKER_FAILED, Kind.WORKER_TERMINATED)[:1],
                                "no error of its own; stopped by the launcher")
    evidence += evidence_of(_timeout_lines(tl, timed_out), "timed out waiting", MAX_CASCADE)
    if cut is not None:
        evidence += evidence_of([cut], "the paste stops inside this line")
    title = (f"rank{'s' if len(silent) > 1 else ''} {fmt_ranks(silent)} never reached the collective: "
             f"rank{'s' if len(timed_out) > 1 else ''} {fmt_ranks(timed_out)} timed out waiting")
    what = (f"Rank{'s' if len(timed_out) > 1 else ''} {fmt_ranks(timed_out)} timed out in a collective while rank{'s' if len(silent) > 1 else ''} "
            f"{fmt_ranks(silent)} logged no error at all")
    what += (f" and {'were' if len(stopped) > 1 else 'was'} stopped by the launcher afterwards" if stopped else "")
    what += ": a rank that is late, hung or frozen never enters the collective, so it never times out itself."
    if not any(e.seq is not None for r in timed_out for e in tl.ranks[r].of(*TIMEOUT_KINDS)):
        what += " These logs carry no sequence numbers (gloo), so the verdict rests on who stayed quiet."
    else:
        what += " No line of its own says where it was, so the verdict rests on who stayed quiet."
    if cut is not None:
        what += (f" But the paste stops in the middle of a line right after their timeouts ({cut.ref}: “{cut.text}”): "
                 "the quiet rank's own timeout may be the line it cut, so its silence says little.")
    places: dict[str, list[int]] = defaultdict(list)
    for rank in timed_out:
        places[where_waited(tl, rank) or "a collective"].append(rank)
    if len(places) > 1:  # several groups or calls: those in the minority wait for the silent rank through others
        what += " Where each rank waited: " + "; ".join(
            f"rank{'s' if len(r) > 1 else ''} {fmt_ranks(r)} in {place}"
            for place, r in sorted(places.items(), key=lambda item: -len(item[1]))) + "."
    return [hypothesis(tl, Category.LAGGING_RANK, confidence, title, culprits=silent, affected=timed_out, what=what,
                       fix=look_at(tl, silent), evidence=evidence)]


def _cut_after_timeouts(tl: Timeline, timed_out: list[int]) -> Event | None:
    """The end of an input that the paste cut inside a line (textlog's ``paste_cut``) where nothing after the waiting
    ranks' last timeout line in it comes from another rank: the lines the cut took off may hold a quiet rank's own
    timeout, which the waiting ranks' lines would have been followed by."""
    waiting = set(timed_out)
    for cut in tl.of(Kind.PASTE_CUT):
        source = cut.ref.source
        lines = [e.ref.line for r in timed_out for e in tl.ranks[r].of(*TIMEOUT_KINDS) if e.ref.source == source]
        if not lines:
            continue
        last = max(lines)
        if not any(e.ref.source == source and last < e.ref.line < cut.ref.line and e.origin.rank not in waiting
                   for e in tl.events):
            return cut
    return None


_REMOTE_WORDS = ("remote process exited", "ncclRemoteError", "remote error", "Connection closed by", "reset by peer",
                 "Broken pipe")


def _lost_peer(state: RankState) -> list[Event]:
    """The peer-lost errors of a rank whose failures are only that: no timeout, no error of its own."""
    if state.outcome not in ("lost-peer", "failed") or state.has(*TIMEOUT_KINDS):
        return []
    lost = [e for e in state.events if e.kind is Kind.PEER_CLOSED or
            (e.kind in (Kind.NCCL_ERROR, Kind.EXCEPTION) and any(w in e.text for w in _REMOTE_WORDS))]
    return lost


def _from_late_arrival(tl: Timeline, claimed: set[int]) -> list[Hypothesis]:
    """A rank that arrived after the others had timed out and left: its only error is a closed (or reset)
    connection, to a peer that timed out. It is the late one, not a victim: the ranks that waited for it
    were alive until their timeout, so nothing but their leaving could have closed its connections."""
    timed_out = _timed_out(tl)
    if not timed_out:
        return []
    timeout_hosts = {tl.rank_host(r) for r in timed_out} - {None}
    by_addr = {addr: host for host, addrs in tl.host_addrs.items() for addr in addrs}
    late: dict[int, list[Event]] = {}
    named_peer = False
    for rank, state in sorted(tl.ranks.items()):
        if rank in claimed:
            continue
        lost = _lost_peer(state)
        if not lost:
            continue
        peers = {by_addr.get(str(e.data.get("peer_addr") or "")) for e in lost if e.data.get("peer_addr")} - {None}
        if peers and not peers & timeout_hosts:
            continue  # it lost a peer that did not time out: that peer's own story (crash.py)
        own_clock = [t.time for t in _timeout_lines(tl, [r for r in timed_out if tl.rank_host(r) == state.host])
                     if t.time is not None]
        first = next((e.time for e in lost if e.time is not None), None)
        if own_clock and first is not None and first < min(own_clock):
            continue  # on the same clock it lost its peer before anyone timed out: not a late arrival
        named_peer |= bool(peers)
        late[rank] = lost
    if not late or len(late) >= len(tl.ranks):
        return []
    ranks = sorted(late)
    confidence = 0.8 if named_peer else 0.65
    if len(late) > len(timed_out):
        confidence -= 0.2  # most ranks lost a peer: more likely one peer's failure than many late ranks
    title = (f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} arrived late: rank{'s' if len(timed_out) > 1 else ''} "
             f"{fmt_ranks(timed_out)} had "
             f"timed out waiting and left, so {'they' if len(ranks) > 1 else 'it'} found the connection closed")
    what = (f"Rank{'s' if len(timed_out) > 1 else ''} {fmt_ranks(timed_out)} timed out in a collective. "
            f"Rank{'s' if len(ranks) > 1 else ''} "
            f"{fmt_ranks(ranks)} did not time out: {'their' if len(ranks) > 1 else 'its'} only error is a connection "
            "closed or reset by a peer, which is what a rank sees when it enters the collective after its peers "
            "gave up and exited. The ranks that timed out were alive and waiting until then, so the late rank is "
            "the culprit and the closed connection the last symptom, not a crash elsewhere.")
    evidence = []
    for rank in ranks:
        evidence += evidence_of(late[rank][:1], "arrived after the others left")
    evidence += evidence_of(_timeout_lines(tl, timed_out), "timed out waiting", MAX_CASCADE)
    return [hypothesis(tl, Category.LAGGING_RANK, confidence, title, culprits=ranks, affected=timed_out, what=what,
                       fix=look_at(tl, ranks), evidence=evidence)]


def _from_unique_id(tl: Timeline) -> list[Hypothesis]:
    """A rank that timed out waiting for another's ncclUniqueId: NCCL's communicator is created at the group's
    first collective, where the group's rank 0 publishes the id in the store. A rank that never published it
    never reached that collective (busy alone: evaluation, data preparation, a checkpoint; or hung)."""
    waits = [e for e in tl.of(Kind.STORE_ERROR) if e.data.get("what") == "nccl-unique-id" and
             (e.data.get("timeout") or not e.data.get("error"))]
    if not waits:
        return []
    # the error may be cut off (a partial paste): most often it is the store's timeout
    confidence = 0.75 if any(e.data.get("timeout") for e in waits) else 0.55
    culprits = sorted({int(e.data["waiting_for"]) for e in waits})
    crashed = [r for r in culprits if r in tl.ranks and tl.ranks[r].outcome in _CRASHED]
    if crashed == culprits:
        return []  # it died before it got there: the crash rules say how
    waiting = sorted({e.origin.rank if e.origin.rank is not None else int(e.data["group_rank"]) for e in waits
                      if e.origin.rank is not None or e.data.get("group_rank") is not None})
    waiting = [r for r in waiting if r not in culprits]
    waiters = (f"rank{'s' if len(waiting) > 1 else ''} {fmt_ranks(waiting)}" if waiting else "another rank")
    title = (f"rank {fmt_ranks(culprits)} never reached the first collective of its group: {waiters} timed out "
             f"waiting for its {'xcclUniqueId' if any('xcclUniqueId' in e.text for e in waits) else 'ncclUniqueId'}")
    what = (f"NCCL creates a group's communicator at its first collective: the group's rank {fmt_ranks(culprits)} "
            f"publishes an id in the store and the others read it. {waiters[:1].upper()}{waiters[1:]} "
            f"waited for it until the store's timeout, so rank {fmt_ranks(culprits)} was still "
            "doing something else: work that only it does (evaluation, tokenising or downloading data, writing a "
            "checkpoint) that took longer than the timeout, or a hang. (The bracketed numbers are ranks in that "
            "group; for the default group they are the global ranks.)")
    fix = (look_at(tl, [r for r in culprits if r in tl.ranks]) if any(r in tl.ranks for r in culprits) else
           "Find what that rank was doing at the time (its last log lines, py-spy dump while it runs).")
    fix += (" If it was legitimately busy, do that work before init_process_group, on every rank, or raise the "
            "timeout (init_process_group(timeout=...), DeepSpeed's --timeout / dist_init_required).")
    return [hypothesis(tl, Category.LAGGING_RANK, confidence, title, culprits=culprits, affected=waiting, what=what,
                       fix=fix, evidence=evidence_of(waits, "waited for the id", MAX_CASCADE))]


def _store_waits(tl: Timeline) -> list[Event]:
    """Store operations that waited out their timeout for a key (not for a store they could not reach): a wait
    that names its keys, and a socket to a store on the same machine that timed out."""
    barriers = first_barrier_sources(tl)  # (a wait in a barrier for the main process: the store is its own)
    return [e for e in tl.of(Kind.STORE_ERROR) if e.origin.rank is not None and (
        e.data.get("what") == "wait" or
        (e.data.get("what") == "socket-timeout" and (any(word in e.text for word in LOOPBACK_STORE)
                                                     or e.ref.source in barriers)))]


def _from_unseen(tl: Timeline, claimed: set[int]) -> list[Hypothesis]:
    """Ranks timed out waiting, and the ranks they waited for are not in the inputs at all: a paste of the
    ranks that failed, where the one that never arrived had nothing to say. Ranks are numbered from 0, so
    rank 3 timing out means ranks 0-2 exist. Names the unseen ranks when there are one or two; otherwise
    rank 0 if it is among them (it alone evaluates, writes checkpoints, prepares data: the usual straggler),
    at a confidence that says the logs are incomplete."""
    waits = {r: tl.ranks[r].of(*TIMEOUT_KINDS)[:1] for r in _timed_out(tl)}
    # (a rank's wait that says how long it lasted before one that does not: a bar is measured against it)
    for event in sorted(_store_waits(tl), key=lambda e: not isinstance(e.data.get("ms"), int)):
        waits.setdefault(int(event.origin.rank), [event])  # type: ignore[arg-type]
    if not waits:
        return from_rankless(tl)
    if ras_all_launched(tl):
        return []  # NCCL's RAS counted the same collectives on every rank: nobody is missing from them
    logged = {r for r, s in tl.ranks.items() if s.logged} | _inside(tl)
    top = max([*tl.ranks, (tl.stated_world_size or 0) - 1])
    unseen = [r for r in range(top + 1) if r not in logged and r not in claimed]
    waiting = sorted(waits)
    bar = busy_bar(tl, [event for events in waits.values() for event in events])
    phase = busy_phase(tl, [event for events in waits.values() for event in events]) if bar is None else None
    if not unseen:
        if tl.stated_world_size is not None or len(logged) != 1 or \
                any(e.kind in TIMEOUT_KINDS for e in tl.unattributed):
            return []  # every rank is here, or others timed out too (lines without a rank): not one missing
        # one rank, waiting: another rank exists (a collective of one cannot time out), none is in the inputs
        culprits: list[int] = []
        confidence = 0.35
        who = "another rank"
    elif len(unseen) <= 2:
        culprits, who = unseen, f"rank{'s' if len(unseen) > 1 else ''} {fmt_ranks(unseen)}"
        confidence = 0.55 if len(unseen) <= max(1, len(waiting) // 2) else 0.45
        if tl.stated_world_size is None:
            confidence -= 0.1  # an excerpt may simply have left the others out
    else:
        culprits, who = [], f"one of ranks {fmt_ranks(unseen)}"
        confidence = 0.35
    busy = bar or phase
    burst = busy is None and len(unseen) == 1 and _burst_without(tl, waits, unseen[0])
    if busy is not None:
        # a process worked alone while they waited; bars are drawn (and evaluation run) by the main process
        # unless a prefix says otherwise
        drawer = busy.origin.rank if busy.origin.rank is not None else (0 if 0 not in waiting else None)
        if drawer is not None and (drawer in unseen or not unseen):
            culprits, who = [drawer], f"rank {drawer}"
        confidence = round(max(confidence, 0.45) + (0.15 if bar is not None else 0.05), 2)
    elif burst:
        # every other rank timed out in one burst of one stream, this rank alone is not in it: had it waited
        # too, its line would stand among theirs
        confidence = 0.4
    else:
        # nothing says those ranks were anywhere else: a paste of some ranks' errors leaves the others out
        # whether they were late or timed out too, so the unexplained timeout (A019) comes first
        confidence = min(confidence, 0.25)
    if burst:
        absent = (f"rank {unseen[0]} is missing from the burst of their timeouts in the same output, where its own line "
                  "would stand had it waited too")
    elif culprits:
        absent = f"no line of the inputs comes from {'them' if len(culprits) > 1 else 'it'}"
    else:
        absent = "no other rank is in the inputs" if not unseen else "those ranks are not in the inputs"
    waited = f"rank{'s' if len(waiting) > 1 else ''} {fmt_ranks(waiting)} timed out waiting"
    if bar is not None:
        title = f"{who} never reached the collective: it was working alone ({bar_words(bar)}) while {waited}"
    elif phase is not None:
        doing = "an evaluation" if phase.data.get("phase") == "evaluation" else "a checkpoint being written"
        title = (f"{who} never reached the collective: the last lines before the timeouts are {doing} "
                 f"(“{str(phase.data.get('desc', ''))[:60]}”), which trainers often do on rank 0 alone, while "
                 f"{waited}")
    else:
        title = f"{who} never reached the collective: {waited}, and {absent}"
    what = (f"Rank{'s' if len(waiting) > 1 else ''} {fmt_ranks(waiting)} waited until the timeout. A rank that never "
            "arrives has no error to report, so in a paste of the errors it is the one missing. ")
    if bar is not None:
        what += (f"A progress bar ({bar_words(bar)}, {bar.ref}) was still running as long as they had waited: the "
                 "process drawing it (the main process, rank 0, unless its prefix says otherwise) was doing work "
                 "alone while the others sat in the collective. ")
    elif phase is not None:
        what += (f"The lines just before the first timeout ({phase.ref}) say a process was "
                 f"{'evaluating' if phase.data.get('phase') == 'evaluation' else 'writing a checkpoint'}: many "
                 "trainers (and pycocotools' COCO evaluation) evaluate and save on rank 0 alone while the others "
                 "wait in the next collective, which times out when that work takes longer than the timeout. ")
    elif len(unseen) > 2:
        what += (f"Ranks {fmt_ranks(unseen)} are not in the inputs, too many to tell which; rank 0 is the usual "
                 "straggler, because it alone evaluates, writes checkpoints, logs or prepares data. ")
    what += ("These logs may be incomplete: the logs of every rank (torchrun --log-dir, or the job's full output) "
             "would confirm it.")
    evidence = evidence_of([bar], "still working when the others timed out") if bar is not None else []
    evidence += evidence_of([phase], "evaluating when the others timed out") if phase is not None else []
    evidence += evidence_of([event for events in waits.values() for event in events], "timed out waiting",
                            MAX_CASCADE + 2)
    fix = (look_at(tl, [r for r in culprits if r in tl.ranks]) if any(r in tl.ranks for r in culprits) else
           f"Find what {who} was doing when the others timed out (its last log lines). If it works alone (rank 0 "
           "evaluating, tokenising, saving), make the others wait outside collectives or raise the timeout.")
    if phase is not None and phase.data.get("phase") == "evaluation":
        fix = ("Evaluate on every rank (each its share, then gather the results), or raise the timeout past the "
               "evaluation's length (init_process_group(timeout=...)). " + fix)
    elif phase is not None:
        fix = ("Write the checkpoint asynchronously or shard it across ranks (torch.distributed.checkpoint), make the "
               "others wait outside a collective, or raise the timeout past the save's length. " + fix)
    if bar is not None:
        fix = ("Do that work before init_process_group or on every rank (datasets' map with a cache that the other "
               "ranks then load), or raise the timeout past its length (init_process_group(timeout=...)). " + fix)
    return [hypothesis(tl, Category.LAGGING_RANK, confidence, title, culprits=culprits, affected=waiting, what=what,
                       fix=fix, evidence=evidence)]


def _burst_without(tl: Timeline, waits: dict[int, list[Event]], missing: int) -> bool:
    """The other ranks of 0 to N (two or more) all timed out, in the same collective where the lines say which,
    their first timeout lines are a burst of one file (a console where every rank writes), and that output goes
    on after it: ``missing``, rank 0 or a rank between two that waited, is the one rank of the range with no line
    there. Watchdogs of one collective fire within a second of each other, so a rank that timed out too would
    have its line in the burst or just after it."""
    firsts = [events[0] for events in waits.values() if events]
    if len(firsts) < 2 or sorted([*waits, missing]) != list(range(len(waits) + 1)) or len(firsts) != len(waits):
        return False
    if len({e.ref.source for e in firsts}) != 1 or any(e.kind not in TIMEOUT_KINDS for e in firsts):
        return False
    lines = sorted(e.ref.line for e in firsts)
    if lines[-1] - lines[0] > 3 * len(firsts):
        return False
    if len({e.seq for e in firsts}) != 1:
        return False
    source, last = firsts[0].ref.source, lines[-1]
    after = [e for e in tl.events if e.ref.source == source and e.ref.line > last and e.kind is not Kind.PASTE_CUT]
    if any(e.ref.source == source for e in tl.of(Kind.PASTE_CUT)):
        # the paste stops inside a line after them: only another rank's line after the burst says it went on
        return any(e.origin.rank not in waits for e in after)
    if missing == 0:
        # and the output went on after it with lines that are not the waiting ranks' own (a paste cut right after
        # the timeouts, or the waiting ranks' follow-up lines alone, may simply have left rank 0's line out)
        return any(e.origin.rank not in waits for e in after)
    # a rank inside the range: the output went on (the waiting ranks' follow-ups will do: the
    # missing rank's timeout, had it come, would stand among them)
    return bool(after)


def _from_watch_and_ras(tl: Timeline) -> list[Hypothesis]:
    out = []
    late_words = ("late", "straggler", "stuck", "missing")
    for event in tl.of(Kind.WATCH):
        kind = str(event.data.get("kind", "")).lower()
        ranks = list(event.data.get("ranks") or [])
        if not ranks or event.data.get("status") in ("resolved", "info"):
            continue
        if any(word in kind for word in late_words) and "mismatch" not in kind:
            chronic = "chronic" in kind
            title = f"syncdoctor watch: rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} {kind.replace('-', ' ')}"
            out.append(hypothesis(tl, Category.LAGGING_RANK, 0.5 if chronic else 0.85, title, culprits=ranks,
                                  affected=list(event.data.get("waiting_ranks") or []),
                                  what=str(event.data.get("message") or "The live watcher saw these ranks lag."),
                                  evidence=evidence_of([event], "watch event"), root_cause=not chronic))
    for event in tl.of(Kind.RAS):
        issue = event.data.get("issue")
        ranks = [r for r in (event.data.get("ranks") or []) if isinstance(r, int)]
        if issue in ("INCOMPLETE", "DEAD") and (ranks or event.origin.rank is not None):
            ranks = ranks or [event.origin.rank]
            # RAS names the missing rank by its communicator and the process by its node, in two entries: one rank
            # missing and one process unreachable are the same one
            nodes = {str(e.origin.host) for e in tl.of(Kind.RAS) if e.data.get("issue") in ("INCOMPLETE", "DEAD")
                     and e.origin.host}
            title = f"NCCL RAS: rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} {issue.lower()}"
            out.append(hypothesis(tl, Category.LAGGING_RANK, 0.8 if issue == "DEAD" else 0.7, title, culprits=ranks,
                                  hosts=sorted(nodes) if len(ranks) == 1 and len(nodes) == 1 else None,
                                  what="NCCL's RAS could not reach these processes (hung, stopped or dead).",
                                  evidence=evidence_of([event], "NCCL RAS")))
        elif issue == "DEAD" and event.origin.host and not any(
                e.data.get("issue") in ("INCOMPLETE", "DEAD") and (e.data.get("ranks") or e.origin.rank is not None)
                for e in tl.of(Kind.RAS)):
            # a dead peer named by its node alone (RAS's monitor, ``PEER_DEAD: Process … on node …``; NCCL's own
            # ``RAS declaring peer … as DEAD``): that process stopped answering, the others then wait for it
            dead = sorted({str(e.origin.host) for e in tl.of(Kind.RAS) if e.data.get("issue") == "DEAD"
                           and e.origin.host})
            if dead and dead[0] != str(event.origin.host):
                continue  # one hypothesis for them all, at the first
            title = (f"NCCL RAS: the process{'es' if len(dead) > 1 else ''} on {', '.join(dead[:4])} stopped "
                     "answering (declared dead): hung, crashed, or cut off from the network")
            out.append(hypothesis(tl, Category.LAGGING_RANK, 0.6, title, hosts=dead, evidence=evidence_of(
                [e for e in tl.of(Kind.RAS) if e.data.get("issue") == "DEAD"], "NCCL RAS", 4),
                what=("NCCL's RAS keeps a connection to every process of the job and declares one dead when it stops "
                      "answering its keep-alives: that process is hung, has died, or its host lost the network; the "
                      "collectives it belongs to then wait for it."),
                fix=("Look at that host first: its processes (py-spy dump, `ps`), its kernel log (OOM kills, Xid, NIC "
                     "link down) and its network; `ncclras` on a live node lists the ranks of that process.")))
        elif issue == "MISMATCH" and ranks and event.data.get("ahead"):
            ops = event.data.get("operations") or []
            title = (f"NCCL RAS: ranks {fmt_ranks(ranks)} launched a collective the other members of the "
                     f"communicator have not (operation {ops[-1] if ops else '?'}): one of the others is late")
            out.append(hypothesis(
                tl, Category.LAGGING_RANK, 0.5, title, affected=ranks, evidence=evidence_of([event], "NCCL RAS"),
                what=("RAS lists the smaller group of ranks, here the ones ahead: the ranks that stopped at the earlier "
                      "operation are not listed, and the late rank is among them."),
                fix=("Run `ncclras` again with more detail (or the Flight Recorder, TORCH_NCCL_DUMP_ON_TIMEOUT=1) to "
                     "name the ranks at the earlier operation, and look at what they do instead (py-spy dump).")))
        elif issue == "MISMATCH" and ranks:
            title = f"NCCL RAS: ranks {fmt_ranks(ranks)} issued fewer collectives than the others"
            out.append(hypothesis(tl, Category.LAGGING_RANK, 0.7, title, culprits=ranks,
                                  what="RAS collective counts: these ranks are behind.",
                                  evidence=evidence_of([event], "NCCL RAS")))
    return out + ([] if out else _ras_ranks_launched(tl))


def _ras_ranks_launched(tl: Timeline) -> list[Hypothesis]:
    """RAS's per-rank lines of a mismatch pasted without its report (``Rank 1 has launched up to operation 288686``,
    ``Rank 0 has launched up to operation 288685``): the ranks at the lowest operation are behind the others."""
    launched = [e for e in tl.of(Kind.RAS) if e.data.get("issue") == "LAUNCHED"]
    reached: dict[int, int] = {}
    for event in launched:
        rank, op = event.origin.rank, int(event.data.get("operation") or 0)
        if rank is not None:
            reached[rank] = max(reached.get(rank, 0), op)
    if len(set(reached.values())) < 2:
        return []
    low = min(reached.values())
    behind = sorted(r for r, op in reached.items() if op == low)
    ahead = sorted(r for r in reached if r not in behind)
    title = (f"NCCL RAS: rank{'s' if len(behind) > 1 else ''} {fmt_ranks(behind)} launched up to operation {low}, "
             f"behind rank{'s' if len(ahead) > 1 else ''} {fmt_ranks(ahead)} (up to {max(reached.values())}): "
             f"{'they' if len(behind) > 1 else 'it'} never reached the collective the others wait in")
    return [hypothesis(tl, Category.LAGGING_RANK, 0.75, title, culprits=behind, affected=ahead,
                       what="NCCL's RAS counts the collectives each rank launched on the communicator; the ranks at the "
                            "lower count stopped before the one the others are in.",
                       fix="See what the ranks behind are doing instead (py-spy dump, the Flight Recorder: "
                           "TORCH_NCCL_DUMP_ON_TIMEOUT=1).",
                       evidence=evidence_of(launched, "NCCL RAS", 6))]


def _from_chains(tl: Timeline, graph: Chains) -> list[Hypothesis]:
    """The roots of the wait-for graph that are late: inside no collective the dumps show, and no timeout."""
    out = []
    for root in graph.roots:
        if root.cycle:
            continue  # a deadlock: see desync.py
        late = [r for r in root.ranks if r not in graph.hidden and
                (r not in tl.ranks or tl.ranks[r].outcome not in _CRASHED)]
        if not late:
            continue
        direct = [w for w in root.direct if set(w.blockers) & set(late)]
        first = min(direct, key=lambda w: (-len(w.waiters), w.op.group, w.op.seq))
        behind = set(root.affected) | {r for r in graph.hidden if r not in late}
        if len([r for r in graph.roots if not r.cycle]) == 1:  # everyone who waited, waited behind it
            behind |= graph.waiters - set(late)
        held = sorted(behind)
        chain = describe_chain(root, lambda ranks: f"rank{'s' if len(set(ranks)) > 1 else ''} {fmt_ranks(ranks)}")
        hidden = [f"rank {r} timed out in {graph.hidden[r]}" for r in sorted(graph.hidden) if r in held][:6]
        title = (f"rank{'s' if len(late) > 1 else ''} {fmt_ranks(late)} never entered {first.op.text()} "
                 f"(Flight Recorder); {'ranks ' + fmt_ranks(held) if len(held) > 1 else 'rank ' + fmt_ranks(held)} "
                 f"waited behind {'them' if len(late) > 1 else 'it'}")
        what = (f"Who waited for whom, from the dumps: {chain}."
                + (f" From the logs: {'; '.join(hidden)} (a wait the dumps do not show: it waited too)." if hidden else "")
                + " The ranks in the chain are not late themselves: each waited for the next one, and the chain ends "
                "at the rank that never arrived.")
        evidence = []
        for rank in late:
            evidence += evidence_of(list(graph.proof.get(rank, ()))[:2], "how far the root got")
            state = tl.ranks.get(rank)
            if state is not None:
                evidence += evidence_of(state.of(Kind.WORKER_FAILED, Kind.WORKER_TERMINATED)[:1], "no error of its own")
        for wait in direct[:4]:
            for waiter in wait.waiters[:MAX_CASCADE]:
                evidence += evidence_of(list(graph.proof.get(waiter, ()))[:1], f"waiting in {wait.op.text()}")
        evidence += evidence_of(_timeout_lines(tl, [r for r in held if r in tl.ranks]), "timed out waiting",
                                MAX_CASCADE)
        out.append(hypothesis(tl, Category.LAGGING_RANK, 0.93, title, culprits=late, affected=held, what=what,
                              fix=look_at(tl, [r for r in late if r in tl.ranks]) if any(r in tl.ranks for r in late)
                              else None, evidence=evidence))
    return out


def lagging_rank(tl: Timeline) -> list[Hypothesis]:
    graph = chains(tl)
    waiting = graph.waiters
    # per-group comparisons name the members behind in one group, which may be waiting in another one
    roots = {r for root in graph.roots for r in root.ranks}
    found = _from_reports(tl) + [
        h for h in _from_sequences(tl) + _from_fr(tl)
        if not (set(h.culprit_ranks) & waiting and (roots or set(h.culprit_ranks) <= waiting))
    ] + _from_chains(tl, graph) + _from_watch_and_ras(tl) + _from_unique_id(tl) + from_runs_first(tl) + from_stacks(tl) + from_horovod(tl) + from_exit_barrier(tl)
    claimed = {r for h in found for r in h.culprit_ranks}
    claimed |= {r for r, s in tl.ranks.items() if s.has(Kind.COLLECTIVE_MISMATCH)}
    if not any(h.confidence >= 0.85 for h in found):
        found += _from_silence(tl, claimed)
        if not any(h.confidence >= 0.5 for h in found):
            found += _from_unseen(tl, claimed)
        found += _from_late_arrival(tl, claimed | {r for h in found for r in h.culprit_ranks})
    return found


def _ranks_taken_twice(tl: Timeline) -> list[Hypothesis]:
    """As many processes joined as the world has ranks, yet some global ranks were taken twice and others by
    nobody (Lightning's joining lines): the launcher started the processes with the wrong node ranks or task
    counts (Slurm's --ntasks-per-node against the Trainer's devices, a NODE_RANK left at 0)."""
    twice_in = [e for e in tl.of(Kind.PROCESS_MAP) if e.data.get("twice")]
    if twice_in:
        ranks = sorted({int(e.data["global_rank"]) for e in twice_in})
        hosts = sorted({e.origin.host for e in twice_in if e.origin.host})
        return [hypothesis(
            tl, Category.RANK_NEVER_JOINED, 0.6,
            f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} checked in twice at NCCL's bootstrap "
            f"(its root{' on ' + ', '.join(hosts) if hosts else ''} says so): two processes were given the same "
            "rank, so another rank never exists", evidence=evidence_of(twice_in, "a rank heard twice", 4),
            what=("NCCL's bootstrap root collects one address per rank of the communicator. Hearing from a rank "
                  "twice means two processes were started with that rank: the launcher and the job disagree on "
                  "the node ranks or the number of tasks (each node told it is node 0, srun starting a launcher "
                  "per task), or two runs share one ncclUniqueId."),
            fix=("Check the RANK, LOCAL_RANK and NODE_RANK (SLURM_PROCID, SLURM_NODEID) each process sees: one "
                 "launcher per node with its own --node-rank, or srun with one task per GPU and no launcher; "
                 "--ntasks-per-node equal to the processes the framework starts per node."))]
    joined = [e for e in tl.of(Kind.PROCESS_MAP) if e.data.get("source") == "lightning"]
    if not joined:
        return []
    started = _slurm_tasks_missing(tl, joined)
    if started:
        return started
    world = max(int(e.data["world_size"]) for e in joined)
    seen: dict[int, list[Event]] = defaultdict(list)
    for event in joined:
        seen[int(event.data["global_rank"])].append(event)
    missing = sorted(set(range(world)) - set(seen))
    twice = sorted(r for r, events in seen.items() if len(events) > 1)
    if not missing or not twice or len(joined) < world:
        return []
    title = (f"rank{'s' if len(missing) > 1 else ''} {fmt_ranks(missing)} never started: {len(joined)} processes "
             f"joined a world of {world}, ranks {fmt_ranks(twice)} twice")
    what = ("Each process takes its global rank from the launcher (node rank x processes per node + local rank). "
            "Two processes that print the same global rank were started as if on the same node: the launcher and "
            "the Trainer disagree on the number of nodes or of tasks per node, so the ranks above never exist and "
            "the process group cannot form.")
    fix = ("Under Slurm, request --nodes and --ntasks-per-node equal to the Trainer's num_nodes and devices and "
           "start the script with srun; with torchrun, give each node its own --node-rank; check the NODE_RANK, "
           "SLURM_PROCID and LOCAL_RANK each process sees.")
    evidence = evidence_of([seen[r][1] for r in twice][:4], "a global rank taken a second time")
    return [hypothesis(tl, Category.RANK_NEVER_JOINED, 0.7, title, culprits=missing, what=what, fix=fix,
                       evidence=evidence)]


def _slurm_tasks_missing(tl: Timeline, joined: list[Event]) -> list[Hypothesis]:
    """Lightning under Slurm (``Multi-processing is handled by Slurm.``): every srun task writes to the job's one
    output, so that line followed by fewer joining lines than the world has ranks, each rank once, shows ranks
    that never started: most often a batch script that runs the program without srun (one process), or fewer tasks
    than the Trainer's devices x num_nodes. A lead (0.45): a paste may have cut the other ranks' lines."""
    notes = sorted((e.ref.source, e.ref.line) for e in tl.of(Kind.PROCESS_MAP) if e.data.get("source") == "lightning-slurm")
    for at, (source, line) in enumerate(notes):
        # the joining lines of that run: after its note, before the next run's (a paste may hold several runs or files)
        upto = notes[at + 1][1] if at + 1 < len(notes) and notes[at + 1][0] == source else None
        here = [e for e in joined if e.ref.source == source and e.ref.line > line and (upto is None or e.ref.line < upto)]
        if not here:
            continue
        world = max(int(e.data["world_size"]) for e in here)
        ranks = [int(e.data["global_rank"]) for e in here]
        missing = sorted(set(range(world)) - set(ranks))
        if not missing or len(ranks) != len(set(ranks)):
            continue
        title = (f"rank{'s' if len(missing) > 1 else ''} {fmt_ranks(missing)} never started: Lightning under Slurm "
                 f"printed {len(ranks)} of {world} ranks' joining lines (rank{'s' if len(ranks) > 1 else ''} "
                 f"{fmt_ranks(sorted(ranks))}), and every task of srun writes to this output")
        what = ("Lightning's SLURMEnvironment leaves starting the processes to Slurm: each rank must be a task of srun. "
                "Those that printed their joining line wait in the process group's setup for ranks that were never "
                "started: the batch script runs the program without srun (one process), or asks for fewer tasks "
                "than the Trainer's devices x num_nodes.")
        fix = ("Start the program with srun in the batch script (`srun python train.py`), with --nodes equal to "
               "num_nodes and --ntasks-per-node equal to devices (one task per GPU).")
        return [hypothesis(tl, Category.RANK_NEVER_JOINED, 0.45, title, culprits=missing, what=what, fix=fix,
                           evidence=evidence_of(here[:4], "the ranks that started"))]
    return []


def rank_never_joined(tl: Timeline) -> list[Hypothesis]:
    duplicated = _ranks_taken_twice(tl)
    missing: dict[int, list[Event]] = defaultdict(list)
    for event in tl.of(Kind.STORE_ERROR):
        for rank in event.data.get("missing_ranks") or []:
            missing[int(rank)].append(event)
    if not missing:
        return duplicated
    culprits = sorted(missing)
    waiting = sorted({e.origin.rank for events in missing.values() for e in events if e.origin.rank is not None})
    own = [tl.ranks[r].first_failure for r in culprits if r in tl.ranks and tl.ranks[r].first_failure is not None]
    them = "them" if len(culprits) > 1 else "it"
    title = (f"rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} never joined the process group; "
             + (f"rank{'s' if len(waiting) > 1 else ''} {fmt_ranks(waiting)} waited for {them} in the store" if waiting
                else f"the other ranks waited for {them} in the store"))
    what = "The store waits of the other ranks name keys only these ranks would have written."
    if own:
        what += " Their own logs show why (see the first evidence lines)."
    evidence = evidence_of([e for e in own if e is not None], "the missing rank's own error")
    evidence += evidence_of([events[0] for events in missing.values()], "waiting for the missing rank's key",
                            MAX_CASCADE)
    return [*duplicated, hypothesis(tl, Category.RANK_NEVER_JOINED, 0.75, title, culprits=culprits,
                                    affected=waiting, what=what, evidence=evidence)]
