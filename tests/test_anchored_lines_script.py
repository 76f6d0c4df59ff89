"""``scripts/anchored_lines.py``, the sweep that reads each anchored corpus line alone, on a small corpus: it
keeps each distinct anchored line once, reads it, and the comparison names a line whose reading changed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "anchored_lines.py"


@pytest.fixture(scope="module")
def sweep():
    spec = importlib.util.spec_from_file_location("anchored_lines", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _corpus(root: Path) -> Path:
    error = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error"
    for name, text in (("one", f"step 3 loss 0.1\n{error}\n"), ("two", f"  {error}  \nsome other line\n")):
        case = root / name
        case.mkdir(parents=True)
        (case / "log.txt").write_text(text)
        (case / "SOURCE.md").write_text(f"# {error}\n")  # not a log: never read
        (case / "expected.json").write_text("{}")
    return root


def test_each_anchored_line_once_read_alone_and_compared(sweep, tmp_path: Path, capsys) -> None:
    corpus = _corpus(tmp_path / "corpus")
    lines = sweep.anchored_lines(corpus)
    assert len(lines) == 1 and lines[0].startswith(b"torch.distributed.DistBackendError")  # stripped, once
    out = tmp_path / "after.json"
    assert sweep.main(["--corpus", str(corpus), "--out", str(out)]) == 0
    reading = json.loads(out.read_text())
    (line, (code, ranks)), = reading.items()
    assert code.startswith("A") and code != "A000" and ranks == []
    before = tmp_path / "before.json"
    before.write_text(json.dumps({line: ["A999", []], "a line only held before": None}))
    assert sweep.main(["--compare", str(before), str(out)]) == 1
    printed = capsys.readouterr().out
    assert f"['A999', []] -> ['{code}', []]" in printed and "1 lines held in both: 1 read differently" in printed
    assert sweep.main(["--compare", str(out), str(out)]) == 0
