"""The table of environment variables that matter for multi-node jobs. Pure: no I/O.

One :class:`Variable` per name: who reads it (NCCL, PyTorch, Gloo, the launcher), how it is parsed
(see :mod:`syncdoctor.checks.values`), its range or allowed values, its default by version, when it
appeared, was deprecated or removed, whether env.rst files it under "Debugging", and what the reader
does with a bad value. Sources: NCCL docs/userguide/source/env.rst, NCCL src/misc/param.cc, PyTorch
ProcessGroupNCCL.hpp / Utils.hpp, torch/distributed/run.py (see ``shared/reference/*.md``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from syncdoctor.checks.values import parse_version

__all__ = [
    "NOT_NCCL_NAMES",
    "READER_BEHAVIOUR",
    "VARIABLES",
    "Variable",
    "is_known",
    "lookup",
    "nearest_name",
]

NCCL, TORCH, GLOO, LAUNCHER = "NCCL", "PyTorch", "Gloo", "launcher"

# What each reader does with a value it cannot parse (quoted in findings).
READER_BEHAVIOUR: Mapping[str, str] = {
    "nccl-int": (
        "NCCL reads it with strtoll(value, NULL, 0): a leading 0 means octal, 0x means hex, reading stops "
        "at the first character that is not a digit ('8x' is 8, 'yes' is 0, '1.5' is 1), an empty value "
        "means the default, and there is no range check"
    ),
    "nccl-text": "NCCL compares the text as given",
    "torch-int": (
        "PyTorch reads it with std::stoi: leading blanks are skipped and trailing characters ignored "
        "('8x' is 8), but a value with no leading digits (including an empty one) makes ProcessGroupNCCL "
        "fail with 'Invalid value for environment variable'"
    ),
    "torch-bool": (
        "PyTorch accepts only y/yes/1/t/true and n/no/0/f/false (any case, no blanks); anything else makes "
        "ProcessGroupNCCL fail with 'Invalid value for environment variable'"
    ),
    "torch-text": "PyTorch compares the text as given",
    "python-int": "torch.distributed reads it with int(value), which raises ValueError for anything but an integer",
    "gloo-text": "Gloo/PyTorch uses the text as given",
    "launcher-text": "torch.distributed uses the text as given",
}


@dataclass(frozen=True)
class Variable:
    """One environment variable.

    Attributes:
        name: the exact name.
        owner: ``NCCL``, ``PyTorch``, ``Gloo`` or ``launcher``.
        kind: ``int``, ``bool`` (0/1), ``choice``, ``level``, ``nccl-list``, ``hca-list``, ``gloo-list``,
            ``subsys``, ``path`` or ``text``.
        reader: how the value is parsed: a key of :data:`READER_BEHAVIOUR`.
        summary: what it does, one sentence.
        minimum, maximum: documented integer range (inclusive), None when open.
        choices: allowed values for ``choice`` kinds; case_sensitive says how they are compared.
        default: the current default in words; defaults: (since version, default), newest first.
        since: version that introduced it; deprecated / removed: version it was deprecated / stopped
            being read; replaced_by: what to use instead; alias_of: the name it is an alias of.
        debugging_only: listed in env.rst's "Debugging" section ("should not be used in production").
        secret: never show the value.
        bad_value: what the reader does with a value outside the range or choices.
    """

    name: str
    owner: str
    kind: str
    reader: str
    summary: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    case_sensitive: bool = True
    default: str | None = None
    defaults: tuple[tuple[str, str], ...] = ()
    since: str | None = None
    deprecated: str | None = None
    removed: str | None = None
    replaced_by: str | None = None
    alias_of: str | None = None
    debugging_only: bool = False
    secret: bool = False
    bad_value: str = ""

    def default_for(self, version: str | tuple[int, int, int] | None) -> str | None:
        """The default for a given version (the newest default when the version is unknown)."""
        parsed = parse_version(version) if isinstance(version, str) else version
        if not self.defaults:
            return self.default
        if parsed is None:
            return self.defaults[0][1]
        for since, value in self.defaults:
            since_version = parse_version(since)
            if since_version is None or parsed >= since_version:
                return value
        return self.defaults[-1][1]

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "bool")


def _nccl(name: str, kind: str, summary: str, **kw: object) -> Variable:
    reader = "nccl-int" if kind in ("int", "bool") else "nccl-text"
    if kind == "bool":
        kw.setdefault("minimum", 0)
        kw.setdefault("maximum", 1)
    return Variable(name, NCCL, kind, reader, summary, **kw)  # type: ignore[arg-type]


def _torch(name: str, kind: str, summary: str, **kw: object) -> Variable:
    reader = {"int": "torch-int", "bool": "torch-bool"}.get(kind, "torch-text")
    return Variable(name, TORCH, kind, reader, summary, **kw)  # type: ignore[arg-type]


def _dbg(name: str, kind: str, summary: str, **kw: object) -> Variable:
    return _nccl(name, kind, summary, debugging_only=True, **kw)


_LEVEL_BAD = (
    "names are compared case-sensitively with LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS; a value starting "
    "with a digit is a legacy integer (0=LOC, 1=PIX, 2=PXB, 3=PHB, 4 and above=SYS); anything else is "
    "silently ignored and NCCL keeps its automatic choice"
)

_TABLE: tuple[Variable, ...] = (
    # -- interface and network selection ------------------------------------------------------------
    _nccl("NCCL_SOCKET_IFNAME", "nccl-list", "IP interfaces NCCL may use (bootstrap uses the first match)",
          default="auto (ib*, then anything but docker/lo/virbr)",
          bad_value="entries are prefixes unless the list starts with '=', values of length <= 1 are ignored"),
    _nccl("NCCL_SOCKET_FAMILY", "choice", "force IPv4 or IPv6 interfaces", choices=("AF_INET", "AF_INET6"),
          bad_value="any other value is ignored and both families are used"),
    _nccl("NCCL_SOCKET_NTHREADS", "int", "socket transport helper threads per connection", minimum=1,
          maximum=16, default="1 (AWS 2, GCP gVNIC 4)", since="2.4.8",
          bad_value="above 16 NCCL warns and uses 16"),
    _nccl("NCCL_NSOCKS_PERTHREAD", "int", "sockets per helper thread", minimum=1, default="1 (AWS 8)",
          since="2.4.8", bad_value="if NTHREADS x NSOCKS_PERTHREAD > 64, NCCL lowers NSOCKS_PERTHREAD to 64/NTHREADS"),
    _nccl("NCCL_SOCKET_RETRY_CNT", "int", "connect retries on ETIMEDOUT/ECONNREFUSED/EHOSTUNREACH", minimum=0,
          default="34", since="2.24"),
    _nccl("NCCL_SOCKET_RETRY_SLEEP_MSEC", "int", "first retry sleep (grows linearly)", minimum=0, default="100",
          since="2.24"),
    _nccl("NCCL_SOCKET_POLL_TIMEOUT_MSEC", "int", "poll timeout between socket progress attempts", minimum=0,
          default="0", since="2.28"),
    _nccl("NCCL_SOCKET_MAGIC", "int", "magic value of NCCL's internal socket handshake", minimum=0),
    _nccl("NCCL_PSK", "text", "pre-shared key that turns on TLS for NCCL's host TCP traffic", secret=True,
          bad_value="non-empty keys shorter than 32 characters are rejected"),
    _nccl("NCCL_CROSS_NIC", "int", "allow rings/trees to use different NICs on different nodes", minimum=0,
          maximum=2, default="2"),
    _nccl("NCCL_IB_HCA", "hca-list", "RDMA devices (and ports) NCCL may use", default="all active ports",
          bad_value="entries are prefixes unless the list starts with '=': mlx5_1 also matches mlx5_10..19"),
    _nccl("NCCL_IB_RAIL_POLICY", "text", "automatic rail/plane assignment on ConnectX SuperNICs", since="2.30.5"),
    _nccl("NCCL_OOB_NET_ENABLE", "bool", "use the NCCL net for the out-of-band init allgather", since="2.23"),
    _nccl("NCCL_OOB_NET_IFNAME", "nccl-list", "devices for the out-of-band net (HCA or socket syntax)",
          since="2.23"),
    _nccl("NCCL_UID_STAGGER_THRESHOLD", "int", "ranks per unique id above which init traffic is staggered",
          minimum=1, default="256", since="2.23"),
    _nccl("NCCL_UID_STAGGER_RATE", "int", "target message rate when staggering (messages/s)", minimum=1,
          default="7000", since="2.23"),
    _nccl("NCCL_NET", "text", "force a network module (IB, Socket or a plugin's name; case-insensitive)",
          since="2.10", bad_value="if no network has that name: 'Failed to initialize any NET plugin'"),
    _nccl("NCCL_NET_PLUGIN", "text", "net plugin library or suffix, or 'none'", since="2.11"),
    _nccl("NCCL_GIN_PLUGIN", "text", "GIN plugin libraries", since="2.29.3"),
    _nccl("NCCL_RMA_PLUGIN", "text", "RMA plugin libraries", since="2.30.7"),
    _nccl("NCCL_TUNER_PLUGIN", "text", "tuner plugin library or suffix"),
    _nccl("NCCL_PROFILER_PLUGIN", "text", "profiler plugin library or suffix"),
    _nccl("NCCL_ENV_PLUGIN", "text", "environment plugin library or suffix", since="2.28"),
    _nccl("NCCL_IGNORE_CPU_AFFINITY", "bool", "use the GPU's CPU affinity only", default="0", since="2.4.6"),
    _nccl("NCCL_CONF_FILE", "path", "static configuration file (instead of ~/.nccl.conf)", since="2.23",
          bad_value="'~' is not expanded"),
    _nccl("NCCL_COMM_ID", "text", "host:port of the bootstrap root when not using a unique id"),
    _nccl("NCCL_HOSTID", "text", "override the host identity used to group ranks per node"),
    _nccl("NCCL_NO_CACHE", "text", "comma list of variables NCCL re-reads on every use (or ALL)"),
    _nccl("NCCL_COLLNET_ENABLE", "bool", "use the CollNet plugin", default="0", since="2.6"),
    _nccl("NCCL_COLLNET_NODE_THRESHOLD", "int", "nodes below which CollNet is not used", default="2",
          since="2.9.9"),
    _nccl("NCCL_CTA_POLICY", "text", "CTA policy (DEFAULT, EFFICIENCY, ZERO)", since="2.27"),
    _nccl("NCCL_NETDEVS_POLICY", "text", "network devices per GPU (MAX:N or ALL)", since="2.28"),
    _nccl("NCCL_MULTI_RANK_GPU_ENABLE", "bool", "allow several ranks per GPU (experimental)", default="0",
          since="2.30"),
    _nccl("NCCL_TOPO_FILE", "path", "topology XML loaded before detection", since="2.6"),
    _nccl("NCCL_TOPO_DUMP_FILE", "path", "where to dump the detected topology", since="2.6"),
    _nccl("NCCL_SET_THREAD_NAME", "bool", "name NCCL's CPU threads", default="0", since="2.12"),
    _nccl("NCCL_RAS_ENABLE", "bool", "RAS subsystem (ncclras)", default="1", since="2.24"),
    _nccl("NCCL_RAS_ADDR", "text", "RAS listen address", default="localhost:28028", since="2.24"),
    _nccl("NCCL_RAS_TIMEOUT_FACTOR", "text", "multiplier of the RAS timeouts", default="1", since="2.24"),
    # -- InfiniBand / RoCE --------------------------------------------------------------------------
    _nccl("NCCL_IB_TIMEOUT", "int", "IB Local Ack Timeout exponent: 4.096 us x 2^value per try", minimum=0,
          maximum=31, defaults=(("2.23", "20"), ("2.14", "18"), ("0", "14")),
          bad_value="passed unchecked to ibv_qp_attr.timeout: mlx5 keeps the low 5 bits (60 -> 28), the "
                    "docs say 0 or >= 32 is infinite"),
    _nccl("NCCL_IB_RETRY_CNT", "int", "IB transport retry count (3-bit field)", minimum=0, maximum=7,
          default="7", since="2.1.15",
          bad_value="passed unchecked to ibv_qp_attr.retry_cnt: mlx5 keeps the low 3 bits (16 and 32 -> 0 "
                    "retries), rdmavt/qib/hfi1/irdma reject it with EINVAL"),
    _nccl("NCCL_IB_GID_INDEX", "int", "RoCE GID index (-1 = automatic selection)", minimum=-1, maximum=255,
          defaults=(("2.21", "-1"), ("0", "0")), since="2.1.4"),
    _nccl("NCCL_IB_ROUTABLE_FLID_GID_INDEX", "int", "GID index carrying a routable FLID on IB", default="1",
          since="2.23"),
    _nccl("NCCL_IB_ADDR_FAMILY", "choice", "address family of the automatically chosen RoCE GID",
          choices=("AF_INET", "AF_INET6"), default="AF_INET", since="2.21"),
    _nccl("NCCL_IB_ADDR_RANGE", "text", "CIDR filter for the automatically chosen RoCE GID", since="2.21"),
    _nccl("NCCL_IB_ROCE_VERSION_NUM", "int", "RoCE version of the automatically chosen GID", minimum=1,
          maximum=2, default="2", since="2.21"),
    _nccl("NCCL_IB_PKEY", "int", "index into the port's PKey table", minimum=0, default="0", since="2.1.4"),
    _nccl("NCCL_IB_PKEY_VALUE", "int", "PKey selected by value", default="-1", since="2.31"),
    _nccl("NCCL_IB_SL", "int", "InfiniBand service level", minimum=0, maximum=15, default="0", since="2.1.4",
          bad_value="SL is a 4-bit field"),
    _nccl("NCCL_IB_TC", "int", "traffic class (RoCE: GRH traffic_class)", minimum=0, maximum=255, default="0",
          since="2.1.15", bad_value="traffic class is an 8-bit field"),
    _nccl("NCCL_IB_FIFO_TC", "int", "traffic class of control messages", minimum=0, maximum=255,
          default="NCCL_IB_TC", since="2.22.3"),
    _nccl("NCCL_IB_RETURN_ASYNC_EVENTS", "bool", "stop IB communications on fatal async events", default="1",
          since="2.23"),
    _nccl("NCCL_IB_EVENT_BASED_LB", "bool", "split messages by current link speed on fused devices",
          default="0", since="2.31"),
    _nccl("NCCL_IB_QPS_PER_CONNECTION", "int", "queue pairs per connection", minimum=1, maximum=128,
          default="1", since="2.10"),
    _nccl("NCCL_IB_SPLIT_DATA_ON_QPS", "bool", "split each message over the queue pairs", default="0",
          since="2.18"),
    _nccl("NCCL_IB_AR_THRESHOLD", "int", "size above which data goes in a separate message (adaptive routing)",
          minimum=0, default="8192", since="2.6"),
    _nccl("NCCL_IB_OOO_RQ", "bool", "out-of-order receive WR consumption", default="0", since="2.30"),
    _nccl("NCCL_IB_PCI_RELAXED_ORDERING", "int", "PCI relaxed ordering (2 = auto)", minimum=0, maximum=2,
          default="2", since="2.12"),
    _nccl("NCCL_IB_ADAPTIVE_ROUTING", "bool", "adaptive-routing capable transfers", since="2.16"),
    _nccl("NCCL_IB_ECE_ENABLE", "bool", "Enhanced Connection Establishment", default="1", since="2.23"),
    _nccl("NCCL_IB_MERGE_NICS", "bool", "fuse dual-port NICs into one device", default="1", since="2.20"),
    _nccl("NCCL_NET_MERGE_POLICY", "choice", "which HCAs may be fused", choices=("ALL", "RAIL"), default="ALL",
          since="2.30.5"),
    _nccl("NCCL_NET_MERGE_LEVEL", "text", "topological distance under which NICs are fused"),
    _nccl("NCCL_NET_GDR_C2C", "bool", "GPU Direct RDMA through C2C-attached CPUs", default="1", since="2.26"),
    _nccl("NCCL_NET_SHARED_BUFFERS", "bool", "shared buffer pool for inter-node p2p", default="1", since="2.8"),
    _nccl("NCCL_NET_SHARED_COMMS", "bool", "reuse connections for PXN", default="1", since="2.12"),
    _nccl("NCCL_IGNORE_NET_MISMATCH", "bool", "accept different net device counts across ranks", default="1",
          since="2.30"),
    _nccl("NCCL_IGNORE_COLLNET_MISMATCH", "bool", "accept different CollNet device counts", default="0",
          since="2.30"),
    _nccl("NCCL_DMABUF_ENABLE", "bool", "GDR buffer registration through dma-buf", default="1", since="2.13"),
    _nccl("NCCL_GDRCOPY_ENABLE", "bool", "GDRCopy for NCCL's control structures", default="0"),
    _nccl("NCCL_GDRCOPY_FIFO_ENABLE", "bool", "work FIFO in GDRCopy memory", default="1"),
    _nccl("NCCL_GDRCOPY_SYNC_ENABLE", "bool", "proxy sync words in GDRCopy memory", default="1"),
    _nccl("NCCL_GDRCOPY_FLUSH_ENABLE", "bool", "GDRCopy read as receive flush", default="0"),
    _nccl("NCCL_MNNVL_ENABLE", "int", "Multi-Node NVLink (2 = auto)", minimum=0, maximum=2, since="2.21"),
    _nccl("NCCL_MNNVL_UUID", "int", "override the MNNVL UUID", since="2.25"),
    _nccl("NCCL_MNNVL_CLIQUE_ID", "int", "override the MNNVL clique id", since="2.25"),
    _nccl("NCCL_NVLS_ENABLE", "int", "NVLink SHARP (2 = default)", minimum=0, maximum=2, default="2",
          since="2.17"),
    # -- debugging knobs (env.rst "Debugging") ----------------------------------------------------------
    _dbg("NCCL_P2P_DISABLE", "bool", "disables the P2P transport (NVLink/PCIe) entirely",
         bad_value="only the exact value 1 disables P2P (ncclGetLevel compares with 1)"),
    _dbg("NCCL_P2P_LEVEL", "level", "maximum GPU-GPU distance at which P2P is used", since="2.3.4",
         bad_value=_LEVEL_BAD),
    _dbg("NCCL_P2P_DIRECT_DISABLE", "bool", "forbids direct P2P access to user buffers in one process"),
    _dbg("NCCL_SHM_DISABLE", "bool", "disables shared memory: intra-node traffic between sockets goes over the network"),
    _dbg("NCCL_BUFFSIZE", "int", "buffer size per GPU pair (Simple protocol), bytes", minimum=1,
         default="4194304", bad_value="powers of 2 are recommended"),
    _dbg("NCCL_NTHREADS", "int", "CUDA threads per block", choices=("64", "128", "256", "512"),
         default="512 (256 on some older GPUs)",
         bad_value="NCCL replaces an invalid count with its own choice and only says so at INFO level"),
    _dbg("NCCL_MAX_NCHANNELS", "int", "maximum channels (deprecated: NCCL_MAX_CTAS)", minimum=1, maximum=64,
         since="2.5.0", deprecated="2.17", replaced_by="NCCL_MAX_CTAS",
         bad_value="clamped to 64 (MAXCHANNELS); below 1 means 1"),
    _dbg("NCCL_MIN_NCHANNELS", "int", "minimum channels (deprecated: NCCL_MIN_CTAS)", minimum=0, maximum=64,
         since="2.5.0", deprecated="2.17", replaced_by="NCCL_MIN_CTAS", bad_value="clamped to 64 (MAXCHANNELS)"),
    _dbg("NCCL_MAX_NRINGS", "int", "old name of NCCL_MAX_NCHANNELS", minimum=1, maximum=64, deprecated="2.5.0",
         replaced_by="NCCL_MAX_CTAS", bad_value="ignored when NCCL_MAX_NCHANNELS is set"),
    _dbg("NCCL_MIN_NRINGS", "int", "old name of NCCL_MIN_NCHANNELS", minimum=0, maximum=64, deprecated="2.5.0",
         replaced_by="NCCL_MIN_CTAS", bad_value="ignored when NCCL_MIN_NCHANNELS is set"),
    _nccl("NCCL_MAX_CTAS", "int", "maximum CTAs (channels)", minimum=1, maximum=64, since="2.17",
          bad_value="up to 64 (32 before 2.25)"),
    _nccl("NCCL_MIN_CTAS", "int", "minimum CTAs (channels)", minimum=1, maximum=64, since="2.17",
          bad_value="up to 64 (32 before 2.25)"),
    _dbg("NCCL_CHECKS_DISABLE", "bool", "disable argument checks", deprecated="2.2.12"),
    _dbg("NCCL_CHECK_POINTERS", "bool", "check CUDA pointers on every call", deprecated="2.29.7",
         replaced_by="NCCL_CHECK_MODE"),
    _nccl("NCCL_CHECK_MODE", "choice", "argument checking mode", choices=("DEFAULT", "DEBUG_LOCAL", "DEBUG_GLOBAL"),
          default="DEFAULT", since="2.29.7"),
    _dbg("NCCL_LAUNCH_MODE", "choice", "kernel launch mode", choices=("PARALLEL", "GROUP"), default="PARALLEL"),
    _dbg("NCCL_IB_DISABLE", "bool", "disables IB/RoCE and forces IP sockets"),
    _dbg("NCCL_IB_CUDA_SUPPORT", "bool", "force/disable GPU Direct RDMA", removed="2.4.0",
         replaced_by="NCCL_NET_GDR_LEVEL"),
    _dbg("NCCL_NET_GDR_LEVEL", "level", "maximum NIC-GPU distance at which GPU Direct RDMA is used",
         since="2.3.4", bad_value=_LEVEL_BAD),
    _dbg("NCCL_IB_GDR_LEVEL", "level", "old name of NCCL_NET_GDR_LEVEL (renamed in 2.4.0)", removed="2.4.0",
         replaced_by="NCCL_NET_GDR_LEVEL"),
    _dbg("NCCL_NET_GDR_READ", "bool", "GPU Direct RDMA for sends"),
    _dbg("NCCL_SINGLE_RING_THRESHOLD", "int", "single-ring size limit", removed="2.3"),
    _dbg("NCCL_LL_THRESHOLD", "int", "LL protocol size limit", removed="2.5"),
    _dbg("NCCL_TREE_THRESHOLD", "int", "tree algorithm size limit", removed="2.5"),
    _dbg("NCCL_ALGO", "text", "restricts the algorithms NCCL may use", since="2.5"),
    _dbg("NCCL_PROTO", "text", "restricts the protocols NCCL may use (LL128 where unsupported can corrupt data)",
         since="2.5"),
    _dbg("NCCL_NVB_DISABLE", "bool", "disables NVLink through an intermediate GPU", since="2.11"),
    _dbg("NCCL_PXN_DISABLE", "bool", "disables inter-node traffic through a non-local NIC", since="2.12"),
    _dbg("NCCL_P2P_PXN_LEVEL", "int", "when PXN is used for send/recv", minimum=0, maximum=2, default="2",
         since="2.12"),
    _dbg("NCCL_CUMEM_ENABLE", "bool", "cuMem* allocations", since="2.18"),
    _nccl("NCCL_CUMEM_HOST_ENABLE", "bool", "cuMem* host allocations", since="2.23"),
    _nccl("NCCL_MEM_SYNC_DOMAIN", "int", "memory sync domain of NCCL kernels", minimum=0, maximum=1,
          default="1", since="2.16"),
    _nccl("NCCL_PXN_C2C", "bool", "PXN through C2C + PCIe", default="1", since="2.27"),
    _nccl("NCCL_RUNTIME_CONNECT", "bool", "connect peers lazily", default="1", since="2.22"),
    _nccl("NCCL_GRAPH_REGISTER", "bool", "buffer registration under CUDA graphs", default="1", since="2.11"),
    _nccl("NCCL_LOCAL_REGISTER", "bool", "ncclCommRegister buffer registration", default="1", since="2.19"),
    _nccl("NCCL_LEGACY_CUDA_REGISTER", "bool", "register cudaMalloc buffers (can hang)", default="0",
          since="2.24"),
    _nccl("NCCL_WIN_ENABLE", "bool", "window memory registration", default="1", since="2.27"),
    _nccl("NCCL_SET_STACK_SIZE", "bool", "set the CUDA stack size up front", default="0", since="2.9"),
    _nccl("NCCL_GRAPH_MIXING_SUPPORT", "bool", "parallel graph and eager NCCL calls", default="1", since="2.13"),
    _nccl("NCCL_GRAPH_STREAM_ORDERING", "bool", "serialise NCCL kernels under graph capture", default="1",
          since="2.30"),
    _nccl("NCCL_RMA_EAGER_INIT", "bool", "initialise RMA signals at init", default="0", since="2.31"),
    _nccl("NCCL_P2P_NET_CHUNKSIZE", "int", "network chunk size for send/recv", minimum=1, default="131072",
          since="2.14"),
    _nccl("NCCL_P2P_LL_THRESHOLD", "int", "largest p2p message sent with LL", minimum=0, default="16384",
          since="2.14"),
    _nccl("NCCL_ALLOC_P2P_NET_LL_BUFFERS", "bool", "dedicated LL buffers for p2p network connections",
          default="0", since="2.14"),
    _nccl("NCCL_COMM_BLOCKING", "bool", "blocking or non-blocking communicators", since="2.14"),
    _nccl("NCCL_CGA_CLUSTER_SIZE", "int", "CGA cluster size", minimum=0, maximum=8, since="2.16"),
    _nccl("NCCL_LAUNCH_ORDER_IMPLICIT", "bool", "order launches across communicators", default="0", since="2.26"),
    _nccl("NCCL_LAUNCH_RACE_FATAL", "bool", "fail on racing launches", default="1", since="2.26"),
    _nccl("NCCL_IPC_USE_ABSTRACT_SOCKET", "bool", "abstract Unix sockets for IPC handles", default="1",
          since="2.29"),
    _nccl("NCCL_SYM_GIN_KERNELS_ENABLE", "bool", "symmetric kernels over GIN", default="1", since="2.29"),
    # -- debug output -----------------------------------------------------------------------------------
    _nccl("NCCL_DEBUG", "choice", "log level", choices=("VERSION", "WARN", "ATTN", "INFO", "ABORT", "TRACE"),
          case_sensitive=False,
          bad_value="compared case-insensitively; an unknown level turns logging off (ATTN exists since 2.32)"),
    _nccl("NCCL_DEBUG_LEVELS", "text", "extra log levels added to NCCL_DEBUG", since="2.32"),
    _nccl("NCCL_DEBUG_SUBSYS", "subsys", "subsystems logged at INFO",
          defaults=(("2.23", "INIT,BOOTSTRAP,ENV"), ("0", "INIT,ENV")), since="2.3.4",
          bad_value="unknown names are ignored"),
    _nccl("NCCL_DEBUG_FILE", "path", "log file; %h = hostname, %p = pid", since="2.2.12",
          bad_value="the file is truncated when opened, '~' is not expanded"),
    _nccl("NCCL_DEBUG_TIMESTAMP_FORMAT", "text", "strftime format of log timestamps", since="2.26"),
    _nccl("NCCL_DEBUG_TIMESTAMP_LEVELS", "text", "levels that get a timestamp", since="2.26"),
    # -- PyTorch ProcessGroupNCCL -----------------------------------------------------------------------
    _torch("TORCH_NCCL_ASYNC_ERROR_HANDLING", "int", "what the watchdog does after a collective error or timeout",
           minimum=0, maximum=3, defaults=(("2.2", "3"), ("0", "1")),
           bad_value="only 0-3 are modes; PyTorch does not validate the number"),
    _torch("NCCL_ASYNC_ERROR_HANDLING", "int", "old name of TORCH_NCCL_ASYNC_ERROR_HANDLING", minimum=0,
           maximum=3, deprecated="2.2", replaced_by="TORCH_NCCL_ASYNC_ERROR_HANDLING",
           alias_of="TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    _torch("TORCH_NCCL_BLOCKING_WAIT", "bool", "work.wait() blocks and raises on timeout", default="0"),
    _torch("NCCL_BLOCKING_WAIT", "bool", "old name of TORCH_NCCL_BLOCKING_WAIT", deprecated="2.2",
           replaced_by="TORCH_NCCL_BLOCKING_WAIT", alias_of="TORCH_NCCL_BLOCKING_WAIT"),
    _torch("TORCH_NCCL_DESYNC_DEBUG", "bool", "desync report on timeout (a store write per collective)",
           default="0"),
    _torch("NCCL_DESYNC_DEBUG", "bool", "old name of TORCH_NCCL_DESYNC_DEBUG", deprecated="2.2",
           replaced_by="TORCH_NCCL_DESYNC_DEBUG", alias_of="TORCH_NCCL_DESYNC_DEBUG"),
    _torch("TORCH_NCCL_ENABLE_TIMING", "bool", "record start events for every collective", default="0"),
    _torch("NCCL_ENABLE_TIMING", "bool", "old name of TORCH_NCCL_ENABLE_TIMING", deprecated="2.2",
           replaced_by="TORCH_NCCL_ENABLE_TIMING", alias_of="TORCH_NCCL_ENABLE_TIMING"),
    _torch("TORCH_NCCL_ENABLE_MONITORING", "bool", "heartbeat monitor that kills a process whose watchdog is stuck",
           default="1"),
    _torch("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "int", "seconds without watchdog heartbeat before the kill",
           minimum=1, defaults=(("2.4", "480"), ("0", "600"))),
    _torch("TORCH_FR_BUFFER_SIZE", "int", "Flight Recorder entries (0 disables it)", minimum=0, default="2000"),
    _torch("TORCH_NCCL_TRACE_BUFFER_SIZE", "int", "old name of TORCH_FR_BUFFER_SIZE", minimum=0,
           deprecated="", replaced_by="TORCH_FR_BUFFER_SIZE", alias_of="TORCH_FR_BUFFER_SIZE"),
    _torch("TORCH_FR_CPP_STACK", "bool", "capture C++ stacks in Flight Recorder entries", default="0"),
    _torch("TORCH_NCCL_TRACE_CPP_STACK", "bool", "older name of TORCH_FR_CPP_STACK"),
    _torch("TORCH_NCCL_DUMP_ON_TIMEOUT", "bool", "dump the Flight Recorder on timeout or error",
           defaults=(("2.6", "1"), ("0", "0"))),
    _torch("TORCH_FR_DUMP_ON_TIMEOUT", "bool", "newer name of TORCH_NCCL_DUMP_ON_TIMEOUT"),
    _torch("TORCH_FR_DUMP_TEMP_FILE", "path", "prefix of Flight Recorder dump files"),
    _torch("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "path", "older name of TORCH_FR_DUMP_TEMP_FILE"),
    _torch("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "path", "FIFO that triggers an on-demand dump"),
    _torch("TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", "int", "extra wait for the dump before abort (ms)", minimum=0),
    _torch("TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC", "int", "newer name of TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC",
           minimum=0),
    _torch("TORCH_NCCL_COORD_CHECK_MILSEC", "int", "poll period of the cross-rank dump signal (ms)", minimum=1,
           default="1000"),
    _torch("TORCH_NCCL_HIGH_PRIORITY", "bool", "high-priority CUDA streams", default="0"),
    _torch("TORCH_NCCL_PROPAGATE_ERROR", "bool", "propagate errors to other ranks through the store"),
    _torch("TORCH_NCCL_RETHROW_CUDA_ERRORS", "bool", "rethrow CUDA errors from the watchdog", default="1"),
    _torch("TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN", "bool", "log C++ stacks on unclean shutdown",
           default="1"),
    _torch("TORCH_NCCL_NAN_CHECK", "bool", "check collective inputs for NaN", default="0"),
    _torch("TORCH_NCCL_AVOID_RECORD_STREAMS", "bool", "avoid recordStream on collective tensors"),
    _torch("TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK", "bool", "register allocator segments with NCCL"),
    _torch("TORCH_NCCL_ABORT_IN_DESTROY_PG", "bool", "abort communicators in destroy_process_group"),
    _torch("TORCH_NCCL_CUDA_EVENT_CACHE", "bool", "cache CUDA events"),
    _torch("TORCH_NCCL_USE_COMM_NONBLOCKING", "bool", "non-blocking NCCL communicators"),
    _torch("TORCH_DISTRIBUTED_DEBUG", "choice", "extra collective checks (DETAIL wraps every process group)",
           choices=("OFF", "INFO", "DETAIL"), case_sensitive=False, default="OFF",
           bad_value="any other value raises 'The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.'"),
    _torch("TORCH_CPP_LOG_LEVEL", "text", "c10 log level (INFO, WARNING, ERROR, FATAL)"),
    # -- Gloo -----------------------------------------------------------------------------------------
    Variable("GLOO_SOCKET_IFNAME", GLOO, "gloo-list", "gloo-text",
             "exact interface names for Gloo, one device each; every process must list the same number",
             bad_value="no ^ or = syntax; values of length <= 1 are ignored"),
    Variable("GLOO_DEVICE_TRANSPORT", GLOO, "choice", "gloo-text", "Gloo transport",
             choices=("TCP", "LINUX", "TCP_TLS", "UV", "APPLE", "WIN32"), default="LINUX (tcp) on Linux",
             bad_value="an unknown name makes process-group creation fail"),
    Variable("GLOO_DEVICE_TRANSPORT_TCP_TLS_PKEY", GLOO, "path", "gloo-text", "TLS private key file"),
    Variable("GLOO_DEVICE_TRANSPORT_TCP_TLS_CERT", GLOO, "path", "gloo-text", "TLS certificate file"),
    Variable("GLOO_DEVICE_TRANSPORT_TCP_TLS_CA_FILE", GLOO, "path", "gloo-text", "TLS CA file"),
    Variable("GLOO_DEVICE_TRANSPORT_TCP_TLS_CA_PATH", GLOO, "path", "gloo-text", "TLS CA directory"),
    # -- launcher (env:// rendezvous, torchrun) -------------------------------------------------------
    Variable("MASTER_ADDR", LAUNCHER, "text", "launcher-text", "address of the rank-0 host (the c10d store)"),
    Variable("MASTER_PORT", LAUNCHER, "int", "python-int", "port of the c10d store on MASTER_ADDR",
             minimum=1, maximum=65535),
    Variable("RANK", LAUNCHER, "int", "python-int", "global rank", minimum=0),
    Variable("WORLD_SIZE", LAUNCHER, "int", "python-int", "number of ranks", minimum=1),
    Variable("LOCAL_RANK", LAUNCHER, "int", "python-int", "rank within this node", minimum=0),
    Variable("LOCAL_WORLD_SIZE", LAUNCHER, "int", "python-int", "ranks on this node", minimum=1),
    Variable("GROUP_RANK", LAUNCHER, "int", "python-int", "node rank (torchrun)", minimum=0),
    Variable("GROUP_WORLD_SIZE", LAUNCHER, "int", "python-int", "number of nodes (torchrun)", minimum=1),
)

VARIABLES: Mapping[str, Variable] = {v.name: v for v in _TABLE}

# NCCL_* names that are not NCCL settings at all (set by containers and build systems): never "unknown".
NOT_NCCL_NAMES = frozenset({
    "NCCL_VERSION", "NCCL_HOME", "NCCL_ROOT", "NCCL_ROOT_DIR", "NCCL_INCLUDE_DIR", "NCCL_LIB_DIR",
    "NCCL_LIBRARY", "NCCL_PKG_VERSION",
})
# Real NCCL/PyTorch names that are read but not modelled in the table (undocumented or niche).
_KNOWN_UNMODELLED = frozenset({
    "NCCL_GRAPH_FILE", "NCCL_GRAPH_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE_RANK", "NCCL_TOPO_DUMP_FILE_RANK",
    "NCCL_NCHANNELS_PER_NET_PEER", "NCCL_NCHANNELS_PER_PEER", "NCCL_MIN_P2P_NCHANNELS", "NCCL_MAX_P2P_NCHANNELS",
    "NCCL_NVLS_NCHANNELS", "NCCL_P2P_READ_ENABLE", "NCCL_P2P_USE_CUDA_MEMCPY", "NCCL_SHM_USE_CUDA_MEMCPY",
    "NCCL_SHM_MEMCPY_MODE", "NCCL_SHM_LOCALITY", "NCCL_CREATE_THREAD_CONTEXT", "NCCL_PROGRESS_APPENDOP_FREQ",
    "NCCL_WORK_FIFO_DEPTH", "NCCL_WORK_FIFO_BYTES", "NCCL_PROXY_APPEND_BATCH_SIZE", "NCCL_PROXY_DUMP_SIGNAL",
    "NCCL_IB_USE_INLINE", "NCCL_GDR_FLUSH_DISABLE", "NCCL_NET_FORCE_FLUSH", "NCCL_NET_DISABLE_INTRA",
    "NCCL_NET_OVERHEAD", "NCCL_LL128_BUFFSIZE", "NCCL_LL_BUFFSIZE", "NCCL_LL128_NTHREADS", "NCCL_CHUNK_SIZE",
    "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE", "NCCL_NVB_PRECONNECT", "NCCL_IGNORE_DISABLED_P2P",
    "NCCL_CONNECT_ROUND_MAX_PEERS", "NCCL_REPORT_CONNECT_PROGRESS", "NCCL_SOCKET_INLINE",
    "NCCL_SOCKET_MIN_TASKSIZE", "NCCL_TUNER_CONFIG_FILE", "NCCL_NET_FORCE_MERGE", "NCCL_NVLSTREE_MAX_CHUNKSIZE",
    "NCCL_PROFILE_EVENT_MASK", "NCCL_IB_DATA_DIRECT", "NCCL_NET_PLUGIN_REF_COUNT", "NCCL_IB_WARN_RAIL_LOCAL",
    "NCCL_RINGS", "NCCL_TREES",
})


def lookup(name: str) -> Variable | None:
    """The table entry for ``name`` (exact, case-sensitive, as the drivers read it)."""
    return VARIABLES.get(name)


def is_known(name: str) -> bool:
    return name in VARIABLES or name in _KNOWN_UNMODELLED or name in NOT_NCCL_NAMES


def nearest_name(name: str, *, cutoff: float = 0.8) -> str | None:
    """The closest real variable name (difflib), e.g. NCCL_SOCKET_IFACE -> NCCL_SOCKET_IFNAME."""
    upper = name.upper()
    if upper != name and upper in VARIABLES:
        return upper
    candidates = [n for n in VARIABLES if not VARIABLES[n].removed and not VARIABLES[n].alias_of]
    found = difflib.get_close_matches(upper, candidates, n=1, cutoff=cutoff)
    return found[0] if found else None
