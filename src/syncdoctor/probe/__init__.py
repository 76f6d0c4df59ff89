"""``syncdoctor probe``: a distributed preflight that compares the nodes of a job and measures every link and
collective, then names the slow or misconfigured node and derives settings.

Pure modules: config, launch, records, bandwidth, join (except its store loop), analysis (consistency),
verdict (link outliers), recommend (the one recommend engine, also behind ``syncdoctor recommend``),
assemble, nodecheck, and report's typed document (:class:`ProbeReport`, schema :data:`SCHEMA`). I/O: runner
(the stage driver), store, watchdog, links and collectives (torch.distributed), comm, facts, local, and
report's file writers. torch is imported only inside the functions that need it. Rendering lives in
:mod:`syncdoctor.report` (terminal_probe, html_probe), which depends on this package, never the reverse.
"""

from __future__ import annotations

from syncdoctor.probe.config import ProbeConfig
from syncdoctor.probe.report import SCHEMA, ProbeReport

__all__ = ["SCHEMA", "ProbeConfig", "ProbeReport"]
