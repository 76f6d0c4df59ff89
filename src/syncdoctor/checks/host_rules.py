"""Host findings (H and N codes) from host facts, interface predictions, the route and reachability. Pure.

Each detector takes the whole :class:`HostCheckInput` and yields findings; :func:`evaluate` runs them
all. The detectors never do I/O and never raise for odd data: a fact that is ``None`` (unknown) makes
the detector that needs it stay silent, and ``check`` reports the unknown fact itself (H013).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from syncdoctor.checks.predict import InterfaceChoice
from syncdoctor.checks.values import env_int
from syncdoctor.host.infiniband import GidEntry, RoceGidSettings, select_roce_gid
from syncdoctor.host.interfaces import address_interface
from syncdoctor.host.names import is_loopback_address
from syncdoctor.host.types import HostFacts, IbPortFacts, ReachFacts, RouteFacts
from syncdoctor.kb import Finding, Severity
from syncdoctor.kb.pages import host as H
from syncdoctor.kb.pages import network as N

__all__ = ["DETECTORS", "HostCheckInput", "MasterTarget", "evaluate", "is_multi_node", "suggested_interface"]

log = logging.getLogger(__name__)

GIB = 1 << 30
_FALLBACK_RULES = ("docker*", "virbr*")
_VAR = {"nccl": "NCCL_SOCKET_IFNAME", "gloo": "GLOO_SOCKET_IFNAME"}
_LABEL = {"nccl": "NCCL", "gloo": "Gloo"}


@dataclass(frozen=True)
class MasterTarget:
    """Where rank 0's store listens: from ``--master HOST:PORT`` or MASTER_ADDR/MASTER_PORT."""

    host: str
    port: int | None
    origin: str = "MASTER_ADDR"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.port is not None else host


@dataclass(frozen=True)
class HostCheckInput:
    """Everything the host detectors look at."""

    facts: HostFacts
    env: Mapping[str, str]
    nccl: InterfaceChoice
    gloo: InterfaceChoice
    master: MasterTarget | None = None
    route: RouteFacts | None = None
    reach: ReachFacts | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def is_multi_node(inp: HostCheckInput) -> bool | None:
    """True when the job spans hosts, False when it cannot (loopback master), None when unknown."""
    world, local_world, groups = (
        env_int(inp.env, "WORLD_SIZE"),
        env_int(inp.env, "LOCAL_WORLD_SIZE"),
        env_int(inp.env, "GROUP_WORLD_SIZE"),
    )
    if (world and local_world and world > local_world) or (groups and groups > 1):
        return True
    if inp.master is not None:
        host = inp.master.host.strip().lower()
        address = inp.route.address if inp.route is not None else None
        if host in ("localhost", "localhost.localdomain") or is_loopback_address(host):
            return False
        if address is not None and is_loopback_address(address):
            return False
        return True
    return None


def suggested_interface(inp: HostCheckInput) -> str | None:
    """The interface to name in fixes: the one routing to the master, else the first usable one."""
    if inp.route is not None and inp.route.interface:
        iface = inp.facts.interface(inp.route.interface)
        if iface is None or not iface.loopback:
            return inp.route.interface
    for iface in inp.facts.interfaces:
        if (
            iface.running
            and not iface.loopback
            and iface.ipv4
            and not iface.name.startswith(("docker", "virbr"))
        ):
            return iface.name
    return None


def _route_text(inp: HostCheckInput) -> str:
    if inp.route is None or inp.master is None or not inp.route.interface:
        return ""
    return f"; {inp.route.interface} ({inp.route.source}) is the interface that routes to {inp.master.host}"


def _advertise_evidence(inp: HostCheckInput, choice: InterfaceChoice) -> dict[str, object]:
    evidence: dict[str, object] = {
        "backend": choice.backend,
        "interface": choice.interface,
        "address": choice.address,
        "selected by": choice.rule,
    }
    if inp.master is not None:
        evidence["master"] = str(inp.master)
    if inp.route is not None and inp.route.interface:
        evidence["route to master"] = f"{inp.route.interface} from {inp.route.source}"
    return evidence


def _fix_line(backend: str, interface: str | None) -> str:
    value = interface or "<interface that routes to MASTER_ADDR>"
    return f"export {_VAR[backend]}={value}   # on every node, naming that node's own interface"


def _advertise(inp: HostCheckInput) -> Iterator[Finding]:
    if not inp.facts.interfaces:
        return  # interfaces unknown (unreadable): H013 says so; predicting from nothing would be a guess
    multi = is_multi_node(inp)
    suggestion = suggested_interface(inp)
    for choice in (inp.gloo, inp.nccl):
        label = _LABEL[choice.backend]
        if choice.interface is None and choice.backend == "gloo" and inp.facts.names.hostname is None:
            continue  # the hostname is unknown, so Gloo's choice is unknown (not empty)
        if choice.interface is None:
            yield N.NO_USABLE_INTERFACE.finding(
                f"{label} will find no interface to use: {choice.problem or 'nothing qualifies'}",
                evidence={
                    "backend": choice.backend,
                    "selected by": choice.rule,
                    "interfaces": [
                        f"{i.name} ({'running' if i.running else 'not running'}, {', '.join(i.ipv4 + i.ipv6) or 'no address'})"
                        for i in inp.facts.interfaces
                    ],
                },
                fix=_fix_line(choice.backend, suggestion),
                key=choice.backend,
            )
            continue
        iface = inp.facts.interface(choice.interface)
        if choice.is_loopback:
            if multi is False:
                continue
            yield N.ADVERTISES_UNREACHABLE.finding(
                f"{label} will advertise {choice.address} ({choice.interface}, loopback): ranks on other hosts "
                f"cannot connect to it{_route_text(inp)}",
                evidence=_advertise_evidence(inp, choice),
                fix=_fix_line(choice.backend, suggestion),
                severity=Severity.ERROR if multi else Severity.WARNING,
                key=choice.backend,
            )
            continue
        if iface is not None and iface.running is False:
            yield N.ADVERTISES_UNREACHABLE.finding(
                f"{label} will advertise {choice.address} on {choice.interface}, which is not running (down or no "
                f"carrier): peers cannot connect to it",
                evidence=_advertise_evidence(inp, choice) | {"operstate": iface.operstate},
                fix=_fix_line(choice.backend, suggestion),
                severity=Severity.ERROR if multi is not False else Severity.WARNING,
                key=choice.backend,
            )
            continue
        if choice.backend == "nccl" and choice.rule.startswith(_FALLBACK_RULES):
            yield N.VIRTUAL_INTERFACE.finding(
                f"NCCL will fall back to {choice.interface} ({choice.address}): no other running interface has an "
                "address, and this bridge address is the same on every host",
                evidence=_advertise_evidence(inp, choice),
                fix=_fix_line("nccl", suggestion),
                severity=Severity.ERROR if multi else Severity.WARNING,
                key=choice.backend,
            )
            continue
        route = inp.route
        if route is not None and route.interface and choice.interface != route.interface:
            route_iface = inp.facts.interface(route.interface)
            if route_iface is not None and route_iface.loopback:
                continue
            yield N.INTERFACE_NOT_ROUTE.finding(
                f"{label} will advertise {choice.interface} ({choice.address}) but {route.interface} ({route.source}) "
                f"is the interface that routes to the master {route.address}",
                evidence=_advertise_evidence(inp, choice),
                fix=_fix_line(choice.backend, route.interface),
                key=choice.backend,
            )


def _hostname(inp: HostCheckInput) -> Iterator[Finding]:
    names = inp.facts.names
    if names.hostname is None:
        return
    gloo_pinned = len(inp.env.get("GLOO_SOCKET_IFNAME", "")) > 1
    suggestion = suggested_interface(inp)
    source = inp.route.source if inp.route is not None and inp.route.source else None
    if source is not None and is_loopback_address(source):
        source = None  # the master is this host's loopback: its address says nothing about the peers'
    if source is None and suggestion is not None:
        iface = inp.facts.interface(suggestion)
        source = iface.ipv4[0].split("/", 1)[0] if iface is not None and iface.ipv4 else None
    hosts_line = f"{source or '<this node address>'} {names.hostname}"
    if names.resolve_error or not names.resolved:
        yield H.HOSTNAME_UNRESOLVABLE.finding(
            f"hostname {names.hostname} does not resolve ({names.resolve_error or 'no address'}): Gloo falls back "
            "to 127.0.0.1",
            evidence={"hostname": names.hostname, "error": names.resolve_error},
            fix=f"add `{hosts_line}` to /etc/hosts, or {_fix_line('gloo', suggestion)}",
        )
        return
    first = names.resolved[0]
    if is_loopback_address(first):
        yield H.HOSTNAME_LOOPBACK.finding(
            f"hostname {names.hostname} resolves to {first} (loopback)"
            + ("" if not gloo_pinned else "; GLOO_SOCKET_IFNAME is set, so Gloo does not use it"),
            evidence={"hostname": names.hostname, "resolves to": list(names.resolved)},
            fix=f"map it to this node's address in /etc/hosts (`{hosts_line}`), or {_fix_line('gloo', suggestion)}",
            severity=Severity.INFO if gloo_pinned else Severity.WARNING,
        )
    elif (
        all(address_interface(inp.facts.interfaces, a) is None for a in names.resolved)
        and inp.facts.interfaces
    ):
        yield H.HOSTNAME_UNRESOLVABLE.finding(
            f"hostname {names.hostname} resolves to {', '.join(names.resolved)}, none of them on this host: Gloo "
            "falls back to 127.0.0.1",
            evidence={"hostname": names.hostname, "resolves to": list(names.resolved)},
            fix=f"fix the /etc/hosts or DNS entry (`{hosts_line}`), or {_fix_line('gloo', suggestion)}",
        )


def _mtu(inp: HostCheckInput) -> Iterator[Finding]:
    names = list(inp.nccl.candidates)
    if inp.route is not None and inp.route.interface and inp.route.interface not in names:
        names.append(inp.route.interface)
    mtus = {}
    for name in names:
        iface = inp.facts.interface(name)
        if iface is not None and not iface.loopback and iface.mtu is not None:
            mtus[name] = iface.mtu
    if len(set(mtus.values())) > 1:
        yield H.MTU_MISMATCH.finding(
            "interfaces that may carry the job's traffic have different MTUs: "
            + ", ".join(f"{n} {m}" for n, m in mtus.items()),
            evidence={"mtu": mtus},
            fix="use one MTU end to end on the job's network, on every node and switch port",
        )


def _ib_in_use(inp: HostCheckInput) -> bool:
    disabled = (
        inp.env.get("NCCL_IB_DISABLE", "").strip() == "1" or inp.env.get("NCCL_NET", "").lower() == "socket"
    )
    return not disabled and any(p.active for p in inp.facts.ib_ports)


def _speed(inp: HostCheckInput) -> Iterator[Finding]:
    iface = inp.facts.interface(inp.nccl.interface) if inp.nccl.interface else None
    if iface is None or iface.loopback or _ib_in_use(inp) or iface.speed_mbps is not None:
        return
    yield H.SPEED_UNKNOWN.finding(
        f"{iface.name} has no readable speed: NCCL's socket transport will assume 10 Gbps",
        evidence={"interface": iface.name, "file": f"/sys/class/net/{iface.name}/speed"},
        fix="nothing required; measure with nccl-tests if socket bandwidth matters",
    )


def _port_name(port: IbPortFacts) -> str:
    return f"{port.device} port {port.port}"


def _ib_ports(inp: HostCheckInput) -> Iterator[Finding]:
    for port in inp.facts.ib_ports:
        name = _port_name(port)
        evidence = {
            "port": name,
            "state": f"{port.state}: {port.state_name}" if port.state is not None else None,
            "phys_state": f"{port.phys_state}: {port.phys_state_name}"
            if port.phys_state is not None
            else None,
            "link_layer": port.link_layer,
            "rate": port.rate_text,
        }
        phys_up = port.phys_state == 5
        if port.phys_state is not None and not phys_up:
            yield H.IB_LINK_DOWN.finding(
                f"{name}: physical link is {port.phys_state_name} (not LinkUp); NCCL cannot use it",
                evidence=evidence,
                fix=f"check the cable and switch port (`mlxlink -d {port.device}`), or exclude it: "
                f"export NCCL_IB_HCA=^={port.device}",
                key=name,
            )
        elif port.link_layer == "InfiniBand" and phys_up and port.sm_lid == 0:
            yield H.IB_NO_SUBNET_MANAGER.finding(
                f"{name}: InfiniBand link is up but no Subnet Manager configured it (sm_lid 0x0, state "
                f"{port.state_name or 'unknown'})",
                evidence=evidence | {"sm_lid": port.sm_lid, "lid": port.lid},
                fix="start a subnet manager on the fabric (`systemctl start opensm` on one node) and check with `sminfo`",
                key=name,
            )
        elif port.state is not None and not port.active:
            yield H.IB_PORT_NOT_ACTIVE.finding(
                f"{name}: state {port.state_name} (not ACTIVE); NCCL skips this port",
                evidence=evidence,
                fix=f"check `ibstat {port.device}`; on IB check the subnet manager (`sminfo`), on RoCE the netdev "
                f"{port.netdev or ''} and switch port",
                key=name,
            )
        errors = {k: v for k, v in port.counters if v > 0}
        if errors:
            yield H.IB_ERROR_COUNTERS.finding(
                f"{name}: error counters are non-zero: " + ", ".join(f"{k} {v}" for k, v in errors.items()),
                evidence={"port": name, **errors},
                fix=f"watch whether they grow (`watch -d cat /sys/class/infiniband/{port.device}/ports/{port.port}/"
                f"counters/{next(iter(errors))}`); if so check the cable/transceiver and switch port",
                key=name,
            )
        yield from _roce_gid(inp, port, evidence)


def _roce_gid(inp: HostCheckInput, port: IbPortFacts, evidence: Mapping[str, object]) -> Iterator[Finding]:
    if port.link_layer != "Ethernet" or not port.active or inp.env.get("NCCL_IB_GID_INDEX", "").strip():
        return
    settings = RoceGidSettings.from_env(inp.env)
    index = port.roce_v2_index
    if settings != RoceGidSettings():
        known = {i: (gid, gtype) for i, gid, gtype, _ in port.gids}
        length = max(port.gid_table_len or 0, max(known, default=-1) + 1)
        table = [
            GidEntry(i, *known.get(i, ("0000:0000:0000:0000:0000:0000:0000:0000", None)))
            for i in range(length)
        ]
        index = select_roce_gid(table, settings)
    if index is not None:
        return
    family = "IPv4" if settings.family == 4 else "IPv6"
    yield H.ROCE_NO_ROUTABLE_GID.finding(
        f"{_port_name(port)} (RoCE, netdev {port.netdev or 'unknown'}): no RoCE v{settings.roce_version} GID with an "
        f"{family} address; NCCL's GID auto-selection falls back to index 0",
        evidence={**evidence, "gids": [f"{i} {gid} {gtype or '?'}" for i, gid, gtype, _ in port.gids]},
        fix=f"give {port.netdev or 'the RoCE netdev'} its {family} address (`ip addr add <address>/<len> dev "
        f"{port.netdev or '<netdev>'}`) so the kernel creates the RoCE v2 GID",
        key=_port_name(port),
    )


def _limits(inp: HostCheckInput) -> Iterator[Finding]:
    limits = inp.facts.limits
    if limits.shm_total_bytes is not None and limits.shm_total_bytes < GIB:
        yield H.SHM_TOO_SMALL.finding(
            f"/dev/shm is {limits.shm_total_bytes / (1 << 20):.0f} MiB (< 1 GiB): NCCL can fail with "
            "'failed to extend /dev/shm'",
            evidence={"size_bytes": limits.shm_total_bytes, "free_bytes": limits.shm_free_bytes},
            fix="docker run --shm-size=1g (or --ipc=host); Kubernetes: an emptyDir with medium Memory at /dev/shm",
        )
    soft = limits.memlock_soft_bytes
    ib_disabled = inp.env.get("NCCL_IB_DISABLE", "").strip() == "1"
    if inp.facts.ib_ports and soft is not None and soft != -1 and not ib_disabled:
        yield H.MEMLOCK_LIMITED.finding(
            f"locked-memory limit is {soft // 1024} KiB, not unlimited, on a host with IB/RoCE devices: "
            "ibv_reg_mr can fail",
            evidence={
                "memlock_soft_bytes": soft,
                "memlock_hard_bytes": limits.memlock_hard_bytes,
                "ib_devices": sorted({p.device for p in inp.facts.ib_ports}),
            },
            fix="/etc/security/limits.conf: `* soft memlock unlimited` and `* hard memlock unlimited`; "
            "Docker: --ulimit memlock=-1:-1; systemd: LimitMEMLOCK=infinity",
        )


def _versions(inp: HostCheckInput) -> Iterator[Finding]:
    v = inp.facts.versions
    gpus = inp.facts.gpus
    parts = [f"python {v.python or '?'}", f"torch {v.torch or 'not installed'}"]
    if v.torch:
        parts.append(f"CUDA {v.torch_cuda or 'none (CPU build)'}")
    parts.append(f"NCCL {v.nccl or 'unknown'}")
    if v.driver:
        parts.append(f"driver {v.driver}")
    parts.append(f"{len(gpus)} GPU(s)" + (f" ({gpus[0].name})" if gpus else ""))
    yield H.VERSIONS.finding(
        ", ".join(parts),
        evidence={
            "python": v.python,
            "torch": v.torch,
            "cuda": v.torch_cuda,
            "nccl": v.nccl,
            "driver": v.driver,
            "gpus": [g.name for g in gpus],
        },
    )


def _unreadable(inp: HostCheckInput) -> Iterator[Finding]:
    for note in (*inp.facts.unreadable, *inp.notes):
        yield H.FACT_UNREADABLE.finding(f"could not read {note}", evidence={"detail": note}, key=note)


def _reachability(inp: HostCheckInput) -> Iterator[Finding]:
    master = inp.master
    if master is None:
        return
    reach, route = inp.reach, inp.route
    if reach is not None:
        evidence = {
            "master": str(master),
            "from": master.origin,
            "address": reach.address,
            "result": reach.result,
            "detail": reach.detail,
        }
        where = f"{master} ({master.origin})"
        if reach.result == "refused":
            yield N.MASTER_REFUSED.finding(
                f"{where} is unreachable: connection refused, nothing listens on port {reach.port}",
                evidence=evidence,
                fix=f"before launch this is expected; otherwise use the port rank 0 listens on (`ss -ltnp` on "
                f"{master.host}) or open TCP {reach.port} in its firewall",
            )
        elif reach.result in ("timeout", "unreachable", "error"):
            yield N.MASTER_UNREACHABLE.finding(
                f"{where} is unreachable: {reach.result} ({reach.detail})",
                evidence=evidence,
                fix=f"check `ip route get {reach.address or master.host}` and allow TCP {reach.port} between the nodes",
                severity=Severity.WARNING if reach.result == "error" else None,
            )
        elif reach.result == "unresolvable":
            yield N.MASTER_UNRESOLVABLE.finding(
                f"{master.origin} {master.host} does not resolve: {reach.detail}",
                evidence=evidence,
                fix="export MASTER_ADDR=<the master's IP address>, or make the name resolvable on every node",
            )
        return
    if route is not None and route.error:
        evidence = {"master": str(master), "from": master.origin, "error": route.error}
        if route.address is None:
            yield N.MASTER_UNRESOLVABLE.finding(
                f"{master.origin} {master.host} does not resolve: {route.error}",
                evidence=evidence,
                fix="export MASTER_ADDR=<the master's IP address>, or make the name resolvable on every node",
            )
        else:
            yield N.MASTER_UNREACHABLE.finding(
                f"{master} is unreachable from this host: {route.error}",
                evidence=evidence,
                fix=f"check `ip route get {route.address}`: this host needs a route to the master",
            )


Detector = Callable[[HostCheckInput], Iterable[Finding]]

# Every host detector, in report order. Each reads only the inputs its name says.
DETECTORS: tuple[tuple[str, Detector], ...] = (
    ("advertised interfaces (N001-N004)", _advertise),
    ("hostname (H001, H002)", _hostname),
    ("reachability (N005-N007)", _reachability),
    ("MTU (H003)", _mtu),
    ("speed (H004)", _speed),
    ("IB/RoCE ports (H005-H009)", _ib_ports),
    ("limits (H010, H011)", _limits),
    ("versions (H012)", _versions),
    ("unreadable facts (H013)", _unreadable),
)


def evaluate(inp: HostCheckInput) -> list[Finding]:
    """All host findings for this input (a detector that fails is logged and reported as H013)."""
    findings: list[Finding] = []
    for name, detector in DETECTORS:
        try:
            findings.extend(detector(inp))
        except Exception as exc:  # a detector bug must not hide the others
            log.debug("detector %s failed", name, exc_info=True)
            findings.append(
                H.FACT_UNREADABLE.finding(
                    f"could not evaluate {name}: {type(exc).__name__}: {exc}",
                    evidence={"detector": name},
                    key=name,
                )
            )
    return findings
