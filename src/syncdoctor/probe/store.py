"""Connecting to the job's store for the probe, with a deadline and without c10d's noise. Does I/O.

Global rank 0 hosts the store unless the launcher's agent already does (torchrun); every other rank first
waits for something to listen with plain TCP connects, then opens c10d's client. The probe's keys live
under ``syncdoctor/probe/<run id>/``.
"""

from __future__ import annotations

import datetime
import socket
import time
from typing import Any

from syncdoctor.errors import StoreError
from syncdoctor.probe.launch import LaunchInfo

__all__ = ["connect_store", "wait_for_listener"]


def wait_for_listener(host: str, port: int, timeout_s: float) -> None:
    """Retry a plain TCP connect until something listens (the store's host may start later than us).

    c10d's own client gives up after its timeout with a C++ stack trace on stderr; this loop makes the
    usual case (rank 0 not up yet) quiet and the failure one clear message.
    """
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise StoreError(f"cannot reach the store at {host}:{port} within {timeout_s:g} s: {last}")
        try:
            with socket.create_connection((host, port), timeout=min(2.0, remaining)):
                return
        except OSError as exc:
            last = exc
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))


def connect_store(launch: LaunchInfo, timeout_s: float) -> Any:
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=timeout_s)
    try:
        if launch.hosts_store:
            store = dist.TCPStore(launch.master_addr, launch.master_port, is_master=True,
                                  wait_for_workers=False, timeout=timeout)
        else:
            started = time.monotonic()
            wait_for_listener(launch.master_addr, launch.master_port, timeout_s)
            left = max(1.0, timeout_s - (time.monotonic() - started))
            store = dist.TCPStore(launch.master_addr, launch.master_port, is_master=False,
                                  wait_for_workers=False, timeout=datetime.timedelta(seconds=left))
            store.set_timeout(timeout)
    except StoreError:
        raise
    except Exception as exc:  # DistNetworkError, RuntimeError, socket errors
        raise StoreError(f"cannot reach the store at {launch.master_addr}:{launch.master_port} within "
                         f"{timeout_s:g} s: {exc}") from exc
    return dist.PrefixStore(f"syncdoctor/probe/{launch.run_id}/", store)
