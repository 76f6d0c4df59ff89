"""Join and start-up skew: who registered, who never did, and when each node arrived.

Does I/O only through the store object it is given (any object with ``set``, ``get``, ``add``,
``compare_set`` and ``check``, like c10d's TCPStore), with the clock and sleep injected; the rest is pure.

The join happens *before* ``init_process_group``: every rank writes ``join/rank/<r>`` and increments
``join/count``, then waits until the count reaches the world size or its deadline passes. The outcome is
decided once for everybody with ``compare_set("join/state", "", ...)``: the rank that completes the count
writes ``complete``, a rank whose deadline passes first writes ``closed``. So every rank (even one that
registers just after the close) reaches the same verdict, and a node that never starts is named from the
keys present instead of leaving everybody in ``init_process_group`` until its timeout.

Clock offsets are estimated NTP-style: node 0 sends at t0, the peer stamps t1 with its clock, node 0
receives at t3; offset = t1 - (t0 + t3) / 2, and the sample with the smallest round trip wins (its error is
at most half that round trip). Arrival times are corrected by the offsets before the skew is computed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from syncdoctor.probe.launch import LaunchInfo
from syncdoctor.probe.records import NodeInfo, NodeSkew, RankInfo, from_json

__all__ = [
    "JoinOutcome",
    "JoinStore",
    "MissingNode",
    "estimate_offset",
    "label_nodes",
    "missing_expected_nodes",
    "missing_nodes",
    "node_skews",
    "read_registered",
    "register_and_wait",
    "wait_for_readers",
]

_COUNT = "join/count"
_STATE = "join/state"
_READ = "join/read"


def _rank_key(rank: int) -> str:
    return f"join/rank/{rank}"


class JoinStore(Protocol):
    def set(self, key: str, value: str | bytes) -> None: ...
    def get(self, key: str) -> bytes: ...
    def add(self, key: str, value: int) -> int: ...
    def compare_set(self, key: str, expected: str, desired: str) -> bytes: ...
    def check(self, keys: list[str]) -> bool: ...


@dataclass(frozen=True)
class JoinOutcome:
    """How the join ended for this rank.

    Attributes:
        complete: every rank registered before the deadline.
        registered: the ranks that registered (read back from the store), sorted by rank.
        waited_s: how long this rank waited after registering.
        state: ``complete`` or ``closed`` (as decided in the store).
    """

    complete: bool
    registered: tuple[RankInfo, ...]
    waited_s: float
    state: str


def register_and_wait(
    store: JoinStore,
    me: RankInfo,
    world_size: int,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = 0.05,
    on_wait: Callable[[int, float], None] | None = None,
) -> JoinOutcome:
    """Register ``me`` and wait for the others; never waits past ``timeout_s``."""
    store.set(_rank_key(me.rank), json.dumps(me.to_json()))
    count = store.add(_COUNT, 1)
    start = clock()
    deadline = start + timeout_s
    state = ""
    while not state:
        if count >= world_size:
            state = store.compare_set(_STATE, "", "complete").decode()
        elif clock() >= deadline:
            state = store.compare_set(_STATE, "", "closed").decode()
        elif store.check([_STATE]):
            state = store.get(_STATE).decode()
        else:
            if on_wait is not None:
                on_wait(count, clock() - start)
            sleep(poll_s)
            count = store.add(_COUNT, 0)
    waited = clock() - start
    registered = read_registered(store, world_size)
    store.add(_READ, 1)
    return JoinOutcome(state == "complete", registered, waited, state)


def wait_for_readers(
    store: JoinStore,
    readers: int,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """On the rank hosting the store: wait until ``readers`` ranks have read the join outcome (so they do
    not lose the store when this process exits); False after ``timeout_s``."""
    deadline = clock() + timeout_s
    while store.add(_READ, 0) < readers:
        if clock() >= deadline:
            return False
        sleep(0.05)
    return True


def read_registered(store: JoinStore, world_size: int) -> tuple[RankInfo, ...]:
    """Every rank record present in the store (malformed records are skipped)."""
    found = []
    for rank in range(world_size):
        key = _rank_key(rank)
        if not store.check([key]):
            continue
        try:
            found.append(from_json(RankInfo, json.loads(store.get(key))))
        except (ValueError, TypeError):
            continue
    return tuple(sorted(found, key=lambda r: r.rank))


@dataclass(frozen=True)
class MissingNode:
    """A node some or all of whose ranks never joined.

    Attributes:
        node: node rank (None when only the count is known: an elastic job formed without it).
        name: its host name when known (``--hosts``, Slurm node list), else None.
        ranks: the global ranks that never joined (empty when unknown).
        partial: some ranks of this node did join.
    """

    node: int | None
    name: str | None
    ranks: tuple[int, ...]
    partial: bool = False

    def describe(self) -> str:
        who = f"node {self.node}" if self.node is not None else "a node"
        if self.name:
            who += f" ({self.name})"
        ranks = ", ".join(str(r) for r in self.ranks)
        if self.partial:
            return f"{who}: rank(s) {ranks} never joined"
        return f"{who} never joined" + (f": rank(s) {ranks}" if ranks else "")

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "name": self.name, "ranks": list(self.ranks), "partial": self.partial}


def missing_nodes(
    registered: Sequence[RankInfo], launch: LaunchInfo, host_names: Sequence[str] = ()
) -> list[MissingNode]:
    """The nodes (and ranks) of this world that never registered."""
    present = {r.rank for r in registered}
    joined_nodes = {r.node for r in registered}
    by_node: dict[int, list[int]] = {}
    for rank in range(launch.world_size):
        if rank not in present:
            by_node.setdefault(launch.node_of_rank(rank), []).append(rank)
    return [
        MissingNode(node, launch.node_name(node, host_names), tuple(ranks), partial=node in joined_nodes)
        for node, ranks in sorted(by_node.items())
    ]


def missing_expected_nodes(
    registered: Sequence[RankInfo], launch: LaunchInfo, host_names: Sequence[str] = ()
) -> list[MissingNode]:
    """Nodes the job was meant to have (``expected_nodes``) that the launcher formed the world without.

    Names come from ``host_names`` (or the launcher's list): a name matching no registered hostname or
    address is missing. The ranks are the ones it would have had in a full job, placed after the others.
    """
    expected = launch.expected_nodes
    if expected is None or expected <= launch.nnodes:
        return []
    names = list(host_names) or list(launch.host_names)
    seen = {r.hostname for r in registered} | {r.addr for r in registered if r.addr}
    unnamed = [n for n in names if n not in seen]
    per_node = launch.local_world_size
    out = []
    for index in range(expected - launch.nnodes):
        node = launch.nnodes + index
        ranks = tuple(range(node * per_node, (node + 1) * per_node))
        name = unnamed[index] if index < len(unnamed) else None
        out.append(MissingNode(None, name, ranks))
    return out


def label_nodes(registered: Sequence[RankInfo], host_names: Sequence[str] = ()) -> list[NodeInfo]:
    """One :class:`NodeInfo` per node; labels are hostnames when they tell nodes apart, else addresses."""
    nodes: dict[int, list[RankInfo]] = {}
    for info in registered:
        nodes.setdefault(info.node, []).append(info)
    firsts = {node: min(infos, key=lambda r: r.rank) for node, infos in nodes.items()}
    unique_hostnames = len({f.hostname for f in firsts.values()}) == len(firsts)
    unique_addrs = len({f.addr for f in firsts.values()}) == len(firsts) and all(f.addr for f in firsts.values())
    out = []
    for node in sorted(nodes):
        first = firsts[node]
        if unique_hostnames:
            label = first.hostname
        elif node < len(host_names):
            label = host_names[node]
        elif unique_addrs and first.addr:
            label = first.addr
        else:
            label = f"node{node}"
        out.append(NodeInfo(node, label, first.hostname, first.addr, tuple(sorted(r.rank for r in nodes[node]))))
    return out


def estimate_offset(samples: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """(offset, round trip) from ping-pong samples ``(t0, t_peer, t3)``; the minimum round trip wins.

    ``t0`` and ``t3`` are on the reference clock (send and receive), ``t_peer`` on the peer's clock; a
    positive offset means the peer's clock is ahead.
    """
    if not samples:
        raise ValueError("no clock samples")
    t0, t_peer, t3 = min(samples, key=lambda s: s[2] - s[0])
    return t_peer - (t0 + t3) / 2.0, t3 - t0


def node_skews(
    registered: Sequence[RankInfo], offsets: Mapping[int, float], labels: Mapping[int, str] | None = None
) -> list[NodeSkew]:
    """Per-node arrival after the earliest arrival in the job, on node 0's clock (offsets subtracted)."""
    if not registered:
        return []
    labels = labels or {}
    corrected = {r.rank: r.arrival - offsets.get(r.node, 0.0) for r in registered}
    base = min(corrected.values())
    raw_base = min(r.arrival for r in registered)
    nodes: dict[int, list[RankInfo]] = {}
    for info in registered:
        nodes.setdefault(info.node, []).append(info)
    out = []
    for node in sorted(nodes):
        infos = nodes[node]
        times = [corrected[r.rank] - base for r in infos]
        out.append(NodeSkew(
            node=node,
            label=labels.get(node, f"node{node}"),
            first_s=min(times),
            last_s=max(times),
            raw_first_s=min(r.arrival for r in infos) - raw_base,
            offset_s=offsets.get(node, 0.0),
        ))
    return out
