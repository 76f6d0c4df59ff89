"""Reading a rank's own collective progress: PyTorch's Flight Recorder status, or the hooks fallback.

Does I/O with torch (imported lazily). Both sources answer the same two questions:
``readings() -> {group name: (entered, completed)}`` (called every sampling interval, must be cheap) and
``signature(group, seq)`` (called once on suspicion: what this rank called at that sequence number).

**Flight Recorder** (``torch._C._distributed_c10d._dump_fr_trace_json``, torch >= 2.10; verified on 2.13
with gloo): ``includeCollectives=False`` returns only ``pg_status`` (``last_enqueued_collective``,
``last_completed_collective`` per process group) in about 5 µs. Its keys are per-process backend ids
(creation order of the groups this rank belongs to), not group names, and ``pg_config`` is not filled in
for gloo, so ids are mapped to names by creation order (``_world.pg_map``) and corrected from the
``process_group`` field of entries whenever a full dump is read. For gloo, finished entries stay
``state: "scheduled"`` with ``retired: true``: completion is taken from ``last_completed_collective``.
The full dump with entries (about 1 MB, 40-55 ms for 2000 entries) is read only on suspicion.

Cost (what runs 10 times a second and at every step): on a busy machine a call that runs once in a while
pays for cold caches, so the status read costs 40-50 µs there and ``json.loads`` of its 240 bytes another
40-50 µs. The status is therefore scanned with one regular expression (``json`` only when the layout is not
the expected one), an unchanged status is not parsed again, and a step mark reads each group's sequence
number (``ProcessGroup._get_sequence_number_for_group``, about 10 µs: the same counter the status reports
as ``last_enqueued_collective``) instead of the status, falling back to the status where that fails.
Older torch builds with only ``_dump_nccl_trace_json`` are used for NCCL groups when their buffer is on
(``TORCH_NCCL_TRACE_BUFFER_SIZE`` > 0). Anything else falls back to :mod:`syncdoctor.watch.hooks`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any, Protocol

from syncdoctor.watch.records import Signature, sizes_from

__all__ = ["FlightRecorderSource", "GroupDirectory", "ProgressSource", "flight_recorder_reason", "parse_status"]

logger = logging.getLogger(__name__)

# nlohmann::json writes object keys sorted: completed, enqueued, started
_STATUS_ENTRY = re.compile(rb'"(\d+)":\{"last_completed_collective":"(-?\d+)","last_enqueued_collective":"(-?\d+)"')
_ENQUEUED_KEY = b'"last_enqueued_collective"'
_NO_STATUS = b'"pg_status":{}'


def parse_status(raw: bytes) -> dict[int, tuple[int, int]]:
    """``{backend id: (entered, completed)}`` from a Flight Recorder status dump (counts below 0 read as 0).

    A regular-expression scan of the layout torch writes; the JSON parser when the scan does not account
    for every group (another layout) or the input is not bytes. Raises ValueError on input that is not JSON.
    """
    if isinstance(raw, bytes):
        found = _STATUS_ENTRY.findall(raw)
        if found and len(found) == raw.count(_ENQUEUED_KEY):
            return {int(uid): (max(0, int(entered)), max(0, int(completed))) for uid, completed, entered in found}
        if not found and _NO_STATUS in raw:
            return {}
    status = json.loads(raw).get("pg_status") or {}
    out: dict[int, tuple[int, int]] = {}
    for uid_text, values in status.items():
        try:
            entered = max(0, int(values.get("last_enqueued_collective", -1)))
            out[int(uid_text)] = (entered, max(0, int(values.get("last_completed_collective", -1))))
        except (TypeError, ValueError, AttributeError):
            continue
    return out


class ProgressSource(Protocol):
    name: str

    def readings(self) -> dict[str, tuple[int, int]]: ...

    def signature(self, group: str, seq: int) -> Signature | None: ...

    def close(self) -> None: ...


class GroupDirectory:
    """Process groups this rank belongs to, in creation order, with their members (global ranks)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.members: dict[str, tuple[int, ...]] = {}
        self.version = 0  # changes whenever a backend id may map to another name
        self._groups: tuple[tuple[str, Any], ...] = ()  # (name, ProcessGroup), replaced whole (read by marks)
        self._by_uid: dict[int, str] = {}
        self._size = -1
        self._world: Any = None
        self._lock = threading.Lock()  # the sampler and, at a step mark, the training thread refresh

    def refresh(self) -> bool:
        """Pick up new groups (cheap when nothing changed); True when the list grew. Any thread."""
        if self._world is None:
            from torch.distributed import distributed_c10d as c10d

            self._world = c10d._world
        if len(self._world.pg_map) == self._size:
            return False
        with self._lock:
            return self._refresh()

    def _refresh(self) -> bool:
        pg_map = self._world.pg_map
        if len(pg_map) == self._size:
            return False
        try:
            groups = list(pg_map)
            ranks = self._world.pg_group_ranks
        except RuntimeError:  # changed while we looked: next time
            return False
        self._size = len(groups)
        grew = False
        known = list(self._groups)
        for pg in groups:
            name = str(getattr(pg, "group_name", "") or "")
            if not name or name in self.members:
                continue
            self.names.append(name)
            self.members[name] = tuple(sorted(int(r) for r in ranks.get(pg, {})))
            known.append((name, pg))
            grew = True
        if grew:
            self._groups = tuple(known)
            self.version += 1
        return grew

    def sequence_numbers(self) -> dict[str, int]:
        """Collectives entered so far per known group, from each group's own counter (any thread).

        Raises what torch raises where a backend has no such counter (the caller falls back).
        """
        return {name: int(pg._get_sequence_number_for_group()) for name, pg in self._groups}

    def name_of(self, uid: int) -> str | None:
        if uid in self._by_uid:
            return self._by_uid[uid]
        return self.names[uid] if 0 <= uid < len(self.names) else None

    def learn(self, uid: int, name: str) -> None:
        if self.name_of(uid) != name:
            logger.debug("flight recorder pg id %d is group %r (creation order said %r)", uid, name, self.name_of(uid))
            self.version += 1
        self._by_uid[uid] = name


def flight_recorder_reason() -> str:
    """Empty when the Flight Recorder can be used here, else why not."""
    try:
        import torch._C._distributed_c10d as c10d_ext
    except ImportError as exc:  # pragma: no cover - torch without distributed
        return f"torch.distributed unavailable: {exc}"
    if not hasattr(c10d_ext, "_dump_fr_trace_json"):
        return "this torch build has no _dump_fr_trace_json (the Flight Recorder status needs torch >= 2.10)"
    for name in ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        value = os.environ.get(name)
        if value is not None and value.strip() in ("0", "-1"):
            return f"the Flight Recorder buffer is off ({name}={value.strip()})"
    return ""


class FlightRecorderSource:
    """Progress from the Flight Recorder's status; signatures from a full dump, on request."""

    name = "flight_recorder"

    def __init__(self, directory: GroupDirectory, dump: Callable[..., bytes] | None = None) -> None:
        if dump is None:
            import torch._C._distributed_c10d as c10d_ext

            dump = c10d_ext._dump_fr_trace_json
        self._dump = dump
        self.directory = directory
        self.empty_reads = 0
        self._last: tuple[Any, int, dict[str, tuple[int, int]]] | None = None  # (raw, directory version, readings)

    def status(self) -> bytes:
        """The raw status (no entries): about 240 bytes."""
        return self._dump(False, False)  # positional: cheaper than keywords through pybind

    def readings(self) -> dict[str, tuple[int, int]]:
        """``{group name: (entered, completed)}`` now. The returned dict is shared: do not change it."""
        self.directory.refresh()
        out = self.parse(self.status())
        self.empty_reads = self.empty_reads + 1 if not out else 0
        return out

    def parse(self, raw: Any) -> dict[str, tuple[int, int]]:
        """Readings from a raw status; the previous result again when neither it nor the directory changed."""
        last, version = self._last, self.directory.version
        if last is not None and last[1] == version and last[0] == raw:
            return last[2]
        name_of = self.directory.name_of
        out = {}
        for uid, counts in parse_status(raw).items():
            name = name_of(uid)
            if name is not None:
                out[name] = counts
        self._last = (raw, version, out)
        return out

    def full_dump(self) -> dict[str, Any]:
        return json.loads(self._dump(includeCollectives=True, onlyActive=False))

    def signature(self, group: str, seq: int) -> Signature | None:
        entries = self.full_dump().get("entries") or []
        found = None
        for entry in entries:
            try:
                uid = int(entry.get("pg_id"))
                pg = entry.get("process_group") or []
                if pg:
                    self.directory.learn(uid, str(pg[0]))
            except (TypeError, ValueError):
                continue
            if entry.get("is_p2p") or self.directory.name_of(uid) != group:
                continue
            if int(entry.get("collective_seq_id", -1)) == seq:
                found = entry
        if found is None:
            return None
        op = str(found.get("profiling_name", "?")).split(":", 1)[-1]
        return Signature(
            op, sizes_from(found.get("input_sizes")), tuple(str(d) for d in found.get("input_dtypes") or ()),
            sizes_from(found.get("output_sizes")),
        )

    def close(self) -> None:
        return None
