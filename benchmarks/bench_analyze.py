"""Throughput of ``syncdoctor analyze`` on a large synthetic multi-rank log dominated by NCCL INFO lines,
measured side by side with ``grep -c NCCL`` on the same file in the same run.

    .venv/bin/python benchmarks/bench_analyze.py               # 1 GiB (the documented measurement)
    .venv/bin/python benchmarks/bench_analyze.py --size 64M    # quick

Two profiles of a job launched by torchrun with ``--tee`` (ranks of a host interleaved line by line):

* ``coll`` (default), 512 ranks on 64 hosts with ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL``: each rank
  prints NCCL's init chatter for its two communicators (version, bootstrap, NET/IB, rings, trees, 32
  channels, Init COMPLETE), then one INFO line per collective call (``AllReduce: opCount ... [nranks=512]``),
  which is what makes real logs gigabytes long; rank 0 prints a training step line now and then.
* ``init``, 64 ranks on 8 hosts that keep creating communicators: nothing but init chatter, the worst case
  for the analyzer because about one line in twenty is a configuration line it must look at.
* ``bars``, 64 ranks on 8 hosts whose log, after their init chatter, is rank 0's progress bar, one line per redraw (tqdm writing to a
  file or a pipe): every line is a candidate the bar parser reads, the worst case for a log of bars.

At the end one rank runs out of GPU memory and every other rank's watchdog times out. The file is written
to /tmp and deleted afterwards (``--keep`` keeps it). The analysis must find the culprit, or the run fails.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from syncdoctor.analyze import analyze_sources
from syncdoctor.analyze.inputs import expand
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.scan import ANCHORS, BACKENDS, Scanner

PER_HOST = 8
PROFILES = {"coll": 512, "init": 64, "bars": 64}  # ranks
CULPRIT = 37


def _parse_size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)i?B?", text.strip(), re.IGNORECASE)
    if not match:
        raise SystemExit(f"--size: expected e.g. 1G, 256M, 64M, got {text!r}")
    return int(float(match[1]) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match[2].upper()])


def _init_burst(rank: int, comm: int, rng: random.Random, ranks: int) -> list[str]:
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
        f"{p}ncclCommInitRank comm 0x55d0c8a{comm:03x} rank {rank} nranks {ranks} cudaDev {local} nvmlDev {local} "
        f"busId {local:x}b000 commId {comm_id} - Init START",
        f"{p}Setting affinity for GPU {local} to ffff,ffffffff,00000000,0000ffff,ffffffff",
        f"{p}comm 0x55d0c8a{comm:03x} rank {rank} nRanks {ranks} nNodes {ranks // PER_HOST} localRanks {PER_HOST} "
        f"localRank {local} MNNVL 0",
    ]
    for tree in range(4):
        lines.append(f"{p}Trees [{tree}] {(rank + 1) % ranks}/-1/-1->{rank}->{(rank - 1) % ranks} [{tree + 4}] "
                     f"{(rank + 2) % ranks}/-1/-1->{rank}->{(rank - 2) % ranks}")
    lines.append(f"{p}P2P Chunksize set to 131072")
    for channel in range(32):
        nxt = (rank + 1) % ranks
        via = "NET/IB/0/GDRDMA" if nxt // PER_HOST != rank // PER_HOST else "P2P/CUMEM/read"
        lines.append(f"{p}Channel {channel:02d}/0 : {rank}[{local}] -> {nxt}[{nxt % PER_HOST}] via {via}")
        lines.append(f"{p}Channel {channel:02d}/0 : {(rank - 1) % ranks}[{(local - 1) % PER_HOST}] -> {rank}[{local}] "
                     f"[receive] via NET/IB/{channel % 4}/GDRDMA")
    lines += [
        f"{p}Connected all rings",
        f"{p}Connected all trees",
        f"{p}threadThresholds 8/8/64 | 512/8/64 | 512 | 512",
        f"{p}32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
        f"{p}ncclCommInitRank comm 0x55d0c8a{comm:03x} rank {rank} nranks {ranks} cudaDev {local} nvmlDev {local} "
        f"busId {local:x}b000 commId {comm_id} - Init COMPLETE",
    ]
    return lines


def _failure(ranks: int) -> list[str]:
    local = CULPRIT % PER_HOST
    lines = [f"[default{local}]:[rank{CULPRIT}]: Traceback (most recent call last):",
             f'[default{local}]:[rank{CULPRIT}]:   File "train.py", line 212, in forward',
             f"[default{local}]:[rank{CULPRIT}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
             f"GiB (GPU {local}; 79.15 GiB total capacity)"]
    for rank in range(ranks):
        if rank == CULPRIT:
            continue
        lines.append(f"[default{rank % PER_HOST}]:[rank{rank}]:[E1129 10:10:00.000000000 ProcessGroupNCCL.cpp:607] "
                     f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90001, "
                     f"OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600021 milliseconds "
                     "before timing out.")
    return lines


def _step_line(step: int, rng: random.Random) -> str:
    return (f"[default0]:[rank0]: step {step} loss {rng.random():.4f} lr 3.0e-04 "
            f"tokens/s {rng.randrange(90_000, 110_000)}")


def _coll_template(rank: int, ranks: int) -> str:
    """NCCL's per-call INFO line (NCCL_DEBUG_SUBSYS=COLL), with {op} and {n} left to fill in."""
    local = rank % PER_HOST
    return (f"[default{local}]:node{rank // PER_HOST:02d}:{4000 + rank}:{4100 + rank} [{local}] NCCL INFO AllReduce: "
            f"opCount {{op:x}} sendbuff 0x7f3a{rank:04x}0000 recvbuff 0x7f3a{rank:04x}0000 count {{n}} "
            f"datatype 7 op 0 root 0 comm 0x55d0c8a0{local:02x} [nranks={ranks}] stream 0x55e0{local:02x}")


def generate(path: Path, size: int, profile: str = "coll", seed: int = 1) -> int:
    """Write about ``size`` bytes of the profile; returns the number of lines."""
    rng = random.Random(seed)
    ranks = PROFILES[profile]
    written = lines = 0
    comm = 0
    step = 0

    def emit(out: object, chunk: list[str]) -> None:
        nonlocal written, lines
        text = "\n".join(chunk) + "\n"
        out.write(text)  # type: ignore[attr-defined]
        written += len(text)
        lines += len(chunk)

    with open(path, "w", encoding="utf-8") as out:
        while written < size and (profile == "init" or comm < 2):
            comm += 1
            for host in range(ranks // PER_HOST):
                bursts = [_init_burst(host * PER_HOST + local, comm, rng, ranks) for local in range(PER_HOST)]
                chunk = []
                for row in zip(*bursts, strict=True):  # torchrun --tee interleaves the ranks of a host
                    chunk.extend(row)
                    if rng.random() < 0.02:
                        step += 1
                        chunk.append(_step_line(step, rng))
                emit(out, chunk)
        while profile == "bars" and written < size:  # rank 0's bar, redrawn on a line of its own
            chunk = []
            for _ in range(1000):
                step += 1
                done = step % 20000
                chunk.append(f"[default0]:[rank0]:Epoch {step // 20000}: {done * 100 // 20000:3d}%|#####     | "
                             f"{done}/20000 [{done // 360:02d}:{done // 6 % 60:02d}<00:10, 6.00it/s, "
                             f"loss={rng.random():.3f}]")
            emit(out, chunk)
        op_count = 0
        templates = [_coll_template(rank, ranks) for rank in range(ranks)]
        while written < size:  # profile coll: one INFO line per collective call per rank
            op_count += 1
            chunk = [template.format(op=op_count, n=262144 * (1 + op_count % 8)) for template in templates]
            if op_count % 9 == 0:
                step += 1
                chunk.append(_step_line(step, rng))
            emit(out, chunk)
        emit(out, _failure(ranks))
    return lines


def _grep(path: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, matching lines) of ``grep -c NCCL path``."""
    grep = shutil.which("grep")
    if grep is None:
        raise SystemExit("grep is not installed")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([grep, "-c", "NCCL", str(path)], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, int(done.stdout.strip() or 0)


def _compare(path: Path, mb: float, scanners: dict[str, Scanner]) -> dict[str, float]:
    """The whole analysis with each scanner, in turns (4 rounds): the median MB/s of each."""
    rates: dict[str, list[float]] = {name: [] for name in scanners}
    for _ in range(4):
        for name, scanner in scanners.items():
            started = time.perf_counter()
            analyze_sources(expand([str(path)]), scanner=scanner)
            rates[name].append(mb / (time.perf_counter() - started))
    for name, values in rates.items():
        print(f"{name:>20}: median {statistics.median(values):.0f} MB/s wall {[round(v) for v in values]}")
    return {name: statistics.median(values) for name, values in rates.items()}


def _compare_anchors(path: Path, mb: float, backend: str, drop: int) -> None:
    """The whole analysis with every anchor and with all but the last ``drop``, in turns."""
    full, fewer = f"{len(ANCHORS)} anchors", f"{len(ANCHORS) - drop} anchors"
    medians = _compare(path, mb, {full: Scanner(ANCHORS, backend), fewer: Scanner(ANCHORS[:-drop], backend)})
    print(f"ratio {full}/{fewer}: {medians[full] / medians[fewer]:.3f} (load average {os.getloadavg()[0]:.1f})")


def _compare_backends(path: Path, mb: float) -> None:
    """The whole analysis with each scanner backend available here, in turns."""
    scanners = {}
    for backend in ("hyperscan", "libc", "python"):
        try:
            scanners[f"{backend} scanner"] = Scanner(backend=backend)
        except ValueError as exc:
            print(f"{backend} scanner: not measured ({exc})")
    medians = _compare(path, mb, scanners)
    names = list(medians)
    for name in names[1:]:
        print(f"ratio {names[0]}/{name}: {medians[names[0]] / medians[name]:.2f} "
              f"(load average {os.getloadavg()[0]:.1f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="1G", help="log size (default 1G; e.g. 64M for a quick run)")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="coll",
                        help="coll: init then per-collective INFO lines (default); init: communicator chatter only; "
                             "bars: a progress bar redrawn on every line")
    parser.add_argument("--backend", choices=BACKENDS, default="auto",
                        help="scanner backend (default auto: hyperscan, else libc memmem, else bytes.find)")
    parser.add_argument("--compare-backends", action="store_true",
                        help="also analyse with each scanner backend available, in turns (4 rounds each), and "
                             "print their medians side by side")
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where to write the file (default /tmp)")
    parser.add_argument("--without-last-anchors", type=int, default=0, metavar="K",
                        help="also analyse with all anchors but the last K, in turns with the full set (4 rounds "
                             "each), and print both medians: what those anchors cost")
    args = parser.parse_args()
    size = _parse_size(args.size)
    path = Path(args.dir) / f"syncdoctor-bench-analyze-{os.getpid()}.log"
    try:
        start = time.perf_counter()
        lines = generate(path, size, args.profile)
        actual = path.stat().st_size
        ranks = PROFILES[args.profile]
        print(f"profile {args.profile}: generated {actual / 1e6:.0f} MB, {lines} lines, {ranks} ranks on "
              f"{ranks // PER_HOST} hosts in "
              f"{time.perf_counter() - start:.1f} s: {path}")
        _grep(path)  # warm the page cache so both read from memory
        grep_s, grep_cpu, grep_count = _grep(path)
        scanner = Scanner(backend=args.backend)
        cpu0 = time.process_time()
        wall0 = time.perf_counter()
        analysis = analyze_sources(expand([str(path)]), scanner=scanner)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        grep2_s, grep2_cpu, _ = _grep(path)
        root = analysis.diagnosis.root_cause
        found = root is not None and root.category is Category.RANK_OUT_OF_MEMORY and root.culprit_ranks == (CULPRIT,)
        mb = actual / 1e6
        grep_best = min(grep_s, grep2_s)
        grep_cpu = max(min(grep_cpu, grep2_cpu), 1e-3)
        print(f"grep -c NCCL: {grep_best:.2f} s wall, {grep_cpu:.2f} s CPU; {mb / grep_best:.0f} MB/s wall, "
              f"{mb / grep_cpu:.0f} MB/s per CPU second ({grep_count} matching lines)")
        print(f"syncdoctor analyze ({scanner.backend} scanner): {wall:.2f} s wall, {cpu:.2f} s CPU; "
              f"{mb / wall:.0f} MB/s wall, {mb / cpu:.0f} MB/s per CPU second; "
              f"{analysis.collected.lines_read} lines, {len(analysis.collected.events)} events")
        print(f"peak memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
        print(f"ratio analyze/grep: {grep_best / wall:.3f} wall, {grep_cpu / cpu:.3f} CPU "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        print(f"verdict: {root.title if root else 'none'} -> {'OK' if found else 'WRONG'}")
        if args.without_last_anchors > 0:
            _compare_anchors(path, mb, args.backend, args.without_last_anchors)
        if args.compare_backends:
            _compare_backends(path, mb)
        return 0 if found else 1
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
