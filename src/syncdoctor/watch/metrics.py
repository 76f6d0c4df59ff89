"""Prometheus metrics of a watched job, served by the rank that runs the monitor. Opt-in.

Set ``SYNCDOCTOR_METRICS_PORT`` (and optionally ``SYNCDOCTOR_METRICS_ADDR``, default ``127.0.0.1``: only
the host itself can scrape) before :func:`syncdoctor.watch.start`; the monitor's rank then serves
``http://ADDR:PORT/metrics`` in a daemon thread until the watcher stops. Needs ``prometheus-client``
(``pip install 'syncdoctor[metrics]'``); without it a warning is logged once and nothing is served.

Metrics (per-rank gauges are computed at scrape time from the monitor's last cycle, so a scrape costs
nothing to the job and shows what the monitor saw):

- ``syncdoctor_watch_rank_last_sequence{rank,host,group}``: last collective the rank entered;
  ``syncdoctor_watch_rank_completed_sequence``: the last that completed there.
- ``syncdoctor_watch_rank_lag_collectives{rank,host,group}``: how many collectives the rank is behind
  the furthest member of its group; ``syncdoctor_watch_rank_lag_seconds``: how long the ranks ahead of
  it have been waiting in their collective (0 when it is not behind).
- ``syncdoctor_watch_rank_record_age_seconds{rank,host}``: since the monitor last saw the rank's record
  change (a dead or frozen rank grows); ``syncdoctor_watch_rank_up{rank,host,state}``.
- ``syncdoctor_watch_events_total{code,kind,status}``: events raised (late-rank, dead-rank,
  collective-mismatch...); ``syncdoctor_watch_open_incidents{code}``.
- ``syncdoctor_watch_node_incidents_total{node,code}``: incidents that made a node a suspect (a host cut
  off, a chronic straggler's host: :mod:`syncdoctor.exclude`), counted once per incident, so a cluster's
  Prometheus keeps the node history across jobs.
- ``syncdoctor_watch_publish_errors_total``: this rank's record publications that failed;
  ``syncdoctor_watch_monitor_errors_total``, ``syncdoctor_watch_monitor_cycles_total``,
  ``syncdoctor_watch_monitor_cycle_seconds``.

I/O: an HTTP server thread. :func:`rank_samples` (the per-rank arithmetic) is pure.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from syncdoctor.errors import UsageError
from syncdoctor.watch.events import Event
from syncdoctor.watch.records import RankRecord

__all__ = ["ENV_ADDR", "ENV_PORT", "MetricsServer", "RankSample", "attach_from_environment", "rank_samples"]

logger = logging.getLogger("syncdoctor.watch")

ENV_PORT = "SYNCDOCTOR_METRICS_PORT"
ENV_ADDR = "SYNCDOCTOR_METRICS_ADDR"
DEFAULT_ADDR = "127.0.0.1"
_MAX_COUNTED = 100_000  # incidents counted per node: bounded memory (a job has far fewer)


@dataclass(frozen=True)
class RankSample:
    """One rank in one group as the metrics show it."""

    rank: int
    host: str
    group: str
    entered: int
    completed: int
    lag_collectives: int
    lag_s: float


def rank_samples(records: Mapping[int, RankRecord], groups: Mapping[str, tuple[int, ...]] | None = None) -> list[RankSample]:
    """Per rank and group: last sequence entered and completed, and how far behind its group it is.

    Group members come from ``groups`` when known, else from the ranks whose records name the group.
    ``lag_s`` is the longest ``stalled_s`` among the members that entered a later collective: how long
    they have been waiting, possibly for this rank.
    """
    by_group: dict[str, dict[int, Any]] = {}
    for rank, record in records.items():
        for name, progress in record.groups.items():
            by_group.setdefault(name, {})[rank] = progress
    out = []
    for name, members in sorted(by_group.items()):
        known = (groups or {}).get(name) or tuple(sorted(members))
        present = {r: members[r] for r in known if r in members}
        if not present:
            continue
        furthest = max(p.entered for p in present.values())
        for rank, progress in sorted(present.items()):
            ahead = [p for p in present.values() if p.entered > progress.entered]
            waits = [p.stalled_s for p in ahead if p.stalled_s is not None]
            out.append(RankSample(
                rank, records[rank].host, name, progress.entered, progress.completed,
                furthest - progress.entered, round(max(waits, default=0.0), 3),
            ))
    return out


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("metrics request: " + format, *args)


class MetricsServer:
    """The metrics of one monitor on ``addr:port``. :meth:`emit` makes it a sink of the monitor's events."""

    def __init__(self, monitor: Any, *, addr: str = DEFAULT_ADDR, port: int) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, make_wsgi_app

        self.monitor = monitor
        self.registry = CollectorRegistry(auto_describe=True)
        self.events = Counter("syncdoctor_watch_events", "Events raised by the watcher's detector",
                              ["code", "kind", "status"], registry=self.registry)
        self.publish_errors = Counter("syncdoctor_watch_publish_errors",
                                      "Record publications of this rank that failed", registry=self.registry)
        self.monitor_errors = Counter("syncdoctor_watch_monitor_errors", "Monitor cycles that failed",
                                      registry=self.registry)
        self.cycle_seconds = Gauge("syncdoctor_watch_monitor_cycle_seconds", "Duration of the last monitor cycle",
                                   registry=self.registry)
        self.cycles = Counter("syncdoctor_watch_monitor_cycles", "Monitor cycles run", registry=self.registry)
        self.node_incidents = Counter("syncdoctor_watch_node_incidents",
                                      "Incidents that made the node a suspect (node-level causes only)",
                                      ["node", "code"], registry=self.registry)
        self._counted: set[tuple[str, str]] = set()  # (incident key, node): each incident once
        self.registry.register(_RankCollector(monitor))
        self._server: WSGIServer = make_server(addr, port, make_wsgi_app(self.registry), handler_class=_QuietHandler)
        self.port = self._server.server_port
        self.addr = addr
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="syncdoctor-watch-metrics", daemon=True)

    def start(self) -> MetricsServer:
        self._thread.start()
        logger.info("syncdoctor.watch: metrics on http://%s:%d/metrics", self.addr, self.port)
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=2.0)
        self._server.server_close()

    def emit(self, event: Event) -> None:
        self.events.labels(event.code, event.kind, event.status).inc()
        for suspect in event.suspect_nodes:
            seen = (event.key or event.title, suspect.node)
            if seen not in self._counted and len(self._counted) < _MAX_COUNTED:
                self._counted.add(seen)
                self.node_incidents.labels(suspect.node, suspect.code).inc()

    def refresh(self) -> None:
        self.cycle_seconds.set(float(getattr(self.monitor, "last_cycle_s", 0.0)))
        self.cycles.inc()


class _RankCollector:
    """Per-rank gauges read from the monitor's last cycle at scrape time."""

    def __init__(self, monitor: Any) -> None:
        self.monitor = monitor

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        monitor = self.monitor
        records: Mapping[int, RankRecord] = dict(monitor.records)  # replaced whole by each cycle
        groups = dict(monitor.groups)
        last = GaugeMetricFamily("syncdoctor_watch_rank_last_sequence", "Last collective the rank entered",
                                 labels=["rank", "host", "group"])
        done = GaugeMetricFamily("syncdoctor_watch_rank_completed_sequence", "Last collective completed on the rank",
                                 labels=["rank", "host", "group"])
        lag_n = GaugeMetricFamily("syncdoctor_watch_rank_lag_collectives",
                                  "Collectives the rank is behind the furthest member of its group",
                                  labels=["rank", "host", "group"])
        lag_s = GaugeMetricFamily("syncdoctor_watch_rank_lag_seconds",
                                  "How long the ranks ahead of this rank have waited in their collective",
                                  labels=["rank", "host", "group"])
        for sample in rank_samples(records, groups):
            labels = [str(sample.rank), sample.host, sample.group]
            last.add_metric(labels, sample.entered)
            done.add_metric(labels, sample.completed)
            lag_n.add_metric(labels, sample.lag_collectives)
            lag_s.add_metric(labels, sample.lag_s)
        up = GaugeMetricFamily("syncdoctor_watch_rank_up", "1 for each rank's current state",
                               labels=["rank", "host", "state"])
        age = GaugeMetricFamily("syncdoctor_watch_rank_record_age_seconds",
                                "Seconds since the monitor last saw the rank's record change", labels=["rank", "host"])
        seen = _copy(getattr(monitor.state, "seen", {}))
        now = monitor.clock()
        for rank, record in sorted(records.items()):
            up.add_metric([str(rank), record.host, record.state], 1)
            entry = seen.get(rank)
            if entry is not None:
                age.add_metric([str(rank), record.host], round(max(0.0, now - entry.changed_at), 3))
        incidents = GaugeMetricFamily("syncdoctor_watch_open_incidents", "Incidents open now", labels=["code"])
        counts: dict[str, int] = {}
        for incident in _copy(getattr(monitor.state, "incidents", {})).values():
            counts[incident.code] = counts.get(incident.code, 0) + 1
        for code, count in sorted(counts.items()):
            incidents.add_metric([code], count)
        world = GaugeMetricFamily("syncdoctor_watch_ranks_reporting", "Ranks whose record the monitor read")
        world.add_metric([], len(records))
        yield from (last, done, lag_n, lag_s, up, age, incidents, world)


def _copy(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    """A copy of a dict another thread may resize: retry the rare 'changed size during iteration'."""
    for _ in range(5):
        try:
            return dict(mapping)
        except RuntimeError:
            continue
    return {}


def _counting(call: Callable[..., Any], counter: Any, after: Callable[[], None] | None = None) -> Callable[..., Any]:
    @functools.wraps(call)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except Exception:
            counter.inc()
            raise
        finally:
            if after is not None:
                after()

    return wrapper


def _settings(env: Mapping[str, str]) -> tuple[str, int] | None:
    raw = env.get(ENV_PORT, "").strip()
    if not raw:
        return None
    try:
        port = int(raw)
    except ValueError:
        raise UsageError(f"{ENV_PORT}={raw!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"{ENV_PORT}={raw!r} is not a port number")
    return env.get(ENV_ADDR, "").strip() or DEFAULT_ADDR, port


def attach_from_environment(watcher: Any, monitor: Any, env: Mapping[str, str] | None = None) -> Callable[[], None]:
    """Serve the metrics of ``monitor`` when ``SYNCDOCTOR_METRICS_PORT`` is set; returns the stop function
    (a no-op when metrics are off or cannot start). Never raises: the job goes on without metrics."""
    try:
        settings = _settings(os.environ if env is None else env)
    except UsageError as exc:
        logger.warning("syncdoctor.watch: no metrics: %s", exc)
        return _nothing
    if settings is None:
        return _nothing
    addr, port = settings
    try:
        server = MetricsServer(monitor, addr=addr, port=port)
    except ImportError:
        logger.warning("syncdoctor.watch: %s is set but prometheus-client is not installed: "
                       "pip install 'syncdoctor[metrics]'", ENV_PORT)
        return _nothing
    except OSError as exc:
        logger.warning("syncdoctor.watch: cannot serve metrics on %s:%d: %s", addr, port, exc)
        return _nothing
    monitor.sinks.append(server)
    monitor.cycle = _counting(monitor.cycle, server.monitor_errors, server.refresh)
    if hasattr(watcher, "_publish"):
        watcher._publish = _counting(watcher._publish, server.publish_errors)
    server.start()

    def stop() -> None:
        server.stop()
        if server in monitor.sinks:
            monitor.sinks.remove(server)

    return stop


def _nothing() -> None:
    return None
