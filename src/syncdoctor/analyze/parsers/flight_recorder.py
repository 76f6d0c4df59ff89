"""PyTorch Flight Recorder dumps (NCCL and gloo), JSON or pickle, read safely. Pure: no I/O (the caller
reads at most ``MAX_DUMP_BYTES`` and passes the bytes).

A dump is ``{version, pg_config, pg_status, entries[, nccl_comm_state, comm_lib_version]}``:
``pg_config`` maps a group name to ``{name, desc, ranks: "[0, 1]"}`` (ranks as a string); ``pg_status`` maps a
group id to ``{last_enqueued_collective, last_started_collective, last_completed_collective}`` (strings in
JSON, ints in pickle, -1 for none); each entry has ``record_id, pg_id, process_group: (name, desc),
collective_seq_id, p2p_seq_id, op_id, profiling_name`` (``nccl:all_reduce``, ``gloo:broadcast``, ``nccl:send
1->2``), ``input_sizes, input_dtypes, output_sizes, output_dtypes, state, retired, timeout_ms, is_p2p,
time_created_ns`` and, in pickles with stacks, ``frames``.

Pickles are loaded by :class:`SafeUnpickler`, which builds only plain containers, strings, numbers, bools,
None and bytes: any global (class or function) is refused except a few TorchScript list builders that
map to ``list``. The dump does not name its rank: it comes from the file name (``rank3.json``,
``nccl_trace_rank_3``, or a trailing number as torchfrtrace's ``<prefix><rank>``).

For gloo, entries stay in state ``scheduled``; ``retired`` means the work ended (completed or timed out).
"""

from __future__ import annotations

import io
import json
import pickle
import re
from collections.abc import Mapping
from typing import Any

from syncdoctor.analyze.model import FrDump, FrEntry, FrGroup, Ref
from syncdoctor.analyze.parsers.base import normalize_op
from syncdoctor.errors import InputError

__all__ = ["MAX_DUMP_BYTES", "SafeUnpickler", "looks_like_dump", "parse_dump", "rank_from_name"]

MAX_DUMP_BYTES = 256 * 1024 * 1024

_SAFE_GLOBALS = {
    ("torch.jit._pickle", "build_intlist"): list,
    ("torch.jit._pickle", "build_doublelist"): list,
    ("torch.jit._pickle", "build_boollist"): list,
    ("torch.jit._pickle", "build_list"): list,
}


class SafeUnpickler(pickle.Unpickler):
    """An unpickler that refuses every global, so no code runs and no object other than plain data is built."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[(module, name)]
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name} from a dump")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refusing persistent ids in a dump")


def safe_loads(data: bytes) -> Any:
    try:
        return SafeUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            OverflowError, MemoryError, RecursionError, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable Flight Recorder pickle: {exc}") from exc


def looks_like_dump(doc: object) -> bool:
    return isinstance(doc, Mapping) and "entries" in doc and ("pg_status" in doc or "version" in doc)


_TRAILING = re.compile(r"(\d{1,6})(?:\.\w{1,8})*$")


def rank_from_name(name: str, from_path: int | None) -> int | None:
    if from_path is not None:
        return from_path
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    match = _TRAILING.search(base)
    return int(match[1]) if match else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _progress(value: Any) -> int | None:
    number = _int(value)
    return None if number is None or number < 0 else number


def _sizes(value: Any) -> tuple[tuple[int, ...], ...]:
    if not isinstance(value, (list, tuple)):
        return ()
    out = []
    for shape in value[:64]:
        if isinstance(shape, (list, tuple)):
            out.append(tuple(v for v in (_int(x) for x in shape[:16]) if v is not None))
    return tuple(out)


def _ranks(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        return tuple(int(x) for x in re.findall(r"-?\d+", value)[:100_000])
    if isinstance(value, (list, tuple)):
        return tuple(v for v in (_int(x) for x in value) if v is not None)
    return ()


def _frames(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        return ()
    frames = []
    for frame in value[:32]:
        if isinstance(frame, Mapping):
            filename = str(frame.get("filename", "?")).rsplit("/", 1)[-1]
            frames.append(f"{filename}:{frame.get('line', '?')} in {frame.get('name', '?')}")
    return tuple(frames)


def _entry(raw: Mapping[str, Any]) -> FrEntry | None:
    name = raw.get("profiling_name")
    if not isinstance(name, str):
        return None
    backend, _, op = name.partition(":")
    if not op:
        backend, op = "", name
    group = raw.get("process_group")
    pg_name = str(group[0]) if isinstance(group, (list, tuple)) and group else ""
    dtypes = raw.get("input_dtypes")
    return FrEntry(
        record_id=_int(raw.get("record_id")) or 0,
        pg_id=str(raw.get("pg_id", "")),
        pg_name=pg_name,
        seq=_int(raw.get("collective_seq_id")) or 0,
        p2p_seq=_int(raw.get("p2p_seq_id")) or 0,
        op=normalize_op(op),
        backend=backend,
        input_sizes=_sizes(raw.get("input_sizes")),
        output_sizes=_sizes(raw.get("output_sizes")),
        dtypes=tuple(str(d) for d in dtypes[:16]) if isinstance(dtypes, (list, tuple)) else (),
        state=str(raw.get("state", "")),
        retired=bool(raw.get("retired", False)),
        is_p2p=bool(raw.get("is_p2p", False)),
        time_created_ns=_int(raw.get("time_created_ns")),
        timeout_ms=_int(raw.get("timeout_ms")),
        frames=_frames(raw.get("frames")),
        op_id=_int(raw.get("op_id")),
    )


def _collective_number(entries: list[FrEntry], pg_id: str, value: int | None) -> int | None:
    """gloo's status holds the operation id of the last collective, and gloo numbers sends and receives
    among its operations without recording them (torch 2.13): the entry with that id gives the collective's
    own number, which is what ranks compare. Other backends' status holds collective numbers already."""
    if value is None:
        return None
    for entry in reversed(entries):
        if entry.pg_id == pg_id and entry.op_id == value and not entry.is_p2p and entry.backend == "gloo":
            return entry.seq
    return value


def _groups(doc: Mapping[str, Any], entries: list[FrEntry]) -> tuple[FrGroup, ...]:
    raw_config, raw_status = doc.get("pg_config"), doc.get("pg_status")
    config: Mapping[Any, Any] = raw_config if isinstance(raw_config, Mapping) else {}
    status: Mapping[Any, Any] = raw_status if isinstance(raw_status, Mapping) else {}
    names = {e.pg_id: e.pg_name for e in entries}
    groups = []
    for pg_id, values in status.items():
        if not isinstance(values, Mapping):
            continue
        name = names.get(str(pg_id), str(pg_id))
        cfg = config.get(name) or config.get(str(pg_id))
        if cfg is None and len(config) == 1 and len(status) == 1:
            cfg = next(iter(config.values()))
        cfg = cfg if isinstance(cfg, Mapping) else {}
        groups.append(FrGroup(
            pg_id=str(pg_id),
            name=name,
            desc=str(cfg.get("desc", "")),
            ranks=_ranks(cfg.get("ranks")),
            last_enqueued=_collective_number(entries, str(pg_id), _progress(values.get("last_enqueued_collective"))),
            last_started=_progress(values.get("last_started_collective")),
            last_completed=_collective_number(entries, str(pg_id), _progress(values.get("last_completed_collective"))),
        ))
    return tuple(groups)


def parse_dump(data: bytes, fmt: str, ref: Ref, rank: int | None, host: str | None = None) -> FrDump:
    """Parse one dump (``fmt`` is ``json`` or ``pickle``). Raises InputError when it is not a dump."""
    if len(data) > MAX_DUMP_BYTES:
        raise InputError(f"{ref}: dump larger than {MAX_DUMP_BYTES // (1024 * 1024)} MiB, skipped")
    if fmt == "pickle":
        doc = safe_loads(data)
    else:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{ref}: not valid JSON: {exc}") from exc
    if not looks_like_dump(doc):
        raise InputError(f"{ref}: not a Flight Recorder dump (no entries/pg_status)")
    raw_entries = doc.get("entries") if isinstance(doc.get("entries"), (list, tuple)) else []
    entries = [e for e in (_entry(raw) for raw in raw_entries if isinstance(raw, Mapping)) if e is not None]
    entries.sort(key=lambda e: e.record_id)
    return FrDump(ref=ref, rank=rank, version=str(doc.get("version", "")), groups=_groups(doc, entries),
                  entries=tuple(entries), host=host)
