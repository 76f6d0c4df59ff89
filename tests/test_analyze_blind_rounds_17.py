"""Readings added in the session of the fortieth blind harvest (the r43* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 52.00 MiB. GPU 0 has a total capacty of "
        "31.74 GiB of which 39.62 MiB is free. {procs}Including non-PyTorch memory, this process has 13.82 GiB memory "
        "in use. Of the allocated memory 11.54 GiB is allocated by PyTorch.")


def _procs(pids: list[int], size: str) -> str:
    return "".join(f"Process {pid} has {size} memory in use. " for pid in pids)


def test_an_out_of_memory_message_listing_the_jobs_ranks_on_its_gpu_says_they_share_one_device(
        tmp_path: Path) -> None:
    # real: rwth-i6/returnn#1469 (every worker on GPU 0: the message lists 15 processes of 1.19 GiB each on a 32 GiB
    # GPU; PyTorch 2.1 spells "capacty"; the NCCL line that gives the host is cut after "- Init")
    pids = list(range(101549, 101564))
    event = one(_OOM.format(procs=_procs(pids, "1.19 GiB")), Kind.CUDA_OOM)
    assert event.data["gpu"] == 0 and event.data["sharers"] == pids
    assert event.data["capacity_bytes"] == int(31.74 * 2**30)
    init = ("nd20-01:101560:130074 [12] NCCL INFO comm 0x66a0bb80 rank 12 nranks 16 cudaDev 12 busId e0000 "
            "commId 0x66b9ae567fdb3d69 - Init")
    assert one(init, Kind.NCCL_INIT_START).origin.host == "nd20-01"
    top = diagnose(tmp_path, _OOM.format(procs=_procs(pids, "1.19 GiB")) + "\n\n" + init).hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_hosts == ("nd20-01",)
    assert "15 processes holding memory on that GPU" in top.title and "set_device(local_rank)" in top.fix
    # three other ranks' stray CUDA contexts (474 MiB each on 63 GiB): not the cause, the usual advice stands
    small = _OOM.replace("31.74 GiB", "63.42 GiB").format(procs=_procs([7, 8, 9], "474.00 MiB"))
    top = diagnose(tmp_path, small).hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and "holding memory" not in top.title
    assert "set_device" not in top.fix
    # one other process (a monitor, a second job) is not a shared device either
    top = diagnose(tmp_path, _OOM.format(procs=_procs([7], "20.00 GiB"))).hypotheses[0]
    assert "holding memory" not in top.title


def test_the_stores_listen_failure_broken_after_its_first_line_is_a_port_in_use(tmp_path: Path) -> None:
    # real: TorchDR#249 (a shared Slurm node; 2.4+'s libuv message pasted as two lines)
    second = "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use"
    event = one(second, Kind.STORE_ERROR)
    assert event.data["what"] == "listen" and event.data["store_port"] == 29500
    paste = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
             "address.\n" + second)
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and "29500" in top.title
    # another reason (the address is not this host's: -99) is no port in use
    other = second.replace("-98, name: EADDRINUSE, message: address already in use",
                           "-99, name: EADDRNOTAVAIL, message: cannot assign requested address")
    assert not [e for e in events_of(other) if e.kind is Kind.STORE_ERROR]


def test_a_launchers_sigabrt_record_pasted_before_the_timeouts_of_its_rank_is_the_watchdogs_abort(
        tmp_path: Path) -> None:
    # real: hpcaitech/ColossalAI#3556 (the record first, then every shown rank's timeout in one BROADCAST)
    record = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 (pid: 514946) "
              "of binary: /usr/bin/python\n\n")
    timeouts = "".join(
        f"[E ProcessGroupNCCL.cpp:821] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=27962, "
        f"OpType=BROADCAST, Timeout(ms)=1800000) ran for 180758{r} milliseconds before timing out.\n"
        for r in (0, 1, 6, 7, 3, 5))
    top = diagnose(tmp_path, record + timeouts).hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT
    # a local rank whose number no timed-out rank has (its own crash, then the others' timeouts) stays a crash
    crashed = record.replace("local_rank: 0", "local_rank: 2")
    top = diagnose(tmp_path, crashed + timeouts).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_local_ranks == (2,)


def test_an_rdma_device_nccl_could_not_open_while_it_went_on_over_ib_is_a_nic_down(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#2428 (eRDMA: one node's second device not passed into the container)
    warn = "node-b:4021:4102 [0] NCCL WARN NET/IB : Unable to open device erdma_1"
    event = one(warn, Kind.IB_DEVICE_UNAVAILABLE)
    assert event.data["dev"] == "erdma_1"
    top = diagnose(tmp_path, "node-a:311:402 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/1\n"
                   + warn).hypotheses[0]
    assert top.category is Category.IB_PORT_DOWN and "erdma_1" in top.title and top.culprit_hosts == ("node-b",)
    # the same warning, then NCCL on sockets: the fallback, not a NIC down
    fallback = warn + "\nnode-b:4021:4102 [0] NCCL INFO Using network Socket"
    top = diagnose(tmp_path, fallback).hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK


def test_open_mpis_verbose_tcp_transport_and_its_unrouted_connect_are_the_wrong_interface(tmp_path: Path) -> None:
    # real: horovod/horovod#209 (a masqueraded Docker network) and #195 (a peer's address on another subnet)
    lines = "".join(f"[mydocker01:06805] btl: tcp: Match incoming connection from [[27443,1],1] 44.128.0.4 with "
                    f"locally known IP {ip} failed (iface {n}/4)!\n" for n, ip in enumerate(("2.2.2.77", "3.3.3.129")))
    event = one(lines.splitlines()[0], Kind.MPI_TRANSPORT)
    assert event.data["source_ip"] == "44.128.0.4" and event.origin.host == "mydocker01"
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH
    assert "44.128.0.4" in top.title and "2.2.2.77, 3.3.3.129" in top.title and "btl_tcp_if_include" in top.fix
    unrouted = ("[train04][[9281,1],1][btl_tcp_endpoint.c:796:mca_btl_tcp_endpoint_complete_connect] connect() to "
                "192.168.118.0 failed: No route to host (113)")
    top = diagnose(tmp_path, unrouted).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and top.culprit_hosts == ("train04",)
    # refused: a firewall or a process that is gone, not an interface: the unreachable peer
    refused = unrouted.replace("No route to host (113)", "Connection refused (111)")
    assert diagnose(tmp_path, refused).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_nccl_socket_ifname_set_to_the_loopback_in_a_failed_jobs_paste(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1053 (BGP-unnumbered hosts whose address sits on lo; one host's lines)
    paste = ("axa:3048391:3048566 [0] NCCL INFO net.cc:79 -> 3\n"
             "axa:3048391:3048566 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\n"
             "axa:3048391:3048566 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n"
             "axa:3048391:3048566 [0] NCCL INFO Using network Socket\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and top.culprit_hosts == ("axa",) and top.confidence < 0.5
    # the loopback NCCL found by itself on one host, nothing failing: a job on one node, no cause
    alone = paste.replace("axa:3048391:3048566 [0] NCCL INFO net.cc:79 -> 3\n", "").replace(
        "axa:3048391:3048566 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\n", "")
    assert not [h for h in diagnose(tmp_path, alone).hypotheses if h.category is Category.LOOPBACK_ADDRESS]
    # "^lo" excludes the loopback: the user did not choose it
    excluded = paste.replace("set by environment to lo", "set by environment to ^lo,docker")
    assert not [h for h in diagnose(tmp_path, excluded).hypotheses if h.category is Category.LOOPBACK_ADDRESS]
    # NCCL_SOCKET_IFNAME=lo with no error anywhere: a job on one node that works
    quiet = paste.replace("axa:3048391:3048566 [0] NCCL INFO net.cc:79 -> 3\n", "")
    assert not [h for h in diagnose(tmp_path, quiet).hypotheses if h.category is Category.LOOPBACK_ADDRESS]


def test_the_stores_listen_failure_wrapped_twice_still_names_the_port_in_use(tmp_path: Path) -> None:
    # real: a backend supervisor's log of FreeToken#301 (the message wrapped at its own words, three lines)
    paste = ("ERROR Backend supervisor: DistNetworkError: The server socket has failed to listen\n"
             "on any local network address. port: 8082, useIpv6: false, code: -98,\n"
             "name: EADDRINUSE, message: address already in use\n"
             "ERROR Backend worker is gone and cannot be restarted; stopping the API server")
    assert one("name: EADDRINUSE, message: address already in use", Kind.STORE_ERROR).data["store_port"] is None
    # a terminal's wrap at 120 columns cuts inside "name": its end still says it
    assert one("ame: EADDRINUSE, message: address already in use", Kind.STORE_ERROR).data["what"] == "listen"
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.PORT_IN_USE
    # a connect refused in libuv's words is no port in use
    assert not [e for e in events_of("name: ECONNREFUSED, message: connection refused") if e.kind is Kind.STORE_ERROR]


def test_an_invalid_device_ordinal_without_a_rank_is_the_one_worker_the_launcher_saw_fail(tmp_path: Path) -> None:
    # real: meta-llama/llama#454 (--nproc_per_node 2 on a machine with one GPU)
    error = ("RuntimeError: CUDA error: invalid device ordinal\n"
             "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
             "might be incorrect.\n\n"
             "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 84709 closing signal SIGTERM\n")
    record = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 84710) of "
              "binary: /usr/bin/python3\n")
    top = diagnose(tmp_path, error + record).hypotheses[0]
    # (more processes than visible GPUs: the launch, A028, since 2026-12-06)
    assert top.category is Category.UNRECOGNISED and top.culprit_local_ranks == (1,)
    # two workers failed: the lines do not say which raised it
    top = diagnose(tmp_path, error + record + record.replace("local_rank: 1 (pid: 84710)",
                                                             "local_rank: 0 (pid: 84709)")).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_local_ranks == ()


def test_ncclS_proxy_service_names_the_rank_of_its_process(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#962 (the proxy of rank 93 could not allocate its buffers)
    paste = ("node:2134736:2285781 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
             "node:2134736:2285781 [0] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes\n"
             "node:2134736:2285781 [0] proxy.cc:1518 NCCL WARN [Proxy Service 93] Failed to execute operation Setup "
             "from rank 93, retcode 1\n")
    event = one(paste.splitlines()[2], Kind.NCCL_WARN)
    assert event.origin.rank == 93 and event.origin.pid == 2134736
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_ranks == (93,)
    # the same words without the host:pid prefix name no process: no rank is given to anything
    bare = one("proxy.cc:1518 NCCL WARN [Proxy Service 93] Failed to execute operation Setup from rank 93, retcode 1",
               Kind.NCCL_WARN)
    assert bare.origin.rank is None


def test_a_cuda_call_nccl_made_that_cuda_refused_is_said_to_be_no_faulty_gpu(tmp_path: Path) -> None:
    # real: pie#500 (NVLS in a container without /dev/nvidia-caps) and TensorRT-LLM#4238 (NCCL 2.25.1)
    nvls = ("transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument'\n"
            "transport/nvls.cc:401 -> 1\ninit.cc:1138 -> 1\n")
    top = diagnose(tmp_path, nvls).hypotheses[0]
    assert top.category is Category.GPU_ERROR and "not a faulty GPU" in top.title and "NVLS" in top.title
    assert "NCCL_NVLS_ENABLE=0" in top.fix
    enqueue = "[1] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'\n"
    top = diagnose(tmp_path, enqueue).hypotheses[0]
    assert "not a faulty GPU" in top.title and "NVLS" not in top.title and "NCCL_NVLS_ENABLE" not in top.fix
    # an illegal memory access is the GPU's (or the program's) fault: the usual reading
    fault = enqueue.replace("1 'invalid argument'", "700 'an illegal memory access was encountered'")
    top = diagnose(tmp_path, fault).hypotheses[0]
    assert top.category is Category.GPU_ERROR and "not a faulty GPU" not in top.title


def test_vllms_worker_prefixes_give_the_workers_index_and_its_unprefixed_driver_is_local_rank_0(
        tmp_path: Path) -> None:
    from syncdoctor.analyze.parsers.prefixes import split_prefix

    # vLLM 0.8-0.9 and 0.10+ name the worker's index; a data-parallel engine other than the first leaves it unknown
    assert split_prefix("(VllmWorker rank=3 pid=4567) ERROR 05-01 10:00:00 [x.py:4] boom").origin.local_rank == 3
    assert split_prefix("(Worker_DP0_TP1_EP1 pid=4567) ERROR 05-01 10:00:00 [x.py:4] boom").origin.local_rank == 1
    assert split_prefix("(Worker_TP2 pid=4567) ERROR boom").origin.local_rank == 2
    assert split_prefix("(Worker_DP1_TP1_EP1 pid=4567) ERROR boom").origin.local_rank is None
    assert split_prefix("(RayWorkerWrapper pid=11305, ip=10.0.0.1) ERROR boom").origin.local_rank is None
    # real: vllm-project/vllm#6299 (the driver went off to build the P2P cache; its worker's gloo recv timed out)
    paste = ("(VllmWorkerProcess pid=3773) INFO 07-10 03:56:15 pynccl.py:63] vLLM is using nccl==2.20.5\n"
             "INFO 07-10 03:56:16 custom_all_reduce_utils.py:202] generating GPU P2P access cache in "
             "/root/.config/vllm/gpu_p2p_access_cache_for_0,1.json\n"
             "(VllmWorkerProcess pid=3773) ERROR 07-10 04:26:16 multiproc_worker_utils.py:226] Exception in worker "
             "VllmWorkerProcess while processing method init_device: [../third_party/gloo/gloo/transport/tcp/"
             "unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete, Traceback (most "
             "recent call last):\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_local_ranks == (0,) and "driver" in top.title
    # from 0.8 rank 0 is a worker with a prefix of its own: a worker's timeout there says nothing of a driver
    v1 = paste.replace("(VllmWorkerProcess pid=3773) ERROR", "(VllmWorker rank=1 pid=3773) ERROR")
    assert "driver" not in diagnose(tmp_path, v1).hypotheses[0].title
    # the same timeout printed by a process of no worker prefix names nobody
    bare = paste.replace("(VllmWorkerProcess pid=3773) ERROR", "ERROR")
    top = diagnose(tmp_path, bare).hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT and top.culprit_local_ranks == () and "driver" not in top.title


def test_the_kernels_oom_kill_summary_alone_is_a_worker_killed_for_host_memory(tmp_path: Path) -> None:
    # real: hiyouga/LLaMA-Factory#3230 (the kernel log cut inside its oom-kill line, before "Killed process")
    summary = ("[17798674.377396] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=38e6fab2d82b,"
               "mems_allowed=0-7,oom_memcg=/docker/38e6,task_memcg=/docker/38e6,task=python,pid=202779,uid=1000")
    event = one(summary, Kind.WORKER_FAILED)
    assert event.origin.pid == 202779 and event.data["cgroup"] is True and event.data["signal"] == "SIGKILL"
    top = diagnose(tmp_path, summary.split(",oom_memcg")[0]).hypotheses[0]
    assert top.category is Category.RANK_KILLED
    # a process's own word "oom-kill" in prose is nothing
    assert not [e for e in events_of("INFO: no oom-kill seen on this node") if e.kind is Kind.WORKER_FAILED]


def test_the_raylets_count_of_workers_killed_for_memory_pressure_behind_syslogs_escapes(tmp_path: Path) -> None:
    # real: vllm-project/vllm#1160 (rsyslog wrote ESC as #033; the message wrapped before its IP)
    paste = ("#033[2m#033[33m(raylet)#033[0m [2023-09-23 10:00:00] (raylet) node_manager.cc:3007: 2 Workers (tasks /"
             " actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: abd4"
             "06d415bd, IP: 10.0.167.26) over the last time period.")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("10.0.167.26",)
    none = paste.replace("2 Workers (tasks / actors) killed", "0 Workers (tasks / actors) killed")
    assert not [e for e in events_of(none) if e.kind is Kind.WORKER_FAILED]


def test_mpirun_losing_its_daemon_on_a_node_is_that_node_lost(tmp_path: Path) -> None:
    # real: aws/aws-parallelcluster#301 (the SGE shepherd's connection to the same node died at once)
    paste = ("--------------------------------------------------------------------------\n"
             "ORTE has lost communication with its daemon located on node:\n\n"
             "  hostname:  ip-10-15-20-17.ec2.internal\n\n"
             "This is usually due to either a failure of the TCP network\n"
             "connection to the node, or possibly an internal failure of\n"
             "the daemon itself.\n"
             "--------------------------------------------------------------------------\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.NETWORK_PARTITION and top.culprit_hosts == ("ip-10-15-20-17.ec2.internal",)
    # the daemons that never started are the launch's failure, as before
    unstarted = "ORTE was unable to reliably start one or more daemons.\n"
    assert diagnose(tmp_path, unstarted).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_torchruns_signal_exception_alone_is_the_job_ended_from_outside(tmp_path: Path) -> None:
    # real: THUDM/ChatGLM2-6B#262 (the terminal closed: SIGHUP, the paste keeps the traceback's end)
    paste = ("raise SignalException(f\"Process {os.getid()} got signal : {sigval}\" ,sigval=sigval)\n"
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 81061 got signal: 1\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "SIGHUP" in top.title and "nohup" in top.fix
    # beside a worker's own crash, the crash comes first
    crash = ("[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n" + paste)
    assert diagnose(tmp_path, crash).hypotheses[0].category is not Category.RANK_KILLED


def test_c10d_client_warnings_the_workers_ran_past_and_the_script_the_interpreter_could_not_open(
        tmp_path: Path) -> None:
    # real: meta-llama/llama#720 (Windows: 10049 for the name's first address, then the script was not there)
    warning = ("[W C:\\b\\abs\\work\\torch\\csrc\\distributed\\c10d\\socket.cpp:601] [c10d] The client socket has "
               "failed to connect to [Adam]:29500 (system error: 10049 - The requested address is not valid in its "
               "context.).\n")
    rest = ("D:\\anaconda3\\envs\\llama_env\\python.exe: can't open file 'example_completion.py': [Errno 2] No such "
            "file or directory\n"
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 2) local_rank: 0 (pid: 39992) of "
            "binary: D:\\anaconda3\\envs\\llama_env\\python.exe\n")
    event = one(rest.splitlines()[0], Kind.EXCEPTION)
    assert event.data["type"] == "FileNotFoundError" and "example_completion.py" in str(event.data["message"])
    top = diagnose(tmp_path, warning * 2 + rest).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_local_ranks == (0,)
    # the warnings alone, nothing run after them: the store could not be reached
    assert diagnose(tmp_path, warning * 2).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_a_store_port_the_system_refuses_and_ncclS_graph_capture_refusal(tmp_path: Path) -> None:
    # real: KimMeen/Time-LLM#26 (a port of 97: below 1024)
    denied = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
              "address. The server socket has failed to bind to [::]:97 (errno: 13 - Permission denied). The server "
              "socket has failed to bind to 0.0.0.0:97 (errno: 13 - Permission denied).")
    top = diagnose(tmp_path, denied).hypotheses[0]
    # (the job's setup, A028, since the hundred-and-eighty-second round: no port taken)
    assert top.category is Category.UNRECOGNISED and "permission denied" in top.title and "1024" in top.fix
    # real: InternLM/lmdeploy#2433 (NCCL built for CUDA 11.0 under a CUDA graph): no duplicate GPU is suggested
    graph = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
             "2395, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3\n"
             "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
             "NCCL cannot be captured in a graph if either it wasn't built with CUDA runtime >= 11.3 or if the "
             "installed CUDA driver < R465.\n")
    codes = [h.code for h in diagnose(tmp_path, graph).hypotheses]
    assert codes[0] == "A028" and "A016" not in codes
    bare = graph.replace("NCCL cannot be captured in a graph if either it wasn't built with CUDA runtime >= 11.3 or "
                         "if the installed CUDA driver < R465.\n", "")
    assert diagnose(tmp_path, bare).hypotheses[0].category is Category.DUPLICATE_GPU


def test_the_cuda_stub_driver_is_named_as_such(tmp_path: Path) -> None:
    # real: horovod/horovod#3625 (the toolkit's stubs directory before the driver's libcuda.so)
    line = "c940b4ae7a81:95:95 [1] NCCL WARN Cuda failure 'CUDA driver is a stub library'"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "stub" in top.title and "stubs" in top.fix


def test_ncclS_ring_and_channel_lines_give_the_rank_of_the_process_that_prints_them(tmp_path: Path) -> None:
    # real: pytorch/pytorch#37325 (NCCL 2.4.8 on AzureML: the shm failure of the process whose ring line is 39[7])
    ring = "eee7653100000Z:8602:9146 [7] NCCL INFO Ring 00 : 39[7] -> 88[0] via direct shared memory"
    event = one(ring, Kind.NCCL_CHANNEL)
    assert event.data["comm_rank"] == 39 and event.data["net"] is False
    received = one("node-a:14605:14688 [0] NCCL INFO Ring 01 : 2[b2000] -> 5[3d000] [receive] via NET/IB/0",
                   Kind.NCCL_CHANNEL)
    assert received.data["comm_rank"] == 5 and received.data["peer_rank"] == 2 and received.data["net"] is True
    # 2.7+ with the GRAPH subsystem: the process's rank between its ring neighbours
    assert one("node-a:1:2 [0] NCCL INFO Ring 00 : 3 -> 4 -> 5", Kind.NCCL_CHANNEL).data["comm_rank"] == 4
    # 2.7+'s channel lines, tens of thousands in a large job, are not scanned for (a communicator line gives the rank)
    assert not events_of("node-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC")
    warn = ("eee7653100000Z:8602:9146 [7] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
            "nccl-shm-recv-b3d6 (size 9637888)")
    top = diagnose(tmp_path, ring + "\n" + warn).hypotheses[0]
    assert top.category is Category.SHM_EXHAUSTED and top.culprit_ranks == (39,)
    # a process whose lines give it two ranks (two communicators) is given none
    other = ring.replace("Ring 00 : 39[7] -> 88[0]", "Ring 01 : 3[7] -> 4[0]")
    top = diagnose(tmp_path, ring + "\n" + other + "\n" + warn).hypotheses[0]
    assert top.category is Category.SHM_EXHAUSTED and top.culprit_ranks == ()


def test_intels_gpu_drivers_resetting_a_hung_job_is_the_gpus_error(tmp_path: Path) -> None:
    # real: intel/llm-scaler#595 (two Arc B70 with tensor parallelism; the kernel's log only)
    dmesg = ("[Tue Aug  4 20:51:21 2026] xe 0000:2b:00.0: [drm] Tile0: GT0: Timedout job: seqno=1484958, "
             "lrc_seqno=1484958, guc_id=0, flags=0x73 in no process [-1]\n"
             "[Tue Aug  4 20:51:21 2026] xe 0000:2b:00.0: [drm] Tile0: GT0: reset started\n")
    event = one(dmesg.splitlines()[0], Kind.GPU_ERROR)
    assert event.data["pci"] == "0000:2b:00.0" and event.data["hardware"] is True and event.origin.pid is None
    assert diagnose(tmp_path, dmesg).hypotheses[0].category is Category.GPU_ERROR
    i915 = "i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:85dffffb, in python [4242]"
    assert one(i915, Kind.GPU_ERROR).origin.pid == 4242
    # the driver's routine words are nothing
    assert not events_of("xe 0000:2b:00.0: [drm] Tile0: GT0: reset done")


def test_ascends_ei0002_names_the_group_peer_it_waited_for_and_its_code_is_no_host(tmp_path: Path) -> None:
    # real: vllm-project/vllm-ascend#3413 (RL with graph compilation: one rank of a 32-rank group never arrived)
    line = ("EI0002: [PID: 2969] 2025-10-11-15:09:34.713.335 The wait execution of the Notify register times out. "
            "Reason: The Notify register has not received the Notify record from remote rank: [24]. base "
            "information: [streamID:[109], taskID[38], taskType[Notify Wait], tag[AllReduce_group_name_1654]]")
    event = one(line, Kind.GLOO_TIMEOUT)
    assert event.data["group_peer"] == 24 and event.data["transport"] == "hccl" and event.origin.host is None
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and "remote rank 24 of its group" in top.title
    assert top.culprit_ranks == ()


def test_a_workers_sigkill_with_the_stores_root_gone_names_that_root(tmp_path: Path) -> None:
    # real: hiyouga/LLaMA-Factory#2012 (ZeRO-2 Mixtral: DeepSpeed's launcher saw -9; rank 6 lost rank 0's store)
    paste = ("RuntimeError: [6] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value "
             "store by key '0', but store->get('0') got error: Broken pipe. This may indicate a possible application "
             "crash on rank 0 or a network set up issue.\n"
             "[2023-12-27 11:01:09,316] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
             "'--local_rank=7'] exits with return code = -9\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_ranks == (0,)
    # the launcher's -9 alone names no rank
    top = diagnose(tmp_path, paste.splitlines()[1]).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_ranks == ()


_HCCL = "[ERROR] HCCL(2717288,python3):2025-07-23-03:47:57.070.463 [hccl_socket.cc:100] [2717288]"


def test_ascend_hccls_own_port_its_npu_nic_and_its_link_to_a_peer_that_never_came(tmp_path: Path) -> None:
    # real: vllm-project/vllm-ascend#1955 (the listen on HCCL's port failed; the other ranks' links then timed out)
    listen = (_HCCL + "[HcclSocket][Listen] socket type[1], listen on ip[192.168.20.160] and specific port[16666] fail."
              " Please check the port status and whether the port is been using by other process.")
    event = one(listen, Kind.STORE_ERROR)
    assert event.data["store_port"] == 16666 and event.origin.host == "192.168.20.160"
    top = diagnose(tmp_path, listen).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and top.culprit_hosts == ("192.168.20.160",)
    # real: vllm-project/vllm-ascend#1815 (the NPU's RDMA NIC did not start first: the listen failed after it)
    rdma = (_HCCL + "[Init][RDMA]errNo[0x000000000500000b] ra rdma init failed, devid[0] ip[192.168.20.160], "
            "notifyType[1], return[19]")
    top = diagnose(tmp_path, rdma + "\n" + listen).hypotheses[0]
    assert top.category is Category.IB_PORT_DOWN and "NPU0" in top.title
    assert "A029" not in [h.code for h in diagnose(tmp_path, rdma + "\n" + listen).hypotheses]
    # real: vllm-project/vllm-ascend#10591 (rank 7's link to rank 15 of the group timed out: 15 never came)
    link = (_HCCL + "[InitChannelStage][RunFailed]Transport init error! createLink para:rank[7]-localUserrank[7]-"
            "localIpAddr[80.5.5.39/7], remoteRank[15]-remoteUserrank[15]-remoteIpAddr[80.5.5.67/7]")
    assert one(link, Kind.GLOO_TIMEOUT).data["group_peer"] == 15
    top = diagnose(tmp_path, link).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and "remote rank 15" in top.title


def test_no_break_spaces_of_a_web_pages_copy_read_as_spaces(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#2047 (the log as the merged PR's text carries it: every space a no-break space)
    lines = ["VM-16-2-ubuntu:6682:6682 [0] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>",
             "VM-16-2-ubuntu:6682:6688 [0] NCCL INFO ncclOsSocketStartConnect: connect to 127.0.0.1<52243> returned "
             "Connection refused, retrying (1/34) after sleep for 100 msec"]
    paste = "\n".join(line.replace(" ", "\u00a0") for line in lines)
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and top.culprit_hosts == ("VM-16-2-ubuntu",)
    assert diagnose(tmp_path, "\n".join(lines)).hypotheses[0].category is Category.LOOPBACK_ADDRESS


def test_slurm_losing_a_node_is_the_job_ended_from_outside_on_that_node(tmp_path: Path) -> None:
    # real: huggingface/m4-logs tr_141 (training and validation went on normally until then)
    paste = ("** Finished validation **\n"
             "srun: error: Node failure on jean-zay-iam37\n"
             "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.\n"
             "slurmstepd: error: *** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT 2023-03-06T03:17:51 DUE TO NODE "
             "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n")
    event = one(paste.splitlines()[3], Kind.AGENT_SIGNAL)
    assert event.data["reason"] == "node failure" and event.origin.host == "jean-zay-iam17"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("jean-zay-iam37",)
    # a worker's own crash before it is that crash
    crash = "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n" + paste
    assert diagnose(tmp_path, crash).hypotheses[0].category is not Category.RANK_KILLED


def _gloo_timeout_at(rank: int, outer: tuple[str, int], inner: tuple[str, int]) -> str:
    return "".join(f"[rank{rank}]: {line}\n" for line in [
        "Traceback (most recent call last):",
        f'  File "/w/workload.py", line {outer[1]}, in {outer[0]}', f"    {inner[0]}()",
        f'  File "/w/workload.py", line {inner[1]}, in {inner[0]}', "    dist.all_reduce(t)",
        '  File "/x/torch/distributed/distributed_c10d.py", line 2050, in all_reduce', "    work.wait()",
        "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 5000ms "
        "for recv operation to complete"])


def test_a_host_cut_off_mid_step_is_the_partition_not_a_desync_of_its_rank(tmp_path: Path) -> None:
    # the lab's cut link (tests/test_analyze_e2e.py::test_cut_link), once caught mid-step in a clean-clone run: rank 2
    # stopped in the step's gradient all-reduce while the others had gone on to the metric's
    from syncdoctor.analyze import analyze_paths

    for host in ("host0", "host1", "host2"):
        (tmp_path / host).mkdir()
    (tmp_path / "host0" / "rank0.log").write_text(_gloo_timeout_at(0, ("_train", 429), ("reduce_metric", 351)))
    (tmp_path / "host1" / "rank1.log").write_text(_gloo_timeout_at(1, ("_train", 429), ("reduce_metric", 351)))
    (tmp_path / "host2" / "rank2.log").write_text(
        _gloo_timeout_at(2, ("backward", 316), ("all_reduce_gradients", 321)))
    top = analyze_paths([str(tmp_path)]).diagnosis.hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and top.culprit_ranks == (2,)  # nothing says it was cut off
    (tmp_path / "host2" / "agent.log").write_text(
        "[W socket.cpp:601] [c10d] The client socket has timed out after 5s while trying to connect to (10.0.0.1, "
        "29400).\n")
    hypotheses = analyze_paths([str(tmp_path)]).diagnosis.hypotheses
    assert hypotheses[0].category is Category.NETWORK_PARTITION and hypotheses[0].culprit_hosts == ("host2",)
    desync = next(h for h in hypotheses if h.category is Category.COLLECTIVE_DESYNC)
    assert desync.confidence < hypotheses[0].confidence and "cut off" in desync.what
