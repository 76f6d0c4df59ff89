"""Interfaces and reachability: loopback or docker addresses, a missing or odd interface, NCCL falling back
to sockets on some hosts, a host cut off from the others. Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter, defaultdict

from syncdoctor.analyze.model import Category, Event, Hypothesis, Kind, Ref
from syncdoctor.analyze.parsers.gloo import is_loopback
from syncdoctor.analyze.parsers.nccl_warn import NO_SUBNET
from syncdoctor.analyze.rules.common import (
    MAX_CASCADE,
    attribute,
    bridge_gateway,
    evidence_of,
    fmt_ranks,
    hypothesis,
    ip_of,
    is_link_local,
    socket_transport,
    writer_hosts,
)
from syncdoctor.analyze.timeline import ERROR_KINDS, TIMEOUT_KINDS, Timeline, is_comm_exception
from syncdoctor.kb.pages.analyze import CATEGORY_RULES
from syncdoctor.units import format_duration

__all__ = ["advertised_loopback", "interface_mismatch", "interface_missing", "network_partition",
           "socket_fallback", "unexplained_timeout"]

_VIRTUAL_PREFIXES = ("docker", "virbr", "veth", "br-", "cni", "flannel", "ecs-", "lo")  # ecs-eth0: AWS ECS's bridge


def _virtual(ifname: str) -> bool:
    return ifname == "lo" or any(ifname.startswith(p) for p in _VIRTUAL_PREFIXES if p != "lo")


def _zone(addr: str) -> str:
    """The interface an IPv6 address names after its ``%`` (``fe80::a849:bbff:fe73:19bd%veth8299cd8``): where a
    peer's link-local address lives, a container's veth or a NIC."""
    return addr.strip("[]").partition("%")[2].split("]")[0].split("<")[0]


def _container_interface_failures(tl: Timeline, culprit_lines: dict[str, list[Event]], unhosted: list[Event],
                                  remote_only: list[Event], flagged: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """NCCL's socket transport uses every interface its ``NET/Socket : Using [0]eth0:… [1]br-…:172.18.0.1`` line
    lists: a connection that failed to the address of a container bridge or veth listed there went over that
    interface, which leads nowhere (the same 172.17/172.18 bridge exists on every host). Returns the (interface,
    address) pairs it flagged."""
    listed: dict[str, tuple[str, Event]] = {}
    found_here: list[tuple[str, str]] = []
    for event in tl.of(Kind.NCCL_NET):
        if event.data.get("net") == "Socket":
            for ifname, addr in zip(event.data.get("ifnames") or (), event.data.get("addrs") or (), strict=False):
                if _virtual(str(ifname)) and addr and not is_loopback(str(addr)) and not is_link_local(str(addr)):
                    listed.setdefault(str(addr), (str(ifname), event))
    if not listed:
        return found_here
    for event in tl.of(Kind.PEER_CLOSED, Kind.NCCL_CONNECT_FAILED):
        found = listed.get(str(event.data.get("peer_addr") or ""))
        if found is None:
            continue
        ifname, where = found
        remote_only.append(event)
        found_here.append((ifname, str(event.data.get("peer_addr"))))
        lines = culprit_lines[where.origin.host] if where.origin.host else unhosted
        if where not in lines:
            lines.append(where)
    flagged += found_here
    return found_here


_CONNECTING = (Kind.PEER_CLOSED, Kind.NCCL_CONNECT_FAILED, Kind.GLOO_CONNECT_FAILED, Kind.STORE_ERROR,
               Kind.HEARTBEAT_TIMEOUT, *TIMEOUT_KINDS)


def _nothing_failed_to_connect(tl: Timeline) -> bool:
    """No connection failed, was lost or timed out anywhere in the inputs (the failure is of another kind)."""
    return not tl.of(*_CONNECTING)


def advertised_loopback(tl: Timeline) -> list[Hypothesis]:
    culprit_lines: dict[str, list[Event]] = defaultdict(list)
    remote_only: list[Event] = []
    inferred: set[str] = set()
    # the unreachable (interface, address) pairs seen: link-local ones of no container bridge make it the wrong
    # interface (A007), not loopback
    flagged: list[tuple[str, str]] = []
    for event in tl.of(Kind.GLOO_CONNECT_FAILED):
        # gloo does not bind the socket it dials from: dialling a peer's 127.0.0.1 always shows local=127.0.0.1,
        # whatever this host advertises. Such a line says only that the *peer* advertised loopback.
        if not (event.data.get("loopback_remote") or event.data.get("loopback_local")):
            continue
        remote_only.append(event)
        flagged.append(("", "127.0.0.1"))
        host = event.origin.host
        if host:
            # a connection to a peer's 127.0.0.1 fails only when that peer is on another host: with two
            # hosts, the other one advertised loopback
            others = set(tl.hosts) - {host}
            if len(others) == 1:
                inferred |= others
    for event in tl.of(Kind.NCCL_CONNECT_FAILED):
        # NCCL dialled the address a peer advertised: a loopback or link-local one cannot work across hosts
        peer = str(event.data.get("peer_addr") or "")
        if peer and (is_loopback(peer) or is_link_local(peer)):
            remote_only.append(event)
            flagged.append((_zone(peer), peer))
    for event in tl.of(Kind.NCCL_WARN):
        # NCCL's socket code given a peer's address that no local interface shares a subnet with: a link-local one
        # (fe80::, 169.254.x.x) was advertised by that peer
        unmatched = NO_SUBNET.search(str(event.data.get("message", ""))) if "same subnet" in str(
            event.data.get("message", "")) else None
        if unmatched and is_link_local(unmatched["addr"].strip("[]").split("%", 1)[0]):
            remote_only.append(event)
            flagged.append((_zone(unmatched["addr"]), unmatched["addr"]))
    unhosted: list[Event] = []
    bridged = _container_interface_failures(tl, culprit_lines, unhosted, remote_only, flagged)
    for event in tl.of(Kind.GLOO_LOOPBACK):
        flagged.append(("", "127.0.0.1"))
        if event.origin.host:
            culprit_lines[event.origin.host].append(event)
        else:
            unhosted.append(event)
    bootstrap_on_a_nic = True  # every bootstrap line that lists an unreachable interface lists a real NIC first
    for event in tl.of(Kind.NCCL_BOOTSTRAP):
        endpoints = [(str(event.data.get("ifname", "")), str(event.data.get("addr", "")))]
        endpoints += [tuple(e) for e in event.data.get("also") or ()]
        bad = [(ifname, addr) for ifname, addr in endpoints if is_loopback(addr) or _virtual(ifname) or is_link_local(addr)]
        if bad:
            (culprit_lines[event.origin.host] if event.origin.host else unhosted).append(event)
            flagged += bad[:1]  # the first interface listed is the one NCCL bootstraps on
            bootstrap_on_a_nic &= bad[0] != endpoints[0]
    if remote_only and not culprit_lines and not inferred and not unhosted:
        # a connection to loopback failed, and a pasted /etc/hosts or getent line maps a host's name to 127.x:
        # that host advertises it (a hosts line alone, with nothing failing, proves nothing)
        for event in tl.of(Kind.HOSTNAME_LOOPBACK):
            if event.origin.host:
                culprit_lines[event.origin.host].append(event)
    if bridged and len(bridged) == len(flagged):
        return _container_socket_device(tl, culprit_lines, unhosted, remote_only, bridged)
    if flagged and all(is_link_local(addr) and not _virtual(ifname) for ifname, addr in flagged):
        return _link_local_address(tl, culprit_lines, unhosted + remote_only, sorted({a for _i, a in flagged}))
    if unhosted and not culprit_lines and not remote_only and _failed_on_its_own(tl, unhosted):
        # gloo's fallback to the loopback (every run on a host whose /etc/hosts maps its name to 127.0.1.1, Ubuntu's
        # default, prints it) beside a failure of a process's own (out of memory, a GPU's, its own exception, an error
        # line no rule knows) and no connection that failed: that failure says what went wrong, not this warning
        return []
    if unhosted and not culprit_lines:
        # a paste from one process: the line names no host, but says what it advertised
        where = attribute(unhosted, tl)
        title = (f"{where.text or 'a process'} advertises a loopback, container or link-local address to its peers "
                 "(its hostname resolves to loopback, or the first interface found is virtual)")
        what = ("Gloo advertises the address the hostname resolves to (127.0.0.1 or Debian's 127.0.1.1 when "
                "/etc/hosts maps it there), NCCL the first usable interface (docker0, a veth of a container, an "
                "IPv6 link-local fe80:: address): no other host can connect to it.")
        return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.8, title, what=what,
                           evidence=evidence_of(unhosted, "advertises an unreachable address", 6)
                           + evidence_of(remote_only, "connecting to a peer at 127.0.0.1", MAX_CASCADE),
                           where=where,
                           fix="export GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME=<the NIC on the cluster network> on "
                               "every host, or map the hostname to the host's cluster address in /etc/hosts.")]
    later_only = bootstrap_on_a_nic and not inferred and not bridged and _nothing_failed_to_connect(tl)
    if not remote_only and (not culprit_lines or later_only):
        # nothing unreachable was advertised, or only an interface listed after the NIC NCCL bootstraps on, and no
        # connection failed: at most a socket device beside the NIC
        return (_loopback_chosen(tl) or _default_bridge_container(tl) or _virtual_socket_device(tl)
                or _gloo_fell_back(tl, [e for v in culprit_lines.values() for e in v if e.kind is Kind.GLOO_LOOPBACK]))
    across = _channel_over_network(tl)
    # ranks unknown: the hosts of the lines, when all the host advertised is the loopback (a veth's or a link-local
    # address in a one-host paste still says what the others would have dialled)
    writers = set(tl.hosts) or (writer_hosts(tl) if flagged and all(is_loopback(a) for _i, a in flagged) else set())
    if not remote_only and not unhosted and _nothing_failed_to_connect(tl) and writers == set(culprit_lines) \
            and len(culprit_lines) == 1 and not across:
        # one host, whose ranks reach each other over loopback, and no connection failed: not the cause, unless the
        # user chose the loopback for NCCL's sockets, which no job across hosts can use
        return _loopback_chosen(tl)
    hosts = sorted(set(culprit_lines) | inferred)
    dialled = {e.origin.host for e in remote_only if e.origin.host}
    affected = sorted({e.origin.rank for e in remote_only + [e for v in culprit_lines.values() for e in v]
                       if e.origin.rank is not None})
    nccl = any(e.kind is Kind.NCCL_BOOTSTRAP for v in culprit_lines.values() for e in v)
    if hosts:
        title = (f"host{'s' if len(hosts) > 1 else ''} {', '.join(hosts)} advertised a loopback or container "
                 f"address to {'their' if len(hosts) > 1 else 'its'} peers, so connections failed")
    else:
        peers = sorted({str(e.data.get("peer_addr") or e.data.get("remote_addr") or "") for e in remote_only} - {""})
        title = ("peers advertised an address no other host can reach"
                 + (f" ({', '.join(peers[:3])})" if peers else " (127.0.0.1)")
                 + ": connections to them failed (a hostname that resolves to loopback, or an IPv6 link-local "
                 "interface picked for the bootstrap)")
    what = ("Gloo (and NCCL's bootstrap) advertise the address the hostname resolves to, or the first interface "
            "found. 127.0.0.1, docker0 or virbr addresses are not reachable from other hosts, so every connection "
            "to these ranks fails.")
    fix = ("export GLOO_SOCKET_IFNAME=<the NIC on the cluster network, e.g. eth0>"
           + (" and NCCL_SOCKET_IFNAME=<the same NIC>" if nccl else "")
           + (f" on {', '.join(hosts)}" if hosts else " on every host")
           + ", or map the hostname to the host's cluster address in /etc/hosts instead of 127.0.0.1/127.0.1.1."
           + (" The hosts that dialled 127.0.0.1 may advertise it too (their lines cannot show it): run "
              "`syncdoctor check` there (H001)." if dialled - set(hosts) else ""))
    # the user's own choice of the loopback, where the lines show it (``NCCL_SOCKET_IFNAME set by environment to lo``)
    chosen = [e for e in _ifname_loopback(tl) if not hosts or e.origin.host in hosts]
    if chosen:
        value = str(chosen[0].data.get("value", "")).strip()
        title += f" (NCCL_SOCKET_IFNAME={value}, set by the environment, names the loopback)"
        fix = (f"Set NCCL_SOCKET_IFNAME{' on ' + ', '.join(hosts) if hosts else ''} to the NIC on the cluster network "
               "(eth0, ib0: the interface that holds the host's routable address), not the loopback, whose 127.0.0.1 "
               "is each peer's own machine; the same for GLOO_SOCKET_IFNAME.")
    evidence = evidence_of(chosen[:1], "the loopback chosen by the environment")
    for host in hosts:
        evidence += evidence_of(culprit_lines.get(host, [])[:3], f"{host} advertises loopback")
    evidence += evidence_of(remote_only, "connecting to a peer's unreachable address", MAX_CASCADE)
    culprits = sorted({r for h in hosts for r in tl.hosts.get(h, ())})
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.9 if hosts else 0.7, title, culprits=culprits, hosts=hosts,
                       affected=affected, what=what, fix=fix, evidence=evidence)]


_OWN_FAILURES = frozenset({
    Kind.CUDA_OOM, Kind.GPU_ERROR, Kind.FATAL_SIGNAL, Kind.SHM_FAILURE, Kind.MEMLOCK_FAILURE, Kind.DUPLICATE_GPU,
    Kind.PEER_ACCESS, Kind.COLLECTIVE_MISMATCH, Kind.IB_COMPLETION_ERROR, Kind.IB_MODIFY_QP, Kind.IB_ASYNC_EVENT,
    Kind.INTERFACE_MISSING, Kind.AGENT_SIGNAL,
})
# an error line's words for a connection or a wait, which the loopback explains (``Gloo connectFullMesh failed ...``)
_A_CONNECTIONS = re.compile(r"connect|refused|timed? ?out|reset by peer|closed|unreachable|store|rendezvous|socket"
                            r"|failed to start", re.IGNORECASE)


def _failed_on_its_own(tl: Timeline, warned: list[Event]) -> bool:
    """A failure in the inputs that is no connection's or wait's (a process's own exception, its GPU's memory, a
    signal, an error line no rule knows), on a line other than ``warned``'s."""
    lines = {(e.ref.source, e.ref.line) for e in warned}
    for event in tl.events:
        if (event.ref.source, event.ref.line) in lines:
            continue
        if event.kind in _OWN_FAILURES or (event.kind is Kind.EXCEPTION and not is_comm_exception(event)) or (
                event.kind is Kind.WORKER_FAILED and event.data.get("signal")) or (
                event.kind in (Kind.ERROR_LINE, Kind.NCCL_WARN)
                and not _A_CONNECTIONS.search(str(event.data.get("message") or event.text))) or (
                event.kind is Kind.STORE_ERROR and event.data.get("what") == "listen"):  # (its own port taken)
            return True
    return False


def _gloo_fell_back(tl: Timeline, events: list[Event]) -> list[Hypothesis]:
    """Gloo's warning that it fell back to the loopback address, on a host the lines name, and no connection failed:
    harmless on one machine, the cause across machines; read so, below the certainty of a paste that names no host
    (whose lines are all there is) and of a connection that failed."""
    if not events:
        return []
    where = attribute(events, tl)
    title = (f"{where.text or 'a host'} advertises the loopback address to its peers (its hostname resolves to "
             "loopback): the cause if the job spans machines, harmless on one")
    what = ("Gloo advertises the address the hostname resolves to; /etc/hosts mapping it to 127.0.0.1 or 127.0.1.1 "
            "makes that the loopback, which no other machine can connect to. On one machine the ranks reach each "
            "other there; across machines every connection to this host's ranks fails or times out.")
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.45, title, what=what, where=where,
                       evidence=evidence_of(events, "advertises the loopback", 3),
                       fix="export GLOO_SOCKET_IFNAME=<the NIC on the cluster network> on every host, or map the "
                           "hostname to the host's cluster address in /etc/hosts.")]


# Docker's default bridge network: a container on it gets an address of 172.17.0.0/16 on its eth0, private to its
# machine (another machine's containers have the same addresses), and the container's ID as its host name
_DOCKER_DEFAULT_BRIDGE = ipaddress.ip_network("172.17.0.0/16")
_CONTAINER_ID = re.compile(r"[0-9a-f]{12}")


def _default_bridge_container(tl: Timeline) -> list[Hypothesis]:
    """NCCL in a container on Docker's default bridge network (its host name a container ID, its bootstrap address
    in 172.17.0.0/16 on the container's own eth0) and a connection or socket error: the address it advertises
    reaches nothing outside its machine. The cause if the job spans machines, which one container's lines do not
    show (0.6)."""
    boots = [e for e in tl.of(Kind.NCCL_BOOTSTRAP) if e.origin.host and _CONTAINER_ID.fullmatch(e.origin.host)
             and not _virtual(str(e.data.get("ifname", ""))) and (ip := ip_of(str(e.data.get("addr", "")))) is not None
             and ip in _DOCKER_DEFAULT_BRIDGE]
    if not boots:
        return []
    # (NCCL's 'unhandled system error' where no warning of another kind came first from that process: a warning
    # of its own, such as the topology's ``Could not find real path of /sys/class/pci_bus/…``, says what failed)
    warned: dict[tuple[str | None, int | None], Ref] = {}
    for warn in tl.of(Kind.NCCL_WARN):
        warned.setdefault((warn.origin.host, warn.origin.pid), warn.ref)
    failed = [e for e in tl.events if e.kind in _CONNECTING or (
        e.kind is Kind.NCCL_ERROR and "system error" in str(e.data.get("error", ""))
        and not ((first := warned.get((e.origin.host, e.origin.pid))) is not None and first.source == e.ref.source
                 and first.line < e.ref.line))]
    if not failed:
        return []
    hosts = sorted({str(e.origin.host) for e in boots})
    addrs = sorted({str(e.data.get("addr")) for e in boots})
    title = (f"NCCL runs in a container on Docker's default bridge network ({', '.join(hosts[:3])}, a container ID, "
             f"advertises {', '.join(addrs[:3])}): an address no other machine can reach, the cause if the job spans "
             "machines")
    what = ("A container on Docker's default bridge gets an address of 172.17.0.0/16 that only its own machine routes "
            "(every machine's containers have the same ones); NCCL bootstraps on it, and the other machines' ranks "
            "cannot connect (an 'unhandled system error' in NCCL's sockets). Mapped ports do not help: NCCL listens "
            "on ports it picks at run time.")
    fix = ("Start the containers with --network=host (and --ipc=host), or on a network the machines share (an "
           "overlay or macvlan network), and set NCCL_SOCKET_IFNAME (GLOO_SOCKET_IFNAME too) to its interface.")
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.6, title, what=what, fix=fix, hosts=hosts,
                       evidence=evidence_of(boots, "the container's bridge address", 3)
                       + evidence_of(failed, "then failed", 3))]


def _ifname_loopback(tl: Timeline, *, admitted: bool = False) -> list[Event]:
    """The lines where NCCL reports NCCL_SOCKET_IFNAME set to the loopback (``… set by environment to lo``), or, with
    ``admitted``, to an exclusion list that does not keep it out."""
    return [e for e in tl.of(Kind.NCCL_ENV) if e.data.get("name") == "NCCL_SOCKET_IFNAME"
            and (_names_loopback(value := str(e.data.get("value", ""))) or (admitted and _admits_loopback(value)))]


def _loopback_chosen(tl: Timeline) -> list[Hypothesis]:
    """NCCL_SOCKET_IFNAME set to the loopback (``lo``), and NCCL's sockets on 127.0.0.1, in the paste of one host's
    failure: right within one node, and the cause of every connection across hosts failing. Said at a confidence
    under the other readings: the lines do not say that the job spans hosts."""
    chosen = _ifname_loopback(tl, admitted=True)
    on_lo = [e for e in tl.of(Kind.NCCL_BOOTSTRAP, Kind.NCCL_NET)
             if any(is_loopback(str(a)) for a in [e.data.get("addr"), *(e.data.get("addrs") or ())] if a)]
    if not chosen or not on_lo or not any(e.kind in ERROR_KINDS or e.kind is Kind.ERROR_LINE for e in tl.events):
        return []
    where = attribute(on_lo, tl)
    value = str(chosen[0].data.get("value", "")).strip()
    title = (f"NCCL_SOCKET_IFNAME={value}: NCCL on {where.text or 'this host'} uses the loopback (127.0.0.1) for its "
             "sockets, which no other host can reach: the cause if the job spans more than this host")
    if _admits_loopback(value):
        title += " (an exclusion list that does not name lo lets NCCL take it)"
    what = ("NCCL advertises the address of the interface NCCL_SOCKET_IFNAME names to every other rank (its bootstrap, "
            "and its data when it has no IB); the loopback's is 127.0.0.1, which means each peer's own machine. Within "
            "one node that works; across nodes no connection can form, and init fails or hangs.")
    fix = ("Set NCCL_SOCKET_IFNAME to the NIC on the cluster network (eth0, ib0, or the interface that holds the "
           "host's routable address; with BGP-unnumbered hosts whose address sits on lo, that address's own "
           "interface alias), the same on every host.")
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.4, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(chosen[:1], "set by the user") + evidence_of(on_lo[:2], "sockets on lo"))]


def _virtual_socket_device(tl: Timeline) -> list[Hypothesis]:
    """NCCL's socket transport lists the loopback or a container's interface among its devices, beside a real NIC
    (``NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:…``, ``[1]veth8739016:fe80::…``), in inputs where no connection
    failed: NCCL spreads its connections over every device listed (lo alone is a host with nothing else, a job on
    one node), and the ones over lo or a veth reach no other host, so a job across hosts hangs or fails at its first
    collective there. Said at a low confidence (the lines say neither that
    the job spans hosts nor that it hung), above only an unexplained timeout; a channel over the network in the
    inputs (the job does span hosts) raises it."""
    listed: list[tuple[Event, list[str]]] = []
    for event in tl.of(Kind.NCCL_NET):
        if event.data.get("net") != "Socket":
            continue
        pairs = list(zip(event.data.get("ifnames") or (), event.data.get("addrs") or (), strict=False))
        names = [f"{i} ({a})" for i, a in pairs if _virtual(str(i)) or is_loopback(str(a))]
        if names and len(names) < len(pairs):  # beside a real NIC: lo alone is a host with no other interface
            listed.append((event, names))
    # (an error line no rule knows, or a launcher stopped by a signal, is a failure of its own too: the fallback says
    # what it is, where this lead, above it, would keep it from being read)
    failed = [e for e in tl.events if (e.kind in ERROR_KINDS and e.kind not in TIMEOUT_KINDS)
              or e.kind in (Kind.ERROR_LINE, Kind.AGENT_SIGNAL)]
    if not listed or failed or _on_one_machine(tl):
        return []
    events = [e for e, _ in listed]
    where = attribute(events, tl)
    shown = ", ".join(dict.fromkeys(n for _e, names in listed for n in names))
    across = _channel_over_network(tl)
    title = (f"NCCL's socket transport uses {shown} as a device{' on ' + where.text if where.text else ''}: "
             "connections over it reach no other host, so a job across hosts hangs there")
    what = ("Without NCCL_SOCKET_IFNAME (or with one that admits them), NCCL's socket transport takes every "
            "interface it finds as a device and spreads its connections over them: the loopback (127.0.0.1), a "
            "Docker bridge or a container's veth (often with only an IPv6 link-local fe80:: address) lead to no other "
            "host. Within one node NCCL does not use the network and nothing happens; across nodes the first "
            "collective over such a device never completes." + ("" if across else
            " The inputs do not say that this job spans hosts, nor that it failed: the cause only if it did."))
    fix = ("export NCCL_SOCKET_IFNAME=<the NIC on the cluster network, e.g. eth0 or bond0> (or "
           "NCCL_SOCKET_IFNAME=^lo,docker,veth,br-) on every host, and GLOO_SOCKET_IFNAME the same.")
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.5 if across else 0.35, title, what=what, fix=fix,
                       where=where, evidence=evidence_of(events, "a socket device that reaches no other host", 4))]


def _channel_over_network(tl: Timeline) -> bool:
    """An NCCL channel over the network in the inputs: the job spans hosts."""
    return any(e.data.get("net") for e in tl.of(Kind.NCCL_CHANNEL))


def _on_one_machine(tl: Timeline) -> bool:
    """The whole job is on one machine: nccl-tests' table of every rank (``#  Rank  1 Group  0 Pid 149 on llm207
    device  1``) names one host, or one process drives several GPUs and no other process is in the inputs (``-g 2``).
    NCCL does not use the network within one machine."""
    table = [e for e in tl.of(Kind.PROCESS_MAP) if e.data.get("source") == "nccl-tests"]
    if table and len({e.origin.host for e in table}) == 1:
        return True
    nccl = [e for e in tl.events if e.kind.name.startswith("NCCL_") and e.origin.pid is not None]
    processes = {(e.origin.host, e.origin.pid) for e in nccl}
    return len(processes) == 1 and len({e.origin.device for e in nccl if e.origin.device is not None}) > 1


def _admits_loopback(value: str) -> bool:
    """An exclusion list (``^docker0``) that does not exclude the loopback: NCCL (2.3.5+) then considers lo with the
    other interfaces, and on a host whose only other interfaces it excluded, bootstraps on it."""
    value = value.strip()
    return value.startswith("^") and not any(part.strip().startswith("lo") for part in value[1:].split(","))


def _names_loopback(value: str) -> bool:
    """An NCCL_SOCKET_IFNAME that picks the loopback: ``lo`` or ``=lo`` (exactly), first of its list; ``^lo…`` is
    the opposite, every interface but those."""
    value = value.strip()
    return not value.startswith("^") and value.lstrip("=").split(",")[0].strip() in ("lo", "lo0")


def _container_socket_device(tl: Timeline, by_host: dict[str, list[Event]], unhosted: list[Event],
                             failed: list[Event], bridged: list[tuple[str, str]]) -> list[Hypothesis]:
    """Connections failed to a container bridge's address that NCCL listed as one of its socket devices."""
    hosts = sorted(by_host)
    names = ", ".join(sorted({f"{i} ({a})" for i, a in bridged})[:3])
    title = ((f"host{'s' if len(hosts) > 1 else ''} {', '.join(hosts)}: " if hosts else "")
             + f"NCCL's socket transport uses the container interface {names}, and connections over it failed")
    what = ("Without NCCL_SOCKET_IFNAME, NCCL's socket transport takes every interface it finds as a device, "
            "Docker bridges and veth pairs included. A container bridge address (172.17.0.1, 172.18.0.1...) exists "
            "on every host and leads to none of the others, so the connections NCCL opens over it fail ('Broken "
            "pipe', 'Connection closed by remote peer', 'Proxy Call ... failed').")
    fix = ("export NCCL_SOCKET_IFNAME=<the NIC on the cluster network, e.g. eth0> (or NCCL_SOCKET_IFNAME="
           "^docker,br-,veth,lo) on every host" + (f", {', '.join(hosts)} at least" if hosts else "")
           + "; with containers, --network=host and the same interface name on each node.")
    lines = [e for h in hosts for e in by_host[h][:2]] + unhosted[:2]
    evidence = evidence_of(lines, "lists a container interface as a socket device")
    evidence += evidence_of(failed, "a connection over the container interface failed", MAX_CASCADE)
    culprits = sorted({r for h in hosts for r in tl.hosts.get(h, ())})
    affected = sorted({e.origin.rank for e in failed if e.origin.rank is not None} - set(culprits))
    where = attribute(failed, tl) if not hosts else None
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.85, title, culprits=culprits, hosts=hosts,
                       affected=affected, what=what, fix=fix, evidence=evidence, where=where)]


def _link_local_address(tl: Timeline, by_host: dict[str, list[Event]], others: list[Event],
                        addrs: list[str]) -> list[Hypothesis]:
    """Only link-local addresses (169.254.0.0/16, fe80::/10) were advertised or dialled: an interface that reaches
    its own link only was picked (cloud metadata and ECS bridges, Azure's accelerated-networking twin, an IPv6
    tunnel): the wrong interface, A007, not loopback."""
    hosts = sorted(by_host)
    shown = ", ".join(addrs[:3])
    title = ((f"host{'s' if len(hosts) > 1 else ''} {', '.join(hosts)} " if hosts else "peers ")
             + f"advertised a link-local address ({shown}): an interface that reaches only its own link was picked "
             "for the bootstrap, so the other hosts cannot connect")
    what = ("NCCL (and gloo) advertise the first usable interface unless told which. A link-local address "
            "(169.254.x.x, fe80::) belongs to an interface that is not routed between hosts: a cloud's metadata or "
            "container-agent bridge, a virtual function's twin, an IPv6 tunnel. Connections to it fail ('Software "
            "caused connection abort', refused, or a timeout).")
    fix = ("export NCCL_SOCKET_IFNAME=<the NIC on the cluster network, e.g. eth0 or ens5> (and GLOO_SOCKET_IFNAME) on "
           "every host; `syncdoctor check` lists each host's interfaces and addresses.")
    if any(e.data.get("transport") == "mpi" for e in others):  # Open MPI's TCP transport dialled it
        fix = ("Restrict Open MPI's TCP transports to the cluster network on every host: mpirun --mca btl_tcp_if_include "
               "<the NIC or its subnet, e.g. 192.168.1.0/24> --mca oob_tcp_if_include <the same> (or btl_tcp_if_exclude "
               "lo,<the link-local interface>); " + fix)
    evidence = []
    for host in hosts:
        evidence += evidence_of(by_host[host][:3], f"{host} advertises a link-local address")
    evidence += evidence_of(others, "a link-local address", MAX_CASCADE)
    culprits = sorted({r for h in hosts for r in tl.hosts.get(h, ())})
    affected = sorted({e.origin.rank for e in others if e.origin.rank is not None} - set(culprits))
    where = attribute(others, tl) if not hosts else None
    return [hypothesis(tl, Category.INTERFACE_MISMATCH, 0.85 if hosts else 0.7, title, culprits=culprits,
                       hosts=hosts, affected=affected, what=what, fix=fix, evidence=evidence, where=where)]


def interface_missing(tl: Timeline) -> list[Hypothesis]:
    events = tl.of(Kind.INTERFACE_MISSING)
    gloo = [e for e in events if e.data.get("transport") not in ("nccl", "mpi", *_LIBRARY_BOOTSTRAPS)]
    nccl = [e for e in events if e.data.get("transport") == "nccl"]
    mpi = [e for e in events if e.data.get("transport") == "mpi"]
    out = ((_gloo_interface_missing(tl, gloo) if gloo else []) + (_nccl_interface_missing(tl, nccl) if nccl else [])
           + (_mpi_interface_missing(tl, mpi) if mpi else []))
    for transport in _LIBRARY_BOOTSTRAPS:
        own = [e for e in events if e.data.get("transport") == transport]
        out += _library_interface_missing(tl, own, transport) if own else []
    return out


# libraries with a bootstrap of their own, and so settings of their own: (what found nothing, the library, what
# happened, what to change, the evidence's note)
_LIBRARY_BOOTSTRAPS = {
    "nvshmem": (
        "NVSHMEM's bootstrap found no socket interface", "NVSHMEM",
        "NVSHMEM's UID bootstrap looks for an interface by NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME and the address family "
        "NVSHMEM_BOOTSTRAP_UID_SOCK_FAMILY; none matched (a name that does not exist there, or a family the interfaces "
        "have no address of, such as AF_INET6 on a host without IPv6), so NVSHMEM's initialisation failed.",
        "Set NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME to an interface that exists on every node (`ip -br addr`) and "
        "NVSHMEM_BOOTSTRAP_UID_SOCK_FAMILY to the family it has an address of (AF_INET for IPv4).",
        "NVSHMEM found no socket interface"),
    "oneccl": (
        "oneCCL found no network interface for its bootstrap (KVS)", "oneCCL",
        "oneCCL's key-value store, which its ranks meet through, takes the host's address from an interface "
        "(CCL_KVS_IFACE, else the first usable one); none was found: the name given does not exist there, or the "
        "container or namespace has only loopback.",
        "Set CCL_KVS_IFACE to an interface that exists on every node (`ip -br addr`), and FI_TCP_IFACE for "
        "libfabric's TCP provider the same; in a container, give it the host's network (--network=host).",
        "oneCCL found no interface"),
}


def _library_interface_missing(tl: Timeline, events: list[Event], transport: str) -> list[Hypothesis]:
    """A library's own bootstrap (NVSHMEM's UID bootstrap, oneCCL's key-value store) found no interface: its own
    settings, not NCCL's."""
    head, library, what, fix, note = _LIBRARY_BOOTSTRAPS[transport]
    where = attribute(events, tl)
    title = f"{head}{' on ' + where.text if where.text else ''}: {library} could not start"
    return [hypothesis(tl, Category.INTERFACE_MISSING, 0.8, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, note, 4))]


def _mpi_interface_missing(tl: Timeline, events: list[Event]) -> list[Hypothesis]:
    """Open MPI's ``An invalid value was given for btl_tcp_if_include`` with ``Unknown interface name``: the list
    names an interface this host does not have (hosts that name their NICs differently: em1, eno1, ens…); Open MPI
    ignores the value there and tries every interface, and its processes cannot reach each other."""
    hosts = sorted({e.origin.host for e in events if e.origin.host})
    names = sorted({str(e.data.get("ifname")) for e in events})
    params = sorted({str(e.data.get("param")) for e in events})
    title = (f"Open MPI's {', '.join(params)} names {', '.join(names)}, which does not exist on "
             f"{', '.join(hosts) or 'a host'}: the setting is ignored there and its processes cannot reach the others")
    what = (f"{', '.join(params)} tells Open MPI's TCP transport which interfaces to use; on {', '.join(hosts) or 'that host'} "
            f"no interface is called {', '.join(names)} (hosts often name their NICs differently: em1, eno1, ens…), so "
            "Open MPI ignores the setting there and uses every interface, bridges included, and the processes cannot "
            "reach each other.")
    fix = ("Name interfaces that exist on every host, or give a subnet instead of a name (--mca btl_tcp_if_include "
           "10.0.0.0/24, and the same for oob_tcp_if_include), which fits whatever each host calls its NIC; with "
           "horovodrun, --network-interface takes the names.")
    culprits = sorted({r for h in hosts for r in tl.hosts.get(h, ())})
    return [hypothesis(tl, Category.INTERFACE_MISSING, 0.85, title, culprits=culprits, hosts=hosts, what=what,
                       fix=fix, evidence=evidence_of(events, "interface not found", 4))]


def _waiting(tl: Timeline, ranks: list[int]) -> list[int]:
    return sorted({e.origin.rank for e in tl.of(Kind.STORE_ERROR) if e.origin.rank is not None} - set(ranks))


def _gloo_interface_missing(tl: Timeline, events: list[Event]) -> list[Hypothesis]:
    names = sorted({str(e.data.get("ifname")) for e in events})
    ranks = sorted({e.origin.rank for e in events if e.origin.rank is not None})
    hosts = tl.hosts_of(ranks) or tuple(sorted({e.origin.host for e in events if e.origin.host}))
    waiting = _waiting(tl, ranks)
    who = f"ranks {fmt_ranks(ranks)}" if ranks else "their processes"
    title = (f"interface {', '.join(names)} does not exist on {', '.join(hosts) or 'some hosts'}"
             + (f" (ranks {fmt_ranks(ranks)})" if ranks else "") + ": their process group could not start")
    if all("." in name and not name.startswith(("^", "=")) for name in names):
        # without GLOO_SOCKET_IFNAME gloo resolves the host name: a name with dots is that, not an interface
        title = (f"gloo found no local address for the host name {', '.join(names)} (it resolves to no interface "
                 "of this host): the process group could not start")
    what = (f"GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME names {', '.join(names)}, which {who} could not "
            "find; they failed at init_process_group")
    if all("." in name for name in names):
        what = (f"With no GLOO_SOCKET_IFNAME, gloo binds to the address its host name resolves to; {', '.join(names)} "
                f"resolves to no address of this host (or not at all), so {who} failed at init_process_group")
    what += (f" and ranks {fmt_ranks(waiting)} timed out waiting for them in the store." if waiting else ".")
    fix = (f"Set GLOO_SOCKET_IFNAME (exact names) / NCCL_SOCKET_IFNAME (prefixes) on {', '.join(hosts) or 'those hosts'}"
           f" to an interface that exists there (`ip -br link`), instead of {', '.join(names)}.")
    if all("." in name for name in names):
        fix = ("Set GLOO_SOCKET_IFNAME to the interface the hosts share (`ip -br addr`), or make the host name resolve "
               "to an address of this host (/etc/hosts; in a container, --network=host or --hostname).")
    if any(name.startswith(("^", "=")) for name in names):
        fix += (" GLOO_SOCKET_IFNAME takes interface names (eth0, or eth0,eth1), not NCCL's ^ (exclude) or = (exact) "
                "syntax: a value copied from NCCL_SOCKET_IFNAME makes gloo look for an interface called that.")
    if names == ["None"]:  # gloo's libuv device (Windows): neither an interface nor a host name to bind to
        title = (f"gloo had neither an interface nor a host name to bind to on {', '.join(hosts) or 'a host'}"
                 + (f" (ranks {fmt_ranks(ranks)})" if ranks else "") + ": the process group could not start")
        what = ("GLOO_SOCKET_IFNAME was not set and the host name gloo resolved was empty (seen on Windows, where the "
                "store address also came out empty: `[]:PORT`), so its device could not be made.")
        fix = ("Set MASTER_ADDR to an address of the machine of rank 0 (127.0.0.1 when every process runs on one "
               "machine) and GLOO_SOCKET_IFNAME to an interface that exists (`ipconfig` on Windows, `ip -br addr` "
               "elsewhere).")
    evidence = evidence_of(events, "interface not found")
    evidence += evidence_of(tl.of(Kind.STORE_ERROR), "waiting for the failed ranks", MAX_CASCADE)
    return [hypothesis(tl, Category.INTERFACE_MISSING, 0.9, title, culprits=ranks, hosts=hosts, affected=waiting,
                       what=what, fix=fix, evidence=evidence)]


def _ifname_setting(tl: Timeline, warn: Event) -> Event | None:
    """NCCL's ``NCCL_SOCKET_IFNAME set by environment to …`` line of the process (else the host) that warned."""
    settings = [e for e in tl.of(Kind.NCCL_ENV) if e.data.get("name") == "NCCL_SOCKET_IFNAME"]
    for same in (lambda e: e.origin.host == warn.origin.host and e.origin.pid == warn.origin.pid,
                 lambda e: e.origin.host == warn.origin.host and warn.origin.host is not None):
        found = [e for e in settings if same(e)]
        if found:
            return found[-1]
    return None


def _nccl_interface_missing(tl: Timeline, events: list[Event]) -> list[Hypothesis]:
    """NCCL WARN ``Bootstrap : no socket interface found``, with the NCCL_SOCKET_IFNAME value NCCL reported."""
    by_value: dict[str | None, list[tuple[Event, Event | None]]] = defaultdict(list)
    for event in events:
        setting = _ifname_setting(tl, event)
        by_value[str(setting.data.get("value")) if setting else None].append((event, setting))
    out = []
    for value, pairs in sorted(by_value.items(), key=lambda item: str(item[0])):
        warns = [w for w, _ in pairs]
        ranks = sorted({w.origin.rank for w in warns if w.origin.rank is not None})
        hosts = tl.hosts_of(ranks) or tuple(sorted({w.origin.host for w in warns if w.origin.host}))
        where = f"{', '.join(hosts) or 'some hosts'}" + (f" (rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)})"
                                                          if ranks else "")
        waiting = _waiting(tl, ranks)
        if value is not None:
            title = f"NCCL_SOCKET_IFNAME={value} matches no interface on {where}: NCCL could not start"
            what = (f"NCCL_SOCKET_IFNAME is set to {value}, and NCCL found no interface on {', '.join(hosts) or 'the host'}"
                    " whose name matches it (a prefix list; '=' for exact names, '^' to exclude) and that is up "
                    "with an address, so its bootstrap could not start and the communicator failed at init")
        else:
            title = f"NCCL found no usable socket interface on {where}: NCCL could not start"
            what = ("NCCL found no interface for its bootstrap; the logs do not show NCCL_SOCKET_IFNAME (NCCL prints it "
                    "with NCCL_DEBUG=INFO), which usually names an interface that does not exist there")
        what += (f"; ranks {fmt_ranks(waiting)} timed out waiting for them in the store." if waiting else ".")
        fix = ((f"NCCL_SOCKET_IFNAME={value}: " if value is not None else "")
               + "name an interface that exists on every node (NCCL_SOCKET_IFNAME takes prefixes such as 'eth' or "
               "'en', '=eth0' for an exact name), or unset it and let NCCL choose; `syncdoctor check` on each host "
               "shows the candidate interfaces (`ip -br addr` too).")
        settings = list({(s.ref.source, s.ref.line): s for _, s in pairs if s is not None}.values())
        own_errors = [e for e in tl.of(Kind.NCCL_ERROR) if e.origin.rank in ranks]
        evidence = evidence_of(warns, "NCCL found no socket interface")
        evidence += evidence_of(settings, "the value NCCL read")
        evidence += evidence_of(own_errors[:4], "the same failure as PyTorch raised it")
        evidence += evidence_of(tl.of(Kind.STORE_ERROR), "waiting for the failed ranks", MAX_CASCADE)
        out.append(hypothesis(tl, Category.INTERFACE_MISSING, 0.9 if value is not None else 0.8, title,
                              culprits=ranks, hosts=hosts, affected=waiting, what=what, fix=fix, evidence=evidence))
    return out


def _subnet(addr: str) -> str | None:
    ip = ip_of(addr)
    if ip is None:
        return None
    prefix = 24 if ip.version == 4 else 64
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def _mpi_wrong_peer(tl: Timeline) -> list[Hypothesis]:
    """Open MPI's TCP transport dialled a peer's address and another process answered: an address that several
    hosts have (docker0's 172.17.0.1, virbr0's 192.168.122.1) or interfaces on networks that do not connect were
    among those MPI tries, since it uses every interface it finds unless told which."""
    events = [e for e in tl.of(Kind.MPI_TRANSPORT) if e.data.get("what") in ("unexpected-peer", "unexpected-address")]
    if not events:
        return _mpi_no_route(tl)
    where = attribute(events, tl)
    data = events[0].data
    if data.get("what") == "unexpected-peer":
        title = (f"Open MPI's TCP transport on {where.text or 'a host'} reached the wrong process (rank "
                 f"{data.get('answered_rank')} answered): it connected over an interface whose address "
                 "another host has too, or that leads to another network")
        note, hosts = "another process answered", []
    else:  # 'Open MPI detected an inbound MPI TCP connection request … from an IP address that is unexpected'
        peer = str(data.get("peer_host") or (f"MPI process {data['peer_process']}" if data.get("peer_process") is not None
                                             else "a peer"))
        if data.get("peer_process") is not None and not data.get("peer_host"):  # one verbose line per address tried
            data = {**data, "known_ips": sorted({str(ip) for e in events if e.data.get("peer_process") ==
                                                 data["peer_process"] for ip in e.data.get("known_ips") or ()})}
        source = f" from {data['source_ip']}" if data.get("source_ip") else ""
        known = f" (it announced {', '.join(map(str, data['known_ips']))})" if data.get("known_ips") else ""
        title = (f"Open MPI's TCP transport{' on ' + where.text if where.text else ''} dropped {peer}'s connection"
                 f"{source}, an address {peer} never announced{known}: the hosts' interfaces are on different "
                 "networks, or several paths join them")
        note = "a connection from an unexpected address"
        hosts = sorted({str(e.data["peer_host"]) for e in events if e.data.get("peer_host")})
    # the peer that connected from the unexpected address is the host to fix, where the help text names it
    return [hypothesis(tl, Category.INTERFACE_MISMATCH, 0.7, title, what=_MPI_WHAT, fix=_MPI_FIX,
                       **({"hosts": hosts} if hosts else {"where": where}), evidence=evidence_of(events, note, 4))]


def _mpi_no_route(tl: Timeline) -> list[Hypothesis]:
    """Open MPI's TCP transport found no route to an address a peer announced: it dials every interface of the
    peer (a bridge, a second NIC, a management network), and one of them is on a network this host cannot reach.
    A refused or timed-out connection may be a firewall or a dead peer (the unreachable-peer rule reads those)."""
    mpi = [e for e in tl.of(Kind.NCCL_CONNECT_FAILED) if e.data.get("transport") == "mpi"]
    events = [e for e in mpi if any(word in str(e.data.get("error", "")) for word in ("No route to host", "unreachable"))]
    # a connection that never completed (EINPROGRESS, ETIMEDOUT, EAGAIN: nothing answered): the same, or a firewall
    silent = [e for e in mpi if e not in events and _NO_ANSWER.search(str(e.data.get("error", "")))]
    if not events and not silent:
        return []
    where = attribute(events or silent, tl)
    addrs = sorted({str(e.data["peer_addr"]) for e in events or silent if e.data.get("peer_addr")})
    if not events:
        bridges = [(a, bridge) for a in addrs if (bridge := bridge_gateway(a))]
        title = (f"Open MPI's TCP transport{' on ' + where.text if where.text else ''} got no answer from "
                 f"{', '.join(addrs[:3]) or 'an address a peer announced'}: an interface the peers announce that this "
                 "host does not reach, or a firewall between them")
        if bridges:  # a container bridge's default address, the same on every host that runs Docker or libvirt
            title = (f"Open MPI's TCP transport{' on ' + where.text if where.text else ''} dialled "
                     f"{', '.join(f'{a} ({bridge})' for a, bridge in bridges[:2])}, a bridge every such host has: "
                     "the peers announce their container bridges")
        return [hypothesis(tl, Category.INTERFACE_MISMATCH, 0.75 if bridges else 0.5, title, what=_MPI_WHAT,
                           fix=_MPI_FIX + " If the address is the peer's cluster address, open the ports between the "
                           "hosts (btl_tcp_port_min_v4 and btl_tcp_port_range_v4 fix the range).", where=where,
                           evidence=evidence_of(silent, "no answer from the address a peer announced", 4))]
    title = (f"Open MPI's TCP transport{' on ' + where.text if where.text else ''} has no route to "
             f"{', '.join(addrs[:3]) or 'an address a peer announced'}: it tries every interface the peers announce, "
             "and that one is on a network this host does not reach")
    return [hypothesis(tl, Category.INTERFACE_MISMATCH, 0.8, title, what=_MPI_WHAT, fix=_MPI_FIX, where=where,
                       evidence=evidence_of(events, "no route to the address a peer announced", 4))]


_NO_ANSWER = re.compile(r"Operation now in progress|Connection timed out|timed out|Resource temporarily unavailable"
                        r"|\((?:110|115|11)\)")


_MPI_WHAT = ("Open MPI's TCP transport (btl_tcp) uses every interface it finds. An address present on several hosts "
             "(a Docker or libvirt bridge: 172.17.0.1, 192.168.122.1) or an interface that reaches another network "
             "makes a connection land on the wrong process, or arrive from an address the peer never announced, and "
             "it is refused: the job hangs or aborts while wiring up (Horovod, mpirun-launched training).")
_MPI_FIX = ("Tell Open MPI which network to use: mpirun --mca btl_tcp_if_include <the cluster NIC or its subnet, e.g. "
            "ib0 or 10.0.0.0/16> --mca oob_tcp_if_include <the same> (or --mca btl_tcp_if_exclude lo,docker0,virbr0); "
            "set NCCL_SOCKET_IFNAME to the same interface for NCCL.")


def interface_mismatch(tl: Timeline) -> list[Hypothesis]:
    mpi = _mpi_wrong_peer(tl)
    if mpi:
        return mpi
    per_host: dict[str, tuple[str, str | None, Event]] = {}
    for event in tl.of(Kind.NCCL_BOOTSTRAP):
        host = event.origin.host
        addr = str(event.data.get("addr", ""))
        if host and host not in per_host and not is_loopback(addr):
            per_host[host] = (str(event.data.get("ifname", "")), _subnet(addr), event)
    for event in tl.of(Kind.GLOO_CONNECT_FAILED):
        host = event.origin.host
        addr = str(event.data.get("local_addr", ""))
        if host and host not in per_host and addr and not is_loopback(addr):
            per_host[host] = ("", _subnet(addr), event)
    if len(per_host) < 2:
        return _gloo_no_error(tl) or _dialled_another_network(tl, per_host)
    subnets = Counter(subnet for _, subnet, _ in per_host.values() if subnet)
    ifnames = Counter(ifname for ifname, _, _ in per_host.values() if ifname)
    odd: dict[str, str] = {}
    if len(subnets) > 1:
        (common, count), *rest = subnets.most_common()
        if not rest or rest[0][1] < count:
            for host, (_, subnet, _) in per_host.items():
                if subnet and subnet != common:
                    odd[host] = f"subnet {subnet} (others {common})"
    if len(ifnames) > 1 and not odd:
        (common_if, count), *rest = ifnames.most_common()
        if not rest or rest[0][1] < count:
            for host, (ifname, _, _) in per_host.items():
                if ifname and ifname != common_if and _virtual(ifname):
                    odd[host] = f"interface {ifname} (others {common_if})"
    if not odd:
        return _gloo_no_error(tl)
    failing = any(tl.ranks[r].outcome != "ok" for r in tl.ranks)
    hosts = sorted(odd)
    title = f"host{'s' if len(hosts) > 1 else ''} {', '.join(hosts)} advertised an address on another network: " + \
        "; ".join(f"{h}: {odd[h]}" for h in hosts)
    evidence = evidence_of([per_host[h][2] for h in hosts], "odd interface or subnet")
    evidence += evidence_of([v[2] for h, v in per_host.items() if h not in odd], "the others", MAX_CASCADE)
    culprits = sorted({r for h in hosts for r in tl.hosts.get(h, ())})
    return [hypothesis(tl, Category.INTERFACE_MISMATCH, 0.75 if failing else 0.5, title, culprits=culprits,
                       hosts=hosts, evidence=evidence, root_cause=failing)]


_DOCKER_NETWORKS = ipaddress.ip_network("172.16.0.0/12")


def _network16(addr: str) -> ipaddress.IPv4Network | None:
    ip = ip_of(addr)
    return ipaddress.IPv4Network(f"{ip}/16", strict=False) if isinstance(ip, ipaddress.IPv4Address) else None


def _dialled_another_network(tl: Timeline, per_host: dict[str, tuple[str, str | None, Event]]) -> list[Hypothesis]:
    """One host's lines: its NCCL bootstraps on one private network and failed to connect to a peer's address on
    another (``Bootstrap : Using ens3:172.16.0.16``, then ``socketStartConnect: Connect to 172.21.0.1<57093>
    failed``): the peer advertised an address of another interface (a second NIC, a container network's bridge),
    which this host does not route to. Compared by /16, so hosts of one cloud network in different /24 subnets are
    not taken for it; loopback and link-local peers are A008's."""
    if len(per_host) != 1:
        return []
    host, (ifname, _, boot) = next(iter(per_host.items()))
    own = _network16(str(boot.data.get("addr", "")))
    if own is None or not own.is_private:
        return []
    failed = [e for e in tl.of(Kind.NCCL_CONNECT_FAILED) if (peer := _network16(str(e.data.get("peer_addr") or "")))
              is not None and peer.is_private and peer != own and not is_loopback(str(e.data.get("peer_addr")))
              and not is_link_local(str(e.data.get("peer_addr")))]
    if not failed:
        return []
    peers = sorted({str(e.data.get("peer_addr")) for e in failed})
    title = (f"{host} ({ifname or 'its interface'} {boot.data.get('addr')}) could not connect to "
             f"{', '.join(peers[:3])}, an address on another network: the peer advertised another interface's address")
    what = ("NCCL connects to the address each peer advertised. This host bootstraps on one private network, and the "
            "peer's address is on another it has no route to: the peer's NCCL picked another interface (a second NIC, "
            "a container network's bridge such as 172.18-172.31.0.1), or the hosts are on networks that do not reach "
            "each other.")
    fix = ("Set NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME) to the interface of the network every host shares, on "
           "every host, and check that each host's address on it reaches the others (ping, nc).")
    # a gateway address of Docker's networks (172.17-172.31.x.1, the host's side of a bridge): the peer advertised
    # its bridge, as sure a cause as a refused connection to docker0's 172.17.0.1
    bridge = any(ipaddress.ip_address(p) in _DOCKER_NETWORKS and p.endswith(".0.1") for p in peers)
    if bridge:
        title += " (a container network's bridge)"
    return [hypothesis(tl, Category.INTERFACE_MISMATCH, 0.8 if bridge else 0.55, title, what=what, fix=fix,
                       evidence=evidence_of([boot], "this host's address") + evidence_of(failed, "a peer elsewhere", 3))]


def gloo_no_error(event: Event) -> bool:
    """gloo's connectFullMesh failed with ``… pair.cc:N] no error``: the socket itself reported nothing (or a
    pair's addresses were of different families): an address the hosts do not share, not a peer that is down."""
    return str(event.data.get("error", "")).rstrip().endswith("no error") or bool(event.data.get("family_mismatch"))


def _gloo_no_error(tl: Timeline) -> list[Hypothesis]:
    """connectFullMesh failed with ``no error``: the pairs connected but the handshake did not come back, what
    gloo does when it picked an address on an interface the other host does not answer on (hosts with several
    NICs on different networks: IB, a second Ethernet, docker0). The addresses are not in the lines."""
    events = [e for e in tl.of(Kind.GLOO_CONNECT_FAILED) if gloo_no_error(e)]
    if not events:
        return []
    where = attribute(events, tl)
    if all(e.data.get("family_mismatch") for e in events):
        return [hypothesis(
            tl, Category.INTERFACE_MISMATCH, 0.75, f"gloo paired an IPv4 address with an IPv6 one on "
            f"{where.text or 'a host'}: the hosts advertised addresses of different families", where=where,
            what=("gloo refuses to connect a pair whose two ends are of different address families (2: IPv4, 10: "
                  "IPv6): one host resolved its name (or MASTER_ADDR) to an IPv4 address, the other to an IPv6 one."),
            fix=("Give every host an address of the same family: set GLOO_SOCKET_IFNAME to the interface they share, "
                 "MASTER_ADDR to an IPv4 address (not a name, not 0.0.0.0), and check /etc/hosts on each host."),
            evidence=evidence_of(events, "address families differ", MAX_CASCADE))]
    title = ("gloo could not connect its processes ('connectFullMesh failed … no error'): most likely it uses an "
             "interface the other hosts do not reach")
    what = ("gloo binds to the address its host name resolves to, or to GLOO_SOCKET_IFNAME. On hosts with several "
            "networks (IB, a second Ethernet, docker0) that can be an address the other hosts cannot reach, or reach "
            "on another interface: the connection is set up and then the handshake never completes, and gloo reports "
            "'no error'.")
    fix = ("Set GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) on every host to the interface they share (`ip -br addr`; "
           "`syncdoctor check` lists the candidates), and check that the host name resolves to that address.")
    return [hypothesis(tl, Category.INTERFACE_MISMATCH, 0.55, title, where=where, what=what, fix=fix,
                       evidence=evidence_of(events, "gloo handshake failed", MAX_CASCADE))]


_SOCKET_TYPES = {1: "bootstrap", 2: "proxy", 3: "the socket transport", 4: "the IB transport", 5: "RAS"}
_WRONG_TYPE = re.compile(r"socketFinalizeAccept: wrong type (?P<got>\d+) != (?P<want>\d+)")


def _transports_differ(tl: Timeline) -> list[Hypothesis]:
    """``socketFinalizeAccept: wrong type 4 != 3`` (NCCL 2.12+, net_socket.cc): the socket transport accepted a
    connection a peer opened for the IB transport (socket types: 3 the socket transport, 4 IB's out-of-band
    connection): the two hosts chose different network transports."""
    found = [(e, m) for e in tl.of(Kind.NCCL_WARN) if (m := _WRONG_TYPE.search(e.text)) is not None]
    pairs = {(int(m["got"]), int(m["want"])) for _, m in found}
    if not any({got, want} == {3, 4} for got, want in pairs):
        return []
    events = [e for e, _ in found]
    where = attribute(events, tl)
    got, want = sorted(pairs)[0]
    title = (f"NCCL on {where.text or 'one host'} expected a connection of {_SOCKET_TYPES[want]} and got one of "
             f"{_SOCKET_TYPES[got]}: the hosts use different network transports (InfiniBand on some, sockets on "
             "the others)")
    what = ("NCCL picks its network transport per process: InfiniBand where it finds a usable HCA, sockets "
            "otherwise. One side connected for one transport and the other listened for the other, so the "
            "connection was refused at its first message (socketFinalizeAccept: wrong type).")
    fix = ("Make IB work on every host (the same HCAs visible, `ibv_devinfo`, NCCL_IB_HCA), or use sockets on all of "
           "them (NCCL_IB_DISABLE=1 everywhere); compare the hosts' `NET/IB` / `NET/Socket` INFO lines.")
    return [hypothesis(tl, Category.SOCKET_FALLBACK, 0.65, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, "a connection of the other transport", 3))]


def _one_node(tl: Timeline) -> bool:
    """Every rank of the job (its world size as the lines state it, NCCL's ``nranks``) on one host."""
    hosts = [tl.rank_host(rank) for rank in range(tl.stated_world_size or 0)]
    return bool(hosts) and None not in hosts and len(set(hosts)) == 1


def socket_fallback(tl: Timeline) -> list[Hypothesis]:
    differ = _transports_differ(tl)
    if differ:
        return differ
    networks: dict[str, tuple[str, Event]] = {}
    for event in tl.of(Kind.NCCL_NET):
        host = event.origin.host
        if not host:
            continue
        if event.data.get("network"):
            networks[host] = (str(event.data["network"]), event)
        elif event.data.get("net") == "Socket" and host not in networks:
            networks[host] = ("Socket", event)
    sockets = socket_transport(tl)
    # NCCL 2.8+ says it at INFO, which every run on a machine without IB prints: read only where its sockets run
    # over an IPoIB interface (``NET/Socket : Using [0]ib0:…``), the host's InfiniBand NICs there and not used
    ipoib = sorted({str(name).rstrip(".") for e in sockets for name in e.data.get("ifnames") or ()
                    if str(name).startswith("ib")})
    unavailable = tl.of(Kind.IB_DEVICE_UNAVAILABLE) + (
        [e for e in tl.of(Kind.NCCL_NET) if e.data.get("no_verbs")] if ipoib else [])
    # NCCL's own ``NET/IB : No device found`` WARN says it goes on over sockets, whether or not its next line is kept
    no_device = bool(unavailable) and all("No device found" in str(e.data.get("message") or e.text) for e in unavailable)
    if unavailable and (sockets or no_device) and len(networks) < 2:
        # one host's paste: an IB device NCCL could not open, then 'Using network Socket'
        where = attribute(unavailable, tl)
        # no RDMA library, or no HCA at all (``NET/IB : No device found``): nothing says the host has IB NICs
        library = all(any(word in str(e.data.get("message") or e.text) for word in ("libibverbs", "No device found"))
                      for e in unavailable)
        title = (f"NCCL could not open the InfiniBand device{' on ' + where.text if where.text else ''} and fell back to "
                 "TCP sockets")
        what = ("NCCL found the HCA but could not open it (a container without the device files or the RDMA "
                "libraries, a missing driver), so it used TCP sockets: slow, and where the other hosts use IB, the "
                "communicators cannot connect.")
        if library and not ipoib and _one_node(tl):
            return []  # every rank of the job on this one host: its GPUs never use the network transport
        if library:  # on a machine without IB NICs, or for a job on one node, that is no failure
            title = (f"NCCL found no InfiniBand library or device{' on ' + where.text if where.text else ''} and "
                     "uses TCP sockets: a cause only if the hosts have IB NICs")
            what = ("NCCL loads libibverbs to use InfiniBand or RoCE NICs; without it, it uses TCP sockets. On a "
                    "machine without such NICs, and within one node (where GPUs talk over NVLink, PCIe or shared "
                    "memory), that warning is harmless; where the hosts do have IB NICs, this host is slow or cannot "
                    "connect to the others that use them.")
        if library and ipoib:
            title = (f"NCCL could not load libibverbs{' on ' + where.text if where.text else ''} and runs over TCP "
                     f"sockets on {', '.join(ipoib)} (IPoIB): the host's InfiniBand NICs are there, NCCL does not use "
                     "them")
            what = ("NCCL loads libibverbs (rdma-core) to use InfiniBand or RoCE NICs; it could not, so its traffic "
                    f"goes over TCP on {', '.join(ipoib)}, the IP interface of an InfiniBand NIC: many times slower, "
                    "and where other hosts use IB, the communicators cannot connect. Most often the image lacks the "
                    "RDMA libraries (libibverbs, the NIC's provider: libmlx5).")
        # (library alone where the inputs name no host but this one: nothing says the job spans hosts at all)
        alone = len({e.origin.host for e in tl.events if e.origin.host} | set(where.hosts)) == 1
        return [hypothesis(tl, Category.SOCKET_FALLBACK,
                           0.6 if library and ipoib else (0.25 if alone else 0.35) if library else 0.7,
                           title, what=what,
                           evidence=evidence_of(unavailable, "the IB device could not be used", 4)
                           + evidence_of(sockets[:2], "falls back to sockets"),
                           where=where,
                           fix="Run the container with the RDMA devices (--device=/dev/infiniband, --cap-add=IPC_LOCK, "
                               "--network=host) and the rdma-core libraries; check `ibv_devinfo` inside it.")]
    asked = [e for e in tl.of(Kind.NCCL_ENV) if (e.data.get("name") == "NCCL_IB_HCA"
             and not str(e.data.get("value", "")).lstrip("=").startswith("^"))
             or (e.data.get("name") == "NCCL_IB_DISABLE" and str(e.data.get("value", "")).strip(" =.") == "0")]
    asked.sort(key=lambda e: e.data.get("name") != "NCCL_IB_HCA")  # the NICs it names, where it does, first
    nets = tl.of(Kind.NCCL_NET)
    used = {str(e.data["network"]) for e in nets if e.data.get("network")}
    # NCCL's INFO ``NET/IB : No device found.``, where no plugin takes over (EFA's prints the same first)
    none = [e for e in nets if e.data.get("no_ib_device")] if not any(
        e.data.get("plugin_at_work") or e.data.get("plugin") not in (None, "internal") for e in nets) else []
    broken = [e for e in nets if e.data.get("plugin_broken")]
    if broken and sockets and used <= {"Socket"}:
        return _plugin_not_loaded(tl, broken, sockets)
    if broken and not used:  # no network chosen in the lines: the plugin's library is what they show
        return _plugin_not_loaded(tl, broken, [])
    if asked and (sockets or none) and used <= {"Socket"}:
        return _asked_for_ib(tl, asked, sockets or none)
    if len(networks) < 2:
        return []
    socket_hosts = sorted(h for h, (net, _) in networks.items() if net == "Socket")
    others = sorted(h for h, (net, _) in networks.items() if net != "Socket")
    if not socket_hosts or not others:
        return []
    failing = any(state.outcome != "ok" for state in tl.ranks.values())
    title = (f"NCCL on {', '.join(socket_hosts)} uses sockets while {', '.join(others)} use "
             f"{networks[others[0]][0]}")
    evidence = evidence_of([networks[h][1] for h in socket_hosts], "falls back to sockets")
    evidence += evidence_of([networks[h][1] for h in others], "the others", MAX_CASCADE)
    culprits = sorted({r for h in socket_hosts for r in tl.hosts.get(h, ())})
    return [hypothesis(tl, Category.SOCKET_FALLBACK, 0.7 if failing else 0.5, title, culprits=culprits,
                       hosts=socket_hosts, evidence=evidence, root_cause=failing)]


def _asked_for_ib(tl: Timeline, asked: list[Event], sockets: list[Event]) -> list[Hypothesis]:
    """NCCL_IB_HCA names the InfiniBand or RoCE NICs to use (or NCCL_IB_DISABLE=0 asks for them), and NCCL still uses
    TCP sockets: it found none of them (``NET/IB : No device found``). Whoever set it expects IB there; across hosts,
    sockets are slow at best, and hosts that did find their NICs cannot connect to this one."""
    where = attribute(sockets, tl)
    hcas = str(asked[0].data.get("value", "")).strip().rstrip(".")[:80]
    ask = (f"NCCL_IB_HCA asks for {hcas}" if asked[0].data.get("name") == "NCCL_IB_HCA"
           else "NCCL_IB_DISABLE=0 asks for InfiniBand")
    title = f"{ask}, but NCCL{' on ' + where.text if where.text else ''} found no InfiniBand device and uses TCP sockets"
    what = ("NCCL_IB_HCA (or NCCL_IB_DISABLE=0) says NCCL should use IB or RoCE NICs, so the hosts are meant to talk "
            "over RDMA; NCCL found none of them usable and took its TCP socket transport instead: RDMA is not enabled there (the "
            "driver or rdma-core not loaded, a container without /dev/infiniband), or the names do not match the "
            "host's (`ibv_devices`). Training across nodes then runs at TCP speed, or fails where other hosts use IB.")
    fix = ("On that host, `ibv_devinfo` must list the NICs NCCL_IB_HCA names (port state ACTIVE); in containers add "
           "--device=/dev/infiniband --cap-add=IPC_LOCK (Kubernetes: the RDMA device plugin's resource) and the "
           "rdma-core libraries; then NCCL's INFO line says `Using network IB`.")
    # NCCL_IB_DISABLE=0 is its default, set by many templates: a weaker ask than NICs named
    confidence = 0.6 if asked[0].data.get("name") == "NCCL_IB_HCA" else 0.45
    return [hypothesis(tl, Category.SOCKET_FALLBACK, confidence, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(asked[:1], "IB asked for") + evidence_of(sockets[:2], "sockets used"))]


def _plugin_not_loaded(tl: Timeline, broken: list[Event], sockets: list[Event]) -> list[Hypothesis]:
    """A network plugin is installed (NCCL found its library) but could not be loaded, a library it needs missing, and
    NCCL took its TCP sockets: whoever installed the plugin meant the job to use that fabric (EFA, GPUDirect-TCPX)."""
    where = attribute(broken + sockets, tl)
    lib, missing = str(broken[0].data["plugin_broken"]), str(broken[0].data.get("missing"))
    title = (f"NCCL's network plugin {lib} is installed but could not load ({missing} not found)"
             f"{' on ' + where.text if where.text else ''}: NCCL uses "
             + ("TCP sockets instead" if sockets else "its internal transport instead (TCP sockets where it finds no "
                                                      "InfiniBand NIC): the plugin's libraries, not the network"))
    what = (f"NCCL found the network plugin {lib} but the dynamic loader could not open a library it needs ({missing}), "
            "so NCCL went on with its own transport (" + ("TCP sockets here" if sockets else "InfiniBand verbs where it "
            "finds a NIC, else TCP sockets") + "): the fabric the plugin drives (EFA with aws-ofi-nccl, "
            "GPUDirect-TCPX/TCPXO, a vendor's) is not used, training across nodes runs at TCP speed, and hosts whose "
            "plugin did load cannot connect to this one.")
    fix = (f"Make {missing} findable where the job runs: install the package that provides it (libfabric from the EFA "
           "installer for aws-ofi-nccl) and add its directory to LD_LIBRARY_PATH (/opt/amazon/efa/lib, the container's "
           "own); NCCL's INFO must then say `NET/OFI Selected Provider …` or the plugin's name, not `Using network "
           "Socket`.")
    # without the sockets in the lines, what they show is an installation whose libraries do not fit (A028)
    return [hypothesis(tl, Category.SOCKET_FALLBACK if sockets else Category.UNRECOGNISED, 0.7 if sockets else 0.55,
                       title, what=what, fix=fix, where=where,
                       evidence=evidence_of(broken[:1], "the plugin that did not load")
                       + evidence_of(sockets[:2], "sockets used"))]


def network_partition(tl: Timeline) -> list[Hypothesis]:
    lost = _daemon_lost(tl)
    if lost:
        return lost
    ranks = tl.ranks
    if not ranks:
        return []
    timed = [r for r, s in ranks.items() if s.has(*TIMEOUT_KINDS)]
    if len(timed) < len(ranks) or any(s.outcome in ("crashed", "killed", "silent") for s in ranks.values()):
        watch = _watch_unreachable(tl)
        return watch
    store_errors = [e for e in tl.of(Kind.STORE_ERROR)
                    if e.data.get("what") in ("socket-timeout", "connect") and e.origin.host
                    and not e.data.get("at_shutdown")]
    hosts_with = sorted({e.origin.host for e in store_errors if e.origin.host})
    all_hosts = sorted(tl.hosts)
    if not hosts_with or len(hosts_with) >= len(all_hosts):
        return _watch_unreachable(tl)
    culprits = sorted({r for h in hosts_with for r in tl.hosts.get(h, ())})
    title = (f"host{'s' if len(hosts_with) > 1 else ''} {', '.join(hosts_with)} lost the network: every rank timed "
             f"out and only {', '.join(hosts_with)} could not reach the rendezvous store")
    what = (f"All {len(ranks)} ranks timed out in the same collective (none was missing or crashed), and the "
            f"store connections of {', '.join(hosts_with)} timed out while the other hosts' did not: the link of "
            f"{', '.join(hosts_with)} is down or cut off.")
    evidence = evidence_of(store_errors[:4], "cannot reach the store")
    evidence += evidence_of([ranks[r].of(*TIMEOUT_KINDS)[0] for r in timed], "timed out", MAX_CASCADE)
    return [hypothesis(tl, Category.NETWORK_PARTITION, 0.75, title, culprits=culprits, hosts=hosts_with,
                       affected=[r for r in timed if r not in culprits], what=what, evidence=evidence)]


def _daemon_lost(tl: Timeline) -> list[Hypothesis]:
    """mpirun lost its daemon on a node while the job ran (``ORTE has lost communication with its daemon located on
    node: hostname: …``): the node went down or lost its network, and mpirun ended the job."""
    events = [e for e in tl.of(Kind.LAUNCH_UNREACHABLE) if e.data.get("lost") and e.data.get("host")]
    if not events:
        return []
    hosts = sorted({str(e.data["host"]) for e in events})
    title = (f"mpirun lost its daemon on {', '.join(hosts[:4])}: that node went down or lost its network, and the job "
             "was ended")
    what = ("Open MPI's mpirun keeps a TCP connection to a daemon (orted, prted) on every node. It broke for "
            f"{', '.join(hosts[:4])}: the node rebooted, crashed or was reclaimed, its network went down, or the daemon "
            "itself died (killed by the OOM killer with the ranks it started). mpirun cannot recover and ends the job.")
    fix = (f"Look at {', '.join(hosts[:4])} at that time: its uptime and kernel log (a reboot, the OOM killer, a NIC "
           "going down), the cloud's or scheduler's events (an instance reclaimed or failed); keep it out of the "
           "next job until it checks out (`syncdoctor check` there).")
    culprits = sorted({r for h in hosts for r in tl.hosts.get(h, ())})
    return [hypothesis(tl, Category.NETWORK_PARTITION, 0.75, title, culprits=culprits, hosts=hosts, what=what,
                       fix=fix, evidence=evidence_of(events, "mpirun lost the node's daemon", MAX_CASCADE))]


def _watch_unreachable(tl: Timeline) -> list[Hypothesis]:
    out = []
    for event in tl.of(Kind.WATCH):
        kind = str(event.data.get("kind", "")).lower()
        hosts = list(event.data.get("hosts") or [])
        if ("unreachable" in kind or "partition" in kind) and event.data.get("status") not in ("resolved", "info"):
            title = f"syncdoctor watch: {', '.join(hosts) or 'a host'} unreachable"
            out.append(hypothesis(tl, Category.NETWORK_PARTITION, 0.8, title, culprits=list(event.data.get("ranks") or []),
                                  hosts=hosts, what=str(event.data.get("message") or "The watcher lost these hosts."),
                                  evidence=evidence_of([event], "watch event")))
    return out


_LATE_FACTOR = 2  # a timeout reported after twice its limit (and a minute more) was reported late


def _late_watchdog(tl: Timeline, timed: list[int]) -> tuple[str, str]:
    """What a timeout reported long after its limit says (``Timeout(ms)=1800000) ran for 25624887 milliseconds``):
    the watchdog, which checks its collectives continually, could not run itself for that long. (A few words for
    the title, the sentences for the text; empty when every timeout was reported in time.)"""
    for rank in timed:
        for event in tl.ranks[rank].of(*TIMEOUT_KINDS):
            ran, limit = event.data.get("ran_ms"), event.data.get("timeout_ms")
            if isinstance(ran, int) and isinstance(limit, int) and limit > 0 and ran >= _LATE_FACTOR * limit + 60_000:
                late = format_duration((ran - limit) / 1000)
                return f"rank {rank}'s watchdog reported it {late} late", (
                        f"Rank {rank}'s watchdog reported its timeout {late} late: the "
                        f"collective ran {format_duration(ran / 1000)} against a limit of "
                        f"{format_duration(limit / 1000)}. PyTorch's watchdog checks its collectives continually, so "
                        "it could not run itself for that long: a CUDA call hung in the driver (a GPU that stopped "
                        "answering; PyTorch's heartbeat monitor ends such a process when it is on), the process was "
                        "stopped (SIGSTOP, a debugger) or the machine suspended. Check the host's dmesg for Xid errors "
                        "at that time.")
    return "", ""


_SHORT_LIMIT_MS = 180_000  # a collective timeout of three minutes or less: set by the job, far below the defaults


def _short_limit(tl: Timeline, timed: list[int]) -> str:
    """The collectives' timeout, in words, when every timeout that names it names one of three minutes or less (a
    job's or a framework's own setting: OpenNMT-py's 60 s); empty otherwise."""
    limits = {e.data.get("timeout_ms") for r in timed for e in tl.ranks[r].of(*TIMEOUT_KINDS)} - {None}
    if not limits or not all(isinstance(v, int) and 0 < v <= _SHORT_LIMIT_MS for v in limits):
        return ""
    return format_duration(max(int(v) for v in limits if isinstance(v, int)) / 1000)


def unexplained_timeout(tl: Timeline) -> list[Hypothesis]:
    timed = sorted(r for r, s in tl.ranks.items() if s.has(*TIMEOUT_KINDS))
    if not timed:
        return []
    title = (f"rank{'s' if len(timed) > 1 else ''} {fmt_ranks(timed)} timed out in a collective and the logs do "
             "not say which rank or link held them up")
    ras = [e for e in tl.of(Kind.RAS) if e.data.get("issue") == "STATUS" and e.data.get("errors") == "OK"]
    what = ""
    if ras:
        what = ("NCCL's RAS report shows every communicator running with no error: every rank launched the same "
                "collectives, none is missing or dead. The collective stalled inside NCCL: a link, a NIC or a GPU "
                "(check the hosts' dmesg for Xid and NIC errors, and syncdoctor probe the links).")
    late_words, late = _late_watchdog(tl, timed)
    if late_words:
        title += f" ({late_words})"
    unseen = tl.unseen(max(tl.ranks) + 1)
    fix = None
    if unseen and not ras:
        fix = (f"Read the log of rank{'s' if len(unseen) > 1 else ''} {fmt_ranks(unseen)} at that time (torchrun "
               "--log-dir, the job's full output): one that logged no timeout never entered the collective. "
               "Re-run with Flight Recorder dumps (TORCH_NCCL_DUMP_ON_TIMEOUT=1, or syncdoctor watch) to have "
               "every rank's position.")
        what = (f"No line of the inputs comes from rank{'s' if len(unseen) > 1 else ''} {fmt_ranks(unseen)}, and "
                "nothing else says whether one of them never arrived (working alone, hung) or timed out as well, "
                "outside this excerpt. Their logs, or the Flight Recorder dumps of every rank "
                "(TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1, then syncdoctor analyze the "
                "dumps), say which: a rank that never entered the collective is the one to look at.")
    if late:
        what = (what + " " if what else "") + late
    short = _short_limit(tl, timed)
    if short:
        title += f" (a limit of only {short})"
        what = (what + " " if what else "") + (
            f"The collectives' timeout is only {short}, far below PyTorch's defaults (10 minutes for NCCL in recent "
            "releases, 30 before and for gloo): a rank that works alone that long (an evaluation, a checkpoint, a "
            "slow batch or a data loader's stall) trips it without any fault.")
        fix = (f"Raise the timeout (init_process_group(timeout=...), or the framework's setting that passes {short}) "
               "above the longest work a rank does alone, then see whether it still times out. "
               + (fix or CATEGORY_RULES[Category.UNEXPLAINED_TIMEOUT.value].fix))
    return [hypothesis(tl, Category.UNEXPLAINED_TIMEOUT, 0.3, title, affected=timed, what=what, fix=fix,
                       evidence=evidence_of([tl.ranks[r].of(*TIMEOUT_KINDS)[0] for r in timed], "timed out",
                                            MAX_CASCADE) + evidence_of(ras, "NCCL RAS: running, no error", 2),
                       root_cause=False)]
