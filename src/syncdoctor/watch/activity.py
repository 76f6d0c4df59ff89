"""Busy or stuck: what a rank's main thread is doing, from samples its own watcher takes. Pure: no I/O.

A rank that the others wait for is not always a hang. Rank 0 writing a checkpoint, evaluating, logging or
preparing data while the others wait at the next barrier is the commonest pattern in training scripts,
and a watcher that ends such a job is one nobody leaves on. Each publication, the rank's watcher samples
its main thread (:class:`Sample`: CPU time, bytes read and written, the functions on its stack) and
:func:`classify` sums up the last few seconds:

* ``working``: its stack changes (by function, not by line) while it uses CPU, or it moves bytes (files,
  pipes, sockets: a checkpoint, a data loader, an upload);
* ``spinning``: it uses CPU in the same functions and moves nothing (a busy loop, a livelock);
* ``stuck``: no CPU, the same stack, no bytes (sleeping, blocked in a read or a lock, a hung file system).

"Uses CPU" means *wants* it: the CPU time the thread got plus the time it spent runnable in a run queue
waiting for a core (``/proc/self/task/<tid>/schedstat``). On a crowded host (more runnable threads than
cores) a busy loop may get a third of a core and wait the rest; it is spinning all the same, and a blocked
thread waits on no run queue.

A dead or stopped (SIGSTOP) process cannot sample itself: its heartbeat stops, which the monitor's dead-rank
rule reports (W105, with the process state its host siblings read).

A *solo phase* is work one rank does while the others wait by design. The user marks it
(``with syncdoctor.watch.solo("checkpoint", up_to_s=900)``), or :func:`recognise_phase` finds it on the
stack where the stack makes it certain (``torch.save``, ``torch.distributed.checkpoint``, …).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from syncdoctor.watch.records import Activity

__all__ = [
    "CPU_SPINNING",
    "IO_WORKING_BPS",
    "KNOWN_PHASES",
    "Sample",
    "classify",
    "recognise_phase",
]

CPU_SPINNING = 0.5  # share of one core above which a thread with an unchanging stack is spinning
CPU_ACTIVE = 0.05  # share of one core above which a changing stack is work (below: a thread woken now and then)
IO_WORKING_BPS = 64 * 1024  # bytes per second read or written by the main thread that count as work

# (path fragment, function) of frames that make a solo phase certain, and the phase's name. A frame matches
# when its file path contains the fragment and, where a function is given, its function has that name.
KNOWN_PHASES: tuple[tuple[str, str, str], ...] = (
    ("torch/distributed/checkpoint/", "", "torch.distributed.checkpoint"),
    ("torch/serialization.py", "save", "torch.save"),
    ("safetensors/torch.py", "save_file", "safetensors.save_file"),
    ("transformers/trainer.py", "_save_checkpoint", "transformers checkpoint"),
    ("transformers/modeling_utils.py", "save_pretrained", "transformers save_pretrained"),
    ("lightning/pytorch/trainer/connectors/checkpoint_connector.py", "", "lightning checkpoint"),
    ("pytorch_lightning/trainer/connectors/checkpoint_connector.py", "", "lightning checkpoint"),
    ("deepspeed/runtime/engine.py", "save_checkpoint", "deepspeed save_checkpoint"),
)


class Sample(NamedTuple):
    """One look at the main thread: when (monotonic seconds), its CPU seconds so far, the bytes it has read
    and written so far (``/proc/self/task/<tid>/io`` rchar + wchar), and its stack as (file, function)
    pairs, outermost first (no line numbers: a loop moving between lines is not a change of work), and the
    seconds it has spent runnable but waiting for a core so far (``schedstat``; ``None`` where unreadable)."""

    at: float
    cpu_s: float | None
    io_bytes: int | None
    stack: tuple[tuple[str, str], ...]
    runq_s: float | None = None


def recognise_phase(stack: Sequence[tuple[str, str]]) -> str:
    """The solo phase the stack makes certain, or ``""``. The outermost match wins: what the job is doing
    (``torch.distributed.checkpoint``, a trainer's checkpoint), not the write it is in at that moment (the
    ``torch.save`` that DCP's writer calls), so two samples of one phase name it alike."""
    for file, function in stack:
        path = file.replace("\\", "/")
        for fragment, name, phase in KNOWN_PHASES:
            if fragment in path and (not name or function == name):
                return phase
    return ""


def classify(samples: Sequence[Sample]) -> Activity | None:
    """What the samples (oldest first) say the thread did over their span; ``None`` with fewer than two
    samples or a span under half a second (not measured yet)."""
    if len(samples) < 2:
        return None
    first, last = samples[0], samples[-1]
    span = last.at - first.at
    if span < 0.5:
        return None
    cpu = None
    if first.cpu_s is not None and last.cpu_s is not None:
        cpu = max(0.0, (last.cpu_s - first.cpu_s) / span)
    wanted = cpu  # the share of one core it got, plus the share it spent waiting for one
    if cpu is not None and first.runq_s is not None and last.runq_s is not None:
        wanted = cpu + max(0.0, (last.runq_s - first.runq_s) / span)
    io = None
    if first.io_bytes is not None and last.io_bytes is not None:
        io = max(0.0, (last.io_bytes - first.io_bytes) / span)
    stacks = len({s.stack for s in samples})
    phase = recognise_phase(last.stack) or next((p for s in reversed(samples) if (p := recognise_phase(s.stack))), "")
    if io is not None and io >= IO_WORKING_BPS:
        kind = "working"
    elif stacks > 1 and (wanted is None or wanted >= CPU_ACTIVE):  # a few printed bytes are no work
        kind = "working"
    elif wanted is not None and wanted >= CPU_SPINNING:
        kind = "spinning"
    elif cpu is None and io is None:
        kind = "working" if stacks > 1 else "stuck"  # nothing measurable here: the stack is all there is
    else:
        kind = "stuck"
    return Activity(kind, round(cpu or 0.0, 3), round(io or 0.0, 1), stacks, phase, round(span, 2))
