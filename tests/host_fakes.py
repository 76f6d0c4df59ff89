"""Builders of fake /sys, /proc and /dev trees for the host readers' tests (written under tmp_path).

The file formats are the kernel's: ``flags`` as ``0x1003``, ``state`` as ``4: ACTIVE``, GIDs as 8 groups of
4 hex digits, ``/proc/net/route`` in little-endian hex, ``/proc/net/fib_trie`` with ``/32 host LOCAL`` leaves.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") or text == "" else text + "\n")
    return path


def make_interface(
    root: Path,
    name: str,
    *,
    ifindex: int,
    flags: str | None = "0x1003",
    operstate: str | None = "up",
    mtu: str | None = "1500",
    speed: str | None = "10000",
    arphrd: int = 1,
    carrier: str | None = "1",
    vendor: str | None = None,
    devtype: str | None = None,
    bridge: bool = False,
    virtual: bool = False,
) -> Path:
    """An interface directory, linked from sys/class/net like the kernel does (virtual or PCI device)."""
    if virtual:
        target = root / "sys" / "devices" / "virtual" / "net" / name
    else:
        target = root / "sys" / "devices" / "pci0000:00" / f"0000:00:0{ifindex}.0" / "net" / name
    target.mkdir(parents=True, exist_ok=True)
    values = {
        "ifindex": str(ifindex),
        "flags": flags,
        "operstate": operstate,
        "mtu": mtu,
        "speed": speed,
        "type": str(arphrd),
        "carrier": carrier,
        "uevent": f"INTERFACE={name}\nIFINDEX={ifindex}" + (f"\nDEVTYPE={devtype}" if devtype else ""),
    }
    for key, value in values.items():
        if value is not None:
            write(target / key, value)
    if vendor:
        write(target / "device" / "vendor", vendor)
    if bridge:
        (target / "bridge").mkdir(exist_ok=True)
    link = root / "sys" / "class" / "net" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        os.symlink(os.path.relpath(target, link.parent), link)
    return target


def _le_hex(address: str) -> str:
    return f"{struct.unpack('<I', socket.inet_aton(address))[0]:08X}"


def make_proc_net(
    root: Path,
    ipv4: Mapping[str, Sequence[str]] = (),  # type: ignore[assignment]
    ipv6: Iterable[tuple[str, int, int, str]] = (),
    gateways: Iterable[tuple[str, str]] = (),
) -> None:
    """/proc/net/{fib_trie,route,if_inet6} for the given addresses.

    ``ipv4`` maps an interface to its ``a.b.c.d/len`` addresses; ``ipv6`` rows are (address, ifindex,
    prefix, interface); ``gateways`` are (interface, gateway) default routes.
    """
    net = root / "proc" / "net"
    leaves: list[tuple[str, str]] = []
    routes = ["Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"]
    for iface, gateway in gateways:
        routes.append(f"{iface}\t00000000\t{_le_hex(gateway)}\t0003\t0\t0\t0\t00000000\t0\t0\t0")
    for iface, addresses in dict(ipv4).items():
        for cidr in addresses:
            interface = ipaddress.IPv4Interface(cidr)
            if not interface.ip.is_loopback:
                routes.append(
                    f"{iface}\t{_le_hex(str(interface.network.network_address))}\t00000000\t0001\t0\t0\t0\t"
                    f"{_le_hex(str(interface.network.netmask))}\t0\t0\t0"
                )
                leaves.append(
                    (str(interface.network.network_address), f"/{interface.network.prefixlen} link UNICAST")
                )
            leaves.append((str(interface.ip), "/32 host LOCAL"))
    trie = []
    for table in ("Main:", "Local:"):
        trie += [table, "  +-- 0.0.0.0/0 3 0 5"]
        for address, kind in leaves:
            trie += [f"     |-- {address}", f"        {kind}"]
    write(net / "fib_trie", "\n".join(trie))
    write(net / "route", "\n".join(routes))
    rows = [f"{ipaddress.IPv6Address(a).packed.hex()} {i:02x} {p:02x} 00 80 {n:>8}" for a, i, p, n in ipv6]
    write(net / "if_inet6", "\n".join(rows))


def gid_text(address: str) -> str:
    """A GID as sysfs prints it (``%pI6``: 8 groups of 4 hex digits)."""
    return ipaddress.IPv6Address(address).exploded


def roce_table(
    ipv4: str | None = "10.0.0.7", mac_suffix: str = "0ee3:afff:fe0e:1c2b", length: int = 8
) -> list[tuple[str, str | None]]:
    """The usual mlx5 RoCE GID table: 0 v1 link-local, 1 v2 link-local, 2 v1 IPv4, 3 v2 IPv4, then zeros."""
    rows: list[tuple[str, str | None]] = [
        (gid_text(f"fe80::{mac_suffix}"), "IB/RoCE v1"),
        (gid_text(f"fe80::{mac_suffix}"), "RoCE v2"),
    ]
    if ipv4:
        rows += [(gid_text(f"::ffff:{ipv4}"), "IB/RoCE v1"), (gid_text(f"::ffff:{ipv4}"), "RoCE v2")]
    rows += [(ZERO_GID, None)] * (length - len(rows))
    return rows


def make_ib_port(
    root: Path,
    device: str,
    port: int = 1,
    *,
    state: str | None = "4: ACTIVE",
    phys_state: str | None = "5: LinkUp",
    rate: str | None = "200 Gb/sec (4X HDR)",
    link_layer: str | None = "InfiniBand",
    lid: str | None = "0x12",
    sm_lid: str | None = "0x1",
    gids: Sequence[tuple[str, str | None]] = (),
    netdev: str | None = None,
    counters: Mapping[str, str] | None = None,
    hw_counters: Mapping[str, str] | None = None,
) -> Path:
    """One port of an IB/RoCE device; GID types of unset entries are absent (the kernel answers EINVAL)."""
    base = root / "sys" / "class" / "infiniband" / device / "ports" / str(port)
    for key, value in {
        "state": state,
        "phys_state": phys_state,
        "rate": rate,
        "link_layer": link_layer,
        "lid": lid,
        "sm_lid": sm_lid,
    }.items():
        if value is not None:
            write(base / key, value)
    for index, (gid, gid_type) in enumerate(gids):
        write(base / "gids" / str(index), gid)
        if gid_type is not None:
            write(base / "gid_attrs" / "types" / str(index), gid_type)
            if netdev:
                write(base / "gid_attrs" / "ndevs" / str(index), netdev)
    for name, value in (counters or {}).items():
        write(base / "counters" / name, value)
    for name, value in (hw_counters or {}).items():
        write(base / "hw_counters" / name, value)
    return base


def make_limits(root: Path, memlock_soft: str = "8388608", memlock_hard: str = "8388608") -> Path:
    text = (
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max cpu time              unlimited            unlimited            seconds   \n"
        f"Max locked memory         {memlock_soft:<20} {memlock_hard:<20} bytes     \n"
        "Max open files            20000                20000                files     \n"
    )
    return write(root / "proc" / "self" / "limits", text)


class FakeStatvfs:
    """A statvfs result with the given size and free space (bytes, 4096-byte blocks)."""

    def __init__(self, total: int, free: int) -> None:
        self.f_frsize = 4096
        self.f_blocks = total // 4096
        self.f_bavail = free // 4096


def fake_statvfs(total: int, free: int | None = None):
    def _statvfs(_path: str) -> FakeStatvfs:
        return FakeStatvfs(total, total if free is None else free)

    return _statvfs


def fake_resolver(table: Mapping[str, Sequence[str]]):
    """A resolver answering from ``table``; unknown names raise socket.gaierror like getaddrinfo."""

    def _resolve(host: str) -> tuple[list[str], str | None]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(table[host]), host

    return _resolve


def build_node(root: Path, hostname: str = "gpu-node-7") -> Path:
    """A realistic GPU node: lo, eth0 (10.0.0.7/24, 25 Gb/s Mellanox), docker0 (bridge, no carrier),
    ib0 (IPoIB), ens1f0 (RoCE netdev); mlx5_0 RoCE with the usual GID table, mlx5_1 IB ACTIVE 200 Gb/sec
    (4X HDR), mlx5_2 a DOWN port; /proc/self/limits with an 8 MiB memlock; the hostname."""
    make_interface(
        root,
        "lo",
        ifindex=1,
        flags="0x9",
        operstate="unknown",
        mtu="65536",
        speed=None,
        arphrd=772,
        virtual=True,
    )
    make_interface(root, "eth0", ifindex=2, speed="25000", vendor="0x15b3")
    make_interface(
        root,
        "docker0",
        ifindex=3,
        flags="0x1003",
        operstate="down",
        carrier="0",
        speed=None,
        devtype="bridge",
        bridge=True,
        virtual=True,
    )
    make_interface(root, "ib0", ifindex=4, mtu="2044", speed="200000", arphrd=32, vendor="0x15b3")
    make_interface(root, "ens1f0", ifindex=5, mtu="9000", speed="100000", vendor="0x15b3")
    write(root / "sys" / "class" / "net" / "bonding_masters", "")
    make_proc_net(
        root,
        ipv4={
            "lo": ["127.0.0.1/8"],
            "eth0": ["10.0.0.7/24"],
            "docker0": ["172.17.0.1/16"],
            "ib0": ["192.168.100.7/24"],
            "ens1f0": ["10.10.0.7/24"],
        },
        ipv6=[("::1", 1, 128, "lo"), ("fe80::ee3:afff:fe0e:1c2b", 5, 64, "ens1f0")],
        gateways=[("eth0", "10.0.0.1")],
    )
    make_ib_port(
        root,
        "mlx5_0",
        link_layer="Ethernet",
        rate="100 Gb/sec (4X EDR)",
        lid="0x0",
        sm_lid="0x0",
        gids=roce_table("10.10.0.7"),
        netdev="ens1f0",
    )
    make_ib_port(
        root,
        "mlx5_1",
        gids=[(gid_text("fe80::248a:703:9c:1a2b"), "IB/RoCE v1")],
        counters={"link_downed": "0", "symbol_error": "0", "port_rcv_errors": "0"},
    )
    make_ib_port(
        root,
        "mlx5_2",
        state="1: DOWN",
        phys_state="3: Disabled",
        rate="10 Gb/sec (4X SDR)",
        lid="0x0",
        sm_lid="0x0",
    )
    make_limits(root)
    write(root / "proc" / "sys" / "kernel" / "hostname", hostname)
    (root / "dev" / "shm").mkdir(parents=True, exist_ok=True)
    return root
