"""Lower the scheduling priority of the calling thread (the watcher's own threads).

Does I/O: one ``setpriority`` system call. On Linux ``setpriority(PRIO_PROCESS, tid, ...)`` applies to
that one thread, so the training threads keep their priority. A thread may always lower its own
priority; raising it back needs privileges, so nothing here ever tries.

Why: where a machine has fewer cores than busy threads (CPU training, or data loader workers on every
core), a watcher thread that wakes up takes a time slice from training; at a higher nice value the
kernel runs it in training's idle moments (waits in collectives, I/O) instead, and still gives it the
little CPU it needs (a nice 10 thread keeps about 10% of a core's weight against one nice 0 thread).
"""

from __future__ import annotations

import logging
import os
import threading

__all__ = ["lower_thread_priority"]

logger = logging.getLogger(__name__)


def lower_thread_priority(increment: int) -> int | None:
    """Set the calling thread's nice value to the main thread's plus ``increment`` (at most 19); return
    the new value, or ``None`` when nothing changed (increment 0, already that low, no ``setpriority``
    on this platform, or refused).

    Relative to the main thread (whose thread id is the process id), not to the calling thread: a thread
    inherits the nice value of the thread that created it, so a watcher thread started by another
    watcher thread would otherwise be lowered twice.
    """
    if increment <= 0 or not hasattr(os, "setpriority"):
        return None
    try:
        tid = threading.get_native_id()
        target = min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + increment)
        if os.getpriority(os.PRIO_PROCESS, tid) >= target:
            return None
        os.setpriority(os.PRIO_PROCESS, tid, target)
        return target
    except OSError as exc:  # a sandbox may refuse it: the watcher then runs at the normal priority
        logger.debug("syncdoctor.watch: cannot lower the thread's priority: %s", exc)
        return None
