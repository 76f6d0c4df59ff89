"""``py-spy dump`` output: where a hung process's main thread stands. Pure: no I/O.

py-spy (0.3-0.4) prints ``Process PID: CMDLINE``, ``Python vX.Y.Z (EXE)``, then per thread a header
``Thread TID (idle|active|active+gil…): "NAME"`` and its frames innermost first, four spaces in:
``    all_reduce (torch/distributed/distributed_c10d.py:3252)`` (``Class.method`` since 0.4; a native frame
without a line: ``    ncclProxyProgress (libnccl.so.2)``); ``--locals`` adds ``Arguments:`` and ``Locals:``
lines further in. Only the main thread is read: the training loop runs there. On Linux the main thread's id
is the process id, printed in decimal (older releases printed the pthread id in hex: no pid then).

A dump pasted without its headers (a stack copied on its own, its innermost frame at the margin and the callers
indented below it: ``all_reduce (torch/distributed/distributed_c10d.py:3075)`` then ``  _sync (trainer.py:196)``) is
read from a first frame in ``torch.distributed``'s collectives: no thread or pid then.

Python's own ``faulthandler`` dumps read the same way (``faulthandler.dump_traceback_later``, a signal registered
with ``faulthandler.register``, ``PYTHONFAULTHANDLER=1`` at a fatal error, pytest's timeout): per thread ``Thread
0x00007f57caf71740 (most recent call first):`` (``Current thread 0x…`` for the one that dumps, ``Stack (most recent
call first):`` for one thread alone), then its frames innermost first, ``  File "…/distributed_c10d.py", line 2501 in
all_reduce``, up to a blank line. The thread whose outermost frame is ``threading.py``'s bootstrap is a helper thread
and is not read; the main thread's is (its outermost frame the script's ``<module>``, or cut before it).

A main thread inside ``torch.distributed`` (or DeepSpeed's comm layer) waits in that collective; one anywhere
else is doing something of its own, and when the others wait, that is where it is stuck.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "FaultFollower", "StackFollower", "classify", "follow", "follow_faulthandler"]

KEYWORDS = ('): "MainThread"',)  # the header that starts a follower (no line parser)

_THREAD = re.compile(r'^Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<status>[\w+]+)\): "MainThread"')
_FRAME = re.compile(r"^(?: {1,6}|\t)(?P<func>\S[^()]*?(?:\([^()]*\)[^()]*?)*) \((?P<file>[^()\s]+?)(?::(?P<line>\d+))?\)\s*$")
# the modules whose functions wait in a collective, and their wrappers (skipped when naming the call)
_COLLECTIVE_FILES = ("torch/distributed/distributed_c10d.py", "deepspeed/comm/", "torch/distributed/_functional")
_WRAPPERS = ("c10d_logger.py", "deepspeed/comm/comm.py")
# the interpreter's and the standard library's frames (a lock, a queue, a socket): what it waits on, not why
_STDLIB = re.compile(r"^(?:threading|queue|selectors|socket|subprocess|multiprocessing/|concurrent/|asyncio/|"
                     r"contextlib|runpy|<string>|<frozen|ssl|time)")


def classify(frames: list[tuple[str, str, int | None]]) -> tuple[str | None, str, bool]:
    """(collective, where, in_backward) of a main thread's frames, innermost first: the collective it waits in
    (``allreduce``, ``barrier``…) or None; where it stands (the innermost frame outside the standard library,
    and the innermost of the program itself when that is another one); whether it is inside autograd's
    backward (a DDP or FSDP gradient reduction runs there)."""
    collective = None
    for func, path, _line in frames:
        if any(part in path for part in _COLLECTIVE_FILES) and not any(w in path for w in _WRAPPERS):
            collective = func.rsplit(".", 1)[-1].lstrip("_").replace("_", "")
            break
    backward = any(func.endswith("backward") and "torch/" in path for func, path, _ in frames)

    def text(frame: tuple[str, str, int | None]) -> str:
        return f"{frame[0]} ({frame[1]}{f':{frame[2]}' if frame[2] else ''})"

    inner = next((f for f in frames if not _STDLIB.match(f[1])), frames[0])
    program = next((f for f in frames if not _STDLIB.match(f[1]) and not f[1].startswith("torch/")), inner)
    where = text(inner) + (f" called from {text(program)}" if program is not inner else "")
    return collective, where, backward


@dataclass
class StackFollower:
    """The frames of one ``py-spy dump`` main thread, until the next thread or the end of the dump."""

    head: Line
    tid: str
    status: str
    max_lines: int = 400
    frames: list[tuple[str, str, int | None]] = field(default_factory=list)

    def feed(self, line: Line) -> bool:
        text = line.body  # after the line's prefixes (a collector's timestamp), its indentation kept
        frame = _FRAME.match(text)
        if frame:
            self.frames.append((frame["func"].strip(), frame["file"], int(frame["line"]) if frame["line"] else None))
            return True
        return text.startswith(("       ", "\t\t")) and bool(text.strip())  # --locals: Arguments:, Locals:, values

    def finish(self) -> list[Event]:
        if not self.frames:
            return []
        pid = int(self.tid) if self.tid.isdecimal() else None  # (a stack without its headers: none)
        return [_dump_event(self.head, self.frames, Origin(pid=pid) if pid is not None else None,
                            thread=self.tid, status=self.status)]


def _dump_event(head: Line, frames: list[tuple[str, str, int | None]], origin: Origin | None,
                **data: object) -> Event:
    """A main thread's dump, its frames innermost first: the collective it waits in and where it stands."""
    collective, where, backward = classify(frames)
    return make_event(Kind.STACK_DUMP, head, origin=origin, op=collective, data={
        **data, "collective": collective, "where": where, "backward": backward,
        "frames": [f"{path}{f':{line}' if line else ''} in {func}" for func, path, line in frames[:40]]})


# a stack pasted without its headers: the innermost frame, a collective's, at the margin
_HEADLESS = re.compile(r"^(?P<func>[A-Za-z_][\w.]{0,120}) \((?P<file>[^()\s]{0,300}?torch/distributed/distributed_c10d\.py)"
                       r":(?P<line>\d+)\)\s*$")


def follow(line: Line) -> StackFollower | None:
    match = _THREAD.match(line.body.strip())
    if match is not None:
        return StackFollower(line, match["tid"], match["status"])
    head = _HEADLESS.match(line.body) if ".py:" in line.body else None
    if head is None:
        return None
    return StackFollower(line, "", "", frames=[(head["func"], head["file"], int(head["line"]))])


# faulthandler's thread header and frames (CPython's Python/traceback.c: ``File "%s", line %d in %s``, no comma)
_FAULT_THREAD = re.compile(r"^(?:(?:Current thread|Thread) (?P<tid>0x[0-9A-Fa-f]{1,16})|Stack) \(most recent call first\):")
_FAULT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]{1,500})", line (?P<line>\d{1,7}) in (?P<func>\S.{0,200}?)\s*$')
# where a module's path starts to be the package's (``…/site-packages/torch/cuda/streams.py`` -> ``torch/cuda/streams.py``),
# or the standard library's (``/usr/lib/python3.8/threading.py`` -> ``threading.py``)
_PACKAGE_ROOT = re.compile(r"^.*?/(?:site-packages|dist-packages)/|^.*?/lib/python\d\.\d{1,2}/")


@dataclass
class FaultFollower:
    """The frames of one thread of a faulthandler dump, up to the line that is not one of them."""

    head: Line
    tid: str
    max_lines: int = 400
    frames: list[tuple[str, str, int | None]] = field(default_factory=list)

    def feed(self, line: Line) -> bool:
        frame = _FAULT_FRAME.match(line.body)
        if frame is None:
            return False
        path = _PACKAGE_ROOT.sub("", frame["file"], count=1)
        self.frames.append((frame["func"], path, int(frame["line"])))
        return True

    def finish(self) -> list[Event]:
        if not self.frames or self.frames[-1][1].endswith("threading.py"):
            return []  # (a helper thread: a DataLoader's pin-memory thread, a logger's, the watchdog's own)
        return [_dump_event(self.head, self.frames, None, thread=self.tid, status="", source="faulthandler")]


def follow_faulthandler(line: Line) -> FaultFollower | None:
    if "most recent call first" not in line.body:
        return None
    match = _FAULT_THREAD.match(line.body.strip())
    return FaultFollower(line, match["tid"] or "") if match is not None else None
