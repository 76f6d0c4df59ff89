"""Run ``check``'s rules on every node's gathered facts and variables, for the probe to collapse. Pure.

The env rules and the host rules (with NCCL's and Gloo's interface predictions) come from ``check``'s pipeline
(:mod:`syncdoctor.checks.pipeline`), so they see exactly what ``syncdoctor check`` would see on that node,
except reachability, which the probe measures itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from syncdoctor.checks.host_rules import MasterTarget
from syncdoctor.checks.pipeline import env_findings, host_findings
from syncdoctor.host.types import RouteFacts
from syncdoctor.kb import Finding
from syncdoctor.probe.analysis import NodeFacts

__all__ = ["node_checker"]

log = logging.getLogger(__name__)


def node_checker(
    master_addr: str, master_port: int | None, launch_env: Mapping[str, str] | None = None
) -> Callable[[NodeFacts], list[Finding]]:
    """A function giving one node's check findings.

    ``launch_env`` (WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_WORLD_SIZE) tells the host rules whether the job
    spans nodes; it is added to what the host rules see, not to what the env rules validate.
    """

    def check(node: NodeFacts) -> list[Finding]:
        facts = node.facts
        env = dict(node.env)
        findings: list[Finding] = []
        try:
            findings += env_findings(
                env, facts, nccl_version=node.versions.get("nccl"), torch_version=node.versions.get("torch"))
        except Exception:
            log.warning("env rules failed on %s", node.label, exc_info=True)
        if facts is None:
            return findings
        try:
            findings += host_findings(
                facts, {**env, **(launch_env or {})}, master=MasterTarget(master_addr, master_port),
                route=RouteFacts(target=master_addr, interface=node.interface))
        except Exception:
            log.warning("host rules failed on %s", node.label, exc_info=True)
        return findings

    return check
