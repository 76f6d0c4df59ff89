"""Worker deaths as launchers other than torchrun report them, and the launcher's own death. Pure: no I/O.

* DeepSpeed's launcher (``deepspeed`` / ``deepspeed.launcher.launch``):
  ``[launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', '--local_rank=1', ...] exits with
  return code = -7`` (the signal from the negative code; the command is the launcher's *last* one, the variable
  of its launch loop, so its ``--local_rank`` is the node's highest, not the failed worker's), and its
  ``Killing subprocess N`` lines (the survivors);
* Open MPI: ``mpirun noticed that process rank 0 with PID 0 on node dagobert exited on signal 9 (Killed).`` (also
  cut after ``rank 0 with``: that rank failed, how is lost);
  ``Primary job  terminated normally, but 1 process returned a non-zero exit code`` is only a consequence;
* Open MPI's summary: ``The first process to do so was: Process name: [[11192,1],8] Exit code: 3``;
* MPICH/Hydra: ``BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES`` then ``=   EXIT CODE: 9`` (the exit
  status of a process, here 9 from SIGKILL) and ``=   RANK 0 PID 123 RUNNING AT host``; ``YOUR APPLICATION
  TERMINATED WITH THE EXIT STRING: Killed (signal 9)``;
* Open MPI's TCP transport, ``[node1][[22157,1],4][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack]
  received unexpected process identifier [[22157,1],7]`` (rank 4 dialled a peer and another process answered:
  an address several hosts share, docker0's or virbr0's), ``… connect() to 172.17.0.1 failed: Connection refused
  (111)``, ``… mca_btl_tcp_frag_recv: readv failed: Connection reset by peer (104)`` (the peer went away);
* DeepSpeed's ``[launch.py:315:sigkill_handler] Killing subprocess 3966``: the launcher stopping the others;
* ``torch.multiprocessing.spawn``: ``process 0 terminated with signal SIGKILL``, ``process 1 terminated with
  exit code 1``;
* ``torch.distributed.launch`` before torch.elastic (<= 1.8): ``died with <Signals.SIGSEGV: 11>`` and
  ``subprocess.CalledProcessError: Command '[..., '--local_rank=7', ...]' died with <Signals.SIGSEGV: 11>.`` (the
  command is again the last one launched);
* the agent itself: torchrun's ``Received 1 death signal, shutting down workers`` (``Received Signals.SIGTERM
  death signal`` since 2.3) and ``Sending process N closing
  signal SIGHUP``: the launcher was told to stop (its terminal closed, the scheduler ended the job).

The command lines of DeepSpeed's and the old launcher's reports are long, and pasted logs wrap them: a
follower (:func:`follow`) joins the lines after ``sigkill_handler] [`` or ``CalledProcessError: Command '[``
until the report's end, then parses the whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event, masked, normalize_op
from syncdoctor.analyze.parsers.nccl_warn import ERRNO_OF_WORDS, IB_STATUS
from syncdoctor.analyze.parsers.torchrun import shell_signal_name, signal_name, signal_number, windows_signal

__all__ = ["KEYWORDS", "CommandFollower", "follow", "parse"]

KEYWORDS = ("btl_tcp", "exited due to process rank", "downstream from host", "has expired on coll_type", "retry count between two MPI", "retry count on a per-peer", "invalid value was given for", "Match incoming connection", "SignalException: Process", " got signal: ", "Received SIG", "auto-requeue signal", " terminated with ", "died unexpectedly (exit code", "was aborted", "error with exit code", "graceful shutdown",
            "after receiving SIG", "initiating graceful stop", "Preemption detected", "received on node_rank", "lost communication with its daemon", "ucp returned connect error", "Killing subprocess", "crashed with exit code", "inbound MPI TCP", "unexpectedly disconnected", "Main process received", "EXIT STRING", "process returned", "processes returned", "exited with non-zero", " exit with status code ", "sigkill_handler] [", "exits with return code", "exited on signal", "noticed that process rank", "EXIT CODE:", "terminated with signal",
            "terminated with exit code", "died with <Signals", "death signal", "RUNNING AT", "Process name: ",
            "xit code but got", "xit code of 0, but got",
            "UCX  ERROR", "UCX ERROR", "MPICH ERROR [Rank", " (synd 0x", "completion with error", "error (0x", "Error in mlx5dv_devx_obj_modify",
            "2init failed on ", "2rtr failed on ", "2rts failed on ", "status failed cmd",
            "Event Queue overflow", "ping failed on ", "as an mlx5 device", "GTL library is not linked",
            "ailed for slice", "Too many errors found in local RNIC", "ailed to modify QP to",
            # a failed slice's line cut before its start (below): the status words that carry an anchor
            "): local protection error", "): remote access error", "): Work Request Flushed Error",
            "): remote operation error", "): remote invalid request error", "): local length error", "UCX error: ",
            "): transport retry counter exceeded", "): RNR retry counter exceeded", "cqe with error",
            "|CCL_ERROR| ", "^C", "KVS get error: timeout limit: ",
            # a failed completion in an RDMA program's own words, its verbs status a number (below)
            "CQE error", "ompletion error", "WC error", "wc error",
            # Open MPI's notice of a process that called MPI_Abort, MPICH's own abort (below)
            "MPI_ABORT was invoked", "Abort(")

_DEEPSPEED = re.compile(r"(?P<cmd>\[.*?\])?\s*exits with return code = (?P<code>-?\d+)")
# MosaicML Composer's launcher (composer.cli.launcher): ``Rank 2 crashed with exit code -7.``
_COMPOSER = re.compile(r"\bRank (?P<rank>\d{1,6}) crashed with exit code (?P<code>-?\d{1,3})\b")
_LOCAL_ARG = re.compile(r"--local[_-]rank[= ]'?,? ?'?(?P<local>\d+)")
# (the PID and node may be masked by the poster: ``with PID xxxxxx on node xxxxxxxx``)
_OMPI = re.compile(r"(?:process|job) rank (?P<rank>\d+) with PID (?P<pid>\S+) on node (?P<host>\S+?) exited on signal "
                   r"(?P<sig>\d+)(?: \((?P<name>[^)]+)\))?")
# the same line cut by the paste before its signal: mpirun prints it only for the process that failed first
_OMPI_CUT = re.compile(r"^\s*(?:mpirun|mpiexec|orterun|prterun) noticed that process rank (?P<rank>\d+) with"
                       r"(?: PID (?P<pid>\d+))?(?: on node (?P<host>[\w.\-]+))?\s*$")
_DS_KILLING = re.compile(r"Killing subprocess (?P<pid>\d+)")
# MPICH: ``YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)``
_MPICH_STRING = re.compile(r"EXIT STRING: (?P<what>.*?)\s*\(signal (?P<num>\d+)\)")
_MPICH_EXIT = re.compile(r"=\s+EXIT CODE: (?P<code>\d+)")
_MPICH_RANK = re.compile(r"=\s+(?:RANK (?P<rank>\d+) )?PID (?P<pid>\d+) RUNNING AT (?P<host>\S+)")
_SPAWN = re.compile(r"process (?P<index>\d+) terminated with (?:signal (?P<sig>SIG\w+)|exit code (?P<code>-?\d+))")
# PyTorch's multi-process test harness (torch.testing._internal.common_distributed, also downstream projects' tests):
# ``AssertionError: False is not true : Expected zero exit code but got -11 for pid: 2718941``, ``Expect process 1 exit
# code to match Process 0 exit code of 0, but got -6``: a test's process that died, a negative code its signal
_TEST_EXIT = re.compile(r"Expected zero exit code but got (?P<code>-?\d+)(?: for pid: (?P<pid>\d+))?"
                        r"|Expect process (?P<index>\d+) exit code to match Process 0 exit code of 0, but got (?P<code2>-?\d+)")
_LEGACY = re.compile(r"died with <Signals\.(?P<sig>SIG\w+): (?P<num>\d+)>")
# torchrun's agent: "Received 1 death signal" (1.9-2.2), "Received Signals.SIGTERM death signal" (2.3+): the number is
# the signal's (an f-string of signal.Signals, an IntEnum, printed its number before Python 3.11: 1 is SIGHUP, a
# closed terminal; 15 SIGTERM; 2 SIGINT)
_AGENT_SIGNAL = re.compile(r"Received (?:(?P<num>\d{1,3})|Signals\.(?P<sig>SIG[A-Z]+)) death signal")
# DeepSpeed's launcher itself was signalled (its sigkill_handler): ``Main process received SIGTERM, exiting``
_DS_MAIN_SIGNAL = re.compile(r"Main process received (?P<sig>SIG\w+), exiting")
# a trainer stopping on a signal it caught, in its own words: Lightning's (``[rank: 2] Received SIGTERM: 15``,
# ``Handling auto-requeue signal: 10``: Slurm's warning before the time limit, ``Detected KeyboardInterrupt,
# attempting graceful shutdown ...``), Megatron's (``[exiting program after receiving SIGTERM.] datetime: …``), NeMo's
# (``Received signal 15, initiating graceful stop``, ``Preemption detected, saving checkpoint and exiting``) and
# SGLang's (``SIGTERM received on node_rank 1; waiting for …``)
_TRAINER_SIGNAL = re.compile(r"\bReceived (?P<sig>SIG[A-Z]{2,6}): \d{1,2}\s*$|\bHandling auto-requeue signal: (?P<requeue>\d{1,2})"
                             r"|(?P<interrupt>Detected KeyboardInterrupt, attempting graceful shutdown)"
                             r"|\[exiting program after receiving (?P<sig2>SIG[A-Z]{2,6})\.\]"
                             r"|\bReceived signal (?P<num>\d{1,2}), initiating graceful stop"
                             r"|(?P<preempted>Preemption detected, saving checkpoint and exiting)"
                             r"|\b(?P<sig3>SIG[A-Z]{2,6}) received on node_rank \d{1,6}\b")
# vLLM's multiprocess executor finding a worker gone (``Worker proc VllmWorker-3 died unexpectedly (exit code: -9),
# shutting down executor.``): the worker's index (its rank in the engine's group) and how it ended
_VLLM_WORKER_DIED = re.compile(r"\bWorker proc (?P<name>[\w.\-]{1,80}?)(?:-(?P<index>\d{1,4}))? died unexpectedly"
                               r"(?: \(exit code: (?P<code>-?\d{1,3})\))?")
# PaddlePaddle's launchers naming the trainer that failed: fleetrun's ``ABORT!!! Out of all 16 trainers, the trainer
# process with rank=[11] was aborted.`` and the new launcher's ``ERROR rank 5 error with exit code 1, check log for
# detail.``
# (and its controller's record of a container it ran: ``Container rank 0 status failed cmd ['/usr/bin/python3', '-u',
# 'tools/train.py', …] code 1 log log/workerlog.0``, the command list long, the paste often cutting it)
_PADDLE_ABORTED = re.compile(r"the trainer process with rank=\[(?P<ranks>\d{1,6}(?:, ?\d{1,6}){0,63})\] was aborted"
                             r"|\bERROR rank (?P<rank>\d{1,6}) error with exit code (?P<code>-?\d{1,3})"
                             r"|^\s*Container rank (?P<rank2>\d{1,6}) status failed cmd \[(?:[^\]\n]{0,4000}\] code "
                             r"(?P<code2>-?\d{1,3})\b)?")
# SGLang's launcher finding a scheduler process gone (``Scheduler or DataParallelController 39127 terminated with
# -9``): its pid and how it ended (a negative code: the signal)
_SGLANG_CHILD = re.compile(r"\b(?:Scheduler or DataParallelController|Scheduler|DataParallelController|Detokenizer"
                           r"(?:Manager)?) (?P<pid>\d{1,10}) terminated with (?P<code>-?\d{1,3})\b")
# torchrun's agent raising on the signal it got, where the paste keeps only its traceback's last line:
# ``torch.distributed.elastic.multiprocessing.api.SignalException: Process 81061 got signal: 1``
_SIGNAL_EXCEPTION = re.compile(r"SignalException: Process \d+ got sig(?:nal|val) ?: ?(?P<num>\d{1,2})\b"
                               # its message alone, under a caller's ``Message:`` heading (Flyte's report)
                               r"|^\s*Process \d{1,10} got signal: (?P<bare>\d{1,2})\s*$")
# Horovod's gloo runner (horovodrun, elastic): ``The first process to do so was:`` / ``Process name: worker-1[0]`` /
# ``Exit code: 137``
_HOROVOD_FIRST = re.compile(r"^Process name: (?P<host>[A-Za-z0-9][\w.\-]{0,252})\[(?P<local>\d{1,4})\]\s*$")
_OMPI_FIRST = re.compile(r"Process name: \[\[\d+,\d+\],(?P<rank>\d+)\](?:\s+Exit code:\s+(?P<code>-?\d+))?")
_EXIT_CODE = re.compile(r"Exit code:\s+(?P<code>-?\d+)")
# Horovod's gloo runner, for each process of its own that ended with an error (its rank, the shell's status: 137 is
# SIGKILL, 134 SIGABRT): ``Process 2 exit with status code 1.``
_HOROVOD_EXIT = re.compile(r"^\s*Process (?P<rank>\d{1,7}) exit with status code (?P<code>-?\d{1,3})\.?\s*$")
_WRAPPED_START = ("sigkill_handler] [", "CalledProcessError: Command '[")
_WRAPPED_END = re.compile(r"exits with return code|died with <Signals|returned non-zero exit status")


@dataclass
class CommandFollower:
    """Joins a launcher report whose command line the paste wrapped over several lines."""

    head: Line
    max_lines: int = 12
    parts: list[str] = field(default_factory=list)
    done: bool = False

    def feed(self, line: Line) -> bool:
        if self.done:
            return False
        self.parts.append(line.body.strip())
        if _WRAPPED_END.search(line.body):
            self.done = True
            return False
        return True

    def finish(self) -> list[Event]:
        if not self.done:
            return _unknown_exit(self.head)  # the paste ends (or moves on) before the report's end
        joined = " ".join([self.head.body.strip(), *self.parts])
        line = Line(text=self.head.text, body=joined, ref=self.head.ref, origin=self.head.origin,
                    time=self.head.time, time_text=self.head.time_text)
        return parse(line)


def _only_worker(local: re.Match[str] | None) -> int | None:
    """0 where the launcher's last command is local rank 0: it started one worker, the one that failed; any other
    last local rank says only how many it started."""
    return 0 if local is not None and int(local["local"]) == 0 else None


def _unknown_exit(head: Line) -> list[Event]:
    """DeepSpeed's launcher prints a command at ERROR before the return code: a paste cut there still says a
    worker failed (which one, the command does not say: see :func:`parse`)."""
    local = _LOCAL_ARG.search(head.body)
    if "sigkill_handler] [" not in head.body or not local:
        return []
    return [make_event(Kind.WORKER_FAILED, head, data={
        "source": "deepspeed", "exitcode": None, "signal": None, "local_rank": None,
        "last_local_rank": int(local["local"]), "unknown_exit": True})]


def follow(line: Line) -> CommandFollower | None:
    body = line.body
    if any(start in body for start in _WRAPPED_START) and not _WRAPPED_END.search(body):
        return CommandFollower(line)
    return None


@dataclass
class _OmpiFollower:
    """Open MPI's 'The first process to do so was:' block: the process name, then its exit code."""

    head: Line
    max_lines: int = 4
    rank: int | None = None
    code: int | None = None
    host: str | None = None  # Horovod's gloo runner names the process by host and local rank: ``worker-1[0]``
    local: int | None = None

    def feed(self, line: Line) -> bool:
        match = _EXIT_CODE.search(line.body)
        if match:
            self.code = int(match["code"])
            return False
        return True

    def finish(self) -> list[Event]:
        if self.rank is None and self.host is None:
            return []
        signal = shell_signal_name(self.code)
        origin = Origin(rank=self.rank, host=self.host, local_rank=self.local)
        return [make_event(Kind.WORKER_FAILED, self.head, origin=origin, data={
            "source": "mpirun" if self.host is None else "horovod", "exitcode": self.code, "signal": signal,
            "mpi_rank": self.rank})]


@dataclass
class _HorovodFirstFollower:
    """Horovod's runner naming the first process that failed, ``Horovod detected that one or more processes exited with
    non-zero status, thus causing the job to be terminated. The first process to do so was:``, then ``Process name:
    …`` and ``Exit code: …`` on the next lines, in either order (a job platform's copy of the message prints the exit
    code first). A name of the form ``host[local rank]`` is read by :class:`_OmpiFollower` from its own line; any
    other name (``1``) is kept as the process's name alone."""

    head: Line
    max_lines: int = 3
    code: int | None = None
    name: str | None = None
    at: Line | None = None  # the exit code's line: the event's (the head's is the summary's, exit code unknown)

    def feed(self, line: Line) -> bool:
        body = line.body.strip()
        match = _EXIT_CODE.match(body)
        if match:
            self.code, self.at = int(match["code"]), line
        elif body.startswith("Process name:"):
            self.name = body.removeprefix("Process name:").strip()[:80]
        else:
            return False
        return self.code is None or self.name is None

    def finish(self) -> list[Event]:
        if self.code is None or self.name is None or _HOROVOD_FIRST.match(f"Process name: {self.name}"):
            return []
        return [make_event(Kind.WORKER_FAILED, self.at or self.head, data={
            "source": "horovod", "exitcode": self.code, "signal": shell_signal_name(self.code),
            "process_name": self.name, "first": True})]


@dataclass
class _NoticedFollower:
    """PRRTE (Open MPI 5) wraps ``… noticed that process rank 3 with PID 19981 on node gpu-b07 exited on`` /
    ``signal 9 (Killed).`` over two lines: the signal is on the next one."""

    head: Line
    rank: int
    pid: int
    host: str
    max_lines: int = 2
    number: int | None = None

    def feed(self, line: Line) -> bool:
        match = _NOTICED_SIGNAL.match(line.body.strip())
        if match:
            self.number = int(match["sig"])
        return False

    def finish(self) -> list[Event]:
        if self.number is None:
            return []
        return [make_event(Kind.WORKER_FAILED, self.head, origin=Origin(rank=self.rank, host=self.host), data={
            "source": "mpirun", "exitcode": -self.number, "signal": signal_name(-self.number),
            "mpi_rank": self.rank, "worker_pid": self.pid})]


# Intel MPI's Hydra (mpiexec.hydra) on a node whose proxy ended badly: ``[mpiexec@node-0] wait_proxies_to_terminate
# (…/i_mpiexec.c:537): downstream from host node-3 exited with status 1`` (or ``was killed by signal 9 (Killed)``)
_HYDRA_DOWNSTREAM = re.compile(r"downstream from host (?P<host>[\w.\-]{1,253}) (?:exited with status (?P<code>\d{1,3})"
                               r"|was killed by signal (?P<sig>\d{1,2}))")
# UCC's collective timeout (ucc_schedule.h, UCC_WARN after UCX's prefix): ``UCC  WARN  timeout 1800 sec. has expired on
# coll_type allreduce, team_size 16``
_UCC_TIMEOUT = re.compile(r"timeout (?P<s>\d{1,7}) sec\. has expired on coll_type (?P<op>\w{1,40})(?:, team_size (?P<n>\d{1,7}))?")
# Open MPI's (ORTE's, PRRTE's) summary when the first process to fail did not exit on a signal (help-orterun.txt,
# proc-exit-no-sync and proc-exit-no-sync-unknown): ``mpirun has exited due to process rank 3 with PID 12345 on`` /
# ``node node-3 exiting improperly. There are three reasons this could occur:`` (or ``… calling "abort". This may have
# caused other processes``); wrapped there, on one line where a paste joined them
_OMPI_EXITED_HOW = r"node (?P<host>[\w.\-]+)(?:\s+(?P<how>exiting improperly|calling(?: \"abort\")?))?"
_OMPI_EXITED = re.compile(r"has exited due to process rank (?P<rank>\d{1,7}) with PID (?P<pid>\d{1,10}) on(?:\s+"
                          + _OMPI_EXITED_HOW + ")?")
_OMPI_EXITED_NODE = re.compile(r"^\s*" + _OMPI_EXITED_HOW)


def _ompi_exited(line: Line, rank: int, pid: int, host: str | None, how: str | None) -> list[Event]:
    """The process Open MPI names as the first to end badly: that rank failed (its own error, above, says why)."""
    return [make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=rank, host=host, pid=pid), data={
        "source": "mpirun", "exitcode": None, "signal": None, "unknown_exit": True, "mpi_rank": rank,
        "worker_pid": pid, "nonzero": True, "how": "called abort" if how and how.startswith("calling") else "exited improperly"})]


@dataclass
class _ExitedFollower:
    """The node of :data:`_OMPI_EXITED`, wrapped onto the next line."""

    head: Line
    rank: int
    pid: int
    max_lines: int = 2
    host: str | None = None
    how: str | None = None

    def feed(self, line: Line) -> bool:
        match = _OMPI_EXITED_NODE.match(line.body)
        if match:
            self.host, self.how = match["host"], match["how"]
        return False

    def finish(self) -> list[Event]:
        host = None if self.host is None or masked(self.host) else self.host
        return _ompi_exited(self.head, self.rank, self.pid, host, self.how)


_NOTICED_CUT = re.compile(r"noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<host>\S+) "
                          r"exited on\s*$")
_NOTICED_SIGNAL = re.compile(r"signal (?P<sig>\d+)(?: \([^)]*\))?\.?$")


@dataclass
class _InboundFollower:
    """Open MPI's help text for an inbound TCP connection from an unexpected address (btl_tcp): ``Local host:``,
    ``Peer hostname: node1 ([[30832,1],1])``, ``Source IP of socket: 10.10.10.8``, ``Known IPs of peer:`` and the
    addresses below it (the peer connected from an interface it never announced); and the one for a peer process
    that disconnected (``Peer host:``: the host whose process went away)."""

    head: Line
    max_lines: int = 16
    fields: dict[str, str] = field(default_factory=dict)
    known: list[str] = field(default_factory=list)
    listing: bool = False

    def feed(self, line: Line) -> bool:
        text = line.body.strip()
        if text.startswith("---") and self.fields:
            return False
        match = _INBOUND_FIELD.match(text)
        if match:
            self.fields[match["key"]] = match["value"].strip()
            self.listing = match["key"] == "Known IPs of peer"
        elif self.listing and _IP_LIKE.fullmatch(text):
            self.known.append(text)
        return True

    def finish(self) -> list[Event]:
        local = self.fields.get("Local host") or None
        bad = _MPI_BAD_IF.search(self.head.body)
        if bad is not None:  # an interface list naming an interface this host does not have: ignored there
            value = self.fields.get("Value") or None
            if value is None or "nknown interface" not in self.fields.get("Message", ""):
                return []
            return [make_event(Kind.INTERFACE_MISSING, self.head, origin=Origin(host=local) if local else None, data={
                "ifname": value, "transport": "mpi", "param": bad["param"],
                "message": self.fields.get("Message", "")[:120]})]
        if _MPI_LOST_DAEMON in self.head.body:
            node = self.fields.get("hostname") or None
            return [make_event(Kind.LAUNCH_UNREACHABLE, self.head, data={
                "error": "mpirun lost communication with its daemon", "via": "Open MPI", "lost": True,
                **({"host": node} if node else {})})]
        if _MPI_UNCONNECTED in self.head.body:  # this host could not open a TCP connection to that one
            remote = self.fields.get("Remote host") or None
            if remote is None:
                return []
            return [make_event(Kind.NCCL_CONNECT_FAILED, self.head, origin=Origin(host=local) if local else None,
                               data={"error": "could not complete a TCP connection (a firewall on the remote host?)",
                                     "peer_addr": remote, "transport": "mpi"})]
        if _MPI_CONNECT_FAIL in self.head.body:  # this process's TCP transport could not reach a peer's address
            dialled = _MPI_DIALLED.search(self.fields.get("Message", ""))
            if dialled is None:
                return []
            return [make_event(Kind.NCCL_CONNECT_FAILED, self.head, origin=Origin(host=local) if local else None,
                               data={"error": (self.fields.get("Error") or "connect failed")[:120],
                                     "peer_addr": dialled["addr"], "peer_port": int(dialled["port"]),
                                     "transport": "mpi"})]
        if _MPI_IB_RETRY in self.head.body or _MPI_IB_RNR in self.head.body:  # the fabric gave up on a connection
            retry = _MPI_IB_RETRY in self.head.body
            events = _completion_error(
                self.head, 12 if retry else 13, "", "mpi", hca=self.fields.get("Local device") or None,
                origin=Origin(host=local) if local else None)
            across = self.fields.get("Peer host") or None
            return [replace(e, data={**e.data, "peer_addr": across}) for e in events] if across else events
        if _MPI_DISCONNECT in self.head.body:  # the peer process went away: a lost connection, with the peer's host
            gone = self.fields.get("Peer host") or None
            if gone is None:
                return []
            return [make_event(Kind.PEER_CLOSED, self.head, origin=Origin(host=local) if local else None, data={
                "transport": "mpi", "how": "disconnected", "peer_addr": gone})]
        peer = _INBOUND_PEER.match(self.fields.get("Peer hostname", ""))
        data: dict[str, object] = {"what": "unexpected-address", "message": self.head.body.strip()[:200]}
        if peer:
            data["peer_host"] = peer["host"]
            data["answered_rank"] = int(peer["rank"]) if peer["rank"] else None
        if self.fields.get("Source IP of socket"):
            data["source_ip"] = self.fields["Source IP of socket"]
        if self.known:
            data["known_ips"] = self.known[:8]
        return [make_event(Kind.MPI_TRANSPORT, self.head, origin=Origin(host=local) if local else None, data=data)]


_INBOUND_FIELD = re.compile(r"(?P<key>Local host|Local PID|Local device|Peer hostname|Peer host|Remote host|Source IP of socket|"
                            r"Known IPs of peer|hostname|Value|Message|Error):"
                            r"\s*(?P<value>.*)$")
_INBOUND_PEER = re.compile(r"(?P<host>[\w.\-]+)(?:\s*\(\[\[\d+,\d+\],(?P<rank>\d+)\]\))?")
_IP_LIKE = re.compile(r"[0-9a-fA-F.:%\w\-]{2,60}")


# Open MPI's help text when a peer process went away: ``An MPI communication peer process has unexpectedly
# disconnected.`` then ``Local host:``, ``Local PID:``, ``Peer host:`` (read by the same follower)
_MPI_DISCONNECT = "peer process has unexpectedly disconnected"
# and Open MPI's openib transport giving up on a connection (help-mpi-btl-openib.txt, Open MPI 1.x-4.x): ``The
# InfiniBand retry count between two MPI processes has been`` / ``exceeded.`` (a completion with status 12), ``The
# OpenFabrics "receiver not ready" retry count on a per-peer`` (status 13), then ``Local host:``, ``Local device:``,
# ``Peer host:``
_MPI_IB_RETRY = "retry count between two MPI processes has been"
_MPI_IB_RNR = "\"receiver not ready\" retry count on a per-peer"
# and when a process or daemon could not connect to another (help-oob-tcp.txt / help-mpi-btl-tcp.txt): ``A process or
# daemon was unable to complete a TCP connection`` / ``to another process:`` then ``Local host:``, ``Remote host:``
_MPI_UNCONNECTED = "unable to complete a TCP connection"
# and when an MPI process's TCP transport could not connect to a peer process (help-mpi-btl-tcp.txt, client connect
# fail): ``WARNING: Open MPI failed to TCP connect to a peer MPI process.  This`` then ``Local host:``, ``PID:``,
# ``Message:    connect() to 169.254.140.13:1026 failed``, ``Error:      No route to host (113)``
_MPI_CONNECT_FAIL = "failed to TCP connect to a peer MPI process"
_MPI_DIALLED = re.compile(r"connect\(\) to \[?(?P<addr>[0-9a-fA-F.:]{2,45}?)\]?:(?P<port>\d{1,5}) failed")
# and when mpirun lost a node's daemon (help-errmgr-base.txt): ``ORTE has lost communication with its daemon located
# on node:`` then ``hostname:  ip-10-15-20-17`` (the node went down, or its network)
_MPI_LOST_DAEMON = "has lost communication with its daemon"
# and when an interface list names an interface the host lacks (help-mpi-btl-tcp.txt, help-oob-tcp.txt):
# ``WARNING: An invalid value was given for btl_tcp_if_include.  This`` then ``Local host:``, ``Value:``, ``Message:
# Unknown interface name`` (the value is ignored there: Open MPI uses every interface)
_MPI_BAD_IF = re.compile(r"invalid value was given for (?P<param>(?:btl|oob)_tcp_if_(?:in|ex)clude)")


# the line UCX prints below a completion error: the work request that failed, by its index on the queue pair
# (``RC QP 0x1cc0 wqe[1069]: SEND --e …``, ``DCI QP 0x14e4 wqe[0]: SEND s-e …``)
_UCX_WQE = re.compile(r"\bQP 0x[0-9a-f]+ wqe\[(?P<wqe>\d+)\]")


@dataclass
class _WqeFollower:
    """The line after UCX's completion error: the index of the work request that failed on its queue pair. Above
    0, the queue pair had carried traffic before (the failure came late); 0, it was its first."""

    head: Line
    max_lines: int = 2  # a blank line between them (a paste that doubles every line end)
    wqe: int | None = None

    def feed(self, line: Line) -> bool:
        if not line.body.strip():
            return True
        match = _UCX_WQE.search(line.body)
        if match:
            self.wqe = int(match["wqe"])
        return False

    def finish(self) -> list[Event]:
        if self.wqe is None:
            return []
        return [replace(event, data={**event.data, "wqe": self.wqe}) for event in parse(self.head)
                if event.kind is Kind.IB_COMPLETION_ERROR]


def _completion_error(line: Line, status: int | None, words: str, transport: str, *, hca: str | None = None,
                      vendor_err: int | None = None, origin: Origin | None = None, wqe: int | None = None) -> list[Event]:
    """An IB completion error an RDMA library other than NCCL reported, as the verbs status NCCL prints (its words
    where NCCL names none)."""
    return [make_event(Kind.IB_COMPLETION_ERROR, line, origin=origin, data={
        "status": status, "status_text": IB_STATUS.get(status, words) if status is not None else words, "opcode": None,
        "vendor_err": vendor_err, "hca": hca, "transport": transport, **({"wqe": wqe} if wqe is not None else {})})]


def _ucx_completion(line: Line, match: re.Match[str], status: int, *, vendor_err: int | None = None,
                    hca: str | None = None, wqe: int | None = None) -> list[Event]:
    """The IB completion error UCX reported (either transport's words), as the verbs status NCCL prints."""
    origin = Origin(host=match["host"], pid=int(match["pid"])) if match["host"] else None
    return _completion_error(line, status, match["what"], "ucx", hca=hca, vendor_err=vendor_err, origin=origin, wqe=wqe)


def _marked(line: Line, source: str, word: str, origin: Origin | None = None, **data: object) -> list[Event]:
    """An error line of a format the rules select by its ``source`` (no kind of its own: the fallback quotes it
    where no rule reads it)."""
    return [make_event(Kind.ERROR_LINE, line, origin=origin, data={
        "word": word, "message": line.body.strip()[:300], "source": source, **data})]


# MS-MPI's mpiexec after a job it aborted: ``---- error analysis -----`` opens (and closes) its account of the processes
# that failed, each as ``[1] on DESKTOP-NPQAHQ4`` then ``C:\\…\\cntk.exe ended prematurely and may have crashed. exit
# code 1`` (0xc0000005 for an access violation); the ranks it lists above, ``[0] terminated``, are those it ended
_MSMPI_ANALYSIS = re.compile(r"^\s*-{3,} error analysis -{3,}\s*$")
_MSMPI_PLACE = re.compile(r"^\s*\[(?P<rank>\d{1,7})\] on (?P<host>[\w.\-]{1,100})\s*$")
_MSMPI_ENDED = re.compile(r"\bended prematurely and may have crashed\. exit code (?P<code>0x[0-9a-fA-F]{1,8}|-?\d{1,10})")


@dataclass
class _MsmpiFollower:
    """MS-MPI's error analysis: each process it names (rank, host) with the exit code it ended with."""

    head: Line
    max_lines: int = 24
    rank: int | None = None
    host: str | None = None
    found: list[Event] = field(default_factory=list)

    def feed(self, line: Line) -> bool:
        body = line.body
        if _MSMPI_ANALYSIS.match(body):
            return False
        place = _MSMPI_PLACE.match(body)
        if place:
            self.rank, self.host = int(place["rank"]), place["host"]
            return True
        ended = _MSMPI_ENDED.search(body)
        if ended and self.rank is not None:
            text = ended["code"]
            code = int(text, 16) if text.lower().startswith("0x") else int(text)
            signal = windows_signal(code)
            number = signal_number(signal) if signal else None
            self.found.append(make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=self.rank, host=self.host),
                                         data={"source": "msmpi", "exitcode": -number if number else code,
                                               "signal": signal}))
            self.rank = self.host = None
        return len(self.found) < 64

    def finish(self) -> list[Event]:
        return self.found


def follow_mpi(line: Line) -> (_OmpiFollower | _NoticedFollower | _InboundFollower | _WqeFollower | _AbortFollower
                             | _ExitedFollower | _HorovodFirstFollower | _MsmpiFollower | None):
    if "error analysis" in line.body and _MSMPI_ANALYSIS.match(line.body):
        return _MsmpiFollower(line)
    if "(synd 0x" in line.body and _UCX_COMPLETION.search(line.body) and not _UCX_WQE.search(line.body):
        return _WqeFollower(line)
    if _MPI_IB_RETRY in line.body or _MPI_IB_RNR in line.body:  # (the spec quoted and the advice before the hosts)
        return _InboundFollower(line, max_lines=48)
    if _BTL_INBOUND in line.body or _MPI_DISCONNECT in line.body or _MPI_UNCONNECTED in line.body or \
            _MPI_CONNECT_FAIL in line.body or \
            _MPI_LOST_DAEMON in line.body or _MPI_BAD_IF.search(line.body):
        return _InboundFollower(line)
    if "MPI_ABORT was invoked" in line.body and (abort := _OMPI_ABORT.search(line.body)) and not abort["code"]:
        return _AbortFollower(line, abort)
    if "Horovod detected that one or more processes exited with non-zero" in line.body:
        return _HorovodFirstFollower(line)
    match = _OMPI_FIRST.search(line.body)
    if match and match["code"] is None:
        follower = _OmpiFollower(line)
        follower.rank = int(match["rank"])
        return follower
    named = _HOROVOD_FIRST.search(line.body)
    if named:
        follower = _OmpiFollower(line)
        follower.host, follower.local = named["host"], int(named["local"])
        return follower
    cut = _NOTICED_CUT.search(line.body)
    if cut:
        return _NoticedFollower(line, int(cut["rank"]), int(cut["pid"]), cut["host"])
    if "exited due to process rank" in line.body and (exited := _OMPI_EXITED.search(line.body)) and not exited["host"]:
        return _ExitedFollower(line, int(exited["rank"]), int(exited["pid"]))
    return None


# Open MPI's (and PRRTE's) notice that a process called MPI_Abort (help-mpi-api.txt): ``MPI_ABORT was invoked on rank 3
# in communicator MPI_COMM_WORLD`` then ``with errorcode 1.`` (on one line when a paste joined them); a rank of
# another communicator (``MPI COMMUNICATOR 4 CREATE FROM 0``) is that communicator's, not the job's
_OMPI_ABORT = re.compile(r"MPI_ABORT was invoked on rank (?P<rank>\d{1,7}) in communicator (?P<comm>.+?)\s*"
                         r"(?:with errorcode (?P<code>-?\d{1,10})\.?\s*)?$")


def _mpi_abort(line: Line, match: re.Match[str], code: int | None) -> list[Event]:
    """A process that called MPI_Abort with ``code``: its own error (above it, in its output) is why, and Open MPI
    then kills the others. Without its code (the block cut after its first line) the line is quoted as an error."""
    if code is None:
        return [make_event(Kind.ERROR_LINE, line, data={"message": line.body.strip()[:300]})]
    world = match["comm"] == "MPI_COMM_WORLD"
    return [make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=int(match["rank"])) if world else None, data={
        "source": "mpi-abort", "exitcode": code, "signal": None, "communicator": match["comm"],
        **({} if world else {"comm_rank": int(match["rank"])})})]


@dataclass
class _AbortFollower:
    """Open MPI's MPI_ABORT notice, its errorcode on the next line (``with errorcode 1.``; PRRTE's ``  Errorcode:
    1`` under ``  Proc: [[60146,1],0]``)."""

    head: Line
    match: re.Match[str]
    max_lines: int = 3
    code: int | None = None

    def feed(self, line: Line) -> bool:
        found = _ABORT_CODE.search(line.body)
        if found:
            self.code = int(found["code"])
            return False
        return bool(line.body.strip()) and "Proc:" in line.body  # PRRTE's process line comes first

    def finish(self) -> list[Event]:
        return _mpi_abort(self.head, self.match, self.code)


_ABORT_CODE = re.compile(r"^\s*(?:with errorcode|Errorcode:)\s+(?P<code>-?\d{1,10})\b")

# Open MPI's summary, when the paste stops before its "Process name:" block says which one
_OMPI_NONZERO = re.compile(r"(?P<count>\d+) process(?:es)? returned\s*(?:a non-zero exit code)?\s*$"
                           r"|detected that one or more processes exited with non-zero status")


_BTL = re.compile(r"\[(?P<host>[\w.\-]+)\]\[\[\d+,\d+\],(?P<rank>\d+)\]\[btl_tcp\w*\.c:\d+:\w+\]\s*(?P<msg>.+)")
_BTL_INBOUND = "detected an inbound MPI TCP connection request"
_BTL_PEER = re.compile(r"received unexpected process identifier \[\[\d+,\d+\],(?P<got>\d+)\]")
_BTL_CONNECT = re.compile(r"connect\(\) to (?P<addr>[\w.:\-]+) failed: (?P<err>[^(]+?)\s*(?:\(\d+\))?\s*$")
# UCX's socket transport (Open MPI's pml_ucx, HPC-X, NCCL's UCX plugin): ``[1746051351.812265] [host:1950659:0]
# sock.c:334  UCX  ERROR   connect(fd=168, dest_addr=169.254.4.6:52595) failed: Connection refused``
# UCC's TL/UCP over UCX: ``[1716868653.124073] [c5e62fb2396d:1618 :0]  tl_ucp_ep.c:43  TL_UCP ERROR ucp returned
# connect error: Endpoint timeout``
_UCX_EP = re.compile(r"(?:\[(?P<host>[\w.\-]+):(?P<pid>\d+) ?:\d+\]\s+)?\S+:\d+\s+(?:TL_UCP|UCX)\s+ERROR\s+ucp returned "
                     r"connect error: (?P<err>[^\n]+?)\s*$")
# UCX's mlx5 transport reporting a completion with error (uct/ib/mlx5/ib_mlx5_log.c): ``[compute001:31180:0:31180]
# ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)``, and the
# older ``Error on QP 0x1510 wqe[0]: Transport retry count exceeded (synd 0x15 vend 0x81) opcode SEND``: the
# words are the syndrome's, mapped here to the verbs status NCCL prints (vend 0x81 is NCCL's vendor error 129)
_UCX_COMPLETION = re.compile(
    r"(?:\[(?P<host>[\w.\-]+):(?P<pid>\d+):\d+(?::\d+)?\]\s+)?(?:\S+:\d+\s+)?(?:Error on QP 0x[0-9a-f]+ wqe\[\d+\]: )?"
    r"(?P<what>Local length|Local QP operation|Local protection|WR flushed because QP in error state|Memory window bind|"
    r"Bad response|Local access|Invalid request|Remote access|Remote QP|Remote OP|Remote operation|"
    r"Transport retry count exceeded|Receive-no-ready retry count exceeded|Remote side aborted)"
    # (1.16 on: ``Local protection error``, ``Remote operation error``…; 1.11-1.15 ``Remote OP``, 1.10 and before
    # ``Remote QP``)
    r"(?: error)?(?: on (?P<hca>[\w.\-]+:\d+)/(?P<link>\w+))? \(synd 0x[0-9a-f]+ vend 0x(?P<vend>[0-9a-f]+)")
_UCX_STATUS = {"Local length": 1, "Local QP operation": 2, "Local protection": 4,
               "WR flushed because QP in error state": 5, "Memory window bind": 6, "Bad response": 7,
               "Local access": 8, "Invalid request": 9, "Remote access": 10, "Remote QP": 11, "Remote OP": 11,
               "Remote operation": 11, "Transport retry count exceeded": 12,
               "Receive-no-ready retry count exceeded": 13, "Remote side aborted": 16}
# older UCX's verbs transport (rc_verbs_iface.c, ud_verbs.c): ``[clx-orion-097:26451:0:26451] rc_verbs_iface.c:63
# FATAL: send completion with error: transport retry counter exceeded`` (ibv_wc_status_str's words; UCX 1.5's
# without ``FATAL:``, after libmlx5's dump of the completion, ``mlx5:  got completion with error:``)
# UCX's EFA transport (srd_iface.c), its level between: ``[1784621081.896649] [host-pod:537  :1]  srd_iface.c:221  UCX
# ERROR send completion[0] with error on rdmap132s0/0x55cf4425cfb0: Work Request Flushed Error, vendor_err 0x1``
_UCX_VERBS_COMPLETION = re.compile(
    r"(?:\[(?P<host>[\w.\-]+):(?P<pid>\d+)\s{0,4}:\d+(?::\d+)?\]\s+)?\S+\.c:\d+\s+(?:UCX\s+ERROR\s+)?(?:FATAL: )?"
    r"(?:send|receive|recv) completion(?:\[\d{1,4}\])? with error(?: on (?P<dev>[\w.\-]{1,60})(?:/0x[0-9a-f]{1,16})?)?: "
    r"(?P<what>local protection error|Work Request Flushed Error|remote access error|"
    r"transport retry counter exceeded|RNR retry counter exceeded)(?:, vendor_err (?P<vendor>0x[0-9a-f]{1,8}))?",
    re.IGNORECASE)
# the kernel's mlx5 driver on a queue pair's failed completion (mlx5_ib's dump, in dmesg: ``mlx5_bond_0/1: QP 51291
# error: local length error (0x8e 0x0 0x0)``), ib_wc_status_msg()'s words (``WR flushed`` for status 5 there)
_KERNEL_QP_ERROR = re.compile(r"\b(?P<dev>[a-z][\w]{1,30}?)(?:/\d{1,2})?: QP \d{1,10} error: (?P<what>[A-Za-z][\w ]{2,60}?) "
                              r"\(0x[0-9a-f]{1,8} 0x[0-9a-f]{1,8} 0x[0-9a-f]{1,8}\)")
# ibv_wc_status_str()'s words for a failed completion, as RDMA libraries that print them verbatim write them
# (Mooncake's transfer engine: ``Worker: Process failed for slice (opcode: 1, …, local_nic: mlx5_bond_2, peer_nic:
# 10.0.2.98:15992@mlx5_bond_1, dest_rkey: 2146656, retry_cnt: 0): local protection error``)
_WC_STATUS_WORDS = {"local length error": 1, "local QP operation error": 2, "local protection error": 4,
                    "Work Request Flushed Error": 5, "memory management operation error": 6, "bad response error": 7,
                    "local access error": 8, "remote invalid request error": 9, "remote access error": 10,
                    "remote operation error": 11, "transport retry counter exceeded": 12,
                    "RNR retry counter exceeded": 13, "remote aborted error": 16, "fatal error": 19,
                    "response timeout error": 20, "general error": 21}
# a failed completion in an RDMA program's own words, with the verbs status as a number (UCCL's transfer engine:
# ``[rdma/providers/ib/rdma_data_channel_impl_ib.cc:186] pollOnce - channel_id: 1, CQE error, wr_id=0, status=5 (Work
# Request Flushed Error)``; others: ``completion error … status: 12``)
_CQE_STATUS = re.compile(r"\b(?:CQE|[Cc]ompletion|WC|wc)\b[^\n]{0,40}?\berror\b[^\n]{0,120}?\bstatus\s?[=:]\s?(?P<status>\d{1,2})\b"
                         r"(?:\s?\((?P<what>[A-Za-z][\w ]{2,60})\))?")
# rdma-core's ionic provider (AMD Pensando NICs), its completion queue's failed entry: ``ionic_comp_msn:1277: cqe with
# error 12 for 0x1 (msn)`` (the verbs status)
_IONIC_CQE = re.compile(r"\bcqe with error (?P<status>\d{1,2}) for 0x[0-9a-f]{1,16}\b")
# (lower case: the words' case differs between libraries)
_WC_STATUS = {words.lower(): status for words, status in _WC_STATUS_WORDS.items()}
# The status is found first, then the slice's fields in the 400 characters before it (a line cut before its start
# keeps them: ``…f00, local_nic: mlx5_bond_2, …, retry_cnt: 0): local protection error``)
_SLICE_STATUS = re.compile(r"\): (?P<what>" + "|".join(map(re.escape, _WC_STATUS_WORDS)) + r")", re.IGNORECASE)
_LOCAL_NIC = re.compile(r"local_nic: (?P<dev>[\w.\-]+)")
# and the NIC it then gives up on: ``Too many errors found in local RNIC 10.0.2.69:15858@mlx5_bond_2, mark it inactive``
_RNIC_INACTIVE = re.compile(r"Too many errors found in local RNIC (?P<host>[\w.\-]+):\d+@(?P<dev>[\w.\-]+)")
# a queue pair refused its next state, in the words of RDMA programs other than NCCL and UCX (Mooncake's handshake,
# a glog PLOG: ``[Handshake] Failed to modify QP to RTR, check mtu, gid, peer lid, peer qp num: Connection timed out
# [110]``; others: ``Failed to modify QP to RTR: reason: Invalid argument``)
_QP_STATE_FAILED = re.compile(r"[Ff]ailed to modify QP to (?P<state>RTR|RTS|INIT)\b(?P<rest>[^\n]{0,200})")
_ERRNO_TAIL = re.compile(r"(?::| reason:) (?P<err>[A-Z][a-z][\w ]{2,40}?)\s*(?:\[(?P<errno>\d+)\])?\s*$|\[(?P<only>\d+)\]\s*$")
# a UCX status a program built on UCX reports in its own words (NIXL's ucx_utils.cpp under vLLM's and LMCache's KV
# transfer: ``W0613 08:28:11.555796 7053 ucx_utils.cpp:43] Unexpected UCX error: Endpoint timeout``): UCX's strings of
# the statuses that mean the peer could not be reached (ucs_status_string)
_UCX_UNREACHED = r"Endpoint timeout|Destination is unreachable|Connection reset by remote peer"
_UCX_STATUS_WORDS = re.compile(rf"\bUCX error: (?P<err>{_UCX_UNREACHED})"
                               # UCX's own when no error handler takes it (ucp_ep.c): ``ep 0x7f2e…: error 'Endpoint
                               # timeout' on rc_mlx5/mlx5_0:1 will not be handled since no error callback is installed``
                               rf"|\bep 0x[0-9a-f]{{1,16}}: error '(?P<err2>{_UCX_UNREACHED})' on ")
# Intel oneCCL's key-value store (its bootstrap) finding no interface for the host's address (internal_kvs.cpp):
# ``2025:02:17-17:20:51:( 2399) |CCL_ERROR| internal_kvs.cpp:289 fill_local_host_ip: can't find interface  to get host
# IP`` (CCL_KVS_IFACE names none there, or the container has only loopback)
_CCL_NO_IFACE = re.compile(r"\|CCL_ERROR\|[^\n]{0,80}fill_local_host_ip: can't find interface")
# and its key-value store's read that waited out its limit for a key the other ranks write (pmi_resizable_simple*.cpp):
# ``|CCL_ERROR| pmi_resizable_simple_internal.cpp:343 kvs_get_value: KVS get error: timeout limit: 60 > 60, prefix:
# CCL_POD_ADDR0, key: 2``
_CCL_KVS_TIMEOUT = re.compile(r"KVS get error: timeout limit: (?P<s>\d{1,9}) > \d{1,9}")
# UCX registering a buffer with the NIC and refused for memory (uct/ib/base/ib_md.c): ``[nid001192:11838:0] ib_md.c:325
# UCX ERROR ibv_reg_mr(address=0xabcf12c0, length=26400, access=0xf) failed: Cannot allocate memory``: the locked-memory
# limit, or the NIC's registration cache
_UCX_REG_MR = re.compile(r"(?:\[(?P<host>[\w.\-]+):(?P<pid>\d+):\d+\]\s+)?\S+:\d+\s+UCX\s+ERROR\s+ibv_reg_mr\([^)]{0,200}\) "
                         r"failed: Cannot allocate memory")
# NVSHMEM's IBGDA transport (DeepEP's low-latency kernels) failing to move a queue pair to its next state:
# ``ibgda.cpp:1393: non-zero status: 121 Error in mlx5dv_devx_obj_modify for INIT2RTR_QP with syndrome 764216`` (the
# INIT-to-RTR step applies the peer's address, GID index and traffic class)
_DEVX_MODIFY = re.compile(r"(?:non-zero status: (?P<status>\d+) )?Error in mlx5dv_devx_obj_modify for "
                          r"(?P<step>[A-Z0-9]+_QP)(?: with syndrome (?P<synd>\d+))?")
# and its own words for the step that failed (ibgda.cpp, NVSHMEM 2.x-3.x): ``ibgda_rc_init2rtr failed on RC #216.``,
# ``ibgda_qp_rst2init failed on DCI #3.`` (its ``Unable to create ah.`` before them, ibv_create_ah refusing an address
# handle, also fails its DC transport's setup, where a rebuilt NVSHMEM mended it: an error no rule explains)
_IBGDA_STEP = re.compile(r"\bibgda_(?:qp|rc|dci)_(?P<step>rst2init|init2rtr|rtr2rts) failed on (?:RC|DCI) #\d{1,9}\b")
# and UCX's own: ``ib_mlx5_dv.c:217  UCX  ERROR mlx5dv_devx_qp_modify(503) failed, syndrome 0: Invalid argument``
_UCX_DEVX_MODIFY = re.compile(r"mlx5dv_devx_(?:qp|obj)_modify\((?P<code>\d+)\) failed, syndrome (?P<synd>\w+): "
                              r"(?P<err>[A-Za-z][\w ]{2,60})")
# libfabric's CXI provider (HPE Slingshot) naming the node whose NIC's event queue overflowed: ``cxip_cq_eq_progress():
# 531<warn> x4204c1s3b0n0: Cassini Event Queue overflow detected.``
_CXI_OVERFLOW = re.compile(r"<warn> (?P<host>[\w.\-]+): Cassini Event Queue overflow")
# UCX refusing a peer's worker address packed by another UCX release (address.c): ``[1618778295.702469]
# [jedi063:22469:0] address.c:917  UCX  ERROR address version mismatch: expected 0, actual 12``
_UCX_ADDRESS_VERSION = re.compile(r"UCX\s+ERROR\s+address version mismatch: expected (?P<expected>\d+), actual (?P<actual>\d+)")
# NVSHMEM's GPU-initiated transport (IBGDA, DeepEP's low-latency kernels) skipping an RDMA NIC that is not a
# Mellanox mlx5 (Alibaba's eRDMA, AWS's EFA, Broadcom's): ``WARN: device erdma_0 is not enumerated as an mlx5 device.
# Skipping...``
_NOT_MLX5 = re.compile(r"device (?P<dev>[\w.\-]+) is not enumerated as an mlx5 device")
# HPE's PALS launcher (mpiexec on Aurora, Polaris) pings the job's nodes: ``ping failed on x4304c1s6b0n0: No reply
# from x4307c2s6b0n0.hostmgmt2307.cm.aurora.alcf.anl.gov after 87s``: the node that did not reply is down or cut off
# (the first, the one that asked); its name without the management domain
_PALS_PING = re.compile(r"ping failed on (?P<asker>[\w.\-]+): No reply from (?P<host>[A-Za-z0-9][\w\-]*)[\w.\-]* after (?P<s>\d+)s")
_UCX_CONNECT = re.compile(r"(?:\[(?P<host>[\w.\-]+):(?P<pid>\d+):\d+\]\s+)?\S+:\d+\s+UCX\s+ERROR\s+connect\(fd=\d+, "
                          r"dest_addr=\[?(?P<addr>[\w.:%\-]+?)\]?:(?P<port>\d+)\) failed: (?P<err>[^\n]+?)\s*$")
_BTL_RESET = re.compile(r"(?:readv|recv|send|writev) failed: (?P<err>Connection reset by peer|Broken pipe|Connection "
                        r"timed out)")


# its verbose form (--mca btl_base_verbose), one line per local interface tried: ``[mydocker01:06805] btl: tcp: Match
# incoming connection from [[27443,1],1] 44.128.0.4 with locally known IP 2.2.2.77 failed (iface 0/4)!``: process 1
# connected from an address it never announced (NAT, a masqueraded bridge, another network)
_BTL_MATCH = re.compile(r"(?:\[(?P<host>[\w.\-]+):(?P<pid>\d+)\] )?btl: ?tcp: Match incoming connection from "
                        r"\[\[\d+,\d+\],(?P<rank>\d+)\] (?P<source>[\w.:%\-]+) with locally known IP (?P<known>[\w.:%\-]+) failed")


def _mpi_transport(line: Line) -> list[Event] | None:
    unmatched = _BTL_MATCH.search(line.body)
    if unmatched is not None:
        origin = Origin(host=unmatched["host"], pid=int(unmatched["pid"])) if unmatched["host"] else None
        return [make_event(Kind.MPI_TRANSPORT, line, origin=origin, data={
            "what": "unexpected-address", "peer_process": int(unmatched["rank"]), "source_ip": unmatched["source"],
            "known_ips": [unmatched["known"]], "message": line.body.strip()[:200]})]
    match = _BTL.search(line.body)
    if match is None:
        return None
    origin = Origin(host=match["host"], rank=int(match["rank"]))
    message = match["msg"].strip()
    peer = _BTL_PEER.search(message)
    if peer:
        return [make_event(Kind.MPI_TRANSPORT, line, origin=origin, data={
            "what": "unexpected-peer", "answered_rank": int(peer["got"]), "message": message[:200]})]
    connect = _BTL_CONNECT.search(message)
    if connect:
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
            "error": connect["err"].strip(), "peer_addr": connect["addr"], "transport": "mpi"})]
    reset = _BTL_RESET.search(message)
    if reset:
        return [make_event(Kind.PEER_CLOSED, line, origin=origin, data={"transport": "mpi", "how": "reset"})]
    return None


def _failed_slice(line: Line) -> list[Event] | None:
    """A transfer engine's completion with error (Mooncake's failed slice): the status NCCL would print for it, and
    the local NIC from the slice's fields in the 400 characters before the status (which a cut line may keep alone)."""
    body = line.body
    match = _SLICE_STATUS.search(body)
    if match is None:
        return None
    inside = body[max(0, match.start() - 400):match.start()]
    # (its last field, where the paste wrapped the slice's line before it: ``    retry_cnt: 0): transport retry …``)
    opened = ("for slice (" if "for slice (" in inside else "local_nic: " if "local_nic: " in inside
              else "retry_cnt: " if "retry_cnt: " in inside else None)
    if opened is None:
        return None
    fields = inside.rpartition(opened)[2]
    if "(" in fields or ")" in fields:
        return None  # the status closes some other parenthesis than the slice's
    nic = _LOCAL_NIC.search(inside)
    return _completion_error(line, _WC_STATUS[match["what"].lower()], match["what"], "mooncake",
                             hca=nic["dev"] if nic else None)


def _cqe_error(line: Line) -> list[Event] | None:
    """A failed completion in an RDMA program's own words with its verbs status as a number (UCCL's ``CQE error,
    wr_id=0, status=5 (Work Request Flushed Error)``); a number that is no verbs status reads as nothing."""
    match = _CQE_STATUS.search(line.body) or _IONIC_CQE.search(line.body)
    if match is None or not 1 <= int(match["status"]) <= 21:
        return None
    status = int(match["status"])
    what = match.groupdict().get("what")
    return _completion_error(line, status, what or f"status {status}", "rdma")


# Cray MPICH's own fatal error, one line per aborting rank: ``MPICH ERROR [Rank 0] [job id 123] [Thu Jan 30 22:35:30
# 2025] [x3006c0s19b1n0] - Abort(-1) (rank 0 in comm 0): MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL
# library is not linked``: that rank's own error, on that host (older releases add a field before the host: ``[Mon Feb
# 15 14:58:48 2021] [unknown] [nid001192] - Abort(672797967)``)
_MPICH_ABORT = re.compile(r"MPICH ERROR \[Rank (?P<rank>\d+)\] \[job id [^\]]*\] (?:\[[^\]]{0,80}\] ){1,3}?\[(?P<host>[\w.\-]+)\] - "
                          r"Abort\((?P<code>-?\d+)\)(?: \(rank \d+ in comm \d+\))?:? ?(?P<msg>.*)")
# MPICH's own abort, without Cray's prefix (MPIR_Handle_fatal_error): ``Abort(1091215) on node 3 (rank 3 in comm 0):
# Fatal error in PMPI_Init: Other MPI error, error stack:`` (comm 0 is MPI_COMM_WORLD; the node is the rank's number
# among the job's processes in these releases, not a host): the error line, with the rank it names
_MPICH_PLAIN_ABORT = re.compile(r"\bAbort\((?P<code>-?\d{1,12})\) on node \d{1,7} \(rank (?P<rank>\d{1,7}) in comm "
                                r"(?P<comm>\d{1,10})\):? ?(?P<msg>.*)")


def parse(line: Line) -> list[Event]:
    body = line.body
    match = _MPICH_ABORT.search(body)
    if match:
        return [make_event(Kind.EXCEPTION, line, origin=Origin(rank=int(match["rank"]), host=match["host"]), data={
            "type": "MPI_Abort", "message": match["msg"].strip()[:300], "source": "cray-mpich",
            "exitcode": int(match["code"])})]
    match = _MPICH_PLAIN_ABORT.search(body) if "Abort(" in body and "MPICH ERROR" not in body else None
    if match:  # MPI's own fatal error (a setup the library refused, more often than a crash): quoted with its rank
        world = match["comm"] == "0"
        return [make_event(Kind.ERROR_LINE, line, origin=Origin(rank=int(match["rank"])) if world else None, data={
            "message": body.strip()[:300], "source": "mpich-abort"})]
    match = _CCL_KVS_TIMEOUT.search(body) if "KVS get error" in body else None
    if match:  # read by rules.setup's rendezvous timeout: the others never wrote their keys
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "rendezvous-timeout", "source": "oneccl", "seconds": float(match["s"])})]
    if "fill_local_host_ip" in body and _CCL_NO_IFACE.search(body):
        return [make_event(Kind.INTERFACE_MISSING, line, data={
            "ifname": None, "transport": "oneccl", "where": "KVS", "message": body.strip()[:300]})]
    match = _UCX_STATUS_WORDS.search(body) if "UCX error: " in body or "error '" in body else None
    if match:  # the program's UCX endpoint to its peer failed: not reachable in time, or gone
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, data={"error": match["err"] or match["err2"],
                                                                 "transport": "ucx"})]
    match = _UCX_REG_MR.search(body) if "ibv_reg_mr(" in body else None  # (a UCX ERROR line: see KEYWORDS)
    if match:
        origin = Origin(host=match["host"], pid=int(match["pid"])) if match["host"] else None
        return [make_event(Kind.MEMLOCK_FAILURE, line, origin=origin, data={"call": "ibv_reg_mr", "transport": "ucx"})]
    match = _UCX_EP.search(body)
    if match:  # UCC/UCX could not connect an endpoint to a peer process (its address not reachable in time)
        origin = Origin(host=match["host"], pid=int(match["pid"])) if match["host"] else None
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
            "error": match["err"].strip(), "transport": "ucx"})]
    match = _UCX_COMPLETION.search(body) if "(synd 0x" in body else None
    if match:  # the NIC completed a work request with an error: the status NCCL would print for it
        wqe = _UCX_WQE.search(body)
        return _ucx_completion(line, match, _UCX_STATUS[match["what"]], vendor_err=int(match["vend"], 16),
                               hca=match["hca"], wqe=int(wqe["wqe"]) if wqe else None)
    if "Event Queue overflow" in body:  # libfabric's CXI provider (HPE Slingshot): read by rules.setup
        named = _CXI_OVERFLOW.search(body)
        return _marked(line, "cxi-overflow", "overflow", Origin(host=named["host"]) if named else None)
    match = _UCX_ADDRESS_VERSION.search(body) if "address version mismatch" in body else None
    if match:  # read by rules.setup
        return _marked(line, "ucx-address-version", "mismatch", expected=int(match["expected"]),
                       actual=int(match["actual"]))
    if "GTL library is not linked" in body and "MPICH ERROR" not in body:  # the abort's echo: read by rules.setup
        return _marked(line, "cray-gtl", "not linked")
    match = _NOT_MLX5.search(body) if "as an mlx5 device" in body else None
    if match:  # read by rules.setup
        return _marked(line, "nvshmem-not-mlx5", "WARN", dev=match["dev"])
    match = _PALS_PING.search(body) if "ping failed on " in body else None
    if match:  # an error line of the node that did not reply (read by no rule but the fallback, which quotes it)
        return _marked(line, "pals-ping", "failed", Origin(host=match["host"]), asker=match["asker"],
                       seconds=int(match["s"]))
    match = _UCX_DEVX_MODIFY.search(body) if "mlx5dv_devx_" in body else None
    if match:
        text = match["err"].strip()
        return [make_event(Kind.IB_MODIFY_QP, line, data={
            "errno": ERRNO_OF_WORDS.get(text), "error": f"{text} (syndrome {match['synd']})", "gid_index": None,
            "dev": None, "transport": "ucx"})]
    match = _DEVX_MODIFY.search(body) if "mlx5dv_devx_obj_modify" in body else None
    if match:
        return [make_event(Kind.IB_MODIFY_QP, line, data={
            "errno": None, "error": f"{match['step']} refused by the NIC (syndrome {match['synd'] or '?'})",
            "gid_index": None, "dev": None, "transport": "nvshmem", "step": match["step"]})]
    match = _IBGDA_STEP.search(body) if "ibgda_" in body else None
    if match:
        step = f"{match['step'].upper()}_QP"  # (the step's name as mlx5dv_devx_obj_modify's line gives it)
        return [make_event(Kind.IB_MODIFY_QP, line, data={
            "errno": None, "error": f"{step} refused", "gid_index": None, "dev": None, "transport": "nvshmem",
            "step": step})]
    match = _UCX_VERBS_COMPLETION.search(body) if "completion" in body and "with error" in body else None
    if match:
        return _ucx_completion(line, match, _WC_STATUS[match["what"].lower()], hca=match["dev"],
                               vendor_err=int(match["vendor"], 16) if match["vendor"] else None)
    match = _KERNEL_QP_ERROR.search(body) if "error (0x" in body else None
    if match and (status := _WC_STATUS.get(match["what"].lower(), 5 if match["what"] == "WR flushed" else None)):
        return _completion_error(line, status, match["what"], "mlx5", hca=match["dev"])
    completed = _cqe_error(line) if "status" in body or "cqe with error" in body else None
    if completed:
        return completed
    slice_failed = _failed_slice(line) if ("ailed for slice" in body or "local_nic: " in body or "retry_cnt: " in body) \
        and "): " in body \
        else None
    if slice_failed:
        return slice_failed
    match = _RNIC_INACTIVE.search(body) if "Too many errors found in local RNIC" in body else None
    if match:  # the NIC's host, for the completion errors above (their lines do not name it)
        return _completion_error(line, None, "too many errors, NIC marked inactive", "mooncake", hca=match["dev"],
                                 origin=Origin(host=match["host"]))
    match = _QP_STATE_FAILED.search(body) if "ailed to modify QP to" in body else None
    if match:
        tail = _ERRNO_TAIL.search(match["rest"])
        words = (tail["err"] or "").strip() if tail else ""
        number = (tail["errno"] or tail["only"]) if tail else None
        return [make_event(Kind.IB_MODIFY_QP, line, data={
            "errno": int(number) if number else ERRNO_OF_WORDS.get(words), "error": words or f"to {match['state']}",
            "gid_index": None, "dev": None,
            "transport": "mooncake" if "[Handshake]" in body or "peer qp num" in body else "verbs"})]
    match = _UCX_CONNECT.search(body)
    if match:  # MPI's (or a plugin's) transport could not open a connection to the address a peer advertised
        origin = Origin(host=match["host"], pid=int(match["pid"])) if match["host"] else None
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
            "error": match["err"].strip(), "peer_addr": match["addr"], "transport": "ucx"})]
    if "btl_tcp" in body or "Match incoming connection" in body:
        mpi = _mpi_transport(line)
        if mpi is not None:
            return mpi
    match = _OMPI_ABORT.search(body) if "MPI_ABORT was invoked" in body else None
    if match and match["code"]:  # the errorcode on the same line (a paste that joined the block's lines)
        return _mpi_abort(line, match, int(match["code"]))
    if _OMPI_NONZERO.search(body) and "Process name" not in body:
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "mpirun-summary", "exitcode": None, "signal": None, "unknown_exit": True})]
    match = _DEEPSPEED.search(body)
    if match:
        # the command is the launcher's last one (its loop variable), whichever worker failed: its --local_rank is
        # the highest on the node, not the failed worker's; the return code is the failed worker's
        code = int(match["code"])
        local = _LOCAL_ARG.search(match["cmd"] or body)
        only = _only_worker(local)
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(local_rank=only) if only is not None else None, data={
            "source": "deepspeed", "exitcode": code, "signal": signal_name(code), "local_rank": only,
            "last_local_rank": int(local["local"]) if local else None})]
    match = _COMPOSER.search(body)
    if match:  # MosaicML Composer's launcher: the global rank and the exit code (negative: the signal)
        code = int(match["code"])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=int(match["rank"])), data={
            "source": "composer", "exitcode": code, "signal": signal_name(code)})]
    match = _OMPI.search(body)
    if match:
        number = int(match["sig"])
        host = None if masked(match["host"]) else match["host"]
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=int(match["rank"]), host=host),
                           data={"source": "mpirun", "exitcode": -number, "signal": signal_name(-number),
                                 "mpi_rank": int(match["rank"])})]
    match = _HYDRA_DOWNSTREAM.search(body) if "downstream from host" in body else None
    if match:  # Intel MPI's Hydra: the proxy on that host ended badly (a process there failed, or was killed)
        killed_by = int(match["sig"]) if match["sig"] else None
        status = int(match["code"]) if match["code"] else None
        if killed_by is None and not status:
            return []
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(host=match["host"]), data={
            "source": "mpiexec", "exitcode": -killed_by if killed_by else status, "nonzero": True,
            "signal": signal_name(-killed_by) if killed_by else None})]
    match = _UCC_TIMEOUT.search(body) if "has expired on coll_type" in body else None
    if match:  # UCC's own collective timeout (PyTorch's ProcessGroupUCC, Open MPI's coll/ucc), after UCX's prefix
        return [make_event(Kind.BLOCKING_WAIT_TIMEOUT, line, op=normalize_op(match["op"]), data={
            "timeout_ms": int(match["s"]) * 1000, "source": "ucc",
            **({"team_size": int(match["n"])} if match["n"] else {})})]
    match = _OMPI_EXITED.search(body) if "exited due to process rank" in body else None
    if match and match["host"]:  # (its node on the next line: read by the follower)
        return _ompi_exited(line, int(match["rank"]), int(match["pid"]),
                            None if masked(match["host"]) else match["host"], match["how"])
    match = _OMPI_CUT.search(body)
    if match:
        host = None if match["host"] is None or masked(match["host"]) else match["host"]
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(
            rank=int(match["rank"]), host=host, pid=int(match["pid"]) if match["pid"] else None), data={
            "source": "mpirun", "exitcode": None, "signal": None, "unknown_exit": True,
            "mpi_rank": int(match["rank"])})]
    match = _DS_KILLING.search(body)
    if match and "sigkill_handler" in body:  # DeepSpeed stops the other workers after one failed: victims
        return [make_event(Kind.WORKER_TERMINATED, line, origin=Origin(pid=int(match["pid"])), data={
            "worker_pid": int(match["pid"]), "signal": "SIGKILL", "source": "deepspeed"})]
    match = _MPICH_STRING.search(body)
    if match:
        number = int(match["num"])
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "mpich", "exitcode": -number, "signal": signal_name(-number)})]
    match = _MPICH_EXIT.search(body)
    if match:
        code = int(match["code"])
        # Hydra prints the wait status' code: 9 is a process killed by SIGKILL, 11 one that segfaulted
        signal = signal_name(-code) if code in (6, 7, 9, 11, 15) else None
        return [make_event(Kind.WORKER_FAILED, line, data={
            "source": "mpich", "exitcode": -code if signal else code, "signal": signal})]
    match = _MPICH_RANK.search(body)
    if match:
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(
            rank=int(match["rank"]) if match["rank"] else None, host=match["host"], pid=int(match["pid"])),
            data={"source": "mpich", "exitcode": None, "signal": None, "placement": True})]
    match = _SPAWN.search(body)
    if match:
        code = -(signal_number(match["sig"]) or 0) if match["sig"] else int(match["code"])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(local_rank=int(match["index"])), data={
            "source": "spawn", "exitcode": code, "signal": match["sig"] or signal_name(code),
            "local_rank": int(match["index"])})]
    match = _TEST_EXIT.search(body) if "xit code" in body and "but got" in body else None
    if match and (code := int(match["code"] or match["code2"])) != 0:
        index = int(match["index"]) if match["index"] else None
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(
            local_rank=index, pid=int(match["pid"]) if match["pid"] else None), data={
            "source": "test-harness", "exitcode": code, "signal": signal_name(code) if code < 0 else None,
            **({"local_rank": index} if index is not None else {})})]
    match = _LEGACY.search(body)
    if match:
        # as DeepSpeed's: the command raised is the last one launched, not the failed worker's
        local = _LOCAL_ARG.search(body)
        only = _only_worker(local)
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(local_rank=only) if only is not None else None, data={
            "source": "launch", "exitcode": -int(match["num"]), "signal": match["sig"], "local_rank": only,
            "last_local_rank": int(local["local"]) if local else None})]
    match = _AGENT_SIGNAL.search(body)
    if match:
        sig = match["sig"] or signal_name(-int(match["num"]))
        return [make_event(Kind.AGENT_SIGNAL, line, data={"signal": sig} if sig else {})]
    match = _DS_MAIN_SIGNAL.search(body)
    if match:
        return [make_event(Kind.AGENT_SIGNAL, line, data={"signal": match["sig"], "source": "deepspeed"})]
    match = _PADDLE_ABORTED.search(body) if "was aborted" in body or "error with exit code" in body \
        or "status failed cmd" in body else None
    if match:
        ranks = [int(r) for r in match["ranks"].split(",")] if match["ranks"] else \
            [int(match["rank"] or match["rank2"])]
        said = match["code"] or match["code2"]
        paddle_code = int(said) if said else None
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=rank), data={
            "source": "paddle", "exitcode": paddle_code,
            "signal": signal_name(paddle_code) if paddle_code is not None and paddle_code < 0 else None,
            **({"nonzero": True} if paddle_code is None else {})}) for rank in ranks]
    match = _VLLM_WORKER_DIED.search(body) if "died unexpectedly (exit code" in body else None
    if match and match["code"]:  # (without its code, the worker's own error above it says why: an error line)
        died = int(match["code"])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(local_rank=int(match["index"])) if match["index"]
                           else None, data={"source": "vllm", "exitcode": died,
                                            "signal": signal_name(died) if died < 0 else None})]
    match = _SGLANG_CHILD.search(body) if " terminated with " in body else None
    if match and int(match["code"]) < 0:  # a process ended by a signal
        code = int(match["code"])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(pid=int(match["pid"])), data={
            "source": "sglang", "exitcode": code, "signal": signal_name(code)})]
    if match and match["code"] != "0":  # one that exited with a code of its own (its error above says why): quoted
        return [make_event(Kind.ERROR_LINE, line, data={"word": match.group(0)[:40], "message": body.strip()[:300]})]
    match = _TRAINER_SIGNAL.search(body) if "ignal" in body or "SIG" in body or "reempt" in body or "Interrupt" in body \
        else None
    if match:
        sig = (match["sig"] or match["sig2"] or match["sig3"] or ("SIGINT" if match["interrupt"] else None)
               or ("SIGUSR1" if match["requeue"] == "10" else None)  # (Slurm's --signal=SIGUSR1@90, on Linux)
               or (signal_name(-int(match["num"] or match["requeue"])) if match["num"] or match["requeue"] else None)
               or "SIGTERM")  # a preemption notice: the scheduler's SIGTERM
        reason = "requeue" if match["requeue"] else "preemption" if match["preempted"] else None
        return [make_event(Kind.AGENT_SIGNAL, line, data={
            "signal": sig, "source": "terminal" if match["interrupt"] else "trainer",
            **({"reason": reason} if reason else {})})]
    if body.lstrip().startswith("^C"):  # a terminal's echo of Ctrl-C: the user interrupted what ran in the foreground
        return [make_event(Kind.AGENT_SIGNAL, line, data={"signal": "SIGINT", "source": "terminal"})]
    match = _SIGNAL_EXCEPTION.search(body)
    if match:
        return [make_event(Kind.AGENT_SIGNAL, line, data={"signal": signal_name(-int(match["num"] or match["bare"])),
                                                           "source": "torchrun"})]
    match = _HOROVOD_EXIT.match(body) if " exit with status code " in body else None
    if match and match["code"] != "0":
        code = int(match["code"])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=int(match["rank"])), data={
            "source": "horovod", "exitcode": code, "signal": shell_signal_name(code)})]
    match = _OMPI_FIRST.search(body)
    if match and match["code"] is not None:
        code = int(match["code"])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(rank=int(match["rank"])), data={
            "source": "mpirun", "exitcode": code, "signal": signal_name(code), "mpi_rank": int(match["rank"])})]
    return []
