"""Readings added in the session of the sweeps of DeepSpeed's, Megatron's and vLLM's older releases, the vision code
bases' distributed helpers and Intel's newest stacks, and of the eighty-eighth round (threads left unfinished, jobs
launched by MPI, Horovod or Ray); one behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, each_read
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.parsers.prefixes import split_prefix
from syncdoctor.analyze.paste import wrap_width

diagnose = diagnose_paste


def test_nccls_unset_config_value_refused_names_two_nccl_libraries(tmp_path: Path) -> None:
    # vllm-project/vllm#1726: the value NCCL's config initializer leaves for "unset" read back as set, the libnccl
    # loaded not the one PyTorch was built with (the thread's fix: remove the second nvidia-nccl package)
    top = diagnose(tmp_path, "DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, "
                   "invalid argument, NCCL version 2.14.3\nncclInvalidArgument: Invalid value for an argument.\n"
                   "Last error:\nInvalid config blocking attribute value -2147483648\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED
    assert "NCCL library other than the one the program was built with" in top.title
    # a real value out of range is the caller's setting, not two libraries: it stays a plain unexplained error
    top = diagnose(tmp_path, "NCCL WARN Invalid config blocking attribute value 7\n").hypotheses[0]
    assert "other than the one the program was built with" not in top.title
    each_read(tmp_path, {"node-1:4012:4077 [0] NCCL WARN Invalid config cgaClusterSize attribute value -2147483648": Category.UNRECOGNISED})


def test_a_launchers_variable_missing_names_the_launch_not_a_crash(tmp_path: Path) -> None:
    # mmengine's, mmcv's, detectron2's and DINOv2's init reading what torchrun, srun or mpirun sets: the script was
    # started without that launcher
    launch = Category.UNRECOGNISED
    each_read(tmp_path, {"KeyError: 'RANK'": launch, "KeyError: 'SLURM_PROCID'": launch,
                         "KeyError: 'LOCAL_WORLD_SIZE'": launch, "KeyError: 'OMPI_COMM_WORLD_LOCAL_RANK'": launch,
                         "KeyError: 'The environment variable MASTER_ADDR is not set'": launch,
                         "node-5: AssertionError: DeepSpeed requires the LOCAL_RANK environment variable, it is set by "
                         "the deepspeed launcher, deepspeed.init_distributed, or the torch.distributed launcher.": launch,
                         # any other key is the program's own error
                         "KeyError: 'backbone.fpn.weight'": Category.RANK_CRASHED})
    top = diagnose(tmp_path, "KeyError: 'LOCAL_RANK'\n").hypotheses[0]
    assert "started without the launcher it expects" in top.title


def test_intels_process_groups_timeouts_are_collective_timeouts(tmp_path: Path) -> None:
    # ProcessGroupXCCL (torch-xpu-ops) and torch-ccl print no WorkNCCL(…): a collective timed out, no more said
    for line in ("[rank3]:[E1205 09:41:17.204511893 ProcessGroupXCCL.cpp:323] Work timed out after 600031 milliseconds.",
                 "[rank3]: torch.distributed.DistBackendError: Work timed out after 600031 milliseconds.",
                 "[rank1]: RuntimeError: [Rank 1] Caught collective operation timeout:  ran for 1800412 milliseconds "
                 "before timing out."):
        top = diagnose(tmp_path, line + "\n").hypotheses[0]
        assert top.category is Category.UNEXPLAINED_TIMEOUT, line
        assert top.affected_ranks == (3,) if "rank3" in line else (1,)
    # its wait for the root's id reads as NCCL's: the root never reached the group's first collective
    top = diagnose(tmp_path, "[rank7]: torch.distributed.DistBackendError: [7] is setting up XCCL communicator and "
                   "retrieving xcclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
                   "wait timeout after 1800000ms, keys: /default_pg//xccl/0. This may indicate a possible application "
                   "crash on rank 0 or a network set up issue.\n").hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.LAGGING_RANK, (0,))
    assert "xcclUniqueId" in top.title


def test_a_training_loop_ending_on_a_nan_loss_and_vllms_older_broadcast_wait_are_read(tmp_path: Path) -> None:
    each_read(tmp_path, {
        # MAE's, DeiT's and their heirs': sys.exit(1) after it, the others wait in their next collective
        "[09:14:02.518233] Loss is nan, stopping training": Category.RANK_CRASHED,
        "Loss is inf, stopping training": Category.RANK_CRASHED,
        # vLLM 0.5-0.6's words for a broadcast its workers did not read (0.7+: "No available shared memory broadcast
        # block found in 60 seconds"): read alike
        "(VllmWorkerProcess pid=4128) WARNING 12-05 09:31:07 shm_broadcast.py:333] No available block found in 60 "
        "second.": None,
    }, quiet="Early stopping training at epoch 5\nLoss is 0.4312, stopping training at the max epoch\n")


def test_ucxs_signal_line_after_two_lines_of_one_length_is_no_wrapped_piece(tmp_path: Path) -> None:
    # deepspeedai/DeepSpeed#2693: two ranks' NCCL lines of the same length, then UCX's signal handler's line; the
    # paste's wrap detector took it for the rest of the line above (no prefix it knew) and joined it there: silent
    paste = ("c664db21f8dd:90422:94332 [6] NCCL INFO 24 coll channels, 32 p2p channels, 32 p2p channels per peer\n"
             "c664db21f8dd:90420:94846 [5] NCCL INFO 24 coll channels, 32 p2p channels, 32 p2p channels per peer\n"
             "[c664db21f8dd:90420:0:95366] Caught signal 7 (Bus error: nonexistent physical address)\n"
             "==== backtrace (tid:  95366) ====\n"
             " 0 0x0000000000043090 killpg()  ???:0\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert (top.category, top.culprit_hosts) == (Category.SHM_EXHAUSTED, ("c664db21f8dd",))
    # a line wrapped at that width still is joined: its rest has no place of UCX's
    wrapped = ("node-1:4012:4077 [0] NCCL INFO NET/IB : Got completion from peer 10.1.2.3<41234> with status=12 op\n"
               "node-1:4012:4078 [1] NCCL INFO NET/IB : Got completion from peer 10.1.2.4<41234> with status=12 op\n"
               "code=0 len=0 vendor err 129 (Send) localGid ::ffff:10.1.2.2 remoteGidsfe80::1\n")

    assert wrap_width(wrapped.encode()) == len(wrapped.split("\n")[0])
    assert wrap_width(paste.encode()) == 0


def test_oneflows_port_unavailable_is_a_port_in_use(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "F1205 10:05:11.004512 48213 rank_info_bootstrap_server.cpp:63] Check failed: p == port() (29501 vs. 0) Port "
        "29501 is unavailable": Category.PORT_IN_USE,
    }, quiet="I1205 10:05:11.004512 48213 rank_info_bootstrap_server.cpp:40] Port 29501 is available, listening\n")


def test_a_glog_fatal_line_is_an_error_whatever_words_it_holds(tmp_path: Path) -> None:
    # OneFlow's rpc client giving up: its words say "retry" (a retry that went on is no error), its level says it aborts
    each_read(tmp_path, {
        "F1205 10:06:20.220100 48301 rpc_client.cpp:212] Check failed: retry_idx < rpc_client_max_retry_times() "
        "(60 vs. 60)": None,
    }, quiet="W1205 10:06:20.220100 48301 rpc_client.cpp:201] LoadServer 10.1.2.4 not ready, retrying\n")


def test_the_c_librarys_other_heap_aborts_and_a_pcie_slots_link_down_are_never_silent(tmp_path: Path) -> None:
    # lines the error words knew but no anchor of the scanner did: never read
    each_read(tmp_path, {"realloc(): invalid pointer": None, "malloc_consolidate(): invalid chunk size": None,
                         "[70000.998500] pcieport 0000:00:01.0: pciehp: Slot(3): Link Down": None,
                         "GPU requires reset": Category.GPU_ERROR},
              quiet="[70000.998500] pcieport 0000:00:01.0: pciehp: Slot(3): Link Up\n")


def test_cuda_started_before_the_fork_is_the_jobs_setup_not_the_workers_failure(tmp_path: Path) -> None:
    # huggingface/accelerate#3524: notebook_launcher forks its workers after an import (torchao) started CUDA; the
    # worker's exception above torchrun's record of its failure says so
    paste = ("E0422 05:07:49.013000 204 torch/distributed/elastic/multiprocessing/api.py:732] RuntimeError: Cannot "
             "re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start "
             "method\nnotebook_launcher failed: \n============================================================\n"
             "dummy_fn FAILED\n------------------------------------------------------------\nFailures:\n"
             "  <NO_OTHER_FAILURES>\n------------------------------------------------------------\n"
             "Root Cause (first observed failure):\n[0]:\n  time      : 2025-04-22_05:07:48\n  host      : ae97246030ca\n"
             "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 240)\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert (top.category, top.culprit_hosts) == (Category.UNRECOGNISED, ("ae97246030ca",))
    assert "CUDA started before the workers were forked" in top.title
    # another worker's own error above the same record stays its crash
    top = diagnose(tmp_path, paste.replace("Cannot re-initialize CUDA in forked subprocess", "shape mismatch")
                   ).hypotheses[0]
    assert top.category is Category.RANK_CRASHED


def test_a_build_without_nccl_or_cuda_named_from_its_warning_or_assertion(tmp_path: Path) -> None:
    # meta-llama/llama#1132 (Windows): the warning before init fails, with a localized 10049 socket warning above it
    # that a Windows run prints and goes on from
    paste = (" [W socket.cpp:697] [c10d] The client socket has failed to connect to [NB-KUHNLA]:29500 (system error: "
             "10049 - Die angeforderte Adresse ist in diesem Kontext ungültig.).\n"
             "C:\\Users\\User\\miniconda3\\Lib\\site-packages\\torch\\distributed\\distributed_c10d.py:613: UserWarning: "
             "Attempted to get default timeout for nccl backend, but NCCL support is not compiled\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert (top.category, top.title) == (Category.UNRECOGNISED,
                                         "this PyTorch build has no NCCL, and the job asked for the nccl backend")
    # saforem2/mmm's notes (Aurora, XPU): FSDP2 of 2.5 calling torch.cuda on an XPU build
    top = diagnose(tmp_path, "[rank6]: AssertionError: Torch not compiled with CUDA enabled\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "build without CUDA" in top.title
    # a warning on another backend's timeout is no such failure
    each_read(tmp_path, {}, quiet="UserWarning: Attempted to get default timeout for gloo backend\n")


def test_the_stores_listen_failure_without_its_reason_is_most_likely_a_port_in_use(tmp_path: Path) -> None:
    # xiaosu-zhu/McQuic's notes: two torchruns on one node (Slurm's ntasks > nodes), the reason not quoted
    top = diagnose(tmp_path, "The server socket has failed to listen on any local network address\n\n"
                   "The server socket has failed to bind to [::]:19936\n").hypotheses[0]
    assert (top.category, top.confidence) == (Category.PORT_IN_USE, 0.5)
    assert "port 19936: most likely the port is taken" in top.title
    # with its reason, another errno reads as that errno (13: a port below 1024)
    top = diagnose(tmp_path, "The server socket has failed to listen on any local network address. The server socket "
                   "has failed to bind to [::]:98 (errno: 13 - Permission denied).\n").hypotheses[0]
    assert "permission denied" in top.title and top.confidence == 0.8


def test_kubernetes_preemption_deadlines_and_nodes_gone_are_workers_ended_from_outside(tmp_path: Path) -> None:
    ended = Category.RANK_KILLED
    each_read(tmp_path, {
        "  Normal   Preempted  40s  default-scheduler  Preempted by pod 6f1e2c3d-8a4b-4c1e-9d2f-0b7a5e3c1f92 on node "
        "gpu-node-3": ended,
        "  Normal   Preempted  1m  kueue-admission  Preempted to accommodate a workload (UID: 5b9e1c2a, JobUID: 0a1b2c3d) "
        "due to prioritization in the ClusterQueue": ended,
        "  Warning  Evict  2m  volcano  Pod is evicted, because of reclaim": ended,
        "  Warning  DeadlineExceeded  2m  job-controller  Job was active longer than specified deadline": ended,
        "    message: TrainJob exceeded its active deadline": ended,
        "  Normal   NodeNotReady  3m  node-controller  Node gpu-node-3 status is now: NodeNotReady": ended,
    }, quiet="  Normal   Scheduled  1m  default-scheduler  Successfully assigned training/llama-0 to gpu-node-3\n"
             "  Normal   NodeReady  1m  kubelet  Node gpu-node-3 status is now: NodeReady\n")
    top = diagnose(tmp_path, "  Normal   Preempted  40s  default-scheduler  Preempted by pod 6f1e2c3d on node gpu-node-3\n"
                   ).hypotheses[0]
    assert top.culprit_hosts == ("gpu-node-3",) and "preempted for another pod or workload" in top.title
    # pods never placed: their ranks never started (the scheduler's words, Volcano's gang)
    for line in ("  Warning  FailedScheduling  2m (x12 over 14m)  default-scheduler  0/8 nodes are available: 8 "
                 "Insufficient nvidia.com/gpu. preemption: 0/8 nodes are available: 8 No preemption victims found.",
                 "  Warning  Unschedulable  2m  volcano  4/4 tasks in gang unschedulable: pod group is not ready"):
        top = diagnose(tmp_path, line + "\n").hypotheses[0]
        assert top.category is Category.UNRECOGNISED and "the scheduler could not place" in top.title, line


def test_ncclS_cuda_failure_unquoted_and_xlas_last_nccl_warning_are_read_as_ncclS_own(tmp_path: Path) -> None:
    # shwgao/vllm's notes (Polaris): the WARN retyped without its quotes is NCCL's CUDA error all the same
    top = diagnose(tmp_path, "enqueue.cc:1556 NCCL WARN Cuda failure 2 out of memory\ncupy_backends.cuda.libs.nccl."
                   "NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error\n").hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.confidence >= 0.7
    # marin-community/marin#7018 (JAX): XLA's words for NCCL's last WARN, read as PyTorch's "Last error:"
    top = diagnose(tmp_path, "Failed to create NCCL communicator: INTERNAL: ncclCommInitRankConfig(...) failed:\n"
                   "invalid usage ... Last NCCL warning(error): 'Bootstrap : no socket interface found'\n").hypotheses[0]
    assert (top.category, top.title) == (Category.INTERFACE_MISSING,
                                         "NCCL found no usable socket interface on some hosts: NCCL could not start")
    # (newer XLA's longer words for it)
    each_read(tmp_path, {"Last NCCL warning(error) log entry (may be unrelated) 'Bootstrap : no socket interface found'":
                         Category.INTERFACE_MISSING})


def test_pytorch_2_2_to_2_7s_own_words_for_a_hung_watchdog_a_failed_work_and_a_store_port_in_use(tmp_path: Path) -> None:
    each_read(tmp_path, {
        # 2.2's monitoring thread killing a rank whose watchdog hung
        "[rank2]:[E ProcessGroupNCCL.cpp:1136] [Rank 2] monitoring thread detects no heartbeat and will finally kill the "
        "process!": Category.WATCHDOG_STUCK,
        # 2.4-2.5's status of the work that failed, the watchdog's line itself not pasted
        "[rank3]:[E1205 09:41:07.512348911 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 3] Exception (either an "
        "error or timeout) detected by watchdog at work: 4213, last enqueued NCCL work: 4214, last completed NCCL work: "
        "4212.": Category.UNEXPLAINED_TIMEOUT,
        # 2.4's libuv store's own line for its port taken
        "[E socket.cpp:957] [c10d] UV Store listen failed. useIpv6:0 code:-98 name:EADDRINUSE message:address already "
        "in use": Category.PORT_IN_USE,
    }, quiet=("[rank0]:[W1205 09:41:07.512348911 CUDASymmetricMemory.cu:571] Warning: SymmetricMemory: cuMulticastCreate "
              "failed with: \"CUDA_ERROR_NOT_SUPPORTED\". Gracefully skipping multicast initialization. However, this is "
              "unexpected. Please report the issue on GitHub. (function operator())\n"))
    top = diagnose(tmp_path, "[E socket.cpp:957] [c10d] UV Store listen failed. useIpv6:0 code:-98 name:EADDRINUSE "
                   "message:address already in use\n").hypotheses[0]
    assert top.confidence == 0.8


def test_c10ds_warning_for_one_address_it_tried_is_a_retry_and_localhosts_ipv6_one_is_below_any_failure(
        tmp_path: Path) -> None:
    ipv6 = ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot "
            "assign requested address).\n")
    top = diagnose(tmp_path, ipv6).hypotheses[0]  # alone it is all there is (pytorch/PiPPy#158: a port reused)
    assert (top.category, top.confidence) == (Category.PEER_UNREACHABLE, 0.25)
    # beside a collective's timeout, the timeout is the failure (runs that connect over IPv4 print it too)
    timeout = ("[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
               "OpType=ALLREDUCE, Timeout(ms)=60000) ran for 69027 milliseconds before timing out.\n")
    assert diagnose(tmp_path, ipv6 + timeout).hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT
    # another host's refusal, as a warning, is a retry the client was still making
    top = diagnose(tmp_path, "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-0]:29500 "
                   "(errno: 111 - Connection refused).\n").hypotheses[0]
    assert (top.category, top.confidence) == (Category.PEER_UNREACHABLE, 0.5) and "still retrying" in top.title


def test_nccl_refusing_the_machine_nvml_missing_or_a_topology_that_does_not_fit(tmp_path: Path) -> None:
    # NVIDIA/nccl-tests#320: the driver's NVML not on the library path (preloading it fixed the run)
    top = diagnose(tmp_path, "[2025-06-12 16:57:52] gpu0301:842624:842643 [0] misc/nvmlwrap.cc:74 NCCL WARN Failed to "
                   "open libnvidia-ml.so.1\ngpu0301:842624:842643 [0] NCCL INFO misc/nvmlwrap.cc:200 -> 2\n"
                   "gpu0301:842624:842624 [0] NCCL INFO init.cc:1397 -> 2\n"
                   "gpu0301: Test NCCL failure common.cu:1005 'unhandled system error'\n").hypotheses[0]
    assert (top.category, top.culprit_hosts) == (Category.UNRECOGNISED, ("gpu0301",)) and "NVML" in top.title
    # an Azure ND H100 v5's health check: NICs renamed between boots, the image's topology file no longer fits
    top = diagnose(tmp_path, "elsah100:176:302 [1] graph/xml.h:85 NCCL WARN Attribute busid of node nic not found\n"
                   ).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "lacks the busid of a nic" in top.title
    each_read(tmp_path, {}, quiet="node-1:11:22 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]\n")


def test_a_port_already_bound_in_hcclS_words_and_rays_control_store_unreachable(tmp_path: Path) -> None:
    each_read(tmp_path, {
        # alibaba/ROLL's Ascend FAQ: several processes on one NPU compete for HCCL's device port
        "The IP address 10.1.2.3 and port 16666 have already been bound": Category.PORT_IN_USE,
        # Ray's cluster FAQ: a worker node that cannot reach the head's control store (GCS, Ray's own store)
        "Unable to connect to GCS at 10.1.2.3:6379. Check that (1) Ray GCS with matching version started successfully "
        "at the specified address, and (2) there is no firewall setting preventing access.": Category.PEER_UNREACHABLE,
    })
    # Google Cloud Storage (gcs, lower case) is no peer of the job
    top = diagnose(tmp_path, "OSError: gcs: connection refused while fetching gs://bucket/ckpt\n").hypotheses[0]
    assert top.category is not Category.PEER_UNREACHABLE


def test_sagemakers_mpi_tag_names_the_rank_and_the_host() -> None:
    line = split_prefix("[1,mpirank:9,algo-2]<stdout>:algo-2:212:398 [1] nccl_ofi_rdma.cpp:1463 NCCL WARN NET/OFI Remote "
                        "write completed with error. RC: 5")
    assert (line.origin.rank, line.origin.host) == (9, "algo-2")
    assert line.body.startswith("algo-2:212:398 [1] nccl_ofi_rdma.cpp")
    # Open MPI's own tag names the rank only; a bracketed word that is not SageMaker's stays the body's
    assert split_prefix("[1,3]<stderr>:Traceback (most recent call last):").origin.host is None
    assert split_prefix("[1,mpirank:x,algo-2]<stderr>:boom").body.startswith("[1,mpirank:x")


def test_a_lines_rank_prefix_does_not_change_what_a_ray_vanish_or_a_rendezvous_failure_means(tmp_path: Path) -> None:
    # the same line read with and without a launcher's rank label: the reading stays, the rank is added
    vanished = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
                "detail: Worker unexpectedly exits with a connection error code 2. End of file.")
    for prefix, ranks in (("", ()), ("13: ", (13,)), ("[rank2]: ", (2,))):
        top = diagnose(tmp_path, prefix + vanished + "\n").hypotheses[0]  # (srun's label was silent)
        assert (top.category, top.culprit_ranks) == (Category.RANK_KILLED, ranks), prefix
    # ... but a rank that timed out first was ended by its watchdog's abort, which Ray then saw
    top = diagnose(tmp_path, "[rank0]:[E1205 10:14:07.412883519 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
                   "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                   "Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n[rank0]: " + vanished + "\n"
                   ).hypotheses[0]
    assert top.category is not Category.RANK_KILLED
    for line in ("13: torch.distributed.elastic.rendezvous.api.RendezvousClosedError",
                 "[rank13]: torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"):
        assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.RENDEZVOUS_TIMEOUT, line


def test_an_exception_whose_line_says_what_failed_reads_alike_behind_any_rank_label(tmp_path: Path) -> None:
    # its own line's reading (a store not reached, the agent stopped, the clients that never came, a port taken, a
    # DataLoader worker's bus error, a process out of file descriptors) was the rank's own crash behind a rank label
    lines = {
        "RuntimeError: The client socket has timed out after 1800s while trying to connect to (node-0, 29500).":
            Category.PEER_UNREACHABLE,
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 12340 got signal: 15":
            Category.RANK_KILLED,
        "RuntimeError: Timed out after 1801 seconds waiting for clients. 15/16 clients joined.":
            Category.RENDEZVOUS_TIMEOUT,
        "ConnectionError: Tried to launch distributed communication on port `29500`, but another process is utilizing "
        "it.": Category.PORT_IN_USE,
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).":
            Category.SHM_EXHAUSTED,
        "OSError: [Errno 24] Too many open files: '/dev/shm/torch_48213_2837465_17'": Category.UNRECOGNISED,
        "F1205 10:06:20.220100 48301 rpc_client.cpp:212] Check failed: retry_idx < rpc_client_max_retry_times() "
        "(60 vs. 60)": Category.UNRECOGNISED,
        # a child process killed, in the parent's words; a connection a peer refused (TensorPipe's)
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL":
            Category.RANK_KILLED,
        "RuntimeError: async error on socket: Connection refused (this error originated at "
        "tensorpipe/transport/ibv/connection_impl.cc:243)": Category.PEER_UNREACHABLE,
        # gloo falling back to the loopback: behind a host's name too (below a paste that names none: harmless on one
        # machine)
        "[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname to a (local) address. Using the loopback "
        "address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME.":
            Category.LOOPBACK_ADDRESS,
    }
    for line, category in lines.items():
        for label in ("", "[rank3]: ", "13: ", "[1,3]<stderr>:", "node-3: "):
            hypotheses = diagnose(tmp_path, label + line + "\n").hypotheses
            assert hypotheses and hypotheses[0].category is category, (label, line, hypotheses[:1])
    # a rank's own exception still is its crash behind the label
    top = diagnose(tmp_path, "[rank3]: KeyError: 'decoder.layers.7.weight'\n").hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.RANK_CRASHED, (3,))


def test_an_exception_whose_class_names_a_refused_configuration_is_the_jobs_settings(tmp_path: Path) -> None:
    # allenai/OLMo#827: save_overwrite not passed on; every process raised it
    each_read(tmp_path, {"olmo.exceptions.OLMoConfigurationError: Checkpoint for step 0 already exists, use "
                         "--save-overwrite to overwrite it": Category.UNRECOGNISED})
    top = diagnose(tmp_path, "[rank3]: lightning.fabric.utilities.exceptions.MisconfigurationException: You requested "
                   "gpu: [0, 1] But your machine only has: [0]\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "configuration the program refused" in top.title
    # a class that only mentions a config in passing is the program's own error
    top = diagnose(tmp_path, "omegaconf.errors.ConfigAttributeError: Key 'lr' is not in struct\n").hypotheses[0]
    assert top.category is Category.RANK_CRASHED


def test_the_driver_apis_name_for_a_device_that_does_not_exist_is_no_failed_gpu(tmp_path: Path) -> None:
    # jax-ml/jax#23452: Slurm's --gpus-per-task=1 left each task one GPU, JAX asked for CUDA:1 (XLA prints the driver
    # API's error name): a process asking for a GPU it does not have, not a GPU that failed
    top = diagnose(tmp_path, "2024-09-05 07:57:34.555804: W external/xla/xla/service/platform_util.cc:199] unable to "
                   "create StreamExecutor for CUDA:1: failed initializing StreamExecutor for CUDA device ordinal 1: "
                   "INTERNAL: Failed call to cuDeviceGet: CUDA_ERROR_INVALID_DEVICE: invalid device ordinal\n"
                   ).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "asked for a GPU that does not exist" in top.title  # (the launch)
    # another driver error stays the GPU's
    top = diagnose(tmp_path, "INTERNAL: Failed call to cuMemAlloc: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC "
                   "error encountered\n").hypotheses[0]
    assert top.category is Category.GPU_ERROR


def test_localhosts_ipv6_warning_before_another_error_does_not_take_the_verdict(tmp_path: Path) -> None:
    # the warning most runs print and go on from, then the error of the run: the error says what failed (it had been
    # a 0.25 verdict that kept the error's own reading from running at all)
    ipv6 = ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot "
            "assign requested address).\n")
    for error, category in (("/opt/jobs/launch.sh: line 42: 48213 Killed                  torchrun --nnodes=4 train.py",
                             Category.RANK_KILLED),
                            ("FileNotFoundError: Unexpected number of log files found: []. Expected at least 1, got 0",
                             Category.RANK_CRASHED),
                            ("/opt/conda/lib/python3.8/site-packages/pytorch_lightning/trainer/call.py:48: UserWarning: "
                             "Detected KeyboardInterrupt, attempting graceful shutdown...", Category.RANK_KILLED)):
        hypotheses = diagnose(tmp_path, ipv6 + error + "\n").hypotheses
        assert hypotheses[0].category is category, error
        assert all(h.category is not Category.PEER_UNREACHABLE for h in hypotheses), error
    # alone it is all there is (a lead)
    assert diagnose(tmp_path, ipv6).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_a_socket_device_that_reaches_no_other_host_does_not_hide_an_error_line_no_rule_knows(tmp_path: Path) -> None:
    devices = "node-0:48213:48213 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0> [1]docker0:172.17.0.1<0>\n"
    top = diagnose(tmp_path, devices + "2026-Dec-05 05:12:30.0112 4411:4411 ERROR TDRV:kbl_model_add Attempting to load "
                   "an incompatible model!\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "incompatible model" in top.title
    # beside a timeout (and alone) it still is the lead above the unexplained timeout
    timeout = ("[E ProcessGroupNCCL.cpp:821] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=11, "
               "OpType=ALLREDUCE, Timeout(ms)=180000) ran for 180043 milliseconds before timing out.\n")
    assert diagnose(tmp_path, devices + timeout).hypotheses[0].category is Category.LOOPBACK_ADDRESS


def test_gloos_loopback_fallback_yields_to_a_failure_of_a_processs_own(tmp_path: Path) -> None:
    # every gloo run on a host whose name maps to 127.0.1.1 (Ubuntu's /etc/hosts) prints it: beside an out-of-memory
    # error, a GPU's or a process's own exception, and no connection that failed, that failure says what went wrong
    fell_back = ("[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname to a (local) address. Using the "
                 "loopback address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME.\n")
    for error, category in (
            ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
             "79.10 GiB of which 1.21 GiB is free.", Category.RANK_OUT_OF_MEMORY),
            ("node-1:61274:61314 [1] bootstrap.cc:107 NCCL WARN Call to setrlimit failed : Operation not permitted",
             Category.UNRECOGNISED),
            ("ValueError: PJRT plugin config file should contain \"library_path\" field.", Category.RANK_CRASHED)):
        assert diagnose(tmp_path, fell_back + error + "\n").hypotheses[0].category is category, error
    # a connection to the loopback that failed, or a wait that timed out, it still explains
    refused = ("[rank8] Gloo connectFullMesh failed ... timed out connecting: SO_ERROR: Connection refused,\n"
               "        remote=[127.0.0.1]:14215\n")
    assert diagnose(tmp_path, fell_back + refused).hypotheses[0].category is Category.LOOPBACK_ADDRESS
