"""What each rank tells the others at the start-up guard: a small record of its settings, versions and
validation findings. :class:`RankFacts` and its JSON form are pure; :func:`collect_rank_facts` does I/O
(reads the environment, the host's interfaces, torch's versions). The validation rules (``check``'s pipeline,
:mod:`syncdoctor.checks.pipeline`) are imported with this module, so that their import is not part of the
guard's time.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.checks.pipeline import env_findings
from syncdoctor.host.collect import collect_host_facts
from syncdoctor.redact import redact_env

__all__ = ["RELEVANT_PREFIXES", "RankFacts", "collect_rank_facts", "relevant_env"]

RELEVANT_PREFIXES = ("NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "TORCH_GLOO_", "TORCH_FR_")


@dataclass(frozen=True)
class RankFacts:
    """One rank's view of its own configuration.

    Attributes:
        rank: global rank. host: host name. node: torchrun's node rank (``GROUP_RANK``), -1 if unknown.
        pid: process id.
        env: the NCCL_*, GLOO_* and TORCH_* distributed variables of this process (secrets redacted).
        versions: ``torch``, ``nccl``, ``cuda``, ``python`` (None when not applicable).
        backend: the group's backend name. timeout_s: the group's collective timeout, None if unreadable.
        validation: this rank's environment validation findings as (code, severity, title).
    """

    rank: int
    host: str
    node: int = -1
    pid: int = 0
    env: Mapping[str, str] = field(default_factory=dict)
    versions: Mapping[str, str | None] = field(default_factory=dict)
    backend: str = ""
    timeout_s: float | None = None
    validation: tuple[tuple[str, str, str], ...] = ()

    @property
    def where(self) -> str:
        return self.host or "?"

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "host": self.host,
            "node": self.node,
            "pid": self.pid,
            "env": dict(self.env),
            "versions": dict(self.versions),
            "backend": self.backend,
            "timeout_s": self.timeout_s,
            "validation": [list(v) for v in self.validation],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RankFacts:
        """Parse a record posted by another rank; raises ValueError/KeyError/TypeError when malformed."""
        return cls(
            rank=int(data["rank"]),
            host=str(data.get("host", "")),
            node=int(data.get("node", -1)),
            pid=int(data.get("pid", 0)),
            env={str(k): str(v) for k, v in dict(data.get("env") or {}).items()},
            versions={str(k): (None if v is None else str(v)) for k, v in dict(data.get("versions") or {}).items()},
            backend=str(data.get("backend", "")),
            timeout_s=None if data.get("timeout_s") is None else float(data["timeout_s"]),
            validation=tuple((str(a), str(b), str(c)) for a, b, c in data.get("validation") or ()),
        )


def relevant_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The distributed settings of an environment, secrets redacted."""
    return redact_env({k: v for k, v in environ.items() if k.startswith(RELEVANT_PREFIXES)})


def _torch_versions() -> dict[str, str | None]:
    import torch

    nccl = None
    try:
        if torch.cuda.is_available():
            nccl = ".".join(str(p) for p in torch.cuda.nccl.version())
    except Exception:  # no NCCL in this build
        nccl = None
    return {
        "torch": torch.__version__,
        "nccl": nccl,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
    }


def _timeout_s(group: Any) -> float | None:
    import torch

    for device in ("cpu", "cuda"):
        try:
            backend = group._get_backend(torch.device(device))
            return float(backend.options._timeout.total_seconds())
        except Exception:  # no backend for this device, or a build without the private attribute
            continue
    return None


def collect_rank_facts(rank: int, group: Any, backend: str, environ: Mapping[str, str] | None = None) -> RankFacts:
    """This rank's facts: environment, versions, timeout, and its environment validation findings."""
    env = dict(os.environ if environ is None else environ)
    versions = _torch_versions()
    host = collect_host_facts()  # about 40 ms; facts it cannot read stay unknown and skip their rules
    findings = env_findings(
        {k: v for k, v in env.items() if k.startswith(RELEVANT_PREFIXES) or k in ("MASTER_ADDR", "MASTER_PORT")},
        host,
        nccl_version=versions.get("nccl"),
        torch_version=versions.get("torch"),
    )
    node = env.get("GROUP_RANK", "-1")
    return RankFacts(
        rank=rank,
        host=socket.gethostname(),
        node=int(node) if node.lstrip("-").isdecimal() else -1,
        pid=os.getpid(),
        env=relevant_env(env),
        versions=versions,
        backend=backend,
        timeout_s=_timeout_s(group),
        validation=tuple((f.code, f.severity.label, f.title) for f in findings),
    )
