"""Failures one GPU can produce for real, each run under torchrun by scripts/gpu-check.sh (part ``failures``).

``python -m torch.distributed.run --nproc-per-node N scripts/gpu_failures.py MODE``; the check script sets the
environment each mode needs (``NCCL_NET``, ``NCCL_COMM_ID``, ``CUDA_VISIBLE_DEVICES``). Modes:

- ``dupgpu``: two ranks on ``cuda:0`` (NCCL refuses two ranks of a communicator on one GPU);
- ``ordinal``: two ranks, each on ``cuda:LOCAL_RANK``, on a machine with one GPU (more processes than GPUs);
- ``plain``: one rank, init and an all_reduce (the failure comes from the environment the check script sets);
- ``oom``: one rank that holds nearly all GPU memory before NCCL sets up its communicator;
- ``assert``: one rank whose kernel trips a device-side assert while an all_reduce is queued behind it, and
  the main thread sleeps, so PyTorch's watchdog is the first to see the CUDA error;
- ``trainoom``: one rank that asks for more GPU memory than there is after its first all_reduce (PyTorch's
  ``torch.OutOfMemoryError`` in a training step).

The logs are what these runs print (torch's, NCCL's, torchrun's own lines); they feed ``syncdoctor analyze``
and become test data. Needs CUDA.
"""

from __future__ import annotations

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
local = int(os.environ.get("LOCAL_RANK", "0"))
index = 0 if mode == "dupgpu" else local
print(f"mode {mode} rank {os.environ.get('RANK')} local_rank {local} device cuda:{index}", flush=True)
device = torch.device("cuda", index)
torch.cuda.set_device(device)
held = None
if mode == "oom":
    free, total = torch.cuda.mem_get_info(device)
    held = torch.empty(max(free - (48 << 20), 0), dtype=torch.uint8, device=device)
    print(f"holding {held.numel() >> 20} MiB of {total >> 20} MiB", flush=True)
dist.init_process_group("nccl", device_id=device, timeout=datetime.timedelta(seconds=20))
t = torch.ones(1 << 24 if mode == "oom" else 1 << 20, device=device)
dist.all_reduce(t)
torch.cuda.synchronize()
print("first all_reduce completed", flush=True)
if mode == "assert":
    index_tensor = torch.tensor([1 << 20], device=device)
    _ = torch.ones(4, device=device)[index_tensor]  # out of bounds: a device-side assert, reported later
    dist.all_reduce(t)
    time.sleep(30)  # the watchdog polls the work's event and meets the CUDA error first
    torch.cuda.synchronize()
if mode == "trainoom":
    _ = torch.empty(torch.cuda.mem_get_info(device)[1] * 2, dtype=torch.uint8, device=device)
dist.destroy_process_group()
print("done", flush=True)
