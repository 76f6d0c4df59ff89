"""Real multi-host torchrun jobs in the lab: a clean DDP run and the workload's process faults.

Each test is one small job (2 hosts x 2 ranks, or 3 x 1), a few steps, short collective timeouts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import requires_root
from syncdoctor.testing.lab import JobResult, Lab
from syncdoctor.testing.workload import parse_step_lines

WORKLOAD = ["-m", "syncdoctor.testing.workload"]


def steps_by_rank(result: JobResult) -> dict[int, dict[int, object]]:
    return {rank: {line.step: line for line in parse_step_lines(result.output(rank))} for rank in result.rank_logs}


@requires_root
def test_clean_2x2_ddp_job_completes_with_per_host_env(lab_factory, tmp_path: Path) -> None:
    lab: Lab = lab_factory(2)
    job = lab.torchrun(
        [*WORKLOAD, "--steps", "4", "--print-env", "SD_MARK"],
        procs_per_host=2,
        env={"SD_MARK": "everywhere"},
        host_env={"host1": {"SD_MARK": None}},
        run_dir=tmp_path,
    )
    result = job.wait(timeout=120)
    assert result.ok, result.summary()
    assert result.returncodes == {"host0": 0, "host1": 0}
    assert sorted(result.rank_logs) == [0, 1, 2, 3]
    assert result.rank_hosts == {0: "host0", 1: "host0", 2: "host1", 3: "host1"}  # static: host order
    assert set(result.host_logs) == {"host0", "host1"}
    steps = steps_by_rank(result)
    for rank in range(4):
        assert sorted(steps[rank]) == [0, 1, 2, 3]
        assert f"start rank={rank} world=4 host={result.rank_hosts[rank]}" in result.output(rank)
        assert "done rank=" in result.output(rank)
    # DDP averaged the gradients: every rank reports the same all-reduced loss at every step.
    assert len({steps[rank][3].loss for rank in range(4)}) == 1  # type: ignore[attr-defined]
    assert "SD_MARK=everywhere" in result.output(0) and "SD_MARK=<unset>" in result.output(2)


@requires_root
def test_late_rank_is_measured_and_a_frozen_rank_shows_state_T(lab_factory, tmp_path: Path) -> None:
    lab: Lab = lab_factory(2)
    faults = [
        {"rank": 3, "kind": "late", "at": 2, "seconds": 2.0, "where": "load_batch"},
        {"rank": 1, "kind": "freeze", "at": 4},
    ]
    job = lab.torchrun(
        [*WORKLOAD, "--steps", "6", "--grad-sync", "manual", "--collective-timeout", "4",
         "--fault", json.dumps(faults)],
        procs_per_host=2,
        run_dir=tmp_path,
    )
    assert job.wait_for_output(1, r"fault kind=freeze rank=1 step=4", timeout=120), job.rank_log(1)
    pid = job.rank_pids()[1]
    state, deadline = "", time.monotonic() + 5
    while state != "T" and time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        time.sleep(0.05)
    assert state == "T"
    # The others give up after the 4 s collective timeout. (torchrun 2.13 then waits 30 s for the stopped
    # rank to honour SIGTERM whatever --shutdown-timeout says, so the test stops the job itself.)
    assert job.wait_for_output(0, r"Timed out waiting 4000ms|Connection closed by peer", timeout=60)
    result = job.wait(timeout=0)
    steps = steps_by_rank(result)
    late = steps[3][2].ready - max(steps[rank][2].ready for rank in (0, 1, 2))  # type: ignore[attr-defined]
    assert 1.4 <= late <= 3.5, late  # 2 s, with room for a busy machine's scheduling
    for rank in (0, 1, 2):  # the punctual ranks spent the wait inside the step's gradient all_reduce
        waited = steps[rank][2].end - steps[rank][2].ready  # type: ignore[attr-defined]
        assert waited >= 1.4, (rank, waited)
    assert 4 not in steps[1] and 4 not in steps[0]


@requires_root
def test_skipped_collective_hangs_until_the_collective_timeout(lab_factory, tmp_path: Path) -> None:
    lab: Lab = lab_factory(2)
    job = lab.torchrun(
        [*WORKLOAD, "--steps", "6", "--grad-sync", "manual", "--collective-timeout", "3",
         "--fault", json.dumps({"rank": 1, "kind": "skip", "at": 2})],
        procs_per_host=2,
        run_dir=tmp_path,
    )
    result = job.wait(timeout=120)
    assert not result.timed_out, result.summary()
    assert all(code not in (0, None) for code in result.returncodes.values()), result.summary()
    assert "fault kind=skip rank=1 step=2" in result.output(1)
    outputs = "".join(result.output(rank) for rank in range(4))
    assert "Timed out waiting 3000ms" in outputs
    steps = steps_by_rank(result)
    # Ranks 0, 2, 3 wait in the metric all_reduce of step 2; rank 1 waits in step 3's gradient all_reduce.
    assert all(2 not in steps[rank] for rank in (0, 2, 3)) and 3 not in steps[1]
    # ... a hang, not an immediate error: nothing fails before the timeout has run out.
    stuck = steps[0][1].end  # type: ignore[attr-defined]
    first_error = min(path.stat().st_mtime for path in result.rank_logs.values())
    assert first_error - stuck >= 2.5


@requires_root
def test_crash_modes_give_their_exit_codes(lab_factory, tmp_path: Path) -> None:
    lab: Lab = lab_factory(3)
    faults = [
        {"rank": 0, "kind": "crash", "at": 2, "mode": "exception"},
        {"rank": 1, "kind": "crash", "at": 2, "mode": "exit", "code": 7},
        {"rank": 2, "kind": "crash", "at": 2, "mode": "sigkill"},
    ]
    job = lab.torchrun(
        [*WORKLOAD, "--steps", "5", "--grad-sync", "manual", "--collective-timeout", "5",
         "--fault", json.dumps(faults)],
        procs_per_host=1,
        run_dir=tmp_path,
    )
    result = job.wait(timeout=120)
    assert not result.timed_out
    assert all(code == 1 for code in result.returncodes.values()), result.summary()
    assert "RuntimeError: injected fault: rank 0 crashes at step 2" in result.output(0)
    # rank 0 raises and exits 1; when rank 2's SIGKILL lands in the same instant, gloo's pair threads may abort
    # the interpreter on its way out (seen under load): torchrun then records SIGABRT after the exception
    host0 = result.host_output("host0")
    assert "exitcode  : 1 " in host0 or "Signal 6 (SIGABRT)" in host0, host0
    assert "exitcode  : 7 " in result.host_output("host1")
    assert "exitcode  : -9 " in result.host_output("host2") and "SIGKILL" in result.host_output("host2")


@requires_root
def test_workload_trigger_cuts_a_link_mid_job(lab_factory, tmp_path: Path) -> None:
    lab: Lab = lab_factory(2)
    job = lab.torchrun(
        [*WORKLOAD, "--steps", "8", "--grad-sync", "manual", "--collective-timeout", "3",
         "--fault", json.dumps({"rank": 0, "kind": "trigger", "at": 3, "name": "cut-host1"})],
        procs_per_host=1,
        run_dir=tmp_path,
    )
    job.on_trigger("cut-host1", lambda: lab.cut("host1"))
    result = job.wait(timeout=120)
    assert not result.ok and not result.timed_out
    assert (tmp_path / "triggers" / "cut-host1.done").exists()
    assert lab.run("host1", ["cat", "/sys/class/net/eth0/carrier"]).stdout.strip() == "0"
    assert "trigger name=cut-host1 acted=yes" in result.output(0)
    steps = steps_by_rank(result)
    # Rank 0 resumed step 3 only once the link was down: nobody completed it.
    assert 2 in steps[0] and 3 not in steps[0] and 3 not in steps[1], result.summary()
    outputs = result.output(0) + result.output(1)
    assert "Timed out waiting 3000ms" in outputs or "Connection" in outputs, result.summary()


@requires_root
def test_c10d_rendezvous_and_a_host_that_never_starts(lab_factory, tmp_path: Path) -> None:
    """With c10d, a job waits for the missing host until the rendezvous gives up (here: we stop it)."""
    lab: Lab = lab_factory(2)
    job = lab.torchrun([*WORKLOAD, "--steps", "2"], procs_per_host=1, run_dir=tmp_path, rdzv="c10d",
                       hosts=["host0"])
    result = job.wait(timeout=6)
    assert result.timed_out
    assert result.returncodes["host1"] is None
    assert result.rank_logs == {}  # nobody got a rank: the rendezvous never completed


def test_loopback_mode_runs_the_job_on_one_host(tmp_path: Path) -> None:
    """Without namespaces (no root) the same API runs every host's agent on 127.0.0.1."""
    with Lab(2, mode="loopback") as lab:
        job = lab.torchrun([*WORKLOAD, "--steps", "2", "--grad-sync", "manual"], procs_per_host=1, run_dir=tmp_path)
        result = job.wait(timeout=120)
    assert result.ok, result.summary()
    assert result.rank_hosts == {0: "host0", 1: "host1"}
    assert "start rank=1 world=2 host=host1" in result.output(1)
