"""The SVG charts and the aggregation helpers, on plain data: well-formed XML, escaped text, counts and
highlights readable from data-* attributes, binning that keeps outliers."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from syncdoctor.report import svg
from syncdoctor.report.aggregate import bin_matrix, pick_top
from syncdoctor.units import format_bytes, format_link_rate, format_seconds

NS = "{http://www.w3.org/2000/svg}"
EVIL = '<script>alert("x")</script> & "quotes"'


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    return root


def having(root: ET.Element, attribute: str) -> list[ET.Element]:
    return [e for e in root.iter() if attribute in e.attrib]


def test_heatmap_cells_values_and_highlight() -> None:
    values = [[None, 10.0, 2.0], [9.0, None, 8.0], [1.0, 7.0, None]]
    root = parse(svg.heatmap(values, ["a", "b", "c"], ["a", "b", "c"], chart_id="h", title="t",
                             highlight_rows=[2]))
    assert root.get("data-chart") == "heatmap" and root.get("id") == "h"
    cells = having(root, "data-cell")
    assert len(cells) == 9
    by_pos = {c.get("data-cell"): c for c in cells}
    assert by_pos["0,0"].get("data-value") == "" and by_pos["0,0"].get("fill") == "#EEEEEE"
    assert float(by_pos["0,1"].get("data-value")) == 10.0
    # the best value is green, the worst red
    assert by_pos["0,1"].get("fill") == svg.color_scale(1.0)
    assert by_pos["2,0"].get("fill") == svg.color_scale(0.1)
    hot = {c.get("data-cell") for c in cells if c.get("data-highlight") == "true"}
    assert hot == {"2,0", "2,1", "2,2", "0,2", "1,2"}


def test_heatmap_latency_scale_and_neutral_diagonal() -> None:
    values = [[5.0, 1e-5], [4e-5, 6.0]]
    root = parse(svg.heatmap(values, ["a", "b"], ["a", "b"], chart_id="l", title="t", good_high=False,
                             neutral_diagonal=True))
    by_pos = {c.get("data-cell"): c for c in having(root, "data-cell")}
    assert by_pos["0,1"].get("fill") == svg.color_scale(1.0)  # lowest latency is best
    assert by_pos["1,0"].get("fill") == svg.color_scale(0.25)
    assert by_pos["0,0"].get("data-diagonal") == "true"  # the diagonal stays out of the scale


def test_every_chart_escapes_text() -> None:
    charts = [
        svg.heatmap([[1.0]], [EVIL], [EVIL], chart_id="a", title=EVIL),
        svg.line_chart({EVIL: [(1024, 1.0), (2048, 2.0)]}, chart_id="b", title=EVIL, x_label=EVIL, y_label=EVIL),
        svg.bar_chart([svg.Bar(EVIL, 1.0, title=EVIL)], chart_id="c", title=EVIL, x_label=EVIL),
        svg.timeline([svg.Lane(EVIL)], [svg.Span(0, 0.0, 1.0, EVIL, EVIL)], chart_id="d", title=EVIL,
                     x_label=EVIL, colors={EVIL: "#000"}),
    ]
    for chart in charts:
        assert "<script>" not in chart
        root = parse(chart)  # well-formed even with markup in every label
        texts = " ".join(t for t in root.itertext())
        assert EVIL in texts


def test_line_chart_points_log_x() -> None:
    series = {"busbw": [(1024, 1.0), (4096, 3.0), (1 << 20, 9.0)], "algbw": [(1024, 2.0), (0, 5.0)]}
    root = parse(svg.line_chart(series, chart_id="l", title="t", x_label="size", y_label="bw", dashed=("algbw",)))
    assert root.get("data-series-count") == "2"
    points = having(root, "data-point")
    assert [p.get("data-point") for p in points].count("busbw") == 3
    assert [p.get("data-point") for p in points].count("algbw") == 1  # size 0 has no place on a log axis
    xs = [float(p.get("cx")) for p in points if p.get("data-point") == "busbw"]
    # log2 scale: 1K -> 4K is 2 doublings, 4K -> 1M is 8
    assert xs[1] - xs[0] == pytest.approx((xs[2] - xs[1]) / 4, rel=0.02)
    lines = [e for e in root.iter(f"{NS}polyline")]
    assert len(lines) == 1  # one point cannot make a line


def test_bar_chart_range_threshold_and_highlight() -> None:
    bars = [svg.Bar("n0", 0.5), svg.Bar("n1", 25.0, start=20.0, highlight=True), svg.Bar("n2", 1.0)]
    root = parse(svg.bar_chart(bars, chart_id="b", title="t", x_label="s", threshold=10.0, threshold_label="warn"))
    groups = having(root, "data-bar")
    assert [g.get("data-bar") for g in groups] == ["n0", "n1", "n2"]
    assert [g.get("data-highlight") for g in groups] == [None, "true", None]
    rect = next(g.find(f"{NS}rect") for g in groups if g.get("data-bar") == "n1")
    assert rect.get("fill") == svg.HIGHLIGHT
    assert float(rect.get("width")) > 0
    assert len(having(root, "data-threshold")) == 1


def test_timeline_lanes_spans_and_points() -> None:
    lanes = [svg.Lane("rank 0"), svg.Lane("rank 3", highlight=True)]
    spans = [svg.Span(1, 0.0, 10.0, "late-rank", "late", highlight=True), svg.Span(0, 5.0, None, "error", "boom"),
             svg.Span(7, 1.0, 2.0, "late-rank", "no such lane")]
    root = parse(svg.timeline(lanes, spans, chart_id="t", title="t", x_label="s",
                              colors={"late-rank": "#E69F00", "error": "#C62828"}))
    assert root.get("data-lanes") == "2"
    assert [g.get("data-highlight") for g in having(root, "data-lane")] == [None, "true"]
    drawn = having(root, "data-span")
    assert len(drawn) == 2
    assert drawn[0].find(f"{NS}rect") is not None  # a span is a bar
    assert drawn[1].find(f"{NS}path") is not None  # a point is a diamond


def test_nice_ticks_and_colors() -> None:
    assert svg.nice_ticks(0, 10, 5) == [0, 2, 4, 6, 8, 10]
    assert svg.nice_ticks(0.0, 0.37, 4) == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert svg.nice_ticks(5, 5) == [5]
    assert svg.color_scale(0.0) == "#d73027" and svg.color_scale(1.0) == "#1a9850"
    assert svg.color_scale(math.nan) == svg.color_scale(0.0)


def test_bin_matrix_keeps_the_worst_link() -> None:
    n = 1024
    values: list[list[float | None]] = [[None if i == j else 100.0 for j in range(n)] for i in range(n)]
    values[700][3] = 1.0  # one slow direction of one link
    binned = bin_matrix(values, [f"node{i}" for i in range(n)], max_side=64, reduce=min)
    assert len(binned.values) == 64 and all(len(row) == 64 for row in binned.values)
    assert binned.binned and binned.size == n
    assert binned.values[700 // 16][3 // 16] == 1.0
    assert binned.values[0][0] == 100.0  # the diagonal bin still has measured cells
    assert binned.labels[0] == "node0..node15" and binned.members[-1][-1] == n - 1
    small = bin_matrix([[1.0, None], [None, 2.0]], ["a", "b"], max_side=64)
    assert not small.binned and small.labels == ("a", "b")


def test_pick_top_keeps_culprits_first() -> None:
    scores = [(1, 5.0), (2, 9.0), (3, 1.0), (4, 9.0)]
    assert pick_top(scores, keep=[3], k=2) == [3, 2, 4]
    assert pick_top(scores, keep=[], k=0) == []


def test_units() -> None:
    assert format_bytes(1024) == "1K" and format_bytes(1536) == "1.5K" and format_bytes(64 << 20) == "64M"
    assert format_link_rate(1.25e9) == "10 Gb/s"
    assert format_seconds(12e-6) == "12 us" and format_seconds(0.0034) == "3.4 ms"
    assert format_seconds(1.25) == "1.25 s" and format_seconds(900) == "15 min"
