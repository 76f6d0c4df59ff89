"""What a multi-rank run returns: each rank's outcome and the report shown when a run fails or hangs.
Pure: plain data and text rendering, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from syncdoctor.testing._hang import Diagnosis, Frame, ProgressRecord

__all__ = ["MultiRankFailure", "MultiRankResult", "RankResult"]


class MultiRankFailure(AssertionError):
    """A multi-rank run failed or hung; the message is the full report."""

    def __init__(self, result: MultiRankResult) -> None:
        super().__init__(result.report())
        self.result = result


@dataclass(frozen=True)
class RankResult:
    """How one rank ended.

    ``status``: ``ok``; ``failed`` (raised: ``error`` holds the traceback); ``crashed`` (exited without
    a result, e.g. killed by a signal); ``hung`` (still running at the timeout); ``stopped`` (still
    running ``grace_s`` after another rank failed: it was waiting for the failed one).
    """

    rank: int
    pid: int
    status: str
    returncode: int | None
    value: Any = None
    error_type: str = ""
    error: str = ""
    output: str = ""
    stack: str = ""
    where: Frame | None = None
    progress: ProgressRecord | None = None
    failed_at: float | None = None  # wall-clock time of the failure, when the rank reported one


@dataclass(frozen=True)
class MultiRankResult:
    world_size: int
    timeout_s: float
    elapsed_s: float
    timed_out: bool  # the function (or, with startup_s None, the start-up) ran past its limit
    ranks: tuple[RankResult, ...]
    diagnosis: Diagnosis = field(default_factory=lambda: Diagnosis((), ()))
    function: str = ""
    startup_s: float | None = None  # seconds until every rank was ready to run the function
    startup_timeout_s: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.status == "ok" for r in self.ranks)

    @property
    def values(self) -> list[Any]:
        return [r.value for r in self.ranks]

    @property
    def hung_ranks(self) -> list[int]:
        return [r.rank for r in self.ranks if r.status == "hung"]

    @property
    def failed_ranks(self) -> list[int]:
        """Ranks that raised or crashed, the first to fail first."""
        failed = [r for r in self.ranks if r.status in ("failed", "crashed")]
        failed.sort(key=lambda r: (r.failed_at is None, r.failed_at or 0.0, r.rank))
        return [r.rank for r in failed]

    def check(self) -> list[Any]:
        """The values by rank, or :class:`MultiRankFailure` with the report."""
        if not self.ok:
            raise MultiRankFailure(self)
        return self.values

    def headline(self) -> str:
        parts = []
        for index, rank in enumerate(self.failed_ranks):
            result = self.ranks[rank]
            what = (
                f"rank {rank} failed with {result.error_type}"
                if result.status == "failed"
                else f"rank {rank} crashed (exit code {result.returncode})"
            )
            if index == 0 and len(self.failed_ranks) > 1:
                what += " first"
            parts.append(what)
        hung = self.hung_ranks
        if hung:
            names = ", ".join(str(r) for r in hung)
            plural = "s" if len(hung) > 1 else ""
            if self.startup_s is None:
                parts.append(
                    f"start-up timed out after {self.startup_timeout_s:g} s: rank{plural} {names} not ready "
                    "(starting Python, importing, or joining the process group)"
                )
            else:
                parts.append(f"timed out after {self.timeout_s:g} s with rank{plural} {names} running")
        if self.diagnosis.summary:
            parts.append(self.diagnosis.summary)
        stopped = [r.rank for r in self.ranks if r.status == "stopped"]
        if stopped:
            parts.append("stopped rank(s) " + ", ".join(str(r) for r in stopped) + " still waiting for it")
        return "; ".join(parts) if parts else f"all {self.world_size} ranks passed"

    def report(self) -> str:
        lines = [f"{self.function or 'function'} on {self.world_size} ranks: {self.headline()}"]
        if self.startup_s is not None:
            lines.append(f"(every rank was ready after {self.startup_s:.1f} s; the run took {self.elapsed_s:.1f} s)")
        if self.diagnosis.lines:
            lines.append("where the ranks are:")
            lines.extend(f"  {line}" for line in self.diagnosis.lines)
        if self.diagnosis.watch:
            lines.append("syncdoctor.watch's detector on the same state:")
            lines.extend(f"  {line}" for line in self.diagnosis.watch)
        order = self.failed_ranks + [r.rank for r in self.ranks if r.status in ("hung", "stopped")]
        for rank in order:
            result = self.ranks[rank]
            lines.append("")
            title = f"--- rank {result.rank} (pid {result.pid}): {result.status}"
            if result.where is not None and result.status in ("hung", "stopped"):
                title += f" at {result.where}"
            lines.append(title)
            if result.error:
                lines.append(result.error.rstrip())
            if result.stack:
                lines.append("Python stack of its main thread (most recent call first):")
                lines.append(result.stack.rstrip())
            if result.output.strip() and result.status != "stopped":
                lines.append("output (last lines):")
                lines.append(result.output.rstrip())
        return "\n".join(lines)
