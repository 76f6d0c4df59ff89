"""Terminal rendering of a probe report (:class:`~syncdoctor.probe.report.ProbeReport`) with rich. Pure:
it prints onto an injected console, the same for a live run and a saved file."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncdoctor.probe.bandwidth import format_table, rows_by_op
from syncdoctor.probe.report import ProbeReport
from syncdoctor.report.terminal import render_findings
from syncdoctor.units import format_link_rate

__all__ = ["render_probe"]


def _stage_line(report: ProbeReport) -> Text:
    text = Text("stages: ")
    for index, stage in enumerate(report.stages):
        style = {"ok": "green", "failed": "bold red", "hung": "bold red"}.get(stage.status, "yellow")
        if index:
            text.append(", ")
        text.append(f"{stage.name} {stage.status} ({stage.seconds:.1f} s)", style=style)
    return text


def _nodes_table(report: ProbeReport) -> Table | None:
    if not report.nodes:
        return None
    skews = {s.node: s for s in report.skews}
    facts = {f.node: f for f in report.facts or ()}
    table = Table(title="Nodes", title_justify="left", show_edge=False)
    for column in ("node", "host", "address", "ranks", "arrived (s)", "clock offset", "interface", "MTU"):
        table.add_column(column, justify="right" if column in ("arrived (s)", "clock offset", "MTU") else "left")
    for node in report.nodes:
        skew = skews.get(node.node)
        fact = facts.get(node.node)
        table.add_row(
            str(node.node), node.label, str(node.addr or "?"),
            ",".join(str(r) for r in node.ranks),
            f"{skew.first_s:.2f}" if skew else "-",
            f"{skew.offset_s * 1e3:+.2f} ms" if skew else "-",
            str((fact.interface if fact else None) or "?"), str((fact.mtu if fact else None) or "?"),
        )
    return table


def _links_table(report: ProbeReport) -> Table | None:
    if not report.links:
        return None
    labels = report.labels()
    promised = {row["pair"]: row for row in (report.verdict.achieved_vs_promised if report.verdict else ())}
    table = Table(title="Links (point to point)", title_justify="left", show_edge=False)
    for column in ("pair", "kind", "latency", "a->b", "b->a", "vs link rate"):
        table.add_column(column, justify="left" if column in ("pair", "kind") else "right")
    for link in report.links:
        a = labels.get(link.a_node, f"node{link.a_node}")
        b = labels.get(link.b_node, f"node{link.b_node}")
        pair = f"{a}-{b}" if link.kind == "inter" else f"{a} r{link.a_rank}-r{link.b_rank}"
        row = promised.get(f"{a}-{b}") if link.kind == "inter" else None
        fraction = "-"
        if row and row.get("fraction") is not None:
            fraction = f"{row['fraction']:.2f}x" + ("" if row.get("physical") else " (virtual)")
        table.add_row(pair, link.kind, f"{link.latency_s * 1e6:.0f} us",
                      format_link_rate(link.bw_ab), format_link_rate(link.bw_ba), fraction)
    return table


def render_probe(report: ProbeReport, console: Console, *, show_tables: bool = True) -> None:
    """Print the report of one probe run."""
    launch = report.launch
    console.print(Text(
        f"syncdoctor probe: {report.registered} of {launch.get('world_size', '?')} ranks on "
        f"{len(report.nodes)} node(s), backend {report.backend or '?'}, "
        f"launcher {launch.get('launcher', '?')}", style="bold"))
    if report.verdict and report.verdict.summary:
        console.print(Text(f"verdict: {report.verdict.summary}", style="bold"))
    console.print(_stage_line(report))
    console.print()
    for table in (_nodes_table(report), _links_table(report)):
        if table is not None:
            console.print(table)
            console.print()
    if report.collectives and show_tables:
        for op, op_rows in rows_by_op(report.collectives).items():
            title = f"{op} ({report.backend or '?'}, {op_rows[0].ranks} ranks)"
            console.print(Text(format_table(op_rows, title)), soft_wrap=True)
            console.print()
    render_findings(report.findings, console)
    advice = report.recommendations
    if advice:
        console.print()
        console.print(Text("Recommended settings", style="bold underline"))
        for name, value in advice.env.items():
            console.print(Text(f"  export {name}={value}"))
        for label, variables in advice.per_node_env.items():
            for name, value in variables.items():
                console.print(Text(f"  on {label}: export {name}={value}"))
        console.print(Text(f"  start-up timeout {advice.startup_timeout_s} s; "
                           f"steady-state timeout {advice.steady_timeout_s} s"))
        console.print(Text(f"    {advice.reasons.get('steady', '')}", style="dim"))
        if report.emitted:
            console.print(Text(f"  written to {', '.join(report.emitted)}"))
    if report.json_path:
        console.print(Text(f"report: {report.json_path}", style="dim"))
