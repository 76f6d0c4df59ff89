"""syncdoctor: which rank, on which host, stuck where, and what to change.

A toolkit for multi-node PyTorch training (DDP/FSDP under torchrun, Slurm or Kubernetes):

- ``syncdoctor check``: preflight of one host (environment variables, NICs, IB ports, name resolution,
  reachability of the master).
- ``syncdoctor probe``: a distributed preflight that compares the nodes and measures links and collectives.
- ``syncdoctor.watch``: live detection of late, missing, desynchronised or dead ranks.
- ``syncdoctor analyze``: post-mortem diagnosis from every rank's logs and Flight Recorder dumps.

The package imports without torch; only the parts that run collectives import it, lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from syncdoctor._version import __version__
from syncdoctor.errors import SyncdoctorError, UsageError

if TYPE_CHECKING:
    from syncdoctor.kb import Finding, Severity

__all__ = ["Finding", "Severity", "SyncdoctorError", "UsageError", "__version__"]


def __getattr__(name: str) -> Any:
    # Finding and Severity load with the knowledge base on first use: `import syncdoctor` stays cheap for the
    # start-up hook (syncdoctor.autowatch), which every process of a watched job imports.
    if name in ("Finding", "Severity"):
        import syncdoctor.kb as kb

        return getattr(kb, name)
    raise AttributeError(f"module 'syncdoctor' has no attribute {name!r}")
