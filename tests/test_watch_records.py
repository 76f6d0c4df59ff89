"""Records, stacks and settings: compact encodings round-trip, bad input is rejected without a traceback."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from syncdoctor.errors import UsageError
from syncdoctor.watch.config import WatchConfig, env_name
from syncdoctor.watch.events import CODES, Event
from syncdoctor.watch.records import (
    HAS_STEP,
    HEADER_FIELDS,
    HEADER_GROUPS,
    HEADER_SIZE,
    INSPECTED,
    OVERFLOW,
    P2P,
    RECORD_VERSION,
    Frame,
    GroupProgress,
    P2PProgress,
    RankRecord,
    Signature,
    StackReport,
    StepMark,
    WaitSample,
    decode_header,
    decode_record,
    decode_stack,
    encode_record,
    encode_stack,
    format_ranks,
    group_id,
    parse_ranks,
    signature_crc,
)


def _record() -> RankRecord:
    sig = Signature("all_reduce", ((4, 5), ()), ("Float", "Float"), ((4, 5), ()))
    return RankRecord(
        rank=3, world_size=8, host="host1", node=1, pid=4242, local_rank=1, attempt=2, heartbeat=17,
        state="failed", source="flight_recorder", step=12, step_age_s=0.25, quiet_s=3.5,
        groups={"0": GroupProgress("0", 58, 57, 1.5, sig, 58), "7": GroupProgress("7", 3, 3)},
        step_marks=(StepMark(11, {"0": 55}), StepMark(12, {"0": 57, "7": 3})),
        waits=(WaitSample("0", 50, 0.4),), stack_gen=4, ack=6, error="RuntimeError: boom", fail_order=1,
        inspected={1234: "stopped"}, published=1700000000.125,
        p2p=(P2PProgress("0", 2, "recv", 5, 4, 0.75), P2PProgress("0", 4, "send", 5, 5), P2PProgress("3", -1, "recv", 1, 1)),
        read_age_s=0.125,
    )


def test_record_round_trip() -> None:
    record = _record()
    raw = encode_record(record)
    # compact: read for every rank every second (v7's per-slot stall and signature and the step: 532 bytes)
    assert HEADER_SIZE <= 540 and len(raw) - HEADER_SIZE < 360
    assert decode_record(raw) == record


@pytest.mark.parametrize(
    "raw",
    [None, b"", b"not json", b"[]", b'{"v": 2, "r": 1}', b"[2, 1]", b"[99" + b",0" * 22 + b"]",
     b'[2,"1",4,"h",0,1,0,0,1,"running","",{},null,0,null,[],[],0,0,null,null,{},0]',
     b'[2,1,4,"h",0,1,0,0,1,"running","",{"0":[1]},null,0,null,[],[],0,0,null,null,{},0]',
     b"[2,1,4,\"h\",0,1,0,0,1,\"running\",\"\",{},3,0,null,[[3,[1]]],[],0,0,null,null,{},0]"],
)
def test_bad_records_are_ignored(raw: bytes | None) -> None:
    assert decode_record(raw) is None


def test_stack_round_trip_and_summary() -> None:
    frames = (Frame("/a/train.py", 10, "main"), Frame("/a/data.py", 88, "load_batch"))
    report = StackReport(3, 2, frames, frames[1], "", 12.5)
    assert decode_stack(encode_stack(report)) == report
    assert report.summary() == "load_batch (data.py:88)"
    assert StackReport(3, 2, note="record stale").summary() == "record stale"
    assert decode_stack(b"{") is None


@given(st.sets(st.integers(min_value=0, max_value=5000), max_size=60))
def test_rank_ranges_round_trip(ranks: set[int]) -> None:
    assert parse_ranks(format_ranks(ranks)) == tuple(sorted(ranks))


def test_rank_ranges_are_compact() -> None:
    assert format_ranks(range(4096)) == "0-4095"
    assert format_ranks([0, 1, 2, 3, 7, 9, 10]) == "0-3,7,9-10"
    with pytest.raises(ValueError):
        parse_ranks("5-2")


def test_signature_text() -> None:
    assert Signature("all_reduce", ((1000,),), ("Float",)).short() == "all_reduce float[1000]"
    assert Signature("barrier").short() == "barrier"
    assert Signature.from_json("nope") is None


def test_config_layers_defaults_env_then_arguments() -> None:
    env = {"SYNCDOCTOR_WATCH_WARN_AFTER": "4.5", "SYNCDOCTOR_WATCH_FAIL_FAST": "yes",
           "SYNCDOCTOR_WATCH_MONITOR": "2", "SYNCDOCTOR_WATCH_EVENTS_FILE": "/tmp/e.jsonl"}
    config = WatchConfig.load(env, warn_after_s=6.0, interval_s=None)
    assert config.warn_after_s == 6.0 and config.fail_fast is True and config.monitor == "2"
    assert config.interval_s == 1.0 and config.events_file == "/tmp/e.jsonl"
    assert env_name("warn_after_s") == "SYNCDOCTOR_WATCH_WARN_AFTER"
    assert config.suspect_s == 2.0 and WatchConfig(warn_after_s=3).suspect_s == 1.5
    assert WatchConfig(dead_after_s=1, interval_s=1).dead_s == 3


@pytest.mark.parametrize(
    "env",
    [{"SYNCDOCTOR_WATCH_WARN_AFTER": "soon"}, {"SYNCDOCTOR_WATCH_FAIL_FAST": "perhaps"},
     {"SYNCDOCTOR_WATCH_RECORDER": "magic"}, {"SYNCDOCTOR_WATCH_MONITOR": "rank0"}],
)
def test_config_bad_environment_is_a_usage_error(env: dict[str, str]) -> None:
    with pytest.raises(UsageError):
        WatchConfig.load(env)


def test_config_unknown_argument() -> None:
    with pytest.raises(UsageError, match="unknown watch setting"):
        WatchConfig.load({}, warn_after=3)


def test_event_json_line_and_finding() -> None:
    sig = Signature("all_reduce", ((1000,),), ("Float",))
    event = Event("W101", "warning", "rank 3 is late", ranks=(3,), hosts=("host1",), group="0", seq=5,
                  signature=sig, waited_s=3.25, detail={"where": "load_batch (data.py:88)"}, key="k")
    data = json.loads(json.dumps(event.to_json()))
    assert data["kind"] == "late-rank" and data["ranks"] == [3] and data["signature"][0] == "all_reduce"
    line = event.line()
    assert line.startswith("syncdoctor W101 late-rank warning: rank 3 is late [")
    assert "where=load_batch(data.py:88)" in line and "waited=3.2s" in line
    assert "op=all_reduce:float[1000]" in line  # the op and its tensors stay apart (not all_reducefloat)
    finding = event.to_finding()
    assert finding.code == "W101" and finding.evidence["ranks"] == [3]
    assert set(CODES) == {f"W1{i:02d}" for i in range(1, 11)}


# --- binary screen header + detail ---------------------------------------------------------------------

_names = st.text(alphabet="0123456789abcdef_", min_size=1, max_size=6)
_seq = st.integers(min_value=0, max_value=2**40)
_group = st.builds(lambda e, c, s: (e, min(c, e), s), _seq, _seq,
                   st.one_of(st.none(), st.floats(min_value=0, max_value=1e5).map(lambda v: round(v, 3))))


@st.composite
def _records(draw: st.DrawFn) -> RankRecord:
    names = draw(st.lists(_names, unique=True, max_size=HEADER_GROUPS + 2))
    groups = {n: GroupProgress(n, *draw(_group)) for n in names}
    steps = sorted(draw(st.lists(st.integers(-5, 10**6), max_size=9)))
    marks = tuple(StepMark(s, {n: draw(_seq) for n in names if draw(st.booleans())}) for s in steps)
    waits = tuple(WaitSample(draw(st.sampled_from(names)) if names else "0", draw(_seq),
                             round(draw(st.floats(0, 1e4)), 3)) for _ in range(draw(st.integers(0, 12))))
    p2p = tuple(P2PProgress(draw(_names), draw(st.integers(-1, 2**31)), draw(st.sampled_from(("send", "recv"))),
                            *draw(_group)) for _ in range(draw(st.integers(0, 4))))
    return RankRecord(
        rank=draw(st.integers(0, 2**31 - 1)), world_size=draw(st.integers(1, 2**31 - 1)), host=draw(st.text(max_size=8)),
        node=draw(st.integers(-1, 99)), pid=draw(st.integers(0, 2**40)), heartbeat=draw(st.integers(0, 2**62)),
        state=draw(st.sampled_from(("starting", "running", "exited", "failed", "aborting"))),
        source=draw(st.sampled_from(("", "flight_recorder", "hooks"))), step=steps[-1] if steps else None,
        step_age_s=0.5 if steps else None, quiet_s=draw(st.one_of(st.none(), st.just(1.25))), groups=groups,
        step_marks=marks, waits=waits, stack_gen=draw(st.integers(0, 2**40)), ack=draw(st.integers(0, 2**40)),
        published=round(draw(st.floats(0, 2e9)), 3), waits_total=draw(st.integers(0, 2**40)), p2p=p2p,
        read_age_s=draw(st.one_of(st.none(), st.floats(0, 1e5).map(lambda v: round(v, 3)))),
    )


@given(_records())
def test_record_round_trip_any(record: RankRecord) -> None:
    raw = encode_record(record)
    assert decode_record(raw) == record
    head = decode_header(raw)
    assert head is not None and head[1] == record.rank and head[4] == record.heartbeat
    decoded = decode_record(raw)
    assert decoded is not None
    if _field(raw, "flags") & OVERFLOW:
        return
    # what the detector's bulk pass reads from the header is exactly what the decoded record says
    stall, sig_seq, crc = _field(raw, "stall_ms"), _field(raw, "sig_seq"), _field(raw, "sig_crc")
    for slot, progress in enumerate(decoded.groups.values()):
        assert stall[slot] == -1 if progress.stalled_s is None else stall[slot] / 1000 == progress.stalled_s
        assert sig_seq[slot] == progress.signature_seq and (crc[slot] != 0) == (progress.signature is not None)
        if progress.signature is not None:
            assert crc[slot] == signature_crc(progress.signature.to_compact())
    assert bool(_field(raw, "flags") & HAS_STEP) == (decoded.step is not None)
    assert decoded.step is None or _field(raw, "step") == decoded.step
    assert bool(_field(raw, "flags") & P2P) == bool(decoded.p2p)


def _field(raw: bytes, name: str) -> object:
    values = decode_header(raw)
    assert values is not None
    index = 0
    for field_name, _code, count in HEADER_FIELDS:
        if field_name == name:
            return values[index] if count == 1 else values[index:index + count]
        index += count
    raise KeyError(name)


def test_header_holds_the_screen_fields() -> None:
    record = _record()._replace(state="running", waits_total=9)
    raw = encode_record(record)
    assert raw[:4] == b"SDW" + bytes([RECORD_VERSION]) and len(raw) == HEADER_SIZE + _field(raw, "detail_len")
    assert _field(raw, "max_stall_ms") == 1500 and _field(raw, "waits_total") == 9
    assert _field(raw, "gid")[:2] == (group_id("0"), group_id("7")) and _field(raw, "ngroups") == 2
    assert _field(raw, "entered")[:2] == (58, 3) and _field(raw, "completed")[:2] == (57, 3)
    assert _field(raw, "mark_step")[:2] == (11, 12) and _field(raw, "nmarks") == 2
    pad = HEADER_GROUPS - 2  # per mark, one count per group slot
    assert _field(raw, "mark_entered")[:2 * HEADER_GROUPS] == (55, 0, *[0] * pad, 57, 3, *[0] * pad)
    assert _field(raw, "nwaits") == 1 and _field(raw, "wait_ms")[0] == 400
    assert _field(raw, "flags") == P2P | INSPECTED | HAS_STEP and _field(raw, "step") == 12
    assert _field(raw, "stall_ms")[:2] == (1500, -1) and _field(raw, "sig_seq")[:2] == (58, 0)
    assert _field(raw, "sig_crc")[0] & 1 and _field(raw, "sig_crc")[1] == 0
    assert _field(raw, "max_stall_ms") == 1500
    quiet = encode_record(record._replace(groups={"0": GroupProgress("0", 5, 5)}, step_marks=(), waits=(), p2p=()))
    assert _field(quiet, "max_stall_ms") == -1
    # a rank blocked in a receive is stalled too: the screen must send the cycle to the full detector
    blocked = record._replace(groups={"0": GroupProgress("0", 5, 5)}, p2p=(P2PProgress("0", 1, "recv", 3, 2, 2.5),))
    assert _field(encode_record(blocked), "max_stall_ms") == 2500


def test_header_overflow_flag() -> None:
    base = _record()._replace(step_marks=(), waits=())
    many = {str(i): GroupProgress(str(i), 1, 1) for i in range(HEADER_GROUPS + 1)}
    assert _field(encode_record(base._replace(groups=many)), "flags") & OVERFLOW
    assert not _field(encode_record(base._replace(groups=dict(list(many.items())[:HEADER_GROUPS]))), "flags") & OVERFLOW
    repeated = (StepMark(3, {"0": 5}), StepMark(3, {"0": 6}))
    assert _field(encode_record(base._replace(step_marks=repeated)), "flags") & OVERFLOW
    foreign_group = (StepMark(3, {"9": 5}),)
    assert _field(encode_record(base._replace(step_marks=foreign_group)), "flags") & OVERFLOW
    huge = {"0": GroupProgress("0", 2**33, 2**33)}
    raw = encode_record(base._replace(groups=huge))
    assert _field(raw, "flags") & OVERFLOW and decode_record(raw).groups["0"].entered == 2**33  # type: ignore[union-attr]


def test_v3_truncated_foreign_and_old_values_are_not_reporting() -> None:
    raw = encode_record(_record())
    for cut in range(len(raw)):
        assert decode_record(raw[:cut]) is None and decode_header(raw[:cut]) is None
    assert decode_record(b"SDW\x02" + raw[4:]) is None  # another version
    assert decode_record(b"SDW\x04" + raw[4:]) is None  # v4 (no point-to-point channels)
    assert decode_record(b"XXXX" + raw[4:]) is None
    assert decode_record(raw + b" ") is None  # length disagrees with the header
    assert decode_record(raw[:HEADER_SIZE] + b"{" + raw[HEADER_SIZE + 1:]) is None  # detail does not parse
    old = b'[2,1,4,"h",0,1,0,0,1,"running","",{},null,0,null,[],[],0,0,null,null,{},0]'
    assert decode_record(old) is None and decode_record(raw.decode("latin-1")) is None
