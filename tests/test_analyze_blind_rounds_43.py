"""Readings of the hundred-and-eightieth round and after (``r183*``: consumer GPU clouds, LLM vendors' repositories,
time-series models, video and document models, code and math models, federated learning, virtualised hosts). One
behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, timeline_of, top_of
from syncdoctor.analyze.model import Category, Kind


def test_gloo_connect_full_mesh_cut_at_its_first_words_is_a_peer_not_reached(tmp_path: Path) -> None:
    # real: volcengine/verl#967 (r183f): the paste ends inside the error's words
    for line in ("RuntimeError: Gloo connectFullMesh fai\n", "RuntimeError: Gloo connectFullMesh failed\n",
                 "RuntimeError: Gloo connectFullMesh failed.\n"):
        top = top_of(tmp_path, line)
        assert top.category is Category.PEER_UNREACHABLE, (line, top)
    # a frame of the C++ backtrace naming the function is no failure of its own
    frame = ("frame #3: gloo::rendezvous::Context::connectFullMesh(std::shared_ptr<gloo::rendezvous::Store>, "
             "std::shared_ptr<gloo::transport::Device>&) + 0x5c (0x7fe2 in libtorch_cpu.so)\n")
    assert not any(h.category is Category.PEER_UNREACHABLE for h in diagnose_paste(tmp_path, frame).hypotheses)
    # nor a sentence that goes on after the words
    prose = "RuntimeError: Gloo connectFullMesh failed because the hosts disagree\n"
    assert top_of(tmp_path, prose).category is not Category.PEER_UNREACHABLE


def test_a_cpp_error_of_pytorch_whose_words_are_unknown_or_cut_is_never_silence(tmp_path: Path) -> None:
    # real: hao-ai-lab/FastVideo#443 (r183d): the paste ends right after the prefix of rank 1's ERROR line
    cut = "[rank1]:[E528 08:54:10.938727404 ProcessGroupNCCL.cpp:629\n"
    top = top_of(tmp_path, cut)
    assert top.category is Category.UNRECOGNISED and top.culprit_ranks == (1,), top
    assert "ProcessGroupNCCL.cpp" in top.title, top.title
    words = "[rank1]:[E528 08:54:10.938727404 ProcessGroupNCCL.cpp:629] [Rank 1] words no release printed yet\n"
    assert top_of(tmp_path, words).culprit_ranks == (1,)
    old = "[E ProcessGroupNCCL.cpp:587] [Rank 3] words no release printed yet\n"
    assert top_of(tmp_path, old).culprit_ranks == (3,)
    # the same prefix at WARNING, and torch elastic's Python log at ERROR (its traceback's lines), are no error
    for quiet in ("[rank1]:[W528 08:54:10.938727404 ProcessGroupNCCL.cpp:629] [Rank 1] words of a warning\n",
                  "E0724 10:11:12.123000 4242 torch/distributed/elastic/multiprocessing/api.py:869]   main()\n"):
        assert diagnose_paste(tmp_path, quiet).hypotheses == (), quiet
    # what the watchdog prints after a failure the readers read (its dump, the process taken down) is no quiet rank's
    # error of its own: it does not make that rank one that waited
    dump = ("[rank0]:[E804 23:05:54.816499929 ProcessGroupNCCL.cpp:1849] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
            "Observed flight recorder dump signal from another rank via TCPStore.\n")
    events = [e for e in timeline_of(tmp_path, dump).events if e.kind is Kind.ERROR_LINE]
    assert events == [], events


def test_a_traceback_the_paste_ends_on_an_assert_statement_failed_that_assertion(tmp_path: Path) -> None:
    # real: unit8co/darts#1966 (r183c): the frame's head cut by the copy, then the assert, then nothing
    paste = ('/site-packages/pytorch_lightning/overrides/distributed.py", line 213, in __init__\n'
             "    assert self.num_samples >= 1 or self.total_size == 0\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED, top
    assert "assert self.num_samples" in top.title, top.title
    whole = ("Traceback (most recent call last):\n"
             '  File "train.py", line 9, in <module>\n    main()\n'
             '  File "train.py", line 5, in main\n    assert world_size % tp == 0\n')
    assert "assert world_size % tp == 0" in top_of(tmp_path, whole).title
    # a traceback the paste ends on another statement is where the process stood, no assertion
    other = ("Traceback (most recent call last):\n"
             '  File "train.py", line 9, in <module>\n    main()\n'
             '  File "train.py", line 5, in main\n    assertions.check(model)\n')
    assert all("AssertionError" not in h.title for h in diagnose_paste(tmp_path, other).hypotheses)


_DUMP_SELF = ("[rank1]:[E603 04:19:16.570252694 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
              "Received a dump signal due to a collective timeout from this local rank and we will try our best to "
              "dump the debug info. Last enqueued NCCL work: 427698, last completed NCCL work: 427697.\n")
_DUMP_OTHER = ("[rank5]:[E603 04:19:16.760338325 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 5] "
               "Received a dump signal due to a collective timeout from  rank 1 and we will try our best to dump the "
               "debug info.\n")


def test_a_watchdog_asking_a_dump_for_its_own_timeout_timed_out(tmp_path: Path) -> None:
    # real: bytedance/Protenix#321 (r169e): the dump signals alone, the watchdog's own timeout line not pasted
    top = top_of(tmp_path, _DUMP_SELF + _DUMP_OTHER)
    assert top.category is Category.UNEXPLAINED_TIMEOUT and 1 in top.affected_ranks, top
    timeouts = [e for e in timeline_of(tmp_path, _DUMP_SELF).events if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert [(e.origin.rank, e.seq) for e in timeouts] == [(1, 427698)], timeouts
    # where the rank's own timeout line is there, the dump adds no second timeout
    caught = ("[rank1]:[E603 04:19:16.5 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=427698, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
              "600010 milliseconds before timing out.\n")
    both = [e for e in timeline_of(tmp_path, caught + _DUMP_SELF).events if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert len(both) == 1 and not both[0].data.get("dump_signal"), both
    # a dump signal another rank asked for says nothing of this rank's own collective
    other = [e for e in timeline_of(tmp_path, _DUMP_OTHER).events if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert other == [], other


def test_a_quiet_rank_is_no_verdict_where_most_of_the_jobs_ranks_are_not_in_the_inputs(tmp_path: Path) -> None:
    # the protenix paste: rank 1 timed out, rank 5 only received the dump signal, ranks 0, 2-4 are not there
    top = top_of(tmp_path, _DUMP_SELF + _DUMP_OTHER)
    assert top.category is not Category.LAGGING_RANK, top
    lagging = [h for h in diagnose_paste(tmp_path, _DUMP_SELF + _DUMP_OTHER).hypotheses
               if h.category is Category.LAGGING_RANK]
    assert all(h.confidence <= 0.25 for h in lagging), lagging
    # two ranks, one timed out and the other only told of it: the quiet one is still named
    pair = top_of(tmp_path, _DUMP_SELF + _DUMP_OTHER.replace("rank5]", "rank0]").replace("Rank 5]", "Rank 0]"))
    assert pair.category is Category.LAGGING_RANK and pair.culprit_ranks == (0,), pair


def test_a_frames_source_line_is_the_programs_code_not_an_error_line(tmp_path: Path) -> None:
    # real: unit8co/darts#1385 (r183c): the reporter's own comment names the error in the line the frame quotes;
    # the traceback is cut before its exception, so it is where the process stood (A003), no error of no rule
    paste = ("Traceback (most recent call last):\n"
             '  File "mre.py", line 22, in <module>\n    main()\n'
             '  File "mre.py", line 19, in main\n'
             "    model.predict(12) # AssertionError: assert self.num_samples >= 1 or self.total_size == 0\n"
             '  File "/x/site-packages/darts/models/forecasting/tft_model.py", line 1147, in predict\n'
             "    return super().predict(n, *args, **kwargs)\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED, top
    events = [e for e in timeline_of(tmp_path, paste).events if e.kind is Kind.ERROR_LINE]
    assert all("model.predict" not in e.text for e in events), events
    # the same words on a line of their own, outside any traceback, are an error line
    alone = "    model.predict(12) # AssertionError: assert self.num_samples >= 1\n"
    assert any(e.kind is Kind.ERROR_LINE for e in timeline_of(tmp_path, alone).events)


def test_a_container_runtime_that_could_not_start_is_the_nodes_setup_whatever_its_hooks_crashed_of(
        tmp_path: Path) -> None:
    # real: NVIDIA/pyxis#122 (r184f): enroot's hook crashed inside the container's start, under srun -l's label
    paste = ("22: slurmstepd: error: pyxis: container start failed with error code: 1\n"
             "22: slurmstepd: error: pyxis: printing enroot log file:\n"
             "22: slurmstepd: error: pyxis:          3474707 Segmentation fault      (core dumped) | pwck -R "
             '"${ENROOT_ROOTFS}"\n'
             "22: slurmstepd: error: pyxis:     nvidia-container-cli: ldcache error: process\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "container" in top.title, top
    # a training process's own segfault under srun's label stays a crash
    own = "22: Segmentation fault (core dumped)\n22: srun: error: node3: task 22: Exited with exit code 139\n"
    assert top_of(tmp_path, own).category is Category.RANK_CRASHED


_C10D_NO_ENDPOINT = ("+ torchrun --nnodes=2 --nproc_per_node=1 --node_rank=0 --master_addr=11.214.25.222 --master_port "
                     "9999 --rdzv_id=1986 --rdzv_backend=c10d train.py --config conf/llm.yaml\n"
                     "master_addr is only used for static rdzv_backend and when rdzv_endpoint is not specified.\n"
                     "Traceback (most recent call last):\n"
                     '  File "/usr/local/bin/torchrun", line 8, in <module>\n')


def test_a_c10d_rendezvous_of_several_nodes_without_its_endpoint_is_each_nodes_own(tmp_path: Path) -> None:
    # real: FunAudioLLM/CosyVoice#241 (r184d): --master_addr given, the c10d backend ignores it
    top = top_of(tmp_path, _C10D_NO_ENDPOINT)
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "--rdzv_endpoint" in top.title, top
    assert top.confidence >= 0.6, top
    # an endpoint on the loopback is each node's own as well
    loop = _C10D_NO_ENDPOINT.replace("--rdzv_backend=c10d", "--rdzv_backend=c10d --rdzv_endpoint=localhost:29400")
    assert top_of(tmp_path, loop).category is Category.RENDEZVOUS_TIMEOUT
    # not with an endpoint on a host, on one node, with the static backend, or under accelerate (which derives it)
    for fine in (_C10D_NO_ENDPOINT.replace("--rdzv_backend=c10d", "--rdzv_backend=c10d --rdzv_endpoint=10.0.0.1:29400"),
                 _C10D_NO_ENDPOINT.replace("--nnodes=2", "--nnodes=1"),
                 _C10D_NO_ENDPOINT.replace("--rdzv_backend=c10d", "--rdzv_backend=static"),
                 _C10D_NO_ENDPOINT.replace("torchrun", "accelerate launch")):
        hypotheses = diagnose_paste(tmp_path, fine).hypotheses
        assert all("--rdzv_endpoint" not in h.title for h in hypotheses), (fine, hypotheses)
    # nor where the paste cut the command line inside an option (``--rdzv_endpoi``)
    cut = "time torchrun --nnodes=2 --nproc_per_node=1 --rdzv_id=159008 --rdzv_backend=c10d --rdzv_endpoi\n"
    assert all("--rdzv_endpoint" not in h.title for h in diagnose_paste(tmp_path, cut).hypotheses)


def test_a_host_and_its_slot_count_taken_for_a_host_name_is_the_launchers_syntax(tmp_path: Path) -> None:
    # real: mit-han-lab/torchpack#24, spvnas#2 and #30 (r184g), horovod#1677 (r106a): Open MPI before 3.0
    paste = ("ssh: Could not resolve hostname localhost:3: Name or service not known\n"
             "--------------------------------------------------------------------------\n"
             "ORTE was unable to reliably start one or more daemons.\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "localhost:3" in top.title, top
    # a host name that does not resolve, without a slot count, is a node the launcher could not reach
    plain = paste.replace("localhost:3:", "worker-7:")
    assert top_of(tmp_path, plain).category is Category.PEER_UNREACHABLE


def test_an_exception_line_a_collector_put_where_a_source_line_would_be_is_still_read(tmp_path: Path) -> None:
    # the Aurora paste (r93b) behind a collector's timestamp: the exception's line, indented by the paste under its
    # label, follows the frames like a source line would
    stamp = "2024-12-05T10:11:12.123Z       [rank0]: "
    paste = "".join(stamp + line + "\n" for line in (
        "Traceback (most recent call last):",
        '  File "/x/train.py", line 564, in <module>', "    main(config)",
        '  File "/x/torch/cuda/__init__.py", line 310, in _lazy_init',
        '    raise AssertionError("Torch not compiled with CUDA enabled")',
        "AssertionError: Torch not compiled with CUDA enabled"))
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "a PyTorch build without CUDA" in top.title, top


def test_a_store_port_below_1024_refused_is_the_jobs_setup_not_a_port_taken(tmp_path: Path) -> None:
    # real: KimMeen/Time-LLM#20 (r185h): Accelerate's main_process_port 97, errno 13
    refused = ("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:97 (errno: 13 - Permission "
               "denied).\n[E socket.cpp:462] [c10d] The server socket has failed to listen on any local network "
               "address.\n")
    top = top_of(tmp_path, refused)
    assert top.category is Category.UNRECOGNISED and "below 1024" in top.title, top
    # the same bind finding the port in use is a port taken
    taken = refused.replace(":97 (errno: 13 - Permission denied)", ":29500 (errno: 98 - Address already in use)")
    assert top_of(tmp_path, taken).category is Category.PORT_IN_USE


def test_a_registration_the_nic_refused_with_einval_is_no_memlock_limit(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1842 (r185g): ibv_reg_mr_iova2 -> EINVAL during an all-gather
    einval = "misc/ibvwrap.cc:182 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Invalid argument \n"
    top = top_of(tmp_path, einval)
    assert top.category is Category.UNRECOGNISED and "another reason than the locked-memory limit" in top.title, top
    # ENOMEM is the limit
    enomem = einval.replace("Invalid argument", "Cannot allocate memory")
    assert top_of(tmp_path, enomem).category is Category.MEMLOCK_LIMIT


def test_cuda_error_217_after_a_retyped_last_error_is_peer_access(tmp_path: Path) -> None:
    # real: alibaba/ChatLearn#374 (r185a): the reporter retyped PyTorch's message ("last error:", "not support")
    paste = ("torch.distributed.DistBackendError: NCCL error in :   ProcessGruopNCCL.cpp:3699，unhandle cuda error, NCCL "
             "version 2.27.3\nncclUnhandledCudaError: Call to CUDA function failed.\nlast error: \n"
             "Cuda failure 217 'peer access is not support between these two devices'\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.PEER_ACCESS, top
    # another CUDA failure after it stays the GPU's
    other = paste.replace("Cuda failure 217 'peer access is not support between these two devices'",
                          "Cuda failure 700 'an illegal memory access was encountered'")
    assert top_of(tmp_path, other).category is Category.GPU_ERROR


def test_an_old_gloo_pairs_refused_connect_is_a_peer_not_reached(tmp_path: Path) -> None:
    # real: facebookarchive/caffe2#360 (r185c): gloo 2017's check of SO_ERROR in pair.cc
    line = ("  what():  [enforce fail at /home/u/gloo/gloo/transport/tcp/pair.cc:498] optval == 0. 111 vs 0. SO_ERROR: "
            "Connection refused\n")
    events = [e for e in timeline_of(tmp_path, line).events if e.kind is Kind.GLOO_CONNECT_FAILED]
    assert [e.data["error"] for e in events] == ["Connection refused"], events
    assert top_of(tmp_path, line).category is Category.PEER_UNREACHABLE
    # SO_ERROR named outside gloo's pair is no gloo connect
    other = "setsockopt SO_ERROR: Connection refused in my_server.c:12\n"
    assert not [e for e in timeline_of(tmp_path, other).events if e.kind is Kind.GLOO_CONNECT_FAILED]


def test_srun_reporting_tasks_of_a_host_the_paste_redacted_is_still_read(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning#13804 (r184f): the reporter hid the node's name behind ``<node-name>``
    line = "srun: error: <node-name>: tasks 6-7: Exited with exit code 1\n"
    failed = [e for e in timeline_of(tmp_path, line).events if e.kind is Kind.WORKER_FAILED]
    assert [(e.data["tasks"], e.data["exitcode"], e.origin.host) for e in failed] == [("6-7", 1, None)], failed
    # a host in angle brackets is no host name, and a line of srun's without one is none of these
    assert not [e for e in timeline_of(tmp_path, "srun: error: tasks 6-7: Exited with exit code 1\n").events
                if e.kind is Kind.WORKER_FAILED]


def test_ncclS_prefix_with_a_redacted_host_keeps_its_process(tmp_path: Path) -> None:
    # the corpus' pastes that hide the host (``<cluster_name>:919:1150 [0]``): the pid still tells the processes apart
    for host in ("<cluster_name>", "[hostname]"):
        line = (f"{host}:919:1150 [0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_modify_qp failed with error Connection "
                "timed out\n")
        events = [e for e in timeline_of(tmp_path, line).events if e.kind is Kind.IB_MODIFY_QP]
        assert [(e.origin.host, e.origin.pid, e.origin.device) for e in events] == [(None, 919, 0)], (host, events)
    # a real host is kept as one
    real = ("node-7:919:1150 [0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_modify_qp failed with error Connection timed "
            "out\n")
    assert [e.origin.host for e in timeline_of(tmp_path, real).events if e.kind is Kind.IB_MODIFY_QP] == ["node-7"]


def test_torchruns_childfailederror_whose_table_the_paste_cut_is_a_worker_that_failed(tmp_path: Path) -> None:
    # real: DFormer#52 (r186d), LLaMA-Factory#9506 (r186g): the agent's raise, its table cut before the root cause
    cut = ("    raise ChildFailedError(\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
           "============================================================\nutils/train.py FAILED\n"
           "------------------------------------------------------------\nFailures:\n  <NO_OTHER_FAILURES>\n")
    top = top_of(tmp_path, cut)
    assert top.category is Category.RANK_CRASHED and "torchrun" in top.title, top
    # the table whole says how: a SIGKILL is the worker killed
    whole = cut + ("------------------------------------------------------------\nRoot Cause (first observed failure):\n"
                   "[0]:\n  time      : 2024-05-01_10:11:12\n  host      : node-1\n  rank      : 3 (local_rank: 3)\n"
                   "  exitcode  : -9 (pid: 4242)\n  error_file: <N/A>\n"
                   "  traceback : Signal 9 (SIGKILL) received by PID 4242\n")
    assert top_of(tmp_path, whole).category is Category.RANK_KILLED
