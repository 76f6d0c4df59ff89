"""Readings added in the session of the eighty-second blind harvest (the r85* cases of the real corpus) and of the
sweeps of MPI stacks, JAX/XLA, parallel-training libraries and orchestration; one behaviour per test, each with the
look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_FRAMES = ('Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    fs.upload(local, remote)\n'
           '  File "/usr/local/lib/python3.10/dist-packages/paddle/distributed/fleet/utils/fs.py", line 1010, in upload\n'
           '    raise FSTimeOut(f"upload time out:{fs_path}")\n')


def test_the_line_that_ends_a_tracebacks_frames_is_its_exception_whatever_its_name(tmp_path: Path) -> None:
    # PaddlePaddle's file-system exceptions end in neither Error nor Exception: the traceback ended unread
    top = diagnose(tmp_path, _FRAMES + "paddle.distributed.fleet.utils.fs.FSTimeOut: upload time out:/ckpt/step_9\n"
                   ).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "FSTimeOut" in top.title
    ranked = "".join(f"[rank3]: {line}\n" for line in _FRAMES.splitlines())
    top = diagnose(tmp_path, ranked + "[rank3]: paddle.distributed.fleet.utils.fs.FSTimeOut: upload time out:/ckpt\n"
                   ).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.RANK_CRASHED, (3,))
    # Paddle's C++ check (EnforceNotMet) stays an error no rule explains, as c10's ``enforce fail`` is; and a line
    # in capitals after the frames (another writer's) is no exception
    enforce = _FRAMES + "paddle.fluid.core.EnforceNotMet: unhandled cuda error at [nccl_helper.h:93]\n"
    assert diagnose(tmp_path, enforce).hypotheses[0].category is Category.UNRECOGNISED
    exceptions = [e for e in events_of(_FRAMES + "WARNING: rank 1 saved\n") if e.kind is Kind.EXCEPTION]
    assert exceptions == []


def test_an_exception_named_for_a_wait_or_an_abort_on_a_line_alone_is_never_silent(tmp_path: Path) -> None:
    for line in ("paddle.distributed.fleet.utils.fs.FSShellCmdAborted: cmd hadoop fs -put ckpt failed",
                 "FSTimeOut: hadoop fs -ls hdfs://cluster/ckpt timeout"):
        hypotheses = diagnose(tmp_path, line + "\n").hypotheses
        assert hypotheses and hypotheses[0].category is Category.UNRECOGNISED, line
        # the qualified class before its colon is no pdsh host
        assert hypotheses[0].culprit_hosts == (), line
    # an option named for a timeout is no error
    assert diagnose(tmp_path, "SocketTimeout: 30\nRequestTimeout: 10s\nRequestTimeout= 10\n").hypotheses == ()


_DCP = ("[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([3, 7])\n"
        "[rank0]: Traceback (most recent call last): (RANK 3)\n"
        '[rank0]:   File "/usr/lib/python3.11/site-packages/torch/distributed/checkpoint/filesystem.py", line 655, in '
        "write_data\n"
        '[rank0]:     with open(path, "wb") as f:\n'
        "[rank0]: OSError: [Errno 28] No space left on device: '/ckpt/step-1200/__3_0.distcp'\n"
        "[rank0]: Traceback (most recent call last): (RANK 7)\n"
        '[rank0]:   File "/usr/lib/python3.11/site-packages/torch/distributed/checkpoint/utils.py", line 192, in '
        "reduce_scatter\n"
        "[rank0]:     local_data = map_fun()\n"
        "[rank0]: OSError: [Errno 28] No space left on device: '/ckpt/step-1200/__7_0.distcp'\n")


def test_a_distributed_checkpoints_report_names_the_ranks_that_failed_not_the_one_that_printed_it(
        tmp_path: Path) -> None:
    # torch.distributed.checkpoint gathers every rank's failure to its coordinator, which raises them as one
    top = diagnose(tmp_path, _DCP).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.RANK_CRASHED, (3, 7))
    assert "No space left on device" in top.what and "__7_0.distcp" in top.what
    # the summary line alone (the paste cut before the ranks' tracebacks) still names them
    top = diagnose(tmp_path, _DCP.splitlines(keepends=True)[0]).hypotheses[0]
    assert (top.category, top.culprit_ranks) == (Category.RANK_CRASHED, (3, 7))
    # a traceback that merely follows the coordinator's own error is the coordinator's
    own = "[rank0]: Traceback (most recent call last):\n" + "".join(_DCP.splitlines(keepends=True)[2:5])
    assert diagnose(tmp_path, own).hypotheses[0].culprit_ranks == (0,)
