"""The watch report: a page from the watcher's events (typed :class:`~syncdoctor.watch.events.Event`, as
:meth:`Event.from_json` reads the JSONL event file). Pure.

Events of one incident share a ``key`` (warning, maybe confirmed, then resolved). The page shows the
verdict (the worst incident still open, else the worst seen), one finding per incident with the W page's
fix, the per-rank timeline (each incident from the moment the others started waiting to its resolution,
on the culprit's lane; the straggler and culprits highlighted), the arrival lag per rank, and the event
table. Large jobs: the culprit lanes plus the ``MAX_LANES`` most involved ranks are drawn, the other
ranks share one summary lane; the event table keeps the last ``MAX_EVENTS`` rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.report import svg
from syncdoctor.report.aggregate import pick_top
from syncdoctor.report.html import findings_section, page, section, table, verdict_block
from syncdoctor.units import format_seconds
from syncdoctor.watch.events import SCHEMA, Event
from syncdoctor.watch.records import Signature, format_ranks

__all__ = ["KIND_COLORS", "MAX_EVENTS", "MAX_LANES", "Incident", "incidents", "render"]

MAX_LANES = 24
MAX_EVENTS = 500

KIND_COLORS = {
    "late-rank": "#E69F00",
    "collective-mismatch": "#CC79A7",
    "collective-count-drift": "#AA4499",
    "transport-hang": "#0072B2",
    "dead-rank": "#000000",
    "host-unreachable": "#555555",
    "chronic-straggler": "#D55E00",
    "rank-left-early": "#7F7F7F",
    "watch-degraded": "#56B4E9",
    "waiting": "#C8D6E5",
}
# how bad an incident is, for the verdict: never-recovering conditions first
_RANK = {"W105": 0, "W108": 1, "W102": 2, "W103": 3, "W106": 4, "W101": 5, "W104": 6, "W107": 7, "W109": 9}
_STATUS_ORDER = {"confirmed": 0, "warning": 1, "resolved": 2, "info": 3}


@dataclass
class Incident:
    """The events of one key, in file order."""

    key: str
    events: list[Event] = field(default_factory=list)

    @property
    def first(self) -> Event:
        return self.events[0]

    @property
    def worst(self) -> Event:
        """The most severe event of the incident (confirmed over warning), the latest among equals."""
        live = [e for e in self.events if e.status != "resolved"] or self.events
        return min(reversed(live), key=lambda e: _STATUS_ORDER.get(e.status, 4))

    @property
    def code(self) -> str:
        return self.first.code

    @property
    def kind(self) -> str:
        return self.first.kind

    @property
    def resolved(self) -> bool:
        return self.events[-1].status == "resolved"

    @property
    def ranks(self) -> tuple[int, ...]:
        return self.worst.ranks

    @property
    def start(self) -> float:
        """When the condition began: the first event's time minus how long the others had waited then."""
        first = self.first
        waited = first.waited_s if first.code != "W107" else None
        return _at(first) - (waited if waited is not None else 0.0)

    @property
    def end(self) -> float:
        return _at(self.events[-1])

    @property
    def waited(self) -> float:
        return max((e.waited_s for e in self.events if e.waited_s is not None), default=0.0)


def _at(event: Event) -> float:
    return event.at if math.isfinite(event.at) else 0.0


def incidents(events: Sequence[Event]) -> list[Incident]:
    """Events grouped by ``key`` (an event without a key is its own incident), in order of appearance."""
    out: dict[str, Incident] = {}
    for index, event in enumerate(events):
        key = event.key or f"#{index}"
        out.setdefault(key, Incident(key)).events.append(event)
    return list(out.values())


def _severity_order(incident: Incident) -> tuple[int, int, int, float]:
    worst = incident.worst
    return (0 if not incident.resolved else 1, _STATUS_ORDER.get(worst.status, 4),
            _RANK.get(incident.code, 8), -incident.waited)


def _ranks_text(ranks: Sequence[int]) -> str:
    return format_ranks(ranks)


def _op(signature: Signature | None) -> str:
    """``all_reduce float[1000]`` (the dtypes lower case, then sorted; an empty shape stays empty)."""
    if signature is None:
        return ""
    shape_text = ",".join("x".join(str(d) for d in s) for s in signature.input_sizes)
    dtype = "/".join(sorted({d.lower() for d in signature.dtypes}))
    return f"{signature.op} {dtype}[{shape_text}]" if shape_text or dtype else signature.op


def _verdict(found: Sequence[Incident], events: Sequence[Event]) -> str:
    if not found:
        return verdict_block("ok", "no event: every rank kept up", [f"{len(events)} events in the file"])
    top = sorted(found, key=_severity_order)[0]
    worst = top.worst
    status = "ok" if top.resolved and all(i.resolved for i in found) else (
        "error" if worst.severity.label == "error" or worst.status == "confirmed" else "warning")
    state = "resolved" if top.resolved else worst.status
    headline = f"{top.code} {top.kind} ({state}): {worst.title}"
    details = []
    if worst.hosts:
        details.append("host(s): " + ", ".join(worst.hosts[:8]))
    where = worst.detail.get("where")
    if where:
        details.append(f"the late rank is in {where}")
    if top.waited:
        details.append(f"the others waited {format_seconds(top.waited)}")
    open_count = sum(1 for i in found if not i.resolved)
    details.append(f"{len(found)} incident(s), {open_count} still open at the end of the file; {len(events)} events")
    return verdict_block(status, headline, details)


def _findings(found: Sequence[Incident]) -> str:
    """One finding per code and culprit ranks: a rank late at six collectives is one finding, not six."""
    from syncdoctor.kb import get_rule

    groups: dict[tuple[str, tuple[int, ...]], list[Incident]] = {}
    for incident in sorted(found, key=_severity_order):
        groups.setdefault((incident.code, tuple(sorted(incident.ranks))), []).append(incident)
    items = []
    for (code, _ranks), members in groups.items():
        top = members[0]  # the worst, by _severity_order
        worst = top.worst
        rule = get_rule(code)
        evidence: dict[str, Any] = {}
        open_count = sum(1 for i in members if not i.resolved)
        evidence["incidents"] = (f"{len(members)} ({open_count} still open)" if len(members) > 1
                                 else " -> ".join(e.status for e in top.events))
        if worst.ranks:
            evidence["ranks"] = _ranks_text(worst.ranks)
        if worst.hosts:
            evidence["hosts"] = list(worst.hosts)
        if worst.group not in (None, ""):
            evidence["group"] = worst.group
        seqs = [i.worst.seq for i in members if i.worst.seq is not None]
        if seqs:
            evidence["collectives"] = ", ".join(f"#{q}" for q in seqs[:12]) + (" ..." if len(seqs) > 12 else "")
        op = _op(worst.signature)
        if op:
            evidence["op"] = op
        longest = max(i.waited for i in members)
        if longest and code != "W107":
            evidence["longest wait"] = format_seconds(longest)
        for name in ("where", "lag_p50", "lag_p90", "share", "others_waited_s", "signatures"):
            if name in worst.detail:
                evidence[name] = worst.detail[name]
        if worst.waiting_ranks:
            evidence["waiting ranks"] = _ranks_text(worst.waiting_ranks)
        severity = "info" if open_count == 0 else worst.severity.label
        title = worst.title
        if len(members) > 1:
            title = f"{len(members)} times: {title}"
        items.append({"code": code, "name": top.kind, "severity": severity, "title": title, "evidence": evidence,
                      "why": rule.why if rule else "", "fix": rule.fix if rule else ""})
    return findings_section(items, title="Incidents")


def _lanes(found: Sequence[Incident], world: int) -> tuple[list[int], set[int], list[int]]:
    """Ranks to draw (culprits first, then the most involved), the culprit set, and all ranks seen."""
    culprits: dict[int, float] = {}
    involvement: dict[int, float] = {}
    for incident in found:
        for rank in incident.ranks:
            culprits[rank] = culprits.get(rank, 0.0) + incident.waited + 1.0
        for rank in incident.worst.waiting_ranks:
            involvement[rank] = involvement.get(rank, 0.0) + 1.0
    ordered_culprits = sorted(culprits, key=lambda r: (-culprits[r], r))
    seen = sorted(set(culprits) | set(involvement))
    chosen = pick_top(sorted(involvement.items()), ordered_culprits[:MAX_LANES], max(0, MAX_LANES - len(culprits)))
    return chosen, set(ordered_culprits), seen if seen else list(range(world))


def _timeline(found: Sequence[Incident], world: int) -> str:
    if not found:
        return ""
    chosen, culprits, seen = _lanes(found, world)
    t0 = min(i.start for i in found)
    t_end = max(i.end for i in found)
    lane_of = {rank: index for index, rank in enumerate(chosen)}
    lanes = [svg.Lane(f"rank {r}", highlight=r in culprits) for r in chosen]
    others = max(world, len(seen)) - len(chosen)
    summary_lane = None
    if others > 0:
        summary_lane = len(lanes)
        lanes.append(svg.Lane(f"{others} other ranks", title=f"{others} ranks without an incident of their own"))
    spans: list[svg.Span] = []
    culprit_spans: list[svg.Span] = []
    for incident in found:
        end = incident.end if incident.resolved else max(t_end, incident.end)
        still = "" if incident.resolved else " (still open)"
        label = f"{incident.code} {incident.kind}{still}: {incident.worst.title}"
        for rank in incident.ranks:
            if rank in lane_of:
                culprit_spans.append(svg.Span(lane_of[rank], incident.start - t0, end - t0, incident.kind, label,
                                              highlight=rank in culprits))
        waiting = list(incident.worst.waiting_ranks)
        drawn = [r for r in waiting if r in lane_of]
        for rank in drawn:
            spans.append(svg.Span(lane_of[rank], incident.start - t0, end - t0, "waiting",
                                  f"rank {rank} waiting in #{incident.worst.seq} for rank(s) "
                                  f"{_ranks_text(incident.ranks)}"))
        if summary_lane is not None and len(drawn) < len(waiting):
            spans.append(svg.Span(summary_lane, incident.start - t0, end - t0, "waiting",
                                  f"{len(waiting) - len(drawn)} more ranks waiting for {_ranks_text(incident.ranks)}"))
    kinds = {i.kind for i in found}
    colors = {k: c for k, c in KIND_COLORS.items() if k in kinds or k == "waiting"}
    chart = svg.timeline(lanes, spans + culprit_spans, chart_id="rank-timeline", title="Per-rank timeline: who was late, who waited",
                         x_label="seconds since the first incident began", colors=colors,
                         format_x=lambda v: f"{v:g} s")
    note = ("Each bar runs from when the other ranks started waiting to when the incident resolved (or the end "
            "of the file, when still open); culprit ranks in red.")
    if summary_lane is not None:
        note += f" {len(chosen)} of {max(world, len(seen))} ranks drawn: the culprits and the most involved."
    return section("Timeline", "timeline", chart, note=note)


def _lags(found: Sequence[Incident]) -> str:
    """Arrival lag per rank: the chronic straggler's percentiles and each late rank's longest wait."""
    lags: dict[int, tuple[float, str]] = {}
    straggler_ranks: set[int] = set()
    for incident in found:
        worst = incident.worst
        detail = worst.detail
        for rank in incident.ranks:
            if incident.code == "W107" and "lag_max" in detail:
                value = float(detail.get("lag_max") or 0.0)
                tip = (f"rank {rank}: arrived last at {detail.get('last')} of {detail.get('notable')} collectives; "
                       f"lag p50 {detail.get('lag_p50')} s, p90 {detail.get('lag_p90')} s, max {detail.get('lag_max')} s")
                straggler_ranks.add(rank)
            elif incident.code == "W101":
                value = incident.waited
                tip = f"rank {rank}: the others waited up to {format_seconds(value)} for it (#{worst.seq})"
            else:
                continue
            if value >= lags.get(rank, (-1.0, ""))[0]:
                lags[rank] = (value, tip)
    if not lags:
        return ""
    ordered = sorted(lags, key=lambda r: (-lags[r][0], r))[:MAX_LANES]
    bars = [svg.Bar(f"rank {r}", lags[r][0], highlight=r in straggler_ranks or r == ordered[0], title=lags[r][1])
            for r in ordered]
    chart = svg.bar_chart(bars, chart_id="lag-bars", title="Arrival lag per rank (longest)",
                          x_label="seconds behind the other ranks", format_value=format_seconds)
    return section("Arrival lag", "lag", chart,
                   note="For a chronic straggler (W107) the largest lag in the window; for a late rank (W101) "
                        "the longest the others waited for it.")


def _events_table(events: Sequence[Event], t0: float) -> str:
    shown = list(events)[-MAX_EVENTS:]
    rows: list[list[Any]] = []
    hot = []
    for index, event in enumerate(shown):
        if event.status == "confirmed":
            hot.append(index)
        rows.append([
            f"{_at(event) - t0:.1f}", event.code, event.kind, event.status, _ranks_text(event.ranks),
            ", ".join(event.hosts[:4]), "" if event.group is None else event.group,
            "" if event.seq is None else event.seq, _op(event.signature),
            "" if event.waited_s is None else format_seconds(event.waited_s), event.title,
        ])
    note = f"The last {len(shown)} of {len(events)} events." if len(events) > len(shown) else ""
    return section("Events", "events", table(
        ["t (s)", "code", "kind", "status", "ranks", "hosts", "group", "seq", "op", "waited", "title"], rows,
        table_id="events-table", numeric=(0, 7, 9), highlight=hot), note=note)


def render(events: Sequence[Event], *, source: str = "") -> str:
    """The watch page for the events of one job, in file order."""
    found = incidents(events)
    world = 0
    for event in events:
        for rank in (*event.ranks, *event.waiting_ranks, *event.group_ranks[-1:]):
            world = max(world, rank + 1)
    t0 = min((i.start for i in found), default=0.0)
    subtitle = f"{SCHEMA}: {len(events)} events" + (f" from {source}" if source else "") + (
        f", at least {world} ranks" if world else "")
    body = [_verdict(found, events), _findings(found), _timeline(found, world), _lags(found),
            _events_table(events, t0) if events else ""]
    return page("syncdoctor watch report", "watch", [b for b in body if b], subtitle=subtitle)
