"""The watcher's settings: one dataclass, layered defaults < ``SYNCDOCTOR_WATCH_*`` environment < arguments.

Pure: reads only the mapping it is given (``os.environ`` by default). Every field is documented with its
type, unit and default; the environment variable of a field is ``SYNCDOCTOR_WATCH_`` + the field name in
upper case without its unit suffix (``warn_after_s`` -> ``SYNCDOCTOR_WATCH_WARN_AFTER``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from syncdoctor.errors import UsageError

__all__ = ["AGGREGATE_FROM_RANKS", "AUTO", "ENV_PREFIX", "EXIT_HANG", "WatchConfig", "env_name"]

ENV_PREFIX = "SYNCDOCTOR_WATCH_"
AUTO = "auto"  # warn_after_s / confirm_after_s learned from the job (syncdoctor.watch.thresholds)
EXIT_HANG = 75  # EX_TEMPFAIL: "try again later"; the default fail-fast exit code

_RECORDERS = ("auto", "flight_recorder", "hooks")
_SWITCH = {"auto": "auto", "on": "on", "off": "off", "1": "on", "0": "off", "true": "on", "false": "off",
           "yes": "on", "no": "off"}
AGGREGATE_FROM_RANKS = 256  # node_aggregation="auto": from this many ranks on


@dataclass(frozen=True)
class WatchConfig:
    """Settings of :func:`syncdoctor.watch.start`, the monitor and ``syncdoctor watch``.

    Attributes:
        enabled: [bool] ``False`` turns ``start()`` into a no-op. Default ``True``.
        interval_s: [float, seconds] how often each rank publishes its record and the monitor reads all
            records. Default 1.0.
        sample_interval_s: [float, seconds] how often each rank reads its own collective progress (the
            Flight Recorder status read costs about 5 µs, a wake-up of the thread much more); sets the
            resolution of arrival times. Default 0.1.
        warn_after_s: [float, seconds, or ``auto``] how long part of a group may wait in a collective for the
            rest, or a whole group may sit in one collective, before an event is raised. ``auto``: learned
            from the job's own step times and waits after a warm-up (:mod:`syncdoctor.watch.thresholds`;
            the monitor reports the values in force in every event and in ``syncdoctor watch``). Default
            ``auto`` (measured against a constant 10 s in docs/performance.md, "Auto thresholds").
        suspect_after_s: [float, seconds] when a wait gets this long, the waiting ranks record the
            signature (op, sizes, dtypes) of the collective they wait in and the monitor asks late ranks for
            their Python stack, so both are known when ``warn_after_s`` is reached. Capped at half of
            ``warn_after_s``. Default 2.
        confirm_after_s: [float, seconds, or ``auto``] a late rank or a transport hang that lasts this long is
            "confirmed" (desyncs, dead ranks and ranks that exited are confirmed as soon as they are seen):
            confirmed events trigger fail-fast and the Flight Recorder dump. ``auto``: learned, as above.
            Default ``auto`` (60 s while warming up).
        busy_after_s: [float, seconds] how long the others may wait for a rank that is working alone (its
            stack changes or it moves bytes: a checkpoint, an evaluation, data preparation) or is in a solo
            phase (marked with :func:`syncdoctor.watch.solo` without ``up_to_s``, or recognised on its stack:
            ``torch.save``, ``torch.distributed.checkpoint``…) before it counts as late. Until then the wait is
            an info event (W110), never confirmed, so fail-fast leaves it alone; past it, a late rank
            (W101), confirmed ``confirm_after_s - warn_after_s`` later. Default 1800.
        dead_after_s: [float, seconds] a rank whose record has not changed for this long is reported dead
            (killed, frozen, its host cut off, or its process holding the GIL). At least 3 intervals.
            Default 10.
        monitor: [str] where the monitor thread runs: ``auto`` (rank 0, or the lowest rank still reporting
            if the monitor stops), a rank number, or ``off`` (use ``syncdoctor watch`` from outside).
            Default ``auto``.
        fail_fast: [bool] once a hang is confirmed, log the diagnosis and end every rank that can still be
            reached with ``exit_code`` so a scheduler can requeue the job without the bad node. Default off.
        exit_code: [int] the exit code of fail-fast. Default 75 (EX_TEMPFAIL).
        events_file: [str or None] append every event as one JSON line to this file (written by the
            monitor only; ``{rank}`` in the name is replaced by the monitor's rank). Default none.
        flight_recorder_dump: [bool] on a confirmed hang, ask every rank to write PyTorch's Flight Recorder
            dump (pickle, the file ``torchfrtrace`` reads) to ``TORCH_FR_DUMP_TEMP_FILE<rank>``. Default off.
        recorder: [str] ``auto`` (Flight Recorder status when the torch build offers it, else hooks),
            ``flight_recorder``, or ``hooks`` (patched ``torch.distributed`` collectives and a DDP comm
            hook). Default ``auto``.
        prefix: [str] private key prefix in the job's c10d store. Default ``syncdoctor/v1``.
        store_timeout_s: [float, seconds] timeout of the watcher's own store connection. Default 5.
        stacks: [bool] capture a late rank's Python stack on request. Default ``True``.
        native_stacks: [bool] when that stack ends in a call into native code (a NCCL or gloo wait, a CUDA
            synchronize, I/O), also take the native stack with ``py-spy dump --native`` where py-spy is
            installed (``syncdoctor[stacks]``) and ptrace is permitted (the event says why not otherwise;
            :mod:`syncdoctor.watch.native`). py-spy pauses the rank for tens of milliseconds. Default ``True``.
        node_aggregation: [str] ``auto``, ``on`` or ``off``. On: the ranks of a node hand their records to one
            of them (the node's leader, with a takeover when it dies) over files in a node-local tmpfs
            directory, and it publishes one value per node and polls the control message for them: the job's
            store then serves requests per node, not per rank (:mod:`syncdoctor.watch.node`); records reach
            the monitor up to half an interval later. Off, or with one rank per node (``LOCAL_WORLD_SIZE=1``):
            each rank publishes its own record. ``auto``: on from :data:`AGGREGATE_FROM_RANKS` ranks, where
            the store's load starts to matter (below, two requests per rank and second cost it nothing
            measurable and the lowest latency wins). Default ``auto``.
        node_dir: [str or None] where the node directories go. Default: ``/dev/shm`` when writable, else the
            temporary directory.
        straggler_window_s: [float, seconds] sliding window of the chronic-straggler statistics.
            Default 120.
        straggler_min_events: [int] collectives with a measurable wait needed in the window before a rank
            can be called a chronic straggler. Default 10.
        straggler_min_share: [float, 0..1] share of those collectives the same rank must have arrived last
            at. Default 0.5.
        straggler_min_wait_s: [float, seconds] waits shorter than this are not counted. Default 0.1.
        exit_linger_s: [float, seconds] when the first rank to fail dies of an exception, it waits up to this
            long (deferring SIGTERM) to see which ranks vanished without an error and name the one that
            died first. 0 disables. Default 2.5.
        nice: [int, 0..19] added to the nice value of the watcher's own threads (Linux applies it per
            thread, so training keeps its priority): where cores are fewer than busy threads, the watcher
            then runs in training's idle moments instead of taking its time slices. 0 leaves them as
            they are. Default 0: at 10 the overhead benchmark measured no gain, and on a machine
            saturated by other work a lowered thread that holds the GIL while descheduled also stalls
            the training thread (lab detection-timing tests failed 2 of 5 runs under a CPU burner with
            10, none of 4 with 0).
    """

    enabled: bool = True
    interval_s: float = 1.0
    sample_interval_s: float = 0.1
    warn_after_s: float | str = "auto"
    suspect_after_s: float = 2.0
    confirm_after_s: float | str = "auto"
    busy_after_s: float = 1800.0
    dead_after_s: float = 10.0
    monitor: str = "auto"
    fail_fast: bool = False
    exit_code: int = EXIT_HANG
    events_file: str | None = None
    flight_recorder_dump: bool = False
    recorder: str = "auto"
    prefix: str = "syncdoctor/v1"
    store_timeout_s: float = 5.0
    stacks: bool = True
    native_stacks: bool = True
    node_aggregation: str = "auto"
    node_dir: str | None = None
    straggler_window_s: float = 120.0
    straggler_min_events: int = 10
    straggler_min_share: float = 0.5
    straggler_min_wait_s: float = 0.1
    exit_linger_s: float = 2.5
    nice: int = 0

    def __post_init__(self) -> None:
        switch = self.node_aggregation  # True/False and 1/0, yes/no, true/false are on/off
        if isinstance(switch, bool) or str(switch).strip().lower() in _SWITCH:
            key = ("on" if switch else "off") if isinstance(switch, bool) else str(switch).strip().lower()
            object.__setattr__(self, "node_aggregation", _SWITCH.get(key, key))
        for spec in fields(self):
            problem = _problem(spec.name, getattr(self, spec.name))
            if problem:
                raise UsageError(f"watch setting {spec.name} {problem}")

    # Derived values used by the detector: the documented caps applied.
    @property
    def auto_warn(self) -> bool:
        return self.warn_after_s == AUTO

    @property
    def auto_confirm(self) -> bool:
        return self.confirm_after_s == AUTO

    @property
    def warn_s(self) -> float:
        """``warn_after_s`` as a number (``auto``: the value :meth:`resolved` puts in force)."""
        value = self.warn_after_s
        return float(value) if not isinstance(value, str) else float(self.resolved().warn_after_s)

    @property
    def confirm_s(self) -> float:
        """``confirm_after_s`` as a number (``auto``: the value :meth:`resolved` puts in force)."""
        value = self.confirm_after_s
        return float(value) if not isinstance(value, str) else float(self.resolved().confirm_after_s)

    @property
    def suspect_s(self) -> float:
        from syncdoctor.watch.thresholds import AUTO_WARN_MIN_S

        warn = AUTO_WARN_MIN_S if self.auto_warn else float(self.warn_after_s)
        return min(self.suspect_after_s, warn / 2)

    def resolved(self) -> WatchConfig:
        """Numbers for what is ``auto``: the values in force before anything is learned (the monitor learns
        them; a detector given this configuration directly uses these)."""
        if not (self.auto_warn or self.auto_confirm):
            return self
        from syncdoctor.watch.thresholds import AUTO_CONFIRM_START_S

        warn = AUTO_CONFIRM_START_S if self.auto_warn else float(self.warn_after_s)
        confirm = AUTO_CONFIRM_START_S if self.auto_confirm else float(self.confirm_after_s)
        return self.with_thresholds(warn, max(confirm, warn))

    def with_thresholds(self, warn_s: float, confirm_s: float) -> WatchConfig:
        """This configuration with these thresholds in force (what the detector gets when they are learned)."""
        return dataclasses.replace(self, warn_after_s=warn_s, confirm_after_s=confirm_s)

    @property
    def dead_s(self) -> float:
        return max(self.dead_after_s, 3 * self.interval_s)

    @property
    def monitor_rank(self) -> int:
        """The rank that runs the monitor at start (``auto``: rank 0; ``off``: none, -1)."""
        rank = {"auto": 0, "off": -1}.get(self.monitor)
        return int(self.monitor) if rank is None else rank

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> WatchConfig:
        """Defaults, then ``SYNCDOCTOR_WATCH_*`` from ``env`` (``os.environ`` when None), then ``overrides``."""
        env = os.environ if env is None else env
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, spec in known.items():
            raw = env.get(env_name(name))
            if raw is not None and raw.strip() != "":
                value = _parse(name, spec.type, raw.strip())
                problem = _problem(name, value)
                if problem:  # name what the user typed: the variable and its value
                    raise UsageError(f"{env_name(name)}={raw.strip()!r}: {problem}")
                values[name] = value
        for name, value in overrides.items():
            if name not in known:
                raise UsageError(f"unknown watch setting {name!r}; known: {', '.join(sorted(known))}")
            if value is not None:  # None means "not given": the environment or the default stays
                values[name] = _parse(name, known[name].type, value) if isinstance(value, str) else value
                problem = _problem(name, values[name])
                if problem:
                    raise UsageError(f"watch setting {name}={value!r} (an argument of start()): {problem}")
        return cls(**values)

    def aggregates(self, world_size: int) -> bool:
        """Whether a job of ``world_size`` ranks publishes through node leaders (``node_aggregation``)."""
        return self.node_aggregation == "on" or (self.node_aggregation == "auto" and world_size >= AGGREGATE_FROM_RANKS)

    def replace(self, **changes: Any) -> WatchConfig:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_POSITIVE = ("interval_s", "sample_interval_s", "warn_after_s", "store_timeout_s")
_NON_NEGATIVE = ("suspect_after_s", "confirm_after_s", "busy_after_s", "dead_after_s", "exit_linger_s",
                 "straggler_window_s", "straggler_min_wait_s")


def _problem(name: str, value: Any) -> str | None:
    """What is wrong with ``value`` for the setting ``name`` ("must be > 0, got -1"), or None."""
    if name in ("warn_after_s", "confirm_after_s") and isinstance(value, str):
        return None if value == AUTO else f"must be a number of seconds or 'auto', got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if name in _POSITIVE and not value > 0:
        return f"must be > 0, got {value!r}"
    if name in _NON_NEGATIVE and value < 0:
        return f"must be >= 0, got {value!r}"
    if name == "node_aggregation" and value not in ("auto", "on", "off"):
        return f"must be auto, on or off, got {value!r}"
    if name == "recorder" and value not in _RECORDERS:
        return f"must be one of {', '.join(_RECORDERS)}, got {value!r}"
    if name == "monitor" and value not in ("auto", "off") and not str(value).isdecimal():
        return f"must be auto, off or a rank number, got {value!r}"
    if name == "straggler_min_share" and not 0 < value <= 1:
        return f"must be in (0, 1], got {value!r}"
    if name == "nice" and not 0 <= value <= 19:
        return f"must be in 0..19, got {value!r}"
    if name == "exit_code" and not 0 <= value <= 255:
        return f"must be in 0..255, got {value!r}"
    if name == "prefix" and (not value or value.startswith("/") or value.endswith("/")):
        return f"must be a non-empty key without leading/trailing '/', got {value!r}"
    return None


def env_name(field_name: str) -> str:
    base = field_name[:-2] if field_name.endswith("_s") else field_name
    return ENV_PREFIX + base.upper()


def _parse(name: str, type_text: Any, raw: str) -> Any:
    text = str(type_text)
    if name == "node_aggregation":
        return _SWITCH.get(raw.strip().lower(), raw)
    if "| str" in text and text.startswith("float") and raw.strip().lower() == AUTO:
        return AUTO
    try:
        if text.startswith("bool"):
            lowered = raw.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if text.startswith("float"):
            return float(raw)
        if text.startswith("int"):
            return int(raw)
    except ValueError:
        raise UsageError(f"{env_name(name)}={raw!r} is not a valid {text.split(' ')[0]}") from None
    if text.startswith("str | None") and raw.lower() in ("", "none"):
        return None
    return raw
