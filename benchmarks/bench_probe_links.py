"""Cost of probe's link outlier analysis (slow node / slow link) as the node count grows.

Run: .venv/bin/python benchmarks/bench_probe_links.py [--nodes 16,64,256,1024]

A full mesh of inter-node links (one slow node, one bad pair) is analysed by ``analyse_links``; for the
sizes where it is affordable the naive definition (every median recomputed from all links: O(L^2) for L
links, kept in tests/test_probe_links_scale.py as the test oracle) runs side by side on the same links and
the ratio is printed.
"""

from __future__ import annotations

import argparse
import statistics
import time

from syncdoctor.probe.records import LinkMeasure
from syncdoctor.probe.verdict import analyse_links


def mesh(nodes: int) -> list[LinkMeasure]:
    links = []
    for a in range(nodes):
        for b in range(a + 1, nodes):
            bw = 100.0 + (a * 7 + b * 3) % 11
            if 1 in (a, b):
                bw = 10.0
            if (a, b) == (2, 3):
                bw = 30.0
            links.append(LinkMeasure("inter", 2 * a, 2 * b, a, b, 1e-4, 1e-4, bw, bw, 1, 1))
    return links


def naive(links: list[LinkMeasure], ratio: float) -> int:
    found = 0
    for link in links:
        near = [o.bandwidth for o in links if o is not link and (o.touches(link.a_node) or o.touches(link.b_node))]
        found += link.bandwidth < ratio * statistics.median(near)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", default="16,64,256,1024")
    args = parser.parse_args()
    print(f"{'nodes':>6} {'links':>8} {'analyse_links':>14} {'naive':>10} {'ratio':>8}")
    for nodes in (int(x) for x in args.nodes.split(",")):
        links = mesh(nodes)
        started = time.perf_counter()
        view = analyse_links(links, 0.5)
        fast = time.perf_counter() - started
        assert set(view.slow_nodes) == {1} and set(view.slow_links) == {(2, 3)}, view
        slow_text = ratio_text = "-"
        if len(links) <= 2100:
            started = time.perf_counter()
            naive(links, 0.5)
            slow = time.perf_counter() - started
            slow_text, ratio_text = f"{slow:.2f}s", f"{slow / fast:.0f}x"
        print(f"{nodes:>6} {len(links):>8} {fast:>13.3f}s {slow_text:>10} {ratio_text:>8}")


if __name__ == "__main__":
    main()
