"""Shared test helpers: run the CLI in-process, and skip root-only tests with a reason."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from rich.console import Console

from syncdoctor.cli.main import main

pytest_plugins = ["pytester"]

# a rule that breaks is contained for users (a note in the report); in the tests it must fail loudly
os.environ["SYNCDOCTOR_STRICT_RULES"] = "1"
# the node history the commands record by default lives in the user's data directory: not during the tests
os.environ["SYNCDOCTOR_HISTORY"] = os.path.join(tempfile.mkdtemp(prefix="syncdoctor-test-history-"), "history.sqlite3")


@pytest.fixture(autouse=True)
def _forget_learned_secrets():
    """syncdoctor.redact learns secret values for the process: one test's secrets must not mask the next's."""
    yield
    from syncdoctor.redact import forget_secrets

    forget_secrets()


@dataclass
class CliResult:
    code: int
    out: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``syncdoctor ARGS`` in-process at width 120 without colour; returns exit code and output."""

    def _run(*argv: str) -> CliResult:
        buffer = io.StringIO()
        console = Console(file=buffer, width=120, force_terminal=False, color_system=None)
        code = main(list(argv), console=console)
        captured = capsys.readouterr()
        return CliResult(code, buffer.getvalue() + captured.out + captured.err)

    return _run


def have_root_netns() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


requires_root = pytest.mark.skipif(
    not have_root_netns(), reason="needs root and iproute2 for network namespaces (CI runs these)"
)
