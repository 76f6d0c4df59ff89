"""Collectives over a size sweep: timing, and an element-by-element check of every result.

The fill values and the expected results are plain formulas (:func:`fill_values`, :func:`expected_values`),
computed independently of the collective under test; :func:`measure_collectives` does I/O with
``torch.distributed`` on the group given (gloo on CPU, NCCL on GPUs with CUDA tensors).

Fill: element k of rank r's input is ``(r % 61 + 1) * 32 + (k % 31)``: small integers, exact in float32
for sums over up to 8000 ranks, and different for every rank, so a misplaced or mis-reduced element is
caught. Per size: ``warmup`` untimed runs, then as many timed iterations as fit ``target_time_s`` (agreed
between ranks with a MAX all_reduce, capped at ``max_iters``) on zero-filled buffers, then one check run
on freshly filled buffers whose wrong elements are counted (nccl-tests ``#wrong``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from syncdoctor.probe.bandwidth import OpShape, op_shape

__all__ = ["expected_values", "fill_values", "measure_collectives", "run_op"]

log = logging.getLogger(__name__)


def fill_values(rank: int, numel: int, offset: int = 0) -> Any:
    """Rank ``rank``'s input: ``(rank % 61 + 1) * 32 + ((offset + k) % 31)`` for k in 0..numel-1."""
    import torch

    index = torch.arange(offset, offset + numel, dtype=torch.int64)
    return ((rank % 61 + 1) * 32 + index % 31).to(torch.float32)


def expected_values(op: str, rank: int, nranks: int, shape: OpShape) -> Any:
    """What rank ``rank``'s output must hold after ``op`` when every rank's input is :func:`fill_values`."""
    import torch

    if op == "all_reduce":
        base = sum(r % 61 + 1 for r in range(nranks)) * 32
        index = torch.arange(shape.out_numel, dtype=torch.int64)
        return (base + nranks * (index % 31)).to(torch.float32)
    if op == "broadcast":
        return fill_values(0, shape.out_numel)
    if op == "all_gather":
        return torch.cat([fill_values(r, shape.in_numel) for r in range(nranks)])
    if op == "reduce_scatter":
        base = sum(r % 61 + 1 for r in range(nranks)) * 32
        index = torch.arange(rank * shape.out_numel, (rank + 1) * shape.out_numel, dtype=torch.int64)
        return (base + nranks * (index % 31)).to(torch.float32)
    if op == "all_to_all":
        chunk = shape.out_numel // nranks
        return torch.cat([
            ((r % 61 + 1) * 32 + torch.arange(rank * chunk, (rank + 1) * chunk, dtype=torch.int64) % 31)
            .to(torch.float32)
            for r in range(nranks)
        ])
    raise ValueError(f"unknown collective {op!r}")


def run_op(op: str, out: Any, inp: Any, group: Any) -> None:
    """One call of ``op`` (broadcast and all_reduce work in place on ``out``)."""
    import torch.distributed as dist

    if op == "all_reduce":
        dist.all_reduce(out, group=group)
    elif op == "broadcast":
        dist.broadcast(out, src=0, group=group)
    elif op == "all_gather":
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        gather(out, inp, group=group)
    elif op == "reduce_scatter":
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        scatter(out, inp, group=group)
    elif op == "all_to_all":
        dist.all_to_all_single(out, inp, group=group)
    else:
        raise ValueError(f"unknown collective {op!r}")


def _buffers(op: str, shape: OpShape, device: Any) -> tuple[Any, Any]:
    import torch

    out = torch.zeros(shape.out_numel, dtype=torch.float32, device=device)
    if op in ("all_reduce", "broadcast"):
        return out, out
    return out, torch.zeros(shape.in_numel, dtype=torch.float32, device=device)


def _agree_iters(first_s: float, target_s: float, max_iters: int, group: Any, device: Any) -> int:
    import torch
    import torch.distributed as dist

    slowest = torch.tensor([first_s], dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=group)
    seconds = float(slowest.item())
    return int(min(max_iters, max(1, math.floor(target_s / seconds) if seconds > 0 else max_iters)))


def _check(op: str, shape: OpShape, rank: int, nranks: int, group: Any, device: Any, inject: bool) -> int:
    out, inp = _buffers(op, shape, device)
    if op in ("all_reduce", "broadcast"):
        out.copy_(fill_values(rank, shape.out_numel))
    else:
        inp.copy_(fill_values(rank, shape.in_numel))
    run_op(op, out, inp, group)
    if inject:
        out.view(-1)[out.numel() // 2] += 1.0  # test hook: one corrupted element
        log.warning("test hook: corrupted one element of %s on rank %d", op, rank)
    expected = expected_values(op, rank, nranks, shape).to(out.device)
    return int((out != expected).sum().item())


def measure_collectives(
    ops: Sequence[str],
    sizes: Sequence[int],
    rank: int,
    nranks: int,
    group: Any,
    device: Any,
    *,
    warmup: int,
    max_iters: int,
    target_s: float,
    sync: Callable[[Any], None],
    inject: Callable[[str], bool] = lambda op: False,
    on_size: Callable[[str, int], None] | None = None,
) -> list[dict[str, Any]]:
    """This rank's time per iteration and wrong-element count for every op and size."""
    results = []
    for op in ops:
        for size in sizes:
            shape = op_shape(op, size, nranks)
            if shape is None:
                continue
            if on_size is not None:
                on_size(op, size)
            out, inp = _buffers(op, shape, device)
            sync(device)
            start = time.perf_counter()
            run_op(op, out, inp, group)
            sync(device)
            first = time.perf_counter() - start
            for _ in range(max(0, warmup - 1)):
                run_op(op, out, inp, group)
            iters = _agree_iters(first, target_s, max_iters, group, device)
            sync(device)
            start = time.perf_counter()
            for _ in range(iters):
                run_op(op, out, inp, group)
            sync(device)
            elapsed = (time.perf_counter() - start) / iters
            wrong = _check(op, shape, rank, nranks, group, device, inject(op))
            results.append({"op": op, "size": shape.size, "requested": size, "count": shape.count,
                            "in_numel": shape.in_numel, "out_numel": shape.out_numel,
                            "iters": iters, "time_s": elapsed, "wrong": wrong})
    return results
