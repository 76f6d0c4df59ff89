"""The probe report (schema ``syncdoctor.probe/1``) as HTML. Pure: JSON data in, a page out.

Sections: verdict, findings with fixes, recommended settings, the node x node bandwidth and latency
heatmaps (binned to at most 48 x 48, each bin keeping its worst link), bus bandwidth against size per
collective, start-up skew per node, the node and stage tables. Missing sections (a run that stopped
early) are left out, never invented.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from syncdoctor.report import svg
from syncdoctor.report.aggregate import bin_matrix
from syncdoctor.report.html import PROBE_SCHEMA, findings_section, page, section, table, text, verdict_block
from syncdoctor.report.units import format_bytes, format_rate, format_seconds
from syncdoctor.watch.records import format_ranks

__all__ = ["MAX_BARS", "MAX_MATRIX", "link_matrices", "render"]

MAX_MATRIX = 48  # heatmap side before binning
MAX_BARS = 48  # skew bars before only the latest nodes are drawn
MAX_TABLE_ROWS = 256


def _labels(data: Mapping[str, Any]) -> tuple[list[int], list[str]]:
    nodes = sorted((data.get("join") or {}).get("nodes") or [], key=lambda n: int(n.get("node", 0)))
    ids = [int(n.get("node", i)) for i, n in enumerate(nodes)]
    labels = [str(n.get("label") or n.get("hostname") or f"node{ident}") for ident, n in zip(ids, nodes, strict=True)]
    link_nodes = sorted({int(x) for link in data.get("links") or [] for x in (link.get("a_node"), link.get("b_node"))
                         if x is not None} - set(ids))
    for ident in link_nodes:  # links to nodes the join table does not list (should not happen)
        ids.append(ident)
        labels.append(f"node{ident}")
    return ids, labels


def link_matrices(data: Mapping[str, Any]) -> tuple[list[str], list[list[float | None]], list[list[float | None]]]:
    """Node labels, bandwidth matrix (bytes/s, row = sender) and latency matrix (seconds) from ``links``.

    Inter-node links fill both directions; the diagonal holds the slowest link between two ranks of the
    node (``intra``), when measured.
    """
    ids, labels = _labels(data)
    index = {ident: i for i, ident in enumerate(ids)}
    n = len(ids)
    bandwidth: list[list[float | None]] = [[None] * n for _ in range(n)]
    latency: list[list[float | None]] = [[None] * n for _ in range(n)]
    for link in data.get("links") or []:
        try:
            a, b = index[int(link["a_node"])], index[int(link["b_node"])]
            ab, ba, lat = float(link["bw_ab"]), float(link["bw_ba"]), float(link["latency_s"])
        except (KeyError, TypeError, ValueError):
            continue
        if a == b:
            worst = min(ab, ba)
            bandwidth[a][a] = worst if bandwidth[a][a] is None else min(bandwidth[a][a], worst)  # type: ignore[type-var]
            latency[a][a] = lat if latency[a][a] is None else max(latency[a][a], lat)  # type: ignore[type-var]
            continue
        bandwidth[a][b], bandwidth[b][a] = ab, ba
        latency[a][b] = latency[b][a] = lat
    return labels, bandwidth, latency


def _status(data: Mapping[str, Any]) -> str:
    severities = {str(f.get("severity")) for f in data.get("findings") or []}
    stages = {str(s.get("status")) for s in data.get("stages") or []}
    verdict = data.get("verdict") or {}
    if "error" in severities or stages - {"ok"} or verdict.get("kind") == "incomplete":
        return "error"
    if "warning" in severities or verdict.get("kind") in ("slow_node", "slow_link"):
        return "warning"
    return "ok"


def _verdict(data: Mapping[str, Any]) -> str:
    launch = data.get("launch") or {}
    join = data.get("join") or {}
    verdict = data.get("verdict") or {}
    registered = len(join.get("registered") or [])
    nodes = len(join.get("nodes") or [])
    headline = verdict.get("summary") or (
        "the probe did not finish: no verdict" if not data.get("finished") else "no verdict in the report")
    details = [
        f"{registered} of {launch.get('world_size', '?')} ranks on {nodes} node(s), backend "
        f"{data.get('backend', '?')}, launcher {launch.get('launcher', '?')}",
    ]
    failed = [s for s in data.get("stages") or [] if s.get("status") != "ok"]
    for stage in failed:
        errors = stage.get("errors") or {}
        first = next(iter(errors.values()), "")
        details.append(f"stage {stage.get('name')} {stage.get('status')}" + (f": {first}" if first else ""))
    slowest = verdict.get("slowest_rank")
    if isinstance(slowest, Mapping) and slowest.get("of"):
        details.append(f"rank {slowest.get('rank')} was the slowest in {slowest.get('sizes')} of "
                       f"{slowest.get('of')} collective sizes")
    errors = sum(1 for f in data.get("findings") or [] if f.get("severity") == "error")
    warnings = sum(1 for f in data.get("findings") or [] if f.get("severity") == "warning")
    details.append(f"{errors} error(s), {warnings} warning(s): see the findings and their fixes below")
    return verdict_block(_status(data), headline, details)


def _recommendations(data: Mapping[str, Any]) -> str:
    advice = data.get("recommendations")
    if not isinstance(advice, Mapping):
        return ""
    lines = [f"export {k}={v}" for k, v in (advice.get("env") or {}).items()]
    for label, variables in (advice.get("per_node_env") or {}).items():
        lines += [f"export {k}={v}   # on {label}" for k, v in (variables or {}).items()]
    timeouts = []
    if advice.get("startup_timeout_s") is not None:
        timeouts.append(["start-up timeout", f"{advice['startup_timeout_s']} s",
                         (advice.get("reasons") or {}).get("startup", "")])
    if advice.get("steady_timeout_s") is not None:
        timeouts.append(["steady-state timeout", f"{advice['steady_timeout_s']} s",
                         (advice.get("reasons") or {}).get("steady", "")])
    parts = []
    if lines:
        parts.append(f'<pre class="lines" id="recommended-env">{text(chr(10).join(lines))}</pre>')
    if timeouts:
        parts.append(table(["setting", "value", "why"], timeouts, table_id="recommended-timeouts"))
    notes = advice.get("notes") or []
    parts += [f'<p class="note">{text(n)}</p>' for n in notes]
    return section("Recommended settings", "recommendations", *parts) if parts else ""


def _highlights(data: Mapping[str, Any], labels: Sequence[str]) -> tuple[list[int], list[tuple[int, int]]]:
    verdict = data.get("verdict") or {}
    subject = str(verdict.get("subject") or "")
    if verdict.get("kind") == "slow_node" and subject in labels:
        return [labels.index(subject)], []
    if verdict.get("kind") == "slow_link":
        for i, a in enumerate(labels):
            for j, b in enumerate(labels):
                if i != j and f"{a}-{b}" == subject:
                    return [], [(i, j), (j, i)]
    return [], []


def _links(data: Mapping[str, Any]) -> str:
    links = data.get("links") or []
    if not links:
        return ""
    labels, bandwidth, latency = link_matrices(data)
    ids, _ = _labels(data)
    label_of = dict(zip(ids, labels, strict=True))
    rows, cells = _highlights(data, labels)
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
                    title="Link bandwidth, node x node", format_value=format_rate, good_high=True,
                    highlight_rows=hot_rows, highlight_cells=hot_cells, neutral_diagonal=True),
        svg.heatmap(binned_lat.values, binned_lat.labels, binned_lat.labels, chart_id="latency-heatmap",
                    title="Link latency (one way), node x node", format_value=format_seconds, good_high=False,
                    highlight_rows=hot_rows, highlight_cells=hot_cells, neutral_diagonal=True),
    ]
    worst = sorted(links, key=lambda link: min(float(link.get("bw_ab", 0)), float(link.get("bw_ba", 0))))[:10]
    promised = {row.get("pair"): row for row in (data.get("verdict") or {}).get("achieved_vs_promised") or []}
    table_rows = []
    for link in worst:
        a = label_of.get(int(link["a_node"]), f"node{link['a_node']}")
        b = label_of.get(int(link["b_node"]), f"node{link['b_node']}")
        pair = f"{a}-{b}" if link.get("kind") == "inter" else f"{a} r{link.get('a_rank')}-r{link.get('b_rank')}"
        row = promised.get(pair) or {}
        fraction = row.get("fraction")
        table_rows.append([
            pair, link.get("kind", ""), format_seconds(float(link.get("latency_s", math.nan))),
            format_rate(float(link.get("bw_ab", math.nan))), format_rate(float(link.get("bw_ba", math.nan))),
            "-" if fraction is None else f"{fraction:.2f}x" + ("" if row.get("physical") else " (virtual)"),
        ])
    return section(
        "Links", "links", f'<div class="charts">{"".join(charts)}</div>',
        f"<h3>Slowest links ({len(table_rows)} of {len(links)})</h3>",
        table(["pair", "kind", "latency", "a->b", "b->a", "vs link rate"], table_rows, table_id="slowest-links",
              numeric=(2, 3, 4, 5)),
        note=note,
    )


def _collectives(data: Mapping[str, Any]) -> str:
    rows = [r for r in data.get("collectives") or [] if isinstance(r, Mapping)]
    if not rows:
        return ""
    by_op: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_op.setdefault(str(row.get("op", "?")), []).append(row)
    charts, table_rows, hot = [], [], []
    for op, op_rows in by_op.items():
        points_bus = [(float(r["size"]), float(r["busbw"])) for r in op_rows if "size" in r and "busbw" in r]
        points_alg = [(float(r["size"]), float(r["algbw"])) for r in op_rows if "size" in r and "algbw" in r]
        ranks = op_rows[0].get("ranks", "?")
        charts.append(svg.line_chart(
            {"busbw": points_bus, "algbw": points_alg}, chart_id=f"busbw-{op}",
            title=f"{op} ({ranks} ranks)", x_label="message size (bytes)", y_label="bandwidth",
            format_x=format_bytes, format_y=lambda v: format_rate(v).replace(" ", "\u00a0"), dashed=("algbw",),
        ))
        for r in op_rows:
            wrong = r.get("wrong")
            if wrong:
                hot.append(len(table_rows))
            table_rows.append([
                op, format_bytes(float(r.get("size", 0))), r.get("count", ""), r.get("dtype", ""),
                format_seconds(float(r.get("time_avg_s", math.nan))), format_rate(float(r.get("algbw", math.nan))),
                format_rate(float(r.get("busbw", math.nan))), r.get("slowest_rank", ""),
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


def _skew(data: Mapping[str, Any]) -> str:
    skews = [s for s in (data.get("clock") or {}).get("skew") or [] if isinstance(s, Mapping)]
    if not skews:
        return ""
    warn = float((data.get("config") or {}).get("skew_warn_s") or 10.0)
    subject = str((data.get("verdict") or {}).get("subject") or "")
    ordered = sorted(skews, key=lambda s: int(s.get("node", 0)))
    note = ("When each node's ranks arrived after the first node, on node 0's clock (corrected by the measured "
            "clock offsets); the bar spans the node's first to last rank.")
    if len(ordered) > MAX_BARS:
        latest = sorted(ordered, key=lambda s: -float(s.get("last_s", 0)))[:MAX_BARS]
        rest = [s for s in ordered if s not in latest]
        note += (f" The {MAX_BARS} latest of {len(ordered)} nodes are drawn; the other {len(rest)} arrived "
                 f"within {format_seconds(max(float(s.get('last_s', 0)) for s in rest))}.")
        ordered = latest
    bars = []
    for s in ordered:
        first, last = float(s.get("first_s", 0)), float(s.get("last_s", 0))
        label = str(s.get("label", f"node{s.get('node')}"))
        bars.append(svg.Bar(
            label, last, first, highlight=last >= warn or label == subject,
            title=f"{label}: first rank at {format_seconds(first)}, last at {format_seconds(last)}, clock offset "
                  f"{format_seconds(float(s.get('offset_s', 0)))} (uncorrected first {format_seconds(float(s.get('raw_first_s', first)))})",
        ))
    chart = svg.bar_chart(bars, chart_id="skew-bars", title="Start-up skew per node", x_label="seconds after the first arrival",
                          format_value=format_seconds, threshold=warn, threshold_label=f"warn {warn:g} s")
    return section("Start-up skew", "skew", chart, note=note)


def _nodes(data: Mapping[str, Any]) -> str:
    nodes = (data.get("join") or {}).get("nodes") or []
    if not nodes:
        return ""
    skews = {s.get("node"): s for s in (data.get("clock") or {}).get("skew") or []}
    offsets = {o.get("node"): o for o in (data.get("clock") or {}).get("offsets") or []}
    facts = {f.get("node"): f for f in (data.get("facts") or {}).get("nodes") or []}
    rows = []
    for node in nodes[:MAX_TABLE_ROWS]:
        ident = node.get("node")
        skew, offset, fact = skews.get(ident) or {}, offsets.get(ident) or {}, facts.get(ident) or {}
        ranks = node.get("ranks") or []
        rows.append([
            ident, node.get("label", ""), node.get("addr") or "?", _ranks(ranks),
            format_seconds(float(skew["first_s"])) if "first_s" in skew else "-",
            format_seconds(float(offset["offset_s"])) if "offset_s" in offset else "-",
            fact.get("interface") or "?", fact.get("mtu") or "?",
        ])
    missing = (data.get("join") or {}).get("missing") or []
    extra = f'<p class="note">{len(nodes) - MAX_TABLE_ROWS} more nodes in the JSON report.</p>' if len(nodes) > MAX_TABLE_ROWS else ""
    missing_html = "".join(f'<p class="note">missing: {text(m)}</p>' for m in missing[:20])
    return section("Nodes", "nodes", table(
        ["node", "host", "address", "ranks", "arrived", "clock offset", "interface", "MTU"], rows,
        table_id="nodes-table", numeric=(0, 4, 5, 7)), extra, missing_html)


def _ranks(ranks: Sequence[Any]) -> str:
    return format_ranks(int(r) for r in ranks)


def _stages(data: Mapping[str, Any]) -> str:
    stages = data.get("stages") or []
    if not stages:
        return ""
    rows, hot = [], []
    for index, stage in enumerate(stages):
        errors = stage.get("errors") or {}
        if stage.get("status") != "ok":
            hot.append(index)
        rows.append([stage.get("name", ""), stage.get("status", ""), format_seconds(float(stage.get("seconds", 0))),
                     "; ".join(f"rank {r}: {e}" for r, e in list(errors.items())[:4])])
    return section("Stages", "stages", table(["stage", "status", "time", "errors"], rows, table_id="stages-table",
                                             numeric=(2,), highlight=hot))


def render(data: Mapping[str, Any]) -> str:
    """The probe page; ``data`` is the probe's JSON document."""
    schema = data.get("schema", PROBE_SCHEMA)
    launch = data.get("launch") or {}
    subtitle = (f"{schema}, created {data.get('created', '?')}, {launch.get('world_size', '?')} ranks, "
                f"backend {data.get('backend', '?')}" + ("" if data.get("finished") else ", unfinished"))
    body = [
        _verdict(data),
        findings_section(data.get("findings") or []),
        _recommendations(data),
        _links(data),
        _collectives(data),
        _skew(data),
        _nodes(data),
        _stages(data),
    ]
    return page("syncdoctor probe report", "probe", [b for b in body if b], subtitle=subtitle)
