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


def test_the_usual_ipv6_lookup_warning_of_a_plain_host_is_only_a_lead_when_nothing_else_is_there(
        tmp_path: Path) -> None:
    # real: kubernetes-sigs/jobset#603 (the only line of a job that hung: a stale subdomain in MASTER_ADDR)
    line = ("[W socket.cpp:697] [c10d] The IPv6 network addresses of (node-0, 29500) cannot be retrieved (gai error: "
            "-2 - Name or service not known).")
    (lead,) = diagnose(tmp_path, line).hypotheses
    assert lead.category is Category.PEER_UNREACHABLE and lead.confidence == 0.2
    assert "node-0:29500" in lead.title and "often harmless" in lead.what and "getent hosts node-0" in (lead.fix or "")
    # harmless where the job went on (a communicator formed) or where anything else failed
    formed = line + "\nnode-1:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE"
    assert diagnose(tmp_path, formed).hypotheses == ()
    crashed = diagnose(tmp_path, line + "\n[rank1]: ValueError: bad batch").hypotheses
    assert Category.PEER_UNREACHABLE not in {h.category for h in crashed}
    # on localhost or an address, it says nothing about a name
    assert diagnose(tmp_path, line.replace("node-0", "localhost")).hypotheses == ()


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


def test_evaluation_lines_far_from_any_timeout_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("Running per image evaluation...\n" * 5000)
    analysis = analyze_paths([str(path)])
    assert not [e for e in analysis.collected.events if e.kind is Kind.WORK_PHASE]
    assert analysis.diagnosis.hypotheses == ()


def test_a_checkpoint_being_written_just_before_the_timeouts_names_rank_0(tmp_path: Path) -> None:
    # real: ai2cm/ace#851: the save began as rank 7 started waiting (20 minutes before its timeout)
    top = diagnose(tmp_path, """
2026-02-18T10:28:25.497Z 2026-02-18 10:28:25,496 - root - INFO - Saving latest checkpoint model trained for 3 complete epochs
2026-02-18T10:48:25.681Z [rank7]:[E218 10:48:25.033625188 ProcessGroupNCCL.cpp:632] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=151264, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1200000) ran for 1200011 milliseconds before timing out.
""").hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,)
    assert "a checkpoint being written" in top.title and "Write the checkpoint asynchronously" in top.fix


def test_a_log_line_about_having_saved_is_no_work_in_progress(tmp_path: Path) -> None:
    line = "having saved nothing yet, the trainer starts"
    assert not [e for e in analyze_paths([str(_paste(tmp_path, line))]).collected.events
                if e.kind is Kind.WORK_PHASE]


def _paste(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "paste.txt"
    path.write_text(text + "\n")
    return path


# tmux wraps at a fixed width (168 columns here) and pads the last piece with spaces: real, ms-swift#5409
_WRAPPED = (
    '[rank7]:[E816 00:34:01.184200712 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 7]  failure'
    ' detected by watchdog at work sequence id: 137429 PG status: last enqueue\n'
    'd work: 137429, last completed work: 137428                                         \n'
    '[rank7]:[E816 00:34:01.184237972 ProcessGroupNCCL.cpp:667] Stack trace of the failed collective'
    ' not found, potentially because FlightRecorder is disabled. You can enabl\n'
    'e it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.                   \n'
    '[rank5]:[E816 00:34:01.333566386 ProcessGroupNCCL.cpp:629] [Rank 5] Watchdog caught collective '
    'operation timeout: WorkNCCL(SeqNum=137430, OpType=ALLREDUCE, NumelIn=3106\n'
    '28352, NumelOut=310628352, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.  '
    '                                                                         \n'
    '[rank5]:[E816 00:34:01.333737433 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 5]  failure'
    ' detected by watchdog at work sequence id: 137430 PG status: last enqueue\n'
    'd work: 137430, last completed work: 137429                                         \n'
)


def test_records_a_terminal_wrapped_at_a_fixed_width_are_read_joined(tmp_path: Path) -> None:
    # real: modelscope/ms-swift#5409 (pasted from tmux)
    analysis = analyze_paths([str(_paste(tmp_path, _WRAPPED))])
    events = analysis.collected.events
    # (the status lines' provisional timeouts, "failure detected" said of errors too, give way to the whole line)
    (timeout,) = analysis.timeline.of(Kind.WATCHDOG_TIMEOUT)
    assert timeout.origin.rank == 5 and timeout.seq == 137430 and timeout.data["numel_in"] == 310628352
    status = {e.origin.rank: e.data["last_completed"] for e in events if e.kind is Kind.WORK_STATUS}
    assert status == {7: 137428, 5: 137429}


def test_a_rank_the_watchdog_found_stuck_inside_its_own_work_is_no_late_rank(tmp_path: Path) -> None:
    # rank 7 waits inside #137429 (its failure status); rank 5 passed it: neither stopped on its own
    hypotheses = diagnose(tmp_path, _WRAPPED).hypotheses
    assert hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT
    assert not [h for h in hypotheses if h.category is Category.LAGGING_RANK and 7 in h.culprit_ranks]


def test_hip_out_of_memory_on_rocm_even_with_two_processes_lines_interleaved(tmp_path: Path) -> None:
    # real: salesforce/CodeGen2#3 (8 nodes of AMD GPUs under DeepSpeed's pdsh)
    top = diagnose(tmp_path, "c05r2n11: RuntimeErrorRuntimeError: : HIP out of memory. Tried to allocate 576.00 MiB "
                             "(GPU 3; 15.98 GiB total capacity; 15.83 GiB already allocated)").hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_hosts == ("c05r2n11",)


def test_a_peer_on_dockers_default_bridge_is_said_to_be_one(tmp_path: Path) -> None:
    # real: THUDM/GLM#173: the other container advertised its bridge address
    top = diagnose(tmp_path, "192.168.83.245: 595d69b310a0:48344:48664 [0] include/socket.h:409 NCCL WARN Net : "
                             "Connect to 172.17.0.6<34147> failed : No route to host").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "Docker's default bridge" in top.what
    assert "--network=host" in top.fix


_GRAPH = """
::16674:17023 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/microsoft/ncv4/topo.xml
::16674:17023 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/microsoft/ncv4/graph.xml

::16674:17023 [0] graph/search.cc:703 NCCL WARN XML Import Channel : dev 1 not found.
::16674:17023 [0] NCCL INFO graph/search.cc:733 -> 2
::16674:17023 [0] NCCL INFO init.cc:911 -> 2
RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled system error, NCCL version 2.18.6
"""


def test_a_topology_file_for_another_machine_is_said_as_such_not_as_a_connection(tmp_path: Path) -> None:
    # real: Azure/azhpc-images#327 (an NCv4 graph file on an NC A100 v4 VM)
    hypotheses = diagnose(tmp_path, _GRAPH).hypotheses
    top = hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "NCCL_GRAPH_FILE=/opt/microsoft/ncv4/graph.xml" in top.title
    assert "dev 1 not found" in top.title and "Remove NCCL_TOPO_FILE" in top.fix
    assert Category.PEER_UNREACHABLE not in {h.category for h in hypotheses}


def test_a_graph_search_failure_without_a_file_given_is_no_topology_file(tmp_path: Path) -> None:
    text = "\n".join(line for line in _GRAPH.split("\n") if "set by environment" not in line)
    assert all("topology it was given" not in h.title for h in diagnose(tmp_path, text).hypotheses)


def test_hpe_pals_names_the_rank_a_signal_killed(tmp_path: Path) -> None:
    # real: saforem2/ezpz#234 (PBS on Sunspot): rank 1's SIGTERM is the teardown after rank 12's SIGKILL
    top = diagnose(tmp_path, """
x1921c7s1b0n0-hsn0: rank 12 died from signal 9
x1921c7s0b0n0-hsn0: rank  1 died from signal 15
""").hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_ranks == (12,)


def test_a_note_a_user_added_after_sruns_line_does_not_hide_it(tmp_path: Path) -> None:
    # real: saforem2/ezpz#238 ("<- the victim" is the reporter's)
    top = diagnose(tmp_path, "srun: error: nid001321: tasks 4-7: Killed        <- the victim").hypotheses[0]
    assert top.category is Category.RANK_KILLED and "nid001321" in top.title


def test_a_store_barrier_still_waiting_when_the_paste_ends(tmp_path: Path) -> None:
    # real: NVIDIA-NeMo/Speech#5819: 3 of 8 processes joined
    text = ("0: Waiting in store based barrier to initialize process group for rank: 3, key: store_based_barrier_key:1 "
            "(world_size=8, worker_count=3, timeout=0:30:00)")
    top = diagnose(tmp_path, text).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "3 of 8 joined so far" in top.title
    formed = text + "\n[rank3]:node1:1:2 [3] NCCL INFO comm 0x1 rank 3 nranks 8 cudaDev 3 busId 1000 - Init COMPLETE"
    assert all(h.category is not Category.RENDEZVOUS_TIMEOUT for h in diagnose(tmp_path, formed).hypotheses)


def test_ascends_hccl_wait_is_a_timeout_not_a_crash(tmp_path: Path) -> None:
    # real: vllm-project/vllm-ascend#486
    top = diagnose(tmp_path, """
[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: HcclAllreduce, error code is 6
[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank being stuck
""").hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT and top.affected_ranks == (1,)


def test_torch_xlas_mesh_master_that_cannot_be_reached(tmp_path: Path) -> None:
    # real: pytorch/xla#2604 (XRT_TPU_CONFIG unset)
    top = diagnose(tmp_path, """
Failed to connect to client mesh master: d7c1c93dfe8c:56419
Exception: process 1 terminated with exit code 17
""").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "d7c1c93dfe8c:56419" in top.title


def test_timeouts_without_their_group_at_several_numbers_are_no_desync(tmp_path: Path) -> None:
    # real: NVIDIA/Megatron-LM#1142: rank 0 waits in three groups, rank 3 in another: the lines (before 2.2)
    # do not say which group each is
    line = ("[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={s}, "
            "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 607565 milliseconds before timing out.")
    text = "\n".join(line.format(r=r, s=s) for r, s in ((3, 33), (0, 257), (0, 1032), (0, 1796)))
    hypotheses = diagnose(tmp_path, text).hypotheses
    assert hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT
    assert not [h for h in hypotheses if h.category in (Category.COLLECTIVE_DESYNC, Category.LAGGING_RANK)
                and h.confidence >= 0.5]


def test_torchelastics_etcd_server_that_cannot_be_reached(tmp_path: Path) -> None:
    # real: pytorch/pytorch#123714 (--rdzv-backend=etcd-v2 without an endpoint)
    top = diagnose(tmp_path, "ERROR:etcd.client:Failed to get list of machines from http://localhost:2379/v2: "
                             "MaxRetryError(\"HTTPConnectionPool(host='localhost', port=2379): Max retries exceeded "
                             "with url: /v2/machines\")").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "localhost:2379" in top.title
    assert "etcd" in top.title


def test_a_wait_timeout_inside_init_process_group_is_the_rendezvous(tmp_path: Path) -> None:
    # real: pytorch/pytorch#13583 (a gloo file store on a share the other host did not see)
    top = diagnose(tmp_path, """
Traceback (most recent call last):
  File "/home/simon/Desktop/dist_rl/dist_rl.py", line 13, in <module>
    dist.init_process_group(rank=0,backend="gloo",init_method='file:///home/simon/shared/gloo_file',world_size=2)
  File "/home/simon/anaconda3/lib/python3.6/site-packages/torch/distributed/distributed_c10d.py", line 283, in init_process_group
    _default_pg = ProcessGroupGloo(store, rank, world_size)
RuntimeError: Wait timeout
""").hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "could not form" in top.title


def test_the_socket_transport_accepting_an_ib_connection_means_the_transports_differ(tmp_path: Path) -> None:
    # real: NVIDIA/nccl-tests#188
    top = diagnose(tmp_path, """
user:16901:16967 [2] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 4 != 3
user:16901:16967 [2] NCCL INFO transport/net_socket.cc:375 -> 3
""").hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK and "the IB transport" in top.title
    assert "NCCL_IB_DISABLE=1" in top.fix


def test_a_store_connect_timeout_wrapped_before_its_port_still_names_the_store(tmp_path: Path) -> None:
    # real: OpenRLHF/OpenRLHF#265 (the weight-sync store on a Docker bridge address)
    top = diagnose(tmp_path, """
(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to connect to (172.17.0.2
, 44737).
""").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "172.17.0.2" in top.title
    assert "Docker's default bridge" in top.what
