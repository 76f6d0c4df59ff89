"""Inputs: files, directories, globs, stdin, gzip; bounded blocks; the scanner's two backends; line numbers
across block boundaries; junk and truncated files."""

from __future__ import annotations

import codecs
import gzip
import io
import platform
import random
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncdoctor.analyze import analyze_paths, inputs
from syncdoctor.analyze.collect import dedup_events
from syncdoctor.analyze.inputs import Source, expand, iter_blocks, open_source, sniff
from syncdoctor.analyze.model import Kind, Origin
from syncdoctor.analyze.scan import _WINDOW, ANCHORS, Scanner, hyperscan_available, libc_memmem_available
from syncdoctor.analyze.textlog import read_text
from syncdoctor.errors import UsageError

GLOO_LINE = ("[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
             "5000ms for recv operation to complete\n")


def test_expand_files_dirs_globs_and_stdin(tmp_path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "rank1.log").write_text("x\n")
    (tmp_path / "a" / "b" / "rank0.log").write_text("x\n")
    (tmp_path / "top.log").write_text("x\n")
    names = [s.name for s in expand([str(tmp_path / "a"), str(tmp_path / "*.log"), str(tmp_path / "top.log"), "-"])]
    assert names == [str(tmp_path / "a" / "rank1.log"), str(tmp_path / "a" / "b" / "rank0.log"),
                     str(tmp_path / "top.log"), "<stdin>"]
    assert [s.name for s in expand([str(tmp_path / "**" / "rank*.log")])] == [
        str(tmp_path / "a" / "b" / "rank0.log"), str(tmp_path / "a" / "rank1.log")]


@pytest.mark.parametrize("path", ["/no/such/file.log", "/no/such/*.log"])
def test_expand_reports_missing_inputs(path) -> None:
    with pytest.raises(UsageError):
        expand([path])


def test_gzip_is_recognised_by_content_not_name(tmp_path) -> None:
    (tmp_path / "rank1.log").write_bytes(gzip.compress(GLOO_LINE.encode()))
    (tmp_path / "rank2.gz").write_text(GLOO_LINE.replace("[rank1]", "[rank2]"))
    analysis = analyze_paths([str(tmp_path)])
    ranks = sorted(e.origin.rank for e in analysis.collected.events if e.kind is Kind.GLOO_TIMEOUT)
    assert ranks == [1, 2]


def test_stdin_plain_and_gzip() -> None:
    for data in (GLOO_LINE.encode(), gzip.compress(GLOO_LINE.encode())):
        analysis = analyze_paths(["-"], stdin=io.BytesIO(data))
        assert [e.origin.rank for e in analysis.collected.events if e.kind is Kind.GLOO_TIMEOUT] == [1]
        assert analysis.collected.sources == ["<stdin>"]


def test_truncated_gzip_keeps_what_was_read(tmp_path) -> None:
    data = gzip.compress((GLOO_LINE * 2000).encode())
    (tmp_path / "cut.log.gz").write_bytes(data[: len(data) // 2])
    analysis = analyze_paths([str(tmp_path)])
    assert analysis.collected.events and any("read stopped early" in n for n in analysis.collected.notes)


@pytest.mark.parametrize(("head", "kind"), [
    (b"\x80\x02}q\x00", "pickle"), (b'{"entries": []}', "json"), (b'  {"a": 1}\n{"b": 2}\n', "jsonl"),
    (b'[{"code": "W101"}]', "json"), (b"hello\n", "text"), (b"", "text"), (b"\x80\x99junk", "text"),
])
def test_sniff(head, kind) -> None:
    assert sniff(head) == kind


def _blocks(data: bytes, block: int, max_line: int) -> list[bytes]:
    return list(iter_blocks(io.BytesIO(data), block_size=block, max_line=max_line))


@pytest.mark.parametrize("block", [1, 3, 7, 64, 4096])
def test_blocks_end_at_newlines_and_keep_every_line(block) -> None:
    data = b"".join(f"line {i} {'x' * (i % 13)}\n".encode() for i in range(200)) + b"last without newline"
    blocks = _blocks(data, block, 1000)
    assert all(b.endswith(b"\n") for b in blocks)
    assert b"".join(blocks) == data + b"\n"


@pytest.mark.parametrize("block", [2, 5, 4096])
def test_a_last_line_without_newline_ends_the_block_before_it(block) -> None:
    """A paste saved without a final newline is as many blocks as with one: its unended last line joins the block
    before it (a small paste is one block, read again as a whole by collect's last look)."""
    for data in (b"first line\nsecond", b"one\ntwo\nthree\n> ", b"x" * 9 + b"\n" + b"y" * 9):
        blocks = _blocks(data, block, 1000)
        assert all(b.endswith(b"\n") for b in blocks) and b"".join(blocks) == data + b"\n"
        last_line = data.rsplit(b"\n", 1)[1]
        assert blocks[-1].endswith(b"\n" + last_line + b"\n"), blocks  # not a block of its own
    assert _blocks(b"first line\nsecond", 4096, 1000) == [b"first line\nsecond\n"]


def test_long_lines_are_cut_and_skipped() -> None:
    data = b"short\n" + b"y" * 10_000 + b"\nafter\n" + b"z" * 5000
    joined = b"".join(_blocks(data, 512, 100))
    assert joined == b"short\n" + b"y" * 100 + b"\nafter\n" + b"z" * 100 + b"\n"
    assert joined.count(b"\n") == data.count(b"\n") + 1  # line numbers stay right


def test_line_numbers_across_block_boundaries() -> None:
    rng = random.Random(7)
    lines = []
    for i in range(3000):
        lines.append(GLOO_LINE.replace("[rank1]", f"[rank{i % 8}]").rstrip("\n") if rng.random() < 0.05
                     else f"noise {i} " + "n" * rng.randrange(0, 120))
    data = ("\n".join(lines) + "\n").encode()
    expected = [number for number, line in enumerate(lines, start=1) if "Timed out" in line]
    for block in (97, 1024, 1 << 20):
        events = []
        stats = read_text(iter_blocks(io.BytesIO(data), block_size=block), "f", Origin(), events, Scanner())
        assert [e.ref.line for e in events if e.kind is Kind.GLOO_TIMEOUT] == expected
        assert stats.lines == len(lines)


def test_followers_continue_across_blocks() -> None:
    text = "\n".join(["[rank2]: Traceback (most recent call last):"] + [f'[rank2]:   File "f.py", line {i}, in g'
                                                                      for i in range(40)] + ["[rank2]: ValueError: x"])
    events = []
    read_text(iter_blocks(io.BytesIO(text.encode()), block_size=50), "f", Origin(), events, Scanner())
    # (the follower's reading and the exception line's own are one event once merged, as collect merges them)
    with_frames = [e for e in dedup_events(events) if e.kind is Kind.EXCEPTION and e.data.get("frames")]
    assert len(with_frames) == 1 and with_frames[0].data["where"] == "f.py:39 in g"


def test_binary_junk_and_invalid_utf8(tmp_path) -> None:
    rng = random.Random(3)
    junk = bytes(rng.randrange(256) for _ in range(200_000))
    (tmp_path / "rank4.log").write_bytes(junk + b"\n\xff\xfe" + GLOO_LINE.encode().replace(b"[rank1]: ", b"") + junk)
    analysis = analyze_paths([str(tmp_path)])
    assert [e.origin.rank for e in analysis.collected.events if e.kind is Kind.GLOO_TIMEOUT] == [4]


def _available_backends() -> list[str]:
    return ["python"] + (["libc"] if libc_memmem_available() else []) + (["hyperscan"] if hyperscan_available() else [])


def _lines_with_anchor(block: bytes, anchors: tuple[bytes, ...]) -> list[int]:
    """The definition, line by line: a line (with its newline) that contains an anchor."""
    starts, start = [], 0
    while start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end == -1 else end + 1
        if any(anchor in block[start:end] for anchor in anchors):
            starts.append(start)
        start = end
    return starts


def test_hyperscan_is_the_default_backend() -> None:
    """hyperscan is a dependency wherever it has wheels (pyproject's marker): there its absence is a broken
    install; elsewhere the scanner uses memmem."""
    if platform.machine() in ("x86_64", "AMD64", "aarch64", "arm64") and sys.version_info < (3, 16):
        assert hyperscan_available()
        assert Scanner().backend == "hyperscan"
    else:
        assert Scanner().backend in ("hyperscan", "libc")


_PIECES = [b"plain text ", b"\n", b"\r\n", b"NCCL INFO Channel 00 ", b" -> 1\n", b" -> ", b"rro", b"RRO", *ANCHORS]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=60), st.booleans())
def test_scanner_backends_agree_with_the_definition(pieces: list[bytes], newline: bool) -> None:
    block = b"".join(pieces) + (b"\n" if newline else b"")
    expected = _lines_with_anchor(block, ANCHORS)
    for backend in _available_backends():
        assert Scanner(backend=backend).line_starts(block) == expected, backend


def test_scanner_backends_agree_on_large_blocks() -> None:
    rng = random.Random(11)
    for size in (0, 10, 1000, 200_000, 3 * _WINDOW):
        block = b"".join(rng.choice(_PIECES) for _ in range(size // 8)) + b"\n"
        expected = _lines_with_anchor(block, ANCHORS)
        for backend in _available_backends():
            assert Scanner(backend=backend).line_starts(block) == expected, (backend, size)
    few = (b"Traceback", b"imeout")
    block = b"x Traceback y imeout\nimeout\nnone\n"
    for backend in _available_backends():
        assert Scanner(few, backend=backend).line_starts(block) == [0, 21], backend


def test_scanner_falls_back_when_hyperscan_fails_on_a_block() -> None:
    class Failing(Scanner):
        def _scan_hyperscan(self, block: bytes) -> list[int]:
            raise RuntimeError("hyperscan.error: out of memory")

    scanner = Failing()
    assert scanner.backend == "hyperscan"
    assert scanner.line_starts(b"ok\nRuntimeError: boom\n") == [3]


def test_scanner_finds_anchors_across_window_edges() -> None:
    for backend in _available_backends():
        scanner = Scanner(backend=backend)
        for offset in range(_WINDOW - 12, _WINDOW + 4):
            block = b"a" * offset + b"Traceback\n" + b"b" * 100 + b"\n"
            assert scanner.line_starts(block) == [0], (backend, offset)


def test_scanner_rejects_bad_configuration() -> None:
    with pytest.raises(ValueError):
        Scanner(anchors=())
    with pytest.raises(ValueError):
        Scanner(backend="gpu")


def test_open_source_errors_become_notes(tmp_path) -> None:
    source = Source("gone.log", tmp_path / "gone.log")
    from syncdoctor.errors import InputError

    with pytest.raises(InputError), open_source(source):
        pass


# keywords whose lines a parser reads only with another anchor on them: NCCL INFO's readings all need
# "Using" (Bootstrap : Using …, NET/IB : Using …) or an error return " -> 2"; nccl-tests' device table has
# " Pid "; anchoring the bare words would send every channel and ring line of an NCCL INFO log to the parsers; THC's
# check always carries its ``error=N`` ("rror")
_READ_WITH_ANOTHER_ANCHOR = {"Bootstrap", "NET/IB", "NET/Socket", "Using network", " -> ", "Rank ", "THCudaCheck FAIL"}


def test_every_parser_keyword_holds_an_anchor() -> None:
    """A line the scanner skips is never parsed: a parser keyword without an anchor in it is a format that
    reads in a test (whose example line happens to say RuntimeError) and not in the field (the same line after
    ``what():``)."""
    from syncdoctor.analyze.parsers import LINE_PARSERS

    missing = [(parser.__name__, keyword) for parser in LINE_PARSERS for keyword in parser.KEYWORDS
               if keyword not in _READ_WITH_ANOTHER_ANCHOR and not any(a.decode() in keyword for a in ANCHORS)]
    assert not missing
    assert len(set(ANCHORS)) == len(ANCHORS)


def test_the_documented_number_of_anchors_is_the_scanners() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "analyze.md").read_text()
    stated = [int(n) for n in re.findall(r"containing one of (\d+) anchors", text)]
    assert stated == [len(ANCHORS)]


@pytest.mark.parametrize("line", [
    "terminate called after throwing an instance of 'gloo::EnforceNotMet'",
    "  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= "
    "op.nbytes. 1046204 vs 1040256",
    "FATAL: the job could not start",
    "worker 3 got SIGKILL",
    "Process 12 exited with exit code 1",
    "srun: Job step aborted",
    "python: fatal: cannot map the file",
    "Aborted (core dumped)",
])
def test_lines_the_fallback_calls_errors_are_scanned(line: str) -> None:
    """Every line the generic fallback would call an error reaches it: never silent because of the scanner."""
    from syncdoctor.analyze.model import Ref
    from syncdoctor.analyze.textlog import make_line, parse_line

    assert parse_line(make_line(line, Ref("f", 1), Origin()))
    for backend in _available_backends():
        assert Scanner(backend=backend).line_starts(line.encode() + b"\n") == [0], backend


def _bundle(tmp_path: Path) -> dict[str, bytes]:
    return {"job/node1/rank3.log": b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
            "job/node2/rank0.log.gz": gzip.compress(b"step 1\nstep 2\n"),
            "job/README": b"nothing\n"}


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "zip"])
def test_an_archive_s_files_are_inputs_of_their_own(tmp_path: Path, kind: str) -> None:
    files = _bundle(tmp_path)
    path = tmp_path / f"logs.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:  # deflated: no text shows
            for name, data in files.items():
                archive.writestr(name, data)
    else:
        with tarfile.open(path, "w:gz" if kind == "tar.gz" else "w") as archive:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    analysis = analyze_paths([str(path)])
    assert list(analysis.collected.sources) == [f"{path}!{name}" for name in files]
    top = analysis.diagnosis.hypotheses[0]
    assert (top.code, top.culprit_ranks, top.culprit_hosts) == ("A004", (3,), ("node1",))
    assert analysis.collected.lines_read == 4  # the gzip'd member decompressed
    assert top.evidence[0].ref.source == f"{path}!job/node1/rank3.log"


def test_a_corrupt_or_bounded_archive_keeps_what_was_read(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "logs.tar"
    with tarfile.open(path, "w") as archive:
        for name, data in _bundle(tmp_path).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    data = path.read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(data[:1024 + 512 + 10])  # the first member whole, the second's data cut
    analysis = analyze_paths([str(cut)])
    assert analysis.diagnosis.hypotheses[0].code == "A004"
    assert any("read stopped early" in note for note in analysis.collected.notes)
    monkeypatch.setattr(inputs, "MAX_MEMBER_BYTES", 10)  # a member that expands past the bound is cut there
    collected = analyze_paths([str(path)]).collected
    # the first file's cut line, the gzip'd one's ten bytes no stream (a note), the third file whole
    assert collected.lines_read == 2
    assert [note.split(":")[0].rpartition("!")[2] for note in collected.notes] == ["job/node2/rank0.log.gz"]
    zipped = tmp_path / "bad.zip"
    zipped.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    analysis = analyze_paths([str(zipped)])
    assert analysis.diagnosis.hypotheses == () and any("zip" in note for note in analysis.collected.notes)


@pytest.mark.parametrize(("name", "encode"), [
    ("utf16le.log", lambda t: codecs.BOM_UTF16_LE + t.encode("utf-16-le")),  # PowerShell's `>` and Out-File
    ("utf16be.log", lambda t: codecs.BOM_UTF16_BE + t.encode("utf-16-be")),
    ("bom.log", lambda t: codecs.BOM_UTF8 + t.encode()),  # Notepad's UTF-8: the mark before the first prefix
    ("utf16.log.gz", lambda t: gzip.compress(codecs.BOM_UTF16_LE + t.encode("utf-16-le"))),
    ("utf16le-nomark.log", lambda t: t.encode("utf-16-le")),  # a tool's export (.NET's writer) without the mark
    ("utf16be-nomark.log", lambda t: t.encode("utf-16-be")),
])
def test_a_log_in_utf16_or_with_a_byte_order_mark_is_read(tmp_path: Path, name: str, encode) -> None:
    text = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\r\n"
            "[rank0]: café ✓ step 10\r\n" * 2000)  # past one read of the decoder, a character split across reads
    path = tmp_path / name
    path.write_bytes(encode(text))
    analysis = analyze_paths([str(path)])
    top = analysis.diagnosis.hypotheses[0]
    assert (top.code, top.culprit_ranks) == ("A004", (3,))
    assert analysis.collected.lines_read == 4000


def test_utf16_without_a_mark_is_told_from_other_bytes() -> None:
    from syncdoctor.analyze.inputs import _utf16_without_mark
    text = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. café ✓\n" * 10
    assert _utf16_without_mark(text.encode("utf-16-le")) == "utf-16-le"
    assert _utf16_without_mark(text.encode("utf-16-be")) == "utf-16-be"
    for other in (text.encode(), b"\0" * 512, b"node1/rank3.log" + b"\0" * 497, bytes(range(256)) * 2,
                  "x\n".encode("utf-16-le")):  # UTF-8, zeros, a tar header, binary, too short to tell
        assert _utf16_without_mark(other) is None


def test_a_utf16_stream_decodes_what_it_is_given_in_pieces() -> None:
    data = codecs.BOM_UTF16_LE + "é✓ line\n".encode("utf-16-le") * 10_000
    with open_source(Source("-"), stdin=io.BytesIO(data)) as stream:
        assert stream.read() == "é✓ line\n".encode() * 10_000


def test_a_zip_whose_directory_names_a_version_zipfile_does_not_know_is_a_note(tmp_path: Path) -> None:
    path = tmp_path / "logs.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("node1/rank3.log", "[rank3]: torch.OutOfMemoryError: CUDA out of memory.\n")
    data = bytearray(path.read_bytes())
    central = data.index(b"PK\x01\x02")
    data[central + 6:central + 8] = (110).to_bytes(2, "little")  # "version needed to extract": 11.0
    path.write_bytes(bytes(data))
    analysis = analyze_paths([str(path)])  # zipfile raises NotImplementedError here: a note, not a traceback
    assert analysis.diagnosis.hypotheses == ()
    assert any("not a readable zip archive" in note for note in analysis.collected.notes), analysis.collected.notes
