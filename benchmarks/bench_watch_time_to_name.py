"""Time to name a late rank at N simulated ranks, through a real TCPStore, with node aggregation.

Run: .venv/bin/python benchmarks/bench_watch_time_to_name.py [--sizes 16384,65536] [--ranks-per-node 8]
     [--warn 3]

A TCPStore served by its own process. N ranks, R per node, publish node values (as node leaders do) once
a second while they train; at T0 every rank but rank 1 enters the next all_reduce and waits there, rank 1
does not, and every rank keeps publishing once a second (heartbeats move, the waiting ranks' stall grows).
The monitor is a real ``Monitor`` (warn_after_s=W; stacks off: no simulated rank answers a stack request,
and the detector would wait two more intervals for one) that cycles right after each second's publication.

Job time: this one process stands in for N/R node leaders that publish in parallel, and cannot write 65k
records a second (encoding them is done beforehand, and writing them still takes seconds). So the monitor
runs on a job clock (its monotonic and wall clocks) that stands at T0 + k when round k has been written, and
advances with real time only while the monitor works: the store reads, the screen and the detector are
measured, the stand-in's writing is not. Printed: when the W101 event naming rank 1 came, in job time after
T0, against W + 1 s (the issue's bound; a monitor out of phase with the publications adds up to an interval
to any monitor), the monitor's cycle times on the way (healthy, full), and how far behind real time the
stand-in's writing fell.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

from store_server import served_store

_PUBLISHED = 28  # offset of the publication time in a record's header (after magic, rank, world, pid, heartbeat)


def run(world: int, per_node: int, warn: float) -> dict[str, object]:
    import torch.distributed as dist
    from bench_watch_monitor import SIG

    from syncdoctor.watch.aggregate import pack_node
    from syncdoctor.watch.config import WatchConfig
    from syncdoctor.watch.keys import JobKeys, ScopedStore
    from syncdoctor.watch.monitor import Monitor
    from syncdoctor.watch.records import GroupProgress, RankRecord, encode_record

    with served_store() as port:
        client = dist.TCPStore("127.0.0.1", port, None, False, timeout=datetime.timedelta(seconds=120),
                               wait_for_workers=False)
        keys = JobKeys("syncdoctor/v1", 0)
        nodes = [keys.node(i) for i in range(-(-world // per_node))]
        client.set(keys.group("0"), f"0-{world - 1}")
        client.add(keys.nodes_count, len(nodes))

        def records(beat: int, stall: float | None) -> list[bytes]:
            out = []
            for rank in range(world):
                if stall is not None and rank != 1:
                    group = GroupProgress("0", 101, 100, stall, SIG, 101)
                else:
                    group = GroupProgress("0", 100, 100)
                out.append(encode_record(RankRecord(
                    rank=rank, world_size=world, host=f"node{rank // per_node:05d}", node=rank // per_node,
                    pid=1000 + rank, local_rank=rank % per_node, heartbeat=beat, step=50, step_age_s=0.1,
                    quiet_s=stall or 0.0, groups={"0": group}, published=0.0)))
            return out

        def write(encoded: list[bytes], published: float) -> None:
            stamp = struct.pack("<d", published)  # the header's publication time, set as it is written
            stamped = [raw[:_PUBLISHED] + stamp + raw[_PUBLISHED + 8:] for raw in encoded]
            blobs = [pack_node(stamped[i:i + per_node]) for i in range(0, world, per_node)]
            for start in range(0, len(blobs), 1024):
                client.multi_set(nodes[start:start + 1024], blobs[start:start + 1024])

        # the job clock: at job second `at`, plus the real time since the monitor's cycle began
        at, began = [-4.0], [time.perf_counter()]
        wall0 = time.time()

        def clock() -> float:
            return 1000.0 + at[0] + (time.perf_counter() - began[0])

        def wall() -> float:
            return wall0 + at[0] + (time.perf_counter() - began[0])

        monitor = Monitor(ScopedStore(client), keys, WatchConfig(interval_s=1.0, warn_after_s=warn, stacks=False,
                                                                 confirm_after_s=60.0, dead_after_s=30.0), world, [],
                          who="bench", clock=clock, wall_clock=wall)
        healthy: list[float] = []
        lag: list[float] = []

        def one_round(second: float, encoded: list[bytes]) -> tuple[list, float]:
            started = time.perf_counter()
            write(encoded, wall0 + second)
            client.get(keys.group("0"))  # a round trip: the store has applied the writes
            lag.append(time.perf_counter() - started)
            at[0], began[0] = second, time.perf_counter()
            events = monitor.cycle()
            return events, time.perf_counter() - began[0]

        for beat in range(1, 4):  # training: records move, the monitor's healthy cycles (the first reads tables)
            _events, took = one_round(beat - 4.0, records(beat, None))
            if beat > 1:
                healthy.append(took)
        full: list[float] = []
        named = None
        for k in range(int(warn) + 6):  # each second after T0
            events, took = one_round(float(k), records(10 + k, float(k)))
            (full if monitor.last_path == "full" else healthy).append(took)
            if any(e.code == "W101" and e.ranks == (1,) for e in events):
                named = k + took
                break
        return {"named": named, "healthy_ms": 1000 * statistics.median(healthy),
                "full_ms": 1000 * statistics.median(full) if full else 0.0, "full_cycles": len(full),
                "lag_s": statistics.median(lag)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="16384,65536")
    parser.add_argument("--ranks-per-node", type=int, default=8)
    parser.add_argument("--warn", type=float, default=3.0)
    args = parser.parse_args()
    print(f"time to name a late rank; node values of {args.ranks_per_node} ranks; warn_after {args.warn:g} s; "
          f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    print(f"{'ranks':>7} {'named after':>12} {'bound':>7} {'healthy':>9} {'full':>9} {'full cycles':>12} "
          f"{'writing a round':>16}")
    for world in (int(x) for x in args.sizes.split(",")):
        result = run(world, args.ranks_per_node, args.warn)
        named = result["named"]
        text = f"{named:>10.2f} s" if isinstance(named, float) else f"{'never':>12}"
        print(f"{world:>7} {text} {args.warn + 1:>5.1f} s {result['healthy_ms']:>7.0f}ms {result['full_ms']:>7.0f}ms "
              f"{result['full_cycles']:>12} {result['lag_s']:>14.2f} s")


if __name__ == "__main__":
    main()
