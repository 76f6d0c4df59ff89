"""``syncdoctor check``'s pipeline as a library: an environment and a host's facts in, findings out.

Pure parts: :func:`env_findings` (the env rules, given what the host facts tell), :func:`host_findings` (the
host rules with NCCL's and Gloo's interface predictions), :func:`merge_findings` (both, without repeating what
the env rules already say about an interface variable), :func:`skipped` and the redaction helpers. I/O:
:func:`load_env` (the env file and NCCL's config files) and :func:`run_check` (the whole of ``check``: facts,
environment, preflight, findings). ``syncdoctor check``, the probe's node checks and the start-up guard all
use these, so they see the same thing. Nothing here prints.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from syncdoctor.checks.env_rules import skipped_checks, validate_env
from syncdoctor.checks.envfile import parse_env_file, read_nccl_conf
from syncdoctor.checks.host_rules import HostCheckInput, MasterTarget, evaluate
from syncdoctor.checks.predict import predict_gloo, predict_nccl
from syncdoctor.checks.preflight import Preflight, master_from, run_preflight
from syncdoctor.errors import UsageError
from syncdoctor.host.collect import collect_host_facts
from syncdoctor.host.types import HostFacts, ReachFacts, RouteFacts
from syncdoctor.kb import Finding, Severity, sort_findings
from syncdoctor.redact import REDACTED, is_secret_name, redact_env, redact_text

__all__ = [
    "CheckResult",
    "EnvInput",
    "env_findings",
    "host_findings",
    "ib_ports_unknown",
    "load_env",
    "merge_findings",
    "relevant_env",
    "run_check",
    "scrub",
    "scrub_finding",
    "secret_values",
    "skipped",
]

_RELEVANT_PREFIXES = (
    "NCCL_",
    "TORCH_",
    "GLOO_",
    "MASTER_",
    "TORCHELASTIC_",
    "PYTORCH_",
    "CUDA_",
    "UCX_",
    "FI_",
)
_RELEVANT_NAMES = (
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "OMP_NUM_THREADS",
)
_IFNAME_VARS = {"nccl": "NCCL_SOCKET_IFNAME", "gloo": "GLOO_SOCKET_IFNAME"}


# -- environment ---------------------------------------------------------------------------------------------


@dataclass
class EnvInput:
    """The environment to validate: the variables (after NCCL's config files), where each came from, the
    findings of reading the env file and config files, and the variables as given (before the files)."""

    env: dict[str, str]
    origin: str
    sources: dict[str, str] | None = None
    findings: list[Finding] = field(default_factory=list)
    given: dict[str, str] = field(default_factory=dict)


def _home(root: Path) -> Path | None:
    """The user's home as NCCL finds it (getpwuid, not $HOME), under ``root`` for fake trees."""
    try:
        home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return None
    return home if root.resolve() == Path("/") else root / str(home).lstrip("/")


def load_env(
    env_file: Path | None, root: Path, nccl_version: str | None, environ: Mapping[str, str] | None = None
) -> EnvInput:
    """Read ``env_file`` (or take ``environ``, default the current environment), then apply NCCL's config
    files found under ``root``. Raises :class:`UsageError` when the env file cannot be read."""
    findings: list[Finding] = []
    if env_file is not None:
        try:
            text = Path(env_file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"--env-file {env_file}: {exc.strerror or exc}") from None
        given, file_findings = parse_env_file(text)
        findings.extend(file_findings)
        origin = f"file {env_file}"
        given_source = f"env-file:{env_file}"
    else:
        given = dict(os.environ if environ is None else environ)
        origin, given_source = "the current environment", "environment"
    conf = read_nccl_conf(given, home=_home(root), etc=root / "etc", nccl_version=nccl_version)
    sources = {k: (given_source if v == "environment" else v) for k, v in conf.sources.items()}
    return EnvInput(dict(conf.env), origin, sources, [*findings, *conf.findings], dict(given))


def relevant_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables ``check`` shows (NCCL_*, TORCH_*, launcher variables...), secrets redacted, sorted."""
    picked = {k: v for k, v in env.items() if k.startswith(_RELEVANT_PREFIXES) or k in _RELEVANT_NAMES}
    return dict(sorted(redact_env(picked).items()))


# -- findings ------------------------------------------------------------------------------------------------


def ib_ports_unknown(facts: HostFacts) -> bool:
    """True when the IB/RoCE ports could not be read (their rules are then skipped, not passed)."""
    return any("IB/RoCE" in note or "infiniband" in note for note in facts.unreadable)


def env_findings(
    env: Mapping[str, str],
    facts: HostFacts | None,
    *,
    nccl_version: str | None,
    torch_version: str | None,
    sources: Mapping[str, str] | None = None,
) -> list[Finding]:
    """The env rules on ``env``, told the host's interfaces and IB/RoCE ports where ``facts`` knows them."""
    return list(
        validate_env(
            env,
            # empty means unreadable: every Linux host has lo
            interfaces=(facts.interfaces or None) if facts is not None else None,
            ib_ports=facts.ib_ports if facts is not None and not ib_ports_unknown(facts) else None,
            nccl_version=nccl_version,
            torch_version=torch_version,
            sources=sources,
        )
    )


def host_findings(
    facts: HostFacts,
    env: Mapping[str, str],
    *,
    master: MasterTarget | None,
    route: RouteFacts | None = None,
    reach: ReachFacts | None = None,
) -> list[Finding]:
    """The host rules, with the interfaces NCCL's bootstrap and Gloo will advertise under ``env``."""
    return evaluate(
        HostCheckInput(
            facts=facts,
            env=env,
            nccl=predict_nccl(facts.interfaces, env),
            gloo=predict_gloo(facts.interfaces, facts.names, env),
            master=master,
            route=route,
            reach=reach,
        )
    )


def skipped(pre: Preflight) -> list[str]:
    """What could not be checked: host steps skipped, and env rules that needed unknown host facts."""
    return [
        *pre.skipped,
        *skipped_checks(interfaces_known=bool(pre.facts.interfaces), ib_ports_known=not ib_ports_unknown(pre.facts)),
    ]


def _mentions(finding: Finding, variable: str) -> bool:
    evidence = finding.evidence or {}
    return (
        variable in evidence
        or variable in (evidence.get("variable"), evidence.get("name"))
        or finding.title.startswith(variable)
    )


def merge_findings(
    env: Mapping[str, str], env_found: list[Finding], host_found: list[Finding]
) -> list[Finding]:
    """Env findings and host findings, sorted, without the host's N001/N004 about an interface variable that
    is set when the env rules already warn about it (a list matching nothing usable, or only lo)."""
    kept = []
    for finding in host_found:
        backend = finding.evidence.get("backend") if finding.code in ("N001", "N004") else None
        variable = _IFNAME_VARS.get(str(backend)) if backend else None
        if (
            variable
            and variable in env
            and any(_mentions(f, variable) and f.severity >= Severity.WARNING for f in env_found)
        ):
            continue
        kept.append(finding)
    return sort_findings([*env_found, *kept])


# -- redaction -----------------------------------------------------------------------------------------------


def secret_values(*envs: Mapping[str, str]) -> list[str]:
    """The values of secret-named variables (4 characters or more), longest first."""
    values = {v for env in envs for k, v in env.items() if is_secret_name(k) and len(v.strip()) >= 4}
    return sorted(values, key=len, reverse=True)


def scrub(value: Any, secrets: list[str]) -> Any:
    """``value`` (strings, mappings, lists) with every secret value and secret-looking text redacted."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return redact_text(value)
    if isinstance(value, Mapping):
        return {str(scrub(k, secrets)): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, secrets) for v in value]
    return value


def scrub_finding(finding: Finding, secrets: list[str]) -> Finding:
    return replace(
        finding,
        title=scrub(finding.title, secrets),
        evidence=scrub(dict(finding.evidence), secrets),
        why=scrub(finding.why, secrets),
        fix=scrub(finding.fix, secrets),
    )


# -- the whole check -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """What ``check`` found: the environment read, the host preflight, and the findings (secrets redacted)."""

    given: EnvInput
    pre: Preflight
    findings: list[Finding]
    secrets: list[str]

    @property
    def env(self) -> dict[str, str]:
        return self.given.env


def run_check(
    *,
    root: Path = Path("/"),
    env_file: Path | None = None,
    master: str | None = None,
    network: bool = True,
    timeout: float = 2.0,
    import_torch: bool = False,
) -> CheckResult:
    """``syncdoctor check`` without the printing: read the host's facts under ``root`` and the environment
    (``env_file`` or the current one, then NCCL's config files), reach the master (``master`` as HOST:PORT,
    else MASTER_ADDR/MASTER_PORT), and evaluate every rule."""
    facts = collect_host_facts(root, import_torch=import_torch)
    given = load_env(env_file, root, facts.versions.nccl)
    env = given.env
    pre = run_preflight(
        env, root=root, master=master_from(env, master), network=network, timeout=timeout, facts=facts
    )
    found = env_findings(
        env, pre.facts, nccl_version=pre.facts.versions.nccl, torch_version=pre.facts.versions.torch,
        sources=given.sources,
    )
    secrets = secret_values(os.environ, given.given, env)
    merged = merge_findings(env, [*found, *given.findings], pre.findings)
    return CheckResult(given, pre, [scrub_finding(f, secrets) for f in merged], secrets)
