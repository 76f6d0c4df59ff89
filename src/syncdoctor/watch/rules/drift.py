"""Collective count drift (W103): at the same training step, members of a group entered different numbers
of collectives, so a rank skipped (or added) one and later collectives pair with the wrong partners.
Pure: no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from syncdoctor.watch.events import Event
from syncdoctor.watch.records import format_ranks
from syncdoctor.watch.rules.context import Condition, Context, key, ranks_text, who_list
from syncdoctor.watch.snapshot import Snapshot

__all__ = ["drift_conditions"]


def drift_conditions(ctx: Context) -> list[Condition]:
    """Members of a group that entered a different number of collectives by the same step.

    A skipped collective shifts every later count, so comparing the counts at the latest step all
    members have marked finds it in O(members); the earliest differing step is then looked up in the
    odd ranks' recent marks only.
    """
    snap = ctx.snapshot
    conditions: list[Condition] = []
    latest: dict[int, int] = {}
    groups = ctx.groups
    if snap.columns is not None:  # the headers say which groups may drift: read only their members' records
        drifting = snap.columns.drifting()
        if not drifting:
            return []
        groups = {name: members for name, members in groups.items() if name in drifting}
        ranks: Iterable[int] = sorted({r for members in groups.values() for r in members})
    else:
        ranks = snap.records
    for rank in ranks:
        rec = snap.records.get(rank)
        if rec is not None and rec.step_marks:
            latest[rank] = max(m.step for m in rec.step_marks)
    if len(latest) < 2:
        return []
    for group, members in groups.items():
        marked = [r for r in members if r in latest]
        if len(marked) < 2:
            continue
        common = min(latest[r] for r in marked)
        counts = {}
        for rank in marked:
            for mark in snap.records[rank].step_marks:
                if mark.step == common:
                    value = mark.entered.get(group, 0)
                    counts[rank] = value if type(value) is int else 0
                    break
        if len(counts) < 2 or len(set(counts.values())) == 1:
            continue
        step, counts = _earliest_drift(snap, group, common, counts)
        tally = Counter(counts.values())
        ordered = sorted(tally.items(), key=lambda item: (-item[1], min(r for r, v in counts.items() if v == item[0])))
        majority = ordered[0][0]
        odd = tuple(sorted(r for r, v in counts.items() if v != majority))
        diffs = sorted({counts[r] - majority for r in odd})
        what = ", ".join(
            f"{abs(d)} {'fewer' if d < 0 else 'more'} collective{'s' if abs(d) > 1 else ''}" for d in diffs
        )
        title = (
            f"{who_list(ctx, odd)} had entered {what} than {ranks_text(sorted(set(counts) - set(odd)))} "
            f"in group {group} by step {step}: a collective was skipped or added (control flow differs "
            f"between ranks), so later collectives pair with the wrong partners"
        )
        conditions.append(
            Condition(
                Event(
                    "W103", "confirmed", title, ranks=odd, hosts=ctx.hosts(odd), pids=ctx.pids(odd), group=group,
                    group_ranks=members, seq=majority, key=key("W103", group, format_ranks(odd)), at=snap.wall,
                    detail={"step": step, "entered_by_step": {str(r): v for r, v in sorted(counts.items())}},
                )
            )
        )
    return conditions


def _earliest_drift(snap: Snapshot, group: str, common: int, counts: dict[int, int]) -> tuple[int, dict[int, int]]:
    """Walk back through the steps every rank still has marks for; return the first step that differs."""
    by_step: dict[int, dict[int, int]] = {}
    for rank in counts:
        for mark in snap.records[rank].step_marks:
            if mark.step <= common:
                value = mark.entered.get(group, 0)
                by_step.setdefault(mark.step, {})[rank] = value if type(value) is int else 0
    for step in sorted(by_step):
        values = by_step[step]
        if len(values) == len(counts) and len(set(values.values())) > 1:
            return step, values
    return common, counts
