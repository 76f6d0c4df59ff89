"""Who waits for whom: the wait-for graph of one moment of a job, its roots, and the chains to them.

Pure: no I/O, no clock. Used live by the detector (:mod:`syncdoctor.watch.detector`) and after the fact by
``analyze`` (:mod:`syncdoctor.analyze.rules.chains`).

A :class:`Wait` says that some ranks (the *waiters*) are inside one operation and cannot finish it until
other ranks (the *blockers*) enter it: members of a process group that have not entered collective #S,
or the peer that has not posted the send (or receive) matching a rank's receive #k. Ranks and waits are
the nodes of a graph (rank -> wait it is inside -> each blocker), so a barrier that half of 4096 ranks
wait in costs 4096 edges, not 2048 x 2048.

A *root* is where waiting ends:

- a rank that waits for nobody (a *sink*): it is late (inside no operation), inside an operation every
  member entered (a transport hang or a mismatch), dead, or gone;
- a *cycle*: ranks that wait for each other (through different groups, or sends and receives posted in
  opposite orders): a deadlock, whatever happens elsewhere.

A rank that waits for someone is never a sink. Each root carries its *hops*, the waits that lead to it
nearest first (a breadth-first walk backwards from the root), and the ranks they hold up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from syncdoctor.watch.records import format_ranks

__all__ = ["Hop", "Op", "Root", "Wait", "analyse", "describe_chain"]


@dataclass(frozen=True)
class Op:
    """An operation ranks can wait in.

    ``kind`` is ``collective`` (``seq`` is its sequence number in ``group``), or ``send``/``recv`` (``seq``
    is the message number on the channel to or from ``peer``, the rank at the other end). ``label`` is
    what was called, when known (``all_reduce float[256]``).
    """

    group: str
    seq: int
    kind: str = "collective"
    peer: int | None = None
    label: str = ""

    def text(self) -> str:
        """``all_reduce float[256] #6 of group 5`` or ``recv #3 from rank 2 in group 0``."""
        if self.kind in ("send", "recv"):
            where = "to" if self.kind == "send" else "from"
            peer = "any rank" if self.peer is None or self.peer < 0 else f"rank {self.peer}"
            return f"{self.kind} #{self.seq} {where} {peer} in group {self.group}"
        return f"{self.label or 'collective'} #{self.seq} of group {self.group}"


@dataclass(frozen=True)
class Wait:
    """``waiters`` are inside ``op`` and wait for ``blockers`` to enter it; the longest has waited ``waited_s``."""

    op: Op
    waiters: tuple[int, ...]
    blockers: tuple[int, ...]
    waited_s: float = 0.0


@dataclass(frozen=True)
class Hop:
    """One wait on the way to a root: ``wait``'s waiters wait for ``toward`` (nearer the root, or the root)."""

    wait: Wait
    depth: int  # 1: waits for the root itself
    toward: tuple[int, ...]
    parent: int | None = None  # index (in the root's hops) of a hop that ``toward`` wait in; None at depth 1


@dataclass(frozen=True)
class Root:
    """Where a chain of waits ends: one rank, or the ranks of a cycle (a deadlock)."""

    ranks: tuple[int, ...]
    cycle: bool
    hops: tuple[Hop, ...]
    affected: tuple[int, ...]  # ranks held up by it, directly or through others (not its own ranks)
    waited_s: float  # the longest wait among its hops

    @property
    def direct(self) -> tuple[Wait, ...]:
        """The waits that wait for the root's ranks themselves."""
        return tuple(h.wait for h in self.hops if h.depth == 1)


def analyse(waits: Sequence[Wait]) -> tuple[Root, ...]:
    """Every root of the graph of ``waits``, sorted by ranks.

    Cycles are roots of their own. Sinks that one wait waits for together (two late ranks of one group, or
    a barrier half of the job has not reached) make one root: their chains share every hop, and walking
    them once keeps a 4096-rank barrier with 2048 late ranks linear.
    """
    waits = [w for w in waits if w.waiters and w.blockers]
    waiting: set[int] = set()
    into: dict[int, list[int]] = {}  # rank -> waits that wait for it
    for index, wait in enumerate(waits):
        waiting.update(wait.waiters)
        for rank in wait.blockers:
            into.setdefault(rank, []).append(index)
    components = _cycles(waits, waiting, into)
    in_cycle = {rank for component in components for rank in component}
    sinks = [rank for rank in into if rank not in waiting and rank not in in_cycle]
    parent = {rank: rank for rank in sinks}

    def find(rank: int) -> int:
        while parent[rank] != rank:
            parent[rank] = parent[parent[rank]]
            rank = parent[rank]
        return rank

    for wait in waits:
        held = [b for b in wait.blockers if b in parent]
        for other in held[1:]:
            a, b = find(held[0]), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    together: dict[int, list[int]] = {}
    for rank in sinks:
        together.setdefault(find(rank), []).append(rank)
    roots = [_root(tuple(sorted(component)), True, waits, into) for component in components]
    roots += [_root(tuple(sorted(ranks)), False, waits, into) for ranks in together.values()]
    return tuple(sorted(roots, key=lambda r: r.ranks))


def describe_chain(
    root: Root, ranks_text: Callable[[Iterable[int]], str] | None = None, *, max_paths: int = 6, max_hops: int = 8
) -> str:
    """``ranks 0,2,6 wait in all_reduce #6 of group 5 for rank 4, which waits in all_reduce #6 of group 3
    for rank 5; ranks 1,3,7 wait in all_reduce #6 of group 6 for rank 5``: each path from the outermost
    waiters to the root, in as many clauses as it has hops."""
    text = ranks_text or _ranks_text
    hops = root.hops
    parents = {h.parent for h in hops if h.parent is not None}
    leaves = [i for i in range(len(hops)) if i not in parents]
    # a cycle's own waits first (their waiters are the root's ranks), then the longest chains
    inside = set(root.ranks)
    leaves.sort(key=lambda i: (not set(hops[i].wait.waiters) <= inside, -hops[i].depth, min(hops[i].wait.waiters)))
    clauses = []
    for leaf in leaves[:max_paths]:
        path = []
        index: int | None = leaf
        while index is not None:
            path.append(hops[index])
            index = hops[index].parent
        parts = []
        for position, hop in enumerate(path[:max_hops]):
            who = hop.wait.waiters if position == 0 else path[position - 1].toward
            verb = "waits" if len(who) == 1 else "wait"
            phrase = f"{text(who)} {verb} in {hop.wait.op.text()} for {text(hop.toward)}"
            parts.append(phrase if position == 0 else f"which {verb} in {hop.wait.op.text()} for {text(hop.toward)}")
        if len(path) > max_hops:
            parts.append(f"and {len(path) - max_hops} more hops")
        clauses.append(", ".join(parts))
    if len(leaves) > max_paths:
        clauses.append(f"{len(leaves) - max_paths} more chains")
    return "; ".join(clauses)


# --- internals ----------------------------------------------------------------------------------------


def _ranks_text(ranks: Iterable[int]) -> str:
    ordered = sorted(set(ranks))
    return ("rank " if len(ordered) == 1 else "ranks ") + format_ranks(ordered)


def _cycles(waits: Sequence[Wait], waiting: set[int], into: dict[int, list[int]]) -> list[set[int]]:
    """Strongly connected sets of two or more ranks (iterative Tarjan over rank -> wait -> blocker).

    Only a rank that waits and is waited for can be on a cycle, so the walk is over those alone: in the
    common case (thousands of ranks waiting for one late rank) there are none, and nothing is allocated
    per waiting rank (the monitor runs this every cycle of an incident; garbage made here is collected
    there)."""
    both = waiting.intersection(into)
    if not both:
        return []
    successors: dict[int, list[int]] = {}
    for wait in waits:
        targets = [b for b in wait.blockers if b in both]
        if targets:
            for rank in wait.waiters:
                if rank in both:
                    successors.setdefault(rank, []).extend(targets)
    successors = {rank: sorted(set(targets)) for rank, targets in successors.items()}
    index_of: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    found: list[set[int]] = []
    counter = 0
    for start in sorted(successors):
        if start in index_of:
            continue
        work: list[tuple[int, int]] = [(start, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index_of[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            following = successors.get(node, [])
            advanced = False
            while position < len(following):
                nxt = following[position]
                position += 1
                if nxt not in index_of:
                    work.append((node, position))
                    work.append((nxt, 0))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index_of[nxt])
            if advanced:
                continue
            if low[node] == index_of[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _root(ranks: tuple[int, ...], cycle: bool, waits: Sequence[Wait], into: dict[int, list[int]]) -> Root:
    """Walk backwards from ``ranks``: every wait that leads to them, nearest first."""
    seen_waits: set[int] = set()
    reached: set[int] = set(ranks)
    hops: list[Hop] = []
    frontier = list(ranks)
    depth = 0
    while frontier:
        depth += 1
        nxt: list[int] = []
        level = sorted({w for rank in frontier for w in into.get(rank, ())} - seen_waits)
        for index in level:
            seen_waits.add(index)
            wait = waits[index]
            toward = tuple(sorted(set(wait.blockers) & set(frontier)))
            hops.append(Hop(wait, depth, toward))
            for waiter in wait.waiters:
                if waiter not in reached:
                    reached.add(waiter)
                    nxt.append(waiter)
        frontier = nxt
    # a wait may hold up for several ranks of the chain (a barrier waits for the late rank and for the rank
    # that waits for it): name them all
    hops = _link([Hop(h.wait, h.depth, tuple(sorted(set(h.wait.blockers) & reached))) for h in hops])
    affected = tuple(sorted(reached - set(ranks)))
    waited = max((h.wait.waited_s for h in hops), default=0.0)
    return Root(ranks, cycle, tuple(hops), affected, waited)


def _link(hops: list[Hop]) -> list[Hop]:
    """Give each hop beyond depth 1 the index of a hop one level nearer that its ``toward`` ranks wait in."""
    linked: list[Hop] = []
    for hop in hops:
        parent = None
        if hop.depth > 1:
            for index, other in enumerate(linked):
                if other.depth < hop.depth and set(hop.toward) & set(other.wait.waiters):
                    parent = index
                    break
        linked.append(Hop(hop.wait, hop.depth, hop.toward, parent))
    return linked
