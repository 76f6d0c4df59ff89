"""Rules for the launcher variables of the env:// rendezvous (E7xx). Pure: no I/O.

MASTER_ADDR/MASTER_PORT locate the rank-0 store; RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE are
set by torchrun (or by hand). Malformed integers are reported by E401; these rules check meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from syncdoctor.checks.env_context import EnvContext
from syncdoctor.checks.values import env_int, is_loopback_address
from syncdoctor.kb import Finding
from syncdoctor.kb.pages import env as pages

__all__ = ["RULES", "is_loopback_address"]

_LAUNCHER = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT")
_HOST_PORT = re.compile(r"^[^:\[\]]+:\d+$")


def master(ctx: EnvContext) -> Iterator[Finding]:
    """E701-E705."""
    address = ctx.get("MASTER_ADDR")
    rank = env_int(ctx.env, "RANK")
    world = env_int(ctx.env, "WORLD_SIZE")
    launched = any(name in ctx.env for name in _LAUNCHER)
    if address is not None and not address.strip():
        yield pages.MASTER_ADDR_MISSING.finding(
            "MASTER_ADDR is set but empty: no rank can reach the rank-0 store",
            evidence=ctx.evidence("MASTER_ADDR", "WORLD_SIZE"), fix=ctx.fix_set("MASTER_ADDR", "<rank-0 host>"),
            key="MASTER_ADDR")
    elif address is None and launched and rank != 0 and (world is None or world > 1):
        yield pages.MASTER_ADDR_MISSING.finding(
            "MASTER_ADDR is not set although the launcher variables are: env:// rendezvous raises "
            "'environment variable MASTER_ADDR expected, but not set'",
            evidence=ctx.evidence(*_LAUNCHER), fix=ctx.fix_set("MASTER_ADDR", "<rank-0 host>"), key="MASTER_ADDR")
    elif address:
        stripped = address.strip()
        if "://" in address or any(c in address for c in " \t\"'") or _HOST_PORT.match(stripped):
            host = stripped.split("://")[-1].strip("\"'").split("/")[0]
            port_text = None
            if _HOST_PORT.match(host):
                host, port_text = host.rsplit(":", 1)
            yield pages.MASTER_ADDR_MALFORMED.finding(
                f"MASTER_ADDR={address!r} must be a bare host name or address (the port goes in MASTER_PORT)",
                evidence=ctx.evidence("MASTER_ADDR"),
                fix=ctx.fix_set("MASTER_ADDR", host) + (f"; {ctx.fix_set('MASTER_PORT', port_text)}" if port_text else ""),
                key="MASTER_ADDR")
        elif is_loopback_address(stripped) and ctx.multi_node:
            yield pages.MASTER_ADDR_LOOPBACK.finding(
                f"MASTER_ADDR={address} is the local host, but the job spans several nodes "
                f"(WORLD_SIZE={ctx.get('WORLD_SIZE')}, LOCAL_WORLD_SIZE={ctx.get('LOCAL_WORLD_SIZE')})",
                evidence=ctx.evidence("MASTER_ADDR", "WORLD_SIZE", "LOCAL_WORLD_SIZE"),
                fix=ctx.fix_set("MASTER_ADDR", "<routable address of the rank-0 host>"), key="MASTER_ADDR")
    port = env_int(ctx.env, "MASTER_PORT")
    if port is not None:
        if not 1 <= port <= 65535:
            yield pages.MASTER_PORT_INVALID.finding(
                f"MASTER_PORT={port} is not a TCP port (1-65535)"
                + (": the master binds a random port the workers cannot know" if port == 0 else ""),
                evidence=ctx.evidence("MASTER_PORT"), fix=ctx.fix_set("MASTER_PORT", "29500"), key="MASTER_PORT")
        elif port < 1024:
            yield pages.MASTER_PORT_PRIVILEGED.finding(
                f"MASTER_PORT={port} is a privileged port: binding it needs root and may clash with a system service",
                evidence=ctx.evidence("MASTER_PORT"), fix=ctx.fix_set("MASTER_PORT", "29500"), key="MASTER_PORT")


def ranks(ctx: EnvContext) -> Iterator[Finding]:
    """E706: 0 <= RANK < WORLD_SIZE, 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE <= WORLD_SIZE."""
    rank, world = env_int(ctx.env, "RANK"), env_int(ctx.env, "WORLD_SIZE")
    local, local_world = env_int(ctx.env, "LOCAL_RANK"), env_int(ctx.env, "LOCAL_WORLD_SIZE")
    problems: list[tuple[str, tuple[str, ...]]] = []
    if world is not None and world < 1:
        problems.append((f"WORLD_SIZE={world} must be at least 1", ("WORLD_SIZE",)))
    if rank is not None and (rank < 0 or (world is not None and world >= 1 and rank >= world)):
        problems.append((f"RANK={rank} is outside 0..WORLD_SIZE-1" + (f" (WORLD_SIZE={world})" if world else ""),
                         ("RANK", "WORLD_SIZE")))
    if local_world is not None and local_world < 1:
        problems.append((f"LOCAL_WORLD_SIZE={local_world} must be at least 1", ("LOCAL_WORLD_SIZE",)))
    if local is not None and (local < 0 or (local_world is not None and local_world >= 1 and local >= local_world)):
        problems.append((f"LOCAL_RANK={local} is outside 0..LOCAL_WORLD_SIZE-1"
                         + (f" (LOCAL_WORLD_SIZE={local_world})" if local_world else ""), ("LOCAL_RANK", "LOCAL_WORLD_SIZE")))
    if local_world is not None and world is not None and local_world > world >= 1:
        problems.append((f"LOCAL_WORLD_SIZE={local_world} is larger than WORLD_SIZE={world}",
                         ("LOCAL_WORLD_SIZE", "WORLD_SIZE")))
    for title, names in problems:
        yield pages.RANK_RANGE.finding(
            title + ": the rendezvous never completes", evidence=ctx.evidence(*names),
            fix="let the launcher set these (torchrun / srun), or compute RANK = node_rank * LOCAL_WORLD_SIZE + LOCAL_RANK",
            key=title)


RULES = (master, ranks)
