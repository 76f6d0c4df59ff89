"""Cross-node findings, link outliers and the verdict, from plain records (one positive and one negative
case per P code)."""

from __future__ import annotations

from syncdoctor.host.types import HostFacts, IbPortFacts, InterfaceFacts
from syncdoctor.kb import Finding, Severity
from syncdoctor.probe.analysis import (
    NodeFacts,
    collapse_node_findings,
    collective_findings,
    consistency_findings,
    skew_findings,
)
from syncdoctor.probe.assemble import assess, collective_rows, missing_findings, node_facts, stage_failure
from syncdoctor.probe.join import MissingNode
from syncdoctor.probe.records import ClockOffset, LinkMeasure, NodeInfo, NodeSkew
from syncdoctor.probe.verdict import analyse_links, link_findings, rate_findings, verdict
from syncdoctor.units import format_link_rate

MBIT = 1e6 / 8
GBIT = 1e9 / 8


def _facts(mtu: int = 1500, speed: int | None = 10000, ports: tuple[IbPortFacts, ...] = (),
           vendor: str | None = "0x15b3") -> HostFacts:
    eth = InterfaceFacts("eth0", up=True, running=True, mtu=mtu, speed_mbps=speed, ipv4=("10.0.0.1/24",),
                         kind="ether", pci_vendor=vendor)
    return HostFacts(interfaces=(InterfaceFacts("lo", loopback=True, mtu=65536, kind="loopback"), eth),
                     ib_ports=ports)


def _node(node: int, **kw: object) -> NodeFacts:
    facts = kw.pop("facts", _facts())
    base = {"interface": "eth0", "versions": {"torch": "2.13.0", "nccl": "2.21.5", "python": "3.11.7"}}
    base.update(kw)
    return NodeFacts(node, f"host{node}", facts=facts, **base)  # type: ignore[arg-type]


def _codes(findings: list[Finding]) -> list[str]:
    return sorted(f.code for f in findings)


def test_identical_nodes_have_no_consistency_findings() -> None:
    assert consistency_findings([_node(0), _node(1), _node(2)]) == []
    assert consistency_findings([_node(0, facts=_facts(mtu=9000))]) == []  # one node: nothing to compare


def test_mtu_mismatch_on_the_interface_in_use() -> None:
    findings = consistency_findings([_node(0), _node(1, facts=_facts(mtu=9000)), _node(2)])
    assert _codes(findings) == ["P010"]
    assert findings[0].severity is Severity.ERROR
    assert findings[0].title.endswith("9000 on host1; 1500 on host0, host2")
    assert findings[0].fix.startswith("on host1: ip link set dev eth0 mtu 1500")
    # a different MTU on an interface not in use does not count
    base = _facts()
    jumbo = InterfaceFacts("eth1", up=True, running=True, mtu=9000, ipv4=("10.1.0.1/24",), kind="ether")
    other = _node(1, facts=HostFacts(interfaces=(*base.interfaces, jumbo)))
    assert consistency_findings([_node(0), other]) == []


def test_link_speed_mismatch() -> None:
    findings = consistency_findings([_node(0), _node(1, facts=_facts(speed=1000))])
    assert _codes(findings) == ["P011"] and "1000 Mb/s on host1" in findings[0].title
    assert consistency_findings([_node(0), _node(1, facts=_facts(speed=None))]) == []


def test_ib_port_mismatch_state_and_rate() -> None:
    up = IbPortFacts("mlx5_0", 1, state=4, state_name="ACTIVE", rate_gbps=200.0, link_layer="InfiniBand")
    slow = IbPortFacts("mlx5_0", 1, state=4, state_name="ACTIVE", rate_gbps=100.0, link_layer="InfiniBand")
    down = IbPortFacts("mlx5_0", 1, state=1, state_name="DOWN", rate_gbps=200.0, link_layer="InfiniBand")
    same = [_node(0, facts=_facts(ports=(up,))), _node(1, facts=_facts(ports=(up,)))]
    assert consistency_findings(same) == []
    rate = consistency_findings([_node(0, facts=_facts(ports=(up,))), _node(1, facts=_facts(ports=(slow,)))])
    assert _codes(rate) == ["P012"] and "100 Gb/s" in rate[0].title
    state = consistency_findings([_node(0, facts=_facts(ports=(up,))), _node(1, facts=_facts(ports=(down,)))])
    assert _codes(state) == ["P012"] and "DOWN" in state[0].title
    absent = consistency_findings([_node(0, facts=_facts(ports=(up,))), _node(1, facts=_facts())])
    assert _codes(absent) == ["P012"] and "absent" in absent[0].title


def test_version_mismatch_severity_by_component() -> None:
    torch = consistency_findings([_node(0), _node(1, versions={"torch": "2.12.0", "nccl": "2.21.5",
                                                                "python": "3.11.7"})])
    assert _codes(torch) == ["P013"] and torch[0].severity is Severity.ERROR
    python = consistency_findings([_node(0), _node(1, versions={"torch": "2.13.0", "nccl": "2.21.5",
                                                                 "python": "3.10.1"})])
    assert _codes(python) == ["P013"] and python[0].severity is Severity.WARNING
    unknown = consistency_findings([_node(0), _node(1, versions={"torch": "2.13.0", "nccl": None})])
    assert "P013" not in _codes(unknown)


def test_variable_set_on_one_node_only_and_differing_values() -> None:
    findings = consistency_findings([
        _node(0, env={"NCCL_IB_HCA": "mlx5_0"}),
        _node(1, env={"NCCL_IB_HCA": "mlx5_1", "NCCL_DEBUG": "INFO"}),
        _node(2, env={"NCCL_IB_HCA": "mlx5_0"}),
    ])
    titles = {f.evidence["variable"]: f for f in findings}
    assert _codes(findings) == ["P014", "P014"]
    assert titles["NCCL_DEBUG"].title.startswith("NCCL_DEBUG is set on host1 only")
    assert titles["NCCL_DEBUG"].fix == "unset NCCL_DEBUG on host1 or set it on every node"
    assert "mlx5_1 on host1; mlx5_0 on host0, host2" in titles["NCCL_IB_HCA"].title
    assert titles["NCCL_IB_HCA"].fix == "export NCCL_IB_HCA=mlx5_0 on every node"
    assert consistency_findings([_node(0, env={"NCCL_DEBUG": "INFO"}), _node(1, env={"NCCL_DEBUG": "INFO"})]) == []


def test_mixed_gpu_models() -> None:
    mixed = consistency_findings([_node(0, gpu_names=("NVIDIA H100",)), _node(1, gpu_names=("NVIDIA A100",))])
    assert _codes(mixed) == ["P015"] and "slowest sets the pace" in mixed[0].title
    assert consistency_findings([_node(0, gpu_names=("NVIDIA H100",)), _node(1, gpu_names=("NVIDIA H100",))]) == []


def test_identical_per_node_findings_are_collapsed() -> None:
    same = Finding("E101", Severity.ERROR, "NCCL_IB_TIMEOUT=60 is out of range", fix="export NCCL_IB_TIMEOUT=22")
    only = Finding("H003", Severity.WARNING, "memlock is limited")
    collapsed = collapse_node_findings({"host0": [same], "host1": [same, only], "host2": [same]})
    by_code = {f.code: f for f in collapsed}
    assert by_code["E101"].title.endswith("(on all nodes)") and by_code["E101"].evidence["nodes"] == [
        "host0", "host1", "host2"]
    assert by_code["H003"].title.endswith("(on host1)") and by_code["E101"].fix == same.fix


def _link(a: int, b: int, bw: float, back: float | None = None, kind: str = "inter") -> LinkMeasure:
    return LinkMeasure(kind, a * 2, b * 2, a, b, 1e-4, 1.2e-4, bw, back if back is not None else bw, 1, 1)


LABELS = {0: "host0", 1: "host1", 2: "host2", 3: "host3"}


def test_a_node_with_all_links_slow_is_the_slow_node() -> None:
    links = [_link(0, 1, 2 * GBIT), _link(0, 2, 40 * MBIT), _link(1, 2, 38 * MBIT)]
    view = analyse_links(links, 0.5)
    assert set(view.slow_nodes) == {2} and view.slow_links == {}
    findings = link_findings(view, LABELS, 0.5)
    assert _codes(findings) == ["P020"] and findings[0].title.startswith("host2 is the slow node")
    result = verdict(view, LABELS)
    assert result.kind == "slow_node" and result.subject == "host2"
    assert result.slowest_bandwidth == 40 * MBIT


def test_a_single_bad_pair_is_a_slow_link_not_a_slow_node() -> None:
    links = [_link(0, 1, 2 * GBIT), _link(0, 2, 2.1 * GBIT), _link(1, 2, 1.9 * GBIT),
             _link(0, 3, 2 * GBIT), _link(1, 3, 2 * GBIT), _link(2, 3, 100 * MBIT)]
    view = analyse_links(links, 0.5)
    assert view.slow_nodes == {} and set(view.slow_links) == {(2, 3)}
    findings = link_findings(view, LABELS, 0.5)
    assert _codes(findings) == ["P021"] and "host2-host3" in findings[0].title
    assert verdict(view, LABELS).kind == "slow_link"


def test_one_slow_direction_counts() -> None:
    links = [_link(0, 1, 2 * GBIT), _link(0, 2, 2 * GBIT, 30 * MBIT), _link(1, 2, 2 * GBIT, 30 * MBIT)]
    assert set(analyse_links(links, 0.5).slow_nodes) == {2}


def test_even_links_give_no_outlier() -> None:
    links = [_link(0, 1, 2 * GBIT), _link(0, 2, 1.4 * GBIT), _link(1, 2, 1.7 * GBIT),
             _link(0, 0, 9 * GBIT, kind="intra")]
    view = analyse_links(links, 0.5)
    assert view.slow_nodes == {} and view.slow_links == {}
    assert link_findings(view, LABELS, 0.5) == []
    result = verdict(view, LABELS)
    assert result.kind == "none" and "host0-host2" in result.summary


def test_two_nodes_and_one_node() -> None:
    view = analyse_links([_link(0, 1, 40 * MBIT)], 0.5)
    assert view.slow_nodes == {} and view.slow_links == {}
    assert verdict(view, LABELS).kind == "none"
    assert verdict(analyse_links([], 0.5), LABELS).kind == "single_node"


def test_bandwidth_below_the_rate_of_physical_interfaces_only() -> None:
    nodes = {0: _node(0), 1: _node(1)}
    findings, table = rate_findings([_link(0, 1, 1 * GBIT)], nodes)
    assert _codes(findings) == ["P022"] and table[0]["fraction"] == 0.1 and table[0]["physical"]
    fine, _ = rate_findings([_link(0, 1, 8 * GBIT)], nodes)
    assert fine == []
    virtual = {0: _node(0, facts=_facts(vendor=None)), 1: _node(1)}
    findings, table = rate_findings([_link(0, 1, 1 * GBIT)], virtual)
    assert findings == [] and table[0]["physical"] is False and table[0]["fraction"] == 0.1


def test_late_node_and_unsynchronised_clocks() -> None:
    skews = [NodeSkew(0, "host0", 0.0, 0.4, 0.0, 0.0), NodeSkew(1, "host1", 12.0, 12.3, 42.0, 30.0)]
    offsets = [ClockOffset(0, 0.0, 0.0, 0), ClockOffset(1, 30.0, 2e-4, 8)]
    findings = skew_findings(skews, offsets, skew_warn_s=10.0)
    assert _codes(findings) == ["P002", "P003"]
    late = next(f for f in findings if f.code == "P002")
    assert late.title.startswith("host1 arrived 12.0 s after host0") and late.evidence["uncorrected_s"] == 42.0
    assert skew_findings(skews, [ClockOffset(1, 0.2, 1e-4, 8)], skew_warn_s=20.0) == []


def test_wrong_elements_are_corruption() -> None:
    payloads = [
        [{"op": "all_reduce", "size": 4096, "count": 1024, "in_numel": 1024, "out_numel": 1024, "iters": 3,
          "time_s": 1e-4, "wrong": 0}],
        [{"op": "all_reduce", "size": 4096, "count": 1024, "in_numel": 1024, "out_numel": 1024, "iters": 3,
          "time_s": 2e-4, "wrong": 1}],
    ]
    rows, wrong_ranks = collective_rows(payloads)
    assert rows[0].wrong == 1 and rows[0].slowest_rank == 1 and wrong_ranks == {"all_reduce/4096": [1]}
    findings = collective_findings(rows, wrong_ranks)
    assert _codes(findings) == ["P030"] and findings[0].title == "all_reduce 4096 B: 1 wrong element(s) on rank(s) 1"
    payloads[1][0]["wrong"] = 0
    clean, none = collective_rows(payloads)
    assert collective_findings(clean, none) == []
    assert collective_rows([payloads[0], None])[0] == []  # a rank without the size: no row


def test_stage_failures_and_missing_nodes() -> None:
    assert stage_failure("links", [{"status": "ok"}, {"status": "ok"}]) is None
    failure = stage_failure("links", [{"status": "ok"}, {"status": "failed", "error": "RuntimeError: timeout"}])
    assert failure is not None and failure.code == "P031" and "rank(s) 1: RuntimeError: timeout" in failure.title
    [never] = missing_findings([MissingNode(2, "host2", (4, 5))], 4, 6, 8.0)
    assert never.code == "P001" and never.title == "node 2 (host2) never joined: rank(s) 4, 5 (4 of 6 ranks " \
                                                   "registered within 8 s)"
    [elastic] = missing_findings([MissingNode(None, "host2", (2,))], 2, 3, 60.0)
    assert "launcher formed the job with 2 of the 3" in elastic.title


def test_assess_and_node_facts_from_payloads() -> None:
    nodes = [NodeInfo(0, "host0", "host0", "10.0.0.1", (0, 1)), NodeInfo(1, "host1", "host1", "10.0.0.2", (2, 3))]
    payload = {"facts": _facts().to_json(), "env": {}, "interface": "eth0", "gpu": None,
               "versions": {"torch": "2.13.0"}}
    payloads = [payload, {**payload, "facts": None}, {**payload, "facts": _facts(mtu=9000).to_json(),
                                                       "env": {"NCCL_DEBUG": "WARN"}}, None]
    facts = node_facts(payloads, nodes)
    assert facts[1].facts is not None and facts[1].facts.interface("eth0").mtu == 9000  # type: ignore[union-attr]
    result = assess(nodes, facts, links=[_link(0, 1, 9 * GBIT)], validate=lambda node: [])
    assert _codes(list(result.findings)) == ["P010", "P014"]
    assert result.verdict.kind == "none" and result.recommendations.env["GLOO_SOCKET_IFNAME"] == "eth0"


def test_format_rate() -> None:
    assert format_link_rate(40 * MBIT) == "40 Mb/s"
    assert format_link_rate(2.5 * GBIT) == "2.5 Gb/s"
    assert format_link_rate(12) == "96 b/s"
