"""One small parser per log source; each turns a decoded line into events. Pure: no I/O.

Line parsers (``KEYWORDS`` + ``parse(line)``): :mod:`.torch_watchdog`, :mod:`.torch_detail`, :mod:`.gloo`,
:mod:`.c10d_store`, :mod:`.nccl_info`, :mod:`.nccl_warn`, :mod:`.nccl_tests`, :mod:`.torchrun`, :mod:`.launchers`, :mod:`.system`, :mod:`.gpu`, :mod:`.hosts`, :mod:`.ddp`,
:mod:`.traceback`, :mod:`.fr_trace`, :mod:`.ras` (a RAS listing's per-rank line), :mod:`.hccl`, :mod:`.coordination`
(XLA's coordination service), :mod:`.native` (a native stack's frame inside NCCL's teardown); :mod:`.bars` (progress bars, on the lines other anchors select and before a timeout); :mod:`.generic` keeps an error-looking line that none of them understood. Multi-line
blocks are read by followers (``follow(line)``): tracebacks, torchrun's failure table, desync reports, the
Flight Recorder analyser's report,
``py-spy dump`` stacks, the task names below a coordination-service barrier's timeout.
Whole-record parsers: :mod:`.flight_recorder`, :mod:`.watch_events`, :mod:`.ras`. Line prefixes and file
names: :mod:`.prefixes`.
"""

from __future__ import annotations

import re
from dataclasses import replace

from syncdoctor.analyze.model import Event, Kind, Origin, Ref
from syncdoctor.analyze.parsers import (
    bars,
    c10d_store,
    coordination,
    ddp,
    fr_trace,
    generic,
    gloo,
    gpu,
    hccl,
    horovod,
    hosts,
    launchers,
    native,
    nccl_info,
    nccl_tests,
    nccl_warn,
    pyspy,
    ras,
    remote,
    system,
    torch_detail,
    torch_watchdog,
    torchrun,
    traceback,
    training,
)
from syncdoctor.analyze.parsers.base import Follower, Line
from syncdoctor.analyze.parsers.prefixes import clean, split_prefix

__all__ = ["LINE_PARSERS", "LOOK_ABOVE", "make_line", "parse_line", "start_followers"]

LINE_PARSERS = (torch_watchdog, torch_detail, gloo, c10d_store, nccl_info, nccl_warn, nccl_tests, torchrun, launchers,
                system, gpu, traceback, training, horovod, remote, hosts, ddp, fr_trace, ras, hccl, coordination, native)
_FOLLOWS = (traceback.follow, torchrun.follow, torch_detail.follow, launchers.follow, launchers.follow_mpi,
            nccl_warn.follow, torch_watchdog.follow, pyspy.follow, pyspy.follow_faulthandler, gloo.follow, horovod.follow, fr_trace.follow,
            coordination.follow)
# events that the lines above their own complete, where a paste left out the block's head: (whether an event wants
# them, how it reads them: the event's line, the event, the same writer's lines above it nearest first -> the
# event's replacement, or nothing to keep it as it is)
LOOK_ABOVE = ((traceback.wants_frames, lambda line, _event, above: traceback.headless(line, above)),
              (remote.wants_actor_fields, remote.actor_fields),
              (torchrun.wants_record_fields, torchrun.record_fields))
MAX_PARSE = 4096  # characters of a line handed to the parsers: its head and its tail where it is longer
_ELIDED = " … "
_WHAT = re.compile(r"^what\(\): +")
_PG_RANK = re.compile(r"\[(?:PG [^\]]{0,200}? )?Rank (?P<rank>\d{1,7})\]")
_NCCL_INFO_WORDS = re.compile("|".join(re.escape(k) for k in nccl_info.KEYWORDS))


def make_line(text: str, ref: Ref, file_origin: Origin) -> Line:
    """A :class:`Line` from decoded text: prefixes split off, origin completed from the file's."""
    text = clean(text.rstrip("\r\n"))
    if len(text) > MAX_PARSE:  # the head holds the writer's prefix; an error after a long run of output (a
        # progress bar's redraws, a list of tensors) is in the tail
        half = (MAX_PARSE - len(_ELIDED)) // 2
        text = text[:half] + _ELIDED + text[-half:]
    prefix = split_prefix(text)
    origin = prefix.origin
    if origin.rank is None and prefix.body.lstrip().startswith(("[", "what():")):
        # ProcessGroupNCCL's "[Rank 3] …" / "[PG 0 (…) Rank 3] …", also as std::terminate's "what():  [Rank 3] …"
        own = _PG_RANK.match(_WHAT.sub("", prefix.body.lstrip(), count=1))
        if own:
            origin = replace(origin, rank=int(own["rank"]))
    return Line(
        text=text,
        body=prefix.body,
        ref=ref,
        origin=origin.filled_from(file_origin),
        time=prefix.time,
        time_text=prefix.time_text,
        severity=prefix.severity,
        glog_file=prefix.glog_file,
    )


_KEYWORDS = tuple((parser, re.compile("|".join(re.escape(k) for k in parser.KEYWORDS))) for parser in LINE_PARSERS)


# what parsers read from a line that may be an error's too: where things are, how they are configured
_FACTS = frozenset({
    Kind.STORE_ENDPOINT, Kind.NCCL_ENV, Kind.NCCL_VERSION, Kind.NCCL_BOOTSTRAP, Kind.NCCL_NET, Kind.NCCL_INIT,
    Kind.NCCL_INIT_START, Kind.NCCL_CHANNEL, Kind.PROCESS_MAP, Kind.GPU_PCI, Kind.WORK_PHASE, Kind.TRAINING_DONE,
})


def parse_line(line: Line) -> list[Event]:
    """Every event any parser finds in ``line``."""
    body = line.body
    if " NCCL INFO " in body:  # NCCL's chatter: only the INFO parser can use it
        return nccl_info.parse(line) if _NCCL_INFO_WORDS.search(body) else []
    if traceback.is_frame(body):
        return []  # a traceback's frame (also one whose ``File "`` a wrap cut): its follower reads it, nothing else
    events: list[Event] = []
    for parser, keywords in _KEYWORDS:
        if keywords.search(body):
            events.extend(parser.parse(line))
    if len(events) > 1:
        events = _writer_shared(line, events)
    # a progress bar drawn just before an error on the same line (its last state: what was still running)
    bar = bars.bar_events(line)
    # never silent: an error-looking line nothing else understood is kept as such (the A028 fallback), and so is one
    # that other parsers only read a fact from (a launcher's ``Error: failed to run torchrun … --master_addr=…``: the
    # store's address); a progress bar on the line is no explanation of an error after it
    if events and not all(e.kind in _FACTS for e in events):
        return events + bar
    return events + bar + generic.parse(line)


def _writer_shared(line: Line, events: list[Event]) -> list[Event]:
    """NCCL's ``host:pid:tid [dev]`` prefix is read by its WARN parser, not as the line's prefix: the events other
    parsers find in the same WARN's message (a CUDA error, a peer that closed) were written by that process too."""
    told = next((e.origin for e in events if e.kind is Kind.NCCL_WARN and e.origin != line.origin), None)
    if told is None:
        return events
    return [replace(e, origin=told) if e.origin == line.origin else e for e in events]


def start_followers(line: Line) -> list[Follower]:
    """Followers for the multi-line blocks that ``line`` opens (usually none)."""
    followers: list[Follower] = []
    for follow in _FOLLOWS:
        follower = follow(line)
        if follower is not None:
            followers.append(follower)
    return followers
