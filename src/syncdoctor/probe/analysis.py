"""Cross-node consistency, skew and corruption findings from what the probe gathered. Pure: no I/O.

Inputs are plain records: one :class:`NodeFacts` per node (host facts, redacted communication variables,
the interface in use), the collective rows, skews and clock offsets. Outputs are findings (P codes).
Link outliers and the verdict are in :mod:`syncdoctor.probe.verdict`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.host.types import HostFacts
from syncdoctor.kb import Finding, Severity
from syncdoctor.kb.pages import probe as pages
from syncdoctor.probe.records import ClockOffset, CollectiveRow, NodeSkew

__all__ = [
    "NodeFacts",
    "collapse_node_findings",
    "collective_findings",
    "consistency_findings",
    "skew_findings",
]

CLOCK_WARN_S = 1.0


@dataclass(frozen=True)
class NodeFacts:
    """What one node reported (its lowest rank's view; GPU names from all its ranks).

    Attributes:
        node, label: node rank and its name in reports.
        facts: the host facts (None when they could not be gathered).
        env: NCCL_*, GLOO_*, TORCH_NCCL_* variables, redacted.
        interface: the interface in use (the one holding the address used to reach the master).
        gpu_names: the models of the GPUs the node's ranks use.
        versions: torch, torch_cuda, nccl, driver, python.
    """

    node: int
    label: str
    facts: HostFacts | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    interface: str | None = None
    gpu_names: tuple[str, ...] = ()
    versions: Mapping[str, str | None] = field(default_factory=dict)


def _group(values: Mapping[str, Any]) -> str:
    """``{"h0": 1500, "h1": 9000, "h2": 1500}`` -> ``"9000 on h1; 1500 on h0, h2"`` (rarest first)."""
    by_value: dict[str, list[str]] = {}
    for label, value in values.items():
        by_value.setdefault(str(value), []).append(label)
    ordered = sorted(by_value.items(), key=lambda item: (len(item[1]), item[0]))
    return "; ".join(f"{value} on {', '.join(labels)}" for value, labels in ordered)


def _majority(values: Mapping[str, Any]) -> Any:
    counts = Counter(values.values())
    best = max(counts.values())
    return min(v for v, c in counts.items() if c == best)


def _mtu_findings(nodes: Sequence[NodeFacts]) -> list[Finding]:
    mtus: dict[str, int] = {}
    names: dict[str, str] = {}
    for node in nodes:
        iface = node.facts.interface(node.interface) if node.facts and node.interface else None
        if iface is not None and iface.mtu is not None:
            mtus[node.label] = iface.mtu
            names[node.label] = iface.name
    if len(set(mtus.values())) < 2:
        return []
    target = _majority(mtus)
    odd = [label for label, mtu in mtus.items() if mtu != target]
    fix = "; ".join(f"on {label}: ip link set dev {names[label]} mtu {target}" for label in odd)
    return [pages.MTU_MISMATCH.finding(
        f"MTU differs between nodes on the interfaces in use: {_group(mtus)}",
        evidence={"mtu": mtus, "interface": names},
        fix=fix + " (or raise every node and switch port to the larger MTU)",
        key="mtu",
    )]


def _speed_findings(nodes: Sequence[NodeFacts]) -> list[Finding]:
    speeds: dict[str, int] = {}
    for node in nodes:
        iface = node.facts.interface(node.interface) if node.facts and node.interface else None
        if iface is not None and iface.speed_mbps:
            speeds[node.label] = iface.speed_mbps
    if len(set(speeds.values())) < 2:
        return []
    shown = {label: f"{speed} Mb/s" for label, speed in speeds.items()}
    slowest = min(speeds, key=lambda label: speeds[label])
    return [pages.LINK_SPEED_MISMATCH.finding(
        f"link speed differs between nodes: {_group(shown)}",
        evidence={"speed_mbps": speeds},
        fix=f"check the NIC, cable and switch port of {slowest} (`ethtool {nodes[0].interface or 'eth0'}`)",
        key="speed",
    )]


def _ib_findings(nodes: Sequence[NodeFacts]) -> list[Finding]:
    ports: dict[str, dict[str, tuple[str, str, str]]] = {}
    active_anywhere: set[str] = set()
    known = [n for n in nodes if n.facts is not None]
    for node in known:
        assert node.facts is not None
        for port in node.facts.ib_ports:
            key = f"{port.device}:{port.port}"
            rate = f"{port.rate_gbps:g} Gb/s" if port.rate_gbps is not None else "?"
            ports.setdefault(key, {})[node.label] = (port.state_name or "?", rate, port.link_layer or "?")
            if port.active:
                active_anywhere.add(key)
    findings = []
    for key in sorted(active_anywhere):
        seen = {n.label: ports[key].get(n.label, ("absent", "-", "-")) for n in known}
        if len(set(seen.values())) < 2:
            continue
        shown = {label: " ".join(v) for label, v in seen.items()}
        findings.append(pages.IB_PORT_MISMATCH.finding(
            f"IB/RoCE port {key} differs between nodes: {_group(shown)}",
            evidence={"port": key, "state_rate_link_layer": shown},
            fix=f"bring {key} up at the same rate on every node, or set NCCL_IB_HCA to ports active everywhere",
            key=key,
        ))
    return findings


_VERSION_SEVERITY = {"torch": Severity.ERROR, "nccl": Severity.ERROR, "torch_cuda": Severity.WARNING,
                     "driver": Severity.WARNING, "python": Severity.WARNING}


def _version_findings(nodes: Sequence[NodeFacts]) -> list[Finding]:
    findings = []
    for name, severity in _VERSION_SEVERITY.items():
        values = {n.label: n.versions.get(name) for n in nodes if n.versions.get(name)}
        if len(set(values.values())) < 2:
            continue
        findings.append(pages.VERSION_MISMATCH.finding(
            f"{name} version differs between nodes: {_group(values)}",
            evidence={"component": name, "versions": values},
            fix=f"install the same {name} on every node (one image or lock file for the whole job)",
            severity=severity,
            key=name,
        ))
    return findings


def _env_findings(nodes: Sequence[NodeFacts]) -> list[Finding]:
    names = sorted({name for n in nodes for name in n.env})
    findings = []
    for name in names:
        values = {n.label: n.env.get(name) for n in nodes}
        if len(set(values.values())) < 2:
            continue
        set_on = [label for label, value in values.items() if value is not None]
        if len(set_on) < len(values):
            where = ", ".join(set_on)
            shown = {label: (value if value is not None else "(unset)") for label, value in values.items()}
            title = f"{name} is set on {where} only ({_group(shown)})"
        else:
            shown = {label: str(value) for label, value in values.items()}
            title = f"{name} differs between nodes: {_group(shown)}"
        common = _majority({k: v for k, v in values.items() if v is not None}) if set_on else None
        fix = (f"unset {name} on {', '.join(set_on)} or set it on every node"
               if len(set_on) < len(values) / 2 else f"export {name}={common} on every node")
        findings.append(pages.ENV_DIFFERS.finding(title, evidence={"variable": name, "values": shown},
                                                  fix=fix, key=name))
    return findings


def _gpu_findings(nodes: Sequence[NodeFacts]) -> list[Finding]:
    models = {n.label: ", ".join(sorted(set(n.gpu_names))) for n in nodes if n.gpu_names}
    if len(set(models.values())) < 2:
        return []
    return [pages.MIXED_GPU_MODELS.finding(
        f"GPU models differ between nodes: {_group(models)}; the slowest sets the pace",
        evidence={"gpus": models},
        key="gpus",
    )]


def consistency_findings(nodes: Sequence[NodeFacts]) -> list[Finding]:
    """MTU, link speed, IB ports, versions, communication variables and GPU models compared across nodes."""
    if len(nodes) < 2:
        return []
    return [
        *_mtu_findings(nodes),
        *_speed_findings(nodes),
        *_ib_findings(nodes),
        *_version_findings(nodes),
        *_env_findings(nodes),
        *_gpu_findings(nodes),
    ]


def collapse_node_findings(per_node: Mapping[str, Iterable[Finding]]) -> list[Finding]:
    """Per-node check findings, one per (code, title) with the nodes it was seen on in its evidence."""
    merged: dict[tuple[str, str], tuple[Finding, list[str]]] = {}
    for label, findings in per_node.items():
        for finding in findings:
            key = (finding.code, finding.title)
            if key not in merged:
                merged[key] = (finding, [])
            merged[key][1].append(label)
    total = len(per_node)
    out = []
    for finding, labels in merged.values():
        where = "all nodes" if len(labels) == total and total > 1 else ", ".join(labels)
        out.append(Finding(
            code=finding.code,
            severity=finding.severity,
            title=f"{finding.title} (on {where})",
            evidence={**dict(finding.evidence), "nodes": labels},
            why=finding.why,
            fix=finding.fix,
            key=f"{finding.dedup_key()[1]}|{','.join(labels)}",
        ))
    return out


def skew_findings(
    skews: Sequence[NodeSkew], offsets: Sequence[ClockOffset], skew_warn_s: float
) -> list[Finding]:
    """P002 for nodes that arrived late (clock-corrected), P003 for clocks off by more than a second."""
    findings = []
    first = min(skews, key=lambda s: s.first_s) if skews else None
    for skew in skews:
        if first is not None and skew.first_s > skew_warn_s:
            findings.append(pages.NODE_STARTED_LATE.finding(
                f"{skew.label} arrived {skew.first_s:.1f} s after {first.label} "
                f"(clock offset {skew.offset_s:+.3f} s corrected)",
                evidence={"node": skew.node, "late_s": round(skew.first_s, 3),
                          "uncorrected_s": round(skew.raw_first_s, 3), "offset_s": round(skew.offset_s, 6)},
                key=f"node{skew.node}",
            ))
    labels = {s.node: s.label for s in skews}
    for offset in offsets:
        if abs(offset.offset_s) > CLOCK_WARN_S:
            label = labels.get(offset.node, f"node{offset.node}")
            direction = "ahead of" if offset.offset_s > 0 else "behind"
            findings.append(pages.CLOCKS_NOT_SYNCHRONISED.finding(
                f"{label}'s clock is {abs(offset.offset_s):.2f} s {direction} node 0's "
                f"(round trip {offset.rtt_s * 1e3:.2f} ms)",
                evidence={"node": offset.node, "offset_s": round(offset.offset_s, 6), "rtt_s": offset.rtt_s},
                key=f"node{offset.node}",
            ))
    return findings


def collective_findings(rows: Sequence[CollectiveRow], wrong_ranks: Mapping[str, Sequence[int]]) -> list[Finding]:
    """P030 for every collective size with wrong elements (``wrong_ranks``: "op/size" -> ranks)."""
    findings = []
    for row in rows:
        if row.wrong:
            ranks = list(wrong_ranks.get(f"{row.op}/{row.size}", ()))
            findings.append(pages.COLLECTIVE_CORRUPTION.finding(
                f"{row.op} {row.size} B: {row.wrong} wrong element(s)"
                + (f" on rank(s) {', '.join(map(str, ranks))}" if ranks else ""),
                evidence={"op": row.op, "size": row.size, "wrong": row.wrong, "ranks": ranks},
                key=f"{row.op}/{row.size}",
            ))
    return findings


