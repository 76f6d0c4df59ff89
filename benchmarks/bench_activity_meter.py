"""The cost of one activity sample (the busy-or-stuck meter), with and without its run-queue read, side by side.

Run:
    .venv/bin/python benchmarks/bench_activity_meter.py [--samples 20000] [--rounds 15]

The watcher's publisher thread samples the main thread once per publication (``ActivityMeter.sample``: its CPU
clock, ``/proc/self/task/<tid>/io``, ``/proc/self/task/<tid>/schedstat`` since the run-queue wait was added, and a
walk of its frames). Here the main thread sits in a 30-frame-deep call while a second thread samples it, in rounds
that alternate a meter that reads schedstat and one that does not (the order alternating too); per round the mean
microseconds of one sample; the median of the per-round ratios. Nothing runs on the main thread meanwhile but a
wait: what is measured is the watcher's cost, which the training thread does not pay.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from syncdoctor.watch.local import ActivityMeter


def _deep(depth: int, ready: threading.Event, done: threading.Event) -> None:
    if depth:
        _deep(depth - 1, ready, done)
        return
    ready.set()
    done.wait()


def _per_sample_us(meter: ActivityMeter, samples: int) -> float:
    start = time.perf_counter()
    for n in range(samples):
        meter.sample(float(n))
    return (time.perf_counter() - start) / samples * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    ready, done = threading.Event(), threading.Event()
    results: dict[str, list[float]] = {"with": [], "without": []}

    def sampler() -> None:
        ready.wait()
        with_runq = ActivityMeter()
        without = ActivityMeter()
        without._sched_path = None  # the meter as it was before the run-queue read
        if with_runq._sched_path is None or with_runq._runq() is None:
            print("schedstat is not readable here: both meters are the same")
        for index in range(args.rounds):
            order = [("with", with_runq), ("without", without)]
            for name, meter in order if index % 2 == 0 else reversed(order):
                results[name].append(_per_sample_us(meter, args.samples))
        done.set()

    thread = threading.Thread(target=sampler)
    thread.start()
    _deep(30, ready, done)
    thread.join()
    ratios = [w / wo for w, wo in zip(results["with"], results["without"], strict=True)]
    print(f"{args.rounds} rounds of {args.samples} samples of a main thread 30 frames deep, alternating:")
    print(f"  one sample without the run-queue read: {statistics.median(results['without']):.1f} us (median of rounds)")
    print(f"  one sample with it:                    {statistics.median(results['with']):.1f} us (median of rounds)")
    print(f"  ratio with/without: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
    extra = statistics.median(results["with"]) - statistics.median(results["without"])
    print(f"  the read adds {extra:.1f} us per sample: {extra:.1f} us of the watcher's thread per second at one "
          "publication a second")


if __name__ == "__main__":
    main()
