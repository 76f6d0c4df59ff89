"""Readings added after the thirteenth and fourteenth blind harvests (the r16* and r17* cases of the real
corpus), one behaviour per test, each with the look-alike it must not catch: a native crash handler's banner
and abseil's signal handler, the abort that follows a watchdog timeout, gloo's connect error wrapped after
``connect``, a store address with a space in it, torchrun losing the rendezvous store at shutdown, an
evaluation running while the others wait. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_a_native_crash_handlers_banner_is_a_segfault(tmp_path: Path) -> None:
    # real: Project-HAMi/HAMi-core#169 (a libvgpu hook crashing inside ncclCommInitRank)
    top = diagnose(tmp_path, """
[HAMI-core ERROR (pid:565 thread=140267266266944 multiprocess_memory_limit.c:831)]: Illegal device id: 850725928
!!!!!!! Segfault encountered !!!!!!!
  File "/libvgpu/src/cuda/memory.c", line 582, in cuMemCreate
  File "misc/cudawrap.cc", line 92, in ncclCuMemHostEnable()
""").hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "SIGSEGV" in top.title


def test_abseils_signal_handler_names_the_process_and_its_host(tmp_path: Path) -> None:
    # real: vllm-project/vllm#17770 (a Ray worker segfaulting in NCCL's proxy)
    top = diagnose(tmp_path, """
(RayWorkerWrapper pid=2191173, ip=10.52.51.232) *** SIGSEGV received at time=1746566409 on cpu 131 ***
(RayWorkerWrapper pid=2191173, ip=10.52.51.232) PC: @     0x7fcfcd849b8a  (unknown)  addProxyOpIfNeeded()
""").hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "SIGSEGV" in top.title
    assert "2191173" in top.title and "10.52.51.232" in top.title


def test_a_handler_that_only_logs_a_signal_it_caught_is_no_crash(tmp_path: Path) -> None:
    diagnosis = diagnose(tmp_path, "*** SIGTERM received at time=1746566409 on cpu 3 ***")
    assert all(h.category is not Category.RANK_CRASHED for h in diagnosis.hypotheses)


_ABORT = """
terminate called after throwing an instance of 'std::runtime_error'
  what():  [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=806, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1801027 milliseconds before timing out.
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 561635 closing signal SIGTERM
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 7 (pid: 561642) of binary: /usr/bin/python3
"""


def test_the_abort_after_a_watchdog_timeout_is_the_timeouts_end_not_a_crash(tmp_path: Path) -> None:
    # real: snap-research/discoscene#5: the watchdog takes its process down (SIGABRT, exit code -6)
    top = diagnose(tmp_path, _ABORT).hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT and top.affected_ranks == (7,)


def test_an_abort_with_no_timeout_before_it_is_still_a_crash(tmp_path: Path) -> None:
    text = _ABORT.split("\n", 3)[3]  # the launcher's lines only
    top = diagnose(tmp_path, text).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "SIGABRT" in top.title


def test_gloos_connect_error_wrapped_after_connect_is_read_joined(tmp_path: Path) -> None:
    # real: hpcaitech/ColossalAI#2407
    top = diagnose(tmp_path, """
RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect
[127.0.1.1]:29591: Connection refused
""").hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and "127.0.1.1" in top.title


def test_a_store_address_with_a_space_in_it_resolves_to_nothing(tmp_path: Path) -> None:
    # real: pytorch/pytorch#121807: MASTER_ADDR=" 10.0.5.4"
    line = ("[W socket.cpp:697] [c10d] The IPv6 network addresses of ( 10.0.5.4, 8004) cannot be retrieved (gai "
            "error: -2 - Name or service not known).")
    top = diagnose(tmp_path, "\n".join([line] * 3)).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "10.0.5.4:8004" in top.title
    assert "a space around the host name" in top.title


def test_the_usual_ipv6_lookup_warning_of_a_plain_host_is_harmless(tmp_path: Path) -> None:
    line = ("[W socket.cpp:697] [c10d] The IPv6 network addresses of (node-0, 29500) cannot be retrieved (gai error: "
            "-2 - Name or service not known).")
    assert diagnose(tmp_path, line).hypotheses == ()


_SHUTDOWN = """
WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node '38049eef641b_3140_0' has failed to shutdown the rendezvous '3045' due to an error of type RendezvousConnectionError.
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 113, in _call_store
    return getattr(self._store, store_op)(*args, **kwargs)
RuntimeError: Connection reset by peer
"""


def test_losing_the_rendezvous_store_at_shutdown_alone_says_so_at_a_low_confidence(tmp_path: Path) -> None:
    # real: ymcui/Chinese-LLaMA-Alpaca-2#274
    top = diagnose(tmp_path, _SHUTDOWN).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.confidence == 0.3
    assert "as it shut down" in top.title


def test_losing_the_store_at_shutdown_after_a_workers_failure_is_that_failure(tmp_path: Path) -> None:
    text = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 79.15 GiB total "
            "capacity)\n" + _SHUTDOWN)
    assert diagnose(tmp_path, text).hypotheses[0].category is Category.RANK_OUT_OF_MEMORY


_COCO = """
10/26 11:27:48 - mmengine - INFO - Evaluating bbox...
Loading and preparing results...
DONE (t=27.37s)
Running per image evaluation...
Evaluate annotation type *bbox*
[E ProcessGroupNCCL.cpp:828] [Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=987156, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800741 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:828] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=987156, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800768 milliseconds before timing out.
"""


def test_an_evaluation_just_before_the_others_timed_out_names_rank_0(tmp_path: Path) -> None:
    # real: open-mmlab/mmdetection#11096 (pycocotools' COCO evaluation runs on rank 0 alone)
    top = diagnose(tmp_path, _COCO).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,) and top.confidence == 0.5
    assert "Evaluate annotation type" in top.title
    assert top.evidence[0].note == "evaluating when the others timed out"


def test_an_evaluation_long_before_the_timeouts_is_no_evidence(tmp_path: Path) -> None:
    lines = _COCO.strip("\n").split("\n")
    text = "\n".join(lines[:5] + [f"step {i} loss 0.1" for i in range(20)] + lines[5:])
    top = diagnose(tmp_path, text).hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT


def test_an_evaluation_line_is_kept_once_however_often_it_repeats(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("Running per image evaluation...\n" * 5000)
    phases = [e for e in analyze_paths([str(path)]).collected.events if e.kind is Kind.WORK_PHASE]
    assert len(phases) == 1 and phases[0].ref.line == 5000
