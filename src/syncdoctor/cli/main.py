"""``syncdoctor`` entry point: one sub-command per module in this package.

Each sub-command module exposes ``register(subparsers) -> None`` which adds its parser and sets
``func=run`` where ``run(args, console) -> int``. Errors from the library are translated here.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from rich.console import Console

from syncdoctor._version import __version__
from syncdoctor.cli import (
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    analyze,
    check,
    dashboard,
    demo,
    explain,
    lab,
    nodes,
    probe,
    recommend,
    report,
    run,
    watch,
)
from syncdoctor.errors import EnvironmentNotSupported, InputError, SyncdoctorError, UsageError
from syncdoctor.redact import RedactingFile, redact_text, remember_secrets

__all__ = ["build_parser", "main"]

# Order is the order of `syncdoctor --help`.
COMMANDS = (check, probe, watch, run, analyze, nodes, dashboard, recommend, report, lab, demo, explain)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors get our exit code and no traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="syncdoctor",
        description="Find the rank, host and cause behind multi-node PyTorch collective hangs.",
    )
    parser.add_argument("--version", action="version", version=f"syncdoctor {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def _redact_record(record: logging.LogRecord) -> bool:
    """A logging filter: the message as it will be written, redacted."""
    record.msg, record.args = redact_text(record.getMessage()), ()
    return True


def _make_console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run the CLI; returns the exit code (never raises for user errors)."""
    remember_secrets(os.environ)  # their values never leave the program, under any name (syncdoctor.redact)
    console = console or _make_console()
    err = Console(stderr=True, highlight=False)
    for stream in (console, err):  # the terminal's last step: whatever a command prints is redacted here
        if not isinstance(stream.file, RedactingFile):
            stream.file = RedactingFile(stream.file)  # type: ignore[assignment]
    try:
        parser = build_parser()
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        err.print(f"error: {exc}", markup=False)
        return EXIT_USAGE
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(int(args.verbose), 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(_redact_record)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args, console))
    except UsageError as exc:
        err.print(f"error: {exc}", markup=False)
        return EXIT_USAGE
    except (EnvironmentNotSupported, InputError) as exc:
        err.print(f"error: {exc}", markup=False)
        return EXIT_UNAVAILABLE
    except SyncdoctorError as exc:
        err.print(f"error: {exc}", markup=False)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        return 130
