"""NCCL INFO and WARN lines in every layout of shared/reference/nccl-facts.md section 3: prefixes with and
without timestamps, ``(func)`` since 2.30.7, the empty line before WARN up to 2.25, launcher prefixes, and
the IB completion error of each version range."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import events_of, one, read
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.prefixes import split_nccl

P = "node1:1234:1290 [3] NCCL INFO "
# The WARN prefix of each release line: <= 2.25 (no timestamp; an empty line before it), 2.26-2.30.4
# (timestamp), 2.30.7+ (timestamp and the function).
WARN_PREFIXES = [
    "node1:1234:1290 [3] misc/socket.cc:484 NCCL WARN ",
    "[2025-03-01 10:00:00] node1:1234:1290 [3] misc/socket.cc:484 NCCL WARN ",
    "[2026-06-01 10:00:00] node1:1234:1290 [3] misc/socket.cc:484 (socketProgress) NCCL WARN ",
]
LAUNCHER_PREFIXES = ["", "[rank3]:", "[1,3]<stdout>:", "[default3]:", "3: "]


@pytest.mark.parametrize("prefix", LAUNCHER_PREFIXES)
@pytest.mark.parametrize("nccl", [
    "node1:1234:1290 [3] NCCL INFO ",
    "[2025-03-01 10:00:00] node1:1234:1290 [3] NCCL INFO ",
])
def test_info_prefix_gives_host_and_pid_under_any_launcher(prefix, nccl) -> None:
    event = one(f"{prefix}{nccl}Bootstrap : Using eth0:10.10.6.118<0>", Kind.NCCL_BOOTSTRAP)
    assert event.origin.host == "node1" and event.origin.pid == 1234
    if prefix in ("[rank3]:", "[1,3]<stdout>:", "3: "):
        assert event.origin.rank == 3
    if prefix == "[default3]:":
        assert event.origin.local_rank == 3 and event.origin.rank is None


@pytest.mark.parametrize(("line", "version"), [
    ("NCCL version 2.19.3+cuda12.3", "2.19.3"),  # <= 2.21: printed bare
    (P + "NCCL version 2.25.1+cuda12.2", "2.25.1"),  # >= 2.22 at INFO
    ("[rank0]:NCCL version 2.21.5+cuda12.4", "2.21.5"),
    (P + "NCCL version 2.30.7-1+cuda13.0", "2.30.7"),
])
def test_version(line, version) -> None:
    assert one(line, Kind.NCCL_VERSION).data["version"] == version


@pytest.mark.parametrize(("message", "ifname", "addr"), [
    ("Bootstrap : Using eth0:10.10.6.118<0>", "eth0", "10.10.6.118"),  # <= 2.23
    ("Bootstrap: Using eth0:10.10.6.118<0>", "eth0", "10.10.6.118"),  # >= 2.24
    ("Bootstrap : Using [0]ens192f1:10.150.178.134<0>", "ens192f1", "10.150.178.134"),  # <= 2.7
    ("Bootstrap : Using ib0:fe80::a288:c203:d2:aaf2%ib0<0>", "ib0", "fe80::a288:c203:d2:aaf2%ib0"),
    ("Bootstrap : Using docker0:172.17.0.1<0>", "docker0", "172.17.0.1"),
])
def test_bootstrap_every_layout(message, ifname, addr) -> None:
    event = one(P + message, Kind.NCCL_BOOTSTRAP)
    assert (event.data["ifname"], event.data["addr"]) == (ifname, addr)


@pytest.mark.parametrize(("message", "expected"), [
    ("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB eth0:10.10.6.118<0>",
     {"net": "IB", "devices": ["mlx5_0:1/IB", "mlx5_1:1/IB", "mlx5_2:1/IB", "mlx5_3:1/IB"], "oob_addr": "10.10.6.118"}),
    ("NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB enp220s0np0:11.1.128.136<0>",
     {"net": "IB", "devices": ["mlx5_10:1/RoCE", "mlx5_11:1/RoCE"], "oob_ifname": "enp220s0np0"}),
    ("NET/IB: Using [0]mlx5_0:1:0:0/IB [1]mlx5_1:1:1:0/IB; OOB eth0:10.0.0.1<0>",  # 2.30.7 rail:plane
     {"net": "IB", "devices": ["mlx5_0:1/IB", "mlx5_1:1/IB"]}),
    ("NET/Socket : Using [0]ens7:10.128.0.32<0>", {"net": "Socket", "ifnames": ["ens7"], "addrs": ["10.128.0.32"]}),
    ("NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.1.0.1<0>", {"ifnames": ["eth0", "eth1"]}),
    ("Using network IB", {"network": "IB"}),
    ("Using network Socket", {"network": "Socket"}),
    ("Using network IBext", {"network": "IBext"}),
    # 2.28.9 on a host without IB (real, tests/fixtures/analyze/gpu): the IB plugin lists no device
    ("NET/IB : Using [RO]; OOB eth0:192.0.2.2<0>", {"net": "IB", "devices": [], "oob_ifname": "eth0",
                                                    "oob_addr": "192.0.2.2"}),
])
def test_net_selection(message, expected) -> None:
    events = [e for e in events_of(P + message) if e.kind is Kind.NCCL_NET]
    assert len(events) == 1
    for key, value in expected.items():
        assert events[0].data[key] == value


@pytest.mark.parametrize(("message", "rank", "nranks", "extra"), [
    ("ncclCommInitRank comm 0x55d0c8a0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 1b000 commId 0x5ae77eb5ea4ec1ee - "
     "Init COMPLETE", 3, 16, {"comm_id": "0x5ae77eb5ea4ec1ee", "nvml_dev": "3"}),  # >= 2.21
    ("ncclCommInitRankConfig comm 0x55d0c8a0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 1b000 commId 0x1 - Init "
     "COMPLETE", 3, 16, {}),
    ("comm 0x557fe785f7a0 rank 36 nranks 64 cudaDev 4 nvmlDev 4 busId 9b000 commId 0x5ae77eb5ea4ec1ee - Init "
     "COMPLETE", 36, 64, {"bus_id": "9b000"}),  # 2.18-2.20
    ("comm 0x7fdf08000d00 rank 15 nranks 16 cudaDev 7 busId e7000 - Init COMPLETE", 15, 16, {"bus_id": "e7000"}),
    ("ncclCommSplit comm 0x7f00 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 2000 parent 0x55d0c8a0 childCount 1 "
     "color 0 key 1 - Init COMPLETE", 1, 4, {"parent": "0x55d0c8a0"}),
    # 2.28.9 (real, tests/fixtures/analyze/gpu): ncclCommInitRankConfig with a short busId, and a split
    ("ncclCommInitRankConfig comm 0x4451b6d0 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 60 commId 0x9795cf6232fc1b9a "
     "- Init COMPLETE", 0, 1, {"bus_id": "60", "comm_id": "0x9795cf6232fc1b9a", "comm": "0x4451b6d0"}),
    ("ncclCommSplit comm 0x4be13df0 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 60 parent 0x4451b6d0 splitCount 1 "
     "color 59908776 key 0 - Init COMPLETE", 0, 1, {"parent": "0x4451b6d0"}),
])
def test_init_complete_every_layout(message, rank, nranks, extra) -> None:
    event = one(P + message, Kind.NCCL_INIT)
    assert (event.data["comm_rank"], event.data["nranks"]) == (rank, nranks)
    assert event.origin.host == "node1" and event.origin.pid == 1234
    for key, value in extra.items():
        assert event.data[key] == value


def test_init_start_is_read() -> None:
    event = one(P + "ncclCommInitRankConfig comm 0x43dd00c0 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 60 commId "
                    "0xf83afc6319a2484d - Init START", Kind.NCCL_INIT_START)
    assert (event.data["bus_id"], event.data["comm_id"], event.origin.pid) == ("60", "0xf83afc6319a2484d", 1234)


def test_chatter_is_not_parsed() -> None:
    # (Init START is read since 2026-12-02, Abort COMPLETE since 2026-12-03: the GPU each process is on, for the
    # duplicate-GPU check; a ring or channel to the next rank since 2026-12-03: the rank of its process)
    # (``NET/IB : No device found.`` is read since 2026-12-05: where IB was asked for, a socket fallback)
    assert [e.data for e in events_of(P + "NET/IB : No device found.")] == [{"no_ib_device": True}]
    for message in ("Failed to initialize NET plugin IB", "Initialized NET plugin Socket",
                    "Channel 00/64 : 0",
                    "Init timings - ncclCommInitRankConfig: rank 0 nranks 1 total 0.26 (kernels 0.25, alloc 0.00)",
                    "Connected all rings",
                    "comm 0x55 rank 3 nRanks 32 nNodes 4 localRanks 8 localRank 3 MNNVL 0", "Trees [0] 4/-1/-1->3->2"):
        assert events_of(P + message) == []


# IB completion errors, one layout per version range: (message, status, vendor, peer, hca)
IB_ERRORS = [
    ("NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129", 12, 129, None, None),  # <= 2.9
    ("NET/IB : Got completion from peer fe80::966d:ae03:8b:df54%ib0<33397> with error 4, opcode 32611, len 32611, "
     "vendor err 81 (Send)", 4, 81, "fe80::966d:ae03:8b:df54%ib0", None),  # 2.10-2.19
    ("NET/IB : Got completion from peer 10.0.0.2<43021> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
     12, 129, "10.0.0.2", None),
    ("NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
     "localGid fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f", 12, 129,
     "10.216.210.236", None),  # 2.20-2.22
    ("NET/IB: Got completion from peer 10.0.0.2<43021> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
     "::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2 hca mlx5_3", 12, 129, "10.0.0.2", "mlx5_3"),  # 2.23-2.28
    ("NET/IB: Got completion from peer 10.0.0.2<43021> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV(128) "
     "vendor_err=129 localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2 hca mlx5_3", 12, 129, "10.0.0.2",
     "mlx5_3"),  # 2.29+
    ("NET/IB: Got completion from peer 10.0.0.2<43021> with status=transport retry counter exceeded(12) "
     "opcode=send(0) vendor_err=129 hca mlx5_1", 12, 129, "10.0.0.2", "mlx5_1"),
    # a paste that wrapped the line: the rest went to the next line (real: ml-engineering, debug/pytorch.md)
    ("NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len", 12, None, "10.2.0.5", None),
    ("NET/IB : Got completion from peer 10.2.0.5<33092> with error 4,", 4, None, "10.2.0.5", None),
]


@pytest.mark.parametrize("prefix", WARN_PREFIXES)
@pytest.mark.parametrize(("message", "status", "vendor", "peer", "hca"), IB_ERRORS)
def test_ib_completion_errors_every_version(prefix, message, status, vendor, peer, hca) -> None:
    event = one(prefix + message, Kind.IB_COMPLETION_ERROR)
    assert (event.data["status"], event.data["vendor_err"]) == (status, vendor)
    assert event.data.get("peer_addr") == peer and event.data["hca"] == hca
    assert event.origin.host == "node1" and event.origin.pid == 1234
    if status == 12:
        assert event.data["status_text"] == "transport retry counter exceeded"


@pytest.mark.parametrize(("message", "name", "value"), [
    ("NCCL_SOCKET_IFNAME set by environment to nosuch0", "NCCL_SOCKET_IFNAME", "nosuch0"),  # 2.28.9, real
    ("NCCL_SOCKET_IFNAME set by environment to ^docker,lo", "NCCL_SOCKET_IFNAME", "^docker,lo"),
    ("NCCL_IB_HCA set by environment to =mlx5_0:1,mlx5_1:1", "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"),
    ("NCCL_COLLNET_ENABLE set by environment to 1.", "NCCL_COLLNET_ENABLE", "1"),
])
def test_env_settings(message, name, value) -> None:
    event = one(P + message, Kind.NCCL_ENV)
    assert (event.data["name"], event.data["value"]) == (name, value)
    assert (event.origin.host, event.origin.pid) == ("node1", 1234)


@pytest.mark.parametrize("prefix", WARN_PREFIXES)
@pytest.mark.parametrize(("message", "where"), [
    ("Bootstrap : no socket interface found", "Bootstrap"),
    ("NET/Socket : no interface found", "NET/Socket"),
])
def test_no_socket_interface(prefix, message, where) -> None:
    event = one(prefix.replace("misc/socket.cc:484", "bootstrap.cc:114") + message, Kind.INTERFACE_MISSING)
    assert event.data["transport"] == "nccl" and event.data["where"] == where and event.data["ifname"] is None
    assert (event.origin.host, event.origin.pid) == ("node1", 1234)


def test_real_228_no_interface_warn_line() -> None:
    event = one("[2026-11-29 19:38:22] vm:709:709 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface "
                "found", Kind.INTERFACE_MISSING)
    assert (event.origin.host, event.origin.pid, event.time_text) == ("vm", 709, "2026-11-29 19:38:22")


def test_warn_timestamp_and_function_are_read() -> None:
    event = one(WARN_PREFIXES[2] + IB_ERRORS[4][0], Kind.IB_COMPLETION_ERROR)
    assert event.time_text == "2026-06-01 10:00:00" and event.time is not None
    prefix = split_nccl(WARN_PREFIXES[2] + "x")
    assert prefix is not None and prefix.function == "socketProgress" and prefix.source_file == "misc/socket.cc:484"


def test_empty_line_before_warn_up_to_225() -> None:
    events = read(f"{P}Connected all rings\n\n{WARN_PREFIXES[0]}socketProgress: Connection closed by remote peer "
                  "node2<43021>\n")
    closed = [e for e in events if e.kind is Kind.PEER_CLOSED]
    assert len(closed) == 1 and closed[0].ref.line == 3


WARNS = [
    ("Call to ibv_modify_qp failed with 22 Invalid argument, on dev mlx5_0:1, curr state INIT, next state RTR, local "
     "GID index 3, local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.0.2", Kind.IB_MODIFY_QP,
     {"errno": 22, "gid_index": 3, "dev": "mlx5_0:1"}),
    ("Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_3:1", Kind.IB_MODIFY_QP, {"errno": 110}),
    ("Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory", Kind.MEMLOCK_FAILURE, {}),
    ("Call to ibv_reg_mr failed with error Cannot allocate memory", Kind.MEMLOCK_FAILURE, {}),
    ("NET/IB : Call to ibv_create_qp failed", Kind.MEMLOCK_FAILURE, {}),
    ("Error: failed to extend /dev/shm/nccl-Fs7rW9 to 9637892 bytes, error: No space left on device (28)",
     Kind.SHM_FAILURE, {"bytes": 9637892, "path": "/dev/shm/nccl-Fs7rW9"}),
    ("unlink shared memory /dev/shm/nccl-Fs7rW9 failed, error: No such file or directory (2)", Kind.SHM_FAILURE,
     {"unlink": True}),
    ("socketStartConnect: Connect to 10.0.0.2<43021> failed : Connection refused", Kind.NCCL_CONNECT_FAILED,
     {"peer_addr": "10.0.0.2", "error": "Connection refused"}),
    ("Net : Connect to 10.1.1.1<1234> failed : No route to host", Kind.NCCL_CONNECT_FAILED, {"peer_addr": "10.1.1.1"}),
    ("ncclOsSocketConnect: connect to 10.0.0.2<43021> returned Connection timed out, exceeded error retry count "
     "after 35 attempts", Kind.NCCL_CONNECT_FAILED, {"attempts": 35}),
    ("socketProgress: Connection closed by remote peer node2<43021>", Kind.PEER_CLOSED,
     {"peer_addr": "node2", "how": "closed"}),
    ("Net : Connection closed by remote peer 10.0.0.2<12345>", Kind.PEER_CLOSED, {"peer_addr": "10.0.0.2"}),
    ("socketProgressOpt: Call to recv from 10.0.0.2<43021> failed : Connection reset by peer", Kind.PEER_CLOSED,
     {"how": "reset"}),
    ("ncclOsSocketProgressOpt: Call to recv from 10.0.0.2<43021> failed : Connection reset by peer", Kind.PEER_CLOSED,
     {"how": "reset"}),
    ("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000", Kind.DUPLICATE_GPU,
     {"ranks": [1, 0], "device": "1b000"}),
    ("Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this "
     "configuration.", Kind.DUPLICATE_GPU, {}),
    ("Cuda failure 217 'peer access is not supported between these two devices'", Kind.PEER_ACCESS,
     {"cuda_error": 217}),
    ("failed to open CUDA IPC handle : 217 peer access is not supported between these two devices", Kind.PEER_ACCESS,
     {"cuda_error": 217}),
    ("Failed to initialize any NET plugin", Kind.NCCL_WARN, {}),
]


@pytest.mark.parametrize("prefix", WARN_PREFIXES)
@pytest.mark.parametrize(("message", "kind", "expected"), WARNS)
def test_warn_classification_every_layout(prefix, message, kind, expected) -> None:
    event = one(prefix + message, kind)
    for key, value in expected.items():
        assert event.data[key] == value


@pytest.mark.parametrize(("line", "error"), [
    ("RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled "
     "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3", "unhandled system error"),
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, remote "
     "process exited or there was a network error, NCCL version 2.21.5", "remote process exited or there was a network "
                                                                         "error"),
    ("ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
     "ncclRemoteError"),
])
def test_nccl_errors_surfaced_by_pytorch(line, error) -> None:
    assert one(line, Kind.NCCL_ERROR).data["error"] == error


@pytest.mark.parametrize("line", [
    "Error: rank 27 and rank 19 both on CUDA device 53000 (PCI 53:00.0)",  # quoted without NCCL's prefix
    "Duplicate GPU detected : rank 27 and rank 19 both on CUDA device 53000",
])
def test_duplicate_gpu_without_the_warn_prefix(line) -> None:
    event = one(line, Kind.DUPLICATE_GPU)
    assert event.data == {"ranks": [27, 19], "device": "53000"}


def test_duplicate_gpu_names_both_ranks_as_culprits(tmp_path) -> None:
    (tmp_path / "paste.log").write_text("Error: rank 27 and rank 19 both on CUDA device 53000 (PCI 53:00.0)\n"
                                        "Error: rank 29 and rank 21 both on CUDA device 91000 (PCI 91:00.0)\n")
    analysis = analyze_paths([str(tmp_path / "paste.log")])
    root = analysis.diagnosis.root_cause
    assert root is not None and root.category is Category.DUPLICATE_GPU
    assert root.culprit_ranks == (19, 21, 27, 29) and "27/19" in root.title and "29/21" in root.title


def test_info_lines_never_become_warnings() -> None:
    # NCCL's retry of a refused connect (before 2.19) is a connect still being retried, never a warning
    events = events_of(P + "Call to connect returned Connection refused, retrying")
    assert not [e for e in events if e.kind is Kind.NCCL_WARN]
    (retry,) = [e for e in events if e.kind is Kind.NCCL_CONNECT_FAILED]
    assert retry.data["retrying"] is True and retry.data["error"] == "Connection refused"


_RETRY = "pytorch-fairseq-worker-0:16:63 [0] NCCL INFO Call to connect returned Connection refused, retrying\n"


def test_refused_connects_still_retried_when_the_paste_ends_are_the_unreachable_peer(tmp_path: Path) -> None:
    # real: facebookresearch/fairseq#1096 (NCCL 2.4, Kubernetes pods): the paste is these retries and nothing else
    (tmp_path / "paste.log").write_text(_RETRY * 3)
    root = analyze_paths([str(tmp_path / "paste.log")]).diagnosis.hypotheses[0]
    assert root.category is Category.PEER_UNREACHABLE and root.confidence == 0.5
    assert "still retrying" in root.title and root.culprit_hosts == ("pytorch-fairseq-worker-0",)


def test_refused_connects_retried_before_the_communicator_formed_are_startup(tmp_path: Path) -> None:
    (tmp_path / "paste.log").write_text(_RETRY + "pytorch-fairseq-worker-0:16:63 [0] NCCL INFO comm 0x1 rank 0 "
                                        "nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n")
    hypotheses = analyze_paths([str(tmp_path / "paste.log")]).diagnosis.hypotheses
    assert Category.PEER_UNREACHABLE not in {h.category for h in hypotheses}
