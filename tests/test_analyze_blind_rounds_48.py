"""Readings of the hundred-and-ninety-fifth round (``r198*``: JIT extension builds, torch.compile under DDP, GPU
platform plumbing, profilers, NCCL's network plugins, HPC containers, managed ML platforms, forking and CUDA), and of
held cases its readings reached. One behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one, timeline_of, top_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Hypothesis, Kind

_PADDLE_RECORD = ("LAUNCH INFO 2022-11-21 02:35:54,384 Pod failed\n"
                  "LAUNCH ERROR 2022-11-21 02:35:54,385 Container failed !!!\n"
                  "Container rank 0 status failed cmd ['/usr/bin/python3', '-u', 'tools/train.py', '--eval'] code 1 log "
                  "log/workerlog.0\n")


def test_paddles_container_record_names_the_rank_that_failed(tmp_path: Path) -> None:
    # real: PaddlePaddle/PaddleNLP (r198g), PaddleDetection (r197c): the controller's record of a container it ran
    record = one(_PADDLE_RECORD.splitlines()[2], Kind.WORKER_FAILED)
    assert (record.origin.rank, record.data["exitcode"]) == (0, 1)
    top = top_of(tmp_path, _PADDLE_RECORD)
    assert top.culprit_ranks == (0,) and "Pod failed" not in top.title, top
    # (the command list cut by the paste still names the rank, its code unknown)
    cut = one("Container rank 3 status failed cmd ['/usr/bin/python3', '-u', 'run_pretrain.py', '--model_ty",
              Kind.WORKER_FAILED)
    assert cut.origin.rank == 3 and cut.data["exitcode"] is None
    # a container still running is no failure
    assert not [e for e in events_of("Container rank 0 status running cmd ['python'] code 0") if
                e.kind is Kind.WORKER_FAILED]


def _beside(tmp_path: Path, console: str, other: str) -> list[Hypothesis]:
    """The hypotheses of a launcher's console and another input read together."""
    (tmp_path / "launcher.txt").write_text(console)
    (tmp_path / "other.txt").write_text(other)
    return list(analyze_paths([str(tmp_path / "launcher.txt"), str(tmp_path / "other.txt")]).diagnosis.hypotheses)


def test_a_workers_error_stored_apart_from_its_launchers_record_is_its_cause(tmp_path: Path) -> None:
    # real: PaddleDetection (r197c): the launcher's console in one file, the worker's log tail in another
    worker = "    task = group.process_group.barrier()\nOSError: (External) NCCL error(2), unhandled system error.\n"
    top = _beside(tmp_path, _PADDLE_RECORD, worker)[0]
    assert top.category is Category.PEER_UNREACHABLE and top.culprit_ranks == (0,), top
    assert "exited with code 1" in top.title, top
    # with records of two workers, the error of an input without a rank is neither's
    two = _beside(tmp_path, _PADDLE_RECORD + "Container rank 1 status failed cmd ['python'] code 1 log x\n", worker)
    assert not [h for h in two if h.category is Category.PEER_UNREACHABLE and h.culprit_ranks], two
    # (also where the other worker's record is of one the launcher ended: the error may be either's)
    ended = _beside(tmp_path, _PADDLE_RECORD + "LAUNCH ERROR ERROR rank 1 error with exit code -15, check log for "
                    "detail.\n", worker)
    assert not [h for h in ended if h.category is Category.PEER_UNREACHABLE and h.culprit_ranks], ended
    # an input whose lines name another host is that host's, not the worker's the record names
    hosted = _beside(tmp_path, _PADDLE_RECORD, "node-9:123:456 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.9<0>\n"
                     "node-9: OSError: (External) NCCL error(2), unhandled system error.\n")
    assert not [h for h in hosted if h.category is Category.PEER_UNREACHABLE and h.culprit_ranks == (0,)], hosted


def test_an_extension_that_did_not_build_and_a_variable_not_set_are_the_setup(tmp_path: Path) -> None:
    # real: QwenLM/Qwen3#697 (r198a): DeepSpeed's fused_adam built on every rank
    built = ("RuntimeError: Error building extension 'fused_adam'\n"
             "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 3123202) of "
             "binary: /envs/bin/python\n")
    assert top_of(tmp_path, built).category is Category.UNRECOGNISED
    # the build's progress line is no failure
    assert not diagnose_paste(tmp_path, "Building extension module fused_adam...\n").hypotheses
    # real: huggingface/notebooks (r198g): SageMaker's data parallel library started outside SageMaker
    unset = "".join(f"[1,{r}]<stderr>:Environment variable SAGEMAKER_INSTANCE_TYPE is not set\n" for r in range(4))
    assert top_of(tmp_path, unset).category is Category.UNRECOGNISED
    # a variable left at its default, said so, is no failure
    assert not diagnose_paste(tmp_path, "Environment variable NCCL_DEBUG is not set, defaulting to WARN\n").hypotheses


def test_apptainers_own_fatal_error_is_the_containers_setup(tmp_path: Path) -> None:
    # real: FZJ-JSC/tutorial-multi-gpu#36 (r198f): Singularity refusing the image on the nodes, then mpirun's summary
    paste = ("FATAL:   permission denied\nFATAL:   permission denied\n"
             "Primary job  terminated normally, but 1 process returned\n"
             "a non-zero exit code. Per user-direction, the job has been aborted.\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "container runtime" in top.title, top
    # another program's ``FATAL:`` with its words right after it is not Apptainer's
    other = "FATAL: permission denied\n"
    assert "container runtime" not in top_of(tmp_path, other).title


def test_nccls_internal_error_quoted_by_a_programs_check_is_ncclss(tmp_path: Path) -> None:
    # real: NVIDIA/TensorRT-LLM#1560 (r198d): the plugin's check of an NCCL call, then mpirun's first failed process
    line = ("Failed, NCCL error /code/tensorrt_llm/cpp/tensorrt_llm/plugins/common/plugin.cpp:86 'internal error - "
            "please report this issue to the NCCL developers'")
    event = one(line, Kind.NCCL_ERROR)
    assert event.data["error"].startswith("internal error"), event
    paste = (line + "\nmpirun detected that one or more processes exited with non-zero status, thus causing\n"
             "the job to be terminated. The first process to do so was:\n\n  Process name: [[16944,1],6]\n"
             "  Exit code:    1\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and top.culprit_ranks == (6,), top
    # its 'unhandled cuda error' is read as NCCL's words for a failed CUDA call, as torch's is
    cuda = line.replace("internal error - please report this issue to the NCCL developers",
                        "unhandled cuda error (run with NCCL_DEBUG=INFO for details)")
    assert top_of(tmp_path, cuda + "\n").category is Category.GPU_ERROR
    # a path without NCCL's quoted words is no NCCL error
    assert not [e for e in events_of("Failed, NCCL error /code/plugin.cpp:86") if e.kind is Kind.NCCL_ERROR]


def test_paddles_enforce_of_an_nccl_call_is_a_failed_cuda_call(tmp_path: Path) -> None:
    # real: PaddlePaddle/models (r198g): Paddle 1.5's ``unhandled cuda error at [… nccl_helper.h:70]``
    line = ("  what():  unhandled cuda error at [/ssd1/xiege/paddle_wheel/Paddle/paddle/fluid/platform/nccl_helper.h:70]")
    assert one(line, Kind.NCCL_ERROR).data["error"] == "unhandled cuda error"
    assert top_of(tmp_path, "terminate called after throwing an instance of 'paddle::platform::EnforceNotMet'\n"
                  + line + "\n").category is Category.GPU_ERROR
    # the same words at another operator's source are no NCCL call's
    assert not [e for e in events_of("  what():  unhandled cuda error at [/paddle/fluid/operators/conv_op.cu:70]")
                if e.kind is Kind.NCCL_ERROR]


def test_cuda_that_did_not_start_raised_is_read_as_its_warning_is(tmp_path: Path) -> None:
    # real: gpustack/gpustack#4891 (r198c): vLLM's workers on an HGX whose fabric manager was not running
    raised = ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
              "NumCudaDevices() that might have already set an error? Error 802: system not yet initialized")
    assert "system not yet initialized" in one(raised, Kind.GPU_ERROR).data["message"]
    assert "fabric manager" in top_of(tmp_path, raised + "\n").title
    # without the error's code and words nothing says what CUDA lacked
    assert not [e for e in events_of("RuntimeError: Unexpected error from cudaGetDeviceCount().")
                if e.kind is Kind.GPU_ERROR]


def test_hccls_link_table_names_the_ranks_whose_links_never_came(tmp_path: Path) -> None:
    # real: vllm-project/vllm-ascend (r198g), held HCCL guides' EI0006 cases: rank 0 waited 120 s for ranks 27 and 29
    head = "[ERROR] HCCL(106335,):2026-05-21-21:39:58.705.731 [hccl_socket_manager.cc:582] [128655]   "
    rows = "".join(f"{head}|  10.20.0.{ip}({rank})   |  16666  |   10.20.0.2(0)   |  344832056  |  server  | time out |"
                   "   DISABLE  | LinkInfo\n" for ip, rank in ((31, 29), (29, 27)))
    event = one(rows.splitlines()[0], Kind.NCCL_CONNECT_FAILED)
    assert (event.origin.rank, event.data["peer_rank"], event.data["peer_addr"]) == (0, 29, "10.20.0.31")
    top = top_of(tmp_path, rows)
    assert top.category is Category.PEER_UNREACHABLE and top.culprit_ranks == (27, 29), top
    assert top.affected_ranks == (0,), top
    # a link whose state is not a timeout is no failure
    assert not [e for e in events_of(rows.splitlines()[0].replace("time out", "  ok    "))
                if e.kind is Kind.NCCL_CONNECT_FAILED]


def test_a_process_waiting_for_an_extensions_build_lock_waits_for_a_build(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeedExamples#302 (r198a): py-spy's dump of a rank in torch's FileBaton.wait
    dump = ("Process 46930: /envs/bin/python -u main.py --local_rank=0\n"
            "Python v3.11.2 (/envs/bin/python3.11)\n\n"
            'Thread 46930 (idle): "MainThread"\n'
            "    wait (torch/utils/file_baton.py:42)\n"
            "    _jit_compile (torch/utils/cpp_extension.py:1522)\n"
            "    load (torch/utils/cpp_extension.py:1284)\n"
            "    main (main.py:273)\n")
    top = top_of(tmp_path, dump)
    assert top.category is Category.UNRECOGNISED and "lock of a JIT extension build" in top.title, top
    # a main thread waiting elsewhere (a queue) is the lagging process it was read as before
    queue = dump.replace("wait (torch/utils/file_baton.py:42)", "get (queue.py:170)")
    assert top_of(tmp_path, queue).category is Category.LAGGING_RANK


def test_words_of_device_faults_and_timeouts_read_in_silent_pastes(tmp_path: Path) -> None:
    # real: pytorch/pytorch#132640 (r198d): compute-sanitizer's report under torchrun
    sanitizer = ("========= COMPUTE-SANITIZER\n========= Invalid __global__ read of size 4 bytes\n"
                 "=========     at ncclDevKernel_AllReduce_Sum_u8_RING_LL(ncclDevComm *, unsigned long, ncclWork *)\n")
    assert top_of(tmp_path, sanitizer).category is Category.GPU_ERROR
    assert not diagnose_paste(tmp_path, "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n").hypotheses
    # real: Ascend/pytorch (held r189f): CANN's wait for a stream that ran out
    stream = ("EE1002: 2024-09-03-16:50:00.041.231 Stream synchronize timeout. rtDeviceSynchronize execute failed, "
              "reason=[stream sync timeout]\n")
    assert top_of(tmp_path, stream).category is Category.UNEXPLAINED_TIMEOUT
    assert not diagnose_paste(tmp_path, "Stream synchronize finished in 3 ms\n").hypotheses
    # real: dmlc/xgboost#6047 (r198c): XGBoost's check wrapped by pytest's report before ``same CUDA device``
    wrapped = ("E   xgboost.core.XGBoostError: [03:49:09] ../src/common/device_helpers.cu:64: \n"
               "  Check failed: n_uniques == world (1 vs. 4) : Multiple processes within communication group running on\n"
               "  same CUDA device is not supported\n")
    assert top_of(tmp_path, wrapped).category is Category.DUPLICATE_GPU


def test_processes_that_wait_for_one_file_lock_none_gets_are_read(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#5205 (held r117a): Triton's autotune cache on NFS, three ranks waiting for its lock
    stamp = "2024-02-27 15:56:22,424 - /envs/lib/python3.10/site-packages/filelock/_api.py[line:254] - DEBUG: "
    waits = "".join(f"{stamp}Attempting to acquire lock {n} on /data2/.triton/autotune/k.pickle.lock\n"
                    for n in (140192009925296, 140233385915056, 140592852660912))
    top = top_of(tmp_path, waits)
    assert top.category is Category.UNRECOGNISED and "file lock" in top.title, top
    # each one acquiring it in turn is a lock that works
    taken = "".join(f"{stamp}Attempting to acquire lock {n} on /data2/k.lock\n{stamp}Lock {n} acquired on /data2/k.lock\n"
                    for n in (140192009925296, 140233385915056))
    assert not diagnose_paste(tmp_path, taken).hypotheses
    # one waiter alone is no sign of a lock that none gets
    assert not diagnose_paste(tmp_path, waits.splitlines(keepends=True)[0]).hypotheses
    assert not [e for e in timeline_of(tmp_path, taken).events if e.kind is Kind.ERROR_LINE]


def test_pythons_own_exception_class_raised_with_words_is_an_error(tmp_path: Path) -> None:
    # a sweep of DeepSpeed's own messages (deepspeedai/DeepSpeed at edaa722): ``raise Exception("…")``
    raised = ("Exception: The deprecated version of ZeRO Stage 1 is not supported in deepspeed >= 0.5.9. Please "
              "downgrade to a version less than 0.5.9 if you need to use this deprecated version of ZeRO.\n")
    assert one(raised.strip(), Kind.EXCEPTION).data["type"] == "Exception"
    assert diagnose_paste(tmp_path, raised).hypotheses
    # a logger's ``Exception: None`` is no exception raised
    assert not [e for e in events_of("Exception: None") if e.kind is Kind.EXCEPTION]


def test_an_engines_report_of_a_background_process_names_no_culprit_of_its_own(tmp_path: Path) -> None:
    # real: vLLM's engine core on its workers (held r172d, r52a, r74a): the report, the worker's trace elsewhere
    report = ("(EngineCore pid=404) ERROR 05-12 14:13:56 [core.py:1110] Exception: WorkerProc initialization failed due "
              "to an exception in a background process. See stack trace for root cause.\n")
    top = top_of(tmp_path, report)
    assert top.category is Category.RANK_CRASHED and top.culprit_processes == () and "background" in top.title, top
    # the process's own exception stays its own
    own = report.replace("WorkerProc initialization failed due to an exception in a background process. See stack "
                         "trace for root cause.", "Server process terminated unexpectedly.")
    assert top_of(tmp_path, own).culprit_processes, top_of(tmp_path, own)


def test_a_wait_in_an_input_apart_from_the_record_does_not_replace_the_workers_death(tmp_path: Path) -> None:
    # a launcher's record of one worker in one file, a rankless timeout in another (another host's, maybe): the record
    # stands; only a cause's words apart are the worker's
    top = _beside(tmp_path, _PADDLE_RECORD, "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
                  "Timed out waiting 1800000ms for recv operation to complete\n")[0]
    assert top.culprit_ranks == (0,) and top.category is Category.RANK_CRASHED, top
