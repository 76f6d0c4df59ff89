"""Readings added in the session of the sixty-eighth blind harvest (the r71* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one, timeline_of
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_GLOO_KEYS = ("Tue Jun  9 20:10:40 2020[1]<stderr>:terminate called after throwing an instance of 'gloo::IoException'\n"
              "Tue Jun  9 20:10:40 2020[1]<stderr>:  what():  [horovod/common/gloo/http_store.cc:53] "
              "[horovod/common/gloo/http_store.cc:53] Wait timeout for key(s): 0\n"
              "Tue Jun  9 20:10:40 2020[1]<stderr>:*** Received signal 6 ***\n")


def test_gloos_own_store_timing_out_on_a_ranks_key_is_its_rendezvous_timing_out(tmp_path: Path) -> None:
    event = one("what():  [gloo/rendezvous/file_store.cc:148] Wait timeout for key(s): 3, 5", Kind.STORE_ERROR)
    assert event.data["what"] == "rendezvous-timeout" and event.data["awaited"] == [3, 5]
    top = diagnose(tmp_path, _GLOO_KEYS).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "address of rank 0" in top.title
    assert "HOROVOD_GLOO_TIMEOUT_SECONDS" in top.what and top.culprit_ranks == ()
    # Caffe2's handlers name keys, not ranks: a store wait, not gloo's rendezvous
    caffe2 = one("file_store_handler.cc:132] Wait timeout for name(s): allreduce_0_cw_op/1", Kind.STORE_ERROR)
    assert caffe2.data["what"] == "wait" and caffe2.data["missing_ranks"] == [1]


def _timeouts(ranks: list[int], follow: int) -> str:
    lines = [f"[rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught collective operation timeout: "
             f"WorkNCCL(SeqNum=367201, OpType=ALLREDUCE, NumelIn=443012, NumelOut=443012, Timeout(ms)=600000) ran "
             f"for 6001{r}7 milliseconds before timing out." for r in ranks]
    lines += [f"[rank{ranks[0]}]:[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the "
              "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
              f"[rank{ranks[0]}]:[E ProcessGroupNCCL.cpp:543] To avoid data inconsistency, we are taking the entire "
              "process down."][:follow]
    return "\n".join(lines) + "\n"


def test_a_rank_missing_from_the_middle_of_a_burst_of_timeouts_is_the_one_that_never_arrived(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _timeouts([1, 0, 3], follow=2)).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (2,), top.title
    assert "missing from the burst" in top.title
    # a paste cut right after the burst may simply have left rank 2's line out: the unexplained timeout
    cut = diagnose(tmp_path, _timeouts([1, 0, 3], follow=0)).hypotheses[0]
    assert cut.category is Category.UNEXPLAINED_TIMEOUT
    # two ranks missing from the range: not one rank's absence
    two = diagnose(tmp_path, _timeouts([0, 3, 4], follow=2)).hypotheses[0]
    assert two.culprit_ranks != (1,) and two.culprit_ranks != (2,)
    # timeouts in different collectives are no burst of one (and read as a desync)
    mixed = _timeouts([1, 0, 3], follow=2).replace("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL("
                                                  "SeqNum=367201", "[Rank 3] Watchdog caught collective operation "
                                                  "timeout: WorkNCCL(SeqNum=367202")
    assert diagnose(tmp_path, mixed).hypotheses[0].category is Category.COLLECTIVE_DESYNC


_R40A = ("[rank1]:[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
         "OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800013 milliseconds before timing out.\n"
         "pod-a:227:287 [0] NCCL INFO [Service thread] Connection closed by localRank 1\n"
         "pod-a:228:286 [1] NCCL INFO [Service thread] Connection closed by localRank 1\n"
         "pod-a:228:280 [0] NCCL INFO comm 0x55e51d238c10 rank 1 nranks 2 cudaDev 1 busId 1a000 - Abort COMPLETE\n")


def test_the_one_process_no_line_places_holds_the_one_rank_the_world_has_left(tmp_path: Path) -> None:
    timeline = timeline_of(tmp_path, _R40A)
    assert timeline.pid_place(227) == ("pod-a", 0)
    top = diagnose(tmp_path, _R40A).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,), top.title
    assert top.title.startswith("rank 0 arrived late: rank 1 had timed out")
    # a world of three with two processes unplaced: either could hold either rank
    three = _R40A.replace("nranks 2", "nranks 3") + "pod-a:229:290 [2] NCCL INFO [Service thread] Connection closed by localRank 1\n"
    assert timeline_of(tmp_path, three).pid_place(227) == ("pod-a", None)
    # a process holding two ranks (threads): nothing to eliminate
    threads = _R40A + "pod-a:228:281 [1] NCCL INFO comm 0x55e51d238c20 rank 0 nranks 2 cudaDev 0 busId 1b000 - Abort COMPLETE\n"
    assert timeline_of(tmp_path, threads).pid_place(227) == ("pod-a", None)


def test_open_mpis_single_copy_refused_is_read_and_led_by_any_other_failure(tmp_path: Path) -> None:
    cma = "".join(f"[1,{r}]<stderr>:[8311b4012d34:15393{r}] Read -1, expected 131072, errno = 1\n" for r in (5, 7, 3))
    top = diagnose(tmp_path, cma).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "CMA" in top.title and "EPERM" in top.title, top.title
    assert "SYS_PTRACE" in top.fix and "btl_vader_single_copy_mechanism=none" in top.fix and top.confidence <= 0.3
    # beside a real failure it is not the lead
    crash = cma + "[1,3]<stderr>:RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert diagnose(tmp_path, crash).hypotheses[0].category is Category.GPU_ERROR
    # a non-zero errno is an error line; errno 0 is none
    assert one("[host:1] shmem attach failed? errno = 13", Kind.ERROR_LINE)
    assert not [e for e in events_of("[host:1] Read 4096, expected 4096, errno = 0") if e.kind is Kind.ERROR_LINE]


def test_cudas_limit_of_peers_is_a_peer_access_limit_not_a_faulty_gpu(tmp_path: Path) -> None:
    line = ("2019-07-25 09:33:34.093469: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1597] Unable to enable peer "
            "access between device ordinals 0 and 9, status: Internal: failed to enable peer access from 0x7f76d46da2c0 "
            "to 0x7f76b4713830: CUDA_ERROR_TOO_MANY_PEERS: peer mapping resources exhausted\n")
    assert one(line, Kind.PEER_ACCESS).data["cuda_error"] == 711
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.PEER_ACCESS and "TOO_MANY_PEERS" in top.title and "one process per GPU" in top.fix
    # another driver error name stays a GPU's error
    other = line.replace("CUDA_ERROR_TOO_MANY_PEERS: peer mapping resources exhausted",
                         "CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered")
    assert diagnose(tmp_path, other).hypotheses[0].category is Category.GPU_ERROR


def test_a_store_barrier_timeout_cut_before_its_counts_is_still_the_group_that_could_not_form(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "timed out initializing process group in store based barrier on rank\n").hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT
    with_rank = one("RuntimeError: Timed out initializing process group in store based barrier on rank: 3", Kind.STORE_ERROR)
    assert with_rank.origin.rank == 3 and with_rank.data["what"] == "barrier"
    # the barrier's progress line while it still waits is not a timeout of it
    assert not [e for e in events_of("Waiting for the store based barrier to be ready") if e.kind is Kind.STORE_ERROR]


def test_gdb_stopping_a_process_on_a_fatal_signal_is_its_death(tmp_path: Path) -> None:
    bus = ('Thread 787 "imagenet_fake_d" received signal SIGBUS, Bus error.\n'
           "[Switching to Thread 0x7f45d7dff640 (LWP 3925)]\n"
           "0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) () from "
           "/usr/local/lib/python3.10/dist-packages/jaxlib/xla_extension.so\n")
    event = one(bus.splitlines()[0], Kind.FATAL_SIGNAL)
    assert event.data["signal"] == "SIGBUS" and event.data["source"] == "gdb"
    assert diagnose(tmp_path, bus).hypotheses[0].category is Category.SHM_EXHAUSTED
    assert one("Program terminated with signal SIGSEGV, Segmentation fault.", Kind.FATAL_SIGNAL).data["signal"] == "SIGSEGV"
    # gdb stops on signals a program survives too
    assert not [e for e in events_of('Thread 3 "python" received signal SIGPIPE, Broken pipe.')
                if e.kind is Kind.FATAL_SIGNAL]


def test_an_evaluations_unfinished_bar_before_the_timeout_names_the_evaluating_rank(tmp_path: Path) -> None:
    paste = ("Evaluating:   0%|          | 0/161 [00:00<?, ?batch/s]\n"
             "[rank1]:[E826 23:04:17.605065165 ProcessGroupNCCL.cpp:688] [Rank 1] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=520804, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
             "600005 milliseconds before timing out.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,) and "an evaluation" in top.title
    # a training bar is no evaluation, and a finished evaluation bar held nobody
    for bar in ("Epoch 3/75:  40%|####      | 466/1165 [03:42<05:33,  2.10batch/s]",
                "Evaluating: 100%|##########| 161/161 [01:10<00:00,  2.29batch/s]"):
        other = diagnose(tmp_path, paste.replace(paste.splitlines()[0], bar)).hypotheses[0]
        assert "an evaluation" not in other.title and other.confidence < top.confidence, other.title


def test_tensorflows_group_of_another_size_is_a_desync(tmp_path: Path) -> None:
    line = ("2019-11-04 16:59:38.489335: W tensorflow/core/common_runtime/base_collective_executor.cc:216] "
            "BaseCollectiveExecutor::StartAbort Internal: Collective Op  has group_size 8 and group_key2 but that group "
            "has size 4\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and "expects 8 members in group 2" in top.title
    assert "TF_CONFIG" in top.fix


def test_ms_mpi_finding_no_address_inside_the_netmask_is_the_wrong_subnet(tmp_path: Path) -> None:
    paste = ("[0] fatal error\nFatal error in MPI_Comm_split: Other MPI error, error stack:\n"
             "[ch3:sock] rank 0 unable to connect to rank 19 using business card <port=55198 description=\"10.35.1.20 "
             "KESHIKI20 \" shm_host=KESHIKI20 shm_queue=6880:1256 >\n"
             "unable to connect to 10.35.1.20 KESHIKI20  on port 55198, no endpoint matches the netmask "
             "10.37.0.0/255.255.0.0\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and "10.37.0.0/255.255.0.0" in top.title
    assert "MPICH_NETMASK" in top.fix
    # a refused connection without the netmask is not a subnet mismatch
    refused = paste.replace(", no endpoint matches the netmask 10.37.0.0/255.255.0.0", " (errno 10061)")
    assert diagnose(tmp_path, refused).hypotheses[0].category is not Category.INTERFACE_MISMATCH


def test_an_operation_a_library_could_not_do_is_an_error_line_even_without_an_error_word(tmp_path: Path) -> None:
    for text in ("[ch3:sock] rank 0 unable to connect to rank 19 using business card <port=55198>",
                 "[host3] unable to establish a connection to 10.1.0.7:5555 within 30 s",
                 "curl: (6) Could not resolve host: master-0.job.svc"):
        assert one(text, Kind.ERROR_LINE)
    assert diagnose(tmp_path, "[ch3:sock] rank 0 unable to connect to rank 19\n").hypotheses  # never silent
    # words of a failure about no system operation are not
    for text in ("Could not estimate the number of tokens of the input, floating-point operations will not be computed",
                 "You cannot use this tokenizer with padding", "unable to determine the number of GPUs per node: 8 assumed"):
        assert not [e for e in events_of(text) if e.kind is Kind.ERROR_LINE], text


def test_a_line_saying_the_evaluations_data_is_being_built_is_the_evaluation_phase(tmp_path: Path) -> None:
    paste = ("I0310 00:05:11.208833 139903355844416 logging_logger.py:49] Constructing tf.data.Dataset wmt14_translate "
             "for split validation, from /data/wmt/wmt14_translate/de-en/1.0.0\n" + "".join(
                 f"[E ProcessGroupNCCL.cpp:821] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL("
                 f"SeqNum=94, OpType=BROADCAST, Timeout(ms)=1800000) ran for 180030{r} milliseconds before timing out.\n"
                 for r in (2, 7, 6)))
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,) and "an evaluation" in top.title
    loading = "Loading the validation set from /data/val\n" + paste.split("\n", 1)[1]
    assert "an evaluation" in diagnose(tmp_path, loading).hypotheses[0].title
    # the training split is no evaluation
    train = paste.replace("for split validation", "for split train")
    assert "an evaluation" not in diagnose(tmp_path, train).hypotheses[0].title
