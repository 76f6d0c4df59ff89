"""Native stacks of a late rank stuck in a call into C++: the pure parts (ptrace permission, py-spy's JSON,
the call detection on real frames, the stack document), py-spy against this very process, and a real
2-rank gloo job whose late rank sleeps in C: its W101 event carries the native frames."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from syncdoctor.watch import native
from syncdoctor.watch.local import capture_stack, in_native_call
from syncdoctor.watch.stacks import NATIVE_PENDING, Frame, StackReport, decode_stack, encode_stack

DUMP = [  # the shape of `py-spy dump --native --json` 0.4 (trimmed)
    {"pid": 7, "thread_id": 1, "thread_name": "worker", "os_thread_id": 9, "frames": [
        {"name": "poll", "short_filename": "libc.so.6", "line": 0}]},
    {"pid": 7, "thread_id": 2, "thread_name": "MainThread", "os_thread_id": 7, "frames": [
        {"name": "clock_nanosleep", "filename": "/usr/lib/x86_64-linux-gnu/libc.so.6",
         "short_filename": "libc.so.6", "line": 0},
        {"name": "time_sleep", "short_filename": "libpython3.11.so.1.0", "line": 0},
        {"name": "load_batch", "short_filename": "train.py", "line": 42}, "not a frame"]},
]


def test_ptrace_permission() -> None:
    assert native.ptrace_problem(None, False) is None  # no Yama
    assert native.ptrace_problem(0, False) is None and native.ptrace_problem(1, False) is None  # 1: prctl
    assert native.ptrace_problem(2, True) is None
    assert "CAP_SYS_PTRACE" in (native.ptrace_problem(2, False) or "")
    assert "ptrace_scope is 3" in (native.ptrace_problem(3, True) or "")


def test_parse_the_dump() -> None:
    assert native.parse_dump(DUMP) == ("clock_nanosleep (libc.so.6)", "time_sleep (libpython3.11.so.1.0)",
                                      "load_batch (train.py:42)")
    assert native.parse_dump(DUMP, thread_id=9) == ("poll (libc.so.6)",)
    assert native.parse_dump({"not": "a list"}) == () and native.parse_dump([{"frames": "x"}]) == ()
    assert native.summary(native.parse_dump(DUMP), 2) == "clock_nanosleep (libc.so.6) < time_sleep (libpython3.11.so.1.0)"


def _frame_of_main_while(work) -> tuple[bool, StackReport]:
    """Run ``work`` on this thread while another thread looks at it half-way."""
    seen: dict[str, object] = {}
    me = threading.get_ident()

    def look() -> None:
        time.sleep(0.15)
        seen["in"] = in_native_call(sys._current_frames()[me])
        seen["report"] = capture_stack(0, 1, me)

    looker = threading.Thread(target=look)
    looker.start()
    work()
    looker.join()
    return bool(seen["in"]), seen["report"]  # type: ignore[return-value]


def _nap(seconds: float) -> None:
    time.sleep(seconds)


def test_a_call_into_c_is_told_from_python_code() -> None:
    inside, report = _frame_of_main_while(lambda: time.sleep(0.4))
    assert inside and report.in_native

    def warmed() -> None:  # a call site run often enough for the interpreter to specialise it
        for _ in range(200):
            _nap(0)
        _nap(0.4)

    assert _frame_of_main_while(warmed)[0]

    def spin() -> None:
        go = True

        def stop() -> None:
            nonlocal go
            time.sleep(0.4)
            go = False

        threading.Thread(target=stop).start()
        while go:  # bytecode only: LOAD_DEREF, a jump
            pass

    assert [_frame_of_main_while(spin)[0] for _ in range(3)] == [False, False, False]


def test_the_stack_document_carries_the_native_part() -> None:
    report = StackReport(3, 5, (Frame("t.py", 1, "f"),), Frame("t.py", 1, "f"), "", 1.0, (), in_native=True,
                         native=("clock_nanosleep (libc.so.6)",), native_note="")
    assert decode_stack(encode_stack(report)) == report
    pending = StackReport(3, 5, in_native=True, native_note=NATIVE_PENDING)
    assert decode_stack(encode_stack(pending)).native_pending  # type: ignore[union-attr]
    old = b'{"r":1,"gen":2,"f":[["a.py",3,"g"]],"w":null,"note":"","t":1.0,"c":[]}'  # before native stacks
    assert decode_stack(old) == StackReport(1, 2, (Frame("a.py", 3, "g"),), None, "", 1.0, ())


def test_where_py_spy_is_looked_for(tmp_path: Path) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    assert native.find_pyspy({"PATH": str(tmp_path)}, str(python)) is None
    tool = python.with_name("py-spy")
    tool.write_text("#!/bin/sh\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    assert native.find_pyspy({"PATH": ""}, str(python)) == str(tool)


def test_what_is_said_when_it_cannot(tmp_path: Path) -> None:
    frames, note = native.capture(os.getpid(), None, pyspy=str(tmp_path / "missing" / "py-spy"))
    assert frames == () and note.startswith("cannot start py-spy")
    failing = tmp_path / "py-spy"
    failing.write_text("#!/bin/sh\necho 'Error: Permission denied (os error 1)' >&2\nexit 1\n")
    failing.chmod(0o755)
    frames, note = native.capture(os.getpid(), None, pyspy=str(failing))
    assert frames == () and note.startswith("no ptrace permission: Error: Permission denied")
    slow = tmp_path / "slow-py-spy"
    slow.write_text("#!/bin/sh\nexec sleep 5\n")  # exec: the process killed at the timeout is the sleep itself
    slow.chmod(0o755)
    assert native.capture(os.getpid(), None, timeout_s=0.5, pyspy=str(slow)) == ((), "py-spy did not finish within 0.5 s")


needs_pyspy = pytest.mark.skipif(native.find_pyspy() is None, reason="py-spy is a test extra: make test installs it")


@needs_pyspy
def test_py_spy_takes_this_process_native_stack() -> None:
    result: dict[str, object] = {}

    def take() -> None:
        time.sleep(0.3)
        result["got"] = native.capture(os.getpid(), threading.main_thread().native_id)

    taker = threading.Thread(target=take)
    taker.start()
    deadline = time.monotonic() + 30
    while taker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.5)  # py-spy sees this thread in clock_nanosleep (no longer than the capture takes)
    taker.join(30)
    frames, note = result["got"]  # type: ignore[misc]
    assert note == "", note
    assert any("nanosleep" in f for f in frames) and any("test_py_spy_takes" in f for f in frames), frames


@needs_pyspy
@pytest.mark.slow
def test_late_rank_in_c_has_its_native_stack_in_the_event(tmp_path: Path) -> None:
    from test_watch_local import _events, _run

    plan = {"steps": 12, "late_rank": 1, "late_step": 8, "late_seconds": 9,
            "watch": {"warn_after_s": 3.0, "confirm_after_s": 6.0, "suspect_after_s": 1.0}}
    codes, outputs, _ = _run(tmp_path, 2, plan)
    assert codes == [0, 0], outputs
    late = [e for e in _events(tmp_path) if e["code"] == "W101" and e["ranks"] == [1] and e["status"] != "resolved"]
    assert [e["status"] for e in late] == ["warning", "confirmed"], _events(tmp_path)
    info = late[-1]["detail"]["late"]["1"]
    print("native stack:", info.get("native_stack"), info.get("native_note"))
    assert "load_batch" in info["where"], info
    native_frames = info.get("native_stack") or []
    assert any("nanosleep" in frame for frame in native_frames), info
    assert any("load_batch" in frame for frame in native_frames), info  # py-spy merges the Python frames in


def test_watch_stacks_option_prints_both_stacks() -> None:
    from syncdoctor.cli.main import build_parser
    from syncdoctor.cli.watch import _event_text

    assert build_parser().parse_args(["watch", "--master", "h:1", "--stacks"]).stacks is True
    event = {"code": "W101", "kind": "late-rank", "status": "confirmed", "title": "rank 1 is late",
             "detail": {"late": {"1": {"stack": ["<module> (w.py:9)", "load_batch (w.py:3)"],
                                       "native_stack": ["clock_nanosleep (libc.so.6)", "time_sleep (libpython3.11.so)"]},
                                 "2": {"stack_note": "stack not captured", "native_note": "py-spy is not installed"}}}}
    assert _event_text(event).plain == "W101 late-rank confirmed: rank 1 is late"
    assert _event_text(event, stacks=True).plain.splitlines() == [
        "W101 late-rank confirmed: rank 1 is late",
        "  rank 1 Python stack (innermost last):", "    <module> (w.py:9)", "    load_batch (w.py:3)",
        "  rank 1 native stack (innermost first):", "    clock_nanosleep (libc.so.6)",
        "    time_sleep (libpython3.11.so)",
        "  rank 2 stack: stack not captured", "  rank 2 native stack: py-spy is not installed"]
    assert _event_text({"code": "W105", "detail": None}, stacks=True).plain.startswith("W105")
