"""Process-wide teardown for labs: a registry of live labs closed at exit and on SIGTERM/SIGHUP, and
killing a process with all its descendants. Does I/O (signals)."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["kill_tree", "register", "unregister"]


class _Closable(Protocol):
    def close(self) -> None: ...


def kill_tree(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL ``proc`` and all its descendants (which may sit in sessions of their own)."""
    import psutil

    if proc.poll() is None:
        try:
            family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            family = []
        for member in family:
            with contextlib.suppress(psutil.Error):
                member.send_signal(signal.SIGCONT)
                member.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


_LIVE: weakref.WeakSet[_Closable] = weakref.WeakSet()
_HANDLERS_INSTALLED = False
_REGISTRY_LOCK = threading.Lock()


def register(lab: _Closable) -> None:
    global _HANDLERS_INSTALLED
    with _REGISTRY_LOCK:
        _LIVE.add(lab)
        if _HANDLERS_INSTALLED:
            return
        _HANDLERS_INSTALLED = True
    atexit.register(_close_all)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            previous = signal.getsignal(signum)
            signal.signal(signum, _make_handler(previous))


def unregister(lab: _Closable) -> None:
    with _REGISTRY_LOCK:
        _LIVE.discard(lab)


def _close_all() -> None:
    for lab in list(_LIVE):
        with contextlib.suppress(Exception):
            lab.close()


def _make_handler(previous: Any) -> Callable[[int, Any], None]:
    def _handler(signum: int, frame: Any) -> None:
        _close_all()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    return _handler
