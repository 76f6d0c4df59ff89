"""Thresholds learned from the job itself (``warn_after_s="auto"``, ``confirm_after_s="auto"``). Pure: no I/O,
no clock (the monitor passes its own time).

Constant thresholds suit no job: 10 s is an eternity in a job of 0.2 s steps and a normal pause in a job of
minutes per step whose ranks wait for each other's data. The monitor watches two things the job shows it:

* **step time**: how fast the training step counter moves (optimizer steps are marked automatically), the
  median over the recent steps;
* **lags**: per collective completed everywhere, how long the punctual members waited for the last one
  (the chronic-straggler window, :mod:`syncdoctor.watch.straggler`; waits under ``straggler_min_wait_s``
  count as none).

After a warm-up of ``AUTO_WARMUP_STEPS`` steps (and at least ``AUTO_WARMUP_S`` seconds), the warning
threshold is the larger of ``AUTO_LAG_FACTOR`` times the 95th percentile of the lags and
``AUTO_STEP_FACTOR`` times the median step time, within [``AUTO_WARN_MIN_S``, ``AUTO_WARN_MAX_S``]; the
confirmation threshold is ``AUTO_CONFIRM_FACTOR`` times that, within [``AUTO_CONFIRM_MIN_S``,
``AUTO_CONFIRM_MAX_S``]. A job without step marks learns from its lags alone once ``AUTO_LAG_ONLY_S`` have
passed. During the warm-up the job has shown nothing yet: the warning waits as long as the confirmation
(``AUTO_CONFIRM_START_S``), so that a first step that is slow on one rank by design is not reported, while
a rank that never arrives is still confirmed within that minute. The numbers behind these constants are in
docs/performance.md ("Auto thresholds").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "AUTO_CONFIRM_START_S",
    "AUTO_WARMUP_STEPS",
    "Learner",
    "Thresholds",
]

AUTO_WARMUP_STEPS = 3
AUTO_WARMUP_S = 10.0
AUTO_LAG_ONLY_S = 60.0
AUTO_LAG_FACTOR = 5.0
AUTO_STEP_FACTOR = 2.0
AUTO_WARN_MIN_S = 2.0
AUTO_WARN_MAX_S = 600.0
AUTO_CONFIRM_FACTOR = 6.0
AUTO_CONFIRM_MIN_S = 30.0
AUTO_CONFIRM_MAX_S = 3600.0
AUTO_CONFIRM_START_S = 60.0  # before anything is learned, both thresholds (the static default confirmation)
_MIN_LAGS = 20  # lags needed for the percentile to say more than "no lag worth counting"


@dataclass(frozen=True)
class Thresholds:
    """The thresholds in force, and how they were chosen (for events, the CLI and the logs)."""

    warn_s: float
    confirm_s: float
    learned: bool
    how: str
    step_s: float | None = None
    lag_p95_s: float | None = None

    def to_json(self) -> dict[str, object]:
        return {"warn_s": round(self.warn_s, 2), "confirm_s": round(self.confirm_s, 2), "learned": self.learned,
                "how": self.how, "step_s": None if self.step_s is None else round(self.step_s, 4),
                "lag_p95_s": None if self.lag_p95_s is None else round(self.lag_p95_s, 4)}


class Learner:
    """Accumulates step times between cycles; :meth:`thresholds` turns them and the lags into thresholds.

    Bounded: the last ``max_steps`` step-time observations.
    """

    def __init__(self, max_steps: int = 256) -> None:
        self.started: float | None = None
        self.durations: deque[float] = deque(maxlen=max_steps)
        self.steps_seen = 0
        self._last: tuple[float, int] | None = None

    def observe(self, now: float, step: int | None) -> None:
        """The job's step counter (the furthest rank's newest step mark) at monitor time ``now``."""
        if self.started is None:
            self.started = now
        if step is None:
            return
        last = self._last
        if last is None or step < last[1]:  # first sight, or a restart of the counter
            self._last = (now, step)
            return
        moved = step - last[1]
        if moved <= 0:
            return
        per_step = (now - last[0]) / moved
        for _ in range(min(moved, 8)):  # many fast steps in one cycle: one observation each, a few at most
            self.durations.append(per_step)
        self.steps_seen += moved
        self._last = (now, step)

    def thresholds(self, now: float, lags: Iterable[float], static_warn: float, static_confirm: float,
                   auto_warn: bool, auto_confirm: bool) -> Thresholds:
        """The thresholds in force at ``now``; the static ones where auto is off."""
        if not auto_warn and not auto_confirm:
            return Thresholds(static_warn, static_confirm, False, "set")
        elapsed = 0.0 if self.started is None else now - self.started
        lag_list = sorted(lags)
        step_s = _median(self.durations) if self.durations else None
        lag_p95 = _quantile(lag_list, 0.95) if len(lag_list) >= _MIN_LAGS else (0.0 if lag_list or step_s else None)
        warm = (self.steps_seen >= AUTO_WARMUP_STEPS and elapsed >= AUTO_WARMUP_S) or \
            (step_s is None and elapsed >= AUTO_LAG_ONLY_S)
        if not warm:
            warn = AUTO_CONFIRM_START_S if auto_warn else static_warn
            confirm = max(AUTO_CONFIRM_START_S if auto_confirm else static_confirm, warn)
            return Thresholds(warn, confirm, False, f"warming up ({self.steps_seen} of {AUTO_WARMUP_STEPS} steps)",
                              step_s, lag_p95)
        candidates = [AUTO_WARN_MIN_S]
        parts = []
        if lag_p95 is not None:
            candidates.append(AUTO_LAG_FACTOR * lag_p95)
            parts.append(f"{AUTO_LAG_FACTOR:g} x lag p95 {lag_p95:.3g} s")
        if step_s is not None:
            candidates.append(AUTO_STEP_FACTOR * step_s)
            parts.append(f"{AUTO_STEP_FACTOR:g} x step {step_s:.3g} s")
        learned_warn = min(max(candidates), AUTO_WARN_MAX_S)
        warn = learned_warn if auto_warn else static_warn
        learned_confirm = min(max(AUTO_CONFIRM_FACTOR * warn, AUTO_CONFIRM_MIN_S), AUTO_CONFIRM_MAX_S)
        confirm = learned_confirm if auto_confirm else static_confirm
        confirm = max(confirm, warn)
        how = (f"auto: warn {warn:.3g} s = max of {', '.join(parts) or 'nothing measured'}, "
               f"floor {AUTO_WARN_MIN_S:g} s; confirm {confirm:.3g} s = {AUTO_CONFIRM_FACTOR:g} x warn within "
               f"[{AUTO_CONFIRM_MIN_S:g}, {AUTO_CONFIRM_MAX_S:g}] s")
        return Thresholds(warn, confirm, True, how, step_s, lag_p95)


def _median(values: Iterable[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _quantile(ordered: list[float], q: float) -> float:
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
