"""NCCL's trace of each collective call (``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL``), the lines maintainers ask for
when ranks hang in different collectives. Pure: no I/O.

One INFO line per call (src/enqueue.cc, 2.x): ``host:pid:tid [dev] NCCL INFO AllReduce: opCount 28c sendbuff 0x…
recvbuff 0x… count 9984512 datatype 7 op 0 root 0 comm 0x55bef0201370 [nranks=4] stream 0x…`` (the opCount in
hexadecimal, per communicator; ``comm`` is the process's own pointer, so only ``nranks`` says which communicators
of different processes may be one). A log of a running job holds millions of them: the reader does not scan for
them but reads the ones in the last part of each input (:data:`TAIL_BYTES`), where a hang leaves each process's
last calls, and keeps the last :data:`KEEP` per process and communicator (picked by their bytes, before they are
decoded: :func:`syncdoctor.analyze.textlog.read_text`).
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event, normalize_op
from syncdoctor.analyze.parsers.prefixes import split_nccl

__all__ = ["KEEP", "MARKER", "MAX_STREAMS", "TAIL_BYTES", "parse"]

MARKER = b": opCount "
TAIL_BYTES = 1 << 19  # the last 512 KiB of an input: a hang's last calls of each process are there
KEEP = 4  # calls kept per process and communicator
MAX_STREAMS = 4096  # processes x communicators kept (bounded memory)

_CALL = re.compile(r"(?P<op>[A-Za-z]+): opCount (?P<count_id>[0-9a-fA-F]{1,16}) sendbuff \S+ recvbuff \S+ count "
                   r"(?P<count>\d{1,20}) datatype (?P<dtype>\d{1,3}) op (?P<redop>\d{1,3}) root (?P<root>\d{1,7}) "
                   r"comm (?P<comm>0x[0-9a-fA-F]+) \[nranks=(?P<nranks>\d{1,7})\]")


def parse(line: Line) -> Event | None:
    """The call a COLL line traces, or None."""
    match = _CALL.search(line.body)
    if match is None:
        return None
    prefix = split_nccl(line.body)
    origin = Origin(host=prefix.host, pid=prefix.pid, device=prefix.device) if prefix is not None else None
    return make_event(Kind.NCCL_COLL, line, origin=origin, op=normalize_op(match["op"]), seq=int(match["count_id"], 16), data={
        "count": int(match["count"]), "datatype": int(match["dtype"]), "root": int(match["root"]),
        "comm": match["comm"], "nranks": int(match["nranks"])})
