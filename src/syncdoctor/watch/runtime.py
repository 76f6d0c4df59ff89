"""The per-rank watcher: sampler and publisher threads, the monitor on one rank, clean shutdown.

Does I/O: threads, the job's store, torch patches (``destroy_process_group``, a global optimizer step
hook, the hooks fallback), ``sys.excepthook`` while running. Safety rules it keeps:

- it never issues a collective and never blocks the training thread (the training thread only appends a
  step marker, about 5 µs, to a bounded deque);
- memory is bounded (rings of fixed size in the sampler, the detector and here);
- its own errors are contained: a failing store read/write backs off and is logged once;
- it says goodbye (state ``exited``) at ``destroy_process_group`` and at interpreter exit, and stops its
  threads; when the process dies of an exception it says ``failed`` with the error and, if it is the first
  rank of the job to fail, lingers up to ``exit_linger_s`` to name the rank that died first;
- it prints nothing while all is well.

This module keeps the lifecycle, the threads' loops and the dispatch; the rank's record and its answers to
the control message are :mod:`.publisher`'s, ending a rank on purpose :mod:`.failfast`'s, the patches
:mod:`.patches`' (each returns its undo), and the control message itself :mod:`.control`'s.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from syncdoctor.errors import EnvironmentNotSupported
from syncdoctor.redact import remember_secrets
from syncdoctor.watch import failfast
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.local import ActivityMeter, Identity, identity
from syncdoctor.watch.metrics import attach_from_environment
from syncdoctor.watch.monitor import Monitor, MonitorThread, monitor_sinks
from syncdoctor.watch.p2p import P2PLedger
from syncdoctor.watch.p2p_hooks import install_p2p
from syncdoctor.watch.patches import hook_optimizer_steps, patch_destroy_process_group, patch_excepthook
from syncdoctor.watch.priority import lower_thread_priority
from syncdoctor.watch.publisher import Publisher, SoloPhase
from syncdoctor.watch.recorder import (
    FlightRecorderSource,
    GroupDirectory,
    ProgressSource,
    entered_at_mark,
    flight_recorder_reason,
)
from syncdoctor.watch.sampler import Sampler

__all__ = ["Watcher"]

logger = logging.getLogger("syncdoctor.watch")

_SLEEP_AT_MOST_S = 0.25  # sampling intervals up to this sleep with time.sleep (see _sampler_loop)


class Watcher:
    """Everything ``syncdoctor.watch.start()`` runs in one rank. Use :func:`syncdoctor.watch.start`.

    The clocks are passed in (``clock``: intervals and ages; ``wall_clock``: time stamps of records).
    """

    def __init__(self, config: WatchConfig, *, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.sampler = Sampler(straggler_min_wait_s=config.straggler_min_wait_s)
        self.p2p = P2PLedger()
        self.directory = GroupDirectory()
        self.source: ProgressSource | None = None
        self.identity: Identity | None = None
        self.keys: JobKeys | None = None
        self.store: ScopedStore | None = None
        self.monitor: MonitorThread | None = None
        self.started = False
        self.stopped = False
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._marks: deque[tuple[float, int, Any]] = deque(maxlen=32)
        self._explicit_steps = False
        self._auto_step = 0
        self._last_step: int | None = None
        self._counter_marks = True  # step marks read the groups' sequence numbers until that fails once
        self._store_failing = False
        self._sample_failing = False
        self._sampling = threading.Lock()  # one progress reading at a time (sampler, publisher, exit paths)
        self._aborting = False
        self._abort_code: int | None = None
        self._sigterm_pending = False
        self._undo: list[Callable[[], None]] = []
        self._main_ident = threading.main_thread().ident
        self.activity = ActivityMeter(window_s=max(5.0, 5 * config.interval_s))
        # solo phases the training code is in (innermost last): [token, name, start, up_to_s]
        self._solo: list[SoloPhase] = []
        self._solo_tokens = itertools.count(1)
        self.publisher = Publisher(config, self.sampler, self.p2p, self.directory, self.activity, self._solo,
                                   lambda: getattr(self.source, "name", ""), main_ident=self._main_ident,
                                   clock=clock, wall_clock=wall_clock)

    # --- public ------------------------------------------------------------------------------------
    def start(self) -> Watcher:
        if self.started or not self.config.enabled:
            return self
        try:
            import torch.distributed  # noqa: F401
        except ImportError as exc:
            raise EnvironmentNotSupported(f"syncdoctor.watch needs torch with torch.distributed: {exc}") from exc
        self.started = True
        remember_secrets(os.environ)  # secret values never leave in events or log lines (syncdoctor.redact)
        reason = flight_recorder_reason()
        if self.config.recorder == "hooks" or (self.config.recorder == "auto" and reason):
            self._use_hooks(reason)
        elif self.config.recorder == "flight_recorder" and reason:
            logger.warning("syncdoctor.watch: Flight Recorder unavailable (%s); using hooks", reason)
            self._use_hooks(reason)
        self._patch_torch()
        for name, target in (("sampler", self._sampler_loop), ("publisher", self._publisher_loop)):
            thread = threading.Thread(target=self._at_low_priority, args=(target,), name=f"syncdoctor-watch-{name}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
        atexit.register(self.stop)
        self._undo.append(lambda: atexit.unregister(self.stop))
        return self

    def _at_low_priority(self, target: Callable[[], None]) -> None:
        """A watcher thread's body: below training's priority first (``nice``), then ``target``."""
        lower_thread_priority(self.config.nice)
        target()

    def enter_solo(self, name: str, up_to_s: float | None) -> int:
        """A solo phase starts on this rank (see :func:`syncdoctor.watch.solo`): a list append, no I/O."""
        token = next(self._solo_tokens)
        self._solo.append((token, name, self.clock(), up_to_s))
        return token

    def exit_solo(self, token: int) -> None:
        self._solo[:] = [phase for phase in self._solo if phase[0] != token]

    def step(self, index: int | None = None) -> None:
        """Mark a training step (optional: optimizer steps are marked automatically)."""
        self._explicit_steps = True
        self._mark(index if index is not None else (self._last_step or 0) + 1)

    def stop(self) -> None:
        """Say goodbye, stop the threads and undo the patches. Safe to call twice and from atexit."""
        if self.stopped or not self.started:
            return
        self.stopped = True
        self._stop.set()
        if self.monitor is not None:
            self.monitor.stop(timeout=1.0)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=1.0)
        if self.store is not None and not self.publisher.final and not self._store_failing:
            self.publisher.state = "exited"
            self._sample_now()  # the goodbye must not carry progress older than the last collectives
            with contextlib.suppress(Exception):
                self._publish(final=True)
        if self.monitor is not None:
            with contextlib.suppress(Exception):
                self.monitor.monitor.cycle()  # last look, with this rank's goodbye: what was open resolves
        for undo in reversed(self._undo):
            with contextlib.suppress(Exception):
                undo()
        self._undo.clear()
        self.activity.close()
        if self.source is not None:
            with contextlib.suppress(Exception):
                self.source.close()

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- torch patches -------------------------------------------------------------------------------
    def _use_hooks(self, reason: str) -> None:
        from syncdoctor.watch.hooks import HookSource

        if reason and self.config.recorder == "auto":
            logger.info("syncdoctor.watch: %s; using patched collectives and a DDP comm hook", reason)
        self.source = HookSource()

    def _patch_torch(self) -> None:
        self._undo.append(patch_destroy_process_group(self.stop))
        self._undo.append(install_p2p(self.p2p))
        self._undo.append(hook_optimizer_steps(self._on_optimizer_step))
        self._undo.append(patch_excepthook(self._on_fatal, lambda: self._abort_code, lambda: self._sigterm_pending))

    def _on_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._explicit_steps:
            self._auto_step += 1
            self._mark(self._auto_step)

    def _mark(self, step: int) -> None:
        """Training thread: remember the step and the collectives entered by now, per group.

        Runs at every step, on the training thread: with the Flight Recorder, each group's sequence number
        (about 10 µs a group on a busy machine; the group list is refreshed first if a group was created),
        or the raw status (about 45 µs, parsed by the sampler) where a backend has no such counter.
        """
        self._last_step = step
        source = self.source
        raw: Any = None
        try:
            # before the sampler's first read the source is not there yet: the Flight Recorder's by default
            if source is None or isinstance(source, FlightRecorderSource):
                if self._counter_marks and not self.directory.mixed:
                    self.directory.refresh()
                    try:
                        raw = self.directory.sequence_numbers()
                    except Exception:  # a backend without the counter: the status from now on
                        self._counter_marks = False
                if raw is None and source is not None:
                    raw = source.status()
            elif source is not None:
                raw = {name: entered for name, (entered, _completed) in source.readings().items()}
        except Exception:  # never break the training step
            raw = None
        self._marks.append((self.clock(), step, raw))

    # --- sampler thread ------------------------------------------------------------------------------
    def _sampler_loop(self) -> None:
        from torch.distributed import distributed_c10d as c10d

        interval = self.config.sample_interval_s
        # time.sleep costs half of what Event.wait with a timeout does per wake-up (30 vs 55 µs of CPU on a
        # busy 2-core VM, 10 times a second); the price is up to one interval of stop latency, so long
        # intervals keep the event (stop() joins for at most 1 s)
        nap = time.sleep if interval <= _SLEEP_AT_MOST_S else self._stop.wait
        stop = self._stop
        while not stop.is_set():
            nap(interval)
            if stop.is_set() or not c10d.is_initialized():
                continue
            try:
                self._sample(c10d)
            except Exception as exc:  # keep sampling; say it once
                if not self._sample_failing:
                    self._sample_failing = True
                    logger.warning("syncdoctor.watch: cannot read collective progress: %s", exc)

    def _sample(self, c10d: Any, wait_s: float = -1.0) -> bool:
        """One progress reading into the sampler; False when another thread's reading held the lock past
        ``wait_s`` (-1: wait for it)."""
        if not self._sampling.acquire(timeout=wait_s):
            return False
        try:
            self._read_progress(c10d)
        finally:
            self._sampling.release()
        return True

    def _read_progress(self, c10d: Any) -> None:
        source = self.source
        if source is None:
            source = self.source = FlightRecorderSource(self.directory, p2p=self.p2p)
        if not isinstance(source, FlightRecorderSource):
            self.directory.refresh()  # the Flight Recorder's readings refresh it themselves
        self.p2p.poll()
        readings = source.readings()
        now = self.clock()
        self.sampler.observe(now, readings, self.p2p.changes)
        if self._marks:
            pending = []
            while self._marks:
                pending.append(self._marks.popleft())
            for when, step, raw in pending[-8:]:  # the record keeps the last 8 steps: parse no more than those
                self.sampler.mark_step(when, step, self._entered_from(raw))
        for group, seq in self.sampler.wanted_signatures(now, self.config.suspect_s):
            self.sampler.set_signature(group, seq, source.signature(group, seq))
        if isinstance(source, FlightRecorderSource):
            source.settle()
            self._check_flight_recorder(c10d, source)

    def _sample_now(self, wait_s: float = 1.0) -> None:
        """One synchronous progress reading (for final records, and the publisher's refresh), waiting at most
        ``wait_s`` for a reading under way on another thread; never raises."""
        try:
            from torch.distributed import distributed_c10d as c10d

            if c10d.is_initialized():
                self._sample(c10d, wait_s=wait_s)
        except Exception:
            pass

    def _refresh_progress(self) -> None:
        """Publisher thread, before a publication: when the sampler has not read progress for two of its
        intervals (a starved or delayed thread), read it here, so that a record whose heartbeat moves does
        not carry a reading taken seconds ago (in a collective the rank has long left: a hang to the
        monitor). Never waits for a reading under way; never raises."""
        age = self.sampler.reading_age_s(self.clock())
        if age is not None and age > 2 * self.config.sample_interval_s and not self._stop.is_set():
            self._sample_now(wait_s=0.0)

    def _entered_from(self, raw: Any) -> dict[str, int]:
        """A step mark's ``{group: entered}`` from what the training thread read (see :meth:`_mark`)."""
        entered = entered_at_mark(raw, self.source)
        return self.sampler.entered() if entered is None else entered

    def _check_flight_recorder(self, c10d: Any, source: FlightRecorderSource) -> None:
        """If collectives happen but the Flight Recorder shows none, its buffer is off: use hooks."""
        if self.config.recorder == "auto" and source.records_nothing(c10d):
            logger.warning("syncdoctor.watch: the Flight Recorder records nothing here (buffer off?); switching to "
                           "patched collectives: DDP models built before now are not observed")
            self._use_hooks("")

    # --- publisher thread ----------------------------------------------------------------------------
    def _publisher_loop(self) -> None:
        delay = 0.01  # publish as soon as the process group exists
        while not self._stop.wait(delay):
            try:
                if self.store is None:
                    if not self._attach():
                        delay = min(self.config.interval_s, 0.1)
                        continue
                self._refresh_progress()
                self._publish()
                self._poll_control()
                self._watch_lease()
            except Exception as exc:  # store unreachable or gone: back off, say it once
                if not self._store_failing:
                    self._store_failing = True
                    logger.warning("syncdoctor.watch: cannot reach the job's store (%s); retrying quietly",
                                   _first_line(exc))
                delay = min(max(delay * 2, self.config.interval_s), 30.0)
                continue
            if self._store_failing:
                self._store_failing = False
                logger.warning("syncdoctor.watch: the job's store is reachable again")
            delay = self.config.interval_s
            node = self.publisher.node
            if node is not None and node.leading:  # a node leader relays again half an interval later
                if self._stop.wait(delay / 2):
                    break
                with contextlib.suppress(Exception):  # the next publication says it if the store is gone
                    self.publisher.relay()
                delay /= 2

    def _attach(self) -> bool:
        import torch.distributed as dist

        from syncdoctor.watch.store import job_root_store, own_store

        if not dist.is_initialized():
            return False
        me = identity(dist.get_rank(), dist.get_world_size())
        root = job_root_store()
        store = own_store(root, self.config.store_timeout_s)
        keys = JobKeys(self.config.prefix, me.attempt)
        self.publisher.attach(store, keys, me)
        self.identity, self.keys, self.store = me, keys, store
        if me.rank == self.config.monitor_rank:
            self._start_monitor(root)
        return True

    def _start_monitor(self, root: Any) -> None:
        from syncdoctor.watch.store import own_store

        assert self.identity is not None and self.keys is not None
        me = self.identity
        store = own_store(root, self.config.store_timeout_s) if root is not None else self.store
        assert store is not None
        monitor = Monitor(
            store, self.keys, self.config, me.world_size, monitor_sinks(self.config, store, self.keys, me.rank),
            who=f"rank {me.rank} ({me.host}, pid {me.pid})", on_confirmed=self._on_confirmed,
        )
        self._undo.append(attach_from_environment(self, monitor))  # opt-in: SYNCDOCTOR_METRICS_PORT
        self.monitor = MonitorThread(monitor, self.config.interval_s, self.config.nice)
        self.monitor.start()

    def _publish(self, final: bool = False) -> None:
        self.publisher.publish(final)

    def _poll_control(self) -> None:
        abort = self.publisher.poll_control()
        if abort is not None and not (self.monitor is not None and self.monitor.alive):
            self._abort(abort.code, abort.reason, abort.expected)

    def _watch_lease(self) -> None:
        """auto mode: ranks 1..7 take the monitor over when its lease stops beating (agent store only)."""
        if self.monitor is None and self.publisher.lease_lapsed():
            assert self.identity is not None
            logger.warning("syncdoctor.watch: the monitor stopped beating; rank %d takes over", self.identity.rank)
            from syncdoctor.watch.store import job_root_store

            self._start_monitor(job_root_store())

    # --- fail-fast -------------------------------------------------------------------------------------
    def _on_confirmed(self, event: Event) -> None:
        """Monitor thread: a confirmed hang. With fail-fast, end every reachable rank, this one included."""
        if not self.config.fail_fast or self._aborting or self.monitor is None:
            return
        self._aborting = True
        monitor = self.monitor.monitor
        alive = failfast.reachable_ranks(monitor.records, monitor.state.seen, monitor.clock(), self.config.dead_s)
        expected = max(len(alive | {self.identity.rank if self.identity else 0}), 1)
        monitor.request_abort(self.config.exit_code, event.line(), expected)
        self._abort(self.config.exit_code, event.line(), expected)

    def _abort(self, code: int, reason: str, expected: int = 1) -> None:
        """Count this rank out, wait (bounded) until the other reachable ranks did too, then exit."""
        self._abort_code = code
        logger.error("syncdoctor.watch: fail-fast: ending this rank with exit code %d: %s", code, reason)
        self.publisher.state = "aborting"
        self._sample_now()
        with contextlib.suppress(Exception):
            self._publish(final=True)
        if self.store is not None and self.keys is not None:
            failfast.leave_together(self.store, self.keys, expected, self.identity.rank if self.identity else -1,
                                    2 * self.config.interval_s + 2.0, clock=self.clock)
        failfast.exit_now(code)

    # --- dying of an exception -------------------------------------------------------------------------
    def _on_fatal(self, exc_type: type[BaseException], exc: BaseException) -> None:
        publisher = self.publisher
        if self.store is None or self.keys is None or publisher.final or self.stopped:
            return
        # its launcher may be ending it already (a node-mate died): the goodbye and the linger go first, each
        # store operation bounded (a store cut off would otherwise hold the deferred SIGTERM for its full timeout)
        self.store.shorten_timeout(min(self.config.store_timeout_s, _GOODBYE_TIMEOUT_S))
        with failfast.sigterm_deferred(self._defer_sigterm):
            text = f"{exc_type.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".strip()
            publisher.state, publisher.error = "failed", text[:400]
            self._sample_now()
            try:
                publisher.fail_order = self.store.add(self.keys.fail, 1)
            except Exception:
                publisher.fail_order = None
            self._stop.set()
            self._publish(final=True)
            if publisher.fail_order == 1 and self.config.exit_linger_s > 0 and exc_type is not KeyboardInterrupt:
                assert self.identity is not None  # the first rank to fail names the one that died first
                failfast.linger(self.store, self.keys, self.identity, self.config, on_sigterm=self._defer_sigterm,
                                clock=self.clock)

    def _defer_sigterm(self, signum: int, frame: Any) -> None:
        self._sigterm_pending = True


_GOODBYE_TIMEOUT_S = 1.0  # a dying rank's store operations: its goodbye, its failure order, the linger's reads


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__
