"""``syncdoctor probe --local N``: start N probe ranks on this host and relay their output. Does I/O.

Each rank is ``python -m syncdoctor probe ...`` with the environment torchrun would give it (RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). With
``--nnodes``/``--node-rank``/``--master-addr`` the N ranks are this host's share of a multi-node probe, one
``syncdoctor probe --local N`` per host; global rank 0 hosts the store. The ranks' standard output is
relayed line by line; their standard error is shown when a rank fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence

__all__ = ["free_port", "spawn_local"]

# Variables of an enclosing launcher that would confuse the ranks.
_SCRUB = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
          "ROLE_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT",
          "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_ERROR_FILE", "SLURM_PROCID", "SLURM_LOCALID")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _relay(stream: object, out: Callable[[str], None]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        out(line.rstrip("\n"))


def spawn_local(
    count: int,
    argv: Sequence[str],
    *,
    out: Callable[[str], None],
    err: Callable[[str], None],
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
    timeout_s: float = 3600.0,
    environ: Mapping[str, str] | None = None,
    columns: int | None = None,
) -> int:
    """Run ``count`` ranks of ``syncdoctor probe ARGV``; returns the worst exit code (3 when killed)."""
    base = {k: v for k, v in (os.environ if environ is None else environ).items() if k not in _SCRUB}
    port = master_port or free_port()
    base.update({
        "MASTER_ADDR": master_addr, "MASTER_PORT": str(port), "LOCAL_WORLD_SIZE": str(count),
        "WORLD_SIZE": str(count * nnodes), "GROUP_RANK": str(node_rank), "GROUP_WORLD_SIZE": str(nnodes),
        "SYNCDOCTOR_PROBE_LAUNCHER": "local", "SYNCDOCTOR_PROBE_RUN_ID": f"local-{master_addr}-{port}",
        "PYTHONUNBUFFERED": "1",
    })
    base.setdefault("OMP_NUM_THREADS", "1")
    if columns:
        base["COLUMNS"] = str(columns)
    procs: list[subprocess.Popen[str]] = []
    relays: list[threading.Thread] = []
    errors: list[list[str]] = []
    try:
        for local_rank in range(count):
            env = dict(base, LOCAL_RANK=str(local_rank), RANK=str(node_rank * count + local_rank))
            proc = subprocess.Popen(
                [sys.executable, "-m", "syncdoctor", "probe", *argv], env=env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True,
            )
            procs.append(proc)
            lines: list[str] = []
            errors.append(lines)
            for stream, sink in ((proc.stdout, out), (proc.stderr, lines.append)):
                thread = threading.Thread(target=_relay, args=(stream, sink), daemon=True)
                thread.start()
                relays.append(thread)
        deadline = time.monotonic() + timeout_s
        codes = []
        for proc in procs:
            try:
                codes.append(proc.wait(timeout=max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                codes.append(-1)
                break
    finally:
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for thread in relays:
            thread.join(timeout=5)
        for proc in procs:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    worst = 0
    for index, code in enumerate(codes):
        if code not in (0, 1, 4):  # 1: findings, 4: a stage failed (said in the report): anything else crashed
            err(f"local rank {index} exited with {code}:")
            for line in errors[index][-20:]:
                err(f"  {line}")
            worst = 3
        elif worst != 3:
            worst = max(worst, code)
    return worst
