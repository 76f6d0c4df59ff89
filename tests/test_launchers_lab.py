"""The launchers people use, for real, on two lab hosts (network namespaces): Slurm (slurmctld, one slurmd per
host, munge) and Open MPI's mpirun (its daemons started on the other host through the lab's remote shell).

Under each, an unmodified script with a late rank is watched with no code change (``syncdoctor run`` in front
of srun; ``SYNCDOCTOR_WATCH=1`` passed by mpirun's ``-x``) and the late rank is named alone within warn + 2 s;
``syncdoctor probe`` runs under srun. Slurm and Open MPI come from Debian's packages, which
``scripts/ensure-launchers.sh`` (run by ``make test``) installs; without them these tests skip, saying so.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import requires_root
from syncdoctor.testing.mpi import mpi_available, mpirun_argv
from syncdoctor.testing.slurm import SlurmCluster, slurm_available
from watch_helpers import watcher_said

pytestmark = [requires_root, pytest.mark.slow]

DATA = Path(__file__).parent / "data" / "autowatch"
WARN_S = 3.0
LATE_RANK, LATE_STEP, LATE_S = 3, 3, 7.0  # late past the warn + 2 s bound: still late when named


def _rank_command(rank: str, world: str, local: str, port: int) -> list[str]:
    """The line a job script has under srun or mpirun: the launcher's variables as torch's, then the script."""
    script = " ".join(shlex.quote(a) for a in (sys.executable, str(DATA / "late_rank.py"), str(LATE_RANK),
                                               str(LATE_STEP), str(LATE_S)))
    return ["sh", "-c", f"RANK=${rank} WORLD_SIZE=${world} LOCAL_RANK=${local} MASTER_ADDR=host0 "
                        f"MASTER_PORT={port} exec {script}"]


def _lines(text: str) -> list[dict[str, Any]]:
    """The flat JSON objects the ranks print (mpirun's --tag-output and several ranks on one stream may run
    lines into each other: ``[1,0]<stdout>:{...}[1,2]<stdout>:``)."""
    return [json.loads(found) for found in re.findall(r'\{"rank"[^{}]*\}', text)]


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _late_rank_named_alone(stdout: str, events_file: Path, launcher: str) -> None:
    lines = _lines(stdout)
    events = _events(events_file)
    arrived = [d["at"] for d in lines if d.get("step") == LATE_STEP and d["rank"] != LATE_RANK]
    assert len(arrived) == 3, lines
    first = next((e for e in events if e["code"] == "W101"), None)
    assert first is not None, watcher_said(events, stdout)
    assert first["ranks"] == [LATE_RANK] and first["detail"].get("late", {}).get(str(LATE_RANK)) is not None, first
    assert not [e for e in events if e["code"] == "W101" and e["ranks"] != [LATE_RANK]], events
    late_host = next(d["host"] for d in lines if d.get("rank") == LATE_RANK and "host" in d)
    assert f"({late_host}," in first["title"], first["title"]  # the late rank's host, as the launcher placed it
    delay = first["at"] - max(arrived)
    print(f"{launcher}: late rank {LATE_RANK} named {delay:.2f} s after the others waited (warn after {WARN_S} s)")
    assert delay <= WARN_S + 2.0, delay
    threads = {d["rank"]: d["watch_threads"] for d in lines if "watch_threads" in d}
    assert sorted(threads) == [0, 1, 2, 3] and all("syncdoctor-watch-sampler" in t for t in threads.values())


@pytest.fixture
def slurm(lab_factory, tmp_path: Path):
    available, reason = slurm_available()
    if not available:
        pytest.skip(reason)
    lab = lab_factory(2)
    with SlurmCluster(lab, tmp_path / "slurm") as cluster:
        yield cluster


def test_srun_places_two_tasks_on_each_lab_host(slurm: SlurmCluster) -> None:
    done = slurm.srun(["sh", "-c", "echo $(hostname) $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID"], 2, 2, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split("\n")[:-1]) == ["host0 0 0 0", "host0 1 1 0", "host1 2 0 1", "host1 3 1 1"]


def test_zero_code_watch_under_srun_names_the_late_rank(slurm: SlurmCluster, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    srun = slurm.srun_argv(_rank_command("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", 29561), 2, 2)
    done = slurm.lab.run("host0", [sys.executable, "-m", "syncdoctor", "run", "--warn-after", str(WARN_S),
                                   "--events-file", str(events), "--", *srun], env=slurm.env(), timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    _late_rank_named_alone(done.stdout, events, "srun")


def test_probe_under_srun_on_two_lab_hosts(slurm: SlurmCluster, tmp_path: Path) -> None:
    report = tmp_path / "probe.json"
    done = slurm.srun([sys.executable, "-m", "syncdoctor", "probe", "--sizes", "4K,64K", "--ops", "all_reduce",
                       "--link-bytes", "4M", "--join-timeout", "60", "--stage-timeout", "60", "--json", str(report)],
                      2, 2, "--label", timeout=240)
    if done.returncode != 0:  # say which task failed first and what it said (srun --label: "N: line")
        said = [line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("0: ")]
        pytest.fail(f"srun exited {done.returncode}; the other tasks and srun said:\n" + "\n".join(said[-60:]))
    doc = json.loads(report.read_text())
    assert doc["schema"] == "syncdoctor.probe/1"
    assert doc["launch"]["launcher"] == "slurm" and doc["launch"]["world_size"] == 4, doc["launch"]
    assert doc["launch"]["host_names"] == ["host0", "host1"] and doc["join"]["complete"] is True
    assert sorted((r["hostname"], r["rank"]) for r in doc["join"]["registered"]) == [
        ("host0", 0), ("host0", 1), ("host1", 2), ("host1", 3)]  # srun's placement, as each rank saw it
    assert all(stage["status"] == "ok" for stage in doc["stages"]), doc["stages"]
    assert doc["verdict"]["kind"] == "none", doc["verdict"]  # nothing throttled: no slow node


def test_zero_code_watch_under_mpirun_names_the_late_rank(lab_factory, tmp_path: Path) -> None:
    available, reason = mpi_available()
    if not available:
        pytest.skip(reason)
    lab = lab_factory(2)
    events = tmp_path / "events.jsonl"
    watch_env = {"SYNCDOCTOR_WATCH": "1", "SYNCDOCTOR_WATCH_WARN_AFTER": str(WARN_S),
                 "SYNCDOCTOR_WATCH_EVENTS_FILE": str(events)}
    argv = mpirun_argv(lab, tmp_path / "mpi", _rank_command("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                                           "OMPI_COMM_WORLD_LOCAL_RANK", 29562),
                       procs_per_host=2, export=sorted(watch_env))
    done = lab.run("host0", argv, env=watch_env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    _late_rank_named_alone(done.stdout, events, "mpirun")


def test_probe_under_mpirun_on_two_lab_hosts(lab_factory, tmp_path: Path) -> None:
    available, reason = mpi_available()
    if not available:
        pytest.skip(reason)
    lab = lab_factory(2)
    report = tmp_path / "probe.json"
    probe = [sys.executable, "-m", "syncdoctor", "probe", "--sizes", "4K,64K", "--ops", "all_reduce",
             "--link-bytes", "4M", "--join-timeout", "60", "--stage-timeout", "60", "--json", str(report)]
    env = {"MASTER_ADDR": "host0", "MASTER_PORT": "29563"}
    done = lab.run("host0", mpirun_argv(lab, tmp_path / "mpi", probe, procs_per_host=2, export=sorted(env)),
                   env=env, timeout=240)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    doc = json.loads(report.read_text())
    assert doc["launch"]["launcher"] == "mpirun" and doc["launch"]["world_size"] == 4, doc["launch"]
    assert sorted((r["hostname"], r["rank"]) for r in doc["join"]["registered"]) == [
        ("host0", 0), ("host0", 1), ("host1", 2), ("host1", 3)]
    assert all(stage["status"] == "ok" for stage in doc["stages"]), doc["stages"]


@pytest.mark.parametrize("rdzv", ["static", "c10d"])
def test_zero_code_watch_under_multi_host_torchrun(lab_factory, tmp_path: Path, rdzv: str) -> None:
    """torchrun on each of two lab hosts (static rendezvous: ranks in host order; c10d: in join order)."""
    lab = lab_factory(2)
    events = tmp_path / "events.jsonl"
    env = {"SYNCDOCTOR_WATCH": "1", "SYNCDOCTOR_WATCH_WARN_AFTER": str(WARN_S),
           "SYNCDOCTOR_WATCH_EVENTS_FILE": str(events)}
    job = lab.torchrun([str(DATA / "late_rank.py"), str(LATE_RANK), str(LATE_STEP), str(LATE_S)],
                       procs_per_host=2, run_dir=tmp_path / "run", env=env, rdzv=rdzv)
    result = job.wait(timeout=240)
    assert result.ok, result.summary()
    output = "\n".join(path.read_text() for path in job.rank_logs().values())
    _late_rank_named_alone(output, events, f"torchrun ({rdzv})")
