"""``syncdoctor dashboard``: the Grafana dashboard of the watch metrics, as JSON on stdout or in a file.

``syncdoctor dashboard > syncdoctor.json`` then import it in Grafana (Dashboards > New > Import), or
``-o FILE`` into a provisioning directory. Exit codes: 0, 2 when the output cannot be written.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.text import Text

from syncdoctor.cli import EXIT_OK
from syncdoctor.outputs import check_output
from syncdoctor.report.dashboard import dashboard

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard", help="print the Grafana dashboard of the watch metrics (SYNCDOCTOR_METRICS_PORT)",
        description="Print a Grafana dashboard (JSON) for the Prometheus metrics a watched job serves: per-rank "
        "waits, late, dead and hung ranks, stragglers, incidents per node. Import it in Grafana.")
    parser.add_argument("-o", "--output", default=None, metavar="FILE", help="write it there, not on stdout")
    parser.add_argument("--title", default="syncdoctor watch", help="the dashboard's title")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    out = check_output(args.output, "--output")
    text = json.dumps(dashboard(args.title), indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return EXIT_OK
    out.write_text(text)
    console.print(Text(f"Grafana dashboard written to {out} (import it: Dashboards > New > Import)"), soft_wrap=True)
    return EXIT_OK
