"""Readings of the hundred-and-ninety-fourth round (``r197*``: Chinese-language pastes, the PyTorch 1.x era, other
frameworks' launches, hang diagnoses, Slurm, Hugging Face stacks, pipeline parallelism, MPI-centred jobs). One
behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one, timeline_of, top_of
from syncdoctor.analyze.model import Category, Kind

_FRAMES = ('  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker.py", line 330, in _init_model_runner\n'
           "    self._model_runner = ModelRunner(\n"
           '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 426, in __init__\n'
           "    self.support_pp\n")


def test_jaxs_gpu_platform_that_did_not_come_up_is_the_setup(tmp_path: Path) -> None:
    # real: jax-ml/jax#28194 (r197e): Slurm's per-task GPU binding, JAX picking the device by local rank
    raised = ("RuntimeError: Unable to initialize backend 'cuda': INTERNAL: no supported devices found for platform "
              "CUDA (you may need to uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to skip this "
              "backend.)\n")
    assert top_of(tmp_path, raised).category is Category.UNRECOGNISED
    # JAX's INFO line for a platform it tries and goes on without is no such failure (the program goes on)
    tried = ("I0223 22:58:05.579842 140312230876992 xla_bridge.py:660] Unable to initialize backend 'tpu': INTERNAL: "
             "Failed to open libtpu.so: libtpu.so: cannot open shared object file: No such file or directory\n"
             "[rank0]: RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
             "CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE), but Rank 1 is running collective: "
             "CollectiveFingerPrint(SequenceNumber=5, OpType=BROADCAST).\n")
    assert top_of(tmp_path, tried).category is Category.COLLECTIVE_DESYNC


def test_paddles_library_loader_and_slurms_missing_program_are_the_install(tmp_path: Path) -> None:
    # real: PaddlePaddle/PaddleClas (r197c): libnccl.so not installed; NVIDIA/pyxis-style nodes without the program
    loader = ("RuntimeError: (PreconditionNotMet) The third-party dynamic library (libnccl.so) that Paddle depends on is "
              "not configured correctly. (error code is libnccl.so: cannot open shared object file: No such file or "
              "directory)\n")
    assert top_of(tmp_path, loader).category is Category.UNRECOGNISED
    # a program's own file not found is no library the framework loads
    own = "RuntimeError: (NotFound) The file /data/train.txt that the reader opens does not exist.\n"
    assert top_of(tmp_path, own).category is Category.RANK_CRASHED
    step = ("slurmstepd: error: execve(): torchrun: No such file or directory\n"
            "srun: error: g1301: task 0: Exited with exit code 2\n")
    top = top_of(tmp_path, step)
    assert top.category is Category.UNRECOGNISED and "not on its PATH" in top.title, top


def test_sruns_step_that_cannot_start_is_the_jobs_setup(tmp_path: Path) -> None:
    # real: open-mpi/ompi#8378, llnl/smith#688 (r197e): nested steps inside an allocation whose nodes another holds
    waiting = ("29: srun: Job 9479148 step creation still disabled, retrying (Requested nodes are busy)\n"
               "53: srun: Job 9479148 step creation temporarily disabled, retrying (Requested nodes are busy)\n")
    top = top_of(tmp_path, waiting)
    assert top.category is Category.UNRECOGNISED and "--overlap" in top.title, top
    # srun's word that it is waiting for the allocation itself (a queue) is no step that cannot start
    queued = "srun: job 9479148 queued and waiting for resources\n"
    assert not diagnose_paste(tmp_path, queued).hypotheses


def test_a_feature_a_sharding_stage_refuses_is_the_settings(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#6793 (r197f): DeepSpeed 0.16.0's no_sync check under ZeRO-3 with gradient accumulation
    refused = ("[rank0]: AssertionError: no_sync context manager is incompatible with gradient partitioning logic of "
               "ZeRO stage 3\n")
    assert top_of(tmp_path, refused).category is Category.UNRECOGNISED
    # two tensors the program found incompatible are its own error, not a stage's refusal
    own = "[rank0]: AssertionError: shape of the logits is incompatible with the labels\n"
    assert top_of(tmp_path, own).category is Category.RANK_CRASHED


def test_a_bare_not_implemented_error_raised_in_a_library_is_its_unwritten_path(tmp_path: Path) -> None:
    # real: EleutherAI/gpt-neox#963 (r197g): DeepSpeed's pipeline engine reducing bf16 gradients under ZeRO>0
    library = ("Traceback (most recent call last):\n"
               '  File "train.py", line 27, in <module>\n'
               "    pretrain(neox_args=neox_args)\n"
               '  File "anaconda3/envs/neox/lib/python3.8/site-packages/deepspeed/runtime/pipe/engine.py", line 258, '
               "in _exec_reduce_grads\n"
               "    raise NotImplementedError()\n"
               "NotImplementedError\n")
    event = one(library.splitlines()[-1], Kind.EXCEPTION)
    assert "library_raised" not in event.data  # (a line alone: no frames, no place)
    top = top_of(tmp_path, library)
    assert top.category is Category.UNRECOGNISED and "engine.py" in top.title, top
    # raised in the program's own code (an abstract method it left), it is the program's error
    own = library.replace("anaconda3/envs/neox/lib/python3.8/site-packages/deepspeed/runtime/pipe/engine.py",
                          "megatron/model/pipe.py")
    assert top_of(tmp_path, own).category is Category.RANK_CRASHED
    # with its reason, the library's words are read (a combination not supported), not this
    worded = library.replace("NotImplementedError\n", "NotImplementedError: bf16 with ZeRO stage 1 is not supported\n")
    assert "unwritten" not in top_of(tmp_path, worded).title


def test_ms_mpis_error_analysis_names_the_rank_and_host_that_crashed(tmp_path: Path) -> None:
    # real: microsoft/CNTK#913 (r197h): the worker caught an access violation and exited; mpiexec's analysis
    paste = ("Evaluation criterion: errs = ClassificationError\n"
             "CNTK: Caught Win32 exception 0xc0000005: Access violation.\n"
             "job aborted:\n[ranks] message\n\n[0] terminated\n\n[1] process exited without calling finalize\n\n"
             "---- error analysis -----\n\n[1] on DESKTOP-NPQAHQ4\n"
             "C:\\AI\\cntk\\cntk\\cntk ended prematurely and may have crashed. exit code 1\n\n"
             "---- error analysis -----\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,), top
    assert top.culprit_hosts == ("DESKTOP-NPQAHQ4",) and "Access violation" in top.title, top
    # the crash's own exit code, an access violation, is read as the segfault it is
    code = paste.replace("exit code 1\n", "exit code 0xc0000005\n")
    records = [e for e in timeline_of(tmp_path, code).events if e.kind is Kind.WORKER_FAILED]
    assert [(e.origin.rank, e.data["signal"]) for e in records] == [(1, "SIGSEGV")], records
    # mpiexec's own header above the analysis is no error of the worker's to quote
    bare = paste.replace("CNTK: Caught Win32 exception 0xc0000005: Access violation.\n", "")
    top = top_of(tmp_path, bare)
    assert top.culprit_ranks == (1,) and "job aborted" not in top.title, top
    # a rank and host on their own lines outside the analysis are no record of a crash
    apart = ("[1] on DESKTOP-NPQAHQ4\nC:\\AI\\cntk ended prematurely and may have crashed. exit code 1\n")
    assert not [h for h in diagnose_paste(tmp_path, apart).hypotheses if h.culprit_ranks == (1,)]


def test_a_setting_named_after_an_error_is_no_error(tmp_path: Path) -> None:
    # real: microsoft/CNTK#913 (r197h): CNTK prints the metric it evaluates, a class named ClassificationError
    assert not diagnose_paste(tmp_path, "Evaluation criterion: errs = ClassificationError\n").hypotheses
    # an error raised right after a setting's words is still one
    raised = "Evaluation criterion: errs = ClassificationError: labels out of range\n"
    assert diagnose_paste(tmp_path, raised).hypotheses


def test_windows_fatal_exception_is_a_crash_and_a_delay_load_failure_the_install(tmp_path: Path) -> None:
    event = one("Windows fatal exception: access violation", Kind.FATAL_SIGNAL)
    assert event.data["signal"] == "SIGSEGV"
    assert one("Windows fatal exception: code 0xc000001d", Kind.FATAL_SIGNAL).data["signal"] == "SIGILL"
    # (an invalid parameter, 0xc000000d, is no signal of the process: an error line at most)
    assert not [e for e in events_of("Windows fatal exception: code 0xc000000d") if e.kind is Kind.FATAL_SIGNAL]
    assert not [e for e in diagnose_paste(tmp_path, "Windows exception handling enabled\n").hypotheses]
    # real: microsoft/CNTK#1047 (r197h): an MS-MPI older than CNTK was built for (a delay-loaded function missing)
    delay = ("CNTK: Caught Win32 exception 0xc06d007f.\n"
             "---- error analysis -----\n\n[0] on 6CR6228977\ncntk ended prematurely and may have crashed. exit code 1\n"
             "---- error analysis -----\n")
    top = top_of(tmp_path, delay)
    assert top.category is Category.UNRECOGNISED and top.culprit_ranks == (0,), top


def test_a_headless_traceback_whose_paste_ends_in_its_class_name_is_that_exception(tmp_path: Path) -> None:
    # real: sgl-project/sglang#19503 (r197g): the paste's last line, ``AssertionErro``; no line holds a scanned word
    top = top_of(tmp_path, _FRAMES + "AssertionErro\n")
    assert top.category is Category.RANK_CRASHED and "AssertionError" in top.title, top
    raised = [e for e in timeline_of(tmp_path, _FRAMES + "AssertionErro\n").events if e.kind is Kind.EXCEPTION]
    assert [e.data.get("where") for e in raised] == ["model_runner.py:426 in __init__"], raised
    # the same fragment without frames above it is no traceback's end
    assert not diagnose_paste(tmp_path, "AssertionErro\n").hypotheses
    # frames that end in a word of prose are no cut exception
    assert not diagnose_paste(tmp_path, _FRAMES + "Done\n").hypotheses
