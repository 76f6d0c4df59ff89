"""What the scheduler, the kernel and the container runtime say when they end a worker. Pure: no I/O.

* Slurm's step daemon: ``slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. Some of the step tasks
  have been OOM Killed.`` (``oom-kill event(s) in step 1234.0 cgroup`` in Slurm < 21.08; ``Job 41176 exceeded memory
  limit (3940736 > 2068480), being killed`` where Slurm's accounting enforces it): the cgroup's memory
  limit was hit and the kernel killed a task;
* srun: ``srun: error: node12: task 3: Killed``, ``srun: error: node12: tasks 0-3: Exited with exit code 1``,
  ``… task 5: Segmentation fault``, ``… task 0: Out Of Memory`` (the step's cgroup OOM killer) (the task is SLURM_PROCID: the rank when srun starts one task per GPU, the
  node when it starts torchrun, so it is kept as such here; ``rules.node`` takes it as the rank where the
  reports show several tasks on one host);
* HPE PALS (PBS on Aurora, Polaris): ``x1921c7s1b0n0: rank 12 died from signal 9``, ``… rank 3 exited with code
  1``, ``x4502c0s0b0n0: shepherd died from signal 9`` (the node's agent: the node lost);
* Slurm cancelling the job or step: ``slurmstepd: error: *** JOB 1234 ON node12 CANCELLED AT … DUE TO TIME
  LIMIT ***`` (an ``agent_signal``: the job was ended from outside);
* the kernel's OOM killer (dmesg, journal): ``Out of memory: Killed process 12345 (python) total-vm:…``,
  ``Memory cgroup out of memory: Killed process 12345 (python)``, older ``Out of memory: Kill process 12345
  (python) score 912 or sacrifice child``;
* Kubernetes and Docker: ``Reason: OOMKilled`` (``kubectl describe pod``), ``The node was low on resource:
  memory.`` (the kubelet evicted the pod), ``command terminated with exit code 137`` (``kubectl exec``), ``exited
  with code 137`` (Docker): 137 is 128 + 9, SIGKILL.

Each is a ``worker_failed`` event (``source`` slurm, kernel or kubernetes; ``oom`` when the line says that
memory was the reason), read by the same rules as the launchers' reports. A process the kernel shows stuck in
uninterruptible sleep (its hung-task report, a ps row in state D on a network filesystem's wait channel, such a kernel
frame) and a network filesystem's server it lost (NFS's ``not responding, still trying``, Lustre's lost connection)
are ``io_blocked`` events (``via`` hung-task, ps, frame or server-lost). The kernel's mlx5 driver finding the HCA's
firmware dead (``mlx5_core 0000:5e:00.0: device's health compromised``) is an ``ib_async_event``.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event
from syncdoctor.analyze.parsers.prefixes import REDACTED_HOST
from syncdoctor.analyze.parsers.torchrun import SIGNAL_WORDS, shell_signal_name, signal_name, signal_number

__all__ = ["KEYWORDS", "filesystem_of", "parse"]

# the kernel functions a process waits in on a network filesystem (a ps row's wait channel, a hung task's or
# /proc/PID/stack's frames): NFS and its RPC layer, Lustre's client, FUSE mounts (s3fs, gcsfuse, blobfuse), CephFS,
# GPFS, BeeGFS
_WAIT_CHANNELS = ("nfs_", "nfs4_", "rpc_wait", "ptlrpc_", "ll_file", "cl_sync_io", "fuse_", "ceph_", "mmfs", "beegfs")
_FILESYSTEMS = (("nfs", "NFS"), ("rpc_", "NFS"), ("ptlrpc", "Lustre"), ("ll_", "Lustre"), ("cl_", "Lustre"),
                ("fuse_", "a FUSE mount"), ("ceph_", "CephFS"), ("mmfs", "GPFS"), ("beegfs", "BeeGFS"))
_IO_WORDS = ("blocked for more than", "not responding, ", "in progress operations", *_WAIT_CHANNELS)
KEYWORDS = ("oom_kill event", "marked dead", "Cannot communicate with node", "exitCode: 137", "its local ephemeral storage", "ephemeral local storage usage", "Usage of EmptyDir volume",
            "Exceeded job memory", "Exceeded step memory", "oom-kill event", "oom-kill:constraint=", "srun: error:", "died from signal", "exited with code", "Killed process", "Kill process", "OOMKilled",
            "code 137", "Exit Code:", "status 137", "low on resource", "CANCELLED AT", "to Failed by the event",
            "System OOM encountered", "imminent node shutdown", "admit critical pod", "Marking for deletion Pod",
            "workers are evicted", "unhealthy node(s)", "Preempted by pod", "Preempted to accommodate",
            "because of preempt", "because of reclaim", "longer than specified deadline", "its active deadline",
            "maximum execution time", "NodeNotReady", "stopped posting node status",
            "segfault at ", "general protection fault", "health compromised", ", being killed",
            "PrologSlurmctld failed", "] prolog failed", "Prolog failure on", "Job prolog failed", "has been revoked",
            "abort () at ", "0000000 in ?? ()", "Bus error", "Segmentation fault", "Aborted", "Floating point exception",
            "received signal SIG", "terminated with signal SIG", "blocked for more than", "not responding, ",
            "in progress operations using this service",
            "exit-timeout=", "exit-on-error is set", "flux-job: task(s) ",  # Flux's shell and flux-job
            *_WAIT_CHANNELS)

# the shell reporting a command it ran killed by a signal: ``Bus error (core dumped)`` (interactive), ``./run.sh: line 12:
#  4242 Segmentation fault      (core dumped) python train.py`` (a script): at the line's start, or after the script's
# prefix, never inside a sentence
_SHELL_SIGNAL = re.compile(r"^\s*(?:[^\s:]{1,200}: line \d+: +(?P<pid>\d+) )?(?P<what>" + "|".join(SIGNAL_WORDS)
                           + r")(?:\s+\(core dumped\))?(?:\s{2,}\S.*|\s*)$")
# gdb's backtrace of a process that aborted (``bt`` on a core dump or a live one): ``#1  0x00007ffff7c4b859 in __GI_abort ()
# at abort.c:79`` (an uncaught C++ exception's ``std::terminate`` above it, a failed check's abort)
_GDB_ABORT = re.compile(r"^\s*#\d{1,3}\s+(?:0x[0-9a-f]+ in )?(?:__GI_)?abort \(\) at ")
# gdb's innermost frame at address zero (``#0  0x0000000000000000 in ?? ()``): the process called through a null function
# pointer (a symbol a library looked up and did not find, a hook that was never set) and died of it
_GDB_NULL_CALL = re.compile(r"^\s*#0\s+0x0{8,16} in \?\? \(\)")
# gdb stopping a process on a fatal signal (a live one: ``Thread 787 "python" received signal SIGBUS, Bus error.``,
# ``Program received signal SIGSEGV, Segmentation fault.``; a core file: ``Program terminated with signal SIGABRT,
# Aborted.``): gdb also stops on signals a program survives (SIGPIPE, SIGUSR1), which are left alone
_GDB_SIGNAL = re.compile(r"^\s*(?:Thread \d{1,9}(?: \"[^\"]{0,64}\")?|Program) (?:received|terminated with) signal "
                         r"(?P<sig>SIG(?:BUS|SEGV|ABRT|FPE|ILL)), (?P<what>[A-Za-z ]{1,40})")
# the kernel's record of a process that died of a fault (dmesg, journalctl -k): ``python[3862819]: segfault at 0 ip
# 00007efeb76ad8a2 sp 00007ffd19dc5450 error 4 in libvgpu.so[7efeb767e000+38000]``, ``traps: python[1234] general
# protection fault ip:7f… sp:7f… error:0 in libc.so.6[…]``: that pid's own crash, and the library it was in
_KERNEL_FAULT = re.compile(r"(?P<comm>[\w.\-]{1,32})\[(?P<pid>\d+)\]:? (?P<what>segfault at [0-9a-f]+|general protection "
                           r"fault)\b(?:[^\n]*? in (?P<lib>[^\[\s]+)\[)?")
# the kernel's mlx5 driver finding the HCA's firmware dead (its health poll): ``mlx5_core 0000:5e:00.0: device's health
# compromised - reached miss count`` (then a dump ending ``synd 0x7: irisc not responding``): the NIC failed
_MLX5_HEALTH = re.compile(r"mlx5_core (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): device's health compromised")
_SLURM_OOM = re.compile(r"Detected (?P<count>\d+) oom[_-]kill event(?:s|\(s\))? in (?:StepId=|step )"
                        r"(?P<step>[\w+]+(?:\.[\w+]+)*)")
# the same for Slurm's memory accounting without cgroups' OOM killer (jobacct_gather): ``slurmstepd: error: Job 41176
# exceeded memory limit (3940736 > 2068480), being killed`` (also ``Step 41176.0 exceeded …``)
_SLURM_MEMORY = re.compile(r"(?:Job|Step) (?P<step>\d+(?:\.\w+)?) exceeded memory limit \((?P<used>\d+) > (?P<limit>\d+)\), "
                           r"being killed"
                           # srun's and slurmstepd's words for the same (``srun: Exceeded job memory limit``,
                           # ``slurmstepd: error: Exceeded step memory limit at some point.``)
                           r"|\bExceeded (?:job|step) memory limit\b")
# (a host a reporter redacted, ``srun: error: <node-name>: tasks 6-7: …``, names no host)
_SRUN = re.compile(r"srun: error: (?:(?P<host>[\w.\-]+)|" + REDACTED_HOST + r"): tasks? (?P<tasks>[\d,\-\[\] ]+?): "
                   r"(?P<what>Killed|Terminated|"
                   r"Exited with exit code (?P<code>\d+)|Segmentation fault|Aborted|Bus error|[A-Z][\w ]{2,40}?)"
                   r"(?: \(core dumped\))?"  # srun adds it after a signal when the task dumped core
                   r"\s*(?:$|\s(?:<-|#|//).*$)")  # a note a user added after it: "Killed   <- the victim"
# Flux's shell (LLNL's scheduler and launcher) ending a job for the first task that exited (its doom plugin:
# ``flux-shell[0]: FATAL: doom: python: task rank 3 on host tioga12 exited (Exit 1) and exit-timeout=30s has expired``,
# ``… failed (Killed) and exit-on-error is set``; before 0.80 without ``task``: ``doom: rank 1 on host
# corona171 exited and exit-timeout=30s has expired``; before 0.70 without the host), also quoted in the job's exception:
# that task, on that host; a ``shell rank`` is a node's shell lost with its node (its number the node's, no task's)
_FLUX_DOOM = re.compile(r"\b(?:task |(?P<shell>shell ))?rank (?P<tasks>\d{1,7})(?: on host (?P<host>[\w.\-]{1,253}))? "
                        r"(?:exited|failed)(?: \((?:Exit (?P<code>\d{1,3})|(?P<what>[A-Z][\w ]{2,40}))\))?"
                        r" and (?:exit-timeout=\S{1,40} has expired|exit-on-error is set)")
# and its ``flux run`` / ``flux job attach`` summing up the job's end (libjob's words: ``flux-job: task(s) exited with exit
# code 1``, ``flux-job: task(s) Killed``)
_FLUX_TASKS = re.compile(r"\bflux-job: task\(s\) (?:exited with exit code (?P<code>\d{1,3})|(?P<what>[A-Z][\w ]{2,40}?))\s*$")
# the same line cut by a paste after ``task`` (``srun: error: nid006190: task``): the host failed, how is lost
_SRUN_CUT = re.compile(r"srun: error: (?P<host>[A-Za-z][\w.\-]*): tasks?(?: (?P<tasks>[\d,\-\[\]]+):?)?\s*$")
# HPE PALS (the PBS launcher of Aurora, Polaris, Sunspot): ``x1921c7s1b0n0: rank 12 died from signal 9``,
# ``x1921c7s1b0n0: rank 3 exited with code 1``, and the node's own agent: ``x4502c0s0b0n0: shepherd died from
# signal 9`` (a node lost: every rank on it)
_PALS = re.compile(r"\b(?:rank (?P<rank>\d+)|(?P<shepherd>shepherd)) (?:died from signal (?P<sig>\d+)|exited with code "
                   r"(?P<code>\d+))")
_KERNEL_OOM = re.compile(r"(?P<cgroup>Memory cgroup )?[Oo]ut of memory: Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)")
# the kernel's summary line before (or instead of, where a paste is cut) the kill (4.19+): ``oom-kill:constraint=
# CONSTRAINT_MEMCG,nodemask=(null),cpuset=…,mems_allowed=0-7,oom_memcg=…,task_memcg=…,task=python,pid=202779,uid=1000``
_KERNEL_OOM_SUMMARY = re.compile(r"\boom-kill:constraint=(?P<constraint>CONSTRAINT_\w+)"
                                 r"(?:[^\n]*?,task=(?P<comm>[^,\s]+),pid=(?P<pid>\d+))?")
_OOMKILLED = re.compile(r"\bOOMKilled\b")
# DLRover's job manager: ``job-edljob-worker-13 status change: Running to Failed by the event MODIFIED. Exit reason is
# Deleted`` (Deleted, OOMKilled, Evicted, …)
_POD_FAILED = re.compile(r"(?P<pod>[A-Za-z0-9][\w.\-]{0,252}) status change: \w+ to Failed by the event \w+\. "
                         r"Exit reason is (?P<reason>\w+)")
_POD_KILLED = ("Deleted", "OOMKilled", "Evicted")  # reasons whose processes were killed from outside
# Ray's control store giving up on a node (gcs_health_check_manager; printed by every driver and worker): ``The node
# with node id: 8f205b… and ip: 10.128.0.103 has been marked dead because the detector has missed too many heartbeats
# from it.`` (``and address: … and node name: …`` in newer releases): its raylet stopped, the workers on it are gone
_RAY_NODE_DEAD = re.compile(r"The node with node id: \w+ and (?:ip|address): (?P<ip>[\w.:\-]+?)(?: and node name: \S+)? "
                            r"has been marked dead because the detector has missed too many heartbeats")
# srun losing a node of the step (``srun: error: Node failure on gpu12``): Slurm ends the whole step from outside
_SRUN_NODE_FAILURE = re.compile(r"srun: error: Node failure on (?P<host>[\w.\-]+)"
                                # srun losing a node of its step (its index in the step, or a name)
                                r"|srun: error: Cannot communicate with node (?P<node>[\w.\-]+)\.\s+Aborting job")
# Slurm ending the job or step from outside: ``*** JOB 1234 ON node12 CANCELLED AT 2024-01-01T00:00:00 DUE TO
# TIME LIMIT ***`` (also ``DUE TO PREEMPTION``, ``DUE TO NODE FAILURE``, or ``… CANCELLED AT … ***`` for scancel)
_SLURM_CANCELLED = re.compile(r"(?:\*\*\* )?(?P<what>JOB|STEP) (?P<id>[\w.+]+) ON (?P<host>\S+) CANCELLED AT \S+"
                              # (a signal's: ``DUE to SIGNAL Terminated``, as slurmstepd writes it)
                              r"(?: DUE (?:TO|to) (?P<why>[A-Z ]+?|SIGNAL [A-Za-z ]+?))?(?:, SEE [A-Z ]+)?(?: \*\*\*|\s*$)")
# Slurm ending a job for reasons of its own: ``srun: PrologSlurmctld failed, job killed`` (the controller's prolog; on
# clouds, creating the nodes), slurmd's ``error: [job 42] prolog failed status=1:0`` (a node's prolog: Slurm drains the
# node), salloc's ``Prolog failure on node k003-006``, srun's ``error: Task launch for 23.0 failed on node hpc: Job
# prolog failed``; srun's ``error: Job allocation 42 has been revoked`` (the controller took the allocation back)
_SLURM_PROLOG = re.compile(r"\bPrologSlurmctld failed|\[job \d+\] prolog failed|\bProlog failure on node "
                           r"(?P<node>[\w.\-]+)|(?:failed on node (?P<on>[\w.\-]+): )?\bJob prolog failed")
_SLURM_REVOKED = re.compile(r"\bJob allocation (?P<id>\d+) has been revoked")
# the kubelet evicting a pod: ``The node was low on resource: memory. Container pytorch was using 61Gi, …``
_EVICTED = re.compile(r"The node was low on resource: (?P<resource>[\w-]+)")
# the kubelet evicting a pod over a limit of the pod's own (pkg/kubelet/eviction): ``Pod ephemeral local storage usage
# exceeds the total limit of containers 40Gi.``, ``Container pytorch exceeded its local ephemeral storage limit
# "20Gi".``, ``Usage of EmptyDir volume "dshm" exceeds the limit "16Gi".`` (the volume mounted at /dev/shm)
_EVICTED_LIMIT = re.compile(r"Pod ephemeral local storage usage exceeds the total limit|exceeded its local ephemeral "
                            r"storage limit|Usage of EmptyDir volume \"(?P<volume>[^\"]{1,63})\" exceeds the limit")
# the kubelet's and Kubernetes' controllers' events for a pod's processes ended from outside (``kubectl describe`` or
# ``kubectl get events``): ``SystemOOM … System OOM encountered, victim process: python, pid: 48213`` (the node's
# kernel OOM killer), ``Pod was terminated in response to imminent node shutdown.``, ``Preempted in order to admit
# critical pod``, the taint manager's ``Marking for deletion Pod default/llama-ft-worker-5`` (its node not ready),
# MPI Operator's ``MPIJobEvicted … 2/4 workers are evicted``, Kueue's ``Workload was evicted as there was no
# replacement for unhealthy node(s): node-3``; a pod preempted for another (the scheduler's ``Preempted by pod 6f1e…
# on node gpu-node-3``, Kueue's ``Preempted to accommodate a workload (UID: …)``, Volcano's ``Pod is evicted, because
# of preempt`` / ``reclaim``); a job ended at its deadline (the Job controller's ``Job was active longer than
# specified deadline``, Kubeflow Trainer's ``TrainJob exceeded its active deadline``, Kueue's ``deactivated due to
# exceeding the maximum execution time``); a node gone under its pods (the node controller's ``Node gpu-node-3 status is
# now: NodeNotReady``, its condition's ``Kubelet stopped posting node status.``)
_POD_ENDED = re.compile(
    r"System OOM encountered, victim process: (?P<comm>[^,\s]{1,64}), pid: (?P<pid>\d{1,10})"
    r"|(?P<shutdown>Pod was terminated in response to imminent node shutdown)"
    r"|(?P<preempted>Preempted in order to admit critical pod)"
    r"|TaintManagerEviction\s.*?Marking for deletion Pod (?:[\w.\-]+/)?(?P<pod>[\w.\-]{1,253})"
    r"|(?P<evicted>\d{1,6})/\d{1,6} workers are evicted"
    r"|no replacement for unhealthy node\(s\): (?P<nodes>[\w.\-]{1,253}(?:, ?[\w.\-]{1,253}){0,15})"
    r"|(?P<preempt>Preempted by pod [\w\-]{1,64}(?: on node (?P<pnode>[\w.\-]{1,253}))?|Preempted to accommodate a "
    r"workload|Pod is evicted, because of (?:preempt|reclaim))"
    r"|(?P<deadline>Job was active longer than specified deadline|exceeded its active deadline"
    r"|deactivated due to exceeding the maximum execution time)"
    r"|(?:Node (?P<nnode>[\w.\-]{1,253}) status is now: NodeNotReady|(?P<unposted>Kubelet stopped posting node status))")
_EXIT_137 = re.compile(r"(?:exit(?:ed)?(?: with)? (?:code|status)|Exit Code:?|exitCode:)\s*137\b", re.IGNORECASE)
_SRUN_SIGNALS = {"Killed": "SIGKILL", "Terminated": "SIGTERM", "Segmentation fault": "SIGSEGV",
                 "Aborted": "SIGABRT", "Bus error": "SIGBUS"}


# a process the kernel saw in uninterruptible sleep (state D) for longer than its hung-task timeout (kernel/hung_task.c:
# ``INFO: task python3:48213 blocked for more than 120 seconds.``; its stack follows, ``nfs_start_io_read+0x1e/0x60
# [nfs]``); a ps row in state D with its wait channel (``ps -eo pid,stat,wchan,etime,cmd``: ``1533  DNl
# nfs_start_io_read  1-22:05:51``); a frame of such a stack (/proc/PID/stack's ``[<0>] rpc_wait_bit_killable+0x1e/0x90
# [sunrpc]``); a network filesystem's server the kernel lost (``nfs: server nas01 not responding, still trying``,
# Lustre's ``Connection to lustre-OST0003 (at 10.0.0.5@o2ib) was lost; in progress operations using this service will
# wait for recovery to complete``)
_HUNG_TASK = re.compile(r"\btask (?P<comm>[^\s:][^:]{0,15}):(?P<pid>\d{1,10}) blocked for more than (?P<s>\d{1,9}) seconds")
_CHANNEL = "(?:" + "|".join(re.escape(c) for c in _WAIT_CHANNELS) + r")\w{0,60}"
_PS_BLOCKED = re.compile(r"^\s*(?P<pid>\d{1,10})\s+(?P<stat>D[A-Za-z<+]{0,5})\s+(?P<wchan>" + _CHANNEL + r")\b")
_FRAME = re.compile(r"^\s*(?:\[[\w .:]{1,40}\]\s+)?(?:\[<[0-9a-f]{1,16}>\]\s+|\? )?(?P<fn>" + _CHANNEL + r")\+0x[0-9a-f]{1,8}/0x[0-9a-f]{1,8}\b")
_SERVER_LOST = re.compile(r"\b(?P<fs>nfs|lockd): server (?P<server>[\w.\-:\[\]]{1,253}) not responding, "
                          r"(?:still trying|timed out)"
                          r"|\bConnection to (?P<target>[\w.\-]{1,100}) \(at (?P<nid>[\w.@:\-]{1,100})\) was lost; in "
                          r"progress operations using this service will wait for recovery")


def filesystem_of(function: str) -> str:
    """The filesystem a kernel function that a process waits in belongs to (``nfs_start_io_read``: NFS)."""
    return next((name for prefix, name in _FILESYSTEMS if function.startswith(prefix)), "")


def _io_blocked(line: Line, body: str) -> list[Event]:
    match = _HUNG_TASK.search(body) if "blocked for more than" in body else None
    if match:
        return [make_event(Kind.IO_BLOCKED, line, origin=Origin(pid=int(match["pid"])), data={
            "via": "hung-task", "comm": match["comm"], "pid": int(match["pid"]), "seconds": int(match["s"])})]
    match = _SERVER_LOST.search(body) if "not responding, " in body or "in progress operations" in body else None
    if match:
        server = match["server"] or f"{match['target']} ({match['nid']})"
        return [make_event(Kind.IO_BLOCKED, line, data={
            "via": "server-lost", "server": server, "fs": "NFS" if match["server"] else "Lustre"})]
    match = _PS_BLOCKED.search(body)
    if match:
        return [make_event(Kind.IO_BLOCKED, line, origin=Origin(pid=int(match["pid"])), data={
            "via": "ps", "pid": int(match["pid"]), "wchan": match["wchan"], "fs": filesystem_of(match["wchan"])})]
    match = _FRAME.search(body)
    if match:
        return [make_event(Kind.IO_BLOCKED, line, data={
            "via": "frame", "wchan": match["fn"], "fs": filesystem_of(match["fn"])})]
    return []


def _flux_exit(match: re.Match[str]) -> tuple[int | None, str | None]:
    """The exit code (a signal's as its negative number) and the signal of Flux's ``(Exit 1)`` / ``(Killed)``."""
    signal = _SRUN_SIGNALS.get(match["what"] or "") or SIGNAL_WORDS.get(match["what"] or "")
    number = signal_number(signal)
    return (int(match["code"]) if match["code"] else (-number if number else None)), signal


def parse(line: Line) -> list[Event]:
    body = line.body
    if any(w in body for w in _IO_WORDS):
        found = _io_blocked(line, body)
        if found:
            return found
    match = _SLURM_OOM.search(body)
    accounting = None if match else _SLURM_MEMORY.search(body) if "xceeded " in body else None
    memory = match or accounting  # the kernel's OOM killer in the job's cgroup, or Slurm's own accounting
    if memory:
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "slurm", "exitcode": -9, "signal": "SIGKILL", "oom": True, "step": memory["step"] or "",
            **({"enforcer": "slurm-accounting"} if accounting else {})})]
    match = _SRUN.search(body)
    if match:
        oom = match["what"].strip().lower() == "out of memory"  # the step's cgroup OOM killer took it
        signal = "SIGKILL" if oom else _SRUN_SIGNALS.get(match["what"])
        number = signal_number(signal)
        code = int(match["code"]) if match["code"] else (-number if number else None)
        if match["code"] and signal is None:  # a task that is a shell reports its child's death as 128 + N (137: SIGKILL)
            signal = shell_signal_name(code)
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["host"]) if match["host"] else None, data={
            "source": "slurm", "exitcode": code, "signal": signal, "tasks": match["tasks"].strip(),
            "unknown_exit": code is None, **({"oom": True} if oom else {})})]
    match = _FLUX_DOOM.search(body) if "exit-" in body else None
    if match:  # (a lost shell's number is its node's: no task named)
        code, signal = _flux_exit(match)
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["host"]) if match["host"] else None, data={
            "source": "flux", "exitcode": code, "signal": signal, "unknown_exit": code is None,
            **({} if match["shell"] else {"tasks": match["tasks"]})})]
    match = _FLUX_TASKS.search(body) if "flux-job: task(s) " in body else None
    if match:
        code, signal = _flux_exit(match)
        if code is not None:
            return [make_event(Kind.WORKER_FAILED, line, data={"source": "flux", "exitcode": code, "signal": signal})]
    match = _SRUN_CUT.search(body) if "srun: error: " in body else None
    if match:
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["host"]), data={
            "source": "slurm", "exitcode": None, "signal": None, "tasks": (match["tasks"] or "").strip(),
            "unknown_exit": True})]
    match = _SHELL_SIGNAL.search(body) if len(body) < 600 else None
    if match:
        return [make_event(Kind.FATAL_SIGNAL, line, origin=Origin(pid=int(match["pid"])) if match["pid"] else None, data={
            "signal": SIGNAL_WORDS[match["what"]], "what": f"{match['what']} (the shell's report)", "source": "shell"})]
    match = _GDB_SIGNAL.search(body) if " signal SIG" in body else None
    if match:
        return [make_event(Kind.FATAL_SIGNAL, line, data={
            "signal": match["sig"], "what": f"{match['what'].strip()} (stopped in a debugger)", "source": "gdb"})]
    if "abort () at " in body and _GDB_ABORT.search(body):
        return [make_event(Kind.FATAL_SIGNAL, line, data={
            "signal": "SIGABRT", "what": "abort() in a debugger's backtrace", "source": "gdb"})]
    if "0000000 in ?? ()" in body and _GDB_NULL_CALL.search(body):
        return [make_event(Kind.FATAL_SIGNAL, line, data={
            "signal": "SIGSEGV", "what": "a call to address zero in a debugger's backtrace", "source": "gdb"})]
    match = _PALS.search(body)
    if match:
        number = int(match["sig"]) if match["sig"] else None
        rank = int(match["rank"]) if match["rank"] else None
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=rank), data={
            "source": "pals", "signal": signal_name(-number) if number else None,
            "exitcode": -number if number else int(match["code"]), "node": bool(match["shepherd"])})]
    match = _MLX5_HEALTH.search(body) if "health compromised" in body else None
    if match:  # read by rules.node as an HCA that failed
        return [make_event(Kind.IB_ASYNC_EVENT, line, data={
            "event": "HCA health compromised (its firmware stopped responding)", "dev": match["pci"], "fatal": True,
            "source": "kernel"})]
    match = _KERNEL_FAULT.search(body) if ("segfault at" in body or "protection fault" in body) else None
    if match:
        where = f" in {match['lib']}" if match["lib"] else ""
        return [make_event(Kind.FATAL_SIGNAL, line, origin=Origin(pid=int(match["pid"])), data={
            "signal": "SIGSEGV", "what": f"{match['what']}{where} ({match['comm']})", "source": "kernel",
            **({"library": match["lib"]} if match["lib"] else {})})]
    match = _KERNEL_OOM.search(body)
    if match:
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(pid=int(match["pid"])), data={
            "source": "kernel", "exitcode": -9, "signal": "SIGKILL", "oom": True, "command": match["comm"],
            "cgroup": bool(match["cgroup"])})]
    match = _KERNEL_OOM_SUMMARY.search(body)
    if match:
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(pid=int(match["pid"])) if match["pid"] else None,
                           data={"source": "kernel", "exitcode": -9, "signal": "SIGKILL", "oom": True,
                                 "command": match["comm"], "cgroup": match["constraint"] == "CONSTRAINT_MEMCG"})]
    match = _SRUN_NODE_FAILURE.search(body)
    if match:  # Slurm lost a node of the step (down, unreachable): it ends the whole step from outside
        host = match["host"] or (match["node"] if not match["node"].isdigit() else None)
        return [make_event(Kind.AGENT_SIGNAL, line, origin=Origin(host=host), data={
            "source": "slurm", "reason": "node failure", "node_failed": True})]
    match = _RAY_NODE_DEAD.search(body) if "marked dead" in body else None
    if match:  # (the line's own prefix names the process that printed it, not the node it is about)
        return [make_event(Kind.AGENT_SIGNAL, line, origin=Origin(host=match["ip"]), data={
            "source": "ray", "reason": "node failure", "node_failed": True})]
    match = _SLURM_CANCELLED.search(body)
    if match:
        why = (match["why"] or "scancel").strip().lower()
        return [make_event(Kind.AGENT_SIGNAL, line, origin=Origin(host=match["host"]), data={
            "source": "slurm", "reason": why, "step": match["id"]})]
    match = _SLURM_PROLOG.search(body) if "rolog" in body else None
    if match:
        node = match["node"] or match["on"]
        return [make_event(Kind.AGENT_SIGNAL, line, origin=Origin(host=node) if node else None,
                           data={"source": "slurm", "reason": "prolog failed"})]
    match = _SLURM_REVOKED.search(body) if "revoked" in body else None
    if match:
        return [make_event(Kind.AGENT_SIGNAL, line, data={"source": "slurm", "reason": "allocation revoked",
                                                          "step": match["id"]})]
    match = _POD_FAILED.search(body)
    if match:  # an elastic job's controller (DLRover) on a pod it watches: why it left Running
        reason = match["reason"]
        killed = reason in _POD_KILLED
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["pod"]), data={
            "source": "kubernetes", "exitcode": -9 if killed else None, "signal": "SIGKILL" if killed else None,
            "oom": reason == "OOMKilled", "deleted": reason == "Deleted", "unknown_exit": not killed})]
    match = _EVICTED.search(body)
    if match:
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "kubernetes", "exitcode": -9, "signal": "SIGKILL", "oom": match["resource"] == "memory",
            "evicted": match["resource"]})]
    match = _EVICTED_LIMIT.search(body) if "xceed" in body else None
    if match:
        volume = match["volume"]
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "kubernetes", "exitcode": -9, "signal": "SIGKILL", "oom": False,
            "evicted": f'its emptyDir volume "{volume}"' if volume else "ephemeral-storage", "over_limit": True})]
    match = _POD_ENDED.search(body) if ("System OOM" in body or "Pod" in body or "evicted" in body
                                        or "critical pod" in body or "unhealthy node" in body or "Preempted" in body
                                        or "deadline" in body or "execution time" in body or "NodeNotReady" in body
                                        or "node status" in body) else None
    if match:
        if match["pid"]:
            return [make_event(Kind.WORKER_FAILED, line, origin=Origin(pid=int(match["pid"])), data={
                "source": "kubernetes", "exitcode": -9, "signal": "SIGKILL", "oom": True,
                "worker_pid": int(match["pid"])})]
        # evicted, preempted, its node shut down or gone: its processes were ended without an error of their own
        host = match["pod"] or match["pnode"] or match["nnode"] or (
            match["nodes"].split(",")[0].strip() if match["nodes"] else None)
        reason = ("pod evicted" if match["evicted"] else "node shutdown" if match["shutdown"] else
                  "preempted for a critical pod" if match["preempted"] else
                  "preempted for another pod or workload" if match["preempt"] else
                  "the job's deadline passed" if match["deadline"] else
                  "its node not ready" if match["pod"] or match["nnode"] or match["unposted"] else "its node unhealthy")
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=host) if host else None, data={
            "source": "kubernetes", "exitcode": -9, "signal": "SIGKILL", "oom": False, "deleted": True,
            "reason": reason})]
    if _OOMKILLED.search(body):
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "kubernetes", "exitcode": -9, "signal": "SIGKILL", "oom": True})]
    if _EXIT_137.search(body):
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "container", "exitcode": -9, "signal": "SIGKILL"})]
    return []
