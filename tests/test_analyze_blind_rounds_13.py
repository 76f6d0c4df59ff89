"""Readings added after the twenty-ninth blind harvest (the r32* cases of the real corpus), one behaviour per
test, each with the look-alike it must not catch: ProcessGroupNCCL's lines after its watchdog caught a failure
put their rank inside a collective, colour codes whose escape byte the paste lost, a Ray worker's pid tied to its
rank, the watchdog's message pasted from its ``WorkNCCL(…)`` on, a ``WorkNCCL(…)`` cut by the paste, a progress
bar without a prefix drawn by the rank that timed out, and a native program's glog error line. Lines are written
as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one, read, timeline_of
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.prefixes import clean

diagnose = diagnose_paste

_TIMEOUT_1 = ("[rank1]:[E307 05:30:20.039566920 ProcessGroupNCCL.cpp:2057] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
              "Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=13, OpType=SCATTER, NumelIn=384, NumelOut=0, Timeout(ms)=1800000) ran for "
              "1800085 milliseconds before timing out.\n")
_AFTERMATH_0 = ("[rank0]:[E307 05:30:18.278313932 ProcessGroupNCCL.cpp:744] [Rank 0] Some NCCL operations have failed "
                "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                "corrupted/incomplete data.\n")


def test_a_rank_whose_watchdog_caught_a_failure_is_not_the_one_that_never_arrived(tmp_path: Path) -> None:
    # real: axolotl-ai-cloud/axolotl#3476 (FSDP2 loading: both ranks' watchdogs fired, rank 0's op not shown)
    hypotheses = diagnose(tmp_path, _AFTERMATH_0 + _TIMEOUT_1).hypotheses
    assert not [h for h in hypotheses if h.category is Category.LAGGING_RANK and 0 in h.culprit_ranks], hypotheses
    assert hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT
    # a rank whose error says nothing of a collective of its own is still the one the others waited for
    quiet = "[rank0]: ERROR: could not upload metrics to the tracking server\n" + _TIMEOUT_1
    top = diagnose(tmp_path, quiet).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,)


def test_colour_codes_that_lost_their_escape_byte() -> None:
    # real: NovaSky-AI/SkyRL#757 (a Ray job's output pasted into an issue: ``[36m`` left, the escape byte gone)
    line = ("[36m(FSDPPolicyWorkerBase pid=959049)[0m [rank0]:[E1206 13:01:11.438828600 ProcessGroupNCCL.cpp:1870] "
            "[PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from this local "
            "rank and we will try our best to dump the debug info. Last enqueued NCCL work: 19964, last completed NCCL "
            "work: 19961.")
    event = one(line, Kind.DUMP_SIGNAL)
    assert (event.origin.rank, event.origin.pid, event.data["last_enqueued"]) == (0, 959049, 19964)
    # without a bare reset on the line, text in brackets that ends in m stays (a timeout of [10m])
    assert clean("eval timeout=[10m] exceeded") == "eval timeout=[10m] exceeded"


def test_a_ray_workers_pid_ties_its_unranked_lines_to_its_rank(tmp_path: Path) -> None:
    # real: NovaSky-AI/SkyRL#757 (the watchdog's C++ frames under Ray's prefix, after the rank's own line)
    head = ("(FSDPPolicyWorkerBase pid=959049) [rank0]:[E1206 13:01:11.438828600 ProcessGroupNCCL.cpp:1870] [PG ID 0 "
            "PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from this local rank and "
            "we will try our best to dump the debug info. Last enqueued NCCL work: 19964, last completed NCCL work: "
            "19961.\n")
    frame = ("(FSDPPolicyWorkerBase pid=959049) frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional"
             "<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x247 (0x7ce2e4640147 in /x/libtorch_cuda.so)\n")
    diagnosis = diagnose(tmp_path, head + frame)
    assert diagnosis.ranks == (0,)
    assert diagnosis.hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT and "rank 0" in diagnosis.hypotheses[0].title
    # (the dump signal says rank 0's own collective timed out: the frames' timeout is that one, read once)
    timeouts = [e for e in timeline_of(tmp_path, head + frame).events if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert [(e.origin.rank, e.data.get("dump_signal")) for e in timeouts] == [(0, True)], timeouts
    # the frames under a line of rank 0 that is no timeout of its own (a dump another rank asked for) are its timeout
    asked = head.replace("from this local rank", "from  rank 2")
    tied = [e for e in timeline_of(tmp_path, asked + frame).events if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert [e.origin.rank for e in tied] == [0], tied
    # a pid that two ranks' lines carry (two hosts, no host in the prefix) ties nothing
    other = head.replace("[rank0]", "[rank3]").replace("Rank 0]", "Rank 3]")
    timeline = read(head + other + frame)
    assert [e.origin.rank for e in timeline if e.kind is Kind.WATCHDOG_TIMEOUT and e.data.get("frames")] == [None]


def test_the_watchdogs_message_pasted_from_its_work_on(tmp_path: Path) -> None:
    # real: yiqiao-yin/deepspeed-course#17 (both ranks on cuda:0 before set_device; two lines of the message kept)
    paste = ("WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)\n"
             "  ran for 721595 milliseconds before timing out\n")
    timeouts = [e for e in read(paste) if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert [(e.seq, e.op, e.data.get("ran_ms")) for e in timeouts] == [(1, "allreduce", 721595)]
    assert diagnose(tmp_path, paste).hypotheses  # no longer silent
    # the same text under its whole watchdog line is one timeout, not two
    whole = ("[Rank 1] Watchdog caught collective operation timeout:\n" + paste)
    timeline = timeline_of(tmp_path, whole)
    read_whole = [e for e in timeline.events if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert read_whole and not [e for e in read_whole if e.data.get("headless")]
    assert {(e.origin.rank, e.seq) for e in read_whole if e.seq is not None} == {(1, 1)}
    # a work's description that did not time out (a log of enqueued work) is none
    assert not [e for e in events_of("WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
                                     "enqueued") if e.kind is Kind.WATCHDOG_TIMEOUT]


def test_a_work_cut_by_the_paste_keeps_its_whole_fields() -> None:
    # real: NVIDIA/NeMo#8441 (the last line of the paste ends inside the Timeout field)
    line = ("[E ProcessGroupNCCL.cpp:458] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=64088, "
            "OpType=ALLREDUCE, Timeout(ms)=1800")
    event = one(line, Kind.WATCHDOG_TIMEOUT)
    assert (event.origin.rank, event.seq, event.op) == (7, 64088, "allreduce")
    assert "timeout_ms" not in event.data  # 1800 is what the cut left of 1800000, no timeout of its own
    # a field list that the line closes is read as before
    whole = one(line + "000) ran for 1800085 milliseconds before timing out.", Kind.WATCHDOG_TIMEOUT)
    assert whole.data["timeout_ms"] == 1800000 and whole.data["ran_ms"] == 1800085


def test_a_bar_without_a_prefix_is_drawn_by_the_waiting_rank_0(tmp_path: Path) -> None:
    # real: NVIDIA/NeMo#8441 and pytorch/pytorch#118369 (the training loop's bar on the line of rank 0's timeout)
    paste = ("Epoch 0:   6%|██    | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6][E ProcessGroupNCCL.cpp:458] "
             "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, "
             "Timeout(ms)=1800000) ran for 25624887 milliseconds before timing out.\n")
    hypotheses = diagnose(tmp_path, paste).hypotheses
    assert hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT, hypotheses
    # the same bar under another rank's prefix, rank 0 not waiting: that rank worked alone
    other = ("[rank0]: Map (num_proc=8):  40%|████  | 400000/1000000 [29:30<44:15, 226.0 examples/s]\n"
             "[rank1]:[E ProcessGroupNCCL.cpp:458] [Rank 1] Watchdog caught collective operation timeout: "
             "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800085 milliseconds before timing out.\n")
    top = diagnose(tmp_path, other).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,)


def test_a_native_programs_glog_error_line_is_never_silence(tmp_path: Path) -> None:
    # real: GoogleCloudPlatform/container-engine-accelerators#580 (TCPXO daemon without hostNetwork; the line cut)
    line = "E0312 fastrak_gpumem_manager.cc:200] Number of GPUs detected in the"
    assert one(line, Kind.ERROR_LINE).data["word"] == "glog ERROR"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "fastrak_gpumem_manager" in top.title
    whole = "F0605 09:26:44.248647    1054 pjrt_client.cc:2839] Check failed: device count 7 != 8"
    assert one(whole, Kind.ERROR_LINE).data["message"].endswith("!= 8")
    # an informational line, and a traceback's line under torch elastic's E prefix, are no errors of their own
    assert not events_of("I0312 10:11:12.123456    1054 fastrak_gpumem_manager.cc:88] 8 GPUs found")
    assert not events_of("E0724 19:33:34.565000 128818126430656 torch/distributed/elastic/multiprocessing/api.py:702]"
                         "     self._pc.join(-1)")


def _watchdog(rank: int) -> str:
    return (f"[rank{rank}]:[E ProcessGroupNCCL.cpp:563] [Rank {rank}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=10800000) ran for 10800004 "
            "milliseconds before timing out.\n")


_ROOT_CAUSE_0 = """Root Cause (first observed failure):
[0]:
  time      : 2024-08-20_11:13:10
  host      : testhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 66544)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_an_exit_code_alone_is_a_lead_and_a_cut_traceback_is_no_quiet_rank(tmp_path: Path) -> None:
    # real: ultralytics/ultralytics#15683 (every printed rank timed out in the first broadcast after 3 h; rank 4's
    # traceback cut by the paste; torchrun's table names rank 0, exit code 1, its own output not shown)
    paste = ("".join(_watchdog(r) for r in (7, 6, 5, 1, 3)) + "[rank4]: Traceback (most recent call last):\n"
             '[rank4]:   File "/home/user/.config/Ultralytics/DDP/_tem\n' + _ROOT_CAUSE_0)
    hypotheses = diagnose(tmp_path, paste).hypotheses
    top = hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (0,) and top.confidence <= 0.55
    assert not [h for h in hypotheses if h.category is Category.LAGGING_RANK and 4 in h.culprit_ranks], hypotheses
    # a rank that wrote no line at all beside them is still the quiet one; and the exit of a rank whose own
    # traceback is in the paste is a crash at full confidence
    quiet = "".join(_watchdog(r) for r in (7, 6, 5, 1, 3)) + "[rank4]: epoch 0 done\n[rank0]: epoch 0 done\n"
    lagging = [h for h in diagnose(tmp_path, quiet).hypotheses if h.category is Category.LAGGING_RANK]
    assert lagging and set(lagging[0].culprit_ranks) <= {0, 2, 4} and "(gloo)" not in lagging[0].what
    crashed = "".join(_watchdog(r) for r in (7, 6)) + "[rank0]: ValueError: bad label 4001 for nc=4000\n"
    top = diagnose(tmp_path, crashed).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.confidence >= 0.8


def test_where_a_rank_waited_is_one_place_whether_read_from_its_exception_or_its_timeout(tmp_path: Path) -> None:
    # real: ultralytics/ultralytics#15683 (rank 7's DistBackendError from broadcast's wait(), the others' lines)
    from syncdoctor.analyze.chains import where_waited

    traceback = ('[rank7]: Traceback (most recent call last):\n'
                 '[rank7]:   File "/x/torch/distributed/distributed_c10d.py", line 2144, in broadcast\n'
                 "[rank7]:     work.wait()\n"
                 "[rank7]: torch.distributed.DistBackendError: " + _watchdog(7).split("] ", 2)[2])
    timeline = timeline_of(tmp_path, _watchdog(6) + _watchdog(7) + traceback)
    assert where_waited(timeline, 6) == where_waited(timeline, 7) == "broadcast #1"


def test_a_pci_tree_nccl_cannot_follow(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#442 (nccl-tests under WSL, NCCL 2.8.3), and horovod/horovod#3871 (WSL2, Docker, NCCL 2.9.9)
    paste = ("DESKTOP: Test NCCL failure common.cu:777 'unhandled system error'\n"
             "DESKTOP:36629:36635 [0] graph/xml.cc:332 NCCL WARN Could not find real path of "
             "/sys/class/pci_bus/0000:21/../../0000:21:00.0\n"
             "DESKTOP:36629:36635 [0] NCCL INFO graph/xml.cc:469 -> 2\n"
             "DESKTOP:36629:36635 [0] NCCL INFO graph/topo.cc:522 -> 2\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.confidence >= 0.6
    assert "PCI tree" in top.title and top.culprit_hosts == ("DESKTOP",) and "WSL2" in top.what
    # NCCL's INFO line of that wording about a network interface is harmless: no such reading
    net = "e53b7da88fea:2493:2753 [0] NCCL INFO Could not find real path of /sys/class/net/eth0/device\n"
    assert not [h for h in diagnose(tmp_path, net).hypotheses if "PCI tree" in h.title]
    # a topology file given by hand is what failed there: that reading comes first
    given = "DESKTOP:36629:36629 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /etc/nccl/topo.xml\n" + paste
    top = diagnose(tmp_path, given).hypotheses[0]
    assert "NCCL_TOPO_FILE" in top.title and not [h for h in diagnose(tmp_path, given).hypotheses
                                                  if "PCI tree" in h.title]
