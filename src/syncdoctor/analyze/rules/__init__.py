"""The rules: pure functions ``(Timeline) -> list[Hypothesis]``, and :func:`diagnose` that runs them all
and ranks the hypotheses by confidence. Pure: no I/O.

====================  =====================================================================  ==========
module                what it tells apart                                                     categories
====================  =====================================================================  ==========
:mod:`.crash`         a rank that died on its own vs the peers that lost it (cascade)          A003, A004
:mod:`.progress`      the rank that never reached collective S vs the ranks that timed out     A001, A010
:mod:`.partial`       the same from what a paste shows when no sequence numbers do: stacks,   A001
                      a run-it-first helper, Horovod, the exit barrier, timeouts with no rank
:mod:`.desync`        different collectives at the same sequence number vs a straggler         A002
:mod:`.network`       loopback/docker addresses, missing or odd interfaces, socket fallback,   A005-A009,
                      a host cut off, and timeouts nobody explains                              A019
:mod:`.nccl_errors`   IB retry exceeded at init vs late, QP setup, shm, memlock, duplicate     A011-A018
                      GPU, peer access, a stuck watchdog
:mod:`.stall`         every rank entered collective S and S never completed (transport or     A020
                      GPU), tried only when nothing more specific explains the timeouts
:mod:`.node`          a GPU fault, a worker killed by SIGKILL, IB completion errors other     A021, A025,
                      than retries, an IB port or HCA that went down                          A026, A027
:mod:`.setup`         NCCL versions that differ, a peer or store nobody reaches, a            A022-A024
                      rendezvous or store that timed out waiting
:mod:`.coordination`  XLA's coordination service (JAX): a barrier's absent tasks, a task lost  A024, A003
:mod:`.fallback`      an error no rule explains (never silent), and the unexplained lines;   A028, any
                      what its words name (:mod:`.phrases`: a port in use, a GPU fault…)
:mod:`.joins`         who and why as one: a launcher's record or the rank the others waited   any
                      for, with the reading of that worker's own line
====================  =====================================================================  ==========
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from syncdoctor.analyze.model import Category, Diagnosis, Hypothesis
from syncdoctor.analyze.rules.coordination import coordination_service
from syncdoctor.analyze.rules.crash import ddp_unused_parameters, rank_crashed
from syncdoctor.analyze.rules.desync import collective_desync
from syncdoctor.analyze.rules.fallback import unexplained, unrecognised_error, words_over_a_weak_verdict
from syncdoctor.analyze.rules.hccl import hccl_heartbeat, hccl_late_entry
from syncdoctor.analyze.rules.joins import joined
from syncdoctor.analyze.rules.nccl_errors import (
    ib_retry_exceeded,
    local_nccl_failures,
    teardown_hang,
    watchdog_stuck,
)
from syncdoctor.analyze.rules.network import (
    advertised_loopback,
    interface_mismatch,
    interface_missing,
    network_partition,
    socket_fallback,
    unexplained_timeout,
)
from syncdoctor.analyze.rules.node import (
    dataloader_worker_lost,
    gpu_error,
    gpu_out_of_memory,
    ib_completion_error,
    ib_port_down,
    worker_killed,
)
from syncdoctor.analyze.rules.partial import blocked_in_io
from syncdoctor.analyze.rules.progress import lagging_rank, rank_never_joined
from syncdoctor.analyze.rules.setup import (
    build_lacks_backend,
    host_name_shared,
    hpc_fabric_setup,
    library_setup,
    nccl_plugin_mismatch,
    nccl_version_mismatch,
    net_plugin_error,
    notebook_kernel_relaunched,
    pci_tree_unreadable,
    peer_unreachable,
    rendezvous_closed,
    rendezvous_timeout,
    store_addresses_differ,
    store_port_taken,
    topology_file,
    trainers_never_ready,
)
from syncdoctor.analyze.rules.stall import collective_stalled
from syncdoctor.analyze.timeline import Timeline

__all__ = ["RULES", "diagnose"]

Rule = Callable[[Timeline], list[Hypothesis]]

RULES: tuple[Rule, ...] = (
    rank_crashed,
    ddp_unused_parameters,
    collective_desync,
    lagging_rank,
    rank_never_joined,
    blocked_in_io,
    interface_missing,
    advertised_loopback,
    interface_mismatch,
    socket_fallback,
    ib_retry_exceeded,
    local_nccl_failures,
    watchdog_stuck,
    teardown_hang,
    network_partition,
    gpu_error,
    gpu_out_of_memory,
    dataloader_worker_lost,
    worker_killed,
    hccl_heartbeat,
    hccl_late_entry,
    coordination_service,
    ib_completion_error,
    ib_port_down,
    nccl_version_mismatch,
    nccl_plugin_mismatch,
    build_lacks_backend,
    notebook_kernel_relaunched,
    host_name_shared,
    hpc_fabric_setup,
    library_setup,
    peer_unreachable,
    rendezvous_timeout,
    store_addresses_differ,
    rendezvous_closed,
    store_port_taken,
    trainers_never_ready,
    topology_file,
    pci_tree_unreadable,
    net_plugin_error,
)

# When two hypotheses are equally confident, the more specific cause comes first.
_PRECEDENCE = {category: index for index, category in enumerate((
    Category.GPU_ERROR, Category.IB_PORT_DOWN, Category.IB_COMPLETION, Category.NCCL_VERSION_MISMATCH,
    Category.INTERFACE_MISSING, Category.LOOPBACK_ADDRESS, Category.DUPLICATE_GPU, Category.PEER_ACCESS,
    Category.SHM_EXHAUSTED, Category.MEMLOCK_LIMIT, Category.IB_MODIFY_QP, Category.IB_UNREACHABLE_AT_INIT,
    Category.IB_LINK_FAILURE, Category.RANK_OUT_OF_MEMORY, Category.RANK_CRASHED, Category.COLLECTIVE_DESYNC,
    Category.RANK_KILLED, Category.LAGGING_RANK, Category.NETWORK_PARTITION, Category.RANK_NEVER_JOINED,
    Category.PORT_IN_USE, Category.RENDEZVOUS_TIMEOUT, Category.PEER_UNREACHABLE, Category.INTERFACE_MISMATCH,
    Category.SOCKET_FALLBACK, Category.WATCHDOG_STUCK, Category.COLLECTIVE_STALLED, Category.UNEXPLAINED_TIMEOUT,
    Category.UNRECOGNISED,
))}


def _merge(hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
    """One hypothesis per (category, culprits): the most confident, with the evidence of all of them."""
    best: dict[tuple[object, ...], Hypothesis] = {}
    for hypothesis in sorted(hypotheses, key=lambda h: -h.confidence):
        key = (hypothesis.category, hypothesis.culprit_ranks, hypothesis.culprit_hosts, hypothesis.culprit_processes)
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


def _run(rule: Rule, tl: Timeline, failed: list[str]) -> list[Hypothesis]:
    """One rule's hypotheses. A rule that breaks on input it did not expect is a bug of ours: the others still
    run and the report says which one failed (``SYNCDOCTOR_STRICT_RULES=1``, set by the tests, raises)."""
    try:
        return rule(tl)
    except Exception as error:
        if os.environ.get("SYNCDOCTOR_STRICT_RULES") == "1":
            raise
        failed.append(f"internal error: the rule {rule.__name__} failed on these inputs "
                      f"({type(error).__name__}: {str(error)[:120]}); the other rules ran. Please report it.")
        return []


def _joined(tl: Timeline, hypotheses: list[Hypothesis], failed: list[str]) -> list[Hypothesis]:
    """Who and why as one (rules.joins): a launcher's record of a worker's exit, or the rank the others waited for
    or lost, with the reading of the line that worker printed; the hypotheses as they were if that breaks."""
    def who_joined_to_why(t: Timeline) -> list[Hypothesis]:
        return joined(t, hypotheses)

    return _run(who_joined_to_why, tl, failed) or hypotheses


def diagnose(tl: Timeline, notes: Sequence[str] = (), sources: Sequence[str] = ()) -> Diagnosis:
    """Run every rule; hypotheses best first. When nothing more specific explains the timeouts: every rank
    entered the collective and it never completed (A020) when the evidence says so, else say so (A019)."""
    hypotheses: list[Hypothesis] = []
    failed: list[str] = []
    for rule in RULES:
        hypotheses.extend(_run(rule, tl, failed))
    if not any(h.root_cause and h.confidence >= 0.5 for h in hypotheses):
        hypotheses.extend(_run(collective_stalled, tl, failed) or _run(unexplained_timeout, tl, failed))
    if not hypotheses:
        hypotheses.extend(_run(unrecognised_error, tl, failed))  # never silent about an error line
    else:
        so_far = tuple(hypotheses)

        def words_next_to_a_weak_verdict(t: Timeline) -> list[Hypothesis]:
            return words_over_a_weak_verdict(t, so_far)

        hypotheses.extend(_run(words_next_to_a_weak_verdict, tl, failed))
        hypotheses = _joined(tl, hypotheses, failed)
    notes = (*notes, *failed)
    ranked = _rank(_merge(hypotheses))
    return Diagnosis(
        hypotheses=tuple(ranked),
        unexplained=unexplained(tl, ranked),
        ranks=tuple(sorted(tl.ranks)),
        hosts=tuple(sorted(tl.hosts)),
        sources=tuple(sources),
        notes=tuple(notes),
    )
