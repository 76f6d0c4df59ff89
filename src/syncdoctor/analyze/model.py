"""Typed records of the post-mortem analysis: where a line came from, what it said, and the diagnosis.

Pure: no I/O. Parsers turn lines into :class:`Event` records; the timeline groups them per rank; the rules
turn the timeline into :class:`Hypothesis` records collected in a :class:`Diagnosis`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "Category",
    "Diagnosis",
    "Event",
    "Evidence",
    "FrDump",
    "FrEntry",
    "FrGroup",
    "Hypothesis",
    "Kind",
    "Origin",
    "Ref",
]


class Kind(str, enum.Enum):
    """What one parsed line (or record) says. The value is the stable name used in ``--json``."""

    # PyTorch ProcessGroupNCCL and c10d
    WATCHDOG_TIMEOUT = "watchdog_timeout"  # Watchdog caught collective operation timeout: WorkNCCL(...)
    WORK_STATUS = "work_status"  # detected by watchdog at work X, last enqueued Y, last completed Z
    DUMP_SIGNAL = "dump_signal"  # received a dump signal from rank N (or this rank signalled)
    HEARTBEAT_TIMEOUT = "heartbeat_timeout"  # heartbeat monitor: the watchdog itself got stuck
    BLOCKING_WAIT_TIMEOUT = "blocking_wait_timeout"
    DESYNC_REPORT = "desync_report"  # TORCH_NCCL_DESYNC_DEBUG report
    COLLECTIVE_MISMATCH = "collective_mismatch"  # DETAIL fingerprints differ, or gloo size mismatch
    # one collective as DETAIL's wrapper traces it before running it (``[Rank 2] Running collective:
    # CollectiveFingerPrint(SequenceNumber=38, OpType=ALLREDUCE, TensorShape=[77, 1], …)``; the last ones of an input)
    COLLECTIVE_TRACE = "collective_trace"
    MONITORED_BARRIER = "monitored_barrier"  # ranks that failed to pass monitoredBarrier
    LAUNCH_UNREACHABLE = "launch_unreachable"  # a launcher could not reach a node (ssh, pdsh, Open MPI's daemons)
    STORE_ERROR = "store_error"  # c10d store wait or socket timed out or failed (may name missing keys)
    STORE_NAME_UNRESOLVED = "store_name_unresolved"  # c10d's IPv6 lookup of the store's host name failed (a warning)
    DDP_UNUSED_PARAMETERS = "ddp_unused_parameters"  # DDP's reducer: parameters that got no gradient on rank N
    GPU_PCI = "gpu_pci"  # the kernel's driver names a GPU of its host: NVRM: GPU at PCI:0000:17:00: GPU-…
    # Gloo
    GLOO_TIMEOUT = "gloo_timeout"  # Timed out waiting Nms for send/recv operation
    PEER_CLOSED = "peer_closed"  # connection closed/reset by a peer (gloo or NCCL sockets)
    GLOO_CONNECT_FAILED = "gloo_connect_failed"  # connectFullMesh / failed to connect
    GLOO_LOOPBACK = "gloo_loopback"  # gloo fell back to (or binds to) the loopback address
    HOSTNAME_LOOPBACK = "hostname_loopback"  # /etc/hosts or getent output: a host's name resolves to 127.x
    INTERFACE_MISSING = "interface_missing"  # gloo: Unable to find address for: IFNAME; NCCL: no socket interface
    # NCCL INFO
    NCCL_VERSION = "nccl_version"
    NCCL_BOOTSTRAP = "nccl_bootstrap"  # Bootstrap: Using if:addr<port>
    NCCL_NET = "nccl_net"  # NET/IB : Using [0]mlx5_0:1/IB ... / NET/Socket : Using [0]eth0:addr / Using network X
    NCCL_INIT = "nccl_init"  # comm ... rank R nranks N ... Init COMPLETE
    NCCL_INIT_START = "nccl_init_start"  # ncclCommInitRank comm ... rank R nranks N cudaDev D busId B ... Init START
    NCCL_CHANNEL = "nccl_channel"  # Ring 00 : 39[7] -> 88[0] via direct shared memory: this process's rank in a comm
    NCCL_ENV = "nccl_env"  # NCCL_SOCKET_IFNAME set by environment to eth0
    NCCL_PROCESS = "nccl_process"  # a process's first NCCL INFO line that says nothing else: where it runs
    # NCCL WARN
    NCCL_WARN = "nccl_warn"  # any other WARN
    NCCL_COLL = "nccl_coll"  # one collective call as NCCL_DEBUG_SUBSYS=COLL traces it (the last ones of an input)
    IB_COMPLETION_ERROR = "ib_completion_error"
    IB_MODIFY_QP = "ib_modify_qp"
    NCCL_CONNECT_FAILED = "nccl_connect_failed"
    SHM_FAILURE = "shm_failure"
    MEMLOCK_FAILURE = "memlock_failure"
    DUPLICATE_GPU = "duplicate_gpu"
    PEER_ACCESS = "peer_access"
    NCCL_ERROR = "nccl_error"  # ncclSystemError / ncclRemoteError ... surfaced by PyTorch
    IB_ASYNC_EVENT = "ib_async_event"  # NET/IB : Got async event : port error / local catastrophic error
    IB_DEVICE_UNAVAILABLE = "ib_device_unavailable"  # ibv_open_device failed, Unable to open device, no IB device
    GPU_ERROR = "gpu_error"  # CUDA error (illegal memory access, ECC, launch failure), Cuda failure N, Xid
    # launcher and process
    WORKER_FAILED = "worker_failed"  # torchrun: a worker's failure record (exit code, signal)
    WORKER_TERMINATED = "worker_terminated"  # torchrun sends SIGTERM to the survivors
    EXCEPTION = "exception"  # Python exception line (with its traceback when one was seen)
    CUDA_OOM = "cuda_oom"
    FATAL_SIGNAL = "fatal_signal"  # SIGSEGV/SIGABRT inside a worker, gloo EnforceNotMet abort
    AGENT_SIGNAL = "agent_signal"  # the launcher itself received a signal (SIGHUP, SIGTERM) and stopped its workers
    STORE_ENDPOINT = "store_endpoint"  # a line naming the store's address (MASTER_ADDR=, --master_addr, --rdzv_endpoint)
    MPI_TRANSPORT = "mpi_transport"  # Open MPI's TCP transport (btl_tcp) reached another process than it dialled
    PROCESS_MAP = "process_map"  # a table that says where each rank runs (nccl-tests' device list)
    ERROR_LINE = "error_line"  # a line that looks like an error and that no parser understood
    TRAINING_DONE = "training_done"  # the framework says its training loop ended (Lightning, HF Trainer)
    PROGRESS_BAR = "progress_bar"  # a tqdm bar's last state on a line: what the process worked on, for how long
    WORK_PHASE = "work_phase"  # a line that says what the process is doing (evaluating): the last one is kept
    STACK_DUMP = "stack_dump"  # a process's main thread as `py-spy dump` printed it (where it was stuck)
    IO_BLOCKED = "io_blocked"  # a process in the kernel's uninterruptible sleep (hung task, ps state D), a filesystem lost
    NCCL_TEARDOWN_FRAME = "nccl_teardown_frame"  # a native stack's frame inside ncclCommAbort/Destroy: hung there
    PASTE_CUT = "paste_cut"  # the input's last line stops inside a word: the paste was cut there
    # other sources
    FR_STATUS = "fr_status"  # one Flight Recorder dump's per-group status (one event per group)
    WATCH = "watch"  # a syncdoctor watch event
    RAS = "ras"  # an NCCL RAS error or warning
    HCCL_HEARTBEAT = "hccl_heartbeat"  # Ascend HCCL's cluster heartbeat: a rank lost (its process exited) or stuck
    COORDINATION = "coordination"  # XLA's coordination service (JAX, TF): a barrier's absent tasks, a task lost


@dataclass(frozen=True, slots=True)
class Ref:
    """Where evidence sits: a file (display name) and a 1-based line; line 0 means the whole file."""

    source: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source


@dataclass(frozen=True, slots=True)
class Origin:
    """Which process wrote a line, as far as its prefix, content or file name tells."""

    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None  # the CUDA device NCCL's ``[N]`` prefix names

    def filled_from(self, other: Origin) -> Origin:
        """This origin with the fields it lacks taken from ``other``."""
        return Origin(
            rank=self.rank if self.rank is not None else other.rank,
            local_rank=self.local_rank if self.local_rank is not None else other.local_rank,
            host=self.host if self.host is not None else other.host,
            pid=self.pid if self.pid is not None else other.pid,
            device=self.device if self.device is not None else other.device,
        )

    @property
    def empty(self) -> bool:
        return (self.rank is None and self.local_rank is None and self.host is None and self.pid is None
                and self.device is None)

    def describe(self) -> str:
        """``rank 3``, or as much as the lines say when the rank is unknown: ``local rank 1 (pid 14447) on
        node-b``, ``GPU 3 on gpu2-ru7``, ``pid 2143``; empty when nothing is known."""
        parts = []
        if self.rank is not None:
            parts.append(f"rank {self.rank}")
        elif self.local_rank is not None:
            parts.append(f"local rank {self.local_rank}")
        elif self.device is not None:
            parts.append(f"GPU {self.device}")
        if self.pid is not None:
            parts.append(f"(pid {self.pid})" if parts else f"pid {self.pid}")
        if self.host:
            parts.append(f"on {self.host}" if parts else self.host)
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Event:
    """One thing a log line or dump says.

    Attributes:
        kind: what it says.
        ref: the file and line.
        text: the line as written (prefixes included), cut to a few hundred characters.
        origin: the writer as attributed so far; the timeline fills in rank and host.
        time: seconds on the writer's clock, year-less (month, day, time of day), or None. Only comparable
            between events of the same host.
        time_text: the timestamp as written.
        group: process group or communicator (PyTorch PG name/id, NCCL commId), when known.
        seq: collective sequence number, when known.
        op: collective operation (``allreduce``, ``broadcast``...), lower case without underscores.
        data: the parsed fields specific to ``kind`` (JSON-serialisable).
    """

    kind: Kind
    ref: Ref
    text: str
    origin: Origin = Origin()
    time: float | None = None
    time_text: str = ""
    group: str | None = None
    seq: int | None = None
    op: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def rank(self) -> int | None:
        return self.origin.rank

    @property
    def host(self) -> str | None:
        return self.origin.host

    def with_origin(self, origin: Origin) -> Event:
        return replace(self, origin=origin)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "ref": str(self.ref),
            "rank": self.origin.rank,
            "host": self.origin.host,
            "time": self.time_text or None,
            "group": self.group,
            "seq": self.seq,
            "op": self.op,
            "data": dict(self.data),
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class FrEntry:
    """One Flight Recorder entry, normalised across dump versions and backends."""

    record_id: int
    pg_id: str
    pg_name: str
    seq: int  # collective_seq_id (0 for pure p2p entries)
    p2p_seq: int
    op: str  # profiling name without the backend prefix: all_reduce, broadcast, send 1->2 ...
    backend: str  # nccl, gloo, xccl ...
    input_sizes: tuple[tuple[int, ...], ...]
    output_sizes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    state: str
    retired: bool
    is_p2p: bool
    time_created_ns: int | None = None
    timeout_ms: int | None = None
    frames: tuple[str, ...] = ()
    op_id: int | None = None  # the backend's operation number (gloo numbers sends and receives too)


@dataclass(frozen=True, slots=True)
class FrGroup:
    """One process group as a dump describes it: members and the dumping rank's progress."""

    pg_id: str
    name: str
    desc: str
    ranks: tuple[int, ...]
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None


@dataclass(frozen=True, slots=True)
class FrDump:
    """A whole Flight Recorder dump of one rank (the rank comes from the file name)."""

    ref: Ref
    rank: int | None
    version: str
    groups: tuple[FrGroup, ...]
    entries: tuple[FrEntry, ...]
    host: str | None = None


class Category(str, enum.Enum):
    """Root-cause categories; each value is the name of its A-code page (``syncdoctor explain``), the one name
    the JSON, the terminal and ``explain`` use. The short names of earlier releases (``interface-missing``…)
    are still accepted: ``Category("interface-missing") is Category.INTERFACE_MISSING``."""

    LAGGING_RANK = "lagging-rank"
    COLLECTIVE_DESYNC = "collective-desync"
    RANK_CRASHED = "rank-crashed"
    RANK_OUT_OF_MEMORY = "rank-out-of-memory"
    NETWORK_PARTITION = "network-partition"
    SOCKET_FALLBACK = "nccl-socket-fallback"
    INTERFACE_MISMATCH = "interface-mismatch-between-hosts"
    LOOPBACK_ADDRESS = "advertised-loopback-address"
    INTERFACE_MISSING = "socket-interface-missing"
    RANK_NEVER_JOINED = "rank-never-joined"
    IB_UNREACHABLE_AT_INIT = "ib-retry-exceeded-at-init"
    IB_LINK_FAILURE = "ib-retry-exceeded-late"
    IB_MODIFY_QP = "ib-modify-qp-failed"
    SHM_EXHAUSTED = "nccl-shm-failure"
    MEMLOCK_LIMIT = "nccl-memlock-failure"
    DUPLICATE_GPU = "nccl-duplicate-gpu"
    PEER_ACCESS = "nccl-peer-access-unsupported"
    WATCHDOG_STUCK = "watchdog-stuck"
    COLLECTIVE_STALLED = "collective-stalled-all-entered"
    UNEXPLAINED_TIMEOUT = "unexplained-collective-timeout"
    GPU_ERROR = "gpu-error"
    NCCL_VERSION_MISMATCH = "nccl-version-mismatch"
    PEER_UNREACHABLE = "peer-unreachable"
    RENDEZVOUS_TIMEOUT = "rendezvous-or-store-timeout"
    RANK_KILLED = "rank-killed"
    IB_COMPLETION = "ib-completion-error"
    IB_PORT_DOWN = "ib-port-or-device-down"
    UNRECOGNISED = "unrecognised-error"
    PORT_IN_USE = "port-in-use"

    @classmethod
    def _missing_(cls, value: object) -> Category | None:
        renamed = LEGACY_CATEGORY_NAMES.get(str(value))
        return cls(renamed) if renamed else None


# the names analyze wrote before its categories took their pages' names (files in that form are still read)
LEGACY_CATEGORY_NAMES: dict[str, str] = {
    "interface-mismatch": "interface-mismatch-between-hosts",
    "loopback-address": "advertised-loopback-address",
    "interface-missing": "socket-interface-missing",
    "ib-unreachable-at-init": "ib-retry-exceeded-at-init",
    "ib-link-failure": "ib-retry-exceeded-late",
    "shm-exhausted": "nccl-shm-failure",
    "memlock-limit": "nccl-memlock-failure",
    "duplicate-gpu": "nccl-duplicate-gpu",
    "peer-access-unsupported": "nccl-peer-access-unsupported",
    "collective-stalled": "collective-stalled-all-entered",
    "unexplained-timeout": "unexplained-collective-timeout",
}


@dataclass(frozen=True, slots=True)
class Evidence:
    """A line that supports a hypothesis, with why it matters."""

    ref: Ref
    text: str
    note: str = ""
    rank: int | None = None
    host: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ref": str(self.ref), "text": self.text, "note": self.note, "rank": self.rank, "host": self.host}


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """One candidate root cause.

    Attributes:
        category: the kind of root cause (one A-code each).
        code: the finding code of the category (``A001``...).
        confidence: 0..1, how sure the rule is; hypotheses are ranked by it.
        title: one line naming the culprit and what happened.
        culprit_ranks / culprit_hosts: where the cause sits (may be empty when unknown).
        affected_ranks / affected_hosts: who suffered from it (timed out, lost a peer...).
        what: what happened, in a few sentences.
        fix: what to change.
        evidence: the supporting lines, most telling first.
        root_cause: False for contributing or secondary findings that do not explain the failure alone.
    """

    category: Category
    code: str
    confidence: float
    title: str
    culprit_ranks: tuple[int, ...] = ()
    culprit_hosts: tuple[str, ...] = ()
    affected_ranks: tuple[int, ...] = ()
    affected_hosts: tuple[str, ...] = ()
    what: str = ""
    fix: str = ""
    evidence: tuple[Evidence, ...] = ()
    root_cause: bool = True
    # where the global rank is unknown: the process as the lines name it ("local rank 1 (pid 14447)",
    # "GPU 3", "pid 2143"), and the local ranks among that
    culprit_processes: tuple[str, ...] = ()
    culprit_local_ranks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The answer: hypotheses best first, plus what the analysis read."""

    hypotheses: tuple[Hypothesis, ...]
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    unexplained: tuple[Evidence, ...] = ()  # error-looking lines that no hypothesis cites (the first few)

    @property
    def root_cause(self) -> Hypothesis | None:
        """The best hypothesis that claims to explain the failure, if any is confident enough."""
        for hypothesis in self.hypotheses:
            if hypothesis.root_cause and hypothesis.confidence >= 0.5:
                return hypothesis
        return None
