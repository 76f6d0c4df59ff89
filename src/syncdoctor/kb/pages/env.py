"""Finding pages of this area. Each rule is registered at import time and used as ``RULE.finding(...)``."""

from __future__ import annotations

from syncdoctor.kb.findings import Severity
from syncdoctor.kb.registry import Rule, register

__all__: list[str] = []

_ = (Severity, Rule, register)
