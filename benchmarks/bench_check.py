"""How long ``syncdoctor check`` takes, and what importing torch would add.

Measures side by side in one run: the in-process fact collection (``collect_host_facts``), a whole
``syncdoctor check --json --no-network`` in a fresh interpreter (versions from package metadata), and the
same with ``--import-torch`` (versions from an imported torch). Prints medians and their ratio.

    .venv/bin/python benchmarks/bench_check.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from syncdoctor.host.collect import collect_host_facts


def _median_seconds(func, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _check(*extra: str) -> None:
    argv = [sys.executable, "-m", "syncdoctor", "check", "--json", "--no-network", *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check failed: {proc.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    collect = _median_seconds(collect_host_facts, args.runs * 4)
    plain = _median_seconds(_check, args.runs)
    with_torch = _median_seconds(lambda: _check("--import-torch"), args.runs)
    print(f"collect_host_facts (in process)        median {collect * 1000:8.1f} ms")
    print(f"check --json --no-network (subprocess) median {plain * 1000:8.1f} ms")
    print(f"check ... --import-torch (subprocess)  median {with_torch * 1000:8.1f} ms")
    print(
        f"ratio import-torch / plain: {with_torch / plain:.2f}x; fact collection share of plain: "
        f"{collect / plain:.1%}"
    )


if __name__ == "__main__":
    main()
