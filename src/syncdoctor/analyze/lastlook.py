"""A last look at a small input the analysis had nothing to say about. Pure: no I/O.

The scanner hands the parsers only the lines that hold one of its anchors, and the generic parser takes a line for
an error by its words (``Error``, ``failed``, ``Killed``…). A paste can have neither: a library's refusal copied
without its exception's name (``You can't train a model that has been loaded in 8-bit precision on a different device
than the one you're training on.``), a check's message quoted alone (``The input size is not aligned with the
quantized weight shape. This can be caused by too large tensor parallel size.``). When the whole of an input is small
(a paste, :data:`MAX_BYTES`) and the analysis found nothing in any input, each of its lines is read once more for the
words :mod:`syncdoctor.analyze.rules.phrases` knows as naming a cause; such a line is kept as an error line, for the
fallback rule to quote with the category its words name. Those words are written for error lines, where a topic
is enough (``locked memory``, ``ECC``); on a line that is no error they must come with words of something going wrong
(``not``, ``cannot``, ``too large``, ``exceeded``…): ``ulimit -a``'s ``max locked memory: unlimited`` is no failure.
Words that name only an outcome (a crash, a refused connection) are not enough either.

A small input's NCCL chatter is read too, whatever was found (:func:`processes`): the scanner skips INFO lines
without an anchor (most of a large log), but in a paste the one line of a process that carries NCCL's
``host:pid:tid`` prefix (``g1002:2128869:2128880 [0] NCCL INFO Setting affinity …``) may be all that ties torchrun's
``failed (exitcode: -11) local_rank: 0 (pid: 2128869)`` to its host. And a launch command pasted above its output
that names one host (``mpirun -n 1 --host node1 mpi_hello``, ``srun … -w node001 …``, ``#SBATCH --nodelist=node001``)
says where the lines below it that name no place ran (:func:`launched_on`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from syncdoctor.analyze.model import Event, Kind, Origin, Ref
from syncdoctor.analyze.parsers import make_line, nccl_info, traceback
from syncdoctor.analyze.parsers.base import make_event
from syncdoctor.analyze.parsers.generic import SEARCH_COMMAND
from syncdoctor.analyze.rules.phrases import read_as
from syncdoctor.analyze.textlog import PROMPT

__all__ = ["MAX_BYTES", "known_causes", "launched_on", "placed_by_launch", "processes"]

MAX_BYTES = 64 * 1024  # an input this small or smaller is a paste: every line of it may be read again
_MAX_LINE = 2000  # characters of a line read (a paste's line longer than this is output, not a message)
# words of something going wrong, one of which a line must hold besides the words of its cause
_GOING_WRONG = re.compile(r"\b(?:not|no|never|can't|cannot|can not|couldn't|could not|unable|too (?:large|small|many|few|"
                          r"big|old|new|long)|exceed\w*|fail\w*|mismatch\w*|invalid|refus\w*|denied|missing|wrong|"
                          r"unsupported|incompatible|disabled|must|out of sync|doesn't|don't|isn't|aren't|won't|lost|broken|"
                          # (a report of a fault, whatever its words: ``Xid 31 …``, ``Duplicate GPU detected``; a
                          # resource short: ``/dev/shm has only 67108864 bytes available``)
                          r"xid|duplicate\w*|insufficient|exhausted|only [\d.]+ ?(?:bytes|[kmgt]i?b)"
                          # (a library that does not load, quoted without its ImportError: ``mpi_lib_v2.cpython-36m-
                          # x86_64-linux-gnu.so: undefined symbol: _ZN3c106detail…``)
                          r"|undefined symbol)\b",
                          re.IGNORECASE)
_SEARCH = re.compile(SEARCH_COMMAND)  # (a command that greps for such words)


def known_causes(text: str, source: str, file_origin: Origin) -> list[Event]:
    """An error line for each line of ``text`` whose words name a cause the phrases know; and the exception of a
    traceback whose paste ends inside its class's name (:func:`cut_traceback`)."""
    events = cut_traceback(text, source, file_origin) + lock_waits(text, source, file_origin)
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or len(raw) > _MAX_LINE:
            continue
        line = make_line(raw, Ref(source, number), file_origin)
        if not _GOING_WRONG.search(line.body) or _SEARCH.search(line.body):
            continue
        reading = read_as(line.body)
        if reading is not None and reading.cause:
            events.append(make_event(Kind.ERROR_LINE, line, data={"word": "known words",
                                                                  "message": line.body.strip()[:300]}))
    return events


# the filelock package's debug lines (Hugging Face's caches, Triton's autotune cache, torch's compile caches lock
# their files with it): ``Attempting to acquire lock 140192009925296 on /data/.triton/autotune/k.pickle.lock``,
# ``Lock 1401… not acquired on …, waiting 0.05 seconds ...``, and ``Lock 1401… acquired on …`` once it got it
_LOCK_WAIT = re.compile(r"\b(?:Attempting to acquire lock (?P<id>\d{3,20}) on|Lock (?P<id2>\d{3,20}) not acquired on) "
                        r"(?P<path>[^\s,]{1,400})")
_LOCK_GOT = re.compile(r"\bLock (?P<id>\d{3,20}) acquired on (?P<path>[^\s,]{1,400})")


def lock_waits(text: str, source: str, file_origin: Origin) -> list[Event]:
    """Processes (two or more lock objects) that wait for the same lock file and never get it, by the filelock
    package's debug lines, a paste's whole say: they wait for its holder (hung, or gone without removing it) or on a
    file system whose locks do not work across hosts (NFS). An error line at the last wait, in words the phrases
    read."""
    waiting: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    for number, raw in enumerate(lines, 1):
        if "lock" not in raw.lower() or len(raw) > _MAX_LINE:
            continue
        got = _LOCK_GOT.search(raw)
        if got is not None:
            waiting.get(got["path"], {}).pop(got["id"], None)
            continue
        wait = _LOCK_WAIT.search(raw)
        if wait is not None:
            waiting.setdefault(wait["path"], {})[wait["id"] or wait["id2"]] = number
    stuck = {path: ids for path, ids in waiting.items() if len(ids) >= 2}
    if not stuck:
        return []
    path, ids = max(stuck.items(), key=lambda item: len(item[1]))
    last = max(ids.values())
    line = make_line(lines[last - 1][:_MAX_LINE], Ref(source, last), file_origin)
    return [make_event(Kind.ERROR_LINE, line, data={
        "word": "lock wait", "message": f"{len(ids)} processes wait for the file lock {path[:200]}, none acquired it"})]


_FRAMES_READ = 64  # lines above a paste's last one in which a traceback's frames are looked for


def cut_traceback(text: str, source: str, file_origin: Origin) -> list[Event]:
    """A traceback pasted without its ``Traceback (most recent call last):`` line whose last line is its exception's
    class name cut short (``AssertionErro``, the paste's end): no line of it holds a word the scanner looks for, yet it
    is an error, raised where its frames say (parsers.traceback reads it, its message lost)."""
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or len(lines[-1]) > _MAX_LINE:
        return []
    line = make_line(lines[-1], Ref(source, len(lines)), file_origin)
    if traceback.cut_exception(line.body) is None:
        return []
    above = [make_line(raw[:_MAX_LINE], Ref(source, number), file_origin).body  # (nearest first)
             for number, raw in reversed(list(enumerate(lines[:-1], 1))[-_FRAMES_READ:])]
    return traceback.headless(line, above, cut=True)


def processes(text: str, source: str, file_origin: Origin, known: set[tuple[str, int]]) -> list[Event]:
    """Where each process of ``text``'s NCCL INFO lines runs, one event per process not in ``known`` (host, pid),
    which it extends."""
    events = []
    for number, raw in enumerate(text.splitlines(), 1):
        if " NCCL INFO " not in raw or len(raw) > _MAX_LINE:
            continue
        placed = nccl_info.place(make_line(raw, Ref(source, number), file_origin))
        if placed is None or placed.origin.host is None or placed.origin.pid is None:
            continue
        key = (placed.origin.host, placed.origin.pid)
        if key not in known:
            known.add(key)
            events.append(placed)
    return events


# a launcher's command (or a batch script's directive) naming the hosts its processes run on: Open MPI's and MPICH's
# ``--host``/``-H``/``--hosts``, Slurm's ``-w``/``--nodelist``
_LAUNCHER = r"(?:^|[\s$#%>])(?P<launcher>mpirun|mpiexec|prterun|orterun|srun|salloc|sbatch)\s"
_LAUNCH = re.compile(_LAUNCHER + r"(?P<args>[^\n]{0,2000})|^\s*#SBATCH\s(?P<directive>[^\n]{0,400})")
# (each launcher's own options: srun's and salloc's ``-H`` is ``--hold``, which takes no host)
_MPI_HOSTS = re.compile(r"(?:^|\s)(?:--host|-H|--hosts|-hosts?)(?:=|\s+)(?P<hosts>\S+)")
_SLURM_HOSTS = re.compile(r"(?:^|\s)(?:-w|--nodelist)(?:=|\s+)(?P<hosts>\S+)")
_MPI_LAUNCHERS = ("mpirun", "mpiexec", "prterun", "orterun")
_HOST = re.compile(r"[A-Za-z0-9][\w.\-]{0,252}")
# a shell prompt (textlog's, or a guide's bare ``$ ``/``shell$ ``), or another launch: the end of what the command
# above printed
_PROMPT = re.compile(PROMPT.pattern.decode())
_NEXT_COMMAND = re.compile(r"^\s*(?:shell)?\$ |" + _LAUNCHER)


def _one_host(args: str, slurm: bool) -> str | None:
    found = (_SLURM_HOSTS if slurm else _MPI_HOSTS).search(args)
    if found is None:
        return None
    hosts = {part.split(":", 1)[0] for part in found["hosts"].strip("'\"").split(",") if part}
    if len(hosts) != 1:
        return None
    host = hosts.pop()
    return host if _HOST.fullmatch(host) else None


def launched_on(text: str) -> list[tuple[int, int, str]]:
    """The spans of ``text``'s lines (first, last, 1-based) that a launch command naming one host printed: from the
    line after the command to the line before the next prompt or command, the host it named."""
    lines = text.splitlines()
    spans: list[tuple[int, int, str]] = []
    for number, raw in enumerate(lines, 1):
        if len(raw) > _MAX_LINE:
            continue
        if spans and spans[-1][1] == len(lines) and (_PROMPT.match(raw) or _NEXT_COMMAND.search(raw)):
            first, _, named = spans[-1]
            spans[-1] = (first, number - 1, named)
        launch = _LAUNCH.search(raw)
        host = _one_host(launch["args"] or launch["directive"] or "", launch["launcher"] not in _MPI_LAUNCHERS) \
            if launch is not None else None
        if host is not None:
            spans.append((number + 1, len(lines), host))
    return spans


def placed_by_launch(events: list[Event], pastes: list[tuple[str, Origin, str]]) -> list[Event]:
    """``events`` with each event of a paste (name, origin, text) that names no place, below a launch command that
    names one host (:func:`launched_on`), placed on that host."""
    spans = {name: found for name, _, text in pastes if (found := launched_on(text))}
    if not spans:
        return events
    out = []
    for event in events:
        origin = event.origin
        if event.ref.source in spans and origin.host is None and origin.rank is None and origin.pid is None:
            host = next((h for first, last, h in spans[event.ref.source] if first <= event.ref.line <= last), None)
            if host is not None:
                event = replace(event, origin=replace(origin, host=host))
        out.append(event)
    return out
