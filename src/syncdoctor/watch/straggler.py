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
from syncdoctor.watch.records import WaitSample
from syncdoctor.watch.snapshot import DetectorState, Snapshot

__all__ = ["completed_by_group", "evaluate", "finalize", "ingest", "stragglers", "trim", "window_summary"]


def evaluate(
    snapshot: Snapshot,
    config: WatchConfig,
    state: DetectorState,
    *,
    alive: Iterable[int],
    groups: Mapping[str, tuple[int, ...]],
) -> list[Event]:
    columns = snapshot.columns
    if columns is not None:  # the waits appended since they were last taken, and the completions, from headers
        ingest(state, snapshot.now, columns.waits)
        completed = columns.completed_by_group(groups)
    else:
        ingest(state, snapshot.now, ((rank, rec.waits) for rank, rec in snapshot.records.items()))
        completed = completed_by_group(snapshot, groups)
    finalize(snapshot.now, config, state, groups, completed)
    trim(snapshot.now, config, state)
    events = []
    for rank, stats in stragglers(state, config, alive):
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


def stragglers(state: DetectorState, config: WatchConfig, alive: Iterable[int]) -> list[tuple[int, dict[str, float]]]:
    """The alive ranks the window calls chronic stragglers, with their statistics."""
    alive_set = set(alive)
    return [
        (rank, stats) for rank, stats in window_summary(state, config).items()
        if rank in alive_set and stats["notable"] >= config.straggler_min_events
        and stats["share"] >= config.straggler_min_share
    ]


def ingest(state: DetectorState, now: float, waits_by_rank: Iterable[tuple[int, Iterable[WaitSample]]]) -> None:
    """Remember the waits ranks report until their collective completed everywhere.

    Idempotent for waits already held (or already moved to the window); :attr:`DetectorState.waits_dropped`
    counts the waits it had to leave out (too many pending): those are taken again by later calls.
    """
    for rank, waits in waits_by_rank:
        for wait in waits:
            if wait.seq <= state.waits_done.get(wait.group, 0):
                continue
            key = (wait.group, wait.seq)
            entry = state.pending_waits.get(key)
            if entry is None:
                if len(state.pending_waits) >= state.max_pending:
                    state.waits_dropped += 1
                    continue
                entry = (now, {})
                state.pending_waits[key] = entry
            entry[1][rank] = wait.wait_s


def completed_by_group(snapshot: Snapshot, groups: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """Per group: the lowest sequence number all members completed (groups some member lacks: absent)."""
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
    return completed


def finalize(
    now: float, config: WatchConfig, state: DetectorState, groups: Mapping[str, tuple[int, ...]],
    completed: Mapping[str, int],
) -> None:
    """Move the waits of collectives completed everywhere to the window (one row each)."""
    for key in sorted(state.pending_waits, key=lambda k: (k[0], k[1])):
        group, seq = key
        first_seen, waits = state.pending_waits[key]
        if seq > completed.get(group, -1):
            if now - first_seen > config.straggler_window_s:
                del state.pending_waits[key]  # never completed everywhere: a hang, reported elsewhere
                state.waits_dropped += 1  # the next ingest takes its waits again, if ranks still report them
            continue
        del state.pending_waits[key]
        state.waits_done[group] = max(state.waits_done.get(group, 0), seq)
        members = groups.get(group, ())
        if len(members) < 2:
            continue
        # Waits below straggler_min_wait_s / 2 are not recorded by the sampler and count as 0 here (as a
        # member that reports no wait always did). The verdicts below stay as they were: flooring is
        # monotone, so the order of the waits and the rank that waited least are kept; the largest wait is
        # kept when it reaches straggler_min_wait_s (else both versions skip the row); when the second
        # smallest wait is under the floor both versions find no clear last arrival (gap < floor). The only
        # change is when the smallest wait w0 is under the floor and the second w1 above it: the gap becomes
        # w1 instead of w1 - w0, so a rank may now be called last when w1 - w0 was just under the floor
        # (by less than w0 < floor, i.e. within half of straggler_min_wait_s, below the sampler's
        # resolution of one sampling interval), and lags grow by w0 (< floor) in that case.
        full = sorted((waits.get(r, 0.0), r) for r in members)
        if full[-1][0] < config.straggler_min_wait_s:
            continue
        low, last = full[0]
        others = [w for w, _ in full[1:]]
        if min(others) - low < config.straggler_min_wait_s / 2:
            state.window.append((now, group, seq, None, 0.0, 0.0))  # measurable, but no clear last
            continue
        lag = statistics.median(others) - low
        state.window.append((now, group, seq, last, lag, sum(w - low for w in others)))


def trim(now: float, config: WatchConfig, state: DetectorState) -> None:
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
