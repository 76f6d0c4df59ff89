"""Helpers shared by the rules: building hypotheses and evidence. Pure: no I/O."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from syncdoctor.analyze.model import Category, Event, Evidence, Hypothesis, Kind
from syncdoctor.analyze.parsers.gloo import is_loopback
from syncdoctor.analyze.timeline import Timeline, is_comm_exception
from syncdoctor.kb.pages.analyze import CATEGORY_RULES
from syncdoctor.units import format_ranks

__all__ = ["ARGPARSE_REFUSAL", "LOOPBACK_STORE", "MAX_CASCADE", "SHM_FIX", "SIGBUS_VERB", "SIGBUS_WHAT", "Attribution", "after_stamp", "attribute", "bridge_gateway",
           "continuation",
           "evidence_of", "fmt_ranks", "hypothesis", "ip_of", "just_above", "launchers_own", "look_at", "socket_transport",
           "unique_id_roots_gone", "unprefixed_exception", "writer_hosts"]

MAX_CASCADE = 16  # evidence lines kept from the ranks that merely suffered
# a c10d socket's peer on the same machine, as its waitForInput lines name it (``remote=[localhost]:29500``)
LOOPBACK_STORE = ("remote=[localhost]", "remote=[127.", "remote=[::1]")
CONTINUATION_LINES = 6  # an exception's message goes on for a few lines after its first


# an exception's own line pasted without the traceback above it, read as an error line (``NotImplementedError: Using RTX
# 3090 …``): its class a word ending in Error or Exception
# argparse's refusal of the command line, before its exit with code 2 (``train.py: error: unrecognized arguments:
# --local-rank=0``): the script ran
ARGPARSE_REFUSAL = (r"[\w.\-]{1,80}: error: (?:unrecognized arguments|the following arguments are required|"
                    r"argument [\w\-/]{1,80}: )")
_EXCEPTION_LINE = re.compile(r"(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S|" + ARGPARSE_REFUSAL)


def unprefixed_exception(tl: Timeline, report: Event, *, exception_lines: bool = False) -> Event | None:
    """A worker's own exception printed without its rank (a node's console with no rank prefixes), above the
    launcher's record of that worker's failure, when that record is the only failure with an exit code of its own
    in that file (the others stopped by the launcher's SIGTERM, or none): the exception is that worker's.
    ``exception_lines``: an exception's line without its traceback (an error line shaped as one) counts too."""
    source = report.ref.source
    failed = {e.data.get("local_rank") for e in tl.of(Kind.WORKER_FAILED)
              if e.ref.source == source and e.data.get("signal") not in ("SIGTERM", "SIGKILL")}
    if len(failed) != 1:
        return None
    above = [e for e in tl.unattributed if e.ref.source == source and e.ref.line < report.ref.line]
    if any(e.kind is Kind.CUDA_OOM for e in above):
        return None  # out of GPU memory: rules.node reads it, with the launcher's record of the worker
    # (NCCL's result code under PyTorch's DistBackendError, ``ncclUnhandledCudaError: …``, is that error's own line)
    own = [e for e in above if (e.kind is Kind.EXCEPTION and not is_comm_exception(e) and not launchers_own(e)
                                and not str(e.data.get("type", "")).startswith("nccl"))
           or (exception_lines and e.kind is Kind.ERROR_LINE and _EXCEPTION_LINE.match(str(e.data.get("message", ""))))]
    return own[0] if own else None


def launchers_own(exception: Event) -> bool:
    """A traceback of torchrun's agent itself (its rendezvous, its store), not of a worker."""
    frames = " ".join(str(f) for f in exception.data.get("frames") or ())
    message = str(exception.data.get("message") or exception.text)
    return "elastic/rendezvous" in frames or "elastic/agent" in frames or "Rendezvous" in message


def continuation(tl: Timeline, event: Event) -> list[Event]:
    """The error-looking lines the writer of ``event`` printed in the few lines after it, in the same file: a
    runtime's exception often gives its reason below its first line (``HCCL function error … error code is 11``,
    then ``Failed to bind the IP port … bound already``; ``NPU error, error code is 107020``, then ``hccl
    fftsplus task timeout``)."""
    line = event.ref.line
    return [e for e in tl.of(Kind.ERROR_LINE)
            if e.ref.source == event.ref.source and line < e.ref.line <= line + CONTINUATION_LINES
            and e.origin.rank == event.origin.rank and e.origin.host == event.origin.host]


def after_stamp(event: Event) -> str:
    """The event's line without the timestamp a log collector put before it (``kubectl logs --timestamps``:
    ``2026-01-01T00:00:03.123456789Z <the line>``): the line as its writer printed it."""
    text = event.text
    if event.time_text and text.startswith(event.time_text):
        return text[len(event.time_text):].removeprefix(" ")
    return text


def just_above(tl: Timeline, event: Event, lines: int) -> list[Event]:
    """The error-looking lines and exceptions in the ``lines`` lines above ``event``, in the same file, nearest
    last: what a process printed right before its end (``continuation`` reads the lines after an error)."""
    line = event.ref.line
    return [e for e in tl.of(Kind.ERROR_LINE, Kind.EXCEPTION)
            if e.ref.source == event.ref.source and line - lines <= e.ref.line < line]


# a process that died of SIGBUS: what it means in a PyTorch job, and what to change
SIGBUS_VERB = "died of SIGBUS: a shared-memory mapping failed, usually a full /dev/shm (Docker's 64 MB default)"
SIGBUS_WHAT = ("SIGBUS is what a process gets when a page of a memory-mapped file cannot be backed: with PyTorch that "
               "is /dev/shm, used by DataLoader workers and NCCL's shared-memory transport.")
SHM_FIX = "Give the container more shared memory (--shm-size=8g or --ipc=host), or fewer DataLoader workers."


# what ProcessGroupNCCL prints after any failure its watchdog caught in this process's own collective, whatever
# the failure: once a hypothesis explains the failure, these say nothing more (alone, they are still quoted), and
# they put the rank inside a collective (it is not the quiet one that never arrived)
AFTERMATH = ("Some NCCL operations have failed or timed out", "To avoid data inconsistency, we are taking the entire "
             "process down", "Stack trace of the failed collective not found")


def is_aftermath(event: Event) -> bool:
    """One of ProcessGroupNCCL's lines after its watchdog caught a failed or timed-out collective; or a line whose
    only sign of an error is the level its program logged it at (a traceback's frame at ERROR)."""
    return event.kind is Kind.ERROR_LINE and (bool(event.data.get("logged")) or any(words in event.text
                                                                                     for words in AFTERMATH))


def fmt_ranks(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5`` (the prose form of :func:`syncdoctor.units.format_ranks`)."""
    return format_ranks(ranks, sep=", ", empty="none")


@dataclass(frozen=True)
class Attribution:
    """Who the lines of a failure name, as far as they go: global ranks, hosts, and otherwise the process as
    the lines tell it (local rank, pid, GPU)."""

    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    processes: tuple[str, ...] = ()
    local_ranks: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        """``rank 3 on node1``, ``ranks 0-2 on a, b``, ``local rank 1 (pid 14447) on node-b``, ``gpu2-ru7``, or ``""``."""
        if self.ranks:
            where = f" on {', '.join(self.hosts)}" if self.hosts else ""
            return f"rank{'s' if len(self.ranks) > 1 else ''} {fmt_ranks(self.ranks)}{where}"
        if self.processes:
            return ", ".join(self.processes[:3]) + (f" and {len(self.processes) - 3} more" if len(self.processes) > 3 else "")
        return ", ".join(self.hosts)


def attribute(events: Iterable[Event], tl: Timeline | None = None) -> Attribution:
    """Where a failure seen in ``events`` sits: their ranks and hosts where the lines or the timeline give them,
    else each process as the lines name it (``local rank 1 (pid 14447)``, ``GPU 3 on gpu2-ru7``). A local
    rank is taken from the line, or from NCCL's ``[N]`` device where nothing else names the process (one
    GPU per process, the launchers' default)."""
    ranks: set[int] = set()
    hosts: list[str] = []
    processes: list[str] = []
    local_ranks: set[int] = set()
    for event in events:
        origin = event.origin
        if tl is not None and origin.pid is not None and origin.host is None and origin.rank is None:
            # a process a launcher names by pid alone (``failed (exitcode: -9) local_rank: 2 (pid: 6957)``)
            host, rank = tl.pid_place(origin.pid)
            if host is not None:
                origin = replace(origin, host=host, rank=rank)
        elif tl is not None and origin.pid is not None and origin.host and origin.rank is None:
            sole = tl.sole_rank(origin.host, origin.pid)
            if sole is not None:
                origin = replace(origin, rank=sole)
        if origin.host and origin.host not in hosts:
            hosts.append(origin.host)
        if origin.rank is not None:
            ranks.add(origin.rank)
            if tl is not None and not origin.host and (host := tl.rank_host(origin.rank)) and host not in hosts:
                hosts.append(host)
            continue
        described = origin.describe()
        if described and described not in processes and not (origin.host and described == origin.host):
            processes.append(described)
        local = origin.local_rank if origin.local_rank is not None else origin.device
        if local is not None:
            local_ranks.add(local)
    return Attribution(tuple(sorted(ranks)), tuple(hosts), tuple(processes) if not ranks else (),
                       tuple(sorted(local_ranks)) if not ranks else ())


def evidence_of(events: Iterable[Event], note: str = "", limit: int | None = None) -> list[Evidence]:
    out = []
    for event in events:
        out.append(Evidence(event.ref, event.text, note, event.origin.rank, event.origin.host))
        if limit is not None and len(out) >= limit:
            break
    return out


def hypothesis(
    tl: Timeline,
    category: Category,
    confidence: float,
    title: str,
    *,
    culprits: Sequence[int] = (),
    hosts: Sequence[str] | None = None,
    affected: Sequence[int] = (),
    what: str = "",
    fix: str | None = None,
    evidence: Sequence[Evidence] = (),
    root_cause: bool = True,
    processes: Sequence[str] = (),
    local_ranks: Sequence[int] = (),
    where: Attribution | None = None,
) -> Hypothesis:
    """A hypothesis of ``category``; ``where`` (what :func:`attribute` found in its lines) gives the culprits,
    their hosts, processes and local ranks at once."""
    if where is not None:
        culprits, hosts = where.ranks, where.hosts
        processes, local_ranks = where.processes, where.local_ranks
    rule = CATEGORY_RULES[category.value]
    culprit_hosts = tuple(hosts) if hosts is not None else tl.hosts_of(culprits)
    affected_ranks = tuple(sorted(set(affected) - set(culprits)))
    seen: set[tuple[str, int, str]] = set()
    unique = []
    for item in evidence:
        key = (item.ref.source, item.ref.line, item.text)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return Hypothesis(
        category=category,
        code=rule.code,
        confidence=max(0.0, min(1.0, confidence)),
        title=title,
        culprit_ranks=tuple(sorted(set(culprits))),
        culprit_hosts=culprit_hosts,
        affected_ranks=affected_ranks,
        affected_hosts=tl.hosts_of(affected_ranks),
        what=what or rule.summary,
        fix=fix or rule.fix,
        evidence=tuple(unique),
        root_cause=root_cause,
        culprit_processes=tuple(processes),
        culprit_local_ranks=tuple(sorted(set(local_ranks))),
    )


def look_at(tl: Timeline, ranks: list[int]) -> str:
    """The lagging-rank fix, naming where to look."""
    places = []
    for rank in ranks[:4]:
        state = tl.ranks[rank]
        where = f"rank {rank}" + (f" on {state.host}" if state.host else "")
        if state.pids:
            where += f" (pid {', '.join(str(p) for p in state.pids[:2])})"
        places.append(where)
    return (f"Find out what {'; '.join(places)} was doing instead of entering the collective: its last log lines, "
            "a stack (py-spy dump --pid PID while it hangs), data loading, I/O, a rank-dependent branch, or a "
            "stopped process. Next time collect Flight Recorder dumps (TORCH_NCCL_DUMP_ON_TIMEOUT=1, also TORCH_FR_DUMP_ON_TIMEOUT in recent releases) or run "
            "syncdoctor watch, which name the collective it never reached.")


def ip_of(addr: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address in ``addr`` (an IPv6 zone such as ``%eth0`` dropped), or None when it is a host name."""
    try:
        return ipaddress.ip_address(addr.split("%")[0])
    except ValueError:
        return None


# the gateway of a Docker network, the host's own interface on it (docker0 is 172.17.0.1, user-defined networks
# 172.18.0.1 and up), and libvirt's virbr0: an address every host with that software has, never a peer's to dial
_BRIDGE_GATEWAY = re.compile(r"^172\.(?:1[7-9]|2\d|3[01])\.0\.1$|^192\.168\.122\.1$")


def bridge_gateway(addr: str) -> str | None:
    """What bridge ``addr`` is the gateway of (``Docker's docker0``, ``a Docker network's``, ``libvirt's virbr0``),
    or None."""
    if not _BRIDGE_GATEWAY.match(addr):
        return None
    return "libvirt's virbr0" if addr.startswith("192.168.") else "Docker's docker0" if addr == "172.17.0.1" else \
        "a Docker network's bridge"


def is_link_local(addr: str) -> bool:
    """A link-local address (169.254.0.0/16, fe80::/10): reachable on its own link only."""
    ip = ip_of(addr)
    return ip is not None and ip.is_link_local


def unroutable(addr: str) -> bool:
    """Loopback or link-local: an address no other host can reach (``network.advertised_loopback`` reads a peer
    that advertised it: A008, or A007 for a link-local address on no container's bridge)."""
    return is_loopback(addr) or is_link_local(addr)


def writer_hosts(tl: Timeline) -> set[str]:
    """Every host a line of the inputs names as its writer (also those of processes whose rank is unknown)."""
    return {e.origin.host for e in tl.events if e.origin.host}


def socket_transport(tl: Timeline) -> list[Event]:
    """NCCL's lines that say it uses TCP sockets for its network (``NET/Socket : Using …``, ``Using network
    Socket``)."""
    return [e for e in tl.of(Kind.NCCL_NET) if e.data.get("network") == "Socket" or e.data.get("net") == "Socket"]


_STORE_GONE = ("reset by peer", "Broken pipe", "closed by peer", "got 0 bytes")


def unique_id_roots_gone(tl: Timeline) -> list[int]:
    """The ranks whose ``ncclUniqueId`` the others were fetching from the store when its connection broke
    (``store->get('0') got error: Broken pipe``): the root's process, which serves the store in the usual launch,
    went away."""
    return sorted({int(e.data["waiting_for"]) for e in tl.of(Kind.STORE_ERROR)
                   if e.data.get("what") == "nccl-unique-id" and e.data.get("waiting_for") is not None
                   and any(w in str(e.data.get("error", "")) for w in _STORE_GONE)})
