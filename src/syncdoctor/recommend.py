"""``syncdoctor.recommend``: the recommend engine's public names, the reader of a probe report's
measurements, and the writer of the files ``--emit-env`` produces (``syncdoctor probe`` and ``syncdoctor
recommend``). The rules live in one module, :mod:`syncdoctor.probe.recommend` (its docstring gives the
formulas); this one re-exports them. :func:`write_emitted` does I/O, the rest is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from syncdoctor.probe.recommend import (
    CONNECT_ALLOWANCE_S,
    DEFAULT_BUCKET_BYTES,
    STARTUP_MIN_S,
    STEADY_MIN_S,
    Measurements,
    Recommendation,
    Term,
    env_file_text,
    measurements_from_records,
    python_snippet_text,
)
from syncdoctor.probe.recommend import measurements_from_probe as _measurements_from_report
from syncdoctor.probe.recommend import recommend_timeouts as recommend
from syncdoctor.probe.report import SCHEMA as PROBE_SCHEMA
from syncdoctor.probe.report import ProbeReport, emit_paths, write_emitted

__all__ = [
    "CONNECT_ALLOWANCE_S",
    "DEFAULT_BUCKET_BYTES",
    "PROBE_SCHEMA",
    "STARTUP_MIN_S",
    "STEADY_MIN_S",
    "Measurements",
    "Recommendation",
    "Term",
    "emit_paths",
    "env_file_text",
    "measurements_from_probe",
    "measurements_from_records",
    "python_snippet_text",
    "recommend",
    "write_emitted",
]


def measurements_from_probe(
    doc: ProbeReport | Mapping[str, Any], source: str, *, load_time_s: float | None = None,
    step_time_s: float | None = None,
) -> Measurements:
    """The measurements of a probe report (typed, or its JSON data, read with :meth:`ProbeReport.from_json`:
    :class:`~syncdoctor.errors.InputError` for anything but a ``syncdoctor.probe/1`` document)."""
    report = doc if isinstance(doc, ProbeReport) else ProbeReport.from_json(doc, source)
    return _measurements_from_report(report, source, load_time_s=load_time_s, step_time_s=step_time_s)
