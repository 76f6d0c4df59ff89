"""Rules that apply to every variable of the table: parsing, ranges, names. Pure: no I/O.

E401 value-not-a-number, E402 value-out-of-range, E403 integer-not-decimal, E404 value-not-recognised,
E411 unknown-variable, E412 nccl-timeout-not-a-variable, E413 deprecated-variable,
E414 old-and-new-names-disagree, E415 debugging-variable-set, E416 removed-variable.
Variables with a dedicated rule elsewhere (NCCL_IB_TIMEOUT...) are listed in :data:`OWN_RANGE_RULES`
so that their range is reported once, by the rule that knows what the value means.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from syncdoctor.checks.env_context import EnvContext
from syncdoctor.checks.envvars import READER_BEHAVIOUR, Variable, is_known, lookup, nearest_name
from syncdoctor.checks.values import c_strtoll, cpp_stoi, python_int, torch_bool, version_at_least
from syncdoctor.kb import Finding, Severity
from syncdoctor.kb.pages import env as pages

__all__ = ["OWN_RANGE_RULES", "RULES"]

# Ranges (and choices) reported by dedicated rules, not by E402/E404.
OWN_RANGE_RULES = frozenset({
    "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_NTHREADS",
    "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NRINGS", "NCCL_MAX_NRINGS", "NCCL_MIN_CTAS",
    "NCCL_MAX_CTAS", "NCCL_IB_GID_INDEX", "NCCL_DEBUG", "GLOO_DEVICE_TRANSPORT", "MASTER_PORT", "RANK",
    "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
})
_UNKNOWN_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_FR_", "GLOO_")
_NOT_OURS_PREFIXES = ("NCCL_TESTS_",)
_TIMEOUT_NAME = re.compile(r"^(TORCH_)?NCCL_(COLLECTIVE_|COMM_|OP_|WATCHDOG_)?TIMEOUT(_S|_SEC|_SECS|_SECONDS|_MS|_MSEC)?$")
_C_BLANKS = " \t\n\v\f\r"

# (old, new, who wins) for pairs whose values may disagree.
_PAIRS = (
    ("NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS", "min"),
    ("NCCL_MIN_NCHANNELS", "NCCL_MIN_CTAS", "max"),
    ("NCCL_MAX_NRINGS", "NCCL_MAX_NCHANNELS", "new"),
    ("NCCL_MIN_NRINGS", "NCCL_MIN_NCHANNELS", "new"),
)


def _meaning(variable: Variable, number: int) -> str:
    if variable.kind == "bool":
        return f"{number} ({'on' if number else 'off'})"
    return str(number)


def _nccl_int(ctx: EnvContext, variable: Variable, value: str) -> Iterator[Finding]:
    name = variable.name
    default = variable.default_for(ctx.nccl_version) or "its built-in default"
    parsed = c_strtoll(value)
    behaviour = READER_BEHAVIOUR["nccl-int"]
    evidence = ctx.evidence(name, reader=behaviour)
    if value == "":
        yield pages.NOT_A_NUMBER.finding(
            f"{name} is set but empty: NCCL uses the default ({default})", evidence={**evidence, "reads_as": default},
            fix=ctx.fix_unset(name), severity=Severity.WARNING, key=name)
        return
    if parsed.overflow:
        yield pages.NOT_A_NUMBER.finding(
            f"{name}={ctx.shown(name)} is beyond the 64-bit range: NCCL logs 'Invalid value' and uses the default ({default})",
            evidence={**evidence, "reads_as": default}, fix=ctx.fix_unset(name), key=name)
        return
    decimal_digits = re.match(r"[ \t\n\v\f\r]*[+-]?([0-9]+)", value)
    if parsed.base == 8 and decimal_digits and len(decimal_digits.group(1)) > 1:
        decimal = int(decimal_digits.group(1))
        if decimal != abs(parsed.value):
            yield pages.NOT_DECIMAL.finding(
                f"{name}={value} has a leading zero: NCCL reads it as octal, i.e. {_meaning(variable, parsed.value)}, "
                f"not {decimal}",
                evidence={**evidence, "reads_as": parsed.value}, fix=ctx.fix_set(name, str(decimal)), key=name)
            return
    if parsed.base == 16 and parsed.converted:
        yield pages.NOT_DECIMAL.finding(
            f"{name}={value} is hexadecimal: NCCL reads {_meaning(variable, parsed.value)}",
            evidence={**evidence, "reads_as": parsed.value}, fix=ctx.fix_set(name, str(parsed.value)),
            severity=Severity.INFO, key=name)
    if not parsed.converted:
        yield pages.NOT_A_NUMBER.finding(
            f"{name}={value!r} is not a number: NCCL reads it as {_meaning(variable, 0)}",
            evidence={**evidence, "reads_as": 0}, fix=_number_fix(ctx, variable), key=name)
    elif parsed.rest.strip(_C_BLANKS):
        yield pages.NOT_A_NUMBER.finding(
            f"{name}={value!r}: NCCL reads {_meaning(variable, parsed.value)} and ignores {parsed.rest!r}",
            evidence={**evidence, "reads_as": parsed.value}, fix=_number_fix(ctx, variable, parsed.value),
            key=name)
    elif value != value.strip(_C_BLANKS):
        yield _blanks(ctx, variable, value, parsed.value)


def _blanks(ctx: EnvContext, variable: Variable, value: str, number: int) -> Finding:
    return pages.NOT_A_NUMBER.finding(
        f"{variable.name}={value!r} has blanks around the number: {variable.owner} reads {number}, stricter readers fail",
        evidence=ctx.evidence(variable.name, reads_as=number), fix=ctx.fix_set(variable.name, str(number)),
        severity=Severity.WARNING, key=variable.name)


def _number_fix(ctx: EnvContext, variable: Variable, guess: int | None = None) -> str:
    if variable.kind == "bool":
        return f"{ctx.fix_set(variable.name, '1')} (or 0): NCCL switches take 0 or 1"
    if guess is not None:
        return ctx.fix_set(variable.name, str(guess))
    return f"{ctx.fix_unset(variable.name)}, or set a plain decimal integer"


def _torch_int(ctx: EnvContext, variable: Variable, value: str) -> Iterator[Finding]:
    name = variable.name
    if variable.kind == "bool":
        if torch_bool(value) is None:
            yield pages.NOT_A_NUMBER.finding(
                f"{name}={value!r} is not a boolean PyTorch accepts: creating an NCCL process group fails with "
                f"'Invalid value for environment variable: {name}'",
                evidence=ctx.evidence(name, reader=READER_BEHAVIOUR["torch-bool"]),
                fix=f"{ctx.fix_set(name, '1')} (or 0)", key=name)
        return
    result = cpp_stoi(value)
    evidence = ctx.evidence(name, reader=READER_BEHAVIOUR["torch-int"])
    if result.error is not None:
        why = "does not fit in an int" if result.error == "out_of_range" else "does not start with a number"
        yield pages.NOT_A_NUMBER.finding(
            f"{name}={value!r} {why}: creating an NCCL process group fails with 'Invalid value for environment "
            f"variable: {name}'", evidence=evidence, fix=f"{ctx.fix_unset(name)}, or set a decimal integer", key=name)
    elif result.rest.strip(_C_BLANKS):
        yield pages.NOT_A_NUMBER.finding(
            f"{name}={value!r}: PyTorch reads {result.value} and ignores {result.rest!r}",
            evidence={**evidence, "reads_as": result.value}, fix=ctx.fix_set(name, str(result.value)), key=name)
    elif value != value.strip(_C_BLANKS):
        yield _blanks(ctx, variable, value, result.value or 0)


def _python_int(ctx: EnvContext, variable: Variable, value: str) -> Iterator[Finding]:
    if python_int(value) is None:
        yield pages.NOT_A_NUMBER.finding(
            f"{variable.name}={value!r} is not an integer: torch.distributed raises ValueError at init_process_group",
            evidence=ctx.evidence(variable.name, reader=READER_BEHAVIOUR["python-int"]),
            fix=f"{ctx.fix_unset(variable.name)}, or set a decimal integer (normally the launcher sets it)",
            key=variable.name)


def value_rules(ctx: EnvContext) -> Iterator[Finding]:
    """E401/E403: text the reader does not parse as intended."""
    for name, value in ctx.env.items():
        variable = lookup(name)
        if variable is None or not variable.is_integer:
            continue
        if variable.reader == "nccl-int":
            yield from _nccl_int(ctx, variable, value)
        elif variable.reader in ("torch-int", "torch-bool"):
            yield from _torch_int(ctx, variable, value)
        elif variable.reader == "python-int":
            yield from _python_int(ctx, variable, value)


def range_rules(ctx: EnvContext) -> Iterator[Finding]:
    """E402/E404: values outside the documented range or set of values."""
    for name, value in ctx.env.items():
        variable = lookup(name)
        if variable is None or name in OWN_RANGE_RULES:
            continue
        if variable.kind == "choice" and value != "":
            allowed = variable.choices
            seen = value if variable.case_sensitive else value.upper()
            if seen not in allowed:
                yield pages.NOT_RECOGNISED.finding(
                    f"{name}={value!r} is not one of {', '.join(allowed)}"
                    + ("" if variable.case_sensitive else " (any case)") + f": {variable.bad_value or 'it is ignored'}",
                    evidence=ctx.evidence(name, allowed=list(allowed)), fix=ctx.fix_set(name, allowed[0]), key=name)
            continue
        if not variable.is_integer or (variable.minimum is None and variable.maximum is None):
            continue
        number = ctx.effective_int(name)
        if number is None or value.strip() == "":
            continue
        low, high = variable.minimum, variable.maximum
        if (low is None or number >= low) and (high is None or number <= high):
            continue
        span = f"{low}-{high}" if low is not None and high is not None else (f">= {low}" if low is not None else f"<= {high}")
        severity = None
        consequence = variable.bad_value or "it is used without a range check"
        if variable.kind == "bool" and variable.owner == "NCCL":
            if name == "NCCL_P2P_DISABLE":
                consequence = "only exactly 1 disables P2P: this value leaves P2P enabled"
            else:
                consequence = "most NCCL switches treat any non-zero value as on, but write 0 or 1"
                severity = Severity.WARNING
        target = high if high is not None and number > high else low
        yield pages.OUT_OF_RANGE.finding(
            f"{name}={ctx.shown(name)} is outside {span}: {consequence}",
            evidence=ctx.evidence(name, range=span, reads_as=number),
            fix=ctx.fix_set(name, str(target)) if target is not None else ctx.fix_unset(name),
            severity=severity, key=name)


def name_rules(ctx: EnvContext) -> Iterator[Finding]:
    """E411/E412: names nobody reads."""
    for name in ctx.env:
        upper = name.upper()
        if _TIMEOUT_NAME.match(upper):
            yield _timeout_finding(ctx, name)
            continue
        if not upper.startswith(_UNKNOWN_PREFIXES) or upper.startswith(_NOT_OURS_PREFIXES) or is_known(name):
            continue
        near = nearest_name(name)
        if upper.startswith("GLOO_") and near is None:
            continue  # other libraries use GLOO_* too; only flag likely typos
        if near is not None:
            yield pages.UNKNOWN_VARIABLE.finding(
                f"{name} is not a variable {'any' if not name.startswith('GLOO') else 'Gloo/PyTorch'} release reads; "
                f"did you mean {near}?",
                evidence=ctx.evidence(name, nearest=near),
                fix=f"{ctx.fix_set(near, ctx.shown(name))}; {ctx.fix_unset(name)}", key=name)
        else:
            yield pages.UNKNOWN_VARIABLE.finding(
                f"{name} is not a documented NCCL/PyTorch variable: it is ignored unless your release or a plugin reads it",
                evidence=ctx.evidence(name), fix=ctx.fix_unset(name), severity=Severity.WARNING, key=name)


def _timeout_finding(ctx: EnvContext, name: str) -> Finding:
    value = ctx.env[name]
    seconds = python_int(value.strip())
    meant = ""
    if seconds is not None and seconds > 0:
        as_ms = name.upper().endswith(("_MS", "_MSEC"))
        meant = f" ({seconds / 1000 if as_ms else seconds:g} s = {(seconds / 1000 if as_ms else seconds) / 60:g} min)"
    secs = seconds / 1000 if seconds and name.upper().endswith(("_MS", "_MSEC")) else seconds
    code = (f"dist.init_process_group(backend=\"nccl\", timeout=datetime.timedelta(seconds={secs:g}))"
            if secs else "dist.init_process_group(backend=\"nccl\", timeout=datetime.timedelta(minutes=30))")
    return pages.NCCL_TIMEOUT.finding(
        f"{name}={value}{meant} has no effect: neither NCCL nor PyTorch reads it; the collective timeout is "
        "init_process_group(timeout=...), 10 min by default for NCCL",
        evidence=ctx.evidence(name, real_setting="torch.distributed.init_process_group(timeout=datetime.timedelta(...))"),
        fix=f"{code}; {ctx.fix_unset(name)}", key=name)


def _replacement_value(old: str, value: str) -> tuple[str, str]:
    variable = lookup(old)
    new = variable.replaced_by if variable and variable.replaced_by else old
    if old == "NCCL_CHECK_POINTERS":
        return new, "DEBUG_LOCAL"
    return new, value


def lifecycle_rules(ctx: EnvContext) -> Iterator[Finding]:
    """E413/E414/E416: deprecated, conflicting and removed names."""
    for name, value in ctx.env.items():
        variable = lookup(name)
        if variable is None:
            continue
        version = ctx.nccl_version if variable.owner == "NCCL" else ctx.torch_version
        if variable.removed is not None:
            if version_at_least(version, variable.removed) is False:
                continue
            repl = variable.replaced_by
            yield pages.REMOVED.finding(
                f"{name} is no longer read by NCCL (since {variable.removed})"
                + (f": use {repl}" if repl else "") + "; the setting has no effect",
                evidence=ctx.evidence(name, removed_in=variable.removed, nccl_version=ctx.nccl_version_text),
                fix=(f"{ctx.fix_set(repl, _gdr_equivalent(name, value))}; " if repl else "") + ctx.fix_unset(name),
                key=name)
        elif variable.deprecated is not None:
            if variable.deprecated and version_at_least(version, variable.deprecated) is False:
                continue
            new, new_value = _replacement_value(name, value)
            since = f" (since {variable.owner} {variable.deprecated})" if variable.deprecated else ""
            yield pages.DEPRECATED.finding(
                f"{name} is deprecated{since}" + (f": use {new}" if new != name else ""),
                evidence=ctx.evidence(name, replacement=new),
                fix=(f"{ctx.fix_set(new, new_value)}; " if new != name and new not in ctx.env else "") + ctx.fix_unset(name),
                key=name)
    yield from _disagreements(ctx)


def _gdr_equivalent(name: str, value: str) -> str:
    if name == "NCCL_IB_CUDA_SUPPORT":
        return "LOC" if c_strtoll(value).value == 0 else "SYS"
    return value


def _disagreements(ctx: EnvContext) -> Iterator[Finding]:
    pairs = list(_PAIRS)
    for name in ctx.env:
        variable = lookup(name)
        if variable is not None and variable.alias_of:
            pairs.append((name, variable.alias_of, "new"))
    for old, new, rule in pairs:
        if old not in ctx.env or new not in ctx.env:
            continue
        a, b = ctx.effective_int(old), ctx.effective_int(new)
        if a is None or b is None or a == b:
            continue
        winner = {"min": min(a, b), "max": max(a, b)}.get(rule, b)
        how = {"min": "the lower value wins", "max": "the higher value wins"}.get(rule, f"{new} wins")
        yield pages.OLD_NEW_DISAGREE.finding(
            f"{old}={a} and {new}={b} disagree: {how}, so {winner} is used",
            evidence=ctx.evidence(old, new, effective=winner),
            fix=f"{ctx.fix_set(new, str(winner))}; {ctx.fix_unset(old)}", key=f"{old}/{new}")


_DEBUG_QUOTE = ("env.rst: 'should not be used in production nor retained in scripts ... Keeping them set may "
                "result in sub-optimal behavior, crashes, or hangs.'")


def debugging_rules(ctx: EnvContext) -> Iterator[Finding]:
    """E415: env.rst 'Debugging' variables left set (ignoring explicit defaults like NCCL_P2P_DISABLE=0)."""
    for name, value in ctx.env.items():
        variable = lookup(name)
        if variable is None or not variable.debugging_only or variable.removed or value.strip() == "":
            continue
        if variable.kind == "bool" and ctx.effective_int(name) == 0:
            continue
        yield pages.DEBUGGING_ONLY.finding(
            f"{name}={ctx.shown(name)} is a debugging-only setting ({variable.summary})",
            evidence=ctx.evidence(name, docs=_DEBUG_QUOTE), fix=ctx.fix_unset(name), key=name)


RULES = (value_rules, range_rules, name_rules, lifecycle_rules, debugging_rules)
