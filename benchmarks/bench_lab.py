"""What the lab costs: building a lab, starting a 2-host x 2-rank job, and how exact its throttling is.

Measures side by side in one run (needs root and iproute2):

* the floor: one ``python -c "import torch"`` (every agent and every rank pays it);
* building and tearing down a 2-host lab;
* a 2x2 torchrun job of the workload (``--steps 3``), from the call to :meth:`Lab.torchrun` until every rank
  is past ``init_process_group`` and until the first step has completed on every rank, for DDP and for
  ``--grad-sync manual`` (no DDP, no torch._dynamo import), static and c10d rendezvous; the variants take
  turns so a busy machine slows them alike;
* the CPU seconds the whole job burns (agents and ranks): on 2 cores the start cannot be faster than half
  of it, whatever else runs;
* TCP throughput through a throttled link in both directions, as a fraction of the set rate.

    .venv/bin/python benchmarks/bench_lab.py [--runs 3] [--rates 40mbit,200mbit]
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from syncdoctor.testing.faults_spec import parse_rate
from syncdoctor.testing.lab import Lab, lab_available
from syncdoctor.testing.workload import parse_step_lines

VARIANTS = {
    "ddp, static": (["--grad-sync", "ddp"], "static"),
    "manual, static": (["--grad-sync", "manual"], "static"),
    "ddp, c10d": (["--grad-sync", "ddp"], "c10d"),
}


def import_torch_seconds() -> tuple[float, float]:
    """(wall, CPU) seconds of one ``python -c "import torch"``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def lab_build_seconds() -> tuple[float, float]:
    start = time.perf_counter()
    with Lab(2, mode="netns"):
        built = time.perf_counter()
    return built - start, time.perf_counter() - built


def job_start(lab: Lab, extra: list[str], rdzv: str) -> tuple[float, float, float, float]:
    """(all ranks initialised, first step done everywhere, job exited) in seconds after the job start, and
    the CPU seconds of the whole job (agents and ranks, reaped children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as run_dir:
        job = lab.torchrun(["-m", "syncdoctor.testing.workload", "--steps", "3", *extra],
                           procs_per_host=2, run_dir=Path(run_dir), rdzv=rdzv)
        result = job.wait(timeout=300)
        ended = time.time()
        if not result.ok:
            raise SystemExit(f"job failed:\n{result.summary()}")
        text = "".join(result.output(rank) for rank in result.rank_logs)
        inits = [float(value) for value in re.findall(r"start rank=\d+ .* time=([\d.]+)", text)]
        first = [line.end for line in parse_step_lines(text) if line.step == 0]
        t0 = result.started_wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return max(inits) - t0, max(first) - t0, ended - t0, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rates", default="40mbit,200mbit")
    args = parser.parse_args()
    available, reason = lab_available()
    if not available:
        raise SystemExit(f"bench_lab needs root and iproute2: {reason}")

    imports = [import_torch_seconds() for _ in range(args.runs)]
    floor = statistics.median(wall for wall, _ in imports)
    builds = [lab_build_seconds() for _ in range(5)]
    print(f"python -c 'import torch'              median {floor:6.2f} s wall, "
          f"{statistics.median(cpu for _, cpu in imports):5.2f} s CPU (every agent and rank pays it)")
    print(f"lab of 2 hosts: build                 median {statistics.median(b for b, _ in builds) * 1e3:6.0f} ms, "
          f"teardown {statistics.median(t for _, t in builds) * 1e3:4.0f} ms")

    samples: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in VARIANTS}
    with Lab(2, mode="netns") as lab:
        for _ in range(args.runs):
            for name, (extra, rdzv) in VARIANTS.items():
                samples[name].append(job_start(lab, extra, rdzv))
        print(f"2 hosts x 2 ranks, workload --steps 3, medians of {args.runs} (seconds after Lab.torchrun):")
        for name, values in samples.items():
            init, first, end, cpu = (statistics.median(v[i] for v in values) for i in range(4))
            print(f"  {name:<15} ranks initialised {init:5.2f}  first step done {first:5.2f}  job exited {end:5.2f}"
                  f"  job CPU {cpu:5.1f} s  first step / import-torch {first / floor:4.1f}x")

        for rate in args.rates.split(","):
            lab.throttle("host1", rate)
            out = lab.tcp_throughput("host1", "host0", seconds=2.0)
            into = lab.tcp_throughput("host0", "host1", seconds=2.0)
            bits = parse_rate(rate)
            print(f"throttle {rate:>8}: host1->host0 {out / 1e6:7.2f} Mbit/s ({out / bits:5.1%}), "
                  f"host0->host1 {into / 1e6:7.2f} Mbit/s ({into / bits:5.1%})")
        lab.unthrottle("host1")
        free = lab.tcp_throughput("host1", "host0", seconds=1.0)
        print(f"unthrottled       : host1->host0 {free / 1e6:7.0f} Mbit/s")


if __name__ == "__main__":
    main()
