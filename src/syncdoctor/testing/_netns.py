"""Low-level network-namespace plumbing for the lab: ``ip``/``tc`` calls, lab names, subnets, stale cleanup.

Does I/O: runs ``ip`` and ``tc``, writes ``/etc/netns/<ns>/hosts`` and lock files under ``/run/syncdoctor/lab``,
and signals processes that live in a lab's namespaces.

Naming scheme (so concurrent labs never collide and leftovers can be attributed)::

    namespace   sdlab-<owner pid>-<tag>-sw        the switch: holds the bridge br0 and one port per host
                sdlab-<owner pid>-<tag>-h<i>      host i: lo and eth0 (the peer of port veth-host<i>)
    subnet      10.<200+x>.<y>.0/24               reserved by the file /run/syncdoctor/lab/subnet-<x>-<y>

Interface names live only inside the lab's own namespaces, so they never clash with another lab's or with the
root namespace's; nothing of a lab is attached to the root namespace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from syncdoctor.errors import EnvironmentNotSupported, UsageError

__all__ = [
    "NETNS_DIR",
    "PREFIX",
    "STATE_DIR",
    "LabNames",
    "SubnetLease",
    "cleanup_stale",
    "ip",
    "kill_namespace_processes",
    "lab_names",
    "list_lab_namespaces",
    "namespace_pids",
    "pid_alive",
]

logger = logging.getLogger(__name__)

PREFIX = "sdlab"
STATE_DIR = Path("/run/syncdoctor/lab")
NETNS_DIR = Path("/run/netns")
ETC_NETNS = Path("/etc/netns")
_NAME_RE = re.compile(rf"^{PREFIX}-(?P<pid>\d+)-(?P<tag>[a-z0-9]+)-(?P<role>sw|h\d+)$")
_TAG_RE = re.compile(r"^[a-z0-9]{1,10}$")
_SUBNET_RE = re.compile(r"^subnet-(?P<x>\d+)-(?P<y>\d+)$")
SUBNET_X_RANGE = 50  # second octet 200..249


def ip(*args: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGS``; raise EnvironmentNotSupported with ip's own message when ``check`` and it fails."""
    return _run(["ip", *args], check=check, timeout=timeout)


def tc(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``tc ARGS`` (same error handling as :func:`ip`)."""
    return _run(["tc", *args], check=check, timeout=20)


def _run(argv: list[str], check: bool, timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise EnvironmentNotSupported(f"{argv[0]} is not installed (iproute2 is needed for the lab)") from exc
    if check and proc.returncode != 0:
        raise EnvironmentNotSupported(f"`{' '.join(argv)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


@dataclass(frozen=True)
class LabNames:
    """The names one lab uses; ``tag`` distinguishes labs of the same owner process."""

    owner_pid: int
    tag: str

    @property
    def prefix(self) -> str:
        return f"{PREFIX}-{self.owner_pid}-{self.tag}"

    @property
    def switch(self) -> str:
        return f"{self.prefix}-sw"

    def host_ns(self, index: int) -> str:
        return f"{self.prefix}-h{index}"


def lab_names(tag: str | None = None) -> LabNames:
    """Names for a new lab of this process; ``tag`` (1-10 of ``[a-z0-9]``) defaults to a random one."""
    if tag is None:
        tag = secrets.token_hex(3)
    if not _TAG_RE.match(tag):
        raise UsageError(f"lab name {tag!r} must be 1-10 characters of [a-z0-9]")
    names = LabNames(os.getpid(), tag)
    if (NETNS_DIR / names.switch).exists():
        raise UsageError(f"a lab named {tag!r} already exists in this process")
    return names


class SubnetLease:
    """An exclusive /24 for one lab, reserved with an O_EXCL file holding the owner's pid.

    A lease whose owner is dead is taken over. ``base`` is the first three octets, e.g. ``"10.203.17"``.
    """

    def __init__(self, owner_pid: int | None = None) -> None:
        self.owner_pid = owner_pid or os.getpid()
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        start = secrets.randbelow(SUBNET_X_RANGE * 256)
        for offset in range(SUBNET_X_RANGE * 256):
            index = (start + offset) % (SUBNET_X_RANGE * 256)
            x, y = divmod(index, 256)
            path = STATE_DIR / f"subnet-{x}-{y}"
            if self._try_take(path):
                self.path = path
                self.base = f"10.{200 + x}.{y}"
                return
        raise EnvironmentNotSupported("no free lab subnet in 10.200.0.0-10.249.255.0")

    def _try_take(self, path: Path) -> bool:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = _read_pid(path)
            if owner is None and _age(path) < 10:
                return False  # being created right now: the owner has not written its pid yet
            if owner is not None and pid_alive(owner):
                return False
            # Stale: remove it and race for it again; at most one process wins the O_EXCL create.
            with contextlib.suppress(FileNotFoundError):
                if _read_pid(path) == owner:
                    path.unlink()
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{self.owner_pid}\n")
        return True

    def release(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            if _read_pid(self.path) == self.owner_pid:
                self.path.unlink()


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists (zombies count as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def list_lab_namespaces() -> list[str]:
    """Names of all lab namespaces on this machine (every owner's)."""
    try:
        entries = os.listdir(NETNS_DIR)
    except FileNotFoundError:
        return []
    return sorted(name for name in entries if _NAME_RE.match(name))


def namespace_pids(netns: str) -> list[int]:
    """Pids of the processes whose network namespace is ``netns`` (``ip netns pids``)."""
    proc = ip("netns", "pids", netns, check=False)
    return [int(token) for token in proc.stdout.split() if token.isdecimal()]


def kill_namespace_processes(netns: str, grace: float = 0.0) -> None:
    """SIGKILL (after SIGCONT, so stopped processes die too) every process in ``netns``.

    With ``grace`` > 0, SIGTERM first and wait up to ``grace`` seconds.
    """
    pids = namespace_pids(netns)
    if pids and grace > 0:
        _signal_all(pids, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(pid_alive(pid) for pid in pids):
            time.sleep(0.05)
    for _ in range(50):
        pids = [pid for pid in namespace_pids(netns) if pid_alive(pid)]
        if not pids:
            return
        _signal_all(pids, signal.SIGCONT)
        _signal_all(pids, signal.SIGKILL)
        time.sleep(0.02)
    logger.warning("processes %s in %s did not die", pids, netns)


def _signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def delete_namespace(netns: str) -> None:
    """Kill what runs in ``netns``, delete it (its interfaces go with it) and its /etc/netns directory."""
    kill_namespace_processes(netns)
    ip("netns", "del", netns, check=False)
    shutil.rmtree(ETC_NETNS / netns, ignore_errors=True)


def cleanup_stale() -> list[str]:
    """Remove namespaces, hosts files and subnet leases of labs whose owner process is dead.

    Labs of live processes (other tests running concurrently) are left alone. Returns the removed names.
    """
    removed: list[str] = []
    for name in list_lab_namespaces():
        match = _NAME_RE.match(name)
        if match is None or pid_alive(int(match["pid"])):
            continue
        delete_namespace(name)
        removed.append(name)
    if ETC_NETNS.is_dir():
        for entry in ETC_NETNS.iterdir():
            match = _NAME_RE.match(entry.name)
            if match and not pid_alive(int(match["pid"])) and not (NETNS_DIR / entry.name).exists():
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(str(entry))
    if STATE_DIR.is_dir():
        for entry in STATE_DIR.iterdir():
            if _SUBNET_RE.match(entry.name):
                owner = _read_pid(entry)
                if owner is None or not pid_alive(owner):
                    with contextlib.suppress(FileNotFoundError):
                        entry.unlink()
                    removed.append(str(entry))
    if removed:
        logger.info("removed leftovers of dead labs: %s", ", ".join(removed))
    return removed
