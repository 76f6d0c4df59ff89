"""NCCL bootstrap and Gloo interface prediction, rule by rule (pure)."""

from __future__ import annotations

import pytest

from syncdoctor.checks.predict import (
    match_interface_list,
    predict_gloo,
    predict_nccl,
)
from syncdoctor.host.interfaces import address_interface
from syncdoctor.host.types import InterfaceFacts, NameFacts


def iface(
    name: str,
    index: int,
    v4: tuple[str, ...] = (),
    v6: tuple[str, ...] = (),
    running: bool = True,
    loopback: bool = False,
) -> InterfaceFacts:
    return InterfaceFacts(
        name=name,
        ifindex=index,
        ipv4=v4,
        ipv6=v6,
        running=running,
        up=running,
        loopback=loopback,
        operstate="up" if running else "down",
        mtu=1500,
    )


LO = iface("lo", 1, ("127.0.0.1/8",), ("::1/128",), loopback=True)
ETH0 = iface("eth0", 2, ("10.0.0.7/24",), ("fe80::1/64",))
ETH1 = iface("eth1", 3, ("10.1.0.7/24",))
ETH10 = iface("eth10", 4, ("10.2.0.7/24",))
DOCKER = iface("docker0", 5, ("172.17.0.1/16",))
IB0 = iface("ib0", 6, ("192.168.100.7/24",))
VIRBR = iface("virbr0", 7, ("192.168.122.1/24",))
V6ONLY = iface("ens9", 0, (), ("fd00::7/64",))
DOWN = iface("eth5", 8, ("10.5.0.7/24",), running=False)


def test_parse_and_match_interface_list() -> None:
    assert match_interface_list("eth10", False, ["eth1"])  # prefix: eth1 also matches eth10
    assert not match_interface_list("eth10", True, ["eth1"])
    assert match_interface_list("anything", False, [])


@pytest.mark.parametrize(
    ("value", "interface", "candidates"),
    [
        ("eth", "eth0", ("eth0", "eth1", "eth10")),
        ("eth1", "eth1", ("eth1", "eth10")),
        ("=eth1", "eth1", ("eth1",)),
        ("^eth,lo", "docker0", ("docker0", "ib0", "virbr0")),
        ("^=eth0,lo,docker0,ib0,virbr0", "eth1", ("eth1", "eth10")),
        ("e", "eth0", ("eth0", "eth1", "eth10")),  # length 1: ignored, automatic selection (no ib0 here)
    ],
)
def test_nccl_socket_ifname_syntax(value: str, interface: str, candidates: tuple[str, ...]) -> None:
    interfaces = (
        [LO, ETH0, ETH1, ETH10, DOCKER, IB0, VIRBR] if len(value) > 1 else [LO, ETH0, ETH1, ETH10, DOCKER]
    )
    choice = predict_nccl(interfaces, {"NCCL_SOCKET_IFNAME": value})
    assert (choice.interface, choice.candidates) == (interface, candidates)
    assert choice.problem is None


def test_nccl_ifname_matching_nothing_is_a_problem() -> None:
    choice = predict_nccl([LO, ETH0, DOWN], {"NCCL_SOCKET_IFNAME": "eth9"})
    assert choice.interface is None and "eth9" in (choice.problem or "")
    # a down interface does not count even when named exactly
    assert predict_nccl([LO, ETH0, DOWN], {"NCCL_SOCKET_IFNAME": "=eth5"}).interface is None


def test_nccl_automatic_order() -> None:
    assert predict_nccl([LO, ETH0, IB0], {}).interface == "ib0"  # ib* first
    assert predict_nccl([LO, DOCKER, ETH0], {}).interface == "eth0"  # anything but docker/lo/virbr
    choice = predict_nccl([LO, DOCKER, VIRBR, DOWN], {})
    assert (choice.interface, choice.address) == ("docker0", "172.17.0.1") and choice.rule.startswith(
        "docker*"
    )
    assert predict_nccl([LO, VIRBR], {}).interface == "lo"  # lo before virbr
    assert predict_nccl([VIRBR], {}).interface == "virbr0"
    nothing = predict_nccl([DOWN, iface("eth6", 9)], {})
    assert nothing.interface is None and "no socket interface" in (nothing.problem or "")


def test_nccl_comm_id_subnet() -> None:
    interfaces = [LO, ETH0, ETH1]
    choice = predict_nccl(interfaces, {"NCCL_COMM_ID": "10.1.0.1:23456"})
    assert choice.interface == "eth1" and "NCCL_COMM_ID" in choice.rule
    assert (
        predict_nccl(interfaces, {"NCCL_COMM_ID": "node-0:23456"}).interface == "eth0"
    )  # name: not resolved
    assert predict_nccl(interfaces, {"NCCL_COMM_ID": "[fd00::1]:23456"}).interface == "eth0"
    assert predict_nccl([LO, ETH0, IB0], {"NCCL_COMM_ID": "10.1.0.1:1"}).interface == "ib0"  # ib still first


def test_nccl_ipv4_before_ipv6_and_family_filter() -> None:
    # getifaddrs lists every IPv4 address before any IPv6 one, so eth0 wins over the lower-index ens9
    assert predict_nccl([LO, V6ONLY, ETH0], {}).interface == "eth0"
    six = predict_nccl([LO, V6ONLY, ETH0], {"NCCL_SOCKET_FAMILY": "AF_INET6"})
    assert (six.interface, six.address) == ("ens9", "fd00::7")
    # the IPv6 loopback is skipped, the IPv4 one is not
    only_lo = predict_nccl([LO], {"NCCL_SOCKET_FAMILY": "AF_INET6"})
    assert only_lo.interface is None
    assert predict_nccl([LO], {}).address == "127.0.0.1"


def test_nccl_at_most_16_candidates() -> None:
    many = [iface(f"eth{i}", i + 2, (f"10.0.{i}.7/24",)) for i in range(20)]
    assert len(predict_nccl(many, {}).candidates) == 16


def test_gloo_ifname_exact_names() -> None:
    names = NameFacts(hostname="h", resolved=("127.0.0.1",))
    choice = predict_gloo([LO, ETH0, ETH1], names, {"GLOO_SOCKET_IFNAME": "eth1,eth0"})
    assert (choice.interface, choice.address, choice.candidates) == ("eth1", "10.1.0.7", ("eth1", "eth0"))
    missing = predict_gloo([LO, ETH0], names, {"GLOO_SOCKET_IFNAME": "eth"})  # not a prefix for Gloo
    assert missing.interface is None and "Unable to find address for: eth" in (missing.problem or "")
    ignored = predict_gloo(
        [LO, ETH0], NameFacts(hostname="h", resolved=("10.0.0.7",)), {"GLOO_SOCKET_IFNAME": "x"}
    )
    assert ignored.interface == "eth0"  # length 1: ignored


def test_gloo_hostname_rules() -> None:
    interfaces = [LO, ETH0]
    good = predict_gloo(interfaces, NameFacts(hostname="h", resolved=("10.0.0.7",)), {})
    assert (good.interface, good.address, good.is_loopback) == ("eth0", "10.0.0.7", False)
    debian = predict_gloo(interfaces, NameFacts(hostname="h", resolved=("127.0.1.1",)), {})
    assert (debian.interface, debian.address, debian.is_loopback) == ("lo", "127.0.1.1", True)
    remote = predict_gloo(interfaces, NameFacts(hostname="h", resolved=("203.0.113.9",)), {})
    assert (remote.address, remote.is_loopback) == ("127.0.0.1", True) and "none of them local" in remote.rule
    broken = predict_gloo(interfaces, NameFacts(hostname="h", resolve_error="Name or service not known"), {})
    assert broken.address == "127.0.0.1" and "does not resolve" in broken.rule
    unknown = predict_gloo(interfaces, NameFacts(), {})
    assert unknown.interface is None and unknown.problem


def test_address_interface() -> None:
    assert address_interface([LO, ETH0], "10.0.0.7") == "eth0"
    assert address_interface([LO, ETH0], "127.0.1.1") == "lo"
    assert address_interface([ETH0], "127.0.0.1") == "lo"
    assert address_interface([LO, ETH0], "10.0.0.8") is None
    assert address_interface([LO, ETH0], "fe80::1%eth0") == "eth0"
    assert address_interface([LO, ETH0], "nonsense") is None
