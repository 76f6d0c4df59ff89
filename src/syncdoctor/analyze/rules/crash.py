"""A rank that died on its own, and the cascade of peer errors it caused. Pure: no I/O.

Order across hosts is causal first: a rank whose first failure is its own (an exception that is not a
communication error, a fatal signal, a SIGKILL) came before the ``connection closed by peer`` errors of the
others, whatever their clocks say. Timestamps decide only between ranks of the same host; across hosts
they are quoted with a caveat.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Category, Event, Hypothesis, Kind, Ref
from syncdoctor.analyze.parsers.gloo import is_loopback
from syncdoctor.analyze.rules.common import (
    MAX_CASCADE,
    SHM_FIX,
    SIGBUS_VERB,
    SIGBUS_WHAT,
    attribute,
    continuation,
    evidence_of,
    fmt_ranks,
    hypothesis,
    just_above,
    launchers_own,
    unique_id_roots_gone,
    unprefixed_exception,
    writer_hosts,
)
from syncdoctor.analyze.rules.joins import OWN_FAILURE, UNREAD
from syncdoctor.analyze.rules.node import (
    SHARED_GPU_FIX,
    SHARED_GPU_WHAT,
    dataloader_cause,
    shared_gpu,
    watchdog_abort,
)
from syncdoctor.analyze.rules.phrases import (
    DEVICE_ASSERT,
    MISSING_FOLDER,
    UNIMPLEMENTED,
    Reading,
    folder_missing,
    read_as,
    unimplemented,
)
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, RankState, Timeline, is_comm_exception

__all__ = ["ddp_unused_parameters", "rank_crashed"]


def _own_failure(state: RankState) -> Event | None:
    for event in state.events:
        if event.kind in (Kind.CUDA_OOM, Kind.FATAL_SIGNAL):
            return event
        if event.kind is Kind.EXCEPTION and not is_comm_exception(event):
            return event
    if state.outcome in ("killed", "exited"):
        return state.first_failure
    return None


def _explained_by_mismatch(state: RankState) -> bool:
    return state.has(Kind.COLLECTIVE_MISMATCH)


def _cascade(tl: Timeline, culprits: set[int]) -> tuple[list[int], list[Event]]:
    affected: list[int] = []
    lines: list[Event] = []
    for rank, state in tl.ranks.items():
        if rank in culprits:
            continue
        symptoms = [e for e in state.events if e.kind in (Kind.PEER_CLOSED, *TIMEOUT_KINDS, Kind.NCCL_ERROR)
                    or (e.kind is Kind.EXCEPTION and is_comm_exception(e))]
        if symptoms:
            affected.append(rank)
            lines.append(next((e for e in symptoms if e.kind is Kind.PEER_CLOSED), symptoms[0]))
    return affected, lines


def _order_note(tl: Timeline, culprits: list[tuple[int, Event]]) -> str:
    if len(culprits) < 2:
        return ""
    hosts = {tl.rank_host(rank) for rank, _ in culprits}
    timed = [(event.time, rank) for rank, event in culprits if event.time is not None]
    if len(timed) < 2:
        return " Several ranks failed on their own; the logs carry no timestamps to order them."
    first = min(timed)[1]
    if len(hosts) == 1:
        return f" By the clock of {hosts.pop()}, rank {first} failed first."
    return (f" By the timestamps rank {first} failed first, but these ranks are on different hosts whose "
            "clocks may differ: treat the order as a hint.")


_HOST_MEMORY = ("DefaultCPUAllocator", "can't allocate memory", "Cannot allocate memory", "MemoryError")


def _from_rankless_exception(tl: Timeline) -> list[Hypothesis]:
    """A worker's own exception, written without its rank (a paste of one node's output), then the launcher
    stopping the other workers (torchrun's ``Sending process N closing signal SIGTERM``): that worker failed
    first, and the others were ended because of it."""
    stops = tl.of(Kind.WORKER_TERMINATED)
    read = {(e.ref.source, e.ref.line) for e in tl.events if e.kind is not Kind.EXCEPTION}
    own = [e for e in tl.unattributed if e.kind is Kind.EXCEPTION and not is_comm_exception(e)
           and (e.ref.source, e.ref.line) not in read and not launchers_own(e)
           and any(s.ref.source == e.ref.source and s.ref.line > e.ref.line for s in stops)]
    if not own:
        return []
    first = own[0]
    message = str(first.data.get("message") or first.text).strip()
    stopped = sorted({int(s.data["worker_pid"]) for s in stops if s.data.get("worker_pid") is not None
                      and s.ref.source == first.ref.source and s.ref.line > first.ref.line})
    host_memory = any(word in message for word in _HOST_MEMORY)
    title = (f"a worker failed with its own error ({message[:100]}){' - host memory ran out' if host_memory else ''}; "
             f"the launcher then stopped the other {len(stopped) or ''} worker{'s' if len(stopped) != 1 else ''}")
    what = ("The exception is a worker's own (not a lost connection or a timeout), and right after it the launcher "
            "sent the other workers SIGTERM: torchrun ends every worker of a node once one exits with an error. The "
            "lines do not say which rank raised it; the pid missing from the launcher's SIGTERM list is its.")
    if host_memory:
        what += (" The allocation that failed is in host memory (RAM), not the GPU's: loading or merging a large "
                 "model on every rank at once, pinned memory or DataLoader workers can exhaust it.")
    fix: str | None = ("Read the traceback above the error; for host memory, load the model on fewer ranks at a time (low_cpu_mem_"
           "usage, sharded checkpoints), use a node with more RAM, or fewer DataLoader workers." if host_memory else
           "Read the traceback above the error: it is the cause; the other workers' ends are its consequence.")
    category, confidence = Category.RANK_CRASHED, 0.55
    reading = None if host_memory else _cause_in_words(first)
    if reading is not None:  # its words name the cause: a port in use, a GPU fault…
        category, confidence = reading.category, 0.45
        what += f" Its words say {reading.what}: that is the most likely cause."
        fix = None
    return [hypothesis(tl, category, confidence, title, what=what, fix=fix, where=attribute([first], tl),
                       evidence=evidence_of([first], "the worker's own error")
                       + evidence_of(stops[:3], "the launcher stopping the others"))]


def _from_peer_votes(tl: Timeline) -> list[Hypothesis]:
    """No rank shows its own death, but several ranks (or processes, in a paste without ranks) lost their
    connection to the same peer: that peer (a host, or an address) went away first, and the errors of the
    others are the cascade."""
    by_addr = {addr: host for host, addrs in tl.host_addrs.items() for addr in addrs}
    votes: dict[str, list[Event]] = {}
    for event in tl.of(Kind.PEER_CLOSED):
        peer = str(event.data.get("peer_addr") or "")
        if not peer:
            continue
        name = by_addr.get(peer) or _only_host_left(tl, peer) or peer
        host = event.origin.host or ""
        if host and name.split(".", 1)[0] == host.split(".", 1)[0]:
            name = host  # the same machine, named with its domain: another process of that host went away
        if name != event.origin.host:
            votes.setdefault(name, []).append(event)
    if not votes:
        return _peer_unknown(tl)

    def voters(events: list[Event]) -> set[object]:
        return {e.origin.rank if e.origin.rank is not None else (e.origin.host, e.origin.pid) for e in events
                if e.origin.rank is not None or e.origin.pid is not None}

    peer, events = max(votes.items(), key=lambda item: len(voters(item[1])))
    reporters = sorted({e.origin.rank for e in events if e.origin.rank is not None})
    reporting_hosts = {e.origin.host for e in events if e.origin.host}
    count = len(voters(events))
    culprits = [r for r in tl.hosts.get(peer, ()) if tl.ranks[r].outcome in ("silent", "killed", "terminated")]
    host = peer
    if not culprits and 0 not in {e.origin.rank for e in events} and all(e.data.get("transport") == "store"
                                                                         for e in events):
        # the store's server went away: the process that created it, rank 0 under init_process_group (node 0's torchrun
        # agent, where it holds the store, ends with rank 0's node); on the reporter's own host where it is loopback
        culprits = [0]
        peer = f"the store's server at {peer} (rank 0's process, or its node's launcher)"
        host = next(iter(reporting_hosts)) if is_loopback(host) and len(reporting_hosts) == 1 else \
            host if not is_loopback(host) else ""
    fix = (f"Look at {peer}: the worker logs there, `dmesg -T` (OOM killer, hardware errors), the scheduler's "
           "record of the job, and whether the host itself rebooted or lost its link.")
    if count < 2:
        # one process's word: its peer went away, or the network between them did (ncclRemoteError's own
        # wording). A dead peer is the more common of the two in the field, and its log says which.
        who = f"rank {reporters[0]}" if reporters else (attribute(events, tl).text or "a process")
        title = f"{who} lost its connection to {peer}: the process there went away, or the network between them"
        what = (f"Only {who} is in the inputs, and it saw its connection to {peer} closed or reset. Either the "
                "process there exited first (a crash, the OOM killer, the scheduler) and this error is the "
                "cascade, or the link between the two hosts failed. The log of the process at "
                f"{peer} decides: an error of its own there means it crashed; none, with NIC or switch errors "
                "around that time, means the network.")
        return [hypothesis(tl, Category.RANK_CRASHED, 0.4, title, culprits=culprits, hosts=(host,) if host else None,
                           affected=reporters, what=what, fix=fix + " If it shows nothing, check the link counters.",
                           evidence=evidence_of(events, f"lost {peer}", MAX_CASCADE))]
    who = f"ranks {fmt_ranks(reporters)}" if reporters else f"{count} processes"
    title = f"the process{'es' if len(culprits) != 1 else ''} on {peer} went away first: {who} lost their connection to it"
    what = (f"No log shows a rank dying on its own, but {who} all saw their connection to {peer} "
            "closed or reset: the process there exited, was killed or its host went down, and the other errors "
            "followed from it. Its own log, the launcher's summary or the host's kernel log should say why.")
    return [hypothesis(tl, Category.RANK_CRASHED, 0.6 if len(reporting_hosts) > 1 else 0.5, title, culprits=culprits,
                       hosts=(host,) if host else None, affected=reporters, what=what, fix=fix,
                       evidence=evidence_of(events, f"lost {peer}", MAX_CASCADE))]


def _only_host_left(tl: Timeline, addr: str) -> str | None:
    """The host an address no line names belongs to, by elimination: where the inputs place every rank of the
    world on a host (nccl-tests' device table, NCCL's prefixes), the one host whose addresses are not known while the
    others' are, none of them ``addr`` (``Connection closed by remote peer 10.102.0.232`` seen on 10.102.0.233, in a
    job of two hosts)."""
    world = tl.stated_world_size or tl.world_size
    placed = [tl.rank_host(r) for r in range(world)] if world and world <= 65536 else [None]
    if None in placed:
        return None
    hosts = {h for h in placed if h}
    known = {h for h in hosts if tl.host_addrs.get(h)}
    if any(addr in tl.host_addrs.get(h, ()) for h in known):
        return None
    left = hosts - known
    return left.pop() if len(left) == 1 and known else None


def _peer_unknown(tl: Timeline) -> list[Hypothesis]:
    """Connections closed or reset, or ncclRemoteError, and no line says by whom (an address masked before
    pasting, or PyTorch's summary only): a peer went away or the network between failed."""
    lost = [e for e in tl.events if e.kind is Kind.PEER_CLOSED or
            (e.kind is Kind.NCCL_ERROR and "remote" in (str(e.data.get("error", "")) + str(e.data.get("code", ""))).lower())]
    if not lost or any(e.kind in TIMEOUT_KINDS for e in tl.events):
        return []  # with timeouts, who waited for whom is the progress rules' question
    where = attribute(lost, tl)
    roots = unique_id_roots_gone(tl)
    if roots:
        return [_unique_id_root_gone(tl, roots, lost, where.text)]
    title = (f"{where.text or 'a process'} lost its connection to a peer the inputs do not name: the process there "
             "exited, or the network between them failed")
    what = ("A connection closed or reset by the other side (NCCL's ncclRemoteError says the same: 'remote process "
            "exited or there was a network error'). The peer is not named in these lines, so the logs of the other "
            "ranks decide: one with an error of its own (a crash, the OOM killer) is the cause; if none has one, "
            "look at the network between the hosts.")
    return [hypothesis(tl, Category.RANK_CRASHED, 0.35, title, what=what,
                       evidence=evidence_of(lost, "lost a peer", MAX_CASCADE),
                       where=where,
                       fix="Collect every rank's log (torchrun --log-dir) and the kernel logs of the hosts "
                           "(`dmesg -T`: OOM killer, NIC errors) around that time; with NCCL_DEBUG=WARN the peer's "
                           "address is in the WARN line.")]


def _unique_id_root_gone(tl: Timeline, roots: list[int], lost: list[Event], who: str) -> Hypothesis:
    """Ranks fetching a communicator's ncclUniqueId from the store lost the store's connection (``store->get('0')
    got error: Connection reset by peer``): the root that publishes the id, whose process serves the store in the
    usual launch, went away. PyTorch's message says as much ("a possible application crash on rank 0")."""
    named = f"rank{'s' if len(roots) > 1 else ''} {fmt_ranks(roots)}"
    title = (f"{named} most likely died: {who or 'the other ranks'} lost the store's connection while fetching "
             f"the communicator's id from {'them' if len(roots) > 1 else 'it'}")
    what = (f"The ranks creating an NCCL communicator read its id from the store, where {named} publishes it; "
            "the store's connection was reset or closed while they waited. The store is served by the process of "
            "rank 0 (or torchrun's agent on the first node), so that process most likely ended: its own log says "
            "why (an exception, the OOM killer). A network failure between the hosts would read the same.")
    return hypothesis(tl, Category.RANK_CRASHED, 0.45, title, culprits=roots, what=what,
                      evidence=evidence_of(lost, "lost the store while fetching the id", MAX_CASCADE),
                      fix=("Read the log of " + named + " (and the kernel log of its host: `dmesg -T`) for how it "
                           "ended; collect every rank's log with torchrun --log-dir."))


_RAISES = re.compile(r"^raise (?P<name>[\w.]{1,200})\(")


def _cut_raising_the_same(tl: Timeline, found: list[tuple[int, Event]]) -> list[tuple[int, Event]]:
    """Ranks with no failure of their own in the inputs but a traceback the paste cut before its error, whose last
    frame raises the exception other ranks died of (``raise InductorError(e, …)`` above ``InductorError: …`` on two
    other ranks): they failed of the same; their traceback is the line kept."""
    raised = {str(event.data.get("type") or "").rsplit(".", 1)[-1] for _, event in found if event.kind is Kind.EXCEPTION}
    raised.discard("")
    out: list[tuple[int, Event]] = []
    if not raised:
        return out
    ranks = {rank for rank, _ in found}
    for rank, state in sorted(tl.ranks.items()):
        if rank in ranks or (state.first_failure is not None and state.first_failure.kind is not Kind.ERROR_LINE):
            continue
        for dump in state.of(Kind.STACK_DUMP):
            sources = dump.data.get("sources") or []
            match = _RAISES.match(str(sources[-1]).strip()) if dump.data.get("source") == "traceback-cut" and \
                sources else None
            if match and match["name"].rsplit(".", 1)[-1] in raised:
                out.append((rank, dump))
                break
    return out


def rank_crashed(tl: Timeline) -> list[Hypothesis]:
    found: list[tuple[int, Event]] = []
    told: set[int] = set()  # ranks whose own error is an exception printed without its rank
    for rank, state in sorted(tl.ranks.items()):
        if _explained_by_mismatch(state):
            continue
        own = _own_failure(state)
        if own is None:
            continue
        if own.kind is Kind.WORKER_FAILED and watchdog_abort(tl, own):
            continue  # PyTorch's own abort after a collective timed out in that output: the timeout's end, no crash
        if own.kind is Kind.WORKER_FAILED and state.outcome == "exited":
            adopted = unprefixed_exception(tl, own)
            if adopted is not None:
                own = adopted
                told.add(rank)
        first = state.first_failure
        # a rank whose first failure was a peer's (timeout, closed connection) and that crashed afterwards
        # while cleaning up is a victim, not a cause
        if first is not None and first is not own and first.kind in (Kind.PEER_CLOSED, *TIMEOUT_KINDS):
            continue
        found.append((rank, own))
    if not found:
        return _from_peer_votes(tl) + _from_rankless_exception(tl) + _lone_library_error(tl)
    found += _cut_raising_the_same(tl, found)
    oom = [(rank, event) for rank, event in found if _is_oom(tl.ranks[rank])]
    groups = [(Category.RANK_OUT_OF_MEMORY, oom, "ran out of GPU memory")] if oom else []
    killed = [(rank, event) for rank, event in found if (rank, event) not in oom and _killed(tl.ranks[rank])]
    if killed:
        groups.append((Category.RANK_KILLED, killed, "was killed by SIGKILL (most often the host's OOM killer)"))
    bus = [(rank, event) for rank, event in found if (rank, event) not in oom and (rank, event) not in killed
           and _bus_error(tl.ranks[rank])]
    if bus:
        groups.append((Category.SHM_EXHAUSTED, bus, SIGBUS_VERB))
    loader: dict[str, list[tuple[int, Event]]] = {}
    kinds: dict[str, Category] = {}
    for rank, event in found:  # a dead DataLoader worker says how: the host's memory, /dev/shm
        cause = dataloader_cause(event) if (rank, event) not in oom + killed + bus else None
        if cause is not None:
            loader.setdefault(cause[1], []).append((rank, event))
            kinds[cause[1]] = cause[0]
    groups += [(kinds[verb], members, verb) for verb, members in loader.items()]
    taken = {(rank, id(event)) for _, members, _ in groups for rank, event in members}
    worded: dict[Category, list[tuple[int, Event]]] = {}
    said: dict[Category, str] = {}
    above_lines: dict[Category, list[Event]] = {}  # a line above the launcher's reports that says why
    for rank, event in found:  # an exception whose message names its cause in plain words (a port in use…)
        reading = _cause_in_words(event, tl) if (rank, id(event)) not in taken else None
        if reading is not None:
            worded.setdefault(reading.category, []).append((rank, event))
            said[reading.category] = f"died of an error whose words say {reading.what}"
            taken.add((rank, id(event)))
    # a rank whose exception's words name no cause, raised in the same function as one whose words do (ranks that
    # failed at the same place: TransformerEngine's interface look-up, ``Invalid network interface: eth`` on one rank,
    # its ioctl's bare ``[Errno 19] No such device`` on another), failed of the same
    places = {_place(event): category for category, members in worded.items() for _, event in members if _place(event)}
    for rank, event in found:
        if (rank, id(event)) not in taken and (place := _place(event)) in places:
            worded[places[place]].append((rank, event))
            taken.add((rank, id(event)))
    groups += [(category, members, said[category]) for category, members in worded.items()]
    others = [(rank, event) for rank, event in found if (rank, id(event)) not in taken]
    # with a rank out of GPU memory, a rank the launcher saw exit with an error of no signal, whose own error is
    # not in the inputs, failed alongside it: most likely of the same (each loads the same model, the same batch)
    alongside = [(rank, event) for rank, event in others if oom and tl.ranks[rank].outcome == "exited"
                 and not tl.ranks[rank].exit_signal]
    if alongside:
        others = [member for member in others if member not in alongside]
        groups[0] = (Category.RANK_OUT_OF_MEMORY, oom + alongside, groups[0][2])
    said_above = _said_above(tl, others, told)
    if said_above is not None:  # (what every rank that exited printed before the launcher's report of it)
        reading, line = said_above
        groups.append((reading.category, others, f"died after an error whose words say {reading.what}"))
        worded[reading.category], said[reading.category] = others, groups[-1][2]
        above_lines[reading.category] = [line]
        others = []
    if others:
        groups.append((Category.RANK_CRASHED, others, "died"))
    hypotheses = []
    for category, members, verb in groups:
        culprits = {rank for rank, _ in members}
        affected, cascade = _cascade(tl, culprits)
        own_lines = [event for _, event in members]
        summaries = []
        for rank, event in members:
            state = tl.ranks[rank]
            summaries.append(_describe(rank, state, event))
        hosts, seen_closing = _closed_on_its_host(tl, culprits)
        where = ", ".join(f"rank {r} on {tl.rank_host(r) or (hosts[0] + ' (most likely)' if hosts else 'an unknown host')}"
                          for r in sorted(culprits))
        title = f"{where} {verb}"
        exited = sorted(rank for rank, event in members if (rank, event) in alongside)
        if exited:
            ran_out = sorted(culprits - set(exited))
            where = ", ".join(f"rank {r} on {tl.rank_host(r) or 'an unknown host'}" for r in ran_out)
            title = (f"{where} {verb}; rank{'s' if len(exited) > 1 else ''} {fmt_ranks(exited)} exited with an "
                     "error at the same time (its own error is not in the inputs: most likely the same)")
        if affected:
            title += f"; ranks {fmt_ranks(affected)} then failed waiting for it or lost their connection to it"
        what = " ".join(summaries) + _order_note(tl, members)
        if affected:
            what += (f" The errors of ranks {fmt_ranks(affected)} (connection closed/reset by peer, timeouts) "
                     "came after and are the cascade, not the cause.")
        confidence = 0.9 if affected else 0.8
        if category in worded and verb == said[category]:
            confidence -= 0.15  # the rank is sure; what its error means is read from its words only
        if len(culprits) > max(2, len(tl.ranks) // 2):
            confidence -= 0.2  # everyone failing alike is more likely a shared cause than one culprit
        if all(tl.ranks[rank].outcome == "exited" and rank not in told for rank in culprits):
            # a launcher's record of a non-zero exit is all there is: the rank is a lead, its failure unread
            confidence = min(confidence, 0.55)
        evidence = evidence_of(above_lines.get(category, []), "the error printed before") + \
            evidence_of(own_lines, OWN_FAILURE)
        fix = None
        if category in worded and verb == said[category]:
            evidence += evidence_of([c for e in own_lines for c in continuation(tl, e)], "its message goes on", 3)
            if verb.endswith(DEVICE_ASSERT):
                asserted = _kernel_assertions(tl, own_lines)
                evidence += evidence_of(asserted, "the kernel's assertion", 2)
                what += "".join(f" {e.data['message'][:1].upper()}{e.data['message'][1:]}." for e in asserted[:1])
                fix = DEVICE_ASSERT_FIX
        evidence += evidence_of(cascade, "secondary: a peer was gone", MAX_CASCADE)
        if category is Category.SHM_EXHAUSTED and verb == SIGBUS_VERB:
            what += " " + SIGBUS_WHAT
            fix = SHM_FIX
        sharers = shared_gpu([e for r in culprits for e in tl.ranks[r].of(Kind.CUDA_OOM)]) \
            if category is Category.RANK_OUT_OF_MEMORY else []
        if sharers:
            title += f" (the message lists {len(sharers)} processes holding memory on that GPU)"
            what += " " + SHARED_GPU_WHAT.format(n=len(sharers))
            fix = SHARED_GPU_FIX
        if category is Category.RANK_KILLED:
            fix = ("Find who sent SIGKILL: the kernel OOM killer (`dmesg -T | grep -i -e oom -e killed` on "
                   f"{', '.join(tl.hosts_of(culprits)) or 'the host'}), the scheduler (time or memory limit), or a "
                   "user. Reduce host memory use (dataloader workers, pinned memory) if it was the OOM killer.")
        if seen_closing:
            what += (f" NCCL's service thread on {', '.join(hosts)} saw local rank "
                     f"{fmt_ranks(sorted(culprits))} go away at the same time: most likely the same process.")
            evidence += evidence_of(seen_closing, "its host saw it go", 2)
        hypotheses.append(hypothesis(tl, category, confidence, title, culprits=sorted(culprits), affected=affected,
                                     what=what, fix=fix, evidence=evidence, hosts=hosts or None))
    return hypotheses


_SAID_ABOVE = 4  # lines above a launcher's report of the ranks' exits in which the error they printed is looked for


def _said_above(tl: Timeline, others: list[tuple[int, Event]], told: set[int]) -> tuple[Reading, Event] | None:
    """Ranks a launcher reports exited with an error (two or more), none with an error of its own in the inputs, and just above
    the first report an error line of no rank whose words name a cause (the argument parser's ``train.py: error:
    unrecognized arguments: --gpus [2,3,4,6]``, printed by every trainer before PaddlePaddle's launcher aborted all
    eight): that error is what they exited of."""
    # (one rank's record under a line of no rank is that rank's cause, read by rules.joins)
    if len(others) < 2 or not all(tl.ranks[rank].outcome == "exited" and rank not in told for rank, _ in others):
        return None
    first = min((event for _, event in others), key=lambda e: (e.ref.source, e.ref.line))
    for line in reversed(just_above(tl, first, _SAID_ABOVE)):
        if line.origin.rank is not None:
            continue
        reading = read_as(str(line.data.get("message") or line.text))
        if reading is not None and reading.cause:
            return reading, line
    return None


DEVICE_ASSERT_FIX = ("Find the value out of range on that rank's data: the kernel's assertion says which check "
                     "failed (an index, a class label not below the number of classes, a token id not below the "
                     "vocabulary size). Rerun with CUDA_LAUNCH_BLOCKING=1 to raise it at the kernel that asserted; "
                     "the GPU and the network are not at fault.")


def _kernel_assertions(tl: Timeline, own: list[Event]) -> list[Event]:
    """The CUDA kernel's own ``Assertion `…` failed`` lines (parsers.gpu) of the rank or of no rank, in the files of
    its error and above it: which check the device-side assert was."""
    ranks = {e.origin.rank for e in own} | {None}
    first: dict[str, int] = {}
    for event in own:
        first[event.ref.source] = min(first.get(event.ref.source, event.ref.line), event.ref.line)
    return [e for e in tl.of(Kind.EXCEPTION) if e.data.get("source") == "cuda-kernel" and e.origin.rank in ranks
            and e.ref.source in first and e.ref.line <= first[e.ref.source]]


def _closed_on_its_host(tl: Timeline, culprits: set[int]) -> tuple[list[str], list[Event]]:
    """The host of culprits whose host the inputs do not give, from NCCL's ``[Service thread] Connection closed by
    localRank N`` on a host, when the inputs show one host only (a single node, or that node's paste) and N is the
    culprit's number: the same process, most likely."""
    if any(tl.rank_host(r) for r in culprits):
        return [], []
    closing = [e for e in tl.of(Kind.PEER_CLOSED)
               if e.data.get("service") and e.data.get("closed_local_rank") in culprits and e.origin.host]
    hosts = sorted({str(e.origin.host) for e in closing})
    every_host = {h for h in (tl.rank_host(r) for r in tl.ranks) if h} | writer_hosts(tl)
    if len(hosts) != 1 or len(every_host) != 1:
        return [], []
    return hosts, closing


def _cause_in_words(event: Event, tl: Timeline | None = None) -> Reading | None:
    """What an exception's message (with its frames) names as a cause in plain words (rules.phrases), when it
    is not a plain crash: ``HIP error: memory access fault``, ``Address already in use``. With the timeline,
    the error-looking lines the same writer printed right after it are read too (common.continuation)."""
    if event.kind is not Kind.EXCEPTION:
        return None
    # (its class's name too: ``MisconfigurationException: …`` says what its message may not)
    kind = str(event.data.get("type") or "")
    if folder_missing(event):
        return MISSING_FOLDER
    if unimplemented(event):
        return UNIMPLEMENTED
    words = [f"{kind}: " * bool(kind) + str(event.data.get("message") or event.text),
             *map(str, event.data.get("frames") or ())]
    if tl is not None:
        words += [e.text for e in continuation(tl, event)]
    reading = read_as(" ".join(words))
    return reading if reading is not None and reading.cause else None


def _place(event: Event) -> str:
    """Where an exception was raised, by file and function (``base.py in initialize_ub``), not line: ``""`` when it
    tells no frame, or only the interpreter's own (``<module>``)."""
    where = str(event.data.get("where") or "") if event.kind is Kind.EXCEPTION else ""
    found = re.match(r"(?P<file>[^:\s]+):\d+ in (?P<func>\S+)$", where)
    return f"{found['file']} in {found['func']}" if found and not found["func"].startswith("<") else ""


def _is_oom(state: RankState) -> bool:
    return state.has(Kind.CUDA_OOM)


def _bus_error(state: RankState) -> bool:
    """Ended by SIGBUS (a launcher's report or the process's own signal line) without an exception of its own."""
    return state.exit_signal == "SIGBUS" and not any(not is_comm_exception(e) for e in state.of(Kind.EXCEPTION))


def _killed(state: RankState) -> bool:
    """Killed by SIGKILL without an error of its own: the OOM killer, a container limit or the scheduler."""
    return state.exit_signal == "SIGKILL" and not any(not is_comm_exception(e) for e in state.of(Kind.EXCEPTION))


# a communication library's words for waiting, or for a peer gone: a victim's error, whatever the library
_VICTIM_WORDS = re.compile(r"tim(?:ed|e)[ _-]?out|\bclosed\b|reset by peer|broken pipe|abort|refused|remote process|"
                           r"\bpeer\b|failed to (?:recv|send)|read\(\) returned false|terminat|shut ?down|no route|"
                           r"unreachable|wait|stuck|\bhung\b|\bhang|heartbeat", re.I)


def _lone_library_error(tl: Timeline) -> list[Hypothesis]:
    """One rank failed with a communication library's error that names neither a wait nor a peer gone (a check of the
    call's tensors or types, an operation the backend does not support, an enforce of its own state, NCCL's WARN on
    its own setup), while every other rank that failed timed out or lost its peer: that rank failed first, in its own
    call, and the others waited for it. A lead: the library's error is the rank's own, its words say how."""
    waited = sorted(r for r, s in tl.ranks.items() if s.outcome in ("timed-out", "lost-peer"))
    odd = [r for r, s in tl.ranks.items() if s.outcome not in ("timed-out", "lost-peer", "ok", "silent", "terminated")]
    if len(odd) != 1 or not waited or tl.ranks[odd[0]].outcome != "failed":
        return []
    rank = odd[0]
    state = tl.ranks[rank]
    # (the errors no parser read: a monitor's report of its own, a watchdog stuck, is no library's error)
    own = [e for e in state.events if e.kind in UNREAD]
    # (a traceback's ``Traceback (most recent call last):`` header is no error's words: its exception below says them)
    own = [e for e in own if e.data.get("word") != "Traceback"] or own
    words = [str(e.data.get("message") or e.data.get("error") or e.text) for e in own]
    if not own or any(_VICTIM_WORDS.search(w) for w in words):
        return []
    first = own[0]
    host = tl.rank_host(rank)
    where = f"rank {rank}{' on ' + host if host else ''}"
    # (its words may name a cause: gloo's CUDA check with the code of out of memory)
    reading = _cause_in_words(first, tl) if first.kind is Kind.EXCEPTION else read_as(words[0])
    category = reading.category if reading is not None and reading.cause else Category.RANK_CRASHED
    said = f", whose words say {reading.what}" if category is not Category.RANK_CRASHED and reading else ""
    title = (f"{where} failed in its own call to the communication library ({words[0].strip()[:100]}){said}; "
             f"ranks {fmt_ranks(waited)} then timed out waiting for it or lost it")
    what = (f"Every other rank that failed timed out or lost its connection; {where} alone failed otherwise, with "
            "an error of the communication library that names no wait and no peer gone: a check of its own call "
            "(the tensors' types or shapes, an operation the backend does not support) or of its own state. It "
            "stopped there, and the others waited for it in the collective.")
    return [hypothesis(tl, category, 0.6, title, culprits=[rank], affected=waited, what=what,
                       evidence=evidence_of([first], OWN_FAILURE) + evidence_of(
                           [e for r in waited for e in tl.ranks[r].of(*TIMEOUT_KINDS, Kind.PEER_CLOSED)[:1]],
                           "secondary: waited for it", MAX_CASCADE),
                       fix="Fix the call its error names on that rank; the others' timeouts follow from it.")]


def _describe(rank: int, state: RankState, event: Event) -> str:
    if event.kind is Kind.EXCEPTION:
        text = f"Rank {rank} raised {str(event.data.get('type', 'an exception')).rsplit('.', 1)[-1]}"
        message = str(event.data.get("message", ""))
        if message:
            text += f": {message[:160]}"
        where = event.data.get("where")
        if where:
            text += f" (at {where})"
        return text + "."
    if event.kind is Kind.CUDA_OOM:
        tried, free = event.data.get("tried"), event.data.get("free")
        return f"Rank {rank} ran out of GPU memory" + (f" (tried to allocate {tried})." if tried else
                                                        f" ({free} of the device's memory left)." if free else ".")
    if event.kind is Kind.FATAL_SIGNAL:
        return f"Rank {rank} died of {event.data.get('signal') or event.data.get('what') or 'a fatal signal'}."
    if event.kind is Kind.STACK_DUMP and event.data.get("source") == "traceback-cut":
        raised = _RAISES.match(str((event.data.get("sources") or [""])[-1]).strip())
        return (f"Rank {rank}'s traceback, its error cut from the inputs, ends raising "
                f"{raised['name'] if raised else 'an exception'} (at {event.data.get('where')}): the same.")
    if state.outcome == "exited" and event.kind is Kind.WORKER_FAILED and event.data.get("source") == "mpi-abort":
        return (f"Rank {rank} called MPI_Abort (errorcode {state.exitcode}), and Open MPI killed every other process "
                "of the job; its own output says why (an error above it; some programs end their run this way, "
                "errorcode 0 at the end of training).")
    if state.outcome == "exited":
        how = (f"exited with code {state.exitcode}" if state.exitcode is not None else
               str(event.data.get("how") or "exited with a non-zero code") if event.kind is Kind.WORKER_FAILED else
               "exited with a non-zero code")
        return (f"Rank {rank} {how}; its own output (a traceback, an error message) is not in the inputs.")
    signal = state.exit_signal or "a signal"
    return (f"Rank {rank} was killed by {signal} (exit code {state.exitcode}) without an error of its own in the "
            "logs.")


# DistributedDataParallel's reducer, when a step left some parameters without a gradient on a rank
_UNUSED_WORDS = ("Expected to have finished reduction in the prior iteration", "did not receive grad for rank",
                 "did not get gradient in backwards pass")


def ddp_unused_parameters(tl: Timeline) -> list[Hypothesis]:
    """``RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one`` and
    ``Parameter indices which did not receive grad for rank N``: the program's own error on that rank (parameters
    that took no part in the loss), not the network; the rank comes from the reducer's line where the exception
    has none."""
    # (also the message quoted inside other words, where no exception's line could be read: a paste in markdown
    # emphasis, ``_"RuntimeError: Expected to have finished reduction …``)
    raised: list[Event] = []
    lines: set[Ref] = set()
    for event in tl.of(Kind.EXCEPTION, Kind.ERROR_LINE):  # (one event a line: its exception's, else its error line's)
        if event.ref not in lines and any(w in str(event.data.get("message") or event.text) for w in _UNUSED_WORDS):
            raised.append(event)
            lines.add(event.ref)
    named = tl.of(Kind.DDP_UNUSED_PARAMETERS)
    if not raised and not named:
        return []
    ranks = sorted({int(e.data["rank"]) for e in named} | set(attribute(raised, tl).ranks))
    who = f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}" if ranks else "a rank"
    title = (f"{who} failed in DistributedDataParallel's reducer: some parameters got no gradient in a step "
             "(find_unused_parameters)")
    what = ("DDP expects every parameter to receive a gradient in every step. On this rank some did not (a branch "
            "of the model that this batch did not take, frozen or skipped layers, an output left out of the loss), "
            "so the reduction of the previous step never finished and the next step raised. It is the program's "
            "error on that rank; the other ranks' timeouts or lost connections follow from it.")
    fix = ("Pass find_unused_parameters=True to DistributedDataParallel (it costs a graph traversal per step), or "
           "make every parameter take part in the loss on every rank and step; TORCH_DISTRIBUTED_DEBUG=DETAIL "
           "names the parameters.")
    return [hypothesis(tl, Category.RANK_CRASHED, 0.85 if ranks else 0.7, title, culprits=ranks, what=what, fix=fix,
                       evidence=evidence_of(raised[:2] + named[:4], "DDP's reducer"))]
