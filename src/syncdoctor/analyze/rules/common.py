"""Helpers shared by the rules: building hypotheses and evidence. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from syncdoctor.analyze.model import Category, Event, Evidence, Hypothesis
from syncdoctor.analyze.timeline import Timeline
from syncdoctor.kb.pages.analyze import CATEGORY_RULES

__all__ = ["MAX_CASCADE", "evidence_of", "fmt_ranks", "hypothesis"]

MAX_CASCADE = 16  # evidence lines kept from the ranks that merely suffered


def fmt_ranks(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``."""
    values = sorted(set(ranks))
    if not values:
        return "none"
    parts = []
    start = prev = values[0]
    for value in [*values[1:], None]:  # type: ignore[list-item]
        if value is not None and value == prev + 1:
            prev = value
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if value is not None:
            start = prev = value
    return ", ".join(parts)


def evidence_of(events: Iterable[Event], note: str = "", limit: int | None = None) -> list[Evidence]:
    out = []
    for event in events:
        out.append(Evidence(event.ref, event.text, note, event.origin.rank, event.origin.host))
        if limit is not None and len(out) >= limit:
            break
    return out


def hypothesis(
    tl: Timeline,
    category: Category,
    confidence: float,
    title: str,
    *,
    culprits: Sequence[int] = (),
    hosts: Sequence[str] | None = None,
    affected: Sequence[int] = (),
    what: str = "",
    fix: str | None = None,
    evidence: Sequence[Evidence] = (),
    root_cause: bool = True,
) -> Hypothesis:
    rule = CATEGORY_RULES[category.value]
    culprit_hosts = tuple(hosts) if hosts is not None else tl.hosts_of(culprits)
    affected_ranks = tuple(sorted(set(affected) - set(culprits)))
    seen: set[tuple[str, int, str]] = set()
    unique = []
    for item in evidence:
        key = (item.ref.source, item.ref.line, item.text)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return Hypothesis(
        category=category,
        code=rule.code,
        confidence=max(0.0, min(1.0, confidence)),
        title=title,
        culprit_ranks=tuple(sorted(set(culprits))),
        culprit_hosts=culprit_hosts,
        affected_ranks=affected_ranks,
        affected_hosts=tl.hosts_of(affected_ranks),
        what=what or rule.summary,
        fix=fix or rule.fix,
        evidence=tuple(unique),
        root_cause=root_cause,
    )
