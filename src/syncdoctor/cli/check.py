"""``syncdoctor check``: a preflight of this host for multi-node PyTorch jobs.

Validates the environment (``syncdoctor.checks.env_rules``), reads the host's facts, predicts what NCCL and
Gloo will advertise, finds the route to MASTER_ADDR and whether MASTER_ADDR:MASTER_PORT answers, and prints
every finding with its fix. ``--json`` prints the versioned schema ``syncdoctor.check/1``::

    {"schema": "syncdoctor.check/1", "version": "...",
     "host": {...facts, "predictions": {"nccl", "gloo"}, "master", "route", "reachability", "env"},
     "findings": [{"code", "name", "severity", "title", "evidence", "why", "fix"}],
     "summary": {"error": n, "warning": n, "info": n, "fail_on": "error", "exit_code": 0}}

Exit codes: 0 clean, 1 findings at or above ``--fail-on`` (default error), 2 usage error. The pipeline itself
(inputs -> findings) is :func:`syncdoctor.checks.pipeline.run_check`; this module parses arguments and prints.
Secrets (variables named like TOKEN, KEY, SECRET, PASSWORD...) never appear in any output.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncdoctor._version import __version__
from syncdoctor.checks.pipeline import relevant_env, run_check, scrub, skipped
from syncdoctor.checks.preflight import Preflight
from syncdoctor.cli import EXIT_FINDINGS, EXIT_OK, finite
from syncdoctor.errors import UsageError
from syncdoctor.kb import Finding, Severity
from syncdoctor.report.terminal import render_findings

__all__ = ["SCHEMA", "build_default_args", "register", "run"]

log = logging.getLogger(__name__)

SCHEMA = "syncdoctor.check/1"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="preflight this host: environment, interfaces, IB/RoCE, /dev/shm, memlock, route to the master",
        description="Check this host for the misconfigurations behind cross-node hangs; prints each finding "
        "with its fix.",
    )
    _add_arguments(parser)
    parser.set_defaults(func=run)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help=f"machine-readable output (schema {SCHEMA})")
    parser.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        default="error",
        help="exit 1 when a finding is at least this severe (default: error)",
    )
    parser.add_argument(
        "--env-file",
        metavar="FILE",
        type=Path,
        help="validate this file's environment (export lines, a job script) instead of the current one",
    )
    parser.add_argument(
        "--master",
        metavar="HOST:PORT",
        help="the rank-0 store to check (default: MASTER_ADDR and MASTER_PORT)",
    )
    parser.add_argument(
        "--timeout",
        type=finite,
        default=2.0,
        metavar="SECONDS",
        help="TCP connect timeout for the master (default 2)",
    )
    parser.add_argument("--no-network", action="store_true", help="do not connect to the master")
    parser.add_argument(
        "--root",
        "--sysfs-root",
        dest="root",
        type=Path,
        default=Path("/"),
        metavar="DIR",
        help="read /sys, /proc and /dev/shm under DIR (tests, or a mounted image)",
    )
    parser.add_argument(
        "--show-env", action="store_true", help="also print the relevant variables (secrets redacted)"
    )
    parser.add_argument(
        "--import-torch",
        action="store_true",
        help="import torch to read its NCCL version and backends (slower)",
    )
    parser.add_argument(
        "--no-info", action="store_true", help="hide informational findings in the terminal report"
    )


def build_default_args() -> argparse.Namespace:
    """The arguments of a plain ``syncdoctor check`` (used by ``syncdoctor demo``)."""
    parser = argparse.ArgumentParser(prog="syncdoctor check", add_help=False)
    _add_arguments(parser)
    return parser.parse_args([])


# -- output --------------------------------------------------------------------------------------------------


def _size(value: int | None) -> str:
    if value is None:
        return "unknown"
    if value == -1:
        return "unlimited"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{value} B"


def _render_header(pre: Preflight, origin: str, console: Console) -> None:
    facts = pre.facts
    names = facts.names
    resolved = ", ".join(names.resolved) or (names.resolve_error or "nothing")
    console.print(
        Text(f"syncdoctor check · host {names.hostname or 'unknown'} (resolves to {resolved})", style="bold")
    )
    console.print(Text(f"environment: {origin}", style="dim"))
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in ("interface", "state", "mtu", "speed", "addresses"):
        table.add_column(column)
    for iface in facts.interfaces:
        state = "running" if iface.running else (iface.operstate or "unknown")
        speed = (
            f"{iface.speed_mbps // 1000} Gb/s"
            if iface.speed_mbps and iface.speed_mbps >= 1000
            else (f"{iface.speed_mbps} Mb/s" if iface.speed_mbps else "?")
        )
        addresses = ", ".join((*iface.ipv4, *iface.ipv6)) or "-"
        table.add_row(iface.name, state, str(iface.mtu or "?"), speed, addresses)
    console.print(table)
    if facts.ib_ports:
        ports = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        for column in ("IB/RoCE port", "state", "phys", "rate", "link", "netdev", "GID (NCCL)"):
            ports.add_column(column)
        for port in facts.ib_ports:
            gid = (
                "-"
                if port.link_layer != "Ethernet"
                else (str(port.roce_v2_index) if port.roce_v2_index is not None else "none")
            )
            ports.add_row(
                f"{port.device}:{port.port}",
                port.state_name or "?",
                port.phys_state_name or "?",
                port.rate_text or "?",
                port.link_layer or "?",
                port.netdev or "-",
                gid,
            )
        console.print(ports)
    for label, choice in (("NCCL bootstrap", pre.nccl), ("Gloo", pre.gloo)):
        target = f"{choice.interface} {choice.address}" if choice.interface else "nothing"
        console.print(Text(f"{label:<15} -> {target}  ({choice.rule})"))
    limits = facts.limits
    console.print(
        Text(
            f"/dev/shm {_size(limits.shm_total_bytes)} (free {_size(limits.shm_free_bytes)}), "
            f"memlock {_size(limits.memlock_soft_bytes)}",
            style="dim",
        )
    )
    if pre.master is not None:
        line = f"master {pre.master} ({pre.master.origin})"
        if pre.route is not None:
            line += (
                f": {pre.route.error}"
                if pre.route.error
                else (f": route via {pre.route.interface or '?'} from {pre.route.source}")
            )
        if pre.reach is not None:
            line += f"; TCP connect {pre.reach.result}"
        console.print(Text(line))
    else:
        console.print(Text("master: MASTER_ADDR not set (route and reachability not checked)", style="dim"))
    console.print()


def _exit_code(findings: list[Finding], fail_on: str) -> int:
    threshold = Severity.parse(fail_on)
    return EXIT_FINDINGS if any(f.severity >= threshold for f in findings) else EXIT_OK


def run(args: argparse.Namespace, console: Console) -> int:
    if args.timeout is None or not 0 < args.timeout <= 120:
        raise UsageError("--timeout must be between 0 and 120 seconds")
    root = Path(args.root)
    if not root.is_dir():  # a typo would check nothing and report a clean host
        raise UsageError(f"--root {args.root}: no such directory")
    result = run_check(
        root=root, env_file=args.env_file, master=args.master, network=not args.no_network,
        timeout=args.timeout, import_torch=args.import_torch,
    )
    pre, env, findings, secrets = result.pre, result.env, result.findings, result.secrets
    code = _exit_code(findings, args.fail_on)
    if args.json:
        counts = {s.label: sum(1 for f in findings if f.severity == s) for s in Severity}
        document = {
            "schema": SCHEMA,
            "version": __version__,
            "host": pre.to_json()
            | {"env": relevant_env(env), "env_origin": result.given.origin, "skipped": skipped(pre)},
            "findings": [f.to_json() for f in findings],
            "summary": counts | {"fail_on": args.fail_on, "exit_code": code},
        }
        console.print(
            json.dumps(scrub(document, secrets), indent=2, default=str),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return code
    _render_header(pre, result.given.origin, console)
    for item in skipped(pre):
        console.print(Text(f"not checked: {item}", style="dim"))
    if args.show_env:
        console.print(Text("relevant environment (secrets redacted):", style="bold"))
        for name, value in relevant_env(env).items():
            console.print(Text(f"  {name}={scrub(value, secrets)}"))
        console.print()
    render_findings(findings, console, show_info=not args.no_info)
    return code
