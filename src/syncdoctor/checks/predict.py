"""Which interface and address NCCL's bootstrap and Gloo will advertise under an environment. Pure: no I/O.

NCCL (``ncclFindInterfaces`` in src/misc/socket.cc, ``ncclOsFindInterfaces`` in src/os/linux.cc): walk the
addresses the way ``getifaddrs`` lists them (IPv4 first, then IPv6, each by interface index), keep
IPv4/IPv6 addresses of interfaces flagged IFF_RUNNING (IPv6 loopback skipped), filtered by
``NCCL_SOCKET_FAMILY``; ``NCCL_SOCKET_IFNAME`` (when longer than one character) is a comma list of
prefixes, ``^`` first to exclude, then ``=`` for exact names. Unset, NCCL tries ``ib`` prefixes, then
the subnet of ``NCCL_COMM_ID``, then anything except ``docker,lo,virbr``, then ``docker``, ``lo``,
``virbr``. The bootstrap uses the first match; NET/Socket up to 16.

Gloo (``ProcessGroupGloo::createDefaultDevice``): ``GLOO_SOCKET_IFNAME`` (longer than one character)
is a comma list of exact interface names. Unset, Gloo resolves the hostname and uses the first address
it can bind (any local address, including 127.0.1.1); when none, it logs "Unable to resolve hostname to
a (local) address. Using the loopback address as fallback." and uses 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from syncdoctor.checks.values import parse_nccl_list
from syncdoctor.host.interfaces import address_interface, address_table, bare_address
from syncdoctor.host.names import is_loopback_address
from syncdoctor.host.types import InterfaceFacts, NameFacts

__all__ = [
    "InterfaceChoice",
    "match_interface_list",
    "predict_gloo",
    "predict_nccl",
]

NCCL_MAX_IFS = 16
GLOO_LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class InterfaceChoice:
    """What a backend will advertise.

    Attributes:
        backend: ``nccl`` or ``gloo``.
        interface: the interface (None when nothing qualifies: the job will fail at init).
        address: the address on it that peers must connect to.
        rule: which selection rule decided, in words (e.g. ``NCCL_SOCKET_IFNAME=eth``).
        candidates: every interface the rule matched, in order (NCCL NET/Socket uses up to 16).
        problem: why nothing qualifies, when ``interface`` is None.
    """

    backend: str
    interface: str | None
    address: str | None
    rule: str
    candidates: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def is_loopback(self) -> bool:
        return bool(self.address and is_loopback_address(self.address))

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"candidates": list(self.candidates)}


def match_interface_list(name: str, exact: bool, entries: Sequence[str]) -> bool:
    """``matchIfList``: an empty list matches everything; else a prefix (or exact) match of any entry."""
    if not entries:
        return True
    return any(name == entry if exact else name.startswith(entry) for entry in entries)


def _find(
    interfaces: Sequence[InterfaceFacts], spec: str, family: int | None, limit: int = NCCL_MAX_IFS
) -> list[tuple[str, str]]:
    parsed = parse_nccl_list(spec)
    exclude, exact, entries = parsed.exclude, parsed.exact, [entry.name for entry in parsed.entries]
    found: list[tuple[str, str]] = []
    for interface, cidr, fam in address_table(interfaces):
        if len(found) >= limit:
            break
        if interface.running is not True or (family is not None and fam != family):
            continue
        if fam == 6 and is_loopback_address(bare_address(cidr)):
            continue
        if match_interface_list(interface.name, exact, entries) == exclude:
            continue
        if any(name == interface.name for name, _ in found):
            continue
        found.append((interface.name, bare_address(cidr)))
    return found


def _comm_id_address(comm_id: str) -> str | None:
    text = comm_id.strip()
    host = text[1:].split("]", 1)[0].split("%", 1)[0] if text.startswith("[") else text.rsplit(":", 1)[0]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None  # a host name: NCCL resolves it; a pure prediction cannot


def _match_subnet(interfaces: Sequence[InterfaceFacts], remote: str) -> list[tuple[str, str]]:
    target = ipaddress.ip_address(remote)
    for interface, cidr, _fam in address_table(interfaces):
        try:
            network = ipaddress.ip_interface(cidr).network
        except ValueError:
            continue
        if network.version == target.version and target in network:
            return [(interface.name, bare_address(cidr))]
    return []


def _socket_family(env: Mapping[str, str]) -> int | None:
    value = env.get("NCCL_SOCKET_FAMILY", "").strip()
    return {"AF_INET": 4, "AF_INET6": 6}.get(value)


def predict_nccl(interfaces: Sequence[InterfaceFacts], env: Mapping[str, str]) -> InterfaceChoice:
    """The interface and address NCCL's bootstrap will use, following its documented order."""
    family = _socket_family(env)
    user = env.get("NCCL_SOCKET_IFNAME")
    if user is not None and len(user) > 1:
        found = _find(interfaces, user, family)
        rule = f"NCCL_SOCKET_IFNAME={user}"
        if not found:
            return InterfaceChoice(
                "nccl",
                None,
                None,
                rule,
                problem=f"NCCL_SOCKET_IFNAME={user} matches no running interface with an address; NCCL "
                "init fails with 'Bootstrap : no socket interface found'",
            )
        return InterfaceChoice("nccl", found[0][0], found[0][1], rule, tuple(n for n, _ in found))
    steps: list[tuple[str, list[tuple[str, str]]]] = [
        ("ib* interfaces (tried first)", _find(interfaces, "ib", family))
    ]
    comm_id = env.get("NCCL_COMM_ID")
    if comm_id and len(comm_id) > 1:
        remote = _comm_id_address(comm_id)
        if remote is not None:
            steps.append((f"same subnet as NCCL_COMM_ID={comm_id}", _match_subnet(interfaces, remote)))
    steps += [
        ("any interface except docker*, lo*, virbr*", _find(interfaces, "^docker,lo,virbr", family)),
        ("docker* (nothing else qualified)", _find(interfaces, "docker", family)),
        ("lo* (nothing else qualified)", _find(interfaces, "lo", family)),
        ("virbr* (nothing else qualified)", _find(interfaces, "virbr", family)),
    ]
    for rule, found in steps:
        if found:
            return InterfaceChoice("nccl", found[0][0], found[0][1], rule, tuple(n for n, _ in found))
    return InterfaceChoice(
        "nccl",
        None,
        None,
        "automatic selection",
        problem="no running interface has an address; NCCL init fails with 'Bootstrap : no socket interface found'",
    )


def _gloo_interface_address(interface: InterfaceFacts | None) -> str | None:
    if interface is None:
        return None
    addresses = [*interface.ipv4, *interface.ipv6]
    return bare_address(addresses[0]) if addresses else None


def predict_gloo(
    interfaces: Sequence[InterfaceFacts], names: NameFacts, env: Mapping[str, str]
) -> InterfaceChoice:
    """The interface and address Gloo will advertise."""
    user = env.get("GLOO_SOCKET_IFNAME")
    if user is not None and len(user) > 1:
        requested = [n for n in user.split(",") if n]
        rule = f"GLOO_SOCKET_IFNAME={user}"
        by_name = {i.name: i for i in interfaces}
        missing = [n for n in requested if _gloo_interface_address(by_name.get(n)) is None]
        if missing or not requested:
            what = ", ".join(missing) or user
            return InterfaceChoice(
                "gloo",
                None,
                None,
                rule,
                tuple(requested),
                problem=f"GLOO_SOCKET_IFNAME names {what}, which does not exist or has no address; Gloo "
                f"fails with 'Unable to find address for: {missing[0] if missing else user}'",
            )
        first = requested[0]
        return InterfaceChoice("gloo", first, _gloo_interface_address(by_name[first]), rule, tuple(requested))
    hostname = names.hostname
    if hostname is None:
        return InterfaceChoice("gloo", None, None, "hostname", problem="the hostname is unknown")
    for address in names.resolved:
        interface = address_interface(interfaces, address)
        if interface is not None:  # bindable: a local address, or anything in 127/8 or ::1
            return InterfaceChoice(
                "gloo", interface, address, f"hostname {hostname} resolves to {address}", (interface,)
            )
    why = (
        f"hostname {hostname} does not resolve ({names.resolve_error})"
        if not names.resolved
        else f"hostname {hostname} resolves to {', '.join(names.resolved)}, none of them local"
    )
    loopback = address_interface(interfaces, GLOO_LOOPBACK) or "lo"
    return InterfaceChoice("gloo", loopback, GLOO_LOOPBACK, f"loopback fallback: {why}", (loopback,))
