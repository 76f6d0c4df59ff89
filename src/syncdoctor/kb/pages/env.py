"""Finding pages of the environment-variable area (E codes). Pure: no I/O.

Groups: E1xx NCCL interface/HCA/net selection, E2xx IB/RoCE, E3xx sockets/buffers/channels/levels,
E40x value parsing, E41x unknown/deprecated/debugging-only names, E42x NCCL debug output, E43x env files
and NCCL config files, E5xx TORCH_NCCL_*/TORCH_*, E6xx Gloo, E7xx launcher. Each rule is registered at
import time and used as ``RULE.finding(...)`` by :mod:`syncdoctor.checks.env_rules`.
"""

from __future__ import annotations

from syncdoctor.kb.findings import Severity
from syncdoctor.kb.registry import Rule, register

__all__ = [
    "ASYNC_NO_TEARDOWN",
    "BLOCKING_WAIT",
    "BUFFSIZE_POW2",
    "CHANNEL_LIMITS",
    "DEBUGGING_ONLY",
    "DEBUG_FILE_COLLIDES",
    "DEBUG_LEVEL_UNKNOWN",
    "DEBUG_SUBSYS_UNKNOWN",
    "DEBUG_VERBOSE",
    "DEPRECATED",
    "DISTRIBUTED_DETAIL",
    "ENV_FILE_MALFORMED",
    "ENV_FILE_UNRESOLVED",
    "FLIGHT_RECORDER_OFF",
    "GID_INDEX_MISSING",
    "GID_INDEX_SET",
    "GLOO_MISSING",
    "GLOO_SEVERAL",
    "GLOO_SYNTAX",
    "GLOO_TLS",
    "GLOO_TRANSPORT",
    "GLOO_UNUSABLE",
    "HCA_NO_MATCH",
    "HCA_PORT_DOWN",
    "HCA_PORT_INVALID",
    "HEARTBEAT_TIMEOUT",
    "IB_DISABLED_CONFIGURED",
    "IB_RETRY_RANGE",
    "IB_TIMEOUT_EFFECTIVE",
    "IB_TIMEOUT_INFINITE",
    "IB_TIMEOUT_RANGE",
    "IFNAME_NO_MATCH",
    "IFNAME_UNUSABLE",
    "LEVEL_DISABLES",
    "LEVEL_IGNORED",
    "LEVEL_INTEGER",
    "LIST_SYNTAX",
    "MASTER_ADDR_LOOPBACK",
    "MASTER_ADDR_MALFORMED",
    "MASTER_ADDR_MISSING",
    "MASTER_PORT_INVALID",
    "MASTER_PORT_PRIVILEGED",
    "MONITORING_OFF",
    "NCCL_CONF_MISREAD",
    "NCCL_CONF_SHADOWED",
    "NCCL_CONF_UNREADABLE",
    "NCCL_TIMEOUT",
    "NOT_A_NUMBER",
    "NOT_DECIMAL",
    "NOT_RECOGNISED",
    "NTHREADS_INVALID",
    "OLD_NEW_DISAGREE",
    "OUT_OF_RANGE",
    "PREFIX_TOO_BROAD",
    "PSK_SHORT",
    "RANK_RANGE",
    "REMOVED",
    "SOCKET_THREADS",
    "TORCH_DEBUG_LEFT_ON",
    "UNKNOWN_VARIABLE",
]

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

ENV_RST = "NCCL docs, Environment Variables: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
ENV_RST_DEBUG = f"{ENV_RST} (section 'Debugging')"
PARAM_CC = "nccl src/misc/param.cc ncclLoadParam (strtoll(str, nullptr, 0), no range check) and setEnvFile"
NCCL_FACTS = "syncdoctor shared/reference/nccl-facts.md"
TORCH_FACTS = "syncdoctor shared/reference/pytorch-builtins.md"
TORCH_NCCL_DOC = "https://docs.pytorch.org/docs/stable/torch_nccl_environment_variables.html"
TORCH_DIST_DOC = "https://docs.pytorch.org/docs/stable/distributed.html"
NET_TSG = "NCCL docs, Troubleshooting / networking (tsg/networking_troubleshooting.rst)"


def _rule(code: str, name: str, severity: Severity, summary: str, what: str, why: str, example: str, fix: str,
          *references: str) -> Rule:
    return register(Rule(code=code, name=name, severity=severity, summary=summary, what=what, why=why,
                         example=example, fix=fix, references=tuple(references)))


# ---------------------------------------------------------------------------------------------- E1xx
IFNAME_NO_MATCH = _rule(
    "E101", "nccl-ifname-matches-nothing", ERROR,
    "NCCL_SOCKET_IFNAME selects no interface that exists on this host.",
    "Applies NCCL's matching (prefixes by default, exact names after '=', exclusion after '^') to the "
    "interfaces of this host and finds none selected, or an exclude list that leaves nothing.",
    "NCCL's bootstrap and socket transport use only the interfaces the list selects. With none, "
    "communicator initialisation fails ('Bootstrap : no socket interface found'), which PyTorch reports "
    "as an NCCL error at the first collective on this host while the other ranks wait for it.",
    "NCCL_SOCKET_IFNAME=eth9 on a host whose interfaces are lo, eth0 and ib0.",
    "Name an interface that exists and routes to the other nodes, exactly: export NCCL_SOCKET_IFNAME==eth0 "
    "(the '=' makes it an exact name). `ip -br addr` lists the interfaces.",
    ENV_RST, "nccl src/misc/socket.cc ncclFindInterfaces; src/misc/utils.cc matchIfList", NCCL_FACTS,
)
IFNAME_UNUSABLE = _rule(
    "E102", "nccl-ifname-matches-unusable", ERROR,
    "NCCL_SOCKET_IFNAME matches only interfaces NCCL cannot use (down, not running, without an address, or loopback on a multi-node job).",
    "The list selects interfaces, but every selected one is administratively down, not IFF_RUNNING, has "
    "no IPv4/IPv6 address, or is the loopback while the job spans several nodes.",
    "NCCL skips interfaces that are not running or have no address, so the list effectively selects "
    "nothing and initialisation fails. A loopback interface is usable on one node but cannot reach "
    "another, so the ranks of other nodes time out connecting to 127.0.0.1.",
    "NCCL_SOCKET_IFNAME=ib0 where ib0 is DOWN; NCCL_SOCKET_IFNAME=lo with WORLD_SIZE=16 and LOCAL_WORLD_SIZE=8.",
    "Bring the interface up (ip link set ib0 up; check cables/SM) or select one that is up and has an "
    "address: export NCCL_SOCKET_IFNAME==eth0.",
    ENV_RST, "nccl src/os/linux.cc ncclOsFindInterfaces (IFF_RUNNING and address checks)", NCCL_FACTS,
)
PREFIX_TOO_BROAD = _rule(
    "E103", "interface-prefix-matches-more", WARNING,
    "A prefix in NCCL_SOCKET_IFNAME / NCCL_IB_HCA / NCCL_OOB_NET_IFNAME matches more than the one name it spells.",
    "Without a leading '=', every entry is a prefix: 'mlx5_1' also selects mlx5_10..mlx5_19 and 'eth' "
    "selects eth0 and eth1. Reported when this host has more than one matching name.",
    "Extra HCAs or interfaces join the job: traffic crosses rails or slow NICs, and the bootstrap "
    "interface (the first match) can differ between hosts whose interfaces enumerate in a different order.",
    "NCCL_IB_HCA=mlx5_1 on a host with mlx5_1 and mlx5_10; NCCL_SOCKET_IFNAME=eth with eth0 and eth1.",
    "Use exact names: export NCCL_IB_HCA==mlx5_1 or export NCCL_SOCKET_IFNAME==eth0 (the docs recommend "
    "the '=' prefix for NCCL_IB_HCA).",
    f"{ENV_RST} (NCCL_IB_HCA: 'using mlx5_1 without a preceding = will select mlx5_1 as well as mlx5_10 to mlx5_19')",
    NCCL_FACTS,
)
LIST_SYNTAX = _rule(
    "E104", "nccl-list-syntax", ERROR,
    "An NCCL interface/HCA list is written in a way NCCL reads differently (order of ^ and =, blanks, quotes, a value NCCL ignores).",
    "Checks the syntax of NCCL_SOCKET_IFNAME, NCCL_IB_HCA and NCCL_OOB_NET_IFNAME: the prefixes must be "
    "'^' then '=' ('^=docker0'), '^' applies to the whole list only, blanks and quotes are part of the "
    "names, a value of one character is ignored, and NCCL_SOCKET_IFNAME has no ports.",
    "NCCL does not trim or unquote: '=^docker0' looks for an interface literally named '^docker0', "
    "'eth0, eth1' looks for ' eth1', and '\"eth0\"' looks for a name with quotes. The selection silently "
    "becomes something else than intended, often nothing at all.",
    "NCCL_SOCKET_IFNAME='=^docker0'; NCCL_SOCKET_IFNAME='eth0, eth1'; NCCL_IB_HCA='mlx5_0,^mlx5_1'.",
    "Write the list without blanks or quotes, prefixes first: export NCCL_SOCKET_IFNAME='^=docker0' or "
    "export NCCL_SOCKET_IFNAME==eth0,eth1.",
    ENV_RST, "nccl src/misc/utils.cc parseStringList", NCCL_FACTS,
)
HCA_NO_MATCH = _rule(
    "E105", "ib-hca-matches-nothing", ERROR,
    "NCCL_IB_HCA selects no RDMA device (or port) present on this host.",
    "Matches the NCCL_IB_HCA list against the devices under /sys/class/infiniband and finds none selected.",
    "With no IB device, NCCL falls back to TCP sockets (a large, silent slowdown), or fails when NCCL_NET=IB "
    "forces the IB network ('Failed to initialize any NET plugin').",
    "NCCL_IB_HCA=mlx5_8 on a host with mlx5_0..mlx5_3.",
    "Name devices that exist (ibv_devices or ls /sys/class/infiniband): export NCCL_IB_HCA==mlx5_0,mlx5_1.",
    ENV_RST, "nccl src/transport/net_ib/init.cc (device filtering)", NCCL_FACTS,
)
HCA_PORT_INVALID = _rule(
    "E106", "ib-hca-port-invalid", ERROR,
    "An NCCL_IB_HCA entry names a port that is not a positive number or does not exist on that device.",
    "Entries are hca[:port[:rail[:plane]]]. The port is read with atoi, so 'mlx5_0:x' or 'mlx5_0:0' "
    "means port 0, which no device has (ports are numbered from 1). The rail/plane fields exist since "
    "NCCL 2.30.7; older versions read only hca:port, so 'mlx5_0::0:0' there means port 0.",
    "The entry matches no port: that HCA is dropped, and if it was the only one NCCL falls back to sockets.",
    "NCCL_IB_HCA=mlx5_0:0 or NCCL_IB_HCA=mlx5_0:2 on a single-port card.",
    "Use the port number shown by ibstat / /sys/class/infiniband/<dev>/ports, or omit it to use all ports: "
    "export NCCL_IB_HCA==mlx5_0:1.",
    f"{ENV_RST} (NCCL_IB_HCA)", "nccl src/misc/utils.cc parseStringList (atoi of the port)", NCCL_FACTS,
)
HCA_PORT_DOWN = _rule(
    "E107", "ib-hca-port-not-active", ERROR,
    "Ports selected by NCCL_IB_HCA are not ACTIVE.",
    "Reads the state of each selected port (/sys/class/infiniband/<dev>/ports/<p>/state). NCCL uses only "
    "ports whose state is 4: ACTIVE.",
    "Non-active ports are skipped. If none is active NCCL falls back to sockets or fails; if some are, "
    "the job runs on fewer rails than expected and ranks on different hosts may pick different NICs.",
    "NCCL_IB_HCA==mlx5_0 where mlx5_0 port 1 reads '1: DOWN' (no cable, no subnet manager).",
    "Fix the link (cable, switch port, subnet manager: sminfo; ibstat shows State: Active) or select only "
    "active ports: export NCCL_IB_HCA==mlx5_1:1.",
    "nccl src/transport/net_ib/init.cc (IBV_PORT_ACTIVE check)", "linux Documentation/ABI/stable/sysfs-class-infiniband",
    NCCL_FACTS,
)
PSK_SHORT = _rule(
    "E108", "nccl-psk-too-short", ERROR,
    "NCCL_PSK is set but shorter than 32 characters; NCCL rejects it.",
    "Checks the length of NCCL_PSK without showing it: non-empty keys shorter than 32 characters are rejected.",
    "NCCL refuses to initialise rather than fall back to plaintext, so every rank fails at init.",
    "NCCL_PSK=secret",
    "Use a key of at least 32 characters, e.g. export NCCL_PSK=\"$(openssl rand -base64 32)\", the same on "
    "every process; or unset NCCL_PSK to run without TLS.",
    f"{ENV_RST} (NCCL_PSK)",
)
IB_DISABLED_CONFIGURED = _rule(
    "E109", "ib-disabled-but-configured", WARNING,
    "NCCL_IB_DISABLE=1 is set together with IB settings that it makes useless (or with NCCL_NET=IB, which then fails).",
    "NCCL_IB_DISABLE reads non-zero while NCCL_IB_HCA, NCCL_IB_TIMEOUT, NCCL_IB_GID_INDEX or other NCCL_IB_* "
    "settings are present, or while NCCL_NET forces the IB network.",
    "With IB disabled NCCL uses TCP sockets, so the IB settings are ignored and the job runs at socket "
    "speed. NCCL_NET=IB with IB disabled leaves no network: 'Failed to initialize any NET plugin'.",
    "NCCL_IB_DISABLE=1 NCCL_IB_HCA==mlx5_0 NCCL_IB_TIMEOUT=22",
    "Decide which transport you want: unset NCCL_IB_DISABLE to use RDMA, or remove the NCCL_IB_* "
    "settings (and NCCL_NET=IB) when sockets are intended.",
    ENV_RST, NCCL_FACTS,
)

# ---------------------------------------------------------------------------------------------- E2xx
IB_TIMEOUT_RANGE = _rule(
    "E201", "ib-timeout-out-of-range", ERROR,
    "NCCL_IB_TIMEOUT is outside 0-31.",
    "NCCL_IB_TIMEOUT is an exponent: the Local Ack Timeout is 4.096 us x 2^value (IB spec vol. 1, "
    "12.7.34). NCCL passes it unchecked into ibv_qp_attr.timeout. Values above 31 (the forum advice "
    "'60' or '90') and negative values are reported.",
    "Upstream mlx5 writes the value into a 5-bit field, so 60 becomes 28 (about 18 minutes per try, "
    "two hours with 7 retries) and 90 becomes 26 (4.6 minutes per try); the NCCL docs say values >= 32 "
    "mean an infinite timeout. Either way a dead link is detected hours late or never: the job hangs "
    "instead of failing, and PyTorch's watchdog fires first with a misleading timeout.",
    "NCCL_IB_TIMEOUT=60 (per try: 18.3 min on mlx5, infinite per the docs).",
    "Pick a value in range from the table: 20 = 4.3 s per try (~30 s with NCCL_IB_RETRY_CNT=7, the "
    "default since 2.23), 21 = 8.6 s (~1 min), 22 = 17.2 s (~2 min), 23 = 34.4 s (~4 min). "
    "export NCCL_IB_TIMEOUT=22",
    f"{ENV_RST} (NCCL_IB_TIMEOUT: 'Values can be 0-31')", "nccl src/transport/net_ib/connect.cc",
    "linux drivers/infiniband/hw/mlx5/qp.c mlx5_set_path; include/linux/mlx5/mlx5_ifc.h ack_timeout[0x5]",
    "github.com/open-thoughts/OpenThoughts-Agent/pull/77 (60 replaced by 23)", NCCL_FACTS,
)
IB_TIMEOUT_INFINITE = _rule(
    "E202", "ib-timeout-infinite", WARNING,
    "NCCL_IB_TIMEOUT=0 means an infinite IB timeout.",
    "Reports NCCL_IB_TIMEOUT values that NCCL reads as 0 (including '00' or text that strtoll reads as 0).",
    "With an infinite Local Ack Timeout a lost peer or a broken link never produces an IB error: the "
    "collective waits until PyTorch's watchdog (10 min by default) kills the job, with no hint that the "
    "network was the cause.",
    "NCCL_IB_TIMEOUT=0",
    "Use a finite value, e.g. export NCCL_IB_TIMEOUT=22 (17.2 s per try, ~2 min with 7 retries), or unset it "
    "to get the default (20 since NCCL 2.23).",
    f"{ENV_RST} (NCCL_IB_TIMEOUT table: 0 = Infinity)", NCCL_FACTS,
)
IB_TIMEOUT_EFFECTIVE = _rule(
    "E203", "ib-timeout-effective", INFO,
    "What the IB timeout settings add up to: time per try and total before an IB error.",
    "Computes 4.096 us x 2^NCCL_IB_TIMEOUT per try and multiplies by NCCL_IB_RETRY_CNT (defaults by NCCL "
    "version). Raised to a warning when the total is under one second or when retries are 0.",
    "The IB layer reports a dead peer or link only after timeout x retries. Too short and a congested "
    "fabric produces spurious 'Got completion with error 12' failures; too long and a real failure "
    "surfaces only through the PyTorch watchdog.",
    "NCCL_IB_TIMEOUT=22 gives 17.2 s per try, ~2.0 min total with retry count 7.",
    "Nothing to fix when the total matches what you want. To change it: export NCCL_IB_TIMEOUT=22 (~2 min) "
    "and keep NCCL_IB_RETRY_CNT=7.",
    f"{ENV_RST} (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT)", NCCL_FACTS,
)
IB_RETRY_RANGE = _rule(
    "E204", "ib-retry-count-out-of-range", ERROR,
    "NCCL_IB_RETRY_CNT is outside 0-7 (a 3-bit field).",
    "NCCL passes NCCL_IB_RETRY_CNT unchecked into ibv_qp_attr.retry_cnt, a 3-bit field (IB spec "
    "vol. 1, 12.7.38). Values above 7 (the forum advice '16' or '32') and negative values are reported.",
    "mlx5 keeps the low 3 bits, so 16 and 32 become 0: zero retries, the opposite of the intent, and "
    "the first lost acknowledgement kills the job. rdmavt/qib/hfi1 and irdma reject the value instead: "
    "'Call to ibv_modify_qp failed with 22 Invalid argument' at connection time.",
    "NCCL_IB_RETRY_CNT=32 (mlx5: 0 retries; other drivers: EINVAL).",
    "Use the maximum valid value, which is also the default: export NCCL_IB_RETRY_CNT=7 (or unset it). "
    "To wait longer, raise NCCL_IB_TIMEOUT within 0-31 instead.",
    f"{ENV_RST} (NCCL_IB_RETRY_CNT: 'Valid values are 0-7')", "linux include/linux/mlx5/mlx5_ifc.h retry_count[0x3]",
    "linux drivers/infiniband/sw/rdmavt/qp.c", "github.com/charmplusplus/charm/pull/2712", NCCL_FACTS,
)
GID_INDEX_SET = _rule(
    "E205", "ib-gid-index-set", WARNING,
    "NCCL_IB_GID_INDEX is forced although NCCL >= 2.21 selects the RoCE v2 GID itself.",
    "Reports NCCL_IB_GID_INDEX set to anything but -1 when the NCCL version is 2.21 or later (or unknown). "
    "Since 2.23 it is ignored on InfiniBand link layers altogether.",
    "Since 2.21 NCCL picks the RoCE v2 IPv4 GID automatically (default -1). A forced index is right only "
    "if every host has the same GID table layout; where it points at a link-local or empty entry the "
    "connection fails with 'Call to ibv_modify_qp failed with 22 Invalid argument' or packets are not "
    "routed. The '3' in old recipes is just a common mlx5 layout.",
    "NCCL_IB_GID_INDEX=3 with NCCL 2.21.5.",
    "unset NCCL_IB_GID_INDEX (or export NCCL_IB_GID_INDEX=-1); to steer the automatic choice use "
    "NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE or NCCL_IB_ROCE_VERSION_NUM.",
    f"{NET_TSG}: 'With NCCL 2.21 and later releases, this environment variable should not be set'",
    f"{ENV_RST} (NCCL_IB_GID_INDEX)", "nccl src/transport/net_ib/connect.cc ncclIbGetGidIndex", NCCL_FACTS,
)
GID_INDEX_MISSING = _rule(
    "E206", "ib-gid-index-not-in-table", ERROR,
    "NCCL_IB_GID_INDEX points at a GID entry that is empty on a selected RoCE port.",
    "Looks the forced index up in the GID table of each selected RoCE port (/sys/class/infiniband/<dev>/"
    "ports/<p>/gids/<N>).",
    "An empty or missing GID entry cannot be used to address the peer: queue-pair setup fails with "
    "'Call to ibv_modify_qp failed with 22 Invalid argument, ... local GID index N' and NCCL prints a "
    "HINT to set NCCL_IB_GID_INDEX=-1.",
    "NCCL_IB_GID_INDEX=3 on a port whose GID table has entries 0 and 1 only.",
    "unset NCCL_IB_GID_INDEX (NCCL >= 2.21 chooses the RoCE v2 GID), or set the index show_gids reports "
    "for the 'RoCE v2' IPv4 entry on every host.",
    f"{NET_TSG}", "nccl src/misc/ibvwrap.cc printIbModifyQpHint", "Mellanox mlnx-tools show_gids", NCCL_FACTS,
)

# ---------------------------------------------------------------------------------------------- E3xx
SOCKET_THREADS = _rule(
    "E301", "socket-threads-too-many", ERROR,
    "NCCL_SOCKET_NTHREADS above 16, or NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD above 64.",
    "Checks the socket transport limits: at most 16 helper threads, at most 64 sockets per connection.",
    "NCCL does not use the values given: above 16 threads it warns and uses 16; above 64 sockets it warns "
    "'the total number of sockets is greater than the maximum allowed' and lowers NSOCKS_PERTHREAD to "
    "64/NTHREADS. The tuning you measured is not the one running.",
    "NCCL_SOCKET_NTHREADS=16 NCCL_NSOCKS_PERTHREAD=8 (128 sockets).",
    "Keep the product at or below 64; the docs suggest 4 x 4 for 100G: export NCCL_SOCKET_NTHREADS=4 "
    "NCCL_NSOCKS_PERTHREAD=4.",
    f"{ENV_RST} (NCCL_SOCKET_NTHREADS: 'the product ... cannot exceed 64')",
    "nccl src/transport/net_socket.cc MAX_SOCKETS 64, MAX_THREADS 16", NCCL_FACTS,
)
BUFFSIZE_POW2 = _rule(
    "E302", "buffsize-not-power-of-two", WARNING,
    "NCCL_BUFFSIZE is not a power of two.",
    "Reports NCCL_BUFFSIZE values (bytes) that are not a power of two. The default is 4194304 (4 MiB).",
    "The docs recommend powers of two: NCCL divides the buffer into steps and slots, and other sizes are "
    "configurations nobody tests. NCCL_BUFFSIZE is also a debugging-only variable, which env.rst says "
    "may cause sub-optimal behaviour, crashes or hangs when kept set.",
    "NCCL_BUFFSIZE=5000000",
    "unset NCCL_BUFFSIZE, or use a power of two such as export NCCL_BUFFSIZE=8388608.",
    f"{ENV_RST} (NCCL_BUFFSIZE: 'The recommendation is to use powers of 2')",
)
CHANNEL_LIMITS = _rule(
    "E303", "channel-limits-conflict", WARNING,
    "Channel/CTA limits that NCCL clamps or that contradict each other.",
    "Checks NCCL_MIN/MAX_NCHANNELS (and their NRINGS aliases) and NCCL_MIN/MAX_CTAS: above 64 (32 before "
    "2.25 for CTAs), MAX below 1, or an effective minimum above the effective maximum.",
    "NCCL clamps out-of-range limits and, when both old and new names are set, keeps the most restrictive "
    "value, so the number of channels (and the GPU resources and bandwidth that go with it) is not what "
    "the variables say.",
    "NCCL_MIN_CTAS=32 NCCL_MAX_CTAS=16",
    "Set one consistent pair with the new names: export NCCL_MIN_CTAS=16 NCCL_MAX_CTAS=16, and unset "
    "NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS.",
    f"{ENV_RST} (NCCL_MAX_CTAS, NCCL_MIN_CTAS, NCCL_MAX_NCHANNELS)", "nccl src/graph/connect.cc", NCCL_FACTS,
)
NTHREADS_INVALID = _rule(
    "E304", "nthreads-invalid", ERROR,
    "NCCL_NTHREADS is not one of 64, 128, 256, 512.",
    "Reports NCCL_NTHREADS values outside the documented set.",
    "NCCL replaces an invalid thread count with its own choice and says so only at INFO level, so the "
    "kernels do not run with the configuration you think you set.",
    "NCCL_NTHREADS=1024",
    "unset NCCL_NTHREADS (it is a debugging-only variable), or use export NCCL_NTHREADS=512.",
    f"{ENV_RST} (NCCL_NTHREADS: 'The values allowed are 64, 128, 256 and 512')",
)
LEVEL_DISABLES = _rule(
    "E305", "level-disables-transport", ERROR,
    "NCCL_P2P_LEVEL or NCCL_NET_GDR_LEVEL resolves to LOC: P2P or GPU Direct RDMA is disabled entirely.",
    "Reads the level the way ncclGetLevel does. The legacy integer 0 (and anything strtol reads as 0, "
    "like '08') means LOC, 'never'. Reported as an error for the integer form, a warning for an explicit 'LOC'.",
    "NCCL_P2P_LEVEL=0 is often set believing it means 'default' or 'lowest restriction'; it is the same "
    "as NCCL_P2P_DISABLE=1: intra-node traffic goes through host memory or the network, several times "
    "slower. NCCL_NET_GDR_LEVEL=0 turns GPU Direct RDMA off, staging every network transfer in host memory.",
    "NCCL_P2P_LEVEL=0 (= LOC: P2P never used).",
    "unset NCCL_P2P_LEVEL to let NCCL choose; to restrict P2P to NVLink use export NCCL_P2P_LEVEL=NVL; to "
    "really disable P2P say so explicitly with export NCCL_P2P_DISABLE=1.",
    f"{ENV_RST} (NCCL_P2P_LEVEL: 'LOC : Never use P2P'; legacy integers 'LOC : 0')",
    "nccl src/graph/paths.cc ncclGetLevel", NCCL_FACTS,
)
LEVEL_IGNORED = _rule(
    "E306", "level-value-ignored", ERROR,
    "NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL has a value NCCL silently ignores.",
    "Level names are compared case-sensitively with LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS; a value that "
    "starts with a digit is a legacy integer; anything else ('nvl', 'NVLINK', ' SYS', '-1') is ignored "
    "without a log line.",
    "NCCL keeps its automatic choice, so the restriction or permission you set does not apply, and "
    "nothing in the logs says so.",
    "NCCL_P2P_LEVEL=nvl",
    "Use an upper-case level name: export NCCL_P2P_LEVEL=NVL.",
    f"{ENV_RST} (NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL)", "nccl src/graph/paths.cc ncclGetLevel (strcmp)", NCCL_FACTS,
)
LEVEL_INTEGER = _rule(
    "E307", "level-legacy-integer", WARNING,
    "NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL uses a legacy integer.",
    "Reports integer levels and the name they map to (0=LOC, 1=PIX, 2=PXB, 3=PHB, 4 and above=SYS; NVL has "
    "no integer).",
    "The docs discourage integers 'due to breaking changes in path types': the mapping changed over "
    "versions, so the same number can mean different distances on different NCCL builds.",
    "NCCL_P2P_LEVEL=2 (read as PXB).",
    "Use the name: export NCCL_P2P_LEVEL=PXB.",
    f"{ENV_RST} (NCCL_P2P_LEVEL, 'Integer Values (Legacy)')", "nccl src/graph/paths.cc levelsOldToNew",
)

# ---------------------------------------------------------------------------------------------- E40x
NOT_A_NUMBER = _rule(
    "E401", "value-not-a-number", ERROR,
    "A numeric or boolean variable holds text its reader does not parse as intended.",
    "Parses the value the way its consumer does: NCCL with strtoll(value, NULL, 0) (stops at the first "
    "bad character, 'yes' is 0, '1.5' is 1, empty means the default), PyTorch with std::stoi or its "
    "y/yes/1/t/true | n/no/0/f/false boolean reader (anything else is an error), the launcher with int().",
    "NCCL never rejects a value: NCCL_IB_DISABLE=true reads as 0 and leaves IB enabled, NCCL_BUFFSIZE=4M "
    "reads as 4 bytes. PyTorch and torch.distributed instead fail at process-group creation with "
    "'Invalid value for environment variable' or ValueError.",
    "NCCL_IB_DISABLE=yes (NCCL reads 0: IB stays enabled); TORCH_NCCL_BLOCKING_WAIT=on (PyTorch raises).",
    "Write a plain decimal integer: export NCCL_IB_DISABLE=1.",
    PARAM_CC, "pytorch torch/csrc/distributed/c10d/Utils.hpp getCvarInt/getCvarBool", NCCL_FACTS,
)
OUT_OF_RANGE = _rule(
    "E402", "value-out-of-range", ERROR,
    "A variable's value is outside its documented range.",
    "Compares the value as its reader parses it with the documented range of the variable (for example "
    "NCCL_IB_SL 0-15, NCCL_IB_TC 0-255, NCCL_CROSS_NIC 0-2, NCCL_IB_QPS_PER_CONNECTION 1-128, "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING 0-3) and says what the reader does with it.",
    "NCCL does not range-check its parameters: out-of-range values are passed to verbs or used in "
    "arithmetic as they are, which gives masked bit fields, clamps or modes that do not exist.",
    "NCCL_IB_SL=16 (a 4-bit field).",
    "Use a value inside the range shown in the finding, or unset the variable to get the default.",
    ENV_RST, PARAM_CC, NCCL_FACTS,
)
NOT_DECIMAL = _rule(
    "E403", "integer-not-decimal", ERROR,
    "An NCCL integer written with a leading zero is read as octal (or, for 0x, as hexadecimal).",
    "NCCL parses integers with base auto-detection: '010' is 8, '08' and '09' stop at the 8/9 and read as "
    "0, '0x14' is 20. Reported as an error when the value NCCL uses differs from the decimal reading, "
    "and as information for hexadecimal.",
    "Zero-padded values from templates or scripts change meaning: NCCL_IB_TIMEOUT=022 is 18, not 22, and "
    "NCCL_IB_TIMEOUT=08 is 0 (infinite).",
    "NCCL_IB_TIMEOUT=010 (NCCL uses 8: 1 ms per try).",
    "Write decimal without leading zeros: export NCCL_IB_TIMEOUT=10.",
    PARAM_CC, "C standard strtoll with base 0",
)
NOT_RECOGNISED = _rule(
    "E404", "value-not-recognised", ERROR,
    "A variable that takes one of a fixed set of values holds something else.",
    "Compares the value with the variable's allowed values (case-sensitively where the reader does), e.g. "
    "NCCL_SOCKET_FAMILY AF_INET/AF_INET6, TORCH_DISTRIBUTED_DEBUG OFF/INFO/DETAIL, NCCL_CHECK_MODE.",
    "Unrecognised values are ignored (NCCL keeps its default) or make start-up fail (PyTorch), so the "
    "setting does not do what it says.",
    "NCCL_SOCKET_FAMILY=IPv4 (ignored: both families stay in use).",
    "Use one of the values listed in the finding, e.g. export NCCL_SOCKET_FAMILY=AF_INET.",
    ENV_RST, TORCH_DIST_DOC,
)

# ---------------------------------------------------------------------------------------------- E41x
UNKNOWN_VARIABLE = _rule(
    "E411", "unknown-variable", ERROR,
    "An NCCL_*/TORCH_NCCL_*/GLOO_* variable that no NCCL or PyTorch release reads; usually a typo of a real one.",
    "Compares every NCCL_*, TORCH_NCCL_*, TORCH_FR_* and GLOO_* name with the table of known variables and "
    "suggests the nearest real name. An error when a near name exists (a typo), a warning otherwise (it "
    "may belong to a newer release or a plugin).",
    "A misspelt variable is silently ignored: NCCL_SOCKET_IFACE=eth0 leaves NCCL choosing the interface "
    "itself, which is exactly the cross-node hang the setting was meant to prevent.",
    "NCCL_SOCKET_IFACE=eth0 (nearest: NCCL_SOCKET_IFNAME).",
    "Rename it to the real variable: export NCCL_SOCKET_IFNAME==eth0 and unset NCCL_SOCKET_IFACE.",
    ENV_RST, TORCH_NCCL_DOC,
)
NCCL_TIMEOUT = _rule(
    "E412", "nccl-timeout-not-a-variable", ERROR,
    "NCCL_TIMEOUT (and its variants) is not read by NCCL or PyTorch; the collective timeout is init_process_group(timeout=...).",
    "Reports NCCL_TIMEOUT and look-alikes (TORCH_NCCL_TIMEOUT, NCCL_TIMEOUT_MS...). NCCL_TIMEOUT is read by "
    "no NCCL release from 2.4 to 2.30 (checked over every release tag) and by no PyTorch release; the "
    "look-alikes are not NCCL or PyTorch variables either.",
    "The value has no effect: the job keeps PyTorch's default collective timeout (10 minutes for NCCL, 30 "
    "for other backends), so a hang is killed earlier or later than the script author believed, and the "
    "real knob stays untouched.",
    "NCCL_TIMEOUT=1800 (meant: 30 minutes).",
    "Pass the timeout in the code: dist.init_process_group(backend=\"nccl\", timeout=datetime.timedelta(seconds=1800)), "
    "then unset NCCL_TIMEOUT. For the IB transport timeout see NCCL_IB_TIMEOUT.",
    f"{NCCL_FACTS} ('NCCL_TIMEOUT does not exist in NCCL', checked with git grep over all release tags)",
    f"{TORCH_DIST_DOC} (init_process_group timeout: 'Default value is 10 minutes for NCCL and 30 minutes for other backends')",
)
DEPRECATED = _rule(
    "E413", "deprecated-variable", WARNING,
    "A deprecated variable name is set; it still works but has a replacement.",
    "Reports names that are deprecated aliases: NCCL_ASYNC_ERROR_HANDLING, NCCL_BLOCKING_WAIT, "
    "NCCL_DESYNC_DEBUG, NCCL_ENABLE_TIMING (PyTorch, since 2.2: TORCH_NCCL_*), TORCH_NCCL_TRACE_BUFFER_SIZE "
    "(TORCH_FR_BUFFER_SIZE), NCCL_MIN/MAX_NCHANNELS and NRINGS (NCCL 2.17: NCCL_MIN/MAX_CTAS), "
    "NCCL_CHECK_POINTERS (NCCL_CHECK_MODE).",
    "Deprecated names are removed sooner or later; until then PyTorch prints 'Environment variable ... is "
    "deprecated' on every rank, and when both names are set only one of them counts.",
    "NCCL_ASYNC_ERROR_HANDLING=1",
    "Use the new name: export TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and unset NCCL_ASYNC_ERROR_HANDLING.",
    TORCH_NCCL_DOC, f"{ENV_RST} (NCCL_MAX_NCHANNELS: 'deprecated in 2.17')", TORCH_FACTS,
)
OLD_NEW_DISAGREE = _rule(
    "E414", "old-and-new-names-disagree", ERROR,
    "A deprecated name and its replacement are both set, with different values.",
    "Compares the effective values of old/new pairs and says which one wins: for PyTorch the new TORCH_* "
    "name; for NCCL channel limits the most restrictive of the two.",
    "Only one value counts; whoever reads the other one in a script or runbook believes something false.",
    "NCCL_ASYNC_ERROR_HANDLING=0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (1 wins).",
    "Keep only the new name with the value you want: unset NCCL_ASYNC_ERROR_HANDLING.",
    "pytorch torch/csrc/distributed/c10d/Utils.hpp getCvarInt (earlier names in the list win)",
    f"{ENV_RST} (NCCL_MAX_CTAS: 'If both are set then the most restrictive value ... is used')",
)
DEBUGGING_ONLY = _rule(
    "E415", "debugging-variable-set", WARNING,
    "A variable from NCCL's 'Debugging' list is set; the docs say not to keep it in production.",
    "Reports variables env.rst lists under Debugging: NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, NCCL_SHM_DISABLE, "
    "NCCL_BUFFSIZE, NCCL_NTHREADS, NCCL_MIN/MAX_NCHANNELS, NCCL_IB_DISABLE, NCCL_NET_GDR_LEVEL, NCCL_ALGO, "
    "NCCL_PROTO and similar.",
    "env.rst: these 'should not be used in production nor retained in scripts, or only as workaround, and "
    "removed as soon as the issue is resolved. Keeping them set may result in sub-optimal behavior, "
    "crashes, or hangs.' Forcing them also stops newer NCCL versions from choosing better settings.",
    "NCCL_P2P_DISABLE=1 left in a job script after a one-off debugging session.",
    "unset the variable (e.g. unset NCCL_P2P_DISABLE); if it works around a known problem, keep it with "
    "a comment naming the problem and re-test after each driver/NCCL upgrade.",
    ENV_RST_DEBUG,
)
REMOVED = _rule(
    "E416", "removed-variable", ERROR,
    "A variable that current NCCL no longer reads is set.",
    "Reports names removed or renamed in NCCL: NCCL_IB_GDR_LEVEL (renamed NCCL_NET_GDR_LEVEL in 2.4.0), "
    "NCCL_IB_CUDA_SUPPORT (removed in 2.4.0), NCCL_SINGLE_RING_THRESHOLD (2.3), NCCL_LL_THRESHOLD and "
    "NCCL_TREE_THRESHOLD (2.5).",
    "The setting is silently ignored, so whatever it was meant to force (no GPU Direct RDMA, a protocol "
    "threshold) does not happen.",
    "NCCL_IB_GDR_LEVEL=0",
    "Use the replacement named in the finding (export NCCL_NET_GDR_LEVEL=LOC) or unset the variable.",
    f"{ENV_RST} (NCCL_NET_GDR_LEVEL 'formerly NCCL_IB_GDR_LEVEL'; NCCL_IB_CUDA_SUPPORT 'removed in 2.4.0')",
)

# ---------------------------------------------------------------------------------------------- E42x
DEBUG_LEVEL_UNKNOWN = _rule(
    "E421", "nccl-debug-level-unknown", WARNING,
    "NCCL_DEBUG has a value NCCL does not know, which turns NCCL logging off.",
    "NCCL_DEBUG is compared case-insensitively with VERSION, WARN, INFO, ABORT, TRACE (and ATTN since "
    "2.32); anything else, including an empty value, leaves logging off.",
    "You believe NCCL logs warnings or INFO lines, but it prints nothing: the 'NET/IB : Got completion "
    "with error' or 'Bootstrap : Using' lines needed to diagnose a hang are missing.",
    "NCCL_DEBUG=DEBUG; NCCL_DEBUG=ATTN with NCCL 2.21.",
    "export NCCL_DEBUG=WARN (for production) or export NCCL_DEBUG=INFO while debugging.",
    f"{ENV_RST} (NCCL_DEBUG, NCCL_DEBUG_LEVELS)", "nccl src/debug.cc ncclDebugInit",
)
DEBUG_SUBSYS_UNKNOWN = _rule(
    "E422", "nccl-debug-subsys-unknown", WARNING,
    "NCCL_DEBUG_SUBSYS names a subsystem NCCL does not know.",
    "Checks each name against INIT COLL P2P SHM NET GRAPH TUNING ENV ALLOC ALLOC_HOST CALL PROXY NVLS "
    "BOOTSTRAP REG PROFILE RAS DESTROY ALL (a leading ^ inverts the list).",
    "Unknown names are ignored: the lines you asked for are not logged. Note that since 2.23 the "
    "'Bootstrap : Using' line is logged under BOOTSTRAP, not INIT.",
    "NCCL_DEBUG_SUBSYS=INIT,NETWORK",
    "export NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET",
    f"{ENV_RST} (NCCL_DEBUG_SUBSYS)", "nccl src/debug.cc",
)
DEBUG_VERBOSE = _rule(
    "E423", "nccl-debug-verbose", WARNING,
    "NCCL_DEBUG=INFO or TRACE is left on.",
    "Reports NCCL_DEBUG set to INFO or TRACE.",
    "INFO prints dozens of lines per rank at init and per communicator; with the ALL/COLL/CALL subsystems "
    "or TRACE it logs every call, which slows small collectives and floods shared file systems. Useful "
    "while debugging, not as a permanent setting.",
    "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL in a production launcher.",
    "export NCCL_DEBUG=WARN (keeps errors and warnings).",
    f"{ENV_RST} (NCCL_DEBUG)",
)
DEBUG_FILE_COLLIDES = _rule(
    "E424", "nccl-debug-file-collides", WARNING,
    "NCCL_DEBUG_FILE does not make file names unique per process, or cannot work as written.",
    "Reports NCCL_DEBUG_FILE without %h (hostname) and %p (pid) when several ranks run, a '~' (not "
    "expanded), or a debug file that is unused because NCCL_DEBUG is unset or VERSION.",
    "Every process opens the same file with 'w' (truncating it): ranks overwrite each other and the log "
    "of the rank that failed is lost or interleaved. The docs: 'If the filename is not unique across all "
    "the job processes, then the output may be lost or corrupted.'",
    "NCCL_DEBUG_FILE=/shared/nccl.log with 16 ranks.",
    "export NCCL_DEBUG_FILE=/shared/nccl.%h.%p.log",
    f"{ENV_RST} (NCCL_DEBUG_FILE)", "nccl src/debug.cc (fopen with \"w\")",
)

# ---------------------------------------------------------------------------------------------- E43x
ENV_FILE_MALFORMED = _rule(
    "E431", "env-file-line-malformed", WARNING,
    "A line of the --env-file looks like an assignment but is not one a shell would run.",
    "Parses the file like a shell: 'export K=V', 'K=V', comments, single/double quotes, continuation "
    "lines. Reports unterminated quotes, blanks around '=', invalid names and similar.",
    "The shell either fails on the line or runs it as a command, so the variable is not set and the job "
    "starts with a different environment than the file suggests.",
    "NCCL_DEBUG = INFO (the shell runs a command named NCCL_DEBUG).",
    "Write assignments without blanks around '=' and close every quote: export NCCL_DEBUG=INFO",
    "POSIX shell command language, 2.9.1 (variable assignments)",
)
ENV_FILE_UNRESOLVED = _rule(
    "E432", "env-file-value-unresolved", WARNING,
    "A value in the --env-file depends on a variable or command the file does not define.",
    "Values that use $VAR, ${VAR} or $(command) are expanded from earlier assignments in the same file; "
    "when that is impossible the variable is left out of validation and reported here.",
    "The value is decided when the script runs, so it cannot be checked in advance; a missing variable "
    "expands to an empty string, which NCCL treats as 'unset'.",
    "export NCCL_SOCKET_IFNAME=$IFACE",
    "Check the value on the node that runs the job (syncdoctor check there), or write the literal value.",
    "POSIX shell command language, 2.6 (word expansions)",
)
NCCL_CONF_MISREAD = _rule(
    "E433", "nccl-conf-line-misread", ERROR,
    "A line of an NCCL config file is read by NCCL differently from what it looks like.",
    "NCCL's reader takes everything before the first '=' as the name and everything after as the value, "
    "with no trimming and no quotes; only lines starting with '#' are comments. Reports 'export K=V', "
    "blanks around '=', quoted values and Windows line endings.",
    "'NCCL_DEBUG = INFO' sets a variable named 'NCCL_DEBUG ' that nobody reads; 'NCCL_SOCKET_IFNAME=\"eth0\"' "
    "selects an interface whose name contains quotes; a CRLF file appends '\\r' to every value. The "
    "setting silently does not apply.",
    "/etc/nccl.conf containing: export NCCL_SOCKET_IFNAME=eth0",
    "Write plain NAME=value lines: NCCL_SOCKET_IFNAME==eth0 (and convert the file with dos2unix if needed).",
    f"{ENV_RST} (top: 'NCCL_DEBUG=WARN' file example)", PARAM_CC,
)
NCCL_CONF_UNREADABLE = _rule(
    "E434", "nccl-conf-file-unreadable", WARNING,
    "NCCL_CONF_FILE names a file that cannot be read, or is ignored by this NCCL version.",
    "Checks that the file named by NCCL_CONF_FILE exists and is readable, and that NCCL is 2.23 or later "
    "(older versions ignore NCCL_CONF_FILE and read ~/.nccl.conf).",
    "NCCL skips a missing file without a word, so none of its settings apply.",
    "NCCL_CONF_FILE=~/nccl.conf ('~' is not expanded).",
    "Give an absolute path to an existing file: export NCCL_CONF_FILE=/home/me/nccl.conf",
    f"{ENV_RST} (NCCL_CONF_FILE)", PARAM_CC,
)
NCCL_CONF_SHADOWED = _rule(
    "E435", "nccl-conf-value-shadowed", INFO,
    "A setting in an NCCL config file is overridden by the environment or by an earlier file.",
    "NCCL applies config files with setenv(..., 0): the real environment wins, then NCCL_CONF_FILE or "
    "~/.nccl.conf, then /etc/nccl.conf. Reports file values that lose to another source with a different value.",
    "Editing the file has no effect while the other source sets the variable, which is confusing when "
    "debugging a cluster-wide default.",
    "/etc/nccl.conf: NCCL_SOCKET_IFNAME==ib0 while the job exports NCCL_SOCKET_IFNAME==eth0.",
    "Nothing to fix if intended; otherwise unset the variable in the environment (or earlier file).",
    PARAM_CC, f"{ENV_RST} (top)",
)

# ---------------------------------------------------------------------------------------------- E5xx
ASYNC_NO_TEARDOWN = _rule(
    "E501", "async-error-handling-no-teardown", WARNING,
    "TORCH_NCCL_ASYNC_ERROR_HANDLING is 0 or 2: a timed-out or failed collective does not bring the process down.",
    "Reads TORCH_NCCL_ASYNC_ERROR_HANDLING (or its old name): 0 = no handling, 1 = abort the communicator "
    "and tear the process down (torchrun's default), 2 = abort the communicator only, 3 = tear down "
    "without abort (PyTorch's default).",
    "With 0 a hung collective is never cleaned up: the process keeps its GPUs and the job sits idle "
    "until someone notices. With 2 the communicator is aborted but the process lives on, so the launcher "
    "does not restart the job and the other ranks still wait for it.",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING=0",
    "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (or 3), or unset it.",
    TORCH_NCCL_DOC, f"{TORCH_FACTS} (section 5)",
)
BLOCKING_WAIT = _rule(
    "E502", "blocking-wait-enabled", WARNING,
    "TORCH_NCCL_BLOCKING_WAIT=1: every work.wait() blocks the CPU and raises on timeout.",
    "Reports TORCH_NCCL_BLOCKING_WAIT (or NCCL_BLOCKING_WAIT) read as true.",
    "Blocking wait serialises the host with the GPU (the async error handling issue measured 'up to a 60% "
    "regression') and disables asynchronous error handling; it is a debugging aid.",
    "TORCH_NCCL_BLOCKING_WAIT=1",
    "unset TORCH_NCCL_BLOCKING_WAIT and rely on TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and the watchdog.",
    TORCH_NCCL_DOC, "github.com/pytorch/pytorch/issues/46874",
)
HEARTBEAT_TIMEOUT = _rule(
    "E503", "heartbeat-timeout-suspicious", WARNING,
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC is so small the monitor may kill healthy processes.",
    "Reports values at or below 0 (error) and below 60 seconds (warning). The default is 480 s (600 s in "
    "older releases).",
    "The heartbeat monitor kills the process when the watchdog thread has not advanced for that long; "
    "the watchdog legitimately stalls for seconds during heavy CUDA work or GIL contention, so a tiny "
    "value turns those stalls into crashes ('Heartbeat monitor timed out!').",
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=5",
    "unset TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, or use several minutes: export TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=480",
    TORCH_NCCL_DOC, f"{TORCH_FACTS} (section 4.1 heartbeat monitor)",
)
MONITORING_OFF = _rule(
    "E504", "watchdog-monitoring-disabled", WARNING,
    "TORCH_NCCL_ENABLE_MONITORING=0: a stuck watchdog is never detected.",
    "Reports the heartbeat monitor switched off.",
    "If the watchdog itself hangs (a CUDA or NCCL call that never returns), nothing aborts the process: "
    "collective timeouts stop firing and the job hangs indefinitely.",
    "TORCH_NCCL_ENABLE_MONITORING=0",
    "unset TORCH_NCCL_ENABLE_MONITORING (the default is on); raise TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC instead "
    "if the monitor fired too early.",
    TORCH_NCCL_DOC, f"{TORCH_FACTS} (section 5)",
)
DISTRIBUTED_DETAIL = _rule(
    "E505", "distributed-debug-detail", WARNING,
    "TORCH_DISTRIBUTED_DEBUG=DETAIL is left on.",
    "Reports TORCH_DISTRIBUTED_DEBUG=DETAIL (any case).",
    "DETAIL wraps every process group: each collective runs a gloo monitored barrier and two fingerprint "
    "allgathers first. Measured here (torch 2.13 CPU, 4 ranks): 6.4 ms -> 15.5 ms per all_reduce (2.4x), "
    "and DDP on gloo crashed every rank with SIGSEGV at start-up. PyTorch's docs: 'should only be used when debugging'.",
    "TORCH_DISTRIBUTED_DEBUG=DETAIL in a production launcher.",
    "unset TORCH_DISTRIBUTED_DEBUG (or export TORCH_DISTRIBUTED_DEBUG=OFF); enable DETAIL only for a "
    "short run that reproduces a desync.",
    TORCH_DIST_DOC, "syncdoctor shared/reference/observed-here.md (DETAIL mode)", TORCH_FACTS,
)
TORCH_DEBUG_LEFT_ON = _rule(
    "E506", "torch-nccl-debug-left-on", WARNING,
    "TORCH_NCCL_DESYNC_DEBUG or TORCH_NCCL_ENABLE_TIMING is left on.",
    "Reports the desync-debug and timing switches (or their old NCCL_* names) read as true.",
    "Desync debug writes to the c10d store on every collective of every rank; timing records a start "
    "event per collective, and PyTorch warns that it can raise the risk of a watchdog hang. Both are "
    "debugging aids.",
    "TORCH_NCCL_DESYNC_DEBUG=1",
    "unset TORCH_NCCL_DESYNC_DEBUG TORCH_NCCL_ENABLE_TIMING once the investigation is over.",
    TORCH_NCCL_DOC, f"{TORCH_FACTS} (section 4.3)",
)
FLIGHT_RECORDER_OFF = _rule(
    "E507", "flight-recorder-disabled", WARNING,
    "The NCCL Flight Recorder is disabled or will not dump on timeout.",
    "Reports TORCH_FR_BUFFER_SIZE / TORCH_NCCL_TRACE_BUFFER_SIZE = 0 and TORCH_NCCL_DUMP_ON_TIMEOUT = 0.",
    "Without the Flight Recorder a timeout leaves no record of which rank was at which collective, so a "
    "hang cannot be analysed after the fact (syncdoctor analyze and torchfrtrace both need the dumps).",
    "TORCH_FR_BUFFER_SIZE=0",
    "unset TORCH_FR_BUFFER_SIZE (2000 entries by default) and TORCH_NCCL_DUMP_ON_TIMEOUT.",
    TORCH_NCCL_DOC, f"{TORCH_FACTS} (section 1)",
)

# ---------------------------------------------------------------------------------------------- E6xx
GLOO_SYNTAX = _rule(
    "E601", "gloo-ifname-syntax", ERROR,
    "GLOO_SOCKET_IFNAME uses syntax Gloo does not have (^, =, prefixes, blanks, empty entries).",
    "GLOO_SOCKET_IFNAME is a comma list of exact interface names. Reports NCCL-style '^'/'=' prefixes, "
    "blanks, quotes, empty entries and values of one character (ignored).",
    "Gloo looks for an interface literally named '=eth0' or '^docker0' and process-group creation fails "
    "with 'Unable to find address for: =eth0'; a one-character value is ignored and Gloo falls back to "
    "the hostname, often 127.0.0.1.",
    "GLOO_SOCKET_IFNAME==eth0 (copied from NCCL_SOCKET_IFNAME).",
    "Give exact names without prefixes: export GLOO_SOCKET_IFNAME=eth0",
    f"{TORCH_DIST_DOC} (Choosing the network interface)", "pytorch torch/csrc/distributed/c10d/ProcessGroupGloo.cpp",
    NCCL_FACTS,
)
GLOO_MISSING = _rule(
    "E602", "gloo-ifname-missing", ERROR,
    "GLOO_SOCKET_IFNAME names an interface that does not exist on this host.",
    "Looks each name up among this host's interfaces.",
    "Gloo creates one device per name; a missing interface makes process-group creation fail on this "
    "host while the others wait for it until the store timeout.",
    "GLOO_SOCKET_IFNAME=eth9 on a host with eth0 and lo.",
    "Name the interface that routes to MASTER_ADDR: export GLOO_SOCKET_IFNAME=eth0",
    f"{TORCH_DIST_DOC} (Choosing the network interface)",
)
GLOO_UNUSABLE = _rule(
    "E603", "gloo-ifname-unusable", ERROR,
    "GLOO_SOCKET_IFNAME names an interface that is down, has no address, or is the loopback on a multi-node job.",
    "Checks state and addresses of each named interface.",
    "Gloo advertises the interface's address to the other ranks; a down or addressless interface cannot "
    "carry traffic and 127.0.0.1 cannot be reached from another node, so connectFullMesh times out "
    "('Gloo connectFullMesh failed ... Connection refused').",
    "GLOO_SOCKET_IFNAME=lo with WORLD_SIZE=8 and LOCAL_WORLD_SIZE=4.",
    "Use an interface that is up and routes to the other nodes: export GLOO_SOCKET_IFNAME=eth0",
    "syncdoctor shared/reference/observed-here.md (the classic cross-machine gloo failure)", TORCH_DIST_DOC,
)
GLOO_SEVERAL = _rule(
    "E604", "gloo-ifname-several", WARNING,
    "GLOO_SOCKET_IFNAME lists several interfaces: every process must list the same number.",
    "Reports lists with more than one name.",
    "Gloo creates one device per name and round-robins operations across them; PyTorch: 'It is "
    "imperative that all processes specify the same number of interfaces'. A host with a different "
    "count hangs or fails in connectFullMesh.",
    "GLOO_SOCKET_IFNAME=eth0,eth1 on some hosts and eth0 on others.",
    "Use one interface per host (export GLOO_SOCKET_IFNAME=eth0), or make sure every host lists the same number.",
    f"{TORCH_DIST_DOC} (Choosing the network interface)",
)
GLOO_TRANSPORT = _rule(
    "E605", "gloo-transport-unknown", ERROR,
    "GLOO_DEVICE_TRANSPORT is not a transport Gloo registers.",
    "Valid values (case-sensitive registry keys): TCP, LINUX (both tcp), TCP_TLS, UV (also APPLE, WIN32).",
    "An unknown transport name makes every Gloo process group fail to be created.",
    "GLOO_DEVICE_TRANSPORT=tcp",
    "export GLOO_DEVICE_TRANSPORT=TCP, or unset it (Linux default: tcp).",
    "pytorch torch/csrc/distributed/c10d/GlooDeviceFactory.cpp", NCCL_FACTS,
)
GLOO_TLS = _rule(
    "E606", "gloo-tls-incomplete", ERROR,
    "GLOO_DEVICE_TRANSPORT=TCP_TLS without the key and certificate variables.",
    "TCP_TLS needs GLOO_DEVICE_TRANSPORT_TCP_TLS_PKEY and GLOO_DEVICE_TRANSPORT_TCP_TLS_CERT (and a CA via "
    "_CA_FILE or _CA_PATH).",
    "Without them the TLS device cannot be created and Gloo process-group creation fails.",
    "GLOO_DEVICE_TRANSPORT=TCP_TLS alone.",
    "export GLOO_DEVICE_TRANSPORT_TCP_TLS_PKEY=/etc/gloo/key.pem GLOO_DEVICE_TRANSPORT_TCP_TLS_CERT=/etc/gloo/cert.pem "
    "GLOO_DEVICE_TRANSPORT_TCP_TLS_CA_FILE=/etc/gloo/ca.pem",
    "pytorch torch/csrc/distributed/c10d/GlooDeviceFactory.cpp",
)

# ---------------------------------------------------------------------------------------------- E7xx
MASTER_ADDR_MISSING = _rule(
    "E701", "master-addr-missing", ERROR,
    "MASTER_ADDR is empty, or missing although the other launcher variables are set.",
    "The env:// rendezvous needs MASTER_ADDR (the rank-0 host) on every rank but rank 0. Reported when it "
    "is set to an empty value, or unset while RANK/WORLD_SIZE/MASTER_PORT say this is a distributed rank.",
    "init_process_group raises 'Error initializing torch.distributed using env:// rendezvous: environment "
    "variable MASTER_ADDR expected, but not set', or connects to an empty host name.",
    "MASTER_ADDR= (empty) with WORLD_SIZE=16.",
    "export MASTER_ADDR=<address of the rank-0 host> (torchrun sets it from --master-addr / --rdzv-endpoint).",
    f"{TORCH_DIST_DOC} (Environment variable initialization)", TORCH_FACTS,
)
MASTER_ADDR_LOOPBACK = _rule(
    "E702", "master-addr-loopback", ERROR,
    "MASTER_ADDR is 127.0.0.1/localhost/0.0.0.0 on a job that spans several nodes.",
    "Reports loopback or wildcard master addresses when WORLD_SIZE > LOCAL_WORLD_SIZE (or several nodes "
    "are otherwise known).",
    "Each node connects to its own loopback: ranks on other nodes never reach the rank-0 store, and "
    "every non-master node waits until the rendezvous timeout.",
    "MASTER_ADDR=localhost WORLD_SIZE=16 LOCAL_WORLD_SIZE=8.",
    "export MASTER_ADDR=<routable address or name of the rank-0 host>, the same on every node.",
    f"{TORCH_DIST_DOC} (Environment variable initialization)", TORCH_FACTS,
)
MASTER_ADDR_MALFORMED = _rule(
    "E703", "master-addr-malformed", ERROR,
    "MASTER_ADDR contains a scheme, a port or blanks.",
    "MASTER_ADDR must be a bare host name or address; the port goes in MASTER_PORT. Reports 'tcp://...', "
    "'host:29500', blanks and quotes.",
    "The store client resolves the whole string as a host name, fails, and retries until the timeout.",
    "MASTER_ADDR=10.0.0.1:29500",
    "export MASTER_ADDR=10.0.0.1 MASTER_PORT=29500",
    f"{TORCH_DIST_DOC} (Environment variable initialization)",
)
MASTER_PORT_INVALID = _rule(
    "E704", "master-port-invalid", ERROR,
    "MASTER_PORT is not a TCP port (1-65535).",
    "Checks that MASTER_PORT is an integer between 1 and 65535.",
    "torch.distributed raises ValueError for a non-integer; a port outside the range cannot be bound or "
    "connected; port 0 makes the master bind a random port the workers cannot know.",
    "MASTER_PORT=70000",
    "export MASTER_PORT=29500 (a free port on the rank-0 host, the same on every node).",
    f"{TORCH_DIST_DOC} (Environment variable initialization)",
)
MASTER_PORT_PRIVILEGED = _rule(
    "E705", "master-port-privileged", WARNING,
    "MASTER_PORT is below 1024 (a privileged port).",
    "Reports MASTER_PORT values 1-1023.",
    "Binding a port below 1024 needs root (or CAP_NET_BIND_SERVICE), and these ports belong to system "
    "services: the rank-0 store fails with 'Address already in use' or 'Permission denied'.",
    "MASTER_PORT=80",
    "export MASTER_PORT=29500",
    "IANA service name and port registry (system ports 0-1023)",
)
RANK_RANGE = _rule(
    "E706", "rank-out-of-range", ERROR,
    "RANK/LOCAL_RANK/WORLD_SIZE/LOCAL_WORLD_SIZE contradict each other.",
    "Checks 0 <= RANK < WORLD_SIZE, 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE and LOCAL_WORLD_SIZE <= WORLD_SIZE.",
    "The rendezvous waits for WORLD_SIZE ranks with distinct ranks: a rank outside the range or a "
    "duplicate never completes it, and every other rank hangs in init_process_group.",
    "RANK=8 WORLD_SIZE=8.",
    "Let the launcher set them (torchrun, srun with the right --ntasks), or fix the arithmetic in the job "
    "script: RANK = node_rank * LOCAL_WORLD_SIZE + LOCAL_RANK.",
    "pytorch torch/distributed/run.py (Environment Variables)", TORCH_FACTS,
)
