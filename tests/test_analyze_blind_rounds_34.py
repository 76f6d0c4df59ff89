"""Readings of the hundred-and-thirty-first round and after (rounds ``r134*``, ``r135*``: vision, speech, diffusion,
graph and RL codebases, the PyTorch 1.x era, multimodal and fine-tuning stacks): a setup refused in the program's own
words, a package or a program missing, a disk full, and the child's error under mp.spawn's report. One behaviour per
test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category


# real: Wan-Video/Wan2.2#176, volcengine/verl#5954, huggingface/trl#2826 (each the paste's own line)
@pytest.mark.parametrize("line", [
    "[rank0]: AssertionError: The number of ulysses_size should be equal to the world size.",
    "ValueError: Total available GPUs 7.0 is less than total desired GPUs 8",
    "ValueError: The requested device for vllm (cuda:1) is not available. You are likely using vLLM without "
    "restricting the number of GPUs for training.",
])
def test_a_check_of_the_jobs_shape_in_its_words_is_the_setup(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "a check of the job's setup" in top.title, top.title


# real: unslothai/unsloth#724, hiyouga/LlamaFactory#6940, jwohlwend/boltz#218 (Lightning's SLURM check),
# huggingface/trl#3885 (a value check quoted alone)
@pytest.mark.parametrize("line", [
    "RuntimeError: Unsloth currently does not work on multi GPU setups - sadly we are a 2 brother team so enabling it "
    "will require much more work, so we have to prioritize. Please understand!",
    "ValueError: Unsloth is incompatible with DeepSpeed ZeRO-3.",
    "RuntimeError: You set `--ntasks=200` in your SLURM bash script, but this variable is not supported. HINT: Use "
    "`--ntasks-per-node=200` instead.",
    "vllm_mode must be either 'server' or 'colocate', got 'server'.",
])
def test_a_setting_or_combination_refused_in_the_librarys_words_is_the_configuration(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "a configuration the program refused" in top.title, top.title


def test_negative_a_compilers_warning_is_no_refused_configuration(tmp_path: Path) -> None:
    # torch.utils.cpp_extension's warning while it builds an extension: the build goes on
    paste = "Your compiler (c++) is not compatible with the compiler Pytorch was built with for this platform\n"
    assert not diagnose_paste(tmp_path, paste).hypotheses


# real: Tencent-Hunyuan/HunyuanVideo#249; OpenGVLab/InternVL#918
def test_a_package_the_program_requires_by_name_is_the_environment(tmp_path: Path) -> None:
    top = top_of(tmp_path, "AssertionError: Ulysses Attention and Ring Attention requires xfuser package.\n")
    assert top.category is Category.UNRECOGNISED and "the installed environment lacks" in top.title, top.title


def test_negative_a_notice_that_an_optional_package_is_absent_is_no_error(tmp_path: Path) -> None:
    paste = "[2025-12-18 07:58:50] INFO trace.py:52: opentelemetry package is not installed, tracing disabled\n"
    assert not diagnose_paste(tmp_path, paste).hypotheses


def test_a_gpu_older_than_the_code_supports_is_the_hardware(tmp_path: Path) -> None:
    top = top_of(tmp_path, "[rank0]: RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n")
    assert top.category is Category.UNRECOGNISED and "older than the code supports" in top.title, top.title
    assert top.culprit_ranks == (0,)


# real: hiyouga/LlamaFactory#5217 (silent before: dash's words have no "command")
def test_a_program_the_shell_did_not_find_is_never_silent(tmp_path: Path) -> None:
    paste = ("08/20/2024 19:04:44 - INFO - llamafactory.cli - Initializing distributed tasks at: 10.188.240.13:2951\n"
             "/bin/sh: 1: torchrun: not found\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "the shell did not find" in top.title, top.title


def test_negative_a_file_not_found_in_a_message_is_no_missing_program(tmp_path: Path) -> None:
    paste = "INFO: checkpoint /ckpt/step_100: not found, starting from scratch\n"
    hypotheses = diagnose_paste(tmp_path, paste).hypotheses
    assert not hypotheses or "the shell did not find" not in hypotheses[0].title


# real: facebookresearch/sam3#367: the paste of mp.spawn's report, its child's traceback under it
_SPAWNED = """\
W1219 10:16:48.863000 241 torch/multiprocessing/spawn.py:169] Terminating process 252 via signal SIGTERM
Traceback (most recent call last):
  File "/kaggle/working/sam3/sam3/train/train.py", line 78, in single_node_runner
    mp_runner(single_proc_run, args=args, nprocs=num_proc, start_method="spawn")
  File "/usr/local/lib/python3.11/dist-packages/torch/multiprocessing/spawn.py", line 215, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException: 

-- Process 0 terminated with the following error:
Traceback (most recent call last):
  File "/usr/local/lib/python3.11/dist-packages/torch/serialization.py", line 1266, in _save
    zip_file.write_record(name, storage, num_bytes)
OSError: [Errno 28] No space left on device
"""


def test_a_full_disk_under_spawns_report_is_the_childs_disk(tmp_path: Path) -> None:
    top = top_of(tmp_path, _SPAWNED)
    assert top.category is Category.UNRECOGNISED and "without room" in top.title, top.title
    assert "local rank 0" in top.title


def test_the_childs_own_error_under_spawns_report_is_the_one_named(tmp_path: Path) -> None:
    paste = _SPAWNED.replace("OSError: [Errno 28] No space left on device", "KeyError: 'image_size'")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED and "KeyError: 'image_size'" in top.title, top.title
    assert "ProcessRaisedException" not in top.title


def test_negative_shared_memory_without_room_stays_shared_memory(tmp_path: Path) -> None:
    line = ("Error while creating shared memory segment /dev/shm/nccl-GdPvyO (size 10617216), error: No space left on "
            "device (28)\n")
    assert top_of(tmp_path, line).category is Category.SHM_EXHAUSTED


# real: alibaba/graphlearn-for-pytorch#47 (a coroutine's log line, no exception class)
def test_an_index_out_of_range_in_torchs_words_is_the_programs_own_error(tmp_path: Path) -> None:
    paste = "ERROR:root:coroutine task failed: index 43094749 is out of bounds for dimension 0 with size 4490\n"
    assert top_of(tmp_path, paste).category is Category.RANK_CRASHED


# real: unit8co/darts#1901; Nixtla/neuralforecast#617; ROCm/ATOM#913
@pytest.mark.parametrize(("line", "words"), [
    ("RuntimeError: Lightning can't create new processes if CUDA is already initialized. Did you manually call "
     "`torch.cuda.*` functions, have moved the model to the device, or allocated memory on the GPU any other way?",
     "CUDA started before the workers were forked"),
    ("ValueError: You selected `Trainer(strategy='ddp_fork')` but process forking is not supported on this platform. "
     "We recommed `Trainer(strategy='ddp_spawn')` instead.", "a configuration the program refused"),
    ("[FATAL ERROR]: HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance", "a configuration the program refused"),
])
def test_a_start_method_or_a_runtimes_variable_refused_is_the_setup(tmp_path: Path, line: str, words: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and words in top.title, top.title


def test_negative_a_variable_that_must_be_set_in_lower_case_prose_is_no_refusal(tmp_path: Path) -> None:
    paste = "RuntimeError: the value of seed=3 must be set before the first step\n"
    assert "a configuration the program refused" not in top_of(tmp_path, paste).title


# real: Nixtla/neuralforecast#1110 (TORCH_DISTRIBUTED_DEBUG=DETAIL's lines, the paste wrapped at a fixed width; silent
# before)
_DETAIL = """\
[rank1]:[I816 21:41:23.034545571 reducer.cpp:1989] [Rank 1] Parameter: static_encoder.context_grns.3.glu.lin.bias did not get gradient i
n backwards pass.
[rank1]:[I816 21:41:23.034555851 reducer.cpp:1989] [Rank 1] Parameter: static_encoder.context_grns.3.glu.lin.weight did not get gradient
 in backwards pass.
"""


def test_ddps_detail_lines_of_parameters_without_gradient_name_the_rank(tmp_path: Path) -> None:
    top = top_of(tmp_path, _DETAIL)
    assert top.category is Category.RANK_CRASHED and "DistributedDataParallel's reducer" in top.title
    assert top.culprit_ranks == (1,)


# real: Stability-AI/stable-audio-tools#20: the exception written over a progress bar the paste cut in its postfix
_BAR = ("Epoch 0:   0%| | 2/48248 [00:15<106:04:35,  7.92s/it, v_num=q5e6, train/loss=8.820, train/latenRuntimeError: "
        "Expected to have finished reduction in the prior iteration before starting a new one.\n")


def test_an_exception_written_over_a_cut_progress_bar_is_its_own_line(tmp_path: Path) -> None:
    top = top_of(tmp_path, _BAR)
    assert top.category is Category.RANK_CRASHED and "DistributedDataParallel's reducer" in top.title, top.title


def test_negative_a_bar_whose_postfix_names_an_error_metric_is_no_error(tmp_path: Path) -> None:
    # (a metric named after an error, with its value, is no error line: nothing to explain; the bar is not cut
    # before it either)
    paste = "Epoch 1:  40%|####  | 4/10 [00:04<00:06,  1.00it/s, loss=0.3, MeanSquaredError=0.25]\n"
    assert not diagnose_paste(tmp_path, paste).hypotheses
    paste = "step 300 | loss 2.31 | error=0.12 | val_error=0.2\n"
    assert not diagnose_paste(tmp_path, paste).hypotheses
    # (the words after the metric are still read)
    killed = "Epoch 1:  40%|####  | 4/10 [00:04<00:06,  1.00it/s, MeanSquaredError=0.25] Killed\n"
    assert top_of(tmp_path, killed).category is Category.RANK_KILLED


# real: huggingface/accelerate#940, axolotl-ai-cloud/axolotl#2250, bitsandbytes-foundation/bitsandbytes#1709 and #366
@pytest.mark.parametrize(("line", "words"), [
    ("RuntimeError: CUDA has been initialized before the `notebook_launcher` could create a forked subprocess. This "
     "likely stems from an outside import causing issues once the `notebook_launcher()` is called.",
     "CUDA started before the workers were forked"),
    ("[rank0]: ValueError: Cannot flatten integer dtype tensors", "a model placed in a way its distributed wrapper"),
    ("ValueError: Must flatten tensors with uniform dtype but got torch.float16 and torch.int8",
     "a model placed in a way its distributed wrapper"),
    ("ValueError: DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple"
     "-device GPU modules or CPU modules, but got device_ids [1], output_device 1, and module parameters "
     "{device(type='cuda', index=0), device(type='cuda', index=1)}.", "a model placed in a way its distributed wrapper"),
])
def test_a_model_placed_where_its_wrapper_cannot_take_it_is_the_setup(tmp_path: Path, line: str, words: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and words in top.title, top.title


def test_negative_a_flatten_that_failed_for_memory_is_not_the_placement(tmp_path: Path) -> None:
    line = "torch.OutOfMemoryError: CUDA out of memory while trying to flatten tensors of rank 0\n"
    assert top_of(tmp_path, line).category is Category.RANK_OUT_OF_MEMORY


# real: huawei-noah/Efficient-Computing#90 (r138), Windows gloo; torch's own words for an operation gloo lacks
@pytest.mark.parametrize("line", [
    "RuntimeError: Function argument device_ids not supported for the selected backend gloo",
    "RuntimeError: ProcessGroupGloo does not support reduce_scatter",
    "RuntimeError: Backend nccl does not support allgather_coalesced",
])
def test_an_argument_or_operation_the_backend_does_not_take_is_the_setup(tmp_path: Path, line: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "a configuration the program refused" in top.title, top.title


def test_negative_a_backend_that_does_not_support_a_dtype_as_it_ran_is_not_caught_by_the_backend_words(
        tmp_path: Path) -> None:
    # a tensor type refused as the program ran ('... does not support ...' of an op, not of a backend): the crash
    paste = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
             "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'\n")
    assert "a configuration the program refused" not in top_of(tmp_path, paste).title


def test_a_backends_refusal_above_the_launchers_record_is_the_workers_own_error(tmp_path: Path) -> None:
    # (the backend's name in the words is no communication failure: the worker's own error, the record's cause)
    paste = ("RuntimeError: Function argument device_ids not supported for the selected backend gloo\n"
             "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 23812) of "
             "binary: E:\\Conda\\envs\\GoldYolo\\python.exe\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "local rank 0 (pid 23812) died" in top.title, top.title
    assert "a configuration the program refused" in top.title, top.title
