"""Score ``syncdoctor analyze`` on a corpus of real pasted logs (tests/fixtures/analyze/real).

Each case is a folder with the log files as pasted, ``SOURCE.md`` (where it comes from, what the thread
established) and ``expected.json``: ``category`` (an A code); ``culprit_ranks`` / ``culprit_hosts`` where the
thread establishes them, else null; ``firm`` (the thread established the cause); ``in_log`` (the pasted lines
themselves carry the evidence of that cause, judged from the lines and the category's definition, not from
what the tool says; a paste cut before the error, or whose cause is only known from the discussion, is
``false``) with ``in_log_why``.

A case counts as right in category when the top hypothesis has the expected code; in culprit (only cases
that have one) when the expected ranks are among the top hypothesis's culprit ranks (or, where the inputs
give no global rank, its local ranks) and each expected host is among its culprit hosts. A host that the
inputs never mention (the thread named it, the paste did not) is not scored: no tool could name it. Silent:
no hypothesis at all. Each case is analysed from a copy under a neutral folder, so the case's name
(``proc-...-r3-...``) tells the analysis nothing.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Hypothesis

__all__ = ["Row", "Totals", "culprit_matches", "score", "totals"]

_META = ("SOURCE.md", "expected.json")


@dataclass
class Row:
    case: str
    expected: str
    got: str
    category_ok: bool
    culprit_ok: bool | None  # None: the thread names no culprit (that the inputs show)
    title: str
    firm: bool = False
    in_log: bool = True
    errors: bool = True  # some line of the inputs looks like an error (so silence would be wrong)


@dataclass
class Totals:
    cases: int
    category: int
    culprit: int
    culprit_cases: int
    silent: int
    silent_with_errors: int

    def line(self, label: str) -> str:
        return (f"{label}: {self.cases} cases: category {self.category}/{self.cases} "
                f"({self.category / max(1, self.cases):.0%}), culprit {self.culprit}/{self.culprit_cases} "
                f"({self.culprit / max(1, self.culprit_cases):.0%}), silent {self.silent} "
                f"({self.silent_with_errors} with an error line)")


def culprit_matches(expected: dict, top: Hypothesis | None, text: str = "") -> bool | None:
    ranks = expected.get("culprit_ranks")
    hosts = [h for h in expected.get("culprit_hosts") or () if h.lower() in text.lower()]
    if not ranks and not hosts:
        return None
    if top is None:
        return False
    if ranks:
        known = set(top.culprit_ranks) if top.culprit_ranks else set(top.culprit_local_ranks)
        if not set(ranks) <= known:
            return False
    if hosts:
        named = " ".join(top.culprit_hosts).lower()
        if not all(host.lower() in named for host in hosts):
            return False
    return True


def cases(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.iterdir() if p.is_dir() and (p / "expected.json").is_file())


def score_case(case: Path) -> Row:
    from syncdoctor.analyze.rules.fallback import error_events

    expected = json.loads((case / "expected.json").read_text())
    files = [p for p in sorted(case.iterdir()) if p.name not in _META]
    with tempfile.TemporaryDirectory() as tmp:
        inputs = []
        for path in files:
            shutil.copyfile(path, Path(tmp) / path.name)
            inputs.append(str(Path(tmp) / path.name))
        analysis = analyze_paths(inputs)
    diagnosis = analysis.diagnosis
    text = "\n".join(p.read_text(errors="replace") for p in files)
    top = diagnosis.hypotheses[0] if diagnosis.hypotheses else None
    got = top.code if top else "-"
    return Row(case.name, expected["category"], got, got == expected["category"],
               culprit_matches(expected, top, text), top.title if top else "(silent)",
               bool(expected.get("firm")), bool(expected.get("in_log", True)),
               bool(error_events(analysis.timeline)))


def score(corpus: Path) -> list[Row]:
    return [score_case(case) for case in cases(corpus)]


def totals(rows: list[Row]) -> Totals:
    named = [r for r in rows if r.culprit_ok is not None]
    return Totals(len(rows), sum(r.category_ok for r in rows), sum(1 for r in named if r.culprit_ok), len(named),
                  sum(1 for r in rows if r.got == "-"), sum(1 for r in rows if r.got == "-" and r.errors))
