"""Readings of the hundred-and-thirty-fifth round and after (rounds ``r138*``, ``r139*``: cloud and Windows jobs, NCCL
variables, Kubernetes, serving stacks, gloo on CPU, Hugging Face and PyTorch threads, OpenMMLab and YOLO trainers,
NVIDIA's older libraries): a command line the script refuses, a worker's missing module above the launcher's record, a
bare assertion read with its source line, a traceback flattened onto one line. One behaviour per test, each with the
look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste
from syncdoctor.analyze.model import Category


def _top(tmp_path: Path, paste: str):
    hypotheses = diagnose_paste(tmp_path, paste).hypotheses
    assert hypotheses, paste
    return hypotheses[0]


_RECORD = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {code}) local_rank: 0 (pid: 118494) "
           "of binary: /home/u/.conda/envs/openmmlab/bin/python\n")


# real: open-mmlab/mmyolo#839 (r139): torch.distributed.launch of PyTorch 2 passes --local-rank=, the script parses
# --local_rank; argparse exits with code 2
def test_the_local_rank_argument_the_script_does_not_take_is_the_launch(tmp_path: Path) -> None:
    paste = ("usage: train.py [-h] [--launcher {none,pytorch,slurm,mpi}]\n"
             "                [--local_rank LOCAL_RANK]\n"
             "                config\n"
             "train.py: error: unrecognized arguments: --local-rank=0\n" + _RECORD.format(code=2))
    top = _top(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED, top.title
    assert "local rank 0 (pid 118494) died" in top.title and "--local-rank= since PyTorch 2.0" in top.title, top.title


@pytest.mark.parametrize("line", [
    "main.py: error: the following arguments are required: --config",
    'train.py: error: argument --lr: invalid float value: "1e-3x"',
    "finetune.py: error: unrecognized arguments: --deepspeed_config ds.json",
])
def test_a_command_line_argparse_refuses_is_the_launch_command(tmp_path: Path, line: str) -> None:
    top = _top(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and "the program refused its command line" in top.title, top.title


def test_negative_a_programs_own_error_that_mentions_arguments_is_not_argparse(tmp_path: Path) -> None:
    # (a message of the program's that quotes an argument, not argparse's ``prog: error: …`` form)
    paste = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
             "ValueError: unrecognized arguments in the model config: ['dropout_rate']\n")
    assert "command line" not in _top(tmp_path, paste).title


# real: ultralytics/ultralytics#17890 (r139): the DDP workers' generated script cannot import the package
def test_a_workers_missing_module_above_the_launchers_record_is_the_environment(tmp_path: Path) -> None:
    paste = ("Traceback (most recent call last):\n"
             '  File "/home/x/.config/Ultralytics/DDP/_temp_9kqsslr4.py", line 6, in <module>\n'
             "    from ultralytics.models.rtdetr.train import RTDETRTrainer\n"
             "ModuleNotFoundError: No module named 'ultralytics'\n" + _RECORD.format(code=1))
    top = _top(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "local rank 0 (pid 118494) died" in top.title, top.title
    assert "the installed environment lacks" in top.title, top.title


def test_negative_an_ordinary_exception_above_the_record_stays_the_workers_crash(tmp_path: Path) -> None:
    paste = ("Traceback (most recent call last):\n  File \"train.py\", line 88, in step\n    x = batch[7]\n"
             "IndexError: list index out of range\n" + _RECORD.format(code=1))
    assert _top(tmp_path, paste).category is Category.RANK_CRASHED


# real: Megvii-BaseDetection/YOLOX#785 (r139): a bare assertion whose expression is the GPUs asked for against those
# seen; NVIDIA/DALI#510 (r139): the reader's shard against the number of shards
@pytest.mark.parametrize("paste", [
    "Traceback (most recent call last):\n  File \"train.py\", line 123, in <module>\n"
    "    assert num_gpu <= get_num_devices()\nAssertionError\n",
    'RuntimeError: Critical error in pipeline: [/opt/dali/dali/pipeline/operators/reader/loader/loader.h:57] Assert on '
    '"num_shards_ > shard_id_" failed: num_shards needs to be greater than shard_id\n',
])
def test_an_assertion_on_the_jobs_shape_is_the_setup(tmp_path: Path, paste: str) -> None:
    top = _top(tmp_path, paste)
    assert top.category is Category.UNRECOGNISED and "a check of the job's setup" in top.title, top.title


def test_a_bare_assertion_is_quoted_with_its_source_line(tmp_path: Path) -> None:
    paste = ("Traceback (most recent call last):\n  File \"model.py\", line 40, in forward\n"
             "    assert x.shape[-1] == self.dim\nAssertionError\n")
    top = _top(tmp_path, paste)
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
    top = _top(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED, top.title
    assert "'DistributedDataParallel' object has no attribute 'config'" in top.title, top.title


def test_negative_a_line_that_names_a_traceback_without_frames_is_not_cut(tmp_path: Path) -> None:
    # (a log line that mentions the words: no ``File "`` follows, nothing to cut apart)
    paste = "WARNING worker 3 printed Traceback (most recent call last): see its log ValueError: x\n"
    hypotheses = diagnose_paste(tmp_path, paste).hypotheses
    assert all("ValueError: x" not in h.title or "WARNING worker 3" in h.title for h in hypotheses)
