"""Turn what the ranks sent to rank 0 into records, findings, the verdict and the recommendations. Pure.

Every stage's per-rank payload is plain JSON (see :mod:`syncdoctor.probe.runner`); this module is where it
becomes typed data, so the whole analysis can be unit-tested with plain dictionaries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.kb import Finding
from syncdoctor.kb.pages import probe as pages
from syncdoctor.probe import analysis, verdict
from syncdoctor.probe.analysis import NodeFacts
from syncdoctor.probe.bandwidth import OpShape, summarise
from syncdoctor.probe.facts import host_facts_from_json
from syncdoctor.probe.join import MissingNode
from syncdoctor.probe.recommend import DEFAULT_BUCKET_BYTES, Recommendations, recommend
from syncdoctor.probe.records import ClockOffset, CollectiveRow, LinkMeasure, NodeInfo, NodeSkew
from syncdoctor.probe.verdict import Verdict

__all__ = [
    "Assessment",
    "assess",
    "collective_rows",
    "missing_findings",
    "node_facts",
    "stage_failure",
]

EnvValidator = Callable[[NodeFacts], Sequence[Finding]]


def node_facts(payloads: Sequence[Mapping[str, Any] | None], nodes: Sequence[NodeInfo]) -> list[NodeFacts]:
    """One :class:`NodeFacts` per node from the facts stage's per-rank payloads (indexed by rank)."""
    out = []
    for node in nodes:
        mine = [p for p in (payloads[r] for r in node.ranks if r < len(payloads)) if p]
        if not mine:
            out.append(NodeFacts(node.node, node.label))
            continue
        first = next((p for p in mine if p.get("facts")), mine[0])
        facts = host_facts_from_json(first["facts"]) if first.get("facts") else None
        gpus = tuple(sorted({str(p["gpu"]) for p in mine if p.get("gpu")}))
        out.append(NodeFacts(
            node=node.node,
            label=node.label,
            facts=facts,
            env=dict(first.get("env") or {}),
            interface=first.get("interface"),
            gpu_names=gpus,
            versions=dict(first.get("versions") or {}),
        ))
    return out


def collective_rows(
    payloads: Sequence[Sequence[Mapping[str, Any]] | None],
) -> tuple[list[CollectiveRow], dict[str, list[int]]]:
    """Rows across ranks from every rank's list of measurements, and "op/size" -> ranks with wrong elements."""
    per_key: dict[tuple[str, int], dict[int, Mapping[str, Any]]] = {}
    order: list[tuple[str, int]] = []
    for rank, items in enumerate(payloads):
        for item in items or ():
            key = (str(item["op"]), int(item["size"]))
            if key not in per_key:
                per_key[key] = {}
                order.append(key)
            per_key[key][rank] = item
    rows, wrong_ranks = [], {}
    nranks = len(payloads)
    for key in order:
        found = per_key[key]
        if len(found) < nranks:
            continue  # some rank did not finish this size: the stage failure says so
        sample = next(iter(found.values()))
        shape = OpShape(key[0], key[1], int(sample["count"]), int(sample["in_numel"]), int(sample["out_numel"]))
        rows.append(summarise(
            key[0], shape, {r: (float(i["time_s"]), i.get("wrong")) for r, i in found.items()},
            int(sample["iters"]),
        ))
        bad = sorted(r for r, i in found.items() if i.get("wrong"))
        if bad:
            wrong_ranks[f"{key[0]}/{key[1]}"] = bad
    return rows, wrong_ranks


def stage_failure(name: str, statuses: Sequence[Mapping[str, Any]]) -> Finding | None:
    """P031 when any rank reported the stage as failed (``statuses`` indexed by rank)."""
    failed = {rank: s.get("error") or "failed" for rank, s in enumerate(statuses) if s.get("status") != "ok"}
    if not failed:
        return None
    first = next(iter(failed.values()))
    ranks = ", ".join(str(r) for r in failed)
    return pages.STAGE_FAILED.finding(
        f"stage {name} failed on rank(s) {ranks}: {first}",
        evidence={"stage": name, "errors": {str(r): e for r, e in failed.items()}},
        key=name,
    )


def missing_findings(missing: Sequence[MissingNode], joined: int, world: int, timeout_s: float) -> list[Finding]:
    """P001 for every node (or group of ranks) that never joined.

    ``joined``/``world`` count ranks; for nodes the launcher formed the job without (``node`` None), the
    title says so instead of naming a timeout.
    """
    findings = []
    for m in missing:
        context = (f"{joined} of {world} ranks registered within {timeout_s:g} s" if m.node is not None
                   else f"the launcher formed the job with {joined} of the {world} ranks expected")
        findings.append(pages.NODE_NEVER_JOINED.finding(
            f"{m.describe()} ({context})",
            evidence=m.to_json() | {"registered": joined, "world_size": world},
            key=f"{m.node}/{m.name}/{m.ranks}",
        ))
    return findings


@dataclass(frozen=True)
class Assessment:
    """Everything rank 0 concludes: findings (sorted by the report), verdict and recommendations."""

    findings: tuple[Finding, ...]
    verdict: Verdict
    recommendations: Recommendations
    achieved: tuple[dict[str, Any], ...] = field(default_factory=tuple)


def assess(
    nodes: Sequence[NodeInfo],
    facts: Sequence[NodeFacts],
    *,
    skews: Sequence[NodeSkew] = (),
    offsets: Sequence[ClockOffset] = (),
    links: Sequence[LinkMeasure] = (),
    rows: Sequence[CollectiveRow] = (),
    wrong_ranks: Mapping[str, Sequence[int]] | None = None,
    extra: Sequence[Finding] = (),
    slow_ratio: float = 0.5,
    skew_warn_s: float = 10.0,
    backend: str = "gloo",
    bucket_bytes: int = DEFAULT_BUCKET_BYTES,
    validate: EnvValidator | None = None,
) -> Assessment:
    """The analysis of one probe run."""
    labels = {n.node: n.label for n in nodes}
    findings: list[Finding] = list(extra)
    findings += analysis.consistency_findings(facts)
    if validate is not None:
        findings += analysis.collapse_node_findings({f.label: validate(f) for f in facts})
    findings += analysis.skew_findings(skews, offsets, skew_warn_s)
    link_view = verdict.analyse_links(links, slow_ratio)
    findings += verdict.link_findings(link_view, labels, slow_ratio)
    rate, achieved = verdict.rate_findings(links, {f.node: f for f in facts})
    findings += rate
    findings += analysis.collective_findings(rows, wrong_ranks or {})
    result = verdict.verdict(link_view, labels, rows, achieved)
    advice = recommend(facts, skews, rows, links, backend=backend, bucket_bytes=bucket_bytes,
                       ranks=sum(len(n.ranks) for n in nodes) or None)
    return Assessment(tuple(findings), result, advice, tuple(achieved))
