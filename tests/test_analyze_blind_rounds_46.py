"""Readings of the hundred-and-ninety-second round and after (``r195*``: work on one rank outlasting the timeout,
cloud fabrics, torch elastic's rendezvous, CUDA and hardware failures, ranks that disagree, launch plumbing,
failures at scale, other vendors' stacks). One behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, one, top_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind


def test_xccls_wait_that_ran_out_is_a_collective_timeout(tmp_path: Path) -> None:
    # real: intel/torch-xpu-ops#1704 (r195h): ProcessGroupXCCL's wait(timeout) raising its own words
    event = one(" RuntimeError: Work ran time out after 15370 milliseconds.", Kind.BLOCKING_WAIT_TIMEOUT)
    assert event.data["ran_ms"] == 15370
    top = top_of(tmp_path, " RuntimeError: Work ran time out after 15370 milliseconds.\n")
    assert top.category is Category.UNEXPLAINED_TIMEOUT, top
    # the words without the time it waited are no timeout of a collective
    assert not [e for e in diagnose_paste(tmp_path, "note: Work ran time out after a while\n").hypotheses
                if e.category is Category.UNEXPLAINED_TIMEOUT]


def test_an_npus_core_exception_is_a_fault_of_the_device_and_its_record_names_the_rank(tmp_path: Path) -> None:
    # real: vllm-project/vllm-ascend#11531 (r195h): the record's first line behind ``[rank7]:``, the device's fault on
    # an indented line of the same record
    record = ("[rank7]:[E706 23:45:07.793807510 OpParamMaker.cpp:355] call aclnnSparseFlashAttention failed, detail:"
              "[PID: 111497] AclNN_Runtime_Error(EZ9903): Assert ((NnopbaseExecutorLaunchKernel(executor, stream, "
              "numBlocks)) == 0) failed\n"
              "        Solution: In this scenario, collect the plog when the fault occurs.\n"
              "        TraceBack (most recent call last):\n"
              "        The error from device(chipId:7, dieId:0), serial number is 8, there is an exception of fftsplus "
              "aicore error, core id is 7, error code = 0x800000\n")
    top = top_of(tmp_path, record)
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (7,), top
    # the same line not indented (another writer's, after the record): its rank is not the record's
    flat = record.replace("        The error from device", "The error from device")
    fault = next(h for h in diagnose_paste(tmp_path, flat).hypotheses if h.category is Category.GPU_ERROR)
    assert fault.culprit_ranks == (), fault
    # the device's task wait that timed out is a collective's wait, not a fault of the device
    wait = ("EI9999: The error from device(chipId:0, dieId:0), serial number is 1, hccl fftsplus task timeout "
            "occurred during task execution, stream_id:4\n")
    assert top_of(tmp_path, wait).category is not Category.GPU_ERROR


def test_a_shell_abort_stored_apart_from_the_ranks_timeouts_is_their_end(tmp_path: Path) -> None:
    # real: Lightning-AI/litgpt#1202 (r195a): the watchdog's timeouts in one file, the batch system's shell reporting
    # the job's own command aborted in another
    timeouts = tmp_path / "log.txt"
    timeouts.write_text("".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=14633, OpType=_ALLGATHER_BASE, NumelIn=5, NumelOut=20, Timeout(ms)=1800000) ran for "
        "1800076 milliseconds before timing out.\n" for r in (1, 2, 3)))
    shell = tmp_path / "log_tail.txt"
    shell.write_text("/work/.lsbatch/1720011562.shell: line 31: 1248178 Aborted                 (core dumped) "
                     "litgpt finetune_lora --config lora.yaml\n")
    top = analyze_paths([str(timeouts), str(shell)]).diagnosis.hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT, top
    # ProcessGroupNCCL's own words after its timeout are that end's, no error of another kind
    timeouts.write_text(timeouts.read_text() + "[rank1]:[E ProcessGroupNCCL.cpp:1095] [Rank 1] Some NCCL operations "
                                                "have failed or timed out. Due to the asynchronous nature of CUDA "
                                                "kernels, subsequent GPU operations might run on corrupted/incomplete "
                                                "data.\n")
    top = analyze_paths([str(timeouts), str(shell)]).diagnosis.hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT, top
    # a process's own error in the ranks' file: the abort may be its end, not the timeouts'
    timeouts.write_text(timeouts.read_text() + "[rank0]: RuntimeError: CUDA error: an illegal memory access was "
                                                "encountered\n")
    top = analyze_paths([str(timeouts), str(shell)]).diagnosis.hypotheses[0]
    assert top.category is not Category.UNEXPLAINED_TIMEOUT, top


def test_kokkos_cuda_check_names_the_runtimes_error(tmp_path: Path) -> None:
    # real: E3SM-Project/E3SM#8699 (r195d): Kokkos' ``error( cudaErrorX): words /path``; its illegal address is the
    # GPU's
    line = ("cudaDeviceSynchronize() error( cudaErrorIllegalAddress): an illegal memory access was encountered "
            "/src/kokkos/core/src/Cuda/Kokkos_Cuda_Instance.cpp:153")
    event = one(line, Kind.GPU_ERROR)
    assert event.data["message"] == "an illegal memory access was encountered", event.data
    assert top_of(tmp_path, line + "\n").category is Category.GPU_ERROR
    # words that open in capitals end before the source file's path
    busy = one("cudaSetDevice(cuda_device_id) error( cudaErrorDevicesUnavailable): CUDA-capable device(s) is/are "
               "busy or unavailable /src/kokkos/Kokkos_Cuda_Instance.cpp:544", Kind.ERROR_LINE)
    assert "busy or unavailable" in busy.data["message"]
    # a program's own print of an error's name without the runtime's words: no GPU error
    assert not [e for e in diagnose_paste(tmp_path, "if (err == cudaErrorIllegalAddress) retry();\n").hypotheses
                if e.category is Category.GPU_ERROR]


def test_ray_trains_worker_group_that_did_not_start_in_time_is_a_rendezvous_that_timed_out(tmp_path: Path) -> None:
    # real: ray-project/ray#60376 (r195c)
    lines = ("2025-10-28 14:50:18.369\t[FailurePolicy] Decision: FailureDecision.RETRY, Error source: controller, "
             "Error: Training failed due to controller error:\n"
             "The worker group startup timed out after 30.0 seconds waiting for 8 workers. Potential causes include: "
             "(1) temporary insufficient cluster resources while waiting for autoscaling\n")
    assert top_of(tmp_path, lines).category is Category.RENDEZVOUS_TIMEOUT
    # a group that started and then failed is not this
    started = lines.replace("startup timed out after 30.0 seconds waiting for 8 workers",
                            "started 8 workers; worker 3 raised ValueError")
    assert top_of(tmp_path, started).category is not Category.RENDEZVOUS_TIMEOUT


def test_a_command_that_greps_for_errors_is_no_error(tmp_path: Path) -> None:
    # real: pmodels/mpich#7608 (r195g): the paste's own ``cat … | grep "error"`` above what it found
    found = ("Abort(15) on node 1632 (rank 1632 in comm 0): Fatal error in internal_Wait: Other MPI error\n")
    for command in ('cat rfm_job.err | grep "error"', "$ dmesg -T | grep -i xid", "grep -i fail slurm-123.out",
                    "user@node:~$ journalctl -k | egrep 'oom|killed'"):
        events = [e for e in diagnose_paste(tmp_path, command + "\n" + found).hypotheses[0].evidence
                  if command.strip() in e.text]
        assert not events, (command, events)
        assert diagnose_paste(tmp_path, command + "\n").hypotheses == (), command
    # grep's own error, and an error that names grep, stay errors
    assert diagnose_paste(tmp_path, "grep: /var/log/syslog: Permission denied error\n").hypotheses
    assert diagnose_paste(tmp_path, "RuntimeError: grep failed on error.log\n").hypotheses


def test_an_mpi_ranks_lower_case_abort_is_no_sigabrt(tmp_path: Path) -> None:
    # real: pmodels/mpich#7608 (r195g): ``Rank N aborted with code 15: <MPI's words>`` is its MPI_Abort, not a crash
    lines = ("Abort(15) on node 1632 (rank 1632 in comm 0): Fatal error in internal_Wait: Other MPI error\n"
             "Rank 1632 aborted with code 15: Fatal error in internal_Wait: Other MPI error\n")
    top = top_of(tmp_path, lines)
    assert top.category is Category.UNRECOGNISED and top.culprit_ranks == (1632,), top
    # the shell's and Python's ``Aborted`` is SIGABRT; Open MPI's and srun's words for the job they ended after a
    # process failed are a crash's end as before
    for crash in ("./run.sh: line 3: 4242 Aborted (core dumped) python train.py",
                  "a non-zero exit code. Per user-direction, the job has been aborted.",
                  "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."):
        assert top_of(tmp_path, crash + "\n").category is Category.RANK_CRASHED, crash
    # a connection aborted is no process that crashed
    assert top_of(tmp_path, "ConnectionError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset "
                            "by peer'))\n").category is not Category.RANK_CRASHED


def test_a_rankless_collective_timeout_is_unexplained_unless_the_lines_name_whom_it_waited_for(tmp_path: Path) -> None:
    # real: sgl-project/sglang#29123, hiyouga/LLaMA-Factory#5071 (r195g, r195h): a timeout with no rank and nothing
    # else says neither that a member never came nor which
    gloo = ("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
            "7200000ms for recv operation to complete\n")
    top = top_of(tmp_path, gloo)
    assert top.category is Category.UNEXPLAINED_TIMEOUT and "most often a rank that never arrived" in top.title, top
    hccl = ("EI0006: 2024-08-05-18:15:21.270.506 Getting socket times out. Reason: Remote Rank did not send the data "
            "in time. Please check the reason for the rank being stuck\n")
    assert top_of(tmp_path, hccl).category is Category.UNEXPLAINED_TIMEOUT
    # a store wait for a key another rank sets still says a rank never arrived
    store = ("RuntimeError: Wait timeout\nException raised from doWait at ../torch/csrc/distributed/c10d/TCPStore.cpp:445 "
             "(most recent call first):\n")
    assert top_of(tmp_path, store).category is Category.LAGGING_RANK


def test_a_communicator_aborted_without_its_reason_is_a_collective_that_failed(tmp_path: Path) -> None:
    # real: Wan-Video/Wan2.1#75 (r190f, held): PyTorch's error for a call on a communicator its watchdog aborted
    line = "[rank1]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1.\n"
    assert top_of(tmp_path, line).category is Category.UNEXPLAINED_TIMEOUT
    # cut right after the reason's first words: still no reason
    assert top_of(tmp_path, "RuntimeError: NCCL communicator was aborted on rank 2.  Original reason fo\n"
                  ).category is Category.UNEXPLAINED_TIMEOUT
    # with its reason, the reason's words are read
    reasoned = ("RuntimeError: NCCL communicator was aborted on rank 2. Original reason for failure was: NCCL error: "
                "unhandled cuda error, NCCL version 2.18.1\nCuda failure 'out of memory'\n")
    assert top_of(tmp_path, reasoned).category is not Category.UNEXPLAINED_TIMEOUT


def test_tensorflows_collective_shape_mismatch_is_ranks_that_disagree(tmp_path: Path) -> None:
    # real: tensorflow/tensorflow#33339, #34156, #62790 (r195e)
    each = ("2019-11-11 11:45:07.182077: W tensorflow/core/framework/op_kernel.cc:1655] OP_REQUIRES failed at "
            "collective_ops.cc:253 : Invalid argument: Shape mismatch in the collective instance 106. Op at device "
            "/job:worker/replica:0/task:1/device:CPU:0 expected shape [49] but another member in the group expected "
            "shape [64]\n",
            "2019-10-14 22:36:01.352450: E tensorflow/core/common_runtime/ring_alg.cc:279] Aborting RingReduce with "
            "Internal: Inconsistent output shapes, got [4], but expected is [2].\n")
    for line in each:
        assert top_of(tmp_path, line).category is Category.COLLECTIVE_DESYNC, line
    # a shape mismatch of one tensor in the program (no collective's instance) is the program's own
    assert top_of(tmp_path, "ValueError: Shape mismatch: expected [49] but got [64]\n"
                  ).category is not Category.COLLECTIVE_DESYNC


def test_tensorflows_collective_aborted_by_a_workers_end_of_data_is_that_workers_failure(tmp_path: Path) -> None:
    # real: tensorflow/tensorflow#33086 (r195e)
    line = ("2019-10-06 15:35:15.797384: E tensorflow/core/common_runtime/ring_alg.cc:279] Aborting RingReduce with "
            "Out of range: [_Derived_]End of sequence\n\t [[{{node IteratorGetNext}}]]\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.RANK_CRASHED and "ran out of data" in top.title, top
    # an input pipeline's end of sequence outside a collective (a loop's normal end, logged) is none
    assert not [h for h in diagnose_paste(tmp_path, "INFO: End of sequence reached, epoch done\n").hypotheses
                if "ran out of data" in h.title]


def test_ucx_1_16s_completion_words_with_error_after_them_are_the_completions_status(tmp_path: Path) -> None:
    # real: ai-dynamo/dynamo#843 (r196d): UCX 1.16+ writes ``Local protection error``, 1.11-1.15 ``Remote OP``
    line = ("[1745700389.902821] [labinit01:6274 :0]     ib_mlx5_log.c:179  UCX  ERROR Local protection error on "
            "mlx5_0:1/RoCE (synd 0x4 vend 0x51 hw_synd 0/2)\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.IB_COMPLETION and "local protection" in top.title, top
    for words, status in (("Remote operation error", "11"), ("Remote OP", "11"), ("Local length error", "1")):
        event = one(line.replace("Local protection error", words).rstrip("\n"), Kind.IB_COMPLETION_ERROR)
        assert str(event.data["status"]) == status, (words, event.data)
    # a retry count exceeded in the same form stays a retry timeout, not a completion error of another status
    retry = line.replace("Local protection error", "Transport retry count exceeded").replace("synd 0x4", "synd 0x15")
    assert top_of(tmp_path, retry).category is not Category.IB_COMPLETION


def test_windows_tcpstore_that_could_not_format_its_error_is_pytorchs_bug(tmp_path: Path) -> None:
    # real: pytorch/pytorch#118378 (r196f), RVC-Project/Retrieval-based-Voice-Conversion-WebUI#2217 (r184c, held)
    lines = ("Traceback (most recent call last):\n"
             '  File "path/to/their/file.py", line 5, in <module>\n'
             '    store = dist.TCPStore("127.0.0.1", 0, 1, True, timedelta(seconds=30))\n'
             "RuntimeError: unmatched '}' in format string\n")
    top = top_of(tmp_path, lines)
    assert top.category is Category.UNRECOGNISED and "TCPStore on Windows" in top.title, top
    # the same words from the program's own format string are its own error
    own = lines.replace('store = dist.TCPStore("127.0.0.1", 0, 1, True, timedelta(seconds=30))',
                        'print("{step}}".format(step=1))')
    assert "TCPStore" not in top_of(tmp_path, own).title


def test_no_rdma_library_on_the_one_host_the_inputs_name_is_below_that_hosts_errors(tmp_path: Path) -> None:
    # real: horovod/horovod#1167 (r196g): three ranks in one container; NCCL 2.3 warns it has no libibverbs, and
    # Open MPI's shared-memory copy failed (EPERM): the error is the reading, the missing library a weak lead
    lines = ("[1,1]<stderr>:[edc6f559242d:00026] Read -1, expected 36864, errno = 1\n" + "".join(
        f"[1,{r}]<stdout>:edc6f559242d:{25 + r}:223 [{r}] misc/ibvwrap.cu:63 NCCL WARN Failed to open "
        f"libibverbs.so[.1]\n[1,{r}]<stdout>:edc6f559242d:{25 + r}:223 [{r}] NCCL INFO Using internal Network "
        "Socket\n" for r in range(3)))
    diagnosis = diagnose_paste(tmp_path, lines)
    assert diagnosis.hypotheses[0].category is Category.UNRECOGNISED, diagnosis.hypotheses[0]
    fallback = next(h for h in diagnosis.hypotheses if h.category is Category.SOCKET_FALLBACK)
    assert fallback.confidence < diagnosis.hypotheses[0].confidence
    # a paste that names a second host keeps the lead at its weight (the job spans hosts)
    two = lines + "[1,3]<stdout>:other-node:31:223 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.2<0>\n"
    lead = next(h for h in diagnose_paste(tmp_path, two).hypotheses if h.category is Category.SOCKET_FALLBACK)
    assert lead.confidence > fallback.confidence, lead


def test_no_rdma_library_in_a_job_whose_every_rank_is_on_one_host_is_no_lead(tmp_path: Path) -> None:
    # NCCL's ``nranks`` says the whole job is the two ranks on this host: its GPUs never use the network transport
    def paste(nranks: int) -> str:
        return "".join(
            f"box:{100 + r}:{200 + r} [{r}] misc/ibvwrap.cc:100 NCCL WARN Failed to open libibverbs.so[.1]\n"
            f"box:{100 + r}:{200 + r} [{r}] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0>\n"
            f"box:{100 + r}:{200 + r} [{r}] NCCL INFO Using network Socket\n"
            f"box:{100 + r}:{200 + r} [{r}] NCCL INFO comm 0x55d0 rank {r} nranks {nranks} cudaDev {r} busId "
            f"{r + 1}000 commId 0x1 - Init COMPLETE\n" for r in range(2))
    assert not [h for h in diagnose_paste(tmp_path, paste(2)).hypotheses if h.category is Category.SOCKET_FALLBACK]
    # two of four ranks here: the others are on hosts the paste does not show, where IB may be in use
    assert [h for h in diagnose_paste(tmp_path, paste(4)).hypotheses if h.category is Category.SOCKET_FALLBACK]


def test_a_traceback_whose_exception_line_the_paste_cut_to_its_first_letters_stands_where_it_was(
        tmp_path: Path) -> None:
    # real: hiyouga/LLaMA-Factory#860 (r177h, held; silent before): a progress bar's last redraw, the traceback through
    # main_process_first's barrier, ``Ru`` (all the paste kept of ``RuntimeError: …``), then c10's backtrace
    lines = ("[31:13<7:10:59, 908.45 eTraceback (most recent call last):\n"
             '  File "/src/llmtuner/dsets/preprocess.py", line 176, in preprocess_dataset\n'
             '    with training_args.main_process_first(desc="dataset map pre-processing"):\n'
             '  File "/envs/llama/lib/python3.10/site-packages/transformers/training_args.py", line 2035, in '
             "main_process_first\n"
             "    dist.barrier()\n"
             '  File "/envs/llama/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3328, in '
             "barrier\n"
             "    work = default_pg.barrier(opts=opts)\n"
             "Ru\n"
             "frame #23: _PyEval_EvalFrameDefault + 0x13b3 (0x4eecf3 in /envs/llama/bin/python)\n"
             "frame #24: _PyFunction_Vectorcall + 0x6f (0x4fd90f in /envs/llama/bin/python)\n")
    top = top_of(tmp_path, lines)
    assert top.category is Category.LAGGING_RANK and "main_process_first" in top.title, top
    # a word after the frames that c10's backtrace does not follow is no cut exception: nothing stood there
    other = lines.replace("frame #23: _PyEval_EvalFrameDefault + 0x13b3 (0x4eecf3 in /envs/llama/bin/python)\n"
                          "frame #24: _PyFunction_Vectorcall + 0x6f (0x4fd90f in /envs/llama/bin/python)\n",
                          "Epoch 2 starts\n")
    assert not [h for h in diagnose_paste(tmp_path, other).hypotheses if h.category is Category.LAGGING_RANK]


def test_a_structure_named_after_the_device_that_host_memory_could_not_hold_is_no_gpu_out_of_memory(
        tmp_path: Path) -> None:
    # a sweep of UCX's messages (openucx/ucx at 9466d10): ``failed to allocate device address``, ``… cuda event
    # object`` are structures in host memory, not a GPU out of memory
    for words in ("failed to allocate device address, rejecting connection request 0x7f3a2c001000",
                  "failed to allocate cuda event object", "cm 0x7f3a2c001000: failed to allocate device context"):
        line = f"[1745700389.902821] [node1:2222 :0] wireup_cm.c:1178 UCX  ERROR {words}\n"
        assert top_of(tmp_path, line).category is not Category.RANK_OUT_OF_MEMORY, words
    # a buffer or a size on the device is
    for words in ("failed to allocate 2101248 byte device buffer", "failed to allocate a device buffer ('cuda malloc "
                  "failed')", "failed to allocate 512.00M (536870912 bytes) from device: out of range"):
        assert top_of(tmp_path, f"Error: {words}\n").category is Category.RANK_OUT_OF_MEMORY, words


def test_a_kernels_check_of_a_tensors_shape_is_the_programs_error_not_the_jobs_setup(tmp_path: Path) -> None:
    # a sweep of Transformer Engine's checks (NVIDIA/TransformerEngine at d0067d0): ``must be divisible by`` of a
    # tensor's dimension is the program's own error; of a parallel size, the world or the batch, the job's setup
    shape = ("RuntimeError: /opt/TransformerEngine/transformer_engine/common/hadamard_transform/"
             "group_hadamard_transform.cu:479 in function f: Assertion failed: row_length % kHadamardDimension == 0. "
             "row_length must be divisible by hadamard_dimension\n")
    assert top_of(tmp_path, shape).category is Category.RANK_CRASHED
    for words in ("ValueError: `num_heads` must be divisible by `num_shards` (got `num_heads`: 71 and `num_shards`: 2)",
                  "AssertionError: num_attention_heads must be divisible by tensor_model_parallel_size",
                  "ValueError: global batch size (7) must be divisible by micro batch size (2) times data parallel "
                  "size (4)"):
        assert top_of(tmp_path, words + "\n").category is Category.UNRECOGNISED, words
    # a short parallel name is a word of its own, not the start of another (``epsilon`` is no ``ep``)
    assert top_of(tmp_path, "ValueError: epsilon must be greater than 0\n").category is Category.RANK_CRASHED


def test_a_collectors_timestamp_before_each_line_keeps_a_records_indent_and_vllms_worker_prefix(tmp_path: Path) -> None:
    # ``kubectl logs --timestamps`` puts its stamp before every line: the record's indented line is still the rank's,
    # and vLLM's worker prefix still names a worker that waited for its driver
    def stamped(text: str) -> str:
        return "".join(f"2026-01-01T00:00:{n:02d}.123456789Z {line}\n" for n, line in enumerate(text.splitlines()))
    record = ("[rank7]:[E706 23:45:07.793807510 OpParamMaker.cpp:355] call aclnnSparseFlashAttention failed, detail: "
              "AclNN_Runtime_Error(EZ9903): launch failed\n"
              "        The error from device(chipId:7, dieId:0), serial number is 8, there is an exception of fftsplus "
              "aicore error, core id is 7\n")
    top = top_of(tmp_path, stamped(record))
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (7,), top
    worker = ("(VllmWorkerProcess pid=3773) ERROR 07-10 04:26:16 multiproc_worker_utils.py:226] Exception in worker "
              "VllmWorkerProcess while processing method init_device: [../third_party/gloo/gloo/transport/tcp/"
              "unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete\n")
    top = top_of(tmp_path, stamped(worker))
    assert top.category is Category.LAGGING_RANK and "driver" in top.title, top
