"""``syncdoctor analyze``: explain a failed multi-node run from all its logs and Flight Recorder dumps.

Reads files, directories, globs or stdin (plain or gzip) once, in bounded memory; parses PyTorch, gloo,
NCCL, torchrun and Python lines of every recorded version (:mod:`.parsers`); attributes them to ranks and
hosts (:mod:`.timeline`); and runs rules (:mod:`.rules`) that rank root-cause hypotheses by confidence,
each with its evidence lines. Imports nothing from torch.

Modules: :mod:`.inputs` (I/O: sources, gzip, blocks), :mod:`.scan` (fast candidate-line search),
:mod:`.textlog`, :mod:`.collect` (I/O: read everything), :mod:`.model` (records), :mod:`.fr_compare`,
:mod:`.timeline`, :mod:`.rules`, :mod:`.verdict` (the typed ``syncdoctor.analyze/1`` document), :mod:`.api`
(one call).
"""

from __future__ import annotations

from syncdoctor.analyze.api import SCHEMA, Analysis, analyze_paths, analyze_sources, to_document, to_verdict
from syncdoctor.analyze.model import Category, Diagnosis, Event, Evidence, Hypothesis, Kind
from syncdoctor.analyze.verdict import Verdict

__all__ = [
    "SCHEMA",
    "Analysis",
    "Category",
    "Diagnosis",
    "Event",
    "Evidence",
    "Hypothesis",
    "Kind",
    "Verdict",
    "analyze_paths",
    "analyze_sources",
    "to_document",
    "to_verdict",
]
