"""``syncdoctor report FILE [-o OUT.html]``: one self-contained HTML page from a watch event file
(JSON lines), a probe JSON report (``syncdoctor.probe/1``) or an analyze JSON report
(``syncdoctor.analyze/1``); the renderer is picked by the content, not the file name.

Exit codes: 0 written, 2 usage, 3 unreadable or unknown input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from syncdoctor.outputs import check_output

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="render a watch event file, probe or analyze JSON as one self-contained HTML page",
        description="Render a report as one HTML file that opens anywhere (no network, no scripts): the verdict "
        "first, the findings with their fixes, then the charts. Input: watch events (JSON lines, as written by "
        "SYNCDOCTOR_WATCH_EVENTS_FILE), or the JSON of `syncdoctor probe --json` or `syncdoctor analyze --json`.",
    )
    parser.add_argument("input", metavar="FILE", help="watch events (.jsonl), probe or analyze JSON")
    parser.add_argument("-o", "--output", default=None, metavar="OUT.html",
                        help="where to write the page (default: FILE with the suffix .html)")
    parser.set_defaults(func=run)


def default_output(source: str) -> Path:
    path = Path(source)
    return path.with_suffix(".html") if path.suffix not in ("", ".html") else path.with_name(path.name + ".html")


def run(args: argparse.Namespace, console: Console) -> int:
    from syncdoctor.report.html import load_report_input, render_html, write_html

    target = check_output(args.output or default_output(args.input), "-o" if args.output else "the default output")
    assert target is not None
    report = load_report_input(args.input)
    written = write_html(target, render_html(report))
    size = written.stat().st_size
    console.print(Text(f"{report.kind} report written to {written} ({size / 1024:.0f} KiB)"))
    return 0
