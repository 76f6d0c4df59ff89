"""syncdoctor: which rank, on which host, stuck where, and what to change.

A toolkit for multi-node PyTorch training (DDP/FSDP under torchrun, Slurm or Kubernetes):

- ``syncdoctor check``: preflight of one host (environment variables, NICs, IB ports, name resolution,
  reachability of the master).
- ``syncdoctor probe``: a distributed preflight that compares the nodes and measures links and collectives.
- ``syncdoctor.watch``: live detection of late, missing, desynchronised or dead ranks.
- ``syncdoctor analyze``: post-mortem diagnosis from every rank's logs and Flight Recorder dumps.

The package imports without torch; only the parts that run collectives import it, lazily.
"""

from syncdoctor._version import __version__
from syncdoctor.errors import SyncdoctorError, UsageError
from syncdoctor.kb import Finding, Severity

__all__ = ["Finding", "Severity", "SyncdoctorError", "UsageError", "__version__"]
