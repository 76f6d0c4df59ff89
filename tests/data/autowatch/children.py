"""A script with processes that are not ranks: DataLoader workers (fork and spawn) and a subprocess, beside
a script that may call syncdoctor.watch.start() itself (argv[1] == "explicit": every rank does; "explicit" followed
by ranks: only those ranks do, the others rely on the start-up hook alone). Prints one JSON line per process
saying whether a syncdoctor watcher runs there."""

import json
import os
import subprocess
import sys
import threading

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


def watching() -> dict:
    threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("syncdoctor-watch"))
    return {"pid": os.getpid(), "threads": threads,
            "autowatch": "syncdoctor.autowatch" in sys.modules}


class Probe(Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([len(watching()["threads"])])


def main() -> None:
    args = sys.argv[1:]
    explicit = bool(args) and args[0] == "explicit" and (len(args) == 1 or os.environ.get("RANK") in args[1:])
    mine = None
    if explicit:
        import syncdoctor.watch

        mine = syncdoctor.watch.start()
    dist.init_process_group("gloo")
    report = {"who": "rank", "rank": dist.get_rank(), **watching()}
    if explicit:
        import syncdoctor.watch

        report["same_watcher"] = syncdoctor.watch.current() is mine
    print(json.dumps(report), flush=True)
    for context in ("fork", "spawn"):
        loader = DataLoader(Probe(), batch_size=1, num_workers=2, multiprocessing_context=context)
        counts = [int(batch.item()) for batch in loader]
        print(json.dumps({"who": f"dataloader-{context}", "rank": dist.get_rank(), "threads": counts}), flush=True)
    code = "import json, sys, threading, torch.distributed; print(json.dumps({'who': 'subprocess', 'threads': " \
           "[t.name for t in threading.enumerate() if t.name.startswith('syncdoctor-watch')]}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    print(out.strip(), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
