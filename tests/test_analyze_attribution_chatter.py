"""Who failed, from lines the rules do not read: a paste's NCCL chatter (which host a pid runs on), Open MPI's own
``[host:pid]`` prefix, the rank Open MPI's UCX layer could not reach. One behaviour per test, each with the look-alike
it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import top_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.parsers.prefixes import split_prefix

# real: pytorch/pytorch#135486 (r12ad): the one NCCL line of the process is chatter no rule reads
_SEGV = """\
0: g1002:2128869:2128880 [0] NCCL INFO Setting affinity for GPU 0 to ffff0000,00000000,ffff0000,00000000
0: Fatal Python error: Segmentation fault
0:
0: Thread 0x000014844b65d740 (most recent call first):
0:   File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3938 in barrier
0:   File "/work/test/1.basic.py", line 11 in Main
0:
0: E0909 14:03:50.013000 22579342468928 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -11) \
local_rank: 0 (pid: 2128869) of binary: /venv/bin/python
"""


def test_a_worker_reported_by_pid_is_placed_by_its_nccl_chatter(tmp_path: Path) -> None:
    """torchrun names the dead worker by pid; the paste's only line with that pid and a host is NCCL chatter that no
    anchor selects (``Setting affinity``): read in a small input, it places the worker on g1002."""
    top = top_of(tmp_path, _SEGV)
    assert top.category is Category.RANK_CRASHED
    assert top.culprit_hosts == ("g1002",), top
    assert "g1002" in top.title
    # another process's chatter places nothing: the pid differs
    other = _SEGV.replace("g1002:2128869:2128880", "g1003:31337:31340")
    top = top_of(tmp_path, other)
    assert top.culprit_hosts == () and "unknown host" in top.title, top


# real: awslabs/awsome-distributed-ai#540 (r52d): srun's task 3 printed NCCL chatter, task 0 ran rank 6
_TASKS = """\
> 3: ip-10-1-100-254:18990:18990 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/IPC

> 0: [rank6]:[E120 06:04:54.543461202 ProcessGroupNCCL.cpp:607] [Rank 6] Watchdog caught collective operation \
timeout: WorkNCCL(SeqNum=472, OpType=ALLREDUCE, NumelIn=1164221, NumelOut=1164221, Timeout(ms)=600000) ran for \
600049 milliseconds before timing out.
"""


def test_a_process_seen_in_chatter_is_no_rank_present(tmp_path: Path) -> None:
    """The chatter's process is placed by host and pid only: srun's ``3:`` is a task, not rank 3, and a rank that
    only printed chatter is not one that "never reached" the collective rank 6 timed out in."""
    top = top_of(tmp_path, _TASKS)
    assert 3 not in top.culprit_ranks, top
    assert "rank 3 never" not in top.title


def test_open_mpi_prefix_names_host_and_pid() -> None:
    prefix = split_prefix("[histamine0:1224050] *** An error occurred in MPI_Bcast")
    assert (prefix.origin.host, prefix.origin.pid) == ("histamine0", 1224050)
    assert prefix.body == "*** An error occurred in MPI_Bcast"
    prefix = split_prefix("[h06c0901:07661] Signal: Segmentation fault (11)")
    assert (prefix.origin.host, prefix.origin.pid) == ("h06c0901", 7661)
    # look-alikes: a rank or a step counter in brackets, a short number (Open MPI prints five digits at least)
    for text in ("[rank:12345] loss 0.1", "[Epoch:00012] done", "[node1:123] hello"):
        prefix = split_prefix(text)
        assert prefix.origin.host is None and prefix.origin.pid is None, text


def test_open_mpi_signal_lines_keep_their_process(tmp_path: Path) -> None:
    """Open MPI's signal report, its prefix now read as the line's: still a crash of that pid on that host."""
    top = top_of(tmp_path, "[h06c0901:07661] *** Process received signal ***\n"
                         "[h06c0901:07661] Signal: Segmentation fault (11)\n"
                         "[h06c0901:07661] Signal code: Address not mapped (1)\n")
    assert top.category is Category.RANK_CRASHED
    assert top.culprit_hosts == ("h06c0901",) and "SIGSEGV" in top.title, top


# real: openucx/ucx#9383 (r39c)
_UCX = """\
[1695332443.361791] [histamine0:1224050:0]            sock.c:323  UCX  ERROR   connect(fd=42, dest_addr=172.17.0.1:54351) \
failed: Connection refused
[histamine0:1224050] pml_ucx.c:424  Error: ucp_ep_create(proc=1) failed: Destination is unreachable
[histamine0:1224050] pml_ucx.c:477  Error: Failed to resolve UCX endpoint for rank 1
[histamine0:1224050] *** An error occurred in MPI_Bcast
"""


def test_the_rank_ucx_could_not_reach_advertised_the_bridge(tmp_path: Path) -> None:
    """Refused at Docker's bridge address: the peer that gave it is the rank Open MPI's UCX layer says it could not
    reach, where no second host is in the inputs to name."""
    top = top_of(tmp_path, _UCX)
    assert top.category is Category.LOOPBACK_ADDRESS
    assert top.culprit_ranks == (1,) and "rank 1" in top.title, top
    # the refusal alone names no peer
    top = top_of(tmp_path, _UCX.split("\n", 1)[0] + "\n")
    assert top.category is Category.LOOPBACK_ADDRESS and top.culprit_ranks == (), top


# real: NVIDIA/nccl#660 (r2b): mpirun's own ``[vm2.com:15359]`` lines
_ELIMINATION = """\
vm2:15364:15376 [0] transport/net_ib.cc:1192 NCCL WARN NET/IB : Got completion from peer 192.168.0.12<60054> with \
error 4, opcode 32704, len 0, vendor err 81
vm1:58934:58946 [0] transport/net_ib.cc:1192 NCCL WARN NET/IB : Got completion from peer 192.168.0.19<54698> with \
error 4, opcode 32533, len 32535, vendor err 81
[vm2.com:15359] 1 more process has sent help message help-mpi-btl-openib.txt / error in device init
vm1:58934:58934 [0] NCCL INFO comm 0x7f1600000d00 rank 1 nranks 2 cudaDev 0 busId 84000 - Abort COMPLETE
"""


def test_the_last_rank_is_left_to_nccls_last_process_not_to_mpirun(tmp_path: Path) -> None:
    """Rank 1 is vm1's process; NCCL's other process (vm2, pid 15364) holds rank 0, although mpirun's own lines
    show one process more on vm2."""
    analysis = analyze_paths([str(_write(tmp_path, _ELIMINATION))])
    assert analysis.timeline.rank_host(0) == "vm2"
    assert analysis.timeline.rank_host(1) == "vm1"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "log.txt"
    path.write_text(text)
    return path


# real: huggingface/transformers#28119 (r34b): two ranks' timeouts, a third rank's communicator aborted
_ABORTED = """\
[E ProcessGroupNCCL.cpp:475] [Rank 13] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=21668, \
OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800522 milliseconds before timing out.
a6000_node2:65508:447 [6] NCCL INFO comm 0xc320220 rank 14 nranks 16 cudaDev 6 busId c1000 - Abort COMPLETE
[E ProcessGroupNCCL.cpp:916] [Rank 14] NCCL watchdog thread terminated with exception: [Rank 14] Watchdog caught \
collective operation timeout: WorkNCCL(SeqNum=21668, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) \
ran for 1800519 milliseconds before timing out.
a6000_node2:65505:452 [3] NCCL INFO comm 0xc021ee0 rank 11 nranks 16 cudaDev 3 busId 61000 - Abort COMPLETE
"""


def test_a_rank_whose_communicator_aborted_is_placed_and_no_quiet_rank(tmp_path: Path) -> None:
    """``Abort COMPLETE`` names the process's rank in the communicator (rank 11 is pid 65505 on a6000_node2), and
    says that process aborted it, as PyTorch does after a timeout: not the rank that never arrived."""
    analysis = analyze_paths([str(_write(tmp_path, _ABORTED))])
    assert analysis.timeline.rank_host(11) == "a6000_node2"
    top = analysis.diagnosis.hypotheses[0]
    assert 11 not in top.culprit_ranks and "rank 11 never" not in top.title, top
    # the same line without the abort (a communicator's start) leaves rank 11 a rank that did not time out: named as
    # the quiet one, low (13 of the 16 ranks are not in the inputs, so the unexplained timeout comes first)
    started = _ABORTED.replace("busId 61000 - Abort COMPLETE", "busId 61000 commId 0x5 - Init START")
    hypotheses = analyze_paths([str(_write(tmp_path, started))]).diagnosis.hypotheses
    quiet = [h for h in hypotheses if h.culprit_ranks == (11,)]
    assert quiet and quiet[0].confidence <= 0.25, hypotheses


# the shape of tloen/alpaca-lora#338 (r12ad): the agent's line cut after the local rank, markdown's bold around it,
# before the failure table of a second node's agent (ranks 4 and 5)
_CUT_AGENT = """\
**ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0**
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
train.py FAILED
Failures:
[1]:
  time      : 2024-02-01_10:00:01
  host      : gpu-node-7
  rank      : 5 (local_rank: 1)
  exitcode  : -7 (pid: 41002)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 41002
Root Cause (first observed failure):
[0]:
  time      : 2024-02-01_10:00:00
  host      : gpu-node-7
  rank      : 4 (local_rank: 0)
  exitcode  : -7 (pid: 41001)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 41001
"""


def test_an_agent_line_cut_before_the_pid_is_its_records_worker(tmp_path: Path) -> None:
    """``failed (exitcode: -7) local_rank: 0`` without ``(pid: …)`` is still torchrun's report of a worker; the
    table's record with that local rank and exit code is the same worker (rank 4), not a second failure."""
    analysis = analyze_paths([str(_write(tmp_path, _CUT_AGENT))])
    agent = [e for e in analysis.timeline.events if e.ref.line == 1]
    assert agent and agent[0].origin.rank == 4 and agent[0].data["signal"] == "SIGBUS", agent
    hypotheses = analysis.diagnosis.hypotheses
    assert hypotheses[0].category is Category.SHM_EXHAUSTED and hypotheses[0].culprit_ranks == (4, 5)
    assert not any(h.culprit_local_ranks for h in hypotheses), hypotheses  # no "local rank 0 died" beside it
    # a record with another exit code is another worker: the cut line stays a local rank's
    other = _CUT_AGENT.replace("-7 (pid: 41001)", "1 (pid: 41001)")
    agent = [e for e in analyze_paths([str(_write(tmp_path, other))]).timeline.events if e.ref.line == 1]
    assert agent and agent[0].origin.rank is None and agent[0].origin.local_rank == 0, agent


def test_a_cited_record_explains_its_table_and_quotes_how_the_worker_failed(tmp_path: Path) -> None:
    analysis = analyze_paths([str(_write(tmp_path, _CUT_AGENT))])
    assert analysis.diagnosis.unexplained == (), analysis.diagnosis.unexplained  # the table's header lines
    quoted = [e.text for e in analysis.diagnosis.hypotheses[0].evidence]
    assert any("exitcode: -7 (pid: 41002)" in text and "SIGBUS" in text for text in quoted), quoted


# real: Project-MONAI/model-zoo#146 (r141a): torchrun --standalone on a node whose host name is digits alone
_NUMERIC = """\
[W socket.cpp:601] [c10d] The client socket has failed to connect to [::ffff:0.52.253.213]:59667 (errno: 110 - \
Connection timed out).
[W socket.cpp:601] [c10d] The client socket has failed to connect to 0.52.253.213:59667 (errno: 110 - Connection \
timed out).
[E socket.cpp:657] [c10d] The client socket has failed to connect to any network address of (3472853, 59667).
"""


def test_a_store_host_named_by_digits_is_read_as_an_address_no_host_has(tmp_path: Path) -> None:
    top = top_of(tmp_path, _NUMERIC)
    assert top.category is Category.PEER_UNREACHABLE
    assert "host name 3472853 is a number" in top.title and "0.52.253.213" in top.title, top.title
    assert "--rdzv-endpoint" in (top.fix or "") and top.culprit_hosts == (), top
    # a host name with a letter, at the same address: the plain reading, its host a suspect
    top = top_of(tmp_path, _NUMERIC.replace("(3472853, 59667)", "(node3472853, 59667)"))
    assert "is a number" not in top.title and top.category is Category.PEER_UNREACHABLE, top.title


# real: determined-ai/determined#3275 (r137f): Horovod's gloo runner in Determined's trial log, the exit code printed
# before the process name, then the platform's teardown of the other container
_DETERMINED = """\
<>        [2021-12-07 10:43:01] 087c0ee7 || RuntimeError: Horovod detected that one or more processes exited with \
non-zero status, thus causing the job to be terminated. The first process to do so was:
<>        [2021-12-07 10:43:01] 087c0ee7 || Exit code: 1
<>        [2021-12-07 10:43:01] 087c0ee7 || Process name: 1
<info>    [2021-12-07 10:43:05] 087c0ee7 || INFO: container failed with non-zero exit code:  (exit code 1)
<info>    [2021-12-07 10:43:22] ef45fdce || INFO: container failed with non-zero exit code:  (exit code 137)
"""


def test_determined_prefix_names_the_container_and_its_clock() -> None:
    prefix = split_prefix("<info>    [2021-12-07 10:43:05] 087c0ee7 || INFO: container failed")
    assert prefix.origin.host == "087c0ee7" and prefix.body == "INFO: container failed"
    assert prefix.time_text == "2021-12-07 10:43:05"
    assert split_prefix("<>        [2021-12-07 10:43:01] 087c0ee7 || Exit code: 1").body == "Exit code: 1"


def test_horovods_first_process_in_either_order_and_the_teardown_after_it(tmp_path: Path) -> None:
    """The process Horovod names first exited with 1 (its own error): the cause; the other container's 137 after it
    is the platform stopping the rest, not the host's OOM killer."""
    top = top_of(tmp_path, _DETERMINED)
    assert top.category is Category.RANK_CRASHED and "exit code 1" in top.title, top.title
    # the 137 alone is a kill from outside
    top = top_of(tmp_path, _DETERMINED.splitlines()[-1] + "\n")
    assert top.category is Category.RANK_KILLED, top
