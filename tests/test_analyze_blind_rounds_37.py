"""Readings of the hundred-and-forty-ninth and fiftieth rounds (``r152*``: non-English blogs, rented and notebook GPUs,
scientific models at HPC centres; ``r153*``: hyperparameter search over DDP, sequence and expert parallelism,
torch.compile and DCP; ``r154*``: Megatron-Core and NeMo, PyTorch's newest distributed features, pipeline parallelism;
``r155*``: evaluation harnesses, other accelerators, distributed tests in CI; ``r156*``: GPU sharing, other
communication frameworks, GPU data processing; ``r157*``: Lightning of 2020-2022, OCR models, 3D vision). One
behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category


@pytest.mark.parametrize("line", [
    # real: databrickslabs/dolly#11 (8x V100), OptimalScale/LMFlow#251 (a Colab T4)
    "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
    # vLLM's words for the same refusal
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
    "compute capability 7.5.",
])
def test_bf16_asked_of_a_gpu_without_it_is_the_setup(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "bfloat16 asked of a GPU without it" in top.title, top.title


def test_a_bf16_tensor_the_program_mishandles_is_its_own_error(tmp_path: Path) -> None:
    top = top_of(tmp_path, 'RuntimeError: "addmm_impl_cpu_" not implemented for \'BFloat16\'\n')
    assert "bfloat16 asked of a GPU" not in top.title, top.title


# real: Deci-AI/super-gradients#1204 (r152b): DDP started from a notebook, each worker a copy of the kernel
_KERNEL = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.8/dist-packages/ipykernel_launcher.py", line 17, in <module>
    app.launch_new_instance()
  File "/usr/local/lib/python3.8/dist-packages/traitlets/config/application.py", line 1040, in launch_instance
    app.initialize(argv)
  File "/usr/local/lib/python3.8/dist-packages/ipykernel/kernelapp.py", line 677, in initialize
    self.init_sockets()
  File "/usr/local/lib/python3.8/dist-packages/ipykernel/kernelapp.py", line 316, in init_sockets
    self.shell_port = self._bind_socket(self.shell_socket, self.shell_port)
  File "/usr/local/lib/python3.8/dist-packages/zmq/sugar/socket.py", line 300, in bind
    super().bind(addr)
zmq.error.ZMQError: Address already in use
"""


def test_workers_started_as_copies_of_a_notebook_kernel_are_the_launch(tmp_path: Path) -> None:
    top = top_of(tmp_path, _KERNEL)
    assert top.category is Category.UNRECOGNISED and "notebook's kernel" in top.title, top.title
    assert "notebook_launcher" in (top.fix or "")
    # the same port taken in a script's own server: a port in use, no notebook
    script = _KERNEL.replace("/usr/local/lib/python3.8/dist-packages/ipykernel_launcher.py", "/work/serve.py").replace(
        "ipykernel/kernelapp.py", "myapp/server.py")
    top = top_of(tmp_path, script)
    assert "notebook" not in top.title and top.category is Category.PORT_IN_USE, top


# real: saforem2/ezpz#236 (r153c): an exception of torch.compile's, its class named without "Error"
def test_torch_compiles_own_exception_is_the_processs_error(tmp_path: Path) -> None:
    top = top_of(tmp_path, "[rank0]: torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped\n"
                         "[rank0]:   Explanation: Dynamo developers have intentionally marked that the\n")
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (0,), top
    # (its compile backend's failure alone, quoted as an error no rule explains before: the process's exception now)
    top = top_of(tmp_path, "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n")
    assert top.category is Category.RANK_CRASHED and "BackendCompilerFailed" in top.title, top.title
    # a class of another module named alike is no exception line
    hypotheses = diagnose_paste(tmp_path, "mylib.exc.Unsupported: Attempted to call function\n").hypotheses
    assert not hypotheses or hypotheses[0].category is not Category.RANK_CRASHED, hypotheses


# real: optuna/optuna#3281 (r153a): DDP's model check before PyTorch 1.8, in the words of its replicas
def test_ddp_replicas_check_of_old_releases_is_models_that_differ(tmp_path: Path) -> None:
    top = top_of(tmp_path, "RuntimeError: replicas[0][0] in this process with sizes [42, 784] appears not to match sizes "
                         "of the same param in process 0.\n")
    assert top.category is Category.COLLECTIVE_DESYNC and "models differ" in top.title, top.title


# real: Lightning-AI/lit-llama#62 (r153c)
def test_compile_of_fsdp_without_orig_params_is_the_wrapping(tmp_path: Path) -> None:
    top = top_of(tmp_path, "AssertionError: Dynamo only supports FSDP with use_orig_params=True\n")
    assert top.category is Category.UNRECOGNISED and "use_orig_params=True" in top.title, top.title
    top = top_of(tmp_path, "AssertionError: Dynamo only supports tensors on CUDA\n")
    assert "use_orig_params" not in top.title, top.title


# real: NVIDIA/NeMo#14288 (r154a): Megatron-Core's virtual pipeline given fewer micro-batches than stages
def test_a_configured_count_outside_its_range_is_the_setup(tmp_path: Path) -> None:
    top = top_of(tmp_path, "[rank7]: ValueError: The number of contiguous micro-batches in a virtual pipeline "
                         "stageshould range in [PP=6 , M=3]\n")
    assert top.category is Category.UNRECOGNISED and "check of the job's setup" in top.title, top.title
    top = top_of(tmp_path, "[rank7]: ValueError: the learning rate should range in a sensible interval\n")
    assert "check of the job's setup" not in top.title, top.title


# real: sgl-project/sglang#27123 (r154b): a copy into a symmetric-memory buffer too small, inside the library's all_reduce
_SYMM = """\
Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/distributed/parallel_state.py", line 732, in _all_reduce_in_place
    torch_symm_mem_comm.all_reduce(input_)
  File "/sgl-workspace/sglang/python/sglang/srt/distributed/device_communicators/torch_symm_mem.py", line 153, in all_reduce
    self.buffer[: inp.numel()].copy_(inp.view(-1))
RuntimeError: The size of tensor a (33554432) must match the size of tensor b (40701952) at non-singleton dimension 0
"""


def test_a_tensor_operations_refusal_inside_a_collective_is_the_processs_error(tmp_path: Path) -> None:
    top = top_of(tmp_path, _SYMM)
    assert top.category is Category.RANK_CRASHED and "error of its own" in top.title, top.title
    # another error raised in the same frames is the library's, quoted
    top = top_of(tmp_path, _SYMM.replace("The size of tensor a (33554432) must match the size of tensor b (40701952) at "
                                       "non-singleton dimension 0", "symmetric memory handshake failed"))
    assert "error of its own" not in top.title, top.title


@pytest.mark.parametrize("line", [
    # real: huggingface/lighteval#447 (r155a)
    "ValueError: You need to use at least 2 processes to use --multi_gpu",
    # real: ray-project/ray#39128 (r155b): XLA placing an operation on a NeuronCore the worker does not see
    "RuntimeError: INVALID_ARGUMENT: Cannot assign a device for operation XRTCompile_16: {{node XRTCompile_16}} was "
    "explicitly assigned to /job:localservice/replica:0/task:0/device:TPU:1 but available devices are [ "
    "/job:localservice/replica:0/task:0/device:TPU:0 ].",
])
def test_a_launch_or_placement_against_the_devices_there_is_the_setup(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "check of the job's setup" in top.title, top.title


def test_a_count_that_is_no_launch_stays_the_processs_error(tmp_path: Path) -> None:
    top = top_of(tmp_path, "ValueError: need at least 2 samples per class to split\n")
    assert "check of the job's setup" not in top.title, top.title


# real: EleutherAI/lm-evaluation-harness#2706 (r155a): Ray's report of a task's error above the task's own traceback
_RAY_TASK = """\
ray.exceptions.RayTaskError(TypeError): ray::run_inference_one_model() (pid=4153477, ip=10.1.202.37)
  File "/env/lib/python3.10/site-packages/lm_eval/models/vllm_causallms.py", line 258, in run_inference_one_model
    llm = LLM(**model_args)
  File "/env/lib/python3.10/site-packages/vllm/entrypoints/llm.py", line 212, in __init__
    engine_args = EngineArgs(
TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'
"""


def test_a_ray_tasks_own_error_is_placed_by_rays_report_above_it(tmp_path: Path) -> None:
    top = top_of(tmp_path, _RAY_TASK)
    assert top.category is Category.RANK_CRASHED and "error of its own" in top.title, top.title
    assert top.culprit_hosts == ("10.1.202.37",) and "pid 4153477" in top.title, top
    # a report of another exception's type does not place it
    top = top_of(tmp_path, _RAY_TASK.replace("RayTaskError(TypeError)", "RayTaskError(ValueError)"))
    assert "pid 4153477 on 10.1.202.37 failed with an error of its own" not in top.title, top.title


# real: gensyn-ai/rl-swarm#184 (r156b): hivemind's DHT reaching none of the peers it was given
def test_a_dht_that_reached_none_of_its_peers_is_a_peer_unreachable(tmp_path: Path) -> None:
    top = top_of(tmp_path, "RuntimeError: DHTNode bootstrap failed: none of the initial_peers responded to a ping. (set "
                         "ensure_bootstrap_success=False to ignore)\n")
    assert top.category is Category.PEER_UNREACHABLE, top
    top = top_of(tmp_path, "RuntimeError: none of the initial weights were loaded\n")
    assert top.category is not Category.PEER_UNREACHABLE, top


@pytest.mark.parametrize("line", [
    # real: nerfstudio-project/nerfstudio#3298 (r157c), quoted alone without its RuntimeError
    "Distributed package doesn't have NCCL built in",
    # real: PaddlePaddle/PaddleOCR#3493 (r157b): Paddle's Windows build
    "AttributeError: module 'paddle.fluid.core_avx' has no attribute 'NCCLParallelContext'",
])
def test_a_build_without_nccl_in_any_words_is_the_build(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "build" in top.title and "NCCL" in top.title, top.title


@pytest.mark.parametrize("line", [
    # real: Ucas-HaoranWei/GOT-OCR2.0#79 (r157b)
    "[rank5]: ValueError: `--mixed_precision` arg cannot be set to `fp16` when `bf16` is set in the DeepSpeed config "
    "file.",
    # real: nerfstudio-project/nerfstudio#3626 (r157c)
    "AssertionError: dist_url=auto is not supported for multi-machine jobs.",
])
def test_settings_that_exclude_each_other_or_the_job_are_the_configuration(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "error of its own" not in top.title, top.title


# real: PaddlePaddle/PaddleOCR#3327 (r157b): every trainer's argument parser refused the launch's command line, then
# the launcher aborted all eight
_ARGPARSE = """\
train.py: error: unrecognized arguments: --gpus [2,3,4,6]
INFO 2021-07-13 15:04:06,240 launch_utils.py:307] terminate all the procs
ERROR 2021-07-13 15:04:06,240 launch_utils.py:545] ABORT!!! Out of all 8 trainers, the trainer process with \
rank=[0, 1, 2, 3, 4, 5, 6, 7] was aborted. Please check its log.
"""


def test_ranks_that_exit_after_an_error_that_names_a_cause_exited_of_it(tmp_path: Path) -> None:
    top = top_of(tmp_path, _ARGPARSE)
    assert top.category is Category.UNRECOGNISED and "died after an error whose words say" in top.title, top.title
    assert top.culprit_ranks == tuple(range(8)) and "unrecognized arguments" in top.evidence[0].text
    # an error line that names no cause leaves them ranks that died, their output not in the inputs
    top = top_of(tmp_path, _ARGPARSE.replace("train.py: error: unrecognized arguments: --gpus [2,3,4,6]",
                                           "error: something odd happened"))
    assert top.category is Category.RANK_CRASHED and "died" in top.title, top.title
