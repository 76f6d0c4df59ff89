"""What an error line says in plain words, when no parser knows its format. Pure: no I/O.

The parsers read the formats of NCCL, gloo, PyTorch and the launchers release by release; a log from a stack
they have never seen (another framework's wrapper, a runtime's own wording, a line cut or re-flowed by the
paste) still names its failure in the words every stack uses: ``Address already in use``, ``out of memory``,
``illegal memory access``, ``Connection refused``. :func:`read_as` maps such words to a category, for the
fallback (A028) to name what the line most likely means, at a low confidence, instead of only quoting it.

Two tiers. Words that name a cause (a port in use, memory, a GPU fault, a mismatch between ranks, a missing
interface…) win over any number of lines that name only an outcome (a crash, a kill, a refused connection):
those are what every other rank prints after the cause. Among outcomes, the first line wins, the first error
of a run being the nearest to its cause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from syncdoctor.analyze.model import Category, Event, Kind
from syncdoctor.analyze.parsers.generic import (
    BACKEND_REFUSAL,
    CONNECTIONS_DROPPED,
    GPU_FINDINGS,
    HOST_NETWORK_DOWN,
    NIC_FINDINGS,
    NO_PROGRESS,
    OPTION_REFUSED,
    PLACEMENT_WAIT,
    SHELL_NOT_FOUND,
    TYPE_ERROR_WORDS,
)
from syncdoctor.analyze.parsers.gpu import REFUSED_CUMEM

__all__ = ["DEVICE_ASSERT", "MISSING_FOLDER", "TORCHRUN_VARIABLES", "UNIMPLEMENTED", "Reading", "folder_missing",
           "read_as", "strongest", "unimplemented"]


@dataclass(frozen=True)
class Reading:
    """One line's words read as a category: ``what`` is a short name of what the words say."""

    category: Category
    what: str
    cause: bool  # the words name a cause, not only an outcome (a crash, a kill, a refused connection)


_I = re.IGNORECASE
# the variables torchrun (and torch.distributed.launch) sets for each worker
TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
# (a count checked against another where the words name the job's shape: a parallel size, the world, the GPUs, the
# batch; not a tensor's shape checked by a kernel, Transformer Engine's ``row_length must be divisible by
# hadamard_dimension``, the program's own error)
# (looked for from the text's start only, \A: once per text, not at every place the search tries)
_JOB_SHAPE_WORD = (r"\A(?=.*?(?:\b(?:\w*_)?(?:world|parallel|pipeline|expert|tensor[_ ]model|GPUs?|devices?|nodes?|ranks?"
                   r"|process(?:es)?|replicas?|batch|heads?|stages?|shards?|mesh)\w*\b"
                   r"|\b(?:\w*_)?(?:tp|pp|dp|ep|cp|sp)(?:_\w+)?\b))")
_SETUP_CHECK = re.compile(
    r"(?s:" + _JOB_SHAPE_WORD + r".*?\bmust be (?:divisible by|a multiple of|in the range|<=?|>=?|between|less than"
    r"|greater than|equal to|the same))"
    r"|\b(?:is|are) not (?:divisible by|equal to)\b|\bdoes not match (?:the )?(?:world|pp|tp|dp|ep)[_ ]?size\b"
    # (a configured count checked against a range of others: Megatron's virtual pipeline, ``The number of contiguous
    # micro-batches in a virtual pipeline stageshould range in [PP=6 , M=3]``)
    r"|(?:\b|stage)should (?:range|lie) (?:in|between|within) \[\w{1,20}=\d"
    r"|\b(?:GPUs?|devices?) (?:are|is) available, but \d+ (?:are|is) required\b"
    # (a parallel size checked against the world: Wan's ``The number of ulysses_size should be equal to the world
    # size.``; the GPUs a scheduler was asked for against those it has: verl's ``Total available GPUs 7.0 is less than
    # total desired GPUs 8``; a device the job names that the process does not see: TRL's ``The requested device for
    # vllm (cuda:1) is not available``)
    r"|\b(?:should|must) (?:be )?(?:equal to|divisible by|a multiple of|divide) (?:the )?(?:world[_ ]size|number of "
    r"(?:GPUs|devices|processes|ranks|nodes))\b"
    r"|\b(?:available|visible) (?:GPUs|devices)\b[^\n]{0,40}\b(?:is|are) (?:less|fewer) than (?:the )?(?:total )?"
    r"(?:desired|required|requested|needed)\b"
    r"|\brequested device\b[^\n]{0,60}\bis not available\b"
    # (TensorFlow's and XLA's placement of an operation on a device the process does not see: ``Cannot assign a device
    # for operation XRTCompile_16: … was explicitly assigned to …/device:TPU:1 but available devices are [ …TPU:0 … ]``,
    # a worker that Ray let see one NeuronCore)
    r"|\bCannot assign a device for operation\b"
    # (a launch's number of processes against what the mode it asks for needs: Accelerate's ``You need to use at least
    # 2 processes to use --multi_gpu``)
    r"|\b(?:need|needs|require|requires) (?:to use )?at least \d{1,5} (?:processes|GPUs|devices|nodes|ranks)\b"
    # (DeepSpeed-MII placing a model's replicas on the GPUs it has: ``Only able to place 0 replicas, but 2 replicas were
    # requested``; its tensor parallel size larger than a node's GPUs)
    r"|\bOnly able to place \d+ replicas?, but \d+ replicas? (?:were|was) requested\b"
    # (vLLM's quantized layers split over too many GPUs: ``The input size is not aligned with the quantized weight
    # shape. This can be caused by too large tensor parallel size.``)
    r"|\bcaused by too large tensor parallel size\b"
    # (DeepSpeed's launcher: the hostfile's slots against --include: ``No slot 2 specified on host work1``)
    r"|\bNo slot '?\d{1,4}'? specifi\w{0,4}ed on host\b"
    r"|\bis larger than the number of available GPUs\b|\bexceeds the total number of available GPUs\b"
    r"|\bNot enough resources to allocate\b|\bmust have an equal number of parameters\b"
    # (a checkpoint saved for another number of processes: Llama's ``Loading a checkpoint for MP=2 but world size is 1``)
    r"|\bbut (?:the )?world[_ ]size is \d"
    # (TensorRT-LLM's engine built for another number of processes: ``Engine world size (2) != Runtime world size (1)``,
    # ``Assertion failed: mpiSize == tp * pp``)
    r"|\bworld size \([^)\n]{1,20}\) != [\w ]{0,20}world size \(|\bmpiSize == tp \* pp\b"
    # (SageMaker's model parallelism given more processes than GPUs: ``The number of node-local MPI processes 8cannot be
    # larger than the device count 4``)
    r"|(?:\b|\d)(?:cannot|can not|can't|must not|should not) be (?:larger|greater|more) than the (?:device count|GPU count"
    r"|number of (?:available |visible )?(?:GPUs|devices))\b"
    # nccl-tests asked for more GPUs than the node has (``Invalid number of GPUs: 16 requested but only 8 were found.``)
    r"|\bInvalid number of GPUs: \d+ requested but only \d+ were found\b"
    # NVSHMEM's PEs spread unevenly over the nodes (``NVSHMEM requires the same number of PEs on all nodes``)
    r"|\brequires the same number of PEs on all nodes\b"
    # Accelerate's refusal to start NCCL on consumer GPUs without its settings (``NotImplementedError: Using RTX 3090 or
    # 4000 series doesn't support faster communication broadband via P2P or IB. Please set `NCCL_P2P_DISABLE="1"` …``)
    r"|\bdoesn't support faster communication broadband via P2P or IB\b"
    # (DeepSpeed's ``num_stages (3) must divide distributed world size (16)``, ColossalAI's ``can't be evenly divided``)
    r"|\bmust divide (?:the )?(?:distributed )?world[_ ]size\b|\bca(?:n'?t|nnot) be evenly divided\b"
    r"|\b(?:world|tensor|pipeline|data|expert)[_ ](?:parallel[_ ])?size\b[^\n]{0,60}\b(?:must|should|is not)\b"
    # a failed assertion or check whose expression is the job's shape (DeepEP's ``Assertion error …/deep_ep.cpp:32
    # 'num_ranks > NUM_MAX_NVL_PEERS or low_latency_mode'``: its normal kernels need eight GPUs a node)
    # (and YOLOX's bare ``assert num_gpu <= get_num_devices()``, read with its source line: more GPUs asked for than seen)
    # (DALI's reader given its shard of the data: ``Assert on "num_shards_ > shard_id_" failed``: shard_id = rank and
    # num_shards = world size)
    r"|\b(?:Assertion(?:Error| error)?|Check failed|Assert on)\b[^\n]{0,200}?\b(?:num_ranks|world_size|num_nodes|num_gpus?"
    r"|nproc_per_node|(?:get_)?num_devices|device_count|gpu_count|num_shards_?|shard_id_?"
    r"|(?:tp|pp|dp|ep|cp)_size"
    # (distributed-llama's nodes as slices of every layer: ``Assertion `d % nSlices == 0' failed.``: two to the power
    # of n nodes only)
    r"|n_?slices|num_?slices"
    # (TGI's weights split over its shards: ``AssertionError: The choosen size 50432 is not compatible with sharding on
    # 3 shards``)
    r"|\bon \d{1,5} shards"
    # (Megatron's ``expected local-rank to be the same as rank % device-count``: nodes with different numbers of GPUs)
    r"|local[-_]rank\b[^\n]{0,80}\bdevice[-_]count)\b", _I)
# a dtype PyTorch's NCCL path refuses, in ProcessGroupNCCL's words or its send/recv's (then the dtype)
_NCCL_DTYPE = r"(?:data type is not supported for NCCL process group|Unconvertible NCCL type):? "
DEVICE_ASSERT = "a device-side assertion of the program's own (a value out of range)"  # rules.crash adds its fix
# (category, what the words say, the words); causes first, in the order they are tried on a line
# a registration the NIC refused for another reason than the locked-memory limit (``Call to ibv_reg_mr_iova2 failed with
# error Invalid argument``: GPU memory without GPUDirect RDMA's support, an address the driver does not take; the limit
# says ENOMEM, ``Cannot allocate memory``)
_REFUSED_REGISTRATION = (r"\b(?:ibv_reg_\w+|fi_mr_reg)\b[^\n]{0,80}\b(?:Invalid argument|EINVAL|Bad address|EFAULT"
                         r"|Operation not supported|EOPNOTSUPP)\b")
_CAUSES: tuple[tuple[Category, str, re.Pattern[str]], ...] = (
    (Category.PORT_IN_USE, "a port already in use",
     re.compile(r"address already in use|\bEADDRINUSE\b|errno[:=]? ?98\b"
                # Windows' code for it, whatever the language of its words (``[WinError 10048] 通常每个套接字地址…``)
                r"|\bWinError 10048\b|\bsystem error: 10048\b|\bport\b[^.\n]{0,40}\b(?:is )?(?:already )?in use"
                r"|\bport\b[^.\n]{0,40}\b(?:is )?(?:already )?(?:taken|occupied)"
                r"|\b(?:address|port)\b[^\n]{0,40}\b(?:been|is|are) (?:already )?bound(?: already)?\b|\balready bound\b"
                # OneFlow's bootstrap and control servers, whose bind got port 0 back (``Check failed: p == port()
                # (29501 vs. 0) Port 29501 is unavailable``); DGL-KE's KV servers' (``Error: port 30051 is not
                # available.``)
                r"|\bPort \d{1,5} is (?:unavailable|not available)\b"
                # LightGBM's network (its Dask and SynapseML/Spark modes): ``Binding port 12401 failed``, a port still
                # held (TIME_WAIT from the run before) or another job's
                r"|\bBinding port \d{1,5} failed\b", _I)),
    (Category.RANK_KILLED, "the kernel's or the container's OOM killer",
     # (not Slurm's step daemon failing to read or set its OOM accounting: ``Cannot read step's oom_kill counter from
     # memory.events file``, ``cannot read oom-kill counts.``, ``unable to disable OOM Killer``: no process killed)
     re.compile(r"out of memory: kill|oom[-_ ]?kill(?! counter| counts\b)(?<!disable OOM Kill)|\bOOMKilled\b"
                r"|memory cgroup out of memory"
                # Ray's memory monitor killing a task for host memory (``Task _map_task failed due to oom. … 1
                # worker(s) were killed due to the node running low on memory``)
                r"|\bfailed due to oom\b|\bkilled due to the node running low on memory\b"
                # the OOM killer finding nothing left to kill (the host's memory taken by what it may not kill)
                r"|\bOut of memory and no killable processes", _I)),
    # (the same registration refused for another reason: see _NOT_THE_LIMIT)
    (Category.UNRECOGNISED, "memory the NIC refused to register for another reason than the locked-memory limit "
     "(Invalid argument: GPU memory without GPUDirect RDMA's support, nvidia-peermem not loaded or no DMA-BUF, or an "
     "address the driver does not take)",
     re.compile(_REFUSED_REGISTRATION)),
    (Category.MEMLOCK_LIMIT, "memory the NIC could not register (the memlock limit)",
     re.compile(r"ibv_reg_mr|\bRLIMIT_MEMLOCK\b|\bmemlock\b|locked memory|fi_mr_reg|register memory region"
                # a verbs queue the NIC could not pin memory for (UCX: ibv_create_cq(cqe=4096) failed: Cannot allocate memory)
                r"|ibv_create_(?:cq|qp|srq)\b[^\n]{0,60}(?:Cannot allocate memory|ENOMEM)"
                # EFA's provider could not register the receive buffers it posts (the memlock limit, 64 kB by default)
                r"|Failure to post internal receive buffers"
                # a transfer engine registering its buffers with the NIC (Mooncake: ``Failed to register memory
                # 0x7f71…: Cannot allocate memory [12]``)
                r"|Failed to register memory\b[^\n]{0,80}(?:Cannot allocate memory|ENOMEM)"
                # a job script not allowed to raise its own limit (``ulimit: max locked memory: cannot modify limit:
                # Operation not permitted``: the container's or the daemon's limit is the one to raise)
                r"|ulimit: max locked memory: cannot modify limit"
                # MPI's verbs transports that could not make a completion queue at init, the memory of which they
                # pin (MVAPICH2's ``rdma_iba_hca_init(1636)..: cannot create cq``, Open MPI's openib ``Failed to create
                # a completion queue (CQ)``): the locked-memory limit the job inherited, as their FAQs say
                r"|\brdma_iba_hca_init\b[^\n]{0,40}cannot create cq\b|\bFailed to create a completion queue\b", _I)),
    # a process out of file descriptors (EMFILE), also on /dev/shm (``OSError: [Errno 24] Too many open files:
    # '/dev/shm/torch_48213_…'``: the DataLoader's file-descriptor sharing, not the segment's size): before shm's words
    # (libuv's lower-case words, in TensorPipe's ``In connectFromLoop at tensorpipe/transport/uv/uv.h:297 "rv < 0: too
    # many open files"``)
    (Category.UNRECOGNISED, "a process out of file descriptors (its open-files limit, ulimit -n)",
     re.compile(r"[Tt]oo many open files|\bEMFILE\b|\[Errno 24\]")),
    # a shared-memory segment that already exists where a process creates it (Python's SharedMemory, create=True:
    # ``FileExistsError: [Errno 17] File exists: '/000009_locals'`` from mosaicml/streaming's get_shm_prefix): one a
    # killed run left in /dev/shm, or one each of the job's processes tries to make, not told of the others
    (Category.SHM_EXHAUSTED, "a shared-memory segment that already exists (left in /dev/shm by a run that was killed, "
     "or created by processes that do not know of each other: RANK and WORLD_SIZE not set where they start)",
     re.compile(r"\bFileExistsError: \[Errno 17\] File exists: '/[^'/]{1,200}'[^\n]{0,400}?"
                r"\b(?:shared_memory\.py|get_shm_prefix|shm_open|SharedMemory)\b")),
    # PyTorch's shared-memory files (a DataLoader worker's tensors to the main process) that the process could not
    # open: ``unable to open shared memory object </torch_16550_876314950> in read-write mode``, the host's limits on
    # open files or on /dev/shm, not NCCL's segments: before shm's words
    (Category.UNRECOGNISED, "a process that could not open PyTorch's shared-memory file for a DataLoader's tensors (the "
     "host's open-files limit or /dev/shm: ulimit -n, --shm-size, or the file_system sharing strategy)",
     re.compile(r"\bunable to open shared memory object </torch_\d+_\d+(?:_\d+)?>")),
    (Category.SHM_EXHAUSTED, "shared memory that ran out",
     re.compile(r"/dev/shm|\bshm_open\b|shared memory segment|posix_fallocate|nccl-shm|shared-memory backing"
                r"|\bproviders? for name shm\b|\bshm provider\b"  # libfabric's shm provider (oneCCL, EFA)
                # UCX's shared-memory transport (uct/sm/mm: Open MPI's UCX PML, UCC) whose FIFO found no room
                r"|\bmm_iface failed to allocate receive FIFO\b"
                # PyTorch's shared-memory files in /dev/shm (a DataLoader's tensors to the main process) without room:
                # ``unable to write to file </torch_77102_1846612178_0>: No space left on device (28)``; a tensor
                # passed by file descriptor (the default sharing strategy: ``unable to mmap 512 bytes from file
                # <filename not specified>: Cannot allocate memory (12)`` in rebuild_storage_fd)
                r"|unable to (?:write to|resize|mmap \d+ bytes from) file (?:</torch_\d+_\d+_\d+>|<filename not "
                r"specified>)[^\n]{0,40}"
                r"(?:No space left|Cannot allocate memory)", _I)),
    # XLA's allocator out of a device's memory, a TPU's HBM most often (``RESOURCE_EXHAUSTED: Error allocating device
    # buffer: Attempting to allocate 196.00M. That was not possible. There are 134.44M free.; (1x0x0_HBM0)``,
    # ``Attempting to reserve 6.48G at the bottom of memory``; its compiler's ``Ran out of memory in memory space hbm``)
    (Category.RANK_OUT_OF_MEMORY, "a TPU's (or another XLA device's) memory out of room (XLA's allocator)",
     re.compile(r"\bResource[ _]exhausted: [^\n]{0,60}?\bAttempting to (?:allocate|reserve) [\d.]+ ?[KMGT]?i?B?\b"
                r"|\bRan out of memory in memory space (?:hbm|vmem)\b", _I)),
    (Category.RANK_OUT_OF_MEMORY, "a GPU out of memory",
     re.compile(r"out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|cudaErrorMemoryAllocation"
                # ColossalAI's Gemini and others in their own words (``No enough CUDA memory!``)
                r"|\b(?:no|not) enough (?:CUDA|GPU|device) memory\b"
                # a program's own count of the OOMs it caught (OLMo-core's ``3 CUDA OOM errors thrown.``)
                r"|\bCUDA OOM errors? thrown\b"
                # a buffer or a size on the GPU (``failed to allocate 2101248 byte device buffer``), not a structure
                # named after the device in host memory (UCX's ``failed to allocate device address``, ``… cuda event
                # object``)
                r"|CUBLAS_STATUS_ALLOC_FAILED|failed to alloc(?:ate)? [^\n]{0,40}\b(?:GPU|device|CUDA)\b[^\n]{0,24}?\b(?:buffers?"
                r"|memory|mem)\b|failed to alloc(?:ate)? [^\n]{0,40}?\b\d+(?:\.\d+)? ?(?:bytes?|[KMGT]i?B?)\b[^\n]{0,40}"
                r"\b(?:GPU|device|CUDA)\b"
                r"|OUT_OF_DEVICE_MEMORY|out of device memory"
                # nvJPEG's allocator that could not get its buffers (DALI's decoder: ``NVJPEG error "5" :
                # NVJPEG_STATUS_ALLOCATOR_FAILURE``)
                r"|NVJPEG_STATUS_ALLOCATOR_FAILURE"
                # vLLM's start-up check: ``Free memory on device cuda:7 (174.24/178.35 GiB) on startup is less than
                # desired GPU memory utilization (0.98, 174.78 GiB)``
                r"|free memory on device\b[^\n]{0,80}\bless than desired", _I)),
    (Category.DUPLICATE_GPU, "two ranks on one GPU",
     re.compile(r"duplicate GPU|both on CUDA device|same (?:GPU|CUDA device|device)\b[^\n]{0,30}\b(?:rank|process)"
                # Ascend HCCL's rank table giving two ranks one NPU (``EI0004: … The device id in ranktable is duplicated``)
                r"|device id in ranktable is duplicated"
                # XGBoost's check of its NCCL group (Dask or Spark workers, a CrossValidator's trainings, given one GPU):
                # ``Check failed: n_uniques == world (1 vs. 2) : Multiple processes within communication group running
                # on same CUDA device is not supported``
                r"|Multiple processes within communication group running on(?:\s+same CUDA device|\s*$)"
                # NCCL 2.30.7+'s NVLS set-up: ``NCCL_NVLS_ENABLE has been set to "1" and communicator has multiple ranks
                # using the same NVML device``
                r"|\bmultiple ranks using the same NVML device\b", _I)),
    # PyTorch's symmetric memory (vLLM's custom all-reduce and MoE kernels, async TP) refusing ranks whose buffers are
    # on one device index: ``CUDASymmetricMemoryAllocator::rendezvous: detected allocations from overlapping devices
    # from different ranks``. It compares indices, so workers each given one GPU by CUDA_VISIBLE_DEVICES (Ray's
    # placement) all say cuda:0 (vllm#25070, #45729): the placement's, not two ranks on one GPU as a rule
    (Category.UNRECOGNISED, "PyTorch's symmetric memory refusing ranks whose buffers are on one device index "
     "(workers each given one GPU by CUDA_VISIBLE_DEVICES, as under Ray, all call it cuda:0: leave the GPUs visible "
     "and bind cuda:<local rank>; or two ranks on one GPU)",
     re.compile(r"allocations from overlapping devices from different ranks")),
    # (NVML's answer that the GPUs' peer-to-peer status cannot be asked, which NCCL's NVML set-up takes for a fatal
    # error: ``nvmlDeviceGetP2PStatus(0,0,NVML_P2P_CAPS_INDEX_READ) failed: Not Supported``, on GPUs, drivers or
    # platforms without P2P: virtual GPUs, Tegra)
    (Category.PEER_ACCESS, "GPU peer access that NVML says these GPUs do not support (a virtual GPU, a driver or a "
     "platform without P2P), which NCCL took for a fatal error",
     re.compile(r"\bnvmlDeviceGetP2PStatus\([^)\n]{0,60}\) failed: Not Supported\b", _I)),
    # (Baidu Kunlun's XCCL/BKCL: ``dev 0 addr_window not properly set``, ``host … addr_window check failed``: the
    # window through which the devices reach each other's memory)
    (Category.PEER_ACCESS, "GPU peer access that is not supported",
     # (CUDA's error 217 by its number too, its words retyped by a reporter: ``Cuda failure 217 'peer access is not
     # support between these two devices'``)
     re.compile(r"peer access is not support(?:ed)?\b|\bCuda failure 217\b|cudaErrorPeerAccess|peer mapping resources"
                r"|\bP2P\b[^\n]{0,20}\bnot supported"
                r"|\baddr_window (?:not properly set|check failed)", _I)),
    # CUDA refusing to allocate memory through its virtual memory API as not permitted (parsers.gpu's words: memory
    # shareable across nodes, a FABRIC handle, without an IMEX channel on the node or in the container), the GPUs not at
    # fault
    (Category.UNRECOGNISED, "CUDA refusing a shareable memory allocation as not permitted (fabric memory without an "
     "IMEX channel on the node or in the container: nvidia-imex running, /dev/nvidia-caps-imex-channels mounted)",
     re.compile(REFUSED_CUMEM)),
    # a build without code for this GPU's architecture (CUDA's ``no kernel image is available for execution on the
    # device`` and ``invalid device function``, ROCm's ``hipErrorNoBinaryForGpu: Unable to find code object for all
    # current devices!``): before a GPU's faults, as ``HIP failure: 'invalid device function'`` is none
    (Category.UNRECOGNISED, "binaries without code for this GPU's architecture (the GPU itself is not at fault)",
     re.compile(r"no kernel image is available|hipErrorNoBinaryForGpu|invalid device function|InvalidDeviceFunction\b"
                r"|Unable to find code object for all current "
                # PyTorch's warning at start-up that it was built without this architecture (``NVIDIA H200 with CUDA
                # capability sm_90 is not compatible with the current PyTorch installation``)
                r"devices|with CUDA capability sm_\d{2,3}\w? is not compatible with the current PyTorch"
                # (and one too old for it: ``Found GPU0 Tesla K80 which is of cuda capability 3.7. PyTorch no longer
                # supports this GPU because it is too old.``)
                r"|no longer supports this GPU because it is too old", _I)),
    # PyTorch's MPI backend given GPU tensors by an MPI built without CUDA support (ProcessGroupMPI's check)
    (Category.UNRECOGNISED, "an MPI library built without CUDA support, given GPU tensors by PyTorch's MPI backend "
     "(the NCCL backend for GPU tensors, or an MPI built with CUDA)",
     re.compile(r"doesn't have CUDA-aware MPI support")),
    # the CUDA software that does not fit the host's driver (cudaErrorInsufficientDriver; PyTorch's own words): a
    # GPU runtime's failure whose cure is the driver, not the GPU (before the GPU's faults: NCCL's ``Cuda failure 'API
    # call is not supported in the installed CUDA driver'`` is this, in a CUDA failure's words)
    (Category.UNRECOGNISED, "a GPU driver older than the CUDA runtime (the GPU itself is not at fault)",
     re.compile(r"driver version is insufficient|driver on your system is too old"
                r"|API call is not supported in the installed CUDA driver"
                # (NCCL's check before a CUDA graph captures it: ``NCCL cannot be captured in a graph if either it
                # wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.``)
                r"|NCCL cannot be captured in a graph if either\b"
                # (NCCL 2.30's one-sided RMA: ``One-sided RMA requires CUDA driver 12.5 or later (found 12.2).``)
                r"|\brequires CUDA driver [\d.]+ or later \(found [\d.]+\)"
                # the NVIDIA container runtime refusing an image built for a newer CUDA (``nvidia-container-cli:
                # requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version``)
                r"|unsatisfied condition: cuda ?>= ?[\d.]+", _I)),
    # NCCL's topology check of two GPUs an NVLink joins whose driver refuses them P2P (``P2P is disabled between
    # NVLINK connected GPUs 1 and 0. This should not be the case given their connectivity, and is probably due to a
    # hardware issue. If you still want to proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.``): the link, not the job
    (Category.GPU_ERROR, "an NVLink between two GPUs that does not carry peer-to-peer traffic (NCCL: most likely a "
     "hardware fault, a link down or the fabric manager; check `nvidia-smi nvlink -s` and `nvidia-smi topo -p2p r`)",
     re.compile(r"\bP2P is disabled between NVLINK connected GPUs \d+ and \d+", _I)),
    # (not nvidia-smi's column header ``| Volatile Uncorr. ECC |``, which every healthy node prints)
    (Category.GPU_ERROR, "a fault of the GPU",
     re.compile(r"illegal memory access|illegal address|memory access fault|(?<!Uncorr\. )\bECC\b|\bXid\b|fallen off the bus"
                r"|HW Exception|GPU hang|GPU reset|page fault|launch failure|misaligned address|hipErrorIllegal|cudaErrorIllegal"
                r"|CUDA_ERROR_ILLEGAL|amdgpu\b[^\n]{0,60}\b(?:error|fault)|GPU is lost|GPU lost"
                r"|\b(?:Cuda|HIP) failure\b", _I)),
    # an Ascend NPU's kernel that timed out or faulted (``EZ9999 … Kernel task happen error, retCode=0x25, [aicore
    # timeout]``, ``[aicore exception]``): the device's failure, as a CUDA kernel's on a GPU
    # compute-sanitizer's (and cuda-memcheck's) report of a kernel's access outside its allocation (``========= Invalid
    # __global__ read of size 4 bytes``, then the kernel): what a run without the tool reports as an illegal memory
    # access, or not at all
    (Category.GPU_ERROR, "a kernel's access outside its memory, caught by compute-sanitizer (an illegal memory access "
     "without it): the kernel it names and its arguments",
     re.compile(r"\bInvalid __(?:global|shared|local)__ (?:read|write|atomic) of size \d{1,6} bytes?\b")),
    (Category.GPU_ERROR, "an NPU kernel that timed out or faulted", re.compile(r"\[aicore (?:timeout|exception)\]", _I)),
    # the NPU's runtime reporting a fault of the device's own engines under ``The error from device(chipId:1, dieId:0)``:
    # ``there is a fftsplus sdma error, sdma channel is 2``, an AI core's or vector core's exception (``there is an
    # exception of fftsplus aivector error``; not its task or event wait timing out, which is a collective's wait:
    # ``hccl fftsplus task timeout occurred``)
    (Category.GPU_ERROR, "a fault of the NPU's own engines (its DMA, an AI or vector core)",
     re.compile(r"\bthere is an? (?:exception of )?(?:fftsplus )?(?:sdma|aicore|ai core|aivec|vector core|aic|aiv)[\w ]{0,20}?"
                r"(?:error|exception)\b", _I)),
    # a GPU failing its health check in DCGM's or nvidia-smi's words: its memory (rows to remap, pages retired, faulty
    # elements), its NVLinks down or erring, its fabric not trained (HGX: NVSwitch's fabric manager)
    (Category.GPU_ERROR, "a GPU's memory, NVLink or fabric failing its health check",
     re.compile(r"row remappings? (?:are )?pending|retired pages? (?:has|have) been detected|faulty memory elements"
                r"|NvLink (?:link|port) \d{1,3} is currently down|NvLinks are up out of the expected"
                r"|CRC Flit NvLink errors|Fabric Manager training has not started"
                # the driver's own check of the NVLink fabric (``NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric
                # state cached by the driver is out of sync [NV_ERR_FABRIC_STATE_OUT_OF_SYNC]``: NVLS multicast mapping
                # fails next, CUDA error 401)
                r"|\bNV_ERR_FABRIC_[A-Z_]+|\bNVLink fabric state\b[^\n]{0,60}\bout of sync\b"
                # an NVSwitch's own error (the fabric between the GPUs of an HGX), a GPU the kernel could not bring
                # back (``nvidia 0000:2a:00.0: not ready 65535ms after FLR; giving up``)
                r"|\bSXid\b|\bnvidia [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d: (?:not ready \d+ms after FLR|Unable to change "
                r"power state)"
                # health checkers' and tools' findings (parsers.generic's list), NHC's GPU count, DCGM's recovery
                # action, Slurm's reason for a node with fewer GPUs
                r"|\b(?:" + GPU_FINDINGS + r")|\bcheck_gpu_count: Expected to see \d+ but found \d+"
                r"|Recovery action: \d \((?:GPU_RESET|NODE_REBOOT|DRAIN_AND_RESET)\)"
                r"|\bReason=(?:gres/gpu count reported lower|[\w:]*gpu[\w:]* count too low)", _I)),
    # NVML (nvidia-smi, NCCL's nvmlwrap) after a driver update the host was not rebooted for: the kernel module
    # loaded is the old one, the library the new one
    (Category.GPU_ERROR, "a GPU driver whose kernel module and library differ (updated without a reboot; the GPU "
     "itself is not at fault)", re.compile(r"Driver/library version mismatch"
                                          # the kernel's words for it (``NVRM: API mismatch: the client 'python3' (pid
                                          # 48812) has the version 535.129.03, but this kernel module has …``)
                                          r"|NVRM: API mismatch: the client", _I)),
    # a training framework's own check of its numbers (Megatron's rerun state machine, NeMo, a trainer's
    # loss check): the rank whose loss or gradients went non-finite stopped, the others then time out
    (Category.RANK_CRASHED, "a NaN or Inf the program's own check caught",
     re.compile(r"\bfound (?:a )?(?:NaN|Inf)\b|unexpected result (?:nan|inf)\b|\b(?:NaN|Inf)s? (?:or (?:NaN|Inf) )?"
                r"(?:found|detected|encountered)\b|\b(?:loss|grad(?:ient)?s?(?: norm)?) (?:is|was|became|contains?) "
                r"(?:a )?(?:NaN|Inf|non-finite)\b|non-finite (?:loss|grad)", _I)),
    # fp16 training whose gradients overflowed at every step until the loss scaler could lower its scale no more
    # (DeepSpeed's ``Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.``):
    # the run diverged, the program's numbers, not its peers
    (Category.RANK_CRASHED, "fp16 gradients that overflowed until the loss scale reached its minimum (the run diverged: "
     "a lower learning rate, bf16 where the GPUs have it, or the data)",
     re.compile(r"\bloss scale already at minimum\b", _I)),
    # a kernel's assertion on the program's own values (an index or a loss input out of range), not the GPU's fault
    # a device index the process does not have, in a framework's own words (MindSpore: ``SetDevice for id:7 failed,
    # ret[101], invalid device ordinal``): more processes than GPUs visible, the launch's setup (A028, as rules.node)
    (Category.UNRECOGNISED, "a GPU index that does not exist in that process (more processes than visible GPUs)",
     re.compile(r"invalid device ordinal", _I)),
    # no GPU at all in that process: CUDA_VISIBLE_DEVICES empty, a container started without its GPUs
    (Category.RANK_CRASHED, "no GPU visible to that process (CUDA_VISIBLE_DEVICES empty, or a container started "
     "without its GPUs)", re.compile(r"No CUDA GPUs are available|no CUDA-capable device is detected", _I)),
    (Category.RANK_CRASHED, DEVICE_ASSERT,
     re.compile(r"device-side assert|\bAssertion `[^`\n]{1,300}` failed", _I)),
    (Category.COLLECTIVE_DESYNC, "ranks that disagree on a collective",
     re.compile(r"mismatch between collectives|collective (?:operation )?mismatch|mismatched collective"
                r"|received data size doesn't match|(?:shapes?|sizes?) (?:do not|don't|does not) match across ranks"
                r"|inconsistent [^\n]{0,30}across ranks"
                # Ascend HCCL's EI0005 (``The parameters of operator HcomAllReduce are inconsistent between ranks,
                # parameter count is 16512 on …``; ``The arguments for collective communication are inconsistent
                # between ranks``)
                r"|\bare inconsistent between ranks\b"
                # the Neuron runtime's check of the compiled graphs a replica group loaded (``ENC:validate_neff_cc_ops
                # [nec_dev 0] mismatching number of cc ops, expected 6 received 3. Check if ranks 1 and 0 are using the
                # same neff``): ranks that compiled different programs call different collectives
                r"|\bmismatching number of cc ops\b|\bfailed to validate neff across the replica group\b"
                # Accelerate's debug mode: ``Cannot apply desired operation due to shape mismatches. All shapes
                # across devices must be valid.``
                r"|due to shape mismatches"
                # MPI's receive of a bigger message than its buffer (MPI_ERR_TRUNCATE; MPICH: ``Message from rank 3
                # and tag 1 truncated; 1020000 bytes received but buffer size is 48``): the ranks' calls disagree
                # (not NCCL's bootstrap ``Message truncated : received 256 bytes instead of 4``, whose causes differ)
                r"|\bMPI_ERR_TRUNCATE\b|\bmessage truncated\b(?!\s*: r)|\btruncated; \d+ bytes received but buffer size"
                # Horovod's coordinator comparing the ranks' requests (controller.cc: ``Mismatched ALLREDUCE CPU/GPU
                # device selection: One rank specified device GPU, but another rank specified device CPU.``, ``…
                # tensor shapes``, ``Mismatched data types``, ``Mismatched MPI operations``, root ranks, process sets)
                r"|\bMismatched\b[^\n:]{0,80}: One rank\b"
                # FSDP's check of the order of its all-gathers (``Forward order differs across ranks: rank 0 is
                # all-gathering 1 parameters while rank 1 is all-gathering 0 parameters``)
                r"|\b(?:Forward|Backward) order differs across ranks\b"
                # TensorFlow's collective ops (MultiWorkerMirroredStrategy) finding its members' tensors of other sizes
                # (``Shape mismatch in the collective instance 106. Op at device … expected shape [49] but another member
                # in the group expected shape [64]``; its ring's gather: ``Inconsistent output shapes, got [16], but
                # expected is [64].``)
                r"|\bShape mismatch in the collective instance\b|\bInconsistent output shapes, got \["
                # fairseq's gather of its workers' statistics finding another worker's bytes unreadable
                # (``Unable to unpickle data from other workers. all_gather_list requires all workers to enter the
                # function together, so this error usually indicates that the workers have fallen out of sync``)
                r"|\bUnable to unpickle data from other workers\b|\bworkers have fallen out of sync\b", _I)),
    # NCCL's check of a collective's arguments (misc/argcheck.cc: ``Broadcast : sendbuff (nil) is not a valid
    # pointer``, ``… allocated on device 1 mismatchs with NCCL device 0``, ``invalid root 4 (root should be in the
    # 0..3 range)``, an unknown type or operation), ncclInvalidArgument: the call the program made on that rank (not
    # ``root should be in the 0..-1 range``: a communicator of -1 ranks, whose initialisation failed)
    (Category.RANK_CRASHED, "a collective called with an argument NCCL refused (a null buffer or one on another GPU "
     "than the rank's, a root out of range, an unknown type or operation): the program's call on that rank",
     re.compile(r"\b\w{2,20} (?:\(nil\)|0x[0-9a-fA-F]{1,16}) is not a valid pointer\b|\ballocated on device \d{1,3} "
                r"mismatche?s with NCCL device \d{1,3}\b|: invalid root -?\d{1,7} \(root should be in the 0\.\.\d"
                r"|\b\w{3,30} : (?:invalid type|invalid reduction operation) -?\d{1,4}\b", _I)),
    (Category.NCCL_VERSION_MISMATCH, "NCCL versions that differ",
     re.compile(r"NCCL version mismatch|different NCCL versions|version mismatch[^\n]{0,60}\b(?:NCCL|peer)\b"
                # Ascend HCCL's link set-up finding another version on the peer (``EI0008: … The HCCL versions are
                # inconsistent: tag […], local_version [8.0.RC3], remote_version [8.0.RC2]``)
                r"|HCCL versions are inconsistent", _I)),
    # a server and its client of different releases refusing each other (llama.cpp's RPC backend: ``RPC server version
    # mismatch: 4.0.1`` before ``Failed to connect to 10.0.0.185:50052``): the builds on the hosts, not the network
    (Category.UNRECOGNISED, "a server and its client of different versions (the hosts run different builds)",
     re.compile(r"\b(?:server|client|protocol) version mismatch\b", _I)),
    # the same connect refused because the device itself is not there (``… for RC DEVX QP connect on mlx5_15 failed: No
    # such device``: an SR-IOV function, or an HCA, that the pod or the host does not have as the peer expects): the
    # job's device choice, before the queue pair's reading below
    (Category.UNRECOGNISED, "an RDMA device the connection was made on that this process does not have (SR-IOV "
     "functions given differently to each pod, an HCA missing): name the devices (UCX_NET_DEVICES, NCCL_IB_HCA)",
     re.compile(r"ibv_create_ah\b[^\n]{0,300}\bQP connect\b[^\n]{0,80}\bfailed: No such device\b", _I)),
    # (UCX's address handle for a queue pair's connect: ``ibv_create_ah(… sgid_index=3 …) for RC DEVX QP connect on
    # mlx5_bond_0 failed: Connection timed out``: the GID or the route to the peer, as for modify_qp)
    # (a GID index the port does not have, the usual reason: ``NET/IB : Invalid GID index 3``)
    (Category.IB_MODIFY_QP, "an IB queue pair that could not be set up",
     re.compile(r"ibv_modify_qp|modify_qp|ibv_create_ah\b[^\n]{0,300}\bQP connect"
                r"|\binvalid GID index\b|\bGID index \d+ (?:is )?(?:invalid|out of range|not valid)"
                # a queue pair's move to ready-to-receive or -send refused, in another library's words (MLX's JACCL
                # over Thunderbolt RDMA: ``[jaccl] Changing queue pair to RTR failed with errno 22``)
                r"|\bqueue pair to (?:RTR|RTS|INIT)\b[^\n]{0,40}\bfail|\bQP to (?:RTR|RTS)\b[^\n]{0,40}\bfail", _I)),
    # at initialisation unless the inputs show collectives ran before (rules.fallback then says late, A012)
    (Category.IB_UNREACHABLE_AT_INIT, "IB/RoCE NICs that could not reach each other (retries exceeded)",
     re.compile(r"transport retry counter exceeded|retry count exceeded|RETRY_EXC(?:_ERR)?\b", _I)),
    # a work completion's status and the NIC vendor's code in any library's or paste's words (``work request complete
    # err: status 5 and vendor err 249``): a completion error; 12 and 13, retries exceeded, are read above
    (Category.IB_COMPLETION, "an IB/RoCE work completion that failed",
     re.compile(r"\bstatus[ =:]{0,3}(?!1[23]\b)\d{1,3}\b[^\n]{0,60}\bvendor[ _]err(?:or)?\b", _I)),
    (Category.IB_PORT_DOWN, "an IB port or device that failed",
     re.compile(r"IBV_EVENT_PORT_ERR|IBV_EVENT_DEVICE_FATAL|local catastrophic|\bport error\b"
                # an InfiniBand or RDMA NIC's driver reporting its link down (``mlx5_core 0000:3b:00.0 ib0: Link down``)
                r"|(?:\bmlx[45]_\w+|\bib\d{1,3}\b|\bhfi1\b|\bbnxt_re\b)[^\n]{0,80}\bLink (?:is )?down\b"
                # Ascend's NPU NIC (RoCE) port down (``EJ0002: … The network port is down.Suggest: run hccn_tool -i 3
                # -link -g``)
                r"|\bEJ0002\b[^\n]{0,80}\bnetwork port is down"
                # the NIC itself failing (parsers.generic's list), its module unplugged, Broadcom's firmware stalled,
                # ports missing, Slurm's reason for a node whose IB link went down
                r"|" + NIC_FINDINGS + r"|Port module event: module \d+, Cable unplugged|FW STALL Detected"
                r"|\bport\(s\) are active and\b|\bReason=IB link down\b", _I)),
    # Ascend HCCL's own checks of the ranks' addresses: ``rank[0] device ip family[2] is not same as others[10].``
    # (IPv4 on one, IPv6 on the rest), ``… Do not configure ranks belonging to different physical superpod ID info a
    # single logical superpod ID`` (a virtual NIC that cannot reach the other superpod)
    (Category.INTERFACE_MISMATCH, "ranks whose addresses are of different kinds or networks",
     re.compile(r"\bip family\[\d+\] is not same as others|different physical superpod ID", _I)),
    (Category.INTERFACE_MISSING, "a network interface that does not exist",
     re.compile(r"no (?:socket )?interface found|unable to find (?:address|interface)"
                r"|(?:interface|ifname)\b[^\n]{0,60}\b(?:not found|no such|does not exist)", _I)),
    # a ZeroMQ socket told to bind an address that is not this host's (another node's, a stale one: EADDRNOTAVAIL) or an
    # IPv6 address without brackets, whose first group ZeroMQ reads as an interface's name (vLLM's and SGLang's side
    # channels, NIXL's handshake: ``ZMQError: Cannot assign requested address (addr='tcp://172.17.0.5:34762')``)
    (Category.UNRECOGNISED, "an address to bind that is not this host's, or an IPv6 address without brackets (the "
     "bind address configured for another node)",
     re.compile(r"ZMQError: (?:Cannot assign requested address|No such device) \(addr='tcp://", _I)),
    # aws-ofi-nccl finding that a peer's device has another number of rails (NICs striped under one device) than its
    # own (``NET/OFI Unexpected number of remote rails for dev 0. Expected 3 but got 2``): the nodes group their NICs
    # differently (another NIC layout, topology file or plugin setting): connection setup fails next
    (Category.UNRECOGNISED, "nodes that group their NICs into a different number of rails per device (another NIC "
     "layout, topology file or network plugin setting on the peer)",
     re.compile(r"Unexpected number of remote rails for dev \d+", _I)),
    # NCCL (2.14+) refusing a communicator config whose field holds NCCL_CONFIG_UNDEF_INT, the value its initializer
    # leaves for "not set" (``Invalid config blocking attribute value -2147483648``): the library read a config laid out
    # by another release's nccl.h, the libnccl loaded not the one the program (PyTorch) was built with
    (Category.UNRECOGNISED, "an NCCL library other than the one the program was built with (two NCCL installs: the "
     "wheel's and another on the library path)",
     re.compile(r"Invalid config \w+ attribute value -2147483648"
                # NCCL 2.29.7+'s device API checking the library loaded against the headers the program was compiled
                # with (``NCCL library is too old. This application was compiled with NCCL version 2.30.3, but is
                # running with NCCL library version 2.29.7.``, ``… is not backwards compatible …``, ``The application
                # was compiled with too old version of NCCL …``)
                r"|\bNCCL library is (?:too old|not backwards compatible)\. This application was compiled with NCCL"
                r"|\bThe application was compiled with too old version of NCCL\b", _I)),
    # a framework's check of the job's shape or resources, in its words: the parallel sizes against the world size,
    # the GPUs it asked for against those there (``Only 8 GPUs are available, but 16 are required``, ``World size
    # (16) is larger than the number of available GPUs (8) in this node``, ``world_size (12) is not divisible by 8``,
    # ``Model replicas must have an equal number of parameters``): the job's setup, not the program failing as it ran
    (Category.UNRECOGNISED, "a check of the job's setup (its parallel sizes, or the GPUs it asks for against those "
     "there)", _SETUP_CHECK),
    # CUDA started in a process before it forked the job's workers (a notebook launcher's fork, a library imported
    # before the launch that touches the GPU: ``Cannot re-initialize CUDA in forked subprocess. To use CUDA with
    # multiprocessing, you must use the 'spawn' start method``): the job's setup, not the worker's own failure
    (Category.UNRECOGNISED, "CUDA started before the workers were forked (nothing may touch the GPU before a fork: "
     "the 'spawn' start method, or no CUDA call or CUDA-touching import before the launch)",
     # (Lightning's own check before it forks: ``Lightning can't create new processes if CUDA is already initialized``)
     # (and Accelerate's before its notebook launcher forks: ``CUDA has been initialized before the `notebook_launcher`
     # could create a forked subprocess``)
     re.compile(r"Cannot re-initialize CUDA in forked subprocess|can't create new processes if CUDA is already initialized"
                r"|\bCUDA has been initiali[sz]ed before [^\n]{0,60}\bforked subprocess", _I)),
    # a node's container runtime that could not start the job's container (Slurm's pyxis plugin and enroot: ``pyxis:
    # container start failed with error code: 1``, then the enroot log it prints, its hooks' own crashes among them:
    # ``pyxis:  … Segmentation fault (core dumped) | pwck …``; NVIDIA's container CLI: ``nvidia-container-cli:
    # ldcache error``): the node's setup, no process of the job
    (Category.UNRECOGNISED, "the node's container runtime could not start the job's container (pyxis and enroot, their "
     "hooks, nvidia-container-cli): the node's setup",
     re.compile(r"\bpyxis: (?:container start failed|printing enroot log|\s)|\bnvidia-container-cli: \w", _I)),
    # a model the job placed in a way its wrapper cannot take: FSDP asked to flatten 8-bit (quantized) weights
    # (``ValueError: Cannot flatten integer dtype tensors``, ``Must flatten tensors with uniform dtype but got
    # torch.float16 and torch.int8``), DDP given a model spread over several GPUs by a ``device_map`` (``device_ids and
    # output_device arguments only work with single-device/multiple-device GPU modules or CPU modules, but got …
    # module parameters {device(type='cuda', index=0), device(type='cuda', index=1)}``): the job's setup
    (Category.UNRECOGNISED, "a model placed in a way its distributed wrapper cannot take (quantized 8-bit weights "
     "under FSDP, one model spread over several GPUs under DDP): the job's setup",
     re.compile(r"\bCannot flatten integer dtype tensors\b|\bMust flatten tensors with uniform dtype but got\b"
                # (frozen and trainable parameters in one FSDP unit: ``ValueError: `FlatParameter` requires uniform
                # `requires_grad```, a wrap policy that puts adapters apart, or use_orig_params=True)
                r"|\bFlatParameter`? requires uniform `?requires_grad\b"
                r"|\bdevice_ids and output_device arguments only work with single-device\b", _I)),
    # a checkpoint that does not fit the model it is loaded into (``RuntimeError: Error(s) in loading state_dict for
    # DistributedDataParallel: Missing key(s) in state_dict: "module.…"``: saved with or without DDP's ``module.``
    # prefix, layers added or removed, another model size): the run's inputs, not the program failing as it ran
    (Category.UNRECOGNISED, "a checkpoint that does not fit the model it is loaded into (its keys or shapes differ: "
     "DDP's 'module.' prefix saved with the wrapper or without it, layers added or removed, another size)",
     re.compile(r"\bError\(s\) in loading state_dict for \w+")),
    # a copy of an object that holds the job's communicators (``copy.deepcopy`` of a model whose MoE layers keep their
    # ProcessGroupNCCL, for an EMA copy: ``TypeError: cannot pickle 'torch._C._distributed_c10d.ProcessGroupNCCL'
    # object`` under copy.py's frames): the program's, not a worker started by spawn; before spawn's words
    (Category.RANK_CRASHED, "a copy of an object that holds a process group (copy.deepcopy of a model that keeps its "
     "communicators): build the copy without them, or before the groups exist",
     re.compile(r"\bcannot pickle '[\w.]*(?:ProcessGroup|Backend|Store)\w*' object\b.{0,4000}?\bin deepcopy\b")),
    # a name looked up with DDP's ``module.`` prefix among names kept without it, or the reverse (``KeyError:
    # 'module.layers.0.skip_module.weight'``: an EMA tracker built before the wrap): the program's own lookup
    (Category.RANK_CRASHED, "a name with DDP's 'module.' prefix looked up among names kept without it, or the "
     "reverse (a lookup built before the DDP wrap, or after: use model.module, or build it on the same side)",
     re.compile(r"\bKeyError: ['\"]module\.\w")),
    # DDP's reducer seeing one parameter's gradient hook fire twice in a backward (``Expected to mark a variable ready
    # only once``, ``Parameter at index 559 has been marked as ready twice``): reentrant activation checkpointing, a
    # parameter shared or used outside forward; the program's use of DDP, as most labels of it have it (quoted without
    # its exception's class too)
    (Category.RANK_CRASHED, "a parameter whose gradient DDP's reducer saw twice in one backward (reentrant activation "
     "checkpointing, a shared parameter, one used outside forward): use_reentrant=False, or static_graph=True",
     re.compile(r"\bExpected to mark a variable ready only once\b|\bhas been marked as ready twice\b")),
    # a distributed call after the process group was destroyed, at exit (a destructor, PyTorch's own exception hook:
    # ``Exception ignored in: <function PersistentAsyncCaller.__del__ …>`` then ``Default process group has not been
    # initialized``): the code's teardown order, not a setup that never ran; before the setup's words
    (Category.RANK_CRASHED, "a distributed call at exit after the process group was destroyed (a destructor or an "
     "exception hook that asks for the rank): the code's teardown order, harmless to what the job computed",
     re.compile(r"\bDefault process group (?:has not been|is not) initiali[sz]ed\b.{0,4000}?"
                r"\bin (?:__del__|_distributed_excepthook|_run_finalizers|_exitfunc)\b")),
    # the workers could not be started with what they were given: the 'spawn' start method (torch.multiprocessing's,
    # Lightning's ddp_spawn, DataLoader workers on macOS and Windows) pickles the function and objects it sends, and a
    # lambda, a local function or a generated class cannot be (``AttributeError: Can't pickle local object
    # 'get_linear_schedule_with_warmup.<locals>.lr_lambda'``, ``_pickle.PicklingError: Can't pickle <class …>``); or a
    # script without its ``if __name__ == '__main__':`` guard, which spawn runs again in each child (``An attempt has
    # been made to start a new process before the current process has finished its bootstrapping phase``)
    (Category.UNRECOGNISED, "the workers could not be started with what they were given (the 'spawn' start method "
     "pickles what it sends to them, or runs the script again without its __main__ guard)",
     re.compile(r"\bCan't pickle (?:local object|<)|\bPicklingError\b|\bcannot pickle '|"
                r"\bfinished its bootstrapping phase\b", _I)),
    # a scheduler that could not place the job's pods (Kubernetes' ``0/8 nodes are available: 8 Insufficient
    # nvidia.com/gpu``, Volcano's ``4/4 tasks in gang unschedulable``, a quota exceeded): those ranks never started
    (Category.UNRECOGNISED, "pods the scheduler could not place (not enough free GPUs or other resources, taints, "
     "affinity or a quota): their ranks never started",
     re.compile(r"\b0/\d{1,6} nodes are (?:un)?available\b|\btasks in gang unschedulable\b|\bexceeded quota: ", _I)),
    # Ray that cannot place the workers an engine asks for (vLLM's ``Waiting for creating a placement group of specs for
    # 150 seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` …``, printed at 10, 30, 70, 150… seconds):
    # from a minute on, the cluster lacks what the group asks for (a node never joined, or its GPUs are not seen)
    (Category.UNRECOGNISED, "Ray could not place the workers: the cluster lacks the resources its placement group "
     "asks for (a node that never joined Ray, GPUs Ray does not see on a node, or a node resource of an address the "
     "nodes do not have): `ray status` on the head",
     re.compile(PLACEMENT_WAIT)),
    # a PyTorch build without CUDA asked for it (a CPU-only wheel, the Windows or macOS default, an XPU or ROCm build a
    # library calls torch.cuda on: ``AssertionError: Torch not compiled with CUDA enabled``): the build, not the run
    # (macOS's build, whose torch._C has no CUDA bindings: ``AttributeError: module 'torch._C' has no attribute
    # '_cuda_setDevice'`` from torch.cuda.set_device)
    (Category.UNRECOGNISED, "a PyTorch build without CUDA asked for CUDA (a CPU-only or another device's build, or a "
     "library calling torch.cuda on it)", re.compile(r"Torch not compiled with CUDA enabled"
                                                     r"|module 'torch\._C' has no attribute '_cuda_\w+'", _I)),
    # a PyTorch build without NCCL (Jetson's and macOS's wheels, CPU-only builds): its warning where torch.cuda.nccl is
    # called (``UserWarning: PyTorch is not compiled with NCCL support``)
    # (the same refusal quoted alone, without its RuntimeError: ``Distributed package doesn't have NCCL built in``;
    # PaddlePaddle's Windows build: ``module 'paddle.fluid.core_avx' has no attribute 'NCCLParallelContext'``)
    (Category.UNRECOGNISED, "a PyTorch build without NCCL (Jetson's, macOS's or a CPU-only build): backend='gloo', or a "
     "build with NCCL", re.compile(r"\bPyTorch is not compiled with NCCL support\b|\bDistributed package doesn't have "
                                   r"NCCL built in\b|\bhas no attribute '\w{0,40}NCCL\w{0,40}'")),
    # init_process_group without a backend on a device torch knows no backend for (2.6's ``ValueError: We detected
    # accelerator mps on your machine. But we don't know which communication backend to use for this accelerator``):
    # the call's arguments, not the run
    (Category.UNRECOGNISED, "init_process_group was given no backend, and PyTorch knows none for this device (mps or "
     "another accelerator): name one (gloo)",
     re.compile(r"We detected accelerator \S+ on your machine\. But we don't know which communication backend", _I)),
    # a compiled library that does not load or does not match what loads it: an extension built for another torch or
    # CUDA (apex's, Megatron's fused kernels, transformer-engine's: ``ImportError: …/fused_layer_norm_cuda….so:
    # undefined symbol: _ZN2at7getTypeERKNS_6TensorE``), torch against an NCCL wheel of another CUDA (``libtorch_cuda.so:
    # undefined symbol: ncclCommResume``), a library missing or older than what needs it (``cannot open shared object
    # file``, ``version `IBVERBS_PRIVATE_34' not found``), Ray's processes of two versions in one cluster (``Version
    # mismatch: The cluster was started with: Ray: 2.43.0``): the environment's build, not the run
    (Category.UNRECOGNISED, "a library that does not load or does not match what loads it (built for another PyTorch "
     "or CUDA, two versions installed, one missing): the environment's build",
     # (a shared object that cannot be read, ``cannot read file data: Stale file handle``, is the file system's)
     re.compile(r"\b(?:ImportError|OSError): .{0,400}?\.so(?:\.[\w.]+)?:\s*(?:undefined symbol|cannot open shared object "
                r"file|version `|$)|\berror while loading shared libraries: |\bversion `[\w.]+' not found \(required "
                r"by |\bVersion mismatch: The cluster was started with"
                # (Windows' delay-loaded DLL not found, or without the function asked for: ``Caught Win32 exception
                # 0xc06d007f.`` from CNTK with an MS-MPI older than it was built for)
                r"|\b[Ee]xception 0x[cC]06[dD]007[eEfF]\b"
                # (quoted without its exception: ``mpi_lib_v2.cpython-36m-x86_64-linux-gnu.so: undefined symbol: …``;
                # not rdma-core's probe of an optional symbol, ``dlvsym failed on mlx5dv_reg_dmabuf_mr - …/libmlx5.so:
                # undefined symbol: …``, which NCCL 2.21+ prints on older providers and goes on)
                r"|(?m:^(?![^\n]*\bdlvsym\b)[^\n]*?\.so(?:\.[\w.]+)?: undefined symbol: \w)", _I)),
    # two OpenMP runtimes loaded into one process (Intel's libiomp5 beside LLVM's libomp or GNU's, through two
    # packages' wheels): ``OMP: Error #15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.``,
    # then ``OMP: Hint This means that multiple copies of the OpenMP runtime have been linked into the program``, and
    # the process aborts: the environment's packages, not the program
    (Category.UNRECOGNISED, "two OpenMP runtimes loaded into one process (packages built against different ones): "
     "the environment's packages",
     re.compile(r"\bOMP: Error #15: Initializing \S+, but found \S+ already initialized"
                r"|\bmultiple copies of the OpenMP runtime have been linked into the program\b")),
    # mosaicml/streaming's registry of local cache directories (in shared memory, per host) refusing one that another
    # dataset or job on the host already uses (``ValueError: Reused local directory: ['/data/train'] vs
    # ['/data/train']. Provide a different one.``): two jobs given one directory, the job's setup
    (Category.UNRECOGNISED, "a local cache directory that another dataset or job on the host already uses "
     "(mosaicml/streaming's registry): give each its own",
     re.compile(r"\bReused local directory: ")),
    # a program's own look-up of the interface the job names (TransformerEngine's userbuffers read
    # NCCL_SOCKET_IFNAME as one exact name, where NCCL takes it as a prefix: ``OSError: Invalid network interface:
    # eth``): that interface does not exist on the host
    (Category.INTERFACE_MISSING, "a network interface the job names that this host does not have (NCCL_SOCKET_IFNAME "
     "is a prefix to NCCL, an exact name to other code that reads it)",
     re.compile(r"\bInvalid network interface: \S+")),
    # torch.distributed.rpc used where no RPC agent was started (``Current RPC agent is not set!``: rpc.init_rpc not
    # called in that process, as Pipe's documented example once forgot), and TensorPipe asked for a transport or a
    # channel this build or host does not have (``In getTransport at tensorpipe/core/context_impl.cc:147 "unsupported
    # transport ibv"``): the job's setup
    (Category.UNRECOGNISED, "torch.distributed.rpc used in a process where rpc.init_rpc has not run (no RPC agent)",
     re.compile(r"\bCurrent RPC agent is not set\b", _I)),
    (Category.UNRECOGNISED, "TensorPipe asked for a transport or channel that this build or host does not have: leave it "
     "out of the RPC backend options (_transports, _channels)",
     re.compile(r"\bunsupported (?:transport|channel) \w{1,20}\b", _I)),
    # TensorPipe's InfiniBand transport on a device whose verbs lack what it uses (AWS's EFA: no reliable-connected
    # queue pairs): ``In operator() at tensorpipe/common/ibv.h:172 "": Operation not supported`` (``Invalid argument``
    # where the device refuses the queue pair's settings)
    (Category.UNRECOGNISED, "TensorPipe's InfiniBand transport on a device that does not support it (EFA has no RC "
     "queue pairs, a device that refuses its queue pair): leave ibv out of the RPC backend options (_transports)",
     re.compile(r"tensorpipe/common/ibv\.h:\d+ [^\n]{0,80}\b(?:Operation not supported|Invalid argument)\b", _I)),
    # Open MPI's processes of two releases in one job (the host's mpirun and a container's library, or two installs on
    # the nodes): ``received different version from [[63455,1],14]: 2.1.1 instead of 2.1.6``
    (Category.UNRECOGNISED, "processes of one job run two releases of Open MPI (the host's and a container's, or two "
     "installs on the nodes): one Open MPI everywhere",
     re.compile(r"\breceived different version from \[\[\d+,\d+\],\d+\]: \S+ instead of \S+", _I)),
    # CUDA memory shared between processes (weights handed to an inference engine, multiprocessing queues) while the
    # allocator's expandable segments are on needs the pidfd_open system call (Linux 5.6): ``The kernel on this machine
    # does not support the pidfd_open syscall needed to use IPC for CUDA tensors when expandable_segments:True is set``
    (Category.UNRECOGNISED, "the host's kernel cannot share CUDA memory between processes with expandable segments "
     "on (no pidfd_open before Linux 5.6): turn expandable_segments off, or a newer kernel",
     re.compile(r"does not support the pidfd_open syscall needed to use IPC for CUDA tensors", _I)),
    # an exception whose class says the program refused its configuration (OLMo's ``OLMoConfigurationError:
    # Checkpoint for step 0 already exists``, Lightning's ``MisconfigurationException: You requested gpu: [0, 1] But
    # your machine only has: [0]``, a ``ConfigError``): the job's settings, not a failure as it ran
    (Category.UNRECOGNISED, "a configuration the program refused (its settings, not a failure as it ran)",
     re.compile(r"\b\w*(?:Misconfiguration|Configuration|Config)(?:Error|Exception)\b(?=:|\s*$)"
                # a device the program was given that torch cannot read (``Invalid device string: 'cuda:0,1'``: one
                # device per process, the GPUs chosen by the launch)
                r"|\bInvalid device string: '[^'\n]{1,60}'"
                # a library refusing a setting in the distributed mode the job runs in (Accelerate's ``You can't train
                # a model that has been loaded with `device_map='auto'` in any distributed mode``)
                # (unsloth's ``Unsloth currently does not work on multi GPU setups``)
                r"|(?i:\b(?:can't|cannot|can not|is not supported|are not supported|not compatible|does not work|"
                r"doesn't work|does not support|doesn't support)\b[^\n]{0,120}?"
                r"\b(?:in|with|under|on|for) (?:any |a )?(?:distributed|multi[- ]?GPU|multi[- ]?node|multi[- ]?machine) "
                r"(?:mode|training|setting|setup|job|run)s?\b)"
                # (Accelerate's refusal of a quantized model placed elsewhere: ``You can't train a model that has been
                # loaded in 8-bit precision on a different device than the one you're training on``, ``… on multiple
                # devices``; Transformers' DeepSpeed config against its TrainingArguments: ``Please correct the
                # following DeepSpeed config values that mismatch TrainingArguments values``)
                r"|(?i:\bcan't train a model that has been loaded in \d{1,2}-bit precision on\b"
                r"|\bDeepSpeed config values that mismatch TrainingArguments\b"
                # two settings that do not go together (Transformers' ``DeepSpeed Zero-3 is not compatible with passing a
                # `device_map` ``), a setting's value refused by name (Lightning's ``You selected an invalid strategy
                # name: …``)
                # (or a way of training: ``Unsloth is incompatible with DeepSpeed ZeRO-3``; not a compiler's warning that
                # it is not the one PyTorch was built with)
                # (a setting written as its assignment: ``DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True`
                # or with passing a `device_map`.``)
                r"|\b(?:is|are) (?:not compatible|incompatible) with [`'\"]?(?:passing|using|setting|specifying|enabling|DeepSpeed|ZeRO|FSDP|Megatron|\w{2,40}=\w|(?:tensor|pipeline"
                r"|sequence|context|expert)[ _-]parallel|gradient checkpointing|torch\.compile)"
                # a launcher's variable the library refuses (Lightning's ``You set `--ntasks=200` in your SLURM bash
                # script, but this variable is not supported.``); a value outside the ones allowed (``vllm_mode must be
                # either 'server' or 'colocate', got 'server'``)
                r"|\bbut this (?:variable|option|setting|argument|parameter|flag|mode) is not supported\b"
                # two settings that exclude each other (Accelerate's ``--mixed_precision` arg cannot be set to `fp16`
                # when `bf16` is set in the DeepSpeed config file.``)
                r"|\bcannot be set to [`'\"]?[\w.\-]{1,40}[`'\"]? when [`'\"]?[\w.\-]{1,40}[`'\"]? is (?:set|enabled)\b"
                r"|\bmust be (?:either|one of)\b[^\n]{0,200}\bgot\b"
                # a start method or mode the platform lacks (Lightning's ``You selected `Trainer(strategy='ddp_fork')`
                # but process forking is not supported on this platform``); a variable the runtime requires set
                # (ROCm's ``[FATAL ERROR]: HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance degradation``)
                r"|\bis not supported on (?:this|your) (?:platform|system|machine|OS|operating system)\b"
                # (a strategy the device refuses: Lightning's ``You set `strategy=ddp`, but strategies from the DDP
                # family are not supported on the MPS accelerator.``)
                r"|\b(?:is|are) not supported (?:on|with|for|by) the [\w-]{2,20} (?:accelerator|device|platform)\b"
                r"|(?-i:\b[A-Z][A-Z0-9_]{2,60}=\S{1,40} must be set\b)"
                r"|\bYou (?:selected|passed|provided|requested|chose) an? (?:invalid|unsupported|unknown)\b"
                # a mode that needs its own set-up, in the library's words (DeepSpeed's MiCS: ``To use MiCS sharding,
                # please use deepspeed.zero.MiCS_Init instead for initializing parameter``)
                r"|\bTo use [^\n,]{1,60}, please use [\w.`']+ instead\b"
                # a process group's backend named as torch does not know it (``AssertionError: Unknown c10d backend type
                # CUDA:NCCL`` from a device-qualified backend string, ``ValueError: Invalid backend: 'ncll'``)
                r"|\bUnknown c10d backend type\b|\bInvalid backend: ['\"]?\w"
                # (a mode offered only through another entry point: vLLM 0.5's ``Pipeline parallelism is only supported
                # through AsyncLLMEngine as performance will be severely degraded otherwise.``)
                r"|\bis only supported (?:through|via|with|by) (?:the )?[A-Z][\w.]{2,60}\b"
                # (Ray placing the job's driver on a node without GPUs: vLLM's ``Ray does not allocate any GPUs on the
                # driver node. Consider adjusting the Ray placement group or running the driver on a GPU node.``)
                r"|\bdoes not allocate any GPUs on the driver node\b"
                # (a launcher's hostfile it cannot read: DeepSpeed's ``Hostfile contains a bad entry: …``)
                r"|\bHostfile contains a bad entry\b"
                # an argument or an operation the job's backend does not take (``Function argument device_ids not
                # supported for the selected backend gloo`` from a barrier given GPUs on gloo, ``ProcessGroupGloo does
                # not support reduce_scatter``, ``Backend nccl does not support allgather_coalesced``; SageMaker's data
                # parallel backend: ``SMDDP does not support: ReduceOp``)
                r"|" + BACKEND_REFUSAL + r")")),
    # a library refusing, with its reason, a combination it has not implemented (TGI's ``NotImplementedError: Sharded
    # Llama requires Flash Attention enabled models.`` on a V100 or without its kernels built, ``… is not supported
    # with …``): the job's hardware, build or settings, not the program failing as it ran
    (Category.UNRECOGNISED, "a combination the library has not implemented, in its words (its hardware, build or "
     "settings): the setting, the hardware or the build it names",
     re.compile(r"\bNotImplementedError: (?=[^\n]{0,200}?\b(?:requires?|not (?:yet )?(?:supported|implemented)|only "
                r"(?:supported|available|implemented)|unsupported)\b)")),
    # NCCL's internal error in its own words (``internal error - please report this issue to the NCCL developers``,
    # ncclInternalError's string), quoted by a program's check of the call (TensorRT-LLM's plugins): NCCL's own failure
    # or a setup it does not support, its WARN lines (NCCL_DEBUG=WARN) say which
    (Category.UNRECOGNISED, "NCCL's internal error (a setup NCCL does not support, or its bug): its WARN lines say "
     "which (NCCL_DEBUG=WARN)",
     re.compile(r"\binternal error - please report this issue to the NCCL developers\b")),
    # processes that wait for one lock file and none gets it (lastlook's reading of the filelock package's debug lines;
    # Triton's autotune cache, Hugging Face's caches): its holder hung or gone, or a shared file system whose locks do
    # not work across hosts
    (Category.UNRECOGNISED, "processes waiting for one file lock that none gets (its holder hung or left it behind, "
     "or a shared file system whose locks do not work across hosts: give each node its own cache directory)",
     re.compile(r"\bprocesses wait for the file lock \S+, none acquired it\b")),
    # a library's extension compiled when the job starts that did not build (``RuntimeError: Error building extension
    # 'fused_adam'``: DeepSpeed's and apex's ops, built by torch.utils.cpp_extension on every rank): the compiler, the
    # CUDA toolkit or its headers against the torch installed, the build's own output above it says which
    (Category.UNRECOGNISED, "an extension the job compiles when it starts did not build (the compiler, the CUDA "
     "toolkit or its headers against the installed torch; the build's output above it says which)",
     re.compile(r"\bError building extension '[\w.\-]{1,80}'")),
    # a variable the platform's launcher sets, not set (SageMaker's data parallel library: ``Environment variable
    # SAGEMAKER_INSTANCE_TYPE is not set``): the job started outside what sets it up, or on a platform it does not know
    (Category.UNRECOGNISED, "a variable the job's launcher or platform should set is not set: the job was started "
     "outside it, or the platform does not support it",
     re.compile(r"(?-i:\b[Ee]nvironment variable [`'\"]?[A-Z][A-Z0-9_]{2,60}[`'\"]? (?:is not set|not set|is unset)\b"
                r"(?![^\n]{0,30}\b(?:using|defaulting|default|falling back|assuming|ignoring|skipping)\b))")),
    # Apptainer's and Singularity's own fatal errors before the program runs (``FATAL:   permission denied``, ``FATAL:
    # container creation failed: …``, their level padded to nine columns): the container or its runtime's setup
    (Category.UNRECOGNISED, "the container runtime (Apptainer, Singularity) could not start the job's container: its "
     "image, bind paths or permissions on that node",
     re.compile(r"(?-i:(?:^|\s)FATAL: {3}(?=\S))")),
    # JAX's platform that did not come up, raised (``RuntimeError: Unable to initialize backend 'cuda': INTERNAL: no
    # supported devices found for platform CUDA``: a task that Slurm's GPU binding left without the device JAX picked
    # by local rank, a plugin of another CUDA); not its INFO lines for platforms that are not there, which it logs
    # for every platform it tries and goes on (``xla_bridge.py:660] Unable to initialize backend 'tpu': …``)
    (Category.UNRECOGNISED, "JAX could not bring up its GPU platform (no device visible to the process, or a plugin "
     "that does not match the driver): the devices each process is given, or the install",
     re.compile(r"\bRuntimeError: Unable to initialize backend '(?:cuda|rocm|gpu)'")),
    # Paddle's loader of the libraries it uses at run time (``The third-party dynamic library (libnccl.so) that Paddle
    # depends on is not configured correctly. (error code is libnccl.so: cannot open shared object file …)``): NCCL,
    # cuDNN or CUDA not installed where it looks
    (Category.UNRECOGNISED, "a library the framework loads at run time is not installed or not on the library path "
     "(NCCL, cuDNN, CUDA): the environment's install",
     re.compile(r"\bdynamic library \([^)\n]{1,80}\) that \w{1,20} depends on is not configured correctly\b")),
    # Slurm's step daemon not finding the program it was to start (``slurmstepd: error: execve(): torchrun: No such file
    # or directory``): not installed on that node, not on its PATH, or a container not entered: every task of the
    # step ends at once with exit code 2
    (Category.UNRECOGNISED, "the launcher could not start the job's program on the node: it is not there or not on "
     "its PATH (the environment or the container the step runs in)",
     re.compile(r"\berror: execve\(\): [^:\n]{1,200}: (?:No such file or directory|Permission denied)\b")),
    # srun waiting for the allocation's resources to start a step (``srun: Job 1333683 step creation temporarily
    # disabled, retrying (Requested nodes are busy)``): another step holds them (Slurm 20.11+ gives a step the whole
    # of what it asks, and steps do not share unless told), so the job never starts
    (Category.UNRECOGNISED, "srun cannot start the step: another step of the job holds the nodes' resources (Slurm "
     "20.11+ steps do not share them unless told to: srun --overlap, or less memory and fewer CPUs per step)",
     re.compile(r"\bstep creation (?:temporarily|still) disabled, retrying\b")),
    # a mode of the program that a sharding stage refuses, in the library's words (DeepSpeed's ``no_sync context
    # manager is incompatible with gradient partitioning logic of ZeRO stage 3``): the settings, not the run
    (Category.UNRECOGNISED, "a feature the job uses that its sharding stage refuses, in the library's words (the "
     "settings, or versions of the libraries that do not go together)",
     re.compile(r"\b(?:is|are) (?:not compatible|incompatible) with\b[^\n]{0,80}?\b(?:ZeRO|FSDP)[ _-]?(?:stage[ _-]?)?"
                r"\d\b", _I)),
    # a build of the program without what the job's launch needs (llm.c built without MPI: ``MPI support is disabled.
    # Please enable MPI support to use MPI-based NCCL-init method.``)
    (Category.UNRECOGNISED, "the program was built without what the job's launch needs (MPI, NCCL or CUDA support "
     "disabled or not compiled in): another build, or a launch that does not need it",
     re.compile(r"\b(?:MPI|NCCL|CUDA|GPU|multi[- ]GPU|distributed) support is (?:disabled|not (?:enabled|compiled|built))\b",
                _I)),
    # a model DDP refuses to wrap, none of its parameters trainable (``DistributedDataParallel is not needed when a
    # module doesn't have any parameter that requires a gradient``: a frozen model, Lightning's freeze() before test)
    (Category.UNRECOGNISED, "a model with no trainable parameter wrapped in DistributedDataParallel, which refuses it "
     "(a frozen model: wrap only what trains, or run it without DDP)",
     re.compile(r"\bDistributedDataParallel is not needed when a module doesn't have any parameter that requires a "
                r"gradient")),
    # SyncBatchNorm run on the CPU (a config that uses SyncBN for inference or a CPU test: ``SyncBatchNorm expected
    # input tensor to be on GPU``): plain BatchNorm there
    (Category.UNRECOGNISED, "SyncBatchNorm run on the CPU, which it cannot (plain BatchNorm for CPU inference, or "
     "revert_sync_batchnorm)", re.compile(r"\bSyncBatchNorm expected input tensor to be on GPU")),
    # a dataset pipeline that does not split its shards between the ranks (WebDataset: ``input pipeline needs to be
    # reconfigured for multinode training``, ``you need to add an explicit nodesplitter to your input pipeline``)
    (Category.UNRECOGNISED, "a dataset pipeline that does not say how its shards are split between the ranks "
     "(WebDataset's nodesplitter, e.g. wds.split_by_node)",
     re.compile(r"\bneeds to be reconfigured for multinode training\b|\badd an explicit nodesplitter\b")),
    # FAIR's submitit launch scripts (DeiT, ConvNeXt, MAE, DINO, DETR: ``submitit_pretrain.py``) look for the
    # cluster's shared folder (/checkpoint/$USER) and raise ``RuntimeError: No shared folder available`` where there is
    # none: a launch meant for their Slurm cluster, run on another machine
    (Category.UNRECOGNISED, "a launch script that needs the cluster's shared folder (submitit's get_shared_folder, "
     "/checkpoint/$USER) run where there is none: launch the training script itself with torchrun, or give the "
     "script a shared job folder", re.compile(r"\bNo shared folder available\b")),
    # a distributed call before the job's process group exists (``Default process group has not been initialized,
    # please make sure to call init_process_group.``; DeepSpeed's comm before ``init_distributed``: ``DeepSpeed backend
    # not set, please initialize it using init_process_group()``): the script's setup, or a library release that no
    # longer sets it up for the script
    (Category.UNRECOGNISED, "a distributed call before the process group was set up (init_process_group, "
     "deepspeed.init_distributed): the script's setup, or a library release that no longer does it for the script",
     re.compile(r"\bDefault process group (?:has not been|is not) initiali[sz]ed\b"
                r"|\bbackend not set, please initiali[sz]e it using init_process_group\b"
                # (a library's own check of it: FlagEmbedding's ``Distributed training has not been initialized for
                # representation all gather``)
                r"|\bDistributed (?:training|environment) (?:has not been|is not|was not) (?:yet )?initiali[sz]ed\b")),
    # FSDP's auto-wrap policy given a layer class the model does not have (Accelerate's and Transformers' FSDP config,
    # ``fsdp_transformer_layer_cls_to_wrap: GPT2Block`` on a BERT: ``Exception: Could not find the transformer layer
    # class to wrap in the model.``): the job's configuration
    (Category.UNRECOGNISED, "FSDP's auto-wrap policy names a layer class the model does not have (the FSDP config's "
     "transformer layer class to wrap): the class of this model's blocks",
     re.compile(r"\bCould not find the transformer layer class (?:to wrap )?in the model\b"
                r"|\bCould not find the transformer layer class \w+ in the model\b")),
    # a library's check that a path the nodes must share is one disk to all (ms-swift's ``FileNotFoundError: [Errno 2]
    # No such file or directory: '/tmp/packing_share/check_shared_disk.tmp'``: a file one node wrote that another
    # does not see): the setup, a node-local path where storage every node mounts was needed
    (Category.UNRECOGNISED, "a path the nodes must share (a cache or output folder the library checks) is on each "
     "node's own disk: give one on storage every node mounts",
     re.compile(r"\bcheck_shared_disk\b")),
    # init_process_group given an init_method without a scheme, most often empty (``RuntimeError: No rendezvous handler
    # for ://``: a --dist-url / --dist_url the command did not pass, a config's empty address): the launch's setup
    (Category.UNRECOGNISED, "init_process_group's init_method is empty or has no scheme (a --dist-url the command did "
     "not pass, a config's empty address): give tcp://HOST:PORT, file:///PATH or env://",
     re.compile(r"\bNo rendezvous handler for :/{0,2}(?:\s|$)")),
    # Open MPI's banner of MPI begun twice in one process, or after its end (help-mpi-runtime.txt: ``Open MPI has
    # detected that this process has attempted to initialize MPI (via MPI_INIT or MPI_INIT_THREAD) more than once.``,
    # ``… after MPI_FINALIZE has been called.``): two libraries each starting MPI (mpi4py, then PyTorch's MPI backend
    # before pytorch#105023), the setup of the libraries as a held label has it
    (Category.UNRECOGNISED, "MPI initialized twice in one process, or after MPI_Finalize (two libraries each calling "
     "MPI_Init: mpi4py and PyTorch's MPI backend before 2.1): let one of them start MPI, once",
     re.compile(r"\bOpen MPI has detected that this process has attempted to initialize\b")),
    # srun's tasks started without a PMIx server (``No PMIx server was reachable, but a PMI1/2 was detected. If srun is
    # being used to launch application, 8 singletons will be started.``): each task is its own world of one rank
    (Category.UNRECOGNISED, "srun started the tasks without PMIx, so each one runs as a world of its own (a singleton, "
     "rank 0 of 1): launch with `srun --mpi=pmix` (`srun --mpi=list` names the plugins), or through mpirun",
     re.compile(r"\bNo PMIx server was reachable, but a PMI1/2 was detected\b")),
    # CUDA-aware MPI asked of an Open MPI built without it (``The user requested CUDA support with the --mca
    # mpi_cuda_support 1 flag but the library was not compiled with any support.``)
    (Category.UNRECOGNISED, "CUDA support asked of an Open MPI built without it: an Open MPI built --with-cuda (ompi_info "
     "--parsable --all | grep mpi_built_with_cuda_support), or the tensors on the CPU for MPI",
     re.compile(r"\brequested CUDA support with the --mca mpi_cuda_support 1 flag\b")),
    # Open MPI 5's mpirun without the PRRTE it hands the launch to (``Open MPI's mpirun command was unable to find an
    # underlying prterun command to execute.``): an installation missing a part, or two mixed
    (Category.UNRECOGNISED, "Open MPI's mpirun found no prterun to hand the launch to (Open MPI 5's launcher): an "
     "installation missing PRRTE, or two installations mixed on PATH (OMPI_PRTERUN names it)",
     re.compile(r"\bmpirun command was unable to find an underlying prterun\b")),
    # Open MPI without the agent it starts its daemons with (``The value of the MCA parameter "plm_rsh_agent" was set to
    # a path that could not be found: plm_rsh_agent: ssh : rsh``, then ``FORCE-TERMINATE AT Not found:-13 - error
    # plm_rsh_component.c(327)``; a container without ssh, mpi4py's singleton start too): the setup
    (Category.UNRECOGNISED, "Open MPI found no agent to start its daemons with (plm_rsh_agent: ssh or rsh is not "
     "installed where it ran): install an ssh client there, or on one node let Open MPI start no remote daemon "
     "(OMPI_MCA_plm_rsh_agent=false, or mpirun's --mca plm isolated)",
     re.compile(r"\bplm_rsh_agent\W{1,3} was set to a path\b|\bFORCE-TERMINATE AT Not found:-?\d{1,4} - error "
                r"plm_rsh_component\b")),
    # argparse refusing the command line the launcher built: torch.distributed.launch passes ``--local-rank=N`` since
    # PyTorch 2.0 (``--local_rank=N`` before), and a script that parses only the other spelling exits with code 2
    # (``train.py: error: unrecognized arguments: --local-rank=0``)
    (Category.UNRECOGNISED, "the script does not take the local-rank argument the launcher passes (torch.distributed."
     "launch passes --local-rank= since PyTorch 2.0, --local_rank= before): accept both spellings, or launch with "
     "torchrun and read LOCAL_RANK from the environment",
     re.compile(r": error: unrecognized arguments: (?:\S+ )*--local[-_]rank\b")),
    # DeepSpeed's MPI discovery (``deepspeed.init_distributed()`` in a process mpirun or mpiexec started, without the
    # deepspeed launcher's variables) asks ``hostname -I`` for the node's address: a host whose ``hostname`` is not
    # the net-tools one (inetutils': ``hostname: invalid option -- 'I'``, exit status 64; BusyBox; a site's wrapper
    # that crashes) fails it, and DeepSpeed raises CalledProcessError: the node's setup, not the program
    (Category.UNRECOGNISED, "DeepSpeed's MPI discovery could not run `hostname -I` on that node (a hostname command "
     "without -I: inetutils', BusyBox's): install the net-tools hostname there, or set MASTER_ADDR, MASTER_PORT, "
     "RANK, LOCAL_RANK and WORLD_SIZE yourself (or launch with the deepspeed launcher or torchrun), so that DeepSpeed "
     "does not discover them through MPI",
     re.compile(r"\bhostname: (?:invalid option -- '?I'?|unrecognized option '?-I)|\bCommand '\[?'hostname -I'\]?' "
                r"(?:returned non-zero exit status|died with)")),
    # a command that refused an option it does not know (getopt's ``prog: invalid option -- 'x'``, ``unrecognized
    # option '--x'``): the job's command or the version of the tool on that host
    (Category.UNRECOGNISED, "a command refused an option it does not know (the launch command, or another version "
     "of that tool on this host)",
     re.compile(OPTION_REFUSED)),
    # argparse refusing the command line otherwise (an argument it does not take, one it requires, a value of the wrong
    # type): the job's command, not a failure as it ran
    (Category.UNRECOGNISED, "the program refused its command line (an argument it does not take, a required one "
     "missing, or a value of the wrong type): the launch command or its script",
     re.compile(r"(?:^|\s)[\w.\-]{1,80}: error: (?:unrecognized arguments: |the following arguments are required: |"
                r"argument [\w\-/]{1,80}: (?:invalid \w+ value|expected \w+ argument|ambiguous option|not allowed with))")),
    # a module the program imports, not installed where it ran (``ModuleNotFoundError: No module named 'tensorflow'``
    # on a PyTorch-only install), or an operator the installed library does not have (TorchRec on an FBGEMM build
    # without it: ``RuntimeError: No such operator fbgemm::permute_pooled_embs_auto_grad``): the environment, not the
    # program failing as it ran
    (Category.UNRECOGNISED, "a module or operator the program needs that the installed environment lacks (a package "
     "missing there, or a library built or versioned otherwise than the program expects)",
     re.compile(r"\bModuleNotFoundError: No module named\b|\bImportError: No module named\b"
                # any other import that failed with words of its own (Accelerate's ``ImportError: DeepSpeed is not
                # installed => run `pip install deepspeed```, ``ImportError: cannot import name 'X' from 'y'`` of two
                # packages' versions that do not fit); a circular import is the program's own, and one another error
                # wraps (Inductor's loading of its compiled kernels) is that error's
                r"|(?<!Error: )\b(?:ImportError|ModuleNotFoundError): (?![^\n]{0,300}\bcircular import)(?=[^\n]{8})"
                r"|\bNo such operator [\w.]+::\w+"
                # a check of the program's for an optional package (HunyuanVideo's ``AssertionError: Ulysses Attention
                # and Ring Attention requires xfuser package``, ``package apex is not installed``)
                r"|\brequires (?:the )?[`'\"]?[\w.\-]{2,40}[`'\"]? (?:package|library|module)\b"
                r"|\b(?:package|library|module) [`'\"]?(?!is\b)[\w.\-]{2,40}[`'\"]? (?:is )?not installed\b")),
    # a GPU older than the code supports (flash-attn's ``RuntimeError: FlashAttention only supports Ampere GPUs or
    # newer.``), a library older than a feature needs: the hardware or the environment, not the program as it ran
    (Category.UNRECOGNISED, "hardware or a library older than the code supports (a GPU generation, a version floor): "
     "another GPU, a setting that avoids the feature, or the newer library",
     re.compile(r"\bonly supports? (?:[\w.\-]+ ){1,4}(?:or newer|and newer|or later|and later|or above|and above)\b"
                r"|\bonly supports? [^\n]{0,60}\bversion >= ?\d", _I)),
    # a program the shell did not find (``bash: hccn: command not found``, dash's ``/bin/sh: 1: torchrun: not found``,
    # a sudo that reset PATH): not installed where the command ran, or not on its PATH (a launcher's own daemon, not
    # found on a remote node, is read by rules.setup)
    (Category.UNRECOGNISED, "a program the shell did not find (not installed where the command ran, or not on its "
     "PATH: sudo and non-interactive shells set their own)",
     re.compile(SHELL_NOT_FOUND)),
    # a disk or file system without room where a process writes (a checkpoint's torch.save, a cache, logs: ``OSError:
    # [Errno 28] No space left on device``); /dev/shm's is shared memory's, read above
    (Category.UNRECOGNISED, "a disk or file system without room (or over its quota) where the process wrote: a "
     "checkpoint, a cache, logs",
     re.compile(r"\bNo space left on device\b|\bDisk quota exceeded\b|\[Errno (?:28|122)\]|\bENOSPC\b|\bEDQUOT\b"
                # Ray's monitor of its session's disk (``(raylet) file_system_monitor.cc:116: /tmp/ray/session_… is
                # over 95% full, available space: 0 GB; capacity: 434.788 GB. Object creation will fail if spilling
                # is required.``): objects cannot spill, tasks that need them stall
                r"|\bis over \d{2,3}% full, available space: \d"
                # torch.save's writer failing under a checkpoint (``[enforce fail at inline_container.cc:471] .
                # PytorchStreamWriter failed writing file data/3: file write failed``, then ``unexpected pos 1024 vs
                # 896``): the file system took no more (full, over quota, a network mount that failed)
                r"|\bPytorchStreamWriter failed writing file\b|\bunexpected pos \d+ vs \d+")),
    # the storage's own error where the process read or wrote a file (``OSError: [Errno 5] Input/output error`` from
    # np.memmap on a dataset's index, on a multi-node run's shared filesystem): a network filesystem's server, a FUSE
    # mount or a disk that failed the call, not the program (a network library's ``Input/output error``, UCX's or
    # libfabric's, is not this: only Python's errno form)
    (Category.UNRECOGNISED, "the storage failed a read or write with an I/O error (EIO: a network filesystem's server, "
     "a FUSE mount or a failing disk under the file), not the program",
     re.compile(r"\[Errno 5\] Input/output error\b")),
    # a variable the launcher sets, missing where the program reads it (mmengine's and mmcv's init_dist, detectron2's,
    # DINOv2's: ``KeyError: 'RANK'``, ``KeyError: 'SLURM_PROCID'``, ``KeyError: 'The environment variable MASTER_ADDR
    # is not set'``): the script started without the launcher it was told to expect (python instead of torchrun, a
    # --launcher slurm outside srun)
    (Category.UNRECOGNISED, "a variable the launcher sets, not set: the script started without the launcher it "
     "expects (plain python instead of torchrun, or outside srun or mpirun)",
     re.compile(r"KeyError: '(?:" + "|".join(TORCHRUN_VARIABLES) + r"|GROUP_RANK|SLURM_(?:PROCID|NTASKS"
                r"|LOCALID|NODELIST|JOB_NODELIST|STEP_NODELIST)|OMPI_COMM_WORLD_\w+|PMI_(?:RANK|SIZE)"
                # (the launcher's own: DeepSpeed's pdsh runner reading ``PDSH_SSH_ARGS_APPEND`` it had not set)
                r"|PDSH_[A-Z_]+"
                r"|The environment variable \w+ is not set)'"
                # (DeepSpeed 0.3-0.9's assert: ``DeepSpeed requires the LOCAL_RANK environment variable, it is set by
                # the deepspeed launcher, …``)
                r"|\brequires the (?:" + "|".join(TORCHRUN_VARIABLES) + r") environment variable\b"
                # (env://'s own: ``Error initializing torch.distributed using env:// rendezvous: environment variable
                # RANK expected, but not set``)
                r"|\benvironment variable (?:" + "|".join(TORCHRUN_VARIABLES) + r") expected, but not set"
                # (cut where a paste wrapped it, after env://'s words: ``… env:// rendezvous: environment variable
                # RANK`` at the line's end)
                r"|\benv:// rendezvous: environment variable (?:" + "|".join(TORCHRUN_VARIABLES) + r")\s*$")),
    # a straggler detector naming the ranks slower than their peers (the resiliency extension through NeMo): in a job
    # that then timed out, the rank the others waited for
    (Category.LAGGING_RANK, "a rank slower than its peers (a straggler detector's report)",
     re.compile(r"STRAGGLER DETECTION WARNING: Some GPUs", _I)),
    # libfabric's EFA provider receiving what a peer of another version sent: the nodes run different libfabric
    # (or EFA installer) versions
    (Category.NCCL_VERSION_MISMATCH, "nodes running different libfabric versions (EFA)",
     re.compile(r"received a packet with invalid protocol version|does NOT have connection ID in its header", _I)),
    # NVSHMEM's bootstrap between PEs of different NVSHMEM versions
    (Category.NCCL_VERSION_MISMATCH, "processes of different NVSHMEM versions",
     re.compile(r"UID Bootstrap versions not compatible between PEs|bootstrap returned an incompatible version", _I)),
    # NVSHMEM's bootstrap (NCCL's socket code) with no interface to listen on
    (Category.INTERFACE_MISSING, "no usable network interface to listen on (NVSHMEM's bootstrap)",
     re.compile(r"No usable listening interface found", _I)),
    # a Kubernetes network policy (Cilium) dropping the job's traffic between pods
    (Category.PEER_UNREACHABLE, "a network policy dropping the job's traffic between pods",
     re.compile(r"\bPolicy denied DROPPED\b", _I)),
    # a data type the build's NCCL does not take (``Input tensor data type is not supported for NCCL process group:
    # BFloat16`` under NCCL 2.9, before 2.10.3 added bfloat16; ``Unconvertible NCCL type BFloat16`` from a PyTorch whose
    # send/recv predate it): the build's versions, not the program
    (Category.UNRECOGNISED, "a data type the NCCL of this build does not take (bfloat16 needs NCCL 2.10.3 and a PyTorch "
     "built with it): a newer PyTorch and NCCL, or another dtype for the collective",
     re.compile(_NCCL_DTYPE + r"(?:BFloat16|Float8\w*)\b")),
    # a precision the GPU has no hardware for, refused before training starts: Transformers' ``Your setup doesn't
    # support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0`` (a V100 or a Colab/Kaggle T4),
    # vLLM's ``Bfloat16 is only supported on GPUs with compute capability of at least 8.0``, DeepSpeed's and
    # Accelerate's ``bf16 … not supported`` on such a GPU: the job's setting against the machine
    (Category.UNRECOGNISED, "bfloat16 asked of a GPU without it (before Ampere: V100, T4): fp16 instead, or a GPU of "
     "compute capability 8.0 or more",
     re.compile(r"Your setup doesn't support bf16|\bBfloat16 is only supported on GPUs with compute capability"
                r"|\bbf16 (?:mixed precision |training )?(?:is )?(?:not supported|requires) (?:on|by|an? )?(?:this|your)? ?"
                r"(?:GPU|device|hardware|Ampere)", _I)),
    # torch.compile of a model FSDP wraps with flat parameters (PyTorch 2.0-2.1's Dynamo: ``AssertionError: Dynamo only
    # supports FSDP with use_orig_params=True``): a combination PyTorch refuses, the wrapping's setting
    (Category.UNRECOGNISED, "torch.compile of an FSDP model without use_orig_params=True, a combination PyTorch refuses: "
     "FSDP(…, use_orig_params=True)", re.compile(r"\bDynamo only supports FSDP with use_orig_params=True")),
    # a data type no NCCL takes (``… not supported for NCCL process group: ComplexFloat``): the program's call, which
    # can pass the values viewed as real pairs (torch.view_as_real)
    (Category.RANK_CRASHED, "a tensor of a type no NCCL release takes (complex numbers: pass torch.view_as_real of it)",
     re.compile(_NCCL_DTYPE + r"Complex\w*\b")),
    # a data type ProcessGroupGloo's dispatch does not take (``RuntimeError: Invalid scalar type`` from its
    # ``work.wait()``: bool before PyTorch 2.1, Ultralytics broadcasting its AMP flag): the program's call, or a newer
    # PyTorch
    (Category.RANK_CRASHED, "a tensor of a type gloo does not take (bool before PyTorch 2.1: cast it to uint8, or a "
     "newer PyTorch)", re.compile(r"\bRuntimeError: Invalid scalar type\b")),
    # a tensor ProcessGroupGloo's check refuses by its device, type or layout (``ProcessGroupGloo::allgather: invalid
    # tensor type at index 0 (expected TensorOptions(… device=cpu …), got TensorOptions(… device=mps:0 …)``: DDP on
    # Apple's GPU with gloo): the program's call, with tensors of a device gloo does not serve
    (Category.RANK_CRASHED, "a tensor gloo does not take (gloo serves CPU tensors, and CUDA ones for some collectives: "
     "not Apple's MPS or another device's; move it to the CPU, or use a backend of that device)",
     re.compile(r"\bProcessGroupGloo::\w{2,40}: invalid tensor (?:type|device|layout|size)\b")),
    # a CPU tensor handed to a collective of a group NCCL alone serves (ProcessGroupNCCL's check, ``RuntimeError: Tensors
    # must be CUDA and dense``; 2.x's dispatcher: ``No backend type associated with device type cpu``): the program's call
    (Category.RANK_CRASHED, "a CPU tensor passed to a collective that NCCL serves (NCCL takes CUDA tensors: move it to "
     "the GPU, or give the group a gloo backend for CPU tensors, init_process_group('cpu:gloo,cuda:nccl'))",
     re.compile(r"\bTensors must be CUDA and dense\b|\bNo backend type associated with device type cpu\b")),
    # an operator called on tensors of a device it has no kernel for (``Could not run 'aten::_amp_foreach_non_finite_
    # check_and_unscale_' with arguments from the 'CPU' backend``: a GradScaler over FSDP's CPU-offloaded gradients):
    # the program's or a library's placement of its tensors
    (Category.RANK_CRASHED, "an operator called on tensors of a device it has no kernel for (CPU tensors where CUDA is "
     "needed: where the program or a library placed them)",
     re.compile(r"\bCould not run '[^'\n]{1,300}' with arguments from the '\w{2,40}' backend")),
    # an index past the end of what it indexes, in torch's or numpy's words without the exception's class (a coroutine's
    # log: ``ERROR:root:coroutine task failed: index 43094749 is out of bounds for dimension 0 with size 4490``): the
    # program's own error
    (Category.RANK_CRASHED, "a program's own error: an index out of range of the tensor or array it indexes",
     re.compile(r"\bindex -?\d{1,20} is out of bounds for (?:dimension|axis) \d{1,3} with size \d{1,20}\b")),
    # a Python TypeError's or AttributeError's words on a line of their own, the class cut away or never printed (a
    # logger's message of the exception: ``'NoneType' object is not subscriptable``, ``… has no attribute 'shape'``):
    # the program's own error
    (Category.RANK_CRASHED, "a program's own error: an operation on a value of the wrong type (often None)",
     re.compile(TYPE_ERROR_WORDS)),
    # TensorFlow's collective ops aborted by a worker whose input ran out mid-step (``BaseCollectiveExecutor::StartAbort
    # Out of range: [_Derived_]End of sequence``, ``Aborting RingReduce with Out of range: …``): that worker's data
    # ended before the others' (no steps_per_epoch, a partial last batch), its error ends the step for all
    (Category.RANK_CRASHED, "a worker whose input ran out of data in the middle of a synchronised step (its dataset "
     "ended before the others')", re.compile(r"\b(?:StartAbort|Aborting RingReduce with) Out of range: "
                                             r"(?:\[_Derived_\])?End of sequence\b")),
)
_OUTCOMES: tuple[tuple[Category, str, re.Pattern[str]], ...] = (
    # CUDA's runtime unloading at the process's exit while a thread still calls it (cudaErrorCudartUnloading, ``CUDA
    # error: driver shutting down`` from PyTorch's NCCL watchdog or cleanup thread): the process's own exit, not the GPU,
    # and an outcome: what made it exit (a timeout, an error) is the cause where the lines show one
    (Category.RANK_CRASHED, "a thread still using CUDA while its process exited (CUDA's runtime unloading: the "
     "process's own exit path, not the GPU)", re.compile(r"\bdriver shutting down\b|cudaErrorCudartUnloading", _I)),
    (Category.RENDEZVOUS_TIMEOUT, "a rendezvous or store barrier that did not gather everyone",
     re.compile(r"RendezvousTimeoutError|rendezvous\b[^\n]{0,60}\b(?:timed out|timeout)|waiting for clients"
                r"|store[_ ]based[_ ]barrier|timed out initializing process group"
                # Slurm's PMIx exchange between the job's nodes (srun --mpi=pmix): slurmstepd's fence timed out
                r"|pmixp_coll\w*[^\n]{0,120}\bcollective timeout"
                # MindSpore's dynamic cluster: a group's root never published its id (``Failed to fetch the unique id
                # of the collective lib from the meta server node. Maybe the root rank process … has exited``)
                r"|fetch the unique id of the collective lib"
                # PaddlePaddle's TCPStore waiting out its timeout (``TCPStore timeouted and not all workers got ready``,
                # ``(Fatal) _timeout:900 elapsed:901 (elapsed > _timeout)=1 (at …/tcp_store.cc:392)``)
                r"|TCPStore timeouted|\(elapsed > _timeout\)"
                # Ray Train's controller giving up on its workers (``The worker group startup timed out after 30.0
                # seconds waiting for 8 workers.``): not all of them started, as a rendezvous that timed out
                r"|\bworker group startup timed out after [\d.]+ seconds waiting for \d+ workers"
                # JAX on a TPU slice waiting for every host to start the program (``UserWarning: TPU backend
                # initialization is taking more than 60.0 seconds. Did you run your code on all TPU hosts?``)
                r"|\bTPU backend initialization is taking more than [\d.]+ seconds\b"
                # hivemind's averager whose matchmaking found no peers to average with in time (``Averaging step
                # failed: could not find a group``)
                r"|\bAveraging step failed: could not find a group\b"
                # c10d's TCPStore (and torch_npu's, Ascend's ``The inner error: Socket Timeout``): a wait on the store
                # that ran out, the key's writer (the rendezvous's others, rank 0's unique id) never there
                r"|(?-i:\bSocket Timeout\b)", _I)),
    # a scheduler other than Slurm, or a cloud, ending the job from outside: GCE's preemption and maintenance, AWS Batch's
    # host terminated, Slurm's nodes set down as preempted (GCP's cluster toolkit), PBS Pro's ``=>> PBS: job killed:
    # walltime 7230 exceeded limit 7200``, LSF's ``TERM_RUNLIMIT: job killed after reaching LSF run time limit.`` (and
    # its memory limit, preemption, owner, administrator), Flux's time limit
    (Category.RANK_KILLED, "the scheduler ending the job (a time or memory limit, a preemption, its owner)",
     re.compile(r"\bInstance was preempted\b|\bInstance terminated during Compute Engine maintenance\b"
                r"|\bHost EC2 \(instance [\w-]{1,40}\) terminated\b|\bwith reason=(?:Preempted instance|Instance terminated)\b"
                r"|=>> PBS: job killed: \w+ [\d.]+\w* exceeded limit|\bTERM_(?:RUNLIMIT|MEMLIMIT|PREEMPT|OWNER|ADMIN"
                r"|CPULIMIT|SWAP|EXTERNAL_SIGNAL|FORCE_OWNER|FORCE_ADMIN|REQUEUE_OWNER|REQUEUE_ADMIN): job killed"
                # Flux's exception for a job out of its time (``job.exception ƒ2Ny4Vn7X1F type=timeout severity=0
                # resource allocation expired``)
                r"|\bjob\.exception \S{1,40} type=timeout severity=0\b|\bresource allocation expired\b", _I)),
    # a host's own address, found by its name, looked up among the cluster's and not there: the name resolves to
    # loopback (Debian's ``127.0.1.1`` line in /etc/hosts) or to docker0's bridge (SkyPilot's ``RuntimeError: IP address
    # 127.0.1.1 not found in cluster IPs: […]``, ``ValueError: '172.17.0.1' is not in list``)
    (Category.LOOPBACK_ADDRESS, "a host that took its own address from loopback or a container bridge (its name "
     "resolves to 127.0.1.1, or docker0's 172.17.0.1), which is not among the cluster's addresses",
     re.compile(r"(?<![\d.])['\"]?(?:127\.\d{1,3}\.\d{1,3}\.\d{1,3}|172\.17\.0\.1)['\"]? (?:is )?not (?:found )?in\b")),
    # a peer that advertised a loopback address for a connection other hosts must make (vLLM's NIXL handshake failing
    # with ``'remote_host': 'localhost'`` in its context: the side channel's host left at its default)
    (Category.LOOPBACK_ADDRESS, "a peer that advertised a loopback address (localhost) to the other hosts",
     re.compile(r"'remote_host': '(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1)'"
                r"|\bremote_host=(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3})\b", _I)),
    # torchelastic (2.13+) watching its workers: one stuck in the kernel (uninterruptible sleep, D state) past its bound,
    # or left unkillable after SIGKILL: a GPU, NIC or file system it waits on hung; that worker never arrives
    (Category.LAGGING_RANK, "a worker stuck in the kernel (uninterruptible sleep: a GPU, NIC or file system it waits on "
     "hung; its host may need a reboot)",
     re.compile(r"stuck in uninterruptible sleep \(D-state\)|did not exit after SIGKILL[^\n]{0,80}uninterruptible", _I)),
    # AWS Neuron's collectives without EFA (its OFI plugin missing): no traffic between instances at all
    (Category.SOCKET_FALLBACK, "collectives without the fabric between instances (the OFI plugin or EFA missing)",
     re.compile(r"Ofi plugin is not installed or EFA is not enabled", _I)),
    # a host whose own network went away (its bond's last link down)
    (Category.NETWORK_PARTITION, "a host whose network went down (its bond's last link)",
     re.compile(HOST_NETWORK_DOWN, _I)),
    # a host dropping connections itself (its connection-tracking table full, its ARP table overflowing, the store's
    # listen backlog overflowing on a large job: ``Possible SYN flooding on port 10.1.2.3:29500``)
    (Category.PEER_UNREACHABLE, "a host that dropped connections (connection tracking full, ARP table overflow, the "
     "listen backlog of a port overflowing)",
     re.compile(CONNECTIONS_DROPPED, _I)),
    # NCCL's Unix-domain socket (misc/ipcsocket.cc, also in Transformer Engine's userbuffers) passing a CUDA IPC handle
    # to another process of the node: ``UDS: Sending data over socket /tmp/nccl-socket-3-… failed : Connection refused
    # (111)``. Its name is an abstract socket's, which exists in one network namespace only: no such process listens in
    # this one (a node's ranks in separate containers or pods), or it has exited. Not the network: before its words
    (Category.UNRECOGNISED, "a process of the same node that NCCL's local socket could not reach (its ranks in separate "
     "containers or pods: abstract Unix sockets are per network namespace; run them in one, or with the host's "
     "network; or that process exited)",
     re.compile(r"\bUDS: (?:Sending|Receiving) data over socket\b[^\n]{0,120}\b(?:Connection refused|No such file)", _I)),
    # Horovod's Gloo rendezvous through the driver's HTTP store (horovodrun, horovod.spark): ``[… http_store.cc:96] HTTP
    # GET request failed too many times, aborting.``: the workers could not reach the driver's server
    (Category.PEER_UNREACHABLE, "Horovod's rendezvous server (the driver's HTTP store) that the workers could not reach",
     re.compile(r"\bHTTP (?:GET|PUT|POST|DELETE) request failed too many times\b", _I)),
    # torch_xla's (XRT's) mesh service: a rendezvous among the TPU processes whose connection to the mesh master closed
    # or was reset (``Failed to meet rendezvous 'init': Socket closed (14)``, gRPC's UNAVAILABLE): the master's process
    # went away (crashed, killed) or could not be reached; what took it is the first thing to look for
    (Category.PEER_UNREACHABLE, "torch_xla's mesh master (its rendezvous among the TPU processes) that closed the "
     "connection or could not be reached: its process went away, or the network between them",
     re.compile(r"\bFailed to meet rendezvous '[^'\n]{1,120}': (?:Socket closed|Connection reset by peer|Connection "
                r"refused|failed to connect)", _I)),
    (Category.PEER_UNREACHABLE, "a peer or store that could not be reached",
     re.compile(r"connection refused|\bECONNREFUSED\b|no route to host|\bEHOSTUNREACH\b|network is unreachable"
                # a server's port that a client could not reach, in its own words (llama.cpp's RPC backend: ``Failed
                # to connect to 192.168.1.20:50052``)
                r"|\bfailed to connect to \S{0,80}:\d{2,5}\b"
                r"|name or service not known|nodename nor servname|temporary failure in name resolution"
                # HCCL (Ascend): ``EI0009 … Transport init error. Reason: [Create][DestLink]Create Dest error! … remote_ip_addr[…]``
                r"|transport init error\b[^\n]{0,80}\bCreate Dest error|\bEI0009\b"
                r"|host not found|unknown host|getaddrinfo|could not resolve|failed to resolve|connection timed\b"  # "timed" alone: cut short by the paste
                # Hydra not resolving a host of the job's list; Open MPI's MPI_Init that could not reach a peer
                r"|unable to get host address for|\bReturned \"Unreachable\""
                r"|software caused connection abort"
                # Ray's workers and drivers that could not reach the head node's control store (``Unable to connect to
                # GCS at 10.1.2.3:6379``, ``Failed to connect to GCS within 60 seconds``): Ray's store, as c10d's
                r"|\b(?:Unable|Failed) to connect to GCS\b"
                r"|\bconnect: resource temporarily unavailable"  # EAGAIN: the peer's listen backlog is full
                # an endpoint with no host at all (an address variable that was empty: ``Invalid zmq path:
                # tcp://:29550``, ``init_method=tcp://:29500``)
                r"|\btcp://:\d{1,5}\b"
                # a connect that failed with its errno as a number: EHOSTUNREACH, ECONNREFUSED, ENETUNREACH (Open MPI's
                # ``mca_btl_tcp_endpoint_complete_connect: connect() failed with errno=113``)
                r"|\bconnect\(\)[^\n]{0,80}\berrno[= ]?(?:113|111|101)\b"
                # PaddlePaddle's store client (``(InvalidArgument) Network 10.1.2.3:6170 cannot be connected.``)
                r"|\bNetwork [\w.:\-\[\]]{1,80} cannot be connected\b"
                # what the error's type and code say whatever the language of its words (a localized system's:
                # ``ConnectionRefusedError: [Errno 111] Verbindungsaufbau abgelehnt``, ``[WinError 10061] 由于目标计算机积极
                # 拒绝，无法连接。``): refused, no route, network unreachable, timed out (Linux's numbers, Windows')
                r"|\bConnectionRefusedError\b|\[(?:Errno (?:111|113|101|110)|WinError (?:10061|10065|10051|10060))\]"
                r"|\bactively refused\b"
                # a peer-to-peer or RPC layer that reached none of the peers it was given (hivemind's daemon: ``failed
                # to connect to bootstrap peers``; gRPC's ``failed to connect to all addresses``)
                r"|\b(?:failed|unable|could not|couldn't|cannot|can't) (?:to )?connect to (?:any |all |the )?"
                r"(?:(?:bootstrap|remote|initial) )?(?:peers\b|addresses\b|(?:master|coordinator|head) (?:node|server)\b)"
                # (hivemind's DHT: ``DHTNode bootstrap failed: none of the initial_peers responded to a ping``)
                r"|\bnone of the initial[_ ]peers responded\b", _I)),
    # a watchdog of the training's own (the resiliency extension's rank monitor and launcher, AXLearn's, the
    # userbuffers of TransformerEngine's comm-GEMM overlap) saying a rank made no progress past its bound
    (Category.UNEXPLAINED_TIMEOUT, "a rank that made no progress past a watchdog's bound (a hang; what held it is "
     "not in this line)", re.compile(NO_PROGRESS)),
    # (DeepEP's kernels and NVSHMEM's proxy waiting out their bound, error lines by parsers.generic, have no category
    # here: the held cases' threads found a library bug or the RDMA setup behind them, A028, not a rank that was late)
    # NVSHMEM's bootstrap connect giving up (NCCL's socket code)
    (Category.PEER_UNREACHABLE, "a peer that could not be reached (NVSHMEM's bootstrap gave up connecting)",
     re.compile(r"\bsocket(?:Start|Poll)Connect: exceeded (?:retries|timeouts)\b")),
    # a peer's NIC that stopped answering over the fabric (libfabric: EFA, Slingshot's CXI): its node or process gone
    (Category.PEER_UNREACHABLE, "a peer's NIC that stopped answering over the fabric (its node or process gone, or "
     "the link)", re.compile(r"\bbecomes unresponsive\b|\bC_RC_(?:UNDELIVERABLE|PTLTE_NOT_FOUND)\b")),
    # PaddlePaddle's communication watchdog (comm_task_manager.cc): ``Find timeout start but not finish task:group_key:
    # pp_group_1,group_ranks:[1, 5],global_rank:5,…``, ``Find timeout init but not start task:…``: a collective that
    # ran out its timeout, the rank that held it not said
    (Category.UNEXPLAINED_TIMEOUT, "a collective that timed out (PaddlePaddle's communication watchdog)",
     re.compile(r"Find timeout (?:init but not start|start but not finish) task", _I)),
    # PyTorch's error for a collective called on a communicator its watchdog had aborted, the reason cut from the
    # paste (``DistBackendError: NCCL communicator was aborted on rank 1.``; with ``Original reason for failure was:
    # …`` that reason's words are read): a collective that failed or timed out before, which rank's doing not said
    (Category.UNEXPLAINED_TIMEOUT, "a communicator PyTorch aborted after a collective failed or timed out (the reason "
     "is not in this line)", re.compile(r"\bNCCL communicator was aborted\b(?![^\n]{0,40}\breason for failure was:\s*\S)")),
    # CANN's wait for an NPU's stream that ran out (``EE1002: … Stream synchronize timeout. rtDeviceSynchronize execute
    # failed, reason=[stream sync timeout]``, ``NPU warning, error code is 507046``), and HCCL's account of a collective
    # that did not finish in HCCL_EXEC_TIMEOUT (``Possible Cause: 1. An exception occurs during the execution on some
    # NPUs in the cluster. …``, its header cut): work on the device that did not complete, which rank held it not said
    (Category.UNEXPLAINED_TIMEOUT, "work on an NPU that did not complete in its timeout (a collective or a kernel that "
     "hung; which rank held it is not in this line)",
     re.compile(r"\bStream synchronize timeout\b|\breason=\[stream sync timeout\]|\berror code is 507046\b"
                r"|\bAn exception occurs during the execution on some NPUs in the cluster\b")),
    # Ray's words for a node that went away under its workers (``The actor died because its node has died. Node Id:
    # …``, ``NodeDiedError: Task failed due to the node (where this task was running) was dead or unavailable``): the
    # machine shut down, preempted or cut off, its workers with it
    (Category.RANK_KILLED, "a node that went away under its workers (Ray)",
     re.compile(r"died because its node has died|\bnode \(where this task was running\) was dead\b", _I)),
    (Category.RANK_KILLED, "a process killed (SIGKILL)",
     re.compile(r"\bSIGKILL\b|signal 9\b|\bstatus=9/KILL\b|(?:exit ?code|exit status|return code|status(?: code)?)[:= ]+137\b|exitcode[:= ]+-9\b|\bKilled\b")),
    (Category.RANK_CRASHED, "a process that crashed",
     re.compile(r"segmentation fault|\bSIGSEGV\b|\bSIGABRT\b|\bSIGBUS\b|\bSIGFPE\b|\bSIGILL\b|core dumped|bus error"
                # systemd's record of a service that crashed (``code=dumped, status=11/SEGV``; the C library's own aborts,
                # ``free(): invalid pointer``, stay errors of no category, as ``*** stack smashing detected ***`` does)
                r"|\bstatus=\d+/(?:SEGV|ABRT|BUS|FPE|ILL)\b"
                # (``Aborted`` as the shell and Python write SIGABRT; an MPI rank's ``Rank 1632 aborted with code 15:
                # Fatal error in internal_Wait`` is its MPI_Abort, whose words say why)
                r"|(?-i:\bAborted\b)|terminate called|terminating (?:with|due to) uncaught exception"
                # a launcher ending the job after a process failed: Open MPI's ``Per user-direction, the job has been
                # aborted.``, srun's ``Job step aborted: Waiting up to 32 seconds for job step to finish.``
                r"|\bthe job has been aborted\b|\bJob step aborted\b", _I)),
    # a supervisor's record of a worker process that exited with an error code, its own error printed elsewhere
    # (prime-rl's orchestrator: ``Error: Trainer failed with exit code 1``; not a container's or a hook's start)
    (Category.RANK_CRASHED, "a process that exited with an error code (its own error, printed elsewhere)",
     re.compile(r"\b(?:trainer|worker|process|rank \d+|subprocess|child|replica)\b[^\n]{0,30}?\b(?:failed|exited|died|"
                r"crashed) with (?:exit )?code -?[1-9]\d{0,2}\b", _I)),
    # torchrun's agent raising for a worker that failed, its report's table (which worker, how) not in the inputs
    # (``torch.distributed.elastic.multiprocessing.errors.ChildFailedError:`` and the paste ends, or its table is cut
    # before the root cause): a worker died, how is not said
    (Category.RANK_CRASHED, "a worker torchrun started that failed (its report's table, which says how, is not in the "
     "inputs)", re.compile(r"\bChildFailedError\b")),
    # Horovod's own words on every rank once one failed or finished early (``Horovod has been shut down. This was
    # caused by an exception on one of the ranks or an attempt to allreduce … after one of the ranks finished``)
    (Category.RANK_CRASHED, "another rank that failed or finished first (Horovod shut down on the others)",
     re.compile(r"Horovod has been shut down", _I)),
)
# a bare "timed out" is no outcome of its own here: a download, a health check or a collective may have timed
# out, and the rules that read collective timeouts know their formats; such a line stays unrecognised (A028)


# a host that is none of the job's: a download, a package index, an experiment tracker, object storage
# (pip itself, not a path of a package it built: ``/tmp/pip-install-…/horovod/common/gloo/http_store.cc``)
_ELSEWHERE = re.compile(r"https?://|HTTPS?Connection|\brequests\.|urllib|huggingface|hf_hub|\bpip\b(?!-)|download|wandb"
                        # (Google Cloud Storage's gcs in lower case: Ray's GCS, its control store, is the job's own)
                        r"|amazonaws\.com|\bboto|\bs3\b|(?-i:\bgcs\b)|gs://|storage\.googleapis"
                        # (a configuration's reference resolved to a Python object: Megatron's ``Could not resolve
                        # target 'megatron.core.…': …``, Hydra's targets; no host)
                        r"|\bresolve (?:target|import|class|module|symbol|reference)\b", _I)
_NOT_THE_LIMIT = re.compile(_REFUSED_REGISTRATION)
# a warning that memory may run out, not that it did (Lightning's ``WeightAveraging doesn't support sharding model
# layers, so you may run out of memory.``)
_MAY_RUN_OUT = re.compile(r"\b(?:may|might|could|can|will likely)\s+(?:run|be running)\s+out of memory\b"
                          # a message's list of what may have happened (fairseq's ``Workers can fall out of sync if one
                          # of them runs out of memory, or if there are other conditions …``, wrapped by its paste)
                          r"|\bif (?:one of them|any of them|a worker|one worker) runs? out of memory\b"
                          r"|\bruns? out of memory, or if\b", _I)
# oneCCL refusing its shm provider as the primary one for a job across nodes (a setting, no shared memory run out:
# ``shm provider is requested as primary provider but global_count (16) != local_count (8)``)
_SHM_SETTING = re.compile(r"\bshm provider is requested as primary provider\b")
_UNLESS = {Category.PEER_UNREACHABLE: _ELSEWHERE, Category.MEMLOCK_LIMIT: _NOT_THE_LIMIT,
           Category.RANK_OUT_OF_MEMORY: _MAY_RUN_OUT, Category.SHM_EXHAUSTED: _SHM_SETTING}


# a file the program opens for writing in a folder that does not exist (tacotron2's ``open("logs/{}_GPU_{}.log", "w")``
# before ``logs/`` is made): the code line that raised ``FileNotFoundError`` opens with a writing mode
_WRITE_OPEN = re.compile(r"(?:^|[\s(,])(?:mode\s*=\s*)?['\"][wax]b?\+?['\"]\s*\)")
MISSING_FOLDER = Reading(Category.UNRECOGNISED, "a file the program writes in a folder that does not exist (create "
                         "it before the job starts, on every node)", True)


# a bare ``NotImplementedError`` raised in an installed library's own code (DeepSpeed's pipeline engine reducing bf16
# gradients under ZeRO, vLLM's engine asked for an RPC its executor lacks): a path the library has not written for
# the job's settings, not the program failing as it ran (one raised in the program's own code is its own error)
UNIMPLEMENTED = Reading(Category.UNRECOGNISED, "a code path the library has not implemented for the job's settings (a "
                        "bare NotImplementedError raised in the library's own code): another setting or release", True)


def unimplemented(exception: Event) -> bool:
    """A bare ``NotImplementedError`` (no message) raised in an installed library's own code (parsers.traceback's
    ``library_raised``)."""
    data = exception.data
    return str(data.get("type") or "").rsplit(".", 1)[-1] == "NotImplementedError" and not data.get("message") \
        and bool(data.get("library_raised"))


def folder_missing(exception: Event) -> bool:
    """An exception's ``FileNotFoundError`` (or ``[Errno 2]``) raised by a code line that opens a file for writing:
    its folder is missing, a setup the job needs (A028), not a file that a race deleted or a dataset not there."""
    data = exception.data
    return exception.kind is Kind.EXCEPTION \
        and ("FileNotFoundError" in str(data.get("type") or "") or "[Errno 2]" in str(data.get("message") or "")) \
        and bool(_WRITE_OPEN.search(str(data.get("code_line") or "")))


def read_as(text: str) -> Reading | None:
    """The category ``text``'s words name (a cause before an outcome), or None. ``text`` may hold the frames of
    an exception's traceback too: a refused or unresolved host inside a download is no peer of the job."""
    for tier, cause in ((_CAUSES, True), (_OUTCOMES, False)):
        for category, what, words in tier:
            unless = _UNLESS.get(category)
            if words.search(text) and not (unless and unless.search(text)):
                return Reading(category, what, cause)
    return None


def strongest(texts: Iterable[str]) -> tuple[int, Reading] | None:
    """The index and reading of the line that best names the failure: the first that names a cause (in the
    order of :data:`_CAUSES`: the most specific words), else the first that names an outcome."""
    best: tuple[int, int, Reading] | None = None  # (tier rank, index, reading)
    order: dict[Category, int] = {}
    for n, (category, _, _) in enumerate(_CAUSES):  # a category's first entry: its place among the causes
        order.setdefault(category, n)
    for index, text in enumerate(texts):
        reading = read_as(text)
        if reading is None:
            continue
        # (every cause before any outcome: an outcome ranks after the last of the causes' places)
        rank = order.get(reading.category, len(_CAUSES)) if reading.cause else len(_CAUSES) + 1
        if best is None or rank < best[0]:
            best = (rank, index, reading)
    return (best[1], best[2]) if best else None
