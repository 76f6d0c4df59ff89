"""Judge the ranks' facts together: settings that must agree, interface selections set on some hosts
only, versions, timeouts, each rank's validation findings, ranks that never arrived. Pure: no I/O.

Every rank runs :func:`evaluate` over the same records, so every rank reaches the same verdict and the
same message. The "odd" side of a disagreement is the minority of ranks; with no majority, the side
without rank 0 (the launcher's reference host) is named.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from syncdoctor.guard.facts import RankFacts
from syncdoctor.kb import Finding, Severity, sort_findings
from syncdoctor.kb.pages import guard as pages

__all__ = ["HARMLESS", "INTERFACE_SETTINGS", "MUST_AGREE", "evaluate", "hosts_text"]

# Variables that change protocols, algorithms, transports or PyTorch's behaviour: must be identical.
MUST_AGREE = (
    "NCCL_PROTO", "NCCL_ALGO", "NCCL_IB_DISABLE", "NCCL_NET", "NCCL_NET_PLUGIN", "NCCL_BUFFSIZE",
    "NCCL_P2P_DISABLE", "NCCL_CROSS_NIC", "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_IB_GID_INDEX",
    "NCCL_IB_TC", "NCCL_IB_SL", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_SOCKET_FAMILY",
    "NCCL_NSOCKS_PERTHREAD", "NCCL_SOCKET_NTHREADS", "GLOO_DEVICE_TRANSPORT", "TORCH_DISTRIBUTED_DEBUG",
    "TORCH_NCCL_BLOCKING_WAIT", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_USE_COMM_NONBLOCKING",
)
# Their values may differ between hosts (interface names do); set on some hosts only is the problem.
INTERFACE_SETTINGS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA")
# Per-process paths and debugging output: differences mean nothing.
HARMLESS = (
    "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE",
    "TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE",
    "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE",
)
_VERSION_SEVERITY = {"torch": Severity.ERROR, "nccl": Severity.ERROR, "cuda": Severity.WARNING,
                     "python": Severity.WARNING}


def _ranks_text(ranks: Sequence[int]) -> str:
    ranks = sorted(ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(str(r) for r in ranks)


def hosts_text(facts: Mapping[int, RankFacts], ranks: Iterable[int]) -> str:
    """``host1 (ranks 2, 3)`` or ``host0 (rank 0), host1 (rank 2)``."""
    by_host: dict[str, list[int]] = {}
    for rank in sorted(ranks):
        record = facts.get(rank)
        by_host.setdefault(record.where if record else "?", []).append(rank)
    return ", ".join(f"{host} ({_ranks_text(rs)})" for host, rs in by_host.items())


def _hosts_of(facts: Mapping[int, RankFacts], ranks: Iterable[int]) -> list[str]:
    out: list[str] = []
    for rank in sorted(ranks):
        record = facts.get(rank)
        if record is not None and record.where not in out:
            out.append(record.where)
    return out


def _split(values: Mapping[int, Any]) -> tuple[Any, list[int], dict[Any, list[int]]]:
    """(reference value, its ranks, the other values with their ranks)."""
    groups: dict[Any, list[int]] = {}
    for rank in sorted(values):
        groups.setdefault(values[rank], []).append(rank)
    lowest = min(values)
    reference = max(groups, key=lambda v: (len(groups[v]), lowest in groups[v]))
    return reference, groups[reference], {v: rs for v, rs in groups.items() if v != reference}


def _shown(name: str, value: str | None) -> str:
    return f"{name}={value}" if value is not None else f"{name} unset"


def _env_value(name: str, record: RankFacts) -> str | None:
    return record.env.get(name)


def _env_is_set(name: str, record: RankFacts) -> bool:
    return name in record.env


def _disagreements(
    facts: Mapping[int, RankFacts], get: Callable[[RankFacts], Any]
) -> tuple[Any, list[int], dict[Any, list[int]]] | None:
    values = {rank: get(record) for rank, record in facts.items()}
    if len(set(values.values())) <= 1:
        return None
    return _split(values)


def _setting_findings(facts: Mapping[int, RankFacts]) -> list[Finding]:
    findings: list[Finding] = []
    names = sorted({name for record in facts.values() for name in record.env})
    for name in sorted(set(names) | set(MUST_AGREE)):
        if name in HARMLESS or name in INTERFACE_SETTINGS:
            continue
        split = _disagreements(facts, functools.partial(_env_value, name))
        if split is None:
            continue
        reference, reference_ranks, others = split
        odd_ranks = sorted(r for rs in others.values() for r in rs)
        parts = [f"{hosts_text(facts, rs)} {'has ' + _shown(name, v) if v is not None else 'leaves it unset'}"
                 for v, rs in others.items()]
        ref_text = "has " + _shown(name, reference) if reference is not None else "leaves it unset"
        title = (f"{name} differs between ranks: {'; '.join(parts)}, while {hosts_text(facts, reference_ranks)} "
                 f"{ref_text}")
        severity = Severity.ERROR if name in MUST_AGREE else Severity.WARNING
        fix = (f"export {name}={reference} on every host" if reference is not None
               else f"unset {name} on {', '.join(_hosts_of(facts, odd_ranks))}")
        findings.append(pages.SETTING_DIFFERS.finding(
            title, severity=severity, fix=fix, key=name,
            evidence={"variable": name, "odd_ranks": odd_ranks, "odd_hosts": _hosts_of(facts, odd_ranks),
                      "values": {str(r): facts[r].env.get(name) for r in sorted(facts)}},
        ))
    return findings


def _interface_findings(facts: Mapping[int, RankFacts], backend: str) -> list[Finding]:
    findings: list[Finding] = []
    for name in INTERFACE_SETTINGS:
        split = _disagreements(facts, functools.partial(_env_is_set, name))
        if split is None:
            continue
        reference, reference_ranks, others = split
        odd_ranks = sorted(r for rs in others.values() for r in rs)
        with_it = reference_ranks if reference else odd_ranks
        without = odd_ranks if reference else reference_ranks
        values = sorted({facts[r].env[name] for r in with_it})
        title = (f"{name} is set on {hosts_text(facts, with_it)} ({', '.join(values)}) but not on "
                 f"{hosts_text(facts, without)}")
        used_by_backend = ("nccl" in backend and name.startswith("NCCL_")) or ("gloo" in backend and name.startswith("GLOO_"))
        findings.append(pages.INTERFACE_SETTING_ON_SOME_HOSTS.finding(
            title, severity=Severity.ERROR if used_by_backend and name.startswith("NCCL_") else Severity.WARNING,
            fix=f"set {name} on {', '.join(_hosts_of(facts, without))} too (or on none)", key=name,
            evidence={"variable": name, "odd_ranks": odd_ranks, "odd_hosts": _hosts_of(facts, odd_ranks),
                      "set_on": _hosts_of(facts, with_it), "unset_on": _hosts_of(facts, without)},
        ))
    return findings


def _version_findings(facts: Mapping[int, RankFacts]) -> list[Finding]:
    findings: list[Finding] = []
    for name, severity in _VERSION_SEVERITY.items():
        known = {rank: record.versions.get(name) for rank, record in facts.items() if record.versions.get(name)}
        if len(set(known.values())) <= 1:
            continue
        reference, reference_ranks, others = _split(known)
        odd_ranks = sorted(r for rs in others.values() for r in rs)
        parts = "; ".join(f"{hosts_text(facts, rs)} runs {name} {v}" for v, rs in others.items())
        findings.append(pages.VERSIONS_DIFFER.finding(
            f"{name} versions differ: {parts}, while {hosts_text(facts, reference_ranks)} runs {reference}",
            severity=severity, key=name,
            evidence={"component": name, "odd_ranks": odd_ranks, "odd_hosts": _hosts_of(facts, odd_ranks),
                      "versions": {str(r): v for r, v in sorted(known.items())}},
        ))
    return findings


def _timeout_findings(facts: Mapping[int, RankFacts]) -> list[Finding]:
    known = {rank: record.timeout_s for rank, record in facts.items() if record.timeout_s is not None}
    if len(set(known.values())) <= 1:
        return []
    reference, reference_ranks, others = _split(known)
    odd_ranks = sorted(r for rs in others.values() for r in rs)
    parts = "; ".join(f"{hosts_text(facts, rs)} uses {v:g} s" for v, rs in others.items())
    return [pages.TIMEOUT_DIFFERS.finding(
        f"the collective timeout differs: {parts}, while {hosts_text(facts, reference_ranks)} uses {reference:g} s",
        key="timeout", evidence={"odd_ranks": odd_ranks, "odd_hosts": _hosts_of(facts, odd_ranks),
                                 "timeouts_s": {str(r): v for r, v in sorted(known.items())}},
    )]


def _validation_findings(facts: Mapping[int, RankFacts]) -> list[Finding]:
    seen: dict[tuple[str, str], tuple[str, list[int]]] = {}
    for rank, record in sorted(facts.items()):
        for code, severity, title in record.validation:
            seen.setdefault((code, title), (severity, []))[1].append(rank)
    findings: list[Finding] = []
    for (code, title), (severity_label, ranks) in sorted(seen.items()):
        parsed = Severity.parse(severity_label)
        if parsed < Severity.WARNING:
            continue
        where = "every rank" if len(ranks) == len(facts) and len(facts) > 1 else hosts_text(facts, ranks)
        findings.append(pages.INVALID_SETTING_ON_RANK.finding(
            f"{code} on {where}: {title}", severity=parsed, key=f"{code}:{title}",
            fix=f"see `syncdoctor explain {code}`; fix it on {', '.join(_hosts_of(facts, ranks))}",
            evidence={"code": code, "odd_ranks": ranks, "odd_hosts": _hosts_of(facts, ranks)},
        ))
    return findings


def evaluate(facts: Mapping[int, RankFacts], expected: Sequence[int], backend: str = "") -> list[Finding]:
    """Every G finding about the ranks' facts (worst first). ``expected``: the group's ranks."""
    findings: list[Finding] = []
    missing = sorted(set(expected) - set(facts))
    if missing:
        findings.append(pages.RANK_MISSING.finding(
            f"{_ranks_text(missing)} did not reach the guard: their facts never arrived in the store",
            key="missing", evidence={"odd_ranks": missing, "arrived": sorted(facts)},
        ))
    if facts:
        findings += _setting_findings(facts)
        findings += _interface_findings(facts, backend)
        findings += _version_findings(facts)
        findings += _timeout_findings(facts)
        findings += _validation_findings(facts)
    return sort_findings(findings)
