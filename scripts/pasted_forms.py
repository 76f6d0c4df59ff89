"""Read every case of the corpus that ``analyze`` gets right again, with its lines changed as pasting changes them.

    .venv/bin/python scripts/real_corpus_score.py --json > rows.json
    .venv/bin/python scripts/pasted_forms.py --rows rows.json                  # every form
    .venv/bin/python scripts/pasted_forms.py --rows rows.json --forms quote,wrap --jobs 2

A user's paste is rarely the log as written: a quoted reply (``> ``), a markdown block indented by four spaces,
Windows' line ends, colour codes, a log collector's timestamp before every line (``kubectl logs --timestamps``), a
terminal's hard wrap; the logs of several hosts quoted one after the other in one comment (``merged``). Each form is applied to every file of each case whose lines show the cause and whose category is
right (the rows of ``real_corpus_score.py --json``), and the cases whose first hypothesis changes are listed per form.
What pasting does alike to every line should change nothing; a hard wrap of one line alone at a width no other line
shows, cut between two words (its rest opening in capitals) or before a time, cannot be told from two lines, and does
change some.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta
from multiprocessing import Pool
from pathlib import Path

from syncdoctor.analyze import analyze_paths

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "analyze" / "real"
_META = ("SOURCE.md", "expected.json")
WRAP_AT = 100
_START = datetime(2024, 5, 1, 12, 0, 0)


def _lines(text: str, change: Callable[[int, str], str]) -> str:
    return "\n".join(change(n, line) for n, line in enumerate(text.split("\n")))


def _wrap(text: str) -> str:
    out = []
    for line in text.split("\n"):
        while len(line) > WRAP_AT:
            out.append(line[:WRAP_AT])
            line = line[WRAP_AT:]
        out.append(line)
    return "\n".join(out)


FORMS: dict[str, Callable[[str], str]] = {
    "crlf": lambda t: t.replace("\r\n", "\n").replace("\n", "\r\n"),
    "quote": lambda t: _lines(t, lambda _n, line: "> " + line),
    "indent": lambda t: _lines(t, lambda _n, line: "    " + line),
    # (a second a line, in order: a collector's clock)
    "timestamps": lambda t: _lines(t, lambda n, line: f"{_START + timedelta(seconds=n):%Y-%m-%dT%H:%M:%S}.123456789Z {line}"),
    "ansi": lambda t: re.sub(r"\b(Error|ERROR|error|WARN|Traceback)\b", "\x1b[31m\\1\x1b[0m", t),
    "wrap": _wrap,
}


# forms of a whole case: a case of several files pasted as one (a comment that quotes the logs of two hosts one after
# the other, a blank line between them, their file names lost)
CASE_FORMS = ("merged",)


def _files(case: Path) -> list[Path]:
    return [p for p in sorted(case.iterdir()) if p.name not in _META]


def first_code(case: Path, form: str) -> str:
    """The code of the first hypothesis for ``case`` with ``form`` applied to each of its files ("-": none)."""
    files = _files(case)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        if form == "merged":
            out = Path(tmp) / "paste.txt"
            out.write_text("\n\n".join(path.read_text(errors="replace").rstrip("\n") for path in files) + "\n")
            paths.append(str(out))
        for path in files if form not in CASE_FORMS else ():
            out = Path(tmp) / path.name
            out.write_text(FORMS[form](path.read_text(errors="replace")))
            paths.append(str(out))
        hypotheses = analyze_paths(paths).diagnosis.hypotheses
    return hypotheses[0].code if hypotheses else "-"


def _job(args: tuple[str, str, str]) -> tuple[str, str, str]:
    corpus, case, form = args
    return case, form, first_code(Path(corpus) / case, form)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=Path, required=True, help="the output of real_corpus_score.py --json")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--forms", default=",".join((*FORMS, *CASE_FORMS)),
                        help=f"among {', '.join((*FORMS, *CASE_FORMS))}")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    forms = [f for f in args.forms.split(",") if f]
    unknown = [f for f in forms if f not in FORMS and f not in CASE_FORMS]
    if unknown:
        parser.error(f"unknown form(s): {', '.join(unknown)}")
    try:
        rows = json.loads(args.rows.read_text())["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        parser.error(f"--rows {args.rows}: not the output of real_corpus_score.py --json ({exc})")
    if not args.corpus.is_dir():
        parser.error(f"--corpus {args.corpus}: not a folder")
    # (a row whose case is not in the corpus, one left out or renamed since, is not read)
    right = {r["case"]: r["expected"] for r in rows if r.get("in_log") and r.get("category_ok")
             and (args.corpus / r["case"]).is_dir()}
    # (a case form only where it changes something: a case of several files)
    several = {case for case in right if len(_files(args.corpus / case)) > 1}
    jobs = [(str(args.corpus), case, form) for case in sorted(right) for form in forms
            if form not in CASE_FORMS or case in several]
    changed: dict[str, list[tuple[str, str]]] = {form: [] for form in forms}
    if args.jobs > 1:
        with Pool(args.jobs) as pool:
            results = list(pool.imap_unordered(_job, jobs, chunksize=8))
    else:
        results = [_job(job) for job in jobs]
    for case, form, code in results:
        if code != right[case]:
            changed[form].append((case, code))
    for form in forms:
        print(f"{form}: {len(several) if form in CASE_FORMS else len(right)} cases, {len(changed[form])} read otherwise")
        for case, code in sorted(changed[form]):
            print(f"    {case}: {right[case]} -> {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
