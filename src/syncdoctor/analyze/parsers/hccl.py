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
  status[12]`` and the console's ``Execution Error ROCE CQE(EI0013): … Peer information: server 127.0.0.2, …``;
* device memory (EI0011): ``Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate … of NPU memory``;
* the root's topology exchange at init: ``TopoDetect ERROR occur !!! fault_type[1], fault_info["Failed to connect
  agent[1,3,5,7,]"]``: those ranks never connected.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event, normalize_op

__all__ = ["KEYWORDS", "parse"]

KEYWORDS = ("Cluster Exception Location", "Task run failed", "cqe error status", "failed CQE status", "Error ROCE CQE",
            "Error_Insufficient_Device_Memory", "inconsistent between ranks", "ParameterConflict",
            "Failed to connect agent[")

_PLOG = re.compile(r"\[(?:ERROR|WARNING|EVENT|INFO)\] ?(?:HCCL|HCCP|ROCE|RUNTIME|GE)\((?P<pid>\d{1,10}),[^)]{0,80}\):")
_CONSOLE_PID = re.compile(r"\[PID: (?P<pid>\d{1,10})\]")
_HEARTBEAT = re.compile(r"Cluster Exception Location\[IP/ID\]:\[(?P<ip>[^/\]\s]{1,64})/(?P<id>\d{1,7})\]"
                        r"[^\n]{0,200}?ExceptionType:\[(?P<type>[^\]]{1,60})\]")
_TASK = re.compile(r"Task run failed, base information is [^\n]{0,200}?tag\[(?P<op>[A-Za-z]{2,40})_(?P<group>[^\]]{1,200})\]")
_GROUP_RANK = re.compile(r"groupRank information is group:\[(?P<group>[^\]]{0,200})\][^\n]{0,200}?rankSize\[(?P<size>\d{1,7})\], "
                         r"rankId\[(?P<rank>\d{1,7})\]")
_CQE = re.compile(r"cqe error status\[(?P<status>\d{1,3})\][^\n]{0,300}?remoteIP\{server\[(?P<peer>[^\]\s]{1,64})\]"
                  r"|failed CQE status\[(?P<status2>\d{1,3})\]")
_EI0013 = re.compile(r"ROCE CQE\(EI0013\)[^\n]{0,300}?Peer information: server (?P<peer>[^,\s]{1,64})")
_MEMORY = re.compile(r"\(EI0011\): Failed to allocate (?P<size>\[[^\n]{0,80}?\]|\S{1,40}) bytes of NPU memory")
_INCONSISTENT = re.compile(r"inconsistent between ranks: ?parameter (?P<what>[\w ]{1,40}), local end (?P<local>\S{1,60}), "
                           r"remote end (?P<remote>\S{1,60})")
_CONFLICT = re.compile(r"\[ParameterConflict\]CMD information (?P<what>\w{1,20}) check fail\. local\[(?P<local>[^\]]{0,200})\], "
                       r"remote\[(?P<remote>[^\]]{0,200})\]")
_AGENTS = re.compile(r"Failed to connect agent\[(?P<ranks>[\d, ]{1,4000})\]")


def _writer(body: str) -> Origin | None:
    match = _PLOG.search(body) or _CONSOLE_PID.search(body)
    return Origin(pid=int(match["pid"])) if match else None


def parse(line: Line) -> list[Event]:
    body = line.body
    origin = _writer(body)
    match = _HEARTBEAT.search(body)
    if match:
        kind = match["type"].strip()
        return [make_event(Kind.HCCL_HEARTBEAT, line, origin=origin, data={
            "rank": int(match["id"]), "host": match["ip"], "exception": kind,
            "lost": "Lost" in kind, "stuck": "Stuck" in kind})]
    match = _TASK.search(body)
    if match and "[Timeout]" in body:
        return [make_event(Kind.WATCHDOG_TIMEOUT, line, origin=origin, group=match["group"], op=normalize_op(match["op"]),
                           data={"library": "HCCL"})]
    match = _GROUP_RANK.search(body)
    if match and origin is not None:  # which rank of the group this pid is
        return [make_event(Kind.PROCESS_MAP, line, origin=Origin(pid=origin.pid, rank=int(match["rank"])), data={
            "source": "hccl", "group": match["group"], "rank_size": int(match["size"])})]
    match = _CQE.search(body) or _EI0013.search(body)
    if match:
        groups = match.groupdict()
        status = groups.get("status") or groups.get("status2")
        return [make_event(Kind.IB_COMPLETION_ERROR, line, origin=origin, data={
            "status": int(status) if status else None, "status_text": "RoCE completion error (HCCL)",
            "peer_addr": groups.get("peer"), "library": "HCCL",
            "stage": "execution" if "TaskExecStage" in body or "during operator execution" in body else None})]
    match = _MEMORY.search(body)
    if match:
        return [make_event(Kind.CUDA_OOM, line, origin=origin, data={
            "tried": match["size"].strip("[]")[:60], "gpu": None, "source": "hccl"})]
    match = _INCONSISTENT.search(body) or _CONFLICT.search(body)
    if match:
        return [make_event(Kind.COLLECTIVE_MISMATCH, line, origin=origin, data={
            "source": "hccl-check", "what": match["what"].strip(), "local": match["local"], "remote": match["remote"]})]
    match = _AGENTS.search(body)
    if match:
        ranks = sorted({int(r) for r in re.findall(r"\d+", match["ranks"])})[:4096]
        return [make_event(Kind.STORE_ERROR, line, origin=origin, data={
            "missing_ranks": ranks, "what": "hccl-topology-exchange", "library": "HCCL"})]
    return []
