"""The registry of finding codes and their explanation pages. Pure: no I/O.

Each area keeps its pages in its own module under ``syncdoctor.kb.pages``; importing the registry
imports them all, so ``all_rules()`` is complete. A test checks that every code used anywhere has a page
with every section filled in.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.kb.findings import Finding, Severity

__all__ = ["AREAS", "Rule", "all_rules", "get_rule", "register"]

AREAS: Mapping[str, str] = {
    "E": "environment variables",
    "H": "host facts",
    "N": "network paths and reachability",
    "P": "probe (cross-node)",
    "W": "watch (live)",
    "A": "analyze (post-mortem)",
    "G": "guard (start-up)",
}

# Modules holding the pages of each area; each calls register() at import time.
_PAGE_MODULES = (
    "syncdoctor.kb.pages.env",
    "syncdoctor.kb.pages.host",
    "syncdoctor.kb.pages.network",
    "syncdoctor.kb.pages.probe",
    "syncdoctor.kb.pages.watch",
    "syncdoctor.kb.pages.analyze",
    "syncdoctor.kb.pages.guard",
)

_CODE_RE = re.compile(r"^[EHNPWAG]\d{3}$")
_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_RULES: dict[str, Rule] = {}
_loaded = False


@dataclass(frozen=True)
class Rule:
    """The explanation page of one finding code (same sections for every code, like ruff's rules).

    Attributes:
        code: ``E101``: area letter and three digits, stable, never reused.
        name: kebab-case name of the condition, e.g. ``ib-timeout-out-of-range``.
        severity: default severity of findings with this code.
        summary: one line.
        what: what it detects, and from which evidence.
        why: why it breaks or slows multi-node training.
        example: a concrete example (an environment, a log excerpt, a sysfs value).
        fix: how to fix it, with the exact line to change.
        references: sources (documentation, source files, issues).
    """

    code: str
    name: str
    severity: Severity
    summary: str
    what: str
    why: str
    example: str
    fix: str
    references: tuple[str, ...] = field(default_factory=tuple)

    @property
    def area(self) -> str:
        return AREAS.get(self.code[:1], "unknown")

    def finding(
        self,
        title: str,
        *,
        evidence: Mapping[str, Any] | None = None,
        fix: str | None = None,
        why: str | None = None,
        severity: Severity | None = None,
        key: str = "",
    ) -> Finding:
        """A finding of this code; ``why`` defaults to the page's, ``fix`` should be the concrete line."""
        return Finding(
            code=self.code,
            severity=self.severity if severity is None else severity,
            title=title,
            evidence=dict(evidence or {}),
            why=self.why if why is None else why,
            fix=self.fix if fix is None else fix,
            key=key,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "area": self.area,
            "severity": self.severity.label,
            "summary": self.summary,
            "what": self.what,
            "why": self.why,
            "example": self.example,
            "fix": self.fix,
            "references": list(self.references),
        }


def register(rule: Rule) -> Rule:
    """Add a page; codes and names must be well formed and unique."""
    if not _CODE_RE.match(rule.code):
        raise ValueError(f"bad finding code {rule.code!r}")
    if not _NAME_RE.match(rule.name):
        raise ValueError(f"bad finding name {rule.name!r} for {rule.code}")
    if rule.code in _RULES and _RULES[rule.code] != rule:
        raise ValueError(f"finding code {rule.code} registered twice")
    for other in _RULES.values():
        if other.name == rule.name and other.code != rule.code:
            raise ValueError(f"finding name {rule.name!r} used by {other.code} and {rule.code}")
    _RULES[rule.code] = rule
    return rule


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in _PAGE_MODULES:
        importlib.import_module(module)


def all_rules() -> list[Rule]:
    _load()
    return sorted(_RULES.values(), key=lambda r: r.code)


def get_rule(code_or_name: str) -> Rule | None:
    """Look a page up by code (case-insensitive) or by name."""
    _load()
    text = code_or_name.strip()
    rule = _RULES.get(text.upper())
    if rule is not None:
        return rule
    for candidate in _RULES.values():
        if candidate.name == text.lower():
            return candidate
    return None
