"""Validate an environment against the variable table and the host: the entry point. Pure: no I/O.

:func:`validate_env` builds an :class:`~syncdoctor.checks.env_context.EnvContext` and runs every rule
of the E area over it. Each rule is a function ``(context) -> findings``; the registry below names them
all and says which inputs each needs, so a caller can tell which checks were skipped for lack of host
facts (interfaces or IB ports unknown) instead of reading silence as health.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from syncdoctor.checks import env_generic, env_launch, env_net, env_torch, env_tuning
from syncdoctor.checks.env_context import EnvContext
from syncdoctor.host.types import IbPortFacts, InterfaceFacts
from syncdoctor.kb import Finding, Severity, sort_findings
from syncdoctor.kb.pages import env as pages

__all__ = ["HOST_DEPENDENT", "RULES", "EnvRule", "skipped_checks", "validate_env"]

log = logging.getLogger(__name__)

EnvRule = Callable[[EnvContext], Iterable[Finding]]

RULES: tuple[EnvRule, ...] = (
    *env_generic.RULES,
    *env_net.RULES,
    *env_tuning.RULES,
    *env_torch.RULES,
    *env_launch.RULES,
)

# Checks that need host facts, by the input they need (reported by skipped_checks when it is unknown).
HOST_DEPENDENT: Mapping[str, tuple[str, ...]] = {
    "interfaces": (
        "NCCL_SOCKET_IFNAME matches nothing / only unusable interfaces (E101, E102)",
        "interface prefixes that match several names (E103)",
        "GLOO_SOCKET_IFNAME interfaces exist and are usable (E602, E603)",
    ),
    "ib_ports": (
        "NCCL_IB_HCA devices, ports and port states (E105-E107)",
        "NCCL_IB_GID_INDEX present in the RoCE GID tables (E206)",
    ),
}


def validate_env(
    env: Mapping[str, str],
    *,
    interfaces: Sequence[InterfaceFacts] | None = None,
    ib_ports: Sequence[IbPortFacts] | None = None,
    nccl_version: str | None = None,
    torch_version: str | None = None,
    sources: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Every E finding for ``env``, worst first.

    Args:
        env: variable name -> value (the process environment, an env file, a merged NCCL config).
        interfaces / ib_ports: this host's facts; None means unknown and skips the rules that need them.
        nccl_version / torch_version: e.g. "2.21.5", "2.13.0+cpu"; None when unknown (rules then say so).
        sources: variable name -> where it came from ("environment", "/etc/nccl.conf", "env-file:job.sh"),
            shown in the evidence and used to word the fix.

    Never raises on malformed values: they become findings.
    """
    ctx = EnvContext.build(env, interfaces=interfaces, ib_ports=ib_ports, nccl_version=nccl_version,
                           torch_version=torch_version, sources=sources)
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule(ctx))
    findings = _drop_redundant(findings)
    log.debug("validated %d variables: %d findings", len(ctx.env), len(findings))
    return sort_findings(findings)


def _drop_redundant(findings: list[Finding]) -> list[Finding]:
    """A debugging-only warning adds nothing to an error about the same variable: keep the error."""
    with_errors = {name for f in findings if f.severity is Severity.ERROR for name in f.evidence}
    return [f for f in findings if not (f.code == pages.DEBUGGING_ONLY.code and f.key in with_errors)]


def skipped_checks(*, interfaces_known: bool, ib_ports_known: bool) -> list[str]:
    """The host-dependent checks that did not run because their input was unknown."""
    skipped: list[str] = []
    if not interfaces_known:
        skipped.extend(HOST_DEPENDENT["interfaces"])
    if not ib_ports_known:
        skipped.extend(HOST_DEPENDENT["ib_ports"])
    return skipped
