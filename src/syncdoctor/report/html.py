"""One self-contained HTML file per report: probe, watch events or analyze, picked by the data's schema.

Pure apart from :func:`write_html` (an atomic file write). The page has no script, no external link,
font or image: styles are inline in ``<head>``, charts are inline SVG (:mod:`syncdoctor.report.svg`), so
it opens on an air-gapped machine and renders the same with scripts disabled. Layout: the verdict first,
then the findings with their fixes, then the charts and tables. Every text from the input is escaped and
free text passes through :func:`syncdoctor.redact.redact_text`.

Entry points: :func:`render_html` (any supported data), :func:`render_probe_html`,
:func:`render_watch_html`, :func:`render_analyze_html`, :func:`load_report_input` (read a file and tell
what it is).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from syncdoctor._version import __version__
from syncdoctor.analyze.verdict import SCHEMA as ANALYZE_SCHEMA
from syncdoctor.analyze.verdict import Verdict
from syncdoctor.errors import InputError
from syncdoctor.probe.report import SCHEMA as PROBE_SCHEMA
from syncdoctor.probe.report import ProbeReport
from syncdoctor.redact import redact_text
from syncdoctor.watch.events import SCHEMA as WATCH_KIND
from syncdoctor.watch.events import Event

__all__ = [
    "ANALYZE_SCHEMA",
    "PROBE_SCHEMA",
    "WATCH_KIND",
    "ReportInput",
    "findings_section",
    "load_report_input",
    "page",
    "render_analyze_html",
    "render_html",
    "render_probe_html",
    "render_watch_html",
    "section",
    "table",
    "text",
    "verdict_block",
    "write_html",
]


_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:0;
color:#212121;background:#fff;line-height:1.45;font-size:14px}
header{background:#263238;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}header p{margin:2px 0 0;color:#B0BEC5;font-size:12px}
main{padding:8px 24px 32px;max-width:1200px}
h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #E0E0E0;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 6px}
.verdict{border-radius:6px;padding:12px 16px;margin:16px 0;border-left:6px solid}
.verdict.ok{background:#E8F5E9;border-color:#2E7D32}.verdict.warning{background:#FFF8E1;border-color:#F9A825}
.verdict.error{background:#FDECEA;border-color:#C62828}
.verdict .headline{font-size:17px;font-weight:600;margin:0}
.verdict ul{margin:6px 0 0;padding-left:20px}
.finding{border:1px solid #E0E0E0;border-left:5px solid #9E9E9E;border-radius:4px;padding:8px 12px;margin:8px 0}
.finding.error{border-left-color:#C62828}.finding.warning{border-left-color:#F9A825}
.finding.info{border-left-color:#0288D1}
.finding .title{font-weight:600}.code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;
background:#ECEFF1;border-radius:3px;padding:1px 5px;margin-right:6px}
.fix{background:#F1F8E9;border-radius:3px;padding:6px 8px;margin:6px 0 0;white-space:pre-wrap;
font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.why{color:#424242;margin:4px 0 0}
dl.evidence{display:grid;grid-template-columns:max-content 1fr;gap:1px 10px;margin:6px 0 0;font-size:12px;
color:#555}dl.evidence dt{font-weight:600}dl.evidence dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:6px 0;font-size:12px;max-width:100%}
th,td{border-bottom:1px solid #EEE;padding:3px 8px;text-align:left;vertical-align:top}
td.long{overflow-wrap:anywhere;min-width:12em}
th{background:#FAFAFA}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.highlight td{background:#FDECEA;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:14px}
svg.chart{font-family:inherit;max-width:100%;height:auto;background:#fff;border:1px solid #EEE}
.note{color:#616161;font-size:12px;margin:4px 0}
pre.lines{background:#FAFAFA;border:1px solid #EEE;padding:6px 8px;font-size:12px;margin:4px 0;
white-space:pre-wrap;overflow-wrap:anywhere}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:11px;font-weight:600;color:#fff;
background:#607D8B}.badge.error{background:#C62828}.badge.warning{background:#F57F17}
.badge.info{background:#0277BD}.badge.ok{background:#2E7D32}
footer{color:#9E9E9E;font-size:11px;padding:12px 24px}
@media print{header{background:#fff;color:#000}header p{color:#555}}
"""


def text(value: Any) -> str:
    """Free text from a report, redacted and escaped for HTML."""
    return escape(redact_text(str(value)), quote=True)


def _attr(value: Any) -> str:
    return escape(str(value), quote=True)


def page(title: str, kind: str, body: Iterable[str], *, subtitle: str = "") -> str:
    """The whole document: head with inline styles, a header, the body parts, a footer."""
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="syncdoctor {_attr(__version__)}">',
        f"<title>{text(title)}</title><style>{_CSS}</style></head>",
        f'<body data-report="{_attr(kind)}"><header><h1>{text(title)}</h1>',
        f"<p>{text(subtitle)}</p>" if subtitle else "",
        '</header><main>',
        *body,
        f"</main><footer>syncdoctor {text(__version__)}, rendered {text(created)}. "
        "Self-contained: no scripts, no network.</footer></body></html>",
    ]
    return "".join(parts) + "\n"


def verdict_block(status: str, headline: str, details: Sequence[str] = ()) -> str:
    """The answer on top: ``status`` is ok, warning or error (the colour)."""
    status = status if status in ("ok", "warning", "error") else "warning"
    items = "".join(f"<li>{text(d)}</li>" for d in details if d)
    return (f'<section id="verdict" class="verdict {status}" data-status="{status}">'
            f'<p class="headline">{text(headline)}</p>{f"<ul>{items}</ul>" if items else ""}</section>')


def section(title: str, section_id: str, *content: str, note: str = "") -> str:
    note_html = f'<p class="note">{text(note)}</p>' if note else ""
    return f'<section id="{_attr(section_id)}"><h2>{text(title)}</h2>{note_html}{"".join(content)}</section>'


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    table_id: str,
    numeric: Iterable[int] = (),
    highlight: Iterable[int] = (),
) -> str:
    """A plain table; ``numeric`` column indexes are right-aligned, ``highlight`` row indexes are red."""
    num = set(numeric)
    hot = set(highlight)
    head = "".join(f'<th{_NUM if i in num else ""}>{text(h)}</th>' for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        cells = "".join(
            f'<td{_NUM if i in num else (_LONG if len(str(c)) > 40 else "")}>{text(c)}</td>' for i, c in enumerate(row))
        body.append(f'<tr{_HOT if r in hot else ""}>{cells}</tr>')
    return (f'<table id="{_attr(table_id)}" data-rows="{len(rows)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _evidence(evidence: Mapping[str, Any], limit: int = 8) -> str:
    items = []
    for index, (key, value) in enumerate(evidence.items()):
        if index >= limit:
            items.append(f"<dt>…</dt><dd>{len(evidence) - limit} more</dd>")
            break
        if isinstance(value, (list, tuple)):
            shown = ", ".join(str(v) for v in value[:12]) + (" …" if len(value) > 12 else "")
        elif isinstance(value, Mapping):
            shown = json.dumps(value, default=str)[:400]
        else:
            shown = str(value)
        items.append(f"<dt>{text(key)}</dt><dd>{text(shown)}</dd>")
    return f'<dl class="evidence">{"".join(items)}</dl>' if items else ""


_NUM = ' class="num"'
_HOT = ' class="highlight"'
_LONG = ' class="long"'
_ORDER = {"error": 0, "warning": 1, "info": 2}


def findings_section(findings: Sequence[Mapping[str, Any]], *, title: str = "Findings", limit: int = 200) -> str:
    """Findings (``Finding.to_json`` form), worst first, each with evidence, why and the fix."""
    ordered = sorted(findings, key=lambda f: (_ORDER.get(str(f.get("severity")), 3), str(f.get("code", ""))))
    counts = {sev: sum(1 for f in ordered if f.get("severity") == sev) for sev in _ORDER}
    summary = f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
    if not ordered:
        return section(title, "findings", '<p class="note">No findings.</p>')
    parts = []
    for finding in ordered[:limit]:
        severity = str(finding.get("severity", "info"))
        severity = severity if severity in _ORDER else "info"
        name = finding.get("name") or ""
        why = finding.get("why") or ""
        fix = finding.get("fix") or ""
        parts.append(
            f'<div class="finding {severity}" data-code="{_attr(finding.get("code", ""))}" '
            f'data-severity="{severity}"><div class="title"><span class="code">{text(finding.get("code", ""))}</span>'
            f'<span class="badge {severity}">{severity}</span> {text(finding.get("title", ""))}</div>'
            + (f'<div class="note">{text(name)}</div>' if name else "")
            + _evidence(finding.get("evidence") or {})
            + (f'<p class="why">{text(why)}</p>' if why and severity != "info" else "")
            + (f'<div class="fix">fix: {text(fix)}</div>' if fix else "")
            + "</div>"
        )
    if len(ordered) > limit:
        parts.append(f'<p class="note">{len(ordered) - limit} more findings are in the JSON report.</p>')
    return section(title, "findings", *parts, note=summary)


# --- dispatch --------------------------------------------------------------------------------------


class ReportInput:
    """What a file holds: ``kind`` (probe, analyze or watch) and its data: the probe
    :class:`~syncdoctor.probe.report.ProbeReport`, the analyze :class:`~syncdoctor.analyze.verdict.Verdict`,
    or the list of watch :class:`~syncdoctor.watch.events.Event`."""

    def __init__(self, kind: str, data: Any, source: str = "") -> None:
        self.kind = kind
        self.data = data
        self.source = source


def _is_event(item: Any) -> bool:
    return isinstance(item, dict) and str(item.get("code", "")).startswith("W") and "status" in item


def load_report_input(path: str | Path) -> ReportInput:
    """Read a probe or analyze JSON document, or a watch event file (JSON lines, or a JSON list).

    Raises InputError with a clear message for unreadable, empty or unknown input.
    """
    source = str(path)
    try:
        raw = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
    stripped = raw.strip()
    if not stripped:
        raise InputError(f"{source} is empty: nothing to report")
    whole: Any = None
    try:
        whole = json.loads(stripped)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        schema = str(whole.get("schema", ""))
        if schema.startswith("syncdoctor.probe/"):
            return ReportInput("probe", ProbeReport.from_json(whole, source), source)
        if schema.startswith("syncdoctor.analyze/"):
            return ReportInput("analyze", _verdict(whole, source), source)
        if _is_event(whole):
            return ReportInput("watch", _events([whole], source), source)
        shown = schema or "none"
        raise InputError(f"{source}: unknown report schema {shown!r} (expected syncdoctor.probe/1, "
                         "syncdoctor.analyze/1 or a watch event file)")
    if isinstance(whole, list):
        events = [item for item in whole if _is_event(item)]
        if events:
            return ReportInput("watch", _events(events, source), source)
        raise InputError(f"{source}: a JSON list without watch events")
    events, bad = [], 0
    for line in stripped.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if _is_event(item):
            events.append(item)
        else:
            bad += 1
    if not events:
        raise InputError(f"{source}: neither a syncdoctor JSON report nor watch events (JSON lines)")
    return ReportInput("watch", _events(events, source), source)


def _verdict(data: Any, source: str) -> Verdict:
    try:
        return Verdict.from_json(data)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None


def _events(items: Sequence[Any], source: str) -> list[Event]:
    try:
        return [Event.from_json(item) for item in items]
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None


def render_html(report: ReportInput) -> str:
    """The HTML page for any supported input."""
    if report.kind == "probe":
        return render_probe_html(report.data)
    if report.kind == "analyze":
        return render_analyze_html(report.data)
    if report.kind == "watch":
        return render_watch_html(report.data, source=report.source)
    raise InputError(f"no HTML renderer for {report.kind!r}")


def render_probe_html(report: ProbeReport | Mapping[str, Any]) -> str:
    """The probe page; a JSON document is read with :meth:`ProbeReport.from_json` first."""
    from syncdoctor.report.html_probe import render

    return render(report if isinstance(report, ProbeReport) else ProbeReport.from_json(report))


def render_watch_html(events: Sequence[Event | Mapping[str, Any]], *, source: str = "") -> str:
    """The watch page; ``events`` are typed, or their JSON objects (read with :meth:`Event.from_json`)."""
    from syncdoctor.report.html_watch import render

    return render([e if isinstance(e, Event) else Event.from_json(e) for e in events], source=source)


def render_analyze_html(data: Verdict | Mapping[str, Any]) -> str:
    """The analyze page of a verdict, or of its JSON document (read with :meth:`Verdict.from_json`)."""
    from syncdoctor.report.html_analyze import render

    return render(data if isinstance(data, Verdict) else Verdict.from_json(data))


def write_html(path: str | Path, document: str) -> Path:
    """Write the page atomically (a temporary file in the same directory, then rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(handle, 0o644)  # a page to share, not mkstemp's private 0600
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(redact_text(document, marker="&lt;redacted&gt;"))  # the last step before the page leaves
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target
