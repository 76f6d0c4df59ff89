"""The analysis as one call: read the inputs, build the timeline, run the rules. Does I/O (reads inputs).

``analyze_paths(["logs/"])`` returns an :class:`Analysis` with the diagnosis (hypotheses best first), the
timeline and what was read; :func:`to_document` turns it into the ``syncdoctor.analyze/1`` JSON document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from syncdoctor.analyze.collect import Collected, collect
from syncdoctor.analyze.inputs import Source, expand
from syncdoctor.analyze.model import Diagnosis
from syncdoctor.analyze.rules import diagnose
from syncdoctor.analyze.scan import Scanner
from syncdoctor.analyze.timeline import Timeline, build_timeline

__all__ = ["SCHEMA", "Analysis", "analyze_paths", "analyze_sources", "to_document"]

SCHEMA = "syncdoctor.analyze/1"


@dataclass(frozen=True)
class Analysis:
    diagnosis: Diagnosis
    timeline: Timeline
    collected: Collected


def analyze_sources(sources: Sequence[Source], *, stdin: BinaryIO | None = None,
                    scanner: Scanner | None = None) -> Analysis:
    collected = collect(sources, stdin=stdin, scanner=scanner)
    timeline = build_timeline(collected.events, collected.dumps, collected.file_ranks)
    diagnosis = diagnose(timeline, notes=collected.notes, sources=collected.sources)
    return Analysis(diagnosis, timeline, collected)


def analyze_paths(paths: Sequence[str], *, stdin: BinaryIO | None = None) -> Analysis:
    """Expand ``paths`` (files, directories, globs, ``-``) and analyze them. Raises UsageError for bad paths."""
    return analyze_sources(expand(paths), stdin=stdin)


def to_document(analysis: Analysis, max_evidence: int | None = None, max_timeline: int = 2000) -> dict[str, Any]:
    """The JSON document (schema ``syncdoctor.analyze/1``); evidence lists cut to ``max_evidence`` each."""
    from syncdoctor.kb.pages.analyze import CATEGORY_RULES

    diagnosis, timeline, collected = analysis.diagnosis, analysis.timeline, analysis.collected
    root = diagnosis.root_cause
    hypotheses = []
    for hypothesis in diagnosis.hypotheses:
        item = hypothesis.to_json(max_evidence)
        item["hosts"] = item["culprit_hosts"]
        for evidence in item["evidence"]:
            source, _, line = evidence["ref"].rpartition(":")
            evidence["file"], evidence["line"] = (source, int(line)) if line.isdigit() else (evidence["ref"], None)
        hypotheses.append(item)
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
        entry = event.to_json()
        entry["time_text"] = entry.pop("time")
        entry["time"] = event.time
        entry["file"], entry["line"] = event.ref.source, event.ref.line or None
        rows.append(entry)
    ranks = []
    for rank, state in sorted(timeline.ranks.items()):
        last_seq = max(state.reached.values()) if state.reached else None
        first = state.first_failure
        ranks.append({
            "rank": rank, "host": state.host, "pids": list(state.pids), "state": state.outcome,
            "last_seq": last_seq, "last_completed": max(state.completed.values()) if state.completed else None,
            "exitcode": state.exitcode, "signal": state.exit_signal,
            "first_error": first.text if first is not None else None,
            "first_error_ref": str(first.ref) if first is not None else None,
        })
    return {
        "schema": SCHEMA,
        "root_cause_found": root is not None,
        "root_cause": root.to_json(max_evidence) if root is not None else None,
        "hypotheses": hypotheses,
        "findings": findings,
        "ranks": ranks,
        "hosts": {host: list(members) for host, members in timeline.hosts.items()},
        "world_size": timeline.world_size,
        "timeline": rows,
        "inputs": list(collected.sources),
        "notes": list(diagnosis.notes),  # the reader's notes, then the rules'
        "unexplained": [e.to_json() for e in diagnosis.unexplained],
        "stats": {"bytes": collected.bytes_read, "lines": collected.lines_read, "events": len(collected.events),
                  "dumps": len(collected.dumps)},
    }
