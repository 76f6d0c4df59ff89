"""``syncdoctor demo``: the main scenario (for now, a real ``check`` of this host)."""

from __future__ import annotations

import argparse

from rich.console import Console

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="run the demonstration scenario")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from syncdoctor.cli import check

    check_args = check.build_default_args()
    check.run(check_args, console)
    return 0
