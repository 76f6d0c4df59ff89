"""The lab: a real multi-host cluster on one machine, made of network namespaces, with injectable network faults.

Does I/O: creates namespaces, veth pairs, a bridge, ``tc`` qdiscs and hosts files, and runs processes inside.
Does not import torch (the jobs it starts do).

Topology of ``Lab(hosts=2)``::

    sdlab-<pid>-<tag>-sw   br0 ── veth-host0 ─┐           ┌─ veth-host1
    sdlab-<pid>-<tag>-h0   lo, eth0 10.x.y.1 ─┘           └─ eth0 10.x.y.2, lo   sdlab-<pid>-<tag>-h1

Nothing is attached to the root namespace, so lab traffic stays in the lab and a host reaches only the other
hosts. Each process started on a host runs under ``ip netns exec`` (which bind-mounts the host's
``/etc/netns/<ns>/hosts`` over ``/etc/hosts``) and ``unshare --uts`` with its hostname set to the host's name
(``host0``...), so ``socket.gethostname()`` resolves to the host's own address (or to 127.0.0.1 after
:meth:`Lab.hostname_to_loopback`).

Without root or iproute2 a lab can run in ``loopback`` mode: every host is a label on 127.0.0.1 and network
faults raise :class:`EnvironmentNotSupported`.

Teardown (:meth:`Lab.close`) runs from ``with``, from ``atexit`` and on SIGTERM/SIGHUP; SIGINT unwinds ``with``
blocks through KeyboardInterrupt. Leftovers of labs whose owner died are removed by :func:`cleanup_stale`,
which every new lab calls first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncdoctor.errors import EnvironmentNotSupported, UsageError
from syncdoctor.testing import _netns
from syncdoctor.testing._job import JobResult, LabJob, start_job
from syncdoctor.testing._netns import cleanup_stale
from syncdoctor.testing._teardown import kill_tree, register, unregister
from syncdoctor.testing.faults_spec import parse_rate

__all__ = [
    "JobResult",
    "Lab",
    "LabHost",
    "LabJob",
    "cleanup_stale",
    "lab_available",
    "lab_factory",
]

logger = logging.getLogger(__name__)

SWITCH_BRIDGE = "br0"
HOST_IFNAME = "eth0"
_HOSTNAME_EXEC = 'hostname "$0" && exec "$@"'


def lab_available() -> tuple[bool, str]:
    """(True, "") when namespaces can be built here (root and iproute2), else (False, the reason)."""
    if os.geteuid() != 0:
        return False, "the lab needs root to create network namespaces"
    for tool in ("ip", "tc", "unshare"):
        if shutil.which(tool) is None:
            return False, f"the lab needs `{tool}` (iproute2/util-linux), which is not installed"
    return True, ""


@dataclass(frozen=True)
class LabHost:
    """One host of a lab. ``netns`` is None in loopback mode; ``veth`` is its port on the switch."""

    name: str
    index: int
    addr: str
    netns: str | None
    ifname: str = HOST_IFNAME
    veth: str = ""

    @property
    def hostname(self) -> str:
        return self.name


class Lab:
    """N hosts joined by a bridge. Use as a context manager; see the module docstring.

    ``mode`` is ``"netns"`` (the real thing; raises EnvironmentNotSupported when impossible), ``"loopback"``
    (labels on 127.0.0.1) or ``"auto"`` (netns when available, else loopback with a logged warning).
    ``mtu`` applies to the hosts' eth0; ``switch_mtu`` (default ``mtu``) to the bridge and its ports, so
    ``Lab(mtu=9000, switch_mtu=1500)`` is a jumbo-frame cluster behind a 1500-byte switch.
    """

    def __init__(
        self,
        hosts: int = 2,
        mtu: int = 1500,
        name: str | None = None,
        *,
        mode: str = "auto",
        switch_mtu: int | None = None,
    ) -> None:
        if not 1 <= hosts <= 250:
            raise UsageError(f"a lab has 1 to 250 hosts, not {hosts}")
        if mode not in ("auto", "netns", "loopback"):
            raise UsageError(f"lab mode must be auto, netns or loopback, not {mode!r}")
        available, reason = lab_available()
        if mode == "netns" and not available:
            raise EnvironmentNotSupported(reason)
        if mode == "auto":
            mode = "netns" if available else "loopback"
            if not available:
                logger.warning("lab falls back to loopback mode (hosts are labels on 127.0.0.1): %s", reason)
        self.mode = mode
        self.fallback_reason = "" if mode == "netns" else (reason or "loopback mode requested")
        self.mtu = mtu
        self.switch_mtu = switch_mtu or mtu
        self._closed = False
        self._owner_pid = os.getpid()  # a forked child inherits this object (and atexit) but must not close it
        self._lock = threading.RLock()
        self._procs: list[subprocess.Popen[Any]] = []
        self._jobs: list[LabJob] = []
        self._timers: list[threading.Timer] = []
        self._stop = threading.Event()
        self._watchers: list[threading.Thread] = []
        self._lease: _netns.SubnetLease | None = None
        self._loopback: set[str] = set()  # hosts whose hostname resolves to 127.0.0.1
        self._advertised: dict[str, str] = {}  # host name -> the address its hostname resolves to, if not addr
        self._namespaces: list[str] = []
        self.names: _netns.LabNames | None = None
        self.hosts: list[LabHost] = []
        register(self)
        try:
            if mode == "netns":
                self._build(hosts, name)
            else:
                self.hosts = [LabHost(f"host{i}", i, "127.0.0.1", None, "lo", "") for i in range(hosts)]
        except BaseException:
            self.close()
            raise

    # -- construction -------------------------------------------------------------------------------------
    def _build(self, count: int, tag: str | None) -> None:
        cleanup_stale()
        self.names = _netns.lab_names(tag)
        self._lease = _netns.SubnetLease()
        switch = self.names.switch
        self._add_namespace(switch)
        _netns.ip("-n", switch, "link", "add", SWITCH_BRIDGE, "mtu", str(self.switch_mtu), "type", "bridge")
        _netns.ip("-n", switch, "link", "set", SWITCH_BRIDGE, "up")
        for index in range(count):
            netns = self.names.host_ns(index)
            port = f"veth-host{index}"
            self._add_namespace(netns)
            _netns.ip("-n", switch, "link", "add", port, "mtu", str(self.switch_mtu), "type", "veth",
                      "peer", "name", HOST_IFNAME, "netns", netns)
            _netns.ip("-n", switch, "link", "set", port, "master", SWITCH_BRIDGE, "up")
            host = LabHost(f"host{index}", index, f"{self._lease.base}.{index + 1}", netns, HOST_IFNAME, port)
            self._apply_host_mtu(netns, self.mtu)
            _netns.ip("-n", netns, "addr", "add", f"{host.addr}/24", "dev", HOST_IFNAME)
            _netns.ip("-n", netns, "link", "set", HOST_IFNAME, "up")
            _netns.ip("-n", netns, "link", "set", "lo", "up")
            self.hosts.append(host)
        for host in self.hosts:
            self._write_hosts_file(host, loopback=False)
        logger.info("lab %s up: %s", self.names.prefix, ", ".join(f"{h.name}={h.addr}" for h in self.hosts))

    def _add_namespace(self, netns: str) -> None:
        _netns.ip("netns", "add", netns)
        self._namespaces.append(netns)

    def _hosts_path(self, host: LabHost) -> Path:
        assert host.netns is not None
        return _netns.ETC_NETNS / host.netns / "hosts"

    def _write_hosts_file(self, host: LabHost, loopback: bool) -> None:
        lines = ["127.0.0.1\tlocalhost" + (f" {host.name}" if loopback else ""), "::1\tlocalhost ip6-localhost"]
        lines += [f"{self._advertised.get(other.name, other.addr)}\t{other.name}" for other in self.hosts
                  if not (loopback and other is host)]
        path = self._hosts_path(host)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Rewrite in place: running processes see /etc/hosts through a bind mount of this very inode.
        with open(path, "w") as handle:
            handle.write("\n".join(lines) + "\n")

    # -- lookup and processes -----------------------------------------------------------------------------
    def host(self, ref: LabHost | str) -> LabHost:
        """The host named ``ref`` (``"host1"``) or ``ref`` itself."""
        if isinstance(ref, LabHost):
            return ref
        for host in self.hosts:
            if host.name == ref:
                return host
        raise UsageError(f"no host {ref!r} in this lab (hosts: {', '.join(h.name for h in self.hosts)})")

    def host_argv(self, ref: LabHost | str, argv: Sequence[str]) -> list[str]:
        """The command line that runs ``argv`` on the host (namespace, hosts file, hostname)."""
        host = self.host(ref)
        if host.netns is None:
            return list(argv)
        return ["ip", "netns", "exec", host.netns, "unshare", "--uts", "--", "sh", "-c", _HOSTNAME_EXEC,
                host.name, *argv]

    @staticmethod
    def merged_env(*layers: Mapping[str, str | None] | None) -> dict[str, str]:
        """os.environ with ``layers`` applied in order; a None value removes the variable."""
        env = dict(os.environ)
        for layer in layers:
            for key, value in (layer or {}).items():
                if value is None:
                    env.pop(key, None)
                else:
                    env[key] = str(value)
        return env

    def run(
        self,
        ref: LabHost | str,
        argv: Sequence[str],
        env: Mapping[str, str | None] | None = None,
        timeout: float = 30,
        check: bool = False,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on the host and wait; output captured as text."""
        self._check_open()
        return subprocess.run(
            self.host_argv(ref, argv), env=self.merged_env(env), capture_output=True, text=True,
            timeout=timeout, check=check, input=input, stdin=None if input is not None else subprocess.DEVNULL,
        )

    def popen(
        self, ref: LabHost | str, argv: Sequence[str], env: Mapping[str, str | None] | None = None, **kwargs: Any
    ) -> subprocess.Popen[Any]:
        """Start ``argv`` on the host; the process (and its children) are killed at teardown."""
        self._check_open()
        kwargs.setdefault("start_new_session", True)
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        proc = subprocess.Popen(self.host_argv(ref, argv), env=self.merged_env(env), **kwargs)
        with self._lock:
            self._procs.append(proc)
        return proc

    def torchrun(self, argv: Sequence[str], **kwargs: Any) -> LabJob:
        """Start a multi-host torchrun job, one agent per host; see :func:`syncdoctor.testing._job.start_job`."""
        self._check_open()
        job = start_job(self, argv, **kwargs)
        with self._lock:
            self._jobs.append(job)
        return job

    def tcp_throughput(
        self, sender: LabHost | str, receiver: LabHost | str, seconds: float = 2.0, port: int = 7099
    ) -> float:
        """Bits per second of payload one TCP connection moves from ``sender`` to ``receiver`` in ``seconds``."""
        target = self.host(receiver)
        sink = self.popen(target, [sys.executable, "-m", "syncdoctor.testing._tcp", "sink", str(port)],
                          stdout=subprocess.PIPE, text=True)
        try:
            assert sink.stdout is not None
            if sink.stdout.readline().strip() != "listening":
                raise EnvironmentNotSupported(f"the throughput sink on {target.name} did not start")
            self.run(sender, [sys.executable, "-m", "syncdoctor.testing._tcp", "stream", target.addr, str(port),
                              str(seconds)], timeout=seconds + 30, check=True)
            total, elapsed = sink.stdout.readline().split()
            return int(total) * 8 / float(elapsed)
        finally:
            kill_tree(sink)

    # -- network faults -----------------------------------------------------------------------------------
    def _netns_host(self, ref: LabHost | str, what: str) -> LabHost:
        self._check_open()
        host = self.host(ref)
        if host.netns is None:
            raise EnvironmentNotSupported(f"{what} needs network namespaces; this lab runs in loopback mode "
                                          f"({self.fallback_reason})")
        return host

    @staticmethod
    def _namespace(host: LabHost) -> str:
        """The namespace of a host that :meth:`_netns_host` returned."""
        assert host.netns is not None
        return host.netns

    def _switch(self) -> str:
        assert self.names is not None
        return self.names.switch

    def throttle(self, ref: LabHost | str, rate: str) -> None:
        """Limit the host's link to ``rate`` (``"40mbit"``) in both directions with a tc token bucket."""
        host = self._netns_host(ref, "throttling")
        bits = parse_rate(rate)
        mtu = max(self.mtu, self.switch_mtu)
        # Bucket: 10 ms worth of traffic, at least a few full frames; queue: 50 ms at the rate.
        burst = max(bits // 8 // 100, 4 * (mtu + 14), 16_000)
        spec = ["root", "tbf", "rate", f"{bits}bit", "burst", str(burst), "latency", "50ms"]
        _netns.tc("-n", self._namespace(host), "qdisc", "replace", "dev", host.ifname, *spec)
        _netns.tc("-n", self._switch(), "qdisc", "replace", "dev", host.veth, *spec)
        logger.info("throttled %s to %s", host.name, rate)

    def unthrottle(self, ref: LabHost | str) -> None:
        host = self._netns_host(ref, "throttling")
        _netns.tc("-n", self._namespace(host), "qdisc", "del", "dev", host.ifname, "root", check=False)
        _netns.tc("-n", self._switch(), "qdisc", "del", "dev", host.veth, "root", check=False)

    def cut(self, ref: LabHost | str) -> None:
        """Pull the host's cable: its switch port goes down, its eth0 loses carrier, packets vanish."""
        host = self._netns_host(ref, "cutting a link")
        _netns.ip("-n", self._switch(), "link", "set", host.veth, "down")
        logger.info("cut %s", host.name)

    def restore(self, ref: LabHost | str) -> None:
        """Plug the cable back in (undo :meth:`cut`)."""
        host = self._netns_host(ref, "restoring a link")
        _netns.ip("-n", self._switch(), "link", "set", host.veth, "up")
        logger.info("restored %s", host.name)

    def set_mtu(self, ref: LabHost | str, mtu: int, switch_port: bool = False) -> None:
        """Set the MTU of the host's eth0 (and of its switch port when ``switch_port``)."""
        host = self._netns_host(ref, "setting the MTU")
        self._apply_host_mtu(self._namespace(host), mtu)
        if switch_port:
            _netns.ip("-n", self._switch(), "link", "set", host.veth, "mtu", str(mtu))

    def _apply_host_mtu(self, netns: str, mtu: int) -> None:
        # veth hands whole GSO super-packets to its peer without checking the MTU; one segment per packet
        # (gso_max_segs 1) makes an oversized frame meet the switch port's MTU check, as on a real NIC.
        segs = ["gso_max_segs", "1"] if mtu > self.switch_mtu else ["gso_max_segs", "65535"]
        _netns.ip("-n", netns, "link", "set", HOST_IFNAME, "mtu", str(mtu), *segs)

    def hostname_to_loopback(self, ref: LabHost | str, enabled: bool = True) -> None:
        """Make the host's own hostname resolve to 127.0.0.1 inside it (the classic gloo/NCCL trap)."""
        host = self._netns_host(ref, "changing hostname resolution")
        if enabled:
            self._loopback.add(host.name)
        else:
            self._loopback.discard(host.name)
        self._write_hosts_file(host, loopback=enabled)

    def advertise_address(self, ref: LabHost | str, addr: str | None, prefix: int = 24) -> None:
        """Give the host a second address on its eth0 and make its hostname resolve to it on every host (so
        gloo advertises it); ``None`` removes it and maps the name back to the lab address. For faults that
        depend on how addresses compare (gloo lets one side of each pair dial, by address)."""
        host = self._netns_host(ref, "adding an address")
        old = self._advertised.pop(host.name, None)
        if old is not None:
            _netns.ip("-n", self._namespace(host), "addr", "del", f"{old}/{prefix}", "dev", host.ifname, check=False)
        if addr is not None:
            _netns.ip("-n", self._namespace(host), "addr", "add", f"{addr}/{prefix}", "dev", host.ifname)
            self._advertised[host.name] = addr
        for each in self.hosts:
            self._write_hosts_file(each, loopback=each.name in self._loopback)

    # -- timed and triggered actions ----------------------------------------------------------------------
    def after(self, seconds: float, action: Callable[[], object]) -> threading.Timer:
        """Run ``action`` in ``seconds`` (cancelled at teardown)."""
        timer = threading.Timer(seconds, self._guarded(action))
        timer.daemon = True
        with self._lock:
            self._timers.append(timer)
        timer.start()
        return timer

    def on_trigger(self, path: Path | str, action: Callable[[], object], poll: float = 0.05) -> threading.Thread:
        """Run ``action`` once when the file ``path`` appears (e.g. touched by the workload), then rename the
        file to ``<path>.done`` (the workload's trigger fault waits for that)."""
        target = Path(path)

        def _watch() -> None:
            while not self._stop.wait(poll):
                if target.exists():
                    self._guarded(action)()
                    with contextlib.suppress(OSError):  # tells a waiting workload that the lab has acted
                        target.rename(target.with_name(target.name + ".done"))
                    return

        thread = threading.Thread(target=_watch, name=f"lab-trigger-{target.name}", daemon=True)
        with self._lock:
            self._watchers.append(thread)
        thread.start()
        return thread

    def _guarded(self, action: Callable[[], object]) -> Callable[[], None]:
        def _run() -> None:
            if self._closed:
                return
            try:
                action()
            except Exception:
                logger.exception("lab action %r failed", action)

        return _run

    # -- teardown -----------------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("this lab is closed")

    def close(self) -> None:
        """Tear everything down; safe to call twice, from any exit path (a no-op in a forked child)."""
        if os.getpid() != self._owner_pid:
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        for timer in self._timers:
            timer.cancel()
        for job in self._jobs:
            with contextlib.suppress(Exception):
                job.kill()
        for proc in self._procs:
            kill_tree(proc)
        for netns in reversed(self._namespaces):
            _netns.delete_namespace(netns)
        for thread in self._watchers:
            if thread is not threading.current_thread():
                thread.join(timeout=1)
        if self._lease is not None:
            self._lease.release()
        unregister(self)
        if self.names is not None:
            logger.info("lab %s torn down", self.names.prefix)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        label = self.names.prefix if self.names else "loopback"
        return f"<Lab {label} mode={self.mode} hosts={[h.name for h in self.hosts]}>"


# -- pytest fixture: defined when pytest is already loaded (a test session, the plugin, a conftest), so that
# the CLI, which imports this module too, neither needs pytest nor pays for importing it. -------------------
if "pytest" in sys.modules:
    import pytest

    @pytest.fixture
    def lab_factory() -> Iterator[Callable[..., Lab]]:
        """A factory ``make(hosts=2, **kwargs) -> Lab``; every lab it made is torn down after the test.

        Falls back to loopback mode (``lab.mode == "loopback"``, logged warning) without root or iproute2.
        """
        labs: list[Lab] = []

        def make(hosts: int = 2, **kwargs: Any) -> Lab:
            lab = Lab(hosts, **kwargs)
            labs.append(lab)
            return lab

        try:
            yield make
        finally:
            for lab in labs:
                lab.close()

