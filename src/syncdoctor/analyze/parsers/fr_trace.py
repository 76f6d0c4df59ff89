"""The text report of PyTorch's Flight Recorder analyser (``torchfrtrace``, ``fr_trace``), pasted. Pure: no I/O.

The analyser matches the ranks' Flight Recorder dumps collective by collective and prints what it found (seen
in torch/distributed/flight_recorder, 2.5 to 2.9, and tools/flight_recorder before):

* ``Not all ranks joining collective, sequence number: 31117`` (2.7+), ``Not all ranks joining collective 5 at
  entry 4`` (2.5), then one field per line: ``group info: 0:default_pg``, ``collective: nccl:all_reduce``,
  ``missing ranks: {3, 4, 5, 6, 7}``, ``world size: 8`` (``expected ranks: 2`` in 2.5), ``collective state:
  scheduled``, ``collective stack trace:``. The first tool printed it on one line: ``Not all ranks joining
  collective for group 0:default_pg collective nccl:all_reduce Missing ranks are {1}``.
* ``Collective sequence number: 5 has errors`` then the same fields and ``error msg: Culprit rank 1; Error type:
  COLLECTIVE_TYPE_MISMATCH, …`` (several ``Culprit rank`` entries on one line, comma separated).

A missing ranks block is a :data:`Kind.DESYNC_REPORT` (``source`` fr_trace) whose ``not_joined`` are the missing
ranks; a ``Culprit rank`` line one whose ``mismatch`` lists each culprit rank with its error type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from syncdoctor.analyze.model import Event, Kind
from syncdoctor.analyze.parsers.base import Line, make_event, normalize_op

__all__ = ["KEYWORDS", "MissingBlock", "follow", "parse"]

KEYWORDS = ("ranks joining", "Culprit rank", "not reaching the collective", "following ranks to join")
# Ray Train's barrier of its workers (train v2: ``The following ranks are not reaching the collective operation: [5,
# 7]``, ``The workers have been waiting for 60.01 s for the following ranks to join the `report` call: [3].``): those
# ranks never arrived
_RAY_MISSING = re.compile(r"(?:following ranks are not reaching the collective operation|for the following ranks to join "
                          r"the `?(?P<call>\w{1,40})`? call): \[(?P<ranks>[\d, ]{1,2000})\]")

_HEAD = re.compile(r"Not all ranks joining collective(?:[,:] sequence number:| for group (?P<group>\S+))? ?(?P<seq>\d+)?")
_OLD_OP = re.compile(r"\bcollective (?P<op>[\w:]+)")
_SET = re.compile(r"\{(?P<ranks>[\d,\s]*)\}")
_FIELD = re.compile(r"^\s*(?P<key>internal record id|group info|collective|missing ranks|total input numel|"
                    r"total output numel|input sizes|output sizes|world size|expected ranks|collective state|error msg)"
                    r": ?(?P<value>.*)$")
_CULPRIT = re.compile(r"Culprit rank (?P<rank>\d{1,7}); (?:Error type: )?(?:MatchState\.)?(?P<error>[A-Z_]+)")


def _ranks(text: str) -> list[int]:
    """The ranks a list names (a number of more than seven digits is no rank), at most 4096."""
    return sorted({int(r) for r in re.findall(r"(?<!\d)\d{1,7}(?!\d)", text)})[:4096]


def _op(text: str) -> str:
    return normalize_op(text.split(":")[-1].strip())


@dataclass
class MissingBlock:
    """``Not all ranks joining collective …`` and the fields under it."""

    head: Line
    seq: int | None = None
    group: str = ""
    op: str | None = None
    missing: list[int] = field(default_factory=list)
    state: str = ""
    world: int | None = None
    max_lines: int = 20

    def feed(self, line: Line) -> bool:
        match = _FIELD.match(line.body)
        if match is None:
            return False
        key, value = match["key"], match["value"].strip()
        if key == "group info":
            self.group = value[:100]
        elif key == "collective":
            self.op = _op(value)
        elif key == "missing ranks":
            self.missing = _ranks(value)
        elif key == "collective state":
            self.state = value[:40]
        elif key in ("world size", "expected ranks") and value.isdigit():
            self.world = int(value)
        elif key == "expected ranks":
            self.world = len(_ranks(value)) or None
        return True

    def finish(self) -> list[Event]:
        if not self.missing:
            return []
        return [make_event(Kind.DESYNC_REPORT, self.head, seq=self.seq, op=self.op, data={
            "source": "fr_trace", "reporter": None, "not_joined": self.missing, "lagging": [],
            "joined_not_finished": [], "group": self.group, "state": self.state, "world": self.world})]


def follow(line: Line) -> MissingBlock | None:
    match = _HEAD.search(line.body)
    if match is None:
        return None
    block = MissingBlock(line, seq=int(match["seq"]) if match["seq"] else None, group=match["group"] or "")
    old = line.body[match.end():]
    if (op := _OLD_OP.search(old)) is not None:
        block.op = _op(op["op"])
    if "Missing ranks are" in old and (listed := _SET.search(old, old.index("Missing ranks are"))) is not None:
        block.missing = _ranks(listed["ranks"])
    return block


def parse(line: Line) -> list[Event]:
    missing = _RAY_MISSING.search(line.body) if "following ranks" in line.body else None
    if missing is not None:
        return [make_event(Kind.DESYNC_REPORT, line, op=missing["call"], data={
            "source": "ray-train", "reporter": None, "not_joined": _ranks(missing["ranks"]), "lagging": [],
            "joined_not_finished": [], "mismatch": []})]
    culprits = [(int(m["rank"]), m["error"]) for m in _CULPRIT.finditer(line.body)][:64]
    if not culprits:
        return []
    return [make_event(Kind.DESYNC_REPORT, line, data={
        "source": "fr_trace", "reporter": None, "not_joined": [], "lagging": [], "joined_not_finished": [],
        "mismatch": [{"rank": rank, "error": error} for rank, error in culprits]})]
