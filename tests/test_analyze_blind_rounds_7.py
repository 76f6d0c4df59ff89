"""Readings added after the twenty-third blind harvest (the r26* cases of the real corpus), one behaviour per test,
each with the look-alike it must not catch: Caffe2's store waits, a desync report in which every rank joined, a
rank's own dump signal, torchrun's agent waiting out the rendezvous store, DDP's unused parameters, loopback on a
single host, an IB retry error in TensorPipe's words, the one worker a launcher reports failed after an OOM, the
kernel's syslog lines and the GPU they name, a duplicate GPU quoted without NCCL's prefix. Lines are written as
the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_caffe2s_store_wait_names_the_rank_whose_key_never_came(tmp_path: Path) -> None:
    # real: caffe2/caffe2#1050 (mpirun without shard ids: rank 1's key never written)
    line = ("E0808 15:10:11.940057  8517 common_world_ops.h:90] Caught store handler timeout exception: [/home/u/caffe2/"
            "caffe2/distributed/file_store_handler.cc:132] Wait timeout for name(s): allreduce_0_cw_op/1")
    event = one(line, Kind.STORE_ERROR)
    assert event.data["what"] == "wait" and event.data["missing_ranks"] == [1] and event.data["ms"] is None
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_NEVER_JOINED and top.culprit_ranks == (1,)
    assert "the other ranks waited for it" in top.title
    # a key without a rank at its end names nobody
    assert one(line.replace("allreduce_0_cw_op/1", "init_done"), Kind.STORE_ERROR).data["missing_ranks"] == []


_ALL_JOINED = """[rank6]:[E1115 16:42:37.766242859 ProcessGroupNCCL.cpp:629] [Rank 6] Watchdog caught collective operation \
timeout: WorkNCCL(SeqNum=730, OpType=ALLREDUCE, NumelIn=544997376, NumelOut=544997376, Timeout(ms)=600000) ran for \
600027 milliseconds before timing out.
[rank6]:[E1115 16:42:37.768057301 ProcessGroupNCCL.cpp:1936] Rank 6
\t - [6] Timeout at collective: ALLREDUCE, #730
\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:
\t   - [0, 1, 2, 3, 4, 5, 6, 7] joined but didn't finish collective #730 (count from 1)
\t - Snapshot of ranks' latest states:
\t   #730 started ranks:
\t     [0, 1, 2, 3, 4, 5, 6, 7] started ALLREDUCE
[rank6]:[E1115 16:42:37.768084521 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 6]  failure detected by watchdog \
at work sequence id: 730 PG status: last enqueued work: 730, last completed work: 729
[rank5]:[E1115 16:42:37.909000893 ProcessGroupNCCL.cpp:1753] [PG ID 0 PG GUID 0 Rank 5] Received a dump signal due to \
a collective timeout from this local rank and we will try our best to dump the debug info. Last enqueued NCCL work: 2, \
last completed NCCL work: 2.This is most likely caused by incorrect usages of collectives
"""


def test_a_desync_report_in_which_every_rank_joined_is_the_collective_stalled(tmp_path: Path) -> None:
    # real: hiyouga/LLaMA-Factory#9496 (16 ranks, PG 1's #730; rank 5's dump signal is of PG 0)
    hypotheses = diagnose(tmp_path, _ALL_JOINED).hypotheses
    top = hypotheses[0]
    assert top.category is Category.COLLECTIVE_STALLED and "all 8 ranks (0-7) entered it" in top.title
    # rank 5's own dump signal says its collective timed out: it waits, it is never the late one
    assert all(h.category is not Category.LAGGING_RANK or 5 not in h.culprit_ranks for h in hypotheses)
    # a report naming a rank that never joined is that rank
    lagging = _ALL_JOINED.replace("\t   - [0, 1, 2, 3, 4, 5, 6, 7] joined but didn't finish collective #730 (count from 1)",
                                  "\t   - [3] finished collective #729, but didn't join collective #730 (count from 1)\n"
                                  "\t   - [0, 1, 2, 4, 5, 6, 7] joined but didn't finish collective #730 (count from 1)")
    assert Category.COLLECTIVE_STALLED not in {h.category for h in diagnose(tmp_path, lagging).hypotheses}


_AGENT = """[W228 18:45:15.741177013 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=11, addr=[node1]:38674, \
remote=[::ffff:33.148.62.162]:23456) timed out after 900000ms
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 919, in main
    run(args)
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 910, in run
"""


def test_torchruns_agent_waiting_out_the_store_is_the_rendezvous(tmp_path: Path) -> None:
    # real: modelscope/ms-swift#3343 (two nodes; the agent's store wait ran its 900 s)
    top = diagnose(tmp_path, _AGENT).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT
    # a worker's short store wait (its own 5 s op) with a rank is not the agents' rendezvous
    worker = "[rank1]:" + _AGENT.splitlines()[0].replace("900000ms", "5000ms") + "\n"
    assert all(h.category is not Category.RENDEZVOUS_TIMEOUT for h in diagnose(tmp_path, worker).hypotheses)


def test_ddps_unused_parameters_are_the_ranks_own_error(tmp_path: Path) -> None:
    # real: ultralytics/ultralytics#24612 (rank 2 named only by the reducer's line)
    paste = ("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one.\n"
             "Parameter indices which did not receive grad for rank 2: 426 427 428 429\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (2,)
    assert "find_unused_parameters" in top.title and "find_unused_parameters=True" in (top.fix or "")
    # TORCH_DISTRIBUTED_DEBUG's names form, two ranks
    named = paste.replace("Parameter indices", "Parameters").replace(": 426 427 428 429", ": model.head.bias") + \
        "Parameters which did not receive grad for rank 0: model.head.bias\n"
    assert diagnose(tmp_path, named).hypotheses[0].culprit_ranks == (0, 2)
    plain = diagnose(tmp_path, "RuntimeError: Expected all tensors to be on the same device\n").hypotheses
    assert all("reducer" not in h.title for h in plain)


_ONE_HOST_LO = """[1,0]<stdout>:box:687:748 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>
[1,1]<stdout>:box:688:745 [1] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>
[1,0]<stdout>:box:687:748 [0] graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:03/../../0000:03:00.0
"""


def test_loopback_on_a_single_host_where_nothing_failed_to_connect_is_no_cause(tmp_path: Path) -> None:
    # real: horovod/horovod#3871 (WSL2 in Docker: NCCL's topology could not read sysfs)
    hypotheses = diagnose(tmp_path, _ONE_HOST_LO).hypotheses
    assert Category.LOOPBACK_ADDRESS not in {h.category for h in hypotheses}
    assert hypotheses[0].category is Category.UNRECOGNISED and "PCI tree" in hypotheses[0].title  # (round 30)
    # the same bootstrap line with a connection that timed out, or a second host, still is
    timed = _ONE_HOST_LO + ("[1,1]<stdout>:box:688:745 [1] NCCL INFO Call to connect returned Connection timed out, "
                            "retrying\n[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator "
                            "and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') "
                            "got error: Socket Timeout\n")
    assert diagnose(tmp_path, timed).hypotheses[0].category is not Category.UNRECOGNISED
    two = _ONE_HOST_LO + "[1,2]<stdout>:box2:700:701 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
    assert Category.LOOPBACK_ADDRESS in {h.category for h in diagnose(tmp_path, two).hypotheses}


def test_an_ib_retry_error_in_tensorpipes_words(tmp_path: Path) -> None:
    # real: pytorch/pytorch#104568 (init_rpc over TensorPipe's ibv transport)
    line = ("[W tensorpipe_agent.cpp:940] RPC agent for worker1 encountered error when reading incoming response from "
            "worker0: transport retry counter exceeded (this error originated at tensorpipe/transport/ibv/"
            "connection_impl.cc:478)\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.IB_UNREACHABLE_AT_INIT and "retries exceeded" in top.title
    # after a communicator formed, the same words are a link that failed late
    formed = ("node1:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n" + line)
    assert diagnose(tmp_path, formed).hypotheses[0].category is Category.IB_LINK_FAILURE


def test_an_oom_without_a_rank_is_the_process_on_the_gpu_it_names(tmp_path: Path) -> None:
    # real: hiyouga/LLaMA-Factory#1722 (DeepSpeed's launcher on one node, the OOM on GPU 1)
    paste = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.45 GiB (GPU 1; 23.68 GiB total "
             "capacity; 18.98 GiB already allocated)\n"
             "[2023-12-04 09:47:01,699] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1357\n"
             "[2023-12-04 09:47:01,915] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
             "'--local_rank=3', '--deepspeed', 'ds.json'] exits with return code = 1\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    # cuda:1 of several visible GPUs: local rank 1; DeepSpeed's line names its last command (local rank 3), not it
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_local_ranks == (1,)
    assert top.title.startswith("local rank 1 ran out of GPU memory")
    # GPU 0 may be any process that sees one GPU: not named
    assert diagnose(tmp_path, paste.replace("GPU 1;", "GPU 0;")).hypotheses[0].culprit_local_ranks == ()
    # torchrun's record names the failed worker's local rank
    table = paste.replace("GPU 1;", "GPU 0;").splitlines()[0] + (
        "\nERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 2 (pid: 4242) of "
        "binary: /usr/bin/python\n")
    assert diagnose(tmp_path, table).hypotheses[0].culprit_local_ranks == (2,)


def test_deepspeeds_report_names_its_last_command_not_the_failed_worker() -> None:
    # deepspeed/launcher/launch.py's sigkill_handler prints `cmd`, its launch loop's last value
    report = ("[ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', '--local_rank=7'] exits "
              "with return code = -9")
    event = one(report, Kind.WORKER_FAILED)
    assert event.origin.local_rank is None and event.data["last_local_rank"] == 7 and event.data["signal"] == "SIGKILL"
    # a launcher that started one worker: that one failed
    assert one(report.replace("--local_rank=7", "--local_rank=0"), Kind.WORKER_FAILED).origin.local_rank == 0


def test_the_kernels_syslog_lines_name_their_host_and_the_gpu_they_report(tmp_path: Path) -> None:
    # real: pytorch/pytorch#43685 (nvidia-smi's GPU lost; the kernel's lines of that GPU from ailcm-ai1)
    syslog = "Aug 26 15:28:16 ailcm-ai1 kernel: [87474.832707] NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus."
    assert one(syslog, Kind.GPU_ERROR).origin.host == "ailcm-ai1"
    paste = ("Unable to determine the device handle for GPU 0000:17:00.0: GPU is lost.  Reboot the system to recover\n"
             "Aug 26 15:28:16 ailcm-ai1 kernel: [87474.832707] NVRM: GPU at PCI:0000:17:00: GPU-f114b259-1fd6\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_hosts == ("ailcm-ai1",)
    # another GPU's report names no host for this one
    other = paste.replace("PCI:0000:17:00:", "PCI:0000:3b:00:")
    assert diagnose(tmp_path, other).hypotheses[0].culprit_hosts == ()
    # a line that only looks like syslog (no program) keeps its text
    assert one("Aug 26 15:28:16 plain words NVRM: Xid (PCI:0000:17:00): 79, x", Kind.GPU_ERROR).origin.host is None


def test_a_duplicate_gpu_quoted_without_its_prefix_is_on_the_only_host_named(tmp_path: Path) -> None:
    # real: lucidrains/denoising-diffusion-pytorch#345 (accelerate, two processes, one visible GPU)
    paste = ("atl1-1-03-012-28-0:191739:191739 [0] NCCL INFO Bootstrap : Using ib0:172.27.70.156<0>\n"
             "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device a000\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.DUPLICATE_GPU and top.culprit_hosts == ("atl1-1-03-012-28-0",)
    two = paste + "atl1-2:5:5 [0] NCCL INFO Bootstrap : Using ib0:172.27.70.157<0>\n"
    assert diagnose(tmp_path, two).hypotheses[0].culprit_hosts == ()


def test_losing_the_store_while_fetching_the_communicators_id_names_its_root(tmp_path: Path) -> None:
    # real: hiyouga/LLaMA-Factory#2470 (pdsh; rank 0's own error not pasted)
    line = ("gpu004: RuntimeError: [14] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
            "key-value store by key '0', but store->get('0') got error: Connection reset by peer. This may indicate a "
            "possible application crash on rank 0 or a network set up issue.\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (0,)
    assert top.title.startswith("rank 0 most likely died") and top.confidence < 0.5
    # a timeout of that wait is rank 0 late, not gone
    late = line.replace("Connection reset by peer. This may indicate a possible application crash on rank 0 or a "
                        "network set up issue.", "Socket Timeout")
    assert all("most likely died" not in h.title for h in diagnose(tmp_path, late).hypotheses)
