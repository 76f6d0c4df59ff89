"""Progress bars (tqdm and the bars built on it: datasets' ``map``, Accelerate, Lightning, yolov5). Pure: no I/O.

A bar says that the process drawing it was working, on what, and for how long (a line that says it is
evaluating, ``Running per image evaluation...``, or writing a checkpoint, ``Saving model checkpoint to …``, is a
``work_phase`` event, read the same way, as is a line naming its rank and a count it works through, ``Rank 0
processing scenario 1762 / 3037``):
``Running tokenizer on dataset:   9%|███▊      | 280000/2969526 [29:55<4:48:08, 155.57 examples/s]``,
``Generating train split: 2230000 examples [29:59, 1466.92 examples/s]`` (no total),
``train: Scanning '../coco/labels/train' … 97%|██▉| 43830/45049 [01:07<00:18, 66.12it/s]``,
``Preparing test set...:  37%|███▋      | 25/67 [24:03<30:15, 43.23s/it]``, a postfix after the rate
(``[00:10<00:00, 5.00it/s, loss=0.31]``). A terminal redraws a bar with a carriage return, so one pasted line
may hold many states of it, or a bar followed by another process's error (``… 66.12it/s][E ProcessGroupNCCL…``):
the last state on the line is the one read.

Each line with a bar is a ``progress_bar`` event: ``desc`` (the text before the bar, its first 80 characters, spaces collapsed),
``elapsed_s`` (tqdm's ``[elapsed<remaining`` field: ``MM:SS`` or ``H:MM:SS``), ``n`` and ``total`` where
shown. Most trainers draw bars on the main process only (rank 0, or each node's local rank 0), so a bar without
a rank prefix is most likely rank 0's. The reader keeps the last state of each bar only (bounded memory for a
log of a million redraws); the rules compare its elapsed time with how long the others waited
(:mod:`syncdoctor.analyze.rules.progress`).
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["BAR_MARKERS", "bar_events", "bar_key", "parse"]

# not a line parser's keywords (a log of bar redraws would make every line a candidate): the parsers read a bar
# on a line another anchor selected (``… 66.12it/s][E ProcessGroupNCCL…``), and the reader looks for these in the
# lines just before a timeout (:func:`syncdoctor.analyze.textlog.read_text`)
BAR_MARKERS = (b"/s]", b"s/it", b"it/s,", b"valuat", b"aving ", b"rocessing ", b"for split ", b"alidation ", b"test set",
               b"test data", b"eval set", b"eval data")
_TEXT_MARKERS = tuple(marker.decode() for marker in BAR_MARKERS)

# a line that says the process is evaluating (pycocotools' ``Running per image evaluation...``, ``Evaluate
# annotation type *bbox*``, ``Accumulating evaluation results...``; mmengine's and the trainers' ``Evaluating``):
# most trainers evaluate on rank 0 alone while the others wait in the next collective
_EVALUATING = re.compile(r"\b(?:Evaluating|Evaluate annotation type|Running per image evaluation|"
                         r"Accumulating evaluation results|Running evaluation|Start(?:ing)? evaluation|"
                         # the evaluation's data being built (TensorFlow Datasets' ``Constructing tf.data.Dataset
                         # wmt14_translate for split validation``, ``Loading the validation set``)
                         r"for split (?:validation|test|eval)|(?:[Ll]oading|[Bb]uilding|[Cc]onstructing|[Pp]reparing) "
                         r"(?:the )?(?:validation|evaluation|eval|test) (?:set|data|dataset|split))\b")
# a line that says it is writing a checkpoint (the HF Trainer's ``Saving model checkpoint to out/checkpoint-500``,
# ``Saving latest checkpoint …``, Lightning's ``saving model to …``, Accelerate's ``Saving current state to …``):
# often rank 0 alone, and a save that outlasts the timeout is the classic straggler (a few words may come
# between: ``Saving the newly created merged model to /opt/ml/model``)
_SAVING = re.compile(r"\b[Ss]aving (?:the |a |current |latest |final |best |last )?(?:[\w-]{1,20} ){0,3}?(?:model|"
                     r"checkpoint|state|DeepSpeed|weights|ckpt)")

# a line of the program's own that says which rank works through what: ``Rank 0 processing scenario 1762 / 3037``
_COUNTING = re.compile(r"\b[Rr]ank (?P<rank>\d{1,6})\b[:,]? (?:is )?[Pp]rocessing\b[^\n]{0,80}?(?<![\d.])"
                       r"(?P<n>\d{1,9}) ?/ ?(?P<total>\d{1,9})\b")
# the time fields and the rate: [29:55<4:48:08, 155.57 examples/s] / [29:59, 1466.92 examples/s] / [01:07<00:18, 66.12it/s, loss=1]
_FIELDS = re.compile(
    r"\[(?P<elapsed>(?:\d{1,4}:)?\d{1,2}:\d{2})(?:<[^,\]\[]{0,24})?,\s{0,4}"
    r"(?:\?|[\d.]{1,16}[kMGT]?)\s?[A-Za-z ]{0,24}(?:/s|s/[A-Za-z]{1,16})(?=[,\]])")
# what comes before them: "desc: NN%|bar| n/total " or "desc: n unit "
# (the bar may be lost in a paste, ``72% 23/32 [``, or worded: vLLM's ``50% Completed | 1/2 [``)
_PERCENT = re.compile(r"(?P<pct>\d{1,3})%[^\[\]]{0,400}?(?<![\d.])(?P<n>[\d.]{1,16}[kMGT]?)/"
                      r"(?P<total>[\d.]{1,16}[kMGT]?)\s{0,4}$")
_COUNT = re.compile(r"(?P<n>\d[\d.]{0,15}[kMGT]?)\s?[A-Za-z ]{0,24}\s{0,4}$")
_DIGITS = re.compile(r"\d+")


def _seconds(text: str) -> int:
    value = 0
    for part in text.split(":"):
        value = value * 60 + int(part)
    return value


def _number(text: str) -> float | None:
    scale = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(text[-1:], 1.0)
    try:
        return float(text.rstrip("kMGT")) * scale
    except ValueError:
        return None


def bar_key(event: Event) -> str:
    """The same bar across its redraws (and its numbered siblings: ``Epoch 3`` is ``Epoch 2``'s successor)."""
    return f"{event.ref.source}|{event.origin.rank}|{_DIGITS.sub('#', str(event.data.get('desc', '')))}"


def bar_events(line: Line) -> list[Event]:
    """The bar or work line in ``line``, if its body holds a marker (cheap to call on any line)."""
    body = line.body
    return parse(line) if any(marker in body for marker in _TEXT_MARKERS) else []


def parse(line: Line) -> list[Event]:
    body = line.body
    matches = list(_FIELDS.finditer(body))
    if not matches:
        if len(body) > 300:
            return []
        if _EVALUATING.search(body):
            return [make_event(Kind.WORK_PHASE, line, data={"phase": "evaluation", "desc": body.strip()[:80]})]
        if _SAVING.search(body):
            return [make_event(Kind.WORK_PHASE, line, data={"phase": "checkpoint", "desc": body.strip()[:80]})]
        counting = _COUNTING.search(body)
        if counting and int(counting["n"]) < int(counting["total"]):
            return [make_event(Kind.WORK_PHASE, line, origin=Origin(rank=int(counting["rank"])), data={
                "phase": "work", "desc": body[counting.start():].strip()[:80]})]
        return []
    last = matches[-1]
    start = max(body.rfind("\r", 0, last.start()), body.rfind("\n", 0, last.start())) + 1
    before = body[start:last.start()]
    data: dict[str, object] = {"elapsed_s": _seconds(last["elapsed"])}
    shape = _PERCENT.search(before) or _COUNT.search(before)
    if shape is None:
        return []
    if "total" in shape.groupdict():
        data["total"] = _number(shape["total"])
        data["pct"] = int(shape["pct"])
    data["n"] = _number(shape["n"])
    data["desc"] = " ".join(before[:shape.start()].split()).rstrip(":").strip()[:80]
    return [make_event(Kind.PROGRESS_BAR, line, data=data)]
