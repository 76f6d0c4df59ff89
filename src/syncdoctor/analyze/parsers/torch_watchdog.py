"""PyTorch ProcessGroupNCCL watchdog lines, every release's wording. Pure: no I/O.

* ``[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE,
  NumelIn=…, NumelOut=…, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.`` and the older
  ``WorkNCCL(SeqNum=…, OpType=…, Timeout(ms)=…)``, ``WorkNCCL(OpType=…, TensorShape=[…], Timeout(ms)=…)``;
  the log prefix is ``[Rank N]``, ``[PG 0 Rank 7]``, ``[PG name (desc) Rank N]`` or
  ``[PG ID 0 PG GUID 0(default_pg) Rank 1]`` depending on the release.
* the status companion: ``Timeout at NCCL work: 1, last enqueued NCCL work: 1, last completed NCCL work: 0``
  (~2.2-2.5; also a watchdog timeout of that work, kept where the ``Watchdog caught`` line is not in the inputs), ``Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL
  work: 811, last completed NCCL work: 807.`` (~2.4-2.5), `` failure detected by watchdog at work sequence id:
  40231 PG status: last enqueued work: 40267, last completed work: 40230`` (2.6+; also a timeout of that work
  where no timeout line at all is in the inputs).
* ``Received a dump signal due to a collective timeout from  rank 13 …`` (or ``from this local rank``).
* ``Heartbeat monitor timed out! …`` and ``ProcessGroupNCCL's watchdog got stuck for 600 seconds …`` (2.2: ``NCCL
  monitor thread timeout. Basically, this could be due to CUDA or NCCL calls being unexpectedly blocking, …``).
* a watchdog line whose ``WorkNCCL(…)`` was wrapped onto the next lines (a re-flowed paste, also inside its own
  words: ``… Watchdog caught`` / ``collective operation timeout: WorkNCCL(…``) is joined with them (:func:`follow`);
  one cut before it is still a timeout, without its fields.
* ``[Rank N] Work WorkNCCL(…) timed out in blocking wait (NCCL_BLOCKING_WAIT=1).`` (and the
  ``TORCH_NCCL_BLOCKING_WAIT=1`` and bare variants); 1.8-2.0's ``[Rank 1] Caught collective operation timeout:
  WorkNCCL(…) ran for … milliseconds before timing out.``
* Intel's process groups for XPUs, which print no ``WorkNCCL(…)``: torch-ccl's ``[Rank 1] Caught collective operation
  timeout:  ran for 1800412 milliseconds before timing out.`` and ProcessGroupXCCL's (torch-xpu-ops) ``Work timed out
  after 600031 milliseconds.`` (logged, then raised as DistBackendError) and its ``wait(timeout)``'s ``Work ran time
  out after 15370 milliseconds.`` (raised as RuntimeError): a collective that timed out, no more said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event, normalize_op

__all__ = ["KEYWORDS", "follow", "parse", "parse_pg_prefix", "parse_work"]

KEYWORDS = (
    "Watchdog caught",
    "detected by watchdog",
    "Timeout at NCCL work",
    "WorkNCCL::checkTimeout",
    "dump signal",
    "Heartbeat monitor",
    "detects no heartbeat",  # (2.2's monitoring thread)
    "watchdog got stuck",
    "monitor thread timeout",
    "in blocking wait",
    "Caught collective operation timeout",
    "Timeout(ms)=",  # the message pasted from its WorkNCCL(…) on
    "] Watchdog",  # the message cut by the paste right after its rank's prefix: ``[Rank 1] Watchdog``
    "Work timed out after",  # (ProcessGroupXCCL's)
    "Work ran time out after",  # (ProcessGroupXCCL's wait(timeout))
)

# (the ``[`` may be cut by the paste when the prefix begins the line: ``PG ID 0 PG GUID 0(default_pg) Rank 1] …``)
_PG_PREFIX = re.compile(r"(?:\[|^\s*(?=PG ))(?:PG (?P<pg>[^\]]{0,200}?) )?Rank (?P<rank>\d{1,7})\]")
_WORK = re.compile(r"Work[NH]CCL\((?P<fields>[^()]*(?:\([^()]*\)[^()]*)*)\)")
_FIELD = re.compile(r"(?P<key>\w+(?:\(ms\))?)=(?P<value>\[[^\]]*\]|[^,)]*)")
_RAN_FOR = re.compile(r"ran for (?P<ms>\d+) milliseconds")
_XCCL_TIMEOUT = re.compile(r"\bWork (?:timed|ran time) out after (?P<ms>\d+) milliseconds\b")
_STATUS = re.compile(
    r"(?:detected by watchdog at work(?: sequence id)?|Timeout at NCCL work):? (?P<at>-?\d+)"
    r".{0,80}?last enqueued (?:NCCL )?work: (?P<enqueued>-?\d+),? last completed (?:NCCL )?work: (?P<completed>-?\d+)"
)
_DUMP_FROM = re.compile(r"dump signal (?:due to (?P<why>[\w ]+?) )?from\s+(?:rank (?P<rank>\d+)|(?P<local>this local rank))")
_DUMP_WORK = re.compile(r"Last enqueued NCCL work: (?P<enqueued>-?\d+), last completed NCCL work: (?P<completed>-?\d+)")
_FRAME = re.compile(r"\s*frame #\d+:")
_STUCK = re.compile(r"watchdog got stuck for (?P<seconds>\d+) seconds")


def parse_pg_prefix(text: str) -> tuple[str | None, int | None]:
    """(group, rank) from PyTorch's ``[PG … Rank N]`` log prefix; group is the PG id, name or None."""
    match = _PG_PREFIX.search(text)
    if not match:
        return None, None
    group = None
    pg = match["pg"]
    if pg:
        by_id = re.match(r"ID (\d+)", pg)
        group = by_id[1] if by_id else pg.split(" ")[0]
    return group, int(match["rank"])


def parse_work(text: str) -> dict[str, str] | None:
    """The ``key=value`` fields of the first ``WorkNCCL(...)`` in ``text``; of a paste cut inside it, the fields
    before the cut (``WorkNCCL(SeqNum=64088, OpType=ALLREDUCE, Timeout(ms)=1800``: the last one is not whole)."""
    match = _WORK.search(text)
    if match:
        return {m["key"]: m["value"].strip() for m in _FIELD.finditer(match["fields"])}
    at = max(text.rfind("WorkNCCL("), text.rfind("WorkHCCL("))  # (torch_npu's ProcessGroupHCCL: the same work)
    if at < 0 or ")" in text[at:].replace("(ms)", ""):
        return None
    rest = text[at + len("WorkNCCL("):].rstrip()
    matches = list(_FIELD.finditer(rest))
    if matches and matches[-1].end() >= len(rest):
        matches.pop()  # cut inside its value (``SeqNum=55574, Op``: cut in the next key, the number is whole)
    fields = {m["key"]: m["value"].strip() for m in matches}
    return fields or None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _work_event(kind: Kind, line: Line, fields: dict[str, str], rank: int | None, group: str | None) -> Event:
    data: dict[str, object] = {}
    for key, name in (("NumelIn", "numel_in"), ("NumelOut", "numel_out"), ("Timeout(ms)", "timeout_ms")):
        value = _int(fields.get(key))
        if value is not None:
            data[name] = value
    if "TensorShape" in fields:
        data["tensor_shape"] = fields["TensorShape"]
    ran = _RAN_FOR.search(line.body)
    if ran:
        data["ran_ms"] = int(ran["ms"])
    op = fields.get("OpType")
    return make_event(
        kind, line, origin=Origin(rank=rank), group=group, seq=_int(fields.get("SeqNum")),
        op=normalize_op(op) if op else None, data=data,
    )


def parse(line: Line) -> list[Event]:
    body = line.body
    group, rank = parse_pg_prefix(body)
    if group not in (None, "0", "default_pg") and line.origin.rank is not None:
        rank = line.origin.rank  # torchrun's [rank9]: is the global rank, the message's that of a subgroup
    events: list[Event] = []
    cut = _cut_in_its_first_word(body)
    if "Watchdog caught" in body or "in blocking wait" in body or "Caught collective operation timeout" in body or cut:
        fields = parse_work(body)
        if fields is not None or _wrapped(body) or cut or ("before timing out" in body and _RAN_FOR.search(body)):
            # 1.8-2.0 raised "[Rank 1] Caught collective operation timeout: WorkNCCL(...)" in blocking wait mode
            # (torch-ccl raises it with no work between: ``…timeout:  ran for 1800412 milliseconds before timing out``)
            kind = Kind.WATCHDOG_TIMEOUT if "Watchdog" in body else Kind.BLOCKING_WAIT_TIMEOUT
            events.append(_work_event(kind, line, fields or {}, rank, group))
    elif body.lstrip().startswith(("WorkNCCL(", "WorkHCCL(")) and "before timing out" in body and _RAN_FOR.search(body):
        # the watchdog's message pasted from its WorkNCCL(…) on (its head cut, or on the line above without a
        # rank): a collective timed out (the timeline drops it where the whole line of that work is there)
        fields = parse_work(body)
        if fields is not None:
            event = _work_event(Kind.WATCHDOG_TIMEOUT, line, fields, rank, group)
            events.append(replace(event, data={**event.data, "headless": True}))
    xccl = _XCCL_TIMEOUT.search(body)
    if xccl and not events:  # ProcessGroupXCCL's wait: the time it waited, no work described
        events.append(make_event(Kind.BLOCKING_WAIT_TIMEOUT, line, origin=Origin(rank=rank), group=group,
                                 data={"ran_ms": int(xccl["ms"])}))
    if "WorkNCCL::checkTimeout" in body and _FRAME.match(body):
        # the C++ backtrace of the watchdog's timeout, pasted without its message: a collective timed out
        # (the timeline drops it where a timeout line of the same input is there)
        events.append(make_event(Kind.WATCHDOG_TIMEOUT, line, origin=Origin(rank=rank), group=group,
                                 data={"frames": True}))
    status = _STATUS.search(body)
    if status and not events and ("Timeout at NCCL work" in body or "failure detected by watchdog" in body
                                  or "Exception (either an error or timeout) detected by watchdog" in body):
        # the status companion says the work timed out: the timeout itself when the paste lost the "Watchdog
        # caught" line above it (the timeline drops it where that line is there); 2.6's "failure detected" is
        # said of a failed work, a timeout most often: kept only where no timeout line at all is in the inputs
        events.append(make_event(Kind.WATCHDOG_TIMEOUT, line, origin=Origin(rank=rank), group=group,
                                 seq=int(status["at"]), data={"status_line": True,
                                                              **({} if "Timeout" in body else {"or_error": True})}))
    if status:
        events.append(make_event(
            Kind.WORK_STATUS, line, origin=Origin(rank=rank), group=group, seq=int(status["at"]),
            data={"last_enqueued": int(status["enqueued"]), "last_completed": int(status["completed"])},
        ))
    dump = _DUMP_FROM.search(body)
    if dump:
        data: dict[str, object] = {"from_rank": int(dump["rank"]) if dump["rank"] else rank}
        data["self"] = bool(dump["local"])
        if dump["why"]:
            data["reason"] = dump["why"]
        work = _DUMP_WORK.search(body)
        if work:
            data["last_enqueued"] = int(work["enqueued"])
            data["last_completed"] = int(work["completed"])
        events.append(make_event(Kind.DUMP_SIGNAL, line, origin=Origin(rank=rank), group=group, data=data))
        if dump["local"] and "timeout" in (dump["why"] or ""):
            # its own collective timed out (the work after the last it completed): said in the words of the dump it
            # asks for, kept only where that rank's ``Watchdog caught`` line is not in the inputs
            events.append(make_event(Kind.WATCHDOG_TIMEOUT, line, origin=Origin(rank=rank), group=group,
                                     seq=int(work["completed"]) + 1 if work else None, data={"dump_signal": True}))
    # (2.2's words for the same: ``[Rank 4] NCCL monitor thread timeout. Basically, this could be due to CUDA or NCCL
    # calls being unexpectedly blocking, …``)
    # (and 2.2's ``[Rank 2] monitoring thread detects no heartbeat and will finally kill the process!``)
    if "Heartbeat monitor timed out" in body or "watchdog got stuck" in body or "NCCL monitor thread timeout" in body \
            or "monitoring thread detects no heartbeat" in body:
        stuck = _STUCK.search(body)
        events.append(make_event(
            Kind.HEARTBEAT_TIMEOUT, line, origin=Origin(rank=rank), group=group,
            data={"seconds": int(stuck["seconds"])} if stuck else {},
        ))
    return events


_CAUGHT = "Watchdog caught"
_WHAT = "collective operation timeout"


def _wrapped(body: str) -> bool:
    """A watchdog line cut before its ``WorkNCCL(…)``: re-flowed by a terminal or an editor, or cut by a paste,
    also inside its own words (``… Watchdog caught`` / ``collective operation timeout: WorkNCCL(…``)."""
    if "WorkNCCL(" in body or "WorkHCCL(" in body:
        return False
    if f"{_CAUGHT} {_WHAT}" in body:
        return True
    at = body.rfind(_CAUGHT)
    return at >= 0 and _WHAT.startswith(body[at + len(_CAUGHT):].strip())  # the line ends inside the words


_CUT_FIRST = re.compile(r"\[(?:PG [^\]]{0,200} )?Rank \d{1,7}\]\s+(?P<words>Watchdog(?: [a-z]{0,7})?)\s*$")


def _cut_in_its_first_word(body: str) -> bool:
    """The message cut by the paste within ``Watchdog caught``, right after its rank's prefix (``[Rank 1]
    Watchdog``, the last line of a paste): nothing else of ProcessGroupNCCL's opens so."""
    cut = _CUT_FIRST.search(body)
    return cut is not None and _CAUGHT.startswith(cut["words"])


def _headless_cut(body: str) -> bool:
    """A watchdog message pasted from its ``WorkNCCL(…)`` on, its ``ran for … before timing out`` wrapped below."""
    text = body.lstrip()
    return text.startswith(("WorkNCCL(", "WorkHCCL(")) and text.rstrip().endswith(")") and "ran for" not in text


@dataclass
class WrappedWorkFollower:
    """The lines that continue a watchdog line whose ``WorkNCCL(…)`` was wrapped: joined, then read as one."""

    head: Line
    max_lines: int = 3
    parts: list[str] = field(default_factory=list)

    def feed(self, line: Line) -> bool:
        text = line.body.strip()  # after the line's prefixes (a collector's timestamp, a rank)
        if not text or not (line.body[:1].isspace() or text.startswith(("WorkNCCL", "ran for"))
                            or (not self.parts and "WorkNCCL(" in text and _WHAT.endswith(text.split(":", 1)[0]))):
            return False
        self.parts.append(text)
        return not text.endswith(("timing out.", "timing out"))

    def finish(self) -> list[Event]:
        joined = " ".join([self.head.body.rstrip(), *self.parts])
        if not self.parts or parse_work(joined) is None:
            return []
        return parse(replace(self.head, body=joined, text=" ".join([self.head.text.rstrip(), *self.parts])))


_COMPLETED = re.compile(r"last completed (?:NCCL )?work: -?\d")


def _cut(body: str) -> bool:
    """A watchdog or status line cut mid-record by a terminal that wraps at a fixed width (tmux, screen): its
    ``WorkNCCL(`` not closed, or its ``PG status:`` without the last completed work."""
    at = body.find("WorkNCCL(")
    if at >= 0 and "Watchdog caught" in body and ")" not in body[at:]:
        return True
    return ("PG status" in body or "last enqueued" in body) and _COMPLETED.search(body) is None


@dataclass
class HardWrapFollower:
    """The next line of a record a terminal wrapped at a fixed width: joined without a space (the wrap falls
    anywhere, ``NumelIn=3106`` / ``28352, NumelOut=…``), padding removed, then read as one line. A line that
    starts a record of its own (a prefix, a bracket) ends it."""

    head: Line
    max_lines: int = 2
    parts: list[str] = field(default_factory=list)

    def feed(self, line: Line) -> bool:
        text = line.text.rstrip()
        if not text or text.startswith("[") or text[:1].isspace():
            return False
        self.parts.append(text)
        return _cut(self.joined())

    def joined(self) -> str:
        return "".join([self.head.body, *self.parts])

    def finish(self) -> list[Event]:
        if not self.parts or _cut(self.joined()):
            return []
        return parse(replace(self.head, body=self.joined(), text="".join([self.head.text, *self.parts])))


def follow(line: Line) -> WrappedWorkFollower | HardWrapFollower | None:
    if _wrapped(line.body) or _headless_cut(line.body):
        return WrappedWorkFollower(line)
    return HardWrapFollower(line) if _cut(line.body) else None
