"""Finding pages of the host area (H): names, interfaces, IB/RoCE ports, /dev/shm, memlock, versions.

Each rule is registered at import time and used as ``RULE.finding(...)`` by ``syncdoctor.checks.host_rules``.
"""

from __future__ import annotations

from syncdoctor.kb.findings import Severity
from syncdoctor.kb.registry import Rule, register

__all__ = [
    "FACT_UNREADABLE",
    "HOSTNAME_LOOPBACK",
    "HOSTNAME_UNRESOLVABLE",
    "IB_ERROR_COUNTERS",
    "IB_LINK_DOWN",
    "IB_NO_SUBNET_MANAGER",
    "IB_PORT_NOT_ACTIVE",
    "MEMLOCK_LIMITED",
    "MTU_MISMATCH",
    "ROCE_NO_ROUTABLE_GID",
    "SHM_TOO_SMALL",
    "SPEED_UNKNOWN",
    "VERSIONS",
]

_SOCKET_CC = "nccl:src/misc/socket.cc ncclFindInterfaces; nccl:src/os/linux.cc ncclOsFindInterfaces"
_GLOO_DOC = (
    "https://pytorch.org/docs/stable/distributed.html#choosing-the-network-interface-to-use; "
    "pytorch:torch/csrc/distributed/c10d/ProcessGroupGloo.cpp createDefaultDevice"
)
_IB_SYSFS = "linux Documentation/ABI/stable/sysfs-class-infiniband; drivers/infiniband/core/sysfs.c"
_NCCL_TSG = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"

HOSTNAME_LOOPBACK = register(
    Rule(
        code="H001",
        name="hostname-resolves-to-loopback",
        severity=Severity.WARNING,
        summary="The hostname resolves to a loopback address (127.0.0.1, Debian's 127.0.1.1 or ::1).",
        what=(
            "Resolves this host's name with getaddrinfo (as Gloo does) and reports when the first address "
            "is in 127.0.0.0/8 or ::1. Debian and Ubuntu write `127.0.1.1 <hostname>` into /etc/hosts by "
            "default; containers often map the hostname to 127.0.0.1."
        ),
        why=(
            "With GLOO_SOCKET_IFNAME unset, Gloo binds and advertises the first local address the hostname "
            "resolves to. A loopback address works on one machine and fails across machines: every peer "
            "dials 127.0.x.x, reaches itself, and init fails with `Gloo connectFullMesh failed ... Connection "
            "refused` or hangs until the timeout. torchrun's c10d rendezvous also advertises the hostname."
        ),
        example=(
            "/etc/hosts contains `127.0.1.1 node7`; `getent hosts node7` prints 127.0.1.1; a 2-node gloo job "
            "fails with `remote=[127.0.0.1]:6043 ... SO_ERROR: Connection refused`."
        ),
        fix=(
            "Map the hostname to the address peers use (edit /etc/hosts: `10.0.0.7 node7`, remove the "
            "127.0.1.1 line), or set `export GLOO_SOCKET_IFNAME=<interface that routes to MASTER_ADDR>` "
            "(and NCCL_SOCKET_IFNAME) on every node."
        ),
        references=(
            _GLOO_DOC,
            "https://www.debian.org/doc/manuals/debian-reference/ch05.en.html#_the_hostname_resolution",
        ),
    )
)

HOSTNAME_UNRESOLVABLE = register(
    Rule(
        code="H002",
        name="hostname-unresolvable",
        severity=Severity.WARNING,
        summary="The hostname does not resolve, or resolves to no address of this host.",
        what=(
            "getaddrinfo(hostname) failed, or returned only addresses that are not on any local interface "
            "(a stale /etc/hosts entry or DNS record)."
        ),
        why=(
            "Gloo then logs `Unable to resolve hostname to a (local) address. Using the loopback address as "
            "fallback.` and advertises 127.0.0.1, which peers on other hosts cannot reach. Rendezvous "
            "backends and MASTER_ADDR=$(hostname) break the same way."
        ),
        example="`hostname` prints gpu-12 but `getent hosts gpu-12` prints nothing (or 10.1.1.99, an old address).",
        fix=(
            "Add the hostname to /etc/hosts with this host's address, fix DNS, or set "
            "`export GLOO_SOCKET_IFNAME=<interface>` on every node."
        ),
        references=(_GLOO_DOC,),
    )
)

MTU_MISMATCH = register(
    Rule(
        code="H003",
        name="interface-mtu-mismatch",
        severity=Severity.INFO,
        summary="Interfaces that may carry the job's traffic have different MTUs.",
        what=(
            "Compares the MTU (/sys/class/net/<if>/mtu) of the running, addressed, non-loopback interfaces "
            "NCCL may use (the NET/Socket candidates) and of the interface that routes to MASTER_ADDR."
        ),
        why=(
            "A path whose MTU differs between the two ends (9000 here, 1500 on a switch or on the peer) "
            "drops large frames while small control messages pass: init succeeds and the first large "
            "collective hangs. Different MTUs on one host are often deliberate (IPoIB 2044/4092 vs Ethernet "
            "1500); compare against the peers with `syncdoctor probe`."
        ),
        example="eth0 mtu 9000, eth1 mtu 1500; both are NCCL socket candidates.",
        fix="Use one MTU end to end on the job's network (e.g. `ip link set dev eth0 mtu 9000` on every node and switch port).",
        references=("linux Documentation/ABI/testing/sysfs-class-net", _SOCKET_CC),
    )
)

SPEED_UNKNOWN = register(
    Rule(
        code="H004",
        name="interface-speed-unknown",
        severity=Severity.INFO,
        summary="NCCL cannot read the speed of its socket interface and will assume 10 Gbps.",
        what=(
            "The interface NCCL's socket transport would use has no readable /sys/class/net/<if>/speed "
            "(read error, or -1), which is common for virtio, veth and some cloud NICs."
        ),
        why=(
            "NCCL logs `Could not get speed from /sys/class/net/<if>/speed. Defaulting to 10 Gbps.` and "
            "tunes its topology and algorithm choice for 10 Gbps. On faster links this can cost bandwidth; "
            "it does not cause hangs."
        ),
        example="cat /sys/class/net/eth0/speed -> `cat: ... Invalid argument` (virtio-net).",
        fix="Nothing is required. On fast virtual NICs compare nccl-tests bandwidth with and without NCCL_SOCKET_NTHREADS/NCCL_NSOCKS_PERTHREAD tuning.",
        references=(
            "nccl:src/transport/net_socket.cc (speed read)",
            "linux Documentation/ABI/testing/sysfs-class-net",
        ),
    )
)

IB_PORT_NOT_ACTIVE = register(
    Rule(
        code="H005",
        name="ib-port-not-active",
        severity=Severity.WARNING,
        summary="An IB/RoCE port has a physical link but is not ACTIVE; NCCL skips it.",
        what=(
            "Reads /sys/class/infiniband/<dev>/ports/<n>/state; anything but `4: ACTIVE` (INIT, ARMED, DOWN) "
            "while phys_state is LinkUp is reported. (A link that is physically down is H006; an IB port "
            "without a subnet manager is H009.)"
        ),
        why=(
            "NCCL only uses ports in state IBV_PORT_ACTIVE. With no active port it silently falls back to "
            "TCP sockets (much slower); if NCCL_IB_HCA names only this port, init fails; if ports differ "
            "between nodes, traffic takes mismatched rails."
        ),
        example="mlx5_1 port 1: state `2: INIT`, phys_state `5: LinkUp`.",
        fix="Check the port with `ibstat`/`ibv_devinfo`; on IB make sure the subnet manager sees it (`sminfo`), on RoCE check the switch port and the netdev (`ip link show <netdev>`).",
        references=(_IB_SYSFS, "nccl:src/transport/net_ib/init.cc (IBV_PORT_ACTIVE filter)", _NCCL_TSG),
    )
)

IB_LINK_DOWN = register(
    Rule(
        code="H006",
        name="ib-link-not-up",
        severity=Severity.WARNING,
        summary="An IB/RoCE port's physical link is not up (phys_state is not LinkUp).",
        what="Reads ports/<n>/phys_state; anything but `5: LinkUp` (Disabled, Polling, Sleep, LinkErrorRecovery...) is reported.",
        why=(
            "A port whose link is down carries no traffic; NCCL ignores it. If other nodes use the matching "
            "rail, rail-optimized jobs lose bandwidth or hang on cross-rail paths (see NCCL_CROSS_NIC)."
        ),
        example="mlx5_3 port 1: phys_state `3: Disabled`, state `1: DOWN`.",
        fix="Check the cable/transceiver and switch port (`ibstat`, `mlxlink -d mlx5_3`); exclude the port explicitly (`NCCL_IB_HCA=^=mlx5_3`) until it is repaired.",
        references=(_IB_SYSFS, _NCCL_TSG),
    )
)

IB_ERROR_COUNTERS = register(
    Rule(
        code="H007",
        name="ib-error-counters",
        severity=Severity.WARNING,
        summary="An IB/RoCE port's error counters are non-zero (link_downed, symbol_error, port_rcv_errors...).",
        what=(
            "Reads ports/<n>/counters (link_downed, symbol_error, port_rcv_errors, link_error_recovery, "
            "local_link_integrity_errors, excessive_buffer_overrun_errors, port_rcv_remote_physical_errors, "
            "port_xmit_discards) and hw_counters (local_ack_timeout_err, rnr_nak_retry_err, out_of_sequence, "
            "packet_seq_err). Counters are cumulative since boot or the last reset."
        ),
        why=(
            "Link flaps (link_downed), bit errors (symbol_error, port_rcv_errors) and transport retries "
            "(local_ack_timeout_err) make RDMA operations stall for a whole retry cycle or fail with "
            "`IBV_WC_RETRY_EXC_ERR`; the job sees slow steps or a hang that points at no rank."
        ),
        example="mlx5_0 port 1: link_downed 3, symbol_error 1289.",
        fix=(
            "Check whether they grow while the job runs (`watch -d cat /sys/class/infiniband/<dev>/ports/1/counters/symbol_error`); "
            "if so, reseat or replace the cable/transceiver and check the switch port. Reset with `perfquery -R` to start clean."
        ),
        references=(_IB_SYSFS, _NCCL_TSG),
    )
)

ROCE_NO_ROUTABLE_GID = register(
    Rule(
        code="H008",
        name="roce-no-routable-gid",
        severity=Severity.WARNING,
        summary="A RoCE port has no RoCE v2 GID with an IPv4 address: NCCL's GID auto-selection finds nothing.",
        what=(
            "Replays NCCL's GID auto-selection (NCCL >= 2.21, NCCL_IB_GID_INDEX unset) on the port's GID "
            "table (gids/N, gid_attrs/types/N): NCCL looks for a valid, non-link-local GID of the wanted "
            "family (IPv4-mapped by default, NCCL_IB_ADDR_FAMILY), inside NCCL_IB_ADDR_RANGE if set, whose "
            "type is `RoCE v2` (NCCL_IB_ROCE_VERSION_NUM); the first such index wins. None qualifies here."
        ),
        why=(
            "NCCL then stays on GID index 0, usually the RoCE v1 link-local GID, which cannot be routed "
            "between subnets: connections fail with `ibv_modify_qp failed with 110 Connection timed out` "
            "or hang. The usual cause is that the RoCE netdev has no IPv4 address (the kernel creates the "
            "v2 IPv4 GID from it)."
        ),
        example="mlx5_0 port 1 (netdev ens1f0, no IPv4): GIDs 0 `fe80::...` (IB/RoCE v1) and 1 `fe80::...` (RoCE v2) only.",
        fix=(
            "Give the RoCE netdev its IPv4 address (`ip addr add 10.0.0.7/24 dev ens1f0`); `show_gids` should "
            "then list a `RoCE v2` entry with the IPv4. Only as a stopgap set NCCL_IB_GID_INDEX to that index."
        ),
        references=(
            "nccl:src/transport/net_ib/connect.cc ncclIbGetGidIndex/ncclUpdateGidIndex",
            "https://github.com/Mellanox/mlnx-tools (sbin/show_gids)",
            _IB_SYSFS,
        ),
    )
)

IB_NO_SUBNET_MANAGER = register(
    Rule(
        code="H009",
        name="ib-no-subnet-manager",
        severity=Severity.ERROR,
        summary="An InfiniBand port is physically up but no Subnet Manager has configured it (sm_lid 0).",
        what="An InfiniBand (not RoCE) port with phys_state LinkUp and sm_lid 0x0 (usually state INIT): nothing assigned it a LID.",
        why=(
            "Without a Subnet Manager the port never becomes ACTIVE and has no LID, so NCCL cannot use it: "
            "with NCCL_IB_HCA naming it, init fails; otherwise NCCL falls back to sockets over Ethernet."
        ),
        example="mlx5_0 port 1: link_layer InfiniBand, phys_state `5: LinkUp`, state `2: INIT`, sm_lid 0x0.",
        fix="Start a subnet manager on the fabric (`systemctl start opensm` on one node, or enable the switch's SM); verify with `sminfo`.",
        references=(_IB_SYSFS, _NCCL_TSG),
    )
)

SHM_TOO_SMALL = register(
    Rule(
        code="H010",
        name="dev-shm-too-small",
        severity=Severity.WARNING,
        summary="/dev/shm is smaller than 1 GiB (Docker's default is 64 MB).",
        what="statvfs(/dev/shm): its total size is below 1 GiB.",
        why=(
            "NCCL's SHM transport and its proxy buffers live in /dev/shm; several GPUs per node need hundreds "
            "of MB. When it fills, NCCL fails with `NCCL WARN Error while creating shared memory segment` / "
            "`failed to extend /dev/shm/nccl-... to N bytes`, and PyTorch DataLoader workers die with bus errors."
        ),
        example="`df -h /dev/shm` inside a container started without --shm-size: 64M.",
        fix=(
            "Docker: `docker run --shm-size=1g` (or `--ipc=host`); Kubernetes: mount an `emptyDir: {medium: Memory}` "
            "at /dev/shm; bare metal: `mount -o remount,size=8G /dev/shm`."
        ),
        references=(
            _NCCL_TSG + " (Docker / shared memory)",
            "https://docs.docker.com/reference/cli/docker/container/run/#shm-size",
        ),
    )
)

MEMLOCK_LIMITED = register(
    Rule(
        code="H011",
        name="memlock-limited",
        severity=Severity.WARNING,
        summary="The locked-memory limit is not unlimited on a host with IB/RoCE devices.",
        what="Reads `Max locked memory` from /proc/self/limits (RLIMIT_MEMLOCK) and reports a finite soft limit when /sys/class/infiniband has ports.",
        why=(
            "RDMA registers (pins) buffers with ibv_reg_mr, which counts against RLIMIT_MEMLOCK. With the common "
            "64 KB or 8 MB default NCCL fails with `NET/IB : ibv_reg_mr failed` / `Cannot allocate memory` or "
            "silently falls back to sockets."
        ),
        example="`ulimit -l` prints 65536 inside a container on a node with mlx5 devices.",
        fix=(
            "Set it unlimited: /etc/security/limits.conf `* soft memlock unlimited` and `* hard memlock unlimited`; "
            "Docker `--ulimit memlock=-1:-1`; systemd/slurmd `LimitMEMLOCK=infinity`; Slurm `PropagateResourceLimitsExcept=MEMLOCK`."
        ),
        references=(_NCCL_TSG + " (ulimit -l)", "man 2 setrlimit (RLIMIT_MEMLOCK)"),
    )
)

VERSIONS = register(
    Rule(
        code="H012",
        name="software-versions",
        severity=Severity.INFO,
        summary="The versions of Python, torch, CUDA, NCCL and the NVIDIA driver, and the GPUs found.",
        what="Reads package metadata (torch, the nvidia-nccl wheel), torch/version.py, /proc/driver/nvidia/version and NVML when available.",
        why=(
            "Defaults change between releases (NCCL_IB_TIMEOUT 14 -> 18 -> 20, GID auto-selection in 2.21, "
            "the PyTorch NCCL timeout), and mixed versions across nodes cause init failures; compare this "
            "line across nodes."
        ),
        example="torch 2.5.1+cu124, CUDA 12.4, NCCL 2.21.5, driver 550.54.15, 8 x NVIDIA H100 80GB HBM3.",
        fix="Nothing to fix; use the same versions on every node (`syncdoctor probe` compares them).",
        references=("https://docs.nvidia.com/deeplearning/nccl/release-notes/",),
    )
)

FACT_UNREADABLE = register(
    Rule(
        code="H013",
        name="fact-unreadable",
        severity=Severity.INFO,
        summary="A host fact could not be read, so the checks that need it report nothing about it.",
        what="A file under /sys or /proc, a statvfs or a lookup failed or returned malformed data; the fact is 'unknown'.",
        why=(
            "An unknown fact is not a healthy one: the checks that depend on it could not run. Containers "
            "often hide parts of /sys (GID entries read EINVAL) or /proc."
        ),
        example="/sys/class/infiniband/mlx5_0/ports/1/state: unreadable or malformed.",
        fix="Run check where the fact is visible (on the host, or in a container with /sys mounted), or check the item by hand.",
        references=("linux Documentation/ABI/testing/sysfs-class-net", _IB_SYSFS),
    )
)
