"""Readings of the hundred-and-forty-second round and after (rounds ``r145*`` to ``r150*``: torch.distributed.rpc, Horovod on Spark
and Ray, sharded serving, NVIDIA's examples, c10d's and older libraries' error strings in other repositories, hardware
faults), and of pastes as users save them (no final newline). One behaviour per test, each with the look-alike it must
not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category

# real: karpathy/llm.c#692 (r143), quoted alone; saved as a user saves a paste, without a final newline
_BARE = "MPI support is disabled. Please enable MPI support to use MPI-based NCCL-init method."


@pytest.mark.parametrize("paste", [
    _BARE + "\nbye",  # a last line without a newline
    "> " + _BARE + "\n> ",  # a quoted reply whose last quote mark has no line after it
    "2024-05-01T12:00:00.1Z " + _BARE + "\n2024-05-01T12:00:01.1Z ",  # a timestamp on an empty last line
])
def test_a_paste_without_a_final_newline_is_read_whole(tmp_path: Path, paste: str) -> None:
    """A small paste is read once more, whole, for the words of a cause (the last look); saved without a final
    newline its last line was a block of its own, and the paste no longer counted as small: silent."""
    path = tmp_path / "paste.txt"
    path.write_bytes(paste.encode())  # as saved: no newline added
    hypotheses = analyze_paths([str(path)]).diagnosis.hypotheses
    assert hypotheses and hypotheses[0].category is Category.UNRECOGNISED, paste
    assert "built without" in hypotheses[0].title, hypotheses[0].title


def test_negative_a_healthy_paste_without_a_final_newline_stays_silent(tmp_path: Path) -> None:
    path = tmp_path / "paste.txt"
    path.write_bytes(b"max locked memory       (kbytes, -l) unlimited\nEpoch 1: 100%|##| 100/100 [00:10<00:00, loss=0.1]")
    assert not analyze_paths([str(path)]).diagnosis.hypotheses


# real: ray-project/ray#25866 (r145): Horovod's gloo rendezvous through its HTTP store, on Ray, past its 30 s
_HOROVOD_STORE = (
    "terminate called after throwing an instance of 'gloo::IoException'\n"
    "  what():  [/tmp/pip-install-43a3uo3a/horovod/horovod/common/gloo/http_store.cc:57] Wait timeout after 30 seconds "
    "for key(s): 0. You may want to increase the timeout via HOROVOD_GLOO_TIMEOUT_SECONDS\n"
    "*** SIGABRT received at time=1655335369 on cpu 8 ***\n")


def test_horovods_store_wait_with_its_timeout_is_the_rendezvous(tmp_path: Path) -> None:
    top = top_of(tmp_path, _HOROVOD_STORE)
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "rank 0" in top.title, top.title
    # the abort it caused is not the cause
    assert "SIGABRT" not in top.title


def test_negative_a_worker_aborted_without_the_store_wait_is_its_crash(tmp_path: Path) -> None:
    paste = _HOROVOD_STORE.replace("Wait timeout after 30 seconds for key(s): 0.", "Connection reset by peer.")
    assert top_of(tmp_path, paste).category is not Category.RENDEZVOUS_TIMEOUT


# real: pytorch/pytorch#53717 (r145): PyTorch's internal check in a line of its C++ log, torch.distributed.rpc
_INTERNAL = ('[E thread_pool.cpp:112] Exception in thread pool task: !completed() INTERNAL ASSERT FAILED at '
             '"/opt/conda/conda-bld/pytorch_1614378083779/work/aten/src/ATen/core/ivalue_inl.h":534, please report a bug '
             'to PyTorch.\n')


def test_pytorchs_internal_assertion_in_its_log_is_the_process_stopping(tmp_path: Path) -> None:
    top = top_of(tmp_path, _INTERNAL)
    assert top.category is Category.RANK_CRASHED and "failed assertion" in top.title, top.title


def test_negative_an_internal_assertion_of_the_communication_library_is_not_the_programs(tmp_path: Path) -> None:
    paste = _INTERNAL.replace("aten/src/ATen/core/ivalue_inl.h", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp")
    assert top_of(tmp_path, paste).category is not Category.RANK_CRASHED


# real: huggingface/text-generation-inference#686 and #663 (r145): TGI refusing a sharded model without its kernels
_NOT_IMPLEMENTED = ("2023-07-24T02:39:19.746433Z  WARN text_generation_launcher: Could not import Flash Attention enabled "
                    "models: GPU with CUDA capability 7 0 is not supported\n"
                    "Traceback (most recent call last):\n"
                    '  File "/opt/conda/lib/python3.9/site-packages/text_generation_server/models/__init__.py", line 193, '
                    "in get_model\n"
                    '    raise NotImplementedError(FLASH_ATT_ERROR_MESSAGE.format("Sharded Llama"))\n'
                    "NotImplementedError: Sharded Llama requires Flash Attention enabled models.\n")


# real: huggingface/text-generation-inference#564 (r145): the vocabulary split over the shards asked for
_SHARDS = ('  File "/opt/conda/lib/python3.9/site-packages/text_generation_server/utils/weights.py", line 84, in '
           "get_sharded\n    assert (\n"
           "AssertionError: The choosen size 50432 is not compatible with sharding on 3 shards\n")


# real: NVIDIA/nccl#1561 (r146): Jetson's PyTorch wheel without NCCL, its warning in a Python session
_NO_NCCL = (">>> torch.cuda.nccl.is_available(torch.randn(1).cuda())\n"
            "/usr/local/lib/python3.8/dist-packages/torch/cuda/nccl.py:15: UserWarning: PyTorch is not compiled with "
            "NCCL support\n  warnings.warn('PyTorch is not compiled with NCCL support')\nFalse\n")
# real: meta-llama/llama3#187 (r146): torchrun on a Mac, the macOS build's torch._C without CUDA bindings
_NO_CUDA = ('[rank0]:   File "/Users/xx/Library/Python/3.9/lib/python/site-packages/torch/cuda/__init__.py", line 399, '
            "in set_device\n[rank0]:     torch._C._cuda_setDevice(device)\n"
            "[rank0]: AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'\n")
# real: chemprop/chemprop#1261 (r146): Lightning refusing DDP on Apple's GPU
_MPS = ("ValueError: You set `strategy=ddp`, but strategies from the DDP family are not supported on the MPS "
        "accelerator. Either explicitly set `accelerator='cpu'` or change the strategy.\n")


@pytest.mark.parametrize(("paste", "words"), [
    (_NOT_IMPLEMENTED, "has not implemented"),
    (_SHARDS, "check of the job's setup"),
    (_NO_NCCL, "without NCCL"),
    (_NO_CUDA, "without CUDA"),
    (_MPS, "configuration the program refused"),
])
def test_a_build_or_device_without_what_the_job_asks_is_the_setup(tmp_path: Path, paste: str, words: str) -> None:
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and words in top.title, top.title


@pytest.mark.parametrize("paste", [
    # a NotImplementedError without its reason; an assertion about the data
    _NOT_IMPLEMENTED.replace("Sharded Llama requires Flash Attention enabled models.", "Cannot copy out of meta tensor"),
    _SHARDS.replace("The choosen size 50432 is not compatible with sharding on 3 shards", "loss is nan on 3 samples"),
    _NO_CUDA.replace("_cuda_setDevice", "_get_tracing_state"),  # another missing binding: the program's own error
    _MPS.replace("on the MPS accelerator", "for the given targets"),
])
def test_negative_look_alikes_of_a_build_without_it_are_the_programs_error(tmp_path: Path, paste: str) -> None:
    assert top_of(tmp_path, paste).category is Category.RANK_CRASHED


# real: pytorch/tensorpipe#447 (r145): an empty CUDA tensor sent over RPC, CUDA refusing the pointer; no NCCL anywhere
_REFUSED = ("terminate called after throwing an instance of 'std::runtime_error'\n"
            '  what():  In cudaDeviceForPointer at tensorpipe/common/cuda.h:162 "cudaLib.pointerGetAttribute( &deviceIdx, '
            'CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, reinterpret_cast<CUdeviceptr>(ptr))(1) CUDA_ERROR_INVALID_VALUE '
            '(invalid argument)"\nSIGABRT(6), PID: 4036392, Thread 4036392:\n')


def test_a_cuda_call_refused_without_nccl_is_the_callers_error(tmp_path: Path) -> None:
    top = top_of(tmp_path, _REFUSED)
    assert top.category is Category.RANK_CRASHED and "a CUDA call was refused" in top.title, top.title


def test_negative_a_feature_cuda_refuses_without_nccl_is_no_argument_of_the_program(tmp_path: Path) -> None:
    top = top_of(tmp_path, "RuntimeError: CUDA error: operation not supported\n")
    assert top.category is Category.GPU_ERROR and "NCCL made" not in top.title, top.title


def test_negative_a_cuda_call_refused_inside_nccl_stays_nccls(tmp_path: Path) -> None:
    paste = ("node1:2043:2101 [0] include/alloc.h:125 NCCL WARN Cuda failure 'invalid argument'\n"
             "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled cuda "
             "error, NCCL version 2.18.1\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.GPU_ERROR and "NCCL made" in top.title, top.title


# real: NVIDIA/apex#393 (r129), its line hard wrapped by a terminal: env://'s words cut after the variable's name
def test_envs_unset_variable_cut_by_a_wrap_is_still_the_launch(tmp_path: Path) -> None:
    paste = ("ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable RANK \n"
             "expected, but not set\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "a variable the launcher sets, not set" in top.title, top.title


def test_negative_a_malformed_address_is_still_the_address(tmp_path: Path) -> None:
    top = top_of(tmp_path, "ValueError: Error initializing torch.distributed using tcp:// rendezvous: port number missing\n")
    assert top.category is Category.PEER_UNREACHABLE and "invalid address" in top.title, top.title


# real: meta-pytorch/torchforge#743 (r147): an engine in Docker took an IPv6 link-local address for its head node's
_LINK_LOCAL_STORE = ("[c10d] The IPv4 network addresses of (fe80::222:48ff:fe49:ba90, 51391) cannot be retrieved\n"
                     "       (gai error: -9 - Address family for hostname not supported).\n")


def test_a_store_address_that_is_link_local_is_the_wrong_interface(tmp_path: Path) -> None:
    top = top_of(tmp_path, _LINK_LOCAL_STORE)
    assert top.category is Category.INTERFACE_MISMATCH and "link-local" in top.title, top.title


def test_negative_a_routable_store_address_that_does_not_resolve_stays_unreachable(tmp_path: Path) -> None:
    top = top_of(tmp_path, _LINK_LOCAL_STORE.replace("fe80::222:48ff:fe49:ba90", "2001:db8::5"))
    assert top.category is Category.PEER_UNREACHABLE, top.title


# real: NVIDIA/nccl#677 (r148): Megatron's bf16 pipeline on a PyTorch whose send/recv predate bfloat16 (Open MPI's
# prefixes); Lightning#14347 (held): NCCL 2.9 under a bf16 broadcast
@pytest.mark.parametrize("paste", [
    "[1,1]<stderr>:RuntimeError[1,1]<stderr>:: Unconvertible NCCL type BFloat16\n",
    "RuntimeError: Input tensor data type is not supported for NCCL process group: BFloat16\n",
])
def test_a_dtype_the_builds_nccl_does_not_take_is_the_setup(tmp_path: Path, paste: str) -> None:
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "data type the NCCL of this build" in top.title, top.title


# real: pytorch/pytorch#99518 (r148): DDP of a complex model on NCCL
def test_a_dtype_no_nccl_takes_is_the_programs_call(tmp_path: Path) -> None:
    top = top_of(tmp_path, "RuntimeError: Input tensor data type is not supported for NCCL process group: ComplexFloat\n")
    assert top.category is Category.RANK_CRASHED and "view_as_real" in top.title, top.title


# real: IBM/terratorch#1004 (r148): Lightning's sync_dist all_reduce of a CPU value on an NCCL-only group; the same
# words for an XPU tensor (r53e, held) are a backend the environment lacks
_CPU_TENSOR = ('[rank2]:   File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line '
               "2501, in all_reduce\n[rank2]:     work = group.allreduce([tensor], opts)\n"
               "[rank2]: RuntimeError: No backend type associated with device type cpu\n")


def test_a_cpu_tensor_in_an_nccl_group_is_the_programs_call(tmp_path: Path) -> None:
    top = top_of(tmp_path, _CPU_TENSOR)
    assert top.category is Category.RANK_CRASHED and "CPU tensor" in top.title and top.culprit_ranks == (2,), top.title


def test_negative_a_device_without_a_backend_is_the_setup(tmp_path: Path) -> None:
    top = top_of(tmp_path, _CPU_TENSOR.replace("device type cpu", "device type xpu"))
    assert top.category is Category.UNRECOGNISED and "no backend for xpu" in top.title, top.title


# real: open-unlearning#38 (r148): a setting refused with it written as its assignment
def test_a_setting_refused_as_its_assignment_is_the_configuration(tmp_path: Path) -> None:
    paste = ("ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a "
             "`device_map`.\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "configuration the program refused" in top.title, top.title


# real: unimatch#97 and pfrl#55 (r149): a checkpoint loaded into a model it does not fit (layers added; DDP's prefix)
_STATE_DICT = ("RuntimeError: Error(s) in loading state_dict for DistributedDataParallel:\n"
               '\tMissing key(s) in state_dict: "module.backbone.trans.weight", "module.backbone.trans.bias".\n')
# real: pytorch/pytorch#104690 (r149): frozen and trainable parameters in one FSDP unit
_FLAT = "ValueError: `FlatParameter` requires uniform `requires_grad`\n"


@pytest.mark.parametrize(("paste", "words"), [
    (_STATE_DICT, "checkpoint that does not fit the model"),
    (_FLAT, "a model placed in a way its distributed wrapper cannot take"),
])
def test_a_checkpoint_or_a_model_that_does_not_fit_the_run_is_the_setup(tmp_path: Path, paste: str, words: str) -> None:
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and words in top.title, top.title


@pytest.mark.parametrize("paste", [
    "RuntimeError: Error in loading the batch of shard 3 for DistributedDataParallel\n",
    "ValueError: `FlatParameter` is not a leaf tensor\n",
])
def test_negative_look_alikes_of_a_checkpoint_or_model_that_does_not_fit(tmp_path: Path, paste: str) -> None:
    assert top_of(tmp_path, paste).category is Category.RANK_CRASHED


# real: pytorch/tensorpipe#460 (r150): libuv's lower-case words for EMFILE; horovod/horovod#629 (r150): a library that
# does not load, quoted without its ImportError
@pytest.mark.parametrize(("paste", "words"), [
    ("terminate called after throwing an instance of 'std::runtime_error'\n"
     '  what():  In connectFromLoop at tensorpipe/transport/uv/uv.h:297 "rv < 0: too many open files"\n',
     "out of file descriptors"),
    ("mpi_lib_v2.cpython-36m-x86_64-linux-gnu.so: undefined symbol: _ZN3c106detail26device_guard_impl_registryE\n",
     "a library that does not load"),
])
def test_a_resource_or_a_library_in_other_words_is_the_environment(tmp_path: Path, paste: str, words: str) -> None:
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and words in top.title, top.title


def test_negative_a_library_named_without_an_error_stays_silent(tmp_path: Path) -> None:
    paste = "loaded mpi_lib_v2.cpython-36m-x86_64-linux-gnu.so: symbols resolved\nopen files: 812 of 65536\n"
    assert not diagnose_paste(tmp_path, paste).hypotheses
