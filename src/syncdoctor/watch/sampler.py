"""Turns frequent progress readings of one rank into what its record says: stalls, waits, step marks.

Pure: no I/O, no clock (times are passed in). The sampler thread feeds it every ``sample_interval_s``
with ``{group name: (entered, completed)}`` read from the Flight Recorder status or the hooks; the
publisher asks it for the record's fields. Memory is bounded (fixed-size rings).

A *stall* starts when a group has an entered but unfinished collective and no completion progress; its
start is the midpoint between the last sample without it and the first with it, so arrival times are
known to half a sampling interval. When completion moves on, the stall becomes a *wait* of the stalled
collective (chronic straggler statistics). Waits shorter than ``min_wait_s`` (half of the
``straggler_min_wait_s`` setting) are not recorded: the straggler statistics count them as 0 anyway (see
:mod:`syncdoctor.watch.straggler`), and a healthy job's records then keep the same waits from one
publication to the next, which lets the monitor skip them (``waits_total`` counts the recorded ones).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from syncdoctor.watch.records import GroupProgress, Signature, StepMark, WaitSample

__all__ = ["Sampler"]


@dataclass
class _Track:
    entered: int
    completed: int
    stall_start: float | None = None
    stall_seq: int = 0
    signature: Signature | None = None
    signature_seq: int = 0
    asked_seq: int = 0  # signature lookup already attempted for this sequence number


class Sampler:
    """Thread-safe progress bookkeeping of one rank (one lock, held for microseconds)."""

    def __init__(self, *, waits: int = 64, marks: int = 8, straggler_min_wait_s: float = 0.1) -> None:
        self._lock = threading.Lock()
        self.min_wait_s = straggler_min_wait_s / 2
        self._waits_total = 0
        self._groups: dict[str, _Track] = {}
        self._waits: deque[WaitSample] = deque(maxlen=waits)
        self._marks: deque[StepMark] = deque(maxlen=marks)
        self._last: float | None = None
        self._quiet_since: float | None = None
        self.step: int | None = None
        self._step_at: float | None = None
        self._activity = 0

    def observe(self, now: float, readings: Mapping[str, tuple[int, int]], activity: int = 0) -> None:
        """One reading of every group's (entered, completed); ``activity`` is a counter of other progress
        (point-to-point calls): when it moved, this rank is not sitting still."""
        with self._lock:
            mid = now if self._last is None else (self._last + now) / 2
            if self._quiet_since is None or activity != self._activity:
                self._quiet_since = now
                self._activity = activity
            for name, (entered, completed) in readings.items():
                track = self._groups.get(name)
                if track is None:
                    track = self._groups[name] = _Track(entered, completed)
                    if entered > completed:
                        track.stall_start, track.stall_seq = mid, completed + 1
                    self._quiet_since = now
                    continue
                if entered != track.entered or completed != track.completed:
                    self._quiet_since = now
                if completed != track.completed and track.stall_start is not None:
                    wait_s = max(0.0, mid - track.stall_start)
                    if wait_s >= self.min_wait_s:
                        self._waits.append(WaitSample(name, track.stall_seq, wait_s))
                        self._waits_total += 1
                    track.stall_start = None
                if entered > completed:
                    if track.stall_start is None:
                        track.stall_start, track.stall_seq = mid, completed + 1
                else:
                    track.stall_start = None
                track.entered, track.completed = entered, completed
            self._last = now

    def mark_step(self, now: float, step: int, entered: Mapping[str, int]) -> None:
        with self._lock:
            self._marks.append(StepMark(step, dict(entered)))
            if step != self.step:
                self.step, self._step_at, self._quiet_since = step, now, now

    def set_signature(self, group: str, seq: int, signature: Signature | None) -> None:
        with self._lock:
            track = self._groups.get(group)
            if track is not None and signature is not None:
                track.signature, track.signature_seq = signature, seq

    def wanted_signatures(self, now: float, after: float) -> list[tuple[str, int]]:
        """(group, seq) stalled for ``after`` seconds whose signature was not looked up yet; marks them asked."""
        out = []
        with self._lock:
            for name, track in self._groups.items():
                if track.stall_start is None or now - track.stall_start < after:
                    continue
                if track.asked_seq == track.stall_seq or track.signature_seq == track.stall_seq:
                    continue
                track.asked_seq = track.stall_seq
                out.append((name, track.stall_seq))
        return out

    def progress(self, now: float) -> dict[str, GroupProgress]:
        with self._lock:
            out = {}
            for name, t in self._groups.items():
                stalled = None if t.stall_start is None else max(0.0, now - t.stall_start)
                sig_ok = t.signature is not None and t.signature_seq == t.completed + 1
                out[name] = GroupProgress(
                    name, t.entered, t.completed, stalled,
                    t.signature if sig_ok else None, t.signature_seq if sig_ok else 0,
                )
            return out

    def entered(self) -> dict[str, int]:
        with self._lock:
            return {name: t.entered for name, t in self._groups.items()}

    def waits(self) -> tuple[WaitSample, ...]:
        with self._lock:
            return tuple(self._waits)

    def waits_total(self) -> int:
        """How many waits were recorded so far (the record's ``waits_total``)."""
        with self._lock:
            return self._waits_total

    def marks(self) -> tuple[StepMark, ...]:
        with self._lock:
            return tuple(self._marks)

    def quiet_s(self, now: float) -> float | None:
        with self._lock:
            return None if self._quiet_since is None else max(0.0, now - self._quiet_since)

    def reading_age_s(self, now: float) -> float | None:
        """Seconds since the last reading was observed (``None`` before the first)."""
        with self._lock:
            return None if self._last is None else max(0.0, now - self._last)

    def step_age_s(self, now: float) -> float | None:
        with self._lock:
            return None if self._step_at is None else max(0.0, now - self._step_at)
