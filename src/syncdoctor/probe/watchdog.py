"""A watchdog thread for the probe's stages: the last resort when a backend ignores its own timeout.

Does no I/O itself; it calls the function it was given when an armed deadline passes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["StageWatchdog"]


class StageWatchdog:
    """A thread that calls ``on_expire(stage)`` when a stage runs past its deadline (the last resort when a
    backend ignores its timeout). ``start`` / ``arm`` / ``disarm`` / ``stop`` / ``join``."""

    def __init__(self, on_expire: Callable[[str], None]) -> None:
        self._on_expire = on_expire
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._stage = ""
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="syncdoctor-probe-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def arm(self, stage: str, seconds: float) -> None:
        with self._cond:
            self._stage, self._deadline = stage, time.monotonic() + seconds
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def join(self, timeout: float | None = None) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                stage, self._deadline = self._stage, None
                self._cond.release()
                try:
                    self._on_expire(stage)
                finally:
                    self._cond.acquire()
