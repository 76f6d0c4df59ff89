"""Tiny TCP sender and receiver, run inside lab hosts to measure a link's throughput.

Does I/O (sockets). Standard library only, so it starts in a few tens of milliseconds::

    python -m syncdoctor.testing._tcp sink PORT              prints "listening", then "<bytes> <seconds>"
    python -m syncdoctor.testing._tcp stream ADDR PORT SECS  sends as fast as it can for SECS seconds

The sink times from the first to the last byte of one connection, so connection set-up and the sender's
start-up do not count.
"""

from __future__ import annotations

import socket
import sys
import time

__all__ = ["main"]

_CHUNK = 1 << 16


def _sink(port: int) -> None:
    with socket.create_server(("0.0.0.0", port)) as server:
        print("listening", flush=True)
        conn, _ = server.accept()
        total, first, last = 0, 0.0, 0.0
        with conn:
            while data := conn.recv(_CHUNK):
                if not total:
                    first = time.monotonic()
                total += len(data)
                last = time.monotonic()
        print(f"{total} {max(last - first, 1e-9):.6f}", flush=True)


def _stream(addr: str, port: int, seconds: float) -> None:
    payload = b"\0" * _CHUNK
    with socket.create_connection((addr, port), timeout=10) as sock:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sock.sendall(payload)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "sink":
        _sink(int(args[1]))
        return 0
    if len(args) == 4 and args[0] == "stream":
        _stream(args[1], int(args[2]), float(args[3]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
