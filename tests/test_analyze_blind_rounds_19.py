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
    # the driver's other health lines (a recovered firmware, a reset) are no failure
    assert not [e for e in events_of("[1.2] mlx5_core 0000:5e:00.0: health poll restored") if e.kind is Kind.IB_ASYNC_EVENT]
