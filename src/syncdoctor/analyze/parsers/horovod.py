"""Horovod's stall inspector: which ranks have not submitted a tensor the others wait on. Pure: no I/O.

Every release warns ``One or more tensors were submitted to be reduced, gathered or broadcasted by subset of
ranks and are waiting for remainder of ranks for more than 60 seconds.`` and then lists the stalled tensors:

* ``Stalled ops: allreduce.conv1.weight [ready ranks: 5, 1, 4, 7, 2, 3], …`` (seen in 2018 logs: the ranks
  that did submit it);
* ``HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]`` (seen in 2019 logs, operations.cc, one line per tensor);
* ``Missing ranks:`` then ``1: [DistributedGradientTape_Allreduce/…_0, …]`` (seen with 0.21.0, stall_inspector.cc:
  a rank and the tensors it has not submitted), read by :func:`follow`, a row alone when its tensors are
  Horovod's; ``Stalled ranks:`` then ``6: [horovod_allreduce.0, …]`` (seen with 0.18, PyTorch's names) the same.

The warning's first line alone (a paste cut before its list) is an event without tensors (``head``).

One ``monitored_barrier`` event per line or block (``source`` horovod), with its ``tensors``, each with the
ranks it names ``ready`` or ``missing``; the rule (:mod:`syncdoctor.analyze.rules.progress`) works out who is late, or whether the ranks
submitted different tensors (a desync).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from syncdoctor.analyze.model import Event, Kind
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "MissingRanks", "follow", "parse"]

KEYWORDS = ("ready ranks:", "missing ranks:", "Horovod", "talled ranks:", "remainder of ranks")

_LISTED = re.compile(r"(?P<op>[\w./:\-]+)?\s*\[(?P<which>ready|missing) ranks: (?P<ranks>\d+(?:\s*,\s*\d+)*)\s*\]")
_MISSING_ROW = re.compile(r"^\s*(?P<rank>\d+): \[(?P<ops>[^\]]*)\]?")
_MPI_TAG = re.compile(r"^\s*\[\d+(?:,\d+)?\]<(?:stdout|stderr)>:")


def _ranks(text: str) -> list[int]:
    return sorted({int(r) for r in re.findall(r"\d+", text)})


def parse(line: Line) -> list[Event]:
    row = _MISSING_ROW.match(line.text) or _MISSING_ROW.match(line.body)
    if row and "Horovod" in row["ops"]:  # a row of the "Missing ranks:" block pasted without its header
        return [make_event(Kind.MONITORED_BARRIER, line, data={
            "source": "horovod", "role": "horovod", "failed_ranks": [],
            "tensors": [{"tensor": row["ops"].split(",")[0].strip()[:160], "missing": [int(row["rank"])]}]})]
    tensors = [{"tensor": (match["op"] or "")[:160], match["which"]: _ranks(match["ranks"])}
               for match in _LISTED.finditer(line.body)][:64]
    if not tensors and "waiting for remainder of ranks" in line.body:  # the warning's head, its list not in the paste
        return [make_event(Kind.MONITORED_BARRIER, line, data={
            "source": "horovod", "role": "horovod", "failed_ranks": [], "tensors": [], "head": True})]
    if not tensors:
        return []
    return [make_event(Kind.MONITORED_BARRIER, line, data={
        "source": "horovod", "role": "horovod", "failed_ranks": [], "tensors": tensors})]


def _names(row: re.Match[str]) -> list[str]:
    """The tensors of a ``N: [a, b]`` row (its first 16); a row cut before its ``]`` loses its last name, which
    the cut may have shortened into another tensor's."""
    names = [name.strip()[:160] for name in row["ops"].split(",") if name.strip()]
    if not row.group(0).rstrip().endswith("]") and len(names) > 1:
        names = names[:-1]
    return names[:16]


@dataclass
class MissingRanks:
    """``Missing ranks:`` and its ``N: [tensors]`` rows (Horovod 0.20+)."""

    head: Line
    max_lines: int = 200
    rows: list[tuple[int, str]] = field(default_factory=list)

    def feed(self, line: Line) -> bool:
        # the text: "1: [" would read as srun's label in the body; mpirun's tag ("[0]<stderr>:") taken off it
        match = _MISSING_ROW.match(_MPI_TAG.sub("", line.text, count=1)) or _MISSING_ROW.match(line.body)
        if not match:  # (the body: after a collector's timestamp and the tag)
            return False
        self.rows += [(int(match["rank"]), name) for name in _names(match)]
        return True

    def finish(self) -> list[Event]:
        if not self.rows:
            return []
        return [make_event(Kind.MONITORED_BARRIER, self.head, data={
            "source": "horovod", "role": "horovod", "failed_ranks": [],
            "tensors": [{"tensor": tensor, "missing": [rank]} for rank, tensor in self.rows]})]


def follow(line: Line) -> MissingRanks | None:
    body = line.body.rstrip()
    return MissingRanks(line) if body.endswith(("Missing ranks:", "Stalled ranks:")) else None
