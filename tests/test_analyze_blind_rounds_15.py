"""Readings added in the session of the thirty-sixth blind harvest (the r39* cases of the real corpus), one
behaviour per test, each with the look-alike it must not catch: libc++'s words for an uncaught C++ exception
(macOS and clang builds) cut short by the paste, a NaN the program's own check caught (with the rank and node its
words name), a device-side assertion, a traceback cut before its error line in the program's own code, and an
exception of the program's own read as a crash rather than an unknown error; the Flight Recorder analyser's
report; a paste that starts inside torchrun's rank prefix; the ranks a store barrier's waits leave out; Open
MPI's report with its PID and node masked; a Slurm batch step's OOM kill on the job's node; kubectl exec that
could not reach a node; std::terminate's what() line with the watchdog's rank; a rank logging its own work count
while another times out; the store client's retries and resets; a client socket timeout cut by a padded wrap; Open
MPI's help text for a TCP connection it could not complete; UCX endpoints and verbs queues; a CUDA call a library
checks itself; a subgroup's rank in the watchdog's message; a dead Ray actor's ip on its line; and in the session's
thirty-seventh harvest (r40*): NCCL's COLL trace read in the end of an input (processes making different calls),
a job ended from outside with the launcher's and the scheduler's aftermath, Horovod's gloo runner naming the
first process to fail, an elastic controller's deleted pod, libfabric's EFA errors, a HIP error and HCCL's
transport errors. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one, timeline_of
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.prefixes import split_prefix

diagnose = diagnose_paste


def test_libcxxs_uncaught_exception_is_a_crash_even_cut_short(tmp_path: Path) -> None:
    # real: horovod/horovod#2940 (macOS, gloo; the path of the failed check cut by the paste)
    cut = ("libc++abi.dylib: terminating with uncaught exception of type gloo::EnforceNotMet: [enforce fail at "
           "/private/var/folders/l3/18pljl2s6q3d3h_kk1y5nv8h0000gn/T/pip-...\n")
    top = diagnose(tmp_path, cut).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "uncaught exception" in top.title
    newer = "libc++abi: terminating due to uncaught exception of type std::runtime_error: bad\n"
    assert diagnose(tmp_path, newer).hypotheses
    # an exception that was caught and logged is no termination
    assert not events_of("handled an exception of type std::runtime_error, continuing\n")


def test_a_nan_its_own_check_caught_names_the_rank_and_node_in_its_words(tmp_path: Path) -> None:
    # real: NVIDIA/Megatron-LM#5026 (the rerun state machine's lines name the rank and its node)
    megatron = ("ERROR:megatron.core.rerun_state_machine:Unexpected result nan on rank 3 at iteration #3 invocation #2 "
                "(message='found NaN in local grad norm for bucket #0 in backward pass')\n"
                "ERROR:megatron.core.rerun_state_machine:Rank 3, node gpu-task-1-0, device 3, iteration #3: First rerun: "
                "unexpected result is reproducible within the tolerance (nan = nan).\n")
    top = diagnose(tmp_path, megatron).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,) and top.culprit_hosts == ("gpu-task-1-0",)
    # real: NVIDIA-NeMo#14348 (the rank in torchrun's prefix)
    nemo = ("[default2]:[rank2]: RuntimeError: Rank 2, node dcfai-01, device 2, iteration -1: Unexpected result nan "
            "(message='found NaN in local grad norm')\n")
    top = diagnose(tmp_path, nemo).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (2,)
    # a loss printed as nan in a progress line is no error line, and 'ranks 0 and 1' names no one rank
    assert not diagnose(tmp_path, "step 10 loss nan lr 1e-4\n").hypotheses
    several = diagnose(tmp_path, "ERROR: found NaN on rank 0 and 1\n").hypotheses[0]
    assert several.category is Category.RANK_CRASHED and several.culprit_ranks == ()


def test_a_device_side_assertion_is_the_programs_with_the_rank_a_later_line_gives(tmp_path: Path) -> None:
    # real: pytorch/pytorch#112488 (BCELoss input out of [0, 1] on rank 1; the watchdog's line names the rank)
    paste = ("/opt/conda/work/aten/src/ATen/native/cuda/Loss.cu:94: operator(): block: [117,0,0], thread: [26,0,0] "
             "Assertion `input_val >= zero && input_val <= one` failed.\n"
             "[E ProcessGroupNCCL.cpp:915] [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: "
             "device-side assert triggered\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,)
    # an illegal memory access is the GPU's fault reading, not the program's assertion
    fault = "[Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
    assert diagnose(tmp_path, fault).hypotheses[0].category is Category.GPU_ERROR


def test_a_traceback_cut_before_its_error_in_the_programs_code(tmp_path: Path) -> None:
    # real: tdrussell/diffusion-pipe#333 (rank 1 failed caching its dataset; the paste ends in the traceback)
    frames = ('[rank1]:   File "/code/train_dpo.py", line 443, in <module>\n[rank1]:     dataset_manager.cache()\n'
              '[rank1]:   File "/code/utils/dataset.py", line 567, in cache_metadata\n'
              '[rank1]:     metadata = datasets.load_from_disk(str(grouped_cache_dir))\n')
    top = diagnose(tmp_path, "[rank1]: Traceback (most recent call last):\n" + frames).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,) and "dataset.py:567" in top.title
    # cut inside a collective: where it waited, not a crash of its own
    waiting = ('[rank1]: Traceback (most recent call last):\n[rank1]:   File "/code/train.py", line 9, in <module>\n'
               '[rank1]:     dist.barrier()\n[rank1]:   File "/torch/distributed/distributed_c10d.py", line 3, in barrier\n')
    assert all(h.category is not Category.RANK_CRASHED for h in diagnose(tmp_path, waiting).hypotheses)


def test_an_exception_of_the_programs_own_is_a_crash_not_an_unknown_error(tmp_path: Path) -> None:
    # real: huggingface/transformers#28027 (saving a checkpoint: another rank renamed the folder first)
    paste = ('Traceback (most recent call last):\n  File "/x/trainer.py", line 2383, in _save_checkpoint\n'
             "    os.rename(staging_output_dir, output_dir)\n"
             "FileNotFoundError: [Errno 2] No such file or directory: '/x/tmp-checkpoint-100' -> '/x/checkp\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "FileNotFoundError" in top.title
    # a launcher's variable not set, or a communication library's own error, is no crash of the program
    for plumbing in ("KeyError: 'RANK'\n", "RuntimeError: oneCCL: exec.cpp:134 start_workers: EINVAL\n",
                     "RuntimeError: use_libuv was requested but PyTorch was build without libuv support\n"):
        assert diagnose(tmp_path, plumbing).hypotheses[0].category is Category.UNRECOGNISED, plumbing


_FR_REPORT = """Not all ranks joining collective: sequence number: 31117
internal record id: 31116
group info: 0:default_pg
collective: nccl:all_reduce
missing ranks: {3, 4, 5, 6, 7}
input sizes: [[1571911]]
output sizes: [[1571911]]
world size: 8
expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}
collective state: scheduled
collective stack trace:
 all_reduce at /torch/distributed/distributed_c10d.py:2707
"""


def test_the_flight_recorder_analysers_missing_ranks_are_the_late_ones(tmp_path: Path) -> None:
    # real: pytorch/pytorch#140969 (torchfrtrace over an 8-rank job's dumps)
    top = diagnose(tmp_path, _FR_REPORT).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (3, 4, 5, 6, 7)
    assert top.affected_ranks == (0, 1, 2) and "#31117" in top.title and "allreduce" in top.title
    # 2.5's form (the tutorial's), and the first tool's single line
    older = ("Not all ranks joining collective 5 at entry 4\ngroup info: 0:default_pg\ncollective: nccl:all_reduce\n"
             "missing ranks: {1}\ninput sizes: [[3, 4]]\noutput sizes: [[3, 4]]\nexpected ranks: 2\n"
             "collective state: scheduled\n")
    top = diagnose(tmp_path, older).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (1,) and top.affected_ranks == (0,)
    first = "Not all ranks joining collective for group 0:default_pg collective nccl:broadcast Missing ranks are {2, 3}\n"
    assert diagnose(tmp_path, first).hypotheses[0].culprit_ranks == (2, 3)
    # the header alone names no one
    assert not diagnose(tmp_path, "Not all ranks joining collective: sequence number: 7\n").hypotheses


def test_the_flight_recorder_analysers_culprit_of_a_mismatch(tmp_path: Path) -> None:
    paste = ("Collective sequence number: 5 has errors\ncollective: nccl:all_reduce\n"
             "error msg: Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: "
             "'nccl:all_reduce' does not match found collective type: 'nccl:broadcast'\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and top.culprit_ranks == (1,)
    assert "collective type mismatch" in top.title
    # Horovod's own "[missing ranks: 1]" stays Horovod's
    assert not [e for e in events_of("HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]\n")
                if e.data.get("source") == "fr_trace"]


def test_a_paste_that_starts_inside_torchruns_rank_prefix_keeps_the_rank() -> None:
    # real: vllm-project/vllm#7161 (the paste's first byte, ``[``, lost)
    line = ("rank0]:[E811 01:10:50.482336908 ProcessGroupNCCL.cpp:1515] [PG 3 Rank 0] Process group watchdog thread "
            "terminated with exception: CUDA error: an illegal memory access was encountered")
    assert one(line, Kind.GPU_ERROR).origin.rank == 0
    # a word ending in "rank0]:" inside a line is no prefix
    assert split_prefix("see rank0]: here").origin.rank is None


def test_the_ranks_no_store_barrier_wait_came_from_never_arrived(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning#4420 (each rank waits in the store barrier, 7 of 8; Python logging's
    # default format, every line the same length: no terminal wrap)
    waits = "".join(f"INFO:root:Waiting in store based barrier to initialize process group for rank: {r}, key: "
                    "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)\n"
                    for r in (0, 2, 6, 1, 3, 7, 5))
    top = diagnose(tmp_path, waits).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and top.culprit_ranks == (4,) and "rank 4" in top.title
    # when fewer ranks' waits are pasted than joined, the missing ones are not known
    assert diagnose(tmp_path, "".join(waits.splitlines(keepends=True)[:3])).hypotheses[0].culprit_ranks == ()


def test_open_mpis_report_with_the_pid_and_node_masked(tmp_path: Path) -> None:
    # real: Kay1794/Aware-of-the-history#2 (the poster hid the PID and node)
    line = "mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 (Killed).\n"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_ranks == (1,) and top.culprit_hosts == ()
    # a placeholder that reads as a name stays the name the paste gives
    placeholder = "mpirun noticed that process rank 7 with PID 0 on node HOSTNAME exited on signal 9 (Killed).\n"
    assert diagnose(tmp_path, placeholder).hypotheses[0].culprit_hosts == ("HOSTNAME",)


def test_a_slurm_batch_steps_oom_kill_is_on_the_jobs_node(tmp_path: Path) -> None:
    # real: Visual-AI/3DRS#7 (the batch step runs on the node slurmstepd names for the job)
    lines = ("slurmstepd: error: *** JOB 10609057 ON g002 CANCELLED AT 2025-08-22T01:14:01 ***\n"
             "slurmstepd: error: Detected 1 oom_kill event in StepId=10609057.batch. Some of the step tasks have been "
             "OOM Killed.\n")
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("g002",)
    # another job's node, or a step other than the batch one, says nothing of where
    other = lines.replace("StepId=10609057.batch", "StepId=10609057.0")
    assert diagnose(tmp_path, other).hypotheses[0].culprit_hosts == ()


def test_kubectl_exec_that_could_not_reach_a_nodes_kubelet(tmp_path: Path) -> None:
    # real: kubeflow/mpi-operator#61 (the operator starts orted through kubectl exec)
    paste = ("Error from server: error dialing backend: dial tcp 10.0.3.7:10250: getsockopt: connection timed out\n"
             "ORTE was unable to reliably start one or more daemons.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.culprit_hosts == ("10.0.3.7",)
    assert "10.0.3.7" not in diagnose(tmp_path, "ORTE was unable to reliably start one or more daemons.\n"
                                      ).hypotheses[0].title


def test_std_terminates_what_line_keeps_the_rank_of_the_watchdogs_message() -> None:
    # real: meta-llama/llama-cookbook#290
    line = ("  what():  [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: unspecified launch "
            "failure")
    assert one(line, Kind.GPU_ERROR).origin.rank == 0


def test_a_rank_that_logs_its_own_work_count_while_another_times_out(tmp_path: Path) -> None:
    # real: xiaomi-research/recogdrive#57 (rank 0 still scoring scenarios while rank 1 waits in an allgather)
    work = ("2026-01-29 15:25:45,398 INFO {run_pdm_score_qwen.py:102}  Rank 0 processing scenario 1764 / 3037 in "
            "thread_id=f37e0d60, node_id=0\n")
    timeout = ("[rank1]:[E129 15:25:55.637180923 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=3, OpType=ALLGATHER, NumelIn=1, NumelOut=4, Timeout(ms)=600000) "
               "ran for 600079 milliseconds before timing out.\n")
    top = diagnose(tmp_path, work + timeout).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,)
    assert "rank 1 timed out waiting" in top.title
    # a count that is done (3037 / 3037) is no work in progress
    done = work.replace("1764 / 3037", "3037 / 3037")
    assert diagnose(tmp_path, done + timeout).hypotheses[0].culprit_ranks != (0,)


def test_the_store_clients_retries_name_the_store_it_cannot_reach(tmp_path: Path) -> None:
    # real: TheTom/vllm-swift#9 (macOS; the client retries the store and the store resets it)
    line = ("[W426 16:56:01.831041000 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate to host "
            "100.64.0.1:59782 - retrying (try=6, timeout=1800000ms, delay=5241ms): Connection reset by peer\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.culprit_hosts == ("100.64.0.1",)
    # the store's reset of an established client is a lost connection, its redacted address no host
    reset = ("[W519 18:43:28.514281000 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=22, "
             "addr=[<redacted>]:58160, remote=[<redacted>]:58159): Connection reset by peer\n")
    lost = one(reset, Kind.PEER_CLOSED)
    assert lost.data["transport"] == "store" and "peer_addr" not in lost.data


def test_the_client_socket_timeout_cut_by_a_padded_wrap(tmp_path: Path) -> None:
    # real: zai-org/GLM-4#677 (a terminal's wrap padded with spaces inside "while")
    line = ("torch.distributed.DistNetworkError: The client socket has timed out after 600s w" + " " * 200
            + "hile trying to connect to (10.60.2.1, 53591).\n")
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_open_mpis_help_text_for_a_tcp_connection_it_could_not_complete(tmp_path: Path) -> None:
    # real: kubeflow/kubeflow#3789 (the MPI launcher could not reach worker 14)
    text = ("A process or daemon was unable to complete a TCP connection\nto another process:\n"
            "  Local host:    test-openmpi-master\n  Remote host:   test-openmpi-worker-14.mpi-test\n"
            "This is usually caused by a firewall on the remote host. Please\n")
    top = diagnose(tmp_path, text).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "test-openmpi-worker-14.mpi-test" in top.title
    # the header alone, without the hosts, says nothing of whom
    assert not events_of("A process or daemon was unable to complete a TCP connection\n")


def test_ucx_endpoints_that_could_not_connect_and_queues_that_could_not_be_made(tmp_path: Path) -> None:
    # real: NVIDIA/nccl-tests#218 (UCC's endpoints timed out; the segfault came after)
    ucc = ("[1716868653.124073] [c5e62fb2396d:1618 :0]       tl_ucp_ep.c:43   TL_UCP ERROR ucp returned connect error: "
           "Endpoint timeout\n[c5e62fb2396d:1618 :0:1618] Caught signal 11 (Segmentation fault: address not mapped to "
           "object at address 0xfffffffffffffefb)\n")
    assert diagnose(tmp_path, ucc).hypotheses[0].category is Category.PEER_UNREACHABLE
    # real: openucx/ucx#8229 (a 64 kB memlock limit) and horovod/horovod#98 (NCCL 2.1's WARN without "NCCL")
    cq = ("[1652739463.054681] [cn0022:4071024:0]        ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed: "
          "Cannot allocate memory\n")
    assert diagnose(tmp_path, cq).hypotheses[0].category is Category.MEMLOCK_LIMIT
    old = "machine [0] misc/ibvwrap.cu:269 WARN Call to ibv_create_qp failed\n"
    assert one(old, Kind.MEMLOCK_FAILURE).origin.host == "machine"
    # real: NVIDIA/nccl#1467 (UCX's address handle for a RoCE queue pair's connect)
    ah = ("ib_device.c:1171 UCX  ERROR   ibv_create_ah(dlid=49152 sl=0 port=1 dgid=::ffff:10.0.0.40 sgid_index=3 "
          "traffic_class=106) for RC DEVX QP connect on mlx5_bond_0 failed: Connection timed out\n")
    assert diagnose(tmp_path, ah).hypotheses[0].category is Category.IB_MODIFY_QP
    # a Python file's WARN is no NCCL line
    assert not [e for e in events_of("trainer.py:12 WARN low disk\n") if e.kind is Kind.NCCL_WARN]


def test_a_cuda_call_a_library_checks_itself(tmp_path: Path) -> None:
    # real: horovod/horovod#2365 (rank 25's cudaEventQuery, then its abort)
    text = ("[1,25]<stderr>:terminate called after throwing an instance of 'std::logic_error'\n"
            "[1,25]<stderr>:  what():  cudaEventQuery failed: an illegal memory access was encountered\n"
            "[1,25]<stderr>:[c102:70259] Signal: Aborted (6)\n")
    top = diagnose(tmp_path, text).hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (25,)
    # a CUDA call out of memory is the program's, not the GPU's fault
    assert not [e for e in events_of("cudaMalloc failed: out of memory\n") if e.kind is Kind.GPU_ERROR]


def test_a_subgroups_rank_in_the_watchdogs_message_is_not_the_global_one() -> None:
    # real: OpenRLHF/OpenRLHF#970 (global rank 9 is rank 1 of process group 1)
    line = ("[rank9]:[E416 13:21:26.967375581 ProcessGroupNCCL.cpp:616] [PG ID 1 PG GUID 2 Rank 1] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=876319, OpType=BROADCAST, NumelIn=8, NumelOut=8, "
            "Timeout(ms)=600000) ran for 600089 milliseconds before timing out.")
    assert one(line, Kind.WATCHDOG_TIMEOUT).origin.rank == 9
    default = line.replace("[PG ID 1 PG GUID 2 Rank 1]", "[PG ID 0 PG GUID 0(default_pg) Rank 9]")
    assert one(default, Kind.WATCHDOG_TIMEOUT).origin.rank == 9


def test_a_dead_ray_actors_ip_on_the_same_line(tmp_path: Path) -> None:
    # real: OpenRLHF/OpenRLHF#970 (the actor's fields run into its death's line)
    line = ("4 ip: 10.1.59.27 The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
            "Worker exit detail: Worker unexpectedly exits with a connection error code 2. (1) The process is killed by "
            "SIGKILL by OOM killer due to high memory usage.\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("10.1.59.27",)


_COLL = ("{host}:{pid}:{pid} [{dev}] NCCL INFO {op}: opCount {seq} sendbuff 0x7f5dd32b2100 recvbuff 0x7f5dd32b2100 "
         "count {count} datatype 7 op 0 root 0 comm 0x55bef020{dev}370 [nranks=4] stream 0x55bef0208bd0\n")


def test_ncclS_coll_trace_shows_processes_making_different_calls(tmp_path: Path) -> None:
    # real: ROCm/rccl#429 (at opCount 28c rank 2 gathers while rank 0 reduces), NVIDIA/nccl#901
    two = (_COLL.format(host="h03", pid=45006, dev=0, op="AllReduce", seq="28c", count=9984512)
           + _COLL.format(host="h03", pid=45012, dev=2, op="AllGather", seq="28c", count=59205120))
    top = diagnose(tmp_path, two).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and "28c" in top.title and top.culprit_processes == ()
    # where most processes agree, the odd one out is the culprit
    four = "".join(_COLL.format(host="h03", pid=100 + d, dev=d, op="AllReduce", seq="5", count=12288) for d in (0, 1, 3))
    four += _COLL.format(host="h03", pid=102, dev=2, op="AllGather", seq="5", count=150528)
    odd = diagnose(tmp_path, four).hypotheses[0]
    assert odd.category is Category.COLLECTIVE_DESYNC and odd.culprit_local_ranks == (2,)
    # the same calls, or processes at other opCounts (one ahead of the others), are no desync
    same = "".join(_COLL.format(host="h03", pid=100 + d, dev=d, op="AllReduce", seq="5", count=12288) for d in range(4))
    ahead = same + _COLL.format(host="h03", pid=100, dev=0, op="AllGather", seq="6", count=3)
    assert not diagnose(tmp_path, ahead).hypotheses
    # a process with two communicators of one size (tensor and data parallel groups) is not compared
    second = _COLL.format(host="h03", pid=101, dev=1, op="AllGather", seq="5", count=3).replace("comm 0x55bef0201370",
                                                                                                 "comm 0x55bef0209999")
    assert not diagnose(tmp_path, same + second).hypotheses


def test_ncclS_coll_trace_is_read_in_the_end_of_a_long_log_only(tmp_path: Path) -> None:
    from syncdoctor.analyze.parsers import nccl_coll

    early = _COLL.format(host="h03", pid=1, dev=0, op="AllReduce", seq="1", count=1)
    filler = "step 1 loss 0.5\n" * (nccl_coll.TAIL_BYTES // 16 + 10)
    late = "".join(_COLL.format(host="h03", pid=1, dev=0, op="AllReduce", seq=f"{n:x}", count=8) for n in range(2, 12))
    timeline = timeline_of(tmp_path, early + filler + late)
    calls = timeline.of(Kind.NCCL_COLL)
    assert [e.seq for e in calls] == [8, 9, 10, 11]  # the last KEEP of that process and communicator
    assert calls[-1].ref.line == 1 + (nccl_coll.TAIL_BYTES // 16 + 10) + 10  # numbered as in the file
    unended = timeline_of(tmp_path, early + early.replace("opCount 1", "opCount 2").rstrip("\n")).of(Kind.NCCL_COLL)
    assert [(e.seq, e.ref.line) for e in unended] == [(1, 1), (2, 2)]  # a last line without its newline


def test_a_job_ended_from_outside_with_the_launchers_and_schedulers_aftermath(tmp_path: Path) -> None:
    # real: OpenMOSS/MOSS#237 (nohup's terminal closed: the agent's SIGHUP, then Accelerate's Rich traceback box)
    rich = ("[16:21:34] WARNING  Received 1 death signal, shutting down workers    api.py:729\n"
            "           WARNING  Sending process 2928786 closing signal SIGHUP     api.py:698\n"
            "╭───────────────────── Traceback (most recent call last) ──────────────────────╮\n")
    assert diagnose(tmp_path, rich).hypotheses[0].category is Category.RANK_KILLED
    # real: facebookincubator/submitit#1708 (a requeue at the time limit; the step's tasks then exit)
    requeue = ("slurmstepd: error: *** JOB 608 ON node7 CANCELLED AT 2022-08-12T02:06:12 DUE TO JOB REQUEUE ***\n"
               "slurmstepd: error: Failed to send MESSAGE_TASK_EXIT: Connection refused\n"
               "srun: error: node7: tasks 2-3: Exited with exit code 1\n")
    top = diagnose(tmp_path, requeue).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "requeue" in top.title
    # a task that failed before the cancellation is its own failure
    first = "srun: error: node7: tasks 2-3: Exited with exit code 1\n" + requeue.splitlines(keepends=True)[0]
    assert diagnose(tmp_path, first).hypotheses[0].category is not Category.RANK_KILLED


def test_horovods_gloo_runner_names_the_first_process_by_host_and_local_rank(tmp_path: Path) -> None:
    # real: horovod/horovod#2484 (kill -9 on a worker of an elastic job: exit code 137)
    paste = ("RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the "
             "job to be terminated. The first process to do so was:\nProcess name: elastic-test-worker-1[0]\n"
             "Exit code: 137\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("elastic-test-worker-1",)
    crashed = paste.replace("Exit code: 137", "Exit code: 1")
    assert diagnose(tmp_path, crashed).hypotheses[0].category is Category.RANK_CRASHED


def test_an_elastic_controllers_record_of_a_pod_deleted_from_outside(tmp_path: Path) -> None:
    # real: intelligent-machine-learning/dlrover#1690 (kubectl delete on the worker pods)
    line = ("[2026-01-27 08:55:47,517] [INFO] [dist_job_manager.py:838:_process_event] job-edljob-worker-13 status "
            "change: Running to Failed by the event MODIFIED. Exit reason is Deleted\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("job-edljob-worker-13",)
    assert "taken down from outside" in top.title
    oom = line.replace("Exit reason is Deleted", "Exit reason is OOMKilled")
    assert "OOM" in diagnose(tmp_path, oom).hypotheses[0].title


def test_libfabrics_efa_errors_are_error_lines_and_its_unposted_buffers_memlock(tmp_path: Path) -> None:
    # real: aws/aws-ofi-nccl#141, #346 and awslabs/awsome-distributed-ai#647
    eq = "Unable to write to EQ: Missing or unavailable event queue. err: Cannot allocate memory (-12) prov_errno:\n"
    assert diagnose(tmp_path, eq).hypotheses[0].category is Category.UNRECOGNISED
    cq = ("libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: Invalid address "
          "My EFA addr: fi_addr_efa://[fe80::13:c2ff:fe6f:f03d]:0:1072483550\n")
    assert diagnose(tmp_path, cq).hypotheses
    posted = ("Libfabric error: (-12) Cannot allocate memory\n"
              "EFA internal error: (4112) Failure to post internal receive buffers\n")
    assert diagnose(tmp_path, posted).hypotheses[0].category is Category.MEMLOCK_LIMIT


def test_a_hip_error_and_hccls_transport_that_could_not_reach_a_peer(tmp_path: Path) -> None:
    # real: sgl-project/sglang#29235 (ROCm: the watchdog's HIP error, then the abort)
    hip = ("HIP error: operation not permitted on an event last recorded in a capturing stream\n"
           "(hipErrorCapturedEvent)\nFatal Python error: Aborted\n")
    assert diagnose(tmp_path, hip).hypotheses[0].category is Category.UNRECOGNISED  # graph capture's, not the GPU's
    # real: vllm-project/vllm-ascend#2643 (HCCL could not create its links to the other host's ranks)
    hccl = ("(VllmWorker rank=3 pid=50935) ERROR 09-10 03:36:31 [multiproc_executor.py:527]         Transport init "
            "error. Reason: [Create][DestLink]Create Dest error! creakLink para:rank[7]-localUserrank[7]-localIpAddr"
            "[192.168.1.3], dst_rank[14]-remoteUserrank[14]-remote_ip_addr[192.168.1.4]\n")
    assert diagnose(tmp_path, hccl).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_horovods_stalled_ranks_and_rays_autoscaler_stopping_a_node(tmp_path: Path) -> None:
    # real: horovod/horovod#1442 (Horovod 0.18: "Stalled ranks:" and a row per rank)
    stalled = ("[1,0]<stderr>:Stalled ranks:\n"
               "[1,0]<stderr>:6: [horovod_allreduce.0, horovod_allreduce.1, horovod_allreduce.10 ...]\n")
    top = diagnose(tmp_path, stalled).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (6,)
    # real: ray-project/ray#9044 (a fault-tolerance test: the autoscaler stops Ray on a worker node)
    stopped = ("2020-06-16 21:26:07,014\tINFO commands.py:136 -- kill_node: Shutdown worker i-0baab8b79abe4649d\n"
               "2020-06-16 21:26:07,014\tINFO updater.py:254 -- NodeUpdater: i-0baab8b79abe4649d: Running ray stop on "
               "34.222.57.174...\n")
    top = diagnose(tmp_path, stopped).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("34.222.57.174",)
