"""A real Slurm cluster on the lab's hosts: munged, slurmctld on the first host, one slurmd per host.

Debian's ``slurm-wlm`` and ``munge`` (``scripts/ensure-launchers.sh`` installs them). Each daemon runs in its
host's network namespace with the host's name (as :meth:`Lab.popen` runs everything), from one private
``slurm.conf`` (``SLURM_CONF``), with its own munge key and socket, state and spool directories under
``run_dir``: nothing of the machine's own /etc/slurm or munge is used or changed. Process tracking by
``/proc`` (``proctrack/linuxproc``, ``task/none``): no cgroups needed. Jobs run as root, the lab's user.

    with Lab(2) as lab, SlurmCluster(lab, tmp_path) as slurm:
        done = slurm.srun(["hostname"], nodes=2, tasks_per_node=2)

Does I/O: files, daemons, processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from syncdoctor.errors import EnvironmentNotSupported
from syncdoctor.testing.lab import Lab

__all__ = ["SlurmCluster", "slurm_available"]

_DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sinfo")
_PORTS = (6917, 6918)  # slurmctld, slurmd: on each host's own address, so the same ports on every host
# slurmd initialises its cgroup plugin at start even with proctrack/linuxproc, and `ip netns exec` gives each
# host a fresh /sys without cgroups: mount the cgroup v1 controllers again, in the daemon's own mount
# namespace (ip netns exec made one), so nothing of the machine's mounts changes.
_CGROUPS = ("freezer", "cpuset", "memory", "devices", "cpu", "cpuacct", "pids")
_MOUNT_CGROUPS = (
    "mount -t tmpfs cgroup_root /sys/fs/cgroup && for c in " + " ".join(_CGROUPS) + "; do "
    "mkdir -p /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c; done; "
    "mkdir -p /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd; "
    "exec \"$@\""
)


def slurm_available() -> tuple[bool, str]:
    """(True, "") when Slurm and munge are installed here, else (False, what is missing)."""
    missing = [name for name in _DAEMONS if shutil.which(name) is None]
    if missing:
        return False, (f"Slurm is not installed ({', '.join(missing)} missing): scripts/ensure-launchers.sh "
                       "installs Debian's slurm-wlm and munge")
    return True, ""


class SlurmCluster:
    """A Slurm cluster whose nodes are the hosts of ``lab`` (netns mode), partition ``lab``."""

    def __init__(self, lab: Lab, run_dir: Path, cpus: int | None = None, start_timeout: float = 60.0) -> None:
        available, reason = slurm_available()
        if not available:
            raise EnvironmentNotSupported(reason)
        if lab.mode != "netns":
            raise EnvironmentNotSupported("a Slurm cluster needs the lab's network namespaces (root)")
        self.lab = lab
        self.dir = Path(run_dir).resolve()
        self.cpus = cpus or max(2, os.cpu_count() or 2)
        self._procs: list[subprocess.Popen[Any]] = []
        self.dir.mkdir(parents=True, exist_ok=True)
        for sub in ("state", "log", "munge"):
            (self.dir / sub).mkdir(exist_ok=True)
        for host in lab.hosts:
            (self.dir / "spool" / host.name).mkdir(parents=True, exist_ok=True)
        self.conf = self.dir / "slurm.conf"
        self.munge_socket = self.dir / "munge" / "munge.socket"
        try:
            self._start_munge()
            self._write_conf()
            self._start_daemons(start_timeout)
        except BaseException:
            self.close()
            raise

    # -- set-up ---------------------------------------------------------------------------------------------
    def _start_munge(self) -> None:
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        munged = subprocess.run(
            ["munged", "--force", f"--key-file={key}", f"--socket={self.munge_socket}",
             f"--pid-file={self.dir / 'munge' / 'munged.pid'}", f"--log-file={self.dir / 'log' / 'munged.log'}",
             f"--seed-file={self.dir / 'munge' / 'munged.seed'}"],
            capture_output=True, text=True, timeout=30)
        if munged.returncode != 0:
            raise EnvironmentNotSupported(f"munged did not start: {(munged.stderr or munged.stdout).strip()}")

    def _write_conf(self) -> None:
        controller = self.lab.hosts[0]
        nodes = "\n".join(
            f"NodeName={h.name} NodeAddr={h.addr} CPUs={self.cpus} RealMemory=1000 State=UNKNOWN"
            for h in self.lab.hosts)
        self.conf.write_text(f"""# written by syncdoctor.testing.slurm for a lab cluster
ClusterName=lab
SlurmctldHost={controller.name}({controller.addr})
SlurmctldPort={_PORTS[0]}
SlurmdPort={_PORTS[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={self.dir / 'state'}
SlurmdSpoolDir={self.dir / 'spool'}/%n
SlurmctldPidFile={self.dir / 'state' / 'slurmctld.pid'}
SlurmdPidFile={self.dir / 'spool'}/%n/slurmd.pid
SlurmctldLogFile={self.dir / 'log' / 'slurmctld.log'}
SlurmdLogFile={self.dir / 'log'}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
{nodes}
PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")

    def env(self, extra: Mapping[str, str | None] | None = None) -> dict[str, str | None]:
        """The environment for Slurm's commands and daemons: this cluster's configuration."""
        return {"SLURM_CONF": str(self.conf), **(extra or {})}

    def _daemon(self, host: str, argv: Sequence[str], log: str) -> None:
        out = open(self.dir / "log" / log, "ab")  # the child holds its own copy; ours closes below
        try:
            self._procs.append(self.lab.popen(host, argv, env=self.env(), stdout=out, stderr=subprocess.STDOUT))
        finally:
            out.close()

    def _start_daemons(self, timeout: float) -> None:
        controller = self.lab.hosts[0].name
        self._daemon(controller, ["slurmctld", "-D", "-i"], "slurmctld.out")
        for host in self.lab.hosts:
            self._daemon(host.name, ["sh", "-c", _MOUNT_CGROUPS, "slurmd", "slurmd", "-D"], f"slurmd-{host.name}.out")
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise EnvironmentNotSupported(f"a Slurm daemon exited at start ({proc.args!r}): "
                                                  f"{self._logs_tail()}")
            done = self.lab.run(controller, ["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env(), timeout=20)
            state = done.stdout.strip()
            lines = [line.split() for line in state.splitlines() if line.strip()]
            if len(lines) == len(self.lab.hosts) and all(s in ("idle", "mix", "alloc") for _n, s in lines):
                return
            time.sleep(0.5)
        raise EnvironmentNotSupported(f"the Slurm nodes did not become idle in {timeout:.0f} s (sinfo: {state!r}): "
                                      f"{self._logs_tail()}")

    def _logs_tail(self) -> str:
        tails = []
        for path in sorted((self.dir / "log").glob("*")):
            try:
                lines = path.read_text(errors="replace").splitlines()[-4:]
            except OSError:
                continue
            if lines:
                tails.append(f"{path.name}: " + " | ".join(lines))
        return "; ".join(tails)[-3000:]

    # -- jobs -----------------------------------------------------------------------------------------------
    def srun_argv(self, argv: Sequence[str], nodes: int, tasks_per_node: int, *options: str) -> list[str]:
        return ["srun", f"--nodes={nodes}", f"--ntasks-per-node={tasks_per_node}", "--kill-on-bad-exit=1",
                "--partition=lab", *options, *argv]

    def srun(self, argv: Sequence[str], nodes: int, tasks_per_node: int, *options: str,
             env: Mapping[str, str | None] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run ``srun ... argv`` from the first host and wait; output captured."""
        return self.lab.run(self.lab.hosts[0].name, self.srun_argv(argv, nodes, tasks_per_node, *options),
                            env=self.env(env), timeout=timeout)

    def srun_popen(self, argv: Sequence[str], nodes: int, tasks_per_node: int, *options: str,
                   env: Mapping[str, str | None] | None = None, **kwargs: Any) -> subprocess.Popen[Any]:
        return self.lab.popen(self.lab.hosts[0].name, self.srun_argv(argv, nodes, tasks_per_node, *options),
                              env=self.env(env), **kwargs)

    # -- teardown -------------------------------------------------------------------------------------------
    def close(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._procs.clear()
        pid_file = self.dir / "munge" / "munged.pid"
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            return
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass

    def __enter__(self) -> SlurmCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
