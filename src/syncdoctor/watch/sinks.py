"""Where events go: log lines (one rank), a JSONL file, the job's store (for ``syncdoctor watch``).

Does I/O (logging, files, store). A sink never raises: a failing sink logs once and keeps quiet.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from syncdoctor.redact import redact_json, redact_text
from syncdoctor.watch.events import Event
from syncdoctor.watch.keys import JobKeys, ScopedStore

__all__ = ["CallbackSink", "JsonlSink", "LogSink", "Sink", "StoreSink", "read_store_events"]

logger = logging.getLogger("syncdoctor.watch")
_MAX_STORE_EVENTS = 1000


class Sink(Protocol):
    def emit(self, event: Event) -> None: ...


class LogSink:
    """One structured line per event on the ``syncdoctor.watch`` logger: ERROR when confirmed, else WARNING."""

    def emit(self, event: Event) -> None:
        level = logging.ERROR if event.status == "confirmed" else logging.WARNING
        logger.log(level, "%s", redact_text(event.line()))


class JsonlSink:
    """Appends ``event.to_json()`` as one line to a file (created with its directory): the event file of
    :data:`~syncdoctor.watch.events.SCHEMA`, read back line by line with :meth:`Event.from_json`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._failed = False

    def emit(self, event: Event) -> None:
        line = json.dumps(redact_json(event.to_json()), separators=(",", ":"), sort_keys=True)
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
            except OSError as exc:
                if not self._failed:
                    self._failed = True
                    logger.warning("syncdoctor.watch: cannot write events to %s: %s", self.path, exc)


class StoreSink:
    """Publishes events in the job's store as ``events/<n>`` so that ``syncdoctor watch`` shows them."""

    def __init__(self, store: ScopedStore, keys: JobKeys) -> None:
        self.store = store
        self.keys = keys
        self._count = 0
        self._failed = False

    def emit(self, event: Event) -> None:
        if self._count >= _MAX_STORE_EVENTS:
            return
        try:
            index = self.store.add(self.keys.events + "/count", 1)
            self.store.set(f"{self.keys.events}/{index}", json.dumps(redact_json(event.to_json()), separators=(",", ":")))
            self._count += 1
        except Exception as exc:  # the store may be gone with the job
            if not self._failed:
                self._failed = True
                logger.debug("syncdoctor.watch: cannot publish event in the store: %s", exc)


class CallbackSink:
    def __init__(self, callback: Callable[[Event], None]) -> None:
        self.callback = callback

    def emit(self, event: Event) -> None:
        try:
            self.callback(event)
        except Exception:
            logger.exception("syncdoctor.watch: event callback failed")


def read_store_events(store: ScopedStore, keys: JobKeys, after: int) -> tuple[int, list[dict[str, object]]]:
    """Events published by a monitor with index > ``after``: (last index, events as JSON objects)."""
    count = store.add(keys.events + "/count", 0)
    if count <= after:
        return after, []
    raws = store.multi_get([f"{keys.events}/{i}" for i in range(after + 1, count + 1)])
    out = []
    for raw in raws:
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if isinstance(data, dict):
            out.append(data)
    return count, out
