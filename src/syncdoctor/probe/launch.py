"""Who this process is in the job: rank, node, world, master, read from the launcher's environment. Pure.

Launchers understood, in order of precedence:

- explicit: ``--nnodes N --node-rank K --master-addr A --master-port P`` given to the probe (each host runs
  ``syncdoctor probe --local G ...`` or ``torchrun --standalone --nproc-per-node G -m syncdoctor probe ...``);
  global rank = K * LOCAL_WORLD_SIZE + LOCAL_RANK, and global rank 0 hosts the probe's store at A:P.
- torchrun (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``GROUP_WORLD_SIZE``,
  ``MASTER_ADDR``/``MASTER_PORT``; ``TORCHELASTIC_USE_AGENT_STORE=True`` means the agent hosts the store).
- srun (``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``, ``SLURM_NODEID``, ``SLURM_NNODES``,
  ``SLURM_JOB_NODELIST``, ``SLURM_TASKS_PER_NODE``); the master is ``MASTER_ADDR`` or the first node of the list
  and the port ``MASTER_PORT`` or one derived from ``SLURM_JOB_ID``.
- mpirun (Open MPI: ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE``, ``OMPI_COMM_WORLD_LOCAL_RANK``,
  ``OMPI_COMM_WORLD_LOCAL_SIZE``, ``OMPI_COMM_WORLD_NODE_RANK``); the master is ``MASTER_ADDR`` (required:
  Open MPI does not say where rank 0 runs) and the port ``MASTER_PORT`` or 29500.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from syncdoctor.checks.values import python_int
from syncdoctor.errors import UsageError

__all__ = ["LaunchInfo", "expand_nodelist", "parse_tasks_per_node", "resolve_launch"]


def _expand_one(name: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", name)
    if not match:
        return [name]
    head, tail = name[: match.start()], name[match.end() :]
    out: list[str] = []
    for part in match.group(1).split(","):
        part = part.strip()
        if "-" in part:
            low, high = part.split("-", 1)
            if not (low.isdecimal() and high.isdecimal()):
                raise ValueError(f"bad range {part!r}")
            width = len(low)
            for number in range(int(low), int(high) + 1):
                out.extend(_expand_one(f"{head}{number:0{width}d}{tail}"))
        elif part:
            out.extend(_expand_one(f"{head}{part}{tail}"))
    return out


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def expand_nodelist(text: str) -> tuple[str, ...]:
    """Slurm's compressed host list: ``"gpu[01-03,07],login1"`` -> gpu01, gpu02, gpu03, gpu07, login1."""
    try:
        return tuple(host for part in _split_top(text) for host in _expand_one(part))
    except ValueError as exc:
        raise UsageError(f"cannot read the Slurm node list {text!r}: {exc}") from None


def parse_tasks_per_node(text: str) -> tuple[int, ...]:
    """``SLURM_TASKS_PER_NODE`` like ``"2(x3),1"`` -> (2, 2, 2, 1)."""
    counts: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not match:
            raise UsageError(f"cannot read SLURM_TASKS_PER_NODE={text!r}")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return tuple(counts)


@dataclass(frozen=True)
class LaunchInfo:
    """This process's place in the job.

    Attributes:
        launcher: ``torchrun``, ``slurm``, ``mpirun``, ``local`` (``syncdoctor probe --local``), ``explicit`` or ``env``.
        rank, world_size, local_rank, local_world_size, node_rank, nnodes: as the launcher defines them.
        master_addr, master_port: where the store is (or will be hosted by global rank 0).
        agent_store: the launcher's agent already hosts a store there: every rank is a client.
        run_id: names the probe's keys in the store.
        host_names: the node names in node-rank order when the launcher knows them (Slurm node list).
        tasks_per_node: ranks per node when they differ between nodes (Slurm), else empty.
        expected_nodes: how many nodes the job was meant to have (``--nnodes`` under an elastic torchrun).
    """

    launcher: str
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    nnodes: int
    master_addr: str
    master_port: int
    agent_store: bool = False
    run_id: str = "probe"
    host_names: tuple[str, ...] = ()
    tasks_per_node: tuple[int, ...] = field(default_factory=tuple)
    expected_nodes: int | None = None

    @property
    def hosts_store(self) -> bool:
        """True when this process must start the store server."""
        return self.rank == 0 and not self.agent_store

    def node_of_rank(self, rank: int) -> int:
        """The node a global rank runs on (block distribution, as torchrun and srun's default do)."""
        if self.tasks_per_node:
            total = 0
            for node, count in enumerate(self.tasks_per_node):
                total += count
                if rank < total:
                    return node
            return len(self.tasks_per_node) - 1
        return rank // max(1, self.local_world_size)

    def ranks_of_node(self, node: int) -> tuple[int, ...]:
        return tuple(r for r in range(self.world_size) if self.node_of_rank(r) == node)

    def node_name(self, node: int, names: Sequence[str] = ()) -> str | None:
        """A name for ``node``: from ``names`` (``--hosts``), else the launcher's list, else None."""
        for source in (names, self.host_names):
            if 0 <= node < len(source):
                return source[node]
        return None

    def to_json(self) -> dict[str, object]:
        return {
            "launcher": self.launcher,
            "world_size": self.world_size,
            "nnodes": self.nnodes,
            "local_world_size": self.local_world_size,
            "master_addr": self.master_addr,
            "master_port": self.master_port,
            "agent_store": self.agent_store,
            "run_id": self.run_id,
            "host_names": list(self.host_names),
            "expected_nodes": self.expected_nodes,
        }


def _int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    value = env.get(name)
    if value is None or value.strip() == "":
        if default is None:
            raise UsageError(f"{name} is not set")
        return default
    number = python_int(value)
    if number is None:
        raise UsageError(f"{name}={value!r} is not an integer")
    return number


def _check(info: LaunchInfo) -> LaunchInfo:
    if not 0 <= info.rank < info.world_size:
        raise UsageError(f"rank {info.rank} is outside the world of {info.world_size} ranks")
    if not 0 <= info.local_rank < info.local_world_size:
        raise UsageError(f"local rank {info.local_rank} is outside {info.local_world_size} local ranks")
    if not 0 <= info.node_rank < info.nnodes:
        raise UsageError(f"node rank {info.node_rank} is outside {info.nnodes} nodes")
    if not 0 < info.master_port < 65536:
        raise UsageError(f"master port {info.master_port} is not a TCP port")
    return info


def resolve_launch(
    env: Mapping[str, str],
    *,
    nnodes: int | None = None,
    node_rank: int | None = None,
    master_addr: str | None = None,
    master_port: int | None = None,
) -> LaunchInfo:
    """Read the launcher environment; explicit options win. Raises UsageError when nothing says who we are."""
    if node_rank is not None:
        if nnodes is None:
            raise UsageError("--node-rank needs --nnodes")
        addr = master_addr or env.get("SYNCDOCTOR_PROBE_MASTER_ADDR")
        if not addr:
            raise UsageError("--node-rank needs --master-addr (the address of node 0)")
        local_world = _int(env, "LOCAL_WORLD_SIZE", 1)
        local_rank = _int(env, "LOCAL_RANK", 0)
        return _check(LaunchInfo(
            launcher="local" if env.get("SYNCDOCTOR_PROBE_LAUNCHER") == "local" else "explicit",
            rank=node_rank * local_world + local_rank,
            world_size=nnodes * local_world,
            local_rank=local_rank,
            local_world_size=local_world,
            node_rank=node_rank,
            nnodes=nnodes,
            master_addr=addr,
            master_port=master_port or 29500,
            run_id=env.get("SYNCDOCTOR_PROBE_RUN_ID", "probe"),
        ))
    if "RANK" in env and "WORLD_SIZE" in env:
        rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
        local_world = _int(env, "LOCAL_WORLD_SIZE", 1)
        local_rank = _int(env, "LOCAL_RANK", 0)
        launched_nodes = _int(env, "GROUP_WORLD_SIZE", max(1, world // max(1, local_world)))
        torchrun = "TORCHELASTIC_RUN_ID" in env
        launcher = "torchrun" if torchrun else ("local" if env.get("SYNCDOCTOR_PROBE_LAUNCHER") == "local" else "env")
        expected = nnodes if nnodes is not None and nnodes != launched_nodes else None
        return _check(LaunchInfo(
            launcher=launcher,
            rank=rank,
            world_size=world,
            local_rank=local_rank,
            local_world_size=local_world,
            node_rank=_int(env, "GROUP_RANK", rank // max(1, local_world)),
            nnodes=launched_nodes,
            master_addr=master_addr or env.get("MASTER_ADDR") or "127.0.0.1",
            master_port=master_port or _int(env, "MASTER_PORT", 29500),
            agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and master_addr is None,
            run_id=env.get("TORCHELASTIC_RUN_ID") or env.get("SYNCDOCTOR_PROBE_RUN_ID", "probe"),
            expected_nodes=expected,
        ))
    if "SLURM_PROCID" in env:
        rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS", 1)
        hosts = expand_nodelist(env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or "")
        slurm_nodes = _int(env, "SLURM_NNODES", _int(env, "SLURM_JOB_NUM_NODES", max(1, len(hosts))))
        tasks = parse_tasks_per_node(env["SLURM_TASKS_PER_NODE"]) if env.get("SLURM_TASKS_PER_NODE") else ()
        node = _int(env, "SLURM_NODEID", 0)
        local_world = tasks[node] if node < len(tasks) else _int(env, "SLURM_NTASKS_PER_NODE", max(1, world // slurm_nodes))
        job_id = env.get("SLURM_JOB_ID", "0")
        default_port = 20000 + (int(job_id) % 20000 if job_id.isdecimal() else 0)
        addr = master_addr or env.get("MASTER_ADDR") or (hosts[0] if hosts else None)
        if not addr:
            raise UsageError("under srun set MASTER_ADDR or SLURM_JOB_NODELIST (or pass --master-addr)")
        return _check(LaunchInfo(
            launcher="slurm",
            rank=rank,
            world_size=world,
            local_rank=_int(env, "SLURM_LOCALID", 0),
            local_world_size=local_world,
            node_rank=node,
            nnodes=slurm_nodes,
            master_addr=addr,
            master_port=master_port or _int(env, "MASTER_PORT", default_port),
            run_id=f"slurm-{job_id}-{env.get('SLURM_STEP_ID', '0')}",
            host_names=hosts,
            tasks_per_node=tasks if len(set(tasks)) > 1 else (),
            expected_nodes=nnodes if nnodes is not None and nnodes != slurm_nodes else None,
        ))
    if "OMPI_COMM_WORLD_RANK" in env:
        rank, world = _int(env, "OMPI_COMM_WORLD_RANK"), _int(env, "OMPI_COMM_WORLD_SIZE")
        local_world = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1)
        addr = master_addr or env.get("MASTER_ADDR")
        if not addr:
            raise UsageError("under mpirun set MASTER_ADDR (and pass it on with mpirun -x MASTER_ADDR), or pass "
                             "--master-addr: Open MPI does not say where rank 0 runs")
        return _check(LaunchInfo(
            launcher="mpirun",
            rank=rank,
            world_size=world,
            local_rank=_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0),
            local_world_size=local_world,
            node_rank=_int(env, "OMPI_COMM_WORLD_NODE_RANK", rank // max(1, local_world)),
            nnodes=max(1, world // max(1, local_world)),
            master_addr=addr,
            master_port=master_port or _int(env, "MASTER_PORT", 29500),
            run_id=f"mpirun-{env.get('OMPI_MCA_ess_base_jobid', '0')}",
            expected_nodes=nnodes if nnodes is not None and nnodes != max(1, world // max(1, local_world)) else None,
        ))
    raise UsageError(
        "no launcher environment (RANK/WORLD_SIZE, SLURM_PROCID or OMPI_COMM_WORLD_RANK): run under torchrun, "
        "srun or mpirun, give "
        "--nnodes/--node-rank/--master-addr, or use `syncdoctor probe --local N`"
    )
