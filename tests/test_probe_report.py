"""The typed probe report: JSON round trips (recorded lab reports, synthetic ones, generated ones with
hypothesis), tolerance of older and partial files, and InputError (never a traceback) on malformed input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncdoctor.errors import InputError
from syncdoctor.kb import Finding
from syncdoctor.kb.pages import probe as pages
from syncdoctor.probe import SCHEMA
from syncdoctor.probe.recommend import Recommendations
from syncdoctor.probe.records import ClockOffset, CollectiveRow, LinkMeasure, NodeSkew
from syncdoctor.probe.report import (
    ClockSection,
    FactsRow,
    JoinNode,
    JoinSection,
    ProbeReport,
    StageResult,
)
from syncdoctor.probe.verdict import Verdict
from syncdoctor.report import synthetic

DATA = Path(__file__).parent / "data" / "probe"
RECORDED = sorted(DATA.glob("*.json"))


def test_one_schema_constant() -> None:
    from syncdoctor import recommend
    from syncdoctor.report import html

    assert SCHEMA == "syncdoctor.probe/1" and recommend.PROBE_SCHEMA is SCHEMA and html.PROBE_SCHEMA is SCHEMA


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_recorded_reports_load_and_round_trip(path: Path) -> None:
    report = ProbeReport.from_json(json.loads(path.read_text()), str(path))
    assert report.finished and report.nodes and report.stages
    assert ProbeReport.from_json(json.loads(json.dumps(report.to_json()))) == report


@pytest.mark.parametrize("analyse", [True, False])
def test_synthetic_reports_round_trip(analyse: bool) -> None:
    data = synthetic.probe_document(4, 2, slow_node=1, late_node=2, analyse=analyse)
    report = ProbeReport.from_json(data)
    assert ProbeReport.from_json(report.to_json()) == report
    # every section the probe writes comes back with the same values
    again = report.to_json()
    for key in ("links", "collectives", "findings", "clock", "stages", "launch", "config"):
        assert again[key] == data[key], key
    assert again["verdict"]["summary"] == data["verdict"]["summary"]
    if analyse:
        assert again["verdict"] == data["verdict"] and again["recommendations"] == data["recommendations"]


def test_partial_and_old_files_load() -> None:
    minimal = ProbeReport.from_json({"schema": SCHEMA})
    assert minimal == ProbeReport() and minimal.nodes == () and minimal.registered == 0
    partial = ProbeReport.from_json({
        "schema": SCHEMA, "finished": False,
        "stages": [{"name": "join", "status": "failed", "seconds": 60.0, "errors": {"0": "timeout"}}],
        "join": {"registered": [{}, {}], "nodes": [{"node": 0, "label": "vm", "addr": "127.0.0.1", "ranks": [0, 1]}]},
        "verdict": {"summary": "one node"}, "future_key": {"kept": True},
    })
    assert partial.stages[0].errors == {"0": "timeout"} and partial.registered == 2
    assert partial.nodes == (JoinNode(0, "vm", (0, 1), "", "127.0.0.1"),)
    assert partial.verdict is not None and partial.verdict.summary == "one node" and partial.verdict.kind == ""
    assert partial.extra == {"future_key": {"kept": True}}
    assert partial.to_json()["future_key"] == {"kept": True}
    # malformed entries of a list are skipped, as the readers always did
    skipped = ProbeReport.from_json({"schema": SCHEMA, "collectives": "garbage", "links": [{"kind": "inter"}, 3]})
    assert skipped.collectives == () and skipped.links == ()


@pytest.mark.parametrize("data", [
    [], "text", None, {"schema": "syncdoctor.check/1"}, {},
    {"schema": SCHEMA, "join": 5}, {"schema": SCHEMA, "clock": []}, {"schema": SCHEMA, "verdict": "slow"},
    {"schema": SCHEMA, "verdict": {"slowest_rank": {"rank": "x", "sizes": 1, "of": 2}}},
    {"schema": SCHEMA, "recommendations": {"startup_timeout_s": "soon"}},
    {"schema": SCHEMA, "config": [1]}, {"schema": SCHEMA, "facts": 7},
])
def test_malformed_input_raises_input_error(data: Any) -> None:
    with pytest.raises(InputError, match=r"probe\.json"):
        ProbeReport.from_json(data, "probe.json")


def test_loads_rejects_what_is_not_json() -> None:
    with pytest.raises(InputError, match="is not JSON"):
        ProbeReport.loads("{nope", "probe.json")
    assert ProbeReport.loads(json.dumps({"schema": SCHEMA})) == ProbeReport()


# --- generated reports -------------------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_small = st.integers(min_value=0, max_value=1 << 20)
_real = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
# bandwidths travel as bits per second in the verdict, so they round-trip exactly when they are whole bits / 8
_bandwidth = st.integers(min_value=0, max_value=1 << 40).map(lambda bits: bits / 8)

_links = st.builds(LinkMeasure, st.sampled_from(["inter", "intra"]), _small, _small, _small, _small, _real, _real,
                   _real, _real, _small, _small, _small)
_rows = st.builds(CollectiveRow, _text, _small, _small, _text, _text, st.integers(-1, 64), _small, _real, _real, _real,
                  _small, _real, _real, st.none() | _small, _small)
_verdicts = st.builds(
    Verdict, _text, _text, _text, _bandwidth, _bandwidth,
    st.lists(st.fixed_dictionaries({"pair": _text, "fraction": st.none() | _real, "physical": st.booleans()}),
             max_size=3).map(tuple),
    st.none() | st.tuples(_small, _small, _small),
)
_env = st.dictionaries(_text, _text, max_size=3)
_advice = st.builds(Recommendations, _env, st.dictionaries(_text, _env, max_size=2), _small, _small,
                    _env, st.lists(_text, max_size=3).map(tuple), st.sampled_from(["nccl", "gloo"]))
# a report keeps what a finding's JSON holds (not its dedup key)
_findings = st.builds(lambda text, pair: Finding.from_json(pages.SLOW_LINK.finding(text, evidence={"pair": pair}).to_json()),
                      _text, _text)
_reports = st.builds(
    ProbeReport,
    syncdoctor_version=_text, created=_text, finished=st.booleans(),
    command=st.none() | st.lists(_text, max_size=3).map(tuple),
    config=st.dictionaries(_text, _small, max_size=3), launch=st.dictionaries(_text, _text, max_size=3),
    backend=st.none() | st.sampled_from(["nccl", "gloo"]),
    probe_settings=st.none() | st.dictionaries(_text, _text, max_size=2),
    stages=st.lists(st.builds(StageResult, _text, _text, _real, st.dictionaries(_text, _text, max_size=2)),
                    max_size=4).map(tuple),
    join=st.none() | st.builds(
        JoinSection, st.booleans(), st.none() | _text, st.none() | _real,
        st.lists(st.dictionaries(_text, _small, max_size=3), max_size=3).map(tuple),
        st.lists(st.builds(JoinNode, _small, _text.filter(bool), st.lists(_small, max_size=3).map(tuple), _text,
                           st.none() | _text), max_size=3).map(tuple),
        st.lists(_text, max_size=2).map(tuple)),
    clock=st.none() | st.builds(
        ClockSection, st.lists(st.builds(ClockOffset, _small, _real, _real, _small), max_size=3).map(tuple),
        st.lists(st.builds(NodeSkew, _small, _text, _real, _real, _real, _real), max_size=3).map(tuple)),
    facts=st.none() | st.lists(st.builds(FactsRow, _small, _text.filter(bool), st.none() | _text,
                                         st.none() | _small, st.none() | _small,
                                         st.dictionaries(st.sampled_from(["env", "gpus"]), _text, max_size=2)),
                               max_size=3).map(tuple),
    links=st.lists(_links, max_size=4).map(tuple),
    collectives=st.lists(_rows, max_size=4).map(tuple),
    findings=st.lists(_findings, max_size=3).map(tuple),
    verdict=st.none() | _verdicts,
    recommendations=st.none() | _advice,
    emitted=st.lists(_text, max_size=2).map(tuple),
    json_path=st.none() | _text,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_reports)
def test_generated_reports_round_trip_through_json_text(report: ProbeReport) -> None:
    assert ProbeReport.loads(json.dumps(report.to_json())) == report
