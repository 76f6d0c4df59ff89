"""Readings of the hundred-and-eighty-eighth round and after (``r191*``: expert parallelism's GPU-initiated transports,
torch.multiprocessing's spawn, containers, forums and Q&A sites, torch elastic's agent, less searched frameworks,
gloo). One behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category

_AGENT_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/agent/server/api.py", line 715, in run\n'
    "    result = self._invoke_run(role)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/agent/server/api.py", line 879, in '
    "_invoke_run\n"
    "    time.sleep(monitor_interval)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/api.py", line 84, in '
    "_terminate_process_handler\n"
    '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)\n'
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 146396 got signal: 1\n")


def test_the_agents_whole_traceback_to_its_signal_is_the_launcher_stopped_from_outside(tmp_path: Path) -> None:
    # real: modelscope/ms-swift#7121 (r191f): the traceback's first line above the SignalException was quoted as an
    # error of its own, so the stop from outside was not the reading
    top = top_of(tmp_path, _AGENT_TRACEBACK)
    assert top.category is Category.RANK_KILLED and "SIGHUP" in top.title, top
    # a second traceback after it (the handler hit again while logging) is its aftermath too
    again = _AGENT_TRACEBACK + ("\nDuring handling of the above exception, another exception occurred:\n\n"
                                "Traceback (most recent call last):\n"
                                '  File "/opt/conda/lib/python3.10/logging/__init__.py", line 1100, in emit\n'
                                "    msg = self.format(record)\n")
    assert top_of(tmp_path, again).category is Category.RANK_KILLED
    # a worker's own exception between the traceback's start and the signal: not the agent's traceback alone
    worker = ("Traceback (most recent call last):\n"
              '  File "train.py", line 12, in <module>\n'
              "    main()\n"
              "ValueError: batch size 0 is not allowed\n" + _AGENT_TRACEBACK.split("\n", 1)[1])
    assert top_of(tmp_path, worker).category is not Category.RANK_KILLED


def test_nvshmems_ibgda_queue_pair_steps_are_a_queue_pair_that_could_not_come_up(tmp_path: Path) -> None:
    # real: deepseek-ai/DeepEP#307 (r191a): NVSHMEM's IBGDA transport's own words for the step that failed
    lines = ("/sgl-workspace/nvshmem/src/modules/transport/ibgda/ibgda.cpp:3025: non-zero status: 7 \n"
             "ibgda_rc_init2rtr failed on RC #216.\n")
    top = top_of(tmp_path, lines)
    assert top.category is Category.IB_MODIFY_QP and top.title.startswith("NVSHMEM"), top
    assert "NVSHMEM_IB_GID_INDEX" in top.fix, top.fix
    assert top_of(tmp_path, "ibgda_qp_rst2init failed on DCI #3.\n").category is Category.IB_MODIFY_QP
    # its address handle refused alone (its DC transport's setup, mended by a rebuilt NVSHMEM in the held case):
    # quoted, no queue pair's reading
    ah = top_of(tmp_path, "/src/modules/transport/ibgda/ibgda.cpp:2234: NULL value Unable to create ah.\n")
    assert ah.category is Category.UNRECOGNISED, ah
    # a step's name in a program's own print that did not fail
    assert top_of(tmp_path, "ibgda_rc_init2rtr failed on RC #216.\n".replace("failed", "done") +
                  "RuntimeError: boom\n").category is not Category.IB_MODIFY_QP


_REMOTE_WAIT = ("[rank1]:[W324 12:06:11.712424651 socket.cpp:497] [c10d] waitForInput: socket SocketImpl(fd=149, "
                "addr=[prefill-head-0]:45532, remote=[prefill-head-0]:6379) timed out after 600000ms\n")


def test_a_workers_long_wait_on_a_remote_store_before_anything_ran_is_a_key_never_written(tmp_path: Path) -> None:
    # real: sgl-project/sglang#21292 (r191a), under a container runtime's stamp and stream tag
    cri = "2026-03-24T12:06:11.850211006+08:00 stderr F " + _REMOTE_WAIT
    top = top_of(tmp_path, cri)
    assert top.category is Category.RENDEZVOUS_TIMEOUT and top.confidence < 0.5, top
    assert "rank 1 waited 600 s" in top.title, top.title
    # a short wait (a worker's own poll of a few seconds) is none
    assert top_of(tmp_path, _REMOTE_WAIT.replace("600000ms", "5000ms")).category is not Category.RENDEZVOUS_TIMEOUT
    # a wait that names its keys is the lagging-rank rules': not this lead
    keyed = _REMOTE_WAIT + "[rank1]: torch.distributed.DistStoreError: wait timeout after 600000ms, keys: /bcast/0/75\n"
    assert "store key the other ranks never wrote" not in top_of(tmp_path, keyed).title
    # after collectives ran (a watchdog's timeout in the same paste): not a key nobody wrote at the start
    ran = _REMOTE_WAIT + ("[rank1]:[E324 12:06:12.1 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
                          "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                          "Timeout(ms)=600000) ran for 600080 milliseconds before timing out.\n")
    assert "store key the other ranks never wrote" not in top_of(tmp_path, ran).title


def test_a_rank_heading_in_a_paste_names_the_rank_of_the_lines_below_it(tmp_path: Path) -> None:
    # real: deepseek-ai/DeepEP#36 (r191a), quoted in a reply: ``rank1:`` above the crash's lines
    crash = ("> rank0: There is no error output for rank0.\n> \n> rank1:\n> \n> ```\n"
             "> Caught signal 11 (Segmentation fault: address not mapped to object at address 0x11000008)\n"
             "> ==== backtrace (tid:  84663) ====\n"
             ">  0 0x0000000000042520 __sigaction()  ???:0\n"
             ">  3 0x00000000000113dc nvshmemt_ibrc_progress()  :0\n> ```\n")
    top = top_of(tmp_path, crash)
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,), top
    assert top_of(tmp_path, crash.replace("> rank1:", "> ## Rank 1 log")).culprit_ranks == (1,)
    # a program's own ``rank 1`` print (one per process, no colon): no heading
    printed = crash.replace("> rank1:", "> rank 1")
    assert top_of(tmp_path, printed).culprit_ranks != (1,)
    # the next heading takes over: its lines are rank 0's
    both = crash.replace("> rank0: There is no error output for rank0.\n", "").replace("> rank1:", "> rank0:")
    assert top_of(tmp_path, both).culprit_ranks == (0,)


def test_a_connect_that_timed_out_as_the_store_was_opened_is_the_store_out_of_reach(tmp_path: Path) -> None:
    # real: yangkky/distributed_tutorial#3 (r191b): PyTorch 1.x's TCPStore client, strerror(ETIMEDOUT) alone
    raised = ("-- Process 0 terminated with the following error:\n"
              "Traceback (most recent call last):\n"
              '  File "/env/lib/python3.7/site-packages/torch/distributed/distributed_c10d.py", line 406, in '
              "init_process_group\n"
              "    store, rank, world_size = next(rendezvous(url))\n"
              '  File "/env/lib/python3.7/site-packages/torch/distributed/rendezvous.py", line 143, in '
              "_env_rendezvous_handler\n"
              "    store = TCPStore(master_addr, master_port, world_size, start_daemon)\n"
              "RuntimeError: Connection timed out\n")
    top = top_of(tmp_path, raised)
    assert top.category is Category.PEER_UNREACHABLE and "Connection timed out" in top.title, top
    # a wait in the store that timed out (the others never came): the rendezvous, as before
    waited = raised.replace("RuntimeError: Connection timed out",
                            "RuntimeError: Socket Timeout")
    assert top_of(tmp_path, waited).category is not Category.PEER_UNREACHABLE
    # the same words from a download, no store frame: not the store (a lead from the words alone at most)
    download = ("Traceback (most recent call last):\n"
                '  File "/env/lib/python3.7/site-packages/requests/adapters.py", line 504, in send\n'
                "    raise ConnectionError(e, request=request)\n"
                "RuntimeError: Connection timed out\n")
    other = top_of(tmp_path, download)
    assert "could not connect to the store" not in other.title and other.confidence < 0.5, other


def test_an_unspecified_launch_failure_after_a_gpu_initiated_wait_timed_out_is_its_trap(tmp_path: Path) -> None:
    # real: pytorch/torchtitan#3877 (r191a): DeepEP's combine waits out its bound and traps
    timeout = ("DeepEP combine (scale-up wait) timeout, scale-out: 6/8, scale-up: 3/8,\n"
               "channel: 2, lane: 1, recv: 0, tail: -1 (wait=0)\n")
    trap = "RuntimeError: CUDA error: unspecified launch failure\n"
    top = top_of(tmp_path, timeout + trap)
    assert top.category is not Category.GPU_ERROR and "DeepEP" in top.title, top
    # the same CUDA error without the timeout: the GPU's, as before
    assert top_of(tmp_path, trap).category is Category.GPU_ERROR
    # another CUDA error beside the timeout is still the GPU's
    assert top_of(tmp_path, timeout + "RuntimeError: CUDA error: uncorrectable ECC error encountered\n").category \
        is Category.GPU_ERROR


def test_no_reading_of_the_round_turns_a_clean_paste_into_an_error(tmp_path: Path) -> None:
    quiet = ("rank 1\nrank1:\nibgda transport ready on RC #216.\n"
             "[rank1]:[I324 12:06:11.7 socket.cpp:497] [c10d] connected to remote=[prefill-head-0]:6379\n")
    assert not diagnose_paste(tmp_path, quiet).hypotheses


def test_nccls_no_interface_message_quoted_alone_is_the_interface_missing(tmp_path: Path) -> None:
    # real: a blog's rewrite of a ColossalAI issue (r192d): NCCL's WARN message quoted without its prefix
    quoted = "NCCL error in: ProcessGroupNCCL.cpp\nBootstrap: no socket interface found\n"
    top = top_of(tmp_path, quoted)
    assert top.category is Category.INTERFACE_MISSING, top
    assert top_of(tmp_path, "NET/Socket : no interface found\n").category is Category.INTERFACE_MISSING
    # an interface that was found (the new anchor's words in a line of no failure): no reading
    told = "INFO: using the interface found by NCCL_SOCKET_IFNAME: eth0\n"
    assert not diagnose_paste(tmp_path, told).hypotheses


def test_an_mpi_without_cuda_support_given_gpu_tensors_is_read_from_its_words(tmp_path: Path) -> None:
    # real: pytorch/pytorch#22791 (r192c): ProcessGroupMPI's check, the paste's only line (silent before)
    line = "CUDA tensor detected and the MPI used doesn't have CUDA-aware MPI support\n"
    top = top_of(tmp_path, line)
    assert top.category is Category.UNRECOGNISED and "without CUDA support" in top.title, top
    # MPI with CUDA support said in a start-up banner: no error
    assert not diagnose_paste(tmp_path, "MPI library has CUDA-aware MPI support: yes\n").hypotheses


def test_sruns_task_zero_failing_on_a_host_places_rank_zero_there(tmp_path: Path) -> None:
    # real: pytorch/pytorch#165177 (r192h): rank 0's traceback behind its prefix, srun's record of task 0
    crash = ("[rank0]: Traceback (most recent call last):\n"
             '[rank0]:   File "/work/train.py", line 88, in <module>\n'
             "[rank0]:     main()\n"
             "[rank0]: AssertionError: s52 not in {s53: []}\n")
    srun = "srun: error: gpu-54: task 0: Exited with exit code 1\nsrun: Terminating StepId=41070.1\n"
    top = top_of(tmp_path, crash + srun)
    assert top.culprit_ranks == (0,) and top.culprit_hosts == ("gpu-54",), top
    # another task's number is a rank only where srun starts one task per rank: rank 0's host stays unknown
    other = top_of(tmp_path, crash + srun.replace("task 0:", "task 3:"))
    assert other.culprit_hosts != ("gpu-54",), other
    # two hosts said to have run task 0 (two steps): neither is taken
    two = srun + "srun: error: gpu-55: task 0: Exited with exit code 1\n"
    assert top_of(tmp_path, crash + two).culprit_hosts == (), top_of(tmp_path, crash + two)


_REDUCER = ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This "
            "error indicates that your module has parameters that were not used in producing loss.")


def test_ddps_reducer_error_quoted_in_markdown_is_still_the_programs_unused_parameters(tmp_path: Path) -> None:
    # real: facebookresearch/TimeSformer#107 (r193e): the message pasted in emphasis and quotes, no exception line
    top = top_of(tmp_path, '_"' + _REDUCER + ' "_\n')
    assert top.category is Category.RANK_CRASHED and "find_unused_parameters" in top.title, top
    assert len(top.evidence) == 1, top.evidence  # one line, read once
    # the exception itself, behind its rank: the rank named, as before
    ranked = top_of(tmp_path, "[rank1]: " + _REDUCER + "\n")
    assert ranked.culprit_ranks == (1,) and "find_unused_parameters" in ranked.title, ranked
    # the reducer's other words in a line of no failure (a tutorial's advice): no reading
    assert not diagnose_paste(tmp_path, "tip: set find_unused_parameters=True when a branch is skipped\n").hypotheses


def test_an_invalid_handle_right_after_the_same_process_ran_out_of_memory_is_the_oom(tmp_path: Path) -> None:
    # real: NVIDIA/TensorRT-LLM#1670 (r193g): NCCL's enqueue, repeated
    oom = "VM-0-16-ubuntu:392:494 [2] enqueue.cc:43 NCCL WARN Cuda failure 'out of memory'\n"
    handle = "VM-0-16-ubuntu:392:494 [2] enqueue.cc:54 NCCL WARN Cuda failure 'invalid resource handle'\n"
    top = top_of(tmp_path, (oom + handle) * 3)
    assert top.category is Category.RANK_OUT_OF_MEMORY, top
    # the handle alone, or another process's after that OOM: the handle's reading, as before
    assert top_of(tmp_path, handle).category is not Category.RANK_OUT_OF_MEMORY
    other = handle.replace(":392:494", ":393:495")
    assert top_of(tmp_path, oom + other).category is not Category.RANK_OUT_OF_MEMORY
    # the handle before the OOM: not its consequence
    assert top_of(tmp_path, handle + oom).category is not Category.RANK_OUT_OF_MEMORY


def test_an_abort_under_an_uncaught_exception_whose_words_are_read_is_no_crash_of_its_own(tmp_path: Path) -> None:
    # real: sgl-project/sglang#6763 (r193a): gloo's size check thrown, uncaught, then Python's fatal error handler
    thrown = ("terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
              "  what():  [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:446] "
              "op.preamble.length <= op.nbytes. 128 vs 8\n")
    aborted = "Fatal Python error: Aborted\n\nThread 0x00007f1b0c1ff640 (most recent call first):\n"
    top = top_of(tmp_path, thrown + aborted)
    assert top.category is Category.COLLECTIVE_DESYNC, top
    # the same end of another reading's exception (gloo's refused connect): that reading alone, no crash beside it
    refused = thrown.replace("op.preamble.length <= op.nbytes. 128 vs 8", "optval == 0. 111 vs 0. SO_ERROR: "
                             "Connection refused").replace("tcp/pair.cc:446", "tcp/pair.cc:498")
    hypotheses = diagnose_paste(tmp_path, refused + aborted).hypotheses
    assert hypotheses[0].category is Category.PEER_UNREACHABLE, hypotheses
    assert not any(h.category is Category.RANK_CRASHED for h in hypotheses), hypotheses
    # an exception whose words no rule reads: the abort is still the crash it reports
    unread = thrown.replace("op.preamble.length <= op.nbytes. 128 vs 8", "something odd happened")
    assert top_of(tmp_path, unread + aborted).category is Category.RANK_CRASHED
    # another signal than an abort (a segfault): not the exception's end
    segv = "Fatal Python error: Segmentation fault\n"
    assert any(h.category is Category.RANK_CRASHED for h in diagnose_paste(tmp_path, thrown + segv).hypotheses)


def test_an_rpc_remote_error_names_the_worker_it_was_raised_on(tmp_path: Path) -> None:
    # real: facebookresearch/fairscale#895 (r193f): the caller's IndexError, then the remote stage's own error
    caller = ("Traceback (most recent call last):\n"
              '  File "/env/lib/python3.8/site-packages/fairscale/nn/pipe/rpc.py", line 214, in _recv_result\n'
              "    return message.tensors[0]\n"
              "IndexError: tuple index out of range\n")
    remote = ("On WorkerInfo(id=1, name=Worker1):\n"
              "RuntimeError('got 1 tensors and 0 gradients')\n"
              "Traceback (most recent call last):\n"
              '  File "/env/lib/python3.8/site-packages/torch/distributed/rpc/internal.py", line 190, in _run_func\n')
    top = top_of(tmp_path, caller + remote)
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,), top
    # an exception's repr where no rank is known (a log's own print of it): no exception of a rank
    loose = top_of(tmp_path, caller + "RuntimeError('got 1 tensors and 0 gradients')\n")
    assert loose.culprit_ranks != (1,), loose
    # the worker's scope ends at a blank line: a later error is not that worker's
    later = remote + "\nValueError: bad config\n"
    assert all(h.culprit_ranks != (1,) or "bad config" not in h.title
               for h in diagnose_paste(tmp_path, later).hypotheses)


def test_nccls_system_error_after_the_watchdog_found_a_failed_collective_is_not_a_setup_failure(tmp_path: Path) -> None:
    # real: neuralmagic/sparseml#1246 (r130d, changed by r193's reading of the abort)
    failed = ("ProcessGroupNCCL.cpp:325] Some NCCL operations have failed or timed out. Due to the asynchronous "
              "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n")
    error = "  what():  NCCL error: unhandled system error, NCCL version 2.7.8\n"
    assert "before any collective ran" not in top_of(tmp_path, failed + error).title
    # the same error with no sign of a collective: the setup's connection, as before
    assert "before any collective ran" in top_of(tmp_path, error).title


def test_nvshmems_error_prints_without_an_error_word_are_never_silent(tmp_path: Path) -> None:
    # the sweep of NVSHMEM v3.4.5-0's error macros (nvshmemx_error.h), each message filled and read alone
    for line in ("/sgl-workspace/nvshmem/src/host/team/team.cu:nvshmem_team_split_strided:63: NVSHMEM API called "
                 "before NVSHMEM initialization has completed\n",
                 "/sgl-workspace/nvshmem/src/modules/transport/ibgda/ibgda.cpp:2296: NULL value mem_handle is not "
                 "registered.\n",
                 "/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.8/main_nvshmem/src/host/topo/topo.cpp:469: [GPU 3] Peer GPU "
                 "8 is not accessible, exiting ...\n"):
        top = top_of(tmp_path, line)
        assert top.category is Category.UNRECOGNISED, (line, top)
    # its warnings and information lines stay quiet (a transport it skips, its start-up notes), and a source
    # location of another library in the same form
    for quiet in ("WARN: device mlx5_0 does not support atomic fetch and add\n",
                  "/root/DeepEP/nvshmem_src/src/modules/transport/ibrc/ibrc.cpp 1455 IBRC only supports One NIC / PE.\n",
                  "Found NVSHMEM_HOME from Python nvidia-nvshmem-cu12: /root/miniconda3/lib/python3.12/site-packages\n",
                  "/src/app/loader.cpp:load_config:42: using the defaults\n"):
        assert not diagnose_paste(tmp_path, quiet).hypotheses, quiet


def test_a_warning_that_memory_may_run_out_or_a_config_target_unresolved_is_no_failure_named(tmp_path: Path) -> None:
    # the sweeps of Lightning's and Megatron's own messages (their warnings, read alone)
    may = "UserWarning: WeightAveraging doesn't support sharding model layers, so you may run out of memory.\n"
    assert not any(h.category is Category.RANK_OUT_OF_MEMORY for h in diagnose_paste(tmp_path, may).hypotheses)
    target = ("[2026-12-07 10:00:00] WARNING Could not resolve target 'megatron.core.models.gpt.GPTModel': "
              "No module named 'megatron'\n")
    assert not any(h.category is Category.PEER_UNREACHABLE for h in diagnose_paste(tmp_path, target).hypotheses)
    # memory that did run out, and a host that did not resolve: read as before
    assert top_of(tmp_path, "RuntimeError: CUDA error: out of memory\n").category is Category.RANK_OUT_OF_MEMORY
    unresolved = "RuntimeError: could not resolve host node-7: Name or service not known\n"
    assert top_of(tmp_path, unresolved).category is Category.PEER_UNREACHABLE


def test_oneccls_kvs_read_that_waited_out_its_limit_is_the_others_never_arriving(tmp_path: Path) -> None:
    # the sweep of oneCCL's own messages (uxlfoundation/oneCCL): its key-value store's read timing out
    line = ("2025:02:17-17:20:51:( 2399) |CCL_ERROR| pmi_resizable_simple_internal.cpp:343 kvs_get_value: KVS get "
            "error: timeout limit: 60 > 60, prefix: CCL_POD_ADDR0, key: 2\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.RENDEZVOUS_TIMEOUT, top
    # its other errors stay errors no rule explains (a socket it could not make)
    other = line.replace("KVS get error: timeout limit: 60 > 60, prefix: CCL_POD_ADDR0, key: 2", "Socket creation error")
    assert top_of(tmp_path, other).category is Category.UNRECOGNISED
    # its refusal of the shm provider across nodes is a setting, no shared memory that ran out
    setting = line.replace("KVS get error: timeout limit: 60 > 60, prefix: CCL_POD_ADDR0, key: 2",
                           "shm provider is requested as primary provider but global_count (16) != local_count (8)")
    assert top_of(tmp_path, setting).category is Category.UNRECOGNISED
