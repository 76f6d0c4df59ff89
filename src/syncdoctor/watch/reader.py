"""Reading every rank's latest record from the job's store: from the node values that node leaders publish
(:mod:`syncdoctor.watch.aggregate`) and, for the ranks no node value holds, from their own keys.

Does I/O: the store given. ``multi_get`` never meets a missing key (it would block until the store's
timeout): every key is created empty once, before its first read.
"""

from __future__ import annotations

from collections.abc import Sequence

from syncdoctor.watch.aggregate import merge
from syncdoctor.watch.keys import JobKeys, ScopedStore

__all__ = ["MULTI_GET_KEYS", "MULTI_GET_NODES", "RecordReader"]

# keys per multi_get: a TCPStore multi_get costs more than linearly in its number of keys (measured here:
# 4096 keys in one request about 50 ms, in requests of 128-512 keys 15-20 ms; see docs/performance.md)
MULTI_GET_KEYS = 256
MULTI_GET_NODES = 64  # node values hold a node's ranks: fewer per request


class RecordReader:
    """One reader of one job attempt's records (the monitor's, or a failing rank's last look)."""

    def __init__(self, store: ScopedStore, keys: JobKeys, world_size: int) -> None:
        self.store = store
        self.keys = keys
        self.world_size = world_size
        self.aggregated = False  # whether the last read found node values
        self.requests = 0  # store requests of the last read
        self._rank_keys = [keys.rank(r) for r in range(world_size)]
        self._ensured: set[int] = set()
        self._ensured_nodes = 0

    def read(self) -> Sequence[bytes]:
        """Per rank, its latest record (``b""`` when it has none)."""
        store = self.store
        count = store.add(self.keys.nodes_count, 0)
        self.requests = 1
        if count <= 0:
            self.aggregated = False
            return self._own_keys(list(range(self.world_size)))
        for index in range(self._ensured_nodes, count):  # registered, maybe not published yet
            store.ensure(self.keys.node(index))
            self.requests += 1
        self._ensured_nodes = max(self._ensured_nodes, count)
        node_keys = [self.keys.node(i) for i in range(count)]
        blobs: list[bytes] = []
        for start in range(0, count, MULTI_GET_NODES):
            blobs += store.multi_get(node_keys[start:start + MULTI_GET_NODES])
            self.requests += 1
        raws, missing = merge(self.world_size, blobs)
        self.aggregated = True
        if missing:  # ranks that publish alone, or have not published yet
            for rank, raw in zip(missing, self._own_keys(missing), strict=True):
                raws[rank] = raw
        return raws

    def _own_keys(self, ranks: list[int]) -> list[bytes]:
        store = self.store
        fresh = [r for r in ranks if r not in self._ensured]
        for rank in fresh:  # create missing record keys empty so multi_get never blocks
            store.ensure(self._rank_keys[rank])
        self._ensured.update(fresh)
        self.requests += len(fresh)
        keys = [self._rank_keys[r] for r in ranks]
        raws: list[bytes] = []
        for start in range(0, len(keys), MULTI_GET_KEYS):
            raws += store.multi_get(keys[start:start + MULTI_GET_KEYS])
            self.requests += 1
        return raws
