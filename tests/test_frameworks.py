"""Frameworks that own the training loop and the launch, watched with no code change (``SYNCDOCTOR_WATCH=1``):
a Lightning ``Trainer(strategy="ddp")`` on 2 CPU processes (Lightning starts the second one itself) and an
Accelerate loop under ``accelerate launch`` (its torchrun-based launcher; on a machine without GPUs the ranks
run on CPU with gloo). In each, rank 1 is late in one step; the late rank is named alone within warn + 2 s.
Both frameworks install CPU-only next to the pinned torch (test extras)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from syncdoctor.watch.config import WatchConfig

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "autowatch"
WARN_S, LATE_STEP, LATE_S = 3.0, 3, 9.0
SAMPLE_S = WatchConfig().sample_interval_s


def _env(events: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCDOCTOR_")}
    env.update({"SYNCDOCTOR_WATCH": "1", "SYNCDOCTOR_WATCH_WARN_AFTER": str(WARN_S),
                "SYNCDOCTOR_WATCH_EVENTS_FILE": str(events), "PYTHONUNBUFFERED": "1"})
    return env


def _lines(text: str) -> list[dict[str, Any]]:
    """The flat JSON objects the ranks print (two processes share stdout: lines may run into each other)."""
    return [json.loads(found) for found in re.findall(r'\{"rank"[^{}]*\}', text)]


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _late_rank_named_alone(stdout: str, events_file: Path, framework: str) -> None:
    lines = _lines(stdout)
    events = _events(events_file)
    started = [d["at"] for d in lines if d.get("step") == LATE_STEP and d["rank"] == 0]
    assert len(started) == 1, lines
    first = next((e for e in events if e["code"] == "W101"), None)
    assert first is not None, events
    assert first["ranks"] == [1] and first["status"] == "warning", first
    assert not [e for e in events if e["code"] == "W101" and e["ranks"] != [1]], events
    delay = first["at"] - started[0]
    print(f"{framework}: late rank 1 named {delay:.2f} s after rank 0's step started (warn after {WARN_S} s)")
    # When rank 0 starts waiting inside the framework's step is not observable here (3.1-4.1 s measured on a
    # quiet machine, 6.9 s once under CI load), so the upper bound is the one that matters to the user: the late
    # rank is named while it is still late, before it arrives (LATE_S after its step started). The lower one: not
    # before warn_after, less the half sampling interval to which a rank knows when its own wait began (the
    # sampler dates a stall at the midpoint of two readings; 2.97 s was measured once under CI load).
    assert WARN_S - SAMPLE_S / 2 <= delay < LATE_S, delay
    threads = {d["rank"]: d["watch_threads"] for d in lines if "watch_threads" in d}
    assert sorted(threads) == [0, 1], lines
    assert all(t.count("syncdoctor-watch-sampler") == 1 for t in threads.values()), threads


# the late rank must be named within a bound of seconds: another test process on the same two cores (make test's
# second stream) skewed it once into a stall of every rank (W104) in a clean-clone run
@pytest.mark.alone
def test_lightning_ddp_on_cpu_late_rank_is_named(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    out = subprocess.run([sys.executable, str(DATA / "lightning_late.py"), str(LATE_STEP), str(LATE_S)],
                         capture_output=True, text=True, timeout=300, env=_env(events), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    _late_rank_named_alone(out.stdout, events, "lightning")


@pytest.mark.alone  # the same bound as Lightning's, above
def test_accelerate_launch_late_rank_is_named(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port",
              "0", str(DATA / "accelerate_late.py"), str(LATE_STEP), str(LATE_S)]
    out = subprocess.run(launch, capture_output=True, text=True, timeout=300, env=_env(events), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    _late_rank_named_alone(out.stdout, events, "accelerate")
