"""The probe report (schema ``syncdoctor.probe/1``) as HTML. Pure: a typed
:class:`~syncdoctor.probe.report.ProbeReport` in, a page out.

Sections: verdict, findings with fixes, recommended settings, the node x node bandwidth and latency
heatmaps (binned to at most 48 x 48, each bin keeping its worst link), bus bandwidth against size per
collective, start-up skew per node, the node and stage tables. Missing sections (a run that stopped
early) are left out, never invented.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from syncdoctor.probe.records import CollectiveRow
from syncdoctor.probe.report import ProbeReport
from syncdoctor.report import svg
from syncdoctor.report.aggregate import bin_matrix
from syncdoctor.report.html import findings_section, page, section, table, text, verdict_block
from syncdoctor.units import format_bytes, format_link_rate, format_seconds
from syncdoctor.watch.records import format_ranks

__all__ = ["MAX_BARS", "MAX_MATRIX", "link_matrices", "render"]

MAX_MATRIX = 48  # heatmap side before binning
MAX_BARS = 48  # skew bars before only the latest nodes are drawn
MAX_TABLE_ROWS = 256


def _labels(report: ProbeReport) -> tuple[list[int], list[str]]:
    nodes = sorted(report.nodes, key=lambda n: n.node)
    ids = [n.node for n in nodes]
    labels = [n.label for n in nodes]
    link_nodes = sorted({x for link in report.links for x in (link.a_node, link.b_node)} - set(ids))
    for ident in link_nodes:  # links to nodes the join table does not list (should not happen)
        ids.append(ident)
        labels.append(f"node{ident}")
    return ids, labels


def link_matrices(report: ProbeReport) -> tuple[list[str], list[list[float | None]], list[list[float | None]]]:
    """Node labels, bandwidth matrix (bytes/s, row = sender) and latency matrix (seconds) from ``links``.

    Inter-node links fill both directions; the diagonal holds the slowest link between two ranks of the
    node (``intra``), when measured.
    """
    ids, labels = _labels(report)
    index = {ident: i for i, ident in enumerate(ids)}
    n = len(ids)
    bandwidth: list[list[float | None]] = [[None] * n for _ in range(n)]
    latency: list[list[float | None]] = [[None] * n for _ in range(n)]
    for link in report.links:
        a, b = index[link.a_node], index[link.b_node]
        ab, ba, lat = float(link.bw_ab), float(link.bw_ba), float(link.latency_s)
        if a == b:
            worst = min(ab, ba)
            bandwidth[a][a] = worst if bandwidth[a][a] is None else min(bandwidth[a][a], worst)  # type: ignore[type-var]
            latency[a][a] = lat if latency[a][a] is None else max(latency[a][a], lat)  # type: ignore[type-var]
            continue
        bandwidth[a][b], bandwidth[b][a] = ab, ba
        latency[a][b] = latency[b][a] = lat
    return labels, bandwidth, latency


def _kind(report: ProbeReport) -> str:
    return report.verdict.kind if report.verdict else ""


def _status(report: ProbeReport) -> str:
    severities = {f.severity.label for f in report.findings}
    stages = {s.status for s in report.stages}
    if "error" in severities or stages - {"ok"} or _kind(report) == "incomplete":
        return "error"
    if "warning" in severities or _kind(report) in ("slow_node", "slow_link"):
        return "warning"
    return "ok"


def _verdict(report: ProbeReport) -> str:
    launch = report.launch
    verdict = report.verdict
    headline = (verdict.summary if verdict else "") or (
        "the probe did not finish: no verdict" if not report.finished else "no verdict in the report")
    details = [
        f"{report.registered} of {launch.get('world_size', '?')} ranks on {len(report.nodes)} node(s), backend "
        f"{report.backend or '?'}, launcher {launch.get('launcher', '?')}",
    ]
    for stage in report.stages:
        if stage.status == "ok":
            continue
        first = next(iter(stage.errors.values()), "")
        details.append(f"stage {stage.name} {stage.status}" + (f": {first}" if first else ""))
    slowest = verdict.slowest_rank if verdict else None
    if slowest is not None and slowest[2]:
        details.append(f"rank {slowest[0]} was the slowest in {slowest[1]} of {slowest[2]} collective sizes")
    errors = sum(1 for f in report.findings if f.severity.label == "error")
    warnings = sum(1 for f in report.findings if f.severity.label == "warning")
    details.append(f"{errors} error(s), {warnings} warning(s): see the findings and their fixes below")
    return verdict_block(_status(report), headline, details)


def _recommendations(report: ProbeReport) -> str:
    advice = report.recommendations
    if advice is None:
        return ""
    lines = [f"export {k}={v}" for k, v in advice.env.items()]
    for label, variables in advice.per_node_env.items():
        lines += [f"export {k}={v}   # on {label}" for k, v in variables.items()]
    timeouts = [["start-up timeout", f"{advice.startup_timeout_s} s", advice.reasons.get("startup", "")],
                ["steady-state timeout", f"{advice.steady_timeout_s} s", advice.reasons.get("steady", "")]]
    parts = []
    if lines:
        parts.append(f'<pre class="lines" id="recommended-env">{text(chr(10).join(lines))}</pre>')
    if timeouts:
        parts.append(table(["setting", "value", "why"], timeouts, table_id="recommended-timeouts"))
    parts += [f'<p class="note">{text(n)}</p>' for n in advice.notes]
    return section("Recommended settings", "recommendations", *parts) if parts else ""


def _highlights(report: ProbeReport, labels: Sequence[str]) -> tuple[list[int], list[tuple[int, int]]]:
    subject = report.verdict.subject if report.verdict else ""
    if _kind(report) == "slow_node" and subject in labels:
        return [labels.index(subject)], []
    if _kind(report) == "slow_link":
        for i, a in enumerate(labels):
            for j, b in enumerate(labels):
                if i != j and f"{a}-{b}" == subject:
                    return [], [(i, j), (j, i)]
    return [], []


def _links(report: ProbeReport) -> str:
    links = report.links
    if not links:
        return ""
    labels, bandwidth, latency = link_matrices(report)
    ids, _ = _labels(report)
    label_of = dict(zip(ids, labels, strict=True))
    rows, cells = _highlights(report, labels)
    binned_bw = bin_matrix(bandwidth, labels, max_side=MAX_MATRIX, reduce=min)
    binned_lat = bin_matrix(latency, labels, max_side=MAX_MATRIX, reduce=max)
    where = {i: b for b, members in enumerate(binned_bw.members) for i in members}
    hot_rows = sorted({where[i] for i in rows})
    hot_cells = sorted({(where[i], where[j]) for i, j in cells})
    note = ("Each cell is the point-to-point bandwidth from the row's node to the column's node (the slower "
            "direction of a pair can differ); the diagonal is between two ranks of one node.")
    if binned_bw.binned:
        note += (f" {binned_bw.size} nodes are binned into {len(binned_bw.labels)} groups: each cell shows the "
                 "slowest link (and the largest latency) between the two groups.")
    charts = [
        svg.heatmap(binned_bw.values, binned_bw.labels, binned_bw.labels, chart_id="bandwidth-heatmap",
                    title="Link bandwidth, node x node", format_value=format_link_rate, good_high=True,
                    highlight_rows=hot_rows, highlight_cells=hot_cells, neutral_diagonal=True),
        svg.heatmap(binned_lat.values, binned_lat.labels, binned_lat.labels, chart_id="latency-heatmap",
                    title="Link latency (one way), node x node", format_value=format_seconds, good_high=False,
                    highlight_rows=hot_rows, highlight_cells=hot_cells, neutral_diagonal=True),
    ]
    worst = sorted(links, key=lambda link: min(float(link.bw_ab), float(link.bw_ba)))[:10]
    promised = {row.get("pair"): row for row in (report.verdict.achieved_vs_promised if report.verdict else ())}
    table_rows: list[list[Any]] = []
    for link in worst:
        a = label_of.get(link.a_node, f"node{link.a_node}")
        b = label_of.get(link.b_node, f"node{link.b_node}")
        pair = f"{a}-{b}" if link.kind == "inter" else f"{a} r{link.a_rank}-r{link.b_rank}"
        row = promised.get(pair) or {}
        fraction = row.get("fraction")
        table_rows.append([
            pair, link.kind, format_seconds(float(link.latency_s)),
            format_link_rate(float(link.bw_ab)), format_link_rate(float(link.bw_ba)),
            "-" if fraction is None else f"{fraction:.2f}x" + ("" if row.get("physical") else " (virtual)"),
        ])
    return section(
        "Links", "links", f'<div class="charts">{"".join(charts)}</div>',
        f"<h3>Slowest links ({len(table_rows)} of {len(links)})</h3>",
        table(["pair", "kind", "latency", "a->b", "b->a", "vs link rate"], table_rows, table_id="slowest-links",
              numeric=(2, 3, 4, 5)),
        note=note,
    )


def _collectives(report: ProbeReport) -> str:
    if not report.collectives:
        return ""
    by_op: dict[str, list[CollectiveRow]] = {}
    for row in report.collectives:
        by_op.setdefault(row.op, []).append(row)
    charts: list[str] = []
    table_rows: list[list[Any]] = []
    hot: list[int] = []
    for op, op_rows in by_op.items():
        points_bus = [(float(r.size), float(r.busbw)) for r in op_rows]
        points_alg = [(float(r.size), float(r.algbw)) for r in op_rows]
        ranks = op_rows[0].ranks
        charts.append(svg.line_chart(
            {"busbw": points_bus, "algbw": points_alg}, chart_id=f"busbw-{op}",
            title=f"{op} ({ranks} ranks)", x_label="message size (bytes)", y_label="bandwidth",
            format_x=format_bytes, format_y=lambda v: format_link_rate(v).replace(" ", "\u00a0"), dashed=("algbw",),
        ))
        for r in op_rows:
            wrong = r.wrong
            if wrong:
                hot.append(len(table_rows))
            table_rows.append([
                op, format_bytes(float(r.size)), r.count, r.dtype,
                format_seconds(float(r.time_avg_s)), format_link_rate(float(r.algbw)),
                format_link_rate(float(r.busbw)), r.slowest_rank,
                "-" if wrong is None else wrong,
            ])
    details = (f"<details><summary>All {len(table_rows)} rows (nccl-tests columns)</summary>"
               + table(["op", "size", "count", "type", "time", "algbw", "busbw", "slowest rank", "#wrong"],
                       table_rows, table_id="collective-rows", numeric=(1, 2, 4, 5, 6, 7, 8), highlight=hot)
               + "</details>")
    return section("Collectives: bandwidth against message size", "collectives",
                   f'<div class="charts">{"".join(charts)}</div>', details,
                   note="busbw (solid) is comparable to the link rate across collectives and rank counts; "
                        "algbw (dashed) is the size divided by the time. Sizes on a log scale.")


def _skew(report: ProbeReport) -> str:
    skews = report.skews
    if not skews:
        return ""
    warn = float(report.config.get("skew_warn_s") or 10.0)
    subject = report.verdict.subject if report.verdict else ""
    ordered = sorted(skews, key=lambda s: s.node)
    note = ("When each node's ranks arrived after the first node, on node 0's clock (corrected by the measured "
            "clock offsets); the bar spans the node's first to last rank.")
    if len(ordered) > MAX_BARS:
        latest = sorted(ordered, key=lambda s: -float(s.last_s))[:MAX_BARS]
        rest = [s for s in ordered if s not in latest]
        note += (f" The {MAX_BARS} latest of {len(ordered)} nodes are drawn; the other {len(rest)} arrived "
                 f"within {format_seconds(max(float(s.last_s) for s in rest))}.")
        ordered = latest
    bars = []
    for s in ordered:
        first, last = float(s.first_s), float(s.last_s)
        label = s.label
        bars.append(svg.Bar(
            label, last, first, highlight=last >= warn or label == subject,
            title=f"{label}: first rank at {format_seconds(first)}, last at {format_seconds(last)}, clock offset "
                  f"{format_seconds(float(s.offset_s))} (uncorrected first {format_seconds(float(s.raw_first_s))})",
        ))
    chart = svg.bar_chart(bars, chart_id="skew-bars", title="Start-up skew per node", x_label="seconds after the first arrival",
                          format_value=format_seconds, threshold=warn, threshold_label=f"warn {warn:g} s")
    return section("Start-up skew", "skew", chart, note=note)


def _nodes(report: ProbeReport) -> str:
    nodes = report.nodes
    if not nodes:
        return ""
    skews = {s.node: s for s in report.skews}
    offsets = {o.node: o for o in report.offsets}
    facts = {f.node: f for f in report.facts or ()}
    rows: list[list[Any]] = []
    for node in nodes[:MAX_TABLE_ROWS]:
        ident = node.node
        skew, offset, fact = skews.get(ident), offsets.get(ident), facts.get(ident)
        rows.append([
            ident, node.label, node.addr or "?", _ranks(node.ranks),
            format_seconds(float(skew.first_s)) if skew else "-",
            format_seconds(float(offset.offset_s)) if offset else "-",
            (fact.interface if fact else None) or "?", (fact.mtu if fact else None) or "?",
        ])
    missing = report.join.missing if report.join else ()
    extra = f'<p class="note">{len(nodes) - MAX_TABLE_ROWS} more nodes in the JSON report.</p>' if len(nodes) > MAX_TABLE_ROWS else ""
    missing_html = "".join(f'<p class="note">missing: {text(m)}</p>' for m in missing[:20])
    return section("Nodes", "nodes", table(
        ["node", "host", "address", "ranks", "arrived", "clock offset", "interface", "MTU"], rows,
        table_id="nodes-table", numeric=(0, 4, 5, 7)), extra, missing_html)


def _ranks(ranks: Sequence[Any]) -> str:
    return format_ranks(int(r) for r in ranks)


def _stages(report: ProbeReport) -> str:
    if not report.stages:
        return ""
    rows: list[list[Any]] = []
    hot: list[int] = []
    for index, stage in enumerate(report.stages):
        if stage.status != "ok":
            hot.append(index)
        rows.append([stage.name, stage.status, format_seconds(float(stage.seconds)),
                     "; ".join(f"rank {r}: {e}" for r, e in list(stage.errors.items())[:4])])
    return section("Stages", "stages", table(["stage", "status", "time", "errors"], rows, table_id="stages-table",
                                             numeric=(2,), highlight=hot))


def render(report: ProbeReport) -> str:
    """The probe page of a probe report."""
    launch = report.launch
    subtitle = (f"{report.schema}, created {report.created or '?'}, {launch.get('world_size', '?')} ranks, "
                f"backend {report.backend or '?'}" + ("" if report.finished else ", unfinished"))
    body = [
        _verdict(report),
        findings_section([f.to_json() for f in report.findings]),
        _recommendations(report),
        _links(report),
        _collectives(report),
        _skew(report),
        _nodes(report),
        _stages(report),
    ]
    return page("syncdoctor probe report", "probe", [b for b in body if b], subtitle=subtitle)
