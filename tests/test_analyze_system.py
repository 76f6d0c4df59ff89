"""Workers ended by the scheduler, the kernel or the container runtime, and launcher output quoted in part: the
lines people paste from Slurm, dmesg, kubectl and partial torchrun, Open MPI and DeepSpeed reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import events_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Diagnosis, Kind


def diagnose(tmp_path: Path, text: str) -> Diagnosis:
    (tmp_path / "paste.txt").write_text(text.strip("\n") + "\n")
    return analyze_paths([str(tmp_path / "paste.txt")]).diagnosis


def top(diagnosis: Diagnosis):
    assert diagnosis.hypotheses, "silent"
    return diagnosis.hypotheses[0]


@pytest.mark.parametrize(("line", "data"), [
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. Some of the step tasks have been OOM Killed.",
     {"source": "slurm", "oom": True, "signal": "SIGKILL", "step": "1234.0"}),
    ("slurmstepd: error: Detected 2 oom-kill event(s) in step 88123.batch cgroup.",  # Slurm < 21.08
     {"source": "slurm", "oom": True, "step": "88123.batch"}),
    ("[Mon Jan  8 10:00:01 2024] Out of memory: Killed process 12345 (python) total-vm:123456kB, anon-rss:99999kB",
     {"source": "kernel", "oom": True, "command": "python", "cgroup": False}),
    ("Memory cgroup out of memory: Killed process 4242 (pt_main_thread) total-vm:1kB", {"cgroup": True}),
    ("Out of memory: Kill process 777 (python3) score 912 or sacrifice child", {"command": "python3"}),
    ("      Reason:       OOMKilled", {"source": "kubernetes", "oom": True}),
    ("command terminated with exit code 137", {"source": "container", "signal": "SIGKILL"}),
    ("      Exit Code:    137", {"signal": "SIGKILL"}),
    ("srun: error: node12: task 3: Killed", {"source": "slurm", "signal": "SIGKILL", "tasks": "3"}),
    ("srun: error: gpu-a07: tasks 0-3: Exited with exit code 1", {"exitcode": 1, "tasks": "0-3"}),
    ("srun: error: gpu-a07: task 5: Segmentation fault", {"signal": "SIGSEGV"}),
])
def test_system_lines(line: str, data: dict) -> None:
    (event,) = [e for e in events_of(line) if e.kind is Kind.WORKER_FAILED]
    for key, value in data.items():
        assert event.data[key] == value, key


@pytest.mark.parametrize("line", ["exit code 1370", "returned exit status 13", "Exit Code: 0",
                                  "The OOM killer is disabled in this cgroup"])
def test_system_negatives(line: str) -> None:
    assert not [e for e in events_of(line) if e.kind is Kind.WORKER_FAILED]


def test_an_oom_kill_confirmed_by_the_scheduler_is_a025_at_0_9(tmp_path: Path) -> None:
    hypothesis = top(diagnose(tmp_path, "slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. Some of "
                                        "the step tasks have been OOM Killed."))
    assert hypothesis.category is Category.RANK_KILLED and hypothesis.confidence == 0.9
    assert "OOM killer" in hypothesis.title


def test_the_kernel_names_the_pid(tmp_path: Path) -> None:
    hypothesis = top(diagnose(tmp_path, "Out of memory: Killed process 12345 (python) total-vm:1kB"))
    assert hypothesis.category is Category.RANK_KILLED and hypothesis.culprit_processes == ("pid 12345",)


def test_srun_kills_the_others_after_the_first_failure(tmp_path: Path) -> None:
    hypothesis = top(diagnose(tmp_path, "srun: error: node3: task 0: Exited with exit code 1\n"
                                        "srun: error: node4: tasks 1-3: Killed\n"))
    assert hypothesis.category is Category.RANK_CRASHED and hypothesis.culprit_hosts == ("node3",)
    assert "srun task 0" in hypothesis.title
    assert Category.RANK_KILLED not in {h.category for h in diagnose(tmp_path, "srun: error: node3: task 0: Exited "
                                        "with exit code 1\nsrun: error: node4: tasks 1-3: Killed\n").hypotheses}


def test_a_gpu_out_of_memory_without_a_rank(tmp_path: Path) -> None:
    hypothesis = top(diagnose(tmp_path, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                                        "GPU 4 has a total capacity of 79.15 GiB of which 1.2 GiB is free."))
    assert hypothesis.category is Category.RANK_OUT_OF_MEMORY
    assert "2.00 GiB" in hypothesis.title and "GPU 4" in hypothesis.title


def test_nccl_out_of_memory_is_the_gpu_memory_not_a_gpu_fault(tmp_path: Path) -> None:
    hypothesis = top(diagnose(tmp_path, "gpu3:1234:1300 [0] NCCL WARN Cuda failure 'out of memory'"))
    assert hypothesis.category is Category.RANK_OUT_OF_MEMORY and hypothesis.culprit_hosts == ("gpu3",)


def test_the_store_port_is_taken(tmp_path: Path) -> None:
    hypothesis = top(diagnose(tmp_path, "RuntimeError: The server socket has failed to listen on any local network "
                                        "address. The server socket has failed to bind to [::]:29500 (errno: 98 - "
                                        "Address already in use). The server socket has failed to bind to "
                                        "0.0.0.0:29500 (errno: 98 - Address already in use)."))
    assert hypothesis.category is Category.PORT_IN_USE and "port 29500" in hypothesis.title
    assert "ss -ltnp | grep 29500" in (hypothesis.fix or "")


@pytest.mark.parametrize("line", ["torch.distributed.DistNetworkError: Connection reset by peer",
                                  "torch.distributed.DistNetworkError: failed to recv, got 0 bytes"])
def test_a_store_client_that_lost_the_store(line: str) -> None:
    (event,) = [e for e in events_of(line) if e.kind is Kind.PEER_CLOSED]
    assert event.data["transport"] == "store"


def test_a_torchrun_record_quoted_without_its_table(tmp_path: Path) -> None:
    # real: nvidia-cosmos/cosmos-predict2.5#72
    hypothesis = top(diagnose(tmp_path, "exitcode  : -9 (SIGKILL)\nerror_file: <N/A>\n"
                                        "traceback : Signal 9 (SIGKILL) received by PID 4242\n"))
    assert hypothesis.category is Category.RANK_KILLED
    hypothesis = top(diagnose(tmp_path, "traceback : Signal 9 (SIGKILL) received by PID 4242"))
    assert hypothesis.culprit_processes == ("pid 4242",)


def test_open_mpi_summary_alone_says_a_worker_died(tmp_path: Path) -> None:
    text = ("Primary job  terminated normally, but 1 process returned\n"
            "a non-zero exit code. Per user-direction, the job has been aborted.\n")
    assert top(diagnose(tmp_path, text)).category is Category.RANK_CRASHED


def test_open_mpi_summary_after_the_process_own_error_adds_nothing(tmp_path: Path) -> None:
    text = ("fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue'\n"
            "Primary job  terminated normally, but 1 process returned\n"
            "a non-zero exit code. Per user-direction, the job has been aborted.\n")
    assert "a worker died" not in " ".join(h.title for h in diagnose(tmp_path, text).hypotheses)


def test_deepspeed_killing_its_workers_means_one_failed_first(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#4510, pdsh prefixes
    text = "\n".join(f"192.169.83.120: [2023-10-13 11:31:28,593] [INFO] [launch.py:315:sigkill_handler] Killing "
                     f"subprocess {pid}" for pid in range(249, 253))
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_CRASHED and hypothesis.confidence == 0.3
    assert hypothesis.culprit_hosts == ("192.169.83.120",)


_RAS = """NCCL version 2.26.2 compiled with CUDA 12.6

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4         8        32        32   RUNNING  MISMATCH

Errors
======

Warnings
========

#0-0 (fa93daea854b060b) MISMATCH
  Communicator ranks have different AllGather operation counts
  30 ranks have launched up to operation 640
  2 ranks have launched up to operation 641
  Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124
  Rank 13 -- GPU 5 managed by process 323033 on node 10.137.190.124
"""


def test_ras_lists_the_ranks_ahead_not_the_late_ones(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1911
    hypothesis = top(diagnose(tmp_path, _RAS))
    assert hypothesis.category is Category.LAGGING_RANK and not hypothesis.culprit_ranks
    assert hypothesis.affected_ranks == (12, 13) and "operation 641" in hypothesis.title


def test_ras_listing_the_ranks_behind_names_them(tmp_path: Path) -> None:
    text = _RAS.replace("30 ranks have launched up to operation 640", "30 ranks have launched up to operation 642")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.culprit_ranks == (12, 13)


def test_a_ras_report_and_the_ranks_lines_in_one_paste(tmp_path: Path) -> None:
    text = _RAS + ("\n[rank118]:[E603 17:48:01.005271823 ProcessGroupNCCL.cpp:632] [Rank 118] Watchdog caught "
                   "collective operation timeout: WorkNCCL(SeqNum=2398459, OpType=ALLREDUCE, NumelIn=8652160, "
                   "NumelOut=8652160, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")
    events = analyze_paths([str(_write(tmp_path, text))]).collected.events
    assert {e.kind for e in events} >= {Kind.RAS, Kind.WATCHDOG_TIMEOUT}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ras.txt"
    path.write_text(text)
    return path


def test_ras_all_running_means_no_rank_is_missing(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1730, RAS says OK while one rank's watchdog fires
    text = _RAS.replace("RUNNING  MISMATCH", "RUNNING        OK").split("Warnings")[0] + (
        "\n[rank18]:[E603 17:48:01.005271823 ProcessGroupNCCL.cpp:632] [Rank 18] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=2398459, OpType=ALLREDUCE, NumelIn=8652160, NumelOut=8652160, "
        "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")
    analysis = analyze_paths([str(_write(tmp_path, text))])
    (status,) = [e for e in analysis.collected.events if e.kind is Kind.RAS]
    assert status.data["errors"] == "OK" and status.data["ranks_per_comm"] == 32
    top_hypothesis = analysis.diagnosis.hypotheses[0]
    assert top_hypothesis.category is Category.UNEXPLAINED_TIMEOUT and "every rank launched" in top_hypothesis.what
    assert Category.LAGGING_RANK not in {h.category for h in analysis.diagnosis.hypotheses}


def test_negative_without_ras_the_missing_ranks_are_suspects(tmp_path: Path) -> None:
    text = ("[rank18]:[E603 17:48:01.005271823 ProcessGroupNCCL.cpp:632] [Rank 18] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=2398459, OpType=ALLREDUCE, NumelIn=8652160, NumelOut=8652160, "
            "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")
    hypotheses = diagnose(tmp_path, text).hypotheses
    # the timeout is unexplained, and the ranks not in the paste are where to look
    assert hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT and "ranks 0-17" in hypotheses[0].fix
    assert Category.LAGGING_RANK in {h.category for h in hypotheses}


# --- formats upstream prints that were listed as not read (docs/formats.md) ------------------------------------------

def test_nccl_ib_gin_completion_error(tmp_path: Path) -> None:
    text = ("[2026-02-03 09:15:40] gpu-a07:51234:51390 [3] transport/net_ib/gin.cc:522 NCCL WARN NET/IB/GIN: Got "
            "completion from peer 10.0.1.23<34696> with status=12 opcode=0 len=0 vendor err 129 (Send) hca mlx5_3")
    (event,) = [e for e in events_of(text) if e.kind is Kind.IB_COMPLETION_ERROR]
    assert event.data["status"] == 12 and event.data["hca"] == "mlx5_3"


def test_nccl_connect_retries_exceeded_is_an_unreachable_peer(tmp_path: Path) -> None:
    text = "gpu-g04:5561:5630 [0] misc/socket.cc:463 NCCL WARN socketStartConnect: exceeded retries (20000)"
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.PEER_UNREACHABLE and hypothesis.culprit_hosts == ("gpu-g04",)


def test_nccl_ras_version_mismatch_with_a_peer(tmp_path: Path) -> None:
    text = ("[2025-09-01 12:00:00] gpu-k02:9921:9999 [1] ras/ras.cc:415 NCCL WARN NCCL version mismatch with remote "
            "peer 10.0.0.3<51234> (local: 2.27.7, remote 2.26.2)")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.NCCL_VERSION_MISMATCH
    assert "2.26.2" in hypothesis.title and "2.27.7" in hypothesis.title


def test_prrte_wraps_the_signal_onto_the_next_line(tmp_path: Path) -> None:
    text = "prterun noticed that process rank 3 with PID 19981 on node gpu-b07 exited on\nsignal 9 (Killed).\n"
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_KILLED and hypothesis.culprit_ranks == (3,)
    assert hypothesis.culprit_hosts == ("gpu-b07",)


@pytest.mark.parametrize("line", [
    "[2023-07-20 15:45:13,982] [INFO] [launch.py:338:sigkill_handler] Main process received SIGTERM, exiting",
    "WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers",
    # 2.3+ (real: pytorch/pytorch#114097)
    "W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/agent/server/api.py:688] Received "
    "Signals.SIGTERM death signal, shutting down workers",
])
def test_a_launcher_stopped_from_outside(tmp_path: Path, line: str) -> None:
    # its workers were killed from outside (A025), not by an error of theirs
    hypothesis = top(diagnose(tmp_path, line))
    assert hypothesis.category is Category.RANK_KILLED and "ended from outside" in hypothesis.title
    assert "SIGTERM" in hypothesis.title or "SIGHUP" in hypothesis.title  # torchrun's 1 is SIGHUP's number


# --- Horovod's stall inspector (real: horovod/horovod#530, #1012, #2107, #336, #2564) ------------------------------

_STALL = ("WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and "
          "are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are "
          "trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause "
          "deadlock. ")


@pytest.mark.parametrize(("text", "culprits"), [
    (_STALL + "Stalled ops: allreduce.conv1.weight [ready ranks: 5, 1, 4, 7, 2, 3], allreduce.bn1.weight "
     "[ready ranks: 5, 1, 4, 7, 2, 3]", (0, 6)),  # up to 0.15: the ranks that did submit
    ("[1,0]<stderr>:Stalled ops:HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]\n"
     "[1,0]<stderr>:[2019-04-13 13:56:31.861765: W horovod/common/operations.cc:588] HorovodBroadcast_dense_1_kernel_0 "
     "[missing ranks: 1]", (1,)),  # 0.16-0.19
    (_STALL + "\nMissing ranks:\n1: [DistributedGradientTape_Allreduce/cond_163/HorovodAllreduce_AddN_103_0, "
     "DistributedGradientTape_Allreduce/cond_164/HorovodAllreduce_x_0]\n", (1,)),  # 0.20+
    ("3: [global_tensor_horovod_sum_have_data/HorovodAllreduce_globals_horovod_have_more_data_placeholder_0]", (3,)),
])
def test_horovod_stall_inspector_names_the_missing_ranks(tmp_path: Path, text: str, culprits: tuple) -> None:
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == culprits


def test_horovod_ranks_submitting_other_tensors_is_a_desync(tmp_path: Path) -> None:
    text = _STALL + ("Stalled ops: HorovodAllreduce_loss_Mean_0 [ready ranks: 3], HorovodAllreduce_grad_a_0 [ready "
                     "ranks: 2, 0, 1], HorovodAllreduce_grad_b_0 [ready ranks: 2, 0, 1]")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.COLLECTIVE_DESYNC and hypothesis.culprit_ranks == (3,)


# --- configuration found in the errors ---------------------------------------------------------------------------

def test_the_store_host_name_does_not_resolve(tmp_path: Path) -> None:
    # real: kubeflow/pytorch-operator#125, the worker pod started before the master's service existed
    text = """Traceback (most recent call last):
  File "/root/.local/lib/python3.7/site-packages/torch/distributed/distributed_c10d.py", line 354, in init_process_group
    store, rank, world_size = next(rendezvous(url))
  File "/root/.local/lib/python3.7/site-packages/torch/distributed/rendezvous.py", line 143, in _env_rendezvous_handler
    store = TCPStore(master_addr, master_port, start_daemon)
ValueError: host not found: Name or service not known
"""
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.PEER_UNREACHABLE and "host not found" in hypothesis.title


def test_negative_a_name_resolution_error_elsewhere_is_not_the_store(tmp_path: Path) -> None:
    text = """Traceback (most recent call last):
  File "/venv/lib/python3.10/site-packages/huggingface_hub/file_download.py", line 1374, in hf_hub_download
    r = _request_wrapper(method="HEAD", url=url)
OSError: host not found: Name or service not known
"""
    assert Category.PEER_UNREACHABLE not in {h.category for h in diagnose(tmp_path, text).hypotheses}


@pytest.mark.parametrize("line", ["RuntimeError: CUDA error: invalid device ordinal",
                                  "gpu2:777:777 [0] NCCL WARN Cuda failure 'invalid device ordinal'"])
def test_invalid_device_ordinal_is_the_device_assignment(tmp_path: Path, line: str) -> None:
    # the device assignment, most often the launch's (more processes than visible GPUs: A028, as the labels of such
    # pastes have it since 2026-12-06); not the GPU's fault, and no two ranks on one GPU
    hypothesis = top(diagnose(tmp_path, line))
    assert hypothesis.category is Category.UNRECOGNISED and "does not exist" in hypothesis.title
    assert Category.GPU_ERROR not in {h.category for h in diagnose(tmp_path, line).hypotheses}


def test_more_processes_at_the_store_than_the_group_has(tmp_path: Path) -> None:
    text = ("RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for key: "
            "store_based_barrier_key:1 (world_size=8, worker_count=16, timeout=0:30:00)")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RENDEZVOUS_TIMEOUT and "16 joined a group of 8" in hypothesis.title


def test_the_host_of_a_crashed_rank_from_the_service_thread_of_a_single_host(tmp_path: Path) -> None:
    # real: modelscope/FunASR#2006
    text = ("[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB.\n"
            "w-0:15325:16199 [2] NCCL INFO [Service thread] Connection closed by localRank 2\n"
            "[rank5]:[E ProcessGroupNCCL.cpp:563] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL("
            "SeqNum=15734, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=600000) ran for 600037 milliseconds "
            "before timing out.\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_OUT_OF_MEMORY and hypothesis.culprit_hosts == ("w-0",)
    two_hosts = text + "w-1:15400:16100 [1] NCCL INFO [Service thread] Connection closed by localRank 1\n"
    assert top(diagnose(tmp_path, two_hosts)).culprit_hosts == ()


def test_a_pod_evicted_for_memory(tmp_path: Path) -> None:
    text = ("Status:  Failed\nReason:  Evicted\nMessage:  The node was low on resource: memory. Container pytorch was "
            "using 61435224Ki, which exceeds its request of 0.\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_KILLED and "evicted by the kubelet" in hypothesis.title
    assert "low on memory" in hypothesis.title


@pytest.mark.parametrize(("line", "why"), [
    ("slurmstepd: error: *** JOB 1234 ON node12 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***", "time limit"),
    ("slurmstepd: error: *** STEP 1234.0 ON node12 CANCELLED AT 2024-01-01T00:00:00 ***", "scancel"),
    ("slurmstepd: error: *** JOB 99 ON gpu-a3 CANCELLED AT 2025-05-01T10:00:00 DUE TO PREEMPTION ***", "preemption"),
])
def test_slurm_cancelling_the_job(tmp_path: Path, line: str, why: str) -> None:
    hypothesis = top(diagnose(tmp_path, line))  # the workers were ended from outside (A025)
    assert hypothesis.category is Category.RANK_KILLED and f"({why})" in hypothesis.title
    assert "ended from outside" in hypothesis.title


def test_negative_a_hang_that_ran_into_the_time_limit_is_the_hang(tmp_path: Path) -> None:
    text = ("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL("
            "SeqNum=7, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=600000) ran for 600037 milliseconds before "
            "timing out.\nslurmstepd: error: *** JOB 1234 ON node12 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME "
            "LIMIT ***\n")
    assert top(diagnose(tmp_path, text)).category is Category.UNEXPLAINED_TIMEOUT  # not the cancel that ended it
