"""The typed analyze verdict (``syncdoctor.analyze/1``): to_json/from_json round trips on the real fixtures and
on generated verdicts, documents of earlier releases still read, and malformed documents as InputError only."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncdoctor.analyze import SCHEMA, Category, analyze_paths, to_document, to_verdict
from syncdoctor.analyze.verdict import RankRow, TimelineRow, Verdict, VerdictEvidence, VerdictHypothesis
from syncdoctor.errors import InputError
from syncdoctor.report import html, synthetic

FIXTURES = Path(__file__).parent / "fixtures" / "analyze"
CASES = ["lab/late", "lab/crash", "fr/desync", "fr/late", "real/hang-desync-debug-r7", "gpu/timeout", "shapes"]


def test_one_schema_constant() -> None:
    assert html.ANALYZE_SCHEMA is SCHEMA == "syncdoctor.analyze/1"


@pytest.mark.parametrize("fixture", CASES)
def test_real_documents_round_trip(fixture: str) -> None:
    analysis = analyze_paths([str(FIXTURES / fixture)])
    verdict = to_verdict(analysis)
    document = json.loads(json.dumps(to_document(analysis), default=str))
    assert document == json.loads(json.dumps(verdict.to_json(), default=str))
    read = Verdict.from_json(document)
    assert read.to_json() == document
    assert Verdict.from_json(read.to_json()) == read


def test_documents_of_earlier_releases_read() -> None:
    data = synthetic.analyze_document(8, culprit=3)  # no culprit_processes, evidence with file/line
    verdict = Verdict.from_json(data)
    assert verdict.root_cause is not None and verdict.root_cause.culprit_ranks == (3,)
    assert verdict.hypotheses[0].evidence[0].line == 40 and verdict.timeline[0].time == data["timeline"][0]["time"]
    old = dict(data, root_cause=dict(data["root_cause"], category="interface-missing"))
    assert Verdict.from_json(old).root_cause.category == Category.INTERFACE_MISSING.value  # type: ignore[union-attr]


_names = st.text(alphabet="abcdefghij-_.0123456789", min_size=1, max_size=12)
_opt_names = st.none() | _names
_small = st.integers(min_value=0, max_value=10_000)
_json_leaf = st.none() | st.booleans() | _small | _names
_evidence = st.builds(VerdictEvidence, ref=st.builds(lambda s, n: f"{s}:{n}" if n else s, _names, _small),
                      text=st.text(max_size=40), note=st.text(max_size=10), rank=st.none() | _small, host=_opt_names)
_hypothesis = st.builds(
    VerdictHypothesis, category=st.sampled_from([c.value for c in Category]), code=_names,
    confidence=st.integers(0, 1000).map(lambda n: n / 1000), title=st.text(max_size=30),
    root_cause=st.booleans(), culprit_ranks=st.tuples(_small), culprit_hosts=st.tuples(_names),
    culprit_processes=st.tuples(_names), culprit_local_ranks=st.tuples(_small), affected_ranks=st.tuples(_small, _small),
    affected_hosts=st.tuples(_names), what=st.text(max_size=20), fix=st.text(max_size=20),
    evidence=st.lists(_evidence, max_size=3).map(tuple), evidence_total=_small,
)
_row = st.builds(TimelineRow, kind=_names, ref=_names, rank=st.none() | _small, text=st.text(max_size=30),
                 host=_opt_names, group=_opt_names, seq=st.none() | _small, op=_opt_names,
                 data=st.dictionaries(_names, _json_leaf, max_size=3), time_text=_opt_names,
                 time=st.none() | st.floats(0, 1e9, allow_nan=False), file=_opt_names, line=st.none() | _small)
_rank = st.builds(RankRow, rank=_small, host=_opt_names, pids=st.tuples(_small), state=_names,
                  last_seq=st.none() | _small, last_completed=st.none() | _small, exitcode=st.none() | _small,
                  signal=_opt_names, first_error=st.none() | st.text(max_size=20), first_error_ref=_opt_names)
_verdict = st.builds(
    Verdict, root_cause_found=st.booleans(), root_cause=st.none() | _hypothesis,
    hypotheses=st.lists(_hypothesis, max_size=3).map(tuple),
    findings=st.lists(st.dictionaries(_names, _json_leaf, max_size=3), max_size=2).map(tuple),
    ranks=st.lists(_rank, max_size=3).map(tuple),
    hosts=st.dictionaries(_names, st.lists(_small, max_size=3).map(tuple), max_size=3),
    world_size=st.none() | _small, timeline=st.lists(_row, max_size=4).map(tuple),
    inputs=st.lists(_names, max_size=3).map(tuple), notes=st.lists(st.text(max_size=20), max_size=2).map(tuple),
    unexplained=st.lists(_evidence, max_size=2).map(tuple), stats=st.dictionaries(_names, _small, max_size=3),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(verdict=_verdict)
def test_round_trip(verdict: Verdict) -> None:
    document = json.loads(json.dumps(verdict.to_json()))
    assert Verdict.from_json(document) == verdict
    assert Verdict.from_json(document).to_json() == document


@pytest.mark.parametrize(("document", "message"), [
    ([], "the document must be a JSON object"),
    ({"schema": "syncdoctor.probe/1"}, "is not syncdoctor.analyze/N"),
    ({"hypotheses": {}}, "hypotheses must be a JSON list"),
    ({"hypotheses": [{"confidence": "high"}]}, "hypotheses[0].confidence must be a number"),
    ({"hypotheses": [{"culprit_ranks": ["3"]}]}, "hypotheses[0].culprit_ranks[0] must be an integer"),
    ({"root_cause": 3}, "root_cause must be a JSON object"),
    ({"timeline": [{"rank": 1, "time": "noon"}]}, "timeline[0].time must be a number"),
    ({"ranks": [{"host": "a"}]}, "ranks[0] has no rank"),
    ({"hosts": {"a": "0-3"}}, "hosts['a'] must be a JSON list"),
])
def test_malformed_documents_are_input_errors(document: Any, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        Verdict.from_json(document)


@settings(max_examples=200, deadline=None)
@given(document=st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                             lambda inner: st.lists(inner, max_size=3)
                             | st.dictionaries(st.sampled_from(["schema", "hypotheses", "root_cause", "timeline",
                                                                "ranks", "hosts", "confidence", "evidence", "rank",
                                                                "ref", "findings", "stats"]), inner, max_size=4),
                             max_leaves=12))
def test_from_json_raises_only_input_error(document: Any) -> None:
    try:
        Verdict.from_json(document)
    except InputError:
        pass
