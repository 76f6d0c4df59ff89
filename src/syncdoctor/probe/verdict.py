"""Link outliers, link rates and the verdict naming the slowest node or link. Pure: no I/O.

Link outliers are judged robustly, by medians: a node is *slow* when even its best link is below
``slow_ratio`` times the median of the links between the other nodes (all its links slow: the node is the
problem); a remaining link is *slow* when it is below ``slow_ratio`` times the median of its two nodes'
other links (one bad pair). With two nodes there is a single link and the two cannot be told apart.
"""

from __future__ import annotations

import bisect
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from syncdoctor.host.types import InterfaceFacts
from syncdoctor.kb import Finding
from syncdoctor.kb.pages import probe as pages
from syncdoctor.probe.analysis import NodeFacts
from syncdoctor.probe.records import CollectiveRow, LinkMeasure
from syncdoctor.units import format_link_rate

__all__ = [
    "LinkAnalysis",
    "Verdict",
    "analyse_links",
    "link_findings",
    "promised_bandwidth",
    "rate_findings",
    "verdict",
]

VIRTUAL_KINDS = frozenset({"loopback", "veth", "bridge", "docker", "tun", "tap", "dummy", "vxlan", "macvlan"})


@dataclass(frozen=True)
class LinkAnalysis:
    """Slow nodes and slow pairs among the inter-node links, with the references they were judged by.

    Attributes:
        slow_nodes: node -> (its best link bandwidth, reference bandwidth).
        slow_links: (a_node, b_node) -> (bandwidth, reference bandwidth).
        median: median bandwidth of all inter-node links (bytes/s), 0 without links.
        slowest: the slowest inter-node link, None without links.
    """

    slow_nodes: Mapping[int, tuple[float, float]]
    slow_links: Mapping[tuple[int, int], tuple[float, float]]
    median: float
    slowest: LinkMeasure | None


def analyse_links(links: Sequence[LinkMeasure], slow_ratio: float = 0.5) -> LinkAnalysis:
    """Tell a slow node (all its links slow) from a single bad pair, by medians.

    O(L log^2 L) for L links: each reference median is an order statistic of sorted per-node lists with a
    few values taken out, found by binary search (1024 nodes have half a million links).
    """
    inter = [(link.a_node, link.b_node, link.bandwidth, link) for link in links if link.kind == "inter"]
    inter = [row for row in inter if row[2] > 0]
    if not inter:
        return LinkAnalysis({}, {}, 0.0, None)
    by_node: dict[int, list[float]] = {}
    for a, b, bandwidth, _ in inter:
        by_node.setdefault(a, []).append(bandwidth)
        by_node.setdefault(b, []).append(bandwidth)
    everything = sorted(row[2] for row in inter)
    slow_nodes: dict[int, tuple[float, float]] = {}
    if len(by_node) >= 3:
        for node in sorted(by_node):
            own = sorted(by_node[node])
            if len(own) < len(everything):
                if own[-1] >= slow_ratio * _median_bound([everything], own):
                    continue  # clearly not slow: the exact median is not needed
                reference = _median_without([everything], own)
                if own[-1] < slow_ratio * reference:
                    slow_nodes[node] = (own[-1], reference)
    healthy = [row for row in inter if row[0] not in slow_nodes and row[1] not in slow_nodes]
    near: dict[int, list[float]] = {}
    same_pair: dict[tuple[int, int], list[float]] = {}
    for a, b, bandwidth, _ in healthy:
        near.setdefault(a, []).append(bandwidth)
        near.setdefault(b, []).append(bandwidth)
        same_pair.setdefault((min(a, b), max(a, b)), []).append(bandwidth)
    for values in near.values():
        values.sort()
    # the bound below for a link measured once (two values removed), per node
    bound_of = {node: values[min(len(values) - 1, len(values) // 2 + 3)] for node, values in near.items()}
    slow_links: dict[tuple[int, int], tuple[float, float]] = {}
    for a, b, bandwidth, _ in healthy:
        pair = same_pair[(min(a, b), max(a, b))]
        if len(pair) == 1 and bandwidth >= slow_ratio * max(bound_of[a], bound_of[b]):
            continue  # the common case, in O(1)
        # the neighbours are the links touching either node, once each: links of this pair are in both
        # nodes' lists, so take this one out of both and every other one out of one
        removed = sorted([bandwidth, *pair])
        lists = [near[a], near[b]]
        if len(lists[0]) + len(lists[1]) <= len(removed):
            continue
        if bandwidth >= slow_ratio * _median_bound(lists, removed):
            continue
        reference = _median_without(lists, removed)
        if bandwidth < slow_ratio * reference:
            slow_links[(a, b)] = (bandwidth, reference)
    return LinkAnalysis(slow_nodes, slow_links, statistics.median(everything), min(inter, key=lambda row: row[2])[3])


def _median_bound(lists: Sequence[Sequence[float]], removed: Sequence[float]) -> float:
    """A value at or above the median of the union of sorted ``lists`` minus ``removed``, in O(1).

    Each list contributes its elements up to a little past its own middle; with ``len(removed) + 1``
    extra per list, more than half of what remains lies at or below the largest of those, even after
    every removed value is taken from below it.
    """
    extra = len(removed) + 1
    return max(values[min(len(values) - 1, len(values) // 2 + extra)] for values in lists if values)


def _median_without(lists: Sequence[Sequence[float]], removed: Sequence[float]) -> float:
    """Median of the multiset union of sorted ``lists`` minus ``removed`` (sorted, each value present)."""
    count = sum(len(values) for values in lists) - len(removed)
    middle = _kth_without(lists, removed, count // 2)
    if count % 2:
        return middle
    return (_kth_without(lists, removed, count // 2 - 1) + middle) / 2


def _kth_without(lists: Sequence[Sequence[float]], removed: Sequence[float], k: int) -> float:
    """The k-th smallest (0-based) of the union of sorted ``lists`` minus ``removed``, by binary search.

    The answer is the smallest value x of any list with at least k+1 remaining values at or below x.
    """

    def at_or_below(x: float) -> int:
        return sum(bisect.bisect_right(values, x) for values in lists) - bisect.bisect_right(removed, x)

    best: float | None = None
    for values in lists:
        low, high = 0, len(values)
        while low < high:
            mid = (low + high) // 2
            if at_or_below(values[mid]) >= k + 1:
                high = mid
            else:
                low = mid + 1
        if low < len(values) and (best is None or values[low] < best):
            best = values[low]
    assert best is not None
    return best


def link_findings(analysis: LinkAnalysis, labels: Mapping[int, str], slow_ratio: float) -> list[Finding]:
    findings = []
    for node, (best, reference) in sorted(analysis.slow_nodes.items()):
        label = labels.get(node, f"node{node}")
        findings.append(pages.SLOW_NODE.finding(
            f"{label} is the slow node: its best link reaches {format_link_rate(best)}, the links between the "
            f"other nodes {format_link_rate(reference)} ({best / reference:.2f}x)",
            evidence={"node": node, "host": label, "best_link_bps": round(best * 8),
                      "reference_bps": round(reference * 8), "slow_ratio": slow_ratio},
            fix=f"check {label}'s NIC, cable, switch port and traffic shaping (`tc qdisc show`, `ethtool`)",
            key=f"node{node}",
        ))
    for (a, b), (bandwidth, reference) in sorted(analysis.slow_links.items()):
        pair = f"{labels.get(a, f'node{a}')}-{labels.get(b, f'node{b}')}"
        findings.append(pages.SLOW_LINK.finding(
            f"the link {pair} is slow: {format_link_rate(bandwidth)}, the other links of its nodes "
            f"{format_link_rate(reference)} ({bandwidth / reference:.2f}x)",
            evidence={"pair": pair, "bandwidth_bps": round(bandwidth * 8), "reference_bps": round(reference * 8)},
            fix=f"check the network path between {pair} (switch ports, routes)",
            key=pair,
        ))
    return findings


def _is_virtual(iface: InterfaceFacts) -> bool:
    """No PCI device behind it (veth, bridge, tunnel...): its sysfs speed is a made-up number."""
    return iface.loopback or iface.kind in VIRTUAL_KINDS or (iface.pci_vendor is None and iface.kind != "infiniband")


def promised_bandwidth(nodes: Mapping[int, NodeFacts], a: int, b: int) -> tuple[float, bool] | None:
    """(bytes/s, physical) the two ends' interfaces in use promise (the lower sysfs speed); None when unknown.

    ``physical`` is False when either end is a virtual interface, whose speed promises nothing.
    """
    speeds, physical = [], True
    for node in (a, b):
        info = nodes.get(node)
        iface = info.facts.interface(info.interface) if info and info.facts and info.interface else None
        if iface is None or not iface.speed_mbps:
            return None
        speeds.append(iface.speed_mbps)
        physical = physical and not _is_virtual(iface)
    return min(speeds) * 1e6 / 8, physical


def rate_findings(
    links: Sequence[LinkMeasure], nodes: Mapping[int, NodeFacts], fraction: float = 0.5
) -> tuple[list[Finding], list[dict[str, Any]]]:
    """P022 for links below ``fraction`` of what physical interfaces promise, and the achieved/promised
    table for every link between nodes (virtual interfaces marked as such)."""
    findings, table = [], []
    for link in links:
        if link.kind != "inter":
            continue
        promised = promised_bandwidth(nodes, link.a_node, link.b_node)
        a_label = nodes[link.a_node].label if link.a_node in nodes else f"node{link.a_node}"
        b_label = nodes[link.b_node].label if link.b_node in nodes else f"node{link.b_node}"
        pair = f"{a_label}-{b_label}"
        rate, physical = promised if promised else (None, False)
        row = {"pair": pair, "achieved_bps": round(link.bandwidth * 8),
               "promised_bps": None if rate is None else round(rate * 8),
               "fraction": None if not rate else round(link.bandwidth / rate, 4), "physical": physical}
        table.append(row)
        if rate and physical and link.bandwidth < fraction * rate:
            findings.append(pages.BANDWIDTH_BELOW_RATE.finding(
                f"{pair}: {format_link_rate(link.bandwidth)} measured on links rated {format_link_rate(rate)} "
                f"({link.bandwidth / rate:.2f}x)",
                evidence=row,
                key=pair,
            ))
    return findings, table


@dataclass(frozen=True)
class Verdict:
    """The one-line answer: the slowest node or link, and how far it is from the rest and from its rate.

    Attributes:
        kind: ``slow_node``, ``slow_link``, ``none`` (no outlier), ``single_node`` or ``incomplete``.
        subject: the node label or ``a-b`` pair (empty for ``none``/``single_node``).
        summary: the sentence shown on top of the report.
        slowest_bandwidth, reference_bandwidth: bytes/s (0 when unknown).
        achieved_vs_promised: per inter-node link: achieved and promised bits/s and the fraction.
        slowest_rank: the rank most often slowest in the collectives, with how many sizes.
    """

    kind: str
    subject: str
    summary: str
    slowest_bandwidth: float = 0.0
    reference_bandwidth: float = 0.0
    achieved_vs_promised: tuple[dict[str, Any], ...] = ()
    slowest_rank: tuple[int, int, int] | None = None  # (rank, sizes it was slowest in, sizes)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "summary": self.summary,
            "slowest_bandwidth_bps": round(self.slowest_bandwidth * 8),
            "reference_bandwidth_bps": round(self.reference_bandwidth * 8),
            "achieved_vs_promised": list(self.achieved_vs_promised),
            "slowest_rank": None if self.slowest_rank is None else {
                "rank": self.slowest_rank[0], "sizes": self.slowest_rank[1], "of": self.slowest_rank[2]},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        """Read :meth:`to_json`'s form back; missing keys take their defaults (``kind``, ``subject`` and
        ``summary`` empty). Raises ValueError/TypeError on values of the wrong type."""
        slowest = data.get("slowest_rank")
        rank = None
        if isinstance(slowest, Mapping):
            rank = (int(slowest["rank"]), int(slowest["sizes"]), int(slowest["of"]))
        rows = data.get("achieved_vs_promised") or ()
        return cls(
            kind=str(data.get("kind") or ""),
            subject=str(data.get("subject") or ""),
            summary=str(data.get("summary") or ""),
            slowest_bandwidth=float(data.get("slowest_bandwidth_bps") or 0) / 8,
            reference_bandwidth=float(data.get("reference_bandwidth_bps") or 0) / 8,
            achieved_vs_promised=tuple(dict(row) for row in rows if isinstance(row, Mapping)),
            slowest_rank=rank,
        )


def verdict(
    analysis: LinkAnalysis,
    labels: Mapping[int, str],
    rows: Sequence[CollectiveRow] = (),
    achieved: Sequence[dict[str, Any]] = (),
) -> Verdict:
    """Name the slowest node or link; mention the rank most often slowest in the collectives."""
    slowest_rank = None
    if rows:
        counts = Counter(row.slowest_rank for row in rows)
        rank, times = counts.most_common(1)[0]
        slowest_rank = (rank, times, len(rows))
    promised = tuple(achieved)
    if analysis.slow_nodes:
        node, (best, reference) = min(analysis.slow_nodes.items(), key=lambda item: item[1][0] / item[1][1])
        label = labels.get(node, f"node{node}")
        return Verdict("slow_node", label,
                       f"{label} is the slow node: all its links are slow (best {format_link_rate(best)}, the "
                       f"other nodes' links {format_link_rate(reference)}, {best / reference:.2f}x)",
                       best, reference, promised, slowest_rank)
    if analysis.slow_links:
        (a, b), (bandwidth, reference) = min(analysis.slow_links.items(), key=lambda item: item[1][0] / item[1][1])
        pair = f"{labels.get(a, f'node{a}')}-{labels.get(b, f'node{b}')}"
        return Verdict("slow_link", pair,
                       f"the link {pair} is slow ({format_link_rate(bandwidth)}, its nodes' other links "
                       f"{format_link_rate(reference)}); both nodes are fine on their other links",
                       bandwidth, reference, promised, slowest_rank)
    if analysis.slowest is None:
        return Verdict("single_node", "", "one node: no links between nodes to compare",
                       achieved_vs_promised=promised, slowest_rank=slowest_rank)
    link = analysis.slowest
    pair = f"{labels.get(link.a_node, f'node{link.a_node}')}-{labels.get(link.b_node, f'node{link.b_node}')}"
    return Verdict("none", "",
                   f"no slow node or link: the slowest link {pair} reaches {format_link_rate(link.bandwidth)} "
                   f"(median of all links {format_link_rate(analysis.median)})",
                   link.bandwidth, analysis.median, promised, slowest_rank)
