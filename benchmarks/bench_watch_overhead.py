"""What watching costs a training job: step-time ratio watched/unwatched, side by side in the same processes.

Run: .venv/bin/python benchmarks/bench_watch_overhead.py [--pairs 120] [--steps 36] [--ddp-only] [--budget-s S]
     .venv/bin/python benchmarks/bench_watch_overhead.py --breakdown [--seconds 20]

1. A 4-rank CPU DDP job (gloo, loopback, ``nn.Sequential`` of two ``Linear(512, 512)``): in the same four
   processes, many short blocks alternate between unwatched and watched with the defaults
   (``syncdoctor.watch.start()`` ... ``stop()``: 1 s publishing, 10 Hz sampling, monitor on rank 0), the
   first mode of each pair alternating too (``--also-4hz`` adds a third mode sampling at 4 Hz). A block
   is ``--warmup`` steps that are not timed (the watcher's start-up: store connection, first record,
   monitor thread) and ``--steps`` timed steps. Two step times per block, from rank 0 (DDP keeps the
   ranks in step): the block's mean (its wall time / steps: what throughput sees, periodic costs
   included) and its median (robust to a stray slow step, blind to a cost that hits under half of
   the steps). Each pair gives one ratio watched/unwatched; the answer is the median of the pair ratios
   with a bootstrap 95% confidence interval of that median (resampling pairs), so it can be resolved
   against a target such as 1.005. The CPU time of the watcher's threads is read from their thread
   clocks (``pthread_getcpuclockid``) over the timed steps of the watched blocks.
2. The same on plain ``all_reduce`` calls of 1000 floats (no DDP), then the same calls in a separate job
   with ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` for comparison: DETAIL cannot be compared on DDP here because
   it crashes DDP on gloo (checked in step 3, which reports the exit code). ``--ddp-only`` skips 2 and 3.

``--breakdown`` instead runs the DDP job watched for ``--seconds`` with every part of the watcher wrapped in
a thread-CPU timer and prints, per rank, the CPU of each watcher thread and of each part (the wrappers add
a few microseconds per call: use it to see where the time goes, the ratio run for what it costs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WORKER = r'''
import collections, json, os, statistics, sys, time
from datetime import timedelta
import torch, torch.distributed as dist
from torch import nn
import syncdoctor.watch as watch

plan = json.loads(os.environ["PLAN"])
rank = int(os.environ["RANK"])
parts = collections.defaultdict(lambda: [0, 0])  # label -> [thread CPU ns, calls]

def instrument():
    """Wrap the watcher's parts in thread-CPU timers (breakdown mode only)."""
    from syncdoctor.watch import keys, monitor, publisher, recorder, runtime, sampler
    def wrap(owner, name, label):
        original = getattr(owner, name)
        def timed(*args, **kwargs):
            t0 = time.thread_time_ns()
            try:
                return original(*args, **kwargs)
            finally:
                entry = parts[label]; entry[0] += time.thread_time_ns() - t0; entry[1] += 1
        setattr(owner, name, timed)
    for name in ("_sample", "_mark", "_entered_from", "_check_flight_recorder", "_publish", "_poll_control",
                 "_watch_lease"):
        wrap(runtime.Watcher, name, "watcher." + name)
    wrap(publisher.Publisher, "record", "watcher._record")
    wrap(recorder.GroupDirectory, "refresh", "directory.refresh")
    wrap(recorder.GroupDirectory, "sequence_numbers", "directory.sequence_numbers")
    wrap(recorder.FlightRecorderSource, "readings", "flight_recorder.readings")
    wrap(recorder.FlightRecorderSource, "status", "flight_recorder.status (C++ read)")
    wrap(sampler.Sampler, "observe", "sampler.observe")
    wrap(sampler.Sampler, "mark_step", "sampler.mark_step")
    wrap(sampler.Sampler, "wanted_signatures", "sampler.wanted_signatures")
    wrap(publisher, "encode_record", "records.encode_record")
    wrap(keys.ScopedStore, "set", "store.set")
    wrap(keys.ScopedStore, "add", "store.add")
    wrap(keys.ScopedStore, "get_optional", "store.get_optional")
    wrap(monitor.Monitor, "cycle", "monitor.cycle")

if plan["kind"] == "breakdown":
    instrument()
dist.init_process_group("gloo", timeout=timedelta(seconds=120))
torch.manual_seed(0)
out = {"blocks": []}
if plan["kind"] in ("ddp", "breakdown"):
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

def watch_threads(watcher):
    if watcher is None:
        return []
    return list(watcher._threads) + ([watcher.monitor._thread] if watcher.monitor else [])

def thread_cpu(threads):
    """CPU seconds used so far by each thread, from its clock."""
    out = {}
    for thread in threads:
        try:
            out[thread.name] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except (OSError, TypeError):  # ended
            pass
    return out

if plan["kind"] == "breakdown":
    watcher = watch.start()
    for _ in range(40):
        one()
    parts.clear()
    threads = watch_threads(watcher)
    cpu0, wall0 = thread_cpu(threads), time.perf_counter()
    for _ in range(plan["steps"]):
        one()
    wall = time.perf_counter() - wall0
    cpu1 = thread_cpu(threads)
    taken = {k: list(v) for k, v in parts.items()}
    watcher.stop()
    mine = {"rank": rank, "steps_per_s": plan["steps"] / wall,
            "threads": {name: (cpu1[name] - cpu0.get(name, 0.0)) / wall for name in cpu1},
            "parts": {k: (ns / 1e9 / wall, calls / wall) for k, (ns, calls) in taken.items()}}
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    if rank == 0:
        print("RESULT " + json.dumps({"ranks": everyone}), flush=True)
    dist.destroy_process_group()
    sys.exit(0)

modes = plan.get("modes") or {"off": None}
names = list(modes)
began = time.monotonic()
for pair in range(plan["pairs"]):
    if plan.get("budget_s"):  # rank 0 decides for all (the ranks must run the same blocks)
        go = torch.tensor([int(time.monotonic() - began < plan["budget_s"])])
        dist.broadcast(go, 0)
        if not go.item():
            break
    shift = pair % len(names)
    order = names[shift:] + names[:shift]  # rotate which mode goes first
    for mode in order:
        dist.barrier()
        watcher = watch.start(**modes[mode]) if modes[mode] is not None else None
        for _ in range(plan["warmup"]):  # start-up (store connection, first record, monitor) is not timed
            one()
        threads = watch_threads(watcher)
        cpu0 = thread_cpu(threads)
        times = []
        wall0, process0 = time.perf_counter(), time.process_time()
        for _ in range(plan["steps"]):
            t0 = time.perf_counter(); one(); times.append(time.perf_counter() - t0)
        wall, process_cpu = time.perf_counter() - wall0, time.process_time() - process0
        cpu1 = thread_cpu(threads)
        share = sum(cpu1[name] - cpu0.get(name, 0.0) for name in cpu1) / wall
        if watcher is not None:
            watcher.stop()
        out["blocks"].append({"pair": pair, "mode": mode, "median_s": statistics.median(times),
                              "mean_s": wall / len(times), "watch_cpu_share": share,
                              "cpu_s": process_cpu / len(times)})
out["cpu_by_mode"] = {m: statistics.median(b["watch_cpu_share"] for b in out["blocks"] if b["mode"] == m)
                      for m in names}
everyone = [None] * dist.get_world_size()
dist.all_gather_object(everyone, out["cpu_by_mode"])
out["watch_cpu_share_by_rank"] = everyone
# the whole job's CPU per step, per block: every thread of every rank (training, gloo, watcher)
cpu_blocks = [None] * dist.get_world_size()
dist.all_gather_object(cpu_blocks, [b["cpu_s"] for b in out["blocks"]])
for index, block in enumerate(out["blocks"]):
    block["job_cpu_s"] = sum(blocks[index] for blocks in cpu_blocks)
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
        outputs = [proc.communicate(timeout=3600)[0] for proc in procs]
        codes = [proc.returncode for proc in procs]
    for line in outputs[0].splitlines():
        if line.startswith("RESULT "):
            return codes, json.loads(line[len("RESULT "):])
    sys.stderr.write(outputs[0][-2000:])
    return codes, None


def pair_ratios(result: dict, mode: str = "on", key: str = "mean_s") -> tuple[list[float], float, float]:
    """Ratios mode/off of each pair, and the median step time of each mode over the pairs."""
    by_pair: dict[int, dict[str, float]] = {}
    for block in result["blocks"]:
        by_pair.setdefault(block["pair"], {})[block["mode"]] = block[key]
    ratios = [p[mode] / p["off"] for p in by_pair.values() if mode in p and "off" in p]
    off = statistics.median(p["off"] for p in by_pair.values())
    on = statistics.median(p[mode] for p in by_pair.values() if mode in p)
    return ratios, off, on


def bootstrap_median_ci(values: list[float], rounds: int = 4000, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap confidence interval of the median of ``values``."""
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(rounds))
    return medians[int(0.025 * rounds)], medians[int(0.975 * rounds) - 1]


def describe(name: str, ratios: list[float], off: float, on: float, target: float | None = None) -> None:
    ordered = sorted(ratios)
    q1, q3 = ordered[len(ordered) // 4], ordered[(3 * len(ordered)) // 4]
    low, high = bootstrap_median_ci(ratios)
    verdict = ""
    if target is not None:
        verdict = ("; within target" if high <= target else "; above target" if low > target
                   else "; not resolved against target") + f" {target}"
    print(f"{name}: unwatched {1000 * off:.2f} ms, watched {1000 * on:.2f} ms per step; median of {len(ratios)} "
          f"pair ratios {statistics.median(ratios):.4f}, 95% CI {low:.4f}-{high:.4f} (IQR {q1:.4f}-{q3:.4f})"
          + verdict)


def _torch_version() -> str:
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:
        return "unknown"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def breakdown(seconds: float) -> None:
    steps = int(seconds * 35)
    codes, result = run_job({"kind": "breakdown", "steps": steps})
    if result is None:
        raise SystemExit(f"breakdown job failed: exit codes {codes}")
    for info in result["ranks"]:
        threads = ", ".join(f"{name.rsplit('-', 1)[-1]} {1e6 * share:.0f}" for name, share in info["threads"].items())
        print(f"rank {info['rank']}: {info['steps_per_s']:.1f} steps/s; thread CPU (µs per s): {threads}")
        for label, (share, calls) in sorted(info["parts"].items(), key=lambda item: -item[1][0]):
            per_call = 1e6 * share / calls if calls else 0.0
            print(f"    {label:38s} {1e6 * share:8.1f} µs/s {calls:7.1f} calls/s {per_call:8.1f} µs/call")
    print(f"load average after: {load_average()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=120, help="pairs of DDP blocks (default 120)")
    parser.add_argument("--steps", type=int, default=36, help="timed steps per block (default 36)")
    parser.add_argument("--warmup", type=int, default=12, help="untimed steps at the start of a block (default 12)")
    parser.add_argument("--plain-pairs", type=int, default=30, help="pairs of plain all_reduce blocks (default 30)")
    parser.add_argument("--ddp-only", action="store_true", help="skip the plain all_reduce and DETAIL parts")
    parser.add_argument("--also-4hz", action="store_true", help="a third mode: watched with 4 Hz sampling")
    parser.add_argument("--also-nice10", action="store_true",
                        help="another mode: watched with the watcher's threads at nice +10 (setting nice)")
    parser.add_argument("--budget-s", type=float, default=0.0,
                        help="stop starting DDP pairs after this many seconds (--pairs is then a maximum)")
    parser.add_argument("--target", type=float, default=1.005, help="ratio to resolve against (default 1.005)")
    parser.add_argument("--breakdown", action="store_true", help="where the watcher's CPU goes, per part")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the --breakdown run")
    args = parser.parse_args()
    if args.breakdown:
        breakdown(args.seconds)
        return
    print(f"load average before: {load_average()} ({os.cpu_count()} CPUs; torch {_torch_version()})")
    modes: dict[str, dict | None] = {"off": None, "on": {}}
    if args.also_4hz:
        modes["4hz"] = {"sample_interval_s": 0.25}
    if args.also_nice10:
        modes["nice10"] = {"nice": 10}
    codes, ddp = run_job({"kind": "ddp", "modes": modes, "pairs": args.pairs, "steps": args.steps,
                          "warmup": args.warmup, "budget_s": args.budget_s})
    if ddp is None:
        raise SystemExit(f"DDP job failed: exit codes {codes}")
    pairs = len({block["pair"] for block in ddp["blocks"]})
    print(f"4-rank DDP (2x Linear(512,512)), {pairs} pairs of blocks of {args.steps} timed steps "
          f"(+{args.warmup} untimed), watched (defaults)/unwatched:")
    describe("  block mean (throughput)", *pair_ratios(ddp, "on", "mean_s"), target=args.target)
    describe("  block median", *pair_ratios(ddp, "on", "median_s"), target=args.target)
    describe("  CPU of the whole job per step (every thread of the 4 ranks)", *pair_ratios(ddp, "on", "job_cpu_s"),
             target=args.target)
    if args.also_4hz:
        describe("  4 Hz sampling, block mean", *pair_ratios(ddp, "4hz", "mean_s"), target=args.target)
    if args.also_nice10:
        describe("  watcher at nice +10, block mean", *pair_ratios(ddp, "nice10", "mean_s"), target=args.target)
        describe("  watcher at nice +10, job CPU per step", *pair_ratios(ddp, "nice10", "job_cpu_s"),
                 target=args.target)
    cpu = ddp["watch_cpu_share_by_rank"]
    print("  CPU used by the watcher's threads per second of training (median over watched blocks): "
          + ", ".join(f"rank {r} {100 * shares['on']:.3f}%" for r, shares in enumerate(cpu))
          + " of one core (rank 0 runs the monitor); step marks on the training thread are not included"
          + (f"; rank 0 with 4 Hz sampling: {100 * cpu[0]['4hz']:.3f}%" if args.also_4hz else ""))
    if args.also_nice10:
        print("  the same with the watcher's threads at nice +10: "
              + ", ".join(f"rank {r} {100 * shares['nice10']:.3f}%" for r, shares in enumerate(cpu)))
    print(f"load average after the DDP part: {load_average()}")
    if args.ddp_only:
        return
    steps = args.steps * 5
    plan = {"kind": "plain", "modes": {"off": None, "on": {}}, "pairs": args.plain_pairs, "steps": steps,
            "warmup": args.warmup}
    codes, plain = run_job(plan)
    if plain is None:
        raise SystemExit(f"plain job failed: exit codes {codes}")
    ratios, off, on = pair_ratios(plain)
    describe("4-rank all_reduce of 1000 floats, watched/unwatched (block mean)", ratios, off, on)
    codes, detail = run_job(dict(plan, modes={"off": None}), {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    if detail is None:
        print(f"DETAIL plain job failed: exit codes {codes}")
    else:
        detail_s = statistics.median(b["mean_s"] for b in detail["blocks"])
        print(f"same all_reduce with TORCH_DISTRIBUTED_DEBUG=DETAIL (separate job): {1000 * detail_s:.2f} ms per "
              f"call = {detail_s / off:.2f}x unwatched, vs {on / off:.4f}x watched")
    codes, _ = run_job({"kind": "ddp", "pairs": 1, "steps": 10, "warmup": 0}, {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    print(f"DDP under TORCH_DISTRIBUTED_DEBUG=DETAIL on gloo: exit codes {codes}"
          + (" (negative: killed by a signal, -11 = SIGSEGV)" if any(c < 0 for c in codes) else ""))
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
