"""The watcher's threads lower their own scheduling priority, and only their own."""

from __future__ import annotations

import os
import threading

import pytest

from syncdoctor.errors import UsageError
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.priority import lower_thread_priority


def _in_thread(increment: int) -> tuple[int | None, int, int]:
    result: list = []

    def body() -> None:
        before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        got = lower_thread_priority(increment)
        result.extend([got, before, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())])

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return result[0], result[1], result[2]


def test_only_the_calling_thread_is_lowered_and_capped_at_19() -> None:
    main_before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    got, before, after = _in_thread(10)
    assert after == min(19, before + 10) and got == after
    got, before, after = _in_thread(50)
    assert after == 19 and got == 19
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main_before


def test_a_thread_started_by_a_lowered_thread_is_not_lowered_twice() -> None:
    main = os.getpriority(os.PRIO_PROCESS, os.getpid())
    seen: list = []

    def child() -> None:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))  # inherited
        lower_thread_priority(10)
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    def parent() -> None:
        lower_thread_priority(10)
        thread = threading.Thread(target=child)
        thread.start()
        thread.join()

    thread = threading.Thread(target=parent)
    thread.start()
    thread.join()
    assert seen == [min(19, main + 10)] * 2


def test_zero_changes_nothing() -> None:
    got, before, after = _in_thread(0)
    assert got is None and after == before


def test_nice_setting_from_the_environment_and_its_range() -> None:
    assert WatchConfig().nice == 0
    assert WatchConfig.load({"SYNCDOCTOR_WATCH_NICE": "10"}).nice == 10
    with pytest.raises(UsageError, match=r"SYNCDOCTOR_WATCH_NICE='25': must be in 0\.\.19"):
        WatchConfig.load({"SYNCDOCTOR_WATCH_NICE": "25"})
    with pytest.raises(UsageError, match="SYNCDOCTOR_WATCH_NICE"):
        WatchConfig.load({"SYNCDOCTOR_WATCH_NICE": "low"})
