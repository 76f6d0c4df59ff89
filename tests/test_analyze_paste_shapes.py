"""The same log in the shapes pastes and collectors give it reads the same. Every case of the real corpus whose
lines show the cause, and whose category analyze gets right, is read again after each change a paste or a log
pipeline makes to all its lines: Windows line ends, a quoted reply (``> ``), a markdown code block indented by
four spaces (or a list item's), colour codes around the level words, no-break spaces for every space (a copy of a
rendered page), a collector's timestamp before each line
(``kubectl logs --timestamps``), a terminal's hard wrap, a blank line after every line (a copy from a web page or a
remote desktop). The category of the top hypothesis must stay the same.
The undoing itself (syncdoctor.analyze.paste) is tested on plain bytes below."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.parsers.prefixes import clean, split_prefix
from syncdoctor.analyze.paste import (
    FILLER,
    cut_last_line,
    double_spaced,
    json_records,
    paste_margin,
    records_text,
    strings_text,
    unescaped,
    unjsoned,
    unspaced,
    unwrap,
    wrap_width,
)

REAL = Path(__file__).resolve().parent / "fixtures" / "analyze" / "real"


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").split("\n")


def crlf(text: str) -> str:
    return "\r\n".join(_lines(text))


def quoted(text: str) -> str:
    return "".join(f"> {line}\n" for line in _lines(text))


def indented(text: str) -> str:
    return "".join(f"    {line}\n" for line in _lines(text))


def wrapped(text: str) -> str:
    return "".join(line[i:i + 120] + "\n" for line in _lines(text) for i in range(0, max(len(line), 1), 120))


def nonbreaking(text: str) -> str:
    return text.replace(" ", "\u00a0")  # a copy from a rendered page (a PR's text, a wiki) with no-break spaces


def spaced(text: str) -> str:
    return "".join(f"{line}\n\n" for line in _lines(text))


def coloured(text: str) -> str:
    return re.sub(r"\b(WARN|ERROR|Error|INFO)\b", "\x1b[31m\\1\x1b[0m", text)


def stamped(text: str) -> str:
    return "".join(f"2024-05-01T12:{n // 60 % 60:02d}:{n % 60:02d}.123456789Z {line}\n"
                   for n, line in enumerate(_lines(text)))


def tab_stamped(text: str) -> str:  # an export's columns (CloudWatch's, a spreadsheet's): the stamp, a tab, the line
    return "".join(f"2024-05-01T12:{n // 60 % 60:02d}:{n % 60:02d}.123+00:00\t{line}\n" for n, line in enumerate(_lines(text)))


def cri(text: str) -> str:  # a container runtime's own file (/var/log/pods/…): its stamp, the stream, F (whole)
    return "".join(f"2024-05-01T12:{n // 60 % 60:02d}:{n % 60:02d}.123456789Z stderr F {line}\n"
                   for n, line in enumerate(_lines(text)))


def docker_json(text: str) -> str:  # Docker's json-file driver: each line a record that holds it
    return "".join(json.dumps({"log": line + "\n", "stream": "stderr", "time": f"2024-05-01T12:00:{n % 60:02d}Z"})
                   + "\n" for n, line in enumerate(_lines(text)))


def escaped(text: str) -> str:  # the page's source (its HTML, a forum's raw text), not what it showed: ``&lt;``
    return html.escape(text, quote=True)


def _category(path: Path) -> str:
    hypotheses = analyze_paths([str(path)]).diagnosis.hypotheses
    return hypotheses[0].code if hypotheses else "-"


@pytest.fixture(scope="module")
def right_cases() -> list[tuple[str, str, str]]:
    """(case, its log, the category analyze gives it) for the cases whose lines show the cause, read right."""
    cases = []
    for folder in sorted(REAL.iterdir()):
        log = folder / "log.txt"
        if not log.is_file():
            continue  # a case of several files
        expected = json.loads((folder / "expected.json").read_text())
        if expected.get("in_log") and _category(log) == expected["category"]:
            cases.append((folder.name, log.read_text(encoding="utf-8", errors="replace"), expected["category"]))
    return cases


@pytest.mark.parametrize(("shape", "allowed"), [
    (crlf, 0), (quoted, 0), (indented, 0), (coloured, 0), (nonbreaking, 0), (escaped, 0),
    # a collector's timestamps stand beside the log's own, which some readings compare (a heartbeat's age), and
    # before a fence or a tool's own report header: a few cases may read otherwise
    (stamped, 0.01), (tab_stamped, 0.01), (cri, 0.01), (docker_json, 0),
    # a terminal's hard wrap at 120 columns: joined again where two different lines end exactly there and go on
    # in lines of no prefix; a paste with one long line, or a continuation that starts like a line of its own (a
    # rank, a time), is not (15 of 600)
    (wrapped, 0.04),
    # the blank line after each line stands in for nothing (the line numbers stay the paste's): a few readings
    # that look a number of lines on from an error (NCCL's return chain) see half as far, and a paste of two or
    # three lines is too short to tell a double spacing from blank lines of its own (5 of 604)
    (spaced, 0.01),
])
def test_the_shapes_of_a_paste_read_the_same(right_cases, tmp_path: Path,
                                             shape: Callable[[str], str], allowed: float) -> None:
    assert len(right_cases) >= 500
    changed = []
    path = tmp_path / "paste.txt"  # a neutral name: a case's name mentions its culprit, and a file's name is read
    for name, text, category in right_cases:
        path.write_bytes(shape(text).encode("utf-8"))
        got = _category(path)
        if got != category:
            changed.append(f"{name}: {category} -> {got}")
    assert len(changed) <= allowed * len(right_cases), changed


def test_a_wrap_width_needs_different_lines_that_go_on() -> None:
    lines = ["[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.14.3",
             "[rank2]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, remote process exited or there was a "
             "network error",
             "[rank3]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3. Original reason "
             "for failure was: NCCL error"]
    wrapped_log = "".join(line[i:i + 80] + "\n" for line in lines for i in range(0, len(line), 80)).encode()
    width = wrap_width(wrapped_log)
    assert width == 80
    joined = unwrap(wrapped_log, width).decode()
    assert joined.count("\n") == wrapped_log.decode().count("\n")  # the lines keep their numbers
    assert joined.splitlines()[:2] == [lines[0], FILLER]
    # the same longest line repeated, or followed by lines of their own, is no wrap
    repeated = b"[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: x\n" * 4
    assert wrap_width(repeated) == 0
    own = b"".join(b"node%d:1:2 [0] NCCL WARN Cuda failure 'invalid argument' on a long line of its own\n"
                   b"node%d:1:2 [0] NCCL INFO init.cc:1358 -> 1\n" % (n, n) for n in range(4))
    assert wrap_width(own) == 0


def _wrapped(lines: list[str], width: int) -> str:
    return "".join(line[i:i + width] + "\n" for line in lines for i in range(0, max(len(line), 1), width))


def test_two_wrapped_lines_are_enough_and_what_a_wrap_is_not() -> None:
    # a paste whose only long lines are two, each wrapped once: found, the wrap cutting a word at the turn
    lines = ["[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL("
             "SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
             "[rank0]: torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
             "address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"]
    pieces = _wrapped(lines, 100)
    assert "\nrk address" in pieces or "\nL(SeqNum" in pieces or len(pieces.splitlines()) == 4
    assert wrap_width(pieces.encode()) == 100
    assert unwrap(pieces.encode(), 100).decode().splitlines() == [lines[0], FILLER, lines[1], FILLER]
    # ... a traceback's frames of the longest length, the code below each indented: not a wrap
    frames = b"".join(b'  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run_%d.py", line 79, in main\n'
                      b"    return f(*args, **kwargs)\n" % n for n in range(4))
    assert wrap_width(frames) == 0
    # ... nor lines at that length each followed by a line of its own behind a log viewer's line number
    numbered = b"".join(b"[8074%d] [rank%d]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] [Rank %d] Watchdog caught x\n"
                        % (n, n, n) for n in range(4))
    assert wrap_width(numbered) == 0


def test_a_line_after_the_longest_that_opens_as_a_program_writes_is_no_wrapped_piece() -> None:
    # two lines of one length (ranks' lines of one template, the longest of a short paste) and then a line the wrap
    # detector did not know as a line of its own: joined to the one above, its error hidden there (a whole paste
    # silent: UCX's signal line). Each opening below is a program's, never the rest of a cut line.
    long_lines = ("c664db21f8dd:90422:94332 [6] NCCL INFO 24 coll channels, 32 p2p channels, 32 p2p channels per peer\n"
                  "c664db21f8dd:90420:94846 [5] NCCL INFO 24 coll channels, 32 p2p channels, 32 p2p channels per peer\n")
    for own in ("[c664db21f8dd:90420:0:95366] Caught signal 7 (Bus error: nonexistent physical address)",
                "ssh: Could not resolve hostname worker-1: Temporary failure in name resolution",
                "pdsh@node-0: node-1: ssh exited with exit code 255", "+ POD_NAME=worker-1", "```",
                "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:688",
                "frame #2: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7f in libtorch_cuda.so)",
                "terminate called after throwing an instance of 'c10::DistBackendError'",
                "kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c",
                "[  +0.000003] pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) error received",
                "[b21n16:03136] [ 2] /usr/lib64/libc.so.6(+0x4a9b0)[0x2000c7e0794c]", "[ERROR] ROCE(2040034): cqe error",
                "(raylet) [2025-12-07 09:57:19,206 E 393463 393463] (raylet) node_manager.cc:3069: 2 Workers killed",
                "May 09 00:31:28 [E container.cpp:248] Could not release Dataloader"):
        assert wrap_width((long_lines + own + "\n").encode()) == 0, own
    # the rest of a line that was cut there still is one
    assert wrap_width((long_lines + "ence of 8 ranks\n").encode()) == len(long_lines.split("\n")[0])


def test_a_traceback_goes_on_across_the_lines_a_joined_line_took_in(tmp_path: Path) -> None:
    lines = ["[rank3]: Traceback (most recent call last):",
             '[rank3]:   File "/workspace/train.py", line 88, in <module>',
             '[rank3]:   File "/opt/conda/lib/python3.10/site-packages/torch/distributed/c10d_logger.py", line 75, in '
             'wrapper',
             "[rank3]:     return func(*args, **kwargs)",
             '[rank3]:   File "/workspace/train.py", line 61, in main',
             "[rank3]:     dist.barrier()",
             "[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL"
             ".cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3"]
    path = tmp_path / "wrapped.txt"
    path.write_text(_wrapped(lines, 60))
    assert wrap_width(path.read_bytes()) == 60
    exceptions = [e for e in analyze_paths([str(path)]).timeline.events if e.kind.value == "exception"]
    assert exceptions and exceptions[0].origin.rank == 3 and "unhandled cuda error" in exceptions[0].data["message"]
    assert [str(f) for f in exceptions[0].data.get("frames") or ()][-1] == "train.py:61 in main", exceptions[0].data
    # real: a traceback whose frames are written without indentation (hiyouga/ChatGLM-Efficient-Tuning), its long
    # frame lines wrapped at 120 columns: the frames after a joined one are still the traceback's
    real = (REAL / "r8k-chatglm-et-tokenizer-barrier-store-get" / "log.txt").read_text()
    wrapped = tmp_path / "chatglm.txt"
    wrapped.write_text(_wrapped(real.splitlines(), 120))
    assert wrap_width(wrapped.read_bytes()) == 120
    top = analyze_paths([str(wrapped)]).diagnosis.hypotheses[0]
    assert top.code == "A001" and "main_process_first" in top.title, top.title


def test_the_margin_every_line_shares() -> None:
    assert paste_margin(b"   ```\n   line one\n     indented more\n\n   ```\n") == b"   "
    assert paste_margin(b"> quoted\n> > nested\n>\n") == b"> "
    assert paste_margin(b"line one\n    indented\n") == b""


def test_a_page_s_entities_are_the_characters_they_stand_for_once() -> None:
    assert unescaped(b"NCCL WARN Net : Connection closed by remote peer node-3&lt;56262&gt;\n") == (
        b"NCCL WARN Net : Connection closed by remote peer node-3<56262>\n")
    assert unescaped(b"&gt; RuntimeError: &quot;x&quot; isn&#39;t &#x27;y&#x27;\n") == b"> RuntimeError: \"x\" isn't 'y'\n"
    assert unescaped(b"a &amp;lt; b\n") == b"a &lt; b\n"  # the page showed ``&lt;``
    plain = b"srun --export=ALL,A=1&B=2 && echo &x; done\n"  # an ampersand of no entity stays as written
    assert unescaped(plain) is plain


def test_a_blank_line_after_every_line_is_a_filler_line() -> None:
    paste = b"```\nTraceback (most recent call last):\n\n  File \"a.py\", line 1\n\n" \
            b"RuntimeError: boom\n\n\n\nnext\n\nline\n\nend\n\n```\n"
    assert double_spaced(paste)
    lines = unspaced(paste).split(b"\n")
    assert len(lines) == len(paste.split(b"\n"))  # the paste's line numbers are kept
    assert lines[2] == FILLER.encode() and lines[4] == FILLER.encode()
    assert lines[7:9] == [b"", b""]  # the log's own blank line (two more in the paste) stays blank
    # a log as written, with a blank line here and there, or too short to tell, is not double spaced
    assert not double_spaced(b"a\nb\n\nc\nd\n\ne\nf\ng\n")
    assert not double_spaced(b"a\n\nb\n\nc\n\n")


def test_a_collector_s_json_records_are_read_as_the_lines_they_hold(tmp_path: Path) -> None:
    oom = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    docker = [json.dumps({"log": "step 1\n", "stream": "stdout"}), json.dumps({"log": oom + "\n", "stream": "stderr"}),
              json.dumps({"log": "\x1b[31mERROR\x1b[0m bye\n", "stream": "stderr"})]
    block = ("\n".join(docker) + "\n").encode()
    assert json_records(block)
    assert unjsoned(block).decode().splitlines() == ["step 1", oom, "\x1b[31mERROR\x1b[0m bye"]
    # a trainer's metric dicts are no records (no field holds a line), nor is a log with a JSON line or two
    assert not json_records(b'{"loss": 0.9, "epoch": 0.25}\n{"loss": 0.8, "epoch": 0.5}\n{"loss": 0.7}\n')
    assert not json_records(b"step 1\nstep 2\n" + docker[1].encode() + b"\nstep 3\nstep 4\n")
    # the host a record names, a level down (Kubernetes' metadata) or two (Cloud Logging's resource labels)
    gcp = {"textPayload": "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n"
                          "RuntimeError: CUDA error: an illegal memory access was encountered\n",
           "resource": {"labels": {"pod_name": "trainer-worker-2"}}}
    assert records_text([gcp]) == (b"trainer-worker-2: Traceback (most recent call last):\n"
                                   b'trainer-worker-2:   File "t.py", line 3, in <module>\n'
                                   b"trainer-worker-2: RuntimeError: CUDA error: an illegal memory access was "
                                   b"encountered\n")
    assert records_text({"loss": 0.9}) is None and records_text([gcp, {"loss": 1}]) is None
    for name, data in [("docker.log", block), ("gcp.json", json.dumps([gcp, {"textPayload": "step 2"}]).encode()),
                       ("one.json", json.dumps({"level": "error", "msg": oom}).encode()),
                       ("fluent.log", (json.dumps({"message": oom, "kubernetes": {"pod_name": "llama-worker-1"}})
                                       + "\n").encode())]:
        path = tmp_path / name
        path.write_bytes(data)
        top = analyze_paths([str(path)]).diagnosis.hypotheses[0]
        if name == "gcp.json":
            assert (top.code, top.culprit_hosts) == ("A021", ("trainer-worker-2",)), name
        else:
            assert (top.code, top.culprit_ranks) == ("A004", (3,)), name
        if name == "fluent.log":
            assert top.culprit_hosts == ("llama-worker-1",)


def test_a_json_document_of_no_known_kind_is_read_as_the_strings_it_holds(tmp_path: Path) -> None:
    # torchelastic's error file (TORCHELASTIC_ERROR_FILE, under its log dir's attempt_0/<local rank>/): the
    # message is an object, the traceback a string in it
    error = {"message": {"message": "RuntimeError: CUDA error: an illegal memory access was encountered",
                         "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", "
                                                       "line 88, in main\n    loss.backward()\nRuntimeError: CUDA "
                                                       "error: an illegal memory access was encountered\n",
                                       "timestamp": "1714557600"}}}
    assert strings_text(error).decode().splitlines()[:3] == [
        "RuntimeError: CUDA error: an illegal memory access was encountered", "Traceback (most recent call last):",
        '  File "train.py", line 88, in main']
    folder = tmp_path / "attempt_0" / "3"
    folder.mkdir(parents=True)
    (folder / "error.json").write_text(json.dumps(error))
    analysis = analyze_paths([str(folder / "error.json")])
    top = analysis.diagnosis.hypotheses[0]
    assert (top.code, top.culprit_local_ranks) == ("A021", (3,))
    assert any("its strings read as lines" in note for note in analysis.collected.notes)
    # one that holds no error: no hypothesis, and no traceback either
    (tmp_path / "config.json").write_text(json.dumps({"model": "llama", "lr": 3e-4, "tags": ["a", "b"]}))
    assert analyze_paths([str(tmp_path / "config.json")]).diagnosis.hypotheses == ()
    # nor one whose strings merely mention errors, without a field for a program's output (a run's notes, a config)
    notes = {"why": "rank 1's store wait timed out: RuntimeError: Socket Timeout", "category": "A001"}
    (tmp_path / "notes.json").write_text(json.dumps(notes))
    assert analyze_paths([str(tmp_path / "notes.json")]).diagnosis.hypotheses == ()


def test_a_terminals_redraws_before_an_error_on_the_same_line(tmp_path: Path) -> None:
    # a progress bar redrawn with carriage returns for an hour, then a rank's error written after its last redraw:
    # one line of 300 kB whose text the terminal showed last is the bar's last redraw and the error
    bar = "".join(f"Epoch 1: {i % 100:3d}%|#####     | {i}/5000 [00:{i % 60:02d}<00:10, 12.34it/s]\r" for i in range(5000))
    path = tmp_path / "train.log"
    path.write_text("start\n" + bar + "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    top = analyze_paths([str(path)]).diagnosis.hypotheses[0]
    assert (top.code, top.culprit_ranks) == ("A021", (1,))
    # a line that only ends in a carriage return keeps its words
    path.write_text("[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\r\n\r")
    assert analyze_paths([str(path)]).diagnosis.hypotheses[0].culprit_ranks == (2,)


@pytest.mark.parametrize(("after", "code", "named"), [
    # an exception's line without its traceback (a logger's, a worker's last words), behind its rank or not
    ("RuntimeError: Check failed: coordinator_ == nullptr: Can only initialize the XlaCoordinator once.", "A003",
     "RuntimeError"),
    ("[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
     "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5", "A021", "rank 0"),
    # a glog line of torchrun's agent (ms-swift#9788's paste: ``… 54.53s/it]W0722 21:16:14.716000 3681165 …``): its
    # pid is read from the line's start
    ("W0722 21:16:14.716000 3681165 torch/distributed/elastic/agent/server/api.py:739] Received 1 death signal, "
     "shutting down workers", "A025", "pid 3681165"),
])
def test_another_writers_line_glued_to_a_bars_last_redraw_is_read_as_its_own(
        tmp_path: Path, after: str, code: str, named: str) -> None:
    # the bar's redraws end in its postfix (``3.85it/s, loss=2.31]``) or its rate; the next writer's line follows
    # with no line end: its parser reads it at a line's start only (the exceptions were A028 there, the pid unread)
    path = tmp_path / "train.log"
    path.write_text(after + "\n")
    alone = analyze_paths([str(path)]).diagnosis.hypotheses[0]
    assert alone.code == code and named in alone.title
    for bar in ("Epoch 0:  39%|###9      | 390/1000 [01:41<02:38,  3.85it/s, loss=2.31]",
                "Train:  72%|#######1  | 482/672 [6:32:43<2:52:41, 54.53s/it]"):
        path.write_text("".join(f"\r{bar}" for _ in range(3)) + after + "\n")
        top = analyze_paths([str(path)]).diagnosis.hypotheses[0]
        assert top.code == code and named in top.title, (bar, top.title)


def test_a_list_items_mark_before_a_line_is_the_pastes(tmp_path: Path) -> None:
    # an issue's body listing the errors it saw as bullets: the exception's parser reads at the line's start
    path = tmp_path / "issue.md"
    for mark in ("- ", "* ", "+ "):
        path.write_text(f"{mark}[rank3]: RuntimeError: Split ranks should not have duplicates. Please provide a list of "
                        "unique ranks to split the group.\n")
        top = analyze_paths([str(path)]).diagnosis.hypotheses[0]
        assert (top.category, top.culprit_ranks) == (Category.RANK_CRASHED, (3,)), mark
    assert clean("- RuntimeError: boom") == "RuntimeError: boom"
    # an option's dashes, a rule of dashes, a mark before more space stay
    for kept in ("--nproc_per_node=8 --nnodes=2", "-  spaced", "- - -", "-1 is not a valid rank"):
        assert clean(kept) == kept


@pytest.mark.parametrize("before", [
    "x" * 5000,  # a run of output without a line break (a logger's repr of a tensor, a list of shard names)
    "step 12 " * 1200,
    "y" * 70_000,  # past one read's line length too
])
def test_an_error_after_a_long_run_of_output_on_its_line(tmp_path: Path, before: str) -> None:
    # the parsers see a line's first 4 kB: an error after them was silent; the head and the tail are read
    path = tmp_path / "train.log"
    path.write_text(before + " [rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    top = analyze_paths([str(path)]).diagnosis.hypotheses[0]
    assert top.code == "A021"
    # and the writer's prefix at the head of such a line still names the rank of an error at its tail
    path.write_text("[rank5]: " + before + " RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert analyze_paths([str(path)]).diagnosis.hypotheses[0].culprit_ranks == (5,)


def test_a_record_nested_past_the_parsers_depth_is_no_record(tmp_path: Path) -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    path = tmp_path / "docker.log"
    path.write_text('{"log": "step 1\\n"}\n' * 3 + deep + "\n" + json.dumps({"log": "[rank3]: torch.OutOfMemoryError: "
                                                                              "CUDA out of memory.\n"}) + "\n")
    top = analyze_paths([str(path)]).diagnosis.hypotheses[0]  # (a RecursionError had ended the run)
    assert (top.code, top.culprit_ranks) == ("A004", (3,))


def _tail_of(files: dict[str, str]) -> str:
    """What ``tail`` prints over several files: each one's name in a header, a blank line between them."""
    return "\n".join(f"==> {name} <==\n{text.rstrip(chr(10))}\n" for name, text in files.items())


_TIMEOUT = ("[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2041, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800542 milliseconds before timing out.")


def test_tail_over_several_files_names_each_files_lines_by_its_name(tmp_path: Path) -> None:
    files = {f"logs/rank{r}.log": _TIMEOUT.format(r=r) for r in (0, 1, 3)}
    files["logs/rank2.log"] = ("Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n"
                               "    loss = model(batch)\n\n"  # a blank line inside a file's lines: still its
                               "ValueError: Expected input batch_size (16) to match target batch_size (12).\n")
    path = tmp_path / "paste.txt"
    path.write_text(_tail_of(files))
    top = analyze_paths([str(path)]).diagnosis.hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (2,)
    # a host's file (``node-7/train.log``) names the host of its lines; a line before any header is the paste's
    path.write_text("RuntimeError: something before\n" + _tail_of({
        "node-7/train.log": "ValueError: Expected input batch_size (16) to match target batch_size (12).\n"}))
    events = analyze_paths([str(path)]).timeline.events
    assert {e.origin.host for e in events if "batch_size" in e.text} == {"node-7"}
    assert {e.origin.host for e in events if "before" in e.text} == {None}


def test_several_files_pasted_under_tails_headers_read_as_the_files_apart(tmp_path: Path) -> None:
    # every case of several files, pasted as ``tail`` prints them: the same top category and culprits as the files
    # read apart (4 of 157 differ: NCCL's COLL trace, read at a file's end; a culprit taken from a file's own pid)
    changed, cases = [], 0
    paste = tmp_path / "paste.txt"
    for folder in sorted(REAL.iterdir()):
        files = sorted(p for p in folder.iterdir() if p.name not in ("SOURCE.md", "expected.json"))
        if len(files) < 2:
            continue
        cases += 1
        apart = analyze_paths([str(p) for p in files]).diagnosis.hypotheses
        paste.write_text(_tail_of({p.name: p.read_text(encoding="utf-8", errors="replace") for p in files}))
        together = analyze_paths([str(paste)]).diagnosis.hypotheses
        if [(h.code, h.culprit_ranks, h.culprit_hosts) for h in apart[:1]] != [
                (h.code, h.culprit_ranks, h.culprit_hosts) for h in together[:1]]:
            changed.append(folder.name)
    assert cases >= 150 and len(changed) <= 0.03 * cases, changed


@pytest.mark.parametrize("logged", [
    "ERROR:__main__:",  # logging's BASIC_FORMAT
    "2024-05-01 12:00:00,123 - root - ERROR - ",  # the cookbook's format
    "2024-05-01 12:00:00,123 - ERROR - ",
    "[2024-05-01 12:00:00,123][__main__][ERROR] - ",  # Hydra's
    "2024-05-01 12:00:00 | ERROR | ",
    "[2024-05-01 12:00:00,123] [ERROR] [train.py:12:main] ",
])
def test_an_exception_a_logger_wrote_is_read_after_its_level(tmp_path: Path, logged: str) -> None:
    path = tmp_path / "paste.txt"
    path.write_text(f"{logged}ValueError: Expected input batch_size (16) to match target batch_size (12).\n")
    top = analyze_paths([str(path)]).diagnosis.hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "ValueError" in top.title
    assert split_prefix(f"{logged}ValueError: x").severity == "error"


def test_a_loggers_level_stays_where_a_format_of_its_own_is_read() -> None:
    # DeepSpeed's launcher and HCCL keep their level in the body, where their readings look for it; so does a message
    # that is no exception
    for line in ("[2023-05-29 10:11:41,381] [ERROR] [launch.py:324:sigkill_handler] ['/usr/bin/python3', '-u'] exits "
                 "with return code = -7", "[ERROR] HCCL(3743927,python):2023-11-08-14:43:37.912.345 [task_exception]",
                 "ERROR:root:something went wrong"):
        assert "ERROR" in split_prefix(line).body
    # an exception logged at INFO or WARNING was handled: the program went on
    for line in ("2024-05-01 12:00:00,123 - root - INFO - ValueError: bad sample, skipped",
                 "WARNING:__main__:KeyError: 'label' missing, using the default"):
        assert split_prefix(line).body.startswith(("INFO", "WARNING", "- root"))


def test_one_message_repeated_and_wrapped_is_found_by_its_fragments() -> None:
    # (real lines: NCCL's retries, each wrapped at 100 columns; the first pieces are one text)
    retries = [f"zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying "
               f"({n}/34) after sleep for {n}00 msec" for n in range(26, 30)]
    assert wrap_width(_wrapped(retries, 100).encode()) == 100
    refused = ["stdout: multi-gpu-ci-runner:18062:18089 [1] NCCL INFO Call to connect returned Connection refused, "
               "retrying"] * 4  # the same fragment each time: ``r|etrying``
    pieces = _wrapped(refused, 100)
    assert "\netrying\n" in pieces and wrap_width(pieces.encode()) == 100
    # ... but one message repeated, each followed by a line of its own (a sentence, the message again), is no wrap
    # (Ascend's hccl_test, bnxt_re's driver warning of two devices, a traceback's frame printed twice)
    err = "hccl interface return err ./common/src/hccl_test_common.cc:503, retcode: 11"
    assert wrap_width(f"{err}\n{err}\nThis is an error in init_hcclComm.\n".encode()) == 0
    abi = ("libibverbs: Warning: Driver bnxt_re does not support the kernel ABI of 6 (supports 1 to 1) for device "
           "/sys/class/infiniband/bnxt_re{}")
    verbs = f"{abi.format(2)}\n{abi.format(3)}\nNo IB devices found\n\n{abi.format(2)}\n{abi.format(3)}\n Did not detect devices\n"
    assert wrap_width(verbs.encode()) == 0
    frame = 'File "/home/job/anaconda2/lib/python2.7/site-packages/torch/nn/parallel/distributed.py", line 97, in __init__ '
    assert wrap_width(f"{frame}\n{frame}\ndist.broadcast(p, 0) \n".encode()) == 0


def test_a_table_of_one_width_is_no_wrap_and_a_padded_last_piece_is_one() -> None:
    table = ("NAME                               READY   STATUS             RESTARTS   AGE\n"
             "jp-nb1-0                           2/2     Running            0          18h\n"
             "pytorch-dist-mnist-gloo-master-0   2/2     Running            1          33m\n"
             "pytorch-dist-mnist-gloo-worker-0   1/2     CrashLoopBackOff   11         33m\n\n")
    assert wrap_width(table.encode()) == 0
    # a terminal's copy pads each screen line with spaces to its width: a line's last piece padded, the next line
    # starting below it (real: Ray's memory monitor, wrapped at 60 here)
    lines = ["(raylet) [2025-12-07 09:57:19,206 E 393463 393463] (raylet) node_manager.cc:3069: 2 Workers (tasks / "
             "actors) killed due to memory pressure (OOM)",
             "(raylet) Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/en/"
             "latest/ray-core/scheduling/ray-oom-prevention.html"]
    screen = "".join((line[i:i + 60]).ljust(60) + "\n" for line in lines for i in range(0, len(line), 60))
    assert wrap_width(screen.encode()) == 60
    joined = unwrap(screen.encode(), 60).decode().split("\n")
    assert joined[0].startswith("(raylet) [2025") and "memory pressure" in joined[0] and joined[1] == FILLER


def test_one_long_line_wrapped_where_it_cut_a_word() -> None:
    line = ("[rank0]: torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
            "address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use")
    paste = _wrapped(["Traceback (most recent call last):", line], 100)
    assert "\nork address" not in paste and wrap_width(paste.encode()) == 100  # (``netw|ork``: cut after 100)
    assert unwrap(paste.encode(), 100).decode().split("\n")[1] == line
    # what a line of its own below the longest looks like is no cut: a capital, a time, a logger's level, the code
    # below a traceback's frame, a line shorter than a terminal
    longest = "x" * 90 + " RuntimeError: gloo connectFullMesh failed: no error"
    for below in ("Retrying in 5 seconds", "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_helper.cpp:867",
                  "submitit ERROR (2025-03-14 16:42:10,554) - Submitted job triggered an exception",
                  "ncclSystemError: System call (e.g. socket, malloc) or external library call failed",
                  "ncclDevCommCreate failed", "node4:565139:565148 [0]", "pyxis: importing docker image ...",
                  "libibverbs: Warning: couldn't load driver 'libbnxt_re-rdmav34.so'", "warnings.warn(",
                  "root@f3b8:/workspace# "):
        assert wrap_width(f"{longest}\n{below}\n".encode()) == 0, below
    frame = '  File "/opt/conda/lib/python3.10/site-packages/transformers/training_args.py", line 1891, in main_process_first'
    assert wrap_width(f"{frame}\ntorch.distributed.barrier()\n".encode()) == 0
    assert wrap_width(b"RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled sys\ntem error\n") == 0
    # ... nor a line the paste holds twice (a message repeated below the longest line)
    assert wrap_width(f"{longest}\nibv_modify_qp failed\nibv_modify_qp failed\n".encode()) == 0


def test_one_long_line_wrapped_inside_a_bracket_it_opened() -> None:
    # real (its shape): NCCL's completion error cut inside ``<49189>`` at 100 columns, the rest opening by closing it
    line = ("kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.35.1<49189"
            "> with error 4, opcode 5327, len 5327, vendor err 81 (Send)")
    paste = line[:100] + "\n" + line[100:] + "\n"
    assert wrap_width(paste.encode()) == 100 and unwrap(paste.encode(), 100).decode().split("\n")[0] == line
    # a closer that closes nothing the line opened, and a quote's ``> `` under a line with no ``<``, are lines of
    # their own
    longest = "x" * 90 + " RuntimeError: gloo connectFullMesh failed"
    for below in ("> Retrying in 5 seconds", ") retrying", "] done"):
        assert wrap_width(f"{longest}\n{below}\n".encode()) == 0, below


@pytest.mark.parametrize(("line", "at"), [
    # real shapes (rewrapped corpus lines): the cut at the space between two words, either side of it
    ("RuntimeError: The input size is not aligned with the quantized weight shape. This can be caused by too "
     "large tensor parallel size.", 100),
    ("torch.distributed.DistNetworkError: The server socket has failed to listen: address already in use, a port "
     "in use", 100),
    # inside a number in brackets the line opened (``<38847>``)
    ("node1:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 172.17.0.2<38847> failed : Software "
     "caused connection abort", 94),
    # inside a number, before a key's colon, inside a name with a dot, after a colon at a word's end
    ("[rank1]:[E ProcessGroupNCCL.cpp:1182] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, ran for "
     "600659 milliseconds before timing out.", 119),
    ("E0101 00:00:00.000000 140 torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: -7) local_rank"
     ": 1 (pid: 84) of binary: /usr/bin/python", 112),
    ("terminate called after throwing an instance of 'gloo::EnforceNotMet' what(): [enforce fail at pair.cc:490] op"
     ".preamble.length <= op.nbytes. 881392472 vs 881392460", 108),
    ("node1:1:2 [0] NCCL WARN Net : peer 192.168.161.30<59210> message truncated : receiving 1048576 bytes instead of "
     "65536", 89),
])
def test_one_long_line_wrapped_between_words_or_inside_a_number(line: str, at: int) -> None:
    paste = line[:at] + "\n" + line[at:] + "\n"
    width = max(len(part) for part in paste.split("\n"))
    assert wrap_width(paste.encode()) == width and unwrap(paste.encode(), width).decode().split("\n")[0] == line
    # two spaces, a capital after the space, or a bracket opened first: lines of their own
    longest = "x" * 90 + " RuntimeError: gloo connectFullMesh failed"
    for below in ("  large tensor", " Large tensor", "(0x7309dc3bb338) done", "42 done"):
        assert wrap_width(f"{longest}\n{below}\n".encode()) == 0, below
    # a number's line below one that ends in a number: a progress bar, a date, a time, HIP's ``:1:file`` are lines
    # of their own
    numbered = "x" * 90 + " --num_processes 8 --sr 44100"
    for below in ("100%|##########| 10/10", "02-02 08:45:00 |SUCCESS | train.py:122", "19:15:34  NVRM: Xid 31",
                  ":1:hip_memory.cpp:3354: IPC memory creation failed"):
        assert wrap_width(f"{numbered}\n{below}\n".encode()) == 0, below


@pytest.mark.parametrize(("line", "at"), [
    # the cut split a word an error names before its colon, or fell at the space before it
    ("[1762876381.123] [node1:1234:0] ib_iface.c:1012 UCX ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory",
     85),  # (``fai|led: Cannot``)
    ("ImportError: /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclMemFree",
     92),  # (``undefined s|ymbol: ncclMemFree``)
    ("ImportError: /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclMemFree",
     91),  # (``undefined |symbol: ncclMemFree``)
])
def test_one_long_line_wrapped_inside_a_word_before_its_colon(line: str, at: int) -> None:
    paste = line[:at] + "\n" + line[at:] + "\n"
    width = max(len(part) for part in paste.split("\n"))
    assert wrap_width(paste.encode()) == width and unwrap(paste.encode(), width).decode().split("\n")[0] == line
    # a program's or a logger's name and its colon below such a line is a line of its own
    longest = "x" * 90 + " RuntimeError: gloo connectFullMesh fai"
    for below in ("pyxis: importing docker image", "libibverbs: Warning: couldn't load driver", "led to nothing"):
        assert (wrap_width(f"{longest}\n{below}\n".encode()) == 0) == below.startswith(("pyxis", "libibverbs")), below


def test_one_long_line_wrapped_inside_a_files_name_it_ends_with() -> None:
    # real: philschmid/deep-learning-pytorch-huggingface#55 (r137e), wrapped at 100 columns by pasted_forms.py: the
    # cut split the library's name (``x86_|64-linux-gnu.so: undefined symbol``), its rest opening as a name and a colon
    line = ("ImportError: /opt/conda/envs/pytorch/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-"
            "gnu.so: undefined symbol: _ZN3c104cuda14ExchangeDeviceEa")
    paste = line[:100] + "\n" + line[100:] + "\n"
    assert wrap_width(paste.encode()) == 100 and unwrap(paste.encode(), 100).decode().split("\n")[0] == line
    # a line that ends with a path, then a program's or a logger's line, or a rule of dashes, is no cut
    longest = "x" * 60 + " of binary: /opt/conda/envs/llama/bin/python"
    for below in ("stderr: Traceback (most recent call last):", "wandb: View project at: https://wandb.ai/x",
                  "--------------------------------------------------", "[ 10330 ] world_size = 2, rank = 1"):
        assert wrap_width(f"{longest}\n{below}\n".encode()) == 0, below


_TIMEOUTS = "".join(
    f"[rank{r}]:[E1001 16:06:04.53{r}356909 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation "
    f"timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=128, NumelOut=128, Timeout(ms)=600000) ran for 600012 "
    f"milliseconds before timing out.\n" for r in (2, 0, 1))
_INITS = "".join(f"cuda0003:29496{r}:29496{r} [{r}] NCCL INFO comm 0x55 rank {r} nranks 4 cudaDev {r} busId {r}1000 "
                 f"commId 0x79 - Init START\n" for r in range(4))


@pytest.mark.parametrize("tail,cut", [
    (b"[rank2]:[E1001 16:06:04 ProcessGroupNCCL.cpp:607] x\n[ra\n", b"[ra"),  # real: vllm#8978's paste
    (b"H100-5:68738:69060 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB\nH100-5:68738:6\n\n\n", b"H100-5:68738:6"),
    (b"  File \"/opt/conda/lib/python3.10/site-packages/torch/run.py\", line 8\n  File \"/opt/co\n", b'  File "/opt/co'),
])
def test_a_last_line_cut_inside_a_word_is_found(tail: bytes, cut: bytes) -> None:
    found = cut_last_line(tail)
    assert found is not None and found[1] == cut
    assert found[0] == tail.count(b"\n") - tail.rstrip(b"\n").count(b"\n") - 1  # the blank lines after it


@pytest.mark.parametrize("tail", [
    b"Out of memory: Killed process 12 (python)\nKilled\n",  # a word's end: ``Killed`` is whole
    b"frame #0: c10::Error::Error\nframe\n",  # (the next byte above is a space)
    b"[rank2]: x\n[rank2]: x\n",  # the same line again is no shorter start of one
    b"[ra\n",  # nothing above to compare with
    b"[rank2]:[E1001 x\n[rank2]:\n",  # ends in punctuation: nothing says it was cut
])
def test_a_whole_last_line_is_not_taken_for_cut(tail: bytes) -> None:
    assert cut_last_line(tail) is None


def test_a_quiet_rank_is_not_blamed_where_the_paste_was_cut_right_after_the_timeouts(tmp_path: Path) -> None:
    # real (its shape): vllm#8978, four ranks' init lines, three ranks' timeouts, and ``[ra``: the paste stops in
    # the middle of the next line, which may well be rank 3's own timeout
    cut = tmp_path / "cut.log"
    cut.write_text(_INITS + _TIMEOUTS + "[ra\n")
    result = analyze_paths([str(cut)])
    assert any(e.kind.value == "paste_cut" for e in result.timeline.events)
    top = result.diagnosis.hypotheses[0]
    assert top.category is Category.UNEXPLAINED_TIMEOUT and not top.culprit_ranks
    lagging = next(h for h in result.diagnosis.hypotheses if h.category is Category.LAGGING_RANK)
    assert lagging.confidence < top.confidence and "cut" in lagging.what
    assert any(e.ref.line == 8 and e.text == "[ra" and "stops inside" in e.note for e in lagging.evidence)
    # the same lines whole, or going on with a line of a rank that did not wait: rank 3 stayed quiet
    for ending in ("", _INITS.splitlines()[3].replace("START", "COMPLETE") + "\n[ra\n"):
        whole = tmp_path / "whole.log"
        whole.write_text(_INITS + _TIMEOUTS + ending)
        top = analyze_paths([str(whole)]).diagnosis.hypotheses[0]
        assert top.category is Category.LAGGING_RANK and list(top.culprit_ranks) == [3], ending
