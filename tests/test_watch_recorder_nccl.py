"""The watcher's reading of NCCL groups, on Flight Recorder output captured on a GPU (pure: no torch).

tests/fixtures/watch/*_torch2.11_full.json are the full JSON dumps of a one-rank job on an H200 (torch
2.11.0+cu130, NCCL 2.28.9, scripts/gpu-check.sh): groups "0" (default, nccl) and "1" (nccl), then "2"
(gloo). There, ``_dump_fr_trace_json`` holds only the gloo group, under id 0, and NCCL's groups are in
``_dump_nccl_trace_json``: each recorder counts its own ids. status_*_torch2.11.raw are the status reads
(the bytes torch returned) of a second run that also had group "3" created as ``cpu:gloo,cuda:nccl``.
"""

from __future__ import annotations

import json
from pathlib import Path

from syncdoctor.watch.recorder import (
    NCCL,
    OTHER,
    FlightRecorderSource,
    GroupDirectory,
    backend_kinds,
    parse_status,
)

HERE = Path(__file__).parent / "fixtures" / "watch"
NCCL_FULL = (HERE / "nccl_torch2.11_full.json").read_bytes()
GLOO_FULL = (HERE / "gloo_beside_nccl_torch2.11_full.json").read_bytes()


def status_of(full: bytes, **changes: tuple[int, int]) -> bytes:
    """The status read (no entries) in torch's layout (sorted keys, compact), counts changed per backend id."""
    doc = json.loads(full)
    doc.pop("entries")
    for uid, (entered, completed) in changes.items():
        doc["pg_status"][uid.lstrip("_")].update(
            last_enqueued_collective=str(entered), last_completed_collective=str(completed)
        )
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def gpu_job_directory() -> GroupDirectory:
    directory = GroupDirectory()
    directory.add("0", (0,), backend_kinds("cuda:nccl"))
    directory.add("1", (0,), backend_kinds("cuda:nccl"))
    directory.add("2", (0,), backend_kinds("cpu:gloo,cuda:gloo"))
    return directory


def fake_dump(full: bytes):
    """Like ``_dump_*_trace_json``: the full dump, or the status with ``includeCollectives`` false."""

    def dump(*args: bool, **kwargs: bool) -> bytes:
        include = args[0] if args else kwargs.get("includeCollectives", True)
        return full if include else status_of(full)

    return dump


def source_for(directory: GroupDirectory) -> FlightRecorderSource:
    return FlightRecorderSource(directory, dumps={OTHER: fake_dump(GLOO_FULL), NCCL: fake_dump(NCCL_FULL)})


def test_backend_kinds_from_torch_configs() -> None:
    assert backend_kinds("cpu:gloo,cuda:gloo") == ("gloo",)
    assert backend_kinds("cuda:nccl") == ("nccl",)
    assert backend_kinds("cpu:gloo,cuda:nccl") == ("gloo", "nccl")
    assert backend_kinds("nccl") == ("nccl",)
    assert backend_kinds("") == ()


def test_each_recorder_counts_its_own_ids() -> None:
    directory = gpu_job_directory()
    assert directory.recorders == {NCCL, OTHER} and not directory.mixed
    source = source_for(directory)
    readings = source.readings()
    # the real counts: 64 collectives on the default group (DDP), 3 on "1", 2 on the gloo group "2"
    assert readings == {"0": (64, 64), "1": (3, 3), "2": (2, 2)}


def test_real_status_reads_with_a_group_on_both_recorders() -> None:
    # groups 0, 1 nccl; 2 gloo; 3 cpu:gloo,cuda:nccl with 2 CPU all_reduces and 1 CUDA all_reduce.
    # NCCL's pg_config is keyed by group name ("3"), its pg_status by id ("2"): only creation order maps ids.
    directory = gpu_job_directory()
    directory.add("3", (0,), backend_kinds("cpu:gloo,cuda:nccl"))
    assert directory.names == ["0", "1", "2", "3", "3/gloo"] and directory.mixed
    gloo = (HERE / "status_gloo_beside_nccl_torch2.11.raw").read_bytes()
    nccl = (HERE / "status_nccl_torch2.11.raw").read_bytes()
    held = (HERE / "status_nccl_held_torch2.11.raw").read_bytes()
    assert parse_status(nccl) == {0: (64, 64), 1: (3, 3), 2: (1, 1)}  # the scan reads torch's own bytes
    source = FlightRecorderSource(directory, dumps={})
    assert source.parse(((OTHER, gloo), (NCCL, nccl))) == {
        "0": (64, 64), "1": (3, 3), "2": (2, 2), "3": (1, 1), "3/gloo": (2, 2)}
    # while a spin kernel held the stream ahead of all_reduce #65 of the default group
    assert source.parse(((OTHER, gloo), (NCCL, held)))["0"] == (65, 64)


def test_a_held_nccl_collective_shows_entered_but_not_completed() -> None:
    # what the GPU job read while a spin kernel held the stream ahead of all_reduce #65 of the default group
    directory = gpu_job_directory()
    source = source_for(directory)
    held = ((OTHER, status_of(GLOO_FULL)), (NCCL, status_of(NCCL_FULL, _0=(65, 64))))
    assert parse_status(held[1][1]) == {0: (65, 64), 1: (3, 3)}  # the scan's fast path
    assert source.parse(held) == {"0": (65, 64), "1": (3, 3), "2": (2, 2)}


def test_full_dump_entries_correct_the_creation_order() -> None:
    # the NCCL groups registered in another order than their ids: a full dump's entries say which is which
    directory = GroupDirectory()
    directory.add("1", (0,), ("nccl",))
    directory.add("0", (0,), ("nccl",))
    source = FlightRecorderSource(directory, dumps={NCCL: fake_dump(NCCL_FULL)})
    assert source.readings() == {"1": (64, 64), "0": (3, 3)}  # creation order alone: wrong way round
    assert source.signature("1", 3) is not None  # reads the entries: pg_id 1 is group "1"
    assert source.readings() == {"0": (64, 64), "1": (3, 3)}


def test_nccl_ids_follow_creation_order_of_nccl_groups() -> None:
    doc = json.loads(status_of(NCCL_FULL))
    doc["pg_config"] = {}
    raw = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    directory = GroupDirectory()
    directory.add("g", (0, 1), ("gloo",))  # a gloo group in between does not count on NCCL's side
    directory.add("a", (0, 1), ("nccl",))
    directory.add("b", (0, 1), ("nccl",))
    source = FlightRecorderSource(directory, dumps={NCCL: lambda *a, **k: raw})
    assert source.readings() == {"a": (64, 64), "b": (3, 3)}


def test_a_group_on_both_recorders_is_two_groups() -> None:
    # init_process_group() without a backend on a GPU host: cpu:gloo,cuda:nccl
    directory = GroupDirectory()
    directory.add("0", (0, 1, 2, 3), backend_kinds("cpu:gloo,cuda:nccl"))
    directory.add("1", (0, 1), backend_kinds("cpu:gloo,cuda:gloo"))
    assert directory.mixed and directory.names == ["0", "0/gloo", "1"]
    assert directory.members["0/gloo"] == (0, 1, 2, 3)
    gloo = json.loads(status_of(GLOO_FULL))
    gloo["pg_status"] = {
        "0": {
            "last_completed_collective": "5",
            "last_enqueued_collective": "6",
            "last_started_collective": "-1",
        },
        "1": {
            "last_completed_collective": "1",
            "last_enqueued_collective": "1",
            "last_started_collective": "-1",
        },
    }
    raw_gloo = json.dumps(gloo, separators=(",", ":"), sort_keys=True).encode()
    doc = json.loads(status_of(NCCL_FULL))
    del doc["pg_status"]["1"], doc["pg_config"]["1"]
    raw_nccl = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    source = FlightRecorderSource(
        directory, dumps={OTHER: lambda *a, **k: raw_gloo, NCCL: lambda *a, **k: raw_nccl}
    )
    assert source.readings() == {"0": (64, 64), "0/gloo": (6, 5), "1": (1, 1)}


def test_only_the_recorders_holding_our_groups_are_read() -> None:
    calls: list[str] = []

    def dump(name: str):
        def read(*args: object, **kwargs: object) -> bytes:
            calls.append(name)
            return status_of(NCCL_FULL)

        return read

    directory = GroupDirectory()
    directory.add("0", (0,), ("nccl",))
    FlightRecorderSource(directory, dumps={OTHER: dump("fr"), NCCL: dump("nccl")}).status()
    assert calls == ["nccl"]


def test_signatures_come_from_the_recorder_of_the_group() -> None:
    directory = gpu_job_directory()
    source = source_for(directory)
    nccl_sig = source.signature("1", 3)
    assert nccl_sig is not None and nccl_sig.op == "all_reduce" and nccl_sig.input_sizes == ((1000,),)
    ddp = source.signature("0", 64)
    assert ddp is not None and ddp.op == "all_reduce" and ddp.input_sizes == ((262656,),)
    gloo_sig = source.signature("2", 2)
    assert gloo_sig is not None and gloo_sig.op == "all_reduce" and gloo_sig.dtypes == ("Float",)
    assert source.signature("1", 99) is None
