"""Readings of the hundred-and-seventy-second round and after (``r175*``: post-training frameworks, interatomic
potentials, home and office networks, hardware faults, MPI underneath PyTorch, managed training platforms, container
runtimes, shared filesystems), and the pipeline's watchdog lines that read as a desync before. One behaviour per
test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category

_WINDOWS = ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [WPUCTBNVP3W.jdnet.deere.com]:1024 "
            "(system error: 10049 - The requested address is not valid in its context.).\n")
_ARGPARSE = "train.py: error: unrecognized arguments: --local-rank=0\n"


def test_a_numbered_lists_mark_before_a_log_line_is_the_pastes(tmp_path: Path) -> None:
    # real: pytorch/pytorch#110937 (r175c): the reporter's two errors as a markdown list, bold
    paste = f"**1. {_WINDOWS.strip()}**\n\n**2. {_ARGPARSE}"
    top = top_of(tmp_path, paste)
    # the script's refusal of --local-rank read (A028, the held label of that error), not the store's warning
    assert top.category is Category.UNRECOGNISED and "local-rank" in top.title, top.title
    # a list of advice stays text: no line of it is read as the log's
    advice = "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n2. disable CUDA graph\n"
    assert not diagnose_paste(tmp_path, advice).hypotheses


def test_c10ds_warning_for_one_address_is_no_failure_where_the_script_then_ran(tmp_path: Path) -> None:
    # the launcher's store client warned for one address of the name, connected by another and started the worker,
    # whose argparse then refused its command line: the refusal is the failure, not the store
    top = top_of(tmp_path, _WINDOWS + _ARGPARSE)
    assert top.category is Category.UNRECOGNISED, top.title
    assert not any(h.category is Category.PEER_UNREACHABLE for h in diagnose_paste(tmp_path, _WINDOWS + _ARGPARSE).hypotheses)
    # the warning alone (nothing ran after it) is still the store not reached
    assert top_of(tmp_path, _WINDOWS * 3).category is Category.PEER_UNREACHABLE
    # and an argparse refusal above the warning says nothing of whether the store was reached later
    assert any(h.category is Category.PEER_UNREACHABLE for h in diagnose_paste(tmp_path, _ARGPARSE + _WINDOWS).hypotheses)


_FAMILY = ("[W socket.cpp:558] [c10d] The client socket cannot be initialized to connect to [localhost]:29501 (errno: 97 "
           "- Address family not supported by protocol).\n")


def test_a_store_client_that_could_not_open_a_socket_of_the_addresss_family_is_a_lead(tmp_path: Path) -> None:
    # real: pytorch/pytorch#74316 (r175c): localhost resolves to ::1 where IPv6 is off, repeated until the paste ends
    top = top_of(tmp_path, "[W socket.cpp:401] [c10d] The server socket cannot be initialized on [::]:29501 (errno: 97 - "
                         "Address family not supported by protocol).\n" + _FAMILY * 6)
    assert top.category is Category.PEER_UNREACHABLE and top.confidence == 0.25, top
    assert "localhost:29501" in top.title and "IPv4" in top.what, top.what
    # beside another error, the warning is the noise runs print and go on from: that error is read
    other = top_of(tmp_path, _FAMILY + "RuntimeError: Expected to have finished reduction in the prior iteration before "
                                     "starting a new one.\n")
    assert other.category is not Category.PEER_UNREACHABLE, other.title
    # localhost's IPv4 address mapped into IPv6 (``[::ffff:127.0.0.1]``) is the same noise, alone a lead at 0.25
    mapped = top_of(tmp_path, _FAMILY.replace("[localhost]:29501", "[::ffff:127.0.0.1]:29500"))
    assert mapped.category is Category.PEER_UNREACHABLE and mapped.confidence == 0.25, mapped


_RECORD = """main_task_retrieval.py FAILED
-------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
-------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2022-06-09_02:45:20
  host      : super
  rank      : 1 (local_rank: 1)
  exitcode  : -6 (pid: 507952)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 507952
=======================================================
"""
_TIMEOUT = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=BROADCAST, Timeout(ms)=1800000) ran "
            "for 1807965 milliseconds before timing out.\n")


def test_the_one_failed_processs_abort_above_a_timeout_of_no_rank_is_that_timeouts_end(tmp_path: Path) -> None:
    # real: ArrowLuo/CLIP4Clip#78 (r175d): torchrun's summary pasted first, the watchdog's lines after it
    top = top_of(tmp_path, _RECORD + _TIMEOUT)
    assert top.category is not Category.RANK_CRASHED, top.title
    assert not any(h.category is Category.RANK_CRASHED for h in diagnose_paste(tmp_path, _RECORD + _TIMEOUT).hypotheses)
    # two processes failed in that output: whose the timeout is, is not known, and the abort stays a crash
    two = _RECORD.replace("  <NO_OTHER_FAILURES>\n", "[1]:\n  time      : 2022-06-09_02:45:20\n  host      : super\n"
                          "  rank      : 0 (local_rank: 0)\n  exitcode  : -6 (pid: 507951)\n")
    assert top_of(tmp_path, two + _TIMEOUT).category is Category.RANK_CRASHED


_RSH = """--------------------------------------------------------------------------
The value of the MCA parameter "plm_rsh_agent" was set to a path
that could not be found:

  plm_rsh_agent: ssh : rsh

Please either unset the parameter, or check that the path is correct
--------------------------------------------------------------------------
[718c7e141fd5:75498] [[INVALID],INVALID] FORCE-TERMINATE AT Not found:-13 - error plm_rsh_component.c(327)
[718c7e141fd5:75498] *** Process received signal ***
[718c7e141fd5:75498] Signal: Segmentation fault (11)
"""


def test_open_mpi_without_its_launch_agent_is_the_setup_not_a_segfault(tmp_path: Path) -> None:
    # real: openai/improved-diffusion#125 (r175e): mpi4py's singleton start in a container without ssh
    top = top_of(tmp_path, _RSH)
    assert top.category is Category.UNRECOGNISED and "plm_rsh_agent" in top.title, top.title
    assert "ssh" in (top.fix or "") and top.culprit_hosts == ("718c7e141fd5",), top
    # Open MPI's own segfault with no error above it stays a crash
    crash = top_of(tmp_path, _RSH.split("[718c7e141fd5:75498] [[INVALID]")[0].replace("plm_rsh_agent", "x")
                 + "[h1:75498] *** Process received signal ***\n[h1:75498] Signal: Segmentation fault (11)\n")
    assert crash.category is Category.RANK_CRASHED, crash.title


def test_a_libraries_check_that_a_path_is_shared_by_the_nodes_is_the_setup(tmp_path: Path) -> None:
    # real: modelscope/ms-swift#4462 (r175h): --packing_cache on /tmp, each node's own disk
    error = ("FileNotFoundError: [Errno 2] No such file or directory: '/tmp/packing_share/check_shared_disk.tmp'\n")
    top = top_of(tmp_path, error)
    assert top.category is Category.UNRECOGNISED and "every node mounts" in top.title, top.title
    # another missing file is the program's own error
    assert "every node mounts" not in top_of(tmp_path, error.replace("check_shared_disk", "config")).title


_HUNG = """[Mon Dec  1 10:02:11 2025] INFO: task python3:48213 blocked for more than 122 seconds.
[Mon Dec  1 10:02:11 2025]       Not tainted 5.15.0-91-generic #101-Ubuntu
[Mon Dec  1 10:02:11 2025] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
[Mon Dec  1 10:02:11 2025] task:python3         state:D stack:    0 pid:48213 ppid:48101 flags:0x00004002
[Mon Dec  1 10:02:11 2025] Call Trace:
[Mon Dec  1 10:02:11 2025]  <TASK>
[Mon Dec  1 10:02:11 2025]  __schedule+0x23d/0x590
[Mon Dec  1 10:02:11 2025]  schedule+0x4e/0xc0
[Mon Dec  1 10:02:11 2025]  rpc_wait_bit_killable+0x1e/0x90 [sunrpc]
[Mon Dec  1 10:02:11 2025]  nfs_start_io_read+0x1e/0x60 [nfs]
"""


def test_a_process_the_kernel_saw_stuck_in_file_io_is_the_one_the_others_wait_for(tmp_path: Path) -> None:
    # the kernel's hung-task report of a rank, its stack in NFS: a lead at 0.5 naming the process and the filesystem
    top = top_of(tmp_path, _HUNG)
    assert top.category is Category.LAGGING_RANK and top.confidence == 0.5, top
    assert "48213" in top.title and "NFS" in top.title and "more than 122 s" in top.title, top.title
    # without its stack, no filesystem is claimed: the wait may be a driver's or a lock's
    alone = top_of(tmp_path, _HUNG.split("\n")[0] + "\n")
    assert "48213" in alone.title and "file I/O on" not in alone.title and "its stack says which" in alone.title
    # a kernel thread's report is no rank's
    kworker = _HUNG.replace("python3:48213", "kworker/u16:2:48213")
    assert not any("48213" in h.title for h in diagnose_paste(tmp_path, kworker).hypotheses
                   if h.category is Category.LAGGING_RANK and "stuck in the kernel" in h.title)


def test_a_ps_row_in_state_d_on_a_network_filesystem_is_a_lead(tmp_path: Path) -> None:
    # real: NVIDIA-NeMo/RL#3504 (r175h): ranks saving one tokenizer on a hard NFS mount, stuck for days
    ps = " PID  STAT WCHAN                    ELAPSED      COMMAND\n1533  DNl  nfs_start_io_read      1-22:05:51 python\n"
    top = top_of(tmp_path, ps)
    assert top.category is Category.LAGGING_RANK and top.confidence == 0.4, top
    assert "pid 1533" in top.title and "NFS" in top.title and "let one rank write" in (top.fix or ""), top
    # a row asleep in another wait (state S), or in D on a local disk's function, is not read
    assert not diagnose_paste(tmp_path, ps.replace("DNl", "SNl")).hypotheses
    assert not diagnose_paste(tmp_path, ps.replace("nfs_start_io_read", "blk_mq_get_tag")).hypotheses


def test_a_network_filesystems_server_lost_by_the_kernel_is_a_lead(tmp_path: Path) -> None:
    top = top_of(tmp_path, "[1734.118] nfs: server nas01 not responding, still trying\n")
    assert top.category is Category.LAGGING_RANK and "NFS server nas01" in top.title, top.title
    lustre = ("Lustre: scratch-OST0003-osc-ffff8f: Connection to scratch-OST0003 (at 10.0.0.5@o2ib) was lost; in "
              "progress operations using this service will wait for recovery to complete\n")
    assert "Lustre server scratch-OST0003 (10.0.0.5@o2ib)" in top_of(tmp_path, lustre).title
    # the server back (`nfs: server nas01 OK`) is no failure
    assert not diagnose_paste(tmp_path, "nfs: server nas01 OK\n").hypotheses


def _records(*lines: str) -> str:
    import json
    return "".join(json.dumps({"event": "line", "data": line + "\n", "pipe": "stderr"}) + "\n" for line in lines)


def test_a_runners_records_of_its_childs_lines_are_read_as_those_lines(tmp_path: Path) -> None:
    # real: mila-iqia/milabench#397 (r176b): every line the benchmark wrote, wrapped in the runner's JSON record
    paste = _records("[rank3]: Search for `hipErrorLaunchFailure' in https://rocm.docs.amd.com/projects/HIP/en/latest/"
                     "index.html for more information.",
                     "[rank3]: HIP kernel errors might be asynchronously reported at some other API call",
                     "[rank3]: For debugging consider passing AMD_SERIALIZE_KERNEL=3")
    top = top_of(tmp_path, paste)
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (3,), top
    # a record of another kind stays syncdoctor's own event format (a watch event), not a line
    event = '{"event": "late", "ranks": [2], "message": "rank 2 is late"}\n' * 3
    assert not any(h.category is Category.GPU_ERROR for h in diagnose_paste(tmp_path, event).hypotheses)


def test_pytorchs_epilogue_naming_a_gpu_fault_code_is_the_gpus(tmp_path: Path) -> None:
    line = ("[rank1]: Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__"
            "CUDART__TYPES.html for more information.\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (1,), top.title
    # the program's own codes (an assert of its kernel, memory run out) are no GPU fault
    assert not any(h.category is Category.GPU_ERROR
                   for h in diagnose_paste(tmp_path, line.replace("IllegalAddress", "Assert")).hypotheses)
    hsa = (":0:rocdevice.cpp            :3586: 92087492418 us:  Callback: Queue 0x772c40900000 aborting with error : "
           "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016\n")
    assert top_of(tmp_path, hsa).category is Category.GPU_ERROR


def test_rays_daemon_prefix_names_the_node_and_its_full_disk_is_read(tmp_path: Path) -> None:
    # real: RLinf/RLinf#304 (r176g): two nodes stalled, the raylet of one saying its session's disk was full
    line = ("(raylet, ip=10.0.1.36) [2025-11-20 08:14:04,892 E 18591 18625] (raylet) file_system_monitor.cc:116: "
            "/tmp/ray/session_2025-11-20_08-03-43_570298_129532 is over 95% full, available space: 0 GB; capacity: "
            "434.788 GB. Object creation will fail if spilling is required.\n")
    top = top_of(tmp_path, line * 3)
    assert top.category is Category.UNRECOGNISED and "without room" in top.title, top.title
    assert top.culprit_hosts == ("10.0.1.36",), top
    # a disk that still has room is not full: not read
    assert not diagnose_paste(tmp_path, "/data is 40% full, 200 GB free\n").hypotheses


_COORD = ("2023-03-07 16:06:30.684022: E external/org_tensorflow/tensorflow/tsl/distributed_runtime/coordination/"
          "coordination_service.cc:956] /job:jax_worker/replica:0/task:{t} has been set to ERROR in coordination "
          "service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:{t} heartbeat timeout. This indicates that the "
          "remote task has failed, got preempted, or crashed unexpectedly.\n")


def test_srun_s_report_of_the_tasks_the_coordination_service_lost_says_how_and_where(tmp_path: Path) -> None:
    # real: vwxyzjn/cleanba#5 (r176a): three tasks segfaulted, the service's lines cut after the first
    srun = "".join(f"srun: error: {h}: task {t}: Segmentation fault\n" for h, t in
                   (("ip-26-0-141-178", 15), ("ip-26-0-141-217", 16), ("ip-26-0-141-217", 17)))
    top = top_of(tmp_path, srun + _COORD.format(t=15))
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (15, 16, 17), top
    assert top.culprit_hosts == ("ip-26-0-141-178", "ip-26-0-141-217") and "SIGSEGV" in top.title, top
    assert "coordination service" in top.title and top.confidence > 0.8, top.title
    # the tasks srun then killed itself are not among them
    killed = top_of(tmp_path, srun + "srun: error: ip-26-0-141-178: tasks 0-14: Killed\n" + _COORD.format(t=15))
    assert killed.culprit_ranks == (15, 16, 17), killed
    # srun's report of other tasks than the lost one says nothing of it: the service's task alone
    other = diagnose_paste(tmp_path, "srun: error: ip-26-0-141-178: task 3: Segmentation fault\n" + _COORD.format(t=15))
    service = [h for h in other.hypotheses if "coordination service" in h.title]
    assert service and service[0].culprit_ranks == (15,) and "srun" not in service[0].title, service


def test_an_init_method_without_a_scheme_is_the_launchs_setup(tmp_path: Path) -> None:
    # real: facebookresearch/swav#2 (r176f): --dist_url not passed
    top = top_of(tmp_path, "RuntimeError: No rendezvous handler for ://\n")
    assert top.category is Category.UNRECOGNISED and "tcp://HOST:PORT" in top.title, top.title
    # a scheme torch does not know is another error (its own reading or none), not an empty address
    assert "no scheme" not in top_of(tmp_path, "RuntimeError: No rendezvous handler for foo://\n").title


def test_a_tensor_of_a_device_gloo_does_not_serve_is_the_programs_call(tmp_path: Path) -> None:
    # real: ultralytics/ultralytics#15701 (r177b): DDP on Apple's MPS with the gloo backend
    line = ("[rank1]: RuntimeError: ProcessGroupGloo::allgather: invalid tensor type at index 0 (expected TensorOptions("
            "dtype=long long, device=cpu, layout=Strided), got TensorOptions(dtype=long long, device=mps:0))\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.RANK_CRASHED and "gloo does not take" in top.title, top.title
    assert top.culprit_ranks == (1,)
    # gloo's other refusals keep their readings (a size check that differs between ranks is no device's)
    other = diagnose_paste(tmp_path, "RuntimeError: ProcessGroupGloo::allgather: expected 4 tensors, got 2\n")
    assert not any("gloo does not take" in h.title for h in other.hypotheses)


def test_pythons_input_output_error_is_the_storages(tmp_path: Path) -> None:
    # real: allenai/OLMo#737 (r177c): np.memmap of the global indices on a multi-node run's filesystem
    top = top_of(tmp_path, "OSError: [Errno 5] Input/output error\n")
    assert top.category is Category.UNRECOGNISED and "I/O error" in top.title, top.title
    # a network library's own 'Input/output error' is that library's, not the storage's
    ucx = ("[1576565271.426547] [cgpu06:45376:0]       ucp_rkey.c:250  UCX  ERROR Failed to unpack remote key from "
           "remote md[4]: Input/output error\n")
    assert not any("storage failed" in h.title for h in diagnose_paste(tmp_path, ucx).hypotheses)


_THC = "THCudaCheck FAIL file=../aten/src/THC/THCCachingHostAllocator.cpp line=280 error=710 : {msg}\n"
_ABORTED = ("terminate called after throwing an instance of 'c10::Error'\n"
            "  what():  NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:181, unhandled cuda error, NCCL "
            "version 21.0.3\nProcess Group destroyed on rank 0\n"
            "Exception raised from ncclCommAbort at ../torch/csrc/distributed/c10d/NCCLUtils.hpp:181 (most recent call "
            "first):\n")


def test_thcs_check_is_read_and_ncc_ls_error_below_a_device_side_assert_is_the_asserts(tmp_path: Path) -> None:
    # real: jaywalnut310/vits#106 (r177g): the program's assert, then the communicator's abort failing on it
    top = top_of(tmp_path, _THC.format(msg="device-side assert triggered") + _ABORTED)
    assert top.category is Category.RANK_CRASHED and "device-side assert" in top.title, top.title
    assert not any(h.category is Category.GPU_ERROR
                   for h in diagnose_paste(tmp_path, _THC.format(msg="device-side assert triggered") + _ABORTED).hypotheses)
    # a GPU fault in THC's words is the GPU's, and NCCL's same error without the assert above it stays the GPU's
    assert top_of(tmp_path, _THC.format(msg="an illegal memory access was encountered")).category is Category.GPU_ERROR
    assert top_of(tmp_path, _ABORTED).category is Category.GPU_ERROR


_OMPI_RULE = "-" * 74 + "\n"


@pytest.mark.parametrize(("banner", "category", "words"), [
    ("Open MPI has detected that this process has attempted to initialize\nMPI (via MPI_INIT or MPI_INIT_THREAD) more "
     "than once.  This is\nerroneous.\n", Category.UNRECOGNISED, "initialized twice"),
    ("No PMIx server was reachable, but a PMI1/2 was detected.\nIf srun is being used to launch application,  8 "
     "singletons will be started.\n", Category.UNRECOGNISED, "srun --mpi=pmix"),
    ("The user requested CUDA support with the --mca mpi_cuda_support 1 flag\nbut the library was not compiled with any "
     "support.\n", Category.UNRECOGNISED, "built without it"),
    ("Open MPI's mpirun command was unable to find an underlying prterun\ncommand to execute.  Consider setting the "
     "OMPI_PRTERUN environment\nvariable to help mpirun find the correct underlying prterun.\n", Category.UNRECOGNISED,
     "no prterun"),
])
def test_open_mpis_banners_of_a_failure_without_an_errors_words_are_read(tmp_path: Path, banner: str,
                                                                        category: Category, words: str) -> None:
    # a sweep of Open MPI's help texts (open-mpi/ompi, help-mpi-runtime.txt and help-mpirun.txt), each pasted as its
    # banner: silent before, as they hold no error's words
    top = top_of(tmp_path, _OMPI_RULE + banner + _OMPI_RULE)
    assert top.category is category and words in top.title, top.title
    # in a large log too (the generic parser's error line, not only a small paste's last look)
    filler = "".join(f"step {i}: loss 0.5\n" for i in range(3000))
    assert words in top_of(tmp_path, filler + _OMPI_RULE + banner + _OMPI_RULE + filler).title
