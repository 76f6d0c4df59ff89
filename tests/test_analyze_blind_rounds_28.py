"""Readings added in the session of the sweeps of fault-tolerance layers (NVIDIA's resiliency extension, torchft,
TorchX, Composer), NCCL's network plugins and the fabrics under them (libfabric's EFA and CXI, UCX), NVIDIA's
cluster software (the container toolkit, the device plugin, the fabric manager, TransformerEngine) and training
frameworks (OLMo, NeMo, AXLearn); one behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, each_read
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.parsers.prefixes import split_prefix

diagnose = diagnose_paste

_NVRX = "2026-12-05 06:52:11,204 [WARNING] [node-3] [workload:13(5) infra:1(5)] rank_monitor_server.py:497 "


def test_the_resiliency_extensions_prefix_names_the_node_and_the_workloads_rank() -> None:
    line = split_prefix(_NVRX + "[Cycle 0] Did not get subsequent heartbeat. Waited 300.00 seconds.")
    assert (line.origin.host, line.origin.rank, line.origin.local_rank, line.severity) == ("node-3", 13, 5, "warning")
    assert line.body.startswith("[Cycle 0] Did not get")
    # its log file writes the launcher's rank first, as srun -l would: no rank of the workload's; nor is ``?``
    line = split_prefix("13: 2026-12-05 06:58:40,120 [ERROR] [node-0] [workload:?(?) infra:13(0)] launcher.py:619 x")
    assert (line.origin.host, line.origin.rank, line.severity, line.body) == ("node-0", None, "error", "x")


def test_libfabrics_olmos_and_nemos_log_formats_are_prefixes() -> None:
    line = split_prefix("libfabric:91234:1733380292::cxi:core:cxip_query_if_list():554<warn> nid001234: CXI retry "
                        "handler not running for device: cxi0")
    assert (line.origin.pid, line.origin.host, line.severity) == (91234, "nid001234", "warning")
    assert line.body.startswith("CXI retry handler")
    line = split_prefix("libfabric:48213:1733380292::efa:ep_ctrl:efa_rdm_ep_alloc_rxe():232<warn> RX entries exhausted")
    assert (line.origin.pid, line.origin.host, line.body) == (48213, None, "RX entries exhausted")
    line = split_prefix("2026-12-05 07:03:44.518\tnode-0:2\tolmo_core.train.callbacks.gpu_memory_monitor:69\tWARNING\t"
                        "3 CUDA OOM errors thrown.")
    assert (line.origin.host, line.origin.local_rank, line.severity) == ("node-0", 2, "warning")
    line = split_prefix("[NeMo E 2026-12-05 06:58:02 connector:105] Timeout occurred while trying to acquire the lock")
    assert (line.severity, line.time_text, line.body) == (
        "error", "2026-12-05 06:58:02", "Timeout occurred while trying to acquire the lock")
    # a tab inside a line that is not OLMo's layout stays the body's
    assert split_prefix("2026-12-05 07:03:44\tnode-0\tsomething").origin.host is None


def test_a_training_watchdog_saying_a_rank_made_no_progress_is_a_hang_of_that_rank(tmp_path: Path) -> None:
    for words in ("[Cycle 0] Did not get subsequent heartbeat. Waited 300.00 seconds.",
                  "[Cycle 2] Did not get initial heartbeat. Waited 1800.00 seconds.",
                  "[Cycle 1] Section 'step' has been open for 612.45 seconds. Timeout is 600.00 seconds.",
                  "[Cycle 1] Was out of section for 905.12 seconds. Timeout is 900.00 seconds."):
        top = diagnose(tmp_path, _NVRX + words + "\n").hypotheses[0]
        assert (top.category, top.culprit_ranks, top.culprit_hosts) == (Category.UNEXPLAINED_TIMEOUT, (13,), ("node-3",))
    each_read(tmp_path, {
        "2026-12-05 06:58:40,120 [ERROR] [node-0] [workload:?(?) infra:0(0)] progress_tracker.py:248 EARLY "
        "TERMINATION: 3 consecutive training cycles without progress (threshold: 3).": Category.UNEXPLAINED_TIMEOUT,
        "I1205 07:18:01.004211 140234567 trainer.py:486] Watchdog triggered because step has not incremented in the "
        "last 600 seconds and the host is idle.": Category.UNEXPLAINED_TIMEOUT,
        "E1205 07:20:01.123456 140234567 trainer.py:521] Exit due to no progress during training.":
            Category.UNEXPLAINED_TIMEOUT,
        # TransformerEngine's userbuffers waiting out UB_TIMEOUT for a peer's flag
        "[userbuffers.cu:userbuffers_fp16_sum_inplace_gpu_rr_rs:285] [3] Reduce-scatter: SM 2 [0]: expecting 1457 "
        "got 1456": Category.UNEXPLAINED_TIMEOUT,
        "[userbuffers.cu:kuserbuffers_pushrecv:2078] pushrecv: CE deadlock DETECTED: 17 (ce_start) != 16 (ce_end)":
            Category.UNEXPLAINED_TIMEOUT,
    })
    # a heartbeat that did arrive, a section's timeout as configured, progress made: no failure
    assert diagnose(tmp_path, _NVRX + "Got initial heartbeat after 12.0 seconds.\n"
                    "rank_section_timeouts={'step': 600.0}, made progress: 12000 -> 12200\n").hypotheses == ()


def test_health_checks_and_the_device_plugin_taking_a_gpu_or_a_nic_out(tmp_path: Path) -> None:
    prefix = "2026-12-05 07:02:11,003 [WARNING] [node-7] [workload:?(?) infra:7(0)] health_check.py:415 "
    for words, category in (("GPU 5: Requires a reset to recover. Terminate GPU processes and reset the GPU.",
                             Category.GPU_ERROR),
                            ("GPU 5: Requires a node reboot to recover. Reboot the system.", Category.GPU_ERROR),
                            ("GPU 2: NVL link 11 is in DISABLED state", Category.GPU_ERROR),
                            ("NVLinkWindowHealthCheck: GPU 2 unhealthy -- 3 NVLink ports flagged", Category.GPU_ERROR),
                            ("NIC device mlx5_3: Port state changed from 4: ACTIVE to 1: DOWN. Health check FAILED.",
                             Category.IB_PORT_DOWN),
                            ("GPU 3 NIC/IB mlx5_3 link down counter has been incremented: 0 -> 1",
                             Category.IB_PORT_DOWN)):
        top = diagnose(tmp_path, prefix + words + "\n").hypotheses[0]
        assert (top.category, top.culprit_hosts) == (category, ("node-7",)), words
    each_read(tmp_path, {
        "I1205 07:01:02.123456       1 server.go:279] 'nvidia.com/gpu' device marked unhealthy: "
        "GPU-3f2a1c9e-8b7d-4e21-a0c4-5d6e7f809a1b": Category.GPU_ERROR,
        "I1205 07:01:02.123456       1 health.go:109] Marking device GPU-3f2a1c9e-8b7d-4e21-a0c4-5d6e7f809a1b as "
        "unhealthy: ERROR_UNKNOWN": Category.GPU_ERROR,
        "I1205 07:01:02.123456       1 health.go:92] unable to get device handle from UUID: ERROR_NOT_FOUND; marking "
        "it as unhealthy": Category.GPU_ERROR,
        "libfabric:91234:1733380292::cxi:core:cxip_query_if_list():554<warn> nid001234: CXI retry handler not running "
        "for device: cxi0": Category.IB_PORT_DOWN,
        "libfabric:91234:1733380292::cxi:core:cxip_query_if_list():561<warn> nid001234: CXI netdev not found for "
        "device: cxi2": Category.IB_PORT_DOWN,
    })
    # the device plugin's list of Xids it ignores, and a GPU counted healthy, are no finding
    assert diagnose(tmp_path, "I1205 07:01:02.123456       1 health.go:64] Ignoring the following XIDs for health "
                    "checks: [13 31 43 45 68 109]\nGPU 2: NVL link 11 is in ACTIVE state\n").hypotheses == ()


def test_the_nvswitch_fabric_down_under_the_gpus_names_the_fabric_not_the_gpu(tmp_path: Path) -> None:
    for line in ("[ 8231.402117] NVRM: nvidia-fabricmanager daemon shutdown detected, robust channel recovery invoked!",
                 "[ 9120.774310] NVRM: Abrupt nvidia-imex daemon shutdown detected, disabled fabric allocations",
                 "Fabric Manager (Cluster UUID: 1f2e3d4c, Clique ID: 32766, Health Mask: 0x2): NVLink training of "
                 "fabric did not complete.",
                 "fabric manager found but not active"):
        top = diagnose(tmp_path, line + "\n").hypotheses[0]
        assert top.category is Category.GPU_ERROR and "NVSwitch fabric" in top.title, line
        assert "nvidia-fabricmanager" in top.fix and "802" not in top.title, line
    # CUDA's error 802 keeps its own title
    top = diagnose(tmp_path, "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error "
                   "802: system not yet initialized (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
                   ).hypotheses[0]
    assert top.category is Category.GPU_ERROR and "error 802" in top.title


def test_libfabrics_words_for_a_peer_gone_another_version_or_a_message_too_big(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "libfabric:48213:1733380292::efa:ep_ctrl:efa_rdm_cq_process_prov_errno():631<warn> The peer of address "
        "fi_addr_efa://[fe80::8d2:77ff:fe10:9b3c]:1:1234567 becomes unresponsive": Category.PEER_UNREACHABLE,
        "libfabric:91234:1733380292::cxi:ep_ctrl:cxip_ep_ctrl_event_req():322<warn> nid001234: Unexpected "
        "C_EVENT_SEND event rc: C_RC_UNDELIVERABLE": Category.PEER_UNREACHABLE,
        # (``pid: 0 error:`` is no count of zero errors)
        "libfabric:91234:1733380292::cxi:ep_data:cxip_report_send_completion():708<warn> nid001234: TXC (0x1f2a:0): "
        "Request dest_addr: 57 caddr.nic: 0X1F3B caddr.pid: 0 error: 0x7f2e4c0a1b00 (err: 5, C_RC_UNDELIVERABLE)":
            Category.PEER_UNREACHABLE,
        "libfabric:48213:1733380292::efa:cq:efa_rdm_cq_populate_src_efa_ep_addr():280<warn> Host "
        "fi_addr_efa://[fe80::4a7:c1ff:fe3d:2a11]:1:3527394816 received a packet with invalid protocol version 3.":
            Category.NCCL_VERSION_MISMATCH,
        "libfabric:48213:1733380292::efa:ep_ctrl:efa_av_reverse_lookup_rdm_conn():109<warn> An incoming packet does "
        "NOT have connection ID in its header.": Category.NCCL_VERSION_MISMATCH,
        "libfabric:48213:1733380292::efa:cq:efa_rdm_rxe_report_completion():1158<warn> Message truncated! from peer 3 "
        "implicit fi_addr: 18446744073709551615 rx_id: 17 incoming message size: 8388608 receiving buffer size: "
        "4194304": Category.COLLECTIVE_DESYNC,
        "libfabric:91234:1733380292::cxi:cq:cxip_evtq_progress():416<warn> nid001234: EQ 37 dropped event, rsvd slots "
        "0, free slots 0": None,
        "libfabric:48213:1733380292::efa:ep_ctrl:efa_rdm_ep_alloc_rxe():232<warn> RX entries exhausted": None,
    })
    # a return code of success, a count of zero errors: nothing
    assert diagnose(tmp_path, "cxi0: rc C_RC_OK\nfinished with 0 errors\n").hypotheses == ()


def test_a_straggler_report_and_a_count_of_ooms_name_their_causes(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "[NeMo W 2026-12-05 07:04:10 straggler_det_callback:124] STRAGGLER DETECTION WARNING: Some GPUs have worse "
        "relative performance. Affected ranks: {StragglerId(rank=13, node='node-3')}": Category.LAGGING_RANK,
        "2026-12-05 07:03:44.518\tnode-0:0\tolmo_core.train.callbacks.gpu_memory_monitor:69\tWARNING\t3 CUDA OOM "
        "errors thrown.": Category.RANK_OUT_OF_MEMORY,
    })
    # a timeout after a straggler report is the straggler's: the cause before the outcome
    top = diagnose(tmp_path, "[NeMo W 2026-12-05 07:04:10 straggler_det_callback:124] STRAGGLER DETECTION WARNING: "
                   "Some GPUs have worse relative performance. Affected ranks: {StragglerId(rank=13, node='node-3')}\n"
                   + _NVRX + "[Cycle 0] Did not get subsequent heartbeat. Waited 300.00 seconds.\n").hypotheses[0]
    assert top.category is Category.LAGGING_RANK
    # the detector's own report of no straggler, and a count of retries, are none
    assert diagnose(tmp_path, "STRAGGLER DETECTION: no stragglers detected\n27 CUDA memory allocation retries.\n"
                    ).hypotheses == ()


def test_a_line_logged_at_critical_is_an_error_by_its_programs_account(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "2026-12-05 07:03:05,000 [CRITICAL] [node-1] [workload:5(5) infra:5(5)] "
                   "monitor_process.py:198 target process is terminated, shutting down\n").hypotheses[0]
    assert (top.category, top.culprit_ranks, top.culprit_hosts) == (Category.UNRECOGNISED, (5,), ("node-1",))
    # the word inside a message, not the level its logger spelled, is no error
    assert diagnose(tmp_path, "INFO: log level for the watchdog set to CRITICAL\n").hypotheses == ()


def test_torch_npus_process_group_reads_as_nccls_does(tmp_path: Path) -> None:
    # ProcessGroupHCCL is ProcessGroupNCCL's port: its work in blocking wait is a collective that timed out
    top = diagnose(tmp_path, "[rank1]:[E1205 07:52:40.118204771 ProcessGroupHCCL.cpp:1073] [Rank 1] Work WorkHCCL("
                   "SeqNum=77, OpType=ALLGATHER, NumelIn=4194304, NumelOut=33554432, Timeout(ms)=1800000) timed out "
                   "in blocking wait (TORCH_HCCL_BLOCKING_WAIT=1 or HCCL_BLOCKING_WAIT=1).\n").hypotheses[0]
    assert (top.category, top.affected_ranks) == (Category.UNEXPLAINED_TIMEOUT, (1,))
    # CANN 8's words for HCCL's wait on a peer's signal (EI0002) name the peer awaited, as the older words do
    top = diagnose(tmp_path, "EI0002: [PID: 48213] 2026-12-05-08:11:42.503.117 A timeout occurs when the Notify "
                   "register waits for execution. Waiting peer rank: 12; task information: streamID:[3], "
                   "taskID[41]; communication operator information: AllReduce\n").hypotheses[0]
    assert top.category is Category.LAGGING_RANK and "remote rank 12" in top.title
    assert diagnose(tmp_path, "HCCL INFO: waiting peer rank: 12 ready, connected\n").hypotheses == ()
    # HCCL's EI0005 alone: the ranks called the collective with different arguments
    top = diagnose(tmp_path, "EI0005: [PID: 48213] 2026-12-05-07:36:27.781.599 The parameters of operator "
                   "HcomAllReduce are inconsistent between ranks, parameter count is 16512 on local rank\n").hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC


def test_nvshmems_and_deepeps_words_are_never_silent(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "/workspace/nvshmem_src/src/host/init/init.cu:386: non-zero status: 7 NVSHMEM requires the same number of PEs "
        "on all nodes (4 PEs on node-3)": Category.UNRECOGNISED,
        "/workspace/nvshmem_src/src/modules/transport/ibgda/ibgda.cpp:nvshmemt_init:4558: neither nv_peer_mem, or "
        "nvidia_peermem detected. Skipping transport.": Category.UNRECOGNISED,
        "/workspace/nvshmem_src/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_root:220: UID Bootstrap versions "
        "not compatible between PEs": Category.NCCL_VERSION_MISMATCH,
        "/workspace/nvshmem_src/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_init:148: No usable "
        "listening interface found": Category.INTERFACE_MISSING,
        "/workspace/nvshmem_src/src/modules/bootstrap/uid/ncclSocket/ncclsocket_socket.cpp:socketStartConnect:479: "
        "socketStartConnect: exceeded retries (20000)": Category.PEER_UNREACHABLE,
        # DeepEP's kernels waiting out their bound: an error of no category (the held cases' threads found a library
        # bug or the RDMA setup behind them, not a late rank)
        "DeepEP timeout for dispatch receivers, rank 6, responsible_channel = 4, tokens remained: 37":
            Category.UNRECOGNISED,
        "Warning: DeepEP timeout for barrier, rank 14, dst_rank 3": Category.UNRECOGNISED,
        "[12] ibgda_poll_cq timeout:": Category.UNRECOGNISED,
    })
    # a status of 0, DeepEP's timeout as configured: nothing
    assert diagnose(tmp_path, "init.cu:386: non-zero status: 0\nDeepEP: num_max_dispatch_tokens_per_rank=128, "
                    "timeout=100s\n").hypotheses == ()


def test_kubernetes_refusing_a_pod_or_dropping_its_traffic(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "Dec  5 07:21:03.123: training/llama-70b-worker-3:45678 (ID:12345) <> training/llama-70b-worker-0:29500 "
        "(ID:23456) Policy denied DROPPED (TCP Flags: SYN)": Category.PEER_UNREACHABLE,
        "  Warning  OutOfnvidia.com/gpu  4s  kubelet  Node didn't have enough resource: nvidia.com/gpu, requested: 8, "
        "used: 0, capacity: 4": Category.UNRECOGNISED,
    }, quiet="Policy allowed FORWARDED (TCP Flags: SYN)\n")


def test_the_c_library_the_kernel_and_the_shell_in_their_own_words(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "free(): invalid pointer": Category.UNRECOGNISED,
        "malloc(): unsorted double linked list corrupted": Category.UNRECOGNISED,
        "*** buffer overflow detected ***: terminated": Category.UNRECOGNISED,
        "train.service: Main process exited, code=dumped, status=11/SEGV": Category.RANK_CRASHED,
        "train.service: Main process exited, code=killed, status=9/KILL": Category.RANK_KILLED,
        "[183492.104001] Out of memory and no killable processes...": Category.RANK_KILLED,
        "/opt/jobs/launch.sh: line 5: ulimit: max locked memory: cannot modify limit: Operation not permitted":
            Category.MEMLOCK_LIMIT,
        "socket.gaierror: [Errno -2] Name or service not known": Category.PEER_UNREACHABLE,
        "bash: fork: Resource temporarily unavailable": Category.UNRECOGNISED,
        "[ 7001.220345] cgroup: fork rejected by pids controller in /kubepods.slice/pod7c1e": Category.UNRECOGNISED,
        "concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly while the "
        "future was running or pending.": None,
        "        An attempt has been made to start a new process before the": None,
    })
    # an allocator's statistics, a healthy unit's exit, a limit that could be raised: nothing
    assert diagnose(tmp_path, "malloc(): 4096 bytes in 3 chunks\ntrain.service: Main process exited, code=exited, "
                    "status=0/SUCCESS\nulimit: max locked memory: unlimited\n").hypotheses == ()


def test_a_gpu_too_old_and_a_cloud_taking_the_machine_away(tmp_path: Path) -> None:
    each_read(tmp_path, {
        "UserWarning: Found GPU0 Tesla K80 which is of cuda capability 3.7. PyTorch no longer supports this GPU "
        "because it is too old. The minimum cuda capability supported by this library is 5.0.": Category.UNRECOGNISED,
        "compute.instances.preempted: Instance was preempted.": Category.RANK_KILLED,
        "compute.instances.terminateOnHostMaintenance: Instance terminated during Compute Engine maintenance.":
            Category.RANK_KILLED,
        "Host EC2 (instance i-0a1b2c3d4e5f67890) terminated.": Category.RANK_KILLED,
        "2026-12-05 06:40:12,551 INFO: 2 nodes set down (a3mega-a3meganodeset-[3-4]) with reason=Preempted instance":
            Category.RANK_KILLED,
        "  Warning  NodeFault  117s   hyperpod-pytorch-job-controller  Found unhealthy node hyperpod-i-03d315d8cef22bd25":
            Category.UNRECOGNISED,
    }, quiet="onHostMaintenance: MIGRATE\nnodes set down with reason=Maintenance window\n")


def test_a_status_after_a_padded_glog_prefix_a_retry_limit_reached_and_a_gpu_count_that_fell(tmp_path: Path) -> None:
    each_read(tmp_path, {
        # glog pads its thread id: the status after its prefix still opens the message
        "W1205 08:14:40.118822  402230 gpu_cliques.cc:945] FAILED_PRECONDITION: Previous and current job states have "
        "different sizes: 16 vs 15": Category.UNRECOGNISED,
        "E1205 08:00:58.103322 140211 cluster.py:59] Automatic Distributed initialization can not proceed: slurm is "
        "not supported.": Category.UNRECOGNISED,
        # retries used up are a failure, not a retry
        "slurmstepd: error:  mpi/pmix_v4: pmixp_p2p_send: node-3 [2]: pmixp_utils.c:450: send failed, rc=1001, "
        "exceeded the retry limit": Category.UNRECOGNISED,
        "[2026-12-05T08:01:12.345] gres/gpu count changed on node node-3 to 7": Category.GPU_ERROR,
    }, quiet="W1205 08:14:40.118822  402230 gpu_cliques.cc:945] state: FAILED_PRECONDITION counted 0 times\n"
             "srun: error: send failed, retrying (attempt 1 of 5)\n")


def test_libuvs_lower_case_words_for_a_port_taken_or_files_used_up(tmp_path: Path) -> None:
    # gloo's libuv transport (macOS, Windows) prints libuv's error names in lower case
    each_read(tmp_path, {
        "[/Users/runner/work/pytorch/pytorch/pytorch/third_party/gloo/gloo/transport/uv/libuv.h:582] uv_bind: "
        "address already in use": Category.PORT_IN_USE,
        "[../third_party/gloo/gloo/transport/uv/libuv.h:596] uv_accept: too many open files": Category.UNRECOGNISED,
    }, quiet="checking whether the address is already in use: no\n")


_WRONG = ("WARNING: current device is not 2, but 7, which may cause useless memory\n"
          "         allocation for torch CUDA context\n")


def test_a_process_on_another_ranks_gpu_is_two_ranks_on_one_gpu(tmp_path: Path) -> None:
    # with the out-of-memory error that follows, the shared GPU is the cause and the OOM its symptom
    top = diagnose(tmp_path, _WRONG + "\ntorch.OutOfMemoryError: HIP out of memory. Tried to allocate 28.00 MiB.\n"
                   "GPU 7 has a total capacity of 287.98 GiB of which 0 bytes is free.\n").hypotheses[0]
    assert top.category is Category.DUPLICATE_GPU and "GPU 7 instead of GPU 2" in top.title
    assert top.confidence > 0.8
    # alone, a lead
    top = diagnose(tmp_path, _WRONG).hypotheses[0]
    assert (top.category, top.confidence) == (Category.DUPLICATE_GPU, 0.45)
    assert diagnose(tmp_path, "INFO: current device is 2, as set\n").hypotheses == ()


_RECORD = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 415545) of "
           "binary: /usr/bin/python3\n")


def test_a_workers_exception_line_above_the_launchers_record_says_why_it_died(tmp_path: Path) -> None:
    refusal = ("NotImplementedError: Using RTX 3090 or 4000 series doesn't support faster communication broadband "
               "via P2P or IB. Please set `NCCL_P2P_DISABLE=\"1\"` and `NCCL_IB_DISABLE=\"1\" or use `accelerate "
               "launch` which will do this automatically.\n")
    top = diagnose(tmp_path, refusal + _RECORD).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "local rank 0" in top.title and "its error says" in top.title
    # an exception whose words name no cause leaves the worker's death a crash
    top = diagnose(tmp_path, "ValueError: bad batch\n" + _RECORD).hypotheses[0]
    assert top.category is Category.RANK_CRASHED
