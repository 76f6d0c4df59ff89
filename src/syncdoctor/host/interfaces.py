"""Which local interface holds an address, and the addresses in ``getifaddrs`` order. Pure: no I/O."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from syncdoctor.host.names import is_loopback_address
from syncdoctor.host.types import InterfaceFacts

__all__ = ["address_interface", "address_table", "bare_address"]


def address_table(interfaces: Sequence[InterfaceFacts]) -> list[tuple[InterfaceFacts, str, int]]:
    """(interface, address/prefix, family) in ``getifaddrs`` order: IPv4 by ifindex, then IPv6 by ifindex."""
    ordered = sorted(interfaces, key=lambda i: (i.ifindex is None, i.ifindex or 0))
    rows = [(i, a, 4) for i in ordered for a in i.ipv4]
    rows += [(i, a, 6) for i in ordered for a in i.ipv6]
    return rows


def bare_address(cidr: str) -> str:
    """``10.0.0.7/24`` -> ``10.0.0.7``."""
    return cidr.split("/", 1)[0]


def address_interface(interfaces: Sequence[InterfaceFacts], address: str) -> str | None:
    """The interface holding ``address`` (``lo`` for loopback addresses not listed anywhere)."""
    bare = bare_address(address).split("%", 1)[0]
    for interface, cidr, _fam in address_table(interfaces):
        try:
            if ipaddress.ip_address(bare_address(cidr)) == ipaddress.ip_address(bare):
                return interface.name
        except ValueError:
            continue
    if is_loopback_address(bare):
        return next((i.name for i in interfaces if i.loopback), "lo")
    return None
