"""Facts about this process and host: identity for records, the main thread's stack, other pids' state.

Does I/O: reads the environment, ``/proc/<pid>/stat`` and the interpreter's frames. No torch.
"""

from __future__ import annotations

import dis
import os
import socket
import sys
import sysconfig
import threading
import time
from collections import deque
from dataclasses import dataclass
from types import FrameType

from syncdoctor.watch.activity import Sample, classify
from syncdoctor.watch.records import Activity, Frame, StackReport

__all__ = ["ActivityMeter", "Identity", "capture_stack", "identity", "in_native_call", "process_state"]

# opcodes that run native code without a Python frame of their own: calls (Python 3.11's specialised PRECALL
# makes a call to a builtin itself), and operators, attribute reads, iteration and imports that a C type
# implements (``a @ b`` on tensors is a BINARY_OP)
_NATIVE_OPS = frozenset(("PRECALL", "BINARY_OP", "BINARY_SUBSCR", "STORE_SUBSCR", "LOAD_ATTR", "FOR_ITER", "COMPARE_OP",
                         "CONTAINS_OP", "IMPORT_NAME", "BEFORE_WITH", "GET_ITER"))


def in_native_call(frame: FrameType) -> bool:
    """Whether the innermost Python frame ``frame`` is inside a call into native code (its current
    instruction is a call or a C-implemented operation, and no Python frame is deeper)."""
    code, index = frame.f_code, frame.f_lasti
    raw = code.co_code
    if not 0 <= index < len(raw):
        return False
    name = dis.opname[raw[index]]
    return name.startswith("CALL") or name in _NATIVE_OPS


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
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if torch_file:
        roots.append(os.path.dirname(os.path.realpath(torch_file)) + os.sep)
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
    native = in_native_call(frame)
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
    return StackReport(rank, gen, tuple(frames), where, "", time.time(), callers, in_native=native)


class ActivityMeter:
    """Samples the main thread (CPU, bytes moved, functions on its stack) from the watcher's publisher thread,
    once per publication, and sums up the last ``window_s`` (:func:`syncdoctor.watch.activity.classify`).

    Each sample costs tens of microseconds on the watcher's thread (two small ``/proc`` reads, ``pread`` on files
    opened once, and one walk of the main thread's frames: ``benchmarks/bench_activity_meter.py``); nothing runs on
    the training thread. Whatever cannot be read (no ``/proc``, no per-thread CPU clock) is left out and the
    classification uses the rest.
    """

    def __init__(self, window_s: float = 5.0, max_samples: int = 16) -> None:
        self.window_s = window_s
        self.samples: deque[Sample] = deque(maxlen=max_samples)
        main = threading.main_thread()
        self._ident = main.ident
        self._io_path = f"/proc/self/task/{main.native_id}/io" if main.native_id is not None else None
        self._sched_path = f"/proc/self/task/{main.native_id}/schedstat" if main.native_id is not None else None
        self._fds: dict[str, int] = {}
        self._clock: int | None = None
        try:
            if self._ident is not None:
                self._clock = time.pthread_getcpuclockid(self._ident)
                time.clock_gettime(self._clock)
        except (AttributeError, OSError, OverflowError):
            self._clock = None

    def sample(self, now: float) -> None:
        cpu = None
        if self._clock is not None:
            try:
                cpu = time.clock_gettime(self._clock)
            except OSError:  # the main thread has exited
                self._clock = None
        self.samples.append(Sample(now, cpu, self._io(), self._stack(), self._runq()))
        while len(self.samples) > 2 and now - self.samples[1].at >= self.window_s:
            self.samples.popleft()

    def current(self, since: float | None = None) -> Activity | None:
        """The activity over the samples taken at or after ``since`` (the moment the rank's collectives and
        steps last moved: what it has been doing since it stopped taking part), within the window."""
        samples = list(self.samples) if since is None else [s for s in self.samples if s.at >= since - 0.05]
        return classify(samples)

    def _read(self, path: str) -> str | None:
        """The text of a small ``/proc`` file of the main thread, read again with ``pread`` on a descriptor opened
        once (a ``/proc`` file is produced anew at each read from its start: 1.5 us here, 29 us opening it each
        time); None where it cannot be read."""
        fd = self._fds.get(path)
        try:
            if fd is None:
                fd = self._fds[path] = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            return os.pread(fd, 4096, 0).decode("ascii", "replace")
        except OSError:
            self._fds.pop(path, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
            return None

    def close(self) -> None:
        """Close the descriptors the samples read through (the next sample opens them again)."""
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()

    def _io(self) -> int | None:
        if self._io_path is None:
            return None
        text = self._read(self._io_path)
        if text is None:
            self._io_path = None  # not readable here (a restricted /proc): stop trying
            return None
        total = 0
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name in ("rchar", "wchar"):
                try:
                    total += int(value)
                except ValueError:
                    return None
        return total

    def _runq(self) -> float | None:
        """Seconds the main thread has waited runnable for a core (schedstat's second field, nanoseconds)."""
        if self._sched_path is None:
            return None
        text = self._read(self._sched_path)
        try:
            return int((text or "").split()[1]) / 1e9
        except (IndexError, ValueError):
            self._sched_path = None  # no schedstat here (a kernel without it, a restricted /proc)
            return None

    def _stack(self, limit: int = 64) -> tuple[tuple[str, str], ...]:
        frame: FrameType | None = sys._current_frames().get(self._ident) if self._ident is not None else None
        out: list[tuple[str, str]] = []
        while frame is not None and len(out) < limit:
            code = frame.f_code
            out.append((code.co_filename, code.co_name))
            frame = frame.f_back
        out.reverse()
        return tuple(out)
