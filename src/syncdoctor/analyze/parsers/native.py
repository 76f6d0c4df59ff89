"""A native stack's frame inside NCCL's teardown: a process hung while aborting or destroying its communicator.
Pure: no I/O.

A hang at the end of a failed job (or at exit) is pasted as the stuck thread's native stack, often with no error line:
gdb's ``#2  0x00007fc204d345fd in ncclCommAbort () from /usr/lib/libnccl.so.2`` (``thread apply all bt``, ``where``),
lldb's ``frame #3: 0x00007fb090db1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664``, py-spy's
``--native`` frame ``    ncclCommAbort (init.cc:1931)`` or ``    c10d::ProcessGroupNCCL::abort (libtorch_cuda.so)``.
A frame of ``ncclCommAbort``, ``ncclCommDestroy`` (``pncclComm…``, PyTorch's ``NCCLComm::ncclCommAbort``) or PyTorch's
``ProcessGroupNCCL::abort`` (``abortCommsFromMap``) says the thread is inside the teardown: what it waits on is in the
frames above it, the failure that started the abort is elsewhere.

c10's own backtrace under a C++ exception (``frame #3: c10d::ProcessGroupNCCL::abort() + 0x3c (0x7f… in …)``: no
address before the name) is an error's trace, not a hung thread's, and is not read here.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "parse", "teardown_function"]

KEYWORDS = ("ncclCommAbort", "ncclCommDestroy", "ProcessGroupNCCL::abort")

_NAME = r"(?P<func>[A-Za-z_~][\w:~]{0,200})"
_FRAME = re.compile(
    r"^#\d{1,4}\s+(?:0x[0-9a-fA-F]{1,16} in )?" + _NAME + r"\s*\("  # gdb
    r"|^\s*\*?\s*frame #\d{1,4}: 0x[0-9a-fA-F]{1,16} [^`\s]{1,300}`(?P<lfunc>[A-Za-z_~][\w:~]{0,200})"  # lldb
    # py-spy --native (four spaces in; a paste's indentation may be gone): a source line or a library in brackets
    r"|^\s*(?P<pfunc>[A-Za-z_~][\w:~]{0,200}) \([\w./+-]{1,300}?(?::\d{1,7}|\.so[\w.]{0,20})\)\s*$")


def teardown_function(func: str) -> str | None:
    """The teardown call a frame's function is (``ncclCommAbort``, ``ncclCommDestroy``, ``ProcessGroupNCCL::abort``),
    or None."""
    if "ProcessGroupNCCL::abort" in func or func.endswith("abortCommsFromMap"):
        return "ProcessGroupNCCL::abort"
    for name in ("ncclCommAbort", "ncclCommDestroy"):
        if func.endswith(name):
            return name
    return None


def parse(line: Line) -> list[Event]:
    match = _FRAME.match(line.body)
    if match is None:
        return []
    func = match["func"] or match["lfunc"] or match["pfunc"]
    call = teardown_function(func)
    if call is None:
        return []
    return [make_event(Kind.NCCL_TEARDOWN_FRAME, line, data={"function": call, "frame": func})]
