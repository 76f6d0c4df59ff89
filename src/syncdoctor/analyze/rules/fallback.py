"""Never silent: when no rule explains the inputs but a line looks like an error, say so (A028), tied to what
the line names, with a confidence that says how much is missing and what to collect next. Pure: no I/O.

:func:`unexplained` lists the error-looking lines that no hypothesis cites, so the report shows what was
read even when it has an answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from syncdoctor.analyze.model import Category, Event, Evidence, Hypothesis, Kind, Ref
from syncdoctor.analyze.parsers.generic import ASSERT_MACRO
from syncdoctor.analyze.rules.common import (
    CONTINUATION_LINES,
    Attribution,
    after_stamp,
    attribute,
    evidence_of,
    hypothesis,
    ip_of,
    is_aftermath,
    just_above,
)
from syncdoctor.analyze.rules.joins import OWN_FAILURE, UNREAD, WORDS_SAY, lines_that_may_say_why
from syncdoctor.analyze.rules.node import task_ranks
from syncdoctor.analyze.rules.phrases import (
    MISSING_FOLDER,
    TORCHRUN_VARIABLES,
    folder_missing,
    read_as,
    strongest,
    unimplemented,
)
from syncdoctor.analyze.timeline import ERROR_KINDS, Timeline, is_comm_exception, trapped_after_comm_wait

__all__ = ["error_events", "unexplained", "unrecognised_error", "words_over_a_weak_verdict"]

_LOUD = ERROR_KINDS | {Kind.ERROR_LINE, Kind.AGENT_SIGNAL, Kind.IB_DEVICE_UNAVAILABLE}


def error_events(tl: Timeline) -> list[Event]:
    """Every event that reports an error, in input order (a launcher's record of a clean exit is none)."""
    out = []
    for event in tl.events:
        if event.kind not in _LOUD:
            continue
        if event.kind is Kind.WORKER_FAILED and event.data.get("exitcode") in (0, None) and not event.data.get("signal"):
            continue
        if event.kind is Kind.STORE_ERROR and event.data.get("ipv6_loopback"):
            continue  # (c10d's warning for localhost's IPv6 address: runs print it and go on; rules.setup reads it)
        out.append(event)
    return out


def unrecognised_error(tl: Timeline) -> list[Hypothesis]:
    """A028 for inputs with error lines and no other hypothesis."""
    errors = error_events(tl)
    if not errors:
        return _store_name_lead(tl)
    signals = [e for e in errors if e.kind is Kind.AGENT_SIGNAL]
    stops = [e.ref for e in tl.events if e.kind is Kind.AGENT_SIGNAL and e.data.get("source") != "slurm"]
    if signals and all(e.kind is Kind.AGENT_SIGNAL or any(_agents_aftermath(e, s, stops) for s in signals)
                       for e in errors):
        return _stopped_from_outside(tl, signals)
    # (a traceback's first line says only that one follows, and a line of its source code only what the code raises:
    # the exception further down is the error to quote)
    first = next((e for e in errors if not _traceback_only(e)), errors[0])
    own = attribute([first], tl)
    if not (own.ranks or own.hosts) and (host := _launcher_named_host(first.text)):
        own = replace(own, hosts=(host,), processes=())
    known = bool(own.ranks or own.hosts or own.processes)
    # (where its lines name none: the one host a launcher then reports a worker exiting with an error code on)
    where = own if known else (_exit_reported_after(tl, first) or _one_place(errors, tl))
    text = first.text.strip()
    title = f"an error no rule explains{' on ' + where.text if where.text else ''}: {text[:140]}"
    what = (f"{len(errors)} line{'s' if len(errors) > 1 else ''} look{'' if len(errors) > 1 else 's'} like an error, "
            "and none matches a failure syncdoctor knows. The first is quoted; the next ones are in the evidence. "
            + ("The line names where it happened." if known else
               f"It does not say which rank or host wrote it; the other error lines name {where.text}." if where.text
               else "It does not say which rank or host wrote it: the logs of every rank, with their file names or "
               "prefixes, would."))
    quoted = hypothesis(tl, Category.UNRECOGNISED, 0.35 if known else 0.25, title, what=what,
                        evidence=evidence_of(errors, "error, not explained", 8), where=where)
    return [*(_read_from_words(tl, errors) or _cut_before_its_error(tl, errors) or _its_own_exception(tl, errors)
              or _its_own_assertion(tl, errors)), quoted]


# an exception that reports another process's failure and points to that one's trace (vLLM's ``Exception: WorkerProc
# initialization failed due to an exception in a background process. See stack trace for root cause.``)
_BACKGROUND_REPORT = re.compile(r"\bdue to an exception in a background process\b", re.I)


def _traceback_only(event: Event) -> bool:
    """A line of a traceback that is not its error: its first line, or a line of the source code it quotes."""
    return event.kind is Kind.ERROR_LINE and (event.data.get("word") == "Traceback"
                                               or str(event.data.get("message") or "").lstrip().startswith("raise "))


def _one_place(errors: list[Event], tl: Timeline) -> Attribution:
    """For a first error whose line names no place: the one host the error lines name, when they all name the
    same (a kernel log's line beside the library's, a paste whose first line lost its prefix); else nothing. The
    confidence stays that of an error without a place."""
    placed = attribute(errors, tl)
    return replace(placed, processes=()) if len(placed.hosts) == 1 and len(placed.ranks) <= 1 else Attribution()


def _its_own_exception(tl: Timeline, errors: list[Event]) -> list[Hypothesis]:
    """A Python exception of the program's own (not a lost connection, a timeout or the launcher's), the first
    error of the inputs: the process that raised it failed of it. A little above the bare quote."""
    exceptions = [e for e in errors if e.kind is Kind.EXCEPTION]
    # (torch.multiprocessing's report in the parent that a spawned process raised, its child's own error below it in
    # the paste: ``ProcessRaisedException:`` and ``-- Process 0 terminated with the following error:``, then the
    # child's traceback; that error is the one, the report only where nothing else was raised)
    first = next((e for e in exceptions if not str(e.data.get("type") or "").endswith(_REPORTS)),
                 exceptions[0] if exceptions else None)
    if first is None or is_comm_exception(first) or first.data.get("type") in _NOT_OWN or \
            trapped_after_comm_wait(tl, first) or \
            str(first.data.get("type") or "").lower().startswith("nccl"):  # ncclInternalError: NCCL's own report
        return []
    frames = " ".join(str(f) for f in first.data.get("frames") or ())
    # (a tensor operation's own refusal is no wait, though raised inside a library's collective: SGLang's symmetric
    # memory copying a tensor larger than its buffer, ``The size of tensor a (33554432) must match the size of tensor
    # b (40701952)``, in its ``all_reduce``)
    tensor_op = _TENSOR_OP.search(str(first.data.get("message") or "")) is not None
    if "elastic/" in frames or first.data.get("launcher") or (_LIBRARY_WAIT.search(frames) and not tensor_op) or \
            _PLUMBING.search(_SOURCE_PATH.sub("", str(first.data.get("message")))):
        return []  # (the launcher's own traceback: its failure is quoted as an error no rule explains)
    raised = f"{first.data.get('type')}: {str(first.data.get('message') or '').strip()}"[:120]
    if _BACKGROUND_REPORT.search(str(first.data.get("message") or "")):
        # (the process that raised it reports another's failure: that one failed, this one only said so)
        return [hypothesis(
            tl, Category.RANK_CRASHED, 0.36, f"a background process failed as it started, by another's report "
            f"({raised.strip()})", what=("The exception is a report: the process that raised it (vLLM's engine core, "
                                         "for its workers) says a background process it started failed, and points "
                                         "to that process's own stack trace for why."),
            fix="Read the failed process's own traceback (above the report, or in its log): it names the cause.",
            evidence=evidence_of([first], "another process's report", 1))]
    if unimplemented(first):
        return _its_own_failure(
            tl, first, f"stopped where its library has no code for the job's settings ({raised.strip(': ')} raised in "
                       f"{first.data.get('where') or 'the library'})",
            what=("A bare NotImplementedError raised inside an installed library's own code (not the program's): the "
                  "library has not written that path for what the job asks of it (a precision, a parallel mode, an "
                  "executor). Every process that takes the path stops there."),
            fix="Read the library's code at that frame for the setting it does not handle; change the setting, or use "
                "a release that implements it.", note="its library's unimplemented path",
            category=Category.UNRECOGNISED)
    return _its_own_failure(
        tl, first, f"failed with an error of its own ({raised})",
        what=("The first error is an exception of the program's own, not a lost connection or a timeout: the process "
              "that raised it stopped, and in a distributed job the others then lose it or time out waiting. Its "
              "traceback says where."),
        fix="Fix the error its traceback shows; the other processes' failures are its consequence.", note="its own error")


def _ray_task_place(tl: Timeline, event: Event) -> Event | None:
    """The line of Ray's report whose task raised ``event`` (an exception its traceback ends in, no place of its
    own): the nearest report above it in the same input (``ray.exceptions.RayTaskError(TypeError): ray::f() (pid=…,
    ip=…)``, whose wrapped type parsers.generic keeps) that names the same exception's type, and a process."""
    kind = str(event.data.get("type") or "").rsplit(".", 1)[-1]
    above = [e for e in tl.of(Kind.ERROR_LINE) if e.ref.source == event.ref.source and e.ref.line < event.ref.line
             and (e.origin.pid is not None or e.origin.host) and e.data.get("wraps")
             and str(e.data["wraps"]).rsplit(".", 1)[-1] == kind]
    return above[-1] if above else None


def _its_own_failure(tl: Timeline, first: Event, did: str, *, what: str, fix: str, note: str,
                     category: Category = Category.RANK_CRASHED) -> list[Hypothesis]:
    """The process that wrote ``first`` (or the one worker a launcher then reports failing), failed of it: a crash
    at a lead's confidence, a little above the bare quote."""
    where = attribute([first], tl)
    if not (where.ranks or where.hosts or where.processes) and (task := _ray_task_place(tl, first)) is not None:
        where = attribute([task], tl)  # (the Ray task whose traceback it ends)
    if not (where.ranks or where.hosts or where.processes):
        where = _exit_reported_after(tl, first) or where
    known = bool(where.ranks or where.hosts or where.processes)
    return [hypothesis(tl, category, 0.36 if known else 0.26, f"{where.text or 'a process'} {did}",
                       what=what, where=where, evidence=evidence_of([first], note, 1), fix=fix)]


# a C or C++ assertion that failed: a library's macro (ggml's ``GGML_ASSERT: ggml-backend.c:226: …``), assert(3)'s
# ``Assertion failed: (rank < size), function …`` (BSD, macOS) and ``assertion failed: …`` (Rust's, others'), and
# PyTorch's internal check in a line of its C++ log (``[E thread_pool.cpp:112] Exception in thread pool task:
# !completed() INTERNAL ASSERT FAILED at ".../ivalue_inl.h":534, please report a bug to PyTorch.``)
_ASSERTION = re.compile(ASSERT_MACRO + r"|\b[Aa]ssertion failed\b|\bINTERNAL ASSERT FAILED\b")
# a communication library's own internal check (MPICH's ``Assertion failed in file src/mpid/ch4/src/init_comm.c at
# line 72``, Cray MPICH's ``(&MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX)->count == 0``): the library's, as its other internal
# errors are (an error no rule explains), not the program's
_LIBRARY_ASSERTION = re.compile(r"mpi|nccl|rccl|\bucx|\bucc\b|\bofi\b|libfabric|gloo|hccl|\bccl\b|nvshmem", re.I)


def _its_own_assertion(tl: Timeline, errors: list[Event]) -> list[Hypothesis]:
    """The first error, a failed assertion of a C or C++ program or library (no words of a cause): the process
    that checked it stopped there (abort), as an exception of its own stops a Python one. A little above the bare
    quote."""
    first = errors[0]
    if first.kind is not Kind.ERROR_LINE or not _ASSERTION.search(first.text) or _LIBRARY_ASSERTION.search(first.text):
        return []
    return _its_own_failure(
        tl, first, f"stopped at a failed assertion of its own ({first.text.strip()[:120]})",
        what=("A program or library checked a condition of its own state and it did not hold: the process aborts "
              "there (its backtrace, when printed, says where), and in a distributed job the others then lose it or "
              "time out."),
        fix=("Read the condition and the code it names: a value out of range, a build or version mismatch between "
             "the processes (a client and server of different releases), a bug to report with the backtrace."),
        note="its own assertion")


def _exit_reported_after(tl: Timeline, raised: Event) -> Attribution | None:
    """Where an exception whose lines name no place was raised: the one host a launcher then reports a worker
    exiting with an error code on, in the same output (``srun: error: node-0: task 7: Exited with exit code 1``
    after the traceback), with the task's rank where srun started the processes itself; not a signal's report
    (srun's ``Terminated`` are the others it ended)."""
    after = [e for e in tl.of(Kind.WORKER_FAILED) if e.ref.source == raised.ref.source and e.ref.line > raised.ref.line
             and e.origin.host and not e.data.get("signal") and e.data.get("exitcode") not in (None, 0)]
    hosts = {e.origin.host for e in after}
    if len(hosts) != 1:
        return None
    where = attribute(after[:1], tl)
    return replace(where, ranks=task) if not where.ranks and (task := task_ranks(tl, after[:1])) else where


# a message about the job's plumbing: a communication library's own error, a launcher's variable not set
# the source file a check names (``INTERNAL ASSERT FAILED at "/pytorch/torch/csrc/distributed/c10d/reducer.cpp":1326``):
# where the check is, not what failed (DDP's reducer in c10d's directory is the program's model, not the plumbing)
_SOURCE_PATH = re.compile(r"[\w.\-]*(?:/[\w.\-]+)+\.(?:cpp|cc|cxx|cu|hpp|h|py)\b")
_PLUMBING = re.compile(r"Rendezvous|\blibuv\b|TCPStore|\bc10d\b|process group|\b(?:one)?CCL\b|\bNCCL\b|\bgloo\b|\bHCCL\b|\bMPI\b|"
                       r"^'(?:" + "|".join(TORCHRUN_VARIABLES) + r")'$", re.I)
# exceptions that are the job's plumbing, not the program's own failure
_REPORTS = ("ProcessRaisedException", "ProcessExitedException")  # a spawning parent's report of its child's end
_NOT_OWN = ("ChildFailedError", "DistBackendError", "DistNetworkError", "DistStoreError", "TimeoutError",
            "KeyboardInterrupt", "SystemExit")


_TENSOR_OP = re.compile(r"^The (?:expanded )?size of tensor a \(\d+\) must match the size of tensor b \(\d+\)"
                        r"|\bshapes cannot be multiplied \(")
_LIBRARY_WAIT = re.compile(r"distributed_c10d|torch/distributed|c10d|\btorchrun\b|barrier|all_?reduce|all_?gather|broadcast", re.I)


def _cut_before_its_error(tl: Timeline, errors: list[Event]) -> list[Hypothesis]:
    """A traceback the paste ends in, before its exception line, in the program's own code (no collective, no
    wait in torch.distributed), and no other error line: that process raised, in the last frame shown; what it
    raised is not in the inputs. A little above the bare quote of its ``Traceback`` line."""
    if any(e.kind is not Kind.ERROR_LINE or e.data.get("word") != "Traceback" for e in errors):
        return []
    making = [e for e in tl.of(Kind.STACK_DUMP) if e.data.get("source") == "traceback-cut" and _making_the_store(e)]
    if making:
        return _cut_making_the_store(tl, making)
    cut = [e for e in tl.of(Kind.STACK_DUMP) if e.data.get("source") == "traceback-cut"
           and not e.data.get("collective") and not e.data.get("launcher") and not any(_LIBRARY_WAIT.search(str(f)) for f in e.data.get("frames") or ())]
    if not cut:
        return []
    where = attribute(cut, tl)
    known = bool(where.ranks or where.hosts or where.processes)
    at = str(cut[0].data.get("where") or "its own code")
    title = (f"{where.text or 'a process'} raised an exception in {at[:100]} (the paste ends before its error line)")
    what = ("The paste ends inside a Python traceback of the program's own code, before the line that names the "
            "exception: that process failed there, and the others then lose it or time out. The rest of its "
            "output (the last line of the traceback) says what it raised.")
    return [hypothesis(tl, Category.RANK_CRASHED, 0.37 if known else 0.27, title, what=what, where=where,
                       evidence=evidence_of(cut, "where it raised", 2),
                       fix="Read the end of that traceback in the process's own output (torchrun --log-dir or "
                           "--tee 3 keep it per rank).")]


# the job's store being made, in a traceback's last frame or the line of code under it: ``store = TCPStore(…``
# (init_process_group's rendezvous handlers), torchrun's ``self._store = TCPStore(`` (static_tcp_rendezvous),
# ``store = _create_c10d_store(`` (2.x), the c10d rendezvous backend's ``_create_tcp_store``
_STORE_MADE = re.compile(r"\bTCPStore\(|\b_?create_c10d_store\b|\b_create_tcp_store\b")


def _making_the_store(cut: Event) -> bool:
    frames, sources = cut.data.get("frames") or [], cut.data.get("sources") or []
    return bool(_STORE_MADE.search(f"{frames[-1] if frames else ''} {sources[-1] if sources else ''}"))


def _cut_making_the_store(tl: Timeline, cut: list[Event]) -> list[Hypothesis]:
    """A traceback the paste ends in while the process made the job's store (TCPStore): what it raised is not in
    the inputs, and what stops a store's making is its port: in use on the master (A029, the more frequent), or
    the master not reached from the others (A023). A lead, a little above the bare quote."""
    where = attribute(cut, tl)
    known = bool(where.ranks or where.hosts or where.processes)
    title = (f"{where.text or 'a process'} failed making the job's store (TCPStore; the paste ends before its error "
             "line): most often its port is in use on the master")
    what = ("The paste ends inside a traceback that stops where the process makes the job's TCPStore, before the line "
            "that names the exception. The master's store fails there when its port is already taken (an earlier run "
            "still alive, two jobs on one MASTER_PORT: 'Address already in use', EADDRINUSE); the others' fail there "
            "when they cannot reach it (refused, timed out: a wrong MASTER_ADDR, a firewall). The error line says "
            "which.")
    return [hypothesis(tl, Category.PORT_IN_USE, 0.33 if known else 0.28, title, what=what, where=where,
                       evidence=evidence_of(cut, "where it stopped", 2),
                       fix="Read the traceback's last line. On the master, `ss -ltnp | grep <MASTER_PORT>` shows "
                           "what holds the port (stop it, or pick another MASTER_PORT); from the other hosts, "
                           "`nc -zv <MASTER_ADDR> <MASTER_PORT>` shows whether the store can be reached.")]


# a rank an error line is about, in its words: ``… on rank 3 at iteration #3``, ``: Rank 3, node gpu-7, device 3``
# (not a tensor's number of dimensions: Horovod's ``One rank sent a tensor of rank 2, but another …``)
_NAMED = re.compile(r"(?<!tensor )\b(?:on|from|at|of) rank (?P<rank>\d{1,6})\b(?! *(?:and|or|,|-|/)\s*\d)"
                    r"|(?:^|[:\]] ?)Rank (?P<rank2>\d{1,6}), node (?P<node>[\w.-]{1,100}),", re.I)


# a launcher's report of the remote command that failed, quoting its ssh (DGL's ``Called process error Command 'ssh -o
# StrictHostKeyChecking=no -p 22 192.168.85.128 'cd …`` after the remote traceback): the host it ran on
_Q = "['\u2018\u2019\u201c\u201d\"]?"  # (a quote, straight or curly, where a report quotes the command or its arguments)
_ARG = "[^\\s'\u2018\u2019\",\\]]+"  # (an option's argument, unquoted)
# (each option, and the space before its argument, one way only: a line of many options is read in linear time)
_SSH_COMMAND = re.compile(
    rf"\bCommand\s+{_Q}\[?{_Q}ssh{_Q},?\s+"
    rf"(?:{_Q}-[46AaCfGgKkMNnqsTtVvXxYy]+{_Q},?\s+|{_Q}-[bcDEeFIiJLlmOopQRSWw](?:{_ARG}|{_Q},?\s+{_Q}{_ARG}){_Q},?\s+)*"
    rf"{_Q}(?:[\w.\-]{{1,64}}@)?(?P<host>[A-Za-z0-9][\w.\-]{{0,252}}){_Q}[,\s]")


# Flux's shell failing to start a task (src/shell/shell.c: ``task 0 (host corona212): start failed: torchrun: No such
# file or directory``, in its job exception): the host it could not start it on
_FLUX_START = re.compile(r"\btask \d{1,7} \(host (?P<host>[\w.\-]{1,253})\): start failed: ")


def _launcher_named_host(text: str) -> str | None:
    """The host a launcher's words in ``text`` say it failed on: its ssh command's, or Flux's task start's."""
    match = _SSH_COMMAND.search(text) or _FLUX_START.search(text)
    return match["host"] if match else None


def _named_place(where: Attribution, line: Event, lines: list[Event]) -> Attribution:
    """``where`` with the rank ``line`` is about where no prefix gave one, and that rank's node where another of
    ``lines`` names it (Megatron's ``Rank 3, node gpu-7, device 3, iteration #3: …``); or the host a launcher's
    report in the same line ran the failed command on over ssh, or Flux's could not start a task on."""
    if not where.hosts and not where.ranks and (host := _launcher_named_host(line.text)):
        where = replace(where, hosts=(host,), processes=())
    if not where.ranks and (named := _NAMED.search(line.text)):
        where = replace(where, ranks=(int(named["rank"] or named["rank2"]),), processes=(), local_ranks=())
    if where.hosts or len(where.ranks) != 1:
        return where
    nodes = [m["node"] for e in lines if (m := _NAMED.search(e.text)) and m["node"] and int(m["rank2"]) in where.ranks]
    return replace(where, hosts=(nodes[0],)) if nodes else where


def _read_from_words(tl: Timeline, errors: list[Event], causes_only: bool = False) -> list[Hypothesis]:
    """The error lines' own words, when they name a failure (``Address already in use``, ``out of memory``…):
    that category, a little above the bare quote, with the line that says it."""
    # (a GPU-initiated wait's trap says nothing of its own: timeline.trapped_after_comm_wait)
    unread = [e for e in errors if e.kind in UNREAD and not trapped_after_comm_wait(tl, e)]
    texts = [" ".join((e.text, str(e.data.get("message", "")), str(e.data.get("tail", "")),
                       *map(str, e.data.get("frames") or ()))) for e in unread]
    found = strongest(texts)
    # (an exception whose code line opens a file for writing in a folder that is not there: its words say no more)
    missing = next((i for i, e in enumerate(unread) if folder_missing(e)), None)
    if missing is not None and (found is None or not found[1].cause):
        found = (missing, MISSING_FOLDER)
    if found is None or (causes_only and not found[1].cause):
        return []
    index, reading = found
    line = unread[index]
    if reading.category is Category.IB_UNREACHABLE_AT_INIT and tl.of(Kind.NCCL_INIT, Kind.WORK_STATUS, Kind.PROGRESS_BAR):
        reading = replace(reading, category=Category.IB_LINK_FAILURE)  # collectives ran before: a link that failed
    where = _named_place(attribute([line], tl), line, unread)
    if not (where.ranks or where.hosts):  # a later line in the same words that says whose (``[Rank 1] … same``)
        alike = [e for e, text in zip(unread, texts, strict=True)
                 if e is not line and (other := read_as(text)) is not None and other.what == reading.what]
        placed = attribute(alike, tl)
        where = placed if placed.ranks or placed.hosts else where
    if not (where.ranks or where.hosts) and (record := _record_above(tl, line)) is not None:
        where = attribute([record], tl)  # (the record's first line, behind its rank's prefix, says whose)
    known = bool(where.ranks or where.hosts or where.processes)
    if not known:  # (as the bare quote's: the one place the other lines name; the confidence stays a placeless one's)
        where = _exit_reported_after(tl, line) or _one_place(errors, tl)
    title = (f"{reading.what}, in the words of an error whose format no rule knows"
             f"{' (' + where.text + ')' if where.text else ''}: {line.text.strip()[:140]}")
    what = (f"No rule knows this line's format, but its words say {reading.what}. Read from the words alone: "
            "the rules that know a format also check what came before and who else failed, so take it as a lead. "
            + ("" if known else "The line does not say which rank or host wrote it: the logs of every rank, with "
               "their file names or prefixes, would."))
    evidence = evidence_of([line], f"{WORDS_SAY}{reading.what}", 1) + evidence_of(
        [e for e in errors if e is not line], "error, not explained", 6)
    return [hypothesis(tl, reading.category, (0.4 if known else 0.3) if reading.cause else (0.37 if known else 0.27),
                       title, what=what, evidence=evidence, where=where)]


def _record_above(tl: Timeline, line: Event) -> Event | None:
    """The error line whose record the indented ``line`` goes on: a message of several lines logged once, behind
    one prefix that names its rank or host on its first line only (torch_npu's ``[rank7]:[E706 …] call
    aclnnSparseFlashAttention failed, detail: …``, then, indented, ``The error from device(chipId:7, …), … there is
    an exception of fftsplus aicore error``): the nearest error line above it, a few lines up, where that one names
    whose it is."""
    if not after_stamp(line)[:1].isspace():
        return None
    for record in reversed(just_above(tl, line, CONTINUATION_LINES)):
        if not after_stamp(record)[:1].isspace():  # (over the record's other indented lines)
            return record if record.origin.rank is not None or record.origin.host else None
    return None


# verdicts that say the lines do not show why: a timeout nobody explains, a rank guessed from its absence
_WEAK = 0.35
_SAYS_NOT_WHY = (Category.UNEXPLAINED_TIMEOUT, Category.COLLECTIVE_STALLED)


def words_over_a_weak_verdict(tl: Timeline, hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
    """Next to a verdict that says the lines do not show why (an unexplained or stalled timeout, or any verdict at
    a low confidence), an error line whose format no rule knows but whose words name a cause (``out of memory``,
    ``memory access fault``…) and that no hypothesis cites: that cause, just above the weak verdict. A timeout
    is what the other ranks print after a rank hit such an error."""
    if not hypotheses:
        return []
    top = max(hypotheses, key=lambda h: h.confidence)
    # a launcher's record of a worker's exit, or the rank the others waited for or lost, says who, not why: the
    # words of the lines that worker may have printed may say why (rules.joins joins the two)
    theirs = None
    if top.category not in _SAYS_NOT_WHY and top.confidence > _WEAK:
        theirs = lines_that_may_say_why(tl, top)
        if theirs is None:
            return []
    # (the lines the "who" cites as its worker's own are that worker's words all the same)
    cited = {(e.ref.source, e.ref.line) for h in hypotheses for e in h.evidence
             if theirs is None or h is not top or e.note != OWN_FAILURE}
    loose = [e for e in error_events(tl) if e.kind in UNREAD and (e.ref.source, e.ref.line) not in cited
             and (theirs is None or theirs(e))]
    found = _read_from_words(tl, loose, causes_only=True)
    return [replace(h, confidence=min(0.55, top.confidence + 0.05)) for h in found]


def _store_name_lead(tl: Timeline) -> list[Hypothesis]:
    """Nothing but c10d's warning that the store's host name has no IPv6 address, and nothing after it (no NCCL
    communicator formed, no collective): usually harmless, but when the job hung right there the name may not
    resolve at all (a stale Service or subdomain, a pod's name before its DNS record). A lead, at 0.2."""
    if tl.of(Kind.NCCL_INIT) or tl.of(Kind.WORK_STATUS) or tl.of(Kind.PROGRESS_BAR):
        return []
    warned = [e for e in tl.of(Kind.STORE_NAME_UNRESOLVED) if not e.data.get("reverse")
              and ip_of(str(e.data.get("store_host", ""))) is None and e.data.get("store_host") not in _LOCAL_NAMES]
    if not warned:
        return _reverse_lookup_lead(tl)
    names = sorted({f"{e.data['store_host']}:{e.data['store_port']}" for e in warned})
    title = (f"the only warning is that the store's host name {', '.join(names[:2])} did not resolve (for IPv6); if "
             "the job hung at its start, the name may not resolve at all")
    what = ("c10d prints this warning on every host without IPv6, so it is often harmless, and nothing else in these "
            "lines says what failed. But when the job stops right after it, the name itself is the first suspect: a "
            "Kubernetes Service or subdomain that does not exist (or not yet), a typo in MASTER_ADDR, a name only some "
            "hosts resolve.")
    fix = (f"On every host, run `getent hosts {warned[0].data['store_host']!s}`: it must print the address of the "
           "host that serves the store. If it does not, fix the name (or set MASTER_ADDR to an IP address); if it "
           "does, collect the ranks' logs with TORCH_DISTRIBUTED_DEBUG=DETAIL and NCCL_DEBUG=INFO.")
    return [hypothesis(tl, Category.PEER_UNREACHABLE, 0.2, title, what=what, fix=fix,
                       evidence=evidence_of(warned, "the store's name did not resolve (IPv6)", 3),
                       where=attribute(warned, tl))]


_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")
_GAI_ERRORS = {-2: "EAI_NONAME, no name known for it", -3: "EAI_AGAIN, the resolver did not answer",
               -4: "EAI_FAIL, the resolver failed"}


def _reverse_lookup_lead(tl: Timeline) -> list[Hypothesis]:
    """Nothing but c10d's warning that it could not look up the name of a connection's address (``The hostname of
    the client socket cannot be retrieved. err=-3``), and nothing after it: harmless in itself (the resolver of a
    container or a host knows no name for the address; c10d logs the address instead), but printed each time a client
    connects or retries, so repeated with nothing else it may be clients retrying a store that does not answer. The
    setup's (A028), a lead at 0.2."""
    warned = [e for e in tl.of(Kind.STORE_NAME_UNRESOLVED) if e.data.get("reverse")]
    if not warned:
        return []
    codes = sorted({int(e.data["error"]) for e in warned if isinstance(e.data.get("error"), int)})
    said = ", ".join(f"err={c}" + (f": {_GAI_ERRORS[c]}" if c in _GAI_ERRORS else "") for c in codes[:3])
    title = (f"the only warnings are c10d's reverse lookups of a connection's address that failed ({said}; "
             f"{len(warned)} line{'s' if len(warned) > 1 else ''}); harmless in themselves, but if the job stopped "
             "there its processes may be retrying a store that does not answer")
    what = ("c10d looks up the host name of each socket's address only to print it in its own log lines, and prints "
            "this warning (then the address) when the resolver has no name for it: common in containers and on hosts "
            "whose own name is not in /etc/hosts, and no failure by itself. It is printed each time a client connects "
            "or retries, so many of them with nothing else after (no communicator formed, no step) point at clients "
            "retrying the store: not listening yet, or at an address where no store runs.")
    fix = ("To quiet it, give the container or host a name for its address (`echo \"127.0.0.1 $(hostname)\" >> "
           "/etc/hosts`, or the host's own address). If the job hung here, check that MASTER_ADDR and MASTER_PORT on "
           "every node name the node that serves the store (node rank 0) and that its port is open from the others; "
           "TORCH_CPP_LOG_LEVEL=INFO shows each connection attempt.")
    return [hypothesis(tl, Category.UNRECOGNISED, 0.2, title, what=what, fix=fix,
                       evidence=evidence_of(warned, "c10d could not name a connection's address", 3),
                       where=attribute(warned, tl))]


def _agents_aftermath(event: Event, signal: Event, stops: Sequence[Ref] = ()) -> bool:
    """What the launcher prints after its own death signal: its traceback (``SignalException: Process N got signal:
    15``), cut or whole, also in a Rich box; after Slurm's cancellation, srun's ``Job step aborted: Waiting up to 32
    seconds for job step to finish.``, ``forcing job termination``, the step's tasks exiting and slurmstepd unable
    to tell srun. ``stops``: where the launchers' own signal lines are (on many nodes they come between srun's
    line and slurmstepd's, each with its lines stopping its workers, up to one per GPU of its node: those do not count
    against how close the two must be)."""
    if event.ref.source != signal.ref.source:
        return False
    text = f"{event.text} {event.data.get('type', '')} {event.data.get('message', '')}"
    slurm = signal.data.get("source") == "slurm" and _SRUN_AFTER.search(text) is not None
    if event.ref.line <= signal.ref.line:  # the traceback's own lines above its SignalException; srun's lines
        # race slurmstepd's in the step's output and may come just before its CANCELLED line
        between = sum(1 for ref in stops if ref.source == event.ref.source and event.ref.line < ref.line < signal.ref.line)
        # (the first line of the traceback the agent's SignalException ends: ``Traceback (most recent call last):``
        # a few frames above it, no other error between them, each of which is judged on its own)
        own_traceback = signal.data.get("source") == "torchrun" and _traceback_only(event) and \
            0 < signal.ref.line - event.ref.line <= _AGENT_TRACEBACK_LINES
        return "SignalException" in text or own_traceback or (slurm and signal.ref.line - event.ref.line
                                                               <= _RACE_LINES + _STOP_LINES * between)
    if signal.data.get("source") == "terminal":  # after a user's Ctrl-C: the interrupted programs tearing down
        return True
    if signal.data.get("source") == "ray" and _RAY_AFTER.search(text):  # the actors of the node Ray lost
        return True
    return "Traceback (most" in text or "SignalException" in text or "got signal" in text or slurm or \
        _KIND_OF_ERROR.match(str(event.data.get("message") or event.text)) is not None


# an orchestrator's word on the failure it reports after the error's message (Flyte: ``Message:`` / ``Process 107 got
# signal: 15`` / ``User error.``)
_KIND_OF_ERROR = re.compile(r"\s*(?:User|System) error\.?\s*$")
_RAY_AFTER = re.compile(r"\b[Aa]ctor\b|ray\.exceptions|Ray(?:Actor|Task|System)Error|\braylet\b")
_RACE_LINES = 5
_AGENT_TRACEBACK_LINES = 40  # the agent's traceback to its signal handler: its run loop's frames, two lines each
_STOP_LINES = 8  # a launcher's lines after its own signal: its signal line and one per worker it stops
# (the tasks of a cancelled step exit, and slurmstepd can no longer report it to srun)
_SRUN_AFTER = re.compile(r"Job step aborted: Waiting up to \d+ seconds|forcing job termination|Timed out waiting for "
                         r"job step to complete|Failed to send "
                         r"MESSAGE_TASK_EXIT|tasks? [\d,\-]+: (?:Exited with exit code|Terminated|Killed)")


def _stopped_from_outside(tl: Timeline, signals: list[Event]) -> list[Hypothesis]:
    """Only the launcher's own death signal (torchrun's ``Received 1 death signal``, DeepSpeed's ``Main process
    received SIGTERM``): the job was ended from outside, no worker failed in these lines; its workers were killed
    (A025) by the launcher on the scheduler's, a terminal's or a user's signal."""
    where = attribute(signals, tl)
    names = sorted({str(e.data["signal"]) for e in signals if e.data.get("signal")})
    trainer = all(e.data.get("source") == "trainer" for e in signals)  # the training script's own words for it
    title = (f"the {'training process' if trainer else 'launcher'}{' on ' + where.text if where.text else ''} was "
             f"stopped by {', '.join(names) or 'a signal'}: the job was ended from outside, not by a failing worker")
    reasons = sorted({str(e.data["reason"]) for e in signals if e.data.get("source") == "slurm"})
    failed = [e for e in signals if e.data.get("node_failed") and e.origin.host]
    if failed:  # the node Slurm lost is the one to look at, not the one whose step daemon reported the cancel
        where = attribute(failed, tl)
        title = (f"Slurm lost node {', '.join(where.hosts)} (node failure) and cancelled the job: it was ended from "
                 "outside, not by a failing worker")
        what = ("Slurm's controller lost contact with that node (it crashed, rebooted, lost its network, or its slurmd "
                "died) and ended the job step on every node. No worker's failure is in these lines.")
        if all(e.data.get("source") == "ray" for e in failed):
            title = (f"Ray lost node {', '.join(where.hosts)} (its heartbeats stopped) and the workers on it with it: "
                     "the node was shut down, crashed or cut off, not a failing worker")
            what = ("Ray's control store marked that node dead after it missed too many heartbeats: its raylet stopped "
                    "(the machine shut down or was preempted, the raylet was killed, often by the OOM killer) or its "
                    "network was cut. The workers on it died with it, and the others then fail or hang waiting.")
        fix = (f"Look at {', '.join(where.hosts)} at that time: `sinfo -R` and `scontrol show node` for the reason "
               "Slurm recorded, its kernel log (a crash, Xid, the OOM killer); drain it and requeue the job "
               "(`--requeue`, or a checkpoint to resume from).")
        return [hypothesis(tl, Category.RANK_KILLED, 0.6, title, hosts=where.hosts, what=what, fix=fix,
                           evidence=evidence_of(failed + [e for e in signals if e not in failed], "the node lost", 4))]
    if "prolog failed" in reasons:  # before any task ran: nothing of the training is at fault
        title = (f"Slurm's prolog failed{' on ' + where.text if where.text else ''} and Slurm killed the job before "
                 "its tasks ran: a problem of the nodes or the scheduler, not of the training")
        what = ("A prolog script (PrologSlurmctld on the controller, which on cloud clusters creates or resumes the "
                "nodes; or Prolog on a node) exited non-zero, so Slurm killed the job and revoked its allocation. No "
                "task started.")
        fix = ("Read the controller's log (slurmctld.log; on cloud clusters the resume log: quota, zone capacity, "
               "placement, permissions) or the node's slurmd.log for the prolog's error; `sinfo -R` lists nodes "
               "drained for a prolog error. Resubmit once the nodes are back.")
        return [hypothesis(tl, Category.RANK_KILLED, 0.5, title, hosts=where.hosts, what=what, fix=fix,
                           evidence=evidence_of(signals, "Slurm's record", 4))]
    if reasons:
        title = (f"Slurm cancelled the job{' on ' + where.text if where.text else ''} ({', '.join(reasons)}): it was "
                 "ended from outside, not by a failing worker")
    what = ("The launcher itself received a signal and stopped its workers: a scheduler ending the job (time limit, "
            "preemption, scancel, a Kubernetes pod deleted or evicted), a closed terminal (SIGHUP), or a user. No "
            "worker's failure is in these lines.")
    fix = ("Check the scheduler's record of the job (sacct -j JOB, `kubectl describe pod`), its time limit, and "
           "run the launcher under tmux or setsid when it is started from a terminal.")
    if names == ["SIGINT"] and all(e.data.get("source") == "terminal" for e in signals):
        what = ("A user pressed Ctrl-C (the terminal's ^C) and the launcher stopped its workers; whatever ran on other "
                "hosts through ssh or a remote launcher may be left running. If the job had stopped making progress "
                "before, that hang is the problem, and these lines do not show it.")
        fix = ("If it hung, run it again with `syncdoctor watch` (it names the rank that stops and where) or "
               "NCCL_DEBUG=INFO and a timeout; after a Ctrl-C, check the other hosts for processes left behind (`pgrep "
               "-af python`) before the next launch.")
    if names == ["SIGHUP"]:
        what = ("The launcher received SIGHUP: the terminal or ssh session it was started from closed. torchrun "
                "installs its own handler for SIGHUP, so `nohup` does not protect it: it stops its workers. No "
                "worker's failure is in these lines.")
        fix = ("Start the job detached from the terminal: inside tmux or screen, with `setsid` (`setsid nohup torchrun "
               "… > train.log 2>&1 &`), or as a batch job (sbatch, a Kubernetes Job); then resume from the last "
               "checkpoint.")
    return [hypothesis(tl, Category.RANK_KILLED, 0.45, title, hosts=where.hosts, what=what, fix=fix,
                       evidence=evidence_of(signals, "the launcher's own signal", 4))]



def unexplained(tl: Timeline, hypotheses: Sequence[Hypothesis], limit: int = 5) -> tuple[Evidence, ...]:
    """The first error-looking lines that no hypothesis cites (PyTorch's aftermath lines once one explains)."""
    cited = {(e.ref.source, e.ref.line) for h in hypotheses for e in h.evidence}
    # (a cited record of torchrun's failure table explains the table's other lines: its ``ChildFailedError:``, ``…
    # FAILED``, ``Root Cause (first observed failure):``, the records of the other ranks)
    tables = {(e.ref.source, int(e.data["table_lines"][0]), int(e.data["table_lines"][1]))
              for e in tl.of(Kind.WORKER_FAILED) if (e.ref.source, e.ref.line) in cited
              and isinstance(e.data.get("table_lines"), (list, tuple)) and len(e.data["table_lines"]) == 2}
    out: list[Evidence] = []
    for event in error_events(tl):
        if (event.ref.source, event.ref.line) in cited or any(
                source == event.ref.source and start <= event.ref.line <= end for source, start, end in tables):
            continue
        if hypotheses and is_aftermath(event):
            continue
        out.extend(evidence_of([event], event.kind.value.replace("_", " ")))
        cited.add((event.ref.source, event.ref.line))
        if len(out) >= limit:
            break
    return tuple(out)
