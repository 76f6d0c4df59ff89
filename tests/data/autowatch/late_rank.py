"""A plain training loop that knows nothing of syncdoctor: one rank is late before one all_reduce.

Arguments: LATE_RANK LATE_STEP LATE_SECONDS. Prints one JSON line per rank and step as the rank enters the
all_reduce ({"rank", "step", "at", "host"}), and which syncdoctor watcher runs in this process at the end.
"""

import json
import socket
import sys
import threading
import time

import torch
import torch.distributed as dist

late_rank, late_step, late_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
dist.init_process_group("gloo")
rank = dist.get_rank()
tensor = torch.ones(1024)
for step in range(late_step + 3):
    if rank == late_rank and step == late_step:
        time.sleep(late_s)
    print(json.dumps({"rank": rank, "step": step, "at": time.time(), "host": socket.gethostname()}), flush=True)
    dist.all_reduce(tensor)
threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("syncdoctor-watch"))
print(json.dumps({"rank": rank, "watch_threads": threads}), flush=True)
dist.destroy_process_group()
