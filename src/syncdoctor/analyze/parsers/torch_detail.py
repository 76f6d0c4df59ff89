"""PyTorch's debug-mode reports: desync report, DETAIL collective mismatch, monitored_barrier. Pure: no I/O.

* desync report (``TORCH_NCCL_DESYNC_DEBUG=1``): a header `` - [3] Timeout at collective: ALLREDUCE, #12``
  followed by ``To our best knowledge, ranks [1, 2] are the lagging ranks that caused this timeout. They never
  joined any collectives`` or ``… the lagging/dead/mismatched ranks that caused the desync are:`` /
  ``- [0, 3] joined but didn't finish collective #12 (count from 1)`` /
  ``[1] finished collective #11, but didn't join collective #12 (count from 1)``; that line pasted without its
  header is a report of its own (no reporter, no op: ``source`` finding), which a report with its header
  supersedes.
* ``Detected mismatch between collectives on ranks. Rank 0 is running collective:
  CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE, TensorShape=[10], …), but Rank 1 is running
  collective: CollectiveFingerPrint(…)`` (2.0+; some releases glue ``SequenceNumber=0OpType=…``), the 1.10-1.13
  ``Rank 0 is running inconsistent collective: CollectiveFingerPrint(OpType=…)`` (one side only: every rank
  raises with its own fingerprint), and the older ``Error when verifying shape tensors for collective
  ALLREDUCE on rank 0 …``.
* the ranks' models differ: DDP's ``DDP expects same model across all ranks, but Rank 4 has 400 params, while rank 0
  has inconsistent 399 params.`` (and its older ``params[3] in this process with sizes […] appears not to match sizes
  of the same param in process 0.``), DeepSpeed ZeRO-3's ``disagreement between rank0 and rank1: …`` and ``Detected a
  disagreement on list length between rank0 and rank7``: ``collective_mismatch`` events of ``source`` model-check.
* ``[Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms`` (``Ranks 1, 2 failed …`` with
  ``wait_all_ranks``), ``Rank 3 timed out in monitoredBarrier after 2000 ms.``, and the victims' ``Rank 2
  successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0.``
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, clip, make_event, normalize_op

__all__ = ["KEYWORDS", "TRACE_MARKER", "DesyncFollower", "follow", "parse", "parse_trace"]

KEYWORDS = (
    "Timeout at collective",
    "expects same model",
    "appears not to match sizes",
    "Error: params[",  # (the check's message cut by a paste: ``RuntimeError: params[0] in this process with sizes [253``)
    "disagreement",
    "but didn't join collective #",
    "mismatch between collectives",
    "verifying shape tensors",
    "monitoredBarrier",
)

_DESYNC_HEAD = re.compile(r"\[(?P<rank>\d+)\] Timeout at collective: (?P<op>\w+), #(?P<seq>\d+)")
_LAGGING = re.compile(r"ranks? \[(?P<ranks>[\d, ]*)\] (?:are|is) the lagging ranks?")
_JOINED = re.compile(r"\[(?P<ranks>[\d, ]*)\] joined but didn't finish collective #(?P<seq>\d+)")
_NOT_JOINED = re.compile(r"\[(?P<ranks>[\d, ]*)\] finished collective #(?P<prev>\d+), but didn't join collective #(?P<seq>\d+)")
# the fingerprint may be wrapped by the paste (``TensorShape`` at one line's end, ``=[41, 256]`` on the next): what
# is on the line is read
_FINGERPRINT = re.compile(r"Rank (?P<rank>\d+) is running (?:inconsistent )?collective: "
                          r"CollectiveFingerPrint\((?P<fp>[^)]*)\)?")
# some releases print ``SequenceNumber=0OpType=REDUCE`` (no separator after the number)
_GLUED = re.compile(r"(SequenceNumber=\d+)(?=[A-Za-z])")
_FP_FIELD = re.compile(r"(?P<key>\w+)=(?P<value>\[[^\]]*\]|[^,]*)")
# DETAIL's wrapper tracing each collective before it runs it, at INFO (ProcessGroupWrapper.cpp): ``[Rank 2] Running
# collective: CollectiveFingerPrint(SequenceNumber=38, OpType=ALLREDUCE, TensorShape=[77, 1], TensorDtypes=Float, …)``.
# A job's log holds one per call: the reader picks the last ones of each input by their bytes (textlog's tail), as it
# does NCCL's COLL trace
TRACE_MARKER = b"Running collective: CollectiveFingerPrint("
_TRACE = re.compile(r"\[Rank (?P<rank>\d{1,7})\] Running collective: CollectiveFingerPrint\((?P<fp>[^)]*)\)?")
# the ranks' models differ, found by the check that runs before any gradient: DDP's constructor compares every
# rank's parameters with rank 0's (``DDP expects same model across all ranks, but Rank 4 has 400 params, while rank
# 0 has inconsistent 399 params.``, 1.11+; before, ``params[3] in this process with sizes [512, 256] appears not to
# match sizes of the same param in process 0.``, and ``replicas[0][3] …`` before 1.8, when a process could drive several
# GPUs), and DeepSpeed's ZeRO-3 compares the parameters each rank is about
# to gather (``disagreement between rank0 and rank1: rank0: [0, 1, …], rank1: [0, 2, …]``, ``Detected a
# disagreement on list length between rank0 and rank7: rank0: 30815, rank7: 30833``; DeepSpeed 0.17.6+'s ``Detected a
# disagreement on list contents between rank0 and rank3``): the ranks built or ran
# different models (a rank-dependent branch in the model, experts routed differently, a checkpoint loaded on some)
_DDP_PARAMS = re.compile(r"DDP expects same model across all ranks, but Rank (?P<rank>\d+) has (?P<mine>\d+) params, "
                         r"while rank (?P<other>\d+) has inconsistent (?P<theirs>\d+) params")
# (a paste may cut it: ``params[0] in this process with sizes [253``, rank 0's the one compared with)
_DDP_SIZES = re.compile(r"(?:params|replicas\[\d+\])\[\d+\] in this process with sizes \[(?:[^\]]*\] appears not to match (?:sizes|strides) "
                        r"of the same param in process (?P<other>\d+))?")
_ZERO_DISAGREE = re.compile(r"disagreement (?:on list (?:length|contents) )?between rank(?P<a>\d+) and rank(?P<b>\d+)")
_SHAPES = re.compile(r"verifying shape tensors for collective (?P<op>\w+) on rank (?P<rank>\d+)")
_BARRIER_FAILED = re.compile(r"Ranks? (?P<ranks>\d+(?:\s*,\s*\d+)*) failed to pass monitoredBarrier in (?P<ms>\d+) ms")
_BARRIER_TIMEOUT = re.compile(r"Rank (?P<rank>\d+) timed out in monitoredBarrier after (?P<ms>\d+) ms")
_BARRIER_VICTIM = re.compile(r"Rank (?P<rank>\d+) successfully reached monitoredBarrier")
_BARRIER_FROM = re.compile(r"errors while waiting for send/recv from rank (?P<rank>\d+)")
_BARRIER_RANK0 = re.compile(r"\[Rank (?P<rank>\d+)\]:")


def _ranks(text: str) -> list[int]:
    return [int(part) for part in re.findall(r"\d+", text)]


@dataclass
class DesyncFollower:
    """Collects the lines of one desync report after its ``Timeout at collective`` header."""

    head: Line
    rank: int
    op: str
    seq: int
    max_lines: int = 30
    lagging: list[int] = field(default_factory=list)
    joined_not_finished: list[int] = field(default_factory=list)
    not_joined: list[int] = field(default_factory=list)
    seen: int = 0

    def feed(self, line: Line) -> bool:
        text = line.body
        if line.origin.rank is not None and line.origin.rank != self.head.origin.rank:
            return True  # another rank's line interleaved: skip it, keep collecting
        self.seen += 1
        match = _LAGGING.search(text)
        if match:
            self.lagging = _ranks(match["ranks"])
            return True
        match = _JOINED.search(text)
        if match:
            self.joined_not_finished = _ranks(match["ranks"])
            return True
        match = _NOT_JOINED.search(text)
        if match:
            self.not_joined = _ranks(match["ranks"])
            return True
        return any(word in text for word in ("best knowledge", "Snapshot", "started ranks", "started ", "#"))

    def finish(self) -> list[Event]:
        data = {
            "reporter": self.rank,
            "lagging": self.lagging,
            "joined_not_finished": self.joined_not_finished,
            "not_joined": self.not_joined,
        }
        return [make_event(Kind.DESYNC_REPORT, self.head, origin=Origin(rank=self.rank), seq=self.seq,
                           op=self.op, data=data)]


def follow(line: Line) -> DesyncFollower | None:
    match = _DESYNC_HEAD.search(line.body)
    if not match:
        return None
    follower = DesyncFollower(line, int(match["rank"]), normalize_op(match["op"]), int(match["seq"]))
    follower.feed(line)  # the first findings may share the header's line
    follower.seen = 0
    return follower


def _fingerprint(text: str) -> dict[str, str]:
    return {m["key"]: m["value"].strip() for m in _FP_FIELD.finditer(_GLUED.sub(r"\1, ", text))}


def parse_trace(line: Line) -> Event | None:
    """The collective a DETAIL trace line says its rank is about to run, or None."""
    match = _TRACE.search(line.body)
    if match is None:
        return None
    fp = _fingerprint(match["fp"])
    seq = fp.get("SequenceNumber")
    if not (seq and seq.isdecimal() and fp.get("OpType")):
        return None
    rank = int(match["rank"])
    return make_event(Kind.COLLECTIVE_TRACE, line, origin=Origin(rank=rank) if line.origin.rank is None else None,
                      seq=int(seq), op=normalize_op(fp["OpType"]),
                      data={"shape": fp.get("TensorShape") or "", "dtypes": fp.get("TensorDtypes") or ""})


def parse(line: Line) -> list[Event]:
    body = line.body
    events: list[Event] = []
    alone = _NOT_JOINED.search(body)
    if alone and _ranks(alone["ranks"]):  # a finding of the report pasted without its header: no reporter
        events.append(make_event(Kind.DESYNC_REPORT, line, seq=int(alone["seq"]), data={
            "source": "finding", "reporter": None, "lagging": [], "joined_not_finished": [],
            "not_joined": _ranks(alone["ranks"])}))
    prints = list(_FINGERPRINT.finditer(body))
    if "mismatch between collectives" in body and prints:
        sides: list[dict[str, Any]] = []
        for match in prints[:2]:
            fp = _fingerprint(match["fp"])
            seq = fp.get("SequenceNumber")
            sides.append({
                "rank": int(match["rank"]),
                "op": normalize_op(fp["OpType"]) if fp.get("OpType") else None,
                "seq": int(seq) if seq and seq.isdecimal() else None,
                "shape": fp.get("TensorShape"),
                "dtypes": fp.get("TensorDtypes"),
            })
        aspects = body.split("Collectives differ in the following aspects:", 1)
        first = sides[0]
        events.append(make_event(
            Kind.COLLECTIVE_MISMATCH, line, origin=Origin(rank=first["rank"]), seq=first["seq"], op=first["op"],
            data={"source": "detail", "sides": sides, "aspects": clip(aspects[1], 200) if len(aspects) > 1 else ""},
        ))
    model = _DDP_PARAMS.search(body)
    if model:
        # (the reporting rank's own count, and that of the rank it compared with: rank 0's, broadcast)
        events.append(make_event(Kind.COLLECTIVE_MISMATCH, line, origin=Origin(rank=int(model["rank"])), data={
            "source": "model-check", "check": "DDP", "against": int(model["other"]), "sides": [
                {"rank": int(model["rank"]), "params": int(model["mine"])},
                {"rank": int(model["other"]), "params": int(model["theirs"])}]}))
    elif (sizes := _DDP_SIZES.search(body)) is not None:
        events.append(make_event(Kind.COLLECTIVE_MISMATCH, line, data={
            "source": "model-check", "check": "DDP", "against": int(sizes["other"]) if sizes["other"] else None, "sides": []}))
    elif (zero := _ZERO_DISAGREE.search(body)) is not None:
        events.append(make_event(Kind.COLLECTIVE_MISMATCH, line, origin=Origin(rank=int(zero["b"])), data={
            "source": "model-check", "check": "ZeRO-3", "against": int(zero["a"]), "sides": []}))
    shapes = _SHAPES.search(body)
    if shapes:
        events.append(make_event(
            Kind.COLLECTIVE_MISMATCH, line, origin=Origin(rank=int(shapes["rank"])), op=normalize_op(shapes["op"]),
            data={"source": "shape-check", "sides": []},
        ))
    failed = _BARRIER_FAILED.search(body)
    if failed:
        reporter = _BARRIER_RANK0.search(body)
        events.append(make_event(
            Kind.MONITORED_BARRIER, line, origin=Origin(rank=int(reporter["rank"])) if reporter else None,
            data={"failed_ranks": _ranks(failed["ranks"]), "ms": int(failed["ms"]), "role": "detector"},
        ))
    else:
        timed = _BARRIER_TIMEOUT.search(body)
        if timed:
            events.append(make_event(
                Kind.MONITORED_BARRIER, line,
                data={"failed_ranks": [int(timed["rank"])], "ms": int(timed["ms"]), "role": "detector"},
            ))
    victim = _BARRIER_VICTIM.search(body)
    if victim:
        source = _BARRIER_FROM.search(body)
        events.append(make_event(
            Kind.MONITORED_BARRIER, line, origin=Origin(rank=int(victim["rank"])),
            data={"failed_ranks": [], "role": "victim", "errors_from": int(source["rank"]) if source else None},
        ))
    return events
