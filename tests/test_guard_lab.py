"""The guard in a lab cluster: real torchrun jobs on two hosts (network namespaces, as root)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import requires_root

pytestmark = [requires_root, pytest.mark.root, pytest.mark.slow]

SCRIPT = """
import json, sys, time
import torch.distributed as dist
from syncdoctor.guard import NotReadyError, assert_ready

dist.init_process_group("gloo")
try:
    report = assert_ready()
except NotReadyError as exc:
    print("GUARD-ERROR " + json.dumps({"rank": dist.get_rank(), "message": str(exc)}), flush=True)
    sys.exit(3)
print("GUARD-OK " + json.dumps({"rank": dist.get_rank(), "elapsed_s": report.elapsed_s, "own_s": report.own_s,
                                "phases_s": dict(report.phases_s), "hosts": list(report.hosts)}), flush=True)
dist.destroy_process_group()
"""


def _lines(result, marker: str) -> dict[int, dict]:
    found = {}
    for rank in result.rank_logs:
        match = re.search(rf"^{marker} (.*)$", result.output(rank), re.MULTILINE)
        if match:
            found[rank] = json.loads(match.group(1))
    return found


def test_guard_passes_on_a_healthy_cluster_within_budget(lab_factory, tmp_path: Path) -> None:
    lab = lab_factory(2)
    script = tmp_path / "guarded.py"
    script.write_text(SCRIPT)
    result = lab.torchrun([str(script)], procs_per_host=2, run_dir=tmp_path / "run").wait(timeout=180)
    assert result.ok, result.summary()
    reports = _lines(result, "GUARD-OK")
    assert sorted(reports) == [0, 1, 2, 3], result.summary()
    assert all(sorted(r["hosts"]) == ["host0", "host1"] for r in reports.values())
    own = [r["own_s"] for r in reports.values()]
    print(f"guard on 2 hosts x 2 ranks: own time per rank {[round(s, 3) for s in own]} s; "
          f"phases of rank 0 {reports[0]['phases_s']}")
    assert max(own) < 2.0  # the budget


def test_guard_names_the_misconfigured_host(lab_factory, tmp_path: Path) -> None:
    lab = lab_factory(2)
    script = tmp_path / "guarded.py"
    script.write_text(SCRIPT)
    bad = {"NCCL_IB_TIMEOUT": "60", "TORCH_NCCL_BLOCKING_WAIT": "1"}  # one image exports these on host1 only
    result = lab.torchrun([str(script)], procs_per_host=1, host_env={"host1": bad},
                          run_dir=tmp_path / "run").wait(timeout=180)
    errors = _lines(result, "GUARD-ERROR")
    assert sorted(errors) == [0, 1], result.summary()
    message = errors[0]["message"]
    assert errors[1]["message"] == message  # one verdict, the same on every rank
    assert message.startswith("syncdoctor guard: the job is not ready to train: 3 error(s) across 2 rank(s) on 2 host(s)")
    assert ("G101 setting-differs-between-ranks (error): NCCL_IB_TIMEOUT differs between ranks: host1 (rank 1) "
            "has NCCL_IB_TIMEOUT=60, while host0 (rank 0) leaves it unset") in message
    assert "TORCH_NCCL_BLOCKING_WAIT differs between ranks: host1 (rank 1) has TORCH_NCCL_BLOCKING_WAIT=1" in message
    assert "G104 invalid-setting-on-rank (error): E201 on host1 (rank 1): NCCL_IB_TIMEOUT=60 is outside 0-31" in message
    assert "host0 (rank 0) has" not in message
