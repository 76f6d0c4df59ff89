"""``syncdoctor.watch``: name the late, missing, desynchronised or dead rank while the job runs.

Usage, before or after ``init_process_group`` (zero configuration under torchrun)::

    import syncdoctor.watch
    syncdoctor.watch.start()              # or: with syncdoctor.watch.watching(): ...
    ...
    syncdoctor.watch.step(i)              # optional: optimizer steps are marked automatically

Settings come from arguments or ``SYNCDOCTOR_WATCH_*`` variables (:class:`WatchConfig`). Cheap to import
(no torch until :func:`start`). The pure core (records, detector, events) does no I/O; the runtime
(recorder, publisher, monitor, sinks) does. See docs/watch.md.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from syncdoctor.watch.config import EXIT_HANG, WatchConfig
from syncdoctor.watch.detector import Detection, detect
from syncdoctor.watch.events import CODES, Event
from syncdoctor.watch.snapshot import DetectorState, Snapshot

if TYPE_CHECKING:
    from syncdoctor.watch.runtime import Watcher

__all__ = [
    "CODES",
    "EXIT_HANG",
    "Detection",
    "DetectorState",
    "Event",
    "Snapshot",
    "WatchConfig",
    "current",
    "detect",
    "solo",
    "start",
    "step",
    "stop",
    "watching",
]

_lock = threading.Lock()
_current: Watcher | None = None


def start(config: WatchConfig | None = None, **settings: Any) -> Watcher:
    """Start watching this rank (idempotent: a running watcher is returned as is).

    ``settings`` are :class:`WatchConfig` fields (``warn_after_s=5``...); they override the
    ``SYNCDOCTOR_WATCH_*`` environment, which overrides the defaults. Raises UsageError on bad settings.
    """
    global _current
    from syncdoctor.watch.runtime import Watcher

    with _lock:
        if _current is not None and not _current.stopped:
            return _current
        resolved = config.replace(**settings) if config is not None else WatchConfig.load(**settings)
        _current = Watcher(resolved).start()
        return _current


class solo(contextlib.ContextDecorator):
    """Mark work this rank does alone while the others wait for it, by design: a checkpoint, an evaluation,
    logging, data preparation on rank 0. As a context manager or a decorator::

        with syncdoctor.watch.solo("checkpoint", up_to_s=900):
            torch.save(state, path)

    While the phase lasts, the others' wait for this rank is shown as expected (W110, info), never confirmed
    (fail-fast leaves it alone) for up to ``up_to_s`` seconds (default: the watcher's ``busy_after_s``);
    past that the rank is reported late (W101). Entering and leaving cost a list append and removal on the
    calling thread, no I/O. Without a running watcher it does nothing.
    """

    def __init__(self, name: str, up_to_s: float | None = None) -> None:
        from syncdoctor.errors import UsageError

        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"syncdoctor.watch.solo: name must be a non-empty string, got {name!r}")
        if up_to_s is not None and not (isinstance(up_to_s, (int, float)) and up_to_s > 0):
            raise UsageError(f"syncdoctor.watch.solo: up_to_s must be a number of seconds > 0, got {up_to_s!r}")
        self.name = name.strip()
        self.up_to_s = None if up_to_s is None else float(up_to_s)
        self._tokens: list[tuple[Any, int]] = []

    def __enter__(self) -> solo:
        watcher = _current
        if watcher is not None and not watcher.stopped:
            self._tokens.append((watcher, watcher.enter_solo(self.name, self.up_to_s)))
        else:
            self._tokens.append((None, 0))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tokens:
            watcher, token = self._tokens.pop()
            if watcher is not None:
                watcher.exit_solo(token)


def stop() -> None:
    """Say goodbye and stop the watcher (also done at exit and at ``destroy_process_group``)."""
    watcher = _current
    if watcher is not None:
        watcher.stop()


def step(index: int | None = None) -> None:
    """Mark training step ``index`` (default: the next one). No-op without a running watcher."""
    watcher = _current
    if watcher is not None and not watcher.stopped:
        watcher.step(index)


def current() -> Watcher | None:
    return _current


@contextlib.contextmanager
def watching(config: WatchConfig | None = None, **settings: Any) -> Iterator[Watcher]:
    """``with syncdoctor.watch.watching(): train()``: start, then stop at the end of the block."""
    watcher = start(config, **settings)
    try:
        yield watcher
    finally:
        watcher.stop()
