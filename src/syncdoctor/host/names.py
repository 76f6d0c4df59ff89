"""The hostname and what it resolves to: what Gloo advertises when GLOO_SOCKET_IFNAME is unset.

``read_names`` does I/O: ``<root>/proc/sys/kernel/hostname`` (or ``socket.gethostname``) and a resolver,
by default ``getaddrinfo(hostname, AF_UNSPEC, SOCK_STREAM)`` exactly as Gloo calls it. The resolver is
injectable so tests never touch the real resolver. ``is_loopback_address`` is pure.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable
from pathlib import Path

from syncdoctor.host.sysfs import read_text
from syncdoctor.host.types import NameFacts

__all__ = ["Resolver", "is_loopback_address", "read_names", "system_resolver"]

log = logging.getLogger(__name__)

# A resolver returns (addresses in getaddrinfo order, canonical name); raises OSError when it fails.
Resolver = Callable[[str], tuple[list[str], str | None]]


def system_resolver(host: str) -> tuple[list[str], str | None]:
    """``getaddrinfo`` as Gloo does it (AF_UNSPEC, SOCK_STREAM), keeping order, plus the canonical name."""
    infos = socket.getaddrinfo(host, None, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_CANONNAME)
    addresses: list[str] = []
    canonical = None
    for _family, _type, _proto, canonname, sockaddr in infos:
        canonical = canonical or (canonname or None)
        address = str(sockaddr[0]).split("%", 1)[0]
        if address not in addresses:
            addresses.append(address)
    return addresses, canonical


def is_loopback_address(address: str) -> bool:
    """127.0.0.0/8 (including Debian's 127.0.1.1) or ::1."""
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def read_names(root: Path, resolver: Resolver = system_resolver) -> NameFacts:
    """The hostname, its canonical name and the addresses it resolves to (never raises)."""
    hostname = read_text(root / "proc" / "sys" / "kernel" / "hostname")
    if not hostname and root.resolve() == Path("/"):
        try:
            hostname = socket.gethostname()
        except OSError:
            hostname = None
    if not hostname:
        return NameFacts(resolve_error="hostname unreadable")
    try:
        addresses, canonical = resolver(hostname)
    except (OSError, UnicodeError, ValueError) as exc:
        return NameFacts(hostname=hostname, resolve_error=str(exc) or type(exc).__name__)
    return NameFacts(hostname=hostname, fqdn=canonical, resolved=tuple(addresses))
