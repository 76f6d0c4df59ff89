"""Readings of the hundred-and-eighty-fourth round and after (``r187*``: Open MPI and Horovod, Kubernetes operators,
ROCm, peer-to-peer transports, DeepSpeed's launcher, forums, Lightning/Ray/Accelerate, init hangs), and the open
leads of the stop before. One behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category

_UNCAUGHT = ("terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
             "  what():  [enforce fail at /src/gloo/gloo/transport/tcp/pair.cc:498] optval == 0. 111 vs 0. "
             "SO_ERROR: Connection refused\n")
_ABORTED = ("--------------------------------------------------------------------------\n"
            "mpirun noticed that process rank 1 with PID 29013 on node 172.17.27.12 exited on signal 6 (Aborted).\n"
            "--------------------------------------------------------------------------\n")


def test_an_abort_under_an_uncaught_exception_of_no_rank_is_that_exceptions_end(tmp_path: Path) -> None:
    # real: facebookarchive/caffe2#360 (r185c): gloo's refused connect thrown, uncaught, and mpirun's record of the
    # one rank it aborted
    top = top_of(tmp_path, _UNCAUGHT + _ABORTED)
    assert top.category is Category.PEER_UNREACHABLE, top
    assert top.culprit_ranks == (1,) and top.culprit_hosts == ("172.17.27.12",), top
    assert "aborted (SIGABRT, exit code -6)" in top.title, top.title
    # torchrun's record of the same (exitcode -6, local rank 0), under libc++'s words for it
    libcxx = _UNCAUGHT.replace("terminate called after throwing an instance of 'gloo::EnforceNotMet'",
                               "libc++abi: terminating due to uncaught exception of type gloo::EnforceNotMet")
    torchrun = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 "
                "(pid: 4242) of binary: /usr/bin/python3\n")
    assert top_of(tmp_path, libcxx + torchrun).category is Category.PEER_UNREACHABLE
    # the abort alone, no exception above it: a crash whose cause is not in the inputs
    alone = top_of(tmp_path, _ABORTED)
    assert alone.category is Category.RANK_CRASHED and alone.culprit_ranks == (1,), alone
    # an exception printed below the record is not what that rank aborted of
    below = top_of(tmp_path, _ABORTED + _UNCAUGHT)
    assert not (below.category is Category.PEER_UNREACHABLE and "aborted (SIGABRT" in below.title), below
    # two ranks aborted in that output: whose the exception is, is not known
    two = _ABORTED.replace("rank 1 with PID 29013", "rank 1 with PID 29013 on node a exited on signal 6 (Aborted).\n"
                           "mpirun noticed that process rank 2 with PID 29014")
    assert "aborted (SIGABRT" not in top_of(tmp_path, _UNCAUGHT + two).title


def test_deepspeeds_mpi_discovery_without_hostname_dash_i_is_the_nodes_setup(tmp_path: Path) -> None:
    # real: microsoft/DeepSpeed#826, #6497, #2837 (r187e): mpi_discovery runs `hostname -I`
    raised = ("Traceback (most recent call last):\n"
              '  File "/venv/lib/python3.8/site-packages/deepspeed/utils/distributed.py", line 67, in mpi_discovery\n'
              "    result = subprocess.check_output(hostname_cmd, shell=True)\n"
              "subprocess.CalledProcessError: Command '['hostname -I']' returned non-zero exit status 64.\n")
    top = top_of(tmp_path, raised)
    assert top.category is Category.UNRECOGNISED and "hostname -I" in top.title, top
    assert "MASTER_ADDR" in top.title, top.title  # what to set instead
    refused = ("[2024-09-05 04:11:37,288] [INFO] [comm.py:667:init_distributed] Not using the DeepSpeed or dist "
               "launchers, attempting to detect MPI environment...\n"
               "hostname: invalid option -- 'I'\n"
               "Try 'hostname --help' or 'hostname --usage' for more information.\n")
    assert "hostname -I" in top_of(tmp_path, refused).title
    # another command that fails, or another tool refusing another option: not DeepSpeed's discovery
    other = "subprocess.CalledProcessError: Command '['nvidia-smi -L']' returned non-zero exit status 9.\n"
    assert "hostname -I" not in top_of(tmp_path, other).title
    getopt = top_of(tmp_path, "ssh: invalid option -- 'Z'\n")
    assert getopt.category is Category.UNRECOGNISED and "refused an option" in getopt.title, getopt
    # the command named in a launcher's INFO line (its runner asking a node for its address) is no failure
    info = "[2023-01-05 10:00:01,123] [INFO] [runner.py:454:main] Using IP address of 10.0.0.2 for node n2 (hostname -I)\n"
    assert diagnose_paste(tmp_path, info).hypotheses == ()


def test_horovods_gloo_runner_record_of_a_process_exit_names_its_rank_and_signal(tmp_path: Path) -> None:
    # real: horovod/horovod#3472 (r187a): horovodrun's own record, then its traceback cut
    killed = top_of(tmp_path, "Process 0 exit with status code 137.\nTraceback (most recent call last):\n")
    assert killed.category is Category.RANK_KILLED and killed.culprit_ranks == (0,), killed
    failed = top_of(tmp_path, "Process 2 exit with status code 1.\n")
    assert failed.category is Category.RANK_CRASHED and failed.culprit_ranks == (2,), failed
    # a status of 0 is no failure, and the words inside a sentence are no record
    assert diagnose_paste(tmp_path, "Process 0 exit with status code 0.\n").hypotheses == ()
    assert diagnose_paste(tmp_path, "we saw Process 3 exit with status code 1. twice\n").hypotheses == ()


def test_rocm_out_of_resources_with_little_memory_left_is_the_gpus_memory(tmp_path: Path) -> None:
    # real: meta-llama/llama-cookbook#642 (r187c): srun's label, ROCclr's queue abort with 234 MB left
    line = ("0: :0:rocdevice.cpp            :2875: 1456647898545 us: [pid:3202  tid:0x7f2309bff700] Callback: Queue "
            "0x7ee2fba00000 Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate "
            "the necessary resources. This error may also occur when the core runtime library needs to spawn threads "
            "or create internal OS-specific events. Code: 0x1008 Available Free mem : {} MB\n")
    top = top_of(tmp_path, line.format(234))
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_ranks == (0,), top
    assert "234 MB" in top.what, top.what  # (what ROCm said was left)
    # with gigabytes left (cms-sw/cmssw#46624 saw 62084 MB) some other resource ran out: no GPU memory verdict
    assert top_of(tmp_path, line.format(62084)).category is not Category.RANK_OUT_OF_MEMORY


def test_a_cuda_failure_whose_words_say_the_driver_is_too_old_is_the_driver(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#955 (r188a): the maintainer's quote of NCCL's line, without its prefix
    top = top_of(tmp_path, "Cuda failure 'API call is not supported in the installed CUDA driver'\n")
    assert top.category is Category.UNRECOGNISED and "driver older" in top.title, top
    # a CUDA failure of other words is still the GPU's
    assert top_of(tmp_path, "Cuda failure 'an illegal memory access was encountered'\n").category is Category.GPU_ERROR


def test_nvml_refusing_the_p2p_status_under_nccls_system_error_is_peer_access(tmp_path: Path) -> None:
    # real: vllm-project/vllm#15127 (r188d): NCCL's WARN with its prefix, then the engine's log of the DistBackendError
    paste = ("ubuntu:4255:4512 [0] misc/nvmlwrap.cc:147 NCCL WARN nvmlDeviceGetP2PStatus(0,0,NVML_P2P_CAPS_INDEX_READ) "
             "failed: Not Supported\n"
             "ubuntu:4255:4512 [0] NCCL INFO init.cc:338 -> 2\n"
             "ERROR 03-19 10:48:40 worker_base.py:467] torch.distributed.DistBackendError: NCCL error in: "
             "/opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error (run with "
             "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
             "ERROR 03-19 10:48:40 worker_base.py:467] ncclSystemError: System call (e.g. socket, malloc) or external "
             "library call failed or device error.\n"
             "ERROR 03-19 10:48:40 worker_base.py:467] Last error:\n"
             "ERROR 03-19 10:48:40 worker_base.py:467] nvmlDeviceGetP2PStatus(0,0,NVML_P2P_CAPS_INDEX_READ) failed: "
             "Not Supported\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.PEER_ACCESS, top
    assert top.culprit_hosts == ("ubuntu",), top  # where NCCL's own line says, the engine's log saying nowhere
    # another NVML call that failed is not peer access
    other = paste.replace("nvmlDeviceGetP2PStatus(0,0,NVML_P2P_CAPS_INDEX_READ) failed: Not Supported",
                          "nvmlDeviceGetHandleByPciBusId() failed: Not Found")
    assert top_of(tmp_path, other).category is not Category.PEER_ACCESS


def test_ib_events_that_say_the_fabric_changed_are_a_lead_when_nothing_failed(tmp_path: Path) -> None:
    # real: microsoft/DeepSpeedExamples#310 (r188g): every local rank of gpu1 got the event right after init
    lines = "".join(f"gpu1:502{n}:538{n} [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client "
                    "reregistration\n" for n in range(3))
    top = diagnose_paste(tmp_path, lines).hypotheses[0]
    assert top.category is Category.IB_PORT_DOWN and top.confidence < 0.5, top
    assert "client reregistration" in top.title and top.culprit_hosts == ("gpu1",), top
    # a port that failed is the verdict, above the lead
    failed = lines + "gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n"
    assert top_of(tmp_path, failed).confidence >= 0.9
    # a port that came up is no lead
    active = "gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port active\n"
    assert not any(h.category is Category.IB_PORT_DOWN for h in diagnose_paste(tmp_path, active).hypotheses)


def test_an_engine_waiting_a_minute_or_more_for_ray_to_place_its_workers(tmp_path: Path) -> None:
    # real: gpustack/gpustack#5509, ray-project/kuberay#3414 (r188e): vLLM's notice, printed at 10, 30, 70, 150 s
    wait = ("(EngineCore pid=84) INFO 06-07 18:13:55 [ray_utils.py:464] Waiting for creating a placement group of "
            "specs for {} seconds. specs=[{{'GPU': 1.0}}, {{'GPU': 1.0}}]. Check `ray status` and `ray list nodes` to "
            "see if you have enough resources.\n")
    top = diagnose_paste(tmp_path, wait.format(150)).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "Ray could not place the workers" in top.title, top
    # its first notices are no failure
    assert diagnose_paste(tmp_path, wait.format(10) + wait.format(30)).hypotheses == ()


def test_nccls_check_of_a_collectives_arguments_is_the_programs_call(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1558 (r189a): PyTorch's DistBackendError, NCCL's last error below it
    paste = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
             "2777, invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5\n"
             "ncclInvalidArgument: Invalid value for an argument.\nLast error:\n"
             "Broadcast : sendbuff (nil) is not a valid pointer\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "argument NCCL refused" in top.title, top
    # NVIDIA/nccl#963: send/recv to a peer outside a communicator of one rank
    peer = "h:248281:248306 [1] misc/argcheck.cc:39 NCCL WARN Recv : invalid root 2 (root should be in the 0..0 range)\n"
    assert diagnose_paste(tmp_path, peer).hypotheses[0].category is Category.RANK_CRASHED
    # a communicator of -1 ranks (its initialisation failed: horovod/horovod#3752, two NCCL builds) is no bad argument
    unset = peer.replace("0..0 range", "0..-1 range")
    assert all("argument NCCL refused" not in h.title for h in diagnose_paste(tmp_path, unset).hypotheses)


def test_fsdps_check_of_its_all_gather_order_is_a_desync(tmp_path: Path) -> None:
    # real: lm-sys/FastChat#114 (r189b)
    line = ("RuntimeError: Forward order differs across ranks: rank 0 is all-gathering 1 parameters while rank 1 is "
            "all-gathering 0 parameters\n")
    assert diagnose_paste(tmp_path, line).hypotheses[0].category is Category.COLLECTIVE_DESYNC
    # FSDP's warning that the order differs from the first iteration's on one rank is no such check
    warned = "UserWarning: Forward order differs from that of the first iteration on rank 0.\n"
    assert all(h.category is not Category.COLLECTIVE_DESYNC for h in diagnose_paste(tmp_path, warned).hypotheses)


def test_torch_saves_writer_failing_under_a_checkpoint_is_the_file_system(tmp_path: Path) -> None:
    # real: THUDM/ChatGLM-6B#1166, volcengine/verl#3346 (r189c): ZeRO's and FSDP's shards written with torch.save
    line = ("RuntimeError: [enforce fail at inline_container.cc:471] . PytorchStreamWriter failed writing file data/3: "
            "file write failed\n")
    top = diagnose_paste(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "file system without room" in top.title, top
    # its reader failing on a file cut short is the checkpoint's, not the disk's
    reader = ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory\n")
    assert all("without room" not in h.title for h in diagnose_paste(tmp_path, reader).hypotheses)


def test_nccl_refusing_a_cuda_graph_capture_is_the_driver_or_the_build(tmp_path: Path) -> None:
    # real: vllm-project/vllm#6201 (r189a), under vLLM's advice about memory printed at every start
    paste = ("(VllmWorkerProcess pid=116058) INFO 07-08 13:05:31 model_runner.py:928] CUDA graphs can take additional "
             "1~3 GiB memory per GPU. If you are running out of memory, consider decreasing `gpu_memory_utilization` "
             "or enforcing eager mode.\n"
             "hostname:116024:116024 [0] misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph if "
             "either it wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "driver" in top.title, top
    # the advice alone is no error at all
    assert diagnose_paste(tmp_path, paste.splitlines(keepends=True)[0]).hypotheses == ()


def test_level_zeros_error_codes_are_error_lines(tmp_path: Path) -> None:
    # real: intel/llm-scaler#398 (r189f): oneCCL's IPC handle on Intel GPUs
    top = diagnose_paste(tmp_path, "zeMemOpenIpcHandle, code: ZE_RESULT_ERROR_INVALID_ARGUMENT\n").hypotheses[0]
    assert "ZE_RESULT_ERROR_INVALID_ARGUMENT" in top.title, top
    assert diagnose_paste(tmp_path, "zeInit returned ZE_RESULT_SUCCESS\n").hypotheses == ()


def test_a_peers_link_local_address_on_a_veth_is_a_containers_address(tmp_path: Path) -> None:
    # real: huggingface/accelerate#2457 (r189b): NCCL's last error names the peer's address with its zone
    paste = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
             "1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
             "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n"
             "Last error:\n"
             "socketStartConnect: Connect to fe80::a849:bbff:fe73:19bd%{}<54785> failed : Software caused connection "
             "abort\n")
    assert top_of(tmp_path, paste.format("veth8299cd8")).category is Category.LOOPBACK_ADDRESS
    # the same on a NIC (an InfiniBand port's link-local address) is the wrong interface picked, A007
    assert top_of(tmp_path, paste.format("ib0")).category is Category.INTERFACE_MISMATCH


def test_nccl_2_29_and_2_30s_new_warnings_say_what_they_mean(tmp_path: Path) -> None:
    # a sweep of the WARN formats NCCL 2.29-2.30 added (NVIDIA/nccl v2.28.9-1..v2.30.7-1), each read alone
    prefix = "node1:2150:2161 [1] misc/x.cc:123 NCCL WARN "
    cases = {
        "P2P is disabled between NVLINK connected GPUs 1 and 0. This should not be the case given their connectivity, "
        "and is probably due to a hardware issue. If you still want to proceed, you can set "
        "NCCL_IGNORE_DISABLED_P2P=1.": (Category.GPU_ERROR, "NVLink"),
        "NCCL library is too old. This application was compiled with NCCL version 2.30.7, but is running with NCCL "
        "library version 2.29.7.": (Category.UNRECOGNISED, "NCCL library other than"),
        "The application was compiled with too old version of NCCL. It was compiled with NCCL version 2.28.9, but is "
        "running with NCCL library version 2.30.7.": (Category.UNRECOGNISED, "NCCL library other than"),
        "One-sided RMA requires CUDA driver 12.5 or later (found 12.2).": (Category.UNRECOGNISED, "driver older"),
        'NCCL_NVLS_ENABLE has been set to "1" and communicator has multiple ranks using the same NVML device. This '
        "is not compatible with NCCL_NVLS_ENABLE=1.": (Category.DUPLICATE_GPU, "two ranks on one GPU"),
    }
    for words, (category, said) in cases.items():
        top = diagnose_paste(tmp_path, prefix + words + "\n").hypotheses[0]
        assert top.category is category and said in top.title, (words, top)
    # NCCL's note that it falls back from NVLS where it may (not forced on) is no such refusal
    note = prefix.replace("WARN", "INFO") + "NVLS multicast support is not available on dev 0\n"
    assert diagnose_paste(tmp_path, note).hypotheses == ()


def test_zero3s_reworded_check_of_the_ranks_parameter_lists_is_a_desync(tmp_path: Path) -> None:
    # a sweep of DeepSpeed's messages since 0.9.5: 0.17.6 reworded the check (deepspeed/runtime/zero/utils.py)
    for words in ("list contents", "list length"):
        paste = (f"[rank3]: RuntimeError: Detected a disagreement on {words} between rank0 and rank3: \n"
                 "[rank3]:  list length: 4\n[rank3]:  rank0: [1, 2, 3, 4] \n[rank3]:  rank3: [1, 2, 5, 4]\n")
        top = top_of(tmp_path, paste)
        assert top.category is Category.COLLECTIVE_DESYNC and "ranks 0, 3" in top.title, (words, top)
    # another library's "disagreement" between two hosts' clocks is no such check
    clocks = "WARNING: clock disagreement between node1 and node2 exceeds 2 s\n"
    assert all(h.category is not Category.COLLECTIVE_DESYNC for h in diagnose_paste(tmp_path, clocks).hypotheses)
