"""Frozen records of host facts. Pure: no I/O. ``None`` always means "could not be read" (unknown)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "GpuFacts",
    "HostFacts",
    "IbPortFacts",
    "InterfaceFacts",
    "LimitsFacts",
    "NameFacts",
    "ReachFacts",
    "RouteFacts",
    "VersionFacts",
]


@dataclass(frozen=True)
class InterfaceFacts:
    """A network interface from ``/sys/class/net/<name>`` and the address table.

    Attributes:
        name: interface name (``eth0``, ``ib0``, ``lo``).
        operstate: ``up``, ``down``, ``unknown``... (``/sys/class/net/<if>/operstate``).
        carrier: link detected (``carrier`` file), None when unreadable (e.g. interface down).
        up: IFF_UP flag; running: IFF_RUNNING (what NCCL requires).
        loopback: IFF_LOOPBACK.
        mtu: bytes; speed_mbps: Mbit/s from ``speed`` (None when unknown or -1).
        ipv4, ipv6: addresses with prefix length, e.g. ``10.0.0.1/24``.
        kind: ``loopback``, ``ether``, ``infiniband``, ``veth``, ``bridge``, ``docker``... (best effort).
        pci_vendor: ``device/vendor`` (``0x15b3`` Mellanox), None for virtual interfaces.
        ifindex: kernel interface index; ``getifaddrs`` (and so NCCL) lists interfaces in this order.
        virtual: the device lives under ``/sys/devices/virtual`` (veth, bridge, docker0, lo...).
    """

    name: str
    operstate: str | None = None
    carrier: bool | None = None
    up: bool | None = None
    running: bool | None = None
    loopback: bool = False
    mtu: int | None = None
    speed_mbps: int | None = None
    ipv4: tuple[str, ...] = ()
    ipv6: tuple[str, ...] = ()
    kind: str | None = None
    pci_vendor: str | None = None
    ifindex: int | None = None
    virtual: bool | None = None

    @property
    def has_address(self) -> bool:
        return bool(self.ipv4 or self.ipv6)


@dataclass(frozen=True)
class IbPortFacts:
    """One port of an IB/RoCE device from ``/sys/class/infiniband/<dev>/ports/<port>``.

    Attributes:
        device: ``mlx5_0``; port: 1-based port number.
        state: numeric port state (4 = ACTIVE) and state_name (``ACTIVE``).
        phys_state: numeric physical state (5 = LinkUp) and phys_state_name.
        rate_gbps: from ``rate`` (``200 Gb/sec (4X HDR)`` -> 200.0); rate_text: the raw text.
        link_layer: ``InfiniBand``, ``Ethernet`` (RoCE) or ``Unknown``.
        gids: non-empty GID table entries as (index, gid, type, netdev).
        roce_v2_index: the GID index NCCL >= 2.21 would auto-select (RoCE only), None if none qualifies.
        counters: selected error counters (``link_downed``, ``symbol_error``, ``port_rcv_errors``...).
        netdev: the associated network interface (RoCE), when known.
        lid, sm_lid: the port's LID and the Subnet Manager's LID (IB; ``sm_lid`` 0 means no SM).
        gid_table_len: number of GID table slots (``gids/`` entries), set or not.
    """

    device: str
    port: int
    state: int | None = None
    state_name: str | None = None
    phys_state: int | None = None
    phys_state_name: str | None = None
    rate_gbps: float | None = None
    rate_text: str | None = None
    link_layer: str | None = None
    gids: tuple[tuple[int, str, str | None, str | None], ...] = ()
    roce_v2_index: int | None = None
    counters: tuple[tuple[str, int], ...] = ()
    netdev: str | None = None
    lid: int | None = None
    sm_lid: int | None = None
    gid_table_len: int | None = None

    @property
    def active(self) -> bool:
        return self.state == 4


@dataclass(frozen=True)
class LimitsFacts:
    """Resource limits that break NCCL: /dev/shm size and free space, locked-memory limit (bytes, -1 = unlimited)."""

    shm_total_bytes: int | None = None
    shm_free_bytes: int | None = None
    memlock_soft_bytes: int | None = None
    memlock_hard_bytes: int | None = None


@dataclass(frozen=True)
class NameFacts:
    """The hostname and what it resolves to (what Gloo uses when GLOO_SOCKET_IFNAME is unset)."""

    hostname: str | None = None
    fqdn: str | None = None
    resolved: tuple[str, ...] = ()
    resolve_error: str | None = None


@dataclass(frozen=True)
class GpuFacts:
    """One GPU, when NVML is available."""

    index: int
    name: str
    driver: str | None = None
    memory_bytes: int | None = None
    pci_bus_id: str | None = None


@dataclass(frozen=True)
class VersionFacts:
    """Versions of the software stack; None when not installed or unreadable."""

    python: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    nccl: str | None = None
    gloo_available: bool | None = None
    nccl_available: bool | None = None
    driver: str | None = None


@dataclass(frozen=True)
class RouteFacts:
    """How the kernel reaches a destination (MASTER_ADDR): the source address and the interface holding it.

    Attributes:
        target: the host name or address asked for; address: what it resolved to.
        source: the local source address the kernel picked (UDP ``connect`` + ``getsockname``).
        interface: the local interface that holds ``source`` (None when unknown).
        local: the destination is an address of this host (this host is the master).
        error: why the route could not be determined (unresolvable, no route), else None.
    """

    target: str
    address: str | None = None
    source: str | None = None
    interface: str | None = None
    local: bool = False
    error: str | None = None


@dataclass(frozen=True)
class ReachFacts:
    """The result of a TCP connect to MASTER_ADDR:MASTER_PORT.

    Attributes:
        host, port: what was tried; address: what the host resolved to.
        result: ``open``, ``refused``, ``timeout``, ``unreachable`` (no route), ``unresolvable`` or ``error``.
        detail: the error text; elapsed_s: how long the attempt took; timeout_s: the limit used.
    """

    host: str
    port: int
    result: str
    address: str | None = None
    detail: str | None = None
    elapsed_s: float | None = None
    timeout_s: float | None = None


@dataclass(frozen=True)
class HostFacts:
    """Everything ``check`` reads about one host; probe gathers one per rank."""

    names: NameFacts = field(default_factory=NameFacts)
    interfaces: tuple[InterfaceFacts, ...] = ()
    ib_ports: tuple[IbPortFacts, ...] = ()
    limits: LimitsFacts = field(default_factory=LimitsFacts)
    versions: VersionFacts = field(default_factory=VersionFacts)
    gpus: tuple[GpuFacts, ...] = ()
    unreadable: tuple[str, ...] = ()  # facts that could not be read, with the reason

    def interface(self, name: str) -> InterfaceFacts | None:
        return next((i for i in self.interfaces if i.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
