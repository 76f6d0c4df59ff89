"""``assert_ready()``: the start-up guard run inside the training job right after ``init_process_group``.

Phases, on every rank of the group:

1. facts: this rank's settings, versions, timeout and environment validation (about 50 ms);
2. exchange: each rank posts its facts as JSON under a private prefix of the job's c10d store and reads
   everyone's (the store, not a collective: a misconfigured transport cannot hang this step; ranks that
   do not post within ``wait_s`` are named);
3. consistency: :func:`syncdoctor.guard.consistency.evaluate` over all records, identical on every rank;
4. check collective: if nothing is wrong so far, an all_reduce of a known tensor, waited for at most
   ``check_timeout_s`` and compared element by element with the exact expected sum.

Then every rank raises the same :class:`NotReadyError` (``mode="raise"``) or logs it once on the
group's first rank (``mode="warn"``), and returns a :class:`GuardReport` with the phase times.
Does I/O: store, collective, host facts. torch is imported when the guard runs.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from syncdoctor.errors import SyncdoctorError, UsageError
from syncdoctor.exclude import Suspect, suspects_from_findings
from syncdoctor.guard.consistency import evaluate, hosts_text
from syncdoctor.guard.facts import RankFacts, collect_rank_facts
from syncdoctor.kb import Finding, Severity, sort_findings
from syncdoctor.kb.pages import guard as pages

__all__ = ["GuardReport", "NotReadyError", "assert_ready"]

logger = logging.getLogger(__name__)

_PREFIX = "syncdoctor/guard/"
_CHECK_ELEMENTS = 1024
_calls: dict[str, int] = {}


@dataclass(frozen=True)
class GuardReport:
    """What the guard found and how long it took on this rank.

    ``elapsed_s``: the whole call; ``waited_s``: of that, waiting for the other ranks to post (start-up
    skew, not the guard's cost); ``own_s``: elapsed minus waited, compared with the budget;
    ``phases_s``: facts, exchange, check all_reduce.
    """

    findings: tuple[Finding, ...]
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    elapsed_s: float
    waited_s: float
    phases_s: Mapping[str, float] = field(default_factory=dict)
    facts: Mapping[int, RankFacts] = field(default_factory=dict)

    @property
    def own_s(self) -> float:
        return max(0.0, self.elapsed_s - self.waited_s)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity >= Severity.ERROR)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def suspect_nodes(self) -> list[Suspect]:
        """The nodes to keep out of the next run (a minority of hosts on other versions), from the findings."""
        return suspects_from_findings([f.to_json() for f in self.findings])

    def message(self) -> str:
        """The one error message, identical on every rank."""
        errors = self.errors
        head = (
            f"syncdoctor guard: the job is not ready to train: {len(errors)} error(s) across "
            f"{len(self.ranks)} rank(s) on {len(self.hosts)} host(s)"
            if errors
            else f"syncdoctor guard: {len(self.findings)} warning(s) across {len(self.ranks)} rank(s)"
        )
        lines = [head]
        for finding in self.findings:
            lines.append(f"  {finding.code} {finding.name} ({finding.severity.label}): {finding.title}")
            if finding.fix:
                lines.append(f"      fix: {finding.fix}")
        suspects = self.suspect_nodes
        if suspects:
            lines.append("  suspect nodes (keep them out of the next run): " + ", ".join(
                f"{s.node} ({s.code}: {s.reason})" for s in suspects))
        lines.append("  (syncdoctor explain <code> for details)")
        return "\n".join(lines)


class NotReadyError(SyncdoctorError, RuntimeError):
    """Raised on every rank by ``assert_ready(mode="raise")``; ``.report`` has the findings, ``.suspect_nodes``
    the nodes to exclude (:mod:`syncdoctor.exclude`)."""

    def __init__(self, report: GuardReport) -> None:
        super().__init__(report.message())
        self.report = report
        self.suspect_nodes = report.suspect_nodes


def _check_all_reduce(dist: Any, torch: Any, group: Any, group_rank: int, size: int, backend: str,
                      timeout_s: float) -> tuple[list[Finding], float]:
    device = torch.device("cpu")
    if "nccl" in backend and torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
    base = torch.arange(_CHECK_ELEMENTS, dtype=torch.float32, device=device)
    tensor = base + float(group_rank + 1)
    expected = base * size + float(size * (size + 1) // 2)
    start = time.perf_counter()
    try:
        work = dist.all_reduce(tensor, group=group, async_op=True)
        work.wait(timeout=timedelta(seconds=timeout_s))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    except Exception as exc:
        took = time.perf_counter() - start
        return [pages.ALL_REDUCE_FAILED.finding(
            f"the check all_reduce failed after {took:.2f} s: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}",
            key="all_reduce", evidence={"error": str(exc)[:2000], "seconds": round(took, 3)},
        )], took
    took = time.perf_counter() - start
    wrong = (tensor != expected).nonzero().flatten()
    if wrong.numel():
        index = int(wrong[0])
        return [pages.ALL_REDUCE_WRONG.finding(
            f"the check all_reduce returned {wrong.numel()} wrong element(s) of {_CHECK_ELEMENTS}: element "
            f"{index} is {float(tensor[index])}, expected {float(expected[index])}",
            key="all_reduce", evidence={"wrong": int(wrong.numel()), "first_index": index},
        )], took
    return [], took


def _exchange(store: Any, prefix: str, mine: RankFacts, members: Sequence[int], wait_s: float
              ) -> tuple[dict[int, RankFacts], list[Finding], float]:
    """Post this rank's facts and read everyone's; returns the facts, malformed-record findings, wait time."""
    store.set(f"{prefix}{mine.rank}", json.dumps(mine.to_json()))
    keys = [f"{prefix}{rank}" for rank in members]
    start = time.perf_counter()
    try:
        store.wait(keys, timedelta(seconds=wait_s))
        present = list(members)
    except Exception:  # timed out: name the ranks that never posted
        present = [rank for rank in members if store.check([f"{prefix}{rank}"])]
    waited = time.perf_counter() - start
    facts: dict[int, RankFacts] = {}
    problems: list[Finding] = []
    for rank in present:
        raw = store.get(f"{prefix}{rank}")
        try:
            facts[rank] = RankFacts.from_json(json.loads(raw))
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(pages.RANK_MISSING.finding(
                f"rank {rank} posted unreadable guard facts ({exc}); is it running another syncdoctor version?",
                key=f"unreadable:{rank}", evidence={"odd_ranks": [rank]},
            ))
    return facts, problems, waited


def assert_ready(
    group: Any = None,
    *,
    mode: str = "raise",
    budget_s: float = 2.0,
    wait_s: float = 60.0,
    check_timeout_s: float = 30.0,
    check_collective: bool = True,
    environ: Mapping[str, str] | None = None,
) -> GuardReport:
    """Check that the job is ready to train; call on every rank of ``group`` right after init.

    Args:
        group: the process group (default: the default group).
        mode: ``"raise"``: every rank raises :class:`NotReadyError` when an error is found; ``"warn"``:
            the group's first rank logs the findings and every rank returns the report.
        budget_s: the guard's own time target (excluding the wait for late ranks); exceeding it adds a
            G204 warning with the phase times.
        wait_s: how long to wait for every rank to post its facts before naming the missing ones.
        check_timeout_s: how long the check all_reduce may take before it counts as failed.
        check_collective: set False to skip the check all_reduce.
        environ: the environment to check (default: this process's).
    """
    if mode not in ("raise", "warn"):
        raise UsageError(f"assert_ready: mode must be 'raise' or 'warn', got {mode!r}")
    start = time.perf_counter()
    import torch
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    if not dist.is_initialized():
        raise UsageError("assert_ready() must be called after torch.distributed.init_process_group()")
    group = group if group is not None else dist.group.WORLD
    members = tuple(dist.get_process_group_ranks(group))
    rank = dist.get_rank()
    if rank not in members:
        raise UsageError(f"assert_ready: rank {rank} is not a member of the given group")
    backend = str(dist.get_backend(group))
    group_key = ",".join(str(r) for r in members) if len(members) < 64 else f"{len(members)}:{members[0]}"
    _calls[group_key] = call = _calls.get(group_key, 0) + 1
    prefix = f"{_PREFIX}{call}/{group_key}/"

    mine = collect_rank_facts(rank, group, backend, environ)
    after_facts = time.perf_counter()
    facts, findings, waited = _exchange(c10d._get_default_store(), prefix, mine, members, wait_s)
    after_exchange = time.perf_counter()
    findings += evaluate(facts, members, backend)
    check_s = 0.0
    if check_collective and not any(f.severity >= Severity.ERROR for f in findings):
        problems, check_s = _check_all_reduce(dist, torch, group, members.index(rank), len(members), backend,
                                              check_timeout_s)
        findings += problems
    end = time.perf_counter()
    phases = {"facts": after_facts - start, "exchange": after_exchange - after_facts - waited,
              "wait_for_ranks": waited, "check_all_reduce": check_s}
    own = (end - start) - waited
    if own > budget_s:
        findings.append(pages.GUARD_SLOW.finding(
            f"the guard took {own:.2f} s on rank {rank} ({hosts_text(facts, [rank]) if rank in facts else ''}) "
            f"against a budget of {budget_s:g} s: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()),
            key=f"slow:{rank}", evidence={"phases_s": {k: round(v, 3) for k, v in phases.items()}},
        ))
    hosts = tuple(dict.fromkeys(f.where for f in facts.values()))
    report = GuardReport(tuple(sort_findings(findings)), members, hosts, end - start, waited, phases, facts)
    if report.errors and mode == "raise":
        raise NotReadyError(report)
    if report.findings and rank == members[0]:
        logger.warning("%s", report.message())
    logger.debug("guard on rank %d: %.3f s (%.3f s waiting for other ranks)", rank, end - start, waited)
    return report
