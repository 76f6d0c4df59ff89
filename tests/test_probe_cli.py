"""The probe CLI without a job: usage errors and exit codes, the srun launch path, the stage watchdog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from syncdoctor.probe.local import free_port
from syncdoctor.probe.watchdog import StageWatchdog

LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_PROCID", "MASTER_ADDR")


@pytest.fixture
def no_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LAUNCH_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("probe",), "no launcher environment"),
        (("probe", "--sizes", "64M:1K"), "smaller than the first"),
        (("probe", "--ops", "scan"), "unknown collective"),
        (("probe", "--backend", "mpi"), "invalid choice"),
        (("probe", "--local", "0"), "at least 1 rank"),
        (("probe", "--iters", "0"), "at least 1"),
        (("probe", "--node-rank", "1"), "needs --nnodes"),
        (("probe", "--link-bytes", "lots"), "not a byte size"),
    ],
)
def test_usage_errors_exit_2_without_traceback(run_cli, no_launcher, argv: tuple[str, ...], message: str) -> None:
    pytest.importorskip("torch")
    result = run_cli(*argv)
    assert result.code == 2, result.out
    assert message in result.out and "Traceback" not in result.out


def test_bad_hook_value_is_a_usage_error(run_cli, no_launcher, monkeypatch) -> None:
    monkeypatch.setenv("SYNCDOCTOR_PROBE_CLOCK_OFFSET_S", "soon")
    result = run_cli("probe", "--local", "1")
    assert result.code == 2 and "is not a number" in result.out


@pytest.mark.slow
def test_srun_environment_names_the_missing_node_from_the_node_list(tmp_path) -> None:
    """One srun task of two: the other node's task never starts; its name comes from SLURM_JOB_NODELIST."""
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    env.update({
        "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_NNODES": "2",
        "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_TASKS_PER_NODE": "1(x2)", "SLURM_JOB_ID": "4242",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
    })
    report = tmp_path / "probe.json"
    proc = subprocess.run([sys.executable, "-m", "syncdoctor", "probe", "--join-timeout", "2", "--json", str(report)],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 4, proc.stdout + proc.stderr  # the join stage failed
    assert "P001 node 1 (gpu08) never joined: rank(s) 1" in proc.stdout
    data = json.loads(report.read_text())
    assert data["launch"]["launcher"] == "slurm" and data["launch"]["host_names"] == ["gpu07", "gpu08"]
    assert data["launch"]["run_id"] == "slurm-4242-0"


def test_store_that_never_answers_is_reported(tmp_path) -> None:
    """Rank 1 of 2 whose master (rank 0, hosting the store) never started: P005 after the join timeout."""
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    env.update({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())})
    proc = subprocess.run([sys.executable, "-m", "syncdoctor", "probe", "--join-timeout", "2"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "P005 cannot reach the store at 127.0.0.1:" in proc.stdout


def test_watchdog_fires_once_per_armed_deadline_and_stops() -> None:
    fired: list[str] = []
    done = threading.Event()
    dog = StageWatchdog(lambda stage: (fired.append(stage), done.set()))
    dog.start()
    dog.arm("links", 0.01)
    assert done.wait(5)
    dog.arm("collectives", 60)
    dog.disarm()
    dog.stop()
    dog.join(5)
    assert fired == ["links"]
