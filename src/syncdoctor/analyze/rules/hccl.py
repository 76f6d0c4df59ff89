"""Ascend HCCL's own reports read as failures (parsers.hccl gives the events). Pure: no I/O.

HCCL's timed-out tasks, its consistency check, its RoCE completion errors, device memory and the agents the root
never heard from are events of the kinds NCCL's readings use (a timeout, a mismatch, an IB completion error, an
out-of-memory, a store's missing ranks) and are read by those rules; this module reads what only HCCL says: its
cluster heartbeat naming a rank lost or stuck, and the ranks' entry times into a communicator's set-up.
"""

from __future__ import annotations

from syncdoctor.analyze.model import Category, Hypothesis, Kind
from syncdoctor.analyze.rules.common import evidence_of, fmt_ranks, hypothesis
from syncdoctor.analyze.timeline import Timeline

__all__ = ["hccl_heartbeat", "hccl_late_entry"]


def hccl_heartbeat(tl: Timeline) -> list[Hypothesis]:
    """Ascend HCCL's cluster heartbeat naming a rank by its server and id (``Cluster Exception Location[IP/ID]:
    [90.90.92.240/1] … ExceptionType:[Heartbeat Lost Occurred]``): a lost heartbeat is that rank's process gone (it
    exited, or its network went down) and the others' collective timeouts follow from it; ``Stuck Occurred`` is a
    rank whose host process or device task stopped making progress while the others wait for it."""
    out: list[Hypothesis] = []
    for lost, category, verb in ((True, Category.RANK_CRASHED, "lost its heartbeat: its process exited, or its "
                                  "network went down"),
                                 (False, Category.LAGGING_RANK, "stopped making progress (HCCL's heartbeat: Stuck "
                                  "Occurred): its host process or its device task hangs")):
        events = [e for e in tl.of(Kind.HCCL_HEARTBEAT) if bool(e.data.get("lost")) is lost
                  and (lost or e.data.get("stuck"))]
        if not events:
            continue
        ranks = sorted({int(e.data["rank"]) for e in events})
        hosts = sorted({str(e.data["host"]) for e in events if e.data.get("host")})
        who = f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}" + (f" on {', '.join(hosts)}" if hosts else "")
        affected = sorted(r for r, s in tl.ranks.items() if r not in ranks and s.first_failure is not None)
        what = (f"HCCL's heartbeat between the ranks of the job reported {who} ({events[0].data.get('exception')}). "
                + ("A rank whose heartbeat stops has ended (an exception, a kill, the OOM killer) or lost its network; "
                   "the collectives of the others then time out waiting for it (EI0002, EI0006): those are the "
                   "cascade." if lost else
                   "HCCL counts each rank's operators; this rank's stopped moving while the others entered the "
                   "collective and wait for it (a hang in its own code, its data loading, or its device's task)."))
        fix = ("Read that rank's own log (its plog under ~/ascend/log, its traceback) for how it ended, and the "
               "host's kernel log (`dmesg -T`) for the OOM killer or a device fault." if lost else
               "See what that rank's process is doing (py-spy dump, msprof, its plog) and why its operators stopped; "
               "HCCL_EXEC_TIMEOUT only sets how long the others wait.")
        out.append(hypothesis(tl, category, 0.85, f"{who} {verb}", culprits=ranks, affected=affected, what=what,
                              fix=fix, hosts=hosts or None, evidence=evidence_of(events, "HCCL's heartbeat", 4)))
    return out


_LATE_ENTRY_S = 60.0  # HCCL_CONNECT_TIMEOUT is 120 s by default; a minute apart is already far


def hccl_late_entry(tl: Timeline) -> list[Hypothesis]:
    """Ranks entering HCCL's communicator set-up (``Entry-HcclCommInitRootInfoInner:ranks[4], rank[3], …`` at INFO)
    minutes after the others: the others wait for them HCCL_CONNECT_TIMEOUT (120 s by default) and give up; the late
    ones were held up before (loading, a slow node, a launcher that started them late)."""
    entries = [e for e in tl.of(Kind.PROCESS_MAP) if e.data.get("source") == "hccl-init"
               and e.data.get("entered") is not None and e.origin.rank is not None]
    if len({e.origin.rank for e in entries}) < 2:
        return []
    first: dict[int, float] = {}
    for event in entries:
        if event.origin.rank is not None:
            first[event.origin.rank] = min(first.get(event.origin.rank, float("inf")), float(event.data["entered"]))
    start = min(first.values())
    late = sorted(r for r, t in first.items() if t - start > _LATE_ENTRY_S)
    if not late or len(late) == len(first):
        return []
    behind = max(first[r] for r in late) - start
    who = f"rank{'s' if len(late) > 1 else ''} {fmt_ranks(late)}"
    title = (f"{who} entered HCCL's communicator set-up {behind:.0f} s after the others: they wait for "
             f"{'them' if len(late) > 1 else 'it'} HCCL_CONNECT_TIMEOUT (120 s by default), then give up")
    what = ("Every rank of a communicator must reach its set-up within HCCL_CONNECT_TIMEOUT of the others. "
            f"{who[:1].upper()}{who[1:]} came too late: what ran before it on that rank (loading data or a model, a "
            "compile, a slow or busy node, a launcher that started it late) held it up.")
    fix = ("Find what delays that rank before the communicator is created (its own log up to that point), or raise "
           "HCCL_CONNECT_TIMEOUT on every rank to cover it.")
    late_lines = [e for e in entries if e.origin.rank in late]
    return [hypothesis(tl, Category.RANK_NEVER_JOINED, 0.7, title, culprits=late,
                       affected=sorted(r for r in first if r not in late), what=what, fix=fix,
                       evidence=evidence_of(late_lines, "entered late", 3)
                       + evidence_of([e for e in entries if e.origin.rank not in late], "entered on time", 2))]
