"""Detection latency: from the last punctual rank's arrival at the collective to syncdoctor's event.

Run: .venv/bin/python benchmarks/bench_watch_latency.py [--episodes 10] [--warn 3] [--late 5]

One torchrun job of 4 ranks on two lab hosts (network namespaces when root, else labels on loopback) runs
the workload with ``--watch``; rank 3 (host1) is late by ``--late`` seconds in load_batch at ``--episodes``
steps, 20 steps apart. For each episode, latency = time of the W101 event (monitor's clock) minus the
latest ``ready`` time of ranks 0-2 at that step (the moment the last punctual rank reached the gradient
all_reduce, from the workload's step lines). Target: the warning threshold + 2 s. Lab hosts share one
kernel clock, so the two times compare directly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from syncdoctor.testing.lab import Lab, lab_available
from syncdoctor.testing.workload import parse_step_lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--warn", type=float, default=3.0)
    parser.add_argument("--late", type=float, default=5.0)
    args = parser.parse_args()
    steps = [10 + 20 * i for i in range(args.episodes)]
    faults = [{"rank": 3, "kind": "late", "at": s, "seconds": args.late, "where": "load_batch"} for s in steps]
    run_dir = Path(tempfile.mkdtemp(prefix="bench-watch-latency-"))
    events_file = run_dir / "events.jsonl"
    env = {"SYNCDOCTOR_WATCH": "1", "SYNCDOCTOR_WATCH_WARN_AFTER": str(args.warn),
           "SYNCDOCTOR_WATCH_SUSPECT_AFTER": "1", "SYNCDOCTOR_WATCH_EVENTS_FILE": str(events_file)}
    available, reason = lab_available()
    started = time.monotonic()
    with Lab(hosts=2, mode="auto") as lab:
        print(f"lab mode: {lab.mode}" + ("" if available else f" ({reason})"))
        job = lab.torchrun(["-m", "syncdoctor.testing.workload", "--steps", str(steps[-1] + 5), "--grad-sync",
                            "manual", "--step-sleep", "0.03", "--fault", json.dumps(faults)],
                           procs_per_host=2, env=env, run_dir=run_dir / "job")
        result = job.wait(timeout=120 + args.episodes * (args.late + 10))
    if not result.ok:
        raise SystemExit(result.summary())
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    warnings = [e for e in events if e["code"] == "W101" and e["status"] == "warning"]
    ready: dict[int, float] = {}
    for rank in (0, 1, 2):
        for line in parse_step_lines(result.rank_logs[rank].read_text()):
            if line.step in steps:
                ready[line.step] = max(ready.get(line.step, 0.0), line.ready)
    latencies = []
    for step in steps:
        after = [e for e in warnings if e["at"] >= ready[step] and e["ranks"] == [3]]
        if not after:
            print(f"step {step}: no event")
            continue
        latencies.append(min(e["at"] for e in after) - ready[step])
    other = [e for e in events if e["code"] != "W101"]
    print(f"{len(latencies)}/{len(steps)} late episodes named (rank 3, host1); other events: {len(other)}")
    print("latencies (s): " + " ".join(f"{x:.2f}" for x in latencies))
    print(f"median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s; threshold {args.warn:.1f} s, "
          f"target <= {args.warn + 2:.1f} s; max - threshold = {max(latencies) - args.warn:.2f} s "
          f"(job took {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
