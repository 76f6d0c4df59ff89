"""Readings added in the session of the fifty-first blind harvest (the r54* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_a_launchers_ping_without_reply_names_the_silent_node(tmp_path: Path) -> None:
    # real: ALCF's Aurora guide (PALS mpiexec; the node that did not reply had HBM errors)
    line = "ping failed on x4304c1s6b0n0: No reply from x4307c2s6b0n0.hostmgmt2307.cm.aurora.alcf.anl.gov after 87s"
    event = one(line, Kind.ERROR_LINE)
    assert event.origin.host == "x4307c2s6b0n0" and event.data["asker"] == "x4304c1s6b0n0"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_hosts == ("x4307c2s6b0n0",)
    # another "ping failed" (a health check's own words) names no node
    other = diagnose(tmp_path, "ERROR: ping failed on gpu-3: timeout").hypotheses[0]
    assert other.culprit_hosts != ("gpu-3",) or "No reply" in other.title
