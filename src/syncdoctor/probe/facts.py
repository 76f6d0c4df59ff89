"""This rank's facts for the cross-node comparison, and their JSON round trip. Does I/O (reads the host).

Host facts come from ``syncdoctor.host.collect.collect_host_facts`` (the same as ``check``); when that
fails, a reduced set is read with psutil so the comparison still has interfaces and MTUs. The route to
the master (which interface the job's traffic uses) comes from ``syncdoctor.host.route.route_to``.
Communication variables (NCCL_*, GLOO_*, TORCH_NCCL_*) are redacted before they leave the rank.
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from syncdoctor.host.types import (
    GpuFacts,
    HostFacts,
    IbPortFacts,
    InterfaceFacts,
    LimitsFacts,
    NameFacts,
    VersionFacts,
)
from syncdoctor.redact import redact_env

__all__ = [
    "COMM_PREFIXES",
    "comm_env",
    "gpu_name",
    "host_facts_from_json",
    "interface_of_address",
    "local_facts",
    "route_source",
    "versions",
]

log = logging.getLogger(__name__)

COMM_PREFIXES = ("NCCL_", "GLOO_", "TORCH_NCCL_")


def comm_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The communication variables of ``environ``, redacted, sorted by name."""
    return redact_env({k: environ[k] for k in sorted(environ) if k.startswith(COMM_PREFIXES)})


def _record(cls: type, data: Any) -> Any:
    if not isinstance(data, dict):
        return cls() if cls in (NameFacts, LimitsFacts, VersionFacts) else None
    names = {f.name for f in fields(cls)}
    values = {}
    for key, value in data.items():
        if key not in names:
            continue
        if isinstance(value, list):
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        values[key] = value
    return cls(**values)


def host_facts_from_json(data: Mapping[str, Any]) -> HostFacts:
    """Rebuild :class:`HostFacts` from ``HostFacts.to_json()`` output (unknown keys ignored)."""
    return HostFacts(
        names=_record(NameFacts, data.get("names")),
        interfaces=tuple(_record(InterfaceFacts, i) for i in data.get("interfaces") or () if isinstance(i, dict)),
        ib_ports=tuple(_record(IbPortFacts, p) for p in data.get("ib_ports") or () if isinstance(p, dict)),
        limits=_record(LimitsFacts, data.get("limits")),
        versions=_record(VersionFacts, data.get("versions")),
        gpus=tuple(_record(GpuFacts, g) for g in data.get("gpus") or () if isinstance(g, dict)),
        unreadable=tuple(str(u) for u in data.get("unreadable") or ()),
    )


def _psutil_facts() -> HostFacts:
    import socket

    import psutil

    interfaces = []
    stats = psutil.net_if_stats()
    for name, addrs in psutil.net_if_addrs().items():
        stat = stats.get(name)
        ipv4 = tuple(f"{a.address}" for a in addrs if a.family == socket.AF_INET)
        interfaces.append(InterfaceFacts(
            name=name, up=stat.isup if stat else None, running=stat.isup if stat else None,
            loopback=name == "lo", mtu=stat.mtu if stat else None,
            speed_mbps=(stat.speed or None) if stat else None, ipv4=ipv4,
        ))
    return HostFacts(names=NameFacts(hostname=socket.gethostname()), interfaces=tuple(interfaces),
                     unreadable=("host collector unavailable: interfaces from psutil only",))


def local_facts() -> HostFacts:
    """This host's facts (the ``check`` collector, or the psutil fallback)."""
    try:
        from syncdoctor.host.collect import collect_host_facts

        return collect_host_facts(import_torch=True)
    except Exception:
        log.warning("host facts collector failed; using psutil", exc_info=True)
        return _psutil_facts()


def route_source(master_addr: str, port: int, facts: HostFacts | None) -> tuple[str | None, str | None]:
    """(local address, interface) this host uses to reach the master; (None, None) when unknown."""
    try:
        from syncdoctor.host.route import route_to

        route = route_to(master_addr, facts.interfaces if facts else (), port=port)
        return route.source, route.interface or interface_of_address(route.source)
    except Exception:
        log.debug("route to %s failed", master_addr, exc_info=True)
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect((master_addr, port))
            source = str(sock.getsockname()[0])
            return source, interface_of_address(source)
    except OSError:
        return None, None


def interface_of_address(address: str | None) -> str | None:
    """The local interface holding ``address`` (psutil), None when unknown."""
    if not address:
        return None
    import psutil

    for name, addrs in psutil.net_if_addrs().items():
        if any(a.address.split("%", 1)[0] == address for a in addrs):
            return name
    return None


def versions(device: Any, facts: HostFacts | None) -> dict[str, str | None]:
    """torch, its CUDA, NCCL, the driver and Python, as strings."""
    import torch

    known = facts.versions if facts else None
    nccl = known.nccl if known else None
    if nccl is None and torch.cuda.is_available():
        try:
            raw = torch.cuda.nccl.version()
            nccl = ".".join(str(p) for p in raw) if isinstance(raw, tuple) else str(raw)
        except Exception:
            nccl = None
    driver = facts.versions.driver if facts else None
    return {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "nccl": nccl,
            "driver": driver, "python": platform.python_version()}


def gpu_name(device: Any) -> str | None:
    if getattr(device, "type", "cpu") != "cuda":
        return None
    import torch

    return str(torch.cuda.get_device_name(device))

