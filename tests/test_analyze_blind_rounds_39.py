"""Readings of the hundred-and-sixty-second to -fourth rounds (``r165*``: self-supervised and vision-language
codebases, OpenMMLab and detection repositories, MosaicML's stack and distributed checkpoints, torch.compile with DDP
and FSDP and weather models, non-English posts; ``r166*``: expert-parallel stacks, QLoRA and PEFT on several GPUs,
distributed optimizers, robotics simulation, federated learning and RPC; ``r167*``: image-generation trainers,
evaluation harnesses, time-series and AutoML libraries, medical imaging, the newest RL frameworks) and of the hangs
pasted as native stacks (``r162d*``). One behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category, Origin, Ref
from syncdoctor.analyze.parsers.base import Line
from syncdoctor.analyze.parsers.native import parse


def _frames(body: str) -> list[str]:
    line = Line(text=body, body=body, ref=Ref("paste.log", 1), origin=Origin())
    return [str(e.data["function"]) for e in parse(line)]


@pytest.mark.parametrize(("body", "function"), [
    ("#2  0x00007fc204d345fd in ncclCommAbort () from XXX", "ncclCommAbort"),
    ("#1  0x00007f in pncclCommDestroy (comm=0x55) at init.cc:2061", "ncclCommDestroy"),
    ("#3  c10d::ProcessGroupNCCL::abort() at ProcessGroupNCCL.cpp:1201", "ProcessGroupNCCL::abort"),
    ("    frame #3: 0x00007fb090db1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664", "ProcessGroupNCCL::abort"),
    ("  * frame #0: 0x00007fb0 libnccl.so.2`ncclCommAbort + 12", "ncclCommAbort"),
    ("    c10d::NCCLComm::ncclCommAbort (libtorch_cuda.so)", "ncclCommAbort"),
    ("    c10d::abortCommsFromMap (libtorch_cuda.so)", "ProcessGroupNCCL::abort"),
    ("ncclCommAbort (init.cc:1931)", "ncclCommAbort"),
])
def test_a_native_frame_inside_nccl_s_teardown_is_read(body: str, function: str) -> None:
    assert _frames(body) == [function]


@pytest.mark.parametrize("body", [
    # c10's backtrace under a C++ exception: an error's trace, not a hung thread's
    "frame #3: c10d::ProcessGroupNCCL::abort() + 0x3c (0x7f1 in /usr/lib/python3/torch/lib/libtorch_cuda.so)",
    # PyTorch's and NCCL's own lines that name the call
    "[rank0]:[W1114 ProcessGroupNCCL.cpp:1168] [PG 0 Rank 0] ProcessGroupNCCL destroyed communicator via ncclCommAbort",
    "NCCL WARN commReclaim: cleanup comm 0x3a0f7f50 rank 1 failed in destroy/abort, error 1",
    "#4  0x00007f in ncclAllReduce () from /usr/lib/libnccl.so.2",
    "we call ncclCommAbort (as the docs say) when a peer fails",
])
def test_other_lines_naming_the_teardown_are_not_frames_of_it(body: str) -> None:
    assert _frames(body) == []


# real: NVIDIA/nccl#863 (r162d): the survivor's abort waits in commReclaim for a peer the test killed
_ABORT_STACK = """\
#0  0x00007fc349513d2d in __GI___pthread_timedjoin_ex (threadid=140471077381888, thread_return=0x0, abstime=0x0, block=<optimized out>) at pthread_join_common.c:89
#1  0x00007fc204d33e27 in commReclaim(ncclComm*) () from XXX
#2  0x00007fc204d345fd in ncclCommAbort () from XXX
"""


def test_a_stack_hung_in_nccl_s_abort_is_read_not_silent(tmp_path: Path) -> None:
    top = top_of(tmp_path, _ABORT_STACK)
    assert top.category is Category.WATCHDOG_STUCK and "teardown" in top.title and "ncclCommAbort" in top.title
    assert "2.19.1" in top.fix and "first error" in top.fix and top.confidence <= 0.3
    # under the error that started the abort, that error is the reading
    oom = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total "
           "capacity of 79.10 GiB of which 5.06 MiB is free.\n")
    assert top_of(tmp_path, oom + _ABORT_STACK).category is Category.RANK_OUT_OF_MEMORY
    # a stack in a collective, not in the teardown, is no such hang
    assert not diagnose_paste(tmp_path, "#4  0x00007f in ncclAllReduce () from /usr/lib/libnccl.so.2\n").hypotheses


# real: hiyouga/LlamaFactory#5560 (r165e): each node's terminal, launched with a different MASTER_ADDR, hung at start
_NODE_1 = ("# FORCE_TORCHRUN=1 NNODES=2 RANK=1 MASTER_ADDR=172.16.0.97 MASTER_PORT=29500 llamafactory-cli train "
           "examples/train_lora/llama3_lora_sft_ds3.yaml --no_ssh\n"
           "09/27/2024 11:34:41 - INFO - llamafactory.cli - Initializing distributed tasks at: 172.16.0.97:29500\n")
_NODE_0 = ("$ FORCE_TORCHRUN=1 NNODES=2 RANK=0 MASTER_ADDR=172.16.0.194 MASTER_PORT=29500 llamafactory-cli train "
           "examples/train_lora/llama3_lora_sft_ds3.yaml --no_ssh\n")


def test_nodes_given_different_store_addresses_never_meet(tmp_path: Path) -> None:
    top = top_of(tmp_path, _NODE_1 + _NODE_0)
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "different store addresses" in top.title, top.title
    assert "172.16.0.97" in top.title and "172.16.0.194" in top.title and "same MASTER_ADDR" in top.fix
    # with the store's timeout in the paste, the mismatch is why it timed out
    timeout = ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients "
               "joined.\n")
    top = top_of(tmp_path, _NODE_1 + _NODE_0 + timeout)
    assert "different store addresses" in top.title and top.confidence >= 0.8, top.title


@pytest.mark.parametrize("paste", [
    # one node launched twice, its address corrected: no node ranks that differ, one input
    "$ torchrun --nnodes=2 --master_addr=10.0.0.5 --master_port=29500 train.py\n"
    "$ torchrun --nnodes=2 --master_addr=10.0.0.7 --master_port=29500 train.py\n",
    # the first node reaching its own store by loopback, the other by its address
    "$ MASTER_ADDR=localhost NODE_RANK=0 torchrun --nnodes=2 train.py\n"
    "$ MASTER_ADDR=10.0.0.5 NODE_RANK=1 torchrun --nnodes=2 train.py\n",
    # a name and an address may be one host
    "$ torchrun --node_rank=0 --master_addr=node01 train.py\n$ torchrun --node_rank=1 --master_addr=10.0.0.5 train.py\n",
])
def test_store_addresses_that_may_be_one_are_not_compared(tmp_path: Path, paste: str) -> None:
    hypotheses = diagnose_paste(tmp_path, paste).hypotheses
    assert not any("different store addresses" in h.title for h in hypotheses), [h.title for h in hypotheses]


@pytest.mark.parametrize("paste", [
    "$ torchrun --node_rank=0 --master_addr=10.0.0.5 train.py\n$ torchrun --node_rank=1 --master_addr=10.0.0.6 train.py\n",
    "$ accelerate launch --machine_rank 0 --main_process_ip 10.0.0.5 train.py\n"
    "$ accelerate launch --machine_rank 1 --main_process_ip 10.0.0.6 train.py\n",
])
def test_node_ranks_that_differ_in_one_paste_are_two_nodes(tmp_path: Path, paste: str) -> None:
    top = top_of(tmp_path, paste)
    assert "different store addresses" in top.title, top.title


# real: hiyouga/LlamaFactory#9350 (r165e): the agent's store wait ran out before anything ran (2.3+: no time given)
_POLL = ("[W1025 14:37:21.179 socket.cpp:462] [c10d] waitForInput: poll for socket SocketImpl(fd=66, "
         "addr=[::ffff:10.164.0.78]:50434, remote=[::ffff:10.164.0.78]:29500) returned 0, likely a timeout\n")


def test_a_store_poll_that_timed_out_before_anything_ran_is_the_rendezvous(tmp_path: Path) -> None:
    top = top_of(tmp_path, _POLL)
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "could not form" in top.title, top.title
    # under a progress bar, steps ran: not the group forming
    bar = "17%|#         | 2295/13732 [06:14<9:54:20,  3.12s/it]\n"
    assert top_of(tmp_path, bar + _POLL).category is not Category.RENDEZVOUS_TIMEOUT


# real: facebookresearch/mae#25 (r165a): the submitit launch script run where the cluster's shared folder is not
_SHARED = """\
Traceback (most recent call last):
  File "submitit_pretrain.py", line 39, in get_shared_folder
    raise RuntimeError("No shared folder available")
RuntimeError: No shared folder available
"""


def test_no_shared_folder_for_a_submitit_launch_is_the_setup(tmp_path: Path) -> None:
    top = top_of(tmp_path, _SHARED)
    assert top.category is Category.UNRECOGNISED and "shared folder" in top.title, top.title
    top = top_of(tmp_path, _SHARED.replace("No shared folder available", "No such shared memory segment"))
    assert "shared folder" not in top.title, top.title


# real: pytorch/pytorch#95892 and #100041 (r165c): DCP's sharded optimizer load placing on cuda:<global rank>
_DCP = """\
  File "scripts/train.py", line 261, in restore_checkpoint
    optim_state = load_sharded_optimizer_state_dict(
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint/optimizer.py", line 281, in load_sharded_optimizer_state_dict
    state_dict[key] = _shard_tensor(
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/_shard/sharding_spec/chunk_sharding_spec.py", line 166, in shard
    local_tensor = torch.empty(
RuntimeError: CUDA error: invalid device ordinal
"""


def test_an_invalid_device_raised_inside_torch_distributed_is_its_own_error(tmp_path: Path) -> None:
    top = top_of(tmp_path, "Traceback (most recent call last):\n" + _DCP)
    assert top.category is Category.RANK_CRASHED and "inside PyTorch's distributed code" in top.title, top.title
    assert "LOCAL_RANK" in top.fix
    # raised where the program set its device, it is the launch's (more processes than GPUs)
    setting = ("Traceback (most recent call last):\n  File \"train.py\", line 12, in main\n"
               "    torch.cuda.set_device(args.local_rank)\n  File \"/usr/lib/python3/torch/cuda/__init__.py\", "
               "line 350, in set_device\n    torch._C._cuda_setDevice(device)\n"
               "RuntimeError: CUDA error: invalid device ordinal\n")
    assert top_of(tmp_path, setting).category is Category.UNRECOGNISED


# real: mosaicml/streaming#824 (r165c): each rank's traceback cut inside the statement that raised
_CUT_RAISE = """\
[rank6]: Traceback (most recent call last):
[rank6]:   File "/home/u/composer_train.py", line 96, in create_dataloader_and_model
[rank6]:     train_dataloader = create_mds_dataloader(
[rank6]:   File "/venv/lib/python3.10/site-packages/streaming/base/shared/prefix.py", line 237, in get_shm_prefix
[rank6]:     raise RuntimeError(f'Internal error: shared memory pref
"""


def test_a_traceback_cut_on_its_raise_statement_is_that_exception(tmp_path: Path) -> None:
    top = top_of(tmp_path, _CUT_RAISE)
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (6,), (top.title, top.culprit_ranks)
    assert "RuntimeError: Internal error: shared memory pref (at prefix.py:237" in top.what, top.what
    # a bare re-raise says no exception: the paste ends before its error line
    top = top_of(tmp_path, _CUT_RAISE.replace("raise RuntimeError(f'Internal error: shared memory pref", "raise"))
    assert "the paste ends before its error line" in top.title and "Internal error" not in top.what, top.title
    # the message's literal closed on the line: the message without its quote and the rest of the call
    top = top_of(tmp_path, _CUT_RAISE.replace("f'Internal error: shared memory pref", '"world size must be even", 3)'))
    assert "RuntimeError: world size must be even (at" in top.what, top.what


def test_a_library_s_check_that_distributed_is_not_initialised_is_the_setup(tmp_path: Path) -> None:
    # real: FlagOpen/FlagEmbedding#1064 (r136a): BGE-M3's model built before the process group
    top = top_of(tmp_path, "ValueError: Distributed training has not been initialized for representation all gather\n")
    assert top.category is Category.UNRECOGNISED and "before the process group" in top.title, top.title


# real: deepseek-ai/DeepEP#157 (r166a): NVSHMEM's symmetric heap could not be backed (CUresult 2), then the
# illegal memory access and the closed bootstrap socket that follow from it
_NVSHMEM_OOM = """\
/nvshmem/src/host/mem/mem_heap.cpp:1509: non-zero status: 2 cuMemCreate failed

/nvshmem/src/host/mem/mem_heap.cpp:1590: non-zero status: 7 allocate_physical_memory_to_heap failed

[/nvshmem/src/host/coll/barrier/barrier.cpp:21] cuda failed with an illegal memory access was encountered
"""


def test_nvshmem_s_heap_that_cuda_could_not_back_is_out_of_memory(tmp_path: Path) -> None:
    assert top_of(tmp_path, _NVSHMEM_OOM).category is Category.RANK_OUT_OF_MEMORY
    # another status is not memory: the illegal access is what the lines show
    other = _NVSHMEM_OOM.replace("status: 2 cuMemCreate", "status: 1 cuMemCreate")
    assert top_of(tmp_path, other).category is not Category.RANK_OUT_OF_MEMORY


def test_mpi_abort_with_errorcode_zero_still_ended_the_job(tmp_path: Path) -> None:
    # real: FedML-AI/FedML#594 (r166e): rank 3 called MPI_Abort(…, 0) and Open MPI killed every other process
    top = top_of(tmp_path, "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\nwith errorcode 0.\n\n"
                         "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n")
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,), (top.title, top.culprit_ranks)
    assert "called MPI_Abort (errorcode 0)" in top.what and "exited with code 0" not in top.what, top.what
    # a launcher's record of a worker that exited 0 is no failure
    assert not diagnose_paste(tmp_path, "WARNING:torch.distributed.elastic.multiprocessing.api:Worker 0 exited with "
                                        "exit code 0\n").hypotheses


@pytest.mark.parametrize("line", [
    # real: artidoro/qlora#223 (r166b): DDP's message quoted without its class
    "`Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use of a "
    "module parameter outside the `forward` function.",
    "Parameter at index 559 has been marked as ready twice. This means that multiple autograd engine  hooks have "
    "fired for this particular parameter during this iteration.",
])
def test_a_parameter_ready_twice_is_the_program_s_use_of_ddp(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.RANK_CRASHED and "use_reentrant=False" in top.title, top.title


def test_tensorpipe_s_verbs_refusing_the_queue_pair_is_the_setup(tmp_path: Path) -> None:
    # real: pytorch/tensorpipe#413 (r166e): rpc.init_rpc on a host whose IB device refuses TensorPipe's queue pair
    top = top_of(tmp_path, 'RuntimeError: In operator() at tensorpipe/common/ibv.h:172 "": Invalid argument\n')
    assert top.category is Category.UNRECOGNISED and "_transports" in top.title, top.title
    # another TensorPipe file's invalid argument is not the transport's
    top = top_of(tmp_path, 'RuntimeError: In operator() at tensorpipe/core/pipe_impl.cc:172 "": Invalid argument\n')
    assert "_transports" not in top.title, top.title


def test_ray_s_wrapper_names_the_node_by_its_name_too(tmp_path: Path) -> None:
    # real: THUDM/slime#1767 (r167e): Ray given node names, its wrapper says ``ip=`` with the name
    line = ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::MegatronTrainRayActor.train() (pid=1076529, "
            "ip=dlc4e52btvkgc6cp-master-0, actor_id=50f7ee525ea4e0e86f8909b702000000, repr=<slime.Actor>)\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_hosts == ("dlc4e52btvkgc6cp-master-0",), (
        top.title, top.culprit_hosts)
    top = top_of(tmp_path, line.replace("ip=dlc4e52btvkgc6cp-master-0", "ip=10.0.0.7"))
    assert top.culprit_hosts == ("10.0.0.7",), top.culprit_hosts


def test_two_nodes_accelerate_configs_with_different_main_process_ips(tmp_path: Path) -> None:
    # each node's own copy of Accelerate's config (``accelerate config`` run on each), the main node's address differing
    first, second = tmp_path / "node0.yaml", tmp_path / "node1.yaml"
    first.write_text("compute_environment: LOCAL_MACHINE\nmachine_rank: 0\nmain_process_ip: 192.168.1.21\n"
                     "main_process_port: 29500\nnum_machines: 2\n")
    second.write_text("compute_environment: LOCAL_MACHINE\nmachine_rank: 1\nmain_process_ip: 192.168.1.20\n"
                      "main_process_port: 29500\nnum_machines: 2\n")
    from syncdoctor.analyze import analyze_paths
    top = analyze_paths([str(first), str(second)]).diagnosis.hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "192.168.1.20" in top.title, top.title
    # the same address in both: nothing to say
    second.write_text(second.read_text().replace("192.168.1.20", "192.168.1.21"))
    assert not analyze_paths([str(first), str(second)]).diagnosis.hypotheses


@pytest.mark.parametrize(("line", "status"), [
    # real: kvcache-ai/Mooncake#3299 (r169b): the kernel's mlx5 driver on a queue pair's failed completion, in dmesg
    ("[Wed Jul 29 14:40:27 2026] mlx5_bond_0/1: QP 51291 error: local length error (0x8e 0x0 0x0)", 1),
    ("mlx5_0:dump_cqe:272:(pid 0): QP 0x1a error: WR flushed (0x5 0x0 0x0)", None),
    ("mlx5_2/1: QP 77 error: remote access error (0x0 0x0 0x0)", 10),
    # real: ai-dynamo/nixl#1983 (r169b): UCX's EFA transport, its level between the place and the words
    ("[1784621081.896649] [kimi-k2-prefill-pod:537  :1]       srd_iface.c:221  UCX  ERROR send completion[0] with error "
     "on rdmap132s0/0x55cf4425cfb0: Work Request Flushed Error, vendor_err 0x1 wr_id 0x7f8b20022480", 5),
])
def test_rdma_completion_errors_in_the_kernel_s_and_ucx_efa_s_words(tmp_path: Path, line: str,
                                                                     status: int | None) -> None:
    hypotheses = diagnose_paste(tmp_path, line + "\n").hypotheses
    if status is None:  # (not the driver's own form: the words alone are no completion error of a queue pair)
        assert not hypotheses or hypotheses[0].category is not Category.IB_COMPLETION, hypotheses[0].title
        return
    top = hypotheses[0]
    assert top.category is Category.IB_COMPLETION and f"error {status} " in top.title, top.title


# real: k2-fsa/icefall#1764 (r169d): the CUDA error's line cut from the paste, c10's frames of the watchdog left, then
# mp.spawn reporting process 1 dead of SIGABRT
_WATCHDOG_FRAMES = """\
Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 (most recent call first):
frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x3f2 (0x7fb30bdaeec2 in /lib/libc10_cuda.so)
frame #3: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x5e (0x7fb2f0f41d1e in /lib/libtorch_cuda.so)
frame #4: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0xb0 (0x7fb2f0f46db0 in /lib/libtorch_cuda.so)
Traceback (most recent call last):
  File "/home/u/spawn.py", line 184, in join
    raise ProcessExitedException(
torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT
"""


def test_the_watchdog_s_cuda_check_frame_is_the_gpu_s_error_of_the_worker_that_died(tmp_path: Path) -> None:
    top = top_of(tmp_path, _WATCHDOG_FRAMES)
    assert top.category is Category.GPU_ERROR and "local rank 1" in top.title, top.title
    assert top.culprit_local_ranks == (1,), top.culprit_local_ranks
    # with the error's own words in the paste, they are the title's
    top = top_of(tmp_path, "RuntimeError: CUDA error: an illegal memory access was encountered\n" + _WATCHDOG_FRAMES)
    assert "illegal memory access" in top.title and "its own words" not in top.title, top.title
    # a CUDA check elsewhere (a set_device), not the watchdog's: not the GPU's error
    other = _WATCHDOG_FRAMES.replace("c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const",
                                     "c10::cuda::set_device(signed char)")
    assert top_of(tmp_path, other).category is not Category.GPU_ERROR


def test_ranks_that_see_different_numbers_of_collnet_devices(tmp_path: Path) -> None:
    # from NCCL's source (2.30, init.cc): the CollNet (SHARP) twin of the NIC-count check
    top = top_of(tmp_path, "h1:1:2 [0] init.cc:1345 NCCL WARN Detected mixed local CollNet device counts across ranks "
                         "(min 2, max 4). Set NCCL_IGNORE_COLLNET_MISMATCH=1 to continue.\n")
    assert top.category is Category.IB_PORT_DOWN and "CollNet (SHARP) devices (2 on some, 4 on others)" in top.title
    assert "NCCL_IGNORE_COLLNET_MISMATCH=1" in (top.fix or "")


def test_paddle_s_endpoint_list_cut_by_a_wrap_keeps_its_whole_endpoints(tmp_path: Path) -> None:
    # real: PaddlePaddle/PaddleOCR#6455 (r51a) rewrapped at 100 columns by scripts/pasted_forms.py: the list's tail on
    # the next line, its ``]`` with it
    paste = ("server not ready, wait 3 sec to retry...\nnot ready endpoints:['10.36.10.40:6070', '10.36.10.40:6071', "
             "'10.36.10.41:6072', '10.36.10.41:60\n73']\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_NEVER_JOINED and "10.36.10.41:6072" in top.title, top.title
    assert "10.36.10.41:60 " not in top.title and "10.36.10.41:60," not in top.title, top.title


def test_every_rank_echoing_one_address_is_one_giver(tmp_path: Path) -> None:
    # a log where each of 512 ranks echoes the store's address many times, one line naming another: the rule compares
    # who gave each address (an input and a node rank), not every pair of lines
    lines = [f"[rank{i % 512}]: MASTER_ADDR=10.0.0.1 RANK={i % 512} starting" for i in range(1024)]
    top = top_of(tmp_path, "\n".join([*lines, "[rank7]: MASTER_ADDR=10.0.0.9 RANK=7 starting"]) + "\n")
    assert "different store addresses (10.0.0.1 in" in top.title, top.title
    # every line naming one address: nothing to compare
    assert not any("different store addresses" in h.title
                   for h in diagnose_paste(tmp_path, "\n".join(lines) + "\n").hypotheses)


def test_an_rdma_connect_on_a_device_the_pod_lacks_is_the_setup(tmp_path: Path) -> None:
    # real: NVIDIA/nccl-tests#327 (r57c), read whole since a terminal's wrap inside it is joined: SR-IOV functions given
    # differently to each pod
    line = ("ib_device.c:1380 UCX  ERROR   ibv_create_ah(dlid=49152 sl=0 port=1 src_path_bits=0 dgid=fe80::f4f9:72ff:"
            "fe1d:ea79 flow_label=0xffffffff sgid_index=0 traffic_class=0) for RC DEVX QP connect on mlx5_15 failed: "
            "No such device\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.UNRECOGNISED and "UCX_NET_DEVICES" in top.title, top.title
    # the same connect timing out is the queue pair's set-up (the GID, the route)
    top = top_of(tmp_path, line.replace("No such device", "Connection timed out"))
    assert top.category is Category.IB_MODIFY_QP, top.title
