"""The findings knowledge base: finding types and the registry of every finding code. Pure: no I/O.

Every command (check, probe, watch, analyze, guard) reports :class:`Finding` objects. Each finding's
``code`` has a page in the registry (``syncdoctor explain CODE``) with the same sections for every code:
what it detects, why it breaks training, an example, the fix and references.

Codes are one capital letter for the area and three digits, never reused:

=====  ====================================================================
``E``  environment variables (NCCL_*, TORCH_NCCL_*, GLOO_*, launcher)
``H``  host facts (interfaces, IB/RoCE ports, /dev/shm, memlock, names)
``N``  network paths and reachability (interface prediction, master)
``P``  probe: cross-node comparison and measurements
``W``  watch: live events about ranks and collectives
``A``  analyze: post-mortem root causes found in logs and dumps
``G``  guard: start-up checks inside the training job
=====  ====================================================================
"""

from syncdoctor.kb.findings import Finding, Severity, findings_to_json, sort_findings
from syncdoctor.kb.registry import Rule, all_rules, get_rule, register

__all__ = [
    "Finding",
    "Rule",
    "Severity",
    "all_rules",
    "findings_to_json",
    "get_rule",
    "register",
    "sort_findings",
]
