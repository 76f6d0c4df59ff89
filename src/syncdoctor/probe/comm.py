"""Small torch.distributed helpers for the probe: JSON gather/broadcast without pickle, clocks, sync.

Does I/O (collectives over a process group). torch is imported inside the functions, so importing this
module is cheap. Objects travel as UTF-8 JSON in uint8 tensors: no ``pickle`` between ranks.
"""

from __future__ import annotations

import json
import time
from typing import Any

__all__ = ["WallClock", "broadcast_json", "device_sync", "gather_json", "timed"]


class WallClock:
    """Wall-clock time in seconds, shifted by ``offset_s`` (a test hook that fakes an unsynchronised clock)."""

    def __init__(self, offset_s: float = 0.0) -> None:
        self.offset_s = offset_s

    def __call__(self) -> float:
        return time.time() + self.offset_s

    def ns(self) -> int:
        return time.time_ns() + int(self.offset_s * 1e9)


def device_sync(device: Any) -> None:
    """Wait for queued GPU work (no-op on CPU), so host clocks measure finished operations."""
    if getattr(device, "type", "cpu") == "cuda":
        import torch

        torch.cuda.synchronize(device)


def timed(func: Any, device: Any) -> float:
    """Seconds ``func()`` takes, including the device work it queued."""
    device_sync(device)
    start = time.perf_counter()
    func()
    device_sync(device)
    return time.perf_counter() - start


def _encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=str).encode()


def gather_json(obj: Any, group: Any, dst: int = 0) -> list[Any] | None:
    """Every rank's ``obj`` on ``dst`` (in rank order), None elsewhere. Collective over ``group`` (CPU)."""
    import torch
    import torch.distributed as dist

    data = _encode(obj)
    world = dist.get_world_size(group)
    length = torch.tensor([len(data)], dtype=torch.int64)
    lengths = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(lengths, length, group=group)
    longest = max(int(t.item()) for t in lengths)
    buffer = torch.zeros(longest, dtype=torch.uint8)
    buffer[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    me = dist.get_rank()
    if me == dst:
        received = [torch.zeros(longest, dtype=torch.uint8) for _ in range(world)]
        dist.gather(buffer, received, dst=dst, group=group)
        return [json.loads(bytes(t[: int(n.item())].tolist())) for t, n in zip(received, lengths, strict=True)]
    dist.gather(buffer, None, dst=dst, group=group)
    return None


def broadcast_json(obj: Any, group: Any, src: int = 0) -> Any:
    """``obj`` from ``src`` on every rank. Collective over ``group`` (CPU)."""
    import torch
    import torch.distributed as dist

    me = dist.get_rank()
    data = _encode(obj) if me == src else b""
    length = torch.tensor([len(data)], dtype=torch.int64)
    dist.broadcast(length, src=src, group=group)
    buffer = torch.zeros(int(length.item()), dtype=torch.uint8)
    if me == src:
        buffer[:] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    dist.broadcast(buffer, src=src, group=group)
    return json.loads(bytes(buffer.tolist()))
