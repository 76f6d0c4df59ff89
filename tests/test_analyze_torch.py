"""PyTorch watchdog, companion, dump-signal, heartbeat, blocking-wait, desync-report, DETAIL and
monitored_barrier lines of every era recorded in shared/reference/pytorch-builtins.md section 2-4."""

from __future__ import annotations

import pytest

from analyze_helpers import events_of, one, read
from syncdoctor.analyze.model import Kind, Origin

# (line, rank, group, seq, op, timeout_ms, numel_in, ran_ms)
WATCHDOG = [
    # >= 2.1 WorkNCCL with NumelIn/NumelOut, [rankN]: and c10 log prefix (LlamaFactory#7396)
    ("[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
     "ran for 600060 milliseconds before timing out.", 0, None, 1580, "allreduce", 600000, 466119168, 600060),
    ("[rank5]:[E906 12:16:32.611181197 ProcessGroupNCCL.cpp:607] [Rank 5] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=6336650, OpType=_ALLGATHER_BASE, NumelIn=32834048, NumelOut=262672384, "
     "Timeout(ms)=600000) ran for 600083 milliseconds before timing out.", 5, None, 6336650, "allgather", 600000,
     32834048, 600083),
    # ~1.10-2.0: SeqNum without numels, old c10 prefix without time (OFA-Sys/OFA#271)
    ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, "
     "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.", 1, None, 469508,
     "allreduce", 1800000, None, 1802212),
    # <= 1.9: no SeqNum, TensorShape
    ("[E ProcessGroupNCCL.cpp:566] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, "
     "TensorShape=[1024, 16], Timeout(ms)=1800000) ran for 1800421 milliseconds before timing out.", 3, None, None,
     "broadcast", 1800000, None, 1800421),
    ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=60000) ran for "
     "60012 milliseconds before timing out.", 0, None, None, "allreduce", 60000, None, 60012),
    # exception text raised to Python, with ~2.2 / ~2.3 / ~2.4+ PG prefixes
    ("RuntimeError: [PG 0 Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
     "NumelIn=1, NumelOut=1, Timeout(ms)=10000) ran for 10058 milliseconds before timing out.", 7, "0", 1,
     "allreduce", 10000, 1, 10058),
    ("torch.distributed.DistBackendError: [PG default_pg (undefined) Rank 2] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=12, OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600003 "
     "milliseconds before timing out.", 2, "default_pg", 12, "broadcast", 600000, 8, 600003),
    ("[rank1]:[E1129 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 1] Watchdog "
     "caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
     "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.", 1, "0", 808, "allreduce", 600000, 9801523,
     600020),
    ("Process group watchdog thread terminated with exception: [Rank 7] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=216, OpType=ALLTOALL_BASE, NumelIn=1379328, NumelOut=1572864, Timeout(ms)=600000) "
     "ran for 600412 milliseconds before timing out.", 7, None, 216, "alltoall", 600000, 1379328, 600412),
    ("[PG ID 2 PG GUID 3 Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, "
     "OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600110 "
     "milliseconds before timing out.", 7, "2", 7753, "reducescatter", 600000, 544997376, 600110),
]


@pytest.mark.parametrize(("line", "rank", "group", "seq", "op", "timeout", "numel", "ran"), WATCHDOG)
def test_watchdog_timeout_every_era(line, rank, group, seq, op, timeout, numel, ran) -> None:
    event = one(line, Kind.WATCHDOG_TIMEOUT)
    assert (event.origin.rank, event.group, event.seq, event.op) == (rank, group, seq, op)
    assert event.data["timeout_ms"] == timeout
    assert event.data.get("numel_in") == numel
    assert event.data["ran_ms"] == ran


def test_watchdog_rank_in_message_wins_over_file() -> None:
    event = one(WATCHDOG[0][0], Kind.WATCHDOG_TIMEOUT, Origin(rank=9, host="node9"))
    assert event.origin.rank == 0 and event.origin.host == "node9"


# (line, rank, at, enqueued, completed)
STATUS = [
    ("[PG 0 Rank 7] Timeout at NCCL work: 1, last enqueued NCCL work: 1, last completed NCCL work: 0", 7, 1, 1, 0),
    ("[rank0]:[E321 02:07:08.409 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) "
     "detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.",
     0, 1580, 1582, 1579),
    ("[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: "
     "808, last enqueued NCCL work: 811, last completed NCCL work: 807.", 1, 808, 811, 807),
    ("[PG ID 2 PG GUID 3 Rank 7]  failure detected by watchdog at work sequence id: 40231 PG status: last enqueued "
     "work: 40267, last completed work: 40230", 7, 40231, 40267, 40230),
    (" failure detected by watchdog at work sequence id: 460631 PG status: last enqueued work: 460631, last "
     "completed work: 460630", None, 460631, 460631, 460630),
]


@pytest.mark.parametrize(("line", "rank", "at", "enqueued", "completed"), STATUS)
def test_work_status_every_era(line, rank, at, enqueued, completed) -> None:
    event = one(line, Kind.WORK_STATUS)
    assert event.origin.rank == rank
    assert event.seq == at
    assert (event.data["last_enqueued"], event.data["last_completed"]) == (enqueued, completed)


def test_dump_signal_from_rank_and_from_this_rank() -> None:
    event = one("[rank7]:[E1129 10:00:01.0 ProcessGroupNCCL.cpp:1600] [PG ID 0 PG GUID 0(default_pg) Rank 7] "
                "Received a dump signal due to a collective timeout from  rank 13 and we will try our best to dump "
                "the debug info. Last enqueued NCCL work: 1261, last completed NCCL work: 1259.This is most likely "
                "caused by incorrect usages of collectives", Kind.DUMP_SIGNAL)
    assert event.data["from_rank"] == 13 and not event.data["self"]
    assert (event.data["last_enqueued"], event.data["last_completed"]) == (1261, 1259)
    mine = one("[PG ID 0 PG GUID 0(default_pg) Rank 3] Received a dump signal due to a collective timeout from this "
               "local rank and we will try our best to dump the debug info.", Kind.DUMP_SIGNAL)
    assert mine.data["self"] and mine.data["from_rank"] == 3


@pytest.mark.parametrize("line", [
    "[PG 0 Rank 25] Heartbeat monitor timed out! Process will be terminated after dumping debug info. "
    "workMetaList_.size()=2",
    "ProcessGroupNCCL's watchdog got stuck for 600 seconds without making progress in monitoring enqueued "
    "collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog",
])
def test_heartbeat_monitor(line) -> None:
    event = one(line, Kind.HEARTBEAT_TIMEOUT)
    if "stuck" in line:
        assert event.data["seconds"] == 600


@pytest.mark.parametrize("line", [
    "[Rank 2] Work WorkNCCL(SeqNum=44, OpType=ALLREDUCE, Timeout(ms)=1800000) timed out in blocking wait "
    "(NCCL_BLOCKING_WAIT=1).",
    "[Rank 2] Work WorkNCCL(SeqNum=44, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=1800000) timed out in "
    "blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).",
    "torch.distributed.DistBackendError: [Rank 2] Work WorkNCCL(SeqNum=44, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
    "Timeout(ms)=1800000) timed out in blocking wait.",
])
def test_blocking_wait_every_era(line) -> None:
    event = one(line, Kind.BLOCKING_WAIT_TIMEOUT)
    assert (event.origin.rank, event.seq, event.op) == (2, 44, "allreduce")


def test_companion_lines_are_not_timeouts() -> None:
    for line in (
        "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent "
        "GPU operations might run on corrupted/incomplete data.",
        "To avoid data inconsistency, we are taking the entire process down.",
        "Stack trace of the failed collective not found, potentially because FlightRecorder is disabled.",
    ):
        assert not [e for e in events_of(line) if e.kind is Kind.WATCHDOG_TIMEOUT]


def test_desync_report_lagging_ranks() -> None:
    events = read(
        "[E1129 10:00:00.0 ProcessGroupNCCL.cpp:700] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
        "[E1129 10:00:00.1 ProcessGroupNCCL.cpp:710] \n"
        "\t - [3] Timeout at collective: ALLREDUCE, #12\n"
        "\t - To our best knowledge, ranks [1, 2] are the lagging ranks that caused this timeout. They never joined "
        "any collectives\n"
    )
    report = [e for e in events if e.kind is Kind.DESYNC_REPORT]
    assert len(report) == 1
    assert report[0].seq == 12 and report[0].op == "allreduce"
    assert report[0].data["lagging"] == [1, 2] and report[0].data["reporter"] == 3


def test_desync_report_joined_and_not_joined() -> None:
    events = read(
        "\t - [0] Timeout at collective: BROADCAST, #7\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "\t   - [0, 3] joined but didn't finish collective #7 (count from 1)\n"
        "\t     [1] finished collective #6, but didn't join collective #7 (count from 1)\n"
        "\t - Snapshot of ranks' latest states:\n"
        "something else entirely\n"
    )
    report = next(e for e in events if e.kind is Kind.DESYNC_REPORT)
    assert report.data["joined_not_finished"] == [0, 3]
    assert report.data["not_joined"] == [1]
    assert report.seq == 7 and report.op == "broadcast"


def test_detail_mismatch_fingerprints() -> None:
    event = one(
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE, TensorShape=[10], TensorDtypes=Float, "
        "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)), but Rank 1 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=5, OpType=BROADCAST, TensorShape=[10], TensorDtypes=Float, "
        "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)).Collectives differ in the following "
        "aspects: \t Op type: ALLREDUCEvs BROADCAST", Kind.COLLECTIVE_MISMATCH)
    sides = event.data["sides"]
    assert [s["rank"] for s in sides] == [0, 1]
    assert [s["op"] for s in sides] == ["allreduce", "broadcast"]
    assert event.data["source"] == "detail"


def test_old_shape_check_mismatch() -> None:
    event = one("RuntimeError: Error when verifying shape tensors for collective ALLREDUCE on rank 0. This likely "
                "indicates that input shapes into the collective are mismatched across ranks. Got shapes:  10",
                Kind.COLLECTIVE_MISMATCH)
    assert event.origin.rank == 0 and event.op == "allreduce"


@pytest.mark.parametrize(("line", "failed", "role"), [
    ("RuntimeError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms\n", [1], "detector"),
    ("RuntimeError: [Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 2000 ms", [1, 2], "detector"),
    ("Rank 3 timed out in monitoredBarrier after 2000 ms.", [3], "detector"),
    ("RuntimeError: Rank 2 successfully reached monitoredBarrier, but received errors while waiting for send/recv "
     "from rank 0. Please check rank 0 logs for faulty rank.", [], "victim"),
])
def test_monitored_barrier(line, failed, role) -> None:
    event = one(line, Kind.MONITORED_BARRIER)
    assert event.data["failed_ranks"] == failed and event.data["role"] == role
