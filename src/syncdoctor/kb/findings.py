"""Finding and severity types. Pure: no I/O."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Finding", "Severity", "findings_to_json", "sort_findings"]


class Severity(enum.IntEnum):
    """How bad a finding is; ordered so that ``max()`` gives the worst.

    - ``INFO``: a fact worth knowing (what NCCL will pick, a version); nothing to fix.
    - ``WARNING``: works, but is slow, fragile or misleading; fix when you can.
    - ``ERROR``: will hang, fail or corrupt a multi-node job; fix before you launch.
    """

    INFO = 10
    WARNING = 20
    ERROR = 30

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}: use error, warning or info") from None


@dataclass(frozen=True)
class Finding:
    """One observation with its evidence and the exact fix.

    Attributes:
        code: stable code with a page in the registry, e.g. ``E101``.
        severity: how bad it is here (a rule's default can be raised or lowered by context).
        title: one line saying what is wrong, with the concrete values.
        evidence: what was observed: values, files, interfaces, ranks (JSON-serialisable).
        why: why it matters for a multi-node job.
        fix: the exact change: an ``export`` line, a config change or a command.
        key: deduplication key; two findings with the same code and key are the same finding.
    """

    code: str
    severity: Severity
    title: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    why: str = ""
    fix: str = ""
    key: str = ""

    @property
    def name(self) -> str:
        from syncdoctor.kb.registry import get_rule

        rule = get_rule(self.code)
        return rule.name if rule else ""

    def dedup_key(self) -> tuple[str, str]:
        return (self.code, self.key or self.title)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.label,
            "title": self.title,
            "evidence": dict(self.evidence),
            "why": self.why,
            "fix": self.fix,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        """Rebuild a finding from :meth:`to_json` output (used by probe, recommend and report)."""
        return cls(
            code=str(data.get("code", "")),
            severity=Severity.parse(str(data.get("severity", "info"))),
            title=str(data.get("title", "")),
            evidence=dict(data.get("evidence") or {}),
            why=str(data.get("why", "")),
            fix=str(data.get("fix", "")),
        )


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Deduplicate, then order worst first, then by code: the order every report uses."""
    seen: dict[tuple[str, str], Finding] = {}
    for finding in findings:
        seen.setdefault(finding.dedup_key(), finding)
    return sorted(seen.values(), key=lambda f: (-int(f.severity), f.code, f.title))


def findings_to_json(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    return [f.to_json() for f in sort_findings(findings)]
