"""The node history (SQLite): records across runs, many writers at once, a locked or corrupt database, and
``syncdoctor nodes`` listing the repeat offenders."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from syncdoctor.exclude import Suspect
from syncdoctor.history import RETENTION_S, History, HistoryError, parse_since, resolve_path

LAB = Path(__file__).parent / "fixtures" / "analyze" / "lab"


def _suspect(node: str, code: str = "A005") -> Suspect:
    return Suspect(node, code, "lost its network", 0.75)


def test_record_and_list_by_incidents(tmp_path: Path) -> None:
    history = History(tmp_path / "h.sqlite3")
    now = time.time()
    assert history.record("run1", "analyze", [_suspect("node07"), _suspect("node03", "A012")], at=now - 3600) == 2
    assert history.record("run2", "probe", [_suspect("node07", "P020")], at=now - 60) == 1
    assert history.record("run2", "probe", [_suspect("node07", "P020")], at=now) == 0  # the same run again
    rows = history.nodes(now=now)
    assert [(r.node, r.incidents, r.runs, dict(r.codes)) for r in rows] == [
        ("node07", 2, 2, {"A005": 1, "P020": 1}), ("node03", 1, 1, {"A012": 1})]
    assert [r.node for r in history.nodes(since_s=600, now=now)] == ["node07"]


def test_old_incidents_go(tmp_path: Path) -> None:
    history = History(tmp_path / "h.sqlite3")
    now = time.time()
    history.record("old", "analyze", [_suspect("node01")], at=now - RETENTION_S - 10)
    history.record("new", "analyze", [_suspect("node02")], at=now)
    assert [r.node for r in history.nodes(now=now)] == ["node02"]


_WRITER = """
import sys
from syncdoctor.exclude import Suspect
from syncdoctor.history import History
history = History(sys.argv[1])
for i in range(int(sys.argv[3])):
    history.record(f"{sys.argv[2]}-{i}", "analyze", [Suspect(f"node{i % 5}", "A005", "r", 0.8)])
"""


def test_many_writers_at_once_lose_no_record(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    writers, each = 8, 25
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"w{w}", str(each)], stderr=subprocess.PIPE,
                              text=True) for w in range(writers)]
    try:
        for proc in procs:
            _out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
    finally:  # (a failed writer leaves no others running into the next test)
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM incidents").fetchone()[0] == writers * each
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = History(path).nodes()
    assert sum(r.incidents for r in rows) == writers * each and {r.node for r in rows} == {f"node{i}" for i in range(5)}


def test_a_lock_released_within_the_timeout_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    History(path).record("a", "analyze", [_suspect("node1")])
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.3, lambda: holder.execute("ROLLBACK"))
    release.start()
    try:
        assert History(path, busy_timeout_s=5.0).record("b", "analyze", [_suspect("node2")]) == 1
    finally:
        release.join()
        holder.close()


def test_a_lock_refused_at_once_is_tried_again_until_the_timeout(tmp_path: Path, monkeypatch) -> None:
    """Some of SQLite's refusals come at once whatever its busy timeout (a stale snapshot, a WAL being
    recovered): the attempt is made again, and only past the timeout is the database reported locked."""
    path = tmp_path / "h.sqlite3"
    real = History._attempt
    refusals = [2]  # the next attempts refused at once
    monkeypatch.setattr(History, "_attempt", lambda self, work, timeout_s: real(
        self, lambda db: _refuse_or(db, work, refusals), timeout_s))
    assert History(path, busy_timeout_s=5.0).record("a", "analyze", [_suspect("node1")]) == 1 and refusals == [0]
    refusals[0] = 10**6  # refused every time: reported past the timeout, not a hang
    started = time.monotonic()
    with pytest.raises(HistoryError, match="locked by another writer"):
        History(path, busy_timeout_s=0.3).record("b", "analyze", [_suspect("node2")])
    assert time.monotonic() - started < 3.0


def _refuse_or(db, work, refusals: list[int]):
    if refusals[0]:
        refusals[0] -= 1
        raise sqlite3.OperationalError("database is locked")
    return work(db)


def test_a_locked_database_is_an_error_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    History(path).record("a", "analyze", [_suspect("node1")])
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HistoryError, match="locked by another writer"):
            History(path, busy_timeout_s=0.2).record("b", "analyze", [_suspect("node2")])
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_analyze_records_and_warns_on_a_corrupt_history(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    for fixture in ("cut", "cut-shutdown-race", "otherop"):
        result = run_cli("analyze", str(LAB / fixture), "--history", str(path))
        assert result.code == 0 and "warning" not in result.out, result.out
    assert run_cli("analyze", str(LAB / "cut"), "--history", str(path)).code == 0  # the same logs again
    listed = run_cli("nodes", "--history", str(path), "--json")
    assert listed.code == 0, listed.out
    rows = json.loads(listed.out)["nodes"]
    assert [(r["node"], r["incidents"], r["codes"]) for r in rows] == [("host2", 2, {"A005": 2})]  # no desync node
    out = tmp_path / "exclude.txt"
    offenders = run_cli("nodes", "--history", str(path), "--min-incidents", "2", "--exclude-out", str(out))
    assert offenders.code == 0 and out.read_text() == "host2\n", offenders.out
    assert "host2" in offenders.out and "A005 x2" in offenders.out

    corrupt = tmp_path / "corrupt.sqlite3"
    corrupt.write_bytes(b"this is not a database" * 100)
    result = run_cli("analyze", str(LAB / "cut"), "--history", str(corrupt))
    assert result.code == 0 and "Root cause: host host2 lost the network" in result.out
    assert "warning: node history" in result.out and "not a usable database" in result.out
    assert run_cli("nodes", "--history", str(corrupt)).code == 3


def test_where_the_history_lives() -> None:
    assert resolve_path(None, False, {"XDG_DATA_HOME": "/data"}) == Path("/data/syncdoctor/history.sqlite3")
    assert resolve_path(None, False, {"HOME": "/home/u"}) == Path("/home/u/.local/share/syncdoctor/history.sqlite3")
    assert resolve_path(None, False, {"SYNCDOCTOR_HISTORY": "/x/h.db"}) == Path("/x/h.db")
    assert resolve_path("/y/h.db", False, {"SYNCDOCTOR_HISTORY": "/x/h.db"}) == Path("/y/h.db")
    assert resolve_path(None, False, {"SYNCDOCTOR_HISTORY": "off"}) is None
    assert resolve_path("/y/h.db", True, {}) is None
    assert parse_since("7d") == 7 * 86400 and parse_since("90") == 90
    with pytest.raises(ValueError):
        parse_since("soon")


def test_watch_run_ids_follow_the_scheduler() -> None:
    from syncdoctor.watch.sinks import job_run_id

    assert job_run_id({"SLURM_JOB_ID": "812", "TORCHELASTIC_RUN_ID": "x"}, 1, "h:1:2") == "watch:slurm_job_id=812:attempt1"
    assert job_run_id({"TORCHELASTIC_RUN_ID": "none"}, 0, "h:1:2") == "watch:h:1:2:attempt0"  # static rendezvous
    assert job_run_id({"TORCHELASTIC_RUN_ID": "ft-7"}, 2, "h") == "watch:torchelastic_run_id=ft-7:attempt2"


def test_watch_monitor_records_suspects_once_per_node_off_its_own_thread(tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    from syncdoctor.watch.events import Event
    from syncdoctor.watch.sinks import HistorySink

    sink = HistorySink(tmp_path / "h.sqlite3", "watch:job1:attempt0")
    cut = Event("W106", "warning", "host n2 cut", ranks=(2, 3), hosts=("n2 (node 1)",), at=time.time())
    sink.emit(Event("W101", "confirmed", "rank 1 late", ranks=(1,), hosts=("n1",)))  # rank-level: nothing
    sink.emit(cut)
    sink.emit(Event("W106", "confirmed", "host n2 cut", ranks=(2, 3), hosts=("n2 (node 1)",)))  # the same incident
    sink.emit(Event("W107", "warning", "rank 5 last", ranks=(5,), hosts=("n5",)))
    sink.close()
    assert sink.written == 2
    rows = History(tmp_path / "h.sqlite3").nodes()
    assert sorted((r.node, dict(r.codes)) for r in rows) == [("n2", {"W106": 1}), ("n5", {"W107": 1})]
    # a database another writer holds: the monitor's emit returns at once, one warning, nothing raised
    locked_path = tmp_path / "locked.sqlite3"
    History(locked_path).record("r", "analyze", [_suspect("x")])
    holder = sqlite3.connect(locked_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        blocked = HistorySink(locked_path, "watch:job2:attempt0", busy_timeout_s=0.2)
        start = time.monotonic()
        blocked.emit(cut)
        assert time.monotonic() - start < 0.1
        blocked.close(timeout=5.0)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert blocked.written == 0
    assert [r.message for r in caplog.records].count(
        f"syncdoctor.watch: node history: node history {locked_path}: locked by another writer "
        "(nothing recorded or read)") == 1


def test_watch_monitor_sinks_follow_the_history_setting(tmp_path: Path) -> None:
    from syncdoctor.watch.config import WatchConfig
    from syncdoctor.watch.keys import JobKeys
    from syncdoctor.watch.monitor import monitor_sinks
    from syncdoctor.watch.sinks import HistorySink

    keys = JobKeys("syncdoctor/watch", 3)
    on = monitor_sinks(WatchConfig(), None, keys, 0, env={"SYNCDOCTOR_HISTORY": str(tmp_path / "h.db"),
                                                           "SLURM_JOB_ID": "9"})
    (history,) = [s for s in on if isinstance(s, HistorySink)]
    assert history.history.path == tmp_path / "h.db" and history.run == "watch:slurm_job_id=9:attempt3"
    off = monitor_sinks(WatchConfig(), None, keys, 0, env={"SYNCDOCTOR_HISTORY": "off"})
    assert not [s for s in off if isinstance(s, HistorySink)]
