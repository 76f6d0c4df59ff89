"""Finding pages of the network area (N): what NCCL and Gloo will advertise, the route to the master and
whether MASTER_ADDR:MASTER_PORT answers.

Each rule is registered at import time and used as ``RULE.finding(...)`` by ``syncdoctor.checks.host_rules``.
"""

from __future__ import annotations

from syncdoctor.kb.findings import Severity
from syncdoctor.kb.registry import Rule, register

__all__ = [
    "ADVERTISES_UNREACHABLE",
    "INTERFACE_NOT_ROUTE",
    "MASTER_REFUSED",
    "MASTER_UNREACHABLE",
    "MASTER_UNRESOLVABLE",
    "NO_USABLE_INTERFACE",
    "VIRTUAL_INTERFACE",
]

_NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname"
_SOCKET_CC = "nccl:src/misc/socket.cc ncclFindInterfaces; nccl:src/os/linux.cc ncclOsFindInterfaces"
_GLOO_DOC = (
    "https://pytorch.org/docs/stable/distributed.html#choosing-the-network-interface-to-use; "
    "pytorch:torch/csrc/distributed/c10d/ProcessGroupGloo.cpp createDefaultDevice"
)
_ENV_INIT = "https://pytorch.org/docs/stable/distributed.html#environment-variable-initialization"

ADVERTISES_UNREACHABLE = register(
    Rule(
        code="N001",
        name="advertised-address-unreachable",
        severity=Severity.ERROR,
        summary="Gloo or NCCL will advertise 127.0.0.1 (or an address peers cannot reach) in a multi-node job.",
        what=(
            "Predicts the interface each backend will advertise under this environment (NCCL: "
            "NCCL_SOCKET_IFNAME, else ib*, else anything but docker/lo/virbr...; Gloo: GLOO_SOCKET_IFNAME, "
            "else the address the hostname resolves to, else 127.0.0.1) and reports a loopback address when "
            "the job spans hosts (MASTER_ADDR is set and not loopback, or WORLD_SIZE > LOCAL_WORLD_SIZE)."
        ),
        why=(
            "Each rank publishes its advertised address in the store and every peer dials it. A loopback "
            "address sends every peer to itself: Gloo fails with `Gloo connectFullMesh failed ... "
            "remote=[127.0.0.1]:NNNN ... Connection refused`, NCCL's bootstrap hangs until the init timeout. "
            "It works on one machine, which is why it survives testing."
        ),
        example=(
            "MASTER_ADDR=10.99.0.1, /etc/hosts maps the hostname to 127.0.0.1, GLOO_SOCKET_IFNAME unset: "
            "Gloo advertises 127.0.0.1 while eth0 (10.99.0.2) is the interface that routes to the master."
        ),
        fix=(
            "On every node, name the interface that routes to MASTER_ADDR (its name may differ per node): "
            "`export GLOO_SOCKET_IFNAME=eth0` and `export NCCL_SOCKET_IFNAME=eth0`; or map the hostname to "
            "the node's real address in /etc/hosts."
        ),
        references=(_GLOO_DOC, _NCCL_ENV, _SOCKET_CC),
    )
)

INTERFACE_NOT_ROUTE = register(
    Rule(
        code="N002",
        name="advertised-interface-not-route",
        severity=Severity.WARNING,
        summary="The interface NCCL/Gloo will advertise is not the one the kernel uses to reach MASTER_ADDR.",
        what=(
            "Compares the predicted interface with the interface holding the source address the kernel "
            "picks for MASTER_ADDR (a UDP connect + getsockname; no packet is sent)."
        ),
        why=(
            "Peers must reach the advertised address. If it sits on another network (a management NIC, an "
            "IPoIB interface picked because NCCL tries ib* first, a second NIC without a route from the other "
            "nodes), connections time out after init started, and the job hangs in the first collective or "
            "in `ncclCommInitRank`. It is fine when every node reaches that network too."
        ),
        example="MASTER_ADDR=10.0.0.1 routes via eth0 (10.0.0.7) but NCCL picks ib0 (192.168.100.7) because ib* comes first.",
        fix="Pin the interface on every node: `export NCCL_SOCKET_IFNAME=eth0` / `export GLOO_SOCKET_IFNAME=eth0` (the one that routes to MASTER_ADDR), unless every node reaches the other network.",
        references=(_NCCL_ENV, _SOCKET_CC, _GLOO_DOC),
    )
)

VIRTUAL_INTERFACE = register(
    Rule(
        code="N003",
        name="virtual-interface-selected",
        severity=Severity.WARNING,
        summary="NCCL will fall back to a docker*, virbr* or lo* interface because nothing else qualifies.",
        what=(
            "NCCL's automatic selection reached its fallbacks: no running interface with an address other "
            "than docker*, lo* and virbr* exists (interfaces down, without address, or filtered by "
            "NCCL_SOCKET_FAMILY)."
        ),
        why=(
            "docker0 (172.17.0.1) and virbr0 (192.168.122.1) carry the same address on every host: a peer "
            "dialling it reaches its own bridge, so the job hangs or fails at init; lo works on one host only."
        ),
        example="The only running interfaces are lo and docker0; NCCL's bootstrap picks docker0 172.17.0.1.",
        fix="Bring up and address the data interface, or run the container with `--network=host`; then pin it with `export NCCL_SOCKET_IFNAME=<that interface>`.",
        references=(_NCCL_ENV, _SOCKET_CC),
    )
)

NO_USABLE_INTERFACE = register(
    Rule(
        code="N004",
        name="no-usable-interface",
        severity=Severity.ERROR,
        summary="NCCL or Gloo will find no interface to use: init fails.",
        what=(
            "The predicted selection is empty: NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME names interfaces "
            "that do not exist, are not running, or have no address, or no interface qualifies at all."
        ),
        why=(
            "NCCL fails with `Bootstrap : no socket interface found` (or `NET/Socket : no interface found`); "
            "Gloo with `Unable to find address for: <name>`. Interface names differ between machines "
            "(eth0 vs ens5 vs enp1s0), so a value copied from another cluster often matches nothing."
        ),
        example="NCCL_SOCKET_IFNAME=eth9 on a host whose interfaces are lo and ens5.",
        fix="Set the variable to this host's interface that routes to MASTER_ADDR (see `ip -br addr`), e.g. `export NCCL_SOCKET_IFNAME=ens5`.",
        references=(_NCCL_ENV, _SOCKET_CC, _GLOO_DOC),
    )
)

MASTER_REFUSED = register(
    Rule(
        code="N005",
        name="master-port-refused",
        severity=Severity.WARNING,
        summary="MASTER_ADDR:MASTER_PORT is unreachable: the host answers but nothing listens on the port.",
        what="A TCP connect to MASTER_ADDR:MASTER_PORT got a reset (ECONNREFUSED).",
        why=(
            "The store on rank 0 listens on MASTER_PORT once the job starts. Before launch, refused is "
            "expected; while the job runs it means a wrong MASTER_PORT, rank 0 not (yet) started or already "
            "dead, or a port that a host firewall rejects. Ranks then retry until "
            "`The client socket has timed out after 1800s while trying to connect to (host, port)`."
        ),
        example="MASTER_ADDR=10.99.0.1 MASTER_PORT=29500: `connect: Connection refused` while the job's rank 0 listens on 29400.",
        fix="Use the port rank 0 listens on (`ss -ltnp` on the master), start rank 0, or open the port in the firewall (e.g. `firewall-cmd --add-port=29500/tcp`).",
        references=(_ENV_INIT, "pytorch:torch/csrc/distributed/c10d/TCPStore.cpp"),
    )
)

MASTER_UNREACHABLE = register(
    Rule(
        code="N006",
        name="master-unreachable",
        severity=Severity.ERROR,
        summary="MASTER_ADDR:MASTER_PORT cannot be reached: the connection timed out or there is no route.",
        what="A TCP connect to MASTER_ADDR:MASTER_PORT timed out (packets dropped), or the kernel has no route to it (ENETUNREACH/EHOSTUNREACH).",
        why=(
            "Every rank connects to the store on MASTER_ADDR first. Dropped packets (a firewall, a security "
            "group, a wrong address on another network) make ranks wait the whole rendezvous/store timeout "
            "before failing, which looks like a hang at startup."
        ),
        example="MASTER_ADDR=10.99.0.1: `connect: timed out after 2 s` (a cloud security group blocks 29500).",
        fix="Check the address (`ip route get $MASTER_ADDR`), allow TCP MASTER_PORT (and NCCL's ephemeral ports) between nodes in the firewall/security group.",
        references=(_ENV_INIT,),
    )
)

MASTER_UNRESOLVABLE = register(
    Rule(
        code="N007",
        name="master-unresolvable",
        severity=Severity.ERROR,
        summary="MASTER_ADDR does not resolve to an address.",
        what="getaddrinfo(MASTER_ADDR) failed on this host.",
        why="Ranks cannot find the store: init fails at once with a resolution error, or the launcher retries until its timeout.",
        example="MASTER_ADDR=node-0 is known in the login node's DNS but not inside the container.",
        fix="Use the master's IP address (`export MASTER_ADDR=10.0.0.1`) or make the name resolvable on every node (/etc/hosts, DNS).",
        references=(_ENV_INIT,),
    )
)
