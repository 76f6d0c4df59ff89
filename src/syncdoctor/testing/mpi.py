"""Open MPI's ``mpirun`` across the lab's hosts: the real launcher, with a remote-shell agent that enters a host.

mpirun starts its daemons (``orted``) on other hosts with a remote shell, ssh by default. Here the agent is
a small script written for the lab (``lab-rsh HOST COMMAND...``) that runs COMMAND on that host (its network
namespace and name) instead, so mpirun, its daemons and the ranks talk over the lab's links exactly as over
a cluster's. Debian's ``openmpi-bin`` (``scripts/ensure-launchers.sh`` installs it). Runs as root with
``--allow-run-as-root``; the ranks see ``OMPI_COMM_WORLD_*``.

    with Lab(2) as lab:
        done = lab.run("host0", mpirun_argv(lab, tmp_path, ["hostname"], procs_per_host=2))

Does I/O: writes the agent script.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

from syncdoctor.errors import EnvironmentNotSupported
from syncdoctor.testing.lab import Lab

__all__ = ["mpi_available", "mpirun_argv", "write_agent"]


def mpi_available() -> tuple[bool, str]:
    """(True, "") when Open MPI's mpirun is installed here, else (False, what is missing)."""
    if shutil.which("mpirun") is None or shutil.which("orted") is None:
        return False, ("Open MPI is not installed (mpirun/orted missing): scripts/ensure-launchers.sh installs "
                       "Debian's openmpi-bin")
    return True, ""


def write_agent(lab: Lab, run_dir: Path) -> Path:
    """Write ``lab-rsh``: ``lab-rsh HOST WORDS...`` runs the words as a shell command on HOST, as ssh would."""
    if lab.mode != "netns":
        raise EnvironmentNotSupported("mpirun across lab hosts needs the lab's network namespaces (root)")
    cases = "\n".join(
        f"    {host.name}) exec ip netns exec {shlex.quote(str(host.netns))} unshare --uts -- "
        f"sh -c 'hostname \"$0\" && exec sh -c \"$1\"' {host.name} \"$*\" ;;"
        for host in lab.hosts)
    agent = Path(run_dir) / "lab-rsh"
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text(f"""#!/bin/sh
# mpirun's remote shell in a syncdoctor lab (syncdoctor.testing.mpi): run "$@" on host $1, as ssh would
host="$1"; shift
case "$host" in
{cases}
    *) echo "lab-rsh: no host $host in this lab" >&2; exit 255 ;;
esac
""")
    agent.chmod(0o755)
    return agent


def mpirun_argv(lab: Lab, run_dir: Path, argv: Sequence[str], procs_per_host: int, hosts: int | None = None,
                export: Sequence[str] = ()) -> list[str]:
    """The mpirun command line that starts ``procs_per_host`` ranks of ``argv`` on the first ``hosts`` hosts.
    Run it on the first host (``lab.run("host0", ...)``). ``export`` names variables passed with ``-x``."""
    available, reason = mpi_available()
    if not available:
        raise EnvironmentNotSupported(reason)
    chosen = lab.hosts[: hosts or len(lab.hosts)]
    agent = write_agent(lab, run_dir)
    ifname = chosen[0].ifname
    argv_out = ["mpirun", "--allow-run-as-root", "--host", ",".join(f"{h.name}:{procs_per_host}" for h in chosen),
                "-np", str(procs_per_host * len(chosen)), "--mca", "plm_rsh_agent", str(agent),
                "--mca", "oob_tcp_if_include", ifname, "--mca", "btl_tcp_if_include", ifname,
                "--mca", "btl", "tcp,self", "--bind-to", "none", "--tag-output"]
    for name in export:
        argv_out += ["-x", name]
    return [*argv_out, *argv]
