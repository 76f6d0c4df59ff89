"""``syncdoctor watch`` against a real TCPStore: errors, and a live job simulated by records in the store, on a
fake clock (the simulated job publishes as the command's clock moves on: no test waits in real time)."""

from __future__ import annotations

import datetime
import io
import json
import socket

import pytest
from rich.console import Console

from conftest import CliResult
from syncdoctor.cli.main import build_parser
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.records import GroupProgress, RankRecord, Signature, encode_record

torch_dist = pytest.importorskip("torch.distributed")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def store() -> ScopedStore:
    master = torch_dist.TCPStore("127.0.0.1", 0, None, True, timeout=datetime.timedelta(seconds=10),
                                 wait_for_workers=False)
    return ScopedStore(master)


class FakeJob:
    """Four ranks publishing records into the store every 0.2 s of a fake clock: 0-2 wait in all_reduce #5,
    rank 3 does not. The job is also the clock: :meth:`sleep` moves it on and publishes the beats due."""

    def __init__(self, store: ScopedStore, late: bool = True, source: str = "flight_recorder",
                 monitor: str = "off", dead: int | tuple[int, ...] | None = None) -> None:
        self.store = store
        self.dead = (dead,) if isinstance(dead, int) else dead or ()
        self.source = source
        self.keys = JobKeys("syncdoctor/v1", 0)
        self.late = late
        self.now = self.started = 1000.0
        self.beat = 0
        store.set(self.keys.pointer, "0")
        store.set(self.keys.meta, json.dumps({"world_size": 4, "interval_s": 0.2, "warn_after_s": 1.0,
                                              "dead_after_s": 3.0, "monitor": monitor}))
        store.set(self.keys.group("0"), "0-3")

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass: every rank publishes at each 0.2 s on the way."""
        end = self.now + seconds
        while self.started + 0.2 * (self.beat + 1) <= end + 1e-9:
            self.now = self.started + 0.2 * (self.beat + 1)
            self.publish()
        self.now = end

    def publish(self) -> None:
        self.beat += 1
        stall = self.now - self.started
        sig = Signature("all_reduce", ((1000,),), ("Float",))
        for rank in range(4):
            if rank in self.dead and self.beat > 1:
                continue  # this rank stopped publishing after its first record
            if self.late and rank < 3:
                group = GroupProgress("0", 5, 4, stall, sig, 5)
            else:
                group = GroupProgress("0", 4, 4)
            record = RankRecord(rank=rank, world_size=4, host=f"host{rank // 2}", node=rank // 2, pid=100 + rank,
                                heartbeat=self.beat, groups={"0": group}, quiet_s=stall, source=self.source)
            self.store.set(self.keys.rank(rank), encode_record(record))

    def __enter__(self) -> FakeJob:
        self.sleep(0.2)  # the first records
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _watch(job: FakeJob, *argv: str) -> CliResult:
    """``syncdoctor watch ARGV`` in-process on the job's fake clock (at width 120, without colour)."""
    from syncdoctor.cli import watch

    args = build_parser().parse_args(["watch", *argv])
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, force_terminal=False, color_system=None)
    code = watch.run(args, console, clock=job, sleep=job.sleep)
    return CliResult(code, buffer.getvalue())


def test_bad_master_is_a_usage_error(run_cli) -> None:
    result = run_cli("watch", "--master", "nohostport")
    assert result.code == 2 and "HOST:PORT" in result.out


def test_unreachable_store_exits_3_without_traceback(run_cli) -> None:
    result = run_cli("watch", "--master", f"127.0.0.1:{_free_port()}", "--wait", "1")
    assert result.code == 3 and "cannot reach the job's store" in result.out and "Traceback" not in result.out


def test_store_without_records_exits_3(run_cli, store: ScopedStore) -> None:
    result = run_cli("watch", "--master", f"127.0.0.1:{store.store.port}", "--wait", "0")
    assert result.code == 3 and "no syncdoctor.watch records" in result.out


def test_json_stream_names_the_late_rank(store: ScopedStore) -> None:
    with FakeJob(store) as job:
        result = _watch(job, "--master", f"127.0.0.1:{store.store.port}", "--json", "--duration", "4")
    assert result.code == 0, result.out
    events = [json.loads(line) for line in result.out.splitlines() if line.startswith("{")]
    late = [e for e in events if e["code"] == "W101"]
    assert late and late[0]["ranks"] == [3] and late[0]["hosts"] == ["host1"] and late[0]["waiting_ranks"] == [0, 1, 2]
    # the command ran the detector itself (no monitor in the job) and asked rank 3 for its stack
    assert json.loads(store.get(JobKeys("syncdoctor/v1", 0).ctl_msg))["stacks"] == {"3": 1}


def test_a_host_cut_off_is_a_suspect_node_in_the_event_and_the_history(store: ScopedStore, tmp_path) -> None:
    from syncdoctor.history import History

    history = tmp_path / "history.sqlite3"
    with FakeJob(store, late=False, dead=(2, 3)) as job:
        result = _watch(job, "--master", f"127.0.0.1:{store.store.port}", "--json", "--duration", "6",
                        "--history", str(history))
    assert result.code == 0, result.out
    events = [json.loads(line) for line in result.out.splitlines() if line.startswith("{")]
    (cut,) = [e for e in events if e["code"] == "W106"]
    assert cut["ranks"] == [2, 3] and [(s["node"], s["code"]) for s in cut["suspect_nodes"]] == [("host1", "W106")]
    (row,) = History(history).nodes()  # written by the history thread, which the command waits for at its end
    assert (row.node, dict(row.codes), row.runs) == ("host1", {"W106": 1}, 1)
    with FakeJob(store, late=False, dead=(2, 3)) as job:  # --no-history: the same cut, recorded nowhere
        again = _watch(job, "--master", f"127.0.0.1:{store.store.port}", "--json", "--duration", "6", "--history",
                       str(tmp_path / "other.sqlite3"), "--no-history")
    assert '"code":"W106"' in again.out and not (tmp_path / "other.sqlite3").exists()


def test_table_once(run_cli, store: ScopedStore) -> None:
    with FakeJob(store, late=False) as job:
        job.sleep(0.4)
        result = run_cli("watch", "--master", f"127.0.0.1:{store.store.port}", "--once")
    assert result.code == 0, result.out
    assert "4/4 ranks reporting" in result.out and "4/4" in result.out and "host1" in result.out
    assert "detecting here" in result.out


def test_monitor_says_once_that_ranks_use_the_hooks_recorder(store: ScopedStore) -> None:
    from syncdoctor.watch.config import WatchConfig
    from syncdoctor.watch.monitor import Monitor

    keys = JobKeys("syncdoctor/v1", 0)
    for source, expected in (("flight_recorder", []), ("hooks", [("W109", "info")])):
        with FakeJob(store, late=False, source=source) as job:
            job.sleep(0.4)
            monitor = Monitor(store, keys, WatchConfig(interval_s=0.2), 4, [], clock=job)
            events = monitor.cycle() + monitor.cycle()
        assert [(e.code, e.status) for e in events] == expected
        if expected:
            assert events[0].ranks == (0, 1, 2, 3) and "patched collectives" in events[0].title


def test_with_a_monitor_in_the_job_it_shows_that_monitors_events(store: ScopedStore) -> None:
    from syncdoctor.watch.events import Event
    from syncdoctor.watch.sinks import StoreSink

    with FakeJob(store, monitor="auto") as job:
        sink = StoreSink(store, job.keys)  # what the job's monitor publishes
        sink.emit(Event("W101", "warning", "rank 3 is late, seen inside the job", ranks=(3,), key="k"))
        result = _watch(job, "--master", f"127.0.0.1:{store.store.port}", "--json", "--duration", "2")
    events = [json.loads(line) for line in result.out.splitlines() if line.startswith("{")]
    assert [e["title"] for e in events] == ["rank 3 is late, seen inside the job"], result.out
    assert not store.check([JobKeys("syncdoctor/v1", 0).ctl_msg])  # a viewer asks the ranks nothing


def test_a_confirmed_hang_asks_every_rank_for_its_flight_recorder_dump(store: ScopedStore) -> None:
    from syncdoctor.watch.config import WatchConfig
    from syncdoctor.watch.monitor import Monitor

    keys = JobKeys("syncdoctor/v1", 0)
    confirmed = []
    config = WatchConfig(interval_s=0.2, dead_after_s=0.6, flight_recorder_dump=True)
    with FakeJob(store, late=False, dead=3) as job:
        job.sleep(0.1)
        monitor = Monitor(store, keys, config, 4, [], on_confirmed=confirmed.append, clock=job)
        for _ in range(12):
            monitor.cycle()
            job.sleep(0.2)
    assert [e.code for e in confirmed] == ["W105"] and confirmed[0].ranks == (3,)
    message = json.loads(store.get(keys.ctl_msg))
    assert message["dump"] == 1 and message["abort"] is None  # asked once; fail-fast is the runtime's call


def test_nothing_listening_is_one_line_without_cpp_stacks(tmp_path) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = subprocess.run([sys.executable, "-m", "syncdoctor", "watch", "--master", f"127.0.0.1:{port}", "--wait", "1"],
                          capture_output=True, text=True, timeout=120, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 3, output
    assert "frame #" not in output and "TCPStore.cpp" not in output and "socket.cpp" not in output, output
    assert output.strip().startswith(f"error: cannot reach the job's store at 127.0.0.1:{port}"), output
