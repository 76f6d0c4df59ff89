"""Readings added in the session of the thirty-sixth blind harvest (the r39* cases of the real corpus), one
behaviour per test, each with the look-alike it must not catch: libc++'s words for an uncaught C++ exception
(macOS and clang builds) cut short by the paste. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of
from syncdoctor.analyze.model import Category

diagnose = diagnose_paste


def test_libcxxs_uncaught_exception_is_a_crash_even_cut_short(tmp_path: Path) -> None:
    # real: horovod/horovod#2940 (macOS, gloo; the path of the failed check cut by the paste)
    cut = ("libc++abi.dylib: terminating with uncaught exception of type gloo::EnforceNotMet: [enforce fail at "
           "/private/var/folders/l3/18pljl2s6q3d3h_kk1y5nv8h0000gn/T/pip-...\n")
    top = diagnose(tmp_path, cut).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "uncaught exception" in top.title
    newer = "libc++abi: terminating due to uncaught exception of type std::runtime_error: bad\n"
    assert diagnose(tmp_path, newer).hypotheses
    # an exception that was caught and logged is no termination
    assert not events_of("handled an exception of type std::runtime_error, continuing\n")
