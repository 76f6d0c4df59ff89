"""A GPU that failed: CUDA errors, ECC errors and the kernel's Xid lines. Pure: no I/O.

* ``RuntimeError: CUDA error: an illegal memory access was encountered`` (and ``what():  CUDA error: …`` of a
  C++ exception, ``Process group watchdog thread terminated with exception: CUDA error: …``), ``CUDA error:
  uncorrectable ECC error encountered``, ``unspecified launch failure``, ``misaligned address``;
* the driver API's names: ``CUDA_ERROR_ECC_UNCORRECTABLE``, ``CUDA_ERROR_ILLEGAL_ADDRESS``, ``returned error 214``;
* the kernel log: ``NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus.``; its PCIe error
  reports about the GPU's function that it cannot recover from (``nvidia 0000:03:00.0: AER: can't recover``);
* the IOMMU refusing a device's DMA (``nvidia 0000:0a:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT …]``, Intel's ``DMAR:
  … fault addr …``): ``peer_access`` of source ``iommu-fault``;
* ``peer access is not supported between these two devices`` from a kernel of the program's own (vLLM's and
  SGLang's custom all-reduce) or a CUDA call: ``peer_access`` (NCCL's own ``Cuda failure 217`` is :mod:`.nccl_warn`'s);
* ``nvidia-smi`` on a GPU the driver lost: ``Unable to determine the device handle for GPU0000:03:00.0: Unknown
  Error``, ``GPU 00000000:3B:00.0: GPU is lost``.

* ROCm's runtime (HSA) and the amdgpu driver: ``Memory access fault by GPU node-4 (Agent handle: 0x…) on address
  0x7fb7a0d67000. Reason: Page not present or supervisor privilege.`` (HIP's illegal memory access), ``HW
  Exception by GPU node-9 (Agent handle: 0x…) reason :GPU Hang``, the kernel's ``amdgpu 0000:03:00.0: amdgpu:
  [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32776, for process python3 pid 172866 …)``. ``node-N`` is the
  agent's node in the KFD topology (the CPUs come first), not a rank or a device index.

A ``device-side assert triggered`` is the program's (an index out of range), not the GPU's: it is left to the
exception the traceback parser reads. Where no Python traceback comes, because PyTorch's NCCL watchdog met the
error first and aborted the process (``[PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread
terminated with exception: CUDA error: device-side assert triggered``, then SIGABRT), that line is the rank's own
exception; so is the kernel's assertion above it (``IndexKernel.cu:111: operator(): block: [0,0,0], thread:
[0,0,0] Assertion `… "index out of bounds"` failed.``). NCCL's ``Cuda failure 700 '…'`` is read by
:mod:`.nccl_warn`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event
from syncdoctor.analyze.parsers.torch_watchdog import parse_pg_prefix

__all__ = ["FABRIC_DOWN", "KEYWORDS", "REFUSED_CUMEM", "XIDS", "Xid", "parse"]

KEYWORDS = ("cudaError", "hipError", "HSA_STATUS_ERROR_", "THCudaCheck FAIL", "NVRM: GPU at PCI", "access fault by GPU", "HW Exception by GPU", "page fault (", "CUDA error", "CUDA driver error", "HIP error", "CUDA_ERROR_", "cuda runtime error", "Xid", "ECC error", "fallen off the bus", "Triton Error [CUDA]",
            "Unable to determine the device handle", "GPU is lost", "fallen off the bus", "Detected XID", "AER:", "peer access is not supported",
            " failed: ", "Timedout job", "GPU HANG", "Assertion `", "UNCORRECTABLE_ERROR", "Engine reset:",
            "ERROR_DEVICE_LOST", "CUDA initialization: ", "error from cudaGetDeviceCount()", "driver interface version", "ERROR_GPU_IS_LOST",
            "fabricmanager daemon", "imex daemon shutdown", "NVLink training of fabric", "fabric manager found but not active",
            "current device is not ", "finishedGPUExecution",
            " timeout, signaled seq", "device lost from bus", "page fault (src_id", "exceed threshold", "reaches threshold",
            "XGMI PCS", "qcm fence wait loop", "unrecoverable state", "IO_PAGE_FAULT", "fault addr")

# THC's wording (PyTorch <= 1.x): ``cuda runtime error (39) : uncorrectable ECC error encountered at /pytorch/…``
# the message ends at its line's end, a full stop, or a newline escaped inside a JSON string ("…\\nCUDA kernel errors")
# (a library's own check that names where it failed before the quoted words, DeepEP's ``CUDA error
# /…/deep_ep.cpp:226 'invalid resource handle'``: the words are those in quotes)
_CUDA = re.compile(r"(?:CUDA error|HIP error) [\w./\-]{1,300}:\d{1,6} '(?P<quoted>[^'\n]{3,160})'"
                   r"|(?:CUDA error|HIP error|Triton Error \[CUDA\]|cuda runtime error \(\d+\) ?):? (?P<msg>[^\n.\\]{3,160}?)"
                   r"(?= at /|[\n.\\]|$)")
# a CUDA runtime call a library checks itself (Horovod, apex, custom ops): ``cudaEventQuery failed: an illegal memory
# access was encountered`` (cudaGetErrorString's words, lower case)
_CUDA_CALL = re.compile(r"\bcuda[A-Z]\w{2,40}(?:\(\))? failed(?: with error)?:? (?P<msg>(?:an? |unspecified |misaligned )"
                        r"[a-z][^\n.\\]{3,160}?)(?=[\n.\\]|$)")
_DRIVER = re.compile(r"\b(?P<name>CUDA_ERROR_[A-Z_]+)\b")
# the IOMMU refusing a device's DMA, in the kernel log: AMD's ``nvidia 0000:0a:00.0: AMD-Vi: Event logged
# [IO_PAGE_FAULT domain=0x000f address=0x… flags=0x0020]`` (older kernels: ``AMD-Vi: Event logged [IO_PAGE_FAULT
# device=0a:00.0 domain=0x0000 …]``), Intel's ``DMAR: [DMA Read] Request device [0a:00.0] fault addr 0x… [fault
# reason 06] PTE Read access is not set``; the driver's name before it says a GPU's (nvidia, amdgpu)
_IOMMU_FAULT = re.compile(
    r"(?:(?P<driver>nvidia|amdgpu) (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): )?"
    r"(?:AMD-Vi: Event logged \[IO_PAGE_FAULT(?: device=(?P<pci2>[0-9a-fA-F:.]{7,12}))?"
    r"|DMAR: \[DMA (?:Read|Write)[^\]]{0,20}\] Request device \[(?P<pci3>[0-9a-fA-F:.]{7,12})\] fault addr)")
# CUDA's (and HIP's) IPC calls, named beside their error by the libraries that make them (Cray MPICH's GTL:
# ``cuIpcOpenMemHandle: invalid argument, CUDA_ERROR_INVALID_VALUE, line no 360``)
_IPC_CALL = re.compile(r"\b(?P<call>(?:cu|cuda|hip)IpcOpenMemHandle)\b")
# a CUDA call a library says it went on without (PyTorch's symmetric memory: ``Warning: SymmetricMemory:
# cuMulticastCreate failed with: "CUDA_ERROR_NOT_SUPPORTED". Gracefully skipping multicast initialization.``): a feature
# missing there, no failure
_WENT_ON = re.compile(r"\bGracefully skipping\b|\b[Ff]alling back to\b")
# CUDA refusing a shareable allocation of its virtual memory API (error 800 on cuMemCreate: ``[CUDA_ERROR_NOT_PERMITTED]
# operation not permitted in expression cuMemCreate(&handle, …)``, MSCCL++'s ``CuError: (800, 'Call to cuMemCreate(…)
# failed.``): fabric memory without an IMEX channel, the setup's, no fault of the GPU (an error line here, whose
# category rules.phrases reads with the same words)
REFUSED_CUMEM = (r"(?:\bCUDA_ERROR_NOT_PERMITTED|\boperation not permitted|\(800, ')[^\n]{0,80}?\bcuMem(?:Create|Map|"
                 r"ExportToShareableHandle|ImportFromShareableHandle|MulticastCreate)\b")
_REFUSED_CUMEM = re.compile(REFUSED_CUMEM)
# the runtime's error by its name, then its words (CuPy's ``CUDARuntimeError: cudaErrorInvalidDevicePointer: invalid
# device pointer``, Numba's, a program's own check; Kokkos' ``cudaSetDevice(cuda_device_id) error(
# cudaErrorDevicesUnavailable): CUDA-capable device(s) is/are busy or unavailable /…/Kokkos_Cuda_Instance.cpp:544``,
# whose words may open with ``CUDA`` and end before the source file's path)
_CUDA_NAMED = re.compile(r"\bcudaError(?!None\b|NotReady\b)[A-Z]\w{2,40}\)?: (?P<msg>(?:[a-z]|CUDA[ -])[^\n.\\]{3,160}?)"
                         r"(?= /|[\n.\\]|$)")
# PyTorch's epilogue under a CUDA or HIP error, which names its code (``Search for `hipErrorLaunchFailure' in
# https://rocm.docs.amd.com/… for more information.``), where the paste lost the error's own line above it; and ROCm's
# runtime aborting a queue for the GPU's fault (``Callback: Queue 0x7… aborting with error : HSA_STATUS_ERROR_EXCEPTION:
# An HSAIL operation resulted in a hardware exception. code: 0x1016``). The program's own codes (an assert, memory
# run out, an invalid argument) are left to their readings.
_EPILOGUE = re.compile(r"\bSearch for `(?P<name>(?:cuda|hip)Error(?:LaunchFailure|IllegalAddress|IllegalInstruction|"
                       r"MisalignedAddress|HardwareStackError|ECCUncorrectable|ECCNotCorrectable|InvalidPc|LaunchTimeOut|"
                       r"LaunchTimeout))'")
_HSA_QUEUE = re.compile(r"\baborting with error : (?P<code>HSA_STATUS_ERROR_(?:EXCEPTION|MEMORY_APERTURE_VIOLATION|"
                        r"ILLEGAL_INSTRUCTION|MEMORY_FAULT))\b(?P<rest>[^\n]{0,120})")
# ROCm's runtime aborting a queue for want of resources, with the device memory left (``… Aborting with error :
# HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. … Available Free mem :
# 234 MB``): with under a gigabyte left the GPU's memory ran out; with more, some other resource did (queues, signals,
# the host's memory), no reading of its own
_HSA_NO_MEMORY = re.compile(r"\bHSA_STATUS_ERROR_OUT_OF_RESOURCES\b[^\n]{0,400}?\bAvailable Free mem ?: ?(?P<mb>\d{1,7}) ?MB\b")
_HSA_LITTLE_LEFT_MB = 1024
# PyTorch's THC check (1.x, before c10's): ``THCudaCheck FAIL file=../aten/src/THC/THCCachingHostAllocator.cpp line=280
# error=710 : device-side assert triggered``: CUDA's error by its number and words
_THC = re.compile(r"THCudaCheck FAIL file=\S{1,300} line=\d{1,6} error=\d{1,4} : (?P<msg>[^\n]{3,160}?)\s*$")
_XID = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<xid>\d{1,4})(?!\d)")
# DCGM's health check (dcgmi health, its diagnostics): ``Detected XID 79 for GPU 3``
_DCGM_XID = re.compile(r"Detected XID (?P<xid>\d{1,3}) for GPU (?P<gpu>\d{1,3})")
# a kernel line quoted inside another tool's line (an alert: "Xid errors on instance: h, Error: May 19 07:08:57 h
# kernel: [680111.6] NVRM: Xid …"): the host of its syslog header
_SYSLOG_HOST = re.compile(r"\b[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d (?P<host>[A-Za-z0-9][\w.-]{0,62}) kernel: ")
# the driver's first report on a GPU, before its Xid: ``NVRM: GPU at PCI:0000:17:00: GPU-f114b259-…`` (which host
# holds the GPU a host-less line names by its PCI address, such as nvidia-smi's ``GPU 0000:17:00.0: GPU is lost``)
_GPU_AT = re.compile(r"NVRM: GPU at PCI:(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})")
# nvidia-smi on a GPU the driver lost: ``Unable to determine the device handle for GPU0000:03:00.0: Unknown Error``,
# ``GPU 00000000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU``
_SMI = re.compile(r"Unable to determine the device handle for (?i:GPU) ?(?P<pci>[0-9A-Fa-f:.]+): (?P<msg>.+?)\s*$"
                  r"|GPU (?P<pci2>[0-9A-Fa-f:.]+): GPU is lost"
                  # the driver's own line beside its Xid 79 (``NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.``)
                  # and DCGM's health check (``GPU 3 has fallen off the bus``)
                  r"|GPU (?:(?P<pci3>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): |(?P<index>\d{1,3}) )?"
                  r"(?:GPU )?has fallen off the bus")
# NVML's code for a GPU the driver lost, as its callers print it (the Kubernetes device plugin's health check: ``unable to
# get device handle from UUID: ERROR_GPU_IS_LOST; marking it as unhealthy``; DCGM; nvidia-smi's ``NVML_ERROR_GPU_IS_LOST``)
_NVML_LOST = re.compile(r"\b(?:NVML_)?ERROR_GPU_IS_LOST\b(?:[^\n]{0,80}?(?P<uuid>GPU-[0-9a-f]{8}-[0-9a-f-]{27}))?")
# the kernel's PCIe error reporting about the GPU's own function: ``nvidia 0000:03:00.0: AER: can't recover (no
# error_detected callback)``, ``nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal) …``
_AER = re.compile(r"\bnvidia (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): (?:AER: )?(?P<msg>"
                  r"(?:AER: )?can't recover.*|.*severity=Uncorrected.*|.*device recovery failed.*)$")
_HARDWARE = ("ECC", "fallen off the bus", "Xid", "uncorrectable", "ECC_UNCORRECTABLE", "HARDWARE")
_CAUSED_BY = re.compile(r"caused by previous Xid (\d{1,3})(?!\d)")


class Xid(NamedTuple):
    """What an Xid of NVIDIA's driver says, in our words after NVIDIA's Xid catalogue (docs.nvidia.com/deploy/
    xid-errors): what happened, whose fault it most often is (``program``: a kernel of the program's own faulted,
    it follows the code; ``after``: the driver cleaning up after a process that ended or faulted, a consequence;
    ``memory``, ``bus``, ``nvlink``, ``firmware``: the node's), and what to do."""

    what: str
    fault: str
    action: str


_FOLLOWS_CODE = ("it follows the program, not the node: run the failing step under compute-sanitizer or with "
                 "CUDA_LAUNCH_BLOCKING=1; only if it stays on one GPU whatever runs there, test that GPU (`dcgmi diag "
                 "-r 3`)")
_ECC = ("reset the GPU before it runs again (`nvidia-smi -r`, or reboot), check `nvidia-smi -q -d ECC,ROW_REMAPPER` "
        "and keep the node out of the job if it repeats")
_GSP = ("reset the GPU or reboot the node, and update the driver; if it repeats on that node, drain it and report it "
        "to the vendor")
_NVLINK = ("check the links on both ends (`nvidia-smi nvlink -s`, `nvidia-smi nvlink -e`) and, on NVSwitch systems, "
           "nvidia-fabricmanager; reset the GPUs, and drain the node if the link stays down or keeps counting errors")
XIDS: dict[int, Xid] = {
    13: Xid("a graphics engine exception: a kernel faulted (an address out of range, an illegal instruction)",
            "program", _FOLLOWS_CODE),
    31: Xid("a GPU memory page fault (MMU fault): a kernel read or wrote an address it does not own", "program",
            _FOLLOWS_CODE),
    43: Xid("the GPU stopped processing a process's work after that process hit an error (it follows an Xid 13 or 31, "
            "or a process that faulted)", "after", "read the error before it: the GPU itself is most often fine"),
    45: Xid("the driver cleaned up a process's GPU work because the process ended (killed, crashed, stopped) or an "
            "earlier error forced it", "after",
            "find why that process ended (an OOM kill, a signal, an earlier Xid): the GPU itself is most often fine"),
    48: Xid("an uncorrectable double-bit ECC error in the GPU's memory", "memory", _ECC),
    61: Xid("the GPU's internal micro-controller hit a breakpoint (firmware)", "firmware", _GSP),
    62: Xid("the GPU's internal micro-controller halted (firmware)", "firmware", _GSP),
    63: Xid("a row of the GPU's memory was marked for remapping (or a page retired) after ECC errors; a GPU reset "
            "activates it", "memory", "reset the GPU when it is idle; if such events repeat, drain the node"),
    64: Xid("remapping a row of the GPU's memory (retiring a page) failed", "memory",
            "drain the node: the GPU's memory cannot be repaired in place and needs service"),
    74: Xid("an NVLink error between this GPU and another (a link down, CRC or replay errors)", "nvlink", _NVLINK),
    79: Xid("the GPU fell off the bus: the host lost it on PCIe (power, heat, the slot, the card)", "bus",
            "drain and reboot the node; check its power and cooling, the PCIe slot and the card (`dmesg -T | grep -i "
            "aer`), and keep it out until `dcgmi diag -r 3` passes"),
    92: Xid("a high rate of single-bit ECC errors in the GPU's memory", "memory",
            "watch `nvidia-smi -q -d ECC`; drain the node if the count keeps rising"),
    94: Xid("a contained ECC error: the process that used that memory was stopped, the GPU goes on", "memory",
            "restart the job (the GPU is usable); reset the GPU when idle to remap the row, drain if it repeats"),
    95: Xid("an uncontained ECC error: every process on that GPU was stopped", "memory", _ECC),
    109: Xid("a context switch timeout: the GPU did not switch away from a process's work in time", "program",
             "a kernel that runs too long or hangs, or the driver: update the driver; if it follows one GPU, test it"),
    119: Xid("the GPU's system processor (GSP) did not answer the driver in time", "firmware", _GSP),
    120: Xid("the GPU's system processor (GSP) reported an error", "firmware", _GSP),
    140: Xid("an unrecovered ECC error in the GPU's memory", "memory", _ECC),
    **{number: Xid("an NVLink error (Blackwell's NVLink reports)", "nvlink", _NVLINK) for number in range(144, 151)},
    154: Xid("the driver names the recovery this GPU needs (a GPU reset, a node reboot)", "firmware",
             "do what the line asks (reset the GPU, reboot the node) before the GPU runs again"),
}


def _hardware(*xids: int) -> bool:
    """Whether one of these Xids is the node's (an Xid the table does not hold counts as the node's)."""
    return any(xid not in XIDS or XIDS[xid].fault not in ("program", "after") for xid in xids)


# a CUDA kernel's own assertion (ATen's bounds checks, a custom kernel's assert): ``/pytorch/aten/src/ATen/native/
# cuda/IndexKernel.cu:111: operator(): block: [0,0,0], thread: [0,0,0] Assertion `… "index out of bounds"` failed.``
_KERNEL_ASSERT = re.compile(r"(?P<file>[\w.\-]+\.cuh?):(?P<line>\d+): [^\n]{0,200}?block: \[[\d,]+\], thread: \[[\d,]+\] "
                            r"Assertion `(?P<expr>[^`\n]{1,300})` failed")
_BOUNDS = re.compile(r'"(?P<what>[a-z][\w ]{2,60})"\s*$')  # ATen's assertions end with their words in quotes
_WATCHDOG_ENDED = "watchdog thread terminated with exception: "
_PROGRAM = ("device-side assert", "out of memory", "OUT_OF_MEMORY", "invalid device ordinal", "no kernel image", "busy or unavailable",
            "driver shutting down")


_ROCM = re.compile(r"(?P<what>Memory access fault|HW Exception) by GPU node-(?P<node>\d+) \(Agent handle: [^)]*\)"
                   r"(?: on address (?P<addr>\S+?)\.?)?\s*(?:Reason|reason) ?:\s*(?P<reason>[^\n]{1,120}?)\.?\s*$")
_AMDGPU_FAULT = re.compile(r"amdgpu(?: (?P<pci>[0-9a-fA-F:.]{7,}))?: amdgpu: \[\w+\] page fault \(.{0,160}?for process "
                           r"(?P<comm>\S+) pid (?P<pid>\d+)")


# Intel's kernel drivers (xe, i915) on a GPU job that hung: ``xe 0000:2b:00.0: [drm] Tile0: GT0: Timedout job:
# seqno=…, guc_id=0, flags=0x73 in python [1234]``, ``i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:…, in python
# [1234]`` (the driver then resets the GPU: its work is lost)
# ``xe 0000:2c:00.0: [drm] GT0: Engine reset: engine_class=ccs, logical_mask: 0x1, guc_id=3`` (the compute engine)
_INTEL_HANG = re.compile(r"\b(?:xe|i915) (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): \[drm\] "
                         r"(?:[^\n]*?(?P<what>Timedout job|GPU HANG|Engine reset)[^\n]*?)(?: in (?P<comm>[\w.\-]+) "
                         r"\[(?P<pid>\d+)\])?$")
# Intel's Level Zero (oneAPI's unified runtime, through PyTorch's XPU backend or oneCCL) losing the device, as after
# such a reset: ``RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)``
_DEVICE_LOST = re.compile(r"\b(?:UR|ZE)_RESULT_ERROR_DEVICE_LOST\b")
# CUDA that could not start: PyTorch's warning ``UserWarning: CUDA initialization: Unexpected error from
# cudaGetDeviceCount(). … Error 802: system not yet initialized (Triggered internally at …)``; and the NVSwitch
# fabric manager refusing a driver of another version (its journal): ``nv-fabricmanager[1507]: fabric manager NVIDIA
# GPU driver interface version 535.183.01 don't match with driver version 535.161.08. Please update …``
# (the same raised where the program asks for a device: ``RuntimeError: Unexpected error from cudaGetDeviceCount(). Did
# you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system
# not yet initialized``)
_CUDA_INIT = re.compile(r"(?:CUDA initialization: |Unexpected error from cudaGetDeviceCount\(\))[^\n]{0,300}?\bError "
                        r"(?P<code>\d{1,4}): (?P<msg>[a-z][\w ,'\-]{2,100}?)\s*(?:\(|\.|$)")
# the NVSwitch fabric (HGX, GB200 NVL) not up under the GPUs: the kernel driver seeing the fabric manager or the IMEX
# daemon die (``NVRM: nvidia-fabricmanager daemon shutdown detected, robust channel recovery invoked!``, ``NVRM: Abrupt
# nvidia-imex daemon shutdown detected, disabled fabric allocations``), the fabric manager's NVLink training not done
# (``Fabric Manager (…): NVLink training of fabric did not complete.``), and the GPU operator finding it installed but
# stopped (``fabric manager found but not active``)
# a serving engine's check of the device its process runs on (SGLang's, LightLLM's, vLLM's older
# ``get_available_gpu_memory``): ``WARNING: current device is not 2, but 7, which may cause useless memory allocation for
# torch CUDA context.``: the process meant for GPU 2 works on GPU 7, another rank's
_WRONG_DEVICE = re.compile(r"\bcurrent device is not (?P<want>\d{1,3}), but (?P<got>\d{1,3})\b")
FABRIC_DOWN = "the NVSwitch fabric is not up: "  # (its message's start, read by rules.node)
_FABRIC_DOWN = re.compile(r"nvidia-fabricmanager daemon shutdown detected|Abrupt nvidia-imex daemon shutdown detected"
                          r"|NVLink training of fabric did not complete|fabric manager found but not active")
_FM_VERSION = re.compile(r"fabric manager NVIDIA GPU driver interface version (?P<fm>[\d.]{3,20}) don")


def _intel(line: Line) -> list[Event] | None:
    match = _INTEL_HANG.search(line.body)
    if match is None:
        return None
    pid = int(match["pid"]) if match["pid"] and match["pid"] != "-1" else None
    driver = match.group(0).split(" ", 1)[0]
    if match["what"] == "Engine reset":
        message = f"the {driver} driver reset the GPU's engine (its work is lost)"
    else:
        message = f"GPU job hung and was reset by the {driver} driver ({match['what']})"
    return [make_event(Kind.GPU_ERROR, line, origin=Origin(pid=pid) if pid else None, data={
        "message": message, "pci": match["pci"], "hardware": True, "source": "intel-drm"})]


# the amdgpu kernel driver's own words for a GPU that stopped or failed (drivers/gpu/drm/amd): a ring that timed out
# (``amdgpu 0000:c1:00.0: amdgpu: ring comp_1.0.0 timeout, signaled seq=1834, emitted seq=1836``; not ``…, but soft
# recovered``), the GPU gone from PCIe (``device lost from bus!``), a page fault whose process is on the next line
# (``[gfxhub] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32771)``), too many bad pages (``RAS records:512
# exceed threshold:448``, ``Saved bad pages 448 reaches threshold value 448``), an XGMI link's errors (``XGMI PCS
# CRCErr detected``), the scheduler firmware hung (``qcm fence wait loop timeout expired``)
_AMDGPU = re.compile(r"amdgpu(?: (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d))?: (?:amdgpu: )?(?:"
                     r"ring (?P<ring>[\w.]{1,40}) timeout(?!, but soft recovered)"
                     r"|(?P<lost>device lost from bus)"
                     r"|\[(?P<hub>\w{1,20})\] (?:no-)?retry page fault \(src_id"
                     r"|(?P<ras>RAS records:\d{1,6} exceeds? threshold|Saved bad pages \d{1,6} reaches threshold)"
                     r"|(?P<xgmi>XGMI PCS \w{1,40} detected)"
                     r"|(?P<hws>qcm fence wait loop timeout expired|The cp might be in an unrecoverable state))")


def _amdgpu(line: Line) -> list[Event] | None:
    match = _AMDGPU.search(line.body)
    if match is None:
        return None
    if match["ring"]:
        message, hardware = f"a GPU ring ({match['ring']}) timed out: the GPU stopped making progress (amdgpu)", False
    elif match["lost"]:
        message, hardware = "the GPU was lost from the PCIe bus (amdgpu)", True
    elif match["hub"]:
        message, hardware = "GPU page fault (amdgpu)", False
    elif match["ras"]:
        message, hardware = "the GPU's bad memory pages reached the driver's threshold (amdgpu RAS): replace it", True
    elif match["xgmi"]:
        message, hardware = f"an XGMI link error between GPUs (amdgpu: {match['xgmi']})", True
    else:
        message, hardware = "the GPU's scheduler firmware stopped answering (amdgpu HWS hang)", True
    return [make_event(Kind.GPU_ERROR, line, data={"message": message, "pci": match["pci"], "hardware": hardware,
                                                  "source": "amdgpu"})]


def _rocm(line: Line) -> list[Event] | None:
    match = _ROCM.search(line.body)
    if match:
        hang = match["what"] == "HW Exception"
        return [make_event(Kind.GPU_ERROR, line, data={
            "message": (f"HW Exception by GPU node-{match['node']}: {match['reason'].strip()}" if hang
                        else f"memory access fault by GPU node-{match['node']}: {match['reason'].strip()}"),
            "hsa_node": int(match["node"]), "hardware": hang, "source": "rocm"})]
    match = _AMDGPU_FAULT.search(line.body)
    if match:
        return [make_event(Kind.GPU_ERROR, line, origin=Origin(pid=int(match["pid"])), data={
            "message": "GPU page fault (amdgpu)", "pci": match["pci"], "source": "amdgpu"})]
    return _amdgpu(line) if "amdgpu" in line.body else None


# AWS Neuron's driver (Trainium, Inferentia) reporting an accelerator it cannot recover, with what to do:
# ``NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0592… hostname=ip-172-31-61-252 nd-id=0 nc-id=0 … action=
# TERMINATE_INSTANCE``
_NEURON_HW = re.compile(r"NEURON_HW_ERR=(?P<err>\w{3,60}?_UNCORRECTABLE_ERROR)\b(?P<rest>[^\n]{0,400})")
_NEURON_FIELD = re.compile(r"\b(?P<key>hostname|nd-id|action)=(?P<value>\S{1,253})")


def _neuron(line: Line) -> list[Event] | None:
    match = _NEURON_HW.search(line.body)
    if match is None:
        return None
    fields = {m["key"]: m["value"] for m in _NEURON_FIELD.finditer(match["rest"])}
    action = fields.get("action")
    return [make_event(Kind.GPU_ERROR, line, origin=Origin(host=fields["hostname"]) if "hostname" in fields else None,
                       data={"message": f"{match['err']} on a Neuron device" + (f" (nd-id {fields['nd-id']})"
                                                                                if "nd-id" in fields else "")
                             + (f": the driver says {action}" if action else ""),
                             "hardware": True, "source": "neuron"})]


def _kernel_assert(line: Line) -> list[Event] | None:
    match = _KERNEL_ASSERT.search(line.body)
    if match is None:
        return None
    words = _BOUNDS.search(match["expr"])
    return [make_event(Kind.EXCEPTION, line, data={
        "type": "device-side assert", "source": "cuda-kernel", "where": f"{match['file']}:{match['line']}",
        "message": (f"a CUDA kernel's assertion failed: {words['what'] if words else match['expr'][:160]} "
                    f"({match['file']}:{match['line']}), a value of the program's own out of range")})]


def _program_error(line: Line, message: str) -> list[Event]:
    """A CUDA error of the program's own (a device-side assert, an out-of-memory, a device index) that PyTorch's
    NCCL watchdog met first: it ends the process with SIGABRT and no Python traceback, so this line is the rank's
    own exception. Elsewhere the traceback's exception line carries it."""
    body = line.body
    if _WATCHDOG_ENDED not in body:
        return []
    _, rank = parse_pg_prefix(body)
    origin = Origin(rank=rank) if rank is not None and line.origin.rank is None else None
    return [make_event(Kind.EXCEPTION, line, origin=origin, data={
        "type": "c10::DistBackendError", "message": f"CUDA error: {message}", "source": "watchdog"})]


# c10's backtrace under the CUDA error PyTorch's NCCL watchdog met querying a collective's completion event (``frame #3:
# c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x5e (0x7fb2… in …/libtorch_cuda.so)``): an
# asynchronous CUDA error on that rank's GPU, its words where the paste cut them (an illegal memory access, a launch
# failure, ECC), the frame alone
_WATCHDOG_CUDA_FRAME = re.compile(r"^\s*frame #\d{1,3}: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal\(\)")


def parse(line: Line) -> list[Event]:
    body = line.body
    if "finishedGPUExecution" in body and _WATCHDOG_CUDA_FRAME.search(body):
        return [make_event(Kind.GPU_ERROR, line, data={
            "message": "a CUDA error PyTorch's NCCL watchdog met checking a collective's completion (its own words are "
                       "not in the paste)", "source": "watchdog-frame"})]
    if "NEURON_HW_ERR=" in body:
        neuron = _neuron(line)
        if neuron is not None:
            return neuron
    if "Assertion `" in body:
        asserted = _kernel_assert(line)
        if asserted is not None:
            return asserted
    if "by GPU node-" in body or "page fault (" in body or "amdgpu" in body:
        rocm = _rocm(line)
        if rocm is not None:
            return rocm
    if "Timedout job" in body or "GPU HANG" in body or "Engine reset:" in body:
        intel = _intel(line)
        if intel is not None:
            return intel
    if "ERROR_DEVICE_LOST" in body and _DEVICE_LOST.search(body):
        return [make_event(Kind.GPU_ERROR, line, data={
            "message": "the GPU was lost (Level Zero: DEVICE_LOST)", "source": "level-zero"})]
    if "CUDA driver error: system not yet initialized" in body:  # the driver API's words for 802 (symmetric memory)
        return [make_event(Kind.GPU_ERROR, line, data={"message": "system not yet initialized (CUDA driver error)",
                                                       "source": "cuda-driver"})]
    match = _CUDA_INIT.search(body) if "CUDA initialization: " in body or "error from cudaGetDeviceCount()" in body else None
    if match:  # (a warning: PyTorch goes on without CUDA, and the job fails later or runs on the CPU)
        return [make_event(Kind.GPU_ERROR, line, data={
            "message": f"CUDA could not start: {match['msg'].strip()} (error {match['code']})", "source": "cuda-init"})]
    match = _FM_VERSION.search(body) if "driver interface version" in body else None
    if match:
        return [make_event(Kind.GPU_ERROR, line, data={
            "message": f"the fabric manager ({match['fm']}) refused a driver of another version: system not yet "
                       "initialized", "source": "fabric-manager"})]
    match = _WRONG_DEVICE.search(body) if "current device is not " in body else None
    if match and match["want"] != match["got"]:
        return [make_event(Kind.DUPLICATE_GPU, line, data={
            "device": match["got"], "expected": match["want"], "wrong_device": True})]
    match = _FABRIC_DOWN.search(body) if "abric" in body or "imex" in body else None
    if match:
        return [make_event(Kind.GPU_ERROR, line, data={
            "message": f"{FABRIC_DOWN}{match.group(0)}", "source": "fabric-manager"})]
    match = _GPU_AT.search(body)
    if match:
        return [make_event(Kind.GPU_PCI, line, data={"pci": match["pci"].lower()})]
    match = _DCGM_XID.search(body) if "XID" in body else None
    if match:  # DCGM's health check naming the GPU by its index
        return [make_event(Kind.GPU_ERROR, line, data={
            "xid": int(match["xid"]), "gpu": int(match["gpu"]), "message": body.strip()[:160],
            "hardware": _hardware(int(match["xid"])), "source": "dcgm"})]
    match = _XID.search(body)
    if match:
        quoted = _SYSLOG_HOST.search(body[:match.start()]) if line.origin.host is None else None
        # newer drivers name the Xid a cleanup follows (``45, pid=…, Ch 00000001 caused by previous Xid 149``)
        cause = _CAUSED_BY.search(body, match.end())
        return [make_event(Kind.GPU_ERROR, line, origin=Origin(host=quoted["host"]) if quoted else None, data={
            "xid": int(match["xid"]), "pci": match["pci"], "message": body[match.end():].strip(" ,")[:160],
            "hardware": _hardware(int(match["xid"]), *([int(cause[1])] if cause else [])), "source": "xid",
            **({"caused_by": int(cause[1])} if cause else {})})]
    match = _IOMMU_FAULT.search(body) if "IO_PAGE_FAULT" in body or "fault addr" in body else None
    if match:  # the IOMMU refused a device's DMA: a GPU's peer-to-peer or a NIC's GPUDirect through it
        return [make_event(Kind.PEER_ACCESS, line, data={
            "message": body[match.start():].strip()[:200], "source": "iommu-fault",
            "pci": match["pci"] or match["pci2"] or match["pci3"] or "", "gpu": bool(match["driver"])})]
    if "TOO_MANY_PEERS" in body or "peer mapping resources exhausted" in body:
        # CUDA's limit of peers per device (8 on most GPUs): peer access to one more GPU refused, no fault of a GPU
        # (TensorFlow: ``Unable to enable peer access between device ordinals 0 and 9 … CUDA_ERROR_TOO_MANY_PEERS``)
        return [make_event(Kind.PEER_ACCESS, line, data={"cuda_error": 711, "message": body.strip()[:200],
                                                          "source": "too-many-peers"})]
    if "peer access is not supported" in body and "Cuda failure" not in body:  # a kernel of the program's own that needs P2P (custom all-reduce)
        source = "custom-allreduce" if "custom_all_reduce" in body or "custom all" in body.lower() else "cuda"
        return [make_event(Kind.PEER_ACCESS, line, data={"cuda_error": 217, "message": body.strip()[:200],
                                                          "source": source})]
    if "GPU_IS_LOST" in body and (lost := _NVML_LOST.search(body)):  # NVML's code, in its callers' words
        return [make_event(Kind.GPU_ERROR, line, data={
            "pci": None, "message": "GPU is lost (NVML: ERROR_GPU_IS_LOST)", "hardware": True, "source": "nvml",
            **({"uuid": lost["uuid"]} if lost["uuid"] else {})})]
    match = _SMI.search(body)
    if match:
        fallen = match["msg"] is None and match["pci2"] is None
        return [make_event(Kind.GPU_ERROR, line, data={
            "pci": match["pci"] or match["pci2"] or match["pci3"],
            "message": (match["msg"] or ("GPU has fallen off the bus" if fallen else "GPU is lost")).strip()[:160],
            "hardware": True, "source": "nvidia-smi" if not fallen else "driver",
            **({"gpu": int(match["index"])} if match["index"] else {})})]
    match = _AER.search(body)
    if match:
        return [make_event(Kind.GPU_ERROR, line, data={
            "pci": match["pci"], "message": f"PCIe error the driver could not recover from ({match['msg'].strip()[:120]})",
            "hardware": True, "source": "pcie-aer"})]
    match = _HSA_NO_MEMORY.search(body) if "Available Free mem" in body else None
    if match and int(match["mb"]) < _HSA_LITTLE_LEFT_MB:
        return [make_event(Kind.CUDA_OOM, line, data={"tried": None, "gpu": None, "source": "rocm",
                                                      "free": f"{match['mb']} MB"})]
    match = _HSA_QUEUE.search(body) if "HSA_STATUS_ERROR_" in body else None
    if match:
        return [make_event(Kind.GPU_ERROR, line, data={
            "message": f"{match['code']}{match['rest'].split(' code:')[0]}".strip()[:160],
            "hardware": match["code"].endswith("EXCEPTION"), "source": "rocm"})]
    match = _CUDA.search(body) or _DRIVER.search(body) or _CUDA_CALL.search(body) or \
        (_CUDA_NAMED.search(body) if "cudaError" in body else None) or \
        (_THC.search(body) if "THCudaCheck FAIL" in body else None) or \
        (_EPILOGUE.search(body) if "Search for `" in body else None)
    if not match or _WENT_ON.search(body) or _REFUSED_CUMEM.search(body):
        return []
    groups = match.groupdict()
    message = (groups.get("quoted") or groups.get("msg") or groups.get("name") or "").strip()
    if any(word in message for word in _PROGRAM):
        return _program_error(line, message)
    if "ECC error" in body and "ECC" not in message:
        message = body[body.find("ECC"):][:160]
    ipc = _IPC_CALL.search(body)
    if ipc is not None and ipc["call"] not in message:  # the call that failed says more than its code alone
        message = f"{ipc['call']}: {message}"
    return [make_event(Kind.GPU_ERROR, line, data={
        "message": message[:160], "hardware": any(word in body for word in _HARDWARE), "source": "cuda"})]
