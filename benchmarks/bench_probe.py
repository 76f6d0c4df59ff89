"""How long ``syncdoctor probe`` takes, and how much of a throttled link's rate it measures.

Runs in the lab (network namespaces; needs root), side by side in one run:

1. Wall time of a 2 hosts x 2 ranks torchrun job running the probe with default sizes (unthrottled):
   the probe's own stages (from its JSON report) and the whole job (torchrun start to exit, which adds
   interpreter and torch start-up), against the 30 s target.
2. For each rate: host1 throttled with ``tc tbf``; the probe's point-to-point bandwidth between the two
   hosts next to a plain TCP stream (a Python socket sending 8 MB through the same throttle), both as a
   fraction of the nominal rate, and the probe's fraction of the raw TCP stream.

    .venv/bin/python benchmarks/bench_probe.py [--rates 40mbit,200mbit]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from syncdoctor.testing.faults_spec import parse_rate
from syncdoctor.testing.lab import Lab, lab_available

SERVER = textwrap.dedent("""
    import socket, sys
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", int(sys.argv[1]))); srv.listen(1); print("ready", flush=True)
    conn, _ = srv.accept(); total = 0
    while True:
        data = conn.recv(1 << 20)
        if not data: break
        total += len(data)
    conn.sendall(b"k"); conn.close()
""")
CLIENT = textwrap.dedent("""
    import socket, sys, time
    sock = socket.create_connection((sys.argv[1], int(sys.argv[2])))
    payload = b"x" * (1 << 20); count = int(sys.argv[3]); start = time.perf_counter()
    for _ in range(count): sock.sendall(payload)
    sock.shutdown(socket.SHUT_WR); sock.recv(1); elapsed = time.perf_counter() - start
    print(count * len(payload) / elapsed)
""")


def _probe_job(lab: Lab, run_dir: Path, *extra: str) -> tuple[dict, float]:
    report = run_dir / "probe.json"
    started = time.monotonic()
    job = lab.torchrun(["-m", "syncdoctor", "probe", "--json", str(report), *extra], procs_per_host=2,
                       run_dir=run_dir)
    result = job.wait(timeout=600)
    wall = time.monotonic() - started
    if not report.exists():
        raise SystemExit(f"the probe wrote no report:\n{result.summary()}")
    return json.loads(report.read_text()), wall


def _raw_tcp(lab: Lab, megabytes: int) -> float:
    server = lab.popen("host1", [sys.executable, "-c", SERVER, "29777"], stdout=-1, text=True)
    assert server.stdout is not None
    server.stdout.readline()
    out = lab.run("host0", [sys.executable, "-c", CLIENT, lab.host("host1").addr, "29777", str(megabytes)],
                  timeout=300, check=True)
    server.wait(timeout=30)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", default="40mbit,200mbit")
    args = parser.parse_args()
    ok, reason = lab_available()
    if not ok:
        raise SystemExit(f"bench_probe needs the lab: {reason}")
    with Lab(hosts=2) as lab, tempfile.TemporaryDirectory() as tmp:
        data, wall = _probe_job(lab, Path(tmp) / "default")
        stages = {s["name"]: s["seconds"] for s in data["stages"]}
        probe_s = sum(stages.values())
        print("2 hosts x 2 ranks, default sizes (1K:16M, five collectives), unthrottled:")
        print("  stages: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in stages.items()))
        print(f"  probe stages {probe_s:.1f} s ({probe_s / 30:.2f} of the 30 s target); whole torchrun job "
              f"{wall:.1f} s ({wall / 30:.2f} of the target)")
        for rate in args.rates.split(","):
            bits = parse_rate(rate)
            lab.throttle("host1", rate)
            raw = _raw_tcp(lab, max(2, int(bits / 8 / 1e6 * 2)))
            data, wall = _probe_job(lab, Path(tmp) / rate, "--sizes", "4K,64K", "--ops", "all_reduce")
            [link] = [link for link in data["links"] if link["kind"] == "inter"]
            probe_bps = link["bandwidth"] * 8
            print(f"host1 throttled to {rate}: probe {probe_bps / 1e6:.1f} Mb/s = {probe_bps / bits:.3f} of the "
                  f"rate; raw TCP {raw * 8 / 1e6:.1f} Mb/s = {raw * 8 / bits:.3f}; probe/raw TCP "
                  f"{probe_bps / (raw * 8):.3f} (job {wall:.1f} s)")
            lab.unthrottle("host1")


if __name__ == "__main__":
    main()
