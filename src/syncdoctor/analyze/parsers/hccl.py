"""Huawei Ascend HCCL's own failure reports (CANN's plog and the console error codes of torch_npu jobs). Pure: no I/O.

The formats are those HCCL's fault-diagnosis guide documents (hicann/hccl, docs/en/user_guide/fault_diagnosis):

* the plog prefix ``[ERROR] HCCL(1219039,all_reduce_test):2025-10-23-21:05:09.859.568 [task_exception_handler.cc:610]
  [1219039][TaskExecStage]…`` (also ``HCCP(…)``, ``ROCE(…)``): the writer's pid;
* the cluster heartbeat: ``Cluster Exception Location[IP/ID]:[127.10.0.1/1], Arrival Time:[…], Discoverer:[…],
  ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1. Process has exited, 2. Network Disconnected`` (or
  ``Stuck Occurred``: that rank's host process or device task stopped progressing);
* a collective that timed out on a rank, in three lines: ``[TaskExecStage][Timeout][Host]Task run failed, base
  information is streamID:[2], taskID[21], tag[AllReduce_127.10.0.1%enp_60000_0_1761275812718970], …``, ``… groupRank
  information is group:[…], user define information[], rankSize[4], rankId[1].`` (which rank that pid is) and ``…
  opData information is …, index[21], count[256], …``;
* the link setup's consistency check (EI0005): ``The arguments for collective communication are inconsistent between
  ranks:parameter count, local end 16512, remote end 8320`` and ``[ParameterConflict]CMD information tag check fail.
  local[AllGather_…], remote[AllReduce_…]``;
* RoCE completion errors: ``[ROCE CQE ERROR]cqe error status[12], … remoteIP{server[127.10.0.2],…}``, ``failed CQE
  status[12]`` and the console's ``Execution Error ROCE CQE(EI0013): … Peer information: server 127.0.0.2, …``
  (without a status: in HCCL an error completion is RoCE's retransmissions run out, its guide says); the RoCE
  driver's own ``hns_roce_lite_handle_error_cqe(630) : error cqe status: 0x15`` in its hardware's numbering (0x15:
  transport retry exceeded, ibv status 12);
* the op-retry link's handshake answered by another program (``[OpRetryConnection][RecvAckTag] Recv unmatched ack
  [1381978191] expect [64]``): a port of HCCL's range (60000-60015 by default) held by another process;
* device memory (EI0011): ``Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate … of NPU memory``;
* the root's topology exchange at init: ``TopoDetect ERROR occur !!! fault_type[1], fault_info["Failed to connect
  agent[1,3,5,7,]"]``: those ranks never connected; an agent that could not reach the root's server:
  ``TopoExchangeAgent: connect server[127.10.0.1 : 60000] failed``;
* each rank entering the communicator's set-up, at INFO: ``Entry-HcclCommInitRootInfoInner:ranks[4], rank[3], rootinfo:
  host ip[127.10.0.1] port[60000] …`` (when it came: a rank far behind the others never joins in time);
* the device's DMA engine failing a copy (EI0012): ``Execution_Error_SDMA(EI0012): SDMA memory copy task exception
  occurred``, the runtime's ``… fftsplus task execute failed, dev_id=0, …, err_type=4[fftsplus sdma error]`` (a buffer
  not allocated, too small or freed: the program's, not a peer's);
* a rank table that gives two ranks of one server the same device: ``EI0004: The ranktable is invalid,Reason:[…]. …
  [{"server_count":"1","server_list":[{"device":[{"device_id":"1","device_ip":"…","rank_id":"0"},{"device_id":"1",
  …,"rank_id":"1"}, …]`` (the table quoted after the error);
* MindSpore's older forms: the heartbeat's ``serverId[10.0.0.1], deviceId[0], Heartbeat Lost Occurred``, the
  consistency check's ``inconsistent between ranks: tag [HcomAllReduce_…], parameter [count], local [9556480], remote
  [9555712]``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event, normalize_op

__all__ = ["KEYWORDS", "parse"]

KEYWORDS = ("Cluster Exception Location", "Task run failed", "cqe error status", "error cqe status", "Recv unmatched ack", "failed CQE status", "Error ROCE CQE",
            "Error_Insufficient_Device_Memory", "inconsistent between ranks", "ParameterConflict",
            "Failed to connect agent[", "Heartbeat Lost Occurred", "Error_SDMA", "] failed",
            "Entry-HcclCommInitRootInfoInner", "sdma error]", "ranktable is invalid", "EI0011: ", "EI0012: ", "EI0013: ",
            "ERROR] HCCL(")  # (the plog's error lines: its link table's rows among them)

# the link table HCCL logs when its sockets' set-up timed out (``[Wait][LinkEstablish]wait socket establish timeout``),
# one row per link: ``|  10.20.0.31(29)   |  16666  |   10.20.0.2(0)   |  344832056  |  server  | time out |``: the
# peer's address and rank, this rank's address and rank, the link's state
# (its bars escaped, ``\|``, where the table was copied from markdown's source)
_LINK_TIMEOUT = re.compile(r"\|\s*(?P<dest_ip>[0-9a-fA-F.:]{3,45})\((?P<dest_rank>\d{1,7})\)\s*\\?\|\s*\d{1,5}\s*\\?\|\s*"
                           r"(?P<src_ip>[0-9a-fA-F.:]{3,45})\((?P<src_rank>\d{1,7})\)\s*\\?\|\s*\d{1,12}\s*\\?\|\s*"
                           r"\w{1,12}\s*\\?\|\s*time out\s*\\?\|")
_PLOG = re.compile(r"\[(?:ERROR|WARNING|EVENT|INFO)\] ?(?:HCCL|HCCP|ROCE|RUNTIME|GE)\((?P<pid>\d{1,10}),[^)]{0,80}\):")
_CONSOLE_PID = re.compile(r"\[PID: (?P<pid>\d{1,10})\]")
_HEARTBEAT = re.compile(r"Cluster Exception Location\[IP/ID\]:\[(?P<ip>[^/\]\s]{1,64})/(?P<id>\d{1,7})\]"
                        r"[^\n]{0,200}?ExceptionType:\[(?P<type>[^\]]{1,60})\]"
                        r"|serverId\[(?P<ip2>[^\]\s]{1,64})\], deviceId\[(?P<id2>\d{1,7})\], (?P<type2>Heartbeat Lost Occurred)")
_TASK = re.compile(r"Task run failed, base information is [^\n]{0,200}?tag\[(?P<op>[A-Za-z]{2,40})_(?P<group>[^\]]{1,200})\]")
_GROUP_RANK = re.compile(r"groupRank information is group:\[(?P<group>[^\]]{0,200})\][^\n]{0,200}?rankSize\[(?P<size>\d{1,7})\], "
                         r"rankId\[(?P<rank>\d{1,7})\]")
_CQE = re.compile(r"cqe error status\[(?P<status>\d{1,3})\][^\n]{0,300}?remoteIP\{server\[(?P<peer>[^\]\s]{1,64})\]"
                  r"|failed CQE status\[(?P<status2>\d{1,3})\]")
# HiSilicon's RoCE driver (hns_roce, user space ``hns_roce_lite``) dumping the completion's own status, in its
# hardware's numbering: ``hns_roce_lite_handle_error_cqe(630) : error cqe status: 0x15``
_HNS_CQE = re.compile(r"error cqe status: ?0x(?P<hex>[0-9a-fA-F]{1,2})\b")
# that numbering (the kernel's hns_roce_hw_v2.h) as the verbs' ibv_wc_status the other rules read
_HNS_STATUS = {0x01: 1, 0x02: 2, 0x04: 4, 0x05: 5, 0x06: 6, 0x10: 7, 0x11: 8, 0x12: 9, 0x13: 10, 0x14: 11, 0x15: 12,
               0x16: 13, 0x22: 16, 0x23: 21}
# (the console's ``Execution Error ROCE CQE(EI0013): …`` and the code at the line's start, ``EI0013: [PID: …] An error CQE
# occurred during operator execution. … Peer information: server 10.1.2.4, …``)
_EI0013 = re.compile(r"(?:ROCE CQE\(EI0013\)|\bEI0013: )[^\n]{0,300}?Peer information: server (?P<peer>[^,\s]{1,64})")
_MEMORY = re.compile(r"(?:\(EI0011\):|\bEI0011: [^\n]{0,80}?) Failed to allocate (?P<size>\[[^\n]{0,80}?\]|\S{1,40}) bytes of NPU "
                     r"memory")
_INCONSISTENT = re.compile(r"inconsistent between ranks: ?parameter (?P<what>[\w ]{1,40}), local end (?P<local>\S{1,60}), "
                           r"remote end (?P<remote>\S{1,60})"
                           r"|inconsistent between ranks: ?(?:tag \[[^\]]{0,200}\], )?parameter \[(?P<what2>[\w ]{1,40})\], "
                           r"local \[(?P<local2>[^\]]{1,60})\], remote \[(?P<remote2>[^\]]{1,60})\]")
_AGENT = re.compile(r"connect server\[(?P<host>[^\]\s]{1,64}) ?: ?(?P<port>\d{1,5})\] failed")
_ENTRY = re.compile(r"Entry-HcclCommInitRootInfoInner:ranks\[(?P<size>\d{1,7})\], rank\[(?P<rank>\d{1,7})\][^\n]{0,200}?"
                    r"identifier\[(?P<comm>[^\]]{1,200})\]")
_SDMA = re.compile(r"Error_SDMA\(EI0012\): (?P<msg>[^.\n]{1,160})|err_type=\d{1,3}\[(?P<runtime>fftsplus sdma error)\]"
                   r"|\bEI0012: [^\n]{0,80}?(?P<msg2>SDMA memory copy task exception occurred)")
_TABLE_DEVICE = re.compile(r'\{"device_id":\s?"(?P<dev>\d{1,4})",[^{}]{0,200}?"rank_id":\s?"(?P<rank>\d{1,7})"\}')
_PLOG_TIME = re.compile(r"\):(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)-(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\.(?P<ms>\d{3})")
_CONFLICT = re.compile(r"\[ParameterConflict\]CMD information (?P<what>\w{1,20}) check fail\. local\[(?P<local>[^\]]{0,200})\], "
                       r"remote\[(?P<remote>[^\]]{0,200})\]")
_AGENTS = re.compile(r"Failed to connect agent\[(?P<ranks>[\d, ]{1,4000})\]")


def _writer(body: str) -> Origin | None:
    match = _PLOG.search(body) or _CONSOLE_PID.search(body)
    return Origin(pid=int(match["pid"])) if match else None


def _plog_time(body: str) -> float | None:
    """Seconds since the epoch of a plog line's ``):2025-11-20-11:59:56.716.583`` (the host's clock, read as UTC)."""
    match = _PLOG_TIME.search(body)
    if match is None:
        return None
    try:
        stamp = datetime(int(match["y"]), int(match["mo"]), int(match["d"]), int(match["h"]), int(match["mi"]),
                         int(match["s"]), int(match["ms"]) * 1000, tzinfo=timezone.utc)
    except ValueError:
        return None
    return stamp.timestamp()


def _device_twice(body: str) -> tuple[list[int], int] | None:
    """The ranks a quoted rank table gives one device of one server, and that device (each server's list apart)."""
    for server in body.split('"device":[')[1:]:
        held: dict[int, list[int]] = {}
        for match in _TABLE_DEVICE.finditer(server.split("]", 1)[0]):
            held.setdefault(int(match["dev"]), []).append(int(match["rank"]))
        twice = next(((ranks, dev) for dev, ranks in held.items() if len(ranks) > 1), None)
        if twice is not None:
            return sorted(twice[0]), twice[1]
    return None


def parse(line: Line) -> list[Event]:
    body = line.body
    origin = _writer(body)
    # each reading behind a substring test of its own words before its regex (the keyword ``] failed`` hands this
    # parser many lines that are none of HCCL's)
    match = _HEARTBEAT.search(body) if "Cluster Exception" in body or "Heartbeat Lost" in body else None
    if match:
        kind = (match["type"] or match["type2"]).strip()
        return [make_event(Kind.HCCL_HEARTBEAT, line, origin=origin, data={
            "rank": int(match["id"] or match["id2"]), "host": match["ip"] or match["ip2"], "exception": kind,
            "lost": "Lost" in kind, "stuck": "Stuck" in kind})]
    match = _ENTRY.search(body) if "Entry-HcclCommInit" in body else None
    if match and origin is not None:
        return [make_event(Kind.PROCESS_MAP, line, origin=Origin(pid=origin.pid, rank=int(match["rank"])), data={
            "source": "hccl-init", "group": match["comm"], "rank_size": int(match["size"]), "entered": _plog_time(body)})]
    match = _LINK_TIMEOUT.search(body) if "time out" in body and "|" in body else None
    if match:  # a row of the link table: the peer (address, rank) whose link this rank waited for in vain
        rank = int(match["src_rank"])
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=Origin(pid=origin.pid if origin else None, rank=rank),
                           data={"error": "HCCL's link to it timed out (its socket never connected)",
                                 "peer_addr": match["dest_ip"],
                                 "peer_rank": int(match["dest_rank"]), "transport": "hccl", "final": True})]
    match = _AGENT.search(body) if "connect server[" in body else None
    if match:
        return [make_event(Kind.STORE_ERROR, line, origin=origin, data={
            "what": "connect", "store_host": match["host"], "store_port": int(match["port"]), "source": "hccl",
            "error": "HCCL's agent could not reach the root's topology server"})]
    match = _SDMA.search(body) if "SDMA" in body or "sdma" in body else None
    if match:
        what = f"EI0012: {(match['msg'] or match['msg2']).strip()}" if match["msg"] or match["msg2"] else match["runtime"]
        return [make_event(Kind.GPU_ERROR, line, origin=origin, data={
            "message": f"an SDMA memory copy on the NPU failed ({what})", "hardware": False, "source": "hccl"})]
    if "Task run failed" in body:
        return _task(line, body, origin)
    if "Recv unmatched ack" in body:  # the op-retry link's server answered as another program: its port was taken
        return [make_event(Kind.STORE_ERROR, line, origin=origin, data={
            "what": "listen", "source": "hccl-opretry", "store_port": None, "error": "Recv unmatched ack"})]
    match = _HNS_CQE.search(body) if "error cqe status" in body else None
    if match:
        hardware = int(match["hex"], 16)
        return [make_event(Kind.IB_COMPLETION_ERROR, line, origin=origin, data={
            "status": _HNS_STATUS.get(hardware), "status_text": f"RoCE completion error, hns status 0x{match['hex']}",
            "library": "HCCL"})]
    match = (_CQE.search(body) if "CQE" in body or "cqe" in body else None) or \
        (_EI0013.search(body) if "EI0013" in body else None)
    if match:
        groups = match.groupdict()
        status = groups.get("status") or groups.get("status2")
        stage = "execution" if "TaskExecStage" in body or "during operator execution" in body else None
        if status is None:  # the console's EI0013: in HCCL an ERROR CQE is RoCE's retransmissions run out (its guide)
            return [make_event(Kind.IB_COMPLETION_ERROR, line, origin=origin, data={
                "status": 12, "assumed": True, "peer_addr": groups.get("peer"), "library": "HCCL", "stage": stage,
                "status_text": "HCCL's ERROR CQE (EI0013): RoCE's retransmissions ran out"})]
        return [make_event(Kind.IB_COMPLETION_ERROR, line, origin=origin, data={
            "status": int(status), "status_text": "RoCE completion error (HCCL)",
            "peer_addr": groups.get("peer"), "library": "HCCL", "stage": stage})]
    match = _MEMORY.search(body) if "EI0011" in body else None
    if match:
        return [make_event(Kind.CUDA_OOM, line, origin=origin, data={
            "tried": match["size"].strip("[]")[:60], "gpu": None, "source": "hccl"})]
    match = (_INCONSISTENT.search(body) if "between ranks" in body else None) or \
        (_CONFLICT.search(body) if "ParameterConflict" in body else None)
    if match:
        found = {key: value for key, value in match.groupdict().items() if value}
        return [make_event(Kind.COLLECTIVE_MISMATCH, line, origin=origin, data={
            "source": "hccl-check", "what": (found.get("what") or found.get("what2") or "").strip(),
            "local": found.get("local") or found.get("local2"), "remote": found.get("remote") or found.get("remote2")})]
    twice = _device_twice(body) if "ranktable is invalid" in body else None
    if twice is not None:
        return [make_event(Kind.DUPLICATE_GPU, line, origin=origin, data={
            "ranks": twice[0], "device": twice[1], "source": "hccl-ranktable"})]
    match = _AGENTS.search(body) if "connect agent[" in body else None
    if match:
        ranks = sorted({int(r) for r in re.findall(r"\d+", match["ranks"])})[:4096]
        return [make_event(Kind.STORE_ERROR, line, origin=origin, data={
            "missing_ranks": ranks, "what": "hccl-topology-exchange", "library": "HCCL"})]
    return []


def _task(line: Line, body: str, origin: Origin | None) -> list[Event]:
    """A collective's task that timed out on a rank, in its three lines: its op and group (``tag[AllReduce_…]``),
    which rank that pid is (``groupRank information … rankId[1]``); the third (its op data) adds nothing read here."""
    match = _TASK.search(body)
    if match and "[Timeout]" in body:
        return [make_event(Kind.WATCHDOG_TIMEOUT, line, origin=origin, group=match["group"], op=normalize_op(match["op"]),
                           data={"library": "HCCL"})]
    match = _GROUP_RANK.search(body)
    if match and origin is not None:  # which rank of the group this pid is
        return [make_event(Kind.PROCESS_MAP, line, origin=Origin(pid=origin.pid, rank=int(match["rank"])), data={
            "source": "hccl", "group": match["group"], "rank_size": int(match["size"])})]
    return []
