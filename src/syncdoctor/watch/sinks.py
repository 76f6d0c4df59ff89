"""Where events go: log lines (one rank), a JSONL file, the job's store (for ``syncdoctor watch``), the node
history (:mod:`syncdoctor.history`: the suspect nodes of events).

Does I/O (logging, files, store, the history database). A sink never raises: a failing sink logs once and
keeps quiet.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from syncdoctor.exclude import Suspect
from syncdoctor.redact import redact_json, redact_text
from syncdoctor.watch.events import Event
from syncdoctor.watch.keys import JobKeys, ScopedStore

__all__ = ["CallbackSink", "HistorySink", "JsonlSink", "LogSink", "Sink", "StoreSink", "close_sinks", "job_run_id",
           "read_store_events"]

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


_JOB_IDS = ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", "LSB_JOBID",
            "PBS_JOBID", "JOB_ID")


def job_run_id(env: Mapping[str, str], attempt: int, fallback: str) -> str:
    """The run of a watched job in the node history: the scheduler's or launcher's job id and the restart
    attempt (``watch:slurm_job_id=123:attempt0``); ``fallback`` (the monitor's host, pid and start) without one
    (torchrun's static rendezvous has run id ``none``)."""
    for name in _JOB_IDS:
        value = env.get(name, "").strip()
        if value and value.lower() != "none":
            return f"watch:{name.lower()}={value}:attempt{attempt}"
    return f"watch:{fallback}:attempt{attempt}"


class HistorySink:
    """Records the suspect nodes of events (a host cut off, a chronic straggler's host) in the node history,
    once per node and code per run, from its own daemon thread: a slow or locked database (a shared file
    system, another writer) never delays the monitor. Bounded: at most ``max_pending`` writes waiting and
    ``max_nodes`` (node, code) pairs remembered; beyond them, new ones are dropped (logged once).
    :meth:`close` waits a little for the pending writes (the watcher's stop)."""

    def __init__(self, path: str | Path, run: str, *, max_pending: int = 64, max_nodes: int = 10_000,
                 busy_timeout_s: float = 2.0) -> None:
        from syncdoctor.history import History

        self.history = History(Path(path), busy_timeout_s=busy_timeout_s)
        self.run = run
        self.max_nodes = max_nodes
        self._recorded: set[tuple[str, str]] = set()
        self._pending: queue.Queue[tuple[list[Suspect], str, float] | None] = queue.Queue(maxsize=max_pending)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._warned = False
        self.written = 0

    def emit(self, event: Event) -> None:
        try:
            fresh = [s for s in event.suspect_nodes if (s.node, s.code) not in self._recorded]
            if not fresh or len(self._recorded) + len(fresh) > self.max_nodes:
                return
            self._pending.put_nowait((fresh, event.title, event.at or time.time()))
            self._recorded.update((s.node, s.code) for s in fresh)
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="syncdoctor-watch-history", daemon=True)
                    self._thread.start()
        except queue.Full:
            self._warn("too many writes waiting; an incident was not recorded")
        except Exception as exc:  # never fail the monitor for the history
            self._warn(f"{type(exc).__name__}: {exc}")

    def close(self, timeout: float = 2.0) -> None:
        with self._lock:
            thread = self._thread
        if thread is None:
            return
        try:
            self._pending.put(None, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)

    def _run(self) -> None:
        from syncdoctor.history import HistoryError

        while True:
            item = self._pending.get()
            if item is None:
                return
            suspects, title, at = item
            try:
                self.written += self.history.record(self.run, "watch", suspects, summary=redact_text(title), at=at)
            except HistoryError as exc:
                self._warn(str(exc))
            except Exception as exc:
                self._warn(f"{type(exc).__name__}: {exc}")

    def _warn(self, text: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("syncdoctor.watch: node history: %s", text)


def close_sinks(sinks: Iterable[Sink], timeout: float = 2.0) -> None:
    """Let the sinks that write from their own thread (the node history) finish their pending writes."""
    for sink in sinks:
        close = getattr(sink, "close", None)
        if callable(close):
            close(timeout)


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
