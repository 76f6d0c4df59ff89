"""Throughput of ``syncdoctor analyze`` on a large synthetic multi-rank log dominated by NCCL INFO lines,
measured side by side with ``grep -c NCCL`` on the same file in the same run.

    .venv/bin/python benchmarks/bench_analyze.py               # 1 GiB (the documented measurement)
    .venv/bin/python benchmarks/bench_analyze.py --size 64M    # quick

The log imitates a 64-rank job (8 hosts) launched by torchrun with ``--tee``: every rank prints NCCL's
init chatter for each communicator it joins (version, bootstrap, NET/IB, rings, trees, channels, proxies,
Init COMPLETE), interleaved line by line with the other ranks of its host; rank 0 prints training steps in
between; at the end rank 37 runs out of GPU memory and every other rank's watchdog times out. The file is
written to /tmp and deleted afterwards (``--keep`` keeps it). The analysis must find rank 37, or the run
fails.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from syncdoctor.analyze import analyze_sources
from syncdoctor.analyze.inputs import expand
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.scan import Scanner

RANKS = 64
PER_HOST = 8
CULPRIT = 37


def _parse_size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)i?B?", text.strip(), re.IGNORECASE)
    if not match:
        raise SystemExit(f"--size: expected e.g. 1G, 256M, 64M, got {text!r}")
    return int(float(match[1]) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match[2].upper()])


def _init_burst(rank: int, comm: int, rng: random.Random) -> list[str]:
    host = f"node{rank // PER_HOST:02d}"
    local = rank % PER_HOST
    p = f"[default{local}]:{host}:{4000 + rank}:{4100 + rank} [{local}] NCCL INFO "
    comm_id = f"0x{rng.getrandbits(64):016x}"
    lines = [
        f"{p}NCCL_SOCKET_IFNAME set by environment to eth0",
        f"{p}Bootstrap : Using eth0:10.1.{rank // PER_HOST}.{local + 1}<0>",
        f"{p}NET/Plugin: No plugin found (libnccl-net.so)",
        f"{p}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB eth0:10.1.{rank // PER_HOST}.{local + 1}<0>",
        f"{p}Using non-device net plugin version 0",
        f"{p}Using network IB",
        f"{p}ncclCommInitRank comm 0x55d0c8a{comm:03x} rank {rank} nranks {RANKS} cudaDev {local} nvmlDev {local} "
        f"busId {local:x}b000 commId {comm_id} - Init START",
        f"{p}Setting affinity for GPU {local} to ffff,ffffffff,00000000,0000ffff,ffffffff",
        f"{p}comm 0x55d0c8a{comm:03x} rank {rank} nRanks {RANKS} nNodes {RANKS // PER_HOST} localRanks {PER_HOST} "
        f"localRank {local} MNNVL 0",
    ]
    for tree in range(4):
        lines.append(f"{p}Trees [{tree}] {(rank + 1) % RANKS}/-1/-1->{rank}->{(rank - 1) % RANKS} [{tree + 4}] "
                     f"{(rank + 2) % RANKS}/-1/-1->{rank}->{(rank - 2) % RANKS}")
    lines.append(f"{p}P2P Chunksize set to 131072")
    for channel in range(32):
        nxt = (rank + 1) % RANKS
        via = "NET/IB/0/GDRDMA" if nxt // PER_HOST != rank // PER_HOST else "P2P/CUMEM/read"
        lines.append(f"{p}Channel {channel:02d}/0 : {rank}[{local}] -> {nxt}[{nxt % PER_HOST}] via {via}")
        lines.append(f"{p}Channel {channel:02d}/0 : {(rank - 1) % RANKS}[{(local - 1) % PER_HOST}] -> {rank}[{local}] "
                     f"[receive] via NET/IB/{channel % 4}/GDRDMA")
    lines += [
        f"{p}Connected all rings",
        f"{p}Connected all trees",
        f"{p}threadThresholds 8/8/64 | 512/8/64 | 512 | 512",
        f"{p}32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
        f"{p}ncclCommInitRank comm 0x55d0c8a{comm:03x} rank {rank} nranks {RANKS} cudaDev {local} nvmlDev {local} "
        f"busId {local:x}b000 commId {comm_id} - Init COMPLETE",
    ]
    return lines


def _failure() -> list[str]:
    local = CULPRIT % PER_HOST
    lines = [f"[default{local}]:[rank{CULPRIT}]: Traceback (most recent call last):",
             f'[default{local}]:[rank{CULPRIT}]:   File "train.py", line 212, in forward',
             f"[default{local}]:[rank{CULPRIT}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
             f"GiB (GPU {local}; 79.15 GiB total capacity)"]
    for rank in range(RANKS):
        if rank == CULPRIT:
            continue
        lines.append(f"[default{rank % PER_HOST}]:[rank{rank}]:[E1129 10:10:00.000000000 ProcessGroupNCCL.cpp:607] "
                     f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90001, "
                     f"OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600021 milliseconds "
                     "before timing out.")
    return lines


def generate(path: Path, size: int, seed: int = 1) -> int:
    """Write about ``size`` bytes; returns the number of lines."""
    rng = random.Random(seed)
    written = lines = 0
    comm = 0
    step = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < size:
            comm += 1
            for host in range(RANKS // PER_HOST):
                bursts = [_init_burst(host * PER_HOST + local, comm, rng) for local in range(PER_HOST)]
                chunk = []
                for row in zip(*bursts, strict=True):  # torchrun --tee interleaves the ranks of a host
                    chunk.extend(row)
                    if rng.random() < 0.02:
                        step += 1
                        chunk.append(f"[default0]:[rank0]: step {step} loss {rng.random():.4f} lr 3.0e-04 "
                                     f"tokens/s {rng.randrange(90_000, 110_000)}")
                text = "\n".join(chunk) + "\n"
                out.write(text)
                written += len(text)
                lines += len(chunk)
        text = "\n".join(_failure()) + "\n"
        out.write(text)
        lines += text.count("\n")
    return lines


def _grep(path: Path) -> tuple[float, int]:
    grep = shutil.which("grep")
    if grep is None:
        raise SystemExit("grep is not installed")
    start = time.perf_counter()
    done = subprocess.run([grep, "-c", "NCCL", str(path)], capture_output=True, text=True, check=False)
    return time.perf_counter() - start, int(done.stdout.strip() or 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="1G", help="log size (default 1G; e.g. 64M for a quick run)")
    parser.add_argument("--backend", choices=("auto", "libc", "python"), default="auto",
                        help="scanner backend (default auto: libc memmem when available)")
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where to write the file (default /tmp)")
    args = parser.parse_args()
    size = _parse_size(args.size)
    path = Path(args.dir) / f"syncdoctor-bench-analyze-{os.getpid()}.log"
    try:
        start = time.perf_counter()
        lines = generate(path, size)
        actual = path.stat().st_size
        print(f"generated {actual / 1e6:.0f} MB, {lines} lines, {RANKS} ranks on {RANKS // PER_HOST} hosts in "
              f"{time.perf_counter() - start:.1f} s: {path}")
        _grep(path)  # warm the page cache so both read from memory
        grep_s, grep_count = _grep(path)
        scanner = Scanner(backend=args.backend)
        cpu0 = time.process_time()
        wall0 = time.perf_counter()
        analysis = analyze_sources(expand([str(path)]), scanner=scanner)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        grep2_s, _ = _grep(path)
        root = analysis.diagnosis.root_cause
        found = root is not None and root.category is Category.RANK_OUT_OF_MEMORY and root.culprit_ranks == (CULPRIT,)
        mb = actual / 1e6
        grep_best = min(grep_s, grep2_s)
        print(f"grep -c NCCL: {grep_best:.2f} s, {mb / grep_best:.0f} MB/s ({grep_count} matching lines)")
        print(f"syncdoctor analyze ({scanner.backend} scanner): {wall:.2f} s wall, {cpu:.2f} s CPU, "
              f"{mb / wall:.0f} MB/s wall, {mb / cpu:.0f} MB/s per CPU second; "
              f"{analysis.collected.lines_read} lines, {len(analysis.collected.events)} events")
        print(f"ratio analyze/grep: {(mb / wall) / (mb / grep_best):.2f} (grep is {wall / grep_best:.1f}x faster)")
        print(f"verdict: {root.title if root else 'none'} -> {'OK' if found else 'WRONG'}")
        return 0 if found else 1
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
