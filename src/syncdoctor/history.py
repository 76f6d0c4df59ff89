"""The node history: every suspect node of every verdict, across runs, in an embedded SQLite database.

A node named once is a hint; a node named in 3 of the last 10 runs is a hardware suspect that no single run
reveals. ``analyze``, ``probe`` and the watch monitor (:class:`syncdoctor.watch.sinks.HistorySink`) record their
suspects (:mod:`syncdoctor.exclude`) here; ``syncdoctor nodes`` lists nodes by incidents. Where: ``--history PATH``, else ``SYNCDOCTOR_HISTORY``, else
``$XDG_DATA_HOME/syncdoctor/history.sqlite3`` (``~/.local/share/...``); ``--no-history`` or
``SYNCDOCTOR_HISTORY=off`` records nothing.

Safe with many writers (the ranks of several jobs on a shared file system, or one host's commands): WAL
journal, a busy timeout, one short transaction per verdict. Bounded: rows older than the retention (180 days)
and beyond the newest 100 000 are deleted as new ones come. A locked or corrupt database never stops a
diagnosis: :class:`HistoryError` says what happened, and the callers print it as one warning.

Does I/O: the database file.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from syncdoctor.errors import SyncdoctorError
from syncdoctor.exclude import Suspect

__all__ = ["ENV", "History", "HistoryError", "NodeStats", "default_path", "parse_since", "resolve_path"]

ENV = "SYNCDOCTOR_HISTORY"
RETENTION_S = 180 * 86400.0
MAX_ROWS = 100_000
BUSY_TIMEOUT_S = 10.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS incidents (
    id INTEGER PRIMARY KEY,
    run TEXT NOT NULL,
    at REAL NOT NULL,
    node TEXT NOT NULL,
    code TEXT NOT NULL,
    confidence REAL NOT NULL,
    source TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS incidents_node_at ON incidents (node, at);
CREATE INDEX IF NOT EXISTS incidents_at ON incidents (at);
"""


class HistoryError(SyncdoctorError):
    """The history cannot be read or written (locked past the timeout, corrupt, not writable)."""


class _Locked(Exception):
    """One attempt found the database locked (tried again until the timeout)."""


_T = TypeVar("_T")


def default_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return Path(base) / "syncdoctor" / "history.sqlite3"


def resolve_path(option: str | None, disabled: bool, env: Mapping[str, str] | None = None) -> Path | None:
    """The database to use: ``--history``, ``SYNCDOCTOR_HISTORY``, the default; None when switched off."""
    env = os.environ if env is None else env
    if disabled:
        return None
    if option:
        return Path(option)
    value = env.get(ENV, "").strip()
    if value.lower() in ("off", "0", "no", "none"):
        return None
    return Path(value) if value else default_path(env)


def parse_since(text: str) -> float:
    """``7d``, ``12h``, ``30m``, ``90s`` or a number of seconds -> seconds. Raises ValueError."""
    text = text.strip().lower()
    units = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
    factor = units.get(text[-1:], None)
    number = float(text[:-1] if factor is not None else text)
    if not number >= 0 or number == float("inf"):
        raise ValueError(text)
    return number * (factor or 1.0)


@dataclass(frozen=True)
class NodeStats:
    """One node's incidents in the window: how many, in how many runs, by code, and when last seen."""

    node: str
    incidents: int
    runs: int
    codes: Mapping[str, int]
    last_seen: float

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "incidents": self.incidents, "runs": self.runs, "codes": dict(self.codes),
                "last_seen": self.last_seen}


class History:
    """One database; each method opens a short connection (so a process may hold it for long)."""

    def __init__(self, path: Path, busy_timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s

    def _with_db(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """``work`` on a short connection, tried again while the database is locked, until ``busy_timeout_s`` has
        passed in all. SQLite's busy timeout waits for most locks, but a few refusals come at once whatever the
        timeout (a write transaction whose snapshot another writer made stale, the recovery of the WAL after a
        writer died, the first switch of a new file to WAL by several processes at once): those are tried again
        here after a short pause."""
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                return self._attempt(work, max(0.05, deadline - time.monotonic()))
            except _Locked:
                if time.monotonic() >= deadline:
                    raise HistoryError(f"node history {self.path}: locked by another writer (nothing recorded or "
                                       "read)") from None
                time.sleep(random.uniform(0.01, 0.05))

    def _attempt(self, work: Callable[[sqlite3.Connection], _T], timeout_s: float) -> _T:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"node history {self.path}: cannot open it: {exc}") from None
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.executescript(_SCHEMA)
            return work(connection)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise _Locked from None
            raise HistoryError(f"node history {self.path}: {exc} (nothing recorded or read)") from None
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"node history {self.path}: not a usable database ({exc}); move it away to "
                               "start a new one") from None
        finally:
            connection.close()

    def record(self, run: str, source: str, suspects: Sequence[Suspect], summary: str = "",
               at: float | None = None) -> int:
        """Record the suspects of one verdict (one transaction); returns how many rows were written."""
        if not suspects:
            return 0
        now = time.time() if at is None else at
        rows = [(run, now, s.node, s.code, float(s.confidence), source, (summary or s.reason)[:500]) for s in suspects]

        def write(db: sqlite3.Connection) -> int:
            db.execute("BEGIN IMMEDIATE")
            try:
                seen = {(node, code) for node, code in db.execute(
                    "SELECT node, code FROM incidents WHERE run = ?", (run,)).fetchall()}
                new = [row for row in rows if (row[2], row[3]) not in seen]  # the same run analysed again
                db.executemany("INSERT INTO incidents (run, at, node, code, confidence, source, summary) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?)", new)
                db.execute("DELETE FROM incidents WHERE at < ?", (now - RETENTION_S,))
                db.execute("DELETE FROM incidents WHERE id <= (SELECT MAX(id) FROM incidents) - ?", (MAX_ROWS,))
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            return len(new)

        return self._with_db(write)

    def nodes(self, since_s: float | None = None, now: float | None = None) -> list[NodeStats]:
        """Nodes with incidents in the last ``since_s`` seconds (all when None), most incidents first."""
        now = time.time() if now is None else now
        start = now - since_s if since_s is not None else float("-inf")
        rows = self._with_db(lambda db: db.execute(
            "SELECT node, code, run, at FROM incidents WHERE at >= ?", (start,)).fetchall())
        by_node: dict[str, list[tuple[str, str, float]]] = {}
        for node, code, run, at in rows:
            by_node.setdefault(node, []).append((code, run, at))
        stats = []
        for node, items in by_node.items():
            codes: dict[str, int] = {}
            for code, _run, _at in items:
                codes[code] = codes.get(code, 0) + 1
            stats.append(NodeStats(node, len(items), len({run for _c, run, _a in items}), dict(sorted(codes.items())),
                                   max(at for _c, _r, at in items)))
        return sorted(stats, key=lambda s: (-s.incidents, -s.last_seen, s.node))
