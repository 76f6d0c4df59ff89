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

__all__ = ["add_exclusion_options", "checked_exclusion", "write_exclusion"]


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
