"""``syncdoctor explain CODE``: print a finding code's page (``--all`` lists every code, ``--json``)."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from syncdoctor.cli import EXIT_OK
from syncdoctor.errors import UsageError
from syncdoctor.kb import Rule, all_rules, get_rule

__all__ = ["register", "render_rule", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("explain", help="explain a finding code (what, why, example, fix)")
    parser.add_argument("code", nargs="?", help="a finding code such as E101, or its name")
    parser.add_argument("--all", action="store_true", help="list every code")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def render_rule(rule: Rule) -> str:
    """The page as plain text (markdown-like), identical in every terminal."""
    lines = [
        f"# {rule.name} ({rule.code})",
        "",
        f"Area: {rule.area}. Default severity: {rule.severity.label}.",
        "",
        rule.summary,
        "",
        "## What it detects",
        rule.what,
        "",
        "## Why it breaks training",
        rule.why,
        "",
        "## Example",
        rule.example,
        "",
        "## Fix",
        rule.fix,
    ]
    if rule.references:
        lines += ["", "## References", *(f"- {ref}" for ref in rule.references)]
    return "\n".join(lines)


def run(args: argparse.Namespace, console: Console) -> int:
    if args.all or not args.code:
        rules = all_rules()
        if args.json:
            console.print_json(json.dumps([r.to_json() for r in rules]))
        else:
            for rule in rules:
                console.print(f"{rule.code}  {rule.severity.label:<7}  {rule.name}: {rule.summary}", markup=False)
        return EXIT_OK
    found = get_rule(args.code)
    if found is None:
        raise UsageError(f"unknown finding code {args.code!r}; `syncdoctor explain --all` lists them")
    if args.json:
        console.print_json(json.dumps(found.to_json()))
    else:
        console.print(render_rule(found), markup=False)
    return EXIT_OK
