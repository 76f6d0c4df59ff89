"""Readings added after the thirty-first and thirty-second blind harvests (the r34* and r35* cases of the real
corpus), one behaviour per test, each with the look-alike it must not catch: NCCL's allocator failing to get GPU
memory, log lines whose newlines the paste lost (read apart at their line), a timeout the watchdog reported hours
late, a peer refused at a Docker network's gateway, an NCCL call that failed with a CUDA error under Horovod,
Slurm's PMIx exchange that timed out, NCCL's truncated message in older and cut forms; and after the thirty-third
(r36*): Composer's launcher naming the crashed rank, and colour codes written in caret notation. Lines are written
as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one, timeline_of
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_ncclS_allocator_that_could_not_get_gpu_memory(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#3827 (ZeRO++ under pdsh: 'Last error:' then the allocator's words)
    paste = ("192.168.1.51: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, internal error, NCCL version 2.14.3\n"
             "192.168.1.51: ncclInternalError: Internal check failed.\n"
             "192.168.1.51: Last error:\n"
             "192.168.1.51: Failed to CUDA calloc async 1920 bytes\n")
    assert one("192.168.1.51: Failed to CUDA calloc async 1920 bytes", Kind.CUDA_OOM).origin.host == "192.168.1.51"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_hosts == ("192.168.1.51",)
    # the WARN of its own line reads the same; host memory (cudaHostAlloc) is no GPU's
    assert one("node1:1:2 [0] include/alloc.h:48 NCCL WARN Failed to CUDA calloc 1920 bytes", Kind.CUDA_OOM)
    assert not [e for e in events_of("node1:1:2 [0] include/alloc.h:30 NCCL WARN Failed to CUDA host alloc 1920 bytes")
                if e.kind is Kind.CUDA_OOM]


_ONE_LINE = ("> sh train.sh ubun:2375340:2375340 [0] NCCL INFO Bootstrap : Using [0]enp4s0:10.214.24.190<0> "
             "ubun:2375340:2375340 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal "
             "implementation ubun:2375340:2375340 [0] NCCL INFO NCCL version 2.7.8+cuda10.2\n>\n"
             "> ubun:2375341:2375387 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
             "device 1000 ubun:2375341:2375387 [0] NCCL INFO init.cc:840 -> 5 ubun:2375341:2375387 [0] NCCL INFO "
             "group.cc:73 -> 5 [Async thread]\n")


def test_log_lines_whose_newlines_the_paste_lost(tmp_path: Path) -> None:
    # real: arclab-MIT lrgt#13 (an unfenced paste: markdown ran the lines of each block together)
    top = diagnose(tmp_path, _ONE_LINE).hypotheses[0]
    assert top.category is Category.DUPLICATE_GPU and top.culprit_hosts == ("ubun",)
    assert [e.ref.line for e in top.evidence][:1] == [3]  # cited at the line it is on
    kinds = {e.kind for e in timeline_of(tmp_path, _ONE_LINE).events if e.ref.line == 1}
    assert {Kind.NCCL_BOOTSTRAP, Kind.NCCL_VERSION} <= kinds
    # ranks' lines run together: each rank's timeout read; a rank prefix behind Ray's actor prefix stays with it
    ranks = "".join(f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
                    f"WorkNCCL(SeqNum=2, OpType=BARRIER, Timeout(ms)=600000) ran for 600041 milliseconds before timing "
                    "out. " for r in (1, 2, 3))
    read = timeline_of(tmp_path, ranks).events
    assert sorted(e.origin.rank for e in read if e.kind is Kind.WATCHDOG_TIMEOUT) == [1, 2, 3]
    ray = ("(RayWorker pid=11305, ip=10.0.0.7) [rank10]:[E ProcessGroupNCCL.cpp:563] [Rank 10] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=2, OpType=BARRIER, Timeout(ms)=600000) ran for 600041 "
           "milliseconds before timing out.\n")
    event = next(e for e in timeline_of(tmp_path, ray).events
                 if e.kind is Kind.WATCHDOG_TIMEOUT)
    assert (event.origin.rank, event.origin.host, event.origin.pid) == (10, "10.0.0.7", 11305)
    # one NCCL line that names NCCL twice is one line, read once
    long = ("node1:12:34 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<43210> with "
            "error 12, opcode 0, len 0, vendor err 129 (seen with NCCL 2.14.3)\n")
    read = timeline_of(tmp_path, long).events
    assert [e.kind for e in read] == [Kind.IB_COMPLETION_ERROR]


def test_a_timeout_the_watchdog_reported_hours_late(tmp_path: Path) -> None:
    # real: pytorch/pytorch#118369 (BioNeMo: 30 min limit, reported after 7.1 h; also NVIDIA/NeMo#8441)
    late = ("[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96117, "
            "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25625613 milliseconds before timing out.\n")
    top = diagnose(tmp_path, late).hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT and "reported it 6.6 h late" in top.title
    assert "could not run itself" in top.what and "Xid" in top.what
    # a timeout reported at its limit says nothing of the kind
    in_time = late.replace("25625613", "1800085")
    top = diagnose(tmp_path, in_time).hypotheses[0]
    assert "late" not in top.title and "could not run itself" not in top.what


def test_a_peer_refused_at_a_docker_networks_gateway(tmp_path: Path) -> None:
    # real: pytorch/examples#689 (NCCL 2.4.2, mp.spawn) and NVIDIA/nccl-tests#180 (Open MPI with UCX)
    nccl = ("id-d3:715:790 [1] include/socket.h:382 NCCL WARN Connect to 172.18.0.1<49273> failed : Connection "
            "refused\n")
    top = diagnose(tmp_path, nccl).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and "172.18.0.1" in top.title and "NCCL_SOCKET_IFNAME" in top.fix
    ucx = ("[1700554343.440876] [10-192-80-132:7355 :0]            sock.c:323  UCX  ERROR   connect(fd=48, "
           "dest_addr=172.17.0.1:42887) failed: Connection refused\n")
    assert diagnose(tmp_path, ucx).hypotheses[0].category is Category.LOOPBACK_ADDRESS
    # a host of the job whose address is in those ranges, not a network's gateway, is a peer that cannot be reached
    host = nccl.replace("172.18.0.1", "172.18.4.23")
    assert diagnose(tmp_path, host).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_an_nccl_call_that_failed_with_a_cuda_error_under_horovod(tmp_path: Path) -> None:
    # real: pytorch/ignite#3466 (horovodrun's gloo launcher) and horovod/horovod#3618 (A100s, Horovod 0.23)
    line = "[1]<stderr>:RuntimeError: ncclCommInitRank failed: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
    assert {e.kind for e in events_of(line)} >= {Kind.NCCL_ERROR, Kind.GPU_ERROR}
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (1,)
    # its system-error twin is no GPU's
    other = line.replace("unhandled cuda error", "unhandled system error")
    assert Kind.GPU_ERROR not in {e.kind for e in events_of(other)}


def test_slurms_pmix_exchange_between_the_nodes_timed_out(tmp_path: Path) -> None:
    # real: NVIDIA/deepops#1179 (srun --mpi=pmix with pyxis containers, two nodes)
    line = ("slurmstepd: error:  mpi/pmix_v3: pmixp_coll_ring_reset_if_to: adas-ml [0]: pmixp_coll_ring.c:742: "
            "0x14ce0c02cb20: collective timeout seq=0\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT
    # PMIx's other errors are not that
    other = "slurmstepd: error:  mpi/pmix_v3: pmixp_p2p_send: adas-ml [0]: pmixp_utils.c:467: send failed, rc=2\n"
    assert diagnose(tmp_path, other).hypotheses[0].category is not Category.RENDEZVOUS_TIMEOUT


def test_ncclS_message_truncated_without_its_peer_or_its_sizes(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#268 (NCCL 2.4.7: no peer in the line) and NVIDIA/nccl#626 (cut after "truncated :")
    old = ("hvd1:2918:3333 [0] external/nccl_archive/src/transport/net_socket.cc:200 NCCL WARN NET/Socket : message "
           "truncated : receiving 696320 bytes instead of 32768")
    assert one(old, Kind.COLLECTIVE_MISMATCH).data["received_bytes"] == 696320
    cut = "transport/net_socket.cc:424 NCCL WARN NET/Socket : peer 192.168.161.30<59210> message truncated :"
    assert one(cut, Kind.COLLECTIVE_MISMATCH).data["peer_addr"] == "192.168.161.30"
    assert diagnose(tmp_path, cut).hypotheses[0].category is Category.COLLECTIVE_DESYNC
    # a message about truncated text elsewhere is none
    assert not [e for e in events_of("node1:1:2 [0] NCCL WARN hostname truncated to 64 characters")
                if e.kind is Kind.COLLECTIVE_MISMATCH]


def test_composers_launcher_names_the_rank_and_its_signal(tmp_path: Path) -> None:
    # real: mosaicml/llm-foundry#258 (Docker's 64 MB /dev/shm: exit code -7, SIGBUS)
    line = "ERROR:composer.cli.launcher:Rank 2 crashed with exit code -7."
    event = one(line, Kind.WORKER_FAILED)
    assert (event.origin.rank, event.data["signal"]) == (2, "SIGBUS")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.SHM_EXHAUSTED and top.culprit_ranks == (2,)
    # an exit code 1 is a crash whose cause is in that rank's own output, not shared memory
    top = diagnose(tmp_path, line.replace("-7.", "1.")).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (2,)


def test_colour_codes_written_in_caret_notation() -> None:
    # real: ray-project/ray#35907 (`^[[` where the escape byte was: a terminal's copy through less or cat -v)
    line = ("^[[2m^[[36m(RayTrainWorker pid=1364126)^[[0m [rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600041 "
            "milliseconds before timing out.")
    event = one(line, Kind.WATCHDOG_TIMEOUT)
    assert (event.origin.rank, event.origin.pid, event.seq) == (0, 1364126, 2)
    # a caret that starts no escape stays: x^[y] is text
    assert "x^[y]" in one("x^[y] RuntimeError: boom", Kind.ERROR_LINE).text


_INBOUND = """--------------------------------------------------------------------------
Open MPI detected an inbound MPI TCP connection request from a peer
that appears to be part of this MPI job (i.e., it identified itself as
part of this Open MPI job), but it is from an IP address that is
unexpected.  This is highly unusual.

  Local host:          xuerq-horovod0
  Local PID:           8136
  Peer hostname:       xuerq-horovod1 ([[30832,1],1])
  Source IP of socket: 10.10.10.8
  Known IPs of peer:
\t10.1.102.5
--------------------------------------------------------------------------
"""


def test_open_mpi_dropped_a_connection_from_an_address_the_peer_never_announced(tmp_path: Path) -> None:
    # real: horovod/horovod#72 (Kubernetes pods with two networks: the peer connected from the other one)
    top = diagnose(tmp_path, _INBOUND).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and top.culprit_hosts == ("xuerq-horovod1",)
    assert "10.10.10.8" in top.title and "10.1.102.5" in top.title and "btl_tcp_if_include" in top.fix
    # the help text cut before its fields still says what happened, naming no host
    cut = "\n".join(_INBOUND.splitlines()[:5]) + "\n"
    top = diagnose(tmp_path, cut).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and top.culprit_hosts == ()


def test_an_rdma_stack_that_sees_no_device_is_never_silence(tmp_path: Path) -> None:
    # real: k8snetworkplumbingwg/sriov-cni#348 (a pod whose rdma-core does not match the host's bnxt_re driver)
    paste = ("root@testpod1:/# ibv_devinfo\n"
             "libibverbs: Warning: Driver bnxt_re does not support the kernel ABI of 6 (supports 1 to 1) for device "
             "/sys/class/infiniband/bnxt_re2\nNo IB devices found\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "kernel ABI" in top.title
    # an ibv_devinfo that lists its device says nothing of the kind
    assert not diagnose(tmp_path, "root@testpod1:/# ibv_devinfo\nhca_id: bnxt_re0\n\ttransport: InfiniBand (0)\n"
                        ).hypotheses


def test_open_mpi_names_the_host_whose_peer_process_disconnected(tmp_path: Path) -> None:
    # real: horovod/horovod#1950 (the peer's process went away; the local rank then aborted)
    paste = """An MPI communication peer process has unexpectedly disconnected.  This
usually indicates a failure in the peer process (e.g., a crash or
otherwise exiting without calling MPI_FINALIZE first).

  Local host: reco-zl-c4-reco313
  Local PID:  7720
  Peer host:  reco-zl-c4-reco316
--------------------------------------------------------------------------
"""
    event = next(e for e in timeline_of(tmp_path, paste).events if e.kind is Kind.PEER_CLOSED)
    assert (event.origin.host, event.data["peer_addr"]) == ("reco-zl-c4-reco313", "reco-zl-c4-reco316")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_hosts == ("reco-zl-c4-reco316",)
    # the help text cut before its peer names no host
    cut = "\n".join(paste.splitlines()[:3]) + "\n"
    assert not [e for e in timeline_of(tmp_path, cut).events if e.kind is Kind.PEER_CLOSED]
