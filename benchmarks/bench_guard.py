"""How long ``syncdoctor.guard.assert_ready()`` takes on 2 hosts x 2 ranks, next to a bare all_reduce.

Runs one torchrun job in a lab (2 network-namespace hosts, 2 gloo ranks each; root needed) whose ranks
alternate, ``--repeats`` times: a barrier, a plain all_reduce of the guard's check tensor (1024 floats),
a barrier, ``assert_ready()``. Prints, over every rank and repeat: the guard's own time (its wall time
minus the wait for other ranks to arrive) and its phases, the plain all_reduce, their ratio, and the
share of the 2 s budget used. Without root it says so and exits 3.

    sudo .venv/bin/python benchmarks/bench_guard.py [--repeats 10] [--procs-per-host 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

WORKER = """
import json, time
import torch, torch.distributed as dist
from syncdoctor.guard import assert_ready

dist.init_process_group("gloo")
rows = []
for _ in range(REPEATS):
    dist.barrier()
    tensor = torch.arange(1024, dtype=torch.float32)
    start = time.perf_counter()
    dist.all_reduce(tensor)
    plain = time.perf_counter() - start
    dist.barrier()
    report = assert_ready()
    rows.append({"plain": plain, "own": report.own_s, "elapsed": report.elapsed_s, "waited": report.waited_s,
                 **{k: v for k, v in report.phases_s.items()}})
print("BENCH " + json.dumps({"rank": dist.get_rank(), "rows": rows}), flush=True)
dist.destroy_process_group()
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--procs-per-host", type=int, default=2)
    args = parser.parse_args()
    from syncdoctor.testing.lab import Lab, lab_available

    ok, why = lab_available()
    if not ok:
        print(f"the lab is not available here: {why}")
        return 3
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Lab(hosts=2) as lab:
        script = Path(tmp) / "worker.py"
        script.write_text(WORKER.replace("REPEATS", str(args.repeats)))
        result = lab.torchrun([str(script)], procs_per_host=args.procs_per_host, run_dir=Path(tmp) / "run").wait(
            timeout=600)
        if not result.ok:
            print(result.summary())
            return 1
        for rank in result.rank_logs:
            for line in result.output(rank).splitlines():
                if line.startswith("BENCH "):
                    rows.extend(json.loads(line[6:])["rows"][1:])  # the first repeat warms the code paths
    ranks = 2 * args.procs_per_host

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    own, plain = med("own"), med("plain")
    print(f"2 hosts x {args.procs_per_host} ranks, {args.repeats - 1} measured repeats x {ranks} ranks")
    print(f"plain all_reduce (1024 floats)  median {plain * 1000:8.2f} ms")
    print(f"assert_ready, own time          median {own * 1000:8.2f} ms   max {max(r['own'] for r in rows) * 1000:8.2f} ms")
    for phase in ("facts", "exchange", "check_all_reduce", "wait_for_ranks"):
        print(f"  {phase:<28}  median {med(phase) * 1000:8.2f} ms")
    print(f"ratio guard / plain all_reduce: {own / plain:.1f}x; share of the 2 s budget: {own / 2.0:.1%} "
          f"(worst rank and repeat: {max(r['own'] for r in rows) / 2.0:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
