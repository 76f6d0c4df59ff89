"""A rank whose sampler stops reading its progress while its publisher goes on (a starved or delayed
thread) must not publish, with fresh heartbeats, a reading taken inside a collective it has long left: the
monitor would take that for a transport hang (W104: "completed on rank 0 but not on rank 1") instead of
the late rank it is (W101). The symptom two CI runs showed (Lightning's, and the native-stack test's):
rank 1's record showed the broadcast before its late step entered and not completed for seconds.

Real gloo ranks on loopback. Rank 1's sampler is starved on purpose right after a reading taken inside
broadcast #N (rank 0 enters it half a second late), then rank 1 is late for #N+1. The publisher must read
the progress itself when the sampler's reading is two sampling intervals old. Held up inside a reading
instead (the reading's lock taken: the publisher cannot read either), its records carry the reading's age
and the monitor counts the broadcast its peer completed as completed (the same W104 in place of the late
rank against the code before record version 8, as a CI run showed twice).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow]

WORKER = r'''
import os, sys, threading, time
from datetime import timedelta
import torch, torch.distributed as dist
import syncdoctor.watch as watch
import syncdoctor.watch.runtime as runtime

rank = int(os.environ["RANK"])
starved = threading.Event()
read_inside = threading.Event()
sample = runtime.Watcher._sample

HOLD = os.environ.get("HOLD") == "1"

def starvable(self, *args, **kwargs):
    if threading.current_thread().name == "syncdoctor-watch-sampler":
        if starved.is_set() and HOLD:  # held up inside a reading: the publisher cannot read either
            with self._sampling:
                time.sleep(8.0)
            return True
        if starved.is_set():
            return False  # this thread gets no CPU: no reading
        done = sample(self, *args, **kwargs)
        progress = self.sampler.progress(self.clock()).get("0")
        if progress is not None and progress.entered == BROADCAST and progress.completed < BROADCAST:
            starved.set()  # the last reading it takes is inside the broadcast
            read_inside.set()
        return done
    return sample(self, *args, **kwargs)

if rank == 1:
    runtime.Watcher._sample = starvable
dist.init_process_group("gloo", timeout=timedelta(seconds=60))
watcher = watch.start(warn_after_s=2.0, suspect_after_s=0.5)
x = torch.zeros(4)
for _ in range(5):
    dist.all_reduce(x)
BROADCAST = 6  # the sixth collective of the default group
if rank == 0:
    time.sleep(0.8)  # rank 1 waits inside the broadcast meanwhile: its sampler reads it there
dist.broadcast(x, 0)
if rank == 1:
    print(f"READ-INSIDE {read_inside.wait(5)}", flush=True)
    time.sleep(5.0)  # late for the next all_reduce, its sampler starved
dist.all_reduce(x)
dist.destroy_process_group()
print(f"WORKER-EXIT rank={rank}", flush=True)
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


@pytest.mark.parametrize("hold", [False, True], ids=["starved", "held-inside-a-reading"])
def test_a_starved_sampler_does_not_turn_a_late_rank_into_a_hang(tmp_path: Path, hold: bool) -> None:
    """Starved: the publisher reads itself. Held inside a reading (the lock taken): the publisher cannot, its
    records carry the reading's age, and the monitor counts the broadcast its peer completed as completed."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port, events_file = str(_free_port()), tmp_path / "events.jsonl"
    procs = []
    for rank in range(2):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCDOCTOR_")}
        env.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   OMP_NUM_THREADS="1", SYNCDOCTOR_WATCH_EVENTS_FILE=str(events_file), HOLD="1" if hold else "0")
        procs.append(subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    try:
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    assert "READ-INSIDE True" in outputs[1], outputs[1][-2000:]  # the stale reading was really taken
    events = _events(events_file)
    assert not [e for e in events if e["code"] == "W104"], events
    late = [e for e in events if e["code"] == "W101" and e["status"] != "resolved"]
    assert late and late[0]["ranks"] == [1] and late[0]["seq"] == 7, events
