"""Logs recorded from real lab runs (2-3 hosts in network namespaces, torchrun, gloo, the fault workload),
kept in tests/fixtures/analyze/lab: each fault diagnosed with the right culprit and category, without root.
The same faults are re-run live by test_analyze_e2e.py where the lab is available."""

from __future__ import annotations

import pytest

from analyze_helpers import FIXTURES
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category

LAB = FIXTURES / "lab"

# scenario: (category, culprit ranks, culprit hosts)
EXPECTED = {
    "late": (Category.LAGGING_RANK, (3,), ("host1",)),  # rank 3 sleeps 12 s in load_batch, timeout 5 s
    # one rank per host: rank 1 sleeps 9 s, rank 0 times out after 5 s and exits, then rank 1 enters the
    # all_reduce and its only error is "Connection closed by peer"
    "arrives": (Category.LAGGING_RANK, (1,), ("host1",)),
    "freeze": (Category.LAGGING_RANK, (3,), ("host1",)),  # rank 3 SIGSTOPs itself; torchrun SIGKILLs it later
    "skip": (Category.COLLECTIVE_DESYNC, (1,), ("host0",)),  # rank 1 skips the metric all_reduce
    "crash": (Category.RANK_CRASHED, (3,), ("host1",)),  # rank 3 raises
    "sigkill": (Category.RANK_KILLED, (2,), ("host1",)),  # rank 2 is SIGKILLed
    "loopback": (Category.LOOPBACK_ADDRESS, (0, 1, 2, 3), ("host0", "host1")),  # hostnames map to 127.0.0.1
    # the same fault, another run: host1's ranks only log "Connect timeout [none]"; host0's refused
    # connections to 127.0.0.1 name host1 (the only other host). They cannot show that host0 advertises
    # loopback too (gloo's dialling socket is unbound: local=127.0.0.1 whatever host0 advertises)
    "loopback2": (Category.LOOPBACK_ADDRESS, (2, 3), ("host1",)),
    "ifmissing": (Category.INTERFACE_MISSING, (2, 3), ("host1",)),  # GLOO_SOCKET_IFNAME=ens9 on host1
    "cut": (Category.NETWORK_PARTITION, (2,), ("host2",)),  # host2's link cut (3 hosts, c10d rendezvous)
}


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_lab_fault_diagnosed(scenario) -> None:
    category, ranks, hosts = EXPECTED[scenario]
    root = analyze_paths([str(LAB / scenario)]).diagnosis.root_cause
    assert root is not None, scenario
    assert (root.category, root.culprit_ranks, root.culprit_hosts) == (category, ranks, hosts)
    assert root.evidence, "a verdict always cites lines"
    assert all(e.ref.line > 0 for e in root.evidence)


def test_lab_other_op_found_by_call_sites() -> None:
    # rank 1 calls broadcast where the others all_reduce: every rank enters a collective and times out (or
    # loses a peer that timed out); no message names a mismatch. The tracebacks do: rank 1 waits in
    # _other_collective, the others in reduce_metric.
    root = analyze_paths([str(LAB / "otherop")]).diagnosis.root_cause
    assert root is not None and root.category is Category.COLLECTIVE_DESYNC and root.culprit_ranks == (1,)
    assert "_other_collective" in root.title


def test_the_victims_of_a_crash_are_affected_not_guilty() -> None:
    analysis = analyze_paths([str(LAB / "crash")])
    root = analysis.diagnosis.root_cause
    assert root is not None and root.affected_ranks == (0, 1, 2)
    outcomes = {rank: state.outcome for rank, state in analysis.timeline.ranks.items()}
    assert outcomes == {0: "lost-peer", 1: "lost-peer", 2: "lost-peer", 3: "crashed"}
