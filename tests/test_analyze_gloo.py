"""Gloo and c10d store lines (shared/reference/pytorch-builtins.md 4.2 and observed-here.md): no rank in the
message, so the rank comes from the prefix or the file."""

from __future__ import annotations

import pytest

from analyze_helpers import events_of, one
from syncdoctor.analyze.model import Kind, Origin
from syncdoctor.analyze.parsers.gloo import is_loopback

GLOO_TIMEOUTS = [
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for "
     "recv operation to complete", 1800000, "recv"),
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:72] Timed out waiting 1800000ms for "
     "send operation to complete", 1800000, "send"),
    ("[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed "
     "out waiting 5000ms for recv operation to complete", 5000, "recv"),
    ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out "
     "waiting 5000ms for send operation to complete", 5000, "send"),
    ("RuntimeError: [third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:136] Timed out waiting 60000ms for recv "
     "operation to complete", 60000, "recv"),
]


@pytest.mark.parametrize(("line", "ms", "direction"), GLOO_TIMEOUTS)
def test_gloo_timeouts_take_the_rank_from_prefix_or_file(line, ms, direction) -> None:
    event = one(line, Kind.GLOO_TIMEOUT, Origin(rank=3, host="host1"))
    assert event.data["ms"] == ms and event.data["direction"] == direction
    expected = 2 if line.startswith("[rank2]") else 3
    assert event.origin.rank == expected and event.origin.host == "host1"


def test_gloo_timeout_without_any_rank_stays_unattributed() -> None:
    assert one(GLOO_TIMEOUTS[0][0], Kind.GLOO_TIMEOUT).origin.rank is None


@pytest.mark.parametrize(("line", "addr", "port", "how"), [
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
     "[172.28.0.12]:14004", "172.28.0.12", 14004, "closed"),
    ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
     "peer [10.217.203.2]:56722. This is typically caused by a remote worker crashing. Check the logs of the remote "
     "worker before reporting an error. GLHF!", "10.217.203.2", 56722, "closed"),
    ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
     "[2401:db00:1234::5]:8594", "2401:db00:1234::5", 8594, "closed"),
    ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
     "[10.217.203.1]:60813: Connection reset by peer. This is typically caused by a remote worker hanging",
     "10.217.203.1", 60813, "reset"),
])
def test_gloo_peer_gone(line, addr, port, how) -> None:
    event = one(line, Kind.PEER_CLOSED)
    assert (event.data["peer_addr"], event.data["peer_port"], event.data["how"]) == (addr, port, how)


def test_pair_closure_timeout() -> None:
    event = one("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Application timeout caused pair "
                "closure", Kind.GLOO_TIMEOUT)
    assert event.data["pair_closure"]


def test_gloo_connect_debug_logger_line() -> None:
    line = ("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, "
            "willRetry=1, retry=1, retryLimit=3, rank=1, size=4, local=[127.0.0.1]:8323, remote=[127.0.0.1]:19861$1, "
            "error=SO_ERROR: Connection refused, remote=[127.0.0.1]:19861$1")
    event = one(line, Kind.GLOO_CONNECT_FAILED)
    assert event.origin.rank == 1  # the gloo rank, since nothing else names one
    assert event.data["size"] == 4 and event.data["loopback_local"] and event.data["loopback_remote"]
    assert event.data["error"] == "SO_ERROR: Connection refused" and event.data["will_retry"]
    # a prefix or file rank wins over the gloo rank (subgroups number their members differently)
    assert one(line, Kind.GLOO_CONNECT_FAILED, Origin(rank=5)).origin.rank == 5


@pytest.mark.parametrize(("line", "remote", "loopback"), [
    ("[E1129 12:59:46.221457616 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with [.../gloo/transport/tcp/"
     "pair.cc:152] timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:6043$2", "127.0.0.1", True),
    ("RuntimeError: Gloo connectFullMesh failed with [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
     "pair.cc:553] Connection closed by peer [127.0.0.1]:18085. This is typically caused by a remote worker "
     "crashing.", "127.0.0.1", True),
    ("RuntimeError: Gloo connectFullMesh failed with [../pair.cc:152] timed out connecting: SO_ERROR: No route to "
     "host, remote=[10.0.0.7]:4123", "10.0.0.7", False),
])
def test_connect_full_mesh(line, remote, loopback) -> None:
    event = one(line, Kind.GLOO_CONNECT_FAILED)
    assert event.data["remote_addr"] == remote and event.data["loopback_remote"] is loopback
    assert not [e for e in events_of(line) if e.kind is Kind.PEER_CLOSED]  # not a peer death


def test_loopback_fallback_warning() -> None:
    one("[W1129 10:00:00.0 ProcessGroupGloo.cpp:760] Warning: Unable to resolve hostname to a (local) address. Using "
        "the loopback address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME. "
        "(function operator())", Kind.GLOO_LOOPBACK)


def test_interface_missing() -> None:
    event = one("RuntimeError: [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:84]"
                " ifa != nullptr. Unable to find address for: ens9", Kind.INTERFACE_MISSING)
    assert event.data["ifname"] == "ens9"


def test_size_mismatch_enforce() -> None:
    event = one("  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
                "op.preamble.length <= op.nbytes. 4196 vs 4. Received data size doesn't match expected size. Is there "
                "a distributed collective mismatch in your code?", Kind.COLLECTIVE_MISMATCH)
    assert (event.data["received_bytes"], event.data["expected_bytes"]) == (4196, 4)


@pytest.mark.parametrize(("addr", "expected"), [("127.0.0.1", True), ("127.0.1.1", True), ("[::1]", True),
                                                ("10.0.0.1", False), ("fe80::1%eth0", False), ("junk", False)])
def test_is_loopback(addr, expected) -> None:
    assert is_loopback(addr) is expected


STORE = [
    ("torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/2",
     {"what": "wait", "missing_ranks": [2]}),
    ("RuntimeError: Timed out initializing process group in store based barrier on rank 3, for key: "
     "store_based_barrier_key:1 (world_size=4, num_workers_joined=3, timeout=0:30:00)",
     {"what": "barrier", "world_size": 4, "joined": 3}),
    ("[W1129 14:00:21.628068499 socket.cpp:494] [c10d] waitForInput: socket SocketImpl(fd=4, addr=[::]:10545, "
     "remote=[fdff:ffff::f88c:d448:687f:0]:62159) timed out after 5000ms", {"what": "socket-timeout", "ms": 5000}),
    ("torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms while trying to connect to "
     "(10.0.0.1, 29500).", {"what": "connect", "store_host": "10.0.0.1", "store_port": 29500}),
    ("RuntimeError: The client socket has failed to connect to [node0]:29500 (errno: 111 - Connection refused).",
     {"what": "connect", "store_host": "node0", "store_port": 29500}),
    ("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
     "failed. See inner exception for details.", {"what": "connect"}),
]


@pytest.mark.parametrize(("line", "expected"), STORE)
def test_store_errors(line, expected) -> None:
    event = one(line, Kind.STORE_ERROR)
    for key, value in expected.items():
        assert event.data[key] == value
