"""Configuration of ``syncdoctor probe``: one dataclass, plus parsers for sizes and collective names. Pure.

Layering: defaults here < command-line options (``syncdoctor.cli.probe``). The test hooks (``inject_wrong``,
``clock_offset_s``, ``start_delay_s``, ``hang_stage``) are read from ``SYNCDOCTOR_PROBE_*`` variables by the CLI
and are documented in docs/probe.md as test hooks, not as user options.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from syncdoctor.errors import UsageError
from syncdoctor.probe.recommend import DEFAULT_BUCKET_BYTES

__all__ = [
    "DEFAULT_OPS",
    "DEFAULT_SIZES",
    "OPS",
    "QUICK_SIZES",
    "ProbeConfig",
    "parse_bytes",
    "parse_ops",
    "parse_sizes",
    "split_names",
]

# The collectives the probe knows, in the order it runs them.
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
DEFAULT_OPS = OPS

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30,
          "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}
_BYTES_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_bytes(text: str) -> int:
    """``"64M"`` -> 67108864. Units K/M/G (and KB/KiB...) are powers of 1024, like nccl-tests' ``-b/-e``."""
    match = _BYTES_RE.match(text)
    if not match or match.group(2).upper() not in _UNITS:
        raise UsageError(f"not a byte size: {text!r} (use e.g. 4096, 64K, 16M, 1G)")
    value = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if value < 1 or value != int(value):
        raise UsageError(f"not a whole positive number of bytes: {text!r}")
    return int(value)


def parse_sizes(text: str, factor: int = 4) -> tuple[int, ...]:
    """A sweep ``"1K:64M"`` (times ``factor`` from the first to the last, like nccl-tests ``-b -e -f``),
    ``"1K:64M:2"`` (explicit factor) or a list ``"4K,1M,16M"``. Sorted, without duplicates."""
    text = text.strip()
    if not text:
        raise UsageError("--sizes is empty")
    if ":" in text:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise UsageError(f"--sizes {text!r}: use FIRST:LAST or FIRST:LAST:FACTOR")
        first, last = parse_bytes(parts[0]), parse_bytes(parts[1])
        if len(parts) == 3:
            try:
                factor = int(parts[2])
            except ValueError:
                raise UsageError(f"--sizes {text!r}: the factor must be an integer") from None
        if factor < 2:
            raise UsageError(f"--sizes {text!r}: the factor must be at least 2")
        if last < first:
            raise UsageError(f"--sizes {text!r}: the last size is smaller than the first")
        sizes = []
        size = first
        while size <= last:
            sizes.append(size)
            size *= factor
        return tuple(sizes)
    return tuple(sorted({parse_bytes(part) for part in text.split(",") if part.strip()}))


def parse_ops(text: str) -> tuple[str, ...]:
    """``"all_reduce,broadcast"`` (also ``allreduce``, ``all-reduce``, ``alltoall``); ``"all"`` for every one."""
    if text.strip().lower() == "all":
        return OPS
    wanted = []
    for part in text.split(","):
        name = part.strip().lower().replace("-", "_")
        if not name:
            continue
        canonical = next((op for op in OPS if op.replace("_", "") == name.replace("_", "")), None)
        if canonical is None:
            raise UsageError(f"unknown collective {part.strip()!r}; use {', '.join(OPS)} or all")
        if canonical not in wanted:
            wanted.append(canonical)
    if not wanted:
        raise UsageError("--ops names no collective")
    return tuple(op for op in OPS if op in wanted)


# Modest defaults: CPU/gloo over a 10 GbE-class link does 16M in tens of milliseconds.
DEFAULT_SIZES = parse_sizes("1K:16M")
QUICK_SIZES = parse_sizes("1K:1M")


@dataclass(frozen=True)
class ProbeConfig:
    """What the probe measures and how long it may take.

    Attributes:
        backend: ``gloo``, ``nccl`` or ``auto`` (nccl when CUDA and NCCL are available, else gloo).
        sizes: collective sizes in bytes (the nccl-tests "size" column: the largest buffer of the op).
        ops: collectives to run (names from :data:`OPS`).
        join_timeout_s: how long ranks wait for every rank to register before naming the missing ones.
        stage_timeout_s: limit of each measuring stage (also the process group timeout).
        warmup: untimed iterations per size; max_iters: cap of timed iterations per size (the count adapts
            to ``target_time_s`` per size, at least 1).
        target_time_s: timed seconds aimed at per collective size and per link direction.
        latency_iters: ping-pongs per link for latency (small messages of ``latency_bytes``).
        link_bytes: largest bandwidth message per link direction; the size adapts to ``target_time_s``.
        min_link_bytes: smallest bandwidth message (large enough to pass token-bucket bursts).
        link_trials: timed transfers per link direction and pass; the fastest counts.
        link_passes: times the whole link schedule runs; per direction the best pass counts.
        link_confirm_passes: extra passes over the links that still look slow (a busy host, not the
            link, may have slowed them); a real limit stays slow, a passing disturbance does not.
        clock_samples: ping-pongs per node for the clock offset (the minimum-RTT sample wins).
        slow_ratio: a link is slow below this fraction of its reference (median of comparable links).
        skew_warn_s: start-up skew above which a node is reported as late.
        bucket_bytes: the gradient bucket the steady-state timeout is derived for (DDP's default, as
            ``syncdoctor recommend``'s ``--bucket-bytes``).
        host_names: names of the nodes in node-rank order (``--hosts``), used to name nodes that never joined.
        expected_nodes: number of nodes the job should have (``--nnodes``), None when the launcher's is right.
        json_path, emit_env_path: output files (None: not written).
        fail_on: ``error`` (default) or ``warning``: the lowest severity of a finding that makes the reporting
            rank exit 1 (a failed stage exits 4 whatever it is).
        quick: fewer sizes and iterations.
        inject_wrong: test hook ``"op"`` or ``"op@rank"``: flip one output element of that op's check.
        clock_offset_s: test hook: add this to every wall-clock reading of this process.
        start_delay_s: test hook: sleep this long before joining (a late node).
        hang_stage: test hook ``"stage"`` or ``"stage@rank"``: sleep past the stage timeout in that stage.
    """

    backend: str = "auto"
    sizes: tuple[int, ...] = DEFAULT_SIZES
    ops: tuple[str, ...] = DEFAULT_OPS
    join_timeout_s: float = 60.0
    stage_timeout_s: float = 120.0
    warmup: int = 1
    max_iters: int = 20
    target_time_s: float = 0.15
    latency_iters: int = 20
    link_bytes: int = 16 << 20
    min_link_bytes: int = 1 << 20
    link_trials: int = 3
    link_passes: int = 2
    link_confirm_passes: int = 1
    clock_samples: int = 8
    slow_ratio: float = 0.5
    skew_warn_s: float = 10.0
    bucket_bytes: int = DEFAULT_BUCKET_BYTES
    host_names: tuple[str, ...] = ()
    expected_nodes: int | None = None
    json_path: str | None = None
    emit_env_path: str | None = None
    fail_on: str = "error"
    quick: bool = False
    inject_wrong: str | None = None
    clock_offset_s: float = 0.0
    start_delay_s: float = 0.0
    hang_stage: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.backend not in ("gloo", "nccl", "auto"):
            raise UsageError(f"--backend must be gloo, nccl or auto, not {self.backend!r}")
        if self.join_timeout_s <= 0 or self.stage_timeout_s <= 0:
            raise UsageError("timeouts must be positive")
        if not self.sizes or min(self.sizes) < 1:
            raise UsageError("sizes must be positive")
        unknown = [op for op in self.ops if op not in OPS]
        if unknown:
            raise UsageError(f"unknown collective(s): {', '.join(unknown)}")
        if not 0 < self.slow_ratio < 1:
            raise UsageError("--slow-ratio must be between 0 and 1")

    def quickened(self) -> ProbeConfig:
        """The ``--quick`` variant: sizes up to 1M, fewer iterations, smaller link messages."""
        sizes = tuple(s for s in self.sizes if s <= QUICK_SIZES[-1]) or QUICK_SIZES
        return replace(
            self, quick=True, sizes=sizes, max_iters=min(self.max_iters, 5), target_time_s=0.05,
            latency_iters=min(self.latency_iters, 10), link_bytes=min(self.link_bytes, 4 << 20),
            link_trials=min(self.link_trials, 3), link_passes=1,
            clock_samples=min(self.clock_samples, 4),
        )

    def hook_applies(self, hook: str | None, name: str, rank: int) -> bool:
        """True when a test hook ``"name"`` or ``"name@rank"`` targets ``name`` on ``rank``."""
        if not hook:
            return False
        for part in hook.split(","):
            target, _, where = part.strip().partition("@")
            if target == name and (not where or where == str(rank)):
                return True
        return False

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "sizes": list(self.sizes),
            "ops": list(self.ops),
            "join_timeout_s": self.join_timeout_s,
            "stage_timeout_s": self.stage_timeout_s,
            "warmup": self.warmup,
            "max_iters": self.max_iters,
            "target_time_s": self.target_time_s,
            "latency_iters": self.latency_iters,
            "link_bytes": self.link_bytes,
            "link_trials": self.link_trials,
            "link_passes": self.link_passes,
            "link_confirm_passes": self.link_confirm_passes,
            "slow_ratio": self.slow_ratio,
            "skew_warn_s": self.skew_warn_s,
            "host_names": list(self.host_names),
            "expected_nodes": self.expected_nodes,
            "quick": self.quick,
        }


def split_names(text: str | None) -> tuple[str, ...]:
    """``"a,b, c"`` -> ("a", "b", "c")."""
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())

