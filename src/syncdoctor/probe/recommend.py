"""The one recommend engine: the settings a job should use, derived from measurements, each number
explained by the measurement it comes from. Pure: plain data in, plain data out (the files are written by
:func:`syncdoctor.recommend.write_emitted`).

Two process group timeouts, because one number cannot serve both phases of a job:

* **start-up and loading** (``init_process_group(timeout=...)``): the first collectives wait for the last
  rank to start and for the slowest rank to load its checkpoint, and NCCL connects the ranks at the first
  collective. ``startup = 2 x load time + 4 x start-up skew + 60 s connection set-up``, with a 600 s
  loading allowance when the load time was not measured; rounded up to 10 s, at least 120 s.
* **steady state** (switched to after loading with ``_set_pg_timeout``): a collective waits at most for
  the slowest rank's compute and for the transfer itself. ``steady = 10 x t(bucket) + 3 x step time``,
  where ``t(bucket)`` is the time of one gradient bucket (DDP's default, 25 MiB) all_reduced at the
  bandwidth the slowest rank achieved at the largest measured all_reduce size (or twice the bucket over
  the slowest link), and the step time gets a 30 s allowance when not measured; rounded up to 10 s, at
  least 60 s, and never above the start-up timeout.

:func:`recommend_timeouts` computes them from :class:`Measurements`, which :func:`measurements_from_records`
derives from the probe's records (in their JSON form) and :func:`measurements_from_probe` from a whole
:class:`~syncdoctor.probe.report.ProbeReport` (what ``syncdoctor recommend`` reads, with the user's load and
step times). :func:`recommend` is the probe's own: from the nodes' facts and its in-memory records it adds

- Interfaces: the interface each node used to reach the master, as ``NCCL_SOCKET_IFNAME`` (exact names,
  ``=a,b``, so every node finds its own) and ``GLOO_SOCKET_IFNAME`` (one exact name; per node when the names
  differ, since Gloo wants the same number of names everywhere).
- HCAs: the IB/RoCE ports ACTIVE on every node, as ``NCCL_IB_HCA==dev:port,...``.

and the same timeouts, so the probe and ``syncdoctor recommend`` on the probe's report give the same numbers
(load and step times are not measured by the probe: the allowances stand in for them). Switching from one
timeout to the other uses ``torch.distributed.distributed_c10d._set_pg_timeout``. The env file and Python
snippet of both come from :func:`env_file_text` and :func:`python_snippet_text`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from syncdoctor.probe.analysis import NodeFacts
from syncdoctor.probe.records import CollectiveRow, LinkMeasure, NodeSkew

if TYPE_CHECKING:
    from syncdoctor.probe.report import ProbeReport

__all__ = [
    "DEFAULT_BUCKET_BYTES",
    "Measurements",
    "Recommendation",
    "Recommendations",
    "Term",
    "env_file_text",
    "measurements_from_probe",
    "measurements_from_records",
    "python_snippet_text",
    "recommend",
    "recommend_timeouts",
]

DEFAULT_BUCKET_BYTES = 25 << 20  # DistributedDataParallel(bucket_cap_mb=25)
LOAD_FACTOR, LOAD_ALLOWANCE_S = 2.0, 600.0
SKEW_FACTOR = 4.0
CONNECT_ALLOWANCE_S = 60.0
STARTUP_MIN_S = 120
COLLECTIVE_FACTOR = 10.0
COLLECTIVE_ALLOWANCE_S = 30.0
STEP_FACTOR, STEP_ALLOWANCE_S = 3.0, 30.0
STEADY_MIN_S = 60
ROUND_S = 10


def _size(value: float) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{int(value)}B"


def _rate(value: float) -> str:
    return f"{value / 1e6:.3g} MB/s" if value < 1e9 else f"{value / 1e9:.3g} GB/s"


@dataclass(frozen=True)
class Measurements:
    """What was measured, as plain data.

    Attributes:
        source: where the numbers come from (a probe report path, "a local measurement").
        nodes, ranks, backend: the measured job.
        startup_skew_s: how much later than the first the last node's ranks arrived (clock-corrected);
            skew_node: that node's label.
        rank_startup_s: the longest time a rank took from process start to joining (imports included).
        all_reduce_bytes, all_reduce_worst_bw: the largest measured all_reduce size and the bandwidth the
            slowest rank achieved at it (bytes / that rank's time), bytes/s.
        slowest_link_bw, slowest_link: the slowest inter-node point-to-point bandwidth and its ends.
        load_time_s, step_time_s: measured by the user (checkpoint loading, one training step).
        env, per_node_env, env_reasons: interface/HCA settings and why (from the probe).
        notes: caveats to show.
    """

    source: str
    nodes: int = 1
    ranks: int = 1
    backend: str = "gloo"
    startup_skew_s: float | None = None
    skew_node: str | None = None
    rank_startup_s: float | None = None
    all_reduce_bytes: int | None = None
    all_reduce_worst_bw: float | None = None
    slowest_link_bw: float | None = None
    slowest_link: str | None = None
    load_time_s: float | None = None
    step_time_s: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    per_node_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    env_reasons: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Term:
    """One addend of a timeout: its value and the measurement (or allowance) it comes from."""

    seconds: float
    why: str
    measured: bool


@dataclass(frozen=True)
class Recommendation:
    startup_timeout_s: int
    steady_timeout_s: int
    startup_terms: tuple[Term, ...]
    steady_terms: tuple[Term, ...]
    startup_rule: str
    steady_rule: str
    env: Mapping[str, str]
    per_node_env: Mapping[str, Mapping[str, str]]
    env_reasons: Mapping[str, str]
    notes: tuple[str, ...]
    backend: str
    source: str

    def explain(self) -> list[str]:
        """The derivation, one line per number."""
        lines = [f"start-up and loading timeout: {self.startup_timeout_s} s"]
        lines += [f"  {'+' if i else '='} {t.seconds:g} s: {t.why}" for i, t in enumerate(self.startup_terms)]
        lines.append(f"  ({self.startup_rule})")
        lines.append(f"steady-state timeout: {self.steady_timeout_s} s")
        lines += [f"  {'+' if i else '='} {t.seconds:g} s: {t.why}" for i, t in enumerate(self.steady_terms)]
        lines.append(f"  ({self.steady_rule})")
        return lines

    def env_file(self) -> str:
        """``KEY=value`` lines with ``#`` comments; load with ``set -a; . FILE; set +a``."""
        return env_file_text(f"Written by `syncdoctor recommend` from {self.source}.", self.env, self.env_reasons,
                             self.per_node_env, self.explain(), self.startup_timeout_s, self.steady_timeout_s,
                             self.notes)

    def python_snippet(self) -> str:
        """Python that applies both timeouts (reads the env file's values, with these as defaults)."""
        return python_snippet_text(f"Written by `syncdoctor recommend` from {self.source}.",
                                   self.startup_timeout_s, self.steady_timeout_s, self.backend)

    def to_json(self) -> dict[str, Any]:
        def terms(items: Sequence[Term]) -> list[dict[str, Any]]:
            return [{"seconds": t.seconds, "why": t.why, "measured": t.measured} for t in items]

        return {
            "startup_timeout_s": self.startup_timeout_s,
            "steady_timeout_s": self.steady_timeout_s,
            "startup_terms": terms(self.startup_terms),
            "steady_terms": terms(self.steady_terms),
            "startup_rule": self.startup_rule,
            "steady_rule": self.steady_rule,
            "env": dict(self.env),
            "per_node_env": {k: dict(v) for k, v in self.per_node_env.items()},
            "env_reasons": dict(self.env_reasons),
            "notes": list(self.notes),
            "backend": self.backend,
            "source": self.source,
        }


def env_file_text(header: str, env: Mapping[str, str], reasons: Mapping[str, str],
                  per_node_env: Mapping[str, Mapping[str, str]], explanation: Sequence[str], startup_timeout_s: int,
                  steady_timeout_s: int, notes: Sequence[str]) -> str:
    """``KEY=value`` lines with ``#`` comments, loaded with ``set -a; . FILE; set +a``."""
    lines = [f"# {header}"]
    for name, value in env.items():
        if name in reasons:
            lines.append(f"# {reasons[name]}")
        lines.append(f"{name}={value}")
    for label, variables in per_node_env.items():
        for name, value in variables.items():
            lines.append(f"# on {label} only: {name}={value}")
    lines += [f"# {line.strip()}" for line in explanation if line.strip()]
    lines.append(f"SYNCDOCTOR_STARTUP_TIMEOUT_S={startup_timeout_s}")
    lines.append(f"SYNCDOCTOR_STEADY_TIMEOUT_S={steady_timeout_s}")
    lines += [f"# note: {note}" for note in notes]
    return "\n".join(lines) + "\n"


def python_snippet_text(header: str, startup_timeout_s: int, steady_timeout_s: int, backend: str) -> str:
    """Python that applies both timeouts, reading the env file's values with these as defaults."""
    return (
        f"# {header}\n"
        "# A long timeout while starting and loading, a tighter one once training runs.\n"
        "import datetime\n"
        "import os\n"
        "\n"
        "import torch.distributed as dist\n"
        "from torch.distributed.distributed_c10d import _set_pg_timeout  # a private torch API\n"
        "\n"
        "STARTUP_TIMEOUT = datetime.timedelta(\n"
        f"    seconds=float(os.environ.get(\"SYNCDOCTOR_STARTUP_TIMEOUT_S\", \"{startup_timeout_s}\")))\n"
        "STEADY_TIMEOUT = datetime.timedelta(\n"
        f"    seconds=float(os.environ.get(\"SYNCDOCTOR_STEADY_TIMEOUT_S\", \"{steady_timeout_s}\")))\n"
        "\n"
        f"dist.init_process_group(backend=\"{backend}\", timeout=STARTUP_TIMEOUT)\n"
        "# ... build the model, load the checkpoint, run the first step ...\n"
        "_set_pg_timeout(STEADY_TIMEOUT)  # later collectives of the default group; repeat per new_group()\n"
    )


def _round_up(seconds: float, minimum: int) -> int:
    return max(minimum, math.ceil(seconds / ROUND_S - 1e-9) * ROUND_S)


def recommend_timeouts(m: Measurements, *, bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> Recommendation:
    """The two timeouts, with the interface settings the measurements carry (``syncdoctor recommend``)."""
    notes = list(m.notes)
    startup: list[Term] = []
    if m.load_time_s is not None:
        startup.append(Term(LOAD_FACTOR * m.load_time_s,
                            f"{LOAD_FACTOR:g} x the measured load time {m.load_time_s:g} s", True))
    else:
        startup.append(Term(LOAD_ALLOWANCE_S, "loading allowance (load time not measured: pass --load-time SECONDS)",
                            False))
    if m.startup_skew_s is not None:
        who = f" ({m.skew_node}'s ranks arrived last)" if m.skew_node and m.startup_skew_s > 0 else ""
        startup.append(Term(round(SKEW_FACTOR * m.startup_skew_s, 2),
                            f"{SKEW_FACTOR:g} x the measured start-up skew {m.startup_skew_s:.2f} s{who}", True))
    else:
        notes.append("start-up skew not measured: run `syncdoctor probe` on every node of the job")
    startup.append(Term(CONNECT_ALLOWANCE_S, "connection set-up at the first collective (NCCL connects lazily)",
                        False))
    startup_s = _round_up(sum(t.seconds for t in startup), STARTUP_MIN_S)

    steady: list[Term] = []
    if m.all_reduce_bytes and m.all_reduce_worst_bw:
        t = bucket_bytes / m.all_reduce_worst_bw
        steady.append(Term(round(COLLECTIVE_FACTOR * t, 2), (
            f"{COLLECTIVE_FACTOR:g} x {t:.3g} s, one {_size(bucket_bytes)} gradient bucket all_reduced at "
            f"{_rate(m.all_reduce_worst_bw)}, the slowest rank's bandwidth at the largest measured all_reduce "
            f"({_size(m.all_reduce_bytes)} on {m.ranks} ranks)"), True))
    elif m.slowest_link_bw:
        t = 2 * bucket_bytes / m.slowest_link_bw
        steady.append(Term(round(COLLECTIVE_FACTOR * t, 2), (
            f"{COLLECTIVE_FACTOR:g} x {t:.3g} s, twice a {_size(bucket_bytes)} gradient bucket over the slowest "
            f"link ({m.slowest_link}, {_rate(m.slowest_link_bw)})"), True))
    else:
        steady.append(Term(COLLECTIVE_ALLOWANCE_S, "collective allowance (no collective or link measured)", False))
    if m.step_time_s is not None:
        steady.append(Term(STEP_FACTOR * m.step_time_s,
                           f"{STEP_FACTOR:g} x the measured step time {m.step_time_s:g} s", True))
    else:
        steady.append(Term(STEP_ALLOWANCE_S, "step-time allowance (step time not measured: pass --step-time SECONDS)",
                           False))
    steady_s = _round_up(sum(t.seconds for t in steady), STEADY_MIN_S)
    steady_rule = f"sum rounded up to {ROUND_S} s, at least {STEADY_MIN_S} s"
    if steady_s > startup_s:
        startup_s = steady_s
        startup_rule = f"raised to the steady-state timeout, which is larger; at least {STARTUP_MIN_S} s"
    else:
        startup_rule = f"sum rounded up to {ROUND_S} s, at least {STARTUP_MIN_S} s"
    if m.nodes < 2:
        notes.append("measured on one node: the collective times are lower bounds for a multi-node job")
    return Recommendation(
        startup_timeout_s=startup_s, steady_timeout_s=steady_s, startup_terms=tuple(startup),
        steady_terms=tuple(steady), startup_rule=startup_rule, steady_rule=steady_rule, env=dict(m.env),
        per_node_env={k: dict(v) for k, v in m.per_node_env.items()}, env_reasons=dict(m.env_reasons),
        notes=tuple(dict.fromkeys(notes)), backend=m.backend, source=m.source,
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def measurements_from_probe(
    report: ProbeReport, source: str, *, load_time_s: float | None = None, step_time_s: float | None = None
) -> Measurements:
    """The measurements of a probe report, with the load and step times the user measured."""
    notes: list[str] = []
    if not report.finished:
        notes.append("the probe did not finish: some measurements may be missing")
    join = report.join
    for missing in join.missing if join else ():
        notes.append(f"a node never joined the probe: {missing}")
    advice = report.recommendations
    reasons = {k: v for k, v in advice.reasons.items() if k not in ("startup", "steady")} if advice else {}
    notes += list(advice.notes) if advice else []
    startups = join.arrival_startups() if join else []
    return measurements_from_records(
        source,
        skews=[s.to_json() for s in report.skews],
        collectives=[r.to_json() for r in report.collectives],
        links=[link.to_json() for link in report.links],
        nodes=len(report.nodes) or 1,
        ranks=report.registered or 1,
        backend=str(report.backend or (advice.backend if advice else "") or "gloo"),
        rank_startup_s=max(startups) if startups else None,
        load_time_s=load_time_s,
        step_time_s=step_time_s,
        env=dict(advice.env) if advice else {},
        per_node_env={k: dict(v) for k, v in advice.per_node_env.items()} if advice else {},
        env_reasons=reasons,
        notes=notes,
    )


def _mappings(items: Any) -> list[Mapping[str, Any]]:
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, (list, tuple)) else []


def measurements_from_records(
    source: str,
    *,
    skews: Sequence[Mapping[str, Any]] = (),
    collectives: Sequence[Mapping[str, Any]] = (),
    links: Sequence[Mapping[str, Any]] = (),
    nodes: int = 1,
    ranks: int = 1,
    backend: str = "gloo",
    rank_startup_s: float | None = None,
    load_time_s: float | None = None,
    step_time_s: float | None = None,
    env: Mapping[str, str] | None = None,
    per_node_env: Mapping[str, Mapping[str, str]] | None = None,
    env_reasons: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
) -> Measurements:
    """Measurements from the probe's records in their JSON form (``NodeSkew``, ``CollectiveRow`` and
    ``LinkMeasure`` ``.to_json()``, as in a probe report's ``clock.skew``, ``collectives`` and ``links``).

    The one derivation of the timeouts' inputs: :func:`measurements_from_probe` reads a report through it,
    and the probe's own recommendations (:func:`recommend`) pass their in-memory records.
    Malformed entries are skipped.
    """
    timed = [s for s in _mappings(skews) if _number(s.get("last_s")) is not None]
    skew_s = skew_node = None
    if timed:
        latest = max(timed, key=lambda s: float(s["last_s"]))
        skew_s, skew_node = float(latest["last_s"]), str(latest.get("label", latest.get("node")))
    rows = [r for r in _mappings(collectives) if r.get("op") == "all_reduce"
            and _number(r.get("size")) and _number(r.get("time_max_s"))]
    ar_bytes = ar_bw = None
    if rows:
        largest = max(rows, key=lambda r: float(r["size"]))
        ar_bytes = int(largest["size"])
        ar_bw = float(largest["size"]) / float(largest["time_max_s"])
    inter = [link for link in _mappings(links) if link.get("kind") == "inter"
             and (_number(link.get("bandwidth")) or 0) > 0]
    link_bw = link_name = None
    if inter:
        slowest = min(inter, key=lambda link: float(link["bandwidth"]))
        link_bw = float(slowest["bandwidth"])
        link_name = f"node {slowest.get('a_node')} - node {slowest.get('b_node')}"
    return Measurements(
        source=source,
        nodes=nodes,
        ranks=ranks,
        backend=backend,
        startup_skew_s=skew_s,
        skew_node=skew_node,
        rank_startup_s=rank_startup_s,
        all_reduce_bytes=ar_bytes,
        all_reduce_worst_bw=ar_bw,
        slowest_link_bw=link_bw,
        slowest_link=link_name,
        load_time_s=load_time_s,
        step_time_s=step_time_s,
        env=dict(env or {}),
        per_node_env={k: dict(v) for k, v in (per_node_env or {}).items()},
        env_reasons=dict(env_reasons or {}),
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class Recommendations:
    """What to set for the real job.

    Attributes:
        env: variables for every node; per_node_env: variables that differ per node (label -> vars).
        startup_timeout_s, steady_timeout_s: the two process group timeouts.
        reasons: how each value was derived, in words (variable or timeout name -> text).
        notes: caveats (unknown interfaces, nodes without IB ports...).
        backend: the backend the snippet initialises.
    """

    env: Mapping[str, str] = field(default_factory=dict)
    per_node_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    startup_timeout_s: int = STARTUP_MIN_S
    steady_timeout_s: int = STEADY_MIN_S
    reasons: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    backend: str = "nccl"

    def env_file(self) -> str:
        """An env file (``KEY=value`` lines, ``#`` comments) usable with ``set -a; . FILE; set +a``: the same
        writer as ``syncdoctor recommend``'s (:func:`env_file_text`)."""
        explanation = [self.reasons.get("startup", ""), self.reasons.get("steady", "")]
        return env_file_text("Written by `syncdoctor probe --emit-env`: settings derived from the "
                                    "measurements.", self.env, self.reasons, self.per_node_env, explanation,
                                    self.startup_timeout_s, self.steady_timeout_s, self.notes)

    def python_snippet(self) -> str:
        """How to use the two timeouts with the torch API: the same snippet as ``syncdoctor recommend``'s."""
        return python_snippet_text("Written by `syncdoctor probe --emit-env`.", self.startup_timeout_s,
                                          self.steady_timeout_s, self.backend)

    def to_json(self) -> dict[str, Any]:
        return {
            "env": dict(self.env),
            "per_node_env": {k: dict(v) for k, v in self.per_node_env.items()},
            "startup_timeout_s": self.startup_timeout_s,
            "steady_timeout_s": self.steady_timeout_s,
            "reasons": dict(self.reasons),
            "notes": list(self.notes),
            "backend": self.backend,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Recommendations:
        """Read :meth:`to_json`'s form back (missing keys take their defaults); ValueError/TypeError on values
        of the wrong type."""
        return cls(
            env={str(k): str(v) for k, v in dict(data.get("env") or {}).items()},
            per_node_env={str(k): {str(a): str(b) for a, b in dict(v or {}).items()}
                          for k, v in dict(data.get("per_node_env") or {}).items()},
            startup_timeout_s=int(data.get("startup_timeout_s", STARTUP_MIN_S)),
            steady_timeout_s=int(data.get("steady_timeout_s", STEADY_MIN_S)),
            reasons={str(k): str(v) for k, v in dict(data.get("reasons") or {}).items()},
            notes=tuple(str(n) for n in data.get("notes") or ()),
            backend=str(data.get("backend") or "nccl"),
        )


def _interfaces(nodes: Sequence[NodeFacts], env: dict[str, str], per_node: dict[str, dict[str, str]],
                reasons: dict[str, str], notes: list[str]) -> None:
    if len(nodes) < 2:
        notes.append("one node: no interface between nodes to recommend")
        return
    names: dict[str, str] = {}
    for node in nodes:
        iface = node.facts.interface(node.interface) if node.facts and node.interface else None
        if node.interface is None:
            notes.append(f"the interface {node.label} uses to reach the master is unknown")
        elif iface is not None and iface.loopback:
            notes.append(f"{node.label} reaches the master through loopback ({node.interface})")
        else:
            names[node.label] = node.interface
    if not names:
        return
    unique = sorted(set(names.values()))
    env["NCCL_SOCKET_IFNAME"] = "=" + ",".join(unique)
    reasons["NCCL_SOCKET_IFNAME"] = "the interface every node used to reach the master (exact names)"
    if len(unique) == 1:
        env["GLOO_SOCKET_IFNAME"] = unique[0]
        reasons["GLOO_SOCKET_IFNAME"] = "the same interface on every node"
    else:
        for label, name in names.items():
            per_node.setdefault(label, {})["GLOO_SOCKET_IFNAME"] = name


def _hcas(nodes: Sequence[NodeFacts], env: dict[str, str], reasons: dict[str, str], notes: list[str]) -> None:
    known = [n for n in nodes if n.facts is not None]
    active = {
        n.label: {f"{p.device}:{p.port}" for p in n.facts.ib_ports if p.active}  # type: ignore[union-attr]
        for n in known
    }
    if not any(active.values()):
        return
    common = set.intersection(*active.values()) if active else set()
    for label, ports in active.items():
        if not ports:
            notes.append(f"{label} has no ACTIVE IB/RoCE port: NCCL falls back to sockets there")
    if common:
        env["NCCL_IB_HCA"] = "=" + ",".join(sorted(common))
        reasons["NCCL_IB_HCA"] = "the IB/RoCE ports ACTIVE on every node"


def _reason(name: str, seconds: int, terms: Sequence[Term], rule: str) -> str:
    """One line (it becomes a comment of the env file and the snippet): the timeout and its terms."""
    parts = " + ".join(f"{t.seconds:g} s ({t.why})" for t in terms)
    return (f"{name}: {seconds} s = {parts}; {rule} (as `syncdoctor recommend` on the probe's report, "
            "which also takes measured load and step times: docs/recommend.md)")


def recommend(
    nodes: Sequence[NodeFacts],
    skews: Sequence[NodeSkew] = (),
    rows: Sequence[CollectiveRow] = (),
    links: Sequence[LinkMeasure] = (),
    *,
    backend: str = "nccl",
    bucket_bytes: int = DEFAULT_BUCKET_BYTES,
    ranks: int | None = None,
) -> Recommendations:
    """Interfaces, HCAs and the start-up/steady-state timeouts from the measurements.

    The timeouts are :func:`recommend_timeouts`'s for the same skews, collective rows and
    links (``bucket_bytes``: the gradient bucket the steady-state timeout is derived for; ``ranks``: the
    job's rank count, for the reasons' text, by default the collective rows').
    """
    env: dict[str, str] = {}
    per_node: dict[str, dict[str, str]] = {}
    reasons: dict[str, str] = {}
    notes: list[str] = []
    _interfaces(nodes, env, per_node, reasons, notes)
    _hcas(nodes, env, reasons, notes)

    measured = measurements_from_records(
        "the probe's measurements",
        skews=[s.to_json() for s in skews],
        collectives=[r.to_json() for r in rows],
        links=[link.to_json() for link in links],
        nodes=len(nodes) or 1,
        ranks=ranks or max((r.ranks for r in rows), default=1),
        backend=backend,
    )
    timeouts = recommend_timeouts(measured, bucket_bytes=bucket_bytes)
    reasons["startup"] = _reason("start-up and loading", timeouts.startup_timeout_s, timeouts.startup_terms,
                                 timeouts.startup_rule)
    reasons["steady"] = _reason("steady state", timeouts.steady_timeout_s, timeouts.steady_terms,
                                timeouts.steady_rule)
    notes += [n for n in timeouts.notes if n not in notes]
    return Recommendations(env, per_node, timeouts.startup_timeout_s, timeouts.steady_timeout_s, reasons,
                           tuple(notes), backend)
