"""Where the watcher's data lives in the job's c10d store, and a thin wrapper that scopes keys.

Does I/O only through the store object it is given. Layout, under the root store (the rendezvous
store ``init_process_group`` used, below its ``default_pg`` and any other ``PrefixStore``)::

    <prefix>/attempt                     latest torchrun restart count (integer text)
    <prefix>/attempt<N>/meta             JSON: world size, settings (written by every rank)
    <prefix>/attempt<N>/rank/<R>         rank R's record (syncdoctor.watch.records), every interval
    <prefix>/attempt<N>/stack/<R>        rank R's last stack, on request
    <prefix>/attempt<N>/group/<name>     members of a process group ("0-3,8")
    <prefix>/attempt<N>/ctl/gen          control generation (``add`` counter): ranks poll it
    <prefix>/attempt<N>/ctl/msg          control message (JSON): stacks, inspect, dump, abort
    <prefix>/attempt<N>/monitor          monitor lease: JSON {"who": ..., "beat": n}
    <prefix>/attempt<N>/fail             failure order counter (``add``)
    <prefix>/attempt<N>/aborted          fail-fast: ranks that have read the abort order (``add``)
    <prefix>/attempt<N>/events/count     number of events the monitor published (``add``)
    <prefix>/attempt<N>/events/<n>       event n as JSON, for ``syncdoctor watch`` and the post-mortem
    <prefix>/attempt<N>/token            the attempt's random token (first rank's): names node directories
    <prefix>/attempt<N>/nodes/count      node values registered (``add``)
    <prefix>/attempt<N>/node/<i>         node i's ranks' records, published by its leader
                                         (:mod:`syncdoctor.watch.aggregate`); a rank of a node publishes
                                         there, not under rank/<R>, unless node aggregation is off for it

Keys are never deleted and never collide with c10d's own (which live under ``default_pg/``, group names
and ``exception_dump``). ``get`` on a missing key would block until the store timeout, so readers create
keys with ``compare_set(key, "", "")`` (a no-op when the key exists) or check them first.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Sequence
from typing import Any

__all__ = ["JobKeys", "ScopedStore"]


class JobKeys:
    """Key names of one attempt of one job."""

    def __init__(self, prefix: str, attempt: int) -> None:
        self.prefix = prefix
        self.attempt = attempt
        self.base = f"{prefix}/attempt{attempt}"
        self.pointer = f"{prefix}/attempt"
        self.meta = f"{self.base}/meta"
        self.ctl_gen = f"{self.base}/ctl/gen"
        self.ctl_msg = f"{self.base}/ctl/msg"
        self.monitor = f"{self.base}/monitor"
        self.fail = f"{self.base}/fail"
        self.aborted = f"{self.base}/aborted"
        self.events = f"{self.base}/events"
        self.token = f"{self.base}/token"
        self.nodes_count = f"{self.base}/nodes/count"

    def rank(self, rank: int) -> str:
        return f"{self.base}/rank/{rank}"

    def stack(self, rank: int) -> str:
        return f"{self.base}/stack/{rank}"

    def node(self, index: int) -> str:
        return f"{self.base}/node/{index}"

    def group(self, name: str) -> str:
        return f"{self.base}/group/{name}"


class ScopedStore:
    """The few store operations the watcher uses, with bytes in and out; errors propagate as raised.

    ``owned``: ``store`` is the watcher's own client (a clone, or its own connection), not the job's: only then
    may the watcher change its timeout."""

    def __init__(self, store: Any, owned: bool = True) -> None:
        self.store = store
        self.owned = owned

    def set(self, key: str, value: bytes | str) -> None:
        self.store.set(key, value)

    def shorten_timeout(self, seconds: float) -> None:
        """Make each later operation give up after ``seconds`` at most (stores without a timeout, and the job's
        own store where it could not be cloned: nothing)."""
        setter = getattr(self.store, "set_timeout", None)
        if setter is not None and self.owned:
            with contextlib.suppress(Exception):
                setter(datetime.timedelta(seconds=seconds))

    def get(self, key: str) -> bytes:
        return bytes(self.store.get(key))

    def add(self, key: str, amount: int) -> int:
        return int(self.store.add(key, amount))

    def check(self, keys: Sequence[str]) -> bool:
        return bool(self.store.check(list(keys)))

    def ensure(self, key: str) -> bytes:
        """Create ``key`` empty if it is missing; return its value either way (one round trip)."""
        return bytes(self.store.compare_set(key, "", ""))

    def get_optional(self, key: str) -> bytes | None:
        if not self.check([key]):
            return None
        return self.get(key)

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        if not keys:
            return []
        getter = getattr(self.store, "multi_get", None)
        if getter is None:
            return [self.get(k) for k in keys]
        return [bytes(v) for v in getter(list(keys))]

    def compare_set(self, key: str, expected: bytes | str, desired: bytes | str) -> bytes:
        return bytes(self.store.compare_set(key, expected, desired))
