"""Readings of the hundred-and-ninth round and after (tracebacks pasted without their first line, checkpoints and
recommendation models, elastic jobs): one behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of
from syncdoctor.analyze.model import Category, Kind

# real: roboflow/rf-detr#1093 (a rank's frames pasted without the traceback's first line and cut before its error)
_FRAMES = """[rank1]:   File "/venv/lib/python3.12/site-packages/pytorch_lightning/trainer/trainer.py", line 630, in _fit_impl
[rank1]:     self._run(model, ckpt_path=ckpt_path, weights_only=weights_only)
[rank1]:   File "/venv/lib/python3.12/site-packages/pytorch_lightning/loops/fit_loop.py", line 217, in run
[rank1]:     self.advance()
[rank1]:   File "/ws/rfdetr/models/lwdetr.py", line 153, in forward
[rank1]:     out = self.head(features)
"""


def test_frames_without_their_traceback_line_cut_before_the_error_are_that_processs_failure(tmp_path: Path) -> None:
    events = events_of(_FRAMES)
    (stack,) = [e for e in events if e.kind is Kind.STACK_DUMP]
    assert stack.data["source"] == "traceback-cut" and stack.origin.rank == 1
    assert stack.data["frames"][-1] == "lwdetr.py:153 in forward" and len(stack.data["frames"]) == 3
    assert [e.data["word"] for e in events if e.kind is Kind.ERROR_LINE] == ["Traceback"]  # never silent
    top = diagnose_paste(tmp_path, _FRAMES).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,)
    assert "lwdetr.py:153 in forward" in top.title and "paste ends before its error line" in top.title


def test_negative_frames_that_end_in_their_exception_are_read_once(tmp_path: Path) -> None:
    # the exception under header-less frames is read with them (parsers.traceback.headless): no cut, one exception
    events = events_of(_FRAMES + "[rank1]: RuntimeError: Expected to have finished reduction in the prior iteration\n")
    assert not [e for e in events if e.kind is Kind.STACK_DUMP or e.kind is Kind.ERROR_LINE]
    (raised,) = [e for e in events if e.kind is Kind.EXCEPTION]
    assert raised.data["where"] == "lwdetr.py:153 in forward" and raised.origin.rank == 1


def test_negative_a_whole_tracebacks_frames_open_no_traceback_of_their_own(tmp_path: Path) -> None:
    whole = "[rank1]: Traceback (most recent call last):\n" + _FRAMES
    events = events_of(whole)
    assert len([e for e in events if e.kind is Kind.STACK_DUMP]) == 1  # the traceback's, not one per frame
    assert [e.data.get("headless") for e in events if e.kind is Kind.ERROR_LINE] == [None]  # its first line's
    ended = events_of(whole + "[rank1]: ValueError: bad shape\n")
    assert len([e for e in ended if e.kind is Kind.EXCEPTION]) == 1 and not [
        e for e in ended if e.kind is Kind.STACK_DUMP]


def test_a_frame_cut_after_its_files_name_is_still_a_frame(tmp_path: Path) -> None:
    # real: huggingface/transformers#36076 (the terminal wrapped ``l`` / ``ine 2555, in …`` onto the next line)
    paste = ("[rank1]:     return inner_training_loop(\n"
             "[rank1]:   File \"/lib/python3.11/site-packages/transformers/trainer.py\", l\n"
             "ine 2555, in _inner_training_loop\n"
             "[rank1]:     self._maybe_log_save_evaluate(\n")
    (stack,) = [e for e in events_of(paste) if e.kind is Kind.STACK_DUMP]
    assert stack.data["frames"] == ["trainer.py in ?"]
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_CRASHED
    # a file named in other words is no frame
    assert not events_of('File "config.yaml" not found, using the defaults\n')


# real: facebookresearch/SlowFast#337 (the paste stops where init_process_group makes the store: the title says
# Address already in use)
_STORE = """Traceback (most recent call last):
  File "/env/lib/python3.7/site-packages/torch/distributed/distributed_c10d.py", line 423, in init_process_group
    store, rank, world_size = next(rendezvous_iterator)
  File "/env/lib/python3.7/site-packages/torch/distributed/rendezvous.py", line 133, in _tcp_rendezvous_handler
    store = TCPStore(result.hostname, result.port, world_size, start_daemon, timeout)
"""


def test_a_traceback_cut_where_the_store_is_made_is_most_often_its_port(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _STORE).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and top.confidence < 0.4  # a lead: the error line is not there
    assert "TCPStore" in top.title and "cannot reach it" in top.what  # the other reading, in its words
    # cut one frame higher, in the rendezvous but not yet in the store's making: no port named
    higher = "\n".join(_STORE.splitlines()[:3]) + "\n"
    assert Category.PORT_IN_USE not in {h.category for h in diagnose_paste(tmp_path, higher).hypotheses}


def test_a_launchers_own_traceback_cut_is_no_workers_failure(tmp_path: Path) -> None:
    paste = ("Traceback (most recent call last):\n"
             "  File \"/usr/lib/python3.10/dist-packages/torch/distributed/run.py\", line 883, in main\n"
             "    run(args)\n"
             "  File \"/usr/lib/python3.10/dist-packages/torch/distributed/elastic/agent/server/api.py\", line 73, "
             "in run\n    result = self._invoke_run(role)\n")
    hypotheses = diagnose_paste(tmp_path, paste).hypotheses
    assert hypotheses and Category.RANK_CRASHED not in {h.category for h in hypotheses}
    assert hypotheses[0].category is Category.UNRECOGNISED


def test_dgls_failed_bind_with_errno_98_is_a_port_in_use(tmp_path: Path) -> None:
    # real: dmlc/dgl#2227 (DistGraphServer's socket left listening at shutdown)
    line = "[20:53:08] /opt/dgl/src/rpc/network/tcp_socket.cc:69: Failed bind on 10.153.44.134:30050 ,errno=98"
    assert diagnose_paste(tmp_path, line).hypotheses[0].category is Category.PORT_IN_USE
    other = "[20:53:08] /opt/dgl/src/rpc/network/tcp_socket.cc:69: Failed bind on 10.1.2.3:30050 ,errno=99"
    assert diagnose_paste(tmp_path, other).hypotheses[0].category is not Category.PORT_IN_USE


def test_a_traceback_cut_at_the_end_of_a_file_tail_printed_ends_with_its_file(tmp_path: Path) -> None:
    # ``tail`` over two ranks' files, the first ending inside a traceback: it is cut there, as at the file's end
    paste = ("==> logs/rank0.log <==\nTraceback (most recent call last):\n  File \"/ws/train.py\", line 10, in <module>\n"
             "    main()\n\n==> logs/rank1.log <==\nValueError: bad shape\n")
    events = events_of(paste)
    (stack,) = [e for e in events if e.kind is Kind.STACK_DUMP]
    assert stack.origin.rank == 0 and stack.data["frames"] == ["train.py:10 in <module>"]
    (raised,) = [e for e in events if e.kind is Kind.EXCEPTION]
    assert raised.origin.rank == 1 and not raised.data.get("frames")  # (not the frames of rank 0's traceback)


def test_pytorchs_own_duplicated_gpu_check_names_the_two_ranks_and_their_host(tmp_path: Path) -> None:
    # real: pytorch/pytorch#68666 (world_size larger than the host's GPUs: rank 8 wrapped onto rank 0's GPU)
    line = ("RuntimeError: Duplicated GPU device is not allowed by NCCL. Rank [0] and rank [8] both attached to GPU "
            "device 0 on the same host learngpu001.09.ftw5.facebook.com. Most likely your world_size is larger than "
            "the total number of GPUs")
    top = diagnose_paste(tmp_path, line).hypotheses[0]
    assert top.category is Category.DUPLICATE_GPU and top.culprit_ranks == (0, 8)
    assert top.culprit_hosts == ("learngpu001.09.ftw5.facebook.com",)
    # a rank and a GPU named in other words are no such pair
    other = "RuntimeError: Rank [0] could not be attached to GPU device 0: CUDA error: invalid device ordinal"
    assert diagnose_paste(tmp_path, other).hypotheses[0].category is not Category.DUPLICATE_GPU


def _fault_dump(rank: int, frames: list[tuple[str, int, str]], head: str = "Timeout (0:10:00)!") -> str:
    lines = [head, "", "Thread 0x00007f3c2a7fc700 (most recent call first):",
             '  File "/usr/lib/python3.10/threading.py", line 324 in wait',
             '  File "/usr/lib/python3.10/threading.py", line 1016 in _bootstrap', "",
             "Thread 0x00007f3c4b1e2740 (most recent call first):"]
    lines += [f'  File "{path}", line {number} in {func}' for path, number, func in frames]
    return "".join(f"[rank{rank}]: {line}\n" for line in lines)


_IN_ALLREDUCE = [("/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", 2050, "all_reduce"),
                 ("/ws/train.py", 88, "sync_metrics"), ("/ws/train.py", 140, "<module>")]
_IN_LOADER = [("/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", 1133, "_get_data"),
              ("/ws/train.py", 101, "train_epoch"), ("/ws/train.py", 140, "<module>")]


def test_faulthandlers_dumps_name_the_rank_outside_the_collective_the_others_wait_in(tmp_path: Path) -> None:
    paste = "".join(_fault_dump(rank, _IN_ALLREDUCE) for rank in (0, 1, 2)) + _fault_dump(3, _IN_LOADER)
    stacks = [e for e in events_of(paste) if e.kind is Kind.STACK_DUMP]
    assert len(stacks) == 4 and all(e.data["source"] == "faulthandler" for e in stacks)  # (no helper thread's)
    assert stacks[0].data["collective"] == "allreduce" and stacks[3].data["collective"] is None
    assert stacks[3].data["frames"][0] == "torch/utils/data/dataloader.py:1133 in _get_data"
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (3,) and top.confidence >= 0.8
    assert "_get_data" in top.title


_TIMEOUT = ("[rank{r}]:[E1205 10:00:00.000000 123 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
            "for 600010 milliseconds before timing out.\n")


def test_dumps_made_as_a_process_died_are_not_where_a_hung_one_waits(tmp_path: Path) -> None:
    # the watchdog's abort on ranks 0-2 (their Python stood wherever it was: collectives run asynchronously)
    aborted = "".join(_TIMEOUT.format(r=r) + _fault_dump(r, _IN_LOADER, head="Fatal Python error: Aborted")
                      for r in (0, 1, 2))
    assert Category.LAGGING_RANK not in {h.category for h in diagnose_paste(tmp_path, aborted).hypotheses[:1]}
    # beside them, rank 3's dump by its timer, outside any collective: the rank they waited for, by their timeouts
    top = diagnose_paste(tmp_path, aborted + _fault_dump(3, _IN_LOADER)).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (3,)
    assert "ranks 0-2 waited in allreduce" in top.title


def test_an_assertion_that_the_local_rank_fits_the_nodes_gpus_is_the_jobs_setup(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#3408 (nodes with different numbers of GPUs: Megatron's check of its local rank)
    line = "AssertionError: expected local-rank to be the same as rank % device-count."
    assert diagnose_paste(tmp_path, line).hypotheses[0].category is Category.UNRECOGNISED
    other = "AssertionError: expected the loss to be finite"
    assert diagnose_paste(tmp_path, other).hypotheses[0].category is Category.RANK_CRASHED


def test_an_error_without_a_place_is_placed_on_the_host_srun_then_reports_a_worker_failing_on(tmp_path: Path) -> None:
    # real: huggingface/accelerate#2192 (the launcher missing on the second node; srun ends the step on the first)
    paste = ("slurmstepd: error: execve(): accelerate: No such file or directory\n"
             "srun: error: cdr2601: task 1: Exited with exit code 2\n"
             "slurmstepd: error: *** STEP 19389846.0 ON cdr2550 CANCELLED AT 2023-11-27T16:36:09 ***\n"
             "srun: error: cdr2550: task 0: Terminated\n")
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_hosts == ("cdr2601",)
    # two hosts whose workers exit with an error code: no one place
    two = paste.replace("task 0: Terminated", "task 0: Exited with exit code 2")
    assert not diagnose_paste(tmp_path, two).hypotheses[0].culprit_hosts


def test_an_operation_graph_capture_refuses_is_told_as_the_softwares_not_a_faulty_gpu(tmp_path: Path) -> None:
    # real: ROCm/hip#3876, sglang#24011 (ProcessGroupNCCL's watchdog querying an event of a capturing stream)
    line = ("[rank0]:[E1030 15:32:32.970893361 ProcessGroupNCCL.cpp:2055] [PG ID 5 PG GUID 51 Rank 0] Process group "
            "watchdog thread terminated with exception: HIP error: operation not permitted when stream is capturing")
    top = diagnose_paste(tmp_path, line).hypotheses[0]
    # the software's setup (A028), not a GPU that failed (A021): the threads' labels are four to three so since r122
    assert top.category is Category.UNRECOGNISED and "CUDA graph capture" in top.title and "not a faulty GPU" in top.title
    assert "TORCH_NCCL_BLOCKING_WAIT=1" in (top.fix or "")
    # an illegal memory access is still the GPU's failure, in its words
    other = line.replace("operation not permitted when stream is capturing", "an illegal memory access was encountered")
    illegal = diagnose_paste(tmp_path, other).hypotheses[0]
    assert "CUDA graph capture" not in illegal.title and illegal.category is Category.GPU_ERROR


def test_a_launchers_refusal_of_its_hostfile_and_a_replica_placement_are_the_jobs_setup(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#3625 (--include asks for GPUs the hostfile's slots do not have: no error word),
    # DeepSpeed#5267 (MII: a tensor parallel size larger than a node's GPUs), DeepSpeed PR#5318 (its pdsh runner)
    for line in ("`No slot 2 specificied on host work1`.", "ValueError: No slot '8' specified on host 'node-3'",
                 "- ValueError: Only able to place 0 replicas, but 2 replicas were requested.",
                 "KeyError: 'PDSH_SSH_ARGS_APPEND'"):
        assert diagnose_paste(tmp_path, line).hypotheses[0].category is Category.UNRECOGNISED, line
    # a slot and a placement in other words stay silent or the program's own error
    assert not diagnose_paste(tmp_path, "No slot machine found in the casino\n").hypotheses
    assert diagnose_paste(tmp_path, "KeyError: 'PDSH'").hypotheses[0].category is Category.RANK_CRASHED


def test_a_frame_cut_inside_its_files_name_goes_on_with_the_traceback(tmp_path: Path) -> None:
    # real: EleutherAI/gpt-neox#768 (two processes' frames pasted without their first line, the last one cut)
    paste = ('  File "/home/u/gpt-neox/megatron/initialize.py", line 153, in _initialize_distributed\n'
             "    distributed.init_distributed(\n"
             '  File "/home/u/gpt-neox/generate.py", line 91, in <module>\n'
             "    main()\n"
             '  File "/geode2/hom\n')
    (stack,) = [e for e in events_of(paste) if e.kind is Kind.STACK_DUMP]
    assert stack.data["frames"] == ["initialize.py:153 in _initialize_distributed", "generate.py:91 in <module>"]
    # (where it stood is the last whole frame's: the cut one names nothing)
    assert stack.data["where"] == "initialize.py:153 in _initialize_distributed > generate.py:91 in <module>"


def test_a_launchers_failure_on_no_named_host_quotes_what_it_said(tmp_path: Path) -> None:
    # real: microsoft/VirtualClient PR#752 (mpiexec's ssh refused the host key; no host in the lines)
    top = diagnose_paste(tmp_path, "Host key verification failed.\n"
                                   "ORTE was unable to reliably start one or more daemons.\n").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "()" not in top.title
    assert "Host key verification failed" in top.title


_PYTEST_TIMEOUT = """+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++
~~~~~~~~~~~~~~~~~~~~~~~~~~ Stack of Thread-1 (140234111) ~~~~~~~~~~~~~~~~~~~~~~~~~~
  File "/usr/lib/python3.10/threading.py", line 973, in _bootstrap
    self._bootstrap_inner()
~~~~~~~~~~~~~~~~~~~~~~~~~~ Stack of MainThread (140234222) ~~~~~~~~~~~~~~~~~~~~~~~~~~
  File "/ws/test_dist.py", line 40, in test_allreduce
    dist.all_reduce(t)
  File "/env/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2050, in all_reduce
    work = group.allreduce([tensor], opts)
+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++
"""


def test_a_stack_printed_on_purpose_is_where_the_thread_stood_not_a_cut_traceback(tmp_path: Path) -> None:
    # pytest-timeout's dump of a hung test: the main thread's stack only, waiting in all_reduce; no error of its own
    events = events_of(_PYTEST_TIMEOUT)
    (stack,) = [e for e in events if e.kind is Kind.STACK_DUMP]
    assert stack.data["source"] == "pytest-timeout" and stack.data["collective"] == "all_reduce"
    assert not [e for e in events if e.kind is Kind.ERROR_LINE]
    top = diagnose_paste(tmp_path, _PYTEST_TIMEOUT).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and "waits in allreduce" in top.title
    # logging's stack_info, cut at the paste's end, is no exception raised either
    logged = "Stack (most recent call last):\n  File \"/ws/train.py\", line 12, in <module>\n    main()\n"
    assert Category.RANK_CRASHED not in {h.category for h in diagnose_paste(tmp_path, logged).hypotheses}
    assert Category.RANK_CRASHED in {h.category for h in diagnose_paste(tmp_path, logged.split("\n", 1)[1]).hypotheses}


def test_rays_memory_monitor_in_its_older_words_names_the_node_from_its_advice(tmp_path: Path) -> None:
    # real: OpenRLHF/OpenRLHF#171 (Ray 2.x before the IP moved into the first words)
    line = ("Memory on the node ( ID: 37f3bd9fa11d642c9e13892ee048dfc1f58c4597b77202a59a33835b) where the task (actor ID: "
            "658f7608dec0f9a3428857d502000000, name=RewardModelRayActor.__init__, pid=5315, memory used=1.67GB) was "
            "running was 445.48GB / 468.75GB (0.950365), which exceeds the memory usage threshold of 0.95. Ray killed "
            "this worker (ID: 384252cde217c088bb1cceb44ff7b1fec88a53bd8e7c82273275b694) because it was the most "
            "recently scheduled task; to see more information about memory usage on this node, use `ray logs "
            "raylet.out -ip 33.123.202.4`.")
    top = diagnose_paste(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("33.123.202.4",)
    assert "Ray's memory monitor" in top.title


_CHECK = ("[rank{r}]: RuntimeError: DDP expects same model across all ranks, but Rank {r} has 51 params, while rank "
          "{o} has inconsistent {n} params.\n")


def test_ddps_check_reading_zeros_after_its_gather_timed_out_is_no_model_difference(tmp_path: Path) -> None:
    # real: UNIGE's HPC forum, thread 4301 (every rank timed out in the check's own ALLGATHER #1, then read 0 params)
    timeouts = "".join(_TIMEOUT.format(r=r).replace("OpType=ALLREDUCE", "OpType=ALLGATHER").replace("SeqNum=812",
                                                                                                      "SeqNum=1")
                       for r in range(4))
    checks = "".join(_CHECK.format(r=r, o=0 if r else 1, n=0) for r in range(4))
    assert Category.COLLECTIVE_DESYNC not in {h.category for h in diagnose_paste(tmp_path, timeouts + checks).hypotheses}
    # a rank that really counted other parameters, or the check without a timeout: the models differ
    assert diagnose_paste(tmp_path, checks).hypotheses[0].category is Category.COLLECTIVE_DESYNC
    other = "".join(_CHECK.format(r=r, o=0 if r else 1, n=50) for r in range(4))
    assert diagnose_paste(tmp_path, timeouts + other).hypotheses[0].category is Category.COLLECTIVE_DESYNC


def test_workers_that_could_not_be_started_with_what_they_were_given_are_the_jobs_setup(tmp_path: Path) -> None:
    # real: Lightning-Universe/lightning-transformers#147, IML-DKFZ/fd-shifts#3 (ddp_spawn pickling a local function
    # or a generated class), tinkerhub's Windows DataLoader without its __main__ guard
    for paste in ("AttributeError: Can't pickle local object 'get_linear_schedule_with_warmup.<locals>.lr_lambda",
                  "_pickle.PicklingError: Can't pickle <class 'types.PartialBuilds_LinearWarmupCosineAnnealingLR'>: "
                  "attribute lookup PartialBuilds_LinearWarmupCosineAnnealingLR on types failed",
                  "RuntimeError:\n        An attempt has been made to start a new process before the\n"
                  "        current process has finished its bootstrapping phase.\n"):
        top = diagnose_paste(tmp_path, paste).hypotheses[0]
        assert top.category is Category.UNRECOGNISED and "could not be started" in top.title, paste
    # a pickle read that failed (a corrupt checkpoint) is no start of workers
    corrupt = "_pickle.UnpicklingError: invalid load key, '\\x00'."
    assert "could not be started" not in diagnose_paste(tmp_path, corrupt).hypotheses[0].title


def test_a_quantized_model_placed_elsewhere_and_a_deepspeed_config_against_the_trainers_are_settings(
        tmp_path: Path) -> None:
    # real: huggingface/peft#414 (an 8-bit model on several devices), LianjiaTech/BELLE#154 (fp16 off in the
    # TrainingArguments, on in the DeepSpeed config), vllm#21695 (an AWQ model split over too many GPUs)
    for line in ("ValueError: You can't train a model that has been loaded in 8-bit precision on multiple devices.",
                 "ValueError: Please correct the following DeepSpeed config values that mismatch TrainingArguments "
                 "values:\n- ds fp16.enabled=True vs hf fp16|bf16=False",
                 "ValueError: The input size is not aligned with the quantized weight shape. This can be caused by "
                 "too large tensor parallel size."):
        assert diagnose_paste(tmp_path, line).hypotheses[0].category is Category.UNRECOGNISED, line
    # a model loaded in 8-bit that then failed as it ran is its own error
    ran = "RuntimeError: a model loaded in 8-bit precision overflowed in layer 12"
    assert diagnose_paste(tmp_path, ran).hypotheses[0].category is Category.RANK_CRASHED
