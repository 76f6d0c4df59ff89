"""Settings derived from the probe's measurements, and the env file and Python snippet that apply them. Pure.

- Interfaces: the interface each node used to reach the master, as ``NCCL_SOCKET_IFNAME`` (exact names,
  ``=a,b``, so every node finds its own) and ``GLOO_SOCKET_IFNAME`` (one exact name; per node when the names
  differ, since Gloo wants the same number of names everywhere).
- HCAs: the IB/RoCE ports ACTIVE on every node, as ``NCCL_IB_HCA==dev:port,...``.
- Timeouts: a long one for start-up and loading and a tighter steady-state one, computed by
  :func:`syncdoctor.recommend.recommend` (the engine of ``syncdoctor recommend``, whose docstring gives
  the formulas) from :func:`syncdoctor.recommend.measurements_from_records` of these same records, so the
  probe and ``syncdoctor recommend`` on the probe's report give the same numbers. Load and step times are
  not measured by the probe: the engine's allowances stand in for them. Switching from one timeout to the
  other uses ``torch.distributed.distributed_c10d._set_pg_timeout``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from syncdoctor import recommend as engine
from syncdoctor.probe.analysis import NodeFacts
from syncdoctor.probe.records import CollectiveRow, LinkMeasure, NodeSkew

__all__ = ["Recommendations", "recommend"]

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
    startup_timeout_s: int = engine.STARTUP_MIN_S
    steady_timeout_s: int = engine.STEADY_MIN_S
    reasons: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    backend: str = "nccl"

    def env_file(self) -> str:
        """An env file (``KEY=value`` lines, ``#`` comments) usable with ``set -a; . FILE; set +a``: the same
        writer as ``syncdoctor recommend``'s (:func:`syncdoctor.recommend.env_file_text`)."""
        explanation = [self.reasons.get("startup", ""), self.reasons.get("steady", "")]
        return engine.env_file_text("Written by `syncdoctor probe --emit-env`: settings derived from the "
                                    "measurements.", self.env, self.reasons, self.per_node_env, explanation,
                                    self.startup_timeout_s, self.steady_timeout_s, self.notes)

    def python_snippet(self) -> str:
        """How to use the two timeouts with the torch API: the same snippet as ``syncdoctor recommend``'s."""
        return engine.python_snippet_text("Written by `syncdoctor probe --emit-env`.", self.startup_timeout_s,
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


def _reason(name: str, seconds: int, terms: Sequence[engine.Term], rule: str) -> str:
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
    bucket_bytes: int = engine.DEFAULT_BUCKET_BYTES,
    ranks: int | None = None,
) -> Recommendations:
    """Interfaces, HCAs and the start-up/steady-state timeouts from the measurements.

    The timeouts are :func:`syncdoctor.recommend.recommend`'s for the same skews, collective rows and
    links (``bucket_bytes``: the gradient bucket the steady-state timeout is derived for; ``ranks``: the
    job's rank count, for the reasons' text, by default the collective rows').
    """
    env: dict[str, str] = {}
    per_node: dict[str, dict[str, str]] = {}
    reasons: dict[str, str] = {}
    notes: list[str] = []
    _interfaces(nodes, env, per_node, reasons, notes)
    _hcas(nodes, env, reasons, notes)

    measured = engine.measurements_from_records(
        "the probe's measurements",
        skews=[s.to_json() for s in skews],
        collectives=[r.to_json() for r in rows],
        links=[link.to_json() for link in links],
        nodes=len(nodes) or 1,
        ranks=ranks or max((r.ranks for r in rows), default=1),
        backend=backend,
    )
    timeouts = engine.recommend(measured, bucket_bytes=bucket_bytes)
    reasons["startup"] = _reason("start-up and loading", timeouts.startup_timeout_s, timeouts.startup_terms,
                                 timeouts.startup_rule)
    reasons["steady"] = _reason("steady state", timeouts.steady_timeout_s, timeouts.steady_terms,
                                timeouts.steady_rule)
    notes += [n for n in timeouts.notes if n not in notes]
    return Recommendations(env, per_node, timeouts.startup_timeout_s, timeouts.steady_timeout_s, reasons,
                           tuple(notes), backend)
