"""Point-to-point calls seen from Python: patched ``send``, ``recv``, ``isend``, ``irecv`` and
``batch_isend_irecv`` feed a :class:`~syncdoctor.watch.p2p.P2PLedger`.

Does I/O with torch (imported lazily): it replaces attributes of ``torch.distributed`` and
``torch.distributed.distributed_c10d`` until the returned undo runs. Installed with either progress source:
gloo's Flight Recorder records no point-to-point entry and NCCL's status counts collectives only, so
neither tells a rank blocked in a receive from a rank that is late.

On the training thread each call costs a lock and two counter reads of the group (about 1 µs). An
asynchronous call's work is completed by the sampler thread's :meth:`~P2PLedger.poll` (``is_completed``);
gloo's works say completed only once ``wait()`` returned, so a posted but not yet waited receive counts as
pending until then.

The wrappers compare equal to the functions they wrap, because ``P2POp`` checks ``op in [isend, irecv]``
against the module's (patched) names: code that took ``torch.distributed.isend`` before the watcher
started still builds its ``P2POp``. ``batch_isend_irecv`` tells sends from receives by identity
(``op.op is isend``), so the patched one first points such ops at the module's current function. Calls
through references taken before the watcher started bypass the ledger (a limit, as for the hooks
recorder's collectives), except inside ``batch_isend_irecv``, which is patched itself. torch's ``send``
calls ``isend`` (and ``recv`` ``irecv``): a call made inside another wrapped call is not counted again.

Once installed, the wrappers stay for the life of the process (a ``P2POp`` built while they were in place
must keep working); :func:`install_p2p`'s undo only detaches the ledger, after which they pass calls
straight through.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

from syncdoctor.watch.p2p import P2PLedger

__all__ = ["install_p2p"]

_SINGLE = {"send": ("send", False), "recv": ("recv", False), "isend": ("send", True), "irecv": ("recv", True)}


class _Wrapped:
    """A patched function that compares (and hashes) equal to the original it wraps."""

    __wrapped__: Callable[..., Any]  # set by functools.update_wrapper

    def __init__(self, original: Callable[..., Any], call: Callable[..., Any]) -> None:
        functools.update_wrapper(self, original)
        self._call = call
        self._syncdoctor_wrapped = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return other is self or other is self.__wrapped__ or (
            isinstance(other, _Wrapped) and other.__wrapped__ is self.__wrapped__
        )

    def __hash__(self) -> int:
        return hash(self.__wrapped__)


def _unwrap(function: Any) -> Any:
    return function.__wrapped__ if isinstance(function, _Wrapped) else function


class _Patcher:
    def __init__(self, dist: Any, c10d: Any) -> None:
        self.ledger: P2PLedger | None = None
        self.dist = dist
        self.c10d = c10d
        self.clock: Callable[[], float] = time.monotonic
        self.local = threading.local()  # ``inside``: a wrapped call is running on this thread
        self.originals: dict[str, Any] = {}

    def group_of(self, group: Any) -> Any:
        return group if group is not None else self.c10d._get_default_group()

    def peer(self, group: Any, pg: Any, peer: Any, group_peer: Any) -> int:
        if peer is not None:
            return int(peer)
        if group_peer is not None:
            return int(self.c10d.get_global_rank(pg, group_peer)) if group is not None else int(group_peer)
        return -1  # a receive from any source

    def single(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        kind, asynchronous = _SINGLE[name]
        params = list(inspect.signature(original).parameters)
        where: dict[str, int] = {p: params.index(p) for p in ("dst", "src", "group", "group_dst", "group_src") if p in params}
        peer_name = "dst" if kind == "send" else "src"
        group_peer_name = "group_dst" if kind == "send" else "group_src"
        patcher = self

        def argument(args: tuple[Any, ...], kwargs: dict[str, Any], key: str) -> Any:
            if key in kwargs:
                return kwargs[key]
            index = where.get(key)
            return args[index] if index is not None and index < len(args) else None

        def call(*args: Any, **kwargs: Any) -> Any:
            ledger = patcher.ledger
            if ledger is None or getattr(patcher.local, "inside", False) or not patcher.c10d.is_initialized():
                return original(*args, **kwargs)
            try:
                group = argument(args, kwargs, "group")
                if group is patcher.c10d.GroupMember.NON_GROUP_MEMBER:
                    return original(*args, **kwargs)
                pg = patcher.group_of(group)
                group_name = str(pg.group_name)
                peer = patcher.peer(group, pg, argument(args, kwargs, peer_name), argument(args, kwargs, group_peer_name))
                before = pg._get_sequence_number_for_group()
            except Exception:  # never break the user's call
                return original(*args, **kwargs)
            number = ledger.enter(patcher.clock(), group_name, peer, kind)
            patcher.local.inside = True
            try:
                result = original(*args, **kwargs)
            except BaseException:
                ledger.complete(group_name, peer, kind, number)
                raise
            finally:
                patcher.local.inside = False
            patcher.note(ledger, pg, group_name, before, 1)
            if asynchronous and result is not None:
                ledger.track(group_name, peer, kind, number, result)
            else:
                ledger.complete(group_name, peer, kind, number)
            return result

        return _Wrapped(original, call)

    @staticmethod
    def note(ledger: P2PLedger, pg: Any, group_name: str, before: int, count: int) -> None:
        """Where the group's operation counter moved by exactly the calls just made, remember their ids."""
        try:
            after = pg._get_sequence_number_for_group()
        except Exception:
            return
        if after - before == count:
            ledger.note_op_ids(group_name, range(before + 1, after + 1))

    def batch(self, original: Callable[..., Any]) -> Callable[..., Any]:
        patcher = self

        def call(p2p_op_list: Any, *args: Any, **kwargs: Any) -> Any:
            patcher.align(p2p_op_list)
            ledger = patcher.ledger
            if ledger is None or getattr(patcher.local, "inside", False) or not patcher.c10d.is_initialized():
                return original(p2p_op_list, *args, **kwargs)
            try:
                ops = list(p2p_op_list)
                entries = []
                for op in ops:
                    kind = "send" if _unwrap(op.op) is patcher.originals.get("isend") else "recv"
                    pg = patcher.group_of(op.group)
                    group_peer = getattr(op, "group_peer", None)
                    peer = patcher.peer(op.group, pg, getattr(op, "peer", None), group_peer)
                    entries.append((pg, str(pg.group_name), peer, kind))
                before = {name: pg._get_sequence_number_for_group() for pg, name, _peer, _kind in entries}
            except Exception:
                return original(p2p_op_list, *args, **kwargs)
            now = patcher.clock()
            numbers = [ledger.enter(now, name, peer, kind) for _pg, name, peer, kind in entries]
            patcher.local.inside = True
            try:
                works = original(p2p_op_list, *args, **kwargs)
            except BaseException:
                for (_pg, name, peer, kind), number in zip(entries, numbers, strict=True):
                    ledger.complete(name, peer, kind, number)
                raise
            finally:
                patcher.local.inside = False
            counts: dict[str, int] = {}
            groups: dict[str, Any] = {}
            for pg, name, _peer, _kind in entries:
                counts[name] = counts.get(name, 0) + 1
                groups[name] = pg
            for name, count in counts.items():
                patcher.note(ledger, groups[name], name, before[name], count)
            works = list(works or [])
            for index, ((_pg, name, peer, kind), number) in enumerate(zip(entries, numbers, strict=True)):
                # one work per op, or one for the whole coalesced batch (NCCL): the last one then stands for all
                work = works[index] if len(works) == len(entries) else (works[-1] if works else None)
                if work is None:
                    ledger.complete(name, peer, kind, number)
                else:
                    ledger.track(name, peer, kind, number, work)
            return works

        return _Wrapped(original, call)

    def align(self, p2p_op_list: Any) -> None:
        """Point each op at the module's current ``isend``/``irecv`` (torch tells them apart by identity)."""
        try:
            current = {id(_unwrap(getattr(self.c10d, n))): getattr(self.c10d, n) for n in ("isend", "irecv")}
            for op in p2p_op_list:
                replacement = current.get(id(_unwrap(op.op)))
                if replacement is not None and op.op is not replacement:
                    op.op = replacement
        except Exception:  # not a list of P2POp: torch's own check says so
            return


_PATCHER: _Patcher | None = None
_INSTALL_LOCK = threading.Lock()


def install_p2p(ledger: P2PLedger, clock: Callable[[], float] = time.monotonic) -> Callable[[], None]:
    """Feed ``ledger`` from torch's point-to-point calls (patched once per process); returns the detach."""
    global _PATCHER
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    with _INSTALL_LOCK:
        if _PATCHER is None:
            patcher = _Patcher(dist, c10d)
            for name in (*_SINGLE, "batch_isend_irecv"):
                original = getattr(c10d, name, None)
                if original is None or isinstance(original, _Wrapped):
                    continue
                patcher.originals[name] = original
                wrapper = patcher.batch(original) if name == "batch_isend_irecv" else patcher.single(name, original)
                for owner in (c10d, dist):
                    if getattr(owner, name, None) is original:
                        setattr(owner, name, wrapper)
            _PATCHER = patcher
        _PATCHER.ledger, _PATCHER.clock = ledger, clock
        patcher = _PATCHER

    def undo() -> None:
        if patcher.ledger is ledger:
            patcher.ledger = None

    return undo
