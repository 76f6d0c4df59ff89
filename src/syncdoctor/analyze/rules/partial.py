"""Late ranks read from partial evidence: what a paste shows when no rank's sequence numbers or dumps do. Pure.

Each reading names what the lines can support and no more, at a confidence below the sequence numbers and
dumps of :mod:`.progress` (which calls these):

- ``py-spy dump`` stacks: a main thread outside any collective while others wait in one;
- a run-it-first helper (``torch_distributed_zero_first``, ``main_process_first``) whose barrier timed out:
  rank 0 was still running the block;
- Horovod's stall inspector: the ranks that never submitted the tensors the others wait on;
- torchrun's exit barrier: this node finished, another did not;
- timeouts that carry no rank at all: another rank never arrived, which one is not in the inputs;
- an NCCL RAS report that sees every communicator running (no rank is missing).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import replace

from syncdoctor.analyze.model import Category, Event, Evidence, Hypothesis, Kind, Ref
from syncdoctor.analyze.parsers.gloo import is_loopback
from syncdoctor.analyze.rules.common import (
    MAX_CASCADE,
    after_stamp,
    attribute,
    continuation,
    evidence_of,
    fmt_ranks,
    hypothesis,
    look_at,
)
from syncdoctor.analyze.timeline import TIMEOUT_KINDS, Timeline

__all__ = [
    "bar_words",
    "blocked_in_io",
    "busy_bar",
    "busy_phase",
    "connect_timed_out",
    "from_exit_barrier",
    "from_horovod",
    "from_rankless",
    "from_runs_first",
    "from_stacks",
    "ras_all_launched",
    "timed_out_forming",
]


# helpers that let one process run a block first while the others wait in a barrier: YOLOv5/v6/v8's
# torch_distributed_zero_first, transformers' and accelerate's main_process_first / local_main_process_first;
# seen in a traceback's frame ("in main_process_first") and in its code lines ("….main_process_first(")
_FIRST_HELPER = r"(?:zero|main_process|rank_zero|master|leader)_first"
_RUNS_FIRST = re.compile(rf"\bin (?:\w*_)?{_FIRST_HELPER}\b")
_CALLS_FIRST = re.compile(rf"\b(?:\w+_)?{_FIRST_HELPER}\(")


def _in_runs_first(stack: Event) -> bool:
    """A traceback cut before its error that stands in a run-it-first helper's barrier: a collective inside the
    helper, or the paste ends entering the helper (``with args.main_process_first(…):`` then contextlib's
    ``__enter__``, where the others wait)."""
    frames = list(stack.data.get("frames") or ())
    sources = list(stack.data.get("sources") or ())
    if stack.data.get("collective") and any(_RUNS_FIRST.search(f) for f in frames):
        return True
    entering = len(frames) >= 2 and "contextlib" in frames[-1] and "enter" in frames[-1]
    return entering and len(sources) >= 2 and bool(_CALLS_FIRST.search(sources[-2]))


_FORMING = ("init_process_group", "new_group", "_store_based_barrier", "_new_process_group_helper")


def timed_out_forming(event: Event) -> bool:
    """A timeout raised while the process group was being formed (``init_process_group`` waiting in its store
    for the other ranks): the group never formed, a rendezvous that did not gather everyone, not a collective."""
    message = str(event.data.get("message", ""))
    if connect_timed_out(message):
        return False  # (ETIMEDOUT's own words: a connection to the store that no answer came to, not a wait)
    return event.data.get("collective") in _FORMING and ("imeout" in message or "timed out" in message.lower())


# the error a connect() that got no answer raises, strerror(ETIMEDOUT) alone (TCPStore's client in PyTorch 1.x:
# ``RuntimeError: Connection timed out``): the store's address dropped the connection's packets
_CONNECT_TIMED_OUT = re.compile(r"\s*(?:\[Errno 110\] )?Connection timed out\s*$")


def connect_timed_out(message: str) -> bool:
    """An exception's message that is strerror(ETIMEDOUT) alone: a connection opened to no answer."""
    return "onnection timed out" in message and _CONNECT_TIMED_OUT.match(message) is not None


def _timed_out_in_collective(event: Event, tl: Timeline | None = None) -> bool:
    """A traceback raised by a collective (or barrier) that timed out waiting for the others; with the timeline,
    the timeout may be said on the lines right after the exception's (``NPU error, error code is 107020``, then
    ``hccl fftsplus task timeout occurred``)."""
    message = str(event.data.get("message", ""))
    if tl is not None:
        message += " " + " ".join(e.text for e in continuation(tl, event))
    return bool(event.data.get("collective")) and ("imeout" in message or "timed out" in message.lower()) and \
        not timed_out_forming(event)


def from_horovod(tl: Timeline) -> list[Hypothesis]:
    """Horovod's stall inspector: the ranks it lists missing, or those absent from every tensor's ready list;
    tensors whose ready ranks do not overlap were submitted by different ranks instead (a desync)."""
    events = [e for e in tl.of(Kind.MONITORED_BARRIER) if e.data.get("source") == "horovod"]
    if not events:
        return []
    tensors = [t for e in events for t in e.data.get("tensors") or ()]
    if not tensors:
        return _horovod_stall_unlisted(tl, events)
    missing = sorted({int(r) for t in tensors for r in t.get("missing") or ()})
    ready_sets = {tuple(t["ready"]) for t in tensors if t.get("ready")}
    evidence = evidence_of(events, "Horovod's stall inspector", MAX_CASCADE)
    what = ("Horovod's stall inspector lists the tensors some ranks submitted for a collective while others did not "
            "for over a minute: the ranks that did not are late (or stuck), unless they submitted other tensors.")
    if not missing and len(ready_sets) > 1:
        groups = sorted(ready_sets, key=len)
        if any(not set(a) & set(b) for a in groups for b in groups if a != b):
            odd = sorted(groups[0])
            title = (f"collective desync: Horovod's stall inspector shows rank{'s' if len(odd) > 1 else ''} "
                     f"{fmt_ranks(odd)} submitting other tensors than the rest")
            return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.75, title, culprits=odd, what=what,
                               evidence=evidence,
                               fix="Make every rank submit the same tensors in the same order (no rank-dependent "
                                   "branch around allreduce/broadcast; the same number of batches per rank).")]
    lacks: dict[int, set[str]] = {}  # rank -> the tensors it has not submitted (that other ranks did)
    for t in tensors:
        for rank in t.get("missing") or ():
            lacks.setdefault(int(rank), set()).add(str(t.get("tensor") or ""))
    if any(lacks[a] - lacks[b] and lacks[b] - lacks[a] for a in lacks for b in lacks if a < b):
        # two ranks each lack a tensor the other submitted: neither is merely late (a late rank lacks all that the
        # others submitted), the ranks are in different collectives (a rank-dependent branch around a broadcast, an
        # extra batch, tensors named automatically in a different order: ``broadcast.noname.3765`` on some ranks,
        # ``broadcast.noname.3873`` on others)
        ranks = sorted(lacks)
        sides = "; ".join(f"rank {r} lacks {sorted(lacks[r])[0]}" + (f" and {len(lacks[r]) - 1} more"
                                                                       if len(lacks[r]) > 1 else "")
                          for r in ranks[:4])
        title = (f"collective desync: Horovod's stall inspector shows ranks {fmt_ranks(ranks)} each waiting for a "
                 f"tensor another submitted ({sides})")
        return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.75, title, culprits=ranks, what=what, evidence=evidence,
                           fix="Make every rank submit the same tensors in the same order (no rank-dependent branch "
                               "around allreduce/broadcast, such as a check done on rank 0 only; the same number of "
                               "batches per rank).")]
    if not missing and ready_sets:  # the ranks not ready for every stalled tensor
        ready = set.intersection(*(set(r) for r in ready_sets))
        size = max(tl.stated_world_size or 0, max(max(r) for r in ready_sets) + 1)
        missing = sorted(set(range(size)) - ready)
    if not missing:
        return []
    waiting = sorted({r for rs in ready_sets for r in rs} - set(missing))
    title = (f"rank{'s' if len(missing) > 1 else ''} {fmt_ranks(missing)} never submitted the tensors the others "
             "wait on (Horovod's stall inspector)")
    return [hypothesis(tl, Category.LAGGING_RANK, 0.85, title, culprits=missing, affected=waiting, what=what,
                       evidence=evidence, fix=look_at(tl, [r for r in missing if r in tl.ranks])
                       if any(r in tl.ranks for r in missing) else None)]


def _horovod_stall_unlisted(tl: Timeline, events: list[Event]) -> list[Hypothesis]:
    """Horovod's stall warning without the list of tensors and ranks under it (a paste cut after its first line): some
    ranks wait for tensors others have not submitted; Horovod's own words put different tensors first."""
    title = ("Horovod's stall inspector: some ranks have waited over a minute for tensors the others did not submit "
             "(different tensors on different ranks, or some ranks late); the list that names them is not in the inputs")
    what = ("Horovod matches tensors by name across ranks. Its warning means the ranks did not submit the same ones: a "
            "rank-dependent branch, tensors named differently on each rank (a graph built differently, such as a "
            "batch-norm's conditional gradients), a different number of batches, or a rank that is late or stuck.")
    fix = ("Print the names each rank submits (or set HOROVOD_STALL_CHECK_TIME_SECONDS lower and keep the whole "
           "warning: its 'Missing ranks' list names who lacks what), and make every rank submit the same tensors in "
           "the same order.")
    return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.45, title, what=what, fix=fix,
                       evidence=evidence_of(events, "Horovod's stall inspector", 2))]


def from_exit_barrier(tl: Timeline) -> list[Hypothesis]:
    """torchrun's agent waits at an exit barrier for the agents of the other nodes once its own workers are done
    (``_exit_barrier`` in the traceback, then a store timeout): this node finished, another did not."""
    events = [e for e in tl.of(Kind.EXCEPTION, Kind.STACK_DUMP)
              if any("_exit_barrier" in str(f) for f in e.data.get("frames") or ())]
    if not events:
        return []
    where = attribute(events, tl)
    title = (f"the workers of {where.text or 'this node'} finished, but torchrun's exit barrier timed out: another "
             "node's workers were still running, hung or failed")
    what = ("When its workers are done, torchrun's agent waits for the agents of the other nodes at an exit barrier "
            "in the store. That wait ran out: another node never got there. Its own log says why (a worker still "
            "in a collective, a crash, an unreachable store).")
    fix = ("Read the other nodes' logs (torchrun --log-dir on each) for what their workers were doing; a longer exit "
           "barrier would only wait longer.")
    return [hypothesis(tl, Category.LAGGING_RANK, 0.35, title, hosts=where.hosts, what=what, fix=fix,
                       evidence=evidence_of(events, "torchrun's exit barrier", 3))]


def ras_all_launched(tl: Timeline) -> bool:
    """An NCCL RAS report says every communicator it saw is running with no error (no rank missing, dead or
    behind in its collective counts), covering every rank the inputs name."""
    rows = [e for e in tl.of(Kind.RAS) if e.data.get("issue") == "STATUS"]
    if not rows or any(e.data.get("errors") != "OK" or e.data.get("status") != "RUNNING" for e in rows):
        return False
    if any(e.data.get("issue") not in ("STATUS",) for e in tl.of(Kind.RAS)):
        return False
    size = max(int(e.data.get("ranks_per_comm") or 0) for e in rows)
    return bool(tl.ranks) and max(tl.ranks) < size


def from_runs_first(tl: Timeline) -> list[Hypothesis]:
    """Processes that timed out in the barrier of a run-it-first helper: the process that runs the block
    first (rank 0, or local rank 0 of each node) was still in it when the others gave up."""
    waits = [e for e in tl.of(Kind.EXCEPTION) if _timed_out_in_collective(e, tl) and
             any(_RUNS_FIRST.search(frame) for frame in e.data.get("frames") or ())]
    cut = [e for e in tl.of(Kind.STACK_DUMP) if e.data.get("source") == "traceback-cut" and _in_runs_first(e)]
    if not waits and cut:  # a paste cut inside such a traceback: in the barrier, why it raised is not shown
        waits = cut
    if not waits:
        return []
    names = [m[0][3:] for e in waits for f in e.data.get("frames") or () if (m := _RUNS_FIRST.search(f))]
    names += [m[0].rsplit(".", 1)[-1].rstrip("(") for e in waits for line in e.data.get("sources") or ()
              if (m := _CALLS_FIRST.search(line))]
    helper = names[0] if names else "a run-it-first helper"
    waiting = sorted({e.origin.rank for e in waits if e.origin.rank is not None})
    culprits = [] if 0 in waiting else [0]
    title = (f"rank 0 was still running {helper}'s block alone: "
             + (f"ranks {fmt_ranks(waiting)} " if waiting else "the other processes ")
             + "timed out in its barrier waiting for it")
    what = (f"{helper} lets one process (rank 0, or local rank 0 of each node) run the block first, for "
            "instance caching or checking a dataset, while the others wait in a barrier; that work took longer than "
            "the barrier's timeout.")
    fix = ("Do that work once before the job (cache the dataset), raise the timeout (init_process_group(timeout=...)), "
           "or let every rank do it; check that rank 0 did not fail inside the block (its own log).")
    if waits is cut:
        title = title.replace("timed out in its barrier waiting for it", "failed in its barrier waiting for it "
                              "(the traceback is cut before its error)")
    return [hypothesis(tl, Category.LAGGING_RANK, 0.45 if waits is cut else 0.55, title, culprits=culprits,
                       affected=waiting, what=what, fix=fix,
                       evidence=evidence_of(waits, "in the barrier", MAX_CASCADE))]


def _dumped_as_it_died(tl: Timeline) -> set[Ref]:
    """faulthandler's dumps that follow their process's fatal error (``Fatal Python error: Aborted``, ``…:
    Segmentation fault``, then each thread's stack, no other line read between them): where Python stood as it died
    (the watchdog's abort, a crash), not where a hung process waits."""
    above: dict[str, list[Event]] = {}  # per input, the events other than such dumps, in input order
    dumps = []
    for event in tl.events:
        if event.kind is Kind.STACK_DUMP and event.data.get("source") == "faulthandler":
            dumps.append(event)
        else:
            above.setdefault(event.ref.source, []).append(event)
    for events in above.values():
        events.sort(key=lambda e: e.ref.line)
    keys = {source: [e.ref.line for e in events] for source, events in above.items()}
    out = set()
    for dump in dumps:
        at = bisect.bisect_left(keys.get(dump.ref.source, []), dump.ref.line)
        last = above[dump.ref.source][at - 1] if at else None
        if last is not None and last.kind is Kind.FATAL_SIGNAL and last.origin.rank == dump.origin.rank:
            out.add(dump.ref)
    return out


_BATON = "file_baton.py"  # torch.utils.file_baton: the lock a JIT extension build holds in its build directory


def _build_lock(tl: Timeline, waiting: list[Event]) -> Hypothesis:
    """Processes whose stacks wait in torch.utils.file_baton's ``wait``: each waits for the lock file of a JIT
    extension's build (DeepSpeed's and apex's ops, built by torch.utils.cpp_extension) that another process holds,
    or that a build killed before it finished left behind: the job waits for a build, not for a peer."""
    where = attribute(waiting, tl)
    who = where.text or ("a process" if len(waiting) == 1 else f"{len(waiting)} processes")
    title = (f"{who} {'waits' if len(waiting) == 1 else 'wait'} for the lock of a JIT extension build (torch's "
             "FileBaton): another process builds it, or a build stopped before it finished left its lock behind")
    what = ("torch.utils.cpp_extension builds an extension once per build directory, behind a lock file there; every "
            "other process waits for that file to go. A build that was killed or crashed (a job cancelled while "
            "DeepSpeed compiled its ops) leaves it behind, and every later run waits forever at start-up.")
    fix = ("Delete the stale `lock` file in the extension's build directory (TORCH_EXTENSIONS_DIR, by default "
           "~/.cache/torch_extensions/<python and CUDA>/<extension>/), or build the ops ahead of time (DS_BUILD_OPS=1 "
           "pip install deepspeed); give each node its own TORCH_EXTENSIONS_DIR on a shared file system.")
    return hypothesis(tl, Category.UNRECOGNISED, 0.6, title, what=what, fix=fix, where=where,
                      evidence=_stack_evidence(waiting, "waiting for the build's lock in"))


def from_stacks(tl: Timeline) -> list[Hypothesis]:
    """Stack dumps of hung processes (``py-spy dump``, faulthandler's): a main thread outside any collective while
    others wait in one is the process they wait for, and its stack says where it is stuck. One dump per process
    (the last)."""
    last: dict[tuple[object, ...], Event] = {}
    timed_out = tl.of(*TIMEOUT_KINDS)
    died = _dumped_as_it_died(tl)
    for event in tl.of(Kind.STACK_DUMP):
        if event.ref in died:
            continue  # (at the watchdog's abort, its collectives had run on asynchronously from where Python stood)
        key = (event.origin.host, event.origin.pid) if event.origin.pid is not None else (event.ref.source, event.ref.line)
        last[key] = event
    stacks = list(last.values())
    baton = [e for e in stacks if any(_BATON in str(f) for f in e.data.get("frames") or ())
             and e.data.get("source") != "traceback-cut"]
    if baton:
        return [_build_lock(tl, baton)]
    waiting = [e for e in stacks if e.data.get("collective")]
    # a traceback cut before its error says where it stood, but not that it was hung there: only a dump does
    elsewhere = [e for e in stacks if not e.data.get("collective") and not e.data.get("backward")
                 and e.data.get("source") != "traceback-cut"]
    ops = sorted({str(e.op) for e in waiting})
    if elsewhere:
        late = attribute(elsewhere, tl)
        if not waiting:  # the others' own timeouts say they waited, and in what
            waiting = [e for e in timed_out if e.origin.rank is None or e.origin.rank not in late.ranks]
            ops = sorted({str(e.op) for e in waiting if e.op})
        held = attribute(waiting, tl) if waiting else None
        who = late.text or ("a process" if len(elsewhere) == 1 else f"{len(elsewhere)} processes")
        stuck = str(elsewhere[0].data.get("where") or "")
        if waiting:
            confidence = 0.8
            title = (f"{who} never reached the collective: its main thread was in {stuck} while "
                     f"{held.text if held and held.text else f'{len(waiting)} process(es)'} waited in {', '.join(ops)}")
        else:
            confidence = 0.35
            title = (f"{who} was outside any collective, in {stuck}: if the others wait in one, it is the process "
                     "they wait for")
        what = ("The stack dumps (py-spy's, faulthandler's) show where each main thread stood: a process that is not "
                "inside a collective while the others wait in one holds them all up. Its frames say what it does "
                "instead: a DataLoader that no longer delivers, I/O, work only that rank does, or a lock.")
        fix = ("Look at that frame: a hung DataLoader worker (num_workers=0 to confirm), a file system or network "
               "call, a rank-dependent branch. Dump every rank next time (py-spy dump --pid on each), or run "
               "syncdoctor watch, which names the late rank and its stack while it hangs.")
        return [hypothesis(tl, Category.LAGGING_RANK, confidence, title, culprits=late.ranks, hosts=late.hosts,
                           processes=late.processes, local_ranks=late.local_ranks,
                           affected=held.ranks if held else (), what=what, fix=fix,
                           evidence=_stack_evidence(elsewhere, "outside any collective, in")
                           + _stack_evidence(waiting, "waiting in"))]
    if len(ops) > 1:
        title = f"the processes wait in different collectives ({', '.join(ops)}), by their stack dumps"
        what = ("Every dumped main thread is inside a collective, not all in the same one: they called different "
                "collectives (a rank-dependent branch, a different number of steps), or each waits in another group "
                "for a process not dumped.")
        return [hypothesis(tl, Category.COLLECTIVE_DESYNC, 0.5, title, what=what,
                           evidence=_stack_evidence(waiting, "waiting in", MAX_CASCADE * 2))]
    dumped = [e for e in waiting if e.data.get("source") != "traceback-cut"]
    if dumped:  # every dump waits in the same operation: whom it waits for is not among them
        held = attribute(dumped, tl)
        p2p = ops[0] in ("send", "recv", "isend", "irecv")
        title = (f"{held.text or ('a process' if len(dumped) == 1 else f'{len(dumped)} processes')} "
                 f"{'waits' if len(dumped) == 1 else 'wait'} in {ops[0]} ({'its stack dump' if len(dumped) == 1 else 'their dumps'}): "
                 + ("the peer never posted the matching receive or send" if p2p else
                    "another member never entered it") + ", and it is not among the dumps")
        what = ("Every dumped main thread is blocked in the same operation, so the process it waits for is one that "
                "was not dumped: " + ("in a pipeline, the stage on the other side of this send or receive, which "
                                      "is itself stuck or took another branch." if p2p else
                                      "a member of the group doing something else."))
        fix = ("Dump every rank of the group (py-spy dump --pid on each), or run syncdoctor watch, which names the "
               "process the others wait for and its stack.")
        return [hypothesis(tl, Category.LAGGING_RANK, 0.3, title, what=what, fix=fix, affected=held.ranks,
                           evidence=_stack_evidence(dumped, "waiting in", MAX_CASCADE))]
    return []


def _stack_evidence(stacks: list[Event], label: str, limit: int = MAX_CASCADE) -> list[Evidence]:
    return [item for event in stacks[:limit] for item in evidence_of(
        [event], f"{label} {event.op + ' at ' if event.op else ''}{event.data.get('where', '')}", 1)]


def from_rankless(tl: Timeline) -> list[Hypothesis]:
    """Timeouts whose rank the paste does not show (a watchdog or gloo line copied without its prefix, a
    collective's traceback): a collective cannot time out without another member, so some other process never
    arrived. The lowest confidence of the lagging-rank hypotheses: nothing says which."""
    timeouts = [e for e in tl.unattributed if e.kind in TIMEOUT_KINDS or
                (e.kind is Kind.EXCEPTION and _timed_out_in_collective(e)) or
                (e.kind is Kind.STORE_ERROR and e.data.get("what") == "wait")]
    if not timeouts:
        return []
    calls = sorted({("the store, for a key another rank sets" if e.kind is Kind.STORE_ERROR else
                     f"{e.op or e.data.get('collective') or 'a collective'}")
                    + (f" (SeqNum {e.seq})" if e.seq is not None else "") for e in timeouts})
    where = attribute(timeouts, tl)
    waiter = where.text or ("a process" if len(timeouts) == 1 else "processes")
    title = (f"another rank never arrived: {waiter} timed out waiting in {', '.join(calls[:2])}, and the "
             "inputs say neither which rank waited nor which one was missing")
    what = (f"{waiter[:1].upper()}{waiter[1:]} waited in {', '.join(calls[:2])} until the timeout. A collective "
            "only times out while another member has not arrived, and a rank that never arrives has no error to "
            "report: most often rank 0 working alone (evaluation, tokenising or caching data, writing a "
            "checkpoint) longer than the timeout. These lines carry no rank: every rank's full log would say "
            "which one it was.")
    fix = ("Collect every rank's log with its rank (torchrun --tee 3 --log-dir, or srun --label) and the Flight "
           "Recorder dumps (TORCH_NCCL_DUMP_ON_TIMEOUT=1); if rank 0 works alone before this collective, do that "
           "work before init_process_group or on every rank, or raise the timeout.")
    awaited = sorted({int(e.data["group_peer"]) for e in timeouts if e.data.get("group_peer") is not None})
    if awaited:  # Ascend HCCL's EI0002 names the peer whose signal never came, by its rank in that group
        title = (f"another rank never arrived: {waiter} timed out waiting for remote rank "
                 f"{', '.join(map(str, awaited[:4]))} of its group (HCCL's numbering in that group, which may be a "
                 "sub-group of the job)")
        what += (f" HCCL says which peer it waited for: remote rank {', '.join(map(str, awaited[:4]))} of the "
                 "communication group, whose own log says what it was doing (an error before, a slow compile, a "
                 "step the others did not take).")
    peers = sorted({str(e.data["peer_addr"]) for e in timeouts if e.data.get("peer_addr")})
    hosts: tuple[str, ...] = ()
    if peers:  # gloo's pair timeout (sync mode) names the address of the process that never sent or read its part
        title = (f"another rank never arrived: {waiter} timed out waiting for the process at "
                 f"{', '.join(peers[:4])} (gloo's connection to it), and the inputs do not say which rank that is")
        what += (f" gloo says whom it waited for: the process at {', '.join(peers[:4])}, whose own log says what it "
                 "was doing (an error before, fewer batches than the others, a step the others did not take).")
        hosts = tuple(p for p in peers if not is_loopback(p))
    if all(_VLLM_WORKER.match(after_stamp(e)) for e in timeouts):
        # vLLM's workers print behind their prefix and its driver (the main process, local rank 0 of the engine)
        # without one: workers that timed out waited for the driver, whose own timeout is not among them
        workers = f"its worker{'s' if len(timeouts) > 1 else ''}" + (f" ({where.text})" if where.text else "")
        title = (f"vLLM's driver (local rank 0) never arrived: {workers} timed out waiting in {', '.join(calls[:2])}, "
                 "and the driver, whose lines carry no worker prefix, reports no timeout")
        what += (" vLLM's driver runs in the main process without a worker prefix and does work of its own (loading, "
                 "profiling, building caches) between the collectives its workers wait in.")
        return [hypothesis(tl, Category.LAGGING_RANK, 0.3, title, what=what, fix=fix, local_ranks=(0,),
                           processes=("vLLM's driver (local rank 0)",),
                           evidence=evidence_of(timeouts, "a worker timed out waiting", MAX_CASCADE))]
    category = Category.LAGGING_RANK
    if not awaited and not peers and not any(e.kind is Kind.STORE_ERROR for e in timeouts):
        # a collective's timeout and nothing else: whether a member never arrived or all of them entered and the
        # transport hung, the lines do not say (as where they name the rank that timed out: rules.progress)
        category = Category.UNEXPLAINED_TIMEOUT
        held = "it" if waiter == "a process" or len(timeouts) == 1 else "them"
        title = (f"{waiter} timed out waiting in {', '.join(calls[:2])}, and the inputs say neither which rank waited "
                 f"nor which rank or link held {held} up (most often a rank that never arrived)")
    return [hypothesis(tl, category, 0.3, title, what=what, fix=fix, hosts=hosts or None,
                       evidence=evidence_of(timeouts, "timed out waiting", MAX_CASCADE))]


# the prefixes vLLM's (0.4-0.7) worker processes print behind; its driver, the engine's own process and local rank 0,
# prints none (from 0.8 every worker, rank 0 too, is a process of its own with a prefix naming its rank)
_VLLM_WORKER = re.compile(r"\s*\((?:VllmWorkerProcess|RayWorkerWrapper|RayWorkerVllm) [^)]*pid=\d+")


def _waited_s(event: Event) -> float | None:
    """How long a timed-out wait lasted: the watchdog's ``ran for``, else the timeout it names."""
    for key in ("ran_ms", "timeout_ms", "ms"):
        value = event.data.get(key)
        if isinstance(value, int) and value > 0:
            return value / 1000
    return None


_EARLY_SEQ = 16  # collectives a job runs before its training loop (the barriers and broadcasts of its setup)
_DEFAULT_TIMEOUTS_S = (600.0, 1800.0)  # PyTorch's default collective timeouts: NCCL's of recent releases, the older one


# a bar's words for work trainers do on the main process alone at any point of a job (an evaluation or a
# generation pass, a save): still running at the others' timeout, and running at least half as long as they
# waited, however much longer, it is what held them (a dataset's tokenisation belongs to the job's start: the
# early window above)
_SOLO_WORK = re.compile(r"[Ee]val|[Vv]alidat|[Gg]enerat|[Pp]redict|[Ss]aving|[Ii]nference")
# of those, a bar's words that name an evaluation as a word of their own (``Evaluating``, ``Eval``, ``Validation``,
# ``val``, ``Testing``): such a bar, unfinished just before the timeouts, is an evaluation phase however short its
# last redraw (busy_phase)
_EVAL_BAR = re.compile(r"^(?:[\w ]{0,20}\b)?(?:[Ee]val(?:uat(?:e|ing|ion))?|[Vv]al(?:id(?:at(?:e|ing|ion))?)?|[Tt]est(?:ing)?)\b")


# a framework's barrier that holds every process but the main one until it has done a piece of work alone (Accelerate's
# main_process_first / local_main_process_first, Transformers' and YOLO's torch_distributed_zero_first, Lightning's
# rank_zero_first): a traceback through it is a process that waited there for the main process
_FIRST_BARRIER = re.compile(r"\b(?:local_)?main_process_first\b|\b_goes_first\b|\bzero_first\b|\brank_zero_first\b")


def first_barrier_sources(tl: Timeline) -> set[str]:
    """The inputs holding a traceback that passes through such a barrier (its frames or their source lines)."""
    return {e.ref.source for e in tl.of(Kind.STACK_DUMP, Kind.EXCEPTION)
            if _FIRST_BARRIER.search(" ".join(str(x) for x in [*(e.data.get("frames") or ()),
                                                                *(e.data.get("sources") or ())]))}


def _first_lines(waits: list[Event]) -> dict[str, int]:
    """Each input's line of its first wait."""
    first: dict[str, int] = {}
    for event in waits:
        first[event.ref.source] = min(first.get(event.ref.source, event.ref.line), event.ref.line)
    return first


def busy_bar(tl: Timeline, waits: list[Event]) -> Event | None:
    """A progress bar that ran as long as the others waited: the process drawing it was working alone while
    they sat in the collective (tokenising, scanning a dataset, evaluating). Its elapsed time must be within
    [half, 1.25 times + a minute] of a wait in the same input; a bar running far longer is the training loop
    itself, one just started is not what held them. It must also have moved many times within the wait (an
    item in under a tenth of it): a loop of a few long steps last moved when its step ended. Failing that, a bar
    that moves so, unfinished and at least a minute into its work, drawn on the line of the first timeout of its
    input or within ten lines before it, when the others timed out in one of the job's first collectives (before
    any training loop), says its process was still preparing alone when they gave up (a dataset's second pass,
    begun after a first one the paste does not show); so does such a bar whose words name work done on the main
    process alone at any point of a job (an evaluation, a generation pass, a save) that ran at least half as long
    as they waited, however much longer (an evaluation of hours ends while the others wait out their timeout).
    Bars of the waiting ranks do not count."""
    waiting = {e.origin.rank for e in waits if e.origin.rank is not None}
    spans = [(e.ref.source, s) for e in waits if (s := _waited_s(e)) is not None]
    # a wait whose line does not say how long it lasted (cut by the paste: ``[Rank 1] Watchdog c``) lasted the
    # backend's default timeout most likely, which most jobs keep: NCCL's 10 minutes in recent releases, 30 before
    # (and gloo's)
    assumed = [(e.ref.source, s) for e in waits if _waited_s(e) is None for s in _DEFAULT_TIMEOUTS_S]
    first = _first_lines(waits)
    best = None
    running = None  # a bar still running as the others timed out, drawn on the line of the first timeout or just before
    # ... in a job that had not begun its training loop: the others timed out in one of its first collectives, so a
    # training loop's own bar (stuck with its process, its last redraw long before) cannot be the one
    early = any(e.seq is not None and e.seq <= _EARLY_SEQ for e in waits) and all(e.seq is None or e.seq <= _EARLY_SEQ
                                                                                  for e in waits)
    # ... or whose waits passed through a barrier that holds them until the main process has done its work alone
    barriers = first_barrier_sources(tl)
    early = early or any(e.ref.source in barriers for e in waits)
    for bar in tl.of(Kind.PROGRESS_BAR):
        if (bar.origin.rank if bar.origin.rank is not None else 0) in waiting:
            continue  # (a bar without a prefix is the main process's: rank 0's)
        elapsed = float(bar.data.get("elapsed_s") or 0)
        done = float(bar.data.get("n") or 0)
        if done < 2 or any(source == bar.ref.source and elapsed / done > span / 10 for source, span in spans):
            continue  # a slow outer loop (a training step per redraw) says when it last moved, not that it still does
        if any(source == bar.ref.source and 0.5 * span <= elapsed <= 1.25 * span + 60 for source, span in spans) \
                and (best is None or elapsed > float(best.data.get("elapsed_s") or 0)):
            best = bar
        unfinished = bar.data.get("total") is not None and done < float(bar.data.get("total") or 0)
        near = bar.ref.source in first and 0 <= first[bar.ref.source] - bar.ref.line <= 10
        if best is None and unfinished and near and not any(s == bar.ref.source for s, _ in spans) and any(
                source == bar.ref.source and 0.9 * span <= elapsed <= span + 60 and elapsed / done <= span / 10
                for source, span in assumed):
            best = bar  # (still drawn just before the first timeout, about a default timeout into its work)
        solo = _SOLO_WORK.search(str(bar.data.get("desc") or "")) is not None and \
            any(source == bar.ref.source and elapsed >= 0.5 * span for source, span in spans)
        if (early or solo) and unfinished and elapsed >= 60 and near:
            running = bar  # (the minute: not a bar that began as the others gave up)
    return best or running


def busy_phase(tl: Timeline, waits: list[Event]) -> Event | None:
    """A line saying a process was evaluating or writing a checkpoint among the last lines before the first
    timeout of its input (within ten lines), from no rank that waited: many trainers evaluate (pycocotools' COCO
    evaluation, a validation loop) and save on rank 0 alone while the others wait in the next collective."""
    waiting = {e.origin.rank for e in waits if e.origin.rank is not None}
    first = _first_lines(waits)

    def before(event: Event) -> bool:  # within ten lines before its input's first wait, from no rank that waited
        return event.ref.source in first and 0 < first[event.ref.source] - event.ref.line <= 10 and \
            (event.origin.rank is None or event.origin.rank not in waiting)

    near = [e for e in tl.of(Kind.WORK_PHASE) if before(e)]
    # an evaluation's own bar, unfinished, says the same (``Evaluating:   0%|…| 0/161 [00:00<?, ?batch/s]`` drawn by
    # rank 0 just before rank 1's timeout; its elapsed time is the last redraw pasted, not how long it ran)
    near += [replace(e, kind=Kind.WORK_PHASE, data={"phase": "evaluation", "desc": e.data.get("desc")})
             for e in tl.of(Kind.PROGRESS_BAR) if before(e) and _EVAL_BAR.search(str(e.data.get("desc") or ""))
             and (e.data.get("total") is None or float(e.data.get("n") or 0) < float(e.data["total"]))]
    return max(near, key=lambda e: e.ref.line, default=None)


def bar_words(bar: Event) -> str:
    """``“Running tokenizer on dataset”, 29:55 into it`` for a title."""
    elapsed = int(bar.data.get("elapsed_s") or 0)
    clock = f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}" if elapsed >= 3600 else \
        f"{elapsed // 60:02d}:{elapsed % 60:02d}"
    desc = str(bar.data.get("desc") or "").strip()
    return f"{'“' + desc[:60] + '”' if desc else 'a progress bar'}, {clock} into it"


_IO_STACK_BELOW = 40  # lines below a hung task's report in which its stack's frames name the filesystem
_KERNEL_THREADS = re.compile(r"^(?:kworker|kswapd|ksoftirqd|kcompactd|khugepaged|kthreadd|jbd2|migration|rcu_|"
                             r"xfsaild|md\d|dm[-_]|flush-|kauditd|khungtaskd|systemd|journald)")
_IO_FIX = ("Look at the filesystem those processes wait on: its server's health and load (nfsstat, the storage's "
           "own logs, `dmesg` for `not responding`), and what they do there: several ranks writing one file at once "
           "(a tokenizer, a checkpoint's metadata, a dataset's cache: let one rank write, the others wait at a "
           "barrier), hot files (datasets, Triton's and torch.compile's caches) better on local disk. "
           "`cat /proc/PID/stack` shows where a process waits; syncdoctor watch names the rank the others wait for.")


def blocked_in_io(tl: Timeline) -> list[Hypothesis]:
    """Processes the kernel shows stuck in uninterruptible sleep (state D): its hung-task report (``INFO: task
    python3:48213 blocked for more than 120 seconds.``), a ps row in state D whose wait channel is a network
    filesystem's (``1533  DNl  nfs_start_io_read``), such a frame of a stack; and a network filesystem's server the
    kernel lost (``nfs: server nas01 not responding, still trying``). A rank stuck there never reaches its next
    collective, and the others wait for it: the rank the others wait for, and why, where nothing else says more."""
    events = tl.of(Kind.IO_BLOCKED)
    if not events:
        return []
    frames = [e for e in events if e.data.get("via") == "frame"]
    tasks = [e for e in events if e.data.get("via") in ("hung-task", "ps")
             and not _KERNEL_THREADS.match(str(e.data.get("comm") or ""))]
    servers = [e for e in events if e.data.get("via") == "server-lost"]

    def fs_of(event: Event) -> str:
        if event.data.get("fs"):
            return str(event.data["fs"])
        below = [f for f in frames if f.ref.source == event.ref.source
                 and 0 < f.ref.line - event.ref.line <= _IO_STACK_BELOW and f.data.get("fs")]
        return str(below[0].data["fs"]) if below else ""

    out = []
    if tasks:
        where = attribute(tasks, tl)
        systems = sorted({fs for e in tasks if (fs := fs_of(e))})
        waits = sorted({str(e.data["wchan"]) for e in tasks if e.data.get("wchan")})
        longest = max((int(e.data["seconds"]) for e in tasks if e.data.get("seconds")), default=0)
        who = where.text or ", ".join(f"{e.data.get('comm') or 'pid'} ({e.data['pid']})" if e.data.get("comm")
                                      else f"pid {e.data['pid']}" for e in tasks[:3])
        # (a hung task whose stack is not in the inputs may wait in a driver or on a lock as well as in file I/O)
        waiting = (f"waiting in file I/O on {' and '.join(systems)}" if systems else
                   "waiting in the kernel (file I/O, a driver or a lock: its stack says which)")
        title = (f"{who} {'was' if len(tasks) == 1 else 'were'} stuck in the kernel (uninterruptible sleep, state D)"
                 + (f" for more than {longest} s" if longest else "") + f", {waiting}"
                 + (f" ({', '.join(waits[:2])})" if waits else "")
                 + ": a rank stuck there never reaches its next collective, and the others wait for it")
        what = ("The kernel shows these processes in uninterruptible sleep (state D): waiting for I/O that does not "
                "complete, most often on a network filesystem whose server is slow or gone, or on a lock another "
                "process holds on the same file. They cannot even be killed until it completes; a rank in that state "
                "never reaches its next collective, so the others time out waiting for it.")
        confidence = 0.5 if any(e.data.get("via") == "hung-task" for e in tasks) else 0.4
        out.append(hypothesis(tl, Category.LAGGING_RANK, confidence + 0.05 * bool(servers), title,
                              culprits=where.ranks, hosts=where.hosts, processes=where.processes,
                              local_ranks=where.local_ranks, what=what, fix=_IO_FIX,
                              evidence=evidence_of(tasks, "stuck in the kernel", 6)
                              + evidence_of(frames[:2], "waiting in") + evidence_of(servers[:2], "the server lost")))
    elif servers:
        where = attribute(servers, tl)
        named = sorted({str(e.data["server"]) for e in servers})
        systems = sorted({str(e.data["fs"]) for e in servers})
        title = (f"the {' and '.join(systems)} server {', '.join(named[:2])} stopped answering"
                 + (f" {where.text}" if where.text else "") + ": processes reading or writing there block in the "
                 "kernel, and a rank blocked there never reaches its next collective")
        what = ("The kernel lost its filesystem's server (NFS's `not responding, still trying`, Lustre's connection "
                "to a target lost): on a hard mount every read and write there waits until it answers again, so a "
                "rank loading data or writing a checkpoint there stops where it is, and its peers wait in their next "
                "collective until they time out.")
        out.append(hypothesis(tl, Category.LAGGING_RANK, 0.45, title, hosts=where.hosts, what=what, fix=_IO_FIX,
                              evidence=evidence_of(servers, "the server lost", 6)))
    elif frames:
        systems = sorted({str(e.data["fs"]) for e in frames if e.data.get("fs")})
        title = (f"a process waits in the kernel in {frames[0].data.get('wchan')} ({' and '.join(systems) or 'I/O'}): "
                 "if the others wait for it in a collective, file I/O that does not complete holds them up")
        out.append(hypothesis(tl, Category.LAGGING_RANK, 0.3, title, what=(
            "A kernel stack (a hung task's, /proc/PID/stack) stands in a network filesystem's function: the process "
            "waits for I/O there."), fix=_IO_FIX, evidence=evidence_of(frames[:3], "waiting in")))
    return out
