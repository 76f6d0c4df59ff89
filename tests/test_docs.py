"""Docs that run: every code block of README.md and docs/*.md is run here, or says why it is not.

The documents are read with Sybil (https://sybil.readthedocs.io): a fenced block is an example.

* ```console blocks are transcripts: ``$ command`` lines (a trailing ``\\`` continues a command), each
  followed by the output it must print. ``...`` on a line of its own stands for any number of lines, and
  inside a line for any text; ``(exit N)`` on the last line of a command's output is the exit status it
  must end with (0 when absent). Extra words after ``console`` set the run: ``env=NAME=VALUE`` (repeatable).
  Commands run with bash in a scratch directory where ``tests``, ``docs``, ``scripts`` and ``.venv`` of the
  repository are visible, ``.venv/bin`` first on ``PATH``, a clean environment (no ``SYNCDOCTOR_*``, NCCL,
  Gloo or ``MASTER_*`` variables), 100 columns and no colour.
* ```python blocks are executed, each in a fresh namespace, in the same kind of scratch directory.
* Any other block (output shown without its command, a sketch, a command that needs a cluster, a GPU or the
  lab) must be preceded by ``<!-- not run: REASON -->`` on the line above it; the reason is shown to the
  reader too. A block without either fails here: a doc cannot grow an example that nothing checks.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from sybil import Example, Region, Sybil
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_EXIT = re.compile(r"^\(exit (?P<code>\d+)\)$")
_CLEAN_PREFIXES = ("SYNCDOCTOR_", "NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_DISTRIBUTED", "MASTER_", "WORLD_SIZE",
                   "RANK", "LOCAL_RANK", "SLURM_", "OMPI_", "PMI_")


def _scratch(tmp: Path) -> Path:
    for name in ("tests", "docs", "scripts", ".venv", "benchmarks", "src"):
        if not (tmp / name).exists():
            (tmp / name).symlink_to(ROOT / name)
    return tmp


def _environment(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_CLEAN_PREFIXES)}
    env.update(PATH=f"{ROOT / '.venv' / 'bin'}:{env.get('PATH', '')}", COLUMNS="100", NO_COLOR="1", TERM="dumb",
               PYTHONWARNINGS="ignore")
    env.update(extra)
    return env


def _commands(source: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) pairs of a transcript."""
    out: list[tuple[str, list[str]]] = []
    lines = source.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith("$ "):
            raise ValueError(f"a transcript line before any command: {line!r}")
        command = line[2:]
        while command.endswith("\\") and index + 1 < len(lines):
            index += 1
            command = command[:-1] + "\n" + lines[index]
        expected = []
        index += 1
        while index < len(lines) and not lines[index].startswith("$ "):
            expected.append(lines[index])
            index += 1
        out.append((command, expected))
    return out


def _pattern(expected: list[str]) -> re.Pattern[str]:
    parts = []
    for line in expected:
        stripped = line.rstrip()
        if stripped.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in stripped.split("...")) + r"[ \t]*\n")
    return re.compile("".join(parts), re.DOTALL if False else 0)


def check_transcript(example: Example) -> None:
    options = example.parsed["options"]
    extra = dict(value.split("=", 1) for key, value in options if key == "env")
    cwd = _scratch(Path(example.namespace["tmp"]))
    for command, expected in _commands(example.parsed["source"]):
        code = 0
        if expected and _EXIT.match(expected[-1].strip()):
            code = int(_EXIT.match(expected[-1].strip())["code"])  # type: ignore[index]
            expected = expected[:-1]
        while expected and not expected[-1].strip():
            expected = expected[:-1]
        # the node history that analyze and probe write goes to the scratch directory, not the user's
        env = _environment({"XDG_DATA_HOME": str(cwd / "xdg-data"), **extra})
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=240, check=False)
        actual = _ANSI.sub("", done.stdout + done.stderr)
        actual = "\n".join(line.rstrip() for line in actual.splitlines()) + "\n"
        where = f"{example.path}:{example.line}: $ {command}"
        assert done.returncode == code, f"{where}\nexit {done.returncode}, the doc says {code}\n{actual}"
        if expected:
            assert _pattern(expected).fullmatch(actual) or (
                expected[-1].strip() == "..." and _pattern(expected).match(actual)), (
                f"{where}\nthe doc shows:\n" + "\n".join(expected) + f"\n\nthe command printed:\n{actual}")


def run_python(example: Example) -> None:
    cwd = _scratch(Path(example.namespace["tmp"]))
    before = Path.cwd()
    os.chdir(cwd)
    try:
        exec(compile(example.parsed["source"], f"{example.path}:{example.line}", "exec"), {"__name__": "__doc__"})
    finally:
        os.chdir(before)


def parse_blocks(document: object) -> list[Region]:
    """Every fenced block: a transcript, a Python example, or one marked ``<!-- not run: reason -->``."""
    regions = []
    text: str = document.text  # type: ignore[attr-defined]
    for lexed in FencedCodeBlockLexer(language=r"[^\n]*", mapping={"language": "info", "source": "source"})(document):
        info = str(lexed.lexemes.get("info") or "").strip()
        words = shlex.split(info) if info else []
        language = words[0] if words else ""
        options = [tuple(w.split("=", 1)) for w in words[1:] if "=" in w]
        before = text[:lexed.start].rstrip("\n").rsplit("\n", 1)[-1]
        reason = _NOT_RUN.search(before)
        parsed = {"source": str(lexed.lexemes["source"]), "language": language, "options": options,
                  "reason": reason["reason"] if reason else None}
        regions.append(Region(lexed.start, lexed.end, parsed, _evaluate))
    return regions


def _evaluate(example: Example) -> None:
    parsed = example.parsed
    if parsed["reason"]:
        return None  # marked: not run, and the doc says why
    if parsed["language"] == "console":
        return check_transcript(example)
    if parsed["language"] == "python":
        return run_python(example)
    raise AssertionError(f"{example.path}:{example.line}: a ```{parsed['language'] or ''} block that is neither a "
                         "console transcript nor Python: run it, or mark it <!-- not run: REASON -->")


SYBIL = Sybil(parsers=[parse_blocks], patterns=["README.md", "docs/*.md"], path=str(ROOT))


def _examples() -> list[tuple[str, Example]]:
    found = []
    for path in DOCS:
        document = SYBIL.parse(path)
        for example in document.examples():
            found.append((f"{path.relative_to(ROOT)}:{example.line}", example))
    return found


EXAMPLES = _examples()


def test_every_block_is_run_or_says_why_not() -> None:
    assert len(EXAMPLES) >= 40
    for where, example in EXAMPLES:
        parsed = example.parsed
        if parsed["reason"] is not None:
            assert len(parsed["reason"]) >= 10, f"{where}: say why it is not run"
        else:
            assert parsed["language"] in ("console", "python"), f"{where}: run it, or mark it <!-- not run: REASON -->"


@pytest.mark.parametrize("where", [w for w, e in EXAMPLES if e.parsed["reason"] is None], )
def test_example(where: str, tmp_path: Path) -> None:
    example = dict(EXAMPLES)[where]
    example.namespace["tmp"] = str(tmp_path)
    example.evaluate()


def test_the_matcher() -> None:
    assert _pattern(["a ... c", "...", "end"]).fullmatch("a b c\nx\ny\nend\n")
    assert not _pattern(["a ... c", "end"]).fullmatch("a b c\nx\nend\n")
    assert _commands("$ echo a \\\n  b\na b\n$ false\n(exit 1)") == [("echo a \n  b", ["a b"]), ("false", ["(exit 1)"])]
    assert sys.executable  # the suite's interpreter runs the Python blocks
