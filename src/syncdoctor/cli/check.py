"""``syncdoctor check``: a preflight of this host for multi-node PyTorch jobs.

Validates the environment (``syncdoctor.checks.env_rules``), reads the host's facts, predicts what NCCL and
Gloo will advertise, finds the route to MASTER_ADDR and whether MASTER_ADDR:MASTER_PORT answers, and prints
every finding with its fix. ``--json`` prints the versioned schema ``syncdoctor.check/1``::

    {"schema": "syncdoctor.check/1", "version": "...",
     "host": {...facts, "predictions": {"nccl", "gloo"}, "master", "route", "reachability", "env"},
     "findings": [{"code", "name", "severity", "title", "evidence", "why", "fix"}],
     "summary": {"error": n, "warning": n, "info": n, "fail_on": "error", "exit_code": 0}}

Exit codes: 0 clean, 1 findings at or above ``--fail-on`` (default error), 2 usage error.
Secrets (variables named like TOKEN, KEY, SECRET, PASSWORD...) never appear in any output.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncdoctor._version import __version__
from syncdoctor.cli import EXIT_FINDINGS, EXIT_OK, finite
from syncdoctor.errors import UsageError
from syncdoctor.host.collect import collect_host_facts
from syncdoctor.host.preflight import Preflight, master_from, run_preflight
from syncdoctor.kb import Finding, Severity, sort_findings
from syncdoctor.redact import REDACTED, is_secret_name, redact_env, redact_text
from syncdoctor.report.terminal import render_findings

__all__ = ["SCHEMA", "EnvInput", "build_default_args", "collect_findings", "load_env", "register", "run"]

log = logging.getLogger(__name__)

SCHEMA = "syncdoctor.check/1"
_RELEVANT_PREFIXES = (
    "NCCL_",
    "TORCH_",
    "GLOO_",
    "MASTER_",
    "TORCHELASTIC_",
    "PYTORCH_",
    "CUDA_",
    "UCX_",
    "FI_",
)
_RELEVANT_NAMES = (
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "OMP_NUM_THREADS",
)
_IFNAME_VARS = {"nccl": "NCCL_SOCKET_IFNAME", "gloo": "GLOO_SOCKET_IFNAME"}


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


# -- environment ---------------------------------------------------------------------------------------------


def _optional(module: str) -> Any | None:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


@dataclass
class EnvInput:
    """The environment to validate: the variables (after NCCL's config files), where each came from, the
    findings of reading the env file and config files, and the variables as given (before the files)."""

    env: dict[str, str]
    origin: str
    sources: dict[str, str] | None = None
    findings: list[Finding] = field(default_factory=list)
    given: dict[str, str] = field(default_factory=dict)


def _home(root: Path) -> Path | None:
    """The user's home as NCCL finds it (getpwuid, not $HOME), under ``root`` for fake trees."""
    try:
        home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return None
    return home if root.resolve() == Path("/") else root / str(home).lstrip("/")


def load_env(args: argparse.Namespace, nccl_version: str | None) -> EnvInput:
    """Read ``--env-file`` (or take the current environment), then apply NCCL's config files."""
    findings: list[Finding] = []
    envfile = _optional("syncdoctor.checks.envfile")
    if args.env_file is not None:
        try:
            text = Path(args.env_file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"--env-file {args.env_file}: {exc.strerror or exc}") from None
        if envfile is None:
            raise UsageError("--env-file needs syncdoctor.checks.envfile, which this installation lacks")
        given, file_findings = envfile.parse_env_file(text)
        findings.extend(file_findings)
        origin = f"file {args.env_file}"
        given_source = f"env-file:{args.env_file}"
    else:
        given, origin, given_source = dict(os.environ), "the current environment", "environment"
    if envfile is None:
        return EnvInput(dict(given), origin, None, findings, dict(given))
    root = Path(args.root)
    conf = envfile.read_nccl_conf(given, home=_home(root), etc=root / "etc", nccl_version=nccl_version)
    sources = {k: (given_source if v == "environment" else v) for k, v in conf.sources.items()}
    return EnvInput(dict(conf.env), origin, sources, [*findings, *conf.findings], dict(given))


def _relevant_env(env: Mapping[str, str]) -> dict[str, str]:
    picked = {k: v for k, v in env.items() if k.startswith(_RELEVANT_PREFIXES) or k in _RELEVANT_NAMES}
    return dict(sorted(redact_env(picked).items()))


# -- findings ------------------------------------------------------------------------------------------------


def _env_findings(env: Mapping[str, str], pre: Preflight, sources: Mapping[str, str] | None) -> list[Finding]:
    rules = _optional("syncdoctor.checks.env_rules")
    if rules is None:
        return []
    facts = pre.facts
    ib_unknown = any("IB/RoCE" in note or "infiniband" in note for note in facts.unreadable)
    return list(
        rules.validate_env(
            env,
            interfaces=facts.interfaces or None,  # empty means unreadable: every Linux host has lo
            ib_ports=None if ib_unknown else facts.ib_ports,
            nccl_version=facts.versions.nccl,
            torch_version=facts.versions.torch,
            sources=sources,
        )
    )


def _skipped(pre: Preflight) -> list[str]:
    """What could not be checked: host steps skipped, and env rules that needed unknown host facts."""
    skipped = list(pre.skipped)
    rules = _optional("syncdoctor.checks.env_rules")
    if rules is not None and hasattr(rules, "skipped_checks"):
        ib_unknown = any("IB/RoCE" in note or "infiniband" in note for note in pre.facts.unreadable)
        skipped += rules.skipped_checks(
            interfaces_known=bool(pre.facts.interfaces), ib_ports_known=not ib_unknown
        )
    return skipped


def _mentions(finding: Finding, variable: str) -> bool:
    evidence = finding.evidence or {}
    return (
        variable in evidence
        or variable in (evidence.get("variable"), evidence.get("name"))
        or finding.title.startswith(variable)
    )


def collect_findings(
    env: Mapping[str, str],
    pre: Preflight,
    sources: Mapping[str, str] | None = None,
    extra: list[Finding] | None = None,
) -> list[Finding]:
    """Env findings (plus ``extra``: env-file and config-file findings) and host findings, without repeating
    what the env rules already say about an interface variable that is set (a list matching nothing usable,
    or only lo)."""
    env_found = [*_env_findings(env, pre, sources), *(extra or [])]
    host_found = []
    for finding in pre.findings:
        backend = finding.evidence.get("backend") if finding.code in ("N001", "N004") else None
        variable = _IFNAME_VARS.get(str(backend)) if backend else None
        if (
            variable
            and variable in env
            and any(_mentions(f, variable) and f.severity >= Severity.WARNING for f in env_found)
        ):
            continue
        host_found.append(finding)
    return sort_findings([*env_found, *host_found])


def _secret_values(*envs: Mapping[str, str]) -> list[str]:
    values = {v for env in envs for k, v in env.items() if is_secret_name(k) and len(v.strip()) >= 4}
    return sorted(values, key=len, reverse=True)


def _scrub(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return redact_text(value)
    if isinstance(value, Mapping):
        return {str(_scrub(k, secrets)): _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v, secrets) for v in value]
    return value


def _scrub_finding(finding: Finding, secrets: list[str]) -> Finding:
    return replace(
        finding,
        title=_scrub(finding.title, secrets),
        evidence=_scrub(dict(finding.evidence), secrets),
        why=_scrub(finding.why, secrets),
        fix=_scrub(finding.fix, secrets),
    )


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
    facts = collect_host_facts(root, import_torch=args.import_torch)
    given = load_env(args, facts.versions.nccl)
    env = given.env
    master = master_from(env, args.master)
    pre = run_preflight(
        env, root=root, master=master, network=not args.no_network, timeout=args.timeout, facts=facts
    )
    secrets = _secret_values(os.environ, given.given, env)
    findings = [_scrub_finding(f, secrets) for f in collect_findings(env, pre, given.sources, given.findings)]
    code = _exit_code(findings, args.fail_on)
    if args.json:
        counts = {s.label: sum(1 for f in findings if f.severity == s) for s in Severity}
        document = {
            "schema": SCHEMA,
            "version": __version__,
            "host": pre.to_json()
            | {"env": _relevant_env(env), "env_origin": given.origin, "skipped": _skipped(pre)},
            "findings": [f.to_json() for f in findings],
            "summary": counts | {"fail_on": args.fail_on, "exit_code": code},
        }
        console.print(
            json.dumps(_scrub(document, secrets), indent=2, default=str),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return code
    _render_header(pre, given.origin, console)
    for item in _skipped(pre):
        console.print(Text(f"not checked: {item}", style="dim"))
    if args.show_env:
        console.print(Text("relevant environment (secrets redacted):", style="bold"))
        for name, value in _relevant_env(env).items():
            console.print(Text(f"  {name}={_scrub(value, secrets)}"))
        console.print()
    render_findings(findings, console, show_info=not args.no_info)
    return code
