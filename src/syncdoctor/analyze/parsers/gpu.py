"""A GPU that failed: CUDA errors, ECC errors and the kernel's Xid lines. Pure: no I/O.

* ``RuntimeError: CUDA error: an illegal memory access was encountered`` (and ``what():  CUDA error: …`` of a
  C++ exception, ``Process group watchdog thread terminated with exception: CUDA error: …``), ``CUDA error:
  uncorrectable ECC error encountered``, ``unspecified launch failure``, ``misaligned address``;
* the driver API's names: ``CUDA_ERROR_ECC_UNCORRECTABLE``, ``CUDA_ERROR_ILLEGAL_ADDRESS``, ``returned error 214``;
* the kernel log: ``NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus.``

A ``device-side assert triggered`` is the program's (an index out of range), not the GPU's: it is left to the
exception the traceback parser reads. NCCL's ``Cuda failure 700 '…'`` is read by :mod:`.nccl_warn`.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "parse"]

KEYWORDS = ("CUDA error", "CUDA_ERROR_", "Xid", "ECC error", "fallen off the bus", "Triton Error [CUDA]")

_CUDA = re.compile(r"(?:CUDA error|Triton Error \[CUDA\]):? (?P<msg>[^\n.]{3,160})")
_DRIVER = re.compile(r"\b(?P<name>CUDA_ERROR_[A-Z_]+)\b")
_XID = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<xid>\d+)")
_HARDWARE = ("ECC", "fallen off the bus", "Xid", "uncorrectable", "ECC_UNCORRECTABLE", "HARDWARE")
_PROGRAM = ("device-side assert", "out of memory", "invalid device ordinal", "no kernel image", "busy or unavailable")


def parse(line: Line) -> list[Event]:
    body = line.body
    match = _XID.search(body)
    if match:
        return [make_event(Kind.GPU_ERROR, line, data={
            "xid": int(match["xid"]), "pci": match["pci"], "message": body[match.end():].strip(" ,")[:160],
            "hardware": True, "source": "xid"})]
    match = _CUDA.search(body) or _DRIVER.search(body)
    if not match:
        return []
    message = match["msg"].strip() if "msg" in match.groupdict() else match["name"]
    if any(word in message for word in _PROGRAM):
        return []
    if "ECC error" in body and "ECC" not in message:
        message = body[body.find("ECC"):][:160]
    return [make_event(Kind.GPU_ERROR, line, data={
        "message": message[:160], "hardware": any(word in body for word in _HARDWARE), "source": "cuda"})]
