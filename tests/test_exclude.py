"""From a verdict to an exclusion list: which causes name a node, and each format (plain, slurm, hostfile, k8s);
``syncdoctor analyze --exclude-out`` on a node-level failure (the lab's cut link) and on a desync."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncdoctor.exclude import (
    NODE_LEVEL,
    Suspect,
    compress_hostlist,
    filter_hostfile,
    is_node_name,
    render,
    suspects_from,
)

LAB = Path(__file__).parent / "fixtures" / "analyze" / "lab"


def test_only_node_level_causes_name_suspects() -> None:
    hypotheses = [("A005", ("host2",), 0.75, "host2 lost the network"),
                  ("A002", ("host0",), 0.9, "collective desync"),  # rank-level: a software bug
                  ("A001", ("host1",), 0.8, "rank 3 never reached the collective"),
                  ("A006", ("host3", "host4"), 0.4, "socket fallback"),
                  ("A021", ("host2",), 0.9, "GPU failed")]
    suspects = suspects_from(hypotheses)
    assert [(s.node, s.code) for s in suspects] == [("host2", "A021"), ("host3", "A006"), ("host4", "A006")]
    assert [s.node for s in suspects_from(hypotheses, min_confidence=0.5)] == ["host2"]
    assert set(NODE_LEVEL) & {"A001", "A002", "A003", "A004", "A016", "A019", "A028"} == set()


def test_a_hosts_own_names_for_itself_are_no_node_to_exclude() -> None:
    """``localhost`` (a store a single-node paste dialled), 127.x, ``::1``, 0.0.0.0 and Docker Desktop's name of its
    host are in every machine: ``srun --exclude=localhost`` would keep nothing out. A real node beside them stays."""
    hosts = ("localhost", "127.0.0.1", "::1", "[::ffff:127.0.0.1]", "0.0.0.0", "kubernetes.docker.internal", "gpu7",
             "10.0.0.7")
    suspects = suspects_from([("A021", hosts, 0.9, "GPU failed")])
    assert [s.node for s in suspects] == ["10.0.0.7", "gpu7"]
    assert is_node_name("node-localhost-1") and is_node_name("fe80::1%ib0") and not is_node_name("")


@pytest.mark.parametrize(("nodes", "expected"), [
    (["node08", "node03", "node07"], "node[03,07-08]"),
    (["a-b10", "a-b9"], "a-b[9-10]"),
    (["gpu2", "gpu1", "login", "gpu2"], "gpu[1-2],login"),
    (["node03", "node10"], "node[03,10]"),
    ([], ""),
])
def test_slurm_hostlist(nodes: list[str], expected: str) -> None:
    assert compress_hostlist(nodes) == expected


_SCONTROL = shutil.which("scontrol")


@pytest.mark.skipif(_SCONTROL is None, reason="Slurm is not installed: scripts/ensure-launchers.sh installs it")
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["node", "gpu-a", "x"]), st.integers(0, 120)), min_size=1, max_size=12),
       st.sets(st.sampled_from(["node", "gpu-a", "x"])))
def test_slurm_hostlist_is_what_scontrol_writes(tmp_path_factory: pytest.TempPathFactory,
                                               hosts: list[tuple[str, int]], padded: set[str]) -> None:
    """Clusters name their nodes one way per prefix (node001-node120, or gpu-a1-gpu-a120)."""
    from syncdoctor.exclude import sorted_hosts

    names = [f"{prefix}{number:03d}" if prefix in padded else f"{prefix}{number}" for prefix, number in hosts]
    conf = tmp_path_factory.getbasetemp() / "min-slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=localhost\n")
    done = subprocess.run([str(_SCONTROL), "show", "hostlist", ",".join(sorted_hosts(names))], capture_output=True,
                          text=True, timeout=30, env={**os.environ, "SLURM_CONF": str(conf)})
    assert done.returncode == 0, done.stderr
    assert compress_hostlist(names) == done.stdout.strip()


def test_hostfile_without_the_suspects() -> None:
    deepspeed = "# DeepSpeed\nworker-1 slots=8\nworker-2 slots=8\n\nworker-3 slots=8  # spare\n"
    assert filter_hostfile(deepspeed, ["worker-2", "worker-3.cluster.local"]) == "# DeepSpeed\nworker-1 slots=8\n\n"
    mpi = "node01:4\nnode02:4\nnode03 slots=4 max_slots=8\n"
    assert filter_hostfile(mpi, ["node02"]) == "node01:4\nnode03 slots=4 max_slots=8\n"


def test_probe_findings_name_the_slow_or_missing_node() -> None:
    from syncdoctor.exclude import suspects_from_findings

    findings = [{"code": "P020", "severity": "error", "title": "host2 is the slow node", "evidence": {"host": "host2"}},
                {"code": "P010", "severity": "warning", "title": "MTU differs", "evidence": {"host": "host1"}},
                {"code": "P001", "severity": "error", "title": "node 3 never joined", "evidence": {"name": "n3"}},
                {"code": "P020", "severity": "error", "evidence": "not an object"}]
    assert [(s.node, s.code) for s in suspects_from_findings(findings)] == [("host2", "P020"), ("n3", "P001")]


def test_guard_names_the_minority_on_other_versions_only() -> None:
    from syncdoctor.guard import RankFacts, evaluate
    from syncdoctor.guard.ready import GuardReport, NotReadyError

    versions = {"torch": "2.13.0", "nccl": "2.27.3", "cuda": None, "python": "3.11.7"}

    def facts(host_versions: dict[str, dict[str, str]]) -> dict[int, RankFacts]:
        hosts = sorted(host_versions)
        return {r: RankFacts(rank=r, host=hosts[r // 2], env={}, versions={**versions, **host_versions[hosts[r // 2]]},
                             backend="nccl", timeout_s=600.0) for r in range(2 * len(hosts))}

    def report(found: dict[int, RankFacts]) -> GuardReport:
        return GuardReport(tuple(evaluate(found, range(len(found)))), tuple(range(len(found))),
                           tuple(sorted({f.host for f in found.values()})), 1.0, 0.0)

    odd = report(facts({"n1": {}, "n2": {"nccl": "2.21.5"}, "n3": {}}))
    assert [(s.node, s.code, s.confidence) for s in odd.suspect_nodes] == [("n2", "G103", 0.9)]
    error = NotReadyError(odd)
    assert error.suspect_nodes == odd.suspect_nodes
    assert "suspect nodes (keep them out of the next run): n2 (G103: runs other torch, NCCL" in str(error)
    # two hosts that differ: which one is odd is not known, so neither is a suspect
    tie = report(facts({"n1": {}, "n2": {"nccl": "2.21.5"}}))
    assert [f.code for f in tie.findings] == ["G103"] and tie.suspect_nodes == []
    assert "suspect nodes" not in tie.message()
    # a setting that differs is the launch's, not the node's
    settings = {r: RankFacts(rank=r, host=f"n{r}", env={"NCCL_IB_TIMEOUT": "22" if r else "18"}, versions=versions,
                             backend="nccl", timeout_s=600.0) for r in range(3)}
    assert [f.code for f in report(settings).findings] == ["G101"] and report(settings).suspect_nodes == []


def test_watch_events_name_a_cut_host_and_a_chronic_straggler_only() -> None:
    from syncdoctor.watch.events import CODES, Event

    cut = Event("W106", "confirmed", "host n2 cut", ranks=(2, 3), hosts=("n2 (node 1)",))
    assert [s.to_json() for s in cut.suspect_nodes] == [
        {"node": "n2", "code": "W106", "reason": cut.suspect_nodes[0].reason, "confidence": 0.9}]
    assert cut.to_json()["suspect_nodes"][0]["node"] == "n2"
    slow = Event("W107", "warning", "rank 5 arrives last", ranks=(5,), hosts=("gpu-a17",))
    assert [(s.node, s.confidence) for s in slow.suspect_nodes] == [("gpu-a17", 0.6)]
    # events carry their machines' bare names: those are the suspects, whatever the display text says
    odd = Event("W106", "confirmed", "host cut", ranks=(4,), hosts=("gpu (1) (node 1)",), nodes=("gpu (1)",))
    assert [s.node for s in odd.suspect_nodes] == ["gpu (1)"]
    assert Event.from_json(odd.to_json()).suspect_nodes == odd.suspect_nodes
    assert Event("W106", "resolved", "back", hosts=("n2",)).suspect_nodes == []
    assert Event("W107", "warning", "?", hosts=("?",)).suspect_nodes == []
    for code in sorted(set(CODES) - {"W106", "W107"}):  # late, dead, mismatched ranks are rank-level
        for status in ("warning", "confirmed"):
            assert Event(code, status, "x", ranks=(1,), hosts=("n1",)).to_json()["suspect_nodes"] == [], code


def test_probe_report_carries_its_suspects(tmp_path: Path) -> None:
    from syncdoctor.kb import get_rule
    from syncdoctor.probe.report import ProbeDocument, ProbeReport

    document = ProbeDocument(str(tmp_path / "p.json"))
    slow = get_rule("P020")
    assert slow is not None
    document.set_findings([slow.finding("host2 is the slow node", evidence={"host": "host2"})])
    document.write()
    data = json.loads((tmp_path / "p.json").read_text())
    assert [(s["node"], s["code"]) for s in data["suspect_nodes"]] == [("host2", "P020")]
    report = ProbeReport.from_json(data)
    assert [s.node for s in report.suspect_nodes] == ["host2"] and "suspect_nodes" not in report.extra
    assert report.to_json()["suspect_nodes"] == data["suspect_nodes"]


def test_render_each_format() -> None:
    suspects = [Suspect("node07", "A012", NODE_LEVEL["A012"], 0.8), Suspect("node03", "A005", NODE_LEVEL["A005"], 0.75)]
    assert render(suspects, "plain") == "node03\nnode07\n"
    assert render(suspects, "slurm") == "node[03,07]\n"
    assert render([], "slurm") == render([], "plain") == ""
    k8s = render(suspects, "k8s").splitlines()
    assert k8s[0].startswith("kubectl cordon node03  # A005: ")
    assert k8s[1] == "kubectl taint nodes node03 syncdoctor.io/suspect=A005:NoSchedule --overwrite"
    assert len(k8s) == 4
    assert render(suspects, "hostfile", "node03 slots=2\nnode05 slots=2\n") == "node05 slots=2\n"


def test_analyze_writes_the_cut_host_only(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "exclude.txt"
    result = run_cli("analyze", str(LAB / "cut"), "--exclude-out", str(out), "--exclude-format", "slurm")
    assert result.code == 0, result.out
    assert out.read_text() == "host2\n"
    assert "1 node(s) to exclude written to" in result.out and "host2 (A005)" in result.out
    document = json.loads(run_cli("analyze", str(LAB / "cut"), "--json").out)
    assert [s["node"] for s in document["suspect_nodes"]] == ["host2"]


def test_analyze_on_a_desync_excludes_nobody(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "exclude.txt"
    result = run_cli("analyze", str(LAB / "otherop"), "--exclude-out", str(out), "--exclude-format", "k8s")
    assert result.code == 0, result.out
    assert out.read_text() == ""
    assert "no node-level cause: nothing to exclude" in result.out


def test_analyze_hostfile_format(run_cli, tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("host0 slots=1\nhost1 slots=1\nhost2 slots=1\n")
    out = tmp_path / "hosts.next"
    result = run_cli("analyze", str(LAB / "cut"), "--exclude-out", str(out), "--exclude-format", "hostfile",
                     "--hostfile", str(hostfile))
    assert result.code == 0, result.out
    assert out.read_text() == "host0 slots=1\nhost1 slots=1\n"


def test_exclusion_options_are_checked_before_the_analysis(run_cli, tmp_path: Path) -> None:
    result = run_cli("analyze", str(LAB / "cut"), "--exclude-out", str(tmp_path / "x"), "--exclude-format",
                     "hostfile")
    assert result.code == 2 and "--exclude-format hostfile needs --hostfile FILE" in result.out
    result = run_cli("analyze", str(LAB / "cut"), "--exclude-out", "/proc/nope/x")
    assert result.code == 2 and "--exclude-out" in result.out
    result = run_cli("analyze", str(LAB / "cut"), "--exclude-out", str(tmp_path / "x"), "--min-confidence", "2")
    assert result.code == 2 and "--min-confidence must be between 0 and 1" in result.out
