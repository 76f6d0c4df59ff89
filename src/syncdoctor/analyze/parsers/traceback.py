"""Python tracebacks, exception lines, CUDA out-of-memory errors and fatal signals on a rank. Pure.

* ``Traceback (most recent call last):`` then ``  File "train.py", line 42, in step`` frames and the
  exception line ``RuntimeError: …`` (PyTorch's excepthook prefixes every line with ``[rank3]: ``; in a
  combined log other ranks' lines may interleave, so the follower keeps only its own rank's lines);
* a bare exception line ``torch.distributed.DistBackendError: …`` / ``ValueError: …``;
* the driver's ``CUDA_ERROR_OUT_OF_MEMORY`` and torch_memory_saver's ``CUresult error  result=2 … func=cu_mem_create``
* ``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; …)`` (also
  ``torch.cuda.OutOfMemoryError`` and ``RuntimeError: CUDA out of memory``; ``HIP out of memory`` on ROCm,
  also where two processes' lines were interleaved on one: ``RuntimeErrorRuntimeError: : HIP out of memory``);
* ``Fatal Python error: Segmentation fault`` (faulthandler); a death by signal without it shows in
  torchrun's failure table (exit code -11, SIGSEGV).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, clip, make_event, normalize_op
from syncdoctor.analyze.parsers.torchrun import SIGNAL_WORDS, signal_name, windows_signal

__all__ = ["KEYWORDS", "TracebackFollower", "cut_exception", "exception_of", "follow", "headless", "is_frame", "is_source_line", "parse",
           "wants_frames"]

KEYWORDS = ("Error", "Exception", "Interrupt", "._dynamo.exc.", "SystemExit", "out of memory", "Fatal Python error", "Caught signal",
            "can't open file",
            "Process received signal", "Signal: ", "Segfault encountered", "received at time=", "received by PID", "CUresult error",
            "CUDA_ERROR_OUT_OF_MEMORY", "Assertion `", "cuMemCreate failed", "Windows fatal exception: ")

_EXCEPTION = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.){0,8}[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure)"
    # torch.compile's own exceptions, whose names say what went wrong without the word: ``torch._dynamo.exc.
    # Unsupported: Attempted to call function marked as skipped``, ``torch._dynamo.exc.BackendCompilerFailed: …``
    r"|torch\._(?:dynamo|inductor)\.exc\.[A-Z]\w*"
    # Python's base class itself, raised by a program's own check (``Exception: The deprecated version of ZeRO Stage 1
    # is not supported in deepspeed >= 0.5.9.``), with words of its own (not a logger's ``Exception: None``)
    r"|Exception(?=: ?(?!(?:None|null|0)\s*$)\S))(?::[ ]?(?P<msg>.*))?$"
)
# the line that ends a traceback's frames is its exception whatever the class is named (PaddlePaddle's ``paddle.
# distributed.fleet.utils.fs.FSTimeOut: …``): a class's name in CamelCase, its module before it; not Paddle's
# ``EnforceNotMet``, its C++ checks' failure (read as c10's ``enforce fail`` is: an error no rule explains)
_ENDING_EXCEPTION = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.){0,8}(?!EnforceNotMet\b)[A-Z][A-Z0-9_]*[a-z]\w*)"
                               r"(?::[ ]?(?P<msg>.*))?$")
# the driver API's out-of-memory, from allocators that call it themselves: torch_memory_saver (SGLang, verl)
# ``[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create``
# (NVSHMEM's symmetric heap, DeepEP's buffers: ``mem_heap.cpp:1509: non-zero status: 2 cuMemCreate failed``, CUresult 2)
_DRIVER_OOM = re.compile(r"CUresult error\s+result=2\b|\bCUDA_ERROR_OUT_OF_MEMORY\b"
                         r"|\bnon-zero status: 2 cuMemCreate failed\b")
# indented by Python; flush left where a forum or a log collector stripped the spaces
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in ?(?P<func>.*)$')  # <module> eaten
# a frame's line a terminal or a paste cut after the file's name or inside it: ``  File "…/trainer.py", l`` (the rest
# wrapped onto the next line, or lost), ``  File "/home/us`` (a paste's last line)
_CUT_FRAME = re.compile(r'^\s*File "(?:(?P<file>[^"]+)",? ?(?:l(?:i(?:n(?:e(?: \d{0,7}(?:,(?: (?:i(?:n? ?)?)?)?)?)?)?)?)?)?'
                        r'|(?P<cut>[^"]{1,500}))\s*$')
# a frame's line whose head a wrap or a paste cut (``/site-packages/pytorch_lightning/overrides/distributed.py", line
# 213, in __init__``: ``File "`` and the path's start on the line above, or not pasted)
_HEAD_CUT_FRAME = re.compile(r'^\s*(?:\.\.\.|…)?(?P<file>[^"\s]{0,500}\.py)", line (?P<line>\d+), in ?(?P<func>.*)$')
# the GPU as "(GPU 0; 79.15 GiB total capacity…)" up to 2.0, "GPU 0 has a total capacity of …" since 2.1
_OOM = re.compile(r"(?:CUDA|HIP) out of memory\.?(?: Tried to allocate (?P<size>[\d.]+ [KMGT]?i?B))?"
                  r"(?:.*?(?:\(GPU (?P<gpu>\d+)|GPU (?P<gpu2>\d+) has a total capac?i?ty))?")  # PyTorch 2.1: "capacty"
# PyTorch >= 2.1 lists every process on the GPU that ran out: several means ranks share one device
_SHARER = re.compile(r"Process (?P<pid>\d{1,10}) has (?P<size>\d{1,12}(?:\.\d{1,6})? ?[KMGT]?i?B) memory in use")
_CAPACITY = re.compile(r"has a total capac?i?ty of (?P<size>\d{1,12}(?:\.\d{1,6})? ?[KMGT]?i?B)")
_FATAL = re.compile(r"Fatal Python error: (?P<what>.+)")
# Windows' structured exceptions, its signals, as Python's faulthandler prints them before the process ends
# (``Windows fatal exception: access violation``, ``… code 0xc0000409``); a program's own handler that caught one
# (CNTK's ``Caught Win32 exception 0xc0000005: Access violation.``, then its exit code) is an error line (parsers.generic)
_WINDOWS_FAULT = re.compile(r"\bWindows fatal exception: (?:code )?(?P<what>0x[0-9a-fA-F]{8}\b|access violation\b"
                            r"|illegal instruction\b|stack overflow\b|int(?:eger)? divide by zero\b)", re.I)
# the interpreter itself, before any code ran: ``/usr/bin/python3: can't open file 'train.py': [Errno 2] No such file
# or directory`` (a launcher started it in another directory, a path the other nodes do not have)
_NO_SCRIPT = re.compile(r"\bpython[\w.]*(?:\.exe)?: can't open file ['\"](?P<path>[^'\"]+)['\"]: \[Errno (?P<errno>\d+)\] "
                        r"(?P<error>.+)")
# UCX's signal handler (Open MPI / HPC-X, NCCL's UCX plugin): [host:pid :thread:tid] Caught signal 7 (Bus error: …)
_UCX_SIGNAL = re.compile(r"(?:^\[(?P<host>[\w.\-]+):(?P<pid>\d+) *:\d+:\d+\] )?Caught signal (?P<num>\d+) "
                         r"\((?P<what>[^:)]+)")
# Open MPI's (opal) signal handler, in every process mpirun or srun started with Open MPI linked in:
# ``[host:pid] *** Process received signal ***``, then ``[host:pid] Signal: Segmentation fault (11)``
_OMPI_SIGNAL = re.compile(r"^\s*(?:\[(?P<host>[\w.\-]+):(?P<pid>\d+)\] )?(?:\*\*\* Process received signal|"
                          r"Signal: (?P<what>[^(]+?) \((?P<num>\d+)\))")
# a native crash handler's banner before the native frames (vLLM, TensorRT-LLM, Megatron, torch_xla processes):
# ``!!!!!!! Segfault encountered !!!!!!!``; abseil's failure signal handler (Ray's workers, gRPC, TensorFlow):
# ``*** SIGSEGV received at time=1746566409 on cpu 131 ***`` (then ``PC: @ 0x… addProxyOpIfNeeded()``)
# (Google's own handler, in libtpu and JAX's TPU runtime: ``*** SIGSEGV (@(nil)), see gl__________41#s15 received by
# PID 11743 (TID 12350) on cpu 17; stack trace: ***``, the faulting address and a link between; a paste's markdown may
# take the asterisks for emphasis)
_BANNER = re.compile(r"!{3,} ?Segfault encountered ?!{3,}|(?:\*\*\* |^ ?)(?P<sig>SIG(?:SEGV|ABRT|BUS|FPE|ILL)) (?:received "
                     r"at time=\d+|(?:\(@\S{0,40}?\),? )?(?:see \S{1,80} )?received by PID (?P<pid>\d{1,10}))")
# a C assertion that failed, which aborts the process: glibc's ``python: pthread_mutex_lock.c:81:
# __pthread_mutex_lock: Assertion `mutex->__data.__owner == 0' failed.``, UCX's ``[jazz03:140564:0:140564]
# arbiter.c:236  Assertion `(group)->arbiter == (arbiter)' failed`` (its prefix: host, pid, thread)
_ASSERTION = re.compile(r"(?:\[(?P<host>[\w.\-]+):(?P<pid>\d+):\d+:\d+\]\s+.*?)?Assertion `(?P<expr>[^']{1,300})' failed")
# the launchers' own code: torchrun's agent and entry point, DeepSpeed's and Accelerate's launchers
_LAUNCHER_PATHS = ("distributed/elastic/agent/", "torch/distributed/run.py", "deepspeed/launcher/",
                   "deepspeed/elasticity/", "accelerate/commands/launch")
_LIBRARY_PATHS = ("site-packages", "dist-packages", "/lib/python", "<frozen", "/torch/", "/runpy.py")
_FATAL_NUMBERS = (4, 6, 7, 8, 11)  # SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV


def _oom_gpu(oom: re.Match[str] | None) -> int | None:
    gpu = (oom["gpu"] or oom["gpu2"]) if oom else None
    return int(gpu) if gpu else None


def exception_of(text: str) -> tuple[str, str] | None:
    """(type, message) when ``text`` (a line body) is a Python exception line."""
    match = _EXCEPTION.match(text.rstrip())
    if not match:
        return None
    return match["type"], (match["msg"] or "").strip()


def _is_library(path: str) -> bool:
    return any(part in path for part in _LIBRARY_PATHS)


def oom_data(text: str) -> dict[str, object]:
    """What a CUDA out-of-memory message says: the size it tried, the GPU, the other processes using that GPU."""
    oom = _OOM.search(text)
    data: dict[str, object] = {"tried": oom["size"] if oom else None, "gpu": _oom_gpu(oom)}
    held = {int(m["pid"]): _bytes(m["size"]) for m in _SHARER.finditer(text)}
    if held:
        data["sharers"] = list(held)[:64]
        data["shared_bytes"] = sum(held.values())
        total = _CAPACITY.search(text)
        if total:
            data["capacity_bytes"] = _bytes(total["size"])
    return data


def _bytes(size: str) -> int:
    value = float("".join(ch for ch in size if ch.isdigit() or ch == "."))
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    letter = next((ch for ch in size if ch in scale), "")
    return int(value * scale.get(letter, 1))


def _exception_events(line: Line, exc_type: str, message: str, frames: list[tuple[str, str]],
                      sources: list[str] | None = None) -> list[Event]:
    short = exc_type.rsplit(".", 1)[-1]
    data: dict[str, object] = {"type": exc_type, "message": clip(message, 300)}
    if sources and len(sources) == len(frames):
        # the program's own code line nearest the error, where pasted: the call into the library that raised
        # (``torch.cuda.set_device(local_rank)``)
        code = next((code for (path, _), code in zip(reversed(frames), reversed(sources), strict=True)
                     if code and not _is_library(path)), "")
        if code:
            data["code_line"] = code
    if frames:
        data["frames"] = [text for _, text in frames[-4:]]
        data["where"] = frames[-1][1]
        if _is_library(frames[-1][0]):
            data["library_raised"] = True  # raised in an installed library's code, not the program's own
        if "torch/distributed/" in frames[-1][0]:
            data["in_torch_distributed"] = True  # raised in PyTorch's distributed code (it chose what failed)
        user = [text for path, text in frames if not _is_library(path)]
        if user:
            # where the program called into the library: tells which collective a rank was in
            data["call_site"] = " > ".join(user[-2:])
        if any(marker in path for path, _ in frames for marker in _LAUNCHER_PATHS):
            data["launcher"] = True  # raised inside the launcher (its agent, its rendezvous), not in a worker's code
        api = next((text for path, text in frames if path.endswith("distributed_c10d.py")), None)
        if api is not None:  # the torch.distributed call it was blocked in: all_reduce, recv, send...
            data["collective"] = api.rsplit(" in ", 1)[-1].strip()
    failed = _DCP_RANKS.search(message) if short == "CheckpointException" else None
    if failed is not None:
        # the coordinator of a distributed checkpoint reports the ranks whose step failed (each one's traceback
        # follows as ``Traceback (most recent call last): (RANK 3)``): those ranks failed, not the one that printed it
        reporter = line.origin.describe()
        return [replace(make_event(Kind.EXCEPTION, line, data={  # (the frames are the reporter's: not kept)
            "type": exc_type, "message": f"its part of a distributed checkpoint failed (reported by {reporter})",
            "reported_by": line.origin.rank, "report": True}), origin=Origin(rank=rank))
            for rank in sorted({int(r) for r in re.findall(r"(?<!\d)\d{1,7}(?!\d)", failed["ranks"])})[:64]]
    events = [make_event(Kind.EXCEPTION, line, data=data)]
    oom = _OOM.search(message)
    if oom or (short == "OutOfMemoryError" and not exc_type.startswith("ray.")):  # Ray's: host memory, its monitor
        events.append(make_event(Kind.CUDA_OOM, line, data=oom_data(message)))
    elif short == "ResourceExhaustedError" and "OOM when allocating" in message:  # TensorFlow's (Horovod jobs)
        gpu = _TF_DEVICE.search(message)
        events.append(make_event(Kind.CUDA_OOM, line, data={
            "tried": None, "gpu": int(gpu["gpu"]) if gpu else None, "source": "tensorflow"}))
    return events


# torch.distributed.checkpoint's report of the ranks whose part failed: ``CheckpointException ranks:dict_keys([3, 7])``,
# then each one's traceback, headed ``Traceback (most recent call last): (RANK 3)``
_DCP_RANKS = re.compile(r"ranks:dict_keys\(\[(?P<ranks>[\d, ]{1,2000})\]\)")
_DCP_RANK = re.compile(r"Traceback \(most recent call last\): \(RANK (?P<rank>\d{1,7})\)")
# TensorFlow's out-of-memory error names the device it allocated on: ``OOM when allocating tensor with
# shape[2,1023,50257] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc``
_TF_DEVICE = re.compile(r"/device:GPU:(?P<gpu>\d+)")


# a frame's source line that raises a new exception with a message (``raise ValueError("world size must be …")``,
# ``raise RuntimeError(f'Internal error: …``): the class and the start of its literal
_RAISED = re.compile(r"^raise (?P<type>(?:[A-Za-z_]\w{0,60}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception))\("
                     r"(?:[fFrRbBuU]{0,2}(?P<q>'|\")(?P<msg>[^\n]{0,300}))?")


# an assert statement (a frame's source line): ``assert self.num_samples >= 1 or self.total_size == 0``
_ASSERT_STATEMENT = re.compile(r"^assert\b[ (]\s*\S")


def _frame(body: str) -> tuple[str, str] | None:
    """A traceback's frame line: (its file's path, ``file:line in func``), also where the line was cut after the
    file's name (``file in ?``)."""
    frame = _FRAME.match(body) or _CUT_FRAME.match(body) or _HEAD_CUT_FRAME.match(body)
    if frame is None:
        return None
    if frame.re is _CUT_FRAME and frame["cut"] is not None:
        return frame["cut"], ""  # (a frame cut inside its file's name: one more frame, where it is not told)
    name = frame["file"].rsplit("/", 1)[-1]
    whole = frame.re is not _CUT_FRAME
    return frame["file"], f"{name}:{frame['line']} in {frame['func'].strip()}" if whole else f"{name} in ?"


def is_frame(body: str) -> bool:
    """A traceback's frame line (``  File "train.py", line 42, in step``), also one cut after the file's name or
    before it (its ``File "`` lost); the words every such line holds are looked for before the patterns."""
    return ('File "' in body or '", line ' in body) and _frame(body) is not None


# an exception's line that a paste indented like the source lines above it (``    ValueError: Expected more than 1
# value per channel when training``): no source line of Python reads so (a class name, a colon, then words)
_REINDENTED = re.compile(r"^\s+(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): (?![^\s=]+\s*=)\S+(?: \S+){2,}")


# an exception written as its repr on a line of its own, where a rank is known (torch.distributed.rpc re-raising a
# remote call's error under ``On WorkerInfo(id=1, name=Worker1):``: ``RuntimeError('got 1 tensors and 0 gradients')``)
_REPR_EXCEPTION = re.compile(r"^\W{0,4}(?P<type>(?:[A-Za-z_]\w*\.){0,8}[A-Z]\w*(?:Error|Exception))\((?P<q>['\"])"
                             r"(?P<msg>.{0,2000}?)(?P=q)\)\s*$")


def _exception_line(body: str) -> tuple[str, str] | None:
    """(type, message) of a Python exception's line, also one a paste indented (see ``_REINDENTED``)."""
    found = exception_of(body)
    if found is None and body[:1] in (" ", "\t") and _REINDENTED.match(body):
        found = exception_of(body.strip())
    return found


# an exception's own line behind the spaces and labels a paste or a collector left before it (``      [rank0]:
# AssertionError: Torch not compiled with CUDA enabled``), which the follower may take for a source line
_LABELLED_EXCEPTION = re.compile(r"\s*(?:\[[^\]\n]{1,40}\]:?\s*)*(?:[A-Za-z_]\w*\.)*[A-Z]\w*"
                                 r"(?:Error|Exception|Interrupt|Exit)\b")


def is_source_line(body: str) -> bool:
    """A frame's indented source line, the program's code (not an exception's own line indented or labelled by a
    paste), whatever words it holds."""
    return body[:1] in (" ", "\t") and not _LABELLED_EXCEPTION.match(body)


def _under_a_frame(body: str) -> bool:
    """A frame's indented source line or its ``^^^^`` markers."""
    return (body[:1] in (" ", "\t") and not _REINDENTED.match(body)) or body.lstrip().startswith("^")


@dataclass
class TracebackFollower:
    """Collects one traceback's frames until its exception line."""

    head: Line
    max_lines: int = 250
    frames: list[tuple[str, str]] = field(default_factory=list)  # (path, "file:line in func")
    sources: list[str] = field(default_factory=list)  # the code line under each frame, where pasted
    events: list[Event] = field(default_factory=list)
    after_frame: bool = False
    ended: bool = False
    # opened by a frame, the ``Traceback (most recent call last):`` above it not in the paste (``headless`` reads the
    # exception under such frames): only a paste that stops inside them is told, as the traceback's first line is
    headless: bool = False
    # opened by a stack printed on purpose, not raised: pytest-timeout's ``~~~ Stack of MainThread (140…) ~~~`` (a test
    # that hung), logging's ``Stack (most recent call last):`` (stack_info=True): where that thread stood, whether or
    # not the paste goes on after it (no error of its own)
    dump: str = ""
    # the line after the frames was the start of the exception's own line, cut by the paste (``Ru``): told by what
    # follows it, c10's backtrace (the exception's, printed after its message) or the paste's end
    cut: bool = False

    def __post_init__(self) -> None:
        if self.headless and (frame := _frame(self.head.body)):
            self._add_frame(frame)

    def _add_frame(self, frame: tuple[str, str]) -> None:
        self.after_frame = bool(frame[1])
        if frame[1]:
            self.frames.append(frame)
            self.sources.append("")

    def owns(self, line: Line) -> bool:
        """Whether ``line`` is its writer's (not another process's, interleaved in a combined log)."""
        return line.origin.rank == self.head.origin.rank and line.origin.local_rank == self.head.origin.local_rank

    def feed(self, line: Line) -> bool:
        if not self.owns(line):
            return True  # another process's line interleaved in a combined log
        body = line.body
        if self.cut:
            # c10's backtrace under the cut line: the exception's line and its first frames lost, the traceback's
            # frames stand (finish); anything else, and the fragment was no exception's
            self.ended = not _CPP_FRAME.match(body)
            return False
        frame = _frame(body)
        if frame:
            self._add_frame(frame)
            return True
        if not body.strip() or _under_a_frame(body):
            if self.after_frame and body.strip() and not body.lstrip().startswith("^"):
                self.sources[-1] = body.strip()[:200]
            self.after_frame = False
            return True  # source line under a frame, caret markers
        found = _exception_line(body)
        if found is None and self.after_frame:
            self.after_frame = False
            self.sources[-1] = body.strip()[:200]
            return True  # a frame's source line with its indentation stripped
        if found is None and self.frames and not self.headless and not self.dump and _CUT_CLASS.match(body):
            self.cut = True  # (the next line tells)
            return True
        self.ended = True
        if found is None and self.frames and (ending := _ENDING_EXCEPTION.match(body.strip())) \
                and ("." in ending["type"] or ending["msg"] is not None):  # (a shell's ``Killed`` alone is no class)
            found = (ending["type"], ending["msg"] or "")
        if found and not found[1] and found[0].endswith("AssertionError") and self.sources \
                and self.sources[-1].startswith("assert "):
            # a bare assertion says what failed in its source line only (``assert num_gpu <= get_num_devices()``)
            found = (found[0], self.sources[-1])
        # (not the launcher's own traceback; a headless one's exception is read by ``headless``; a dump raises none)
        if found and not found[0].endswith("ChildFailedError") and not self.headless and not self.dump:
            self.events = _exception_events(line, found[0], found[1], self.frames, self.sources)
            told = _DCP_RANK.search(self.head.body)
            if told is not None:  # a failed rank's traceback in a distributed checkpoint's report: that rank's error
                self.events = [replace(e, origin=Origin(rank=int(told["rank"])), data={
                    **e.data, "reported_by": e.origin.rank}) for e in self.events]
        return False

    def finish(self) -> list[Event]:
        if self.dump:
            return [self._stood(self.dump, thread="")] if self.frames else []
        if not self.ended and not self.events and self.frames:
            # the paste stops inside the traceback, before its exception line: not an error that can be told,
            # but where the process stood, like a stack dump (a collective it waited in, a helper it was in)
            stood = self._stood("traceback-cut", sources=self.sources[-40:])
            raised = _RAISED.match(self.sources[-1]) if self.sources and not self.headless else None
            if raised is None and self.sources and _ASSERT_STATEMENT.match(self.sources[-1]):
                # the paste ends on an assert statement (the AssertionError's line cut away): the assertion failed,
                # its statement says what
                cut = replace(self.head, body=f"AssertionError: {self.sources[-1]}")
                return [stood, *_exception_events(cut, "AssertionError", self.sources[-1], self.frames, self.sources)]
            if raised is not None:
                # the paste ends on the statement that raised (``raise RuntimeError(f'Internal error: shared memory
                # pref``): that exception, its message as far as the literal goes, is the error
                message = raised["msg"] or ""
                if raised["q"] and raised["q"] in message:
                    message = message[:message.index(raised["q"])]
                cut = replace(self.head, body=f"{raised['type']}: {message}")
                return [stood, *_exception_events(cut, raised["type"], message, self.frames, self.sources)]
            if not self.headless:
                return [stood]  # (the ``Traceback`` line is the error line: the generic parser's)
            return [make_event(Kind.ERROR_LINE, self.head, data={
                "word": "Traceback", "message": f"a traceback without its first line: {self.head.body.strip()[:240]}",
                "headless": True}), stood]
        return self.events

    def _stood(self, source: str, **extra: object) -> Event:
        """Where the process stood by its frames (no exception told): a ``stack_dump``."""
        data = _exception_events(self.head, "", "", self.frames)[0].data
        collective = data.get("collective")
        return make_event(Kind.STACK_DUMP, self.head, op=normalize_op(str(collective)) if collective else None,
                          data={"source": source, "collective": collective, "backward": False,
                                "where": data.get("call_site") or data.get("where"),
                                "launcher": bool(data.get("launcher")),
                                "frames": [text for _, text in self.frames[-40:]], **extra})


# the start of an exception's class name, all a paste kept of its line (``Ru``, ``RuntimeErr``); and c10's backtrace
# line (``frame #23: _PyEval_EvalFrameDefault + 0x13b3 (0x4eecf3 in …/python)``)
_CUT_CLASS = re.compile(r"^(?:[a-z_]\w{0,30}\.){0,6}[A-Z][a-z]{0,12}(?:[A-Z][a-z]{0,12}){0,3}\s*$")
_CPP_FRAME = re.compile(r"^\s*frame #\d{1,3}: ")


def wants_frames(event: Event) -> bool:
    """An exception line read without its traceback's frames: the lines above it may hold them."""
    return event.kind is Kind.EXCEPTION and not event.data.get("frames")


def headless(line: Line, above: list[str], *, cut: bool = False) -> list[Event]:
    """An exception line under frames whose ``Traceback (most recent call last):`` is not in the paste (the
    bottom of a traceback pasted alone): the exception with those frames. ``above`` holds the bodies of the same
    writer's lines above it, nearest first; nothing when the header is among the frames (the traceback's follower
    read them) or no frame is right above it. With ``cut``, the line may be the exception's class name cut short
    (:func:`cut_exception`)."""
    found = _exception_line(line.body) or (cut_exception(line.body) if cut else None)
    if found is None or found[0].endswith("ChildFailedError"):
        return []
    bodies: list[str] = []
    for at, body in enumerate(above):
        if "Traceback (most recent call last)" in body:
            return []
        if not body.strip():
            continue  # (a paste that doubled its line breaks: a blank line between each)
        under_frame = at + 1 < len(above) and _FRAME.match(above[at + 1]) is not None  # its source line
        if not (_FRAME.match(body) or under_frame or _under_a_frame(body)):
            break
        bodies.append(body)
    frames = [(m["file"], f"{m['file'].rsplit('/', 1)[-1]}:{m['line']} in {m['func'].strip()}")
              for body in reversed(bodies) if (m := _FRAME.match(body))]
    return _exception_events(line, found[0], found[1], frames) if frames else []


# the headers of a stack printed on purpose (the main thread's only: pytest-timeout prints every thread's)
_PRINTED_STACK = re.compile(r"^\s*~{3,} Stack of MainThread \(\d{1,20}\) ~{3,}\s*$|^\s*Stack \(most recent call last\):\s*$")


def follow(line: Line) -> TracebackFollower | None:
    # also after other text on the line: a progress bar ends with a carriage return, not a newline
    if "Traceback (most recent call last)" in line.body:
        return TracebackFollower(line)
    if "Stack " in line.body and _PRINTED_STACK.match(line.body):
        return TracebackFollower(line, dump="pytest-timeout" if "~" in line.body else "logging")
    if is_frame(line.body):
        # (the reader opens none inside a traceback it follows)
        return TracebackFollower(line, headless=True)
    return None


# an exception's line that the paste cut inside its class's name, all of the line that is left (``AssertionErro``,
# ``RuntimeExcep``), under its traceback's frames: that exception, its message lost (rules read it as such)
_CUT_TYPE = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.){0,8}[A-Z][A-Za-z0-9]{2,40}?)(?P<tail>Err?o?|Exc(?:e(?:p(?:t(?:i(?:o)?)?)?)?)?)"
                       r"\s*$")


def cut_exception(body: str) -> tuple[str, str] | None:
    """(type, "") for a line that is only an exception's class name cut short, its ending restored."""
    cut = _CUT_TYPE.match(body.strip())
    if cut is None:
        return None
    return cut["type"] + ("Error" if cut["tail"].startswith("Er") else "Exception"), ""


def parse(line: Line) -> list[Event]:
    body = line.body
    found = _exception_line(body)
    if found:
        if found[0].endswith("ChildFailedError"):
            return []  # the launcher's summary, read by the torchrun parser
        return _exception_events(line, found[0], found[1], [])
    remote = _REPR_EXCEPTION.match(body) if line.origin.rank is not None and ("('" in body or '("' in body) else None
    if remote:  # a rank's exception as its repr (rpc's remote error, below)
        return _exception_events(line, remote["type"], remote["msg"].replace("\\n", " ")[:300], [])
    unopened = _NO_SCRIPT.search(body)
    if unopened:  # the interpreter could not open the script it was given: that process ends at once (exit code 2)
        return [make_event(Kind.EXCEPTION, line, data={
            "type": "FileNotFoundError" if unopened["errno"] == "2" else "OSError",
            "message": f"can't open file '{unopened['path'][:200]}': {unopened['error'].strip()[:100]}",
            "source": "interpreter"})]
    fatal = _FATAL.search(body)
    if fatal:
        what = fatal["what"].strip()
        signal = next((sig for name, sig in SIGNAL_WORDS.items() if what.startswith(name)), None)
        return [make_event(Kind.FATAL_SIGNAL, line, data={"signal": signal, "what": (fatal["what"] or "").strip()})]
    windows = _WINDOWS_FAULT.search(body) if "fatal exception" in body else None
    signal = windows_signal(windows["what"]) if windows else None
    if signal:  # (a code that no signal stands for, an invalid parameter's, is no end of the process by itself)
        return [make_event(Kind.FATAL_SIGNAL, line, data={"signal": signal, "what": body.strip()[:200],
                                                          "source": "windows"})]
    ompi = _OMPI_SIGNAL.search(body)
    if ompi and (ompi["num"] is None or int(ompi["num"]) in _FATAL_NUMBERS):
        number = int(ompi["num"]) if ompi["num"] else None
        origin = Origin(host=ompi["host"], pid=int(ompi["pid"])) if ompi["host"] else None  # else the prefix's
        return [make_event(Kind.FATAL_SIGNAL, line, origin=origin, data={
            "signal": signal_name(-number) if number else None,
            "what": (ompi["what"] or "a signal (its name is on the next lines)").strip(), "source": "open-mpi"})]
    banner = _BANNER.search(body)
    if banner:
        signal = banner["sig"] or "SIGSEGV"
        what = {"SIGSEGV": "Segmentation fault", "SIGABRT": "Aborted", "SIGBUS": "Bus error",
                "SIGFPE": "Floating point exception", "SIGILL": "Illegal instruction"}[signal]
        pid = int(banner["pid"]) if banner["pid"] else None
        return [make_event(Kind.FATAL_SIGNAL, line, origin=Origin(pid=pid) if pid and line.origin.pid is None else None,
                           data={"signal": signal, "what": what, "source": "abseil" if banner["sig"] else "banner"})]
    asserted = _ASSERTION.search(body)
    if asserted:  # a C assertion that failed aborts its process (glibc's assert, UCX's ucs_assert)
        origin = Origin(host=asserted["host"], pid=int(asserted["pid"])) if asserted["host"] else None
        return [make_event(Kind.FATAL_SIGNAL, line, origin=origin, data={
            "signal": "SIGABRT", "what": f"assertion failed: {asserted['expr'][:120]}", "source": "assertion"})]
    caught = _UCX_SIGNAL.search(body)
    if caught and int(caught["num"]) in _FATAL_NUMBERS:  # a fatal one (handlers also log SIGTERM, SIGHUP)
        origin = Origin(host=caught["host"], pid=int(caught["pid"])) if caught["host"] else None
        return [make_event(Kind.FATAL_SIGNAL, line, origin=origin, data={
            "signal": signal_name(-int(caught["num"])), "what": caught["what"].strip()})]
    if _DRIVER_OOM.search(body):
        return [make_event(Kind.CUDA_OOM, line, data={"tried": None, "gpu": None, "source": "driver"})]
    if "CUDA out of memory" in body or "HIP out of memory" in body:  # HIP: PyTorch on ROCm
        return [make_event(Kind.CUDA_OOM, line, data=oom_data(body))]
    return []
