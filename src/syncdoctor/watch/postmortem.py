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
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from syncdoctor.watch.events import HANG_CODES, Event
from syncdoctor.watch.records import RankRecord, format_ranks

__all__ = ["PEER_ERRORS", "diagnose_failure", "is_peer_error", "unheard_when_store_lost"]

PEER_ERRORS = (
    "connection closed by peer", "connection reset by peer", "broken pipe", "socket timeout",
    "connection refused", "timed out waiting", "nccl communicator was aborted", "remote process exited",
    "ncclremoteerror", "watchdog caught collective operation timeout", "end of file",
)


def is_peer_error(text: str | None) -> bool:
    lowered = (text or "").lower()
    return any(pattern in lowered for pattern in PEER_ERRORS)


def unheard_when_store_lost(records: Mapping[int, RankRecord]) -> set[int]:
    """The ranks to take as silent when the store went away (its host's agent ending the job) before a silent rank
    could be told from a slow one: when every rank that failed so far failed of a peer's connection error, the
    ranks that said nothing (still ``running``) are where a peer died. None when a rank failed of an error of its
    own (that one names the origin)."""
    failed = [r for r in records.values() if r.state == "failed"]
    if not failed or not all(is_peer_error(r.error) for r in failed):
        return set()
    return {r.rank for r in records.values() if r.state in ("running", "starting")}


def diagnose_failure(
    records: Mapping[int, RankRecord],
    silent: set[int],
    world_size: int,
    *,
    wall: float = 0.0,
    reported: Sequence[Mapping[str, Any]] = (),
    unheard: bool = False,
) -> list[Event]:
    """Events naming the rank(s) that started a crash cascade.

    ``records``: the latest record of every rank; ``silent``: ranks whose heartbeat stopped while they were
    still ``running`` (no goodbye) during the linger window; ``reported``: events the job's monitor already
    raised and did not resolve (JSON form). When the ranks fail of a problem already reported (a late rank
    that made the others time out), that event is recalled instead of a weaker guess. ``unheard``: the silent
    ranks were only not heard from when the store went away (:func:`unheard_when_store_lost`): a warning.
    """
    events = _diagnose(records, silent, world_size, wall)
    if unheard and events and events[0].code in ("W105", "W106"):
        first = events[0]
        events[0] = replace(first, status="warning", title=first.title + " (the store went away before their "
                            "heartbeats could be judged: they had said nothing by then)")
    hangs = [e for e in reported if e.get("code") in HANG_CODES]
    if not hangs:
        return events
    earlier = hangs[-1]
    named = set(earlier.get("ranks") or ())
    if events and events[0].code in ("W105", "W106") and not set(events[0].ranks) & named:
        return events  # something new: a rank died
    if events and events[0].code == "W108" and not is_peer_error(records[events[0].ranks[0]].error):
        return events  # a real exception says more than the earlier warning
    title = (
        f"the job fails of the problem reported at {_clock(float(earlier.get('at') or 0))}: "
        f"{earlier.get('code')} {earlier.get('title')}"
    )
    return [
        Event(
            str(earlier.get("code")), "confirmed", title, ranks=tuple(int(r) for r in named),
            hosts=tuple(str(h) for h in earlier.get("hosts") or ()), pids=tuple(int(p) for p in earlier.get("pids") or ()),
            group=earlier.get("group"), seq=earlier.get("seq"), at=wall, key=f"postmortem:{earlier.get('key')}",
            detail={"postmortem": True, "reported_earlier": earlier.get("key"),
                    "failed": {str(r.rank): r.error for r in records.values() if r.state == "failed"}},
        )
    ]


def _diagnose(records: Mapping[int, RankRecord], silent: set[int], world_size: int, wall: float) -> list[Event]:
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
        # torchrun ends a node's other workers when one dies: a whole host vanishing is then one rank's death
        # as much as the node's, and the agent's failure table says which
        launched = whole_host and all(records[r].node >= 0 for r in vanished)
        title = (
            f"{what} without an error while ranks {followers} failed"
            + (f" with '{_short(first_error)}'" if first_error else "")
            + (": the node went down, or one of them died (killed, OOM-killed or a native crash) and its launcher "
               "ended the others; the launcher's failure table on that host names which (exitcode -9 or a signal)"
               if launched else ": it died first (killed, OOM-killed or a native crash)")
        )
        events.append(
            Event(
                "W106" if whole_host else "W105", "warning" if launched else "confirmed", title, ranks=tuple(vanished),
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
    origin = next((r for r in failed if not is_peer_error(r.error)), None)
    if origin is None:
        laggards = _laggards(records, failed)
        if laggards:
            title = (
                f"{', '.join(f'rank {r} ({records[r].where}, pid {records[r].pid})' for r in laggards)} had not "
                f"entered the collective that ranks {format_ranks(x.rank for x in failed)} failed in "
                f"('{_short(first_error)}'): it was late, still running elsewhere"
            )
            events.append(
                Event(
                    "W101", "confirmed", title, ranks=tuple(laggards), hosts=tuple(sorted({records[r].where for r in laggards})),
                    pids=tuple(records[r].pid for r in laggards), at=wall, key=f"postmortem:{format_ranks(laggards)}",
                    detail={"failed": {str(r.rank): r.error for r in failed}, "postmortem": True},
                )
            )
            return events
        origin = failed[0]
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


def _laggards(records: Mapping[int, RankRecord], failed: Sequence[RankRecord]) -> list[int]:
    """Running ranks that had not entered a collective the failed ranks were inside."""
    out = set()
    for rec in failed:
        for name, progress in rec.groups.items():
            if not progress.pending:
                continue
            seq = progress.completed + 1
            for rank, other in records.items():
                mine = other.groups.get(name)
                if other.state in ("running", "starting") and (mine is None or mine.entered < seq):
                    out.add(rank)
    return sorted(out)


def _clock(wall: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(wall)) if wall else "?"


def _short(text: str | None, limit: int = 160) -> str:
    """First line, without C++ source locations such as ``[/__w/.../pair.cc:537]``."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "an exception"
    line = _SOURCE_PREFIX.sub("", line)
    return line if len(line) <= limit else line[: limit - 1] + "…"
