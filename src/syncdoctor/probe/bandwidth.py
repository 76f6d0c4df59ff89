"""Collective shapes, algbw/busbw exactly as nccl-tests defines them, and the nccl-tests-style table. Pure.

``algbw = S / t`` with S the bytes of the op's largest buffer (the "size" column) and ``busbw = algbw *
factor(n)``: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast 1 (nccl-tests
doc/PERFORMANCE.md and the ``*GetBw`` functions of its src/*.cu). GB/s means 1e9 bytes per second.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from syncdoctor.probe.records import CollectiveRow

__all__ = [
    "OpShape",
    "algbw",
    "busbw",
    "busbw_factor",
    "format_table",
    "op_shape",
    "rows_by_op",
    "summarise",
]

_REDOP = {"all_reduce": "sum", "reduce_scatter": "sum"}
_ROOTED = {"broadcast"}
_PER_RANK_COUNT = {"all_gather", "reduce_scatter", "all_to_all"}


def busbw_factor(op: str, nranks: int) -> float:
    """nccl-tests' bus bandwidth factor for ``op`` on ``nranks`` ranks."""
    if nranks < 1:
        raise ValueError("nranks must be at least 1")
    if op == "all_reduce":
        return 2.0 * (nranks - 1) / nranks
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (nranks - 1) / nranks
    if op in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    raise ValueError(f"no bus bandwidth factor for {op!r}")


def algbw(size_bytes: float, seconds: float) -> float:
    """Algorithm bandwidth in bytes/s: S / t."""
    return size_bytes / seconds if seconds > 0 else 0.0


def busbw(op: str, size_bytes: float, seconds: float, nranks: int) -> float:
    """Bus bandwidth in bytes/s: algbw times the op's factor."""
    return algbw(size_bytes, seconds) * busbw_factor(op, nranks)


@dataclass(frozen=True)
class OpShape:
    """Buffer sizes of one collective at one requested size, in elements.

    Attributes:
        size: bytes actually used (the requested size rounded down to whole elements per rank).
        count: the count nccl-tests prints: total elements for all_reduce/broadcast, per-rank (all_gather,
            reduce_scatter) or per-peer (all_to_all) elements otherwise.
        in_numel, out_numel: input and output elements on each rank.
    """

    op: str
    size: int
    count: int
    in_numel: int
    out_numel: int


def op_shape(op: str, size: int, nranks: int, elem_size: int = 4) -> OpShape | None:
    """The buffers for ``op`` at ``size`` bytes; None when the size is too small for one element per rank."""
    elements = size // elem_size
    if op in ("all_reduce", "broadcast"):
        if elements < 1:
            return None
        return OpShape(op, elements * elem_size, elements, elements, elements)
    if op in _PER_RANK_COUNT:
        per_rank = elements // nranks
        if per_rank < 1:
            return None
        total = per_rank * nranks
        if op == "all_gather":
            return OpShape(op, total * elem_size, per_rank, per_rank, total)
        if op == "reduce_scatter":
            return OpShape(op, total * elem_size, per_rank, total, per_rank)
        return OpShape(op, total * elem_size, per_rank, total, total)
    raise ValueError(f"unknown collective {op!r}")


def summarise(
    op: str,
    shape: OpShape,
    per_rank: Mapping[int, tuple[float, int | None]],
    iters: int,
    dtype: str = "float",
) -> CollectiveRow:
    """One table row from every rank's (average time per iteration, wrong elements).

    The time used for algbw/busbw is the average over ranks (nccl-tests' default ``-a 1``).
    """
    if not per_rank:
        raise ValueError("no rank reported a time")
    nranks = len(per_rank)
    times = {rank: t for rank, (t, _wrong) in per_rank.items()}
    wrongs = [w for _t, w in per_rank.values()]
    avg = sum(times.values()) / nranks
    slowest = max(sorted(times), key=lambda r: times[r])
    return CollectiveRow(
        op=op,
        size=shape.size,
        count=shape.count,
        dtype=dtype,
        redop=_REDOP.get(op, "none"),
        root=0 if op in _ROOTED else -1,
        iters=iters,
        time_min_s=min(times.values()),
        time_avg_s=avg,
        time_max_s=times[slowest],
        slowest_rank=slowest,
        algbw=algbw(shape.size, avg),
        busbw=busbw(op, shape.size, avg, nranks),
        wrong=None if any(w is None for w in wrongs) else sum(int(w or 0) for w in wrongs),
        ranks=nranks,
    )


def _time_us(seconds: float) -> str:
    usec = seconds * 1e6
    if usec >= 10000.0:
        return f"{usec:7.0f}"
    if usec >= 100.0:
        return f"{usec:7.1f}"
    return f"{usec:7.2f}"


def _gbps(value: float) -> str:
    return f"{value / 1e9:6.2f}"


_HEADER = (
    "#                                                              out-of-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong    t_min    t_max  slowest\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)     (us)     rank"
)


def format_table(rows: Sequence[CollectiveRow], title: str = "") -> str:
    """The nccl-tests table for the rows of one collective (out-of-place columns, plus min/max/slowest).

    Followed by nccl-tests' footer: the out-of-bounds verdict and the average bus bandwidth over all rows.
    """
    lines = [f"# Collective test: {title or (rows[0].op if rows else '')}", _HEADER]
    for row in rows:
        wrong = "N/A" if row.wrong is None else str(row.wrong)
        lines.append(
            f"{row.size:12d}  {row.count:12d}  {row.dtype:>8s}  {row.redop:>6s}  {row.root:6d}"
            f"  {_time_us(row.time_avg_s)}  {_gbps(row.algbw)}  {_gbps(row.busbw)}  {wrong:>6s}"
            f"  {_time_us(row.time_min_s)}  {_time_us(row.time_max_s)}  {row.slowest_rank:7d}"
        )
    wrong_total = sum(r.wrong or 0 for r in rows)
    lines.append(f"# Out of bounds values : {wrong_total} {'OK' if wrong_total == 0 else 'FAILED'}")
    average = sum(r.busbw for r in rows) / len(rows) if rows else 0.0
    lines.append(f"# Avg bus bandwidth    : {average / 1e9:g}")
    return "\n".join(lines)


def rows_by_op(rows: Iterable[CollectiveRow]) -> dict[str, list[CollectiveRow]]:
    grouped: dict[str, list[CollectiveRow]] = {}
    for row in rows:
        grouped.setdefault(row.op, []).append(row)
    return grouped

