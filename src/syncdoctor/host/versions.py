"""Versions of the stack (Python, torch, its CUDA and NCCL, the NVIDIA driver) and the GPUs, when present.

Does I/O: reads package metadata (torch, the ``nvidia-nccl-*`` wheel), imports torch only when asked, reads
``<root>/proc/driver/nvidia/version`` and queries NVML through ``pynvml`` when that module is
importable. Everything is optional: a missing piece is ``None``, never an error.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import logging
import platform
import re
import sys
from pathlib import Path
from typing import Any

from syncdoctor.host.sysfs import read_text
from syncdoctor.host.types import GpuFacts, VersionFacts

__all__ = ["format_nccl_version", "parse_driver_version", "read_gpus", "read_versions"]

log = logging.getLogger(__name__)

_DRIVER_RE = re.compile(r"Kernel Module\s+(?:for\s+\S+\s+)?(\d+(?:\.\d+)+)")


def format_nccl_version(value: Any) -> str | None:
    """``(2, 21, 5)`` or ``2215``/``22105`` (NCCL's integer code) -> ``2.21.5``."""
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, int) for v in value):
        return ".".join(str(v) for v in value)
    if isinstance(value, int) and value > 0:
        if value >= 10000:  # NCCL >= 2.9: major*10000 + minor*100 + patch
            return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
        return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"
    return None


def parse_driver_version(text: str | None) -> str | None:
    """The driver version from ``/proc/driver/nvidia/version`` (``... Kernel Module  535.104.05 ...``)."""
    match = _DRIVER_RE.search(text or "")
    return match.group(1) if match else None


_CUDA_RE = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_NCCL_WHEELS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")


def _metadata_versions() -> dict[str, Any]:
    """torch, its CUDA and NCCL from package metadata and ``torch/version.py``, without importing torch."""
    if "torch" in sys.modules and sys.modules["torch"] is None:
        return {}  # torch import explicitly blocked: behave as if it were absent
    found: dict[str, Any] = {}
    try:
        dist = importlib.metadata.distribution("torch")
    except importlib.metadata.PackageNotFoundError:
        return {}
    found["torch"] = dist.version
    version_file = read_text(Path(str(dist.locate_file("torch/version.py"))))
    match = _CUDA_RE.search(version_file or "")
    found["torch_cuda"] = None if match is None or match.group(1) == "None" else match.group(1)
    for wheel in _NCCL_WHEELS:
        try:
            found["nccl"] = importlib.metadata.version(wheel)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _torch_versions(unreadable: list[str]) -> dict[str, Any]:
    """The same facts from an imported torch (slow: seconds), plus which backends it has."""
    try:
        torch = importlib.import_module("torch")
    except Exception as exc:  # a broken install must not break check
        log.debug("torch import failed: %s", exc)
        if not isinstance(exc, ImportError):  # ImportError: not installed (or blocked), which is fine
            unreadable.append(f"torch: installed but import failed ({type(exc).__name__}: {exc})")
        return {}
    found: dict[str, Any] = {"torch": str(getattr(torch, "__version__", "")) or None}
    found["torch_cuda"] = getattr(getattr(torch, "version", None), "cuda", None)
    try:
        dist = importlib.import_module("torch.distributed")
        found["gloo_available"] = bool(dist.is_gloo_available())
        found["nccl_available"] = bool(dist.is_nccl_available())
    except Exception as exc:
        log.debug("torch.distributed unavailable: %s", exc)
    if found.get("nccl_available"):
        try:
            found["nccl"] = format_nccl_version(torch.cuda.nccl.version())
        except Exception as exc:
            unreadable.append(f"NCCL version: torch.cuda.nccl.version() failed ({exc})")
    return found


def read_gpus() -> tuple[tuple[GpuFacts, ...], str | None]:
    """GPUs and the driver version from NVML, when ``pynvml`` is importable and a driver is loaded."""
    if importlib.util.find_spec("pynvml") is None:
        return (), None
    try:
        nvml = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception as exc:
        log.debug("NVML unavailable: %s", exc)
        return (), None

    def _text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    gpus = []
    driver = None
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        for index in range(int(nvml.nvmlDeviceGetCount())):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            pci = nvml.nvmlDeviceGetPciInfo(handle)
            gpus.append(
                GpuFacts(
                    index=index,
                    name=_text(nvml.nvmlDeviceGetName(handle)),
                    driver=driver,
                    memory_bytes=int(memory.total),
                    pci_bus_id=_text(getattr(pci, "busId", "")) or None,
                )
            )
    except Exception as exc:
        log.debug("NVML query failed: %s", exc)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass
    return tuple(gpus), driver


def read_versions(
    root: Path, import_torch: bool = False
) -> tuple[VersionFacts, tuple[GpuFacts, ...], list[str]]:
    """Versions and GPUs. By default from package metadata (fast, torch is not imported);
    ``import_torch=True`` imports torch to ask it for its NCCL version and backends (seconds)."""
    unreadable: list[str] = []
    torch_info = _metadata_versions()
    if import_torch:
        torch_info.update({k: v for k, v in _torch_versions(unreadable).items() if v is not None})
    gpus, nvml_driver = read_gpus()
    driver = parse_driver_version(read_text(root / "proc" / "driver" / "nvidia" / "version")) or nvml_driver
    facts = VersionFacts(
        python=platform.python_version(),
        torch=torch_info.get("torch"),
        torch_cuda=torch_info.get("torch_cuda"),
        nccl=torch_info.get("nccl"),
        gloo_available=torch_info.get("gloo_available"),
        nccl_available=torch_info.get("nccl_available"),
        driver=driver,
    )
    return facts, gpus, unreadable
