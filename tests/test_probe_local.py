"""The probe end to end with real gloo ranks on this host (``--local``), including the multi-node code path
over loopback (one ``--local`` launcher per "node"): corruption, a stage that fails, a node that never
joins, and clock offsets that must not fake a skew. The network-namespace lab tests are in
test_probe_lab.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from syncdoctor.probe.local import free_port

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_local_probe_checks_every_element_and_reports_corruption(run_cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SYNCDOCTOR_PROBE_INJECT_WRONG", "all_gather@1")
    report, env_file = tmp_path / "probe.json", tmp_path / "probe.env"
    result = run_cli("probe", "--local", "2", "--sizes", "4K,64K", "--ops", "all_reduce,all_gather",
                     "--link-bytes", "1M", "--json", str(report), "--emit-env", str(env_file))
    assert result.code == 1, result.out
    data = _load(report)
    assert data["schema"] == "syncdoctor.probe/1" and data["finished"] is True
    assert [(s["name"], s["status"]) for s in data["stages"]] == [
        ("join", "ok"), ("init", "ok"), ("clock", "ok"), ("facts", "ok"), ("links", "ok"), ("collectives", "ok")]
    wrong = {(row["op"], row["size"]): row["wrong"] for row in data["collectives"]}
    assert wrong == {("all_reduce", 4096): 0, ("all_reduce", 65536): 0, ("all_gather", 4096): 1,
                     ("all_gather", 65536): 1}
    corrupt = [f for f in data["findings"] if f["code"] == "P030"]
    assert len(corrupt) == 2 and all(f["evidence"]["ranks"] == [1] for f in corrupt)
    assert [(link["kind"], link["a_rank"], link["b_rank"]) for link in data["links"]] == [("intra", 0, 1)]
    assert all(link["bw_ab"] > 0 and link["latency_s"] > 0 for link in data["links"])
    assert "# Collective test: all_gather (gloo, 2 ranks)" in result.out
    assert "# Out of bounds values : 2 FAILED" in result.out and "P030 all_gather 4096 B" in result.out
    assert "[probe] collectives: 4 sizes measured, 2 wrong element(s)" in result.out
    assert "SYNCDOCTOR_STEADY_TIMEOUT_S=" in env_file.read_text()
    compile((tmp_path / "probe.py").read_text(), "probe.py", "exec")


def test_a_failing_stage_keeps_the_stages_before_it(run_cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SYNCDOCTOR_PROBE_HANG_STAGE", "collectives@1")
    report = tmp_path / "probe.json"
    result = run_cli("probe", "--local", "2", "--sizes", "4K", "--ops", "all_reduce", "--link-bytes", "1M",
                     "--stage-timeout", "3", "--json", str(report))
    assert result.code == 1, result.out
    data = _load(report)
    statuses = {s["name"]: s["status"] for s in data["stages"]}
    assert statuses == {"join": "ok", "init": "ok", "clock": "ok", "facts": "ok", "links": "ok",
                        "collectives": "failed"}
    errors = next(s for s in data["stages"] if s["name"] == "collectives")["errors"]
    assert set(errors) == {"0", "1"} and "stalled in collectives" in errors["1"]
    assert data["links"] and data["facts"]["nodes"] and data["clock"]["offsets"]
    assert any(f["code"] == "P031" and "collectives" in f["title"] for f in data["findings"])


def test_a_node_that_never_joins_is_named_within_the_join_timeout(run_cli, tmp_path) -> None:
    report = tmp_path / "probe.json"
    started = time.monotonic()
    result = run_cli("probe", "--local", "1", "--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1",
                     "--master-port", str(free_port()), "--hosts", "alpha,beta", "--join-timeout", "3",
                     "--json", str(report))
    elapsed = time.monotonic() - started
    assert result.code == 1, result.out
    assert "P001 node 1 (beta) never joined: rank(s) 1 (1 of 2 ranks registered within 3 s)" in result.out
    data = _load(report)
    assert data["join"]["missing"] == [{"node": 1, "name": "beta", "ranks": [1], "partial": False}]
    join = data["stages"][0]
    assert join["name"] == "join" and join["status"] == "failed" and 3.0 <= join["seconds"] < 4.5
    assert elapsed < 60  # start-up (torch import) plus the join timeout, never a process group timeout


def test_clock_offsets_do_not_fake_a_skew(tmp_path) -> None:
    port = free_port()
    procs = []
    for node, extra in ((0, {}), (1, {"SYNCDOCTOR_PROBE_CLOCK_OFFSET_S": "30", "SYNCDOCTOR_PROBE_START_DELAY_S": "4"})):
        env = dict(os.environ, **extra)
        argv = [sys.executable, "-m", "syncdoctor", "probe", "--local", "1", "--nnodes", "2", "--node-rank", str(node),
                "--master-addr", "127.0.0.1", "--master-port", str(port), "--hosts", "alpha,beta", "--sizes", "4K",
                "--ops", "broadcast", "--link-bytes", "1M", "--skew-warn", "1.5", "--json",
                str(tmp_path / f"node{node}.json")]
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert procs[0].returncode == 1, outputs[0]  # the late node is a warning
    data = _load(tmp_path / "node0.json")
    offsets = {o["node"]: o for o in data["clock"]["offsets"]}
    assert offsets[1]["offset_s"] == pytest.approx(30.0, abs=0.05)
    skew = {s["node"]: s for s in data["clock"]["skew"]}
    assert 2.5 < skew[1]["first_s"] < 9.0, skew
    assert skew[1]["raw_first_s"] == pytest.approx(skew[1]["first_s"] + 30.0, abs=0.1)
    codes = {f["code"]: f for f in data["findings"]}
    assert codes["P002"]["title"].startswith("beta arrived") and codes["P002"]["evidence"]["node"] == 1
    assert codes["P003"]["title"].startswith("beta's clock is 30.0")
    assert [(link["kind"], link["a_node"], link["b_node"]) for link in data["links"]] == [("inter", 0, 1)]
    assert not (tmp_path / "node1.json").exists()  # only rank 0 reports
