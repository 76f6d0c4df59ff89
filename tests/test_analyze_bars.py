"""Progress bars: what a bar's last state says (parsers/bars.py), and that a log of redraws stays bounded."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Kind, Origin, Ref
from syncdoctor.analyze.parsers import make_line, parse_line
from syncdoctor.analyze.parsers.bars import parse


def bars(text: str) -> list[dict]:
    return [dict(e.data) for e in parse_line(make_line(text, Ref("x", 1), Origin())) if e.kind is Kind.PROGRESS_BAR]


@pytest.mark.parametrize(("text", "desc", "elapsed", "n", "total"), [
    ("Running tokenizer on dataset:   9%|███▊      | 280000/2969526 [29:55<4:48:08, 155.57 examples/s]",
     "Running tokenizer on dataset", 1795, 280000, 2969526),
    ("Generating train split: 2230000 examples [29:59, 1466.92 examples/s]", "Generating train split", 1799,
     2230000, None),
    ("Preparing test set...:  37%|███▋      | 25/67 [24:03<30:15, 43.23s/it]", "Preparing test set...", 1443, 25, 67),
    (" 99%|█████████▉| 23054/23316 [2:22:47<01:34,  2.79it/s]", "", 8567, 23054, 23316),
    ("  0%|          | 0/50000 [00:00<?, ?it/s]", "", 0, 0, 50000),
    ("Epoch 3:  50%|#####     | 5/10 [00:10<00:10,  2.00it/s, loss=0.31, v_num=2]", "Epoch 3", 10, 5, 10),
    # the bar lost in a paste; vLLM's worded bar
    ("      Class     Images  mAP@.5:.95:  72% 23/32 [01:07<00:25,  2.80s/it]", "Class Images mAP@.5:.95", 67, 23,
     32),
    ("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:03<00:03,  1.50s/it]",
     "Loading safetensors checkpoint shards", 3, 1, 2),
])
def test_a_bar_gives_what_it_was_doing_and_for_how_long(text: str, desc: str, elapsed: int, n: int,
                                                        total: int | None) -> None:
    (data,) = bars(text)
    assert data["desc"] == desc and data["elapsed_s"] == elapsed and data["n"] == n and data.get("total") == total


def test_the_last_state_of_a_redrawn_line_is_read_and_an_error_after_it_too() -> None:
    line = ("Map:  10%|█         | 10/100 [00:01<00:09, 10.00it/s]\rMap:  90%|█████████ | 90/100 [00:09<00:01, "
            "10.00it/s][E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL("
            "SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=60000) ran for 60081 milliseconds before "
            "timing out.")
    events = parse_line(make_line(line, Ref("x", 1), Origin()))
    (bar,) = [e for e in events if e.kind is Kind.PROGRESS_BAR]
    assert bar.data["n"] == 90 and bar.data["elapsed_s"] == 9 and bar.data["desc"] == "Map"
    assert Kind.WATCHDOG_TIMEOUT in {e.kind for e in events}


def test_an_error_line_that_holds_a_bar_is_still_never_silent() -> None:
    kinds = {e.kind for e in parse_line(make_line(
        "Loading:  50%|█████     | 1/2 [00:01<00:01,  1.00s/it] fatal: could not read shard 2", Ref("x", 1),
        Origin()))}
    assert kinds == {Kind.PROGRESS_BAR, Kind.ERROR_LINE}


@pytest.mark.parametrize("text", [
    "throughput 3.2 GB/s] done",  # a rate and a bracket, no time fields
    "[12:00, 5 apples/s]",  # time fields and a rate, nothing before them that counts
    "step 10 [00:05<00:10, 2.00it/s",  # cut before its closing bracket
])
def test_text_that_only_resembles_a_bar_is_not_one(text: str) -> None:
    assert bars(text) == []


_TIMEOUT = ("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=60000) ran for 60081 milliseconds before timing out.")


def test_a_log_of_bar_redraws_is_read_only_next_to_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    with path.open("w") as out:
        for i in range(1, 20001):
            clock = f"{i // 3600}:{i // 60 % 60:02d}:{i % 60:02d}"
            out.write(f"Epoch {i // 10000}: {i // 200}%|##| {i}/20000 [{clock}<00:00, 9.0it/s]\n")
        out.write(_TIMEOUT + "\n")
        for i in range(5):  # after the timeout: not what held the others
            out.write(f"Map: 50%|##| {i + 1}/10 [00:0{i}<00:05, 1.0it/s]\n")
    analysis = analyze_paths([str(path)])
    states = [e for e in analysis.collected.events if e.kind is Kind.PROGRESS_BAR]
    # the ten lines before the timeout are one bar's redraws: its last state is kept, the rest never parsed
    assert [(e.ref.line, e.data["n"]) for e in states] == [(20000, 20000)]


def test_bars_that_restart_next_to_timeouts_are_kept_beside_each_other_up_to_a_bound(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("".join(f"Map: 50%|#| 5/10 [00:0{9 - i % 10}<00:05, 1.0it/s]\n{_TIMEOUT}\n" for i in range(1000)))
    states = [e for e in analyze_paths([str(path)]).collected.events if e.kind is Kind.PROGRESS_BAR]
    assert 10 <= len(states) <= 32  # the first 32 timeouts of an input look back


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789:<>,.[]|% /sitMkGexampl?█\r")), max_size=200))
def test_any_text_is_read_without_raising(text: str) -> None:
    for event in parse(make_line(text, Ref("x", 1), Origin())):
        assert event.data["elapsed_s"] >= 0
