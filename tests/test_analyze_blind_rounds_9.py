"""Readings added after the twenty-fifth blind harvest (the r28* cases of the real corpus), one behaviour per test,
each with the look-alike it must not catch: NCCL's counted connect retries when the paste ends in them, a CUDA
failure in NCCL's shared-memory transport, a CUDA (or HIP) IPC handle the P2P transport could not get (and the
one whose peer GPU is its own), NCCL 2.1's WARN with a file before it, a connect that timed out cut short by the
paste, a Ray worker that wrote an error before Ray lost it. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.rules.phrases import read_as

diagnose = diagnose_paste

_RETRY = ("node1:5971:6015 [4] NCCL INFO socketPollConnect: connect to 10.29.224.148<52333> returned Connection "
          "refused, retrying ({n}/34) after sleep for {ms} msec\n")


def test_a_paste_that_ends_in_counted_connect_retries_is_a_peer_not_listening(tmp_path: Path) -> None:
    # real: pytorch/pytorch#167288 (after torchrun's elastic restart on Kubernetes)
    paste = "".join(_RETRY.format(n=n, ms=n * 100) for n in range(18, 22))
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "10.29.224.148" in top.title
    assert "still retrying" in top.title and top.confidence == 0.5  # it had not given up: a lead, not a verdict
    # the same retries, then that process completed its communicator: the peer was only late to listen
    joined = paste + "node1:5971:6015 [4] NCCL INFO comm 0x5581 rank 4 nranks 16 cudaDev 4 busId 8a000 - Init COMPLETE\n"
    assert not any(h.category is Category.PEER_UNREACHABLE for h in diagnose(tmp_path, joined).hypotheses)
    # the last try is NCCL giving up: a connect that failed, not one still going on
    final = one(_RETRY.format(n=34, ms=3400), Kind.NCCL_CONNECT_FAILED)
    assert final.data.get("final") is True and not final.data.get("retrying")


def test_a_cuda_failure_in_nccls_shared_memory_transport_is_the_shm_segment(tmp_path: Path) -> None:
    # real: pytorch/pytorch#23534 (NCCL 2.4.2) and horovod/horovod#1122 (mpirun's tagged output)
    line = "ip-172-31-44-237:52617:53046 [4] include/shm.h:42 NCCL WARN Cuda failure 'invalid argument'\n"
    event = one(line, Kind.SHM_FAILURE)
    assert event.data["cuda"] is True and "invalid argument" in event.data["error"]
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.SHM_EXHAUSTED and "ip-172-31-44-237" in top.title
    # the same CUDA failure anywhere else in NCCL is the GPU's
    other = "ip-172-31-44-237:52617:53046 [4] enqueue.cc:215 NCCL WARN Cuda failure 'invalid argument'\n"
    assert one(other, Kind.GPU_ERROR).data["message"] == "invalid argument"


def test_an_ipc_handle_the_p2p_transport_could_not_get(tmp_path: Path) -> None:
    # real: ROCm/rccl#908 (hipified p2p.cc on MI210, the IOMMU settings missing)
    line = ("sharbox:204802:204836 [1] /home/u/rccl/build/hipify/src/transport/p2p.cc:220 NCCL WARN hipIpcGetMemHandle "
            "failed : invalid argument\n")
    assert one(line, Kind.PEER_ACCESS).data["message"] == "invalid argument"
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_ACCESS
    # NCCL 2.1's wording, to another GPU of the host: the path between them
    other = "c460:101211:106353 [1] transport/p2p.cu:404 WARN rank 1 failed to get CUDA IPC handle to device 0 : 11 invalid argument\n"
    assert one(other, Kind.PEER_ACCESS).data["cuda_error"] == 11


def test_an_ipc_handle_to_its_own_gpu_is_two_ranks_on_one_gpu(tmp_path: Path) -> None:
    # real: pytorch/pytorch PR 4921's thread (NCCL 2.1, THD: both processes on GPU 0; no file:line WARN anchor then)
    paste = ("c460c041:101211:106353 [0] init.cu:218 WARN Cuda failure 'out of memory'\n"
             "c460c041:101211:106353 [0] transport/p2p.cu:404 WARN rank 1 failed to get CUDA IPC handle to device 0 : "
             "11 invalid argument\n")
    kinds = [e.kind for e in events_of(paste)]
    assert Kind.CUDA_OOM in kinds and Kind.DUPLICATE_GPU in kinds  # NCCL 2.1's WARN, found with a file before it
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.DUPLICATE_GPU and top.culprit_hosts == ("c460c041",)
    assert not top.culprit_ranks  # NCCL numbers it in its communicator: no rank of the job


def test_a_connect_that_timed_out_cut_short_by_the_paste() -> None:
    # real: hpcaitech/ColossalAI#2500 (gloo's group for 64 GPUs, the message cut after 'timed')
    assert read_as("RuntimeError: Connection timed").category is Category.PEER_UNREACHABLE  # type: ignore[union-attr]
    assert read_as("RuntimeError: Connection timed out").category is Category.PEER_UNREACHABLE  # type: ignore[union-attr]
    assert read_as("RuntimeError: Timed out after 300 s") is None  # a bare timeout names nothing
    assert read_as("the connection timeline was flushed") is None


_RAY = """(LLMRayActor pid=90738, ip=172.19.24.110) mlx5: host_unknown: got completion with error:
(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the \
problem, check the logs for the dead worker. RayTask ID: ffff Worker ID: d893 Node ID: 8440 Worker IP address: \
172.19.24.110 Worker port: 10003 Worker PID: 90738 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker \
unexpectedly exits with a connection error code 2. End of file.
"""


def test_a_ray_worker_that_wrote_an_error_before_ray_lost_it_died_of_it(tmp_path: Path) -> None:
    # real: OpenRLHF/OpenRLHF#621 (the vLLM engine's worker during the weight broadcast)
    top = diagnose(tmp_path, _RAY).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "died after an error of its own" in top.title
    assert "got completion with error" in top.title and "(LLMRayActor" not in top.title
    assert top.evidence[0].note == "its own error"
    # another process's error is not its own: the worker vanished in silence
    other = _RAY.replace("(LLMRayActor pid=90738", "(LLMRayActor pid=90621", 1)
    silent = diagnose(tmp_path, other).hypotheses
    assert any(h.category is Category.RANK_KILLED and "vanished without an error of its own" in h.title for h in silent)
