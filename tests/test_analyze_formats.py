"""Every row of docs/formats.md: its example line, read through the whole pipeline (the scanner's anchors,
the prefixes, the parsers), produces the event its row names. The page is the list of formats with the
first and last release that prints each; this keeps the page and the parsers in step."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from syncdoctor.analyze.collect import collect
from syncdoctor.analyze.inputs import Source

DOC = Path(__file__).resolve().parent.parent / "docs" / "formats.md"
# the example in single backquotes, or in double ones (with a space inside) when it holds backquotes itself
_ROW = re.compile(r"^\| .*\| (?:`(?P<example>[^`]+)`|`` (?P<quoted>.+?) ``) \| `(?P<event>[a-z_]+)` \|\s*$")


# the section whose rows are read only next to a timeout: each example is followed by one
_NEXT_TO_A_TIMEOUT = "## Read next to a timeout"
_TIMEOUT = ("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800572 milliseconds before timing "
            "out.")


def rows() -> list[tuple[str, str, str]]:
    found = []
    section = ""
    for number, line in enumerate(DOC.read_text().splitlines(), 1):
        if line.startswith("## "):
            section = line.strip()
        match = _ROW.match(line)
        if match:
            example = match["example"] or match["quoted"]
            if section == _NEXT_TO_A_TIMEOUT:
                example += "\n" + _TIMEOUT
            found.append((f"formats.md:{number}", example, match["event"]))
    return found


def test_the_page_has_its_rows() -> None:
    assert len(rows()) >= 100
    # and says how many (the count had drifted from the table while rows were added)
    stated = re.search(r"^(\d+) rows\.", DOC.read_text(), re.M)
    assert stated is not None and int(stated[1]) == len(rows())


@pytest.mark.parametrize(("where", "example", "event"), rows(), ids=[r[0] for r in rows()])
def test_example_produces_its_event(tmp_path: Path, where: str, example: str, event: str) -> None:
    path = tmp_path / "paste.log"
    path.write_text(example + "\n")
    events = collect([Source(str(path), path)]).events
    kinds = sorted({e.kind.value for e in events})
    assert event in kinds, f"{where}: {example!r} gave {kinds}"
