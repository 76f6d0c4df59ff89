"""Ending a rank on purpose: fail-fast's count-out and exit, and the first failing rank's linger.

Does I/O: the job's store, the process's log handlers and standard streams, ``os._exit``, the process
states of pids on this host. The clock and the sleep are passed in. Runs on the monitor's or the
publisher's thread (fail-fast) and in ``sys.excepthook`` (the linger), never in the training step.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.local import Identity, process_state
from syncdoctor.watch.postmortem import diagnose_failure, unheard_when_store_lost
from syncdoctor.watch.reader import RecordReader
from syncdoctor.watch.records import RankRecord, decode_record
from syncdoctor.watch.sinks import JsonlSink, LogSink, Sink, StoreSink, read_store_events
from syncdoctor.watch.snapshot import RankSeen

__all__ = ["exit_now", "leave_together", "linger", "reachable_ranks", "reported_events", "sigterm_deferred",
           "watch_the_others"]

logger = logging.getLogger("syncdoctor.watch")

_REACHABLE = ("running", "starting", "aborting")


def reachable_ranks(records: Mapping[int, RankRecord], seen: Mapping[int, RankSeen], now: float,
                    dead_s: float) -> set[int]:
    """The ranks a fail-fast order can reach: running, and whose heartbeat moved within ``dead_s``."""
    return {rank for rank, rec in records.items() if rec.state in _REACHABLE
            and rank in seen and now - seen[rank].changed_at < dead_s}


def leave_together(store: ScopedStore, keys: JobKeys, expected: int, rank: int, deadline_s: float, *,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
    """Count this rank out on ``keys.aborted`` and wait up to ``deadline_s`` until ``expected`` ranks did.

    Rank 0 may serve the store: it waits a little longer, so the others read the count first. A store
    that fails meanwhile ends the wait (it left first: everyone read the order by then).
    """
    deadline = clock() + deadline_s
    try:
        count = store.add(keys.aborted, 1)
        while count < expected and clock() < deadline:
            sleep(0.05)
            count = store.add(keys.aborted, 0)
        if rank == 0:
            sleep(0.3)
    except Exception:
        pass


def exit_now(code: int) -> None:
    """Flush the log handlers and the standard streams, then end the process with ``code`` (no cleanup)."""
    for handler in logging.getLogger().handlers + logger.handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def linger(store: ScopedStore, keys: JobKeys, me: Identity, config: WatchConfig, *,
           on_sigterm: Callable[[int, Any], None], clock: Callable[[], float] = time.monotonic,
           sleep: Callable[[float], None] = time.sleep, wall_clock: Callable[[], float] = time.time) -> None:
    """The first rank to fail watches the others up to ``config.exit_linger_s``, then reports the rank that
    died first (log, store, events file). On the main thread, a SIGTERM meanwhile goes to ``on_sigterm``
    instead of ending the process at once.
    """
    with sigterm_deferred(on_sigterm):
        events, store_ok = watch_the_others(store, keys, me, config.exit_linger_s, config.interval_s, clock=clock,
                                            sleep=sleep, wall_clock=wall_clock)
        sinks: list[Sink] = [LogSink()]
        if store_ok:
            sinks.append(StoreSink(store, keys))
        if config.events_file:
            sinks.append(JsonlSink(config.events_file.replace("{rank}", str(me.rank))))
        for event in events:
            for sink in sinks:
                sink.emit(event)


@contextlib.contextmanager
def sigterm_deferred(on_sigterm: Callable[[int, Any], None]) -> Iterator[bool]:
    """While inside, a SIGTERM goes to ``on_sigterm`` instead of ending the process at once (main thread, and
    only where SIGTERM has its default action: a handler of the program's own is left alone). Yields whether
    it deferred. Nested uses keep the outer one.

    A launcher ends a failed rank's node-mates with SIGTERM (torchrun at once, then SIGKILL after 30 s): the
    failing rank deferring it can still publish its goodbye and, if first, linger.
    """
    deferred = False
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, on_sigterm)
        deferred = True
    try:
        yield deferred
    finally:
        if deferred:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def watch_the_others(store: ScopedStore, keys: JobKeys, me: Identity, linger_s: float, interval_s: float, *,
                     clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                     wall_clock: Callable[[], float] = time.time) -> tuple[list[Event], bool]:
    """:func:`linger`'s watch: the events naming the rank that died first, and whether the store stayed
    reachable.

    A rank is taken as vanished when its heartbeat stops for 1.5 intervals without a goodbye, or at
    once when it runs on this host and its process is gone. If the store goes away meanwhile (its
    host's agent ends the job), the diagnosis uses the last records read; when every failure read so far
    is a peer's connection error, the ranks of other hosts that said nothing by then are taken as the ones
    that vanished (a warning); this host's ranks are judged by their processes, as in the loop.
    """
    world = me.world_size
    reader = RecordReader(store, keys, world)
    started = clock()
    deadline = started + linger_s
    hard_deadline = deadline + _LINGER_GRACE_S
    settle = min(linger_s, 1.5 * interval_s + 0.3)
    relayed = False  # records relayed by node leaders arrive up to an interval later: settle longer
    seen: dict[int, tuple[int, float]] = {}
    records: dict[int, RankRecord] = {}
    silent: set[int] = set()
    store_ok = True
    while True:
        now = clock()
        try:
            raws = reader.read()
        except Exception:
            store_ok = False
            raws = []
        if reader.aggregated and not relayed:
            relayed, settle = True, min(linger_s, settle + interval_s)
        for rank, raw in enumerate(raws):
            record = decode_record(raw)
            if record is not None:
                records[rank] = record
                if rank not in seen or seen[rank][0] != record.heartbeat:
                    seen[rank] = (record.heartbeat, now)
        running = [r for r, rec in records.items() if rec.state in ("running", "starting")]
        silent = {r for r in running if now - seen[r][1] >= settle}
        silent |= {r for r in running if records[r].host_key == me.host_key and records[r].pid != me.pid
                   and process_state(records[r].pid) in ("gone", "zombie")}
        if now - started >= settle:
            silent |= {r for r in range(world) if r not in records}  # died before publishing
        if now >= deadline and store_ok:
            # a rank first read after the linger began (a node leader's relay arriving late) has not yet been still
            # for ``settle``: wait for that, a little past the linger at most
            pending = [seen[r][1] + settle for r in running if r not in silent and r in seen]
            deadline = min(max([deadline, *pending]), hard_deadline)
        if not store_ok or (now - started >= settle and len(silent) == len(running)) or now >= deadline:
            break
        if running and silent and len(silent) == len(running) and all(
            records[r].host_key == me.host_key for r in silent
        ):
            break  # every silent rank is a dead process on this host: no need to wait
        sleep(0.2)
    reported = reported_events(store, keys) if store_ok else []
    # the store lost with nobody seen to vanish yet: the other hosts' ranks that said nothing (see
    # unheard_when_store_lost); this host's were judged by their processes in the loop (a gone one is silent already)
    unheard = set() if store_ok or silent else {r for r in unheard_when_store_lost(records)
                                                 if records[r].host_key != me.host_key}
    return diagnose_failure(records, silent | unheard, world, wall=wall_clock(), reported=reported,
                            unheard=bool(unheard)), store_ok


_LINGER_GRACE_S = 1.0  # past exit_linger_s, for a rank whose record the linger first read late (torchrun's SIGKILL
# follows its SIGTERM by 30 s)


def reported_events(store: ScopedStore, keys: JobKeys) -> list[dict[str, object]]:
    """Events the job's monitor published and did not resolve (none when the store cannot be read)."""
    try:
        _count, events = read_store_events(store, keys, 0)
    except Exception:
        return []
    resolved = {e.get("key") for e in events if e.get("status") == "resolved"}
    return [e for e in events if e.get("status") != "resolved" and e.get("key") not in resolved
            and not _is_postmortem(e)]


def _is_postmortem(event: Mapping[str, object]) -> bool:
    detail = event.get("detail")
    return isinstance(detail, dict) and bool(detail.get("postmortem"))
