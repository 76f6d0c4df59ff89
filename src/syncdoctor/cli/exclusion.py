"""The exclusion options a command shares (``--exclude-out FILE --exclude-format F --min-confidence C
--hostfile IN``) and the writing of the list: the suspects of a verdict, rendered by :mod:`syncdoctor.exclude`.
Does I/O: reads the hostfile, writes the list (redacted, as all text that leaves the program)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from syncdoctor.cli import finite
from syncdoctor.errors import InputError, UsageError
from syncdoctor.exclude import FORMATS, Suspect, render
from syncdoctor.outputs import check_output
from syncdoctor.redact import redact_text

__all__ = ["add_exclusion_options", "add_history_options", "checked_exclusion", "record_history", "write_exclusion"]


def add_exclusion_options(parser: Any) -> None:
    parser.add_argument("--exclude-out", default=None, metavar="FILE",
                        help="write the nodes to keep out of the next run (node-level causes only; see docs/act.md)")
    parser.add_argument("--exclude-format", default="plain", choices=FORMATS,
                        help="plain (a node per line), slurm (a hostlist for --exclude=), hostfile (--hostfile "
                             "without the suspects) or k8s (kubectl cordon/taint commands); default plain")
    parser.add_argument("--min-confidence", type=finite, default=0.5, metavar="C",
                        help="only causes at least this confident (0-1, default 0.5)")
    parser.add_argument("--hostfile", default=None, metavar="FILE",
                        help="the DeepSpeed or MPI hostfile to filter (--exclude-format hostfile)")


def add_history_options(parser: Any) -> None:
    parser.add_argument("--history", default=None, metavar="PATH",
                        help="the node history database (default: SYNCDOCTOR_HISTORY, else "
                             "$XDG_DATA_HOME/syncdoctor/history.sqlite3; see docs/act.md)")
    parser.add_argument("--no-history", action="store_true", help="record nothing in the node history")


def record_history(args: argparse.Namespace, run: str, source: str, suspects: Sequence[Suspect]) -> str | None:
    """Record the suspects; returns a warning to print when the history could not be written, else None."""
    from syncdoctor.history import History, HistoryError, resolve_path

    path = resolve_path(args.history, args.no_history)
    if path is None or not suspects:
        return None
    try:
        History(path).record(run, source, suspects)
    except HistoryError as exc:
        return f"warning: {exc}"
    return None


def checked_exclusion(args: argparse.Namespace) -> tuple[Path | None, str | None]:
    """Before any work: the output path (or None) and the hostfile's text; UsageError/InputError naming the
    option when they cannot be used."""
    if not 0.0 <= args.min_confidence <= 1.0:
        raise UsageError(f"--min-confidence must be between 0 and 1, got {args.min_confidence}")
    out = check_output(args.exclude_out, "--exclude-out")
    hostfile = None
    if args.exclude_format == "hostfile":
        if args.hostfile is None:
            raise UsageError("--exclude-format hostfile needs --hostfile FILE (the hostfile to filter)")
        try:
            hostfile = Path(args.hostfile).read_text(errors="replace")
        except OSError as exc:
            raise InputError(f"--hostfile {args.hostfile}: cannot read it: {exc.strerror or exc}") from None
    return out, hostfile


def write_exclusion(out: Path, suspects: Sequence[Suspect], fmt: str, hostfile: str | None) -> str:
    """Write the list; returns the sentence that says what was written."""
    out.write_text(redact_text(render(suspects, fmt, hostfile)))
    if not suspects:
        return f"no node-level cause: nothing to exclude ({out} lists no node)"
    return f"{len(suspects)} node(s) to exclude written to {out} ({fmt}): " + ", ".join(
        f"{s.node} ({s.code})" for s in suspects)
