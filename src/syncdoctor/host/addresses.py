"""Interface addresses (IPv4 and IPv6 with prefix lengths), in the order the kernel lists them.

Two sources, one result (``{interface: (ipv4, ipv6)}``, each address as ``a.b.c.d/len``):

- on the live host, a netlink ``RTM_GETADDR`` dump (exact, and the same order ``getifaddrs`` and so
  NCCL see: IPv4 first, by interface index);
- under a fake root (tests) or when netlink fails, ``/proc/net/if_inet6`` for IPv6, and for IPv4 the
  local addresses of ``/proc/net/fib_trie`` mapped to interfaces through the connected routes of
  ``/proc/net/route``.

The parsers (``parse_*``) are pure; ``read_addresses`` and ``netlink_addresses`` do I/O.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from syncdoctor.host.sysfs import read_text

__all__ = [
    "AddressRecord",
    "group_addresses",
    "ipv4_from_proc",
    "netlink_addresses",
    "parse_fib_trie_locals",
    "parse_if_inet6",
    "parse_netlink_addresses",
    "parse_proc_route",
    "read_addresses",
]

log = logging.getLogger(__name__)

_NLMSG = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
_IFADDRMSG = struct.Struct("=BBBBI")  # family, prefix length, flags, scope, interface index
_RTATTR = struct.Struct("=HH")  # length, type
_RTM_NEWADDR, _RTM_GETADDR = 20, 22
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_IFA_ADDRESS, _IFA_LOCAL = 1, 2
_RTF_GATEWAY = 0x2

Addresses = dict[str, tuple[tuple[str, ...], tuple[str, ...]]]


@dataclass(frozen=True)
class AddressRecord:
    """One address of one interface: ``ifindex`` (and ``ifname`` once known), family 4 or 6, text, prefix."""

    ifindex: int
    family: int
    address: str
    prefixlen: int
    ifname: str | None = None

    @property
    def cidr(self) -> str:
        return f"{self.address}/{self.prefixlen}"


def _align4(length: int) -> int:
    return (length + 3) & ~3


def parse_netlink_addresses(data: bytes) -> tuple[list[AddressRecord], bool]:
    """Parse a buffer of netlink messages; returns the address records and whether NLMSG_DONE was seen.

    Malformed or truncated messages end the parse quietly (the records so far are kept).
    """
    records: list[AddressRecord] = []
    offset = 0
    done = False
    while offset + _NLMSG.size <= len(data):
        length, msg_type, _flags, _seq, _pid = _NLMSG.unpack_from(data, offset)
        if length < _NLMSG.size or offset + length > len(data):
            break
        body = data[offset + _NLMSG.size : offset + length]
        offset += _align4(length)
        if msg_type == _NLMSG_DONE:
            done = True
            break
        if msg_type == _NLMSG_ERROR:
            raise OSError("netlink returned an error for RTM_GETADDR")
        if msg_type != _RTM_NEWADDR or len(body) < _IFADDRMSG.size:
            continue
        family, prefixlen, _ifa_flags, _scope, index = _IFADDRMSG.unpack_from(body, 0)
        attrs: dict[int, bytes] = {}
        pos = _IFADDRMSG.size
        while pos + _RTATTR.size <= len(body):
            attr_len, attr_type = _RTATTR.unpack_from(body, pos)
            if attr_len < _RTATTR.size or pos + attr_len > len(body):
                break
            attrs.setdefault(attr_type, body[pos + _RTATTR.size : pos + attr_len])
            pos += _align4(attr_len)
        raw = attrs.get(_IFA_LOCAL) or attrs.get(_IFA_ADDRESS)
        try:
            if family == socket.AF_INET and raw is not None and len(raw) == 4:
                records.append(AddressRecord(index, 4, socket.inet_ntop(socket.AF_INET, raw), prefixlen))
            elif family == socket.AF_INET6 and raw is not None and len(raw) == 16:
                records.append(AddressRecord(index, 6, socket.inet_ntop(socket.AF_INET6, raw), prefixlen))
        except (OSError, ValueError):
            continue
    return records, done


def netlink_addresses(timeout: float = 2.0) -> list[AddressRecord]:
    """Dump every address of this network namespace over netlink (I/O). Raises OSError on failure."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.settimeout(timeout)
        sock.bind((0, 0))
        request = _NLMSG.pack(_NLMSG.size + _IFADDRMSG.size, _RTM_GETADDR, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0)
        sock.send(request + _IFADDRMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0))
        records: list[AddressRecord] = []
        for _ in range(10000):
            chunk = sock.recv(65536)
            if not chunk:
                break
            batch, done = parse_netlink_addresses(chunk)
            records.extend(batch)
            if done:
                break
    named = []
    for record in records:
        try:
            name = socket.if_indextoname(record.ifindex)
        except OSError:
            name = None
        named.append(AddressRecord(record.ifindex, record.family, record.address, record.prefixlen, name))
    return named


def parse_if_inet6(text: str | None) -> list[AddressRecord]:
    """``/proc/net/if_inet6``: ``<32 hex address> <ifindex> <prefix> <scope> <flags> <name>`` per line."""
    records = []
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) < 6 or len(fields[0]) != 32:
            continue
        try:
            address = str(ipaddress.IPv6Address(int(fields[0], 16)))
            records.append(AddressRecord(int(fields[1], 16), 6, address, int(fields[2], 16), fields[5]))
        except ValueError:
            continue
    return records


def parse_fib_trie_locals(text: str | None) -> list[str]:
    """The local IPv4 addresses of ``/proc/net/fib_trie`` (leaves marked ``/32 host LOCAL``), in order."""
    found: list[str] = []
    current: str | None = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("|--"):
            current = stripped[3:].strip()
        elif current and stripped.startswith("/32") and stripped.endswith("LOCAL") and "host" in stripped:
            try:
                ipaddress.IPv4Address(current)
            except ValueError:
                continue
            if current not in found:
                found.append(current)
    return found


def _le_hex_to_ipv4(text: str) -> str:
    return socket.inet_ntoa(struct.pack("<I", int(text, 16)))


def parse_proc_route(text: str | None) -> list[tuple[str, ipaddress.IPv4Network, bool]]:
    """``/proc/net/route`` rows as (interface, network, via a gateway)."""
    routes = []
    for line in (text or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        try:
            network = ipaddress.IPv4Network(
                f"{_le_hex_to_ipv4(fields[1])}/{_le_hex_to_ipv4(fields[7])}", strict=False
            )
            gateway = bool(int(fields[3], 16) & _RTF_GATEWAY)
        except (ValueError, struct.error, OverflowError):
            continue
        routes.append((fields[0], network, gateway))
    return routes


def ipv4_from_proc(
    locals_: Iterable[str], routes: Iterable[tuple[str, ipaddress.IPv4Network, bool]]
) -> list[AddressRecord]:
    """Map each local IPv4 address to the interface of the longest connected route that contains it."""
    connected = [(name, net) for name, net, via_gateway in routes if not via_gateway and net.prefixlen > 0]
    records = []
    for text in locals_:
        address = ipaddress.IPv4Address(text)
        matches = [(net.prefixlen, name) for name, net in connected if address in net]
        if matches:
            prefixlen, name = max(matches)
            records.append(AddressRecord(0, 4, text, prefixlen, name))
        elif address.is_loopback:
            records.append(AddressRecord(0, 4, text, 8, "lo"))
        else:
            log.debug("local address %s has no connected route; interface unknown", text)
    return records


def group_addresses(records: Iterable[AddressRecord]) -> Addresses:
    """``{interface: (ipv4, ipv6)}`` keeping the order of ``records``; records without a name are dropped."""
    grouped: dict[str, tuple[list[str], list[str]]] = {}
    for record in records:
        if not record.ifname:
            continue
        v4, v6 = grouped.setdefault(record.ifname, ([], []))
        target = v4 if record.family == 4 else v6
        if record.cidr not in target:
            target.append(record.cidr)
    return {name: (tuple(v4), tuple(v6)) for name, (v4, v6) in grouped.items()}


def _from_proc(root: Path) -> tuple[Addresses, list[str]]:
    notes = []
    net = root / "proc" / "net"
    inet6 = read_text(net / "if_inet6", max_bytes=1 << 20)
    fib = read_text(net / "fib_trie", max_bytes=1 << 22)
    route = read_text(net / "route", max_bytes=1 << 22)
    if inet6 is None:
        notes.append(f"{net / 'if_inet6'}: unreadable (IPv6 addresses unknown)")
    if fib is None or route is None:
        notes.append(f"{net / 'fib_trie'} or {net / 'route'}: unreadable (IPv4 addresses unknown)")
    records = ipv4_from_proc(parse_fib_trie_locals(fib), parse_proc_route(route)) + parse_if_inet6(inet6)
    return group_addresses(records), notes


def read_addresses(root: Path) -> tuple[Addresses, str, list[str]]:
    """Addresses per interface, the source used (``netlink`` or ``proc``), and notes on what failed."""
    if root.resolve() == Path("/"):
        try:
            return group_addresses(netlink_addresses()), "netlink", []
        except OSError as exc:
            log.debug("netlink address dump failed (%s); falling back to /proc", exc)
    addresses, notes = _from_proc(root)
    return addresses, "proc", notes
