"""Readings of the hundred-and-sixty-seventh round (``r170*``: PyTorch's newer distributed APIs and symmetric memory,
Transformer Engine and FP8 stacks, virtual machines and containers, unusual rendezvous and stores, scientific ML at
small labs, distributed evaluation). One behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste
from syncdoctor.analyze.model import Category


def _top(tmp_path: Path, paste: str):
    hypotheses = diagnose_paste(tmp_path, paste).hypotheses
    assert hypotheses, paste
    return hypotheses[0]


_REVERSE = "[W521 13:07:59.801469723 socket.cpp:204] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"


def test_c10d_s_failed_reverse_lookups_alone_are_a_lead_not_silence(tmp_path: Path) -> None:
    # real: deepseek-ai/DeepEP#172, pytorch/pytorch#159007 (r170d): the warning every rank prints in a container whose
    # resolver has no name for its address, and nothing after it
    top = _top(tmp_path, "root@5d23d6366618:/sgl-workspace/DeepEP# python3 tests/test_intranode.py\n" + _REVERSE * 8)
    assert top.category is Category.UNRECOGNISED and top.confidence == 0.2, top
    assert "err=-3: EAI_AGAIN" in top.title and "8 lines" in top.title, top.title
    assert "/etc/hosts" in (top.fix or "") and "MASTER_ADDR" in (top.fix or "")
    # (older releases' words)
    assert "1 line)" in _top(tmp_path, "[c10d] The hostname of the client socket cannot be retrieved, error code: -3.\n").title
    # with a communicator formed after it, the warning says nothing about what failed: no lead of it
    formed = _REVERSE + "h1:1:1 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
    assert not any("reverse lookups" in h.title for h in diagnose_paste(tmp_path, formed).hypotheses)


def test_a_docker_bridge_address_is_no_suspect_where_nccl_warned_of_another_failure_first(tmp_path: Path) -> None:
    # real: Purkialo/CrowdDet#86 (r170c): one container on one machine, NCCL 2.4.8 failing its topology detection
    boot = "d13186ffee3a:57:57 [0] NCCL INFO Bootstrap : Using [0]eth0:172.17.0.2<0>\n"
    chain = "".join(f"d13186ffee3a:57:75 [0] NCCL INFO {at} -> 2\n" for at in ("init.cc:876", "init.cc:909"))
    warn = ("d13186ffee3a:57:75 [0] misc/topo.cc:22 NCCL WARN Could not find real path of "
            "/sys/class/pci_bus/0000:02/../../0000:02:00.0\n")
    top = _top(tmp_path, boot + warn + chain)
    assert top.category is Category.UNRECOGNISED and "PCI tree" in top.title, top.title
    # the same 'unhandled system error' with no warning of its own before it: the bridge's address is the suspect
    assert _top(tmp_path, boot + chain).category is Category.LOOPBACK_ADDRESS
    # (a warning after the error chain explains nothing of it)
    assert _top(tmp_path, boot + chain + warn.replace("57:75", "57:57")).category is Category.LOOPBACK_ADDRESS


def test_a_tensor_shared_by_file_descriptor_that_could_not_be_mapped_is_shared_memory(tmp_path: Path) -> None:
    # real: tomotwin-cryoet#51 (r170e): an hour into an embedding run, torch.multiprocessing's rebuild_storage_fd
    error = ("RuntimeError: unable to mmap 512 bytes from file <filename not specified>: Cannot allocate memory (12)\n")
    top = _top(tmp_path, error)
    assert top.category is Category.SHM_EXHAUSTED, top.title
    # a file of PyTorch's own name, as before; another mmap's ENOMEM is no shared memory
    assert _top(tmp_path, error.replace("<filename not specified>", "</torch_77102_1846612178_0>")).category \
        is Category.SHM_EXHAUSTED
    assert _top(tmp_path, error.replace("file <filename not specified>", "file </data/model.bin>")).category \
        is not Category.SHM_EXHAUSTED


def test_nccl_asked_for_without_a_gpu_is_read_where_the_paste_cut_the_message(tmp_path: Path) -> None:
    # real: pytorch/pytorch#117746 (r170a): DeviceMesh on a CPU-only host, the paste ending inside the message
    top = _top(tmp_path, "RuntimeError: ProcessGroupNCCL is only supported with GP\n")
    assert top.category is Category.UNRECOGNISED and "sees no GPU" in top.title, top.title
    assert "sees no GPU" not in _top(tmp_path, "RuntimeError: ProcessGroupNCCL is only supported within a group\n").title


def test_symmetric_memory_refusing_one_device_index_is_the_placement(tmp_path: Path) -> None:
    # real: vllm-project/vllm#45729 (r154b) and volcengine/verl#4503 (r170a): Ray's workers each see their GPU as cuda:0
    top = _top(tmp_path, "RuntimeError: CUDASymmetricMemoryAllocator::rendezvous: detected allocations from "
                         "overlapping devices from different ranks.\n")
    assert top.category is Category.UNRECOGNISED and "CUDA_VISIBLE_DEVICES" in top.title, top.title
    assert top.category is not Category.DUPLICATE_GPU


def test_nccl_s_local_socket_refused_is_the_node_s_namespaces_not_the_network(tmp_path: Path) -> None:
    # real: NVIDIA/TransformerEngine#801 (r170b): userbuffers passing a CUDA IPC handle over NCCL's abstract socket
    line = "UDS: Sending data over socket /tmp/nccl-socket-3-deadcafebeef failed : **Connection refused** (111)\n"
    top = _top(tmp_path, line)
    assert top.category is Category.UNRECOGNISED and "network namespace" in top.title, top.title
    # a TCP connection refused stays a peer that could not be reached
    assert _top(tmp_path, "NCCL WARN Net : Connect to 10.0.0.2<43521> failed : Connection refused\n").category \
        is Category.PEER_UNREACHABLE
