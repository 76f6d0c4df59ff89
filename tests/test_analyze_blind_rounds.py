"""Readings added after the seventh and eighth blind harvests (the r10p-r10t and r11u-r11y cases of the real
corpus), one behaviour per test, each with the look-alike it must not catch: launchers that cannot reach a
node, a Ray worker that vanished, NCCL 2.4-2.7's own mismatch check, a timeout pasted only as its status line
or its C++ backtrace, a watchdog timeout's group from its status line, ranks a dump signal shows inside the
collective, a stuck watchdog after a timeout; the store's connect timeout before 1.13, a custom all-reduce
without peer access, a GPU nvidia-smi or the kernel's PCIe reports lost, a closed rendezvous, and srun's exit
codes after the process's own error. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, read
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_ssh_that_cannot_resolve_a_node_is_a_node_the_launcher_cannot_reach(tmp_path: Path) -> None:
    top = diagnose(tmp_path, """
ssh: Could not resolve hostname worker-1.train.default.svc: Name or service not known
--------------------------------------------------------------------------
ORTE was unable to reliably start one or more daemons.
""").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.confidence >= 0.5
    assert top.culprit_hosts == ("worker-1.train.default.svc",)
    assert "could not resolve hostname" in top.title and "ssh" in top.fix


def test_pdsh_and_a_refused_ssh_name_their_hosts(tmp_path: Path) -> None:
    top = diagnose(tmp_path, """
pdsh@node1: node3: ssh exited with exit code 255
ssh: connect to host node2 port 22: No route to host
""").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE
    assert set(top.culprit_hosts) == {"node2", "node3"}


def test_open_mpi_daemons_alone_name_no_host(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "PRTE has lost communication with a remote daemon.").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.confidence < 0.6 and not top.culprit_hosts


def test_negative_ssh_words_in_a_command_line_are_no_launch_failure() -> None:
    assert not [e for e in read("+ ssh node2 'nvidia-smi' && echo ssh-ok\nusing ssh: yes") if
                e.kind is Kind.LAUNCH_UNREACHABLE]


_RAY = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
        "the problem, check the logs for the dead worker. RayTask ID: ff Worker ID: fe Node ID: 20 Worker IP address: "
        "10.0.7.57 Worker port: 10046 Worker PID: 89513 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker "
        "unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) "
        "The process is killed by SIGKILL by OOM killer due to high memory usage.")


def test_a_ray_worker_that_vanished_is_most_often_killed(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _RAY + "\n(TorchTrainer pid=89392) Worker 0 has failed.").hypotheses[0]
    assert top.category is Category.RANK_KILLED and 0.5 <= top.confidence < 0.8
    assert top.culprit_ranks == (0,) and top.culprit_hosts == ("10.0.7.57",)
    alone = diagnose(tmp_path, _RAY).hypotheses[0]
    assert alone.category is Category.RANK_KILLED and not alone.culprit_ranks and "89513" in alone.title


def test_nccl_mismatch_check_is_a_desync_that_points_at_a_rank(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective "
                             "calls at and around rank 39. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to "
                             "see the collective logs").hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and "rank 39" in top.title


def test_gloo_size_check_printed_by_terminate_is_a_desync(tmp_path: Path) -> None:
    top = diagnose(tmp_path, """
terminate called after throwing an instance of 'gloo::EnforceNotMet'
  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. 1046204 vs 1040256
""").hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and "1046204" in top.what


_STATUS = ("[rank7]:[E1129 11:56:57.642513817 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) Rank 7] "
           "Timeout at NCCL work: 28956, last enqueued NCCL work: 28956, last completed NCCL work: 28955.")
_CAUGHT = ("[rank7]:[E1129 11:56:57.600000000 ProcessGroupNCCL.cpp:632] [Rank 7] Watchdog caught collective operation "
           "timeout: WorkNCCL(SeqNum=28956, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
           "600020 milliseconds before timing out.")


def test_a_status_line_alone_is_the_timeout_and_with_its_line_counts_once(tmp_path: Path) -> None:
    alone = analyze_paths([str(_write(tmp_path, _STATUS))])
    top = alone.diagnosis.hypotheses[0]
    # rank 7 timed out; nothing says ranks 0-6 were elsewhere: unexplained, with their logs to read first
    assert top.category is Category.UNEXPLAINED_TIMEOUT and top.affected_ranks == (7,) and "ranks 0-6" in top.what
    assert alone.timeline.ranks[7].outcome == "timed-out"
    both = analyze_paths([str(_write(tmp_path, _CAUGHT + "\n" + _STATUS))])
    assert len([e for e in both.timeline.events if e.kind is Kind.WATCHDOG_TIMEOUT]) == 1


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "both.txt"
    path.write_text(text + "\n")
    return path


_FRAMES = """
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x99 (0x7fe76ab98969 in /usr/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1e1 (0x7fe705ea04e1 in /usr/lib/libtorch_cuda.so)
frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x222 (0x7fe705ea81a2 in /usr/lib/libtorch_cuda.so)
"""


def test_the_watchdogs_backtrace_alone_is_a_timeout_without_a_rank(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _FRAMES).hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT and top.confidence <= 0.35 and not top.culprit_ranks
    with_line = analyze_paths([str(_write(tmp_path, _CAUGHT + _FRAMES))])
    timeouts = [e for e in with_line.timeline.events if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert [e.origin.rank for e in timeouts] == [7]  # the frames add nothing to the line they follow


def test_negative_other_frames_are_not_errors(tmp_path: Path) -> None:
    assert not read("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7e in libc10.so)")


def test_a_timeout_line_without_its_group_takes_the_group_of_its_status_line(tmp_path: Path) -> None:
    diagnosis = diagnose(tmp_path, """
[rank0]:[E822 16:31:16.131931664 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5730, OpType=BROADCAST, NumelIn=3612672, NumelOut=3612672, Timeout(ms)=600000) ran for 600009 milliseconds before timing out.
[rank0]:[E822 16:31:16.132547721 ProcessGroupNCCL.cpp:2271] [PG ID 4 PG GUID 67 Rank 0]  failure detected by watchdog at work sequence id: 5730 PG status: last enqueued work: 6464, last completed work: 5729
[rank3]:[E822 16:31:16.135435629 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5729, OpType=BROADCAST, NumelIn=3612672, NumelOut=3612672, Timeout(ms)=600000) ran for 600008 milliseconds before timing out.
[rank3]:[E822 16:31:16.137270546 ProcessGroupNCCL.cpp:2271] [PG ID 4 PG GUID 67 Rank 3]  failure detected by watchdog at work sequence id: 5729 PG status: last enqueued work: 6464, last completed work: 5728
""")
    # both ranks enqueued up to 6464 in group 4: rank 3 is stuck in 5729, not short of 5730
    assert not any(3 in h.culprit_ranks for h in diagnosis.hypotheses)
    assert diagnosis.root_cause is None


def test_a_rank_a_dump_signal_shows_inside_the_collective_is_not_late(tmp_path: Path) -> None:
    diagnosis = diagnose(tmp_path, """
[rank2]:[E901 05:20:03.118859045 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal due to a collective timeout from  rank 6 and we will try our best to dump the debug info. Last enqueued NCCL work: 460631, last completed NCCL work: 460630.This is most likely caused by incorrect usages of collectives.
[rank7]:[E901 05:20:03.123992144 ProcessGroupNCCL.cpp:632] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=460631, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
""")
    named = {r for h in diagnosis.hypotheses for r in h.culprit_ranks}
    assert not named & {2, 6, 7}, [h.title for h in diagnosis.hypotheses]


def test_late_rank_negative_a_silent_rank_behind_is_still_named(tmp_path: Path) -> None:
    """The look-alike: a rank whose status shows it short of the collective stays the late one."""
    diagnosis = diagnose(tmp_path, """
[rank2]:[E901 05:20:03.118859045 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal due to a collective timeout from  rank 1 and we will try our best to dump the debug info. Last enqueued NCCL work: 460630, last completed NCCL work: 460630.
[rank1]:[E901 05:20:03.123992144 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=460631, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
""")
    assert diagnosis.hypotheses[0].culprit_ranks == (2,)


_STUCK = ("[rank7]:[E626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 7] "
          "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
          "collectives.")
_TIMEOUT_0506 = ("[rank2]:[E626 05:06:30.929096625 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=120049, OpType=_ALLGATHER_BASE, NumelIn=16384000, "
                 "NumelOut=131072000, Timeout(ms)=1800000) ran for 1800065 milliseconds before timing out.")


def test_a_watchdog_stuck_after_a_timeout_is_its_consequence(tmp_path: Path) -> None:
    diagnosis = diagnose(tmp_path, _STUCK + "\n" + _TIMEOUT_0506)
    stuck = [h for h in diagnosis.hypotheses if h.category is Category.WATCHDOG_STUCK]
    assert stuck and stuck[0].confidence < 0.3 and not stuck[0].root_cause
    assert diagnosis.hypotheses[0].category is not Category.WATCHDOG_STUCK


def test_negative_a_watchdog_stuck_before_the_timeouts_stays_the_finding(tmp_path: Path) -> None:
    early = _STUCK.replace("05:14:36", "04:50:00")  # stuck since 04:42, the timeout came at 05:06
    diagnosis = diagnose(tmp_path, early + "\n" + _TIMEOUT_0506)
    stuck = [h for h in diagnosis.hypotheses if h.category is Category.WATCHDOG_STUCK]
    assert stuck and stuck[0].confidence >= 0.6


def test_the_stores_connect_timeout_before_1_13_is_a_store_nobody_reaches(tmp_path: Path) -> None:
    top = diagnose(tmp_path, """
Traceback (most recent call last):
  File "/env/lib/python3.9/site-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 155, in _create_tcp_store
    store = TCPStore(
RuntimeError: connect() timed out. Original timeout was 60000 ms.
""").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "store" in top.title


_CUSTOM_AR = ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'peer access is not supported between "
              "these two devices'")


def test_a_custom_all_reduce_without_peer_access_says_to_disable_it(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _CUSTOM_AR + "\n" + _CUSTOM_AR).hypotheses[0]
    assert top.category is Category.PEER_ACCESS and "--disable-custom-all-reduce" in (top.fix or "")


def test_nccls_own_peer_access_failure_is_one_event_with_nccls_fix(tmp_path: Path) -> None:
    line = ("node1:123:456 [1] transport/p2p.cc:200 NCCL WARN Cuda failure 217 'peer access is not supported between "
            "these two devices'")
    assert len([e for e in read(line) if e.kind is Kind.PEER_ACCESS]) == 1
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.PEER_ACCESS and "custom" not in (top.fix or "")


def test_a_gpu_nvidia_smi_or_the_kernel_lost_is_a_gpu_fault(tmp_path: Path) -> None:
    smi = diagnose(tmp_path, "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error").hypotheses[0]
    assert smi.category is Category.GPU_ERROR
    aer = diagnose(tmp_path, """
[  +0.000844] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)
[  +0.000008] pcieport 0000:00:03.0: AER: device recovery failed
""").hypotheses[0]
    assert aer.category is Category.GPU_ERROR and "PCIe" in aer.title


def test_negative_corrected_pcie_errors_are_not_a_gpu_fault() -> None:
    lines = """
[  +0.000316] pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0
[  +0.000005] pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)
"""
    assert not [e for e in read(lines) if e.kind is Kind.GPU_ERROR]


_CLOSED = """
    raise RendezvousClosedError()
torch.distributed.elastic.rendezvous.api.RendezvousClosedError
srun: error: cdr2596: task 1: Exited with exit code 1
srun: error: cdr2598: task 2: Exited with exit code 1
"""


def test_a_closed_rendezvous_is_read_before_the_exit_codes_it_caused(tmp_path: Path) -> None:
    diagnosis = diagnose(tmp_path, _CLOSED)
    top = diagnosis.hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "closed" in top.title
    assert not [h for h in diagnosis.hypotheses if h.category is Category.RANK_CRASHED]


def test_negative_srun_exit_codes_alone_are_a_worker_that_died(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "srun: error: cdr2596: task 1: Exited with exit code 1").hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "cdr2596" in top.title


# --- the ninth round ------------------------------------------------------------------------------------------

def _retry(n: int) -> str:
    return (f"zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying "
            f"({n}/34) after sleep for {n * 100} msec")


def test_nccls_last_connect_retry_is_a_peer_it_cannot_reach(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "\n".join(_retry(n) for n in range(30, 35))).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "No route to host" in top.title
    assert "zgiot" in top.title


def test_negative_connect_retries_still_under_way_are_no_failure() -> None:
    # the first half of the tries: a peer not listening yet at startup (past it: tests/test_analyze_blind_rounds_9.py)
    assert not [e for e in read("\n".join(_retry(n) for n in range(1, 17))) if e.kind is Kind.NCCL_CONNECT_FAILED]


def test_ranks_a_failure_table_shows_ended_by_sigbus_are_shared_memory(tmp_path: Path) -> None:
    top = diagnose(tmp_path, """
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
finetune.py FAILED
Failures:
[1]:
  time      : 2023-04-14_06:35:35
  host      : 32a68c302449
  rank      : 1 (local_rank: 1)
  exitcode  : -7 (pid: 3112)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 3112
Root Cause (first observed failure):
[0]:
  time      : 2023-04-14_06:35:35
  host      : 32a68c302449
  rank      : 0 (local_rank: 0)
  exitcode  : -7 (pid: 3111)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 3111
""").hypotheses[0]
    assert top.category is Category.SHM_EXHAUSTED and set(top.culprit_ranks) == {0, 1}
    assert "shm-size" in (top.fix or "")


_STOPS = "\n".join(f"[2023-12-22 07:10:38,757] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending "
                   f"process {pid} closing signal SIGTERM" for pid in (86503, 86504, 86506))


def test_a_workers_own_error_then_the_launcher_stopping_the_others_is_that_worker(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "RuntimeError: [enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: can't "
                             "allocate memory: you tried to allocate 268435456 bytes. Error code 12 (Cannot allocate "
                             "memory)\n" + _STOPS).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "host memory" in top.title and "3 workers" in top.title


def test_negative_the_agents_own_rendezvous_error_is_not_a_workers(tmp_path: Path) -> None:
    diagnosis = diagnose(tmp_path, """
    raise RendezvousClosedError()
torch.distributed.elastic.rendezvous.api.RendezvousClosedError
""" + _STOPS)
    assert not [h for h in diagnosis.hypotheses if h.category is Category.RANK_CRASHED]


def test_a_shell_prompt_names_the_host_of_the_output_after_it(tmp_path: Path) -> None:
    diagnosis = diagnose(tmp_path, """
zeyer@cn-234 ~ % nvidia-smi
Unable to determine the device handle for GPU0000:03:00.0: Unknown Error
""")
    assert diagnosis.hypotheses[0].culprit_hosts == ("cn-234",)
    events = read("[user@gpu01 work]$ nvidia-smi\nGPU 00000000:3B:00.0: GPU is lost.  Reboot the system\n\n"
                  "RuntimeError: CUDA error: an illegal memory access was encountered\n"
                  "root@node7:~# dmesg\nNVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.")
    hosts = [e.origin.host for e in events if e.kind is Kind.GPU_ERROR]
    assert hosts == ["gpu01", None, "node7"]  # a blank line ends the first prompt's output


def test_negative_addresses_and_pdsh_are_not_prompts() -> None:
    events = read("pdsh@node1: node2: ssh exited with exit code 255\n"
                  "mail admin@cluster.example.com # about it\nRuntimeError: CUDA error: unspecified launch failure")
    assert [e.origin.host for e in events if e.kind is Kind.GPU_ERROR] == [None]


# --- the tenth round ------------------------------------------------------------------------------------------

def test_nccls_shm_error_repeated_as_last_error_wins_over_its_cuda_wrapping(tmp_path: Path) -> None:
    diagnosis = diagnose(tmp_path, """
(VllmWorkerProcess pid=3985) ERROR 01-15 02:47:32 multiproc_worker_utils.py:226] torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
(VllmWorkerProcess pid=3985) ERROR 01-15 02:47:32 multiproc_worker_utils.py:226] ncclUnhandledCudaError: Call to CUDA function failed.
(VllmWorkerProcess pid=3985) ERROR 01-15 02:47:32 multiproc_worker_utils.py:226] Last error:
(VllmWorkerProcess pid=3985) ERROR 01-15 02:47:32 multiproc_worker_utils.py:226] Error while creating shared memory segment /dev/shm/nccl-g0wGsu (size 9637888)
""")
    assert diagnosis.hypotheses[0].category is Category.SHM_EXHAUSTED


def test_negative_an_unhandled_cuda_error_alone_stays_the_gpu(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, unhandled cuda "
                             "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5").hypotheses[0]
    assert top.category is Category.GPU_ERROR


def test_gloo_without_an_interface_or_a_host_name_cannot_start(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "RuntimeError: [enforce fail at C:\\\\cb\\\\pytorch_1000000000000\\\\work\\\\third_party\\\\gloo\\\\"
                             "gloo\\\\transport\\\\uv\\\\device.cc:153] rp != nullptr. GlooDeviceFactory::makeUVDevice(): "
                             "interface or hostname can't be empty").hypotheses[0]
    assert top.category is Category.INTERFACE_MISSING and "None" not in top.title and "MASTER_ADDR" in (top.fix or "")


# --- the eleventh round ---------------------------------------------------------------------------------------

def test_open_mpis_signal_handler_names_the_process_that_died(tmp_path: Path) -> None:
    top = diagnose(tmp_path, """
free(): corrupted unsorted chunks
[rack1-93-slot7:186363] *** Process received signal ***
[rack1-93-slot7:186363] Signal: Aborted (6)
[rack1-93-slot7:186363] Signal code:  (-6)
""").hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_hosts == ("rack1-93-slot7",)
    assert "186363" in top.title and "SIGABRT" in top.title


def test_a_signal_handler_cut_before_the_signals_name_still_names_the_process(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "[rtptest1621:405884] *** Process received signal ***").hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_hosts == ("rtptest1621",)


def test_ucxs_segfault_without_a_rank_is_that_process_crashing(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "[n125-011-039:288505:0:296459] Caught signal 11 (Segmentation fault: address not "
                             "mapped to object at address 0x48)").hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "SIGSEGV" in top.title and "n125-011-039" in top.title


def test_negative_a_handler_logging_a_polite_signal_is_no_death() -> None:
    assert not [e for e in read("[node1:123] Signal: Terminated (15)\n[node1:123] Signal code: User (0)")
                if e.kind is Kind.FATAL_SIGNAL]


def test_gloo_pairing_ipv4_with_ipv6_is_an_address_the_hosts_do_not_share(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "[rank0]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
                             "device.cc:208] ss1.ss_family == ss2.ss_family. 2 vs 10").hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and "IPv4" in top.title and top.culprit_ranks == (0,)


def test_a_dump_of_a_process_blocked_in_send_is_not_silent(tmp_path: Path) -> None:
    top = diagnose(tmp_path, """
Process 3438121: sglang::scheduler_DP1_TP1_EP1_PP0
Python v3.12.11 (/usr/bin/python3.12)

Thread 3438121 (idle): "MainThread"
    send (torch/distributed/distributed_c10d.py:2487)
    wrapper (torch/distributed/c10d_logger.py:81)
    send_object (distributed/parallel_state.py:886)
    event_loop_pp_disagg_prefill (prefill.py:819)
""").hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.confidence <= 0.3 and "send" in top.title
    assert "matching receive" in top.title


# --- the twelfth round ----------------------------------------------------------------------------------------

def test_nccls_own_bind_in_use_is_a_port_taken_on_that_host(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "gpu2:1653:1695 [0] include/socket.h:347 NCCL WARN Call to bind failed : Address "
                             "already in use").hypotheses[0]
    assert top.category is Category.PORT_IN_USE and top.culprit_hosts == ("gpu2",) and "NCCL" in top.title


def test_pdsh_ssh_255_is_a_node_not_reached_and_another_code_is_its_process_failing(tmp_path: Path) -> None:
    failed = diagnose(tmp_path, "host-1: /usr/bin/python: No module named deepspeed.pt\n"
                                "pdsh@id: host-1: ssh exited with exit code 1").hypotheses[0]
    assert failed.category is Category.RANK_CRASHED and failed.culprit_hosts == ("host-1",)
    unreached = diagnose(tmp_path, "pdsh@id: host-1: ssh exited with exit code 255").hypotheses[0]
    assert unreached.category is Category.PEER_UNREACHABLE and unreached.culprit_hosts == ("host-1",)


def test_deepspeeds_runner_names_the_host_it_could_not_reach(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "RuntimeError: Using hostfile at /home/u/hostfile but host=gadi-gpu-v100-0011 was not "
                             "reachable via ssh. If you are running with a single node please remove /home/u/hostfile "
                             "or setup passwordless ssh.").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.culprit_hosts == ("gadi-gpu-v100-0011",)


def test_nccl_tests_unhandled_cuda_error_is_the_gpu(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO "
                             "for details) / '").hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_hosts == ("HCA-128",)


def test_pytorchs_aftermath_lines_are_not_listed_unexplained_once_a_hypothesis_explains(tmp_path: Path) -> None:
    aftermath = ("[rank7]:[E1129 11:56:57.642537731 ProcessGroupNCCL.cpp:630] [Rank 7] Some NCCL operations have failed "
                 "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run "
                 "on corrupted/incomplete data.")
    explained = diagnose(tmp_path, _STATUS + "\n" + aftermath)
    assert explained.hypotheses and not [e for e in explained.unexplained if "Some NCCL operations" in e.text]
    alone = diagnose(tmp_path, aftermath)  # nothing else: still quoted, never silent
    assert alone.hypotheses and alone.hypotheses[0].category is Category.UNRECOGNISED
