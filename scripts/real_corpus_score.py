"""Score ``syncdoctor analyze`` on the corpus of real pasted logs (tests/fixtures/analyze/real).

    .venv/bin/python scripts/real_corpus_score.py            # the table and the totals
    .venv/bin/python scripts/real_corpus_score.py --json     # the same as JSON

What a case holds and how it is scored: :mod:`syncdoctor.testing.corpus`. The totals are printed for every
case, for the cases whose cause the thread established (``firm``), and for the cases whose pasted lines
show that cause (``in_log``); tests/test_analyze_real_corpus.py holds the thresholds.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from syncdoctor.testing.corpus import score, totals

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "analyze" / "real"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    rows = score(args.corpus)
    groups = {"all": totals(rows), "firm": totals([r for r in rows if r.firm]),
              "in_log": totals([r for r in rows if r.in_log])}
    if args.json:
        json.dump({**{k: asdict(v) for k, v in groups.items()}, "rows": [asdict(r) for r in rows]}, sys.stdout,
                  indent=1)
        print()
        return 0
    for r in rows:
        culprit = "" if r.culprit_ok is None else ("culprit ok" if r.culprit_ok else "culprit WRONG")
        print(f"{'ok ' if r.category_ok else 'BAD'} {r.case:46} expected {r.expected} got {r.got:5} {culprit:13} "
              f"{'' if r.in_log else '(not in log) '}{r.title[:80]}")
    print(groups["all"].line("all"))
    print(groups["firm"].line("firm (the thread established the cause)"))
    print(groups["in_log"].line("in_log (the pasted lines show the cause)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
