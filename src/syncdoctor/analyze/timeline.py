"""From parsed events to a per-rank timeline: who wrote what, on which host, how far each rank got.

Pure: no I/O. Attribution fills in what a line did not say itself, from what other lines said:
``(host, pid) -> rank`` (NCCL ``Init COMPLETE`` of the largest communicator, torchrun's failure table),
``(host, local_rank) -> rank`` (torchrun's table, stacked ``[default1]:[rank5]:`` prefixes),
``pid -> rank`` (the table again, for the agent's own lines; for NCCL's ``host:pid`` lines of a
process that failed before ``Init COMPLETE``, when the pid is unambiguous; and for lines that carry a pid but no
host, Ray's ``(RayWorker pid=N)`` prefix, where one of them ties that pid to a single rank) and ``rank -> host``.

Each rank then gets a :class:`RankState`: its events, the highest collective sequence number it is known
to have reached per group, its first failure, and an outcome (crashed, timed out, lost a peer, stopped by
the launcher, silent, ok).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from syncdoctor.analyze.model import Event, FrDump, Kind, Origin
from syncdoctor.analyze.parsers.generic import BACKEND_REFUSAL, GPU_COMM_TIMEOUT
from syncdoctor.analyze.parsers.prefixes import log_dir_attempt

__all__ = [
    "COMM_ERROR_WORDS",
    "ERROR_KINDS",
    "RankState",
    "Timeline",
    "TimelineRow",
    "build_timeline",
    "is_comm_exception",
    "trapped_after_comm_wait",
]

# Kinds that mean something went wrong on the rank that logged them.
ERROR_KINDS = frozenset({
    Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT, Kind.HEARTBEAT_TIMEOUT, Kind.GLOO_TIMEOUT,
    Kind.PEER_CLOSED, Kind.GLOO_CONNECT_FAILED, Kind.INTERFACE_MISSING, Kind.IB_COMPLETION_ERROR,
    Kind.IB_MODIFY_QP, Kind.NCCL_CONNECT_FAILED, Kind.SHM_FAILURE, Kind.MEMLOCK_FAILURE, Kind.DUPLICATE_GPU,
    Kind.PEER_ACCESS, Kind.NCCL_ERROR, Kind.NCCL_WARN, Kind.EXCEPTION, Kind.CUDA_OOM, Kind.FATAL_SIGNAL,
    Kind.COLLECTIVE_MISMATCH, Kind.STORE_ERROR, Kind.WORKER_FAILED, Kind.MONITORED_BARRIER, Kind.GPU_ERROR,
    Kind.IB_ASYNC_EVENT,
})
TIMEOUT_KINDS = frozenset({Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT, Kind.GLOO_TIMEOUT})
# Words in an exception message that make it a symptom of a communication failure, not a cause.
COMM_ERROR_WORDS = (
    "Timed out waiting", "Connection closed by peer", "Connection reset by peer", "Read error", "Watchdog caught",
    "timed out in blocking wait", "NCCL error", "ncclRemoteError", "ncclSystemError", "connectFullMesh",
    "DistNetworkError", "DistStoreError", "wait timeout", "pair closure", "Broken pipe", "NCCL communicator was aborted",
    "remote process exited", "Socket Timeout", "retrieving ncclUniqueId", "store->get(",
    "Horovod has been shut down", "failed to pass monitoredBarrier", "received errors while waiting",
    "ProcessGroupNCCL", "gloo", "Gloo", "store based barrier", "Unable to find address", "collective mismatch",
    "Detected mismatch between collectives", "OPS function error: Hccl",
    "collective communication initialization failed",  # MindSpore: the HCCL communicator could not be set up
    "fetch the unique id of the collective lib",  # MindSpore: the group's root never published the communicator's id
    "Barrier timed out",  # XLA's coordination service (JAX): a barrier some tasks never reached
    "heartbeat timeout. This indicates",  # … and a task it lost
    # torch elastic's rendezvous failing (its agent's, or a process's own store under srun's task label): the other
    # nodes did not come or went away, not this process's fault
    "RendezvousClosedError", "RendezvousTimeoutError", "RendezvousConnectionError",
    "Connection refused",  # (a connection this process needed, refused by its peer: TensorPipe's, a store's)
)
# an MPI library aborting in a communication call (Cray MPICH: ``Fatal error in PMPI_Recv: Other MPI error``): its
# peer is gone, not its own fault (``PMPI_Init`` and the like are its own)
_MPI_COMM_CALL = re.compile(r"Fatal error in PMPI_(?:I?[Rr]ecv|I?[Ss]end|Sendrecv|Wait\w*|Test\w*|I?[Pp]robe|"
                            r"(?:All)?[Rr]educe|Bcast|Barrier|(?:All)?[Gg]ather\w*|Alltoall\w*)\b")
# GPU-initiated communication waiting out its bound for a peer, raised (``RuntimeError: DeepEP error: timeout (dispatch
# CPU)``): the library's report of a wait, as its error line is (parsers.generic), not the rank's own crash
_GPU_COMM_WAIT = re.compile(GPU_COMM_TIMEOUT)
_AGENT_SIGNALS = {"SIGTERM", "SIGINT", "SIGHUP"}
# the C++ runtime's words for an exception nobody caught, before it calls abort() (libstdc++'s, libc++'s)
_UNCAUGHT = re.compile(r"^\s*(?:terminate called after throwing\b|libc\+\+abi: terminating (?:with|due to) uncaught)")
_UNREAD_KINDS = frozenset({Kind.ERROR_LINE, Kind.EXCEPTION, Kind.FATAL_SIGNAL, Kind.STACK_DUMP, Kind.PROGRESS_BAR})


def is_comm_exception(event: Event) -> bool:
    """An exception (or fatal signal) that reports a communication failure rather than causing one: by its words,
    or because its own line says what failed in a reading of its own (:func:`_explained`)."""
    if event.data.get("explained"):
        return True
    text = f"{event.data.get('type', '')}: {event.data.get('message', '')}"
    if _BACKEND_REFUSAL.search(text):
        return False  # (the backend's name in a refusal of the program's call: its own error, nothing failed between)
    return (any(word in text for word in COMM_ERROR_WORDS) or _MPI_COMM_CALL.search(text) is not None
            or _GPU_COMM_WAIT.search(text) is not None)


# a call the job's backend refuses, naming the backend: the process's own error (generic.BACKEND_REFUSAL)
_BACKEND_REFUSAL = re.compile(BACKEND_REFUSAL)


# the readings of a line that say what failed there, beside the exception the same line raises (``RuntimeError: The
# client socket has timed out after 1800s while trying to connect to (node-0, 29500).``: a store that could not be
# reached; ``SignalException: Process 12340 got signal: 15``: the agent stopped from outside): the exception is that
# failure's report, read by that reading's rule, not the rank's own crash, with or without a rank's label before it
_EXPLAINING = frozenset({
    Kind.STORE_ERROR, Kind.GLOO_TIMEOUT, Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT, Kind.PEER_CLOSED,
    Kind.GLOO_CONNECT_FAILED, Kind.NCCL_CONNECT_FAILED, Kind.AGENT_SIGNAL, Kind.HOSTNAME_LOOPBACK, Kind.GLOO_LOOPBACK,
    Kind.STORE_NAME_UNRESOLVED, Kind.LAUNCH_UNREACHABLE, Kind.INTERFACE_MISSING, Kind.COLLECTIVE_MISMATCH,
    Kind.MONITORED_BARRIER, Kind.DESYNC_REPORT, Kind.SHM_FAILURE, Kind.MEMLOCK_FAILURE, Kind.DUPLICATE_GPU,
    Kind.PEER_ACCESS, Kind.COORDINATION,
})


def _explains(event: Event) -> bool:
    """An :data:`_EXPLAINING` reading, or a worker's death by a signal on the same line (``ProcessExitedException:
    process 1 terminated with signal SIGKILL``: the parent's report of a child killed)."""
    return event.kind in _EXPLAINING or (event.kind is Kind.WORKER_FAILED and bool(event.data.get("signal")))


def _explained(events: Sequence[Event]) -> list[Event]:
    """``events`` with each exception whose line also holds a reading that :func:`_explains` it marked so."""
    lines = {(e.ref.source, e.ref.line) for e in events if _explains(e)}
    if not lines:
        return list(events)
    return [replace(e, data={**e.data, "explained": True})
            if e.kind is Kind.EXCEPTION and (e.ref.source, e.ref.line) in lines else e for e in events]


@dataclass(frozen=True, slots=True)
class TimelineRow:
    """One line of the printed timeline."""

    rank: int | None
    host: str | None
    time: str
    group: str | None
    seq: int | None
    op: str | None
    what: str
    ref: str


@dataclass(frozen=True)
class RankState:
    """What is known about one rank."""

    rank: int
    host: str | None
    pids: tuple[int, ...]
    events: tuple[Event, ...]
    reached: dict[str, int] = field(default_factory=dict)  # group -> highest sequence number entered
    completed: dict[str, int] = field(default_factory=dict)  # group -> highest sequence number completed
    first_failure: Event | None = None
    outcome: str = "ok"  # crashed, timed-out, lost-peer, init-failed, terminated, killed, exited, silent, ok
    exit_signal: str | None = None
    exitcode: int | None = None
    # False for a rank known only from the world size: no line, dump or log file of its own is in the inputs
    logged: bool = True

    def has(self, *kinds: Kind) -> bool:
        return any(event.kind in kinds for event in self.events)

    def of(self, *kinds: Kind) -> list[Event]:
        return [event for event in self.events if event.kind in kinds]


@dataclass(frozen=True)
class Timeline:
    """Everything the rules look at."""

    ranks: dict[int, RankState]
    world_size: int | None
    hosts: dict[str, tuple[int, ...]]
    events: tuple[Event, ...]
    unattributed: tuple[Event, ...]
    dumps: tuple[FrDump, ...]
    host_addrs: dict[str, tuple[str, ...]]
    # the world size as the inputs state it (NCCL nranks, dump pg_config, gloo size, store world size), or
    # None when ``world_size`` was only inferred from the highest rank seen
    stated_world_size: int | None = None

    def unseen(self, below: int) -> list[int]:
        """The ranks below ``below`` that no line of the inputs comes from."""
        return [r for r in range(below) if r not in self.ranks or not self.ranks[r].logged]

    def rank_host(self, rank: int) -> str | None:
        state = self.ranks.get(rank)
        return state.host if state else None

    def pid_place(self, pid: int) -> tuple[str | None, int | None]:
        """Where the lines that carry ``pid`` with a host (NCCL's ``host:pid:tid`` prefix) put that process: its
        host where one host only has that pid, and its rank where those lines give it one."""
        hosts, ranks = self._pid_places.get(pid, ((), ()))
        if len(hosts) != 1:
            return None, None
        return hosts[0], ranks[0] if len(ranks) == 1 else None

    @cached_property
    def uncaught_lines(self) -> dict[str, list[int]]:
        """Per input, the lines (ascending) where the C++ runtime says an exception went uncaught before it aborts
        (``terminate called after throwing …``, libc++'s words for it), printed without a rank."""
        found: dict[str, list[int]] = defaultdict(list)
        for event in self.of(Kind.ERROR_LINE, Kind.EXCEPTION):
            if event.origin.rank is None and _UNCAUGHT.match(str(event.data.get("message") or event.text)):
                found[event.ref.source].append(event.ref.line)
        return {source: sorted(lines) for source, lines in found.items()}

    @cached_property
    def gpu_comm_waited(self) -> bool:
        """A kernel of GPU-initiated communication waited out its bound somewhere in the inputs (DeepEP's
        ``… timeout``, NVSHMEM's proxy's)."""
        return any(_GPU_COMM_WAIT.search(e.text) for e in self.of(Kind.ERROR_LINE, Kind.EXCEPTION))

    @cached_property
    def reading_lines(self) -> dict[str, list[int]]:
        """Per input, the lines (ascending) of events that a parser read as a failure of a known kind: not an
        error-looking line, an exception, a fatal signal, a stack or a progress bar, whose words say no more."""
        found: dict[str, list[int]] = defaultdict(list)
        for event in self.events:  # one pass, on the first question
            if event.kind not in _UNREAD_KINDS:
                found[event.ref.source].append(event.ref.line)
        return {source: sorted(lines) for source, lines in found.items()}

    @cached_property
    def _pid_places(self) -> dict[int, tuple[tuple[str, ...], tuple[int, ...]]]:
        hosts: dict[int, set[str]] = defaultdict(set)
        ranks: dict[int, set[int]] = defaultdict(set)
        for event in self.events:  # one pass, on the first question
            origin = event.origin
            if origin.pid is not None and origin.host:
                hosts[origin.pid].add(origin.host)
                if origin.rank is not None:
                    ranks[origin.pid].add(origin.rank)
        return {pid: (tuple(sorted(h)), tuple(sorted(ranks[pid]))) for pid, h in hosts.items()}

    def sole_rank(self, host: str, pid: int) -> int | None:
        """The rank of process ``pid`` on ``host`` where the inputs name one rank on that host and no other
        process there (a UCX ``[host:pid:0]`` line beside that process's ``MPICH ERROR [Rank N] … [host]``)."""
        ranks = self.hosts.get(host) or ()
        if len(ranks) != 1 or self._host_pids.get(host, set()) - {pid}:
            return None
        state = self.ranks.get(ranks[0])
        return ranks[0] if state is not None and set(state.pids) <= {pid} else None

    @cached_property
    def _host_pids(self) -> dict[str, set[int]]:
        out: dict[str, set[int]] = defaultdict(set)
        for pid, (hosts, _ranks) in self._pid_places.items():
            for host in hosts:
                out[host].add(pid)
        return dict(out)

    def hosts_of(self, ranks: Iterable[int]) -> tuple[str, ...]:
        return tuple(sorted({h for h in (self.rank_host(r) for r in ranks) if h}))

    @cached_property
    def _at(self) -> dict[Kind, list[int]]:
        """Where each kind's events are among ``events``: :meth:`of` reads them without a pass over all the events
        (the rules ask it thousands of times on a large job's inputs)."""
        out: dict[Kind, list[int]] = defaultdict(list)
        for at, event in enumerate(self.events):
            out[event.kind].append(at)
        return dict(out)

    @cached_property
    def _of_memo(self) -> dict[tuple[Kind, ...], tuple[Event, ...]]:
        """The answers :meth:`of` gave, per question: a rule that asks once per event of a kind (the watchdog's own
        abort, for each SIGABRT) costs a copy, not a merge of the kinds' places, each time."""
        return {}

    def of(self, *kinds: Kind) -> list[Event]:
        """The events of ``kinds``, in input order (a new list: the caller may change it)."""
        key = tuple(dict.fromkeys(kinds))
        found = self._of_memo.get(key)
        if found is None:
            places = [self._at[kind] for kind in key if kind in self._at]
            events = self.events
            found = self._of_memo[key] = tuple(events[at] for at in (places[0] if len(places) == 1
                                                                      else heapq.merge(*places)))
        return list(found)

    def rows(self, limit: int | None = None) -> list[TimelineRow]:
        """The notable events, per rank in rank order, each rank's in file order."""
        rows: list[TimelineRow] = []
        for rank in sorted(self.ranks):
            for event in self.ranks[rank].events:
                if event.kind in ERROR_KINDS or event.kind in (Kind.WORK_STATUS, Kind.DUMP_SIGNAL, Kind.FR_STATUS):
                    rows.append(_row(event))
        return rows[:limit] if limit is not None else rows


def trapped_after_comm_wait(tl: Timeline, event: Event) -> bool:
    """A CUDA ``unspecified launch failure`` in inputs where a kernel of GPU-initiated communication waited out its
    bound (DeepEP prints ``DeepEP combine … timeout`` and then calls trap(), which CUDA reports in those words): the
    wait's end, no fault of the GPU's."""
    return "unspecified launch failure" in f"{event.text} {event.data.get('message', '')}" and tl.gpu_comm_waited


def _row(event: Event) -> TimelineRow:
    what = event.kind.value
    detail = event.data.get("type") or event.data.get("message") or event.data.get("error") or ""
    if detail:
        what = f"{what}: {str(detail)[:80]}"
    return TimelineRow(event.origin.rank, event.origin.host, event.time_text, event.group, event.seq, event.op,
                       what, str(event.ref))


def _maps(events: Sequence[Event]) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int], dict[int, int],
                                           dict[int, str]]:
    by_host_pid: dict[tuple[str, int], int] = {}
    by_local: dict[tuple[str, int], int] = {}
    by_pid: dict[int, int] = {}
    rank_host: dict[int, str] = {}
    inits = [e for e in events if e.kind is Kind.NCCL_INIT]
    largest = max((int(e.data.get("nranks", 0)) for e in inits), default=0)
    for event in inits:
        if int(event.data.get("nranks", 0)) == largest and event.origin.host and event.origin.pid is not None:
            by_host_pid.setdefault((event.origin.host, event.origin.pid), int(event.data["comm_rank"]))
    # a process that never completed that communicator (its ``Init START``, or its ``Abort COMPLETE`` once a failure
    # ended it): the same line names its rank in it
    starts = [e for e in events if e.kind is Kind.NCCL_INIT_START and e.origin.host and e.origin.pid is not None]
    world = max((int(e.data.get("nranks", 0)) for e in starts), default=0)
    for event in starts:
        if int(event.data.get("nranks", 0)) == world >= largest and event.origin.host and event.origin.pid is not None:
            by_host_pid.setdefault((event.origin.host, event.origin.pid), int(event.data["comm_rank"]))
    if not inits:
        # without a communicator's own line, its ring lines: a process whose lines all give it one rank (a process in
        # several communicators holds several, and is left alone)
        held: dict[tuple[str, int], set[int]] = defaultdict(set)
        for event in events:
            if event.kind is Kind.NCCL_CHANNEL and event.origin.host and event.origin.pid is not None:
                held[(event.origin.host, event.origin.pid)].add(int(event.data["comm_rank"]))
        for key, ranks in held.items():
            if len(ranks) == 1:
                by_host_pid.setdefault(key, next(iter(ranks)))
    for event in events:
        origin = event.origin
        if origin.rank is None:
            continue
        if origin.host and origin.pid is not None and event.kind is not Kind.NCCL_INIT:
            by_host_pid.setdefault((origin.host, origin.pid), origin.rank)
        if origin.host and origin.local_rank is not None:
            by_local.setdefault((origin.host, origin.local_rank), origin.rank)
        if event.kind is Kind.WORKER_FAILED and origin.pid is not None:
            by_pid.setdefault(origin.pid, origin.rank)
        if origin.host:
            rank_host.setdefault(origin.rank, origin.host)
    _worker_pids(events, by_host_pid, rank_host)
    # a pid on lines without a host (Ray's ``(RayWorker pid=N)`` prefix) that one of those lines ties to one rank
    hostless: dict[int, set[int]] = defaultdict(set)
    for event in events:
        if event.origin.host is None and event.origin.pid is not None and event.origin.rank is not None:
            hostless[event.origin.pid].add(event.origin.rank)
    for pid, ranks in hostless.items():
        if len(ranks) == 1:
            by_pid.setdefault(pid, next(iter(ranks)))
    _one_crash_one_rank(events, by_host_pid)
    _last_process_left(events, by_host_pid)
    for (host, _pid), rank in by_host_pid.items():
        rank_host.setdefault(rank, host)
    _task_zero_host(events, rank_host)
    return by_host_pid, by_local, by_pid, rank_host


def _task_zero_host(events: Sequence[Event], rank_host: dict[int, str]) -> None:
    """srun's record of its task 0 failing on a host (``srun: error: gpu-54: task 0: Exited with exit code 1``) where
    rank 0's lines name no host: rank 0 ran there. Task 0 holds rank 0 both where srun starts a task per rank and
    where it starts one launcher per node (torchrun's node rank 0, whose first worker is rank 0); a task's other
    numbers mean a rank only in the first."""
    if 0 in rank_host or not any(e.origin.rank == 0 for e in events):
        return
    hosts = {e.origin.host for e in events if e.kind is Kind.WORKER_FAILED and e.data.get("source") == "slurm"
             and str(e.data.get("tasks") or "").strip() == "0" and e.origin.host}
    if len(hosts) == 1:
        rank_host[0] = str(next(iter(hosts)))


def _one_crash_one_rank(events: Sequence[Event], by_host_pid: dict[tuple[str, int], int]) -> None:
    """``(host, pid) -> rank`` where the inputs hold one process's crash report (Open MPI's ``[host:pid] ***
    Process received signal ***``) and mpirun names one rank as the process that failed, without its pid (a paste
    cut after ``process rank 0 with``): the same process."""
    crashed = {(e.origin.host, e.origin.pid) for e in events if e.kind is Kind.FATAL_SIGNAL and e.origin.rank is None
               and e.origin.host and e.origin.pid is not None}
    named = {(e.origin.rank, e.origin.host) for e in events if e.kind is Kind.WORKER_FAILED
             and e.data.get("source") == "mpirun" and e.origin.rank is not None and e.origin.pid is None}
    if len(crashed) != 1 or len(named) != 1:
        return
    ((host, pid),), ((rank, named_host),) = crashed, named
    if host and pid is not None and named_host in (None, host) and rank is not None:
        by_host_pid.setdefault((host, pid), rank)


def _last_process_left(events: Sequence[Event], by_host_pid: dict[tuple[str, int], int]) -> None:
    """``(host, pid) -> rank`` by elimination: a communicator's line states the world (``nranks N``, the largest
    seen), every rank of it but one is placed on a process of its own, and NCCL's ``host:pid`` prefix shows exactly one
    process more: that process holds the remaining rank (rank 0's service thread reporting ``Connection closed by
    localRank 1`` beside rank 1's ``comm … rank 1 nranks 2 … Abort COMPLETE``)."""
    comms = [e for e in events if e.kind in (Kind.NCCL_INIT, Kind.NCCL_INIT_START) and e.data.get("nranks")]
    world = max((int(e.data["nranks"]) for e in comms), default=0)
    if not 2 <= world <= 4096:
        return
    held: dict[tuple[str, int], set[int]] = defaultdict(set)
    for key, rank in by_host_pid.items():
        held[key].add(rank)
    for event in comms:
        if int(event.data["nranks"]) == world and event.origin.host and event.origin.pid is not None:
            held[(event.origin.host, event.origin.pid)].add(int(event.data["comm_rank"]))
    ranks = {rank for owned in held.values() for rank in owned}
    if any(len(owned) != 1 for owned in held.values()) or len(ranks) != len(held) or len(ranks) != world - 1 \
            or not ranks <= set(range(world)):
        return  # a process holding several ranks, or ranks the world does not have: nothing to eliminate
    # (NCCL's processes: its prefix names the device; mpirun's ``[host:pid]`` lines are another process's)
    others = {(e.origin.host, e.origin.pid) for e in events
              if e.origin.host and e.origin.pid is not None and e.origin.device is not None} - set(held)
    if len(others) != 1:
        return
    ((host, pid),) = others
    if host is not None and pid is not None:
        (rank,) = set(range(world)) - ranks
        by_host_pid.setdefault((host, pid), rank)


def _worker_pids(events: Sequence[Event], by_host_pid: dict[tuple[str, int], int], rank_host: dict[int, str]) -> None:
    """``(host, pid) -> rank`` from torchrun's failure records, for NCCL's ``host:pid`` lines without an
    ``Init COMPLETE`` (a process that failed during init). Only unambiguous pids: one rank per pid in the
    records, and either the record's host or, when it has none (``localhost``), a single host seen with it."""
    ranks_of: dict[int, set[int]] = defaultdict(set)
    record_hosts: dict[int, set[str | None]] = defaultdict(set)
    for event in events:
        if event.kind is Kind.WORKER_FAILED and event.origin.rank is not None and event.origin.pid is not None:
            ranks_of[event.origin.pid].add(event.origin.rank)
            record_hosts[event.origin.pid].add(event.origin.host)
    if not ranks_of:
        return
    seen_hosts: dict[int, set[str]] = defaultdict(set)
    for event in events:
        pid = event.origin.pid
        if pid in ranks_of and event.origin.host and event.kind not in (Kind.WORKER_FAILED, Kind.WORKER_TERMINATED):
            seen_hosts[pid].add(event.origin.host)
    for pid, ranks in ranks_of.items():
        if len(ranks) != 1 or not seen_hosts.get(pid):
            continue
        (rank,) = ranks
        named = {h for h in record_hosts[pid] if h}
        candidates = seen_hosts[pid] & named if named else seen_hosts[pid]
        if len(candidates) != 1:
            continue
        (host,) = candidates
        if rank_host.get(rank, host) != host:
            continue
        by_host_pid.setdefault((host, pid), rank)


def _first_node_consoles(events: Sequence[Event]) -> set[str]:
    """The inputs that are one torchrun agent's console on the job's first node, where a worker's local rank is
    its rank: every worker of that agent (the pids it reports failed or stops, two or more) and every rank its
    workers' prefixes name (``[rank2]:``) fit in the agent's local world (ranks below its number of workers: a
    later node's workers would print ranks from its first rank on), one host at most, and no rank prefix at all
    would say nothing."""
    workers: dict[str, set[int]] = defaultdict(set)
    ranks: dict[str, set[int]] = defaultdict(set)
    hosts: dict[str, set[str]] = defaultdict(set)
    for event in events:
        source = event.ref.source
        if event.kind in (Kind.WORKER_FAILED, Kind.WORKER_TERMINATED) and event.data.get("worker_pid") is not None:
            workers[source].add(int(event.data["worker_pid"]))
        elif event.origin.rank is not None:
            ranks[source].add(event.origin.rank)
        if event.origin.host:
            hosts[source].add(event.origin.host)
    return {source for source, pids in workers.items() if len(pids) >= 2 and ranks.get(source)
            and max(ranks[source]) < len(pids) and len(hosts.get(source, ())) <= 1}


# mp.spawn started the whole world on this machine (the DDP tutorial's ``mp.spawn(run, args=(world_size,),
# nprocs=world_size, join=True)``): each process's index is its rank
_SPAWNS_THE_WORLD = re.compile(r"\bspawn\([^\n]*\bnprocs\s*=\s*(?:[\w.]+\.)?world_size\b")


def _whole_world_spawned(events: Sequence[Event]) -> set[str]:
    """The inputs whose traceback shows the program's own ``mp.spawn(…, nprocs=world_size)``: one machine ran every
    rank, so a process's index (local rank) is its rank."""
    return {e.ref.source for e in events if e.kind is Kind.EXCEPTION
            and _SPAWNS_THE_WORLD.search(str(e.data.get("code_line") or ""))}


def _attempt_dir(source: str) -> str | None:
    """The directory of one torchrun agent's attempt that a file of its --log-dir is in (``…/attempt_0`` for
    ``…/attempt_0/3/stderr.log``), or None."""
    attempt = log_dir_attempt(source)
    return attempt[0] if attempt is not None else None


def _log_dir_offsets(events: Sequence[Event]) -> dict[str, int]:
    """torchrun --log-dir's files (``…/attempt_N/<local rank>/{stdout,stderr}.log``, one agent's workers): where
    lines of some of them name their global rank, and each names it as its local rank plus one same number (the
    node's first rank), that number, for the attempt's directory: the files whose lines name no global rank are of
    the local rank plus it."""
    seen: dict[str, set[int]] = defaultdict(set)
    for event in events:
        if event.origin.rank is not None and event.origin.local_rank is not None:
            where = _attempt_dir(event.ref.source)
            if where is not None:
                seen[where].add(event.origin.rank - event.origin.local_rank)
    return {where: offsets.pop() for where, offsets in seen.items() if len(offsets) == 1}


def _local_is_global(event: Event, first_node: set[str], offsets: Mapping[str, int]) -> Event:
    """An event with a local rank and no global one: the global one where its input is the job's first node's
    console, or a --log-dir file whose siblings say the node's first rank."""
    origin = event.origin
    if origin.rank is not None or origin.local_rank is None:
        return event
    if event.ref.source in first_node:
        return event.with_origin(replace(origin, rank=origin.local_rank))
    where = _attempt_dir(event.ref.source) if offsets else None
    if where is not None and where in offsets:
        return event.with_origin(replace(origin, rank=origin.local_rank + offsets[where]))
    return event


def _resolve(event: Event, maps: tuple[dict, dict, dict, dict]) -> Event:
    by_host_pid, by_local, by_pid, rank_host = maps
    origin = event.origin
    rank = origin.rank
    if rank is None and origin.host and origin.pid is not None:
        rank = by_host_pid.get((origin.host, origin.pid))
    if rank is None and event.kind in (Kind.WORKER_FAILED, Kind.WORKER_TERMINATED):
        rank = by_pid.get(int(event.data.get("worker_pid", -1)))
    if rank is None and origin.host is None and origin.pid is not None:
        rank = by_pid.get(origin.pid)
    if rank is None and origin.host and origin.local_rank is not None:
        rank = by_local.get((origin.host, origin.local_rank))
    host = origin.host or (rank_host.get(rank) if rank is not None else None)
    if rank == origin.rank and host == origin.host:
        return event
    return event.with_origin(replace(origin, rank=rank, host=host))


def _world_size(events: Sequence[Event], dumps: Sequence[FrDump]) -> int | None:
    sizes = [int(e.data["nranks"]) for e in events if e.kind is Kind.NCCL_INIT and "nranks" in e.data]
    sizes += [int(e.data["size"]) for e in events if e.kind is Kind.GLOO_CONNECT_FAILED and "size" in e.data]
    sizes += [int(e.data["world_size"]) for e in events if e.kind is Kind.STORE_ERROR and "world_size" in e.data]
    for dump in dumps:
        sizes += [len(g.ranks) for g in dump.groups if g.ranks]
    return max(sizes) if sizes else None


def _pair_groups(events: list[Event]) -> list[Event]:
    """The group of a watchdog timeout written without one (2.4-2.6: ``[Rank 0] Watchdog caught …``), from
    the status line the same rank writes right after it about the same work (``[PG ID 4 … Rank 0] failure
    detected by watchdog at work sequence id: S``). Without it a timeout of group 4 counts in group 0.
    ``events`` are in file order."""
    out = list(events)
    for i, event in enumerate(out):
        if event.kind not in TIMEOUT_KINDS or event.group is not None or event.seq is None or event.origin.rank is None:
            continue
        for after in out[i + 1:i + 8]:
            if after.ref.source != event.ref.source:
                break
            if after.origin.rank != event.origin.rank:
                continue
            if after.kind in TIMEOUT_KINDS:
                break
            if after.kind is Kind.WORK_STATUS and after.seq == event.seq and after.group is not None:
                out[i] = replace(event, group=after.group)
                break
    return out


def _drop_failed_work(events: list[Event]) -> list[Event]:
    """2.6's ``failure detected by watchdog at work S`` is said of an error too: read as the timeout of S only
    where no timeout line at all is in the inputs (before the groups are paired: it names its subgroup's id)."""
    if not any(e.data.get("or_error") for e in events):
        return events
    timed = any(e.kind in TIMEOUT_KINDS and not e.data.get("status_line") for e in events)
    return [e for e in events if not (timed and e.data.get("or_error"))]


def _drop_status_timeouts(events: list[Event]) -> list[Event]:
    """Timeouts read from what accompanies a timeout line count only where that line is not in the inputs: a
    ``Timeout at NCCL work: S`` status line (where the same rank's ``Watchdog caught`` line for S is missing), the
    message from its ``WorkNCCL(…)`` on (where that input has no whole line for S), the dump a rank's watchdog asks
    for after its own collective timed out (``Received a dump signal due to a collective timeout from this local rank
    …``: where no other timeout of that rank is there),
    the watchdog's C++ backtrace (``WorkNCCL::checkTimeout`` frames: where no other timeout of the same input
    is there)."""
    own = [e for e in events if e.kind in TIMEOUT_KINDS and not e.data.get("status_line") and not e.data.get("frames")
           and not e.data.get("headless") and not e.data.get("dump_signal")]
    told = {e.origin.rank for e in events
            if e.kind in TIMEOUT_KINDS and not e.data.get("dump_signal") and not e.data.get("frames")}
    caught = {(e.origin.rank, e.seq) for e in own}
    whole = {(e.ref.source, e.seq) for e in own}
    sources = {e.ref.source for e in own} | {e.ref.source for e in events if e.data.get("status_line")
                                             or (e.kind in TIMEOUT_KINDS and e.data.get("dump_signal"))}
    return [e for e in events if not (e.kind in TIMEOUT_KINDS and (
        (e.data.get("status_line") and (e.origin.rank, e.seq) in caught) or
        (e.data.get("headless") and (e.ref.source, e.seq) in whole) or
        (e.data.get("frames") and e.ref.source in sources) or
        (e.data.get("dump_signal") and e.origin.rank in told)))]


def _progress(state_events: Sequence[Event]) -> tuple[dict[str, int], dict[str, int]]:
    reached: dict[str, int] = {}
    completed: dict[str, int] = {}

    def up(table: dict[str, int], group: str, value: int | None) -> None:
        if value is not None and value >= 0:
            table[group] = max(table.get(group, -1), value)

    for event in state_events:
        group = event.group or "0"
        if event.kind in (Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT):
            up(reached, group, event.seq)
        elif event.kind in (Kind.WORK_STATUS, Kind.DUMP_SIGNAL):
            up(reached, group, event.data.get("last_enqueued"))
            up(completed, group, event.data.get("last_completed"))
        elif event.kind is Kind.FR_STATUS:
            up(reached, group, event.data.get("last_enqueued"))
            up(completed, group, event.data.get("last_completed"))
    return reached, completed


def _is_primary(event: Event) -> bool:
    """A failure that this rank caused or suffered locally, as opposed to a symptom of a peer's failure."""
    if event.kind in (Kind.CUDA_OOM, Kind.SHM_FAILURE, Kind.MEMLOCK_FAILURE, Kind.DUPLICATE_GPU, Kind.PEER_ACCESS,
                      Kind.INTERFACE_MISSING, Kind.IB_MODIFY_QP, Kind.GPU_ERROR, Kind.IB_ASYNC_EVENT):
        return True
    if event.kind is Kind.EXCEPTION:
        return not is_comm_exception(event)
    if event.kind is Kind.FATAL_SIGNAL:
        return True
    return False


def _outcome(events: Sequence[Event], terminated_pids: set[int]) -> tuple[str, Event | None, str | None, int | None]:
    failures = [e for e in events if e.kind in ERROR_KINDS and e.kind is not Kind.WORKER_FAILED]
    first = failures[0] if failures else None
    exits = [e for e in events if e.kind is Kind.WORKER_FAILED]
    signal = None
    exitcode = None
    for record in exits:
        if record.data.get("exitcode") is not None:
            exitcode = int(record.data["exitcode"])
            signal = record.data.get("signal")
    if first is not None and _is_primary(first):
        return "crashed", first, signal, exitcode
    if not failures and signal and signal not in _AGENT_SIGNALS:
        pid = next((e.origin.pid for e in exits if e.origin.pid is not None), None)
        stopped_by_agent = pid is not None and pid in terminated_pids
        return ("terminated" if stopped_by_agent else "killed"), exits[0], signal, exitcode
    if not failures and not signal and ((exitcode is not None and exitcode > 0)
                                        or (exitcode is None and any(r.data.get("nonzero") for r in exits))
                                        or any(r.data.get("source") == "mpi-abort" for r in exits)):
        # the launcher's record of a non-zero exit is all the inputs have (the worker's own output is elsewhere; a
        # launcher may say it failed without its code: PaddlePaddle's ``… with rank=[11] was aborted``); a process
        # that called MPI_Abort ended the job whatever its code (``with errorcode 0.``: Open MPI kills all the others)
        return "exited", exits[0], signal, exitcode
    if first is not None:
        kinds = {e.kind for e in failures}
        if kinds & TIMEOUT_KINDS:
            return "timed-out", first, signal, exitcode
        if Kind.GLOO_CONNECT_FAILED in kinds or Kind.STORE_ERROR in kinds:
            return "init-failed", first, signal, exitcode
        if Kind.PEER_CLOSED in kinds:
            return "lost-peer", first, signal, exitcode
        if any(_is_primary(e) for e in failures):
            return "crashed", first, signal, exitcode
        return "failed", first, signal, exitcode
    if signal in _AGENT_SIGNALS:
        return "terminated", exits[0], signal, exitcode
    return "silent", None, signal, exitcode


def _in_failure_records(events: list[Event]) -> list[Event]:
    """The traceback torchrun copies into a failed worker's record of its failure table (from the worker's
    ``error_file``, with ``@record``): its lines carry no rank, and are that record's worker's."""
    spans: dict[str, list[tuple[int, int, Origin]]] = defaultdict(list)
    for event in events:
        lines = event.data.get("record_lines") if event.kind is Kind.WORKER_FAILED else None
        if lines and event.origin.rank is not None and event.data.get("error_file") not in (None, "<N/A>"):
            spans[event.ref.source].append((int(lines[0]), int(lines[1]), event.origin))
    if not spans:
        return events
    out = []
    for event in events:
        if event.origin.rank is None and event.kind in _RECORDED and event.ref.source in spans:
            worker = next((o for start, end, o in spans[event.ref.source] if start < event.ref.line <= end), None)
            if worker is not None:
                event = replace(event, origin=event.origin.filled_from(
                    Origin(rank=worker.rank, local_rank=worker.local_rank, host=worker.host)))
        out.append(event)
    return out


_RECORDED = (Kind.EXCEPTION, Kind.CUDA_OOM, Kind.FATAL_SIGNAL, Kind.GPU_ERROR, Kind.NCCL_ERROR, Kind.ERROR_LINE)


def _agent_lines_of_records(events: list[Event]) -> list[Event]:
    """torchrun's agent line cut before the worker's pid (``failed (exitcode: -7) local_rank: 0`` and no more) is the
    worker of the failure table's record in the same input with that local rank and exit code, where one rank's
    record has them: that rank's, not a second failure of a process no line names."""
    def cut(event: Event) -> bool:
        return (event.kind is Kind.WORKER_FAILED and event.data.get("source") == "agent" and event.origin.rank is None
                and event.origin.pid is None and event.origin.local_rank is not None)

    if not any(cut(e) for e in events):
        return events
    records: dict[tuple[str, int | None, object], set[Origin]] = defaultdict(set)
    for event in events:
        if event.kind is Kind.WORKER_FAILED and event.data.get("source") == "summary" and event.origin.rank is not None \
                and event.origin.local_rank is not None:
            records[(event.ref.source, event.origin.local_rank, event.data.get("exitcode"))].add(event.origin)
    out = []
    for event in events:
        origins = records.get((event.ref.source, event.origin.local_rank, event.data.get("exitcode")), set()) \
            if cut(event) else set()
        if len(origins) == 1:
            (worker,) = origins
            event = replace(event, origin=event.origin.filled_from(worker),
                            data={**event.data, **({"worker_pid": worker.pid} if worker.pid is not None else {})})
        out.append(event)
    return out


def build_timeline(events: Sequence[Event], dumps: Sequence[FrDump] = (),
                   file_ranks: Mapping[int, str | None] | None = None) -> Timeline:
    """Attribute every event to a rank and host where possible and summarise each rank.

    ``file_ranks`` maps the ranks that have a log file of their own (``rank3.log``) to the host its path
    names: such a rank exists even when its log shows nothing, which is what a quiet culprit looks like.
    """
    fr_events = list(_fr_status_events(dumps))
    all_events = _explained(list(events) + fr_events)
    maps = _maps(all_events)
    first_node = _first_node_consoles(all_events) | _whole_world_spawned(all_events)
    offsets = _log_dir_offsets(all_events)
    resolved = _agent_lines_of_records(_in_failure_records([_resolve(_local_is_global(event, first_node, offsets), maps)
                                                            for event in all_events]))
    resolved.sort(key=lambda e: (e.ref.source, e.ref.line))
    resolved = _drop_status_timeouts(_pair_groups(_drop_failed_work(resolved)))
    world = _world_size(resolved, dumps)
    per_rank: dict[int, list[Event]] = defaultdict(list)
    unattributed = []
    for event in resolved:
        if event.origin.rank is None:
            unattributed.append(event)
        else:
            per_rank[event.origin.rank].append(event)
    known = set(per_rank) | set(file_ranks or ())
    if world is not None and world <= 1_000_000 and (not known or max(known) < world):
        known |= set(range(world))
    terminated_pids = {int(e.data["worker_pid"]) for e in resolved
                       if e.kind is Kind.WORKER_TERMINATED and "worker_pid" in e.data}
    ranks: dict[int, RankState] = {}
    for rank in sorted(known):
        rank_events = tuple(per_rank.get(rank, ()))
        named = Counter(e.origin.host for e in rank_events if e.origin.host)
        host = named.most_common(1)[0][0] if named else (maps[3].get(rank) or (file_ranks or {}).get(rank))
        pids = tuple(sorted({e.origin.pid for e in rank_events if e.origin.pid is not None}))
        reached, completed = _progress(rank_events)
        outcome, first, signal, exitcode = _outcome(rank_events, terminated_pids)
        ranks[rank] = RankState(rank, host, pids, rank_events, reached, completed, first, outcome, signal, exitcode,
                                logged=bool(rank_events) or rank in (file_ranks or {}))
    hosts: dict[str, list[int]] = defaultdict(list)
    for rank, state in ranks.items():
        if state.host:
            hosts[state.host].append(rank)
    return Timeline(
        ranks=ranks,
        world_size=world if world is not None else (max(known) + 1 if known else None),
        hosts={h: tuple(sorted(r)) for h, r in sorted(hosts.items())},
        events=tuple(resolved),
        unattributed=tuple(unattributed),
        dumps=tuple(dumps),
        host_addrs=_host_addrs(resolved),
        stated_world_size=world,
    )


def _host_addrs(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    addrs: dict[str, set[str]] = defaultdict(set)
    for event in events:
        host = event.origin.host
        if not host:
            continue
        if event.kind is Kind.NCCL_BOOTSTRAP and event.data.get("addr"):
            addrs[host].add(str(event.data["addr"]))
        elif event.kind is Kind.NCCL_NET:
            for key in ("oob_addr",):
                if event.data.get(key):
                    addrs[host].add(str(event.data[key]))
            for addr in event.data.get("addrs", ()):
                addrs[host].add(str(addr))
        elif event.kind is Kind.GLOO_CONNECT_FAILED and event.data.get("local_addr"):
            addrs[host].add(str(event.data["local_addr"]))
    return {host: tuple(sorted(values)) for host, values in sorted(addrs.items())}


def _fr_status_events(dumps: Sequence[FrDump]) -> Iterable[Event]:
    for dump in dumps:
        if dump.rank is None:
            continue
        for group in dump.groups:
            yield Event(
                Kind.FR_STATUS, dump.ref, f"Flight Recorder pg {group.pg_id} ({group.name or 'default'}): "
                f"last enqueued {group.last_enqueued}, last completed {group.last_completed}",
                # the group's name is the same on every rank; its pg id is a per-process number (gloo)
                Origin(rank=dump.rank, host=dump.host), group=group.name or group.pg_id, seq=group.last_enqueued,
                data={"last_enqueued": group.last_enqueued, "last_completed": group.last_completed,
                      "ranks": list(group.ranks)},
            )
