"""The link outlier analysis against its definition, on random link sets, and its cost at scale.

The oracle below is the definition written naively (O(L^2) for L links); ``analyse_links`` computes the
same medians by binary search over sorted per-node lists.
"""

from __future__ import annotations

import statistics
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from syncdoctor.probe.records import LinkMeasure
from syncdoctor.probe.verdict import analyse_links


def _link(a: int, b: int, bw: float) -> LinkMeasure:
    return LinkMeasure("inter", a * 2, b * 2, a, b, 1e-4, 1.2e-4, bw, bw, 1, 1)


def _oracle(links: list[LinkMeasure], ratio: float) -> tuple[dict, dict]:
    inter = [link for link in links if link.kind == "inter" and link.bandwidth > 0]
    nodes = sorted({n for link in inter for n in (link.a_node, link.b_node)})
    slow_nodes = {}
    if len(nodes) >= 3:
        for node in nodes:
            own = [link.bandwidth for link in inter if link.touches(node)]
            others = [link.bandwidth for link in inter if not link.touches(node)]
            if own and others and max(own) < ratio * statistics.median(others):
                slow_nodes[node] = (max(own), statistics.median(others))
    healthy = [link for link in inter if not any(link.touches(n) for n in slow_nodes)]
    slow_links = {}
    for link in healthy:
        near = [o.bandwidth for o in healthy if o is not link and (o.touches(link.a_node) or o.touches(link.b_node))]
        if near and link.bandwidth < ratio * statistics.median(near):
            slow_links[(link.a_node, link.b_node)] = (link.bandwidth, statistics.median(near))
    return slow_nodes, slow_links


# bandwidths from a small set, so ties and duplicates are common; pairs may repeat (two measures)
_LINKS = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 6), st.sampled_from([1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 40.0, 100.0])),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_LINKS, st.sampled_from([0.3, 0.5, 0.8]))
def test_analysis_matches_its_definition(raw: list[tuple[int, int, float]], ratio: float) -> None:
    links = [_link(min(a, b), max(a, b), bw) for a, b, bw in raw if a != b]
    view = analyse_links(links, ratio)
    slow_nodes, slow_links = _oracle(links, ratio)
    assert set(view.slow_nodes) == set(slow_nodes)
    for node, (best, reference) in slow_nodes.items():
        assert view.slow_nodes[node][0] == best and abs(view.slow_nodes[node][1] - reference) < 1e-9
    assert set(view.slow_links) == set(slow_links)
    for pair, (bandwidth, reference) in slow_links.items():
        assert view.slow_links[pair][0] == bandwidth and abs(view.slow_links[pair][1] - reference) < 1e-9


def test_full_mesh_of_128_nodes_names_the_slow_node_and_link_in_bounded_work() -> None:
    """8128 links; the naive version needed seconds at 64 nodes. Bounded by work, not wall time: the
    result must be right, and the call is timed only to be reported on failure."""
    links = []
    for a in range(128):
        for b in range(a + 1, 128):
            bw = 100.0 + (a * 7 + b * 3) % 11
            if 5 in (a, b):
                bw = 10.0  # node 5 is slow
            if (a, b) == (20, 30):
                bw = 30.0  # one bad pair
            links.append(_link(a, b, bw))
    started = time.perf_counter()
    view = analyse_links(links, 0.5)
    took = time.perf_counter() - started
    assert set(view.slow_nodes) == {5}, took
    assert set(view.slow_links) == {(20, 30)}, took
