"""``syncdoctor probe``: a distributed preflight that compares the nodes of a job and measures every link and
collective, then names the slow or misconfigured node and derives settings.

Pure modules: config, launch, records, bandwidth, join (except its store loop), analysis (consistency),
verdict (link outliers), recommend, assemble, nodecheck. I/O: runner (the stage driver), store, watchdog,
links and collectives (torch.distributed), comm, facts, local, report (the JSON file). torch is imported
only inside the functions that need it.
"""

from __future__ import annotations

from syncdoctor.probe.config import ProbeConfig
from syncdoctor.probe.report import SCHEMA

__all__ = ["SCHEMA", "ProbeConfig"]
