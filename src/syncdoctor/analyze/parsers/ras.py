"""NCCL RAS reports (``ncclras`` output, NCCL >= 2.24), text and JSON. Pure: no I/O.

Text: the ``Errors`` and ``Warnings`` sections list an issue word (``INCOMPLETE``, ``DEAD``, ``MISMATCH``,
``TIMEOUT``...), optionally after a communicator id ``#0-0 (cf264af53edbe986)``, then indented lines such as
``Process 3487984 on node 172.16.64.213 managing GPU 5``, ``The missing rank: 21`` or ``Rank 7 -- GPU 3
managed by process 3748990 on node node1``. Monitor mode prints ``[ts] PEER_DEAD: Process <pid> on node <ip>
managing GPU <n>``.

JSON (``-f json``, 2.28.7+): ``communicators[].ranks[]{rank, host, pid, cuda_dev, status{…}}`` and
``missing_ranks[]{rank, host, pid, status{unresponsive, considered_dead}}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from syncdoctor.analyze.model import Event, Kind, Origin, Ref
from syncdoctor.analyze.parsers.base import Line, clip, make_event
from syncdoctor.analyze.paste import FILLER

__all__ = ["KEYWORDS", "looks_like_ras_json", "looks_like_ras_text", "parse", "parse_json", "parse_text"]

# a line of a MISMATCH listing (2.24+), also quoted alone: ``Rank 1 has launched up to operation 288686 -- GPU 0
# managed by process 4242 on node spark-1``: where each listed rank got to, read line by line (rules.progress
# compares them)
KEYWORDS = ("launched up to operation", "not launched any operations")
# (``Rank 14 has not launched any operations -- GPU 6 …``: none yet, operation 0)
_RANK_LAUNCHED = re.compile(r"\bRank (?P<rank>\d{1,7}) has (?:launched up to operation (?P<op>\d{1,20})"
                            r"|not launched any operations)")

_ISSUE = re.compile(r"^(?:#(?P<comm>\d+-\d+) \((?P<hash>[0-9a-f]+)\) )?(?P<issue>[A-Z][A-Z_]{2,20})\s*$")
_PROCESS = re.compile(r"Process (?P<pid>\d+) on node (?P<node>\S+) managing GPU (?P<gpu>\d+)")
_RANK_LINE = re.compile(r"Rank (?P<rank>\d+) -- GPU (?P<gpu>\d+) managed by process (?P<pid>\d+) on node (?P<node>\S+)")
_MISSING = re.compile(r"missing ranks?: (?P<ranks>[\d, ]+)", re.IGNORECASE)
_PEER_DEAD = re.compile(r"PEER_DEAD: Process (?P<pid>\d+) on node (?P<node>\S+) managing GPU (?P<gpu>\d+)")
_SECTIONS = ("Errors", "Warnings")
# the Communicators table: "    0         1        32         8       256       256   RUNNING      OK"
_COMM_ROW = re.compile(r"^\s*(?P<group>\d+)\s+(?P<comms>\d+)\s+(?P<nodes>\d+)\s+(?P<per_node>\d+)\s+"
                       r"(?P<per_comm>\d+)\s+(?P<in_group>\d+)\s+(?P<status>[A-Z_]+)\s+(?P<errors>[A-Z_]+)\s*$")
# MISMATCH: "30 ranks have launched up to operation 640" / "2 ranks have launched up to operation 641", then the
# ranks of the smaller group, which may be ahead of the others or behind them
_LAUNCHED = re.compile(r"(?P<count>\d+) ranks? ha(?:ve|s) launched up to operation (?P<op>\d+)")


def parse(line: Line) -> list[Event]:
    """Each ``Rank N has launched up to operation M`` on the line (a paste may run two together)."""
    return [make_event(Kind.RAS, line, origin=Origin(rank=int(m["rank"])), data={
        "issue": "LAUNCHED", "ranks": [int(m["rank"])], "operation": int(m["op"] or 0)})
        for m in _RANK_LAUNCHED.finditer(line.body)]


def looks_like_ras_text(head: str) -> bool:
    return ("Communicators" in head and "Group" in head and "=====" in head) or "PEER_DEAD:" in head


def looks_like_ras_json(doc: object) -> bool:
    return isinstance(doc, Mapping) and ("communicators" in doc or "missing_ranks" in doc) and "entries" not in doc


def parse_text(text: str, source: str) -> list[Event]:
    """Events for each issue of the Errors/Warnings sections and each PEER_DEAD monitor line."""
    events: list[Event] = []
    section = ""
    current: dict[str, Any] | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            events.extend(_issue_events(current, source))
        current = None

    for number, raw in enumerate(text.splitlines(), start=1):
        if raw == FILLER:  # the blank line a double-spaced paste added
            continue
        line = raw.rstrip()
        stripped = line.strip()
        dead = _PEER_DEAD.search(line)
        if dead:
            events.append(Event(Kind.RAS, Ref(source, number), clip(line), Origin(host=dead["node"], pid=int(dead["pid"])),
                                data={"issue": "DEAD", "processes": [_proc(dead)], "ranks": []}))
            continue
        if stripped in _SECTIONS:
            close()
            section = stripped
            continue
        row = _COMM_ROW.match(line) if not section else None
        if row:  # one group of communicators: their state, and whether RAS found anything wrong with them
            events.append(Event(Kind.RAS, Ref(source, number), clip(line), Origin(), data={
                "issue": "STATUS", "status": row["status"], "errors": row["errors"], "ranks": [], "processes": [],
                "ranks_per_comm": int(row["per_comm"]), "comms": int(row["comms"])}))
            continue
        if not section or not stripped or set(stripped) == {"="}:
            if not stripped:
                close()
            continue
        match = _ISSUE.match(stripped)
        if match and not line.startswith(" "):
            close()
            current = {"issue": match["issue"], "comm": match["comm"], "comm_hash": match["hash"],
                       "section": section, "line": number, "text": line, "processes": [], "ranks": [], "detail": "",
                       "launched": []}
            continue
        if current is None:
            continue
        if not current["detail"]:
            current["detail"] = stripped
        for proc in _PROCESS.finditer(line):
            current["processes"].append(_proc(proc))
        for rank_line in _RANK_LINE.finditer(line):
            current["ranks"].append(int(rank_line["rank"]))
            current["processes"].append(_proc(rank_line) | {"rank": int(rank_line["rank"])})
        launched = _LAUNCHED.search(line)
        if launched:
            current["launched"].append((int(launched["count"]), int(launched["op"])))
        missing = _MISSING.search(line)
        if missing:
            current["ranks"].extend(int(r) for r in re.findall(r"\d+", missing["ranks"]))
    close()
    return events


def _proc(match: re.Match[str]) -> dict[str, Any]:
    return {"pid": int(match["pid"]), "node": match["node"], "gpu": int(match["gpu"])}


def _issue_events(issue: Mapping[str, Any], source: str) -> list[Event]:
    data = {key: issue[key] for key in ("issue", "comm", "comm_hash", "section", "processes", "ranks", "detail")}
    listed = len(set(issue["ranks"]))
    groups = issue.get("launched") or []
    if issue["issue"] == "MISMATCH" and listed and len(groups) >= 2:
        theirs = [op for count, op in groups if count == listed]
        if len(theirs) == 1:  # the listed ranks are the group of their size: ahead of the others, or behind
            data["ahead"] = theirs[0] > min(op for _count, op in groups)
            data["operations"] = sorted(op for _count, op in groups)
    ref = Ref(source, issue["line"])
    text = clip(f"{issue['text'].strip()}: {issue['detail']}")
    if issue["ranks"] or not issue["processes"]:
        return [Event(Kind.RAS, ref, text, Origin(rank=rank) if len(issue["ranks"]) == 1 else Origin(), data=data)
                for rank in (issue["ranks"][:1] or [None])]
    return [Event(Kind.RAS, ref, text, Origin(host=proc["node"], pid=proc["pid"], rank=proc.get("rank")), data=data)
            for proc in issue["processes"]]


def _get(mapping: object, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def parse_json(doc: Mapping[str, Any], source: str) -> list[Event]:
    """Events for missing ranks and for ranks whose status shows an error, abort or stalled init."""
    events: list[Event] = []
    ref = Ref(source)
    for item in _list(doc.get("missing_ranks")):
        status = _get(item, "status")
        issue = "DEAD" if _get(status, "considered_dead") else "INCOMPLETE"
        rank = _get(item, "rank")
        events.append(Event(
            Kind.RAS, ref, clip(f"RAS {issue}: rank {rank} on {_get(item, 'host')} (pid {_get(item, 'pid')})"),
            Origin(rank=rank if isinstance(rank, int) else None, host=_str(_get(item, "host")),
                   pid=_get(item, "pid") if isinstance(_get(item, "pid"), int) else None),
            data={"issue": issue, "ranks": [rank] if isinstance(rank, int) else [], "processes": []}))
    for comm in _list(doc.get("communicators")):
        counts: dict[int, int] = {}
        for member in _list(_get(comm, "ranks")):
            status = _get(member, "status")
            rank = _get(member, "rank")
            total = _get(member, "collective_counts")
            if isinstance(rank, int) and isinstance(total, Mapping):
                counts[rank] = sum(v for v in total.values() if isinstance(v, int) and not isinstance(v, bool))
            bad = [k for k in ("async_error", "abort_flag") if _get(status, k)]
            if _get(status, "init_state") not in (None, 0):
                bad.append("init_state")
            if bad and isinstance(rank, int):
                events.append(Event(
                    Kind.RAS, ref, clip(f"RAS: rank {rank} of communicator {_get(comm, 'hash')} has {', '.join(bad)}"),
                    Origin(rank=rank, host=_str(_get(member, "host"))),
                    data={"issue": "ERROR", "flags": bad, "ranks": [rank], "processes": []}))
        if counts and len(set(counts.values())) > 1:
            low = min(counts.values())
            behind = sorted(rank for rank, count in counts.items() if count == low)
            events.append(Event(
                Kind.RAS, ref, clip(f"RAS MISMATCH: ranks {behind} issued {low} collectives, others up to "
                                    f"{max(counts.values())}"),
                Origin(rank=behind[0]) if len(behind) == 1 else Origin(),
                data={"issue": "MISMATCH", "ranks": behind, "processes": [], "counts": counts}))
    return events


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
