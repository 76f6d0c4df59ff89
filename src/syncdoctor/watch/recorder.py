"""Reading a rank's own collective progress: PyTorch's Flight Recorder status, or the hooks fallback.

Does I/O with torch (imported lazily). Both sources answer the same two questions:
``readings() -> {group name: (entered, completed)}`` (called every sampling interval, must be cheap) and
``signature(group, seq)`` (called once on suspicion: what this rank called at that sequence number).

**Flight Recorder**: two recorders, each read with ``includeCollectives=False`` for its ``pg_status``
(``last_enqueued_collective``, ``last_completed_collective`` per process group, about 5 µs):
``_dump_fr_trace_json`` (torch >= 2.10) holds gloo and the other non-NCCL backends, and
``_dump_nccl_trace_json`` (CUDA builds) holds NCCL's groups only; seen on torch 2.11.0+cu130 with NCCL
2.28.9 on an H200 (scripts/gpu-check.sh), where ``_dump_fr_trace_json`` showed only the gloo groups of an
NCCL job. Each recorder keys its groups by per-process backend ids, counted per recorder in creation order
of the groups with a backend on it (a default ``cpu:gloo,cuda:nccl`` group has one id in each), not by
group name: ``pg_config`` is empty for gloo and keyed by group name for NCCL. Ids are therefore mapped by
creation order (``_world.pg_map``, ``_world.pg_backend_config``) and corrected from the ``pg_id`` and
``process_group`` fields of entries whenever a full dump is read. For gloo, finished entries stay
``state: "scheduled"`` with ``retired: true``: completion is taken from ``last_completed_collective``.
The full dump with entries (about 1 MB, 40-55 ms for 2000 entries) is read only on suspicion.

Cost (what runs 10 times a second and at every step): on a busy machine a call that runs once in a while
pays for cold caches, so the status read costs 40-50 µs there and ``json.loads`` of its 240 bytes another
40-50 µs. The status is therefore scanned with one regular expression (``json`` only when the layout is not
the expected one), an unchanged status is not parsed again, and a step mark reads each group's sequence
number (``ProcessGroup._get_sequence_number_for_group``, about 10 µs: the same counter the status reports
as ``last_enqueued_collective``) instead of the status, falling back to the status where that fails, and
where a group has a backend on each recorder (its counter is then the NCCL side's, 1 where the status said
1 for NCCL and 2 for gloo). Anything else falls back to :mod:`syncdoctor.watch.hooks`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any, Protocol

from syncdoctor.watch.p2p import P2PLedger
from syncdoctor.watch.records import Signature, sizes_from

__all__ = [
    "NCCL",
    "OTHER",
    "FlightRecorderSource",
    "GroupDirectory",
    "ProgressSource",
    "backend_kinds",
    "entered_at_mark",
    "flight_recorder_reason",
    "parse_status",
    "recorder_of",
]

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


NCCL, OTHER = "nccl", "fr"  # the two recorders: NCCL groups', everything else's (gloo...)
_DUMPS = {OTHER: "_dump_fr_trace_json", NCCL: "_dump_nccl_trace_json"}


def backend_kinds(config: str) -> tuple[str, ...]:
    """The backends of a group from its backend config: ``"cpu:gloo,cuda:nccl"`` -> ``("gloo", "nccl")``."""
    kinds: list[str] = []
    for part in str(config or "").split(","):
        kind = part.rpartition(":")[2].strip().lower()
        if kind and kind not in kinds:
            kinds.append(kind)
    return tuple(kinds)


def recorder_of(kind: str) -> str:
    """Which Flight Recorder a backend writes to: NCCL has its own (``_dump_nccl_trace_json``)."""
    return NCCL if kind == NCCL else OTHER


class GroupDirectory:
    """Process groups this rank belongs to, in creation order, with their members (global ranks).

    Each Flight Recorder keys groups by per-process backend ids, counted per recorder in creation order of
    the groups with a backend that writes to it (NCCL's ``pg_config`` is keyed by group name, not by id, and
    gloo's is empty: neither maps ids), corrected from the entries of a full dump. A group with a backend on each recorder
    (the default ``cpu:gloo,cuda:nccl``) is published as two groups with the same members: its name for the
    NCCL side and ``name/gloo`` for the other, since each side counts its own sequence numbers.
    """

    def __init__(self) -> None:
        self.names: list[str] = []  # published group keys, in creation order
        self.members: dict[str, tuple[int, ...]] = {}
        self.version = 0  # changes whenever a backend id may map to another name
        self.recorders: frozenset[str] = frozenset()  # the recorders that hold at least one of our groups
        self.mixed = False  # some group has a backend on each recorder (its sequence number is ambiguous)
        self._order: dict[str, list[str]] = {NCCL: [], OTHER: []}  # per recorder: group keys by backend id
        self._key: dict[tuple[str, str], str] = {}  # (recorder, group name) -> published key
        self._groups: tuple[tuple[str, Any], ...] = ()  # (name, ProcessGroup)
        self._by_uid: dict[tuple[str, int], str] = {}
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
            configs = dict(getattr(self._world, "pg_backend_config", None) or {})
        except RuntimeError:  # changed while we looked: next time
            return False
        self._size = len(groups)
        grew = False
        for pg in groups:
            name = str(getattr(pg, "group_name", "") or "")
            if not name or name in self.members:
                continue
            config = configs.get(pg)
            if config is None:  # older torch: the backend name
                entry = pg_map.get(pg)
                config = str(entry[0]) if isinstance(entry, tuple) and entry else ""
            self.add(name, tuple(sorted(int(r) for r in ranks.get(pg, {}))), backend_kinds(config), pg)
            grew = True
        return grew

    def add(self, name: str, members: tuple[int, ...], kinds: tuple[str, ...], pg: Any = None) -> None:
        """Register a group (``refresh`` does it from torch's registry; tests call it with plain data)."""
        recorders = sorted({recorder_of(kind) for kind in kinds} or {OTHER}, key=lambda rec: rec != NCCL)
        for recorder in recorders:
            key = name if recorder == recorders[0] else f"{name}/{'gloo' if 'gloo' in kinds else recorder}"
            self._key[(recorder, name)] = key
            self._order[recorder].append(key)
            self.names.append(key)
            self.members[key] = members
        if len(recorders) > 1:
            self.mixed = True
        if pg is not None:
            self._groups = (*self._groups, (name, pg))  # replaced whole: read by step marks
        self.recorders = self.recorders | set(recorders)
        self.version += 1

    def sequence_numbers(self) -> dict[str, int]:
        """Collectives entered so far per group, from each group's own counter (any thread).

        Raises what torch raises where a backend has no such counter (the caller falls back). A group with
        a backend on each recorder has one counter for both sides: where :attr:`mixed`, step marks read the
        status instead.
        """
        return {name: int(pg._get_sequence_number_for_group()) for name, pg in self._groups}

    def name_of(self, uid: int, recorder: str = OTHER) -> str | None:
        """The published key of a recorder's backend id."""
        found = self._by_uid.get((recorder, uid))
        if found is not None:
            return found
        order = self._order[recorder]
        return order[uid] if 0 <= uid < len(order) else None

    def keys_of(self, recorder: str) -> list[str]:
        """The group keys whose backend writes to ``recorder``, by backend id."""
        return self._order[recorder]

    def learn(self, uid: int, name: str, recorder: str = OTHER) -> None:
        """A recorder's id is group ``name`` (from the ``pg_id`` and ``process_group`` of a full dump's entries)."""
        key = self._key.get((recorder, name), name)
        if self.name_of(uid, recorder) != key:
            logger.debug(
                "flight recorder %s pg id %d is group %r (creation order said %r)",
                recorder, uid, key, self.name_of(uid, recorder),
            )
            self.version += 1
        self._by_uid[(recorder, uid)] = key


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
    """Progress from the Flight Recorders' status (NCCL's and the other backends'); signatures from a full dump.

    ``dumps`` maps a recorder (:data:`NCCL`, :data:`OTHER`) to its JSON dump function, by default those this
    torch has. Only the recorders that hold one of our groups are read (about 5 µs each). A raw status is
    what :meth:`status` returns: ``((recorder, bytes), ...)``.
    """

    name = "flight_recorder"

    def __init__(
        self,
        directory: GroupDirectory,
        dumps: dict[str, Callable[..., Any]] | None = None,
        p2p: P2PLedger | None = None,
    ) -> None:
        if dumps is None:
            import torch._C._distributed_c10d as c10d_ext

            dumps = {rec: getattr(c10d_ext, fn) for rec, fn in _DUMPS.items() if hasattr(c10d_ext, fn)}
        self._dumps = dumps
        self.directory = directory
        self.p2p = p2p
        self.empty_reads = 0
        # (raw, directory version, p2p ids version, readings)
        self._last: tuple[Any, int, int, dict[str, tuple[int, int]]] | None = None
        self._completed_ids: dict[str, int] = {}  # group -> the raw id of its last completed collective

    def status(self) -> tuple[tuple[str, Any], ...]:
        """The raw status of each recorder that holds one of our groups (no entries): about 240 bytes each."""
        wanted = self.directory.recorders or {OTHER}
        # positional arguments: cheaper than keywords through pybind
        return tuple((rec, dump(False, False)) for rec, dump in self._dumps.items() if rec in wanted)

    def readings(self) -> dict[str, tuple[int, int]]:
        """``{group key: (entered, completed)}`` now. The returned dict is shared: do not change it."""
        self.directory.refresh()
        out = self.parse(self.status())
        self.empty_reads = self.empty_reads + 1 if not out else 0
        return out

    def records_nothing(self, c10d: Any) -> bool:
        """At every 40th empty read in a row: whether the default group issued collectives all the same (the
        recorder's buffer is off). Never raises."""
        if not self.empty_reads or self.empty_reads % 40:
            return False
        try:
            default = c10d._get_default_group()
            # gloo counts point-to-point calls too, and records none of them
            p2p_ops = self.p2p.p2p_ops(str(default.group_name)) if self.p2p is not None else 0
            return int(default._get_sequence_number_for_group()) - p2p_ops > 0
        except Exception:
            return False

    def parse(self, raw: tuple[tuple[str, Any], ...]) -> dict[str, tuple[int, int]]:
        """Readings from a raw status; the previous result again when neither it nor the directory changed.

        Where the backend numbers point-to-point calls among its operations (gloo), the status holds the
        operation id of the last collective entered and completed; the ledger turns ids into collective
        counts, which are what ranks compare.
        """
        ids_version = self.p2p.ids_version() if self.p2p is not None else 0
        last = self._last
        if last is not None and last[1] == self.directory.version and last[2] == ids_version and last[0] == raw:
            return last[3]
        name_of = self.directory.name_of
        out: dict[str, tuple[int, int]] = {}
        for recorder, text in raw:
            for uid, pair in parse_status(text).items():
                name = name_of(uid, recorder)
                if name is not None:
                    out[name] = pair
        if ids_version and self.p2p is not None:
            for name, (entered, completed) in out.items():
                if f"{name}/gloo" in self.directory.members:
                    continue  # two backends behind one name: which one counted the call is unknown
                self._completed_ids[name] = completed
                out[name] = (self.p2p.collectives_up_to(name, entered), self.p2p.collectives_up_to(name, completed))
        self._last = (raw, self.directory.version, ids_version, out)
        return out

    def settle(self) -> None:
        """Forget point-to-point ids older than every group's last completed collective (bounded memory).

        Called after a sample's step marks were parsed: those may still need ids above the completed one.
        """
        if self.p2p is not None:
            for name, completed in self._completed_ids.items():
                self.p2p.forget_ids_below(name, completed)

    def collective_counts(self, counters: dict[str, int]) -> dict[str, int]:
        """The groups' operation counters (:meth:`GroupDirectory.sequence_numbers`) as collective counts."""
        if self.p2p is None:
            return counters
        return {name: self.p2p.collectives_up_to(name, value) for name, value in counters.items()}

    def full_dump(self, recorder: str = OTHER) -> dict[str, Any]:
        return json.loads(self._dumps[recorder](includeCollectives=True, onlyActive=False))

    def signature(self, group: str, seq: int) -> Signature | None:
        recorder = NCCL if group in self.directory.keys_of(NCCL) else OTHER
        if recorder not in self._dumps:
            return None
        entries = self.full_dump(recorder).get("entries") or []
        found = None
        for entry in entries:
            try:
                uid = int(entry.get("pg_id"))
                pg = entry.get("process_group") or []
                if pg:
                    self.directory.learn(uid, str(pg[0]), recorder)
            except (TypeError, ValueError):
                continue
            if entry.get("is_p2p") or self.directory.name_of(uid, recorder) != group:
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


def entered_at_mark(raw: Any, source: ProgressSource | None) -> dict[str, int] | None:
    """A step mark's ``{group: entered}`` from what the training thread read at the mark (sequence numbers,
    a raw status or readings; see ``Watcher._mark``), or ``None`` when that says nothing usable."""
    if raw is None:
        return None
    if isinstance(raw, dict):
        return source.collective_counts(raw) if isinstance(source, FlightRecorderSource) else raw
    if not isinstance(source, FlightRecorderSource):
        return None
    return {name: entered for name, (entered, _completed) in source.parse(raw).items()}
