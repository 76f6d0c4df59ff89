"""NCCL's own failures: IB retry-exceeded (at init vs late), queue-pair setup, /dev/shm, memlock,
duplicate GPUs, peer access; and PyTorch's heartbeat monitor. Pure: no I/O.

IB status 12 (transport retry counter exceeded, vendor error 129 on mlx5) right after init means the
NICs never reached each other (GID, traffic class, routing): a longer NCCL_IB_TIMEOUT will not help.
Late in training it means a bad or congested link, where a longer timeout (within 0-31) can.
"At init" is decided by: no collective completed before the error (status lines), or the error came
within ``INIT_WINDOW_S`` seconds of ``Init COMPLETE`` on the same host's clock.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import replace

from syncdoctor.analyze.model import Category, Event, Hypothesis, Kind
from syncdoctor.analyze.rules.common import attribute, evidence_of, fmt_ranks, hypothesis, writer_hosts
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, Timeline

__all__ = ["INIT_WINDOW_S", "ib_retry_exceeded", "local_nccl_failures", "watchdog_stuck"]

INIT_WINDOW_S = 300.0
_RETRY_STATUSES = (12, 13)


def _phase(tl: Timeline, errors: list[Event]) -> tuple[str, str]:
    """("init" | "late" | "unknown", why)."""
    completed = [s.completed.get(g, 0) for s in tl.ranks.values() for g in s.completed]
    if completed and max(completed) >= 1:
        return "late", f"collectives had completed (up to #{max(completed)}) before the error"
    reached = [seq for s in tl.ranks.values() for seq in s.reached.values()]
    if reached and max(reached) <= 1:
        return "init", "no collective had completed yet"
    if any(e.data.get("stage") == "execution" for e in errors):
        return "late", "HCCL reported it while the operators ran (its task execution stage), after the links were set up"
    wqes = [int(e.data["wqe"]) for e in errors if e.data.get("wqe") is not None]  # UCX: the failed request's index
    if wqes and max(wqes) > 0:
        return "late", (f"the failed work request was number {max(wqes)} on its queue pair: traffic had flowed over it "
                        "before")
    if wqes:
        return "init", "each failed work request was the first on its queue pair"
    changed = sorted({str(e.data.get("event")) for e in tl.of(Kind.IB_ASYNC_EVENT)
                      if e.origin.host in {err.origin.host for err in errors}})
    if changed:
        return "late", (f"the NIC reported {', '.join(changed)} before the errors: the link changed under a "
                        "running job")
    inits: dict[str, list[float]] = defaultdict(list)
    for event in tl.of(Kind.NCCL_INIT):
        if event.origin.host and event.time is not None:
            inits[event.origin.host].append(event.time)
    gaps = []
    for error in errors:
        host = error.origin.host
        if host and error.time is not None and inits.get(host):
            before = [t for t in inits[host] if t <= error.time]
            if before:
                gaps.append(error.time - max(before))
    if gaps:
        gap = min(gaps)
        if gap <= INIT_WINDOW_S:
            return "init", f"the first error came {gap:.0f} s after Init COMPLETE on the same host"
        return "late", f"the first error came {gap:.0f} s after Init COMPLETE on the same host"
    return "unknown", "the logs do not say whether any collective had completed"


def _peer_hosts(tl: Timeline, errors: list[Event]) -> Counter[str]:
    by_addr = {addr: host for host, addrs in tl.host_addrs.items() for addr in addrs}
    votes: Counter[str] = Counter()
    for error in errors:
        peer = by_addr.get(str(error.data.get("peer_addr", "")))
        if peer and peer != error.origin.host:
            votes[peer] += 1
    return votes


# RCCL (ROCm) naming the kernel setting its GPU-to-GPU IPC needs, beside ``hipIpcGetMemHandle failed : invalid
# argument``: ``NCCL WARN Missing "iommu=pt"``
_IOMMU = re.compile(r'Missing "?iommu=pt"?')


def _iommu_faults(tl: Timeline, faults: list[Event]) -> Hypothesis:
    """The kernel's IOMMU refusing a device's DMA (A017): GPUs reaching each other's memory (peer-to-peer, NCCL's
    P2P transport, DataParallel's copies) through an IOMMU that translates their addresses, which a consumer board's
    or a VM's often does; the copies fail, hang, or silently carry wrong data."""
    devices = sorted({str(e.data["pci"]) for e in faults if e.data.get("pci")})
    gpu = any(e.data.get("gpu") for e in faults)
    title = (f"the IOMMU refused {'a GPU' if gpu else 'a device'}'s memory accesses (IO page faults"
             + (f" from {', '.join(devices[:3])}" if devices else "") + "): peer-to-peer between GPUs blocked by it")
    what = ("The kernel logged IO page faults: the IOMMU translates every device's DMA and refused these. GPUs "
            "copying to each other directly (CUDA peer access, NCCL's P2P transport) or a NIC reading GPU memory "
            "(GPUDirect RDMA) go through it, and fail, hang or move wrong data.")
    fix = ("Boot every node with the IOMMU in passthrough (iommu=pt, with amd_iommu=on or intel_iommu=on) or off in "
           "the BIOS where no VM needs it, and disable PCIe ACS on the switches between the GPUs; meanwhile "
           "NCCL_P2P_DISABLE=1 keeps NCCL off direct copies. `nvidia-smi topo -p2p r` and NCCL's p2pBandwidthLatencyTest "
           "check it.")
    where = attribute(faults, tl)
    return hypothesis(tl, Category.PEER_ACCESS, 0.6 if gpu else 0.45, title, what=what, fix=fix, hosts=where.hosts,
                      evidence=evidence_of(faults, "the kernel's IOMMU fault", 12))


def _iommu_not_passthrough(tl: Timeline, warned: list[Event], ipc: list[Event]) -> Hypothesis:
    """RCCL saying the kernel runs without IOMMU passthrough: its IPC between the GPUs of a host fails (A017). RCCL
    prints it at every start on such a host; without a failure of that IPC it is a lead, not the verdict (a network
    plugin's own error beside it is read first)."""
    where = attribute(warned, tl)
    title = ("the host's kernel runs without IOMMU passthrough (iommu=pt), which RCCL's peer access between GPUs "
             f"needs{' (' + where.text + ')' if where.text else ''}")
    what = ("With the IOMMU translating every device access, AMD GPUs cannot map each other's memory through HIP IPC; "
            "RCCL checks the kernel's command line and says so (its IPC handle calls then fail with invalid argument, "
            "or its peer-to-peer transfers hang).")
    fix = ("Add iommu=pt (with amd_iommu=on where the firmware needs it) to the kernel command line of every node "
           "(GRUB) and reboot; meanwhile NCCL_P2P_DISABLE=1 lets RCCL go through host memory.")
    return hypothesis(tl, Category.PEER_ACCESS, 0.85 if ipc else 0.35, title, what=what, fix=fix, hosts=where.hosts,
                      evidence=evidence_of(warned, "RCCL names the kernel setting", 2)
                      + evidence_of(ipc, "the IPC that failed", 2))


def ib_retry_exceeded(tl: Timeline) -> list[Hypothesis]:
    every = tl.of(Kind.IB_COMPLETION_ERROR)
    # HCCL's console EI0013 says retransmissions ran out without the status: beside a completion that gives
    # its status, that one says what failed
    told = any(e.data.get("status") is not None and not e.data.get("assumed") for e in every)
    errors = [e for e in every if e.data.get("status") in _RETRY_STATUSES and not (told and e.data.get("assumed"))]
    if not errors:
        return []
    phase, why = _phase(tl, errors + [e for e in every if e.data.get("stage") and e not in errors])  # (EI0013's stage)
    reporters = sorted({e.origin.host for e in errors if e.origin.host})
    votes = _peer_hosts(tl, errors)
    suspects = [host for host, count in votes.items() if count >= 2 and host not in reporters] or \
        sorted(set(reporters) | set(votes))
    ranks = sorted({e.origin.rank for e in errors if e.origin.rank is not None})
    hcas = sorted({str(e.data["hca"]) for e in errors if e.data.get("hca")})
    peers = sorted({str(e.data["peer_addr"]) for e in errors if e.data.get("peer_addr")})
    detail = f"status {errors[0].data.get('status')} ({errors[0].data.get('status_text') or 'retry exceeded'})"
    vendor = next((e.data["vendor_err"] for e in errors if e.data.get("vendor_err") is not None), None)
    detail += f", vendor error {vendor}" if vendor is not None else ""
    where = f" on {', '.join(suspects)}" if suspects else ""
    if phase == "late":
        category, confidence = Category.IB_LINK_FAILURE, 0.8
        title = f"IB link failure late in training{where}: {detail}"
        what = (f"The NICs reported 'transport retry counter exceeded' after training had been running ({why}): a "
                "link that degraded or flapped, or congestion, ran out the retransmissions.")
        fix = (f"Check the link of {', '.join(hcas) or 'the HCA'}{where} and of peer(s) {', '.join(peers[:4]) or '?'}: "
               "port state and rate, symbol_error/link_downed/port_rcv_errors counters, cable and switch port. "
               "If the fabric is congested but healthy, export NCCL_IB_TIMEOUT=22 (valid range 0-31; 22 is about "
               "17 s per try, ~2 min with NCCL_IB_RETRY_CNT=7; 23 doubles that).")
    else:
        category, confidence = Category.IB_UNREACHABLE_AT_INIT, (0.85 if phase == "init" else 0.6)
        title = f"IB/RoCE NICs cannot reach each other{where}: {detail} right after init"
        what = (f"'Transport retry counter exceeded' on the first transfers ({why}): the packets never arrived. "
                "This is a reachability problem (GID index, traffic class/PFC, routing between rails), not a "
                "slow link, so raising NCCL_IB_TIMEOUT will not fix it.")
        if phase == "unknown":
            what += (" If training had already been running, treat it as a link failure instead: check the link "
                     "counters and consider NCCL_IB_TIMEOUT=22 (valid range 0-31).")
        fix = None
    return [hypothesis(tl, category, confidence, title, culprits=ranks, hosts=suspects, what=what, fix=fix,
                       evidence=evidence_of(errors, "IB completion error", 12))]


def _simple(tl: Timeline, kind: Kind, category: Category, make_title: str, fix: str | None = None,
            confidence: float = 0.9, named: Iterable[int] = ()) -> list[Hypothesis]:
    """One hypothesis over the events of ``kind``: their ranks (and the ranks their messages ``named``)."""
    events = tl.of(kind)
    if not events:
        return []
    own = {e.origin.rank for e in events if e.origin.rank is not None}
    found = attribute(events, tl)  # without ranks: the processes as NCCL's prefix names them (pid, GPU)
    own |= set(found.ranks)  # a process the inputs place by its pid
    ranks = sorted(own | set(named))
    hosts = sorted({e.origin.host for e in events if e.origin.host})
    if not hosts and kind is Kind.DUPLICATE_GPU:
        # two processes on one GPU share a host: the only one the inputs name (NCCL's prefixes), where there is one
        named_hosts = writer_hosts(tl)
        hosts = sorted(named_hosts) if len(named_hosts) == 1 else []
    where = f" on {', '.join(hosts)}" if hosts else ""
    who = f" (ranks {fmt_ranks(sorted(own))})" if own else ""
    if not ranks and found.processes:
        who = f" ({', '.join(found.processes[:3])}{' ...' if len(found.processes) > 3 else ''})"
    return [hypothesis(tl, category, confidence, make_title + where + who, culprits=ranks, hosts=hosts, fix=fix,
                       evidence=evidence_of(events, kind.value.replace("_", " "), 12), processes=found.processes,
                       local_ranks=found.local_ranks)]


def local_nccl_failures(tl: Timeline) -> list[Hypothesis]:
    out = []
    qp = tl.of(Kind.IB_MODIFY_QP)
    if qp:
        errnos = {int(e.data.get("errno") or 0) for e in qp}
        if 22 in errnos:
            fix = ("ibv_modify_qp EINVAL: the forced RoCE GID index is wrong. Unset NCCL_IB_GID_INDEX (NCCL >= 2.21 "
                   "picks the RoCEv2 IPv4 GID itself) or set it to that index (show_gids).")
        elif 110 in errnos:
            fix = "ibv_modify_qp ETIMEDOUT: the NICs are not cross-rail connected; export NCCL_CROSS_NIC=0."
        else:
            fix = None
        who = "NCCL"
        if all(e.data.get("transport") == "nvshmem" for e in qp):  # DeepEP's and NVSHMEM's own IB transport
            who = "NVSHMEM"
            fix = ("NVSHMEM could not move its queue pairs to the ready state (INIT to RTR applies the peer's address, "
                   "the GID index and the traffic class): check NVSHMEM_IB_GID_INDEX (RoCE: the RoCEv2 IPv4 GID, "
                   "show_gids) and NVSHMEM_IB_TRAFFIC_CLASS (RoCE only; unset it on InfiniBand), and that the NICs "
                   "are the ones its transport supports (IBGDA: mlx5).")
        elif all(e.data.get("transport") in ("mooncake", "verbs") for e in qp):  # an RDMA program's own words
            mooncake = all(e.data.get("transport") == "mooncake" for e in qp)
            who = "Mooncake's transfer engine" if mooncake else "an RDMA program"
            fix = ("The queue pair could not reach the ready-to-receive state (it applies the peer's address, GID, "
                   "MTU and queue pair number): ETIMEDOUT there means the peer's NIC is not reachable from this NIC "
                   "(another rail or subnet: pair the NICs that share a network), EINVAL a wrong GID index or MTU" +
                   ("; check the NIC lists both sides use (SGLang: --disaggregation-ib-device), MC_GID_INDEX and "
                    "MC_MTU, and that the handshake gave the peer's NIC path (an empty one is Mooncake's bug)."
                    if mooncake else "."))
        elif all(e.data.get("transport") == "ucx" for e in qp):  # Open MPI's or HPC-X's UCX
            who = "UCX"
            fix = ("UCX could not move its queue pairs to the ready state (the address, GID index, service level and "
                   "traffic class are applied then): check UCX_IB_GID_INDEX (RoCE: the RoCEv2 IPv4 GID, show_gids), "
                   "UCX_IB_SL and UCX_IB_TRAFFIC_CLASS against what the fabric allows (an SL the subnet manager does "
                   "not map is refused with EINVAL), the same on every host.")
        out += _simple(tl, Kind.IB_MODIFY_QP, Category.IB_MODIFY_QP, f"{who} could not connect IB queue pairs", fix)
    out += _simple(tl, Kind.SHM_FAILURE, Category.SHM_EXHAUSTED, "NCCL could not allocate /dev/shm segments")
    memlock = tl.of(Kind.MEMLOCK_FAILURE)
    ucx = bool(memlock) and all(e.data.get("transport") == "ucx" for e in memlock)  # MPI's UCX (Open MPI, MPICH, HPC-X)
    out += _simple(tl, Kind.MEMLOCK_FAILURE, Category.MEMLOCK_LIMIT,
                   "UCX could not register memory with the NIC (memlock limit or registration cache)" if ucx else
                   "NCCL could not register memory with the NIC (memlock limit)",
                   fix=("Raise the locked-memory limit where the ranks start (`ulimit -l unlimited`; limits.conf, the "
                        "container's --ulimit memlock=-1, srun/mpirun propagate it); where it is already unlimited, "
                        "UCX's registration cache is the one that ran out: UCX_IB_REG_METHODS=direct registers each "
                        "buffer instead (slower).") if ucx else None)
    dup = tl.of(Kind.DUPLICATE_GPU)
    if not dup:
        out += _same_gpu_at_init(tl)
    if dup and all(e.data.get("wrong_device") for e in dup):
        out += _wrong_device(tl, dup)
    elif dup:
        pairs = sorted({tuple(e.data.get("ranks") or ()) for e in dup if e.data.get("ranks")})
        title = "two ranks share one GPU" + (f" (ranks {', '.join('/'.join(map(str, p)) for p in pairs)})" if pairs else "")
        # NCCL numbers them in the communicator that found it: the job's ranks where that is the default group
        out += _simple(tl, Kind.DUPLICATE_GPU, Category.DUPLICATE_GPU, title, named={r for p in pairs for r in p})
    peer = tl.of(Kind.PEER_ACCESS)
    iommu = [e for e in tl.of(Kind.NCCL_WARN) if _IOMMU.search(str(e.data.get("message", "")))]
    if iommu:
        out.append(_iommu_not_passthrough(tl, iommu, peer))
        peer = []
    faults = [e for e in peer if e.data.get("source") == "iommu-fault"]
    if faults:
        out.append(_iommu_faults(tl, faults))
        peer = [e for e in peer if e not in faults]
    custom = any(e.data.get("source") == "custom-allreduce" for e in peer)
    transport = peer and all(e.data.get("source") == "p2p-transport" for e in peer)
    if peer and all(e.data.get("source") == "too-many-peers" for e in peer):
        out += _simple(tl, Kind.PEER_ACCESS, Category.PEER_ACCESS,
                       "CUDA refused peer access to one GPU more than its limit of peers (CUDA_ERROR_TOO_MANY_PEERS): "
                       "more GPUs in one process or group than a GPU can map directly",
                       fix=("A GPU can enable peer access to a limited number of others (8 on most): with more GPUs "
                            "in one process (TensorFlow's MirroredStrategy over 10 GPUs), use one process per GPU "
                            "(NCCL then connects them itself), or fewer GPUs per process; NCCL_P2P_LEVEL or "
                            "NCCL_P2P_DISABLE=1 keeps NCCL off direct peer access meanwhile."), confidence=0.6)
        peer = []
    title = ("NCCL's peer-to-peer transport between GPUs of one host failed to set up (" +
             str(peer[0].data.get("message") or "a CUDA call") + "): CUDA peer access or IPC between them"
             if transport else "CUDA peer access is not supported between the GPUs"
             + (" (the engine's custom all-reduce kernel needs it)" if custom else ""))
    out += [] if not peer else _simple(tl, Kind.PEER_ACCESS, Category.PEER_ACCESS, title,
                   fix=("Disable the custom all-reduce (vLLM and SGLang: --disable-custom-all-reduce): it needs CUDA "
                        "peer access between the GPUs, which these GPUs or this machine (PCIe topology, a VM, the "
                        "IOMMU) do not give; NCCL then does the all-reduce.") if custom else
                   ("Check `nvidia-smi topo -p2p r` (ROCm: `rocm-smi --showtopo`) and the IOMMU/ACS settings; in "
                    "containers give the processes one IPC namespace (--ipc=host); NCCL_P2P_DISABLE=1 (or "
                    "NCCL_P2P_LEVEL) makes NCCL use shared memory instead while it is fixed.") if transport else None)
    usage = [e for e in tl.of(Kind.NCCL_ERROR) if "invalid usage" in str(e.data.get("error", "")).lower()
             or e.data.get("code") == "ncclInvalidUsage"]
    if usage and not dup and not any("captured in a graph" in e.text for e in tl.events):
        # NCCL's WARN line (not in the inputs) would say which misuse; two ranks on one GPU is the common one (a
        # graph capture NCCL's build cannot do is its own words' reason, quoted as they are)
        where = attribute(usage, tl)
        out.append(hypothesis(
            tl, Category.DUPLICATE_GPU, 0.45,
            f"NCCL refused the call as invalid usage on {where.text or 'a rank'}: most often two ranks on one GPU",
            where=where,
            what=("ncclInvalidUsage is NCCL rejecting how it was called. Its most common cause in PyTorch jobs is "
                  "two ranks using the same GPU (no torch.cuda.set_device(LOCAL_RANK) before the first collective); "
                  "also a communicator or tensor on another device than the one it was created for. NCCL's WARN "
                  "line says which (NCCL_DEBUG=WARN)."),
            fix=("Call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) before init_process_group (or pass "
                 "device_id=), check CUDA_VISIBLE_DEVICES per rank, and rerun with NCCL_DEBUG=WARN to see NCCL's "
                 "reason."),
            evidence=evidence_of(usage, "NCCL's error", 4)))
    return out


def _wrong_device(tl: Timeline, events: list[Event]) -> list[Hypothesis]:
    """A process on another rank's GPU, in a serving engine's own check (``current device is not 2, but 7``): with
    an out-of-memory error in the inputs, that GPU held two ranks' memory (the cause, the OOM its symptom); alone,
    a lead."""
    pairs = sorted({(str(e.data["expected"]), str(e.data["device"])) for e in events})
    where = attribute(events, tl)
    said = ", ".join(f"GPU {got} instead of GPU {want}" for want, got in pairs[:3])
    oom = bool(tl.of(Kind.CUDA_OOM))
    title = (f"{where.text or 'a process'} ran on another rank's GPU ({said}): two ranks share "
             f"GPU {', '.join(sorted({got for _, got in pairs}))}" + ("; the out-of-memory error that follows is its "
                                                                       "symptom" if oom else ""))
    what = ("The process checked which GPU it runs on and found another than its own: it allocates there, beside the "
            "rank that owns that GPU, so that GPU holds two ranks' memory" + (" and ran out of it." if oom else "."))
    fix = ("Set each process's device before it allocates anything (torch.cuda.set_device(local_rank), or the engine's "
           "gpu id / CUDA_VISIBLE_DEVICES per process), and check that a library the engine loads does not change the "
           "current device and leave it changed.")
    return [hypothesis(tl, Category.DUPLICATE_GPU, 0.85 if oom else 0.45, title, culprits=where.ranks,
                       hosts=where.hosts, what=what, fix=fix, evidence=evidence_of(events, "another rank's GPU", 6),
                       processes=where.processes, local_ranks=where.local_ranks)]


def _same_gpu_at_init(tl: Timeline) -> list[Hypothesis]:
    """Two processes of one host that joined the same communicator on the same GPU (NCCL's Init START, Init
    COMPLETE or Abort COMPLETE lines give the commId and busId): the duplicate GPU NCCL then refuses, seen before
    its message. Lines without a commId (before 2.16, and the abort lines) stand for the communicator by its size,
    when the processes hold different ranks of it."""
    seen: dict[tuple[str, str, str], dict[int, Event]] = defaultdict(dict)
    for event in tl.of(Kind.NCCL_INIT_START, Kind.NCCL_INIT):
        host, bus = event.origin.host, event.data.get("bus_id")
        comm = event.data.get("comm_id") or f"of {event.data.get('nranks')} ranks"
        if host and bus and event.origin.pid is not None:
            seen[(host, str(comm), str(bus))].setdefault(event.origin.pid, event)
    shared = {key: by_pid for key, by_pid in seen.items() if len(by_pid) > 1
              and len({e.data.get("comm_rank") for e in by_pid.values()}) == len(by_pid)}
    if not shared:
        return []
    events = [e for by_pid in shared.values() for e in by_pid.values()]
    ranks = sorted({int(e.data["comm_rank"]) for e in events})
    hosts = sorted({key[0] for key in shared})
    buses = sorted({key[2] for key in shared})
    title = (f"two ranks share one GPU: communicator ranks {fmt_ranks(ranks)} both started on GPU {', '.join(buses)} "
             f"on {', '.join(hosts)}")
    what = ("NCCL's init lines show two processes of one host joining the same communicator with the same GPU "
            "(busId): NCCL refuses it (Duplicate GPU detected, ncclInvalidUsage), or both run on one GPU. The ranks "
            "are numbered in that communicator.")
    return [hypothesis(tl, Category.DUPLICATE_GPU, 0.85, title, culprits=ranks, hosts=hosts, what=what,
                       evidence=evidence_of(events, "the same GPU", 6))]


def _stuck_after_timeout(tl: Timeline, stuck: list[Event]) -> bool:
    """The watchdog got stuck only after a collective had timed out: it hung handling that timeout (dumping,
    aborting the communicator), a consequence. Times are compared as written (hosts' clocks, year-less): the
    watchdog's last progress is its line's time less the seconds it was stuck, with a minute of slack."""
    timeouts = [e.time for e in tl.of(*TIMEOUT_KINDS) if e.time is not None]
    since = [e.time - float(e.data.get("seconds") or 0) for e in stuck if e.time is not None]
    if timeouts and since:
        return min(timeouts) <= min(since) + 60
    # without times: a timeout the same process reported above the monitor's line in the same file (a watchdog
    # already stuck reports no timeout; the rank unknown on one of the two lines counts as the same)
    return any(t.ref.source == e.ref.source and t.ref.line < e.ref.line
               and (None in (t.origin.rank, e.origin.rank) or t.origin.rank == e.origin.rank)
               for e in stuck for t in tl.of(*TIMEOUT_KINDS))


def teardown_hang(tl: Timeline) -> list[Hypothesis]:
    """A native stack (gdb, lldb, py-spy --native) with a thread inside NCCL's abort or destroy: the process hangs
    tearing its communicator down. The abort follows a failure the stack does not show; it then waits itself."""
    frames = tl.of(Kind.NCCL_TEARDOWN_FRAME)
    if not frames:
        return []
    calls = list(dict.fromkeys(str(e.data.get("function")) for e in frames))
    found = attribute(frames, tl)
    who = found.text or "a process"
    title = f"{who} hangs in NCCL's teardown: its stack is inside {' under '.join(calls[:2])}"
    what = ("The native stack shows a thread inside NCCL's abort or destroy (ncclCommAbort, ncclCommDestroy, "
            "PyTorch's ProcessGroupNCCL::abort), not in a collective: the process is stuck tearing its communicator "
            "down. An abort follows a failure (a timeout, an error, a peer gone) that this stack does not show, and "
            "it waits itself: for NCCL's proxy threads, for kernels still running (freeing device memory "
            "synchronizes), and since NCCL 2.16 for the other ranks of the node, so a peer that already died leaves "
            "it waiting.")
    fix = ("Find the failure that started the abort: the first error of any rank, above this stack or in the other "
           "ranks' logs. Known hangs inside the abort: NCCL 2.18 aborting from another thread (fixed in 2.19.1), "
           "NCCL 2.25.1 (fixed in 2.26.2); upgrade NCCL. PyTorch's heartbeat monitor "
           "(TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) ends a process stuck this way; dump every rank's native stack "
           "(py-spy dump --native --pid) to see which peer it waits for.")
    return [hypothesis(tl, Category.WATCHDOG_STUCK, 0.3, title, culprits=found.ranks, hosts=found.hosts,
                       processes=found.processes, local_ranks=found.local_ranks, what=what, fix=fix,
                       evidence=evidence_of(frames, "inside NCCL's teardown", 4))]


def watchdog_stuck(tl: Timeline) -> list[Hypothesis]:
    found = _simple(tl, Kind.HEARTBEAT_TIMEOUT, Category.WATCHDOG_STUCK,
                    "PyTorch's NCCL watchdog itself hung", confidence=0.6)
    if found and _stuck_after_timeout(tl, tl.of(Kind.HEARTBEAT_TIMEOUT)):
        first = found[0]
        return [replace(first, confidence=0.2, root_cause=False,
                        title=first.title + ", after a collective had already timed out (a consequence)",
                        what=("The watchdog stopped making progress only after a collective had timed out: it hung "
                              "while handling that timeout (dumping debug information, aborting the communicator), "
                              "and the heartbeat monitor ended the process. The timeout came first; why that "
                              "collective never completed is the question."))]
    return found
