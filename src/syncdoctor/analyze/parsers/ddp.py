"""DistributedDataParallel's reducer, naming the rank whose parameters got no gradient. Pure: no I/O.

* ``Parameter indices which did not receive grad for rank 2: 426 427 …`` and, with
  ``TORCH_DISTRIBUTED_DEBUG=INFO``/``DETAIL``, ``Parameters which did not receive grad for rank 1: model.…``: printed
  under ``RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one``
  (the module has parameters that took no part in the loss on that rank: ``find_unused_parameters``). The
  exception itself is read as any exception; this line says which rank raised it.
* with ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` (2.x), one line a parameter from the reducer before it raises:
  ``[I816 21:41:23.034545571 reducer.cpp:1989] [Rank 1] Parameter: static_encoder.lin.bias did not get gradient in
  backwards pass.`` (a paste of these lines alone says the same, and which rank).
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "parse"]

KEYWORDS = ("did not receive grad for rank", "did not get gradient")

_UNUSED = re.compile(r"Parameter(?:s| indices) which did not receive grad for rank (?P<rank>\d{1,7})"
                     r"|\[Rank (?P<detail>\d{1,7})\] Parameter: [\w.\-]{1,300} did not get gradient\b")


def parse(line: Line) -> list[Event]:
    match = _UNUSED.search(line.body)
    if not match:
        return []
    rank = int(match["rank"] or match["detail"])
    own = Origin(rank=rank) if line.origin.rank is None else None
    return [make_event(Kind.DDP_UNUSED_PARAMETERS, line, origin=own, data={"rank": rank})]
