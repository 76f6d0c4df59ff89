"""Readings added after the twenty-eighth blind harvest (the r31* cases of the real corpus), one behaviour per
test, each with the look-alike it must not catch: NCCL's abort lines as the GPU map of a communicator, Cray
MPICH's own fatal error, aws-ofi-nccl's completion error with a network errno, the SHARP plugin's failure, a reset
while NCCL was still connecting, TensorPipe's connect that found the backlog full, the store client's timeout
without its address, NCCL's connect that never became writable, and rank 0 missing from a burst followed by the
others' unprefixed lines. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one, read
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_ncclS_abort_lines_give_the_gpu_of_each_rank(tmp_path: Path) -> None:
    # real: pytorch/examples#1279 (MIT SuperCloud: both ranks of the node on GPU 0)
    paste = ("d-9-11-1:2870757:2870757 [0] NCCL INFO comm 0x560c6a8aafd0 rank 0 nranks 2 cudaDev 0 busId 86000 - "
             "Abort COMPLETE\n"
             "d-9-11-1:2870756:2870756 [0] NCCL INFO comm 0x55592676f080 rank 1 nranks 2 cudaDev 0 busId 86000 - "
             "Abort COMPLETE\n")
    assert one(paste.splitlines()[0], Kind.NCCL_INIT_START).data["bus_id"] == "86000"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.DUPLICATE_GPU and top.culprit_ranks == (0, 1) and top.culprit_hosts == ("d-9-11-1",)
    # an abort is no communicator completed, and two GPUs of the host are no duplicate
    assert not [e for e in events_of(paste.splitlines()[0]) if e.kind is Kind.NCCL_INIT]
    apart = paste.replace("rank 1 nranks 2 cudaDev 0 busId 86000", "rank 1 nranks 2 cudaDev 1 busId 87000")
    assert all(h.category is not Category.DUPLICATE_GPU for h in diagnose(tmp_path, apart).hypotheses)
    # nor are two processes that each hold rank 0 of communicators of their own (no commId to tell them apart)
    own = paste.replace("rank 1 nranks 2", "rank 0 nranks 2")
    assert all(h.category is not Category.DUPLICATE_GPU for h in diagnose(tmp_path, own).hypotheses)


def test_cray_mpichs_own_fatal_error(tmp_path: Path) -> None:
    # real: APPFL/APPFL#258 (Polaris: MPICH_GPU_SUPPORT_ENABLED=1 without the GTL library)
    line = ("MPICH ERROR [Rank 0] [job id ] [Thu Jan 30 22:35:30 2025] [x3006c0s19b1n0] - Abort(-1) (rank 0 in comm 0): "
            "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked\n")
    event = one(line, Kind.EXCEPTION)
    assert (event.origin.rank, event.origin.host, event.data["type"]) == (0, "x3006c0s19b1n0", "MPI_Abort")
    top = diagnose(tmp_path, line).hypotheses[0]
    # the build, every rank's (the fifty-second round's CSCS case); the rank whose abort is shown still named
    assert top.category is Category.UNRECOGNISED and top.culprit_ranks == (0,) and "GTL" in top.title
    # another reason: that rank's own failure
    other = diagnose(tmp_path, line.replace("GPU_SUPPORT_ENABLED is requested, but GTL library is not linked", "x"))
    assert other.hypotheses[0].category is Category.RANK_CRASHED and other.hypotheses[0].culprit_ranks == (0,)
    # MPICH's other banners are no rank's error of its own
    assert not [e for e in events_of("MPICH ERROR: the library was built without GPU support") if
                e.kind is Kind.EXCEPTION]


def test_aws_ofi_ncclS_completion_error_with_a_network_errno(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1928 (Slingshot, libfabric's CXI provider: the first collective of DDP)
    paste = ("[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
             "prematurely.\n[rank3]: Last error:\n"
             "[rank3]: NET/OFI Request 0x7f14cc5b60c0 completed with error. RC: 113. Error: 2 (UNDELIVERABLE). "
             "Completed length: 0\n")
    event = one(paste.splitlines()[2], Kind.NCCL_CONNECT_FAILED)
    assert event.data["error"].startswith("No route to host") and event.origin.rank == 3
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.PEER_UNREACHABLE
    # an errno that is no network's (a memory registration) stays the plugin's own error
    other = "node1:12:34 [0] NCCL WARN NET/OFI Request 0x7f14cc5b60c0 completed with error. RC: 12. Error: 5 (EIO)"
    assert not [e for e in events_of(other) if e.kind is Kind.NCCL_CONNECT_FAILED]


def test_the_sharp_plugins_failure(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1219 (CollNet over SHARP: the switches' streaming tree could not be locked)
    paste = ("node:174:4368 [3] sharp_plugin.c:354 NCCL WARN SHARP group create: Streaming Tree lock failed (-18)\n"
             "node:174:4359 [3] NCCL INFO transport.cc:327 -> 2\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "SHARP" in top.title and "NCCL_COLLNET_ENABLE=0" in (top.fix or "")
    # the same chain without the plugin's WARN is the system error at init
    assert diagnose(tmp_path, paste.splitlines()[1]).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_a_reset_while_nccl_was_still_connecting(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1920 (Kubernetes: the bootstrap's connect reset as it sent the socket type)
    reset = ("gpu-server320 [5] misc/socket.cc:46 NCCL WARN socketProgressOpt: Call to send to 10.44.137.149<52905> "
             "failed : Connection reset by peer\n"
             "gpu-server320 [5] NCCL INFO misc/socket.cc:64 -> 6\n")
    chain = ("gpu-server320 [5] NCCL INFO misc/socket.cc:607 -> 6 socketWait(NCCL_SOCKET_SEND, sock, &sock->type, "
             "sizeof(sock->type), &sent)\n"
             "gpu-server320 [5] NCCL INFO bootstrap.cc:868 -> 6 ncclSocketConnect()\n")
    top = diagnose(tmp_path, reset + chain).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "10.44.137.149" in top.title
    # a reset whose chain runs through no connect is a peer that went away
    assert diagnose(tmp_path, reset).hypotheses[0].category is not Category.PEER_UNREACHABLE


def test_tensorpipes_connect_that_found_the_backlog_full(tmp_path: Path) -> None:
    # real: pytorch/pytorch#85607 (init_rpc with 32 workers: every first request to worker 0)
    line = ("[W tensorpipe_agent.cpp:916] RPC agent for 21 encountered error when sending outgoing request #0 to 0: "
            "connect: Resource temporarily unavailable (this error originated at tensorpipe/common/socket.cc:114)\n")
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_UNREACHABLE
    # EAGAIN from a read is no connect
    read = line.replace("connect: Resource", "read: Resource")
    assert diagnose(tmp_path, read).hypotheses[0].category is not Category.PEER_UNREACHABLE


def test_the_store_clients_timeout_without_its_address(tmp_path: Path) -> None:
    # real: kubeflow/sdk#142 (a TrainJob's workers: torchrun started without the job's address)
    line = "[E socket.cpp:1019] The client socket has timed out after 900000ms while trying to connect\n"
    assert one(line, Kind.STORE_ERROR).data == {"what": "connect", "error": "timeout"}
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_UNREACHABLE
    full = line.replace("trying to connect", "trying to connect to (10.0.0.1, 29500).")
    assert one(full, Kind.STORE_ERROR).data["store_host"] == "10.0.0.1"


def test_ncclS_connect_that_never_became_writable(tmp_path: Path) -> None:
    # real: NVIDIA/nccl PR 1618 (a destination node dropping SYNs at a 1024-rank bootstrap)
    line = ("[misc/socket.cc:586] [s12gn3064:pid=3942408] NCCL WARN socketPollConnect poll() returned 1, no POLLOUT "
            "events\n")
    assert "no POLLOUT" in one(line, Kind.NCCL_CONNECT_FAILED).data["error"]
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_UNREACHABLE
    assert not [e for e in events_of("socketPollConnect poll() returned 1, POLLOUT ready")
                if e.kind is Kind.NCCL_CONNECT_FAILED]


def test_the_first_rank_missing_from_a_burst_followed_by_unprefixed_lines(tmp_path: Path) -> None:
    # real: NERSC/ACE#348 (Perlmutter, 4 GPUs: ranks 1-3 time out, the console goes on without rank 0's line)
    burst = "".join(
        f"[E ProcessGroupNCCL.cpp:457] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
        f"1132079, OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 18000{r}5 "
        "milliseconds before timing out.\n" for r in (3, 2, 1))
    after = ("[E ProcessGroupNCCL.cpp:471] Some NCCL operations have failed or timed out. Due to the asynchronous "
             "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n")
    top = diagnose(tmp_path, burst + after).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,)
    assert diagnose(tmp_path, burst).hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT


def test_a_dead_ray_actor_placed_by_its_fields_above(tmp_path: Path) -> None:
    # real: volcengine/verl#3987 (a Ray job on a PAI pod: the actor's worker process died, Ray names the OOM killer)
    fields = ("(FullyAsyncTaskRunner pid=130397)       actor_id: 1bc865d7417ba6d5182635e30a000000\n"
              "(FullyAsyncTaskRunner pid=130397)       pid: 132182\n"
              "(FullyAsyncTaskRunner pid=130397)       name: ra0GdtWorkerDict_0:1\n"
              "(FullyAsyncTaskRunner pid=130397)       ip: 172.16.2.252\n")
    dead = ("(FullyAsyncTaskRunner pid=130397) The actor is dead because its worker process has died. Worker exit "
            "type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of "
            "file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to "
            "high memory usage.\n")
    event = next(e for e in read(fields + dead) if e.kind is Kind.WORKER_FAILED)
    assert (event.origin.host, event.data["worker_pid"]) == ("172.16.2.252", 132182)
    top = diagnose(tmp_path, fields + dead).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("172.16.2.252",)
    # without the fields the actor is still read, placed nowhere; an intended exit is no death
    assert next(e for e in read(dead) if e.kind is Kind.WORKER_FAILED).origin.host is None
    assert not [e for e in read(dead.replace("SYSTEM_ERROR", "INTENDED_USER_EXIT")) if e.kind is Kind.WORKER_FAILED]
    # another writer's fields above are not this actor's
    other = fields.replace("(FullyAsyncTaskRunner pid=130397)", "(TaskRunner pid=1)") + dead
    assert next(e for e in read(other) if e.kind is Kind.WORKER_FAILED).origin.host is None


def test_ncclS_prefix_with_the_pid_and_tid_taken_out() -> None:
    # real: NVIDIA/nccl#1920 (the reporter removed them: ``gpu-server320 [5] misc/socket.cc:46 NCCL WARN …``)
    event = one("gpu-server320 [5] misc/socket.cc:46 NCCL WARN socketProgressOpt: Call to send to 10.44.137.149<52905> "
                "failed : Connection reset by peer", Kind.PEER_CLOSED)
    assert (event.origin.host, event.origin.pid, event.origin.device) == ("gpu-server320", None, 5)
    # a word before a device elsewhere on the line is no host
    later = one("[rank0]: seen in note [5] misc/socket.cc:46 NCCL WARN socketProgressOpt: Call to send to 10.0.0.2<52905> "
                "failed : Connection reset by peer", Kind.PEER_CLOSED)
    assert later.origin.host is None


def test_grep_output_over_the_ranks_log_files() -> None:
    # real: NVIDIA/nccl PR 1618 (``grep`` over per-rank logs: each line starts with its file's name)
    event = one("rank_604.s12gn3064.4031852.log:[misc/socket.cc:586] NCCL WARN socketPollConnect poll() returned 1, "
                "no POLLOUT events", Kind.NCCL_CONNECT_FAILED)
    assert event.origin.rank == 604
    numbered = one("logs/node-07/rank3.log:118:RuntimeError: boom", Kind.EXCEPTION)
    assert (numbered.origin.rank, numbered.origin.host) == (3, "node-07")
    # a file named in a sentence is no prefix
    assert all(e.origin.rank is None for e in events_of("Saved rank3.log: RuntimeError: boom"))
