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
Older torch builds with only ``_dump_nccl_trace_json`` are used for NCCL groups when their buffer is on
(``TORCH_NCCL_TRACE_BUFFER_SIZE`` > 0). Anything else falls back to :mod:`syncdoctor.watch.hooks`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any, Protocol

from syncdoctor.watch.records import Signature, sizes_from

__all__ = ["FlightRecorderSource", "GroupDirectory", "ProgressSource", "flight_recorder_reason"]

logger = logging.getLogger(__name__)


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
        self._by_uid: dict[int, str] = {}
        self._size = -1

    def refresh(self) -> bool:
        """Pick up new groups (cheap when nothing changed); True when the list grew."""
        from torch.distributed import distributed_c10d as c10d

        pg_map = c10d._world.pg_map
        if len(pg_map) == self._size:
            return False
        try:
            groups = list(pg_map)
            ranks = c10d._world.pg_group_ranks
        except RuntimeError:  # changed while we looked: next time
            return False
        self._size = len(groups)
        grew = False
        for pg in groups:
            name = str(getattr(pg, "group_name", "") or "")
            if not name or name in self.members:
                continue
            self.names.append(name)
            self.members[name] = tuple(sorted(int(r) for r in ranks.get(pg, {})))
            grew = True
        return grew

    def name_of(self, uid: int) -> str | None:
        if uid in self._by_uid:
            return self._by_uid[uid]
        return self.names[uid] if 0 <= uid < len(self.names) else None

    def learn(self, uid: int, name: str) -> None:
        if self.name_of(uid) != name:
            logger.debug("flight recorder pg id %d is group %r (creation order said %r)", uid, name, self.name_of(uid))
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

    def readings(self) -> dict[str, tuple[int, int]]:
        self.directory.refresh()
        status = json.loads(self._dump(includeCollectives=False, onlyActive=False)).get("pg_status") or {}
        out: dict[str, tuple[int, int]] = {}
        for uid_text, values in status.items():
            try:
                uid = int(uid_text)
                entered = max(0, int(values.get("last_enqueued_collective", -1)))
                completed = max(0, int(values.get("last_completed_collective", -1)))
            except (TypeError, ValueError, AttributeError):
                continue
            name = self.directory.name_of(uid)
            if name is not None:
                out[name] = (entered, completed)
        self.empty_reads = self.empty_reads + 1 if not out else 0
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
