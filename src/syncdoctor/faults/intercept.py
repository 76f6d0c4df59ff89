"""Around-hooks on ``torch.distributed``'s Python collectives, installed in-process and removed on exit.

One patch layer serves every user (fault injection, the symmetry recorder, the multi-rank progress
recorder): :func:`intercept` pushes a handler for the duration of a ``with`` block; the first push
replaces the collectives in ``torch.distributed`` and ``torch.distributed.distributed_c10d`` by thin
wrappers, the last pop puts the originals back (unless something else patched on top of ours since, in
which case our wrapper stays in place as a pass-through so the other patch keeps working).

A handler is called with an :class:`Invocation` describing the call (:class:`CollectiveCall`: op, group,
sizes, dtype, reduce op, root, call site) and decides what happens: ``inv.proceed()`` issues it (through
the handlers installed earlier), ``inv.proceed_as(op, ...)`` issues another op instead, returning without
proceeding skips it. The most recently installed handler runs first, so a fault injected inside a
recorded region is seen by the recorder as what was really issued. Calls made from inside a collective
(``all_gather_object`` calls ``all_gather``) are not intercepted again.

Collectives that PyTorch issues from C++ (DDP's gradient all_reduce, functional collectives) are not
visible here. I/O: patches torch module attributes; torch is imported when the first handler is installed.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

__all__ = [
    "OPS",
    "CallSite",
    "CollectiveCall",
    "Invocation",
    "call_site",
    "intercept",
    "is_installed",
    "register_internal_module",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _OpShape:
    inputs: tuple[str, ...] = ()
    reduce: str | None = None
    root: str | None = None
    group_root: str | None = None
    variable_sizes: bool = False  # sizes may legitimately differ between ranks
    objects: bool = False  # an object collective: sizes are not comparable
    p2p: bool = False


OPS: dict[str, _OpShape] = {
    "all_reduce": _OpShape(("tensor",), reduce="op"),
    "all_reduce_coalesced": _OpShape(("tensors",), reduce="op"),
    "all_gather": _OpShape(("tensor",)),
    "all_gather_into_tensor": _OpShape(("input_tensor",)),
    "reduce_scatter": _OpShape(("input_list",), reduce="op"),
    "reduce_scatter_tensor": _OpShape(("input",), reduce="op"),
    "broadcast": _OpShape(("tensor",), root="src", group_root="group_src"),
    "reduce": _OpShape(("tensor",), reduce="op", root="dst", group_root="group_dst"),
    "gather": _OpShape(("tensor",), root="dst", group_root="group_dst"),
    "scatter": _OpShape(("tensor",), root="src", group_root="group_src"),
    "all_to_all": _OpShape(("input_tensor_list",), variable_sizes=True),
    "all_to_all_single": _OpShape(("input",), variable_sizes=True),
    "barrier": _OpShape(),
    "monitored_barrier": _OpShape(),
    "all_gather_object": _OpShape(objects=True),
    "broadcast_object_list": _OpShape(objects=True, root="src", group_root="group_src"),
    "gather_object": _OpShape(objects=True, root="dst", group_root="group_dst"),
    "scatter_object_list": _OpShape(objects=True, root="src", group_root="group_src"),
    "send": _OpShape(("tensor",), root="dst", group_root="group_dst", p2p=True),
    "recv": _OpShape(("tensor",), root="src", group_root="group_src", p2p=True),
    "isend": _OpShape(("tensor",), root="dst", group_root="group_dst", p2p=True),
    "irecv": _OpShape(("tensor",), root="src", group_root="group_src", p2p=True),
}

# Modules whose frames are never a "call site": torch itself and syncdoctor's own wrappers.
_INTERNAL_MODULES = {__name__}


def register_internal_module(name: str) -> None:
    """Frames of module ``name`` are skipped when looking for the user's call site."""
    _INTERNAL_MODULES.add(name)


@dataclass(frozen=True)
class CallSite:
    """Where the user's code issued a collective."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        path = self.file
        with contextlib.suppress(ValueError):
            rel = os.path.relpath(path)
            if not rel.startswith(".."):
                path = rel
        return f"{path}:{self.line} in {self.function}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function}


def call_site(skip: int = 1) -> CallSite | None:
    """The innermost frame outside torch and syncdoctor's wrappers (the user's code), or None."""
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module == "torch" or module.startswith("torch.") or module in _INTERNAL_MODULES):
            return CallSite(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


@dataclass(frozen=True)
class CollectiveCall:
    """What a collective call looks like from the outside: the data every rank must agree on.

    ``sizes`` holds the shape of each input tensor (``None`` for object collectives); ``root`` is the
    global rank of the source or destination (``src``/``dst``) where the op has one.
    """

    op: str
    group_ranks: tuple[int, ...]
    sizes: tuple[tuple[int, ...], ...] | None
    dtype: str | None
    reduce_op: str | None = None
    root: int | None = None
    async_op: bool = False
    is_p2p: bool = False
    site: CallSite | None = None

    @property
    def group(self) -> str:
        return "ranks " + ",".join(str(r) for r in self.group_ranks)

    def signature(self) -> tuple[Any, ...]:
        """What must be identical on every rank of the group (the call site is not part of it)."""
        shape = OPS.get(self.op, _OpShape())
        sizes = None if shape.variable_sizes else self.sizes
        return (self.op, self.group_ranks, sizes, self.dtype, self.reduce_op, self.root)

    def describe(self) -> str:
        """``all_reduce([4, 2] float32, SUM)``-style text."""
        parts = []
        if self.sizes is not None:
            parts.append(" ".join(str(list(s)) for s in self.sizes) or "no tensors")
            if self.dtype:
                parts[-1] += f" {self.dtype}"
        if self.reduce_op:
            parts.append(self.reduce_op)
        if self.root is not None:
            parts.append(f"root {self.root}")
        return f"{self.op}({', '.join(parts)})"

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "group_ranks": list(self.group_ranks),
            "sizes": None if self.sizes is None else [list(s) for s in self.sizes],
            "dtype": self.dtype,
            "reduce_op": self.reduce_op,
            "root": self.root,
            "async_op": self.async_op,
            "is_p2p": self.is_p2p,
            "site": self.site.to_json() if self.site else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CollectiveCall:
        site = data.get("site")
        sizes = data.get("sizes")
        return cls(
            op=str(data["op"]),
            group_ranks=tuple(int(r) for r in data.get("group_ranks", ())),
            sizes=None if sizes is None else tuple(tuple(int(d) for d in s) for s in sizes),
            dtype=data.get("dtype"),
            reduce_op=data.get("reduce_op"),
            root=data.get("root"),
            async_op=bool(data.get("async_op", False)),
            is_p2p=bool(data.get("is_p2p", False)),
            site=CallSite(str(site["file"]), int(site["line"]), str(site["function"])) if site else None,
        )


Handler = Callable[["Invocation"], Any]


@dataclass
class Invocation:
    """One intercepted call, handed to each handler in turn. ``bound.arguments`` may be changed."""

    call: CollectiveCall
    bound: inspect.BoundArguments
    _level: int
    _handlers: tuple[Handler, ...]
    _extra: dict[str, Any] = field(default_factory=dict)

    def proceed(self) -> Any:
        """Pass the call to the next (earlier installed) handler, or issue it."""
        if self._level <= 0:
            return _ORIGINALS[self.call.op](*self.bound.args, **self.bound.kwargs)
        nxt = Invocation(self.call, self.bound, self._level - 1, self._handlers, self._extra)
        return self._handlers[self._level - 1](nxt)

    def proceed_as(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """Issue ``op`` with these arguments instead, through the earlier installed handlers."""
        bound = _bind(op, args, kwargs)
        call = _describe(op, bound, self.call.site)
        return Invocation(call, bound, self._level, self._handlers).proceed()

    def not_issued(self) -> Any:
        """What the skipped call returns to its caller: None, or a completed work object if async."""
        if self.call.async_op or self.call.op in ("isend", "irecv"):
            return _CompletedWork()
        if self.call.op == "recv":
            return self.call.root if self.call.root is not None else -1
        return None


class _CompletedWork:
    """Stands in for a ``Work`` that was never issued: waiting on it returns at once."""

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def get_future(self) -> Any:
        import torch

        future: Any = torch.futures.Future()
        future.set_result([])
        return future


_ORIGINALS: dict[str, Callable[..., Any]] = {}
_SIGNATURES: dict[str, inspect.Signature] = {}
_WRAPPERS: dict[str, Callable[..., Any]] = {}
_HANDLERS: list[Handler] = []
_LOCK = threading.RLock()
_LOCAL = threading.local()
_GROUP_RANKS: dict[int, tuple[int, ...]] = {}


def _bind(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
    return _SIGNATURES[op].bind(*args, **kwargs)


def _group_ranks(group: Any) -> tuple[int, ...]:
    import torch.distributed as dist

    if group is None:
        group = dist.GroupMember.WORLD
    key = id(group)
    ranks = _GROUP_RANKS.get(key)
    if ranks is None:
        try:
            ranks = tuple(dist.get_process_group_ranks(group))
        except Exception:  # not initialised, or not a member
            ranks = ()
        if group is not None and ranks:
            _GROUP_RANKS[key] = ranks
    return ranks


def _shape_of(value: Any) -> tuple[tuple[int, ...], ...]:
    if isinstance(value, (list, tuple)):
        return tuple(tuple(int(d) for d in getattr(v, "shape", ())) for v in value)
    return (tuple(int(d) for d in getattr(value, "shape", ())),)


def _first_dtype(value: Any) -> str | None:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    dtype = getattr(value, "dtype", None)
    return None if dtype is None else str(dtype).replace("torch.", "")


def _describe(op: str, bound: inspect.BoundArguments, site: CallSite | None) -> CollectiveCall:
    shape = OPS[op]
    arguments = bound.arguments
    group_ranks = _group_ranks(arguments.get("group"))
    sizes: tuple[tuple[int, ...], ...] | None = None
    dtype = None
    if not shape.objects:
        sizes = ()
        for name in shape.inputs:
            if name in arguments:
                sizes += _shape_of(arguments[name])
                dtype = dtype or _first_dtype(arguments[name])
    elif op == "broadcast_object_list" and "object_list" in arguments:
        sizes = ((len(arguments["object_list"]),),)
    reduce_op = None
    if shape.reduce:
        value = arguments.get(shape.reduce, _SIGNATURES[op].parameters[shape.reduce].default)
        reduce_op = str(getattr(value, "name", value)).replace("RedOpType.", "")
    root = None
    if shape.root:
        root = arguments.get(shape.root)
        if root is None and shape.group_root and arguments.get(shape.group_root) is not None:
            group_root = int(arguments[shape.group_root])
            root = group_ranks[group_root] if group_root < len(group_ranks) else group_root
    return CollectiveCall(
        op=op,
        group_ranks=group_ranks,
        sizes=sizes,
        dtype=dtype,
        reduce_op=reduce_op,
        root=None if root is None else int(root),
        async_op=bool(arguments.get("async_op", False)),
        is_p2p=shape.p2p,
        site=site,
    )


def _make_wrapper(op: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        original = _ORIGINALS[op]
        handlers = tuple(_HANDLERS)
        if not handlers or getattr(_LOCAL, "depth", 0) > 0:
            return original(*args, **kwargs)
        try:
            bound = _bind(op, args, kwargs)
        except TypeError:
            return original(*args, **kwargs)  # let torch report the bad call in its own words
        _LOCAL.depth = 1
        try:
            call = _describe(op, bound, call_site(2))
            return handlers[-1](Invocation(call, bound, len(handlers) - 1, handlers))
        finally:
            _LOCAL.depth = 0

    wrapper.__name__ = op
    wrapper.__qualname__ = op
    wrapper.__doc__ = f"syncdoctor interception of torch.distributed.{op}"
    return wrapper


def _install() -> None:
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    for op in OPS:
        current = getattr(c10d, op, None)
        if current is None:
            continue
        _ORIGINALS[op] = current
        _SIGNATURES[op] = inspect.signature(current)
        wrapper = _make_wrapper(op)
        _WRAPPERS[op] = wrapper
        setattr(c10d, op, wrapper)
        if getattr(dist, op, None) is current:
            setattr(dist, op, wrapper)


def _uninstall() -> None:
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    for op, wrapper in list(_WRAPPERS.items()):
        for module in (c10d, dist):
            if getattr(module, op, None) is wrapper:
                setattr(module, op, _ORIGINALS[op])
            else:  # patched again on top of ours: ours stays reachable through theirs, as a pass-through
                logger.debug("%s.%s was patched after syncdoctor; leaving that patch", module.__name__, op)
        del _WRAPPERS[op]
    _GROUP_RANKS.clear()


def is_installed() -> bool:
    return bool(_HANDLERS)


@contextlib.contextmanager
def intercept(handler: Handler) -> Iterator[None]:
    """Route every Python-level collective of this process through ``handler`` inside the block."""
    with _LOCK:
        if not _HANDLERS:
            _install()
        _HANDLERS.append(handler)
    try:
        yield
    finally:
        with _LOCK:
            # remove this handler (normally the last one; tolerate out-of-order exits)
            for index in range(len(_HANDLERS) - 1, -1, -1):
                if _HANDLERS[index] is handler:
                    del _HANDLERS[index]
                    break
            if not _HANDLERS:
                _uninstall()
