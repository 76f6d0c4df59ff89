"""/dev/shm and memlock readers: the /proc/self/limits parser, a fake statvfs, missing and malformed files."""

from __future__ import annotations

from pathlib import Path

from host_fakes import fake_statvfs, make_limits, write
from syncdoctor.host.limits import UNLIMITED, parse_proc_limits, read_limits


def test_parse_proc_limits() -> None:
    text = (
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max locked memory         65536                unlimited            bytes     \n"
        "Max realtime timeout      unlimited            unlimited            us        \n"
        "Max nice priority         0                    0                    \n"
        "garbage\n"
    )
    limits = parse_proc_limits(text)
    assert limits["Max locked memory"] == (65536, UNLIMITED)
    assert limits["Max realtime timeout"] == (UNLIMITED, UNLIMITED)
    assert limits["Max nice priority"] == (0, 0)
    assert "garbage" not in limits
    assert parse_proc_limits(None) == {}
    assert parse_proc_limits("header\nMax locked memory         lots                 -5    bytes\n") == {
        "Max locked memory": (None, None)
    }


def test_read_limits_docker_defaults(tmp_path: Path) -> None:
    make_limits(tmp_path, "65536", "65536")
    limits, unreadable = read_limits(tmp_path, fake_statvfs(64 << 20, 60 << 20))
    assert unreadable == []
    assert limits.shm_total_bytes == 64 << 20 and limits.shm_free_bytes == 60 << 20
    assert limits.memlock_soft_bytes == 65536 and limits.memlock_hard_bytes == 65536


def test_read_limits_unlimited(tmp_path: Path) -> None:
    make_limits(tmp_path, "unlimited", "unlimited")
    limits, _ = read_limits(tmp_path, fake_statvfs(8 << 30))
    assert limits.memlock_soft_bytes == UNLIMITED and limits.shm_total_bytes == 8 << 30


def test_read_limits_unreadable(tmp_path: Path) -> None:
    def broken(_path: str):
        raise PermissionError(13, "Permission denied")

    write(tmp_path / "proc" / "self" / "limits", "not a limits file")
    limits, unreadable = read_limits(tmp_path, broken)
    assert limits.shm_total_bytes is None and limits.memlock_soft_bytes is None
    assert any("dev/shm" in n for n in unreadable) and any("memlock" in n for n in unreadable)


def test_read_limits_live_host_never_raises() -> None:
    limits, _ = read_limits(Path("/"))
    assert limits.memlock_soft_bytes is not None  # /proc/self/limits or getrlimit always answer on Linux
