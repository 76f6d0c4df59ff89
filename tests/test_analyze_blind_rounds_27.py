"""Readings added in the session of the eighty-second blind harvest (the r85* cases of the real corpus) and of the
sweeps of MPI stacks, JAX/XLA, parallel-training libraries and orchestration; one behaviour per test, each with the
look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, each_read, events_of, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste



_FRAMES = ('Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    fs.upload(local, remote)\n'
           '  File "/usr/local/lib/python3.10/dist-packages/paddle/distributed/fleet/utils/fs.py", line 1010, in upload\n'
           '    raise FSTimeOut(f"upload time out:{fs_path}")\n')


def test_the_line_that_ends_a_tracebacks_frames_is_its_exception_whatever_its_name(tmp_path: Path) -> None:
    # PaddlePaddle's file-system exceptions end in neither Error nor Exception: the traceback ended unread
    top = diagnose(tmp_path, _FRAMES + "paddle.distributed.fleet.utils.fs.FSTimeOut: upload time out:/ckpt/step_9\n"
                   ).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "FSTimeOut" in top.title
    ranked = "".join(f"[rank3]: {line}\n" for line in _FRAMES.splitlines())
    top = diagnose(tmp_path, ranked + "[rank3]: paddle.distributed.fleet.utils.fs.FSTimeOut: upload time out:/ckpt\n"
                   ).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.RANK_CRASHED, (3,))
    # Paddle's C++ check (EnforceNotMet) stays an error no rule explains, as c10's ``enforce fail`` is, but where it
    # quotes NCCL's ``unhandled cuda error`` at its NCCL helper (the hundred-and-ninety-fifth round: NCCL's failed CUDA
    # call, as the same words elsewhere); and a line in capitals after the frames (another writer's) is no exception
    enforce = _FRAMES + "paddle.fluid.core.EnforceNotMet: Tensor holds no memory at [tensor.h:93]\n"
    assert diagnose(tmp_path, enforce).hypotheses[0].category is Category.UNRECOGNISED
    nccl = _FRAMES + "paddle.fluid.core.EnforceNotMet: unhandled cuda error at [nccl_helper.h:93]\n"
    assert diagnose(tmp_path, nccl).hypotheses[0].category is Category.GPU_ERROR
    exceptions = [e for e in events_of(_FRAMES + "WARNING: rank 1 saved\n") if e.kind is Kind.EXCEPTION]
    assert exceptions == []
    # nor is a shell's word after a traceback cut before its exception (``Killed``: the OOM killer's SIGKILL)
    assert [e for e in events_of(_FRAMES + "Killed\n") if e.kind is Kind.EXCEPTION] == []


def test_an_exception_named_for_a_wait_or_an_abort_on_a_line_alone_is_never_silent(tmp_path: Path) -> None:
    for line in ("paddle.distributed.fleet.utils.fs.FSShellCmdAborted: cmd hadoop fs -put ckpt failed",
                 "FSTimeOut: hadoop fs -ls hdfs://cluster/ckpt timeout"):
        hypotheses = diagnose(tmp_path, line + "\n").hypotheses
        assert hypotheses and hypotheses[0].category is Category.UNRECOGNISED, line
        # the qualified class before its colon is no pdsh host
        assert hypotheses[0].culprit_hosts == (), line
    # an option named for a timeout is no error
    assert diagnose(tmp_path, "SocketTimeout: 30\nRequestTimeout: 10s\nRequestTimeout= 10\n").hypotheses == ()


_DCP = ("[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([3, 7])\n"
        "[rank0]: Traceback (most recent call last): (RANK 3)\n"
        '[rank0]:   File "/usr/lib/python3.11/site-packages/torch/distributed/checkpoint/filesystem.py", line 655, in '
        "write_data\n"
        '[rank0]:     with open(path, "wb") as f:\n'
        "[rank0]: OSError: [Errno 28] No space left on device: '/ckpt/step-1200/__3_0.distcp'\n"
        "[rank0]: Traceback (most recent call last): (RANK 7)\n"
        '[rank0]:   File "/usr/lib/python3.11/site-packages/torch/distributed/checkpoint/utils.py", line 192, in '
        "reduce_scatter\n"
        "[rank0]:     local_data = map_fun()\n"
        "[rank0]: OSError: [Errno 28] No space left on device: '/ckpt/step-1200/__7_0.distcp'\n")


def test_a_distributed_checkpoints_report_names_the_ranks_that_failed_not_the_one_that_printed_it(
        tmp_path: Path) -> None:
    # torch.distributed.checkpoint gathers every rank's failure to its coordinator, which raises them as one
    top = diagnose(tmp_path, _DCP).hypotheses[0]
    # (their errors are a disk without room, the setup's: A028 since the hundred-and-thirty-first round)
    assert (top.category, top.culprit_ranks) == (Category.UNRECOGNISED, (3, 7)) and "without room" in top.title
    assert "No space left on device" in top.what and "__7_0.distcp" in top.what
    # the summary line alone (the paste cut before the ranks' tracebacks) still names them
    top = diagnose(tmp_path, _DCP.splitlines(keepends=True)[0]).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.RANK_CRASHED, (3, 7))
    # a traceback that merely follows the coordinator's own error is the coordinator's
    own = "[rank0]: Traceback (most recent call last):\n" + "".join(_DCP.splitlines(keepends=True)[2:5])
    assert diagnose(tmp_path, own).hypotheses[0].culprit_ranks == (0,)


def test_nixls_ucx_without_cuda_and_mooncakes_missing_gid_name_the_setup(tmp_path: Path) -> None:
    # real: NVIDIA cosmos post-training's troubleshooting page (two UCX copies, the first without CUDA) and
    # sgl-project/sglang#30737 (Mooncake on a bonded RoCE NIC)
    ucx = ("W ucx_utils.cpp:628] 8 NVIDIA GPU(s) were detected, but UCX CUDA support was not found!\n"
           "E ucx_utils.cpp:582] VRAM memory is detected as host by UCX...\n")
    top = diagnose(tmp_path, ucx).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "no CUDA support" in top.title and top.confidence >= 0.7
    assert "UCX_TLS" in top.fix
    gid = ("Decode transfer failed ... KVTransferError: Failed to get kvcache from prefill instance, it might be dead\n"
           "GID is NULL, please check your GID index by specifying MC_GID_INDEX\n")
    top = diagnose(tmp_path, gid).hypotheses[0]
    assert top.category is Category.IB_MODIFY_QP and "MC_GID_INDEX" in top.fix
    # a NIXL line without a date at its level is an error at E, not at I or W
    assert [e.kind for e in events_of("E nixl_agent.cpp:120] createXferReq failed") if e.kind is Kind.ERROR_LINE]
    assert not [e for e in events_of("I nixl_agent.cpp:120] created agent") if e.kind is Kind.ERROR_LINE]


def test_kubernetes_events_of_a_pod_ended_from_outside(tmp_path: Path) -> None:
    oom = "  Warning  SystemOOM  4m  kubelet  System OOM encountered, victim process: python, pid: 48213\n"
    top = diagnose(tmp_path, oom).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "OOM killer" in top.title and "48213" in top.title
    for event, words in (
            ("  Warning  Terminated  1m  kubelet  Pod was terminated in response to imminent node shutdown.\n",
             "node shutdown"),
            ("  Warning  Preempting  10s  kubelet  Preempted in order to admit critical pod\n", "preempted"),
            ("  Warning  MPIJobEvicted  47s  mpi-job-controller  2/4 workers are evicted\n", "evicted"),
            ("  Normal   TaintManagerEviction  30s  taint-eviction-controller  Marking for deletion Pod "
             "default/llama-ft-worker-5\n", "not ready")):
        top = diagnose(tmp_path, event).hypotheses[0]
        assert top.category is Category.RANK_KILLED and words in top.title, event
    top = diagnose(tmp_path, "  Normal   EvictedDueToNodeFailures  0s  kueue-admission  Workload was evicted as "
                             "there was no replacement for unhealthy node(s): node-3\n").hypotheses[0]
    assert (top.category, top.culprit_hosts) == (Category.RANK_KILLED, ("node-3",))
    # the scheduler's events of a pod that never ran stay out of it
    assert diagnose(tmp_path, "  Normal   Scheduled  5s  default-scheduler  Successfully assigned default/pod-0 "
                              "to node-1\n").hypotheses == ()


def test_nvmls_gpu_lost_in_a_callers_words_is_a_gpu_failure(tmp_path: Path) -> None:
    line = ("I1205 03:59:12.004511       1 health.go:92] unable to get device handle from UUID: ERROR_GPU_IS_LOST; "
            "marking it as unhealthy\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.GPU_ERROR and "GPU is lost" in top.title


_IB_RETRY = """--------------------------------------------------------------------------
The InfiniBand retry count between two MPI processes has been
exceeded.  "Retry count" is defined in the InfiniBand spec 1.2
(section 12.7.38):

    The total number of times that the sender wishes the receiver to
    retry timeout, packet sequence, etc. errors before posting a
    completion error.

This error typically means that there is something awry within the
InfiniBand fabric itself.  You should note the hosts on which this
error has occurred; it has been observed that rebooting or removing a
particular host from the job can sometimes resolve this issue.

Two MCA parameters can be used to control Open MPI's behavior with
respect to the retry count:

* btl_openib_ib_retry_count - The number of times the sender will
  attempt to retry (defaulted to 7, the maximum value).
* btl_openib_ib_timeout - The local ACK timeout parameter (defaulted
  to 20).  The actual timeout value used is calculated as:

     4.096 microseconds * (2^btl_openib_ib_timeout)

  See the InfiniBand spec 1.2 (section 12.7.34) for more details.

Below is some information about the host that raised the error and the
peer to which it was connected:

  Local host:   node-3
  Local device: mlx5_0
  Peer host:    node-4

You may need to consult with your system administrator to get this
problem fixed.
--------------------------------------------------------------------------
"""


def test_open_mpis_openib_retry_blocks_are_ib_completion_errors_of_their_host(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _IB_RETRY).hypotheses[0]
    assert top.code in ("A011", "A012") and "status 12" in top.title and top.culprit_hosts == ("node-3",)
    rnr = ('The OpenFabrics "receiver not ready" retry count on a per-peer\nconnection between two MPI processes has '
           "been exceeded.\n\n  Local host:   node-7\n  Local device: mlx5_1\n  Peer host:    node-2\n")
    completion = one(rnr.splitlines()[0], Kind.IB_COMPLETION_ERROR)
    assert completion.data["status"] == 13
    assert diagnose(tmp_path, rnr).hypotheses[0].culprit_hosts == ("node-7",)


def test_open_mpis_summary_of_the_first_process_that_ended_badly(tmp_path: Path) -> None:
    # help-orterun.txt's proc-exit-no-sync: wrapped before the node
    improper = ("mpirun has exited due to process rank 3 with PID 12345 on\n"
                "node node-3 exiting improperly. There are three reasons this could occur:\n")
    top = diagnose(tmp_path, improper).hypotheses[0]
    assert (top.category, top.culprit_ranks, top.culprit_hosts) == (Category.RANK_CRASHED, (3,), ("node-3",))
    assert "exited improperly" in top.what
    aborted = ('prterun has exited due to process rank 5 with PID 2211 on node gpu-7 calling\n'
               '"abort". This may have caused other processes in the application to be\n')
    top = diagnose(tmp_path, aborted).hypotheses[0]
    assert (top.culprit_ranks, top.culprit_hosts) == ((5,), ("gpu-7",)) and "called abort" in top.what
    # a rank's own error above it says why: that error is the reading, on that rank
    own = "[3]<stderr>:RuntimeError: CUDA error: an illegal memory access was encountered\n" + improper
    top = diagnose(tmp_path, own).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.GPU_ERROR, (3,))


def test_intel_mpis_hydra_names_the_host_whose_proxy_ended_badly(tmp_path: Path) -> None:
    line = ("[mpiexec@node-0] wait_proxies_to_terminate (../../../../../src/pm/i_hydra/mpiexec/intel/i_mpiexec.c:537): "
            "downstream from host node-3 {}\n")
    top = diagnose(tmp_path, line.format("was killed by signal 9 (Killed)")).hypotheses[0]
    assert (top.category, top.culprit_hosts) == (Category.RANK_KILLED, ("node-3",))
    top = diagnose(tmp_path, line.format("exited with status 1")).hypotheses[0]
    assert (top.category, top.culprit_hosts) == (Category.RANK_CRASHED, ("node-3",))
    # a proxy that exited cleanly is nothing
    assert not [e for e in events_of(line.format("exited with status 0")) if e.kind is Kind.WORKER_FAILED]


def test_ucc_and_mpi_words_for_a_failure_are_never_silent(tmp_path: Path) -> None:
    timeout = ("[1733370072.123456] [node-3:12345:1]   ucc_schedule.h:251  UCC  WARN  timeout 1800 sec. has expired on "
               "coll_type allreduce, team_size 16\n")
    event = one(timeout, Kind.BLOCKING_WAIT_TIMEOUT)
    assert (event.op, event.data["timeout_ms"], event.origin.host) == ("allreduce", 1_800_000, "node-3")
    assert diagnose(tmp_path, timeout).hypotheses
    lines = {
        "[node-3:12345] *** MPI_ERR_TRUNCATE: message truncated": Category.COLLECTIVE_DESYNC,
        '  --> Returned "Unreachable" (-12) instead of "Success" (0)': Category.PEER_UNREACHABLE,
        "[mpiexec@node-0] HYDU_sock_get_iface_ip (lib/utils/sock.c:110): unable to get host address for node-17":
            Category.PEER_UNREACHABLE,
        "MPI startup(): PMI server not found. Please set I_MPI_PMI_LIBRARY variable if it is not a singleton case.":
            Category.UNRECOGNISED,
        "Attempted destruction of AsyncWork before work has completed, terminating the program.": Category.UNRECOGNISED,
        "E1205 03:41:12.345678 12345 torch/csrc/distributed/c10d/UCCUtils.cpp:41] (oob_allgather) Caught exception in "
        "Store Operation .. [Socket Timeout]": None,
    }
    each_read(tmp_path, lines)
    # a note that merely says a program terminates is none
    assert diagnose(tmp_path, "Limitations: terminating the program is not supported\n").hypotheses == ()


def test_the_coordination_services_unhealthy_tasks_are_the_ones_it_lost(tmp_path: Path) -> None:
    # newer XLA's words for tasks that stopped sending heartbeats, the names below it (or in gRPC's one-line record)
    below = ("E1205 04:02:11.000000 1 coordination_service.cc:543] UNAVAILABLE: The following tasks are unhealthy "
             "(stopped sending heartbeats):\n/job:jax_worker/replica:0/task:3\n"
             "The tasks have crashed. Check the task logs for an earlier error to debug further.\n")
    top = diagnose(tmp_path, below).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.RANK_CRASHED, (3,))
    record = ("UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):\\n"
              "/job:jax_worker/replica:0/task:5\\nThe tasks have crashed.\n")
    assert [e.data["task"] for e in events_of(record) if e.kind is Kind.COORDINATION] == [5]
    # several tasks lost: each one named (the events of one line are told apart by their process)
    several = below.replace("task:3\n", "task:3\n/job:jax_worker/replica:0/task:5\n")
    top = diagnose(tmp_path, several).hypotheses[0]
    assert top.culprit_ranks == (3, 5) and "they failed" in top.title


def test_a_status_at_a_lines_start_is_an_error_not_a_word_inside_it(tmp_path: Path) -> None:
    for line in ("ABORTED: Incarnation ID mismatch: expecting 84123 but got 12093. This means the remote task has "
                 "restarted.", "FAILED_PRECONDITION: The task is already disconnected: /job:jax_worker/replica:0/task:0",
                 "DEADLINE_EXCEEDED: Deadline Exceeded"):
        assert diagnose(tmp_path, line + "\n").hypotheses, line
    # the same word inside a sentence, or a status that is no failure, is none
    assert diagnose(tmp_path, "the job's INTERNAL: flag is set\nOK: all 16 tasks connected\n").hypotheses == ()


def test_a_libraries_own_words_for_gpu_memory_and_for_sizes_that_do_not_divide(tmp_path: Path) -> None:
    # ColossalAI's Gemini, DeepSpeed's pipeline: found by the sweep of the parallel-training libraries
    oom = "[rank1]: RuntimeError: Adjust layout failed! No enough CUDA memory! Need 2147483648, freed 1073741824\n"
    top = diagnose(tmp_path, oom).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.RANK_OUT_OF_MEMORY, (1,))
    for line in ("[rank0]: RuntimeError: num_stages (3) must divide distributed world size (16)\n",
                 "AssertionError: The global group size can't be evenly divided by the subgroup size.\n"):
        assert diagnose(tmp_path, line).hypotheses[0].category is Category.UNRECOGNISED, line
    # a size check without those words stays the program's own error, and host memory is not GPU memory
    assert diagnose(tmp_path, "AssertionError: Number of microbatch should be larger than number of stages\n"
                    ).hypotheses[0].category is Category.RANK_CRASHED
    assert diagnose(tmp_path, "RuntimeError: not enough host memory to pin 4 GiB\n").hypotheses[0].category \
        is not Category.RANK_OUT_OF_MEMORY


def _xid(number: str, rest: str) -> str:
    return f"[Thu Dec  5 03:00:00 2026] NVRM: Xid (PCI:0000:3b:00): {number}, pid=1234, name=python, {rest}\n"


def test_an_xid_is_named_by_what_it_means_and_what_to_do(tmp_path: Path) -> None:
    # after NVIDIA's Xid catalogue: the number says whose fault it most often is and what to do
    top = diagnose(tmp_path, _xid("79", "GPU has fallen off the bus.")).hypotheses[0]
    assert top.category is Category.GPU_ERROR and "Xid 79, the GPU fell off the bus" in top.title
    assert "reboot" in top.fix and top.confidence == 0.9
    top = diagnose(tmp_path, _xid("48", "An uncorrectable double bit error (DBE) has been detected on GPU.")).hypotheses[0]
    assert "double-bit ECC" in top.title and "nvidia-smi -r" in top.fix
    top = diagnose(tmp_path, _xid("74", "NVLink: fatal error detected on link 3(0x0)")).hypotheses[0]
    assert "NVLink" in top.title and "nvlink -e" in top.fix
    # a kernel of the program's own that faulted follows the code, not the node
    top = diagnose(tmp_path, _xid("13", "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address")
                   ).hypotheses[0]
    assert "follows the program" in top.fix and top.confidence < 0.9
    # the driver's cleanup after a process ended is no GPU fault: a lead, not a verdict, unless it names its cause
    top = diagnose(tmp_path, _xid("45", "Ch 00000008")).hypotheses[0]
    assert top.confidence < 0.5 and "cleaned up" in top.title
    top = diagnose(tmp_path, _xid("45", "Ch 00000001 caused by previous Xid 149")).hypotheses[0]
    assert "Xid 149" in top.title and top.confidence == 0.9
    # an Xid the table does not hold is named by its number
    assert diagnose(tmp_path, _xid("999", "something new")).hypotheses[0].title.endswith("Xid 999: pid=1234, "
                                                                                          "name=python, something new")


def test_nccl_ras_names_a_dead_peer_and_a_rank_with_no_operation(tmp_path: Path) -> None:
    # NCCL 2.24+: RAS's own INFO line, its monitor's line, and a mismatch listing with a rank that launched nothing
    for text in ("node-5:39822:40317 [2] NCCL INFO RAS declaring peer 10.1.2.5<36401> as DEAD; rasDeadPeersHash 0x3f9e\n",
                 "[2025-01-01 00:00:00] PEER_DEAD: Process 1234 on node 10.1.2.5 managing GPU 3\n"):
        top = diagnose(tmp_path, "Communicators ... Group =====\n" + text if "PEER_DEAD" in text else text
                       ).hypotheses[0]
        assert (top.category, top.culprit_hosts) == (Category.LAGGING_RANK, ("10.1.2.5",)), text
    listing = ("  Rank 14 has not launched any operations -- GPU 6 managed by process 60431 on node node-7\n"
               "  Rank 3 has launched up to operation 1182 -- GPU 3 managed by process 51107 on node node-0\n")
    top = diagnose(tmp_path, listing).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.LAGGING_RANK, (14,))
    # RAS's other INFO chatter (a keep-alive that came back, its own start) is none
    assert diagnose(tmp_path, "node-5:39822:40356 [2] NCCL INFO RAS handling local addRanks request\n").hypotheses == ()


_SOCKETS = ("node-7:60431:60981 [3] NCCL INFO NET/IB : No device found.\n"
            "node-7:60431:60981 [3] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.7<0>\n"
            "node-7:60431:60981 [3] NCCL INFO Using network Socket\n")


def test_a_network_plugin_installed_but_not_loadable_is_a_fall_back_to_sockets(tmp_path: Path) -> None:
    broken = ("node-7:60431:60981 [3] NCCL INFO NET/Plugin: libnccl-net.so: libfabric.so.1: cannot open shared object "
              "file: No such file or directory\n")
    top = diagnose(tmp_path, broken + _SOCKETS).hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK and "libfabric.so.1" in top.title and "node-7" in top.title
    # no plugin installed at all (NCCL's internal transports) and sockets: no failure to name
    none = "node-7:60431:60981 [3] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n"
    assert diagnose(tmp_path, none + _SOCKETS).hypotheses == ()


def test_a_zeromq_bind_to_another_hosts_address_is_the_jobs_setup(tmp_path: Path) -> None:
    # real: ai-dynamo/dynamo#2706, vllm-project/vllm-omni#3577 (a bind address of another node), vllm#42149 (IPv6)
    for line in ("zmq.error.ZMQError: Cannot assign requested address (addr='tcp://172.17.0.5:34762')",
                 "zmq.error.ZMQError: No such device (addr='tcp://2605:340:cd51:4900:d73:4aba:b23d:2190:21001')"):
        top = diagnose(tmp_path, line + "\n").hypotheses[0]
        assert top.category is Category.UNRECOGNISED and "bind" in top.title, line
    # a client's connect that failed so (c10d's store client) stays what it was
    connect = ("[W socket.cpp:558] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - "
               "Cannot assign requested address).\n")
    assert all("bind" not in h.title for h in diagnose(tmp_path, connect).hypotheses)


def test_the_amdgpu_drivers_words_for_a_gpu_that_stopped_or_failed(tmp_path: Path) -> None:
    lines = {
        "[ 8123.456789] amdgpu 0000:c1:00.0: amdgpu: ring comp_1.0.0 timeout, signaled seq=1834, emitted seq=1836":
            "ring (comp_1.0.0) timed out",
        "[ 8124.010303] amdgpu 0000:c1:00.0: amdgpu: device lost from bus!": "lost from the PCIe bus",
        "[ 9021.112233] amdgpu 0000:c1:00.0: amdgpu: [gfxhub] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32771)":
            "page fault",
        "[   14.001234] amdgpu 0000:dd:00.0: amdgpu: RAS records:512 exceed threshold:448": "bad memory pages",
        "[76914.152200] amdgpu 0000:1b:00.0: amdgpu: XGMI PCS CRCErr detected": "XGMI link",
        "[ 8120.111111] amdgpu 0000:c1:00.0: amdgpu: qcm fence wait loop timeout expired": "scheduler firmware",
    }
    for line, words in lines.items():
        top = diagnose(tmp_path, line + "\n").hypotheses[0]
        assert top.category is Category.GPU_ERROR and words in top.title, line
    # a ring that timed out and recovered on its own, and the driver's warning before the threshold, are none
    assert diagnose(tmp_path, "[ 8123.456812] amdgpu 0000:c1:00.0: amdgpu: ring gfx_0.0.0 timeout, but soft recovered\n"
                    ).hypotheses == ()
    assert diagnose(tmp_path, "[   14.001235] amdgpu 0000:dd:00.0: amdgpu: RAS records:410 exceeds 90% of threshold:448\n"
                    ).hypotheses == ()


def test_the_kernels_and_the_nic_drivers_words_are_never_silent(tmp_path: Path) -> None:
    lines = {
        "[18231.982092] mlx5_core 0000:41:00.0: poll_health:852:(pid 0): device's health compromised - reached miss count":
            Category.IB_PORT_DOWN,
        "[    8.951695] mlx5_core 0000:63:00.1: Port module event: module 1, Cable unplugged": Category.IB_PORT_DOWN,
        "[61100.220040] nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 20034, Fatal, Link 33 LTSSM Fault Up": Category.GPU_ERROR,
        "[  301.552120] NVRM: API mismatch: the client 'python3' (pid 48812) has the version 535.129.03, but this kernel "
        "module has the version 550.54.15.": Category.GPU_ERROR,
        "[60000.330101] bond0: now running without any active interface!": Category.NETWORK_PARTITION,
        "[  120.310021] TCP: request_sock_TCP: Possible SYN flooding on port 10.1.2.3:29500. Sending cookies.":
            Category.PEER_UNREACHABLE,
        "libibverbs: Warning: RLIMIT_MEMLOCK is 65536 bytes.": Category.MEMLOCK_LIMIT,
        "[rank5]: RuntimeError: unable to write to file </torch_77102_1846612178_0>: No space left on device (28)":
            Category.SHM_EXHAUSTED,
        "[500123.400001] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0":
            Category.RANK_KILLED,
        "2026-12-05_03:41:08.777+0000: [E] Lost membership in cluster hpc.cluster. Unmounting file systems.": None,
        "[400200.111222] nvme nvme1: I/O 842 QID 17 timeout, aborting": None,
        "filelock._error.Timeout: The file lock '/shared/hf_cache/hub/.locks/a8f1e2.lock' could not be acquired.": None,
    }
    each_read(tmp_path, lines)
    # an RDMA stack's usual noise on a host without that NIC, and GPFS's notices, stay silent
    quiet = ("libibverbs: Warning: couldn't load driver 'libvmw_pvrdma-rdmav34.so': libvmw_pvrdma-rdmav34.so: cannot "
             "open shared object file: No such file or directory\n"
             "2026-12-05_03:41:06.500+0000: [N] Request sent to 10.1.2.5 (nsd-01) to expel 10.1.3.14 (node-14)\n")
    assert diagnose(tmp_path, quiet).hypotheses == ()


def test_a_peer_advertising_localhost_in_a_long_lines_end_is_read(tmp_path: Path) -> None:
    # real: vllm-project/vllm#53018 (NIXL's handshake context, the remote host past the evidence's first 400 characters)
    context = ", ".join(f"'field_{n}': 'cmpl-23c48056-34fc-43fe-aaa7-426c9f953482-{n}'" for n in range(6))
    line = ("[distributed/.../nixl/base_worker.py:933] NIXL transfer failure: handshake_failed | Context: {"
            + context + ", 'remote_host': 'localhost', 'remote_port': 5600}\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS
    # the same failure with a routable peer is no loopback
    assert diagnose(tmp_path, line.replace("'localhost'", "'10.1.2.7'")).hypotheses[0].category \
        is not Category.LOOPBACK_ADDRESS


def test_ray_trains_barrier_names_the_ranks_that_never_arrived(tmp_path: Path) -> None:
    for line, ranks in (("The following ranks are not reaching the collective operation: [5, 7]", (5, 7)),
                        ("The workers have been waiting for 60.01 s for the following ranks to join the `report` call: "
                         "[3].", (3,))):
        top = diagnose(tmp_path, line + "\n").hypotheses[0]
        assert (top.category, top.culprit_ranks) == (Category.LAGGING_RANK, ranks), line
        assert top.title.startswith("Ray Train: ")


def test_schedulers_health_checkers_and_etcd_in_their_own_words(tmp_path: Path) -> None:
    lines = {
        "=>> PBS: job killed: walltime 7230 exceeded limit 7200": Category.RANK_KILLED,
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.": Category.RANK_KILLED,
        "[FAIL] 0-nvidia-smi: GPU count mismatch: expected=8, detected=7 (severity: ISOLATE)": Category.GPU_ERROR,
        "GPU 3 requires a reset to recover from a fault. Recovery action: 1 (GPU_RESET).": Category.GPU_ERROR,
        "ERROR:  nhc:  Health check failed:  check_ib_link_flapping: IB link flapping detected.": Category.IB_PORT_DOWN,
        "etcd.EtcdConnectionFailed: No more machines in the cluster": None,
        "etcd.EtcdKeyNotFound: Key not found : /torchelastic/p2p/run_42/rdzv/active_version": None,
        "35.204s: job.exception f2ZhS6QXnZ7 type=exec severity=0 python: task rank 3 on host node-3 exited (Exit 1)": None,
        'One or more rank (marked by "!") is stalled for longer than 300 seconds. Will shutdown.': None,
    }
    each_read(tmp_path, lines)
    # a health check that passed, Flux's non-fatal exception that names no failure, a logger's dotted name: none
    quiet = ("[PASS] 0-nvidia-smi: GPU count 8\n"
             "12.0s: job.exception f2ZhS6QXnZ7 type=cancel severity=1 job canceled by user\n"
             "torch.distributed.run: Starting elastic_operator with launch configs\n")
    assert diagnose(tmp_path, quiet).hypotheses == ()
    # Flux's time since the job started is no host
    top = diagnose(tmp_path, "35.204s: job.exception f2ZhS6QXnZ7 type=exec severity=0 python: task rank 3 on host node-3 "
                             "exited (Exit 1)\n").hypotheses[0]
    assert "35.204s" not in top.culprit_hosts


def test_nccl_tests_refusing_or_ending_a_run_is_never_silent(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "node-0: Test timeout (120s) common.cu:523": None,
        "Invalid number of GPUs: 16 requested but only 8 were found.": Category.UNRECOGNISED,
        "Incompatible NCCL versions. nccl-tests was compiled with NCCL 23007, but is running with NCCL 22809.": None,
        "This test requires GIN support, but GIN support is not enabled for this communicator.": None,
    })
    # its banner and its results are no error
    assert diagnose(tmp_path, "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5\n"
                              "# Avg bus bandwidth    : 187.51\n").hypotheses == ()


def test_numbers_too_long_to_be_ranks_or_xids_are_none(tmp_path: Path) -> None:
    # found by mutating the sweeps' lines: a list of two thousand digits named a "rank" of that many digits
    listed = "The following ranks are not reaching the collective operation: [" + "9" * 1990 + ", 4]\n"
    assert diagnose(tmp_path, listed).hypotheses[0].culprit_ranks == (4,)
    dcp = ("[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys(["
           + "9" * 1990 + ", 2])\n")
    assert diagnose(tmp_path, dcp).hypotheses[0].culprit_ranks == (2,)
    xid = "NVRM: Xid (PCI:0000:3b:00): " + "9" * 4000 + ", pid=1\n"
    assert not [e for e in events_of(xid) if e.kind is Kind.GPU_ERROR and e.data.get("xid") is not None]


def test_the_fabrics_and_the_gpus_tools_and_serving_stacks_words_are_never_silent(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "Recommendation                  : Cable is unplugged": Category.IB_PORT_DOWN,
        "   Reason=IB link down mlx5_2 [root@2026-12-05T04:12:33]": Category.IB_PORT_DOWN,
        "        Reset Required                    : Yes": Category.GPU_ERROR,
        "   Reason=gres/gpu count reported lower than configured (7 < 8) [slurm@2026-12-05T04:12:33]": Category.GPU_ERROR,
        "Unable to retrieve NVLink information as all links are inActive": Category.GPU_ERROR,
        "-E- Links Check finished with errors": None,
        "   Reason=Not responding [slurm@2026-12-05T04:12:33]": None,
        "thread 'main' panicked at launcher/src/main.rs:1384:18: --num-shard and CUDA_VISIBLE_DEVICES are not set": None,
        "[12/05/2026-04:56:31] [TRT-LLM] [C] MpiSession shutdown timeout after 60s; calling MPI_Abort": None,
        "[rank0]: Parameter at index 73 has been marked as ready twice. This means that multiple autograd engine hooks": None,
        "[rank1]: torch._dynamo.exc.Unsupported: P2POp mutation": None,
    })
    # the same tools' healthy fields are none
    healthy = ("        Reset Required                    : No\nRecommendation                  : No issue was observed\n"
               "-I- Links Check                         0          4\n\tLink detected: yes\n")
    assert diagnose(tmp_path, healthy).hypotheses == ()


def test_neurons_collectives_a_grpc_call_and_cuda_initialization_in_their_words(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "2026-Dec-05 05:10:15.0924 93703:93705 [0] init.cc:655 CCOM WARN Unable to run multi-instance workload.  Ofi "
        "plugin is not installed or EFA is not enabled": Category.SOCKET_FALLBACK,
        '2026-12-05 05:13:11.155135: W tensorflow/core/distributed_runtime/rpc/grpc_remote_master.cc:157] RPC failed '
        'with status = "UNAVAILABLE: Socket closed"': None,
        "UserWarning: CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu.": None,
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040).":
            Category.UNRECOGNISED,
    })
    # a warning of CUDA's start-up that names no failure is none
    assert diagnose(tmp_path, "UserWarning: CUDA initialization: Found no NVIDIA driver on your system is expected on "
                              "this CPU host\n").hypotheses == ()


def test_a_worker_torchelastic_finds_stuck_in_the_kernel_never_arrives(tmp_path: Path) -> None:
    # torch 2.13's agent watching its workers' process state
    each_read(tmp_path, {
        "E1205 05:25:10.123000 1234 torch/distributed/elastic/agent/server/local_elastic_agent.py:554] [default] Worker "
        "pid=5678 stuck in uninterruptible sleep (D-state) for 300.2s (>= 300.0s); marking worker group UNHEALTHY and "
        "disabling restarts.": Category.LAGGING_RANK,
        "E1205 05:25:40.500000 1234 torch/distributed/elastic/multiprocessing/api.py:906] Process 5678 did not exit after "
        "SIGKILL within 30s; abandoning and continuing teardown. Worker may be in uninterruptible kernel sleep (e.g. "
        "wedged on GPU/NIC); host may need to be recycled.": Category.LAGGING_RANK,
    })
    # the agent's notice when a worker merely entered that state is a warning, no failure yet
    assert diagnose(tmp_path, "W1205 05:20:10.000000 1234 torch/distributed/elastic/agent/server/local_elastic_agent.py:"
                              "586] [default] Worker pid=5678 entered uninterruptible sleep (D-state); will mark UNHEALTHY "
                              "if it remains for 300.0s.\n").hypotheses == ()
