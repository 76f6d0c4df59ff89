"""Who died first: the diagnosis the first failing rank makes before it exits. Pure: no I/O, no clock.

With gloo, a rank that dies makes its peers fail at once ("Connection reset by peer") and torchrun then
terminates everything within a second: no heartbeat threshold can be waited for. The first rank to die of
an exception therefore lingers a moment (``exit_linger_s``), watching the records: ranks that failed say so
(state ``failed`` with their error and failure order); a rank that vanished without saying anything (its
heartbeat stopped, no goodbye) died first of a signal, the OOM killer or a native crash. When every rank
said goodbye, the first failure whose error is not a peer's connection error is the origin.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from syncdoctor.watch.events import Event
from syncdoctor.watch.records import RankRecord, format_ranks

__all__ = ["PEER_ERRORS", "diagnose_failure", "is_peer_error"]

PEER_ERRORS = (
    "connection closed by peer", "connection reset by peer", "broken pipe", "socket timeout",
    "connection refused", "timed out waiting", "nccl communicator was aborted", "remote process exited",
    "ncclremoteerror", "watchdog caught collective operation timeout", "end of file",
)


def is_peer_error(text: str | None) -> bool:
    lowered = (text or "").lower()
    return any(pattern in lowered for pattern in PEER_ERRORS)


def diagnose_failure(
    records: Mapping[int, RankRecord], silent: set[int], world_size: int, *, wall: float = 0.0
) -> list[Event]:
    """Events naming the rank(s) that started a crash cascade.

    ``records``: the latest record of every rank; ``silent``: ranks whose heartbeat stopped while they were
    still ``running`` (no goodbye) during the linger window.
    """
    failed = sorted(
        (r for r in records.values() if r.state == "failed"),
        key=lambda r: (r.fail_order if r.fail_order is not None else 1 << 30, r.rank),
    )
    vanished = sorted(r for r in silent if r in records and records[r].state in ("running", "starting"))
    never = sorted(r for r in silent if r not in records and 0 <= r < world_size)
    first_error = failed[0].error if failed else None
    events: list[Event] = []
    if vanished:
        followers = format_ranks(r.rank for r in failed) if failed else "none yet"
        hosts = sorted({records[r].where for r in vanished})
        by_host: dict[str, list[int]] = {}
        for rank, rec in records.items():
            by_host.setdefault(rec.host_key, []).append(rank)
        whole_host = (
            len(hosts) == 1
            and len(vanished) > 1
            and sorted(by_host.get(records[vanished[0]].host_key, [])) == vanished
            and len(by_host) > 1
        )
        what = (
            f"host {hosts[0]}: all its ranks ({format_ranks(vanished)}) vanished"
            if whole_host
            else ", ".join(f"rank {r} ({records[r].where}, pid {records[r].pid})" for r in vanished)
            + " vanished"
        )
        title = (
            f"{what} without an error while ranks {followers} failed"
            + (f" with '{_short(first_error)}'" if first_error else "")
            + ": it died first (killed, OOM-killed or a native crash)"
        )
        events.append(
            Event(
                "W106" if whole_host else "W105", "confirmed", title, ranks=tuple(vanished),
                hosts=tuple(hosts), pids=tuple(records[r].pid for r in vanished), at=wall,
                key=f"postmortem:{format_ranks(vanished)}",
                detail={"failed": {str(r.rank): r.error for r in failed}, "postmortem": True},
            )
        )
        return events
    if never:
        followers = format_ranks(r.rank for r in failed) if failed else "none yet"
        title = (
            f"{'rank' if len(never) == 1 else 'ranks'} {format_ranks(never)} never reported and "
            f"vanished while ranks {followers} failed"
            + (f" with '{_short(first_error)}'" if first_error else "")
            + ": died first, before its watcher published (host unknown)"
        )
        events.append(
            Event("W105", "confirmed", title, ranks=tuple(never), at=wall, key=f"postmortem:{format_ranks(never)}",
                  detail={"failed": {str(r.rank): r.error for r in failed}, "postmortem": True})
        )
        return events
    if not failed:
        return events
    origin = next((r for r in failed if not is_peer_error(r.error)), failed[0])
    others = [r.rank for r in failed if r.rank != origin.rank]
    cause = "" if not is_peer_error(origin.error) else " (a connection error: the network, or a peer outside the job)"
    title = (
        f"rank {origin.rank} ({origin.where}, pid {origin.pid}) failed first: {_short(origin.error)}{cause}"
        + (f"; ranks {format_ranks(others)} followed" if others else "")
    )
    events.append(
        Event(
            "W108", "confirmed", title, ranks=(origin.rank,), hosts=(origin.where,), pids=(origin.pid,), at=wall,
            key=f"postmortem:{origin.rank}", detail={"failed": {str(r.rank): r.error for r in failed}, "postmortem": True},
        )
    )
    return events


_SOURCE_PREFIX = re.compile(r"\[[^\]\s]*\.(?:cc|cpp|h|hpp):\d+\]\s*")


def _short(text: str | None, limit: int = 160) -> str:
    """First line, without C++ source locations such as ``[/__w/.../pair.cc:537]``."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "an exception"
    line = _SOURCE_PREFIX.sub("", line)
    return line if len(line) <= limit else line[: limit - 1] + "…"
