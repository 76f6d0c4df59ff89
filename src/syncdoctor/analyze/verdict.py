"""The analyze verdict as a typed document: the ``syncdoctor.analyze/1`` JSON that ``analyze --json`` prints.

Pure: no I/O. :class:`Verdict` and its parts are frozen dataclasses; ``to_json()`` writes exactly the
document of every release so far (same keys, same order), ``from_json()`` reads it back and raises
:class:`~syncdoctor.errors.InputError`, and only that, with a clear message on malformed input. Category
names of earlier releases (``interface-missing``...) are read as today's names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.analyze.model import LEGACY_CATEGORY_NAMES
from syncdoctor.errors import InputError
from syncdoctor.exclude import Suspect, root_suspects

__all__ = ["SCHEMA", "RankRow", "TimelineRow", "Verdict", "VerdictEvidence", "VerdictHypothesis"]

SCHEMA = "syncdoctor.analyze/1"

def _legacy(category: str) -> str:
    """Today's name of a category (a file written before the names were unified says ``interface-missing``)."""
    return LEGACY_CATEGORY_NAMES.get(category, category)


# --- reading helpers: each names the field that is wrong ------------------------------------------------


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"analyze document: {where} must be a JSON object, not {type(value).__name__}")
    return value


def _array(value: Any, where: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise InputError(f"analyze document: {where} must be a JSON list, not {type(value).__name__}")
    return value


def _str(value: Any, where: str, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise InputError(f"analyze document: {where} must be a string, not {type(value).__name__}")
    return value


def _opt_str(value: Any, where: str) -> str | None:
    return None if value is None else _str(value, where)


def _opt_int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"analyze document: {where} must be an integer or null, not {value!r:.40}")
    return value


def _int(value: Any, where: str, default: int = 0) -> int:
    result = _opt_int(value, where)
    return default if result is None else result


def _opt_float(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"analyze document: {where} must be a number or null, not {value!r:.40}")
    return float(value)


def _bool(value: Any, where: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InputError(f"analyze document: {where} must be true or false, not {value!r:.40}")
    return value


def _ints(value: Any, where: str) -> tuple[int, ...]:
    return tuple(_int(v, f"{where}[{i}]") for i, v in enumerate(_array(value, where)))


def _strs(value: Any, where: str) -> tuple[str, ...]:
    return tuple(_str(v, f"{where}[{i}]") for i, v in enumerate(_array(value, where)))


def _items(value: Any, where: str, read: Any) -> tuple[Any, ...]:
    return tuple(read(_object(v, f"{where}[{i}]"), f"{where}[{i}]") for i, v in enumerate(_array(value, where)))


# --- the parts --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerdictEvidence:
    """One evidence line: where (``file:line``), what it says, why it matters, and its writer."""

    ref: str
    text: str
    note: str = ""
    rank: int | None = None
    host: str | None = None

    @property
    def file(self) -> str:
        source, _, line = self.ref.rpartition(":")
        return source if line.isdecimal() else self.ref

    @property
    def line(self) -> int | None:
        _, _, line = self.ref.rpartition(":")
        return int(line) if line.isdecimal() else None

    def to_json(self, *, located: bool = False) -> dict[str, Any]:
        """The evidence object; ``located`` adds ``file`` and ``line`` (the hypotheses' form)."""
        out: dict[str, Any] = {"ref": self.ref, "text": self.text, "note": self.note, "rank": self.rank,
                               "host": self.host}
        if located:
            out["file"], out["line"] = self.file, self.line
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "evidence") -> VerdictEvidence:
        return cls(_str(data.get("ref"), f"{where}.ref"), _str(data.get("text"), f"{where}.text"),
                   _str(data.get("note"), f"{where}.note"), _opt_int(data.get("rank"), f"{where}.rank"),
                   _opt_str(data.get("host"), f"{where}.host"))


@dataclass(frozen=True)
class VerdictHypothesis:
    """One candidate root cause as the document states it (see :class:`syncdoctor.analyze.Hypothesis`).

    ``category`` is a string: the documents of other writers may name categories this release lacks.
    """

    category: str
    code: str
    confidence: float
    title: str
    root_cause: bool = True
    culprit_ranks: tuple[int, ...] = ()
    culprit_hosts: tuple[str, ...] = ()
    culprit_processes: tuple[str, ...] = ()
    culprit_local_ranks: tuple[int, ...] = ()
    affected_ranks: tuple[int, ...] = ()
    affected_hosts: tuple[str, ...] = ()
    what: str = ""
    fix: str = ""
    evidence: tuple[VerdictEvidence, ...] = ()
    evidence_total: int = 0

    def to_json(self, *, located: bool = False) -> dict[str, Any]:
        """The hypothesis object; ``located`` is the form of the ``hypotheses`` list (``hosts``, and
        ``file``/``line`` on each evidence line), else the form of ``root_cause``."""
        out: dict[str, Any] = {
            "category": self.category,
            "code": self.code,
            "confidence": self.confidence,
            "root_cause": self.root_cause,
            "title": self.title,
            "culprit_ranks": list(self.culprit_ranks),
            "culprit_hosts": list(self.culprit_hosts),
            "culprit_processes": list(self.culprit_processes),
            "culprit_local_ranks": list(self.culprit_local_ranks),
            "affected_ranks": list(self.affected_ranks),
            "affected_hosts": list(self.affected_hosts),
            "what": self.what,
            "fix": self.fix,
            "evidence": [e.to_json(located=located) for e in self.evidence],
            "evidence_total": self.evidence_total,
        }
        if located:
            out["hosts"] = list(self.culprit_hosts)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "hypothesis") -> VerdictHypothesis:
        evidence = _items(data.get("evidence"), f"{where}.evidence", VerdictEvidence.from_json)
        confidence = _opt_float(data.get("confidence"), f"{where}.confidence")
        if confidence is not None and not math.isfinite(confidence):
            raise InputError(f"analyze document: {where}.confidence must be a finite number")
        return cls(
            category=_legacy(_str(data.get("category"), f"{where}.category")),
            code=_str(data.get("code"), f"{where}.code"),
            confidence=0.0 if confidence is None else confidence,
            title=_str(data.get("title"), f"{where}.title"),
            root_cause=_bool(data.get("root_cause"), f"{where}.root_cause", True),
            culprit_ranks=_ints(data.get("culprit_ranks"), f"{where}.culprit_ranks"),
            culprit_hosts=_strs(data.get("culprit_hosts"), f"{where}.culprit_hosts"),
            culprit_processes=_strs(data.get("culprit_processes"), f"{where}.culprit_processes"),
            culprit_local_ranks=_ints(data.get("culprit_local_ranks"), f"{where}.culprit_local_ranks"),
            affected_ranks=_ints(data.get("affected_ranks"), f"{where}.affected_ranks"),
            affected_hosts=_strs(data.get("affected_hosts"), f"{where}.affected_hosts"),
            what=_str(data.get("what"), f"{where}.what"),
            fix=_str(data.get("fix"), f"{where}.fix"),
            evidence=evidence,
            evidence_total=_int(data.get("evidence_total"), f"{where}.evidence_total", len(evidence)),
        )


@dataclass(frozen=True)
class TimelineRow:
    """One event of the timeline on a known rank. ``time`` is seconds on the writer's clock (year-less),
    ``time_text`` the timestamp as written; ``data`` the kind's parsed fields (JSON)."""

    kind: str
    ref: str
    rank: int | None
    text: str
    host: str | None = None
    group: str | None = None
    seq: int | None = None
    op: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    time_text: str | None = None
    time: float | None = None
    file: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "ref": self.ref, "rank": self.rank, "host": self.host, "group": self.group,
                "seq": self.seq, "op": self.op, "data": dict(self.data), "text": self.text,
                "time_text": self.time_text, "time": self.time, "file": self.file, "line": self.line}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "timeline row") -> TimelineRow:
        fields = data.get("data")
        return cls(
            kind=_str(data.get("kind"), f"{where}.kind"), ref=_str(data.get("ref"), f"{where}.ref"),
            rank=_opt_int(data.get("rank"), f"{where}.rank"), text=_str(data.get("text"), f"{where}.text"),
            host=_opt_str(data.get("host"), f"{where}.host"), group=_opt_str(data.get("group"), f"{where}.group"),
            seq=_opt_int(data.get("seq"), f"{where}.seq"), op=_opt_str(data.get("op"), f"{where}.op"),
            data=dict(_object(fields, f"{where}.data")) if fields is not None else {},
            time_text=_opt_str(data.get("time_text"), f"{where}.time_text"),
            time=_opt_float(data.get("time"), f"{where}.time"),
            file=_opt_str(data.get("file"), f"{where}.file"), line=_opt_int(data.get("line"), f"{where}.line"),
        )


@dataclass(frozen=True)
class RankRow:
    """One rank's outcome: where it ran, how far it got, how it ended and its first error."""

    rank: int
    host: str | None = None
    pids: tuple[int, ...] = ()
    state: str = ""
    last_seq: int | None = None
    last_completed: int | None = None
    exitcode: int | None = None
    signal: str | None = None
    first_error: str | None = None
    first_error_ref: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "host": self.host, "pids": list(self.pids), "state": self.state,
                "last_seq": self.last_seq, "last_completed": self.last_completed, "exitcode": self.exitcode,
                "signal": self.signal, "first_error": self.first_error, "first_error_ref": self.first_error_ref}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "rank") -> RankRow:
        rank = _opt_int(data.get("rank"), f"{where}.rank")
        if rank is None:
            raise InputError(f"analyze document: {where} has no rank")
        return cls(rank, _opt_str(data.get("host"), f"{where}.host"), _ints(data.get("pids"), f"{where}.pids"),
                   _str(data.get("state"), f"{where}.state"), _opt_int(data.get("last_seq"), f"{where}.last_seq"),
                   _opt_int(data.get("last_completed"), f"{where}.last_completed"),
                   _opt_int(data.get("exitcode"), f"{where}.exitcode"), _opt_str(data.get("signal"), f"{where}.signal"),
                   _opt_str(data.get("first_error"), f"{where}.first_error"),
                   _opt_str(data.get("first_error_ref"), f"{where}.first_error_ref"))


@dataclass(frozen=True)
class Verdict:
    """The whole analyze document.

    Attributes:
        root_cause_found / root_cause: the best hypothesis that explains the failure, if any.
        hypotheses: every hypothesis, best first. findings: the same as ``Finding.to_json`` objects.
        ranks: one row per rank. hosts: host -> its ranks. world_size: when the logs tell it.
        timeline: the events on known ranks (the first few thousand). inputs: what was read.
        notes: the reader's notes, then the rules'. unexplained: error-looking lines no hypothesis cites.
        stats: bytes, lines, events and dumps read. schema: the document's schema name.
        suspect_nodes (derived, written, not read): the nodes the root cause puts in doubt when its cause sits
        in the node (:mod:`syncdoctor.exclude`); none for a rank-level cause.
    """

    root_cause_found: bool
    root_cause: VerdictHypothesis | None = None
    hypotheses: tuple[VerdictHypothesis, ...] = ()
    findings: tuple[Mapping[str, Any], ...] = ()
    ranks: tuple[RankRow, ...] = ()
    hosts: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    world_size: int | None = None
    timeline: tuple[TimelineRow, ...] = ()
    inputs: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    unexplained: tuple[VerdictEvidence, ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)
    schema: str = SCHEMA

    def suspect_nodes(self, min_confidence: float = 0.0) -> list[Suspect]:
        """The root cause's hosts when its cause sits in the node (see :mod:`syncdoctor.exclude`)."""
        return root_suspects(self.root_cause, min_confidence)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "root_cause_found": self.root_cause_found,
            "root_cause": self.root_cause.to_json() if self.root_cause is not None else None,
            "hypotheses": [h.to_json(located=True) for h in self.hypotheses],
            "findings": [dict(f) for f in self.findings],
            "ranks": [r.to_json() for r in self.ranks],
            "hosts": {host: list(members) for host, members in self.hosts.items()},
            "world_size": self.world_size,
            "timeline": [row.to_json() for row in self.timeline],
            "inputs": list(self.inputs),
            "notes": list(self.notes),
            "unexplained": [e.to_json() for e in self.unexplained],
            "stats": dict(self.stats),
            "suspect_nodes": [s.to_json() for s in self.suspect_nodes()],
        }

    @classmethod
    def from_json(cls, data: Any) -> Verdict:
        """The verdict from its JSON document (as parsed by ``json.loads``); InputError when malformed."""
        document = _object(data, "the document")
        schema = _str(document.get("schema"), "schema", SCHEMA)
        if not schema.startswith("syncdoctor.analyze/"):
            raise InputError(f"analyze document: schema {schema!r} is not syncdoctor.analyze/N")
        root = document.get("root_cause")
        hosts = _object(document.get("hosts") or {}, "hosts")
        return cls(
            root_cause_found=_bool(document.get("root_cause_found"), "root_cause_found", root is not None),
            root_cause=None if root is None else VerdictHypothesis.from_json(_object(root, "root_cause"),
                                                                             "root_cause"),
            hypotheses=_items(document.get("hypotheses"), "hypotheses", VerdictHypothesis.from_json),
            findings=tuple(dict(_object(f, f"findings[{i}]"))
                           for i, f in enumerate(_array(document.get("findings"), "findings"))),
            ranks=_items(document.get("ranks"), "ranks", RankRow.from_json),
            hosts={_str(host, "hosts"): _ints(members, f"hosts[{host!r}]") for host, members in hosts.items()},
            world_size=_opt_int(document.get("world_size"), "world_size"),
            timeline=_items(document.get("timeline"), "timeline", TimelineRow.from_json),
            inputs=_strs(document.get("inputs"), "inputs"),
            notes=_strs(document.get("notes"), "notes"),
            unexplained=_items(document.get("unexplained"), "unexplained", VerdictEvidence.from_json),
            stats=dict(_object(document.get("stats") or {}, "stats")),
            schema=schema,
        )
