"""Thresholds learned from the job (``warn_after_s="auto"``): the warm-up, a fast job, a slow one, the bounds,
and the monitor reporting them. Pure: a fake clock, no sleeping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from syncdoctor.errors import UsageError
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.thresholds import (
    AUTO_CONFIRM_MAX_S,
    AUTO_CONFIRM_MIN_S,
    AUTO_CONFIRM_START_S,
    AUTO_WARN_MAX_S,
    AUTO_WARN_MIN_S,
    Learner,
)


def learn(step_s: float, steps: int, lags: list[float], auto: tuple[bool, bool] = (True, True)):
    learner = Learner()
    now = 0.0
    for step in range(steps + 1):
        learner.observe(now, step)
        now += step_s
    return learner.thresholds(now, lags, 10.0, 60.0, *auto)


def test_warming_up_waits_as_long_as_the_confirmation() -> None:
    thresholds = learn(0.1, 2, [])
    assert not thresholds.learned and thresholds.warn_s == thresholds.confirm_s == AUTO_CONFIRM_START_S
    assert "warming up" in thresholds.how
    assert not learn(0.1, 50, []).learned  # enough steps, but not yet 10 s


def test_a_fast_job_warns_within_a_couple_of_seconds() -> None:
    thresholds = learn(0.1, 200, [0.12, 0.15] * 20)
    assert thresholds.learned and thresholds.warn_s == AUTO_WARN_MIN_S and thresholds.confirm_s == AUTO_CONFIRM_MIN_S
    assert thresholds.step_s == pytest.approx(0.1) and "step 0.1 s" in thresholds.how


def test_a_slow_job_with_a_rank_that_always_lags_raises_no_false_alarm() -> None:
    thresholds = learn(20.0, 4, [12.0] * 4)  # fewer lags than the percentile needs: they count as none
    assert thresholds.learned and thresholds.warn_s == pytest.approx(40.0)  # 2 x the step
    thresholds = learn(20.0, 30, [12.0] * 30)
    assert thresholds.warn_s == pytest.approx(60.0) and thresholds.confirm_s == pytest.approx(360.0)
    assert thresholds.warn_s > 12.0  # the lag it shows every step is not reported


def test_only_what_is_auto_is_learned() -> None:
    warn_only = learn(0.1, 200, [], auto=(True, False))
    assert warn_only.warn_s == AUTO_WARN_MIN_S and warn_only.confirm_s == 60.0
    confirm_only = learn(0.1, 200, [], auto=(False, True))
    assert confirm_only.warn_s == 10.0 and confirm_only.confirm_s == 60.0  # 6 x 10
    assert learn(0.1, 200, [], auto=(False, False)).how == "set"


def test_a_job_without_step_marks_learns_from_its_lags_after_a_minute() -> None:
    learner = Learner()
    learner.observe(0.0, None)
    assert not learner.thresholds(30.0, [0.5] * 30, 10.0, 60.0, True, True).learned
    late = learner.thresholds(61.0, [0.5] * 30, 10.0, 60.0, True, True)
    assert late.learned and late.warn_s == pytest.approx(2.5) and late.step_s is None


def test_a_restarted_step_counter_is_not_a_negative_step() -> None:
    learner = Learner()
    for now, step in ((0, 100), (1, 110), (2, 0), (3, 10), (4, 20)):
        learner.observe(float(now), step)
    assert all(d == pytest.approx(0.1) for d in learner.durations)


@given(step_s=st.floats(0.001, 10_000), lags=st.lists(st.floats(0, 100_000), max_size=60))
def test_the_bounds_always_hold(step_s: float, lags: list[float]) -> None:
    thresholds = learn(step_s, 20, lags)
    if thresholds.learned:
        assert AUTO_WARN_MIN_S <= thresholds.warn_s <= AUTO_WARN_MAX_S
        assert max(AUTO_CONFIRM_MIN_S, thresholds.warn_s) <= thresholds.confirm_s <= AUTO_CONFIRM_MAX_S
    assert thresholds.confirm_s >= thresholds.warn_s


def test_auto_in_settings_and_environment() -> None:
    config = WatchConfig.load({"SYNCDOCTOR_WATCH_WARN_AFTER": "auto"}, confirm_after_s="auto")
    assert config.auto_warn and config.auto_confirm and config.suspect_s == 1.0
    assert config.with_thresholds(2.0, 30.0).warn_after_s == 2.0
    with pytest.raises(UsageError):
        WatchConfig(warn_after_s="soon")
    with pytest.raises(UsageError):
        WatchConfig.load({"SYNCDOCTOR_WATCH_CONFIRM_AFTER": "later"})


def test_the_monitor_reports_the_thresholds_in_force() -> None:
    from syncdoctor.watch.keys import JobKeys, ScopedStore
    from syncdoctor.watch.monitor import Monitor
    from syncdoctor.watch.records import GroupProgress, RankRecord, StepMark, encode_record
    from test_watch_screen import MemoryStore

    keys = JobKeys("syncdoctor/v1", 0)
    store = ScopedStore(MemoryStore())
    clock = [0.0]
    monitor = Monitor(store, keys, WatchConfig(warn_after_s="auto", confirm_after_s="auto"), 2, [],
                      clock=lambda: clock[0], wall_clock=lambda: clock[0], send_requests=False)
    step = 0
    for second in range(30):
        clock[0] = float(second)
        step += 10  # 0.1 s steps
        for rank in range(2):
            store.set(keys.rank(rank), encode_record(RankRecord(
                rank=rank, world_size=2, pid=100 + rank, heartbeat=second + 1, step=step,
                groups={"0": GroupProgress("0", step, step)}, step_marks=(StepMark(step, {"0": step}),))))
        monitor.cycle()
    assert monitor.thresholds.learned and monitor.thresholds.warn_s == AUTO_WARN_MIN_S
    assert monitor.effective.warn_after_s == AUTO_WARN_MIN_S and monitor.effective.confirm_after_s == AUTO_CONFIRM_MIN_S


@pytest.mark.parametrize(("variable", "value", "said"), [
    ("SYNCDOCTOR_WATCH_MONITOR", "bogus", "must be auto, off or a rank number"),
    ("SYNCDOCTOR_WATCH_RECORDER", "xyz", "must be one of"),
    ("SYNCDOCTOR_WATCH_WARN_AFTER", "-1", "must be > 0"),
    ("SYNCDOCTOR_WATCH_INTERVAL", "0", "must be > 0"),
    ("SYNCDOCTOR_WATCH_STRAGGLER_MIN_SHARE", "2", "must be in (0, 1]"),
    ("SYNCDOCTOR_WATCH_DEAD_AFTER", "inf", "must be a finite number"),
    ("SYNCDOCTOR_WATCH_CONFIRM_AFTER", "nan", "must be a finite number"),
    ("SYNCDOCTOR_WATCH_BUSY_AFTER", "-5", "must be >= 0"),
])
def test_setting_errors_name_the_variable_and_the_value(variable: str, value: str, said: str) -> None:
    with pytest.raises(UsageError) as error:
        WatchConfig.load({variable: value})
    assert str(error.value).startswith(f"{variable}={value!r}: ") and said in str(error.value)


def test_argument_errors_name_the_argument() -> None:
    with pytest.raises(UsageError, match=r"watch setting dead_after_s=inf \(an argument of start\(\)\): must be a finite"):
        WatchConfig.load({}, dead_after_s=float("inf"))
