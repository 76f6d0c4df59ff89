"""Every distinct anchored line of the real-failure corpus, each read alone by ``analyze``.

A reading added for one case can change what a line means everywhere: this sweep shows where. Each distinct
line (8 to 1500 bytes) of the corpus logs that holds one of the scanner's anchors is written alone to a file
and analyzed; the first hypothesis (code and culprit ranks) is kept per line.

    python scripts/anchored_lines.py --out before.json            # on the code before a change
    python scripts/anchored_lines.py --out after.json             # and after it
    python scripts/anchored_lines.py --compare before.json after.json

``--shard K/N`` reads every N-th line from the K-th (run N of them side by side, then ``--merge``). A full
sweep reads about 12,000 lines, several minutes per thousand on a 2-core host.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from syncdoctor.analyze import analyze_paths  # noqa: E402
from syncdoctor.analyze.scan import ANCHORS  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "analyze" / "real"
KEPT = ("SOURCE.md", "expected.json")


def anchored_lines(corpus: Path) -> list[bytes]:
    lines: set[bytes] = set()
    for case in sorted(p for p in corpus.iterdir() if p.is_dir()):
        for path in sorted(case.rglob("*")):
            if path.is_file() and path.name not in KEPT:
                for raw in path.read_bytes().splitlines():
                    raw = raw.strip()
                    if 8 <= len(raw) <= 1500 and any(anchor in raw for anchor in ANCHORS):
                        lines.add(raw)
    return sorted(lines)


def read_alone(lines: list[bytes]) -> dict[str, list | None]:
    out: dict[str, list | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.log"
        for raw in lines:
            path.write_bytes(raw + b"\n")
            key = raw.decode("utf-8", "replace")
            try:
                hypotheses = analyze_paths([path]).diagnosis.hypotheses
            except Exception as exc:  # a traceback on one line is a finding, not the end of the sweep
                out[key] = ["EXCEPTION", f"{type(exc).__name__}: {exc}"[:200]]
                continue
            first = hypotheses[0] if hypotheses else None
            out[key] = [first.code, sorted(first.culprit_ranks or ())] if first else None
    return out


def compare(before: dict, after: dict) -> int:
    common = sorted(set(before) & set(after))
    changed = [line for line in common if before[line] != after[line]]
    for line in changed:
        print(f"{before[line]} -> {after[line]}: {line[:200]}")
    silent = sum(1 for line in common if after[line] is None)
    print(f"{len(common)} lines held in both: {len(changed)} read differently; {silent} silent after "
          f"({sum(1 for line in common if before[line] is None)} before)")
    return 1 if changed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out", type=Path, help="write {line: [code, culprit ranks] or null} as JSON")
    parser.add_argument("--shard", default="0/1", help="K/N: every N-th line from the K-th")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--merge", nargs="+", type=Path, help="shard outputs to merge into --out")
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        return compare(before, after)
    if args.out is None:
        parser.error("--out is needed (or --compare)")
    if args.merge:
        merged: dict = {}
        for part in args.merge:
            merged.update(json.loads(part.read_text()))
        args.out.write_text(json.dumps(merged, indent=0, sort_keys=True))
        print(f"{len(merged)} lines")
        return 0
    k, _, n = args.shard.partition("/")
    lines = anchored_lines(args.corpus)[int(k)::int(n)]
    result = read_alone(lines)
    args.out.write_text(json.dumps(result, indent=0, sort_keys=True))
    silent = sum(1 for value in result.values() if value is None)
    print(f"{len(result)} lines read alone: {silent} silent, "
          f"{sum(1 for v in result.values() if v and v[0] == 'EXCEPTION')} raised")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
