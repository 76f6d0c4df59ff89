"""The probe's JSON document (schema ``syncdoctor.probe/1``) and its terminal rendering with rich.

:class:`ProbeDocument` does I/O: it rewrites the JSON file atomically after every stage, so a stage that
fails or hangs never loses the ones before it. :func:`render_probe` is pure rendering from the JSON data
(so a saved file renders the same) onto an injected console.

Top-level keys: ``schema``, ``syncdoctor_version``, ``created``, ``finished``, ``command``, ``config``,
``launch``, ``backend``, ``probe_settings``, ``stages`` (name, status, seconds, errors), ``join``
(complete, registered, missing, nodes, waited_s), ``clock`` (offsets, skew), ``facts`` (nodes), ``links``,
``collectives``, ``findings``, ``verdict``, ``recommendations``.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncdoctor._version import __version__
from syncdoctor.kb import Finding
from syncdoctor.kb.findings import findings_to_json
from syncdoctor.probe.analysis import format_rate
from syncdoctor.probe.bandwidth import format_table, rows_by_op
from syncdoctor.probe.records import CollectiveRow, from_json
from syncdoctor.redact import redact_json
from syncdoctor.report.terminal import render_findings

__all__ = ["SCHEMA", "ProbeDocument", "render_probe"]

SCHEMA = "syncdoctor.probe/1"


class ProbeDocument:
    """The report being built on the reporting rank; :meth:`write` saves it (when a path was given)."""

    def __init__(self, path: str | None, **header: Any) -> None:
        self.path = Path(path) if path else None
        self.data: dict[str, Any] = {
            "schema": SCHEMA,
            "syncdoctor_version": __version__,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "finished": False,
            "stages": [],
            "findings": [],
            **header,
        }

    def stage(self, name: str, status: str, seconds: float, errors: Mapping[int, str] | None = None) -> None:
        stages = [s for s in self.data["stages"] if s["name"] != name]
        stages.append({"name": name, "status": status, "seconds": round(seconds, 3),
                       "errors": {str(k): v for k, v in (errors or {}).items()}})
        self.data["stages"] = stages

    def update(self, **sections: Any) -> None:
        self.data.update(sections)

    def set_findings(self, findings: Sequence[Finding]) -> None:
        self.data["findings"] = findings_to_json(findings)

    def write(self) -> None:
        """Atomically replace the JSON file (a no-op without a path)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w") as out:
                json.dump(redact_json(json.loads(json.dumps(self.data, default=str))), out, indent=2)
                out.write("\n")
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def _stage_line(data: Mapping[str, Any]) -> Text:
    text = Text("stages: ")
    for index, stage in enumerate(data.get("stages", ())):
        style = {"ok": "green", "failed": "bold red", "hung": "bold red"}.get(stage["status"], "yellow")
        if index:
            text.append(", ")
        text.append(f"{stage['name']} {stage['status']} ({stage['seconds']:.1f} s)", style=style)
    return text


def _nodes_table(data: Mapping[str, Any]) -> Table | None:
    nodes = data.get("join", {}).get("nodes") or []
    if not nodes:
        return None
    skews = {s["node"]: s for s in data.get("clock", {}).get("skew", [])}
    facts = {f["node"]: f for f in data.get("facts", {}).get("nodes", [])}
    table = Table(title="Nodes", title_justify="left", show_edge=False)
    for column in ("node", "host", "address", "ranks", "arrived (s)", "clock offset", "interface", "MTU"):
        table.add_column(column, justify="right" if column in ("arrived (s)", "clock offset", "MTU") else "left")
    for node in nodes:
        skew = skews.get(node["node"])
        fact = facts.get(node["node"], {})
        table.add_row(
            str(node["node"]), node["label"], str(node.get("addr") or "?"),
            ",".join(str(r) for r in node["ranks"]),
            f"{skew['first_s']:.2f}" if skew else "-",
            f"{skew['offset_s'] * 1e3:+.2f} ms" if skew else "-",
            str(fact.get("interface") or "?"), str(fact.get("mtu") or "?"),
        )
    return table


def _links_table(data: Mapping[str, Any]) -> Table | None:
    links = data.get("links") or []
    if not links:
        return None
    labels = {n["node"]: n["label"] for n in data.get("join", {}).get("nodes", [])}
    promised = {row["pair"]: row for row in (data.get("verdict") or {}).get("achieved_vs_promised", [])}
    table = Table(title="Links (point to point)", title_justify="left", show_edge=False)
    for column in ("pair", "kind", "latency", "a->b", "b->a", "vs link rate"):
        table.add_column(column, justify="left" if column in ("pair", "kind") else "right")
    for link in links:
        a = labels.get(link["a_node"], f"node{link['a_node']}")
        b = labels.get(link["b_node"], f"node{link['b_node']}")
        pair = f"{a}-{b}" if link["kind"] == "inter" else f"{a} r{link['a_rank']}-r{link['b_rank']}"
        row = promised.get(f"{a}-{b}") if link["kind"] == "inter" else None
        fraction = "-"
        if row and row.get("fraction") is not None:
            fraction = f"{row['fraction']:.2f}x" + ("" if row.get("physical") else " (virtual)")
        table.add_row(pair, link["kind"], f"{link['latency_s'] * 1e6:.0f} us",
                      format_rate(link["bw_ab"]), format_rate(link["bw_ba"]), fraction)
    return table


def render_probe(data: Mapping[str, Any], console: Console, *, show_tables: bool = True) -> None:
    """Print the report of one probe run (the JSON document's data)."""
    launch = data.get("launch", {})
    join = data.get("join", {})
    registered = len(join.get("registered", []))
    console.print(Text(
        f"syncdoctor probe: {registered} of {launch.get('world_size', '?')} ranks on "
        f"{len(join.get('nodes', []))} node(s), backend {data.get('backend', '?')}, "
        f"launcher {launch.get('launcher', '?')}", style="bold"))
    verdict = data.get("verdict") or {}
    if verdict.get("summary"):
        console.print(Text(f"verdict: {verdict['summary']}", style="bold"))
    console.print(_stage_line(data))
    console.print()
    for table in (_nodes_table(data), _links_table(data)):
        if table is not None:
            console.print(table)
            console.print()
    rows = [from_json(CollectiveRow, r) for r in data.get("collectives") or []]
    if rows and show_tables:
        for op, op_rows in rows_by_op(rows).items():
            title = f"{op} ({data.get('backend', '?')}, {op_rows[0].ranks} ranks)"
            console.print(Text(format_table(op_rows, title)), soft_wrap=True)
            console.print()
    findings = [Finding.from_json(f) for f in data.get("findings", [])]
    render_findings(findings, console)
    advice = data.get("recommendations")
    if advice:
        console.print()
        console.print(Text("Recommended settings", style="bold underline"))
        for name, value in advice.get("env", {}).items():
            console.print(Text(f"  export {name}={value}"))
        for label, variables in advice.get("per_node_env", {}).items():
            for name, value in variables.items():
                console.print(Text(f"  on {label}: export {name}={value}"))
        console.print(Text(f"  start-up timeout {advice['startup_timeout_s']} s; "
                           f"steady-state timeout {advice['steady_timeout_s']} s"))
        console.print(Text(f"    {advice.get('reasons', {}).get('steady', '')}", style="dim"))
        if data.get("emitted"):
            console.print(Text(f"  written to {', '.join(data['emitted'])}"))
    if data.get("json_path"):
        console.print(Text(f"report: {data['json_path']}", style="dim"))
