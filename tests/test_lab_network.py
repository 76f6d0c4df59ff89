"""The lab's network: isolation, addressing, names, throttling, cuts, MTU, teardown and concurrency.

Real namespaces (root only), real TCP between them; the small socket programs below run inside the hosts.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest

from conftest import requires_root
from syncdoctor.errors import EnvironmentNotSupported, UsageError
from syncdoctor.testing import _netns
from syncdoctor.testing.lab import Lab, cleanup_stale, lab_available

PY = sys.executable

# Accepts connections forever; reads each to EOF and answers with the number of bytes it read.
SERVER = textwrap.dedent("""
    import socket, sys
    srv = socket.create_server(("0.0.0.0", int(sys.argv[1])))
    print("listening", flush=True)
    while True:
        conn, _ = srv.accept()
        total = 0
        while data := conn.recv(1 << 16):
            total += len(data)
        conn.sendall(str(total).encode())
        conn.close()
""")
# ADDR PORT TIMEOUT NBYTES: send NBYTES, print "ok" when the server acknowledges them all, else "fail ...".
CLIENT = textwrap.dedent("""
    import socket, sys
    try:
        sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3]))
        sock.sendall(b"x" * int(sys.argv[4]))
        sock.shutdown(socket.SHUT_WR)
        answer = sock.recv(64).decode()
        print("ok" if answer == sys.argv[4] else f"fail answer {answer!r}", flush=True)
    except OSError as exc:
        print("fail", type(exc).__name__, exc, flush=True)
""")


def serve(lab: Lab, host: str, port: int) -> subprocess.Popen[str]:
    proc = lab.popen(host, [PY, "-c", SERVER, str(port)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
    return proc


def connect(lab: Lab, host: str, addr: str, port: int, timeout: float = 1.0, nbytes: int = 5) -> str:
    return lab.run(host, [PY, "-c", CLIENT, addr, str(port), str(timeout), str(nbytes)], timeout=30).stdout.strip()


def root_namespace_address() -> str | None:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        return line.split()[3].split("/")[0]
    return None


def lab_leftovers(lab_prefix: str) -> list[str]:
    found = [name for name in _netns.list_lab_namespaces() if name.startswith(lab_prefix)]
    if _netns.ETC_NETNS.is_dir():
        found += [str(p) for p in _netns.ETC_NETNS.iterdir() if p.name.startswith(lab_prefix)]
    return found


@requires_root
def test_hosts_reach_each_other_and_nothing_else(lab_factory) -> None:
    lab = lab_factory(2)
    host0 = lab.host("host0")
    serve(lab, "host0", 7000)
    assert connect(lab, "host1", host0.addr, 7000) == "ok"
    assert connect(lab, "host1", "host0", 7000) == "ok"  # by name, through the host's hosts file
    assert connect(lab, "host0", "127.0.0.1", 7000) == "ok"  # lo is up
    outside = root_namespace_address()
    if outside is not None:
        assert connect(lab, "host1", outside, 22).startswith("fail")
    assert connect(lab, "host1", "10.255.255.53", 53).startswith("fail")
    # ... and the machine itself cannot reach into the lab.
    client = subprocess.run([PY, "-c", CLIENT, host0.addr, "7000", "1", "5"], capture_output=True, text=True)
    assert client.stdout.startswith("fail"), client.stdout


@requires_root
def test_each_host_has_its_name_address_and_eth0(lab_factory) -> None:
    lab = lab_factory(3)
    assert len({h.addr for h in lab.hosts}) == 3 and len({h.netns for h in lab.hosts}) == 3
    out = lab.run("host2", ["sh", "-c", "hostname; ip -4 -o addr show dev eth0; getent hosts host0"]).stdout
    name, addr_line, host0_line = out.splitlines()
    assert name == "host2"
    assert f"inet {lab.host('host2').addr}/24" in addr_line
    assert host0_line.split() == [lab.host("host0").addr, "host0"]
    resolved = lab.run("host2", [PY, "-c", "import socket; print(socket.gethostbyname(socket.gethostname()))"])
    assert resolved.stdout.strip() == lab.host("host2").addr


@requires_root
def test_per_host_environment(lab_factory) -> None:
    lab = lab_factory(2)
    show = ["sh", "-c", 'echo "${SD_MARK-unset}"']
    assert lab.run("host0", show, env={"SD_MARK": "here"}).stdout.strip() == "here"
    os.environ["SD_MARK"] = "inherited"
    try:
        assert lab.run("host1", show).stdout.strip() == "inherited"
        assert lab.run("host1", show, env={"SD_MARK": None}).stdout.strip() == "unset"
    finally:
        del os.environ["SD_MARK"]


@requires_root
def test_throttled_link_runs_within_20_percent_of_the_rate(lab_factory) -> None:
    lab = lab_factory(2)
    lab.throttle("host1", "40mbit")
    outbound = lab.tcp_throughput("host1", "host0", seconds=1.5) / 1e6
    inbound = lab.tcp_throughput("host0", "host1", seconds=1.5) / 1e6
    assert 32 <= outbound <= 48, outbound
    assert 32 <= inbound <= 48, inbound
    lab.unthrottle("host1")
    assert lab.tcp_throughput("host1", "host0", seconds=0.3) / 1e6 > 100


@requires_root
def test_cut_link_fails_connections_and_restore_heals(lab_factory) -> None:
    lab = lab_factory(2)
    addr = lab.host("host0").addr
    serve(lab, "host0", 7000)
    assert connect(lab, "host1", addr, 7000) == "ok"
    lab.cut("host1")
    assert connect(lab, "host1", addr, 7000, timeout=1).startswith("fail")
    carrier = lab.run("host1", ["cat", "/sys/class/net/eth0/carrier"]).stdout.strip()
    assert carrier == "0"
    lab.restore("host1")
    deadline, answer = time.monotonic() + 10, ""
    while time.monotonic() < deadline and answer != "ok":
        answer = connect(lab, "host1", addr, 7000, timeout=2)
    assert answer == "ok"


@requires_root
def test_mtu_and_loopback_hostname_take_effect(lab_factory) -> None:
    lab = lab_factory(2)
    lab.set_mtu("host1", 9000)
    assert lab.run("host1", ["cat", "/sys/class/net/eth0/mtu"]).stdout.strip() == "9000"
    assert lab.run("host0", ["cat", "/sys/class/net/eth0/mtu"]).stdout.strip() == "1500"
    own = [PY, "-c", "import socket; print(socket.gethostbyname(socket.gethostname()))"]
    lab.hostname_to_loopback("host1")
    assert lab.run("host1", own).stdout.strip() == "127.0.0.1"
    assert lab.run("host0", own).stdout.strip() == lab.host("host0").addr
    assert lab.run("host0", ["getent", "hosts", "host1"]).stdout.split()[0] == lab.host("host1").addr
    lab.hostname_to_loopback("host1", enabled=False)
    assert lab.run("host1", own).stdout.strip() == lab.host("host1").addr
    # a second address the hostname resolves to, on the host itself and on its peers; reachable; undone
    lab.advertise_address("host0", "192.168.231.1")
    lab.advertise_address("host1", "192.168.231.2")
    lab.hostname_to_loopback("host1")  # both settings hold together
    assert lab.run("host0", own).stdout.strip() == "192.168.231.1"
    assert lab.run("host1", ["getent", "hosts", "host0"]).stdout.split()[0] == "192.168.231.1"
    assert lab.run("host1", own).stdout.strip() == "127.0.0.1"
    serve(lab, "host0", 7001)
    assert connect(lab, "host1", "192.168.231.1", 7001, nbytes=1000) == "ok"
    lab.hostname_to_loopback("host1", enabled=False)
    lab.advertise_address("host0", None)
    lab.advertise_address("host1", None)
    assert lab.run("host1", ["getent", "hosts", "host0"]).stdout.split()[0] == lab.host("host0").addr
    assert "192.168.231.1" not in lab.run("host0", ["ip", "-br", "addr"]).stdout


@requires_root
def test_jumbo_hosts_behind_a_1500_switch_blackhole_big_packets(lab_factory) -> None:
    lab = lab_factory(2, mtu=9000, switch_mtu=1500)
    serve(lab, "host0", 7000)
    addr = lab.host("host0").addr
    assert connect(lab, "host1", addr, 7000, nbytes=1000) == "ok"  # small packets pass
    # Full-size 9000-byte segments are dropped at the switch port: the transfer stalls.
    big = connect(lab, "host1", addr, 7000, timeout=2, nbytes=100_000)
    assert big.startswith("fail") and "timed out" in big, big


@requires_root
def test_teardown_leaves_nothing_even_when_the_body_raises() -> None:
    with pytest.raises(RuntimeError, match="body failed"), Lab(2) as lab:
        prefix = lab.names.prefix
        lease = lab._lease.path
        sleeper = lab.popen("host0", ["sleep", "600"])
        stopped = lab.popen("host1", ["sleep", "600"])
        os.kill(stopped.pid, signal.SIGSTOP)
        assert lab_leftovers(prefix)
        raise RuntimeError("body failed")
    assert lab.closed
    assert lab_leftovers(prefix) == []
    assert not lease.exists()
    assert sleeper.poll() is not None and stopped.poll() is not None


@requires_root
def test_two_labs_at_once_do_not_collide(lab_factory) -> None:
    first, second = lab_factory(2), lab_factory(2)
    assert first.names.prefix != second.names.prefix
    assert first.host("host0").addr.rsplit(".", 1)[0] != second.host("host0").addr.rsplit(".", 1)[0]
    serve(first, "host0", 7000)
    serve(second, "host0", 7000)  # same port, same interface names: separate stacks
    assert connect(first, "host1", first.host("host0").addr, 7000) == "ok"
    assert connect(second, "host1", second.host("host0").addr, 7000) == "ok"
    assert connect(first, "host1", second.host("host0").addr, 7000).startswith("fail")


LAB_OWNER = textwrap.dedent("""
    import sys, time
    from syncdoctor.testing.lab import Lab
    lab = Lab(2)
    lab.popen("host0", ["sleep", "600"])
    print(lab.names.prefix, flush=True)
    time.sleep(600)
""")


@requires_root
def test_sigterm_tears_down_and_cleanup_stale_removes_only_dead_owners(lab_factory) -> None:
    mine = lab_factory(1)
    owners = [subprocess.Popen([PY, "-c", LAB_OWNER], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        prefixes = [owner.stdout.readline().strip() for owner in owners]  # type: ignore[union-attr]
        assert all(prefix.startswith("sdlab-") for prefix in prefixes)
        owners[0].send_signal(signal.SIGTERM)  # a polite end: the owner tears its lab down itself
        owners[1].kill()  # a brutal end: the lab is left behind
        for owner in owners:
            owner.wait(timeout=20)
        assert lab_leftovers(prefixes[0]) == []
        assert lab_leftovers(prefixes[1])
        removed = cleanup_stale()
        assert any(name.startswith(prefixes[1]) for name in removed)
        assert lab_leftovers(prefixes[1]) == []
        assert lab_leftovers(mine.names.prefix)  # a live owner's lab is untouched
    finally:
        for owner in owners:
            owner.kill()
            owner.wait()
            owner.stdout.close()  # type: ignore[union-attr]


@requires_root
def test_timed_and_triggered_actions(lab_factory, tmp_path: Path) -> None:
    lab = lab_factory(2)
    fired: list[str] = []
    done = threading.Event()
    lab.after(0.1, lambda: fired.append("timer"))
    lab.on_trigger(tmp_path / "cut-host1", lambda: (lab.cut("host1"), fired.append("trigger"), done.set()))
    time.sleep(0.3)
    assert fired == ["timer"]
    (tmp_path / "cut-host1").touch()
    assert done.wait(5)
    # the action runs first, then the watcher renames the trigger (what a workload waits for): wait for the rename
    deadline = time.monotonic() + 5
    while not (tmp_path / "cut-host1.done").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "cut-host1.done").exists()
    assert lab.run("host1", ["cat", "/sys/class/net/eth0/carrier"]).stdout.strip() == "0"


def test_loopback_mode_keeps_hosts_as_labels_and_refuses_network_faults(tmp_path: Path) -> None:
    with Lab(2, mode="loopback") as lab:
        assert lab.mode == "loopback"
        assert [h.addr for h in lab.hosts] == ["127.0.0.1", "127.0.0.1"]
        assert lab.run("host1", ["echo", "hi"]).stdout.strip() == "hi"
        with pytest.raises(EnvironmentNotSupported, match="loopback mode"):
            lab.throttle("host1", "10mbit")
        with pytest.raises(EnvironmentNotSupported):
            lab.cut("host0")


def test_without_root_the_lab_says_so_and_falls_back(monkeypatch, caplog) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    available, reason = lab_available()
    assert not available and "root" in reason
    with pytest.raises(EnvironmentNotSupported, match="root"):
        Lab(2, mode="netns")
    with caplog.at_level(logging.WARNING), Lab(2) as lab:
        assert lab.mode == "loopback"
    assert "falls back to loopback" in caplog.text


@requires_root
def test_named_lab_and_name_errors(lab_factory) -> None:
    lab = lab_factory(1, name="named1")
    assert lab.names.prefix == f"sdlab-{os.getpid()}-named1"
    assert lab.hosts[0].netns == f"sdlab-{os.getpid()}-named1-h0"
    with pytest.raises(UsageError, match="already exists"):
        Lab(1, name="named1")
    with pytest.raises(UsageError, match="1-10 characters"):
        Lab(1, name="Bad Name!")
    assert lab_leftovers(f"sdlab-{os.getpid()}-named1-") != []  # the failed attempts removed nothing of it


@requires_root
def test_a_forked_child_does_not_tear_down_its_parents_lab(lab_factory) -> None:
    lab = lab_factory(1)
    with warnings.catch_warnings():  # Python >= 3.12 warns about fork() in a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: closing (as its atexit or a signal handler would) must leave the lab alone
        lab.close()
        os._exit(0)
    os.waitpid(pid, 0)
    assert not lab.closed and lab_leftovers(lab.names.prefix)
    assert lab.run("host0", ["true"]).returncode == 0
