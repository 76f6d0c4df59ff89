"""Finding pages of the probe (cross-node comparison and measurements). Registered at import time.

Codes: P00x join and clocks, P01x cross-node consistency, P02x links, P03x collectives and stages.
"""

from __future__ import annotations

from syncdoctor.kb.findings import Severity
from syncdoctor.kb.registry import Rule, register

__all__ = [
    "BANDWIDTH_BELOW_RATE",
    "CLOCKS_NOT_SYNCHRONISED",
    "COLLECTIVE_CORRUPTION",
    "ENV_DIFFERS",
    "IB_PORT_MISMATCH",
    "LINK_SPEED_MISMATCH",
    "MIXED_GPU_MODELS",
    "MTU_MISMATCH",
    "NODE_NEVER_JOINED",
    "NODE_STARTED_LATE",
    "SLOW_LINK",
    "SLOW_NODE",
    "STAGE_FAILED",
    "STORE_UNREACHABLE",
    "VERSION_MISMATCH",
]

_NCCL_TESTS = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
_TORCH_DIST = "https://pytorch.org/docs/stable/distributed.html"

NODE_NEVER_JOINED = register(Rule(
    code="P001",
    name="node-never-joined",
    severity=Severity.ERROR,
    summary="A node (or some of its ranks) never joined the job within the join timeout.",
    what="Every rank registers in the job's store before init_process_group. When the join timeout passes, "
    "the ranks whose keys are missing are named, grouped by node, with the host name from --hosts or the "
    "Slurm node list. Under an elastic torchrun (--nnodes MIN:MAX) a job that formed with fewer nodes than "
    "the probe's --nnodes is reported the same way.",
    why="init_process_group and the first collective wait for every rank: one node that never started "
    "(a failed ssh, a crashed container, a wrong node list) makes every other node wait for the full "
    "timeout (10 to 30 minutes) and then fail with a message that does not name it.",
    example="node 2 (host2) never joined: rank(s) 4, 5 — 4 of 6 ranks registered within 10 s",
    fix="Start the job on the missing node (check its launcher log), or remove it from the node list and "
    "relaunch with the smaller --nnodes.",
    references=(_TORCH_DIST, "https://pytorch.org/docs/stable/elastic/run.html"),
))

NODE_STARTED_LATE = register(Rule(
    code="P002",
    name="node-started-late",
    severity=Severity.WARNING,
    summary="A node reached the job long after the first one (start-up skew).",
    what="Each rank stamps its arrival at the join with its own clock; the arrivals are corrected by the "
    "clock offsets measured by ping-pong and compared per node. A node whose first rank arrived more than "
    "--skew-warn seconds after the earliest rank is reported.",
    why="Every collective waits for the last rank. A node that starts late (slow image pull, slow "
    "filesystem, a busy host) makes the others wait in init_process_group or in the first collective; "
    "if the skew exceeds the process group timeout the whole job is killed at start-up.",
    example="host2 arrived 42.0 s after host0 (clock offset 0.001 s corrected)",
    fix="Find why the node starts late (its launcher log), and set a start-up timeout above the skew: "
    "init_process_group(timeout=timedelta(seconds=...)) as the probe's recommendations show.",
    references=(_TORCH_DIST,),
))

CLOCKS_NOT_SYNCHRONISED = register(Rule(
    code="P003",
    name="clocks-not-synchronised",
    severity=Severity.WARNING,
    summary="The nodes' clocks differ by more than a second.",
    what="The offset of each node's clock to node 0's clock is estimated with ping-pong messages (NTP "
    "style, minimum round trip). An offset above one second is reported; skews are already corrected.",
    why="Logs of different nodes cannot be lined up when clocks differ, so a post-mortem names the wrong "
    "rank as first to fail; certificate and token checks may also fail.",
    example="host1's clock is 12.4 s ahead of host0's (round trip 0.2 ms)",
    fix="Run a time service on every node (chrony or systemd-timesyncd) and check `chronyc tracking`.",
    references=("https://chrony-project.org/documentation.html",),
))

STORE_UNREACHABLE = register(Rule(
    code="P005",
    name="probe-store-unreachable",
    severity=Severity.ERROR,
    summary="The job's store on MASTER_ADDR:MASTER_PORT could not be reached within the join timeout.",
    what="Every rank connects to the store (hosted by rank 0 or by torchrun's agent on node 0) before "
    "anything else. When the connection does not succeed within the join timeout, node 0 never started, "
    "the address or port is wrong, or a firewall drops the connection.",
    why="Without the store no rank can find the others: init_process_group waits for its full timeout and "
    "then fails with a store timeout that does not say why.",
    example="cannot reach 10.0.0.1:29500 within 10 s: Connection refused",
    fix="Check that node 0 runs the job, that MASTER_ADDR resolves to an address of node 0 reachable from "
    "this node, and that MASTER_PORT is open (`syncdoctor check` tests the TCP connection).",
    references=(_TORCH_DIST,),
))

MTU_MISMATCH = register(Rule(
    code="P010",
    name="mtu-mismatch-between-nodes",
    severity=Severity.ERROR,
    summary="The interfaces the job uses have different MTUs on different nodes.",
    what="For each node the interface that carries the job's traffic (the one holding the address used "
    "to reach the master) is looked up in the node's facts, and the MTUs are compared.",
    why="Frames larger than the receiver's MTU are dropped on the same L2 segment. TCP hides it at "
    "connection set-up (MSS) but RoCE/IB and UDP do not, and path MTU problems show up as hangs of large "
    "messages only: small collectives work, large ones stall.",
    example="eth0 MTU 9000 on host1, 1500 on host0 and host2",
    fix="Set the same MTU on every node and switch port: `ip link set dev eth0 mtu 9000` (make it "
    "persistent in the network configuration).",
    references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",),
))

LINK_SPEED_MISMATCH = register(Rule(
    code="P011",
    name="link-speed-mismatch",
    severity=Severity.WARNING,
    summary="The interfaces the job uses report different link speeds on different nodes.",
    what="The sysfs speed (Mbit/s) of each node's interface in use is compared across nodes; interfaces "
    "whose speed is unknown are skipped.",
    why="A ring or tree collective runs at the pace of its slowest link: one node negotiated at 10 Gb/s "
    "among 100 Gb/s nodes slows every step of the job.",
    example="eth0 at 10000 Mb/s on host2, 100000 Mb/s on host0 and host1",
    fix="Check the cable, transceiver and switch port of the slower node (`ethtool eth0`).",
    references=("https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-net",),
))

IB_PORT_MISMATCH = register(Rule(
    code="P012",
    name="ib-port-mismatch",
    severity=Severity.WARNING,
    summary="The IB/RoCE ports differ between nodes: state, rate or link layer.",
    what="The active ports of every node are compared by device and port: a port ACTIVE on some nodes but "
    "not others, a different rate (e.g. 200 vs 100 Gb/s) or a different link layer (InfiniBand vs "
    "Ethernet/RoCE).",
    why="NCCL uses only ACTIVE ports; a node with fewer or slower ports falls back to fewer rails or to "
    "sockets, and the whole job runs at its pace. Mixed link layers cannot talk to each other at all.",
    example="mlx5_1:1 ACTIVE 200 Gb/s on host0, DOWN on host1",
    fix="Bring the port up or fix its rate on the odd node (`ibstat`, cable, subnet manager), or restrict "
    "NCCL_IB_HCA to the ports active everywhere.",
    references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-hca",),
))

VERSION_MISMATCH = register(Rule(
    code="P013",
    name="version-mismatch-between-nodes",
    severity=Severity.ERROR,
    summary="torch, NCCL, CUDA or the driver differ between nodes.",
    what="The versions every rank reports (torch, its CUDA, NCCL, the GPU driver, Python) are compared; "
    "a torch or NCCL difference is an error, the others are warnings.",
    why="NCCL versions must match for their wire protocol; different torch builds can disagree on "
    "collective semantics, and mismatched stacks are a classic source of hangs at the first collective.",
    example="torch 2.13.0 on host0, 2.12.1 on host1",
    fix="Install the same environment on every node (one container image or one lock file).",
    references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",),
))

ENV_DIFFERS = register(Rule(
    code="P014",
    name="env-differs-between-nodes",
    severity=Severity.WARNING,
    summary="NCCL_*, GLOO_* or TORCH_NCCL_* variables differ between nodes (or are set on some only).",
    what="The communication variables of every node (values redacted) are compared; a variable set on "
    "some nodes only or with different values is reported with the value on each node.",
    why="NCCL and Gloo settings must usually agree: a transport disabled on one node only, a different "
    "interface list or IB settings on one node lead to hangs at init or fallbacks to slow paths that are "
    "very hard to see from one node's log.",
    example="NCCL_IB_DISABLE=1 on host1 only",
    fix="Set the variable the same way on every node (the launcher script or the container image), or "
    "unset it everywhere.",
    references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
))

MIXED_GPU_MODELS = register(Rule(
    code="P015",
    name="mixed-gpu-models",
    severity=Severity.WARNING,
    summary="The nodes have different GPU models: the slowest sets the pace.",
    what="The GPU names of the ranks' devices are compared across nodes.",
    why="Data-parallel training waits for the slowest rank at every step, so a mixed cluster runs at the "
    "speed of its slowest GPU; memory differences also make batch sizes fail on some nodes only.",
    example="NVIDIA H100 80GB HBM3 on host0, NVIDIA A100-SXM4-40GB on host1",
    fix="Run on identical nodes, or balance work per node (smaller batches on the slower GPUs).",
    references=(_TORCH_DIST,),
))

SLOW_NODE = register(Rule(
    code="P020",
    name="slow-node",
    severity=Severity.WARNING,
    summary="Every link of one node is much slower than the links between the other nodes.",
    what="Point-to-point bandwidth is measured for every pair of nodes in rounds (a round-robin "
    "tournament, so pairs never share a node). A node is slow when even its best link is below "
    "--slow-ratio of the median of the links between the other nodes: the problem is that node "
    "(its NIC, cable, port or a throttle), not one pair.",
    why="Collectives run at the pace of their slowest link; one slow node slows every step of the job "
    "and, when slow enough, makes collectives time out.",
    example="host2: links 38 Mb/s vs 2.1 Gb/s between the other nodes (0.02x)",
    fix="Check that node's NIC, cable and switch port (`ethtool`, `ibstat`), its traffic shaping "
    "(`tc qdisc show`) and competing traffic; or leave it out of the job.",
    references=(_NCCL_TESTS,),
))

SLOW_LINK = register(Rule(
    code="P021",
    name="slow-link",
    severity=Severity.WARNING,
    summary="One pair of nodes is much slower than both nodes' other links.",
    what="A link below --slow-ratio of the median of the other links of its two nodes, when neither node "
    "is slow on all its links: a bad path between two nodes (a switch, a route, a cable between them).",
    why="Ring collectives cross every pair in turn; one slow path slows the whole ring.",
    example="host0-host2: 120 Mb/s, their other links 2.0 Gb/s",
    fix="Check the path between the two nodes (switch ports, routing, ECMP); the nodes themselves are fine.",
    references=(_NCCL_TESTS,),
))

BANDWIDTH_BELOW_RATE = register(Rule(
    code="P022",
    name="bandwidth-below-link-rate",
    severity=Severity.WARNING,
    summary="Measured bandwidth is far below what the interfaces' link rates promise.",
    what="The bandwidth of each link between two nodes is compared with the lower sysfs speed of the two "
    "ends' physical interfaces in use (virtual interfaces promise nothing and are skipped).",
    why="A link running at a fraction of its rate points to a misconfiguration (wrong interface, "
    "sockets instead of RDMA, a duplex or offload problem) that slows every collective.",
    example="host0-host1: 1.1 Gb/s measured on 100 Gb/s NICs (0.01x)",
    fix="Check which interface and transport the job uses (NCCL_DEBUG=INFO), the NIC offloads and "
    "NCCL_SOCKET_NTHREADS/NCCL_NSOCKS_PERTHREAD for socket transports.",
    references=(_NCCL_TESTS, "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"),
))

COLLECTIVE_CORRUPTION = register(Rule(
    code="P030",
    name="collective-data-corruption",
    severity=Severity.ERROR,
    summary="A collective returned wrong values (nccl-tests #wrong > 0).",
    what="Each collective is run once more after timing with rank-dependent fill values, and every "
    "element of the result is compared with the expected value computed independently; the count of "
    "wrong elements is summed over ranks like nccl-tests' #wrong column.",
    why="Silent data corruption (a faulty NIC, GPU memory or a broken transport) corrupts gradients "
    "without any error: training diverges or quietly degrades.",
    example="all_reduce 4194304 B: 1 wrong element on rank 3",
    fix="Rerun to confirm, then take the node of the reporting rank out of service and run the vendor "
    "diagnostics (dcgmi diag, NIC self-tests).",
    references=(_NCCL_TESTS, "https://github.com/NVIDIA/nccl-tests"),
))

STAGE_FAILED = register(Rule(
    code="P031",
    name="probe-stage-failed",
    severity=Severity.ERROR,
    summary="A probe stage failed or timed out; the stages before it were kept.",
    what="Every stage of the probe runs with a timeout; a stage that raises or exceeds --stage-timeout on "
    "any rank is reported with the ranks and errors, and the results of the earlier stages are kept in "
    "the report and the JSON file.",
    why="A stage that hangs in the probe (init, a link, a collective) will hang in training too: the "
    "failing stage and ranks say where to look.",
    example="stage collectives failed on ranks 0, 1, 2: Timed out waiting 20000ms for recv operation",
    fix="Look at the ranks named and the stage: init points to addresses and interfaces, links to the "
    "network between the named nodes, collectives to a rank that stalls.",
    references=(_TORCH_DIST,),
))
