"""Fault injection for tests and staging runs: make one rank late, skip or resize a collective, issue
another op, crash, freeze or run slower, scoped by a context manager.

    import syncdoctor.faults as faults

    with faults.inject(faults.Fault("delay", rank=1, collective=3, seconds=5)):
        train()

Specs (:mod:`.spec`: :class:`Fault` for injection, :class:`StepFault` for the lab's workload, one vocabulary)
are pure data; injection (:mod:`.inject`) wraps ``torch.distributed``'s Python
collectives in-process (:mod:`.intercept`) and restores them when the block ends. Collectives issued from
C++ (DDP's gradient all_reduce) are not affected: inject around your own collectives, or mark steps with
:func:`step` and use step-triggered ``delay``/``crash``/``freeze`` faults, which need no collective.
Importing this package does not import torch.
"""

from __future__ import annotations

from syncdoctor.faults.inject import ENV_VAR, FaultInjector, InjectedCrash, inject, install_from_env, step
from syncdoctor.faults.spec import (
    KINDS,
    STEP_KINDS,
    Fault,
    FaultPlan,
    StepFault,
    parse_faults,
    parse_step_faults,
)

__all__ = [
    "ENV_VAR",
    "KINDS",
    "STEP_KINDS",
    "Fault",
    "FaultInjector",
    "FaultPlan",
    "InjectedCrash",
    "StepFault",
    "inject",
    "install_from_env",
    "parse_faults",
    "parse_step_faults",
    "step",
]
