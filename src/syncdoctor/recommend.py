"""The settings a job should use, derived from measurements, each number explained by the measurement it
comes from. Pure: plain data in (:class:`Measurements`), plain data out (:class:`Recommendation`).

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

This is the one place the timeouts are computed: ``syncdoctor probe`` derives its own two timeouts through
:func:`measurements_from_records` and :func:`recommend` too, from the same records a report holds.

Interface and HCA lists are taken from the probe's own recommendations (the interface each node used to
reach the others, the IB ports active on every node), with the probe's reasons.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncdoctor.errors import InputError

__all__ = [
    "DEFAULT_BUCKET_BYTES",
    "Measurements",
    "Recommendation",
    "Term",
    "emit_paths",
    "env_file_text",
    "measurements_from_probe",
    "measurements_from_records",
    "python_snippet_text",
    "recommend",
]

PROBE_SCHEMA = "syncdoctor.probe/1"
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


# --- the one writer of what --emit-env produces (syncdoctor probe and syncdoctor recommend) ------------------


def emit_paths(target: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The env file ``FILE`` and its Python snippet ``FILE.py`` (``NAME_timeouts.py`` when FILE ends in .py)."""
    env_path = Path(target)
    snippet = env_path.with_name(env_path.stem + "_timeouts.py") if env_path.suffix == ".py" else \
        env_path.with_name(env_path.name + ".py")
    return env_path, snippet


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


def write_emitted(target: str | os.PathLike[str], env_text: str, snippet_text: str) -> list[Path]:
    """Write the env file and its snippet (secrets redacted as they leave); raises OSError."""
    from syncdoctor.redact import redact_text

    env_path, snippet = emit_paths(target)
    env_path.parent.mkdir(parents=True, exist_ok=True)
    env_path.write_text(redact_text(env_text))
    snippet.write_text(redact_text(snippet_text))
    return [env_path, snippet]


def _round_up(seconds: float, minimum: int) -> int:
    return max(minimum, math.ceil(seconds / ROUND_S - 1e-9) * ROUND_S)


def recommend(m: Measurements, *, bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> Recommendation:
    """The two timeouts and the interface settings for the measured job."""
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
    doc: Mapping[str, Any], source: str, *, load_time_s: float | None = None, step_time_s: float | None = None
) -> Measurements:
    """Read a probe report (schema ``syncdoctor.probe/1``). Raises :class:`InputError` for anything else."""
    if not isinstance(doc, Mapping):
        raise InputError(f"{source}: not a probe report (a JSON object was expected)")
    schema = doc.get("schema")
    if schema != PROBE_SCHEMA:
        raise InputError(f"{source}: not a probe report of schema {PROBE_SCHEMA} (schema {schema!r})")
    notes: list[str] = []
    if not doc.get("finished"):
        notes.append("the probe did not finish: some measurements may be missing")
    join = doc.get("join") if isinstance(doc.get("join"), Mapping) else {}
    registered = [r for r in join.get("registered") or () if isinstance(r, Mapping)]
    nodes = [n for n in join.get("nodes") or () if isinstance(n, Mapping)]
    for missing in join.get("missing") or ():
        notes.append(f"a node never joined the probe: {missing}")
    recs = doc.get("recommendations") if isinstance(doc.get("recommendations"), Mapping) else {}
    reasons = {str(k): str(v) for k, v in dict(recs.get("reasons") or {}).items() if k not in ("startup", "steady")}
    notes += [str(n) for n in recs.get("notes") or ()]
    clock = doc.get("clock") if isinstance(doc.get("clock"), Mapping) else {}
    startups = [float(r["arrival"]) - float(r["started"]) for r in registered
                if _number(r.get("arrival")) is not None and _number(r.get("started")) is not None]
    return measurements_from_records(
        source,
        skews=clock.get("skew") or (),
        collectives=doc.get("collectives") or (),
        links=doc.get("links") or (),
        nodes=len(nodes) or 1,
        ranks=len(registered) or 1,
        backend=str(doc.get("backend") or recs.get("backend") or "gloo"),
        rank_startup_s=max(startups) if startups else None,
        load_time_s=load_time_s,
        step_time_s=step_time_s,
        env={str(k): str(v) for k, v in dict(recs.get("env") or {}).items()},
        per_node_env={str(k): {str(a): str(b) for a, b in dict(v).items()}
                      for k, v in dict(recs.get("per_node_env") or {}).items()},
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
    and the probe's own recommendations (:mod:`syncdoctor.probe.recommend`) pass their in-memory records.
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
