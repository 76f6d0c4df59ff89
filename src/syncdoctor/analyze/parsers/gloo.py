"""Gloo's errors. They never name the rank that wrote them: the reader takes it from the line prefix or
the file. Pure: no I/O.

* ``[…/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete``
  (also ``send``; source line numbers differ across releases); ``Application timeout caused pair closure``.
* ``[…/pair.cc:553] Connection closed by peer [10.0.0.2]:56722`` and ``Read error [10.0.0.1]:60813:
  Connection reset by peer``: a peer process went away (usually a secondary error).
* ``Gloo connectFullMesh failed with […] timed out connecting: SO_ERROR: Connection refused,
  remote=[127.0.0.1]:19861$1`` and the debug logger's ``ERROR failed to connect, willRetry=1, retry=1,
  retryLimit=3, rank=1, size=4, local=[127.0.0.1]:8323, remote=[127.0.0.1]:19861$1, error=…``.
  A message wrapped after ``[…/pair.cc:N]`` onto indented lines is read joined (:class:`MeshFollower`).
* ``Unable to resolve hostname to a (local) address. Using the loopback address as fallback.``
* ``[…/pair.cc:724] connect [127.0.1.1]:3210: Connection refused`` (gloo::IoException, PyTorch 1.x): 127.0.1.1
  is loopback too (Debian and Ubuntu map the hostname to it); wrapped after ``connect``, the next line that
  starts with the address is read joined (:class:`PairFollower`).
* ``[enforce fail at …/device.cc:84] ifa != nullptr. Unable to find address for: eth9``.
* Ascend's HCCL through torch_npu, a collective that waited out its timeout: ``EI0006: … Getting socket times
  out. Reason: Remote Rank did not send the data in time.`` (read as a timeout, like gloo's).
* ``[enforce fail at …/pair.cc:456] op.preamble.length <= op.nbytes. 4196 vs 4. Received data size doesn't
  match expected size. Is there a distributed collective mismatch in your code?`` (the explanation since July
  2025; before it the line ends at ``4196 vs 4``)
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, replace

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event
from syncdoctor.analyze.parsers.nccl_warn import IB_STATUS

__all__ = ["KEYWORDS", "MeshFollower", "PairFollower", "follow", "is_loopback", "parse"]

KEYWORDS = (
    "Notify record from remote rank",
    "Notify register waits for execution",
    "Transport init error",
    "hostname can't be empty",
    "ss_family",
    "Timed out waiting",
    "pair closure",
    "closed by peer",
    "reset by peer",
    "connectFullMesh",
    "SO_ERROR: ",
    "failed to connect",
    "loopback address",
    "Using the loopback",
    "Unable to find address",
    "Unable to find interface",
    "wc->status == IBV_",
    "Received data size",
    "op.preamble.length",
    "connect [",
    "send the data in time",
    " closed [",
    "Broken pipe",
    "timeout [",
)

_TIMEOUT = re.compile(r"Timed out waiting (?P<ms>\d+)ms for (?P<dir>send|recv) operation")
_ADDR = r"\[(?P<addr>[0-9A-Fa-f:.%\w]+)\]:(?P<port>\d+)"
# (pair.cc's ``Socket closed [addr]:port``, ``Socket unexpectedly closed …``: IO on a pair whose socket the peer closed)
_CLOSED = re.compile(r"(?:Connection closed by peer|Socket (?:unexpectedly )?closed) " + _ADDR)
# (a write to a peer that went away: ``writev [10.0.0.2]:41235: Broken pipe``)
_RESET = re.compile(r"(?:Read error|writev) " + _ADDR + r": (?:Connection reset by peer|Broken pipe)")
# a pair's own timeout in sync mode (bound buffers: ``buffer.cc:76] Read timeout [127.0.0.1]:32444``, PyTorch 0.4
# and gloo's own algorithms): the peer at that address never sent (or read) its part in time
_PAIR_TIMEOUT = re.compile(r"\b(?P<dir>Read|Write) timeout " + _ADDR)
_CONNECT_TIMEOUT = re.compile(r"\bConnect timeout " + _ADDR)
# an old pair.cc's check of its connect's outcome (2017-2018 gloo, Caffe2): ``[enforce fail at …/gloo/transport/tcp/
# pair.cc:498] optval == 0. 111 vs 0. SO_ERROR: Connection refused``
_SO_ERROR = re.compile(r"pair\.cc:\d+\][^\n]{0,80}\bSO_ERROR: (?P<error>Connection refused|Connection timed out"
                       r"|No route to host|Network is unreachable|Connection reset by peer)")
_DEBUG = re.compile(
    r"failed to connect, willRetry=(?P<retry>\d), retry=(?P<n>\d+), retryLimit=(?P<limit>\d+), rank=(?P<rank>\d+), "
    r"size=(?P<size>\d+), local=\[(?P<local>[^\]]+)\]:\d+, remote=\[(?P<remote>[^\]]+)\]:(?P<rport>\d+)\S*, "
    r"error=(?P<error>[^,]+)"
)
_MESH = re.compile(r"connectFullMesh failed with (?:\[[^\]]*\] )?(?P<error>.+)")
_REMOTE = re.compile(r"remote=\[(?P<addr>[^\]]+)\](?::(?P<port>\d+))?")  # the port masked in some pastes
# connectFullMesh's message wrapped after its source location (the rest on the next, indented lines)
_MESH_CUT = re.compile(r"connectFullMesh failed with \[[^\]]*\]\s*$")
# the error line ending at its first words (``RuntimeError: Gloo connectFullMesh failed``), a paste cut in a word
# (``… connectFullMesh fai``): gloo could not connect its processes, why is not in the inputs
_MESH_BARE = re.compile(r"\bconnectFullMesh f(?:a(?:i(?:l(?:ed?)?)?)?)?[.:]?\s*$")
# pair.cc's connect error wrapped after "connect" (a terminal or a forum): "…/pair.cc:799] connect " then
# "[127.0.1.1]:29591: Connection refused" at the start of the next line
_PAIR_CUT = re.compile(r"pair\.cc:\d+\] connect\s*$")
_PAIR_CONNECT = re.compile(r"connect \[(?P<addr>[0-9A-Fa-f:.%\w]+)\]:(?P<port>\d+): (?P<error>[A-Za-z][^\n]{0,80})")
_IFACE = re.compile(r"Unable to find (?:address|interface) for:? (?P<ifname>\S+)")
# the explanation was added in July 2025; before it the enforce line ends at "4196 vs 4"
_SIZE = re.compile(r"op\.preamble\.length <= op\.nbytes\. (?P<got>\d+) vs (?P<expected>\d+)"
                   r"|(?P<got2>\d+) vs (?P<expected2>\d+)\. Received data size doesn't match expected size")
# device.cc: ``[enforce fail at …/gloo/transport/tcp/device.cc:208] ss1.ss_family == ss2.ss_family. 2 vs 10``
_FAMILY = re.compile(r"ss1\.ss_family == ss2\.ss_family\. (?P<a>\d+) vs (?P<b>\d+)")
_FAMILIES = {"2": "IPv4", "10": "IPv6"}
_SOURCE = re.compile(r"\[[^\]]*gloo/(?P<file>[\w/]+\.cc):(?P<line>\d+)\]")


def is_loopback(addr: str) -> bool:
    """True for 127.0.0.0/8 and ::1 (also inside ``[...]``, with a ``%zone``, or mapped into IPv6:
    ``::ffff:127.0.0.1``, which Python's own check does not count before 3.13)."""
    text = addr.strip("[]").split("%")[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return text in ("localhost",)
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _gloo_source(body: str) -> dict[str, str]:
    match = _SOURCE.search(body)
    return {"gloo_source": f"{match['file']}:{match['line']}"} if match else {}


_HCCL_LINK = re.compile(r"createLink para:rank\[\d{1,7}\][^,]*, remoteRank\[(?P<peer>\d{1,7})\]")
_NOTIFY_PEER = re.compile(r"Notify record from remote rank: ?\[(?P<peer>\d{1,7})\]")
# (CANN 8's wording: ``A timeout occurs when the Notify register waits for execution. Waiting peer rank: 12; task …``)
_WAITING_PEER = re.compile(r"Waiting peer rank: ?\[?(?P<peer>\d{1,7})\b")


def _pair_connect_failed(line: Line, match: re.Match[str], error: str) -> Event:
    """A pair's own failed connect to the peer at ``match``'s address (``connect [addr]:port: …``, ``Connect timeout
    [addr]:port``)."""
    return make_event(Kind.GLOO_CONNECT_FAILED, line, data={
        "error": error, "final": True, "remote_addr": match["addr"], "remote_port": int(match["port"]),
        "loopback_remote": is_loopback(match["addr"]), **_gloo_source(line.body)})


# gloo's ibverbs transport, a work completion that failed: ``[enforce fail at gloo/transport/ibverbs/pair.cc:438]
# wc->status == IBV_WC_SUCCESS. 5 vs 0. Send for slot 0: Work Request Flushed Error`` (its verbs status, then what)
# (a paste that wrapped the line may leave spaces inside the constant: ``IBV_    WC_SUCCESS``)
_IBV_COMPLETION = re.compile(r"wc->status == IBV_\s{0,8}WC_SUCCESS\. (?P<status>\d{1,3}) vs 0\.(?:\s*(?P<what>[^:\n]{1,60}):)?"
                             r"\s*(?P<text>[^\n]{0,120})")


def parse(line: Line) -> list[Event]:
    body = line.body
    events: list[Event] = []
    completion = _IBV_COMPLETION.search(body) if "wc->status" in body else None
    if completion:
        status = int(completion["status"])
        return [make_event(Kind.IB_COMPLETION_ERROR, line, data={
            "status": status, "status_text": IB_STATUS.get(status, completion["text"].strip()[:80]),
            "opcode": None, "vendor_err": None, "hca": None, "transport": "gloo"})]
    match = _TIMEOUT.search(body)
    if match:
        events.append(make_event(Kind.GLOO_TIMEOUT, line, data={
            "ms": int(match["ms"]), "direction": match["dir"], "transport": "gloo", **_gloo_source(body)}))
    elif (pair_timeout := _PAIR_TIMEOUT.search(body)) is not None:
        events.append(make_event(Kind.GLOO_TIMEOUT, line, data={
            "direction": "recv" if pair_timeout["dir"] == "Read" else "send", "transport": "gloo",
            "peer_addr": pair_timeout["addr"], **_gloo_source(body)}))
    elif "Application timeout caused pair closure" in body:
        events.append(make_event(Kind.GLOO_TIMEOUT, line, data={"pair_closure": True, "transport": "gloo"}))
    elif "Transport init error" in body and (link := _HCCL_LINK.search(body)):
        # Ascend HCCL could not set up the link to a peer of the group within its timeout (HCCL_CONNECT_TIMEOUT):
        # ``Transport init error! createLink para:rank[7]-localUserrank[7]-localIpAddr[…], remoteRank[15]-…``; its
        # detector then says whether the network had trouble or the peer simply never came
        events.append(make_event(Kind.GLOO_TIMEOUT, line, data={
            "transport": "hccl", "group_peer": int(link["peer"]), "link": True}))
    elif "Notify record from remote rank" in body or "Notify register waits for execution" in body:
        # Ascend's HCCL waiting on a peer's signal (EI0002): ``The wait execution of the Notify register times out.
        # Reason: The Notify register has not received the Notify record from remote rank: [24].`` (a rank of that
        # group, which may be a sub-group)
        awaited = _NOTIFY_PEER.search(body) or _WAITING_PEER.search(body)
        events.append(make_event(Kind.GLOO_TIMEOUT, line, data={
            "transport": "hccl", **({"group_peer": int(awaited["peer"])} if awaited else {})}))
    elif "Remote Rank did not send the data in time" in body:
        # Ascend's HCCL (torch_npu), its collective's wait: ``EI0006: … Getting socket times out. Reason: Remote
        # Rank did not send the data in time. Please check the reason for the rank being stuck``
        events.append(make_event(Kind.GLOO_TIMEOUT, line, data={"transport": "hccl"}))
    mesh = _MESH.search(body)
    debug = _DEBUG.search(body)
    if debug:
        own = Origin(rank=int(debug["rank"])) if line.origin.rank is None else None
        events.append(make_event(Kind.GLOO_CONNECT_FAILED, line, origin=own, data={
            "gloo_rank": int(debug["rank"]), "size": int(debug["size"]), "local_addr": debug["local"],
            "remote_addr": debug["remote"], "remote_port": int(debug["rport"]), "error": debug["error"].strip(),
            "will_retry": debug["retry"] == "1", "final": debug["retry"] == "0",
            "loopback_local": is_loopback(debug["local"]), "loopback_remote": is_loopback(debug["remote"]),
        }))
    elif mesh and _MESH_CUT.search(body):
        pass  # the message went on to the next lines: the follower reads them together
    elif mesh:
        remote = _REMOTE.search(mesh["error"]) or _CLOSED.search(mesh["error"])
        data: dict[str, object] = {"error": mesh["error"][:200], "final": True}
        if remote:
            data["remote_addr"] = remote["addr"]
            data["remote_port"] = int(remote["port"]) if remote["port"] else None
            data["loopback_remote"] = is_loopback(remote["addr"])
        events.append(make_event(Kind.GLOO_CONNECT_FAILED, line, data=data))
    elif _MESH_BARE.search(body):
        events.append(make_event(Kind.GLOO_CONNECT_FAILED, line, data={
            "error": "the reason is not in the inputs", "final": True, "cut": True}))
    elif (pair := _PAIR_CONNECT.search(body)) is not None:  # pair.cc before connectFullMesh said it (<= 1.x)
        events.append(_pair_connect_failed(line, pair, pair["error"].strip()[:200]))
    elif (connect := _CONNECT_TIMEOUT.search(body)) is not None:  # the pair's connect ran out of time
        events.append(_pair_connect_failed(line, connect, "Connect timeout"))
    elif (refused := _SO_ERROR.search(body)) is not None:  # (no address in these words)
        events.append(make_event(Kind.GLOO_CONNECT_FAILED, line, data={"error": refused["error"], "final": True}))
    else:
        closed = _CLOSED.search(body) or _RESET.search(body)
        if closed:
            events.append(make_event(Kind.PEER_CLOSED, line, data={
                "peer_addr": closed["addr"], "peer_port": int(closed["port"]), "transport": "gloo",
                "how": "reset" if "reset by peer" in closed.group(0) else "closed", **_gloo_source(body)}))
    if "loopback address as fallback" in body or "Using the loopback" in body:
        events.append(make_event(Kind.GLOO_LOOPBACK, line, data={"fallback": True}))
    iface = _IFACE.search(body)
    if iface:
        events.append(make_event(Kind.INTERFACE_MISSING, line, data={
            "ifname": iface["ifname"].rstrip(".,"), "transport": "gloo"}))
    family = _FAMILY.search(body)
    if family:  # device.cc: a pair's two addresses are of different families (an IPv4 host, an IPv6 one)
        events.append(make_event(Kind.GLOO_CONNECT_FAILED, line, data={
            "error": f"address families differ ({_FAMILIES.get(family['a'], family['a'])} vs "
                     f"{_FAMILIES.get(family['b'], family['b'])})", "final": True, "family_mismatch": True}))
    if "interface or hostname can't be empty" in body:  # makeUVDevice (libuv, Windows): no interface, no name
        events.append(make_event(Kind.INTERFACE_MISSING, line, data={
            "ifname": None, "transport": "gloo", "message": body.strip()[:300]}))
    size = _SIZE.search(body)
    if size:
        events.append(make_event(Kind.COLLECTIVE_MISMATCH, line, data={
            "source": "gloo-size", "received_bytes": int(size["got"] or size["got2"]),
            "expected_bytes": int(size["expected"] or size["expected2"]),
            "sides": []}))
    return events


@dataclass
class MeshFollower:
    """``Gloo connectFullMesh failed with [pair.cc:N]`` whose message a paste or a log wrapped onto the next,
    indented lines (``timed out connecting: SO_ERROR: …, remote=[…]``, ``(rank=8, size=16, local=[…])``):
    read joined, as one line."""

    head: Line
    max_lines: int = 4
    rest: list[str] = field(default_factory=list)

    def feed(self, line: Line) -> bool:
        if line.body[:1] not in (" ", "\t") or not line.body.strip():  # indented after the line's prefixes
            return False
        self.rest.append(line.body.strip())
        return True

    def finish(self) -> list[Event]:
        joined = replace(self.head, body=" ".join([self.head.body.rstrip(), *self.rest]))
        events = [e for e in parse(joined) if e.kind is Kind.GLOO_CONNECT_FAILED]
        if not events and not self.rest:
            # (the paste ends the line after its source location, or nothing indented follows: gloo could not connect
            # its processes all the same, why is not in the inputs)
            events = [make_event(Kind.GLOO_CONNECT_FAILED, self.head, data={
                "error": "the reason is not in the inputs", "final": True, "cut": True})]
        return events


@dataclass
class PairFollower:
    """pair.cc's ``connect [addr]:port: error`` wrapped after ``connect``: the next line, if it starts with
    the address, is read joined to it."""

    head: Line
    max_lines: int = 1
    rest: str = ""

    def feed(self, line: Line) -> bool:
        if line.body.lstrip().startswith("["):
            self.rest = line.body.strip()
        return False

    def finish(self) -> list[Event]:
        if not self.rest:
            return []
        joined = replace(self.head, body=f"{self.head.body.rstrip()} {self.rest}")
        return [e for e in parse(joined) if e.kind is Kind.GLOO_CONNECT_FAILED]


def follow(line: Line) -> MeshFollower | PairFollower | None:
    if _MESH_CUT.search(line.body):
        return MeshFollower(line)
    return PairFollower(line) if _PAIR_CUT.search(line.body) else None

