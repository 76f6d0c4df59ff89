"""Every member is inside the collective and it does not complete: a mismatch (W102) when they called
different things there, a transport hang (W104) when they called the same; likewise a send and its receive
that both ends posted and neither finished. Not a late rank: nobody is missing. Pure: no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from syncdoctor.watch.events import Event
from syncdoctor.watch.records import GroupProgress, Signature, format_ranks
from syncdoctor.watch.rules.context import Condition, Context, key, ranks_text, who_list

__all__ = ["NEXT_STEPS", "inside_condition", "p2p_hang_condition"]

NEXT_STEPS = (
    "run `syncdoctor probe` between these hosts; check NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME and the links "
    "(MTU, firewall, a cut or flapping cable); with NCCL, the GPUs too (nvidia-smi, Xid errors)"
)


def inside_condition(
    ctx: Context,
    group: str,
    members: tuple[int, ...],
    seq: int,
    progress: Mapping[int, GroupProgress | None],
    waited: float,
) -> Condition:
    config, snap = ctx.config, ctx.snapshot
    sigs: dict[int, Signature] = {
        r: p.signature for r, p in progress.items() if p is not None and p.signature and p.signature_seq == seq
    }
    distinct = Counter(sigs.values())
    if len(distinct) > 1:
        ordered = sorted(distinct.items(), key=lambda item: (-item[1], min(r for r, s in sigs.items() if s == item[0])))
        majority = ordered[0][0]
        odd = tuple(sorted(r for r, s in sigs.items() if s != majority))
        other = sigs[odd[0]]
        agree = tuple(sorted(r for r, s in sigs.items() if s == majority))
        title = (
            f"{who_list(ctx, odd)} called {other.short()} as collective #{seq} of group {group} while "
            f"{ranks_text(agree)} called {majority.short()}; all have waited {waited:.1f} s"
        )
        return Condition(
            Event(
                "W102", "confirmed", title, ranks=odd, hosts=ctx.hosts(odd), pids=ctx.pids(odd), group=group,
                group_ranks=members, seq=seq, signature=majority, other_signature=other, waiting_ranks=agree,
                waited_s=waited, key=key("W102", group, seq), at=snap.wall,
                detail={"signatures": {str(r): s.short() for r, s in sorted(sigs.items())}},
            )
        )
    unknown = tuple(r for r in members if r not in sigs and not (progress.get(r) and progress[r].completed >= seq))  # type: ignore[union-attr]
    signature = next(iter(distinct), None)
    op = signature.short() if signature else "a collective"
    status = "confirmed" if waited >= config.confirm_s else "warning"
    done = tuple(r for r, p in progress.items() if p is not None and p.completed >= seq)
    fresh = True
    if done:
        # Records are published at different moments: the stuck ranks' records may predate the completion
        # their peers already report. Only progress read a full interval after that completion was first
        # seen counts as evidence: a record carries the progress its sampler read last, which on a machine
        # with fewer cores than busy threads can lag its publication (seen with 8 gloo ranks on 2 cores: a
        # completed all_reduce read as stuck on 2 of 4 ranks for one cycle; and a late rank's reading of
        # the collective before its lateness, published for seconds with fresh heartbeats).
        seen_at = ctx.state.partial_seen.setdefault((group, seq), ctx.snapshot.now)
        if len(ctx.state.partial_seen) > 256:
            ctx.state.partial_seen.pop(next(iter(ctx.state.partial_seen)))
        fresh = all(_read_at(ctx, r) > seen_at + ctx.config.interval_s
                    for r in members if r not in done and r in ctx.state.seen)
        stuck = tuple(r for r in members if r not in done)
        title = (
            f"every rank of group {group} ({format_ranks(members)}) entered {op} #{seq}; it completed on "
            f"{ranks_text(done)} but not on {ranks_text(stuck)} for {waited:.1f} s: not a late rank: the "
            f"network, the transport or a GPU ahead of it is stuck"
        )
    else:
        title = (
            f"every rank of group {group} ({format_ranks(members)}) entered {op} #{seq} and it has not "
            f"completed for {waited:.1f} s: not a late rank: the network, the transport or a GPU ahead of it is stuck"
        )
    detail: dict[str, Any] = {"hosts": list(ctx.hosts(members)), "next": NEXT_STEPS}
    if done:  # how old the stuck ranks' readings were when published (what the freshness above weighed)
        detail["read_age_s"] = {str(r): ctx.read_age(r) for r in stuck if ctx.record(r) is not None}
    if unknown:
        detail["signatures_unknown_for"] = format_ranks(unknown)
    return Condition(
        Event(
            "W104", status, title, ranks=(), hosts=ctx.hosts(members), group=group, group_ranks=members, seq=seq,
            signature=signature, waiting_ranks=members, waited_s=waited, key=key("W104", group, seq),
            at=snap.wall, detail=detail,
        ),
        ready=fresh and (not unknown or waited >= config.warn_s + 2 * config.interval_s),
    )


def _read_at(ctx: Context, rank: int) -> float:
    """When ``rank``'s progress was read, on the monitor's clock: when its record was first seen, less the
    age of the reading it carries (the record says it; ``None`` is an old record: no age known)."""
    return ctx.state.seen[rank].changed_at - (ctx.read_age(rank) or 0.0)


def p2p_hang_condition(
    ctx: Context, group: str, sender: int, receiver: int, seq: int, waited: float
) -> Condition:
    """``sender``'s send #seq to ``receiver`` and the matching receive: both posted, neither finished."""
    status = "confirmed" if waited >= ctx.config.confirm_s else "warning"
    pair = (min(sender, receiver), max(sender, receiver))
    title = (
        f"rank {sender} posted send #{seq} to rank {receiver} in group {group} and rank {receiver} the matching "
        f"receive; neither has finished for {waited:.1f} s: not a late rank: the network between "
        f"{' and '.join(ctx.hosts(pair)) or 'their hosts'} or the transport is stuck"
    )
    return Condition(
        Event(
            "W104", status, title, ranks=(), hosts=ctx.hosts(pair), group=group, group_ranks=pair, seq=seq,
            waiting_ranks=pair, waited_s=waited, key=key("W104", group, "p2p", sender, receiver, seq),
            at=ctx.snapshot.wall,
            detail={"hosts": list(ctx.hosts(pair)), "next": NEXT_STEPS,
                    "p2p": {"sender": sender, "receiver": receiver, "seq": seq}},
        )
    )
