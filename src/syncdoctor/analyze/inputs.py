"""The inputs of ``syncdoctor analyze``: which files, how to open them, what they are, and their bytes in
bounded blocks. Does I/O (reads files and stdin), nothing else.

* :func:`expand` turns the command line's paths into :class:`Source` records: files, directories
  (recursively, sorted), globs (``logs/**/*.log``) and ``-`` for stdin.
* :func:`open_source` opens one, transparently decompressing gzip (recognised by its magic bytes, not by
  the name), and :func:`sniff` tells a Flight Recorder pickle, a JSON document, JSON lines and text apart.
* :func:`archive_members` reads a tar (plain, gzip'd) or zip archive's files one after the other as inputs of
  their own (``logs.tar.gz!node1/rank3.log``), without writing anything to disk; bounded in members and in the
  bytes each one gives (an archive is untrusted input: a zip bomb stops at the bound).
* :func:`iter_blocks` reads a stream once in blocks that end at a line boundary; a line longer than
  ``max_line`` bytes is cut there and the rest of it skipped, so memory stays bounded whatever the input
  (a 10 GB log, a file without newlines, binary junk).
"""

from __future__ import annotations

import codecs
import contextlib
import glob
import gzip
import io
import os
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from syncdoctor.errors import InputError, UsageError

__all__ = [
    "BLOCK_SIZE",
    "MAX_LINE",
    "Source",
    "archive_members",
    "chunks_stream",
    "expand",
    "iter_blocks",
    "open_source",
    "sniff",
]

BLOCK_SIZE = 1 << 20
MAX_LINE = 64 * 1024
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules"}


@dataclass(frozen=True, slots=True)
class Source:
    """One input: a file (``path``) or standard input (``path`` None). ``name`` is what evidence shows."""

    name: str
    path: Path | None = None

    @property
    def is_stdin(self) -> bool:
        return self.path is None


def expand(paths: Sequence[str]) -> list[Source]:
    """Files, directories (recursive), globs and ``-`` as sources, in order, without duplicates.

    Raises UsageError for a path that does not exist or a glob that matches nothing.
    """
    sources: list[Source] = []
    seen: set[str] = set()

    def add(source: Source) -> None:
        key = "-" if source.path is None else str(source.path.resolve())
        if key not in seen:
            seen.add(key)
            sources.append(source)

    for raw in paths:
        if raw == "-":
            add(Source("<stdin>"))
            continue
        path = Path(raw)
        if path.is_dir():
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
                for name in sorted(names):
                    found = Path(root) / name
                    if found.is_file():
                        add(Source(str(found), found))
            continue
        if path.is_file():
            add(Source(raw, path))
            continue
        if any(ch in raw for ch in "*?["):
            matches = sorted(glob.glob(raw, recursive=True))
            files = [Path(m) for m in matches if Path(m).is_file()]
            if not files:
                raise UsageError(f"no file matches {raw!r}")
            for file in files:
                add(Source(str(file), file))
            continue
        if path.exists():
            raise UsageError(f"{raw} is not a regular file or directory")
        raise UsageError(f"no such file or directory: {raw}")
    return sources


@contextlib.contextmanager
def open_source(source: Source, stdin: BinaryIO | None = None) -> Iterator[io.BufferedReader]:
    """Open ``source`` for binary reading, decompressing gzip. Raises InputError when it cannot be read."""
    try:
        raw: BinaryIO
        if source.path is None:
            raw = stdin if stdin is not None else sys.stdin.buffer
            buffered: io.BufferedReader = (
                raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
            )
        else:
            buffered = open(source.path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read {source.name}: {exc.strerror or exc}") from exc
    try:
        head = buffered.peek(2)[:2]
        # (buffered again when gzip'd: what it holds is looked at before it is read, a tar archive's header)
        stream: io.BufferedReader = (
            io.BufferedReader(gzip.GzipFile(fileobj=buffered, mode="rb"), 1 << 16)
            if head == b"\x1f\x8b" else buffered
        )
        yield as_utf8(stream)
    finally:
        if source.path is not None:
            buffered.close()


class _Chunks(io.RawIOBase):
    """Bytes made piece by piece (a decoder's, a transform's of each block) read as a stream."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = chunk
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def chunks_stream(chunks: Iterator[bytes]) -> io.BufferedReader[Any]:
    """A buffered stream over ``chunks``, read as they come (bounded: one chunk held at a time)."""
    return io.BufferedReader(_Chunks(chunks), 1 << 16)


def _utf16_as_utf8(stream: BinaryIO, codec: str = "utf-16") -> Iterator[bytes]:
    """A UTF-16 stream (PowerShell's ``>`` and ``Out-File`` write logs so) as UTF-8, decoded as it is read."""
    decoder = codecs.getincrementaldecoder(codec)("replace")  # ("utf-16": the BOM says which byte order)
    while chunk := stream.read(1 << 16):
        yield decoder.decode(chunk).encode("utf-8")
    yield decoder.decode(b"", final=True).encode("utf-8")


_UTF16_HEAD = 512  # bytes of a stream looked at for its encoding


def _utf16_without_mark(head: bytes) -> str | None:
    """The byte order of UTF-16 text that has no byte-order mark (a tool's export, .NET's writer without one): the
    high byte of nearly every character of a log's ASCII is zero, the low one hardly ever. None for anything else."""
    size = len(head) // 2 * 2
    if size < 32:
        return None
    even, odd = head[0:size:2], head[1:size:2]
    half = size // 2
    if odd.count(0) >= 0.9 * half and even.count(0) <= 0.1 * half:
        return "utf-16-le"
    if even.count(0) >= 0.9 * half and odd.count(0) <= 0.1 * half:
        return "utf-16-be"
    return None


def as_utf8(stream: io.BufferedReader[Any]) -> io.BufferedReader[Any]:
    """``stream`` as UTF-8 bytes: a UTF-16 log (its byte-order mark first, or none) decoded, UTF-8's own mark skipped (it would
    stand before the first line's prefix). Anything else as it is."""
    try:
        head = stream.peek(_UTF16_HEAD)[:_UTF16_HEAD]
    except (OSError, EOFError, zlib.error):  # a cut or corrupt gzip: its reader says so where it is read
        return stream
    mark = head[:3]
    if mark[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return chunks_stream(_utf16_as_utf8(stream))
    order = _utf16_without_mark(head)
    if order is not None:
        return chunks_stream(_utf16_as_utf8(stream, order))
    if mark == codecs.BOM_UTF8:
        stream.read(3)
    return stream


MAX_MEMBERS = 100_000  # files read from one archive
MAX_MEMBER_BYTES = 16 << 30  # bytes read from one file of an archive (what a bomb expands to is cut there)


class _Capped(io.RawIOBase):
    """At most ``limit`` bytes of ``stream``: a member of an untrusted archive cannot expand without end."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self._stream = stream
        self._left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._left <= 0:
            return 0
        try:
            data = self._stream.read(min(len(buffer), self._left))
        except (tarfile.TarError, zipfile.BadZipFile) as exc:  # cut or corrupt: an input that stopped early
            raise OSError(str(exc)) from exc
        buffer[:len(data)] = data
        self._left -= len(data)
        return len(data)


def _member(stream: BinaryIO) -> BinaryIO:
    """A member's bytes, capped, gzip'd members (``rank3.log.gz``) decompressed."""
    buffered = io.BufferedReader(_Capped(stream, MAX_MEMBER_BYTES))
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        return as_utf8(io.BufferedReader(_Capped(gzip.GzipFile(fileobj=buffered, mode="rb"), MAX_MEMBER_BYTES)))  # type: ignore[arg-type]
    return as_utf8(buffered)


def archive_members(source: Source, stream: io.BufferedReader) -> Iterator[tuple[Source, BinaryIO]] | None:
    """The regular files of a tar or zip archive ``stream`` (recognised by content, not by name), each with a
    :class:`Source` named ``archive!member``, in the archive's order; None when ``stream`` is no archive. Reading
    stops at :data:`MAX_MEMBERS`. A corrupt archive raises OSError or EOFError (``tarfile.ReadError``,
    ``zipfile.BadZipFile`` as OSError) once the members before it are read."""
    head = stream.peek(512)[:512]
    if head[:4] == b"PK\x03\x04" and source.path is not None:
        return _zip_members(source)
    if len(head) >= 262 and head[257:262] == b"ustar":
        return _tar_members(source, stream)
    return None


def _zip_members(source: Source) -> Iterator[tuple[Source, BinaryIO]]:
    try:
        archive = zipfile.ZipFile(source.path)  # type: ignore[arg-type]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, EOFError) as exc:
        # (a corrupt directory can also read as a version or a method zipfile does not know)
        raise OSError(f"not a readable zip archive: {exc}") from exc
    with archive:
        for info in [i for i in archive.infolist() if not i.is_dir()][:MAX_MEMBERS]:
            try:
                with archive.open(info) as member:
                    yield Source(f"{source.name}!{info.filename}", source.path), _member(member)  # type: ignore[arg-type]
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, ValueError) as exc:  # encrypted, unknown method
                raise OSError(f"{info.filename}: {exc}") from exc


def _tar_members(source: Source, stream: BinaryIO) -> Iterator[tuple[Source, BinaryIO]]:
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:  # a stream: each member read once, in order
            for count, info in enumerate(archive):
                if count >= MAX_MEMBERS:
                    break
                member = archive.extractfile(info) if info.isfile() else None
                if member is not None:
                    yield Source(f"{source.name}!{info.name}", source.path), _member(member)  # type: ignore[arg-type]
    except tarfile.TarError as exc:
        raise OSError(f"not a readable tar archive: {exc}") from exc


def sniff(head: bytes) -> str:
    """What the first bytes of an input look like: ``pickle``, ``json`` (one document, possibly on one line),
    ``jsonl`` (several objects, one per line) or ``text``."""
    if head[:1] == b"\x80" and len(head) > 1 and head[1] in range(2, 6):
        return "pickle"
    stripped = head.lstrip()
    if stripped[:1] == b"[" and stripped[1:].lstrip()[:1] not in (b"{", b"]"):
        return "text"  # "[rank3]: ..." and other bracketed prefixes
    if stripped[:1] in (b"{", b"["):
        first, _, rest = stripped.partition(b"\n")
        if stripped[:1] == b"{" and first.rstrip().endswith(b"}") and rest.lstrip()[:1] == b"{":
            return "jsonl"
        return "json"
    return "text"


def iter_blocks(
    stream: BinaryIO, block_size: int = BLOCK_SIZE, max_line: int = MAX_LINE, prefix: bytes = b""
) -> Iterator[bytes]:
    """Yield the stream's bytes in blocks that each end with ``b"\\n"``.

    A line still open after ``max_line`` bytes at the end of a read is cut there (plus a newline) and the rest
    of it dropped, so a block is at most ``block_size + 2 * max_line`` bytes and memory stays bounded whatever
    the input. A last line without a newline gets one, and ends the block before it (a block is held until the
    next read says whether the stream goes on), so that a paste without a final newline is one block, read as a
    whole as a small input is (collect's last look).
    ``prefix`` holds bytes already read from the stream (to sniff it). Reads may raise OSError, EOFError
    or zlib.error (a truncated or corrupt gzip): the caller decides how to report it.
    """
    carry = b""
    skipping = False
    pending = prefix
    held = b""  # the last block made, yielded once the next one is made (or with the stream's unended last line)
    while True:
        if pending:
            chunk, pending = pending, b""
        else:
            try:
                chunk = stream.read(block_size)
            except Exception:  # a corrupt or cut stream: what was read comes first, then the error
                if held:
                    yield held
                raise
        if not chunk:
            break
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            chunk = chunk[newline + 1:]
            skipping = False
        last = chunk.rfind(b"\n")
        if last < 0:  # no line ends in this chunk
            data = carry + chunk
            if len(data) > max_line:
                if held:
                    yield held
                held = data[:max_line] + b"\n"
                carry = b""
                skipping = True
            else:
                carry = data
            continue
        if held:
            yield held
        # one copy: the carried start of a line, then the chunk up to its last newline
        held = b"".join((carry, memoryview(chunk)[: last + 1])) if carry else chunk[: last + 1]
        carry = chunk[last + 1:]
        if len(carry) > max_line:
            yield held
            held = carry[:max_line] + b"\n"
            carry = b""
            skipping = True
    if carry and not skipping:
        held += carry + b"\n"
    if held:
        yield held
