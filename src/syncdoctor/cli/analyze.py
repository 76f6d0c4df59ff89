"""``syncdoctor analyze PATHS... [--json] [--max-evidence N]``: explain a failed multi-node run.

PATHS are log files, directories (read recursively), globs or ``-`` for stdin, plain or gzip, plus Flight
Recorder dumps (JSON or pickle), syncdoctor watch event files and NCCL RAS reports. The answer comes
first: the culprit rank and host, what happened and what to change; then the other hypotheses, the ranks,
the timeline of failures and the evidence lines (``file:line``). Exit code 0 when a root cause was found,
1 when not, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from syncdoctor.analyze import Analysis, Hypothesis, analyze_paths, to_verdict
from syncdoctor.analyze.rules.common import fmt_ranks
from syncdoctor.cli import EXIT_FINDINGS, EXIT_OK
from syncdoctor.cli.exclusion import (
    add_exclusion_options,
    add_history_options,
    checked_exclusion,
    record_history,
    write_exclusion,
)
from syncdoctor.errors import UsageError
from syncdoctor.exclude import root_suspects
from syncdoctor.outputs import check_output

__all__ = ["register", "render", "run"]

_TIMELINE_ROWS = 40


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="explain a failed run from all its logs and dumps: the culprit rank and host, and the fix",
        description="Read the logs of every rank (files, directories, globs, - for stdin; plain or gzip), "
        "Flight Recorder dumps, watch event files and NCCL RAS reports, and name the rank or host that caused "
        "the failure, what happened and what to change. Exit code 0 when a root cause was found, 1 when not.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files, directories, globs, or - for stdin")
    parser.add_argument("--json", action="store_true", help="print the syncdoctor.analyze/1 JSON document")
    parser.add_argument("--max-evidence", type=int, default=None, metavar="N",
                        help="evidence lines shown per hypothesis (default 8; all in --json)")
    parser.add_argument("--html", default=None, metavar="FILE",
                        help="also write the report as one self-contained HTML page (see docs/report.md)")
    add_exclusion_options(parser)
    add_history_options(parser)
    parser.set_defaults(func=run)


def _where(hypothesis: Hypothesis) -> str:
    parts = []
    if hypothesis.culprit_ranks:
        ranks = hypothesis.culprit_ranks
        parts.append(f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}")
    elif hypothesis.culprit_processes:  # no rank in the inputs: the processes as the lines name them
        processes = hypothesis.culprit_processes
        return ", ".join(processes[:4]) + (" …" if len(processes) > 4 else "")
    if hypothesis.culprit_hosts:
        hosts = hypothesis.culprit_hosts
        # ("rank 3 on node1"; with no rank, "host node1": a host alone, not "on node1")
        said = "on" if parts else f"host{'s' if len(hosts) > 1 else ''}"
        parts.append(f"{said} {', '.join(hosts[:8])}" + (" …" if len(hosts) > 8 else ""))
    return " ".join(parts) or "not named by the logs"


def _evidence(console: Console, hypothesis: Hypothesis, limit: int) -> None:
    shown = hypothesis.evidence[:limit]
    for item in shown:
        line = Text("    ")
        line.append(str(item.ref), style="cyan")
        if item.note:
            line.append(f"  ({item.note})", style="dim")
        console.print(line, soft_wrap=True)
        console.print(Text(f"      {item.text}"), soft_wrap=True)
    hidden = len(hypothesis.evidence) - len(shown)
    if hidden > 0:
        console.print(Text(f"    … {hidden} more (--max-evidence {len(hypothesis.evidence)} or --json)", style="dim"))


def render(analysis: Analysis, console: Console, max_evidence: int = 8) -> None:
    """The human report: the answer first, then the other hypotheses, the ranks and the timeline."""
    diagnosis, timeline = analysis.diagnosis, analysis.timeline
    root = diagnosis.root_cause
    if root is not None:
        head = Text()
        head.append("Root cause: ", style="bold red")
        head.append(root.title, style="bold")
        console.print(head, soft_wrap=True)
        console.print(Text(f"  culprit:  {_where(root)}"), soft_wrap=True)
        console.print(Text(f"  category: {root.code} {root.category.value} (confidence {root.confidence:.2f}; "
                           f"syncdoctor explain {root.code})"), soft_wrap=True)
        console.print(Text(f"  what happened: {root.what}"), soft_wrap=True)
        console.print(Text(f"  what to change: {root.fix}", style="green"), soft_wrap=True)
        if root.affected_ranks:
            console.print(Text(f"  affected: ranks {fmt_ranks(root.affected_ranks)}"
                               + (f" on {', '.join(root.affected_hosts)}" if root.affected_hosts else "")))
        console.print(Text("  evidence:"))
        _evidence(console, root, max_evidence)
    else:
        console.print(Text("No root cause found.", style="bold yellow"))
        if not diagnosis.hypotheses:
            console.print(Text("  The inputs show no failure this tool recognises."))
        else:  # leads too weak for a verdict: say what the strongest one is before listing them
            lead = diagnosis.hypotheses[0]
            count = len(diagnosis.hypotheses)
            console.print(Text(f"  {count} lead{'s' if count > 1 else ''} below, none strong enough for a verdict; "
                               f"the strongest ({lead.confidence:.2f}): {lead.code} {lead.category.value}, "
                               f"culprit {_where(lead)}."), soft_wrap=True)
    others = [h for h in diagnosis.hypotheses if h is not root]
    if others:
        console.print()
        console.print(Text("Other hypotheses" if root is not None else "Hypotheses", style="bold underline"))
        for hypothesis in others:
            line = Text(f"  {hypothesis.confidence:.2f} {hypothesis.code} ")
            line.append(hypothesis.title)
            console.print(line, soft_wrap=True)
            console.print(Text(f"       culprit: {_where(hypothesis)}; fix: {hypothesis.fix}", style="dim"),
                          soft_wrap=True)
            if root is None:
                _evidence(console, hypothesis, max(1, max_evidence // 2))
    if timeline.ranks:
        console.print()
        console.print(Text(f"Ranks ({len(timeline.ranks)}, world size {timeline.world_size or '?'})",
                           style="bold underline"))
        culprits = set(root.culprit_ranks) if root is not None else set()
        shown = sorted(timeline.ranks, key=lambda r: (r not in culprits, timeline.ranks[r].outcome == "ok", r))
        for rank in shown[:64]:
            state = timeline.ranks[rank]
            seq = max(state.reached.values()) if state.reached else None
            first = state.first_failure
            line = Text(f"  {'*' if rank in culprits else ' '} rank {rank:<5} {state.host or '?':<16} "
                        f"{state.outcome:<11} {'#' + str(seq) if seq is not None else '':<8} ")
            if state.outcome in ("terminated", "killed") and state.exit_signal:
                line.append(f"stopped by {state.exit_signal} (exit code {state.exitcode}), no error of its own",
                            style="dim")
            elif first is not None:
                line.append(f"{first.ref}: {first.text[:110]}", style="dim")
            console.print(line, soft_wrap=True)
        if len(shown) > 64:
            console.print(Text(f"  … {len(shown) - 64} more ranks (--json lists all)", style="dim"))
    if diagnosis.unexplained:
        console.print()
        console.print(Text("Lines that look like errors and that no hypothesis explains (the first few)",
                           style="bold underline"))
        for item in diagnosis.unexplained:
            line = Text("  ")
            line.append(str(item.ref), style="cyan")
            line.append(f"  {item.text[:200]}")
            console.print(line, soft_wrap=True)
    rows = timeline.rows()
    if rows:
        console.print()
        console.print(Text("Timeline (per rank, in log order; times are each host's own clock)",
                           style="bold underline"))
        for row in rows[:_TIMELINE_ROWS]:
            seq_text = f" #{row.seq}" if row.seq is not None else ""
            op = f" {row.op}" if row.op else ""
            console.print(Text(f"  rank {row.rank} {row.host or '?'} {row.time or '-'}{op}{seq_text} {row.what}  "
                               f"[{row.ref}]"), soft_wrap=True)
        if len(rows) > _TIMELINE_ROWS:
            console.print(Text(f"  … {len(rows) - _TIMELINE_ROWS} more (--json)", style="dim"))
    collected = analysis.collected
    console.print()
    console.print(Text(f"Read {len(collected.sources)} input(s), {collected.bytes_read / 1e6:.1f} MB, "
                       f"{collected.lines_read} lines, {len(collected.dumps)} Flight Recorder dump(s).",
                       style="dim"))
    for note in diagnosis.notes[:20]:  # the reader's notes, then the rules' (a rule that failed)
        console.print(Text(f"note: {note}", style="yellow"), soft_wrap=True)


def _run_id(inputs: Sequence[str]) -> str:
    """One id per set of inputs, so analysing the same logs again records nothing twice."""
    if not inputs or any(p in ("-", "<stdin>") for p in inputs):
        return f"analyze:{time.time():.6f}"  # a paste: every one is its own run
    digest = hashlib.sha1("\n".join(sorted(os.path.abspath(p) for p in inputs)).encode()).hexdigest()[:16]
    return f"analyze:{digest}"


def run(args: argparse.Namespace, console: Console) -> int:
    if args.max_evidence is not None and args.max_evidence < 0:
        raise UsageError("--max-evidence must be 0 or more")
    html = check_output(args.html, "--html")  # before reading gigabytes of logs
    exclude_out, hostfile = checked_exclusion(args)
    analysis = analyze_paths(args.paths)
    if args.json:
        console.print_json(json.dumps(to_verdict(analysis, args.max_evidence).to_json(), default=str))
    else:
        render(analysis, console, 8 if args.max_evidence is None else args.max_evidence)
    if html is not None:
        from syncdoctor.report.html import render_analyze_html, write_html

        written = write_html(html, render_analyze_html(to_verdict(analysis, None)))
        # where the page went, after the answer; on stderr when stdout is the JSON document
        (Console(stderr=True, highlight=False) if args.json else console).print(
            Text(f"HTML report written to {written}"), soft_wrap=True)
    root = analysis.diagnosis.root_cause  # the suspects, from the analysis itself: no second verdict built
    aside = Console(stderr=True, highlight=False) if args.json else console
    if exclude_out is not None:
        said = write_exclusion(exclude_out, root_suspects(root, args.min_confidence), args.exclude_format, hostfile)
        aside.print(Text(said), soft_wrap=True)
    warning = record_history(args, _run_id(analysis.collected.sources), "analyze", root_suspects(root))
    if warning:
        Console(stderr=True, highlight=False).print(Text(warning, style="yellow"), soft_wrap=True)
    return EXIT_OK if analysis.diagnosis.root_cause is not None else EXIT_FINDINGS
