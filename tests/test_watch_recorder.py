"""What the watcher assumes about torch 2.13's Flight Recorder with gloo, checked in a one-rank job.

Runs in a subprocess (a process group of one on a private store): the status read keys groups by
per-process ids in creation order, finished gloo entries stay ``scheduled`` with ``retired`` set, and
:class:`FlightRecorderSource` maps ids to group names and reads signatures from a full dump.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch.distributed")

SCRIPT = r"""
import json, os, socket
import torch, torch.distributed as dist
import torch._C._distributed_c10d as ext
from syncdoctor.watch.recorder import FlightRecorderSource, GroupDirectory, flight_recorder_reason
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
dist.init_process_group("gloo")
other = dist.new_group([0], group_desc="metrics")
t = torch.ones(10)
dist.all_reduce(t); dist.all_reduce(t); dist.broadcast(t, 0)
dist.all_reduce(torch.ones(3, 2, dtype=torch.float64), group=other)
dist.barrier()
full = json.loads(ext._dump_fr_trace_json(includeCollectives=True, onlyActive=False))
directory = GroupDirectory()
source = FlightRecorderSource(directory)
out = {
    "reason": flight_recorder_reason(),
    "states": sorted({(e["state"], e["retired"]) for e in full["entries"]}),
    "status_keys": sorted(json.loads(ext._dump_fr_trace_json(includeCollectives=False, onlyActive=False))["pg_status"]),
    "readings": source.readings(),
    "names": [dist.group.WORLD.group_name, other.group_name],
    "sig_default_3": list(source.signature("0", 3).to_json()),
    "sig_other_1": list(source.signature(other.group_name, 1).to_json()),
}
from syncdoctor.watch.publisher import write_flight_recorder_dump
os.environ["TORCH_FR_DUMP_TEMP_FILE"] = os.environ["DUMP_PREFIX"]
write_flight_recorder_dump(0, GroupDirectory().recorders)
print("OUT " + json.dumps(out))
dist.destroy_process_group()
"""


def test_flight_recorder_facts_the_watcher_relies_on(tmp_path: Path) -> None:
    env = dict(os.environ, DUMP_PREFIX=str(tmp_path / "fr_rank_"))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("OUT ")), None)
    assert line is not None, proc.stdout + proc.stderr
    out = json.loads(line[4:])
    assert out["reason"] == ""
    # gloo: completion is never in `state`; entries retire asynchronously, so the newest may not have yet
    assert {state for state, _ in out["states"]} == {"scheduled"} and ["scheduled", True] in out["states"]
    assert out["status_keys"] == ["0", "1"]  # per-process ids in creation order, not group names
    default, other = out["names"]
    readings = {k: tuple(v) for k, v in out["readings"].items()}
    assert readings[default][0] == 4 and readings[other] == (1, 1)  # 2 all_reduce, broadcast, barrier
    assert out["sig_default_3"][0] == "broadcast" and out["sig_default_3"][1] == [[10]]
    assert out["sig_other_1"] == ["all_reduce", [[3, 2]], ["Double"], [[3, 2]]]
    # the dump asked for on a confirmed hang: PyTorch's own pickle, where torchfrtrace looks for it
    dump = (tmp_path / "fr_rank_0").read_bytes()
    assert dump[:1] == b"\x80" and b"entries" in dump and b"all_reduce" in dump


def test_importing_the_watch_does_not_import_torch() -> None:
    code = "import sys, syncdoctor.watch, syncdoctor.cli.watch; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr
