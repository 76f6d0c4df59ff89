"""Node-level aggregation, the I/O part: a node's ranks hand their records to one leader over files in a
node-local directory, and the leader publishes them as one store value (:mod:`syncdoctor.watch.aggregate`).

The directory is ``<tmpfs>/syncdoctor-<uid>/<job token>-<host key>/`` (``/dev/shm`` where it is writable,
else the temporary directory; ``node_dir`` setting), created mode 0700 and refused when it is a link or
another user's. The job token comes from the store (the first rank's random token for this attempt), so
two jobs on one host never share a directory, and the host key keeps the lab's hosts (network namespaces
of one machine) apart. Files:

- ``rank-<R>``: rank R's latest record, replaced atomically at every publication (a dead rank's last
  record stays, and the monitor sees it stop);
- ``lease``: ``<rank> <pid> <monotonic time>``, renewed by the leader at each publication; created
  exclusively by the first rank, taken over by the next live rank at once when the leader's process is
  gone or stopped, else when it is not renewed (:func:`~syncdoctor.watch.aggregate.takeover_due`);
- ``index``: the node's number in the store (``<base>/node/<index>``), registered once;
- ``control``: the control message's generation and text, mirrored by the leader so that the node's
  other ranks poll a file, not the store.

Costs per rank and interval: one small file written (tens of microseconds on tmpfs). The leader reads
its node's files and makes one store ``set`` twice an interval (plus its control poll), so that a record
waits at most half an interval for the relay. Never raises to its caller for a
file problem it can survive; :meth:`NodeChannel.open` says why a channel cannot be had.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from syncdoctor.watch.aggregate import pack_node, takeover_due
from syncdoctor.watch.local import process_state
from syncdoctor.watch.records import STATES, decode_header

__all__ = ["NodeChannel", "node_base"]

_MAX_FILES = 4096  # rank files gathered per node
_MAX_RECORD = 1 << 20  # bytes per rank file
_STALE_DIRS_S = 86400.0  # directories of jobs gone for a day are removed by the next leader


def node_base(option: str | None = None) -> Path:
    """Where node directories go: ``option``, else ``/dev/shm`` when writable, else the temporary directory."""
    if option:
        return Path(option)
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return Path(tempfile.gettempdir())


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:80] or "host"


def _private_dir(path: Path) -> None:
    """Create ``path`` (mode 0700) or check the existing one is ours and not a link; OSError otherwise."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a directory of this user")


class NodeChannel:
    """One rank's end of its node's channel."""

    def __init__(self, directory: Path, rank: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.directory = directory
        self.rank = rank
        self.clock = clock
        self.index: int | None = None
        self.leading = False
        self._control_stamp: tuple[int, int] | None = None

    @classmethod
    def open(cls, base: Path, token: str, host_key: str, rank: int,
             clock: Callable[[], float] = time.monotonic) -> tuple[NodeChannel | None, str]:
        """The channel of this rank's node, or None and why not (the rank then publishes its own record)."""
        try:
            base.mkdir(parents=True, exist_ok=True)  # a node_dir that does not exist yet
            user_dir = base / f"syncdoctor-{os.getuid()}"
            _private_dir(user_dir)
            directory = user_dir / f"{_safe(token)}-{_safe(host_key)}"
            _private_dir(directory)
        except OSError as exc:
            return None, f"cannot use {base} for the node channel: {exc}"
        return cls(directory, rank, clock), ""

    # --- every rank ----------------------------------------------------------------------------------
    def _write(self, name: str, data: bytes) -> None:
        temp = self.directory / f".{name}.{os.getpid()}"
        with open(temp, "wb") as handle:
            handle.write(data)
        os.replace(temp, self.directory / name)

    def write_record(self, record: bytes) -> None:
        """This rank's latest record, for the leader to relay."""
        self._write(f"rank-{self.rank}", record)

    def forget(self) -> None:
        """This rank leaves the channel (it publishes its own record from now on): remove its file, so that the
        node value stops holding its last record and readers take the rank's own key."""
        with contextlib.suppress(OSError):
            (self.directory / f"rank-{self.rank}").unlink()
        self.resign()

    def read_control(self) -> tuple[int, bytes] | None:
        """The control generation and message text the leader mirrored, when the file changed since the last
        call; None when it did not (or there is none yet)."""
        path = self.directory / "control"
        try:
            info = path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
            if stamp == self._control_stamp:
                return None
            data = path.read_bytes()
        except OSError:
            return None
        head, _, text = data.partition(b"\n")
        if not head.isdigit():
            return None
        self._control_stamp = stamp
        return int(head), text

    # --- leadership ----------------------------------------------------------------------------------
    def _lease(self) -> tuple[int, int, float] | None:
        try:
            owner, pid, stamp = (self.directory / "lease").read_text().split()
            return int(owner), int(pid), float(stamp)
        except (OSError, ValueError):
            return None

    def _candidates(self, owner: int, interval_s: float) -> list[int]:
        """Ranks of the node that are alive (their file renewed within 3 intervals), the owner excepted."""
        now, out = time.time(), []
        with contextlib.suppress(OSError), os.scandir(self.directory) as entries:
            for entry in entries:
                if entry.name.startswith("rank-") and entry.name[5:].isdecimal():
                    rank = int(entry.name[5:])
                    if rank != owner and now - entry.stat().st_mtime <= 3 * interval_s:
                        out.append(rank)
        return sorted(out)

    def lead(self, interval_s: float) -> bool:
        """Whether this rank leads its node now: renew its lease, create it when there is none, or take it
        over when the leader stopped renewing it. Call once per publication, after :meth:`write_record`."""
        now = self.clock()
        lease = self._lease()
        mine = f"{self.rank} {os.getpid()} {now:.6f}".encode()
        if lease is None:
            try:
                fd = os.open(self.directory / "lease", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # another rank just created it
                self.leading = False
                return False
            with os.fdopen(fd, "wb") as handle:
                handle.write(mine)
            self.leading = True
            return True
        owner, pid, stamp = lease
        if owner == self.rank:
            return self._claim(mine)
        candidates = self._candidates(owner, interval_s)
        position = candidates.index(self.rank) if self.rank in candidates else len(candidates)
        # a leader whose process is gone or stopped (it runs on this host) is replaced at once; one that only
        # stopped renewing (a long call holding the GIL) after the takeover delay
        gone = position == 0 and process_state(pid) in ("gone", "zombie", "stopped")
        if gone or takeover_due(now - stamp, position, interval_s):
            return self._claim(mine)
        self.leading = False  # a leader that was replaced steps down here
        return False

    def _claim(self, lease: bytes) -> bool:
        """Write this rank's lease (renewed or taken over): it leads."""
        self._write("lease", lease)
        self.leading = True
        return True

    def gather(self) -> bytes | None:
        """The node value: every rank file of the node (the leader's own included); None when the directory is
        gone or a file listed went away while it was read (the node's last rank removing the directory at the
        job's end, whose own publication already holds every final record): a value without them must not
        replace the one that has them."""
        records: list[bytes] = []
        try:
            with os.scandir(self.directory) as entries:
                for entry in entries:
                    if len(records) >= _MAX_FILES or not entry.name.startswith("rank-"):
                        continue
                    try:
                        if entry.stat().st_size <= _MAX_RECORD:
                            with open(entry.path, "rb") as handle:
                                records.append(handle.read(_MAX_RECORD))
                    except FileNotFoundError:
                        return None
                    except OSError:
                        continue
        except OSError:
            return None
        return pack_node(records)

    def node_index(self, register: Callable[[], int]) -> int:
        """The node's number in the store: from the ``index`` file, else ``register()`` (a store counter)
        once, written down for the leaders after this one."""
        if self.index is not None:
            return self.index
        path = self.directory / "index"
        try:
            self.index = int(path.read_text())
            return self.index
        except (OSError, ValueError):
            pass
        self.index = register()
        self._write("index", str(self.index).encode())
        self._clean_stale()
        return self.index

    def index_known(self) -> bool:
        """Whether the node has registered its number (by this rank or another leader)."""
        return self.index is not None or (self.directory / "index").exists()

    def mirror_control(self, gen: int, text: bytes) -> None:
        """Leader: the control message for the node's other ranks."""
        self._write("control", str(gen).encode() + b"\n" + text)

    # --- end -----------------------------------------------------------------------------------------
    def resign(self) -> None:
        """The leader's last relay is done (its rank exits or fails): remove the lease, so that the next rank
        to publish leads at once instead of after a takeover delay."""
        if self.leading:
            lease = self._lease()
            if lease is not None and lease[0] == self.rank and lease[1] == os.getpid():
                with contextlib.suppress(OSError):
                    (self.directory / "lease").unlink()
            self.leading = False

    def close(self) -> None:
        """At the watcher's stop, after the final record: the last rank of the node to stop (every rank file
        holds a final record: exited, failed or aborting) removes the directory. A rank killed without a
        goodbye leaves it to the stale-directory cleanup of a later job's leader."""
        final = {STATES.index(s) for s in ("exited", "failed", "aborting")}
        try:
            with os.scandir(self.directory) as entries:
                paths = [entry.path for entry in entries if entry.name.startswith("rank-")]
            for path in paths:
                head = decode_header(Path(path).read_bytes())
                if head is None or head[11] not in final:  # the header's state
                    return
        except OSError:
            return
        # renamed first (one step): a leader still relaying reads no directory, not a part of one
        gone = self.directory.with_name(f".{self.directory.name}.gone-{os.getpid()}")
        try:
            os.rename(self.directory, gone)
        except OSError:
            return
        shutil.rmtree(gone, ignore_errors=True)

    def _clean_stale(self) -> None:
        """Remove this user's node directories whose files are all older than a day (jobs long gone)."""
        now = time.time()
        try:
            with os.scandir(self.directory.parent) as entries:
                others = [e for e in entries if e.path != str(self.directory) and e.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for entry in others:
            try:
                with os.scandir(entry.path) as files:
                    newest = max((f.stat().st_mtime for f in files), default=entry.stat().st_mtime)
            except OSError:
                continue
            if now - newest > _STALE_DIRS_S:
                shutil.rmtree(entry.path, ignore_errors=True)
