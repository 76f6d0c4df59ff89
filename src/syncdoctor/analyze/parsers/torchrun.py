"""torchrun (torch.distributed.elastic) failure reports. Pure: no I/O.

* the agent's log lines ``failed (exitcode: -9) local_rank: 1 (pid: 5678) of binary: /usr/bin/python`` and
  ``Sending process 5678 closing signal SIGTERM`` (after another worker failed, the agent stops the rest);
* the ``ChildFailedError`` summary, one record per failed worker, the first observed failure last::

      torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
      ============================================================
      train.py FAILED
      ------------------------------------------------------------
      Failures:
      [1]:
        time      : 2024-05-01_12:00:00
        host      : node1
        rank      : 3 (local_rank: 1)
        exitcode  : -9 (pid: 1235)  (SIGKILL)
        error_file: <N/A>
        traceback : Signal 9 (SIGKILL) received by PID 1235
      ------------------------------------------------------------
      Root Cause (first observed failure):
      [0]:
        …
      ============================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event
from syncdoctor.analyze.parsers.prefixes import parse_iso_time

__all__ = ["KEYWORDS", "SIGNAL_WORDS", "FailureTable", "drop_records_inside_tables", "follow", "parse", "signal_name",
           "signal_number", "windows_signal"]

KEYWORDS = ("exitcode", "closing signal", "ChildFailedError", "Root Cause (first observed failure)", "received by PID")

_AGENT_FAILED = re.compile(
    r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+)(?: \(pid: (?P<pid>\d+)\)(?: of (?:binary|fn): "
    r"(?P<what>.+))?"
    # (a paste that cut the line after the local rank, markdown's emphasis left around it)
    r"|[*_`'\"\s]*$)"
    # the same record in other words (a vendor's build of torch: PAI-DLC): ``failed (exitcode: -9) for binary located
    # at /usr/bin/python3.10 with local_rank: 0 (process ID: 71)``
    r"|failed \(exitcode: (?P<code2>-?\d+)\) for (?:binary|fn) located at \S+ with local_rank: (?P<local2>\d+) "
    r"\(process ID: (?P<pid2>\d+)\)"
)
_SIGTERM = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>SIG\w+)")
_FIELD_NAMES = ("time", "host", "rank", "exitcode", "error_file", "traceback")
_FIELD = re.compile(rf"^\s*(?P<key>{'|'.join(_FIELD_NAMES)})\s*:\s?(?P<value>.*)$")
# a record copied from a rendered page: ``rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>``
_FLAT_RECORD = re.compile(r"^\s*rank\s*:?\s*(?P<rank>\d+)\s*\(local[_ ]rank:\s*(?P<local>\d+)\)\s*exitcode\s*:?\s*"
                          r"(?P<code>-?\d+)(?:\s*\(pid:\s*(?P<pid>\d+)\))?")
_RANK = re.compile(r"(?P<rank>-?\d+)(?: \(local_rank: (?P<local>-?\d+)\))?")
_EXIT = re.compile(r"(?P<code>-?\d+)(?: \(pid: (?P<pid>\d+)\))?(?:\s+\((?P<sig>SIG\w+)\))?")
# strsignal()'s words for the fatal signals, as shells, faulthandler and launchers print them
SIGNAL_WORDS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
                "Floating point exception": "SIGFPE"}
_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL",
            11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}


# Windows' structured exceptions that end a process as these signals end a POSIX one, by their codes (an exit code, or
# faulthandler's ``Windows fatal exception: code 0xc0000409``) and by faulthandler's words for them
_WINDOWS_CODES = {0xC0000005: "SIGSEGV", 0xC00000FD: "SIGSEGV", 0xC000001D: "SIGILL", 0xC0000094: "SIGFPE",
                  0xC0000409: "SIGABRT"}  # access violation, stack overflow, illegal instruction, division by zero,
#                                           a fast-fail (abort)
_WINDOWS_WORDS = {"access violation": 0xC0000005, "stack overflow": 0xC00000FD, "illegal instruction": 0xC000001D,
                  "integer divide by zero": 0xC0000094, "int divide by zero": 0xC0000094}


def windows_signal(code: int | str) -> str | None:
    """The signal a Windows exception code stands for (``0xc0000005`` or -1073741819 -> SIGSEGV; faulthandler's
    ``access violation`` too), else None."""
    if isinstance(code, str):
        text = code.strip().lower()
        number = _WINDOWS_WORDS.get(text)
        if number is None:
            try:
                number = int(text, 16) if text.startswith("0x") else int(text)
            except ValueError:
                return None
        code = number
    return _WINDOWS_CODES.get(code & 0xFFFFFFFF)


def signal_number(name: str | None) -> int | None:
    """``SIGKILL`` -> 9 (the signals this module names), else None."""
    return next((number for number, known in _SIGNALS.items() if known == name), None)


def signal_name(exitcode: int | None) -> str | None:
    """torchrun reports death by signal N as exit code -N."""
    if exitcode is None or exitcode >= 0:
        return None
    return _SIGNALS.get(-exitcode, f"signal {-exitcode}")


def shell_signal_name(status: int | None) -> str | None:
    """The signal of a shell's exit status (a launcher that reports it as the shell does): above 128 it is death by
    signal ``status - 128`` (137: SIGKILL); torchrun's negative code is read as :func:`signal_name` reads it."""
    if status is not None and 128 < status < 160:
        return signal_name(128 - status)
    return signal_name(status)


@dataclass
class FailureTable:
    """Collects the records of one ChildFailedError summary."""

    head: Line
    max_lines: int = 400
    records: list[tuple[Line, dict[str, str], bool, tuple[int, int]]] = field(default_factory=list)
    current: dict[str, str] | None = None
    current_line: Line | None = None
    current_start: int = 0  # the line of the record's ``[N]:``: with the last line before the next, its extent
    pending: list[str] = field(default_factory=list)  # keys read on lines of their own, waiting for values
    root_section: bool = False
    started: bool = False
    last: int = 0  # the last line number fed: the table's extent

    def _close(self, end: int) -> None:
        if self.current is not None and self.current_line is not None and "rank" in self.current:
            self.records.append((self.current_line, self.current, self.root_section, (self.current_start, end)))
        self.current = None
        self.current_line = None
        self.pending = []

    def feed(self, line: Line) -> bool:
        before, self.last = self.last, line.ref.line
        body = line.body.rstrip()
        stripped = body.strip()
        if stripped.startswith("====="):
            if self.started and self.root_section:
                self._close(before)
                return False
            self.started = True
            return True
        if stripped.startswith(("Root Cause", "-----")):
            self._close(before)  # (the rule between the sections ends the last record of the first)
            if stripped.startswith("Root Cause"):
                self.root_section = True
                self.started = True
            return True
        if stripped.startswith("Failures:"):
            self.started = True
            return True
        if re.fullmatch(r"\[\d+\]:", stripped):
            self._close(before)
            self.current = {}
            self.current_start = line.ref.line
            return True
        if self.current is None:
            return True  # titles, section rules, <NO_OTHER_FAILURES>
        match = _FIELD.match(body)
        if match:
            key = match["key"]
            if key not in self.current:
                self.current[key] = match["value"].strip()
            if key == "rank":
                self.current_line = line
            return True
        flat = _FLAT_RECORD.match(body)
        if flat:  # copied from a rendered page: one line, underscores taken as emphasis
            self.current.setdefault("rank", f"{flat['rank']} (local_rank: {flat['local']})")
            self.current.setdefault("exitcode", flat["code"] + (f" (pid: {flat['pid']})" if flat["pid"] else ""))
            self.current_line = line
            return True
        if stripped in _FIELD_NAMES:  # the keys on their own lines, then their values in the same order
            self.pending.append(stripped)
        elif self.pending and line.text.strip():  # (a time alone reads as the line's timestamp, its body empty)
            self.current.setdefault(self.pending.pop(0), line.text.strip())
        return True  # traceback continuation lines

    def finish(self) -> list[Event]:
        self._close(self.last)
        events = []
        for line, record, root, extent in self.records:
            rank_match = _RANK.match(record.get("rank", ""))
            exit_match = _EXIT.match(record.get("exitcode", ""))
            if not rank_match:
                continue
            exitcode = int(exit_match["code"]) if exit_match else None
            host = record.get("host") or None
            time, time_text = parse_iso_time(record.get("time", ""))
            traceback = record.get("traceback", "")
            data = {
                "source": "summary",
                "root_cause": root,
                "exitcode": exitcode,
                "signal": (exit_match["sig"] if exit_match and exit_match["sig"] else signal_name(exitcode)),
                "pid": int(exit_match["pid"]) if exit_match and exit_match["pid"] else None,
                "local_rank": int(rank_match["local"]) if rank_match["local"] else None,
                "table_host": host,
                "error_file": record.get("error_file"),
                "traceback": traceback[:200],
                "table_lines": [self.head.ref.line, self.last],
                "record_lines": list(extent),  # the record's lines: a traceback in them is this worker's (error_file)
            }
            origin = Origin(
                rank=int(rank_match["rank"]),
                local_rank=data["local_rank"],  # type: ignore[arg-type]
                host=host if host and host not in ("localhost", "localhost.localdomain") else None,
                pid=data["pid"],  # type: ignore[arg-type]
            )
            event = make_event(Kind.WORKER_FAILED, line, origin=origin, data=data, time=time, time_text=time_text)
            # (its text, quoted as evidence: the record's fields that say how the worker failed, not its rank line
            # alone)
            told = "; ".join(f"{key}: {record[key]}" for key in ("rank", "host", "exitcode", "traceback")
                             if record.get(key) and record[key] != "<N/A>"
                             and not record[key].startswith("To enable traceback"))  # (the default: a link)
            events.append(replace(event, text=told[:300]) if told else event)
        return events


def follow(line: Line) -> FailureTable | None:
    body = line.body
    if "ChildFailedError:" in body:
        return FailureTable(line)
    if "Root Cause (first observed failure)" in body:
        table = FailureTable(line, started=True, root_section=True)
        return table
    return None


# a record of the failure table quoted without its header (a partial paste): "traceback : Signal 9 (SIGKILL)
# received by PID 1235", or the exit code line alone, "exitcode  : -9 (SIGKILL)" / "exitcode: -9"
_RECORD_SIGNAL = re.compile(r"Signal (?P<num>\d+) \((?P<sig>SIG\w+)\) received by PID (?P<pid>\d+|\w+)")
# (a positive code, a worker that exited with an error, only with its pid: ``exitcode  : 1 (pid: 132514)``)
_RECORD_EXIT = re.compile(r"^\s*exitcode\s*: (?:(?P<code>-\d+)(?: \((?P<sig>SIG\w+)\)| \(pid: (?P<pid>\d+)\))?|"
                          r"(?P<error>[1-9]\d{0,2}) \(pid: (?P<epid>\d+)\))\s*$")


def parse(line: Line) -> list[Event]:
    body = line.body
    match = _RECORD_SIGNAL.search(body) or _RECORD_EXIT.search(body)
    if match:  # the table's own follower reads these in a whole table too; the rule keeps the table's
        pid = match.groupdict().get("pid") or match.groupdict().get("epid")
        code = -int(match["num"]) if "num" in match.groupdict() else int(match["code"] or match["error"])
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(pid=int(pid)) if pid and pid.isdecimal() else None,
                           data={"source": "record", "exitcode": code, "signal": signal_name(code)})]
    match = _AGENT_FAILED.search(body)
    if match:
        code = int(match["code"] or match["code2"])
        local, worker = int(match["local"] or match["local2"]), match["pid"] or match["pid2"]
        pid = int(worker) if worker else None
        # the line is the agent's: the worker's pid, not the agent's, identifies the rank
        return [make_event(Kind.WORKER_FAILED, line, origin=Origin(local_rank=local, pid=pid), data={
            "source": "agent", "exitcode": code, "signal": signal_name(code), "local_rank": local,
            **({"worker_pid": pid} if pid is not None else {})})]
    match = _SIGTERM.search(body)
    if match:
        stopped = make_event(Kind.WORKER_TERMINATED, line, origin=Origin(pid=int(match["pid"])), data={
            "worker_pid": int(match["pid"]), "signal": match["sig"]})
        if match["sig"] in _FORWARDED:
            # the agent passes on the signal it received (a worker that failed gets the others SIGTERM): it was
            # stopped from outside, its own ``SignalException`` below, where the paste has it
            return [stopped, make_event(Kind.AGENT_SIGNAL, line, data={"signal": match["sig"], "source": "forwarded"})]
        return [stopped]
    return []


_FORWARDED = ("SIGHUP", "SIGINT")  # signals torchrun's agent sends its workers only after receiving them itself


def wants_record_fields(event: Event) -> bool:
    """A record's exit code read without its table, its rank not known: the record's fields above it say it."""
    return event.kind is Kind.WORKER_FAILED and event.data.get("source") == "record" and event.origin.rank is None


def record_fields(line: Line, event: Event, above: list[str]) -> list[Event] | None:
    """``event`` with the rank, local rank and host of its record's lines just above it (``rank      : 1
    (local_rank: 1)``, ``host      : node1``), where the paste kept them; nothing when it did not."""
    rank = local = None
    host = None
    for body in above[:3]:  # the table's own fields, read as its follower reads them
        match = _FIELD.match(body)
        if match is None or match["key"] not in ("rank", "host"):
            break
        value = match["value"].strip()
        ranked = _RANK.fullmatch(value) if match["key"] == "rank" else None
        if ranked is not None and ranked["local"] is not None:
            rank, local = int(ranked["rank"]), int(ranked["local"])
        elif match["key"] == "host" and value:
            host = value
        else:
            break
    if rank is None:
        return None
    origin = replace(event.origin, rank=rank, local_rank=local,
                     host=host if host and host not in ("localhost", "localhost.localdomain") else event.origin.host)
    return [replace(event, origin=origin, data={**event.data, "local_rank": local, "table_host": host})]


def drop_records_inside_tables(events: list[Event]) -> list[Event]:
    """The lines of a whole failure table are read by its follower, and the record lines also alone (for a table
    pasted without its header): keep only the table's reading of them."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for event in events:
        lines = event.data.get("table_lines") if event.kind is Kind.WORKER_FAILED else None
        if lines:
            spans.setdefault(event.ref.source, []).append((int(lines[0]), int(lines[1])))
    if not spans:
        return events
    return [e for e in events if not (
        e.kind is Kind.WORKER_FAILED and e.data.get("source") == "record"
        and any(start <= e.ref.line <= end for start, end in spans.get(e.ref.source, ())))]

