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
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import json
import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from syncdoctor.errors import EnvironmentNotSupported
from syncdoctor.outputs import output_problem
from syncdoctor.redact import remember_secrets
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.local import ActivityMeter, Identity, capture_stack, identity, process_state
from syncdoctor.watch.metrics import attach_from_environment
from syncdoctor.watch.monitor import Monitor, MonitorThread
from syncdoctor.watch.p2p import P2PLedger
from syncdoctor.watch.p2p_hooks import install_p2p
from syncdoctor.watch.postmortem import diagnose_failure
from syncdoctor.watch.priority import lower_thread_priority
from syncdoctor.watch.recorder import (
    NCCL,
    OTHER,
    FlightRecorderSource,
    GroupDirectory,
    ProgressSource,
    flight_recorder_reason,
)
from syncdoctor.watch.records import (
    RankRecord,
    Solo,
    decode_record,
    encode_record,
    encode_stack,
    format_ranks,
)
from syncdoctor.watch.sampler import Sampler
from syncdoctor.watch.sinks import JsonlSink, LogSink, Sink, StoreSink

__all__ = ["Watcher"]

logger = logging.getLogger("syncdoctor.watch")

_SLEEP_AT_MOST_S = 0.25  # sampling intervals up to this sleep with time.sleep (see _sampler_loop)


class Watcher:
    """Everything ``syncdoctor.watch.start()`` runs in one rank. Use :func:`syncdoctor.watch.start`."""

    def __init__(self, config: WatchConfig) -> None:
        self.config = config
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
        self._publish_lock = threading.RLock()
        self._threads: list[threading.Thread] = []
        self._marks: deque[tuple[float, int, Any]] = deque(maxlen=32)
        self._explicit_steps = False
        self._auto_step = 0
        self._last_step: int | None = None
        self._counter_marks = True  # step marks read the groups' sequence numbers until that fails once
        self._heartbeat = 0
        self._state = "starting"
        self._error: str | None = None
        self._fail_order: int | None = None
        self._final = False
        self._stack_gen = 0
        self._ack = 0
        self._ctl_gen = 0
        self._dump_gen = 0
        self._inspect: dict[int, str] = {}
        self._published_groups: set[str] = set()
        self._store_failing = False
        self._sample_failing = False
        self._lease_seen: tuple[bytes, float] | None = None
        self._aborting = False
        self._abort_code: int | None = None
        self._sigterm_pending = False
        self._undo: list[Callable[[], None]] = []
        self._main_ident = threading.main_thread().ident
        self._empty_fr_samples = 0
        self.activity = ActivityMeter(window_s=max(5.0, 5 * config.interval_s))
        self._activity_failing = False
        # solo phases the training code is in (innermost last): [token, name, start, up_to_s]
        self._solo: list[tuple[int, str, float, float | None]] = []
        self._solo_tokens = itertools.count(1)

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
        self._solo.append((token, name, time.monotonic(), up_to_s))
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
        if self.store is not None and not self._final and not self._store_failing:
            self._state = "exited"
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
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d

        original = c10d.destroy_process_group
        watcher = self

        @functools.wraps(original)
        def destroy_process_group(group: Any = None, *args: Any, **kwargs: Any) -> Any:
            if group is None or group is getattr(c10d.GroupMember, "WORLD", None):
                watcher.stop()
            return original(group, *args, **kwargs)

        for owner in (c10d, dist):
            if getattr(owner, "destroy_process_group", None) is original:
                owner.destroy_process_group = destroy_process_group
                self._undo.append(functools.partial(setattr, owner, "destroy_process_group", original))
        self._undo.append(install_p2p(self.p2p))
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            handle = register_optimizer_step_post_hook(self._on_optimizer_step)
            self._undo.append(handle.remove)
        except ImportError:  # pragma: no cover - very old torch: explicit step() only
            pass
        previous_hook = sys.excepthook

        def excepthook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
            if watcher._abort_code is not None:  # fail-fast is ending this rank: a peer left first
                os._exit(watcher._abort_code)
            with contextlib.suppress(Exception):
                watcher._on_fatal(exc_type, exc)
            previous_hook(exc_type, exc, tb)
            if watcher._sigterm_pending:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)

        sys.excepthook = excepthook

        def restore_excepthook() -> None:
            if sys.excepthook is excepthook:
                sys.excepthook = previous_hook

        self._undo.append(restore_excepthook)

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
        self._marks.append((time.monotonic(), step, raw))

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

    def _sample(self, c10d: Any) -> None:
        source = self.source
        if source is None:
            source = self.source = FlightRecorderSource(self.directory, p2p=self.p2p)
        if not isinstance(source, FlightRecorderSource):
            self.directory.refresh()  # the Flight Recorder's readings refresh it themselves
        self.p2p.poll()
        readings = source.readings()
        now = time.monotonic()
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
            self._check_flight_recorder(c10d, readings)

    def _sample_now(self) -> None:
        """One synchronous progress reading (for final records); never raises."""
        try:
            from torch.distributed import distributed_c10d as c10d

            if c10d.is_initialized():
                self._sample(c10d)
        except Exception:
            pass

    def _entered_from(self, raw: Any) -> dict[str, int]:
        """A step mark's ``{group: entered}`` from what the training thread read (see :meth:`_mark`)."""
        if raw is None:
            return self.sampler.entered()
        source = self.source
        if isinstance(raw, dict):
            return source.collective_counts(raw) if isinstance(source, FlightRecorderSource) else raw
        if not isinstance(source, FlightRecorderSource):
            return self.sampler.entered()
        return {name: entered for name, (entered, _completed) in source.parse(raw).items()}

    def _check_flight_recorder(self, c10d: Any, readings: dict[str, tuple[int, int]]) -> None:
        """If collectives happen but the Flight Recorder shows none, its buffer is off: use hooks."""
        if readings:
            self._empty_fr_samples = 0
            return
        self._empty_fr_samples += 1
        if self._empty_fr_samples < 40:
            return
        self._empty_fr_samples = 0
        try:
            default = c10d._get_default_group()
            # gloo counts point-to-point calls too, and records none of them
            issued = int(default._get_sequence_number_for_group()) - self.p2p.p2p_ops(str(default.group_name))
        except Exception:
            return
        if issued > 0 and self.config.recorder == "auto":
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

    def _attach(self) -> bool:
        import torch.distributed as dist

        from syncdoctor.watch.store import job_root_store, own_client

        if not dist.is_initialized():
            return False
        me = identity(dist.get_rank(), dist.get_world_size())
        root = job_root_store()
        store = ScopedStore(own_client(root, self.config.store_timeout_s))
        keys = JobKeys(self.config.prefix, me.attempt)
        store.set(keys.pointer, str(me.attempt))
        meta = {"world_size": me.world_size, "interval_s": self.config.interval_s, "monitor": self.config.monitor,
                "warn_after_s": self.config.warn_after_s, "confirm_after_s": self.config.confirm_after_s,
                "dead_after_s": self.config.dead_after_s}
        store.set(keys.meta, json.dumps(meta))
        self._ctl_gen = store.add(keys.ctl_gen, 0)
        self.identity, self.keys, self.store = me, keys, store
        self._state = "running"
        monitor_rank = {"auto": 0, "off": -1}.get(self.config.monitor)
        if monitor_rank is None:
            monitor_rank = int(self.config.monitor)
        if me.rank == monitor_rank:
            self._start_monitor(root)
        return True

    def _start_monitor(self, root: Any) -> None:
        from syncdoctor.watch.store import own_client

        assert self.identity is not None and self.keys is not None
        me = self.identity
        store = ScopedStore(own_client(root, self.config.store_timeout_s)) if root is not None else self.store
        assert store is not None
        monitor = Monitor(
            store, self.keys, self.config, me.world_size, self._sinks(store), who=f"rank {me.rank} ({me.host}, pid {me.pid})",
            on_confirmed=self._on_confirmed,
        )
        self._undo.append(attach_from_environment(self, monitor))  # opt-in: SYNCDOCTOR_METRICS_PORT
        self.monitor = MonitorThread(monitor, self.config.interval_s, self.config.nice)
        self.monitor.start()

    def _sinks(self, store: ScopedStore) -> list[Sink]:
        assert self.keys is not None and self.identity is not None
        sinks: list[Sink] = [LogSink(), StoreSink(store, self.keys)]
        if self.config.events_file:
            path = self.config.events_file.replace("{rank}", str(self.identity.rank))
            problem = output_problem(path)
            if problem is None:
                sinks.append(JsonlSink(path))
            else:  # never fail the training for it: say so once, keep the other sinks
                logger.warning("syncdoctor.watch: SYNCDOCTOR_WATCH_EVENTS_FILE %s: cannot write there (%s); events "
                               "go to the log and the store only", path, problem)
        return sinks

    def _record(self) -> RankRecord:
        assert self.identity is not None
        me, now = self.identity, time.monotonic()
        for pid in list(self._inspect):
            self._inspect[pid] = process_state(pid)
        activity = None
        try:
            self.activity.sample(now)
            quiet = self.sampler.quiet_s(now)
            # what it has done since its collectives and steps last moved: before that it was training
            activity = None if quiet is None else self.activity.current(since=now - quiet)
        except Exception as exc:  # a measurement that fails must not stop the record: say it once
            if not self._activity_failing:
                self._activity_failing = True
                logger.warning("syncdoctor.watch: cannot measure the main thread's activity: %s", exc)
        solo = None
        phases = list(self._solo)
        if phases:
            _token, name, started, up_to = phases[-1]
            solo = Solo(name, now - started, up_to)
        return RankRecord(
            rank=me.rank, world_size=me.world_size, host=me.host, node=me.node, pid=me.pid, local_rank=me.local_rank,
            attempt=me.attempt, heartbeat=self._heartbeat, state=self._state,
            source=getattr(self.source, "name", ""), step=self.sampler.step, step_age_s=self.sampler.step_age_s(now),
            quiet_s=self.sampler.quiet_s(now), groups=self.sampler.progress(now), step_marks=self.sampler.marks(),
            waits=self.sampler.waits(), stack_gen=self._stack_gen, ack=self._ack, error=self._error,
            fail_order=self._fail_order, inspected=dict(self._inspect), published=time.time(),
            waits_total=self.sampler.waits_total(), p2p=self.p2p.progress(now), activity=activity, solo=solo,
        )

    def _publish(self, final: bool = False) -> None:
        with self._publish_lock:
            if self._final or self.store is None or self.keys is None:
                return
            self._heartbeat += 1
            for name in self.directory.names:
                if name not in self._published_groups:
                    self.store.set(self.keys.group(name), format_ranks(self.directory.members[name]))
                    self._published_groups.add(name)
            self.store.set(self.keys.rank(self.identity.rank), encode_record(self._record()))  # type: ignore[union-attr]
            if final:
                self._final = True

    def _poll_control(self) -> None:
        assert self.store is not None and self.keys is not None and self.identity is not None
        gen = self.store.add(self.keys.ctl_gen, 0)
        if gen == self._ctl_gen:
            return
        self._ctl_gen = gen
        try:
            message = json.loads(self.store.get(self.keys.ctl_msg))
        except ValueError:
            return
        me = self.identity
        republish = False
        wanted = int((message.get("stacks") or {}).get(str(me.rank), 0))
        if wanted > self._stack_gen and self.config.stacks:
            report = capture_stack(me.rank, wanted, self._main_ident)
            self.store.set(self.keys.stack(me.rank), encode_stack(report))
            self._stack_gen = wanted
            republish = True
        for pid_text, host_key in (message.get("inspect") or {}).items():
            if host_key == me.host_key and int(pid_text) != me.pid and int(pid_text) not in self._inspect:
                self._inspect[int(pid_text)] = process_state(int(pid_text))
                republish = True
        dump = int(message.get("dump") or 0)
        if dump > self._dump_gen:
            self._dump_gen = dump
            self._write_flight_recorder_dump()
        self._ack = gen
        abort = message.get("abort")
        if abort and not (self.monitor is not None and self.monitor.alive):
            self._abort(int(abort.get("code", self.config.exit_code)), str(abort.get("reason", "")),
                        int(abort.get("expected", 1)))
        if republish:
            self._publish()

    def _watch_lease(self) -> None:
        """auto mode: ranks 1..7 take the monitor over when its lease stops beating (agent store only)."""
        me = self.identity
        if self.config.monitor != "auto" or me is None or not 1 <= me.rank <= 7 or self.monitor is not None:
            return
        assert self.store is not None and self.keys is not None
        raw = self.store.get_optional(self.keys.monitor)
        if raw is None:
            return
        now = time.monotonic()
        if self._lease_seen is None or self._lease_seen[0] != raw:
            self._lease_seen = (raw, now)
            return
        patience = self.config.dead_s + (me.rank - 1) * 2 * self.config.interval_s
        if now - self._lease_seen[1] < patience:
            return
        mine = json.dumps({"who": f"rank {me.rank} ({me.host}, pid {me.pid})", "beat": 0}).encode()
        if self.store.compare_set(self.keys.monitor, raw, mine) == mine:
            logger.warning("syncdoctor.watch: the monitor stopped beating; rank %d takes over", me.rank)
            from syncdoctor.watch.store import job_root_store

            self._start_monitor(job_root_store())

    def _write_flight_recorder_dump(self) -> None:
        assert self.identity is not None
        prefix = (
            os.environ.get("TORCH_FR_DUMP_TEMP_FILE")
            or os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
            or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "torch",
                            "comm_lib_trace_rank_")
        )
        rank = self.identity.rank
        # NCCL groups have their own recorder: its dump goes where PyTorch writes its own on a timeout, the
        # other backends' beside it when both hold groups (the rank stays the trailing number of the name)
        recorders = self.directory.recorders or {OTHER}
        wanted = [("_dump_nccl_trace", f"{prefix}{rank}")] if NCCL in recorders else []
        if OTHER in recorders:
            wanted.append(("_dump_fr_trace", f"{prefix}gloo_{rank}" if wanted else f"{prefix}{rank}"))
        try:
            import torch._C._distributed_c10d as c10d_ext

            for function, path in wanted:
                data = getattr(c10d_ext, function)()
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(data)
                logger.warning("syncdoctor.watch: Flight Recorder dump of rank %d written to %s", rank, path)
        except Exception as exc:
            logger.warning("syncdoctor.watch: cannot write the Flight Recorder dump: %s", exc)

    # --- fail-fast -------------------------------------------------------------------------------------
    def _on_confirmed(self, event: Event) -> None:
        """Monitor thread: a confirmed hang. With fail-fast, end every reachable rank, this one included."""
        if not self.config.fail_fast or self._aborting or self.monitor is None:
            return
        self._aborting = True
        monitor = self.monitor.monitor
        alive = [r for r, rec in monitor.records.items() if rec.state in ("running", "starting", "aborting")
                 and r in monitor.state.seen and monitor.clock() - monitor.state.seen[r].changed_at < self.config.dead_s]
        expected = max(len(set(alive) | {self.identity.rank if self.identity else 0}), 1)
        monitor.request_abort(self.config.exit_code, event.line(), expected)
        self._abort(self.config.exit_code, event.line(), expected)

    def _abort(self, code: int, reason: str, expected: int = 1) -> None:
        """Count this rank out, wait (bounded) until the other reachable ranks did too, then exit."""
        self._abort_code = code
        logger.error("syncdoctor.watch: fail-fast: ending this rank with exit code %d: %s", code, reason)
        self._state = "aborting"
        self._sample_now()
        with contextlib.suppress(Exception):
            self._publish(final=True)
        deadline = time.monotonic() + 2 * self.config.interval_s + 2.0
        try:
            assert self.store is not None and self.keys is not None
            count = self.store.add(self.keys.aborted, 1)
            while count < expected and time.monotonic() < deadline:
                time.sleep(0.05)
                count = self.store.add(self.keys.aborted, 0)
            if self.identity is not None and self.identity.rank == 0:
                time.sleep(0.3)  # rank 0 may serve the store: let the others read the count first
        except Exception:  # the store left first: everyone has read the order by then
            pass
        for handler in logging.getLogger().handlers + logger.handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    # --- dying of an exception -------------------------------------------------------------------------
    def _on_fatal(self, exc_type: type[BaseException], exc: BaseException) -> None:
        if self.store is None or self.keys is None or self._final or self.stopped:
            return
        text = f"{exc_type.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".strip()
        self._state, self._error = "failed", text[:400]
        self._sample_now()
        try:
            self._fail_order = self.store.add(self.keys.fail, 1)
        except Exception:
            self._fail_order = None
        self._stop.set()
        self._publish(final=True)
        if self._fail_order == 1 and self.config.exit_linger_s > 0 and exc_type is not KeyboardInterrupt:
            self._linger()

    def _linger(self) -> None:
        """The first rank to fail watches the others briefly and names the one that died first.

        A rank is taken as vanished when its heartbeat stops for 1.5 intervals without a goodbye, or at
        once when it runs on this host and its process is gone. If the store goes away meanwhile (its
        host's agent ends the job), the diagnosis uses the last records read.
        """
        assert self.store is not None and self.keys is not None and self.identity is not None
        deferred = False
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._defer_sigterm)
            deferred = True
        try:
            me = self.identity
            world = me.world_size
            keys = [self.keys.rank(r) for r in range(world)]
            started = time.monotonic()
            deadline = started + self.config.exit_linger_s
            settle = min(self.config.exit_linger_s, 1.5 * self.config.interval_s + 0.3)
            seen: dict[int, tuple[int, float]] = {}
            records: dict[int, RankRecord] = {}
            silent: set[int] = set()
            store_ok = True
            while True:
                now = time.monotonic()
                try:
                    raws = self.store.multi_get(keys) if records else [self.store.ensure(k) for k in keys]
                except Exception:
                    store_ok = False
                    raws = []
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
                if not store_ok or (now - started >= settle and len(silent) == len(running)) or now >= deadline:
                    break
                if running and silent and len(silent) == len(running) and all(
                    records[r].host_key == me.host_key for r in silent
                ):
                    break  # every silent rank is a dead process on this host: no need to wait
                time.sleep(0.2)
            reported = self._reported() if store_ok else []
            events = diagnose_failure(records, silent, world, wall=time.time(), reported=reported)
            sinks: list[Sink] = [LogSink()]
            if store_ok:
                sinks.append(StoreSink(self.store, self.keys))
            if self.config.events_file:
                sinks.append(JsonlSink(self.config.events_file.replace("{rank}", str(me.rank))))
            for event in events:
                for sink in sinks:
                    sink.emit(event)
        finally:
            if deferred:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def _reported(self) -> list[dict[str, Any]]:
        """Events the job's monitor published and did not resolve."""
        from syncdoctor.watch.sinks import read_store_events

        assert self.store is not None and self.keys is not None
        try:
            _count, events = read_store_events(self.store, self.keys, 0)
        except Exception:
            return []
        resolved = {e.get("key") for e in events if e.get("status") == "resolved"}
        return [e for e in events if e.get("status") != "resolved" and e.get("key") not in resolved
                and not (e.get("detail") or {}).get("postmortem")]

    def _defer_sigterm(self, signum: int, frame: Any) -> None:
        self._sigterm_pending = True


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__
