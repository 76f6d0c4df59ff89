"""The fault-injecting workload, run as real gloo ranks on loopback (no lab, no torchrun: plain processes).

The multi-host runs under torchrun live in test_lab_jobs.py; here the cheaper faults whose effect is local
(spin, slow, pause, other op/size, trigger) and the workload's own command line.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from syncdoctor.testing.workload import StepLine, parse_step_lines

PY = sys.executable
WORKLOAD = [PY, "-m", "syncdoctor.testing.workload"]


@dataclass
class LocalRun:
    codes: list[int]
    outputs: list[str]

    def steps(self, rank: int) -> dict[int, StepLine]:
        return {line.step: line for line in parse_step_lines(self.outputs[rank])}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_ranks(world: int, args: list[str], tmp_path: Path, timeout: float = 120) -> LocalRun:
    """Start ``world`` workload ranks on loopback and wait for all of them."""
    port = str(free_port())
    procs, files = [], []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, OMP_NUM_THREADS="1",
                   SYNCDOCTOR_TRIGGER_DIR=str(tmp_path / "triggers"))
        log = open(tmp_path / f"rank{rank}.log", "w+")  # closed below
        files.append(log)
        procs.append(subprocess.Popen([*WORKLOAD, *args], env=env, stdout=log, stderr=subprocess.STDOUT))
    try:
        codes = [proc.wait(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        for log in files:
            log.close()
    return LocalRun(codes, [(tmp_path / f"rank{rank}.log").read_text() for rank in range(world)])


def test_step_lines_parse() -> None:
    text = (
        "noise\nsyncdoctor-workload step=3 rank=1 host=host0 start=10.5 ready=11.25 end=12.0 loss=0.5\n"
        "syncdoctor-workload step=4 rank=1 host=host0 start=12.0 ready=12.5 end=13.0 loss=nan\n"
    )
    lines = parse_step_lines(text)
    assert lines[0] == StepLine(3, 1, "host0", 10.5, 11.25, 12.0, 0.5)
    assert [line.step for line in lines] == [3, 4]


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--fault", "{oops"], "not valid JSON"), (["--fault", '{"rank": 0, "kind": "melt"}'], "kind must be"),
     (["--pause-all", "5"], "SECONDS@STEP")],
)
def test_bad_fault_spec_is_a_clear_error_not_a_traceback(args: list[str], message: str) -> None:
    proc = subprocess.run([*WORKLOAD, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_env_fault_spec_is_read_too() -> None:
    env = dict(os.environ, SYNCDOCTOR_FAULT='{"rank": 0, "kind": "melt"}')
    proc = subprocess.run(WORKLOAD, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2 and "kind must be" in proc.stderr


@pytest.mark.alone  # the spinning rank's CPU time against its peer's: not beside another test process
def test_spin_burns_cpu_slow_stretches_steps_and_pause_all_pauses_everyone(tmp_path: Path) -> None:
    faults = [
        {"rank": 0, "kind": "spin", "at": 2, "seconds": 1.5},
        {"rank": 1, "kind": "slow", "at": 5, "factor": 3.0},
        {"rank": 1, "kind": "trigger", "at": 1, "name": "cut-host1", "seconds": 0.1},
    ]
    args = ["--steps", "9", "--grad-sync", "manual", "--step-sleep", "0.03", "--pause-all", "0.6@8",
            "--fault", json.dumps(faults)]
    run = run_ranks(2, args, tmp_path)
    assert run.codes == [0, 0], run.outputs
    cpu = [float(out.rsplit("cpu=", 1)[1].split()[0]) for out in run.outputs]
    # The spinning rank burnt CPU while the other waited (margin for a loaded 2-core machine: the
    # difference is ~1.5 s when idle).
    assert cpu[0] - cpu[1] > 0.3, cpu
    zero, one = run.steps(0), run.steps(1)
    assert one[2].end - one[2].ready > 1.2  # ... in the gradient all_reduce, for the spin's 1.5 s
    # slow: from step 5 rank 1 reaches the collective later than rank 0 by about 2 x its step time
    lag = [one[s].ready - zero[s].ready for s in range(5, 8)]
    assert min(lag) > 0.03, lag
    assert all(zero[s].end - zero[s].ready > 0.03 for s in range(5, 8))  # rank 0 waits for it
    # pause-all: both ranks spend the pause inside step 8
    assert all(steps[8].ready - steps[8].start >= 0.6 for steps in (zero, one))
    assert (tmp_path / "triggers" / "cut-host1").exists()
    assert "fault kind=trigger rank=1 step=1 name=cut-host1" in run.outputs[1]
    assert "trigger name=cut-host1 acted=no" in run.outputs[1]  # no lab here to act on it


@pytest.mark.parametrize(
    ("fault", "announce"),
    [({"rank": 1, "kind": "other_op", "at": 2}, "op=broadcast"),
     ({"rank": 1, "kind": "other_size", "at": 2, "size": 3}, "size=3")],
)
def test_mismatched_metric_collective_ends_in_the_collective_timeout(
    tmp_path: Path, fault: dict[str, object], announce: str
) -> None:
    args = ["--steps", "5", "--grad-sync", "manual", "--collective-timeout", "2", "--fault", json.dumps(fault)]
    run = run_ranks(2, args, tmp_path)
    assert all(code != 0 for code in run.codes), run.outputs
    assert announce in run.outputs[1]
    assert any("Timed out waiting 2000ms" in out for out in run.outputs), run.outputs
    assert 2 not in run.steps(1)  # the faulty rank never finishes its mismatched collective
    assert not any("done" in out for out in run.outputs)
