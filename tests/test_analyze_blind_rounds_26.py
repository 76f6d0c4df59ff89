"""Readings added in the session of the eightieth blind harvest (the r83* cases of the real corpus): HPC and cloud
pages, schedulers, less mined frameworks, non-English threads and non-NVIDIA stacks; one behaviour per test, each
with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.rules.phrases import strongest

diagnose = diagnose_paste

_NO_IB = "node013:37715:38896 [0] NCCL INFO NET/IB : No device found.\n"
_IB_ASKED = "node013:37715:38896 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"


def test_no_ib_device_where_the_job_asked_for_ib_is_a_socket_fallback(tmp_path: Path) -> None:
    assert one(_NO_IB, Kind.NCCL_NET).data == {"no_ib_device": True}
    top = diagnose(tmp_path, _NO_IB + _IB_ASKED).hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK and top.title.startswith("NCCL_IB_DISABLE=0 asks for InfiniBand")
    assert "node013" in top.title
    # NCCL's INFO alone (a machine without IB NICs: nothing asked for them) and under EFA's plugin, which prints the
    # same line before it takes over, say nothing of a failure
    assert diagnose(tmp_path, _NO_IB).hypotheses == ()
    efa = "node013:37715:38896 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\n"
    assert diagnose(tmp_path, _NO_IB + _IB_ASKED + efa).hypotheses == ()


def test_the_agents_signal_in_a_callers_report_is_the_job_stopped_from_outside(tmp_path: Path) -> None:
    report = ('      File ".../torch/distributed/elastic/multiprocessing/api.py", line 62, in _terminate_process_handler\n'
              '        raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)\n\n'
              "Message:\n\n    Process 107 got signal: 15\n\nUser error.\n")
    assert one("    Process 107 got signal: 15", Kind.AGENT_SIGNAL).data["signal"] == "SIGTERM"
    top = diagnose(tmp_path, report).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "SIGTERM" in top.title
    # a line that merely mentions a signal is none
    assert diagnose(tmp_path, "Process 107 got signal: 15 handlers installed, continuing\n").hypotheses == ()


_HNS = ("[ERROR] ROCE(2040034,alltoall_test):2025-09-15-08:38:12.776.612 [hns_roce_lite.c:630]"
        "hns_roce_lite_handle_error_cqe(630) : error cqe status: 0x{}\n")
_EI0013 = ("[PID: 3448331] 2025-12-04-21:59:08.232.310 Execution Error ROCE CQE(EI0013): An error CQE occurred during "
           "operator execution. Local information: server 127.0.0.1, device ID 0, device IP 127.10.0.1. Peer "
           "information: server 127.0.0.2, device ID 1, device IP 127.10.0.2.\n")


def test_the_roce_drivers_own_status_is_read_in_the_verbs_numbering(tmp_path: Path) -> None:
    assert one(_HNS.format("15"), Kind.IB_COMPLETION_ERROR).data["status"] == 12
    assert one(_HNS.format("16"), Kind.IB_COMPLETION_ERROR).data["status"] == 13
    assert one(_HNS.format("04"), Kind.IB_COMPLETION_ERROR).data["status"] == 4
    # HCCL's console line says the operators were running: the retransmissions ran out late, a link's failure
    top = diagnose(tmp_path, _HNS.format("15") + _EI0013).hypotheses[0]
    assert top.category is Category.IB_LINK_FAILURE and "0x15" in top.title
    protection = diagnose(tmp_path, _HNS.format("04") + _EI0013).hypotheses
    assert protection[0].category is Category.IB_COMPLETION and "error 4 (local protection" in protection[0].title
    assert all(h.category is not Category.IB_LINK_FAILURE for h in protection)  # EI0013 is that one failure


def test_hccls_error_cqe_alone_is_retransmissions_run_out(tmp_path: Path) -> None:
    event = one(_EI0013, Kind.IB_COMPLETION_ERROR)
    assert (event.data["status"], event.data["assumed"], event.data["stage"]) == (12, True, "execution")
    assert diagnose(tmp_path, _EI0013).hypotheses[0].category is Category.IB_LINK_FAILURE
    # without the stage (at set-up): the NICs cannot reach each other
    setup = _EI0013.replace(" during operator execution", "")
    assert diagnose(tmp_path, setup).hypotheses[0].category in (Category.IB_UNREACHABLE_AT_INIT,)


def test_hccls_op_retry_handshake_answered_by_another_program_is_a_port_taken(tmp_path: Path) -> None:
    line = "[OpRetryConnection][RecvAckTag] Recv unmatched ack  [1381978191] expect [64]\n"
    assert one(line, Kind.STORE_ERROR).data["source"] == "hccl-opretry"
    top = diagnose(tmp_path, line + "call trace: hcclRet -> 4\n").hypotheses[0]
    assert top.category is Category.PORT_IN_USE and "60000-60015" in top.fix
    assert diagnose(tmp_path, "[OpRetryConnection][RecvAckTag] Recv ack [64] expect [64]\n").hypotheses == ()


def test_efa_refusing_device_rdma_it_does_not_have(tmp_path: Path) -> None:
    line = ("FI_EFA_USE_DEVICE_RDMA=1 was set by user, but EFA device has no rdma-read capability.  Application will "
            "abort().\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.confidence >= 0.8 and "RDMA read" in top.title
    assert "Unset FI_EFA_USE_DEVICE_RDMA" in top.fix
    assert diagnose(tmp_path, "FI_EFA_USE_DEVICE_RDMA=1 was set by user\n").hypotheses == ()


def test_tcpxos_receive_daemon_counting_fewer_gpus_than_cuda(tmp_path: Path) -> None:
    paste = ("Number of GPUs detected in the PCI tree 7 is not equal to the actual number of GPUs reported by CUDA 8\n"
             "connect() error: 111: Connection refused\nORTE was unable to reliably start one or more daemons\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "7 GPUs in the PCI tree where CUDA reports 8" in top.title
    # the same counts agreeing are no failure
    assert diagnose(tmp_path, "Number of GPUs detected in the PCI tree 8 equals CUDA's 8\n").hypotheses == ()


# ---- a sweep of PyTorch's c10d messages and of what Slurm, Kubernetes, CUDA, DCGM and UCX print around a job ----

def test_socket_cpps_summary_alone_names_the_store_it_could_not_reach(tmp_path: Path) -> None:
    line = ("[E1205 10:31:02.123456789 socket.cpp:957] [c10d] The client socket has failed to connect to any network "
            "address of (node-0, 29500).\n")
    event = one(line, Kind.STORE_ERROR)
    assert (event.data["store_host"], event.data["store_port"], event.data["summary"]) == ("node-0", 29500, True)
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "node-0:29500" in top.title
    # beside a per-address error, that one says why (the summary's words are left out of the title)
    both = diagnose(tmp_path, line + "[W socket.cpp:601] [c10d] The client socket has failed to connect to "
                    "[node-0]:29500 (errno: 113 - No route to host).\n").hypotheses[0]
    assert "No route to host" in both.title and "no address of the store" not in both.title


def test_the_2_2_monitor_thread_timeout_is_the_watchdog_stuck(tmp_path: Path) -> None:
    line = ("[rank4]:[F ProcessGroupNCCL.cpp:1213] [Rank 4] NCCL monitor thread timeout. Basically, this could be due "
            "to CUDA or NCCL calls being unexpectedly blocking, especially when your program enters a deadlock state "
            "in watchdog or destructors. If you see this error, please file a bug to PyTorch.\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.WATCHDOG_STUCK and top.culprit_ranks == (4,)


def test_nccls_invalid_argument_code_alone_is_never_silent(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "ncclInvalidArgument: Invalid value for an argument.\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "ncclInvalidArgument" in top.title


def test_slurms_memory_limit_in_sruns_and_slurmstepds_words(tmp_path: Path) -> None:
    for line in ("srun: Exceeded job memory limit\n", "slurmstepd: error: Exceeded step memory limit at some point.\n"):
        event = one(line, Kind.WORKER_FAILED)
        assert (event.data["oom"], event.data["signal"]) == (True, "SIGKILL")
        top = diagnose(tmp_path, line).hypotheses[0]
        assert top.category is Category.RANK_KILLED and "host memory" in top.title
    assert diagnose(tmp_path, "srun: job memory limit is 64G\n").hypotheses == ()


def test_a_pod_evicted_over_its_own_limits(tmp_path: Path) -> None:
    shm = 'Message:          Usage of EmptyDir volume "dshm" exceeds the limit "16Gi".\n'
    top = diagnose(tmp_path, shm).hypotheses[0]
    assert top.category is Category.RANK_KILLED and '"dshm"' in top.title and "sizeLimit" in top.fix
    storage = diagnose(tmp_path, "Pod ephemeral local storage usage exceeds the total limit of containers 40Gi.\n")
    assert storage.hypotheses[0].category is Category.RANK_KILLED and "ephemeral-storage" in storage.hypotheses[0].title
    # the node running low stays the node's reading
    node = diagnose(tmp_path, "The node was low on resource: ephemeral-storage.\n").hypotheses[0]
    assert "the node ran low" in node.title


def test_a_gpu_fallen_off_the_bus_in_the_drivers_and_dcgms_words(tmp_path: Path) -> None:
    for line, gpu in (("[Sat Dec  5 01:12:44 2026] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", None),
                      ("GPU 3 has fallen off the bus", 3), ("Detected XID 79 for GPU 3", 3),
                      ("Unable to determine the device handle for gpu 0000:3b:00.0: GPU is lost.  Reboot the system to "
                       "recover this GPU", None)):
        event = one(line, Kind.GPU_ERROR)
        assert event.data["hardware"] is True and event.data.get("gpu") == gpu, line
        assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.GPU_ERROR


def test_startup_warnings_that_are_the_failure(tmp_path: Path) -> None:
    arch = ("UserWarning: NVIDIA H200 with CUDA capability sm_90 is not compatible with the current PyTorch "
            "installation. The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80.\n")
    top = diagnose(tmp_path, arch).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "architecture" in top.title
    init = ("/usr/lib/python3/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: CUDA unknown "
            "error - this may be due to an incorrectly set up environment, e.g. changing env variable "
            "CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.\n")
    assert diagnose(tmp_path, init).hypotheses  # never silent
    # other user warnings stay none
    assert diagnose(tmp_path, "UserWarning: barrier(): using the device under current context.\n").hypotheses == ()


def test_open_mpi_direct_launched_without_slurms_pmi(tmp_path: Path) -> None:
    line = ('The application appears to have been direct launched using "srun", but OMPI was not built with SLURM\'s '
            "PMI support and therefore cannot execute.\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.confidence >= 0.8 and "srun --mpi=pmix" in top.fix


def test_ucx_endpoint_errors_no_handler_took(tmp_path: Path) -> None:
    line = ("[1796433164.218734] [gpu-node-07:123456:0]          ucp_ep.c:1660 UCX  ERROR ep 0x7f2e6c01a040: error "
            "'Endpoint timeout' on rc_mlx5/mlx5_0:1 will not be handled since no error callback is installed\n")
    assert one(line, Kind.NCCL_CONNECT_FAILED).data["error"] == "Endpoint timeout"
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_ray_losing_a_node_is_the_node_gone_and_its_actors_with_it(tmp_path: Path) -> None:
    paste = ("2022-02-15 16:53:52,096\tWARNING worker.py:1462 -- The node with node id: 8f205b and ip: 10.128.0.103 "
             "has been marked dead because the detector has missed too many heartbeats from it.\n"
             "(BackendExecutor pid=5126, ip=10.128.0.32) 2022-02-15 16:53:52,097\tERROR utils.py:42 -- The actor died "
             "unexpectedly before finishing this task.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("10.128.0.103",)
    assert top.title.startswith("Ray lost node 10.128.0.103")


def test_a_systemd_unit_is_no_host(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "nvidia-fabricmanager.service: Main process exited, code=exited, status=1/FAILURE\n")
    assert top.hypotheses and not top.hypotheses[0].culprit_hosts


def test_slurms_cancellation_by_a_signal_and_a_node_srun_lost(tmp_path: Path) -> None:
    signal = ("slurmstepd: error: *** JOB 4817263 ON gpu-node-07 CANCELLED AT 2026-12-05T01:12:44 DUE to SIGNAL "
              "Terminated ***\n")
    assert one(signal, Kind.AGENT_SIGNAL).data["reason"] == "signal terminated"
    assert diagnose(tmp_path, signal).hypotheses[0].category is Category.RANK_KILLED
    lost = diagnose(tmp_path, "srun: error: Cannot communicate with node gpu-node-07.  Aborting job.\n").hypotheses[0]
    assert lost.category is Category.RANK_KILLED and lost.culprit_hosts == ("gpu-node-07",)
    # a node named by its index in the step is no host
    assert one("srun: error: Cannot communicate with node 3.  Aborting job.", Kind.AGENT_SIGNAL).origin.host is None


def test_a_pods_exit_code_137_in_the_operators_words(tmp_path: Path) -> None:
    line = ("  Warning  Error  50s  pytorchjob-controller  Error pod llm-ft-worker-3 container pytorch exitCode: 137 "
            "terminated message:\n")
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.RANK_KILLED
    assert diagnose(tmp_path, "Error pod llm-ft-worker-3 container pytorch exitCode: 1 terminated\n").hypotheses[0] \
        .category is not Category.RANK_KILLED


def test_the_cuda_runtimes_error_by_its_name_and_words(tmp_path: Path) -> None:
    line = "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInvalidDevicePointer: invalid device pointer\n"
    assert one(line, Kind.GPU_ERROR).data["message"] == "invalid device pointer"
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.GPU_ERROR
    oom = "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorMemoryAllocation: out of memory\n"
    assert diagnose(tmp_path, oom).hypotheses[0].category is Category.RANK_OUT_OF_MEMORY


def test_a_container_runtime_refusing_an_image_for_a_newer_cuda(tmp_path: Path) -> None:
    line = ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a "
            "newer version, or use an earlier cuda container: unknown\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "driver older than the CUDA runtime" in top.title


# ---- the eighty-first round (r84*) ----

def test_a_rank_waiting_in_a_main_process_first_barrier_while_the_main_process_maps(tmp_path: Path) -> None:
    # real: huggingface/trl#1902 (the bar's last redraw and rank 1's store warning on one line, the traceback cut)
    paste = ("Map:  17%|███████       | 281398/1652614 [09:56<53:07, 430.16 examples/s][rank1]:[W socket.cpp:432] "
             "[c10d] While waitForInput, poolFD failed with (errno: 0 - Success).\n"
             "Traceback (most recent call last):\n"
             '  File "/data1/dpo/dpo_qwen2.py", line 245, in <module>\n    dpo_trainer = DPOTrainer(\n'
             '  File "/site-packages/trl/trainer/dpo_trainer.py", line 527, in __init__\n'
             "    with PartialState().local_main_process_first():\n"
             '  File "/site-packages/accelerate/state.py", line 523, in local_main_process_first\n'
             "    yield from self._goes_first(self.is_lo\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,) and "Map" in top.title
    # the same wait without the barrier in its traceback says nothing of what the main process was doing
    plain = paste.replace("local_main_process_first", "prepare_dataset").replace("_goes_first", "_prepare")
    assert diagnose(tmp_path, plain).hypotheses[0].category is not Category.LAGGING_RANK


def test_a_bar_glued_to_a_ranks_line_is_read_apart(tmp_path: Path) -> None:
    line = ("Map:  17%|███      | 281398/1652614 [09:56<53:07, 430.16 examples/s][rank1]:[W socket.cpp:432] [c10d] "
            "While waitForInput, poolFD failed with (errno: 0 - Success).")
    kinds = {(e.kind, e.origin.rank) for e in events_of(line)}
    assert (Kind.PROGRESS_BAR, None) in kinds and (Kind.STORE_ERROR, 1) in kinds


def test_a_line_number_a_journal_host_and_a_loguru_level_before_the_line(tmp_path: Path) -> None:
    oom = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    for paste in (f"    12\t{oom}\n",  # cat -n
                  f"2024-05-01 10:00:00.123 | ERROR    | __main__:train:88 - {oom}\n"):  # loguru
        assert diagnose(tmp_path, paste).hypotheses[0].culprit_ranks == (3,), paste
    journal = ("2024-05-01T10:00:00+0000 gpu-node-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen "
               "off the bus.\n")
    assert diagnose(tmp_path, journal).hypotheses[0].culprit_hosts == ("gpu-node-07",)
    # a logger's words after a stamp are no host (no digit in them)
    logged = f"2024-05-01T10:00:00+0000 INFO root: {oom}\n"
    assert "INFO" not in diagnose(tmp_path, logged).hypotheses[0].culprit_hosts


# ---- a sweep of Accelerate's, Lightning's, Transformers', Megatron's, torchtitan's, NeMo's, vLLM's, SGLang's and
# Ray's messages ----

def test_a_trainers_own_words_for_a_signal_it_caught(tmp_path: Path) -> None:
    for line, sig in (("[rank: 2] Received SIGTERM: 15", "SIGTERM"), ("Handling auto-requeue signal: 10", "SIGUSR1"),
                      ("Detected KeyboardInterrupt, attempting graceful shutdown ...", "SIGINT"),
                      ("[exiting program after receiving SIGTERM.] datetime: 2026-12-05 01:14:07", "SIGTERM"),
                      ("[NeMo I 2026-12-05 01:58:09 preemption:87] Received signal 15, initiating graceful stop",
                       "SIGTERM"),
                      ("[NeMo I 2026-12-05 01:58:10 preemption:67] Preemption detected, saving checkpoint and exiting",
                       "SIGTERM"),
                      ("[2026-12-05 01:59:00] SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq",
                       "SIGTERM")):
        assert one(line, Kind.AGENT_SIGNAL).data["signal"] == sig, line
        top = diagnose(tmp_path, line + "\n").hypotheses[0]
        assert top.category is Category.RANK_KILLED and sig in top.title, line
    assert diagnose(tmp_path, "Received SIGTERM handler installed for graceful exits\n").hypotheses == ()


def test_sglangs_scheduler_ended_by_a_signal_or_its_own_code(tmp_path: Path) -> None:
    killed = one("[2026-12-05 01:47:14] Scheduler or DataParallelController 39127 terminated with -9",
                 Kind.WORKER_FAILED)
    assert (killed.origin.pid, killed.data["signal"]) == (39127, "SIGKILL")
    exited = diagnose(tmp_path, "[2026-12-05 01:31:29] Scheduler or DataParallelController 39122 terminated with 1\n")
    assert exited.hypotheses[0].category is Category.UNRECOGNISED  # never silent


def test_serving_engines_and_rays_failures_are_never_silent(tmp_path: Path) -> None:
    for line in ("(APIServer pid=47001) WARNING 12-05 01:52:40 [core_client.py:869] [shutdown] MPClient: engine core "
                 "exited unexpectedly; starting cleanup",
                 "(EngineCore_DP0 pid=47102) INFO 12-05 01:45:12 [shm_broadcast.py:764] No available shared memory "
                 "broadcast block found in 60 seconds.",
                 "[2026-12-05 01:49:27 TP5] Found rank divergence for 1 events(s)! local hash: 7f3a9c21be04d6e1",
                 "[2026-12-05 01:55:03 TP0] Lost connection with prefill instance (bootstrap_addr: 10.1.2.4:8998)",
                 "2026-12-05 01:52:30,441\tWARNING nccl_ras.py:842 -- Possible NCCL hang detected! 1 of 3 communicators "
                 "have made no progress over 120 seconds.",
                 'The worker group requires {"GPU": 16} but the cluster only has a maximum of {"GPU": 8} resources.',
                 "The local object store is full of objects that are still in scope and cannot be evicted."):
        assert diagnose(tmp_path, line + "\n").hypotheses, line
    oom = ("(raylet) Task _map_task failed due to oom. There are infinite oom retries remaining, so the task will be "
           "retried. Error: 1 worker(s) were killed due to the node running low on memory.\n")
    assert diagnose(tmp_path, oom).hypotheses[0].category is Category.RANK_KILLED


def test_megatrons_non_finite_check_names_the_rank_and_node(tmp_path: Path) -> None:
    line = ("WARNING:megatron.core.rerun_state_machine:Rank 12, node node-3, device 4, iteration 4512: Unexpected result "
            "inf (message='found Inf in local grad norm')\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (12,) and top.culprit_hosts == ("node-3",)


@pytest.mark.parametrize("message", [
    "RuntimeError: Only 8 GPUs are available, but 16 are required.",
    "ValueError: World size (16) is larger than the number of available GPUs (8) in this node.",
    "ValueError: tp_size=6 must be divisible by dcp_size=4.",
    "RuntimeError: Model replicas must have an equal number of parameters.",
])
def test_a_frameworks_check_of_the_jobs_setup_is_a_setup_error(tmp_path: Path, message: str) -> None:
    paste = 'Traceback (most recent call last):\n  File "serve.py", line 12, in <module>\n    main()\n' + message + "\n"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "a check of the job's setup" in top.title, top.title
    # a program's own failure as it ran stays its own (a crash)
    own = paste.replace(message, "IndexError: list index out of range")
    assert diagnose(tmp_path, own).hypotheses[0].category is Category.RANK_CRASHED


def test_vllms_worker_ended_by_a_signal(tmp_path: Path) -> None:
    line = ("(EngineCore_DP0 pid=47102) ERROR 12-05 01:48:02 [multiproc_executor.py:404] Worker proc VllmWorker-3 died "
            "unexpectedly (exit code: -9), shutting down executor.\n")
    event = one(line, Kind.WORKER_FAILED)
    assert (event.origin.local_rank, event.data["signal"]) == (3, "SIGKILL")
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.RANK_KILLED
    # without its code, the worker's own error above says why
    assert not [e for e in events_of(line.replace(" (exit code: -9)", "")) if e.kind is Kind.WORKER_FAILED]


def test_a_ranks_setup_check_behind_its_prefix_names_the_rank(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "[rank0]: RuntimeError: world_size (12) is not divisible by 8\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_ranks == (0,) and "setup" in top.title
    assert diagnose(tmp_path, "[rank3]: IndexError: list index out of range\n").hypotheses[0].category \
        is Category.RANK_CRASHED


@pytest.mark.parametrize("line", ["GPU 3 had memory errors and row remappings are pending",
                                  "60 or more retired pages have been detected in GPU 3.",
                                  "GPU 3's NvLink link 5 is currently down",
                                  "Detected 12 CRC Flit NvLink errors on GPU 3's NVLink (should be 0)",
                                  "Fabric Manager training has not started."])
def test_a_gpu_failing_dcgms_health_check(tmp_path: Path, line: str) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.GPU_ERROR and "health check" in top.title
    assert diagnose(tmp_path, "GPU 3 row remapping: none pending, 0 retired pages\n").hypotheses == ()


def test_any_cause_in_words_ranks_before_an_outcome() -> None:
    # each category's first entry is its place among the causes, and every cause comes before any outcome (the
    # place of a cause far down the list had been compared with the number of categories, not of entries)
    ucx = ("ib_device.c:1171 UCX  ERROR   ibv_create_ah(dlid=49152 sl=0 port=1 sgid_index=3) for RC DEVX QP connect on "
           "mlx5_bond_0 failed: Connection timed out")
    found = strongest([ucx, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."])
    assert found is not None and found[0] == 0 and found[1].category is Category.IB_MODIFY_QP


@pytest.mark.parametrize(("line", "category"), [
    ("EI0008: [PID: 48213] 2026-12-05-01:55:02.135.732 The HCCL versions are inconsistent: tag [AllGather_10.1.2.3%eth0"
     "_60000_0_1], local_version [8.0.RC3], remote_version [8.0.RC2]", Category.NCCL_VERSION_MISMATCH),
    ("EI0004: [PID: 48213] 2026-12-05-01:55:02.135.732 The ranktable or rank is invalid,Reason:[The device id in "
     "ranktable is duplicated].", Category.DUPLICATE_GPU),
    ("EJ0002: [PID: 48213] 2026-12-05-01:55:02.135.732 The network port is down.Suggest: run hccn_tool -i 3 -link -g",
     Category.IB_PORT_DOWN),
    ("EI0011: [PID: 48213] 2026-12-05-01:55:02.135.732 Failed to allocate [209715200] bytes of NPU memory.",
     Category.RANK_OUT_OF_MEMORY),
    ("EI0013: [PID: 48213] 2026-12-05-01:55:02.135.732 An error CQE occurred during operator execution. Local "
     "information: server 10.1.2.3, device ID 2. Peer information: server 10.1.2.4, device ID 3.",
     Category.IB_LINK_FAILURE),
    ("EZ9999[PID: 48213] 2026-12-05-01:55:02.817.613 (EZ9999):  Kernel task happen error, retCode=0x25, [aicore "
     "timeout].", Category.GPU_ERROR),
    ("E39999: Inner Error!", Category.UNRECOGNISED),
    ("W1205 02:11:10.120612 48301 comm_task_manager.cc:170] Find timeout start but not finish task:group_key:pp_group_1,"
     "group_ranks:[1, 5],global_rank:5,local_rank:1", Category.UNEXPLAINED_TIMEOUT),
])
def test_ascend_codes_at_a_lines_start_and_paddles_watchdog(tmp_path: Path, line: str, category: Category) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is category and not top.culprit_hosts, (line, top.title)


def test_paddles_store_and_launchers_in_their_words(tmp_path: Path) -> None:
    store = diagnose(tmp_path, "ValueError: (InvalidArgument) Network 10.1.2.3:6170 cannot be connected.\n")
    assert store.hypotheses[0].category is Category.PEER_UNREACHABLE
    for line in ("ValueError: (InvalidArgument) TCPStore timeouted and not all workers got ready.",
                 "SystemError: (Fatal) _timeout:900 elapsed:901 (elapsed > _timeout)=1 (at /paddle/paddle/phi/core/"
                 "distributed/store/tcp_store.cc:392)"):
        assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.RENDEZVOUS_TIMEOUT, line
    for line, rank in (("ERROR 2026-12-05 01:52:10,413 launch_utils.py:667] ABORT!!! Out of all 16 trainers, the "
                        "trainer process with rank=[11] was aborted. Please check its log.", 11),
                       ("[2026-12-05 01:52:10,414] [   ERROR] manager.py:105 - ERROR rank 5 error with exit code 1, "
                        "check log for detail.", 5)):
        top = diagnose(tmp_path, line + "\n").hypotheses[0]
        assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (rank,), line


@pytest.mark.parametrize("line", [
    "The actor died because its node has died. Node Id: dae8173a69c4863c3a71baec03269043e5f22d725f2fb4bbdd16ac80",
    "ray.exceptions.NodeDiedError: Task failed due to the node (where this task was running) was dead or unavailable.",
])
def test_rays_words_for_a_node_gone_under_its_workers(tmp_path: Path, line: str) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.RANK_KILLED and "node that went away" in top.title
