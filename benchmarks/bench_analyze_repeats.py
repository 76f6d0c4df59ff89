"""How `analyze` grows with repeated shapes: each shape of paste repeated N and 4N times, the ratio of the two times.

A rule that asks, for each event of a kind, something about every other event grows with the square of the repeats
(a ratio near 16); one that looks things up once grows with them (near 4). The shapes are those whose rules look at
other lines: an abort under an uncaught C++ exception, a GPU error after a GPU-initiated wait timed out, DDP's reducer
error, NCCL's OOM then an invalid handle, a paste's rank headings.

    .venv/bin/python benchmarks/bench_analyze_repeats.py [--repeats 1000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from syncdoctor.analyze import analyze_paths

SHAPES = {
    "abort under an uncaught exception": lambda n: ("terminate called after throwing an instance of 'std::runtime_error'\n"
                                                    "  what():  something odd happened\n"
                                                    "Fatal Python error: Aborted\n\n") * n,
    "trap after a GPU-initiated wait": lambda n: ("DeepEP combine (scale-up wait) timeout, scale-out: 6/8,\n"
                                                  + "RuntimeError: CUDA error: unspecified launch failure\n" * n),
    "DDP's reducer error": lambda n: ("RuntimeError: Expected to have finished reduction in the prior iteration before "
                                      "starting a new one.\n") * n,
    "OOM then an invalid handle": lambda n: ("h:392:494 [2] enqueue.cc:43 NCCL WARN Cuda failure 'out of memory'\n"
                                             "h:392:494 [2] enqueue.cc:54 NCCL WARN Cuda failure 'invalid resource "
                                             "handle'\n") * n,
    "rank headings": lambda n: "".join(f"rank{i}:\nRuntimeError: boom {i}\n" for i in range(n)),
}


def timed(text: str) -> float:
    handle, path = tempfile.mkstemp(suffix=".log")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        start = time.perf_counter()
        analyze_paths([path])
        return time.perf_counter() - start
    finally:
        os.unlink(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1000, help="N (the second run has 4N)")
    args = parser.parse_args()
    n = max(1, args.repeats)
    worst = 0.0
    for name, shape in SHAPES.items():
        small, large = timed(shape(n)), timed(shape(4 * n))
        ratio = large / small if small > 0 else float("inf")
        worst = max(worst, ratio)
        print(f"{name:36} {n:6} repeats {small:6.2f} s, {4 * n:6} repeats {large:6.2f} s: ratio {ratio:4.1f}")
    print(f"worst ratio {worst:.1f} (4 grows with the repeats, 16 with their square; "
          f"load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
