"""``syncdoctor watch`` against a real TCPStore: errors, and a live job simulated by records in the store."""

from __future__ import annotations

import datetime
import json
import socket
import threading
import time

import pytest

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
    """Four ranks publishing records into the store every 0.2 s: 0-2 wait in all_reduce #5, rank 3 does not."""

    def __init__(self, store: ScopedStore, late: bool = True, source: str = "flight_recorder",
                 monitor: str = "off", dead: int | None = None) -> None:
        self.store = store
        self.dead = dead
        self.source = source
        self.keys = JobKeys("syncdoctor/v1", 0)
        self.late = late
        self._stop = threading.Event()
        store.set(self.keys.pointer, "0")
        store.set(self.keys.meta, json.dumps({"world_size": 4, "interval_s": 0.2, "warn_after_s": 1.0,
                                              "dead_after_s": 3.0, "monitor": monitor}))
        store.set(self.keys.group("0"), "0-3")
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        started, beat = time.monotonic(), 0
        sig = Signature("all_reduce", ((1000,),), ("Float",))
        while not self._stop.wait(0.2):
            beat += 1
            stall = time.monotonic() - started
            for rank in range(4):
                if rank == self.dead and beat > 1:
                    continue  # this rank stopped publishing after its first record
                if self.late and rank < 3:
                    group = GroupProgress("0", 5, 4, stall, sig, 5)
                else:
                    group = GroupProgress("0", 4, 4)
                record = RankRecord(rank=rank, world_size=4, host=f"host{rank // 2}", node=rank // 2, pid=100 + rank,
                                    heartbeat=beat, groups={"0": group}, quiet_s=stall, source=self.source)
                self.store.set(self.keys.rank(rank), encode_record(record))

    def __enter__(self) -> FakeJob:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join()


def test_bad_master_is_a_usage_error(run_cli) -> None:
    result = run_cli("watch", "--master", "nohostport")
    assert result.code == 2 and "HOST:PORT" in result.out


def test_unreachable_store_exits_3_without_traceback(run_cli) -> None:
    result = run_cli("watch", "--master", f"127.0.0.1:{_free_port()}", "--wait", "1")
    assert result.code == 3 and "cannot reach the job's store" in result.out and "Traceback" not in result.out


def test_store_without_records_exits_3(run_cli, store: ScopedStore) -> None:
    result = run_cli("watch", "--master", f"127.0.0.1:{store.store.port}", "--wait", "0")
    assert result.code == 3 and "no syncdoctor.watch records" in result.out


def test_json_stream_names_the_late_rank(run_cli, store: ScopedStore) -> None:
    with FakeJob(store):
        result = run_cli("watch", "--master", f"127.0.0.1:{store.store.port}", "--json", "--duration", "4")
    assert result.code == 0, result.out
    events = [json.loads(line) for line in result.out.splitlines() if line.startswith("{")]
    late = [e for e in events if e["code"] == "W101"]
    assert late and late[0]["ranks"] == [3] and late[0]["hosts"] == ["host1"] and late[0]["waiting_ranks"] == [0, 1, 2]
    # the command ran the detector itself (no monitor in the job) and asked rank 3 for its stack
    assert json.loads(store.get(JobKeys("syncdoctor/v1", 0).ctl_msg))["stacks"] == {"3": 1}


def test_table_once(run_cli, store: ScopedStore) -> None:
    with FakeJob(store, late=False):
        time.sleep(0.5)
        result = run_cli("watch", "--master", f"127.0.0.1:{store.store.port}", "--once")
    assert result.code == 0, result.out
    assert "4/4 ranks reporting" in result.out and "4/4" in result.out and "host1" in result.out
    assert "detecting here" in result.out


def test_monitor_says_once_that_ranks_use_the_hooks_recorder(store: ScopedStore) -> None:
    from syncdoctor.watch.config import WatchConfig
    from syncdoctor.watch.monitor import Monitor

    keys = JobKeys("syncdoctor/v1", 0)
    for source, expected in (("flight_recorder", []), ("hooks", [("W109", "info")])):
        with FakeJob(store, late=False, source=source):
            time.sleep(0.5)
            monitor = Monitor(store, keys, WatchConfig(interval_s=0.2), 4, [])
            events = monitor.cycle() + monitor.cycle()
        assert [(e.code, e.status) for e in events] == expected
        if expected:
            assert events[0].ranks == (0, 1, 2, 3) and "patched collectives" in events[0].title


def test_with_a_monitor_in_the_job_it_shows_that_monitors_events(run_cli, store: ScopedStore) -> None:
    from syncdoctor.watch.events import Event
    from syncdoctor.watch.sinks import StoreSink

    with FakeJob(store, monitor="auto") as job:
        sink = StoreSink(store, job.keys)  # what the job's monitor publishes
        sink.emit(Event("W101", "warning", "rank 3 is late, seen inside the job", ranks=(3,), key="k"))
        result = run_cli("watch", "--master", f"127.0.0.1:{store.store.port}", "--json", "--duration", "2")
    events = [json.loads(line) for line in result.out.splitlines() if line.startswith("{")]
    assert [e["title"] for e in events] == ["rank 3 is late, seen inside the job"], result.out
    assert not store.check([JobKeys("syncdoctor/v1", 0).ctl_msg])  # a viewer asks the ranks nothing


def test_a_confirmed_hang_asks_every_rank_for_its_flight_recorder_dump(store: ScopedStore) -> None:
    from syncdoctor.watch.config import WatchConfig
    from syncdoctor.watch.monitor import Monitor

    keys = JobKeys("syncdoctor/v1", 0)
    confirmed = []
    config = WatchConfig(interval_s=0.2, dead_after_s=0.6, flight_recorder_dump=True)
    with FakeJob(store, late=False, dead=3):
        time.sleep(0.3)
        monitor = Monitor(store, keys, config, 4, [], on_confirmed=confirmed.append)
        for _ in range(12):
            monitor.cycle()
            time.sleep(0.2)
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
