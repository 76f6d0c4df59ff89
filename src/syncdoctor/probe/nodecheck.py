"""Run ``check``'s rules on every node's gathered facts and variables, for the probe to collapse. Pure.

The env rules (``syncdoctor.checks.env_rules.validate_env``) and the host rules
(``syncdoctor.checks.host_rules.evaluate``, with NCCL's and Gloo's interface predictions) see exactly what
``syncdoctor check`` would see on that node, except reachability, which the probe measures itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from syncdoctor.kb import Finding
from syncdoctor.probe.analysis import NodeFacts

__all__ = ["node_checker"]

log = logging.getLogger(__name__)


def node_checker(
    master_addr: str, master_port: int | None, launch_env: Mapping[str, str] | None = None
) -> Callable[[NodeFacts], list[Finding]] | None:
    """A function giving one node's check findings; None when the check rules are not installed.

    ``launch_env`` (WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_WORLD_SIZE) tells the host rules whether the job
    spans nodes; it is added to what the host rules see, not to what the env rules validate.
    """
    try:
        from syncdoctor.checks.env_rules import validate_env
        from syncdoctor.checks.host_rules import HostCheckInput, MasterTarget, evaluate
        from syncdoctor.host.predict import predict_gloo, predict_nccl
        from syncdoctor.host.types import RouteFacts
    except ImportError:
        return None

    def check(node: NodeFacts) -> list[Finding]:
        facts = node.facts
        env = dict(node.env)
        findings: list[Finding] = []
        try:
            findings += validate_env(
                env, interfaces=facts.interfaces if facts else None, ib_ports=facts.ib_ports if facts else None,
                nccl_version=node.versions.get("nccl"), torch_version=node.versions.get("torch"))
        except Exception:
            log.warning("env rules failed on %s", node.label, exc_info=True)
        if facts is None:
            return findings
        try:
            route = RouteFacts(target=master_addr, interface=node.interface)
            findings += evaluate(HostCheckInput(
                facts=facts, env={**env, **(launch_env or {})}, nccl=predict_nccl(facts.interfaces, env),
                gloo=predict_gloo(facts.interfaces, facts.names, env),
                master=MasterTarget(master_addr, master_port), route=route))
        except Exception:
            log.warning("host rules failed on %s", node.label, exc_info=True)
        return findings

    return check
