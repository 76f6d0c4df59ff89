"""Each report type opened in headless Chromium (Debian's, driven over the DevTools pipe): it loads
without console errors or any request besides the file itself, the verdict comes first, the expected
charts are drawn with a size and the right number of cells, points, bars and lanes, and a full-page
screenshot is kept in ``test-artifacts/`` (``SYNCDOCTOR_TEST_ARTIFACTS`` to move it).

Inputs: a real ``syncdoctor probe --local 2`` report, the events of a real watched 2-rank job with a late
rank (both shared with the other report tests), and the analyze report of the late-rank fixture logs when
``syncdoctor analyze`` exists, else a synthetic one of the same schema.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cdp import CHROMIUM, Chromium

from report_inputs import real_analyze_json, real_probe_json, real_watched_job
from syncdoctor.report import synthetic
from syncdoctor.report.html import load_report_input, render_analyze_html, render_html

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium: `make test` installs it (scripts/ensure-chromium.sh)")

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("SYNCDOCTOR_TEST_ARTIFACTS", ROOT / "test-artifacts"))

SUMMARY = """(() => {
  const all = s => [...document.querySelectorAll(s)];
  return {
    report: document.body.dataset.report,
    first: document.querySelector('main').firstElementChild.id,
    verdict: document.querySelector('#verdict').dataset.status,
    charts: all('svg[data-chart]').map(s => {
      const box = s.getBoundingClientRect();
      return {id: s.id, kind: s.dataset.chart, width: box.width, height: box.height};
    }),
    cells: all('[data-cell]').length,
    hotCells: all('[data-cell][data-highlight="true"]').length,
    busbwPoints: all('[data-point="busbw"]').length,
    bars: all('[data-bar]').map(b => [b.dataset.bar, b.dataset.highlight === 'true']),
    lanes: all('[data-lane]').map(g => [g.dataset.lane, g.dataset.highlight === 'true']),
    spans: all('[data-span]').length,
    findings: all('[data-code]').length,
    hypotheses: all('[data-hypothesis]').map(h => h.dataset.culprit),
    events: all('#events-table tbody tr').length,
    overflowX: document.documentElement.scrollWidth > window.innerWidth + 1,
  };
})()"""


@pytest.fixture(scope="module")
def browser() -> Any:
    assert CHROMIUM is not None
    with Chromium(CHROMIUM, width=1200, height=900) as instance:
        yield instance


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    probe = real_probe_json(tmp_path_factory.mktemp("probe"))
    job = real_watched_job(tmp_path_factory.mktemp("watch"))
    assert job.returncodes == [0, 0], job.logs
    analyze = real_analyze_json(tmp_path_factory.mktemp("analyze"))
    return {"probe": probe, "watch": job.events, "analyze": analyze}


def open_report(browser: Chromium, source: Path, kind: str) -> dict[str, Any]:
    report = load_report_input(source)
    assert report.kind == kind
    page = ARTIFACTS / f"report-{kind}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_html(report))
    browser.events.clear()
    url = page.resolve().as_uri()
    browser.load(url)
    summary = browser.evaluate(SUMMARY)
    assert browser.problems() == []
    assert browser.requests() == [url]  # nothing else: no CDN, font, image or script
    shot = browser.screenshot(ARTIFACTS / f"report-{kind}.png")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert summary["report"] == kind and summary["first"] == "verdict"
    for chart in summary["charts"]:
        assert chart["width"] > 200 and chart["height"] > 60, chart
    assert not summary["overflowX"]
    return summary


def test_probe_report_in_chromium(browser: Chromium, inputs: dict[str, Path]) -> None:
    data = json.loads(inputs["probe"].read_text())
    summary = open_report(browser, inputs["probe"], "probe")
    ops = sorted({row["op"] for row in data["collectives"]})
    kinds = [(c["kind"], c["id"]) for c in summary["charts"]]
    assert kinds[:2] == [("heatmap", "bandwidth-heatmap"), ("heatmap", "latency-heatmap")]
    assert sorted(i for k, i in kinds if k == "line") == sorted(f"busbw-{op}" for op in ops)
    assert ("bar", "skew-bars") in kinds
    nodes = len(data["join"]["nodes"])
    assert summary["cells"] == 2 * nodes * nodes
    assert summary["busbwPoints"] == len(data["collectives"])
    assert [b[0] for b in summary["bars"]] == [s["label"] for s in data["clock"]["skew"]]
    assert summary["findings"] == len(data["findings"])


def test_watch_report_in_chromium(browser: Chromium, inputs: dict[str, Path]) -> None:
    events = [json.loads(line) for line in inputs["watch"].read_text().splitlines() if line.strip()]
    summary = open_report(browser, inputs["watch"], "watch")
    assert [c["id"] for c in summary["charts"]] == ["rank-timeline", "lag-bars"]
    assert sorted(summary["lanes"]) == [["rank 0", False], ["rank 1", True]]  # the late rank in red
    assert summary["bars"][0] == ["rank 1", True]
    assert summary["events"] == len(events)
    assert summary["spans"] >= len({e["key"] for e in events})
    assert summary["verdict"] in ("warning", "error")


def test_analyze_report_in_chromium(browser: Chromium, inputs: dict[str, Path]) -> None:
    data = json.loads(inputs["analyze"].read_text())
    summary = open_report(browser, inputs["analyze"], "analyze")
    assert [c["id"] for c in summary["charts"]] == (["failure-timeline"] if data["timeline"] else [])
    if data.get("root_cause_found") is False:
        assert summary["verdict"] == "warning"
        return
    assert summary["verdict"] == "error"
    assert len(summary["hypotheses"]) >= 1 and summary["hypotheses"][0]
    culprit = summary["hypotheses"][0].split(",")[0]
    hot = [label for label, highlighted in summary["lanes"] if highlighted]
    assert hot == [f"rank {culprit}"]
    assert data["schema"] == "syncdoctor.analyze/1"


def test_large_reports_stay_usable(browser: Chromium, tmp_path: Path) -> None:
    """1024 ranks: the analyze page opens, draws its lanes and stays one screen wide."""
    source = tmp_path / "analyze-1024.json"
    source.write_text(json.dumps(synthetic.analyze_document(1024, culprit=517)))
    page = tmp_path / "analyze-1024.html"
    page.write_text(render_analyze_html(json.loads(source.read_text())))
    browser.events.clear()
    browser.load(page.resolve().as_uri())
    summary = browser.evaluate(SUMMARY)
    assert browser.problems() == []
    assert len(summary["lanes"]) == 25 and summary["lanes"][0] == ["rank 517", True]
    assert not summary["overflowX"]
