"""Files the commands write are checked before any work: a path that cannot be written is one line and the
usage exit code (2), never a traceback, and nothing is measured or analysed first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from syncdoctor.errors import UsageError
from syncdoctor.outputs import check_output, output_problem


@pytest.mark.parametrize(("path", "problem"), [
    ("/proc/x.html", "No such file or directory"),
    ("/etc/hostname/x.json", "is not a directory"),
    ("", "an empty path"),
])
def test_paths_that_cannot_be_written(path: str, problem: str) -> None:
    found = output_problem(path)
    assert found is not None and problem in found


def test_a_directory_and_a_read_only_file(tmp_path: Path) -> None:
    assert output_problem(tmp_path) == "it is a directory"
    locked = tmp_path / "locked.json"
    locked.write_text("{}")
    locked.chmod(0o400)
    if os.geteuid() != 0:  # root writes anyway
        assert output_problem(locked) == "permission denied"


def test_writable_paths_and_missing_parents(tmp_path: Path) -> None:
    assert output_problem(tmp_path / "a" / "b" / "out.html") is None  # parents are created when written
    assert output_problem(tmp_path / "out.json") is None
    assert list(tmp_path.iterdir()) == []  # the check leaves nothing behind
    assert check_output(None, "--json") is None
    with pytest.raises(UsageError, match=r"--html /proc/x.html: cannot write there"):
        check_output("/proc/x.html", "--html")


@pytest.mark.parametrize("argv", [
    ["report", "{input}", "-o", "/proc/y.html"],
    ["analyze", "{input}", "--html", "/proc/x.html"],
    ["analyze", "{input}", "--json", "--html", "/proc/x.html"],
    ["recommend", "{probe}", "--emit-env", "/proc/e.env"],
    ["probe", "--local", "2", "--quick", "--json", "/proc/p.json"],
    ["probe", "--local", "2", "--quick", "--html", "/proc/p.html"],
    ["probe", "--emit-env", "/proc/p.env"],
])
def test_every_command_checks_before_it_works(run_cli, tmp_path: Path, argv: list[str]) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("[rank0]: RuntimeError: boom\n")
    probe = tmp_path / "probe.json"
    probe.write_text("{}")
    result = run_cli(*[a.format(input=log, probe=probe) for a in argv])
    assert result.code == 2, result.out
    assert "cannot write there" in result.out and "Traceback" not in result.out
    assert len([line for line in result.out.splitlines() if line.strip()]) == 1, result.out


def test_html_says_where_the_page_went(run_cli, tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    page = tmp_path / "out" / "verdict.html"
    result = run_cli("analyze", str(log), "--html", str(page))
    assert page.is_file() and f"HTML report written to {page}" in result.out


def test_check_root_must_exist(run_cli, tmp_path: Path) -> None:
    result = run_cli("check", "--root", str(tmp_path / "nonexistent"))
    assert result.code == 2 and "no such directory" in " ".join(result.out.split())
