"""A TCPStore served by its own process, as torchrun's agent serves a job's store: shared by the watch
benchmarks. ``with served_store() as port:`` starts it and stops it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

SERVER = """
import datetime, sys
import torch.distributed as dist
store = dist.TCPStore("127.0.0.1", 0, None, True, timeout=datetime.timedelta(seconds=120), wait_for_workers=False)
print(store.port, flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def served_store() -> Iterator[int]:
    """The port of a TCPStore server process, ended on exit."""
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield int(server.stdout.readline())  # type: ignore[union-attr]
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=60)
