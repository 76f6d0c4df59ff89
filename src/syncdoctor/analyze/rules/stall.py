"""Every rank of a group entered collective S and S never completed: the transport or a GPU is stuck, not
a rank (A020). Pure: no I/O.

Claimed only on firm evidence, otherwise the timeout stays unexplained (A019):

* the members of the group are known: the Flight Recorder ``pg_config`` ranks of that group, or, for the
  default group, the world size the inputs state (NCCL ``nranks``, dumps, gloo, the store), never the one
  inferred from the highest rank seen;
* every member reports how far it got in the group, and every one's ``last enqueued`` is the same S;
* every member is stuck before S completed: ``last completed`` < S, or, where no status line says it, a
  watchdog timeout in a collective up to S;
* at least one member timed out in that group; nobody crashed, was killed, stayed silent or logged a
  failure of its own (out of memory, an IB error, a Python exception, a stuck watchdog); the watchdog
  lines and dumps show the same operation at the stuck sequence number on every rank (else it is a desync).
"""

from __future__ import annotations

from collections import defaultdict

from syncdoctor.analyze.fr_compare import compare_mismatches
from syncdoctor.analyze.model import Category, Event, Hypothesis, Kind
from syncdoctor.analyze.rules.common import MAX_CASCADE, evidence_of, fmt_ranks, hypothesis
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, Timeline, is_comm_exception

__all__ = ["collective_stalled"]

_DEFAULT_GROUPS = ("0", "default_pg")
_STATUS_KINDS = (Kind.WORK_STATUS, Kind.DUMP_SIGNAL, Kind.FR_STATUS)
_NOT_WAITING = ("crashed", "killed", "silent", "terminated")
# a rank's own failure (even after its timeout) explains the stall better than the transport
_OWN_FAILURES = (Kind.CUDA_OOM, Kind.SHM_FAILURE, Kind.MEMLOCK_FAILURE, Kind.DUPLICATE_GPU, Kind.PEER_ACCESS,
                 Kind.INTERFACE_MISSING, Kind.IB_MODIFY_QP, Kind.IB_COMPLETION_ERROR, Kind.HEARTBEAT_TIMEOUT)


def _failed_on_its_own(tl: Timeline, rank: int) -> bool:
    state = tl.ranks[rank]
    if state.outcome in _NOT_WAITING or state.has(*_OWN_FAILURES):
        return True
    return any(not is_comm_exception(e) for e in state.of(Kind.EXCEPTION))


def _members(tl: Timeline, group: str) -> tuple[int, ...] | None:
    """The ranks of ``group`` as the inputs state them, or None when they do not."""
    named: set[int] = set()
    for dump in tl.dumps:
        for pg in dump.groups:
            if (pg.name or pg.pg_id) == group and pg.ranks:
                named.update(pg.ranks)
    if named:
        return tuple(sorted(named))
    if group in _DEFAULT_GROUPS and tl.stated_world_size:
        return tuple(range(tl.stated_world_size))
    return None


def _stuck_at(tl: Timeline, rank: int, group: str, top: int) -> int | None:
    """The first sequence number of ``group`` that ``rank`` did not complete, if it is at most ``top``."""
    state = tl.ranks[rank]
    completed = state.completed.get(group)
    if completed is not None:
        return completed + 1 if completed < top else None
    timeouts = [e.seq for e in state.of(*TIMEOUT_KINDS) if (e.group or "0") == group and e.seq is not None]
    return min(timeouts) if timeouts and min(timeouts) <= top else None


def _ops_at(tl: Timeline, members: tuple[int, ...], group: str, seq: int) -> set[tuple[object, ...]]:
    """The distinct (op, sizes) signatures the watchdog lines show at ``seq``."""
    signatures: set[tuple[object, ...]] = set()
    for rank in members:
        for event in tl.ranks[rank].of(*TIMEOUT_KINDS):
            if (event.group or "0") == group and event.seq == seq and event.op:
                signatures.add((event.op, event.data.get("numel_in"), event.data.get("numel_out")))
    return signatures


def _proof(tl: Timeline, rank: int, group: str) -> list[Event]:
    """The lines of ``rank`` that show where it is stuck: the timeout, the status lines, the dump."""
    state = tl.ranks[rank]
    lines: list[Event] = []
    for kinds in (tuple(TIMEOUT_KINDS), (Kind.WORK_STATUS,), (Kind.DUMP_SIGNAL,), (Kind.FR_STATUS,)):
        found = [e for e in state.of(*kinds) if (e.group or "0") == group]
        lines += found[:1]
    return lines


def _network_facts(tl: Timeline, members: tuple[int, ...]) -> str:
    """``NCCL used Socket (eth0) on vm`` from the NCCL INFO lines of the members' hosts, when present."""
    hosts = set(tl.hosts_of(members))
    per_host: dict[str, set[str]] = defaultdict(set)
    for event in tl.of(Kind.NCCL_NET, Kind.NCCL_BOOTSTRAP):
        host = event.origin.host
        if host not in hosts:
            continue
        if event.data.get("network"):
            per_host[host].add(f"network {event.data['network']}")
        elif event.kind is Kind.NCCL_BOOTSTRAP and event.data.get("ifname"):
            per_host[host].add(f"bootstrap on {event.data['ifname']}")
    if not per_host:
        return ""
    return " NCCL on " + "; ".join(f"{h}: {', '.join(sorted(v))}" for h, v in sorted(per_host.items())) + "."


def collective_stalled(tl: Timeline) -> list[Hypothesis]:
    out = []
    groups = sorted({g for state in tl.ranks.values() for g in state.reached})
    mismatched = {m.pg_id for m in compare_mismatches(tl.dumps)}
    if tl.of(Kind.COLLECTIVE_MISMATCH):
        return []
    if tl.of(Kind.DESYNC_REPORT):
        return _from_desync_reports(tl)
    for group in groups:
        members = _members(tl, group)
        if not members or group in mismatched or any(r not in tl.ranks for r in members):
            continue
        reached = {r: tl.ranks[r].reached.get(group) for r in members}
        if any(seq is None for seq in reached.values()) or len(set(reached.values())) != 1:
            continue  # a member without progress or behind the others: not this rule (A001 when behind)
        top = next(iter(reached.values()))
        assert top is not None
        if any(_failed_on_its_own(tl, r) for r in members):
            continue
        stuck = {r: _stuck_at(tl, r, group, top) for r in members}
        if any(seq is None for seq in stuck.values()):
            continue
        timed = [r for r in members if any((e.group or "0") == group for e in tl.ranks[r].of(*TIMEOUT_KINDS))]
        if not timed:
            continue
        first = min(s for s in stuck.values() if s is not None)
        if len(_ops_at(tl, members, group, first)) > 1:
            continue  # different collectives at the same sequence number: a desync (A002)
        op = next((e.op for r in members for e in tl.ranks[r].of(*TIMEOUT_KINDS)
                   if (e.group or "0") == group and e.seq == first and e.op), None)
        size = len(members)
        every = "the only rank" if size == 1 else f"all {size} ranks ({fmt_ranks(members)})"
        title = (f"collective #{first}{f' ({op})' if op else ''} of group {group} never completed although {every} "
                 "entered it: the transport or a GPU is stuck, not a rank")
        completed = sorted({tl.ranks[r].completed.get(group) for r in members}, key=lambda c: (c is None, c))
        last = ", ".join("unknown" if c is None else str(c) for c in completed)
        if size == 1:
            what = (f"The group has 1 rank (as the logs and dumps state); it entered collective #{top} (last "
                    f"enqueued {top}, last completed {last}) and timed out there.")
        else:
            what = (f"The group has {size} ranks (as the logs and dumps state), and every one entered collective "
                    f"#{top} (last enqueued {top} on every rank; last completed {last}) and waited there.")
        what += (" Nobody is late or calling something else: the collective itself did not finish. Either the "
                 "data does not flow (link, interface, HCA, firewall) or the collective never ran on a GPU (a "
                 "kernel ahead of it on the stream that does not end, a hung or faulted GPU).")
        what += _network_facts(tl, members)
        evidence: list = []
        for rank in members[:MAX_CASCADE]:
            evidence += evidence_of(_proof(tl, rank, group), f"rank {rank} entered #{top}, did not complete it")
        out.append(hypothesis(tl, Category.COLLECTIVE_STALLED, 0.7, title, culprits=members,
                              affected=list(members), what=what, evidence=evidence))
    return out


def _from_desync_reports(tl: Timeline) -> list[Hypothesis]:
    """PyTorch's desync report (``TORCH_NCCL_DESYNC_DEBUG``) asks every member of the group through the store; one
    that lists every member as ``joined but didn't finish collective #S`` and none lagging or missing says that the
    whole group entered S and S never completed, unless one of them failed on its own."""
    out = []
    for event in tl.of(Kind.DESYNC_REPORT):
        joined = sorted({int(r) for r in event.data.get("joined_not_finished") or []})
        if event.data.get("lagging") or event.data.get("not_joined") or len(joined) < 2:
            continue
        if any(r in tl.ranks and (tl.ranks[r].outcome in ("crashed", "killed") or tl.ranks[r].has(*_OWN_FAILURES)
                                  or any(not is_comm_exception(e) for e in tl.ranks[r].of(Kind.EXCEPTION)))
               for r in joined):
            continue
        op = f" ({event.op})" if event.op else ""
        title = (f"collective #{event.seq}{op} never completed although all {len(joined)} ranks ({fmt_ranks(joined)}) "
                 f"entered it, as rank {event.data.get('reporter')}'s desync report says: the transport or a GPU is "
                 "stuck, not a rank")
        what = ("PyTorch's desync report asked every member of the group how far it got: all of them joined "
                f"collective #{event.seq} and none finished it; none is lagging or missing. The collective itself "
                "did not finish: either the data does not flow (link, interface, HCA, firewall) or it never ran on "
                "a GPU (a kernel ahead of it on the stream that does not end, a hung or faulted GPU).")
        what += _network_facts(tl, tuple(joined))
        out.append(hypothesis(tl, Category.COLLECTIVE_STALLED, 0.65, title, culprits=joined, affected=joined,
                              what=what, evidence=evidence_of([event], "TORCH_NCCL_DESYNC_DEBUG report")))
    return out
