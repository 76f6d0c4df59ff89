"""A rank's side of the job's store: its record, its answers to the control message, the monitor's lease.

Does I/O: the job's store (through the :class:`~syncdoctor.watch.keys.ScopedStore` it is given), the
process states of pids on this host, stack captures of this process, Flight Recorder dumps on request.
The clocks are passed in. Runs on the watcher's publisher thread (and, for the final record, on whichever
thread says goodbye); never on the training thread.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Set
from typing import Any

from syncdoctor.watch import native
from syncdoctor.watch.config import WatchConfig
from syncdoctor.watch.control import AbortOrder, ControlMessage, read_control, read_control_text
from syncdoctor.watch.keys import JobKeys, ScopedStore
from syncdoctor.watch.local import ActivityMeter, Identity, capture_stack, process_state
from syncdoctor.watch.node import NodeChannel, node_base
from syncdoctor.watch.p2p import P2PLedger
from syncdoctor.watch.recorder import NCCL, OTHER, GroupDirectory
from syncdoctor.watch.records import RankRecord, Solo, encode_record, encode_stack, format_ranks
from syncdoctor.watch.sampler import Sampler
from syncdoctor.watch.stacks import NATIVE_PENDING, StackReport

__all__ = ["Publisher", "SoloPhase", "write_flight_recorder_dump"]

logger = logging.getLogger("syncdoctor.watch")

SoloPhase = tuple[int, str, float, float | None]  # token, name, start (clock), up_to_s


class Publisher:
    """What this rank says about itself, and the store it says it to once attached.

    ``state`` (``starting``, ``running``, ``aborting``, ``failed``, ``exited``), ``error`` and
    ``fail_order`` are set by the watcher; the rest is this class's own bookkeeping. After a final record
    (:meth:`publish` with ``final=True``) nothing more is published.
    """

    def __init__(
        self,
        config: WatchConfig,
        sampler: Sampler,
        p2p: P2PLedger,
        directory: GroupDirectory,
        activity: ActivityMeter,
        solo: list[SoloPhase],
        source_name: Callable[[], str],
        *,
        main_ident: int | None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.sampler = sampler
        self.p2p = p2p
        self.directory = directory
        self.activity = activity
        self.solo = solo
        self.source_name = source_name
        self.main_ident = main_ident
        self.clock = clock
        self.wall_clock = wall_clock
        self.identity: Identity | None = None
        self.keys: JobKeys | None = None
        self.store: ScopedStore | None = None
        self.heartbeat = 0
        self.state = "starting"
        self.error: str | None = None
        self.fail_order: int | None = None
        self.final = False
        self.stack_gen = 0
        self.ack = 0
        self.ctl_gen = 0
        self.dump_gen = 0
        self.inspect: dict[int, str] = {}
        self._published_groups: set[str] = set()
        self._lease_seen: tuple[bytes, float] | None = None
        self._activity_failing = False
        self._lock = threading.RLock()
        self._native_busy = threading.Event()  # a py-spy capture runs (one at a time)
        self.node: NodeChannel | None = None  # node aggregation (syncdoctor.watch.node)
        self._mirrored = -1  # control generation this rank mirrored for its node, as its leader

    def attach(self, store: ScopedStore, keys: JobKeys, me: Identity) -> None:
        """Start publishing to ``store``: the job's pointer and settings first, then this rank's records."""
        store.set(keys.pointer, str(me.attempt))
        config = self.config
        meta = {"world_size": me.world_size, "interval_s": config.interval_s, "monitor": config.monitor,
                "warn_after_s": config.warn_after_s, "confirm_after_s": config.confirm_after_s,
                "dead_after_s": config.dead_after_s}
        store.set(keys.meta, json.dumps(meta))
        self.ctl_gen = store.add(keys.ctl_gen, 0)
        self.identity, self.keys, self.store = me, keys, store
        self.node = self._open_node(store, keys, me)
        self.state = "running"

    def _open_node(self, store: ScopedStore, keys: JobKeys, me: Identity) -> NodeChannel | None:
        """This rank's node channel, unless aggregation is off (or ``auto`` in a small job), the node has one
        rank, or no directory can be had (said once: the rank then publishes its own record)."""
        if not self.config.aggregates(me.world_size) or os.environ.get("LOCAL_WORLD_SIZE", "").strip() == "1":
            return None
        token = store.compare_set(keys.token, "", secrets.token_hex(8)).decode(errors="replace")
        channel, why = NodeChannel.open(node_base(self.config.node_dir), token, me.host_key, me.rank)
        if channel is None:
            logger.warning("syncdoctor.watch: rank %d publishes its own record: %s", me.rank, why)
        return channel

    def record(self) -> RankRecord:
        assert self.identity is not None
        me, now = self.identity, self.clock()
        for pid in list(self.inspect):
            self.inspect[pid] = process_state(pid)
        activity = None
        sampler = self.sampler
        try:
            self.activity.sample(now)
            quiet = sampler.quiet_s(now)
            # what it has done since its collectives and steps last moved: before that it was training
            activity = None if quiet is None else self.activity.current(since=now - quiet)
        except Exception as exc:  # a measurement that fails must not stop the record: say it once
            if not self._activity_failing:
                self._activity_failing = True
                logger.warning("syncdoctor.watch: cannot measure the main thread's activity: %s", exc)
        solo = None
        phases = list(self.solo)
        if phases:
            _token, name, started, up_to = phases[-1]
            solo = Solo(name, now - started, up_to)
        return RankRecord(
            rank=me.rank, world_size=me.world_size, host=me.host, node=me.node, pid=me.pid, local_rank=me.local_rank,
            attempt=me.attempt, heartbeat=self.heartbeat, state=self.state,
            source=self.source_name(), step=sampler.step, step_age_s=sampler.step_age_s(now),
            quiet_s=sampler.quiet_s(now), groups=sampler.progress(now), step_marks=sampler.marks(),
            waits=sampler.waits(), stack_gen=self.stack_gen, ack=self.ack, error=self.error,
            fail_order=self.fail_order, inspected=dict(self.inspect), published=self.wall_clock(),
            waits_total=sampler.waits_total(), p2p=self.p2p.progress(now), activity=activity, solo=solo,
            read_age_s=sampler.reading_age_s(now),
        )

    def publish(self, final: bool = False) -> None:
        """Publish this rank's record (and the members of groups not published yet); ``final``: the last."""
        with self._lock:
            if self.final or self.store is None or self.keys is None or self.identity is None:
                return
            self.heartbeat += 1
            for name in self.directory.names:
                if name not in self._published_groups:
                    self.store.set(self.keys.group(name), format_ranks(self.directory.members[name]))
                    self._published_groups.add(name)
            blob = encode_record(self.record())
            if self.node is None:
                self.store.set(self.keys.rank(self.identity.rank), blob)
            else:
                self._relay(blob, final)
            if final:
                self.final = True

    def _relay(self, blob: bytes, final: bool = False) -> None:
        """Node aggregation: hand the record to the node's leader; when this rank leads, publish the node's
        records as one value (the store sees one request per node and interval). A final record (the rank
        exits or fails) is published at once whoever leads, and a leader then resigns."""
        assert self.node is not None and self.store is not None and self.keys is not None
        keys, store = self.keys, self.store
        try:
            self.node.write_record(blob)
            leading = self.node.lead(self.config.interval_s)
        except OSError as exc:  # the node directory went away, or is full: publish alone from now on
            logger.warning("syncdoctor.watch: node channel lost (%s); rank %d publishes its own record", exc,
                           self.identity.rank if self.identity else -1)
            self.node.forget()  # the leader must not relay this rank's last record any more: its key is read
            self.node = None
            store.set(keys.rank(self.identity.rank if self.identity else 0), blob)
            return
        if leading or (final and self.node.index_known()):
            self._publish_node(self.node, store, keys)
        if final:
            self.node.resign()  # a node-mate leads from its next publication
            self.node.close()

    def poll_control(self) -> AbortOrder | None:
        """Answer what the control message asks of this rank, if it changed; its abort order, if any."""
        assert self.store is not None and self.keys is not None and self.identity is not None
        gen, message = self._read_control()
        if gen == self.ctl_gen:
            return None
        self.ctl_gen = gen
        if message is None:
            return None
        me = self.identity
        republish = False
        wanted = message.stacks.get(me.rank, 0)
        if wanted > self.stack_gen and self.config.stacks:
            report = capture_stack(me.rank, wanted, self.main_ident)
            if report.in_native and self.config.native_stacks and not self._native_busy.is_set():
                report = dataclasses.replace(report, native_note=NATIVE_PENDING)
                self._native_busy.set()
                threading.Thread(target=self._add_native, args=(report,), name="syncdoctor-watch-native",
                                 daemon=True).start()
            self.store.set(self.keys.stack(me.rank), encode_stack(report))
            self.stack_gen = wanted
            republish = True
        for pid, host_key in message.inspect.items():
            if host_key == me.host_key and pid != me.pid and pid not in self.inspect:
                self.inspect[pid] = process_state(pid)
                republish = True
        if message.dump > self.dump_gen:
            self.dump_gen = message.dump
            write_flight_recorder_dump(me.rank, self.directory.recorders)
        self.ack = gen
        if republish:
            self.publish()
        return message.abort

    def relay(self) -> None:
        """A node leader's relay between two publications: its node-mates' latest records, so that none waits
        more than half an interval for the leader (two relays an interval; the store still serves requests
        per node)."""
        with self._lock:
            node, store, keys = self.node, self.store, self.keys
            if node is None or not node.leading or store is None or keys is None or self.final:
                return
            self._publish_node(node, store, keys)

    @staticmethod
    def _publish_node(node: NodeChannel, store: ScopedStore, keys: JobKeys) -> None:
        """The node's records as one value, under its number (registered once)."""
        index = node.node_index(lambda: store.add(keys.nodes_count, 1) - 1)
        value = node.gather()
        if value is not None:  # (the directory went away under it: the value published before stands)
            store.set(keys.node(index), value)

    def _read_control(self) -> tuple[int, ControlMessage | None]:
        """The control generation and message: from the store, or from the node's leader's mirror (which the
        leader writes here when the generation moved, or when it has just become the leader)."""
        assert self.store is not None and self.keys is not None
        node = self.node
        if node is None:
            return read_control(self.store, self.keys, self.ctl_gen)
        if node.leading:
            gen, text = read_control_text(self.store, self.keys, self._mirrored)
            if text is not None:
                node.mirror_control(gen, text)
                self._mirrored = gen
            # the leader reads and mirrors each generation once, and poll_control then takes it as seen
            if gen == self.ctl_gen or text is None:
                return gen, None
            return gen, ControlMessage.from_json(text)
        self._mirrored = -1  # mirror again if this rank becomes the leader
        mirrored = node.read_control()
        if mirrored is None:
            return self.ctl_gen, None
        gen, text = mirrored
        return gen, None if gen == self.ctl_gen else ControlMessage.from_json(text)

    def _add_native(self, report: StackReport) -> None:
        """On its own thread: take the native stack (py-spy, seconds at most) and publish the stack again
        with it, unless a newer stack was asked for meanwhile. Never raises."""
        try:
            thread = next((t for t in threading.enumerate() if t.ident == self.main_ident), threading.main_thread())
            frames, note = native.capture(os.getpid(), thread.native_id)
            with self._lock:
                if self.store is None or self.keys is None or self.stack_gen != report.gen or self.final:
                    return
                done = dataclasses.replace(report, native=frames, native_note=note)
                self.store.set(self.keys.stack(report.rank), encode_stack(done))
        except Exception as exc:  # the store may be gone with the job
            logger.debug("syncdoctor.watch: native stack not published: %s", exc)
        finally:
            self._native_busy.clear()

    def lease_lapsed(self) -> bool:
        """auto mode: whether this rank (1..7) just took the monitor's lease over because it stopped beating."""
        me = self.identity
        if self.config.monitor != "auto" or me is None or not 1 <= me.rank <= 7:
            return False
        assert self.store is not None and self.keys is not None
        raw = self.store.get_optional(self.keys.monitor)
        if raw is None:
            return False
        now = self.clock()
        if self._lease_seen is None or self._lease_seen[0] != raw:
            self._lease_seen = (raw, now)
            return False
        patience = self.config.dead_s + (me.rank - 1) * 2 * self.config.interval_s
        if now - self._lease_seen[1] < patience:
            return False
        mine = json.dumps({"who": f"rank {me.rank} ({me.host}, pid {me.pid})", "beat": 0}).encode()
        return self.store.compare_set(self.keys.monitor, raw, mine) == mine


def write_flight_recorder_dump(rank: int, recorders: Set[str]) -> None:
    """Write this process's Flight Recorder dump(s) where PyTorch writes its own; failures are logged."""
    prefix = (
        os.environ.get("TORCH_FR_DUMP_TEMP_FILE")
        or os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
        or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "torch",
                        "comm_lib_trace_rank_")
    )
    # NCCL groups have their own recorder: its dump goes where PyTorch writes its own on a timeout, the
    # other backends' beside it when both hold groups (the rank stays the trailing number of the name)
    recorders = recorders or {OTHER}
    wanted = [("_dump_nccl_trace", f"{prefix}{rank}")] if NCCL in recorders else []
    if OTHER in recorders:
        wanted.append(("_dump_fr_trace", f"{prefix}gloo_{rank}" if wanted else f"{prefix}{rank}"))
    try:
        import torch._C._distributed_c10d as c10d_ext

        for function, path in wanted:
            data: Any = getattr(c10d_ext, function)()
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
            logger.warning("syncdoctor.watch: Flight Recorder dump of rank %d written to %s", rank, path)
    except Exception as exc:
        logger.warning("syncdoctor.watch: cannot write the Flight Recorder dump: %s", exc)
