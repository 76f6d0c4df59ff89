"""Failures of one node's hardware or its kernel's doing: a GPU fault (A021), a worker killed by SIGKILL (A025),
an IB completion error other than a retry timeout (A026), an IB port or HCA that went down (A027). Pure: no I/O.

Each is tied to whatever the lines name (rank, host, pid, local rank, GPU; see
:func:`~syncdoctor.analyze.rules.common.attribute`), since these lines often come from a single host's paste
without any rank. A worker death found by the rank-based crash rule (:mod:`.crash`) is not reported again.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace

from syncdoctor.analyze.model import Category, Event, Hypothesis, Kind
from syncdoctor.analyze.parsers.gpu import FABRIC_DOWN, XIDS
from syncdoctor.analyze.parsers.nccl_warn import IB_STATUS
from syncdoctor.analyze.rules.common import (
    MAX_CASCADE,
    SHM_FIX,
    SIGBUS_VERB,
    SIGBUS_WHAT,
    Attribution,
    attribute,
    evidence_of,
    fmt_ranks,
    hypothesis,
    is_aftermath,
    just_above,
    socket_transport,
    unique_id_roots_gone,
    unprefixed_exception,
)
from syncdoctor.analyze.rules.joins import LAUNCHERS_REPORT, abort_of_read_exception
from syncdoctor.analyze.rules.phrases import read_as
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, Timeline, is_comm_exception, trapped_after_comm_wait

__all__ = ["dataloader_cause", "dataloader_worker_lost", "gpu_error", "gpu_out_of_memory", "ib_completion_error",
           "ib_port_down", "task_numbers", "task_ranks", "watchdog_abort", "worker_killed"]

_RETRY = (12, 13)  # retry counters exceeded: A011/A012 (nccl_errors.py)
_TASK_LAUNCHERS = ("slurm", "flux")  # launchers whose reports number tasks (srun's, Flux's shell's)
_SYMPTOMS = (Kind.PEER_CLOSED, Kind.NCCL_ERROR, *TIMEOUT_KINDS)


def _others_failed(tl: Timeline, culprits: set[int]) -> list[int]:
    return sorted(r for r, s in tl.ranks.items() if r not in culprits and
                  (s.has(*_SYMPTOMS) or any(is_comm_exception(e) for e in s.of(Kind.EXCEPTION))))


# CUDA's words for an argument a call does not take (cudaErrorInvalidValue), and, with a feature the driver or the
# container lacks (cudaErrorNotSupported), for any call it refused: not a fault of the GPU
_INVALID = re.compile(r"invalid argument|\bCUDA_ERROR_INVALID_VALUE\b|\bcudaErrorInvalidValue\b")
_REJECTED = re.compile(_INVALID.pattern + r"|not supported")


# CUDA's errors for software that does not fit the machine (cudaErrorStubLibrary, cudaErrorInsufficientDriver,
# cudaErrorNoKernelImageForDevice, cudaErrorSymbolNotFound, cudaErrorUnsupportedPtxVersion): the words in the
# message, the title ({who}: where it happened, or "a process"; {on}: " on " and that place, if known), what it means,
# the fix and the evidence's note. None is a fault of the GPU.
_NOT_THE_GPU = " the GPU itself is not at fault"
_MISFIT = ": the CUDA software does not fit," + _NOT_THE_GPU
_MISMATCHED_BUILD = (
    ("stub library",  # no driver at all behind libcuda.so
     "{who} loaded CUDA's stub driver library instead of the real driver (CUDA driver is a stub library): no GPU work "
     "can run there," + _NOT_THE_GPU,
     "The libcuda.so the process loaded is the link-time stub the CUDA toolkit ships (its lib64/stubs directory), "
     "found before the driver's own library: a LD_LIBRARY_PATH that lists the stubs directory, or a container started "
     "without the NVIDIA runtime, which mounts the driver's libcuda.so.",
     "Remove the CUDA toolkit's stubs directory from LD_LIBRARY_PATH (and from ld.so.conf), and run containers with "
     "the NVIDIA runtime (--gpus all); `ldconfig -p | grep libcuda` should show the driver's library.",
     "the stub driver"),
    ("driver version is insufficient", "the GPU driver is older than the CUDA runtime the program was built with{on}"
     + _MISFIT,
     "CUDA's runtime (in the PyTorch or NCCL wheel, or the container image) needs a newer driver than the host has: "
     "every CUDA call fails there, whatever the GPU.",
     "Upgrade the driver on that host, or install the build for the CUDA version the driver supports (nvidia-smi "
     "shows it, top right); in containers, an image whose CUDA is not newer than the host's driver.",
     "CUDA refused"),
    # cudaErrorCallRequiresNewerDriver (36): a call of a newer CUDA than the driver's (NCCL built with CUDA 11.3+ on
    # an R460 driver asking for cudaStreamGetCaptureInfo_v2, NVIDIA/nccl#496)
    ("API call is not supported in the installed CUDA driver", "a CUDA call the host's driver does not have{on}: "
     "the libraries were built with a newer CUDA than the driver's," + _NOT_THE_GPU,
     "NCCL or the CUDA runtime called a function of a newer CUDA release than the host's driver supports "
     "(cudaErrorCallRequiresNewerDriver): a wheel or container image built for a newer CUDA than the driver.",
     "Upgrade the driver on that host, or use builds made for the CUDA version the driver supports (nvidia-smi shows "
     "it, top right); a newer NCCL release may avoid the call (NCCL 2.9.9 did for R460 drivers).",
     "CUDA refused"),
    ("no kernel image is available", "the binaries hold no code for this GPU's architecture{on}" + _MISFIT,
     "The PyTorch, NCCL or extension build in use was compiled without this GPU's architecture (a new GPU such as "
     "Blackwell's sm_120 with a build for older ones, or an old GPU a release dropped): its kernels cannot run there.",
     "Install a build that includes this architecture (for Blackwell, PyTorch's cu128 wheels or newer), or rebuild "
     "the extension with TORCH_CUDA_ARCH_LIST naming it; `python -c 'import torch; print(torch.cuda.get_arch_list())'`"
     " lists what the build holds.",
     "CUDA refused"),
    # cudaErrorInvalidDeviceFunction (98; hipErrorInvalidDeviceFunction): "the requested device function does not
    # exist or is not compiled for the proper device architecture" (NCCL 2.4.8 of CUDA 10.1 on an Ampere GPU,
    # beir-cellar/beir#67; RCCL's kernels for one of two architectures in a process, ROCm/rccl#2189)
    ("invalid device function", "the binaries hold no kernel for this GPU's architecture{on} (invalid device "
     "function)" + _MISFIT,
     "CUDA found no code of the build for the kernel it was asked to launch on this GPU (cudaErrorInvalidDeviceFunction; "
     "HIP's the same): PyTorch, NCCL (RCCL) or an extension compiled without this GPU's architecture, such as a "
     "CUDA 10 build on an Ampere GPU, a wheel for older GPUs on a new one, or GPUs of two architectures in one process "
     "where the library holds kernels for one.",
     "Install builds that include this architecture (`python -c 'import torch; print(torch.cuda.get_arch_list())'` "
     "lists PyTorch's; an NCCL of a CUDA release that knows the GPU), or rebuild the extension with "
     "TORCH_CUDA_ARCH_LIST (PYTORCH_ROCM_ARCH) naming it.",
     "CUDA refused"),
    ("named symbol not found", "a function the CUDA library looked for is missing from the driver{on}" + _MISFIT,
     "CUDA's driver does not have a function that NCCL or the CUDA runtime asked for (cudaErrorSymbolNotFound, 500): "
     "most often the driver is older than what those libraries were built for (a container image newer than the "
     "host's driver), or a library of another CUDA release is loaded first.",
     "Use an image or build made for the host driver's CUDA version (nvidia-smi shows it), or upgrade the driver; "
     "check LD_LIBRARY_PATH for a libnccl or libcudart of another release.",
     "CUDA refused"),
    # cudaErrorInvalidResourceHandle (400): a handle made elsewhere (vLLM#37931: DeepEP's CUDA IPC handles opened on
    # another node of an NVL72 domain; a stream or event of another context), the software's use of CUDA, not the GPU
    ("invalid resource handle", "a CUDA handle that is not valid in that process{on} (one made in another process, "
     "node or context)," + _NOT_THE_GPU,
     "CUDA refused a handle the process passed it (cudaErrorInvalidResourceHandle): one made elsewhere, most often a "
     "CUDA IPC memory handle from a process on another node (IPC handles work within a node; across the nodes of an "
     "NVLink domain, fabric handles do), or a stream or event of another device or context; a library bug or two "
     "libraries of different releases can do it too.",
     "Check where the handle comes from: exchange CUDA IPC handles only within a node (DeepEP and similar libraries "
     "have a cross-node or fabric mode for multi-node NVLink), and use the PyTorch, NCCL and extension builds of one "
     "release.",
     "CUDA refused"),
    # a process opening another's GPU memory by CUDA IPC, refused: the two cannot see each other's GPU (a scheduler
    # that binds one GPU per task isolates each with cgroups: Slurm's --gpus-per-task or --gpu-bind under Cray MPICH's
    # GTL on Perlmutter, WarpX#6382, E3SM#4834), or a container without the host's IPC namespace
    ("IpcOpenMemHandle", "CUDA IPC between the processes was refused{on} (their GPUs are hidden from each other: one "
     "GPU bound per task, or a container without the host's IPC namespace)," + _NOT_THE_GPU,
     "A process asked CUDA to open another process's GPU memory (cuIpcOpenMemHandle, the MPI's or NCCL's intra-node "
     "path) and was refused: the processes do not see each other's GPUs. A scheduler binding one GPU to each task "
     "(Slurm's --gpus-per-task, --ntasks-per-gpu or --gpu-bind) isolates them with cgroups, so CUDA IPC between them "
     "fails; so does a container started without --ipc=host.",
     "Let every task of a node see all its GPUs (Slurm: --gpus-per-node with --gpu-bind=none, each process picking "
     "its device by local rank), or turn the library's CUDA IPC path off (Cray MPICH: MPICH_GPU_IPC_ENABLED=0); in "
     "containers, --ipc=host.",
     "CUDA refused"),
    ("unsupported toolchain", "code compiled by a newer CUDA than the driver knows{on}" + _MISFIT,
     "PTX in a library was produced by a newer CUDA compiler than the host's driver supports: the driver cannot "
     "compile it for the GPU.",
     "Upgrade the driver on that host, or use builds made with the CUDA version the driver supports.",
     "CUDA refused"),
)


def _mismatched_build(event: Event) -> bool:
    message = str(event.data.get("message", ""))
    return any(words in message for words, *_ in _MISMATCHED_BUILD)


def _no_such_device(event: Event) -> bool:
    message = str(event.data.get("message", ""))
    # (also the error's name alone, as XLA prints the driver API's: ``Failed call to cuDeviceGet:
    # CUDA_ERROR_INVALID_DEVICE: invalid device ordinal``)
    return ("invalid device ordinal" in message or "busy or unavailable" in message
            or _INVALID_DEVICE.search(message) is not None)


_INVALID_DEVICE = re.compile(r"\b(?:CUDA_ERROR_INVALID_DEVICE|cudaErrorInvalidDevice|hipErrorInvalidDevice)\b")


def _fabric_manager(events: list[Event]) -> bool:
    """``system not yet initialized``: on NVSwitch systems (HGX) CUDA waits for nvidia-fabricmanager."""
    return any("system not yet initialized" in str(e.data.get("message", "")) or e.data.get("source") == "fabric-manager"
               for e in events)


def _unhandled_cuda(event: Event) -> bool:
    """NCCL's ``unhandled cuda error`` itself, which says a CUDA call failed, not which (its ``Last error:``
    line does)."""
    return event.data.get("source") == "nccl" and "ncclUnhandledCudaError" in str(event.data.get("message"))


def _worded_inputs(tl: Timeline) -> set[str]:
    """The inputs that word a CUDA error themselves (a GPU's error, a device-side assert that is the program's, an
    out-of-memory, ``what():  CUDA error: driver shutting down`` under ``terminate called``): there the line that
    words it is the reading, not the watchdog's frame printed under it."""
    return {e.ref.source for e in tl.of(Kind.GPU_ERROR, Kind.CUDA_OOM, Kind.EXCEPTION, Kind.ERROR_LINE)
            if (e.kind in (Kind.GPU_ERROR, Kind.CUDA_OOM) and e.data.get("source") != "watchdog-frame")
            or (e.kind in (Kind.EXCEPTION, Kind.ERROR_LINE) and "CUDA error" in str(e.data.get("message") or ""))}


def gpu_error(tl: Timeline) -> list[Hypothesis]:
    frames = [e for e in tl.of(Kind.GPU_ERROR) if e.data.get("source") == "watchdog-frame"]
    in_words = _worded_inputs(tl) if frames else set()
    events = [e for e in tl.of(Kind.GPU_ERROR) if not _no_such_device(e)
              and not (e.data.get("source") == "watchdog-frame" and e.ref.source in in_words)]
    if tl.of(Kind.CUDA_OOM):  # NCCL's unhandled cuda error whose last error says it: out of memory (the OOM rule's)
        events = [e for e in events if not _unhandled_cuda(e)]
    # NCCL's unhandled cuda error below the program's own device-side assert in the same output (THC's ``THCudaCheck
    # FAIL … error=710 : device-side assert triggered``, then the communicator's abort failing on the same sticky
    # error): the assert is what failed, the program's (its reading), not the GPU
    asserts = [e for e in tl.of(Kind.EXCEPTION, Kind.ERROR_LINE) if "device-side assert" in str(e.data.get("message"))]
    events = [e for e in events if not (_unhandled_cuda(e) and any(
        a.ref.source == e.ref.source and a.ref.line < e.ref.line for a in asserts))]
    # a kernel of GPU-initiated communication that waited out its bound traps (DeepEP prints ``DeepEP combine …
    # timeout`` then calls trap()): CUDA reports the trap as ``unspecified launch failure``, the wait's end, not a
    # fault of the GPU (the timeout's line is the error the fallback quotes)
    events = [e for e in events if not trapped_after_comm_wait(tl, e)]
    # a handle CUDA refuses right after the same process ran out of memory (NCCL's enqueue: ``Cuda failure 'out of
    # memory'`` then ``Cuda failure 'invalid resource handle'``, the event or stream it could not make): the OOM's
    # consequence, the OOM rule's
    ooms = tl.of(Kind.CUDA_OOM)
    events = [e for e in events if not ("invalid resource handle" in str(e.data.get("message")) and any(
        o.ref.source == e.ref.source and o.ref.line < e.ref.line and o.origin.pid == e.origin.pid for o in ooms))]
    ordinal = [e for e in tl.of(Kind.GPU_ERROR, Kind.EXCEPTION) if _no_such_device(e)]
    # (after CUDA software that does not fit the driver, every later call of that process fails, a device's ordinal
    # among them: NVIDIA/nccl#496's ``invalid device ordinal`` two lines below the driver's refusal)
    ordinal = [o for o in ordinal if not any(e.ref.source == o.ref.source and e.ref.line < o.ref.line and
                                             _mismatched_build(e) for e in events)]
    out = _no_such_gpu(tl, ordinal) if ordinal else []
    if not events:
        return out
    where = attribute(events, tl)
    if not where.ranks and not where.hosts:
        hosts = _hosts_of_gpus(tl, events)
        if hosts:
            where = replace(where, hosts=hosts)
    if not where.ranks and not where.local_ranks and (failed := _the_one_worker_failed_after(tl, events)) is not None:
        where = _the_worker(tl, events, where, failed)  # (the one worker a launcher then reports dead: its GPU)
    hardware = any(e.data.get("hardware") for e in events)
    # (the watchdog's frame says only that a CUDA error was met: the error's own words, where another input has them)
    worded = [e for e in events if e.data.get("message") and e.data.get("source") != "watchdog-frame"] or events
    messages = sorted({str(e.data.get("message") or "") for e in worded if e.data.get("message")})
    xids = sorted({int(e.data["xid"]) for e in events if e.data.get("xid") is not None}
                  | {int(e.data["caused_by"]) for e in events if e.data.get("caused_by") is not None})
    what_failed = "; ".join(messages[:3]) or (f"Xid {', '.join(map(str, xids))}" if xids else "a CUDA error")
    whose = where.text if where.text.startswith("GPU ") else f"the GPU of {where.text or 'a rank'}"
    title = f"{whose} failed: {what_failed[:120]}"
    known = [(xid, XIDS[xid]) for xid in xids if xid in XIDS]
    # the Xids that say why, before those that follow another failure (43, 45: the driver cleaning up)
    telling = [(xid, x) for xid, x in known if x.fault != "after"] or known
    if telling:
        first, meaning = telling[0]
        what_failed = f"Xid {first}, {meaning.what}" + (f" (also Xid {', '.join(str(x) for x, _ in telling[1:3])})"
                                                        if len(telling) > 1 else "")
        title = f"{whose} failed: {what_failed[:160]}"
    elif xids and not what_failed.startswith("Xid"):  # an Xid the table does not hold: its number first
        what_failed = f"Xid {', '.join(map(str, xids[:3]))}: {what_failed}"
        title = f"{whose} failed: {what_failed[:120]}"
    affected = _others_failed(tl, set(where.ranks))
    what = (f"{where.text or 'A process'} hit {what_failed}"
            + (" (a hardware fault: ECC or Xid)" if hardware else "")
            + ". A process whose GPU faulted cannot run its collectives: its peers time out or lose their "
            "connection to it, and those errors are the cascade.")
    if affected:
        what += f" Ranks {fmt_ranks(affected)} failed after it."
    fix = None if hardware else (
        "If it follows the program (the same kernel on any node), run with CUDA_LAUNCH_BLOCKING=1 to find it; "
        "if it follows the node, check that GPU (`nvidia-smi -q -d ECC`, `dmesg -T | grep -i xid`) and keep the "
        "node out until it passes `dcgmi diag`.")
    if _fabric_manager(events):
        what += (" 'system not yet initialized' is what CUDA says on an NVSwitch system (HGX) whose fabric manager "
                 "is not running, or does not match the driver's version.")
        fix = ("Start nvidia-fabricmanager on that node (`systemctl status nvidia-fabricmanager`; its version must be "
               "the driver's), then check `nvidia-smi -q | grep -i fabric`.")
        fabric = next((str(e.data["message"]) for e in events
                       if str(e.data.get("message", "")).startswith(FABRIC_DOWN)), None)
        if fabric is not None and not hardware:  # the fabric's own words: it went down or never came up
            title = (f"{fabric[len(FABRIC_DOWN):]} on {where.text or 'a node'}: the NVSwitch fabric (the fabric "
                     "manager or the IMEX daemon) is down under its GPUs; the GPUs themselves are not at fault")
            what += (f" The NVSwitch fabric is not up ({fabric[len(FABRIC_DOWN):]}): without it the GPUs lose NVLink "
                     "between them (and across the NVL domain), and CUDA calls fail.")
        elif not hardware:
            title = (f"CUDA on {where.text or 'a node'} is not initialized (system not yet initialized, error 802): "
                     "the NVSwitch fabric manager is not running or does not match the driver; the GPU itself is "
                     "not at fault")
    mismatch = None if hardware or not any(_mismatched_build(e) for e in events) else \
        next(m for m in _MISMATCHED_BUILD if any(m[0] in msg for msg in messages))
    if mismatch is not None:  # the CUDA software does not fit the machine: no fault of the GPU
        _words, template, what, fix, note = mismatch
        # replace, not format: a host name read from the inputs may hold braces
        title = template.replace("{who}", where.text or "a process").replace(
            "{on}", f" on {where.text}" if where.text else "")
        # (above the crash of the process that raised it, 0.8: that exception is this refusal, which says why)
        return [*out, hypothesis(tl, Category.UNRECOGNISED, 0.82, title, affected=affected, what=what, fix=fix,
                                 evidence=evidence_of(events, note, 6), where=where)]
    rejected = not hardware and any(_REJECTED.search(m) for m in messages) and all(
        _REJECTED.search(m) or "nhandled" in m for m in messages)  # NCCL's 'unhandled cuda error' says no more
    # (NCCL's lines, or nccl-tests', whose CUDA calls fail as ``Test CUDA failure``, anywhere in the inputs)
    nccl_seen = any("nccl" in e.text.lower() or "Test CUDA failure" in e.text for e in tl.events)
    if rejected:
        # cudaErrorInvalidValue and its kin: the driver refused a call NCCL made, the GPU did not fault
        sources = {e.ref.source for e in events}
        nvls = any("nvls" in e.text.lower() for e in tl.events if e.ref.source in sources)
        refused = "; ".join(m for m in messages if _REJECTED.search(m))
        title = (f"a CUDA call {'NCCL made ' if nccl_seen else ''}was refused on {where.text or 'a rank'} "
                 f"({refused[:80]})"
                 + (" in its NVLS (NVLink SHARP) setup" if nvls else "")
                 + ": a feature the driver, the container or this NCCL release does not allow, not a faulty GPU")
        what = (f"{where.text or 'A process'} hit {refused}: CUDA rejected a call NCCL made. "
                "That is no hardware fault: a feature NCCL uses is not available there (NVLS multicast needs "
                "nvidia-fabricmanager or IMEX and, in a container, the /dev/nvidia-caps devices; CUDA IPC and cuMem "
                "need the driver and the container to allow them), or this NCCL release has a bug on that GPU or "
                "driver (NCCL 2.25.1 on RTX 5090s, fixed in 2.26).")
        fix = ((("Set NCCL_NVLS_ENABLE=0 to go on without NVLS, or give the container the multicast devices "
                 "(/dev/nvidia-caps) and check that nvidia-fabricmanager runs with the driver's version. ")
                if nvls else "")
               + "Run with NCCL_DEBUG=INFO to see which transport's call failed; try NCCL_CUMEM_ENABLE=0 and "
               "NCCL_P2P_DISABLE=1 one at a time, and another NCCL release (pip install nvidia-nccl-cu12==...), the "
               "driver's and the CUDA runtime's versions matching.")
    category = Category.GPU_ERROR
    if rejected and not nccl_seen and all(_INVALID.search(m) for m in messages):
        # no NCCL in the inputs: the program or a library it calls (TensorPipe, a quantizer moving weights between
        # GPUs) passed CUDA an argument it does not take: that process's error (A003), no fault of the GPU's
        category = Category.RANK_CRASHED
        title = (f"a CUDA call was refused on {where.text or 'a rank'} ({refused[:80]}): the program or a library it "
                 "calls passed CUDA an argument it does not take; not a faulty GPU")
        what = (f"{where.text or 'A process'} hit {refused}: CUDA rejected a call as made (an empty or freed buffer, "
                "a pointer or a device the call cannot use), and no communication library is in the inputs. That is "
                "the calling code's error, not a hardware fault; the process stops, and its peers time out or lose it.")
        fix = ("Run with CUDA_LAUNCH_BLOCKING=1 to find the call in the traceback; check the tensors it is given (empty, "
               "on another device, freed) and the library's issue tracker for that call.")
    captured = [m for m in messages if _CAPTURE.search(m)]
    if captured and not hardware and all(_CAPTURE.search(m) or "nhandled" in m for m in messages):
        # the program's use of graphs, by its own words not the GPU's failure: the software's setup (A028)
        category = Category.UNRECOGNISED
        title = (f"an operation CUDA graph capture does not allow on {where.text or 'a rank'} ({captured[0][:80]}): "
                 "the software's use of CUDA graphs, not a faulty GPU")
        what = (f"{where.text or 'A process'} hit {captured[0]}: while a stream was being captured into a CUDA graph "
                "(torch.compile's reduce-overhead mode, an inference engine's graph capture), something ran an "
                "operation capture does not allow: a synchronizing call, an event query on the captured stream "
                "(ProcessGroupNCCL's watchdog does one; ROCm 7.0 to 7.2.0's HIP runtime refused it), or work on the "
                "legacy default stream. The GPU did what it was told.")
        fix = ("Run without graph capture to confirm (vLLM --enforce-eager, SGLang --disable-cuda-graph, torch.compile "
               "without reduce-overhead); upgrade PyTorch and the GPU runtime (ROCm 7.2.1 or newer for the HIP "
               "watchdog case), or set TORCH_NCCL_BLOCKING_WAIT=1 so the watchdog does not query events during "
               "capture; keep synchronizing calls out of the captured region.")
    # (graph capture's refusal ahead of the crash of the rank it ended: what the rank died of)
    confidence = 0.9 if hardware else 0.85 if category is Category.UNRECOGNISED else 0.8
    if telling:
        fix = "; ".join(dict.fromkeys(f"Xid {xid}: {x.action}" for xid, x in telling[:3])) + "."
        if all(x.fault == "after" for _, x in telling):
            # the driver cleaning up after a process that ended or faulted: why it ended is the failure
            confidence = 0.45
            title = (f"{whose} reported Xid {telling[0][0]}: the driver cleaned up after a process that ended or "
                     "faulted; why it ended is the failure, the GPU is most often fine")
        elif all(x.fault == "program" for _, x in telling):
            what += " Those Xids most often follow the program's own kernel, not the GPU."
    if not hardware and all(_after_network_failure(tl, e) for e in events):
        # NCCL tearing down its communicators after the NICs gave up touches freed or aborted memory: a CUDA
        # error there is the network failure's doing (the IB rules name that), not the GPU's
        confidence = 0.5
        what += (" Each process reported it after its own InfiniBand retry-exceeded error: most likely a "
                 "consequence of tearing NCCL down after that network failure, not the GPU's own fault.")
    return [*out, hypothesis(tl, category, confidence, title, affected=affected, what=what, fix=fix,
                             evidence=evidence_of(events, "the GPU's error", 6), where=where)]


# an operation a stream being captured into a CUDA graph does not allow (cudaErrorStreamCaptureUnsupported 900,
# …Invalidated 901, …Implicit 906, cudaErrorCapturedEvent 907, …Unjoined 904; HIP's the same words): the software's
# use of graphs, most often ProcessGroupNCCL's watchdog querying an event of the capturing stream (ROCm/hip#3876)
_CAPTURE = re.compile(r"\bcapturing (?:blocking )?stream\b|\bwhen stream is capturing\b|\bduring capture\b", re.I)


def _hosts_of_gpus(tl: Timeline, events: list[Event]) -> tuple[str, ...]:
    """The hosts whose kernel log names the GPUs (by PCI address) that host-less error lines name."""
    wanted = {_bus(str(e.data["pci"])) for e in events if e.data.get("pci")}
    return tuple(sorted({str(e.origin.host) for e in tl.of(Kind.GPU_PCI)
                         if e.origin.host and _bus(str(e.data.get("pci", ""))) in wanted}))


# the device index a process took from its local rank (``torch.cuda.set_device(local_rank)``, ``args.local_rank``,
# ``int(os.environ["LOCAL_RANK"])``, ``f"cuda:{local_rank}"``)
_LOCAL_DEVICE = re.compile(r"(?:set_device|device|cuda)\b[^\n]{0,60}\blocal[_-]?rank\b|LOCAL_RANK", re.I)
# the program choosing its GPU itself (``torch.cuda.set_device(device)``, ``model.cuda(gpu)``, ``.to(f"cuda:{i}")``)
_SET_DEVICE = re.compile(r"\bset_device\(|\bcudaSetDevice\b|\.cuda\(|\.to\([^)]{0,40}cuda|\btorch\.device\(")


def _bus(pci: str) -> str:
    """``0000:17:00`` of ``0000:17:00.0``, ``PCI:0000:17:00`` or ``00000000:17:00.0`` (domain, bus, device)."""
    found = re.search(r"([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})", pci)
    return f"{int(found[1], 16):04x}:{found[2].lower()}:{found[3].lower()}" if found else pci.lower()


def _no_such_gpu(tl: Timeline, events: list[Event]) -> list[Hypothesis]:
    """``invalid device ordinal``: a process asked for a GPU index its host does not have (or does not show
    it): the device assignment, not the hardware. A process the lines do not name is the one worker a launcher
    reports failed after them."""
    where = attribute(events, tl)
    failed = _the_one_worker_failed_after(tl, events) if not (where.ranks or where.local_ranks) else None
    if failed is not None:
        where = _the_worker(tl, events, where, failed)
    mpi = _the_one_rank_mpirun_names(tl, events) if not where.ranks else None
    if mpi is not None:
        where = replace(where, ranks=(mpi,), processes=())
    title = (f"{where.text or 'a process'} asked for a GPU that does not exist there (invalid device ordinal): more "
             "processes per node than visible GPUs, or a device index from the global rank")
    what = ("CUDA has no device with that index in this process: --nproc_per_node (or the tasks per node) larger than "
            "the GPUs that CUDA_VISIBLE_DEVICES leaves visible, or torch.cuda.set_device(RANK) where LOCAL_RANK was "
            "meant. The GPU itself is not at fault.")
    if all("busy or unavailable" in str(e.data.get("message", "")) for e in events):
        title = (f"{where.text or 'a process'} found its GPU busy or unavailable: another process holds it in "
                 "exclusive compute mode (two ranks on one GPU, or a leftover process)")
        what = ("CUDA refuses a GPU in EXCLUSIVE_PROCESS mode that another process already uses: two ranks set to the "
                "same device, or a process of an earlier run still alive. The GPU itself is not at fault.")
    fix = ("Use torch.cuda.set_device(int(os.environ['LOCAL_RANK'])), start as many processes per node as it has "
           "GPUs (nvidia-smi -L), and check CUDA_VISIBLE_DEVICES in the job's environment.")
    # no such GPU: the device assignment is the cause, most often the launch's (A028; below, where one process's code
    # line says otherwise); several processes (on several hosts) that all did: the job's launch configuration (A028);
    # a GPU another process holds in exclusive mode is two ranks on one GPU (A016)
    busy = all("busy or unavailable" in str(e.data.get("message", "")) for e in events)
    several = len(where.ranks) > 1 or len(where.hosts) > 1 or len(
        {(e.origin.host, e.origin.pid) for e in events if e.origin.pid is not None}) > 1
    # one process: by the program's code line that raised, where pasted. The GPU of its local rank
    # (``torch.cuda.set_device(local_rank)``): the index is the launcher's, the launch starts more processes than the
    # node shows GPUs (A028). A library call that chose the device itself (``dist.broadcast_object_list(…)`` placing
    # its tensor on cuda:<global rank>): that library's or the program's error (A003). Otherwise (a ``set_device`` of
    # another name, the error line alone) most often the launch too, as the labels of such pastes have it: A028
    code = [str(e.data.get("code_line") or "") for e in events if e.data.get("code_line")]
    # PyTorch's distributed code raising it itself, no program line choosing a device (a sharded checkpoint's
    # ``rank:{global_rank}/cuda:{global_rank}`` placement on a second node: load_sharded_optimizer_state_dict before
    # 2.1): the library's device from the global rank, not the launch
    chosen_inside = not busy and not any(_SET_DEVICE.search(line) or _LOCAL_DEVICE.search(line) for line in code) \
        and all(e.data.get("in_torch_distributed") for e in events if e.kind is Kind.EXCEPTION) \
        and any(e.kind is Kind.EXCEPTION for e in events)
    if chosen_inside:
        title = (f"{where.text or 'a process'} failed inside PyTorch's distributed code, which asked for a GPU "
                 "that does not exist there (invalid device ordinal): a device index taken from the global rank")
        inside = ("PyTorch's distributed code chose the device itself (a sharded tensor's placement, an object "
                  "collective's buffer) and chose one that CUDA does not have in this process: an index from the "
                  "global rank where the node's local rank was meant, which exists on the first node only.")
        inside_fix = ("Upgrade PyTorch where it is a fixed bug (load_sharded_optimizer_state_dict on several nodes: "
                      "2.1), call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) before it, and give the call "
                      "devices or placements by the local rank.")
        return [hypothesis(tl, Category.RANK_CRASHED, 0.8, title, where=where, what=inside, fix=inside_fix,
                           evidence=evidence_of(events, "no such device", 6))]
    if not several and not busy:
        if any(_LOCAL_DEVICE.search(line) for line in code):
            title = (f"the launch starts more processes per node than the GPUs they see: {where.text or 'a process'} "
                     "asked for the GPU of its local rank, which does not exist there (invalid device ordinal)")
            return [hypothesis(tl, Category.UNRECOGNISED, 0.85, title, where=where, what=what, fix=fix,
                               evidence=evidence_of(events, "no such device", 6))]
        if not code or any(_SET_DEVICE.search(line) for line in code):
            return [hypothesis(tl, Category.UNRECOGNISED, 0.8, title, where=where, what=what, fix=fix,
                               evidence=evidence_of(events, "no such device", 6))]
    if several and not busy:
        title = (f"the launch starts more processes than there are GPUs: {where.text or 'several processes'} asked for "
                 "GPUs that do not exist there (invalid device ordinal)")
        return [hypothesis(tl, Category.UNRECOGNISED, 0.85, title, what=what, fix=fix, affected=where.ranks,
                           evidence=evidence_of(events, "no such device", 6))]
    return [hypothesis(tl, Category.DUPLICATE_GPU if busy else Category.RANK_CRASHED, 0.9, title, where=where,
                       what=what, fix=fix, evidence=evidence_of(events, "no such device", 6))]


# torch.utils.data's own messages when a worker process of a rank's DataLoader dies
_DATALOADER = (
    ("is killed by signal: Killed", Category.RANK_KILLED,
     "lost a DataLoader worker to SIGKILL (most often the host's OOM killer)"),
    ("Unexpected bus error encountered in worker", Category.SHM_EXHAUSTED,
     "lost a DataLoader worker to a bus error: /dev/shm is too small"),
    ("is killed by signal: Bus error", Category.SHM_EXHAUSTED,
     "lost a DataLoader worker to a bus error: /dev/shm is too small"),
    ("exited unexpectedly", Category.RANK_CRASHED, "lost a DataLoader worker (it exited unexpectedly)"),
)
_DATALOADER_FIX = {
    Category.RANK_KILLED: ("The host ran out of RAM (each DataLoader worker holds a copy of what the dataset object "
                           "references): fewer workers (num_workers), a smaller prefetch_factor, or a dataset that "
                           "reads lazily; `dmesg -T | grep -i killed` on the host confirms it."),
    Category.SHM_EXHAUSTED: ("Give the container more shared memory (docker run --shm-size=8g or --ipc=host; in "
                             "Kubernetes an emptyDir with medium: Memory on /dev/shm), or fewer workers."),
    Category.RANK_CRASHED: ("Run with num_workers=0 to see the worker's own error; a bus error there is /dev/shm, a "
                            "silent death the host's OOM killer."),
}


def dataloader_cause(event: Event) -> tuple[Category, str] | None:
    """(category, what happened) when ``event`` is a rank's exception for a dead DataLoader worker."""
    if event.kind is not Kind.EXCEPTION and event.kind is not Kind.ERROR_LINE:
        return None
    message = str(event.data.get("message", ""))
    if "DataLoader worker" not in message and "bus error encountered in worker" not in message:
        return None
    return next(((category, verb) for words, category, verb in _DATALOADER if words in message), None)


def dataloader_worker_lost(tl: Timeline) -> list[Hypothesis]:
    """A DataLoader worker's death in lines that carry no rank (the crash rule reads the ranked ones)."""
    found: dict[Category, list[Event]] = defaultdict(list)
    verbs: dict[Category, str] = {}
    for event in tl.of(Kind.EXCEPTION, Kind.ERROR_LINE):
        if event.kind is Kind.EXCEPTION and event.origin.rank is not None and event.origin.rank in tl.ranks:
            continue  # (a line of the DataLoader's own, not an exception, the crash rule does not read)
        cause = dataloader_cause(event)
        if cause is not None:
            found[cause[0]].append(event)
            verbs[cause[0]] = cause[1]
    out = []
    for category, events in found.items():
        where = attribute(events, tl)
        title = f"{where.text or 'a process'} {verbs[category]}"
        what = ("PyTorch's DataLoader runs its workers as child processes of the rank; when one dies the rank raises "
                "and stops, and its peers then time out or lose their connection to it.")
        confidence = {Category.RANK_KILLED: 0.75, Category.SHM_EXHAUSTED: 0.8}.get(category, 0.5)
        out.append(hypothesis(tl, category, confidence, title, where=where, what=what,
                              fix=_DATALOADER_FIX[category], evidence=evidence_of(events, "a DataLoader worker died")))
    return out


SHARED_GPU_WHAT = ("The message lists {n} processes holding memory on the GPU that ran out: several ranks "
                   "of the job are on one device, each loading its own copy of the model, so that GPU fills up "
                   "while the others sit idle.")
SHARED_GPU_FIX = ("Put each rank on its own GPU: torch.cuda.set_device(local_rank) (LOCAL_RANK from the launcher) "
                  "before creating the model or the process group, and device_ids=[local_rank] for DDP; check "
                  "that CUDA_VISIBLE_DEVICES is not the same single GPU for every process.")


def shared_gpu(events: list[Event]) -> list[int]:
    """The other processes that an out-of-memory message lists on its GPU (PyTorch >= 2.1), when there are two or
    more holding a quarter of it or more: one other process may be a monitor or a second job, several with
    real memory are the job's own ranks on one device."""
    for event in events:
        pids = [int(pid) for pid in event.data.get("sharers") or ()]
        held, total = event.data.get("shared_bytes"), event.data.get("capacity_bytes")
        # and they hold a good part of it: a few hundred MiB each are other ranks' stray CUDA contexts, not models
        if len(pids) >= 2 and isinstance(held, int) and (not isinstance(total, int) or held * 4 >= total):
            return pids
    return []


def gpu_out_of_memory(tl: Timeline) -> list[Hypothesis]:
    """CUDA out of memory in lines that carry no rank (a single process's paste, NCCL's own ``Cuda failure 'out
    of memory'``): whatever they name (host, pid, GPU) ran out; the rank-based crash rule takes those with a
    rank."""
    events = [e for e in tl.of(Kind.CUDA_OOM) if e.origin.rank is None or e.origin.rank not in tl.ranks]
    if not events:
        return []
    where = attribute(events, tl)
    failed = _the_one_worker_failed_after(tl, events)
    if failed is not None and not (where.ranks or where.local_ranks):
        # the launcher's record of the one worker that failed, or the GPU it ran on: the process these lines came from
        where = _the_worker(tl, events, where, failed)
    sharers = shared_gpu(events)
    if sharers and not where.hosts:  # the processes it lists are NCCL's ``host:pid`` processes of one host
        places = {tl.pid_place(pid)[0] for pid in sharers} - {None}
        if len(places) == 1:
            where = replace(where, hosts=tuple(places))  # type: ignore[arg-type]
    tried = next((str(e.data["tried"]) for e in events if e.data.get("tried")), None)
    gpus = sorted({int(e.data["gpu"]) for e in events if e.data.get("gpu") is not None})
    title = (f"{where.text or 'a process'} ran out of GPU memory" + (f" (tried to allocate {tried}" if tried else "")
             + (f"{', ' if tried else ' ('}GPU {', '.join(map(str, gpus))})" if gpus else (")" if tried else "")))
    affected = _others_failed(tl, set(where.ranks))
    what = ("A process that runs out of GPU memory stops; its peers then wait for it in their next collective "
            "until they time out, or lose their connection to it: those errors are the cascade. The lines do not "
            "say which rank it was.")
    fix = ("Reduce the memory that rank needs (batch size, activation checkpointing, sharding) or find why it "
           "needs more than the others (a longer sequence, an uneven split); PYTORCH_CUDA_ALLOC_CONF="
           "expandable_segments:True if fragmentation is the problem.")
    if sharers:
        title += f"; the message lists {len(sharers)} processes holding memory on that GPU"
        what += " " + SHARED_GPU_WHAT.format(n=len(sharers))
        fix = SHARED_GPU_FIX + " " + fix
    return [hypothesis(tl, Category.RANK_OUT_OF_MEMORY, 0.75, title, affected=affected, what=what, fix=fix,
                       evidence=evidence_of(events, "out of GPU memory", 6),
                       where=where)]


def _the_one_worker_failed_after(tl: Timeline, events: list[Event]) -> int | None:
    """The local rank of the process that ran out: the only worker a launcher reports failed after ``events`` in
    the same file (torchrun's table names the failed worker's local rank; DeepSpeed's report does not), else the
    GPU the message names when it is not 0 (a process on ``cuda:N`` of several visible GPUs: local rank N, the
    launchers' convention; GPU 0 may be any process that sees one GPU)."""
    reports = [e for e in _reports_after(tl, events)
               if e.data.get("local_rank") is not None and e.data.get("signal") not in ("SIGKILL", "SIGTERM")]
    locals_ = {int(e.data["local_rank"]) for e in reports}
    first = {int(e.data["local_rank"]) for e in reports if e.data.get("root_cause")}
    if len(locals_) == 1 or len(first) == 1:  # (SIGTERM: the launcher stopping the others; the table's root cause)
        return next(iter(locals_ if len(locals_) == 1 else first))
    gpus = {int(e.data["gpu"]) for e in events if e.data.get("gpu") is not None}
    return next(iter(gpus)) if len(gpus) == 1 and 0 not in gpus and not locals_ else None


def _the_worker(tl: Timeline, events: list[Event], where: Attribution, local: int) -> Attribution:
    """``where`` with the worker of local rank ``local`` the launcher reported failed after ``events``: its global
    rank where torchrun's table gives it beside the local one (or the timeline, where one machine spawned the whole
    world), else the local rank."""
    ranks = {e.origin.rank for e in _reports_after(tl, events) if e.data.get("local_rank") == local
             and e.data.get("source") in ("summary", "spawn") and e.origin.rank is not None}
    if len(ranks) == 1:
        return replace(where, ranks=tuple(r for r in ranks if r is not None), local_ranks=(), processes=())
    return replace(where, local_ranks=(local,), processes=(*where.processes, f"local rank {local}"))


def _the_one_rank_mpirun_names(tl: Timeline, events: list[Event]) -> int | None:
    """The rank mpirun names as the first process that failed (``Process name: [[25735,1],1]``), after ``events``
    in the same file, when those events are one process's (one line, or one host and pid) and mpirun names one."""
    if len({(e.origin.host, e.origin.pid, e.ref.source) for e in events}) != 1 and len(events) != 1:
        return None
    ranks = {e.origin.rank for e in _reports_after(tl, events)
             if e.data.get("source") == "mpirun" and e.origin.rank is not None}
    return next(iter(ranks)) if len(ranks) == 1 else None


def _reports_after(tl: Timeline, events: list[Event]) -> list[Event]:
    """The launchers' reports of failed workers below the first of ``events``, in the files they are in."""
    first = min((e.ref.line for e in events), default=0)
    sources = {e.ref.source for e in events}
    return [e for e in tl.of(Kind.WORKER_FAILED) if e.ref.source in sources and e.ref.line > first]


def _after_network_failure(tl: Timeline, event: Event) -> bool:
    """The same process (host and pid, in the same file) logged an IB retry-exceeded error before ``event``; for
    nccl-tests' own failure line, which names only its host, a process of that host did."""
    if event.origin.pid is None and not (event.data.get("source") == "nccl-tests" and event.origin.host):
        return False
    return any(e.data.get("status") in _RETRY and (event.origin.pid is None or e.origin.pid == event.origin.pid) and
               e.origin.host == event.origin.host and e.ref.source == event.ref.source and e.ref.line < event.ref.line
               for e in tl.of(Kind.IB_COMPLETION_ERROR))


def worker_killed(tl: Timeline) -> list[Hypothesis]:
    """Worker deaths a launcher reports that no rank-based rule placed (a paste of one agent's output, with
    local ranks and pids only): SIGKILL (A025), SIGBUS (A014), any other signal or exit code (A003)."""
    killed: dict[str, list[Event]] = defaultdict(list)
    reports = tl.of(Kind.WORKER_FAILED)
    tables = {e.ref.source for e in reports if e.data.get("source") == "summary"}
    reports = [e for e in reports if not (e.data.get("source") == "record" and e.ref.source in tables)
               and not (_exit_code_only(e) and _own_error_before(tl, e))]
    if any(e.data.get("source") == "ray-memory-monitor" and not e.data.get("tail") for e in reports):
        reports = [e for e in reports if not e.data.get("tail")]  # the kill's own line says where; its tail does not
    placements = [e for e in reports if e.data.get("placement")]
    known = {(e.ref.source, e.origin.local_rank) for e in reports if not e.data.get("unknown_exit")}
    for event in reports:
        # a process Ray saw vanish is no crash the crash rule reads; unless its rank failed otherwise first (a
        # timeout, an error of its own: the watchdog's abort ends it, and Ray then sees it go)
        vanished = event.data.get("source") == "ray" and not event.data.get("signal") and not (
            event.origin.rank in tl.ranks and tl.ranks[event.origin.rank].has(*_SYMPTOMS, Kind.EXCEPTION))
        if event.origin.rank is not None and event.origin.rank in tl.ranks and not vanished:
            continue  # the crash rule has it
        if _srun_victim(event, reports):
            continue
        if event.data.get("unknown_exit"):
            if (event.ref.source, event.origin.local_rank) not in known:
                killed["died"].append(event)  # the launcher named it, the paste lost how it ended
            continue
        if event.data.get("source") == "ray-train":
            continue  # names the rank of a worker Ray saw vanish (below)
        signal = event.data.get("signal")
        code = event.data.get("exitcode")
        if watchdog_abort(tl, event):
            continue
        if event.data.get("source") == "ray" and not signal:
            killed["vanished"].append(event)  # Ray saw the process go, with no error of its own
        elif event.data.get("raised_by_monitor"):
            killed["monitor"].append(event)  # Ray 1.x's monitor failed its task (no kill, no signal)
        elif signal in ("SIGKILL", "SIGBUS"):
            killed[str(signal)].extend(_placed(event, placements))
        elif signal not in ("SIGTERM", "SIGHUP", "SIGINT") and (signal or (code not in (0, None))):
            killed["died"].extend(_placed(event, placements))
    reported = {e.origin.pid for events in killed.values() for e in events if e.origin.pid is not None}
    for event in tl.of(Kind.FATAL_SIGNAL):  # a signal the process itself reported, where no rank says whose
        if event.origin.rank is not None and event.origin.rank in tl.ranks:
            continue  # the crash rule has it
        if event.data.get("source") == "shell" and reports:
            continue  # a wrapper script's shell reporting the death a launcher reports too (with its rank or host)
        if event.data.get("signal") == "SIGBUS":
            killed["SIGBUS"].append(event)
        elif watchdog_abort(tl, event) or abort_of_read_exception(tl, event):
            continue
        elif event.origin.pid not in reported or event.origin.pid is None:
            killed["died"].append(event)  # SIGSEGV, SIGABRT… in a library, with the host and pid of its handler
    out = [] if killed or reports else _stopped_by_launcher(tl)
    for signal, events in sorted(killed.items()):
        if signal == "died":
            out.append(_died(tl, events))
            continue
        where = attribute(events, tl)
        trained = sorted({int(e.data["worker_rank"]) for e in reports if e.data.get("source") == "ray-train"})
        if signal == "vanished" and len(events) == 1 and len(trained) == 1 and not where.ranks:
            where = replace(where, ranks=tuple(trained))
        if not where.ranks and (task := task_ranks(tl, events)):
            where = replace(where, ranks=task)
        roots = unique_id_roots_gone(tl) if signal == "SIGKILL" and not where.ranks and not where.local_ranks else []
        if len(roots) == 1:
            # the ranks fetching a communicator's id lost the store's connection: the store's process, that root's
            # (rank 0 in the usual launch), is the one that was killed
            where = replace(where, ranks=tuple(roots))
        if not where.hosts and not where.processes and (batch := _batch_host(tl, events)):
            where = replace(where, hosts=(batch,))
        affected = _others_failed(tl, set(where.ranks))
        who = (where.text or "a worker") + _tasks_said(events)
        deleted_fix: str | None = None
        evicted = sorted({str(e.data["evicted"]) for e in events if e.data.get("evicted")})
        own = _own_error_of_vanished(tl, events) if signal == "vanished" else None
        if own is not None:  # it wrote an error of its own before Ray lost it: it died of that, not in silence
            title = (f"{who} died after an error of its own (Ray: "
                     f"{', '.join(sorted({str(e.data.get('exit_type') or 'SYSTEM_ERROR') for e in events}))}): "
                     f"{re.sub(r'^[(][^)]*pid=[^)]*[)] *', '', own.text.strip())[:120]}")
            what = (f"{who} wrote an error and then Ray lost its connection to it (the process ended). The error is "
                    "where to look first; its peers then fail or time out.")
            category, confidence = Category.RANK_CRASHED, 0.6
        elif signal == "vanished":
            title = (f"{who} vanished without an error of its own (Ray: {', '.join(sorted({str(e.data.get('exit_type') or 'SYSTEM_ERROR') for e in events}))}): "
                     "most often killed by the host's OOM killer")
            what = (f"Ray lost its connection to {who}: the process ended without raising anything. Ray's own list "
                    "of causes starts with SIGKILL from the kernel's OOM killer (host RAM, not GPU memory), then "
                    "`ray stop --force` and a crash in native code (SIGSEGV). Its peers then fail or time out.")
            category, confidence = Category.RANK_KILLED, 0.55
        elif signal == "SIGKILL" and evicted and all(e.data.get("over_limit") for e in events if e.data.get("evicted")):
            title = f"{who} was evicted by the kubelet: the pod wrote more than its limit allows to {', '.join(evicted)}"
            what = (f"Kubernetes evicted the pod of {who}: it used more of {', '.join(evicted)} than the pod's limit "
                    "(an emptyDir's sizeLimit, such as the volume mounted at /dev/shm that NCCL and the data loaders "
                    "fill, or ephemeral-storage: logs, checkpoints, caches written inside the container). Its peers "
                    "then time out or lose their connection to it.")
            deleted_fix = ("Raise the limit the message names (the emptyDir's sizeLimit, resources.limits.ephemeral-storage) "
                   "or write less there: checkpoints and caches to a mounted volume, fewer data-loader workers for "
                   "/dev/shm.")
            category, confidence = Category.RANK_KILLED, 0.9
        elif signal == "SIGKILL" and evicted:
            title = (f"{who} was evicted by the kubelet: the node ran low on {', '.join(evicted)}"
                     + (" (host memory, not GPU memory)" if "memory" in evicted else ""))
            what = (f"Kubernetes evicted the pod of {who}: its node ran low on {', '.join(evicted)}, and the kubelet "
                    "killed pods to recover, starting with those using more than they requested. Its peers then time "
                    "out or lose their connection to it.")
            category, confidence = Category.RANK_KILLED, 0.9
        elif signal == "SIGKILL" and any(e.data.get("deleted") for e in events):
            reasons = sorted({str(e.data["reason"]) for e in events if e.data.get("reason")})
            several = len(where.hosts) + len(where.ranks) > 1
            title = (f"{who} {'were' if several else 'was'} taken down from outside ("
                     + (f"reason: {', '.join(reasons)[:80]}" if reasons else "its pod deleted or its node stopped")
                     + "): the job was not ended by a failing worker")
            deleted_fix = ("Find who removed the node from the cluster's events (`kubectl get events`, the autoscaler's "
                           "log, the cloud's preemption notices) and keep the job's pods from being evicted or "
                           "preempted (a PodDisruptionBudget, on-demand nodes, priority); restart from the last "
                           "checkpoint.")
            what = (f"The job's controller reports {who} removed (kubectl delete, a node drained, scaled down or "
                    "stopped by the cluster's autoscaler, a preemption): its processes were killed without an error of "
                    "their own, and its peers then time out or lose their connection to it.")
            category, confidence = Category.RANK_KILLED, 0.85
        elif signal == "monitor":
            title = (f"a task on {who} was failed by Ray's memory monitor: the node's memory (host RAM) was nearly all "
                     "used, not GPU memory")
            what = (f"Ray's memory monitor (Ray 1.x) found the memory use of {who} over its threshold (95% by default) "
                    "and raised RayOutOfMemoryError in the task rather than let the node run out; its message lists "
                    "the processes that held the most. The task's peers then fail or time out.")
            category, confidence = Category.RANK_KILLED, 0.85
        elif signal == "SIGKILL" and any(e.data.get("source") == "ray-memory-monitor" for e in events):
            title = f"{who} was killed by Ray's memory monitor: the node's memory (host RAM) ran out, not GPU memory"
            what = (f"Ray's memory monitor says the node's memory use went over its threshold (RAY_memory_usage_"
                    f"threshold, 0.95 by default) and it killed {who}, the most recently scheduled worker, to keep the "
                    "node alive. The worker leaves no error of its own; its peers then time out or lose it.")
            category, confidence = Category.RANK_KILLED, 0.9
        elif signal == "SIGKILL" and any(e.data.get("oom") for e in events):
            title = (f"{who} was killed for memory by Slurm (the job's memory limit, --mem): host memory, not GPU memory"
                     if all(e.data.get("enforcer") == "slurm-accounting" for e in events) else
                     f"{who} was killed by the kernel's OOM killer: host or container memory, not GPU memory")
            what = (f"{'The kernel' if any(e.data.get('source') == 'kernel' for e in events) else 'The scheduler or the container runtime'} "
                    f"says {who} was killed for memory: the host's RAM or the job's memory limit (a cgroup: "
                    "Slurm's --mem, a container limit) ran out. SIGKILL cannot be caught, so the worker leaves no "
                    "traceback; its peers then time out or lose their connection to it.")
            category, confidence = Category.RANK_KILLED, 0.9
        elif signal == "SIGKILL":
            codes = sorted({int(e.data["exitcode"]) for e in events if isinstance(e.data.get("exitcode"), int)
                            and int(e.data["exitcode"]) > 128})  # a shell's 128 + 9, as the launcher said it
            said = f"exit code {codes[0]}" if len(codes) == 1 else "exit code -9"
            title = f"{who} was killed by SIGKILL ({said}): most often the host's OOM killer"
            what = (f"The launcher reports {who} killed by SIGKILL, and no error of its own: "
                    "SIGKILL cannot be caught, so the worker leaves no traceback. The kernel's out-of-memory killer "
                    "(host RAM, not GPU memory), a container memory limit or the scheduler sent it.")
            category, confidence = Category.RANK_KILLED, 0.8
        else:
            title, what = f"{who} {SIGBUS_VERB}", SIGBUS_WHAT
            category, confidence = Category.SHM_EXHAUSTED, 0.6
        out.append(hypothesis(tl, category, confidence, title, affected=affected, what=what,
                              evidence=(evidence_of([own], "its own error") if own is not None else [])
                              + evidence_of(events, {"vanished": "Ray lost it", "monitor": "Ray's memory monitor"}.get(
                                  signal, f"killed by {signal}"), 6),
                              where=where,
                              fix=(deleted_fix if signal in ("SIGKILL", "monitor") else _VANISHED_FIX if signal == "vanished"
                                   else SHM_FIX)))
    return out


_VANISHED_FIX = ("Look at the node's kernel log for the OOM killer (dmesg -T | grep -i 'killed process', or Ray's "
                 "raylet.out and its memory monitor), and at the worker's own log in /tmp/ray/session_latest/logs "
                 "for a native crash; give the workers more host memory or fewer DataLoader workers.")


def _own_error_of_vanished(tl: Timeline, events: list[Event]) -> Event | None:
    """The first error line written by the worker Ray reports lost (by its pid and host), before that report."""
    for event in events:
        pid, host = event.data.get("worker_pid") or event.origin.pid, event.origin.host
        if pid is None:
            continue
        for own in tl.of(*_OWN_ERRORS):
            if (own.origin.pid == pid and (host is None or own.origin.host in (None, host))
                    and own.ref.source == event.ref.source and own.ref.line < event.ref.line):
                return own
    return None


_OWN_ERRORS = (Kind.EXCEPTION, Kind.NCCL_ERROR, Kind.FATAL_SIGNAL, Kind.CUDA_OOM, Kind.GPU_ERROR, Kind.ERROR_LINE,
               Kind.NCCL_WARN)


def watchdog_abort(tl: Timeline, event: Event) -> bool:
    """SIGABRT after a watchdog timeout in the same output (or before it, for the process that timed out): PyTorch
    takes the process down itself once a collective timed out (``To avoid data inconsistency, we are taking the
    entire process down``: an uncaught exception, ``terminate called``, abort), so the abort is the timeout's end,
    not a crash of its own. So is one after a size check that failed above it (gloo's ``op.preamble.length <=
    op.nbytes`` thrown as ``gloo::EnforceNotMet``, uncaught: ``terminate called``, ``Fatal Python error: Aborted``):
    the desync rule has that check. And a launcher's record stored apart from the ranks' output, where their watchdog
    timeouts are, unless that process's own error is in the inputs."""
    if event.data.get("signal") != "SIGABRT":
        return False
    timeouts = [e for e in tl.of(Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT) if e.ref.source == event.ref.source]
    checks = [e for e in tl.of(Kind.COLLECTIVE_MISMATCH) if e.ref.source == event.ref.source]
    if any(e.ref.line < event.ref.line for e in timeouts + checks):
        return True
    # a paste that puts the launcher's record first: the process it names timed out itself (its local rank is
    # the number of a rank whose timeout is in that output, the first node's numbering, and it names no other)
    local = event.origin.local_rank
    if event.origin.rank is None and local is not None and any(e.origin.rank == local for e in timeouts):
        return True
    # … or a timeout without any rank's label below the record of the one process that failed in that output (the
    # summary's ``<NO_OTHER_FAILURES>``, the watchdog's lines pasted after it): the timeout is that process's
    if timeouts and all(e.origin.rank is None and e.origin.local_rank is None for e in timeouts) and len(
            [w for w in tl.of(Kind.WORKER_FAILED) if w.ref.source == event.ref.source
             and w.data.get("signal") not in ("SIGTERM", "SIGKILL")]) == 1:
        return True
    # the launcher's output stored apart from the ranks' (a file of its own, no error in it before the record), the
    # ranks' watchdog timeouts in the others: the same end, unless that process's own error is somewhere in them
    if timeouts or any(e.ref.source == event.ref.source and e.ref.line < event.ref.line for e in tl.of(*_OWN_ERRORS)):
        return False
    if not tl.of(Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT):
        return False
    others = [e for e in tl.of(*_OWN_ERRORS) if e.ref.source != event.ref.source]
    whose = event.origin.rank if event.origin.rank is not None else local
    if whose is None:
        # a record that names no rank (a shell's ``1248178 Aborted (core dumped) <the job's command>``): the
        # timeouts' end where no process's own error is in the other inputs (ProcessGroupNCCL's words after its
        # timeout, ``Some NCCL operations have failed or timed out``, are that end's)
        return all(is_aftermath(e) for e in others)
    return not any(e.origin.rank == whose or (e.origin.rank is None and e.origin.local_rank == whose) for e in others)


def _exit_code_only(report: Event) -> bool:
    """A report that says only that a process failed: Open MPI's summary, srun's ``Exited with exit code N`` (Flux's
    ``task(s) exited with exit code N``), a process's MPI_Abort."""
    source = report.data.get("source")
    return source in ("mpirun-summary", "mpi-abort") or (source in _TASK_LAUNCHERS and not report.data.get("signal")
                                                          and report.data.get("exitcode") is not None)


def _own_error_before(tl: Timeline, summary: Event) -> bool:
    """Open MPI's "1 process returned a non-zero exit code" (or srun's "task N: Exited with exit code 1") after
    the process's own error in the same output: that error says more than the exit code."""
    return any(e.ref.source == summary.ref.source and e.ref.line < summary.ref.line
               for e in tl.of(*_OWN_ERRORS))


def _stopped_by_launcher(tl: Timeline) -> list[Hypothesis]:
    """DeepSpeed's launcher killing its workers, and nothing else: one of them failed first (that is why it
    stops the others), and its own output is not in the paste."""
    events = [e for e in tl.of(Kind.WORKER_TERMINATED) if e.data.get("source") == "deepspeed"]
    if not events:
        return []
    hosts = sorted({e.origin.host for e in events if e.origin.host})
    where = f" on {', '.join(hosts)}" if hosts else ""
    title = (f"a worker{where} failed and DeepSpeed's launcher then killed the other {len(events)}: the failure "
             "itself is not in the inputs")
    what = ("DeepSpeed's launcher kills the remaining workers of a host once one of them exited (its sigkill_handler "
            "logs 'Killing subprocess' for each): the worker that exited first is the cause, and its own output "
            "(a traceback, an out-of-memory error, 'exits with return code = N') comes just before these lines.")
    return [hypothesis(tl, Category.RANK_CRASHED, 0.3, title, hosts=hosts, what=what,
                       evidence=evidence_of(events, "the launcher stopping the others", 4),
                       fix="Collect the whole output of that host from before these lines, or each worker's log.")]


def _srun_victim(event: Event, reports: list[Event]) -> bool:
    """srun ends the other tasks once one failed (``--kill-on-bad-exit``, or at the step's end): a task
    ``Killed`` or ``Terminated`` after another task of the same output exited with an error or a crash is one
    of those, not a cause. So does a job platform its other containers (Determined's ``container failed with
    non-zero exit code: (exit code 137)`` after the launcher named a process that exited with 1)."""
    if event.data.get("source") == "container" and event.data.get("signal") == "SIGKILL":
        return any(other is not event and other.ref.source == event.ref.source and other.ref.line < event.ref.line
                   and isinstance(other.data.get("exitcode"), int) and other.data["exitcode"] > 0
                   for other in reports)
    if event.data.get("source") != "slurm" or event.data.get("signal") not in ("SIGKILL", "SIGTERM") or \
            event.data.get("oom"):
        return False
    return any(other.data.get("source") == "slurm" and other.ref.source == event.ref.source and
               other.ref.line < event.ref.line and other.data.get("tasks") is not None and
               other.data.get("signal") not in ("SIGKILL", "SIGTERM") and not other.data.get("unknown_exit")
               for other in reports)


def _placed(event: Event, placements: list[Event]) -> list[Event]:
    """The event, with the line of the same block that says where it ran (Hydra's ``PID 92248 RUNNING AT
    host`` sits a line above its ``EXIT CODE: 9``)."""
    if event.origin.host or event.origin.rank is not None:
        return [event]
    near = [p for p in placements if p.ref.source == event.ref.source and abs(p.ref.line - event.ref.line) <= 3]
    return [event, *near[:1]]


def task_numbers(text: str) -> list[int]:
    """srun's task list, ``5``, ``3,7``, ``9-10,12-15``, ``[0-3]``: the numbers."""
    out: list[int] = []
    for part in text.strip("[] ").split(","):
        low, _, high = part.strip().partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            out.extend(range(int(low), int(high or low) + 1))
    return out


def _batch_host(tl: Timeline, events: list[Event]) -> str | None:
    """The host of a Slurm job's batch step (``StepId=N.batch``, whose oom_kill line names no host): the node
    slurmstepd names for the job (``*** JOB N ON g002 CANCELLED …``), where the batch script runs."""
    # (the job's own step, as Slurm's memory accounting names it: ``Job 41176 exceeded memory limit``, is the batch one)
    jobs = {str(e.data["step"]).split(".")[0] for e in events if e.origin.host is None and e.data.get("step")
            and (str(e.data["step"]).endswith(".batch") or "." not in str(e.data["step"]))}
    hosts = {e.origin.host for e in tl.events if e.data.get("source") == "slurm" and e.origin.host
             and str(e.data.get("step") or "") in jobs}
    if not jobs and any(e.data.get("step") for e in events if e.origin.host is None):
        # a job step's kill (``StepId=9178265.0``): the one host srun then reports a task of failing on, not
        # counting the tasks it terminated itself (``srun: error: nid006190: task`` cut by the paste counts)
        hosts = {e.origin.host for e in tl.of(Kind.WORKER_FAILED) if e.data.get("source") == "slurm"
                 and e.origin.host and "tasks" in e.data and e.data.get("signal") != "SIGTERM"}
    return hosts.pop() if len(hosts) == 1 else None


def _tasks_said(events: list[Event]) -> str:
    """`` (srun task 3)``, `` (Flux task 3)``: the launcher's numbers of the tasks ``events`` report, or nothing."""
    tasks = sorted({str(e.data["tasks"]) for e in events if e.data.get("tasks")})
    if not tasks:
        return ""
    flux = all(e.data.get("source") == "flux" for e in events if e.data.get("tasks"))
    return f" ({'Flux' if flux else 'srun'} task {', '.join(tasks)})"


def task_ranks(tl: Timeline, events: list[Event]) -> tuple[int, ...]:
    """The ranks of the srun (or Flux) tasks ``events`` name, where srun's reports show several tasks on one host, an MPI
    library names its ranks, or srun reports one host and no other launcher speaks in the inputs: srun then started
    a task per process, and a task's number (SLURM_PROCID) is its rank. With one task per host (several hosts each
    reporting one task, or another launcher's agent in the inputs: torchrun under srun) the number is the node's, and
    nothing is claimed."""
    numbers = {n for e in events if e.data.get("tasks") for n in task_numbers(str(e.data["tasks"]))}
    if not numbers:
        return ()
    per_host: dict[str, set[int]] = defaultdict(set)
    for event in tl.of(Kind.WORKER_FAILED):
        if event.data.get("source") in _TASK_LAUNCHERS and event.data.get("tasks"):
            # (a host the paste redacted, ``<node-name>``, counts as one host of its own)
            per_host[event.origin.host or ""].update(task_numbers(str(event.data["tasks"])))
    # several tasks on one host, or an MPI library's own rank in the inputs (Cray MPICH's ``MPICH ERROR [Rank 0]``:
    # srun started the MPI processes themselves, one task per rank)
    mpi = any(e.data.get("source") == "cray-mpich" for e in tl.events)
    if mpi or any(len(tasks) > 1 for tasks in per_host.values()):
        return tuple(sorted(numbers))
    # one task per host: each of several hosts reporting a single task (tasks 0 and 1 on two nodes), or another
    # launcher's agent speaking (torchrun under srun: a task is a node's agent); else srun started the processes
    agent = any((e.kind is Kind.AGENT_SIGNAL and e.data.get("source") not in _TASK_LAUNCHERS) or
                (e.kind in (Kind.WORKER_FAILED, Kind.WORKER_TERMINATED)
                 and e.data.get("source") not in (*_TASK_LAUNCHERS, None))
                for e in tl.events)
    return () if agent or len(per_host) > 1 else tuple(sorted(numbers))


_ABORT_ABOVE = 3  # lines above a fatal signal's line in which the error it died of is looked for


def _died(tl: Timeline, events: list[Event]) -> Hypothesis:
    where = attribute(events, tl)
    if not where.ranks and (task := task_ranks(tl, events)):
        where = replace(where, ranks=task)
    known = {str(e.data["signal"]) if e.data.get("signal") else f"exit code {e.data['exitcode']}" for e in events
             if e.data.get("signal") or e.data.get("exitcode") is not None}
    signalled = any(e.kind is Kind.FATAL_SIGNAL for e in events)
    how = sorted(known) or ["a fatal signal, its name not in the inputs" if signalled else "how is not in the inputs"]
    affected = _others_failed(tl, set(where.ranks))
    title = f"{where.text or 'a worker'}{_tasks_said(events)} died ({', '.join(how)})"
    what = (f"The launcher reports {where.text or 'a worker'} dead ({', '.join(how)}). A worker that dies takes "
            "the job down: the others lose their connection to it or time out. Its own output (above the "
            "launcher's report, or in its log file) says why: a traceback, a segfault in an extension, an abort.")
    if all(e.data.get("source") == "gdb" for e in events):
        what = ("A debugger's backtrace shows the process aborting (abort(), SIGABRT): an uncaught C++ exception "
                "(std::terminate above it) or a failed check in a library; the frames above abort() name the library "
                "and the call. Its peers then lose their connection to it or time out.")
    category = Category.RANK_CRASHED
    own = unprefixed_exception(tl, events[0], exception_lines=True) if len(events) == 1 else None
    # (one process's death in several lines: Open MPI's ``*** Process received signal ***`` and its ``Signal: …``)
    one = len(events) == 1 or (events[0].origin.pid is not None and len({(e.origin.host, e.origin.pid) for e in events}) == 1)
    if own is None and one and events[0].kind is Kind.FATAL_SIGNAL:
        # a signal right after an error whose words name a cause: an uncaught C++ exception's ``what():`` line before
        # the shell's ``Aborted``, UCX's ``mm_iface failed to allocate receive FIFO`` before its segfault handler's
        # ``Caught signal 11``: that line, a few lines above in the same file, is what the process died of
        above = [e for e in just_above(tl, events[0], _ABORT_ABOVE)
                 if (reading := read_as(str(e.data.get("message") or e.text))) is not None and reading.cause]
        own = above[-1] if above else None
        if own is None and events[0].data.get("source") == "assertion":
            # a C assertion's abort, whose expression may itself be the check that names the cause (a job's shape:
            # distributed-llama's ``Assertion `d % nSlices == 0' failed.``, two to the power of n nodes only)
            own = events[0]
    said = str(own.data.get("message") or own.text).strip() if own is not None else ""
    # (read with its exception's type, whose name may be the words: ``ModuleNotFoundError: No module named 'x'``)
    typed = f"{own.data['type']}: {said}" if own is not None and own.data.get("type") and own.data.get("message") else said
    reading = read_as(typed) if said else None
    if reading is not None and reading.cause:
        # the worker's own error, printed without its rank (or its traceback) above the launcher's record, names a cause
        category = reading.category
        title += f": its error says {reading.what} ({said[:100]})"
        what += f" Its own error, above the launcher's report, says {reading.what}: that is the most likely cause."
    fix = ("Read that worker's own output (torchrun --log-dir or --tee 3 keep it per rank); for SIGSEGV/SIGABRT run it "
           "with `python -X faulthandler` to get its stack.")
    if category is not Category.RANK_CRASHED and reading is not None:
        fix = f"Mend what its own error names: {reading.what}. {fix}"
    return hypothesis(tl, category, 0.6, title, affected=affected, what=what,
                      evidence=evidence_of(([own] if own is not None else []) + events, LAUNCHERS_REPORT, 6),
                      where=where, fix=fix)


def ib_completion_error(tl: Timeline) -> list[Hypothesis]:
    every = tl.of(Kind.IB_COMPLETION_ERROR)
    # a report without its status that names its host (Mooncake's ``Too many errors found in local RNIC
    # 10.0.2.69:15858@mlx5_bond_2``) places the completions of that NIC whose lines name no host
    placing = [e for e in every if e.data.get("status") is None and e.origin.host]
    events = [e for e in every if e.data.get("status") not in _RETRY]
    if any(e.data.get("status") != 5 for e in every):
        # status 5 (flushed) follows the queue pair's first error: that one is the finding
        events = [e for e in events if e.data.get("status") != 5]
    if any(e.data.get("status") is not None for e in every):
        # a report without its status (HCCL's console EI0013) beside one with it is the same failure
        events = [e for e in events if e.data.get("status") is not None]
    if not events:
        return []
    by_status: dict[int, list[Event]] = defaultdict(list)
    for event in events:
        status = event.data.get("status")
        by_status[int(status) if status is not None else -1].append(event)  # -1: a report without its status
    out = []
    for status, group in sorted(by_status.items()):
        where = attribute(group, tl)
        if not where.ranks and not where.hosts and placing:
            nics = {e.data.get("hca") for e in group}
            where = attribute(group + [e for e in placing if None in nics or e.data.get("hca") in nics], tl)
        name = IB_STATUS.get(status, str(group[0].data.get("status_text") or "an error"))
        vendor = sorted({int(e.data["vendor_err"]) for e in group if e.data.get("vendor_err") is not None})
        title = (f"InfiniBand completion error {f'{status} ' if status >= 0 else ''}({name}) on {where.text or 'a host'}"
                 + (f", vendor err {', '.join(map(str, vendor))}" if vendor else ""))
        what = f"The NIC reported status {status} ({name}) for a transfer." if status >= 0 else \
            f"The NIC reported an error completion ({name}) for a transfer; the report does not give its status."
        if status == 4:
            what += (" A local protection error: the NIC could not access the memory it was given, in practice "
                     "the GPU's memory through GPUDirect RDMA, blocked by PCIe ACS or the IOMMU.")
        elif status == 5:
            what += " Work requests flushed: the queue pair was already in error; look for the first error."
        fix = None
        if all(e.data.get("transport") == "mooncake" for e in group):
            what += " Mooncake's transfer engine reported it (and takes a NIC with too many errors out of use)."
            fix = ("Give each GPU the RDMA NIC on its own PCIe switch (SGLang: --disaggregation-ib-device, Mooncake's "
                   "device list; `nvidia-smi topo -m` shows the pairs): a NIC behind another switch cannot reach the "
                   "GPU's memory when PCIe ACS or the IOMMU blocks peer-to-peer; check nvidia-peermem or dmabuf." if
                   status == 4 else None)
        out.append(hypothesis(tl, Category.IB_COMPLETION, 0.85 if status != 5 else 0.6, title, what=what,
                              evidence=evidence_of(group, f"IB status {status}", 8),
                              where=where, fix=fix))
    return out


# ibv_event_type_str() names of the asynchronous events that mean a failure; the others (port active, GID
# table change, LID change, SM change, client reregistration, communication established) are information
_FAILED_EVENTS = ("port error", "catastrophic", "CQ error", "work queue error", "path migration error",
                  "device fatal", "marked as failed", "health compromised")


# the async events that say the fabric changed under the port (the subnet manager restarted or failed over and asked
# the ports to register again, a port that bounced got a new LID): no failure, but where a job then hangs with no
# other error, the likeliest lead
_FABRIC_CHANGED = ("client reregistration", "SM change", "LID change")


def _async_events(tl: Timeline, words: tuple[str, ...]) -> list[Event]:
    """NCCL's IB async events whose name holds one of ``words`` (in any case)."""
    return [e for e in tl.of(Kind.IB_ASYNC_EVENT)
            if any(word.lower() in str(e.data.get("event", "")).lower() for word in words)]


def ib_port_down(tl: Timeline) -> list[Hypothesis]:
    events = _async_events(tl, _FAILED_EVENTS)
    if not events:
        return _device_not_opened(tl) or _net_counts_differ(tl) or _net_lists_differ(tl) or _fabric_changed(tl)
    where = attribute(events, tl)
    kinds = sorted({str(e.data.get("event")) for e in events})
    affected = _others_failed(tl, set(where.ranks))
    devices = sorted({str(e.data["dev"]) for e in events if e.data.get("dev")})
    title = (f"the InfiniBand port or HCA of {where.text or 'a host'} failed ({', '.join(kinds)}"
             f"{'; device ' + ', '.join(devices[:3]) if devices else ''})")
    what = (f"NCCL got asynchronous IB events ({', '.join(kinds)}) on {where.text or 'a host'}: the link under the "
            "job went down there, and the other hosts' transfers to it fail or time out (often as retry-exceeded, "
            "status 12).")
    return [hypothesis(tl, Category.IB_PORT_DOWN, 0.9, title, affected=affected, what=what,
                       evidence=evidence_of(events, "IB async event", MAX_CASCADE),
                       where=where)]


def _fabric_changed(tl: Timeline) -> list[Hypothesis]:
    """NCCL's IB async events that say the fabric changed under a port (``Got async event : client reregistration``,
    ``SM change``, ``LID change``) and nothing that failed: a lead, not a verdict (the port came back; whether the
    job's connections did is not in the lines)."""
    events = _async_events(tl, _FABRIC_CHANGED)
    if not events:
        return []
    where = attribute(events, tl)
    kinds = sorted({str(e.data.get("event")) for e in events})
    title = (f"the InfiniBand fabric changed under the ports of {where.text or 'a host'} ({', '.join(kinds)}): the "
             "subnet manager restarted or failed over, or the port bounced")
    what = (f"NCCL got asynchronous IB events ({', '.join(kinds)}) on {where.text or 'a host'}. They are no failure by "
            "themselves: the subnet manager asks the ports to register again when it restarts or another takes "
            "over, and a port that went down and up gets them too. Connections NCCL had opened may not survive it; "
            "with no other error in the inputs, it is the likeliest lead for a job that then stopped moving.")
    fix = ("Look at the subnet manager's log and the port's counters on that host (`ibstat`, `perfquery`, "
           "`dmesg -T | grep -i mlx`) for the time of the events; restart the job once the fabric is stable.")
    return [hypothesis(tl, Category.IB_PORT_DOWN, 0.45, title, what=what, fix=fix,
                       evidence=evidence_of(events, "IB async event", MAX_CASCADE), where=where)]


# NCCL 2.30's check that every rank sees as many NICs: ``Detected mixed local Net device counts across ranks (min 4,
# max 8). Set NCCL_IGNORE_NET_MISMATCH=1 to …`` (and of its CollNet devices, SHARP's: ``… local CollNet device counts …
# NCCL_IGNORE_COLLNET_MISMATCH=1``)
_NET_COUNTS = re.compile(r"Detected mixed local (?P<net>Net|CollNet) device counts across ranks \(min (?P<min>\d+), "
                         r"max (?P<max>\d+)\)")


def _net_counts_differ(tl: Timeline) -> list[Hypothesis]:
    """Ranks that see different numbers of NICs: on some host a NIC is down, or was not given to the container
    (the device plugin's allocation), so NCCL would build rails that lead nowhere; it stops unless told to ignore it."""
    found = [(e, m) for e in tl.of(Kind.NCCL_WARN) if (m := _NET_COUNTS.search(str(e.data.get("message", ""))))]
    if not found:
        return []
    events = [e for e, _ in found]
    low, high = found[0][1]["min"], found[0][1]["max"]
    collnet = found[0][1]["net"] == "CollNet"
    where = attribute(events, tl)
    title = (f"the ranks do not see the same number of {'CollNet (SHARP) devices' if collnet else 'NICs'} ({low} on some, "
             f"{high} on others): a NIC is down or missing on a host")
    what = ("NCCL compared the network devices each rank found and they differ: a port down or an HCA that failed on "
            "one host, or a container given fewer RDMA devices than the others (the device plugin's allocation).")
    fix = ("Find the host with fewer NICs (`ibv_devinfo` or `ibstat` on each; `ls /dev/infiniband` in each container), "
           "bring its ports up or give the container every NIC; "
           f"NCCL_IGNORE_{'COLLNET' if collnet else 'NET'}_MISMATCH=1 only hides it.")
    return [hypothesis(tl, Category.IB_PORT_DOWN, 0.6, title, what=what, fix=fix, hosts=where.hosts,
                       evidence=evidence_of(events, "NIC counts differ", 3))]


def _net_lists_differ(tl: Timeline) -> list[Hypothesis]:
    """The hosts' ``NET/IB : Using [0]mlx5_0:1/IB …`` lists: a host that lists fewer of the same NICs than another
    (``mlx5_7`` missing on one of two) has one down or not given to it (NCCL lists only the ports that are up), so
    the channels its peers route over that NIC lead nowhere; the job hangs at its first connections or runs slower.
    A lead (0.45): another failure in the logs is read first."""
    listed: dict[str, tuple[frozenset[str], Event]] = {}
    for event in tl.of(Kind.NCCL_NET):
        devices = event.data.get("devices")
        host = event.origin.host
        if host and event.data.get("net") == "IB" and isinstance(devices, list) and devices:
            listed.setdefault(host, (frozenset(str(d).split("/")[0] for d in devices), event))
    if len(listed) < 2:
        return []
    most = max(len(names) for names, _ in listed.values())
    widest = next(names for names, _ in listed.values() if len(names) == most)
    short = {host: (names, event) for host, (names, event) in listed.items() if names < widest}
    if not short or (len(short) > 1 and len(short) * 2 >= len(listed)) or \
            any(not names <= widest for names, _ in listed.values()):
        return []  # most hosts list fewer, or the lists are not of the same NICs: a configuration, not a NIC down
    events = [event for _, event in short.values()]
    where = attribute(events, tl)
    missing = sorted(set().union(*(widest - names for names, _ in short.values())))
    title = (f"{', '.join(sorted(short))} use{'s' if len(short) == 1 else ''} fewer InfiniBand NICs than the other "
             f"hosts ({', '.join(missing[:4])} missing): a port down or a NIC not given to {'it' if len(short) == 1 else 'them'}")
    what = ("NCCL lists the IB ports it can use on each host; one host lists fewer of the same NICs than its peers: "
            "the missing port is down (or flapping), its HCA failed, or the container or VM was not given it. Peers "
            "that route channels through that NIC wait at the first connections (an init hang), or the job runs "
            "on fewer rails.")
    fix = (f"On {', '.join(sorted(short))}: `ibstat` / `rdma link` for {missing[0]} (state, physical state, link "
           "flaps in `dmesg`), reseat or replace the cable or HCA, or pass every RDMA device into the container; "
           "meanwhile NCCL_IB_HCA can restrict every host to the NICs all of them have.")
    return [hypothesis(tl, Category.IB_PORT_DOWN, 0.45, title, what=what, fix=fix, where=where,
                       evidence=evidence_of(events, "lists fewer NICs", 3)
                       + evidence_of([listed[h][1] for h in listed if h not in short][:1], "the NICs of a peer"))]


def _device_not_opened(tl: Timeline) -> list[Hypothesis]:
    """``NET/IB : Unable to open device erdma_1``: NCCL listed an HCA it could not open, and went on over IB
    (nothing says it fell back to sockets, which the socket rule reads): one NIC of that host is unusable (down, or
    not passed into the container), so its channels there lead nowhere or the hosts disagree on their NICs."""
    events = [e for e in tl.of(Kind.IB_DEVICE_UNAVAILABLE) if e.data.get("dev")]
    if not events or socket_transport(tl):
        return []
    where = attribute(events, tl)
    devices = sorted({str(e.data["dev"]).strip("'\".,") for e in events})
    title = (f"NCCL could not open the RDMA device{'s' if len(devices) > 1 else ''} {', '.join(devices)}"
             f"{' on ' + where.text if where.text else ''}: a NIC of that host is unusable")
    if all(e.data.get("library") == "HCCL" for e in events):
        title = (f"Ascend HCCL could not start the RDMA NIC of {', '.join(d.upper() for d in devices)}"
                 f"{' on ' + where.text if where.text else ''}: the port is down or the NIC is not configured")
    what = ("NCCL found the device but ibv_open_device failed: the port or HCA is down, or the container was given "
            "its name but not its device file (a device plugin or cgroup that admits fewer uverbs devices). The "
            "host then has fewer NICs than its peers: NCCL stops on the mismatch, or with NCCL_IGNORE_NET_MISMATCH "
            "set, channels over that NIC wait forever.")
    fix = (f"Check the NIC on that host (`ibv_devinfo -d {devices[0]}`, `ls /dev/infiniband` inside the container); "
           "pass every RDMA device into the container, or restrict the job to the NICs every host has "
           "(NCCL_IB_HCA=...).")
    return [hypothesis(tl, Category.IB_PORT_DOWN, 0.6, title, affected=_others_failed(tl, set(where.ranks)),
                       what=what, fix=fix, evidence=evidence_of(events, "the device could not be opened", 4),
                       where=where)]
