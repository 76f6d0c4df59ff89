"""The rules: pure functions ``(Timeline) -> list[Hypothesis]``, and :func:`diagnose` that runs them all
and ranks the hypotheses by confidence. Pure: no I/O.

====================  =====================================================================  ==========
module                what it tells apart                                                     categories
====================  =====================================================================  ==========
:mod:`.crash`         a rank that died on its own vs the peers that lost it (cascade)          A003, A004
:mod:`.progress`      the rank that never reached collective S vs the ranks that timed out     A001, A010
:mod:`.desync`        different collectives at the same sequence number vs a straggler         A002
:mod:`.network`       loopback/docker addresses, missing or odd interfaces, socket fallback,   A005-A009,
                      a host cut off, and timeouts nobody explains                              A019
:mod:`.nccl_errors`   IB retry exceeded at init vs late, QP setup, shm, memlock, duplicate     A011-A018
                      GPU, peer access, a stuck watchdog
:mod:`.stall`         every rank entered collective S and S never completed (transport or     A020
                      GPU), tried only when nothing more specific explains the timeouts
====================  =====================================================================  ==========
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from syncdoctor.analyze.model import Category, Diagnosis, Hypothesis
from syncdoctor.analyze.rules.crash import rank_crashed
from syncdoctor.analyze.rules.desync import collective_desync
from syncdoctor.analyze.rules.nccl_errors import ib_retry_exceeded, local_nccl_failures, watchdog_stuck
from syncdoctor.analyze.rules.network import (
    advertised_loopback,
    interface_mismatch,
    interface_missing,
    network_partition,
    socket_fallback,
    unexplained_timeout,
)
from syncdoctor.analyze.rules.progress import lagging_rank, rank_never_joined
from syncdoctor.analyze.rules.stall import collective_stalled
from syncdoctor.analyze.timeline import Timeline

__all__ = ["RULES", "diagnose"]

Rule = Callable[[Timeline], list[Hypothesis]]

RULES: tuple[Rule, ...] = (
    rank_crashed,
    collective_desync,
    lagging_rank,
    rank_never_joined,
    interface_missing,
    advertised_loopback,
    interface_mismatch,
    socket_fallback,
    ib_retry_exceeded,
    local_nccl_failures,
    watchdog_stuck,
    network_partition,
)

# When two hypotheses are equally confident, the more specific cause comes first.
_PRECEDENCE = {category: index for index, category in enumerate((
    Category.INTERFACE_MISSING, Category.LOOPBACK_ADDRESS, Category.DUPLICATE_GPU, Category.PEER_ACCESS,
    Category.SHM_EXHAUSTED, Category.MEMLOCK_LIMIT, Category.IB_MODIFY_QP, Category.IB_UNREACHABLE_AT_INIT,
    Category.IB_LINK_FAILURE, Category.RANK_OUT_OF_MEMORY, Category.RANK_CRASHED, Category.COLLECTIVE_DESYNC,
    Category.LAGGING_RANK, Category.NETWORK_PARTITION, Category.RANK_NEVER_JOINED, Category.INTERFACE_MISMATCH,
    Category.SOCKET_FALLBACK, Category.WATCHDOG_STUCK, Category.COLLECTIVE_STALLED, Category.UNEXPLAINED_TIMEOUT,
))}


def _merge(hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
    """One hypothesis per (category, culprits): the most confident, with the evidence of all of them."""
    best: dict[tuple[object, ...], Hypothesis] = {}
    for hypothesis in sorted(hypotheses, key=lambda h: -h.confidence):
        key = (hypothesis.category, hypothesis.culprit_ranks, hypothesis.culprit_hosts)
        kept = best.get(key)
        if kept is None:
            best[key] = hypothesis
            continue
        seen = {(e.ref, e.text) for e in kept.evidence}
        extra = tuple(e for e in hypothesis.evidence if (e.ref, e.text) not in seen)
        affected = tuple(sorted(set(kept.affected_ranks) | set(hypothesis.affected_ranks)))
        best[key] = replace(kept, evidence=kept.evidence + extra, affected_ranks=affected,
                            confidence=min(1.0, kept.confidence + 0.02))
    return list(best.values())


def _rank(hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
    return sorted(hypotheses, key=lambda h: (-round(h.confidence, 3), not h.root_cause, _PRECEDENCE[h.category],
                                             h.culprit_ranks, h.title))


def diagnose(tl: Timeline, notes: Sequence[str] = (), sources: Sequence[str] = ()) -> Diagnosis:
    """Run every rule; hypotheses best first. When nothing more specific explains the timeouts: every rank
    entered the collective and it never completed (A020) when the evidence says so, else say so (A019)."""
    hypotheses: list[Hypothesis] = []
    for rule in RULES:
        hypotheses.extend(rule(tl))
    if not any(h.root_cause and h.confidence >= 0.5 for h in hypotheses):
        hypotheses.extend(collective_stalled(tl) or unexplained_timeout(tl))
    ranked = _rank(_merge(hypotheses))
    return Diagnosis(
        hypotheses=tuple(ranked),
        ranks=tuple(sorted(tl.ranks)),
        hosts=tuple(sorted(tl.hosts)),
        sources=tuple(sources),
        notes=tuple(notes),
    )
