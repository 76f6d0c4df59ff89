"""Events: what the detector reports, as frozen data with a one-line text form and a JSON form.

Pure: no I/O. The event file (JSON lines, :data:`SCHEMA`) holds one ``Event.to_json()`` per line;
:meth:`Event.from_json` reads a line back and raises :class:`~syncdoctor.errors.InputError`, and only that,
when it is malformed. Each event carries a W code whose page is in :mod:`syncdoctor.kb.pages.watch`
(``syncdoctor explain W101``), and turns into a :class:`~syncdoctor.kb.Finding` for the shared reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.errors import InputError
from syncdoctor.exclude import Suspect, event_suspects
from syncdoctor.kb import Finding, Severity
from syncdoctor.watch.records import Signature, format_ranks, parse_ranks

__all__ = ["CODES", "HANG_CODES", "SCHEMA", "STATUSES", "Event"]

# what an event file holds (the lines carry no schema field: their format is that of version 1)
SCHEMA = "syncdoctor.watch/events"

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

# the codes that mean the job is held up: their confirmed events end the job in fail-fast mode; W107 (a
# straggler) is a statistic over a window and never does, W109 and W110 are about the watcher and the job
HANG_CODES = ("W101", "W102", "W103", "W104", "W105", "W106", "W108")

# warning: seen, past the warning threshold; confirmed: will not recover by itself (fail-fast acts on
# these); resolved: the condition went away (a late rank arrived); info: about the watcher itself.
STATUSES = ("warning", "confirmed", "resolved", "info")


@dataclass(frozen=True)
class Event:
    """One diagnosis.

    Attributes:
        code: W code. status: one of :data:`STATUSES`. title: one line with the concrete values.
        ranks: the culprit ranks (the late, dead, mismatched or straggling ones); hosts and pids: theirs (hosts
            as messages write them, ``host1 (node 1)``); nodes: their machines' bare host names (as schedulers
            and the node history name them).
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
    nodes: tuple[str, ...] = ()

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

    @property
    def suspect_nodes(self) -> list[Suspect]:
        """The nodes to keep out of the next run for this event (a host cut off, a chronic straggler's host;
        none for a rank-level cause or a resolved incident): see :mod:`syncdoctor.exclude`."""
        return event_suspects(self.code, self.status, self.nodes or self.hosts)

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
            "nodes": list(self.nodes),
            "suspect_nodes": [suspect.to_json() for suspect in self.suspect_nodes],
        }

    @classmethod
    def from_json(cls, data: Any) -> Event:
        """The event of one ``to_json()`` object (``kind``, ``severity`` and ``suspect_nodes`` are derived, not
        read); InputError with the field's name when it is malformed."""
        if not isinstance(data, Mapping):
            raise InputError(f"watch event: expected a JSON object, not {type(data).__name__}")
        code = _text(data.get("code"), "code")
        if not code:
            raise InputError("watch event: no code")
        group_ranks = data.get("group_ranks")
        if isinstance(group_ranks, str):
            try:
                members = parse_ranks(group_ranks)
            except ValueError:
                raise InputError(f"watch event {code}: group_ranks {group_ranks!r:.60} is not a rank list") from None
        else:
            members = _ints(group_ranks, "group_ranks")
        detail = data.get("detail")
        if detail is not None and not isinstance(detail, Mapping):
            raise InputError(f"watch event {code}: detail must be a JSON object")
        waited = _number(data.get("waited_s"), "waited_s")
        return cls(
            code=code,
            status=_text(data.get("status"), "status"),
            title=_text(data.get("title"), "title"),
            ranks=_ints(data.get("ranks"), "ranks"),
            hosts=tuple(_text(h, "hosts") for h in _list(data.get("hosts"), "hosts")),
            pids=_ints(data.get("pids"), "pids"),
            group=None if data.get("group") is None else _text(data.get("group"), "group"),
            group_ranks=members,
            seq=_int(data.get("seq"), "seq"),
            signature=_signature(data.get("signature"), "signature"),
            other_signature=_signature(data.get("other_signature"), "other_signature"),
            waiting_ranks=_ints(data.get("waiting_ranks"), "waiting_ranks"),
            waited_s=waited,
            detail=dict(detail or {}),
            key=_text(data.get("key"), "key"),
            nodes=tuple(_text(n, "nodes") for n in _list(data.get("nodes"), "nodes")),
            at=_number(data.get("at"), "at") or 0.0,
        )

    def to_finding(self) -> Finding:
        from syncdoctor.kb import get_rule

        rule = get_rule(self.code)
        evidence = {k: v for k, v in self.to_json().items() if v not in (None, [], {}, "") and k not in ("title", "code")}
        if rule is None:  # pragma: no cover - every code has a page (tests/test_kb.py)
            return Finding(self.code, self.severity, self.title, evidence=evidence, key=self.key)
        return rule.finding(self.title, evidence=evidence, severity=self.severity, key=self.key)


def _list(value: Any, name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise InputError(f"watch event: {name} must be a JSON list, not {type(value).__name__}")
    return list(value)


def _text(value: Any, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"watch event: {name} must be a string, not {value!r:.40}")
    return value


def _int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"watch event: {name} must be an integer, not {value!r:.40}")
    return value


def _ints(value: Any, name: str) -> tuple[int, ...]:
    out = []
    for item in _list(value, name):
        number = _int(item, name)
        if number is None:
            raise InputError(f"watch event: {name} holds a null")
        out.append(number)
    return tuple(out)


def _number(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"watch event: {name} must be a number, not {value!r:.40}")
    return float(value)


def _signature(value: Any, name: str) -> Signature | None:
    if value is None:
        return None
    signature = Signature.from_json(value)
    if signature is None:
        raise InputError(f"watch event: {name} {value!r:.60} is not [op, input sizes, dtypes, output sizes]")
    return signature
