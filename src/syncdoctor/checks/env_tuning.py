"""Rules for socket threads, buffers, channels and P2P/GDR levels (E3xx) and NCCL debug output (E42x).

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from syncdoctor.checks.env_context import EnvContext
from syncdoctor.checks.values import PATH_LEVELS, nccl_level
from syncdoctor.kb import Finding, Severity
from syncdoctor.kb.pages import env as pages

__all__ = ["RULES"]

_MAX_THREADS, _MAX_SOCKETS, _MAX_CHANNELS = 16, 64, 64


def sockets(ctx: EnvContext) -> Iterator[Finding]:
    """E301: NCCL_SOCKET_NTHREADS <= 16 and NTHREADS x NSOCKS_PERTHREAD <= 64."""
    threads = ctx.effective_int("NCCL_SOCKET_NTHREADS") if "NCCL_SOCKET_NTHREADS" in ctx.env else None
    socks = ctx.effective_int("NCCL_NSOCKS_PERTHREAD") if "NCCL_NSOCKS_PERTHREAD" in ctx.env else None
    fix = f"{ctx.fix_set('NCCL_SOCKET_NTHREADS', '4')}; {ctx.fix_set('NCCL_NSOCKS_PERTHREAD', '4')}"
    if threads is not None and threads > _MAX_THREADS:
        yield pages.SOCKET_THREADS.finding(
            f"NCCL_SOCKET_NTHREADS={threads} is above 16: NCCL warns and uses 16",
            evidence=ctx.evidence("NCCL_SOCKET_NTHREADS", maximum=_MAX_THREADS), fix=fix, key="NCCL_SOCKET_NTHREADS")
    for name, number in (("NCCL_SOCKET_NTHREADS", threads), ("NCCL_NSOCKS_PERTHREAD", socks)):
        if number is not None and number < 1:
            yield pages.SOCKET_THREADS.finding(
                f"{name}={number} is below 1, outside the documented range", evidence=ctx.evidence(name),
                fix=ctx.fix_unset(name), severity=Severity.WARNING, key=f"{name}:low")
    if socks is None or socks < 1:
        return
    used_threads = min(threads, _MAX_THREADS) if threads is not None and threads >= 1 else None
    if used_threads is not None and used_threads * socks > _MAX_SOCKETS:
        yield pages.SOCKET_THREADS.finding(
            f"NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = {used_threads} x {socks} = {used_threads * socks} "
            f"sockets, above 64: NCCL lowers NCCL_NSOCKS_PERTHREAD to {_MAX_SOCKETS // used_threads}",
            evidence=ctx.evidence("NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", product=used_threads * socks,
                                  maximum=_MAX_SOCKETS), fix=fix, key="NCCL_NSOCKS_PERTHREAD")
    elif used_threads is None and socks > _MAX_SOCKETS:
        yield pages.SOCKET_THREADS.finding(
            f"NCCL_NSOCKS_PERTHREAD={socks} alone exceeds the limit of 64 sockets per connection",
            evidence=ctx.evidence("NCCL_NSOCKS_PERTHREAD", maximum=_MAX_SOCKETS), fix=fix, key="NCCL_NSOCKS_PERTHREAD")


def buffers(ctx: EnvContext) -> Iterator[Finding]:
    """E302 (NCCL_BUFFSIZE power of two) and E304 (NCCL_NTHREADS in 64/128/256/512)."""
    size = ctx.effective_int("NCCL_BUFFSIZE") if "NCCL_BUFFSIZE" in ctx.env else None
    if size is not None and size > 0 and size & (size - 1):
        nearest = 1 << (size.bit_length() - 1)
        yield pages.BUFFSIZE_POW2.finding(
            f"NCCL_BUFFSIZE={size} is not a power of two", evidence=ctx.evidence("NCCL_BUFFSIZE", default=4194304),
            fix=f"{ctx.fix_unset('NCCL_BUFFSIZE')} (default 4194304), or {ctx.fix_set('NCCL_BUFFSIZE', str(nearest))}",
            key="NCCL_BUFFSIZE")
    threads = ctx.effective_int("NCCL_NTHREADS") if "NCCL_NTHREADS" in ctx.env else None
    if threads is not None and threads not in (64, 128, 256, 512) and ctx.env["NCCL_NTHREADS"].strip():
        yield pages.NTHREADS_INVALID.finding(
            f"NCCL_NTHREADS={threads} is not one of 64, 128, 256, 512: NCCL replaces it with its own choice",
            evidence=ctx.evidence("NCCL_NTHREADS", allowed=[64, 128, 256, 512]),
            fix=f"{ctx.fix_unset('NCCL_NTHREADS')} (or {ctx.fix_set('NCCL_NTHREADS', '512')})", key="NCCL_NTHREADS")


def _first_set(ctx: EnvContext, *names: str) -> tuple[str, int] | None:
    for name in names:
        if name in ctx.env and ctx.env[name].strip():
            number = ctx.effective_int(name)
            if number is not None:
                return name, number
    return None


def channels(ctx: EnvContext) -> Iterator[Finding]:
    """E303: clamps and contradictions among MIN/MAX_NCHANNELS (NRINGS) and MIN/MAX_CTAS."""
    cta_limit = 64 if ctx.nccl_at_least("2.25") is not False else 32
    maxima = [m for m in (_first_set(ctx, "NCCL_MAX_NCHANNELS", "NCCL_MAX_NRINGS"), _first_set(ctx, "NCCL_MAX_CTAS")) if m]
    minima = [m for m in (_first_set(ctx, "NCCL_MIN_NCHANNELS", "NCCL_MIN_NRINGS"), _first_set(ctx, "NCCL_MIN_CTAS")) if m]
    for name, number in maxima + minima:
        limit = cta_limit if name.endswith("_CTAS") else _MAX_CHANNELS
        if number > limit:
            yield pages.CHANNEL_LIMITS.finding(
                f"{name}={number} is above {limit}: NCCL clamps it to {limit}"
                + (f" (NCCL {ctx.nccl_version_text})" if limit == 32 else ""),
                evidence=ctx.evidence(name, maximum=limit), fix=ctx.fix_set(name, str(limit)), key=name)
    for name, number in maxima:
        if number < 1:
            yield pages.CHANNEL_LIMITS.finding(
                f"{name}={number} is below 1: NCCL uses 1 channel, the slowest configuration",
                evidence=ctx.evidence(name), fix=ctx.fix_unset(name), key=f"{name}:low")
    if maxima and minima:
        high = min(n for _, n in maxima)
        low = max(n for _, n in minima)
        if low > high:
            names = [n for n, _ in maxima + minima]
            yield pages.CHANNEL_LIMITS.finding(
                f"the channel minimum ({low}) is above the maximum ({high}): NCCL cannot honour both",
                evidence=ctx.evidence(*names, effective_min=low, effective_max=high),
                fix=f"{ctx.fix_set('NCCL_MIN_CTAS', str(high))}; {ctx.fix_set('NCCL_MAX_CTAS', str(high))}",
                key="channels")


_WHAT = {"NCCL_P2P_LEVEL": ("P2P", "is disabled entirely (same as NCCL_P2P_DISABLE=1)"),
         "NCCL_NET_GDR_LEVEL": ("GPU Direct RDMA", "is never used: every network transfer is staged in host memory")}


def levels(ctx: EnvContext) -> Iterator[Finding]:
    """E305 (resolves to LOC), E306 (silently ignored), E307 (legacy integer)."""
    for name, (thing, consequence) in _WHAT.items():
        value = ctx.get(name)
        if value is None:
            continue
        reading = nccl_level(value)
        if reading.how == "ignored":
            upper = value.strip().upper()
            fix = ctx.fix_set(name, upper) if upper in PATH_LEVELS else ctx.fix_unset(name)
            yield pages.LEVEL_IGNORED.finding(
                f"{name}={value!r} is not a level NCCL knows (names are case-sensitive: "
                f"{' '.join(PATH_LEVELS)}): it is silently ignored and NCCL chooses by itself",
                evidence=ctx.evidence(name, levels=list(PATH_LEVELS)), fix=fix, key=name)
        elif reading.level == "LOC":
            integer = reading.how == "integer"
            read = f" (strtol reads {value!r} as {reading.integer})" if integer and value.strip() != str(reading.integer) else ""
            yield pages.LEVEL_DISABLES.finding(
                f"{name}={value} means LOC{read}: {thing} {consequence}",
                evidence=ctx.evidence(name, reads_as="LOC", legacy_integer=integer),
                fix=(f"{ctx.fix_unset(name)} (let NCCL choose)"
                     + (f", or {ctx.fix_set(name, 'NVL')} to allow P2P over NVLink only" if name == "NCCL_P2P_LEVEL" else "")),
                severity=None if integer else Severity.WARNING, key=name)
        elif reading.how == "integer":
            yield pages.LEVEL_INTEGER.finding(
                f"{name}={value} is a legacy integer, read as {reading.level}",
                evidence=ctx.evidence(name, reads_as=reading.level),
                fix=ctx.fix_set(name, reading.level or "SYS"), key=name)


_DEBUG_LEVELS = ("VERSION", "WARN", "INFO", "ABORT", "TRACE")
_SUBSYS = frozenset("INIT COLL P2P SHM NET GRAPH TUNING ENV ALLOC ALLOC_HOST CALL PROXY NVLS BOOTSTRAP REG "
                    "PROFILE RAS DESTROY ALL".split())


def debug(ctx: EnvContext) -> Iterator[Finding]:
    """E421-E424: NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE."""
    level = ctx.get("NCCL_DEBUG")
    upper = level.upper() if level is not None else None
    if level is not None and upper not in _DEBUG_LEVELS:
        if upper == "ATTN" and ctx.nccl_at_least("2.32") is not True:
            known = ctx.nccl_at_least("2.32") is False
            yield pages.DEBUG_LEVEL_UNKNOWN.finding(
                "NCCL_DEBUG=ATTN exists only since NCCL 2.32; older versions turn logging off"
                + ("" if known else " (NCCL version unknown)"),
                evidence=ctx.evidence("NCCL_DEBUG", nccl_version=ctx.nccl_version_text),
                fix=f"{ctx.fix_set('NCCL_DEBUG', 'WARN')}; {ctx.fix_set('NCCL_DEBUG_LEVELS', 'ATTN')}", key="NCCL_DEBUG")
        elif upper != "ATTN":
            yield pages.DEBUG_LEVEL_UNKNOWN.finding(
                f"NCCL_DEBUG={level!r} is not a level NCCL knows ({', '.join(_DEBUG_LEVELS)}): NCCL logs nothing",
                evidence=ctx.evidence("NCCL_DEBUG", levels=list(_DEBUG_LEVELS)),
                fix=ctx.fix_set("NCCL_DEBUG", "WARN"), key="NCCL_DEBUG")
    if upper in ("INFO", "TRACE"):
        yield pages.DEBUG_VERBOSE.finding(
            f"NCCL_DEBUG={level} is left on: verbose logs on every rank"
            + (", every call traced" if upper == "TRACE" else ""),
            evidence=ctx.evidence("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS"), fix=ctx.fix_set("NCCL_DEBUG", "WARN"),
            key="NCCL_DEBUG")
    yield from _subsys(ctx)
    yield from _debug_file(ctx, upper)


def _subsys(ctx: EnvContext) -> Iterator[Finding]:
    value = ctx.get("NCCL_DEBUG_SUBSYS")
    if value is None:
        return
    body = value[1:] if value.startswith("^") else value
    items = [item for item in body.split(",") if item]
    unknown = [item for item in items if item.upper() not in _SUBSYS]
    if unknown:
        known = [item for item in items if item.upper() in _SUBSYS]
        yield pages.DEBUG_SUBSYS_UNKNOWN.finding(
            f"NCCL_DEBUG_SUBSYS: {', '.join(repr(u) for u in unknown)} "
            + ("is not a subsystem" if len(unknown) == 1 else "are not subsystems") + " NCCL knows; ignored"
            + (" ('^' is allowed only at the start of the list)" if any(u.startswith("^") for u in unknown) else ""),
            evidence=ctx.evidence("NCCL_DEBUG_SUBSYS", unknown=unknown, subsystems=sorted(_SUBSYS)),
            fix=ctx.fix_set("NCCL_DEBUG_SUBSYS", ("^" if value.startswith("^") else "")
                            + ",".join(known or ["INIT", "BOOTSTRAP", "NET"])),
            key="NCCL_DEBUG_SUBSYS")


def _debug_file(ctx: EnvContext, level: str | None) -> Iterator[Finding]:
    path = ctx.get("NCCL_DEBUG_FILE")
    if path is None or not path:
        return
    name = "NCCL_DEBUG_FILE"
    if "~" in path:
        yield pages.DEBUG_FILE_COLLIDES.finding(
            f"{name}={path}: '~' is not expanded, NCCL opens a path with a literal '~'",
            evidence=ctx.evidence(name), fix=ctx.fix_set(name, path.replace("~", "$HOME")), key=f"{name}:tilde")
    if level is None or level == "VERSION" or level not in _DEBUG_LEVELS:
        yield pages.DEBUG_FILE_COLLIDES.finding(
            f"{name} is set but NCCL_DEBUG is {'unset' if level is None else level}: the file is not used",
            evidence=ctx.evidence(name, "NCCL_DEBUG"), fix=ctx.fix_set("NCCL_DEBUG", "WARN"),
            severity=Severity.INFO, key=f"{name}:unused")
    escaped = re.sub("%%", "", path)
    missing = [tag for tag, needed in (("%p", True), ("%h", ctx.multi_node is not False)) if needed and tag not in escaped]
    if missing and ctx.several_ranks is not False and path not in ("/dev/stdout", "/dev/stderr"):
        who = "the ranks of this job" if ctx.several_ranks else "every process that uses it"
        yield pages.DEBUG_FILE_COLLIDES.finding(
            f"{name}={path} has no {' or '.join(missing)}: {who} open the same file and truncate each other's logs",
            evidence=ctx.evidence(name, missing=missing, several_ranks=ctx.several_ranks),
            fix=ctx.fix_set(name, f"{path}.%h.%p"), key=name)


RULES = (sockets, buffers, channels, levels, debug)
