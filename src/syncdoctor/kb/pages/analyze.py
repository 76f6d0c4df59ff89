"""Finding pages of the analyze area (A codes): one per root-cause category of ``syncdoctor analyze``.

Each rule is registered at import time and used as ``RULE.finding(...)``. ``CATEGORY_RULES`` maps the
category names of :class:`syncdoctor.analyze.model.Category` (the pages' own names) to these pages.
"""

from __future__ import annotations

from collections.abc import Mapping

from syncdoctor.kb.findings import Severity
from syncdoctor.kb.registry import Rule, register

__all__ = [
    "CATEGORY_RULES",
    "COLLECTIVE_DESYNC",
    "COLLECTIVE_STALLED",
    "DUPLICATE_GPU",
    "IB_MODIFY_QP",
    "IB_RETRY_AT_INIT",
    "IB_RETRY_LATE",
    "INTERFACE_MISMATCH",
    "INTERFACE_MISSING",
    "LAGGING_RANK",
    "LOOPBACK_ADDRESS",
    "MEMLOCK",
    "NETWORK_PARTITION",
    "PEER_ACCESS",
    "RANK_CRASHED",
    "RANK_NEVER_JOINED",
    "RANK_OOM",
    "SHM",
    "SOCKET_FALLBACK",
    "UNEXPLAINED_TIMEOUT",
    "WATCHDOG_STUCK",
]

_PT = "pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
_TSG = "NCCL docs, Troubleshooting: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"

LAGGING_RANK = register(Rule(
    code="A001",
    name="lagging-rank",
    severity=Severity.ERROR,
    summary="One rank never reached the collective the others were waiting in; they timed out because of it.",
    what=(
        "Compares how far each rank got: the sequence numbers in watchdog timeouts and 'last enqueued' status "
        "lines, Flight Recorder dumps and watch events. A rank whose last sequence number is lower than the one "
        "the others timed out in, a rank named by a desync report or monitored_barrier, or a rank with no error "
        "of its own while every other rank timed out, is the culprit; the ranks that merely timed out are not."
    ),
    why=(
        "A collective completes only when every member enters it. When one rank is stuck (slow data loading, "
        "a deadlock, a frozen process, an infinite loop) every other rank blocks in the collective until its "
        "timeout fires, and all of them print the same timeout. Their logs all look guilty; the culprit's log is "
        "usually the quiet one."
    ),
    example=(
        "ranks 0-2: 'Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, ...)'; "
        "rank 3: 'last enqueued NCCL work: 1579'. Rank 3 never reached collective 1580."
    ),
    fix=(
        "Look at what the culprit rank was doing (py-spy dump --pid PID on that host, its last log lines): data "
        "loading, a rank-dependent branch that skips a collective, I/O, or a frozen process. Collect Flight "
        "Recorder dumps (TORCH_NCCL_DUMP_ON_TIMEOUT=1) or run syncdoctor watch to see it live next time."
    ),
    references=(_PT, "docs/analyze.md", "pytorch-builtins.md section 4.3 (desync report)"),
))

COLLECTIVE_DESYNC = register(Rule(
    code="A002",
    name="collective-desync",
    severity=Severity.ERROR,
    summary="Ranks called different collectives (or different sizes) at the same sequence number.",
    what=(
        "Same sequence number, different operation or tensor sizes across ranks: in watchdog timeouts "
        "(OpType/NumelIn), Flight Recorder entries, TORCH_DISTRIBUTED_DEBUG=DETAIL fingerprints, or gloo's "
        "'Received data size doesn't match expected size' check. The odd rank(s) out are the culprits."
    ),
    why=(
        "Collectives are matched by order, not by name. If one rank skips a collective or calls another one, "
        "every later collective pairs up wrongly: the job hangs (the ranks wait for each other in different "
        "operations) or crashes on a size check. It looks like a network hang but is a program bug."
    ),
    example="rank 7 WorkNCCL(SeqNum=80078, OpType=BROADCAST) vs rank 3 WorkNCCL(SeqNum=80078, OpType=ALLREDUCE).",
    fix=(
        "Find the code path where the culprit rank diverges (a rank-dependent if around a collective, an "
        "early exit, uneven data so one rank runs an extra step, a different model config). Every rank must "
        "issue the same collectives in the same order with the same shapes."
    ),
    references=(_PT, "pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp", "NVIDIA/nccl#1409"),
))

RANK_CRASHED = register(Rule(
    code="A003",
    name="rank-crashed",
    severity=Severity.ERROR,
    summary="A rank died (exception, exit, signal) and the others failed because their peer was gone.",
    what=(
        "A rank's own failure, not caused by communication: a Python exception that is not a communication "
        "error, a fatal signal, or torchrun's failure record with SIGKILL/SIGSEGV/SIGABRT. The 'connection "
        "closed/reset by peer' errors of the other ranks that follow it are the cascade, not the cause."
    ),
    why=(
        "When one process dies, its sockets close and every rank that talks to it fails with 'Connection "
        "closed by peer' or times out. Those secondary errors are many and look alike; the first, local failure "
        "is the one to fix."
    ),
    example=(
        "rank 3: 'RuntimeError: CUDA error: an illegal memory access'; ranks 0-2: '[...pair.cc:553] "
        "Connection closed by peer [10.0.0.4]:29500'."
    ),
    fix=(
        "Fix the error on the culprit rank (its traceback is in the evidence). Exit code -9 (SIGKILL) without a "
        "traceback usually means the kernel OOM killer or the scheduler: check `dmesg -T | grep -i kill` and the "
        "host's memory."
    ),
    references=("pytorch/pytorch torch/distributed/elastic/multiprocessing/errors/__init__.py", "NVIDIA/nccl#1232"),
))

RANK_OOM = register(Rule(
    code="A004",
    name="rank-out-of-memory",
    severity=Severity.ERROR,
    summary="A rank ran out of GPU memory; the others then failed waiting for it.",
    what="'CUDA out of memory' (torch.OutOfMemoryError) on one rank before the others' timeouts or peer errors.",
    why=(
        "The rank that hits OOM leaves the training step (or dies); the others block in the next collective "
        "and time out, so the job looks like a communication failure."
    ),
    example="rank 5: 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 5; ...)'.",
    fix=(
        "Reduce memory on that rank: smaller micro-batch, activation checkpointing, or "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation. Check whether that rank gets "
        "longer sequences or more data than the others."
    ),
    references=("https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf",),
))

NETWORK_PARTITION = register(Rule(
    code="A005",
    name="network-partition",
    severity=Severity.ERROR,
    summary="A host lost its network: every rank timed out, and only that host could not reach the store.",
    what=(
        "Every rank timed out in the same collective (no rank is missing, none crashed), and store connections "
        "failed or timed out only on some hosts, or peer errors all point at one host. Those hosts are cut off."
    ),
    why=(
        "A pulled cable, a down switch port or a firewall change stops all traffic to a host: every collective "
        "that crosses it hangs, on every rank, so the timeouts alone cannot name the host."
    ),
    example="all ranks 'Timed out waiting 5000ms for recv operation'; host2's agent: 'waitForInput ... timed out'.",
    fix=(
        "Check the link of the named host (ip link, carrier, switch port, cabling) and reachability from the "
        "others; `syncdoctor probe` measures every pair. Restore the link and restart the job from a checkpoint."
    ),
    references=("docs/analyze.md",),
))

SOCKET_FALLBACK = register(Rule(
    code="A006",
    name="nccl-socket-fallback",
    severity=Severity.WARNING,
    summary="NCCL on some hosts uses sockets (NET/Socket) while the others use InfiniBand/RoCE.",
    what="Per host, the network NCCL chose ('Using network Socket' vs 'Using network IB', 'NET/IB : No device found').",
    why=(
        "Mixed transports make the whole job run at socket speed, and mismatched transports between two ranks "
        "can hang or fail at connection time. It usually means the IB devices are missing or filtered on that host."
    ),
    example="node3: 'NCCL INFO NET/IB : No device found.' and 'Using network Socket'; others 'Using network IB'.",
    fix=(
        "On the named host check the IB devices and NCCL's view of them (ibv_devices, NCCL_IB_HCA, "
        "NCCL_IB_DISABLE, NCCL_NET, the container's /dev/infiniband and rdma devices)."
    ),
    references=("nccl-facts.md section 3 (Net selection)", _TSG),
))

INTERFACE_MISMATCH = register(Rule(
    code="A007",
    name="interface-mismatch-between-hosts",
    severity=Severity.ERROR,
    summary="Some hosts advertise an address on another interface or subnet than the rest of the job, or one on "
            "a NIC that reaches its own link only (a link-local 169.254.x.x or fe80:: address).",
    what="The bootstrap/socket interface and address each host's NCCL or gloo advertised, compared across hosts; "
         "a link-local address on a physical or cloud NIC (fe80::…%ib0, 169.254.x.x: a metadata bridge, an IPv6 "
         "tunnel), advertised or dialled ('socketStartConnect: Connect to fe80::…%ib1<17943> failed').",
    why=(
        "Peers connect to the advertised address. An address on a second NIC, a management network or a "
        "container bridge may not be reachable from the other hosts, so connections time out or are refused."
    ),
    example="node0-2: 'Bootstrap : Using eth0:10.1.0.x<0>'; node3: 'Bootstrap : Using eth1:192.168.5.3<0>'.",
    fix=(
        "Pin the interface on every host: export NCCL_SOCKET_IFNAME=eth0 (NCCL; a prefix, '=eth0' for exact) and "
        "GLOO_SOCKET_IFNAME=eth0 (gloo; exact names), using an interface that exists on every host."
    ),
    references=("nccl-facts.md section 1 (NCCL_SOCKET_IFNAME)", "nccl-facts.md section 2 (GLOO_SOCKET_IFNAME)"),
))

LOOPBACK_ADDRESS = register(Rule(
    code="A008",
    name="advertised-loopback-address",
    severity=Severity.ERROR,
    summary="A host advertised an address no other host can reach: 127.0.0.1 (its hostname resolves to "
            "loopback) or a container or virtual interface's (docker0, veth, virbr; its link-local address too).",
    what=(
        "gloo's connect errors with remote=[127.0.0.1] across hosts (they name the peer that advertised it: "
        "with two hosts, the other one; the dialling side's local=[127.0.0.1] says nothing about itself, "
        "since gloo does not bind the socket it dials from), gloo's 'Using the loopback address as "
        "fallback', NCCL 'Bootstrap : Using lo:127.0.0.1' / docker0 / veth / virbr (a veth's link-local "
        "fe80:: address too), and NCCL connects that fail to a peer's loopback address. A link-local address on "
        "a physical NIC is A007."
    ),
    why=(
        "Gloo picks its address by resolving the hostname. Many distributions map the hostname to 127.0.0.1 or "
        "127.0.1.1 in /etc/hosts, so each host advertises its own loopback address and the others connect to "
        "themselves: 'Gloo connectFullMesh failed ... Connection refused, remote=[127.0.0.1]'."
    ),
    example="'ERROR failed to connect, ... rank=1, size=4, local=[127.0.0.1]:8323, remote=[127.0.0.1]:19861'",
    fix=(
        "export GLOO_SOCKET_IFNAME=<the NIC on the cluster network, e.g. eth0> (and NCCL_SOCKET_IFNAME) on every "
        "host, or make the hostname resolve to the host's cluster address in /etc/hosts."
    ),
    references=("pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupGloo.cpp createDefaultDevice",
                "observed-here.md (classic cross-machine gloo failure)"),
))

INTERFACE_MISSING = register(Rule(
    code="A009",
    name="socket-interface-missing",
    severity=Severity.ERROR,
    summary="No usable socket interface: GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME names one that does not exist "
            "on some hosts, or a container has none NCCL can use.",
    what=(
        "gloo's 'Unable to find address for: IFNAME' (enforce fail in device.cc) on the ranks of a host, or NCCL's "
        "'NCCL WARN Bootstrap : no socket interface found' (also 'NET/Socket : no interface found'), with the "
        "value from NCCL's 'NCCL_SOCKET_IFNAME set by environment to ...' line when NCCL_DEBUG=INFO printed it; "
        "NCCL 2.27's 'address with family 0 is neither AF_INET(2) nor AF_INET6(10)' and NCCL <= 2.3's 'Socket "
        "creation failed : Address family not supported by protocol' (no interface found, so no address)."
    ),
    why=(
        "The ranks of that host cannot create their process group, so they exit at start-up (PyTorch surfaces "
        "NCCL's failure as 'ncclInvalidUsage ... Last error: Bootstrap : no socket interface found'), and the "
        "other ranks wait in the store for addresses that never come ('wait timeout ... keys: /default_pg/...')."
    ),
    example=(
        "host1 ranks 2, 3: 'Unable to find address for: ens5'; ranks 0, 1: 'DistStoreError: wait timeout'. "
        "NCCL: 'NCCL INFO NCCL_SOCKET_IFNAME set by environment to nosuch0', then '[2026-11-29 19:38:22] "
        "vm:709:709 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found'."
    ),
    fix=(
        "Use an interface name that exists on every host (ip -br link; `syncdoctor check` lists the candidates), "
        "set the variable per host, or unset it and let NCCL choose (GLOO_SOCKET_IFNAME takes exact names; "
        "NCCL_SOCKET_IFNAME takes prefixes such as 'eth' or 'en', '=eth0' for an exact name, '^docker' to exclude)."
    ),
    references=("nccl-facts.md section 2 (GLOO_SOCKET_IFNAME)",
                "nccl-facts.md section 1 (NCCL_SOCKET_IFNAME); nccl:src/bootstrap.cc, src/misc/socket.cc"),
))

RANK_NEVER_JOINED = register(Rule(
    code="A010",
    name="rank-never-joined",
    severity=Severity.ERROR,
    summary="Some ranks never joined the process group: the others waited in the store for them.",
    what=(
        "Store waits that timed out naming the keys of missing ranks ('wait timeout after 5000ms, keys: "
        "/default_pg/0//cpu//0/2'), a store-based barrier with fewer workers than the world size, or gloo "
        "connections refused by a peer that is not listening."
    ),
    why="A rank that crashed or hung before init_process_group completed blocks everyone's initialisation.",
    example="ranks 0, 1: 'torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/2'",
    fix="Read the named ranks' own logs: they failed or stalled before joining (import error, wrong interface, "
        "a host that never started).",
    references=("pytorch/pytorch torch/distributed/distributed_c10d.py",),
))

IB_RETRY_AT_INIT = register(Rule(
    code="A011",
    name="ib-retry-exceeded-at-init",
    severity=Severity.ERROR,
    summary="IB/RoCE 'transport retry counter exceeded' (status 12) right after init: the NICs cannot reach each other.",
    what=(
        "NCCL WARN 'Got completion from peer ... status=12 ... vendor err 129' before any collective completed "
        "(shortly after Init COMPLETE)."
    ),
    why=(
        "Status 12 is a timeout of the reliable connection. When it happens on the first transfers, packets "
        "never arrive at all: wrong RoCE GID index, traffic class/PFC not configured on the switch, or no route "
        "between rails. A longer timeout will not help."
    ),
    example="'NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)'",
    fix=(
        "Check the GID (NCCL >= 2.21: unset NCCL_IB_GID_INDEX; older: the RoCEv2 IPv4 index from show_gids), "
        "NCCL_IB_TC and the switch QoS, and that every NIC can reach the peer's NIC (ib_write_bw between the two "
        "hosts; NCCL_CROSS_NIC=0 on rail-optimised fabrics). Do not expect NCCL_IB_TIMEOUT to fix it."
    ),
    references=("NVIDIA/nccl#426", "NVIDIA/nccl#1664", "nccl-facts.md section 3 (IB completion error)", _TSG),
))

IB_RETRY_LATE = register(Rule(
    code="A012",
    name="ib-retry-exceeded-late",
    severity=Severity.ERROR,
    summary="IB/RoCE 'transport retry counter exceeded' (status 12) after training ran: a bad link or congestion.",
    what="The same completion error, after collectives had completed (late in training).",
    why=(
        "Traffic worked, then a link flapped, degraded (symbol errors) or became congested enough that "
        "retransmissions ran out. NCCL aborts the communicator and the job fails."
    ),
    example="'NET/IB: Got completion from peer 10.0.0.7<43021> with status=12 opcode=0 len=0 vendor err 129 ... hca mlx5_3'",
    fix=(
        "Inspect the named HCA and its peer: port state and rate, counters (symbol_error, link_downed, "
        "port_rcv_errors), cabling and switch. If the fabric is healthy but congested, raise the timeout within "
        "its valid range 0-31: export NCCL_IB_TIMEOUT=22 (about 17 s per try, ~2 minutes with the default 7 "
        "retries; values like 60 or 90 are invalid)."
    ),
    references=("nccl-facts.md section 1 (NCCL_IB_TIMEOUT range 0-31)", "NVIDIA/nccl#902", "pytorch/pytorch#81628"),
))

IB_MODIFY_QP = register(Rule(
    code="A013",
    name="ib-modify-qp-failed",
    severity=Severity.ERROR,
    summary="NCCL could not bring up an IB queue pair (ibv_modify_qp failed).",
    what="NCCL WARN 'Call to ibv_modify_qp failed with 22 Invalid argument' (GID index) or '... with 110' (rails).",
    why="Without a connected queue pair NCCL cannot use the NIC; init fails or hangs.",
    example="'Call to ibv_modify_qp failed with 22 Invalid argument, on dev mlx5_0:1, ... local GID index 3'",
    fix=(
        "errno 22: unset NCCL_IB_GID_INDEX (NCCL >= 2.21 picks it) or set the RoCEv2 IPv4 index; errno 110: the "
        "NICs are not cross-rail connected, export NCCL_CROSS_NIC=0."
    ),
    references=("nccl-facts.md section 1 (NCCL_IB_GID_INDEX, NCCL_CROSS_NIC)", "NVIDIA/nccl#2013"),
))

SHM = register(Rule(
    code="A014",
    name="nccl-shm-failure",
    severity=Severity.ERROR,
    summary="NCCL (or a DataLoader worker) could not use /dev/shm: the segment could not be created or backed.",
    what="NCCL WARN 'failed to extend /dev/shm/nccl-XXXX to N bytes', 'unlink shared memory ... failed', the "
         "older 'Error while creating shared memory segment ...' / 'Call to posix_fallocate failed', or a worker "
         "the launcher reports dead of SIGBUS (a page of a shared mapping that could not be backed).",
    why="/dev/shm is too small (Docker's default is 64 MB) or systemd removed the segment (RemoveIPC).",
    example="'Error: failed to extend /dev/shm/nccl-Fs7rW9 to 9637892 bytes'",
    fix="Run the container with --shm-size=1g (or --ipc=host); for unlink failures set RemoveIPC=no in "
        "/etc/systemd/logind.conf.",
    references=("nccl-facts.md section 3 (/dev/shm)", _TSG),
))

MEMLOCK = register(Rule(
    code="A015",
    name="nccl-memlock-failure",
    severity=Severity.ERROR,
    summary="NCCL could not register memory with the NIC: the locked-memory limit (ulimit -l) is too low.",
    what="NCCL WARN 'Call to ibv_reg_mr failed with error Cannot allocate memory' or 'ibv_create_qp failed'.",
    why="RDMA needs pinned memory; with a small memlock limit registration fails and NCCL cannot use IB.",
    example="'Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory'",
    fix="Set '* soft memlock unlimited' and '* hard memlock unlimited' in /etc/security/limits.conf, or "
        "`docker run --ulimit memlock=-1`; check `ulimit -l` inside the launcher (srun/mpirun) too.",
    references=("nccl-facts.md section 3 (ibv_reg_mr)", "NVIDIA/nccl-tests#206"),
))

DUPLICATE_GPU = register(Rule(
    code="A016",
    name="nccl-duplicate-gpu",
    severity=Severity.ERROR,
    summary="Two ranks on the same host use the same GPU.",
    what="NCCL WARN 'Duplicate GPU detected : rank A and rank B both on CUDA device X' (2.30+: 'Multiple Ranks "
         "are using the same GPU').",
    why="Each rank must own a GPU; NCCL refuses to build the communicator.",
    example="'Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000'",
    fix="Call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) before init_process_group, and check "
        "CUDA_VISIBLE_DEVICES per rank.",
    references=("nccl-facts.md section 3 (Duplicate GPU)",),
))

PEER_ACCESS = register(Rule(
    code="A017",
    name="nccl-peer-access-unsupported",
    severity=Severity.ERROR,
    summary="CUDA peer-to-peer access is not supported between two GPUs NCCL wanted to connect directly.",
    what="NCCL WARN \"Cuda failure 217 'peer access is not supported between these two devices'\".",
    why="GeForce cards, ACS/IOMMU settings or VMs block P2P; NCCL fails instead of falling back.",
    example="\"Cuda failure 217 'peer access is not supported between these two devices'\"",
    fix="export NCCL_P2P_DISABLE=1 (and make sure it reaches every worker), or disable ACS / fix IOMMU on the host.",
    references=("nccl-facts.md section 3 (Cuda failure 217)", "NVIDIA/nccl-tests#287"),
))

WATCHDOG_STUCK = register(Rule(
    code="A018",
    name="watchdog-stuck",
    severity=Severity.WARNING,
    summary="PyTorch's heartbeat monitor killed a rank because its NCCL watchdog thread itself hung.",
    what="'Heartbeat monitor timed out!' or 'ProcessGroupNCCL's watchdog got stuck for N seconds'.",
    why="A CUDA or NCCL call blocked the watchdog (often a GIL or driver hang), so timeouts could not even be "
        "detected on that rank.",
    example="'[PG 0 Rank 25] Heartbeat monitor timed out! Process will be terminated after dumping debug info.'",
    fix="Get stacks of the stuck rank (py-spy dump --native), check the GPU (nvidia-smi, Xid errors in dmesg); "
        "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC raises the limit but does not fix the hang.",
    references=(_PT,),
))

COLLECTIVE_STALLED = register(Rule(
    code="A020",
    name="collective-stalled-all-entered",
    severity=Severity.ERROR,
    summary="Every rank of the group entered the same collective and it never completed: the transport or a "
            "GPU is stuck, not a rank.",
    what=(
        "The logs or dumps state the size of the group (NCCL 'Init COMPLETE ... nranks N', Flight Recorder "
        "pg_config), and every member reports the same 'last enqueued' collective #S with 'last completed' below "
        "S (watchdog status lines 'last enqueued work: S, last completed work: S-1', dump-signal lines, Flight "
        "Recorder pg_status, 'Watchdog caught collective operation timeout: WorkNCCL(SeqNum=S, ...)'), with the "
        "same operation everywhere. No rank is missing, behind, crashed or calling something else."
    ),
    why=(
        "A collective completes when all members have entered it and the data has moved. When every member "
        "entered #S, nobody is late (A001) and nobody called something else (A002): what is stuck is underneath. "
        "Either the data does not flow (a cut, flapping or misconfigured link, the wrong interface or HCA, an MTU "
        "black hole, a firewall letting the bootstrap through but not the data), or the collective never ran on "
        "a GPU because the stream is held: a kernel ahead of it that does not end, a hung or faulted GPU (Xid)."
    ),
    example=(
        "'[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, "
        "NumelIn=1048576, ...)' and 'failure detected by watchdog at work sequence id: 6 PG status: last enqueued "
        "work: 6, last completed work: 5' on every rank of a 1-rank (or 4-rank) group; the Flight Recorder dump "
        "agrees (last enqueued 6, last completed 5)."
    ),
    fix=(
        "Run `syncdoctor probe` between the hosts of the group to measure the links and the collectives; check "
        "NCCL_SOCKET_IFNAME / NCCL_IB_HCA (and GLOO_SOCKET_IFNAME) select the interfaces that carry the data; look "
        "for a GPU stuck ahead of the collective (nvidia-smi, Xid errors in dmesg, py-spy dump --native of a rank "
        "while it hangs). `syncdoctor watch` reports the same situation live as W104 transport-hang."
    ),
    references=(_PT, "pytorch-builtins.md section 4.1 (watchdog status lines)", "syncdoctor explain W104",
                "syncdoctor probe (docs/probe.md)"),
))

UNEXPLAINED_TIMEOUT = register(Rule(
    code="A019",
    name="unexplained-collective-timeout",
    severity=Severity.WARNING,
    summary="Every rank timed out in a collective, and the logs do not say which rank or link caused it.",
    what="Timeouts on all known ranks with no missing rank, crash, mismatch or network error to blame.",
    why="All ranks entered the collective, so it is either a desync the logs do not show or a transport hang.",
    example="all ranks: 'Timed out waiting 5000ms for recv operation to complete'.",
    fix="Re-run with Flight Recorder dumps (TORCH_NCCL_DUMP_ON_TIMEOUT=1, or syncdoctor watch) and analyze them "
        "together with the logs; run syncdoctor probe to test the links.",
    references=("pytorch-builtins.md section 1 (Flight Recorder)",),
))

GPU_ERROR = register(Rule(
    code="A021",
    name="gpu-error",
    severity=Severity.ERROR,
    summary="A GPU failed on one rank: a CUDA error, an illegal memory access, an uncorrectable ECC error or an Xid.",
    what=(
        "'CUDA error: an illegal memory access was encountered', NCCL WARN \"Cuda failure 700 ...\", 'uncorrectable "
        "ECC error encountered' (CUDA_ERROR_ECC_UNCORRECTABLE), 'unhandled cuda error', a kernel 'NVRM: Xid' line, "
        "or a watchdog that 'terminated with exception: CUDA error'. The rank or host whose line shows it is named."
    ),
    why=(
        "A faulted GPU leaves its process unable to run any kernel: its collectives never start, its peers time out "
        "or lose the connection, and a retry on the same GPU fails again. ECC and Xid errors are hardware (or "
        "driver) faults of that node; an illegal memory access is a bug or a hardware fault on that rank."
    ),
    example="'[rank12]: Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC "
            "error encountered'",
    fix=(
        "On the named host: `nvidia-smi -q -d ECC,PAGE_RETIREMENT`, `dmesg -T | grep -i xid`, and run the job "
        "without that node (it is a node-level fault) until the GPU passes `dcgmi diag`. For an illegal memory access "
        "that follows the code, not the node, run with CUDA_LAUNCH_BLOCKING=1 to find the kernel."
    ),
    references=("https://docs.nvidia.com/deploy/xid-errors/", _PT),
))

NCCL_VERSION_MISMATCH = register(Rule(
    code="A022",
    name="nccl-version-mismatch",
    severity=Severity.ERROR,
    summary="The hosts of one job run different NCCL versions (or plugins).",
    what="The 'NCCL version X' lines differ between hosts of the same job, or one host loads a network plugin "
         "('NET/Plugin: Loaded net plugin …', 'Plugin Path : …/libnccl-net.so') where another uses NCCL's "
         "internal one ('Could not find: libnccl-net.so. Using internal network plugin.').",
    why="NCCL's wire protocol and tuning differ between releases: communicators fail to connect, hang at init "
        "or crash in the first collective when the hosts disagree.",
    example="'NCCL version 2.14.3+cuda11.7' on one host and 'NCCL version 2.19.3+cuda12.1' on the others",
    fix="Install the same PyTorch/NCCL build (and NCCL net plugin) on every node: the same container image.",
    references=(_TSG,),
))

PEER_UNREACHABLE = register(Rule(
    code="A023",
    name="peer-unreachable",
    severity=Severity.ERROR,
    summary="A process could not connect to the store or to a peer's address: refused, no route, timed out, "
            "aborted, or a MASTER_ADDR that is not an address at all.",
    what=(
        "'connect to ADDR failed : Connection refused' / 'No route to host' / 'Software caused connection "
        "abort', 'The client socket has timed out after Ns while trying to connect to (HOST, PORT)', "
        "'RendezvousConnectionError', a store address that cannot be a host name ('The IPv6 network addresses "
        "of (/root/x.bashrc, 45458) cannot be retrieved'), or an NCCL 'unhandled system error' at "
        "initialisation with nothing more specific. A peer whose own address is loopback or link-local is "
        "A008."
    ),
    why=(
        "Every rank must reach the store (MASTER_ADDR:MASTER_PORT) and then every peer's advertised address. "
        "A firewall, a wrong MASTER_ADDR, a port nobody listens on, or an address that exists only inside one "
        "host or container (Docker's bridge network, a veth pair) make the connect fail or hang until a timeout."
    ),
    example="'[c10d] The client socket has timed out after 60s while trying to connect to (10.0.0.1, 29500).'",
    fix=(
        "Run `syncdoctor check` on each host (it tests the route and TCP reachability of MASTER_ADDR:MASTER_PORT) "
        "and `syncdoctor probe`; set NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME to the interface the hosts share; "
        "run containers with --network=host; open the ports between the nodes."
    ),
    references=("nccl-facts.md section 2 (interface selection)", _TSG),
))

RENDEZVOUS_TIMEOUT = register(Rule(
    code="A024",
    name="rendezvous-or-store-timeout",
    severity=Severity.ERROR,
    summary="Not every rank joined: the store or the rendezvous timed out waiting for the others.",
    what=(
        "'DistStoreError: Timed out after N seconds waiting for clients. 1/4 clients joined.', 'Timed out "
        "initializing process group in store based barrier (world_size=8, worker_count=4)', "
        "'RendezvousTimeoutError'. How many joined is quoted; which ranks are missing, when the inputs say."
    ),
    why="The process group needs every rank. Ranks that never started, started with another world size or "
        "master address, or crashed before init_process_group leave the others waiting until the timeout.",
    example="'torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/4 clients joined.'",
    fix=(
        "Check that every node started the job with the same --nnodes/--nproc-per-node/world size and "
        "MASTER_ADDR:MASTER_PORT, and read the logs of the ranks that did not join (they usually failed earlier). "
        "`syncdoctor probe` shows who joined and when."
    ),
    references=(_PT,),
))

RANK_KILLED = register(Rule(
    code="A025",
    name="rank-killed",
    severity=Severity.ERROR,
    summary=("A worker was killed from outside: SIGKILL (exit code -9 / 137), most often the host's out-of-memory "
             "killer, or its launcher was stopped by a signal (the scheduler, a closed terminal, a user)."),
    what=(
        "torchrun's 'failed (exitcode: -9) local_rank: N' or 'Signal 9 (SIGKILL) received by PID', DeepSpeed's "
        "'exits with return code = -9', mpirun's 'exited on signal 9 (Killed)', MPICH's 'EXIT CODE: 9', a container "
        "'OOMKilled', with no error of the worker's own; or only the launcher's own signal (torchrun's 'Received "
        "Signals.SIGTERM death signal, shutting down workers', DeepSpeed's 'Main process received SIGTERM'): the job "
        "was ended from outside."
    ),
    why="SIGKILL cannot be caught: the process leaves no traceback. The kernel's OOM killer (host RAM, not GPU "
        "memory), a container memory limit or the scheduler (time or memory limit) are the usual senders.",
    example="'ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 14447)'",
    fix=(
        "On that host: `dmesg -T | grep -i -e oom -e killed`, the container's memory limit, the scheduler's "
        "accounting. Reduce host memory: fewer DataLoader workers, load checkpoints shard by shard or with "
        "mmap/low_cpu_mem_usage, pin less memory; raise the container's memory limit. Where the launcher itself was "
        "signalled: the scheduler's record of the job (sacct, `kubectl describe pod`), its time limit, and nohup or "
        "tmux for a launcher started from a terminal."
    ),
    references=(_PT,),
))

IB_COMPLETION = register(Rule(
    code="A026",
    name="ib-completion-error",
    severity=Severity.ERROR,
    summary="An InfiniBand/RoCE completion failed with an error other than a retry timeout (local protection, "
            "flush, remote access...).",
    what="NCCL WARN 'NET/IB : Got completion from peer ... with error 4' (or status 5, 10...), 'vendor err N'.",
    why=(
        "Status 4 (local protection) usually means the NIC could not access the GPU's memory: GPUDirect RDMA "
        "blocked by PCIe ACS or the IOMMU, or a memory registration problem; 5 (work request flushed) follows "
        "an earlier error on the same queue pair; 10 (remote access) a bad registration on the peer."
    ),
    example="'NET/IB : Got completion from peer 10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81'",
    fix=(
        "Disable PCIe ACS on the hosts (or set the IOMMU to passthrough), check nvidia-peermem / dmabuf support; "
        "as a workaround NCCL_NET_GDR_LEVEL=LOC (no GPUDirect RDMA). For status 5, look for the first error."
    ),
    references=("nccl-facts.md section 1 (IB errors)", "NVIDIA/nccl#928"),
))

IB_PORT_DOWN = register(Rule(
    code="A027",
    name="ib-port-or-device-down",
    severity=Severity.ERROR,
    summary="An InfiniBand port went down or the HCA failed on a host (async port error, catastrophic error).",
    what="NCCL WARN 'NET/IB : Got async event : port error' / 'local catastrophic error', 'ibv_get_async_event "
         "failed', a port whose state is not ACTIVE.",
    why="The link under the job failed: every process of that host loses its IB connections; the others see "
        "retry-exceeded errors (12) or time out.",
    example="'NET/IB : Got async event : port error'",
    fix="Check the host's HCA and cable: `ibstat` (State: Active), `ibdiagnet`, the switch port; run without the "
        "node until it is fixed.",
    references=("nccl-facts.md section 1 (IB errors)",),
))

UNRECOGNISED = register(Rule(
    code="A028",
    name="unrecognised-error",
    severity=Severity.WARNING,
    summary="The inputs show an error that no rule of syncdoctor explains; it is tied to whatever the lines name.",
    what=(
        "Lines that look like errors (an exception, 'error', 'failed', a signal, NCCL WARN, a non-zero exit) and "
        "that no rule turns into a diagnosis. The first of them is quoted, with the rank, host, pid, local rank, "
        "GPU or peer address it names."
    ),
    why="A failure the tool does not know yet is still a failure: the answer says what was read, so nothing "
        "is hidden behind 'no root cause'.",
    example="'WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers'",
    fix=(
        "Read the quoted lines first. Collect more: every rank's full log (torchrun --log-dir, or --tee 3), "
        "NCCL_DEBUG=INFO, Flight Recorder dumps (TORCH_NCCL_DUMP_ON_TIMEOUT=1), the hosts' kernel logs (dmesg -T), "
        "and run `syncdoctor analyze` on all of it together."
    ),
    references=(_PT,),
))

PORT_IN_USE = register(Rule(
    code="A029",
    name="port-in-use",
    severity=Severity.ERROR,
    summary="A port the job must listen on was taken on a host: the c10d store's MASTER_PORT (or the rendezvous "
            "port), or the port NCCL binds for its sockets.",
    what=(
        "'The server socket has failed to listen on any local network address … Address already in use' (errno "
        "98), 'DistNetworkError: … address already in use', NCCL's 'Call to bind failed : Address already in "
        "use'."
    ),
    why=(
        "Only one process can listen on a port. Two jobs on one node with the default 29500 (or a hard-coded "
        "MASTER_PORT), a second torchrun --standalone, srun starting the launcher once per task, or the processes "
        "of an earlier attempt that are still alive hold it, and the store never starts: every rank's init fails "
        "or waits for it."
    ),
    example="'[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
            "already in use).'",
    fix=(
        "Find what holds it (`ss -ltnp | grep PORT`) and stop it (orphans of a killed run: `pkill -f train.py` on "
        "that host); give every job its own MASTER_PORT (torchrun --master-port, or one derived from "
        "SLURM_JOB_ID; --rdzv-endpoint host:0 picks a free one); start one launcher per node."
    ),
    references=("pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp", "NVIDIA/nccl src/misc/socket.cc"),
))

_RULES = (
    LAGGING_RANK, COLLECTIVE_DESYNC, RANK_CRASHED, RANK_OOM, NETWORK_PARTITION, SOCKET_FALLBACK,
    INTERFACE_MISMATCH, LOOPBACK_ADDRESS, INTERFACE_MISSING, RANK_NEVER_JOINED, IB_RETRY_AT_INIT, IB_RETRY_LATE,
    IB_MODIFY_QP, SHM, MEMLOCK, DUPLICATE_GPU, PEER_ACCESS, WATCHDOG_STUCK, COLLECTIVE_STALLED, UNEXPLAINED_TIMEOUT,
    GPU_ERROR, NCCL_VERSION_MISMATCH, PEER_UNREACHABLE, RENDEZVOUS_TIMEOUT, RANK_KILLED, IB_COMPLETION, IB_PORT_DOWN,
    UNRECOGNISED, PORT_IN_USE,
)
# analyze's categories are named after their pages (syncdoctor.analyze.model.Category)
CATEGORY_RULES: Mapping[str, Rule] = {rule.name: rule for rule in _RULES}
