"""The wait-for graph's edges, one cycle's worth: who waits for whom in each process group and on each
point-to-point channel (points 1 and 2 of :mod:`.waits`). Pure: no I/O.

A wait that every side entered is no edge: it is a hang or a mismatch (:mod:`.hang`) once it lasted
``warn_after_s``, and the condition is returned beside the edges.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from syncdoctor.watch.records import P2P, GroupProgress, P2PProgress, Signature, format_ranks
from syncdoctor.watch.rules.context import SYMMETRIC, Blocked, Condition, Context
from syncdoctor.watch.rules.hang import inside_condition, p2p_hang_condition
from syncdoctor.watch.stacks import StackReport
from syncdoctor.watch.waitgraph import Op, Wait

__all__ = ["Graph", "Inside", "channel_waits", "group_waits", "seen_before", "stale_reading"]

_OPPOSITE = {"send": "recv", "recv": "send"}


class Inside(NamedTuple):
    """An operation a rank is in that every side entered: what it is, and how long it has waited."""

    text: str
    waited_s: float


@dataclass
class Graph:
    """What the group and channel passes found, for the roots to draw on."""

    waits: list[Wait]
    signatures: dict[Wait, Signature | None]
    members: dict[str, tuple[int, ...]]
    hung: dict[int, Condition]  # rank -> the hang or mismatch it is stuck in
    inside: dict[int, Inside]  # rank -> an operation it is in that every side entered (not hung yet)
    roots: set[int] = field(default_factory=set)  # ranks that are roots of a wait this cycle

    def note_inside(self, rank: int, text: str, waited: float) -> None:
        """``rank`` is inside an operation every side entered, not hung yet, which has waited ``waited``."""
        self.inside.setdefault(rank, Inside(text, waited))


def seen_before(ctx: Context, graph: Graph, ranks: Iterable[int]) -> bool:
    """Each of ``ranks`` was a root in an earlier cycle already, and a newer record of it still makes it one.

    A rank passes through moments between two operations, and the records of a job are read at different
    ages: while a chain of waits unwinds, a rank that just received its message and has not sent the next
    one looks like the root of a wait that is already past the threshold. Asking for a second record of it
    keeps such a moment from becoming an incident; a real root is seen long before the threshold.
    """
    seen = True
    for rank in ranks:
        graph.roots.add(rank)
        rec = ctx.record(rank)
        beat = rec.heartbeat if rec is not None else -1
        first = ctx.state.roots.get(rank)
        if first is None:
            ctx.state.roots[rank] = beat
            seen = False
        elif beat <= first:
            seen = False
    return seen


def group_waits(ctx: Context, graph: Graph, group: str, members: tuple[int, ...]) -> list[Condition]:
    """The waits in ``group`` (added to ``graph``), and its hang or mismatch condition if every member entered."""
    if ctx.snapshot.columns is not None:
        return _group_waits_bulk(ctx, graph, group, members)
    progress: dict[int, GroupProgress | None] = {}
    for rank in members:
        rec = ctx.record(rank)
        progress[rank] = rec.groups.get(group) if rec is not None else None
    # (a member down or falling silent may have left a collective half done: a peer's completion then says nothing
    # of the others', and neither a stale reading nor a stack outside the collective settles it; looked at only once
    # a rank has sat behind a peer's completion for suspect_after_s)
    whole: list[bool] = []

    def stale(rank: int, p: GroupProgress) -> bool:
        if (p.stalled_s or 0.0) < ctx.config.suspect_s:
            return False
        if not whole:
            whole.append(all(ctx.live.get(r) == "alive" and not ctx.silent(r) for r in members))
        return whole[0] and (stale_reading(ctx, rank) or _left(ctx, rank))

    progress = settle_completions(progress, stale)
    # the oldest collective a live member waits in: a dead rank's last record may show it inside an earlier
    # one it completed before it froze (its record was published mid-collective)
    pending = [p for r, p in progress.items() if p is not None and p.pending and ctx.live.get(r) == "alive"]
    if not pending:
        return []
    seq = min(p.completed + 1 for p in pending)
    waiting = tuple(r for r, p in progress.items() if p is not None and p.completed < seq <= p.entered)
    entered = {r for r, p in progress.items() if p is not None and p.entered >= seq}
    not_entered = tuple(r for r in members if r not in entered)
    alive_waiting = tuple(r for r in waiting if ctx.live.get(r) == "alive")
    if not alive_waiting:
        return []
    waited = max((progress[r].stalled_s or 0.0) + ctx.elapsed(r) for r in alive_waiting)  # type: ignore[union-attr]
    signature = _common_signature(progress, waiting, seq)
    done = any(p is not None and p.completed >= seq for p in progress.values())
    return _judge(ctx, graph, _GroupWait(group, members, seq, waiting, alive_waiting, not_entered, waited, signature,
                                         done), lambda: progress)


@dataclass(frozen=True)
class _GroupWait:
    """What a group's progress says this cycle: the oldest collective ``seq`` a live member is inside, who waits
    in it, who has not entered it, the longest wait, what most waiters called, whether a member completed it."""

    group: str
    members: tuple[int, ...]
    seq: int
    waiting: tuple[int, ...]
    alive_waiting: tuple[int, ...]
    not_entered: tuple[int, ...]
    waited: float
    signature: Signature | None
    done_somewhere: bool


def _judge(ctx: Context, graph: Graph, gw: _GroupWait,
           progress: Callable[[], Mapping[int, GroupProgress | None]]) -> list[Condition]:
    """A wait for the members that have not entered, or (every member entered) a hang or mismatch once it
    lasted ``warn_after_s``. ``progress``: every member's progress, read only for a hang or mismatch."""
    group, seq, signature, waited = gw.group, gw.seq, gw.signature, gw.waited
    if gw.not_entered:
        if signature is not None and signature.op in SYMMETRIC and gw.done_somewhere:
            return []  # completed somewhere, so everyone entered it: the "late" records are just older
        wait = Wait(Op(group, seq, label=signature.short() if signature else ""), gw.alive_waiting, gw.not_entered,
                    waited)
        graph.waits.append(wait)
        graph.signatures[wait] = signature
        return []
    op = Op(group, seq, label=signature.short() if signature else "").text()
    ctx.due(waited)
    if waited < ctx.config.warn_s:
        text = f"{op}, which every member entered (not completed for {waited:.1f} s)"
        for rank in gw.alive_waiting:
            graph.note_inside(rank, text, waited)
        return []
    if any(ctx.live.get(r) != "alive" or ctx.silent(r) for r in gw.members):
        for rank in gw.members:
            if ctx.live.get(rank) in ("stale", "missing"):
                ctx.blocked.setdefault(rank, Blocked(group, seq, signature, gw.waiting, waited))
        return []  # the dead-rank rule names them
    cond = inside_condition(ctx, group, gw.members, seq, progress(), waited)
    for rank in gw.members:
        graph.hung[rank] = cond
    return [cond]


def _group_waits_bulk(ctx: Context, graph: Graph, group: str, members: tuple[int, ...]) -> list[Condition]:
    """:func:`group_waits` over the headers' columns (the same steps, as array operations): decodes one
    record per distinct signature, and every member's only for a collective every member entered."""
    import numpy as np

    config, columns, snap = ctx.config, ctx.snapshot.columns, ctx.snapshot
    assert columns is not None
    cols = columns.group(group, members)
    if not len(cols.ranks):
        return []
    has, entered = cols.has, cols.entered
    completed = cols.completed
    if bool(has.any()):  # settle_completions
        best = int(completed[has].max())
        lagging = has & (completed < best) & (entered > completed + 1)
        if bool(lagging.any()):
            completed = np.where(lagging, np.minimum(best, entered - 1), completed)
        # (only ranks that have sat there a while: in a healthy job many are inside the collective others left)
        behind = np.flatnonzero(has & (completed < best) & (entered > completed)
                                & (np.nan_to_num(cols.stalled, nan=0.0) >= ctx.config.suspect_s))[:_STALE_LOOKS]
        if len(behind):  # (only with every member alive and heard from: see group_waits)
            heard = snap.now - ctx.changed_at[cols.ranks] < ctx.silent_s
            if not bool((ctx.alive[cols.ranks] & heard).all()):
                behind = behind[:0]
        stale = [i for i in behind.tolist() if stale_reading(ctx, int(cols.ranks[i])) or _left(ctx, int(cols.ranks[i]))]
        if stale:
            completed = completed.copy()
            completed[stale] = np.minimum(best, entered[stale])
    ranks = cols.ranks
    alive = ctx.alive[ranks]
    pending = has & (entered > completed) & alive
    if not bool(pending.any()):
        return []
    seq = int((completed[pending] + 1).min())
    waiting = has & (completed < seq) & (seq <= entered)
    entered_it = has & (entered >= seq)
    alive_waiting = waiting & alive
    if not bool(alive_waiting.any()):
        return []
    # the longest wait: the stall each reported plus the time since it published (Context.elapsed, in bulk)
    rows = ranks[alive_waiting]
    low = snap.now - ctx.changed_at[rows]
    published = columns.table["published"][rows]
    elapsed = low
    if snap.wall:
        elapsed = np.where(published != 0, np.minimum(np.maximum(snap.wall - published, low), low + config.interval_s),
                           low)
    stalled = np.nan_to_num(cols.stalled[alive_waiting], nan=0.0)
    waited = float((stalled + elapsed).max())
    # the signature most of the waiting ranks called (the first to appear among the most common)
    signed = waiting & (cols.sig_crc != 0) & (cols.sig_seq == seq)
    signature = None
    if bool(signed.any()):
        crcs = cols.sig_crc[signed]
        _values, first, counts = np.unique(crcs, return_index=True, return_counts=True)
        best_count = counts.max()
        pick = int(first[counts == best_count].min())
        signature = columns.signature_of(group, int(crcs[pick]), seq, int(ranks[signed][pick]))
    gw = _GroupWait(group, members, seq, tuple(ranks[waiting].tolist()), tuple(rows.tolist()),
                    tuple(ranks[~entered_it].tolist()), waited, signature, bool((has & (completed >= seq)).any()))
    return _judge(ctx, graph, gw, lambda: columns.progress(cols, completed))


_STALE_LOOKS = 64  # records decoded per group and cycle to look for stale readings (bounded cost)


def _left(ctx: Context, rank: int) -> bool:
    """A rank behind a collective a peer completed: asked for its stack (once per place), and whether that stack
    shows it has left the collective (:func:`left_collective`)."""
    if not ctx.config.stacks:
        return False
    ask_stacks(ctx, (rank,))
    return left_collective(ctx, rank)


def stale_reading(ctx: Context, rank: int) -> bool:
    """Whether ``rank``'s record carries a progress reading its publisher could not refresh: older than three
    sampling intervals (the publisher reads itself past two), so its sampler was held up.

    Such a rank, shown inside a collective that a peer already completed, is counted as having completed it
    too: its reading predates what its peers' fresher ones show. Not while a member of the group is down or falling
    silent: a rank stopped inside a collective (SIGSTOP, a hung host) may have delivered its part to some peers and
    not to others, so that one finished and the others, stale or not, still wait in it (seen in the lab: a frozen
    node leader's all_reduce completed on rank 0 while ranks 1 and 2, their readings held up on a loaded machine,
    waited inside it and were named late for the next). Taken as it stands, the group would look
    stuck in a collective every member entered, a transport hang (W104), while the rank has left it and is
    late for the next (seen in CI: a late rank's record showed the all_reduce before its sleep unfinished,
    with fresh heartbeats, until it woke up). Should the rank really be stuck inside, it is still the rank
    named (late for the next collective), and its next fresh reading tells the hang.
    """
    age = ctx.read_age(rank)
    return age is not None and age > 3 * ctx.config.sample_interval_s


def ask_stacks(ctx: Context, ranks: tuple[int, ...]) -> None:
    """Ask these ranks for their stack, once per place they are stuck at (their progress so far)."""
    state = ctx.state
    for rank in ranks:
        rec = ctx.record(rank)
        where = "?" if rec is None else (
            sum(p.completed for p in rec.groups.values()) + sum(c.completed for c in rec.p2p))
        stuck_at = f"{format_ranks(ranks)}@{where}"
        asked = state.stack_asked.get(rank)
        if asked is None or asked[1] != stuck_at:
            state.stack_gen += 1
            state.stack_asked[rank] = (state.stack_gen, stuck_at)
            ctx.requests.stacks[rank] = state.stack_gen


# Where a main thread may be waiting on a collective without a ``torch.distributed`` frame of Python on its stack:
# DDP's reducer launches and waits on its bucket all_reduce from C++ inside ``backward()`` (autograd) and its
# forward (``torch/nn/parallel``); a wait on a CUDA stream a collective holds (``torch/cuda``); libraries that
# wait on the async work handles they keep (``handle.wait()`` from DeepSpeed's ZeRO, Megatron's grad buffers,
# FairScale, Apex, Colossal-AI, TorchRec's sharded modules).
MAY_WAIT_IN = (
    "torch/distributed/", "torch/autograd/", "torch/nn/parallel/", "torch/cuda/", "/deepspeed/", "/megatron/",
    "/fairscale/", "/apex/", "/colossalai/", "/torchrec/distributed/",
)

# Native frames (py-spy's, innermost first) of a thread waiting on a collective or on a stream behind one: c10d's
# work and store waits, gloo's and NCCL's, a CUDA synchronisation (``tensor.item()`` reads through
# ``_local_scalar_dense``). A Python frame of the user's own code calling ``work.wait()`` shows only these.
_NATIVE_WAIT = re.compile(r"c10d::|gloo::|nccl|ProcessGroup|cuda\w*Synchronize|_local_scalar_dense", re.IGNORECASE)


def may_wait_in_collective(file: str) -> bool:
    """Whether a frame of ``file`` may hold its thread waiting in a collective (:data:`MAY_WAIT_IN`)."""
    path = file.replace("\\", "/")
    return any(part in path for part in MAY_WAIT_IN)


# Innermost frames that say nothing of what the thread waits on: torch's operator dispatch (a functional collective's
# ``torch.ops._c10d_functional.wait_tensor`` from FSDP2, DTensor or compiled code has ``torch/_ops.py`` innermost) and
# compiled graphs (Dynamo, Inductor's generated code): counted as possibly waiting, never as having left.
_OPAQUE_INNERMOST = ("torch/_ops.py", "torch/_dynamo/", "torch/_inductor/", "torchinductor", "torch/_higher_order_ops/",
                     "<eval_with_key")


def stack_may_wait(stack: StackReport) -> bool:
    """Whether the thread of ``stack`` may be waiting in a collective: its innermost frame, the call that holds
    it, is one that may (:func:`may_wait_in_collective`), or its native frames wait in c10d, gloo, NCCL or a
    CUDA synchronisation. Only the innermost frame counts: a training loop that lives in Megatron's or
    DeepSpeed's tree has their frames outside while it loads data or computes."""
    if not stack.frames:
        return True  # nothing to tell by
    innermost = stack.frames[-1].file.replace("\\", "/")
    if may_wait_in_collective(innermost) or any(part in innermost for part in _OPAQUE_INNERMOST):
        return True
    return stack.in_native and any(_NATIVE_WAIT.search(name) for name in stack.native)


def left_collective(ctx: Context, rank: int) -> bool:
    """Whether ``rank``'s main thread, in the stack it sent when asked at the place it is stuck at, is in no
    call that may wait on a collective (:func:`stack_may_wait`: ``torch.distributed``, DDP's backward,
    a CUDA synchronisation, a library's work handle): it has left the collective its record shows unfinished.

    gloo's Flight Recorder marks a synchronous collective completed from a worker thread after the caller has
    returned; on a loaded host that can lag for seconds (seen in CI: a late rank asleep in its data loading,
    its previous all_reduce shown unfinished with fresh readings, so the group looked stuck in a collective
    every member entered and two of three completed: a transport hang, W104, in place of the late rank). A rank
    really stuck inside it waits in that call (its stack is in distributed_c10d, or in ``backward()`` where DDP
    waits on its buckets from C++), and stays so."""
    asked = ctx.state.stack_asked.get(rank)
    stack = ctx.snapshot.stacks.get(rank)
    if asked is None or stack is None or stack.gen < asked[0]:
        return False
    return not stack_may_wait(stack)


def settle_completions(
    progress: Mapping[int, GroupProgress | None],
    stale: Callable[[int, GroupProgress], bool] | None = None,
) -> dict[int, GroupProgress | None]:
    """Count as completed a collective that a rank's record shows unfinished while the rank is already inside
    a later collective of the group and a peer finished it; and, where ``stale(rank, progress)`` says the
    rank's reading is too old to tell (:func:`stale_reading`), one it shows itself inside that a peer finished.

    The rank's completion is bookkeeping that lags, not a hang: gloo's Flight Recorder marks a collective
    completed from a worker thread, which can wait behind the next collective (seen under mpirun on two lab
    hosts: rank 2 entered #4 and waited in it for a late rank 3 while its record showed #3 unfinished for
    8 s, until #4 completed). Read as it stands, the group would look stuck in #3, which every member entered:
    a transport hang (W104) in place of the late rank. A real hang of #N on a rank that moved on (async
    collectives) still shows: its later collectives do not complete either.
    """
    best = max((p.completed for p in progress.values() if p is not None), default=0)
    out: dict[int, GroupProgress | None] = {}
    for rank, p in progress.items():
        if p is not None and p.completed < best and p.entered > p.completed + 1:
            p = p._replace(completed=min(best, p.entered - 1))
        if p is not None and p.completed < best and p.entered > p.completed and stale is not None and stale(rank, p):
            p = p._replace(completed=min(best, p.entered), stalled_s=None)
        out[rank] = p
    return out


def _common_signature(progress: Mapping[int, GroupProgress | None], ranks: Iterable[int], seq: int) -> Signature | None:
    sigs = Counter(p.signature for r in ranks if (p := progress.get(r)) and p.signature and p.signature_seq == seq)
    return sigs.most_common(1)[0][0] if sigs else None


def channel_waits(ctx: Context, graph: Graph) -> list[Condition]:
    """Point-to-point waits: a pending send or receive whose peer has not posted the matching one."""
    channels: dict[tuple[int, str, int, str], P2PProgress] = {}
    for rank, rec in ctx.records_with(P2P):
        for channel in rec.p2p:
            channels[(rank, channel.group, channel.peer, channel.kind)] = channel
    conditions: list[Condition] = []
    hung_pairs: set[tuple[str, int, int, int]] = set()
    for (rank, group, peer, kind), channel in channels.items():
        if not channel.pending or peer < 0 or peer == rank or ctx.live.get(rank) != "alive":
            continue
        number = channel.completed + 1
        waited = (channel.stalled_s or 0.0) + ctx.elapsed(rank)
        other = channels.get((peer, group, rank, _OPPOSITE.get(kind, kind)))
        if other is None or other.entered < number:
            wait = Wait(Op(group, number, kind, peer=peer, label=kind), (rank,), (peer,), waited)
            graph.waits.append(wait)
            graph.signatures[wait] = None
            continue
        theirs = (other.stalled_s or 0.0) + ctx.elapsed(peer) if other.completed < number else 0.0
        sender, receiver = (rank, peer) if kind == "send" else (peer, rank)
        pair = (group, sender, receiver, number)
        warn = ctx.config.warn_s
        if waited >= warn and theirs >= warn and ctx.live.get(peer) == "alive":
            if pair not in hung_pairs:
                hung_pairs.add(pair)
                cond = p2p_hang_condition(ctx, group, sender, receiver, number, min(waited, theirs))
                conditions.append(cond)
                graph.hung[rank] = graph.hung[peer] = cond
            continue
        where = "to" if kind == "send" else "from"
        graph.note_inside(
            rank, f"{kind} #{number} {where} rank {peer} in group {group}, which rank {peer} posted "
                  f"(not finished for {waited:.1f} s)", min(waited, theirs)
        )
    return conditions
