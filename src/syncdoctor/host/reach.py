"""Whether MASTER_ADDR:MASTER_PORT accepts a TCP connection. Does I/O (one connect, short timeout).

Results: ``open`` (something listens: the job's store, or another program), ``refused`` (the host
answered but nothing listens on the port: rank 0 not started yet, or the wrong port), ``timeout``
(no answer: a firewall drops the packets or the address is wrong), ``unreachable`` (no route),
``unresolvable`` (the name does not resolve) or ``error``. The probe connects and closes at once;
a running c10d store just sees a client that went away.
"""

from __future__ import annotations

import errno
import logging
import socket
import time
from collections.abc import Callable

from syncdoctor.host.route import AddressResolver, resolve_first
from syncdoctor.host.types import ReachFacts

__all__ = ["check_reach"]

log = logging.getLogger(__name__)

_UNREACHABLE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EHOSTDOWN, errno.ENETDOWN}


def check_reach(
    host: str,
    port: int,
    timeout: float = 2.0,
    resolver: AddressResolver = resolve_first,
    clock: Callable[[], float] = time.monotonic,
) -> ReachFacts:
    """Try one TCP connection to ``host:port``; never raises."""
    try:
        family, address = resolver(host)
    except (OSError, UnicodeError, IndexError, ValueError) as exc:
        return ReachFacts(
            host, port, "unresolvable", detail=str(exc) or type(exc).__name__, timeout_s=timeout
        )
    start = clock()
    result, detail = "open", None
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect((address, port))
    except ConnectionRefusedError as exc:
        result, detail = "refused", exc.strerror or str(exc)
    except TimeoutError:
        result, detail = "timeout", f"no answer within {timeout:g} s"
    except OSError as exc:
        result = "unreachable" if exc.errno in _UNREACHABLE else "error"
        detail = exc.strerror or str(exc)
    except (OverflowError, ValueError) as exc:  # a port out of range
        result, detail = "error", str(exc)
    return ReachFacts(
        host,
        port,
        result,
        address=address,
        detail=detail,
        elapsed_s=round(clock() - start, 4),
        timeout_s=timeout,
    )
