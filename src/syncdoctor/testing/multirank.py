"""Run a function on N real processes joined in a gloo process group on 127.0.0.1, and report each
rank's result, traceback, or, for ranks that hang, where they are and which collective they wait in.

    from syncdoctor.testing.multirank import run_multirank

    result = run_multirank(my_step, world_size=2, timeout=30, args=(batch,))
    result.check()          # AssertionError naming the failed or hanging ranks, with tracebacks/stacks
    result.values           # each rank's return value, by rank

The function must be importable by the child processes: a module-level function (or a method of a
class that takes no constructor arguments), its module on ``sys.path``. Arguments and return values are
pickled. Inside the function, ``torch.distributed`` is initialised (``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT`` are set too) and :func:`rank_context` gives the rank, the world size and
the job's store.

Two hard limits: ``startup_timeout`` for starting the processes, importing torch and the function's
module and joining the process group (seconds on a busy CI machine), then ``timeout`` for the function
itself, counted once every rank is ready. When one expires (or ``grace_s`` after the first rank failed,
since the others then wait for it forever), each live rank's Python stacks are dumped by faulthandler, its last collective is
read from its progress file, and every process in each rank's session is killed with SIGKILL and reaped.
Does I/O: processes, signals, a private temporary directory. Does not import torch in the caller.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncdoctor.errors import UsageError
from syncdoctor.testing._hang import (
    Diagnosis,
    Frame,
    ProgressRecord,
    diagnose,
    is_internal_file,
    main_thread_frames,
    user_frame,
)
from syncdoctor.testing._results import MultiRankFailure, MultiRankResult, RankResult
from syncdoctor.testing._watch_bridge import watch_events

__all__ = [
    "MultiRankFailure",
    "MultiRankResult",
    "RankContext",
    "RankResult",
    "rank_context",
    "run_multirank",
]

_OUTPUT_TAIL_LINES = 40


@dataclass(frozen=True)
class RankContext:
    """What a function running on a rank may want: set in each child process."""

    rank: int
    world_size: int
    store: Any  # the job's torch.distributed.Store (None when the run was started with init=False)
    workdir: Path


_CONTEXT: RankContext | None = None


def _set_context(context: RankContext) -> None:
    global _CONTEXT
    _CONTEXT = context


def rank_context() -> RankContext:
    """The context of the rank this code runs on; raises outside :func:`run_multirank`."""
    if _CONTEXT is None:
        raise UsageError("rank_context() is only available inside a function run by run_multirank")
    return _CONTEXT


def _function_reference(fn: Callable[..., Any]) -> tuple[str, str, str | None]:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module or not qualname or "<locals>" in qualname or "<lambda>" in qualname:
        raise UsageError(
            f"{fn!r} cannot be run on other processes: use a module-level function (not a lambda or closure)"
        )
    file = getattr(sys.modules.get(module), "__file__", None)
    if module == "__main__":
        if not file:
            raise UsageError("a function defined in an interactive __main__ cannot be run on other processes")
        module = Path(file).stem
    return module, qualname, file


def _kill_sessions(pids: Sequence[int]) -> None:
    """SIGKILL every rank's session at once (so no rank outlives another and reports its death as its
    own failure), then anything they started that left the session, and reap those."""
    import psutil

    descendants: list[psutil.Process] = []
    for pid in pids:
        try:
            descendants += psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            pass
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)  # each rank was started as the leader of its own session
        except (ProcessLookupError, PermissionError):
            pass
    for child in descendants:
        try:
            child.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(descendants, timeout=5)


def _tail(path: Path, lines: int = _OUTPUT_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _read_progress(path: Path) -> ProgressRecord | None:
    import json

    try:
        return ProgressRecord.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _dump_stacks(pids: Mapping[int, int], workdir: Path, wait_s: float = 2.0) -> dict[int, str]:
    """Ask each live rank for its Python stacks (SIGUSR1 -> faulthandler) and read them back."""
    for pid in pids.values():
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass
    stacks: dict[int, str] = {}
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and len(stacks) < len(pids):
        for rank in pids:
            if rank in stacks:
                continue
            text = (workdir / f"stack-{rank}.txt").read_text(errors="replace") if (
                workdir / f"stack-{rank}.txt"
            ).exists() else ""
            if "most recent call first" in text:
                time.sleep(0.05)  # let the handler finish writing
                stacks[rank] = (workdir / f"stack-{rank}.txt").read_text(errors="replace")
        time.sleep(0.02)
    return stacks


def _format_frames(frames: Sequence[Frame], limit: int = 12) -> str:
    frames = [frame for frame in frames if not is_internal_file(frame.file)]
    shown = [f"  {frame}" for frame in frames[:limit]]
    if len(frames) > limit:
        shown.append(f"  ... {len(frames) - limit} more")
    return "\n".join(shown)


def _unsendable(function: str, args: Sequence[Any], kwargs: Mapping[str, Any], error: Exception) -> str:
    """Which argument or fixture cannot be pickled for the ranks, by name, and what to do about it."""
    for name, value in [*((f"argument {i}", v) for i, v in enumerate(args)), *kwargs.items()]:
        try:
            pickle.dumps(value)
        except Exception as exc:
            what = name if name.startswith("argument") else f"the fixture or argument '{name}'"
            return (f"{what} of {function} cannot be sent to the ranks ({type(value).__name__}: "
                    f"{str(exc).splitlines()[0][:160]}): each rank is another process and gets a pickled copy. "
                    "Fixtures that hold this process's state (capsys, capfd, monkeypatch, caplog, request) cannot "
                    "go there; request plain data (tmp_path, values) or use the fixture outside the ranks.")
    return f"the arguments of {function} cannot be sent to the ranks: {error}"


def run_multirank(
    fn: Callable[..., Any],
    world_size: int = 2,
    *,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    timeout: float = 60.0,
    startup_timeout: float = 120.0,
    backend: str = "gloo",
    env: Mapping[str, str | None] | None = None,
    grace_s: float = 3.0,
    init: bool = True,
    keep_workdir: bool = False,
) -> MultiRankResult:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` processes; see the module docstring.

    ``timeout`` bounds the function's run in seconds, from the moment every rank is ready;
    ``startup_timeout`` bounds the start before that (importing torch takes seconds per process).
    ``env`` adds (or with None removes) environment variables of the ranks; ``OMP_NUM_THREADS``
    defaults to 1. ``init=False`` skips ``init_process_group``.
    """
    if world_size < 1:
        raise UsageError(f"world_size must be at least 1, got {world_size}")
    if timeout <= 0 or startup_timeout <= 0:
        raise UsageError(f"timeouts must be positive, got {timeout} and startup_timeout {startup_timeout}")
    target = _function_reference(fn)
    workdir = Path(tempfile.mkdtemp(prefix="syncdoctor-ranks-"))
    job = {
        "target": target,
        "args": tuple(args),
        "kwargs": dict(kwargs or {}),
        "world_size": world_size,
        "backend": backend,
        # the process group's own timeout stays longer than ours, so we see the hang, not gloo's error
        "pg_timeout_s": timeout + startup_timeout + 30.0,
        "sys_path": list(sys.path),
        "init": init,
    }
    try:
        payload = pickle.dumps(job)
    except Exception as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise UsageError(_unsendable(target[1], args, kwargs or {}, exc)) from None
    (workdir / "job.pkl").write_bytes(payload)
    base_env = dict(os.environ)
    base_env.setdefault("OMP_NUM_THREADS", "1")
    for name, value in (env or {}).items():
        if value is None:
            base_env.pop(name, None)
        else:
            base_env[name] = str(value)
    procs: list[subprocess.Popen[bytes]] = []
    start = time.monotonic()
    timed_out = False
    stopped: set[int] = set()
    stacks: dict[int, str] = {}
    stopped_at = time.time()
    try:
        for rank in range(world_size):
            rank_env = dict(base_env)
            rank_env.update(
                RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
                LOCAL_WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1",
            )
            with open(workdir / f"output-{rank}.txt", "wb") as out:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "syncdoctor.testing._rank_child", str(workdir), str(rank)],
                        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        env=rank_env, start_new_session=True,
                    )
                )
        deadline = start + startup_timeout
        ready_at: float | None = None
        first_failure: float | None = None
        while True:
            codes = [p.poll() for p in procs]
            if all(code is not None for code in codes):
                break
            now = time.monotonic()
            if ready_at is None and all((workdir / f"ready-{rank}").exists() for rank in range(world_size)):
                ready_at = now
                deadline = now + timeout
            if first_failure is None and any(code not in (None, 0) for code in codes):
                first_failure = now
            if first_failure is not None and now - first_failure > grace_s:
                stopped = {rank for rank, code in enumerate(codes) if code is None}
                break
            if now > deadline:
                timed_out = True
                break
            time.sleep(0.05)
        stopped_at = time.time()
        alive = {rank: p.pid for rank, p in enumerate(procs) if p.poll() is None}
        if alive:
            stacks = _dump_stacks(alive, workdir)
            for rank in alive:
                stacks.setdefault(rank, "")
    finally:
        _kill_sessions([proc.pid for proc in procs])
        for proc in procs:
            proc.wait()
    elapsed = time.monotonic() - start
    try:
        result = _collect(workdir, procs, stacks, stopped, timed_out, timeout, elapsed, target[1], stopped_at)
        startup_s = None if ready_at is None else ready_at - start
        if ready_at is None and all((workdir / f"ready-{rank}").exists() for rank in range(world_size)):
            startup_s = elapsed  # every rank got ready between two polls before finishing
        return dataclasses.replace(result, startup_s=startup_s, startup_timeout_s=startup_timeout)
    finally:
        if not keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def _collect(
    workdir: Path,
    procs: Sequence[subprocess.Popen[bytes]],
    stacks: Mapping[int, str],
    stopped: set[int],
    timed_out: bool,
    timeout: float,
    elapsed: float,
    function: str,
    stopped_at: float,
) -> MultiRankResult:
    results: list[RankResult] = []
    records: dict[int, ProgressRecord | None] = {}
    where: dict[int, Frame | None] = {}
    exited: dict[int, int] = {}
    for rank, proc in enumerate(procs):
        records[rank] = _read_progress(workdir / f"progress-{rank}.json")
        outcome: dict[str, Any] = {}
        result_path = workdir / f"result-{rank}.pkl"
        if result_path.exists():
            try:
                outcome = pickle.loads(result_path.read_bytes())  # written by our own child process
            except Exception as exc:  # a truncated file from a killed rank
                outcome = {"ok": False, "type": "ResultError", "message": str(exc), "traceback": str(exc)}
        frames: list[Frame] = []
        if stacks.get(rank):
            frames = main_thread_frames(stacks[rank])
            where[rank] = user_frame(frames)
        late_failure = not outcome.get("ok") and float(outcome.get("time") or stopped_at) >= stopped_at
        if rank in stacks and (not outcome or late_failure):
            # still running when stopped: a failure it wrote while being stopped does not count
            status = "stopped" if rank in stopped else "hung"
        elif outcome.get("ok"):
            status = "ok"
        elif outcome:
            status = "failed"
        else:
            status = "crashed"
        if status in ("failed", "crashed"):
            exited[rank] = proc.returncode if proc.returncode is not None else -1
        results.append(
            RankResult(
                rank=rank,
                pid=proc.pid,
                status=status,
                returncode=proc.returncode,
                value=outcome.get("value"),
                error_type=str(outcome.get("type", "")),
                error=str(outcome.get("traceback", "")),
                output=_tail(workdir / f"output-{rank}.txt") if status != "ok" else "",
                stack=_format_frames(frames) if frames else "",
                where=where.get(rank),
                progress=records[rank],
                failed_at=outcome.get("time"),
            )
        )
    stuck = [r.rank for r in results if r.status in ("hung", "stopped")]
    diagnosis = Diagnosis((), ())
    if stuck or exited:
        diagnosis = diagnose(records, stuck, where, exited)
        states = {
            r.rank: {"ok": "exited", "failed": "failed", "crashed": "failed"}.get(r.status, "running") for r in results
        }
        rank_frames = {rank: main_thread_frames(text) for rank, text in stacks.items() if text}
        events = watch_events(records, len(procs), states, rank_frames, where, stopped_at)
        diagnosis = dataclasses.replace(diagnosis, watch=events)
    return MultiRankResult(
        world_size=len(procs),
        timeout_s=timeout,
        elapsed_s=elapsed,
        timed_out=timed_out,
        ranks=tuple(results),
        diagnosis=diagnosis,
        function=function,
    )
