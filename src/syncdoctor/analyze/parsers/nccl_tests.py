"""nccl-tests (``all_reduce_perf`` and friends), the first thing people run on a new cluster. Pure: no I/O.

* the device table: ``#  Rank  2 Group  0 Pid 3164639 on    fengyun device  0 [0x01] NVIDIA RTX A6000``
  (before 2.13 without ``Group``): which host each rank runs on, read as a process-map event;
* a failure: ``fengyun: Test NCCL failure common.cu:959 'internal error - please report …'`` (also ``Test CUDA
  failure``, ``Test failure``) and its echo `` .. fengyun pid 3164639: Test failure common.cu:844``: an NCCL
  error on that host (and process).

The test prints its host before the message, so these lines name a host even when the paste has no prefix.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["ECHO", "KEYWORDS", "parse"]

KEYWORDS = ("Rank ", "Test NCCL failure", "Test CUDA failure", "Test failure")

_TABLE = re.compile(r"#\s+Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+"
                    r"device\s+(?P<device>\d+)")
_FAILURE = re.compile(r"(?:(?P<host>[\w.-]+): |^\s*)Test (?P<what>NCCL |CUDA )?failure (?P<where>\S+:\d+)(?: '(?P<msg>[^']*)'?)?")
# the echo of a failure, `` .. fengyun pid 3164639: Test failure common.cu:844`` (a line of its own, also for paste)
ECHO = re.compile(r"\.\. (?P<host>[\w.-]+) pid (?P<pid>\d+): Test failure (?P<where>\S+:\d+)")


def parse(line: Line) -> list[Event]:
    body = line.body
    match = _TABLE.search(body)
    if match:
        # the pid is left in data: with -g N one process holds N ranks, so it does not name a rank
        return [make_event(Kind.PROCESS_MAP, line, origin=Origin(rank=int(match["rank"]), host=match["host"],
                                                                 device=int(match["device"])),
                           data={"source": "nccl-tests", "pid": int(match["pid"])})]
    match = ECHO.search(body)
    if match:
        return [make_event(Kind.NCCL_ERROR, line, origin=Origin(host=match["host"]), data={
            "source": "nccl-tests", "error": "test failure", "where": match["where"], "pid": int(match["pid"])})]
    match = _FAILURE.search(body)
    if match:
        what = (match["what"] or "").strip().lower() or "test"
        message = (match["msg"] or "").strip(" /")
        kind = Kind.GPU_ERROR if what == "cuda" else Kind.NCCL_ERROR
        data = {"source": "nccl-tests", "error": message or f"{what} failure", "where": match["where"]}
        if kind is Kind.GPU_ERROR:
            data.update(message=message or "CUDA failure", hardware="ECC" in message)
        # ``gpu-n07: Test …``: a host with a digit or a hyphen was taken by the pdsh prefix already
        origin = Origin(host=match["host"]) if match["host"] else None
        events = [make_event(kind, line, origin=origin, data=data)]
        if kind is Kind.NCCL_ERROR and "unhandled cuda error" in message:  # a CUDA call inside NCCL failed
            events.append(make_event(Kind.GPU_ERROR, line, origin=origin, data={
                "source": "nccl-tests", "message": "a CUDA call inside NCCL failed (unhandled cuda error)",
                "hardware": False}))
        return events
    return []
