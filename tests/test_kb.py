"""The registry: every code has a complete page, codes and names are unique, explain prints each."""

from __future__ import annotations

import json
import re

import pytest

from syncdoctor.kb import Severity, all_rules, get_rule, sort_findings
from syncdoctor.kb.findings import Finding


def test_every_page_is_complete() -> None:
    rules = all_rules()
    for rule in rules:
        assert re.match(r"^[EHNPWAG]\d{3}$", rule.code)
        for section in ("summary", "what", "why", "example", "fix"):
            text = getattr(rule, section)
            assert text and len(text.strip()) >= 10, f"{rule.code} has an empty {section}"
    assert len({r.name for r in rules}) == len(rules)


def test_explain_prints_every_code(run_cli) -> None:
    for rule in all_rules():
        result = run_cli("explain", rule.code)
        assert result.code == 0
        assert f"({rule.code})" in result.out
        assert "## Why it breaks training" in result.out
        assert "## Fix" in result.out


def test_explain_unknown_code_is_usage_error(run_cli) -> None:
    result = run_cli("explain", "Z999")
    assert result.code == 2
    assert "unknown finding code" in result.out


def test_explain_json_and_lookup_by_name(run_cli) -> None:
    rules = all_rules()
    if not rules:
        pytest.skip("no rules registered yet")
    rule = rules[0]
    assert get_rule(rule.name) is rule
    assert get_rule(rule.code.lower()) is rule
    result = run_cli("explain", rule.code, "--json")
    assert json.loads(result.out)["code"] == rule.code


def test_sort_findings_dedups_and_orders_worst_first() -> None:
    a = Finding("E001", Severity.INFO, "a")
    b = Finding("E002", Severity.ERROR, "b")
    c = Finding("E002", Severity.ERROR, "b")
    assert sort_findings([a, b, c]) == [b, a]


def test_severity_parse() -> None:
    assert Severity.parse("Warning") is Severity.WARNING
    with pytest.raises(ValueError):
        Severity.parse("fatal")
