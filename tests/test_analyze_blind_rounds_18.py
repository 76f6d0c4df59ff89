"""Readings added in the session of the forty-sixth blind harvest (the r49* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_AGENT_EXIT = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 3124) of binary: python"


def test_a_build_without_nccl_is_the_configuration_not_the_worker_that_exited(tmp_path: Path) -> None:
    # real: kohya-ss/sd-scripts#1147 (Windows, accelerate launch with the nccl backend), mmsegmentation#1787
    paste = ("│ ❱ 1013 │   │   │   │   raise RuntimeError(\"Distributed package doesn't have NCCL \" \"built in\")   │\n"
             "RuntimeError: Distributed package doesn't have NCCL built in\n" + _AGENT_EXIT)
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "has no NCCL" in top.title
    assert "backend='gloo'" in top.fix and top.confidence > 0.6
    # the rendered traceback's source line alone (the raise, not the error) is not the refusal
    alone = diagnose(tmp_path, "raise RuntimeError(\"Distributed package doesn't have NCCL built in\")\n" + _AGENT_EXIT)
    assert not alone.hypotheses or "has no NCCL" not in alone.hypotheses[0].title
    # another exception of the worker stays its own crash
    other = diagnose(tmp_path, "RuntimeError: CUDA error: device-side assert triggered\n" + _AGENT_EXIT)
    assert "has no NCCL" not in other.hypotheses[0].title


def test_a_windows_store_without_libuv_and_a_process_without_a_gpu_are_named(tmp_path: Path) -> None:
    # real: pytorch#139990, fluxgym#82 (2.4+'s Windows wheels: "was build" as PyTorch spells it)
    libuv = "RuntimeError: use_libuv was requested but PyTorch was build without libuv support"
    top = diagnose(tmp_path, libuv).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "no libuv" in top.title and "USE_LIBUV=0" in top.fix
    nogpu = "ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!"
    top = diagnose(tmp_path, nogpu).hypotheses[0]
    assert "sees no GPU" in top.title and "nvidia-smi" in top.fix
    # the MPI backend on a wheel: built from source only
    top = diagnose(tmp_path, "RuntimeError: Distributed package doesn't have MPI built in").hypotheses[0]
    assert "has no MPI" in top.title and "USE_MPI=1" in top.fix


_SOCKET_LO = ("kubeflow-pytorch-gpu-dist-job-master-0:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> "
              "[1]eth0:192.168.4.230<0>")
_SOCKET_VETH = ("m5-autorl-test01:47324:48509 [0] NCCL INFO NET/Socket : Using [0]bond0:172.27.231.79<0> "
                "[1]veth8739016:fe80::5804:edff:fe5b:6570%veth8739016<0>")


def test_a_socket_device_on_the_loopback_or_a_veth_is_named_when_nothing_else_failed(tmp_path: Path) -> None:
    # real: kubeflow/pytorch-operator#202 (EKS, NCCL hangs where gloo works), Oneflow-Inc/libai#415 (a veth's
    # link-local address as the second socket device)
    for line, shown in ((_SOCKET_LO, "lo (127.0.0.1)"), (_SOCKET_VETH, "veth8739016 (fe80::")):
        top = diagnose(tmp_path, line + "\n" + line.split(" NCCL INFO")[0] + " NCCL INFO Using network Socket").hypotheses[0]
        assert top.category is Category.LOOPBACK_ADDRESS and shown in top.title
        assert top.confidence < 0.4 and "NCCL_SOCKET_IFNAME" in top.fix
    # only real NICs: nothing to say
    plain = _SOCKET_VETH.split(" [1]")[0]
    assert not diagnose(tmp_path, plain).hypotheses
    # a failure of another kind in the inputs is read by its own rule, the socket device is not offered
    crash = _SOCKET_LO + "\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert all(h.category is not Category.LOOPBACK_ADDRESS for h in diagnose(tmp_path, crash).hypotheses)


def test_a_heartbeat_monitor_below_the_same_ranks_timeout_is_the_timeouts_consequence(tmp_path: Path) -> None:
    # real: NVIDIA-NeMo/NeMo#9563 (no timestamps: the order of the lines in the one file is the order of events)
    timeout = ("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum=1363596, OpType=BROADCAST, NumelIn=5158880, NumelOut=5158880, Timeout(ms)=1800000) "
               "ran for 1800047 milliseconds before timing out.")
    stuck = ("[rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 1] [PG 0 Rank 1] ProcessGroupNCCL's watchdog got stuck "
             "for 600 seconds without making progress in monitoring enqueued collectives.")
    hyps = diagnose(tmp_path, timeout + "\n" + stuck).hypotheses
    assert hyps[0].category is not Category.WATCHDOG_STUCK
    assert any(h.category is Category.WATCHDOG_STUCK and h.confidence <= 0.2 for h in hyps)
    # the monitor's line above the timeout: the watchdog hung first, it stays the reading
    top = diagnose(tmp_path, stuck + "\n" + timeout).hypotheses[0]
    assert top.category is Category.WATCHDOG_STUCK and top.confidence >= 0.6
    # another rank's timeout above it says nothing of this rank's watchdog
    other = timeout.replace("[rank1]", "[rank0]").replace("[Rank 1]", "[Rank 0]")
    top = diagnose(tmp_path, other + "\n" + stuck).hypotheses[0]
    assert top.category is Category.WATCHDOG_STUCK and top.confidence >= 0.6


def test_nccls_ib_size_check_on_the_sending_side_is_a_desync(tmp_path: Path) -> None:
    # NCCL's net_ib.cc (2.12+ with the peer, 2.4-2.11 without): the IB twin of the socket's "message truncated"
    new = ("node1:1234:5678 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : req 0/1 tag 7 peer 10.0.0.2<49736> "
           "collective mismatch error, local size 1048576 remote size 524288")
    event = one(new, Kind.COLLECTIVE_MISMATCH)
    assert event.data["sent_bytes"] == 1048576 and event.data["posted_bytes"] == 524288
    assert event.data["peer_addr"] == "10.0.0.2"
    top = diagnose(tmp_path, new).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and "10.0.0.2" in top.title
    assert "1048576 bytes against 524288" in top.what
    old = ("node1:1234:5678 [0] NCCL WARN NET/IB : collective mismatch error local size 65536 remote 32768 "
           "addr 7f5a2c000000 rkey 1a2b seq 3/3")
    assert one(old, Kind.COLLECTIVE_MISMATCH).data["posted_bytes"] == 32768
    # the same transport's other sanity check (an invalid slot, no sizes to compare) is no desync
    other = "node1:1234:5678 [0] NCCL WARN NET/IB : req 0/1 tag 7 peer 10.0.0.2<49736> posted incorrect receive info"
    assert not [e for e in events_of(other) if e.kind is Kind.COLLECTIVE_MISMATCH]


def test_cuda_parts_that_do_not_fit_are_no_faulty_gpu(tmp_path: Path) -> None:
    # real: InternLM/lmdeploy#1108 (a driver for CUDA 11.7 under an 11.8 runtime from pip); the field's other two:
    # a build without the GPU's architecture, PTX from a newer compiler
    for message, said, fix in (
            ("CUDA driver version is insufficient for CUDA runtime version", "driver is older", "Upgrade the driver"),
            ("no kernel image is available for execution on the device", "no code for this GPU's architecture",
             "TORCH_CUDA_ARCH_LIST"),
            ("the provided PTX was compiled with an unsupported toolchain.", "newer CUDA than the driver",
             "Upgrade the driver")):
        line = f"gpu-a:1234:5678 [0] init.cc:1234 NCCL WARN Cuda failure '{message}'"
        top = diagnose(tmp_path, line).hypotheses[0]
        assert top.category is Category.UNRECOGNISED and said in top.title and "not at fault" in top.title
        assert fix in (top.fix or "") and "gpu-a" in top.title
    # a fault of the GPU itself keeps its reading
    fault = "gpu-a:1234:5678 [0] enqueue.cc:1234 NCCL WARN Cuda failure 'an illegal memory access was encountered'"
    top = diagnose(tmp_path, fault).hypotheses[0]
    assert top.category is Category.GPU_ERROR and "not at fault" not in top.title


def test_srun_naming_a_signal_with_its_core_dump_is_that_tasks_death(tmp_path: Path) -> None:
    # srun adds "(core dumped)" after the signal when the task dumped core
    event = one("srun: error: node-3: task 5: Segmentation fault (core dumped)", Kind.WORKER_FAILED)
    assert event.data["signal"] == "SIGSEGV" and event.data["tasks"] == "5" and event.origin.host == "node-3"
    top = diagnose(tmp_path, "srun: error: node-3: task 5: Segmentation fault (core dumped)").hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "node-3" in top.title
    # a user's text after the line is no part of it unless marked as a note
    assert not [e for e in events_of("srun: error: node-3: task 5: Segmentation fault (core dumped) twice today")
                if e.kind is Kind.WORKER_FAILED]


def test_paddles_store_retries_and_launcher_wait_are_an_unreachable_peer(tmp_path: Path) -> None:
    # real: PaddlePaddle/Paddle#48421 and PaddleSeg#2766 (the host's own address worked out as 0.1.68.146)
    retry = ("I1127 21:34:05.015228 3935673 tcp_utils.cc:107] Retry to connect to 0.1.68.146:63314 while the server "
             "is not yet listening.")
    event = one(retry, Kind.STORE_ERROR)
    assert event.data["store_host"] == "0.1.68.146" and event.data["store_port"] == 63314 and event.data["retrying"]
    top = diagnose(tmp_path, retry).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "0.1.68.146:63314" in top.title
    assert "0.0.0.0/8" in top.what
    wait = ("server not ready, wait 3 sec to retry...\n"
            "not ready endpoints:['0.1.68.146:38149', '0.1.68.146:35087', '0.1.68.146:56455']")
    top = diagnose(tmp_path, wait).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "the other trainers 0.1.68.146" in top.title
    # a routable address is said without the 0.0.0.0/8 note
    top = diagnose(tmp_path, retry.replace("0.1.68.146", "10.2.3.4")).hypotheses[0]
    assert "10.2.3.4:63314" in top.title and "0.0.0.0/8" not in top.what
    # the launcher's list when every endpoint answered is empty: nothing waited for
    assert not [e for e in events_of("not ready endpoints:[]") if e.kind is Kind.STORE_ERROR]


_JOINED = ("> > [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0. [0] NCCL INFO NCCL_IB_HCA set to "
           "mlx5_0:1,mlx5_1:1 [0] NCCL INFO NET/IB : No device found. [0] NCCL INFO NET/Socket : Using "
           "[0]eth0:10.47.14.218<0> [0] NCCL INFO Using network Socket")


def test_nccl_lines_run_together_without_their_host_are_read_apart(tmp_path: Path) -> None:
    # real: hiyouga/LlamaFactory#6111 (a quoted reply whose newlines were lost; the prefix cut to "[0]")
    envs = [e for e in events_of(_JOINED) if e.kind is Kind.NCCL_ENV]
    assert [e.data["name"] for e in envs] == ["NCCL_IB_DISABLE", "NCCL_IB_HCA"]  # one line, two events kept
    # a whole prefix before "[0] NCCL" is that line's own, not a second line
    whole = ("node1:11:22 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0:1 node1:11:22 [0] NCCL INFO NET/Socket : Using "
             "[0]eth0:10.0.0.1<0> node1:11:22 [0] NCCL INFO Using network Socket")
    events = events_of(whole)
    assert {e.origin.host for e in events} == {"node1"}
    assert [e.data["name"] for e in events if e.kind is Kind.NCCL_ENV] == ["NCCL_IB_HCA"]


def test_ib_asked_for_by_nccl_ib_hca_but_sockets_used_is_the_fallback(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _JOINED).hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK and "NCCL_IB_HCA asks for mlx5_0:1,mlx5_1:1" in top.title
    assert "/dev/infiniband" in (top.fix or "")
    # IB found and used: nothing to say
    used = _JOINED.replace("NET/IB : No device found.", "NET/IB : Using [0]mlx5_0:1/IB ;").replace(
        "Using network Socket", "Using network IB")
    assert all(h.category is not Category.SOCKET_FALLBACK for h in diagnose(tmp_path, used).hypotheses)
    # "^mlx5_0" excludes NICs: nobody asked for IB (NCCL_IB_DISABLE=0 beside it does, since 2026-12-05: without it)
    excluded = _JOINED.replace("set to mlx5_0:1,mlx5_1:1", "set to ^mlx5_0:1").replace(
        "NCCL_IB_DISABLE set by environment to 0.", "")
    assert all(h.category is not Category.SOCKET_FALLBACK for h in diagnose(tmp_path, excluded).hypotheses)


def test_a_peer_refused_at_libvirts_bridge_is_named_by_the_other_host(tmp_path: Path) -> None:
    # real: horovod/horovod#414 (Open MPI's TCP transport dialled virbr0's 192.168.122.1)
    line = ("[centos01][[32355,1],2][btl_tcp_endpoint.c:796:mca_btl_tcp_endpoint_complete_connect] connect() to "
            "192.168.122.1 failed: Connection refused (111)")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and "libvirt" in top.title and "virbr0" in top.fix
    assert top.culprit_hosts == ()  # the refused process dialled it: it is not the one that gave it
    # with a second host in the inputs, that one advertised it
    other = "[centos02][[32355,1],3][btl_tcp_endpoint.c:796:mca_btl_tcp_endpoint_complete_connect] connect() to 10.0.0.1 failed: Connection refused (111)"
    top = diagnose(tmp_path, line + "\n" + other).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and top.culprit_hosts == ("centos02",)
    # a VM's own address on libvirt's network (not the bridge's .1) is just an unreachable peer
    vm = line.replace("192.168.122.1 failed", "192.168.122.57 failed")
    assert diagnose(tmp_path, vm).hypotheses[0].category is Category.PEER_UNREACHABLE


_BAD_IF = ("WARNING: An invalid value was given for btl_tcp_if_include.  This\nvalue will be ignored.\n"
           "  Local host: node211\n  Value:      em1\n  Message:    {message}\n")


def test_open_mpis_interface_list_naming_an_interface_a_host_lacks_is_a_missing_interface(tmp_path: Path) -> None:
    # real: horovod/horovod#2159 (em1 on one host, eno1 on the other)
    paste = _BAD_IF.format(message="Unknown interface name") + (
        "\nAt least one pair of MPI processes are unable to reach each other for\nMPI communications.")
    event = one(paste, Kind.INTERFACE_MISSING)
    assert event.data["ifname"] == "em1" and event.origin.host == "node211"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.INTERFACE_MISSING and top.culprit_hosts == ("node211",)
    assert "em1" in top.title and "10.0.0.0/24" in (top.fix or "")
    # the same warning for another reason (a malformed subnet) names no missing interface
    other = _BAD_IF.format(message="Invalid specification (missing \"/\")")
    assert not [e for e in events_of(other) if e.kind is Kind.INTERFACE_MISSING]


def test_two_machines_with_one_host_name_are_named(tmp_path: Path) -> None:
    # real: horovod/horovod#148 (both servers called node1; NCCL set up CUDA IPC between them)
    lines = ("node1:18225:18239 [0] INFO NET : Using interface eth1:100.102.32.176<0>\n"
             "node1:18226:18240 [1] INFO NET : Using interface eth1:100.102.32.176<0>\n"
             "node1:22671:22795 [1] INFO NET : Using interface eth1:100.102.32.175<0>\n"
             "node1:22671:22795 [1] INFO 1 -> 0 via P2P/IPC\n")
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert "both called node1" in top.title and "NCCL_HOSTID" in (top.fix or "")
    # one machine, its processes on one address: nothing
    one_machine = lines.replace("100.102.32.175", "100.102.32.176")
    assert all("both called" not in h.title for h in diagnose(tmp_path, one_machine).hypotheses)
    # one process printing two addresses (a second communicator on another NIC's address) is no second machine
    one_process = lines.replace("node1:22671:22795", "node1:18225:18239")
    assert all("both called" not in h.title for h in diagnose(tmp_path, one_process).hypotheses)


def test_a_socket_device_on_a_bridge_is_no_cause_for_a_job_on_one_machine(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1320 (all_reduce_perf -g 2: one process, two GPUs; the bridges listed do not matter)
    paste = ("#  Rank  0 Group  0 Pid    149 on     llm207 device  0 [0x56] NVIDIA A100-SXM4-80GB\n"
             "#  Rank  1 Group  0 Pid    149 on     llm207 device  1 [0x57] NVIDIA A100-SXM4-80GB\n"
             "llm207:149:157 [1] NCCL INFO NET/Socket : Using [0]eno1:172.17.120.207<0> [1]br-30d1aa8d4e26:172.31.0.1<0>\n"
             "llm207:149:157 [1] NCCL INFO Using network Socket\n")
    assert all(h.category is not Category.LOOPBACK_ADDRESS for h in diagnose(tmp_path, paste).hypotheses)
    # without the table, one process driving two GPUs says the same
    alone = "\n".join(paste.splitlines()[2:]) + "\nllm207:149:156 [0] NCCL INFO Using network Socket\n"
    assert all(h.category is not Category.LOOPBACK_ADDRESS for h in diagnose(tmp_path, alone).hypotheses)
    # a second host in nccl-tests' table: the job spans machines, the bridge is a suspect again
    across = paste.replace("#  Rank  1 Group  0 Pid    149 on     llm207", "#  Rank  1 Group  0 Pid    233 on     llm208")
    assert diagnose(tmp_path, across).hypotheses[0].category is Category.LOOPBACK_ADDRESS


def test_paddles_trainers_that_never_listened_are_ranks_that_never_joined(tmp_path: Path) -> None:
    # real: PaddleOCR#6455 (the launch run on 10.36.10.41 only), Paddle#44966 (two hosts given --ips in two orders)
    paste = ("server not ready, wait 3 sec to retry...\n"
             "not ready endpoints:['10.36.10.40:6070', '10.36.10.40:6071', '10.36.10.41:6073']\n"
             "server not ready, wait 3 sec to retry...\n"
             "not ready endpoints:['10.36.10.40:6070', '10.36.10.40:6071']\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_NEVER_JOINED and top.culprit_hosts == ("10.36.10.40",)  # the last list
    assert "--ips" in (top.fix or "")
    # an address no host has is the unreachable peer instead (Paddle#48421)
    nowhere = paste.replace("10.36.10.4", "0.1.68.14")
    assert diagnose(tmp_path, nowhere).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_ucx_completion_errors_read_as_ib_statuses(tmp_path: Path) -> None:
    # real: openucx/ucx#6000 (RoCE, HPC-X under Open MPI), ucx#2684 (the older verbs transport's words)
    mlx5 = ("[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 "
            "vend 0x81 hw_synd 0/0)")
    event = one(mlx5, Kind.IB_COMPLETION_ERROR)
    assert event.data["status"] == 12 and event.data["vendor_err"] == 129 and event.data["hca"] == "mlx5_0:1"
    assert event.origin.host == "compute001"
    top = diagnose(tmp_path, mlx5).hypotheses[0]
    assert top.category is Category.IB_UNREACHABLE_AT_INIT and "compute001" in top.title
    older = "[clx-orion-097:26451:0:26451] rc_verbs_iface.c:63   FATAL: send completion with error: transport retry counter exceeded"
    assert one(older, Kind.IB_COMPLETION_ERROR).data["status"] == 12
    flushed = mlx5.replace("Transport retry count exceeded", "WR flushed because QP in error state")
    assert one(flushed, Kind.IB_COMPLETION_ERROR).data["status"] == 5
    # the same words without UCX's syndrome are no completion (a log quoting the error in prose)
    assert not [e for e in events_of("we saw Transport retry count exceeded on mlx5_0:1/RoCE yesterday")
                if e.kind is Kind.IB_COMPLETION_ERROR]


def test_nvshmems_queue_pair_refused_by_the_nic_is_a_queue_pair_failure(tmp_path: Path) -> None:
    # real: NVIDIA/nvshmem#45 (NVSHMEM_IB_TRAFFIC_CLASS set on an InfiniBand link; DeepEP's IBGDA transport)
    line = ("15:35:48.149 /opt/nvshmem/nvshmem_src/src/modules/transport/ibgda/ibgda.cpp:1393: non-zero status: 121 "
            "Error in mlx5dv_devx_obj_modify for INIT2RTR_QP with syndrome 764216")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.IB_MODIFY_QP and top.title.startswith("NVSHMEM")
    assert "NVSHMEM_IB_TRAFFIC_CLASS" in (top.fix or "")


def test_ucxs_failed_work_request_index_dates_a_retry_exceeded(tmp_path: Path) -> None:
    # real: StanfordLegion/legion#1650 (wqe[1069]: traffic had flowed, packets dropped later), openucx/ucx#6000
    # (wqe[0] on every queue pair during MPI_Init: the NICs never reached each other)
    late = ("[cn355:11558:0:11678] ib_mlx5_log.c:171  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend "
            "0x81 hw_synd 0/0)\n[cn355:11558:0:11678] ib_mlx5_log.c:171  RC QP 0x1cc0 wqe[1069]: SEND --e [inl len 84]\n")
    assert one(late, Kind.IB_COMPLETION_ERROR).data["wqe"] == 1069
    assert diagnose(tmp_path, late).hypotheses[0].category is Category.IB_LINK_FAILURE
    first = late.replace("wqe[1069]", "wqe[0]")
    assert diagnose(tmp_path, first).hypotheses[0].category is Category.IB_UNREACHABLE_AT_INIT
    # no index below it: the phase stays unknown (at init, at a lower confidence)
    alone = late.splitlines()[0]
    top = diagnose(tmp_path, alone).hypotheses[0]
    assert top.category is Category.IB_UNREACHABLE_AT_INIT and top.confidence < 0.85


def test_ucxs_queue_pair_modify_refused_is_a_queue_pair_failure(tmp_path: Path) -> None:
    # real: openucx/ucx#4986 (UCX_IB_SL=2, a service level the subnet does not map)
    line = ("[1586174287.331106] [clx-hercules-015:32494:0]     ib_mlx5_dv.c:217  UCX  ERROR "
            "mlx5dv_devx_qp_modify(503) failed, syndrome 0: Invalid argument")
    event = one(line, Kind.IB_MODIFY_QP)
    assert event.data["errno"] == 22
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.IB_MODIFY_QP and top.title.startswith("UCX") and "UCX_IB_SL" in (top.fix or "")


def test_tensorflows_out_of_memory_under_horovod_is_that_ranks_oom(tmp_path: Path) -> None:
    # real: horovod/horovod#1152 (GPT-2 on TensorFlow, rank 1's allocation)
    line = ("[1,1]<stderr>:tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
            "with shape[2,1023,50257] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc")
    assert one(line, Kind.CUDA_OOM).data["gpu"] == 0
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_ranks == (1,)
    # TensorFlow's other resource errors are no GPU memory
    other = line.replace("OOM when allocating tensor with", "Ran out of threads for")
    assert not [e for e in events_of(other) if e.kind is Kind.CUDA_OOM]


def test_the_kernels_record_of_a_segfault_is_that_process_crash(tmp_path: Path) -> None:
    # real: Project-HAMi/HAMi#1055 (workers crashing inside the vGPU library; dmesg pasted)
    line = ("[1835488.737042] python[3864703]: segfault at 0 ip 00007efeb76ad8a2 sp 00007ffd19dc5450 error 4 in "
            "libvgpu.so[7efeb767e000+38000]")
    event = one(line, Kind.FATAL_SIGNAL)
    assert event.origin.pid == 3864703 and event.data["library"] == "libvgpu.so"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "3864703" in top.title
    gp = "traps: python[1234] general protection fault ip:7f00 sp:7ffd error:0 in libc.so.6[7f00+1000]"
    assert one(gp, Kind.FATAL_SIGNAL).origin.pid == 1234


def test_a_store_at_127_0_1_1_is_the_hosts_own_name_on_loopback(tmp_path: Path) -> None:
    # real: yeyupiaoling/PPASR#142 (--master 127.0.1.1 from `hostname -i`; the second host retried forever)
    retry = ("I0224 13:50:30.278173 1512912 tcp_utils.cc:107] Retry to connect to 127.0.1.1:63917 while the server is "
             "not yet listening.")
    top = diagnose(tmp_path, retry).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and "127.0.1.1:63917" in top.title and "hostname -I" in (top.fix or "")
    assert top.confidence < 0.6 and "if the job spans hosts" in top.title  # one process's lines: maybe one machine
    spans = "node2: " + retry + "\nnode1: " + retry.replace("1512912", "1498980")  # a line from each of two hosts
    top = diagnose(tmp_path, spans).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and top.confidence == 0.8
    # 127.0.0.1 is the usual single-machine store: no such reading
    local = retry.replace("127.0.1.1", "127.0.0.1")
    assert all(h.category is not Category.LOOPBACK_ADDRESS for h in diagnose(tmp_path, local).hypotheses)


def test_an_exclusion_list_that_lets_nccl_take_the_loopback_is_said(tmp_path: Path) -> None:
    # real: aws/deep-learning-containers#3964 and kubeflow/mpi-operator#57 (NCCL_SOCKET_IFNAME=^docker0, bootstrap on lo)
    paste = ("9dc3329bb310:48:48 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker0\n"
             "9dc3329bb310:48:48 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n"
             "9dc3329bb310:48:48 [0] include/alloc.h:125 NCCL WARN Cuda failure 500 'named symbol not found'\n")
    hyps = diagnose(tmp_path, paste).hypotheses
    assert hyps[0].category is Category.UNRECOGNISED and "missing from the driver" in hyps[0].title
    lo = next(h for h in hyps if h.category is Category.LOOPBACK_ADDRESS)
    assert "^docker0" in lo.title and "does not name lo" in lo.title and lo.confidence < 0.5


def test_the_stores_listen_failure_with_its_code_and_no_name_is_a_port_in_use(tmp_path: Path) -> None:
    # real: ServiceNow/PipelineRL#27 (several vLLM instances on one host picked one port; the paste cut at "-9")
    cut = ("RuntimeError: The server socket has failed to listen on any local network address. port: 46571, "
           "useIpv6: 0, code: -9")
    event = one(cut, Kind.STORE_ERROR)
    assert event.data["store_port"] == 46571 and event.data["cut"]
    top = diagnose(tmp_path, cut).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and top.confidence == 0.6 and "cut the code" in top.what
    whole = cut.replace("code: -9", "code: -98")
    assert diagnose(tmp_path, whole).hypotheses[0].confidence == 0.8
    # another code (EBADF, -9, followed by its name) is no port in use
    assert not [e for e in events_of(cut + ", name: EBADF, message: bad file descriptor") if e.kind is Kind.STORE_ERROR]


def test_a_process_group_without_a_backend_for_the_device_is_the_configuration(tmp_path: Path) -> None:
    # real: intel/torch-xpu-ops#1328 (torchtune on Aurora: oneCCL's bindings could not load for XPU)
    paste = ("UserWarning: Warning: Cannot load xpu CCL. CCL doesn't work for XPU device due to libintel-ext-pt-gpu.so: "
             "cannot open shared object file: No such file or directory\n"
             "[rank0]: RuntimeError: No backend type associated with device type xpu\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "no backend for xpu" in top.title and "xccl" in (top.fix or "")


def test_slingshot_systems_own_setup_errors_are_named(tmp_path: Path) -> None:
    # real: OLCF's Frontier guide (MPI_Init after torch changed the CPU binding) and ALCF's Aurora known issues
    nic = ("MPICH ERROR: Unable to use a NIC_POLICY of 'NUMA'. Rank 4 is not confined to a single NUMA node.  There "
           "are 4 numa_nodes detected (rc=0).\nMPICH ERROR [Rank 0] [job id 2853270.0] [Fri Dec 13 13:41:36 2024] "
           "[frontier05084] - Abort(2665871) (rank 0 in comm 0): Fatal error in PMPI_Init_thread: Other MPI error")
    top = diagnose(tmp_path, nic).hypotheses[0]
    assert "NIC policy NUMA to rank 4" in top.title and top.culprit_ranks == (4,) and "mpi4py" in (top.fix or "")
    cxi = ("libfabric:16642:1701636928::cxi:core:cxip_cq_eq_progress():531<warn> x4204c1s3b0n0: Cassini Event Queue "
           "overflow detected.")
    top = diagnose(tmp_path, cxi).hypotheses[0]
    assert "event queue overflowed" in top.title and top.culprit_hosts == ("x4204c1s3b0n0",)
    assert "FI_CXI_DEFAULT_CQ_SIZE" in (top.fix or "")
    # Cray MPICH's abort alone (another reason) names its rank's failure, not a NIC policy
    alone = nic.split("\n", 1)[1]
    assert all("NIC policy" not in h.title for h in diagnose(tmp_path, alone).hypotheses)
