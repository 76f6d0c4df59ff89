"""The training loop's own end, as the frameworks print it. Pure: no I/O.

* PyTorch Lightning: ``\\`Trainer.fit\\` stopped: \\`max_epochs=3\\` reached.`` (also ``max_steps``; written by
  rank 0 only, ``rank_zero_info`` in the fit loop);
* Hugging Face transformers' Trainer: ``Training completed. Do not forget to share your model on
  huggingface.co/models =)``.

What comes after it on a rank is end-of-run code (saving, a last metric, a closing barrier). A collective
that times out there is one the ranks disagree on (:mod:`syncdoctor.analyze.rules.desync`).
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "parse"]

KEYWORDS = ("fit` stopped", "Training completed. Do not forget")

_DONE = re.compile(r"`?Trainer\.fit`? stopped: `?(?P<why>max_(?:epochs|steps|time)=[^`\s]*)`? reached"
                   r"|Training completed\. Do not forget to share your model")


def parse(line: Line) -> list[Event]:
    found = _DONE.search(line.body)
    if found is None:
        return []
    return [make_event(Kind.TRAINING_DONE, line, data={"why": found.group("why") or "training completed"})]
