"""A small, realistic DDP training job (CPU, gloo) that can misbehave on purpose: the lab's workload.

Does I/O: runs torch.distributed, sleeps, signals itself, writes step lines to stdout. torch is imported only
inside :func:`main`; :func:`parse_step_lines` is pure and torch-free for the tests that read its output.

Run under torchrun (``python -m syncdoctor.testing.workload --steps 20``) or alone (a world of one).

Every training step calls, in this order, functions whose names a Python stack shows::

    load_batch        (the default place of late / spin / crash / freeze / trigger faults)
    forward
    backward          DDP's gradient all_reduce (issued from C++ in the backward hooks), or with
                      ``--grad-sync manual`` one flat all_reduce of all gradients from Python
                      (``all_reduce_gradients``; same traffic, no DDP start-up cost)
    optimizer_step
    solo_work         healthy work one rank does alone (checkpoint / evaluate / dcp "faults": save_checkpoint,
                      evaluate, save_distributed_checkpoint), while the others go on to reduce_metric
    reduce_metric     the plain metric collective ``dist.all_reduce(loss_metric, group=metric_group)``:
                      skip / other_op / other_size faults change this one
    checkpoint_pause  only with ``--pause-all SECONDS@STEP``: every rank pauses together

A delay before ``backward`` (late, slow, spin, freeze, crash) keeps the other ranks waiting inside DDP's
gradient all_reduce of that step; a skip/other_op/other_size fault desynchronises the metric collective.

The metric collective runs on a process group of its own (``--metric-group own``, the default, created with
``dist.new_group``), as logging/metric groups often are. A skipped metric all_reduce is then a true
deadlock: the other ranks wait in the metric group's all_reduce, the skipping rank in the next step's
gradient all_reduce on the default group, until the collective timeout. With ``--metric-group default``
the skipping rank's next collective (DDP's gradient bucket) pairs with the others' metric all_reduce, and
gloo aborts the job on the size mismatch ("Received data size doesn't match expected size") instead.

Every rank prints, per step, one line (``time.time()`` stamps, seconds)::

    syncdoctor-workload step=5 rank=1 host=host0 start=... ready=... end=... loss=0.123456

``ready`` is taken just before ``backward``, i.e. when the rank arrives at the step's first collective, so
``ready[late] - max(ready[others])`` measures a late arrival.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncdoctor.errors import UsageError
from syncdoctor.faults.spec import StepFault, parse_step_faults
from syncdoctor.testing.faults_spec import parse_duration

__all__ = ["StepLine", "build_parser", "main", "parse_step_lines"]

logger = logging.getLogger(__name__)
TAG = "syncdoctor-workload"
_STEP_RE = re.compile(
    rf"^{TAG} step=(?P<step>\d+) rank=(?P<rank>\d+) host=(?P<host>\S+) start=(?P<start>[\d.]+) "
    r"ready=(?P<ready>[\d.]+) end=(?P<end>[\d.]+) loss=(?P<loss>\S+)$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class StepLine:
    """One parsed per-step line of the workload's output."""

    step: int
    rank: int
    host: str
    start: float
    ready: float
    end: float
    loss: float


def parse_step_lines(text: str) -> list[StepLine]:
    """All step lines in ``text`` (a rank's log, or several concatenated). Pure."""
    return [
        StepLine(int(m["step"]), int(m["rank"]), m["host"], float(m["start"]), float(m["ready"]),
                 float(m["end"]), float(m["loss"]))
        for m in _STEP_RE.finditer(text)
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m syncdoctor.testing.workload", description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    parser.add_argument("--model-size", "--width", dest="width", type=int, default=64,
                        help="hidden width of the MLP (default 64)")
    parser.add_argument("--depth", type=int, default=2, help="hidden layers (default 2)")
    parser.add_argument("--batch", type=int, default=32, help="samples per rank per step (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="base seed; data of rank r uses seed + r")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--step-sleep", type=float, default=0.0,
                        help="seconds every rank sleeps in load_batch each step (slower, steadier steps)")
    parser.add_argument("--fault", default=None,
                        help="fault spec JSON (object or list), see syncdoctor.faults.spec.StepFault; "
                             "default: env SYNCDOCTOR_FAULT")
    parser.add_argument("--pause-all", default=None, metavar="SECONDS@STEP",
                        help="every rank pauses SECONDS at STEP together (like a checkpoint)")
    parser.add_argument("--collective-timeout", type=float, default=60.0,
                        help="timeout of the process group's collectives in seconds (default 60)")
    parser.add_argument("--setup-timeout", type=float, default=60.0,
                        help="lower bound of the timeout while groups are created and connect, in seconds "
                             "(default 60: a busy machine's slow connect is no fault; lower it where the "
                             "connect is meant to fail; gloo's side of a pair that waits to be dialled waits "
                             "5x this)")
    parser.add_argument("--watch", action="store_true", default=os.environ.get("SYNCDOCTOR_WATCH") == "1",
                        help="call syncdoctor.watch.start() (also env SYNCDOCTOR_WATCH=1)")
    parser.add_argument("--log-ranks", choices=("all", "0"), default="all",
                        help="which ranks print step lines (default all)")
    parser.add_argument("--grad-sync", choices=("ddp", "manual"), default="ddp",
                        help="gradient averaging: DistributedDataParallel (default) or one flat all_reduce issued "
                             "from Python in backward(); manual starts ~1.7 s of CPU faster per rank")
    parser.add_argument("--metric-group", choices=("own", "default"), default="own",
                        help="process group of the per-step metric all_reduce (default: a group of its own)")
    parser.add_argument("--print-env", action="append", default=[], metavar="NAME",
                        help="print `env NAME=value` (or `<unset>`) at start; repeatable")
    return parser


def _parse_pause(text: str | None) -> tuple[float, int] | None:
    if not text:
        return None
    seconds, sep, step = text.partition("@")
    if not sep or not step.strip().isdecimal():
        raise UsageError(f"--pause-all expects SECONDS@STEP (e.g. 5@10), got {text!r}")
    return parse_duration(seconds), int(step)


class _Faults:
    """The faults that concern this rank, applied at named points of the step."""

    def __init__(self, faults: Sequence[StepFault], rank: int) -> None:
        self.rank = rank
        self.faults = [fault for fault in faults if fault.rank == rank]
        self.step_durations: list[float] = []

    def at(self, step: int, *kinds: str) -> list[StepFault]:
        return [f for f in self.faults if f.kind in kinds and f.applies(self.rank, step)]

    def announce(self, fault: StepFault, step: int, **extra: object) -> None:
        details = " ".join(f"{key}={value}" for key, value in extra.items())
        print(f"{TAG} fault kind={fault.kind} rank={self.rank} step={step} {details}".rstrip(), flush=True)

    def stall(self, where: str, step: int) -> None:
        """Apply the delay-type and process faults placed in the function ``where`` at ``step``."""
        for fault in self.at(step, "late", "slow", "spin", "crash", "freeze", "trigger", "block"):
            if fault.where != where:
                continue
            if fault.kind == "late":
                self.announce(fault, step, where=where, seconds=fault.seconds)
                time.sleep(fault.seconds)
            elif fault.kind == "slow":
                extra = fault.seconds or (fault.factor - 1.0) * self._baseline()
                if step == fault.at:
                    self.announce(fault, step, where=where, factor=fault.factor, extra=f"{extra:.4f}")
                time.sleep(extra)
            elif fault.kind == "spin":
                self.announce(fault, step, where=where, seconds=fault.seconds)
                _spin(fault.seconds)
            elif fault.kind == "trigger":
                self.announce(fault, step, name=fault.name)
                _trigger(fault)
            elif fault.kind == "freeze":
                self.announce(fault, step, where=where)
                os.kill(os.getpid(), signal.SIGSTOP)
            elif fault.kind == "crash":
                self.announce(fault, step, where=where, mode=fault.mode)
                _crash(fault, step)
            elif fault.kind == "block":
                self.announce(fault, step, where=where, seconds=fault.seconds)
                _block(fault.seconds)

    def _baseline(self) -> float:
        recent = self.step_durations[-10:]
        return sorted(recent)[len(recent) // 2] if recent else 0.01


def _trigger(fault: StepFault) -> None:
    """Touch the trigger file, then wait (up to ``seconds``, default 10) until the lab has acted on it
    (renamed it), so that the step after the trigger already runs under the lab's change."""
    trigger_dir = Path(os.environ.get("SYNCDOCTOR_TRIGGER_DIR", "triggers"))
    trigger_dir.mkdir(parents=True, exist_ok=True)
    path = trigger_dir / fault.name
    path.touch()
    deadline = time.monotonic() + (fault.seconds or 10.0)
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    print(f"{TAG} trigger name={fault.name} acted={'no' if path.exists() else 'yes'}", flush=True)


def _spin(seconds: float) -> None:
    deadline = time.monotonic() + seconds if seconds > 0 else float("inf")
    total = 0
    while time.monotonic() < deadline:
        for value in range(10_000):
            total += value * value


def _block(seconds: float) -> None:
    """Block in ``os.read`` of a pipe: no CPU, the same stack, no bytes until a timer writes one."""
    import threading

    read_end, write_end = os.pipe()
    if seconds > 0:
        threading.Timer(seconds, os.write, (write_end, b"x")).start()
    try:
        os.read(read_end, 1)
    finally:
        os.close(read_end)
        if seconds > 0:
            time.sleep(0.01)
        os.close(write_end)


def _solo(fault: StepFault) -> Any:
    """``syncdoctor.watch.solo(name)`` around the work when the fault names it, else nothing."""
    import contextlib

    if not fault.name:
        return contextlib.nullcontext()
    import syncdoctor.watch as watch

    return watch.solo(fault.name, up_to_s=fault.seconds * fault.factor if fault.factor > 1 else None)


def _crash(fault: StepFault, step: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    if fault.mode == "exit":
        os._exit(fault.code)
    if fault.mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if fault.mode == "abort":
        os.abort()
    raise RuntimeError(f"injected fault: rank {fault.rank} crashes at step {step}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        faults = parse_step_faults(args.fault if args.fault is not None else os.environ.get("SYNCDOCTOR_FAULT"))
        pause = _parse_pause(args.pause_all)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return _train(args, faults, pause)


def _train(args: argparse.Namespace, faults: Sequence[StepFault], pause: tuple[float, int] | None) -> int:
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torch import nn

    if "RANK" not in os.environ:  # alone: a world of one on a private store
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    # Connecting the full mesh at creation must not fail on a busy machine because the collective timeout
    # is short: groups are created with at least --setup-timeout, then switched to the collective timeout.
    setup = timedelta(seconds=max(args.collective_timeout, args.setup_timeout))
    dist.init_process_group("gloo", timeout=setup)  # the default group
    rank, world = dist.get_rank(), dist.get_world_size()
    host = os.environ.get("SYNCDOCTOR_LAB_HOST") or os.uname().nodename
    talk = args.log_ranks == "all" or rank == 0
    print(f"{TAG} start rank={rank} world={world} host={host} pid={os.getpid()} time={time.time():.6f}", flush=True)
    for name in args.print_env:
        print(f"{TAG} env rank={rank} {name}={os.environ.get(name, '<unset>')}", flush=True)
    watcher = _start_watch() if args.watch else None

    torch.manual_seed(args.seed)
    layers: list[nn.Module] = []
    for _ in range(args.depth):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    model: nn.Module = nn.Sequential(*layers, nn.Linear(args.width, 1))
    if args.grad_sync == "ddp":
        from torch.nn.parallel import DistributedDataParallel  # its first use imports torch._dynamo (~1.7 s)

        model = DistributedDataParallel(model)
    else:
        for param in model.parameters():  # what DDP does at construction: start from rank 0's weights
            dist.broadcast(param.data, src=0)
    params = list(model.parameters())
    generator = torch.Generator().manual_seed(args.seed + rank)
    timeout = timedelta(seconds=args.collective_timeout)
    metric_group = dist.new_group(backend="gloo", timeout=setup) if args.metric_group == "own" else None
    from torch.distributed.distributed_c10d import _set_pg_timeout

    for group in (None, metric_group) if metric_group is not None else (None,):
        _set_pg_timeout(timeout, group)
    state = _Faults(faults, rank)

    def load_batch(step: int) -> tuple[Any, Any]:
        if args.step_sleep:
            time.sleep(args.step_sleep)
        state.stall("load_batch", step)
        inputs = torch.randn(args.batch, args.width, generator=generator)
        return inputs, inputs.sum(dim=1, keepdim=True) * 0.1

    def forward(step: int, batch: tuple[Any, Any]) -> Any:
        state.stall("forward", step)
        inputs, target = batch
        return nn.functional.mse_loss(model(inputs), target)

    def backward(loss: Any) -> None:
        loss.backward()  # with DDP, the gradient all_reduce happens here (C++ hooks)
        if args.grad_sync == "manual":
            all_reduce_gradients()

    def all_reduce_gradients() -> None:
        grads = [param.grad for param in params if param.grad is not None]
        flat = torch.cat([grad.reshape(-1) for grad in grads])  # one bucket, like DDP's for a small model
        dist.all_reduce(flat)
        flat /= world
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset:offset + grad.numel()].view_as(grad))
            offset += grad.numel()

    def optimizer_step(step: int) -> None:
        state.stall("optimizer_step", step)
        # Plain SGD by hand: torch.optim's first use imports torch._dynamo (~1.7 s of CPU per rank).
        with torch.no_grad():
            for param in params:
                if param.grad is not None:
                    param.add_(param.grad, alpha=-args.lr)
                    param.grad = None

    def reduce_metric(step: int, loss: Any) -> float:
        metric = loss.detach().reshape(1).clone()
        skip, other_op, other_size = (state.at(step, kind) for kind in ("skip", "other_op", "other_size"))
        if skip:
            state.announce(skip[0], step, collective="all_reduce")
            return float(metric)
        if other_op:
            state.announce(other_op[0], step, op=other_op[0].op)
            _other_collective(dist, other_op[0].op, metric, metric_group)
            return float(metric)
        if other_size:
            size = other_size[0].size or 2
            state.announce(other_size[0], step, size=size)
            metric = torch.zeros(size)
        dist.all_reduce(metric, group=metric_group)
        return float(metric[0]) / world

    def save_checkpoint(seconds: float, directory: Path) -> None:
        import torch

        extra = [torch.randn(256, 1024) for _ in range(8)]  # an optimizer-sized state: 8 MiB a save
        deadline, saves = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            torch.save({"model": model.state_dict(), "optimizer": extra, "step": saves}, directory / "ckpt.pt")
            saves += 1

    def evaluate(seconds: float) -> None:
        # An evaluation loop as a real one runs: batches that take a while to load, then forward passes and
        # a metric, each phase a few tenths of a second (a stack sampled once a second sees both).
        deadline = time.monotonic() + seconds
        with torch.no_grad():
            while time.monotonic() < deadline:
                inputs = load_eval_batch(min(0.35, max(0.0, deadline - time.monotonic())))
                outputs = eval_forward(inputs, min(0.35, max(0.0, deadline - time.monotonic())))
                accuracy(outputs, inputs)

    def load_eval_batch(busy_s: float) -> Any:
        until = time.monotonic() + busy_s
        inputs = torch.randn(args.batch, args.width, generator=generator)
        while time.monotonic() < until:
            inputs = torch.randn(args.batch, args.width, generator=generator)
        return inputs

    def eval_forward(inputs: Any, busy_s: float) -> Any:
        until = time.monotonic() + busy_s
        outputs = model(inputs)
        while time.monotonic() < until:
            outputs = model(inputs)
        return outputs

    def accuracy(outputs: Any, inputs: Any) -> float:
        return float((outputs.squeeze(1) - inputs.sum(dim=1) * 0.1).abs().mean())

    def save_distributed_checkpoint(seconds: float, directory: Path) -> None:
        import torch.distributed.checkpoint as dcp

        deadline, saves = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            target = directory / f"dcp{saves}"
            dcp.save({"model": model.state_dict()}, checkpoint_id=str(target), no_dist=True)
            shutil.rmtree(target, ignore_errors=True)
            saves += 1

    def solo_work(step: int) -> None:
        import tempfile

        for fault in state.at(step, "checkpoint", "evaluate", "dcp"):
            state.announce(fault, step, seconds=fault.seconds, name=fault.name or "-")
            with tempfile.TemporaryDirectory(prefix="syncdoctor-ckpt-") as tmp, _solo(fault):
                if fault.kind == "checkpoint":
                    save_checkpoint(fault.seconds, Path(tmp))
                elif fault.kind == "evaluate":
                    evaluate(fault.seconds)
                else:
                    save_distributed_checkpoint(fault.seconds, Path(tmp))

    def checkpoint_pause(step: int, seconds: float) -> None:
        print(f"{TAG} pause-all rank={rank} step={step} seconds={seconds}", flush=True)
        state.stall("checkpoint_pause", step)
        time.sleep(seconds)

    began = time.monotonic()
    for step in range(args.steps):
        start = time.time()
        if pause and pause[1] == step:
            checkpoint_pause(step, pause[0])
        batch = load_batch(step)
        loss = forward(step, batch)
        ready = time.time()
        backward(loss)
        optimizer_step(step)
        solo_work(step)
        value = reduce_metric(step, loss)
        end = time.time()
        state.step_durations.append(end - start)
        watching = sys.modules.get("syncdoctor.watch")  # started by --watch or SYNCDOCTOR_WATCH=1
        if watching is not None:
            watching.step(step)  # what a training loop without torch.optim does to mark its steps
        if talk:
            print(f"{TAG} step={step} rank={rank} host={host} start={start:.6f} ready={ready:.6f} "
                  f"end={end:.6f} loss={value:.6f}", flush=True)
    print(f"{TAG} done rank={rank} steps={args.steps} seconds={time.monotonic() - began:.3f} "
          f"cpu={time.process_time():.3f}", flush=True)
    if watcher is not None and callable(getattr(watcher, "stop", None)):
        watcher.stop()
    dist.destroy_process_group()
    return 0


def _other_collective(dist: Any, op: str, metric: Any, group: Any) -> None:
    if op == "broadcast":
        dist.broadcast(metric, src=0, group=group)
    elif op == "all_gather":
        dist.all_gather([metric.clone() for _ in range(dist.get_world_size())], metric, group=group)
    elif op == "barrier":
        dist.barrier(group=group)
    else:
        dist.reduce(metric, dst=0, group=group)


def _start_watch() -> Any:
    try:
        import syncdoctor.watch as watch
    except ModuleNotFoundError as exc:
        print(f"{TAG} watch unavailable: {exc}", file=sys.stderr, flush=True)
        return None
    start = getattr(watch, "start", None)
    if start is None:
        print(f"{TAG} watch unavailable: syncdoctor.watch has no start()", file=sys.stderr, flush=True)
        return None
    watcher = start()
    print(f"{TAG} watch started rank={os.environ.get('RANK', '0')}", flush=True)
    return watcher


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    sys.exit(main())
