"""Logs and a Flight Recorder dump from a real GPU machine (1x H200, torch 2.11.0+cu130, NCCL 2.28.9; see
tests/fixtures/analyze/gpu/README.md), analyzed through the CLI and the API, plus unit tests with plain data
for the all-entered stall (A020) and the attribution of NCCL ``host:pid`` lines through torchrun's pids."""

from __future__ import annotations

import json

import pytest

from analyze_helpers import FIXTURES
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Event, FrDump, FrGroup, Kind, Origin, Ref
from syncdoctor.analyze.rules import diagnose
from syncdoctor.analyze.rules.stall import collective_stalled
from syncdoctor.analyze.timeline import build_timeline

GPU = FIXTURES / "gpu"


def refs(hypothesis) -> list[str]:
    return [str(e.ref).split("gpu/", 1)[-1] for e in hypothesis.evidence]


# --- real fixtures -------------------------------------------------------------------------------------------

def test_ifname_cli_names_variable_value_host_rank(run_cli) -> None:
    result = run_cli("analyze", str(GPU / "ifname"))
    assert result.code == 0, result.out
    head = result.out.split("Ranks (")[0]
    assert "Root cause: NCCL_SOCKET_IFNAME=nosuch0 matches no interface on vm (rank 0)" in head
    assert "A009" in head and "rank 0 on vm" in head
    assert "ifname.log:4" in head and "NCCL WARN Bootstrap : no socket interface found" in head
    assert "ifname.log:2" in head and "NCCL_SOCKET_IFNAME set by environment to nosuch0" in head
    assert "syncdoctor check" in head and "unset it" in head


def test_ifname_api_and_rank_host_from_the_pid() -> None:
    analysis = analyze_paths([str(GPU / "ifname")])
    root = analysis.diagnosis.root_cause
    assert root is not None and root.category is Category.INTERFACE_MISSING and root.code == "A009"
    assert (root.culprit_ranks, root.culprit_hosts) == ((0,), ("vm",))
    # NCCL's WARN, its echo after PyTorch's "Last error:", then the setting NCCL read
    assert refs(root)[:3] == ["ifname/ifname.log:4", "ifname/ifname.log:19", "ifname/ifname.log:2"]
    assert "nosuch0" in root.fix and "NCCL_SOCKET_IFNAME" in root.fix
    # the NCCL lines (vm:709:…) belong to rank 0: torchrun says pid 709 is rank 0
    state = analysis.timeline.ranks[0]
    assert state.host == "vm" and state.pids == (709,)
    assert not analysis.timeline.unattributed or all(e.origin.pid != 709 for e in analysis.timeline.unattributed)


def test_timeout_cli_all_entered_stall(run_cli) -> None:
    result = run_cli("analyze", str(GPU / "timeout"), "--json")
    assert result.code == 0
    doc = json.loads(result.out)
    root = doc["root_cause"]
    assert root["code"] == "A020" and root["category"] == "collective-stalled-all-entered"
    assert root["culprit_ranks"] == [0] and root["culprit_hosts"] == ["vm"]
    assert "#6" in root["title"]
    assert "A001" not in {h["code"] for h in doc["hypotheses"]}
    assert "A019" not in {h["code"] for h in doc["hypotheses"]}
    text = run_cli("analyze", str(GPU / "timeout")).out
    assert text.startswith("Root cause: collective #6 (allreduce) of group 0 never completed")
    assert "syncdoctor probe" in text and "W104" in text


def test_timeout_api_evidence_from_watchdog_status_and_dump() -> None:
    analysis = analyze_paths([str(GPU / "timeout")])
    root = analysis.diagnosis.root_cause
    assert root is not None and root.category is Category.COLLECTIVE_STALLED
    assert root.culprit_ranks == (0,)
    evidence = refs(root)
    assert "timeout/timeout.log:99" in evidence  # Watchdog caught ... WorkNCCL(SeqNum=6 ...)
    assert "timeout/timeout.log:100" in evidence  # last enqueued work: 6, last completed work: 5
    assert "timeout/dumps/nccl_trace_rank_0" in evidence  # Flight Recorder: enqueued 6, completed 5
    assert analysis.timeline.stated_world_size == 1
    state = analysis.timeline.ranks[0]
    assert (state.reached["0"], state.completed["0"]) == (6, 5)
    assert analysis.collected.dumps and analysis.collected.dumps[0].groups[0].last_enqueued == 6


def test_diag_is_healthy_and_its_nccl_facts_parse(run_cli) -> None:
    result = run_cli("analyze", str(GPU / "diag"))
    assert result.code == 1 and result.out.startswith("No root cause found.")
    analysis = analyze_paths([str(GPU / "diag")])
    assert analysis.diagnosis.hypotheses == ()
    tl = analysis.timeline
    (version,) = tl.of(Kind.NCCL_VERSION)
    assert version.data == {"version": "2.28.9", "cuda": "13.0"}
    (bootstrap,) = tl.of(Kind.NCCL_BOOTSTRAP)
    assert (bootstrap.data["ifname"], bootstrap.data["addr"], bootstrap.origin.host) == ("eth0", "192.0.2.2", "vm")
    nets = tl.of(Kind.NCCL_NET)
    assert {"network": "Socket"} in [dict(e.data) for e in nets]
    ib = [e for e in nets if e.data.get("net") == "IB"]
    assert len(ib) == 1 and ib[0].data["devices"] == [] and ib[0].data["oob_ifname"] == "eth0"
    socket = [e for e in nets if e.data.get("net") == "Socket"]
    assert socket[0].data["devices"] == ["eth0:192.0.2.2"]
    inits = tl.of(Kind.NCCL_INIT)
    assert inits and inits[0].data["nranks"] == 1 and inits[0].data["comm_rank"] == 0
    assert inits[0].data["comm_id"] == "0x9795cf6232fc1b9a" and inits[0].data["bus_id"] == "60"
    assert tl.ranks[0].host == "vm" and tl.stated_world_size == 1


# --- A020 with plain data ------------------------------------------------------------------------------------

def _ev(kind: Kind, rank: int, line: int, text: str, **kw) -> Event:
    return Event(kind, Ref(f"rank{rank}.log", line), text, Origin(rank=rank, host=f"node{rank // 2}"), **kw)


def _rank(rank: int, enqueued: int, completed: int, op: str = "allreduce", timeout: bool = True) -> list[Event]:
    events = []
    if timeout:
        events.append(_ev(Kind.WATCHDOG_TIMEOUT, rank, 1, f"[Rank {rank}] Watchdog caught ... SeqNum={enqueued}",
                          seq=enqueued, op=op, data={"numel_in": 8, "numel_out": 8, "timeout_ms": 5000}))
    events.append(_ev(Kind.WORK_STATUS, rank, 2, f"last enqueued work: {enqueued}, last completed work: {completed}",
                      group="0", seq=enqueued, data={"last_enqueued": enqueued, "last_completed": completed}))
    return events


def _init(rank: int, nranks: int) -> Event:
    return Event(Kind.NCCL_INIT, Ref(f"rank{rank}.log", 3), "... Init COMPLETE",
                 Origin(host=f"node{rank // 2}", pid=1000 + rank, rank=rank),
                 data={"comm_rank": rank, "nranks": nranks})


def _world(progress: dict[int, tuple[int, int]], nranks: int | None = 4, **kw) -> list[Event]:
    events: list[Event] = []
    for rank, (enqueued, completed) in progress.items():
        events += _rank(rank, enqueued, completed, **kw)
        if nranks is not None:
            events.append(_init(rank, nranks))
    return events


def test_a020_four_ranks_all_entered() -> None:
    tl = build_timeline(_world({r: (6, 5) for r in range(4)}))
    (found,) = collective_stalled(tl)
    assert found.code == "A020" and found.culprit_ranks == (0, 1, 2, 3) and "#6" in found.title
    assert found.culprit_hosts == ("node0", "node1")
    root = diagnose(tl).root_cause
    assert root is not None and root.category is Category.COLLECTIVE_STALLED
    assert Category.LAGGING_RANK not in {h.category for h in diagnose(tl).hypotheses}


def test_a020_stuck_at_the_first_uncompleted_collective() -> None:
    # every rank enqueued 8 and completed 5: #6 is the one that never finished
    tl = build_timeline(_world({r: (8, 5) for r in range(4)}))
    (found,) = collective_stalled(tl)
    assert "collective #6" in found.title


def test_a020_negative_one_rank_behind_is_a001() -> None:
    tl = build_timeline(_world({0: (6, 5), 1: (6, 5), 2: (6, 5), 3: (5, 5)}))
    assert collective_stalled(tl) == []
    root = diagnose(tl).root_cause
    assert root is not None and root.category is Category.LAGGING_RANK and root.culprit_ranks == (3,)


def test_a020_negative_world_size_unknown() -> None:
    tl = build_timeline(_world({r: (6, 5) for r in range(4)}, nranks=None))
    assert tl.stated_world_size is None and tl.world_size == 4  # inferred only
    assert collective_stalled(tl) == []
    diagnosis = diagnose(tl)
    assert diagnosis.root_cause is None
    assert {h.category for h in diagnosis.hypotheses} == {Category.UNEXPLAINED_TIMEOUT}


def test_a020_negative_a_member_missing_from_the_logs() -> None:
    tl = build_timeline(_world({r: (6, 5) for r in range(4)}, nranks=8))  # ranks 4-7 say nothing
    assert collective_stalled(tl) == []


def test_a020_negative_different_ops_is_a_desync() -> None:
    events = _world({r: (6, 5) for r in range(3)})
    events += _world({3: (6, 5)}, op="broadcast")
    tl = build_timeline(events)
    assert collective_stalled(tl) == []
    assert Category.COLLECTIVE_STALLED not in {h.category for h in diagnose(tl).hypotheses}


def test_a020_negative_completed_is_not_behind_enqueued() -> None:
    # gloo's Flight Recorder counts a timed-out work as completed: nothing says it is still stuck
    events = _world({r: (6, 6) for r in range(2)}, nranks=2, timeout=False)
    assert collective_stalled(build_timeline(events)) == []


def test_a020_negative_no_timeout_at_all() -> None:
    events = _world({r: (6, 5) for r in range(2)}, nranks=2, timeout=False)
    assert collective_stalled(build_timeline(events)) == []


def test_a020_negative_a_rank_crashed() -> None:
    events = _world({r: (6, 5) for r in range(4)})
    events.append(_ev(Kind.CUDA_OOM, 2, 4, "torch.OutOfMemoryError: CUDA out of memory"))
    tl = build_timeline(events)
    assert collective_stalled(tl) == []


def test_a020_members_from_flight_recorder_dumps() -> None:
    dumps = [FrDump(Ref(f"nccl_trace_rank_{r}"), r, "2.10",
                    (FrGroup("0", "0", "default_pg", (0, 1), 6, None, 5),), ()) for r in range(2)]
    events = [e for r in range(2) for e in _rank(r, 6, 5)]
    (found,) = collective_stalled(build_timeline(events, dumps))
    assert found.culprit_ranks == (0, 1)
    assert any("nccl_trace_rank_1" in str(e.ref) for e in found.evidence)
    short = [FrDump(Ref("nccl_trace_rank_0"), 0, "2.10", (FrGroup("0", "0", "default_pg", (0, 1, 2), 6, None, 5),),
                    ())]
    assert collective_stalled(build_timeline(events, short)) == []  # rank 2 is a member and says nothing


# --- NCCL host:pid lines attributed through torchrun's worker pids ---------------------------------------------

def _worker(rank: int, pid: int, host: str | None = None) -> Event:
    return Event(Kind.WORKER_FAILED, Ref("agent.log", 10 + rank), "exitcode  : 1 (pid: ...)",
                 Origin(rank=rank, local_rank=rank, pid=pid, host=host), data={"exitcode": 1, "pid": pid})


def _nccl_warn(host: str, pid: int, line: int = 1) -> Event:
    return Event(Kind.NCCL_WARN, Ref("combined.log", line), f"{host}:{pid}:{pid} [0] NCCL WARN x",
                 Origin(host=host, pid=pid), data={"message": "x"})


@pytest.mark.parametrize(("events", "expected"), [
    ([_worker(0, 709), _nccl_warn("vm", 709)], (0, "vm")),
    ([_worker(1, 709, "nodeB"), _nccl_warn("nodeA", 709), _nccl_warn("nodeB", 709, 2)], (1, "nodeB")),
])
def test_nccl_lines_attributed_through_worker_pid(events, expected) -> None:
    tl = build_timeline(events)
    rank, host = expected
    assert tl.ranks[rank].host == host
    assert any(e.kind is Kind.NCCL_WARN and e.origin.host == host for e in tl.ranks[rank].events)


def test_nccl_lines_not_attributed_when_the_pid_is_ambiguous() -> None:
    # the same pid on two hosts and a record without host: nobody can tell which one is rank 0
    tl = build_timeline([_worker(0, 709), _nccl_warn("nodeA", 709), _nccl_warn("nodeB", 709, 2)])
    assert tl.ranks[0].host is None
    assert len([e for e in tl.unattributed if e.kind is Kind.NCCL_WARN]) == 2
