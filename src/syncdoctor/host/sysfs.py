"""Network interfaces from ``/sys/class/net`` under a configurable root.

Does file I/O (reads only, under ``root``); the small parsers (``parse_flags``, ``parse_speed``...) are pure.
Every file that cannot be read or parsed becomes ``None`` ("unknown") and a note in the returned list of
unreadable facts; nothing here raises for bad input.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from syncdoctor.host.types import InterfaceFacts

__all__ = [
    "IFF_LOOPBACK",
    "IFF_RUNNING",
    "IFF_UP",
    "interface_kind",
    "is_running",
    "parse_flags",
    "parse_int",
    "parse_speed",
    "parse_uevent",
    "read_interfaces",
    "read_text",
]

log = logging.getLogger(__name__)

IFF_UP = 0x1
IFF_LOOPBACK = 0x8
IFF_RUNNING = 0x40

# ARPHRD_* values from /sys/class/net/<if>/type.
_ARPHRD_KINDS = {1: "ether", 32: "infiniband", 772: "loopback", 776: "sit", 65534: "none"}

Addresses = Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]


def read_text(path: Path, max_bytes: int = 65536) -> str | None:
    """The stripped text of a file, or None when it cannot be read (missing, EINVAL, not text)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes)
        return data.decode("utf-8", errors="strict").strip()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.debug("cannot read %s: %s", path, exc)
        return None


def parse_int(text: str | None, base: int = 0) -> int | None:
    """An integer in decimal or ``0x`` hex (``base=0``), None for anything else."""
    if text is None:
        return None
    try:
        return int(text.strip(), base)
    except ValueError:
        return None


def parse_flags(text: str | None) -> int | None:
    """The ``flags`` file (``0x1003``) as an int."""
    return parse_int(text, 16) if text and not text.lower().startswith("0x") else parse_int(text, 0)


def parse_speed(text: str | None) -> int | None:
    """``speed`` in Mbit/s; -1 and unreadable mean unknown (None)."""
    value = parse_int(text, 10)
    if value is None or value <= 0:
        return None
    return value


def parse_uevent(text: str | None) -> dict[str, str]:
    """``KEY=value`` lines of a ``uevent`` file."""
    result: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            result[key.strip()] = value.strip()
    return result


def is_running(flags: int | None, operstate: str | None) -> bool | None:
    """Whether ``getifaddrs`` would report IFF_RUNNING (what NCCL requires).

    The ``flags`` file holds the administrative flags only; the kernel adds IFF_RUNNING in
    ``dev_get_flags`` when the interface is up and its operstate is ``up`` or ``unknown``.
    """
    if flags is None:
        return None
    if not flags & IFF_UP:
        return False
    if flags & IFF_RUNNING:
        return True
    if operstate is None:
        return None
    return operstate in ("up", "unknown")


def interface_kind(
    name: str, arphrd: int | None, uevent: Mapping[str, str], has_bridge_dir: bool
) -> str | None:
    """A best-effort kind: ``loopback``, ``ether``, ``infiniband``, ``bridge``, ``vlan``, ``bond``..."""
    devtype = uevent.get("DEVTYPE")
    if devtype:
        return devtype
    if has_bridge_dir:
        return "bridge"
    if arphrd is None:
        return None
    return _ARPHRD_KINDS.get(arphrd, f"arphrd-{arphrd}")


def _read_one(base: Path, name: str, addresses: Addresses, unreadable: list[str]) -> InterfaceFacts:
    path = base / name
    operstate = read_text(path / "operstate")
    flags = parse_flags(read_text(path / "flags"))
    if flags is None:
        unreadable.append(f"{path / 'flags'}: unreadable or malformed")
    mtu = parse_int(read_text(path / "mtu"), 10)
    if mtu is None:
        unreadable.append(f"{path / 'mtu'}: unreadable or malformed")
    carrier_value = parse_int(read_text(path / "carrier"), 10)
    arphrd = parse_int(read_text(path / "type"), 10)
    uevent = parse_uevent(read_text(path / "uevent"))
    vendor = read_text(path / "device" / "vendor")
    try:
        virtual: bool | None = "/devices/virtual/" in os.path.realpath(path)
    except OSError:
        virtual = None
    ipv4, ipv6 = addresses.get(name, ((), ()))
    loopback = bool(flags is not None and flags & IFF_LOOPBACK) or arphrd == 772
    return InterfaceFacts(
        name=name,
        operstate=operstate.lower() if operstate else None,
        carrier=None if carrier_value is None else carrier_value == 1,
        up=None if flags is None else bool(flags & IFF_UP),
        running=is_running(flags, operstate.lower() if operstate else None),
        loopback=loopback,
        mtu=mtu,
        speed_mbps=parse_speed(read_text(path / "speed")),
        ipv4=tuple(ipv4),
        ipv6=tuple(ipv6),
        kind=interface_kind(name, arphrd, uevent, (path / "bridge").is_dir()),
        pci_vendor=vendor.lower() if vendor else None,
        ifindex=parse_int(read_text(path / "ifindex"), 10),
        virtual=virtual,
    )


def read_interfaces(
    root: Path, addresses: Addresses | None = None
) -> tuple[tuple[InterfaceFacts, ...], list[str]]:
    """Every interface under ``<root>/sys/class/net``, ordered by ifindex (the order NCCL sees them).

    ``addresses`` maps an interface name to its (IPv4, IPv6) addresses with prefix lengths, from
    :mod:`syncdoctor.host.addresses`. Returns the interfaces and notes about facts that could not be read.
    """
    base = root / "sys" / "class" / "net"
    unreadable: list[str] = []
    try:
        # bonding_masters is a plain file next to the interface links: keep directories only.
        names = sorted(
            entry.name for entry in base.iterdir() if entry.is_dir() and not entry.name.startswith(".")
        )
    except OSError as exc:
        return (), [f"{base}: cannot list network interfaces ({exc.strerror or exc})"]
    interfaces = [_read_one(base, name, addresses or {}, unreadable) for name in names]
    interfaces.sort(key=lambda i: (i.ifindex is None, i.ifindex or 0, i.name))
    return tuple(interfaces), unreadable
