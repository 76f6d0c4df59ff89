"""Readings added in the session of the fifty-first blind harvest (the r54* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.prefixes import split_prefix

diagnose = diagnose_paste


def test_a_launchers_ping_without_reply_names_the_silent_node(tmp_path: Path) -> None:
    # real: ALCF's Aurora guide (PALS mpiexec; the node that did not reply had HBM errors)
    line = "ping failed on x4304c1s6b0n0: No reply from x4307c2s6b0n0.hostmgmt2307.cm.aurora.alcf.anl.gov after 87s"
    event = one(line, Kind.ERROR_LINE)
    assert event.origin.host == "x4307c2s6b0n0" and event.data["asker"] == "x4304c1s6b0n0"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_hosts == ("x4307c2s6b0n0",)
    # another "ping failed" (a health check's own words) names no node
    other = diagnose(tmp_path, "ERROR: ping failed on gpu-3: timeout").hypotheses[0]
    assert other.culprit_hosts != ("gpu-3",) or "No reply" in other.title


def test_an_unplaced_first_error_takes_the_one_host_the_other_errors_name(tmp_path: Path) -> None:
    # real: openucx/ucx#6049 (the kernel's line has no host; UCX's, beside it, names b2294)
    kernel = ("[2605244.823409] mlx5_core 0000:61:00.0: mlx5_cmd_check:795:(pid 53945): ALLOC_UAR(0x802) op_mod(0x0) "
              "failed, status limits exceeded(0x8), syndrome (0x5a7939)")
    ucx = ("[1608298882.555115] [b2294:54275:0]          ib_md.c:1678 UCX  ERROR ibv_open_device(mlx5_0) failed: "
           "Cannot allocate memory")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "dmesg.txt").write_text(kernel + "\n")
    (tmp_path / "a" / "log.txt").write_text(ucx + "\n")
    found = [h for h in analyze_paths([str(tmp_path / "a")]).diagnosis.hypotheses if h.category is Category.UNRECOGNISED]
    assert found and found[0].culprit_hosts == ("b2294",) and "ALLOC_UAR" in found[0].title
    assert found[0].confidence == 0.25  # borrowed, not its own: no firmer than an error without a place
    # two hosts named by the others: none borrowed
    two = kernel + "\n" + ucx + "\n" + ucx.replace("b2294", "b2295")
    quoted = next(h for h in diagnose(tmp_path, two).hypotheses if h.category is Category.UNRECOGNISED)
    assert quoted.culprit_hosts == ()


def test_an_ascend_error_code_is_no_host() -> None:
    for code in ("EJ0001", "EI0002", "EE9999"):
        assert split_prefix(f"{code}: The HCCP process is still running").origin.host is None
    assert split_prefix("gpu-01: RuntimeError: x").origin.host == "gpu-01"


_ORDINAL = "{host}: Test CUDA failure common.cu:941 'invalid device ordinal'\n .. {host} pid {pid}: Test failure common.cu:891\n"


def test_nccl_tests_echo_lines_are_not_the_rest_of_a_wrapped_line(tmp_path: Path) -> None:
    # real: NVIDIA/nccl-tests#263 (each failure line one length, each followed by its echo)
    paste = "# Using devices\n" + "".join(_ORDINAL.format(host=h, pid=p) for h, p in
                                           (("g0010", 888386), ("g0010", 888385), ("g0016", 3645592)))
    top = diagnose(tmp_path, paste).hypotheses[0]
    # read apart, the failures are several processes' on two hosts: the launch, not one rank's crash
    assert "invalid device ordinal" in top.title and "g0010, g0016" in top.title
    assert top.category is Category.UNRECOGNISED and "more processes than there are GPUs" in top.title
    assert top.culprit_hosts == () and "nvidia-smi -L" in (top.fix or "")


def test_mpiruns_first_failed_process_names_the_rank_of_the_one_error(tmp_path: Path) -> None:
    # real: NVIDIA/nccl-tests#165 (both ranks on a one-GPU VM; rank 1 asked for GPU 1)
    summary = ("mpirun detected that one or more processes exited with non-zero status, thus causing\n"
               "the job to be terminated. The first process to do so was:\n\n"
               "  Process name: [[25735,1],1]\n  Exit code:    2\n")
    top = diagnose(tmp_path, _ORDINAL.format(host="vm1", pid=9972) + summary).hypotheses[0]
    assert top.culprit_ranks == (1,) and top.culprit_hosts == ("vm1",)
    # two processes' errors: mpirun's first does not say which of them
    two = _ORDINAL.format(host="vm1", pid=9972) + _ORDINAL.format(host="vm2", pid=9973) + summary
    assert diagnose(tmp_path, two).hypotheses[0].culprit_ranks == ()


def test_a_virtual_interface_listed_after_the_nic_nccl_bootstraps_on_is_not_the_advertised_address(
        tmp_path: Path) -> None:
    # real: ray-project/ray#13953 (older NCCL lists every interface; it bootstraps on the first, ens3)
    boot = ("ip-1:754:754 [0] NCCL INFO Bootstrap : Using [0]ens3:172.31.10.221<0> "
            "[1]veth804f9b9:fe80::f4f3:4bff:fee6:7ee%veth804f9b9<0>\n")
    dup = "ip-1:754:882 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1d0\n"
    top = diagnose(tmp_path, boot + dup).hypotheses[0]
    assert top.category is Category.DUPLICATE_GPU
    assert all(h.category is not Category.LOOPBACK_ADDRESS or h.confidence <= 0.35
               for h in diagnose(tmp_path, boot + dup).hypotheses)
    # the veth first: the address the peers were given
    first = boot.replace("[0]ens3:172.31.10.221<0> [1]veth804f9b9:fe80::f4f3:4bff:fee6:7ee%veth804f9b9<0>",
                         "[0]veth804f9b9:fe80::f4f3:4bff:fee6:7ee%veth804f9b9<0> [1]ens3:172.31.10.221<0>")
    hyps = diagnose(tmp_path, first + dup).hypotheses
    assert any(h.category in (Category.LOOPBACK_ADDRESS, Category.INTERFACE_MISMATCH) and h.confidence > 0.35
               for h in hyps)


def test_ucx_15s_verbs_completion_error_without_fatal_and_libmlx5s_dump(tmp_path: Path) -> None:
    # real: openucx/ucx#3564 (GPUDirect RDMA blocked by PCIe ACS: a local protection error)
    paste = ("mlx5:  got completion with error:\n00000000 00000000 00000000 00000000\n"
             "00000000 02005104 0a00061e 000164d2\n"
             "rc_verbs_iface.c:67   send completion with error: local protection error\n")
    event = one("rc_verbs_iface.c:67   send completion with error: local protection error", Kind.IB_COMPLETION_ERROR)
    assert event.data["status"] == 4 and event.data["transport"] == "ucx"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.IB_COMPLETION and top.culprit_hosts == ()  # libmlx5's "mlx5:" is no host
    # a line that only mentions completions is none
    assert not [e for e in events_of("waiting for send completion with error handling enabled")
                if e.kind is Kind.IB_COMPLETION_ERROR]


def test_ucx_error_lines_with_one_space_are_read(tmp_path: Path) -> None:
    # real: openucx/ucx#9908 (an issue's rendering keeps one space between UCX and ERROR; a list bullet before it)
    paste = ("- [1716594409.541480] [gpu1:1581047:0] sock.c:323 UCX ERROR connect(fd=87, dest_addr=172.17.0.1:47133) "
             "failed: Connection refused\n[gpu1:1581048] pml_ucx.c:419 Error: ucp_ep_create(proc=9) failed: "
             "Destination is unreachable\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and "172.17.0.1" in top.title


def test_ucx_address_version_mismatch_is_two_ucx_releases_not_the_crash_after_it(tmp_path: Path) -> None:
    # real: openucx/ucx#6675 (built with UCX 1.9, the system's 1.8 loaded)
    paste = ("[1618778295.702469] [jedi063:22469:0]        address.c:917  UCX  ERROR address version mismatch: "
             "expected 0, actual 12\n[jedi063:22469:0:22472] Caught signal 11 (Segmentation fault: invalid "
             "permissions for mapped object at address 0x7f625c145c98)\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.NCCL_VERSION_MISMATCH and "UCX releases" in top.title
    assert top.culprit_hosts == () and "ucx_info -v" in (top.fix or "")
    # the segfault alone stays the crash
    alone = paste.split("\n", 1)[1]
    assert diagnose(tmp_path, alone).hypotheses[0].category is Category.RANK_CRASHED


def test_nvshmem_skipping_a_nic_that_is_not_mlx5_is_named(tmp_path: Path) -> None:
    # real: deepseek-ai/DeepEP#202 (Alibaba eRDMA; NVSHMEM's IBGDA transport drives mlx5 NICs only)
    warn = "WARN: device erdma_0 is not enumerated as an mlx5 device. Skipping..."
    assert one(warn, Kind.ERROR_LINE).data["dev"] == "erdma_0"
    failed = ("/sgl-workspace/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_init:275: init failed for "
              "transport: IBGDA")
    top = diagnose(tmp_path, "Allocating buffer size: 2115.111296 MB ...\n" + warn + "\n" + failed).hypotheses[0]
    assert "IBGDA" in top.title and "erdma_0 is not a Mellanox mlx5 device" in top.title and top.confidence == 0.75
    assert "NVSHMEM_IB_ENABLE_IBGDA=0" in (top.fix or "")
    # the warning alone: a lead (a host with an mlx5 NIC too warns for its other one, and works)
    assert diagnose(tmp_path, warn).hypotheses[0].confidence == 0.3


def test_a_dead_hca_in_the_kernel_log_and_nccls_resiliency_failover_are_a_nic_that_failed(tmp_path: Path) -> None:
    # real: charmplusplus/charm#2635 (Frontera: a ConnectX's firmware stopped), NVIDIA/nccl#2157 (a port taken down)
    kernel = ("[198542.853543] mlx5_core 0000:5e:00.0: device's health compromised - reached miss count\n"
              "[198542.918249] mlx5_core 0000:5e:00.0: synd 0x7: irisc not responding\n")
    top = diagnose(tmp_path, kernel).hypotheses[0]
    assert top.category is Category.IB_PORT_DOWN and "0000:5e:00.0" in top.title and "firmware" in top.title
    failover = ("[2026-05-04 19:55:27] GPU-606:534134:535429 [1] transport/net_ib/p2p_resiliency.cc:325 NCCL WARN "
                "NET/IB: ncclIbResiliencyHandleDeviceFailure: Device 0 marked as failed. Initiating recovery? Yes "
                "(send comm=0x7f03e8086000, outstanding=1)")
    top = diagnose(tmp_path, failover).hypotheses[0]
    assert top.category is Category.IB_PORT_DOWN and top.culprit_hosts == ("GPU-606",)
    # the same in the source's later wording, and its giving up when every NIC failed
    for later in ("GPU-606:1:2 [1] p2p_resiliency.cc:325 NCCL WARN NET/IB: Device 0 marked as failed. Initiating recovery? No",
                  "GPU-606:1:2 [1] p2p_resiliency.cc:99 NCCL WARN NET/IB: Fatal error. Detected 2 failed devices out of 2 "
                  "devices on the send communicator (comm=0x7f). No more devices"):
        assert diagnose(tmp_path, later).hypotheses[0].category is Category.IB_PORT_DOWN
    # the driver's other health lines (a recovered firmware, a reset) are no failure
    assert not [e for e in events_of("[1.2] mlx5_core 0000:5e:00.0: health poll restored") if e.kind is Kind.IB_ASYNC_EVENT]


def test_a_container_on_dockers_default_bridge_is_named_when_its_sockets_fail(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1381 (two machines, each a container on the default bridge: eth0 172.17.0.3)
    boot = ("c39f5cf046aa:4533:4533 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.3<0>\n"
            "c39f5cf046aa:4533:4667 [0] NCCL INFO NET/Socket : Using [0]eth0:172.17.0.3<0>\n")
    failed = "c39f5cf046aa:4533:4667 [0] NCCL INFO misc/socket.cc:568 -> 2\n"
    top = diagnose(tmp_path, boot + failed).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and "default bridge" in top.title and "172.17.0.3" in top.title
    assert "--network=host" in (top.fix or "")
    # nothing failed: a container that works on its own machine
    assert all("default bridge" not in h.title for h in diagnose(tmp_path, boot).hypotheses)
    # a host named like a person's machine, on 172.17 (a site's own subnet): not read as a container
    named = (boot + failed).replace("c39f5cf046aa", "gpu-node-07")
    assert all("default bridge" not in h.title for h in diagnose(tmp_path, named).hypotheses)


def test_cray_mpich_without_its_gpu_transport_layer_is_the_build(tmp_path: Path) -> None:
    # real: CSCS's Alps docs, ALCF's Polaris (appfl#258)
    line = ("MPICH ERROR [Rank 0] [job id 410301.1] [Thu Feb 13 12:42:18 2025] [nid005414] - Abort(-1) (rank 0 in comm "
            "0): MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked")
    top = diagnose(tmp_path, line + "\n (Other MPI error)").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "GTL" in top.title and "MPICH_GPU_SUPPORT_ENABLED" in top.fix
    assert top.culprit_ranks == (0,) and top.confidence == 0.85
    # another reason for the same abort stays that rank's failure
    other = line.replace("GPU_SUPPORT_ENABLED is requested, but GTL library is not linked", "Other MPI error")
    assert "GTL" not in diagnose(tmp_path, other).hypotheses[0].title


def test_efas_unresponsive_receiver_is_a_peer_that_could_not_be_reached(tmp_path: Path) -> None:
    # real: gnosia93/training-on-eks (the security group did not allow the instances' own traffic)
    warn = ("[2026-01-01 12:08:32] node-0:194:710 [0] int cm_req_handle_error_entry(nccl_net_ofi_context_t*, fid_cq*, "
            "fi_cq_err_entry*, uint16_t):46 NCCL WARN NET/OFI Request 0x7f456c222f60 completed with error. RC: 103. "
            "Error: 4126 (Unresponsive receiver (reachable by EFA device but handshake failed))")
    event = one(warn, Kind.NCCL_WARN)
    assert (event.origin.host, event.origin.pid) == ("node-0", 194)  # the plugin's function signature read past
    top = diagnose(tmp_path, warn + "\nnode-0:194:710 [0] NCCL INFO transport/net.cc:753 -> 6").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "security group" in top.title
    assert top.culprit_hosts == ("node-0",)
    # another EFA error stays the plugin's own failure
    other = warn.replace("Error: 4126 (Unresponsive receiver (reachable by EFA device but handshake failed))",
                         "Error: 12 (Cannot allocate memory)")
    assert diagnose(tmp_path, other).hypotheses[0].category is Category.UNRECOGNISED


def test_vllms_start_up_memory_check_reads_as_memory(tmp_path: Path) -> None:
    # real: aws-samples/aws-do-eks#79 (--gpu-memory-utilization 0.98 above what NCCL and EFA left free)
    paste = ("ValueError: Free memory on device cuda:7 (174.24/178.35 GiB) on startup is less than desired GPU memory "
             "utilization (0.98, 174.78 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
             "processes.")
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.RANK_OUT_OF_MEMORY
    assert diagnose(tmp_path, "ValueError: Free memory on device cuda:7 is fine").hypotheses[0].category \
        is not Category.RANK_OUT_OF_MEMORY


def test_a_peer_address_on_another_private_network_is_the_peers_interface(tmp_path: Path) -> None:
    # real: gpustack/gpustack#2275 (the other node advertised 172.21.0.1, a Docker network's bridge)
    paste = ("gpu:77952:77952 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to {peer}<57093> failed : "
             "Software caused connection abort\n"
             "gpu:77952:77952 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens3\n"
             "gpu:77952:77952 [0] NCCL INFO Bootstrap : Using ens3:172.16.0.16<0>\n")
    top = diagnose(tmp_path, paste.format(peer="172.21.0.1")).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and "container network's bridge" in top.title
    assert top.confidence == 0.8 and "NCCL_SOCKET_IFNAME" in (top.fix or "")
    # another network, no bridge's address: a lead below the failed connection
    hyps = diagnose(tmp_path, paste.format(peer="10.20.3.4")).hypotheses
    assert hyps[0].category is Category.PEER_UNREACHABLE
    assert any(h.category is Category.INTERFACE_MISMATCH and h.confidence == 0.55 for h in hyps)
    # the same network (a /16 of one cloud network): nothing of the kind
    same = diagnose(tmp_path, paste.format(peer="172.16.5.9")).hypotheses
    assert all(h.category is not Category.INTERFACE_MISMATCH for h in same)


def test_abseils_error_line_before_init_google_is_an_error_line(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning#20244 (a Kaggle TPU VM's TPU_PROCESS_ADDRESSES=local)
    line = ("E0000 00:00:1725383433.302361    2870 common_lib.cc:818] Could not set metric server port: "
            "INVALID_ARGUMENT: Could not find SliceBuilder port 8476 in any of the 0 ports provided in "
            "`tpu_process_addresses`=\"local\"")
    assert one(line, Kind.ERROR_LINE).data["word"] == "glog ERROR"
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.UNRECOGNISED
    # at severity I it is no error
    assert not [e for e in events_of(line.replace("E0000", "I0000")) if e.kind is Kind.ERROR_LINE]


def test_kunluns_device_address_window_reads_as_peer_access(tmp_path: Path) -> None:
    # real: baidu/vLLM-Kunlun#382 and #420 (P800: every tensor-parallel run above one device fails)
    paste = ("[XCCL][util.cpp:346] dev 0 addr_window not properly set\n"
             "[XCCL][init.cpp:1227] host 10.0.0.5 addr_window check failed\n"
             "ValueError: [INVALID PARAMETER]: error code= 1(at .../torch_xmlir/csrc/new_xccl/XCCLUtils.hpp:53)\n")
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.PEER_ACCESS


def test_multi_node_nvlink_without_imex_is_the_setup_not_the_gpu(tmp_path: Path) -> None:
    # real: a GB300 NVL72 runbook (the IMEX channel device missing on 17 of 18 nodes)
    warn = ("pega01:1234:1234 [0] NCCL WARN MNNVL (cliqueSize 72) is available but not working on this system. Check "
            "the IMEX channel configuration (/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this "
            "issue.\npega01:1234:1234 [0] NCCL WARN Cuda failure 800 'operation not permitted'\n")
    top = diagnose(tmp_path, warn).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "MNNVL" in top.title and "channel device" in top.title
    assert "nvidia-imex-ctl -N" in (top.fix or "") and top.confidence == 0.85
    # 2.25's wording names the IMEX service
    old = "NCCL WARN MNNVL (cliqueSize 4) is available but not supported on this system. Check the IMEX configuration."
    assert "IMEX service" in diagnose(tmp_path, old).hypotheses[0].title
    # error 800 alone stays a CUDA error
    alone = "pega01:1234:1234 [0] NCCL WARN Cuda failure 800 'operation not permitted'"
    assert diagnose(tmp_path, alone).hypotheses[0].category is Category.GPU_ERROR


def test_an_invalid_device_ordinal_in_a_frameworks_own_words_reads_as_that_processs_start_up(tmp_path: Path) -> None:
    # real: MindSpore's FAQ (device_id above the GPUs CUDA_VISIBLE_DEVICES leaves)
    line = ("[ERROR] DEVICE [mindspore/ccsrc/runtime/device/gpu/cuda_driver.cc:245] SetDevice] SetDevice for id:7 "
            "failed, ret[101], invalid device ordinal.")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "GPU index that does not exist" in top.title  # (the launch)


def test_rays_memory_monitor_read_from_the_end_of_its_message(tmp_path: Path) -> None:
    # real: TideDra/lmm-r1#71 (a paste that begins after the kill's first line)
    tail = ("Refer to the documentation on how to address the out of memory issue: "
            "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more "
            "memory on this node or reducing task parallelism by requesting more CPUs per task. Set max_restarts and "
            "max_task_retries to enable retry when the task crashes due to OOM.")
    top = diagnose(tmp_path, "95412   14.05   ray::LLMRayActor\n" + tail).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "memory monitor" in top.title
    # with the kill's own line, that line places it (the tail adds no host-less second report)
    kill = ("(raylet) node_manager.cc:3277: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
            "crashed due to other reasons at node (ID: 8289f87b, IP: 172.24.0.226) over the last time period.\n")
    top = diagnose(tmp_path, kill + "(raylet) " + tail).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("172.24.0.226",)


def test_nccl_ras_per_rank_lines_pasted_alone_name_the_rank_behind(tmp_path: Path) -> None:
    # real: MiaAI-Lab/DeepSeek-v4-Flash-DSpark-2x-DGX-Spark#117 (two lines of ncclras quoted in a comment)
    paste = "Rank 1 has launched up to operation 288686 — Rank 0 has launched up to operation 288685."
    assert [e.origin.rank for e in events_of(paste) if e.kind is Kind.RAS] == [1, 0]
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,) and top.affected_ranks == (1,)
    # every rank at one operation: nothing behind
    same = "  Rank 1 has launched up to operation 640 -- GPU 1\n  Rank 0 has launched up to operation 640 -- GPU 0\n"
    assert not diagnose(tmp_path, same).hypotheses


def test_cray_mpichs_gtl_abort_echoed_without_its_banner(tmp_path: Path) -> None:
    # real: ALCF's Polaris docs (conda's mpi4py loaded after torch)
    paste = "aborting job:\nMPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked\n"
    assert "GTL" in diagnose(tmp_path, paste).hypotheses[0].title


def test_an_endpoint_without_a_host_reads_as_an_address_that_cannot_be_reached(tmp_path: Path) -> None:
    # real: aws-samples/aws-do-eks#62 (the leader's DNS name not yet resolved: an empty data-parallel address)
    top = diagnose(tmp_path, "  ValueError: Invalid zmq path: tcp://:29550").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE
    assert diagnose(tmp_path, "ValueError: Invalid zmq path: tcp://10.0.0.1:29550x").hypotheses[0].category \
        is not Category.PEER_UNREACHABLE


def test_rays_out_of_memory_error_is_the_memory_monitors_kill_not_the_gpus(tmp_path: Path) -> None:
    # real: OpenRLHF/OpenRLHF#332 (host RAM at the first optimizer step of ZeRO-3 with CPU offload)
    paste = ("Traceback (most recent call last):\n  File \"train_ppo_ray.py\", line 9, in <module>\n"
             "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "host RAM" in top.title
    # torch's own OutOfMemoryError stays the GPU's
    gpu = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert diagnose(tmp_path, gpu).hypotheses[0].category is Category.RANK_OUT_OF_MEMORY


_PADDLE_DIAL = ("W0327 13:29:53.085911   296 gen_comm_id_helper.cc:120] connect addr=127.0.0.1:6071 failed 1 times "
                "with reason: Connection refused retry after 0.5 seconds\n")
_PADDLE_LISTEN = "I0327 13:21:36.202080   758 gen_comm_id_helper.cc:181] Server listening on: {addr}:6070 successful.\n"


def test_a_paddle_trainer_dialling_loopback_while_others_listen_on_the_network(tmp_path: Path) -> None:
    # real: PaddlePaddle/PaddleDetection#7998 (one host launched with --ips naming itself 127.0.0.1)
    top = diagnose(tmp_path, _PADDLE_DIAL + _PADDLE_LISTEN.format(addr="10.19.174.228")).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and "10.19.174.228" in top.title and "--ips" in (top.fix or "")
    # every trainer on loopback: a job on one machine, retrying until its peer listens (no store blamed)
    one_machine = diagnose(tmp_path, _PADDLE_DIAL + _PADDLE_LISTEN.format(addr="127.0.0.1")).hypotheses
    assert all(h.category not in (Category.LOOPBACK_ADDRESS, Category.PEER_UNREACHABLE) for h in one_machine)


def test_sruns_step_aborted_just_before_slurms_cancellation_is_its_aftermath(tmp_path: Path) -> None:
    # real: bigscience's Jean Zay experiments (a 16-node benchmark ended at its time limit, srun's line first)
    paste = ("srun: Job step aborted: Waiting up to 62 seconds for job step to finish.\n"
             "slurmstepd: error: *** STEP 1999616.0 ON r6i4n5 CANCELLED AT 2021-05-27T21:42:11 DUE TO TIME LIMIT ***\n"
             "slurmstepd: error: *** JOB 1999616 ON r6i4n5 CANCELLED AT 2021-05-27T21:42:11 DUE TO TIME LIMIT ***\n"
             "Main process received SIGTERM, exiting\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "time limit" in (top.title + (top.fix or "")).lower()
    # srun's line far above the cancellation (a step that failed on its own earlier) is not taken for its aftermath
    srun, rest = paste.split("\n", 1)
    far = srun + "\n" + "iteration 1 done\n" * 8 + rest
    assert "ended from outside" not in diagnose(tmp_path, far).hypotheses[0].title


def test_accelerates_shape_mismatch_message_below_its_exception_reads_as_a_desync(tmp_path: Path) -> None:
    # real: Accelerate's debug-mode guide (a broadcast of [1, 5] on one process, [1, 2, 5] on the other)
    paste = ("accelerate.utils.operations.DistributedOperationException:\n\nCannot apply desired operation due to shape "
             "mismatches. All shapes across devices must be valid.\n\nOperation: `accelerate.utils.operations.broadcast`"
             "\nInput shapes:\n  - Process 0: [1, 5]\n  - Process 1: [1, 2, 5]\n")
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.COLLECTIVE_DESYNC


def test_a_ras_report_ties_its_one_missing_rank_to_its_one_unreachable_process(tmp_path: Path) -> None:
    # real: NCCL's RAS documentation (a process stopped: INCOMPLETE, then DEAD)
    report = ("Communicators... (2.05s)\n=============\n\nGroup     Comms     Nodes     Ranks     Ranks     Ranks    Status  "
              "Errors\n    #  in group  per comm  per node  per comm  in group\n    0         1         4       7-8        "
              "32        32   RUNNING  INCOMPLETE\n\nErrors\n======\n\nINCOMPLETE\n  Missing communicator data from 1 job "
              "process\n  Process 3487984 on node 172.16.64.213 managing GPU 5\n\n#0-0 (cf264af53edbe986) INCOMPLETE\n"
              "  Missing communicator data from 1 rank\n  The missing rank: 21\n")
    top = diagnose(tmp_path, report).hypotheses[0]
    assert top.culprit_ranks == (21,) and top.culprit_hosts == ("172.16.64.213",)
    # two processes unreachable: which one is rank 21 is not said
    two = report + ("\nDEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
                    "  Process 3487990 on node 172.16.64.214 managing GPU 1\n")
    assert "172.16.64.213" not in diagnose(tmp_path, two).hypotheses[0].culprit_hosts


def test_mpiruns_daemon_missing_on_the_remote_path_is_the_install_not_the_network(tmp_path: Path) -> None:
    # real: Horovod's troubleshooting guide (a non-interactive ssh shell without Open MPI on its PATH)
    orte = ("--------------------------------------------------------------------------\n"
            "ORTE was unable to reliably start one or more daemons.\nThis usually is caused by:\n")
    top = diagnose(tmp_path, "bash: orted: command not found\n" + orte).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "PATH" in top.title and "--prefix" in (top.fix or "")
    # ORTE's banner alone stays a node the launcher could not start on
    assert diagnose(tmp_path, orte).hypotheses[0].category is Category.PEER_UNREACHABLE
    # another program not found is not the launcher's daemon (a program the shell did not find, r134's reading)
    other = diagnose(tmp_path, "bash: nvidia-smi: command not found").hypotheses[0]
    assert other.category is Category.UNRECOGNISED and "daemon" not in other.title and "--prefix" not in (other.fix or "")
    assert "the shell did not find" in other.title


def test_an_invalid_gid_index_in_any_words_reads_as_the_queue_pair_setup(tmp_path: Path) -> None:
    # real: a DGX Spark cluster guide (NCCL_IB_GID_INDEX=3 on a port without that GID)
    assert diagnose(tmp_path, "NCCL WARN NET/IB : Invalid GID index 3").hypotheses[0].category is Category.IB_MODIFY_QP
    assert diagnose(tmp_path, "NCCL WARN NET/IB : GID index 3 out of range").hypotheses[0].category \
        is Category.IB_MODIFY_QP


def test_nccls_no_ib_device_warning_alone_is_the_socket_fallback_lead(tmp_path: Path) -> None:
    # real: the same guide (the mlx5 driver not loaded on a node: NCCL goes on over sockets)
    top = diagnose(tmp_path, "NCCL WARN NET/IB : No device found\nibstat: No InfiniBand devices found").hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK and top.confidence == 0.35
    # a device NCCL found but could not open needs its fallback line to be said so
    other = "NCCL WARN NET/IB : Unable to open device mlx5_1"
    assert all(h.category is not Category.SOCKET_FALLBACK for h in diagnose(tmp_path, other).hypotheses)


def test_nics_of_two_link_types_are_the_configuration(tmp_path: Path) -> None:
    # from NCCL's source (2.26+, transport/net_ib/connect.cc)
    line = ("gpu-3:71:90 [0] transport/net_ib/connect.cc:987 NCCL WARN NET/IB : Attempted to connect incompatible "
            "devices: [0]mlx5_0:1/IB and [1]mlx5_2:1/RoCE. Try selecting NICs of only one link type using NCCL_IB_HCA")
    top = diagnose(tmp_path, line + "\ngpu-3:71:90 [0] NCCL INFO transport/net.cc:890 -> 3").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "two link types" in top.title and "NCCL_IB_HCA" in (top.fix or "")
    remote = line.replace("Attempted to connect incompatible devices: [0]mlx5_0:1/IB and [1]mlx5_2:1/RoCE",
                          "Remote RoCE device is incompatible with the local [0]mlx5_0:1/IB")
    assert "two link types" in diagnose(tmp_path, remote).hypotheses[0].title


def test_nccls_own_checks_of_versions_and_of_the_driver(tmp_path: Path) -> None:
    # from NCCL's source (init.cc): two ranks' releases as version codes, and the driver below NCCL's minimum
    line = "h1:1:2 [0] init.cc:100 NCCL WARN Mismatched NCCL version detected : rank 3 version 22703 rank 0 version 22805"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.NCCL_VERSION_MISMATCH and "2.27.3" in top.title and "2.28.5" in top.title
    driver = "h1:1:2 [0] init.cc:100 NCCL WARN CUDA Driver version found is 11040. Minimum requirement is 12000"
    top = diagnose(tmp_path, driver).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "not at fault" in top.title and "driver is older" in top.title


def test_ranks_that_see_different_numbers_of_nics_name_a_nic_missing(tmp_path: Path) -> None:
    # from NCCL's source (2.30, init.cc)
    line = ("h1:1:2 [0] init.cc:1339 NCCL WARN Detected mixed local Net device counts across ranks (min 4, max 8). Set "
            "NCCL_IGNORE_NET_MISMATCH=1 to ignore this check")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.IB_PORT_DOWN and "4 on some, 8 on others" in top.title
    assert "ls /dev/infiniband" in (top.fix or "")


def test_nccl_refusing_the_jobs_own_setup_says_what_to_change(tmp_path: Path) -> None:
    # from NCCL's source (bootstrap.cc, init.cc, net.cc, socket.cc); real: two corpus pastes of the rank refusal
    cases = {
        "Bootstrap Root : mismatch in info from procs, nranks 8 vs 16, nroots 1 vs 1, iroot 0 vs 0, offset 0 vs 0":
            ("different world sizes (8 and 16 ranks)", "MASTER_PORT"),
        "Invalid rank requested : 8/8": ("rank 8 of a communicator of 8 ranks", "NODE_RANK"),
        "Failed to initialize any NET plugin": ("any network transport", "Unset NCCL_NET"),
        "Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>":
            ("NCCL_COMM_ID", "host:port"),
    }
    for message, (title, fix) in cases.items():
        top = diagnose(tmp_path, f"h1:1:2 [0] init.cc:1 NCCL WARN {message}").hypotheses[0]
        assert top.category is Category.UNRECOGNISED and title in top.title and fix in (top.fix or ""), message
        assert "(GPU 0 (pid 1) on h1)" in top.title
    # the same words outside NCCL's WARN (a user's own print) are no refusal of NCCL's
    user = diagnose(tmp_path, "ERROR: Bootstrap Root : mismatch in info from procs, nranks 8 vs 16").hypotheses
    assert all("world sizes" not in h.title for h in user)
