"""IB/RoCE readers on fake sysfs trees, and NCCL's RoCE GID auto-selection replayed."""

from __future__ import annotations

from pathlib import Path

import pytest

from host_fakes import ZERO_GID, build_node, gid_text, make_ib_port, roce_table, write
from syncdoctor.host.infiniband import (
    GidEntry,
    RoceGidSettings,
    gid_family,
    gid_is_valid,
    parse_gid,
    parse_gid_type,
    parse_rate,
    parse_state,
    read_ib_ports,
    select_roce_gid,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4: ACTIVE", (4, "ACTIVE")),
        ("1: DOWN", (1, "DOWN")),
        ("5: LinkUp", (5, "LinkUp")),
        ("4:ACTIVE\n", (4, "ACTIVE")),
        ("ACTIVE", (None, None)),
        ("", (None, None)),
        (None, (None, None)),
    ],
)
def test_parse_state(text: str | None, expected: tuple) -> None:
    assert parse_state(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("200 Gb/sec (4X HDR)", 200.0),
        ("2.5 Gb/sec (1X SDR)", 2.5),
        ("400 Gb/sec (4X NDR)", 400.0),
        ("Invalid argument", None),
        (None, None),
    ],
)
def test_parse_rate(text: str | None, expected: float | None) -> None:
    assert parse_rate(text) == expected


def test_gid_helpers() -> None:
    assert parse_gid_type("RoCE v2") == 2
    assert parse_gid_type("IB/RoCE v1") == 1
    assert parse_gid_type("RoCE v1\n") == 1
    assert parse_gid_type(None) == -1 and parse_gid_type("bogus") == -1
    mapped = parse_gid(gid_text("::ffff:10.0.0.7"))
    assert mapped is not None and gid_family(mapped) == 4 and gid_is_valid(mapped)
    link_local = parse_gid(gid_text("fe80::ee3:afff:fe0e:1c2b"))
    assert link_local is not None and gid_family(link_local) == 6 and not gid_is_valid(link_local)
    assert not gid_is_valid(parse_gid(ZERO_GID) or b"")
    assert gid_family(parse_gid(gid_text("ff0e::ffff:239.1.1.1")) or b"") == 4  # mapped multicast
    assert parse_gid("not-a-gid") is None and parse_gid(None) is None


def _table(rows: list[tuple[str, str | None]]) -> list[GidEntry]:
    return [GidEntry(i, gid, gid_type) for i, (gid, gid_type) in enumerate(rows)]


def test_select_standard_mlx5_layout_picks_v2_ipv4() -> None:
    assert select_roce_gid(_table(roce_table("10.0.0.7"))) == 3


def test_select_finds_nothing_without_ipv4() -> None:
    assert select_roce_gid(_table(roce_table(None))) is None


def test_select_keeps_first_valid_v2_and_range_filters() -> None:
    # NCCL moves on only when the current GID is invalid or of another RoCE version, so a second valid v2
    # IPv4 GID does not replace the first one (the "last index wins" folklore is wrong here).
    rows = [*roce_table("10.0.0.7"), (gid_text("::ffff:192.168.5.7"), "RoCE v2")]
    assert select_roce_gid(_table(rows)) == 3
    assert select_roce_gid(_table(rows), RoceGidSettings(addr_range="192.168.0.0/16")) == 8
    assert select_roce_gid(_table(rows), RoceGidSettings(addr_range="10.0.0.0/16")) == 3
    assert select_roce_gid(_table(rows), RoceGidSettings(addr_range="172.16.0.0/12")) is None


def test_select_v1_and_ipv6_settings() -> None:
    rows = roce_table("10.0.0.7")
    assert select_roce_gid(_table(rows), RoceGidSettings(roce_version=1)) == 2
    rows6 = [
        *roce_table(None, length=2),
        (gid_text("fd00::7"), "IB/RoCE v1"),
        (gid_text("fd00::7"), "RoCE v2"),
    ]
    assert select_roce_gid(_table(rows6), RoceGidSettings(family=6)) == 3
    assert select_roce_gid(_table(rows6)) is None  # default family is IPv4


def test_select_tolerates_unreadable_entries() -> None:
    rows = [
        (gid_text("fe80::1"), "IB/RoCE v1"),
        (None, None),
        ("garbage", "RoCE v2"),
        (gid_text("::ffff:10.1.1.1"), None),
    ]
    table = [GidEntry(i, g, t) for i, (g, t) in enumerate(rows)]
    assert select_roce_gid(table) is None  # the IPv4 GID has no readable type: not v2
    assert select_roce_gid([]) is None


def test_settings_from_env() -> None:
    env = {
        "NCCL_IB_ADDR_FAMILY": "AF_INET6",
        "NCCL_IB_ROCE_VERSION_NUM": "1",
        "NCCL_IB_ADDR_RANGE": "fd00::/8",
    }
    assert RoceGidSettings.from_env(env) == RoceGidSettings(6, 1, "fd00::/8")
    assert RoceGidSettings.from_env({"NCCL_IB_ROCE_VERSION_NUM": "two"}) == RoceGidSettings()


def test_read_ports_of_realistic_node(tmp_path: Path) -> None:
    build_node(tmp_path)
    ports, unreadable = read_ib_ports(tmp_path)
    assert unreadable == []
    by_device = {p.device: p for p in ports}
    roce, ib, down = by_device["mlx5_0"], by_device["mlx5_1"], by_device["mlx5_2"]
    assert (
        roce.link_layer == "Ethernet" and roce.active and roce.roce_v2_index == 3 and roce.netdev == "ens1f0"
    )
    assert len(roce.gids) == 4 and roce.gid_table_len == 8
    assert roce.gids[3] == (3, gid_text("::ffff:10.10.0.7"), "RoCE v2", "ens1f0")
    assert ib.active and ib.rate_gbps == 200.0 and ib.rate_text == "200 Gb/sec (4X HDR)"
    assert ib.phys_state == 5 and ib.phys_state_name == "LinkUp" and ib.lid == 0x12 and ib.sm_lid == 1
    assert ib.roce_v2_index is None  # not RoCE
    assert dict(ib.counters) == {"link_downed": 0, "symbol_error": 0, "port_rcv_errors": 0}
    assert down.state == 1 and not down.active and down.phys_state_name == "Disabled"


def test_read_ports_counters_and_hw_counters(tmp_path: Path) -> None:
    make_ib_port(
        tmp_path,
        "mlx5_0",
        counters={"link_downed": "3", "symbol_error": "1289", "port_rcv_errors": "x"},
        hw_counters={"local_ack_timeout_err": "17"},
    )
    (port,), _ = read_ib_ports(tmp_path)
    assert dict(port.counters) == {"link_downed": 3, "symbol_error": 1289, "local_ack_timeout_err": 17}


def test_read_ports_malformed_and_missing(tmp_path: Path) -> None:
    make_ib_port(
        tmp_path,
        "mlx5_0",
        state="garbage",
        phys_state=None,
        rate="Invalid",
        link_layer=None,
        lid="zz",
        sm_lid=None,
    )
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_9").mkdir()  # a device without ports
    write(tmp_path / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "notaport", "")
    ports, unreadable = read_ib_ports(tmp_path)
    assert len(ports) == 1
    port = ports[0]
    assert port.state is None and port.phys_state is None and port.rate_gbps is None and port.lid is None
    assert port.gids == () and port.roce_v2_index is None and port.netdev is None
    assert any("mlx5_0/ports/1/state" in n for n in unreadable)
    assert any("mlx5_9/ports" in n for n in unreadable)


def test_no_infiniband_is_not_an_error(tmp_path: Path) -> None:
    assert read_ib_ports(tmp_path) == ((), [])


def test_netdev_from_device_dir_when_gids_lack_ndevs(tmp_path: Path) -> None:
    make_ib_port(tmp_path, "mlx5_0", link_layer="Ethernet", gids=roce_table("10.0.0.7"))
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_0" / "device" / "net" / "ens3").mkdir(parents=True)
    (port,), _ = read_ib_ports(tmp_path)
    assert port.netdev == "ens3" and port.roce_v2_index == 3
