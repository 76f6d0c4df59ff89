"""What pasting does to every line of a log alike, undone before its lines are read. Pure: bytes in, bytes out.

A log reaches ``analyze`` through a terminal, a chat, an issue or a log pipeline: colour codes, each line a JSON
record of a log collector (Docker's ``{"log": …}``, a structured logger's ``{"msg": …}``, Cloud Logging's
``{"textPayload": …}``), a margin every line shares (a markdown code block indented by four spaces or inside a list
item, a quoted reply), lines hard wrapped at the terminal's width, a blank line after every line (a copy from a web
page or a remote desktop). Line counts are kept, so that evidence still cites the line where a thing is (a record
that holds several lines aside).
"""

from __future__ import annotations

import json
import re

from syncdoctor.analyze.parsers.nccl_tests import ECHO
from syncdoctor.analyze.parsers.prefixes import split_nccl, split_prefix
from syncdoctor.analyze.parsers.traceback import exception_of

__all__ = ["ANSI_BYTES", "FILLER", "FILLER_BYTES", "cut_last_line", "double_spaced", "json_records", "paste_margin", "plain_spaces",
           "records_text", "runners_line", "strings_text", "unescaped", "unjsoned", "unquoted", "unspaced", "unwrap", "without_margin", "wrap_width"]

ANSI_BYTES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\n]*\x07")
_LEAD = re.compile(rb"[ \t>]*")
_FENCE_LINE = re.compile(rb"[ \t>]*(?:```|~~~)")
_MARGIN_LINES = 400


def _head(block: bytes, lines: int) -> list[bytes]:
    """The first ``lines`` lines of ``block`` (without copying the rest of it)."""
    end = -1
    for _ in range(lines):
        end = block.find(b"\n", end + 1)
        if end < 0:
            end = len(block)
            break
    return block[:end].split(b"\n")


def _shared(a: bytes, b: bytes) -> bytes:
    """The bytes ``a`` and ``b`` start with alike."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


def paste_margin(block: bytes) -> bytes:
    """The margin every line of a paste shares, from its first lines: the indentation of a markdown code block
    or of a list item's, the quote marks of a quoted reply (``> ``), both. Empty for a log as written (its
    first line starts at the margin). Blank lines and fences do not count."""
    common: bytes | None = None
    for line in _head(block, _MARGIN_LINES):
        line = line.rstrip(b"\r")
        if not line.strip(b" \t>") or _FENCE_LINE.match(line):
            continue
        lead = _LEAD.match(line)
        run = lead.group(0) if lead else b""
        common = run if common is None else _shared(common, run)
        if not common:
            return b""
    return common or b""


def without_margin(data: bytes, margin: bytes) -> bytes:
    """``data`` with ``margin`` taken off every line that starts with it."""
    return re.sub(rb"(?m)^" + re.escape(margin), b"", data) if margin else data


def unquoted(data: bytes) -> bytes:
    """``data`` without the margin its own first lines share (an indented code block, a quoted reply)."""
    return without_margin(data, paste_margin(data))


# what stands in for each line a joined line took in (the line numbers stay those of the paste): a control
# character no log line is, which the reader skips, so that a traceback or a table goes on across it
FILLER = "\x1f"
FILLER_BYTES = FILLER.encode()
_WRAP_SAMPLE = 2000  # lines of the first block looked at for a wrap width
_MIN_WIDTH = 60
_MIN_ALONE, _MAX_ALONE = 80, 250  # the width of a terminal that wrapped a paste's one long line
_FRAME_END = re.compile(r'["\u201d], line \d{1,7}, in [\w<>.]{1,200}$')  # a traceback's frame, its code line below it
# what opens a line of its own in lower case: a program's, a logger's or a host's name and a colon (``pyxis: …``,
# ``libibverbs: …``, ``github: …``, ``stderr: …``, ``ddp-0: ``), a call (``warnings.warn(``), a shell's prompt
_OWN_WORD = re.compile(r"[\w.\-]{1,64}(?::(?: |$)|\(|@[\w.\-]{1,64}[:$#])")


_LINE_NUMBER = re.compile(r"\[?\d{1,9}\]?[:|]? +")  # a log viewer's line number: ``[80747] [rank4]:[E321 …``
# Python logging's default format, ``%(levelname)s:%(name)s:%(message)s``: ``INFO:root:…``, ``WARNING:torch.distributed…:``;
# a logger's name, its level and its time or place (submitit's ``submitit ERROR (2025-03-14 16:42:10,554) - …``)
_PYTHON_LOGGING = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]{1,200}:"
                             r"|[\w.\-]{1,100} (?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) [(\[]")
# UCX's signal handler's and logger's place, ``[host:pid:thread:tid]`` (``[c664db21f8dd:90420:0:95366] Caught signal 7
# (Bus error: …)``), and its backtrace's frame lines (`` 1 0x000000000007587d ncclGroupEnd()  ???:0``)
_UCX_PLACE = re.compile(r"\[[\w.\-]{1,253}:\d{1,10} *:\d{1,6}:\d{1,10}\] | ?\d{1,3} 0x[0-9a-f]{6,16} ")
# a program's name before its message, as the shell's tools and the launchers write it (``ssh: Could not resolve
# hostname worker-1``, ``pdsh@node-0: node-1: ssh exited with exit code 255``, ``bash: line 1: …``, ``srun: error: …``),
# and the shell's trace of a script's commands (``+ POD_NAME=worker-1``)
_PROGRAM = re.compile(r"(?:ssh|pdsh(?:@[\w.\-]{1,253})?|pdcp|srun|sbatch|salloc|slurmstepd|bash|sh|zsh|mpirun|mpiexec|"
                      r"orted|prterun|horovodrun|kubectl|docker|sudo|torchrun|deepspeed|accelerate|nvidia-smi|"
                      r"flux(?:-[a-z]{1,20})?(?:\[\d{1,7}\])?|"  # Flux's commands and job shell: ``flux-job: ``
                      r"python[\d.]{0,5}): |\+{1,3} [\w$]"
                      # Flux's attach output, its seconds since the job began: ``0.261s: job.exception …``
                      r"|\d{1,7}\.\d{3}s: ")


# other openings no wrapped piece has, each a line a program wrote (a wrap that cuts a line right before one of them is
# rare; one that joins such a line to the line above hides it): a markdown fence; c10's ``Exception raised from …`` and
# its backtrace's ``frame #2: …``, ``terminate called after throwing …``; the kernel's relative stamp (``[  +0.000003]``)
# and the journal's ``kernel: ``; a time or a level in brackets (``[17:17:00] ``, ``[ERROR] ``, ``[HUGECTR][08:46:21]``);
# syslog's stamp without a year (``May 09 00:31:28 ``), the Neuron runtime's (``2024-May-21 16:16:20.0229 ``); Open MPI's
# place, ``[node-3:12345] `` (and its backtrace's ``[node-3:12345] [ 2] ``); Ray's ``(raylet) ``; the line that names
# NCCL's result below PyTorch's error line (``ncclSystemError: System call …``, ``ncclDevCommCreate failed``); ctime's
# stamp (``Sun Jun 10 17:48:47``); NCCL's place, its message cut away (``node4:565139:565148 [0]``)
_OWN_LINE = re.compile(
    r"(?:```|~~~|Exception raised from |frame #\d{1,4}: |terminate called |kernel: |\(raylet\) |nccl[A-Z][A-Za-z]{3,40}[: ]"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d "
    r"|\[ *\+?\d{1,10}\.\d{3,9}\] |\[\d\d:\d\d:\d\d(?:[.,]\d{1,6})?\] |\[(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FATAL|CRITICAL)\] "
    r"|\[[A-Z]{2,12}\]\[\d\d:\d\d:\d\d\]"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d |\d{4}-[A-Z][a-z]{2}-\d\d \d\d:\d\d:\d\d"
    r"|\[[\w.\-]{1,253}:\d{1,10}\] |[\w.\-]{1,253}:\d{1,10}:\d{1,10} \[\d{1,3}\])")


def _starts_a_line(text: str, numbered: bool = True) -> bool:
    """A line that opens as log lines do (a writer's prefix, a level, a timestamp, NCCL's prefix, a Python
    exception or traceback line), also after a log viewer's line number: a line of its own, not the rest of one."""
    number = _LINE_NUMBER.match(text) if numbered else None
    if number and _starts_a_line(text[number.end():], numbered=False):
        return True
    prefix = split_prefix(text)
    origin = prefix.origin
    if prefix.time_text or prefix.severity or origin.rank is not None or origin.host or origin.pid is not None \
            or origin.local_rank is not None:
        return True
    body = prefix.body
    # (nccl-tests' echo of a failure below its failure line, `` .. g0010 pid 888386: Test failure common.cu:891``)
    if _PYTHON_LOGGING.match(body) or ECHO.match(body.lstrip()) or _UCX_PLACE.match(body) or _PROGRAM.match(body) \
            or _OWN_LINE.match(body):
        return True
    exception = exception_of(body)
    if exception is not None and "." not in exception[0] and exception[0][:1].islower():
        exception = None  # the rest of a word cut by the wrap (``rkError: …`` of ``DistNetworkError: …``)
    return (split_nccl(body) is not None or exception is not None or body.startswith("Traceback")
            or body.lstrip().startswith('File "'))


def wrap_width(block: bytes) -> int:
    """The width at which a paste's lines were hard wrapped (a terminal's, an e-mail's), from the first block, or 0:
    no line is longer, and the lines exactly that long are followed by the rest of their line (:func:`_piece`: not a
    log line of its own, no prefix, no timestamp), at least a third of them and at least two; or one, when the wrap
    visibly cut a word there (the line ends in a letter or digit and its rest opens in lower case). A log whose
    longest lines are a repeated message, or were cut by the writer, has no such continuations, nor one whose lines
    all have one length (a table, a trace of fixed-width fields)."""
    lines = [line.decode("utf-8", "replace").rstrip("\r") for line in _head(block, _WRAP_SAMPLE)]
    width = max((len(line) for line in lines), default=0)
    if width < _MIN_WIDTH:
        return 0
    at = [i for i, line in enumerate(lines) if len(line) == width]
    # (one message repeated at that width, its numbers aside: ``bnxt_re2`` and ``bnxt_re3`` of one driver warning)
    alike = len(at) > 1 and len({_DIGITS.sub("0", lines[i]) for i in at}) == 1
    wide = set(at)
    cut = 0  # the lines of that width followed by the rest of their line
    last = -1  # (the last of them)
    # (a line below of that width too is a middle piece of a line cut in several when it goes on, or the last one
    # when the terminal padded it with spaces to the width: a table's rows of one width are neither)
    went_on = False
    for i in reversed(at):
        middle = i + 1 in wide and went_on
        went_on = i + 1 < len(lines) and _piece(lines[i + 1], lines[i], alike, middle) \
            and (i + 1 not in wide or middle or lines[i + 1].endswith(" "))
        cut += went_on
        last = i if went_on and last < 0 else last
    if cut * 3 < len(at) or not cut:
        return 0
    if cut == 1:
        line, rest = lines[last], lines[last + 1]
        path = _path_cut(line, rest)
        return width if _MIN_ALONE <= width <= _MAX_ALONE and (_cut_there(line, rest) or path) \
            and not _FRAME_END.search(line) and (not _OWN_WORD.match(rest.lstrip(" ")) or _word_cut(line, rest) or path) \
            and sum(1 for other in lines if other.strip() == rest.strip()) == 1 else 0
    return width


def _cut_there(line: str, rest: str) -> bool:
    """Where one long line alone was cut: inside a word (``opera|tions``: it ends in a letter or digit, its rest opens
    in lower case), at the space between two words (``caused by too| large tensor``, ``already |in use``: one space,
    then lower case), inside a bracket the line left open (``peer 10.0.35.1<3|8847> failed``), inside a number
    (``6006|59 milliseconds``), before a key's colon or a name's dot (``local_rank|: 1``, ``op|.preamble``), between a key and its number
    (``local_rank: |0 (pid: 18014)``), after a colon inside an address (``fe80::966d:|ae03``), or after an underscore
    inside a name (``IBV_|WC_SUCCESS``)."""
    end, first = line[-1:], rest[:1]
    if _closes(line, rest):
        return True
    if end.isalnum():
        return first.islower() or (first == " " and rest[1:2].islower()) \
            or (end.isdigit() and first.isdigit() and not _OWN_NUMBER.match(rest)) \
            or (first == "." and rest[1:2].isalpha()) or rest[:2] == ": "  # (``op|.preamble``, ``local_rank|: 1``)
    if end == "_" and line[-2:-1].isalnum():  # (inside a name after its underscore, ``IBV_|WC_SUCCESS``)
        return first.isalnum()
    if end == ":" and line[-2:-1] != ":":  # (inside an address, ``fe80::966d:|ae03:a2``)
        return first.islower() or first.isdigit()
    if line.endswith(": ") and line[-3:-2].isalnum() and first.isdigit():
        return not _OWN_NUMBER.match(rest)  # (between a key and its value: ``local_rank: |0 (pid: 1801442)``)
    return end == " " and line[-2:-1] not in (" ", "") and first.islower()


# what a line of its own opening with a digit does: a progress bar's percentage, a date, a time, a count and a colon
# (``100%|███``, ``02-02 08:45:00``, ``19:15:34  NVRM: Xid``); a number's rest goes on otherwise (``6006|59 milliseconds``)
_OWN_NUMBER = re.compile(r"\d{1,4}(?:%|[-/.:]\d|:)")
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_BRACKET = re.compile(r"[()\[\]{}<>]")
# the words an error's line names before a colon, which a program's or a logger's name before its colon is not: a
# rest that reads ``name: `` is a line of its own, unless the cut split one of these (``fai|led: Cannot``,
# ``undefined s|ymbol: ncclMemFree``)
_KEYWORDS = frozenset({"failed", "symbol", "error", "errno", "reason", "message", "status", "code", "address", "port",
                       "rank", "size", "device", "timeout", "exitcode", "signal", "type", "value", "result"})
_TAIL = re.compile(r"[A-Za-z_]{1,40}$")
_HEAD = re.compile(r"[A-Za-z_]{1,40}(?=: )")


def _word_cut(line: str, rest: str) -> bool:
    """The cut split a word that a line names before a colon, or fell at the space before it: the line ends in its
    first letters, the rest opens with the others (``fai`` then ``led: Cannot allocate memory``)."""
    tail, head = _TAIL.search(line), _HEAD.match(rest)
    if head is None:
        return False
    if tail is None:  # (cut at the space before the word: ``undefined |symbol: ncclMemFree``)
        return line.endswith(" ") and head[0].lower() in _KEYWORDS
    return (tail[0] + head[0]).lower() in _KEYWORDS


_PATH_TAIL = 16  # characters of a path the line ends with, at least
# the rest of a file's name, up to its extension (``64-linux-gnu.so: undefined symbol``, ``on.py", line 12``): no
# program's or logger's name opens a line so
_FILE_END = re.compile(r"\w[\w\-+]*(?:\.[\w\-+]+)*\.[A-Za-z][A-Za-z0-9]{0,5}(?=[:\s,)'\"]|$)")


def _path_cut(line: str, rest: str) -> bool:
    """The cut fell inside a file's path that the line ends with, its rest going on without a space
    (``…/flash_attn_2_cuda.cpython-310-x86_`` then ``64-linux-gnu.so: undefined symbol: …``): a line of its own does
    not open with a path's tail."""
    tail = line.rsplit(" ", 1)[-1]
    inside = tail[-1:].isalnum() or tail[-1:] in ("_", "-")  # (a cut between two characters of one name)
    return inside and "/" in tail and len(tail) >= _PATH_TAIL and _FILE_END.match(rest) is not None


def _closes(line: str, rest: str) -> bool:
    """``rest`` first closes a bracket ``line`` left open, within its first word or two (``… peer 10.0.35.1<49189`` then
    ``> with error 4``, ``<3`` then ``8847> failed``): the cut fell inside it, a line of its own does not open so."""
    first = _BRACKET.search(rest[:16])
    if first is None or first[0] not in _CLOSERS:
        return False
    opener = _CLOSERS[first[0]]
    return not rest[:first.start()].strip(" ").startswith(tuple("([{<")) \
        and (line[-1:].isalnum() or line[-1:] == opener) and line.count(opener) > line.count(first[0])


_DIGITS = re.compile(r"\d+")
_OPENING = 12  # characters a line shares with the wrapped line above it before it is that line again, not its rest


def _piece(line: str, above: str, alike: bool, middle: bool = False) -> bool:
    """``line`` can be the rest of ``above``, a line cut at the wrap width: not blank, not indented (but a middle piece
    that goes on may open with the spaces the cut fell in: a progress bar's), not a line of its own (it opens as a
    program writes, or as ``above`` does: a message repeated). Below one message repeated at that width (``alike``)
    only a fragment is: no capital opens it (``etrying`` of ``r|etrying``, ``26/34) after …``), for a message of two
    lines repeated, or one followed by lines of their own, goes on as a sentence does."""
    if not line.strip() or (line.startswith("  ") and not middle) or line == FILLER or _starts_a_line(line):
        return False
    if line[:_OPENING] == above[:_OPENING]:
        return False
    return not (alike and line[:1].isupper())


def unwrap(block: bytes, width: int) -> bytes:
    """The lines of ``block`` that were wrapped at ``width`` joined again, each joined line followed by as many
    :data:`FILLER` lines as it took in (the line numbers stay those of the paste)."""
    lines = block.decode("utf-8", "replace").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line, taken = lines[i], 0
        while len(lines[i + taken]) == width and i + taken + 1 < len(lines) - 1 \
                and lines[i + taken + 1].strip() and lines[i + taken + 1] != FILLER \
                and not _starts_a_line(lines[i + taken + 1]):
            taken += 1
            line += lines[i + taken]
        out.append(line)
        out.extend([FILLER] * taken)
        i += taken + 1
    return "\n".join(out).encode("utf-8")


_MIN_SPACED = 6  # lines of a paste's first block, each followed by a blank line, before it counts as double spaced


_CUT_LOOKBACK = 200  # lines above the last one whose starts a cut last line is compared with


def cut_last_line(tail: bytes) -> tuple[int, bytes] | None:
    """Where a paste stopped in the middle of its last line: that line (blank lines after it aside) is the start of a
    longer line above it, cut inside a word (``[ra`` below ``[rank2]:[E1001 …``, ``H100-5:68738:6`` below
    ``H100-5:68738:69060 [3] …``). ``tail`` is the input's end, each line ending with a newline. Returns how many
    lines above the input's last the cut one is (0: the last) and its bytes; None where the last line is whole as
    far as can be told (``Killed`` below ``Killed process 12`` stops at a word's end)."""
    lines = tail.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # (after the last newline: no line)
    back = 0
    while lines and not lines[-1].strip():
        lines.pop()
        back += 1
    if len(lines) < 2:
        return None
    cut = lines[-1].rstrip(b" \t\r")
    if len(cut) < 2 or not cut[-1:].isalnum():
        return None
    size = len(cut)
    for above in lines[-_CUT_LOOKBACK - 1:-1]:
        if len(above) > size and above.startswith(cut) and above[size:size + 1].isalnum():
            return back, cut
    return None


def _blank(line: bytes) -> bool:
    return not line.strip() and line != FILLER_BYTES


def double_spaced(block: bytes) -> bool:
    """A paste with a blank line after every line (copied from a web page, a remote desktop, a chat), from its
    first block: at least six lines that are not blank, and hardly any (one in twenty) followed by another such
    line rather than by a blank one. Fences do not count."""
    lines = [line.rstrip(b"\r") for line in _head(block, _WRAP_SAMPLE)]

    def text(i: int) -> bool:
        return 0 <= i < len(lines) and not _blank(lines[i]) and not _FENCE_LINE.match(lines[i])

    written = [i for i in range(len(lines)) if text(i)]
    if len(written) < _MIN_SPACED:
        return False
    return sum(1 for i in written if text(i + 1)) * 20 <= len(written)


def unspaced(block: bytes) -> bytes:
    """``block`` with the blank line that follows each line replaced by a :data:`FILLER` line (the line numbers
    stay those of the paste; a traceback or a table goes on across it). A blank line the log had itself (two or
    more in a row in the paste) stays."""
    lines = block.split(b"\n")
    for i in range(1, len(lines)):
        if _blank(lines[i]) and not _blank(lines[i - 1]) and lines[i - 1] != FILLER_BYTES and i + 1 < len(lines):
            lines[i] = FILLER_BYTES
    return b"\n".join(lines)


def plain_spaces(block: bytes) -> bytes:
    """``block`` with the no-break spaces of a rendered page's copy (``NCCL\u00a0WARN``, UTF-8 ``c2 a0``) as plain
    spaces, so that the scanner's words and the parsers' patterns see them."""
    # memchr for the one byte first: a search for the pair runs at about 1 GB/s, a second per GB of log
    return block.replace(b"\xc2\xa0", b" ") if b"\xa0" in block and b"\xc2\xa0" in block else block


# the entities a page's source writes for what it shows (a paste taken from a page's HTML, a forum's or a wiki's raw
# text): ``NCCL WARN Net : Connection closed by remote peer node-3&lt;56262&gt;``, a quoted reply's ``&gt; ``
_ENTITY = re.compile(rb"&(lt|gt|quot|apos|amp|nbsp|#39|#x27|#34|#60|#62);")
_ENTITIES = {b"lt": b"<", b"gt": b">", b"quot": b'"', b"apos": b"'", b"amp": b"&", b"nbsp": b" ", b"#39": b"'",
             b"#x27": b"'", b"#34": b'"', b"#60": b"<", b"#62": b">"}


def unescaped(block: bytes) -> bytes:
    """``block`` with the HTML entities of a page's source (``&lt;``, ``&gt;``, ``&quot;``, ``&#39;``, ``&amp;``) as
    the characters they stand for, each once (``&amp;lt;`` is ``&lt;``, as the page showed it)."""
    if b"&" not in block or _ENTITY.search(block) is None:  # memchr first: most logs hold no ``&``
        return block
    return _ENTITY.sub(lambda m: _ENTITIES[m.group(1)], block)


_RECORD_KEYS = ("log", "message", "msg", "textPayload", "MESSAGE")  # where collectors put the line the program wrote
_HOST_KEYS = ("hostname", "host", "pod_name", "pod", "nodename", "_HOSTNAME")
_MIN_RECORDS = 3  # lines of a paste's first block that are such records, before each line is read as one


def _record(line: bytes) -> tuple[str, str] | None:
    """The text a collector's JSON record holds, and the host it names ("" when none); None when not one."""
    if not line.startswith(b"{"):
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # cut, not JSON, or nested past the parser's depth
        return None
    return _held(record)


def _held(record: object) -> tuple[str, str] | None:
    if not isinstance(record, dict):
        return None
    text = next((record[k] for k in _RECORD_KEYS if isinstance(record.get(k), str)), None)
    if text is None and runners_line(record):
        text = record["data"]
    if text is None:
        return None
    return text, _host(record, 3)


def runners_line(record: object) -> bool:
    """A runner's record of one line its child wrote (milabench's ``{"event": "line", "data": "…", "pipe":
    "stderr"}``): a collector's record, not an event of its own."""
    return isinstance(record, dict) and isinstance(record.get("data"), str) and (
        record.get("event") == "line" or record.get("pipe") in ("stdout", "stderr"))


def _host(record: dict, depth: int) -> str:
    """The host a record names, looked for in its fields and, ``depth`` levels down, in the objects they hold
    (Kubernetes' ``{"kubernetes": {"pod_name": …}}``, Cloud Logging's ``{"resource": {"labels": …}}``)."""
    for key in _HOST_KEYS:
        if isinstance(record.get(key), str) and record[key].strip():
            return record[key].strip()
    if depth > 1:
        for value in record.values():
            if isinstance(value, dict) and (host := _host(value, depth - 1)):
                return host
    return ""


def json_records(block: bytes) -> bool:
    """A log whose lines are a collector's JSON records, from its first block: at least three of its first lines
    are, and as many as are not."""
    lines = [line.strip() for line in _head(block, _WRAP_SAMPLE) if line.strip()][:_MIN_RECORDS * 20]
    records = sum(1 for line in lines if _record(line) is not None)
    return records >= min(_MIN_RECORDS, len(lines)) > 0 and records * 2 >= len(lines)


def _lines(text: str, host: str) -> list[bytes]:
    return [f"{host}: {piece}".encode() if host and piece.strip() else piece.encode()
            for piece in text.rstrip("\n").split("\n")]


def records_text(doc: object) -> bytes | None:
    """The lines a JSON document of collector records holds (one record, or a list of them: Cloud Logging's
    download), ``host: ``-prefixed as :func:`unjsoned` writes them; None when it is not such a document."""
    records = doc if isinstance(doc, list) else [doc]
    held = [found for record in records if (found := _held(record)) is not None]
    if not held or len(held) < len(records):
        return None
    return b"".join(line + b"\n" for text, host in held for line in _lines(text, host))


_MAX_STRINGS = 100_000  # the strings read from one JSON document of no known kind
_LOG_FIELDS = frozenset({"message", "msg", "log", "logs", "error", "errors", "traceback", "py_callstack", "exception",
                         "stderr", "stdout", "output", "textpayload"})


def strings_text(doc: object) -> bytes:
    """The text a JSON document of no kind known to analyze holds: its strings in document order, one line per
    line of each (torchelastic's error file, ``{"message": {"message": …, "extraInfo": {"py_callstack": …}}}``; an
    object some tool printed), where some field of it is named for a program's output (``message``, ``error``,
    ``traceback``, ``stderr``…); else nothing (a config, a metrics file). Bounded: the first :data:`_MAX_STRINGS`
    strings."""
    out: list[str] = []
    stack = [doc]
    logged = False  # a field that holds a program's output (a config's or a metric file's strings are not read)
    while stack and len(out) < _MAX_STRINGS:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item.rstrip("\n"))
        elif isinstance(item, dict):
            logged = logged or any(str(key).lower() in _LOG_FIELDS for key in item)
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    if not logged:
        return b""
    return "".join(text + "\n" for text in out if text.strip()).encode("utf-8", "replace")


def _whole(lines: list[bytes]) -> list[tuple[str, str] | None] | None:
    """Every line's record, the block parsed as one JSON array (one call into the C parser instead of one per line:
    about ten times faster); None where some line is not a whole record (then each is parsed alone)."""
    kept = [line for line in lines if line.strip()]
    if not kept or not all(line.lstrip().startswith(b"{") for line in kept):
        return None
    try:
        docs = json.loads(b"[" + b",".join(kept) + b"]")
    except (ValueError, RecursionError):
        return None
    found = iter(docs)
    return [_held(next(found)) if line.strip() else None for line in lines]


def unjsoned(block: bytes) -> bytes:
    """``block`` with each record replaced by the text it holds, after its host as a ``host: `` prefix where the
    record names one (as pdsh writes). A line that is no record stays. A record that holds several lines (a
    traceback in one event) becomes those lines: the line numbers after it count them."""
    lines = block.split(b"\n")
    whole = _whole(lines)
    out = []
    for index, line in enumerate(lines):
        found = whole[index] if whole is not None else _record(line.strip())
        if found is None:
            out.append(line)
            continue
        out.extend(_lines(*found))
    return b"\n".join(out)
