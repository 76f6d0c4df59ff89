"""Fuzzing: the parsers, the reader, the dump loader and the whole analysis never raise on junk."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from syncdoctor.analyze import analyze_paths, to_document
from syncdoctor.analyze.collect import collect
from syncdoctor.analyze.inputs import Source
from syncdoctor.analyze.model import Origin, Ref
from syncdoctor.analyze.parsers import make_line, parse_line, ras, start_followers, watch_events
from syncdoctor.analyze.parsers.flight_recorder import parse_dump
from syncdoctor.analyze.parsers.prefixes import origin_from_path
from syncdoctor.analyze.rules import diagnose
from syncdoctor.analyze.scan import ANCHORS
from syncdoctor.analyze.timeline import build_timeline
from syncdoctor.errors import InputError

FRAGMENTS = [
    "[rank3]:", "[default1]:", "0: ", "[1,2]<stdout>:", "[E1129 12:59:46.2 ProcessGroupNCCL.cpp:607] ", "node1:12:34 [0] ",
    "NCCL INFO ", "NCCL WARN ", "misc/socket.cc:1 ", "(fn) ", "Watchdog caught collective operation timeout: ",
    "WorkNCCL(SeqNum=", "OpType=ALLREDUCE, ", "NumelIn=", "Timeout(ms)=", ")", "(", "[Rank 2] ", "[PG ID 0 PG GUID ",
    "detected by watchdog at work: ", "last enqueued NCCL work: ", "last completed NCCL work: ", "Timed out waiting ",
    "ms for recv operation", "Connection closed by peer [", "]:", "127.0.0.1", "10.0.0.", "connectFullMesh failed with ",
    "failed to connect, willRetry=1, retry=1, retryLimit=3, rank=", ", size=", ", local=[", ", remote=[",
    "Got completion from peer ", " with status=", " opcode=", " vendor err ", "hca ", "Bootstrap : Using ",
    "NET/IB : Using [0]mlx5_0:1/IB ; OOB ", "NET/Socket : Using [0]", "Using network ", "comm 0x1 rank ",
    " nranks ", " cudaDev 0 busId 1 - Init COMPLETE", "Traceback (most recent call last):", '  File "x", line 3, in f',
    "RuntimeError: ", "Exception: ", "ChildFailedError:", "Root Cause (first observed failure):", "[0]:",
    "  rank      : ", "  exitcode  : -9 (pid: 1)", "failed (exitcode: ", ") local_rank: ", " (pid: ",
    "Sending process 1 closing signal SIGTERM", "Timeout at collective: ALLREDUCE, #", "ranks [1, 2] are the lagging",
    "Detected mismatch between collectives on ranks. Rank 0 is running collective: CollectiveFingerPrint(",
    "monitoredBarrier", "wait timeout after 1ms, keys: /a/", "Unable to find address for: ", "CUDA out of memory",
    "Duplicate GPU detected : rank 1 and rank ", "Cuda failure 217 'peer", "failed to extend /dev/shm/x to ",
    "NCCL version 2.19.3+cuda12.3", "\t", " ", "\x00", "\u00e9", "\ufffd", "-", "#", "9", "99999999999999999999",
]
text_lines = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=16).map("".join)


@settings(max_examples=300, deadline=None)
@given(text_lines)
@example("wait timeout after 1ms, keys: /a/\u00b2")  # a superscript two is a digit to str.isdigit, not to int()
def test_line_parsers_never_raise(line) -> None:
    parsed = make_line(line, Ref("f", 1), Origin())
    parse_line(parsed)
    for follower in start_followers(parsed):
        follower.feed(parsed)
        follower.finish()


def _blob(parts: list[object]) -> bytes:
    out = bytearray()
    for part in parts:
        out += part if isinstance(part, bytes) else str(part).encode("utf-8", "surrogatepass")
    return bytes(out)


blobs = st.lists(st.one_of(st.binary(max_size=64), st.sampled_from(ANCHORS), st.sampled_from([b"\n", b"\r\n"]),
                           st.sampled_from([f.encode() for f in FRAGMENTS])), max_size=60).map(_blob)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(blobs, min_size=1, max_size=4), st.sampled_from(["plain", "gzip", "json", "pickle", "jsonl"]))
def test_whole_analysis_never_raises(contents, wrap) -> None:
    with tempfile.TemporaryDirectory() as directory:
        paths = []
        for index, content in enumerate(contents):
            if wrap == "gzip":
                content = gzip.compress(content)[: max(10, len(content))]  # sometimes truncated
            elif wrap == "json":
                content = b'{"entries": [' + content + b"]"
            elif wrap == "pickle":
                content = b"\x80\x04" + content
            elif wrap == "jsonl":
                content = b'{"kind": "late-rank", "ranks": [1]}\n{' + content
            path = Path(directory) / f"host{index % 2}" / f"rank{index}.log"
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(content)
            paths.append(str(path))
        analysis = analyze_paths([directory])
        json.dumps(to_document(analysis), default=str)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_dump_loader_only_raises_input_error(data) -> None:
    for fmt in ("json", "pickle"):
        try:
            parse_dump(data, fmt, Ref("d"), 0)
        except InputError:
            pass


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["kind", "code", "ranks", "rank", "hosts", "host", "seq", "op", "at", "time", "status",
                         "communicators", "missing_ranks", "status", "collective_counts", "waiting_ranks", "x"]),
        children, max_size=6),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
@example({"kind": False, "ranks": "0\x1f"})  # str.strip takes \x1f, int() does not
@example({"kind": False, "ranks": "--3"})
def test_structured_parsers_never_raise(value) -> None:
    if isinstance(value, dict):
        watch_events.parse_record(value, Ref("w", 1))
        ras.parse_json(value, "r")
    watch_events.parse_line(json.dumps(value), Ref("w", 1))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_ras_text_and_paths_never_raise(text) -> None:
    ras.parse_text(text, "r")
    origin_from_path(text.replace("\x00", ""))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(text_lines, max_size=40))
def test_rules_never_raise_on_parsed_junk(lines) -> None:
    events = []
    for number, line in enumerate(lines, start=1):
        events += parse_line(make_line(line, Ref(f"host{number % 3}/rank{number % 5}.log", number),
                                       origin_from_path(f"host{number % 3}/rank{number % 5}.log")))
    timeline = build_timeline(events)
    diagnose(timeline)


def test_collect_of_a_directory_that_vanished(tmp_path) -> None:
    result = collect([Source("gone", tmp_path / "gone")])
    assert result.notes and not result.events
