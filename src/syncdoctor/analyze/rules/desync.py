"""Ranks that called different collectives at the same sequence number (a program bug), told apart from
a straggler (same collective, one rank late). Pure: no I/O.

Sources: Flight Recorder entries compared across ranks, watchdog timeouts with different ``OpType`` or
``NumelIn`` at the same ``SeqNum``, ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` fingerprints, gloo's size check
(``Received data size doesn't match expected size``: the rank that detects it is not the culprit; a rank
that shows no error of its own is the likely one), the call sites in the timeout tracebacks (gloo raises
in the calling thread, so a rank waiting in a different collective shows a different place in the
program), and watch events.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from syncdoctor.analyze.chains import chains
from syncdoctor.analyze.fr_compare import compare_mismatches
from syncdoctor.analyze.model import Category, Event, Hypothesis, Kind
from syncdoctor.analyze.rules.common import MAX_CASCADE, attribute, evidence_of, fmt_ranks, hypothesis
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, Timeline, is_comm_exception
from syncdoctor.watch.waitgraph import describe_chain

__all__ = ["collective_desync", "diverged_groups"]


def _minority(claims: dict[int, str]) -> tuple[list[int], str]:
    counts = Counter(claims.values())
    (majority, top), *rest = counts.most_common()
    if rest and rest[0][1] == top:
        return sorted(claims), majority
    return sorted(rank for rank, sig in claims.items() if sig != majority), majority


def _desync_title(prefix: str, claims: dict[int, str], culprits: list[int], majority: str) -> str:
    """``prefix: rank 3 ran X while the others ran Y``, or, with no majority (two ranks, or an even split),
    what each side ran."""
    if len(culprits) == len(claims):
        sides: dict[str, list[int]] = {}
        for rank, claim in sorted(claims.items()):
            sides.setdefault(claim, []).append(rank)
        shown = "; ".join(f"rank{'s' if len(r) > 1 else ''} {fmt_ranks(r)} ran {c}" for c, r in sides.items())
        return f"{prefix}: {shown} (no majority: either side may be the odd one)"
    return (f"{prefix}: rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} ran "
            f"{', '.join(sorted({claims[r] for r in culprits}))} while the others ran {majority}")


def _from_fr(tl: Timeline) -> list[Hypothesis]:
    out = []
    for mismatch in compare_mismatches(tl.dumps):
        odd = ", ".join(f"rank {r}: {mismatch.signatures[r]}" for r in mismatch.culprits)
        title = (f"collective desync at #{mismatch.seq} of group {mismatch.pg_id}: {odd}; the others: "
                 f"{mismatch.majority}")
        status = [e for e in tl.of(Kind.FR_STATUS) if e.origin.rank in mismatch.signatures]
        culprit_lines = [e for e in status if e.origin.rank in mismatch.culprits]
        out.append(hypothesis(
            tl, Category.COLLECTIVE_DESYNC, 0.92, title, culprits=list(mismatch.culprits),
            affected=[r for r in mismatch.signatures if r not in mismatch.culprits],
            what=(f"Flight Recorder entries at sequence number {mismatch.seq}: " +
                  "; ".join(f"rank {r} {s}" for r, s in sorted(mismatch.signatures.items())) +
                  ". A straggler would show the same collective, late; these ranks issued different ones."),
            evidence=evidence_of(culprit_lines, f"dump: {odd}") + evidence_of(
                [e for e in status if e not in culprit_lines], f"dump: {mismatch.majority}", MAX_CASCADE),
        ))
    return out


def _from_watchdog(tl: Timeline) -> list[Hypothesis]:
    by_seq: dict[tuple[str, int], dict[int, Event]] = defaultdict(dict)
    timeouts = tl.of(Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT)
    numbered = any(e.seq is not None for e in timeouts)
    for event in timeouts:
        if event.op and _p2p(event.op):
            continue  # a send on one rank and the recv on its peer at one number are the pair, not a desync
        if event.origin.rank is not None and event.op and (event.seq is not None or not numbered):
            # releases before SeqNum was printed (<= 1.10): the last collective of each rank is compared
            by_seq[(event.group or "0", event.seq if event.seq is not None else -1)].setdefault(event.origin.rank, event)
    out = []
    for (_group, seq), events in sorted(by_seq.items()):
        claims = {r: f"{e.op} numel={e.data.get('numel_in', '?')}" for r, e in events.items()}
        if len(set(claims.values())) < 2:
            continue
        culprits, majority = _minority(claims)
        at = f"at SeqNum {seq}" if seq >= 0 else "in the last collective"
        title = _desync_title(f"collective desync {at}", claims, culprits, majority)
        out.append(hypothesis(
            tl, Category.COLLECTIVE_DESYNC, 0.9, title, culprits=culprits,
            affected=[r for r in events if r not in culprits],
            what="The watchdog timeouts name different operations or sizes at the same sequence number.",
            evidence=evidence_of([events[r] for r in culprits], "the odd one out")
            + evidence_of([e for r, e in events.items() if r not in culprits], f"ran {majority}", MAX_CASCADE),
        ))
    return out


def _from_detail(tl: Timeline) -> list[Hypothesis]:
    claims: dict[int, str] = {}
    events = [e for e in tl.of(Kind.COLLECTIVE_MISMATCH) if e.data.get("source") == "detail"]
    for event in events:
        for side in event.data.get("sides") or []:
            if isinstance(side, dict) and isinstance(side.get("rank"), int):
                what = " ".join(str(part) for part in (side.get("op"), side.get("shape")) if part)
                claims.setdefault(side["rank"], what or "a collective the line does not show")
    if len(set(claims.values())) < 2:
        if not events:
            return []
        # a paste cut after the first fingerprint: PyTorch's own check says the ranks disagree
        shown = ", ".join(f"rank {r} ran {c}" for r, c in sorted(claims.items()))
        title = "collective desync: PyTorch's DETAIL check found ranks running different collectives" + \
                (f" ({shown})" if shown else "")
        return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.8, title,
                           what="TORCH_DISTRIBUTED_DEBUG=DETAIL compared the collectives of the ranks and found them "
                                "different; the other side of the comparison is not in the inputs.",
                           evidence=evidence_of(events, "DETAIL fingerprint mismatch", MAX_CASCADE))]
    culprits, majority = _minority(claims)
    title = _desync_title("collective desync (DETAIL check)", claims, culprits, majority)
    return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.9, title, culprits=culprits,
                       affected=[r for r in claims if r not in culprits],
                       what="TORCH_DISTRIBUTED_DEBUG=DETAIL compared the collective fingerprints of all ranks.",
                       evidence=evidence_of(events, "DETAIL fingerprint mismatch", MAX_CASCADE))]


def _from_detail_trace(tl: Timeline) -> list[Hypothesis]:
    """DETAIL's trace of the collectives each rank was about to run (``[Rank 2] Running collective:
    CollectiveFingerPrint(SequenceNumber=38, OpType=ALLREDUCE, TensorShape=[77, 1], …)``, INFO lines, no error): at
    the first sequence number two or more ranks traced where they differ (the operation, the shapes, the types), the
    ranks ran different collectives; the odd ones out are the culprits. Where PyTorch's own check printed its
    mismatch, that reading is the one (it names both sides)."""
    if any(e.data.get("source") == "detail" for e in tl.of(Kind.COLLECTIVE_MISMATCH)):
        return []
    by_seq: dict[int, dict[int, Event]] = defaultdict(dict)
    several: set[int] = set()  # (sequence numbers a rank traced twice, differently: its process groups' own numbers)
    for event in tl.of(Kind.COLLECTIVE_TRACE):
        if event.origin.rank is not None and event.seq is not None:
            held = by_seq[event.seq].setdefault(event.origin.rank, event)
            if _traced(held) != _traced(event):
                several.add(event.seq)
    for seq, events in sorted(by_seq.items()):
        claims = {rank: _traced(e) for rank, e in events.items()}
        if seq in several or len(events) < 2 or len(set(claims.values())) < 2:
            continue
        culprits, majority = _minority(claims)
        title = _desync_title(f"collective desync at sequence number {seq} (DETAIL's trace of each collective)",
                              claims, culprits, majority)
        return [hypothesis(
            tl, Category.COLLECTIVE_DESYNC, 0.85, title, culprits=culprits,
            affected=[r for r in events if r not in culprits],
            what=("TORCH_DISTRIBUTED_DEBUG=DETAIL traced the collective each rank was about to run: at the same "
                  "sequence number the ranks ran different ones (another operation, other shapes or types), so they "
                  "wait on each other or exchange the wrong data. The traces of ranks missing from the inputs could "
                  "change which side is the odd one."),
            evidence=evidence_of([events[r] for r in culprits], "the odd one out")
            + evidence_of([e for r, e in events.items() if r not in culprits], f"ran {majority}", MAX_CASCADE))]
    return []


def _traced(event: Event) -> str:
    return " ".join(part for part in (event.op or "", str(event.data.get("shape") or ""),
                                      str(event.data.get("dtypes") or "")) if part)


def _from_model_check(tl: Timeline) -> list[Hypothesis]:
    """The check that runs before any gradient found the ranks' models different: DDP's comparison with rank 0's
    parameters, DeepSpeed ZeRO-3's of the parameters each rank gathers. Several ranks that each found rank 0
    different: rank 0 is the odd one; one rank's report alone does not say which side is."""
    events = [e for e in tl.of(Kind.COLLECTIVE_MISMATCH) if e.data.get("source") == "model-check"]
    if not events:
        return []
    reporters = sorted({e.origin.rank for e in events if e.origin.rank is not None})
    compared = sorted({int(e.data["against"]) for e in events if isinstance(e.data.get("against"), int)})
    checks = sorted({str(e.data.get("check")) for e in events})
    counted = [(int(side["rank"]), int(side["params"])) for e in events for side in e.data.get("sides") or []
               if isinstance(side, dict) and isinstance(side.get("params"), int)]
    shown = "; ".join(f"rank {r}: {n} parameters" for r, n in sorted(set(counted)))[:200]
    others = [side["params"] for e in events for side in e.data.get("sides") or []
              if isinstance(side, dict) and side.get("rank") == e.data.get("against")]
    if others and not any(others) and tl.of(*TIMEOUT_KINDS):
        # every compared rank "has 0 params": the check's own all-gather timed out (its watchdog's lines) and DDP read
        # the zeros of a buffer never filled; the timeout is the failure, read by its own rules
        return []
    reporting = [r for r in reporters if r not in compared]
    culprits = compared if len(compared) == 1 and len(reporting) >= 2 else []
    ranks = sorted(set(reporters) | set(compared))
    title = (f"the ranks' models differ: {' and '.join(checks)}'s check found "
             + (f"rank {culprits[0]}'s model different from those of ranks {fmt_ranks(reporting)}" if culprits else
                f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)} disagreeing" if ranks else "them disagreeing")
             + (f" ({shown})" if shown else ""))
    what = ("Before any gradient, DDP compares every rank's parameters (their number and sizes) with rank 0's, and "
            "DeepSpeed's ZeRO-3 compares the parameters each rank is about to gather: the ranks built or ran "
            "different models, and the collectives that follow would differ in size or number (a desync). Common "
            "causes: a model whose layers depend on the rank or on local data (a branch, experts routed differently "
            "without ZeRO-3's leaf modules), a checkpoint or adapter loaded on some ranks only, different code or "
            "configuration on some nodes.")
    fix = ("Build the same model on every rank: the same code, configuration and checkpoint on every node; no layer "
           "created or skipped on some ranks; with ZeRO-3 and mixture-of-experts, mark the MoE block as a leaf "
           "module (deepspeed.utils.set_z3_leaf_modules).")
    return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.85, title, culprits=culprits,
                       affected=[r for r in reporting if r not in culprits], what=what, fix=fix,
                       evidence=evidence_of(events, "the check found the models different", MAX_CASCADE))]


def _from_size_check(tl: Timeline) -> list[Hypothesis]:
    detections = [e for e in tl.of(Kind.COLLECTIVE_MISMATCH)
                  if e.data.get("source") in ("gloo-size", "shape-check", "nccl-truncated", "nccl-ib-size",
                                              "nccl-check", "hccl-check")]
    if not detections:
        return []
    detectors = sorted({e.origin.rank for e in detections if e.origin.rank is not None})
    quiet = sorted(r for r, s in tl.ranks.items() if s.outcome in ("silent", "terminated") and r not in detectors)
    sizes = detections[0].data
    who = (f"rank{'s' if len(detectors) > 1 else ''} {fmt_ranks(detectors)}" if detectors else
           attribute(detections, tl).text or "a process")
    peers = sorted({str(e.data["peer_addr"]) for e in detections if e.data.get("peer_addr")})
    near = sorted({int(e.data["near_rank"]) for e in detections if e.data.get("near_rank") is not None})
    own_check = {str(e.data.get("source")) for e in detections} in ({"nccl-check"}, {"hccl-check"})
    if own_check:
        library = "HCCL" if detections[0].data.get("source") == "hccl-check" else "NCCL"
        what = (f"{library}'s own check found ranks calling different collectives (kind, size, type or root) at the "
                "same point" + (f", at and around rank {fmt_ranks(near)}" if near else "") + "")
        sides = [e for e in detections if e.data.get("local")]
        what += "".join(f" ({e.data['what']}: {e.data['local']} here, {e.data['remote']} on the peer)" for e in sides[:2])
        what += "."
    else:
        what = (f"{who[:1].upper()}{who[1:]} received a message of another size than the collective it was in"
                + (f" from {', '.join(peers)}" if peers else ""))
        if "received_bytes" in sizes:
            what += f" ({sizes['received_bytes']} bytes instead of {sizes['expected_bytes']})"
        elif "sent_bytes" in sizes:  # NCCL's IB transport checks on the sending side
            what = (f"{who[:1].upper()}{who[1:]} had more to send than its peer"
                    + (f" ({', '.join(peers)})" if peers else "")
                    + f" posted to receive ({sizes['sent_bytes']} bytes against {sizes['posted_bytes']})")
        what += ": its peer was in a different collective."
    if quiet:
        what += (f" Rank{'s' if len(quiet) > 1 else ''} {fmt_ranks(quiet)} logged no error of its own, so it most "
                 "likely skipped or added a collective and moved on to the next one.")
        title = (f"collective desync: rank{'s' if len(quiet) > 1 else ''} {fmt_ranks(quiet)} most likely issued a "
                 f"different collective; rank {fmt_ranks(detectors)} detected the size mismatch")
    else:
        label = "mismatched collective" if own_check else "size mismatch"
        title = (f"collective desync detected by {who} ({label}"
                 + (f" with {', '.join(peers)}" if peers else "") + (f"; NCCL points at rank {fmt_ranks(near)}"
                                                                     if near else "") + "); the culprit is not named")
    evidence = evidence_of(detections, "size check failed on the receiving rank")
    for rank in quiet:
        evidence += evidence_of(tl.ranks[rank].of(Kind.WORKER_FAILED, Kind.WORKER_TERMINATED)[:1],
                                "no error of its own")
    if any(e.data.get("source") in ("nccl-truncated", "nccl-ib-size") for e in detections):
        what += (" (NCCL prints this when the ranks call collectives of different sizes or kinds, and also when "
                 "hosts run different NCCL versions.)")
    return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.8 if quiet else 0.6, title, culprits=quiet,
                       hosts=tl.hosts_of(quiet) if quiet else (),
                       affected=[r for r in tl.ranks if r not in quiet], what=what, evidence=evidence)]


def _from_call_sites(tl: Timeline) -> list[Hypothesis]:
    """Ranks stuck in a collective called from a different place than the others (gloo raises in the caller's
    thread, so each rank's traceback shows which collective it was waiting in)."""
    sites: dict[int, Event] = {}
    for rank, state in tl.ranks.items():
        for event in state.of(Kind.EXCEPTION):
            if is_comm_exception(event) and event.data.get("call_site"):
                sites[rank] = event
                break
    claims = {rank: str(event.data["call_site"]) for rank, event in sites.items()}
    if len(claims) < 3 or len(set(claims.values())) < 2:
        return []
    culprits, majority = _minority(claims)
    if len(culprits) >= len(claims) or len(culprits) > len(claims) // 2:
        return []
    odd = sorted({claims[r] for r in culprits})
    title = (f"collective desync: rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} waited in another "
             f"collective ({'; '.join(odd)}) than the others ({majority})")
    what = (f"Every rank was blocked in a collective, but not the same one: ranks {fmt_ranks(claims.keys() - culprits)} "
            f"at {majority}, rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} at {'; '.join(odd)}. "
            "Collectives pair up by order, so the ranks waited for each other in different operations until the "
            "timeout: a skipped, extra or different collective on the odd rank(s).")
    confidence = 0.75
    # A rank that never arrived (no error of its own, or the root of the dumps' wait-for graph) explains the
    # other call sites better: with several groups (tensor x data parallel, pipeline stages), a rank that
    # waits in its own group for that rank is blocked at another place of the program than its peers.
    graph = chains(tl)
    absent = sorted(r for r, s in tl.ranks.items() if s.outcome in ("silent", "terminated") and r not in claims)
    absent += sorted(r for root in graph.roots if not root.cycle for r in root.ranks if r not in absent)
    if absent:
        confidence = 0.25
        what += (f" But rank{'s' if len(absent) > 1 else ''} {fmt_ranks(absent)} never arrived at all: a rank "
                 "waiting in another group (or in a send or receive) for it is blocked at another place too, "
                 "without any desync.")
    elif _cut_off(tl, culprits):
        # the odd ranks are those of the hosts that alone lost the store: a link cut mid-step leaves them in the
        # step's previous collective while the others finished it, a place of its own without any desync
        confidence = 0.6
        what += (" But the odd ranks' hosts alone could not reach the rendezvous store either: a host cut off in the "
                 "middle of a step stops in another collective than the others, without any desync.")
    return [hypothesis(tl, Category.COLLECTIVE_DESYNC, confidence, title, culprits=culprits,
                       affected=[r for r in claims if r not in culprits], what=what,
                       evidence=evidence_of([sites[r] for r in culprits], "waiting at another call site")
                       + evidence_of([sites[r] for r in claims if r not in culprits], f"waiting at {majority}",
                                     MAX_CASCADE))]


def _cut_off(tl: Timeline, ranks: set[int] | list[int]) -> bool:
    """The hosts of ``ranks`` are the only ones whose store connections failed (timed out or refused), and some
    other host's were fine: those hosts lost the network (the partition rule's reading)."""
    lost = {e.origin.host for e in tl.of(Kind.STORE_ERROR) if e.data.get("what") in ("socket-timeout", "connect")
            and e.origin.host and not e.data.get("at_shutdown")}
    hosts = {tl.rank_host(r) for r in ranks}
    return bool(lost) and None not in hosts and hosts == lost and len(lost) < len(tl.hosts)


def _from_watch(tl: Timeline) -> list[Hypothesis]:
    out = []
    for event in tl.of(Kind.WATCH):
        kind = str(event.data.get("kind", "")).lower()
        ranks = list(event.data.get("ranks") or [])
        if ("mismatch" in kind or "drift" in kind or "desync" in kind) and ranks and \
                event.data.get("status") not in ("resolved", "info"):
            title = f"syncdoctor watch: {kind.replace('-', ' ')} on rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}"
            out.append(hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.85 if "mismatch" in kind else 0.7, title,
                                  culprits=ranks, affected=list(event.data.get("waiting_ranks") or []),
                                  what=str(event.data.get("message") or "The live watcher saw different collectives."),
                                  evidence=evidence_of([event], "watch event")))
    return out


def _from_cycles(tl: Timeline) -> list[Hypothesis]:
    """Ranks that waited for each other (the dumps' wait-for graph has a cycle): a deadlock of the program.
    Named: the ranks that waited for the most others of the cycle, the ones that took the other path."""
    out = []
    for root in chains(tl).roots:
        if not root.cycle:
            continue
        members = set(root.ranks)
        waits_for: dict[int, set[int]] = {r: set() for r in members}
        for wait in root.direct:
            for rank in set(wait.waiters) & members:
                waits_for[rank] |= set(wait.blockers) & members
        counts = {r: len(b) for r, b in waits_for.items()}
        top, low = max(counts.values()), min(counts.values())
        culprits = sorted(r for r in members if counts[r] == top) if top > low else sorted(members)
        chain = describe_chain(root, lambda ranks: f"rank{'s' if len(set(ranks)) > 1 else ''} {fmt_ranks(ranks)}")
        title = (f"deadlock (Flight Recorder): rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} "
                 f"waited in a collective the others had not reached while they waited for "
                 f"{'it' if len(culprits) == 1 else 'them'} in another one")
        what = (f"Who waited for whom, from the dumps: {chain}. These ranks wait for each other: no rank is late; "
                "the program took different paths on different ranks (groups called in different orders, or a "
                "skipped collective).")
        evidence = []
        for rank in culprits:
            evidence += evidence_of([e for e in tl.of(Kind.FR_STATUS) if e.origin.rank == rank][:2],
                                    "waiting for the others")
        evidence += evidence_of([e for e in tl.of(Kind.FR_STATUS) if e.origin.rank in members - set(culprits)],
                                "waiting for it", MAX_CASCADE)
        out.append(hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.9, title, culprits=culprits,
                              affected=sorted((members | set(root.affected)) - set(culprits)), what=what,
                              evidence=evidence))
    return out


def _after_training(tl: Timeline) -> list[Hypothesis]:
    """A rank timed out in a collective after its training loop had ended (Lightning's `Trainer.fit` stopped),
    and no other rank timed out: end-of-run code that runs on some ranks
    only (a checkpoint save with a barrier inside, a last metric, a closing barrier under ``if rank == 0``)
    issued a collective the others never issued; they finished and left. The rank stuck in it is the one
    whose program took the extra step."""
    done = tl.of(Kind.TRAINING_DONE)
    timeouts = [e for e in tl.of(*TIMEOUT_KINDS) if e.origin.rank is not None]
    if not done or not timeouts or len({e.origin.rank for e in timeouts}) != 1:
        return []
    after = [t for t in timeouts if any(d.ref.source == t.ref.source and d.ref.line < t.ref.line
                                        and d.origin.rank in (None, t.origin.rank) for d in done)]
    if not after:
        return []
    rank = int(after[0].origin.rank)  # type: ignore[arg-type]
    first = after[0]
    what_op = f"{first.op} " if first.op else ""
    size = f" ({first.data['numel_in']} elements)" if first.data.get("numel_in") is not None else ""
    title = (f"rank {rank} called a collective after training had ended ({what_op.strip() or 'a collective'}"
             f"{size}) that no other rank called: end-of-run code that runs on some ranks only")
    marks = [d for d in done if d.ref.source == first.ref.source and d.ref.line < first.ref.line]
    what = (f"The training loop ended ({marks[-1].data.get('why', 'training completed')}), then rank {rank} waited in "
            f"{what_op}collective until the timeout, and no other rank reports one. After the loop, the ranks run "
            "end-of-run code; a collective inside a branch that only some ranks take (a checkpoint save with a "
            "barrier, a metric all_reduce, logging under `if rank == 0`) has no partner: the others finished and "
            "left. If the other ranks' logs show them waiting too, they are in a different collective: compare "
            "their last collectives.")
    fix = ("Make every rank call the same collectives at the end of the run: move the collective out of the "
           "rank-dependent branch (call it on all ranks, let only rank 0 write), or remove the barrier from code "
           "that only rank 0 runs.")
    return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.5, title, culprits=[rank], what=what, fix=fix,
                       evidence=evidence_of(marks[-1:], "training loop ended") + evidence_of(after[:1],
                                                                                           "then timed out"))]


_P2P_OPS = ("send", "recv", "gather_into", "coalesced")  # a p2p op completes without the group's other members


def _p2p(op: str) -> bool:
    return any(w in op.lower() for w in _P2P_OPS)


def diverged_groups(tl: Timeline) -> dict[str, dict[int, Event]]:
    """Groups whose ranks timed out at different sequence numbers, each inside its own collective: a collective
    completes on every member or on none, so the rank ahead could not have passed the lower number unless the
    two ranks numbered different calls (one called collectives the other did not). Point-to-point operations
    are left out: they complete between two members. The default group only (below)."""
    first: dict[str, dict[int, Event]] = defaultdict(dict)
    timeouts = tl.of(Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT)
    # a line without its group (before 2.2) is the default group's only while no rank times out at several
    # numbers: a rank that does waits in several groups, and the lines do not say which is which
    numbers: dict[int, set[int]] = defaultdict(set)
    for event in timeouts:
        if event.origin.rank is not None and event.seq is not None and event.group is None:
            numbers[event.origin.rank].add(event.seq)
    unsure = any(len(seqs) > 1 for seqs in numbers.values())
    for event in timeouts:
        if event.group is None and unsure:
            continue
        rank = event.origin.rank
        if rank is None or event.seq is None or not event.op or _p2p(event.op):
            continue
        state = tl.ranks.get(rank)
        if state is not None and state.completed.get(event.group or "0", -1) >= event.seq:
            continue  # its status line says that one completed: not where it waits
        kept = first[event.group or "0"].get(rank)
        if kept is None or event.seq < (kept.seq or 0):
            first[event.group or "0"][rank] = event
    # only the default group: another group's id is a per-process count, the same id on two ranks may name two
    # groups (each tensor-parallel pair's), whose numbers need not agree
    return {group: per_rank for group, per_rank in first.items()
            if group == "0" and len({e.seq for e in per_rank.values()}) > 1}


def _from_diverged(tl: Timeline) -> list[Hypothesis]:
    out = []
    for group, per_rank in sorted(diverged_groups(tl).items()):
        seqs = sorted({e.seq for e in per_rank.values() if e.seq is not None})
        at = "; ".join(f"{'ranks' if len(rs) > 1 else 'rank'} {fmt_ranks(rs)} in #{seq}" for seq in seqs
                       if (rs := sorted(r for r, e in per_rank.items() if e.seq == seq)))
        title = (f"collective desync in group {group}: the ranks timed out in different collectives ({at}), each "
                 "waiting for calls the other never made")
        what = (f"Every rank here timed out inside a collective of group {group}, at different sequence numbers. A "
                "collective completes on all its members or on none, so a rank could not have passed a number at "
                "which another member still waits: the ranks numbered different calls. One of them called "
                "collectives the other did not (a hook, a metric or a logging call on some ranks only, a branch "
                "that depends on the data), and from there each waits in a call the other never makes.")
        fix = ("Find the collective that only some ranks call between the last one all completed and these "
               "(TORCH_DISTRIBUTED_DEBUG=DETAIL checks each call's op and shapes across ranks and names the first "
               "that differs; Flight Recorder dumps list each rank's calls). Make every rank call it, or none.")
        events = [per_rank[r] for r in sorted(per_rank)]
        out.append(hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.7, title, affected=sorted(per_rank), what=what,
                              fix=fix, evidence=evidence_of(events, "timed out in its own collective", MAX_CASCADE)))
    return out


def collective_desync(tl: Timeline) -> list[Hypothesis]:
    return (_from_fr(tl) + _from_watchdog(tl) + _from_diverged(tl) + _from_detail(tl) + _from_detail_trace(tl)
            + _from_size_check(tl)
            + _from_model_check(tl) + _from_call_sites(tl)
            + _from_cycles(tl) + _from_watch(tl) + _after_training(tl) + _from_coll_trace(tl)
            + _from_coll_order(tl))


def _process(event: Event) -> tuple[object, ...]:
    origin = event.origin
    return (event.ref.source, origin.host, origin.pid, origin.rank, origin.device)


def _call_words(signature: frozenset[tuple[str | None, int, int]]) -> str:
    return " and ".join(f"{op} of {count}" for op, count, _ in sorted(signature, key=str))


def _from_coll_trace(tl: Timeline) -> list[Hypothesis]:
    """NCCL's COLL trace (``AllReduce: opCount 28c … count N … [nranks=4]``): processes that made a different call
    (another collective, another count or type) with the same opCount on a communicator of the same size. Only
    processes with one communicator of that size in the trace are compared (a process's tensor- and data-parallel
    groups may have the same size, and their calls differ by design). The odd ones out, where most agree, are the
    culprits."""
    calls = tl.of(Kind.NCCL_COLL)
    if len(calls) < 2:
        return []
    comms: dict[tuple[object, ...], dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for event in calls:
        comms[_process(event)][int(event.data["nranks"])].add(str(event.data["comm"]))
    made: dict[tuple[int, int], dict[tuple[object, ...], set[tuple[str | None, int, int]]]] = defaultdict(dict)
    first: dict[tuple[object, ...], Event] = {}
    for event in calls:
        process, size = _process(event), int(event.data["nranks"])
        if event.seq is None or len(comms[process][size]) != 1:
            continue
        made[(size, event.seq)].setdefault(process, set()).add(
            (event.op, int(event.data["count"]), int(event.data["datatype"])))
        first.setdefault(process, event)
    for (size, seq), by_process in sorted(made.items(), key=lambda item: item[0][1]):
        signatures = Counter(frozenset(calls_made) for calls_made in by_process.values())
        if len(by_process) < 2 or len(signatures) < 2:
            continue
        common, votes = signatures.most_common(1)[0]
        majority = votes * 2 > len(by_process)
        odd = [p for p, made_by in by_process.items() if majority and frozenset(made_by) != common]
        where = attribute([first[p] for p in odd], tl) if odd else None
        shown = [e for e in calls if e.seq == seq and _process(e) in by_process]
        described = "; ".join(sorted({f"{attribute([first[p]], tl).text or 'a process'}: "
                                      f"{_call_words(frozenset(made_by))}" for p, made_by in by_process.items()}))[:300]
        title = (f"collective desync in NCCL's COLL trace: call {seq:x} of a communicator of {size} ranks differs "
                 f"between processes ({described})")
        what = ("NCCL's trace of each call shows processes of communicators of the same size making different calls "
                "with the same sequence number (opCount): another collective, or another element count or data type. "
                "The ranks took different code paths (a condition on the rank or on local data), and each now "
                "waits for a call the others never make. "
                + ("Most processes agree; the others are the odd ones out." if odd else
                   "No majority says which side is the odd one out."))
        return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.8 if odd else 0.7, title, what=what,
                           where=where, evidence=evidence_of(shown, "its call with that opCount", MAX_CASCADE),
                           fix="Make every rank issue the same collectives in the same order with the same sizes: "
                               "find the branch that differs (TORCH_DISTRIBUTED_DEBUG=DETAIL checks each call).")]
    return []


def _from_coll_order(tl: Timeline) -> list[Hypothesis]:
    """NCCL's COLL trace: two processes made the same two calls on two of their communicators in opposite orders.
    A call is known across processes by what it does (collective, count, data type, communicator size and its
    opCount); only calls each process made once are matched. NCCL needs calls on communicators that share a device
    issued in one order on every rank, or each rank's kernel waits for a peer whose kernel waits behind another:
    a hang with no error. Neither process is the odd one out."""
    calls = sorted(tl.of(Kind.NCCL_COLL), key=lambda event: (event.ref.source, event.ref.line))
    if len(calls) < 4:
        return []
    order: dict[tuple[object, ...], list[Event]] = defaultdict(list)
    for event in calls:
        if event.seq is not None:
            order[_process(event)].append(event)

    def signature(event: Event) -> tuple[object, ...]:
        return (event.op, event.data["count"], event.data["datatype"], event.data["nranks"], event.seq)

    placed: dict[tuple[object, ...], dict[tuple[object, ...], tuple[int, Event]]] = {}
    for process, made in order.items():
        counts = Counter(signature(event) for event in made)
        placed[process] = {signature(event): (at, event) for at, event in enumerate(made)
                           if counts[signature(event)] == 1}
    # each process against one reference only (linear in the processes): two processes that order a pair
    # differently cannot both order it as the reference does, so a reversal of any pair the reference made is found
    processes = sorted(placed, key=str)
    if not processes:
        return []
    one = placed[processes[0]]
    order_of_one = sorted(one, key=lambda key: one[key][0])
    for second_process in processes[1:]:
        other = placed[second_process]
        shared = [key for key in order_of_one if key in other]
        for a_index, a in enumerate(shared):
            for b in shared[a_index + 1:]:
                (_, a1), (_, b1) = one[a], one[b]
                if a1.data["comm"] == b1.data["comm"] or other[a][0] < other[b][0]:
                    continue
                if other[a][1].data["comm"] == other[b][1].data["comm"]:
                    continue
                return [_order_reversed(tl, (a1, b1), (other[b][1], other[a][1]))]
    return []


def _order_reversed(tl: Timeline, one: tuple[Event, Event], other: tuple[Event, Event]) -> Hypothesis:
    def words(pair: tuple[Event, Event]) -> str:
        who = attribute([pair[0]], tl).text or pair[0].ref.source
        return f"{who}: {pair[0].op} of {pair[0].data['count']}, then {pair[1].op} of {pair[1].data['count']}"

    title = ("collective order differs between processes in NCCL's COLL trace: the same two calls on two "
             f"communicators, in opposite orders ({words(one)}; {words(other)})")
    what = ("NCCL's trace of each call shows two processes making the same two calls (same collective, count, data "
            "type and opCount) on two different communicators, in opposite orders. Calls on communicators that "
            "share a GPU must be issued in the same order on every rank: each process's first kernel waits for a "
            "peer whose matching kernel is queued behind the other call, and both wait with no error. Neither "
            "process is the odd one out: the program issues the groups' calls in an order that depends on the "
            "rank (a loop over groups in a rank-dependent order, or groups served by threads).")
    fix = ("Issue collectives of different process groups in one order on every rank (iterate groups in a fixed "
           "order; do not drive groups from threads without ordering them), or give each group its own stream "
           "and let neither wait on the other.")
    return hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.6, title, what=what, fix=fix,
                      evidence=evidence_of([*one, *other], "its calls in this order", MAX_CASCADE))

