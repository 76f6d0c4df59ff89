"""Static or learned thresholds (``warn_after_s="auto"``), side by side on the same lab jobs: false alarms on
healthy jobs and the time to name a late rank.

Run (root, for the network-namespace lab; labels on loopback otherwise):
    .venv/bin/python benchmarks/bench_watch_thresholds.py [--quick]

Four ranks on two lab hosts, gloo, the lab workload marking its steps. Each job runs twice, once with the
static defaults (warn 10 s, confirm 60 s) and once with ``auto`` for both:

* ``fast-clean``: 0.06 s steps, 400 steps, nothing wrong: events are false alarms;
* ``fast-late``: the same with rank 3 late by 15 s (asleep in load_batch) at step 200 and 300: the time from
  the last punctual rank's arrival to the W101 warning;
* ``slow-imbalanced``: 20 s steps in which rank 0 sleeps 12 s more than the others every step (the others
  wait 12 s in each all_reduce: a slow data source, not a hang), 6 steps: events are false alarms;
* ``slow-late``: the same job where rank 3 also sleeps 90 s at step 5 (a real late rank): the time to name it.

Prints one line per job and setting, then the ratios. docs/performance.md ("Auto thresholds") records a run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from syncdoctor.testing.lab import Lab, lab_available
from syncdoctor.testing.workload import parse_step_lines

SETTINGS = {"static": {}, "auto": {"SYNCDOCTOR_WATCH_WARN_AFTER": "auto", "SYNCDOCTOR_WATCH_CONFIRM_AFTER": "auto"}}


def _job(lab: Lab, run_dir: Path, args: list[str], faults: list[dict[str, Any]], extra: dict[str, str],
         timeout: float) -> tuple[list[dict[str, Any]], Any]:
    events_file = run_dir / "events.jsonl"
    env = {"SYNCDOCTOR_WATCH": "1", "SYNCDOCTOR_WATCH_EVENTS_FILE": str(events_file), **extra}
    job = lab.torchrun(["-m", "syncdoctor.testing.workload", "--grad-sync", "manual", "--log-ranks", "all",
                        "--collective-timeout", "600", *args, "--fault", json.dumps(faults)],
                       procs_per_host=2, env=env, run_dir=run_dir / "job")
    result = job.wait(timeout=timeout)
    events = [json.loads(line) for line in events_file.read_text().splitlines()] if events_file.exists() else []
    return events, result


def _latency(events: list[dict[str, Any]], result: Any, step: int) -> float | None:
    ready = max(s.ready for r in (0, 1, 2) for s in parse_step_lines(result.rank_logs[r].read_text()) if s.step == step)
    named = [e["at"] - ready for e in events if e["code"] == "W101" and e["status"] == "warning" and e["ranks"] == [3]
             and e["at"] >= ready]
    return min(named) if named else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run, not the measurement)")
    args = parser.parse_args()
    fast_steps = 160 if args.quick else 400
    slow_steps = 4 if args.quick else 6
    jobs = {
        "fast-clean": (["--steps", str(fast_steps), "--step-sleep", "0.03"], []),
        "fast-late": (["--steps", str(fast_steps), "--step-sleep", "0.03"],
                      [{"rank": 3, "kind": "late", "at": fast_steps // 2, "seconds": 15},
                       {"rank": 3, "kind": "late", "at": 3 * fast_steps // 4, "seconds": 15}]),
        "slow-imbalanced": (["--steps", str(slow_steps), "--step-sleep", "8"],
                            [{"rank": 0, "kind": "slow", "at": 0, "seconds": 12, "where": "load_batch"}]),
        "slow-late": (["--steps", str(slow_steps), "--step-sleep", "8"],
                      [{"rank": 0, "kind": "slow", "at": 0, "seconds": 12, "where": "load_batch"},
                       {"rank": 3, "kind": "late", "at": slow_steps - 1, "seconds": 90}]),
    }
    available, reason = lab_available()
    results: dict[tuple[str, str], dict[str, Any]] = {}
    root = Path(tempfile.mkdtemp(prefix="bench-watch-thresholds-"))
    with Lab(hosts=2, mode="auto") as lab:
        print(f"lab mode: {lab.mode}" + ("" if available else f" ({reason})"))
        for name, (job_args, faults) in jobs.items():
            for setting, extra in SETTINGS.items():
                started = time.monotonic()
                events, result = _job(lab, root / f"{name}-{setting}", job_args, faults, extra, timeout=900)
                if not result.ok:
                    raise SystemExit(f"{name} {setting}: the job failed:\n{result.summary()}")
                alarms = [e for e in events if e["status"] in ("warning", "confirmed") and e["code"] != "W107"]
                row: dict[str, Any] = {"events": len(events), "alarms": len(alarms), "seconds": time.monotonic() - started}
                if name.endswith("late"):
                    steps = [f["at"] for f in faults if f["kind"] == "late"]
                    row["latencies"] = [_latency(events, result, step) for step in steps]
                    row["alarms"] -= sum(1 for latency in row["latencies"] if latency is not None)
                learned = [e["detail"]["thresholds"] for e in events if "thresholds" in e.get("detail", {})]
                row["thresholds"] = learned[-1]["how"] if learned else ("static 10 s / 60 s" if setting == "static" else "-")
                results[(name, setting)] = row
                latency = ", ".join("none" if v is None else f"{v:.2f} s" for v in row.get("latencies", ()))
                print(f"{name:16} {setting:6}: {row['alarms']} false alarm(s), {row['events']} event(s)"
                      + (f", late rank named after {latency}" if latency else "") + f" ({row['seconds']:.0f} s); "
                      f"{row['thresholds']}")
    for name in jobs:
        static, auto = results[(name, "static")], results[(name, "auto")]
        if name.endswith("late"):
            pairs = [(s, a) for s, a in zip(static["latencies"], auto["latencies"], strict=True) if s and a]
            if pairs:
                ratio = sum(a for _, a in pairs) / sum(s for s, _ in pairs)
                print(f"{name}: time to name, auto/static = {ratio:.2f}")
        print(f"{name}: false alarms static {static['alarms']}, auto {auto['alarms']}")


if __name__ == "__main__":
    main()
