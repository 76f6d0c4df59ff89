"""``scripts/pasted_forms.py``, which reads each right case again with its lines changed as pasting changes them, on
a small corpus: what pasting does alike to every line changes nothing, and a case whose reading changes is listed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "pasted_forms.py"
# real: karpathy/llm.c#692, quoted alone (read by the last look of a small paste)
_BARE = "MPI support is disabled. Please enable MPI support to use MPI-based NCCL-init method.\n"


@pytest.fixture(scope="module")
def forms():
    spec = importlib.util.spec_from_file_location("pasted_forms", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_form_changes_every_line_alike(forms) -> None:
    text = "first line\nsecond line\n"
    assert forms.FORMS["quote"](text) == "> first line\n> second line\n> "
    assert forms.FORMS["crlf"](text) == "first line\r\nsecond line\r\n"
    assert forms.FORMS["wrap"]("x" * 250) == "\n".join(["x" * 100, "x" * 100, "x" * 50])
    stamped = forms.FORMS["timestamps"]("\n".join(["x"] * 70)).split("\n")
    assert stamped[0].startswith("2024-05-01T12:00:00.") and stamped[69].startswith("2024-05-01T12:01:09.")


def test_a_right_case_read_again_in_every_form(forms, tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "corpus"
    case = corpus / "bare"
    case.mkdir(parents=True)
    (case / "log.txt").write_text(_BARE)
    code = forms.first_code(case, "crlf")
    assert code == "A028"
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps({"rows": [{"case": "bare", "expected": code, "in_log": True, "category_ok": True}]}))
    assert forms.main(["--rows", str(rows), "--corpus", str(corpus), "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    for form in ("crlf", "quote", "indent", "timestamps", "ansi", "wrap"):
        assert f"{form}: 1 cases, 0 read otherwise" in printed, printed
    assert "merged: 0 cases, 0 read otherwise" in printed, printed  # one file: nothing to merge
    # a row whose expected code the forms cannot give is listed, with what they gave
    rows.write_text(json.dumps({"rows": [{"case": "bare", "expected": "A001", "in_log": True, "category_ok": True}]}))
    assert forms.main(["--rows", str(rows), "--corpus", str(corpus), "--forms", "quote", "--jobs", "1"]) == 0
    assert "quote: 1 cases, 1 read otherwise\n    bare: A001 -> A028" in capsys.readouterr().out


def test_bad_arguments_are_a_usage_error(forms, tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    rows.write_text("not json")
    with pytest.raises(SystemExit) as bad:
        forms.main(["--rows", str(rows)])
    assert bad.value.code == 2
    rows.write_text(json.dumps({"rows": []}))
    with pytest.raises(SystemExit) as unknown:
        forms.main(["--rows", str(rows), "--forms", "sideways"])
    assert unknown.value.code == 2
    with pytest.raises(SystemExit) as nowhere:
        forms.main(["--rows", str(rows), "--corpus", str(tmp_path / "nowhere")])
    assert nowhere.value.code == 2


# real: pytorch/pytorch#135486 (r12ad), cut in two as if from two files: the chatter that places the pid, and the crash
_PLACE = "0: g1002:2128869:2128880 [0] NCCL INFO Setting affinity for GPU 0 to ffff0000\n"
_CRASH = ("0: Fatal Python error: Segmentation fault\n"
          "0: E0909 14:03:50.013000 22579342468928 torch/distributed/elastic/multiprocessing/api.py:833] failed "
          "(exitcode: -11) local_rank: 0 (pid: 2128869) of binary: /venv/bin/python\n")


def test_a_case_of_several_files_is_read_again_as_one_paste(forms, tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "corpus"
    case = corpus / "two"
    case.mkdir(parents=True)
    (case / "node.log").write_text(_PLACE)
    (case / "agent.log").write_text(_CRASH)
    assert forms.first_code(case, "merged") == forms.first_code(case, "quote") == "A003"
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps({"rows": [{"case": "two", "expected": "A003", "in_log": True, "category_ok": True}]}))
    assert forms.main(["--rows", str(rows), "--corpus", str(corpus), "--forms", "merged", "--jobs", "1"]) == 0
    assert "merged: 1 cases, 0 read otherwise" in capsys.readouterr().out
