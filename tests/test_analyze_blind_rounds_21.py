"""Readings added in the session of the sixty-second blind harvest (the r65* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_slurms_prolog_failure_is_the_scheduler_ending_the_job_before_any_task(tmp_path: Path) -> None:
    paste = ("$ srun -N 6 -p compute hostname\nsrun: PrologSlurmctld failed, job killed\nsrun: Force Terminated job 2\n"
             "srun: error: Job allocation 2 has been revoked\n")
    assert one("srun: PrologSlurmctld failed, job killed", Kind.AGENT_SIGNAL).data["reason"] == "prolog failed"
    assert one("[2024-05-01T10:00:00.123] error: [job 4411] prolog failed status=1:0",
               Kind.AGENT_SIGNAL).data["reason"] == "prolog failed"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "prolog failed" in top.title and "resume log" in top.fix
    # a node's prolog (salloc's words, srun's with the step's aftermath) names the node to drain
    for paste, node in (("salloc: Prolog failure on node k003-006\nsalloc: Job allocation 235454 has been revoked.\n"
                         "salloc: error: Job allocation 235454 has been revoked\n", "k003-006"),
                        ("srun: error: Task launch for 23.0 failed on node hpc: Job prolog failed\nsrun: error: "
                         "Application launch failed: Job prolog failed\nsrun: Job step aborted: Waiting up to 32 "
                         "seconds for job step to finish.\nsrun: error: Timed out waiting for job step to complete\n",
                         "hpc")):
        node_top = diagnose(tmp_path, paste).hypotheses[0]
        assert node_top.category is Category.RANK_KILLED and node_top.culprit_hosts == (node,), node_top.title
    # the revoked allocation alone is Slurm's cancellation; a script's own 'prolog failed' message is no Slurm record
    alone = diagnose(tmp_path, "srun: error: Job allocation 7 has been revoked\n").hypotheses[0]
    assert alone.category is Category.RANK_KILLED and "allocation revoked" in alone.title
    assert not [e for e in events_of("RuntimeError: prolog failed to load the dataset") if e.kind is Kind.AGENT_SIGNAL]


def test_enospc_in_a_warning_is_an_error_line_and_not_silence(tmp_path: Path) -> None:
    line = ("W0717 18:50:07.754983 3957032 rdma_context.cpp:199] The buffer length exceeds device max_mr_size, shrink "
            "it to 68719476736: No space left on device [28]")
    assert one(line, Kind.ERROR_LINE).data["word"] == "No space left on device"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_processes and "max_mr_size" in top.title
    assert one("W0717 18:50:08 cache.cc:10] Disk quota exceeded while writing /ckpt/step_100", Kind.ERROR_LINE)
    # a free-space report names the words without an error
    assert not [e for e in events_of("df: 12G used, no space left warnings: none") if e.kind is Kind.ERROR_LINE]
