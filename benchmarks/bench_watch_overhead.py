"""What watching costs a training job: step-time ratio watched/unwatched, side by side in the same processes.

Run: .venv/bin/python benchmarks/bench_watch_overhead.py [--pairs 12] [--steps 60]

1. A 4-rank CPU DDP job (gloo, loopback, ``nn.Sequential`` of two ``Linear(512, 512)``): in the same four
   processes, blocks of ``--steps`` steps rotate between unwatched, watched with the defaults
   (``syncdoctor.watch.start()`` ... ``stop()``: 1 s publishing, 10 Hz sampling, monitor on rank 0) and
   watched with 4 Hz sampling, the first mode of each round rotating too.
   Each block's step time is the median of rank 0's steps after a warm-up; each pair gives one ratio;
   the result is the median of the pair ratios. The CPU time of the watcher's own threads is read from
   their thread clocks (``pthread_getcpuclockid``), a direct, low-noise measure of what watching costs.
2. The same on plain ``all_reduce`` calls of 1000 floats (no DDP), then the same calls in a separate job
   with ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` for comparison: DETAIL cannot be compared on DDP here because
   it crashes DDP on gloo (checked in step 3, which reports the exit code).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WORKER = r'''
import json, os, statistics, sys, time
from datetime import timedelta
import torch, torch.distributed as dist
from torch import nn
import syncdoctor.watch as watch

plan = json.loads(os.environ["PLAN"])
rank = int(os.environ["RANK"])
dist.init_process_group("gloo", timeout=timedelta(seconds=120))
torch.manual_seed(0)
out = {"blocks": []}
if plan["kind"] == "ddp":
    from torch.nn.parallel import DistributedDataParallel
    model = DistributedDataParallel(nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512)))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(32, 512)
    def one():
        model(x).pow(2).mean().backward(); opt.step(); opt.zero_grad()
else:
    t = torch.ones(1000)
    def one():
        dist.all_reduce(t)
for _ in range(10):
    one()

def watch_cpu(watcher):
    """CPU seconds used so far by the watcher's threads (sampler, publisher, monitor), from their clocks."""
    if watcher is None:
        return 0.0
    total = 0.0
    threads = list(watcher._threads) + ([watcher.monitor._thread] if watcher.monitor else [])
    for thread in threads:
        try:
            total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except (OSError, TypeError):
            pass
    return total
modes = plan.get("modes") or {"off": None}
names = list(modes)
for pair in range(plan["pairs"]):
    shift = pair % len(names)
    order = names[shift:] + names[:shift]  # rotate which mode goes first
    for mode in order:
        dist.barrier()
        watcher = watch.start(**modes[mode]) if modes[mode] is not None else None
        times = []
        cpu_from = wall_from = None
        for i in range(plan["steps"]):
            if i == plan["steps"] // 3:  # steady state: start-up (store connection, first records) is over
                cpu_from, wall_from = watch_cpu(watcher), time.perf_counter()
            t0 = time.perf_counter(); one(); times.append(time.perf_counter() - t0)
        share = (watch_cpu(watcher) - cpu_from) / (time.perf_counter() - wall_from)
        if watcher is not None:
            watcher.stop()
        out["blocks"].append({"pair": pair, "mode": mode, "median_s": statistics.median(times[5:]),
                              "watch_cpu_share": share})
shares = [b["watch_cpu_share"] for b in out["blocks"] if b["mode"] == "on"]
out["cpu_by_mode"] = {m: statistics.median(b["watch_cpu_share"] for b in out["blocks"] if b["mode"] == m)
                      for m in names}
everyone = [None] * dist.get_world_size()
dist.all_gather_object(everyone, statistics.median(shares) if shares else 0.0)
out["watch_cpu_share_by_rank"] = everyone
if rank == 0:
    print("RESULT " + json.dumps(out), flush=True)
dist.destroy_process_group()
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_job(plan: dict, env_extra: dict[str, str] | None = None, world: int = 4) -> tuple[list[int], dict | None]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "worker.py"
        script.write_text(WORKER)
        port = str(_free_port())
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port, OMP_NUM_THREADS="1", PLAN=json.dumps(plan),
                       **(env_extra or {}))
            procs.append(subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        outputs = [proc.communicate(timeout=900)[0] for proc in procs]
        codes = [proc.returncode for proc in procs]
    for line in outputs[0].splitlines():
        if line.startswith("RESULT "):
            return codes, json.loads(line[len("RESULT "):])
    return codes, None


def pair_ratios(result: dict, mode: str = "on") -> tuple[list[float], float, float]:
    by_pair: dict[int, dict[str, float]] = {}
    for block in result["blocks"]:
        by_pair.setdefault(block["pair"], {})[block["mode"]] = block["median_s"]
    ratios = [p[mode] / p["off"] for p in by_pair.values() if mode in p and "off" in p]
    off = statistics.median(p["off"] for p in by_pair.values())
    on = statistics.median(p[mode] for p in by_pair.values() if mode in p)
    return ratios, off, on


def describe(name: str, ratios: list[float], off: float, on: float) -> None:
    ratios = sorted(ratios)
    q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    print(f"{name}: unwatched {1000 * off:.2f} ms, watched {1000 * on:.2f} ms per step; "
          f"median of {len(ratios)} pair ratios {statistics.median(ratios):.4f} (IQR {q1:.4f}-{q3:.4f})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    modes = {"off": None, "on": {}, "slow": {"sample_interval_s": 0.25}}
    codes, ddp = run_job({"kind": "ddp", "modes": modes, "pairs": args.pairs, "steps": args.steps})
    if ddp is None:
        raise SystemExit(f"DDP job failed: exit codes {codes}")
    describe("4-rank DDP (2x Linear(512,512)), watched (defaults)/unwatched", *pair_ratios(ddp, "on"))
    describe("4-rank DDP, watched with 4 Hz sampling/unwatched", *pair_ratios(ddp, "slow"))
    cpu = ddp["watch_cpu_share_by_rank"]
    print("  CPU used by the watcher's threads per second of training (defaults, median over watched blocks): "
          + ", ".join(f"rank {r} {100 * share:.3f}%" for r, share in enumerate(cpu)) + " of one core (rank 0 runs the monitor)"
          + f"; rank 0 with 4 Hz sampling: {100 * ddp['cpu_by_mode']['slow']:.3f}%")
    steps = args.steps * 5
    codes, plain = run_job({"kind": "plain", "modes": {"off": None, "on": {}}, "pairs": args.pairs, "steps": steps})
    if plain is None:
        raise SystemExit(f"plain job failed: exit codes {codes}")
    ratios, off, on = pair_ratios(plain)
    describe("4-rank all_reduce of 1000 floats, watched/unwatched", ratios, off, on)
    codes, detail = run_job({"kind": "plain", "pairs": args.pairs, "steps": steps},
                            {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    if detail is None:
        print(f"DETAIL plain job failed: exit codes {codes}")
    else:
        detail_s = statistics.median(b["median_s"] for b in detail["blocks"])
        print(f"same all_reduce with TORCH_DISTRIBUTED_DEBUG=DETAIL (separate job): {1000 * detail_s:.2f} ms per "
              f"call = {detail_s / off:.2f}x unwatched, vs {on / off:.4f}x watched")
    codes, _ = run_job({"kind": "ddp", "pairs": 1, "steps": 10}, {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    print(f"DDP under TORCH_DISTRIBUTED_DEBUG=DETAIL on gloo: exit codes {codes}"
          + (" (negative: killed by a signal, -11 = SIGSEGV)" if any(c < 0 for c in codes) else ""))


if __name__ == "__main__":
    main()
