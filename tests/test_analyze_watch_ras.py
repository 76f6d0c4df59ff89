"""syncdoctor watch event files (written by syncdoctor.watch.events.Event.to_json) and NCCL RAS reports
(text as in the NCCL troubleshooting docs, and JSON) as analyze inputs."""

from __future__ import annotations

import json

import pytest

from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind, Ref
from syncdoctor.analyze.parsers import ras, watch_events
from syncdoctor.watch.events import Event as WatchEvent
from syncdoctor.watch.records import Signature


def _jsonl(tmp_path, events) -> str:
    path = tmp_path / "watch-events.jsonl"
    path.write_text("\n".join(json.dumps(e.to_json()) for e in events) + "\n")
    return str(path)


def test_watch_late_rank(tmp_path) -> None:
    event = WatchEvent("W101", "confirmed", "rank 3 has not reached all_reduce #57 of group 0 for 31.0 s",
                       ranks=(3,), hosts=("node1",), pids=(4242,), group="0", seq=57, waiting_ranks=(0, 1, 2),
                       waited_s=31.0, at=1_800_000_000.0)
    root = analyze_paths([_jsonl(tmp_path, [event])]).diagnosis.root_cause
    assert root is not None and root.category is Category.LAGGING_RANK
    assert root.culprit_ranks == (3,) and root.affected_ranks == (0, 1, 2)


def test_watch_mismatch_and_unreachable_host(tmp_path) -> None:
    events = [
        WatchEvent("W102", "confirmed", "rank 1 called broadcast where the others called all_reduce (#5)",
                   ranks=(1,), seq=5, signature=Signature("all_reduce", ((4,),), ("float32",)),
                   other_signature=Signature("broadcast", ((4,),), ("float32",)), waiting_ranks=(0, 2, 3)),
        WatchEvent("W106", "confirmed", "host node2 unreachable", ranks=(4, 5), hosts=("node2",)),
    ]
    diagnosis = analyze_paths([_jsonl(tmp_path, events)]).diagnosis
    found = {h.category: h for h in diagnosis.hypotheses}
    assert found[Category.COLLECTIVE_DESYNC].culprit_ranks == (1,)
    assert found[Category.NETWORK_PARTITION].culprit_hosts == ("node2",)


def test_resolved_watch_event_is_not_a_cause(tmp_path) -> None:
    event = WatchEvent("W101", "resolved", "rank 3 arrived after 4.0 s", ranks=(3,))
    assert analyze_paths([_jsonl(tmp_path, [event])]).diagnosis.root_cause is None


@pytest.mark.parametrize("line", ["", "not json", "[1, 2]", '{"no": "kind"}', '{"kind": {"x": 1}}', "{" * 5000])
def test_watch_parser_tolerates_junk(line) -> None:
    assert watch_events.parse_line(line, Ref("w", 1)) is None


def test_watch_parser_reads_other_shapes() -> None:
    event = watch_events.parse_line('{"type": "straggler", "rank": "7", "host": "n7", "sequence": 9, '
                                    '"collective": "ALLREDUCE", "timestamp": "2024-05-01T12:00:00Z"}', Ref("w", 1))
    assert event is not None and event.kind is Kind.WATCH
    assert (event.origin.rank, event.origin.host, event.seq, event.op) == (7, "n7", 9, "allreduce")
    assert event.time is not None


RAS_TEXT = """Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      4          8            1         32       32

Communicators... (2.05s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4       7-8        32        32   RUNNING  INCOMPLETE

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 21

Warnings
========

TIMEOUT
  Encountered 2 communication timeouts while gathering communicator data
"""


def test_ras_text_report(tmp_path) -> None:
    events = ras.parse_text(RAS_TEXT, "ras.txt")
    issues = [(e.data["issue"], e.origin.rank, e.origin.host) for e in events]
    assert ("INCOMPLETE", None, "172.16.64.213") in issues
    assert ("INCOMPLETE", 21, None) in issues and ("TIMEOUT", None, None) in issues
    (tmp_path / "ras.txt").write_text(RAS_TEXT)
    root = analyze_paths([str(tmp_path / "ras.txt")]).diagnosis.root_cause
    assert root is not None and root.category is Category.LAGGING_RANK and 21 in root.culprit_ranks


def test_ras_dead_and_monitor_lines() -> None:
    text = ("Errors\n======\n\nDEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
            "  Process 3487984 on node 172.16.64.213 managing GPU 5\n\n#0-0 (1bdb83b038775869) INCOMPLETE\n"
            "  Missing communicator data from 1 rank\n  Rank 7 -- GPU 3 managed by process 3748990 on node node1\n")
    events = ras.parse_text(text, "r")
    assert [(e.data["issue"], e.origin.rank, e.origin.host) for e in events] == [
        ("DEAD", None, "172.16.64.213"), ("INCOMPLETE", 7, None)]
    monitor = ras.parse_text("[2025-01-01 10:00:00] PEER_DEAD: Process 11 on node 10.0.0.3 managing GPU 2\n", "m")
    assert monitor[0].data["issue"] == "DEAD" and monitor[0].origin.pid == 11


def test_ras_json(tmp_path) -> None:
    doc = {"nccl_version": "2.28.7", "communicators": [{"hash": "cf26", "size": 3, "ranks": [
        {"rank": 0, "host": "n0", "pid": 1, "status": {"init_state": 0}, "collective_counts": {"AllReduce": 100}},
        {"rank": 1, "host": "n0", "pid": 2, "status": {"init_state": 0}, "collective_counts": {"AllReduce": 100}},
        {"rank": 2, "host": "n1", "pid": 3, "status": {"init_state": 0, "async_error": 3},
         "collective_counts": {"AllReduce": 97}}]}],
        "missing_ranks": [{"rank": 5, "host": "n2", "pid": 9, "status": {"unresponsive": True, "considered_dead": True}}],
        "ras": {"collection_time_sec": 2.0, "timeouts_count": 1}}
    events = ras.parse_json(doc, "ras.json")
    issues = sorted((e.data["issue"], tuple(e.data["ranks"])) for e in events)
    assert issues == [("DEAD", (5,)), ("ERROR", (2,)), ("MISMATCH", (2,))]
    (tmp_path / "ras.json").write_text(json.dumps(doc))
    root = analyze_paths([str(tmp_path / "ras.json")]).diagnosis.root_cause
    assert root is not None and root.culprit_ranks == (5,)


def test_ras_detection() -> None:
    assert ras.looks_like_ras_text(RAS_TEXT) and not ras.looks_like_ras_text("Errors everywhere\n")
    assert ras.looks_like_ras_json({"communicators": []}) and not ras.looks_like_ras_json({"entries": []})
