"""One NCCL rank whose all_reduce outlives a 5 s process-group timeout: real watchdog lines and dump.

Run by scripts/gpu-check.sh under torchrun with ``TORCH_NCCL_DUMP_ON_TIMEOUT=1`` and
``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` set. A spin kernel holds the stream for ``HOLD_S`` (default 20) seconds
ahead of the all_reduce, so the collective is entered but cannot complete: PyTorch's NCCL watchdog times it
out (and takes the process down), syncdoctor.watch (started first) reports it before that, and the logs and
the dump feed ``syncdoctor analyze``. Needs CUDA.
"""

from __future__ import annotations

import datetime
import os
import time

import torch
import torch.distributed as dist
from gpu_nccl_diag import spin_cycles_per_s  # beside this script (its folder is on sys.path)

import syncdoctor.watch as watch

out = os.environ.get("DIAG_OUT", ".")
watch.start(
    warn_after_s=2.0, suspect_after_s=1.0, events_file=os.path.join(out, "timeout-events-rank{rank}.jsonl")
)
device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
torch.cuda.set_device(device)
dist.init_process_group("nccl", device_id=device, timeout=datetime.timedelta(seconds=5))
t = torch.ones(1 << 20, device=device)
for _ in range(5):
    dist.all_reduce(t)
torch.cuda.synchronize()
cycles_per_s = spin_cycles_per_s()
print(f"holding the stream for {os.environ.get('HOLD_S', '20')} s", flush=True)
torch.cuda._sleep(int(cycles_per_s * float(os.environ.get("HOLD_S", "20"))))
dist.all_reduce(t)
t0 = time.monotonic()
torch.cuda.synchronize()
print(
    f"synchronize returned after {time.monotonic() - t0:.1f} s (the watchdog did not end the process)",
    flush=True,
)
watch.stop()
dist.destroy_process_group()
