"""Point-to-point links: latency and bandwidth between every pair of nodes and the ranks inside each node.

The schedule is pure (:func:`tournament_rounds`, :func:`link_schedule`); the measurement does I/O with
``torch.distributed`` send/recv on the group given (gloo on CPU, NCCL on GPUs: the same code with CUDA
tensors). Pairs are scheduled as a round-robin tournament (circle method), so within a round no node (or
rank) is in two pairs and pairs do not contend; inter-node pairs use each node's first rank and run in
their own rounds, then the intra-node pairs of every node run in shared rounds.

One pair: small ping-pongs give the latency (half the minimum round trip); then each direction in turn:
a probe message estimates the bandwidth, the sender picks a message size so that ``trials`` transfers
take about the target time (between ``min_link_bytes`` and ``link_bytes``), tells the receiver, and times
each transfer up to a one-element acknowledgement; bandwidth = bytes / (fastest transfer - half the round
trip). The fastest of several trials is robust on a busy host: interference only ever slows a transfer
down, while a rate limit bounds every one. Each rank reports the halves it measured (the sender owns its
direction's bandwidth).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from syncdoctor.probe.records import LinkMeasure

__all__ = [
    "LINK_TRIALS",
    "PairTask",
    "link_schedule",
    "measure_pair",
    "merge_halves",
    "pack_rounds",
    "tournament_rounds",
]

LINK_TRIALS = 3


def tournament_rounds(items: Sequence[int]) -> list[list[tuple[int, int]]]:
    """Round-robin rounds covering every pair of ``items`` once; no item twice in a round.

    Circle method: n items (plus a bye when n is odd) give n-1 rounds of n/2 pairs. Pairs are (low, high).
    """
    players: list[int | None] = list(items)
    if len(players) < 2:
        return []
    if len(players) % 2:
        players.append(None)
    count = len(players)
    rounds = []
    for _ in range(count - 1):
        pairs = []
        for index in range(count // 2):
            a, b = players[index], players[count - 1 - index]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(sorted(pairs))
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


@dataclass(frozen=True)
class PairTask:
    """One pair to measure in one round: ranks ``a`` < ``b`` on nodes ``a_node``, ``b_node``."""

    round: int
    kind: str
    a: int
    b: int
    a_node: int
    b_node: int


def pack_rounds(tasks: Sequence[PairTask]) -> list[list[PairTask]]:
    """Greedy rounds of ``tasks`` in which no rank appears twice (first fit, in the given order)."""
    rounds: list[list[PairTask]] = []
    busy: list[set[int]] = []
    for task in tasks:
        for index, members in enumerate(busy):
            if task.a not in members and task.b not in members:
                rounds[index].append(task)
                members.update((task.a, task.b))
                break
        else:
            rounds.append([task])
            busy.append({task.a, task.b})
    return rounds


def link_schedule(node_ranks: Mapping[int, Sequence[int]]) -> list[list[PairTask]]:
    """All rounds: first the inter-node rounds (first rank of each node), then the intra-node rounds."""
    leaders = {node: min(ranks) for node, ranks in node_ranks.items() if ranks}
    node_of = {rank: node for node, ranks in node_ranks.items() for rank in ranks}
    rounds: list[list[PairTask]] = []
    for pairs in tournament_rounds(sorted(leaders)):
        index = len(rounds)
        rounds.append([PairTask(index, "inter", leaders[x], leaders[y], x, y) for x, y in pairs])
    per_node = {node: tournament_rounds(sorted(ranks)) for node, ranks in node_ranks.items()}
    depth = max((len(r) for r in per_node.values()), default=0)
    for step in range(depth):
        index = len(rounds)
        tasks = [
            PairTask(index, "intra", a, b, node_of[a], node_of[b])
            for node in sorted(per_node)
            if step < len(per_node[node])
            for a, b in per_node[node][step]
        ]
        rounds.append(tasks)
    return rounds


_BEST = {"bw_ab": max, "bw_ba": max, "latency_s": min, "latency_median_s": min}
_SIZE_OF = {"bw_ab": "bytes_ab", "bw_ba": "bytes_ba"}


def merge_halves(halves: Sequence[Mapping[str, Any]]) -> list[LinkMeasure]:
    """Combine what both ends of each pair reported, over every pass, into :class:`LinkMeasure` records.

    Across passes the best value wins: the highest bandwidth per direction, the lowest latency (noise from
    other work on the host only ever makes a transfer slower).
    """
    pairs: dict[tuple[int, int], dict[str, Any]] = {}
    for half in halves:
        merged = pairs.setdefault((int(half["a"]), int(half["b"])), {})
        for name, value in half.items():
            if value is None or name in _SIZE_OF.values():
                continue
            best = _BEST.get(name)
            if name not in merged or (best is not None and best(value, merged[name]) == value):
                merged[name] = value
                if name in _SIZE_OF:
                    merged[_SIZE_OF[name]] = half.get(_SIZE_OF[name], 0)
    out = []
    for (a, b), data in sorted(pairs.items()):
        if "bw_ab" not in data or "bw_ba" not in data or "latency_s" not in data:
            continue
        out.append(LinkMeasure(
            kind=str(data["kind"]), a_rank=a, b_rank=b, a_node=int(data["a_node"]), b_node=int(data["b_node"]),
            latency_s=float(data["latency_s"]), latency_median_s=float(data["latency_median_s"]),
            bw_ab=float(data["bw_ab"]), bw_ba=float(data["bw_ba"]),
            bytes_ab=int(data.get("bytes_ab", 0)), bytes_ba=int(data.get("bytes_ba", 0)),
            round=int(data.get("round", 0)),
        ))
    return out


def _choose_size(estimate: float, target_s: float, smallest: int, largest: int) -> int:
    wanted = estimate * target_s if estimate > 0 and math.isfinite(estimate) else largest
    size = int(min(max(wanted, smallest), largest))
    return max(4, size - size % 4)


def measure_pair(
    task: PairTask,
    me: int,
    group: Any,
    device: Any,
    *,
    latency_iters: int,
    latency_bytes: int = 8,
    trials: int = LINK_TRIALS,
    target_s: float,
    min_bytes: int,
    max_bytes: int,
    sync: Callable[[Any], None],
) -> dict[str, Any]:
    """Run this rank's side of one pair; returns the half it measured (keys of :class:`LinkMeasure`)."""
    import torch
    import torch.distributed as dist

    peer = task.b if me == task.a else task.a
    first = me == task.a
    small = torch.zeros(max(1, latency_bytes // 4), dtype=torch.float32, device=device)
    ack = torch.zeros(1, dtype=torch.float32, device=device)
    size_msg = torch.zeros(1, dtype=torch.int64, device=device)
    buffer = torch.zeros(max_bytes // 4, dtype=torch.float32, device=device)

    def send(t: Any) -> None:
        dist.send(t, peer, group=group)

    def recv(t: Any) -> None:
        dist.recv(t, peer, group=group)

    # latency: a pings, b echoes (one warm-up round trip first)
    rtts = []
    for i in range(latency_iters + 1):
        if first:
            sync(device)
            start = time.perf_counter()
            send(small)
            recv(small)
            sync(device)
            if i:
                rtts.append(time.perf_counter() - start)
        else:
            recv(small)
            send(small)
    half: dict[str, Any] = {"a": task.a, "b": task.b, "kind": task.kind, "a_node": task.a_node,
                            "b_node": task.b_node, "round": task.round}
    if first:
        half["latency_s"] = min(rtts) / 2
        half["latency_median_s"] = statistics.median(rtts) / 2
    one_way = (min(rtts) / 2) if rtts else 0.0  # known on a only; b's direction ignores it (microseconds)

    def stream(sending: bool) -> tuple[float, int] | None:
        if not sending:
            recv(buffer[: min_bytes // 4])
            send(ack)
            recv(size_msg)
            count = int(size_msg.item())
            for _ in range(trials):
                recv(buffer[:count])
                send(ack)
            return None
        probe = buffer[: min_bytes // 4]
        sync(device)
        start = time.perf_counter()
        send(probe)
        recv(ack)
        sync(device)
        estimate = probe.numel() * 4 / max(time.perf_counter() - start - one_way, 1e-9)
        size = _choose_size(estimate, target_s / trials, min_bytes, max_bytes)
        size_msg.fill_(size // 4)
        send(size_msg)
        best = math.inf
        for _ in range(trials):
            sync(device)
            start = time.perf_counter()
            send(buffer[: size // 4])
            recv(ack)
            sync(device)
            best = min(best, time.perf_counter() - start)
        return size / max(best - one_way, 1e-9), size
    result = stream(sending=first)
    if result is not None:
        half["bw_ab"], half["bytes_ab"] = result
    result = stream(sending=not first)
    if result is not None:
        half["bw_ba"], half["bytes_ba"] = result
    return half
