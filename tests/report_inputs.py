"""Real inputs for the report tests, produced once per test session and shared by the report, metrics and
browser tests: a probe JSON from ``syncdoctor probe --local 2``, the event file of a live watched 2-rank
gloo job with a late rank (scraped over HTTP while it runs), and an analyze JSON from ``syncdoctor
analyze``. Does I/O (subprocesses, loopback HTTP).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
_cache: dict[str, object] = {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SYNCDOCTOR_METRICS_PORT", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def real_probe_json(directory: Path) -> Path:
    """``syncdoctor probe --local 2 --quick`` (small sizes) writing its JSON report, and its HTML page next
    to it (``--html``, ``probe.html``); about 15 s."""
    if "probe" not in _cache:
        path = directory / "probe.json"
        result = subprocess.run(
            [sys.executable, "-m", "syncdoctor", "probe", "--local", "2", "--quick", "--sizes", "1K:64K",
             "--join-timeout", "60", "--json", str(path), "--html", str(directory / "probe.html")],
            capture_output=True, text=True, timeout=240, env=_env(),
        )
        if not path.exists():
            raise AssertionError(f"probe wrote no JSON (exit {result.returncode}):\n{result.stdout[-3000:]}\n"
                                 f"{result.stderr[-3000:]}")
        _cache["probe"] = path
    return _cache["probe"]  # type: ignore[return-value]


@dataclass
class WatchedJob:
    events: Path
    returncodes: list[int]
    scrapes: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    metrics_port: int = 0


def real_watched_job(directory: Path, late_s: float = 3.0) -> WatchedJob:
    """A 2-rank gloo job under ``syncdoctor.watch`` with metrics on a free port; rank 1 straggles and is
    ``late_s`` late at collective 21. The metrics endpoint is scraped every 0.1 s while the job runs."""
    if "watch" not in _cache:
        events = directory / "events.jsonl"
        metrics_port, master_port = free_port(), free_port()
        env = _env() | {"SYNCDOCTOR_METRICS_PORT": str(metrics_port)}
        logs = [directory / f"rank{r}.log" for r in range(2)]
        procs = []
        try:
            for rank in range(2):
                with logs[rank].open("w") as out:
                    procs.append(subprocess.Popen(
                        [sys.executable, str(HERE / "report_late_job.py"), str(rank), "2", str(master_port),
                         str(events), str(late_s)], stdout=out, stderr=subprocess.STDOUT, env=env))
            scrapes = []
            deadline = time.monotonic() + 120
            while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2) as reply:
                        scrapes.append(reply.read().decode())
                except (urllib.error.URLError, OSError):
                    pass
                time.sleep(0.1)
            codes = [p.wait(timeout=30) for p in procs]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=10)
        _cache["watch"] = WatchedJob(events, codes, scrapes, [p.read_text(errors="replace") for p in logs],
                                     metrics_port)
    return _cache["watch"]  # type: ignore[return-value]


def real_analyze_json(directory: Path, fixture: str = "lab/late") -> Path:
    """``syncdoctor analyze --json`` on the logs of a real lab run with a late rank."""
    key = f"analyze:{fixture}"
    if key not in _cache:
        source = HERE / "fixtures" / "analyze" / fixture
        result = subprocess.run([sys.executable, "-m", "syncdoctor", "analyze", str(source), "--json"],
                                capture_output=True, text=True, timeout=120, env=_env() | {"COLUMNS": "200"})
        if result.returncode not in (0, 1) or not result.stdout.strip().startswith("{"):
            raise AssertionError(f"analyze failed (exit {result.returncode}):\n{result.stdout[-2000:]}\n"
                                 f"{result.stderr[-2000:]}")
        path = directory / "analyze.json"
        path.write_text(result.stdout)
        _cache[key] = path
    return _cache[key]  # type: ignore[return-value]
