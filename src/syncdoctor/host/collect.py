"""Gather every host fact ``check`` needs into one :class:`HostFacts`. Does I/O; never raises.

Each reader runs under a configurable ``root`` (``/`` on the live host, a fake tree in tests). A reader
that fails leaves its facts ``None``/empty and adds a note to ``HostFacts.unreadable``, so a fact that
could not be read shows up as "unknown", never as "healthy".
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from syncdoctor.host.addresses import read_addresses
from syncdoctor.host.infiniband import read_ib_ports
from syncdoctor.host.limits import read_limits
from syncdoctor.host.names import Resolver, read_names, system_resolver
from syncdoctor.host.sysfs import read_interfaces
from syncdoctor.host.types import HostFacts, LimitsFacts, NameFacts, VersionFacts
from syncdoctor.host.versions import read_versions

__all__ = ["collect_host_facts"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def _guard(what: str, default: T, unreadable: list[str], func: Callable[[], T]) -> T:
    try:
        return func()
    except Exception as exc:  # a reader bug must not take check down; it becomes an "unknown" fact
        log.debug("reading %s failed", what, exc_info=True)
        unreadable.append(f"{what}: unexpected error ({type(exc).__name__}: {exc})")
        return default


def collect_host_facts(
    root: Path = Path("/"),
    *,
    resolver: Resolver = system_resolver,
    statvfs: Callable[[Any], os.statvfs_result] = os.statvfs,
    import_torch: bool = False,
) -> HostFacts:
    """Interfaces with addresses, IB/RoCE ports, /dev/shm and memlock, names, versions and GPUs."""
    root = Path(root)
    unreadable: list[str] = []

    def addresses() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
        found, source, notes = read_addresses(root)
        log.debug("addresses from %s", source)
        unreadable.extend(notes)
        return found

    def interfaces() -> tuple:
        no_addresses: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        found, notes = read_interfaces(root, _guard("addresses", no_addresses, unreadable, addresses))
        unreadable.extend(notes)
        return found

    def ib_ports() -> tuple:
        found, notes = read_ib_ports(root)
        unreadable.extend(notes)
        return found

    def limits() -> LimitsFacts:
        found, notes = read_limits(root, statvfs)
        unreadable.extend(notes)
        return found

    def versions() -> tuple:
        found, gpus, notes = read_versions(root, import_torch=import_torch)
        unreadable.extend(notes)
        return found, gpus

    interface_facts = _guard("network interfaces", (), unreadable, interfaces)
    ib_facts = _guard("IB/RoCE ports", (), unreadable, ib_ports)
    limit_facts = _guard("limits", LimitsFacts(), unreadable, limits)
    name_facts = _guard("hostname", NameFacts(), unreadable, lambda: read_names(root, resolver))
    version_facts, gpus = _guard("versions", (VersionFacts(), ()), unreadable, versions)
    return HostFacts(
        names=name_facts,
        interfaces=interface_facts,
        ib_ports=ib_facts,
        limits=limit_facts,
        versions=version_facts,
        gpus=gpus,
        unreadable=tuple(unreadable),
    )
