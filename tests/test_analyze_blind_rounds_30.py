"""Readings of the ninety-eighth round (pastes that end in a launcher's record, rented clouds, old NCCL releases):
one behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, each_read, timeline_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Hypothesis
from syncdoctor.analyze.parsers.prefixes import split_prefix


def test_a_call_the_drivers_cuda_does_not_have_is_the_jobs_cuda_software_and_what_follows_its_consequence(
        tmp_path: Path) -> None:
    # real: NVIDIA/nccl#496 (NCCL built with CUDA 11.3+ on an R460 driver: cudaStreamGetCaptureInfo_v2 refused; NVIDIA
    # fixed it in NCCL 2.9.9); the broken communicator's later errors follow from it
    paste = ("[1,0]<stdout>:8470dd07de42:174:239 [0] enqueue.cc:802 NCCL WARN Cuda failure 'API call is not supported "
             "in the installed CUDA driver'\n"
             "[1,0]<stdout>:8470dd07de42:174:239 [0] misc/argcheck.cc:39 NCCL WARN Broadcast : invalid root 0 (root "
             "should be in the 0..-1 range)\n"
             "[1,0]<stdout>:8470dd07de42:174:239 [0] init.cc:895 NCCL WARN Cuda failure 'invalid device ordinal'\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "driver does not have" in top.title
    assert "not at fault" in top.title and "Upgrade the driver" in (top.fix or "")
    # the ordinal alone is still the launch asking for a GPU that is not there
    alone = diagnose_paste(tmp_path, paste.splitlines()[2]).hypotheses[0]
    assert alone.category is Category.UNRECOGNISED and "invalid device ordinal" in alone.title  # (the launch)


def test_cuda_software_that_does_not_fit_is_setup_and_a_nodes_own_state_the_gpus(tmp_path: Path) -> None:
    # the labels' convention: a version mismatch of software other than NCCL is the job's setup (A028); a driver
    # updated without a reboot and the fabric manager down are the node's (A021)
    for line in ("node-1:95:95 [1] NCCL WARN Cuda failure 'CUDA driver is a stub library'",
                 "node-1:95:95 [1] include/alloc.h:125 NCCL WARN Cuda failure 500 'named symbol not found'",
                 "RuntimeError: CUDA error: no kernel image is available for execution on the device"):
        top = diagnose_paste(tmp_path, line).hypotheses[0]
        assert top.category is Category.UNRECOGNISED and "not at fault" in top.title, line
    for line in ("node-1:12345:12400 [0] include/nvmlwrap.h:30 NCCL WARN NVML failure 'Driver/library version mismatch'",
                 "node-1:95:95 [1] init.cc:1234 NCCL WARN Cuda failure 'system not yet initialized'"):
        assert diagnose_paste(tmp_path, line).hypotheses[0].category is Category.GPU_ERROR, line


def test_sglangs_stamp_with_its_parallel_ranks_and_lightnings_rank_are_prefixes(tmp_path: Path) -> None:
    # SGLang's scheduler writes its tensor/data/expert-parallel ranks inside the stamp's brackets; the exception behind
    # it was an error line no rule read (a framework's check, a GPU's error)
    line = "[2026-12-05 01:31:24 TP3] RuntimeError: CUDART error: an illegal memory access was encountered"
    prefix = split_prefix(line)
    assert prefix.time_text == "2026-12-05 01:31:24" and prefix.origin.rank is None and prefix.body.startswith("RuntimeError")
    assert diagnose_paste(tmp_path, line).hypotheses[0].category is Category.GPU_ERROR
    several = split_prefix("[2026-12-05 02:02:44 DP3 TP3 EP3] RuntimeError: boom")
    assert several.body == "RuntimeError: boom"
    # a stamp followed by words that merely look alike keeps them
    assert split_prefix("2026-12-05 01:31:24 TP3 is up").body == "TP3 is up"
    # Lightning's ``[rank: 3]`` is the global rank
    lightning = split_prefix("[rank: 3] RuntimeError: CUDA error: an illegal memory access was encountered")
    assert lightning.origin.rank == 3 and lightning.body.startswith("RuntimeError")
    assert diagnose_paste(tmp_path, "[rank: 3] RuntimeError: CUDA error: an illegal memory access was "
                                    "encountered").hypotheses[0].culprit_ranks == (3,)


def test_xgboosts_group_on_one_gpu_and_lightgbms_port_in_their_words(tmp_path: Path) -> None:
    # real: NVIDIA/cudf-spark-examples#131, dmlc/xgboost#6344 and #10200 (a CrossValidator's trainings, or Dask's
    # workers, given one GPU); microsoft/SynapseML#1311 and LightGBM#3753 (a port still held from the run before)
    each_read(tmp_path, {
        "ml.dmlc.xgboost4j.java.XGBoostError: [17:58:48] /src/common/device_helpers.cu:64: Check failed: n_uniques == "
        "world (1 vs. 2) : Multiple processes within communication group running on same CUDA device is not "
        "supported": Category.DUPLICATE_GPU,
        "[12:40:37] /workspace/src/collective/nccl_device_communicator.cu:45: Check failed: n_uniques == world_size_ (2 "
        "vs. 4) : Multiple processes within communication group running on same CUDA device is not supported.":
            Category.DUPLICATE_GPU,
        "java.lang.Exception: Network init call failed in LightGBM with error: Binding port 12401 failed":
            Category.PORT_IN_USE,
        "[LightGBM] [Fatal] Binding port 12401 failed": Category.PORT_IN_USE,
    }, quiet="[LightGBM] [Info] Binding port 12401 succeeded\nMultiple processes within communication group: 4\n")


def test_a_bare_socket_timeout_is_a_store_wait_that_ran_out(tmp_path: Path) -> None:
    # real: Huawei's article on torchrun started minutes apart on two nodes (the ninety-sixth round), and
    # LlamaFactory#6154's DistStoreError: c10d's (and torch_npu's) TCPStore raising as its wait runs out
    each_read(tmp_path, {"RuntimeError: The inner error: Socket Timeout": Category.RENDEZVOUS_TIMEOUT,
                         "torch.distributed.DistStoreError: Socket Timeout": Category.RENDEZVOUS_TIMEOUT})
    # the words in lower case are any program's (a download's): not c10d's store
    other = diagnose_paste(tmp_path, "ERROR: socket timeout while downloading the dataset").hypotheses[0]
    assert other.category is not Category.RENDEZVOUS_TIMEOUT


def test_a_platforms_return_code_137_is_a_kill(tmp_path: Path) -> None:
    # real: Huawei ModelArts' troubleshooting page (a training job's memory overflow): 128 + SIGKILL, written after a colon
    each_read(tmp_path, {"[Modelarts Service Log]Training end with return code: 137": Category.RANK_KILLED,
                         "Training end with return code: 1": Category.UNRECOGNISED},
              quiet="Training end with return code: 0\n")


def test_libuvs_listen_failure_broken_after_its_port_is_a_port_in_use(tmp_path: Path) -> None:
    # real: vllm-project/vllm#39405 (every data-parallel group's store on one port): the paste broke the message after
    # its port and cut the last word; its second line is no host's (``useIpv6`` is libuv's key, not pdsh's prefix)
    paste = ("DistNetworkError: The server socket has failed to listen on any local network address. port: 29501,\n"
             "useIpv6: false, code: -98, name: EADDRINUSE, message: address already in us\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and not top.culprit_hosts
    assert split_prefix("useIpv6: false, code: -98").origin.host is None
    assert split_prefix("node3: RuntimeError: x").origin.host == "node3"


def test_an_assertion_over_the_jobs_shape_is_a_check_of_its_setup(tmp_path: Path) -> None:
    # real: deepseek-ai/DeepEP#104 (its internode kernels on two nodes of one GPU each: unsupported, its maintainer)
    each_read(tmp_path, {
        "RuntimeError: Failed: Assertion error /home1/DeepEP/csrc/deep_ep.cpp:32 'num_ranks > NUM_MAX_NVL_PEERS or "
        "low_latency_mode'": Category.UNRECOGNISED,
        "F1205 10:05:13.300100 48213 comm.cc:66] Check failed: world_size % 8 == 0": Category.UNRECOGNISED})
    # an assertion over a value of the program's own stays its crash
    top = diagnose_paste(tmp_path, "AssertionError: learning rate must be positive, got -1").hypotheses[0]
    assert "check of the job's setup" not in top.title


def _watchdog(rank: int) -> str:
    return (f"[E502 10:41:12.413551830 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=1423, OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, "
            "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n")


def _per_rank_files(tmp_path: Path, name: str, own: str) -> tuple[Hypothesis, ...]:
    """Eight ranks' files laid out as ``name`` says, rank 3's holding ``own``, the others their watchdog's timeout."""
    for rank in range(8):
        path = tmp_path / name.format(rank=rank)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(own + "\n" if rank == 3 else _watchdog(rank))
    return analyze_paths([str(tmp_path)]).diagnosis.hypotheses


def test_torchruns_log_dir_files_take_their_nodes_first_rank_from_their_siblings(tmp_path: Path) -> None:
    # torchrun --log-dir: <dir>/<run id>/attempt_0/<local rank>/stderr.log; the siblings' lines name their global rank
    # (the watchdog's ``[Rank 5]``) as their local rank plus the node's first rank (0 here): rank 3's file, whose line
    # names none, is rank 3's; it was no rank at all, and the timeouts read as unexplained
    top = _per_rank_files(tmp_path / "a", "run1/attempt_0/{rank}/stderr.log",
                          "ERROR 12-05 09:21:05 parallel_state.py:1094] load task fail, return code 7")[0]
    assert top.culprit_ranks == (3,) and top.category is Category.LAGGING_RANK
    # a node whose files name global ranks 8-15 for local ranks 0-7: rank 11
    for rank in range(8):
        path = tmp_path / "b" / f"run1/attempt_0/{rank}/stderr.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("ERROR load task fail, return code 7\n" if rank == 3 else _watchdog(rank + 8))
    assert analyze_paths([str(tmp_path / "b")]).diagnosis.hypotheses[0].culprit_ranks == (11,)


def test_one_rank_failing_in_its_own_library_call_while_the_others_wait_is_the_culprit(tmp_path: Path) -> None:
    # gloo's check of the call's tensors on one rank: it stopped there, the others timed out in the collective
    top = _per_rank_files(tmp_path / "a", "rank{rank}.log",
                          "RuntimeError: ProcessGroupGloo::allreduce: tensors must all have the same type")[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,)
    assert "failed in its own call to the communication library" in top.title
    # its words naming a cause: gloo's CUDA check with the code of out of memory
    top = _per_rank_files(tmp_path / "b", "rank{rank}.log",
                          "RuntimeError: [enforce fail at ../third_party/gloo/gloo/cuda_private.cu:69] error == "
                          "cudaSuccess. 2 vs 0. Error at: ../third_party/gloo/gloo/cuda_private.cu:69: out of memory")[0]
    assert top.culprit_ranks == (3,) and top.category is Category.RANK_OUT_OF_MEMORY
    # a library's words for a wait or a peer gone are a victim's: no culprit from them
    top = _per_rank_files(tmp_path / "c", "rank{rank}.log",
                          "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:587] Application timeout "
                          "caused pair closure")[0]
    assert "failed in its own call" not in top.title


def test_a_failed_assertion_of_a_program_or_library_is_never_silent_and_is_its_own_failure(tmp_path: Path) -> None:
    # real: ggml-org/llama.cpp#7427 (an RPC server aborting on ggml's assertion, a release's regression): silent before
    each_read(tmp_path, {
        "GGML_ASSERT: /usr/local/src/ai/llamacpp/llama.cpp/ggml-backend.c:226: offset + size <= ggml_nbytes(tensor) && "
        "\"tensor write out of bounds\"": Category.RANK_CRASHED,
        "Assertion failed: (rank < size), function foo, file bar.c, line 12.": Category.RANK_CRASHED})
    # a communication library's internal check stays an error no rule explains (MPICH's, as held cases label it)
    top = diagnose_paste(tmp_path, "Assertion failed in file src/mpid/ch4/src/init_comm.c at line 72: in_use == 0"
                         ).hypotheses[0]
    assert top.category is Category.UNRECOGNISED


def test_mp_spawns_report_of_the_process_that_raised_names_its_traceback(tmp_path: Path) -> None:
    # real: k2-fsa/ZipVoice#17 (mp.spawn's ProcessRaisedException: the traceback below is that process's)
    paste = ("-- Process 1 terminated with the following error:\n"
             "Traceback (most recent call last):\n"
             '  File "/root/envs/zipvoice/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 90, in _wrap\n'
             "    fn(i, *args)\n"
             '  File "/root/workspace/ZipVoice/zipvoice/train_flow.py", line 769, in train_one_epoch\n'
             "    raise RuntimeError(\n"
             "RuntimeError: grad_scale is too small, exiting: 2.3283064365386963e-10\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_local_ranks == (1,) and "local rank 1" in top.title
    # the scope ends at a blank line: a later line is no process's
    events = timeline_of(tmp_path, paste + "\nRuntimeError: something else\n").events
    assert [e.origin.local_rank for e in events if "something else" in e.text] == [None]
    assert [e.origin.local_rank for e in events if "grad_scale" in e.text] == [1]


def test_a_spawned_processs_traceback_after_a_prompt_keeps_the_prompts_host(tmp_path: Path) -> None:
    paste = ("root@gpu-node-7:~# python train.py\n"
             "-- Process 2 terminated with the following error:\n"
             "Traceback (most recent call last):\n"
             '  File "/x/train.py", line 9, in main\n'
             "    raise ValueError('bad batch')\n"
             "ValueError: bad batch\n")
    raised = [e for e in timeline_of(tmp_path, paste).events if "bad batch" in e.text and e.kind.value == "exception"]
    assert [(e.origin.host, e.origin.local_rank) for e in raised] == [("gpu-node-7", 2)]


def test_a_layer_that_reached_none_of_the_peers_it_was_given_is_a_peer_not_reached(tmp_path: Path) -> None:
    # real: learning-at-home/hivemind#551 (the daemon of a peer in WSL could not reach its bootstrap peer on EC2):
    # an error no rule explains before
    each_read(tmp_path, {
        "Daemon failed to start: 2023/01/20 13:11:28 failed to connect to bootstrap peers": Category.PEER_UNREACHABLE,
        "grpc._channel._InactiveRpcError: status = StatusCode.UNAVAILABLE details = \"failed to connect to all "
        "addresses\"": Category.PEER_UNREACHABLE,
        "RuntimeError: Unable to connect to the coordinator server at 10.1.2.3:8476": Category.PEER_UNREACHABLE})
    # a download's host is none of the job's
    top = diagnose_paste(tmp_path, "OSError: failed to connect to all addresses of https://huggingface.co\n")
    assert top.hypotheses[0].category is not Category.PEER_UNREACHABLE


def test_a_socket_error_s_type_and_code_are_read_whatever_the_language_of_its_words(tmp_path: Path) -> None:
    # Windows writes its socket errors in the system's language (a Chinese user's paste: ``[WinError 10061] 由于…``):
    # the exception's type and the code say what the words say; an exception of the program before
    each_read(tmp_path, {
        "ConnectionRefusedError: [WinError 10061] 由于目标计算机积极拒绝，无法连接。": Category.PEER_UNREACHABLE,
        "ConnectionRefusedError: [WinError 10061] No connection could be made because the target machine actively "
        "refused it": Category.PEER_UNREACHABLE,
        "TimeoutError: [WinError 10060] 由于连接方在一段时间内没有正确答复或连接的主机没有反应，连接尝试失败。": Category.PEER_UNREACHABLE,
        "OSError: [Errno 113] Keine Route zum Zielrechner": Category.PEER_UNREACHABLE,
        "OSError: [WinError 10048] 通常每个套接字地址(协议/网络地址/端口)只允许使用一次。": Category.PORT_IN_USE})


def test_an_mpi_transport_that_could_not_make_its_completion_queue_is_the_memlock_limit(tmp_path: Path) -> None:
    # real: flux-framework/flux-core#4451 (MVAPICH2 under Flux, the locked-memory limit the jobs inherited): an error
    # no rule explains before
    each_read(tmp_path, {
        "0.260s: job.exception type=exec severity=0 MPI_Abort: Fatal error in MPI_Init: Other MPI error, error stack: "
        "MPIDI_CH3I_RDMA_init(446):  rdma_iba_hca_init(1636)..: cannot create cq": Category.MEMLOCK_LIMIT,
        "[node-3][[43814,1],3][btl_openib_component.c:1548:init_one_device] Failed to create a completion queue (CQ):":
            Category.MEMLOCK_LIMIT})


def test_an_empty_store_address_on_the_launch_is_named(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#2612 (its launcher took the first node's address from `hostname -I`, empty in the
    # pod: ``--master_addr= --master_port=29500``), silent before: its lines are INFO ones
    for paste in ("[2022-12-15 21:00:19,545] [INFO] [runner.py:508:main] cmd = pdsh -S -f 1024 -w ddp-0,ddp-1 cd /app; "
                  "/usr/local/bin/python -u -m deepspeed.launcher.launch --world_info=eyJ= --node_rank=%n "
                  "--master_addr= --master_port=29500 train.py\n",
                  "+ torchrun --nnodes 2 --master_addr --master_port 29500 train.py\n",
                  "MASTER_ADDR=\nMASTER_PORT=29500\n"):
        top = diagnose_paste(tmp_path, paste).hypotheses[0]
        assert top.category is Category.PEER_UNREACHABLE and "address is empty" in top.title, paste
    # a value, a variable the shell expands later, a usage text: none is empty
    for paste in ("cmd = torchrun --master_addr=10.0.0.1 --master_port=29500 train.py\n",
                  "torchrun --master_addr $MASTER_ADDR --master_port 29500 train.py\n",
                  "usage: torchrun [--master_addr MASTER_ADDR] [--master_port MASTER_PORT]\n"):
        assert not any("address is empty" in h.title for h in diagnose_paste(tmp_path, paste).hypotheses), paste


def test_nccl_without_libibverbs_on_a_host_with_ipoib_runs_over_sockets(tmp_path: Path) -> None:
    # real: sgl-project/sglang#1427 (the image lacked libibverbs: every node's NCCL over TCP on ib0), silent before:
    # NCCL 2.8+ says it at INFO
    paste = ("node1:100:100 [0] NCCL INFO Failed to open libibverbs.so[.1]\n"
             "node1:100:100 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\n"
             "node1:100:100 [0] NCCL INFO Using network Socket\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK and "ib0" in top.title and top.confidence >= 0.5
    # on a machine whose sockets run on an Ethernet NIC, that INFO line is what every run prints: nothing, and no
    # error either
    quiet = paste.replace("ib0:10.0.0.1", "eth0:10.0.0.1")
    assert diagnose_paste(tmp_path, quiet).hypotheses == ()


def test_libibverbs_without_the_nics_provider_is_an_error_line(tmp_path: Path) -> None:
    # real: horovod/horovod#1117 (the image lacked libmlx5: RDMA unusable, NCCL over TCP), silent before
    top = diagnose_paste(tmp_path, "Warning: no userspace device-specific driver found for "
                                   "/sys/class/infiniband_verbs/uverbs0\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "device-specific driver" in top.title


def test_a_bar_drawn_a_default_timeout_into_its_work_before_a_cut_timeout_is_the_late_ranks(tmp_path: Path) -> None:
    # real: ultralytics/yolov5#7481 (rank 0 caching 42k images in RAM for 30 minutes, rank 1's watchdog line cut by
    # the paste, so the wait's length is not in it): an unexplained timeout before
    def paste(elapsed: str) -> str:
        return (f"train: Caching images (31.3GB ram):  85%|████████▍ | 35592/41999 [{elapsed}<06:34, 16.24it/s]\n"
                f"train: Caching images (31.3GB ram):  85%|████████▍ | 35595/41999 [{elapsed}<08:39, 12.34it/s]\n"
                "[E ProcessGroupNCCL.cpp:587] [Rank 1] Watchdog c\n")
    for elapsed in ("29:57", "09:48"):  # 30 minutes (the older default), 10 (NCCL's of recent releases)
        top = diagnose_paste(tmp_path, paste(elapsed)).hypotheses[0]
        assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,), elapsed
    # a bar far from either default says nothing about the wait
    top = diagnose_paste(tmp_path, paste("17:02")).hypotheses[0]
    assert top.category is not Category.LAGGING_RANK


def test_a_library_refusing_a_setting_in_the_distributed_mode_is_the_jobs_setup(tmp_path: Path) -> None:
    # real: huggingface/lerobot#2270 (SmolVLA loaded with device_map='auto' under accelerate's --multi_gpu): read as
    # the rank's own crash before; the setting, not a failure as it ran
    each_read(tmp_path, {
        "[rank0]: ValueError: You can't train a model that has been loaded with `device_map='auto'` in any distributed "
        "mode. Please rerun your script specifying `--num_processes=1`": Category.UNRECOGNISED,
        "ValueError: You can't train a model that has been loaded in 8-bit precision on multiple devices in any "
        "distributed mode.": Category.UNRECOGNISED})
    # a program's own error that only mentions distributed training stays its own failure
    top = diagnose_paste(tmp_path, "[rank0]: ValueError: Expected input batch_size (16) to match target batch_size "
                                   "(12) during distributed training\n").hypotheses[0]
    assert top.category is Category.RANK_CRASHED


def test_a_store_port_windows_refused_is_named_so(tmp_path: Path) -> None:
    # from the hundred-and-fourth round's leads (RVC-WebUI#246: a bind refused with 10013 though no program held the
    # port): Windows' WSAEACCES, a port in a range it reserves; read as the rank's own exception before
    for words in ("以一种访问权限不允许的方式做了一个访问套接字的尝试。", "An attempt was made to access a socket in a way "
                  "forbidden by its access permissions."):
        top = diagnose_paste(tmp_path, "RuntimeError: The server socket has failed to listen on any local network "
                                       f"address. The server socket has failed to bind to [::]:29500 (system error: "
                                       f"10013 - {words}).\n").hypotheses[0]
        assert top.category is Category.PORT_IN_USE and "Windows refused it" in top.title and "excludedportrange" in top.fix


def test_a_cuda_handle_made_elsewhere_is_the_softwares_not_the_gpus(tmp_path: Path) -> None:
    # real: vllm-project/vllm#37931 (DeepEP's CUDA IPC handles opened on another node of a GB200 NVL72): the path of
    # DeepEP's check was read as the error, the GPU's category
    top = diagnose_paste(tmp_path, "RuntimeError: Failed: CUDA error /tmp/ep_kernels_workspace/DeepEP/csrc/"
                                   "deep_ep.cpp:226 'invalid resource handle'\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "not valid in that process" in top.title
    # the quoted words of the same check are read as what they say
    top = diagnose_paste(tmp_path, "RuntimeError: Failed: CUDA error /workspace/DeepEP/csrc/deep_ep.cpp:74 "
                                   "'out of memory'\n").hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY
    # a process's exception that is such a refusal: the refusal says why it raised
    top = diagnose_paste(tmp_path, "[rank7]: torch.AcceleratorError: CUDA error: named symbol not found\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_ranks == (7,)


def test_a_sigabrt_recorded_apart_from_the_ranks_watchdog_timeouts_is_their_end(tmp_path: Path) -> None:
    # real: SWivid/F5-TTS#728 (ranks 2 and 3's watchdog timeouts, torchrun's record of local rank 1's -6 stored
    # apart): read as rank 1's crash with the others as its cascade before
    timeout = ("[rank{r}]:[E ProcessGroupNCCL.cpp:583] [Rank {r}] To avoid data inconsistency, we are taking the entire "
               "process down.\n[rank{r}]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank {r}] Process group watchdog thread "
               "terminated with exception: [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=61, "
               "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n")
    for r in (2, 3):
        (tmp_path / f"part-{r}.txt").write_text(timeout.format(r=r))
    (tmp_path / "launcher.txt").write_text(
        "E0125 00:51:54.603000 129926476711744 torch/distributed/elastic/multiprocessing/api.py:826] failed "
        "(exitcode: -6) local_rank: 1 (pid: 28773) of binary: /home/kd/anaconda3/envs/f5-tts/bin/python\n")
    paths = [str(tmp_path / name) for name in ("part-2.txt", "part-3.txt", "launcher.txt")]
    top = analyze_paths(paths).diagnosis.hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT
    # that process's own error in a file of its own: its abort is its crash
    (tmp_path / "rank1.txt").write_text("[rank1]: terminate called after throwing an instance of 'std::runtime_error'\n"
                                        "[rank1]:   what():  CUDA error: an illegal memory access was encountered\n")
    top = analyze_paths([*paths, str(tmp_path / "rank1.txt")]).diagnosis.hypotheses[0]
    assert top.category is not Category.UNEXPLAINED_TIMEOUT and 1 in top.culprit_ranks


def test_gpu_initiated_communications_wait_raised_is_the_librarys_report(tmp_path: Path) -> None:
    # real: NVIDIA-NeMo/Automodel#3967 (DeepEP built for NVSHMEM's old queue-pair layout): read as the rank's own
    # crash before; the library's wait, as its error line is
    top = diagnose_paste(tmp_path, "Traceback (most recent call last):\n  File \"train.py\", line 9, in step\n"
                                   "    out = dispatcher.dispatch(x)\n"
                                   "RuntimeError: DeepEP error: timeout (dispatch CPU)\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "DeepEP error: timeout" in top.title  # the exception, quoted


def test_cuda_ipc_refused_between_processes_is_their_gpus_hidden_from_each_other(tmp_path: Path) -> None:
    # real: BLAST-WarpX/warpx#6382, E3SM-Project/E3SM#4834 (Slurm's GPU binding under Cray MPICH's GTL): read as the
    # GPU's fault before
    top = diagnose_paste(tmp_path, "1: (GTL DEBUG: 1) cuIpcOpenMemHandle: invalid argument, CUDA_ERROR_INVALID_VALUE, "
                                   "line no 272\n3: (GTL DEBUG: 3) cuIpcOpenMemHandle: invalid argument, "
                                   "CUDA_ERROR_INVALID_VALUE, line no 272\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "CUDA IPC" in top.title and "--gpu-bind=none" in top.fix


def test_a_shared_memory_segment_that_already_exists_is_shms(tmp_path: Path) -> None:
    # real: mosaicml/streaming#332, #781 (the job's processes not told of each other; a run killed with Ctrl+C leaving
    # its segments): read as the rank's own exception before
    paste = ("[rank7]:   File \"/opt/conda/lib/python3.10/site-packages/streaming/base/shared/prefix.py\", line 192, in "
             "get_shm_prefix\n[rank7]:     shm = SharedMemory(name, True, len(data))\n"
             "[rank7]:   File \"/opt/conda/lib/python3.10/multiprocessing/shared_memory.py\", line 104, in __init__\n"
             "[rank7]:     self._fd = _posixshmem.shm_open(\n"
             "[rank7]: FileExistsError: [Errno 17] File exists: '/000010_locals'\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.SHM_EXHAUSTED and top.culprit_ranks == (7,)
    # a file that exists, elsewhere, is the program's own error
    top = diagnose_paste(tmp_path, "[rank7]: FileExistsError: [Errno 17] File exists: '/ckpt/step_100'\n").hypotheses[0]
    assert top.category is Category.RANK_CRASHED


def test_an_unexplained_timeout_under_a_short_limit_says_so(tmp_path: Path) -> None:
    # real: OpenNMT/OpenNMT-py#2515 (its own 60 s collective timeout), TGI's shards (60 s), InstructLab's 1 ms
    line = ("[E ProcessGroupNCCL.cpp:467] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=144159, "
            "OpType=ALLGATHER, NumelIn=4096, NumelOut=8192, Timeout(ms)={ms}) ran for {ran} milliseconds before timing "
            "out.\n")
    top = diagnose_paste(tmp_path, line.format(ms=60000, ran=60820)).hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT and "a limit of only 1.0 min" in top.title
    assert top.fix.startswith("Raise the timeout") and "Flight Recorder" in top.fix
    # the defaults (10 and 30 minutes) are no short limit
    top = diagnose_paste(tmp_path, line.format(ms=600000, ran=600420)).hypotheses[0]
    assert "a limit of only" not in top.title


def test_the_events_of_several_kinds_come_in_input_order(tmp_path: Path) -> None:
    # Timeline.of reads a per-kind index: the events of several kinds, merged, stay in the order of the inputs
    tl = timeline_of(tmp_path, "[rank0]: ValueError: first\n"
                               "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
                               "[rank2]: ValueError: third\n")
    kinds = {e.kind for e in tl.events}
    merged = tl.of(*kinds, *kinds)  # (a kind asked twice is read once)
    assert merged == list(tl.events) and len(merged) >= 3
    assert tl.of() == []
