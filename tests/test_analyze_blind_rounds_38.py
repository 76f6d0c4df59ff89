"""Readings of the hundred-and-fifty-fifth to fifty-eighth rounds (``r158*``: NVIDIA's model scripts, HPC centres'
documentation, DDP's reducer errors, container and host limits; ``r159*``: home and hobby machines, classic generative
models, mismatched nodes, Chinese LLM fine-tuning scripts; ``r160*``: PyTorch on native Windows, extensions built in a
job, speech generation; ``r161*``: FSDP's configuration, elastic stacks, mixed precision). One behaviour per test, each
with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.parsers.prefixes import split_prefix

# real: pytorch/pytorch#13045 (r159a): two consumer GPUs on a Threadripper board, DataParallel that does not learn,
# the kernel's IOMMU refusing the GPU's DMA
_AMD_VI = """\
[1118468.873266] nvidia 0000:0a:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000f address=0x00000000ea13a000 flags=0x0020]
[1118468.942145] nvidia 0000:0a:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000f address=0x00000000ea139068 flags=0x0020]
"""


def test_the_iommu_refusing_a_gpu_s_dma_is_peer_access_blocked(tmp_path: Path) -> None:
    top = top_of(tmp_path, _AMD_VI)
    assert top.category is Category.PEER_ACCESS and "IOMMU" in top.title and "0000:0a:00.0" in top.title, top.title
    assert "iommu=pt" in top.fix and len(top.evidence) == 2
    # Intel's words, on a host the syslog names; older AMD kernels name the device inside the brackets
    top = top_of(tmp_path, "Mar  3 10:00:01 gpu-node7 kernel: DMAR: [DMA Read] Request device [3b:00.0] fault addr "
                         "7f3a2000 [fault reason 06] PTE Read access is not set\n")
    assert top.category is Category.PEER_ACCESS and top.culprit_hosts == ("gpu-node7",), (top.title, top.culprit_hosts)
    top = top_of(tmp_path, "AMD-Vi: Event logged [IO_PAGE_FAULT device=42:00.0 domain=0x0000 address=0x1000 flags=0x0]\n")
    assert top.category is Category.PEER_ACCESS and "42:00.0" in top.title and "a device" in top.title, top.title
    # a GPU's own page fault (amdgpu's gfxhub, a kernel's bad address) is the GPU's error, not the IOMMU's
    top = top_of(tmp_path, "amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32776, for "
                         "process python3 pid 172866 thread python3 pid 172866)\n")
    assert top.category is Category.GPU_ERROR, top.title


@pytest.mark.parametrize(("line", "words"), [
    # real: open-mmlab/mmaction2#218 (r158d): a DataLoader's shared-memory file, the host's limits
    ("RuntimeError: unable to open shared memory object </torch_16550_876314950> in read-write mode", "shared-memory"),
    # real: ayaanzhaque/instruct-nerf2nerf#39 (r159b): two GPUs asked for in one device string
    ("  RuntimeError: Invalid device string: 'cuda:0,1'", "configuration"),
])
def test_a_host_limit_and_a_device_string_are_the_setup(tmp_path: Path, line: str, words: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.UNRECOGNISED and words in top.title and "error of its own" not in top.title, top.title


# real: NVIDIA/tacotron2#16 (r158a): multiproc.py opens each GPU's log in ``logs/``, which nobody made
_NO_FOLDER = """\
Traceback (most recent call last):
  File "/home/tacotron2/tacotron2/multiproc.py", line 16, in <module>
    "w")
FileNotFoundError: [Errno 2] No such file or directory: 'logs/2018_05_11-223841_GPU_1.log'
"""


def test_a_file_opened_for_writing_in_a_missing_folder_is_the_setup(tmp_path: Path) -> None:
    top = top_of(tmp_path, _NO_FOLDER)
    assert top.category is Category.UNRECOGNISED and "folder that does not exist" in top.title, top.title
    # the same error where the code line reads the file (a dataset not there, a race that deleted it) stays the process's
    top = top_of(tmp_path, _NO_FOLDER.replace('    "w")', '    with open(path) as f:'))
    assert top.category is Category.RANK_CRASHED and "error of its own" in top.title, top.title


@pytest.mark.parametrize(("line", "words"), [
    # real: THU-MIG/yolov10#346 (r160a): Ultralytics broadcasting its bool AMP flag over gloo on Windows, torch 2.0
    ("RuntimeError: Invalid scalar type", "gloo does not take"),
    # real: pytorch/pytorch#111650 (r161d): a GradScaler over FSDP's CPU-offloaded gradients
    ("ERROR:aiplatform.error_reporting.error_reporting:Exception Found: Could not run 'aten::_amp_foreach_non_finite_"
     "check_and_unscale_' with arguments from the 'CPU' backend. This could be because the operator doesn't exist for "
     "this backend", "no kernel for"),
])
def test_a_type_or_a_device_an_operation_has_no_kernel_for_is_the_process_s_error(
        tmp_path: Path, line: str, words: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is Category.RANK_CRASHED and words in top.title, top.title


# real: modelscope/modelscope#809 (r160d): the script's argument parser refused what torch.distributed.launch passed,
# then the launcher's record of the one worker's exit
_LOCAL_RANK_ARG = """\
Task related config: error: unrecognized arguments: --local-rank=0
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 2) local_rank: 0 (pid: 185479) of binary: \
/opt/conda/envs/modelscope/bin/python
"""


def test_a_worker_s_record_under_a_line_that_names_the_setup_died_of_it(tmp_path: Path) -> None:
    top = top_of(tmp_path, _LOCAL_RANK_ARG)
    assert top.category is Category.UNRECOGNISED and "local-rank argument" in top.title, top.title
    assert top.culprit_local_ranks == (0,), top.culprit_local_ranks
    # an error line whose words name nothing stays a quote beside the worker that died
    top = top_of(tmp_path, _LOCAL_RANK_ARG.replace("error: unrecognized arguments: --local-rank=0", "error: it broke"))
    assert top.category is Category.RANK_CRASHED, top.title


def _trace(rank: int, seq: int, op: str, shape: str) -> str:
    return (f"[rank{rank}]:[I1017 19:34:58.923985894 ProcessGroupWrapper.cpp:587] [Rank {rank}] Running collective: "
            f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={op}, TensorShape=[{shape}], TensorDtypes=Float, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))\n")


def test_detail_s_trace_of_each_collective_shows_the_rank_that_ran_another(tmp_path: Path) -> None:
    # real: AdvancedPhotonSource/pty-chi#47 (r162a): INFO lines only, no error; rank 2's buffer of another length
    paste = _trace(2, 38, "ALLREDUCE", "77, 1") + _trace(1, 38, "ALLREDUCE", "100, 1") + _trace(3, 38, "ALLREDUCE", "100, 1")
    top = top_of(tmp_path, paste)
    assert top.category is Category.COLLECTIVE_DESYNC and top.culprit_ranks == (2,), (top.title, top.culprit_ranks)
    assert "sequence number 38" in top.title and "[77, 1]" in top.title
    # the same collectives traced by every rank: no desync (silent: no error)
    same = _trace(0, 5, "ALLREDUCE", "10") + _trace(1, 5, "ALLREDUCE", "10") + _trace(0, 6, "BROADCAST", "1") \
        + _trace(1, 6, "BROADCAST", "1")
    assert not diagnose_paste(tmp_path, same).hypotheses
    # a rank that traced one sequence number twice, differently (two process groups number their collectives apart):
    # that number tells nothing
    groups = _trace(0, 7, "ALLREDUCE", "10") + _trace(0, 7, "BROADCAST", "1") + _trace(1, 7, "BROADCAST", "1")
    assert not diagnose_paste(tmp_path, groups).hypotheses


@pytest.mark.parametrize(("line", "category", "words"), [
    # real: Lightning-AI/pytorch-lightning#3430 (r162c): freeze() then test under DDP
    ("AssertionError: DistributedDataParallel is not needed when a module doesn't have any parameter that requires a "
     "gradient.", Category.UNRECOGNISED, "no trainable parameter"),
    # real: open-mmlab/mmsegmentation#387 (r162c): a SyncBN config run on the CPU
    ("ValueError: SyncBatchNorm expected input tensor to be on GPU", Category.UNRECOGNISED, "on the CPU"),
    # real: webdataset/webdataset#178 and #406 (r163d)
    ("ValueError: you need to add an explicit nodesplitter to your input pipeline for multi-node training",
     Category.UNRECOGNISED, "nodesplitter"),
    # real: m2lines/Samudra#324 (r162c): an EMA tracker keyed by the bare model's names, looked up after the wrap
    ("KeyError: 'module.layers.0.skip_module.weight'", Category.RANK_CRASHED, "'module.' prefix"),
])
def test_setups_ddp_refuses_and_a_prefix_looked_up_on_the_wrong_side(
        tmp_path: Path, line: str, category: Category, words: str) -> None:
    top = top_of(tmp_path, line + "\n")
    assert top.category is category and words in top.title, top.title


# real: microsoft/tutel#177 (r162c): an EMA copy of a model whose MoE layers hold their process groups
_DEEPCOPY = """\
Traceback (most recent call last):
  File "train.py", line 212, in main
    ema_model = copy.deepcopy(model)
  File "/opt/conda/lib/python3.8/copy.py", line 161, in deepcopy
    rv = reductor(4)
TypeError: cannot pickle 'torch._C._distributed_c10d.ProcessGroupNCCL' object
"""

# real: NVIDIA/Megatron-LM#3775 (r163a): a destructor asking for the rank after destroy_process_group
_AFTER_DESTROY = """\
Exception ignored in: <function PersistentAsyncCaller.__del__ at 0x746f0cbc8d60>
Traceback (most recent call last):
  File "/opt/megatron/core/dist_checkpointing/strategies/async_utils.py", line 446, in __del__
    self.close()
  File "/opt/conda/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", line 1306, in _get_default_group
    raise ValueError(
ValueError: Default process group has not been initialized, please make sure to call init_process_group.
"""


def test_a_copy_of_a_process_group_and_a_call_after_destroy_are_the_code_s(tmp_path: Path) -> None:
    top = top_of(tmp_path, _DEEPCOPY)
    assert top.category is Category.RANK_CRASHED and "copy of an object that holds a process group" in top.title, top.title
    # the same refusal under spawn's pickling (no deepcopy) stays what spawn was given
    top = top_of(tmp_path, _DEEPCOPY.replace("copy.py", "reduction.py").replace("in deepcopy", "in dump"))
    assert top.category is Category.UNRECOGNISED and "spawn" in top.title, top.title
    top = top_of(tmp_path, _AFTER_DESTROY)
    assert top.category is Category.RANK_CRASHED and "at exit" in top.title, top.title
    # raised in the program's own code before any init: the setup that never ran
    top = top_of(tmp_path, _AFTER_DESTROY.replace("in __del__", "in main").replace("Exception ignored in: <function "
                                                                               "PersistentAsyncCaller.__del__ at "
                                                                               "0x746f0cbc8d60>\n", ""))
    assert top.category is Category.UNRECOGNISED and "before the process group was set up" in top.title, top.title


def test_a_word_before_an_error_after_a_collector_s_stamp_is_no_host_and_program(tmp_path: Path) -> None:
    # real: NVIDIA/pix2pixHD#170 (r159b), as a log collector stamps it: ``pix2pix TypeError: …`` was read as syslog's
    # host and program, the error's class taken away, and the paste went silent
    line = "pix2pix TypeError: forward() missing 4 required positional arguments: 'uilabel', 'insert', 'image', 'feat'"
    stamped = top_of(tmp_path, f"2024-05-01T12:00:00.123456789Z {line}\n")
    assert stamped.category is top_of(tmp_path, line + "\n").category, stamped.title
    # a host and a program as journalctl writes them after its stamp stay those
    assert split_prefix("2024-05-01T10:00:00+0000 gpu-node-07 kernel: NVRM: Xid 79").origin.host == "gpu-node-07"
