"""The analysis as one call: read the inputs, build the timeline, run the rules. Does I/O (reads inputs).

``analyze_paths(["logs/"])`` returns an :class:`Analysis` with the diagnosis (hypotheses best first), the
timeline and what was read; :func:`to_verdict` turns it into the typed verdict
(:class:`~syncdoctor.analyze.verdict.Verdict`), :func:`to_document` into its ``syncdoctor.analyze/1`` JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from syncdoctor.analyze.collect import Collected, collect
from syncdoctor.analyze.inputs import Source, expand
from syncdoctor.analyze.lastlook import known_causes, placed_by_launch, processes
from syncdoctor.analyze.model import Diagnosis, Evidence, Hypothesis
from syncdoctor.analyze.rules import diagnose
from syncdoctor.analyze.scan import Scanner
from syncdoctor.analyze.timeline import Timeline, build_timeline
from syncdoctor.analyze.verdict import (
    SCHEMA,
    RankRow,
    TimelineRow,
    Verdict,
    VerdictEvidence,
    VerdictHypothesis,
)

__all__ = ["SCHEMA", "Analysis", "Verdict", "analyze_paths", "analyze_sources", "to_document", "to_verdict"]


@dataclass(frozen=True)
class Analysis:
    diagnosis: Diagnosis
    timeline: Timeline
    collected: Collected


def analyze_sources(sources: Sequence[Source], *, stdin: BinaryIO | None = None,
                    scanner: Scanner | None = None) -> Analysis:
    collected = collect(sources, stdin=stdin, scanner=scanner)
    # a paste's text, read again by analyze.lastlook: its NCCL chatter for where its processes run, then (when nothing
    # was found) every line for words that name a cause
    pastes = [(name, origin, raw.decode("utf-8", "replace")) for name, origin, raw in collected.small_texts]
    if pastes:
        known = {(e.origin.host, e.origin.pid) for e in collected.events
                 if e.origin.host is not None and e.origin.pid is not None}
        collected.events.extend(event for name, origin, text in pastes
                                for event in processes(text, name, origin, known))
        collected.events = placed_by_launch(collected.events, pastes)
    timeline = build_timeline(collected.events, collected.dumps, collected.file_ranks)
    diagnosis = diagnose(timeline, notes=collected.notes, sources=collected.sources)
    if not diagnosis.hypotheses and pastes:
        found = [event for name, origin, text in pastes for event in known_causes(text, name, origin)]
        if found:
            collected.events.extend(found)
            timeline = build_timeline(collected.events, collected.dumps, collected.file_ranks)
            diagnosis = diagnose(timeline, notes=collected.notes, sources=collected.sources)
    return Analysis(diagnosis, timeline, collected)


def analyze_paths(paths: Sequence[str], *, stdin: BinaryIO | None = None) -> Analysis:
    """Expand ``paths`` (files, directories, globs, ``-``) and analyze them. Raises UsageError for bad paths."""
    return analyze_sources(expand(paths), stdin=stdin)


def to_verdict(analysis: Analysis, max_evidence: int | None = None, max_timeline: int = 2000) -> Verdict:
    """The typed verdict (schema ``syncdoctor.analyze/1``); evidence lists cut to ``max_evidence`` each."""
    from syncdoctor.kb.pages.analyze import CATEGORY_RULES

    diagnosis, timeline, collected = analysis.diagnosis, analysis.timeline, analysis.collected
    root = diagnosis.root_cause
    findings = []
    for hypothesis in diagnosis.hypotheses:
        rule = CATEGORY_RULES[hypothesis.category.value]
        findings.append(rule.finding(
            hypothesis.title, fix=hypothesis.fix, why=hypothesis.what, key=f"{hypothesis.code}:{hypothesis.title}",
            evidence={"culprit_ranks": list(hypothesis.culprit_ranks), "culprit_hosts": list(hypothesis.culprit_hosts),
                      "confidence": round(hypothesis.confidence, 3)},
        ).to_json())
    rows = []
    for event in timeline.events[:max_timeline]:
        if event.origin.rank is None:
            continue
        rows.append(TimelineRow(
            kind=event.kind.value, ref=str(event.ref), rank=event.origin.rank, text=event.text, host=event.origin.host,
            group=event.group, seq=event.seq, op=event.op, data=dict(event.data), time_text=event.time_text or None,
            time=event.time, file=event.ref.source, line=event.ref.line or None))
    ranks = []
    for rank, state in sorted(timeline.ranks.items()):
        first = state.first_failure
        ranks.append(RankRow(
            rank=rank, host=state.host, pids=tuple(state.pids), state=state.outcome,
            last_seq=max(state.reached.values()) if state.reached else None,
            last_completed=max(state.completed.values()) if state.completed else None,
            exitcode=state.exitcode, signal=state.exit_signal,
            first_error=first.text if first is not None else None,
            first_error_ref=str(first.ref) if first is not None else None,
        ))
    return Verdict(
        root_cause_found=root is not None,
        root_cause=_hypothesis(root, max_evidence) if root is not None else None,
        hypotheses=tuple(_hypothesis(h, max_evidence) for h in diagnosis.hypotheses),
        findings=tuple(findings),
        ranks=tuple(ranks),
        hosts={host: tuple(members) for host, members in timeline.hosts.items()},
        world_size=timeline.world_size,
        timeline=tuple(rows),
        inputs=tuple(collected.sources),
        notes=tuple(diagnosis.notes),  # the reader's notes, then the rules'
        unexplained=tuple(_evidence(e) for e in diagnosis.unexplained),
        stats={"bytes": collected.bytes_read, "lines": collected.lines_read, "events": len(collected.events),
               "dumps": len(collected.dumps)},
    )


def to_document(analysis: Analysis, max_evidence: int | None = None, max_timeline: int = 2000) -> dict[str, Any]:
    """The JSON document (schema ``syncdoctor.analyze/1``); evidence lists cut to ``max_evidence`` each."""
    return to_verdict(analysis, max_evidence, max_timeline).to_json()


def _evidence(evidence: Evidence) -> VerdictEvidence:
    return VerdictEvidence(str(evidence.ref), evidence.text, evidence.note, evidence.rank, evidence.host)


def _hypothesis(hypothesis: Hypothesis, max_evidence: int | None) -> VerdictHypothesis:
    evidence = hypothesis.evidence if max_evidence is None else hypothesis.evidence[:max_evidence]
    return VerdictHypothesis(
        category=hypothesis.category.value, code=hypothesis.code, confidence=round(hypothesis.confidence, 3),
        title=hypothesis.title, root_cause=hypothesis.root_cause, culprit_ranks=tuple(hypothesis.culprit_ranks),
        culprit_hosts=tuple(hypothesis.culprit_hosts), culprit_processes=tuple(hypothesis.culprit_processes),
        culprit_local_ranks=tuple(hypothesis.culprit_local_ranks), affected_ranks=tuple(hypothesis.affected_ranks),
        affected_hosts=tuple(hypothesis.affected_hosts), what=hypothesis.what, fix=hypothesis.fix,
        evidence=tuple(_evidence(e) for e in evidence), evidence_total=len(hypothesis.evidence),
    )
