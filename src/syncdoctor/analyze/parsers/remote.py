"""A launcher that could not reach a node: ssh, pdsh, Open MPI's daemons, Ray's worker processes. Pure: no I/O.

mpirun, pdsh (DeepSpeed's multi-node launcher) and Horovod's ``horovodrun`` start the processes of the other
nodes over ssh; when a node's name does not resolve or its ssh is closed, no rank starts there and the job fails
before any collective (or hangs at the rendezvous):

* ssh: ``ssh: Could not resolve hostname worker-1.svc: Name or service not known``, ``ssh: connect to host
  node2 port 22: Connection refused`` (or ``No route to host``, ``Connection timed out``), ``Host key verification
  failed.``, ``Permission denied (publickey).``;
* pdsh: ``pdsh@node1: node2: ssh exited with exit code 255`` (ssh failed; another code is the remote command's
  own: that node's process failed, a ``worker_failed``); DeepSpeed's runner: ``host=node2 was not reachable via
  ssh``;
* Open MPI / PRRTE: ``ORTE was unable to reliably start one or more daemons.``, ``ORTE does not know how to
  route a message to the specified daemon``, ``An ORTE daemon has unexpectedly failed after launch``, ``PRTE has
  lost communication with a remote daemon``;
* Ray: ``A worker died or was killed while executing a task by an unexpected system error`` with its ``Worker
  IP address``, ``Worker PID`` and ``Worker exit type: SYSTEM_ERROR``: the process vanished without an error of
  its own (Ray lists the OOM killer first), read as a ``worker_failed`` of unknown signal; Ray Train's ``Worker 0
  has failed.`` gives its rank (where one worker vanished and one failed); its memory monitor's ``Memory on the
  node (IP: …) where the task (… pid=N …) was running was … which exceeds the memory usage threshold``: a
  worker killed for the node's memory (SIGKILL, like the kernel's OOM killer).

Each ssh or daemon line is a ``launch_unreachable`` event (``host`` when the line names it, ``error``, ``via``).
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event
from syncdoctor.analyze.parsers.torchrun import signal_name

__all__ = ["KEYWORDS", "actor_fields", "parse", "wants_actor_fields"]

KEYWORDS = ("ssh: ", "ssh exited with", "Host key verification failed", "Permission denied (publickey",
            "unable to reliably start", "route a message to the specified daemon", "daemon has unexpectedly failed",
            "lost communication with a remote daemon", "A worker died or was killed", "has failed",
            "was not reachable via ssh", "The actor is dead because", "Running ray stop on", "Memory on the node (",
            "killed due to memory pressure", "address the out of memory issue: ",
            "OutOfMemoryError: Task was killed", "be terminated soon (reason: ", "RayOutOfMemoryError: More than ")

_SSH_RESOLVE = re.compile(r"ssh: Could not resolve hostname (?P<host>[^\s:]+): (?P<error>.+?)\s*$")
# a host named with its slot count that the launcher took for the host's name (``ssh: Could not resolve hostname
# localhost:4: Name or service not known``: Open MPI before 3.0 reads ``-H localhost:4`` so, as horovodrun's and
# torchpack's host lists give it)
_SSH_SLOTS = re.compile(r"ssh: Could not resolve hostname (?P<host>[^\s:]+):(?P<slots>\d{1,5}):? ")
_SSH_CONNECT = re.compile(r"ssh: connect to host (?P<host>\S+) port (?P<port>\d+): (?P<error>.+?)\s*$")
_PDSH = re.compile(r"(?:pdsh@\S+: )?(?P<host>[\w.\-]+): ssh exited with exit code (?P<code>\d+)")
# DeepSpeed's runner checks every host of its hostfile first: ``RuntimeError: Using hostfile at /h/hostfile but
# host=gpu-11 was not reachable via ssh. If you are running with a single node please remove …``
_DS_RUNNER = re.compile(r"host=(?P<host>\S+) was not reachable via ssh")
_SSH_AUTH = re.compile(r"(?P<error>Host key verification failed|Permission denied \(publickey[^)]*\))")
_DAEMONS = re.compile(r"(?P<who>\S+) was unable to reliably start one or more daemons|"
                      r"(?P<who2>ORTE|PRTE|PRRTE) does not know how to route a message to the specified daemon|"
                      r"An? (?P<who3>ORTE|PRTE|PRRTE) daemon has unexpectedly failed after launch|"
                      r"(?P<who4>ORTE|PRTE|PRRTE) has lost communication with a remote daemon")
_RAY_DIED = re.compile(r"A worker died or was killed while executing (?:a|the) task by an unexpected system error")
# Ray Train's trainer about the same worker: ``(TorchTrainer pid=89392) Worker 0 has failed.`` (N: its world rank)
_RAY_TRAIN = re.compile(r"\bWorker (?P<rank>\d+) has failed\b")
_RAY_FIELD = re.compile(r"Worker (?P<key>IP address|PID|exit type): (?P<value>\S+)")


def _ray(line: Line) -> list[Event]:
    fields = {m["key"]: m["value"] for m in _RAY_FIELD.finditer(line.body)}
    pid = fields.get("PID", "")
    host = fields.get("IP address")
    origin = Origin(host=host, pid=int(pid) if pid.isdigit() else None)
    data: dict[str, object] = {"source": "ray", "exit_type": fields.get("exit type", "").rstrip("."),
                               "oom_possible": "OOM killer" in line.body}
    if pid.isdigit():
        data["worker_pid"] = int(pid)
    return [make_event(Kind.WORKER_FAILED, line, origin=origin, data=data)]


# Ray's ActorDiedError: the actor's fields on lines of their own (``pid: 132182``, ``ip: 172.16.2.252``), then ``The
# actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR …`` (its own error, a user
# error, is printed elsewhere; an intended exit is none)
_RAY_ACTOR_DEAD = re.compile(r"The actor is dead because its worker process has died\. Worker exit type: (?P<type>[A-Z_]+)")
_INLINE_IP = re.compile(r"(?:^|\s)ip: (?P<ip>[\w.:\-]{2,253})\s+(?=The actor)")
_ACTOR_FIELD = re.compile(r"^\s*(?P<key>[a-z_]+): (?P<value>\S+)\s*$")


def wants_actor_fields(event: Event) -> bool:
    """A dead Ray actor read without its host: the fields above the line name it."""
    return event.kind is Kind.WORKER_FAILED and bool(event.data.get("actor")) and event.origin.host is None


def actor_fields(line: Line, event: Event, above: list[str]) -> list[Event]:
    """The dead actor's event with the ``ip`` and ``pid`` of the fields right above its line (``above``: the bodies
    of the same writer's lines, nearest first); nothing when no ``ip`` is there."""
    fields: dict[str, str] = {}
    for body in above[:12]:
        match = _ACTOR_FIELD.match(body)
        if match is None:
            break
        fields.setdefault(match["key"], match["value"])
    if "ip" not in fields:
        return []
    pid = fields.get("pid", "")
    data = {**event.data, **({"worker_pid": int(pid)} if pid.isdigit() else {})}
    return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=fields["ip"], pid=int(pid) if pid.isdigit() else None),
                       data=data)]


# Ray's autoscaler taking a node down (``ray kill-random-node``, a scale-down, ``ray down``): ``NodeUpdater:
# i-0baab8b79abe4649d: Running ray stop on 34.222.57.174...``, after ``kill_node: Shutdown worker i-0baab8b79abe4649d``
_RAY_STOP = re.compile(r"NodeUpdater: (?P<node>\S+?): Running ray stop on (?P<ip>[\w.\-:]+?)\.{0,3}\s*$")
# and its notice of a node taken away from outside (KubeRay's pod deleted or evicted, a spot instance preempted):
# ``(autoscaler +44m27s) Instance k-1a5e56fa0001 (node IP: 10.1.140.199) will be terminated soon (reason:
# kubernetes-pod-termination).`` (an idle node scaled down is no failure: only these reasons are read)
_RAY_TERMINATED = re.compile(r"Instance (?P<node>[\w.\-]{1,253}) \(node IP: (?P<ip>[\w.:\-]{2,64})\) will be terminated soon "
                             r"\(reason: (?P<reason>[^)]{0,80}?(?:terminat|preempt|evict|interrupt|spot)[^)]{0,80})\)")


# Ray's memory monitor killing a worker for the node's memory (raylet, 2.x; the task then raises
# ``ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.``): ``Memory on the
# node (IP: 10.20.49.141, ID: 4748…) where the task (actor ID: …, name=…, pid=4100606, memory used=56.57GB) was
# running was 246.5GB / 251.54GB (0.98), which exceeds the memory usage threshold of 0.95. Ray killed this worker``
# (Ray 2.3-2.5 named no IP: ``Memory on the node ( ID: 37f3…) where the task …``)
_RAY_MEMORY = re.compile(r"Memory on the node \( ?(?:IP: (?P<ip>[\w.:\-]{2,64}), )?ID: [^)]*\) where the (?:task|actor)\b"
                         r"(?:[^)]*?\bpid=(?P<pid>\d{1,10}))?")


# Ray 1.x's memory monitor refusing a task on a node nearly out of memory (raised in the worker, which then fails):
# ``ray.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node ip-10-0-1-5 is used (15.98 / 16.82
# GB). The top 5 memory consumers are:``
_RAY1_MEMORY = re.compile(r"RayOutOfMemoryError: More than \d{1,3}% of the memory on node (?P<node>[\w.:\-]{1,253}) is used")


_RAY_LOGS_IP = re.compile(r"\bray logs raylet\.out -ip (?P<ip>[\w.:\-]{2,64})")


# the raylet's summary of the same kills (2.x): ``node_manager.cc:3007: 2 Workers (tasks / actors) killed due to memory
# pressure (OOM), 0 Workers crashed due to other reasons at node (ID: abd4…, IP: 10.0.167.26) over the last time
# period.`` (a paste may wrap it before the IP)
_RAY_PRESSURE = re.compile(r"(?:(?P<count>\d+) Workers? \(tasks / ?actors\) )?killed due to memory pressure \(OOM\)"
                           r"(?:[^\n]*?\bIP: (?P<ip>[\w.:\-]{2,64})\))?")


# the end of the same message, after the node's top memory users (a paste cut before its first line keeps it):
# ``Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/…/ray-oom-prevention.html``
# what the killed task (or its caller) raises: ``ray.exceptions.OutOfMemoryError: Task was killed due to the node
# running low on memory.``
_RAY_OOM_RAISED = re.compile(r"OutOfMemoryError: Task was killed due to the node running low on memory")
_RAY_OOM_DOC = re.compile(r"address the out of memory issue: \S*ray-oom-prevention")


def parse(line: Line) -> list[Event]:
    body = line.body
    match = _RAY_PRESSURE.search(body)
    if match and match["count"] != "0":
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["ip"]) if match["ip"] else None, data={
            "source": "ray-memory-monitor", "exitcode": -9, "signal": "SIGKILL", "oom": True})]
    match = _RAY_MEMORY.search(body)
    if match:
        pid = int(match["pid"]) if match["pid"] else None
        # (where the first words name no IP, its advice does: ``use `ray logs raylet.out -ip 33.123.202.4```)
        told = match["ip"] or ((m := _RAY_LOGS_IP.search(body)) and m["ip"]) or None
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=told, pid=pid), data={
            "source": "ray-memory-monitor", "exitcode": -9, "signal": "SIGKILL", "oom": True,
            **({"worker_pid": pid} if pid else {})})]
    match = _RAY1_MEMORY.search(body) if "RayOutOfMemoryError: More than " in body else None
    if match:
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["node"]), data={
            "source": "ray-memory-monitor", "exitcode": None, "signal": None, "oom": True,
            "raised_by_monitor": True})]
    # the killed task's own exception, or the message's end: a kill the memory monitor's first line (cut) placed
    if ("OutOfMemoryError: Task was killed" in body and _RAY_OOM_RAISED.search(body)) or \
            ("address the out of memory issue: " in body and _RAY_OOM_DOC.search(body)):
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "ray-memory-monitor", "exitcode": -9, "signal": "SIGKILL", "oom": True, "tail": True})]
    match = _RAY_TERMINATED.search(body) if "be terminated soon" in body else None
    if match:
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["node"]), data={
            "source": "ray-autoscaler", "exitcode": -9, "signal": "SIGKILL", "deleted": True, "node": match["node"],
            "ip": match["ip"], "reason": match["reason"].strip()})]
    match = _RAY_STOP.search(body)
    if match:
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["ip"]), data={
            "source": "ray-autoscaler", "exitcode": -9, "signal": "SIGKILL", "deleted": True, "node": match["node"]})]
    if _RAY_DIED.search(body):
        return _ray(line)
    match = _RAY_ACTOR_DEAD.search(body)
    if match and match["type"] not in ("INTENDED_USER_EXIT", "INTENDED_SYSTEM_EXIT", "USER_ERROR"):
        # the actor's fields run into the same line by the paste (``… pid: 744 … ip: 10.1.59.27 The actor is dead…``)
        ip = _INLINE_IP.search(body[:match.start() + len("The actor")])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=ip["ip"]) if ip else None, data={
            "source": "ray", "actor": True, "exit_type": match["type"], "oom_possible": "OOM killer" in body})]
    match = _RAY_TRAIN.search(body)
    if match:
        return [make_event(Kind.WORKER_FAILED, line, data={"source": "ray-train", "worker_rank": int(match["rank"]),
                                                             "unknown_exit": True})]
    slots = _SSH_SLOTS.search(body) if "resolve hostname" in body else None
    if slots:
        return [make_event(Kind.LAUNCH_UNREACHABLE, line, data={
            "host": f"{slots['host']}:{slots['slots']}", "error": "could not resolve hostname", "via": "ssh",
            "host_slots": True})]
    for pattern, via in ((_SSH_RESOLVE, "ssh"), (_SSH_CONNECT, "ssh")):
        match = pattern.search(body)
        if match:
            error = match["error"]
            if pattern is _SSH_RESOLVE:
                error = f"could not resolve hostname: {error}"
            return [make_event(Kind.LAUNCH_UNREACHABLE, line, data={"host": match["host"], "error": error[:120],
                                                                     "via": via})]
    match = _DS_RUNNER.search(body)
    if match:
        return [make_event(Kind.LAUNCH_UNREACHABLE, line, data={
            "host": match["host"], "error": "not reachable via ssh (DeepSpeed's runner)", "via": "ssh"})]
    match = _PDSH.search(body)
    if match and match["code"] == "255":  # ssh itself failed: the node was not reached
        return [make_event(Kind.LAUNCH_UNREACHABLE, line, data={
            "host": match["host"], "error": "ssh exited with exit code 255", "via": "pdsh"})]
    if match:  # the command ran there and failed: that node's process, whose own lines say why
        code = int(match["code"])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["host"]), data={
            "source": "pdsh", "exitcode": code, "signal": signal_name(128 - code) if code > 128 else None})]
    match = _SSH_AUTH.search(body)
    if match:
        return [make_event(Kind.LAUNCH_UNREACHABLE, line, data={"error": match["error"], "via": "ssh"})]
    match = _DAEMONS.search(body)
    if match:
        who = match["who"] or match["who2"] or match["who3"] or match["who4"]
        return [make_event(Kind.LAUNCH_UNREACHABLE, line, data={
            "error": match.group(0)[:120], "via": "Open MPI" if who == "ORTE" else "PRRTE"})]
    return []
