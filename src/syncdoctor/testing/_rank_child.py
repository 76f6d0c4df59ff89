"""One rank of a :func:`syncdoctor.testing.multirank.run_multirank` run: ``python -m
syncdoctor.testing._rank_child WORKDIR RANK``. Does I/O: joins the process group, runs the function,
writes its result and progress files into WORKDIR.

Files in WORKDIR (private to the run, written by our own processes):
``job.pkl`` (written by the parent: the function reference and its arguments), ``port`` (rank 0: the
store's port), ``progress-R.json`` (last collective entered/left), ``stack-R.txt`` (faulthandler dump on
SIGUSR1), ``result-R.pkl`` (return value or error).
"""

from __future__ import annotations

import faulthandler
import importlib
import importlib.util
import json
import os
import pickle
import signal
import socket
import sys
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

from syncdoctor.faults.intercept import Invocation, intercept, register_internal_module
from syncdoctor.testing._hang import is_internal_file

register_internal_module(__name__)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _filter(te: traceback.TracebackException) -> None:
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if not is_internal_file(f.filename)])
    for chained in (te.__cause__, te.__context__):
        if chained is not None:
            _filter(chained)


def format_error(exc: BaseException) -> str:
    """The traceback without syncdoctor's runner and wrapper frames."""
    te = traceback.TracebackException.from_exception(exc)
    _filter(te)
    return "".join(te.format())


def resolve(module: str, qualname: str, file: str | None) -> Any:
    """Import ``module`` (or load it from ``file``) and follow ``qualname`` to the function."""
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        if not file:
            raise
        spec = importlib.util.spec_from_file_location(module, file)
        if spec is None or spec.loader is None:
            raise
        obj = importlib.util.module_from_spec(spec)
        sys.modules[module] = obj
        spec.loader.exec_module(obj)
    parts = qualname.split(".")
    for index, part in enumerate(parts):
        obj = getattr(obj, part)
        if isinstance(obj, type) and index < len(parts) - 1:
            obj = obj()  # a test method: an instance of its class, like pytest makes
    return obj


class _Progress:
    """Writes this rank's position (per-group sequence numbers, the collective it is in) to a file."""

    def __init__(self, path: Path, rank: int) -> None:
        self.path = path
        self.rank = rank
        self.entered: dict[str, int] = {}
        self.completed: dict[str, int] = {}
        self.current: dict[str, Any] | None = None
        self.last: dict[str, Any] | None = None
        self.failed_in: dict[str, Any] | None = None
        self.host = socket.gethostname()
        self.lock = threading.Lock()
        self.write("running")

    def write(self, state: str) -> None:
        record = {
            "rank": self.rank,
            "pid": os.getpid(),
            "host": self.host,
            "state": state,
            "entered": self.entered,
            "completed": self.completed,
            "current": self.current,
            "last": self.last,
            "failed_in": self.failed_in,
            "time": time.time(),
        }
        _write_atomic(self.path, json.dumps(record).encode())

    def __call__(self, inv: Invocation) -> Any:
        call = inv.call
        if call.is_p2p:
            return inv.proceed()
        group = ",".join(str(r) for r in call.group_ranks)
        with self.lock:
            seq = self.entered.get(group, 0) + 1
            self.entered[group] = seq
            self.current = {**call.to_json(), "group": group, "seq": seq}
            self.last = self.current
            self.write("in_collective")
        try:
            result = inv.proceed()
        except BaseException:
            with self.lock:
                self.failed_in = self.current
                self.current = None
            raise
        with self.lock:
            self.completed[group] = seq
            self.current = None
            self.write("running")
        return result


def _connect_store(workdir: Path, rank: int, world_size: int, timeout: timedelta) -> Any:
    import torch.distributed as dist

    port_file = workdir / "port"
    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True, timeout=timeout, wait_for_workers=False)
        _write_atomic(port_file, str(store.port).encode())
        return store
    deadline = time.monotonic() + timeout.total_seconds()
    while not port_file.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("rank 0 did not publish the store port")
        time.sleep(0.01)
    port = int(port_file.read_text())
    return dist.TCPStore("127.0.0.1", port, world_size, is_master=False, timeout=timeout)


def main(argv: list[str]) -> int:
    workdir, rank = Path(argv[0]), int(argv[1])
    faulthandler.enable(file=sys.stderr)
    stack_file = open(workdir / f"stack-{rank}.txt", "w")  # kept open for the signal handler
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    with open(workdir / "job.pkl", "rb") as handle:
        job = pickle.load(handle)  # written by our parent process for this run only
    for entry in reversed(job["sys_path"]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    result_path = workdir / f"result-{rank}.pkl"
    world_size = int(job["world_size"])
    progress = _Progress(workdir / f"progress-{rank}.json", rank)
    try:
        from syncdoctor.testing import multirank

        timeout = timedelta(seconds=float(job["pg_timeout_s"]))
        store = None
        if job["init"]:
            import torch.distributed as dist

            store = _connect_store(workdir, rank, world_size, timeout)
            os.environ["MASTER_PORT"] = str(store.port)
            dist.init_process_group(
                job["backend"], store=store, rank=rank, world_size=world_size, timeout=timeout
            )
        multirank._set_context(multirank.RankContext(rank, world_size, store, workdir))
        function = resolve(*job["target"])
        (workdir / f"ready-{rank}").touch()
        with intercept(progress):
            value = function(*job["args"], **job["kwargs"])
    except BaseException as exc:  # report every failure, including SystemExit and KeyboardInterrupt
        record = {
            "ok": False,
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": format_error(exc),
            "time": time.time(),
        }
        progress.write("failed")
        _write_atomic(result_path, pickle.dumps(record))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)  # without destroy_process_group: the other ranks may be waiting for us
    try:
        payload = pickle.dumps({"ok": True, "value": value})
    except Exception as exc:
        payload = pickle.dumps(
            {"ok": False, "type": "PicklingError", "message": f"the return value cannot be sent back: {exc}",
             "traceback": ""}
        )
    progress.write("done")
    _write_atomic(result_path, payload)
    if job["init"]:
        import torch.distributed as dist

        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
