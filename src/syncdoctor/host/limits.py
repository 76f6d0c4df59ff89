"""Resource limits that break NCCL: the size of ``/dev/shm`` and the locked-memory limit.

``read_limits`` does I/O (``statvfs`` of ``<root>/dev/shm``, ``<root>/proc/self/limits``, and
``resource.getrlimit`` as a fallback on the live host); ``parse_proc_limits`` is pure.
"""

from __future__ import annotations

import logging
import os
import resource
from collections.abc import Callable
from pathlib import Path
from typing import Any

from syncdoctor.host.sysfs import read_text
from syncdoctor.host.types import LimitsFacts

__all__ = ["UNLIMITED", "parse_proc_limits", "read_limits"]

log = logging.getLogger(__name__)

UNLIMITED = -1


def _limit_value(text: str) -> int | None:
    if text == "unlimited":
        return UNLIMITED
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def parse_proc_limits(text: str | None) -> dict[str, tuple[int | None, int | None]]:
    """``/proc/<pid>/limits`` as ``{"Max locked memory": (soft, hard)}``; -1 means unlimited."""
    result: dict[str, tuple[int | None, int | None]] = {}
    for line in (text or "").splitlines()[1:]:
        # Columns are aligned: the name ends where two spaces start.
        name, sep, rest = line.partition("  ")
        fields = rest.split()
        if not sep or len(fields) < 2:
            continue
        result[name.strip()] = (_limit_value(fields[0]), _limit_value(fields[1]))
    return result


def _rlimit(value: int) -> int:
    return UNLIMITED if value == resource.RLIM_INFINITY else int(value)


def read_limits(
    root: Path, statvfs: Callable[[Any], os.statvfs_result] = os.statvfs
) -> tuple[LimitsFacts, list[str]]:
    """/dev/shm size and free bytes, memlock soft and hard limits (bytes, -1 = unlimited)."""
    unreadable: list[str] = []
    shm_total = shm_free = None
    shm = root / "dev" / "shm"
    try:
        stats = statvfs(str(shm))
        shm_total = int(stats.f_blocks) * int(stats.f_frsize)
        shm_free = int(stats.f_bavail) * int(stats.f_frsize)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        unreadable.append(f"{shm}: cannot statvfs ({exc})")
    soft, hard = parse_proc_limits(read_text(root / "proc" / "self" / "limits")).get(
        "Max locked memory", (None, None)
    )
    if soft is None and root.resolve() == Path("/"):
        try:
            raw_soft, raw_hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
            soft, hard = _rlimit(raw_soft), _rlimit(raw_hard)
        except (OSError, ValueError) as exc:
            log.debug("getrlimit(RLIMIT_MEMLOCK) failed: %s", exc)
    if soft is None:
        unreadable.append(f"{root / 'proc/self/limits'}: memlock limit unreadable")
    return LimitsFacts(shm_total, shm_free, soft, hard), unreadable
