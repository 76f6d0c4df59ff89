"""Readings added in the session of the seventy-seventh blind harvest (the r80* cases of the real corpus) and of a
sweep over the messages of NCCL's and gloo's sources, one behaviour per test, each with the look-alike it must not
catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_PAIR = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/{}] {}"


@pytest.mark.parametrize(("where", "message", "addr"), [
    ("buffer.cc:76", "Read timeout [10.0.0.2]:32444", "10.0.0.2"),
    ("pair.cc:316", "Write timeout [10.0.0.7]:41235", "10.0.0.7"),
])
def test_a_gloo_pairs_own_timeout_names_the_process_it_waited_for(tmp_path: Path, where: str, message: str,
                                                                   addr: str) -> None:
    line = _PAIR.format(where, message)
    assert one(line, Kind.GLOO_TIMEOUT).data["peer_addr"] == addr
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.LAGGING_RANK and addr in top.title and top.culprit_hosts == (addr,), top
    # on one host (the loopback address) the address is named, not taken for a host
    local = diagnose(tmp_path, _PAIR.format(where, "Read timeout [127.0.0.1]:32444") + "\n").hypotheses[0]
    assert local.category is Category.LAGGING_RANK and "127.0.0.1" in local.title and not local.culprit_hosts


@pytest.mark.parametrize("message", ["Socket closed [10.0.0.2]:41235", "Socket unexpectedly closed [10.0.0.2]:41235",
                                     "writev [10.0.0.2]:41235: Broken pipe",
                                     "writev [10.0.0.2]:41235: Connection reset by peer"])
def test_a_gloo_pair_whose_peer_went_away_in_its_other_words(tmp_path: Path, message: str) -> None:
    line = _PAIR.format("pair.cc:812", message)
    assert one(line, Kind.PEER_CLOSED).data["peer_addr"] == "10.0.0.2"
    assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.RANK_CRASHED
    # a write that failed for another reason is no peer gone away
    other = _PAIR.format("pair.cc:339", "writev [10.0.0.2]:41235: Bad address")
    assert not [e for e in events_of(other) if e.kind is Kind.PEER_CLOSED]


def test_a_gloo_pairs_connect_timeout_is_a_peer_that_could_not_be_reached(tmp_path: Path) -> None:
    line = _PAIR.format("pair.cc:900", "Connect timeout [10.0.0.2]:41235")
    assert one(line, Kind.GLOO_CONNECT_FAILED).data["remote_addr"] == "10.0.0.2"
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "10.0.0.2" in top.title, top.title


@pytest.mark.parametrize("line", [
    "node1:12345:12400 [0] include/nvmlwrap.h:30 NCCL WARN NVML failure 'Driver/library version mismatch'",
    "node1:12345:12400 [0] misc/nvmlwrap.cc:60 NCCL WARN nvmlInit_v2() failed: Driver/library version mismatch",
    "Failed to initialize NVML: Driver/library version mismatch",
])
def test_nvmls_driver_library_mismatch_is_a_driver_updated_without_a_reboot(tmp_path: Path, line: str) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.GPU_ERROR and "without a reboot" in top.title, top.title



def test_an_abort_after_glooss_size_check_is_the_checks_end_not_a_crash_of_its_own(tmp_path: Path) -> None:
    paste = ("terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
             "  what(): [enforce fail at .../gloo/transport/tcp/pair.cc:456]\n"
             "           op.preamble.length <= op.nbytes. 4368 vs 2832.\n"
             "           Received data size doesn't match expected size.\n"
             "Fatal Python error: Aborted\n")
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.COLLECTIVE_DESYNC
    # an abort with no check above it stays a crash
    alone = diagnose(tmp_path, "Fatal Python error: Aborted\n").hypotheses[0]
    assert alone.category is Category.RANK_CRASHED, alone.title


@pytest.mark.parametrize("paste", [
    "r0 | MPI_Allreduce returned error code 15: b'MPI_ERR_TRUNCATE: message truncated' - aborting\n",
    "MPI_Waitany, MPI error 782: Message truncated, error stack:\n"
    "Message from rank 3 and tag 1 truncated; 1020000 bytes received but buffer size is 48\n",
])
def test_mpis_truncated_receive_is_ranks_whose_calls_disagree(tmp_path: Path, paste: str) -> None:
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.COLLECTIVE_DESYNC


def test_nccls_bootstrap_message_truncated_is_not_read_as_a_desync(tmp_path: Path) -> None:
    line = ("compute-2:4827:6900 [4] bootstrap.cc:77 NCCL WARN Message truncated : received 256 bytes instead of 4\n")
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.UNRECOGNISED


_SLOTS = ("There are not enough slots available in the system to satisfy the 2 slots\n"
          "that were requested by the application:\n  python\n\n"
          "Either request fewer slots for your application, or make more slots available\nfor use.\n")


@pytest.mark.parametrize(("paste", "words"), [
    (_SLOTS, "refused to start 2 processes"),
    ("There are not enough slots available in the system to satisfy the 16\nslots that were requested by the "
     "application:\n", "refused to start 16 processes"),
    ("There are not enough slots on the nodes in your allocation to satisfy your request to launch on a 8 "
     "process-per-node basis - only 4 slots were available on node1\n", "refused to start the processes"),
    ("The requested number of processes exceeds the allocated\nnumber of slots.\n", "refused to start the processes"),
    ("mpirun was unable to find the specified executable file, and therefore\ndid not launch the job.\n",
     "could not start the program"),
    ("mpirun was unable to launch the specified application as it could not access\nor execute an executable:\n",
     "could not start the program"),
    ("prterun was unable to launch the specified application as it lacked\npermissions to execute an executable:\n",
     "could not start the program"),
])
def test_open_mpi_refusing_to_start_the_job_says_why(tmp_path: Path, paste: str, words: str) -> None:
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and words in top.title and top.confidence >= 0.75, top.title
    assert top.fix


def test_open_mpis_two_settings_that_exclude_each_other_are_a_lead(tmp_path: Path) -> None:
    paste = ("Two mutually-exclusive MCA variables were specified.  This can result\n"
             "in undefined behavior, such as ignoring the components that the MCA\n"
             "variables are supposed to affect.\n\n  1st MCA variable: btl_tcp_if_include\n"
             "    Source of value: environment\n  2nd MCA variable: btl_tcp_if_exclude\n"
             "    Source of value: file (/usr/local/etc/openmpi-mca-params.conf:61)\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "exclude each other" in top.title and top.confidence < 0.5
    # Open MPI's note that the slots were enough is no error
    assert not diagnose(tmp_path, "Using 4 slots on node1\n").hypotheses


_BAR = "     46/300       9.2G      1.329      2093        640:  78%|███████▊  | 126/162 [00:59<00:16,  2.14it/s]"


@pytest.mark.parametrize("glued", ["[rank1]: Traceback (most recent call last):", "Traceback (most recent call last):"])
def test_a_traceback_glued_behind_a_progress_bars_redraw_is_read_as_a_traceback(tmp_path: Path, glued: str) -> None:
    frames = ("[rank1]:   File \"/src/ultralytics/utils/tal.py\", line 139, in get_pos_mask\n"
              "[rank1]:     mask_in_gts = self.select_candidates_in_gts(anc_points, gt_bboxes)\n")
    if not glued.startswith("[rank1]"):
        frames = frames.replace("[rank1]:", "")
    top = diagnose(tmp_path, _BAR + glued + "\n" + frames).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "tal.py" in top.title, top.title
    if glued.startswith("[rank1]"):
        assert top.culprit_ranks == (1,)
    # a bar and another writer's warning on one line stay together (the rules read the bar beside the wait)
    warning = _BAR + "[rank1]:[W516 14:34:56.853 socket.cpp:464] [c10d] waitForInput: poll returned 0, likely a timeout"
    assert any(e.kind is Kind.PROGRESS_BAR for e in events_of(warning))


def test_nccls_cuda_failure_711_is_the_limit_of_peers_not_a_faulty_gpu(tmp_path: Path) -> None:
    line = ("[2025-06-20 02:14:03] ubuntu:33207:33207 [0] allocator.cc:79 NCCL WARN Cuda failure 711 'peer mapping "
            "resources exhausted'\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.PEER_ACCESS and "limit of peers" in top.title, top.title
    # another CUDA failure of NCCL's stays the GPU's
    other = line.replace("711 'peer mapping resources exhausted'", "700 'an illegal memory access was encountered'")
    assert diagnose(tmp_path, other).hypotheses[0].category is Category.GPU_ERROR


_STALL = ("[1,0]<stderr>:[2021-02-10 17:39:53.403710: W horovod/common/stall_inspector.cc:105] One or more tensors "
          "were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of "
          "ranks for more than 60 seconds.\n[1,0]<stderr>:Missing ranks:\n")


def test_horovod_ranks_that_each_lack_a_tensor_the_other_submitted_are_a_desync(tmp_path: Path) -> None:
    rows = ("[1,0]<stderr>:0: [broadcast.noname.3765, broadcast.noname.3873]\n[1,0]<stderr>:1: [broadcast.noname.3873]\n"
            "[1,0]<stderr>:2: [broadcast.noname.3765]\n[1,0]<stderr>:3: [broadcast.noname.3765]\n")
    top = diagnose(tmp_path, _STALL + rows).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and "rank 0 lacks broadcast.noname.3765 and 1 more" in top.title
    # a rank that lacks everything the others submitted is late, not in another collective
    late = "[1,0]<stderr>:2: [allreduce.grad.0, allreduce.grad.1]\n[1,0]<stderr>:3: [allreduce.grad.1]\n"
    top = diagnose(tmp_path, _STALL + late).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (2, 3), top.title
    # a row cut before its ``]`` loses its last name (which the cut may have shortened into another tensor's)
    cut = "[1,0]<stderr>:2: [allreduce.grad.0, allreduce.gr\n[1,0]<stderr>:3: [allreduce.grad.0, allreduce.grad.1]\n"
    assert diagnose(tmp_path, _STALL + cut).hypotheses[0].category is Category.LAGGING_RANK


def test_tensorflows_cuda_diagnostics_name_the_host_of_the_rank_whose_gpu_would_not_start(tmp_path: Path) -> None:
    paste = ("[1,1]<stderr>:2018-07-24 15:55:16.245577: E tensorflow/stream_executor/cuda/cuda_driver.cc:397] failed "
             "call to cuInit: CUDA_ERROR_UNKNOWN\n"
             "[1,1]<stderr>:2018-07-24 15:55:16.245601: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:163] "
             "retrieving CUDA diagnostic information for host: ywlhk13\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (1,) and top.culprit_hosts == ("ywlhk13",)
    # the host alone, without a tag, is a fact of that process only
    assert one(paste.splitlines()[1].split("<stderr>:", 1)[1], Kind.PROCESS_MAP).origin.rank is None


@pytest.mark.parametrize("line", [
    "tensorflow.python.framework.errors_impl.FailedPreconditionError: Mismatched ALLREDUCE CPU/GPU device selection: "
    "One rank specified device GPU, but another rank specified device CPU.",
    "RuntimeError: Mismatched allreduce tensor shapes: One rank sent a tensor of rank 2, but another rank sent a tensor "
    "of rank 1.",
    "Mismatched data types: One rank had type float32, but another rank had type float16.",
    "RuntimeError: Mismatched MPI operations: One rank did an allreduce, but another rank did an allgather.",
])
def test_horovods_coordinator_finding_the_ranks_requests_different_is_a_desync(tmp_path: Path, line: str) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC, top.title
    assert not top.culprit_ranks  # "a tensor of rank 2" is its number of dimensions, not a rank


def test_horovod_shut_down_on_the_others_is_another_rank_that_failed_first(tmp_path: Path) -> None:
    line = ("RuntimeError: Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt "
            "to allreduce, allgather or broadcast a tensor after one of the ranks finished execution.\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "Horovod shut down" in top.title, top.title
    # a rank named in an error's words is still taken as the one it is about
    named = diagnose(tmp_path, "RuntimeError: NCCL communicator was aborted on rank 3.\n").hypotheses[0]
    assert named.culprit_ranks == (3,), named.title


@pytest.mark.parametrize("line", [
    "2023-Aug-01 16:12:43.0204 332066:332417 [18] bootstrap.cc:106 CCOM WARN Call to accept failed : Too many open files",
    "node1:12345:12400 [0] misc/socket.cc:600 NCCL WARN socketTryAccept: exceeded error retry count (16), Too many open "
    "files",
    "OSError: [Errno 24] Too many open files: '/dev/shm/torch_123_456'",
])
def test_a_process_out_of_file_descriptors_says_to_raise_the_open_files_limit(tmp_path: Path, line: str) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "file descriptors" in top.title, top.title
    assert top.fix and "ulimit -n" in top.fix


@pytest.mark.parametrize("line", ["worker-1: bash: line 0: cd: /home/user/project: No such file or directory",
                                  "worker-1: /usr/bin/python3: No module named deepspeed",
                                  "/bin/bash: line 1: /usr/sbin/sshd: No such file or directory"])
def test_a_path_or_module_missing_on_a_node_is_never_silence(tmp_path: Path, line: str) -> None:
    assert [e.kind for e in events_of(line)] == [Kind.ERROR_LINE], line
    assert diagnose(tmp_path, line + "\n").hypotheses
    # gdb's note for a frame whose source it lacks is no error
    gdb = "78\t../sysdeps/unix/syscall-template.S: No such file or directory."
    assert not events_of(gdb) and not diagnose(tmp_path, gdb + "\n").hypotheses


_ABORT = "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\n"


@pytest.mark.parametrize("tail", ["with errorcode 1.\n\nNOTE: invoking MPI_ABORT causes Open MPI to kill all MPI "
                                  "processes.\n", "  Proc:       [[60146,1],3]\n  Errorcode:  1\n"])
def test_open_mpis_mpi_abort_notice_names_the_rank_that_called_it(tmp_path: Path, tail: str) -> None:
    top = diagnose(tmp_path, _ABORT + tail).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,), top.title
    # cut after its first line: quoted, never silence; a communicator's own rank is not the job's
    assert diagnose(tmp_path, _ABORT).hypotheses
    other = "MPI_ABORT was invoked on rank 0 in communicator MPI COMMUNICATOR 4 CREATE FROM 0\nwith errorcode 15.\n"
    assert not diagnose(tmp_path, other).hypotheses[0].culprit_ranks


def test_an_abort_after_the_processs_own_error_is_that_errors_end(tmp_path: Path) -> None:
    paste = ("r0 | MPI_Allreduce returned error code 15: b'MPI_ERR_TRUNCATE: message truncated' - aborting\n"
             "MPI_ABORT was invoked on rank 0 in communicator MPI COMMUNICATOR 4 CREATE FROM 0\nwith errorcode 15.\n")
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.COLLECTIVE_DESYNC


@pytest.mark.parametrize(("paste", "category", "words"), [
    ("It appears as if there is not enough space for /dev/shm/vader_segment.node1.0 (the shared-memory backing\n"
     "file). It is likely that your MPI job will now either abort or experience\n", Category.SHM_EXHAUSTED, "shared"),
    ('The rsh PLS component was not able to find the executable "orted" in\nyour PATH or in the directory where\n',
     Category.UNRECOGNISED, "daemon"),
    ("A critical communication path was lost to:\n\n  My name:      [[5001,0],0]\n", Category.UNRECOGNISED, "lost"),
    ("Some of the requested hosts are not included in the current allocation for the\napplication:\n",
     Category.UNRECOGNISED, "allocation"),
])
def test_open_mpis_other_fatal_notices_are_never_silence(tmp_path: Path, paste: str, category: Category,
                                                         words: str) -> None:
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is category and words in top.title, top.title


def test_mpichs_own_abort_is_quoted_with_the_rank_it_names(tmp_path: Path) -> None:
    line = ("Abort(1091215) on node 3 (rank 3 in comm 0): Fatal error in PMPI_Init: Other MPI error, error stack:")
    event = one(line, Kind.ERROR_LINE)
    assert event.origin.rank == 3
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "rank 3" in top.title, top.title
    # a rank of another communicator is not the job's
    assert one(line.replace("in comm 0", "in comm 4"), Kind.ERROR_LINE).origin.rank is None


@pytest.mark.parametrize("line", [
    "[mpiexec@node1] HYDT_bscu_wait_for_completion (tools/bootstrap/utils/bscu_wait.c:75): one of the processes "
    "terminated badly; aborting",
    "[cli_1]: aborting job:",
])
def test_mpichs_hydra_ending_the_job_is_never_silence(tmp_path: Path, line: str) -> None:
    assert diagnose(tmp_path, line + "\n").hypotheses


def test_a_nic_drivers_link_down_is_never_silence_and_an_ib_ones_is_its_port_down(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "mlx5_core 0000:3b:00.0 ib0: Link down\n").hypotheses[0]
    assert top.category is Category.IB_PORT_DOWN, top.title
    ethernet = diagnose(tmp_path, "i40e 0000:3b:00.0 eth0: NIC Link is Down\n").hypotheses[0]
    assert ethernet.category is Category.UNRECOGNISED  # an Ethernet NIC's: quoted, not taken for InfiniBand
    # a link that came up is no error
    assert not diagnose(tmp_path, "mlx5_core 0000:3b:00.0 ib0: Link up\n").hypotheses


@pytest.mark.parametrize(("line", "category", "words"), [
    ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", Category.UNRECOGNISED,
     "not at fault"),
    ("amdgpu 0000:c1:00.0: amdgpu: GPU reset begin!", Category.GPU_ERROR, "fault of the GPU"),
    ("2024-Jan-01 00:00:00.000 1234:5678 ERROR TDRV:dmem_alloc_internal Failed to alloc DEVICE memory: 1048576",
     Category.RANK_OUT_OF_MEMORY, "out of memory"),
])
def test_rocm_and_neuron_words_for_a_gpu_that_cannot_run_the_job(tmp_path: Path, line: str, category: Category,
                                                                  words: str) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is category and words in top.title, top.title


def test_rays_autoscaler_unable_to_place_the_jobs_gpus_is_never_silence(tmp_path: Path) -> None:
    line = "(autoscaler +1m2s) Warning: The following resource request cannot be scheduled right now: {'GPU': 8.0}"
    assert [e.kind for e in events_of(line)] == [Kind.ERROR_LINE]
    assert diagnose(tmp_path, line + "\n").hypotheses


def test_ncclremoteerror_in_its_own_words_is_a_peer_that_went_away(tmp_path: Path) -> None:
    line = "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "lost its connection" in top.title, top.title


def test_ncclsystemerror_by_its_code_alone_reads_as_its_words_do(tmp_path: Path) -> None:
    code = "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
    words = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
             "1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.17.1\n")
    by_code, by_words = (diagnose(tmp_path, text).hypotheses[0] for text in (code, words))
    assert by_code.category is by_words.category is Category.PEER_UNREACHABLE, by_code.title


def test_ncclunhandledcudaerror_by_its_code_alone_is_a_cuda_call_that_failed(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "ncclUnhandledCudaError: Call to CUDA function failed.\n").hypotheses[0]
    assert top.category is Category.GPU_ERROR, top.title
    # its Last error: line says which, and out of memory is the GPU's memory, not a fault
    paste = "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 'out of memory'\n"
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.RANK_OUT_OF_MEMORY


def test_a_srun_task_that_exited_with_a_shells_128_plus_9_was_killed(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "srun: error: node1: task 0: Exited with exit code 137\n").hypotheses[0]
    assert top.category is Category.RANK_KILLED and "exit code 137" in top.title, top.title
    # an ordinary exit code stays the task's own failure
    own = diagnose(tmp_path, "srun: error: node1: task 0: Exited with exit code 1\n").hypotheses[0]
    assert own.category is Category.RANK_CRASHED, own.title
