"""A multi-host torchrun job in a lab: one ``torch.distributed.run`` agent per host, logs per rank in a run dir.

Does I/O: starts and signals processes, writes the run directory. Does not import torch.

Run directory layout::

    run_dir/<host>/agent.log       the torchrun agent's own stdout+stderr
    run_dir/<host>/rank<R>.log     global rank R's stdout+stderr (interleaved as written), live; removed
                                   when a new job starts in the same run dir
    run_dir/<host>/torchelastic/   torchrun's --log-dir (error files)
    run_dir/triggers/              files the workload touches to make the lab act (see Lab.on_trigger)

Each worker runs as ``sh -c 'exec "$@" >>rank$RANK.log 2>&1' <argv>`` under ``torchrun --no-python``: the
shell replaces itself with the worker, so the worker's pid is the one torchrun sees, and the per-rank file is
written live by the worker itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncdoctor.errors import UsageError

__all__ = ["JobResult", "LabJob", "start_job", "worker_argv"]

logger = logging.getLogger(__name__)

# Inherited variables that would confuse torchrun or the workers if the caller itself runs under torchrun.
_SCRUB = (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE",
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_USE_AGENT_STORE",
    "PYTEST_CURRENT_TEST",
)
_WRAP = 'exec "$@" >>"$SYNCDOCTOR_RANK_LOG_DIR/rank$RANK.log" 2>&1'
_MARKER = "SYNCDOCTOR_LAB_JOB"


def worker_argv(argv: Sequence[str], python: str | None = None) -> list[str]:
    """What each worker executes: ``-m mod ...`` and ``script.py ...`` run with ``python`` (default: this
    interpreter); a leading ``python``/``python3`` is replaced by it; anything else runs as given."""
    python = python or sys.executable
    if not argv:
        raise UsageError("no command to run in the lab (give a script, -m module, or a program)")
    first = argv[0]
    if first == "-m":
        return [python, "-m", *argv[1:]]
    if first in ("python", "python3"):
        return [python, *argv[1:]]
    if first.endswith(".py"):
        return [python, *argv]
    return list(argv)


@dataclass
class JobResult:
    """How a lab job ended. ``returncodes`` is per host (the torchrun agent's exit code; None if never
    started); ``rank_logs`` maps each global rank to its combined output file."""

    returncodes: dict[str, int | None]
    rank_logs: dict[int, Path]
    host_logs: dict[str, Path]
    timed_out: bool
    duration: float
    run_dir: Path
    world_size: int
    rank_hosts: dict[int, str] = field(default_factory=dict)
    started_wall: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.timed_out and all(code == 0 for code in self.returncodes.values())

    def output(self, rank: int) -> str:
        """Rank ``rank``'s combined output ("" if it never wrote any)."""
        path = self.rank_logs.get(rank)
        return path.read_text(errors="replace") if path and path.exists() else ""

    def host_output(self, host: str) -> str:
        path = self.host_logs.get(host)
        return path.read_text(errors="replace") if path and path.exists() else ""

    def summary(self) -> str:
        """A short text for assertion messages: exit codes and the tail of every log."""
        parts = [f"returncodes={self.returncodes} timed_out={self.timed_out} duration={self.duration:.1f}s"]
        for host in self.host_logs:
            parts.append(f"--- {host} agent ---\n{_tail(self.host_output(host))}")
        for rank in sorted(self.rank_logs):
            parts.append(f"--- rank {rank} ---\n{_tail(self.output(rank))}")
        return "\n".join(parts)


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.splitlines()[-lines:])


class LabJob:
    """A running job; :meth:`wait` ends it and gathers the result. Built by :meth:`Lab.torchrun`."""

    def __init__(self, lab: Any, run_dir: Path, world_size: int, procs_per_host: int, nnodes: int) -> None:
        self.lab = lab
        self.job_id = f"sdjob-{os.getpid()}-{secrets.token_hex(4)}"
        self.run_dir = run_dir
        self.world_size = world_size
        self.procs_per_host = procs_per_host
        self.nnodes = nnodes
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.host_logs: dict[str, Path] = {}
        self.started = time.monotonic()
        self.started_wall = time.time()  # comparable with the workload's step stamps (same machine clock)
        self.result: JobResult | None = None

    @property
    def trigger_dir(self) -> Path:
        return self.run_dir / "triggers"

    def on_trigger(self, name: str, action: Callable[[], object]) -> None:
        """Run ``action`` when the workload touches ``run_dir/triggers/<name>``."""
        self.lab.on_trigger(self.trigger_dir / name, action)

    def rank_log(self, rank: int) -> Path | None:
        found = sorted(self.run_dir.glob(f"*/rank{rank}.log"))
        return found[0] if found else None

    def rank_logs(self) -> dict[int, Path]:
        logs: dict[int, Path] = {}
        for path in self.run_dir.glob("*/rank*.log"):
            match = re.fullmatch(r"rank(\d+)\.log", path.name)
            if match:
                logs[int(match[1])] = path
        return dict(sorted(logs.items()))

    def wait_for_output(self, rank: int, pattern: str, timeout: float = 30) -> re.Match[str] | None:
        """Wait until rank ``rank``'s output matches the regex ``pattern``; None on timeout or job end."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            path = self.rank_log(rank)
            if path is not None:
                match = regex.search(path.read_text(errors="replace"))
                if match:
                    return match
            if self.poll() is not None:
                return None
            time.sleep(0.05)
        return None

    def rank_pids(self) -> dict[int, int]:
        """Global rank -> pid of the worker process, for the workers started so far."""
        import psutil

        pids: dict[int, int] = {}
        for proc in self.procs.values():
            try:
                children = psutil.Process(proc.pid).children()
            except psutil.Error:
                continue
            for child in children:
                with contextlib.suppress(psutil.Error):
                    rank = child.environ().get("RANK")
                    # a child between fork and exec (or exiting) has no command line yet: the next poll sees it
                    command = child.cmdline()
                    if rank is not None and command and os.path.basename(command[0]) != "sh":
                        pids[int(rank)] = child.pid
        return dict(sorted(pids.items()))

    def wait_for_ranks(self, timeout: float = 30) -> dict[int, int]:
        """Wait until every rank of the started hosts has a worker pid; returns :meth:`rank_pids`."""
        expected = self.procs_per_host * len(self.procs)
        deadline = time.monotonic() + timeout
        pids = self.rank_pids()
        while len(pids) < expected and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = self.rank_pids()
        return pids

    def poll(self) -> dict[str, int] | None:
        """Exit codes once every agent has exited, else None."""
        codes = {host: proc.poll() for host, proc in self.procs.items()}
        if any(code is None for code in codes.values()):
            return None
        return {host: int(code) for host, code in codes.items() if code is not None}

    def wait(self, timeout: float = 60) -> JobResult:
        """Wait for every agent; past ``timeout`` seconds kill the whole job and mark it timed out."""
        if self.result is not None:
            return self.result
        deadline = time.monotonic() + timeout
        timed_out = False
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                break
        duration = time.monotonic() - self.started
        self.kill()
        codes: dict[str, int | None] = {host.name: None for host in self.lab.hosts}
        codes.update({host: proc.returncode for host, proc in self.procs.items()})
        rank_logs = self.rank_logs()
        self.result = JobResult(
            returncodes=codes,
            rank_logs=rank_logs,
            host_logs=dict(self.host_logs),
            timed_out=timed_out,
            duration=duration,
            run_dir=self.run_dir,
            world_size=self.world_size,
            rank_hosts={rank: path.parent.name for rank, path in rank_logs.items()},
            started_wall=self.started_wall,
        )
        return self.result

    def kill(self) -> None:
        """SIGKILL every process of this job: agents, workers and anything the workers started."""
        import psutil

        victims: dict[int, psutil.Process] = {}
        for proc in self.procs.values():
            with contextlib.suppress(psutil.Error):
                agent = psutil.Process(proc.pid)
                victims[agent.pid] = agent
                for child in agent.children(recursive=True):
                    victims[child.pid] = child
        for candidate in psutil.process_iter():  # orphans whose agent already died carry the job marker
            with contextlib.suppress(psutil.Error):
                if candidate.pid not in victims and candidate.environ().get(_MARKER) == self.job_id:
                    victims[candidate.pid] = candidate
        for victim in victims.values():
            with contextlib.suppress(psutil.Error):
                victim.send_signal(signal.SIGCONT)
                victim.kill()
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_job(
    lab: Any,
    argv: Sequence[str],
    procs_per_host: int = 2,
    env: Mapping[str, str | None] | None = None,
    host_env: Mapping[str, Mapping[str, str | None]] | None = None,
    run_dir: Path | str | None = None,
    rdzv: str = "static",
    master_port: int | None = None,
    hosts: Sequence[str] | None = None,
    python: str | None = None,
    max_restarts: int = 0,
    shutdown_timeout: int = 5,
    torchrun_args: Sequence[str] = (),
) -> LabJob:
    """Start one torchrun agent per host (all lab hosts count as nodes; ``hosts`` picks which start).

    ``rdzv`` is ``"static"`` (``--master-addr`` host0, ``--node-rank`` = host index: global ranks follow host
    order) or ``"c10d"`` (``--rdzv-endpoint`` on host0; ranks in join order). ``env`` applies to every host,
    ``host_env[host]`` on top (a None value unsets a variable on that host).
    """
    if rdzv not in ("static", "c10d"):
        raise UsageError(f"rdzv must be static or c10d, not {rdzv!r}")
    if procs_per_host < 1:
        raise UsageError("procs_per_host must be at least 1")
    unknown = set(host_env or {}) | set(hosts or ())
    unknown -= {host.name for host in lab.hosts}
    if unknown:
        raise UsageError(f"no host(s) {', '.join(sorted(unknown))} in this lab")
    run_dir = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="syncdoctor-lab-"))
    python = python or sys.executable
    nnodes = len(lab.hosts)
    job = LabJob(lab, run_dir, nnodes * procs_per_host, procs_per_host, nnodes)
    job.trigger_dir.mkdir(parents=True, exist_ok=True)
    master = lab.hosts[0]
    if master_port is None:
        master_port = _free_port() if master.netns is None else 29400 + len(getattr(lab, "_jobs", ()))
    if rdzv == "static":
        rendezvous = ["--master-addr", master.addr, "--master-port", str(master_port)]
    else:
        rendezvous = ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"{master.addr}:{master_port}",
                      "--rdzv-id", job.job_id]
    worker = worker_argv(argv, python)
    selected = [lab.host(name) for name in hosts] if hosts is not None else list(lab.hosts)
    for host in selected:
        host_dir = run_dir / host.name
        host_dir.mkdir(parents=True, exist_ok=True)
        for stale in host_dir.glob("rank*.log"):  # workers append (a restarted worker keeps its history)
            stale.unlink()
        agent = [
            python, "-m", "torch.distributed.run",
            "--nnodes", str(nnodes), "--nproc-per-node", str(procs_per_host),
            *rendezvous,
            "--max-restarts", str(max_restarts), "--monitor-interval", "0.1",
            "--shutdown-timeout", str(shutdown_timeout),
            "--log-dir", str(host_dir / "torchelastic"),
            *torchrun_args,
        ]
        if rdzv == "static":
            agent += ["--node-rank", str(host.index)]
        agent += ["--no-python", "sh", "-c", _WRAP, "sh", *worker]
        layers: list[Mapping[str, str | None] | None] = [
            dict.fromkeys(_SCRUB),
            {"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"},
            env,
            (host_env or {}).get(host.name),
            {
                "SYNCDOCTOR_RANK_LOG_DIR": str(host_dir),
                "SYNCDOCTOR_TRIGGER_DIR": str(job.trigger_dir),
                "SYNCDOCTOR_LAB_HOST": host.name,
                _MARKER: job.job_id,
            },
        ]
        log_path = host_dir / "agent.log"
        with open(log_path, "wb") as log:
            proc = lab.popen(host, agent, env=_merge(layers), stdout=log, stderr=subprocess.STDOUT)
        job.procs[host.name] = proc
        job.host_logs[host.name] = log_path
    logger.info("job %s started on %s (%s rendezvous, port %d, run dir %s)", job.job_id,
                ", ".join(job.procs), rdzv, master_port, run_dir)
    return job


def _merge(layers: Sequence[Mapping[str, str | None] | None]) -> dict[str, str | None]:
    merged: dict[str, str | None] = {}
    for layer in layers:
        merged.update(layer or {})
    return merged
