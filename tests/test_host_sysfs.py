"""Interface readers on fake /sys trees: parsers, kinds, flags, malformed and missing files."""

from __future__ import annotations

from pathlib import Path

import pytest

from host_fakes import build_node, make_interface, write
from syncdoctor.host.sysfs import (
    interface_kind,
    is_running,
    parse_flags,
    parse_int,
    parse_speed,
    parse_uevent,
    read_interfaces,
    read_text,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0x1003", 0x1003), ("0x9", 9), ("1003", 0x1003), ("", None), (None, None), ("zz", None), ("0x", None)],
)
def test_parse_flags(text: str | None, expected: int | None) -> None:
    assert parse_flags(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("25000", 25000), ("-1", None), ("0", None), ("", None), (None, None), ("fast", None)],
)
def test_parse_speed(text: str | None, expected: int | None) -> None:
    assert parse_speed(text) == expected


def test_parse_int_and_uevent() -> None:
    assert parse_int("0x12", 0) == 18
    assert parse_int(" 42 \n", 10) == 42
    assert parse_int("4.2", 10) is None
    assert parse_uevent("INTERFACE=eth0\nDEVTYPE=bridge\nnonsense\n=x") == {
        "INTERFACE": "eth0",
        "DEVTYPE": "bridge",
    }
    assert parse_uevent(None) == {}


@pytest.mark.parametrize(
    ("flags", "operstate", "expected"),
    [
        (0x1003, "up", True),
        (0x9, "unknown", True),  # lo: operstate unknown counts as up
        (0x1003, "down", False),  # admin up, no carrier
        (0x1002, "up", False),  # admin down
        (0x1043, None, True),  # IFF_RUNNING given explicitly
        (0x1003, "lowerlayerdown", False),
        (0x1003, None, None),
        (None, "up", None),
    ],
)
def test_is_running(flags: int | None, operstate: str | None, expected: bool | None) -> None:
    assert is_running(flags, operstate) is expected


def test_interface_kind() -> None:
    assert interface_kind("docker0", 1, {"DEVTYPE": "bridge"}, False) == "bridge"
    assert interface_kind("br0", 1, {}, True) == "bridge"
    assert interface_kind("lo", 772, {}, False) == "loopback"
    assert interface_kind("ib0", 32, {}, False) == "infiniband"
    assert interface_kind("x", 999, {}, False) == "arphrd-999"
    assert interface_kind("x", None, {}, False) is None


def test_read_text_missing_and_binary(tmp_path: Path) -> None:
    assert read_text(tmp_path / "missing") is None
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    assert read_text(tmp_path / "bin") is None
    assert read_text(write(tmp_path / "ok", "  up \n")) == "up"


def test_read_interfaces_realistic_node(tmp_path: Path) -> None:
    build_node(tmp_path)
    addresses = {"eth0": (("10.0.0.7/24",), ()), "lo": (("127.0.0.1/8",), ("::1/128",))}
    interfaces, unreadable = read_interfaces(tmp_path, addresses)
    assert unreadable == []
    assert [i.name for i in interfaces] == ["lo", "eth0", "docker0", "ib0", "ens1f0"]  # ifindex order
    by_name = {i.name: i for i in interfaces}
    lo, eth0, docker0, ib0 = by_name["lo"], by_name["eth0"], by_name["docker0"], by_name["ib0"]
    assert lo.loopback and lo.running and lo.kind == "loopback" and lo.virtual and lo.speed_mbps is None
    assert lo.ipv6 == ("::1/128",)
    assert eth0.running and eth0.up and eth0.carrier and eth0.speed_mbps == 25000 and eth0.mtu == 1500
    assert eth0.pci_vendor == "0x15b3" and eth0.virtual is False and eth0.ipv4 == ("10.0.0.7/24",)
    assert (
        docker0.kind == "bridge" and docker0.running is False and docker0.carrier is False and docker0.virtual
    )
    assert ib0.kind == "infiniband" and ib0.mtu == 2044 and ib0.ipv4 == ()


def test_read_interfaces_malformed_and_missing_files(tmp_path: Path) -> None:
    make_interface(
        tmp_path, "eth0", ifindex=2, flags="garbage", mtu="nine thousand", speed="-1", carrier=None
    )
    make_interface(
        tmp_path, "eth1", ifindex=3, flags=None, operstate=None, mtu=None, speed=None, carrier=None
    )
    (tmp_path / "sys" / "class" / "net" / "empty").mkdir()  # a directory with nothing in it
    interfaces, unreadable = read_interfaces(tmp_path)
    by_name = {i.name: i for i in interfaces}
    assert set(by_name) == {"eth0", "eth1", "empty"}
    assert by_name["eth0"].up is None and by_name["eth0"].running is None and by_name["eth0"].mtu is None
    assert by_name["eth0"].speed_mbps is None and by_name["eth0"].carrier is None
    assert by_name["empty"].ifindex is None and by_name["empty"].operstate is None
    assert [i.name for i in interfaces][-1] == "empty"  # unknown ifindex sorts last
    assert any("eth0/flags" in note for note in unreadable)
    assert any("eth0/mtu" in note for note in unreadable)
    assert any("empty/flags" in note for note in unreadable)


def test_read_interfaces_without_sys(tmp_path: Path) -> None:
    interfaces, unreadable = read_interfaces(tmp_path)
    assert interfaces == ()
    assert len(unreadable) == 1 and "cannot list network interfaces" in unreadable[0]
