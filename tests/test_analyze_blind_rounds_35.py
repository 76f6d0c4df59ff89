"""Readings of the hundred-and-thirty-fifth round and after (rounds ``r138*``, ``r139*``: cloud and Windows jobs, NCCL
variables, Kubernetes, serving stacks, gloo on CPU, Hugging Face and PyTorch threads, OpenMMLab and YOLO trainers,
NVIDIA's older libraries): a command line the script refuses, a worker's missing module above the launcher's record, a
bare assertion read with its source line, a traceback flattened onto one line. One behaviour per test, each with the
look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category

_RECORD = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {code}) local_rank: 0 (pid: 118494) "
           "of binary: /home/u/.conda/envs/openmmlab/bin/python\n")


# real: open-mmlab/mmyolo#839 (r139): torch.distributed.launch of PyTorch 2 passes --local-rank=, the script parses
# --local_rank; argparse exits with code 2
def test_the_local_rank_argument_the_script_does_not_take_is_the_launch(tmp_path: Path) -> None:
    paste = ("usage: train.py [-h] [--launcher {none,pytorch,slurm,mpi}]\n"
             "                [--local_rank LOCAL_RANK]\n"
             "                config\n"
             "train.py: error: unrecognized arguments: --local-rank=0\n" + _RECORD.format(code=2))
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED, top.title
    assert "local rank 0 (pid 118494) died" in top.title and "--local-rank= since PyTorch 2.0" in top.title, top.title


@pytest.mark.parametrize("line", [
    "main.py: error: the following arguments are required: --config",
    'train.py: error: argument --lr: invalid float value: "1e-3x"',
    "finetune.py: error: unrecognized arguments: --deepspeed_config ds.json",
])
def test_a_command_line_argparse_refuses_is_the_launch_command(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "the program refused its command line" in top.title, top.title


def test_negative_a_programs_own_error_that_mentions_arguments_is_not_argparse(tmp_path: Path) -> None:
    # (a message of the program's that quotes an argument, not argparse's ``prog: error: …`` form)
    paste = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
             "ValueError: unrecognized arguments in the model config: ['dropout_rate']\n")
    assert "command line" not in top_of(tmp_path, paste).title


# real: ultralytics/ultralytics#17890 (r139): the DDP workers' generated script cannot import the package
def test_a_workers_missing_module_above_the_launchers_record_is_the_environment(tmp_path: Path) -> None:
    paste = ("Traceback (most recent call last):\n"
             '  File "/home/x/.config/Ultralytics/DDP/_temp_9kqsslr4.py", line 6, in <module>\n'
             "    from ultralytics.models.rtdetr.train import RTDETRTrainer\n"
             "ModuleNotFoundError: No module named 'ultralytics'\n" + _RECORD.format(code=1))
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "local rank 0 (pid 118494) died" in top.title, top.title
    assert "the installed environment lacks" in top.title, top.title


def test_negative_an_ordinary_exception_above_the_record_stays_the_workers_crash(tmp_path: Path) -> None:
    paste = ("Traceback (most recent call last):\n  File \"train.py\", line 88, in step\n    x = batch[7]\n"
             "IndexError: list index out of range\n" + _RECORD.format(code=1))
    assert top_of(tmp_path, paste).category is Category.RANK_CRASHED


# real: Megvii-BaseDetection/YOLOX#785 (r139): a bare assertion whose expression is the GPUs asked for against those
# seen; NVIDIA/DALI#510 (r139): the reader's shard against the number of shards
@pytest.mark.parametrize("paste", [
    "Traceback (most recent call last):\n  File \"train.py\", line 123, in <module>\n"
    "    assert num_gpu <= get_num_devices()\nAssertionError\n",
    'RuntimeError: Critical error in pipeline: [/opt/dali/dali/pipeline/operators/reader/loader/loader.h:57] Assert on '
    '"num_shards_ > shard_id_" failed: num_shards needs to be greater than shard_id\n',
])
def test_an_assertion_on_the_jobs_shape_is_the_setup(tmp_path: Path, paste: str) -> None:
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "a check of the job's setup" in top.title, top.title


def test_a_bare_assertion_is_quoted_with_its_source_line(tmp_path: Path) -> None:
    paste = ("Traceback (most recent call last):\n  File \"model.py\", line 40, in forward\n"
             "    assert x.shape[-1] == self.dim\nAssertionError\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED and "assert x.shape[-1] == self.dim" in top.title, top.title


# real: huggingface/diffusers#8477 (r139): two tracebacks pasted without their line ends
def test_a_traceback_flattened_onto_one_line_is_read_for_its_exception(tmp_path: Path) -> None:
    paste = ('Traceback (most recent call last):   File "/kaggle/working/train_cm_ct_unconditional.py", line 1438, in '
             '<module>     main(args)   File "/kaggle/working/train_cm_ct_unconditional.py", line 1198, in main     '
             'args.huber_c = 0.00054 * args.resolution * math.sqrt(unet.config.in_channels)   File "/opt/conda/lib/'
             'python3.10/site-packages/torch/nn/modules/module.py", line 1695, in __getattr__     raise AttributeError('
             'f"\'{type(self).__name__}\' object has no attribute \'{name}\'") AttributeError: \'DistributedDataParallel'
             '\' object has no attribute \'config\' Traceback (most recent call last):   File "/kaggle/working/t.py", '
             'line 1438, in <module>     main(args)\n')
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED, top.title
    assert "'DistributedDataParallel' object has no attribute 'config'" in top.title, top.title


def test_negative_a_line_that_names_a_traceback_without_frames_is_not_cut(tmp_path: Path) -> None:
    # (a log line that mentions the words: no ``File "`` follows, nothing to cut apart)
    paste = "WARNING worker 3 printed Traceback (most recent call last): see its log ValueError: x\n"
    hypotheses = diagnose_paste(tmp_path, paste).hypotheses
    assert all("ValueError: x" not in h.title or "WARNING worker 3" in h.title for h in hypotheses)


# real: open-mmlab/mmaction2 (r80c, a held miss): the check's source file is in c10d's directory, the failure is DDP's
# reducer in the program's own model
def test_an_internal_assert_in_a_c10d_source_file_is_the_processs_own_error(tmp_path: Path) -> None:
    paste = ('RuntimeError: replicas_[0].size() == rebuilt_param_indices_.size() INTERNAL ASSERT FAILED at '
             '"/pytorch/torch/csrc/distributed/c10d/reducer.cpp":1326, please report a bug to PyTorch. rebuilt '
             'parameter indices size is not same as original model parameters size.2 versus 3\n')
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED and "failed with an error of its own" in top.title, top.title


def test_negative_nccls_error_with_its_source_file_is_still_the_communication(tmp_path: Path) -> None:
    paste = ("RuntimeError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, "
             "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n")
    assert "an error of its own" not in top_of(tmp_path, paste).title


# real: meta-llama/llama#806, #415, #1017 (r140): a checkpoint saved for another number of processes
@pytest.mark.parametrize("line", [
    "AssertionError: Loading a checkpoint for MP=8 but world size is 1",
    "AssertionError: Loading a checkpoint for MP=2 but world size is 8",
])
def test_a_checkpoint_for_another_world_size_is_the_setup(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "a check of the job's setup" in top.title, top.title


# real: THUDM/Chinese-Transformer-XL#17 (r140, the line alone, no error word), BiSeNet#70 (a held case)
@pytest.mark.parametrize("line", [
    "DeepSpeed backend not set, please initialize it using init_process_group()",
    "RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.",
])
def test_a_distributed_call_before_the_process_group_is_the_setup(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "before the process group was set up" in top.title, top.title


# real: deepspeedai/DeepSpeed#3669 (r140)
def test_a_hostfile_the_launcher_cannot_read_is_the_setup(tmp_path: Path) -> None:
    top = top_of(tmp_path, "ValueError: Hostfile contains a bad entry: {line}, unable to proceed with launching\n")
    assert top.category is Category.UNRECOGNISED and "a configuration the program refused" in top.title, top.title


def test_negative_deepspeeds_note_that_it_found_no_hostfile_is_no_failure(tmp_path: Path) -> None:
    # (a warning: it goes on with the local GPUs)
    paste = "[WARNING] [runner.py:202:fetch_hostfile] Unable to find hostfile, will proceed with training with local resources only.\n"
    assert not diagnose_paste(tmp_path, paste).hypotheses


_ORDINAL_TRACEBACK = ("Traceback (most recent call last):\n"
                      '  File "train_gpt.py", line 402, in <module>\n'
                      "    {code}\n"
                      '  File "/usr/lib/python3/dist-packages/torch/cuda/__init__.py", line 476, in set_device\n'
                      "    torch._C._cuda_setDevice(device)\n"
                      "RuntimeError: CUDA error: invalid device ordinal\n")


# real: KellerJordan/modded-nanogpt#61, cfzd/Ultra-Fast-Lane-Detection#193 (relabelled A028), meituan/YOLOv6#342
def test_an_invalid_device_ordinal_from_the_local_ranks_gpu_is_the_launch(tmp_path: Path) -> None:
    top = top_of(tmp_path, _ORDINAL_TRACEBACK.format(code="torch.cuda.set_device(local_rank)"))
    assert top.category is Category.UNRECOGNISED and "the launch starts more processes per node" in top.title, top.title
    # the error line alone: the launch too, most often (both causes told)
    top = top_of(tmp_path, "RuntimeError: CUDA error: invalid device ordinal\n")
    assert top.category is Category.UNRECOGNISED and "or a device index from the global rank" in top.title, top.title


# real: ultralytics/yolov5#820 (torch 1.7's broadcast_object_list placed its tensor on cuda:<global rank>)
def test_negative_an_invalid_device_ordinal_from_a_library_call_is_that_processs_error(tmp_path: Path) -> None:
    paste = _ORDINAL_TRACEBACK.format(code="dist.broadcast_object_list(broadcast_list, 0)").replace(
        "/usr/lib/python3/dist-packages/torch/cuda/__init__.py", "/usr/lib/python3/dist-packages/torch/distributed/"
        "distributed_c10d.py")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED and "invalid device ordinal" in top.title, top.title


# real: NVIDIA/Megatron-LM#1006 (r141): the line cut after its source location
def test_gloos_connect_full_mesh_cut_before_its_reason_is_still_a_connection_that_failed(tmp_path: Path) -> None:
    paste = ("[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with "
             "[/opt/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144]\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.PEER_UNREACHABLE and "the reason is not in the inputs" in top.title, top.title


# real: huggingface/accelerate#1943, maidalun1020/BCEmbedding#66 (r141)
@pytest.mark.parametrize("line", [
    'Exception("Could not find the transformer layer class to wrap in the model.")',
    "Exception: Could not find the transformer layer class LlamaDecoderLayer in the model.",
])
def test_fsdps_auto_wrap_naming_a_class_the_model_lacks_is_the_configuration(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "FSDP's auto-wrap policy" in top.title, top.title


# real: aws/amazon-sagemaker-examples#2023 and #3967, Lightning-AI/pytorch-lightning#20409 (r142)
@pytest.mark.parametrize(("line", "words"), [
    ("[1,2]<stderr>:RuntimeError: The number of node-local MPI processes 8cannot be larger than the device count 4",
     "a check of the job's setup"),
    ("RuntimeError: SMDDP does not support: ReduceOp", "a configuration the program refused"),
])
def test_sagemakers_libraries_refusing_the_jobs_setup(tmp_path: Path, line: str, words: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and words in top.title, top.title


# real: ray-project/ray#31684 (r135d), agentfly#11 (r135g): the wrapper's own words name the process and its host
def test_rays_wrapper_of_a_tasks_exception_places_it_on_its_process_and_host(tmp_path: Path) -> None:
    paste = ("ray.exceptions.RayTaskError(RuntimeError): ray::_Inner.train() (pid=839, ip=172.31.175.192, "
             "repr=TorchTrainer)\n")
    top = top_of(tmp_path, paste)
    assert top.culprit_hosts == ("172.31.175.192",) and "pid 839" in top.title, top.title
    # (a prefix that names the writer wins: Ray's own ``(RayWorkerWrapper pid=1320, ip=192.168.11.16)``)
    prefixed = "(TaskRunner pid=77, ip=10.0.0.9) " + paste
    assert top_of(tmp_path, prefixed).culprit_hosts == ("10.0.0.9",)


def test_a_ranks_own_library_error_is_quoted_by_its_exception_not_its_traceback_header(tmp_path: Path) -> None:
    # (docker compose's service prefix names the host; rank 1's NCCL error, rank 0's timeout after it)
    paste = (
        "trainer-worker-1  | [rank1]: Traceback (most recent call last):\n"
        'trainer-worker-1  | [rank1]:   File "/app/train.py", line 40, in <module>\n'
        "trainer-worker-1  | [rank1]:     dist.all_reduce(t)\n"
        "trainer-worker-1  | [rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:328, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
        "trainer-worker-0  | [rank0]:[E1206 05:10:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
        "ran for 600031 milliseconds before timing out.\n")
    top = top_of(tmp_path, paste)
    assert top.culprit_ranks == (1,) and top.culprit_hosts == ("trainer-worker-1",), top.title
    assert "unhandled system error" in top.title and "Traceback (most recent" not in top.title, top.title


# real: NVIDIA/TensorRT-LLM#108, #753, Qwen-TensorRT-LLM#123 (r143): an engine built for another number of processes
@pytest.mark.parametrize("line", [
    "AssertionError: Engine world size (2) != Runtime world size (1)",
    "AssertionError: Engine world size (2 * 1) != Runtime world size (1)",
    "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (/home/jenkins/agent/workspace/LLM/"
    "release-0.8/L0_PostMerge/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:90)",
])
def test_an_engine_built_for_another_world_size_is_the_setup(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "a check of the job's setup" in top.title, top.title


# real: karpathy/llm.c#692 (r143), the line alone
def test_a_build_without_the_launchs_mpi_is_the_setup(tmp_path: Path) -> None:
    line = "MPI support is disabled. Please enable MPI support to use MPI-based NCCL-init method.\n"
    top = top_of(tmp_path, line)
    assert top.category is Category.UNRECOGNISED and "built without what the job's launch needs" in top.title


def test_negative_a_feature_a_log_says_is_disabled_is_no_failure(tmp_path: Path) -> None:
    # (NCCL's note of a transport turned off by a variable: no error, nothing to read)
    assert not diagnose_paste(tmp_path, "gpu1:12:12 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1\n"
                                        "P2P support is disabled for this run\n").hypotheses


# real: vllm-project/vllm#7367 and #3190 (r144): a mode offered only through another entry point; Ray's driver on a
# node without GPUs (the line alone, no error word)
@pytest.mark.parametrize("line", [
    "[rank0]: NotImplementedError: Pipeline parallelism is only supported through AsyncLLMEngine as performance will "
    "be severely degraded otherwise.",
    "Ray does not allocate any GPUs on the driver node. Consider adjusting the Ray placement group or running the "
    "driver on a GPU node.",
])
def test_a_serving_engine_refusing_how_it_was_started_is_the_configuration(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "a configuration the program refused" in top.title, top.title


def test_negative_a_kernel_supported_only_on_newer_gpus_keeps_its_own_reading(tmp_path: Path) -> None:
    # (a GPU older than the code supports: its own reading, not a configuration refused)
    top = top_of(tmp_path, "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n")
    assert "older than the code supports" in top.title, top.title
