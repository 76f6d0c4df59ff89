"""syncdoctor.watch on real torchrun jobs in the lab: two hosts (network namespaces) x two ranks, gloo.

Each test starts the fault-injecting workload with ``--watch`` and short thresholds (warn 3 s, dead 3 s),
waits for the event in the monitor's JSONL file, checks rank, host and category, and the time from the
moment the punctual ranks started waiting to the event (at most the threshold + 3 s). Jobs are killed as
soon as the event is in, so the whole file stays within a few minutes on 2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import requires_root
from syncdoctor.testing.workload import parse_step_lines

pytestmark = [requires_root, pytest.mark.slow]

WARN_S = 3.0
DEAD_S = 3.0
LATENCY_S = 3.0  # the budget on top of the threshold


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "SYNCDOCTOR_WATCH": "1",
        "SYNCDOCTOR_WATCH_WARN_AFTER": str(WARN_S),
        "SYNCDOCTOR_WATCH_DEAD_AFTER": str(DEAD_S),
        "SYNCDOCTOR_WATCH_SUSPECT_AFTER": "1",
        "SYNCDOCTOR_WATCH_EVENTS_FILE": str(tmp_path / "events.jsonl"),
        # node aggregation (on by default from 256 ranks): these jobs' records go through node leaders
        "SYNCDOCTOR_WATCH_NODE_AGGREGATION": "on", "SYNCDOCTOR_WATCH_NODE_DIR": str(tmp_path / "shm"),
        **extra,
    }


def _node_dirs(tmp_path: Path) -> dict[str, Path]:
    """The node directories of the job (node aggregation): host key -> directory, for nodes that registered."""
    return {d.name.split("-", 1)[1]: d for d in (tmp_path / "shm").glob("syncdoctor-*/*") if (d / "index").exists()}


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait_for(tmp_path: Path, job: Any, match: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in _events(tmp_path):
            if match(event):
                return event
        if job.poll() is not None:
            time.sleep(0.5)  # the last writer may still be flushing
            for event in _events(tmp_path):
                if match(event):
                    return event
            break
        time.sleep(0.2)
    logs = {rank: path.read_text()[-1500:] for rank, path in job.rank_logs().items()}
    raise AssertionError(f"no matching event; events: {_events(tmp_path)}; rank logs: {logs}")


def _ready_times(job: Any, step: int, ranks: list[int]) -> list[float]:
    """When ``ranks`` reached the first collective of ``step`` (their step line's ``ready``)."""
    times = []
    for rank in ranks:
        lines = [s for s in parse_step_lines(job.rank_logs()[rank].read_text()) if s.step == step]
        times.extend(s.ready for s in lines)
    return times


def _waiting_since(job: Any, step: int, ranks: list[int]) -> float:
    """An early bound of when ``ranks`` began to wait in ``step`` (which never ends, so has no step line):
    the end of their previous step. Latencies measured from it are upper bounds."""
    ends = []
    for rank in ranks:
        ends.extend(s.end for s in parse_step_lines(job.rank_logs()[rank].read_text()) if s.step == step - 1)
    assert len(ends) == len(ranks), f"missing step {step - 1} lines"
    return max(ends)


def _start(lab: Any, tmp_path: Path, args: list[str], **kwargs: Any) -> Any:
    kwargs.setdefault("env", _env(tmp_path))
    job = lab.torchrun(["-m", "syncdoctor.testing.workload", *args], procs_per_host=2,
                       run_dir=tmp_path / "run", **kwargs)
    job.wait_for_ranks(timeout=120)
    return job


def _history_nodes(path: Path, timeout: float) -> list[Any]:
    from syncdoctor.history import History

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and (nodes := History(path).nodes()):
            return nodes
        time.sleep(0.2)
    return []


def _report(name: str, latency: float) -> None:
    print(f"watch lab: {name}: event {latency:.2f} s after the others started waiting (budget {WARN_S + LATENCY_S} s)")


def test_clean_steps_and_an_all_rank_pause_are_quiet_then_the_late_rank_is_named(lab_factory, tmp_path: Path) -> None:
    """Unmodified DDP: 210 clean steps with a 15 s pause on every rank give no event; rank 3 (host1) late
    by 6 s in load_batch is named with its function, then resolved. The gradient all_reduce it misses is
    DDP's, issued from C++."""
    lab = lab_factory(2)
    fault = {"rank": 3, "kind": "late", "at": 210, "seconds": 6, "where": "load_batch"}
    port = 29477
    job = _start(lab, tmp_path, ["--steps", "215", "--grad-sync", "ddp", "--pause-all", "15@20",
                                 "--fault", json.dumps(fault), "--log-ranks", "all"], master_port=port)
    # `syncdoctor watch` from outside the job: a non-rank client of the agent's store, on host0
    outside = lab.popen("host0", [sys.executable, "-m", "syncdoctor", "watch", "--master",
                                  f"{lab.host('host0').addr}:{port}", "--json", "--wait", "60", "--duration", "150"],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    late = _wait_for(tmp_path, job, lambda e: e["code"] == "W101" and e["status"] == "warning", timeout=150)
    resolved = _wait_for(tmp_path, job, lambda e: e["code"] == "W101" and e["status"] == "resolved", timeout=30)
    result = job.wait(timeout=60)
    assert result.ok, result.summary()
    streamed, _ = outside.communicate(timeout=30)  # it ends when the job's store goes away
    seen = [json.loads(line) for line in streamed.splitlines() if line.startswith("{")]
    assert [(e["code"], e["status"], e["ranks"]) for e in seen] == [("W101", "warning", [3]), ("W101", "resolved", [3])], streamed
    events = _events(tmp_path)
    assert [(e["code"], e["status"]) for e in events] == [("W101", "warning"), ("W101", "resolved")], events
    assert late["ranks"] == [3] and late["hosts"] == ["host1"] and late["group"] == "0"
    assert late["waiting_ranks"] == [0, 1, 2]
    assert late["signature"][0] == "all_reduce"  # DDP's gradient bucket, seen by the Flight Recorder
    assert "load_batch" in late["detail"]["where"]
    assert resolved["ranks"] == [3] and resolved["waited_s"] >= WARN_S
    waiting_since = max(_ready_times(job, 210, [0, 1, 2]))
    latency = late["at"] - waiting_since
    _report("late rank", latency)
    # the first waiter reaches the threshold a little before the last one (and arrivals are sampled)
    assert WARN_S - 0.5 <= latency <= WARN_S + LATENCY_S


def test_skipped_collective_is_a_deadlock_named_on_the_skipping_rank(lab_factory, tmp_path: Path) -> None:
    """Rank 1 (host0) skips the metric all_reduce of step 5 and waits in the next gradient all_reduce."""
    lab = lab_factory(2)
    fault = {"rank": 1, "kind": "skip", "at": 5}
    job = _start(lab, tmp_path, ["--steps", "30", "--grad-sync", "manual", "--fault", json.dumps(fault)])
    event = _wait_for(tmp_path, job, lambda e: e["code"] in ("W101", "W102", "W103", "W104"), timeout=90)
    job.kill()
    assert event["code"] == "W103" and event["ranks"] == [1] and event["hosts"] == ["host0"], event
    assert event["waiting_ranks"] == [0, 2, 3] and "skipped" in event["title"]
    latency = event["at"] - _waiting_since(job, 5, [0, 2, 3])
    _report("skipped collective", latency)
    assert latency <= WARN_S + LATENCY_S


def test_different_op_at_the_same_point_is_a_mismatch(lab_factory, tmp_path: Path) -> None:
    """Rank 1 calls broadcast where ranks 0, 2, 3 call all_reduce (same group, same sequence number)."""
    lab = lab_factory(2)
    fault = {"rank": 1, "kind": "other_op", "at": 5, "op": "broadcast"}
    job = _start(lab, tmp_path, ["--steps", "30", "--grad-sync", "manual", "--fault", json.dumps(fault)])
    event = _wait_for(tmp_path, job, lambda e: e["code"] in ("W101", "W102", "W103", "W104"), timeout=90)
    job.kill()
    assert event["code"] == "W102" and event["ranks"] == [1] and event["hosts"] == ["host0"], event
    assert event["other_signature"][0] == "broadcast" and event["signature"][0] == "all_reduce"
    latency = event["at"] - _waiting_since(job, 5, [0, 1, 2, 3])
    _report("different op", latency)
    assert latency <= WARN_S + LATENCY_S


# the first failing rank lingers a few seconds for rank 3's heartbeat to go quiet: on two busy cores it once stopped
# before (W108, rank 0's connection error, in a clean-clone run)
@pytest.mark.alone
def test_sigkilled_rank_is_named_by_the_first_rank_to_fail(lab_factory, tmp_path: Path) -> None:
    """gloo peers fail at once ("Connection reset by peer") and torchrun ends the job: the first rank to fail
    lingers and names rank 3 (host1), which vanished without an error.

    host1's agent also ends rank 2 (SIGTERM) as soon as it sees rank 3 dead. When that comes before rank 2's
    own peer error, rank 2 too vanishes without a goodbye, nothing tells the two apart, and the honest answer is
    host1 (a warning: the node, or one of its ranks and its launcher). Rank 2's failure, when it comes first,
    is published in full: the SIGTERM waits for its goodbye."""
    lab = lab_factory(2)
    fault = {"rank": 3, "kind": "crash", "mode": "sigkill", "at": 40, "where": "load_batch"}
    job = _start(lab, tmp_path, ["--steps", "60", "--grad-sync", "manual", "--step-sleep", "0.05",
                                 "--fault", json.dumps(fault)])
    event = _wait_for(tmp_path, job, lambda e: e["code"] in ("W105", "W106", "W108"), timeout=90)
    job.wait(timeout=60)
    if event["code"] == "W106":  # rank 2 was ended before its own error: see above
        assert event["status"] == "warning" and event["ranks"] == [2, 3] and event["hosts"] == ["host1"], event
        assert "2" not in event["detail"]["failed"] and "its launcher ended the others" in event["title"], event
    else:
        assert event["code"] == "W105" and event["ranks"] == [3] and event["hosts"] == ["host1"], event
        assert "vanished without an error" in event["title"]
    assert "host1_1" in _node_dirs(tmp_path)  # host1's records went through its leader (whose rank was killed)
    latency = event["at"] - _waiting_since(job, 40, [0, 1, 2])
    _report("SIGKILL", latency)
    assert latency <= WARN_S + LATENCY_S


def test_frozen_rank_is_dead_and_its_process_is_seen_stopped(lab_factory, tmp_path: Path) -> None:
    lab = lab_factory(2)
    fault = {"rank": 3, "kind": "freeze", "at": 40, "where": "load_batch"}
    job = _start(lab, tmp_path, ["--steps", "60", "--grad-sync", "manual", "--step-sleep", "0.05",
                                 "--fault", json.dumps(fault)])
    event = _wait_for(tmp_path, job, lambda e: e["code"] in ("W101", "W104", "W105", "W106"), timeout=90)
    job.kill()
    assert event["code"] == "W105" and event["ranks"] == [3] and event["hosts"] == ["host1"], event
    assert event["detail"]["process"] == {"3": "stopped"} and "SIGSTOP" in event["title"]
    assert event["waiting_ranks"] == [0, 1, 2], event
    latency = event["at"] - _waiting_since(job, 40, [0, 1, 2])
    _report("frozen rank", latency)
    assert latency <= DEAD_S + LATENCY_S


def test_frozen_node_leader_is_one_dead_rank_and_its_node_mate_still_reports(lab_factory, tmp_path: Path) -> None:
    """Node aggregation: the rank that relays host1's records is frozen. A node-mate takes the lease over and
    relays on: the leader alone is named dead (its process stopped), not host1, and the node-mate is never
    named."""
    lab = lab_factory(2)
    job = _start(lab, tmp_path, ["--steps", "100000", "--grad-sync", "manual", "--step-sleep", "0.05"])
    assert job.wait_for_output(0, r"step=20 ", timeout=120), "the job did not train"
    lease = _node_dirs(tmp_path)["host1_1"] / "lease"
    leader = int(lease.read_text().split()[0])
    assert leader in (2, 3)
    frozen_at = time.time()
    os.kill(job.rank_pids()[leader], signal.SIGSTOP)
    try:
        event = _wait_for(tmp_path, job, lambda e: e["code"] in ("W101", "W104", "W105", "W106"), timeout=60)
        mate_leads = int(lease.read_text().split()[0])
        time.sleep(2.0)  # a few more cycles: nothing else is named
        others = [e for e in _events(tmp_path) if e["code"] in ("W101", "W104", "W105", "W106") and e != event
                  and e["status"] != "resolved"]
    finally:
        os.kill(job.rank_pids()[leader], signal.SIGCONT)
        job.kill()
    assert event["code"] == "W105" and event["ranks"] == [leader] and event["hosts"] == ["host1"], event
    assert event["detail"]["process"] == {str(leader): "stopped"}, event
    assert mate_leads == 5 - leader  # host1's other rank took the lease over
    assert not [e for e in others if e["ranks"] != [leader]], others
    _report("frozen node leader", event["at"] - frozen_at)
    assert event["at"] - frozen_at <= DEAD_S + LATENCY_S


def _second_link(lab: Any) -> tuple[str, str]:
    """A direct cable between host0 and host1 (172.31.254.0/30) that carries only the store traffic."""
    h0, h1 = lab.hosts[0], lab.hosts[1]
    run = lambda *argv: subprocess.run(["ip", *argv], check=True, capture_output=True)  # noqa: E731
    run("link", "add", "sdw0", "netns", h0.netns, "type", "veth", "peer", "name", "sdw1", "netns", h1.netns)
    for netns, name, addr in ((h0.netns, "sdw0", "172.31.254.1/30"), (h1.netns, "sdw1", "172.31.254.2/30")):
        run("-n", netns, "addr", "add", addr, "dev", name)
        run("-n", netns, "link", "set", name, "up")
    return "172.31.254.1", h1.netns


def test_cut_data_link_is_a_transport_hang_then_the_cut_host_is_named(lab_factory, tmp_path: Path) -> None:
    """The store goes over a second cable, the collectives over the switch. Cutting host1's switch port
    leaves every rank inside the same all_reduce with its records still arriving: a transport hang, not a
    straggler. Cutting the second cable too silences host1: the host is named."""
    lab = lab_factory(2)
    store_addr, h1_netns = _second_link(lab)
    history = tmp_path / "history.sqlite3"
    job = _start(lab, tmp_path, ["--steps", "100000", "--grad-sync", "manual", "--step-sleep", "0.02"],
                 torchrun_args=["--master-addr", store_addr], env=_env(tmp_path, SYNCDOCTOR_HISTORY=str(history),
                                                                       SLURM_JOB_ID="4242"))
    assert job.wait_for_output(0, r"step=5 ", timeout=120), "the job did not train"
    cut_at = time.time()
    lab.cut("host1")
    hang = _wait_for(tmp_path, job, lambda e: e["code"] in ("W101", "W102", "W104", "W105", "W106"), timeout=60)
    assert hang["code"] == "W104" and hang["ranks"] == [] and hang["waiting_ranks"] == [0, 1, 2, 3], hang
    assert "syncdoctor probe" in hang["detail"]["next"]
    _report("cut data link (transport hang)", hang["at"] - cut_at)
    assert hang["at"] - cut_at <= WARN_S + LATENCY_S
    silenced_at = time.time()
    subprocess.run(["ip", "-n", h1_netns, "link", "set", "sdw1", "down"], check=True)
    host = _wait_for(tmp_path, job, lambda e: e["code"] in ("W105", "W106"), timeout=60)
    recorded = _history_nodes(history, timeout=10)  # the monitor's history thread writes it within moments
    job.kill()
    assert sorted(_node_dirs(tmp_path)) == ["host0_0", "host1_1"]  # a whole node cut off, under aggregation
    assert host["code"] == "W106" and host["ranks"] == [2, 3] and host["hosts"] == ["host1"], host
    assert [(s["node"], s["code"], s["confidence"]) for s in host["suspect_nodes"]] == [("host1", "W106", 0.9)]
    # the transport hang named no node (every host waits; which link is at fault is the probe's question)
    assert hang["suspect_nodes"] == []
    assert [(n.node, n.codes, n.runs) for n in recorded] == [("host1", {"W106": 1}, 1)], recorded
    _report("host cut off", host["at"] - silenced_at)
    assert host["at"] - silenced_at <= DEAD_S + LATENCY_S
