"""The parallel shapes of large jobs, small enough for the lab (CPU, gloo), with faults at given steps.

Does I/O: runs torch.distributed, sleeps, writes step lines to stdout. Run under torchrun with a world of 8
(``python -m syncdoctor.testing.shapes --shape tpdp``); faults are the lab workload's
(:class:`syncdoctor.faults.spec.StepFault`), given as JSON with ``--fault``.

``tpdp``      tensor-parallel pairs {0,1},{2,3}... and data-parallel groups {0,2,4,6},{1,3,5,7}. A step:
              ``load_batch``, ``tensor_parallel`` (all_reduce of the activations in the pair),
              ``data_parallel`` (all_reduce of the gradients), ``reduce_metric`` (all_reduce of the loss on
              the default group). ``late`` in load_batch: late for the tensor-parallel all_reduce; in
              data_parallel: late for the data-parallel one. ``swap``: the metric all_reduce before the
              tensor-parallel one (the pair then waits for each other through two groups: a deadlock).
``pipeline``  4 pipeline stages x 2 data-parallel replicas: stages {0,1,2,3} and {4,5,6,7}, data-parallel
              groups {0,4},{1,5},{2,6},{3,7}. A step: ``forward`` (receive the activations from the stage
              before, send them on), ``backward`` (the gradients the other way), ``data_parallel``. ``late``
              in forward: the stage is late before its receive; ``skip``: it does not send its activations.
``hsdp``      FSDP2 over a 2-D device mesh (2 replicas x 4 shards): shard groups {0-3},{4-7}, replicate
              groups {0,4},{1,5},{2,6},{3,7}; ``late`` in forward: late for the shards' all_gather.

Every rank prints, per step, the workload's step line (``ready`` is the start of the step: every
collective of these shapes waits on the step's data), so :func:`syncdoctor.testing.workload.parse_step_lines`
reads it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from syncdoctor.errors import UsageError
from syncdoctor.faults.spec import StepFault, parse_step_faults
from syncdoctor.testing.workload import TAG

__all__ = ["SHAPES", "build_parser", "main"]

SHAPES = ("tpdp", "pipeline", "hsdp")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m syncdoctor.testing.shapes", description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=SHAPES, required=True)
    parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    parser.add_argument("--step-sleep", type=float, default=0.05, help="seconds of work per step (default 0.05)")
    parser.add_argument("--fault", default=None, help="fault spec JSON (object or list), see syncdoctor.faults.spec.StepFault")
    parser.add_argument("--collective-timeout", type=float, default=120.0, help="seconds (default 120)")
    parser.add_argument("--watch", action="store_true", default=os.environ.get("SYNCDOCTOR_WATCH") == "1",
                        help="call syncdoctor.watch.start() (also env SYNCDOCTOR_WATCH=1)")
    parser.add_argument("--dump", default=None, metavar="STEP:SECONDS",
                        help="SECONDS after starting STEP, every rank writes its Flight Recorder dump (JSON) to "
                             "--dump-dir/rank<R>.json from a timer thread, hung or not")
    parser.add_argument("--dump-dir", default="dumps", help="where --dump writes (default ./dumps)")
    return parser


class _Faults:
    def __init__(self, faults: Sequence[StepFault], rank: int, dump: tuple[int, float] | None = None,
                 dump_dir: str = "dumps") -> None:
        self.rank = rank
        self.faults = [f for f in faults if f.rank == rank]
        self.dump, self.dump_dir = dump, dump_dir

    def step(self, step: int) -> None:
        """Called at the start of every step: arms the Flight Recorder dump of ``--dump``."""
        if self.dump is not None and self.dump[0] == step:
            import threading

            timer = threading.Timer(self.dump[1], self._write_dump)
            timer.daemon = True
            timer.start()

    def _write_dump(self) -> None:
        import torch._C._distributed_c10d as c10d_ext

        os.makedirs(self.dump_dir, exist_ok=True)
        path = os.path.join(self.dump_dir, f"rank{self.rank}.json")
        with open(path, "wb") as handle:
            handle.write(bytes(c10d_ext._dump_fr_trace_json(True, False)))  # type: ignore[attr-defined]  # private
        print(f"{TAG} dump rank={self.rank} path={path}", flush=True)

    def has(self, step: int, kind: str) -> StepFault | None:
        found = next((f for f in self.faults if f.kind == kind and f.applies(self.rank, step)), None)
        if found is not None:
            print(f"{TAG} fault kind={kind} rank={self.rank} step={step} where={found.where}", flush=True)
        return found

    def late(self, step: int, where: str) -> None:
        for fault in self.faults:
            if fault.kind == "late" and fault.where == where and fault.applies(self.rank, step):
                print(f"{TAG} fault kind=late rank={self.rank} step={step} where={where} seconds={fault.seconds}",
                      flush=True)
                time.sleep(fault.seconds)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        faults = parse_step_faults(args.fault)
        dump = None
        if args.dump:
            step_text, _, seconds_text = args.dump.partition(":")
            if not step_text.isdecimal() or not seconds_text:
                raise UsageError(f"--dump expects STEP:SECONDS (e.g. 3:4), got {args.dump!r}")
            dump = (int(step_text), float(seconds_text))
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import torch.distributed as dist

    if args.watch:
        import syncdoctor.watch

        syncdoctor.watch.start()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.collective_timeout))
    if dist.get_world_size() != 8:
        print("error: the shapes need a world of 8 ranks", file=sys.stderr)
        return 2
    rank = dist.get_rank()
    host = os.environ.get("SYNCDOCTOR_LAB_HOST") or os.uname().nodename
    print(f"{TAG} start rank={rank} world=8 host={host} pid={os.getpid()} shape={args.shape}", flush=True)
    run = {"tpdp": _tpdp, "pipeline": _pipeline, "hsdp": _hsdp}[args.shape]
    run(args, _Faults(faults, rank, dump, args.dump_dir), rank, host)
    print(f"{TAG} done rank={rank} steps={args.steps}", flush=True)
    dist.destroy_process_group()
    return 0


def _line(step: int, rank: int, host: str, start: float, loss: float) -> None:
    print(f"{TAG} step={step} rank={rank} host={host} start={start:.6f} ready={start:.6f} end={time.time():.6f} "
          f"loss={loss:.6f}", flush=True)


def _tpdp(args: argparse.Namespace, faults: _Faults, rank: int, host: str) -> None:
    import torch
    import torch.distributed as dist

    timeout = timedelta(seconds=args.collective_timeout)
    tp_groups = [dist.new_group([2 * i, 2 * i + 1], timeout=timeout) for i in range(4)]
    dp_groups = [dist.new_group(list(range(j, 8, 2)), timeout=timeout) for j in range(2)]
    tp, dp = tp_groups[rank // 2], dp_groups[rank % 2]
    weight = torch.ones(256)

    def load_batch(step: int) -> Any:
        time.sleep(args.step_sleep)
        faults.late(step, "load_batch")
        return torch.full((256,), float(rank + step))

    def tensor_parallel(activations: Any) -> Any:
        dist.all_reduce(activations, group=tp)
        return activations

    def data_parallel(step: int, grads: Any) -> Any:
        faults.late(step, "data_parallel")
        dist.all_reduce(grads, group=dp)
        return grads

    def reduce_metric(loss: Any) -> float:
        dist.all_reduce(loss)
        return float(loss) / 8

    for step in range(args.steps):
        start = time.time()
        faults.step(step)
        activations = load_batch(step)
        loss = (activations * weight).mean().reshape(1)
        if faults.has(step, "swap"):
            value = reduce_metric(loss)
            activations = tensor_parallel(activations)
        else:
            activations = tensor_parallel(activations)
            value = 0.0
        grads = data_parallel(step, activations / 100)
        weight -= 1e-4 * grads
        if not faults.has(step, "swap"):
            value = reduce_metric(loss)
        _line(step, rank, host, start, value)


def _pipeline(args: argparse.Namespace, faults: _Faults, rank: int, host: str) -> None:
    import torch
    import torch.distributed as dist

    timeout = timedelta(seconds=args.collective_timeout)
    stages = [dist.new_group([0, 1, 2, 3], timeout=timeout), dist.new_group([4, 5, 6, 7], timeout=timeout)]
    replicas = [dist.new_group([s, s + 4], timeout=timeout) for s in range(4)]
    pp, dp = stages[rank // 4], replicas[rank % 4]
    stage, first, last = rank % 4, rank % 4 == 0, rank % 4 == 3
    weight = torch.ones(128)

    def forward(step: int) -> Any:
        faults.late(step, "forward")
        activations = torch.full((128,), float(step))
        if not first:
            dist.recv(activations, rank - 1, group=pp)
        time.sleep(args.step_sleep)
        activations = activations * weight
        if not last and not faults.has(step, "skip"):
            dist.send(activations, rank + 1, group=pp)
        return activations

    def backward(activations: Any) -> Any:
        grad = activations / 1000
        if not last:
            dist.recv(grad, rank + 1, group=pp)
        if not first:
            dist.send(grad, rank - 1, group=pp)
        return grad

    def data_parallel(step: int, grad: Any) -> Any:
        faults.late(step, "data_parallel")
        dist.all_reduce(grad, group=dp)
        return grad

    for step in range(args.steps):
        start = time.time()
        faults.step(step)
        grad = data_parallel(step, backward(forward(step)))
        weight -= 1e-4 * grad
        _line(step, rank, host, start, float(grad.sum()) + stage)


def _hsdp(args: argparse.Namespace, faults: _Faults, rank: int, host: str) -> None:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.distributed_c10d import _set_pg_timeout
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (2, 4), mesh_dim_names=("replicate", "shard"))
    for name in ("replicate", "shard"):  # the mesh's groups take the 30 min default, not init's timeout
        _set_pg_timeout(timedelta(seconds=args.collective_timeout), mesh.get_group(name))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)

    def forward(step: int) -> Any:
        time.sleep(args.step_sleep)
        faults.late(step, "forward")
        return model(torch.randn(16, 64, generator=generator)).pow(2).mean()

    for step in range(args.steps):
        start = time.time()
        faults.step(step)
        loss = forward(step)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        _line(step, rank, host, start, float(loss))


if __name__ == "__main__":
    sys.exit(main())
