"""Node-level aggregation, the pure part: one store value per node holding its ranks' records, and the
leader's takeover policy.

Pure: no I/O, no clock. The ranks of a node hand their records to the node's leader over files in a
node-local tmpfs directory (:mod:`syncdoctor.watch.node`); the leader publishes them as one value,
:func:`pack_node`, under ``<base>/node/<index>``; the monitor reads the node values and :func:`merge` gives
back one record per rank. The store's load then grows with the nodes, not the ranks.

Node value: ``SDN1``, the count N (u32), N lengths (u32), then the N records as the ranks encoded them
(:mod:`syncdoctor.watch.records`: each names its rank in its own header). Every malformed value reads as
holding no record; a rank found in several node values (two leaders for a moment during a takeover) is
taken from the one with the newest heartbeat.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any, overload

from syncdoctor.watch.records import HEADER_SIZE, MAGIC

__all__ = ["NODE_MAGIC", "NodeRecords", "merge", "pack_node", "takeover_due", "unpack_node"]

NODE_MAGIC = b"SDN1"
_COUNT = struct.Struct("<I")
_RANK_BEAT = struct.Struct("<iiqq")  # after the record's magic: rank, world, pid, heartbeat
_MAX_RECORDS = 1 << 16  # per node value: far more ranks than a node has


def pack_node(records: Sequence[bytes]) -> bytes:
    """One node value of these records (each a rank's encoded record)."""
    lengths = struct.pack(f"<{len(records)}I", *(len(r) for r in records))
    return NODE_MAGIC + _COUNT.pack(len(records)) + lengths + b"".join(records)


def unpack_node(blob: bytes) -> list[bytes]:
    """The records of one node value; empty when it is not one (missing, foreign, truncated)."""
    lengths = _lengths(blob)
    if not lengths:
        return []
    start = 8 + 4 * len(lengths)
    out = []
    for length in lengths:
        out.append(blob[start:start + length])
        start += length
    return out


class NodeRecords(Sequence[bytes]):
    """Per rank, its record: a slice of the node values joined into one buffer (cut out when read), or a value
    set in its place (a rank's own key). Made by :func:`merge`; :meth:`header_rows` gives every rank's header
    at once for the monitor's screen without cutting out the records."""

    def __init__(self, world_size: int, buffer: bytes, starts: Any, lengths: Any, heads: Any, row: Any) -> None:
        self._buffer = buffer
        self._starts = starts  # numpy int64 per rank: offset of its record in the buffer, -1 for none
        self._lengths = lengths
        self._heads = heads  # (records, HEADER_SIZE) uint8: the headers of the chosen node records
        self._row = row  # per rank: its row in ``heads``, -1 for none
        self._set: dict[int, bytes] = {}
        self._world = world_size

    def __len__(self) -> int:
        return self._world

    @overload
    def __getitem__(self, rank: int) -> bytes: ...

    @overload
    def __getitem__(self, rank: slice) -> list[bytes]: ...

    def __getitem__(self, rank: int | slice) -> bytes | list[bytes]:
        if isinstance(rank, slice):
            return [self[r] for r in range(*rank.indices(self._world))]
        if rank < 0:
            rank += self._world
        if not 0 <= rank < self._world:
            raise IndexError(rank)
        if rank in self._set:
            return self._set[rank]
        start = int(self._starts[rank])
        return b"" if start < 0 else self._buffer[start:start + int(self._lengths[rank])]

    def __setitem__(self, rank: int, raw: bytes) -> None:
        self._set[rank] = raw

    def header_rows(self) -> Any | None:
        """Every rank's header bytes, one row of HEADER_SIZE per rank (numpy uint8), or ``None`` when a rank has
        no value at least that long."""
        import numpy as np

        row = self._row
        if not self._set:
            return self._heads[row] if bool((row >= 0).all()) else None
        from_nodes = row >= 0
        covered = from_nodes.copy()
        covered[list(self._set)] = True
        if not bool(covered.all()):
            return None
        rows = np.empty((self._world, HEADER_SIZE), dtype=np.uint8)
        for rank, raw in self._set.items():
            if len(raw) < HEADER_SIZE:
                return None
            rows[rank] = np.frombuffer(raw, dtype=np.uint8, count=HEADER_SIZE)
            from_nodes[rank] = False
        rows[from_nodes] = self._heads[row[from_nodes]]
        return rows

    def lengths(self) -> Any:
        """Per rank, the length of its value (numpy int64)."""
        import numpy as np

        lengths = np.where(self._starts >= 0, self._lengths, 0)
        for rank, raw in self._set.items():
            lengths[rank] = len(raw)
        return lengths


def merge(world_size: int, blobs: Iterable[bytes]) -> tuple[NodeRecords | list[bytes], list[int]]:
    """Per rank, its record from the node values (the newest heartbeat wins), and the ranks no node value
    holds (their own keys are read instead). Records that are not of this version, or name a rank outside
    the job, are left out. With numpy, the records stay in one buffer (:class:`NodeRecords`) and their
    headers are read as arrays; without it, each is cut out."""
    try:
        import numpy as np
        from numpy.lib.stride_tricks import sliding_window_view
    except ImportError:  # pragma: no cover - numpy comes with the torch extra
        return _merge_plain(world_size, blobs)
    blobs = list(blobs)
    starts = np.full(world_size, -1, dtype=np.int64)
    lengths_of = np.zeros(world_size, dtype=np.int64)
    row = np.full(world_size, -1, dtype=np.int64)
    buffer = b"".join(blobs)
    data = np.frombuffer(buffer, dtype=np.uint8)
    sizes = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs))
    base = np.cumsum(sizes) - sizes
    # each node value: its magic and count (values too short for them hold nothing)
    framed = sizes >= 8
    words = np.zeros((len(blobs), 8), dtype=np.uint8)
    if bool(framed.any()):
        words[framed] = sliding_window_view(data, 8)[base[framed]]
    counts = np.ascontiguousarray(words[:, 4:8]).view("<u4")[:, 0].astype(np.int64)
    ok = framed & (words[:, :4] == np.frombuffer(NODE_MAGIC, dtype=np.uint8)).all(axis=1) & (
        counts <= _MAX_RECORDS) & (8 + 4 * counts <= sizes)
    counts = np.where(ok, counts, 0)
    # the records' lengths, then the values whose lengths add up to their size
    total = int(counts.sum())
    if not total:
        return NodeRecords(world_size, b"", starts, lengths_of, np.zeros((0, HEADER_SIZE), np.uint8), row), list(
            range(world_size))
    first = np.cumsum(counts) - counts  # index of each value's first record
    within = np.arange(total, dtype=np.int64) - np.repeat(first, counts)
    at = np.repeat(base + 8, counts) + 4 * within
    length = sliding_window_view(data, 4)[at].copy().view("<u4")[:, 0].astype(np.int64)
    summed = np.zeros(len(blobs), dtype=np.int64)
    has = counts > 0
    summed[has] = np.add.reduceat(length, first[has])
    whole = has & (8 + 4 * counts + summed == sizes)
    keep = np.repeat(whole, counts)
    before = np.cumsum(length) - length  # bytes of the records before each, over all values
    start = np.repeat(base + 8 + 4 * counts - before[np.minimum(first, total - 1)], counts) + before
    length, start = length[keep], start[keep]
    if not len(length):
        return NodeRecords(world_size, b"", starts, lengths_of, np.zeros((0, HEADER_SIZE), np.uint8), row), list(
            range(world_size))
    long_enough = np.flatnonzero(length >= HEADER_SIZE)
    heads = sliding_window_view(data, HEADER_SIZE)[start[long_enough]] if len(long_enough) else np.zeros(
        (0, HEADER_SIZE), dtype=np.uint8)
    fields = heads[:, :28].copy()  # magic, rank, world, pid, heartbeat
    ranks = fields[:, 4:8].view("<i4")[:, 0].astype(np.int64)
    beats = fields[:, 20:28].view("<i8")[:, 0]
    good = (fields[:, :4] == np.frombuffer(MAGIC, dtype=np.uint8)).all(axis=1) & (ranks >= 0) & (ranks < world_size)
    chosen = np.flatnonzero(good)
    order = chosen[np.lexsort((beats[chosen], ranks[chosen]))]  # by rank, then heartbeat: the last of each wins
    last = np.append(ranks[order][1:] != ranks[order][:-1], True) if len(order) else np.zeros(0, dtype=bool)
    winners = order[last]
    won = ranks[winners]
    starts[won], lengths_of[won], row[won] = start[long_enough][winners], length[long_enough][winners], winners
    missing: list[int] = np.flatnonzero(starts < 0).tolist()
    return NodeRecords(world_size, buffer, starts, lengths_of, heads, row), missing


def _lengths(blob: bytes) -> tuple[int, ...]:
    """The record lengths of a well-formed node value, ``()`` for anything else."""
    if len(blob) < 8 or blob[:4] != NODE_MAGIC:
        return ()
    (count,) = _COUNT.unpack_from(blob, 4)
    start = 8 + 4 * count
    if count > _MAX_RECORDS or len(blob) < start:
        return ()
    lengths: tuple[int, ...] = struct.unpack_from(f"<{count}I", blob, 8)
    return lengths if start + sum(lengths) == len(blob) else ()


def _merge_plain(world_size: int, blobs: Iterable[bytes]) -> tuple[list[bytes], list[int]]:
    raws = [b""] * world_size
    beats = [-1] * world_size
    for blob in blobs:
        for raw in unpack_node(blob):
            if len(raw) < HEADER_SIZE or raw[:4] != MAGIC:
                continue
            rank, _world, _pid, beat = _RANK_BEAT.unpack_from(raw, 4)
            if 0 <= rank < world_size and beat > beats[rank]:
                raws[rank], beats[rank] = raw, beat
    return raws, [rank for rank in range(world_size) if beats[rank] < 0]


def takeover_due(lease_age_s: float, position: int, interval_s: float) -> bool:
    """Whether a rank of the node takes the leader's place: the leader's lease (renewed at each relay, once
    an interval) has not been renewed for 1.5 intervals plus a quarter interval per rank ahead of this one (``position``: 0 for the first
    candidate), so that the candidates do not all claim it at once. A leader that only paused (a long call
    holding the GIL) finds itself replaced and steps down; two leaders for a moment publish the same
    records, which :func:`merge` reconciles."""
    return lease_age_s >= 1.5 * interval_s + 0.25 * interval_s * max(position, 0)
