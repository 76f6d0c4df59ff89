"""Rank, host and time attribution from line prefixes and file names."""

from __future__ import annotations

import pytest

from syncdoctor.analyze.model import Origin
from syncdoctor.analyze.parsers.prefixes import origin_from_path, parse_iso_time, split_nccl, split_prefix

# (line, rank, local_rank, pid, body, time_text)
PREFIXES = [
    ("[rank3]: RuntimeError: boom", 3, None, None, "RuntimeError: boom", ""),
    ("[rank12]:[E1129 12:59:46.221457616 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed", 12, None, None,
     "Gloo connectFullMesh failed", "11-29 12:59:46.221457616"),
    ("[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog", 0, None, None, "[Rank 0] Watchdog",
     "3-21 02:07:08.408271257"),
    ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog", None, None, None, "[Rank 1] Watchdog", ""),
    ("[default0]:[rank4]:hello", 4, 0, None, "hello", ""),
    ("[trainer1]: hello", None, 1, None, "hello", ""),
    ("3: node1:1234:1290 [3] NCCL INFO x", 3, None, None, "node1:1234:1290 [3] NCCL INFO x", ""),
    ("  7: text", 7, None, None, "text", ""),
    ("[1,5]<stdout>:node1:1:2 [5] NCCL INFO x", 5, None, None, "node1:1:2 [5] NCCL INFO x", ""),
    ("[1,5]<stderr>: Traceback (most recent call last):", 5, None, None, "Traceback (most recent call last):", ""),
    # horovodrun (Gloo), with and without its time; real: horovod/horovod#2431
    ("Tue Nov 10 10:05:04 2020[13]<stderr>:terminate called after throwing an instance of 'gloo::EnforceNotMet'", 13,
     None, None, "terminate called after throwing an instance of 'gloo::EnforceNotMet'", "Tue Nov 10 10:05:04 2020"),
    ("Mon Feb  3 01:02:03 2025[2]<stdout>:epoch 1", 2, None, None, "epoch 1", "Mon Feb  3 01:02:03 2025"),
    ("[0]<stdout>:hello", 0, None, None, "hello", ""),
    ("2024-05-01T12:00:00.123Z [rank2]: oops", 2, None, None, "oops", "2024-05-01T12:00:00.123Z"),
    ("E1129 13:48:19.207000 9834 .venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py:"
     "1002] failed (exitcode: 1) local_rank: 0 (pid: 9905) of binary: sh", None, None, 9834,
     "failed (exitcode: 1) local_rank: 0 (pid: 9905) of binary: sh", "11-29 13:48:19.207000"),
    ("W0417 01:02:03.000000 77 torch/distributed/run.py:792] ", None, None, 77, "", "04-17 01:02:03.000000"),
    ("plain line", None, None, None, "plain line", ""),
    ("[rank]: not a rank", None, None, None, "[rank]: not a rank", ""),
]


@pytest.mark.parametrize(("line", "rank", "local_rank", "pid", "body", "time_text"), PREFIXES)
def test_split_prefix(line, rank, local_rank, pid, body, time_text) -> None:
    prefix = split_prefix(line)
    assert (prefix.origin.rank, prefix.origin.local_rank, prefix.origin.pid) == (rank, local_rank, pid)
    assert prefix.body == body
    assert prefix.time_text == time_text
    assert (prefix.time is not None) is bool(time_text)


@pytest.mark.parametrize(("line", "host", "rank", "body"), [
    ("2024-05-01T10:00:01.123Z gpuq13: RuntimeError: CUDA out of memory.", "gpuq13", None, "RuntimeError"),
    ("2024-05-01T10:00:01.123Z 3: RuntimeError: x", None, 3, "RuntimeError"),
    ("[2024-05-01 10:00:01] node-7: Killed", "node-7", None, "Killed"),
    # a logger's dotted name, or a step counter, after a timestamp is no host
    ("2024-05-01 10:00:01,123 torch.distributed.run: x", None, None, "torch.distributed.run"),
    ("2024-05-01 10:00:01 step-12: loss 3.1", None, None, "step-12"),
])
def test_a_pipelines_timestamp_before_a_launchers_prefix(line, host, rank, body) -> None:
    # kubectl logs --timestamps, ts, a log collector: the stamp, then the line as pdsh or srun -l wrote it
    prefix = split_prefix(line)
    assert prefix.time_text.startswith("2024-05-01")
    assert (prefix.origin.host, prefix.origin.rank) == (host, rank) and prefix.body.startswith(body)


@pytest.mark.parametrize(("line", "host", "body"), [
    ("deepspeed-worker-2-1  | worker-0: Killed", "worker-0", "Killed"),  # the pdsh host after it names the host
    ("trainer_1  | RuntimeError: x", "trainer_1", "RuntimeError: x"),
    # a container named by container_name: no number, a dash or an underscore, two spaces of padding
    ("mistralrs-headnode  | Error: Address already in use (os error 98)", "mistralrs-headnode", "Error: Address"),
    ("gpu_worker  | RuntimeError: x", "gpu_worker", "RuntimeError: x"),
    # a table's first column is none
    ("loss      | 0.53 | 0.41", None, "loss      | 0.53"),
    ("train-loss | 0.53", None, "train-loss | 0.53"),
    ("epoch  | 3", None, "epoch  | 3"),
])
def test_docker_compose_service_prefix(line, host, body) -> None:
    prefix = split_prefix(line)
    assert prefix.origin.host == host and prefix.body.startswith(body)


@pytest.mark.parametrize(("line", "host", "pid", "body"), [
    ("[1652739463.054681] [cn0022:4071024:0]        ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed",
     "cn0022", 4071024, "ib_iface.c:1035 UCX  ERROR"),
    ("[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded", "compute001", 31180, "ib_mlx5_log"),
    ("[c5e62fb2396d:1618 :0]  tl_ucp_ep.c:43  TL_UCP ERROR ucp returned", "c5e62fb2396d", 1618, "tl_ucp_ep.c:43"),
    # UCX's signal handler has no source file after it: its parser reads that form
    ("[gpu1:12:0:12] Caught signal 11 (Segmentation fault)", None, None, "[gpu1:12:0:12] Caught"),
    # a bracketed list of numbers is none
    ("[1:2:3] loss 0.5 train.c:12 x", None, None, "[1:2:3]"),
])
def test_ucx_prefix(line, host, pid, body) -> None:
    prefix = split_prefix(line)
    assert (prefix.origin.host, prefix.origin.pid) == (host, pid) and prefix.body.startswith(body)


def test_glog_severity_and_file() -> None:
    prefix = split_prefix("[W1129 13:48:08.317968026 socket.cpp:207] [c10d] The hostname of the client socket")
    assert prefix.severity == "warning" and prefix.glog_file == "socket.cpp:207"


def test_times_order_within_one_clock() -> None:
    early = split_prefix("[E1129 23:59:59.9 a.cpp:1] x").time
    late = split_prefix("[E1130 00:00:00.1 a.cpp:1] x").time
    assert early is not None and late is not None and early < late
    iso, text = parse_iso_time("time      : 2026-11-29_13:48:19")
    assert iso is not None and text == "2026-11-29_13:48:19"


@pytest.mark.parametrize(("line", "host", "pid", "dev", "level", "func"), [
    ("node-7.cluster:48123:48200 [7] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>", "node-7.cluster", 48123, 7, "INFO", ""),
    ("[2025-03-01 10:00:00] gpu01:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : x", "gpu01", 1, 0, "WARN", ""),
    ("[2026-06-01 10:00:00] gpu01:1:2 [0] misc/socket.cc:484 (socketProgress) NCCL WARN x", "gpu01", 1, 0, "WARN",
     "socketProgress"),
    ("[rank1]:gpu01:1:2 [1] NCCL CALL ncclAllReduce(0x1,0x2,8,7,0,0x3,0x4)", "gpu01", 1, 1, "CALL", ""),
])
def test_split_nccl(line, host, pid, dev, level, func) -> None:
    prefix = split_nccl(line)
    assert prefix is not None
    assert (prefix.host, prefix.pid, prefix.device, prefix.level, prefix.function) == (host, pid, dev, level, func)


def test_split_nccl_rejects_non_nccl() -> None:
    assert split_nccl("host:1:2 [0] something else") is None


@pytest.mark.parametrize(("path", "expected"), [
    ("logs/rank3.log", Origin(rank=3)),
    ("logs/rank_12.txt", Origin(rank=12)),
    ("run/host1/rank2.log", Origin(rank=2, host="host1")),
    ("out/node-07/train.log", Origin(host="node-07")),
    ("/tmp/x/torchelastic/sdjob_abc/attempt_0/3/stderr.log", Origin(local_rank=3)),
    ("dumps/nccl_trace_rank_5", Origin(rank=5)),
    ("dumps/comm_lib_trace_rank_6", Origin(rank=6)),
    ("logs/worker3/attempt_1/0/stdout.log", Origin(local_rank=0, host="worker3")),
    ("logs/nid001234.rank-4.log", Origin(rank=4, host="nid001234")),
    ("logs/train.log", Origin()),
    ("logs/frank5.log", Origin()),
    ("logs/rank2/stdout.log", Origin(rank=2)),
    ("logs/Rank_3-node1/out.txt", Origin(rank=3)),
    # a longer directory name that mentions a rank describes the run, not the writer
    ("cases/loop-rank2-absent-timeout/log.txt", Origin()),
])
def test_origin_from_path(path, expected) -> None:
    assert origin_from_path(path) == expected
