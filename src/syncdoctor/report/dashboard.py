"""A Grafana dashboard for the watcher's Prometheus metrics (:mod:`syncdoctor.watch.metrics`).

Pure: builds the dashboard's JSON model; ``syncdoctor dashboard`` prints or writes it. Import it in Grafana
(Dashboards > New > Import) or provision it from a file. Its variables: the Prometheus data source, and the
scraped monitors (``instance``: one per watched job, the rank that runs the monitor).

Rows, top to bottom:

- the job now: ranks reporting, ranks by state, open incidents by code, monitor cycle time;
- waits: per rank, how long the ranks ahead of it have waited (``rank_lag_seconds``) and how many
  collectives it is behind; each rank's record age (a dead or frozen rank grows);
- incidents: late ranks, dead ranks and hosts cut off, hangs (transport hang, mismatch, count drift),
  chronic stragglers, as events per interval by status;
- nodes: incidents per node and code over the dashboard's range (the repeat offenders to exclude: see
  ``syncdoctor nodes`` and docs/act.md), and the watcher's own health (publish and monitor errors).

Every query names a metric the exporter exports (tests/test_dashboard.py checks it against a real scrape and
parses every query).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DASHBOARD_UID", "Panel", "dashboard", "panels"]

DASHBOARD_UID = "syncdoctor-watch"
_DS = {"type": "prometheus", "uid": "${datasource}"}
_SEL = 'instance=~"$instance"'
_WIDTH = 24


@dataclass(frozen=True)
class Panel:
    """One panel: its title, kind (stat, timeseries, table, bargauge), queries (PromQL with Grafana's
    variables) and legends, unit, width and height in grid units, and a description."""

    title: str
    kind: str
    queries: tuple[tuple[str, str], ...]
    unit: str = "short"
    width: int = 12
    height: int = 8
    description: str = ""


def _events(kinds: str) -> str:
    return (f'sum by (kind, status) (increase(syncdoctor_watch_events_total{{{_SEL}, kind=~"{kinds}"}}'
            "[$__rate_interval]))")


def panels() -> list[tuple[str, list[Panel]]]:
    """The rows and their panels."""
    now = [
        Panel("Ranks reporting", "stat", ((f"sum(syncdoctor_watch_ranks_reporting{{{_SEL}}})", "ranks"),), width=6,
              height=5, description="Ranks whose record the monitor read in its last cycle."),
        Panel("Ranks by state", "stat", ((f"count by (state) (syncdoctor_watch_rank_up{{{_SEL}}})", "{{state}}"),),
              width=6, height=5, description="Each rank's state as its record says (training, in a solo phase...)."),
        Panel("Open incidents", "stat", ((f"sum by (code) (syncdoctor_watch_open_incidents{{{_SEL}}})", "{{code}}"),),
              width=6, height=5, description="Incidents open now, by W code (syncdoctor explain W101...)."),
        Panel("Monitor cycle", "timeseries",
              ((f"max(syncdoctor_watch_monitor_cycle_seconds{{{_SEL}}})", "cycle"),), unit="s", width=6, height=5,
              description="Duration of the monitor's last cycle."),
    ]
    waits = [
        Panel("Wait caused by each rank", "timeseries",
              ((f"max by (rank, host) (syncdoctor_watch_rank_lag_seconds{{{_SEL}}})", "rank {{rank}} ({{host}})"),),
              unit="s", description="How long the ranks ahead of this rank have waited in their collective "
              "(0 when it is not behind): the late rank's line rises."),
        Panel("Collectives behind", "timeseries",
              ((f"max by (rank, host) (syncdoctor_watch_rank_lag_collectives{{{_SEL}}})", "rank {{rank}} ({{host}})"),),
              description="Collectives the rank is behind the furthest member of its group."),
        Panel("Record age", "timeseries",
              ((f"max by (rank, host) (syncdoctor_watch_rank_record_age_seconds{{{_SEL}}})", "rank {{rank}} ({{host}})"),),
              unit="s", width=_WIDTH, description="Since the monitor last saw the rank's record change: a dead or "
              "frozen rank grows until it is named (W105, W106)."),
    ]
    incidents = [
        Panel("Late ranks", "timeseries", ((_events("late-rank|solo-work"), "{{kind}} {{status}}"),),
              description="W101 late-rank events (and W110 solo work, a rank marked busy alone) per interval."),
        Panel("Dead ranks and hosts cut off", "timeseries",
              ((_events("dead-rank|host-unreachable|rank-left-early"), "{{kind}} {{status}}"),),
              description="W105 dead rank, W106 host unreachable, W108 rank left early."),
        Panel("Hangs", "timeseries",
              ((_events("transport-hang|collective-mismatch|collective-count-drift"), "{{kind}} {{status}}"),),
              description="W104 transport hang, W102 collective mismatch, W103 count drift (a deadlock)."),
        Panel("Chronic stragglers", "timeseries", ((_events("chronic-straggler"), "{{kind}} {{status}}"),),
              description="W107: a rank that arrives last at most collectives."),
    ]
    nodes = [
        Panel("Incidents per node", "table",
              ((f"sum by (node, code) (increase(syncdoctor_watch_node_incidents_total{{{_SEL}}}[$__range]))", ""),),
              description="Incidents that made a node a suspect over the dashboard's range (node-level causes "
              "only: a host cut off, a chronic straggler's host). Repeat offenders: exclude them (docs/act.md)."),
        Panel("Watcher errors", "timeseries",
              ((f"sum(increase(syncdoctor_watch_publish_errors_total{{{_SEL}}}[$__rate_interval]))", "publish"),
               (f"sum(increase(syncdoctor_watch_monitor_errors_total{{{_SEL}}}[$__rate_interval]))", "monitor")),
              description="Record publications and monitor cycles that failed (the store unreachable)."),
    ]
    return [("The job now", now), ("Waits", waits), ("Incidents", incidents), ("Nodes", nodes)]


def _panel(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    targets = [{"datasource": _DS, "expr": expr, "legendFormat": legend, "refId": chr(ord("A") + i),
                "instant": panel.kind == "table", "range": panel.kind != "table"}
               for i, (expr, legend) in enumerate(panel.queries)]
    out: dict[str, Any] = {
        "id": panel_id, "type": panel.kind, "title": panel.title, "description": panel.description,
        "datasource": _DS, "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y}, "targets": targets,
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []}, "options": {},
    }
    if panel.kind == "timeseries":
        out["options"] = {"legend": {"displayMode": "table", "placement": "right", "calcs": ["max", "lastNotNull"]},
                          "tooltip": {"mode": "multi", "sort": "desc"}}
    elif panel.kind == "stat":
        out["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                          "colorMode": "value", "graphMode": "none"}
    elif panel.kind == "table":
        out["transformations"] = [{"id": "organize", "options": {"excludeByName": {"Time": True}}}]
        out["options"] = {"sortBy": [{"displayName": "Value", "desc": True}]}
    return out


def dashboard(title: str = "syncdoctor watch") -> dict[str, Any]:
    """The dashboard's JSON model (Grafana 9 and later)."""
    out: list[dict[str, Any]] = []
    next_id, y = 1, 0
    for row_title, row_panels in panels():
        out.append({"id": next_id, "type": "row", "title": row_title, "collapsed": False, "panels": [],
                    "gridPos": {"h": 1, "w": _WIDTH, "x": 0, "y": y}})
        next_id, y = next_id + 1, y + 1
        x, row_height = 0, 0
        for panel in row_panels:
            if x + panel.width > _WIDTH:
                x, y, row_height = 0, y + row_height, 0
            out.append(_panel(panel, next_id, x, y))
            next_id, x, row_height = next_id + 1, x + panel.width, max(row_height, panel.height)
        y += row_height
    variables = [
        {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus", "hide": 0,
         "current": {}, "options": [], "refresh": 1},
        {"name": "instance", "label": "Monitor", "type": "query", "datasource": _DS, "hide": 0,
         "query": {"query": "label_values(syncdoctor_watch_ranks_reporting, instance)", "refId": "instance"},
         "definition": "label_values(syncdoctor_watch_ranks_reporting, instance)", "includeAll": True,
         "multi": True, "allValue": ".*", "current": {}, "options": [], "refresh": 2, "sort": 1},
    ]
    return {
        "uid": DASHBOARD_UID, "title": title, "tags": ["syncdoctor", "pytorch", "distributed"],
        "description": "Late, dead and hung ranks of watched PyTorch jobs (syncdoctor.watch metrics)",
        "editable": True, "graphTooltip": 1, "refresh": "10s", "schemaVersion": 39, "version": 1,
        "time": {"from": "now-1h", "to": "now"}, "timepicker": {}, "timezone": "", "links": [],
        "annotations": {"list": []}, "templating": {"list": variables}, "panels": out,
    }
