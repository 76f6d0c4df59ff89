"""The job's own store latency with and without the watcher's traffic, at N simulated ranks.

Run: .venv/bin/python benchmarks/bench_watch_store.py [--sizes 16384,65536] [--ranks-per-node 8] [--seconds 8]
     [--repeats 2]

A TCPStore served by its own process (as torchrun's agent serves it). A "job client" makes what a training
job asks of its store (``set``, ``get``, ``wait`` on a key that exists, one every 5 ms) and records each
latency. Side by side, in one run, for each size:

- without the watcher;
- with the watcher publishing per rank (``node_aggregation=False``): every rank sets its record and polls
  the control generation once a second;
- with node aggregation: every node leader sets its node's value (R records) twice a second, and polls
  the control generation (here twice as well: a little more than leaders do);

and, in both watcher phases, a real monitor (``syncdoctor.watch.monitor.Monitor``) reading every record
once a second. The publishers are simulated by two load processes, their requests spread evenly over each
second; the rate they reached is printed (on a small machine the per-rank load may fall short of its
target: the row says so). Latencies are medians and 90th percentiles over all job requests of a phase; the
phases run interleaved (none, node leaders, every rank, again), and the summary compares each mode's
median over all its phases with that of the phases without the watcher.
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import statistics
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from store_server import served_store

LOADERS = 2


def _client(port: int) -> Any:
    import torch.distributed as dist

    return dist.TCPStore("127.0.0.1", port, None, False, timeout=datetime.timedelta(seconds=120),
                         wait_for_workers=False)


def _load(port: int, keys: list[str], value: bytes, ctl_key: str, seconds: float, done: Any) -> None:
    """One load process: each of ``keys`` is set once a second (and the control generation polled), evenly
    spread over the second; counts the requests made."""
    client = _client(port)
    per_second = len(keys)
    start = time.perf_counter()
    made = 0
    while (elapsed := time.perf_counter() - start) < seconds:
        index = made // 2
        due = (index // per_second) + (index % per_second) / per_second
        if due > elapsed:
            time.sleep(min(due - elapsed, 0.01))
            continue
        if made % 2 == 0:
            client.set(keys[index % per_second], value)
        else:
            client.add(ctl_key, 0)
        made += 1
    done.put(made / (time.perf_counter() - start))


def _monitor(port: int, world: int, seconds: float, stop: threading.Event, cycles: list[float]) -> None:
    from syncdoctor.watch.config import WatchConfig
    from syncdoctor.watch.keys import JobKeys, ScopedStore
    from syncdoctor.watch.monitor import Monitor

    monitor = Monitor(ScopedStore(_client(port)), JobKeys("syncdoctor/v1", 0), WatchConfig(warn_after_s=10.0), world,
                      [], who="bench")
    while not stop.wait(max(0.0, 1.0 - (cycles[-1] if cycles else 0.0))):
        started = time.perf_counter()
        monitor.cycle()
        cycles.append(time.perf_counter() - started)


def _job(port: int, seconds: float) -> dict[str, list[float]]:
    client = _client(port)
    client.set("job/ready", b"1")
    out: dict[str, list[float]] = {"set": [], "get": [], "wait": []}
    end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < end:
        op = ("set", "get", "wait")[i % 3]
        started = time.perf_counter()
        if op == "set":
            client.set(f"job/key{i % 64}", b"x" * 64)
        elif op == "get":
            client.get("job/ready")
        else:
            client.wait(["job/ready"])
        out[op].append(time.perf_counter() - started)
        i += 1
        time.sleep(0.005)
    return out


def phase(port: int, world: int, mode: str, per_node: int, seconds: float) -> dict[str, Any]:
    from bench_watch_monitor import record

    from syncdoctor.watch.aggregate import pack_node
    from syncdoctor.watch.keys import JobKeys
    from syncdoctor.watch.records import encode_record

    keys = JobKeys("syncdoctor/v1", 0)
    loaders: list[multiprocessing.Process] = []
    context = multiprocessing.get_context("spawn")
    rates: Any = context.Queue()
    stop = threading.Event()
    cycles: list[float] = []
    monitor = None
    if mode != "none":
        setup = _client(port)
        one = encode_record(record(0, world, 1))
        if mode == "nodes":
            names = [keys.node(i) for i in range(-(-world // per_node))]
            value = pack_node([one] * per_node)
            for start in range(0, len(names), 1024):
                setup.multi_set(names[start:start + 1024], [value] * len(names[start:start + 1024]))
            setup.add(keys.nodes_count, len(names))
        else:
            names = [keys.rank(r) for r in range(world)]
            value = one
            for start in range(0, len(names), 1024):
                setup.multi_set(names[start:start + 1024], [value] * len(names[start:start + 1024]))
        # node leaders relay twice a second: each node value is set twice (with a control poll each, one more
        # than leaders make: a little more load than the real one)
        published = names * 2 if mode == "nodes" else names
        loaders = [context.Process(target=_load, args=(port, published[i::LOADERS], value, keys.ctl_gen, seconds,
                                                       rates)) for i in range(LOADERS)]
        for process in loaders:
            process.start()
        time.sleep(1.0)  # let the load reach its rate
        monitor = threading.Thread(target=_monitor, args=(port, world, seconds, stop, cycles), daemon=True)
        monitor.start()
        target = 2 * len(published)
    else:
        target = 0
    latencies = _job(port, seconds - 1.5 if mode != "none" else seconds)
    stop.set()
    if monitor is not None:
        monitor.join(30)
    reached = 0.0
    for process in loaders:
        process.join(60)
        reached += rates.get(timeout=10)
    return {"latencies": latencies, "target": target, "reached": reached,
            "monitor_ms": 1000 * statistics.median(cycles) if cycles else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="16384,65536")
    parser.add_argument("--ranks-per-node", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--repeats", type=int, default=2, help="rounds of the three phases, interleaved")
    args = parser.parse_args()
    print(f"job store requests (set/get/wait, one per 5 ms) with and without the watcher's traffic; "
          f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    print(f"{'ranks':>7} {'watcher':>22} {'watch req/s':>12} {'reached':>8} {'monitor':>8} | "
          f"{'p50 set':>8} {'p50 get':>8} {'p50 wait':>8} {'p90 all':>8} |")
    for world in (int(x) for x in args.sizes.split(",")):
        pooled: dict[str, list[float]] = {}
        labels = {"none": "none", "nodes": f"node leaders ({args.ranks_per_node}/node)", "ranks": "every rank"}
        for _ in range(args.repeats):  # interleaved, so that a drift of the machine touches every mode alike
            for mode in ("none", "nodes", "ranks"):
                with served_store() as port:  # a fresh store per phase
                    result = phase(port, world, mode, args.ranks_per_node, args.seconds)
                lat = result["latencies"]
                p50 = {op: 1e6 * statistics.median(values) for op, values in lat.items()}
                every = sorted(v for values in lat.values() for v in values)
                pooled.setdefault(mode, []).extend(every)
                p90 = 1e6 * every[int(0.9 * (len(every) - 1))]
                short = "" if not result["target"] or result["reached"] >= 0.95 * result["target"] else " (short)"
                print(f"{world:>7} {labels[mode]:>22} {result['target']:>12.0f} {result['reached']:>8.0f} "
                      f"{result['monitor_ms']:>6.0f}ms | {p50['set']:>6.0f}us {p50['get']:>6.0f}us "
                      f"{p50['wait']:>6.0f}us {p90:>6.0f}us |{short}")
        base = statistics.median(pooled["none"])
        for mode in ("nodes", "ranks"):
            print(f"{world:>7} {labels[mode]}: job request p50 {1e6 * statistics.median(pooled[mode]):.0f} us vs "
                  f"{1e6 * base:.0f} us without the watcher = {statistics.median(pooled[mode]) / base:.2f}x "
                  f"(all {len(pooled[mode])} requests of its {args.repeats} phases)")


if __name__ == "__main__":
    main()
