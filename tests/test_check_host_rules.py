"""Every host (H) and network (N) finding code: one positive and one negative case each (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from host_fakes import ZERO_GID, gid_text, roce_table
from syncdoctor.checks.host_rules import (
    HostCheckInput,
    MasterTarget,
    evaluate,
    is_multi_node,
    suggested_interface,
)
from syncdoctor.checks.predict import predict_gloo, predict_nccl
from syncdoctor.host.infiniband import GidEntry, select_roce_gid
from syncdoctor.host.types import (
    HostFacts,
    IbPortFacts,
    InterfaceFacts,
    LimitsFacts,
    NameFacts,
    ReachFacts,
    RouteFacts,
    VersionFacts,
)
from syncdoctor.kb import Finding, Severity, all_rules


def iface(
    name: str,
    index: int,
    v4: tuple[str, ...] = (),
    *,
    running: bool = True,
    loopback: bool = False,
    mtu: int = 1500,
    speed: int | None = 25000,
) -> InterfaceFacts:
    return InterfaceFacts(
        name=name,
        ifindex=index,
        ipv4=v4,
        running=running,
        up=running,
        loopback=loopback,
        operstate="up" if running else "down",
        mtu=mtu,
        speed_mbps=speed,
    )


LO = iface("lo", 1, ("127.0.0.1/8",), loopback=True, mtu=65536, speed=None)
ETH0 = iface("eth0", 2, ("10.0.0.7/24",))
GOOD_NAMES = NameFacts(hostname="node7", resolved=("10.0.0.7",))
GOOD_LIMITS = LimitsFacts(
    shm_total_bytes=32 << 30, shm_free_bytes=32 << 30, memlock_soft_bytes=-1, memlock_hard_bytes=-1
)
ROUTE = RouteFacts(target="10.0.0.1", address="10.0.0.1", source="10.0.0.7", interface="eth0")
MASTER = MasterTarget("10.0.0.1", 29500)


def facts(**changes: object) -> HostFacts:
    base = HostFacts(
        names=GOOD_NAMES, interfaces=(LO, ETH0), limits=GOOD_LIMITS, versions=VersionFacts(python="3.11.7")
    )
    return replace(base, **changes)


def run(
    host: HostFacts | None = None,
    env: Mapping[str, str] | None = None,
    master: MasterTarget | None = MASTER,
    route: RouteFacts | None = ROUTE,
    reach: ReachFacts | None = None,
) -> list[Finding]:
    host = host or facts()
    env = dict(env or {})
    inp = HostCheckInput(
        facts=host,
        env=env,
        nccl=predict_nccl(host.interfaces, env),
        gloo=predict_gloo(host.interfaces, host.names, env),
        master=master,
        route=route,
        reach=reach,
    )
    return evaluate(inp)


def codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings}


def only(findings: list[Finding], code: str) -> Finding:
    matches = [f for f in findings if f.code == code]
    assert len(matches) == 1, f"expected one {code}, got {[(f.code, f.title) for f in findings]}"
    return matches[0]


def test_clean_host_has_only_the_versions_line() -> None:
    found = run(reach=ReachFacts("10.0.0.1", 29500, "open", address="10.0.0.1"))
    assert codes(found) == {"H012"}


# --- N001: advertising loopback (the one that matters most) -------------------------------------------------


def test_n001_gloo_loopback_in_multi_node_job_names_the_route_interface() -> None:
    found = run(facts(names=NameFacts(hostname="node7", resolved=("127.0.0.1",))))
    finding = only(found, "N001")
    assert finding.severity is Severity.ERROR
    assert "Gloo will advertise 127.0.0.1" in finding.title and "eth0 (10.0.0.7)" in finding.title
    assert finding.fix.startswith("export GLOO_SOCKET_IFNAME=eth0")
    assert finding.evidence["route to master"] == "eth0 from 10.0.0.7"


def test_n001_negative_when_gloo_is_pinned_or_single_host() -> None:
    loopback_names = facts(names=NameFacts(hostname="node7", resolved=("127.0.0.1",)))
    assert "N001" not in codes(run(loopback_names, env={"GLOO_SOCKET_IFNAME": "eth0"}))
    single = run(loopback_names, master=MasterTarget("127.0.0.1", 29500), route=None)
    assert "N001" not in codes(single)
    assert "N001" not in codes(run())


def test_n001_warning_when_job_shape_unknown_and_nccl_on_lo() -> None:
    only_lo = facts(interfaces=(LO, iface("eth0", 2, ("10.0.0.7/24",), running=False)))
    found = run(only_lo, master=None, route=None)
    nccl = [f for f in found if f.code == "N001" and f.evidence["backend"] == "nccl"]
    assert nccl and nccl[0].severity is Severity.WARNING
    assert "NCCL_SOCKET_IFNAME" in nccl[0].fix


def test_n001_gloo_interface_down() -> None:
    host = facts(interfaces=(LO, ETH0, iface("eth1", 3, ("10.1.0.7/24",), running=False)))
    finding = only(run(host, env={"GLOO_SOCKET_IFNAME": "eth1"}), "N001")
    assert "not running" in finding.title and finding.severity is Severity.ERROR


# --- N002, N003, N004 ---------------------------------------------------------------------------------------


def test_n002_nccl_prefers_ib_but_master_routes_via_eth0() -> None:
    host = facts(interfaces=(LO, ETH0, iface("ib0", 3, ("192.168.100.7/24",))))
    finding = only(run(host), "N002")
    assert finding.evidence["backend"] == "nccl" and "ib0" in finding.title and "eth0" in finding.title
    assert finding.fix.startswith("export NCCL_SOCKET_IFNAME=eth0")
    assert "N002" not in codes(run(host, env={"NCCL_SOCKET_IFNAME": "eth0"}))


def test_n002_not_for_a_local_master_routed_through_lo() -> None:
    local_route = RouteFacts("10.0.0.7", "10.0.0.7", "10.0.0.7", "eth0", local=True)
    assert "N002" not in codes(run(master=MasterTarget("10.0.0.7", 29500), route=local_route))


def test_n003_docker_fallback() -> None:
    host = facts(
        interfaces=(
            LO,
            iface("docker0", 2, ("172.17.0.1/16",)),
            iface("eth0", 3, ("10.0.0.7/24",), running=False),
        ),
        names=NameFacts(hostname="n", resolved=("172.17.0.1",)),
    )
    finding = only(run(host, route=None), "N003")
    assert "docker0" in finding.title and finding.severity is Severity.ERROR
    assert "N003" not in codes(run())


def test_n004_ifname_matching_nothing() -> None:
    found = run(env={"NCCL_SOCKET_IFNAME": "eth9", "GLOO_SOCKET_IFNAME": "eth9"})
    n004 = [f for f in found if f.code == "N004"]
    assert {f.evidence["backend"] for f in n004} == {"nccl", "gloo"}
    assert all(f.severity is Severity.ERROR and "eth0" in f.fix for f in n004)
    assert "N004" not in codes(run(env={"NCCL_SOCKET_IFNAME": "eth", "GLOO_SOCKET_IFNAME": "eth0"}))


# --- N005, N006, N007: the master ---------------------------------------------------------------------------


def test_n005_refused() -> None:
    finding = only(
        run(reach=ReachFacts("10.0.0.1", 29500, "refused", address="10.0.0.1", detail="refused")), "N005"
    )
    assert (
        "unreachable" in finding.title and "refused" in finding.title and finding.severity is Severity.WARNING
    )
    assert "N005" not in codes(run(reach=ReachFacts("10.0.0.1", 29500, "open", address="10.0.0.1")))


@pytest.mark.parametrize("result", ["timeout", "unreachable"])
def test_n006_timeout_or_no_route(result: str) -> None:
    finding = only(run(reach=ReachFacts("10.0.0.1", 29500, result, address="10.0.0.1", detail="x")), "N006")
    assert finding.severity is Severity.ERROR and result in finding.title


def test_n006_from_route_error_without_network_probe() -> None:
    route = RouteFacts("10.9.0.1", "10.9.0.1", error="no route to host (10.9.0.1)")
    assert only(run(route=route), "N006").severity is Severity.ERROR
    assert "N006" not in codes(run(route=ROUTE))


def test_n007_unresolvable() -> None:
    reach = ReachFacts("node-0", 29500, "unresolvable", detail="Name or service not known")
    finding = only(run(master=MasterTarget("node-0", 29500), route=None, reach=reach), "N007")
    assert "node-0" in finding.title and finding.severity is Severity.ERROR
    route = RouteFacts("node-0", error="cannot resolve node-0: nope")
    assert "N007" in codes(run(master=MasterTarget("node-0", 29500), route=route))
    assert "N007" not in codes(run())


# --- H001-H004 ----------------------------------------------------------------------------------------------


def test_h001_hostname_to_debian_loopback() -> None:
    host = facts(names=NameFacts(hostname="node7", resolved=("127.0.1.1",)))
    finding = only(run(host), "H001")
    assert finding.severity is Severity.WARNING and "127.0.1.1" in finding.title
    assert "10.0.0.7 node7" in finding.fix
    assert only(run(host, env={"GLOO_SOCKET_IFNAME": "eth0"}), "H001").severity is Severity.INFO
    assert "H001" not in codes(run())


def test_h002_unresolvable_or_foreign_hostname() -> None:
    gone = facts(names=NameFacts(hostname="ghost", resolve_error="Name or service not known"))
    assert "does not resolve" in only(run(gone), "H002").title
    stale = facts(names=NameFacts(hostname="node7", resolved=("10.9.9.9",)))
    assert "none of them on this host" in only(run(stale), "H002").title
    assert "H002" not in codes(run())


def test_h003_mtu_mismatch_between_candidates() -> None:
    host = facts(interfaces=(LO, ETH0, iface("eth1", 3, ("10.1.0.7/24",), mtu=9000)))
    finding = only(run(host), "H003")
    assert finding.evidence["mtu"] == {"eth0": 1500, "eth1": 9000} and finding.severity is Severity.INFO
    assert "H003" not in codes(run(facts(interfaces=(LO, ETH0, iface("eth1", 3, ("10.1.0.7/24",))))))


def test_h004_speed_unknown() -> None:
    host = facts(interfaces=(LO, iface("eth0", 2, ("10.0.0.7/24",), speed=None)))
    assert "10 Gbps" in only(run(host), "H004").title
    assert "H004" not in codes(run())


# --- H005-H009: IB/RoCE ports -------------------------------------------------------------------------------


def port(**changes: object) -> IbPortFacts:
    base = IbPortFacts(
        device="mlx5_1",
        port=1,
        state=4,
        state_name="ACTIVE",
        phys_state=5,
        phys_state_name="LinkUp",
        rate_gbps=200.0,
        rate_text="200 Gb/sec (4X HDR)",
        link_layer="InfiniBand",
        lid=0x12,
        sm_lid=1,
        counters=(("link_downed", 0), ("symbol_error", 0)),
    )
    return replace(base, **changes)


def ib_run(*ports: IbPortFacts, env: Mapping[str, str] | None = None) -> list[Finding]:
    return run(facts(ib_ports=ports), env=env)


def test_healthy_ib_port_is_silent() -> None:
    assert codes(ib_run(port())) == {"H012"}


def test_h005_port_not_active() -> None:
    finding = only(ib_run(port(state=3, state_name="ARMED")), "H005")
    assert "ARMED" in finding.title and finding.severity is Severity.WARNING


def test_h006_link_down() -> None:
    found = ib_run(port(state=1, state_name="DOWN", phys_state=3, phys_state_name="Disabled", sm_lid=0))
    assert "Disabled" in only(found, "H006").title
    assert not {"H005", "H009"} & codes(found)  # the physical link is the root cause


def test_h007_error_counters() -> None:
    finding = only(
        ib_run(port(counters=(("link_downed", 3), ("symbol_error", 1289), ("port_rcv_errors", 0)))), "H007"
    )
    assert finding.evidence["link_downed"] == 3 and "port_rcv_errors" not in finding.evidence
    assert "link_downed 3" in finding.title


def _roce_port(rows: list[tuple[str, str | None]], **changes: object) -> IbPortFacts:
    table = [GidEntry(i, g, t, "ens1f0" if t else None) for i, (g, t) in enumerate(rows)]
    gids = tuple((e.index, e.gid, e.type, e.netdev) for e in table if e.gid != ZERO_GID)
    return port(
        device="mlx5_0",
        link_layer="Ethernet",
        lid=0,
        sm_lid=0,
        gids=gids,
        netdev="ens1f0",
        roce_v2_index=select_roce_gid(table),
        gid_table_len=len(rows),
        **changes,
    )


def test_h008_roce_without_ipv4_gid() -> None:
    finding = only(ib_run(_roce_port(roce_table(None))), "H008")
    assert "ens1f0" in finding.title and "ip addr add" in finding.fix
    assert "H008" not in codes(ib_run(_roce_port(roce_table("10.10.0.7"))))
    assert "H008" not in codes(ib_run(_roce_port(roce_table(None)), env={"NCCL_IB_GID_INDEX": "1"}))


def test_h008_recomputes_with_env_settings() -> None:
    healthy = _roce_port(roce_table("10.10.0.7"))
    assert "H008" in codes(ib_run(healthy, env={"NCCL_IB_ADDR_RANGE": "192.168.0.0/16"}))
    assert "H008" not in codes(ib_run(healthy, env={"NCCL_IB_ADDR_RANGE": "10.10.0.0/16"}))
    v6 = _roce_port([*roce_table(None, length=2), (gid_text("fd00::7"), "RoCE v2")])
    assert "H008" not in codes(ib_run(v6, env={"NCCL_IB_ADDR_FAMILY": "AF_INET6"}))


def test_h009_no_subnet_manager() -> None:
    found = ib_run(port(state=2, state_name="INIT", sm_lid=0, lid=0))
    assert only(found, "H009").severity is Severity.ERROR and "H005" not in codes(found)
    assert "H009" not in codes(ib_run(_roce_port(roce_table("10.10.0.7"))))  # RoCE has no SM, by design


# --- H010-H013 ----------------------------------------------------------------------------------------------


def test_h010_docker_default_shm() -> None:
    finding = only(run(facts(limits=replace(GOOD_LIMITS, shm_total_bytes=64 << 20))), "H010")
    assert "64 MiB" in finding.title and "--shm-size" in finding.fix
    assert "H010" not in codes(run(facts(limits=replace(GOOD_LIMITS, shm_total_bytes=1 << 30))))


def test_h011_memlock_with_ib_only() -> None:
    limited = replace(GOOD_LIMITS, memlock_soft_bytes=65536, memlock_hard_bytes=65536)
    finding = only(run(facts(limits=limited, ib_ports=(port(),))), "H011")
    assert "64 KiB" in finding.title and "memlock=-1" in finding.fix
    assert "H011" not in codes(run(facts(limits=limited)))  # no IB devices: not needed
    assert "H011" not in codes(run(facts(ib_ports=(port(),))))  # unlimited
    assert "H011" not in codes(run(facts(limits=limited, ib_ports=(port(),)), env={"NCCL_IB_DISABLE": "1"}))


def test_h012_versions_line() -> None:
    host = facts(
        versions=VersionFacts(python="3.11.7", torch="2.5.1+cu124", torch_cuda="12.4", nccl="2.21.5")
    )
    finding = only(run(host), "H012")
    assert finding.title.startswith("python 3.11.7, torch 2.5.1+cu124, CUDA 12.4, NCCL 2.21.5")
    assert finding.severity is Severity.INFO


def test_h013_unreadable_facts_are_reported() -> None:
    found = run(facts(unreadable=("/sys/class/net/eth0/mtu: unreadable or malformed",)))
    assert only(found, "H013").title == "could not read /sys/class/net/eth0/mtu: unreadable or malformed"
    assert "H013" not in codes(run())


# --- helpers and robustness ---------------------------------------------------------------------------------


def test_is_multi_node() -> None:
    def inp(env: dict[str, str], master: MasterTarget | None) -> HostCheckInput:
        host = facts()
        return HostCheckInput(
            host,
            env,
            predict_nccl(host.interfaces, env),
            predict_gloo(host.interfaces, host.names, env),
            master=master,
        )

    assert is_multi_node(inp({}, MASTER)) is True
    assert is_multi_node(inp({}, MasterTarget("localhost", 1))) is False
    assert is_multi_node(inp({}, None)) is None
    assert is_multi_node(inp({"WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4"}, None)) is True
    assert is_multi_node(inp({"GROUP_WORLD_SIZE": "2"}, MasterTarget("127.0.0.1", 1))) is True
    assert is_multi_node(inp({"WORLD_SIZE": "x"}, None)) is None


def test_suggested_interface_without_route() -> None:
    host = facts(interfaces=(LO, iface("docker0", 2, ("172.17.0.1/16",)), iface("ens5", 3, ("10.0.0.7/24",))))
    inp = HostCheckInput(
        host, {}, predict_nccl(host.interfaces, {}), predict_gloo(host.interfaces, host.names, {})
    )
    assert suggested_interface(inp) == "ens5"


def test_all_host_codes_have_pages() -> None:
    registered = {r.code for r in all_rules()}
    expected = {f"H{n:03d}" for n in range(1, 14)} | {f"N{n:03d}" for n in range(1, 8)}
    assert expected <= registered


def test_evaluate_survives_odd_data() -> None:
    weird = facts(
        interfaces=(InterfaceFacts(name="x"),),
        ib_ports=(IbPortFacts(device="d", port=0),),
        limits=LimitsFacts(),
        names=NameFacts(),
    )
    found = run(weird, env={"WORLD_SIZE": "many"}, route=RouteFacts("10.0.0.1"))
    assert "H012" in codes(found)


def test_unknown_facts_are_not_reported_as_missing_interfaces() -> None:
    assert not {"N001", "N004"} & codes(run(facts(interfaces=(), unreadable=("sys/class/net: cannot list",))))
    no_hostname = [
        f for f in run(facts(names=NameFacts(resolve_error="hostname unreadable"))) if f.code == "N004"
    ]
    assert no_hostname == []


def test_hosts_line_never_suggests_a_loopback_address() -> None:
    host = facts(names=NameFacts(hostname="node7", resolved=("127.0.1.1",)))
    local = RouteFacts("127.0.0.1", "127.0.0.1", "127.0.0.1", "lo", local=True)
    finding = only(run(host, master=MasterTarget("127.0.0.1", 1), route=local), "H001")
    assert "`10.0.0.7 node7`" in finding.fix and "127.0.0.1 node7" not in finding.fix
