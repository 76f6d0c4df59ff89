"""The watcher's cheap paths give the same answers as the plain ones (functional checks, no timing).

The hot paths that keep watching cheap (see benchmarks/bench_watch_overhead.py and docs/performance.md):
the status scan instead of ``json.loads``, the unchanged-status shortcut, step marks from the groups'
sequence numbers instead of the status, and sleeping samplers that still stop when asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from syncdoctor.watch.recorder import parse_status

STATUS = (b'{"comm_lib_version":"","nccl_comm_state":{},"pg_config":{"":{"desc":"","name":"","ranks":"[0, 1]"}},'
          b'"pg_status":{"0":{"last_completed_collective":"1023","last_enqueued_collective":"1024",'
          b'"last_started_collective":"-1"},"1":{"last_completed_collective":"-1","last_enqueued_collective":"-1",'
          b'"last_started_collective":"-1"}},"version":"2.10"}')


def _by_json(raw: bytes) -> dict[int, tuple[int, int]]:
    status = json.loads(raw)["pg_status"]
    return {int(k): (max(0, int(v["last_enqueued_collective"])), max(0, int(v["last_completed_collective"])))
            for k, v in status.items()}


def test_status_scan_matches_json() -> None:
    assert parse_status(STATUS) == _by_json(STATUS) == {0: (1024, 1023), 1: (0, 0)}
    empty = b'{"comm_lib_version":"","nccl_comm_state":{},"pg_config":{},"pg_status":{},"version":"2.10"}'
    assert parse_status(empty) == {}


def test_status_in_another_layout_falls_back_to_json() -> None:
    doc = json.loads(STATUS)
    doc["pg_status"]["0"] = {"last_enqueued_collective": 7, "last_completed_collective": 6}  # numbers, other order
    raw = json.dumps(doc, indent=1).encode()
    assert parse_status(raw) == {0: (7, 6), 1: (0, 0)}
    assert parse_status(raw.decode()) == {0: (7, 6), 1: (0, 0)}  # str: always the JSON parser
    with pytest.raises(ValueError):
        parse_status(b"not json")


JOB = r"""
import json, os, socket, threading, time
import torch, torch.distributed as dist
import torch._C._distributed_c10d as ext
from torch import nn
import syncdoctor.watch as watch
from syncdoctor.watch.recorder import FlightRecorderSource, GroupDirectory, parse_status

s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
dist.init_process_group("gloo")
out = {}
watcher = watch.start(sample_interval_s=0.02, interval_s=0.2, monitor="off", exit_linger_s=0, nice=10)
other = dist.new_group([0])  # created after start: the marks must pick it up
model = torch.nn.parallel.DistributedDataParallel(nn.Linear(8, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
expected = {}
for step in range(1, 7):
    model(torch.ones(2, 8)).sum().backward()
    if step % 2 == 0:
        dist.all_reduce(torch.ones(3), group=other)
    opt.step(); opt.zero_grad()  # the optimizer hook marks the step here
    status = parse_status(ext._dump_fr_trace_json(False, False))
    expected[step] = {watcher.directory.name_of(uid): entered for uid, (entered, _) in status.items()}
    time.sleep(0.05)
time.sleep(0.1)
out["marks"] = {m.step: dict(m.entered) for m in watcher.sampler.marks()}
out["expected"] = expected
out["sequence_numbers"] = watcher.directory.sequence_numbers()
out["readings"] = watcher.source.readings()
source = FlightRecorderSource(GroupDirectory())
first = source.readings()
out["same_object_when_unchanged"] = source.readings() is first
out["threads_alive_before"] = [t.is_alive() for t in watcher._threads]
out["counter_marks"] = watcher._counter_marks
out["nice_main"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
out["nice_watcher"] = [os.getpriority(os.PRIO_PROCESS, t.native_id) for t in watcher._threads]
watcher.stop()
out["threads_alive_after"] = [t.is_alive() for t in watcher._threads]
slow = watch.start(sample_interval_s=5.0, interval_s=5.0, monitor="off", exit_linger_s=0)
time.sleep(0.2)
slow.stop()  # a long interval sleeps on the event: stop() must not wait for it
out["slow_threads_alive_after"] = [t.is_alive() for t in slow._threads]
third = watch.start(interval_s=0.2, exit_linger_s=0, nice=10)  # with its monitor, started by the publisher thread
deadline = time.time() + 20
while (third.monitor is None or not third.monitor.alive) and time.time() < deadline:
    time.sleep(0.05)
out["nice_monitor"] = os.getpriority(os.PRIO_PROCESS, third.monitor._thread.native_id) if third.monitor else None
third.stop()
print("OUT " + json.dumps(out))
dist.destroy_process_group()
"""


def test_marks_from_sequence_numbers_match_the_flight_recorder_and_samplers_stop() -> None:
    pytest.importorskip("torch.distributed")
    proc = subprocess.run([sys.executable, "-c", JOB], capture_output=True, text=True, timeout=180,
                          env=dict(os.environ))
    line = next((x for x in proc.stdout.splitlines() if x.startswith("OUT ")), None)
    assert line is not None, proc.stdout + proc.stderr
    out = json.loads(line[4:])
    marks = {int(k): v for k, v in out["marks"].items()}
    expected = {int(k): v for k, v in out["expected"].items()}
    assert sorted(marks) == [1, 2, 3, 4, 5, 6]
    for step, counts in expected.items():
        # every group with a collective is in the mark, with the count the Flight Recorder shows
        assert {g: n for g, n in marks[step].items() if n} == {g: n for g, n in counts.items() if n}, step
    assert len([g for g, n in marks[6].items() if n]) == 2  # the group created after start() is counted
    readings = {g: tuple(v) for g, v in out["readings"].items()}
    assert {g: e for g, (e, _c) in readings.items()} == out["sequence_numbers"]
    assert out["same_object_when_unchanged"] is True
    assert out["counter_marks"] is True  # the marks above came from the sequence numbers
    assert out["threads_alive_before"] == [True, True]
    assert out["threads_alive_after"] == [False, False]
    assert out["slow_threads_alive_after"] == [False, False]
    # with nice=10 the watcher's threads run below training's priority; training keeps its own
    assert out["nice_watcher"] == [min(19, out["nice_main"] + 10)] * 2
    assert out["nice_monitor"] == min(19, out["nice_main"] + 10)  # not lowered twice
