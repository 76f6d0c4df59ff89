"""Runtime pieces that need no job: sampler bookkeeping, post-mortem, stacks, process states, hooks recorder."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from syncdoctor.watch.local import capture_stack, process_state
from syncdoctor.watch.postmortem import diagnose_failure, is_peer_error, unheard_when_store_lost
from syncdoctor.watch.records import RankRecord, Signature
from syncdoctor.watch.sampler import Sampler


def test_sampler_stall_wait_and_signature_request() -> None:
    sampler = Sampler()
    sampler.observe(10.0, {"0": (4, 4)})
    sampler.observe(10.1, {"0": (5, 4)})  # entered #5: stall starts at the midpoint, 10.05
    progress = sampler.progress(12.05)["0"]
    assert progress.pending and abs((progress.stalled_s or 0) - 2.0) < 1e-9
    assert sampler.wanted_signatures(11.0, after=2.0) == []
    assert sampler.wanted_signatures(12.1, after=2.0) == [("0", 5)]
    assert sampler.wanted_signatures(12.2, after=2.0) == []  # asked once per sequence number
    sig = Signature("all_reduce", ((10,),), ("Float",))
    sampler.set_signature("0", 5, sig)
    assert sampler.progress(12.2)["0"].signature == sig
    sampler.observe(12.2, {"0": (5, 4)})
    sampler.observe(12.3, {"0": (5, 5)})  # completed: a wait of 12.25 - 10.05
    (wait,) = sampler.waits()
    assert wait.group == "0" and wait.seq == 5 and abs(wait.wait_s - 2.2) < 1e-9
    assert sampler.progress(12.3)["0"].stalled_s is None and sampler.progress(12.3)["0"].signature is None
    assert sampler.quiet_s(13.3) == 1.0


def test_sampler_fast_collectives_leave_no_waits_and_marks_are_bounded() -> None:
    sampler = Sampler(marks=3)
    for i in range(100):
        sampler.observe(i * 0.05, {"0": (i, i)})
    assert sampler.waits() == ()
    for step in range(10):
        sampler.mark_step(5.0 + step, step, {"0": step * 3})
    assert [m.step for m in sampler.marks()] == [7, 8, 9] and sampler.step == 9


def test_sampler_records_only_waits_of_half_the_straggler_minimum() -> None:
    sampler = Sampler(straggler_min_wait_s=0.2)  # floor 0.1 s
    sampler.observe(1.0, {"0": (1, 1)})
    sampler.observe(1.02, {"0": (2, 1)})  # stall from 1.01
    sampler.observe(1.04, {"0": (2, 2)})  # completed: a wait of 0.02 s, under the floor
    assert sampler.waits() == () and sampler.waits_total() == 0
    sampler.observe(1.06, {"0": (3, 2)})  # stall from 1.05
    sampler.observe(1.5, {"0": (3, 3)})  # completion seen at the midpoint 1.28: a wait of 0.23 s
    assert [(w.seq, round(w.wait_s, 2)) for w in sampler.waits()] == [(3, 0.23)] and sampler.waits_total() == 1


def _rec(rank: int, host: str, state: str, error: str | None = None, order: int | None = None) -> RankRecord:
    return RankRecord(rank=rank, world_size=4, host=host, node=int(host[-1]), pid=100 + rank, state=state,
                      error=error, fail_order=order)


def test_postmortem_names_the_rank_that_vanished() -> None:
    reset = "RuntimeError: [/x/pair.cc:537] Read error [10.0.0.2]:4242: Connection reset by peer."
    records = {0: _rec(0, "host0", "failed", reset, 1), 1: _rec(1, "host0", "failed", reset, 2),
               2: _rec(2, "host1", "failed", reset, 3), 3: _rec(3, "host1", "running")}
    (event,) = diagnose_failure(records, {3}, 4)
    assert event.code == "W105" and event.ranks == (3,) and event.hosts == ("host1",)
    assert "vanished without an error" in event.title and "pair.cc" not in event.title


def test_postmortem_names_the_first_real_error() -> None:
    closed = "RuntimeError: Connection closed by peer [10.0.0.2]:5"
    records = {0: _rec(0, "host0", "failed", closed, 1), 1: _rec(1, "host0", "running"),
               2: _rec(2, "host1", "failed", "ValueError: bad batch", 2), 3: _rec(3, "host1", "exited")}
    (event,) = diagnose_failure(records, set(), 4)
    assert event.code == "W108" and event.ranks == (2,) and "ValueError: bad batch" in event.title


def test_postmortem_whole_host_and_nothing_to_say() -> None:
    records = {0: _rec(0, "host0", "failed", "Connection reset by peer", 1), 1: _rec(1, "host0", "failed", "x", 2),
               2: _rec(2, "host1", "running"), 3: _rec(3, "host1", "running")}
    (event,) = diagnose_failure(records, {2, 3}, 4)
    # under torchrun (a node rank): one rank's death ends its node-mates too, so the node is a warning only
    assert (event.code, event.status, event.ranks, event.hosts) == ("W106", "warning", (2, 3), ("host1",))
    assert "its launcher ended the others" in event.title and event.suspect_nodes[0].confidence == 0.6
    bare = {r: rec._replace(node=-1) for r, rec in records.items()}  # no launcher that ends node-mates
    (event,) = diagnose_failure(bare, {2, 3}, 4)
    assert (event.code, event.status) == ("W106", "confirmed") and "launcher" not in event.title
    assert diagnose_failure({0: _rec(0, "host0", "running")}, set(), 1) == []
    assert is_peer_error("Connection closed by peer") and not is_peer_error("ValueError: x")


def test_capture_stack_of_a_thread_waiting_in_c_code() -> None:
    ready = threading.Event()

    def load_batch() -> None:
        ready.set()
        time.sleep(1.0)

    thread = threading.Thread(target=load_batch)
    thread.start()
    ready.wait()
    time.sleep(0.05)
    report = capture_stack(3, 7, thread.ident)
    thread.join()
    assert report.gen == 7 and report.where is not None
    assert report.where.function.endswith("load_batch") and report.summary().startswith("load_batch (")
    assert capture_stack(3, 8, thread_id=-1).note.startswith("main thread not found")


def test_process_state_reads_proc(tmp_path: Path) -> None:
    for pid, text in ((1, "1 (python) S 0"), (2, "2 (a b) c) T 1"), (3, "3 (x) Z 1")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(text)
    assert process_state(1, str(tmp_path)) == "running"
    assert process_state(2, str(tmp_path)) == "stopped"
    assert process_state(3, str(tmp_path)) == "zombie"
    assert process_state(4, str(tmp_path)) == "gone"


def test_postmortem_rank_that_never_reported() -> None:
    records = {0: _rec(0, "host0", "failed", "Connection reset by peer", 1), 1: _rec(1, "host0", "failed", "x", 2)}
    (event,) = diagnose_failure(records, {2}, 3)
    assert event.code == "W105" and event.ranks == (2,) and "never reported" in event.title


def test_postmortem_names_the_late_rank_the_others_timed_out_on() -> None:
    from syncdoctor.watch.records import GroupProgress

    timeout = "RuntimeError: [/x/unbound_buffer.cc:78] Timed out waiting 15000ms for recv operation to complete"
    waiting = {"0": GroupProgress("0", 12, 11, 15.0)}
    records = {r: RankRecord(rank=r, world_size=4, host=f"host{r // 2}", node=r // 2, pid=100 + r, state="failed",
                             error=timeout, fail_order=r + 1, groups=waiting) for r in range(3)}
    records[3] = RankRecord(rank=3, world_size=4, host="host1", node=1, pid=103, groups={"0": GroupProgress("0", 11, 11)})
    (event,) = diagnose_failure(records, set(), 4)
    assert event.code == "W101" and event.ranks == (3,) and "had not entered" in event.title
    earlier = {"code": "W101", "title": "rank 3 (host1) has not entered all_reduce #12", "ranks": [3], "key": "W101:0:12:3",
               "at": 0, "hosts": ["host1"]}
    (recalled,) = diagnose_failure(records, set(), 4, reported=[earlier])
    assert recalled.code == "W101" and recalled.title.startswith("the job fails of the problem reported at")
    assert recalled.detail["reported_earlier"] == "W101:0:12:3"


def test_postmortem_prefers_a_real_exception_to_an_earlier_straggler_or_warning() -> None:
    records = {0: _rec(0, "host0", "failed", "Connection closed by peer", 2),
               1: _rec(1, "host0", "failed", "ValueError: bad batch", 1)}
    straggler = {"code": "W107", "title": "rank 1 arrives last", "ranks": [1], "key": "W107:1", "at": 0}
    (event,) = diagnose_failure(records, set(), 2, reported=[straggler])
    assert event.code == "W108" and "ValueError" in event.title
    late = {"code": "W101", "title": "rank 1 is late", "ranks": [1], "key": "W101:0:5:1", "at": 0}
    (event,) = diagnose_failure(records, set(), 2, reported=[late])
    assert event.code == "W108" and "ValueError" in event.title


_DEFER = """
import os, signal, sys, time
from syncdoctor.watch.failfast import sigterm_deferred
got = []
if sys.argv[1] == "own":
    signal.signal(signal.SIGTERM, lambda n, f: got.append(("own", n)))
with sigterm_deferred(lambda n, f: got.append(("deferred", n))) as deferred:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.05)
    print("alive", deferred, got, flush=True)
print("default", signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(2)
print("survived", flush=True)
"""


def test_a_sigterm_is_deferred_while_a_failing_rank_says_goodbye() -> None:
    """A launcher's SIGTERM (torchrun ending a dead rank's node-mates) waits while the failing rank publishes and
    lingers; after it, SIGTERM ends the process again. A program's own handler is left alone."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _DEFER, "default"], capture_output=True, text=True, timeout=60)
    assert run.returncode == -15, run.stderr
    assert run.stdout.splitlines() == ["alive True [('deferred', 15)]", "default True"]
    run = subprocess.run([sys.executable, "-c", _DEFER, "own"], capture_output=True, text=True, timeout=60)
    assert run.stdout.splitlines()[0] == "alive False [('own', 15)]"
    assert "default False" in run.stdout and "survived" in run.stdout  # its handler stays in place


def test_a_dying_ranks_store_operations_are_bounded() -> None:
    """The goodbye of a failing rank runs with SIGTERM deferred: each store operation gives up after the short
    timeout instead of the watcher's 5 s (a real TCPStore; a key nobody sets is a wait that never ends)."""
    import datetime

    import pytest
    from torch.distributed import TCPStore

    from syncdoctor.watch.keys import ScopedStore

    server = TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=5), wait_for_workers=False)
    client = ScopedStore(TCPStore("127.0.0.1", server.port, None, False, timeout=datetime.timedelta(seconds=5)))
    client.shorten_timeout(0.3)
    started = time.monotonic()
    with pytest.raises(Exception):  # noqa: B017 - torch raises DistStoreError or RuntimeError by release
        client.get("never-set")
    assert time.monotonic() - started < 2.0
    ScopedStore(object()).shorten_timeout(0.3)  # a store without a timeout: nothing to do, no error


def test_the_jobs_own_store_keeps_its_timeout() -> None:
    """Where the job's store cannot be cloned the watcher shares it: a dying rank's short timeout must not
    change the job's (its own operations, a checkpoint barrier on the store, keep their timeout)."""
    import datetime

    from syncdoctor.watch.store import own_store

    class Uncloneable:
        def __init__(self) -> None:
            self.timeouts: list[datetime.timedelta] = []

        def set_timeout(self, timeout: datetime.timedelta) -> None:
            self.timeouts.append(timeout)

    class Cloneable(Uncloneable):
        def clone(self) -> Uncloneable:
            return Uncloneable()

    job = Uncloneable()
    shared = own_store(job, 5.0)
    assert shared.store is job and not shared.owned
    shared.shorten_timeout(1.0)
    assert job.timeouts == []
    job2 = Cloneable()
    own = own_store(job2, 5.0)
    assert own.store is not job2 and own.owned
    own.shorten_timeout(1.0)
    assert own.store.timeouts == [datetime.timedelta(seconds=5), datetime.timedelta(seconds=1)]
    assert job2.timeouts == []


def test_postmortem_when_the_store_went_away_before_a_silent_rank_could_be_judged() -> None:
    # the first failing rank's linger lost the store (its host's agent ended the job) a moment after the peers'
    # connection errors: rank 3, SIGKILLed, had said nothing yet and its heartbeat was not yet old
    reset = "RuntimeError: [/x/pair.cc:537] Read error [10.0.0.2]:4242: Connection reset by peer."
    records = {0: _rec(0, "host0", "failed", reset, 1), 1: _rec(1, "host0", "failed", reset, 2),
               2: _rec(2, "host1", "failed", reset, 3), 3: _rec(3, "host1", "running")}
    assert unheard_when_store_lost(records) == {3}
    (event,) = diagnose_failure(records, {3}, 4, unheard=True)
    assert (event.code, event.status, event.ranks) == ("W105", "warning", (3,))
    assert "store went away" in event.title
    # a rank that failed of an error of its own names the origin: nobody is taken as silent
    own = {**records, 1: _rec(1, "host0", "failed", "ValueError: bad batch", 2)}
    assert unheard_when_store_lost(own) == set()
    (event,) = diagnose_failure(own, set(), 4)
    assert event.code == "W108" and event.ranks == (1,)
    # nobody failed yet: nothing to take as silent
    assert unheard_when_store_lost({r: _rec(r, "host0", "running") for r in range(2)}) == set()
