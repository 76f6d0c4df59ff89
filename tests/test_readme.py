"""The README stays true: its CI example is the file the plugin tests run, and what it links exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_example_in_readme_is_the_tested_file() -> None:
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / "docs" / "examples" / "test_ci_example.py").read_text().rstrip()
    assert f"```python\n{example}\n```" in readme


def test_readme_links_point_to_files() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs)/[^)#]+)\)", readme)
    assert links
    missing = [link for link in links if not (ROOT / link).exists()]
    assert missing == []


def test_readme_names_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    for target in ("test", "demo"):
        assert f"make {target}" in readme
        assert re.search(rf"^{target}:", makefile, re.MULTILINE)
