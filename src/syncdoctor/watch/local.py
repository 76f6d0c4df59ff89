"""Facts about this process and host: identity for records, the main thread's stack, other pids' state.

Does I/O: reads the environment, ``/proc/<pid>/stat`` and the interpreter's frames. No torch.
"""

from __future__ import annotations

import os
import socket
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from types import FrameType

from syncdoctor.watch.records import Frame, StackReport

__all__ = ["Identity", "capture_stack", "identity", "process_state"]


@dataclass(frozen=True)
class Identity:
    rank: int
    world_size: int
    local_rank: int
    node: int
    host: str
    pid: int
    attempt: int

    @property
    def host_key(self) -> str:
        return f"{self.host}#{self.node}" if self.node >= 0 else self.host


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def identity(rank: int, world_size: int) -> Identity:
    """Rank facts from torch plus torchrun's variables; ``SYNCDOCTOR_HOST`` (or the lab's
    ``SYNCDOCTOR_LAB_HOST``) overrides the host name."""
    return Identity(
        rank=rank,
        world_size=world_size,
        local_rank=_env_int("LOCAL_RANK", -1),
        node=_env_int("GROUP_RANK", -1),
        host=os.environ.get("SYNCDOCTOR_HOST") or os.environ.get("SYNCDOCTOR_LAB_HOST") or socket.gethostname(),
        pid=os.getpid(),
        attempt=_env_int("TORCHELASTIC_RESTART_COUNT", 0),
    )


def process_state(pid: int, proc: str = "/proc") -> str:
    """``running``, ``stopped`` (SIGSTOP/ptrace), ``zombie``, ``gone`` or ``unknown`` for a pid on this host."""
    try:
        with open(f"{proc}/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except FileNotFoundError:
        return "gone"
    except OSError:
        return "unknown"
    state = text.rsplit(")", 1)[-1].strip()[:1]
    if state in ("T", "t"):
        return "stopped"
    if state in ("Z", "X"):
        return "zombie"
    return "running" if state else "unknown"


def _library_roots() -> tuple[str, ...]:
    roots = []
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.append(os.path.realpath(path) + os.sep)
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        roots.append(os.path.dirname(os.path.realpath(torch.__file__)) + os.sep)
    roots.append(os.path.dirname(os.path.realpath(__file__)) + os.sep)  # syncdoctor/watch itself
    return tuple(roots)


def _is_library(filename: str, roots: tuple[str, ...]) -> bool:
    if filename.startswith("<"):
        return True
    path = os.path.realpath(filename)
    if "site-packages" in path or "dist-packages" in path:
        return any(path.startswith(root) for root in roots[-2:])  # torch and syncdoctor.watch only
    return any(path.startswith(root) for root in roots)


def capture_stack(rank: int, gen: int, thread_id: int | None = None, *, limit: int = 60) -> StackReport:
    """The Python stack of the main thread (or ``thread_id``), taken from another thread.

    Works while that thread waits in C code that released the GIL (a collective, ``time.sleep``, I/O).
    ``where`` is the innermost frame outside torch, the standard library and syncdoctor.watch.
    """
    target = thread_id if thread_id is not None else threading.main_thread().ident
    frame: FrameType | None = sys._current_frames().get(target) if target is not None else None
    if frame is None:
        return StackReport(rank, gen, note="main thread not found (it has exited)", captured=time.time())
    frames: list[Frame] = []
    while frame is not None and len(frames) < limit:
        code = frame.f_code
        frames.append(Frame(code.co_filename, frame.f_lineno, getattr(code, "co_qualname", code.co_name)))
        frame = frame.f_back
    frames.reverse()
    roots = _library_roots()
    user = [f for f in frames if not _is_library(f.file, roots)]
    where = user[-1] if user else (frames[-1] if frames else None)
    callers = tuple(reversed(user[-3:-1])) if user else ()
    return StackReport(rank, gen, tuple(frames), where, "", time.time(), callers)
