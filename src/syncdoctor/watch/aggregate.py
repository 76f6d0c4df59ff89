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

from syncdoctor.watch.records import HEADER_SIZE, MAGIC

__all__ = ["NODE_MAGIC", "merge", "pack_node", "takeover_due", "unpack_node"]

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
    if len(blob) < 8 or blob[:4] != NODE_MAGIC:
        return []
    (count,) = _COUNT.unpack_from(blob, 4)
    start = 8 + 4 * count
    if count > _MAX_RECORDS or len(blob) < start:
        return []
    lengths = struct.unpack_from(f"<{count}I", blob, 8)
    if start + sum(lengths) != len(blob):
        return []
    out = []
    for length in lengths:
        out.append(blob[start:start + length])
        start += length
    return out


def merge(world_size: int, blobs: Iterable[bytes]) -> tuple[list[bytes], list[int]]:
    """Per rank, its record from the node values (the newest heartbeat wins), and the ranks no node value
    holds (their own keys are read instead). Records that are not of this version, or name a rank outside
    the job, are left out."""
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
