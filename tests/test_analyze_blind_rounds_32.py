"""Readings of the hundred-and-twentieth round and after (macOS and Windows, weights moved between a trainer and an
inference engine, addresses and name resolution): one behaviour per test, each with the look-alike it must not
catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of
from syncdoctor.analyze.model import Category, Kind

# real: pytorch/pytorch#149537 (init_process_group without a backend on an Apple silicon Mac, PyTorch 2.6)
_MPS = ("ValueError: We detected accelerator mps on your machine. But we don't know which communication backend to "
        "use for this accelerator. Please specify the `backend` argument in the `init_process_group` call.\n")


def test_no_backend_for_the_device_is_the_calls_setup(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _MPS).hypotheses[0]
    assert top.category is Category.UNRECOGNISED
    assert "no backend" in top.title and "gloo" in top.title


def test_negative_another_value_error_of_the_process_is_its_own_failure(tmp_path: Path) -> None:
    paste = "ValueError: We detected a mismatch in the batch: expected 8 samples, got 7\n"
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_CRASHED


# real: OpenRLHF/OpenRLHF#957 (CUDA IPC of weights to vLLM with expandable segments on, a 3.x kernel)
_PIDFD = ("RuntimeError: The kernel on this machine does not support the pidfd_open syscall needed to use IPC for CUDA "
          "tensors when expandable_segments:True is set. Consider using expandable_segments:False via "
          "torch.cuda.memory._set_allocator_settings('expandable_segments:False') for this allocation.\n")


def test_cuda_ipc_with_expandable_segments_on_an_old_kernel_is_the_hosts_setup(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _PIDFD).hypotheses[0]
    assert top.category is Category.UNRECOGNISED
    assert "pidfd_open" in top.title and "expandable_segments off" in top.title


def test_negative_expandable_segments_advice_under_an_oom_is_still_the_oom(tmp_path: Path) -> None:
    paste = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
             "79.15 GiB of which 1.02 GiB is free. If reserved but unallocated memory is large try setting "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n")
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_OUT_OF_MEMORY


# real: hpcaitech/ColossalAI#2199 (an IPv6 address written into tcp://ADDR:PORT without brackets, Python 3.7's urllib)
_V6_PORT = """  File "/usr/local/lib/python3.7/dist-packages/torch/distributed/rendezvous.py", line 169, in _tcp_rendezvous_handler
    if not result.port:
  File "/usr/lib/python3.7/urllib/parse.py", line 169, in port
    port = int(port, 10)
ValueError: invalid literal for int() with base 10: 'fdbd:dc03:9:222:4300::55:29500'.
"""


def test_an_ipv6_address_read_as_the_port_is_an_invalid_store_address(tmp_path: Path) -> None:
    (store,) = [e for e in events_of(_V6_PORT) if e.kind is Kind.STORE_ERROR]
    assert store.data["invalid_address"] and "without its brackets" in store.data["error"]
    assert diagnose_paste(tmp_path, _V6_PORT).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_negative_another_int_literal_is_no_address() -> None:
    for text in ("ValueError: invalid literal for int() with base 10: 'abc'\n",
                 "ValueError: invalid literal for int() with base 10: '12:30'\n"):  # one colon: a time, no IPv6
        assert not [e for e in events_of(text) if e.kind is Kind.STORE_ERROR]


# real: verl-project/verl#2550 (MASTER_ADDR set to a Ray node's IPv6 address in brackets: every worker loops in the
# store's creation)
_BRACKETS = ("[W715 20:00:39.842901446 socket.cpp:752] [c10d] The IPv6 network addresses of "
             "([2605:340:cd51:4900:73e8:12cb:cfe2:1540], 59699) cannot be retrieved (gai error: -2 - Name or service "
             "not known).\n")
_STUCK = """ Thread 206492 (idle): "MainThread"
    _create_c10d_store (torch/distributed/rendezvous.py:189)
    _env_rendezvous_handler (torch/distributed/rendezvous.py:269)
    init_process_group (torch/distributed/distributed_c10d.py:1520)
"""


def test_a_bracketed_ipv6_store_address_is_no_host_name(tmp_path: Path) -> None:
    (store,) = [e for e in events_of(_BRACKETS) if e.kind is Kind.STORE_ERROR]
    assert store.data["store_host"].startswith("[2605:") and "in brackets" in store.data["error"]
    top = diagnose_paste(tmp_path, _BRACKETS + _STUCK).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE  # the store's address, not a member that never arrived


def test_negative_a_host_names_ipv6_lookup_is_still_the_harmless_warning() -> None:
    line = _BRACKETS.replace("[2605:340:cd51:4900:73e8:12cb:cfe2:1540]", "node-0")
    events = events_of(line)
    assert [e.kind for e in events if e.kind in (Kind.STORE_ERROR, Kind.STORE_NAME_UNRESOLVED)] == [
        Kind.STORE_NAME_UNRESOLVED]


# real: NVIDIA/apex#428 (apex's extension built before PyTorch was upgraded) and pytorch/pytorch#186591 (torch against
# an NCCL wheel of another CUDA), modal-projects/training-gym#421 (libmlx5 newer than the image's libibverbs, the
# message wrapped by the paste) and gpustack/gpustack#1640 (Ray of two versions in one cluster)
_LIBRARIES = (
    "ImportError: /usr/local/anaconda3-tf1/lib/python3.7/site-packages/fused_layer_norm_cuda.cpython-37m-x86_64-linux-"
    "gnu.so: undefined symbol: _ZN2at7getTypeERKNS_6TensorE\n",
    "ImportError: /home/u/.env/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
    "ncclCommResume\n",
    "ImportError: /usr/lib/x86_64-linux-gnu/libibverbs.so.1:\nversion `IBVERBS_PRIVATE_34' not found\n"
    "(required by /usr/lib/x86_64-linux-gnu/libmlx5.so.1)\n",
    "RuntimeError: Version mismatch: The cluster was started with:\n    Ray: 2.43.0\n    Python: 3.11.10\n"
    "This process on node 10.18.215.196 was started with:\n    Ray: 2.44.1\n    Python: 3.11.10\n",
)


def test_a_library_that_does_not_load_or_match_is_the_environments_build(tmp_path: Path) -> None:
    for paste in _LIBRARIES:
        top = diagnose_paste(tmp_path, paste).hypotheses[0]
        assert top.category is Category.UNRECOGNISED and "does not load or does not match" in top.title, paste


def test_negative_rdma_cores_symbol_probe_and_a_missing_python_module_are_not_that(tmp_path: Path) -> None:
    # rdma-core's probe of an optional symbol, printed by NCCL 2.21+ on older providers: no failure
    probe = ("dlvsym failed on mlx5dv_reg_dmabuf_mr - /lib/aarch64-linux-gnu/libmlx5.so: undefined symbol: "
             "mlx5dv_reg_dmabuf_mr, version MLX5_1.25\n")
    hypotheses = diagnose_paste(tmp_path, probe).hypotheses
    assert not hypotheses or "does not load or does not match" not in hypotheses[0].title
    # real: pytorch/pytorch#173679 (Triton's cache on a shared file system: the file, not its build)
    stale = ("[rank9]: torch._inductor.exc.InductorError: ImportError: /root/.triton/cache/XU5D/cuda_utils.cpython-310-"
             "x86_64-linux-gnu.so: cannot read file data: Stale file handle\n")
    assert diagnose_paste(tmp_path, stale).hypotheses[0].category is Category.RANK_CRASHED
    module = "ModuleNotFoundError: No module named 'deepspeed'\n"  # a package not installed: no shared object
    assert "does not load or does not match" not in diagnose_paste(tmp_path, module).hypotheses[0].title


# real: awslabs/awsome-distributed-training#292 (aws-ofi-nccl 1.9.0 against the system's EFA libfabric)
_PLUGIN_TOO_NEW = (" [0] NCCL INFO NET/Plugin : dlerror=/opt/amazon/efa/lib/libfabric.so.1: version `FABRIC_1.7' not "
                   "found (required by /fsx/env/lib/python3.10/site-packages/torch/lib/../../../../libnccl-net.so) No "
                   "plugin found (libnccl-net.so), using internal implementation\n")


def test_a_network_plugin_whose_library_is_too_old_did_not_load(tmp_path: Path) -> None:
    (net,) = [e for e in events_of(_PLUGIN_TOO_NEW) if e.kind is Kind.NCCL_NET]
    assert net.data["plugin_broken"] == "libnccl-net.so"
    assert net.data["missing"] == "libfabric.so.1 with version FABRIC_1.7"
    top = diagnose_paste(tmp_path, _PLUGIN_TOO_NEW).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "could not load" in top.title and "internal transport" in top.title


def test_negative_no_plugin_installed_is_no_failure(tmp_path: Path) -> None:
    line = " [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
    (net,) = [e for e in events_of(line) if e.kind is Kind.NCCL_NET]
    assert net.data == {"plugin": "internal"}
    assert not diagnose_paste(tmp_path, line).hypotheses


# real: RLinf/RLinf#1229 (Ray's words for an actor's method that raised, the rest of the paste cut)
_RAY_RAISED = ("Exception occurred while running EnvWorker's function init_worker: exception is ray::EnvWorker.init_worker()"
               " (pid=284461, ip=2605:340:cd51:7700:9a4a:5470:ceda:932e, actor_id=b356225ebd021f331c0899a901000000, "
               "repr=EnvGroup(rank=0))\n")


def test_an_exception_that_occurred_is_never_silence(tmp_path: Path) -> None:
    assert [e.data["word"] for e in events_of(_RAY_RAISED) if e.kind is Kind.ERROR_LINE] == ["Exception occurred"]
    assert diagnose_paste(tmp_path, _RAY_RAISED).hypotheses


def test_negative_a_flag_named_after_an_exception_is_no_error() -> None:
    assert not [e for e in events_of("step 12: exception_occurred=False, retries=0\n") if e.kind is Kind.ERROR_LINE]


# real: sgl-project/sglang#23143 (the peer elided by the paste, the line wrapped: inbox rdma-core on GB300)
_ELIDED = ("NCCL WARN NET/IB: Got completion ... status=IBV_WC_LOC_PROT_ERR(4)\n"
           "                  opcode=IBV_WC_SEND(0) vendor_err=81 hca mlx5_2\n")


def test_an_ib_completion_whose_peer_the_paste_elided_is_still_one() -> None:
    (completion,) = [e for e in events_of(_ELIDED) if e.kind is Kind.IB_COMPLETION_ERROR]
    assert completion.data["status"] == 4 and completion.data["status_text"] == "local protection error"


def test_negative_a_completion_line_without_its_status_is_no_ib_error() -> None:
    assert not [e for e in events_of("NCCL INFO NET/IB: Got completion ... and moved on\n")
                if e.kind is Kind.IB_COMPLETION_ERROR]


# real: pytorch/gloo#340 (gloo's ibverbs transport, its enforce line cut before the check)
_GLOO_IBV = ("gloo/transport/ibverbs/pair.cc:438] wc->status == IBV_WC_SUCCESS. 5 vs 0. Send for slot 0: Work Request "
             "Flushed Error\n")


def test_a_failed_completion_of_gloos_ibverbs_transport_is_an_ib_completion_error(tmp_path: Path) -> None:
    (completion,) = [e for e in events_of(_GLOO_IBV) if e.kind is Kind.IB_COMPLETION_ERROR]
    assert completion.data["status"] == 5 and completion.data["transport"] == "gloo"
    assert diagnose_paste(tmp_path, _GLOO_IBV).hypotheses[0].category is Category.IB_COMPLETION


def test_negative_the_source_line_of_that_check_is_no_completion() -> None:
    assert not [e for e in events_of("    GLOO_ENFORCE_EQ(wc->status, IBV_WC_SUCCESS, \"Send for slot \", slot);\n")
                if e.kind is Kind.IB_COMPLETION_ERROR]


# real: sgl-project/sglang#29127 (Mooncake's failed slice, its line wrapped by the author before the last field; and
# rdma-core's ionic provider, AMD Pensando NICs, on the same transfer)
_WRAPPED_SLICE = ("worker_pool.cpp:294] Worker: Process failed for slice (... local_nic: rdma5 ...\n"
                  "    retry_cnt: N): transport retry counter exceeded     # = IBV_WC_RETRY_EXC_ERR\n")
_IONIC = "ionic_comp_msn:1277: cqe with error 12 for 0x1 (msn)\n"


def test_a_transfer_engines_slice_wrapped_before_its_status_and_an_ionic_cqe_are_ib_completions(tmp_path: Path) -> None:
    for paste in (_WRAPPED_SLICE, _IONIC):
        (completion,) = [e for e in events_of(paste) if e.kind is Kind.IB_COMPLETION_ERROR]
        assert completion.data["status"] == 12, paste
        assert diagnose_paste(tmp_path, paste).hypotheses[0].category in (
            Category.IB_UNREACHABLE_AT_INIT, Category.IB_LINK_FAILURE)


def test_negative_other_words_after_a_retry_count_and_a_cqe_without_its_queue_are_no_completion() -> None:
    for text in ("    retry_cnt: 3): connection reset, retrying the request\n",
                 "debug: cqe with error handling enabled for 4 queues\n"):
        assert not [e for e in events_of(text) if e.kind is Kind.IB_COMPLETION_ERROR], text


# real: hpc/charliecloud#367 (the host's Open MPI 2.1.6 starting ranks whose image has 2.1.1)
_OMPI_RELEASES = ("usock_peer_recv_connect_ack: received different version from [[63455,1],14]: 2.1.1 instead of "
                  "2.1.6\n")


def test_open_mpi_processes_of_two_releases_are_the_jobs_setup(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _OMPI_RELEASES).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "two releases of Open MPI" in top.title


def test_negative_a_package_manager_that_received_a_different_version_is_no_error() -> None:
    line = "pip: received different version from the index than pinned, upgrading numpy\n"
    assert not [e for e in events_of(line) if e.kind is Kind.ERROR_LINE]


# real: facebookarchive/caffe2#1553 (two machines started with different --run_id: the redis store's wait for rank 1,
# its line wrapped by the paste after "Wait timeout")
_CAFFE2_WRAPPED = ("common_world_ops.h:126] Caught store handler timeout exception: \n"
                   "[/root/caffe2/caffe2/distributed/redis_store_handler.cc:126] Wait timeout \n"
                   "for name(s) allreduce_0_cw_op/1 E1201 18:57:26.106040 19152 net_simple.cc:75] \n")


def test_a_store_wait_wrapped_after_its_first_words_still_names_the_missing_rank(tmp_path: Path) -> None:
    (wait,) = [e for e in events_of(_CAFFE2_WRAPPED) if e.kind is Kind.STORE_ERROR]
    assert wait.data["keys"] == "allreduce_0_cw_op/1" and wait.data["missing_ranks"] == [1]
    assert diagnose_paste(tmp_path, _CAFFE2_WRAPPED).hypotheses[0].category is Category.RANK_NEVER_JOINED


def test_negative_for_names_in_prose_is_no_store_wait() -> None:
    assert not [e for e in events_of("Look up the ids for name(s) given on the command line.\n")
                if e.kind is Kind.STORE_ERROR]


# real: pytorch/pytorch#54927 (Pipe's documented example without rpc.init_rpc) and pytorch/tensorpipe#452 (a build
# without the ibv transport: the uncaught exception's what(), then the shell's Aborted)
_NO_AGENT = ("RuntimeError: agent INTERNAL ASSERT FAILED at \"/pytorch/torch/csrc/distributed/rpc/rpc_agent.cpp\":247, "
             "please report a bug to PyTorch. Current RPC agent is not set!\n")
_NO_TRANSPORT = ("  what():  In getTransport at tensorpipe/core/context_impl.cc:147 \"unsupported transport ibv\"\n"
                 "Aborted\n")


def test_rpc_without_its_agent_and_tensorpipe_without_its_transport_are_the_jobs_setup(tmp_path: Path) -> None:
    agent = diagnose_paste(tmp_path, _NO_AGENT).hypotheses[0]
    assert agent.category is Category.UNRECOGNISED and "rpc.init_rpc" in agent.title
    aborted = diagnose_paste(tmp_path, _NO_TRANSPORT).hypotheses[0]
    assert aborted.category is Category.UNRECOGNISED and "SIGABRT" in aborted.title and "TensorPipe" in aborted.title


def test_negative_an_abort_far_below_an_unrelated_what_is_still_a_crash(tmp_path: Path) -> None:
    far = _NO_TRANSPORT.replace("Aborted\n", "step 1\nstep 2\nstep 3\nstep 4\nAborted\n")
    assert diagnose_paste(tmp_path, far).hypotheses[0].category is Category.RANK_CRASHED


# real: Lightning-AI/pytorch-lightning#8707 (a batch script that ran the program without srun: one process of 8)
_SLURM_ONE = ("Multi-processing is handled by Slurm.\nGPU available: True, used: True\n"
              "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8\n")


def test_lightning_under_slurm_with_ranks_that_never_printed_their_joining_line(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _SLURM_ONE).hypotheses[0]
    assert top.category is Category.RANK_NEVER_JOINED and top.culprit_ranks == tuple(range(1, 8))
    assert "srun" in (top.fix or "")


def test_negative_joining_lines_without_slurm_or_with_every_rank_claim_nothing(tmp_path: Path) -> None:
    # one node's own output under torchrun shows only that node's ranks: no claim
    alone = _SLURM_ONE.replace("Multi-processing is handled by Slurm.\n", "")
    assert not diagnose_paste(tmp_path, alone).hypotheses
    every = "Multi-processing is handled by Slurm.\n" + "".join(
        f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/4\n" for r in range(4))
    assert not diagnose_paste(tmp_path, every).hypotheses


# real: huggingface/transformers#16417 (a vocabulary extended on some ranks: DDP's check, the paste cut in its sizes)
_PARAMS_CUT = "RuntimeError: params[0] in this process with sizes [253\n"


def test_ddps_parameter_check_cut_by_the_paste_is_still_the_models_differing(tmp_path: Path) -> None:
    (check,) = [e for e in events_of(_PARAMS_CUT) if e.kind is Kind.COLLECTIVE_MISMATCH]
    assert check.data["against"] is None
    top = diagnose_paste(tmp_path, _PARAMS_CUT).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and top.culprit_ranks == ()


def test_negative_a_list_named_params_is_no_model_check() -> None:
    assert not [e for e in events_of("ValueError: params[0] must be a tensor, got list\n")
                if e.kind is Kind.COLLECTIVE_MISMATCH]


# real: the AI cloud validation report of r42b (Kubernetes' default 64 MiB /dev/shm: UCX's shared-memory transport)
_UCX_FIFO = "mm_iface failed to allocate receive FIFO\n...\n[ucp_address_unpack] Caught signal 11 (Segmentation fault)\n"


def test_a_signal_right_after_an_error_that_names_its_cause_died_of_it(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _UCX_FIFO).hypotheses[0]
    assert top.category is Category.SHM_EXHAUSTED and "SIGSEGV" in top.title


def test_negative_a_signal_after_an_error_that_names_no_cause_is_the_crash(tmp_path: Path) -> None:
    paste = _UCX_FIFO.replace("mm_iface failed to allocate receive FIFO", "step 12 failed to converge, retrying")
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_CRASHED


# real: NVIDIA/TransformerEngine#1170 (its userbuffers read NCCL_SOCKET_IFNAME=eth as one exact interface name)
_NO_IFACE = ('[rank1]:     raise OSError(f"Invalid network interface: {ifname}") from err\n'
             "[rank1]: OSError: Invalid network interface: eth\n")


def test_a_programs_lookup_of_an_interface_that_is_not_there_is_the_interface_missing(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _NO_IFACE).hypotheses[0]
    assert top.category is Category.INTERFACE_MISSING and top.culprit_ranks == (1,)


def test_negative_a_valid_interface_named_in_a_message_is_no_error() -> None:
    assert not [e for e in events_of("Selected the network interface eth0 (10.0.0.4) for the job\n") if e.kind is Kind.ERROR_LINE]


_SAME_PLACE = ('[rank1]:   File "/te/pytorch/module/base.py", line 149, in initialize_ub\n' + _NO_IFACE.split("\n", 1)[1]
               + "[rank7]: Traceback (most recent call last):\n"
               '[rank7]:   File "/te/pytorch/module/base.py", line 144, in initialize_ub\n'
               "[rank7]:     fcntl.ioctl(\n[rank7]: OSError: [Errno 19] No such device\n")


def test_ranks_that_failed_in_the_same_function_failed_of_the_cause_one_of_them_names(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _SAME_PLACE).hypotheses[0]
    assert top.category is Category.INTERFACE_MISSING and top.culprit_ranks == (1, 7)


def test_negative_a_rank_that_failed_elsewhere_is_its_own_crash(tmp_path: Path) -> None:
    elsewhere = _SAME_PLACE.replace("line 144, in initialize_ub", "line 12, in load_batch")
    hypotheses = diagnose_paste(tmp_path, elsewhere).hypotheses
    crashed = [h for h in hypotheses if h.category is Category.RANK_CRASHED]
    assert crashed and crashed[0].culprit_ranks == (7,)


# real: mosaicml/streaming#306 (two llm-foundry jobs on one server given the same StreamingDataset local directory)
_REUSED = ("ValueError: Reused local directory: ['/tmp/c4/train'] vs ['/tmp/c4/train']. Provide a different one.\n")


def test_a_local_cache_directory_two_jobs_share_is_the_jobs_setup(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _REUSED).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "local cache directory" in top.title


def test_negative_a_directory_reused_on_purpose_is_no_error() -> None:
    assert not [e for e in events_of("INFO: reused local directory /tmp/c4/train for the cache\n")
                if e.kind is Kind.ERROR_LINE]
