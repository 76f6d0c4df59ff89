"""Read one text log: find candidate lines with the scanner, parse them, follow multi-line blocks.

Pure apart from consuming the blocks it is given (see :func:`syncdoctor.analyze.inputs.iter_blocks`).
Every line is counted (evidence cites ``file:line``) but only lines containing an anchor are decoded.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from syncdoctor.analyze.model import Event, Kind, Origin, Ref
from syncdoctor.analyze.parsers import (
    LOOK_ABOVE,
    make_line,
    nccl_coll,
    parse_line,
    start_followers,
    torch_detail,
)
from syncdoctor.analyze.parsers.bars import BAR_MARKERS, bar_events, bar_key
from syncdoctor.analyze.parsers.base import Follower, Line, make_event
from syncdoctor.analyze.parsers.prefixes import origin_from_path
from syncdoctor.analyze.parsers.torchrun import drop_records_inside_tables
from syncdoctor.analyze.parsers.traceback import TracebackFollower, is_source_line
from syncdoctor.analyze.paste import (
    ANSI_BYTES,
    FILLER_BYTES,
    cut_last_line,
    double_spaced,
    paste_margin,
    plain_spaces,
    unescaped,
    unspaced,
    unwrap,
    without_margin,
    wrap_width,
)
from syncdoctor.analyze.scan import Scanner

__all__ = ["PROMPT", "TextStats", "read_text"]


@dataclass
class TextStats:
    """How much of a text input was read."""

    lines: int = 0
    bytes: int = 0
    candidates: int = 0
    repeats: int = 0  # NCCL INFO lines skipped as repeats of one already parsed
    blocks: int = 0
    first_block: builtins.bytes = b""  # (the field above names the type) the first block as read: what pasting did to it undone (collect's last look)


_INFO = b" NCCL INFO "
# a shell prompt pasted with a command's output: ``zeyer@cn-234 ~ % nvidia-smi``, ``root@node1:~# dmesg -T``,
# ``[user@gpu01 work]$ python train.py``, ``(base) user@host:~$ …``: the lines after it, up to a blank line or the
# next prompt, come from that host (where they do not name one themselves)
# (a theme may show the last command's exit status before it: ``(axolotl) 134 user@host:~/dir$ ``); the lines above a
# file's first prompt, where its prompts all name one host, are that host's too (the command typed at a prompt the
# paste left out ran in the same terminal: the prompt it returned to says where)
PROMPT = re.compile(rb"^\s*(?:\([\w.-]+\) )?(?:\d{1,3} )?\[?[\w.-]+@(?P<host>[A-Za-z0-9][\w-]*(?:\.[\w-]+)*)"
                     rb"(?:[: ][^\n$#%]{0,80})?\]?\s?[$#%] ")
# torch.multiprocessing's spawn (mp.spawn) reporting the process that raised, its traceback below: ``-- Process 1
# terminated with the following error:``; the lines after it, up to a blank line or the next such line, are that
# process's (its index among the spawned ones: its local rank)
_SPAWNED = re.compile(rb"^\W{0,4}-- Process (?P<index>\d{1,6}) terminated with the following error:")
# torch.distributed.rpc re-raising a remote call's exception in the caller, the worker it ran on first: ``On
# WorkerInfo(id=1, name=Worker1):`` then the exception and its traceback there; the lines after it, up to a blank line,
# are that worker's (its id is the rank it passed to init_rpc)
_RPC_REMOTE = re.compile(rb"^\W{0,4}On WorkerInfo\(id=(?P<id>\d{1,6}), name=[^)\n]{0,200}\):\s*$")
# ``tail`` or ``head`` over several files (``tail -n 50 logs/*.log``): ``==> logs/rank3.log <==`` before each file's
# lines; the lines after it, up to the next such header, are that file's, whose name says whose they are
_FILE_HEADER = re.compile(rb"^==> (?P<path>[^\n<>]{1,400}) <==\s*$")
# a paste's own heading for the rank whose lines follow (``rank1:``, ``Rank 0:``, ``## rank 3 log``): the lines after
# it, up to the next heading or file header, are that rank's where they do not name one themselves. A colon or a
# markdown heading's hashes make it one (a program's own ``rank 0`` print, one per process, is none)
_RANK_HEADING = re.compile(rb"^[ \t]{0,8}(?:(?P<hashes>#{1,4}) ?)?(?:\*\*)?[Rr]ank ?(?P<rank>\d{1,6})(?: (?:log|logs|output"
                           rb"|error|errors))?(?:\*\*)?(?P<colon> ?:)?(?:\*\*)?[ \t]*$", re.MULTILINE)
_HEADINGS_MAX = 1 << 16


def _rank_headings(block: bytes) -> list[tuple[int, int]]:
    """Where a paste's rank headings are in ``block``, and their ranks, in order."""
    return [(m.start(), int(m["rank"])) for m in _RANK_HEADING.finditer(block) if m["colon"] or m["hashes"]][:256]


# a paste whose newlines were lost (a page's rendered text copied, markdown joining the lines of an unfenced paste):
# log lines run together on one line, each still behind its writer's prefix; read apart, at the same line number
_BAR_ENDS = (b"/s]", b"s/it]")  # the end of a progress bar's rate field: ``2.14it/s]``, ``43.23s/it]``
_TRACEBACK_NEXT = rb"(?:\[rank\d{1,6}\]: ?)?Traceback \(most recent call last\)"  # behind its rank prefix or not
_AFTER_BAR = rb"(?:" + _TRACEBACK_NEXT + rb"|\[rank\d{1,6}\]:)"  # (or any line behind a rank prefix)
_RUN_TOGETHER = re.compile(
    rb" (?=[A-Za-z0-9_.\-]{1,253}:\d{1,10}:\d{1,10} \[-?\d{1,4}\] (?:NCCL |[\w./\-]{1,200}:\d{1,6} NCCL ))"
    rb"| (?=\[rank\d{1,6}\]:)"
    rb"| (?P<bare>(?=\[\d{1,4}\] NCCL (?:INFO|WARN) ))"  # a prefix cut to its device by the paste: ``[0] NCCL INFO …``
)
# a progress bar's last redraw with no line end (its rate, or a postfix after it: ``3.85it/s, loss=2.31]``), then
# another writer's line, which its parser reads at the start of a line only: a traceback (``… 2.14it/s][rank1]:
# Traceback (most recent call last):``), any line behind a rank prefix (``… 430.16 examples/s][rank1]:[W
# socket.cpp:432] …``), a Python exception's line (``RuntimeError: …``, ``torch.distributed.DistBackendError: …``, a
# bare class name), a glog line (``… 54.53s/it]W0722 21:16:14.716000 3681165 …``). A bar before any other line
# stays on it: the parsers that read such a line find it anywhere, and the rules read the two together.
_BAR_GLUED = re.compile(rb"(?:/s|s/it)(?:, [^\]\[\n]{0,200})?\](?=" + _AFTER_BAR +
                        rb"|(?:\[rank\d{1,6}\]: ?)?(?:[A-Za-z_]\w{0,60}\.){0,8}[A-Z]\w{0,60}(?:Error|Exception|Interrupt)\w{0,30}(?::|$)"
                        rb"|[EFW]\d{4} \d\d:\d\d:\d\d)")
# a progress bar cut inside its postfix by an exception written over it (a paste that lost the bar's end: ``7.92s/it,
# v_num=q5e6, train/loss=8.820, train/latenRuntimeError: Expected to have finished reduction``): the exception's class
# starts another line
_BAR_CUT = re.compile(rb"(?:/s|s/it), [^\n\]\[]{0,400}?(?<=[\w=.,\-])(?=[A-Z]\w{0,60}(?:Error|Exception): )")
# a Python traceback flattened onto one line (an issue's text outside a code block loses its line ends: ``Traceback
# (most recent call last):   File "/kaggle/working/train.py", line 1198, in main     x = unet.config.in_channels …
# AttributeError: 'DistributedDataParallel' object has no attribute 'config' Traceback (most recent call last): …``):
# each exception's line and each traceback are cut apart, so the exception is read as one
_FLAT_TRACEBACK = re.compile(rb'Traceback \(most recent call last\): +File "')
_FLAT_CUTS = re.compile(rb"(?<=\S) +(?=Traceback \(most recent call last\):)"
                        rb"|(?<=[\w)\]\"'>]) +(?=(?:[A-Za-z_]\w{0,60}\.){0,8}[A-Z]\w{0,60}(?:Error|Exception|Interrupt)\w{0,30}: )")
_WRITER = re.compile(rb"[A-Za-z0-9_.\-]{1,253}:\d{1,10}:\d{1,10}$")
_RANK = re.compile(rb"\[rank\d{1,6}\]:")
_RUN_MIN = 100  # bytes: a shorter line is one line
# glog's file header (PaddlePaddle, TensorFlow, Caffe, gRPC's C++ logs): ``Log file created at: 2018/08/02 16:09:21``,
# ``Running on machine: yq01-ecom-nova0843.yq01.baidu.com``, ``Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu …``
_GLOG_MACHINE = re.compile(rb"(?:^|\n)Running on machine: (?P<host>[A-Za-z0-9][\w.-]{0,252})\r?\n")


def _redrawn(raw: bytes) -> bytes:
    """A line a terminal redrew with carriage returns (a progress bar's thousands of redraws, then whatever was written
    after the last one): the last redraw and what follows it, which is what the terminal showed; the two run together
    as a bar glued to the next writer's line (read apart below). A line that merely ends in ``\r`` keeps its text."""
    pieces = [piece for piece in raw.split(b"\r") if piece.strip()]
    return b"".join(pieces[-2:]) if len(pieces) > 1 else (pieces[0] if pieces else b"")


def _glog_machine(head: bytes) -> str | None:
    """The machine a glog file's header names, in the first lines of the input (its header comes first)."""
    if b"Log file created at: " not in head[:200]:
        return None
    match = _GLOG_MACHINE.search(head[:600])
    return match["host"].decode("ascii", "replace") if match else None


def _runs_together(raw: bytes) -> bool:
    """Cheap first look (bytes.find) for a second writer's prefix in a line: NCCL's word twice, a rank prefix
    twice, or a progress bar's redraw right before another writer's line (a traceback, a rank's line, an exception's,
    a glog line)."""
    first = raw.find(b" NCCL ")
    if first >= 0 and raw.find(b" NCCL ", first + 6) >= 0:
        return True
    first = raw.find(b"[rank")
    if first >= 0 and raw.find(b" [rank", first + 5) >= 0:
        return True
    if b"Traceback (most recent call last): " in raw and _FLAT_TRACEBACK.search(raw) is not None:
        return True
    return (b"/s" in raw or b"s/it" in raw) and (_BAR_GLUED.search(raw) is not None or _BAR_CUT.search(raw) is not None)


def _apart(raw: bytes) -> list[bytes]:
    """The lines run together in ``raw``, cut before each writer's prefix after the first line's own (a rank
    prefix behind Ray's actor prefix stays with it; one right behind a progress bar's redraw is another writer's)."""
    rank = _RANK.search(raw)
    keep = rank.end() if rank and not raw[:rank.start()].endswith(_BAR_ENDS) else 0
    # a bare ``[0] NCCL`` right after its own ``host:pid:tid`` is that prefix's end, not another line; a bar's end
    # cuts wherever it is
    cuts = sorted({m.start() for m in _RUN_TOGETHER.finditer(raw) if m.start() >= keep and not (
        m["bare"] is not None and _WRITER.search(raw, max(0, m.start() - 280), m.start()))} |
                  {m.end() for m in _BAR_GLUED.finditer(raw)} | {m.end() for m in _BAR_CUT.finditer(raw)} |
                  ({m.start() for m in _FLAT_CUTS.finditer(raw)} if _FLAT_TRACEBACK.search(raw) else set()))
    if not cuts:
        return [raw]
    return [raw[a:b].strip(b" ") for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


_MAX_SEEN = 200_000  # distinct NCCL INFO keys remembered (bounded memory whatever the log)


def _info_key(raw: bytes, at: int) -> bytes | None:
    """A key under which repeated NCCL INFO lines are the same for the analysis, or None (always parse).

    ``at`` is where ``" NCCL INFO "`` starts in ``raw``. NCCL prints its configuration (bootstrap, NET/IB,
    network) again for every communicator a process joins, and an ``Init START`` and ``Init COMPLETE`` per
    communicator: only the first of each per process and message (per process and communicator size for ``Init
    COMPLETE``, per process and GPU for ``Init START``) says something new. The key is the line without the thread id of ``host:pid:tid``.
    """
    space = raw.rfind(b" ", 0, at)
    colon = raw.rfind(b":", 0, space) if space > 0 else -1
    if colon <= 0:
        return None
    if raw.find(b"Init START", at) >= 0:  # which GPU a process starts on: its first communicator per GPU says it
        bus = raw.find(b" busId ", at)
        return raw[:colon] + b"|START|" + (raw[bus + 7: bus + 24].split(b" ", 1)[0] if bus >= 0 else b"")
    complete = raw.find(b"Init COMPLETE", at)
    if complete < 0:
        return raw[:colon] + raw[space:]
    sized = raw.find(b" nranks ", at)
    if sized < 0:
        return None
    return raw[:colon] + b"|COMPLETE|" + raw[sized + 8: sized + 16].split(b" ", 1)[0]


def _blank_line(block: bytes, after: int, before: int) -> bool:
    """A blank line between two positions of ``block``: the end of a prompt's output."""
    gap = block[after:before]
    return b"\n\n" in gap or b"\n\r\n" in gap or b"\n \n" in gap


@dataclass
class _Active:
    follower: Follower
    fed: int = 0


@dataclass
class _State:
    source: str
    file_origin: Origin
    events: list[Event]
    active: list[_Active] = field(default_factory=list)
    followed_to: int = 0  # the last line of its writer's a traceback's follower took: a frame up to there is read


_MAX_BARS = 256  # progress bar states kept per input: a redraw replaces its bar's last state, a restart does not


@dataclass
class _Bars:
    at: dict[str, int] = field(default_factory=dict)  # a bar's key -> where its last state is in the events
    kept: int = 0
    lookbacks: int = 0
    above: int = 0  # lines whose events were read with the lines above them (parsers.LOOK_ABOVE)


# A progress bar or a line saying what a process is doing (evaluating, saving) matters only next to a wait that
# timed out: those lines are read on the timeout's own line (by the parsers) and on the ten lines before it
# (here, for the first timeouts of each input), not wherever they appear: a log of a million bar redraws costs
# nothing then (docs/performance.md).
_WAITS = frozenset({Kind.WATCHDOG_TIMEOUT, Kind.BLOCKING_WAIT_TIMEOUT, Kind.GLOO_TIMEOUT, Kind.STORE_ERROR,
                    Kind.WORK_STATUS})
_MAX_LOOKBACKS = 32
_LOOK_BACK_LINES = 10


def _raw_above(block: bytes, start: int, limit: int) -> Iterator[bytes]:
    """The lines above the line at ``start``, nearest first, at most ``limit``, as far back as this block goes."""
    pos = start
    for _ in range(limit):
        if pos <= 0:
            return
        begin = block.rfind(b"\n", 0, pos - 1) + 1
        yield block[begin:pos - 1]
        pos = begin


def _look_back(state: _State, block: bytes, start: int, number: int, bars: _Bars) -> None:
    """The progress bars and work lines among the ten lines before the line at ``start`` (line ``number``), as
    far back as this block goes."""
    found = [(number - back, raw) for back, raw in enumerate(_raw_above(block, start, _LOOK_BACK_LINES), 1)
             if any(marker in raw for marker in BAR_MARKERS)]
    for at, raw in reversed(found):  # in file order: a bar's later state replaces its earlier one
        _add(state.events, bar_events(make_line(_decode(raw), Ref(state.source, at), state.file_origin)), bars)


_MAX_ABOVE = 80  # lines looked at above an event that wants them (rules in parsers.LOOK_ABOVE)


def _lines_above(state: _State, block: bytes, start: int, line: Line) -> list[str]:
    """The bodies of the lines above the line at ``start``, nearest first, as long as they are the same writer's
    (rank, host and pid), within this block."""
    writer = (line.origin.rank, line.origin.host, line.origin.pid)
    above: list[str] = []
    for raw in _raw_above(block, start, _MAX_ABOVE):
        if raw == FILLER_BYTES:
            continue
        read = make_line(_decode(raw), Ref(state.source, 0), state.file_origin)
        if (read.origin.rank, read.origin.host, read.origin.pid) != writer:
            break
        above.append(read.body)
    return above


def _completed(state: _State, block: bytes, start: int, line: Line, new: list[Event], bars: _Bars) -> list[Event]:
    """``new`` with each event that wants the lines above it read with them (a bounded number per input)."""
    out: list[Event] = []
    above: list[str] | None = None
    for event in new:
        rule = next((read for wants, read in LOOK_ABOVE if wants(event)), None)
        if rule is None or bars.above >= _MAX_LOOKBACKS:
            out.append(event)
            continue
        if above is None:
            bars.above += 1
            above = _lines_above(state, block, start, line)
        out.extend(rule(line, event, above) or [event])
    return out


def _add(events: list[Event], new: list[Event], bars: _Bars) -> None:
    """Append ``new``; a progress bar's redraw replaces its previous state (a log may redraw a bar a million
    times), so the events stay bounded by the bars, not by their redraws. A bar that starts again (less time
    elapsed: another process's bar of the same name, or the next run) is kept beside the last one."""
    for event in new:
        if event.kind not in (Kind.PROGRESS_BAR, Kind.WORK_PHASE):
            events.append(event)
            continue
        key = bar_key(event)
        at = bars.at.get(key)
        if at is not None and float(event.data.get("elapsed_s") or 0) >= float(events[at].data.get("elapsed_s") or 0):
            events[at] = event
        elif bars.kept < _MAX_BARS:
            bars.kept += 1
            bars.at[key] = len(events)
            events.append(event)


def _picked(tail: bytes, marker: bytes, key: Callable[[bytes, int], bytes]) -> tuple[list[bytes], list[int]]:
    """The lines of ``tail`` that hold ``marker``, the last :data:`nccl_coll.KEEP` of each writer (``key`` of the
    line and the marker's place: its bytes, before anything is decoded), at most :data:`nccl_coll.MAX_STREAMS`
    writers: the lines, and the indexes of those picked, in the input's order."""
    raws = tail.split(b"\n")
    seen: dict[bytes, int] = {}
    chosen: list[int] = []
    for index in range(len(raws) - 1, -1, -1):
        raw = raws[index]
        at = raw.find(marker)
        if at < 0:
            continue
        writer = key(raw, at)
        count = seen.get(writer, 0)
        if count >= nccl_coll.KEEP or (count == 0 and len(seen) >= nccl_coll.MAX_STREAMS):
            continue
        seen[writer] = count + 1
        chosen.append(index)
    return raws, chosen[::-1]


def _call_writer(raw: bytes, at: int) -> bytes:
    """A COLL line's process (``host:pid``) and communicator."""
    bracket = raw.find(b" [", 0, at)
    comm = raw.find(b" comm ", at)
    return raw[:raw.rfind(b":", 0, bracket) if bracket > 0 else 0] + b"|" + raw[comm + 6:comm + 26]


def _last_calls(source: str, file_origin: Origin, tail: bytes, lines: int) -> list[Event]:
    """The last calls of each process and communicator that NCCL's COLL trace shows in ``tail``, the input's last
    bytes (which end at line ``lines``). The lines are picked from the end by their bytes (the writer's
    ``host:pid`` and the communicator), and only those kept are decoded."""
    if nccl_coll.MARKER not in tail:
        return []
    raws, chosen = _picked(tail, nccl_coll.MARKER, _call_writer)
    first = lines - tail.count(b"\n") + 1  # the number of raws[0] (``lines``: the newlines of the whole input)
    calls = (nccl_coll.parse(make_line(_decode(raws[index]), Ref(source, first + index), file_origin))
             for index in chosen)
    return [event for event in calls if event is not None]


def _last_traces(source: str, file_origin: Origin, tail: bytes, lines: int) -> list[Event]:
    """The last collectives of each rank that DETAIL's trace shows in ``tail`` (``[Rank 2] Running collective:
    CollectiveFingerPrint(…)``), picked from the end by their bytes (the rank), as :func:`_last_calls` picks NCCL's."""
    if torch_detail.TRACE_MARKER not in tail:
        return []
    raws, chosen = _picked(tail, torch_detail.TRACE_MARKER, lambda raw, at: raw[raw.rfind(b"[Rank ", 0, at):at])
    first = lines - tail.count(b"\n") + 1
    traces = (torch_detail.parse_trace(make_line(_decode(raws[index]), Ref(source, first + index), file_origin))
              for index in chosen)
    return [event for event in traces if event is not None]


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _feed(state: _State, active: _Active, block: bytes, pos: int, number: int) -> bool:
    """Feed lines from ``pos`` (line ``number``) on; True when the follower is still waiting for more."""
    follower = active.follower
    size = len(block)
    while pos < size:
        if active.fed >= follower.max_lines:
            state.events.extend(follower.finish())
            return False
        end = block.find(b"\n", pos)
        if end == -1:
            end = size
        if block[pos:end] == FILLER_BYTES:  # a line a joined line took in: the follower goes on across it
            pos = end + 1
            number += 1
            continue
        if block.startswith(b"==> ", pos) and _FILE_HEADER.match(block[pos:end]) is not None:
            state.events.extend(follower.finish())  # ``tail``'s next file: the block ends with its file, as at the end
            return False
        line = make_line(_decode(block[pos:end]), Ref(state.source, number), state.file_origin)
        active.fed += 1
        going = follower.feed(line)
        if going and isinstance(follower, TracebackFollower) and follower.owns(line):
            state.followed_to = max(state.followed_to, number)
        if not going:
            state.events.extend(follower.finish())
            return False
        pos = end + 1
        number += 1
    return True


def read_text(
    blocks: Iterable[bytes],
    source: str,
    file_origin: Origin,
    events: list[Event],
    scanner: Scanner | None = None,
) -> TextStats:
    """Parse the lines of ``blocks`` (each ending with a newline) into ``events``; returns what was read."""
    scanner = scanner or Scanner()
    state = _State(source, file_origin, events)
    stats = TextStats()
    first = len(events)  # this input's events start here
    seen: set[bytes] = set()
    bars = _Bars()
    lines_before = 0  # lines in the blocks already read
    margin: bytes | None = None
    width: int | None = None
    spaced: bool | None = None
    scope = file_origin  # whose the lines are where no prompt or process names one: the file's, or a header's in it
    prompts: set[str] = set()  # the hosts the file's shell prompts name
    first_prompt = 0  # the line of the first of them (0: none)
    before = last = b""  # the last two blocks read: NCCL's COLL trace is read in their end only (parsers.nccl_coll)
    for block in blocks:
        stats.bytes += len(block)
        # a paste from Windows: the anchors that end a line (`` -> 2\n``) see ``\r`` first (memchr for the ``\r``
        # first: a search for the pair costs a second per GB)
        if b"\r" in block and b"\r\n" in block:
            block = block.replace(b"\r\n", b"\n")
        block = unescaped(plain_spaces(block))
        if b"\x1b" in block:  # colour codes inside the words the scanner looks for (``NCCL \x1b[33mWARN``)
            block = ANSI_BYTES.sub(b"", block)
        if margin is None:
            margin = paste_margin(block)
            host = _glog_machine(block) if file_origin.host is None else None
            if host is not None:  # a glog file's header names its machine: every line of the file is from there
                file_origin = state.file_origin = scope = replace(file_origin, host=host)
        block = without_margin(block, margin)
        if spaced is None:
            spaced = double_spaced(block)
        if spaced:
            block = unspaced(block)
        if width is None:
            width = wrap_width(block)
        if width:
            block = unwrap(block, width)
        stats.blocks += 1
        if stats.blocks == 1:
            stats.first_block = block
        if state.active:
            state.active = [a for a in state.active if _feed(state, a, block, 0, lines_before + 1)]
        counted_pos = 0
        counted = lines_before
        find = block.find
        prompt_end = -1  # where the last line read in a prompt's scope ends in this block (-1: no prompt)
        # (a rank's heading has no anchor: looked for in a paste's small blocks only, not in a job's logs)
        headings = _rank_headings(block) if len(block) <= _HEADINGS_MAX and b"ank" in block else []
        next_heading = 0
        for start in scanner.line_starts(block):
            end = find(b"\n", start)
            if end == -1:
                end = len(block)
            raw = block[start:end]
            if b"\r" in raw:  # a terminal's redraws (a progress bar's ``\r``): what it showed last, after the last one
                raw = _redrawn(raw)
            if raw.startswith(b"==> ") and (header := _FILE_HEADER.match(raw)) is not None:
                # (origin_from_path: the file's rank, local rank or host, over those of the paste that holds it)
                named = origin_from_path(_decode(header["path"]).strip())
                scope = state.file_origin = named.filled_from(file_origin)
                prompt_end = -1
                continue
            while next_heading < len(headings) and headings[next_heading][0] < start:
                scope = state.file_origin = Origin(rank=headings[next_heading][1]).filled_from(file_origin)
                prompt_end, next_heading = -1, next_heading + 1
            if prompt_end >= 0:  # each gap is looked at once: the scope moves on with the lines read
                if _blank_line(block, prompt_end, start):
                    prompt_end, state.file_origin = -1, scope
                else:
                    prompt_end = end
            if b"@" in raw and (prompt := PROMPT.match(raw)) is not None and scope.host is None:
                prompt_end = end
                state.file_origin = replace(scope, host=prompt["host"].decode("ascii", "replace"))
                prompts.add(str(state.file_origin.host))
                if not first_prompt:
                    first_prompt = counted + block.count(b"\n", counted_pos, start) + 1
            elif b"-- Process " in raw and (spawned := _SPAWNED.match(raw)) is not None and scope.local_rank is None:
                prompt_end = end  # (a prompt's host before it stays: the process ran there)
                state.file_origin = replace(state.file_origin, local_rank=int(spawned["index"]))
            elif b"On WorkerInfo(" in raw and (remote := _RPC_REMOTE.match(raw)) is not None and scope.rank is None:
                prompt_end = end
                state.file_origin = replace(state.file_origin, rank=int(remote["id"]))
            at = raw.find(_INFO)
            if at >= 0:  # NCCL chatter: most of it repeats per communicator, skip what was seen
                key = _info_key(raw, at)
                if key is not None:
                    if key in seen:
                        stats.repeats += 1
                        continue
                    if len(seen) < _MAX_SEEN:
                        seen.add(key)
            counted += block.count(b"\n", counted_pos, start)
            counted_pos = start
            number = counted + 1
            if number <= state.followed_to and b'File "' in raw and b'", line ' in raw:
                continue  # a frame of a traceback read (a frame opens one only where none was)
            if len(raw) > _RUN_MIN and _runs_together(raw):
                pieces = _apart(raw)
                if len(pieces) > 1:
                    for index, piece in enumerate(pieces[:-1]):
                        stats.candidates += 1
                        # the pieces share a line number: each one's events are told apart from the others' (and
                        # from the last piece's, whose followers may add to them) when duplicates are merged
                        _add(events, [replace(e, data={**e.data, "piece": index}) for e in parse_line(
                            make_line(_decode(piece), Ref(source, number), state.file_origin))], bars)
                    raw = pieces[-1]
            line = make_line(_decode(raw), Ref(source, number), state.file_origin)
            stats.candidates += 1
            new = _completed(state, block, start, line, parse_line(line), bars)
            if number <= state.followed_to and is_source_line(line.body):
                # a frame's source line in a traceback read (``    model.predict(12) # AssertionError: …``): the
                # program's code, whatever words it holds, no error line of its own (one its program logged at ERROR
                # stays: the paste's only sign of an error may be that level)
                new = [e for e in new if e.kind is not Kind.ERROR_LINE or e.data.get("logged")]
            _add(events, new, bars)
            if bars.lookbacks < _MAX_LOOKBACKS and any(e.kind in _WAITS for e in new):
                bars.lookbacks += 1
                _look_back(state, block, start, number, bars)
            for follower in start_followers(line):
                if isinstance(follower, TracebackFollower) and follower.headless and number <= state.followed_to:
                    continue  # (a frame cut short, of a traceback read)
                active = _Active(follower)
                if _feed(state, active, block, end + 1, number + 1):
                    state.active.append(active)
        if next_heading < len(headings):  # a heading after the block's last line read: the next block's lines
            scope = Origin(rank=headings[-1][1]).filled_from(file_origin)
        lines_before = counted + block.count(b"\n", counted_pos)
        state.file_origin = scope  # a prompt's scope ends with its block (a file header's and a heading's go on)
        before, last = last, block  # (references: the tail is cut from them once, at the end)
    for active in state.active:
        events.extend(active.follower.finish())
    tail = last[-nccl_coll.TAIL_BYTES:] if len(last) >= nccl_coll.TAIL_BYTES else \
        (before[len(last) - nccl_coll.TAIL_BYTES:] + last)
    events.extend(_last_calls(source, state.file_origin, tail, lines_before))
    events.extend(_last_traces(source, state.file_origin, tail, lines_before))
    cut = cut_last_line(tail)
    if cut is not None:  # (the paste stopped inside a line: what its lines leave out may be what was cut)
        back, raw = cut
        events.append(make_event(Kind.PASTE_CUT, make_line(_decode(raw), Ref(source, lines_before - back),
                                                             state.file_origin)))
    events[first:] = drop_records_inside_tables(events[first:])
    if len(prompts) == 1 and file_origin.host is None:
        host = next(iter(prompts))
        events[first:] = [replace(e, origin=replace(e.origin, host=host))
                          if e.origin.host is None and e.ref.line < first_prompt else e for e in events[first:]]
    stats.lines = lines_before
    return stats
