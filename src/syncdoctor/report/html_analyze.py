"""The analyze report (schema ``syncdoctor.analyze/1``) as HTML. Pure: JSON data in, a page out.

Sections: the verdict (the most likely root cause: culprit rank and host, what happened, the fix), the
hypotheses ranked by confidence with their evidence lines (``file:line``), findings, the cross-rank
failure timeline (one lane per rank, the culprit highlighted and the first failure in time marked), and
the per-rank table. Large jobs: the culprit lanes, the first ranks to fail and the ranks with the most
events are drawn (at most ``MAX_LANES``), the others share one summary lane.

The reader is tolerant: a hypothesis may name its culprit as ``culprit: {rank, host}`` or
``ranks``/``hosts`` lists, evidence as ``{file, line, text}`` objects or ``"file:line: text"`` strings,
times as epoch seconds or ISO-8601 strings.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from typing import Any

from syncdoctor.analyze.model import LEGACY_CATEGORY_NAMES
from syncdoctor.report import svg
from syncdoctor.report.aggregate import pick_top
from syncdoctor.report.html import ANALYZE_SCHEMA, findings_section, page, section, table, text, verdict_block
from syncdoctor.report.units import format_seconds

__all__ = ["MAX_LANES", "hypotheses", "render", "timeline_events"]

MAX_LANES = 24
MAX_EVIDENCE = 12
_CALM = ("#0072B2", "#56B4E9", "#009E73", "#7F7F7F", "#000000")
_ALARM = ("#C62828", "#E69F00", "#CC79A7", "#D55E00")
_FAILURE_KINDS = ("error", "exception", "timeout", "timed", "crash", "fail", "fatal", "abort", "kill", "terminat",
                  "refused", "closed", "lost", "oom", "warn")


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def hypotheses(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The diagnosis hypotheses, most confident first."""
    for name in ("hypotheses", "diagnosis", "diagnoses", "causes"):
        value = data.get(name)
        if isinstance(value, Mapping):
            value = value.get("hypotheses") or value.get("causes") or [value]
        items = [h for h in _list(value) if isinstance(h, Mapping)]
        if items:
            return sorted(items, key=lambda h: -_number(h.get("confidence"), 0.0))
    return []


def _number(value: Any, default: float = math.nan) -> float:
    try:
        result = float(value)
    except (TypeError, ValueError):
        return default
    return result if math.isfinite(result) else default


def _time(value: Any) -> float:
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return _number(value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.timezone.utc)
        return parsed.timestamp()
    return math.nan


def _culprit(h: Mapping[str, Any]) -> tuple[list[int], list[str]]:
    ranks: list[int] = []
    hosts: list[str] = []
    culprit = h.get("culprit")
    sources = [culprit] if isinstance(culprit, Mapping) else []
    sources.append(h)
    for source in sources:
        for name in ("rank", "culprit_rank"):
            if isinstance(source.get(name), int):
                ranks.append(int(source[name]))
        for name in ("ranks", "culprit_ranks"):
            ranks += [int(r) for r in _list(source.get(name)) if isinstance(r, int)]
        for name in ("host", "culprit_host"):
            if source.get(name):
                hosts.append(str(source[name]))
        for name in ("hosts", "culprit_hosts"):
            hosts += [str(x) for x in _list(source.get(name)) if x]
    return list(dict.fromkeys(ranks)), list(dict.fromkeys(hosts))


def _evidence_lines(h: Mapping[str, Any]) -> list[str]:
    lines = []
    for item in _list(h.get("evidence")) + _list(h.get("evidence_lines")):
        if isinstance(item, Mapping):
            where = str(item.get("ref") or "")
            if not where:
                where = str(item.get("file") or item.get("path") or "?")
                if item.get("line") is not None:
                    where += f":{item['line']}"
            rank = f"[rank {item['rank']}] " if item.get("rank") is not None else ""
            lines.append(f"{where}: {rank}{item.get('text') or item.get('message') or ''}".rstrip())
        elif isinstance(item, str):
            lines.append(item)
    return lines


def _hypothesis_html(index: int, h: Mapping[str, Any]) -> str:
    ranks, hosts = _culprit(h)
    confidence = _number(h.get("confidence"))
    category = str(h.get("category") or h.get("kind") or "")
    category = LEGACY_CATEGORY_NAMES.get(category, category)  # a file written before the names were unified
    title = str(h.get("title") or h.get("summary") or h.get("what") or category or "hypothesis")
    lines = _evidence_lines(h)
    total = int(_number(h.get("evidence_total"), len(lines)))
    shown = "\n".join(lines[:MAX_EVIDENCE]) + (f"\n... {total - MAX_EVIDENCE} more" if total > MAX_EVIDENCE else "")
    facts = []
    if ranks:
        facts.append(f"culprit rank(s) {', '.join(str(r) for r in ranks[:16])}")
    if hosts:
        facts.append(f"host(s) {', '.join(hosts[:8])}")
    if category:
        facts.append(f"category {category}")
    if not math.isnan(confidence):
        facts.append(f"confidence {confidence:.2f}")
    affected = _list(h.get("affected_ranks"))
    if affected:
        facts.append(f"{len(affected)} affected rank(s)")
    severity = "error" if index == 0 and h.get("root_cause", True) else "warning"
    why = str(h.get("why") or h.get("explanation") or h.get("what") or "")
    fix = str(h.get("fix") or "")
    return (
        f'<div class="finding {severity}" data-hypothesis="{index}" data-category="{text(category)}" '
        f'data-culprit="{text(",".join(str(r) for r in ranks))}"><div class="title">'
        f'<span class="code">{text(h.get("code") or f"#{index + 1}")}</span> {text(title)}</div>'
        f'<div class="note">{text("; ".join(facts))}</div>'
        + (f'<p class="why">{text(why)}</p>' if why and why != title else "")
        + (f'<pre class="lines" data-evidence="{len(lines)}">{text(shown)}</pre>' if lines else "")
        + (f'<div class="fix">fix: {text(fix)}</div>' if fix else "")
        + "</div>"
    )


def timeline_events(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The per-rank timeline entries (a flat list, or ``{rank: [entries]}``), each with its rank."""
    value = data.get("timeline")
    if isinstance(value, Mapping):
        value = value.get("events") if "events" in value else [
            dict(entry, rank=entry.get("rank", rank)) for rank, entries in value.items() for entry in _list(entries)
            if isinstance(entry, Mapping)]
    return [e for e in _list(value) if isinstance(e, Mapping) and _rank_of(e) is not None]


def _rank_of(entry: Mapping[str, Any]) -> int | None:
    try:
        return int(entry["rank"])
    except (KeyError, TypeError, ValueError):
        return None


def _kind(entry: Mapping[str, Any]) -> str:
    return str(entry.get("kind") or entry.get("type") or entry.get("category") or "event")


def _is_failure(entry: Mapping[str, Any]) -> bool:
    kind = _kind(entry).lower()
    return any(word in kind for word in _FAILURE_KINDS)


def _timeline(data: Mapping[str, Any], culprits: Sequence[int]) -> str:
    entries = timeline_events(data)
    if not entries:
        return ""
    timed = [(_time(e.get("time", e.get("at", e.get("timestamp")))), e) for e in entries]
    common_clock = not any(math.isnan(t) for t, _ in timed)
    if not common_clock:
        # no common clock for every line: each rank's events in its own log order
        position: dict[int | None, int] = {}
        ordered_timed = []
        for _, e in timed:
            rank = _rank_of(e)
            ordered_timed.append((float(position.get(rank, 0)), e))
            position[rank] = position.get(rank, 0) + 1
        timed = ordered_timed
        x_label = "event number on each rank, in log order (not every line carries a time)"
        format_x = lambda v: f"{v:g}"  # noqa: E731
    else:
        x_label = "seconds since the first event (clocks of different hosts may differ)"
        format_x = lambda v: format_seconds(v) if v else "0"  # noqa: E731
    known = [t for t, _ in timed if not math.isnan(t)]
    t0 = min(known) if known else 0.0
    failures = sorted(((t, _rank_of(e)) for t, e in timed if _is_failure(e) and not math.isnan(t)),
                      key=lambda item: item[0])
    first_failed = failures[0][1] if failures and common_clock else None
    counts: dict[int, float] = {}
    for _, e in timed:
        rank = _rank_of(e)
        if rank is not None:
            counts[rank] = counts.get(rank, 0.0) + (2.0 if _is_failure(e) else 1.0)
    early = [r for _, r in failures[:4] if r is not None]
    keep = list(dict.fromkeys([*culprits, *([first_failed] if first_failed is not None else []), *early]))
    chosen = pick_top(sorted(counts.items()), keep[:MAX_LANES], max(0, MAX_LANES - len(keep)))
    chosen = sorted(chosen, key=lambda r: (r not in culprits, r))
    lane_of = {rank: index for index, rank in enumerate(chosen)}
    lanes = [svg.Lane(f"rank {r}", highlight=r in culprits,
                      title=f"rank {r}" + (" (culprit)" if r in culprits else "")
                      + (" (first to fail)" if r == first_failed else "")) for r in chosen]
    others = sorted(set(counts) - set(chosen))
    if others:
        lanes.append(svg.Lane(f"{len(others)} other ranks"))
    kinds: list[str] = []
    spans = []
    first_marked = False
    ordered = sorted(((t, e) for t, e in timed if not math.isnan(t)), key=lambda item: item[0])
    width = max((ordered[-1][0] - ordered[0][0]) / 200, 1e-9) if ordered else 1.0
    summary: dict[tuple[str, int], list[Any]] = {}  # (kind, time bin) -> [first time, count, ranks]
    for t, e in ordered:
        rank = _rank_of(e)
        kind = _kind(e)
        if kind not in kinds:
            kinds.append(kind)
        if rank not in lane_of:
            if others:
                entry = summary.setdefault((kind, int((t - t0) / width)), [t, 0, set()])
                entry[1] += 1
                entry[2].add(rank)
            continue
        where = f" ({e.get('file')}:{e.get('line')})" if e.get("file") else ""
        seq = f" #{e.get('seq')}" if e.get("seq") is not None else ""
        op = f" {e.get('op')}" if e.get("op") else ""
        is_first = not first_marked and rank == first_failed and _is_failure(e)
        first_marked = first_marked or is_first
        label = (f"rank {rank}: {kind}{op}{seq}: {e.get('text') or e.get('message') or ''}{where}"
                 + (" [first failure in time]" if is_first else ""))
        end = _time(e.get("end")) if e.get("end") is not None else None
        spans.append(svg.Span(lane_of[rank], t - t0, None if end is None or math.isnan(end) else end - t0, kind,
                              label, highlight=is_first or (rank in culprits and _is_failure(e))))
    for (kind, _bin), (t, count, ranks) in summary.items():
        spans.append(svg.Span(len(chosen), t - t0, None, kind, f"{count} {kind} event(s) on {len(ranks)} other rank(s)"))
    failure_kinds = [k for k in kinds if _is_failure({"kind": k})]
    normal_kinds = [k for k in kinds if k not in failure_kinds]
    colors = {k: _CALM[i % len(_CALM)] for i, k in enumerate(normal_kinds)}
    colors.update({k: _ALARM[i % len(_ALARM)] for i, k in enumerate(failure_kinds)})
    spans.sort(key=lambda span: (span.kind in failure_kinds, span.highlight))  # failures drawn on top
    chart = svg.timeline(lanes, spans, chart_id="failure-timeline", title="Cross-rank failure timeline",
                         x_label=x_label, colors=colors, format_x=format_x)
    note = "One lane per rank; the culprit's lane is red" + (
        " and the first failure in time is outlined." if common_clock else "; its failures are outlined.")
    if others:
        note += f" {len(chosen)} of {len(counts)} ranks drawn: the culprits, the first to fail and the busiest."
    return section("Timeline", "timeline", chart, note=note)


def _ranks_table(data: Mapping[str, Any], culprits: Sequence[int]) -> str:
    ranks = [r for r in _list(data.get("ranks")) if isinstance(r, Mapping)]
    if not ranks:
        return ""
    columns = [c for c in ("rank", "host", "state", "last_seq", "last_op", "exitcode", "signal", "first_error",
                           "first_error_ref") if any(r.get(c) not in (None, "", []) for r in ranks)]
    rows, hot = [], []
    for index, r in enumerate(sorted(ranks, key=lambda r: (_rank_of(r) not in culprits, _rank_of(r) or 0))[:256]):
        if _rank_of(r) in culprits:
            hot.append(index)
        rows.append(["" if r.get(c) is None else r.get(c) for c in columns])
    return section("Ranks", "ranks", table([c.replace("_", " ") for c in columns], rows, table_id="ranks-table",
                                           highlight=hot),
                   note=f"{len(ranks)} ranks" + (", the first 256 shown" if len(ranks) > 256 else ""))


def _unexplained(data: Mapping[str, Any]) -> str:
    """The error-looking lines no hypothesis cites: what was read, even when it was not understood."""
    items = [e for e in _list(data.get("unexplained")) if isinstance(e, Mapping)]
    if not items:
        return ""
    rows = "".join(f"<li><code>{text(e.get('ref', ''))}</code> {text(str(e.get('text', ''))[:300])}</li>"
                   for e in items)
    return section("Lines not explained", "unexplained", f"<ul>{rows}</ul>",
                   note="error-looking lines that no hypothesis cites")


def render(data: Mapping[str, Any]) -> str:
    """The analyze page; ``data`` is the analyze JSON document."""
    found = hypotheses(data)
    root = data.get("root_cause")
    if isinstance(root, Mapping):  # the root cause first, once (it is also in the hypotheses)
        same = (root.get("code"), root.get("title"), _culprit(root)[0])
        found = [root, *[h for h in found if (h.get("code"), h.get("title"), _culprit(h)[0]) != same]]
    if data.get("root_cause_found") is False or (root is None and "root_cause" in data):
        found = [dict(h, root_cause=False) for h in found]
    culprits: list[int] = []
    if found and found[0].get("root_cause", True):
        top = found[0]
        culprits, hosts = _culprit(top)
        headline = str(top.get("title") or top.get("summary") or top.get("category") or "root cause")
        details = []
        processes = [str(p) for p in _list(top.get("culprit_processes"))]
        if culprits:
            details.append(f"culprit: rank {', '.join(str(r) for r in culprits[:16])}"
                           + (f" on {', '.join(hosts[:8])}" if hosts else ""))
        elif processes:
            details.append(f"culprit: {', '.join(processes[:8])}")
        elif hosts:
            details.append(f"culprit: {', '.join(hosts[:8])}")
        if top.get("category"):
            details.append(f"category: {LEGACY_CATEGORY_NAMES.get(str(top['category']), top['category'])}")
        if top.get("fix"):
            details.append(f"fix: {top['fix']}")
        if len(found) > 1:
            details.append(f"{len(found) - 1} other hypothesis(es) below")
        status = "error"
    else:
        headline = str(data.get("summary") or "no root cause found in the inputs")
        details = [f"{len(found)} hypothesis(es) below, none certain" if found else "see the timeline and the ranks"]
        status = "warning"
    inputs = _list(data.get("inputs"))
    subtitle = f"{data.get('schema', ANALYZE_SCHEMA)}" + (f", {len(inputs)} input(s)" if inputs else "")
    hypotheses_html = "".join(_hypothesis_html(i, h) for i, h in enumerate(found))
    body = [
        verdict_block(status, headline, details),
        section("Hypotheses", "hypotheses", hypotheses_html, note="most likely first") if found else "",
        findings_section([f for f in _list(data.get("findings")) if isinstance(f, Mapping)])
        if data.get("findings") and not found else "",  # the findings repeat the hypotheses
        _unexplained(data),
        _timeline(data, culprits),
        _ranks_table(data, culprits),
    ]
    return page("syncdoctor analyze report", "analyze", [b for b in body if b], subtitle=subtitle)
