"""What a native stack costs the rank: py-spy dump --native against this process (torch loaded), from a
watcher-like thread, while the main thread trains (a loop of small matrix products).

Run: .venv/bin/python benchmarks/bench_native_stack.py [--captures 5]

Prints, side by side in one run: the capture's duration, and the longest gap between two iterations of the
main thread's loop with and without a capture running (the pause py-spy imposes while it unwinds), and the
loop's throughput during captures relative to without.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import torch

from syncdoctor.watch import native


def loop(seconds: float, a: torch.Tensor) -> tuple[int, float]:
    """Iterations of the main thread in ``seconds`` and its longest gap between iterations."""
    end = time.perf_counter() + seconds
    last = time.perf_counter()
    count, gap = 0, 0.0
    while (now := time.perf_counter()) < end:
        gap = max(gap, now - last)
        last = now
        a @ a
        count += 1
    return count, gap


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--captures", type=int, default=5)
    args = parser.parse_args()
    if native.find_pyspy() is None:
        raise SystemExit("py-spy is not installed: pip install 'syncdoctor[stacks]'")
    torch.set_num_threads(1)
    a = torch.randn(64, 64)
    loop(0.5, a)  # warm up
    base_count, base_gap = loop(2.0, a)
    took: list[float] = []
    notes: list[str] = []

    def capture() -> None:
        for _ in range(args.captures):
            start = time.perf_counter()
            _frames, note = native.capture(os.getpid(), threading.main_thread().native_id)
            took.append(time.perf_counter() - start)
            notes.append(note)
            time.sleep(0.2)

    thread = threading.Thread(target=capture)
    started = time.perf_counter()
    thread.start()
    count, gap = 0, 0.0
    while thread.is_alive():
        n, g = loop(0.25, a)
        count, gap = count + n, max(gap, g)
    span = time.perf_counter() - started
    print(f"captures: {len(took)}, notes: {sorted(set(notes))}")
    print(f"capture time: median {statistics.median(took) * 1000:.0f} ms, max {max(took) * 1000:.0f} ms")
    print(f"longest main-thread gap: {gap * 1000:.1f} ms with captures, {base_gap * 1000:.1f} ms without")
    print(f"main-thread throughput during captures / without: {count / span / (base_count / 2.0):.3f}")


if __name__ == "__main__":
    main()
