"""IB and RoCE ports from ``/sys/class/infiniband`` under a configurable root, and NCCL's RoCE GID choice.

``read_ib_ports`` does file I/O (reads only). The parsers and :func:`select_roce_gid` are pure:
``select_roce_gid`` replays NCCL's automatic GID selection (NCCL >= 2.21, ``ncclIbGetGidIndex`` /
``ncclUpdateGidIndex`` in src/transport/net_ib): start at index 0 and walk the later indexes; move to a
candidate of the wanted address family (``NCCL_IB_ADDR_FAMILY``, IPv4-mapped by default) inside
``NCCL_IB_ADDR_RANGE`` when the current GID is of the other family, or when the candidate is valid
(configured, not link-local), of type ``RoCE v<NCCL_IB_ROCE_VERSION_NUM>`` (v2 by default) and the current
one is invalid or of another version. So the first valid v2 GID of the family wins in practice (index 3
in the usual mlx5 layout); a later one of the same version does not replace it.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from syncdoctor.host.sysfs import parse_int, read_text
from syncdoctor.host.types import IbPortFacts

__all__ = [
    "ERROR_COUNTERS",
    "GidEntry",
    "RoceGidSettings",
    "gid_family",
    "gid_is_valid",
    "parse_gid",
    "parse_gid_type",
    "parse_rate",
    "parse_state",
    "read_ib_ports",
    "select_roce_gid",
]

log = logging.getLogger(__name__)

# Port counters (counters/) and vendor counters (hw_counters/) whose growth means link or transport trouble.
ERROR_COUNTERS = (
    "link_downed",
    "symbol_error",
    "port_rcv_errors",
    "link_error_recovery",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_remote_physical_errors",
    "port_xmit_discards",
)
HW_ERROR_COUNTERS = ("local_ack_timeout_err", "rnr_nak_retry_err", "out_of_sequence", "packet_seq_err")

_STATE_RE = re.compile(r"^\s*(\d+)\s*:\s*(\S.*?)\s*$")
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec")
_ZERO_GID = bytes(16)


@dataclass(frozen=True)
class GidEntry:
    """One GID table slot: index, the GID text (None when unreadable), the type text, the netdev."""

    index: int
    gid: str | None
    type: str | None = None
    netdev: str | None = None


@dataclass(frozen=True)
class RoceGidSettings:
    """The environment that steers NCCL's RoCE GID auto-selection."""

    family: int = 4  # NCCL_IB_ADDR_FAMILY: 4 (AF_INET, default) or 6 (AF_INET6)
    roce_version: int = 2  # NCCL_IB_ROCE_VERSION_NUM
    addr_range: str | None = None  # NCCL_IB_ADDR_RANGE, e.g. "10.0.0.0/16"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RoceGidSettings:
        family = 6 if env.get("NCCL_IB_ADDR_FAMILY", "").strip() == "AF_INET6" else 4
        version = parse_int(env.get("NCCL_IB_ROCE_VERSION_NUM"), 0)
        return cls(
            family=family,
            roce_version=2 if version is None else version,
            addr_range=env.get("NCCL_IB_ADDR_RANGE") or None,
        )


def parse_state(text: str | None) -> tuple[int | None, str | None]:
    """``4: ACTIVE`` -> (4, "ACTIVE"); anything else -> (None, None)."""
    match = _STATE_RE.match(text or "")
    if not match:
        return None, None
    return int(match.group(1)), match.group(2)


def parse_rate(text: str | None) -> float | None:
    """``200 Gb/sec (4X HDR)`` -> 200.0; ``2.5 Gb/sec (1X SDR)`` -> 2.5; else None."""
    match = _RATE_RE.match(text or "")
    return float(match.group(1)) if match else None


def parse_gid(text: str | None) -> bytes | None:
    """A GID as 16 bytes (``fe80:0000:...``), None when malformed."""
    if not text:
        return None
    try:
        return ipaddress.IPv6Address(text.strip()).packed
    except ValueError:
        return None


def parse_gid_type(text: str | None) -> int:
    """The RoCE version of a ``gid_attrs/types`` entry: 1, 2, or -1 when unknown (as NCCL does)."""
    value = (text or "").strip()
    if value.startswith(("IB/RoCE v1", "RoCE v1")):
        return 1
    if value.startswith("RoCE v2"):
        return 2
    return -1


def gid_family(raw: bytes) -> int:
    """4 for IPv4-mapped GIDs (``::ffff:a.b.c.d``, or the ``ff0e::ffff:`` multicast form), else 6."""
    mapped = raw[:10] == bytes(10) and raw[10:12] == b"\xff\xff"
    mapped_multicast = raw[:4] == b"\xff\x0e\x00\x00" and raw[4:10] == bytes(6) and raw[10:12] == b"\xff\xff"
    return 4 if mapped or mapped_multicast else 6


def gid_is_valid(raw: bytes) -> bool:
    """Configured (not all zero, not a bare ``fe80::``) and not link-local (``fe80::/64``)."""
    if raw == _ZERO_GID:
        return False
    link_local_prefix = raw[:4] == b"\xfe\x80\x00\x00" and raw[4:8] == bytes(4)
    return not link_local_prefix


def _in_range(raw: bytes, family: int, addr_range: str | None) -> bool:
    if not addr_range:
        return True
    try:
        network = ipaddress.ip_network(addr_range.strip(), strict=False)
    except ValueError:
        return True  # NCCL ignores a malformed range
    if family == 4:
        if network.version != 4:
            return True
        return ipaddress.IPv4Address(raw[12:]) in network
    if network.version != 6:
        return True
    return ipaddress.IPv6Address(raw) in network


def select_roce_gid(table: Sequence[GidEntry], settings: RoceGidSettings = RoceGidSettings()) -> int | None:
    """The GID index NCCL auto-selects on a RoCE port, or None when no index qualifies.

    ``table`` is the whole table in index order (unset entries as zero GIDs). NCCL itself never fails
    here: with nothing qualifying it stays on index 0 (usually RoCE v1 link-local), which cannot be
    routed; that case returns None so callers can report it.
    """
    raws = [parse_gid(entry.gid) or _ZERO_GID for entry in table]
    versions = [parse_gid_type(entry.type) for entry in table]
    if not raws:
        return None
    want = settings.family
    current = 0
    for candidate in range(1, len(raws)):
        cand_raw, cur_raw = raws[candidate], raws[current]
        cand_family, cur_family = gid_family(cand_raw), gid_family(cur_raw)
        in_range = _in_range(cand_raw, want, settings.addr_range)
        if cand_family != cur_family and cand_family == want and in_range:
            current = candidate
            continue
        if cand_family != want or not gid_is_valid(cand_raw) or not in_range:
            continue
        if (versions[current] != versions[candidate] or not gid_is_valid(cur_raw)) and (
            versions[candidate] == settings.roce_version
        ):
            current = candidate
    chosen = raws[current]
    qualifies = (
        gid_is_valid(chosen)
        and gid_family(chosen) == want
        and versions[current] == settings.roce_version
        and _in_range(chosen, want, settings.addr_range)
    )
    return current if qualifies else None


def _numeric_entries(directory: Path) -> list[int]:
    try:
        return sorted(int(p.name) for p in directory.iterdir() if p.name.isdecimal())
    except OSError:
        return []


def _read_gid_table(port: Path) -> list[GidEntry]:
    table = []
    for index in _numeric_entries(port / "gids"):
        table.append(
            GidEntry(
                index,
                read_text(port / "gids" / str(index)),
                read_text(port / "gid_attrs" / "types" / str(index)),
                read_text(port / "gid_attrs" / "ndevs" / str(index)),
            )
        )
    return table


def _read_counters(port: Path) -> tuple[tuple[str, int], ...]:
    values = []
    for directory, names in (("counters", ERROR_COUNTERS), ("hw_counters", HW_ERROR_COUNTERS)):
        for name in names:
            value = parse_int(read_text(port / directory / name), 10)
            if value is not None:
                values.append((name, value))
    return tuple(values)


def _read_port(device_dir: Path, port_number: int, unreadable: list[str]) -> IbPortFacts:
    port = device_dir / "ports" / str(port_number)
    state, state_name = parse_state(read_text(port / "state"))
    phys, phys_name = parse_state(read_text(port / "phys_state"))
    if state is None:
        unreadable.append(f"{port / 'state'}: unreadable or malformed")
    rate_text = read_text(port / "rate")
    link_layer = read_text(port / "link_layer")
    table = _read_gid_table(port)
    gids = tuple(
        (entry.index, entry.gid, entry.type, entry.netdev)
        for entry in table
        if entry.gid is not None and (parse_gid(entry.gid) or _ZERO_GID) != _ZERO_GID
    )
    netdev = next((entry.netdev for entry in table if entry.netdev), None)
    if netdev is None:
        try:
            netdev = next((p.name for p in sorted((device_dir / "device" / "net").iterdir())), None)
        except OSError:
            netdev = None
    roce_index = select_roce_gid(table) if link_layer == "Ethernet" else None
    return IbPortFacts(
        device=device_dir.name,
        port=port_number,
        state=state,
        state_name=state_name,
        phys_state=phys,
        phys_state_name=phys_name,
        rate_gbps=parse_rate(rate_text),
        rate_text=rate_text,
        link_layer=link_layer,
        gids=gids,
        roce_v2_index=roce_index,
        counters=_read_counters(port),
        netdev=netdev,
        lid=parse_int(read_text(port / "lid"), 0),
        sm_lid=parse_int(read_text(port / "sm_lid"), 0),
        gid_table_len=len(table),
    )


def read_ib_ports(root: Path) -> tuple[tuple[IbPortFacts, ...], list[str]]:
    """Every port of every device under ``<root>/sys/class/infiniband`` (none is normal: no IB here)."""
    base = root / "sys" / "class" / "infiniband"
    if not base.exists():
        return (), []
    unreadable: list[str] = []
    try:
        devices = sorted(p for p in base.iterdir() if p.is_dir())
    except OSError as exc:
        return (), [f"{base}: cannot list IB devices ({exc.strerror or exc})"]
    ports: list[IbPortFacts] = []
    for device in devices:
        numbers = _numeric_entries(device / "ports")
        if not numbers:
            unreadable.append(f"{device / 'ports'}: no readable ports")
        ports.extend(_read_port(device, number, unreadable) for number in numbers)
    return tuple(ports), unreadable
