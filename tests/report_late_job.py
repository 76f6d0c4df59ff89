"""One rank of a small watched gloo job with a chronic straggler and one late collective (report tests).

Usage: ``python report_late_job.py RANK WORLD MASTER_PORT EVENTS_FILE [LATE_S]``. The last rank sleeps
0.15 s before every all_reduce (a chronic straggler) and ``LATE_S`` more before collective 21 (a late
rank). Metrics are served by rank 0 when ``SYNCDOCTOR_METRICS_PORT`` is set.
"""

from __future__ import annotations

import os
import sys
import time

import torch
import torch.distributed as dist

import syncdoctor.watch


def main() -> None:
    rank, world, port, events = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    late_s = float(sys.argv[5]) if len(sys.argv) > 5 else 2.5
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), WORLD_SIZE=str(world))
    syncdoctor.watch.start(warn_after_s=1.0, interval_s=0.2, suspect_after_s=0.3, events_file=events,
                           straggler_min_events=3, straggler_min_wait_s=0.05)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    tensor = torch.ones(1000)
    for step in range(30):
        if rank == world - 1:
            time.sleep(0.15)
            if step == 20:
                time.sleep(late_s)
        dist.all_reduce(tensor)
        syncdoctor.watch.step(step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
