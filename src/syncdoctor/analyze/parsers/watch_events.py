"""``syncdoctor watch`` event files: one JSON object per line. Pure: no I/O.

The watcher writes ``{code: "W101", kind: "late-rank", status: "confirmed", title, ranks, hosts, pids, group,
seq, waiting_ranks, waited_s, detail, key, at}`` (:mod:`syncdoctor.watch.events`). The parser is tolerant
of other shapes too: it reads ``kind`` (or ``type``/``event``/``code``), the culprit ranks (``ranks``,
``rank``, ``culprit_ranks``, ``missing_ranks``), ``host``/``hosts``, ``seq`` (or ``sequence``,
``collective_seq``), ``op`` (or ``collective``), ``group`` (or ``pg``), a time (``at``/``time``/``ts``/
``timestamp``: epoch seconds or ISO text) and a message (``title``/``message``/``text``). Lines that are not
JSON objects are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from syncdoctor.analyze.model import Event, Kind, Origin, Ref
from syncdoctor.analyze.parsers.base import clip, normalize_op

__all__ = ["parse_line", "parse_record"]


def _first(record: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in record and record[key] not in (None, ""):
            return record[key]
    return None


def _int_list(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, str) and len(value) < 32:
        try:  # int() strips fewer characters than str.strip (not \x1c-\x1f), and refuses "--3"
            return [int(value.strip())]
        except ValueError:
            return []
    if isinstance(value, (list, tuple)):
        return [v for item in value[:4096] for v in _int_list(item)]
    return []


def _str_list(value: Any) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value[:1024] if isinstance(v, str) and v]
    return []


def _time(value: Any) -> tuple[float | None, str]:
    if isinstance(value, bool):
        return None, ""
    if isinstance(value, (int, float)) and 0 < value < 1e11:
        moment = datetime.fromtimestamp(float(value), tz=timezone.utc)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None, ""
    else:
        return None, ""
    seconds = ((moment.month - 1) * 31 + moment.day - 1) * 86400 + moment.hour * 3600 + moment.minute * 60
    return seconds + moment.second + moment.microsecond / 1e6, moment.isoformat(sep=" ", timespec="milliseconds")


def parse_record(record: Mapping[str, Any], ref: Ref) -> Event | None:
    """One watch event, or None when the object has no kind."""
    kind = _first(record, "kind", "type", "event", "code")
    code = record.get("code") if isinstance(record.get("code"), str) else None
    if not isinstance(kind, (str, int)):
        return None
    ranks = []
    for key in ("ranks", "rank", "culprit_ranks", "missing_ranks", "late_ranks", "stuck_ranks"):
        ranks += [r for r in _int_list(record.get(key)) if r not in ranks]
    hosts = _str_list(_first(record, "hosts", "host", "culprit_hosts"))
    seq = _int_list(_first(record, "seq", "sequence", "collective_seq", "seq_id"))
    op = _first(record, "op", "collective", "operation")
    group = _first(record, "group", "pg", "pg_id", "process_group")
    time, time_text = _time(_first(record, "at", "time", "ts", "timestamp", "wall_time"))
    message = _first(record, "title", "message", "text")
    text = clip(json.dumps(record, default=str, sort_keys=True)[:2000])
    status = record.get("status")
    data = {"kind": str(kind), "code": code, "status": str(status) if isinstance(status, str) else None,
            "ranks": ranks, "hosts": hosts, "waiting_ranks": _int_list(record.get("waiting_ranks")),
            "message": str(message)[:300] if message else ""}
    origin = Origin(rank=ranks[0] if len(ranks) == 1 else None, host=hosts[0] if len(hosts) == 1 else None)
    return Event(Kind.WATCH, ref, text, origin, time=time, time_text=time_text,
                 group=str(group) if group is not None else None, seq=seq[0] if seq else None,
                 op=normalize_op(op) if isinstance(op, str) else None, data=data)


def parse_line(text: str, ref: Ref) -> Event | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parse_record(record, ref) if isinstance(record, Mapping) else None
