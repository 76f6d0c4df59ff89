"""Rules for NCCL interface/HCA selection (E1xx) and the IB/RoCE transport (E2xx). Pure: no I/O.

Host-dependent rules run only when the host facts are known (``interfaces`` / ``ib_ports`` not None);
with unknown facts they stay silent rather than report a healthy host.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from syncdoctor.checks.env_context import EnvContext
from syncdoctor.checks.envvars import lookup
from syncdoctor.checks.values import NcclList, cpp_stoi, ib_timeout_seconds, parse_nccl_list
from syncdoctor.host.types import IbPortFacts, InterfaceFacts
from syncdoctor.kb import Finding, Severity
from syncdoctor.kb.pages import env as pages
from syncdoctor.units import format_duration

__all__ = ["RULES", "interface_problems", "usable_interface"]

IFNAME = "NCCL_SOCKET_IFNAME"
HCA = "NCCL_IB_HCA"
OOB = "NCCL_OOB_NET_IFNAME"
_BLANKS = " \t\n\v\f\r"


def interface_problems(interface: InterfaceFacts, family: str | None = None) -> list[str]:
    """Why NCCL would skip this interface (empty when it is usable)."""
    problems = []
    if interface.up is False or interface.operstate == "down":
        problems.append("down")
    elif interface.running is False:
        problems.append("not running (no carrier)")
    if family == "AF_INET" and not interface.ipv4:
        problems.append("no IPv4 address (NCCL_SOCKET_FAMILY=AF_INET)")
    elif family == "AF_INET6" and not interface.ipv6:
        problems.append("no IPv6 address (NCCL_SOCKET_FAMILY=AF_INET6)")
    elif not interface.has_address:
        problems.append("no address")
    return problems


def usable_interface(interface: InterfaceFacts, family: str | None = None) -> bool:
    return not interface_problems(interface, family)


def _is_loopback(interface: InterfaceFacts) -> bool:
    return interface.loopback or interface.name == "lo"


def _suggest_interface(ctx: EnvContext) -> str | None:
    for interface in ctx.interfaces or ():
        if usable_interface(interface) and not _is_loopback(interface) and interface.kind not in ("docker", "bridge"):
            return interface.name
    return None


def _syntax(ctx: EnvContext, name: str, *, ports: bool) -> Iterator[Finding]:
    """E104: what NCCL's list parser does with blanks, quotes, misplaced ^/= and one-character values."""
    value = ctx.env[name]
    def finding(title: str, fix: str, problem: str, severity: Severity | None = None) -> Finding:
        return pages.LIST_SYNTAX.finding(f"{name}={value!r}: {title}", evidence=ctx.evidence(name, problem=problem),
                                         fix=fix, severity=severity, key=f"{name}:{problem}")
    cleaned = value.strip(_BLANKS + "\"'")
    if name == IFNAME and len(value) <= 1:
        what = "empty" if not value else "one character"
        yield finding(f"a value of {what} is ignored (NCCL requires more than one character) and NCCL chooses the "
                      "interface itself", ctx.fix_set(name, "=eth0") + " (your interface)", "ignored")
        return
    if name == HCA and value == "":
        yield finding("an empty list selects every HCA", ctx.fix_unset(name), "empty", Severity.WARNING)
        return
    if value.startswith("=^"):
        yield finding("'=' comes before '^', so NCCL looks for names starting with a literal '^'; the order is '^='",
                      ctx.fix_set(name, "^=" + value[2:]), "order")
    body = value.lstrip("^").lstrip("=")
    if any(piece.startswith(("^", "=")) for piece in body.split(",")[1:]):
        yield finding("'^' and '=' apply to the whole list and only at its start; inside the list they are part of "
                      "the name", ctx.fix_set(name, value.replace(",^", ",").replace(",=", ",")), "inner-prefix")
    if any(c in value for c in "\"'"):
        yield finding("quotes are part of the value: NCCL looks for names containing quote characters",
                      ctx.fix_set(name, value.replace('"', "").replace("'", "")), "quotes")
    if any(c in value for c in _BLANKS):
        yield finding("blanks are part of the names (NCCL does not trim): no interface is called that",
                      ctx.fix_set(name, "".join(c for c in cleaned if c not in _BLANKS)), "blanks")
    parsed = parse_nccl_list(value)
    if parsed.skipped:
        yield finding(f"empty entries or entries without a name are skipped: {list(parsed.skipped)}",
                      ctx.fix_set(name, ",".join(e.text for e in parsed.entries)), "skipped", Severity.WARNING)
    if not ports and any(e.port_text is not None for e in parsed.entries):
        yield finding("NCCL_SOCKET_IFNAME takes interface names only; the ':port' part is ignored",
                      ctx.fix_set(name, ("^" if parsed.exclude else "") + ("=" if parsed.exact else "")
                                  + ",".join(e.name for e in parsed.entries)), "port", Severity.WARNING)


def _too_broad(ctx: EnvContext, name: str, parsed: NcclList, names: Sequence[str]) -> Iterator[Finding]:
    """E103: a prefix entry that matches several names on this host."""
    if parsed.exact:
        return
    for entry in parsed.entries:
        matched = sorted(n for n in set(names) if n.startswith(entry.name))
        if len(matched) < 2:
            continue
        exact = entry.name if entry.name in matched else matched[0]
        verb = "excludes" if parsed.exclude else "selects"
        rewritten = ("^" if parsed.exclude else "") + "=" + ",".join(
            exact if e is entry else e.text for e in parsed.entries)
        yield pages.PREFIX_TOO_BROAD.finding(
            f"{name}: the prefix {entry.name!r} {verb} {', '.join(matched)} on this host",
            evidence=ctx.evidence(name, entry=entry.name, matches=matched), fix=ctx.fix_set(name, rewritten),
            key=f"{name}:{entry.name}")


def socket_ifname(ctx: EnvContext) -> Iterator[Finding]:
    """E101-E104 for NCCL_SOCKET_IFNAME (and E104 for NCCL_OOB_NET_IFNAME)."""
    if OOB in ctx.env:
        yield from _syntax(ctx, OOB, ports=True)
    if IFNAME not in ctx.env:
        return
    yield from _syntax(ctx, IFNAME, ports=False)
    value = ctx.env[IFNAME]
    if len(value) <= 1 or ctx.interfaces is None:
        return
    parsed = parse_nccl_list(value)
    family = ctx.get("NCCL_SOCKET_FAMILY")
    existing = [i.name for i in ctx.interfaces]
    selected = [i for i in ctx.interfaces if parsed.matches(i.name)]
    suggestion = _suggest_interface(ctx)
    fix = ctx.fix_set(IFNAME, f"={suggestion}") if suggestion else f"{ctx.fix_unset(IFNAME)} (no usable interface found)"
    if not selected:
        what = "excludes every interface" if parsed.exclude else "matches no interface"
        yield pages.IFNAME_NO_MATCH.finding(
            f"{IFNAME}={value} {what} on this host (interfaces: {', '.join(existing) or 'none'})",
            evidence=ctx.evidence(IFNAME, interfaces=existing), fix=fix, key=IFNAME)
        return
    usable = [i for i in selected if usable_interface(i, family)]
    if not usable:
        reasons = {i.name: ", ".join(interface_problems(i, family)) for i in selected}
        yield pages.IFNAME_UNUSABLE.finding(
            f"{IFNAME}={value} matches only interfaces NCCL cannot use: "
            + "; ".join(f"{n} ({r})" for n, r in reasons.items()),
            evidence=ctx.evidence(IFNAME, matched=reasons), fix=fix, key=IFNAME)
    elif all(_is_loopback(i) for i in usable) and ctx.multi_node is not False:
        severity = Severity.ERROR if ctx.multi_node else Severity.WARNING
        yield pages.IFNAME_UNUSABLE.finding(
            f"{IFNAME}={value} selects only the loopback interface, which cannot reach other nodes",
            evidence=ctx.evidence(IFNAME, matched=[i.name for i in usable], multi_node=ctx.multi_node),
            fix=fix, severity=severity, key=IFNAME)
    yield from _too_broad(ctx, IFNAME, parsed, existing)


def _port_label(port: IbPortFacts) -> str:
    return f"{port.device}:{port.port}"


def ib_hca(ctx: EnvContext) -> Iterator[Finding]:
    """E103-E107 for NCCL_IB_HCA."""
    if HCA not in ctx.env:
        return
    yield from _syntax(ctx, HCA, ports=True)
    value = ctx.env[HCA]
    parsed = parse_nccl_list(value)
    yield from _hca_fields(ctx, parsed)
    if ctx.ib_ports is None or value == "":
        return
    devices = sorted({p.device for p in ctx.ib_ports})
    selected = [p for p in ctx.ib_ports if parsed.matches(p.device, p.port)]
    if not parsed.exclude:
        for entry in parsed.entries:
            port = entry.port
            if port is None or port <= 0:
                continue
            owners = [d for d in devices if parsed.entry_matches(entry, d)]
            missing = [d for d in owners if not any(p.device == d and p.port == port for p in ctx.ib_ports)]
            if owners and missing == owners:
                ports = sorted({p.port for p in ctx.ib_ports if p.device in owners})
                yield pages.HCA_PORT_INVALID.finding(
                    f"{HCA}: {', '.join(owners)} has no port {port} (ports: {', '.join(map(str, ports))})",
                    evidence=ctx.evidence(HCA, entry=entry.text, ports=ports),
                    fix=ctx.fix_set(HCA, value.replace(entry.text, f"{entry.name}:{ports[0]}")) if ports else ctx.fix_unset(HCA),
                    key=f"{HCA}:{entry.text}")
    if not selected:
        where = f"devices: {', '.join(devices)}" if devices else "this host has no RDMA devices"
        active = sorted({p.device for p in ctx.ib_ports if p.active})
        yield pages.HCA_NO_MATCH.finding(
            f"{HCA}={value} selects no RDMA port ({where}): NCCL falls back to sockets or fails with NCCL_NET=IB",
            evidence=ctx.evidence(HCA, devices=devices, active=active),
            fix=ctx.fix_set(HCA, "=" + ",".join(active)) if active else ctx.fix_unset(HCA), key=HCA)
        return
    down = [p for p in selected if not p.active]
    if down:
        states = {_port_label(p): p.state_name or (f"state {p.state}" if p.state is not None else "unknown") for p in down}
        active = [_port_label(p) for p in selected if p.active]
        all_down = len(down) == len(selected)
        yield pages.HCA_PORT_DOWN.finding(
            f"{HCA}: {'no selected port is' if all_down else 'some selected ports are not'} ACTIVE ("
            + ", ".join(f"{k} {v}" for k, v in states.items()) + ")",
            evidence=ctx.evidence(HCA, not_active=states, active=active),
            fix=(ctx.fix_set(HCA, "=" + ",".join(active)) if active
                 else "bring the links up (cables, switch, subnet manager; ibstat shows State: Active)"),
            severity=None if all_down else Severity.WARNING, key=HCA)
    yield from _too_broad(ctx, HCA, parsed, devices)


def _hca_fields(ctx: EnvContext, parsed: NcclList) -> Iterator[Finding]:
    """E106 without host facts: ports that are not positive integers, rail/plane fields and versions."""
    new_syntax = ctx.nccl_at_least("2.30.7")
    for entry in parsed.entries:
        key = f"{HCA}:{entry.text}"
        has_rail = entry.rail_text is not None or entry.plane_text is not None
        if entry.port_text == "" and has_rail and new_syntax is not True:
            yield pages.HCA_PORT_INVALID.finding(
                f"{HCA}: {entry.text!r} leaves the port empty to give a rail/plane; NCCL before 2.30.7 reads only "
                f"hca:port and takes port 0, which matches nothing (NCCL {ctx.nccl_version_text})",
                evidence=ctx.evidence(HCA, entry=entry.text, nccl_version=ctx.nccl_version_text),
                fix=ctx.fix_set(HCA, parsed.raw.replace(entry.text, entry.name)),
                severity=Severity.ERROR if new_syntax is False else Severity.WARNING, key=key)
            continue
        if entry.port_text not in (None, ""):
            number = cpp_stoi(entry.port_text).value
            if number is None or number <= 0 or not entry.port_text.isdecimal():
                yield pages.HCA_PORT_INVALID.finding(
                    f"{HCA}: port {entry.port_text!r} in {entry.text!r} is not a positive integer; NCCL reads "
                    f"{number if number is not None else 0}, and ports are numbered from 1",
                    evidence=ctx.evidence(HCA, entry=entry.text),
                    fix=ctx.fix_set(HCA, parsed.raw.replace(entry.text, f"{entry.name}:1")), key=key)
                continue
        if has_rail and new_syntax is False:
            yield pages.HCA_PORT_INVALID.finding(
                f"{HCA}: rail/plane fields in {entry.text!r} need NCCL >= 2.30.7 (this is {ctx.nccl_version_text}); "
                "they are ignored", evidence=ctx.evidence(HCA, entry=entry.text), severity=Severity.WARNING,
                fix=ctx.fix_set(HCA, parsed.raw.replace(entry.text, f"{entry.name}:{entry.port_text}")), key=key)
        for label, text in (("rail", entry.rail_text), ("plane", entry.plane_text)):
            if text not in (None, "") and cpp_stoi(text).value is None:
                yield pages.HCA_PORT_INVALID.finding(
                    f"{HCA}: the {label} {text!r} in {entry.text!r} is not an integer",
                    evidence=ctx.evidence(HCA, entry=entry.text), severity=Severity.WARNING,
                    fix=ctx.fix_set(HCA, parsed.raw.replace(entry.text, f"{entry.name}:{entry.port_text}")),
                    key=f"{key}:{label}")


def psk_and_ib_disable(ctx: EnvContext) -> Iterator[Finding]:
    """E108 (key length, never shown) and E109 (IB disabled but configured)."""
    psk = ctx.get("NCCL_PSK")
    if psk is not None and 0 < len(psk) < 32:
        yield pages.PSK_SHORT.finding(
            f"NCCL_PSK is {len(psk)} characters long; NCCL rejects keys shorter than 32",
            evidence=ctx.evidence("NCCL_PSK", length=len(psk)),
            fix='export NCCL_PSK="$(openssl rand -base64 32)" (the same on every process)', key="NCCL_PSK")
    if ctx.flag("NCCL_IB_DISABLE") is not True:
        return
    net = (ctx.get("NCCL_NET") or "").strip()
    ib_settings = sorted(n for n in ctx.env if n.startswith("NCCL_IB_") and n != "NCCL_IB_DISABLE")
    if net.lower() == "ib":
        yield pages.IB_DISABLED_CONFIGURED.finding(
            "NCCL_NET=IB forces the IB network but NCCL_IB_DISABLE=1 disables it: 'Failed to initialize any NET plugin'",
            evidence=ctx.evidence("NCCL_IB_DISABLE", "NCCL_NET"), severity=Severity.ERROR,
            fix=f"{ctx.fix_unset('NCCL_IB_DISABLE')} (or {ctx.fix_unset('NCCL_NET')} to use sockets)",
            key="NCCL_NET")
    elif ib_settings:
        yield pages.IB_DISABLED_CONFIGURED.finding(
            f"NCCL_IB_DISABLE=1 makes {', '.join(ib_settings)} useless: NCCL uses TCP sockets",
            evidence=ctx.evidence("NCCL_IB_DISABLE", *ib_settings),
            fix=f"{ctx.fix_unset('NCCL_IB_DISABLE')} to use RDMA, or remove the NCCL_IB_* settings", key="NCCL_IB_DISABLE")


# ---------------------------------------------------------------------------------------------- E2xx
_TABLE_HINT = "20 = 4.3 s/try (~30 s), 21 = 8.6 s (~1 min), 22 = 17.2 s (~2 min), 23 = 34.4 s (~4 min)"


def ib_timeouts(ctx: EnvContext) -> Iterator[Finding]:
    """E201 (range, with what mlx5 makes of it), E202 (infinite), E203 (what the pair adds up to), E204."""
    timeout = ctx.effective_int("NCCL_IB_TIMEOUT") if "NCCL_IB_TIMEOUT" in ctx.env else None
    retry = ctx.effective_int("NCCL_IB_RETRY_CNT") if "NCCL_IB_RETRY_CNT" in ctx.env else None
    if timeout is not None and not 0 <= timeout <= 31:
        masked = timeout & 0x1F
        per_try = format_duration(ib_timeout_seconds(masked)) if masked else "infinite"
        yield pages.IB_TIMEOUT_RANGE.finding(
            f"NCCL_IB_TIMEOUT={ctx.shown('NCCL_IB_TIMEOUT')} is outside 0-31: mlx5 keeps the low 5 bits, so it "
            f"becomes {masked} ({per_try} per try); the NCCL docs say >= 32 means an infinite timeout",
            evidence=ctx.evidence("NCCL_IB_TIMEOUT", reads_as=timeout, mlx5_uses=masked, per_try_on_mlx5=per_try,
                                  docs_range="0-31", table=_TABLE_HINT),
            fix=f"{ctx.fix_set('NCCL_IB_TIMEOUT', '22')} (17.2 s per try, ~2 min with NCCL_IB_RETRY_CNT=7)",
            key="NCCL_IB_TIMEOUT")
    elif timeout == 0:
        yield pages.IB_TIMEOUT_INFINITE.finding(
            f"NCCL_IB_TIMEOUT={ctx.shown('NCCL_IB_TIMEOUT')} is read as 0: an infinite IB timeout, so a dead link never errors",
            evidence=ctx.evidence("NCCL_IB_TIMEOUT", reads_as=0, table=_TABLE_HINT),
            fix=f"{ctx.fix_set('NCCL_IB_TIMEOUT', '22')} (17.2 s per try, ~2 min with 7 retries)", key="NCCL_IB_TIMEOUT")
    if retry is not None and not 0 <= retry <= 7:
        masked = retry & 0x7
        yield pages.IB_RETRY_RANGE.finding(
            f"NCCL_IB_RETRY_CNT={ctx.shown('NCCL_IB_RETRY_CNT')} is outside 0-7 (a 3-bit field): mlx5 keeps the low "
            f"3 bits, so it means {masked} retries; rdmavt/qib/hfi1/irdma reject it (ibv_modify_qp: 22 Invalid argument)",
            evidence=ctx.evidence("NCCL_IB_RETRY_CNT", reads_as=retry, mlx5_uses=masked, valid="0-7", default=7),
            fix=f"{ctx.fix_set('NCCL_IB_RETRY_CNT', '7')} (the maximum and the default; raise NCCL_IB_TIMEOUT to wait longer)",
            key="NCCL_IB_RETRY_CNT")
    if timeout is None and retry is None:
        return
    t_ok = timeout is None or 1 <= timeout <= 31
    r_ok = retry is None or 0 <= retry <= 7
    if not (t_ok and r_ok):
        return
    t = timeout if timeout is not None else ctx.default_int(lookup("NCCL_IB_TIMEOUT")) or 20
    r = retry if retry is not None else 7
    per_try_s = ib_timeout_seconds(t)
    names = [n for n in ("NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT") if n in ctx.env]
    if r == 0:
        title = f"NCCL_IB_TIMEOUT={t} gives {format_duration(per_try_s)} per try and NCCL_IB_RETRY_CNT=0 allows no retry"
        severity: Severity | None = Severity.WARNING
    else:
        total = per_try_s * r
        title = (f"NCCL_IB_TIMEOUT={t} gives {format_duration(per_try_s)} per try, ~{format_duration(total)} total "
                 f"with retry count {r}")
        severity = Severity.WARNING if total < 1 else None
    yield pages.IB_TIMEOUT_EFFECTIVE.finding(
        title, evidence=ctx.evidence(*names, per_try_s=round(per_try_s, 6), retries=r,
                                     nccl_version=ctx.nccl_version_text),
        fix="nothing to change if this is the wait you want; otherwise "
            + ctx.fix_set("NCCL_IB_TIMEOUT", "22") + " (~2 min with 7 retries)",
        severity=severity, key="NCCL_IB_TIMEOUT")


def _selected_ports(ctx: EnvContext) -> list[IbPortFacts] | None:
    if ctx.ib_ports is None:
        return None
    value = ctx.get(HCA)
    if not value:
        return list(ctx.ib_ports)
    parsed = parse_nccl_list(value)
    return [p for p in ctx.ib_ports if parsed.matches(p.device, p.port)]


def gid_index(ctx: EnvContext) -> Iterator[Finding]:
    """E205 (forced on NCCL >= 2.21 or unknown version) and E206 (index absent from a RoCE port's table)."""
    if "NCCL_IB_GID_INDEX" not in ctx.env:
        return
    index = ctx.effective_int("NCCL_IB_GID_INDEX")
    if index is None or index == -1:
        return
    ports = _selected_ports(ctx)
    roce = [p for p in ports or () if (p.link_layer or "").lower() == "ethernet"]
    ib_only = ports is not None and ports and all((p.link_layer or "").lower() == "infiniband" for p in ports)
    at_221 = ctx.nccl_at_least("2.21")
    name = "NCCL_IB_GID_INDEX"
    if at_221 is not False:
        if at_221 is None:
            title = (f"{name}={index} is forced and the NCCL version is unknown: on NCCL >= 2.21 it should not be set "
                     "(NCCL picks the RoCE v2 GID); on older NCCL it selects the RoCE GID")
        elif ib_only and ctx.nccl_at_least("2.23"):
            title = f"{name}={index} is ignored: NCCL {ctx.nccl_version_text} does not use it on InfiniBand ports"
        else:
            title = f"{name}={index} is forced on NCCL {ctx.nccl_version_text}, which selects the RoCE v2 GID itself since 2.21"
        auto = {_port_label(p): p.roce_v2_index for p in roce}
        yield pages.GID_INDEX_SET.finding(
            title, evidence=ctx.evidence(name, nccl_version=ctx.nccl_version_text,
                                         **({"auto_selected": auto} if auto else {})),
            fix=ctx.fix_unset(name), key=name)
    for port in roce:
        indices = {entry[0] for entry in port.gids}
        if index not in indices:
            yield pages.GID_INDEX_MISSING.finding(
                f"{name}={index} but {_port_label(port)} has no GID at index {index} "
                f"(entries: {', '.join(map(str, sorted(indices))) or 'none'})",
                evidence=ctx.evidence(name, port=_port_label(port), gid_indices=sorted(indices),
                                      auto_selected=port.roce_v2_index),
                fix=ctx.fix_unset(name) if at_221 is not False or port.roce_v2_index is None
                else ctx.fix_set(name, str(port.roce_v2_index)),
                key=f"{name}:{_port_label(port)}")


RULES = (socket_ifname, ib_hca, psk_and_ib_disable, ib_timeouts, gid_index)
