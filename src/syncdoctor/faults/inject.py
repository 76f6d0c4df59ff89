"""Apply faults to this process's collectives: the I/O half of :mod:`syncdoctor.faults`.

:func:`inject` is a context manager that routes every Python-level ``torch.distributed`` collective of
this process through a :class:`FaultInjector` until the block ends, when the originals are restored.
The rank is read from ``torch.distributed`` at the first collective (or from ``RANK``), so the block may
start before ``init_process_group``. :func:`step` marks training steps for step-triggered faults.
:func:`install_from_env` starts injection from ``SYNCDOCTOR_FAULTS`` for staging runs.

Does I/O: sleeps, signals, exits, patches torch; torch is imported lazily.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from syncdoctor.faults.intercept import Invocation, intercept, register_internal_module
from syncdoctor.faults.spec import Fault, FaultPlan, parse_faults

__all__ = ["ENV_VAR", "FaultInjector", "InjectedCrash", "inject", "install_from_env", "step"]

logger = logging.getLogger(__name__)
register_internal_module(__name__)

ENV_VAR = "SYNCDOCTOR_FAULTS"
_ACTIVE: list[FaultInjector] = []


class InjectedCrash(RuntimeError):
    """Raised by a ``crash`` fault with ``mode="exception"``."""


def _current_rank() -> int:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except ImportError:  # pragma: no cover - torch is needed to have collectives at all
        pass
    return int(os.environ.get("RANK", "0"))


class FaultInjector:
    """Decides and applies faults for this process. Use through :func:`inject`.

    Attributes:
        faults: every fault given (for every rank); only this rank's are applied.
        events: one line per fault applied, in order (also logged at WARNING).
    """

    def __init__(
        self,
        faults: Sequence[Fault],
        rank: int | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.faults = tuple(faults)
        self._rank = rank
        self._plan: FaultPlan | None = None
        self._sleep = sleep
        self._clock = clock
        self._last_return: float | None = None
        self._lock = threading.Lock()
        self._count = 0
        self.events: list[str] = []

    @property
    def plan(self) -> FaultPlan:
        if self._plan is None:
            rank = self._rank if self._rank is not None else _current_rank()
            self._plan = FaultPlan(self.faults, rank)
        return self._plan

    @property
    def rank(self) -> int:
        return self.plan.rank

    def _record(self, fault: Fault, what: str) -> None:
        line = f"rank {self.rank}: injected {fault.kind}: {what}"
        self.events.append(line)
        logger.warning("syncdoctor.faults %s", line)

    def _act_now(self, fault: Fault, where: str) -> None:
        """Faults that act on the process itself: delay, crash, freeze."""
        if fault.kind == "delay":
            self._record(fault, f"sleeping {fault.seconds:g} s {where}")
            self._sleep(fault.seconds)
        elif fault.kind == "freeze":
            self._record(fault, f"freezing (SIGSTOP) {where}")
            os.kill(os.getpid(), signal.SIGSTOP)
        elif fault.kind == "crash":
            self._record(fault, f"crashing ({fault.mode}) {where}")
            if fault.mode == "exception":
                raise InjectedCrash(f"syncdoctor injected crash on rank {self.rank} {where}")
            for handler in logging.getLogger().handlers:
                with contextlib.suppress(Exception):
                    handler.flush()
            if fault.mode == "exit":
                os._exit(fault.exit_code)
            os.kill(os.getpid(), signal.SIGKILL)

    def on_step(self, number: int) -> None:
        with self._lock:
            firing = self.plan.on_step(number)
        for fault in firing:
            self._act_now(fault, f"at step {number}")

    def __call__(self, inv: Invocation) -> Any:
        with self._lock:
            firing = self.plan.on_collective(inv.call.op)
            self._count += 1
            number = self._count
        where = f"before collective #{number} {inv.call.describe()} at {inv.call.site}"
        resized = False
        for fault in firing:
            if fault.kind == "slow":
                if self._last_return is not None:
                    self._sleep((fault.factor - 1.0) * max(0.0, self._clock() - self._last_return))
            elif fault.kind in ("delay", "crash", "freeze"):
                self._act_now(fault, where)
            elif fault.kind == "skip":
                self._record(fault, f"skipping collective #{number} {inv.call.describe()} at {inv.call.site}")
                return inv.not_issued()
            elif fault.kind == "resize":
                self._record(fault, f"resizing {where}")
                resized = _resize(inv, fault.delta) or resized
            elif fault.kind == "other_op":
                self._record(fault, f"issuing {fault.op_to} instead {where}")
                return self._other_op(inv, fault.op_to)
        try:
            if resized:  # describe the call again, so handlers below see the sizes really sent
                return inv.proceed_as(inv.call.op, *inv.bound.args, **inv.bound.kwargs)
            return inv.proceed()
        finally:
            self._last_return = self._clock()

    @staticmethod
    def _other_op(inv: Invocation, op: str) -> Any:
        arguments = inv.bound.arguments
        tensor = next((arguments[n] for n in ("tensor", "input", "input_tensor") if n in arguments), None)
        group = arguments.get("group")
        if op == "barrier" or tensor is None or isinstance(tensor, (list, tuple)):
            return inv.proceed_as("barrier", group=group)
        if op == "all_reduce":
            return inv.proceed_as("all_reduce", tensor, group=group)
        ranks = inv.call.group_ranks
        return inv.proceed_as("broadcast", tensor, src=ranks[0] if ranks else 0, group=group)


def _resize(inv: Invocation, delta: int) -> bool:
    """Give the call's first input tensor ``delta`` more (or fewer) rows: a size mismatch on the wire."""
    import torch

    arguments = inv.bound.arguments
    for name in ("tensor", "input", "input_tensor", "tensors", "input_list", "input_tensor_list"):
        value = arguments.get(name)
        if isinstance(value, torch.Tensor):
            arguments[name] = _resized(value, delta)
            return True
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor):
            arguments[name] = [_resized(value[0], delta), *value[1:]]
            return True
    return False


def _resized(tensor: Any, delta: int) -> Any:
    import torch

    flat = tensor.reshape(-1) if tensor.dim() == 0 else tensor
    rows = max(1, flat.shape[0] + delta)
    out = torch.zeros((rows, *flat.shape[1:]), dtype=flat.dtype, device=flat.device)
    keep = min(rows, flat.shape[0])
    out[:keep] = flat[:keep]
    return out


@contextlib.contextmanager
def inject(
    *faults: Fault | Mapping[str, Any] | str, rank: int | None = None
) -> Iterator[FaultInjector]:
    """Inject ``faults`` into this process's collectives for the duration of the block.

    Example::

        with syncdoctor.faults.inject(Fault("skip", rank=1, collective=3)):
            train()

    ``rank`` defaults to this process's rank in the default process group.
    """
    parsed: list[Fault] = []
    for spec in faults:
        parsed.extend(parse_faults(spec))
    injector = FaultInjector(parsed, rank)
    _ACTIVE.append(injector)
    try:
        with intercept(injector):
            yield injector
    finally:
        _ACTIVE.remove(injector)


def step(number: int) -> None:
    """Mark the start of training step ``number`` for step-triggered faults (a no-op without faults)."""
    for injector in tuple(_ACTIVE):
        injector.on_step(number)


class _EnvInjection:
    def __init__(self, manager: contextlib.AbstractContextManager[FaultInjector]) -> None:
        self._manager = manager
        self.injector = manager.__enter__()

    def stop(self) -> None:
        self._manager.__exit__(None, None, None)


def install_from_env(environ: Mapping[str, str] | None = None) -> _EnvInjection | None:
    """Start injecting the faults in ``SYNCDOCTOR_FAULTS`` (JSON or compact form); None if unset.

    For staging runs: call once after ``init_process_group``; ``.stop()`` ends injection.
    """
    text = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if not text:
        return None
    return _EnvInjection(inject(text))
