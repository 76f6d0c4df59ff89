"""Route and reachability on loopback (a real listening socket, a closed port) and with injected resolvers."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from syncdoctor.host.reach import check_reach
from syncdoctor.host.route import route_to
from syncdoctor.host.types import InterfaceFacts

LO = InterfaceFacts(name="lo", ifindex=1, ipv4=("127.0.0.1/8",), loopback=True, running=True)


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        yield sock.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # bound, never listened, then closed: connections are refused


def test_reach_open(listener: int) -> None:
    reach = check_reach("127.0.0.1", listener, timeout=2)
    assert (reach.result, reach.address, reach.detail) == ("open", "127.0.0.1", None)
    assert reach.elapsed_s is not None and reach.timeout_s == 2


def test_reach_refused(closed_port: int) -> None:
    reach = check_reach("127.0.0.1", closed_port, timeout=2)
    assert reach.result == "refused" and reach.detail


def test_reach_unresolvable_and_bad_port() -> None:
    def no_such_name(host: str) -> tuple[int, str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    assert check_reach("node-0", 29500, resolver=no_such_name).result == "unresolvable"
    assert check_reach("127.0.0.1", 70000).result == "error"


def test_reach_timeout_with_injected_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    class Silent(socket.socket):
        def connect(self, address: object) -> None:
            raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "socket", Silent)
    reach = check_reach("127.0.0.1", 1, timeout=0.5, clock=iter([10.0, 10.5]).__next__)
    assert reach.result == "timeout" and reach.elapsed_s == 0.5


def test_route_to_loopback_is_local() -> None:
    route = route_to("127.0.0.1", [LO], 29500)
    assert (route.interface, route.source, route.local, route.error) == ("lo", "127.0.0.1", True, None)


def test_route_unresolvable() -> None:
    def fail(host: str) -> tuple[int, str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    route = route_to("node-0", [LO], resolver=fail)
    assert route.address is None and "cannot resolve node-0" in (route.error or "")
