"""A job that could not get started across its hosts: NCCL versions that differ (A022), a peer or store that
cannot be reached (A023), a rendezvous or store that timed out waiting for ranks that never came (A024).
Pure: no I/O.

A store wait that names the missing ranks is A010 (:mod:`.progress`); an address that is loopback or a
container's is A008 and a missing interface A009 (:mod:`.network`): those are more specific and win.
"""

from __future__ import annotations

import ipaddress
import re
from collections import defaultdict
from collections.abc import Callable
from typing import NamedTuple

from syncdoctor.analyze.model import Category, Event, Hypothesis, Kind, Ref
from syncdoctor.analyze.parsers.gloo import is_loopback
from syncdoctor.analyze.parsers.nccl_info import PLUGIN_NETS
from syncdoctor.analyze.rules.common import (
    ARGPARSE_REFUSAL,
    LOOPBACK_STORE,
    MAX_CASCADE,
    attribute,
    bridge_gateway,
    evidence_of,
    fmt_ranks,
    hypothesis,
    ip_of,
    is_link_local,
    unroutable,
    writer_hosts,
)
from syncdoctor.analyze.rules.fallback import error_events
from syncdoctor.analyze.rules.network import gloo_no_error
from syncdoctor.analyze.rules.partial import connect_timed_out, timed_out_forming
from syncdoctor.analyze.rules.phrases import strongest
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, Timeline

__all__ = ["build_lacks_backend", "host_name_shared", "hpc_fabric_setup", "nccl_plugin_mismatch", "nccl_version_mismatch",
           "net_plugin_error", "notebook_kernel_relaunched", "pci_tree_unreadable", "peer_unreachable", "rendezvous_closed", "rendezvous_timeout",
           "store_port_taken", "topology_file", "trainers_never_ready"]

_UNREACHABLE = ("refused", "No route", "unreachable", "timed out", "timeout", "Timeout",
                "connection abort", "Proxy Call", "could not complete")  # ECONNABORTED: WSL and Docker bridges drop a connect half-way


def nccl_version_mismatch(tl: Timeline) -> list[Hypothesis]:
    """Hosts (or log files, when a paste has no host) that print different NCCL versions."""
    by_place: dict[str, dict[str, Event]] = defaultdict(dict)
    for event in tl.of(Kind.NCCL_VERSION):
        version = str(event.data.get("version") or "")
        place = str(event.data.get("place") or "") or _host_of_file(tl, event) or event.origin.host or event.ref.source
        if version:
            by_place[version].setdefault(place, event)
        if event.data.get("peer_version"):  # RAS compared this process with a peer: the peer's release too
            by_place[str(event.data["peer_version"])].setdefault(str(event.data.get("peer_addr")), event)
    if len(by_place) < 2:
        return []
    ranked = sorted(by_place.items(), key=lambda item: (len(item[1]), item[0]))
    odd_version, odd = ranked[0]
    others = [v for v, _ in ranked[1:]]
    places = sorted(odd)
    hosts = [p for p in places if "/" not in p and "\\" not in p]
    kind = "ranks" if all(p.startswith("rank ") for p in places) else "hosts"  # init's check names two ranks
    title = (f"{', '.join(places)} run{'s' if len(places) == 1 else ''} NCCL {odd_version} while the other {kind} run "
             f"NCCL {', '.join(others)}")
    what = ("The hosts of one job must run the same NCCL (and the same net plugin): "
            + "; ".join(f"NCCL {v} on {', '.join(sorted(p))}" for v, p in sorted(by_place.items())) + ".")
    evidence = evidence_of(list(odd.values()), f"NCCL {odd_version}")
    for version in others:
        evidence += evidence_of(list(by_place[version].values())[:3], f"NCCL {version}")
    return [hypothesis(tl, Category.NCCL_VERSION_MISMATCH, 0.85 if len(by_place[others[0]]) > len(odd) else 0.6,
                       title, hosts=hosts, what=what, evidence=evidence, processes=[] if hosts else places)]


def nccl_plugin_mismatch(tl: Timeline) -> list[Hypothesis]:
    """Hosts that load different NCCL network plugins (one the vendor's IB/SHARP plugin, another the internal
    transport): they cannot build the same connections, and the collectives across them hang or fail. UCX's
    refusal of a peer's address packed by another UCX release says the same of UCX."""
    return _plugins_that_differ(tl) + _ucx_releases_that_differ(tl)


def _ucx_releases_that_differ(tl: Timeline) -> list[Hypothesis]:
    """UCX's ``address version mismatch``: a peer's worker address in another release's format (two UCX builds in
    one job, or a build and the system's libucx found first on LD_LIBRARY_PATH); the crash after it is its
    consequence."""
    refused = [e for e in tl.of(Kind.ERROR_LINE) if e.data.get("source") == "ucx-address-version"]  # parsers.launchers
    if not refused:
        return []
    where = attribute(refused, tl)
    title = (f"the job's processes run different UCX releases: {where.text or 'a process'} could not read a peer's "
             f"address (UCX address version mismatch: expected {refused[0].data.get('expected')}, actual "
             f"{refused[0].data.get('actual')})")
    what = ("UCX packs each process's worker address in its own release's format; a process that reads one packed by "
            "another release refuses it, and the connection (then often the process) fails. Two UCX installations "
            "are in use: hosts with different ones, or one process that loads the system's libucx instead of the one "
            "the MPI or NCCL plugin was built against.")
    fix = ("Use one UCX on every host: `ucx_info -v` on each, `ldd` on the MPI library or NCCL plugin to see which "
           "libucp.so it loads, and LD_LIBRARY_PATH pointing at the same installation everywhere.")
    # the process that refused a peer's address names neither side as the odd one: no culprit
    return [hypothesis(tl, Category.NCCL_VERSION_MISMATCH, 0.8, title, what=what, fix=fix,
                       evidence=evidence_of(refused, "UCX release differs", 4))]


def _plugins_that_differ(tl: Timeline) -> list[Hypothesis]:
    by_plugin: dict[str, dict[str, Event]] = defaultdict(dict)
    for event in tl.of(Kind.NCCL_NET):
        plugin = event.data.get("plugin")
        host = event.origin.host or _host_of_file(tl, event)
        if plugin and host:
            by_plugin["internal" if plugin == "internal" else "loaded"].setdefault(host, event)
    loaded, internal = by_plugin.get("loaded", {}), by_plugin.get("internal", {})
    both = set(loaded) & set(internal)
    loaded = {h: e for h, e in loaded.items() if h not in both}
    internal = {h: e for h, e in internal.items() if h not in both}
    if not loaded or not internal:
        return []
    odd, common = (internal, loaded) if len(internal) <= len(loaded) else (loaded, internal)
    odd_hosts = sorted(odd)
    without = odd is internal
    title = (f"{', '.join(odd_hosts)} {'run' if len(odd_hosts) > 1 else 'runs'} "
             + ("without the NCCL network plugin the other hosts load" if without else
                "an NCCL network plugin the other hosts do not load"))
    what = ("The hosts of one job must load the same NCCL network plugin (the vendor's IB/SHARP plugin, or none): "
            f"{', '.join(sorted(loaded))} load{'s' if len(loaded) == 1 else ''} one, "
            f"{', '.join(sorted(internal))} use{'s' if len(internal) == 1 else ''} NCCL's internal transport. Their "
            "connections do not match, and collectives across them hang or fail.")
    fix = ("Install the same plugin on every host (and the same NCCL), or point NCCL_NET_PLUGIN / LD_LIBRARY_PATH "
           "at it the same way everywhere; `syncdoctor check` on each host shows what it would load.")
    evidence = evidence_of(list(odd.values()), "plugin differs") + evidence_of(list(common.values())[:3], "the others")
    confidence = 0.7 if len(common) > len(odd) else 0.5
    return [hypothesis(tl, Category.NCCL_VERSION_MISMATCH, confidence, title, hosts=odd_hosts, what=what, fix=fix,
                       evidence=evidence)]


def _host_of_file(tl: Timeline, event: Event) -> str | None:
    """The host NCCL's own prefixes name in the same file (a per-node file whose version line is bare, whose
    file name may only say ``node-1``)."""
    for other in tl.events:
        if other.ref.source == event.ref.source and other.kind in _NCCL_KINDS and other.origin.pid is not None \
                and other.origin.host:
            return other.origin.host
    return None


_NCCL_KINDS = (Kind.NCCL_BOOTSTRAP, Kind.NCCL_NET, Kind.NCCL_INIT, Kind.NCCL_ENV, Kind.NCCL_VERSION, Kind.NCCL_WARN)


_UNRESOLVED = ("host not found", "Name or service not known", "Temporary failure in name resolution",
               "nodename nor servname provided")
_STORE_FRAMES = ("rendezvous", "TCPStore", "init_process_group", "c10d")


# a connection that failed as it was opened: c10d raises these bare (``RuntimeError: Connection reset by peer``
# from init_process_group when a sidecar or a firewall drops the store's connection), in the frames that open
# the store (a reset in the rendezvous's shutdown is the store gone at the end, read apart)
_CONNECT_WORDS = ("Connection reset by peer", "Connection refused", "No route to host", "Network is unreachable")
_OPENING_FRAMES = ("init_process_group", "_create_c10d_store", "TCPStore(", "_rendezvous_handler", "next_rendezvous")


def _store_connect_failed(event: Event) -> bool:
    """A traceback of init_process_group / the rendezvous that failed to resolve the store's host name, or to
    connect to it as it opened it."""
    message = str(event.data.get("message", ""))
    frames = " ".join(str(f) for f in event.data.get("frames") or ())
    return ((any(w in message for w in _UNRESOLVED) and any(w in frames for w in _STORE_FRAMES))
            or ((any(w in message for w in _CONNECT_WORDS) or connect_timed_out(message))
                and any(w in frames for w in _OPENING_FRAMES)))


def _raised_elsewhere(tl: Timeline) -> set[Ref]:
    """Lines whose exception's traceback shows no store frame: a resolver error there (a download's, a
    database's) is not the store's, though c10d's old ``host not found:`` text reads the same."""
    return {e.ref for e in tl.of(Kind.EXCEPTION)
            if e.data.get("frames") and not any(w in " ".join(str(f) for f in e.data["frames"]) for w in _STORE_FRAMES)}


def _connected_after_all(tl: Timeline, event: Event) -> bool:
    """A warning of c10d's client for one address of the store's name, after which the launcher's workers ran and
    one of them exited with an error of its own (torchrun's record of its exit code, the rendezvous behind it): the
    client reached the store by another address. (c10d's client warns for each address of the store's name it could
    not use and tries the next, Windows' 10049 for the name's IPv6 address, errno 97/99 on Linux: ``[W …socket.cpp:601]
    [c10d] The client socket has failed to connect to [Adam]:29500 (system error: 10049 - …)``; the store's parser
    marks that warning ``per_address``.)"""
    if not event.data.get("per_address"):
        return False
    return any(e.ref.source == event.ref.source and e.ref.line > event.ref.line and e.data.get("exitcode") not in (None, 0)
               and e.data.get("source") in ("agent", "torchrun") for e in tl.of(Kind.WORKER_FAILED)) or any(
        # or a worker's script refused its command line below it (the launcher had started it: a paste cut before
        # the launcher's record)
        e.ref.source == event.ref.source and e.ref.line > event.ref.line
        and _ARGPARSE.match(str(e.data.get("message", ""))) for e in tl.of(Kind.ERROR_LINE))


_ARGPARSE = re.compile(ARGPARSE_REFUSAL)


def _as_ipv4(number: str) -> str:
    """The IPv4 address that inet_aton (and so getaddrinfo) makes of a host name of digits alone."""
    value = int(number) & 0xFFFFFFFF
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


_LINK_LOCAL_FIX = ("Give the store a routable address of the host: MASTER_ADDR (or the engine's own, e.g. VLLM_HOST_IP) "
                   "set to the address of the interface the hosts share, GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to "
                   "that interface; in containers, host networking.")


def peer_unreachable(tl: Timeline) -> list[Hypothesis]:
    elsewhere = _raised_elsewhere(tl)
    store = [e for e in tl.of(Kind.STORE_ERROR) if e.data.get("what") == "connect" and not e.data.get("at_shutdown")
             and (e.ref not in elsewhere or e.data.get("source") == "xla-mesh")  # (torch_xla's words are its own)
             and not _connected_after_all(tl, e)
             and not (e.data.get("source") == "paddle-launch" and not _nowhere_endpoints(e))]  # trainers_never_ready
    # Paddle's NCCL-id exchange retries each dial until the peer listens: only its loopback endpoints are read
    dialled = [e for e in store if e.data.get("source") == "paddle-comm-id"]
    store = [e for e in store if e.data.get("source") != "paddle-comm-id"]
    store += [e for e in tl.of(Kind.EXCEPTION) if _store_connect_failed(e)]
    if store and all(e.data.get("ipv6_loopback") for e in store) and error_events(tl):  # (which leave that warning out)
        store = []  # localhost's IPv6 address refused (runs print it and go on): the other error says what failed
    nccl = [e for e in tl.of(Kind.NCCL_CONNECT_FAILED)
            if not unroutable(str(e.data.get("peer_addr") or "")) and
            any(w in str(e.data.get("error", "")) for w in _UNREACHABLE) and not _retried_then_joined(tl, e)]
    gloo = [e for e in tl.of(Kind.GLOO_CONNECT_FAILED)
            if not (e.data.get("loopback_remote") or e.data.get("loopback_local") or gloo_no_error(e))]
    out = []
    if store or nccl or gloo:
        events = store + nccl + gloo
        where = attribute(events, tl)
        named = _named_store(tl) if store and not any(e.data.get("store_host") for e in store) else None
        targets = sorted({f"{e.data['store_host']}" + (f":{e.data['store_port']}" if e.data.get("store_port") else "")
                          for e in store if e.data.get("store_host")}
                         | ({named.data["store_host"] + (f":{named.data['store_port']}" if named.data.get("store_port")
                                                          else "")} if named is not None else set())
                         | {f"rank {e.data['peer_rank']}" for e in nccl if e.data.get("peer_rank") is not None}
                         | {str(e.data["peer_addr"]) for e in nccl if e.data.get("peer_addr")}
                         | {str(e.data["remote_addr"]) for e in gloo if e.data.get("remote_addr")})
        told = [e for e in events if not e.data.get("summary")]  # socket.cpp's summary after the addresses' errors
        errors = sorted({str(e.data.get("error") or (e.data.get("message") if e.kind is Kind.EXCEPTION else None)
                             or "timed out") for e in (told or events)})
        what_store = (" the other trainers" if store and all(e.data.get("source") == "paddle-launch" for e in store)
                      else " HCCL's root (the topology server of the communicator's first rank)"
                      if store and all(e.data.get("source") == "hccl" for e in store)
                      else " torch_xla's mesh master (XRT's mesh service, on the first worker)"
                      if store and all(e.data.get("source") == "xla-mesh" for e in store)
                      else " the store (MASTER_ADDR:MASTER_PORT)" if store else " a peer")
        title = (f"{where.text or 'a process'} could not connect to{what_store}"
                 + (f" {', '.join(targets[:3])}" if targets else "") + f" ({'; '.join(errors)[:80]})")
        what = ("A connection every rank needs could not be opened: a firewall between the hosts, a wrong "
                "MASTER_ADDR or port, nobody listening there yet (the rank that serves the store died or never "
                "started), or an address that the other host cannot route to.")
        # the peers (and the store) they dialled are suspects too: nothing listening there, or that host's
        # network is broken
        peers = sorted({str(e.data["peer_addr"]) for e in nccl if e.data.get("peer_addr")}
                       | {str(e.data["remote_addr"]) for e in gloo if e.data.get("remote_addr")}
                       | {str(e.data["store_host"]) for e in store if e.data.get("store_host")}
                       | ({str(named.data["store_host"])} if named is not None else set()))
        suspects = list(where.hosts) + [p for p in peers if p not in where.hosts]
        bridged = sorted(p for p in peers if _docker_bridge(p))
        if bridged:
            what += (f" {', '.join(bridged)} is in 172.17.0.0/16, Docker's default bridge network: a container "
                     "without host networking advertised its own bridge address, which no other host can reach.")
        nowhere = sorted(p for p in peers if _no_host_address(p))
        if nowhere:
            what += (f" {', '.join(nowhere[:3])} is in 0.0.0.0/8, an address no host has: the address the launcher "
                     "worked out for a host is wrong (a resolver or interface set up oddly); give the hosts' addresses "
                     "explicitly (MASTER_ADDR, Paddle's --ips, the node's IP in the launcher's arguments).")
        # a connect that NCCL (before 2.19) was still retrying when the paste ends: it had not given up yet
        retrying = all(e.data.get("retrying") for e in events)
        if retrying:
            title += (": the store client was still retrying (it does until its timeout); when that goes on for minutes, the "
                      "address leads nowhere from there (a VPN's or a removed interface's, a stale host entry)"
                      if all(e.kind is Kind.STORE_ERROR for e in events)
                      else ": NCCL was still retrying, and that process never completed its initialisation")
        if any(e.data.get("invalid_address") for e in store):
            what += (" Here the address itself is missing or malformed (an unset MASTER_ADDR or MASTER_PORT, an "
                     "init_method URL whose port is not a number): print what the launcher or your code passes to "
                     "init_process_group.")
        if any(w in " ".join(errors) for w in _UNRESOLVED):
            what += (" Here the host name itself did not resolve on the connecting host (DNS, /etc/hosts, a pod's "
                     "name before its Service exists): set MASTER_ADDR to an IP address, or make the name resolve "
                     "on every host.")
        evidence = evidence_of(events, "could not connect", MAX_CASCADE)
        if named is not None:
            evidence += evidence_of([named], "where the store is")
        ipv6 = all(e.data.get("ipv6_loopback") for e in events)
        if ipv6:  # the warning most runs print and go on from: below any failure the inputs show
            what += (" Here the only sign is c10d's warning for localhost's IPv6 address (errno 99 or 97: ::1 where "
                     "IPv6 is off), which runs that then connect over IPv4 print too: a cause only if nothing else "
                     "failed; repeated with nothing after it, the client had not connected by any address yet (give "
                     "the store an IPv4 address, MASTER_ADDR=127.0.0.1 on one machine).")
        category = Category.PEER_UNREACHABLE
        stores = {str(e.data["store_host"]) for e in store if e.data.get("store_host")}
        fix = None
        # (below 2**24 the address falls in 0.0.0.0/8; a larger number may be a real address written as one integer)
        numeric = sorted(h for h in stores if h.isdecimal() and 0 < int(h) < 1 << 24)
        if numeric and (nowhere or len(stores) == 1) and not nccl and not gloo:
            # the store's host named by digits alone (a cluster's numbered nodes, torchrun --standalone taking the
            # machine's name): getaddrinfo reads ``3472853`` as the IPv4 address 0.52.253.213, which no host has
            as_ip = _as_ipv4(numeric[0])
            title = (f"the store's host name {numeric[0]} is a number, which the resolver reads as the IPv4 address "
                     f"{as_ip}: no host has it, so {where.text or 'the processes'} could not connect to the store "
                     f"({'; '.join(errors)[:60]})")
            fix = ("Give the store's host as an IP address or a name with a letter in it: MASTER_ADDR or "
                   "--rdzv-endpoint (torchrun --standalone uses the machine's host name: pass --rdzv-endpoint="
                   "127.0.0.1:29500 instead on one node), or an alias for the node in /etc/hosts.")
            suspects = []
        if stores and all(is_link_local(h.split("%")[0]) for h in stores) and not nccl and not gloo:
            # the store's address is link-local (fe80::, 169.254.x.x): what was taken for the host's address is an
            # interface's that reaches its own link only (a container's, one without a routable address)
            category = Category.INTERFACE_MISMATCH
            title = (f"the store's address {', '.join(sorted(stores)[:2])} is link-local (fe80::/10, 169.254.0.0/16), "
                     "reachable on its own link only: the wrong interface's address was taken for the host's"
                     + (f" ({where.text})" if where.text else ""))
            what = ("The address the processes were told to reach the store at is a link-local one: every interface "
                    "has one, but it is usable only on that link and, for IPv6, only with its interface named "
                    "(fe80::…%eth0), so a resolver or connect refuses it. A launcher or an engine that picks the "
                    "host's address itself (vLLM's, Ray's, a container's first interface) took it from an interface "
                    "without a routable address.")
        # HCCL's link table names the rank at the other end of each link that timed out: the one that never came
        # to the communicator's set-up (late, crashed, or unreachable), the rank that logged it only waited
        linked = sorted({int(e.data["peer_rank"]) for e in nccl if e.data.get("peer_rank") is not None})
        awaited = linked if nccl and linked and not store and not gloo \
            and all(e.data.get("transport") == "hccl" for e in nccl) else []
        if awaited:
            what += (" HCCL sets its links up when a communicator is first used, each rank dialling or awaiting its "
                     "peers: a link that timed out names the rank at its other end, which did not reach that point in "
                     "time (it was late or crashed) or whose address cannot be reached from here.")
        out.append(hypothesis(tl, category, 0.25 if ipv6 else 0.5 if retrying else 0.75, title,
                              culprits=awaited or where.ranks, affected=where.ranks if awaited else (),
                              hosts=suspects, fix=fix or (_BRIDGE_FIX if bridged else _LINK_LOCAL_FIX if category is
                                                          Category.INTERFACE_MISMATCH else None),
                              what=what, evidence=evidence,
                              processes=where.processes, local_ranks=where.local_ranks))
        out += _bridge_gateway(tl, [e for e in nccl + gloo if "refused" in str(e.data.get("error", "")).lower()])
        out += _store_on_hostname_loopback(tl, [e for e in store if str(e.data.get("store_host") or "")
                                                .startswith("127.0.1.")])

    out += _paddle_endpoint_on_loopback(tl, dialled)
    if not out:
        out += _reset_while_connecting(tl)
    out += _launch_unreachable(tl)
    if not out:
        out += _store_gone_at_shutdown(tl)
    out += _empty_store_address(tl)
    out += _rendezvous_without_endpoint(tl)
    # (its words, ``unhandled system error``, or its code alone: ``ncclSystemError: System call (e.g. socket, malloc) …``)
    system = [e for e in tl.of(Kind.NCCL_ERROR) if "system error" in str(e.data.get("error", "")).lower()
              or e.data.get("code") == "ncclSystemError"]
    if system and not out and not _ran(tl) and not _topology_failed(tl):
        said = _system_error_in_words(tl, system)
        if said is not None:
            return [said]
        where = attribute(system, tl)
        title = ("NCCL failed with 'unhandled system error' while setting up, before any collective ran: most often "
                 "a connection between the hosts could not be opened")
        what = ("'unhandled system error' is NCCL's error for a failed system call: at initialisation, nearly always "
                "a socket that could not connect (a firewall, containers on bridge networks, an interface the other "
                "host cannot reach), sometimes /dev/shm or locked memory. Its NCCL WARN line names it; run with "
                "NCCL_DEBUG=INFO to get it.")
        out.append(hypothesis(tl, Category.PEER_UNREACHABLE, 0.45, title, what=what,
                              evidence=evidence_of(system, "NCCL's own error", 4),
                              where=where,
                              fix="Re-run with NCCL_DEBUG=INFO (the WARN line names the failed call), run "
                                  "`syncdoctor check` and `syncdoctor probe` on the hosts, run containers with "
                                  "--network=host, and set NCCL_SOCKET_IFNAME to the interface the hosts share."))
    return out


_CONNECTING = ("ncclSocketConnect", "socketConnect", "bootstrapConnect", "socketFinalizeConnect")
_CHAIN_LINES = 10  # NCCL's return chain below its WARN: one INFO line per frame


def _reset_while_connecting(tl: Timeline) -> list[Hypothesis]:
    """NCCL's ``Call to send to ADDR failed : Connection reset by peer`` whose return chain below it runs through a
    connect (``bootstrap.cc:868 -> 6 ncclSocketConnect()``): the other side reset a connection NCCL was still
    setting up, a peer it could not connect to rather than one that went away."""
    chains = [e for e in tl.of(Kind.NCCL_ERROR) if e.data.get("chain") and any(w in e.text for w in _CONNECTING)]
    resets = [e for e in tl.of(Kind.PEER_CLOSED) if e.data.get("transport") == "nccl" and e.data.get("how") == "reset"
              and any(c.ref.source == e.ref.source and e.ref.line < c.ref.line <= e.ref.line + _CHAIN_LINES
                      and c.origin.host == e.origin.host for c in chains)]
    if not resets or _ran(tl):
        return []
    where = attribute(resets, tl)
    peers = sorted({str(e.data["peer_addr"]) for e in resets if e.data.get("peer_addr")})
    title = (f"{where.text or 'a process'} could not connect to a peer{' ' + ', '.join(peers[:3]) if peers else ''}: "
             "the connection was reset while NCCL was setting it up")
    what = ("NCCL opened a connection to that address and the other side reset it at its first message, before any "
            "collective ran: nothing of this job's NCCL listens there (a stale or wrong address, another service or "
            "job on that port), a firewall or proxy that resets connections, or the process there exiting just then.")
    fix = ("Check that address from this host (`nc -vz ADDR PORT` while the job starts), that it belongs to the job's "
           "hosts on the interface they share (NCCL_SOCKET_IFNAME), and the firewall and any proxy between the hosts; "
           "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET on every host.")
    return [hypothesis(tl, Category.PEER_UNREACHABLE, 0.55, title, what=what, fix=fix, where=where,
                       hosts=[*where.hosts, *peers], evidence=evidence_of(resets, "reset while connecting", 4))]


def _system_error_in_words(tl: Timeline, system: list[Event]) -> Hypothesis | None:
    """NCCL's 'unhandled system error' whose failed call is named in plain words on the line or the few lines
    after it (NCCL 2.2x appends ``Last NCCL warning(error) log entry (may be unrelated) '…'``, often re-flowed
    by the paste): ``Error while creating shared memory segment … No space left on device`` is /dev/shm,
    ``ibv_reg_mr`` locked memory."""
    for event in system:
        near = [event] + [e for e in tl.of(Kind.ERROR_LINE, Kind.NCCL_WARN)
                          if e.ref.source == event.ref.source and 0 < e.ref.line - event.ref.line <= _WRAPPED_LINES]
        found = strongest(" ".join((e.text, str(e.data.get("message", "")))) for e in near)
        if found is None or not found[1].cause or found[1].category is Category.PEER_UNREACHABLE:
            continue
        index, reading = found
        where = attribute([event], tl)
        if not (where.ranks or where.hosts or where.processes):  # (an engine's log line: NCCL's own lines say where)
            where = attribute(system, tl)
        title = f"NCCL failed with 'unhandled system error' while setting up, and its last warning says {reading.what}"
        what = ("'unhandled system error' is NCCL's error for a failed system call; the warning NCCL quotes with it "
                f"(or the lines right after it) names the call: {reading.what}.")
        return hypothesis(tl, reading.category, 0.6, title, what=what, where=where,
                          evidence=evidence_of([event], "NCCL's own error")
                          + evidence_of([near[index]] if index else [], f"says {reading.what}"))
    # (a warning that names the failed step pasted apart from the error, as a file of its own or further down:
    # aws-ofi-nccl's ``NET/OFI Unexpected number of remote rails for dev 0. Expected 3 but got 2``; a little less sure)
    elsewhere = tl.of(Kind.ERROR_LINE, Kind.NCCL_WARN)
    found = strongest(" ".join((e.text, str(e.data.get("message", "")))) for e in elsewhere)
    if found is None or not found[1].cause or found[1].category is Category.PEER_UNREACHABLE:
        return None
    index, reading = found
    title = (f"NCCL failed with 'unhandled system error' while setting up, and a warning of the inputs says "
             f"{reading.what}")
    what = ("'unhandled system error' is NCCL's error for a failed system call; no warning beside it names the call, "
            f"but another line of the inputs does: {reading.what}.")
    return hypothesis(tl, reading.category, 0.55, title, what=what, where=attribute(system, tl),
                      evidence=evidence_of(system[:1], "NCCL's own error")
                      + evidence_of([elsewhere[index]], f"says {reading.what}"))


_WRAPPED_LINES = 4  # a quoted warning re-flowed by the paste onto the next lines


def _named_store(tl: Timeline) -> Event | None:
    """The store's address as another line of the paste names it (MASTER_ADDR=, --master_addr, torchelastic's
    "will connect to TCPStore server at"), when they all name one host."""
    named = [e for e in tl.of(Kind.STORE_ENDPOINT)  # not a Paddle trainer's own, nor an empty one, nor a default
             if not e.data.get("listening") and not e.data.get("empty") and not e.data.get("rdzv_no_endpoint")]
    hosts = {str(e.data.get("store_host")) for e in named}
    return named[-1] if len(hosts) == 1 else None


def _empty_store_address(tl: Timeline) -> list[Hypothesis]:
    """The store's address is empty where the launcher's command line or the environment gives it
    (``--master_addr= --master_port=29500``, ``MASTER_ADDR=``): the workers have no host to reach the store at."""
    empty = [e for e in tl.of(Kind.STORE_ENDPOINT) if e.data.get("empty")]
    if not empty:
        return []
    where = attribute(empty, tl)
    title = (f"the store's address is empty{' on ' + where.text if where.text else ''}: the launch gave no host for "
             "MASTER_ADDR (--master_addr=), so no worker can reach the store")
    what = ("The launcher's command line or the environment passes an empty MASTER_ADDR: whatever should have given "
            "the first node's address gave nothing. DeepSpeed's launcher takes it from `hostname -I` on the first node "
            "(empty in some containers and pods); a job script's variable may be unset or misspelt. The workers then "
            "fail to connect to the store, or wait for it until their timeout.")
    fix = ("Give the first node's IP address explicitly (--master_addr, MASTER_ADDR; DeepSpeed: --master_addr), and "
           "check what the script or the launcher derives it from on that node (`hostname -I`, `scontrol show "
           "hostnames`, the pod's IP).")
    return [hypothesis(tl, Category.PEER_UNREACHABLE, 0.5, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(empty, "the store's address, empty", 2))]


def _rendezvous_without_endpoint(tl: Timeline) -> list[Hypothesis]:
    """torchrun's c10d (or etcd) rendezvous asked of several nodes without ``--rdzv_endpoint`` (or with one on the
    loopback): every node's agent takes localhost:29400 (or that), serves a rendezvous of its own there and waits for
    nodes that never join it (higher where the inputs show the launch failing)."""
    events = [e for e in tl.of(Kind.STORE_ENDPOINT) if e.data.get("rdzv_no_endpoint")]
    if not events:
        return []
    first = events[0]
    nodes, backend = first.data.get("nnodes"), first.data.get("rdzv_backend")
    failed = any(e.kind in (Kind.STORE_ERROR, Kind.EXCEPTION, Kind.ERROR_LINE, Kind.WORKER_FAILED, Kind.STACK_DUMP)
                 or e.kind in TIMEOUT_KINDS for e in tl.events)
    said = f"has --rdzv_endpoint={first.data.get('store_host')}" if first.data.get("loopback_endpoint") else \
        "has no --rdzv_endpoint"
    title = (f"torchrun's {backend} rendezvous of {nodes} nodes {said}: each node's agent serves a rendezvous of its "
             "own on its loopback and waits for nodes that never join it")
    what = (f"With --rdzv_backend={backend}, torchrun takes the rendezvous' address from --rdzv_endpoint only "
            "(--master_addr and --master_port serve the static backend alone: torchrun warns so). Without it the "
            "endpoint is localhost:29400; localhost or 127.0.0.1 given is each node's own loopback too. So every "
            "node's agent starts a store of its own, counts itself, and waits for the others until the rendezvous "
            "times out (an elastic range whose minimum is 1 starts each node as a job of its own instead).")
    fix = ("Give every node the same --rdzv_endpoint=HOST:PORT, HOST one of the nodes (the first), reachable from "
           "the others (`syncdoctor check` tests it); or use --rdzv_backend=static with --master_addr, --master_port "
           "and --node_rank.")
    return [hypothesis(tl, Category.RENDEZVOUS_TIMEOUT, 0.6 if failed else 0.4, title, what=what, fix=fix,
                       where=attribute(events, tl),
                       evidence=evidence_of(events[:2], "the launch: no rendezvous endpoint", 2))]


def _store_gone_at_shutdown(tl: Timeline) -> list[Hypothesis]:
    """torchrun's agent could not reach the rendezvous store while closing the rendezvous, and nothing else in
    the inputs failed: the store's host (the first node's agent) had gone. Low: what ended the run is not here."""
    events = [e for e in tl.of(Kind.STORE_ERROR) if e.data.get("at_shutdown")]
    if not events or any(e.kind in TIMEOUT_KINDS or e.kind in (Kind.WORKER_FAILED, Kind.CUDA_OOM, Kind.FATAL_SIGNAL)
                         for e in tl.events):
        return []
    where = attribute(events, tl)
    title = (f"{where.text or 'torchrun'} lost the rendezvous store as it shut down: the host that served it "
             "(the first node's agent) had gone, or the connection to it broke")
    what = ("torchrun's agent closes the rendezvous when its workers end, through the store that the agent of the "
            "rendezvous endpoint's node serves. That connection failed (reset, refused or closed): the serving "
            "agent had exited, its host went down, or the network between them broke. What ended the workers is "
            "not in these lines.")
    fix = ("Read the other nodes' output, the first node's above all, for what ended the run; check that every "
           "node reaches --rdzv-endpoint (`syncdoctor probe`), and that the first node's agent outlives the others.")
    return [hypothesis(tl, Category.PEER_UNREACHABLE, 0.3, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, "the store was gone", 3))]


_DOCKER_BRIDGE = ipaddress.ip_network("172.17.0.0/16")
_UCX_PEER = re.compile(r"Failed to resolve UCX endpoint for rank (\d{1,7})|ucp_ep_create\(proc=(\d{1,7})\) failed")
_BRIDGE_FIX = ("Run the containers with host networking (docker run --network=host, hostNetwork: true), or set "
               "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to an interface whose address the other hosts reach.")


def _bridge_gateway(tl: Timeline, refused: list[Event]) -> list[Hypothesis]:
    """Peers' connections refused at a Docker network's gateway address (``Connect to 172.18.0.1<49273> failed :
    Connection refused``; UCX's ``connect(…, dest_addr=172.17.0.1:42887) failed``): the peer advertised its
    docker0 or br-… interface (A008), the interface NCCL, gloo or UCX picked first."""
    # (a bridge's gateway: a process that advertises it for its sockets gets refused connections from other hosts)
    at = [e for e in refused if bridge_gateway(str(e.data.get("peer_addr") or e.data.get("remote_addr") or "")
                                               .rsplit("<", 1)[0].rsplit(":", 1)[0].strip("[]"))]
    if not at:
        return []
    where = attribute(at, tl)
    addrs = sorted({str(e.data.get("peer_addr") or e.data.get("remote_addr")) for e in at})
    libvirt = all(a.startswith("192.168.122.") for a in addrs)
    title = (f"a peer advertised {'libvirt' if libvirt else 'a Docker network'}'s own bridge address "
             f"({', '.join(addrs[:2])}): {where.text or 'a process'} was refused there")
    what = ("That address is a virtual bridge's gateway on the host itself: Docker's docker0 (172.17.0.1) or a br-… "
            "network's, or libvirt's virbr0 (192.168.122.1), which every host with that software has. The process "
            "that gave it to its peers picked that interface for its sockets (NCCL, gloo, UCX and Open MPI's TCP "
            "transport take the interfaces that are up), and from another host it leads to that host's own bridge, "
            "where nothing listens.")
    fix = ("Set NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME; under Open MPI, --mca btl_tcp_if_include <the NIC> and "
           "UCX_NET_DEVICES with UCX) to the interface that joins the hosts, on every host (`syncdoctor check` lists "
           "them); or exclude the bridges (NCCL_SOCKET_IFNAME=^docker0,br-,virbr,lo; btl_tcp_if_exclude "
           "lo,docker0,virbr0).")
    # the process refused dialled the address; the one that advertised it is its peer: with two hosts in the
    # inputs, the other one
    others = sorted(writer_hosts(tl) - set(where.hosts)) if where.hosts else []
    culprits = sorted(tl.hosts.get(others[0], ())) if len(others) == 1 else []
    # or the rank the refused process says it could not reach (Open MPI's UCX layer: ``Failed to resolve UCX endpoint
    # for rank 1``): the peer that advertised the address
    refused_by = {(e.origin.host, e.origin.pid) for e in at if e.origin.pid is not None}
    named = sorted({int(m[1] or m[2]) for e in tl.events if (e.origin.host, e.origin.pid) in refused_by
                    and (m := _UCX_PEER.search(str(e.data.get("message") or "")))})
    culprits = culprits or named
    said = f"rank{'s' if len(named) > 1 else ''} {fmt_ranks(named)}"
    peer = f" ({said})" if named else ""
    if len(others) == 1:
        title += f"; {others[0]}, the other host{peer}, gave it"
    elif named:
        title += f"; {said}, which it could not reach, gave it"
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.8, title, what=what, fix=fix, culprits=culprits,
                       hosts=others if len(others) == 1 else [], affected=where.ranks,
                       evidence=evidence_of(at, "refused at a bridge's gateway", 4))]


def _paddle_endpoint_on_loopback(tl: Timeline, dialled: list[Event]) -> list[Hypothesis]:
    """PaddlePaddle's trainers dial each other's endpoints to pass NCCL's id; one dials a loopback endpoint while
    another trainer of the job listens on a routable address: the job spans hosts, and a host's endpoints were given
    as 127.0.0.1 (``--ips=127.0.0.1,…`` on one host, or its name resolving to loopback), which the other hosts
    cannot reach. A dial of a loopback endpoint alone is a job on one machine retrying until its peer listens."""
    dialled = [e for e in dialled if is_loopback(str(e.data.get("store_host")))]
    listening = [e for e in tl.of(Kind.STORE_ENDPOINT) if e.data.get("source") == "paddle-comm-id"
                 and not is_loopback(str(e.data.get("store_host")))]
    if not dialled or not listening:
        return []
    title = (f"a PaddlePaddle trainer dials its peer at {dialled[0].data.get('store_host')} while the job's other "
             f"trainers listen on {listening[0].data.get('store_host')}: one host's endpoints were given as loopback")
    what = ("Paddle's launcher builds every trainer's endpoint from --ips (or from the address the host's name "
            "resolves to); a host listed as 127.0.0.1, or whose name maps to loopback, gives the other hosts an "
            "address that leads back to themselves, and NCCL's id exchange, then its init, hangs.")
    fix = ("Pass every host's cluster address in --ips, the same list on every host (`hostname -I`), and map each "
           "host's name to that address in /etc/hosts rather than to 127.0.0.1.")
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.75, title, what=what, fix=fix,
                       evidence=evidence_of(dialled, "dialled a loopback endpoint", 3)
                       + evidence_of(listening, "another trainer's endpoint", 2))]


def _store_on_hostname_loopback(tl: Timeline, store: list[Event]) -> list[Hypothesis]:
    """The store's address is 127.0.1.1: the address Debian and Ubuntu give a host's own name in /etc/hosts (what
    ``hostname -i`` prints there). Taken for MASTER_ADDR (or Paddle's --master), it leads every other host to itself:
    the processes on the store's host connect, the others retry until their timeout."""
    if not store:
        return []
    where = attribute(store, tl)
    addrs = sorted({str(e.data["store_host"]) + (f":{e.data['store_port']}" if e.data.get("store_port") else "")
                    for e in store})
    # more than one host in the inputs: the job spans hosts, and the address cannot work; one host's lines alone
    # may be a job on one machine whose store simply did not start (then the unreachable store says it)
    spans = len(writer_hosts(tl)) > 1
    title = (f"the store's address {', '.join(addrs[:2])} is the loopback Debian and Ubuntu give a host's own name: "
             f"{where.text or 'a process'} on another host cannot reach it"
             + ("" if spans else " (the cause if the job spans hosts)"))
    what = ("127.0.1.1 is how /etc/hosts maps the machine's own host name on Debian and Ubuntu (`hostname -i` prints "
            "it); used as the store's address, it means each host itself, so only the processes on the store's own "
            "host connect and the others wait until their timeout.")
    fix = ("Give MASTER_ADDR (Paddle: --master) the store host's address on the cluster network (`hostname -I`, "
           "`ip -br addr`), or map the host name to that address in /etc/hosts on every host.")
    return [hypothesis(tl, Category.LOOPBACK_ADDRESS, 0.8 if spans else 0.55, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(store, "the store at 127.0.1.1", 4))]


def _no_host_address(addr: str) -> bool:
    """An IPv4 address in 0.0.0.0/8 ("this network"): a source address only, never a host's to connect to."""
    ip = ip_of(addr)
    return isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.IPv4Network("0.0.0.0/8")


def _docker_bridge(addr: str) -> bool:
    ip = ip_of(addr)
    return ip is not None and ip in _DOCKER_BRIDGE


_TOPOLOGY_FILES = ("NCCL_TOPO_FILE", "NCCL_GRAPH_FILE")


def _topology_failed(tl: Timeline) -> list[Event]:
    """NCCL's own errors from its topology or graph search (``graph/search.cc:703 NCCL WARN XML Import Channel :
    dev 1 not found``, the ``graph/…cc:N -> 2`` chain): a topology problem, not a connection."""
    return [e for e in tl.of(Kind.NCCL_WARN, Kind.NCCL_ERROR)
            if str(e.data.get("frame", "")).startswith(("graph/", "misc/xml")) or "XML" in str(e.data.get("message", ""))
            or "graph/" in e.text.split(" NCCL ", 1)[0]]


def _topology_given(tl: Timeline) -> list[Event]:
    """The lines that say NCCL was given a topology or graph file (``NCCL_TOPO_FILE set by environment to …``)."""
    return [e for e in tl.of(Kind.NCCL_ENV) if e.data.get("name") in _TOPOLOGY_FILES]


def topology_file(tl: Timeline) -> list[Hypothesis]:
    """NCCL was given a topology or graph file (NCCL_TOPO_FILE, NCCL_GRAPH_FILE: cloud images set them in
    /etc/nccl.conf for one VM size) and its topology search failed: the file describes another machine."""
    files = _topology_given(tl)
    failed = _topology_failed(tl)
    if not files or not failed:
        return []
    where = attribute(failed, tl)
    given = ", ".join(sorted({f"{e.data['name']}={e.data.get('value')}" for e in files}))
    warn = next((e for e in failed if e.kind is Kind.NCCL_WARN), failed[0])
    title = (f"NCCL could not use the topology it was given ({given}){' on ' + where.text if where.text else ''}: "
             f"{str(warn.data.get('message') or warn.data.get('error') or 'its graph search failed')[:80]}")
    what = ("NCCL_TOPO_FILE and NCCL_GRAPH_FILE replace what NCCL would detect with a description of the machine; "
            "images made for one cloud VM size set them (/etc/nccl.conf), and on another size the file names GPUs "
            "or NICs this machine does not have, so NCCL's topology search fails at init ('unhandled system error' "
            "after it).")
    fix = ("Remove NCCL_TOPO_FILE / NCCL_GRAPH_FILE (from the environment and /etc/nccl.conf) and let NCCL detect "
           "the topology, or use the file made for this machine type.")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.6, title, what=what, fix=fix, where=where,
                       evidence=evidence_of([warn], "NCCL's topology search failed") + evidence_of(files, "given", 2))]


_PCI_PATH = re.compile(r"Could not find real path of (?P<path>/sys/(?:class/pci_bus|bus/pci|devices)/\S+)")


def pci_tree_unreadable(tl: Timeline) -> list[Hypothesis]:
    """NCCL's topology detection could not follow a GPU's or NIC's PCI path in sysfs (``graph/xml.cc:332 NCCL WARN
    Could not find real path of /sys/class/pci_bus/0000:21/../../0000:21:00.0``, then ``unhandled system error``):
    the system shows no real PCI tree for the device (WSL2, a VM without it, a container with /sys masked). The
    INFO line of that wording about a network interface (``/sys/class/net/lo/device``) is harmless and not read."""
    if _topology_given(tl) and _topology_failed(tl):
        return []  # a topology file given by hand: topology_file reads it
    warns = [(e, m) for e in tl.of(Kind.NCCL_WARN) if (m := _PCI_PATH.search(str(e.data.get("message", "")))) is not None]
    if not warns:
        return []
    events = [e for e, _ in warns]
    where = attribute(events, tl)
    path = warns[0][1]["path"]
    failed = bool(tl.of(Kind.NCCL_ERROR, Kind.EXCEPTION))
    title = (f"NCCL could not find the device's place in the host's PCI tree ({path})"
             f"{' on ' + where.text if where.text else ''}: the system shows it no real PCI sysfs")
    what = ("At init NCCL builds the machine's topology by following each GPU's and NIC's path under /sys; this one "
            "does not resolve. That happens where the system does not show its PCI devices: WSL2 (older NCCL "
            "releases did not support it), a virtual machine, or a container whose /sys is masked or not mounted."
            + (" NCCL's init then failed ('unhandled system error' after it)." if failed else ""))
    fix = ("Run where /sys shows the devices (bare metal, PCI passthrough, /sys mounted into the container); on WSL2, "
           "a recent NCCL; or describe the machine by hand with NCCL_TOPO_FILE.")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.6 if failed else 0.45, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, "NCCL's topology detection failed", 4))]


# network plugins' own warnings: aws-ofi-nccl (EFA, libfabric), Google's TCPX/TCPXO (FasTrak) and gIB plugins
# NCCL 2.28+'s GPU-initiated networking over DOCA GPUNetIO (GDAKI): ``transport/net_ib/gdaki/gin_host_gdaki.cc:431
# (gdakiConnectQp) NCCL WARN DOCA failure 21``
_DOCA = "DOCA failure"
# the UCX network plugin of nccl-rdma-sharp-plugins (and RCCL's build of it) checking its UCX calls: ``ucx_plugin.c:498
# NCCL WARN Failed: UCX error ucx_plugin.c:498 '-5' Invalid parameter``
_UCX_PLUGIN = "Failed: UCX error"
_PLUGIN_WARNS = (*PLUGIN_NETS, "SHARP ", _DOCA, _UCX_PLUGIN)


def net_plugin_error(tl: Timeline) -> list[Hypothesis]:
    """A network plugin's own error that no other rule reads (``NET/OFI Couldn't open AV. RC: -22, ERROR:
    Invalid argument``): the plugin, its provider library or the device failed; what follows (``unhandled system
    error``, a hang) is its consequence, not a connection between hosts."""
    events = [e for e in tl.of(Kind.NCCL_WARN) if str(e.data.get("message", "")).startswith(_PLUGIN_WARNS)
              and "register memory" not in str(e.data.get("message", ""))]
    if not events:
        return []
    where = attribute(events, tl)
    message = str(events[0].data.get("message"))
    plugin = "aws-ofi-nccl (libfabric, EFA)" if message.startswith(("NET/OFI", "NET/AWS")) else "the network plugin"
    sharp = message.startswith("SHARP ")
    if sharp:
        plugin = "the SHARP (CollNet) plugin"
    doca = message.startswith(_DOCA)
    if doca:
        plugin = "NCCL's GPU-initiated networking (GIN over DOCA GPUNetIO)"
    ucx = message.startswith(_UCX_PLUGIN)
    if ucx:
        plugin = "the UCX network plugin (nccl-rdma-sharp-plugins)"
    mixed = _plugin_on_some(tl, events, plugin)
    if mixed:
        return mixed
    unanswered = [e for e in events if _EFA_UNRESPONSIVE.search(str(e.data.get("message", "")))]
    if unanswered:
        return _efa_peer_unresponsive(tl, unanswered)
    title = f"{plugin} failed{' on ' + where.text if where.text else ''}: {message[:100]}"
    what = (f"NCCL's inter-node transport is {plugin}, and it reported an error of its own: the provider library, "
            "the device or its configuration failed (the library and NCCL versions, the device's driver, the "
            "provider's settings), before or while connecting. The errors after it (unhandled system error, a "
            "hang, a timeout) follow from it.")
    fix = ("Check the plugin on that host: for EFA, `fi_info -p efa` lists the devices, the aws-ofi-nccl and "
           "libfabric versions must suit the NCCL version (the plugin's release notes), the security group must "
           "allow all traffic between the instances, and FI_* / NCCL_NET / FI_PROVIDER settings must be the same "
           "on every host; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET.")
    if sharp:  # in-network reductions: the switches' SHARP resources (trees, groups) the job could not get
        what = ("NCCL's CollNet transport uses SHARP, reductions in the InfiniBand switches, through the SHARP plugin; "
                "creating its SHARP group failed (the switches' trees or groups are taken or limited, the aggregation "
                "manager refused), so the communicator could not be set up. The errors after it follow from it.")
        fix = ("Run without SHARP to confirm (NCCL_COLLNET_ENABLE=0: NCCL then reduces over the NICs), then check "
               "the SHARP aggregation manager and the job's SHARP resource limits (SHARP_COLL_* settings: fewer "
               "groups or trees, SHARP_COLL_SAT_LOCK_BATCH_SIZE) with the fabric's administrators.")
    if doca:  # the device API's network path: the GPU drives the NIC's queue pairs itself
        what = ("NCCL's GIN lets kernels drive the NIC directly; its DOCA GPUNetIO backend (GDAKI) could not set up "
                "or connect its queue pairs on that NIC, so the communicator's device-side network could not be built "
                "(a RoCE port without the GRH addressing it needs, a GID index, DOCA or firmware versions NCCL does not "
                "support). The errors after it follow from it.")
        fix = ("Check the NIC for GIN: on RoCE a GID with its GRH (NCCL_IB_GID_INDEX), the DOCA, driver and firmware "
               "versions NCCL's release notes list; NCCL_GIN_TYPE chooses another GIN backend (the proxy), and "
               "NCCL_GIN_ENABLE=0 turns GIN off where the program can run without NCCL's device API.")
    if ucx:  # the plugin's transport over UCX: a UCX call failed (a memory registration, an endpoint)
        fix = ("Run the same job with NCCL's own IB transport (unset NCCL_PLUGIN_P2P, or NCCL_NET=IB) or the plugin's "
               "verbs transport (NCCL_PLUGIN_P2P=ib) to confirm it is the UCX path; then check UCX's version and "
               "transports (`ucx_info -d`, UCX_LOG_LEVEL=info), and GPUDirect RDMA on the host (nvidia-peermem; on "
               "ROCm, HSA_FORCE_FINE_GRAIN_PCIE and the amdgpu peer-memory support).")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.55, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, "the network plugin's error", 4))]


# libfabric's EFA provider: ``NET/OFI Request 0x… completed with error. RC: 103. Error: 4126 (Unresponsive receiver
# (reachable by EFA device but handshake failed))``: the peer's device is there, but it never answered the handshake
_EFA_UNRESPONSIVE = re.compile(r"Error: 4126\b|Unresponsive receiver", re.I)


def _efa_peer_unresponsive(tl: Timeline, events: list[Event]) -> list[Hypothesis]:
    """EFA reached a peer's device but the handshake got no answer: the instances' security group (or a network
    ACL) does not let their traffic in, the peer process is gone, or it runs another libfabric. A connection that
    could not be made (A023), its likeliest cause the security group."""
    where = attribute(events, tl)
    title = (f"{where.text or 'a process'} got no answer from a peer over EFA (libfabric error 4126, unresponsive "
             "receiver): the instances cannot talk to each other, most often their security group")
    what = ("The EFA device found the peer's address, but the peer never completed the handshake. On AWS that is "
            "almost always the security group: EFA needs every instance's inbound and outbound traffic allowed from "
            "the group itself. A peer process that had already exited, or one with another libfabric or aws-ofi-nccl, "
            "reads the same.")
    fix = ("Give the instances a security group with a rule allowing all inbound and all outbound traffic to and "
           "from the same group (EFA's requirement), check the subnet's network ACL, and run `fi_pingpong -p efa` "
           "between two instances before the job.")
    return [hypothesis(tl, Category.PEER_UNREACHABLE, 0.7, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, "no answer from the peer", 4))]


def _plugin_on_some(tl: Timeline, failed: list[Event], plugin: str) -> list[Hypothesis]:
    """The plugin failed in some processes, which then use TCP sockets (``Using network Socket``), while other
    processes of the job use it (its own INFO lines, or another ``Using network``): one communicator with two
    transports, whose connections between the two kinds of process cannot be made (A006). Processes are told
    apart by host and pid, so a host where the plugin failed in some of its processes only is caught too."""
    def place(event: Event) -> tuple[str, int] | None:
        host, pid = event.origin.host, event.origin.pid
        return (host, pid) if host and pid is not None else None

    warned = {p for e in failed if (p := place(e)) is not None}
    nets = tl.of(Kind.NCCL_NET)
    sockets = [e for e in nets if (e.data.get("network") == "Socket" or e.data.get("net") == "Socket")
               and place(e) in warned]
    fell_back = {place(e) for e in sockets}
    at_work = [e for e in nets if (p := place(e)) is not None and p not in warned
               and (e.data.get("plugin_at_work") or e.data.get("network") not in (None, "Socket"))
               and not any(place(o) == p for o in nets if o.data.get("network") == "Socket")]
    if not fell_back or not at_work:
        return []
    shown = [next(e for e in failed if place(e) == p) for p in sorted(p for p in fell_back if p is not None)]
    where = attribute(shown, tl)
    title = (f"{plugin} failed on {where.text or 'some processes'}, which fell back to TCP sockets, while it "
             f"works in {attribute(at_work, tl).text or 'other processes'}: the job's processes use different transports")
    what = (f"NCCL picks its network transport per process. In {len(fell_back)} process(es) {plugin} failed to "
            "initialise and NCCL went on with TCP sockets ('Using network Socket'); others initialised the plugin. "
            "Their connections to each other cannot be made (each side listens and connects for its own transport), "
            "so the communicator fails or hangs at init. Why the plugin failed only there is the question to answer: "
            "the processes' environment (FI_PROVIDER, FI_EFA_*, NCCL_NET, LD_LIBRARY_PATH) or the devices they see.")
    fix = ("Make the plugin initialise in every process: the same environment for all local ranks (FI_PROVIDER=efa, "
           "NCCL_NET, LD_LIBRARY_PATH with the plugin and libfabric), the devices visible to each (`fi_info -p efa` "
           "inside the container); rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and compare the ranks' NET lines.")
    return [hypothesis(tl, Category.SOCKET_FALLBACK, 0.65, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(shown, "the plugin failed here", 3)
                       + evidence_of(sockets[:2], "falls back to sockets")
                       + evidence_of(at_work[:2], "the plugin at work in another process"))]


def _retried_then_joined(tl: Timeline, event: Event) -> bool:
    """A refused connect that NCCL retried (before 2.19: a peer not listening yet at startup), after which that
    process completed its communicator: the retry succeeded."""
    if not event.data.get("retrying"):
        return False
    host, pid = event.origin.host, event.origin.pid
    return any(e.origin.host == host and e.origin.pid == pid for e in tl.of(Kind.NCCL_INIT))


# Go's net error (kubectl, the API server): ``error dialing backend: dial tcp 10.0.0.7:10250: i/o timeout``
_DIALLED = re.compile(r"\bdial tcp \[?(?P<host>[\w.\-:]+?)\]?:\d{1,5}: (?:[\w ]+: )?(?:connection|i/o timeout|no route)")


# a remote shell that did not find the launcher's daemon: ``bash: orted: command not found``, ``prted: command not
# found``, ``hydra_pmi_proxy: No such file or directory``; Open MPI's own ``The rsh PLS component was not able to find
# the executable "orted" in`` (help-plm-rsh.txt, and a singleton's in help-ess-base.txt)
_DAEMON_NOT_FOUND = re.compile(r"not able to find the executable \"(?:orted|prted)\"|"
                               r"\b(?:orted|prted|hydra_pmi_proxy): (?:command not found|No such file or directory"
                               # or found, without the libraries it links (the compiler's runtime, CUDA's): ``prted: error
                               # while loading shared libraries: libimf.so: cannot open shared object file: …``
                               r"|(?P<lib>error while loading shared libraries: [\w.+\-]{1,80}))")


def _launch_unreachable(tl: Timeline) -> list[Hypothesis]:
    """mpirun, pdsh or horovodrun could not reach a node over ssh (its name does not resolve, port 22 is
    closed, the keys are refused), or Open MPI's daemons could not start there: no rank started on it."""
    events = [e for e in tl.of(Kind.LAUNCH_UNREACHABLE) if not e.data.get("lost")]  # a node lost later: partition
    found = [(e, m) for e in tl.of(Kind.ERROR_LINE) if (m := _DAEMON_NOT_FOUND.search(e.text))]
    if not events and not found:
        return []
    missing = [e for e, _ in found]
    if missing:  # the remote shell ran, and did not find the launcher's daemon: where it is installed, not the network
        libraries = found[0][1]["lib"] is not None
        # (the node a launch command above named, where the paste says: ``mpirun --host node1 …``)
        nodes = sorted({e.origin.host for e in missing if e.origin.host})
        there = ", ".join(nodes[:4]) if nodes else "the other nodes"
        title = ("the launcher's daemon " + (f"cannot load its libraries on {there} (" if libraries else
                                             f"is not on {there}'s PATH (" if nodes else "is not on the other nodes' PATH (")
                 + found[0][1].group(0) + "): mpirun could not start its processes there")
        what = ("mpirun starts its daemon (Open MPI's orted or prted, MPICH's hydra_pmi_proxy) on each node through a "
                "non-interactive ssh shell, which did not find it: Open MPI is installed elsewhere there, or only the "
                "login shell's startup files put it on PATH.")
        fix = ("Run mpirun with --prefix /path/to/openmpi (or configure Open MPI with --enable-orterun-prefix-by-"
               "default), install it at the same path on every node, or set PATH and LD_LIBRARY_PATH in the shell's "
               "non-interactive startup (~/.bashrc before its interactive check); `ssh HOST which orted` shows it.")
        return [hypothesis(tl, Category.UNRECOGNISED, 0.8, title, hosts=nodes, what=what, fix=fix,
                           evidence=evidence_of(missing, "the daemon was not found", 2)
                           + evidence_of(events, "the launcher could not start it", 2))]
    slots = [e for e in events if e.data.get("host_slots")]
    if slots:  # a host and its slot count read as one host name: the launcher's syntax, no network
        named = str(slots[0].data["host"])
        title = (f"the launcher took '{named}' (a host and its slot count) for a host's name and ssh could not "
                 "resolve it: no process started")
        what = ("Open MPI before 3.0 reads `-H host:N` (and a hostfile line `host:N`) as a host named `host:N`, so it "
                "tries to ssh there; horovodrun and torchpack pass their host lists in that form. Nothing is wrong "
                "with the network: the host list's syntax does not match this mpirun.")
        fix = ("Use Open MPI 3.0 or later, or give the slots the old way: a hostfile with `localhost slots=4` "
               "(mpirun --hostfile), or `-H localhost,localhost,…` once per slot.")
        return [hypothesis(tl, Category.UNRECOGNISED, 0.8, title, what=what, fix=fix,
                           evidence=evidence_of(slots, "the host list's entry read as a name", 2))]
    hosts = sorted({str(e.data["host"]) for e in events if e.data.get("host")})
    errors = sorted({str(e.data.get("error")) for e in events if e.data.get("host") or len(events) == 1}) or \
        sorted({str(e.data["error"]) for e in events if e.data.get("error")})  # (none names a host: what they say)
    said = f" ({'; '.join(errors)[:90]})" if errors else ""
    dialled = sorted({m["host"] for e in tl.of(Kind.ERROR_LINE) if (m := _DIALLED.search(e.text))})
    if not hosts and dialled:  # kubectl exec (the MPI operator's rsh agent): the API server could not reach the node
        title = (f"the launcher could not start its processes on {', '.join(dialled[:4])}{said}: "
                 "the connection to it failed")
        hosts = dialled
    elif hosts:
        title = f"the launcher could not reach {', '.join(hosts[:4])} over ssh{said}: no process started there"
    else:
        title = f"the launcher could not start its processes on another node{said}"
    what = ("Multi-node launchers (mpirun, pdsh for DeepSpeed, horovodrun) start the processes of the other nodes "
            "over ssh, and Open MPI's daemons then call back. That failed before any rank ran there, so the job "
            "stopped (or the others wait at the rendezvous): a host name the launching node cannot resolve, ssh "
            "closed or keys refused, or a daemon that could not call back.")
    fix = ("From the launching node, `ssh HOST hostname` to every host of the hostfile must work without a prompt: "
           "names that resolve (DNS or /etc/hosts; on Kubernetes the workers' headless Service, and dnsPolicy "
           "ClusterFirst with hostNetwork), passwordless keys, port 22 open. For Open MPI, also "
           "`--mca oob_tcp_if_include IFACE` so its daemons call back on a reachable interface.")
    return [hypothesis(tl, Category.PEER_UNREACHABLE, 0.7 if hosts else 0.5, title, hosts=hosts, what=what, fix=fix,
                       evidence=evidence_of(events, "the launcher could not reach the node", MAX_CASCADE))]


def _store_shared(tl: Timeline, events: list[Event], crowded: list[tuple[int, int]]) -> Hypothesis:
    """More processes counted at the store barrier than the group has: the store is shared."""
    where = attribute(events, tl)
    text = "; ".join(f"{j} joined a group of {w}" for j, w in crowded)
    title = (f"more processes reached the store than the group has ({text}): another job, or the processes of an "
             "earlier attempt, use the same MASTER_ADDR:MASTER_PORT")
    what = ("The store based barrier counts every process that adds itself under the group's key. A count above the "
            "world size means processes of another run joined this store: two jobs on the same node with the same "
            "MASTER_PORT, or a restart that reused the store while the previous attempt's processes were alive.")
    fix = ("Give each job its own MASTER_PORT (or torchrun --rdzv-id per job), make sure the previous attempt's "
           "processes are gone before restarting, and prefer torchrun's c10d rendezvous, which keys by run id.")
    return hypothesis(tl, Category.RENDEZVOUS_TIMEOUT, 0.75, title, hosts=where.hosts, what=what, fix=fix,
                      evidence=evidence_of(events, "the store's count", MAX_CASCADE))


# a port in use that is not the store's: a library's own listening socket (confidence, title, evidence note, what, fix)
_OWN_SOCKETS = {
    "zmq": (
        0.75, "a ZeroMQ socket of the job could not bind on {where}: the address is in use",
        "ZeroMQ's bind failed",
        "Serving engines (vLLM, SGLang) and their trainers pass messages between ranks and engines over ZeroMQ "
        "sockets bound to fixed or probed ports; the port was taken on that host: another instance or job there, a "
        "process left from an earlier run, or two ranks that probed the same free port and raced to bind it.",
        "Stop what holds the port (`ss -ltnp`), give each instance on a host its own port range, or upgrade past "
        "the engine's port-probing race (bind and keep the socket instead of probing, then binding)."),
    "nccl-bind": (
        0.75, "NCCL could not bind its socket on {where}: the address is in use", "NCCL's bind failed",
        "NCCL listens on a port of its own for the bootstrap and the socket transport; binding it failed because the "
        "address was in use: processes of an earlier run still alive on that host (a run stopped with Ctrl-C whose "
        "workers did not exit), or NCCL_PORT_RANGE restricted to ports another program holds.",
        "Stop the leftover processes on that host (`ss -ltnp`, `pkill -f` the training script) before restarting; "
        "unset NCCL_PORT_RANGE or widen it."),
    "gloo-bind": (
        0.7, "gloo could not bind its own socket on {where}: no port was free", "gloo's bind failed",
        "Every gloo pair listens on a port of its own, picked by the kernel from the ephemeral range; with hundreds "
        "of ranks on one host (each with a pair per peer) or many leftover sockets in TIME_WAIT the range runs out "
        "and bind fails. It is not the store's port.",
        "Run fewer processes per host or more threads per process, widen the ephemeral range (sysctl "
        "net.ipv4.ip_local_port_range), stop leftover processes of earlier runs (`ss -tanp`)."),
    "hccl-listen": (
        0.7, "Ascend HCCL could not listen on its port on {where}: the port is held, or the address is not this "
             "host's", "HCCL's listen failed",
        "HCCL listens on a port of its own per device (16666 and up, on the NPU NIC's address) for the links "
        "between ranks; listening failed: another process holds the port (the processes of an earlier run still "
        "alive, a second job on the NPUs), or the address is not up on this host. The link timeouts that follow on "
        "the other ranks are its consequence.",
        "Stop the leftover processes on that host (`ss -ltnp | grep 1666`, `npu-smi info` for the processes on the "
        "NPUs) before restarting, and check the NPU NICs' addresses (`hccn_tool -i 0 -ip -g`)."),
    "hccl-opretry": (
        0.7, "Ascend HCCL's op-retry link on {where} reached another program on its port: a port of HCCL's range is "
             "held by another process", "the handshake was not HCCL's",
        "HCCL's op-retry links connect to a server each rank listens on, in a port range of its own (60000-60015 by "
        "default); the answer to the handshake was not the one expected, so another program was listening there: "
        "the kernel gave one of those ports to another process as an ephemeral port, or a service of the node uses "
        "it. The link setup then fails on that rank.",
        "Reserve HCCL's ports so the kernel does not hand them out (`sysctl -w net.ipv4.ip_local_reserved_ports="
        "60000-60015`), or move HCCL to a free range with HCCL_IF_BASE_PORT and reserve that one; `ss -ltnp` shows "
        "what holds them."),
}


# the store's bind refused for a reason other than a port in use: (category, confidence, the title's reason, what, fix,
# the evidence's note), by the error its parser names (a port below 1024 is no port taken: the job's setup, A028;
# Windows' reserved ranges hold the port from the job, A029)
_REFUSED = {
    "Permission denied": (
        Category.UNRECOGNISED, 0.8, "permission denied (a port below 1024 needs root)",
        "The rank that serves the c10d store binds MASTER_ADDR:MASTER_PORT; the system refused it (errno 13): ports "
        "below 1024 are reserved for root, so a MASTER_PORT such as 97 (a value padded or cut by a script) cannot be "
        "used by a user's job.",
        "Use a MASTER_PORT between 1024 and 65535 (29500 by default), the same on every node.",
        "the store may not listen there"),
    "Windows refused the port (10013)": (
        Category.PORT_IN_USE, 0.75,
        "Windows refused it (10013: a port range it reserves, or a program holding the port exclusively)",
        "The rank that serves the c10d store binds MASTER_ADDR:MASTER_PORT; Windows refused it with WSAEACCES (10013), "
        "not 'in use' (10048): the port lies in a range Windows excludes (Hyper-V, WSL and WinNAT reserve blocks of "
        "ports, which can change at each boot), or another program holds it exclusively.",
        "List the reserved ranges (`netsh interface ipv4 show excludedportrange protocol=tcp`) and pick a MASTER_PORT "
        "outside them, or restart WinNAT (`net stop winnat`, then `net start winnat`) to release them.",
        "Windows refused the port"),
}


def store_port_taken(tl: Timeline) -> list[Hypothesis]:
    """The store could not listen: its port is taken on that host (errno 98)."""
    events = [e for e in tl.of(Kind.STORE_ERROR) if e.data.get("what") == "listen"]
    if not events:
        return []
    nics_down = {e.origin.host for e in tl.of(Kind.IB_DEVICE_UNAVAILABLE)}
    events = [e for e in events if not (e.data.get("source") == "hccl-listen" and e.origin.host in nics_down)]
    if not events:
        return []  # HCCL could not listen on a NIC that had not started: the NIC's failure, not a port
    where = attribute(events, tl)
    for source, (confidence, title, note, what, fix) in _OWN_SOCKETS.items():
        if all(e.data.get("source") == source for e in events):
            return [hypothesis(tl, Category.PORT_IN_USE, confidence, title.format(where=where.text or "a host"),
                               where=where, evidence=evidence_of(events, note, 4), what=what, fix=fix)]
    ports = sorted({int(e.data["store_port"]) for e in events if e.data.get("store_port")})
    port = f"port {', '.join(map(str, ports))}" if ports else "its port"
    on = f"{port}{' on ' + ', '.join(where.hosts) if where.hosts else ''}"
    said = [e for e in events if not e.data.get("unsaid")]  # (the listen's failure told without its reason)
    for error, (category, confidence, reason, what, fix, note) in _REFUSED.items():
        if said and all(e.data.get("error") == error for e in said):
            return [hypothesis(tl, category, confidence, f"the store could not listen on {on}: {reason}",
                               where=where, what=what, fix=fix, evidence=evidence_of(events, note, 4))]
    title = (f"the store could not listen on {on}: the port is taken (another job on that host, or a process left "
             "over from an earlier run)")
    what = ("The rank that serves the c10d store (rank 0, or torchrun's agent) binds MASTER_ADDR:MASTER_PORT; the "
            "port was in use, so the store never started and every rank's init fails or waits for it. Two jobs "
            "sharing a node with the default port 29500 do this, and so do the orphans of a run that did not exit.")
    fix = (f"Find what holds it (`ss -ltnp | grep {ports[0] if ports else 29500}`) and stop it, or give each job "
           "its own MASTER_PORT (torchrun --master-port, or a port derived from SLURM_JOB_ID; --rdzv-endpoint "
           "host:0 picks a free one).")
    cut = all(e.data.get("cut") for e in events)  # the paste cut the code after "-9": -98 most often, -99 maybe
    if cut:
        what += (" (The paste cut the code after '-9': -98 is a port in use, -99 an address this host does not have; "
                 "the first is by far the more common.)")
    unsaid = all(e.data.get("unsaid") for e in events)  # no reason in the lines at all
    if unsaid:
        title = title.replace(": the port is taken (", ": most likely the port is taken (")
        what += (" (The lines give no reason: errno 98, a port in use, is by far the most common; 13 is a port below "
                 "1024 without root, 99 an address this host does not have. The message's end, or the line after it, "
                 "says which.)")
    return [hypothesis(tl, Category.PORT_IN_USE, 0.5 if unsaid else 0.6 if cut else 0.8, title,
                       where=where, what=what, fix=fix, evidence=evidence_of(events, "the store's port is taken", 4))]


def _ran(tl: Timeline) -> bool:
    """Some collective ran already: NCCL lines of a finished init, or a timeout in one; or ProcessGroupNCCL's words
    after its watchdog found a collective failed (``Some NCCL operations have failed or timed out``: a collective
    was enqueued on a communicator that existed)."""
    return bool(tl.of(Kind.NCCL_INIT) or tl.of(Kind.WATCHDOG_TIMEOUT) or tl.of(Kind.WORK_STATUS)) or any(
        "Some NCCL operations have failed or timed out" in e.text for e in tl.of(Kind.ERROR_LINE))


# torchrun's own frames (its agent, before any worker): run.py's main/run, the elastic launcher and rendezvous
_AGENT_FRAMES = re.compile(r"run\.py:\d+ in (?:main|run)\b|in launch_agent\b|in (?:next_)?_?rendezvous\b"
                           r"|in _invoke_run\b|in _initialize_workers\b")
_AGENT_WAIT_MS = 60_000  # the agent's store waits are long (the rendezvous' 900 s); a worker's are its own timeout


def _agent_store_timeouts(tl: Timeline) -> list[Event]:
    """The store socket of torchrun's agent that timed out waiting (``waitForInput: socket … timed out after
    900000ms``) before any worker ran, the traceback showing torchrun's own frames (or no worker rank anywhere):
    the agents' rendezvous never gathered the other nodes."""
    waits = [e for e in tl.of(Kind.STORE_ERROR) if e.data.get("what") == "socket-timeout" and e.origin.rank is None
             and ((isinstance(e.data.get("ms"), int) and e.data["ms"] >= _AGENT_WAIT_MS)
                  # (2.3+'s ``poll for socket … returned 0, likely a timeout`` and 2.0-2.2's ``While waitForInput,
                  # poolFD failed`` say no time: where no step ran)
                  or (e.data.get("ms") is None and not tl.of(Kind.PROGRESS_BAR)))]
    if not waits or _ran(tl):
        return []
    frames = " ".join(str(f) for e in tl.of(Kind.EXCEPTION, Kind.STACK_DUMP) for f in e.data.get("frames") or ())
    return waits if _AGENT_FRAMES.search(frames) or not tl.ranks else []


def _worker_store_waits(tl: Timeline) -> list[Hypothesis]:
    """A worker's read from a store on another host that waited out its whole timeout (``[rank1]:… waitForInput:
    socket SocketImpl(…, remote=[head-0]:6379) timed out after 600000ms``) before any collective ran: the socket was
    connected, the store answers a read only once its key is written, and the ranks that write it never did (the
    setup of a communicator or a barrier through the store). A lead: the paste does not say which key, or who; a
    wait that names its keys (``DistStoreError: wait timeout after …, keys: …``) is read by the lagging-rank rules."""
    waits = [e for e in tl.of(Kind.STORE_ERROR) if e.data.get("what") == "socket-timeout" and e.origin.rank is not None
             and isinstance(e.data.get("ms"), int) and e.data["ms"] >= _AGENT_WAIT_MS
             and not any(word in e.text for word in LOOPBACK_STORE)]
    if not waits or _ran(tl) or tl.of(Kind.PROGRESS_BAR) or \
            any(e.data.get("what") == "wait" for e in tl.of(Kind.STORE_ERROR)):
        return []  # (a wait that names its keys is the lagging-rank rules': the key says whose turn it was)
    where = attribute(waits, tl)
    seconds = max(int(e.data["ms"]) for e in waits) // 1000
    title = (f"rank{'s' if len(where.ranks) > 1 else ''} {fmt_ranks(sorted(where.ranks))} waited {seconds} s for a "
             "store key the other ranks never wrote")
    what = ("A read from the job's store blocks until another process writes its key (a communicator's id, a "
            "barrier's count); this one waited out its whole timeout on a connected socket, and the inputs show no "
            "collective that ran before. The ranks that should have written it never got there: they started late or not at all, or failed "
            "or hang before that step. Their own logs say which.")
    fix = ("Look at the other ranks' logs for the same moment (the first to fail, or the one still busy); start every "
           "rank with the same store address and world size.")
    return [hypothesis(tl, Category.RENDEZVOUS_TIMEOUT, 0.45, title, affected=sorted(where.ranks), what=what, fix=fix,
                       evidence=evidence_of(waits, "waited for a key", MAX_CASCADE))]


def rendezvous_timeout(tl: Timeline) -> list[Hypothesis]:
    events = [e for e in tl.of(Kind.STORE_ERROR)
              if e.data.get("what") in ("barrier", "clients", "rendezvous-timeout") and not e.data.get("missing_ranks")]
    events += [e for e in tl.of(Kind.EXCEPTION) if timed_out_forming(e)]
    events += _agent_store_timeouts(tl)
    if tl.of(Kind.NCCL_INIT, Kind.WORK_STATUS, *TIMEOUT_KINDS):
        events = [e for e in events if not e.data.get("waiting")]  # the group formed after that wait
    if not events:
        return _worker_store_waits(tl)
    where = attribute(events, tl)
    counts = sorted({(int(e.data["joined"]), int(e.data["world_size"])) for e in events if "joined" in e.data})
    crowded = [(j, w) for j, w in counts if j > w]
    if crowded:
        return [_store_shared(tl, events, crowded)]
    joined = "; ".join(f"{j} of {w} joined" for j, w in counts)
    title = "the process group could not form: " + (f"{joined} before the timeout" if joined else
                                                     "the rendezvous timed out") + "; the others never arrived"
    what = ("Every rank must join the store (or torchrun's rendezvous) before training starts. "
            + (f"Only {joined}. " if joined else "")
            + "The missing ones never started, started with another world size, master address or port, or "
            "failed before init_process_group: their own logs say why.")
    waiting = sorted(where.ranks)
    missing: list[int] = []
    if len(counts) == 1 and counts[0][0] == len(waiting) and all(r < counts[0][1] for r in waiting):
        # every rank that joined wrote its wait, so the others are the ranks of the world none of them is
        missing = [r for r in range(counts[0][1]) if r not in waiting][:64]
        title = title.replace("the others never arrived", f"rank{'s' if len(missing) > 1 else ''} "
                              f"{fmt_ranks(missing)} never arrived")
    elif counts == [(1, 2)] and all(e.data.get("what") == "clients" for e in events if "joined" in e.data):
        # the store's server waits in rank 0's process, whose own client is the one that joined: rank 1 is missing
        missing = [1]
        title = title.replace("the others never arrived", "rank 1 never arrived")
    if all(e.data.get("waiting") for e in events):  # still waiting when the paste ends: it has not timed out yet
        title = title.replace(" before the timeout; ", " so far; ").replace("never arrived", "had not arrived")
    followers = sorted({str(n) for e in events for n in e.data.get("followers") or ()})
    if followers:  # torch.distributed.rpc's barrier names the workers that never answered
        title = (f"the RPC group's barrier timed out: worker{'s' if len(followers) > 1 else ''} "
                 f"{', '.join(followers[:8])} never answered its leader")
        what = ("torch.distributed.rpc gathers a token from every worker at init and shutdown (its _all_gather); the "
                "workers named never answered within the timeout: they never started, hang, crashed, or cannot reach "
                "the leader (their address, a firewall). Their own logs say which.")
    awaited = sorted({int(r) for e in events if e.data.get("source") == "gloo" for r in e.data.get("awaited") or ()})
    if any(e.data.get("source") == "gloo" for e in events):  # gloo's own store, its full mesh being set up
        title = ("gloo's rendezvous timed out: " + (f"the address{'es' if len(awaited) > 1 else ''} of rank"
                 f"{'s' if len(awaited) > 1 else ''} {fmt_ranks(awaited)}" if awaited else "the peers' addresses")
                 + " did not arrive in its store in time")
        what = ("gloo sets up a connection between every pair of ranks through a key-value store: each rank writes "
                "its address under its rank number and waits for the others'. The keys named did not arrive before "
                "the timeout: those ranks started late or failed before the setup, or the setup outlasted the "
                "timeout (at tens of hosts Horovod's 30 s default is too short: HOROVOD_GLOO_TIMEOUT_SECONDS or "
                "horovodrun --gloo-timeout-seconds; torch: init_process_group(timeout=...)).")
    return [hypothesis(tl, Category.RENDEZVOUS_TIMEOUT, 0.6 if all(e.data.get("waiting") for e in events) else 0.7,
                       title, affected=waiting, culprits=missing,
                       what=what + (f" Ranks {fmt_ranks(waiting)} waited." if waiting else ""),
                       evidence=evidence_of(events, "waiting for the others", MAX_CASCADE))]


_NODE_RANK = re.compile(r"(?:--(?:node|machine)[_-]rank[= ]|\bNODE_RANK=|(?<![\w-])RANK=)(\d{1,5})\b")


def store_addresses_differ(tl: Timeline) -> list[Hypothesis]:
    """The nodes of one job were given different store addresses (MASTER_ADDR=, --master_addr, the rendezvous
    endpoint): each waits at its own, and they never meet in one rendezvous. Two addresses count only where two
    nodes gave them: in different inputs, or in launch lines whose node ranks differ (one node launched twice, its
    address corrected, is not two nodes). A name and an address may be one host, and loopback is a node's own
    view of its store (the first node may use it): neither is compared."""
    named: dict[str, list[Event]] = defaultdict(list)
    for event in tl.of(Kind.STORE_ENDPOINT):
        host = str(event.data.get("store_host") or "").strip("[]").lower()
        if host and not event.data.get("listening") and not event.data.get("empty") and not is_loopback(host) \
                and not _no_host_address(host):
            named[host].append(event)
    if len(named) < 2 or len({ip_of(host) is None for host in named}) > 1:
        return []

    def node(event: Event) -> tuple[str, str | None]:
        rank = _NODE_RANK.search(event.text)
        return event.ref.source, rank[1] if rank else None

    def two_nodes(a: tuple[str, str | None], b: tuple[str, str | None]) -> bool:
        (source_a, rank_a), (source_b, rank_b) = a, b
        return (source_a != source_b and None in (rank_a, rank_b)) or (None not in (rank_a, rank_b)
                                                                    and rank_a != rank_b)

    hosts = list(named)[:16]
    # who gave each address: its inputs and node ranks, a few of each (a log of every rank echoing one address is
    # one giver many times over)
    givers = {h: list(dict.fromkeys(node(e) for e in named[h]))[:32] for h in hosts}
    if not any(two_nodes(a, b) for i, h in enumerate(hosts) for other in hosts[i + 1:]
               for a in givers[h] for b in givers[other]):
        return []
    firsts = [named[h][0] for h in hosts]
    told = ", ".join(f"{h} in {e.ref.source.rsplit('/', 1)[-1]}" for h, e in zip(hosts[:4], firsts[:4], strict=True))
    title = (f"the nodes were given different store addresses ({told}): they never meet in one rendezvous, and "
             "each waits for the others until its timeout")
    what = ("Every node's agent (torchrun's, or init_process_group's env:// rendezvous) connects to the store at the "
            "address it was given, MASTER_ADDR or --master_addr (--rdzv-endpoint). These inputs name "
            f"{len(hosts)} of them: the nodes wait at different stores (one serves its own, the others reach it or "
            "not), none of them gathers the whole world, and the job hangs at start until the rendezvous timeout. "
            "A common cause is a script that sets MASTER_ADDR to each node's own address.")
    fix = ("Give every node the same MASTER_ADDR and MASTER_PORT: the first node's address as the others reach it "
           "(under Slurm: `scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1`), and check what each node's "
           "script exports before it launches.")
    timed_out = bool(tl.of(Kind.STORE_ERROR)) or any(timed_out_forming(e) for e in tl.of(Kind.EXCEPTION))
    return [hypothesis(tl, Category.RENDEZVOUS_TIMEOUT, 0.8 if timed_out else 0.5, title, what=what, fix=fix,
                       evidence=evidence_of(firsts, "the store's address given", 4))]


def rendezvous_closed(tl: Timeline) -> list[Hypothesis]:
    """torchrun's ``RendezvousClosedError``: another node's agent closed the rendezvous (it gave up, finished,
    ran out of restarts or was stopped) while this one tried to join; a closing at shutdown is not one."""
    events = [e for e in tl.of(Kind.STORE_ERROR)
              if e.data.get("what") == "rendezvous-closed" and not e.data.get("at_shutdown")]
    if not events:
        return []
    where = attribute(events, tl)
    title = (f"torchrun's rendezvous was closed while {where.text or 'this node'} tried to join: another node's "
             "agent ended it")
    what = ("An agent closes the rendezvous for everyone when it stops: its workers failed past --max-restarts, it "
            "finished, or it was stopped (Ctrl-C, the scheduler). The agents that join afterwards get "
            "RendezvousClosedError. The first agent to stop is the one to read; under Slurm a common cause is two "
            "torchrun agents per node (--ntasks-per-node must be 1 with torchrun), the second of which cannot "
            "bind the rendezvous port and fails.")
    fix = ("Read the other nodes' agent logs for the first failure; start one torchrun per node (srun "
           "--ntasks-per-node=1), give every job its own --rdzv-id, and check that no earlier attempt's agents "
           "are still running.")
    return [hypothesis(tl, Category.RENDEZVOUS_TIMEOUT, 0.5, title, where=where, what=what, fix=fix,
                       evidence=evidence_of(events, "the rendezvous was closed", MAX_CASCADE))]


# PyTorch's own refusals when the build or the machine lacks what the job asked for
_NOT_BUILT = re.compile(
    r"Distributed package doesn't have (?P<backend>NCCL|MPI|UCC|Gloo) built in"
    # (its warning before that error, where the paste ends: ``Attempted to get default timeout for nccl backend, but
    # NCCL support is not compiled``)
    r"|(?P<warned>NCCL) support is not compiled"
    r"|(?P<libuv>use_libuv was requested but PyTorch was buil[dt] without libuv support)"
    # (cut where a paste ends, ``… only supported with GP``: no other message starts so)
    r"|(?P<nogpu>ProcessGroupNCCL is only supported with\b)"
    r"|No backend type associated with device type (?P<device>\w+)"
    # PyTorch's TCPStore on Windows (2.0's builds, pytorch#118378) failing to format its own error: the store's real
    # error is hidden behind Python's words for the broken format string
    r"|(?P<brace>unmatched '\}' in format string)")


def _making_a_store(event: Event) -> bool:
    """An exception raised while a TCPStore was made: its code line or its frames say so."""
    places = [str(event.data.get("code_line") or ""), *map(str, event.data.get("frames") or ())]
    return any("TCPStore" in place or "c10d_store" in place for place in places)


def build_lacks_backend(tl: Timeline) -> list[Hypothesis]:
    """PyTorch refused the job's choice because its build or the machine lacks it: ``Distributed package doesn't
    have NCCL built in`` (the Windows and macOS wheels and CPU-only builds have no NCCL; MPI needs a source build),
    ``use_libuv was requested but PyTorch was build without libuv support`` (Windows wheels of 2.4+, whose
    TCPStore defaults to libuv), ``ProcessGroupNCCL is only supported with GPUs, no GPUs found`` (a process that
    sees no GPU); and TCPStore's Windows code that could not format its own error (``unmatched '}' in format string``,
    pytorch#118378), a bug of that platform's build. A configuration of every process, not one rank's fault: the
    worker's exit after it is its consequence."""
    found: list[tuple[Event, re.Match[str]]] = []
    for event in tl.of(Kind.EXCEPTION, Kind.ERROR_LINE, Kind.STORE_ERROR):
        match = _NOT_BUILT.search(str(event.data.get("message") or event.text))
        if match is not None and match["brace"] and not _making_a_store(event):
            continue  # (a format string of the program's own)
        if match is not None and "raise " not in event.text:  # a rendered traceback's source line is no error
            found.append((event, match))
    if not found:
        return []
    events = [e for e, _ in found]
    match = found[0][1]
    where = attribute(events, tl)
    on = f" on {where.text}" if where.text else ""
    if match["brace"]:
        title = (f"PyTorch's TCPStore on Windows could not format its own error{on} (a bug of its Windows builds, seen "
                 "with 2.0): the store could not be made, and why is hidden")
        what = ("TCPStore's Windows code raises `unmatched '}' in format string` where it meant to report its own "
                "error (pytorch#118378): the store failed to parse its address, bind or connect, and the message that "
                "would say which is lost.")
        fix = ("Upgrade PyTorch: the store's real error then shows. Meanwhile give MASTER_ADDR as an IP address "
               "(127.0.0.1 on a single machine) and a free MASTER_PORT.")
    elif match["libuv"]:
        title = f"this PyTorch build has no libuv (Windows wheels of 2.4+), and the store was asked to use it{on}"
        what = ("From PyTorch 2.4 the TCPStore uses libuv by default, but the Windows wheels are built without it; "
                "torchrun and init_process_group fail before any rank connects.")
        fix = ("Set USE_LIBUV=0 in the environment of the launcher (torchrun, accelerate launch), or pass "
               "use_libuv=0 in the init_method URL (tcp://host:port?use_libuv=0); a single-process run needs no store.")
    elif match["device"] == "cpu":
        # a CPU tensor handed to a collective of a group that has only a GPU backend (NCCL): the program's call
        # (Lightning's ``self.log(..., sync_dist=True)`` of a CPU value, a metric kept on the CPU)
        title = (f"a collective was given a CPU tensor in a process group with only a GPU backend (NCCL){on}: the "
                 "program's call")
        what = ("The process group has a backend for GPU tensors only, and a collective was called on a tensor in CPU "
                "memory: a value logged or synchronised from the CPU (Lightning's sync_dist, a metric's state, an "
                "object not moved to the device). The process raises, and its peers then wait or time out.")
        fix = ("Move the tensor to the rank's GPU before the collective (tensor.cuda()), drop the synchronisation the "
               "library already does (torchmetrics syncs in compute()), or give the group a CPU backend too "
               "(init_process_group(backend='cpu:gloo,cuda:nccl')).")
        # (above the crash of the rank that raised it, 0.82: the same failure, with what the words say)
        return [hypothesis(tl, Category.RANK_CRASHED, 0.85, title, what=what, fix=fix, where=where,
                           evidence=evidence_of(events, "a CPU tensor", 3))]
    elif match["device"]:
        device = match["device"]
        title = (f"the process group has no backend for {device} tensors{on}: init_process_group was given none for "
                 "that device")
        what = (f"A collective was called on {device} tensors and the process group holds no backend for that device "
                "type: backend='gloo' (CPU only) with GPU tensors, a backend string that names none for it, or the "
                "library that provides it not loaded (XPU: oneCCL's bindings, which need Intel's extension; Ascend: "
                "torch_npu).")
        fix = ("Name a backend for the device in init_process_group (backend='nccl' for CUDA, 'xccl' or 'ccl' for XPU, "
               "'hccl' for Ascend, or 'cpu:gloo,cuda:nccl'), and check that its library loads (its import warnings "
               "above the error say why not).")
    elif match["nogpu"]:
        title = f"the NCCL backend was asked for by a process that sees no GPU{on}"
        what = ("ProcessGroupNCCL needs a CUDA device: this process saw none (CUDA_VISIBLE_DEVICES empty or wrong, a "
                "container started without --gpus / the device plugin's resource, a driver that did not load, or a "
                "CPU-only build of PyTorch).")
        fix = ("Check `nvidia-smi` and `python -c 'import torch; print(torch.cuda.device_count())'` in the same "
               "environment (container, Slurm step with --gpus), or use backend='gloo' for CPU-only processes.")
    else:
        backend = match["backend"] or match["warned"]
        title = f"this PyTorch build has no {backend}, and the job asked for the {backend.lower()} backend{on}"
        if backend == "NCCL":
            what = ("NCCL exists for Linux only: the Windows and macOS builds of PyTorch, and CPU-only builds, have no "
                    "NCCL, so init_process_group('nccl') fails in every process before any connection is made.")
            fix = ("On Windows or macOS use backend='gloo' (Accelerate and trainers that pick NCCL need it set, or "
                   "run single-process); on Linux install the CUDA build of PyTorch (torch.cuda.nccl.version() "
                   "answers), or run in WSL2 or a Linux container.")
        else:
            what = (f"The {backend} backend is only in builds that were compiled with it (MPI: a build from source "
                    "against the cluster's MPI); the wheels from pip and conda do not have it.")
            fix = (f"Use backend='nccl' or 'gloo', or build PyTorch from source with {backend} (USE_{backend.upper()}=1) "
                   "against the cluster's library.")
    # above the crash the same exception makes (0.8): the configuration is the cause, the exit its consequence
    return [hypothesis(tl, Category.UNRECOGNISED, 0.85, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, "PyTorch refused", 3))]


def host_name_shared(tl: Timeline) -> list[Hypothesis]:
    """Processes under one host name that bootstrap from different addresses on the same interface (``node1:18225
    … Using interface eth1:100.102.32.176``, ``node1:22671 … eth1:100.102.32.175``): two machines with one name.
    NCCL takes the processes of one host for one machine (before it hashed the boot id too, and NVSHMEM still), so
    it sets up shared memory or CUDA IPC between processes on different machines, which fails or hangs."""
    seen: dict[tuple[str, str], dict[str, Event]] = defaultdict(dict)
    for event in tl.of(Kind.NCCL_BOOTSTRAP):
        host, addr, ifname = event.origin.host, str(event.data.get("addr") or ""), str(event.data.get("ifname") or "")
        if not host or not addr or not ifname or event.origin.pid is None or unroutable(addr):
            continue
        seen[(host, ifname)].setdefault(addr, event)
    shared = {key: addrs for key, addrs in seen.items() if len(addrs) > 1
              and len({e.origin.pid for e in addrs.values()}) > 1}
    if not shared:
        return []
    (host, ifname), addrs = sorted(shared.items())[0]
    shown = ", ".join(sorted(addrs)[:3])
    title = (f"two machines are both called {host}: its processes use {shown} on {ifname}, so NCCL takes processes "
             "of different machines for one host")
    what = ("NCCL groups processes by host name to decide which of them share a machine (NCCL before it added the boot "
            "id to that hash, and NVSHMEM and DeepEP still do); with two machines of the same name it sets up shared "
            "memory, P2P or CUDA IPC between processes that are not on one machine, and that fails (an IPC handle "
            "that cannot be opened, a /dev/shm segment that is not there) or hangs.")
    fix = ("Give every machine its own host name (hostnamectl set-hostname; in containers, --hostname or the pod's "
           "own name), or set NCCL_HOSTID to a different value on each machine.")
    events = list(addrs.values())
    return [hypothesis(tl, Category.UNRECOGNISED, 0.6, title, what=what, fix=fix, hosts=[host],
                       evidence=evidence_of(events, "one host name, another address", 4))]


def _nowhere_endpoints(event: Event) -> list[str]:
    return [str(ep) for ep in event.data.get("endpoints") or () if _no_host_address(str(ep).rpartition(":")[0])]


def trainers_never_ready(tl: Timeline) -> list[Hypothesis]:
    """PaddlePaddle's launcher waiting for the other trainers' endpoints (``not ready endpoints:['10.36.10.40:6070',
    …]``, again every 3 s): the list shrinks as trainers start listening; the last one of each file names those that
    never did. Their processes never started (the launcher not run on that host) or wait for another job shape (the
    hosts given ``--ips`` in another order or another list): ranks that never joined, A010. An address no host has
    (0.0.0.0/8) is the unreachable peer instead (:func:`peer_unreachable`)."""
    waits = [e for e in tl.of(Kind.STORE_ERROR) if e.data.get("source") == "paddle-launch" and e.data.get("endpoints")]
    if not waits or any(_nowhere_endpoints(e) for e in waits):
        return []
    last: dict[str, Event] = {}
    for event in waits:
        last[event.ref.source] = event  # in the order of the lines: the latest list of each file
    endpoints = sorted({str(ep) for e in last.values() for ep in e.data.get("endpoints") or ()})
    hosts = sorted({ep.rpartition(":")[0] for ep in endpoints if ":" in ep})
    waiting = sorted({e.origin.host for e in last.values() if e.origin.host})
    title = (f"the trainers at {', '.join(endpoints[:4])}{' …' if len(endpoints) > 4 else ''} never started listening: "
             "the launcher waited for them" + (f" on {', '.join(waiting)}" if waiting else ""))
    what = ("PaddlePaddle's launcher waits until every trainer of the job listens on its endpoint (host:port) before "
            "the ranks exchange their NCCL ids; these never did. Their processes were not started (the launch command "
            "run on some hosts only), or they wait for a job of another shape: each host must be given the same "
            "--ips (or --nnodes and master), in the same order, so that each computes the same endpoints and its own "
            "place among them.")
    fix = (f"Start the same launch command on {', '.join(hosts[:3]) or 'every host'}, with the same --ips list in the "
           "same order everywhere (or --master and --nnodes), and check that each host's address in it is its own.")
    if len(last) > 1:
        what += (" Each host here waits for an endpoint of the other: both think they hold the same place, the "
                 "--ips lists differing in order or content.")
    return [hypothesis(tl, Category.RANK_NEVER_JOINED, 0.7, title, what=what, fix=fix, hosts=hosts,
                       evidence=evidence_of(list(last.values()), "still not ready", 4))]


# Cray MPICH's NIC selection at MPI_Init (Frontier, Aurora, Perlmutter): ``MPICH ERROR: Unable to use a NIC_POLICY of
# 'NUMA'. Rank 4 is not confined to a single NUMA node.``; libfabric's CXI provider (HPE Slingshot): ``cxip_cq_eq_
# progress():531<warn> x4204c1s3b0n0: Cassini Event Queue overflow detected.``
_CRAY_NIC = re.compile(r"Unable to use a NIC_POLICY of '(?P<policy>\w+)'\. Rank (?P<rank>\d+) is not confined")


def _ibgda_without_mlx5(tl: Timeline) -> list[Hypothesis]:
    """NVSHMEM skipped the host's RDMA NICs as not mlx5 ones: its GPU-initiated transport (IBGDA, which DeepEP's
    low-latency kernels need) drives Mellanox NICs only. The cause when NVSHMEM's own start failed after it (0.75);
    a lead otherwise (a host with another NIC that is mlx5 warns too, and works)."""
    skipped = [e for e in tl.of(Kind.ERROR_LINE) if e.data.get("source") == "nvshmem-not-mlx5"]  # parsers.launchers
    if not skipped:
        return []
    first = {(e.ref.source, e.ref.line) for e in skipped}
    failed = [e for e in tl.events if any(e.ref.source == src and e.ref.line > line for src, line in first)
              and "nvshmem" in e.text.lower() and re.search(r"\binit fa|failed|error", e.text, re.I)]
    devices = sorted({str(e.data.get("dev")) for e in skipped})
    where = attribute(skipped, tl)
    title = (f"NVSHMEM's GPU-initiated transport (IBGDA) found no mlx5 NIC{' on ' + where.text if where.text else ''}: "
             f"{', '.join(devices[:4])} {'is not a' if len(devices) == 1 else 'are not'} Mellanox mlx5 "
             "device" + ("s" if len(devices) > 1 else ""))
    what = ("NVSHMEM's IBGDA transport (DeepEP's low-latency and internode kernels) drives the NIC from the GPU "
            "through mlx5's direct verbs; other RDMA NICs (Alibaba eRDMA, AWS EFA, Broadcom, Intel) are skipped, and "
            "with none left IBGDA does not start." + ("" if failed else " NVSHMEM's start is not shown failing here."))
    fix = ("On such hosts use a transport their NIC supports (NVSHMEM_IB_ENABLE_IBGDA=0 with the IB RC or libfabric "
           "transport; DeepEP's normal, NCCL-based kernels instead of the low-latency ones), or run on mlx5 NICs.")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.75 if failed else 0.3, title, what=what, fix=fix, hosts=where.hosts,
                       evidence=evidence_of(skipped, "not an mlx5 NIC", 3) + evidence_of(failed, "NVSHMEM failed", 2))]


# NCCL on a multi-node NVLink system (GB200/GB300 NVL72) whose IMEX service or channel is not set up: ``MNNVL
# (cliqueSize 72) is available but not working on this system. Check the IMEX channel configuration
# (/dev/nvidia-caps-imex-channels).`` (2.27.3+; ``… Check the IMEX configuration (nvidia-imex-ctl -N)``; 2.25-2.27.2
# ``… is available but not supported on this system. Check the IMEX configuration.``)
_MNNVL = re.compile(r"MNNVL \(cliqueSize (?P<size>\d+)\) is available but not (?:working|supported) on this system"
                    r"(?:\. Check the (?P<what>IMEX channel configuration|IMEX configuration))?")


def _mnnvl_not_working(tl: Timeline) -> list[Hypothesis]:
    """NCCL found a multi-node NVLink domain but could not share memory across it (IMEX): the node's IMEX channel
    device or daemon is not set up. The CUDA error after it (``Cuda failure 800 'operation not permitted'``) is its
    consequence, not a GPU that failed."""
    found = [(e, m) for e in tl.of(Kind.NCCL_WARN) if (m := _MNNVL.search(str(e.data.get("message", "")))) is not None]
    if not found:
        return []
    events = [e for e, _ in found]
    where = attribute(events, tl)
    channel = any(m["what"] == "IMEX channel configuration" for _, m in found)
    title = (f"NCCL's multi-node NVLink (MNNVL, {found[0][1]['size']} GPUs) is not usable"
             f"{' on ' + where.text if where.text else ''}: the IMEX "
             + ("channel device (/dev/nvidia-caps-imex-channels) is missing" if channel else "service is not set up"))
    what = ("On an NVLink domain across nodes (GB200/GB300 NVL72) NCCL shares GPU memory between nodes through IMEX; "
            "it found the domain, but exporting or importing a fabric handle failed. The IMEX daemon is not running "
            "or its nodes list is wrong, or the channel device was not created (or not passed into the container), "
            "and CUDA refuses the operation ('operation not permitted', error 800). The GPUs are not at fault.")
    fix = ("On every node: the nvidia-imex service running with all the domain's nodes in its nodes_config "
           "(`nvidia-imex-ctl -N` shows them connected), and /dev/nvidia-caps-imex-channels/channel0 created (mknod, "
           "or the GPU operator's IMEX setting) and passed into the container; NCCL_MNNVL_ENABLE=0 runs without "
           "multi-node NVLink meanwhile.")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.85, title, what=what, fix=fix, hosts=where.hosts,
                       evidence=evidence_of(events, "MNNVL not usable", 4))]


# NCCL 2.26+ refusing to connect NICs of different link layers: ``NET/IB : Attempted to connect incompatible devices:
# [0]mlx5_0:1/IB and [1]mlx5_2:1/RoCE. Try selecting NICs of only one link type using NCCL_IB_HCA``, ``NET/IB : Remote
# RoCE device is incompatible with the local [0]mlx5_0:1/IB. …``
_LINK_LAYERS = re.compile(r"NET/IB ?: (?:Attempted to connect incompatible devices|Remote \w+ device is incompatible with "
                          r"the local)")


def _link_layers_mixed(tl: Timeline) -> list[Hypothesis]:
    """NCCL's IB transport asked to connect an InfiniBand NIC with a RoCE (Ethernet) one, on one host or across two:
    the NICs it was given are of two link types. The configuration (NCCL_IB_HCA), not a NIC that failed."""
    events = [e for e in tl.of(Kind.NCCL_WARN) if _LINK_LAYERS.search(str(e.data.get("message", "")))]
    if not events:
        return []
    where = attribute(events, tl)
    title = (f"NCCL was given NICs of two link types (InfiniBand and RoCE){' on ' + where.text if where.text else ''}: "
             "it cannot connect them")
    what = ("NCCL's IB transport connects NICs of one link layer only; a host whose NCCL_IB_HCA list (or whose "
            "detected NICs) mixes InfiniBand and Ethernet (RoCE) ports, or hosts that differ, stop at connection setup "
            "with an internal error.")
    fix = ("Set NCCL_IB_HCA on every host to the NICs of the fabric the job runs on (`ibv_devinfo` shows each port's "
           "link_layer), the same link type everywhere.")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.8, title, what=what, fix=fix, hosts=where.hosts,
                       evidence=evidence_of(events, "NICs of two link types", 3))]


# NCCL refusing how it was set up (init.cc, bootstrap.cc, net.cc): the words, the title (``{m[...]}`` from the match),
# what it means and the fix
_NCCL_REFUSALS: tuple[tuple[re.Pattern[str], str, str, str], ...] = (
    (re.compile(r"Bootstrap Root : mismatch in info from procs, nranks (?P<a>\d+) vs (?P<b>\d+)"),
     "the processes of one communicator were started with different world sizes ({a} and {b} ranks)",
     "NCCL's bootstrap root got ranks that disagree on the communicator's size: two jobs share one NCCL_COMM_ID or "
     "MASTER_ADDR:MASTER_PORT, or the launch gave the hosts different WORLD_SIZE (nnodes, nproc_per_node).",
     "Give every process of the job the same world size (the same --nnodes and --nproc_per_node on every host) and "
     "each job its own MASTER_PORT."),
    (re.compile(r"Invalid rank requested : (?P<a>\d+)/(?P<b>\d+)"),
     "a process asked for rank {a} of a communicator of {b} ranks: RANK is not below WORLD_SIZE",
     "The rank a process passes must be below the world size: the launch's rank arithmetic (node rank times processes "
     "per node, plus the local rank) or a WORLD_SIZE smaller than the processes started.",
     "Check RANK and WORLD_SIZE as each process sees them (torchrun sets both; by hand, RANK = NODE_RANK * "
     "nproc_per_node + LOCAL_RANK) and that --nnodes and --node_rank agree across the hosts."),
    (re.compile(r"Failed to initialize any NET plugin"),
     "NCCL could not start any network transport: the NCCL_NET it was told to use is not there",
     "NCCL_NET names the one network NCCL may use (IB, Socket, or a plugin such as AWS Libfabric); when that one fails "
     "to load or finds no device, none is left, and the communicator cannot reach other hosts.",
     "Unset NCCL_NET (NCCL then picks what works), or load the plugin it names (its module, LD_LIBRARY_PATH, "
     "NCCL_NET_PLUGIN) on every host; NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET shows why it failed."),
    # enqueue.cc: the algorithms and protocols NCCL_ALGO / NCCL_PROTO leave cannot run this collective
    (re.compile(r"no algorithm/protocol available for function (?P<a>\w+)(?: with datatype (?P<b>\w+))?"
                r"[^\n]*?\bNCCL_(?P<v>ALGO|PROTO) was set to (?P<c>[^\s.]+)"),
     "NCCL_{v}={c} leaves NCCL no way to run {a}",
     "NCCL_ALGO and NCCL_PROTO restrict the algorithms and protocols NCCL may choose; not every collective, data type "
     "or topology has one of those left (Tree runs all-reduces only), so the first collective that has none fails "
     "with invalid usage.",
     "Unset NCCL_ALGO and NCCL_PROTO (NCCL picks per collective), or list enough of them (NCCL_ALGO=Ring,Tree); "
     "restrict them per collective with the ^ or per-op syntax of NCCL 2.24+ instead of one value for all."),
    # misc/nvmlwrap.cc: NCCL loads NVML (the driver's libnvidia-ml.so.1) to read the GPUs' topology
    (re.compile(r"Failed to open (?P<lib>libnvidia-ml\.so(?:\.1)?)"),
     "NCCL could not load NVML ({lib}), the driver's library it reads the GPUs with",
     "NCCL dlopens the driver's NVML library at init to learn the GPUs' PCI placement and NVLinks; it was not found "
     "on the library path (a container started without the NVIDIA runtime's driver mounts, a driver install missing "
     "its user-space libraries, LD_LIBRARY_PATH pointing at another CUDA's stubs), so init stops with an "
     "'unhandled system error'.",
     "Check `ldconfig -p | grep libnvidia-ml` and `nvidia-smi` where the job runs; in containers use the NVIDIA "
     "runtime (--gpus), on bare hosts reinstall the driver's libraries, or point LD_LIBRARY_PATH (or LD_PRELOAD) at the "
     "driver's libnvidia-ml.so.1."),
    # graph/xml.h: the topology NCCL read or was given (NCCL_TOPO_FILE, a cloud image's /etc/nccl.conf) names a device
    # without the attribute it needs (``Attribute busid of node nic not found``): the file and the machine differ
    (re.compile(r"Attribute (?P<attr>\w+) of node (?P<node>\w+) not found"),
     "NCCL's topology lacks the {attr} of a {node}: a topology file it was given (NCCL_TOPO_FILE) does not fit this "
     "machine, or a device has no PCI place NCCL can read",
     "NCCL builds its view of the machine from the PCI tree, merged with a topology file where one is given "
     "(NCCL_TOPO_FILE; cloud images and network plugins set it for their VM size): a device the file expects is not "
     "where it says (NICs renamed or re-ordered between boots, another VM size, fewer GPUs used than the file's CPUs "
     "hold), or a NIC has no PCI path in sysfs (a virtual NIC, another architecture's bus), and init stops with an "
     "internal error.",
     "Give the NICs stable names (the cloud's persistent RDMA naming, e.g. Azure's azure_persistent_rdma_naming), "
     "use the topology file made for this machine type or unset NCCL_TOPO_FILE; NCCL_TOPO_DUMP_FILE writes what NCCL "
     "saw, to compare."),
    (re.compile(r"Invalid NCCL_COMM_ID, please use format"),
     "NCCL_COMM_ID is not an address NCCL can use",
     "NCCL_COMM_ID must be <ipv4>:<port>, [<ipv6>]:<port> or <hostname>:<port>; the value given is none of them.",
     "Set NCCL_COMM_ID to the bootstrap root's address and a free port (host:port), or unset it and let PyTorch "
     "pass NCCL's unique id through its store."),
)


def _nccl_refused_setup(tl: Timeline) -> list[Hypothesis]:
    """NCCL refusing the job's own setup in its words (A028, with what it means and the fix)."""
    out: list[Hypothesis] = []
    for pattern, template, what, fix in _NCCL_REFUSALS:
        found = [(e, m) for e in tl.of(Kind.NCCL_WARN) if (m := pattern.search(str(e.data.get("message", ""))))]
        if not found:
            continue
        events = [e for e, _ in found]
        where = attribute(events, tl)
        title = template
        for name, value in found[0][1].groupdict().items():  # replace, not format: values read from a log
            title = title.replace("{" + name + "}", str(value))
        if template.startswith("NCCL could not start any network transport") and _ib_without_devices(tl, events):
            title = ("NCCL could not start any network transport: NCCL_NET names IB, and NCCL's IB transport found no "
                     "InfiniBand or RoCE device on this host")
            fix = ("Unset NCCL_NET where the hosts have no InfiniBand/RoCE NIC (NCCL then uses its sockets), or give "
                   "the container the NICs (/dev/infiniband, the rdma devices; `ibv_devinfo` inside it lists them).")
        title += f" ({where.text})" if where.text else ""
        out.append(hypothesis(tl, Category.UNRECOGNISED, 0.8, title, what=what, fix=fix, hosts=where.hosts,
                              evidence=evidence_of(events, "NCCL refused the setup", 3)))
    return out


def _ib_without_devices(tl: Timeline, events: list[Event]) -> bool:
    """NCCL's IB transport reporting no NIC (``NET/IB : Using [RO]; OOB eth0:…`` with no device listed) in the files
    of ``events``: the transport NCCL_NET asked for found nothing."""
    sources = {e.ref.source for e in events}
    return any(e.data.get("net") == "IB" and e.data.get("devices") == [] and e.ref.source in sources
               for e in tl.of(Kind.NCCL_NET))


def _gtl_not_linked(tl: Timeline) -> list[Hypothesis]:
    """Cray MPICH asked for GPU buffers without its GPU transport layer linked: MPI_Init aborts on every rank (the
    build, not the rank whose abort is shown; that rank is still named)."""
    gtl = [e for e in tl.events if e.kind in (Kind.ERROR_LINE, Kind.EXCEPTION)
           and "GTL library is not linked" in str(e.data.get("message") or e.text)]
    if not gtl:
        return []
    title = ("Cray MPICH was asked for GPU buffers (MPICH_GPU_SUPPORT_ENABLED=1) but the program is not linked with "
             "its GPU transport layer (GTL), so MPI_Init aborted")
    what = ("With MPICH_GPU_SUPPORT_ENABLED=1 Cray MPICH moves GPU memory itself through its GTL library, which the "
            "program (or mpi4py, or the container's MPI) must be linked with; without it every rank aborts at start-up.")
    fix = ("Link with the GTL (load the GPU's craype-accel module when building, or add -lmpi_gtl_cuda / -lmpi_gtl_hsa; "
           "for mpi4py or a container, preload libmpi_gtl_*.so), or unset MPICH_GPU_SUPPORT_ENABLED when no MPI call "
           "passes GPU buffers.")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.85, title, what=what, fix=fix, where=attribute(gtl, tl),
                       evidence=evidence_of(gtl, "MPICH has no GPU support linked", 3))]


# NCCL's topology search finding a PCI link it cannot walk back (graph/paths.cc): ``Failed to find reverse path from
# remNode 0/41000 nlinks 2 to node 0/61000`` (an ncclInternalError at communicator creation)
_REVERSE_PATH = re.compile(r"Failed to find reverse path from remNode (?P<rem>[0-9a-fA-F]+/[0-9a-fA-F]+) nlinks \d+ to node (?P<node>[0-9a-fA-F]+/[0-9a-fA-F]+)")
# Transformer Engine's comm+GEMM overlap (userbuffers) needing CUDA multicast: its assertion, and the CUDA call it makes
# refused (``userbuffers-host.cpp:208 in function create_communicator_grouped2: CUDA Error: operation not supported``)
_UB_MULTICAST = re.compile(r"does not support comm\+GEMM overlap with CUDA Multicast|userbuffers[\w\-]*\.cpp:\d+ in function "
                           r"create_communicator\w*: CUDA Error: operation not supported")
# Ascend's LCCL (lcal_comm.cpp) refusing more than two ranks over PCIe: ``do not support pcie > 2 rank! rankSize_ = 4``
# then ``EnablePeerAccess failed!``
_LCCL_PCIE = re.compile(r"do not support pcie > 2 rank! rankSize_ = (?P<size>\d+)")
# TensorFlow's collective ops finding a group registered with another size than the op's (base_collective_executor,
# collective_param_resolver): ``Collective Op  has group_size 8 and group_key2 but that group has size 4``
_TF_GROUP = re.compile(r"Collective Op\s+\S{0,120}\s*has group_size (?P<want>\d{1,6}) and group_key ?(?P<key>\d{1,9}) but that "
                       r"group has size (?P<size>\d{1,6})")
# NIXL (the KV-cache transfer of vLLM, SGLang and Dynamo) over a UCX without CUDA support: ``W ucx_utils.cpp:628] 8 NVIDIA
# GPU(s) were detected, but UCX CUDA support was not found!``, ``E ucx_utils.cpp:582] VRAM memory is detected as host by
# UCX...`` (a UCX built without CUDA, or a second UCX copy loaded first)
_UCX_NO_CUDA = re.compile(r"(?:(?P<gpus>\d{1,3}) NVIDIA GPU\(s\) were detected, but )?UCX CUDA support was not found"
                          r"|VRAM memory is detected as host by UCX")
# Mooncake's transfer engine (prefill/decode KV transfer) finding no RoCE GID for its NIC: ``GID is NULL, please check
# your GID index by specifying MC_GID_INDEX``
_MC_GID = re.compile(r"GID is NULL, please check your GID index(?: by specifying (?P<var>\w+))?")
# MS-MPI's sockets (ch3:sock) finding none of a peer's advertised addresses inside the job's netmask (MPICH_NETMASK):
# ``unable to connect to 10.35.1.20 KESHIKI20  on port 55198, no endpoint matches the netmask 10.37.0.0/255.255.0.0``
_NETMASK = re.compile(r"unable to connect to (?P<addr>[\d.]{7,15})\b[^,\n]{0,200}, no endpoint matches the netmask "
                      r"(?P<mask>[\d.]{7,15}/[\d.]{7,15})|no endpoint matches the netmask (?P<mask2>[\d.]{7,15}/[\d.]{7,15})")
# Open MPI's shared-memory transport copying between two local processes with CMA (process_vm_readv/writev) refused:
# ``[host:153937] Read -1, expected 131072, errno = 1`` (btl vader, 3.x-4.x), ``Wrote -1, …``
_CMA = re.compile(r"\b(?:Read|Wrote) -1, expected (?P<size>\d{1,12}), errno = (?P<errno>[1-9]\d{0,3})\b")
# Accelerate's check of consumer GPUs without peer access, made when its state is built outside ``accelerate launch``
# (``NotImplementedError: Using RTX 4000 series doesn't support faster communication broadband via P2P or IB. Please
# set `NCCL_P2P_DISABLE="1"` and `NCCL_IB_DISABLE="1" or use `accelerate launch` …``)
_RTX4000 = re.compile(r"Using RTX 4000 series doesn.t support faster communication")
# Open MPI (ORTE and PRRTE) refusing to start the job: ``There are not enough slots available in the system to satisfy
# the 2 slots`` (help-orte-rmaps-base.txt: -H host without ``:N``, a hostfile without ``slots=N``), ``mpirun was unable
# to find the specified executable file`` and ``… was unable to launch the specified application as it could not access
# or execute an executable`` (help-orterun.txt), and two of its settings that exclude each other (help-mca-var.txt:
# ``Two mutually-exclusive MCA variables were specified``)
_SLOTS = re.compile(r"not enough slots available in the system to satisfy the (?P<n>\d+)\b|not enough (?:slots|nodes) "
                    r"(?:on the nodes )?in your allocation|number of processes exceeds the allocated")
_EXECUTABLE = re.compile(r"unable to (?:find the specified executable|launch the specified application as it "
                         r"(?:could not (?:access|find)|lacked\b))")
_MCA_EXCLUSIVE = re.compile(r"Two mutually-exclusive MCA variables were specified")
# Google's receive data path manager for GPUDirect-TCPX(O) (RxDM, A3 and A3 Mega) pairing each GPU with a NIC: ``Number
# of GPUs detected in the PCI tree 7 is not equal to the actual number of GPUs reported by CUDA 8``
_RXDM_GPUS = re.compile(r"Number of GPUs detected in the PCI tree (?P<pci>\d{1,3}) is not equal to the actual number of "
                        r"GPUs reported by CUDA (?P<cuda>\d{1,3})")
# Open MPI started by srun directly where it was built without Slurm's PMI (ess_hnp / ess_singleton's help text)
_OMPI_NO_PMI = re.compile(r"direct launched using \"srun\", but OMPI was not built with SLURM's PMI support"
                          r"|OMPI was not built with SLURM's PMI support")
# libfabric's EFA provider told to use the NIC's RDMA where it has none (``FI_EFA_USE_DEVICE_RDMA=1 was set by user,
# but EFA device has no rdma-read capability.  Application will abort().``, prov/efa)
_EFA_NO_RDMA = re.compile(r"FI_EFA_USE_DEVICE_RDMA=1 was set by user, but EFA device has no rdma-(?P<op>read|write)")
# a process out of file descriptors (EMFILE): each peer connection is a socket, and the bootstrap's accept, a store's
# server or a data loader runs out first (``Call to accept failed : Too many open files``, gloo's ``listen: Too many
# open files``, Python's ``OSError: [Errno 24] Too many open files``)
_NOFILE = re.compile(r"Too many open files|\bEMFILE\b|\[Errno 24\]")


def _lines_matching(tl: Timeline, needle: str, pattern: re.Pattern[str]) -> list[tuple[Event, re.Match[str]]]:
    """The error lines (NCCL's WARN lines too) whose text holds ``needle`` (a substring test first) and matches
    ``pattern``."""
    found = []
    for event in tl.events:
        if event.kind in (Kind.ERROR_LINE, Kind.EXCEPTION, Kind.NCCL_ERROR, Kind.NCCL_WARN):
            text = str(event.data.get("message") or event.text)
            match = pattern.search(text) if needle in text else None
            if match:
                found.append((event, match))
    return found


class _Refusal(NamedTuple):
    """A library refusing the machine, in its own words: the lines that hold ``needle`` and match ``pattern``, and
    what the hypothesis over them says (its title from the first match and the lines' place)."""

    needle: str
    pattern: re.Pattern[str]
    category: Category
    confidence: float
    title: Callable[[re.Match[str], str], str]
    what: str
    fix: str
    note: str


def _library_refused(tl: Timeline, refusal: _Refusal) -> list[Hypothesis]:
    """One hypothesis over the lines ``refusal`` matches, if any."""
    found = _lines_matching(tl, refusal.needle, refusal.pattern)
    if not found:
        return []
    events = [event for event, _ in found]
    where = attribute(events, tl)
    return [hypothesis(tl, refusal.category, refusal.confidence, refusal.title(found[0][1], where.text),
                       what=refusal.what, fix=refusal.fix, where=where, evidence=evidence_of(events, refusal.note, 3))]


# a Ray resource of a node asked for by a host name (vLLM's first bundle, pinned to the driver's node by VLLM_HOST_IP or
# its own lookup: ``No available node types can fulfill resource request {'node:ec2-….compute.amazonaws.com': 0.001,
# 'GPU': 1.0}``, the same in `ray status`'s demands and in the placement group's specs): Ray names its nodes'
# resources by their IP addresses only (an address is left alone: that node may lack GPUs, not exist)
_RAY_NODE_BY_NAME = re.compile(r"\{'node:(?P<name>(?![0-9a-fA-F:.]+')[A-Za-z][^'\n]{0,253})': 0\.0*1\b")

# Ray finding no address of its node but loopback (network_util.cc, its 2020 releases: they learn the address from the
# route to 8.8.8.8): ``Failed to find other valid local IP. Using 127.0.0.1, not possible to go distributed!``
_RAY_LOOPBACK = re.compile(r"Failed to find other valid local IP\. Using (?P<addr>127\.\d{1,3}\.\d{1,3}\.\d{1,3})")

# a Ray driver or worker whose own address is not the one its node's raylet registered (global_state_accessor.cc:
# ``This node has an IP address of 10.19.0.7, while we can not find the matched Raylet address. This maybe come from
# when you connect the Ray cluster with a different IP address or connect a container.``)
_RAY_NO_RAYLET = re.compile(r"This node has an IP address of (?P<addr>\S{1,64}), while we can not find the matched "
                            r"Raylet address")


_REFUSALS = (
    _Refusal(
        "{'node:", _RAY_NODE_BY_NAME, Category.INTERFACE_MISMATCH, 0.75,
        lambda m, on: (f"the job asked Ray for the node '{m['name'][:80]}' by a host name, and Ray names its nodes by "
                       "their IP addresses: no node has that resource, and the workers are never placed"),
        "vLLM (and other engines on Ray) pins the first bundle of its placement group to the driver's own node, as the "
        "resource node:<address>, with the address VLLM_HOST_IP gives or the driver finds for itself. Ray gives each "
        "node that resource under the IP address its raylet registered, so a host name (or any address the cluster "
        "does not know its node by) matches no node: the group waits forever and the autoscaler says no node type "
        "can fulfil it.",
        "Set VLLM_HOST_IP (or the address the engine is told) on each node to the IP address that node has in the Ray "
        "cluster (`ray status`, `ray list nodes`, the address given to `ray start --node-ip-address`), not its host "
        "name or a public address.",
        "a node resource no node has"),
    _Refusal(
        "matched Raylet", _RAY_NO_RAYLET, Category.INTERFACE_MISMATCH, 0.75,
        lambda m, on: (f"a Ray process found its node's address to be {m['addr'].rstrip(',')}, and no raylet of the "
                       "cluster is registered at it: the node joined Ray on another address (another NIC, a VPN, a "
                       "container's)"),
        "A Ray driver or worker looks up its node's raylet by the address it finds for its own host. The raylet on "
        "that host registered with another one (the address given to `ray start`, or one on another interface: a "
        "VPN's tunnel, a second NIC, a container's bridge), so the process finds no raylet, cannot get its "
        "configuration and exits; the node's raylet may go down with it.",
        "Start Ray on each node with `--node-ip-address=<the address on the network the cluster uses>` and give the "
        "driver the same (`ray.init(_node_ip_address=...)`); with a VPN, make the cluster "
        "use the tunnel's addresses on every node.",
        "no raylet at this address"),
    _Refusal(
        "other valid local IP", _RAY_LOOPBACK, Category.LOOPBACK_ADDRESS, 0.8,
        lambda m, on: (f"Ray found no address of its node{' (' + on + ')' if on else ''} but loopback and uses "
                       f"{m['addr']}: the other nodes cannot reach it"),
        "Ray's servers (its 2020 releases) learn the address they register for a node from the route to a public address "
        "(8.8.8.8); on a host without such a route (an air-gapped cluster, no default gateway) it finds none and "
        "falls back to loopback, which no other node can reach: its raylet and object store are unreachable, and "
        "workers placed elsewhere never connect.",
        "Give Ray the node's cluster address: `ray start --node-ip-address=<its address on the cluster network>` (and "
        "the same for the head), or a default route on the host; newer Ray releases look up the address without the "
        "route.",
        "loopback as the node's address"),
    _Refusal(
        "reverse path", _REVERSE_PATH, Category.UNRECOGNISED, 0.8,
        lambda m, on: (f"NCCL's topology search failed{' on ' + on if on else ''}: no path back from PCI device "
                       f"{m['rem']} to {m['node']} (the PCI tree NCCL read is inconsistent)"),
        "While it builds its view of the machine NCCL walks the PCI tree between GPUs and NICs in both directions; a "
        "link it could not walk back stops communicator creation (ncclInternalError). The tree it read is wrong or "
        "partial: a virtual machine or container that shows part of it, a driver that reports it wrongly, a topology "
        "file (NCCL_TOPO_FILE) that does not match the machine.",
        "Compare `nvidia-smi topo -m` (ROCm: `rocm-smi --showtopo`) with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=GRAPH; unset "
        "NCCL_TOPO_FILE or give the machine's own (NCCL_TOPO_DUMP_FILE writes what NCCL saw); upgrade NCCL and the "
        "driver; in a VM or container expose the whole PCI tree of the GPUs and NICs.",
        "NCCL's topology search"),
    _Refusal(
        "CUDA ", _UB_MULTICAST, Category.UNRECOGNISED, 0.85,
        lambda m, on: ("Transformer Engine's comm+GEMM overlap (userbuffers) needs CUDA multicast, which this "
                       f"machine's GPUs, driver or CUDA do not give{' (' + on + ')' if on else ''}"),
        "With tensor-parallel communication overlap (tp_comm_overlap, te.initialize_ub) Transformer Engine builds its "
        "buffers on CUDA multicast objects by default; the device, driver or toolkit refused them (operation not "
        "supported), on every rank: a GPU without NVSwitch multicast, a driver or CUDA older than multicast (CUDA "
        "12.1), a VM or container without it.",
        "Set UB_SKIPMC=1 (userbuffers then use CUDA IPC instead of multicast), or turn the overlap off "
        "(tp_comm_overlap=False); on NVSwitch systems keep the driver, CUDA and the fabric manager current.",
        "userbuffers without multicast"),
    _Refusal(
        "pcie > 2", _LCCL_PCIE, Category.PEER_ACCESS, 0.75,
        lambda m, on: (f"Ascend's LCCL cannot run {m['size']} ranks over PCIe (it supports two there): peer access "
                       "between the NPUs failed"),
        "LCCL, the low-latency collective library of Ascend's inference stacks, connects NPUs directly; on cards linked "
        "by PCIe (not HCCS) it supports at most two ranks, so enabling peer access for more fails.",
        "Run at most two ranks per group of PCIe-linked cards (tensor parallel 2), or use a collective backend that "
        "supports more there (HCCL).",
        "LCCL over PCIe"),
    _Refusal(
        "RTX 4000", _RTX4000, Category.PEER_ACCESS, 0.8,
        lambda m, on: (f"Accelerate refused to start{' on ' + on if on else ''}: RTX 4000-series GPUs have no peer "
                       "access, and NCCL's peer-to-peer and InfiniBand transports were left on"),
        "Consumer RTX 40xx GPUs have no peer-to-peer access between them, and NCCL's P2P transport fails or hangs there; "
        "Accelerate checks for them when its state is built and raises unless NCCL_P2P_DISABLE and NCCL_IB_DISABLE are "
        "set, which `accelerate launch` does itself and torchrun, deepspeed or python do not.",
        "Set NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1 in the environment of every rank (or start with `accelerate "
        "launch`); the ranks then exchange through host memory.",
        "Accelerate's RTX 4000 check"),
    _Refusal(
        "errno = ", _CMA, Category.UNRECOGNISED, 0.3,
        lambda m, on: ("Open MPI's shared-memory transport could not copy between two local processes with CMA "
                       f"(process_vm_readv: errno {m['errno']}{', EPERM' if m['errno'] == '1' else ''})"
                       f"{' on ' + on if on else ''}: a container or kernel that forbids it"),
        "Open MPI's shared-memory transport (btl vader) copies large messages between processes of one machine in one "
        "step with Linux's cross-memory attach (process_vm_readv), which needs ptrace rights over the peer: a container "
        "without CAP_SYS_PTRACE, or kernel.yama.ptrace_scope above 1, refuses it (errno 1, EPERM) and Open MPI prints "
        "this for every copy. Horovod's documentation says it can be ignored in an unprivileged container; it is the "
        "cause only when nothing else failed, so read the other errors first.",
        "Run the container with --cap-add=SYS_PTRACE (or --privileged), or turn the single copy off "
        "(OMPI_MCA_btl_vader_single_copy_mechanism=none); on a host, check /proc/sys/kernel/yama/ptrace_scope.",
        "Open MPI's single copy refused"),
    _Refusal(
        "group_size", _TF_GROUP, Category.COLLECTIVE_DESYNC, 0.75,
        lambda m, on: (f"TensorFlow's workers disagree on a collective group{' (' + on + ')' if on else ''}: an op "
                       f"expects {m['want']} members in group {m['key']}, the group was formed with {m['size']}"),
        "TensorFlow's collective ops (MultiWorkerMirroredStrategy, CollectiveAllReduce) name a group by key and size; a "
        "member that registered the group with another size than the op's was built from another view of the job: "
        "workers started with different cluster specs (TF_CONFIG's worker list), different numbers of GPUs visible, "
        "or different code or strategy.",
        "Give every worker the same TF_CONFIG cluster (the same worker list, each its own task index) and the same "
        "number of visible GPUs, from the same code and strategy.",
        "a collective group of another size"),
    _Refusal(
        "", _SLOTS, Category.UNRECOGNISED, 0.8,
        lambda m, on: (f"Open MPI refused to start {m['n'] + ' processes' if m['n'] else 'the processes'}: the hosts "
                       "or the allocation it was given offer fewer slots (a host named without its count, -H host "
                       f"instead of -H host:N; a scheduler's allocation smaller than -np){' (' + on + ')' if on else ''}"),
        "mpirun places each process in a slot of the hosts it is given; a host named without a count (-H localhost, "
        "horovodrun -H host, a hostfile line without slots=N) offers one slot (or its cores' count, by release), and "
        "under a scheduler the slots are the allocation's tasks (Slurm's --ntasks, --ntasks-per-node), so a job asking "
        "for more processes than the slots is refused before any starts.",
        "Give each host its number of processes: -H host1:4,host2:4 (horovodrun -np 8 -H host1:4,host2:4), or "
        "`host1 slots=4` in the hostfile; under Slurm ask for as many tasks as -np (or leave -np out); "
        "--oversubscribe lets more processes than slots run on purpose.",
        "Open MPI's slots"),
    _Refusal(
        "specified ", _EXECUTABLE, Category.UNRECOGNISED, 0.75,
        lambda m, on: ("mpirun could not start the program: it found no executable by that name, or could not run it, "
                       f"on a node{' (' + on + ')' if on else ''}"),
        "mpirun starts the program named on its command line on every node it was given; on one of them that path or "
        "name is not there (the script or Python not installed at the same place, a relative path from another working "
        "directory, a PATH that differs in a non-interactive shell) or is not executable.",
        "Use the same absolute paths on every node (a shared file system or the same environment), start Python "
        "explicitly (mpirun -np 4 python train.py), and pass the environment with -x PATH -x LD_LIBRARY_PATH; the "
        "block names the executable and the node.",
        "Open MPI could not start the program"),
    _Refusal(
        "mutually-exclusive", _MCA_EXCLUSIVE, Category.UNRECOGNISED, 0.3,
        lambda m, on: ("Open MPI was given two settings that exclude each other (its block names them and where each "
                       f"comes from){' (' + on + ')' if on else ''}: one of them may be ignored"),
        "Open MPI warns when two MCA variables that cannot both hold are set (btl_tcp_if_include beside "
        "btl_tcp_if_exclude, two component lists): which one wins is undefined, so an interface list the job relies on "
        "may be dropped. One often comes from a file the user never wrote (a container image's "
        "openmpi-mca-params.conf) and the other from the environment (OMPI_MCA_*) or mpirun's --mca.",
        "Keep one of the two: remove the line the block names from the file (openmpi-mca-params.conf), or unset the "
        "OMPI_MCA_ variable or --mca option; `ompi_info --all --parsable | grep <name>` shows each value's source.",
        "two MCA settings that exclude each other"),
    _Refusal(
        "", _NOFILE, Category.UNRECOGNISED, 0.6,
        lambda m, on: (f"a process ran out of file descriptors (Too many open files){' on ' + on if on else ''}: the "
                       "open-files limit (ulimit -n) is too low for its sockets"),
        "Every connection to a peer is a socket, and a process of a large job holds many (NCCL's and the collective "
        "libraries' bootstrap and proxies, one or more per peer and channel; the store's server, one per client; data "
        "loader workers sharing tensors through file descriptors). Past the open-files limit (often 1024 by default, "
        "lower in some containers) the next accept, connect or open fails with EMFILE and the process stops.",
        "Raise the open-files limit where the processes start: `ulimit -n 1048576` in the job script, `nofile` in "
        "/etc/security/limits.conf, the container's --ulimit nofile=1048576:1048576, systemd's LimitNOFILE for a "
        "service; check it inside the job (`ulimit -n` in the same launch). For data loaders, "
        "torch.multiprocessing.set_sharing_strategy('file_system') also helps.",
        "out of file descriptors"),
    _Refusal(
        "PMI support", _OMPI_NO_PMI, Category.UNRECOGNISED, 0.8,
        lambda m, on: ("Open MPI was started by srun directly, but this Open MPI was built without Slurm's PMI: its "
                       f"processes cannot find each other and stop{' (' + on + ')' if on else ''}"),
        "srun can start an MPI program's processes itself (direct launch) only where the MPI library talks to Slurm's "
        "process-management interface (PMI-2 or PMIx); this Open MPI was built without it, so each process finds no "
        "job around it and Open MPI refuses to run.",
        "Start the processes with mpirun inside the allocation (salloc/sbatch, then `mpirun -np N …`), or use an Open "
        "MPI built with Slurm's PMI (--with-pmix, --with-slurm) and run `srun --mpi=pmix` (`srun --mpi=list` shows "
        "what Slurm offers; `ompi_info | grep -i pmi` what Open MPI has).",
        "Open MPI without Slurm's PMI"),
    _Refusal(
        "in the PCI tree", _RXDM_GPUS, Category.UNRECOGNISED, 0.8,
        lambda m, on: (f"GPUDirect-TCPX(O)'s receive daemon (RxDM) found {m['pci']} GPUs in the PCI tree where CUDA "
                       f"reports {m['cuda']}{' (' + on + ')' if on else ''}: it could not pair every GPU with its NIC "
                       "and stopped, so the ranks' connections through it are refused"),
        "On Google Cloud's A3 machines the RxDM container moves each GPU's network traffic through the NIC beside it "
        "on the PCIe tree; it walks that tree and stops when it finds fewer GPU-NIC pairs than CUDA has GPUs: a GPU "
        "NIC's slot taken by another network (an extra gVNIC network on the node pool), a NIC not given to the VM, or "
        "a GPU missing from the tree. NCCL's connections through the daemon are then refused on every rank.",
        "Give the node pool exactly the GPU NICs the machine type expects (on A3 Mega, 8 GPU networks besides the "
        "primary gVNIC; remove additional networks), and check `nvidia-smi topo -m` and the NICs inside the VM "
        "against CUDA's GPU count before starting the daemon.",
        "RxDM's GPU count"),
    _Refusal(
        "FI_EFA_USE_DEVICE_RDMA", _EFA_NO_RDMA, Category.UNRECOGNISED, 0.8,
        lambda m, on: (f"libfabric's EFA provider was told to use the NIC's RDMA (FI_EFA_USE_DEVICE_RDMA=1), but this "
                       f"EFA device has no RDMA {m['op']}{' (' + on + ')' if on else ''}: it aborts the process"),
        "FI_EFA_USE_DEVICE_RDMA=1 forces libfabric's EFA provider to move data with the NIC's RDMA read (GPUDirect "
        "RDMA); only some instance types' EFA devices have it (p4d and later, trn1), and on the others the provider "
        "refuses and aborts before NCCL (aws-ofi-nccl) can run.",
        "Unset FI_EFA_USE_DEVICE_RDMA (the provider then uses RDMA where the device has it), or run on an instance "
        "type whose EFA supports RDMA read; `fi_info -p efa -v` shows the device's capabilities.",
        "EFA without RDMA"),
    _Refusal(
        "netmask", _NETMASK, Category.INTERFACE_MISMATCH, 0.75,
        lambda m, on: ("MPI could not reach its peers: the addresses they advertise"
                       + (f" ({m['addr']})" if m["addr"] else "") + " lie outside the netmask the job allows ("
                       + (m["mask"] or m["mask2"]) + ")" + (f"; {on}" if on else "")),
        "MS-MPI's sockets connect only to a peer's addresses inside the netmask the job was given (MPICH_NETMASK); "
        "every address the peers advertise lies outside it, so no connection is attempted: the hosts' addresses are on "
        "another subnet than the one named, or the peers advertise the wrong interface's address.",
        "Set MPICH_NETMASK (mpiexec -env MPICH_NETMASK NET/MASK) to the subnet the hosts share, or make each host "
        "advertise its address on that subnet; compare `ipconfig` on the hosts with the addresses in the error.",
        "no address inside the netmask"),
    _Refusal(
        "UCX", _UCX_NO_CUDA, Category.UNRECOGNISED, 0.75,
        lambda m, on: (f"the UCX that NIXL loaded has no CUDA support{' on ' + on if on else ''}: GPU memory is taken "
                       "for host memory, so GPU-to-GPU transfers fail or hang"),
        "NIXL (the KV-cache and weight transfer under vLLM, SGLang and Dynamo) moves GPU memory with UCX; the UCX it "
        "found was built without CUDA, or a second UCX copy (a wheel's own beside the container's HPC-X) was loaded "
        "first, so the GPU buffers it registers are treated as host memory: the transfer crashes in the registration "
        "or stalls at the first exchange.",
        "Load one UCX built with CUDA: check `ucx_info -v` and `ldd` of the NIXL plugin, remove the second copy from "
        "LD_LIBRARY_PATH (or point UCX_HOME/LD_LIBRARY_PATH at the CUDA-enabled one) and set UCX_TLS to include "
        "cuda_copy,cuda_ipc.",
        "UCX without CUDA"),
    _Refusal(
        "GID is NULL", _MC_GID, Category.IB_MODIFY_QP, 0.7,
        lambda m, on: (f"Mooncake's transfer engine found no RoCE GID for its NIC{' on ' + on if on else ''}: its "
                       "RDMA queue pairs cannot be set up, so KV-cache transfers between instances fail"),
        "On RoCE a queue pair is addressed by a GID of the port; Mooncake picks one itself unless told which, and found "
        "none usable (a bonded NIC, a GID table with only link-local or IPv6 entries, a port without an address), so "
        "no connection to a peer instance comes up and the other side reports it dead.",
        "Set MC_GID_INDEX to the port's RoCE v2 IPv4 GID (`show_gids`, or `ibv_devinfo -v`), the same index NCCL_IB_GID_"
        "INDEX would take; check that the NIC named for the engine has an address.",
        "Mooncake's GID"),
)


def library_setup(tl: Timeline) -> list[Hypothesis]:
    """Collective and communication libraries refusing the machine they were set up on, in their own words (the
    table above): NCCL's topology search (a PCI path it cannot walk back), Transformer Engine's userbuffers without
    CUDA multicast, Ascend's LCCL with more than two ranks over PCIe, Open MPI's single copy between local processes,
    TensorFlow's collective group of another size, Open MPI's slots, executable and exclusive settings, a process
    out of file descriptors, MS-MPI's netmask; and Ray's nodes known by another address than the one asked for or
    found (a host name, a VPN's or a second NIC's address, loopback)."""
    return [hypothesis for refusal in _REFUSALS for hypothesis in _library_refused(tl, refusal)]


# a process that runs Jupyter's kernel launcher as its program: a copy of the notebook's kernel, not a worker
_KERNEL_FRAMES = re.compile(r"^ipykernel_launcher\.py:\d+ in <module>$|^kernelapp\.py:\d+ in (?:init_sockets|_bind_socket|"
                            r"_try_bind_socket)$")


def notebook_kernel_relaunched(tl: Timeline) -> list[Hypothesis]:
    """A traceback that starts in ``ipykernel_launcher.py``'s ``<module>`` (or fails binding the kernel's sockets,
    ``zmq.error.ZMQError: Address already in use``): the job's processes were started as copies of the notebook's
    kernel. A launcher that runs ``sys.argv`` again (torchrun's or Lightning's subprocess launch, a ``spawn`` of the
    notebook's main) started Jupyter's kernel launcher, which binds the notebook's own ports. The launch, not the
    training (A028), and above the port's reading: the port is the kernel's, taken by the notebook itself."""
    events = [e for e in tl.of(Kind.EXCEPTION, Kind.STACK_DUMP)
              if any(_KERNEL_FRAMES.match(str(f)) for f in e.data.get("frames") or ())]
    if not events:
        return []
    where = attribute(events, tl)
    title = (f"the job's processes{' (' + where.text + ')' if where.text else ''} were started as copies of a Jupyter "
             "notebook's kernel (ipykernel_launcher), which bind the notebook's own ports: a distributed launch from "
             "a notebook")
    what = ("A launcher that starts the workers by running the program again (torchrun, Lightning's and "
            "super-gradients' DDP subprocess launch, multiprocessing's spawn of __main__) ran ipykernel_launcher, the "
            "notebook's program: each copy tries to bind the kernel's ZeroMQ ports, which the notebook holds "
            "(Address already in use), or runs no training at all.")
    fix = ("Put the training in a script and launch it from a terminal (torchrun train.py), or, inside the notebook, "
           "use a launcher made for it: accelerate's notebook_launcher, Lightning's strategy='ddp_notebook' "
           "(fork), torch.multiprocessing.start_processes with start_method='fork'.")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.85, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, "a copy of the notebook's kernel", 3))]


def hpc_fabric_setup(tl: Timeline) -> list[Hypothesis]:
    """Errors of an HPC system's own stack, with their fixes: Cray MPICH refusing its NIC policy for a rank not bound
    to one NUMA node (the CPU binding, or a library imported before MPI that changed it), or GPU buffers without its
    GPU transport layer linked; NVSHMEM's GPU-initiated transport on NICs that are not mlx5; the CXI provider's event
    queue overflowing (HPE Slingshot: too many messages at once for the queue sizes configured)."""
    out: list[Hypothesis] = []
    nic = [(e, m) for e in tl.events if e.kind in (Kind.ERROR_LINE, Kind.EXCEPTION)
           and (m := _CRAY_NIC.search(str(e.data.get("message") or e.text))) is not None]
    if nic:
        match = nic[0][1]
        rank = int(match["rank"])
        title = (f"Cray MPICH could not apply its NIC policy {match['policy']} to rank {rank}: the rank is not bound to "
                 "one NUMA node, so MPI_Init failed")
        what = ("With MPICH_OFI_NIC_POLICY=NUMA, Cray MPICH gives each rank the NIC of the NUMA node it is bound to; a "
                "rank whose CPUs span several NUMA nodes has none, and MPI_Init aborts (every rank of the job). The "
                "binding comes from the launcher (srun --cpu-bind, --gpu-bind) or is changed by a library imported "
                "before MPI starts (importing torch before mpi4py on Frontier).")
        fix = ("Bind each rank to one NUMA node (srun --cpu-bind=closest or a map per GPU), import mpi4py (MPI_Init) "
               "before torch, or set MPICH_OFI_NIC_POLICY to another policy (BLOCK, ROUND-ROBIN).")
        out.append(hypothesis(tl, Category.UNRECOGNISED, 0.85, title, what=what, fix=fix, culprits=[rank],
                              evidence=evidence_of([e for e, _ in nic], "MPICH refused the NIC policy", 4)))
    out += _ibgda_without_mlx5(tl) + _mnnvl_not_working(tl) + _gtl_not_linked(tl) + _link_layers_mixed(tl)
    out += _nccl_refused_setup(tl)
    overflow = [e for e in tl.of(Kind.ERROR_LINE) if e.data.get("source") == "cxi-overflow"]  # parsers.launchers
    if overflow:
        hosts = sorted({e.origin.host for e in overflow if e.origin.host})
        title = ("the Slingshot NIC's event queue overflowed (libfabric CXI: Cassini Event Queue overflow)"
                 + (f" on {', '.join(hosts[:3])}" if hosts else "") + ": more messages at once than its queues hold")
        what = ("HPE Slingshot's CXI provider posts completions to an event queue; a burst of messages (many ranks "
                "sending to one, large all-to-alls, many small messages) filled it and the provider had to recover, "
                "which stalls or fails the communication (MPI, NCCL or RCCL over aws-ofi).")
        fix = ("Raise the CXI queue sizes (FI_CXI_DEFAULT_CQ_SIZE=131072, FI_CXI_RX_MATCH_MODE=hybrid or software, "
               "FI_CXI_OFLOW_BUF_SIZE), as the site's documentation for the system advises, and spread the burst "
               "(fewer ranks per message target).")
        out.append(hypothesis(tl, Category.UNRECOGNISED, 0.5, title, what=what, fix=fix, hosts=hosts,
                              evidence=evidence_of(overflow, "the CXI provider's overflow", 4)))
    return out
