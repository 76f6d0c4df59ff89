"""From a verdict to the nodes to keep out of the next run: suspect nodes, and exclusion lists for schedulers.

Pure: no I/O (the caller writes the text). Only node-level causes make a node a suspect: a cut or slow link,
IB/RoCE errors, a loopback hostname or a missing or mismatched interface on that node, NCCL's socket fallback,
/dev/shm or memlock too small, a failed GPU, another NCCL build, peer access the node does not support, a
host cut off or chronically the slowest while a job runs, other versions than the other hosts at start. A
rank-level cause never excludes a node: a late rank, a desync, a crash or out-of-memory in user code, a
duplicate GPU setting, a timeout nobody explains. Each verdict names its suspects with these functions:
analyze (:data:`NODE_LEVEL`), the probe (:data:`PROBE_NODE_LEVEL`), the guard (:data:`GUARD_NODE_LEVEL`) and
the watcher's events (:data:`WATCH_NODE_LEVEL`).

Formats (:func:`render`):

- ``plain``: one node per line;
- ``slurm``: a compressed hostlist for ``srun --exclude=`` (``node[03,07-08]``), as ``scontrol show hostlist``
  writes it;
- ``hostfile``: the given hostfile (DeepSpeed's ``host slots=N`` or Open MPI's ``host slots=N`` /
  ``host:N``) without the suspects' lines;
- ``k8s``: ``kubectl cordon`` and ``kubectl taint`` commands, one pair per node.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from syncdoctor.errors import UsageError

__all__ = [
    "FORMATS",
    "GUARD_NODE_LEVEL",
    "NODE_LEVEL",
    "PROBE_NODE_LEVEL",
    "WATCH_NODE_LEVEL",
    "Suspect",
    "compress_hostlist",
    "event_suspects",
    "filter_hostfile",
    "is_node_name",
    "render",
    "root_suspects",
    "sorted_hosts",
    "suspects_from",
    "suspects_from_findings",
]

FORMATS = ("plain", "slurm", "hostfile", "k8s")
TAINT_KEY = "syncdoctor.io/suspect"

# analyze's categories whose cause sits in the node (by code), with the reason a person reads
NODE_LEVEL = {
    "A005": "lost its network (link down or cut)",
    "A006": "NCCL fell back to sockets there (no usable IB/RoCE)",
    "A007": "advertises an address on another network than the other hosts",
    "A008": "advertises a loopback or container address",
    "A009": "has no usable socket interface for NCCL",
    "A011": "its IB/RoCE NIC cannot reach the others (transport retry exceeded at start)",
    "A012": "its IB/RoCE link failed during training (transport retry exceeded)",
    "A013": "could not bring up IB queue pairs",
    "A014": "/dev/shm too small or unusable",
    "A015": "memlock limit too small for NCCL",
    "A017": "CUDA peer access unsupported (topology, BIOS or virtualisation)",
    "A021": "a GPU failed (CUDA error, Xid)",
    "A022": "runs another NCCL build than the other hosts",
    "A026": "IB/RoCE completion errors",
    "A027": "IB port or device down",
}


# the probe's findings whose cause sits in the node named in their evidence ("host" or the missing "name")
PROBE_NODE_LEVEL = {
    "P001": "never joined the probe (down, unreachable, or its launcher failed)",
    "P020": "is the slow node: all its links are slow",
}
# the guard's findings whose cause sits in the nodes of their evidence's "odd_hosts", when those ranks are a
# minority of the "versions" it compared
GUARD_NODE_LEVEL = {
    "G103": "runs other torch, NCCL, CUDA or Python versions than the other hosts",
}
_SEVERITY_CONFIDENCE = {"error": 0.9, "warning": 0.6, "info": 0.3}

# the watcher's events whose cause sits in the nodes they name, with the confidence of each status (a
# resolved incident names no suspect: it went away). A late, dead or mismatched rank is rank-level: a dead
# process is as often a crash or an out-of-memory kill in user code as a node's fault.
WATCH_NODE_LEVEL = {
    "W106": "was cut off: all its ranks stopped reporting together (host down or its network cut)",
    "W107": "is chronically the slowest (a throttled GPU, a slow link or a busy host)",
}
_STATUS_CONFIDENCE = {"confirmed": 0.9, "warning": 0.6}
_REASONS = {**NODE_LEVEL, **PROBE_NODE_LEVEL, **GUARD_NODE_LEVEL, **WATCH_NODE_LEVEL}
_WHERE = re.compile(r"^(?P<host>.+?) \(node \d+\)$")


@dataclass(frozen=True)
class Suspect:
    """A node to keep out, and why: ``code`` (A005...), ``reason``, ``confidence`` of the verdict (0-1)."""

    node: str
    code: str
    reason: str
    confidence: float

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "code": self.code, "reason": self.reason, "confidence": self.confidence}


# names that are no node of a cluster: each host's own loopback, Docker Desktop's names for the host machine
_NOT_NODES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "host.docker.internal",
                        "kubernetes.docker.internal", "gateway.docker.internal"})


def is_node_name(host: str) -> bool:
    """Whether ``host`` can name a node to keep out: not the loopback (``localhost``, 127.x, ``::1``), the
    unspecified address (0.0.0.0, ``::``) or Docker Desktop's name of its own host, which every machine has."""
    name = host.strip().strip("[]").lower()
    if name in _NOT_NODES:
        return False
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0].removeprefix("::ffff:"))
    except ValueError:
        return bool(name)
    return not (address.is_loopback or address.is_unspecified)


def suspects_from(hypotheses: Iterable[tuple[str, Sequence[str], float, str]],
                  min_confidence: float = 0.0) -> list[Suspect]:
    """Suspects from ``(code, culprit hosts, confidence, title)`` of each hypothesis, best first; one entry per
    node (its most confident node-level cause). Hypotheses of rank-level codes name no suspect."""
    best: dict[str, Suspect] = {}
    for code, hosts, confidence, _title in hypotheses:
        reason = _REASONS.get(code)
        if reason is None or confidence < min_confidence:
            continue
        for host in hosts:
            if not host or not is_node_name(host) or (host in best and best[host].confidence >= confidence):
                continue
            best[host] = Suspect(host, code, reason, round(float(confidence), 3))
    return sorted(best.values(), key=lambda s: (-s.confidence, s.node))


def root_suspects(root: Any, min_confidence: float = 0.0) -> list[Suspect]:
    """The suspects of a verdict's root cause (anything with ``code``, ``culprit_hosts``, ``confidence`` and
    ``title``: the analysis's hypothesis or the document's), or none without one."""
    if root is None:
        return []
    return suspects_from([(root.code, tuple(root.culprit_hosts), root.confidence, root.title)], min_confidence)


def suspects_from_findings(findings: Iterable[Mapping[str, Any]], min_confidence: float = 0.0) -> list[Suspect]:
    """Suspects from the probe's or the guard's findings (their JSON objects): the node a node-level probe
    finding names (evidence ``host`` or ``name``), the odd hosts of a node-level guard finding (evidence
    ``odd_hosts``); the confidence follows the finding's severity (error 0.9, warning 0.6)."""
    hypotheses = []
    for finding in findings:
        code = str(finding.get("code", ""))
        raw = finding.get("evidence")
        evidence: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        if code in PROBE_NODE_LEVEL:
            host = evidence.get("host") or evidence.get("name")
            hosts: tuple[str, ...] = (host,) if isinstance(host, str) and host else ()
        elif code in GUARD_NODE_LEVEL:
            odd, ranks, every = evidence.get("odd_hosts"), evidence.get("odd_ranks"), evidence.get("versions")
            minority = isinstance(ranks, list) and isinstance(every, Mapping) and 2 * len(ranks) < len(every)
            hosts = tuple(h for h in odd if isinstance(h, str) and h not in ("", "?")) \
                if minority and isinstance(odd, list) else ()  # in a tie, which side is odd is not known
        else:
            continue
        if hosts:
            confidence = _SEVERITY_CONFIDENCE.get(str(finding.get("severity", "")), 0.5)
            hypotheses.append((code, hosts, confidence, str(finding.get("title", ""))))
    return suspects_from(hypotheses, min_confidence)


def event_suspects(code: str, status: str, hosts: Iterable[str], min_confidence: float = 0.0) -> list[Suspect]:
    """Suspects of one watch event: its nodes (bare host names; for events of older versions, which have none,
    its hosts, ``host1`` or ``host1 (node 1)`` as events write them) when its code is node-level and it is not
    resolved; confidence 0.9 confirmed, 0.6 warning."""
    confidence = _STATUS_CONFIDENCE.get(status)
    if code not in WATCH_NODE_LEVEL or confidence is None:
        return []
    nodes = []
    for where in hosts:
        found = _WHERE.match(where)
        node = found.group("host") if found else where
        if node and node != "?":
            nodes.append(node)
    return suspects_from([(code, tuple(nodes), confidence, "")], min_confidence)


_TRAILING = re.compile(r"^(?P<prefix>.*?)(?P<digits>\d+)$")


def compress_hostlist(nodes: Iterable[str]) -> str:
    """Slurm's compressed hostlist of ``nodes`` (in :func:`sorted_hosts` order): ``node03,node07,node08`` ->
    ``node[03,07-08]``; zero-padded numbers keep their width, others of different lengths join
    (``a9,a10`` -> ``a[9-10]``), as ``scontrol show hostlist`` does."""
    names = sorted_hosts(nodes)
    groups: list[tuple[str, list[tuple[int, str]]]] = []
    for name in names:
        match = _TRAILING.match(name)
        if match is None or "," in name or "[" in name:
            groups.append((name, []))
            continue
        prefix, digits = match["prefix"], match["digits"]
        last = groups[-1] if groups else None
        if last is not None and last[0] == prefix and last[1] and all(_same_width(d, digits) for _n, d in last[1]):
            last[1].append((int(digits), digits))
        else:
            groups.append((prefix, [(int(digits), digits)]))
    parts = []
    for prefix, numbers in groups:
        if not numbers:
            parts.append(prefix)
        elif len(numbers) == 1:
            parts.append(prefix + numbers[0][1])
        else:
            parts.append(f"{prefix}[{','.join(_ranges(numbers))}]")
    return ",".join(parts)


def sorted_hosts(nodes: Iterable[str]) -> list[str]:
    """``nodes`` without duplicates, by name with their trailing numbers in numeric order (node2 < node10)."""
    def key(name: str) -> tuple[str, int, str]:
        match = _TRAILING.match(name)
        return (name, -1, name) if match is None else (match["prefix"], int(match["digits"]), name)

    return sorted(set(nodes), key=key)


def _same_width(a: str, b: str) -> bool:
    padded = (len(a) > 1 and a.startswith("0")) or (len(b) > 1 and b.startswith("0"))
    return len(a) == len(b) if padded else True


def _ranges(numbers: list[tuple[int, str]]) -> list[str]:
    out: list[str] = []
    start = prev = numbers[0]
    for item in [*numbers[1:], (-2, "")]:
        if item[0] == prev[0] + 1:
            prev = item
            continue
        out.append(start[1] if start == prev else f"{start[1]}-{prev[1]}")
        start = prev = item
    return out


def filter_hostfile(text: str, nodes: Iterable[str]) -> str:
    """``text`` (a DeepSpeed or Open MPI hostfile) without the lines of ``nodes``; comments and blank lines
    stay. A host matches by name or by its short name (before the first dot)."""
    drop = set(nodes)
    drop |= {n.split(".", 1)[0] for n in drop}
    kept = []
    for line in text.splitlines():
        body = line.split("#", 1)[0].strip()
        host = re.split(r"[\s:]", body, maxsplit=1)[0] if body else ""
        if host and (host in drop or host.split(".", 1)[0] in drop):
            continue
        kept.append(line)
    return "\n".join(kept) + ("\n" if kept else "")


def render(suspects: Sequence[Suspect], fmt: str, hostfile: str | None = None) -> str:
    """The exclusion list in ``fmt`` (one of :data:`FORMATS`); ``hostfile`` is the input of ``hostfile``."""
    nodes = [s.node for s in suspects]
    if fmt == "plain":
        return "".join(f"{node}\n" for node in sorted_hosts(nodes))
    if fmt == "slurm":
        return compress_hostlist(nodes) + "\n" if nodes else ""
    if fmt == "hostfile":
        if hostfile is None:
            raise UsageError("--exclude-format hostfile needs --hostfile FILE (the hostfile to filter)")
        return filter_hostfile(hostfile, nodes)
    if fmt == "k8s":
        lines = []
        for suspect in sorted(suspects, key=lambda s: s.node):
            lines.append(f"kubectl cordon {suspect.node}  # {suspect.code}: {suspect.reason}")
            lines.append(f"kubectl taint nodes {suspect.node} {TAINT_KEY}={suspect.code}:NoSchedule --overwrite")
        return "".join(f"{line}\n" for line in lines)
    raise UsageError(f"unknown exclusion format {fmt!r}; one of {', '.join(FORMATS)}")
