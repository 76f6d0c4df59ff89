"""One rank of NCCL under torchrun, watched: what the GPU-only paths of syncdoctor meet on a real GPU.

Run by scripts/gpu-check.sh (``torchrun --nproc-per-node 1 scripts/gpu_nccl_diag.py``, ``DIAG_OUT`` a folder,
``NCCL_DEBUG=INFO``). Without CUDA it runs the same steps on gloo (a dry run of the script itself).

It records, as ``DIAG <key> <json>`` lines and files under ``DIAG_OUT``:

1. which Flight Recorder functions this torch has, and what the status read (``includeCollectives=False``)
   returns for NCCL groups through ``_dump_fr_trace_json`` and ``_dump_nccl_trace_json``, with the time
   per call (median of 2000) and that of ``_get_sequence_number_for_group``;
2. what ``syncdoctor.watch`` sees of a DDP model on ``cuda:0`` plus a NCCL subgroup and a gloo group:
   its progress source, per-group entered/completed against the groups' own sequence numbers, the
   signature of the last collective from a full dump;
3. a collective entered but held back on the GPU (``torch.cuda._sleep`` ahead of it on the stream): the
   status and the watcher's readings every 0.5 s while it is pending, and the watcher's events;
4. full dumps as files (JSON and pickle) for ``syncdoctor analyze`` and for test fixtures.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

OUT = os.environ.get("DIAG_OUT", ".")
CUDA = torch.cuda.is_available()
RANK = int(os.environ.get("RANK", "0"))
results: dict[str, object] = {}


def log(key: str, value: object) -> None:
    results[key] = value
    text = json.dumps(value, default=str)
    print("DIAG", key, text if len(text) < 4000 else text[:4000] + "...", flush=True)


def guarded(key: str, fn):
    try:
        return fn()
    except Exception as exc:
        log(key + ".error", f"{type(exc).__name__}: {exc}")
        return None


def per_call_us(fn, n: int = 2000) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


def decode(raw: object) -> object:
    if isinstance(raw, bytes | bytearray):
        raw = bytes(raw).decode("utf-8", "replace")
    try:
        return json.loads(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(raw)[:2000]


def write(name: str, data: object) -> None:
    mode = "wb" if isinstance(data, bytes | bytearray) else "w"
    with open(os.path.join(OUT, name), mode) as handle:
        handle.write(data if mode == "wb" else str(data))  # type: ignore[arg-type]


def spin_cycles_per_s() -> float:
    """How many cycles of ``torch.cuda._sleep`` (a kernel that spins) make a second on this GPU."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(100_000_000)
    end.record()
    torch.cuda.synchronize()
    return 100_000_000 / (start.elapsed_time(end) / 1000)


def main() -> int:
    import torch._C._distributed_c10d as ext

    import syncdoctor.watch as watch

    log(
        "versions",
        {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "cuda_available": CUDA,
            "nccl": guarded("nccl_version", lambda: ".".join(map(str, torch.cuda.nccl.version()))),
            "device": torch.cuda.get_device_name(0) if CUDA else None,
        },
    )
    log("dump_functions", sorted(name for name in dir(ext) if "dump" in name or "trace" in name))

    watcher = watch.start(
        warn_after_s=3.0,
        suspect_after_s=1.0,
        dead_after_s=10.0,
        events_file=os.path.join(OUT, "events-rank{rank}.jsonl"),
    )
    backend = "nccl" if CUDA else "gloo"
    device = torch.device("cuda", 0) if CUDA else torch.device("cpu")
    if CUDA:
        torch.cuda.set_device(device)
        dist.init_process_group(backend, device_id=device)
    else:
        dist.init_process_group(backend)
    sub = dist.new_group([0], backend=backend)
    side = dist.new_group([0], backend="gloo")
    mixed = dist.new_group([0], backend="cpu:gloo,cuda:nccl") if CUDA else None

    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512)).to(device),
        device_ids=[0] if CUDA else None,
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(32, 512, device=device)
    extra = torch.ones(1000, device=device)
    cpu = torch.ones(1000)
    for _ in range(30):
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    for _ in range(3):
        dist.all_reduce(extra, group=sub)
    for _ in range(2):
        dist.all_reduce(cpu, group=side)
    if mixed is not None:  # a group with a backend on each recorder: 2 CPU collectives, 1 CUDA
        dist.all_reduce(cpu, group=mixed)
        dist.all_reduce(cpu, group=mixed)
        dist.all_reduce(extra, group=mixed)
    if CUDA:
        torch.cuda.synchronize()
    time.sleep(2.5)  # the sampler (10 Hz) and the publisher (1 Hz) catch up

    world = dist.distributed_c10d._world
    names = {pg: name for pg, name in world.pg_names.items()}
    log(
        "groups",
        {
            name: {
                "backend": str(dist.get_backend(pg)),
                "seq": guarded("seq." + name, pg._get_sequence_number_for_group),
            }
            for pg, name in names.items()
        },
    )
    log("watch.source", getattr(watcher.source, "name", None))
    log("watch.directory", {"names": watcher.directory.names, "recorders": sorted(watcher.directory.recorders),
                            "mixed": watcher.directory.mixed})
    if hasattr(watcher.source, "status"):
        for recorder, raw in guarded("watch.raw_status", watcher.source.status) or ():
            write(f"status_{recorder}.raw", bytes(raw) if not isinstance(raw, str) else raw.encode())
    log("watch.progress", guarded("watch.progress", lambda: watcher.sampler.progress(time.monotonic())))
    log("watch.record", guarded("watch.record", lambda: watcher._record()._asdict()))

    statuses = {}
    for fn_name in ("_dump_fr_trace_json", "_dump_nccl_trace_json"):
        fn = getattr(ext, fn_name, None)
        if fn is None:
            continue
        statuses[fn_name] = guarded(fn_name, lambda fn=fn: decode(fn(False, False)))
        log(fn_name + ".status", statuses[fn_name])
        log(
            fn_name + ".status_us",
            guarded(fn_name + ".status_us", lambda fn=fn: per_call_us(lambda: fn(False, False))),
        )
        full = guarded(fn_name + ".full", lambda fn=fn: fn(True, False))
        if full is not None:
            write(
                fn_name.strip("_") + ".json",
                full if isinstance(full, str) else bytes(full).decode("utf-8", "replace"),
            )
            parsed = decode(full)
            if isinstance(parsed, dict):
                entries = parsed.get("entries") or []
                log(
                    fn_name + ".full_summary",
                    {
                        "keys": sorted(parsed),
                        "version": parsed.get("version"),
                        "entries": len(entries),
                        "pg_config": parsed.get("pg_config"),
                        "pg_status": parsed.get("pg_status"),
                        "first_entry": entries[0] if entries else None,
                        "last_entry": entries[-1] if entries else None,
                    },
                )
    default_pg = dist.distributed_c10d._get_default_group()
    log("seq_us", guarded("seq_us", lambda: per_call_us(default_pg._get_sequence_number_for_group)))
    for fn_name in ("_dump_fr_trace", "_dump_nccl_trace"):
        fn = getattr(ext, fn_name, None)
        if fn is not None:
            data = guarded(fn_name, fn)
            if data is not None:
                write(fn_name.strip("_") + ".pickle", bytes(data))
                log(fn_name + ".bytes", len(data))
    seq = guarded("seq.default", default_pg._get_sequence_number_for_group)
    if seq:
        log(
            "watch.signature",
            guarded("watch.signature", lambda: str(watcher.source.signature(names[default_pg], seq))),
        )

    # a collective entered but held back on the GPU: the stream is busy in a spin kernel ahead of it
    if CUDA:
        cycles_per_s = spin_cycles_per_s()
        log("gpu_cycles_per_s", cycles_per_s)
        hold_s = 12.0
        t0 = time.monotonic()
        torch.cuda._sleep(int(cycles_per_s * hold_s))
        dist.all_reduce(extra)
        log("held.enqueued_after_s", time.monotonic() - t0)
        timeline = []
        while time.monotonic() - t0 < hold_s + 4:
            time.sleep(0.5)
            status = guarded("held.status", lambda: decode(ext._dump_fr_trace_json(False, False)))
            nccl_status = (
                guarded("held.nccl_status", lambda: decode(ext._dump_nccl_trace_json(False, False)))
                if hasattr(ext, "_dump_nccl_trace_json")
                else None
            )
            if len(timeline) == 4 and hasattr(watcher.source, "status"):  # the raw status while held
                for recorder, raw in guarded("held.raw_status", watcher.source.status) or ():
                    write(f"held_status_{recorder}.raw", bytes(raw) if not isinstance(raw, str) else raw.encode())
            timeline.append(
                {
                    "t": round(time.monotonic() - t0, 2),
                    "fr": (status or {}).get("pg_status") if isinstance(status, dict) else status,
                    "nccl": (nccl_status or {}).get("pg_status") if isinstance(nccl_status, dict) else None,
                    "watch": guarded("held.watch", lambda: watcher.sampler.progress(time.monotonic())),
                }
            )
        torch.cuda.synchronize()
        log("held.timeline", timeline)
        write("held_timeline.json", json.dumps(timeline, default=str, indent=1))
        time.sleep(2.0)
    # the watcher's own dump writer (what a dump request makes every rank do)
    os.environ["TORCH_FR_DUMP_TEMP_FILE"] = os.path.join(OUT, "watch_dump_rank")
    guarded("watch.dump", watcher._write_flight_recorder_dump)
    events = []
    path = os.path.join(OUT, f"events-rank{RANK}.jsonl")
    if os.path.exists(path):
        with open(path) as handle:
            events = [json.loads(line) for line in handle if line.strip()]
    log(
        "watch.events",
        [{k: e.get(k) for k in ("code", "kind", "summary", "ranks", "group", "seq")} for e in events],
    )
    watch.stop()
    dist.destroy_process_group()
    write("diag.json", json.dumps(results, default=str, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
