"""Events: what the detector reports, as frozen data with a one-line text form and a JSON form.

Pure: no I/O. Each event carries a W code whose page is in :mod:`syncdoctor.kb.pages.watch`
(``syncdoctor explain W101``), and turns into a :class:`~syncdoctor.kb.Finding` for the shared reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.kb import Finding, Severity
from syncdoctor.watch.records import Signature, format_ranks

__all__ = ["CODES", "STATUSES", "Event"]

# code -> kind (the rule's name); the pages are in syncdoctor.kb.pages.watch
CODES: Mapping[str, str] = {
    "W101": "late-rank",
    "W102": "collective-mismatch",
    "W103": "collective-count-drift",
    "W104": "transport-hang",
    "W105": "dead-rank",
    "W106": "host-unreachable",
    "W107": "chronic-straggler",
    "W108": "rank-left-early",
    "W109": "watch-degraded",
    "W110": "solo-work",
}

# warning: seen, past the warning threshold; confirmed: will not recover by itself (fail-fast acts on
# these); resolved: the condition went away (a late rank arrived); info: about the watcher itself.
STATUSES = ("warning", "confirmed", "resolved", "info")


@dataclass(frozen=True)
class Event:
    """One diagnosis.

    Attributes:
        code: W code. status: one of :data:`STATUSES`. title: one line with the concrete values.
        ranks: the culprit ranks (the late, dead, mismatched or straggling ones); hosts and pids: theirs.
        group: name of the process group; group_ranks: its members (global ranks).
        seq: the collective sequence number in that group; signature: what the waiting ranks called there;
            other_signature: what the culprits called (mismatch only).
        waiting_ranks: ranks blocked in the collective; waited_s: how long they have waited.
        detail: everything else (stack, process state, lag percentiles...), JSON-serialisable.
        key: identity of the incident (the same key across warning, confirmed and resolved).
        at: wall-clock time the monitor raised it.
    """

    code: str
    status: str
    title: str
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    pids: tuple[int, ...] = ()
    group: str | None = None
    group_ranks: tuple[int, ...] = ()
    seq: int | None = None
    signature: Signature | None = None
    other_signature: Signature | None = None
    waiting_ranks: tuple[int, ...] = ()
    waited_s: float | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    key: str = ""
    at: float = 0.0

    @property
    def kind(self) -> str:
        return CODES.get(self.code, "unknown")

    @property
    def severity(self) -> Severity:
        if self.status in ("resolved", "info"):
            return Severity.INFO
        if self.status == "confirmed" or self.code in ("W102", "W103", "W105", "W106", "W108"):
            return Severity.ERROR
        return Severity.WARNING

    def line(self) -> str:
        """The structured log line: ``syncdoctor W101 late-rank warning: ...`` then key=value facts."""
        facts = []
        if self.ranks:
            facts.append(f"ranks={format_ranks(self.ranks)}")
        if self.hosts:
            facts.append("hosts=" + ",".join(self.hosts))
        if self.group is not None:
            facts.append(f"group={self.group}")
        if self.seq is not None:
            facts.append(f"seq={self.seq}")
        if self.signature is not None:
            facts.append(f"op={self.signature.short().replace(' ', ':')}")  # op and its tensors: all_reduce:float[1000]
        if self.waited_s is not None:
            facts.append(f"waited={self.waited_s:.1f}s")
        where = self.detail.get("where")
        if where:
            facts.append(f"where={str(where).replace(' ', '')}")
        text = f"syncdoctor {self.code} {self.kind} {self.status}: {self.title}"
        return text + (" [" + " ".join(facts) + "]" if facts else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "kind": self.kind,
            "status": self.status,
            "severity": self.severity.label,
            "title": self.title,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
            "pids": list(self.pids),
            "group": self.group,
            "group_ranks": format_ranks(self.group_ranks) if self.group_ranks else None,
            "seq": self.seq,
            "signature": self.signature.to_json() if self.signature else None,
            "other_signature": self.other_signature.to_json() if self.other_signature else None,
            "waiting_ranks": list(self.waiting_ranks),
            "waited_s": None if self.waited_s is None else round(self.waited_s, 2),
            "detail": dict(self.detail),
            "key": self.key,
            "at": round(self.at, 3),
        }

    def to_finding(self) -> Finding:
        from syncdoctor.kb import get_rule

        rule = get_rule(self.code)
        evidence = {k: v for k, v in self.to_json().items() if v not in (None, [], {}, "") and k not in ("title", "code")}
        if rule is None:  # pragma: no cover - every code has a page (tests/test_kb.py)
            return Finding(self.code, self.severity, self.title, evidence=evidence, key=self.key)
        return rule.finding(self.title, evidence=evidence, severity=self.severity, key=self.key)
