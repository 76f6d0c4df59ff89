"""Version facts: parsers, the driver file under a fake root, and metadata reading without importing torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from host_fakes import write
from syncdoctor.host.versions import format_nccl_version, parse_driver_version, read_versions


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ((2, 21, 5), "2.21.5"),
        (22105, "2.21.5"),
        (2708, "2.7.8"),
        (0, None),
        ("2.1", None),
        ((), None),
        (None, None),
    ],
)
def test_format_nccl_version(value: object, expected: str | None) -> None:
    assert format_nccl_version(value) == expected


def test_parse_driver_version() -> None:
    text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version: 12"
    assert parse_driver_version(text) == "535.104.05"
    open_text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build"
    assert parse_driver_version(open_text) == "550.54.15"
    assert parse_driver_version("garbage") is None and parse_driver_version(None) is None


def test_read_versions_fake_root(tmp_path: Path) -> None:
    write(
        tmp_path / "proc" / "driver" / "nvidia" / "version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
    )
    versions, gpus, unreadable = read_versions(tmp_path)
    assert versions.driver == "550.54.15"
    assert versions.python and versions.python.count(".") == 2
    assert unreadable == []
    assert gpus == ()  # no pynvml here


def test_read_versions_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom pathlib import Path\nfrom syncdoctor.host.versions import read_versions\n"
        "v, _, _ = read_versions(Path('/'))\nprint(v.torch, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    torch_version, imported = out.stdout.split()
    assert imported == "False"
    assert torch_version.startswith("2.")  # read from package metadata


def test_read_versions_with_torch_blocked() -> None:
    code = (
        "import sys\nsys.modules['torch'] = None\nfrom pathlib import Path\n"
        "from syncdoctor.host.versions import read_versions\n"
        "v, _, notes = read_versions(Path('/'), import_torch=True)\nprint(v.torch, v.nccl, notes)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "None None []"
