"""Readings added after the twenty-sixth blind harvest (the r29* cases of the real corpus), one behaviour per test,
each with the look-alike it must not catch: the store client's warning that its server went away, the counters of
vLLM's store keys, a connect to a link-local address from the first try, UCX's refused connect, srun's lines after
Slurm's cancellation, Horovod's rows behind mpirun's tag and the desync they show, a worker a launcher names by pid
placed by NCCL's lines of that pid, docker compose's service prefix. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_the_store_clients_warning_that_its_server_went_away(tmp_path: Path) -> None:
    # real: pytorch/pytorch PR 153586 (rank 0 hosts the store and exits while rank 1 waits in store.get)
    line = ("[W514 18:33:36.536327028 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=3, "
            "addr=[localhost]:34658, remote=[localhost]:1234): Failed to recv, got 0 bytes. Connection was likely "
            "closed. Did the remote server shutdown or crash?\n")
    event = one(line, Kind.PEER_CLOSED)
    assert (event.data["transport"], event.data["peer_addr"], event.data["peer_port"]) == ("store", "localhost", 1234)
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "localhost" in top.title
    assert top.confidence < 0.5  # a lead: rank 0 ending first at a job's normal end prints it too
    # the client that cannot reach the store at all is no server that went away
    refused = "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. The server socket has failed to listen"
    assert not [e for e in events_of(refused) if e.kind is Kind.PEER_CLOSED and e.data.get("peer_addr")]


def test_vllms_store_key_counters_are_no_ranks(tmp_path: Path) -> None:
    # real: modelscope/ms-swift#4906 (the trainer's weight sync with a vLLM server: its StatelessProcessGroup)
    vllm = "[rank0]: torch.distributed.DistStoreError: wait timeout after 300000ms, keys: /broadcast_from/0/75465\n"
    assert all(not e.data.get("missing_ranks") for e in events_of(vllm) if e.kind is Kind.STORE_ERROR)
    assert "75465" not in diagnose(tmp_path, vllm).hypotheses[0].title
    # gloo's rendezvous keys do end in the rank that never wrote its address
    gloo = "[rank0]: torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/2\n"
    assert [e.data["missing_ranks"] for e in events_of(gloo) if e.kind is Kind.STORE_ERROR] == [[2]]


def test_a_connect_to_a_link_local_address_counts_from_the_first_try(tmp_path: Path) -> None:
    # real: aws-samples/aws-do-eks#54 (EKS Pod Identity's pod-id-link0 among NCCL's socket interfaces)
    paste = ("NET/Socket : Using [0]enp73s0:10.1.216.156<0> [1]pod-id-link0:169.254.170.23<0>\n"
             "socketPollConnect: connect to 169.254.170.23<52333> returned Connection refused, retrying (13/34)\n"
             "RuntimeError: NCCL error: remote process exited or there was a network error\n")
    retry = one(paste.splitlines()[1], Kind.NCCL_CONNECT_FAILED)
    assert retry.data["peer_addr"] == "169.254.170.23" and retry.data["retrying"] is True
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and "169.254.170.23" in top.title
    # the same early try to a routable address is a peer not listening yet
    routable = "socketPollConnect: connect to 10.1.216.9<52333> returned Connection refused, retrying (13/34)\n"
    assert not [e for e in events_of(routable) if e.kind is Kind.NCCL_CONNECT_FAILED]


def test_ucxs_refused_connect_to_a_link_local_address(tmp_path: Path) -> None:
    # real: NVIDIA/NeMo-Aligner#541 (Open MPI's pml_ucx, started by an import, on a two-node Slurm job)
    paste = ("[1746051351.812265] [gcp5-sdc-3:1950659:0]            sock.c:334  UCX  ERROR   connect(fd=168, "
             "dest_addr=169.254.4.6:52595) failed: Connection refused\n"
             "[gcp5-sdc-3:1950659] pml_ucx.c:424  Error: ucp_ep_create(proc=0) failed: Destination is unreachable\n")
    event = one(paste.splitlines()[0], Kind.NCCL_CONNECT_FAILED)
    assert (event.data["transport"], event.data["peer_addr"], event.origin.host) == ("ucx", "169.254.4.6", "gcp5-sdc-3")
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.INTERFACE_MISMATCH
    # a refused connect to a routable address: the peer is not listening (A023)
    routable = paste.replace("169.254.4.6", "10.2.0.7")
    assert diagnose(tmp_path, routable).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_srun_lines_after_slurms_cancellation_are_its_aftermath(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning#20542 (the step's time limit; Lightning bypassed the SIGTERM)
    paste = ("slurmstepd: error: *** STEP 55595933.0 ON maestro-3017 CANCELLED AT 2025-01-10T15:27:25 DUE TO TIME LIMIT ***\n"
             "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
             "[rank: 0] Received SIGTERM: 15\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "time limit" in top.title and "maestro-3017" in top.title
    # a worker's own error after the cancellation is its own failure, not the cancellation's end
    worker = paste + "[rank: 0] RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert diagnose(tmp_path, worker).hypotheses[0].category is not Category.RANK_KILLED


_STALL = """[0]<stderr>:[2020-12-29 16:51:57.726092: W /tmp/horovod/common/stall_inspector.cc:105] One or more tensors \
were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for \
more than 60 seconds.
[0]<stderr>:Missing ranks:
[0]<stderr>:0: [broadcast.bool.sz]
[0]<stderr>:1: [allreduce.c_d1.bias, allreduce.c_d1.weight, allreduce.c_d2.bias]
"""


def test_horovod_rows_behind_mpiruns_tag_each_rank_lacking_another_tensor_is_a_desync(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning PR 5155 (a broadcast of rank 0's result in a checkpoint callback)
    top = diagnose(tmp_path, _STALL).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and top.culprit_ranks == (0, 1)
    assert "rank 0 lacks broadcast.bool.sz" in top.title
    # two ranks lacking the same tensors are late together, not in other collectives
    late = _STALL.replace("0: [broadcast.bool.sz]", "0: [allreduce.c_d1.bias, allreduce.c_d1.weight]")
    late_top = diagnose(tmp_path, late).hypotheses[0]
    assert late_top.category is Category.LAGGING_RANK and late_top.culprit_ranks == (0, 1)


def test_a_worker_named_by_pid_is_placed_by_ncclls_lines_of_that_pid(tmp_path: Path) -> None:
    # real: TIGER-AI-Lab/Mantis#11 (four ranks in one container, torchrun reports one killed by its pid)
    nccl = ("e7497f3c073c:{pid}:9752 [{r}] NCCL INFO comm 0x7ed4 rank {r} nranks 4 cudaDev {r} nvmlDev {r} busId {r}000 "
            "commId 0x273b00670b73d30e - Init COMPLETE\n")
    paste = "".join(nccl.format(pid=6955 + r, r=r) for r in range(4)) + (
        "E0715 08:53:42.146000 127238712194880 torch/distributed/elastic/multiprocessing/api.py:826] failed "
        "(exitcode: -9) local_rank: 2 (pid: 6957) of binary: /opt/python\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED
    assert top.culprit_ranks == (2,) and top.culprit_hosts == ("e7497f3c073c",)
    # the same pid on two hosts places nothing
    twice = paste + nccl.format(pid=6957, r=1).replace("e7497f3c073c", "other-host")
    assert diagnose(tmp_path, twice).hypotheses[0].culprit_hosts == ()


def test_docker_composes_service_prefix_before_pdshs() -> None:
    # real: deepspeedai/DeepSpeed#3146 (a launcher in one compose service reaching worker-0 with pdsh)
    line = ("deepspeed-worker-2-1  | worker-0: [W socket.cpp:426] [c10d] The server socket has failed to bind to "
            "[::]:49091 (errno: 98 - Address already in use).")
    assert one(line, Kind.STORE_ERROR).origin.host == "worker-0"
    assert one("web_1  | RuntimeError: boom", Kind.EXCEPTION).origin.host == "web_1"  # the container, alone
    assert all(e.origin.host is None for e in events_of("0 | model  | RuntimeError: boom"))  # a table's row is no service
