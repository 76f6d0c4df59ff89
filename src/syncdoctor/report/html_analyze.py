"""The analyze report (schema ``syncdoctor.analyze/1``) as HTML. Pure: a typed verdict in, a page out.

Sections: the verdict (the most likely root cause: culprit rank and host, what happened, the fix), the
hypotheses ranked by confidence with their evidence lines (``file:line``), findings, the cross-rank
failure timeline (one lane per rank, the culprit highlighted and the first failure in time marked), and
the per-rank table. Large jobs: the culprit lanes, the first ranks to fail and the ranks with the most
events are drawn (at most ``MAX_LANES``), the others share one summary lane.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from syncdoctor.analyze.verdict import TimelineRow, Verdict, VerdictHypothesis
from syncdoctor.report import svg
from syncdoctor.report.aggregate import pick_top
from syncdoctor.report.html import findings_section, page, section, table, text, verdict_block
from syncdoctor.units import format_seconds

__all__ = ["MAX_LANES", "hypotheses", "render", "timeline_events"]

MAX_LANES = 24
MAX_EVIDENCE = 12
_CALM = ("#0072B2", "#56B4E9", "#009E73", "#7F7F7F", "#000000")
_ALARM = ("#C62828", "#E69F00", "#CC79A7", "#D55E00")
_FAILURE_KINDS = ("error", "exception", "timeout", "timed", "crash", "fail", "fatal", "abort", "kill", "terminat",
                  "refused", "closed", "lost", "oom", "warn")


def hypotheses(verdict: Verdict) -> list[VerdictHypothesis]:
    """The diagnosis hypotheses, most confident first."""
    return sorted(verdict.hypotheses, key=lambda h: -h.confidence)


def _culprit(h: VerdictHypothesis) -> tuple[list[int], list[str]]:
    return list(dict.fromkeys(h.culprit_ranks)), list(dict.fromkeys(x for x in h.culprit_hosts if x))


def _evidence_lines(h: VerdictHypothesis) -> list[str]:
    lines = []
    for item in h.evidence:
        where = item.ref
        if not where:
            where = item.file or "?"
            if item.line is not None:
                where += f":{item.line}"
        rank = f"[rank {item.rank}] " if item.rank is not None else ""
        lines.append(f"{where}: {rank}{item.text}".rstrip())
    return lines


def _hypothesis_html(index: int, h: VerdictHypothesis) -> str:
    ranks, hosts = _culprit(h)
    confidence = h.confidence
    category = h.category
    title = h.title or h.what or category or "hypothesis"
    lines = _evidence_lines(h)
    total = h.evidence_total
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
    if h.affected_ranks:
        facts.append(f"{len(h.affected_ranks)} affected rank(s)")
    severity = "error" if index == 0 and h.root_cause else "warning"
    why = h.what
    fix = h.fix
    return (
        f'<div class="finding {severity}" data-hypothesis="{index}" data-category="{text(category)}" '
        f'data-culprit="{text(",".join(str(r) for r in ranks))}"><div class="title">'
        f'<span class="code">{text(h.code or f"#{index + 1}")}</span> {text(title)}</div>'
        f'<div class="note">{text("; ".join(facts))}</div>'
        + (f'<p class="why">{text(why)}</p>' if why and why != title else "")
        + (f'<pre class="lines" data-evidence="{len(lines)}">{text(shown)}</pre>' if lines else "")
        + (f'<div class="fix">fix: {text(fix)}</div>' if fix else "")
        + "</div>"
    )


def timeline_events(verdict: Verdict) -> list[TimelineRow]:
    """The per-rank timeline entries (on a known rank)."""
    return [e for e in verdict.timeline if e.rank is not None]


def _rank_of(entry: TimelineRow) -> int | None:
    return entry.rank


def _kind(kind: str) -> str:
    return kind or "event"


def _is_failure(kind: str) -> bool:
    kind = _kind(kind).lower()
    return any(word in kind for word in _FAILURE_KINDS)


def _time(value: float | None) -> float:
    return math.nan if value is None or not math.isfinite(value) else value


def _timeline(verdict: Verdict, culprits: Sequence[int]) -> str:
    entries = timeline_events(verdict)
    if not entries:
        return ""
    timed = [(_time(e.time), e) for e in entries]
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
    failures = sorted(((t, _rank_of(e)) for t, e in timed if _is_failure(e.kind) and not math.isnan(t)),
                      key=lambda item: item[0])
    first_failed = failures[0][1] if failures and common_clock else None
    counts: dict[int, float] = {}
    for _, e in timed:
        rank = _rank_of(e)
        if rank is not None:
            counts[rank] = counts.get(rank, 0.0) + (2.0 if _is_failure(e.kind) else 1.0)
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
        kind = _kind(e.kind)
        if kind not in kinds:
            kinds.append(kind)
        if rank not in lane_of:
            if others:
                entry = summary.setdefault((kind, int((t - t0) / width)), [t, 0, set()])
                entry[1] += 1
                entry[2].add(rank)
            continue
        where = f" ({e.file}:{e.line})" if e.file else ""
        seq = f" #{e.seq}" if e.seq is not None else ""
        op = f" {e.op}" if e.op else ""
        is_first = not first_marked and rank == first_failed and _is_failure(e.kind)
        first_marked = first_marked or is_first
        label = (f"rank {rank}: {kind}{op}{seq}: {e.text}{where}"
                 + (" [first failure in time]" if is_first else ""))
        spans.append(svg.Span(lane_of[rank], t - t0, None, kind, label,
                              highlight=is_first or (rank in culprits and _is_failure(e.kind))))
    for (kind, _bin), (t, count, ranks) in summary.items():
        spans.append(svg.Span(len(chosen), t - t0, None, kind, f"{count} {kind} event(s) on {len(ranks)} other rank(s)"))
    failure_kinds = [k for k in kinds if _is_failure(k)]
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


_RANK_COLUMNS = ("rank", "host", "state", "last_seq", "exitcode", "signal", "first_error", "first_error_ref")


def _ranks_table(verdict: Verdict, culprits: Sequence[int]) -> str:
    ranks = [r.to_json() for r in verdict.ranks]
    if not ranks:
        return ""
    columns = [c for c in _RANK_COLUMNS if any(r[c] not in (None, "", []) for r in ranks)]
    rows, hot = [], []
    for index, r in enumerate(sorted(ranks, key=lambda r: (r["rank"] not in culprits, r["rank"]))[:256]):
        if r["rank"] in culprits:
            hot.append(index)
        rows.append(["" if r[c] is None else r[c] for c in columns])
    return section("Ranks", "ranks", table([c.replace("_", " ") for c in columns], rows, table_id="ranks-table",
                                           highlight=hot),
                   note=f"{len(ranks)} ranks" + (", the first 256 shown" if len(ranks) > 256 else ""))


def _unexplained(verdict: Verdict) -> str:
    """The error-looking lines no hypothesis cites: what was read, even when it was not understood."""
    if not verdict.unexplained:
        return ""
    rows = "".join(f"<li><code>{text(e.ref)}</code> {text(e.text[:300])}</li>" for e in verdict.unexplained)
    return section("Lines not explained", "unexplained", f"<ul>{rows}</ul>",
                   note="error-looking lines that no hypothesis cites")


def render(verdict: Verdict) -> str:
    """The analyze page of a verdict (:meth:`Verdict.from_json` reads the analyze JSON document)."""
    found = hypotheses(verdict)
    root = verdict.root_cause
    if root is not None:  # the root cause first, once (it is also in the hypotheses)
        same = (root.code, root.title, _culprit(root)[0])
        found = [root, *[h for h in found if (h.code, h.title, _culprit(h)[0]) != same]]
    if not verdict.root_cause_found or root is None:
        found = [replace(h, root_cause=False) for h in found]
    culprits: list[int] = []
    if found and found[0].root_cause:
        top = found[0]
        culprits, hosts = _culprit(top)
        headline = top.title or top.category or "root cause"
        details = []
        processes = list(top.culprit_processes)
        if culprits:
            details.append(f"culprit: rank {', '.join(str(r) for r in culprits[:16])}"
                           + (f" on {', '.join(hosts[:8])}" if hosts else ""))
        elif processes:
            details.append(f"culprit: {', '.join(processes[:8])}")
        elif hosts:
            details.append(f"culprit: {', '.join(hosts[:8])}")
        if top.category:
            details.append(f"category: {top.category}")
        if top.fix:
            details.append(f"fix: {top.fix}")
        if len(found) > 1:
            details.append(f"{len(found) - 1} other hypothesis(es) below")
        status = "error"
    else:
        headline = "no root cause found in the inputs"
        details = [f"{len(found)} hypothesis(es) below, none certain" if found else "see the timeline and the ranks"]
        status = "warning"
    inputs = verdict.inputs
    subtitle = verdict.schema + (f", {len(inputs)} input(s)" if inputs else "")
    hypotheses_html = "".join(_hypothesis_html(i, h) for i, h in enumerate(found))
    body = [
        verdict_block(status, headline, details),
        section("Hypotheses", "hypotheses", hypotheses_html, note="most likely first") if found else "",
        findings_section(verdict.findings) if verdict.findings and not found else "",  # they repeat the hypotheses
        _unexplained(verdict),
        _timeline(verdict, culprits),
        _ranks_table(verdict, culprits),
    ]
    return page("syncdoctor analyze report", "analyze", [b for b in body if b], subtitle=subtitle)
