"""XLA's coordination service (JAX's multi-host runtime, TensorFlow's multi-worker strategies) read as failures
(parsers.coordination gives the events). Pure: no I/O.

A barrier that timed out names the tasks (processes) that never reached it: the job's store gave up on them (A024),
they are the ones to read. ``PjRT_Client_Connect`` is the barrier of ``jax.distributed.initialize``: those processes
never connected (not started, or started with another coordinator, ``num_processes`` or ``process_id``). A task whose
heartbeat the service lost has failed, been preempted or crashed (A003); the others' errors follow from it.
"""

from __future__ import annotations

from syncdoctor.analyze.model import Category, Hypothesis, Kind
from syncdoctor.analyze.rules.common import evidence_of, fmt_ranks, hypothesis
from syncdoctor.analyze.rules.node import task_numbers
from syncdoctor.analyze.timeline import Timeline

__all__ = ["coordination_service"]

_CONNECT = "PjRT_Client_Connect"  # jax.distributed.initialize's barrier: every process connects to the coordinator


def coordination_service(tl: Timeline) -> list[Hypothesis]:
    events = tl.of(Kind.COORDINATION)
    if not events:
        return []
    out: list[Hypothesis] = []
    lost_events = [e for e in events if e.data.get("lost")]
    if lost_events:
        lost = sorted({int(e.data["task"]) for e in lost_events})
        # srun's report of how its tasks ended (a task is a process, its number JAX's process_id under Slurm), where
        # it names every lost one: how they went, all of them (a paste may cut the service's later lines) and where
        srun = {n: e for e in tl.of(Kind.WORKER_FAILED) if e.data.get("source") == "slurm" and e.data.get("tasks")
                for n in task_numbers(str(e.data["tasks"]))}
        ended = bool(lost) and set(lost) <= set(srun)
        if ended:
            # the lost tasks' way of ending, and the other tasks srun saw end so (not those it then killed itself)
            ways = {(e.data.get("signal"), e.data.get("exitcode")) for n, e in srun.items() if n in lost}
            srun = {n: e for n, e in srun.items() if (e.data.get("signal"), e.data.get("exitcode")) in ways}
            lost = sorted(srun)
        who = f"task{'s' if len(lost) > 1 else ''} {fmt_ranks(lost)} (JAX's process_id)"
        affected = sorted(r for r, s in tl.ranks.items() if r not in lost and s.first_failure is not None)
        how = sorted({str(e.data.get("signal") or f"exit code {e.data.get('exitcode')}") for e in srun.values()})
        out.append(hypothesis(
            tl, Category.RANK_CRASHED, 0.85 if ended else 0.8,
            f"{who} stopped sending heartbeats to the coordination service: {'they' if len(lost) > 1 else 'it'} "
            + (f"died ({', '.join(how)}, srun's report)" if ended else
               f"failed, {'were' if len(lost) > 1 else 'was'} preempted or crashed"),
            culprits=lost, affected=affected, hosts=sorted({str(e.origin.host) for e in srun.values()
                                                            if e.origin.host}) if ended else (),
            what=("XLA's coordination service expects a heartbeat from every task (process) of the job; it stopped "
                  f"hearing from {who} and ended the job for everyone. The other processes' errors follow from it."),
            fix=("Read that process's own log for how it ended (a traceback, the OOM killer in `dmesg -T`, a "
                 "preemption notice of its VM or pod); its host's kernel log for a device fault."),
            evidence=evidence_of(lost_events, "the coordination service lost the task", 4)
            + (evidence_of(sorted({e.ref: e for e in srun.values()}.values(), key=lambda e: e.ref.line),
                           "srun's report of the task", 4)
               if ended else [])))
    barriers = [e for e in events if not e.data.get("lost")]
    absent = sorted({int(t) for e in barriers for t in e.data.get("absent_tasks") or ()})
    if not barriers or not (absent or any(e.data.get("barrier") for e in barriers)):
        return out
    names = sorted({str(e.data["barrier"]) for e in barriers if e.data.get("barrier")})
    counts = sorted({(int(e.data["reached"]), int(e.data["total"])) for e in barriers if "total" in e.data})
    connect = any(_CONNECT in name for name in names)
    who = f"task{'s' if len(absent) > 1 else ''} {fmt_ranks(absent)}" if absent else "some tasks"
    arrived = f" ({counts[0][0]} of {counts[0][1]} arrived)" if counts else ""
    if connect:
        title = (f"{who} never connected to JAX's coordinator (jax.distributed.initialize timed out at "
                 f"{_CONNECT}){arrived}: not started, or started with another coordinator or process count")
        what = ("jax.distributed.initialize waits until every one of num_processes processes has connected to the "
                "coordinator (process 0's coordinator_address). The ones named never did: they were not started, "
                "crashed before, or were given another coordinator_address, num_processes or a duplicate "
                "process_id.")
        fix = ("Start one process per host (or per GPU, as configured) with the same coordinator_address and "
               "num_processes and its own process_id 0..n-1 (under Slurm, Kubernetes or Cloud TPU call "
               "jax.distributed.initialize() without arguments and let it read the launcher's); check that the "
               "coordinator's port is reachable from every host.")
    else:
        named = f" {', '.join(names)}" if names else ""
        title = f"{who} never reached the coordination service's barrier{named}{arrived}; the others gave up waiting"
        what = ("A barrier of XLA's coordination service (JAX's multihost sync, a checkpointer's commit) waits for "
                "every process of the job. The tasks named (JAX's process_id) did not arrive in time: they crashed "
                "or hang earlier, or were slower than the barrier's timeout (a checkpoint write, loading, a "
                "compile)." + (" The service lists only some of the absent tasks." if counts else ""))
        fix = ("Read those processes' own logs for an earlier error or for what they were doing; if they were only "
               "slow, raise the barrier's timeout (the checkpointer's or the library's barrier timeout).")
    out.append(hypothesis(tl, Category.RENDEZVOUS_TIMEOUT, 0.8 if absent else 0.6, title, culprits=absent,
                          what=what, fix=fix, evidence=evidence_of(barriers, "the barrier that timed out", 4)))
    return out
