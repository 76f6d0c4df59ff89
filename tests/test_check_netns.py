"""``syncdoctor check`` inside the lab's network namespaces (root only; CI runs these).

(a) hostnames resolving to 127.0.0.1 and no GLOO_SOCKET_IFNAME: check names the loopback problem and eth0
    (the interface that routes to the master); a real two-node gloo torchrun job fails without the
    suggested setting and succeeds with it;
(b) NCCL_SOCKET_IFNAME naming a missing interface is an error;
(c) a closed MASTER_PORT is reported as unreachable (refused), a cut link as a timeout, an open one as open.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import requires_root

pytestmark = [requires_root, pytest.mark.root]

# Variables of the outer environment that would change what check or the job sees.
_UNSET: dict[str, str | None] = {
    name: None
    for name in (
        "GLOO_SOCKET_IFNAME",
        "NCCL_SOCKET_IFNAME",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "NCCL_COMM_ID",
    )
}

JOB = textwrap.dedent(
    """
    import datetime
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
    value = torch.ones(1) * (dist.get_rank() + 1)
    dist.all_reduce(value)
    print(f"ALLREDUCE-SUM {value.item():g}", flush=True)
    dist.destroy_process_group()
    """
)


def run_check(lab: Any, host: str, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    proc = lab.run(
        host,
        [sys.executable, "-m", "syncdoctor", "check", "--json", "--timeout", "1", *args],
        env={**_UNSET, **env},
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def wait_for_output_any(job: Any, pattern: str, timeout: float) -> int | None:
    """The first rank whose output matches ``pattern``; None when the job ends or the time runs out."""
    regex = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rank in range(job.world_size):
            path = job.rank_log(rank)
            if path is not None and regex.search(path.read_text(errors="replace")):
                return rank
        if job.poll() is not None:
            return None
        time.sleep(0.1)
    return None


def findings(doc: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == code]


def test_loopback_hostname_check_names_the_fix_and_the_job_proves_it(lab_factory, tmp_path: Path) -> None:
    lab = lab_factory(2)
    master = lab.hosts[0]
    for host in lab.hosts:
        lab.hostname_to_loopback(host)
    env = {"MASTER_ADDR": master.addr, "MASTER_PORT": "29533"}

    fixes = {}
    for host in lab.hosts:
        code, doc = run_check(lab, host.name, env, "--no-network")
        assert code == 1
        names = doc["host"]["names"]
        assert names["hostname"] == host.name and names["resolved"][0] == "127.0.0.1"
        assert [i["name"] for i in doc["host"]["interfaces"]] == ["lo", "eth0"]  # the namespace's own view
        assert doc["host"]["route"]["interface"] == "eth0" and doc["host"]["route"]["source"] == host.addr
        assert doc["host"]["predictions"]["gloo"]["address"] == "127.0.0.1"
        (gloo,) = [f for f in findings(doc, "N001") if f["evidence"]["backend"] == "gloo"]
        assert gloo["severity"] == "error"
        assert "127.0.0.1" in gloo["title"] and "eth0" in gloo["title"]
        assert findings(doc, "H001"), "the hostname problem itself is reported too"
        match = re.search(r"export GLOO_SOCKET_IFNAME=(\S+)", gloo["fix"])
        assert match, gloo["fix"]
        fixes[host.name] = match.group(1)
    assert set(fixes.values()) == {"eth0"}

    script = tmp_path / "allreduce.py"
    script.write_text(JOB)
    broken = lab.torchrun([str(script)], procs_per_host=1, env=_UNSET, run_dir=tmp_path / "without")
    # The rank that dials first fails within a second of init with the loopback address in its error; the
    # other one would only give up after Gloo's own connect timeout, so stop the job once the first failed.
    failing_rank = wait_for_output_any(broken, r"connectFullMesh failed.*127\.0\.0\.1", timeout=150)
    failed = broken.wait(timeout=5 if failing_rank is not None else 1)
    assert failing_rank is not None, failed.summary()
    assert not failed.ok
    assert "ALLREDUCE-SUM" not in failed.output(0) + failed.output(1)

    host_env = {name: {"GLOO_SOCKET_IFNAME": value} for name, value in fixes.items()}
    fixed = lab.torchrun(
        [str(script)], procs_per_host=1, env=_UNSET, host_env=host_env, run_dir=tmp_path / "with"
    )
    result = fixed.wait(timeout=150)
    assert result.ok, result.summary()
    assert "ALLREDUCE-SUM 3" in result.output(0)

    code, doc = run_check(lab, lab.hosts[1].name, {**env, "GLOO_SOCKET_IFNAME": "eth0"}, "--no-network")
    assert not findings(doc, "N001") and doc["host"]["predictions"]["gloo"]["interface"] == "eth0"


def test_nccl_socket_ifname_naming_a_missing_interface_is_an_error(lab_factory) -> None:
    lab = lab_factory(1)
    code, doc = run_check(lab, "host0", {"NCCL_SOCKET_IFNAME": "eth9"}, "--no-network")
    assert code == 1
    errors = [f for f in doc["findings"] if f["severity"] == "error" and "NCCL_SOCKET_IFNAME" in f["title"]]
    assert errors, doc["findings"]
    assert "eth0" in errors[0]["fix"]
    assert doc["host"]["predictions"]["nccl"]["interface"] is None

    code, doc = run_check(lab, "host0", {"NCCL_SOCKET_IFNAME": "eth0"}, "--no-network")
    assert doc["host"]["predictions"]["nccl"]["interface"] == "eth0"
    assert not [f for f in doc["findings"] if f["severity"] == "error" and "NCCL_SOCKET_IFNAME" in f["title"]]


def test_master_port_closed_open_and_cut(lab_factory) -> None:
    lab = lab_factory(2)
    master = lab.hosts[0]
    env = {"MASTER_ADDR": master.addr, "MASTER_PORT": "29544"}

    _, doc = run_check(lab, "host1", env)
    (refused,) = findings(doc, "N005")
    assert "unreachable" in refused["title"] and "refused" in refused["title"]
    assert doc["host"]["reachability"]["result"] == "refused"

    listener = lab.popen(
        master.name,
        [
            sys.executable,
            "-c",
            (
                "import socket, time\n"
                "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                "s.bind(('0.0.0.0', 29544)); s.listen(8); print('listening', flush=True); time.sleep(120)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert listener.stdout is not None and listener.stdout.readline().strip() == "listening"
    _, doc = run_check(lab, "host1", env)
    assert doc["host"]["reachability"]["result"] == "open"
    assert not findings(doc, "N005") and not findings(doc, "N006")

    lab.cut(master)
    _, doc = run_check(lab, "host1", env)
    (unreachable,) = findings(doc, "N006")
    assert unreachable["severity"] == "error" and doc["host"]["reachability"]["result"] in (
        "timeout",
        "unreachable",
    )
