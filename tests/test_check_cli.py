"""``syncdoctor check`` end to end in-process (fake trees, loopback sockets) and in a subprocess without torch."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from host_fakes import build_node
from syncdoctor.cli.check import SCHEMA, build_default_args

SECRET = "hf_DoNotLeakThisValue1234"
_CLEARED_PREFIXES = ("NCCL_", "GLOO_", "TORCH_", "MASTER_", "TORCHELASTIC_")
_CLEARED = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No NCCL/Gloo/launcher variables from the outer environment."""
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) or name in _CLEARED:
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.fixture
def node(tmp_path: Path) -> Path:
    # An IP literal as hostname resolves without DNS, so the test does not depend on the resolver.
    return build_node(tmp_path / "node", hostname="10.0.0.7")


def check_json(run_cli, *args: str) -> tuple[int, dict]:
    result = run_cli("check", "--json", *args)
    return result.code, json.loads(result.out)


def test_json_schema_on_a_fake_node(run_cli, clean_env, node: Path) -> None:
    code, doc = check_json(run_cli, "--root", str(node), "--no-network")
    assert doc["schema"] == SCHEMA == "syncdoctor.check/1"
    host = doc["host"]
    assert {
        "names",
        "interfaces",
        "ib_ports",
        "limits",
        "versions",
        "predictions",
        "route",
        "reachability",
    } <= set(host)
    assert host["predictions"]["nccl"]["interface"] == "ib0"  # NCCL tries ib* first
    assert host["predictions"]["gloo"]["interface"] == "eth0"
    assert [p["device"] for p in host["ib_ports"]] == ["mlx5_0", "mlx5_1", "mlx5_2"]
    assert host["ib_ports"][0]["roce_v2_index"] == 3
    for finding in doc["findings"]:
        assert {"code", "severity", "title", "evidence", "why", "fix"} <= set(finding)
    found = {f["code"] for f in doc["findings"]}
    assert {"H006", "H011", "H012"} <= found  # mlx5_2 disabled, 8 MiB memlock with IB, versions
    assert doc["summary"]["exit_code"] == code
    assert code == (1 if doc["summary"]["error"] else 0)


def test_fail_on_warning_changes_the_exit_code(run_cli, clean_env, node: Path) -> None:
    code, doc = check_json(run_cli, "--root", str(node), "--no-network", "--fail-on", "warning")
    assert doc["summary"]["warning"] > 0 and code == 1


def test_terminal_report_header_and_fixes(run_cli, clean_env, node: Path) -> None:
    result = run_cli("check", "--root", str(node), "--no-network")
    out = result.out
    assert "syncdoctor check · host 10.0.0.7" in out
    assert "NCCL bootstrap  -> ib0 192.168.100.7  (ib* interfaces (tried first))" in out
    assert "Gloo            -> eth0 10.0.0.7" in out
    assert "mlx5_0:1" in out and "200 Gb/sec (4X HDR)" in out
    assert "H011" in out and "fix: /etc/security/limits.conf" in out
    assert "master: MASTER_ADDR not set" in out


def test_loopback_master_reachability(run_cli, clean_env, node: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        clean_env.setenv("MASTER_ADDR", "127.0.0.1")
        clean_env.setenv("MASTER_PORT", str(port))
        _code, doc = check_json(run_cli)
    assert doc["host"]["reachability"]["result"] == "open"
    assert doc["host"]["route"]["interface"] == "lo" and doc["host"]["route"]["local"] is True
    assert not {"N005", "N006", "N007"} & {f["code"] for f in doc["findings"]}


def test_closed_master_port_is_reported(run_cli, clean_env) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _code, doc = check_json(run_cli, "--master", f"127.0.0.1:{port}")
    (finding,) = [f for f in doc["findings"] if f["code"] == "N005"]
    assert "unreachable" in finding["title"] and "refused" in finding["title"]
    assert doc["host"]["master"] == {"host": "127.0.0.1", "port": port, "from": "--master"}


def test_secrets_never_appear(run_cli, clean_env, node: Path) -> None:
    clean_env.setenv("HF_TOKEN", SECRET)
    clean_env.setenv("TORCH_HUB_TOKEN", SECRET + "x")
    clean_env.setenv("NCCL_DEBUG_FILE", f"/tmp/{SECRET}.log")  # a secret value copied into a shown variable
    text = run_cli("check", "--root", str(node), "--no-network", "--show-env")
    assert SECRET not in text.out
    assert "TORCH_HUB_TOKEN=<redacted>" in text.out
    _code, doc = check_json(run_cli, "--root", str(node), "--no-network")
    dumped = json.dumps(doc)
    assert SECRET not in dumped
    assert doc["host"]["env"]["TORCH_HUB_TOKEN"] == "<redacted>"
    assert doc["host"]["env"]["NCCL_DEBUG_FILE"] == "/tmp/<redacted>.log"


@pytest.mark.parametrize(
    "args",
    [
        ["--master", "node:99999"],
        ["--master", ":29500"],
        ["--fail-on", "info"],
        ["--timeout", "0"],
        ["--env-file", "/nonexistent/job.sh"],
        ["--bogus"],
    ],
)
def test_usage_errors_exit_2(run_cli, clean_env, args: list[str]) -> None:
    result = run_cli("check", "--no-network", *args)
    assert result.code == 2, result.out
    assert "error" in result.out.lower() and "Traceback" not in result.out


def test_env_file_is_validated_instead_of_the_environment(
    run_cli, clean_env, node: Path, tmp_path: Path
) -> None:
    pytest.importorskip("syncdoctor.checks.envfile")
    job = tmp_path / "job.sh"
    job.write_text(
        "#!/bin/bash\nexport NCCL_SOCKET_IFNAME=eth9\nexport MASTER_ADDR=10.0.0.1\ntorchrun train.py\n"
    )
    clean_env.setenv("NCCL_SOCKET_IFNAME", "eth0")  # the current environment must be ignored
    code, doc = check_json(run_cli, "--root", str(node), "--no-network", "--env-file", str(job))
    assert doc["host"]["env"]["NCCL_SOCKET_IFNAME"] == "eth9"
    assert doc["host"]["master"]["host"] == "10.0.0.1"
    assert any("NCCL_SOCKET_IFNAME" in f["title"] and f["severity"] == "error" for f in doc["findings"])
    assert code == 1


def test_the_five_classic_mistakes(run_cli, clean_env) -> None:
    pytest.importorskip("syncdoctor.checks.env_rules")
    for name, value in {
        "NCCL_IB_TIMEOUT": "60",
        "NCCL_IB_RETRY_CNT": "32",
        "NCCL_TIMEOUT": "1800",
        "NCCL_P2P_LEVEL": "0",
        "NCCL_SOCKET_IFNAME": "eth9",
    }.items():
        clean_env.setenv(name, value)
    code, doc = check_json(run_cli, "--no-network")
    titles = [
        f["title"] + " " + json.dumps(f["evidence"]) for f in doc["findings"] if f["code"].startswith("E")
    ]
    for name in (
        "NCCL_IB_TIMEOUT",
        "NCCL_IB_RETRY_CNT",
        "NCCL_TIMEOUT",
        "NCCL_P2P_LEVEL",
        "NCCL_SOCKET_IFNAME",
    ):
        assert any(name in t for t in titles), f"{name} not reported: {titles}"
    assert code == 1


def test_build_default_args(run_cli, clean_env) -> None:
    args = build_default_args()
    assert (args.json, args.fail_on, args.root, args.no_network, args.master) == (
        False,
        "error",
        Path("/"),
        False,
        None,
    )
    result = run_cli("check", "--no-network")
    assert "syncdoctor check · host" in result.out and "NCCL bootstrap" in result.out


def test_check_runs_without_torch(tmp_path: Path) -> None:
    code = (
        "import sys, json, io\n"
        "sys.modules['torch'] = None\n"
        "from syncdoctor.cli.main import main\n"
        "rc = main(['check', '--json', '--no-network', '--import-torch'])\n"
        "print('TORCH-IMPORTED', 'torch' in sys.modules and sys.modules['torch'] is not None, file=sys.stderr)\n"
        "raise SystemExit(rc)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(_CLEARED_PREFIXES) and k not in _CLEARED}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["host"]["versions"]["torch"] is None
    assert "TORCH-IMPORTED False" in proc.stderr
