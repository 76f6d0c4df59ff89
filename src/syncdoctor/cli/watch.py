"""``syncdoctor watch --master HOST:PORT``: watch a running job from outside, as a non-rank store client.

It connects to the job's c10d store (torchrun's MASTER_ADDR:MASTER_PORT) without registering as a
worker, finds the records the ranks publish (``syncdoctor.watch.start()`` in the training script), and
shows a live table (ranks x process groups: sequence numbers entered/completed, how long each rank has
been stalled, heartbeat age, state) with the events below it. When a monitor already runs inside the job
it shows that monitor's events; otherwise it runs the detector itself and asks the ranks for stacks.

``--json`` prints one JSON object per event instead (a stream for other tools); ``--once`` prints one
table and exits; ``--duration S`` stops after S seconds. Exit codes: 0 after watching (Ctrl-C, the job
ended, or the duration elapsed), 1 with ``--once`` when error events were seen, 2 usage, 3 the store
cannot be reached or nothing is published there.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from syncdoctor.cli import EXIT_FINDINGS, EXIT_OK, finite
from syncdoctor.cli.exclusion import add_history_options
from syncdoctor.errors import StoreError, UsageError

__all__ = ["build_table", "register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="watch a running job from outside: ranks, progress, late/dead/desynchronised ranks",
        description="Connect to a running job's c10d store (its MASTER_ADDR:MASTER_PORT) and show what "
        "syncdoctor.watch.start() publishes in the job: per rank and process group, the collective sequence "
        "numbers entered and completed, stalls and heartbeats, and events naming late, dead or "
        "desynchronised ranks.",
    )
    parser.add_argument("--master", required=True, metavar="HOST:PORT", help="the job's MASTER_ADDR:MASTER_PORT")
    parser.add_argument("--json", action="store_true", help="print events as JSON lines instead of the live table")
    parser.add_argument("--prefix", default=None, help="key prefix the job's watchers use (default syncdoctor/v1)")
    parser.add_argument("--interval", type=finite, default=None, metavar="SECONDS",
                        help="refresh interval (default: the job's publishing interval)")
    parser.add_argument("--once", action="store_true", help="print one table and exit")
    parser.add_argument("--duration", type=finite, default=None, metavar="SECONDS", help="stop after this long")
    parser.add_argument("--wait", type=finite, default=30.0, metavar="SECONDS",
                        help="how long to wait for the job's ranks to publish (default 30)")
    parser.add_argument("--warn-after", type=_warn_after, default=None, metavar="SECONDS",
                        help="warning threshold when this command runs the detector, or 'auto' to learn it from "
                             "the job (default: the job's)")
    parser.add_argument("--stacks", action="store_true",
                        help="print the late ranks' stacks under each event: Python, and native (py-spy --native, "
                             "taken by the rank's own watcher) when it sits in a call into C++")
    add_history_options(parser)
    parser.set_defaults(func=run)


def build_table(monitor: Any, now: float) -> Table:
    """Ranks x groups: ``entered/completed`` per group, stall seconds, heartbeat age, state."""
    records = monitor.records
    groups = sorted({name for rec in records.values() for name in rec.groups}, key=lambda n: (len(n), n))
    thresholds = monitor.thresholds
    caption = (f"warn after {thresholds.warn_s:.3g} s, confirm after {thresholds.confirm_s:.3g} s"
               + (f" ({thresholds.how})" if thresholds.how != "set" else ""))
    table = Table(title=f"{len(records)}/{monitor.world_size} ranks reporting", caption=caption, expand=False)
    for column in ("rank", "host", "pid", "state", "step"):
        table.add_column(column, justify="right" if column in ("rank", "pid", "step") else "left")
    for name in groups:
        table.add_column(f"group {name}", justify="right")
    table.add_column("stalled", justify="right")
    table.add_column("heard", justify="right")
    seen = monitor.state.seen
    for rank in range(monitor.world_size):
        rec = records.get(rank)
        if rec is None:
            table.add_row(str(rank), "?", "", "not reporting", "", *([""] * len(groups)), "", "")
            continue
        stalled = max((p.stalled_s or 0.0 for p in rec.groups.values()), default=0.0)
        cells = []
        for name in groups:
            progress = rec.groups.get(name)
            cells.append("" if progress is None else f"{progress.entered}/{progress.completed}")
        age = now - seen[rank].changed_at if rank in seen else 0.0
        state = rec.state if age < monitor.config.dead_s or rec.state not in ("running", "starting") else "silent"
        table.add_row(
            str(rank), rec.where, str(rec.pid), state, "" if rec.step is None else str(rec.step), *cells,
            f"{stalled:.1f}s" if stalled else "", f"{age:.0f}s ago",
        )
    return table


def _event_text(data: dict[str, Any], stacks: bool = False) -> Text:
    style = {"confirmed": "bold red", "warning": "yellow", "resolved": "green"}.get(str(data.get("status")), "")
    text = Text(f"{data.get('code')} {data.get('kind')} {data.get('status')}: {data.get('title')}", style=style)
    if stacks:
        text.append(_stacks_text(data))
    return text


def _stacks_text(data: dict[str, Any]) -> str:
    """The late ranks' Python stacks (innermost last) and native stacks (innermost first), indented."""
    detail = data.get("detail")
    late = detail.get("late") if isinstance(detail, dict) else None
    lines: list[str] = []
    for rank, info in sorted(late.items()) if isinstance(late, dict) else ():
        if not isinstance(info, dict):
            continue
        python, native = info.get("stack") or [], info.get("native_stack") or []
        if python:
            lines.append(f"  rank {rank} Python stack (innermost last):")
            lines += [f"    {frame}" for frame in python]
        elif info.get("stack_note"):
            lines.append(f"  rank {rank} stack: {info['stack_note']}")
        if native:
            lines.append(f"  rank {rank} native stack (innermost first):")
            lines += [f"    {frame}" for frame in native]
        elif info.get("native_note"):
            lines.append(f"  rank {rank} native stack: {info['native_note']}")
    return "".join("\n" + line for line in lines)


def run(args: argparse.Namespace, console: Console, *, clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep) -> int:
    """The command; ``clock`` and ``sleep`` are the time it waits and watches in (tests pass fake ones)."""
    from syncdoctor.history import resolve_path
    from syncdoctor.watch.config import WatchConfig
    from syncdoctor.watch.keys import JobKeys
    from syncdoctor.watch.monitor import Monitor
    from syncdoctor.watch.sinks import CallbackSink, HistorySink, close_sinks, job_run_id, read_store_events
    from syncdoctor.watch.store import connect, parse_master, read_attempt, read_meta

    host, port = parse_master(args.master)
    if args.interval is not None and args.interval <= 0:
        raise UsageError("--interval must be > 0")
    base = WatchConfig.load(prefix=args.prefix)
    store = connect(host, port, timeout_s=min(max(args.wait, 1.0), max(base.store_timeout_s, 5.0)))
    deadline = clock() + max(args.wait, 0.0)
    attempt = read_attempt(store, base.prefix)
    while attempt is None and clock() < deadline:
        sleep(0.5)
        attempt = read_attempt(store, base.prefix)
    if attempt is None:
        raise StoreError(f"no syncdoctor.watch records under {base.prefix!r} at {host}:{port}: is "
                         "syncdoctor.watch.start() called in the training script, with the same prefix?")
    keys = JobKeys(base.prefix, attempt)
    meta = read_meta(store, keys) or {}
    world = int(meta.get("world_size") or 0)
    if world <= 0:
        raise StoreError(f"the job's watch metadata at {host}:{port} is missing or unreadable")
    config = base.replace(
        interval_s=args.interval or float(meta.get("interval_s") or base.interval_s),
        warn_after_s=args.warn_after or _seconds_or_auto(meta.get("warn_after_s") or base.warn_after_s),
        confirm_after_s=_seconds_or_auto(meta.get("confirm_after_s") or base.confirm_after_s),
        dead_after_s=float(meta.get("dead_after_s") or base.dead_after_s),
    )
    printed: list[dict[str, Any]] = []

    def show(data: dict[str, Any]) -> None:
        printed.append(data)
        if args.json:
            console.print(json.dumps(data, separators=(",", ":"), sort_keys=True), markup=False, highlight=False,
                          soft_wrap=True)
        elif not live_mode:
            console.print(_event_text(data, args.stacks), soft_wrap=True)

    live_mode = console.is_terminal and not args.json and not args.once
    in_job = str(meta.get("monitor", "auto")) != "off" or _monitor_active(store, keys, config, sleep)
    # with a monitor in the job, show its events (with the stacks it asked for) rather than our own
    sinks: list[Any] = [] if in_job else [CallbackSink(lambda event: show(event.to_json()))]
    history = None if in_job else resolve_path(args.history, args.no_history)  # the job's monitor records its own
    if history is not None:
        sinks.append(HistorySink(history, job_run_id({}, attempt, f"{host}:{port}")))
    monitor = Monitor(store, keys, config, world, sinks, who=f"syncdoctor watch ({host}:{port})",
                      send_requests=not in_job, clock=clock)
    if not args.json and not live_mode:
        where = "a monitor inside the job reports" if in_job else "detecting here"
        console.print(f"watching {world} ranks at {host}:{port} (attempt {attempt}; {where})", markup=False)
    seen_events = 0
    stop_at = None if args.duration is None else clock() + args.duration
    live = Live(console=console, refresh_per_second=4, transient=False) if live_mode else None
    try:
        if live is not None:
            live.start()
        while True:
            try:
                monitor.cycle()
                if in_job:
                    seen_events, fresh = read_store_events(store, keys, seen_events)
                    for data in fresh:
                        show(data)
            except Exception as exc:
                if monitor.cycles == 0:
                    raise StoreError(f"cannot read the job's records: {exc}") from exc
                if not args.json:
                    console.print(f"the job's store at {host}:{port} is gone (the job ended, or the process "
                                  f"serving it died): {str(exc).splitlines()[0] if str(exc) else exc}", markup=False)
                break
            if live is not None:
                recent = [_event_text(d) for d in printed[-8:]]
                live.update(Group(build_table(monitor, monitor.clock()), *recent))
            if args.once:
                break
            if stop_at is not None and clock() >= stop_at:
                break
            sleep(min(config.interval_s, max(monitor.due_in(), 0.05)))
    except KeyboardInterrupt:
        pass
    finally:
        if live is not None:
            live.stop()
        close_sinks(sinks)  # the node history's pending writes
    if not args.json and not live_mode:
        console.print(build_table(monitor, monitor.clock()))
    if args.once and any(d.get("severity") == "error" for d in printed):
        return EXIT_FINDINGS
    return EXIT_OK


def _warn_after(text: str) -> float | str:
    try:
        value = _seconds_or_auto(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or 'auto', got {text!r}") from None
    if value != "auto" and not value > 0:  # type: ignore[operator]
        raise argparse.ArgumentTypeError(f"expected seconds > 0 or 'auto', got {text!r}")
    return value


def _seconds_or_auto(value: Any) -> float | str:
    return "auto" if str(value).strip().lower() == "auto" else float(value)


def _monitor_active(store: Any, keys: Any, config: Any, sleep: Callable[[float], None]) -> bool:
    """True when a monitor beats its lease (checked over two intervals), although the job said ``off``."""
    first = store.get_optional(keys.monitor)
    if not first:
        return False
    sleep(min(2 * config.interval_s + 0.2, 5.0))
    return store.get_optional(keys.monitor) != first
