"""Address parsers (netlink, /proc/net/if_inet6, fib_trie, route) and the rooted reader."""

from __future__ import annotations

import ipaddress
import socket
import struct
from pathlib import Path

import pytest

from host_fakes import build_node, make_proc_net, write
from syncdoctor.host.addresses import (
    AddressRecord,
    group_addresses,
    ipv4_from_proc,
    netlink_addresses,
    parse_fib_trie_locals,
    parse_if_inet6,
    parse_netlink_addresses,
    parse_proc_route,
    read_addresses,
)

# The fib_trie of the development machine (lo and eth0 192.0.2.2/24), verbatim.
FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 127.0.0.1
        /32 host LOCAL
     |-- 192.0.2.2
        /32 host LOCAL
"""

ROUTE = """Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
bad line
eth9\tZZZZ\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
"""


def _nlmsg(msg_type: int, body: bytes) -> bytes:
    length = 16 + len(body)
    padded = body + b"\0" * ((4 - length % 4) % 4)
    return struct.pack("=IHHII", length, msg_type, 2, 1, 0) + padded


def _rtattr(attr_type: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, attr_type) + payload + b"\0" * ((4 - length % 4) % 4)


def _newaddr(family: int, prefix: int, index: int, address: bytes, label: bytes | None = None) -> bytes:
    body = struct.pack("=BBBBI", family, prefix, 0, 0, index) + _rtattr(1, address) + _rtattr(2, address)
    if label:
        body += _rtattr(3, label + b"\0")
    return _nlmsg(20, body)


def test_parse_netlink_addresses() -> None:
    data = (
        _newaddr(socket.AF_INET, 8, 1, socket.inet_aton("127.0.0.1"), b"lo")
        + _newaddr(socket.AF_INET, 24, 4, socket.inet_aton("10.99.0.2"), b"eth0")
        + _newaddr(socket.AF_INET6, 64, 4, ipaddress.IPv6Address("fd00::2").packed)
        + _nlmsg(24, b"\0" * 8)  # some other message type: skipped
        + _nlmsg(3, b"\0\0\0\0")  # NLMSG_DONE
    )
    records, done = parse_netlink_addresses(data)
    assert done
    assert [(r.ifindex, r.family, r.cidr) for r in records] == [
        (1, 4, "127.0.0.1/8"),
        (4, 4, "10.99.0.2/24"),
        (4, 6, "fd00::2/64"),
    ]


def test_parse_netlink_truncated_and_garbage() -> None:
    good = _newaddr(socket.AF_INET, 24, 4, socket.inet_aton("10.0.0.1"))
    records, done = parse_netlink_addresses(good + good[:10])
    assert len(records) == 1 and not done
    assert parse_netlink_addresses(b"") == ([], False)
    assert parse_netlink_addresses(b"\xff" * 40) == ([], False)  # length field larger than the buffer
    # an address attribute of the wrong size is skipped
    bad = _nlmsg(20, struct.pack("=BBBBI", socket.AF_INET, 24, 0, 0, 2) + _rtattr(2, b"\1\2"))
    assert parse_netlink_addresses(bad)[0] == []
    with pytest.raises(OSError):
        parse_netlink_addresses(_nlmsg(2, b"\0" * 20))  # NLMSG_ERROR


def test_netlink_addresses_live_has_loopback() -> None:
    records = netlink_addresses()
    assert any(r.ifname == "lo" and r.address == "127.0.0.1" for r in records)


def test_parse_if_inet6() -> None:
    text = (
        "fd000000000000000000000000000002 04 40 00 82     eth0\n"
        "00000000000000000000000000000001 01 80 10 80       lo\n"
        "short line\n"
        "zz000000000000000000000000000001 01 80 10 80       lo\n"
    )
    records = parse_if_inet6(text)
    assert [(r.ifname, r.cidr, r.ifindex) for r in records] == [
        ("eth0", "fd00::2/64", 4),
        ("lo", "::1/128", 1),
    ]
    assert parse_if_inet6(None) == []


def test_parse_fib_trie_locals() -> None:
    assert parse_fib_trie_locals(FIB_TRIE) == ["127.0.0.1", "192.0.2.2"]
    assert parse_fib_trie_locals("|-- not-an-ip\n   /32 host LOCAL\n") == []
    assert parse_fib_trie_locals(None) == []


def test_parse_route_and_map_addresses() -> None:
    routes = parse_proc_route(ROUTE)
    assert [(n, str(net), gw) for n, net, gw in routes] == [
        ("eth0", "0.0.0.0/0", True),
        ("eth0", "192.0.2.0/24", False),
    ]
    records = ipv4_from_proc(["127.0.0.1", "192.0.2.2", "203.0.113.5"], routes)
    assert [(r.ifname, r.cidr) for r in records] == [("lo", "127.0.0.1/8"), ("eth0", "192.0.2.2/24")]


def test_longest_connected_route_wins() -> None:
    routes = [
        ("eth0", ipaddress.IPv4Network("10.0.0.0/8"), False),
        ("eth1", ipaddress.IPv4Network("10.1.0.0/16"), False),
    ]
    assert ipv4_from_proc(["10.1.2.3"], routes)[0].ifname == "eth1"


def test_group_addresses_keeps_order_and_drops_unnamed() -> None:
    grouped = group_addresses(
        [
            AddressRecord(2, 4, "10.0.0.7", 24, "eth0"),
            AddressRecord(2, 4, "10.0.0.8", 24, "eth0"),
            AddressRecord(2, 6, "fd00::7", 64, "eth0"),
            AddressRecord(2, 4, "10.0.0.7", 24, "eth0"),
            AddressRecord(9, 4, "10.9.9.9", 24, None),
        ]
    )
    assert grouped == {"eth0": (("10.0.0.7/24", "10.0.0.8/24"), ("fd00::7/64",))}


def test_read_addresses_from_fake_proc(tmp_path: Path) -> None:
    build_node(tmp_path)
    addresses, source, notes = read_addresses(tmp_path)
    assert source == "proc" and notes == []
    assert addresses["eth0"] == (("10.0.0.7/24",), ())
    assert addresses["lo"] == (("127.0.0.1/8",), ("::1/128",))
    assert addresses["ens1f0"] == (("10.10.0.7/24",), ("fe80::ee3:afff:fe0e:1c2b/64",))
    assert addresses["docker0"][0] == ("172.17.0.1/16",)


def test_read_addresses_missing_files(tmp_path: Path) -> None:
    addresses, source, notes = read_addresses(tmp_path)
    assert addresses == {} and source == "proc"
    assert any("if_inet6" in n for n in notes) and any("fib_trie" in n for n in notes)


def test_read_addresses_malformed_files(tmp_path: Path) -> None:
    make_proc_net(tmp_path, ipv4={"eth0": ["10.0.0.7/24"]})
    write(tmp_path / "proc" / "net" / "route", "\x00garbage\nmore garbage here and there ok 1 2 3\n")
    write(tmp_path / "proc" / "net" / "if_inet6", "not an address table")
    addresses, _, _ = read_addresses(tmp_path)
    assert addresses == {}  # no connected route: the interface of 10.0.0.7 is unknown, so it is not guessed
