"""Find the few lines worth parsing in a block of log bytes, fast. Pure: no I/O.

A multi-gigabyte log is mostly NCCL INFO chatter and training output. Instead of decoding and matching
every line, the scanner looks for a short list of *anchors* (substrings such as ``rror`` or ``WARN``) and
returns the start offsets of the lines that contain one. Only those lines are decoded and handed to the
parsers, whose own keywords are each covered by an anchor (a test checks this for every parser's sample
lines).

Three backends find the anchors, the first available one by default:

* ``hyperscan``: Intel's multi-literal matcher (the ``hyperscan`` package, SIMD) finds every anchor in one
  pass over the block, at several GB/s whatever the number of anchors;
* ``libc``: one ``memmem`` pass per anchor over cache-sized windows (ctypes), its cost growing with the
  number of anchors;
* ``python``: the same passes with ``bytes.find``.

They return the same offsets (a property test holds them to each other).
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ANCHORS", "BACKENDS", "Scanner", "hyperscan_available", "libc_memmem_available"]

logger = logging.getLogger(__name__)

# Every line a parser wants contains at least one of these (case-sensitive). hyperscan finds them all in one
# pass (memmem: one pass each, longer ones faster); tests check that every parser's sample lines are found
# through them.
ANCHORS: tuple[bytes, ...] = (
    b"rror",  # RuntimeError, DistBackendError, "error" in NCCL/gloo text, ...errors
    b"RROR",  # ERROR: the launchers' and logging's level names (DeepSpeed's [ERROR] sigkill_handler)
    b"NCCL WARN",
    b"xception",  # Exception: ..., "Exception (either an error or timeout)"
    b"ailed",  # failed/Failed: connectFullMesh, gloo's "ERROR failed to connect", agent "failed (exitcode"
    b"imeout",  # Timeout/timeout: watchdog, desync report, dump signal
    b"imed out",  # Timed out / timed out: gloo, heartbeat, blocking wait, store sockets
    b"atchdog",  # Watchdog caught, failure detected by watchdog, the watchdog got stuck
    b"Traceback",
    b" Using ",  # NCCL Bootstrap / NET/IB / NET/Socket / Using network, gloo loopback fallback
    b"Init COMPLETE",
    b"Init START",  # NCCL 2.16+: ncclCommInitRank comm … rank R nranks N cudaDev D busId B commId C - Init START
    b"Plugin",  # NCCL's net plugin: Loaded net plugin …, Plugin Path : …, Using internal network plugin
    b"NCCL version",
    b"ismatch",  # collective mismatch (DETAIL, gloo size check)
    b"ignal",  # torchrun's closing signal, death signal; exited on signal 9; <Signals.SIGSEGV: 11>; Signal 9 (SIGKILL)
    b"set by environment",  # NCCL INFO: NCCL_SOCKET_IFNAME set by environment to eth0
    b"efused",  # Connection refused: gloo's pair.cc connect [127.0.1.1]:N (1.x), NCCL's old socket.h connect
    b"=   ",  # MPICH/Hydra's BAD TERMINATION banner: =   EXIT CODE: 9, =   PID 92248 RUNNING AT host
    b"Process name: ",  # Open MPI (and Horovod's gloo runner): the first process that exited non-zero
    b"illed",  # Killed / killed (OOM killer, mpirun's "exited on signal 9 (Killed)")
    b"egmentation",  # Segmentation fault
    b"0000000 in ?? ()",  # gdb's innermost frame at address zero: #0  0x0000000000000000 in ?? ()
    b"bort",  # Aborted (core dumped), abort
    b"ailure",  # Cuda failure 700, Test NCCL failure (nccl-tests), Test failure
    b" Pid ",  # nccl-tests' device table: #  Rank  0 Group  0 Pid 3740409 on fengyun416 device  0
    b"losed by",  # NCCL INFO [Service thread] Connection closed by localRank N (no other anchor on the line)
    b"Killing",  # DeepSpeed's launcher: [launch.py:315:sigkill_handler] Killing subprocess 3966
    b"NVRM: Xid",  # the kernel's GPU errors: NVRM: Xid (PCI:0000:3b:00): 79, … GPU has fallen off the bus
    b"AF_INET",  # NCCL 2.27: connecting to address with family N is neither AF_INET(2) nor AF_INET6(10)
    b" -> 2\n",  # NCCL's error return chain (INFO lines, one per frame): system error
    b" -> 3\n",  # internal error
    b" -> 6\n",  # remote error
    b"fit` stopped",  # Lightning: `Trainer.fit` stopped: `max_epochs=3` reached. (the training loop ended)
    b"both on CUDA device",  # NCCL's duplicate GPU check, also quoted without its WARN prefix
    b'): "MainThread"',  # py-spy dump: Thread 12102 (idle): "MainThread", then where it stands
    b"Unable to find",  # gloo: Unable to find address for: eth9 (on its own line when the enforce line wrapped)
    b"ill process",  # the kernel's OOM killer before 4.x: Out of memory: Kill process 123 (python) score …
    b"code 137",  # kubectl exec: command terminated with exit code 137 (128 + SIGKILL); Docker: exited with code 137
    b"Exit Code:",  # kubectl describe pod: "Exit Code:    137" (aligned with spaces)
    b"low on resource",  # the kubelet's eviction: The node was low on resource: memory.
    b"CANCELLED AT",  # slurmstepd: *** JOB 1234 ON node12 CANCELLED AT … DUE TO TIME LIMIT ***
    b"status 137",  # exit status 137
    b"exitcode",  # a torchrun failure record quoted without its table: "exitcode  : -9 (SIGKILL)"
    b"process returned",  # Open MPI: "Primary job terminated normally, but 1 process returned" (wrapped)
    b"non-zero",  # Open MPI: "… detected that one or more processes exited with non-zero status"
    b"noticed that",  # PRRTE wraps "prterun noticed that process rank 3 … exited on" / "signal 9 (Killed)."
    b"sigkill_handler",  # DeepSpeed's launcher: "[launch.py:338:sigkill_handler] Main process received SIGTERM"
    b"ready ranks",  # Horovod's stall inspector: op [ready ranks: 5, 1, 4] (the missing ones are the others)
    b"issing ranks",  # Horovod: op [missing ranks: 1]; "Missing ranks:" then "1: [tensors]"
    b"Horovod",  # a "Missing ranks:" row pasted alone: 3: [..._have_data/HorovodAllreduce_..._0, ...]
    # the words the generic fallback calls an error, where no anchor above is in them
    b"FATAL",
    b"atal",  # Fatal / fatal
    b"SIG",  # SIGKILL, SIGSEGV, SIGBUS… without "signal" on the line
    b"terminate called",  # terminate called after throwing an instance of 'gloo::EnforceNotMet'
    b"core dumped",
    b"xit code",  # exit code / Exit code, "exited with exit code 1"
    b"xit status",
    b"exited with",
    b"return code",
    b"enforce fail",  # gloo's and c10's checks: what():  [enforce fail at …/pair.cc:446] op.preamble.length …
    # the parsers' keywords that hold none of the anchors above (tests/test_analyze_inputs.py holds every
    # parser's keywords to the anchors): the line may carry nothing else
    b"Heartbeat monitor",
    b"blocking wait",
    b"shape tensors",  # Detected mismatch … while verifying shape tensors (DETAIL)
    b"monitoredBarrier",
    b"pair closure",
    b"reset by peer",
    b"connectFullMesh",
    b"loopback",  # gloo: Using the loopback address as fallback…, "loopback address"
    b"Received data size",
    b"preamble",
    b"connect [",  # gloo 1.x pair.cc: connect [127.0.1.1]:35391: Connection refused (refused has its own)
    b"network addresses of",
    b"ncclUniqueId",
    b"waitForInput",
    b"client socket",
    b"store based barrier",
    b"C10d store",
    b"clients joined",
    b"Rendezvous",
    b"Address already in use",
    b"got 0 bytes",
    b"doWait",
    b" WARN ",  # NCCL's WARN without the NCCL word (older prefixes, with or without a file:line before it)
    b"ncclInvalidUsage",
    b"remote process exited",
    b"received by PID",
    b"Main process received",
    b"NET/OFI",  # a network plugin's INFO lines (it is at work in that process): aws-ofi-nccl,
    b"NET/G",  # Google's GPUDirectTCPX and gIB,
    b"NET/FasTrak",  # and TCPXO
    b"Duplicate GPU detected",  # NCCL's duplicate GPU check cut inside the line in a paste (``… : rank 5 and rank 0 b``)
    b" -> 2 ",  # NCCL's return chain with the failed call after the code (2.2x+: ``bootstrap.cc:868 -> 6
    b" -> 3 ",  # ncclSocketConnect()``): the frame names what it was doing
    b" -> 6 ",
    b"Abort COMPLETE",  # NCCL INFO comm … rank R nranks N cudaDev D busId B - Abort COMPLETE: which GPU a rank used
    b"actor is dead",  # Ray: The actor is dead because its worker process has died. Worker exit type: …
    b"EXIT STRING",
    b"returned",  # mpirun: N processes returned non-zero exit codes; NCCL INFO: connect returned …, retrying
    b"EXIT CODE",
    b"RUNNING AT",
    b"oom_kill",
    b"oom-kill",
    b"Xid",
    b"fallen off the bus",
    b"Interrupt",  # KeyboardInterrupt
    b"SystemExit",
    b"out of memory",
    b"ssh: ",  # ssh: Could not resolve hostname …, ssh: connect to host … port 22: …
    b"ssh exited",  # pdsh@node1: node2: ssh exited with exit code 255
    b"Permission denied",
    b"reliably start",  # ORTE was unable to reliably start one or more daemons.
    b"not responding, ",  # nfs: server nas01 not responding, still trying
    b"attempted to initialize",  # Open MPI: … this process has attempted to initialize MPI … more than once
    b"mpi_cuda_support",  # Open MPI: The user requested CUDA support with the --mca mpi_cuda_support 1 flag …
    b"No PMIx server",  # Open MPI under srun: No PMIx server was reachable, but a PMI1/2 was detected.
    b"nfs_",  # a wait channel or kernel frame of a network filesystem (ps state D, a hung task's stack)
    b"nfs4_",
    b"rpc_wait",
    b"ptlrpc_",
    b"ll_file",
    b"cl_sync_io",
    b"fuse_",
    b"ceph_",
    b"mmfs",
    b"beegfs",
    b"specified daemon",
    b"remote daemon",
    b"worker died",  # Ray: A worker died or was killed while executing a task …
    b"device handle",  # nvidia-smi: Unable to determine the device handle for GPU0000:03:00.0: Unknown Error
    b"GPU is lost",
    b"AER:",  # the kernel's PCIe error reports: nvidia 0000:03:00.0: AER: can't recover
    b"peer access",  # custom all-reduce kernels: 'peer access is not supported between these two devices'
    b"shared memory",  # NCCL's shm error repeated by 'Last error:' without its WARN: … shared memory segment …
    b"posix_fallocate",
    b"can't be empty",  # gloo's makeUVDevice(): interface or hostname can't be empty (Windows, libuv)
    b"ss_family",
    b"not reachable",  # DeepSpeed's runner: host=node2 was not reachable via ssh  # gloo's device.cc: ss1.ss_family == ss2.ss_family. 2 vs 10 (after what():, no RuntimeError)
    b"@",  # a shell prompt pasted with its command's output: zeyer@cn-234 ~ % nvidia-smi (textlog reads the host)
    b"Segfault",  # a native crash handler's banner: !!!!!!! Segfault encountered !!!!!!! (vLLM, TensorRT-LLM, …)
    b"send the data in time",  # Ascend HCCL's timeout: Reason: Remote Rank did not send the data in time
    b"127.0.",  # /etc/hosts or getent pasted: "127.0.1.1   node1" (a hostname that resolves to loopback)
    b"Got completion",  # an IB completion error copied without its NCCL WARN prefix (or from a screenshot)
    b"received at time=",  # abseil's signal handler (Ray's workers): *** SIGSEGV received at time=1746566409 on cpu 131 ***
    b"btl_tcp",  # Open MPI's TCP transport: [node1][[22157,1],4][btl_tcp_endpoint.c:626:…] received unexpected process identifier
    b"MASTER_ADDR",  # where the store is: an environment dump or a script's echo (MASTER_ADDR=node01)
    b"aster_addr",  # torchrun's or torch.distributed.launch's --master_addr=10.0.0.1
    b"aster-addr",  # --master-addr (torchrun 2.x spelling)
    b"rdzv",  # --rdzv_endpoint / --rdzv-endpoint node01:29400
    b"TCPStore server at",  # torchelastic 0.x: Rank 1 will conenct to TCPStore server at pod-7:47279
    b"GLOBAL_RANK: ",  # Lightning: initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8 (a process joining: ranks taken twice)
    b"host not found",  # c10d's tcputils before 1.13: the store's host name does not resolve (ValueError or quoted)
    b"access fault by GPU",  # ROCm's runtime: Memory access fault by GPU node-4 (Agent handle: …) on address …
    b"page fault (",  # the amdgpu driver: amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (… for process python3 pid N)
    # words that name a failure whatever printed them (rules/phrases.py reads them where no parser knows the line)
    b" fault",  # a memory access / protection / page fault of a runtime no parser knows ("default" has no space)
    b"No route",  # No route to host
    b"nreachable",  # Network is unreachable
    b"ECC ",  # an uncorrectable ECC error
    b"receive grad",  # DDP's reducer: Parameter indices which did not receive grad for rank 2: 426 427 …
    b"get gradient",  # its DETAIL lines (2.x): [Rank 1] Parameter: enc.lin.bias did not get gradient in backwards pass.
    b"NVRM: GPU at",  # the driver's first report on a GPU: NVRM: GPU at PCI:0000:17:00: GPU-… (the host of that GPU)
    b"unexpectedly disconnected",  # Open MPI: An MPI communication peer process has unexpectedly disconnected.
    b"inbound MPI TCP",  # Open MPI's btl_tcp help text: an inbound connection from an unexpected IP address
    b"kernel ABI",  # libibverbs: Driver bnxt_re does not support the kernel ABI of 6 (the container's rdma-core)
    b"IB devices",  # ibv_devinfo: No IB devices found
    b"E0",  # a glog line at severity E or F (month 01-12): E0312 10:11:12.123456  1054 fastrak_gpumem_manager.cc:200]
    b"E1",
    b"F0",
    b"F1",
    b"complete a TCP connection",  # Open MPI: A process or daemon was unable to complete a TCP connection
    b"ranks joining",  # the Flight Recorder analyser: Not all ranks joining collective, sequence number: 31117
    b"Culprit rank",  # … and its error msg: Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH
    b"allocate memory",  # ENOMEM in a library's words: libfabric's "Unable to write to EQ … Cannot allocate memory (-12)"
    b"talled ranks:",  # Horovod 0.18's stall inspector: "Stalled ranks:" then "6: [horovod_allreduce.0, …]"
    b"ray stop on",  # Ray's autoscaler taking a node down: NodeUpdater: i-0baab…: Running ray stop on 34.222.57.174...
    b"resolve",  # a job script's look-up of the master: nslookup: can't resolve 'master-0': Name does not resolve
    b"server can't find",  # bind's nslookup: ** server can't find master-0: NXDOMAIN
    b"unknown host",  # ping: unknown host master-0
    b"service not known",  # ping: master-0: Name or service not known
    b"didn't join",  # torch's desync report cut from its header: [1] finished collective #11, but didn't join collective #12
    b"Memory on the node (",  # Ray's memory monitor: Memory on the node (IP: 10.20.49.141, ID: …) where the task …
    b"noticed that process rank",  # mpirun's report cut by the paste: mpirun noticed that process rank 0 with
    b"suspects a hang",  # Cray MPICH: PE 4: MPICH WARNING: … MPICH suspects a hang due to completion queue exhaustion
    b"expects same model",  # DDP's check of the ranks' parameters: DDP expects same model across all ranks, but Rank 4 …
    b"appears not to match sizes",  # its older words: params[3] in this process with sizes […] appears not to match …
    b"disagreement",  # DeepSpeed ZeRO-3's: disagreement between rank0 and rank1: …, Detected a disagreement on list length
    b"Assertion `",  # a C assertion that failed: arbiter.c:236  Assertion `(group)->arbiter == (arbiter)' failed
    b" - Init",  # NCCL's communicator line cut after ``- Init`` (before START or COMPLETE): which process, which GPU
    b"EADDRINUSE",  # the store's listen failure broken after its first line: port: 29500, …, name: EADDRINUSE, message: …
    b"Match incoming connection",  # Open MPI's verbose btl_tcp: Match incoming connection from [[j,1],1] ADDR with …
    b"oom-kill:",  # the kernel's summary of an OOM kill: oom-kill:constraint=CONSTRAINT_MEMCG,…,task=python,pid=202779
    b"lost communication with its daemon",  # mpirun: ORTE has lost communication with its daemon located on node:
    b"can't open file",  # the interpreter: python3: can't open file 'train.py': [Errno 2] No such file or directory
    b"captured in a graph",  # NCCL's Last error: NCCL cannot be captured in a graph if either it wasn't built with …
    b"INFO Ring ",  # NCCL's rings: Ring 00 : 39[7] -> 88[0] via direct shared memory, Ring 00 : 3 -> 4 -> 5 (its rank)
    b"Timedout job",  # Intel's xe driver: xe 0000:2b:00.0: [drm] Tile0: GT0: Timedout job: seqno=…, guc_id=0
    b"GPU HANG",  # Intel's i915 driver: i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:…, in python [1234]
    b"Notify record from remote rank",  # Ascend HCCL's EI0002: … has not received the Notify record from remote rank: [24]
    b"specific port[",  # Ascend HCCL: listen on ip[192.168.20.160] and specific port[16666] fail
    b"Transport init error",  # Ascend HCCL: Transport init error! createLink para:rank[7]-…, remoteRank[15]-…
    b"rdma init failed",  # Ascend HCCL: ra rdma init failed, devid[0] ip[192.168.20.148] (the NPU's NIC did not start)
    b"memory pressure",  # Ray's raylet: 2 Workers (tasks / actors) killed due to memory pressure (OOM), … IP: 10.0.167.26)
    b"not yet listening",  # PaddlePaddle's store client: Retry to connect to 10.0.0.1:63314 while the server is not yet listening.
    b"not ready endpoints",  # PaddlePaddle's launcher: not ready endpoints:['10.0.0.2:38149', '10.0.0.2:35087']
    b"_HCA set to",  # NCCL INFO NCCL_IB_HCA set to mlx5_0:1,mlx5_1:1 (net_ib.cc, without "by environment")
    b"invalid value was given",  # Open MPI: WARNING: An invalid value was given for btl_tcp_if_include.  This
    b" (synd 0x",  # UCX: ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 …)
    b"segfault at",  # the kernel: python[3864703]: segfault at 0 ip 00007efeb76ad8a2 sp … error 4 in libvgpu.so[…]
    b"failed to listen",  # the store (2.4+): The server socket has failed to listen on any local network address. port: …
    b"Event Queue overflow",  # libfabric CXI (Slingshot): cxip_cq_eq_progress():531<warn> x4204c1s3b0n0: Cassini Event Queue overflow detected.
    b"as an mlx5 device",  # NVSHMEM's IBGDA: WARN: device erdma_0 is not enumerated as an mlx5 device. Skipping...
    b"health compromised",  # the kernel: mlx5_core 0000:5e:00.0: device's health compromised - reached miss count
    b"INVALID_ARGUMENT",  # abseil's status (libtpu, XLA, gRPC): E0000 00:00:1725383433.302361 2870 common_lib.cc:818] … INVALID_ARGUMENT: …
    b"launched up to operation",  # NCCL RAS's listing (2.24+): Rank 1 has launched up to operation 288686 -- GPU 0 …
    b"GTL library",  # Cray MPICH: MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked
    b"Server listening on: ",  # PaddlePaddle's gen_comm_id_helper.cc:181] Server listening on: 10.19.174.228:6070 successful.
    b"] connect addr=",  # PaddlePaddle's gen_comm_id_helper.cc:120] connect addr=127.0.0.1:6071 failed 1 times with reason: …
    b": command not found",  # a shell that did not find a program: bash: orted: command not found (mpirun's remote shell)
    b": not found",  # dash's words for it: /bin/sh: 1: torchrun: not found (a sudo that reset PATH)
    b"placement group of specs for ",  # vLLM waiting for Ray: Waiting for creating a placement group of specs for 150 seconds
    b" exit with status code ",  # Horovod's gloo runner: Process 0 exit with status code 137.
    b": invalid option -- ", b": unrecognized option ",  # getopt refusing an option: hostname: invalid option -- 'I'
    # an RDMA completion's vendor code; NCCL's topology attribute not found in sysfs; a TypeError's words alone
    b"vendor err", b" of node ", b"' object ",
    b"between ranks",  # Ascend HCCL (EI0005): The arguments for collective communication are inconsistent between ranks:…
    b"ParameterConflict",  # HCCL's plog: [InitChannelStage][ParameterConflict]CMD information tag check fail. local[…]
    b"remainder of ranks",  # Horovod's stall warning: … by subset of ranks and are waiting for remainder of ranks for …
    b"Heartbeat Lost",  # HCCL's heartbeat in MindSpore's console: serverId[10.0.0.1], deviceId[0], Heartbeat Lost Occurred
    b"ranktable is invalid",  # Ascend (EI0004): The ranktable is invalid,Reason:[…]. … [{"server_count":"1",…}] (the table)
    b"be terminated soon (reason: ",  # Ray's autoscaler: Instance k-1a5e (node IP: 10.1.140.199) will be terminated soon (reason: kubernetes-pod-termination)
    b"in the same subnet as remote",  # NCCL's (and Neuron's) socket code: No interface found in the same subnet as remote address fe80::…
    "错误".encode(),  # "error" in a Chinese locale's messages (bash: -c: 行 0: 未预期的符号“(”附近有语法错误)
    "失败".encode(),  # "failed" in a Chinese locale's messages
    b"HcclCommInitRootInfo",  # HCCL INFO, once per rank and communicator: Entry-HcclCommInitRootInfoInner:ranks[4], rank[3], …
    # the sixty-second and sixty-third rounds (r65*, r66*)
    b"No space left",  # ENOSPC in a line with no error word: a warning's "…: No space left on device [28]"
    b"quota exceeded",  # EDQUOT: Disk quota exceeded (a checkpoint or a cache on a shared file system)
    b"reached the barrier",  # XLA's coordination service: # of tasks that reached the barrier: 8/16.
    b"distributed_c10d.py:",  # a py-spy stack pasted without its headers: all_reduce (torch/distributed/distributed_c10d.py:3075)
    b"been revoked",  # salloc: Job allocation 235454 has been revoked. (Slurm took the allocation back)
    b"Engine reset:",  # Intel's xe driver resetting a hung engine: xe 0000:2c:00.0: [drm] GT0: Engine reset: engine_class=ccs
    b"interface version",  # the fabric manager's journal: … driver interface version 535.183.01 don't match with …
    b"CUDA initialization",  # PyTorch's warning that CUDA could not start: … Error 802: system not yet initialized
    b" but got ",  # a check's words without an error word: NET/OFI … Expected 3 but got 2
    b"bootstrap_net_init",  # NVSHMEM's bootstrap: …bootstrap_uid.cpp:bootstrap_net_init:160: No socket interface found
    # the sixty-seventh round (r70*)
    b"^C",  # a terminal's echo of Ctrl-C at the start of a line: ^CProcess Process-1: (the user stopped the launcher)
    b"errno = ",  # a system call's failure in a library's own words: Open MPI's ``Read -1, expected 131072, errno = 1``
    b"endpoint matches the netmask",  # MS-MPI: unable to connect to 10.35.1.20 H20 on port 55198, no endpoint matches …
    b"nable to ", b"annot ", b"ould not ",  # an operation a library could not do: unable to connect, cannot open, …
    # the seventy-second round (r75*)
    b"BUG: ", b"lockup", b"LOCKUP", b"blocked for more than", b"Kernel panic",  # the kernel: a stuck CPU or task
    b"smashing", b"double free", b"corrupted", b"bad_alloc",  # the C library and the C++ runtime aborting a process
    b"hung", b"stuck",  # a program saying it stopped moving: NCCL operation hung on rank 3
    b"nsufficient", b"CUDA-capable", b"devices were found", b"is too old", b"no GPU", b"No GPU",  # CUDA refusing
    b"died", b"roken pipe", b"llegal instruction", b"llegal hardware",  # a death, a remote shell's lost connection
    b"BackOff", b"ErrImagePull", b"Evicted",  # Kubernetes: a failing container, a pod removed
    b"OOM kill", b"stragglers",  # a cgroup's OOM kill reason; NeMo's straggler detection stopping the job
    b"AILED", b"EnforceNotMet", b"NaN", b"oss is nan", b"not responding",  # FAILED in capitals; gloo's check; NaNs
    # the sweep of gloo's sources (r80*): a pair's socket the peer closed, ``Socket (unexpectedly) closed [addr]:port``
    b" closed [",
    # Open MPI refusing to start a job, or warning of two settings that exclude each other (r80*)
    b"enough slots", b"mutually-exclusive MCA",
    # TensorFlow naming the host whose GPU would not start (cuda_diagnostics.cc, after ``failed call to cuInit``)
    b"diagnostic information for host",
    # a path or a module missing on a node (a launcher's remote shell: ``cd: /home/user/project: No such file or
    # directory``; ``python3: No module named deepspeed``)
    b"such file or directory", b"o module named",
    # OpenMP's hint under its error #15 (two runtimes in one process), kept where the paste cut the error's line
    b"copies of the OpenMP runtime",
    # Ray's worker finding no raylet at the address it found for its node (a VPN's, a container's, another NIC's)
    b"matched Raylet",
    # JAX waiting for a TPU slice's other hosts: TPU backend initialization is taking more than 60.0 seconds
    b"initialization is taking more than",
    # Open MPI's notice of a process that called MPI_Abort (help-mpi-api.txt)
    b"MPI_ABORT was invoked",
    # Open MPI's other refusals to start and its lost daemons (help-orte-rmaps-*.txt, help-orterun.txt, help-plm-rsh.txt,
    # help-opal-shmem-mmap.txt): an allocation too small, hosts outside it, its daemon not found, its shared-memory
    # backing file without room, a daemon's connection lost
    b"n your allocation", b"exceeds the allocated", b"current allocation", b"able to find the executable",
    b"shared-memory backing", b"communication path was lost",
    # a NIC driver's link down in the kernel's log (``mlx5_core 0000:3b:00.0 ib0: Link down``, ``NIC Link is Down``)
    b"Link down", b"Link is Down",
    # a GPU driver resetting a hung GPU (``amdgpu: GPU reset begin!``)
    b"GPU reset",
    # NCCL's INFO that it found no IB device (a container without /dev/infiniband), where IB was asked for
    b"No device found",
    # torchrun's agent's SignalException message without its type (``Process 107 got signal: 15``)
    b" got signal: ",
    # HiSilicon's RoCE driver's error completion (``hns_roce_lite_handle_error_cqe(630) : error cqe status: 0x15``)
    b"rror cqe status",
    # HCCL's op-retry handshake answered by another program on its port (``Recv unmatched ack [138…] expect [64]``)
    b"unmatched ack",
    # Google's RxDM finding fewer GPU-NIC pairs than GPUs (``Number of GPUs detected in the PCI tree 7 is not equal …``)
    b"in the PCI tree",
    # DCGM's health check naming a GPU's Xid by its index (``Detected XID 79 for GPU 3``)
    b"Detected XID",
    # Slurm's memory limit in srun's and slurmstepd's words (``srun: Exceeded job memory limit``), the kubelet evicting
    # a pod over its own storage limits (``Pod ephemeral local storage usage exceeds …``, ``Container pytorch exceeded
    # its local ephemeral storage limit``, ``Usage of EmptyDir volume "dshm" exceeds the limit``)
    b"xceeded job memory", b"xceeded step memory", b"ephemeral local storage", b"local ephemeral storage",
    b"Usage of EmptyDir",
    # a program's CUDA check (``GPUassert: …``), PyTorch without a usable GPU or built without its architecture, a
    # systemd service that failed, Open MPI direct-launched without Slurm's PMI, srun ending a step by force
    b"GPUassert", b"CUDA initialization: ", b"is not compatible with the current PyTorch", b"/FAILURE",
    b"PMI support", b"Force Terminated",
    # a node or process a monitor gave up on (Ray's GCS: ``… has been marked dead because the detector has missed too
    # many heartbeats``)
    b"marked dead", b"considered dead",
    # NCCL's result code for an argument it refused, alone (``ncclInvalidArgument: Invalid value for an argument.``)
    b"ncclInvalidArgument",
    # a pod's exit code in Kubeflow's operator's event (``… container pytorch exitCode: 137 terminated message:``)
    b"exitCode: 137",
    # a trainer's own words for a signal it caught (Lightning, Megatron, NeMo, SGLang: ``Received SIGTERM: 15``,
    # ``Handling auto-requeue signal: 10``, ``Preemption detected, saving checkpoint and exiting``, …)
    b"Received SIG", b"auto-requeue signal", b"graceful shutdown", b"after receiving SIG", b"initiating graceful stop",
    b"Preemption detected", b"received on node_rank",
    # serving engines' and Ray's words for a failure around the job, and Megatron's non-finite check (generic.py)
    b"engine core exited", b"shared memory broadcast block", b"rank divergence", b"Lost connection with prefill",
    b"Possible NCCL hang", b"only has a maximum of", b"object store is full", b"failed due to oom",
    b"Unexpected result", b"terminated with ",
    # a GPU failing DCGM's or nvidia-smi's health check
    b"row remapping", b"retired page", b"faulty memory elements", b"is currently down", b"NvLinks are up",
    b"CRC Flit", b"Fabric Manager training",
    # Ascend CANN's console error codes at a line's start, before their message (``EI0008: [PID: 48213] … The HCCL
    # versions are inconsistent``; EI: HCCL, EJ: its NIC, EE/EZ/E3: the runtime's internal errors)
    b"EI00", b"EJ00", b"EE99", b"EZ99", b"E3999",
    # PaddlePaddle's communication watchdog (``Find timeout start but not finish task:group_key:…``)
    b"Find timeout ",
    # NIXL's UCX without CUDA support, Mooncake's RoCE GID not found
    b"UCX CUDA support", b"detected as host by UCX", b"GID is NULL",
    # Kubernetes' events for a pod's processes ended from outside (the node's OOM killer, a shutdown, a preemption,
    # an eviction)
    b"System OOM encountered", b"imminent node shutdown", b"admit critical pod", b"Marking for deletion Pod",
    b"workers are evicted", b"unhealthy node(s)",
    # Open MPI's openib transport giving up on a connection (retry count, receiver not ready)
    b"retry count between two MPI", b"retry count on a per-peer",
    # Open MPI's summary naming the first process that ended badly without a signal
    b"exited due to process rank",
    # UCC's collective timeout; its store exchange failing under PyTorch's ProcessGroupUCC
    b"has expired on coll_type", b"Caught exception in Store Operation",
    # an MPI error class (Open MPI's error handler prints it on a line of its own)
    b"MPI_ERR_",
    # Intel MPI's Hydra naming the host whose proxy ended badly; MPI's words for a failed start
    b"downstream from host", b"instead of \"Success\"", b"unable to get host address", b"PMI server not found",
    b"terminating the program",
    # XLA's coordination service naming the tasks it lost (newer releases' words)
    b"tasks are unhealthy",
    # an absl/gRPC status at a line's start (XLA, JAX, torch_xla, gRPC)
    b"INVALID_ARGUMENT: ", b"ABORTED: ", b"FAILED_PRECONDITION: ", b"UNAVAILABLE: ", b"DEADLINE_EXCEEDED: ",
    b"RESOURCE_EXHAUSTED: ", b"INTERNAL: ", b"DATA_LOSS: ",
    # NCCL RAS: a rank with no operation yet, a peer declared dead
    b"not launched any operations", b"RAS declaring peer",
    # the amdgpu driver: a ring timed out, the GPU lost from the bus, a page fault, too many bad pages, an XGMI link,
    # the scheduler firmware hung
    b" timeout, signaled seq", b"device lost from bus", b"page fault (src_id", b"exceed threshold", b"reaches threshold",
    b"XGMI PCS", b"qcm fence wait loop", b"unrecoverable state",
    # the kernel's and the NIC drivers' words (see parsers.generic)
    b"PCI slot is unavailable", b"leak of a command resource", b"Cable unplugged", b"TX timeout",
    b"transmit timeout", b"admin cmd", b"SXid", b"API mismatch", b"containment event", b"after FLR",
    b"without any active interface", b"definitely down", b"dropping packet", b"table overflow", b"SYN flooding",
    b"RLIMIT_MEMLOCK", b"Couldn't ",
    # the host's storage (see parsers.generic)
    b"invoked oom-killer", b"read-only", b" QID ", b"in progress operations", b": [E] ", b": [X] ",
    b"could not be acquired",
    # Ray Train's barrier naming the ranks that never arrived
    b"not reaching the collective", b"following ranks to join",
    # health checkers' verdicts, Flux's job exceptions, Horovod's stall inspector, PBS's and LSF's kills, etcd's errors
    b"[FAIL] ", b"Health check failed", b" offline", b"ExitCode.CRITICAL", b"count mismatch", b"requires a reset",
    b"Recovery action", b"memory elements", b"memory mismatch", b"remap limit", b"due to DBEs", b"with a DBE",
    b"exit-timeout=", b"exit-on-error is set", b"flux-job: task(s) ",  # Flux's shell and flux-job on a job's end
    b"NvLink errors", b"links down", b"link flap", b"HCAs found", b"job.exception", b"is stalled for", b"job killed",
    b"etcd.Etcd",
    # nccl-tests refusing or ending a run
    b"Test timeout (", b"Invalid number of GPUs", b"Incompatible NCCL versions", b"This test requires",
    # a Rust program's panic, TensorRT-LLM's critical level, DDP's reducer, torch.compile's own exceptions
    b"panicked at", b"[TRT-LLM] [C]", b"marked as ready twice", b"._dynamo.exc.",
    # what the fabric's and the GPUs' tools print when something is wrong (ibdiagnet, mlxlink, nvidia-smi, DCGM, Slurm's
    # node reasons, ethtool)
    b"-E- ", b"Cable is unplugged", b"Signal not detected", b"No partner detected", b"Bad signal integrity",
    b"temperature shutdown", b"Unsupported cable", b": Yes", b"links are inActive", b"s NvLink", b"unsuccessfully written",
    b"needs reset", b"Reason=", b"Link detected: no",
    # AWS Neuron's collectives; a gRPC call that failed (TensorFlow, XRT)
    b"CCOM WARN", b"RPC failed with status",
    # a glog line at severity E in October to December (``E0`` covers January to September), torchelastic's D-state
    b"E10", b"E11", b"E12", b"uninterruptible",
    # PyTorch's C++ log at ERROR or FATAL whose month has no leading 0 (``[E528 08:54:10.938727404
    # ProcessGroupNCCL.cpp:629]``) or no date (``[E ProcessGroupNCCL.cpp:587]``)
    b"[E2", b"[E3", b"[E4", b"[E5", b"[E6", b"[E7", b"[E8", b"[E9", b"[E ", b"[F",
    # (watchdogs of the training's own, the resiliency extension's health checks and straggler reports, libfabric's
    # EFA and CXI words, TransformerEngine's userbuffers, the device plugin, the NVSwitch fabric)
    b"Did not get ", b"has been open for ", b"Was out of section", b"NO progress", b"without progress",
    b"has not incremented", b"no progress during", b"DISABLED state", b"NVLinkWindowHealthCheck", b"Requires a ",
    b"link down counter", b"Port state changed", b"STRAGGLER DETECTION", b"becomes unresponsive", b"C_RC_",
    b"CXI retry handler", b"CXI netdev", b"Message truncated", b"invalid protocol version", b"connection ID in its",
    b"userbuffers.cu:", b"CE deadlock", b"marked unhealthy", b"as unhealthy",
    b"fabricmanager daemon", b"imex daemon shutdown", b"NVLink training of fabric", b"fabric manager found but",
    b"CUDA OOM", b"dropped event", b"EQ drops", b"Invalid VNI", b"RX entries exhausted",
    # a line logged at CRITICAL, the level spelled in its prefix (``[CRITICAL] [node-1] … monitor_process.py:198 target
    # process is terminated, shutting down``): an error by its program's account whatever its words
    b"CRITICAL",
    b"Notify register waits",  # (Ascend HCCL's EI0002 in CANN 8's words)
    # (NVSHMEM and DeepEP, a Kubernetes network policy, a node without the resource a pod asks)
    b"peermem detected", b"versions not compatible", b"listening interface", b"exceeded retries", b"Policy denied",
    b"enough resource",
    # (the C library's aborts, Python's words for a name or a worker gone, a host out of processes or files, the
    # kernel's and systemd's, a GPU too old, a cloud taking the machine away, HyperPod's controller)
    b"free(): ", b"malloc(): ", b"munmap_chunk(): ", b"corrupted size vs", b"buffer overflow detected", b"gaierror",
    b"terminated abruptly", b"fork: ", b"fork rejected",
    b"file-max limit", b"cannot modify limit", b"no killable processes", b"detected stalls", b"Main process exited",
    b"start a new process before", b"no longer supports this GPU", b"Instance was preempted",
    b"Compute Engine maintenance", b"Host EC2 (instance", b"with reason=", b"Found unhealthy node", b"Job hanging detected",
    b"not proceed",  # (JAX's cluster detection giving up)
    b"count changed on node",  # (Slurm's controller: a node's GPUs fewer than before)
    b"address already in use", b"oo many open files",  # (libuv's and the C library's lower-case words: gloo on macOS)
    b"current device is not ",  # (a serving engine's process on another rank's GPU)
    b"No available block found",  # (vLLM 0.5-0.6's words for a broadcast its workers did not read)
    b"stopping training",
    b"Work timed out after",
    b"Work ran time out after",
    b"xcclUniqueId",  # (ProcessGroupXCCL's wait for its root's id, as NCCL's)  # (ProcessGroupXCCL's collective timeout)  # (``Loss is nan, stopping training``: MAE's, DeiT's and their heirs' exit on a NaN loss)
    b"realloc(): ", b"malloc_consolidate(): ",  # (the C library's other heap aborts)
    b"Link Down", b"requires reset",  # (a PCIe slot's link gone under a GPU: pciehp; a GPU a health check found needing a reset)
    # (Kubernetes: a pod preempted for another, a job at its deadline, a node gone under its pods)
    b"Preempted by pod", b"Preempted to accommodate", b"because of preempt", b"because of reclaim",
    b"longer than specified deadline", b"its active deadline", b"maximum execution time", b"NodeNotReady",
    b"stopped posting node status", b"gang unschedulable",
    b"already been bound",  # (Ascend HCCL's port taken)
    b"detects no heartbeat",  # (PyTorch 2.2's monitoring thread killing a rank whose watchdog hung)
    b"_ASSERT",  # (a library's assertion macro: ggml's ``GGML_ASSERT: ggml-backend.c:226: …``)
    b"==> ",  # (``tail`` over several files: ``==> logs/rank3.log <==``, whose lines follow: textlog reads the name)
    b"device-specific driver",  # (libibverbs without the NIC's provider: ``no userspace device-specific driver found``)
    b'File "',  # (a traceback's frame, where the paste lost its ``Traceback`` line: parsers.traceback follows it)
    b'.py", line ',  # (… also one whose ``File "`` a wrap or a paste cut)
    b"(most recent call first)",  # (faulthandler's dump of a thread: ``Thread 0x… (most recent call first):``)
    b"both attached to GPU device",  # (PyTorch's own duplicated-GPU check: ``Rank [0] and rank [8] both attached …``)
    b"No slot ",  # (DeepSpeed's launcher: ``No slot 2 specified on host work1``, its hostfile against --include)
    b"Stack of MainThread",  # (pytest-timeout's dump of a hung test: ``~~~ Stack of MainThread (140…) ~~~``)
    b"Stack (most recent call last)",  # (logging's stack_info: a stack printed, not raised)
    b"bootstrapping phase",  # (a spawned child running a script without its __main__ guard: its message's own line)
    b"wc->status",  # (gloo's ibverbs transport, a failed work completion, its enforce line cut before it)
    b"etry counter exceeded",  # (ibv_wc_status_str's words for status 12 and 13, in a transfer engine's own line)
    b"different version from",  # (Open MPI's processes of two releases: ``received different version from [[…],14]``)
    b"for name(s) ",  # (Caffe2's store wait, the second half of its line where a paste wrapped it)
    b"unsupported transport", b"unsupported channel",  # (TensorPipe's, after ``what():``, with no error word)
    b"handled by Slurm",  # (Lightning's ``Multi-processing is handled by Slurm.``: srun's tasks are the processes)
    b"IO_PAGE_FAULT",  # (the IOMMU refused a device's DMA: ``AMD-Vi: Event logged [IO_PAGE_FAULT …]``)
    b"fault addr",  # (and Intel's: ``DMAR: [DMA Read] Request device [0a:00.0] fault addr 0x…``)
    b"ncclCommAbort", b"ncclCommDestroy",  # (a native stack's frame inside NCCL's teardown: gdb, lldb, py-spy --native)
    b"ProcessGroupNCCL::abort",  # (and PyTorch's, above it)
    b"main_process_ip", b"main-process-ip",  # (Accelerate's store address: its option, its config file's key)
    b"finishedGPUExecution",  # (c10's frame under a CUDA error the NCCL watchdog met, its words cut from a paste)
    # the hundred-and-eighty-ninth round (r192*)
    b"nterface found",  # (NCCL's ``Bootstrap: no socket interface found`` copied alone, without its WARN prefix)
    b"CUDA-aware MPI",  # (PyTorch's MPI backend given GPU tensors by an MPI built without CUDA support)
    b"On WorkerInfo(",  # (torch.distributed.rpc naming the worker a remote call's exception was raised on)
    # NVSHMEM's error prints whose words hold no anchor (a NULL check's, its ERROR_PRINT's source path and function)
    b": NULL value", b"nvshmem",
)

_WINDOW = 512 * 1024  # bytes searched per anchor pass: stays in the CPU cache across passes
_NEAR = 2048  # after a hit, bytes searched with bytes.find before calling memmem again

Finder = Callable[[bytes, bytes, int, int], int]


def _load_memmem() -> Callable[..., int | None] | None:
    try:
        function = ctypes.CDLL(None).memmem  # the C library already loaded into this process
    except (OSError, AttributeError, TypeError):  # no libc, or a libc without memmem
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    return function


_MEMMEM = _load_memmem()


def _load_hyperscan() -> Any:
    try:
        import hyperscan  # type: ignore[import-not-found,unused-ignore]

        hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)  # a build without a usable library fails here
    except Exception as exc:  # not installed, or its native library cannot load on this CPU
        logger.debug("hyperscan unavailable (%s): the scanner uses memmem", exc)
        return None
    return hyperscan


_HYPERSCAN = _load_hyperscan()

BACKENDS = ("auto", "hyperscan", "libc", "python")


def libc_memmem_available() -> bool:
    return _MEMMEM is not None


def hyperscan_available() -> bool:
    return _HYPERSCAN is not None


@functools.lru_cache(maxsize=16)
def _hyperscan_database(anchors: tuple[bytes, ...]) -> Any:
    """The compiled anchors (about 1 ms; a database is shared, each scan brings its own scratch)."""
    database = _HYPERSCAN.Database(mode=_HYPERSCAN.HS_MODE_BLOCK)
    database.compile(expressions=list(anchors), ids=list(range(len(anchors))), flags=0, literal=True)
    return database


class Scanner:
    """Returns the sorted start offsets of the lines of a block that contain an anchor.

    ``backend`` is ``"auto"`` (hyperscan, else libc ``memmem``, else ``bytes.find``), ``"hyperscan"``,
    ``"libc"`` or ``"python"``.
    """

    def __init__(self, anchors: Sequence[bytes] = ANCHORS, backend: str = "auto") -> None:
        if not anchors or any(not anchor for anchor in anchors):
            raise ValueError("anchors must be non-empty byte strings")
        if backend not in BACKENDS:
            raise ValueError(f"unknown scanner backend {backend!r}")
        if backend == "libc" and _MEMMEM is None:
            raise ValueError("libc memmem is not available here")
        if backend == "hyperscan" and _HYPERSCAN is None:
            raise ValueError("hyperscan is not installed here (pip install hyperscan)")
        self.anchors = tuple(anchors)
        self._database: Any = None
        if backend in ("auto", "hyperscan") and _HYPERSCAN is not None:
            try:
                self._database = _hyperscan_database(self.anchors)
            except Exception as exc:  # hyperscan.error: refused the anchors (none known to be)
                if backend == "hyperscan":
                    raise ValueError(f"hyperscan could not compile the anchors: {exc}") from exc
                logger.debug("hyperscan could not compile the anchors (%s): the scanner uses memmem", exc)
        if self._database is not None:
            self.backend = "hyperscan"
        elif backend in ("auto", "libc") and _MEMMEM is not None:
            self.backend = "libc"
        else:
            self.backend = "python"
        self._lengths = [len(anchor) for anchor in self.anchors]
        self._overlap = max(self._lengths) - 1

    def line_starts(self, block: bytes) -> list[int]:
        """Start offsets of the lines of ``block`` containing any anchor, ascending, without duplicates."""
        size = len(block)
        if size == 0:
            return []
        if self.backend == "hyperscan":
            try:
                return self._scan_hyperscan(block)
            except Exception as exc:  # hyperscan.error from the library: this block by the other backends
                logger.debug("hyperscan failed on a block (%s): scanned with memmem", exc)
        starts: set[int] = set()
        if _MEMMEM is not None and self.backend != "python":
            self._scan_libc(block, size, starts)
        else:
            self._scan_python(block, size, starts)
        return sorted(starts)

    def _scan_hyperscan(self, block: bytes) -> list[int]:
        hits: list[int] = []
        add = hits.append
        lengths = self._lengths

        def found(anchor: int, _start: int, end: int, _flags: int, _context: object) -> None:
            add(end - lengths[anchor])

        database = self._database
        database.scan(block, match_event_handler=found, scratch=_HYPERSCAN.Scratch(database))
        rfind = block.rfind
        starts: list[int] = []
        line_end = -1  # the end of the last line taken: later hits before it are on that line
        for pos in sorted(hits):  # reported by end offset; anchors of different lengths can cross
            if pos <= line_end:
                continue
            starts.append(rfind(b"\n", 0, pos) + 1)
            line_end = block.find(b"\n", pos)
            if line_end == -1:
                break
        return starts

    def _scan_python(self, block: bytes, size: int, starts: set[int]) -> None:
        find = block.find
        rfind = block.rfind
        for window in range(0, size, _WINDOW):
            end = min(size, window + _WINDOW + self._overlap)
            for anchor in self.anchors:
                pos = find(anchor, window, end)
                while pos != -1:
                    starts.add(rfind(b"\n", 0, pos) + 1)
                    line_end = find(b"\n", pos)
                    if line_end == -1 or line_end >= end:
                        break
                    pos = find(anchor, line_end + 1, end)

    def _scan_libc(self, block: bytes, size: int, starts: set[int]) -> None:
        memmem = _MEMMEM
        assert memmem is not None
        base = ctypes.cast(ctypes.c_char_p(block), ctypes.c_void_p).value
        assert base is not None
        find = block.find
        rfind = block.rfind
        anchors = [(anchor, len(anchor)) for anchor in self.anchors]
        for window in range(0, size, _WINDOW):
            end = min(size, window + _WINDOW + self._overlap)
            for anchor, length in anchors:
                pos = window
                while pos < end:
                    # after a hit, look just ahead with bytes.find (cheap call) before paying for a ctypes
                    # call: anchors such as " Using " come in clusters in NCCL's init chatter
                    near = find(anchor, pos, min(end, pos + _NEAR)) if pos > window else -1
                    if near >= 0:
                        offset = near
                    else:
                        start = pos + _NEAR - length if pos > window else pos
                        if start >= end:
                            break
                        hit = memmem(base + start, end - start, anchor, length)
                        if not hit:
                            break
                        offset = hit - base
                    starts.add(rfind(b"\n", 0, offset) + 1)
                    line_end = find(b"\n", offset)
                    if line_end == -1:
                        break
                    pos = line_end + 1
