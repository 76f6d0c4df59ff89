"""The probe's report (schema ``syncdoctor.probe/1``): the typed document, its JSON form and the file writer.

:class:`ProbeReport` and its parts are frozen dataclasses; :meth:`ProbeReport.from_json` reads the JSON
document (files written by every version of this schema: optional keys may be missing, malformed entries of
a list are skipped, anything else malformed raises :class:`~syncdoctor.errors.InputError`) and
:meth:`ProbeReport.to_json` writes it back. Pure, apart from :class:`ProbeDocument`, which does I/O: it
rewrites the JSON file atomically after every stage, so a stage that fails or hangs never loses the ones
before it. The terminal rendering is :func:`syncdoctor.report.terminal_probe.render_probe`, the HTML page
:mod:`syncdoctor.report.html_probe`.

Top-level keys: ``schema``, ``syncdoctor_version``, ``created``, ``finished``, ``command``, ``config``,
``launch``, ``backend``, ``probe_settings``, ``stages`` (name, status, seconds, errors), ``join``
(complete, registered, missing, nodes, waited_s), ``clock`` (offsets, skew), ``facts`` (nodes), ``links``,
``collectives``, ``findings``, ``suspect_nodes`` (derived from the findings: the nodes to exclude, see
:mod:`syncdoctor.exclude`), ``verdict``, ``recommendations``, ``emitted``, ``json_path``.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from syncdoctor._version import __version__
from syncdoctor.errors import InputError
from syncdoctor.exclude import Suspect, suspects_from_findings
from syncdoctor.kb import Finding
from syncdoctor.kb.findings import findings_to_json
from syncdoctor.probe.recommend import Recommendations
from syncdoctor.probe.records import ClockOffset, CollectiveRow, LinkMeasure, NodeSkew, from_json
from syncdoctor.probe.verdict import Verdict
from syncdoctor.redact import redact_json

__all__ = [
    "SCHEMA",
    "ClockSection",
    "FactsRow",
    "JoinNode",
    "JoinSection",
    "ProbeDocument",
    "ProbeReport",
    "StageResult",
    "emit_paths",
    "write_emitted",
]

SCHEMA = "syncdoctor.probe/1"

T = TypeVar("T")

_KNOWN = ("schema", "syncdoctor_version", "created", "finished", "command", "config", "launch", "backend",
          "probe_settings", "stages", "join", "clock", "facts", "links", "collectives", "findings", "verdict",
          "recommendations", "emitted", "json_path", "suspect_nodes")


def _object(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, {} when absent (None); InputError otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: a JSON object was expected, got {type(value).__name__}")
    return value


def _items(value: Any, parse: Callable[[Any], T]) -> tuple[T, ...]:
    """The entries of a JSON list that ``parse`` accepts; malformed entries (and a non-list) are skipped."""
    if not isinstance(value, (list, tuple)):
        return ()
    out = []
    for item in value:
        try:
            out.append(parse(item))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return tuple(out)


def _record(cls: type[T]) -> Callable[[Any], T]:
    return lambda item: from_json(cls, item)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _mapping(item: Any) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise TypeError("not an object")
    return dict(item)


@dataclass(frozen=True)
class StageResult:
    """One stage as the report records it: status ``ok``, ``failed``, ``hung`` or ``skipped``, its time
    (seconds) and the error of every rank it failed on (rank as text -> message)."""

    name: str
    status: str
    seconds: float
    errors: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "seconds": self.seconds, "errors": dict(self.errors)}

    @classmethod
    def from_json(cls, data: Any) -> StageResult:
        data = _mapping(data)
        errors = data.get("errors") or {}
        return cls(str(data["name"]), str(data["status"]), float(data.get("seconds") or 0.0),
                   {str(k): str(v) for k, v in dict(errors).items()})


@dataclass(frozen=True)
class JoinNode:
    """A node of the join table: node rank, label, hostname, address and ranks (hostname and address may be
    missing in a report, as ``""`` and None)."""

    node: int
    label: str
    ranks: tuple[int, ...] = ()
    hostname: str = ""
    addr: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "label": self.label, "hostname": self.hostname, "addr": self.addr,
                "ranks": list(self.ranks)}

    @classmethod
    def from_json(cls, data: Any) -> JoinNode:
        data = _mapping(data)
        node = int(data["node"])
        addr = data.get("addr")
        return cls(node, str(data.get("label") or data.get("hostname") or f"node{node}"),
                   tuple(int(r) for r in data.get("ranks") or ()), str(data.get("hostname") or ""),
                   None if addr is None else str(addr))


@dataclass(frozen=True)
class JoinSection:
    """The join stage: whether every rank registered, the ranks as they registered (``RankInfo`` JSON,
    kept as objects), the nodes, what never joined (descriptions), how long it waited."""

    complete: bool = False
    state: str | None = None
    waited_s: float | None = None
    registered: tuple[Mapping[str, Any], ...] = ()
    nodes: tuple[JoinNode, ...] = ()
    missing: tuple[Any, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"complete": self.complete}
        if self.state is not None:
            out["state"] = self.state
        if self.waited_s is not None:
            out["waited_s"] = self.waited_s
        return out | {"registered": [dict(r) for r in self.registered], "nodes": [n.to_json() for n in self.nodes],
                      "missing": list(self.missing)}

    @classmethod
    def from_json(cls, data: Any) -> JoinSection:
        data = _object(data, "join")
        state = data.get("state")
        missing = data.get("missing")
        return cls(bool(data.get("complete")), None if state is None else str(state), _number(data.get("waited_s")),
                   _items(data.get("registered"), _mapping), _items(data.get("nodes"), JoinNode.from_json),
                   tuple(missing) if isinstance(missing, (list, tuple)) else ())

    def arrival_startups(self) -> list[float]:
        """Per registered rank with both times: seconds from process start to joining."""
        out = []
        for rank in self.registered:
            arrival, started = _number(rank.get("arrival")), _number(rank.get("started"))
            if arrival is not None and started is not None:
                out.append(arrival - started)
        return out


@dataclass(frozen=True)
class ClockSection:
    """Clock offsets per node and the start-up skew per node (on node 0's clock)."""

    offsets: tuple[ClockOffset, ...] = ()
    skew: tuple[NodeSkew, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"offsets": [o.to_json() for o in self.offsets], "skew": [s.to_json() for s in self.skew]}

    @classmethod
    def from_json(cls, data: Any) -> ClockSection:
        data = _object(data, "clock")
        return cls(_items(data.get("offsets"), _record(ClockOffset)), _items(data.get("skew"), _record(NodeSkew)))


@dataclass(frozen=True)
class FactsRow:
    """What the facts stage shows per node: the interface used to reach the master, its MTU and speed;
    ``details``: the rest of the node's entry (env, versions, gpus, host facts) as it was written."""

    node: int
    label: str
    interface: str | None = None
    mtu: int | None = None
    speed_mbps: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "label": self.label, "interface": self.interface, "mtu": self.mtu,
                "speed_mbps": self.speed_mbps, **self.details}

    @classmethod
    def from_json(cls, data: Any) -> FactsRow:
        data = _mapping(data)
        node = int(data["node"])
        interface, mtu, speed = data.get("interface"), data.get("mtu"), data.get("speed_mbps")
        details = {k: v for k, v in data.items() if k not in ("node", "label", "interface", "mtu", "speed_mbps")}
        return cls(node, str(data.get("label") or f"node{node}"), None if interface is None else str(interface),
                   None if mtu is None else int(mtu), None if speed is None else int(speed), details)


def _finding(data: Any) -> Finding:
    return Finding.from_json(_mapping(data))


@dataclass(frozen=True)
class ProbeReport:
    """One probe run's report, as written to ``--json`` (see the module docstring for the keys).

    Sections a run that stopped early did not reach are None (``join``, ``clock``, ``verdict``,
    ``recommendations``) or empty. ``config``, ``launch`` and ``probe_settings`` are the settings as written
    (plain JSON objects); ``extra`` keeps top-level keys this version does not know.
    """

    schema: str = SCHEMA
    syncdoctor_version: str = ""
    created: str = ""
    finished: bool = False
    command: tuple[str, ...] | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    launch: Mapping[str, Any] = field(default_factory=dict)
    backend: str | None = None
    probe_settings: Mapping[str, Any] | None = None
    stages: tuple[StageResult, ...] = ()
    join: JoinSection | None = None
    clock: ClockSection | None = None
    facts: tuple[FactsRow, ...] | None = None
    links: tuple[LinkMeasure, ...] = ()
    collectives: tuple[CollectiveRow, ...] = ()
    findings: tuple[Finding, ...] = ()
    verdict: Verdict | None = None
    recommendations: Recommendations | None = None
    emitted: tuple[str, ...] = ()
    json_path: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def nodes(self) -> tuple[JoinNode, ...]:
        return self.join.nodes if self.join else ()

    @property
    def skews(self) -> tuple[NodeSkew, ...]:
        return self.clock.skew if self.clock else ()

    @property
    def offsets(self) -> tuple[ClockOffset, ...]:
        return self.clock.offsets if self.clock else ()

    @property
    def registered(self) -> int:
        """How many ranks registered."""
        return len(self.join.registered) if self.join else 0

    @property
    def suspect_nodes(self) -> list[Suspect]:
        """The nodes to keep out of the next run (a node that never joined, the slow node), from the findings."""
        return suspects_from_findings([f.to_json() for f in self.findings])

    def labels(self) -> dict[int, str]:
        """Node rank -> label, from the join table."""
        return {n.node: n.label for n in self.nodes}

    def to_json(self) -> dict[str, Any]:
        """The JSON document (what :meth:`from_json` reads back into an equal report)."""
        out: dict[str, Any] = {"schema": self.schema, "syncdoctor_version": self.syncdoctor_version,
                               "created": self.created, "finished": self.finished,
                               "stages": [s.to_json() for s in self.stages],
                               "findings": [f.to_json() for f in self.findings],
                               "suspect_nodes": [s.to_json() for s in self.suspect_nodes]}
        if self.command is not None:
            out["command"] = list(self.command)
        out["config"] = dict(self.config)
        out["launch"] = dict(self.launch)
        if self.backend is not None:
            out["backend"] = self.backend
        if self.probe_settings is not None:
            out["probe_settings"] = dict(self.probe_settings)
        if self.join is not None:
            out["join"] = self.join.to_json()
        if self.clock is not None:
            out["clock"] = self.clock.to_json()
        if self.facts is not None:
            out["facts"] = {"nodes": [f.to_json() for f in self.facts]}
        out["links"] = [link.to_json() for link in self.links]
        out["collectives"] = [r.to_json() for r in self.collectives]
        out["verdict"] = None if self.verdict is None else self.verdict.to_json()
        out["recommendations"] = None if self.recommendations is None else self.recommendations.to_json()
        if self.emitted:
            out["emitted"] = list(self.emitted)
        if self.json_path is not None:
            out["json_path"] = self.json_path
        return out | dict(self.extra)

    @classmethod
    def from_json(cls, data: Any, source: str = "the probe report") -> ProbeReport:
        """Read a probe JSON document; raises :class:`InputError` (naming ``source``) when it is not one."""
        if not isinstance(data, Mapping):
            raise InputError(f"{source}: not a probe report (a JSON object was expected)")
        schema = data.get("schema")
        if schema != SCHEMA:
            raise InputError(f"{source}: not a probe report of schema {SCHEMA} (schema {schema!r})")
        try:
            return cls._parse(data)
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"{source}: malformed probe report ({type(exc).__name__}: {exc})") from None

    @classmethod
    def _parse(cls, data: Mapping[str, Any]) -> ProbeReport:
        command = data.get("command")
        backend, version, created = data.get("backend"), data.get("syncdoctor_version"), data.get("created")
        json_path = data.get("json_path")
        facts = data.get("facts")
        return cls(
            schema=SCHEMA,
            syncdoctor_version="" if version is None else str(version),
            created="" if created is None else str(created),
            finished=bool(data.get("finished")),
            command=tuple(str(c) for c in command) if isinstance(command, (list, tuple)) else None,
            config=dict(_object(data.get("config"), "config")),
            launch=dict(_object(data.get("launch"), "launch")),
            backend=None if backend is None else str(backend),
            probe_settings=(None if data.get("probe_settings") is None
                            else dict(_object(data.get("probe_settings"), "probe_settings"))),
            stages=_items(data.get("stages"), StageResult.from_json),
            join=None if data.get("join") is None else JoinSection.from_json(data.get("join")),
            clock=None if data.get("clock") is None else ClockSection.from_json(data.get("clock")),
            facts=(None if facts is None
                   else _items(_object(facts, "facts").get("nodes"), FactsRow.from_json)),
            links=_items(data.get("links"), _record(LinkMeasure)),
            collectives=_items(data.get("collectives"), _record(CollectiveRow)),
            findings=_items(data.get("findings"), _finding),
            verdict=None if not data.get("verdict") else Verdict.from_json(_object(data.get("verdict"), "verdict")),
            recommendations=(None if not data.get("recommendations") else
                             Recommendations.from_json(_object(data.get("recommendations"), "recommendations"))),
            emitted=tuple(str(p) for p in data.get("emitted") or ()) if isinstance(data.get("emitted"), list) else (),
            json_path=None if json_path is None else str(json_path),
            extra={k: v for k, v in data.items() if k not in _KNOWN},
        )

    @classmethod
    def loads(cls, text: str, source: str = "the probe report") -> ProbeReport:
        """Parse JSON text (InputError when it is not JSON or not a probe report)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source} is not JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_json(data, source)


class ProbeDocument:
    """The report being built on the reporting rank; :meth:`write` saves it (when a path was given)."""

    def __init__(self, path: str | None, **header: Any) -> None:
        self.path = Path(path) if path else None
        self.data: dict[str, Any] = {
            "schema": SCHEMA,
            "syncdoctor_version": __version__,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "finished": False,
            "stages": [],
            "findings": [],
            **header,
        }

    def stage(self, name: str, status: str, seconds: float, errors: Mapping[int, str] | None = None) -> None:
        stages = [s for s in self.data["stages"] if s["name"] != name]
        stages.append({"name": name, "status": status, "seconds": round(seconds, 3),
                       "errors": {str(k): v for k, v in (errors or {}).items()}})
        self.data["stages"] = stages

    def update(self, **sections: Any) -> None:
        self.data.update(sections)

    def set_findings(self, findings: Sequence[Finding]) -> None:
        self.data["findings"] = findings_to_json(findings)
        self.data["suspect_nodes"] = [s.to_json() for s in suspects_from_findings(self.data["findings"])]

    def write(self) -> None:
        """Atomically replace the JSON file (a no-op without a path)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w") as out:
                json.dump(redact_json(json.loads(json.dumps(self.data, default=str))), out, indent=2)
                out.write("\n")
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def emit_paths(target: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The env file ``FILE`` and its Python snippet ``FILE.py`` (``NAME_timeouts.py`` when FILE ends in .py)."""
    env_path = Path(target)
    snippet = env_path.with_name(env_path.stem + "_timeouts.py") if env_path.suffix == ".py" else \
        env_path.with_name(env_path.name + ".py")
    return env_path, snippet


def write_emitted(target: str | os.PathLike[str], env_text: str, snippet_text: str) -> list[Path]:
    """Write the env file and its snippet (secrets redacted as they leave); raises OSError. The one writer of
    what ``--emit-env`` produces (``syncdoctor probe`` and ``syncdoctor recommend``)."""
    from syncdoctor.redact import redact_text

    env_path, snippet = emit_paths(target)
    env_path.parent.mkdir(parents=True, exist_ok=True)
    env_path.write_text(redact_text(env_text))
    snippet.write_text(redact_text(snippet_text))
    return [env_path, snippet]
