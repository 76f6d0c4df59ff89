"""The probe end to end with real gloo ranks on this host (``--local``), including the multi-node code path
over loopback (one ``--local`` launcher per "node"): a stage that fails, clock offsets that must not fake
a skew, and corruption. The network-namespace lab tests are in test_probe_lab.py; a node that never
joins is tested there and in test_probe_cli.py (srun)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from syncdoctor.probe.local import free_port

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_a_failing_stage_keeps_the_stages_before_it(run_cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SYNCDOCTOR_PROBE_HANG_STAGE", "collectives@1")
    report = tmp_path / "probe.json"
    result = run_cli("probe", "--local", "2", "--sizes", "4K", "--ops", "all_reduce", "--link-bytes", "1M",
                     "--stage-timeout", "2", "--json", str(report))
    assert result.code == 4, result.out  # a stage failed: the probe could not measure (not "findings")
    data = _load(report)
    statuses = {s["name"]: s["status"] for s in data["stages"]}
    assert statuses == {"join": "ok", "init": "ok", "clock": "ok", "facts": "ok", "links": "ok",
                        "collectives": "failed"}
    errors = next(s for s in data["stages"] if s["name"] == "collectives")["errors"]
    assert set(errors) == {"0", "1"} and "stalled in collectives" in errors["1"]
    assert data["links"] and data["facts"]["nodes"] and data["clock"]["offsets"]
    assert any(f["code"] == "P031" and "collectives" in f["title"] for f in data["findings"])
    assert not {"P001", "P005", "P030"} & {f["code"] for f in data["findings"]}


def test_two_nodes_over_loopback_clock_offsets_skew_and_corruption(tmp_path) -> None:
    """Two "nodes" (one ``--local 1`` launcher each): node 1's clock is 30 s ahead and it starts 4 s late,
    and its rank corrupts one element of every all_gather."""
    port = free_port()
    procs = []
    node1 = {"SYNCDOCTOR_PROBE_CLOCK_OFFSET_S": "30", "SYNCDOCTOR_PROBE_START_DELAY_S": "4",
             "SYNCDOCTOR_PROBE_INJECT_WRONG": "all_gather@1"}
    for node, extra in ((0, {}), (1, node1)):
        env = dict(os.environ, **extra)
        argv = [sys.executable, "-m", "syncdoctor", "probe", "--local", "1", "--nnodes", "2", "--node-rank", str(node),
                "--master-addr", "127.0.0.1", "--master-port", str(port), "--hosts", "alpha,beta", "--sizes", "4K,64K",
                "--ops", "broadcast,all_gather", "--link-bytes", "1M", "--skew-warn", "1.5",
                "--json", str(tmp_path / f"node{node}.json"), "--emit-env", str(tmp_path / f"node{node}.env")]
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert procs[0].returncode == 1, outputs[0]
    data = _load(tmp_path / "node0.json")
    assert data["schema"] == "syncdoctor.probe/1" and data["finished"] is True
    assert [(s["name"], s["status"]) for s in data["stages"]] == [
        ("join", "ok"), ("init", "ok"), ("clock", "ok"), ("facts", "ok"), ("links", "ok"), ("collectives", "ok")]
    offsets = {o["node"]: o for o in data["clock"]["offsets"]}
    assert offsets[1]["offset_s"] == pytest.approx(30.0, abs=0.05)
    skew = {s["node"]: s for s in data["clock"]["skew"]}
    assert 2.5 < skew[1]["first_s"] < 9.0, skew
    assert skew[1]["raw_first_s"] == pytest.approx(skew[1]["first_s"] + 30.0, abs=0.1)
    codes: dict[str, list[dict]] = {}
    for finding in data["findings"]:
        codes.setdefault(finding["code"], []).append(finding)
    assert codes["P002"][0]["title"].startswith("beta arrived") and codes["P002"][0]["evidence"]["node"] == 1
    assert codes["P003"][0]["title"].startswith("beta's clock is 30.0")
    assert [(link["kind"], link["a_node"], link["b_node"]) for link in data["links"]] == [("inter", 0, 1)]
    assert all(link["bw_ab"] > 0 and link["latency_s"] > 0 for link in data["links"])
    # every element checked: one corrupted element per all_gather size on rank 1, nothing else
    wrong = {(row["op"], row["size"]): row["wrong"] for row in data["collectives"]}
    assert wrong == {("broadcast", 4096): 0, ("broadcast", 65536): 0, ("all_gather", 4096): 1,
                     ("all_gather", 65536): 1}
    assert [f["evidence"]["ranks"] for f in codes["P030"]] == [[1], [1]]
    assert "# Collective test: all_gather (gloo, 2 ranks)" in outputs[0]
    assert "# Out of bounds values : 2 FAILED" in outputs[0] and "P030 all_gather 4096 B" in outputs[0]
    assert "[probe] collectives: 4 sizes measured, 2 wrong element(s)" in outputs[0]
    assert "SYNCDOCTOR_STEADY_TIMEOUT_S=" in (tmp_path / "node0.env").read_text()
    compile((tmp_path / "node0.env.py").read_text(), "node0.env.py", "exec")
    assert not (tmp_path / "node1.json").exists()  # only rank 0 reports
    assert not {"P001", "P005", "P031", "P020", "P021", "P010", "P014"} & set(codes)



def test_warnings_alone_exit_0_unless_asked() -> None:
    """Warnings are printed but the probe exits 0, so torchrun reports no failure for a healthy probe;
    ``--fail-on warning`` makes them count; a failed stage is 4, not "findings"."""
    from syncdoctor.kb import Severity, get_rule
    from syncdoctor.probe.runner import EXIT_STAGE_FAILED, exit_code

    warning = get_rule("P002").finding("node 1 started 3.0 s late")
    error = get_rule("P001").finding("node 1 never joined")
    assert warning.severity == Severity.WARNING and error.severity == Severity.ERROR
    assert exit_code([warning], failed=False) == 0
    assert exit_code([warning], failed=False, fail_on="warning") == 1
    assert exit_code([warning, error], failed=False) == 1
    assert exit_code([], failed=True) == EXIT_STAGE_FAILED == 4
