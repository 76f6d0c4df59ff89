"""The probe's stage driver, run by every rank. Does I/O: the store, torch.distributed, the JSON file.

Stages, in order: ``join`` (store registration with a deadline, before any process group exists),
``init`` (the main group with the chosen backend, and a side gloo group for facts and control), ``clock``
(ping-pong offsets, start-up skew), ``facts`` (host facts and variables gathered on rank 0), ``links``
(point-to-point, in tournament rounds) and ``collectives`` (size sweep, element checks); then rank 0
analyses and writes the report. Every measuring stage has a timeout (the main group's timeout; the side
group waits twice as long so a rank late by one stage timeout still reports), a watchdog thread as the
last resort, and its per-rank results are gathered and written before the next stage starts. After a
failed stage the remaining stages are skipped and the report keeps everything measured so far.

With NCCL the same code runs with CUDA tensors on ``cuda:LOCAL_RANK``; the side group is always gloo.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from syncdoctor.errors import EnvironmentNotSupported, ProbeError, StoreError
from syncdoctor.kb import Finding, Severity
from syncdoctor.kb.pages import probe as pages
from syncdoctor.probe import assemble
from syncdoctor.probe.collectives import measure_collectives
from syncdoctor.probe.comm import WallClock, broadcast_json, device_sync, gather_json
from syncdoctor.probe.config import ProbeConfig
from syncdoctor.probe.facts import comm_env, gpu_name, local_facts, route_source, versions
from syncdoctor.probe.join import (
    estimate_offset,
    label_nodes,
    missing_expected_nodes,
    missing_nodes,
    node_skews,
    register_and_wait,
    wait_for_readers,
)
from syncdoctor.probe.launch import LaunchInfo
from syncdoctor.probe.links import PairTask, link_schedule, measure_pair, merge_halves, pack_rounds
from syncdoctor.probe.nodecheck import node_checker
from syncdoctor.probe.records import ClockOffset, NodeInfo, RankInfo
from syncdoctor.probe.report import ProbeDocument
from syncdoctor.probe.store import connect_store
from syncdoctor.probe.verdict import analyse_links
from syncdoctor.probe.watchdog import StageWatchdog

__all__ = ["EXIT_STAGE_FAILED", "ProbeOutcome", "exit_code", "run_probe"]

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


EXIT_STAGE_FAILED = 4  # a stage failed or hung: the probe could not measure (1: it measured and found errors)


@dataclass
class ProbeOutcome:
    """What one rank ends with: its exit code, and on the reporting rank the document's data."""

    exit_code: int
    report: dict[str, Any] | None = None


class _Run:
    """One rank's probe. Rank 0 (or the lowest joined rank when the join fails) keeps the document."""

    def __init__(self, config: ProbeConfig, launch: LaunchInfo, progress: Progress, environ: Mapping[str, str],
                 started_wall: float | None, on_hang: Callable[[], None] | None, command: list[str]) -> None:
        self.config, self.launch, self.environ = config, launch, environ
        self.rank = launch.rank
        self.wall = WallClock(config.clock_offset_s)
        self.started_wall = started_wall
        self._progress = progress
        self.on_hang = on_hang
        self.env = comm_env(environ)  # before the probe sets anything for itself
        self.doc = ProbeDocument(config.json_path, command=command, config=config.to_json(), launch=launch.to_json(),
                                 json_path=config.json_path, backend=config.backend)
        self.side: Any = None
        self.main: Any = None
        self.device: Any = None
        self.backend = config.backend
        self.nodes: list[NodeInfo] = []
        self.registered: tuple[RankInfo, ...] = ()
        self.payloads: dict[str, list[Any]] = {}
        self.extra: list[Finding] = []
        self.failed = False
        self.watchdog = StageWatchdog(self._expired)

    # -- helpers ------------------------------------------------------------------------------------------
    def progress(self, message: str) -> None:
        if self.rank == 0:
            self._progress(message)

    def _expired(self, stage: str) -> None:
        log.error("stage %s ran past its deadline on rank %d", stage, self.rank)
        if self.rank == 0:
            self.doc.stage(stage, "hung", self.config.stage_timeout_s * 2)
            self.doc.set_findings([*self.extra, pages.STAGE_FAILED.finding(
                f"stage {stage} hung on rank 0 past twice the stage timeout", evidence={"stage": stage},
                key=stage)])
            self.doc.write()
        if self.on_hang is not None:
            self.on_hang()

    # -- join ---------------------------------------------------------------------------------------------
    def join(self) -> ProbeOutcome | None:
        cfg, launch = self.config, self.launch
        started = time.monotonic()
        self.progress(f"join: waiting for {launch.world_size} ranks on {launch.nnodes} node(s) "
                      f"(store {launch.master_addr}:{launch.master_port}, timeout {cfg.join_timeout_s:g} s)")
        if cfg.start_delay_s:
            time.sleep(cfg.start_delay_s)  # test hook: a late node
        arrival = self.wall()  # before the store answers: a late store host must not make everybody late
        try:
            store = connect_store(launch, cfg.join_timeout_s)
        except StoreError as exc:
            finding = pages.STORE_UNREACHABLE.finding(str(exc), evidence={
                "master": f"{launch.master_addr}:{launch.master_port}", "rank": self.rank, "node": launch.node_rank},
                key="store")
            self.doc.stage("join", "failed", time.monotonic() - started, {self.rank: str(exc)})
            self.doc.set_findings([finding])
            if launch.local_rank == 0:
                self.doc.write()
                return ProbeOutcome(3, self.doc.data)
            return ProbeOutcome(3)
        self.store = store
        source, interface = route_source(launch.master_addr, launch.master_port, None)
        self.route_addr, self.route_interface = source, interface
        me = RankInfo(self.rank, launch.local_rank, launch.node_rank, socket.gethostname(), source, os.getpid(),
                      arrival, self.started_wall)
        last = [0.0]

        def waiting(count: int, waited: float) -> None:
            if waited - last[0] >= 2.0:
                last[0] = waited
                self.progress(f"join: {count} of {launch.world_size} ranks after {waited:.0f} s")

        try:
            outcome = register_and_wait(store, me, launch.world_size, cfg.join_timeout_s, on_wait=waiting)
        except Exception as exc:  # the store went away (its host gave up first)
            log.error("join: lost the store at %s:%s: %s", launch.master_addr, launch.master_port, exc)
            return ProbeOutcome(EXIT_STAGE_FAILED)
        self.registered = outcome.registered
        self.nodes = label_nodes(outcome.registered, cfg.host_names)
        seconds = time.monotonic() - started
        join_data = {"complete": outcome.complete, "state": outcome.state, "waited_s": round(outcome.waited_s, 3),
                     "registered": [r.to_json() for r in outcome.registered],
                     "nodes": [n.to_json() for n in self.nodes], "missing": []}
        if not outcome.complete:
            missing = missing_nodes(outcome.registered, launch, cfg.host_names)
            join_data["missing"] = [m.to_json() for m in missing]
            reporter = min((r.rank for r in outcome.registered), default=self.rank)
            if launch.hosts_store:  # keep the store up until every joined rank has read the outcome
                wait_for_readers(store, len(outcome.registered), timeout_s=5.0)
            if self.rank != reporter:
                return ProbeOutcome(EXIT_STAGE_FAILED)
            self.doc.update(join=join_data)
            self.doc.stage("join", "failed", seconds, {self.rank: f"{len(outcome.registered)} of "
                                                                  f"{launch.world_size} ranks joined"})
            self.doc.set_findings(assemble.missing_findings(missing, len(outcome.registered), launch.world_size,
                                                            cfg.join_timeout_s))
            self.doc.update(finished=True)
            self.doc.write()
            return ProbeOutcome(EXIT_STAGE_FAILED, self.doc.data)
        expected = missing_expected_nodes(outcome.registered, launch, cfg.host_names)
        if expected:
            join_data["missing"] = [m.to_json() for m in expected]
            self.extra += assemble.missing_findings(expected, launch.world_size,
                                                    (launch.expected_nodes or 0) * launch.local_world_size,
                                                    cfg.join_timeout_s)
        if self.rank == 0:
            self.doc.update(join=join_data)
            self.doc.stage("join", "ok", seconds)
            self.doc.write()
        self.progress(f"join: {launch.world_size} ranks on {len(self.nodes)} node(s) joined in {seconds:.2f} s")
        return None

    # -- init ---------------------------------------------------------------------------------------------
    def init(self) -> ProbeOutcome | None:
        import torch
        import torch.distributed as dist

        cfg, launch = self.config, self.launch
        started = time.monotonic()
        if self.backend == "auto":
            self.backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
        if self.backend == "nccl" and not (torch.cuda.is_available() and dist.is_nccl_available()):
            raise EnvironmentNotSupported("--backend nccl needs CUDA GPUs and a torch built with NCCL; "
                                          "use --backend gloo")
        if self.backend == "nccl":
            self.device = torch.device("cuda", launch.local_rank % max(1, torch.cuda.device_count()))
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        settings = {}
        if ("GLOO_SOCKET_IFNAME" not in self.environ and len(self.nodes) > 1 and self.route_interface
                and self.route_interface != "lo"):
            os.environ["GLOO_SOCKET_IFNAME"] = self.route_interface
            settings["GLOO_SOCKET_IFNAME"] = f"{self.route_interface} (set by the probe for its own groups)"
        self.doc.update(backend=self.backend, probe_settings=settings)
        timeout = datetime.timedelta(seconds=cfg.stage_timeout_s)
        try:
            dist.init_process_group(self.backend, store=dist.PrefixStore("pg/", self.store), rank=self.rank,
                                    world_size=launch.world_size, timeout=timeout)
            self.main = dist.group.WORLD
            self.side = dist.new_group(backend="gloo", timeout=timeout * 2 + datetime.timedelta(seconds=10))
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.error("init failed on rank %d: %s", self.rank, error)
            self.store.set(f"init/error/{self.rank}", error)
            if self.rank != 0:
                return ProbeOutcome(EXIT_STAGE_FAILED)
            time.sleep(min(2.0, cfg.stage_timeout_s))  # let the others' errors arrive
            errors = {r: self.store.get(f"init/error/{r}").decode() for r in range(launch.world_size)
                      if self.store.check([f"init/error/{r}"])}
            self.doc.stage("init", "failed", time.monotonic() - started, errors)
            statuses = [{"status": "failed" if r in errors else "ok", "error": errors.get(r)}
                        for r in range(launch.world_size)]
            failure = assemble.stage_failure("init", statuses)
            self.doc.set_findings([*self.extra, *([failure] if failure else [])])
            self.doc.update(finished=True)
            self.doc.write()
            return ProbeOutcome(EXIT_STAGE_FAILED, self.doc.data)
        if self.rank == 0:
            self.doc.stage("init", "ok", time.monotonic() - started)
            self.doc.write()
        self.progress(f"init: {self.backend} process group of {launch.world_size} ranks "
                      f"({time.monotonic() - started:.2f} s)")
        return None

    # -- the measuring stages -----------------------------------------------------------------------------
    def stage(self, name: str, func: Callable[[], Any], after: Callable[[list[Any]], None] | None = None) -> bool:
        """Run ``func`` on every rank, gather results on rank 0, write; False when any rank failed."""
        started = time.monotonic()
        status, error, payload = "ok", None, None
        self.watchdog.arm(name, self.config.stage_timeout_s * 2 + 30)
        try:
            if self.config.hook_applies(self.config.hang_stage, name, self.rank):
                time.sleep(self.config.stage_timeout_s + 2)  # test hook: a rank stalls past the timeout
                raise ProbeError(f"test hook: rank {self.rank} stalled in {name} past the stage timeout")
            payload = func()
        except Exception as exc:
            status, error = "failed", f"{type(exc).__name__}: {exc}"
            log.error("stage %s failed on rank %d: %s", name, self.rank, error)
        finally:
            self.watchdog.disarm()
        try:
            gathered = gather_json({"status": status, "error": error, "payload": payload}, self.side)
        except Exception as exc:
            self._lost_contact(name, started, exc)
        ok = True
        if gathered is not None:  # rank 0
            errors = {r: g["error"] for r, g in enumerate(gathered) if g["status"] != "ok"}
            self.payloads[name] = [g["payload"] for g in gathered]
            if after is not None and not errors:
                try:
                    after(self.payloads[name])
                except Exception as exc:  # a bug in the analysis must not lose the measurements
                    log.exception("processing the results of %s failed", name)
                    errors[0] = f"processing the results failed: {type(exc).__name__}: {exc}"
            ok = not errors
            self.doc.stage(name, "ok" if ok else "failed", time.monotonic() - started, errors)
            statuses = [{"status": "failed" if r in errors else "ok", "error": errors.get(r)}
                        for r in range(len(gathered))]
            failure = assemble.stage_failure(name, statuses)
            if failure is not None:
                self.extra.append(failure)
            self.doc.set_findings(self.extra)
            self.doc.write()
        try:
            ok = bool(broadcast_json(ok, self.side))
        except Exception as exc:
            self._lost_contact(name, started, exc)
        if not ok:
            self.failed = True
        return ok

    def _lost_contact(self, name: str, started: float, exc: Exception) -> NoReturn:
        if self.rank == 0:
            self.doc.stage(name, "failed", time.monotonic() - started, {0: f"lost contact: {exc}"})
            self.extra.append(pages.STAGE_FAILED.finding(
                f"stage {name}: lost contact with other ranks: {exc}", evidence={"stage": name}, key=name))
            self.doc.set_findings(self.extra)
            self.doc.write()
        raise ProbeError(f"stage {name}: lost contact with the other ranks: {exc}") from exc

    def clock(self) -> Any:
        import torch
        import torch.distributed as dist

        samples: dict[int, list[tuple[float, float, float]]] = {}
        buffer = torch.zeros(1, dtype=torch.int64)
        reference = next(n for n in self.nodes if 0 in n.ranks)
        for node in [n for n in self.nodes if n is not reference]:
            leader = min(node.ranks)
            for _ in range(self.config.clock_samples):
                if self.rank == 0:
                    t0 = self.wall.ns()
                    dist.send(buffer, leader, group=self.side)
                    dist.recv(buffer, leader, group=self.side)
                    t3 = self.wall.ns()
                    samples.setdefault(node.node, []).append((t0 / 1e9, int(buffer.item()) / 1e9, t3 / 1e9))
                elif self.rank == leader:
                    dist.recv(buffer, 0, group=self.side)
                    buffer.fill_(self.wall.ns())
                    dist.send(buffer, 0, group=self.side)
        if self.rank != 0:
            return None
        offsets = [ClockOffset(reference.node, 0.0, 0.0, 0)]
        for node_rank, values in samples.items():
            offset, rtt = estimate_offset(values)
            offsets.append(ClockOffset(node_rank, offset, rtt, len(values)))
        return [o.to_json() for o in offsets]

    def _after_clock(self, payloads: list[Any]) -> None:
        offsets = [ClockOffset(**o) for o in payloads[0]]
        skews = node_skews(self.registered, {o.node: o.offset_s for o in offsets}, {n.node: n.label for n in self.nodes})
        self.offsets, self.skews = offsets, skews
        self.doc.update(clock={"offsets": [o.to_json() for o in offsets], "skew": [s.to_json() for s in skews]})
        spread = max((s.first_s for s in skews), default=0.0)
        drift = max((abs(o.offset_s) for o in offsets), default=0.0)
        self.progress(f"clock: start-up skew {spread:.2f} s between nodes, largest clock offset {drift * 1e3:.2f} ms")

    def facts(self) -> Any:
        facts = local_facts() if self.launch.local_rank == 0 else None
        if facts is not None and self.route_interface is None and self.route_addr:
            from syncdoctor.host.interfaces import address_interface

            self.route_interface = address_interface(facts.interfaces, self.route_addr)
        return {"facts": facts.to_json() if facts else None, "env": self.env, "interface": self.route_interface,
                "gpu": gpu_name(self.device), "versions": versions(self.device, facts)}

    def _after_facts(self, payloads: list[Any]) -> None:
        self.node_facts = assemble.node_facts(payloads, self.nodes)
        shown = []
        for nf in self.node_facts:
            iface = nf.facts.interface(nf.interface) if nf.facts and nf.interface else None
            shown.append({"node": nf.node, "label": nf.label, "interface": nf.interface,
                          "mtu": iface.mtu if iface else None, "speed_mbps": iface.speed_mbps if iface else None,
                          "env": dict(nf.env), "versions": dict(nf.versions), "gpus": list(nf.gpu_names),
                          "facts": nf.facts.to_json() if nf.facts else None})
        self.doc.update(facts={"nodes": shown})
        self.progress(f"facts: gathered from {len(payloads)} ranks")

    def links(self) -> Any:
        import torch.distributed as dist

        cfg = self.config
        halves: list[dict[str, Any]] = []

        def run(rounds: list[list[PairTask]]) -> None:
            for tasks in rounds:
                dist.barrier(group=self.side)
                for task in tasks:
                    if self.rank in (task.a, task.b):
                        halves.append(measure_pair(
                            task, self.rank, self.main, self.device, latency_iters=cfg.latency_iters,
                            trials=cfg.link_trials, target_s=cfg.target_time_s * 2,
                            min_bytes=min(cfg.min_link_bytes, cfg.link_bytes), max_bytes=cfg.link_bytes,
                            sync=device_sync))

        run(link_schedule({n.node: n.ranks for n in self.nodes}) * max(1, cfg.link_passes))
        for _ in range(cfg.link_confirm_passes):
            suspects = self._suspect_links(halves)
            if not suspects:
                break
            run(pack_rounds(suspects))
        return halves

    def _suspect_links(self, halves: list[dict[str, Any]]) -> list[PairTask]:
        """The inter-node links that look slow so far (rank 0 decides, every rank gets the list)."""
        gathered = gather_json(halves, self.side)
        suspects: list[list[int]] = []
        if gathered is not None:
            measures = merge_halves([h for part in gathered for h in part])
            view = analyse_links(measures, self.config.slow_ratio)
            slow_pairs = set(view.slow_links)
            suspects = [[m.a_rank, m.b_rank, m.a_node, m.b_node] for m in measures if m.kind == "inter" and (
                any(m.touches(node) for node in view.slow_nodes) or (m.a_node, m.b_node) in slow_pairs)]
        chosen = broadcast_json(suspects, self.side)
        if chosen:
            self.progress(f"links: measuring {len(chosen)} slow-looking link(s) again")
        return [PairTask(-1, "inter", a, b, a_node, b_node) for a, b, a_node, b_node in chosen]

    def _after_links(self, payloads: list[Any]) -> None:
        self.link_measures = merge_halves([h for halves in payloads for h in halves or ()])
        self.doc.update(links=[m.to_json() for m in self.link_measures])
        inter = [m for m in self.link_measures if m.kind == "inter"]
        from syncdoctor.units import format_link_rate

        slowest = min(inter, key=lambda m: m.bandwidth) if inter else None
        self.progress(f"links: {len(inter)} pair(s) between nodes, {len(self.link_measures) - len(inter)} inside"
                      + (f"; slowest {format_link_rate(slowest.bandwidth)}" if slowest else ""))

    def collectives(self) -> Any:
        cfg = self.config
        current = [""]

        def on_size(op: str, size: int) -> None:
            if op != current[0]:
                current[0] = op
                self.progress(f"collectives: {op}")

        return measure_collectives(
            cfg.ops, cfg.sizes, self.rank, self.launch.world_size, self.main, self.device,
            warmup=cfg.warmup, max_iters=cfg.max_iters, target_s=cfg.target_time_s, sync=device_sync,
            inject=lambda op: cfg.hook_applies(cfg.inject_wrong, op, self.rank), on_size=on_size)

    def _after_collectives(self, payloads: list[Any]) -> None:
        self.rows, self.wrong_ranks = assemble.collective_rows(payloads)
        self.doc.update(collectives=[r.to_json() for r in self.rows])
        wrong = sum(r.wrong or 0 for r in self.rows)
        self.progress(f"collectives: {len(self.rows)} sizes measured, {wrong} wrong element(s)")

    # -- analysis -----------------------------------------------------------------------------------------
    def analyse(self) -> None:
        cfg = self.config
        launch = self.launch
        validate = node_checker(launch.master_addr, launch.master_port, {
            "WORLD_SIZE": str(launch.world_size), "LOCAL_WORLD_SIZE": str(launch.local_world_size),
            "GROUP_WORLD_SIZE": str(len(self.nodes))})
        result = assemble.assess(
            self.nodes, getattr(self, "node_facts", []), skews=getattr(self, "skews", []),
            offsets=getattr(self, "offsets", []), links=getattr(self, "link_measures", []),
            rows=getattr(self, "rows", []), wrong_ranks=getattr(self, "wrong_ranks", {}), extra=self.extra,
            slow_ratio=cfg.slow_ratio, skew_warn_s=cfg.skew_warn_s, backend=self.backend,
            bucket_bytes=cfg.bucket_bytes, validate=validate,
        )
        self.doc.set_findings(result.findings)
        self.doc.update(verdict=result.verdict.to_json(), recommendations=result.recommendations.to_json())
        if cfg.emit_env_path:
            from syncdoctor.probe.report import write_emitted

            written = write_emitted(cfg.emit_env_path, result.recommendations.env_file(),
                                    result.recommendations.python_snippet())
            self.doc.update(emitted=[str(path) for path in written])
        self.doc.update(finished=True)
        self.doc.write()
        self.assessment = result


def run_probe(
    config: ProbeConfig,
    launch: LaunchInfo,
    *,
    progress: Progress | None = None,
    environ: Mapping[str, str] | None = None,
    started_wall: float | None = None,
    on_hang: Callable[[], None] | None = None,
    command: list[str] | None = None,
) -> ProbeOutcome:
    """Run every stage on this rank. Returns the exit code and, on the reporting rank, the report data."""
    run = _Run(config, launch, progress or (lambda message: None), dict(os.environ if environ is None else environ),
               started_wall, on_hang, list(command or []))
    outcome = run.join()
    if outcome is not None:
        return outcome
    outcome = run.init()
    if outcome is not None:
        return outcome
    run.watchdog.start()
    import torch.distributed as dist

    try:
        stages = [("clock", run.clock, run._after_clock), ("facts", run.facts, run._after_facts),
                  ("links", run.links, run._after_links), ("collectives", run.collectives, run._after_collectives)]
        for index, (name, func, after) in enumerate(stages):
            if not run.stage(name, func, after):
                if run.rank == 0:
                    for skipped, _f, _a in stages[index + 1:]:
                        run.doc.stage(skipped, "skipped", 0.0)
                break
        if run.rank == 0:
            run.analyse()
        try:
            dist.barrier(group=run.side)
        except Exception as exc:
            raise ProbeError(f"final barrier: {exc}") from exc
    except ProbeError as exc:
        log.error("%s", exc)
        if run.rank == 0:
            if not hasattr(run, "assessment"):
                run.analyse()
            return ProbeOutcome(EXIT_STAGE_FAILED, run.doc.data)
        return ProbeOutcome(EXIT_STAGE_FAILED)
    finally:
        run.watchdog.stop()
        run.watchdog.join(5)
        try:
            dist.destroy_process_group()
        except Exception:
            log.debug("destroy_process_group failed", exc_info=True)
    if run.rank != 0:
        return ProbeOutcome(EXIT_STAGE_FAILED if run.failed else 0)
    return ProbeOutcome(exit_code(run.assessment.findings, run.failed, config.fail_on), run.doc.data)


def exit_code(findings: Sequence[Finding], failed: bool, fail_on: str = "error") -> int:
    """The reporting rank's exit code: 4 when a stage failed, 1 when a finding reaches ``fail_on``, else 0.
    Warnings are printed but end with 0 by default, so that torchrun reports no failure for a healthy probe."""
    if failed:
        return EXIT_STAGE_FAILED
    threshold = Severity.WARNING if fail_on == "warning" else Severity.ERROR
    return 1 if any(f.severity >= threshold for f in findings) else 0
