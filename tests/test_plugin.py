"""The pytest plugin, tested with pytester on a small sample user project (real ranks, one session)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
EXAMPLE = DOCS / "examples" / "test_ci_example.py"

SAMPLE = textwrap.dedent(
    """
    import time

    import pytest
    import torch
    import torch.distributed as dist

    from syncdoctor.testing.symmetry import assert_collectives_symmetric


    def buggy_step(steps):
        for step in range(steps):
            dist.all_reduce(torch.ones(16))
            if dist.get_rank() != 1 or step != 1:   # rank 1 skips the metric at step 1
                dist.all_reduce(torch.zeros(1))


    def test_asymmetric_step_fails():
        assert_collectives_symmetric(buggy_step, world_size=2, args=(3,), timeout=60)


    def load_batch():
        time.sleep(3600)


    @pytest.mark.distributed(world_size=2, timeout=HANG_TIMEOUT)
    def test_hanging_rank():
        grads = torch.ones(4)
        dist.all_reduce(grads)
        if dist.get_rank() == 1:
            load_batch()
        dist.all_reduce(grads)
    """
)
HANG_TIMEOUT = 10


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _tagged_processes(tag: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("SYNCDOCTOR_SAMPLE_TAG") == tag and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_sample_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    source = SAMPLE.replace("HANG_TIMEOUT", str(HANG_TIMEOUT))
    sample_path = pytester.makepyfile(test_sample=source)
    source = sample_path.read_text()  # as written (makepyfile dedents and strips)
    pytester.makepyfile(test_ci_example=EXAMPLE.read_text())
    tag = uuid.uuid4().hex
    monkeypatch.setenv("SYNCDOCTOR_SAMPLE_TAG", tag)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={junit}", "-rf")
    output = result.stdout.str()
    result.assert_outcomes(passed=2, failed=2)

    # the symmetric loop of the docs example passes, the asymmetric one names the rank and the collective
    skipped_line = _line_of(source, "dist.all_reduce(torch.zeros(1))")
    assert (
        f"rank 1 skipped all_reduce([1] float32, SUM) at test_sample.py:{skipped_line} in buggy_step "
        "(#4 of group 0,1, issued by rank 0)" in output
    )

    # the hanging rank is named with where it is, and the collective the other waits in
    hang_line = _line_of(source, "time.sleep(3600)")
    wait_line = max(i for i, line in enumerate(source.splitlines(), 1) if "dist.all_reduce(grads)" in line)
    assert (
        f"rank 1 never reached all_reduce #2 that rank 0 waits in (it is at {pytester.path}/test_sample.py:"
        f"{hang_line} in load_batch)" in output
    )
    assert "rank 0 waits in collective #2 of group 0,1: all_reduce([4] float32, SUM) at " in output
    assert f"test_sample.py:{wait_line} in test_hanging_rank" in output
    assert "W101 late-rank: rank 1 " in output and f"it is in load_batch (test_sample.py:{hang_line})" in output

    # the hanging test ended within its timeout (plus the stack dump and reaping), and nothing is left
    times = {case.get("name"): float(case.get("time", "0")) for case in ET.parse(junit).iter("testcase")}
    match = re.search(r"test_hanging_rank on 2 ranks: .*\n\(every rank was ready after ([0-9.]+) s", output)
    assert match, output
    assert times["test_hanging_rank"] < float(match.group(1)) + HANG_TIMEOUT + 8, times
    assert _tagged_processes(tag) == []


def test_options_have_their_own_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["syncdoctor distributed testing:", "*--syncdoctor-timeout=SYNCDOCTOR_TIMEOUT*"])


def test_marker_arguments_are_checked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.distributed(world_size=0)
        def test_zero():
            pass

        @pytest.mark.distributed(ranks=2)
        def test_unknown():
            pass

        @pytest.mark.distributed(world_size=2)
        def test_unpicklable(capsys):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines_random(
        [
            "*world_size must be a positive integer, got 0*",
            "*unknown argument(s) ranks*",
            "*cannot be sent to the ranks*",
        ]
    )
    # the fixture is named, and what to do instead, in one message without a chained exception
    result.stdout.fnmatch_lines(["*the fixture or argument 'capsys' of test_unpicklable cannot be sent to the ranks*"])
    assert "During handling of the above exception" not in result.stdout.str()


def test_importing_the_plugin_does_not_import_torch() -> None:
    code = "import sys, syncdoctor.testing.pytest_plugin; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_docs_include_the_example_verbatim() -> None:
    assert EXAMPLE.read_text().strip() in (DOCS / "ci.md").read_text()
