"""XLA's coordination service (JAX's multi-host runtime, TensorFlow's multi-worker strategies): its barriers and
its heartbeats, in the words of xla/tsl/distributed_runtime/coordination/coordination_service.cc. Pure: no I/O.

* a barrier that timed out names the tasks that never reached it, one ``/job:jax_worker/replica:0/task:N`` per line
  (the task is the process index, JAX's ``process_id``): ``DEADLINE_EXCEEDED: Barrier timed out. Barrier_id:
  PjRT_Client_Connect. Timed out task names:`` (JAX 0.4.1x), and ``Barrier timed out. Id: X. This usually happens
  because a task triggered the barrier too early or too slowly. …`` then ``# of tasks that reached the barrier:
  8/16.`` and ``The first task at the barrier: /job:…/task:13. Some timed out task names:`` (later releases, at
  most a few names). gRPC's error record repeats it on one line with ``\\n`` between the names.
* ``Task /job:jax_worker/replica:0/task:3 heartbeat timeout. This indicates that the remote task has failed, got
  preempted, or crashed unexpectedly.``: the service lost that task.

One ``coordination`` event per barrier (``barrier``, ``absent_tasks``, ``reached``/``total`` where given) or per
task lost (``task``, ``lost``); :mod:`syncdoctor.analyze.rules.coordination` reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "TaskNames", "follow", "parse"]

KEYWORDS = ("Barrier timed out", "heartbeat timeout. This indicates", "tasks that reached the barrier",
            "tasks are unhealthy")

_TASK = re.compile(r"/job:(?P<job>[\w\-]{1,64})/replica:\d{1,6}/task:(?P<task>\d{1,7})")
_BARRIER = re.compile(r"Barrier timed out\. (?:Barrier_id|Id): (?P<id>[^\s.][^\s]{0,200}?)\.?(?:\s|$|\\n)")
_REACHED = re.compile(r"# of tasks that reached the barrier: (?P<reached>\d{1,7})/(?P<total>\d{1,7})")
_LOST = re.compile(r"Task /job:[\w\-]{1,64}/replica:\d{1,6}/task:(?P<task>\d{1,7}) heartbeat timeout\. This indicates")
_NAMES = "imed out task names:"
# newer releases' report of the tasks it lost, the names below it (or on the line, in gRPC's record): ``UNAVAILABLE: The
# following tasks are unhealthy (stopped sending heartbeats):`` then ``/job:jax_worker/replica:0/task:3``
_UNHEALTHY = "tasks are unhealthy (stopped sending heartbeats):"  # "Timed out task names:" and "Some timed out task names:"
_TASK_LINE = re.compile(r"^\s*/job:[\w\-]{1,64}/replica:\d{1,6}/task:(?P<task>\d{1,7})\s*$")
_MAX_TASKS = 4096


def parse(line: Line) -> list[Event]:
    body = line.body
    if "heartbeat timeout" in body:
        lost = _LOST.search(body)
        if lost:
            return [make_event(Kind.COORDINATION, line, data={"task": int(lost["task"]), "lost": True})]
    if _UNHEALTHY in body:  # the names on this line (gRPC's record), or below it (its follower)
        at = body.find(_UNHEALTHY)
        tasks = sorted({int(m["task"]) for m in _TASK.finditer(body, at)})[:_MAX_TASKS]
        return _lost(line, tasks)
    if body.rstrip().endswith(_NAMES):  # the names follow on the next lines: its follower gives the event
        return []
    return _barrier(line)


def _barrier(line: Line) -> list[Event]:
    body = line.body
    if "Barrier timed out" not in body and "reached the barrier" not in body and _NAMES not in body:
        return []
    barrier = _BARRIER.search(body)
    reached = _REACHED.search(body)
    data: dict[str, object] = {"barrier": barrier["id"] if barrier else None}
    if reached:
        data.update(reached=int(reached["reached"]), total=int(reached["total"]))
    names = body.find(_NAMES)
    if names >= 0:  # the names on this same line: gRPC's record of the error, "\n" written out between them
        data["absent_tasks"] = sorted({int(m["task"]) for m in _TASK.finditer(body, names)})[:_MAX_TASKS]
    return [make_event(Kind.COORDINATION, line, data=data)]


@dataclass
class TaskNames:
    """The task names below a barrier's ``… timed out task names:`` line, one per line."""

    head: Line
    max_lines: int = _MAX_TASKS
    tasks: list[int] = field(default_factory=list)

    def feed(self, line: Line) -> bool:
        match = _TASK_LINE.match(line.body)
        if not match:
            return False
        self.tasks.append(int(match["task"]))
        return True

    def finish(self) -> list[Event]:
        """The head line's event (its barrier, its counts) with the names below it."""
        events = _barrier(self.head)
        if not events:
            return []
        event = events[0]
        return [replace(event, data={**event.data, "absent_tasks": sorted(set(self.tasks))[:_MAX_TASKS]})]


@dataclass
class UnhealthyTasks(TaskNames):
    """The task names below ``The following tasks are unhealthy (stopped sending heartbeats):``: each one lost."""

    def finish(self) -> list[Event]:
        return _lost(self.head, sorted(set(self.tasks))[:_MAX_TASKS])


def _lost(line: Line, tasks: list[int]) -> list[Event]:
    """One event per task the service lost, each its own process (events of one line are merged by their process)."""
    return [make_event(Kind.COORDINATION, line, origin=Origin(rank=task), data={"task": task, "lost": True})
            for task in tasks]


def follow(line: Line) -> TaskNames | None:
    body = line.body.rstrip()
    if body.endswith(_UNHEALTHY):
        return UnhealthyTasks(line)
    return TaskNames(line) if body.endswith(_NAMES) else None
