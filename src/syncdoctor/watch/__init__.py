"""``syncdoctor.watch``: name the late, missing, desynchronised or dead rank while the job runs.

Cheap to import (no torch until :func:`start`). The pure core (records, detector, events) does no I/O;
the runtime (recorder, publisher, monitor, sinks) does. See docs/watch.md.
"""

from __future__ import annotations

from syncdoctor.watch.config import EXIT_HANG, WatchConfig
from syncdoctor.watch.detector import Detection, detect
from syncdoctor.watch.events import CODES, Event
from syncdoctor.watch.snapshot import DetectorState, Snapshot

__all__ = ["CODES", "EXIT_HANG", "Detection", "DetectorState", "Event", "Snapshot", "WatchConfig", "detect"]
