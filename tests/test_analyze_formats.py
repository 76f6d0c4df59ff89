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


def rows() -> list[tuple[str, str, str]]:
    found = []
    for number, line in enumerate(DOC.read_text().splitlines(), 1):
        match = _ROW.match(line)
        if match:
            found.append((f"formats.md:{number}", match["example"] or match["quoted"], match["event"]))
    return found


def test_the_page_has_its_rows() -> None:
    assert len(rows()) >= 100


@pytest.mark.parametrize(("where", "example", "event"), rows(), ids=[r[0] for r in rows()])
def test_example_produces_its_event(tmp_path: Path, where: str, example: str, event: str) -> None:
    path = tmp_path / "paste.log"
    path.write_text(example + "\n")
    events = collect([Source(str(path), path)]).events
    kinds = sorted({e.kind.value for e in events})
    assert event in kinds, f"{where}: {example!r} gave {kinds}"
