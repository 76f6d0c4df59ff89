"""Reaching the job's c10d store: from inside a rank, and from outside as a non-rank client.

Does I/O (network connections through torch's ``TCPStore``); torch is imported lazily.

Inside a rank, the store ``init_process_group`` used is wrapped in ``PrefixStore``\\ s (``default_pg``, and
``/worker/attempt_N`` under some torchrun versions); the watcher unwraps them down to the root store and
scopes its own keys (:mod:`syncdoctor.watch.keys`), so that ``syncdoctor watch --master HOST:PORT`` finds
them at the root whatever launched the job. It works on its own ``clone()`` of the client with a short
timeout, so a blocked watcher never holds the connection the training thread uses.

Under torchrun the store is served by the agent of node 0 (``TORCHELASTIC_USE_AGENT_STORE=True``) and
survives worker deaths; otherwise rank 0 serves it and it dies with rank 0: nothing can be reported after
that, which the docs state.
"""

from __future__ import annotations

import datetime
import os
import sys
from typing import Any

from syncdoctor.errors import StoreError, UsageError
from syncdoctor.watch.keys import JobKeys, ScopedStore

__all__ = ["connect", "job_root_store", "own_client", "own_store", "parse_master", "read_attempt", "read_meta"]


def parse_master(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6addr]:PORT`` too) -> (host, port); raises UsageError."""
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdecimal() or not 0 < int(port) < 65536:
        raise UsageError(f"--master expects HOST:PORT (the job's MASTER_ADDR:MASTER_PORT), got {text!r}")
    return host, int(port)


def job_root_store() -> Any:
    """The root of the store the default process group was created with (torch initialised)."""
    from torch.distributed import PrefixStore
    from torch.distributed import distributed_c10d as c10d

    store = c10d._get_default_store()
    while isinstance(store, PrefixStore):
        store = store.underlying_store
    return store


def own_store(store: Any, timeout_s: float) -> ScopedStore:
    """:func:`own_client` of ``store`` as the watcher uses it; not ``owned`` when it is the job's store itself."""
    client = own_client(store, timeout_s)
    return ScopedStore(client, owned=client is not store)


def own_client(store: Any, timeout_s: float) -> Any:
    """A separate client of ``store`` with our timeout (the same object for stores that cannot clone)."""
    clone = getattr(store, "clone", None)
    if clone is None:
        return store
    try:
        client = clone()
    except Exception:  # e.g. a store type without clone support
        return store
    client.set_timeout(datetime.timedelta(seconds=timeout_s))
    return client


def connect(host: str, port: int, timeout_s: float = 10.0) -> ScopedStore:
    """Connect to a job's TCPStore without registering as a worker (no world size, no waiting).

    A refusal or a timeout is expected here (the job has not started, or has ended): it is reported in one
    line, without c10's logging of each retry and its C++ stack (silenced when torch is first imported here).
    """
    if "torch" not in sys.modules:
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
        os.environ.setdefault("TORCH_SHOW_CPP_STACKTRACES", "0")
    try:
        from torch.distributed import TCPStore
    except ImportError as exc:  # pragma: no cover - torch without distributed
        raise StoreError(f"torch.distributed is not available: {exc}") from exc
    try:
        store = TCPStore(
            host, port, None, False, timeout=datetime.timedelta(seconds=timeout_s), wait_for_workers=False
        )
    except Exception as exc:  # DistNetworkError, RuntimeError, TimeoutError...
        raise StoreError(f"cannot reach the job's store at {host}:{port}: {_first_line(exc)}") from exc
    return ScopedStore(store)


def read_attempt(store: ScopedStore, prefix: str) -> int | None:
    """The latest attempt the ranks published under ``prefix``, or None when no rank has published."""
    raw = store.get_optional(f"{prefix}/attempt")
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def read_meta(store: ScopedStore, keys: JobKeys) -> dict[str, Any] | None:
    import json

    raw = store.get_optional(keys.meta)
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
