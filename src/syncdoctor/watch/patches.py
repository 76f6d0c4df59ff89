"""The watcher's patches of torch and of the interpreter, each applied by one function that returns its undo.

Does I/O in the sense that it changes process-wide state: ``destroy_process_group`` in
``torch.distributed`` (and ``distributed_c10d``), a global optimizer step hook, ``sys.excepthook``. The
watcher applies them at :meth:`~syncdoctor.watch.runtime.Watcher.start` and calls the undos, newest
first, at stop. torch is imported by the functions that patch it, not by this module.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["hook_optimizer_steps", "patch_destroy_process_group", "patch_excepthook"]

Undo = Callable[[], None]


def patch_destroy_process_group(on_world_destroyed: Callable[[], None]) -> Undo:
    """Call ``on_world_destroyed`` when the default group is destroyed, before torch does it."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    original = c10d.destroy_process_group

    @functools.wraps(original)
    def destroy_process_group(group: Any = None, *args: Any, **kwargs: Any) -> Any:
        if group is None or group is getattr(c10d.GroupMember, "WORLD", None):
            on_world_destroyed()
        return original(group, *args, **kwargs)

    patched = [owner for owner in (c10d, dist) if getattr(owner, "destroy_process_group", None) is original]
    for owner in patched:
        setattr(owner, "destroy_process_group", destroy_process_group)  # noqa: B010 - typed modules

    def undo() -> None:
        for owner in reversed(patched):
            setattr(owner, "destroy_process_group", original)  # noqa: B010

    return undo


def hook_optimizer_steps(on_step: Callable[[Any, Any, Any], None]) -> Undo:
    """Call ``on_step(optimizer, args, kwargs)`` after every optimizer step (a no-op undo on a torch too old)."""
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except ImportError:  # pragma: no cover - very old torch: explicit step() only
        return _nothing
    return register_optimizer_step_post_hook(on_step).remove


def patch_excepthook(
    on_fatal: Callable[[type[BaseException], BaseException], None],
    abort_code: Callable[[], int | None],
    sigterm_pending: Callable[[], bool],
) -> Undo:
    """Run ``on_fatal`` before the interpreter reports an uncaught exception (its own errors contained).

    When fail-fast is already ending this rank (``abort_code()`` is not ``None``), the rank exits with
    that code at once instead. A SIGTERM deferred meanwhile (``sigterm_pending()``) is delivered after the
    report, with its default action.
    """
    previous = sys.excepthook

    def excepthook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        code = abort_code()
        if code is not None:  # fail-fast is ending this rank: a peer left first
            os._exit(code)
        try:
            on_fatal(exc_type, exc)
        except Exception:
            pass
        previous(exc_type, exc, tb)
        if sigterm_pending():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    sys.excepthook = excepthook

    def undo() -> None:
        if sys.excepthook is excepthook:
            sys.excepthook = previous

    return undo


def _nothing() -> None:
    return None
