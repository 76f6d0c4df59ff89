"""``syncdoctor lab``: option validation, refusal without root, and a real user script across two hosts."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from conftest import requires_root
from syncdoctor.testing import _netns

USER_SCRIPT = textwrap.dedent("""
    import os, socket
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    total = torch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(total)
    print(f"user-script rank={dist.get_rank()} host={socket.gethostname()} sum={int(total.item())} "
          f"mark={os.environ.get('SD_MARK', '<unset>')}", flush=True)
    dist.destroy_process_group()
""")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hosts", "2"], "give the command to run after --"),
        (["--throttle", "host1", "--", "python", "x.py"], "--throttle expects HOST=VALUE"),
        (["--throttle", "host5=10mbit", "--", "python", "x.py"], "no host 'host5'"),
        (["--throttle", "host1=warp9", "--", "python", "x.py"], "rate 'warp9' not understood"),
        (["--cut", "host1@later", "--", "python", "x.py"], "duration 'later' not understood"),
        (["--mtu", "host0=12", "--", "python", "x.py"], "not an MTU"),
        (["--host-env", "SD_MARK=1", "--", "python", "x.py"], "--host-env expects HOST:NAME"),
        (["--hosts", "0", "--", "python", "x.py"], "--hosts must be between"),
    ],
)
def test_bad_options_are_usage_errors(run_cli, argv: list[str], message: str) -> None:
    before = _netns.list_lab_namespaces()
    result = run_cli("lab", *argv)
    assert result.code == 2
    assert message in result.out and "Traceback" not in result.out
    assert [ns for ns in _netns.list_lab_namespaces() if ns.startswith(f"sdlab-{os.getpid()}-")] == [
        ns for ns in before if ns.startswith(f"sdlab-{os.getpid()}-")
    ]


def test_refused_with_exit_3_without_root(run_cli, monkeypatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    result = run_cli("lab", "--hosts", "2", "--", "python", "train.py")
    assert result.code == 3
    assert "needs root" in result.out


@requires_root
def test_lab_runs_a_user_script_across_two_hosts(run_cli, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(USER_SCRIPT)
    run_dir = tmp_path / "run"
    result = run_cli(
        "lab", "--hosts", "2", "--procs-per-host", "1", "--rdzv", "c10d", "--throttle", "host1=50mbit",
        "--env", "SD_MARK=set", "--host-env", "host1:SD_MARK", "--run-dir", str(run_dir), "--timeout", "120",
        "--", "python", str(script),
    )
    assert result.code == 0, result.out
    assert "throttled to 50mbit" in result.out and str(run_dir) in result.out
    assert "job succeeded" in result.out
    logs = sorted(run_dir.glob("host*/rank*.log"))
    assert len(logs) == 2
    lines = sorted(line for log in logs for line in log.read_text().splitlines() if "user-script" in line)
    hosts = {line.split("host=")[1].split()[0] for line in lines}
    assert hosts == {"host0", "host1"}
    assert all("sum=3" in line for line in lines)
    marks = {line.split("host=")[1].split()[0]: line.split("mark=")[1] for line in lines}
    assert marks == {"host0": "set", "host1": "<unset>"}
    assert not [ns for ns in _netns.list_lab_namespaces() if ns.startswith(f"sdlab-{os.getpid()}-")]
