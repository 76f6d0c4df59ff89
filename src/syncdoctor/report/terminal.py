"""Terminal rendering of findings, shared by check, probe, analyze and guard.

Build the report, then render it with an injected :class:`rich.console.Console`: tests render at a
fixed width without colour and compare text.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.text import Text

from syncdoctor.kb import Finding, Severity, sort_findings

__all__ = ["render_findings", "severity_style", "summary_line"]

_STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_HEADINGS = {Severity.ERROR: "Errors", Severity.WARNING: "Warnings", Severity.INFO: "Information"}


def severity_style(severity: Severity) -> str:
    return _STYLES[severity]


def _format_evidence(finding: Finding, limit: int = 6) -> list[str]:
    lines = []
    for index, (key, value) in enumerate(finding.evidence.items()):
        if index >= limit:
            lines.append(f"… {len(finding.evidence) - limit} more")
            break
        if isinstance(value, (list, tuple)):
            shown = ", ".join(str(v) for v in value[:8]) + (" …" if len(value) > 8 else "")
        else:
            shown = str(value)
        lines.append(f"{key}: {shown}")
    return lines


def summary_line(findings: Iterable[Finding]) -> str:
    items = list(findings)
    counts = {sev: sum(1 for f in items if f.severity == sev) for sev in Severity}
    return (
        f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARNING]} warning(s), "
        f"{counts[Severity.INFO]} info"
    )


def render_findings(
    findings: Iterable[Finding],
    console: Console,
    *,
    show_info: bool = True,
    show_why: bool = True,
) -> None:
    """Print findings grouped by severity, worst first, each with its evidence and fix."""
    ordered = sort_findings(findings)
    for severity in (Severity.ERROR, Severity.WARNING, Severity.INFO):
        group = [f for f in ordered if f.severity == severity]
        if not group or (severity == Severity.INFO and not show_info):
            continue
        console.print(Text(f"{_HEADINGS[severity]} ({len(group)})", style=f"{_STYLES[severity]} underline"))
        for finding in group:
            head = Text()
            head.append(f"  {finding.code} ", style=_STYLES[severity])
            head.append(finding.title)
            console.print(head)
            for line in _format_evidence(finding):
                console.print(Text(f"      {line}", style="dim"))
            if show_why and finding.why and severity != Severity.INFO:
                console.print(Text(f"      why: {finding.why}"))
            if finding.fix and severity != Severity.INFO:
                # a fix is a command to copy: not wrapped at the terminal's width
                console.print(Text(f"      fix: {finding.fix}", style="green"), soft_wrap=True)
        console.print()
    console.print(Text(summary_line(ordered), style="bold"))
