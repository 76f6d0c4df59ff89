"""Readings added after the nineteenth blind harvest (the r22* cases of the real corpus), one behaviour per test,
each with the look-alike it must not catch: an IB completion copied without its prefix, aws-ofi-nccl's memory
registration, monitored_barrier's unanswered wait, THD's and the newer store's port in use, THC's CUDA errors,
torch_memory_saver's out-of-memory, nested Ray prefixes, link-local addresses, srun's task numbers, a pasted
/etc/hosts line. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.prefixes import split_prefix

diagnose = diagnose_paste


def test_an_ib_completion_copied_without_its_prefix_is_read(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#1664 (typed from a screenshot: no host:pid:tid, no NCCL WARN)
    top = diagnose(tmp_path, "NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 "
                             "len=32696 vendor err 129 (Send)\n").hypotheses[0]
    assert top.category is Category.IB_UNREACHABLE_AT_INIT and "status 12" in top.title
    assert not events_of("the job got completion of its checkpoint with status ok")


def test_aws_ofi_ncclss_failed_registration_is_the_memlock_limit(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#563 (EFA, pdsh prefixes)
    line = ("10.0.87.143: ip-10-0-87-143:149:298 [5] register_mr_buffers:465 NCCL WARN NET/OFI Unable to register "
            "memory (type = 1) for device 0. RC: 12, Error: Cannot allocate memory")
    assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.MEMLOCK_LIMIT
    other = line.replace("Cannot allocate memory", "Invalid argument")
    assert not [e for e in events_of(other) if e.kind is Kind.MEMLOCK_FAILURE]


def test_store_ports_in_use_of_thd_and_of_the_newer_socket_text(tmp_path: Path) -> None:
    # real: facebookresearch/XLM#53 (PyTorch 0.4's THD), volcengine/verl#6677 (vLLM under Ray, torch 2.x)
    thd = diagnose(tmp_path, "RuntimeError: Address already in use at /pytorch/torch/lib/THD/process_group/"
                             "General.cpp:17\n").hypotheses[0]
    assert thd.category is Category.PORT_IN_USE
    newer = diagnose(tmp_path, "(vLLMHttpServer pid=6840) (Worker pid=7181) ERROR 06-09 17:58:55 "
                               "[multiproc_executor.py:852] torch.distributed.DistNetworkError: The server socket has "
                               "failed to listen on any local network address. port: 32847, useIpv6: false, code: -98, "
                               "name: EADDRINUSE, message: address already in use\n").hypotheses[0]
    assert newer.category is Category.PORT_IN_USE and "port 32847" in newer.title
    assert not [e for e in events_of("INFO: the address already in use by the dashboard is fine")
                if e.kind is Kind.STORE_ERROR]


def test_nested_ray_prefixes_give_the_innermost_process() -> None:
    assert split_prefix("(vLLMHttpServer pid=6840) (Worker pid=7181) ERROR boom").origin.pid == 7181
    assert split_prefix("(WorkerDict pid=60511, ip=10.0.0.1) [rank3]: boom").origin.pid == 60511


def test_thcs_cuda_runtime_error_is_the_gpu_unless_it_is_memory(tmp_path: Path) -> None:
    # real: NVIDIA/semantic-segmentation#33 (PyTorch 1.x, 8 GPUs)
    ecc = one("RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
              "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265", Kind.GPU_ERROR)
    assert ecc.data["message"] == "uncorrectable ECC error encountered" and ecc.data["hardware"]
    assert not [e for e in events_of("RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/"
                                     "THC/generic/THCStorage.cu:58") if e.kind is Kind.GPU_ERROR]


def test_torch_memory_savers_driver_error_2_is_out_of_memory(tmp_path: Path) -> None:
    # real: volcengine/verl#1431 (SGLang rollout, then a rank's watchdog timeout)
    top = diagnose(tmp_path, """
[2025-05-09 17:37:48] (WorkerDict pid=60511) [torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103
[2025-05-09 17:37:48] (WorkerDict pid=60510) [rank3]:[E509 17:37:47.665078263 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1420, OpType=COALESCED, NumelIn=48660480, NumelOut=778567680, Timeout(ms)=1800000) ran for 1800033 milliseconds before timing out.
""").hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and "pid 60511" in top.title
    assert not [e for e in events_of("[torch_memory_saver.cpp] CUresult error  result=1 file=x func=y line=3")
                if e.kind is Kind.CUDA_OOM]


def test_a_link_local_address_is_the_wrong_interface_a_container_bridge_is_loopbacks(tmp_path: Path) -> None:
    # real: ultralytics/yolov5#12811 (SageMaker), NVIDIA/nccl#859 (AWS Batch's ecs-eth0)
    abort = ("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
             "Last error:\nsocketStartConnect: Connect to 169.254.255.18<58539> failed : Software caused connection "
             "abort\n")
    top = diagnose(tmp_path, abort).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and "169.254.255.18" in top.title
    ecs = diagnose(tmp_path, "ip-10-14-51-239:333:333 [0] NCCL INFO Bootstrap : Using ecs-eth0:169.254.172.2<0>\n"
                             "ip-10-14-51-239:333:333 [0] NCCL INFO NET/Socket : Using [0]ecs-eth0:169.254.172.2<0> "
                             "[1]eth0:10.14.51.239<0>\n").hypotheses[0]
    assert ecs.category is Category.LOOPBACK_ADDRESS and ecs.culprit_hosts == ("ip-10-14-51-239",)


def test_srun_task_numbers_are_ranks_when_a_host_ran_several_tasks(tmp_path: Path) -> None:
    # real: facebookresearch/deit#102 (16 tasks on two hosts: one task per GPU)
    tail = """srun: error: learnfair0824: task 5: Exited with exit code 1
srun: launch/slurm: _step_signal: Terminating StepId=43575862.0
srun: error: learnfair0824: tasks 3,7: Killed
srun: error: learnfair0833: tasks 9-10,12-15: Killed
"""
    top = diagnose(tmp_path, tail).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (5,)
    # one task per host (torchrun under srun): the number is the node's, not a rank
    nodes = diagnose(tmp_path, "srun: error: gpu-a: task 1: Exited with exit code 1\n"
                               "srun: error: gpu-b: task 0: Killed\n").hypotheses[0]
    assert nodes.category is Category.RANK_CRASHED and nodes.culprit_ranks == () and "gpu-a" in nodes.title
    # real: saforem2/ezpz#238 (a node killed: srun names its four tasks, each a rank)
    killed = diagnose(tmp_path, "srun: error: nid001321: tasks 4-7: Killed\n").hypotheses[0]
    assert killed.category is Category.RANK_KILLED and killed.culprit_ranks == (4, 5, 6, 7)
    assert "nid001321" in killed.culprit_hosts


def test_a_pasted_hosts_line_names_the_host_that_advertised_loopback(tmp_path: Path) -> None:
    # real: ray-project/ray#24305 (getent hosts `hostname` on the head: 127.0.0.1 PC103686)
    refused = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [127.0.0.1]:14221: Connection refused\n"
    top = diagnose(tmp_path, refused + "127.0.0.1       PC103686\n127.0.0.1 localhost\n").hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and top.culprit_hosts == ("PC103686",)
    alone = diagnose(tmp_path, "127.0.1.1   node7\nValueError: bad batch\n").hypotheses
    assert all(h.category is not Category.LOOPBACK_ADDRESS for h in alone)  # a hosts line proves nothing alone
    assert not events_of("127.0.0.1 localhost localhost.localdomain")


def test_old_nccls_socket_creation_without_an_address_family_is_no_interface(tmp_path: Path) -> None:
    # real: NVIDIA/nccl#210 (NCCL 2.3/2.4: no usable IP interface, the WARN pasted without its host prefix)
    top = diagnose(tmp_path, "include/socket.h:344 WARN Socket creation failed : Address family not supported by "
                             "protocol\n").hypotheses[0]
    assert top.category is Category.INTERFACE_MISSING


@pytest.mark.parametrize(("line", "host"), [
    ("127.0.1.1   node7", "node7"),
    ("127.0.0.1\tlocalhost gpu-a01 gpu-a01.cluster", "gpu-a01"),
    ("  127.0.1.1 ip-10-0-0-5.ec2.internal ip-10-0-0-5", "ip-10-0-0-5.ec2.internal"),
    ("127.0.0.1 localhost localhost.localdomain", None),  # only the local names: nothing to blame
    ("::1 ip6-localhost ip6-loopback", None),
    ("connect to 127.0.0.1 failed", None),  # prose, not a hosts entry
])
def test_the_hosts_parser_reads_a_host_name_on_loopback(line: str, host: str | None) -> None:
    found = [e for e in events_of(line) if e.kind is Kind.HOSTNAME_LOOPBACK]
    assert [e.origin.host for e in found] == ([host] if host else [])
