"""The fallback recorder: patched ``torch.distributed`` collectives and a DDP comm hook.

Does I/O with torch (imported lazily): it replaces module attributes of ``torch.distributed`` and
``torch.distributed.distributed_c10d`` and two methods of ``DistributedDataParallel`` until
:meth:`HookSource.close`. Used when the Flight Recorder is not available (torch < 2.10 with gloo, or
its buffer turned off) or when asked for (``recorder="hooks"``).

Limits (said in docs/watch.md): collectives called through references taken before ``start()``
(``from torch.distributed import all_reduce``) are invisible; DDP models get our comm hook at their first
forward, unless they already have a Python comm hook (seen through the patched collectives it calls) or a
built-in C++ one (invisible: logged once); DDP's start-up broadcasts from C++ are not counted, which is
fine because every rank skips the same ones. Sequence numbers are our own per-group counters.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

from syncdoctor.watch.records import Signature

__all__ = ["COLLECTIVES", "HookSource"]

logger = logging.getLogger(__name__)

COLLECTIVES = (
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
    "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "barrier",
    "all_reduce_coalesced", "all_gather_coalesced", "monitored_barrier",
)
_DTYPES = {
    "float32": "Float", "float16": "Half", "bfloat16": "BFloat16", "float64": "Double", "int64": "Long",
    "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
}


class _Counter:
    __slots__ = ("completed", "done", "entered", "signatures")

    def __init__(self) -> None:
        self.entered = 0
        self.completed = 0
        self.done: set[int] = set()
        self.signatures: dict[int, Signature] = {}


class HookSource:
    """Counts entered and completed collectives per group from patched calls."""

    name = "hooks"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, _Counter] = {}
        self._restore: list[tuple[Any, str, Any]] = []
        self._warned_builtin = False
        self._install()

    # --- bookkeeping (called from the training thread and from gloo's callback threads) -------------
    def enter(self, group: str, signature: Signature) -> int:
        with self._lock:
            counter = self._groups.get(group)
            if counter is None:
                counter = self._groups[group] = _Counter()
            counter.entered += 1
            seq = counter.entered
            counter.signatures[seq] = signature
            if len(counter.signatures) > 64:
                for old in sorted(counter.signatures)[:-32]:
                    del counter.signatures[old]
            return seq

    def complete(self, group: str, seq: int) -> None:
        with self._lock:
            counter = self._groups[group]
            counter.done.add(seq)
            while counter.completed + 1 in counter.done:  # completion in order, like the Flight Recorder
                counter.completed += 1
                counter.done.discard(counter.completed)

    def readings(self) -> dict[str, tuple[int, int]]:
        with self._lock:
            return {name: (c.entered, c.completed) for name, c in self._groups.items()}

    def signature(self, group: str, seq: int) -> Signature | None:
        with self._lock:
            counter = self._groups.get(group)
            return None if counter is None else counter.signatures.get(seq)

    # --- patching ------------------------------------------------------------------------------------
    def _install(self) -> None:
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d

        for name in COLLECTIVES:
            original = getattr(c10d, name, None)
            if original is None or getattr(original, "_syncdoctor_wrapped", False):
                continue
            wrapper = self._wrap(name, original, c10d)
            self._patch(c10d, name, wrapper)
            if getattr(dist, name, None) is original:
                self._patch(dist, name, wrapper)
        self._patch_ddp()

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._restore.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def close(self) -> None:
        for owner, name, value in reversed(self._restore):
            setattr(owner, name, value)
        self._restore.clear()

    def _wrap(self, op: str, original: Callable[..., Any], c10d: Any) -> Callable[..., Any]:
        params = list(inspect.signature(original).parameters)
        group_index = params.index("group") if "group" in params else None
        async_index = params.index("async_op") if "async_op" in params else None
        source = self

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            group = kwargs.get("group")
            if group is None and group_index is not None and len(args) > group_index:
                group = args[group_index]
            if group is c10d.GroupMember.NON_GROUP_MEMBER or not c10d.is_initialized():
                return original(*args, **kwargs)
            async_op = kwargs.get("async_op")
            if async_op is None and async_index is not None and len(args) > async_index:
                async_op = args[async_index]
            try:
                name = str((group or c10d._get_default_group()).group_name)
            except Exception:  # never break the user's collective
                return original(*args, **kwargs)
            seq = source.enter(name, _signature(op, args, kwargs))
            try:
                result = original(*args, **kwargs)
            except BaseException:
                source.complete(name, seq)  # failed: not pending any more
                raise
            if async_op and result is not None:
                try:
                    result.get_future().add_done_callback(lambda _fut: source.complete(name, seq))
                except Exception:  # a backend without futures: count it done now
                    source.complete(name, seq)
            else:
                source.complete(name, seq)
            return result

        wrapper._syncdoctor_wrapped = True  # type: ignore[attr-defined]
        return wrapper

    def _patch_ddp(self) -> None:
        try:
            from torch.nn.parallel import DistributedDataParallel as DDP
        except ImportError:  # pragma: no cover
            return
        source = self
        original_forward = DDP.forward
        original_builtin = DDP._register_builtin_comm_hook

        @functools.wraps(original_forward)
        def forward(ddp: Any, *args: Any, **kwargs: Any) -> Any:
            if not getattr(ddp, "_syncdoctor_checked", False):
                ddp._syncdoctor_checked = True
                source._hook_ddp(ddp)
            return original_forward(ddp, *args, **kwargs)

        @functools.wraps(original_builtin)
        def register_builtin(ddp: Any, comm_hook_type: Any) -> Any:
            ddp._syncdoctor_builtin = True
            return original_builtin(ddp, comm_hook_type)

        self._patch(DDP, "forward", forward)
        self._patch(DDP, "_register_builtin_comm_hook", register_builtin)

    def _hook_ddp(self, ddp: Any) -> None:
        if getattr(ddp, "_comm_hooks", None):
            return  # a Python comm hook: its collectives go through the patched functions
        if getattr(ddp, "_syncdoctor_builtin", False):
            if not self._warned_builtin:
                self._warned_builtin = True
                logger.warning("syncdoctor.watch: a DDP model uses a built-in C++ comm hook; its gradient "
                               "all_reduces are invisible to the hooks recorder")
            return
        try:
            ddp.register_comm_hook(state=ddp.process_group, hook=_recording_allreduce_hook)
        except Exception as exc:  # e.g. registered too late: DDP still works without us
            logger.warning("syncdoctor.watch: could not add the recording comm hook to a DDP model: %s", exc)


def _recording_allreduce_hook(process_group: Any, bucket: Any) -> Any:
    """DDP's default all_reduce hook (average gradients), issued through the patched ``all_reduce``."""
    from torch.distributed import distributed_c10d as c10d

    group = process_group if process_group is not None else c10d._get_default_group()
    tensor = bucket.buffer()
    tensor.div_(group.size())
    work = c10d.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


# DDP checks a hook's annotations against the real GradBucket/Future types; ours are strings under
# ``from __future__ import annotations``, so they are dropped (an unannotated hook is accepted).
_recording_allreduce_hook.__annotations__ = {}


def _signature(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Signature:
    sizes: list[tuple[int, ...]] = []
    dtypes: list[str] = []
    for value in (*args[:2], *(kwargs.get(k) for k in ("tensor", "tensor_list", "output_tensor", "input_tensor"))):
        for tensor in value if isinstance(value, (list, tuple)) else (value,):
            shape = getattr(tensor, "shape", None)
            dtype = getattr(tensor, "dtype", None)
            if shape is None or dtype is None:
                continue
            sizes.append(tuple(int(d) for d in shape))
            text = str(dtype).replace("torch.", "")
            dtypes.append(_DTYPES.get(text, text))
        if sizes:
            break
    return Signature(op, tuple(sizes), tuple(dtypes))
