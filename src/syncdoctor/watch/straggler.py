"""Chronic straggler statistics over a sliding window. Pure: no I/O, no clock.

Each rank reports the collectives it waited in (``RankRecord.waits``: group, sequence number, seconds
waited, as measured by its sampler). Once every member of the group has completed a collective, the
waits are compared: the member that waited least arrived last. When it waited clearly less than every
other member (by at least half of ``straggler_min_wait_s``), it is credited as the last arrival and its
lag is the median of the others' waits minus its own. Waits are measured on each rank's own clock, so
host clocks need not agree. A rank that arrived last at ``straggler_min_share`` of at least
``straggler_min_events`` such collectives in the window is a chronic straggler (W107).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.events import Event
from syncdoctor.watch.snapshot import DetectorState, Snapshot

__all__ = ["evaluate", "window_summary"]


def evaluate(
    snapshot: Snapshot,
    config: WatchConfig,
    state: DetectorState,
    *,
    alive: Iterable[int],
    groups: Mapping[str, tuple[int, ...]],
) -> list[Event]:
    _ingest(snapshot, config, state)
    _finalize(snapshot, config, state, groups)
    _trim(snapshot.now, config, state)
    alive_set = set(alive)
    events = []
    summary = window_summary(state, config)
    for rank, stats in summary.items():
        if rank not in alive_set or stats["notable"] < config.straggler_min_events:
            continue
        if stats["share"] < config.straggler_min_share:
            continue
        rec = snapshot.records.get(rank)
        where = rec.where if rec else "?"
        title = (
            f"rank {rank} ({where}) arrived last at {stats['last']} of {stats['notable']} collectives "
            f"with a measurable wait in the last {config.straggler_window_s:.0f} s; lag p50 "
            f"{stats['lag_p50']:.2f} s, p90 {stats['lag_p90']:.2f} s; the others spent "
            f"{stats['others_waited_s']:.1f} s waiting for it (about {100 * stats['gain_share']:.1f}% of the time)"
        )
        events.append(
            Event(
                "W107", "warning", title, ranks=(rank,), hosts=(where,), pids=(rec.pid,) if rec else (),
                key=f"W107:{rank}", at=snapshot.wall, waited_s=stats["others_waited_s"], detail=stats,
            )
        )
    return events


def _ingest(snapshot: Snapshot, config: WatchConfig, state: DetectorState) -> None:
    for rank, rec in snapshot.records.items():
        for wait in rec.waits:
            if wait.seq <= state.waits_done.get(wait.group, 0):
                continue
            key = (wait.group, wait.seq)
            entry = state.pending_waits.get(key)
            if entry is None:
                if len(state.pending_waits) >= state.max_pending:
                    continue
                entry = (snapshot.now, {})
                state.pending_waits[key] = entry
            entry[1][rank] = wait.wait_s


def _finalize(
    snapshot: Snapshot, config: WatchConfig, state: DetectorState, groups: Mapping[str, tuple[int, ...]]
) -> None:
    completed: dict[str, int] = {}
    for name, members in groups.items():
        values = []
        for rank in members:
            rec = snapshot.records.get(rank)
            progress = rec.groups.get(name) if rec is not None else None
            if progress is None:
                break
            values.append(progress.completed)
        else:
            if values:
                completed[name] = min(values)
    for key in sorted(state.pending_waits, key=lambda k: (k[0], k[1])):
        group, seq = key
        first_seen, waits = state.pending_waits[key]
        if seq > completed.get(group, -1):
            if snapshot.now - first_seen > config.straggler_window_s:
                del state.pending_waits[key]  # never completed everywhere: a hang, reported elsewhere
            continue
        del state.pending_waits[key]
        state.waits_done[group] = max(state.waits_done.get(group, 0), seq)
        members = groups.get(group, ())
        if len(members) < 2:
            continue
        full = sorted((waits.get(r, 0.0), r) for r in members)
        if full[-1][0] < config.straggler_min_wait_s:
            continue
        low, last = full[0]
        others = [w for w, _ in full[1:]]
        if min(others) - low < config.straggler_min_wait_s / 2:
            state.window.append((snapshot.now, group, seq, None, 0.0, 0.0))  # measurable, but no clear last
            continue
        lag = statistics.median(others) - low
        state.window.append((snapshot.now, group, seq, last, lag, sum(w - low for w in others)))


def _trim(now: float, config: WatchConfig, state: DetectorState) -> None:
    while state.window and (now - state.window[0][0] > config.straggler_window_s or len(state.window) > state.max_window):
        state.window.popleft()


def window_summary(state: DetectorState, config: WatchConfig) -> dict[int, dict[str, float]]:
    """Per rank credited as last arrival in the window: counts, share, lag percentiles, others' waiting."""
    rows = list(state.window)
    if not rows:
        return {}
    notable = len(rows)
    span = max(rows[-1][0] - rows[0][0], config.interval_s)
    out: dict[int, dict[str, float]] = {}
    for rank in sorted({row[3] for row in rows if row[3] is not None}):
        lags = sorted(row[4] for row in rows if row[3] == rank)
        waited = sum(row[5] for row in rows if row[3] == rank)
        group_lag = sum(row[4] for row in rows if row[3] == rank)
        out[rank] = {
            "last": len(lags),
            "notable": notable,
            "share": round(len(lags) / notable, 3),
            "lag_p50": round(_percentile(lags, 0.5), 3),
            "lag_p90": round(_percentile(lags, 0.9), 3),
            "lag_max": round(lags[-1], 3),
            "others_waited_s": round(waited, 2),
            "gain_share": round(min(group_lag / span, 1.0), 4),
        }
    return out


def _percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]
