"""Rules for PyTorch's TORCH_NCCL_*/TORCH_* switches (E5xx) and Gloo's variables (E6xx). Pure: no I/O.

PyTorch reads each switch with ``getCvarInt``/``getCvarBool`` over a list of names, new name first; the
new name wins when both are set (:meth:`EnvContext.torch_value`). The TORCH_NCCL_* switches matter only
for the NCCL backend.
"""

from __future__ import annotations

from collections.abc import Iterator

from syncdoctor.checks.env_context import EnvContext
from syncdoctor.checks.env_net import interface_problems
from syncdoctor.kb import Finding, Severity
from syncdoctor.kb.pages import env as pages

__all__ = ["RULES"]

_MODES = {
    0: "no handling: a failed or timed-out collective is never cleaned up",
    1: "abort the communicator and tear the process down",
    2: "abort the communicator only: the process keeps running",
    3: "tear the process down without aborting the communicator",
}


def error_handling(ctx: EnvContext) -> Iterator[Finding]:
    """E501 (mode 0 or 2) and E502 (blocking wait)."""
    got = ctx.torch_value("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING")
    if got is not None and got[1] in (0, 2):
        name, mode = got
        yield pages.ASYNC_NO_TEARDOWN.finding(
            f"{name}={mode} means {_MODES[mode]}; a hang is not torn down",
            evidence=ctx.evidence(name, modes={str(k): v for k, v in _MODES.items()}),
            fix=f"{ctx.fix_set('TORCH_NCCL_ASYNC_ERROR_HANDLING', '1')}"
                + (f"; {ctx.fix_unset(name)}" if name != "TORCH_NCCL_ASYNC_ERROR_HANDLING" else ""),
            key="TORCH_NCCL_ASYNC_ERROR_HANDLING")
    blocking = ctx.torch_value("TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT")
    if blocking is not None and blocking[1] == 1:
        name = blocking[0]
        yield pages.BLOCKING_WAIT.finding(
            f"{name} is on: wait() blocks the host, and PyTorch then turns asynchronous error handling "
            "(and desync debug) off",
            evidence=ctx.evidence(name, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), fix=ctx.fix_unset(name),
            key="TORCH_NCCL_BLOCKING_WAIT")


def watchdog(ctx: EnvContext) -> Iterator[Finding]:
    """E503 (heartbeat timeout) and E504 (monitoring off)."""
    monitoring = ctx.torch_value("TORCH_NCCL_ENABLE_MONITORING")
    if monitoring is not None and monitoring[1] == 0:
        yield pages.MONITORING_OFF.finding(
            "TORCH_NCCL_ENABLE_MONITORING=0: a stuck watchdog is never detected and the job can hang forever",
            evidence=ctx.evidence("TORCH_NCCL_ENABLE_MONITORING"), fix=ctx.fix_unset("TORCH_NCCL_ENABLE_MONITORING"),
            key="TORCH_NCCL_ENABLE_MONITORING")
        return
    heartbeat = ctx.torch_value("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC")
    if heartbeat is None:
        return
    seconds = heartbeat[1]
    if seconds <= 0 or seconds < 60:
        yield pages.HEARTBEAT_TIMEOUT.finding(
            f"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC={seconds}: "
            + ("the monitor kills the process as soon as the watchdog misses a beat" if seconds <= 0
               else f"a watchdog stall of {seconds} s (heavy CUDA work, GIL contention) kills the process"),
            evidence=ctx.evidence("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", default=480),
            fix=ctx.fix_set("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "480"),
            severity=Severity.ERROR if seconds <= 0 else None, key="TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC")


def debugging(ctx: EnvContext) -> Iterator[Finding]:
    """E505 (DETAIL), E506 (desync debug / timing), E507 (Flight Recorder off)."""
    detail = ctx.get("TORCH_DISTRIBUTED_DEBUG")
    if detail is not None and detail.upper() == "DETAIL":
        yield pages.DISTRIBUTED_DETAIL.finding(
            "TORCH_DISTRIBUTED_DEBUG=DETAIL is on: 3 extra gloo round-trips per collective (2.4x per all_reduce "
            "measured here) and DDP on gloo crashed with SIGSEGV here",
            evidence=ctx.evidence("TORCH_DISTRIBUTED_DEBUG", measured="6.4 ms -> 15.5 ms per all_reduce, 4 ranks, torch 2.13"),
            fix=ctx.fix_unset("TORCH_DISTRIBUTED_DEBUG"), key="TORCH_DISTRIBUTED_DEBUG")
    for new, old, what in (("TORCH_NCCL_DESYNC_DEBUG", "NCCL_DESYNC_DEBUG", "a store write per collective"),
                           ("TORCH_NCCL_ENABLE_TIMING", "NCCL_ENABLE_TIMING", "a start event per collective")):
        got = ctx.torch_value(new, old)
        if got is not None and got[1] == 1:
            yield pages.TORCH_DEBUG_LEFT_ON.finding(
                f"{got[0]} is on ({what}): a debugging aid", evidence=ctx.evidence(got[0]),
                fix=ctx.fix_unset(got[0]), key=new)
    buffer = ctx.torch_value("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
    if buffer is not None and buffer[1] == 0:
        yield pages.FLIGHT_RECORDER_OFF.finding(
            f"{buffer[0]}=0 disables the Flight Recorder: a timeout leaves no record of who was where",
            evidence=ctx.evidence(buffer[0]), fix=f"{ctx.fix_unset(buffer[0])} (default 2000 entries)",
            key="TORCH_FR_BUFFER_SIZE")
    dump = ctx.torch_value("TORCH_NCCL_DUMP_ON_TIMEOUT", "TORCH_FR_DUMP_ON_TIMEOUT")
    if dump is not None and dump[1] == 0:
        yield pages.FLIGHT_RECORDER_OFF.finding(
            f"{dump[0]}=0: the Flight Recorder is not dumped when a collective times out",
            evidence=ctx.evidence(dump[0]), fix=ctx.fix_unset(dump[0]), key="TORCH_NCCL_DUMP_ON_TIMEOUT")


_BLANKS = " \t\n\v\f\r"


def gloo_ifname(ctx: EnvContext) -> Iterator[Finding]:
    """E601-E604 for GLOO_SOCKET_IFNAME."""
    name = "GLOO_SOCKET_IFNAME"
    value = ctx.get(name)
    if value is None:
        return
    if len(value) <= 1:
        yield pages.GLOO_SYNTAX.finding(
            f"{name}={value!r} is ignored (one character or less): Gloo falls back to the address of the hostname, "
            "often 127.0.0.1", evidence=ctx.evidence(name), fix=ctx.fix_set(name, "eth0") + " (your interface)",
            key=f"{name}:ignored")
        return
    names = value.split(",")
    cleaned = [n.strip(_BLANKS + "\"'").lstrip("^=") for n in names if n.strip(_BLANKS + "\"'").lstrip("^=")]
    problems = []
    if any(n.startswith(("^", "=")) for n in names):
        problems.append("'^' and '=' are NCCL syntax; Gloo takes exact names only")
    if any(c in value for c in _BLANKS + "\"'"):
        problems.append("blanks and quotes are part of the names")
    if any(not n for n in names):
        problems.append("an empty entry names no interface")
    for problem in problems:
        yield pages.GLOO_SYNTAX.finding(
            f"{name}={value!r}: {problem}", evidence=ctx.evidence(name, problem=problem),
            fix=ctx.fix_set(name, ",".join(cleaned) or "eth0"), key=f"{name}:{problem}")
    if len(cleaned) > 1:
        yield pages.GLOO_SEVERAL.finding(
            f"{name} lists {len(cleaned)} interfaces ({', '.join(cleaned)}): every process must list the same number",
            evidence=ctx.evidence(name, interfaces=cleaned), fix=ctx.fix_set(name, cleaned[0]) + " (one per host)",
            key=f"{name}:several")
    if ctx.interfaces is None:
        return
    existing = [i.name for i in ctx.interfaces]
    for wanted in cleaned:
        interface = ctx.interface(wanted)
        if interface is None:
            prefixed = [n for n in existing if n.startswith(wanted)]
            hint = f"; Gloo needs exact names, did you mean {prefixed[0]}?" if prefixed else ""
            yield pages.GLOO_MISSING.finding(
                f"{name}: no interface {wanted!r} on this host (interfaces: {', '.join(existing) or 'none'}){hint}",
                evidence=ctx.evidence(name, interfaces=existing),
                fix=ctx.fix_set(name, prefixed[0] if prefixed else (existing[0] if existing else "eth0")),
                key=f"{name}:{wanted}")
            continue
        problems = interface_problems(interface)
        if problems:
            yield pages.GLOO_UNUSABLE.finding(
                f"{name}: {wanted} is {', '.join(problems)}", evidence=ctx.evidence(name, interface=wanted, problems=problems),
                fix="bring it up (ip link set ... up) and give it an address, or name another interface",
                key=f"{name}:{wanted}")
        elif (interface.loopback or wanted == "lo") and ctx.multi_node is not False:
            yield pages.GLOO_UNUSABLE.finding(
                f"{name}={wanted} is the loopback: Gloo advertises 127.0.0.1, which other nodes cannot reach",
                evidence=ctx.evidence(name, multi_node=ctx.multi_node), fix=ctx.fix_set(name, "eth0") + " (your interface)",
                severity=Severity.ERROR if ctx.multi_node else Severity.WARNING, key=f"{name}:{wanted}")


_TRANSPORTS = ("TCP", "LINUX", "TCP_TLS", "UV", "APPLE", "WIN32")


def gloo_transport(ctx: EnvContext) -> Iterator[Finding]:
    """E605 (unknown transport) and E606 (TLS without key/certificate)."""
    value = ctx.get("GLOO_DEVICE_TRANSPORT")
    if value is None:
        return
    if value not in _TRANSPORTS:
        fix = ctx.fix_set("GLOO_DEVICE_TRANSPORT", value.strip().upper()) if value.strip().upper() in _TRANSPORTS \
            else ctx.fix_unset("GLOO_DEVICE_TRANSPORT")
        yield pages.GLOO_TRANSPORT.finding(
            f"GLOO_DEVICE_TRANSPORT={value!r} is not a Gloo transport ({', '.join(_TRANSPORTS)}; case-sensitive): "
            "creating a Gloo process group fails", evidence=ctx.evidence("GLOO_DEVICE_TRANSPORT", valid=list(_TRANSPORTS)),
            fix=fix, key="GLOO_DEVICE_TRANSPORT")
    elif value == "TCP_TLS":
        missing = [n for n in ("GLOO_DEVICE_TRANSPORT_TCP_TLS_PKEY", "GLOO_DEVICE_TRANSPORT_TCP_TLS_CERT")
                   if not ctx.get(n)]
        if missing:
            yield pages.GLOO_TLS.finding(
                f"GLOO_DEVICE_TRANSPORT=TCP_TLS without {' and '.join(missing)}",
                evidence=ctx.evidence("GLOO_DEVICE_TRANSPORT", missing=missing),
                fix="; ".join(f"export {n}=/path/to/{'key' if n.endswith('PKEY') else 'cert'}.pem" for n in missing),
                key="GLOO_DEVICE_TRANSPORT")


RULES = (error_handling, watchdog, debugging, gloo_ifname, gloo_transport)
