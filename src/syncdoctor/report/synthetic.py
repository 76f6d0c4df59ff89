"""Synthetic report inputs of any size, for the report's scale tests and benchmark. Pure: no I/O.

Built from the producers' own types so the data has their exact shape: the probe document from
:mod:`syncdoctor.probe.records` measurements run through the probe's real analysis
(:func:`syncdoctor.probe.assemble.assess`: findings, verdict, recommendations), watch events as
:class:`syncdoctor.watch.events.Event` objects. Deterministic for a given seed. Real runs are rendered in
the tests too; this module only supplies sizes that cannot be run here (1024 ranks).
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["probe_document", "watch_events"]

_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
_SIZES = (1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24)


def probe_document(nodes: int, ranks_per_node: int, *, slow_node: int | None = None, late_node: int | None = None,
                   seed: int = 1, sizes: tuple[int, ...] = _SIZES,
                   analyse: bool = True) -> dict[str, Any]:
    """A finished probe report (schema ``syncdoctor.probe/1``) of ``nodes`` x ``ranks_per_node`` ranks on
    a 100 Gb/s fabric; ``slow_node`` has every link at a fifth of the rate, ``late_node`` starts 25 s late.

    ``analyse``: findings, verdict and recommendations from the probe's own analysis (its link analysis
    grows with the cube of the node count: use False above a few dozen nodes, which names ``slow_node`` in
    the verdict directly and adds no findings).
    """
    from syncdoctor.probe.analysis import NodeFacts
    from syncdoctor.probe.assemble import assess
    from syncdoctor.probe.bandwidth import op_shape, summarise
    from syncdoctor.probe.records import ClockOffset, LinkMeasure, NodeInfo, NodeSkew
    from syncdoctor.probe.report import SCHEMA

    rng = random.Random(seed)
    world = nodes * ranks_per_node
    infos = [NodeInfo(n, f"node{n:04d}", f"node{n:04d}", f"10.0.{n // 250}.{n % 250 + 1}",
                      tuple(range(n * ranks_per_node, (n + 1) * ranks_per_node))) for n in range(nodes)]
    base_bw = 12.0e9  # bytes/s
    links = []
    for a in range(nodes):
        for b in range(a + 1, nodes):
            factor = 0.2 if slow_node in (a, b) else 1.0
            links.append(LinkMeasure(
                "inter", a * ranks_per_node, b * ranks_per_node, a, b,
                latency_s=rng.uniform(4e-6, 6e-6) / factor, latency_median_s=rng.uniform(6e-6, 8e-6) / factor,
                bw_ab=base_bw * factor * rng.uniform(0.92, 1.0), bw_ba=base_bw * factor * rng.uniform(0.92, 1.0),
                bytes_ab=1 << 24, bytes_ba=1 << 24, round=(a + b) % max(nodes - 1, 1),
            ))
        if ranks_per_node > 1:
            links.append(LinkMeasure("intra", a * ranks_per_node, a * ranks_per_node + 1, a, a, 2e-6, 3e-6,
                                     180e9 * rng.uniform(0.95, 1.0), 180e9 * rng.uniform(0.95, 1.0), 1 << 24, 1 << 24))
    skews, offsets = [], []
    for n in range(nodes):
        first = rng.uniform(0.0, 1.5) + (25.0 if n == late_node else 0.0)
        offset = rng.uniform(-0.004, 0.004) if n else 0.0
        skews.append(NodeSkew(n, infos[n].label, first, first + rng.uniform(0.0, 0.4), first + offset, offset))
        offsets.append(ClockOffset(n, offset, rng.uniform(2e-5, 6e-5), 16))
    rows = []
    bus_peak = base_bw * (0.2 if slow_node is not None else 1.0) * 0.9
    for op in _OPS:
        for size in sizes:
            shape = op_shape(op, size, world)
            if shape is None:
                continue
            per_rank = {}
            for rank in range(world):
                efficiency = size / (size + 2e6)  # latency-bound at small sizes
                seconds = size / (bus_peak * efficiency) * (1.0 + 0.05 * rng.random())
                if slow_node is not None and rank // ranks_per_node == slow_node:
                    seconds *= 1.1
                per_rank[rank] = (seconds, 0)
            rows.append(summarise(op, shape, per_rank, 20))
    from syncdoctor.kb.findings import findings_to_json

    if analyse:
        facts = [NodeFacts(n, infos[n].label, interface="ib0") for n in range(nodes)]
        result = assess(infos, facts, skews=skews, offsets=offsets, links=links, rows=rows, backend="nccl")
        findings, verdict = findings_to_json(result.findings), result.verdict.to_json()
        advice: dict[str, Any] | None = result.recommendations.to_json()
    else:
        findings, advice = [], None
        subject = infos[slow_node].label if slow_node is not None else ""
        verdict = {"kind": "slow_node" if subject else "none", "subject": subject,
                   "summary": f"{subject} is the slow node" if subject else "no slow node or link",
                   "achieved_vs_promised": [], "slowest_rank": None}

    stages: list[dict[str, Any]] = [{"name": name, "status": "ok", "seconds": round(rng.uniform(0.1, 4.0), 3), "errors": {}}
              for name in ("join", "init", "clock", "facts", "links", "collectives")]
    return {
        "schema": SCHEMA,
        "syncdoctor_version": "synthetic",
        "created": "2026-01-01T00:00:00+00:00",
        "finished": True,
        "stages": stages,
        "findings": findings,
        "config": {"skew_warn_s": 10.0, "slow_ratio": 0.5},
        "launch": {"launcher": "torchrun", "world_size": world, "nnodes": nodes, "local_world_size": ranks_per_node},
        "backend": "nccl",
        "join": {"complete": True, "state": "complete", "waited_s": 1.0, "registered": [{"rank": r} for r in range(world)],
                 "nodes": [i.to_json() for i in infos], "missing": []},
        "clock": {"offsets": [o.to_json() for o in offsets], "skew": [s.to_json() for s in skews]},
        "facts": {"nodes": [{"node": n, "label": infos[n].label, "interface": "ib0", "mtu": 4092} for n in range(nodes)]},
        "links": [m.to_json() for m in links],
        "collectives": [r.to_json() for r in rows],
        "verdict": verdict,
        "recommendations": advice,
    }


def watch_events(world: int, *, straggler: int, late: int, dead: int | None = None, ranks_per_host: int = 8,
                 incidents: int = 6, seed: int = 1, start: float = 1_800_000_000.0) -> list[dict[str, Any]]:
    """The event file of a ``world``-rank job: ``straggler`` arrives last most of the time (W107), ``late``
    is late at ``incidents`` collectives (W101 warning, one confirmed, then resolved), ``dead`` stops
    reporting at the end (W105)."""
    from syncdoctor.watch.events import Event
    from syncdoctor.watch.records import Signature

    rng = random.Random(seed)

    def host(rank: int) -> str:
        return f"node{rank // ranks_per_host:04d}"

    members = tuple(range(world))
    signature = Signature("all_reduce", ((25_000_000,),), ("Float",), ((25_000_000,),))
    events: list[Event] = []
    t = start + 30.0
    detail = {"last": 41, "notable": 60, "share": 0.683, "lag_p50": 0.31, "lag_p90": 0.52, "lag_max": 0.74,
              "others_waited_s": 812.4, "gain_share": 0.061}
    events.append(Event("W107", "warning",
                        f"rank {straggler} ({host(straggler)}) arrived last at 41 of 60 collectives with a measurable "
                        "wait in the last 120 s; lag p50 0.31 s, p90 0.52 s; the others spent 812.4 s waiting for it",
                        ranks=(straggler,), hosts=(host(straggler),), pids=(4000 + straggler,), waited_s=812.4,
                        detail=detail, key=f"W107:{straggler}", at=t))
    seq = 1000
    for index in range(incidents):
        t += rng.uniform(20.0, 40.0)
        seq += rng.randint(50, 200)
        waiting = tuple(r for r in members if r != late)
        key = f"W101:0:{seq}:{late}"
        waited = 10.0 + rng.uniform(0.1, 1.0)
        common = dict(ranks=(late,), hosts=(host(late),), pids=(4000 + late,), group="0", group_ranks=members,
                      seq=seq, signature=signature, waiting_ranks=waiting, key=key)
        title = (f"rank {late} ({host(late)}, pid {4000 + late}) has not entered all_reduce float[25000000] #{seq} "
                 f"of group 0; ranks 0-{world - 1} except {late} have waited {{:.1f}} s for it; it is in load_batch "
                 "(data.py:88)")
        late_detail = {"late": {str(late): {"activity": "still working elsewhere", "where": "load_batch (data.py:88)"}},
                       "where": "load_batch (data.py:88)"}
        events.append(Event("W101", "warning", title.format(waited), waited_s=waited, at=t, detail=late_detail,
                            **common))  # type: ignore[arg-type]
        if index == incidents - 1:
            waited = 60.0 + rng.uniform(0.1, 1.0)
            events.append(Event("W101", "confirmed", title.format(waited), waited_s=waited, at=t + 50.0,
                                detail=late_detail, **common))  # type: ignore[arg-type]
        extra = rng.uniform(1.0, 8.0) + (55.0 if index == incidents - 1 else 0.0)
        events.append(Event("W101", "resolved",
                            f"rank {late} arrived; collective #{seq} of group 0 completed (the others had waited "
                            f"at least {waited:.1f} s)", ranks=(late,), hosts=(host(late),), pids=(4000 + late,),
                            group="0", seq=seq, waited_s=waited + extra, key=key, at=t + extra,
                            detail={"open_s": round(extra, 1)}))
        t += extra
    if dead is not None:
        t += 30.0
        events.append(Event("W105", "confirmed",
                            f"rank {dead} ({host(dead)}, pid {4000 + dead}) stopped reporting 12.0 s ago while the "
                            f"others wait in all_reduce #{seq + 7} of group 0: killed, frozen or cut off",
                            ranks=(dead,), hosts=(host(dead),), pids=(4000 + dead,), group="0", seq=seq + 7,
                            waiting_ranks=tuple(r for r in members if r != dead), waited_s=12.0,
                            detail={"silent_s": {str(dead): 12.0}}, key=f"W105:{dead}", at=t))
    return [e.to_json() for e in events]


def analyze_document(world: int, *, culprit: int, ranks_per_host: int = 8, start: float = 1_800_000_000.0,
                     seed: int = 1) -> dict[str, Any]:
    """An analyze report (schema ``syncdoctor.analyze/1``, the shape ``syncdoctor analyze --json`` prints)
    of a job where ``culprit`` died of an exception before collective #6 and every other rank timed out
    waiting for it."""
    rng = random.Random(seed)

    def host(rank: int) -> str:
        return f"node{rank // ranks_per_host:04d}"

    def line(rank: int, kind: str, time: float, text: str, number: int, **extra: Any) -> dict[str, Any]:
        ref = f"logs/rank{rank}.log:{number}"
        return {"kind": kind, "ref": ref, "rank": rank, "host": host(rank), "group": extra.get("group"),
                "seq": extra.get("seq"), "op": extra.get("op"), "data": {}, "text": text,
                "time_text": None, "time": time, "file": f"logs/rank{rank}.log", "line": number}

    timeline: list[dict[str, Any]] = []
    for rank in range(world):
        for seq in range(1, 6 if rank == culprit else 7):
            timeline.append(line(rank, "collective", start + seq * 0.5 + rng.uniform(0, 0.05), f"all_reduce #{seq}",
                                 seq * 3, group="0", seq=seq, op="all_reduce"))
    timeline.append(line(culprit, "exception", start + 3.2, "RuntimeError: CUDA out of memory", 40))
    timeout = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE) ran for 600000 "
               "milliseconds before timing out.")
    for rank in range(world):
        if rank != culprit:
            timeline.append(line(rank, "nccl_timeout", start + 603.5 + rng.uniform(0, 0.4), timeout, 21,
                                 group="0", seq=6, op="all_reduce"))
    evidence = [{"ref": f"logs/rank{culprit}.log:40", "text": "RuntimeError: CUDA out of memory", "note": "exception",
                 "rank": culprit, "host": host(culprit), "file": f"logs/rank{culprit}.log", "line": 40}]
    evidence += [{"ref": f"logs/rank{r}.log:21", "text": timeout, "note": "timeout", "rank": r, "host": host(r),
                  "file": f"logs/rank{r}.log", "line": 21} for r in range(world) if r != culprit][:40]
    root = {"category": "crashed-rank", "code": "A002", "confidence": 0.92, "root_cause": True,
            "title": f"rank {culprit} on {host(culprit)} died of an exception before collective #6; the other "
                     f"{world - 1} ranks timed out waiting for it",
            "culprit_ranks": [culprit], "culprit_hosts": [host(culprit)],
            "affected_ranks": [r for r in range(world) if r != culprit], "affected_hosts": [],
            "what": "its own log shows an exception before the collective the others timed out in",
            "fix": "fix the out-of-memory error on that rank (smaller batch, or free memory before the step)",
            "evidence": evidence, "evidence_total": world, "hosts": [host(culprit)]}
    other = {"category": "transport-hang", "code": "A005", "confidence": 0.1, "root_cause": False,
             "title": "a network hang in collective #6", "culprit_ranks": [], "culprit_hosts": [],
             "affected_ranks": [], "affected_hosts": [], "what": "every rank but one timed out in the same collective",
             "fix": "run syncdoctor probe", "evidence": [], "evidence_total": 0, "hosts": []}
    return {
        "schema": "syncdoctor.analyze/1",
        "root_cause_found": True,
        "root_cause": root,
        "hypotheses": [root, other],
        "findings": [],
        "ranks": [{"rank": r, "host": host(r), "pids": [], "state": "crashed" if r == culprit else "timed-out",
                   "last_seq": 5 if r == culprit else 6, "last_completed": 5, "exitcode": 1, "signal": None,
                   "first_error": "RuntimeError: CUDA out of memory" if r == culprit else timeout,
                   "first_error_ref": f"logs/rank{r}.log:{40 if r == culprit else 21}"} for r in range(world)],
        "hosts": {host(r): [x for x in range(world) if host(x) == host(r)] for r in range(0, world, ranks_per_host)},
        "world_size": world,
        "timeline": timeline,
        "inputs": [f"logs/rank{r}.log" for r in range(world)],
        "notes": [],
        "stats": {},
    }
