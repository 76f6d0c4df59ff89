"""Zero-code watching: with ``SYNCDOCTOR_WATCH=1`` every process that initialises torch.distributed starts
:func:`syncdoctor.watch.start` right after its ``init_process_group`` returns, without an edit of the script.

How it gets there: the package installs ``syncdoctor-watch.pth`` into site-packages. Python runs that one
line at every interpreter start; it reads one environment variable and, only when the switch is on, imports
this module, whose :func:`install` does the rest. Nothing here imports torch: the hook waits for the job to
import ``torch.distributed.distributed_c10d`` (an import hook on ``sys.meta_path``), then wraps that
module's ``init_process_group`` (so ``dist.init_process_group``, ``from torch.distributed import ...`` and
the device-mesh helpers all reach the wrapper).

So the watcher starts in rank processes only: a launcher (torchrun's agent, srun, mpirun), a DataLoader
worker, a compile worker or any subprocess that never calls ``init_process_group`` never starts one; a
script that calls ``syncdoctor.watch.start()`` itself keeps its watcher (start is idempotent: never two).
Settings come from the ``SYNCDOCTOR_WATCH_*`` variables (:class:`~syncdoctor.watch.WatchConfig`); bad ones
print one line on stderr and the job runs unwatched: the hook never breaks the job it watches.

Does I/O only in the sense of patching a torch function and printing on stderr.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["ENV_SWITCH", "PTH_LINE", "PTH_NAME", "enabled", "install", "installed"]

ENV_SWITCH = "SYNCDOCTOR_WATCH"
PTH_NAME = "syncdoctor-watch.pth"
# What the .pth file holds (site.py runs a line that starts with "import"): an environment read when the
# switch is off, this module's import when it is on. tests/test_autowatch.py checks the shipped file.
PTH_LINE = (
    "import os; exec('import syncdoctor.autowatch as _w; _w.install()') "
    "if os.environ.get('SYNCDOCTOR_WATCH', '').strip().lower() in ('1', 'true', 'yes', 'on') else None"
)
_ON = ("1", "true", "yes", "on")
_TARGET = "torch.distributed.distributed_c10d"
_MARK = "__syncdoctor_autowatch__"

_lock = threading.Lock()
_installed = False


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether the switch is on in ``env`` (``os.environ`` when None)."""
    env = os.environ if env is None else env
    return env.get(ENV_SWITCH, "").strip().lower() in _ON


def installed() -> bool:
    """Whether :func:`install` ran in this process."""
    return _installed


def install() -> None:
    """Arrange for the watcher to start after ``init_process_group``. Idempotent; never raises."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    module = sys.modules.get(_TARGET)
    if module is not None:  # installed late, after torch.distributed was imported
        _patch(module)
    else:
        sys.meta_path.insert(0, _AfterImport())


class _AfterImport:
    """A finder on ``sys.meta_path`` (duck-typed: importlib.abc costs milliseconds to import) that finds nothing itself: when ``torch.distributed.distributed_c10d`` is imported, it asks the finders after
    it for the module's spec and wraps the loader so that :func:`_patch` runs once the module has executed
    (before ``torch.distributed`` copies its names). Leaves ``sys.meta_path`` after that one import."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != _TARGET:
            return None
        self._leave()
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module: ModuleType) -> None:
            run(module)
            _patch(module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):  # a loader that takes no attributes: no watcher, no harm
            return spec
        return spec

    def _leave(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def _patch(module: ModuleType) -> None:
    """Wrap ``module.init_process_group`` (once) so that the watcher starts after it returns."""
    original = getattr(module, "init_process_group", None)
    if original is None or getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        _start()
        return result

    setattr(init_process_group, _MARK, True)
    module.init_process_group = init_process_group  # type: ignore[attr-defined]
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None and getattr(distributed, "init_process_group", None) is original:
        distributed.init_process_group = init_process_group  # type: ignore[attr-defined]


def _start() -> None:
    """Start the watcher unless one runs; any failure is one line on stderr, never an exception."""
    try:
        import syncdoctor.watch as watch

        running = watch.current()
        if running is not None and not running.stopped:
            return  # the script started it itself (before init_process_group, or twice)
        watch.start()
    except Exception as exc:  # the job goes on unwatched: the hook must not end it
        from syncdoctor.errors import SyncdoctorError

        what = str(exc) if isinstance(exc, SyncdoctorError) else f"{type(exc).__name__}: {exc}"
        print(f"syncdoctor: {ENV_SWITCH}=1 but not watching this rank: {what}", file=sys.stderr, flush=True)
