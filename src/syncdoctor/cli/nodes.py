"""``syncdoctor nodes``: the node history, nodes by incidents (what analyze, probe and the watch monitor named
as suspects).

``--since 7d`` limits the window; ``--json`` prints the rows; ``--min-incidents N`` keeps the repeat
offenders, and ``--exclude-out FILE --exclude-format ...`` writes them as an exclusion list. Exit codes: 0,
2 for usage errors, 3 when the history cannot be read.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncdoctor.cli import EXIT_OK
from syncdoctor.cli.exclusion import add_exclusion_options, checked_exclusion, write_exclusion
from syncdoctor.errors import EnvironmentNotSupported, UsageError
from syncdoctor.exclude import Suspect
from syncdoctor.history import History, HistoryError, parse_since, resolve_path

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "nodes", help="the node history: nodes by incidents across runs, and the repeat offenders to exclude",
        description="List the nodes that analyze, probe and the watch monitor named as suspects (node-level causes only), most "
        "incidents first, from the node history database.")
    parser.add_argument("--since", default=None, metavar="AGE", help="only incidents this recent: 7d, 12h, 30m")
    parser.add_argument("--min-incidents", type=int, default=1, metavar="N",
                        help="only nodes with at least N incidents (the repeat offenders)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--history", default=None, metavar="PATH",
                        help="the database (default: SYNCDOCTOR_HISTORY, else $XDG_DATA_HOME/syncdoctor/history.sqlite3)")
    add_exclusion_options(parser)
    parser.set_defaults(func=run, no_history=False)


def run(args: argparse.Namespace, console: Console) -> int:
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError:
        raise UsageError(f"--since {args.since!r}: give an age such as 7d, 12h, 30m or a number of seconds") from None
    if args.min_incidents < 1:
        raise UsageError("--min-incidents must be 1 or more")
    exclude_out, hostfile = checked_exclusion(args)
    path = resolve_path(args.history, False)
    if path is None:
        raise UsageError("the node history is switched off (SYNCDOCTOR_HISTORY=off); give --history PATH")
    if not path.exists():
        rows = []
    else:
        try:
            rows = History(path).nodes(since)
        except HistoryError as exc:
            raise EnvironmentNotSupported(str(exc)) from None
    rows = [r for r in rows if r.incidents >= args.min_incidents]
    if args.json:
        console.print_json(json.dumps({"history": str(path), "since_s": since, "nodes": [r.to_json() for r in rows]}))
    elif not rows:
        console.print(Text(f"no node with {args.min_incidents}+ incident(s) in {path}"), soft_wrap=True)
    else:
        table = Table(title=f"node history ({path})", title_justify="left")
        for column in ("node", "incidents", "runs", "codes", "last seen"):
            table.add_column(column)
        for r in rows:
            codes = ", ".join(f"{code} x{count}" for code, count in r.codes.items())
            table.add_row(r.node, str(r.incidents), str(r.runs), codes,
                          time.strftime("%Y-%m-%d %H:%M", time.localtime(r.last_seen)))
        console.print(table)
    if exclude_out is not None:
        suspects = [Suspect(r.node, max(r.codes, key=lambda c: r.codes[c]), f"{r.incidents} incident(s) in {r.runs} run(s)",
                            1.0) for r in rows]
        console.print(Text(write_exclusion(exclude_out, suspects, args.exclude_format, hostfile)), soft_wrap=True)
    return EXIT_OK
