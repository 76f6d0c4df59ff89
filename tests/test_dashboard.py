"""The Grafana dashboard of the watch metrics: every query parses as PromQL (Grafana's variables substituted
as Grafana does) and names only metrics the exporter really exports (a scrape of the metrics server); the
layout is valid; the issue's panels are there; ``syncdoctor dashboard`` prints and writes it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import promql_parser

from report_inputs import free_port
from syncdoctor.report.dashboard import dashboard
from syncdoctor.watch.events import Event
from syncdoctor.watch.metrics import attach_from_environment
from test_metrics import fake_monitor, scrape

# what Grafana puts in place of its built-in variables before the query reaches Prometheus
_GRAFANA = {"$__rate_interval": "1m", "$__range": "1h", "$__interval": "15s"}


def queries(model: dict[str, Any]) -> list[tuple[str, str]]:
    return [(panel["title"], target["expr"]) for panel in model["panels"] for target in panel.get("targets", [])]


def promql(expr: str, variables: dict[str, str]) -> Any:
    for name, value in {**_GRAFANA, **variables}.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, f"a variable the dashboard does not define: {expr}"
    return promql_parser.parse(expr)


def metric_names(node: Any) -> set[str]:
    """The metric names a parsed query selects."""
    kind = type(node).__name__
    if kind == "VectorSelector":
        return {node.name} if node.name else set()
    if kind == "MatrixSelector":
        return metric_names(node.vector_selector)
    names: set[str] = set()
    for attribute in ("expr", "lhs", "rhs", "param"):
        child = getattr(node, attribute, None)
        if child is not None and not isinstance(child, (str, int, float)):
            names |= metric_names(child)
    for child in getattr(node, "args", None) or ():
        names |= metric_names(child)
    return names


def dashboard_metrics(model: dict[str, Any]) -> dict[str, set[str]]:
    variables = {f"${v['name']}": ".*" for v in model["templating"]["list"]}
    return {f"{title}: {expr}": metric_names(promql(expr, variables)) for title, expr in queries(model)}


def exported(text: str) -> set[str]:
    """Metric names in a Prometheus text exposition (sample lines and # TYPE lines)."""
    names = set(re.findall(r"^# TYPE (\w+) ", text, re.M))
    names |= set(re.findall(r"^(\w+)[{ ]", text, re.M))
    return names


def test_every_query_names_an_exported_metric() -> None:
    monitor = fake_monitor()
    port = free_port()
    stop = attach_from_environment(SimpleNamespace(), monitor, env={"SYNCDOCTOR_METRICS_PORT": str(port)})
    try:
        monitor.cycle()
        for sink in monitor.sinks:
            sink.emit(Event("W106", "confirmed", "cut", ranks=(1,), hosts=("h1",), key="W106:h1"))
        names = exported(scrape(port))
    finally:
        stop()
    used = dashboard_metrics(dashboard())
    assert len(used) >= 14
    for query, metrics in used.items():
        assert metrics, f"selects no metric: {query}"
        assert metrics <= names, f"not exported: {metrics - names} in {query}"
    # a name that is not exported fails the check (the check can fail)
    assert not {"syncdoctor_watch_events"} <= names


def test_promql_check_rejects_broken_queries() -> None:
    import pytest

    with pytest.raises(ValueError):
        promql("sum by (rank (syncdoctor_watch_rank_up)", {})
    assert metric_names(promql('rate(a_total{x="1"}[$__rate_interval]) / on() group_left max(b)', {})) == \
        {"a_total", "b"}


def test_the_issues_panels_are_there() -> None:
    text = json.dumps(dashboard())
    for needle in ("syncdoctor_watch_rank_lag_seconds", "syncdoctor_watch_node_incidents_total", "late-rank",
                   "dead-rank", "host-unreachable", "transport-hang", "collective-mismatch", "chronic-straggler"):
        assert needle in text, needle


def test_layout_is_valid() -> None:
    model = dashboard("my jobs")
    assert model["title"] == "my jobs" and model["uid"] == "syncdoctor-watch"
    panels = model["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] >= 1, panel["title"]
        mine = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not mine & cells, f"{panel['title']} overlaps another panel"
        cells |= mine
        if panel["type"] != "row":
            assert panel["targets"] and all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])
            assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
    assert [v["name"] for v in model["templating"]["list"]] == ["datasource", "instance"]


def test_cli_prints_and_writes_it(run_cli, tmp_path: Path) -> None:
    printed = run_cli("dashboard")
    assert printed.code == 0 and json.loads(printed.out) == dashboard()
    written = run_cli("dashboard", "-o", str(tmp_path / "d.json"), "--title", "prod")
    assert written.code == 0 and json.loads((tmp_path / "d.json").read_text())["title"] == "prod", written.out
    refused = run_cli("dashboard", "-o", "/proc/d.json")
    assert refused.code == 2 and "--output /proc/d.json: cannot write there" in refused.out, refused.out
