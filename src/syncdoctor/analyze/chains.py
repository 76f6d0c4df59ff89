"""Who waited for whom when the job hung, from the Flight Recorder dumps and the logs. Pure: no I/O.

The same wait-for graph the live watcher builds (:mod:`syncdoctor.watch.waitgraph`), from what a post-mortem
has:

- **dumps**: each rank's progress per process group (``pg_status``, in collective numbers), the members of
  each group (``pg_config`` ranks; gloo leaves them out, so also every rank whose dump has an entry of the
  group, which a group's name identifies on every rank), and NCCL's point-to-point entries
  (``send 1->2``, ``recv 3<-0``, group ranks) for the messages. A member inside collective #S waits for the
  members that have not entered it; a rank inside its k-th receive from B waits for B when B's dump shows
  fewer than k sends to it.
- **logs**: a rank that timed out in a send, a receive or a collective its dump does not show (gloo records
  no point-to-point entry) waits too, for someone the inputs do not name: it is no root. Where it was, the
  torch call and the program line, comes from its traceback.

:func:`chains` returns the roots, each with the chain that leads to it, the ranks it held up, and the ranks
known to wait; the rules (:mod:`syncdoctor.analyze.rules.progress`, :mod:`.desync`) turn them into
hypotheses and keep a rank that only waited in another group from being called late or desynchronised.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from syncdoctor.analyze.model import Event, FrDump, Kind
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, Timeline, is_comm_exception
from syncdoctor.watch.waitgraph import Op, Root, Wait, analyse

__all__ = ["Chains", "chains", "where_waited"]

_DEFAULT_GROUPS = ("0", "default_pg")
_P2P_CALLS = ("send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list", "recv_object_list")


@dataclass(frozen=True)
class Chains:
    """The graph's roots and what is known of every waiting rank."""

    roots: tuple[Root, ...] = ()
    waiters: frozenset[int] = frozenset()  # ranks shown waiting: in the dumps, or timed out in the logs
    hidden: Mapping[int, str] = field(default_factory=dict)  # waits only the logs show: rank -> where
    proof: Mapping[int, tuple[Event, ...]] = field(default_factory=dict)  # rank -> its dump status lines
    from_dumps: bool = False

    def describe(self, rank: int) -> str:
        return self.hidden.get(rank, "")


def where_waited(tl: Timeline, rank: int) -> str:
    """``all_reduce at shapes.py:128 in data_parallel``: the torch call and program line of a rank's
    communication timeout, from its traceback; empty when the logs do not show one."""
    state = tl.ranks.get(rank)
    if state is None:
        return ""
    timeouts = state.of(*TIMEOUT_KINDS)
    numbered = ""
    for event in timeouts:
        if event.op:
            group = f" of group {event.group}" if event.group is not None else ""
            numbered = f"{event.op}" + (f" #{event.seq}{group}" if event.seq is not None else "")
            break
    for event in state.of(Kind.EXCEPTION):
        if not is_comm_exception(event):
            continue
        call = str(event.data.get("collective") or "")
        site = str(event.data.get("call_site") or "").rsplit(" > ", 1)[-1]
        if site:
            return " at ".join(part for part in (call, site) if part)
        if call:  # the torch call alone: the timeout's line says as much, with its number
            return numbered if numbered.startswith(call) else call
    return numbered or ("a collective" if timeouts else "")


def chains(tl: Timeline) -> Chains:
    """The wait-for graph of the inputs: empty when no dump shows a rank waiting."""
    dumps = [d for d in tl.dumps if d.rank is not None]
    if not dumps:
        return Chains()
    members, progress, labels, proof = _groups(tl, dumps)
    waits: list[Wait] = []
    waiting: set[int] = set()
    for group, ranks in members.items():
        wait = _group_wait(group, ranks, progress, labels)
        if wait is not None:
            waits.append(wait)
            waiting.update(wait.waiters)
    for wait in _messages(dumps, members):
        waits.append(wait)
        waiting.update(wait.waiters)
    hidden: dict[int, str] = {}
    for rank, state in tl.ranks.items():
        if rank in waiting:
            continue
        # its own timeout, or a peer that closed the connection while it sat in a send or receive: it waited.
        # A rank that reached a collective only after the others left also sees the connection closed, in
        # the collective its dump shows it had not entered yet: that one is the late rank, not a waiter.
        in_message = any(is_comm_exception(e) and e.data.get("collective") in _P2P_CALLS for e in state.of(Kind.EXCEPTION))
        if state.of(*TIMEOUT_KINDS) or in_message:
            hidden[rank] = where_waited(tl, rank) or "a communication call"
    roots = tuple(r for r in analyse(waits) if r.cycle or not set(r.ranks) <= set(hidden))
    return Chains(roots, frozenset(waiting | set(hidden)), hidden, proof, True)


# --- internals ----------------------------------------------------------------------------------------


def _groups(
    tl: Timeline, dumps: list[FrDump]
) -> tuple[dict[str, tuple[int, ...]], dict[tuple[int, str], tuple[int, int]], dict[tuple[str, int], str],
           dict[int, tuple[Event, ...]]]:
    members: dict[str, set[int]] = defaultdict(set)
    progress: dict[tuple[int, str], tuple[int, int]] = {}
    labels: dict[tuple[str, int], str] = {}
    for dump in dumps:
        rank = dump.rank
        assert rank is not None
        named = {e.pg_id: e.pg_name for e in dump.entries if e.pg_name}
        for entry in dump.entries:
            if not entry.is_p2p and entry.seq > 0:
                labels.setdefault((entry.pg_name or entry.pg_id, entry.seq), _label(entry.op, entry.input_sizes, entry.dtypes))
        for group in dump.groups:
            name = named.get(group.pg_id)
            if name is None:
                continue  # a pg id without any entry: which group it is, no other rank can tell
            members[name].add(rank)
            members[name].update(group.ranks)
            if group.last_enqueued is not None:
                progress[(rank, name)] = (group.last_enqueued, group.last_completed or 0)
    world = tl.stated_world_size or tl.world_size
    for name in _DEFAULT_GROUPS:
        if name in members and world:
            members[name].update(range(world))
    proof: dict[int, list[Event]] = defaultdict(list)
    for event in tl.of(Kind.FR_STATUS):
        if event.origin.rank is not None:
            proof[event.origin.rank].append(event)
    return ({g: tuple(sorted(r)) for g, r in members.items()}, progress, labels,
            {r: tuple(e) for r, e in proof.items()})


def _label(op: str, sizes: tuple[tuple[int, ...], ...], dtypes: tuple[str, ...]) -> str:
    shapes = ",".join("x".join(str(d) for d in s) or "scalar" for s in sizes)
    dtype = "/".join(sorted(set(dtypes))).lower()
    return f"{op} {dtype}[{shapes}]" if dtype or shapes else op


def _group_wait(group: str, ranks: tuple[int, ...], progress: Mapping[tuple[int, str], tuple[int, int]],
                labels: Mapping[tuple[str, int], str]) -> Wait | None:
    known = {r: progress[(r, group)] for r in ranks if (r, group) in progress}
    pending = [(entered, done) for entered, done in known.values() if entered > done]
    if not pending:
        return None
    seq = min(done + 1 for _entered, done in pending)
    waiters = tuple(r for r, (entered, done) in known.items() if done < seq <= entered)
    # a member without a dump of this group cannot be shown to have entered: it is waited for
    blockers = tuple(r for r in ranks if r not in known or known[r][0] < seq)
    if not blockers or any(done >= seq for _entered, done in known.values()):
        return None  # everyone entered (a hang of the transport: A020), or it completed somewhere
    return Wait(Op(group, seq, label=labels.get((group, seq), "")), waiters, blockers)


def _messages(dumps: Iterable[FrDump], members: Mapping[str, tuple[int, ...]]) -> list[Wait]:
    """NCCL's point-to-point entries: a receive (send) whose peer's dump shows fewer matching sends (receives)."""
    posted: dict[tuple[int, str, int, str], list[bool]] = defaultdict(list)  # (rank, group, peer, kind) -> done?
    for dump in dumps:
        for entry in dump.entries:
            if not entry.is_p2p:
                continue
            kind, _, pair = entry.op.partition(" ")
            group = entry.pg_name or entry.pg_id
            ranks = members.get(group, ())
            try:
                if kind == "send":
                    _src, dst = (int(x) for x in pair.split("->"))
                    peer = ranks[dst] if ranks else dst
                elif kind == "recv":
                    _dst, src = (int(x) for x in pair.split("<-"))
                    peer = ranks[src] if ranks else src
                else:
                    continue
            except (ValueError, IndexError):
                continue
            if dump.rank is None:
                continue  # the caller keeps only dumps that say whose they are
            posted[(dump.rank, group, peer, kind)].append(entry.state == "completed")
    waits = []
    for (rank, group, peer, kind), done in posted.items():
        if all(done):
            continue
        number = done.index(False) + 1
        other = posted.get((peer, group, rank, "recv" if kind == "send" else "send"), [])
        if len(other) < number:
            waits.append(Wait(Op(group, number, kind, peer=peer, label=kind), (rank,), (peer,)))
    return waits
