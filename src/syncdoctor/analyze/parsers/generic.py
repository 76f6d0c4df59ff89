"""A line that looks like an error although no parser understood it. Pure: no I/O.

Called by :func:`syncdoctor.analyze.parsers.parse_line` only when every other parser found nothing in the
line, so the report is never silent about an error it cannot explain: such lines become ``ERROR_LINE``
events, quoted by the fallback rule (A028) and listed as unexplained. It errs towards quiet on lines that
merely mention errors: configuration dumps (``error_file: <N/A>``), counters (``0 errors``), Python frames
(``File "x.py", line 3``), a C++ backtrace's frames (``frame #0: c10::Error::Error(…)``: the message they
follow is the error), NCCL INFO chatter, warnings about deprecated options and c10d's IPv6 lookup warning (``The IPv6 network
addresses of (node0, 29500) cannot be retrieved (gai error: -2 …)``, printed by every client of a host without
IPv6; the store parser reads it when the host is no host name).
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["ASSERT_MACRO", "CONNECTIONS_DROPPED", "GPU_COMM_TIMEOUT", "GPU_FINDINGS", "HOST_NETWORK_DOWN", "NIC_FINDINGS",
           "NO_PROGRESS", "OPTION_REFUSED", "PLACEMENT_WAIT", "SEARCH_COMMAND", "TYPE_ERROR_WORDS", "parse"]

# words for a failure that carry no error word, each an error line here and read for its category by rules.phrases
# (one list for both): health checkers' and tools' findings on a GPU (NHC, aznhc, gpud, DCGM's diagnostics, GCM,
# nvidia-smi's fields) and on a NIC (mlx5's health poll and firmware commands, EFA's admin queue, a link that flaps,
# HCAs missing, mlxlink's recommendation for a link that is down), a host's network gone (its bond's last link) and a
# host dropping connections (conntrack full, ARP table overflow, a port's listen backlog: ``Possible SYN flooding on
# port 10.1.2.3:29500``)
GPU_FINDINGS = (r"GPU count mismatch|gpu count mismatch|GPU (?:\d+ )?requires (?:a )?reset\b|NaN-value memory elements"
                r"|memory mismatch was detected on GPU|uncorrectable row remap limit|retired (?:pages )?due to DBEs"
                r"|together with a DBE|NvLink errors on GPU\b|GPU \d+ has \d+ links down"
                r"|(?:Reset Required|Drain and Reset Recommended|Remapping Failure Occurred)\s*: Yes\b"
                r"|all links are inActive\b|'s NvLink \d+ is down\b|unsuccessfully written to by GPU\b|needs reset \(detected"
                # NVIDIA's resiliency extension's health checks (``GPU 5: Requires a reset to recover.``, ``GPU 2: NVL
                # link 11 is in DISABLED state``) and the Kubernetes device plugin taking a GPU out (``'nvidia.com/gpu'
                # device marked unhealthy: GPU-3f2a…``, ``Marking device GPU-3f2a… as unhealthy: ERROR_UNKNOWN``)
                r"|GPU \d+: Requires a (?:reset|node reboot) to recover\b|\bNVL link \d+ is in DISABLED state"
                r"|NVLinkWindowHealthCheck: GPU \d+ unhealthy\b|device marked unhealthy: GPU-|Marking device GPU-[\w\-]+ as unhealthy"
                r"|unable to get device handle from UUID: \w+; marking it as unhealthy"
                # Slurm's controller seeing a node report fewer GPUs than before (one fell off its bus)
                r"|gres/gpu count changed on node\b")
NIC_FINDINGS = (r"health compromised|PCI slot is unavailable\b|Will cause a leak of a command resource\b"
                r"|didn't send any completion for admin cmd|ib link flap(?:ping)? detected\b|HCAs found, but expected\b"
                r"|Recommendation\s*: (?:Cable is unplugged|Signal not detected|No partner detected|Bad signal integrity"
                r"|Module temperature shutdown|Unsupported cable)\b"
                # the resiliency extension's NIC checks (``NIC device mlx5_3: Port state changed from 4: ACTIVE to 1: DOWN``,
                # ``GPU 3 NIC/IB mlx5_3 link down counter has been incremented: 0 -> 1``); libfabric's Slingshot (CXI)
                # provider on a node whose NIC is not up (its retry handler daemon not running, no netdev for the device)
                r"|Port state changed from \d: ACTIVE to \d: DOWN\b|\blink down counter has been incremented\b"
                r"|CXI retry handler not running\b|CXI netdev not found\b")
# a watchdog of the training's own saying a rank made no progress past its bound (a hang; what held it is elsewhere):
# NVIDIA's resiliency extension's rank monitor (``[Cycle 0] Did not get subsequent heartbeat. Waited 300.00 seconds.``,
# ``Section 'step' has been open for 612.45 seconds. Timeout is 600.00 seconds.``, ``Was out of section for …``) and its
# launcher (``Training cycle #3 made NO progress``, ``EARLY TERMINATION: 3 consecutive training cycles without
# progress``), AXLearn's watchdog (``step has not incremented in the last 600 seconds``, ``Exit due to no progress
# during training``), TransformerEngine's userbuffers (comm-GEMM overlap) waiting out UB_TIMEOUT for a peer's flag
# (``[userbuffers.cu:userbuffers_fp16_sum_inplace_gpu_rr_rs:285] [3] Reduce-scatter: SM 2 [0]: expecting 1457 got
# 1456``, ``pushrecv: CE deadlock DETECTED``)
NO_PROGRESS = (r"Did not get (?:initial|subsequent) heartbeat\b|\bSection '[^'\n]{1,60}' has been open for [\d.]+ seconds\. "
               r"Timeout is\b|\bWas out of section for [\d.]+ seconds\. Timeout is\b|\bmade NO progress\b"
               r"|\bconsecutive training cycles without progress\b|\bstep has not incremented in the last \d+ seconds\b"
               r"|\bExit due to no progress during training\b|\[userbuffers\.cu:\w{1,80}:\d{1,6}\][^\n]{0,80}: expecting \d+ got \d+"
               r"|\bCE deadlock DETECTED\b")
# a command that refused an option, at a line's start (getopt's ``hostname: invalid option -- 'I'``, ``unrecognized
# option '--x'``)
OPTION_REFUSED = r"^[\w.\-/]{1,80}: (?:invalid option -- '?\S'?|unrecognized option '?-)"
# an engine waiting a minute or more for Ray to place its workers (vLLM's ``Waiting for creating a placement group of
# specs for 150 seconds. specs=[…]. Check `ray status` …``; its first notices, at 10 and 30 seconds, are no failure)
PLACEMENT_WAIT = r"\bWaiting for creating a placement group of specs for (?:[6-9]\d|\d{3,7}) seconds\b"
# DeepEP's kernels and NVSHMEM's proxy and IBGDA waiting out their bound for a peer (an error of no category: the threads
# behind the held cases found a library bug or the RDMA setup, not a late rank)
GPU_COMM_TIMEOUT = (r"\bDeepEP\b[^\n]{0,80}\btimeout(?: for\b| \(|[,:]|\s*$)|\breceived timeout signal from GPU thread"
                    r"|\bibgda_poll_cq timeout\b")
# a library's assertion macro that failed (ggml's ``GGML_ASSERT: ggml-backend.c:226: offset + size <= …``)
ASSERT_MACRO = r"\b[A-Z][A-Z0-9]{1,15}_ASSERT: "
HOST_NETWORK_DOWN = r"now running without any active interface|link status definitely down"
# a shell that did not find a program: bash's ``bash: orted: command not found`` (a launcher's remote shell), dash's
# ``/bin/sh: 1: torchrun: not found``
SHELL_NOT_FOUND = r": command not found\b|\bsh: (?:line )?\d{1,6}: [^:\n]{1,200}: not found\b"
# a call the job's backend refuses, naming the backend (``Function argument device_ids not supported for the selected
# backend gloo``, ``ProcessGroupGloo does not support reduce_scatter``, SageMaker's ``SMDDP does not support: ReduceOp``):
# the process's own error, read by the phrase table, and no report of a communication that failed (timeline)
BACKEND_REFUSAL = r"\bnot supported for the selected backend\b|\b(?:ProcessGroup\w+|Backend \w+|SMDDP|smddp) does not support:? \w"
# a Python TypeError's or AttributeError's words without their class (cut away by a paste, or a logger's message of the
# exception: ``'NoneType' object is not subscriptable``, ``'Trainer' object has no attribute 'x'``), at a line's start
# or after a stamp or a prefix
TYPE_ERROR_WORDS = r"(?:^\W{0,4}|[\s\]|>:])'\w{1,60}' object (?:is not\b|has no attribute '\w)"
CONNECTIONS_DROPPED = r"table full, dropping packet|neighbou?r table overflow|Possible SYN flooding on port"
# JAX on a TPU slice waiting for its other hosts (``UserWarning: TPU backend initialization is taking more than 60.0
# seconds. Did you run your code on all TPU hosts?``): an error line although a warning
_TPU_HOSTS_WAITED = r"\bTPU backend initialization is taking more than\b"
_ERROR = re.compile(
    r"(?:\b(?:[A-Z]\w*(?:Error|Exception)|Exception occurred|error|ERROR|Error|FATAL|[Ff]atal|[Ff]ailed|FAILED|[Ff]ailure|[Aa]borted|"
    r"[Kk]illed|Segmentation fault|core dumped|Traceback)\b|\|[A-Z]{2,8}_(?:ERROR|FATAL)\||\bexit(?:ed)?(?: with)?(?: code|code|status)[:= ]+-?[1-9]|"
    r"\breturn code\s*[=:]?\s*-?[1-9]|\bSIG(?:KILL|SEGV|ABRT|BUS|ILL|FPE)\b|terminate called|"
    # libc++'s (macOS, clang builds) words for libstdc++'s ``terminate called``; c10's and gloo's failed checks
    r"terminating (?:with|due to) uncaught exception|\benforce fail\b|"
    + ASSERT_MACRO + r"|"
    # ENOMEM in a library's words (libfabric's EFA provider: ``… err: Cannot allocate memory (-12)``), and libfabric's
    # completion error (``<warn> err: 5, message: Invalid address``)
    r"\bCannot allocate memory\b|\berr: -?\d{1,5}, message: |"
    # ENOSPC and EDQUOT in a warning's words (a library shrinking what it asked for: ``… exceeds device max_mr_size,
    # shrink it to 68719476736: No space left on device [28]``)
    r"\bNo space left on device\b|\bDisk quota exceeded\b|"
    # a check's words on a line of their own (aws-ofi-nccl: ``NET/OFI Unexpected number of remote rails for dev 0.
    # Expected 3 but got 2``)
    r"\b[Ee]xpected [\w.\-]{1,40} but got [\w.\-]{1,40}|"
    # (oneCCL's level between bars: ``|CCL_ERROR|``); the words of a failure on a line without an error word
    # (a runtime's own wording)
    r"\b(?:[Aa]ccess|[Pp]age|[Pp]rotection|[Bb]us|[Mm]emory|GPU|[Dd]evice) fault\b|\b[Oo]ut of memory\b|"
    # (Windows' words for a segfault, and its other structured exceptions by their codes: ``Caught Win32 exception
    # 0xc0000005: Access violation.``, ``… 0xc06d007f.`` a function a DLL loaded late does not have)
    r"\b[Aa]ccess violation\b|\b[Ee]xception 0x[cC]0[0-9a-fA-F]{6}\b|"
    r"\b[Aa]ddress already in use\b|\b[Tt]oo many open files\b|\bNo route to host\b|\b[Nn]etwork is unreachable\b|\b[Uu]ncorrectable\b"
    # an RDMA stack that sees no device: ibv_devinfo's words, libibverbs's provider that does not match the kernel's
    r"|\bNo IB devices found\b|\bdoes not support the kernel ABI\b"
    # libibverbs with no provider library for the NIC (a container without libmlx5: ``Warning: no userspace
    # device-specific driver found for /sys/class/infiniband_verbs/uverbs0``): RDMA unusable there
    r"|\bno userspace device-specific driver found\b"
    # a multi-line exception's message on its own line (Accelerate's ``Cannot apply desired operation due to shape
    # mismatches.`` below ``DistributedOperationException:``)
    r"|\bdue to shape mismatch(?:es)?\b"
    # Level Zero's and the Unified Runtime's error codes (Intel GPUs: ``zeMemOpenIpcHandle, code:
    # ZE_RESULT_ERROR_INVALID_ARGUMENT``), and CUDA's driver API's where no GPU parser took them (a refused allocation),
    # whose underscores hide the word from the others
    r"|\b(?:ZE|UR)_RESULT_ERROR_[A-Z_]{3,40}\b|\bCUDA_ERROR_[A-Z_]{3,40}\b"
    # a shell that did not find a program; an engine's workers that Ray cannot place
    r"|" + SHELL_NOT_FOUND + r"|" + PLACEMENT_WAIT +
    # a command that refused an option
    r"|" + OPTION_REFUSED +
    # a spawned child that ran the script's top level again (no ``if __name__ == '__main__':``): the message's own
    # line under its bare ``RuntimeError:``
    r"|\bfinished its bootstrapping phase\b"
    # DeepSpeed's launcher refusing its --include or --exclude against the hostfile (``No slot 2 specified on host
    # work1``, ``specificied`` in the releases of 2023)
    r"|\bNo slot '?\d{1,4}'? specifi\w{0,4}ed on host\b"
    # a path or a module that is not there (``bash: line 0: cd: /home/user/project: No such file or directory`` from a
    # launcher's remote shell on a node without that directory, ``/usr/bin/python3: No module named deepspeed``: the
    # nodes' environments differ)
    r"|\bNo such file or directory\b|\bNo module named\b"
    # OpenMP's hint under its error #15 (two runtimes loaded into one process), its error's line cut by a paste
    r"|\bmultiple copies of the OpenMP runtime have been linked\b"
    # Ray's worker finding no raylet registered at the address it found for its node (at INFO level)
    r"|\bwhile we can not find the matched Raylet address\b"
    # a check's words without an error word (``hidden_states.shape=(2, H) | local_num_tokens=4 | Mismatched shape``)
    r"|\bMismatched (?:shapes?|sizes?|dtypes?)\b"
    # JAX's warning that a TPU slice's hosts did not all start (a hang at the start, no error word; a UserWarning)
    r"|" + _TPU_HOSTS_WAITED +
    # a system call's non-zero errno in a library's words (Open MPI's ``Read -1, expected 131072, errno = 1``)
    r"|\berrno = [1-9]\d{0,3}\b"
    # an RDMA completion's error in any words (``… status 5 and vendor err 249``), and NCCL's topology reader missing a
    # device's attribute in sysfs (``Attribute busid of node nic not found``: a container or platform that hides it)
    r"|\bvendor[ _]err(?:or)?[ =:]{0,3}[1-9]\d{0,4}\b|\bAttribute \w{1,40} of node \w{1,40} not found\b"
    # a TypeError's or AttributeError's words alone on a line (their class cut away or not printed)
    r"|" + TYPE_ERROR_WORDS +
    # MS-MPI's sockets finding none of a peer's addresses inside the netmask the job allows
    r"|\bno endpoint matches the netmask\b"
    # TensorFlow's collective executor aborting (``BaseCollectiveExecutor::StartAbort Internal: …``)
    r"|\bStartAbort\b"
    # a system operation a library says it could not do, in words without an error word (MS-MPI's ``rank 0 unable to
    # connect to rank 19``, ``cannot open shared object file``, ``could not resolve host``)
    r"|\b(?:[Uu]nable to|[Cc]annot|[Cc]ould not) (?:connect|open|create|allocate|resolve|bind|listen|register|map|"
    r"attach|mount|read|write|send|recv|receive|reach|initiali[sz]e|init|load|start|spawn|launch|establish|set up)\b"
    # a system in a Chinese locale (bash, glibc, Python's own messages translated): 错误 "error", 失败 "failed"
    r"|错误|失败"
    # a wait that ran out, in any program's words (``Timed out while waiting for active ethernet core``, ``RPC call to
    # sample_tokens timed out``, ``NCCL collective timeout: WorkNCCL(…)``, ``dispatch NVL receiver timeout, channel: 9``);
    # an option's value is none (``collective timeout: 1800``, ``read timeout to 30 s``)
    r"|\b(?:[Tt]imed|TIMED)[ -]?(?:out|OUT)\b"
    # a library that cannot use the hardware as set up, in its words (NIXL's UCX without CUDA, Mooncake's RoCE GID)
    r"|\bUCX CUDA support was not found\b|\bdetected as host by UCX\b|\bGID is NULL\b"
    # PyTorch's ProcessGroupUCC: its out-of-band exchange through the store failed (``(oob_allgather) Caught exception
    # in Store Operation .. [Socket Timeout]``)
    r"|\bCaught exception in Store Operation\b"
    # an MPI error class on a line of its own (Open MPI's error handler: ``[node-3:12345] *** MPI_ERR_TRUNCATE: message
    # truncated``)
    r"|\bMPI_ERR_[A-Z_]{2,30}\b"
    # Open MPI's MPI_Init failure (``--> Returned "Unreachable" (-12) instead of "Success" (0)``), Hydra not resolving
    # a host, Intel MPI started without its PMI, a library ending the process itself (ProcessGroupMPI's ``Attempted
    # destruction of AsyncWork before work has completed, terminating the program.``)
    r"|\bReturned \"\w[\w ]{0,40}\" \(-?\d{1,4}\) instead of \"Success\"|\bunable to get host address\b"
    r"|\bPMI server not found\b|, terminating the program\b"
    # Open MPI's processes finding another of a different release (oob/usock, oob/tcp: ``usock_peer_recv_connect_ack:
    # received different version from [[63455,1],14]: 2.1.1 instead of 2.1.6``: the host's and a container's)
    r"|\breceived different version from \[\["
    # TensorPipe (torch.distributed.rpc's backend) asked for a transport or channel it does not have, in its words
    # without an error word (``In getTransport at tensorpipe/core/context_impl.cc:147 "unsupported transport ibv"``)
    r"|\bunsupported (?:transport|channel) \w"
    # an absl/gRPC status at a line's start, the way XLA, JAX, torch_xla and gRPC print a failed call's status
    # (``DEADLINE_EXCEEDED: Barrier timed out``, ``ABORTED: Incarnation ID mismatch``, ``FAILED_PRECONDITION: …``)
    # (also right after a glog prefix the scanner leaves on the line, its thread id padded: ``W1205 08:14:40.118822
    # 402230 gpu_cliques.cc:945] FAILED_PRECONDITION: Previous and current job states have different sizes``)
    r"|(?:^\s*|\.(?:cc|cpp|h|py):\d{1,6}\] )(?:INVALID_ARGUMENT|ABORTED|FAILED_PRECONDITION|UNAVAILABLE|DEADLINE_EXCEEDED"
    r"|RESOURCE_EXHAUSTED|INTERNAL|DATA_LOSS): (?=\S)"
    # a program saying it cannot go on (JAX's ``Automatic Distributed initialization can not proceed: slurm is not
    # supported.``)
    r"|\b(?:can ?not|cannot) proceed\b"
    # the kernel's and the NIC drivers' words for a failure without an error word: mlx5's health poll, command
    # timeouts and module events, a TX queue that stopped, EFA's admin queue, an NVSwitch's SXid, the driver and the
    # library apart, PCIe's containment and a GPU not back after a reset, the host's bond, conntrack and ARP tables,
    # a listen backlog overflowing, libibverbs's memlock warning, an RDMA test's own words (``Couldn't register MR``)
    r"|\bCable unplugged\b|\bTX timeout on queue\b|\btransmit timeout\b|\bSXid\b"
    r"|\bAPI mismatch: the client\b|\bDPC: containment event\b|\bnot ready \d+ms after FLR\b"
    r"|\b(?:" + HOST_NETWORK_DOWN + r")\b|\b(?:" + CONNECTIONS_DROPPED + r")\b|\bRLIMIT_MEMLOCK is \d+ bytes\b"
    r"|\bCouldn't (?:get context|register MR|connect to|create QP|modify QP|change QP)\b"
    # the host's storage under a job: the kernel's OOM killer invoked, a file system gone read-only or shut down, an
    # NVMe command timing out, Lustre losing a server, GPFS's own errors (``2026-12-05_03:41:07.123+0000: [E] Node …
    # is being expelled``), a file lock another process holds (Hugging Face's cache: ``The file lock '…' could not be
    # acquired``)
    r"|\binvoked oom-killer\b|\bRemounting filesystem read-only\b|\bI/O \d+ QID \d+ timeout\b"
    r"|\bwas lost; in progress operations\b|^(?:\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d\.\d+[+-]\d{4}: )?\[[EX]\] (?=[A-Z])"
    r"|\bThe file lock '[^']{1,300}' could not be acquired\b"
    # health checkers' verdicts (NHC, aznhc, gpud, DCGM, GCM, the HyperPod and ParallelCluster checks), Flux's job
    # exceptions (severity 0: fatal), Horovod's stall inspector, a scheduler killing the job (PBS, LSF)
    r"|\[FAIL\] |\bHealth check failed\b|\bMarking \w+ [\w.\-]+ offline\b|\bexit_code: ExitCode\.CRITICAL\b"
    r"|\b(?:" + GPU_FINDINGS + r")|\bRecovery action: \d \(|\b(?:" + NIC_FINDINGS + r")"
    r"|\bjob\.exception \w+ type=\w+ severity=0\b|\bis stalled for longer than \d+ seconds\b|" + NO_PROGRESS +
    # a straggler detector's report (the resiliency extension's, through NeMo: ``STRAGGLER DETECTION WARNING: Some GPUs
    # have worse relative performance. Affected ranks: {StragglerId(rank=13, node='node-3')}``); a program's count of
    # the CUDA OOMs it caught (OLMo-core's ``3 CUDA OOM errors thrown.``); libfabric's words for a fabric
    # failure: a peer's NIC that stopped answering (EFA's ``The peer of address fi_addr_efa://… becomes
    # unresponsive``, CXI's hardware return codes ``C_RC_UNDELIVERABLE``, ``C_RC_PTLTE_NOT_FOUND``), a peer speaking
    # another version (``received a packet with invalid protocol version``, ``An incoming packet does NOT have
    # connection ID in its header``), a message bigger than the receive posted (``Message truncated!``), events dropped
    r"|\bSTRAGGLER DETECTION WARNING\b|\bCUDA OOM\b"
    # PyTorch's warning that the nccl backend was asked of a build without NCCL (Windows, macOS, CPU-only wheels:
    # ``UserWarning: Attempted to get default timeout for nccl backend, but NCCL support is not compiled``)
    r"|\bNCCL support is not compiled\b"
    # Volcano's gang scheduler holding a job whose pods cannot all be placed (``4/4 tasks in gang unschedulable``)
    r"|\btasks in gang unschedulable\b"
    # a port a library could not bind, in words without an error word (Ascend HCCL's ``The IP address 10.1.2.3 and
    # port 16666 have already been bound``)
    r"|\b(?:has|have) already been bound\b"
    # a training loop ending its process on a loss that is not finite (MAE's, DeiT's and their heirs' ``Loss is nan,
    # stopping training``, then sys.exit(1): the other ranks wait for it in their next collective)
    r"|\b[Ll]oss is (?:nan|inf|NaN|Inf|-inf), stopping training\b"
    r"|\bbecomes unresponsive\b|\bC_RC_(?!OK\b)[A-Z_]{3,30}\b|\breceived a packet with invalid protocol version\b"
    r"|\bdoes NOT have connection ID in its header\b|\bMessage truncated!|\bEQ \d+ dropped event\b|\bControl EQ drops detected\b"
    r"|\bRX entries exhausted\b|\bInvalid VNI \d+"
    # GPU-initiated communication (MoE expert parallelism): DeepEP's kernels and NVSHMEM's proxy waiting out their
    # bound for a peer (``DeepEP timeout for dispatch receivers, rank 6, …``, ``Warning: DeepEP timeout for barrier,
    # rank 14, dst_rank 3``, ``received timeout signal from GPU thread(s) in nvshmemi_proxy_quiet``, ``[12]
    # ibgda_poll_cq timeout:``); NVSHMEM's error print (``init.cu:386: non-zero status: 7 NVSHMEM requires the same
    # number of PEs on all nodes``), its transports without GPUDirect RDMA (``neither nv_peer_mem, or nvidia_peermem
    # detected. Skipping transport.``), its bootstrap (NCCL's socket code: ``No usable listening interface found``,
    # ``socketStartConnect: exceeded retries (20000)``, ``Connection closed by remote peer``, PEs of other versions);
    # a Kubernetes network policy dropping the job's traffic (Cilium's ``Policy denied DROPPED``), a node without the
    # resource a pod asks for (``Node didn't have enough resource: nvidia.com/gpu, requested: 8, …``)
    r"|" + GPU_COMM_TIMEOUT + r"|\bnon-zero status: -?[1-9]\d{0,3}\b|\bneither nv_peer_mem,? or nvidia_peermem detected\b"
    r"|\bNo usable listening interface found\b|\bexceeded (?:retries|timeouts) \(\d+\)|\bConnection closed by remote peer\b"
    r"|\bUID Bootstrap versions not compatible\b|\bPolicy denied DROPPED\b|\bdidn't have enough resource: "
    # PyTorch's MPI backend given a GPU tensor by an MPI built without CUDA support (ProcessGroupMPI.cpp's check:
    # ``CUDA tensor detected and the MPI used doesn't have CUDA-aware MPI support``)
    r"|\bdoesn't have CUDA-aware MPI support\b"
    # NVSHMEM's own error prints where their words hold no error word (nvshmemx_error.h: NVSHMEMI_NULL_ERROR_JMP's
    # ``ibgda.cpp:1348: NULL value Unable to query pointer information.``, NVSHMEMI_ERROR_PRINT's and _EXIT's
    # ``…/nvshmem_src/src/host/init/init.cu:nvshmemi_check_state_and_init:1067: nvshmem API called before nvshmem_init``)
    # (and its topology step finding no transport that reaches a PE: ``topo.cpp:469: [GPU 1] Peer GPU 0 is not
    # accessible, exiting ...``)
    r"|\.(?:c|cc|cpp|cu|cuh|h):\d{1,6}: NULL value\b|nvshmem[\w./\-]{0,200}\.(?:c|cc|cpp|cu|cuh|h):\w{1,80}:\d{1,6}: "
    r"|\] Peer GPU \d{1,6} is not accessible, exiting\b"
    # the C library aborting on a corrupted heap or buffer (``free(): invalid pointer``, ``malloc(): unsorted double linked
    # list corrupted``, ``*** buffer overflow detected ***: terminated``), a name that does not resolve in Python's words
    # (``socket.gaierror: [Errno -2] Name or service not known``), a process pool whose worker died (``BrokenProcessPool:
    # A process in the process pool was terminated abruptly``), a host out of processes or open files (``bash: fork:
    # retry: Resource temporarily unavailable``, ``cgroup: fork rejected by pids controller``, ``VFS: file-max limit
    # 1048576 reached``), a shell not allowed to raise a limit (``ulimit: max locked memory: cannot modify limit``), the
    # kernel's OOM killer with nothing left to kill, its RCU stall detector, systemd's record of a service that crashed
    # (``Main process exited, code=dumped, status=7/BUS``), multiprocessing started before the main module was guarded
    r"|^(?:free|malloc|realloc|munmap_chunk|malloc_consolidate|corrupted size vs\. prev_size)(?:\(\))?: [a-z]"
    r"|\bbuffer overflow detected \*{0,3}:? ?terminated\b|\bgaierror\b|\bName or service not known\b|\bterminated abruptly\b"
    r"|\bfork: (?:retry: )?Resource temporarily unavailable\b|\bfork rejected by pids controller\b"
    r"|\bfile-max limit \d+ reached\b|\bulimit: [\w ]{1,40}: cannot modify limit\b|\bOut of memory and no killable processes"
    r"|\bdetected stalls on CPUs\b|\bMain process exited, code=(?:dumped|killed), status=\d+/[A-Z]+\b"
    r"|\bAn attempt has been made to start a new process before\b"
    # a GPU too old for the PyTorch installed (``Found GPU0 Tesla K80 which is of cuda capability 3.7. PyTorch no longer
    # supports this GPU because it is too old.``); a cloud taking the machine away (GCE's ``compute.instances.preempted:
    # Instance was preempted.``, ``Instance terminated during Compute Engine maintenance``, AWS Batch's ``Host EC2
    # (instance i-…) terminated.``, Slurm's nodes set down ``with reason=Preempted instance``); HyperPod's job
    # controller finding a node unhealthy or the job hanging
    r"|\bno longer supports this GPU because it is too old\b|\bInstance was preempted\b"
    r"|\bInstance terminated during Compute Engine maintenance\b|\bHost EC2 \(instance [\w-]{1,40}\) terminated\b"
    r"|\bwith reason=(?:Preempted instance|Instance terminated)\b|\bFound unhealthy node\b|\bJob hanging detected by\b"
    r"|=>> PBS: job killed:|\bTERM_[A-Z_]{3,30}: job killed\b"
    # a qualified exception class whose name ends in none of the usual words (``etcd.EtcdConnectionFailed: No more
    # machines in the cluster``, ``etcd.EtcdKeyNotFound: …``): a module path in lower case, then the class
    r"|^(?:[a-z_][a-z0-9_]*\.)+(?!EnforceNotMet\b)[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*: (?=\S)"
    # nccl-tests refusing or ending a run (``Test timeout (120s) common.cu:523``, ``Invalid number of GPUs: 16
    # requested but only 8 were found.``, ``Incompatible NCCL versions. nccl-tests was compiled with NCCL 23007, but is
    # running with NCCL 22809``, ``This test requires GIN support, but …``)
    r"|\bTest timeout \(\d+s\)|\bInvalid number of GPUs: \d+ requested\b|\bIncompatible NCCL versions\b"
    r"|\bThis test requires \w+ support, but\b"
    # a Rust program's panic (TGI's launcher, Dynamo's runtime: ``thread 'main' panicked at launcher/src/main.rs:1384:18:
    # …``), TensorRT-LLM's logger at its critical level (``[TRT-LLM] [C] MpiSession shutdown timeout after 60s; calling
    # MPI_Abort …``), DDP's reducer on a parameter whose gradient hook fired twice (its RuntimeError's text alone)
    r"|\bthread '[^'\n]{1,100}' panicked at\b|\[TRT-LLM\] \[[CE]\] |\bhas been marked as ready twice\b"
    # what the fabric's and the GPUs' tools print when something is wrong, pasted beside a job: ibdiagnet's errors
    # (``-E- Links Check finished with errors``), mlxlink's recommendation for a link that is down, nvidia-smi's fields
    # asking for a reset (``Reset Required : Yes``) and its NVLinks all down, DCGM's NVSwitch link down and failed peer
    # writes, a GPU that needs a reset, Slurm's reason for a node taken out (``Reason=Not responding``, ``Reason=gres/gpu
    # count reported lower than configured``), ethtool's link down
    r"|^\s*-E- |\bReason=(?:Not responding|Node unexpectedly rebooted|Kill task failed|gres/gpu count reported lower"
    r"|[\w:]+ count too low|IB link down|NHC: )|^\s*Link detected: no\b"
    # AWS Neuron's collectives (``CCOM WARN Unable to run multi-instance workload. Ofi plugin is not installed or EFA is
    # not enabled``) and a gRPC call that failed in TensorFlow's or XRT's words (``RPC failed with status =
    # "UNAVAILABLE: Socket closed"``)
    r"|\bCCOM WARN\b|\bRPC failed with status = \"(?:UNAVAILABLE|DEADLINE_EXCEEDED|ABORTED|INTERNAL)\b"
    # torchelastic (2.13+) on a worker stuck in the kernel (``Worker pid=5678 stuck in uninterruptible sleep (D-state) for
    # 300.2s``)
    r"|\bstuck in uninterruptible sleep\b"
    # an exception class named for a wait or an abort, without an error word (PaddlePaddle's ``FSTimeOut: …``,
    # ``FSShellCmdAborted: …``)
    r"|\b[A-Z][A-Za-z0-9]*(?:TimeOut|Timeout|Aborted)(?=: (?![\d.]+(?:[mnu]?s|sec|seconds?|min)?$))"
    r"|\b(?:collective|operation|connection|connect|socket|rendezvous|barrier|RPC|request|handshake|receiver|sender|"
    r"forwarder|recv|send|dispatch|combine|wait|read|write|[Ww]atchdog|heartbeat|job) [Tt]imeout\b"
    r"(?![ ]?(?:[=:(][ ]?\d|\d|(?:to|of|is|set|value|for|in|must|should|can|may)\b|[(]s[)]|s\b|seconds?\b|ms\b))"
    # c10's location of the exception it just printed (the ``what():`` before it lost from a paste)
    r"|^\s*Exception raised from \w"
    # a debugger's backtrace of a process that aborted (``#1  0x… in abort () from /lib64/libc.so.6``)
    r"|#\d{1,3} +(?:0x[0-9a-fA-F]{1,16} in )?(?:__GI_)?(?:abort|raise) \("
    # an error named in CamelCase words (Ascend HCCL's ``Communication_Error_Get_Socket(EI0006)``) and Ascend CANN's
    # error codes (``EI0006``, ``EE9999``), not an option's name in capitals (``TORCH_NCCL_ASYNC_ERROR_HANDLING``)
    r"|[a-z]_Error(?:_[A-Z]|\b)|(?:^|[\s(\[])E[A-Z]\d{4}(?=[\s):\]]|$)"
    # a refused or broken connection, and Python's OSError format (``[Errno 111] Connection refused``)
    r"|\bConnection (?:refused|reset by peer)\b|\bBroken pipe\b|\[Errno [1-9]\d{0,3}\]"
    # the kernel's reports of a CPU or a task that stopped moving (a process stuck in the kernel: a file system, a
    # driver), and its own failures
    r"|\bBUG: |\bsoft lockup\b|\bhard LOCKUP\b|\bblocked for more than \d{1,6} seconds\b|\bKernel panic\b"
    # a disk a process needs with no room left (Ray's monitor of its session's folder: ``… is over 95% full, available
    # space: 0 GB; …``)
    r"|\bis over \d{2,3}% full, available space: \d"
    # PyTorch 1.x's THC check (``THCudaCheck FAIL file=… line=… error=710 : device-side assert triggered``): a CUDA
    # error whose words the GPU parser leaves to this line where they are the program's (an assert, memory)
    r"|\bTHCudaCheck FAIL\b"
    # Open MPI's banners of a failure in words without an error's (help-mpi-runtime.txt, help-mpirun.txt): MPI begun twice
    # or after its end in one process, srun's tasks without PMIx (each its own world of one), CUDA asked of a build
    # without it, mpirun without its prterun
    r"|\bOpen MPI has detected that this process has attempted to initialize\b"
    r"|\bNo PMIx server was reachable, but a PMI1/2 was detected\b"
    r"|\brequested CUDA support with the --mca mpi_cuda_support 1 flag\b"
    r"|\bmpirun command was unable to find an underlying prterun\b"
    # the C library and the C++ runtime aborting a process (heap corruption, a failed allocation)
    r"|\bstack smashing detected\b|\bdouble free\b|\bcorrupted (?:size|top size|double-linked list|unsorted chunks)\b"
    r"|\b(?:malloc|free|realloc)\(\): (?:invalid|corrupted)|\bstd::bad_alloc\b"
    # a program saying it stopped moving (``NCCL operation hung on rank 3``, ``the trainer is stuck``)
    r"|\bhung\b|\b(?:is|are|was|were|got|gets|been|seems?|appears?|remains?) stuck\b(?![-_])"
    # CUDA and the driver refusing to start (cudaErrorInsufficientDriver, cudaErrorNoDevice; nvidia-smi's and
    # PyTorch's words for no GPU or an old driver)
    r"|\bdriver version is insufficient\b|\bno CUDA-capable device\b|\bNo devices were found\b"
    r"|\bdriver on your system is too old\b|\b[Nn]o GPUs? (?:were )?(?:found|available|detected)\b"
    # a thread's exception header (its traceback below may be cut), a process or worker that died, a remote shell's
    # connection closed by the other side, MPI's and MPICH's abort, an illegal instruction (zsh's words too)
    r"|^\s*Exception in thread [^\s:]{1,80}:|\bdied\b|\bclosed by remote host\b|(?:\b|_)Abort\(|\bAbort: "
    r"|\b[Ii]llegal (?:hardware )?instruction\b"
    # Kubernetes: a pod's container failing or its pod removed, and a pod that cannot be scheduled on a GPU node
    r"|\b(?:CrashLoopBackOff|ImagePullBackOff|ErrImagePull|OOMKilled)\b|\bFailedScheduling\b"
    # (``Evicted`` as a pod's status in a table's column or as its reason, not a cache's count of evicted entries)
    r"|(?:^|\s\s)Evicted(?:\s\s|\s*$)|\bReason:\s+Evicted\b"
    r"|\bInsufficient nvidia\.com/gpu\b"
    # an exception line whose type is the bare ``Exception`` (``raise Exception("…")``), behind a prefix no parser
    # knows; MPI's error handler and launchers' words for a process that ended badly; a peer a monitor gave up on
    r"|\bException(?=: )|\bMPI_ERRORS_ARE_FATAL\b|\bBAD TERMINATION\b|\bwill now (?:abort|be terminated)\b"
    # (libfabric's EFA provider refusing its settings: ``… Application will abort().``)
    r"|\b[Aa]pplication will abort\b"
    # (Google's RxDM for GPUDirect-TCPX(O) finding fewer GPU-NIC pairs than GPUs before it stops)
    r"|\bGPUs detected in the PCI tree \d{1,3} is not equal\b"
    # a program's own CUDA check (``GPUassert: misaligned address attn.cu 214``, the common macro's words), PyTorch
    # finding no usable GPU at start-up (``UserWarning: CUDA initialization: CUDA unknown error - this may be due to
    # an incorrectly set up environment``) or built without this GPU's architecture, systemd's failed service
    # (``nvidia-fabricmanager.service: Main process exited, code=exited, status=1/FAILURE``)
    r"|\bGPUassert: |\bCUDA initialization: [^\n]{0,40}\berror\b|\bis not compatible with the current PyTorch "
    r"installation\b|\bstatus=\d{1,3}/FAILURE\b"
    # Open MPI direct-launched by srun without Slurm's PMI (``… but OMPI was not built with SLURM's PMI support and
    # therefore cannot execute.``); srun ending a step by force (``srun: Force Terminated StepId=4817263.0``)
    r"|\bnot built with SLURM's PMI support\b|\bForce Terminated (?:StepId=|job step)"
    # serving engines' and Ray's words for a failure around the job: vLLM's engine core gone (``MPClient: engine core
    # exited unexpectedly``) or a broadcast nobody read (``No available shared memory broadcast block found in 60
    # seconds``: workers stuck), SGLang's ranks diverging or its prefill peer lost, Ray's NCCL hang check, a worker
    # group larger than the cluster, its object store full, a task killed for host memory; Megatron's rerun state
    # machine finding a non-finite value (``Rank 12, node node-3, device 4, iteration 4512: Unexpected result inf``)
    r"|\bengine core exited unexpectedly\b|\bNo available shared memory broadcast block found\b"
    r"|\bNo available block found in \d+ seconds?\b"  # (the same in vLLM 0.5-0.6's words)
    r"|\bFound rank divergence\b|\bLost connection with prefill instance\b|\bPossible NCCL hang detected\b"
    r"|\bbut the cluster only has a maximum of\b|\bobject store is full\b|\bfailed due to oom\b"
    r"|\bUnexpected result (?:nan|inf)\b|\bfound (?:NaN|Inf) in\b"
    # a GPU failing DCGM's or nvidia-smi's health check (rules.phrases reads which)
    r"|\brow remappings? (?:are )?pending\b|\bretired pages? (?:has|have) been detected\b|\bfaulty memory elements\b"
    r"|\bNvLink (?:link|port) \d{1,3} is currently down\b|\bNvLinks are up out of the expected\b"
    r"|\bCRC Flit NvLink errors\b|\bFabric Manager training has not started\b"
    # PaddlePaddle's communication watchdog finding a collective past its timeout (comm_task_manager.cc)
    r"|\bFind timeout (?:init but not start|start but not finish) task\b"
    r"|\b(?:considered|marked) dead\b|\bcommunication timeouts?\b|\blost communication\b|\bOOM[ -]kill"
    # PyTorch's watchdog in its own words when the head of its message is lost (``Process group watchdog thread
    # terminated with exception``, ``Work timeout is detected by watchdog``), a remote shell refusing a login, and
    # NeMo's straggler detection stopping the job
    r"|\bwatchdog thread terminated\b|\btimeout is detected\b|\bPermission denied\b|\bDetected stragglers\b"
    # an exception type named for a failure (``torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:``),
    # gloo's failed check alone, a NaN or Inf a program's own check stopped on, and a server the kernel lost (``nfs:
    # server nas01 not responding, still trying``: the processes reading from it hang)
    r"|\b[A-Z]\w*(?:Failed|Failure)(?=: )|\bEnforceNotMet\b|\b(?:NaN|Inf)s? (?:detected|found|encountered)\b"
    r"|\bloss (?:is|was|became) (?:nan|NaN|inf)\b|\bnot responding\b"
    # Open MPI refusing to start the job (help-orte-rmaps-base.txt, help-orterun.txt, PRRTE's): fewer slots than
    # processes, a program it cannot find or run; and two of its settings that exclude each other (one may be
    # ignored: a file's btl_tcp_if_exclude beside the environment's btl_tcp_if_include)
    r"|\bnot enough slots available\b|\bunable to (?:find the specified executable|launch the specified application)\b"
    r"|\bmutually-exclusive MCA variables\b"
    # (and an allocation too small or not holding the hosts asked for, its daemon not found on a node, its
    # shared-memory backing file without room, a component that did not load, a daemon's connection lost)
    r"|\bnot enough (?:slots|nodes) (?:on the nodes )?in your allocation\b|\bnumber of processes exceeds the allocated\b"
    r"|\bnot included in the current allocation\b|\bnot able to find the executable\b|\bnot enough space for\b"
    r"|\bunable to be opened\b|\bcommunication path was lost\b"
    # MPICH's Hydra and its PMI client ending the job (``one of the processes terminated badly; aborting``, ``[cli_1]:
    # aborting job:``)
    r"|\bterminated badly\b|\baborting job\b"
    # the kernel's NIC drivers reporting a link down (``mlx5_core 0000:3b:00.0 ib0: Link down``, ``i40e …: NIC Link is
    # Down``)
    r"|\bLink (?:is )?[Dd]own\b"
    # ROCm's errors by name (``hipErrorNoBinaryForGpu: Unable to find code object …``) and a GPU driver resetting a hung
    # GPU (``amdgpu 0000:c1:00.0: amdgpu: GPU reset begin!``)
    r"|\bhipError[A-Z]\w+|\bGPU reset\b"
    # Ray's autoscaler unable to place what the job asked for (``Warning: The following resource request cannot be
    # scheduled right now: {'GPU': 8.0}``): the job waits for GPUs the cluster does not have
    r"|\bcannot be scheduled\b"
    # Horovod's coordinator finding the ranks' requests different (``Mismatched data types: One rank had type …``)
    r"|\bMismatched\b[^\n:]{0,80}: One rank\b"
    # the field of a key=value status line that holds what errored (torchft's manager: ``should_commit=False
    # enough_replicas=True, errored='NoneType' object has no attribute 'wait'``), not its empty value (``error=``
    # is an error word already)
    r"|\berrored=(?!(?:None|null|nil|0|false|False)\b|''|\"\"|\[\]|\{\}|\(\)|[\s,;)]|$))"
)
_SPELLED_LEVEL = re.compile(r"\b(?:ERROR|CRITICAL)\b")
# a library that says it is hanging (Cray MPICH: ``MPICH suspects a hang due to completion queue exhaustion``)
_HANG = re.compile(r"\bsuspects a hang\b")
# a command that searches for error words, pasted above what it found (``cat rfm_job.err | grep "error"``, ``$ dmesg
# -T | grep -i xid``): the search's pattern, not an error (grep's own ``grep: …`` messages are not commands)
SEARCH_COMMAND = (r"(?:^\s*(?:\S{0,80}[$#]\s{1,4})?|\|\s*)[ez]?grep(?:\s{1,4}-{1,2}[\w=]{1,20})*\s{1,4}[\"']?[^\n|]{0,40}?"
                  r"(?i:error|fail|fatal|kill|abort|xid|segfault|oom)[^\n]{0,80}$")
_BENIGN = re.compile(
    r"error_file:|\b0 errors?\b(?!:)|\bno errors?\b|errors? ?= ?0\b|^\s*File \"|NCCL INFO|[Dd]eprecat|UserWarning|"
    r"FutureWarning|\bignore_errors\b|on_error|error_handler:\{|\"message\": \{|warnings?\.warn|"
    # libibverbs trying every provider it has a config for, on hosts without most of those NICs (pvrdma, hfi1…): noise;
    # the NIC the job needs failing is told by its user (NCCL's ``No device found``, ``ibv_open_device failed``)
    r"libibverbs: Warning: couldn't load driver|"
    r"ErrorCode\.|retry(?! count| handler| limit)|Retrying|will be retried|Gracefully skipping|"
    # a program that says how it goes on (Megatron's ``… going to sleep for 3 seconds and then re-try``, ``KD LOSS
    # FAILED — falling back to LM loss``, ``Unknown error when binding to port 8000. Attempting to bind to a random
    # available port instead.``): a warning it recovered from, not its failure
    r"\bthen re-try\b|\b[Ff]alling back to\b|\bAttempting to [^\n]{1,60}\binstead\b|^\s*frame #\d+:|network addresses of .{0,300} cannot be retrieved|"
    # ProcessGroupNCCL's note beside a timeout that the Flight Recorder was off (2.6+): no failure of its own
    r"Stack trace of the failed collective not found|"
    # a line that says its error words are expected (vLLM's Ray executor: "If you see error log from logging.cc
    # regarding SIGTERM received, please ignore because this is the expected termination process in Ray.")
    r"\bplease ignore because this is the expected\b|"
    # advice printed at every start (vLLM's ``CUDA graphs can take additional 1~3 GiB memory per GPU. If you are
    # running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.``)
    r"\bIf you are running out of memory, consider\b|"
    # gdb showing a frame whose source it does not have (``78\t../sysdeps/unix/syscall-template.S: No such file or
    # directory.``): the debugger's note, not the process's error
    # (its number taken off as a line number's, ``cat -n``'s form)
    r"^\s*(?:\d+\s+)?\S+\.(?:S|s|c|cc|cpp|cxx|h|hpp|cu|py): No such file or directory\.?\s*$|"
    + SEARCH_COMMAND
)


# warnings that are the failure itself: PyTorch finding no usable GPU at start-up, or built without this GPU's
# architecture (both a ``UserWarning``; what fails next is the program's first use of the GPU)
_WARNED = re.compile(r"CUDA initialization: [^\n]{0,60}\b(?:error|failed|too old)\b|is not compatible with the current PyTorch installation"
                     # (PyTorch asked for the nccl backend's timeout on a build without NCCL: init fails next)
                     r"|\bNCCL support is not compiled\b"
                     r"|\bno longer supports this GPU because it is too old\b"
                     r"|\bfailed due to oom\b"  # (Ray retries the task: the kill happened all the same)
                     # (JAX on a TPU slice whose hosts did not all start the program: a hang at the start)
                     r"|" + _TPU_HOSTS_WAITED)


# a glog line at severity E (error) or F (fatal) from a native program (a fabric daemon, XLA, gRPC):
# ``E0312 10:11:12.123456    1054 fastrak_gpumem_manager.cc:200] Number of GPUs …`` (also with its time cut), and
# abseil's form before InitGoogle, no date and the epoch for a time (libtpu, XLA): ``E0000 00:00:1725383433.302361
# 2870 common_lib.cc:818] …``; NIXL's without any date or time (``E ucx_utils.cpp:582] VRAM memory is detected as host by
# UCX...``); a traceback's lines under torch elastic's prefix of that form begin with a space and
# are not errors of their own
_GLOG_ERROR = re.compile(
    r"(?:^|[\s>|])(?P<sev>[EF])(?:(?:0[1-9]|1[0-2])[0-3]\d|0000|(?=[ ]\w))(?: (?:\d\d:\d\d:\d\d|00:00:\d{10})\.\d{1,9} +\d+)? +"
    r"[\w./\-]{1,200}\.(?:cc|cpp|cxx|c|h|hpp|py|go|rs):\d{1,6}\] (?=\S)"
)


# PyTorch's C++ log at ERROR or FATAL (c10's ``[E528 08:54:10.938727404 ProcessGroupNCCL.cpp:629] …``, ``[E
# ProcessGroupNCCL.cpp:587] …``): its LOG(ERROR), whatever the words after it (the prefix splitter keeps the file;
# also where a paste cut the prefix before its ``]``, the line's words gone)
_NATIVE_FILE = re.compile(r"\.(?:cpp|cc|cxx|cu|c|h|hpp)(?::\d{0,6})?$")
# (not its lines that follow an error the readers read, which a rank that waited prints as much as the one that failed:
# the watchdog taking the process down, the Flight Recorder's dump asked for, or the GIL it could not get for it)
_C10_AFTERMATH = re.compile(r"To avoid data inconsistency|\b(?:signal )?dump(?:ing)?\b|\bdump signal\b"
                            r"|Could not acquire GIL|Stack trace of the failed collective|Terminating the process\b")


# a metric named after an error, with its value (a progress bar's postfix ``MeanSquaredError=0.25``, a logged
# ``error=0.12``): no error of the program's; the words after it are still looked at
_METRIC_VALUE = re.compile(r"=\s?[-+]?(?:\d|nan\b|inf\b)", re.I)
# a setting whose value is a class named after an error, printed as its assignment (CNTK's ``Evaluation criterion:
# errs = ClassificationError``, a ``loss_fn = MeanSquaredError,``): a configuration's words, not an error raised
_ASSIGNED_BEFORE = re.compile(r"\w\s?=\s?$")
_ASSIGNED_AFTER = re.compile(r"\s*(?:[,;)]|$)")


def _assigned(body: str, match: re.Match[str]) -> bool:
    return match.group(0)[:1].isupper() and match.group(0).endswith(("Error", "Exception")) \
        and _ASSIGNED_BEFORE.search(body, max(0, match.start() - 40), match.start()) is not None \
        and _ASSIGNED_AFTER.match(body, match.end()) is not None


def parse(line: Line) -> list[Event]:
    body = line.body
    match = _ERROR.search(body)
    while match is not None and (_METRIC_VALUE.match(body, match.end()) or _assigned(body, match)):
        match = _ERROR.search(body, match.end())
    glog = None if match else _GLOG_ERROR.search(body)
    hang = _HANG.search(body)  # (stands even where the line says it keeps retrying)
    if hang is None and match is None and glog is None and line.severity in ("error", "fatal") and body.strip() \
            and _SPELLED_LEVEL.search(line.text, 0, max(0, len(line.text) - len(body))):
        # a line its program logged at ERROR, the level spelled out in its prefix, whose own words say nothing (a
        # traceback's frame under vLLM's logger prefix, the exception cut off): an error by the program's account,
        # never silence; only the fallback reads it (``logged``), the report does not list it beside a hypothesis.
        # (torch elastic's ``E0724 …]`` traceback lines are no errors of their own: its failure table is read.)
        return [make_event(Kind.ERROR_LINE, line, data={"word": f"logged at {line.severity.upper()}",
                                                        "message": body.strip()[:300], "logged": True})]
    if hang is None and match is None and glog is None and line.severity in ("error", "fatal") \
            and _NATIVE_FILE.search(line.glog_file) and not _C10_AFTERMATH.search(body):
        # PyTorch's C++ code logged an error (a watchdog's, a store's, a socket's): an error by the program's account,
        # never silence, read by the fallback only (``logged``), its words cut where the body is empty
        return [make_event(Kind.ERROR_LINE, line, data={
            "word": f"logged at {line.severity.upper()}", "logged": True,
            "message": body.strip()[:300] or f"{line.glog_file} logged an error (its words cut)"})]
    # (a line at FATAL, glog's ``F1205 … rpc_client.cpp:212] Check failed: retry_idx < rpc_client_max_retry_times() (60
    # vs. 60)`` among them: the program aborts after it, whatever its words, no retry that went on)
    if hang is None and ((match is None and glog is None)
                         or (_BENIGN.search(body) and not _WARNED.search(body) and line.severity != "fatal")):
        return []
    found = hang or match
    word = found.group(0)[:40] if found else ("glog FATAL" if glog and glog["sev"] == "F" else "glog ERROR")
    place = _RERUN_PLACE.search(body) if "iteration" in body else None  # (the rank and node Megatron's check names)
    origin = Origin(rank=int(place["rank"]), host=place["host"]) if place and line.origin.rank is None else None
    ray = _RAY_WRAPPED.search(body) if "Error(" in body else None
    if origin is None and ray is not None and line.origin.host is None and line.origin.pid is None:
        origin = Origin(host=ray["ip"], pid=int(ray["pid"]))  # (the process and host Ray's wrapper names)
    # (a long line's end too: the words that name its failure may come after what the evidence keeps; the type Ray's
    # wrapper names, whose own traceback follows: rules.fallback places that exception here)
    return [make_event(Kind.ERROR_LINE, line, origin=origin, data={"word": word, "message": body.strip()[:300],
                                                                   **({"tail": body.strip()[-200:]} if len(body) > 400
                                                                      else {}),
                                                                   **({"wraps": ray["type"]} if ray else {})})]


# Ray's wrapper of a task's or an actor's exception, which names where it ran (``ray.exceptions.RayTaskError(
# DistBackendError): ray::WorkerDict.init_model() (pid=516914, ip=10.0.0.7, actor_id=…)``; a node's name where Ray
# was given one, ``ip=dlc4e52btvkgc6cp-master-0``)
_RAY_WRAPPED = re.compile(r"\bRay(?:Task|Actor)Error\((?P<type>[\w.]{1,120})\): ray::[\w.]{1,200}\(\) \(pid=(?P<pid>\d{1,10}), "
                          r"ip=(?P<ip>[0-9A-Fa-f.:]{3,45}|[A-Za-z0-9][\w.\-]{0,252})[,)]")
# Megatron's rerun state machine naming where its check failed: ``Rank 12, node node-3, device 4, iteration 4512: …``
_RERUN_PLACE = re.compile(r"\bRank (?P<rank>\d{1,6}), node (?P<host>[\w.\-]{1,253}), device \d{1,3}, iteration")
