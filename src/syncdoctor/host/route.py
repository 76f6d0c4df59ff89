"""The local interface and source address the kernel uses to reach a host (MASTER_ADDR). Does I/O.

A UDP socket ``connect`` sends nothing but makes the kernel choose a route and a source address, which
``getsockname`` returns; the source address is then mapped to the interface that holds it. When the
master is this host, the kernel routes through ``lo`` but the source is the master's own address, so the
interface reported is the one holding that address (what peers reach).
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable, Sequence

from syncdoctor.host.interfaces import address_interface
from syncdoctor.host.types import InterfaceFacts, RouteFacts

__all__ = ["AddressResolver", "resolve_first", "route_to"]

log = logging.getLogger(__name__)

# Returns (family, address) of the first result, raises OSError (socket.gaierror) when the name does not resolve.
AddressResolver = Callable[[str], tuple[int, str]]


def resolve_first(host: str) -> tuple[int, str]:
    """The first ``getaddrinfo`` result for ``host`` (AF_UNSPEC, SOCK_STREAM), as c10d's store client tries it."""
    infos = socket.getaddrinfo(host, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
    family, _type, _proto, _canon, sockaddr = infos[0]
    return int(family), str(sockaddr[0])


def route_to(
    host: str,
    interfaces: Sequence[InterfaceFacts],
    port: int | None = None,
    resolver: AddressResolver = resolve_first,
) -> RouteFacts:
    """How this host reaches ``host``; never raises (failures are in ``error``)."""
    try:
        family, address = resolver(host)
    except (OSError, UnicodeError, IndexError, ValueError) as exc:
        return RouteFacts(target=host, error=f"cannot resolve {host}: {exc}")
    local = address_interface(interfaces, address) is not None
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.connect((address, port or 9))
            source = str(sock.getsockname()[0]).split("%", 1)[0]
    except OSError as exc:
        reason = "no route to host" if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH) else str(exc)
        return RouteFacts(target=host, address=address, local=local, error=f"{reason} ({address})")
    return RouteFacts(
        target=host,
        address=address,
        source=source,
        interface=address_interface(interfaces, source),
        local=local,
    )
