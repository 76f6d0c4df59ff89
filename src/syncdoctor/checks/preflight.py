"""The host half of ``syncdoctor check``: facts, predictions, route and reachability, then host findings.

Does I/O (through the readers of :mod:`syncdoctor.host`). :func:`run_preflight` never raises for host trouble; every
problem becomes a finding. ``parse_master`` is pure and raises :class:`UsageError` for a malformed value.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncdoctor.checks.host_rules import HostCheckInput, MasterTarget, evaluate
from syncdoctor.checks.predict import InterfaceChoice, predict_gloo, predict_nccl
from syncdoctor.errors import UsageError
from syncdoctor.host.collect import collect_host_facts
from syncdoctor.host.names import Resolver, system_resolver
from syncdoctor.host.reach import check_reach
from syncdoctor.host.route import route_to
from syncdoctor.host.types import HostFacts, ReachFacts, RouteFacts
from syncdoctor.kb import Finding

__all__ = ["Preflight", "master_from", "parse_master", "parse_port", "run_preflight"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Preflight:
    """What the host part of check found: facts, predictions, route and reachability, and the findings."""

    facts: HostFacts
    nccl: InterfaceChoice
    gloo: InterfaceChoice
    master: MasterTarget | None
    route: RouteFacts | None
    reach: ReachFacts | None
    findings: list[Finding] = field(default_factory=list)
    skipped: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {
            **self.facts.to_json(),
            "predictions": {"nccl": self.nccl.to_json(), "gloo": self.gloo.to_json()},
            "master": None
            if self.master is None
            else {"host": self.master.host, "port": self.master.port, "from": self.master.origin},
            "route": None if self.route is None else asdict(self.route),
            "reachability": None if self.reach is None else asdict(self.reach),
            "skipped": list(self.skipped),
        }


def parse_port(text: str | None) -> int | None:
    """A TCP port 1-65535, or None when absent or malformed (the env rules report malformed values)."""
    try:
        port = int(str(text).strip(), 10)
    except (TypeError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def parse_master(value: str, default_port: int | None = None) -> MasterTarget:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``HOST`` (port from ``default_port``) for ``--master``."""
    text = value.strip()
    if not text:
        raise UsageError("--master needs HOST:PORT")
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""  # a bare host, or a bare IPv6 address
    if not host:
        raise UsageError(f"--master {value!r}: the host is empty")
    if port_text:
        port = parse_port(port_text)
        if port is None:
            raise UsageError(f"--master {value!r}: the port must be a number from 1 to 65535")
        return MasterTarget(host, port, "--master")
    return MasterTarget(host, default_port, "--master")


def master_from(env: Mapping[str, str], override: str | None = None) -> MasterTarget | None:
    """The master to check: ``--master`` when given, else MASTER_ADDR/MASTER_PORT from ``env``."""
    port = parse_port(env.get("MASTER_PORT"))
    if override:
        return parse_master(override, port)
    host = env.get("MASTER_ADDR", "").strip()
    return MasterTarget(host, port, "MASTER_ADDR") if host else None


def run_preflight(
    env: Mapping[str, str],
    *,
    root: Path = Path("/"),
    master: MasterTarget | None = None,
    network: bool = True,
    timeout: float = 2.0,
    import_torch: bool = False,
    resolver: Resolver = system_resolver,
    statvfs: Callable[[Any], os.statvfs_result] = os.statvfs,
    facts: HostFacts | None = None,
) -> Preflight:
    """Collect facts under ``root`` (unless given), predict the interfaces, find the route to and reach
    the master, and evaluate the host detectors."""
    if facts is None:
        facts = collect_host_facts(root, resolver=resolver, statvfs=statvfs, import_torch=import_torch)
    nccl = predict_nccl(facts.interfaces, env)
    gloo = predict_gloo(facts.interfaces, facts.names, env)
    live = Path(root).resolve() == Path("/")
    skipped: list[str] = []
    route = reach = None
    if master is not None:
        if live:
            route = route_to(master.host, facts.interfaces, master.port)
        else:
            skipped.append(
                "route to the master: facts come from a fake root, the kernel's routes do not apply"
            )
        if not network:
            skipped.append("reachability of the master: --no-network")
        elif master.port is None:
            skipped.append("reachability of the master: no MASTER_PORT")
        else:
            reach = check_reach(master.host, master.port, timeout=timeout)
    inp = HostCheckInput(facts=facts, env=env, nccl=nccl, gloo=gloo, master=master, route=route, reach=reach)
    return Preflight(facts, nccl, gloo, master, route, reach, evaluate(inp), tuple(skipped))
