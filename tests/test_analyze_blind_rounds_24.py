"""Readings added in the session of the seventy-second blind harvest (the r75* cases of the real corpus), one
behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, events_of
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.torch_watchdog import parse_work

diagnose = diagnose_paste


# (the kernel's hung task and its lost NFS server are read as a process stuck in file I/O now:
# tests/test_analyze_blind_rounds_41.py)
@pytest.mark.parametrize("line", [
    "NCCL collective timeout: WorkNCCL(SeqNum=16, OpType=COALESCED, NumelIn=0, NumelOut=0)",
    "Device 0: Timed out while waiting for active ethernet core (x=24,y=25) to become active again.",
    "RPC call to sample_tokens timed out",
    "DeepEP dispatch NVL receiver timeout, channel: 9, RDMA: 1, nvl: 3, src RDMA: 0",
    "  Exception raised from ncclCommWatchdog at /opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
    "1389 (most recent call first):",
    "#1  0x000014753985ae05 in abort () from /lib64/libc.so.6",
    "Communication_Error_Get_Socket(EI0006)",
    "kernel: BUG: soft lockup - CPU#12 stuck for 22s! [python:1234]",
    "malloc(): corrupted top size",
    "*** stack smashing detected ***: terminated",
    "what():  std::bad_alloc",
    "NCCL operation hung on rank 3",
    "[TP5] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
    "nvidia-smi: No devices were found",
    "Exception in thread Thread-3:",
    "Worker 3 died unexpectedly",
    "Connection to 10.0.0.2 closed by remote host.",
    "packet_write_wait: Connection to 10.0.0.5 port 22: Broken pipe",
    "[1] Abort: got signal 15",
    "application called MPI_Abort(MPI_COMM_WORLD, 1) - process 3",
    "zsh: illegal hardware instruction  python train.py",
    "pytorch-worker-1   0/1     CrashLoopBackOff   5    10m",
    "pytorch-worker-2   0/1     Evicted            0    3h",
    "  Warning  FailedScheduling  0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
    "ining-demo/0 [default0]:[rank0]: Exception: Simulating a crash at step 10!",
    "[GRP-MBP:1234] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
    "Your application will now abort().",
    "1 job process is considered dead (unreachable via the RAS network)",
    "Encountered 3 communication timeouts while gathering communicator data",
    "localhost: Permission denied, please try again.",
    "[PG ID 0 PG GUID 0 Rank 3] Process group watchdog thread terminated with excepti",
    "[PG ID 0 PG GUID 0(default_pg) Rank 3] Work timeout is detected by watchdog",
    "[NeMo E 2025-01-01 10:00:00 straggler_det_callback:101] Detected stragglers. Terminating training...",
    "[drm] Tile0: GT0: Check job timeout: seqno=4, lrc_seqno=4, guc_id=2, not started",
    "FAILED: train.py",
    "torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 3/3 attempts left; will restart",
    "gloo::EnforceNotMet",
])
def test_a_wait_that_ran_out_or_an_abort_in_any_programs_words_is_never_silence(tmp_path: Path, line: str) -> None:
    assert [e.kind for e in events_of(line)] == [Kind.ERROR_LINE], line
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and line.strip("* ")[:30] in top.title


@pytest.mark.parametrize("line", ["CUDA driver version is insufficient for CUDA runtime version",
                                  "The NVIDIA driver on your system is too old (found version 10020)."])
def test_a_driver_older_than_the_cuda_runtime_is_cuda_software_that_does_not_fit(tmp_path: Path, line: str) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "not at fault" in top.title, top.title


def test_a_cgroups_oom_kill_reason_alone_is_the_oom_killer(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "OOM kill reason: user cgroup memory upper bound was met or exceeded\n").hypotheses[0]
    assert top.category is Category.RANK_KILLED and "OOM killer" in top.title, top.title
    # mpirun's daemon lost, its block cut after the first line: never silence
    assert diagnose(tmp_path, "ORTE has lost communication with its daemon located on node:\n").hypotheses


@pytest.mark.parametrize("line", ["NaN detected in loss at step 1200", "loss is nan, stopping training"])
def test_a_nan_a_programs_own_check_stopped_on_is_that_process_stopping(tmp_path: Path, line: str) -> None:
    assert [e.kind for e in events_of(line)] == [Kind.ERROR_LINE]
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "NaN" in top.title, top.title


def test_the_nccl_backend_without_gpus_in_its_own_words_alone(tmp_path: Path) -> None:
    top = diagnose(tmp_path, "ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n").hypotheses[0]
    assert "sees no GPU" in top.title and top.confidence >= 0.8, top.title


@pytest.mark.parametrize("line", ["connect to 10.0.0.1 port 29500: Connection refused", "[Errno 111] Connection refused"])
def test_a_refused_connection_in_any_words_is_a_peer_that_could_not_be_reached(tmp_path: Path, line: str) -> None:
    assert [e.kind for e in events_of(line)] == [Kind.ERROR_LINE], line
    assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.PEER_UNREACHABLE


@pytest.mark.parametrize("line", [
    "collective timeout: 1800",
    "Setting the socket read timeout to 30 s",
    "  rendezvous timeout (s): 900",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
    "export TORCH_NCCL_BLOCKING_WAIT=1 NCCL_TIMEOUT=1800",
    "#1  0x00007f5e1c2a4b75 in pthread_cond_wait () from /lib64/libpthread.so.0",
    "  watchdog timeout: 300",
    "The trainer got stuck-detection enabled: stuck_timeout=600",
    "Setting up the heartbeat timeout to 60 s",
    "Corrupted files are skipped",
    "Warning: Permanently added 'node2' (ECDSA) to the list of known hosts.",
    "the old driver's support for GPUs found in 2016 was dropped",
    "Backoff limit set to 4; eviction policy: none",
    "prefix cache: Evicted 3 blocks, hit rate 0.92",
    "  job timeout: 3600",
    "No Exception handler registered; using the default",
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.5",
    "grad_norm: NaN (skipped by the scaler)",
])
def test_an_options_timeout_or_a_waiting_frame_is_no_error(line: str) -> None:
    assert not [e for e in events_of(line) if e.kind is Kind.ERROR_LINE], line


def test_a_line_read_for_a_fact_is_an_error_too_when_it_says_one(tmp_path: Path) -> None:
    line = ("Error: failed to run torchrun --nproc_per_node=8 --nnodes=2 --node_rank=0 --master_addr=192.168.0.64 "
            "--master_port=29500 benchmark.py on 192.168.0.64, is localhost: True, exception: I/O operation on closed file")
    kinds = {e.kind for e in events_of(line)}
    assert kinds == {Kind.STORE_ENDPOINT, Kind.ERROR_LINE}
    assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.UNRECOGNISED
    # the same fact in a launcher's plain words stays a fact
    plain = "torchrun --nproc_per_node=8 --nnodes=2 --node_rank=0 --master_addr=192.168.0.64 --master_port=29500 t.py"
    assert {e.kind for e in events_of(plain)} == {Kind.STORE_ENDPOINT}


def test_a_watchdog_line_cut_after_its_sequence_number_is_that_ranks_timeout(tmp_path: Path) -> None:
    assert parse_work("WorkNCCL(SeqNum=55574, Op") == {"SeqNum": "55574"}
    assert parse_work("WorkNCCL(SeqNum=55574, OpType=ALLREDUCE, Timeout(ms)=1800") == {
        "SeqNum": "55574", "OpType": "ALLREDUCE"}
    assert parse_work("WorkNCCL(SeqNum=555") is None  # the number itself cut
    full = ("[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL("
            "SeqNum=55574, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1800452 milliseconds before timing out.")
    paste = "\n".join(full.format(r=r) for r in (3, 7, 1, 6, 0)) + (
        "\n[E ProcessGroupNCCL.cpp:828] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=55574, Op\n")
    cut = [e for e in events_of(paste.splitlines()[-1]) if e.kind is Kind.WATCHDOG_TIMEOUT]
    assert len(cut) == 1 and cut[0].seq == 55574 and cut[0].origin.rank == 4
    top = diagnose(tmp_path, paste).hypotheses[0]
    # rank 4 timed out as well: it is not the one missing, and nothing says which rank held them up
    assert 4 not in top.culprit_ranks and top.category is Category.UNEXPLAINED_TIMEOUT, top.title


_NET = "{host}:{pid}:{pid} [0] NCCL INFO NET/IB : Using {nics} [RO]; OOB eth0:10.10.98.{n}<0>\n"


def _nics(count: int, skip: int | None = None) -> str:
    return " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(count) if i != skip)


def test_a_host_that_lists_fewer_of_the_same_nics_has_one_down(tmp_path: Path) -> None:
    paste = (_NET.format(host="gpu-a", pid=11, nics=_nics(8, skip=7), n=12)
             + _NET.format(host="gpu-b", pid=12, nics=_nics(8), n=8))
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.IB_PORT_DOWN and top.culprit_hosts == ("gpu-a",), top.title
    assert "mlx5_7" in top.title and top.confidence < 0.5 and "ibstat" in top.fix
    # the same lists everywhere, or lists of different NICs (another configuration per host), say nothing
    same = _NET.format(host="gpu-a", pid=11, nics=_nics(8), n=12) + _NET.format(host="gpu-b", pid=12, nics=_nics(8), n=8)
    assert not diagnose(tmp_path, same).hypotheses
    other = (_NET.format(host="gpu-a", pid=11, nics="[0]mlx5_bond_0:1/RoCE", n=12).replace("/RoCE", "/IB")
             + _NET.format(host="gpu-b", pid=12, nics=_nics(2), n=8))
    assert not diagnose(tmp_path, other).hypotheses
    # most hosts listing fewer: the odd host out has an extra NIC, not the others one down
    three = "".join(_NET.format(host=f"gpu-{h}", pid=10 + i, nics=_nics(8, skip=None if h == "c" else 7), n=i)
                    for i, h in enumerate("abc"))
    assert not diagnose(tmp_path, three).hypotheses


def test_accelerates_refusal_of_rtx_4000_cards_is_their_missing_peer_access(tmp_path: Path) -> None:
    paste = ("[rank1]:     raise NotImplementedError(\n"
             "[rank1]: NotImplementedError: Using RTX 4000 series doesn't support faster communication broadband via "
             "P2P or IB. Please set `NCCL_P2P_DISABLE=\"1\"` and `NCCL_IB_DISABLE=\"1\" or use `accelerate launch` which "
             "will do this automatically.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PEER_ACCESS and "NCCL_P2P_DISABLE=1" in top.fix and "rank 1" in top.title
    other = "[rank1]: NotImplementedError: Using RTX 3000 series is fine but this op is not implemented\n"
    assert diagnose(tmp_path, other).hypotheses[0].category is not Category.PEER_ACCESS


_RCCL = ('node01:5646:5646 [0] /build/hipify/src/init.cc:136 NCCL WARN Missing "iommu=pt" from kernel command line '
         "which can lead to system instablity or hang!\n")


def test_rccls_iommu_warning_is_a_lead_beside_a_network_plugins_own_failure(tmp_path: Path) -> None:
    ucx = ("node01:5646:5657 [0] ucx_plugin.c:498 NCCL WARN Failed: UCX error ucx_plugin.c:498 '-5' Invalid parameter\n"
           "node01:5646:5657 [0] NCCL INFO /build/hipify/src/transport/net.cc:858 -> 3\n")
    top = diagnose(tmp_path, _RCCL + ucx).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "UCX network plugin" in top.title, top.title
    assert "NCCL_PLUGIN_P2P" in top.fix
    # with the IPC between the GPUs failing it is the verdict
    ipc = "node01:5646:5657 [0] /build/hipify/src/transport/p2p.cc:256 NCCL WARN hipIpcGetMemHandle failed : invalid argument\n"
    top = diagnose(tmp_path, _RCCL + ipc).hypotheses[0]
    assert top.category is Category.PEER_ACCESS and "iommu=pt" in top.title and top.confidence >= 0.8


_RECORD = ("100%|██████████| 160/160 [00:02<00:00, 54.08it/s, train_loss=0.678]\n"
           "  time      : 2024-02-08_07:41:38\n"
           "  host      : trainer-5ff484847d-kcvm5\n"
           "  rank      : 1 (local_rank: 1)\n"
           "  exitcode  : 1 (pid: 132514)\n"
           "  error_file: /tmp/torchelastic_uj0dmabn/none_6_icvi7m/attempt_0/1/error.json\n")


def test_a_failure_record_pasted_without_its_table_names_its_rank(tmp_path: Path) -> None:
    failed = [e for e in diagnose(tmp_path, _RECORD).hypotheses if e.culprit_ranks]
    top = diagnose(tmp_path, _RECORD).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,), top.title
    assert top.culprit_hosts == ("trainer-5ff484847d-kcvm5",) and failed
    # an exit code of 0 is no failure, and a record whose rank line the paste cut names no rank
    assert not diagnose(tmp_path, _RECORD.replace("exitcode  : 1", "exitcode  : 0")).hypotheses
    cut = _RECORD.replace("  rank      : 1 (local_rank: 1)\n", "")
    assert all(not h.culprit_ranks for h in diagnose(tmp_path, cut).hypotheses)


def test_an_inline_code_span_over_several_lines_is_taken_off_the_lines(tmp_path: Path) -> None:
    paste = "`OSError: [Errno 39] Directory not empty: 'location/to/CKPT'\n`\n"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "OSError" in top.title, top.title
    closed = ("`[1,13]<stdout>:worker-1:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb completed with "
              "error. RC: 20. Error: unknown error.\n[1,13]<stderr>:libfabric:35:1668::efa:cq:rxr_cq_write_tx_error():243"
              "<warn> rxr_cq_write_tx_error: err: 20, prov_err: Not a directory (20)`\n")
    assert 13 in diagnose(tmp_path, closed).hypotheses[0].culprit_ranks
    # a line that only quotes a name in backticks keeps them
    assert "`train.py`" in events_of("Error: could not open `train.py` for reading")[0].text


def _ompi_connect(host: str, addr: str, error: str) -> str:
    return ("--------------------------------------------------------------------------\n"
            "WARNING: Open MPI failed to TCP connect to a peer MPI process.  This\nshould not happen.\n\n"
            "Your Open MPI job may now hang or fail.\n\n"
            f"  Local host: {host}\n  PID:        24783\n  Message:    connect() to {addr}:1026 failed\n"
            f"  Error:      {error}\n"
            "--------------------------------------------------------------------------\n")


def test_open_mpis_failed_tcp_connect_names_the_address_it_dialled(tmp_path: Path) -> None:
    local = diagnose(tmp_path, _ompi_connect("pi02", "169.254.140.13", "Resource temporarily unavailable (11)"))
    top = local.hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and "169.254.140.13" in top.title, top.title
    assert "btl_tcp_if_include" in top.fix
    quiet = diagnose(tmp_path, _ompi_connect("node-a", "10.7.0.188", "Operation now in progress (115)")).hypotheses[0]
    assert quiet.category is Category.INTERFACE_MISMATCH and quiet.confidence == 0.5 and "no answer" in quiet.title
    assert "node-a" in quiet.title and "firewall" in quiet.title
    # a container bridge's default address, the same on every host running Docker or libvirt: the peers announce it
    bridge = diagnose(tmp_path, _ompi_connect("node1", "172.17.0.1", "Operation now in progress (115)")).hypotheses[0]
    assert bridge.category is Category.INTERFACE_MISMATCH and "docker0" in bridge.title and bridge.confidence == 0.75
    # a refused connection is a peer that is not there (or a firewall that says so), not this reading
    refused = diagnose(tmp_path, _ompi_connect("node-a", "10.7.0.188", "Connection refused (111)")).hypotheses
    assert all("no answer" not in h.title for h in refused)


def test_a_failed_completion_with_its_verbs_status_in_any_rdma_programs_words(tmp_path: Path) -> None:
    line = ("[rdma/providers/ib/rdma_data_channel_impl_ib.cc:186] pollOnce - channel_id: 1, CQE error, wr_id=0, "
            "status=5 (Work Request Flushed Error)")
    event = [e for e in events_of(line) if e.kind is Kind.IB_COMPLETION_ERROR]
    assert len(event) == 1 and event[0].data["status"] == 5
    assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.IB_COMPLETION
    twelve = "rdma_engine.cc:88] completion error on qp 0x1c: status: 12"
    assert [e.data["status"] for e in events_of(twelve) if e.kind is Kind.IB_COMPLETION_ERROR] == [12]
    # a status that is no verbs status, or no error
    assert not [e for e in events_of("CQE error, wr_id=0, status=77") if e.kind is Kind.IB_COMPLETION_ERROR]
    assert not [e for e in events_of("completion queue polled, status=0 ok") if e.kind is Kind.IB_COMPLETION_ERROR]
