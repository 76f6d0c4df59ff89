"""What real pasted logs look like, one behaviour per test: the categories added for them (A021-A028, each
with a positive and a look-alike negative), the prefixes and wrapped lines of pastes, attribution without
ranks, and the shapes of a timeout seen from part of the job. Lines are written as the tools print them
(the corpus in tests/fixtures/analyze/real holds the pastes themselves; test_analyze_real_corpus.py scores it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import events_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Diagnosis, Kind, Origin, Ref
from syncdoctor.analyze.parsers import make_line, parse_line
from syncdoctor.analyze.parsers.prefixes import split_prefix


def diagnose(tmp_path: Path, text: str, name: str = "paste.txt") -> Diagnosis:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.strip("\n") + "\n")
    return analyze_paths([str(path)]).diagnosis


def top(diagnosis: Diagnosis):
    assert diagnosis.hypotheses, "silent"
    return diagnosis.hypotheses[0]


def kinds(text: str) -> list[str]:
    return [e.kind.value for e in parse_line(make_line(text, Ref("x", 1), Origin()))]


# --- prefixes of pastes ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "host", "rank", "pid", "body"), [
    ("worker-1: [2023-07-20 15:45:13,980] [INFO] [launch.py:315:main] x", "worker-1", None, None, "[INFO]"),
    ("9.91.4.251: [W socket.cpp:601] [c10d] x", "9.91.4.251", None, None, "[c10d] x"),
    ("node01: VM-0-14-centos:106:196 [0] NCCL WARN x", "node01", None, None, "VM-0-14-centos"),
    ("[pod/train-worker-0/pytorch] [rank1]: RuntimeError: x", "train-worker-0", 1, None, "RuntimeError"),
    ("(RayWorkerWrapper pid=11305, ip=10.0.0.7) ERROR x", "10.0.0.7", None, 11305, "ERROR"),
    ("3: [rank3]: boom", None, 3, None, "boom"),
    # look-alikes that are not hosts
    ("RuntimeError: NCCL error", None, None, None, "RuntimeError"),
    ("torch.distributed.DistBackendError: x", None, None, None, "torch.distributed"),
    ("main.py: error: unrecognized arguments", None, None, None, "main.py"),
    ("Epoch-3: loss 0.1", None, None, None, "Epoch-3"),
])
def test_paste_prefixes(text, host, rank, pid, body) -> None:
    prefix = split_prefix(text)
    assert (prefix.origin.host, prefix.origin.rank, prefix.origin.pid) == (host, rank, pid)
    assert prefix.body.startswith(body)


def test_nccl_22_prefix_without_the_nccl_word_is_read(tmp_path) -> None:
    text = "e66aa18dc444:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : Address family not supported"
    assert kinds(text) == ["interface_missing"]
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.INTERFACE_MISSING and hypothesis.culprit_hosts == ("e66aa18dc444",)


# --- lines split by the paste ------------------------------------------------------------------------------------

def test_last_error_line_is_read_as_the_nccl_warning_it_repeats(tmp_path) -> None:
    text = """
[rank0]: torch.distributed.DistBackendError: NCCL error in: ../ProcessGroupNCCL.cpp:1691, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3
[rank0]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
[rank0]: Last error:
[rank0]: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 2000
"""
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.DUPLICATE_GPU and "0/1" in hypothesis.title


def test_last_error_without_a_known_message_is_nccls_warn(tmp_path) -> None:
    # the line after PyTorch's 'Last error:' is NCCL's last WARN message (ncclGetLastError), whatever it says: a
    # rule that reads NCCL's WARN lines reads it too (a GPU recording without NCCL_DEBUG: docs/gpu-checks.md)
    text = "RuntimeError: NCCL error in: x.cpp:1, internal error, NCCL version 2.21.5\nLast error:\nsomething new\n"
    analysis = analyze_paths([str(_write(tmp_path, text))])
    (echo,) = [e for e in analysis.timeline.events if e.data.get("last_error")]
    assert echo.kind is Kind.NCCL_WARN and echo.data["message"] == "something new"
    # a traceback's line after it is not NCCL's
    text = "RuntimeError: NCCL error in: x.cpp:1, internal error\nLast error:\nTraceback (most recent call last):\n"
    (tmp_path / "b").mkdir()
    analysis = analyze_paths([str(_write(tmp_path / "b", text))])
    assert not [e for e in analysis.timeline.events if e.data.get("last_error")]


def test_wrapped_watchdog_line_is_joined(tmp_path) -> None:
    text = """
[Rank 0] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000)
  ran for 1800090 milliseconds before timing out.
"""
    analysis = analyze_paths([str(_write(tmp_path, text))])
    (timeout,) = [e for e in analysis.timeline.events if e.kind is Kind.WATCHDOG_TIMEOUT and e.seq == 7]
    assert timeout.op == "allreduce" and timeout.origin.rank == 0 and timeout.data["ran_ms"] == 1800090


def test_masked_peer_address_names_nobody(tmp_path) -> None:
    text = ("torch.distributed.DistBackendError: NCCL error in: x.cpp:268, remote process exited or there was a "
            "network error, NCCL version 2.21.5\nLast error:\n"
            "socketProgressOpt: Call to recv from 172....<33759> failed : Connection reset by peer\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_CRASHED and hypothesis.confidence < 0.5
    assert hypothesis.culprit_hosts == () and "network" in hypothesis.title


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "paste.txt"
    path.write_text(text.strip("\n") + "\n")
    return path


# --- gloo's messages wrapped or edited by the paste (real: aws-samples/aws-do-eks#51, #69) -------------------------

def test_gloo_connect_full_mesh_wrapped_onto_the_next_lines(tmp_path) -> None:
    text = """RuntimeError: Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152]
  timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:<port>
  (rank=8, size=16, local=[127.0.0.1])
"""
    (event,) = [e for e in events_of(text) if e.kind is Kind.GLOO_CONNECT_FAILED]
    assert event.data["remote_addr"] == "127.0.0.1" and event.data["loopback_remote"]
    assert event.data["remote_port"] is None  # the user masked it
    assert top(diagnose(tmp_path, text)).category is Category.LOOPBACK_ADDRESS


def test_gloo_interface_with_ncclsyntax_on_its_own_line(tmp_path) -> None:
    text = """RuntimeError: [enforce fail at .../gloo/transport/tcp/device.cc:84]
  ifa != nullptr. Unable to find address for: ^lo
"""
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.INTERFACE_MISSING and "^lo" in hypothesis.title
    assert "(ranks" not in hypothesis.title and "not NCCL's ^ (exclude)" in (hypothesis.fix or "")


def test_gloo_no_error_is_an_interface_the_hosts_do_not_share(tmp_path) -> None:
    # real: vllm-project/vllm#5094 (two NICs on different subnets), sgl-project/sglang#3226
    text = ("ERROR 05-29 04:08:22 worker_base.py:145] RuntimeError: Gloo connectFullMesh failed with "
            "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.INTERFACE_MISMATCH and "GLOO_SOCKET_IFNAME" in (hypothesis.fix or "")
    assert Category.PEER_UNREACHABLE not in {h.category for h in diagnose(tmp_path, text).hypotheses}


# --- A019 and A001, from pastes without ranks ---------------------------------------------------------------------

def test_a019_a_rankless_watchdog_line_is_a_timeout_that_says_neither_who_waited_nor_for_whom(tmp_path) -> None:
    # one line copied from a thread, the word split by the forum (real: InternLM/xtuner#390): as the same line under
    # a rank's prefix, an unexplained timeout (most often a rank that never arrived, which the lines do not name)
    text = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST, Timeout(ms)=1800000) "
            "ran for 1808442 millis econds before timing out.")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.UNEXPLAINED_TIMEOUT and hypothesis.confidence == 0.3
    assert "broadcast (SeqNum 3)" in hypothesis.title and not hypothesis.culprit_ranks


def test_a001_negative_a_rankless_timeout_after_a_crash_is_the_crash(tmp_path) -> None:
    text = ("[rank1]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST, Timeout(ms)=1800000) "
            "ran for 1808442 milliseconds before timing out.\n")
    assert top(diagnose(tmp_path, text)).category is Category.RANK_OUT_OF_MEMORY


_ZERO_FIRST = """Traceback (most recent call last):
  File "tools/train.py", line 104, in main
    trainer = Trainer(args, cfg, device)
  File "/home/u/YOLOv6/yolov6/data/data_load.py", line 40, in create_dataloader
    with torch_distributed_zero_first(rank):
  File "/usr/lib/python3.8/contextlib.py", line 113, in __enter__
    return next(self.gen)
  File "/home/u/YOLOv6/yolov6/utils/torch_utils.py", line 25, in torch_distributed_zero_first
    dist.barrier(device_ids=[local_rank])
  File "/venv/lib/python3.8/site-packages/torch/distributed/distributed_c10d.py", line 2420, in barrier
    work = default_pg.barrier(opts=opts)
RuntimeError: Socket Timeout
"""


def test_a001_a_barrier_of_a_run_it_first_helper_names_rank_0(tmp_path) -> None:
    # real: meituan/YOLOv6#404, rank 0 checking every image of the dataset
    hypothesis = top(diagnose(tmp_path, _ZERO_FIRST))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == (0,)
    assert "torch_distributed_zero_first" in hypothesis.title


def test_a001_negative_a_plain_barrier_timeout_names_no_rank(tmp_path) -> None:
    text = _ZERO_FIRST.replace("torch_distributed_zero_first", "setup_loader").replace(
        "with setup_loader(rank):", "setup_loader(rank)")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.UNEXPLAINED_TIMEOUT and hypothesis.confidence == 0.3
    assert not hypothesis.culprit_ranks and "barrier" in hypothesis.title


# --- A021 gpu-error ----------------------------------------------------------------------------------------------

def test_a021_ecc_error_of_one_process(tmp_path) -> None:
    text = ("[rank5]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
            "[rank2]: RuntimeError: [../gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.5]:4000\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.GPU_ERROR and hypothesis.code == "A021"
    assert hypothesis.culprit_ranks == (5,) and hypothesis.affected_ranks == (2,)


def test_a021_unhandled_cuda_error_inside_nccl(tmp_path) -> None:
    text = ("(RayWorkerWrapper pid=11305) ERROR 08-27 05:12:18 worker_base.py:382] RuntimeError: NCCL error: "
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details)")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.GPU_ERROR and "pid 11305" in hypothesis.culprit_processes


def test_a021_cut_inside_the_quote(tmp_path) -> None:
    text = "gpu47:4962:5097 [1] transport/nvls.cc:223 NCCL WARN Cuda failure 999 'unknown error\n```"
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.GPU_ERROR and hypothesis.culprit_hosts == ("gpu47",)


# NCCL 2.4 on RoCE with the default GID (real: NVIDIA/nccl-tests#24): the NICs give up, then NCCL's teardown
# of the communicator fails with a CUDA error
_IB_THEN_TEARDOWN = """
gpu5:35917:35994 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129
gpu5:35917:35994 [0] NCCL INFO transport.cu:163 -> 2 [Proxy Thread]
gpu4:35902:35977 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129
gpu5:35917:35917 [0] NCCL INFO Destroyed comm 0x7f24c4001af0 rank 4
gpu5:35917:35917 [1] init.cu:194 NCCL WARN Cuda failure 'an illegal memory access was encountered'
gpu5: Test NCCL failure common.cu:343 'unhandled cuda error'
"""


def test_a021_after_the_same_process_ib_failure_is_its_consequence(tmp_path) -> None:
    hypotheses = diagnose(tmp_path, _IB_THEN_TEARDOWN).hypotheses
    assert hypotheses[0].category is Category.IB_UNREACHABLE_AT_INIT
    gpu = next(h for h in hypotheses if h.category is Category.GPU_ERROR)
    assert gpu.confidence < hypotheses[0].confidence and "consequence" in gpu.what


def test_a021_negative_an_ib_failure_of_another_process_does_not_excuse_it(tmp_path) -> None:
    text = _IB_THEN_TEARDOWN.replace("gpu5:35917:35994", "gpu5:35999:35994")  # the IB error in another pid
    assert top(diagnose(tmp_path, text)).category is Category.GPU_ERROR


def test_a021_negative_device_side_assert_is_the_program(tmp_path) -> None:
    text = "[rank1]: RuntimeError: CUDA error: device-side assert triggered\n"
    assert Category.GPU_ERROR not in {h.category for h in diagnose(tmp_path, text).hypotheses}


# --- A022 nccl-version-mismatch (and the net plugin) ------------------------------------------------------------

def test_a022_one_host_runs_another_nccl(tmp_path) -> None:
    for host, version in (("gpu1", "2.18.3"), ("gpu2", "2.18.3"), ("gpu3", "2.14.3")):
        (tmp_path / host).mkdir()
        (tmp_path / host / "out.log").write_text(
            f"{host}:10:10 [0] NCCL INFO NCCL version {version}+cuda12.1\n"
            f"{host}:10:20 [0] NCCL INFO comm 0x1 rank 0 nranks 3 cudaDev 0 busId 1000 - Init COMPLETE\n")
    hypothesis = top(analyze_paths([str(tmp_path)]).diagnosis)
    assert hypothesis.category is Category.NCCL_VERSION_MISMATCH and hypothesis.culprit_hosts == ("gpu3",)


def test_a022_net_plugin_on_part_of_the_cluster(tmp_path) -> None:
    text = """
HGX-11:18226:18274 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.
HGX-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so
HGX-05:58947:58954 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v8)
"""
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.NCCL_VERSION_MISMATCH and hypothesis.culprit_hosts == ("HGX-11",)


def test_a022_negative_every_host_the_same(tmp_path) -> None:
    text = """
a1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
a2:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
a1:1:1 [0] NCCL INFO NET/Plugin: Using internal network plugin.
a2:1:1 [0] NCCL INFO NET/Plugin: Using internal network plugin.
"""
    assert not diagnose(tmp_path, text).hypotheses


# --- A023 peer-unreachable ----------------------------------------------------------------------------------------

def test_a023_connect_aborted_on_a_docker_bridge(tmp_path) -> None:
    text = ("`e57377aacbb6:1203:1227 [0] misc/socket.cc:480 NCCL WARN socketStartConnect: Connect to "
            "172.17.0.2<38847> failed : Software caused connection abort`")
    hypothesis = top(diagnose(tmp_path, text))
    # the dialler, then the peer it could not reach
    assert hypothesis.category is Category.PEER_UNREACHABLE
    assert hypothesis.culprit_hosts == ("e57377aacbb6", "172.17.0.2")
    assert "172.17.0.2" in hypothesis.title


def test_a023_the_store_it_could_not_reach_is_a_suspect(tmp_path) -> None:
    # real: kubeflow/trainer#2041, kubectl logs of a PyTorchJob pod
    text = ("[W socket.cpp:601] [c10d] The client socket has failed to connect to "
            "[elastic-example-imagenet-worker-0.default.svc.cluster.local]:43461 (errno: 113 - No route to host).")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.PEER_UNREACHABLE
    assert "elastic-example-imagenet-worker-0.default.svc.cluster.local" in hypothesis.culprit_hosts


def test_a023_the_refusing_peer_is_a_suspect(tmp_path) -> None:
    """A refused connect: nothing listened at the peer, or its network is broken (real: bigscience jz/slurm
    README, a node with a broken network found from the refused address)."""
    text = ("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8\n"
            "r11i6n2:486514:486651 [1] include/socket.h:403 NCCL WARN Connect to 10.148.3.247<56821> failed : "
            "Connection refused\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.PEER_UNREACHABLE
    assert hypothesis.culprit_hosts == ("r11i6n2", "10.148.3.247")


def test_a023_negative_a_link_local_peer_is_the_address_rule(tmp_path) -> None:
    text = ("n1:12251:12400 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to "
            "fe80::966d:ae03:a2:8cf0%ib1<17943> failed : Software caused connection abort")
    hypothesis = top(diagnose(tmp_path, text))
    # link-local on an interface that is no container's bridge: the wrong interface (A007), not loopback
    assert hypothesis.category is Category.INTERFACE_MISMATCH and "fe80::" in hypothesis.title


# --- A024 rendezvous-or-store-timeout ------------------------------------------------------------------------------

def test_a024_store_barrier_short_of_workers(tmp_path) -> None:
    text = ("RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
            "store_based_barrier_key:1 (world_size=4, worker_count=2, timeout=0:30:00)")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RENDEZVOUS_TIMEOUT and "2 of 4 joined" in hypothesis.title


def test_a024_negative_a_wait_that_names_the_missing_rank_is_a010(tmp_path) -> None:
    text = "[rank0]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/2"
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_NEVER_JOINED and hypothesis.culprit_ranks == (2,)


# --- A025 rank-killed ----------------------------------------------------------------------------------------------

def test_a025_hydra_banner_names_the_host(tmp_path) -> None:
    text = """
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 92248 RUNNING AT fzh-desktop
=   EXIT CODE: 9
"""
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_KILLED and hypothesis.culprit_hosts == ("fzh-desktop",)
    assert hypothesis.culprit_processes == ("pid 92248 on fzh-desktop",)


def test_a025_agent_record_without_rank_table(tmp_path) -> None:
    text = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 14447) "
            "of binary: /usr/bin/python3")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_KILLED and hypothesis.culprit_local_ranks == (1,)


def test_a014_a_bus_error_caught_by_ucx_inside_nccl(tmp_path) -> None:
    # real: msr-fiddle/pipedream#76, Docker's 64 MB /dev/shm
    text = """[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)
==== backtrace (tid:   3095) ====
 2 0x000000000007587d ncclGroupEnd()  ???:0
"""
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.SHM_EXHAUSTED
    assert hypothesis.culprit_hosts == ("8d6bf97c3bf4",) and "pid 3039" in " ".join(hypothesis.culprit_processes)


@pytest.mark.parametrize("line", ["[n1:17 :0:17] Caught signal 15 (Terminated)", "Caught signal 1 (Hangup)"])
def test_a014_negative_a_handler_logging_a_polite_signal_is_no_crash(line) -> None:
    assert "fatal_signal" not in kinds(line)


def test_a025_negative_sigterm_from_the_agent_is_not_a_kill(tmp_path) -> None:
    text = ("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 14448 closing signal SIGTERM\n"
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -15) local_rank: 1 (pid: 14448) "
            "of binary: /usr/bin/python3\n")
    assert Category.RANK_KILLED not in {h.category for h in diagnose(tmp_path, text).hypotheses}


# --- A026 ib-completion-error, A027 ib-port-or-device-down -----------------------------------------------------------

IB = ("h1:34610:36821 [4] ib_plugin.c:1673 NCCL WARN NET/IB: Got completion from peer 10.0.1.23<47140> with "
      "status={status} opcode=0 len=0 vendor err {vendor} (Recv) hca ibp152s0")


def test_a026_local_protection_error(tmp_path) -> None:
    hypothesis = top(diagnose(tmp_path, IB.format(status=4, vendor=81)))
    assert hypothesis.category is Category.IB_COMPLETION and "local protection" in hypothesis.title
    assert "GPUDirect" in hypothesis.what


def test_a026_negative_a_flush_after_retry_exceeded_is_not_the_finding(tmp_path) -> None:
    text = IB.format(status=12, vendor=129) + "\n" + IB.format(status=5, vendor=249)
    hypotheses = diagnose(tmp_path, text).hypotheses
    assert hypotheses[0].category is Category.IB_UNREACHABLE_AT_INIT
    assert Category.IB_COMPLETION not in {h.category for h in hypotheses}


def test_a027_port_error_event(tmp_path) -> None:
    text = "n48:34050:34100 [0] NCCL WARN NET/IB : Got async event : port error\n" + IB.format(status=12, vendor=129)
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.IB_PORT_DOWN and hypothesis.culprit_hosts == ("n48",)


def test_a027_negative_gid_table_change_is_information_and_dates_the_failure(tmp_path) -> None:
    text = ("h1:106:196 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : Got async event : GID table change\n"
            "h1:108:593 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got completion with error 12, opcode 0, "
            "len 32633, vendor err 129\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.IB_LINK_FAILURE  # late: the link changed under a running job
    assert "GID table change" in hypothesis.what


# --- A028 unrecognised-error --------------------------------------------------------------------------------------

def test_a028_an_error_no_rule_knows_is_quoted_with_where(tmp_path) -> None:
    text = "worker-3: ERROR the frobnicator jammed"
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.UNRECOGNISED and hypothesis.culprit_hosts == ("worker-3",)
    assert "frobnicator" in hypothesis.title and hypothesis.confidence < 0.5
    # a Python exception of the program's own is that process failing (A003), still at a low confidence
    raised = top(diagnose(tmp_path, "worker-3: frobnicator.JamError: the frobnicator jammed"))
    assert raised.category is Category.RANK_CRASHED and raised.culprit_hosts == ("worker-3",)
    assert "JamError" in raised.title and raised.confidence < 0.5
    # a fatal signal, even in words no parser knows, is that process dying (A003), with where and what
    crash = top(diagnose(tmp_path, "worker-3: Fatal Python error: Segmentation fault in the frobnicator"))
    assert crash.category is Category.RANK_CRASHED and crash.culprit_hosts == ("worker-3",)
    assert "SIGSEGV" in crash.title


def test_a028_negative_benign_lines_stay_quiet(tmp_path) -> None:
    text = """
  error_file: <N/A>
Epoch 3: 0 errors, loss 0.31
/usr/lib/python3/site-packages/transformers/optimization.py:391: FutureWarning: This implementation is deprecated
"""
    diagnosis = diagnose(tmp_path, text)
    assert not diagnosis.hypotheses and not diagnosis.unexplained


# --- timeouts seen from part of the job ------------------------------------------------------------------------------

WATCHDOG = ("[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800572 milliseconds before timing "
            "out.")


def test_the_ranks_missing_from_a_paste_of_timeouts_are_where_to_look_not_the_cause(tmp_path) -> None:
    # nothing says rank 0 was anywhere else: it may as well have timed out outside the excerpt
    text = "\n".join(WATCHDOG.format(r=r) for r in (1, 2, 3))
    first, second = diagnose(tmp_path, text).hypotheses[:2]
    assert first.category is Category.UNEXPLAINED_TIMEOUT and first.affected_ranks == (1, 2, 3)
    assert "rank 0" in first.what and "Read the log of rank 0" in first.fix
    assert second.category is Category.LAGGING_RANK and second.culprit_ranks == (0,)
    assert second.confidence < first.confidence and "may be incomplete" in second.what


_BAR = ("Running tokenizer on dataset:   9%|███▊      | 280000/2969526 [{elapsed}<4:48:08, 155.57 examples/s]"
        "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800572 milliseconds before timing out.")


def test_a_progress_bar_that_ran_through_the_wait_names_the_rank_working_alone(tmp_path) -> None:
    text = _BAR.format(elapsed="29:55") + "\n" + "\n".join(WATCHDOG.format(r=r) for r in (1, 3))
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == (0,)
    assert hypothesis.affected_ranks == (1, 2, 3) and hypothesis.confidence == 0.6
    assert "“Running tokenizer on dataset”, 29:55 into it" in hypothesis.title
    assert hypothesis.evidence[0].note == "still working when the others timed out"


def test_a_progress_bar_too_young_or_too_old_for_the_wait_counts_only_before_the_training_loop(tmp_path) -> None:
    # deep in the job (a training loop's bar, its last redraw maybe long before the timeout): no evidence
    for elapsed in ("05:00", "3:10:00"):  # started long after they began waiting; the training loop itself
        text = (_BAR.format(elapsed=elapsed) + "\n" + "\n".join(WATCHDOG.format(r=r) for r in (1, 3))).replace(
            "SeqNum=2,", "SeqNum=52113,")
        assert top(diagnose(tmp_path, text)).category is Category.UNEXPLAINED_TIMEOUT, elapsed
    # in the job's second collective, a data bar still running as the others gave up: its process was preparing
    # alone (real: huggingface/nanotron#204, a second pass whose first the paste does not show)
    for elapsed in ("05:00", "3:10:00"):
        text = _BAR.format(elapsed=elapsed) + "\n" + "\n".join(WATCHDOG.format(r=r) for r in (1, 3))
        hypothesis = top(diagnose(tmp_path, text))
        assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == (0,), elapsed
    # a bar of less than a minute began as they gave up: no evidence
    text = _BAR.format(elapsed="00:40") + "\n" + "\n".join(WATCHDOG.format(r=r) for r in (1, 3))
    assert top(diagnose(tmp_path, text)).category is Category.UNEXPLAINED_TIMEOUT


def test_too_many_missing_ranks_are_not_guessed(tmp_path) -> None:
    hypotheses = diagnose(tmp_path, WATCHDOG.format(r=6)).hypotheses
    assert hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT and "ranks 0-5" in hypotheses[0].what
    late = next(h for h in hypotheses if h.category is Category.LAGGING_RANK)
    assert late.culprit_ranks == () and "rank 0 is the usual straggler" in late.what


def test_every_rank_timing_out_is_no_missing_rank(tmp_path) -> None:
    text = "\n".join(WATCHDOG.format(r=r) for r in range(4)) + \
        "\nfoo:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE"
    assert Category.LAGGING_RANK not in {h.category for h in diagnose(tmp_path, text).hypotheses}


def test_unique_id_wait_names_the_rank_that_never_got_there(tmp_path) -> None:
    text = ("[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
            "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout "
            "after 600000ms, keys: /default_pg/0//cuda//0")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == (0,)
    assert hypothesis.affected_ranks == (1,) and hypothesis.confidence == 0.75


def test_unique_id_store_failure_that_is_not_a_timeout_names_nobody_late(tmp_path) -> None:
    text = ("0: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId "
            "from [0] via c10d key-value store by key '0', but store->get('0') got error: failed to format addr, "
            "unknown family=0")
    assert Category.LAGGING_RANK not in {h.category for h in diagnose(tmp_path, text).hypotheses}


def test_nccl_tests_device_table_and_failure(tmp_path) -> None:
    text = """
#  Rank  0 Group  0 Pid 3740409 on fengyun416 device  0 [0x01] NVIDIA RTX A6000
#  Rank  2 Group  0 Pid 3164639 on    fengyun device  0 [0x01] NVIDIA RTX A6000
fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers / '
 .. fengyun pid 3164639: Test failure common.cu:844
"""
    analysis = analyze_paths([str(_write(tmp_path, text))])
    assert analysis.timeline.rank_host(2) == "fengyun" and analysis.timeline.rank_host(0) == "fengyun416"
    assert top(analysis.diagnosis).culprit_hosts == ("fengyun",)


# --- DataLoader workers, NCCL's size check, monitored_barrier's errors, invalid usage ---------------------------------

@pytest.mark.parametrize(("line", "category"), [
    ("RuntimeError: DataLoader worker (pid 12345) is killed by signal: Killed.", Category.RANK_KILLED),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
     Category.SHM_EXHAUSTED),
    ("RuntimeError: DataLoader worker (pid 4567) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory.", Category.SHM_EXHAUSTED),
    ("RuntimeError: DataLoader worker (pid(s) 4567) exited unexpectedly", Category.RANK_CRASHED),
])
def test_a_dataloader_worker_that_died_without_a_rank(tmp_path, line, category) -> None:
    hypothesis = top(diagnose(tmp_path, line))
    assert hypothesis.category is category and "DataLoader worker" in hypothesis.title


def test_a_ranked_dataloader_worker_killed_is_the_host_memory(tmp_path) -> None:
    text = ("[rank2]: RuntimeError: DataLoader worker (pid 12345) is killed by signal: Killed.\n"
            "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
            "[10.0.0.5]:4000\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.RANK_KILLED and hypothesis.culprit_ranks == (2,)
    assert hypothesis.affected_ranks == (1,) and "DataLoader worker" in hypothesis.title


def test_nccl_message_truncated_is_a_size_mismatch(tmp_path) -> None:
    text = ("gpu1:1234:1300 [0] include/socket.h:409 NCCL WARN Net : peer 10.0.0.2<12345> message truncated : "
            "receiving 1048576 bytes instead of 65536")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.COLLECTIVE_DESYNC and "10.0.0.2" in hypothesis.title
    assert "1048576 bytes instead of 65536" in hypothesis.what


def test_monitored_barrier_errors_from_rank_0_name_it_without_claiming_a_crash(tmp_path) -> None:
    """The message comes of any error of the wait for rank 0's answer, its timeout included (ProcessGroupGloo's
    monitoredBarrier): rank 0 is where to look, late more often than dead, so not a crash at the 0.6 of a
    rank's own error."""
    text = ("RuntimeError: Rank 2 successfully reached monitoredBarrier, but received errors while waiting for "
            "send/recv from rank 0. Please check rank 0 logs for faulty rank.")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == (0,)
    assert hypothesis.affected_ranks == (2,) and hypothesis.confidence < 0.5
    assert "a timeout included" in hypothesis.what and "never answered" in hypothesis.title


def test_nccl_invalid_usage_points_at_two_ranks_on_one_gpu(tmp_path) -> None:
    text = ("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, invalid usage, "
            "NCCL version 2.14.3")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.DUPLICATE_GPU and hypothesis.confidence == 0.45
    assert "set_device" in (hypothesis.fix or "")


@pytest.mark.parametrize(("line", "rank"), [
    ("[E ProcessGroupNCCL.cpp:474] [Rank 3] NCCL watchdog thread terminated with exception: CUDA error: an illegal "
     "memory access was encountered", 3),
    ("[E1120 10:11:12.000 ProcessGroupNCCL.cpp:1595] [PG 0 (default_pg) Rank 5] Process group watchdog thread "
     "terminated with exception: CUDA error: an illegal memory access was encountered", 5),
    ("RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered", None),
])
def test_gpu_errors_in_the_watchdog_and_triton(tmp_path, line, rank) -> None:
    hypothesis = top(diagnose(tmp_path, line))
    assert hypothesis.category is Category.GPU_ERROR
    assert hypothesis.culprit_ranks == ((rank,) if rank is not None else ())


def test_the_old_nccl_error_wording_is_read(tmp_path) -> None:
    # PyTorch 1.x: "NCCL Error 2: unhandled system error" (not "NCCL error in: …")
    (event,) = [e for e in events_of("RuntimeError: NCCL Error 2: unhandled system error") if e.kind is Kind.NCCL_ERROR]
    assert event.data["error"] == "unhandled system error"


def test_a_proxy_call_that_failed_names_the_peer_rank(tmp_path) -> None:
    text = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            "1691, internal error - please report this issue to the NCCL developers, NCCL version 2.18.1 "
            "ncclInternalError: Internal check failed. Last error: Proxy Call to rank 0 failed (Connect)")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.PEER_UNREACHABLE and "rank 0" in hypothesis.title


# a progress bar ends with a carriage return, so the traceback starts on its line; the forum stripped the
# indentation and <module>, and the paste stops before the exception (real: hiyouga/ChatGLM-Efficient-Tuning#137)
_CUT = """Running tokenizer on dataset: 47%|#####8 | 3169000/6811963 [30:11<38:27, 1578.58 examples/s]Traceback (most recent call last):
File "/ws/src/train_sft.py", line 94, in
main()
File "/ws/src/utils/common.py", line 506, in preprocess_data
with training_args.main_process_first(desc="dataset map pre-processing"):
File "/env/lib/python3.9/contextlib.py", line 119, in enter
return next(self.gen)
File "/env/lib/python3.9/site-packages/transformers/training_args.py", line 1891, in main_process_first
torch.distributed.barrier()
File "/env/lib/python3.9/site-packages/torch/distributed/distributed_c10d.py", line 3328, in barrier
work = default_pg.barrier(opts=opts)
"""


def test_a_traceback_cut_before_its_error_is_where_the_process_stood(tmp_path) -> None:
    (stack,) = [e for e in events_of(_CUT) if e.kind is Kind.STACK_DUMP]
    assert stack.data["source"] == "traceback-cut" and stack.data["collective"] == "barrier"
    assert "training_args.py:1891 in main_process_first" in stack.data["frames"]
    assert not [e for e in events_of(_CUT) if e.kind is Kind.EXCEPTION]  # no error can be told from it


def test_a_cut_traceback_in_a_run_it_first_barrier_names_rank_0(tmp_path) -> None:
    hypothesis = top(diagnose(tmp_path, _CUT))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == (0,)
    assert hypothesis.confidence == 0.45 and "cut before its error" in hypothesis.title


def test_negative_a_cut_traceback_elsewhere_names_nobody_late(tmp_path) -> None:
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n    main()\n"
            "  File \"train.py\", line 5, in main\n    evaluate()\n")
    assert Category.LAGGING_RANK not in {h.category for h in diagnose(tmp_path, text).hypotheses}


def test_a_cut_traceback_entering_a_run_it_first_helper_names_rank_0(tmp_path) -> None:
    # real: hiyouga/LlamaFactory#360, cut at contextlib's __enter__ under "with …main_process_first(…):"
    text = """Running tokenizer on dataset:  88%|8 | 383700/433643 [29:55<03:25, 2432.70 examples/s]Traceback (most recent call last):
  File "/ws/src/llmtuner/dsets/preprocess.py", line 160, in preprocess_dataset
    with training_args.main_process_first(desc="dataset map pre-processing"):
  File "/env/lib/python3.10/contextlib.py", line 135, in __enter__
    return next(self.gen)
"""
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == (0,)
    assert "main_process_first" in hypothesis.title
    entering_other = text.replace("main_process_first", "autocast")
    assert Category.LAGGING_RANK not in {h.category for h in diagnose(tmp_path, entering_other).hypotheses}


def test_a_desync_without_a_majority_shows_both_sides(tmp_path) -> None:
    text = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=7, OpType=ALLREDUCE, TensorShape=[1024], TensorDtypes=Float), but "
            "Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=7, OpType=BROADCAST, "
            "TensorShape=[1024], TensorDtypes=Float).")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.COLLECTIVE_DESYNC
    assert "rank 0 ran allreduce [1024]; rank 1 ran broadcast [1024]" in hypothesis.title
    assert "no majority" in hypothesis.title and "the others" not in hypothesis.title


_INIT_START = ("pod-0:{pid}:{pid} [0] NCCL INFO ncclCommInitRank comm 0x7a1225 rank {rank} nranks 2 cudaDev 0 nvmlDev 0 "
               "busId {bus} commId 0xaa9becea043c4e6c - Init START")


def test_two_processes_starting_a_communicator_on_one_gpu(tmp_path) -> None:
    # real: NVIDIA/TensorRT-LLM#9263, two ranks of a pod on busId 100000
    text = "\n".join(_INIT_START.format(pid=pid, rank=rank, bus="100000") for pid, rank in ((42, 0), (43, 1)))
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.DUPLICATE_GPU and hypothesis.culprit_hosts == ("pod-0",)
    assert hypothesis.culprit_ranks == (0, 1) and "100000" in hypothesis.title


def test_negative_two_processes_on_two_gpus_are_fine(tmp_path) -> None:
    text = "\n".join(_INIT_START.format(pid=pid, rank=rank, bus=bus)
                     for pid, rank, bus in ((42, 0, "100000"), (43, 1, "200000")))
    assert not diagnose(tmp_path, text).hypotheses


def test_init_start_is_read_once_per_process_and_gpu() -> None:
    """A job that keeps creating communicators prints an Init START per communicator: one event per process and
    GPU is all the duplicate-GPU check needs (parsing them all cost the init benchmark 3x its time)."""
    lines = [f"pod-0:42:42 [0] NCCL INFO ncclCommInitRank comm 0x{c:06x} rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
             f"100000 commId 0x{c:016x} - Init START" for c in range(200)]
    lines.append("pod-0:42:42 [1] NCCL INFO ncclCommInitRank comm 0xffff rank 0 nranks 2 cudaDev 1 nvmlDev 1 busId "
                 "200000 commId 0x1 - Init START")
    starts = [e for e in events_of("\n".join(lines)) if e.kind is Kind.NCCL_INIT_START]
    assert [e.data["bus_id"] for e in starts] == ["100000", "200000"]


def test_gloo_cannot_resolve_its_host_name(tmp_path) -> None:
    # real: msr-fiddle/pipedream#32, a container whose host name resolves to no address of it
    text = ("RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
            "Unable to find address for: dgx-1.ai")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.INTERFACE_MISSING and "host name dgx-1.ai" in hypothesis.title
    assert "/etc/hosts" in (hypothesis.fix or "") and "resolves to no address" in hypothesis.what


def test_torchrun_exit_barrier_timeout_means_another_node_did_not_finish(tmp_path) -> None:
    # real: huggingface/accelerate#2229
    text = """Traceback (most recent call last):
  File "/opt/conda/lib/python3.7/site-packages/torch/distributed/elastic/agent/server/api.py", line 904, in _exit_barrier
    barrier_timeout=self._exit_barrier_timeout,
  File "/opt/conda/lib/python3.7/site-packages/torch/distributed/elastic/utils/store.py", line 31, in get_all
    data = store.get(f"{prefix}{idx}")
RuntimeError: Socket Timeout
"""
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.LAGGING_RANK and "exit barrier" in hypothesis.title
    assert not hypothesis.culprit_ranks


@pytest.mark.parametrize("line", ["gpu1:1:1 [0] NCCL WARN Cuda failure 'system not yet initialized'",
                                  "RuntimeError: CUDA error: system not yet initialized"])
def test_system_not_yet_initialized_is_the_fabric_manager(tmp_path, line) -> None:
    hypothesis = top(diagnose(tmp_path, line))
    assert hypothesis.category is Category.GPU_ERROR and "nvidia-fabricmanager" in (hypothesis.fix or "")


@pytest.mark.parametrize("line", ["RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
                                  "n1:5:5 [0] NCCL WARN Cuda failure 'CUDA-capable device(s) is/are busy or unavailable'"])
def test_a_busy_gpu_is_the_device_assignment(tmp_path, line) -> None:
    hypothesis = top(diagnose(tmp_path, line))
    assert hypothesis.category is Category.DUPLICATE_GPU and "exclusive compute mode" in hypothesis.title


def test_the_store_going_away_during_the_unique_id_wait_is_a_lost_peer(tmp_path) -> None:
    text = ("[rank7]: torch.distributed.DistBackendError: [7] is setting up NCCL communicator and retrieving ncclUniqueId "
            "from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer")
    hypotheses = diagnose(tmp_path, text).hypotheses
    assert hypotheses[0].category is Category.RANK_CRASHED
    assert Category.LAGGING_RANK not in {h.category for h in hypotheses}  # not a wait that ran out


def test_a_bare_socket_timeout_from_a_store_wait(tmp_path) -> None:
    # PyTorch 1.x-2.0: the message says only "Socket Timeout"; the C++ frame says it was a store wait
    text = ("RuntimeError: Socket Timeout\n"
            "Exception raised from doWait at ../torch/csrc/distributed/c10d/TCPStore.cpp:445 (most recent call first):\n")
    hypothesis = top(diagnose(tmp_path, text))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.confidence == 0.3
    assert "waiting in the store, for a key another rank sets" in hypothesis.title and not hypothesis.culprit_ranks
