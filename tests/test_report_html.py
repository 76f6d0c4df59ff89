"""The HTML pages: a real probe report and the event file of a real watched job, synthetic inputs for the
shapes and sizes that cannot be run here (1024 ranks, analyze until it lands), self-containment, escaping
and redaction, and input detection with clear errors."""

from __future__ import annotations

import json
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from report_inputs import real_analyze_json, real_probe_json, real_watched_job
from syncdoctor.errors import InputError
from syncdoctor.report import synthetic
from syncdoctor.report.html import (
    load_report_input,
    render_analyze_html,
    render_html,
    render_probe_html,
    render_watch_html,
)
from syncdoctor.report.html_probe import MAX_BARS, MAX_MATRIX
from syncdoctor.report.html_watch import MAX_LANES

LIMIT_1024_RANKS = 1_500_000  # bytes: a page must stay small enough to mail and open at once


class Elements(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.items: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.items.append((tag, dict(attrs)))

    def having(self, attribute: str, value: str | None = None, tag: str | None = None) -> list[dict[str, str | None]]:
        return [a for t, a in self.items if attribute in a and (value is None or a[attribute] == value)
                and (tag is None or t == tag)]

    def by_id(self, ident: str) -> dict[str, str | None]:
        found = self.having("id", ident)
        assert found, f"no element with id {ident}"
        return found[0]


def assert_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page.lower()
    assert "<link" not in page.lower() and "@import" not in page and "url(" not in page
    external = [u for u in re.findall(r"(?:src|href)=\"([^\"]+)\"", page)]
    assert external == []
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}


@pytest.fixture(scope="module")
def probe_data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return json.loads(real_probe_json(tmp_path_factory.mktemp("probe")).read_text())


@pytest.fixture(scope="module")
def watch_events(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    job = real_watched_job(tmp_path_factory.mktemp("watch"))
    assert job.returncodes == [0, 0], job.logs
    return [json.loads(line) for line in job.events.read_text().splitlines() if line.strip()]


def test_real_probe_page(probe_data: dict[str, Any]) -> None:
    page = render_probe_html(probe_data)
    assert_self_contained(page)
    dom = Elements(page)
    assert dom.having("data-report", "probe")
    verdict = dom.by_id("verdict")
    assert verdict["data-status"] in ("ok", "warning", "error")
    assert escape(probe_data["verdict"]["summary"]) in page
    # the verdict comes first, then the findings
    assert page.index('id="verdict"') < page.index('id="findings"') < page.index('id="links"')
    assert len(dom.having("data-code")) == len(probe_data["findings"])
    ops = {row["op"] for row in probe_data["collectives"]}
    charts = dom.having("data-chart", "line", tag="svg")
    assert {c["id"] for c in charts} == {f"busbw-{op}" for op in ops}
    points = dom.having("data-point", "busbw")
    assert len(points) == len(probe_data["collectives"])
    nodes = len(probe_data["join"]["nodes"])
    heatmaps = dom.having("data-chart", "heatmap", tag="svg")
    assert [h["id"] for h in heatmaps] == ["bandwidth-heatmap", "latency-heatmap"]
    assert len(dom.having("data-cell")) == 2 * nodes * nodes
    assert len(dom.having("data-bar")) == len(probe_data["clock"]["skew"])
    assert dom.by_id("collective-rows")["data-rows"] == str(len(probe_data["collectives"]))
    assert dom.by_id("stages-table")["data-rows"] == str(len(probe_data["stages"]))


def test_probe_names_the_slow_and_the_late_node() -> None:
    data = synthetic.probe_document(6, 2, slow_node=4, late_node=2)
    assert data["verdict"]["kind"] == "slow_node" and data["verdict"]["subject"] == "node0004"
    dom = Elements(render_probe_html(data))
    assert dom.by_id("verdict")["data-status"] == "warning"
    hot = {c["data-cell"] for c in dom.having("data-cell") if c.get("data-highlight") == "true"}
    assert {f"4,{j}" for j in range(6)} <= hot and {f"{i},4" for i in range(6)} <= hot
    assert all("4" in cell.split(",") for cell in hot)
    late = [b["data-bar"] for b in dom.having("data-bar") if b.get("data-highlight") == "true"]
    assert "node0002" in late  # 25 s late, past the 10 s warning line
    codes = {f["data-code"] for f in dom.having("data-code")}
    assert {"P002", "P020"} <= codes  # the probe's own findings: late node, slow node


def test_probe_1024_ranks_is_binned_and_small() -> None:
    data = synthetic.probe_document(128, 8, slow_node=77, late_node=5, analyse=False)
    page = render_probe_html(data)
    assert len(page.encode()) < LIMIT_1024_RANKS
    dom = Elements(page)
    side = -(-128 // -(-128 // MAX_MATRIX))  # bins of ceil(128 / 48) = 3 nodes: 43 bins
    assert side == 43
    bandwidth = dom.by_id("bandwidth-heatmap")
    assert bandwidth["data-rows"] == str(side)
    assert len(dom.having("data-cell")) == 2 * side * side
    slow_bin = 77 // 3
    hot_rows = {c["data-cell"].split(",")[0] for c in dom.having("data-cell") if c.get("data-highlight") == "true"
                and c["data-cell"].split(",")[0] == c["data-cell"].split(",")[1]}
    assert hot_rows == {str(slow_bin)}
    assert len(dom.having("data-bar")) == MAX_BARS
    assert "binned into 43 groups" in page


def test_real_watch_page(watch_events: list[dict[str, Any]]) -> None:
    codes = [e["code"] for e in watch_events]
    assert "W101" in codes, codes  # the late rank was seen by the real watcher
    page = render_watch_html(watch_events)
    assert_self_contained(page)
    dom = Elements(page)
    late = next(e for e in watch_events if e["code"] == "W101")
    assert late["ranks"] == [1]
    verdict = dom.by_id("verdict")
    assert verdict["data-status"] in ("warning", "error", "ok")
    lanes = dom.having("data-lane")
    assert [lane["data-lane"] for lane in lanes if lane.get("data-highlight") == "true"] == ["rank 1"]
    assert {lane["data-lane"] for lane in lanes} == {"rank 0", "rank 1"}
    late_spans = dom.having("data-span", "late-rank")
    assert late_spans and all(s.get("data-highlight") == "true" for s in late_spans)
    assert dom.by_id("events-table")["data-rows"] == str(len(watch_events))
    assert next(b["data-bar"] for b in dom.having("data-bar")) == "rank 1"


def test_watch_1024_ranks_limits_lanes() -> None:
    events = synthetic.watch_events(1024, straggler=517, late=901, dead=33)
    page = render_watch_html(events)
    assert len(page.encode()) < LIMIT_1024_RANKS
    dom = Elements(page)
    assert "W105 dead-rank (confirmed)" in page and dom.by_id("verdict")["data-status"] == "error"
    lanes = [lane["data-lane"] for lane in dom.having("data-lane")]
    assert len(lanes) == MAX_LANES + 1 and lanes[-1] == f"{1024 - MAX_LANES} other ranks"
    culprits = [lane["data-lane"] for lane in dom.having("data-lane") if lane.get("data-highlight") == "true"]
    assert set(culprits) == {"rank 517", "rank 901", "rank 33"}
    assert lanes[:3] == culprits  # culprits first
    # six late incidents of rank 901 are one finding
    assert len(dom.having("data-code", "W101")) == 1 and "6 times" in page


def test_real_analyze_page(tmp_path_factory: pytest.TempPathFactory) -> None:
    source = real_analyze_json(tmp_path_factory.mktemp("analyze"))
    data = json.loads(source.read_text())
    page = render_analyze_html(data)
    assert_self_contained(page)
    dom = Elements(page)
    if data["ranks"]:
        assert dom.by_id("ranks-table")["data-rows"] == str(len(data["ranks"]))
    assert len(dom.having("data-span")) == len(data["timeline"])
    root = data.get("root_cause")
    if not data["root_cause_found"]:  # the analyzer found nothing in these logs: the page says so
        assert dom.by_id("verdict")["data-status"] == "warning" and "no root cause found" in page
        return
    assert dom.by_id("verdict")["data-status"] == "error" and escape(root["title"]) in page
    hypotheses = dom.having("data-hypothesis")
    assert hypotheses[0]["data-culprit"] == ",".join(str(r) for r in root["culprit_ranks"])
    assert len(hypotheses) == len(data["hypotheses"])  # the root cause is not shown twice
    lanes = dom.having("data-lane")
    assert [lane["data-lane"] for lane in lanes if lane.get("data-highlight") == "true"] == [
        f"rank {r}" for r in root["culprit_ranks"]]


def test_analyze_page_and_1024_ranks() -> None:
    data = synthetic.analyze_document(1024, culprit=517)
    page = render_analyze_html(data)
    assert_self_contained(page)
    assert len(page.encode()) < LIMIT_1024_RANKS
    dom = Elements(page)
    assert dom.by_id("verdict")["data-status"] == "error" and "rank 517 on node0064" in page
    hypotheses = dom.having("data-hypothesis")
    assert [h["data-culprit"] for h in hypotheses] == ["517", ""]
    evidence = dom.having("data-evidence", tag="pre")
    assert evidence[0]["data-evidence"] == str(len(data["hypotheses"][0]["evidence"]))
    lanes = dom.having("data-lane")
    assert lanes[0]["data-lane"] == "rank 517" and lanes[0].get("data-highlight") == "true"
    assert lanes[-1]["data-lane"].endswith("other ranks")
    first = [s for s in dom.having("data-span") if s.get("data-highlight") == "true"]
    assert first and all(s["data-lane-index"] == "0" for s in first)


def test_text_is_escaped_and_secrets_redacted() -> None:
    data = synthetic.probe_document(2, 1)
    data["findings"] = [{"code": "E101", "severity": "error", "title": "<img src=x onerror=alert(1)>",
                         "evidence": {"NCCL_IB_TIMEOUT": "99", "line": "HF_TOKEN=hf_abcdefghijklmnop"},
                         "why": "w", "fix": "export NCCL_IB_TIMEOUT=22"}]
    page = render_probe_html(data)
    assert "<img" not in page and "&lt;img src=x" in page
    assert "hf_abcdefghijklmnop" not in page and "HF_TOKEN=&lt;redacted&gt;" in page
    assert "export NCCL_IB_TIMEOUT=22" in page


def write(tmp_path: Path, name: str, content: str) -> Path:
    path = tmp_path / name
    path.write_text(content)
    return path


def test_input_detection(tmp_path: Path) -> None:
    events = synthetic.watch_events(4, straggler=1, late=2, ranks_per_host=2)
    lines = write(tmp_path, "e.jsonl", "\n".join(json.dumps(e) for e in events) + "\nnot json\n\n")
    assert load_report_input(lines).kind == "watch" and len(load_report_input(lines).data) == len(events)
    as_list = write(tmp_path, "e.json", json.dumps(events))
    assert load_report_input(as_list).kind == "watch"
    probe = write(tmp_path, "p.json", json.dumps(synthetic.probe_document(2, 1)))
    assert load_report_input(probe).kind == "probe"
    analyze = write(tmp_path, "a.json", json.dumps(synthetic.analyze_document(4, culprit=1)))
    report = load_report_input(analyze)
    assert report.kind == "analyze" and "rank 1" in render_html(report)


@pytest.mark.parametrize(("content", "message"), [
    ("", "empty"),
    ('{"schema": "other/1"}', "unknown report schema 'other/1'"),
    ("[1, 2]", "without watch events"),
    ("\x00\x01binary\nnot json", "neither a syncdoctor JSON report nor watch events"),
])
def test_bad_input_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        load_report_input(write(tmp_path, "bad", content))
    with pytest.raises(InputError, match="cannot read"):
        load_report_input(tmp_path / "missing.jsonl")
