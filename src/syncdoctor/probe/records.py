"""Frozen records of what the probe measured, shared by the stages, the analysis and the report. Pure.

Times are seconds, bandwidths bytes per second, wall-clock times seconds since the epoch on the rank's own
clock (offsets between nodes are in :class:`ClockOffset`). Every record converts to and from plain JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, TypeVar

__all__ = [
    "ClockOffset",
    "CollectiveRow",
    "LinkMeasure",
    "NodeInfo",
    "NodeSkew",
    "RankInfo",
    "from_json",
]

T = TypeVar("T")


def from_json(cls: type[T], data: Any) -> T:
    """Rebuild a flat record from its ``asdict`` form, ignoring unknown keys; lists become tuples."""
    if not isinstance(data, dict):
        raise ValueError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in names}
    return cls(**values)


@dataclass(frozen=True)
class RankInfo:
    """One rank as it registered in the join stage.

    Attributes:
        rank, local_rank, node: global rank, rank on its node, node rank.
        hostname: ``socket.gethostname()``; addr: the local address used to reach the master.
        pid: process id; arrival: wall time of registration on the rank's own clock.
        started: wall time the probe process started (before imports).
    """

    rank: int
    local_rank: int
    node: int
    hostname: str
    addr: str | None
    pid: int
    arrival: float
    started: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NodeInfo:
    """A node of the job: its label (for reports), hostname, address and ranks."""

    node: int
    label: str
    hostname: str
    addr: str | None
    ranks: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"ranks": list(self.ranks)}


@dataclass(frozen=True)
class ClockOffset:
    """How far a node's clock is ahead of node 0's (seconds), from the minimum-RTT ping-pong sample."""

    node: int
    offset_s: float
    rtt_s: float
    samples: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NodeSkew:
    """When a node's ranks arrived, relative to the first node, on node 0's clock.

    Attributes:
        first_s, last_s: first and last arrival of the node's ranks after the earliest arrival in the job,
            corrected by the node's clock offset.
        raw_first_s: the same without the correction (what unsynchronised clocks would suggest).
        offset_s: the clock offset applied.
    """

    node: int
    label: str
    first_s: float
    last_s: float
    raw_first_s: float
    offset_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LinkMeasure:
    """Point-to-point latency and bandwidth between two ranks.

    Attributes:
        kind: ``inter`` (between two nodes' first ranks) or ``intra`` (two ranks on one node).
        a_rank, b_rank, a_node, b_node: the two ends (a < b).
        latency_s: one-way latency, half the minimum round trip of small messages;
            latency_median_s: half the median round trip.
        bw_ab, bw_ba: bandwidth in each direction (bytes/s); bytes_ab, bytes_ba: message size used.
        round: the tournament round it ran in (pairs of one round run at the same time).
    """

    kind: str
    a_rank: int
    b_rank: int
    a_node: int
    b_node: int
    latency_s: float
    latency_median_s: float
    bw_ab: float
    bw_ba: float
    bytes_ab: int
    bytes_ba: int
    round: int = 0

    @property
    def bandwidth(self) -> float:
        """The bottleneck direction."""
        return min(self.bw_ab, self.bw_ba)

    def touches(self, node: int) -> bool:
        return node in (self.a_node, self.b_node)

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"bandwidth": self.bandwidth}


@dataclass(frozen=True)
class CollectiveRow:
    """One collective at one size, summarised across ranks (a row of the nccl-tests-style table).

    Attributes:
        op: collective name; size: bytes S of the nccl-tests "size" column; count: elements per rank as
            nccl-tests prints them; dtype, redop, root: as in nccl-tests (root -1 when not rooted).
        iters: timed iterations per rank.
        time_min_s, time_avg_s, time_max_s: per-iteration time across ranks; slowest_rank: the rank with
            the largest time.
        algbw, busbw: bytes/s from the average time, as nccl-tests defines them.
        wrong: elements that differ from the expected values, summed over ranks (nccl-tests ``#wrong``);
            None when not checked.
        ranks: number of ranks.
    """

    op: str
    size: int
    count: int
    dtype: str
    redop: str
    root: int
    iters: int
    time_min_s: float
    time_avg_s: float
    time_max_s: float
    slowest_rank: int
    algbw: float
    busbw: float
    wrong: int | None
    ranks: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
