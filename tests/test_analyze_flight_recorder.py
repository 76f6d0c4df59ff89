"""Flight Recorder dumps from real gloo runs here (tests/fixtures/analyze/fr, made by generate.py there):
JSON and pickle read alike, pickles read without running code, dumps of all ranks compared."""

from __future__ import annotations

import os
import pickle

import pytest

from analyze_helpers import FIXTURES
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.fr_compare import compare_mismatches, compare_progress
from syncdoctor.analyze.model import Category, Ref
from syncdoctor.analyze.parsers import flight_recorder
from syncdoctor.analyze.parsers.flight_recorder import SafeUnpickler, parse_dump, rank_from_name
from syncdoctor.errors import InputError

FR = FIXTURES / "fr"
SCENARIOS = ("late", "desync", "size", "ok")


def load(scenario: str, fmt: str) -> list:
    dumps = []
    for rank in range(4):
        path = FR / scenario / f"rank{rank}.{'json' if fmt == 'json' else 'pkl'}"
        dumps.append(parse_dump(path.read_bytes(), fmt, Ref(str(path)), rank))
    return dumps


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_json_and_pickle_agree(scenario) -> None:
    for from_json, from_pickle in zip(load(scenario, "json"), load(scenario, "pickle"), strict=True):
        assert from_json.version == from_pickle.version == "2.10"
        assert [(e.seq, e.op, e.input_sizes, e.retired, e.state) for e in from_json.entries] == \
            [(e.seq, e.op, e.input_sizes, e.retired, e.state) for e in from_pickle.entries]
        assert [(g.pg_id, g.ranks, g.last_enqueued) for g in from_json.groups] == \
            [(g.pg_id, g.ranks, g.last_enqueued) for g in from_pickle.groups]


def test_gloo_dump_fields() -> None:
    dump = load("ok", "pickle")[0]
    assert [g.ranks for g in dump.groups] == [(0, 1, 2, 3)]
    assert dump.groups[0].last_enqueued == 9 and dump.groups[0].last_started is None
    entry = dump.entries[-1]
    assert (entry.backend, entry.op, entry.seq) == ("gloo", "barrier", 9)
    first = dump.entries[0]
    assert first.op == "allreduce" and first.input_sizes == ((4,),) and first.dtypes == ("Float",)
    assert first.state == "scheduled" and first.retired  # gloo: completion shows as retired, never "completed"
    assert any("generate.py" in frame for frame in first.frames)  # the pickle of the main thread carries stacks


def test_progress_finds_the_late_rank() -> None:
    (progress,) = compare_progress(load("late", "json"))
    assert progress.enqueued == {0: 6, 1: 6, 2: 5, 3: 6}
    assert progress.behind == (2,) and progress.missing_dumps == ()


def test_progress_notes_missing_dumps() -> None:
    (progress,) = compare_progress(load("late", "json")[:3])
    assert progress.missing_dumps == (3,)


@pytest.mark.parametrize(("scenario", "culprit", "odd"), [("desync", 1, "broadcast"), ("size", 3, "in=[8]")])
def test_mismatch_finds_the_odd_rank(scenario, culprit, odd) -> None:
    (mismatch,) = compare_mismatches(load(scenario, "pickle"))
    assert mismatch.seq == 6 and mismatch.culprits == (culprit,)
    assert odd in mismatch.signatures[culprit] and "allreduce in=[4]" in mismatch.majority


def test_no_mismatch_in_a_clean_run() -> None:
    assert compare_mismatches(load("ok", "json")) == []
    assert compare_progress(load("ok", "json"))[0].behind == ()


@pytest.mark.parametrize(("scenario", "category", "culprit"), [
    ("late", Category.LAGGING_RANK, (2,)),
    ("desync", Category.COLLECTIVE_DESYNC, (1,)),
    ("size", Category.COLLECTIVE_DESYNC, (3,)),
])
def test_diagnosis_from_dumps_alone(scenario, category, culprit) -> None:
    root = analyze_paths([str(FR / scenario)]).diagnosis.root_cause
    assert root is not None and root.category is category and root.culprit_ranks == culprit


def test_clean_dumps_have_no_root_cause() -> None:
    assert analyze_paths([str(FR / "ok")]).diagnosis.root_cause is None


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_pickle_with_code_is_refused(tmp_path) -> None:
    payload = pickle.dumps({"entries": [_Evil()], "pg_status": {}, "version": "2.10"})
    with pytest.raises(InputError, match=r"refusing to load global"):
        parse_dump(payload, "pickle", Ref("evil.pkl"), 0)
    with pytest.raises(pickle.UnpicklingError):
        SafeUnpickler(__import__("io").BytesIO(pickle.dumps(_Evil()))).load()
    (tmp_path / "rank0.pkl").write_bytes(payload)
    analysis = analyze_paths([str(tmp_path)])
    assert analysis.collected.dumps == [] and any("refusing" in note for note in analysis.collected.notes)


def test_plain_pickled_containers_are_fine() -> None:
    data = {"version": "2.4", "pg_status": {"0": {"last_enqueued_collective": 3}},
            "entries": [{"profiling_name": "nccl:all_reduce", "collective_seq_id": 3, "pg_id": 0,
                         "process_group": ("0", "default_pg"), "input_sizes": [[2, 2]], "state": "completed"}],
            "extra": {1, 2}, "blob": b"\x00\x01", "t": (1.5, None, True)}
    dump = parse_dump(pickle.dumps(data, protocol=4), "pickle", Ref("x"), 1)
    assert dump.entries[0].op == "allreduce" and dump.entries[0].backend == "nccl"
    assert dump.groups[0].last_enqueued == 3


@pytest.mark.parametrize("blob", [b"", b"\x80\x04", b"\x80\x02}q\x00(X", b"garbage", b"\x80\x05\x95" + b"\xff" * 20])
def test_broken_pickles_raise_input_error(blob) -> None:
    with pytest.raises(InputError):
        parse_dump(blob, "pickle", Ref("x"), 0)


def test_json_that_is_not_a_dump() -> None:
    with pytest.raises(InputError, match="not a Flight Recorder dump"):
        parse_dump(b'{"hello": 1}', "json", Ref("x"), 0)


def test_size_cap(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(flight_recorder, "MAX_DUMP_BYTES", 100)
    with pytest.raises(InputError, match="larger than"):
        parse_dump(b"{" + b" " * 200 + b"}", "json", Ref("x"), 0)


@pytest.mark.parametrize(("name", "from_path", "expected"), [
    ("dumps/nccl_trace_rank_3", None, 3), ("trace_12", None, 12), ("fr/rank2.json", None, 2),
    ("anything", 7, 7), ("dump.json", None, None),
])
def test_rank_from_name(name, from_path, expected) -> None:
    assert rank_from_name(name, from_path) == expected
