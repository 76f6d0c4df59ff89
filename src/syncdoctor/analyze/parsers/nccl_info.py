"""NCCL INFO lines that say how a communicator was built. Pure: no I/O.

Prefix ``[<ts> ]<host>:<pid>:<tid> [<cudaDev>] NCCL INFO `` (see :mod:`.prefixes`); messages, every layout
in NCCL 2.7-2.30:

* ``NCCL version 2.19.3+cuda12.3`` (printed bare up to 2.21, also as an INFO line since 2.22)
* ``Bootstrap : Using eth0:10.10.6.118<0>`` (<= 2.23), ``Bootstrap: Using …`` (2.24+),
  ``Bootstrap : Using [0]ens192f1:10.150.178.134<0>`` (<= 2.7), IPv6 ``ib0:fe80::…%ib0<0>``
* ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.10.6.118<0>``,
  ``NET/Socket : Using [0]ens7:10.128.0.32<0> [1]…``, ``Using network IB`` / ``Socket`` / a plugin; ``NET/IB :
  No device found.`` (no network chosen yet: a plugin may follow, else sockets)
* ``[ncclCommInitRank ]comm 0x… rank 3 nranks 16 cudaDev 3 [nvmlDev 3 ]busId 1b000 [commId 0x… ][parent 0x…
  …]- Init COMPLETE`` (the function name since 2.21, commId since 2.16, nvmlDev again since 2.18; 2.28 names
  ``ncclCommInitRankConfig`` and, for splits, ``parent 0x… splitCount 1 color … key 0``)
* the network plugin: ``NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v8)`` / ``Plugin Path : /opt/hpcx/…/
  libnccl-net.so`` (loaded), ``NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.``,
  ``NET/Plugin : No plugin found (libnccl-net.so), using internal implementation``, ``NET/Plugin: Using internal
  network plugin.`` (none): every host of a job should load the same one
* ``NCCL_SOCKET_IFNAME set by environment to eth0`` (any ``NCCL_*`` variable NCCL reads and reports at
  INFO with the ENV subsystem; some, like ``NCCL_COLLNET_ENABLE … to 1.``, end with a period)
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import replace

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event
from syncdoctor.analyze.parsers.prefixes import NcclPrefix, split_nccl

__all__ = ["KEYWORDS", "PLUGIN_NETS", "nccl_origin", "parse", "place", "split_endpoint"]

# RAS's own INFO line when it gives up on a peer (ras/peers.cc): ``RAS declaring peer 10.1.2.5<36401> as DEAD; …``
_RAS_DEAD = re.compile(r"RAS declaring peer (?P<peer>\S{1,80}?) as DEAD")
KEYWORDS = ("NCCL version", "Bootstrap", "NET/IB", "NET/Socket", "Using network", " Using internal Network", "Init COMPLETE", "Init START", "Abort COMPLETE", " - Init", "INFO Ring ",
            "set by environment to", "_HCA set to", "NET : Using interface", "Connection closed by localRank", " -> ",
            "neither AF_INET", "Plugin", "returned", "NET/OFI", "NET/G", "NET/FasTrak", "RAS declaring peer",
            "Failed to open libibverbs")

# a communicator's ring to the next rank, one line per ring (2.3-2.6): ``Ring 00 : 39[7] -> 88[0] via direct shared
# memory`` (2.3-2.4 without the devices; the network's ``[receive]`` side names the peer first, 2.3's network line
# says no side and is left), and 2.10+'s ``Ring 00 : 3 -> 4 -> 5``: the rank of the process
# that prints it in that communicator. (2.7+'s ``Channel 00/0 : 0[0] -> 1[1] via P2P/IPC`` says the same, but a job
# prints tens of thousands of them: no anchor reads them, and its communicator's own line gives the rank.)
_CHANNEL = re.compile(r"\bRing \d{1,3} : (?P<a>\d{1,7})(?:\[[0-9a-fx]{1,16}\])? -> (?P<b>\d{1,7})"
                      r"(?:\[[0-9a-fx]{1,16}\])?(?: \[(?P<dir>send|receive)\])? via (?P<via>\S+)"
                      # 2.10+ (NCCL_DEBUG_SUBSYS with GRAPH): ``Ring 00 : 3 -> 4 -> 5``, the process's rank in the middle
                      r"|\bRing \d{1,3} : \d{1,7} -> (?P<mid>\d{1,7}) -> \d{1,7}\s*$")
_VERSION = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)(?P<suffix>[^+\s]*)(?:\+cuda(?P<cuda>[\d.]+))?")
_BOOTSTRAP = re.compile(r"Bootstrap ?: Using (?:\[\d+\])?(?P<endpoint>\S+)(?P<rest>(?: \[\d+\]\S+)*)")
_LEGACY_IFACE = re.compile(r"\bNET : Using interface (?P<endpoint>\S+)")  # NCCL 2.3-2.4: one line per interface
# NCCL's error propagation, one INFO line per frame: ``misc/socket.cc:567 -> 2`` (ncclResult_t 2: system error)
_RETURN = re.compile(r"^(?P<file>[\w./\-]+\.(?:cc|cu|c|h)):(?P<line>\d+) (?:\([\w:~]+\) )?-> (?P<code>[1-9])\b")
_NCCL_RESULTS = {1: "unhandled cuda error", 2: "unhandled system error", 3: "internal error", 4: "invalid argument",
                 5: "invalid usage", 6: "remote error", 7: "in progress"}
_NO_FAMILY = re.compile(r"address\s+with family \d+ is neither AF_INET")
_SERVICE_CLOSED = re.compile(r"\[Service thread\] Connection closed by localRank (?P<local>-?\d+)")
_IB = re.compile(r"NET/IB ?: Using (?P<devices>.*?);? ?OOB (?P<oob>\S+)")
_IB_DEV = re.compile(r"\[\d+\](?P<dev>[\w.\-]+):(?P<port>\d+)(?::\d+)*/(?P<link>IB|RoCE)")
_SOCKET = re.compile(r"NET/Socket ?: Using (?P<devices>.+)")
_SOCKET_DEV = re.compile(r"\[\d+\](?P<endpoint>\S+)")
_NO_IB = re.compile(r"NET/IB ?: ?No device found")  # at INFO (a WARN since 2.x is nccl_warn's)
_NETWORK = re.compile(r"Using (?:network|internal Network) (?P<net>\w+)")  # "internal Network": NCCL 2.2-2.3
_PLUGIN_LOADED = re.compile(r"NET/Plugin ?: ?Loaded (?:net|coll) plugin (?P<name>.+?)\s*$|Plugin Path ?: ?(?P<path>\S+)")
_PLUGIN_NONE = re.compile(r"NET/Plugin ?: ?(?:Could not find: \S+\. Using internal|No plugin found|Using internal "
                          r"network plugin)")
# a network plugin that is installed but could not be loaded, a library it needs missing (2.19+ print dlopen's error):
# ``NET/Plugin: libnccl-net.so: libfabric.so.1: cannot open shared object file: No such file or directory``
_PLUGIN_BROKEN = re.compile(r"NET/Plugin ?: ?(?:Plugin load returned \d+ : )?(?P<lib>lib[\w.\-]*\.so[\w.]*): "
                            r"(?P<dep>[\w.\-/+]+\.so[\w.]*): cannot open shared object file"
                            # (2.18-2.19: dlopen's error after ``dlerror=``, then ``No plugin found``): a library the
                            # plugin needs is older than it (``libfabric.so.1: version `FABRIC_1.7' not found (required
                            # by …/libnccl-net.so)``, aws-ofi-nccl against the system's EFA libfabric)
                            r"|NET/Plugin ?: ?dlerror=\S*?(?P<old>lib[\w.\-+]*\.so[\w.]*): version `(?P<ver>[^']{1,40})' not "
                            r"found \(required by \S*?(?P<needs>lib[\w.\-]*\.so[\w.]*)\)")
# a network plugin's own INFO lines (aws-ofi-nccl ``NET/OFI Selected Provider is efa``, Google's ``NET/GPUDirectTCPX
# …``): the process uses that plugin, unless it also warns that the plugin failed and falls back to sockets
PLUGIN_NETS = ("NET/OFI", "NET/AWS", "NET/GPUDirectTCPX", "NET/FasTrak", "NET/gIB")  # the plugins' own words
_PLUGIN_INFO = re.compile(rf"(?P<plugin>{'|'.join(map(re.escape, PLUGIN_NETS))})\b")
# (net_ib.cc reports its HCA list as ``NCCL_IB_HCA set to mlx5_0:1,mlx5_1:1``, without "by environment")
_ENV = re.compile(r"\b(?P<name>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<value>.*)$")
_INIT = re.compile(r"comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cuda>-?\d+)")
_INIT_FIELDS = {
    "nvml_dev": re.compile(r"nvmlDev (-?\d+)"),
    "bus_id": re.compile(r"busId ([0-9a-fA-F]+)"),
    "comm_id": re.compile(r"commId (0x[0-9a-fA-F]+)"),
    "parent": re.compile(r"parent (0x[0-9a-fA-F]+|\(nil\))"),
}


def split_endpoint(text: str) -> tuple[str, str]:
    """``eth0:10.0.0.1<0>`` -> (``eth0``, ``10.0.0.1``); IPv6 ``ib0:fe80::1%ib0<0>`` -> (``ib0``, ``fe80::1%ib0``)."""
    text = text.split("<", 1)[0]
    ifname, _, addr = text.partition(":")
    return ifname, addr


def nccl_origin(prefix: NcclPrefix | None) -> Origin | None:
    return Origin(host=prefix.host, pid=prefix.pid, device=prefix.device) if prefix else None


# a connect NCCL retries (2.19+, at INFO): ``socketPollConnect: connect returned No route to host, retrying (26/34)
# after sleep for 2600 msec``, also ``Call to connect to 10.0.0.2<4567> returned Connection refused, retrying``
_RETRYING = re.compile(r"connect(?: to (?P<peer>\S+))? returned (?P<error>[A-Za-z][\w ]{2,60}?), retrying "
                       r"\((?P<n>\d+)/(?P<m>\d+)\)")
# NCCL before 2.19 retried a refused or timed-out connect without counting aloud (socket.h connectAddress: every
# retry in the early releases, later socketStartConnect: one line per 1000 refused tries):
# ``Call to connect returned Connection refused, retrying``; read as a connect still failing (``retrying``), which
# the rules count only when that process never completed its init afterwards
_RETRYING_OLD = re.compile(r"Call to connect(?: to (?P<peer>\S+))? returned (?P<error>[A-Za-z][\w ]{2,60}?), "
                           r"retrying[.\s*_`\"']*$")  # an ellipsis, markdown emphasis or quotes after it in a paste


def _peer_ip(peer: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address of a dialled peer as NCCL prints it (``10.0.0.2<4567>``, ``fe80::1%ib0<4567>``), or None."""
    try:
        return ipaddress.ip_address(peer.split("<", 1)[0].split("%", 1)[0].strip("[]"))
    except ValueError:
        return None


def _peer_addr(peer: str) -> str:
    """The address of a dialled peer: ``10.0.0.2<4567>`` or ``fe80::1%ib0<4567>`` (NCCL prints no interface
    there), ``ib0:10.0.0.2<4567>`` where one is."""
    bare = peer.split("<", 1)[0]
    return bare if _peer_ip(peer) is not None else split_endpoint(peer)[1] or bare


def _unroutable(peer: str | None) -> bool:
    """``169.254.170.23<52333>``, ``127.0.0.1<…>``: an address on the dialling host's own link or loopback."""
    ip = _peer_ip(peer) if peer else None
    return ip is not None and (ip.is_loopback or ip.is_link_local)


def place(line: Line) -> Event | None:
    """Where a process runs, from any INFO line of its (``g1002:2128869:2128880 [0] NCCL INFO Setting affinity …``):
    the host, pid and device of NCCL's prefix, not the rank a launcher's prefix may give the line (``3:`` of ``srun
    -l`` is a task, which runs rank 6 as often as rank 3): a process seen is no rank present. The caller asks once
    per process; it is what ties a worker that torchrun reports by pid, or a crash of that pid, to its host where no
    other line of the process was read."""
    prefix = split_nccl(line.body)
    if prefix is None or prefix.level != "INFO" or not prefix.host or prefix.pid is None:
        return None
    event = make_event(Kind.NCCL_PROCESS, line)
    return replace(event, origin=Origin(host=prefix.host, pid=prefix.pid, device=prefix.device))


def parse(line: Line) -> list[Event]:
    body = line.body
    prefix = split_nccl(body)
    if prefix is not None and prefix.level not in ("INFO", "VERSION"):
        return []
    message = prefix.message if prefix else body
    origin = nccl_origin(prefix)
    events: list[Event] = []
    match = _VERSION.search(message)
    if match:
        events.append(make_event(Kind.NCCL_VERSION, line, origin=origin, data={
            "version": match["version"], "cuda": match["cuda"]}))
    match = _CHANNEL.search(message)
    if match and prefix is not None and prefix.host and prefix.pid is not None:
        # the sender's rank comes first; a network channel's receiving side names its peer first
        if match["mid"] is not None:
            mine, peer = match["mid"], None
        elif match["via"].startswith("NET") and match["dir"] is None:
            return events  # 2.3's network ring says neither which side printed it
        else:
            mine, peer = (match["b"], match["a"]) if match["dir"] == "receive" else (match["a"], match["b"])
        events.append(make_event(Kind.NCCL_CHANNEL, line, origin=origin, data={
            "comm_rank": int(mine), "peer_rank": int(peer) if peer is not None else None,
            "net": (match["via"] or "").startswith("NET")}))
        return events
    if message.startswith("Failed to open libibverbs"):  # at INFO since 2.8 (a WARN before: parsers.nccl_warn), which
        # every run on a machine without InfiniBand prints: a fact about its network, no error
        return [make_event(Kind.NCCL_NET, line, origin=origin, data={"message": message[:200], "no_verbs": True})]
    match = _RAS_DEAD.search(message) if "RAS declaring" in message else None
    if match:  # RAS (2.24+) gave up on a peer process: no keep-alive from it (hung, dead, or its host cut off)
        host, _port = split_endpoint(match["peer"])
        return [make_event(Kind.RAS, line, origin=Origin(host=host or match["peer"]), data={
            "issue": "DEAD", "ranks": [], "processes": [], "declared_by": origin.host if origin else None})]
    match = _BOOTSTRAP.search(message)
    if match:
        ifname, addr = split_endpoint(match["endpoint"])
        data: dict[str, object] = {"ifname": ifname, "addr": addr}
        if match["rest"]:  # 2.7 and older list every interface they will use
            data["also"] = [split_endpoint(m["endpoint"]) for m in _SOCKET_DEV.finditer(match["rest"])]
        events.append(make_event(Kind.NCCL_BOOTSTRAP, line, origin=origin, data=data))
    match = _LEGACY_IFACE.search(message)
    if match:
        ifname, addr = split_endpoint(match["endpoint"])
        events.append(make_event(Kind.NCCL_BOOTSTRAP, line, origin=origin, data={
            "ifname": ifname, "addr": addr, "legacy": True}))
    match = _RETURN.match(message)
    if match:  # the first frame of a chain names the subsystem that failed (bootstrap, socket, shm, net_ib...)
        code = int(match["code"])
        events.append(make_event(Kind.NCCL_ERROR, line, origin=origin, data={
            "error": _NCCL_RESULTS.get(code, f"error {code}"), "code": None, "version": None,
            "frame": f"{match['file']}:{match['line']}", "chain": True}))
    if _NO_FAMILY.search(message):  # 2.27: NCCL_SOCKET_IFNAME matched nothing and the address stayed empty
        events.append(make_event(Kind.INTERFACE_MISSING, line, origin=origin, data={
            "ifname": None, "transport": "nccl", "where": "socket", "message": message[:300]}))
    match = _RETRYING.search(message)
    # the last try: NCCL gives up after it (its WARN may not be pasted). One past half of the tries (NCCL sleeps
    # n x 100 ms before try n: 15 s and more of refusals): still retrying, counted by the rules only when that
    # process never completed its init afterwards (a paste cut there). The first tries are a peer not listening
    # yet at startup, which healthy jobs print too.
    # A try to a loopback or link-local address counts from the first: no other host can ever accept it.
    if match and (2 * int(match["n"]) >= int(match["m"]) or _unroutable(match["peer"])):
        final = match["n"] == match["m"]
        events.append(make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
            "error": match["error"].strip(), "retries": int(match["m"]),
            **({"final": True} if final else {"retrying": True, "try": int(match["n"])}),
            **({"peer_addr": _peer_addr(match["peer"])} if match["peer"] else {})}))
    match = _RETRYING_OLD.search(message) if not events else None
    if match:
        events.append(make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
            "error": match["error"].strip(), "retrying": True,
            **({"peer_addr": _peer_addr(match["peer"])} if match["peer"] else {})}))
    match = _SERVICE_CLOSED.search(message)
    if match:  # the proxy service of a process on this host saw that local rank go away
        events.append(make_event(Kind.PEER_CLOSED, line, origin=origin, data={
            "transport": "nccl", "how": "closed", "closed_local_rank": int(match["local"]), "service": True}))
    match = _IB.search(message)
    if match:
        devices = [f"{m['dev']}:{m['port']}/{m['link']}" for m in _IB_DEV.finditer(match["devices"])]
        ifname, addr = split_endpoint(match["oob"])
        events.append(make_event(Kind.NCCL_NET, line, origin=origin, data={
            "net": "IB", "devices": devices, "oob_ifname": ifname, "oob_addr": addr}))
    match = _SOCKET.search(message)
    if match:
        endpoints = [split_endpoint(m["endpoint"]) for m in _SOCKET_DEV.finditer(match["devices"])]
        events.append(make_event(Kind.NCCL_NET, line, origin=origin, data={
            "net": "Socket", "devices": [f"{i}:{a}" for i, a in endpoints],
            "ifnames": [i for i, _ in endpoints], "addrs": [a for _, a in endpoints]}))
    match = _PLUGIN_LOADED.search(message)
    if match:
        events.append(make_event(Kind.NCCL_NET, line, origin=origin, data={
            "plugin": (match["name"] or match["path"]).strip()[:160]}))
    elif (broken := _PLUGIN_BROKEN.search(message)) is not None:
        events.append(make_event(Kind.NCCL_NET, line, origin=origin, data={
            "plugin_broken": broken["lib"] or broken["needs"],
            "missing": broken["dep"] or f"{broken['old']} with version {broken['ver']}"}))
    elif _PLUGIN_NONE.search(message):
        events.append(make_event(Kind.NCCL_NET, line, origin=origin, data={"plugin": "internal"}))
    match = _NETWORK.search(message)
    if match:
        events.append(make_event(Kind.NCCL_NET, line, origin=origin, data={"network": match["net"]}))
    elif _NO_IB.search(message):  # no network chosen yet: a plugin (EFA's) may follow, else sockets
        events.append(make_event(Kind.NCCL_NET, line, origin=origin, data={"no_ib_device": True}))
    match = _PLUGIN_INFO.match(message)
    if match and prefix is not None:  # the plugin at work in this process (its own INFO lines)
        events.append(make_event(Kind.NCCL_NET, line, origin=origin, data={"plugin_at_work": match["plugin"]}))
    match = _ENV.search(message)
    if match:
        value = match["value"].strip().removesuffix(".")  # some of these lines end as a sentence
        events.append(make_event(Kind.NCCL_ENV, line, origin=origin, data={"name": match["name"], "value": value}))
    # Init START (2.16+) and a communicator's ``Abort COMPLETE`` say which GPU each rank set out on, not that it
    # completed its communicator: both are read as a start
    # (a paste cut right after ``- Init`` is one of the two, so at least a start)
    started = "Init START" in message or "Abort COMPLETE" in message or message.rstrip().endswith(" - Init")
    if "Init COMPLETE" in message or started:
        match = _INIT.search(message)
        if match:
            data = {
                "comm": match["comm"], "comm_rank": int(match["rank"]), "nranks": int(match["nranks"]),
                "cuda_dev": int(match["cuda"]),
            }
            for name, pattern in _INIT_FIELDS.items():
                found = pattern.search(message)
                if found:
                    data[name] = found[1]
            if "Abort COMPLETE" in message:  # the process ended that communicator: after an error or a timeout
                data["aborted"] = True
            comm_id = data.get("comm_id")
            events.append(make_event(Kind.NCCL_INIT_START if started else Kind.NCCL_INIT, line, origin=origin,
                                     group=comm_id if isinstance(comm_id, str) and comm_id else match["comm"],
                                     data=data))
    return events
