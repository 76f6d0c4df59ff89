"""``syncdoctor report``: picks the renderer by content, writes next to the input or to -o, and turns bad
input into exit code 3 with a message (never a traceback)."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

import pytest

from report_inputs import real_probe_json
from syncdoctor.report import synthetic

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "analyze"


def test_report_watch_events_default_output(run_cli, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in synthetic.watch_events(8, straggler=3, late=6,
                                                                                    ranks_per_host=4)))
    result = run_cli("report", str(events))
    assert result.code == 0, result.out
    page = tmp_path / "events.html"
    assert page.exists() and "watch report written to" in result.out
    assert 'data-report="watch"' in page.read_text()


def test_report_probe_and_analyze_with_output(run_cli, tmp_path: Path) -> None:
    for kind, data in (("probe", synthetic.probe_document(3, 1, slow_node=1)),
                       ("analyze", synthetic.analyze_document(4, culprit=2))):
        source = tmp_path / f"{kind}.json"
        source.write_text(json.dumps(data))
        out = tmp_path / "out" / f"{kind}-page.html"
        result = run_cli("report", str(source), "-o", str(out))
        assert result.code == 0, result.out
        assert f'data-report="{kind}"' in out.read_text()


def test_report_bad_input(run_cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = run_cli("report", str(empty))
    out = " ".join(result.out.split())
    assert result.code == 3 and "is empty: nothing to report" in out and "Traceback" not in out
    result = run_cli("report", str(tmp_path / "nope.json"))
    assert result.code == 3 and "cannot read" in " ".join(result.out.split())
    assert not (tmp_path / "empty.html").exists()
    assert run_cli("report").code == 2


def test_probe_html_option(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``syncdoctor probe --local 2 --html FILE``: the option reaches the reporting rank through --local."""
    source = real_probe_json(tmp_path_factory.mktemp("probe"))
    page = (source.parent / "probe.html").read_text()
    data = json.loads(source.read_text())
    assert 'data-report="probe"' in page and escape(data["verdict"]["summary"]) in page


def test_analyze_html_option(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "analyze.html"
    result = run_cli("analyze", str(FIXTURES / "fr" / "late"), "--html", str(out))
    assert result.code in (0, 1), result.out
    page = out.read_text()
    assert 'data-report="analyze"' in page and 'id="verdict"' in page
    if result.code == 0:  # a root cause: the page names the culprit the terminal names
        culprit = re.search(r"culprit:\s+ranks? ([0-9,-]+)", result.out)
        assert culprit and f'data-culprit="{culprit.group(1)}"' in page
