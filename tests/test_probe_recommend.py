"""Settings derived from measurements (timeouts from the `syncdoctor recommend` engine, agreeing with it on
recorded probe reports), the env file and the Python snippet; the link schedule; rendering."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import pytest
from rich.console import Console

from syncdoctor.host.types import HostFacts, IbPortFacts, InterfaceFacts
from syncdoctor.probe.analysis import NodeFacts
from syncdoctor.probe.bandwidth import op_shape, summarise
from syncdoctor.probe.links import PairTask, link_schedule, merge_halves, pack_rounds, tournament_rounds
from syncdoctor.probe.recommend import recommend
from syncdoctor.probe.records import CollectiveRow, LinkMeasure, NodeSkew, from_json
from syncdoctor.probe.report import SCHEMA, ProbeDocument, ProbeReport
from syncdoctor.recommend import measurements_from_probe
from syncdoctor.recommend import recommend as engine_recommend
from syncdoctor.report.terminal_probe import render_probe

DATA = Path(__file__).parent / "data" / "probe"


def _port(dev: str, state: int = 4) -> IbPortFacts:
    return IbPortFacts(dev, 1, state=state, state_name="ACTIVE" if state == 4 else "DOWN", rate_gbps=200.0,
                       link_layer="InfiniBand")


def _node(node: int, iface: str = "eth0", ports: tuple[IbPortFacts, ...] = ()) -> NodeFacts:
    facts = HostFacts(interfaces=(InterfaceFacts("lo", loopback=True), InterfaceFacts(iface, ipv4=("10.0.0.1/24",))),
                      ib_ports=ports)
    return NodeFacts(node, f"host{node}", facts=facts, interface=iface)


def test_same_interface_everywhere() -> None:
    advice = recommend([_node(0), _node(1)])
    assert advice.env == {"NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0"}
    assert advice.per_node_env == {}


def test_different_interface_names_give_an_exact_list_and_per_node_gloo() -> None:
    advice = recommend([_node(0, "eth0"), _node(1, "ens5")])
    assert advice.env["NCCL_SOCKET_IFNAME"] == "=ens5,eth0"
    assert "GLOO_SOCKET_IFNAME" not in advice.env
    assert advice.per_node_env == {"host0": {"GLOO_SOCKET_IFNAME": "eth0"}, "host1": {"GLOO_SOCKET_IFNAME": "ens5"}}


def test_loopback_and_single_node_recommend_no_interface() -> None:
    assert "NCCL_SOCKET_IFNAME" not in recommend([_node(0)]).env
    advice = recommend([_node(0, "lo"), _node(1, "lo")])
    assert "NCCL_SOCKET_IFNAME" not in advice.env and any("loopback" in n for n in advice.notes)


def test_hcas_active_on_every_node() -> None:
    both = (_port("mlx5_0"), _port("mlx5_1"))
    advice = recommend([_node(0, ports=both), _node(1, ports=(_port("mlx5_0"), _port("mlx5_1", state=1)))])
    assert advice.env["NCCL_IB_HCA"] == "=mlx5_0:1"
    advice = recommend([_node(0, ports=both), _node(1)])
    assert "NCCL_IB_HCA" not in advice.env and any("no ACTIVE IB" in n for n in advice.notes)
    assert "NCCL_IB_HCA" not in recommend([_node(0), _node(1)]).env


def test_timeouts_are_the_recommend_engine_s_and_follow_skew_and_collective_time() -> None:
    # startup = 600 s loading allowance + 4 x skew + 60 s; steady = 10 x t(25 MiB bucket) + 30 s step
    # allowance, rounded up to 10 s, at least 60 s (docs/recommend.md)
    def rows(size: int, seconds: float) -> list:
        return [summarise("all_reduce", op_shape("all_reduce", size, 4), {r: (seconds, 0) for r in range(4)}, 5)]

    nodes = [_node(0), _node(1)]
    fast = recommend(nodes, rows=rows(16 << 20, 0.01))  # 1.68 GB/s: a bucket in 0.016 s -> 30.2 s -> 60
    assert (fast.startup_timeout_s, fast.steady_timeout_s) == (660, 60)
    slow = recommend(nodes, rows=rows(1 << 20, 0.35))  # 3 MB/s: a bucket in 8.75 s -> 87.5 + 30 -> 120
    assert (slow.startup_timeout_s, slow.steady_timeout_s) == (660, 120)
    assert "3 MB/s" in slow.reasons["steady"]
    crawl = recommend(nodes, rows=rows(1 << 20, 10.0))  # 0.105 MB/s: 250 s a bucket -> 2530, above start-up
    assert crawl.steady_timeout_s == 2530 and crawl.startup_timeout_s == 2530
    assert "raised to the steady-state timeout" in crawl.reasons["startup"]
    skews = [NodeSkew(0, "host0", 0.0, 0.1, 0.0, 0.0), NodeSkew(1, "host1", 95.0, 100.0, 95.0, 0.0)]
    late = recommend(nodes, skews=skews)  # 600 + 4 x 100 + 60
    assert (late.startup_timeout_s, late.steady_timeout_s) == (1060, 60)
    assert "4 x the measured start-up skew 100.00 s (host1's ranks arrived last)" in late.reasons["startup"]
    on_time = recommend(nodes, skews=[NodeSkew(0, "host0", 0.0, 0.1, 0.0, 0.0),
                                      NodeSkew(1, "host1", 1.0, 2.0, 1.0, 0.0)])  # 600 + 8 + 60 -> 670
    assert on_time.startup_timeout_s == 670 < late.startup_timeout_s
    link = LinkMeasure("inter", 0, 2, 0, 1, 1e-4, 1e-4, 5e6, 5e6, 1, 1)
    linked = recommend(nodes, links=[link])  # no collectives: 2 x 25 MiB over 5 MB/s = 10.5 s -> 104.9 + 30
    assert linked.steady_timeout_s == 140 and "slowest link" in linked.reasons["steady"]
    faster = recommend(nodes, links=[LinkMeasure("inter", 0, 2, 0, 1, 1e-4, 1e-4, 5e7, 5e7, 1, 1)])
    assert faster.steady_timeout_s < linked.steady_timeout_s
    # the slowest rank's time counts, not the average (as `syncdoctor recommend` reads a report)
    uneven = summarise("all_reduce", op_shape("all_reduce", 1 << 20, 4),
                       {0: (0.01, 0), 1: (0.01, 0), 2: (0.01, 0), 3: (0.35, 0)}, 5)
    assert recommend(nodes, rows=[uneven]).steady_timeout_s == 120


@pytest.mark.parametrize("name", ["healthy", "slow_link", "late_host"])
def test_probe_and_syncdoctor_recommend_agree_on_recorded_reports(name: str) -> None:
    """The probe's own recommendations and `syncdoctor recommend` on its report, from the same numbers (the
    reports were recorded from lab runs, before the probe used the recommend engine)."""
    doc = json.loads((DATA / f"{name}.json").read_text())
    ours = recommend([], [from_json(NodeSkew, s) for s in doc["clock"]["skew"]],
                     [from_json(CollectiveRow, r) for r in doc["collectives"]],
                     [from_json(LinkMeasure, link) for link in doc["links"]], ranks=len(doc["join"]["registered"]))
    theirs = engine_recommend(measurements_from_probe(doc, name))
    assert (ours.startup_timeout_s, ours.steady_timeout_s) == (theirs.startup_timeout_s, theirs.steady_timeout_s)
    assert all(t.why in ours.reasons["startup"] for t in theirs.startup_terms)
    assert all(t.why in ours.reasons["steady"] for t in theirs.steady_terms)
    # and re-reading a report written with the new numbers gives them back
    rewritten = {**doc, "recommendations": ours.to_json()}
    again = engine_recommend(measurements_from_probe(rewritten, name))
    assert (again.startup_timeout_s, again.steady_timeout_s) == (ours.startup_timeout_s, ours.steady_timeout_s)


def test_env_file_and_python_snippet() -> None:
    advice = recommend([_node(0, "eth0"), _node(1, "ens5")], backend="gloo")
    text = advice.env_file()
    assert "NCCL_SOCKET_IFNAME==ens5,eth0\n" in text and "# on host1 only: GLOO_SOCKET_IFNAME=ens5" in text
    assert f"SYNCDOCTOR_STEADY_TIMEOUT_S={advice.steady_timeout_s}" in text
    assert all(line.startswith("#") or "=" in line for line in text.splitlines())
    snippet = advice.python_snippet()
    compile(snippet, "snippet.py", "exec")
    assert "_set_pg_timeout(STEADY_TIMEOUT)  # later collectives of the default group" in snippet
    assert 'init_process_group(backend="gloo", timeout=STARTUP_TIMEOUT)' in snippet


@pytest.mark.parametrize("count", [2, 3, 4, 5, 8])
def test_tournament_covers_every_pair_once_without_contention(count: int) -> None:
    rounds = tournament_rounds(range(count))
    pairs = [pair for r in rounds for pair in r]
    assert sorted(pairs) == list(itertools.combinations(range(count), 2))
    for r in rounds:
        members = [x for pair in r for x in pair]
        assert len(members) == len(set(members))
    assert len(rounds) == (count - 1 if count % 2 == 0 else count)


def test_schedule_inter_rounds_use_node_leaders_then_intra_rounds() -> None:
    rounds = link_schedule({0: [0, 1], 1: [2, 3], 2: [4, 5]})
    inter = [t for r in rounds for t in r if t.kind == "inter"]
    intra = [t for r in rounds for t in r if t.kind == "intra"]
    assert sorted((t.a, t.b) for t in inter) == [(0, 2), (0, 4), (2, 4)]
    assert sorted((t.a, t.b) for t in intra) == [(0, 1), (2, 3), (4, 5)]
    assert len({t.round for t in intra}) == 1 and len(rounds) == 4
    assert link_schedule({0: [0]}) == []


def test_confirmation_rounds_never_put_a_rank_in_two_pairs() -> None:
    tasks = [PairTask(-1, "inter", a, b, a, b) for a, b in ((0, 4), (2, 4), (0, 2), (6, 8))]
    rounds = pack_rounds(tasks)
    assert [[(t.a, t.b) for t in r] for r in rounds] == [[(0, 4), (6, 8)], [(2, 4)], [(0, 2)]]
    assert pack_rounds([]) == []


def test_merge_takes_the_best_of_every_pass() -> None:
    common = {"a": 0, "b": 2, "kind": "inter", "a_node": 0, "b_node": 1, "round": 0}
    halves = [
        {**common, "latency_s": 2e-4, "latency_median_s": 3e-4, "bw_ab": 1e9, "bytes_ab": 16},
        {**common, "bw_ba": 5e8, "bytes_ba": 8},
        {**common, "latency_s": 1e-4, "latency_median_s": 4e-4, "bw_ab": 8e8, "bytes_ab": 4},
        {**common, "bw_ba": 9e8, "bytes_ba": 32},
        {**common, "a": 4, "b": 5, "bw_ab": 1.0},  # incomplete: dropped
    ]
    [link] = merge_halves(halves)
    assert (link.bw_ab, link.bytes_ab, link.bw_ba, link.bytes_ba) == (1e9, 16, 9e8, 32)
    assert (link.latency_s, link.latency_median_s, link.bandwidth) == (1e-4, 3e-4, 9e8)


def test_document_writes_atomically_and_renders(tmp_path) -> None:
    path = tmp_path / "out" / "probe.json"
    doc = ProbeDocument(str(path), launch={"world_size": 2, "launcher": "local"}, backend="gloo")
    doc.stage("join", "ok", 0.5)
    doc.update(join={"registered": [{}, {}], "nodes": [{"node": 0, "label": "vm", "addr": "127.0.0.1",
                                                          "ranks": [0, 1]}]})
    doc.write()
    assert json.loads(path.read_text())["schema"] == SCHEMA
    row = summarise("all_reduce", op_shape("all_reduce", 4096, 2), {0: (1e-4, 0), 1: (2e-4, 0)}, 3)
    doc.update(collectives=[row.to_json()],
               links=[LinkMeasure("intra", 0, 1, 0, 0, 1e-4, 1e-4, 1e9, 2e9, 4, 4).to_json()],
               verdict={"summary": "one node: no links between nodes to compare"})
    doc.stage("join", "ok", 0.6)
    doc.write()
    data = json.loads(path.read_text())
    assert [s["name"] for s in data["stages"]] == ["join"] and data["stages"][0]["seconds"] == 0.6
    assert list(tmp_path.joinpath("out").iterdir()) == [path]
    buffer = io.StringIO()
    render_probe(ProbeReport.from_json(data), Console(file=buffer, width=130, color_system=None, force_terminal=False))
    text = buffer.getvalue()
    assert "syncdoctor probe: 2 of 2 ranks on 1 node(s), backend gloo, launcher local" in text
    assert "verdict: one node" in text and "vm r0-r1" in text and "8 Gb/s" in text
    assert "# Collective test: all_reduce (gloo, 2 ranks)" in text and "0 error(s), 0 warning(s), 0 info" in text
