"""Files the commands write (``--json FILE``, ``--html FILE``, ``-o``, ``--emit-env``, watch's events file):
checked before any work is done, so a path that cannot be written costs one line and the usage exit code,
not a measurement thrown away or a traceback at the end.

Does I/O: creates and removes a probe file next to the target (the only check that catches a read-only
mount, ``/proc`` or a directory whose permissions root ignores on some file systems but not others).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from syncdoctor.errors import UsageError

__all__ = ["check_output", "output_problem"]


def output_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be written (one short phrase), or ``None`` when it can. Missing parent
    directories are fine when they can be created under the nearest existing one."""
    text = os.fspath(path)
    if not text.strip():
        return "an empty path"
    target = Path(text)
    if target.is_dir():
        return "it is a directory"
    if target.exists() and not os.access(target, os.W_OK):
        return "permission denied"
    parent = target.parent if str(target.parent) else Path(".")
    while not parent.exists():
        if parent.parent == parent:
            return "no such directory"
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    try:
        handle, probe = tempfile.mkstemp(prefix=".syncdoctor-write-check-", dir=parent)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(handle)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return None


def check_output(path: str | os.PathLike[str] | None, option: str) -> Path | None:
    """``path`` as a :class:`Path` when it can be written (``None`` stays ``None``); otherwise a
    :class:`UsageError` naming the option and the path (exit code 2)."""
    if path is None:
        return None
    problem = output_problem(path)
    if problem is not None:
        raise UsageError(f"{option} {os.fspath(path)}: cannot write there ({problem})")
    return Path(path)
