"""The native stack of a rank stuck in a call into C++ (a NCCL or gloo wait, a CUDA synchronize, I/O), taken
with ``py-spy dump --native`` where py-spy is installed (``pip install 'syncdoctor[stacks]'``) and ptrace is
permitted.

A rank's own watcher runs py-spy against its own process, on its own thread, when the monitor asks for the
stack of a late rank whose Python stack ends in such a call. py-spy pauses the process while it unwinds the
stacks (tens of milliseconds; the rank is stuck anyway). The child may trace its parent only where the kernel
lets it: Yama's ``kernel.yama.ptrace_scope`` 0, or 1 with the parent naming the child as its tracer
(``prctl(PR_SET_PTRACER)``, which this module does, for that child only), or ``CAP_SYS_PTRACE``; a
container's seccomp profile may forbid ptrace altogether. When it cannot, the stack says why.

Pure parts: :func:`ptrace_problem` and :func:`parse_dump` (py-spy's ``--json`` output). I/O: :func:`capture`.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MAX_FRAMES", "capture", "find_pyspy", "parse_dump", "ptrace_problem", "summary"]

MAX_FRAMES = 32
_PR_SET_PTRACER = 0x59616D61
_CAP_SYS_PTRACE = 19
_INSTALL = "py-spy is not installed (pip install 'syncdoctor[stacks]')"


def find_pyspy(env: Mapping[str, str] | None = None, python: str | None = None) -> str | None:
    """The py-spy executable: next to this Python (its virtual environment), else on ``PATH``."""
    beside = Path(python or sys.executable).with_name("py-spy")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    env = os.environ if env is None else env
    return shutil.which("py-spy", path=env.get("PATH"))


def ptrace_problem(scope: int | None, cap_sys_ptrace: bool) -> str | None:
    """Why a process cannot let its child trace it, from Yama's ``ptrace_scope`` (None: no Yama) and whether
    it holds ``CAP_SYS_PTRACE``; None when it can (scope 0 or 1: 1 is lifted for the child by prctl)."""
    if scope is None or scope in (0, 1):
        return None
    if scope == 2 and cap_sys_ptrace:
        return None
    if scope == 2:
        return ("no ptrace permission: kernel.yama.ptrace_scope is 2 (admin only) and the rank lacks CAP_SYS_PTRACE "
                "(run the job with --cap-add SYS_PTRACE, or set ptrace_scope to 1)")
    return "no ptrace permission: kernel.yama.ptrace_scope is 3 (ptrace disabled until reboot)"


def parse_dump(data: Any, thread_id: int | None = None) -> tuple[str, ...]:
    """The frames of one thread in py-spy's ``dump --json`` output, innermost first, as ``name (file:line)``
    (``name (libc.so.6)`` for native frames); the thread with ``os_thread_id == thread_id``, else the one
    named MainThread, else the first. Empty when the output is not what py-spy writes."""
    if not isinstance(data, list):
        return ()
    threads = [t for t in data if isinstance(t, Mapping) and isinstance(t.get("frames"), list)]
    if not threads:
        return ()
    chosen = next((t for t in threads if thread_id is not None and t.get("os_thread_id") == thread_id), None)
    chosen = chosen or next((t for t in threads if t.get("thread_name") == "MainThread"), threads[0])
    out = []
    for frame in chosen["frames"][:MAX_FRAMES]:
        if not isinstance(frame, Mapping):
            continue
        name = str(frame.get("name") or "?")
        where = str(frame.get("short_filename") or frame.get("filename") or "?")
        line = frame.get("line")
        out.append(f"{name} ({where}:{line})" if isinstance(line, int) and line > 0 else f"{name} ({where})")
    return tuple(out)


def _yama_scope() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip())
    except (OSError, ValueError):
        return None


def _has_cap_sys_ptrace() -> bool:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> _CAP_SYS_PTRACE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _allow_tracer(pid: int) -> None:
    """Yama scope 1: let ``pid`` (our child) trace us. A no-op elsewhere or without prctl."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PTRACER, ctypes.c_ulong(pid), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def capture(pid: int, thread_id: int | None, timeout_s: float = 20.0,
            pyspy: str | None = None) -> tuple[tuple[str, ...], str]:
    """The native stack of ``pid``'s thread ``thread_id`` (innermost first) and a note ("" when taken, else
    why not). Never raises. ``pid`` is normally this process: py-spy runs as our child, started paused on a
    pipe until it is allowed to trace us."""
    pyspy = pyspy or find_pyspy()
    if pyspy is None:
        return (), _INSTALL
    problem = ptrace_problem(_yama_scope(), _has_cap_sys_ptrace())
    if problem is not None:
        return (), problem
    if not os.access(pyspy, os.X_OK):
        return (), f"cannot start py-spy: {pyspy} is not an executable file"
    argv = [pyspy, "dump", "--native", "--json", "--pid", str(pid)]
    try:
        # the shell waits for one line on stdin, then becomes py-spy (same pid): we allow that pid to trace
        # us before it starts, and nobody else
        child = subprocess.Popen(["/bin/sh", "-c", 'read go; exec "$@"', "sh", *argv], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        return (), f"cannot start py-spy: {exc}"
    _allow_tracer(child.pid)
    try:
        out, err = child.communicate(b"go\n", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return (), f"py-spy did not finish within {timeout_s:g} s"
    finally:
        _allow_tracer(0)
    if child.returncode != 0:
        text = err.decode(errors="replace").strip().splitlines()
        reason = text[-1] if text else f"exit code {child.returncode}"
        if "ermission" in reason or "EPERM" in reason or "Operation not permitted" in reason:
            return (), f"no ptrace permission: {reason} (needs CAP_SYS_PTRACE, or a seccomp profile that allows ptrace)"
        return (), f"py-spy failed: {reason[:300]}"
    try:
        frames = parse_dump(json.loads(out), thread_id)
    except ValueError:
        return (), "py-spy printed no JSON (an older py-spy? 0.3.12 or later has dump --json)"
    return (frames, "") if frames else ((), "py-spy found no frames for the main thread")


def summary(frames: Sequence[str], limit: int = 3) -> str:
    """The innermost native frames in one line: ``clock_nanosleep (libc.so.6) < time_sleep (libpython...)``."""
    return " < ".join(frames[:limit])
