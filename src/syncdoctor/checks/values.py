"""How NCCL, PyTorch, Gloo and the launcher read a variable's text. Pure: no I/O.

Each reader here reproduces the consumer's own parsing, so a rule can say what the driver will
*actually* do with a value, not what the user meant:

- :func:`c_strtoll`: NCCL's ``NCCL_PARAM`` integers (``strtoll(str, NULL, 0)``: base auto-detected,
  ``0x`` is hex, a leading ``0`` is octal, parsing stops at the first bad character, no range check).
- :func:`cpp_stoi`: PyTorch's ``getCvarInt`` (``std::stoi``, base 10, throws when nothing parses).
- :func:`torch_bool`: PyTorch's ``getCvarBool`` (``y/yes/1/t/true`` and ``n/no/0/f/false``, any case).
- :func:`python_int`: the launcher side (``int(os.environ[...])``).
- :func:`nccl_level`: ``ncclGetLevel`` for NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL (names, legacy integers).
- :func:`parse_nccl_list`: the ``[^][=]a,b:port`` syntax of NCCL_SOCKET_IFNAME and NCCL_IB_HCA.
- :func:`parse_version` / :func:`ib_timeout_seconds` / :func:`env_int`: small helpers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "LEGACY_LEVELS",
    "PATH_LEVELS",
    "CInt",
    "LevelReading",
    "ListEntry",
    "NcclList",
    "StoiResult",
    "c_strtoll",
    "cpp_stoi",
    "env_int",
    "ib_timeout_seconds",
    "is_loopback_address",
    "nccl_level",
    "parse_nccl_list",
    "parse_version",
    "python_int",
    "torch_bool",
    "version_at_least",
]

_C_SPACE = " \t\n\v\f\r"
_DEC = "0123456789"
_OCT = "01234567"
_HEX = "0123456789abcdefABCDEF"
LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)


@dataclass(frozen=True)
class CInt:
    """The result of C ``strtoll(text, &end, 0)``.

    Attributes:
        value: what strtoll returns: 0 when nothing was converted, clamped on overflow.
        converted: at least one digit was read.
        number: the characters read as the number (after leading blanks).
        rest: what follows the number (the whole text when nothing was converted).
        base: 8, 10 or 16 as detected from the prefix.
        overflow: out of the 64-bit range (``errno = ERANGE``; NCCL then uses the default).
    """

    value: int
    converted: bool
    number: str
    rest: str
    base: int
    overflow: bool = False


def c_strtoll(text: str) -> CInt:
    """Reproduce ``strtoll(text, &end, 0)`` exactly (ASCII digits, C white space, sign, 0x/0 prefixes)."""
    i, n = 0, len(text)
    while i < n and text[i] in _C_SPACE:
        i += 1
    start = i
    negative = False
    if i < n and text[i] in "+-":
        negative = text[i] == "-"
        i += 1
    base = 10
    if i < n and text[i] == "0":
        if i + 2 < n and text[i + 1] in "xX" and text[i + 2] in _HEX:
            base = 16
            i += 2
        else:
            base = 8
    digits_at = i
    valid = _HEX if base == 16 else _OCT if base == 8 else _DEC
    while i < n and text[i] in valid:
        i += 1
    digits = text[digits_at:i]
    if not digits:
        return CInt(0, False, "", text, base)
    value = int(digits, base)
    value = -value if negative else value
    overflow = value > LLONG_MAX or value < LLONG_MIN
    if overflow:
        value = LLONG_MAX if value > 0 else LLONG_MIN
    return CInt(value, True, text[start:i], text[i:], base, overflow)


@dataclass(frozen=True)
class StoiResult:
    """``std::stoi`` (and therefore PyTorch's ``getCvarInt``): value, or the error it throws."""

    value: int | None
    error: str | None  # None, "invalid_argument" (nothing parsed) or "out_of_range"
    rest: str = ""


def cpp_stoi(text: str) -> StoiResult:
    """Reproduce ``std::stoi``: base 10, leading blanks skipped, trailing garbage ignored, int range."""
    i, n = 0, len(text)
    while i < n and text[i] in _C_SPACE:
        i += 1
    negative = False
    if i < n and text[i] in "+-":
        negative = text[i] == "-"
        i += 1
    digits_at = i
    while i < n and text[i] in _DEC:
        i += 1
    digits = text[digits_at:i]
    if not digits:
        return StoiResult(None, "invalid_argument", text)
    value = -int(digits) if negative else int(digits)
    if value > INT_MAX or value < INT_MIN:
        return StoiResult(None, "out_of_range", text[i:])
    return StoiResult(value, None, text[i:])


def python_int(text: str) -> int | None:
    """``int(text)`` as the launcher and ``torch.distributed`` do; None where it raises ValueError."""
    try:
        return int(text)
    except (ValueError, OverflowError):
        return None


def env_int(env: Mapping[str, str], name: str) -> int | None:
    """``env[name]`` read by :func:`python_int`; None when the variable is unset or not an integer."""
    value = env.get(name)
    return None if value is None else python_int(value)


_TRUE = frozenset({"y", "yes", "1", "t", "true"})
_FALSE = frozenset({"n", "no", "0", "f", "false"})


def torch_bool(text: str) -> bool | None:
    """PyTorch ``getCvarBool``: True/False, or None for anything else (PyTorch then raises)."""
    lowered = "".join(c.lower() if c.isascii() else c for c in text)
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return None


# ncclGetLevel: exact, case-sensitive names (topoPathTypeStr up to SYS), then legacy integers.
PATH_LEVELS = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS")
LEGACY_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")


@dataclass(frozen=True)
class LevelReading:
    """What ``ncclGetLevel`` makes of a value: the level name, and how it got there.

    ``how`` is ``name`` (an exact level name), ``integer`` (legacy integer form) or ``ignored``
    (not recognised: NCCL silently keeps its automatic choice).
    """

    level: str | None
    how: str
    integer: int | None = None


def nccl_level(text: str) -> LevelReading:
    if text in PATH_LEVELS:
        return LevelReading(text, "name")
    if text[:1] in tuple(_DEC):
        parsed = c_strtoll(text).value
        old = min(parsed, len(LEGACY_LEVELS) - 1) if parsed >= 0 else len(LEGACY_LEVELS) - 1
        return LevelReading(LEGACY_LEVELS[old], "integer", parsed)
    return LevelReading(None, "ignored")


@dataclass(frozen=True)
class ListEntry:
    """One entry of an NCCL interface/HCA list: ``name[:port[:rail[:plane]]]``.

    ``port_text`` etc. are the raw fields (None when absent). ``port`` is what NCCL uses: None means
    "all ports" (field absent, or empty in the >= 2.30.7 syntax).
    """

    text: str
    name: str
    port_text: str | None = None
    rail_text: str | None = None
    plane_text: str | None = None

    @property
    def port(self) -> int | None:
        if self.port_text is None or self.port_text == "":
            return None
        parsed = cpp_stoi(self.port_text).value  # atoi(): 0 when nothing parses
        return 0 if parsed is None else parsed


@dataclass(frozen=True)
class NcclList:
    """A parsed NCCL prefix list (``^`` exclude, then ``=`` exact, comma-separated entries).

    ``skipped`` holds raw pieces NCCL drops (empty entries, entries starting with ``:``).
    """

    raw: str
    exclude: bool
    exact: bool
    entries: tuple[ListEntry, ...]
    skipped: tuple[str, ...] = ()

    def matches(self, name: str, port: int | None = None) -> bool:
        """True if NCCL would select ``name`` (and ``port``) under this list."""
        hit = any(self._entry_matches(entry, name, port) for entry in self.entries)
        return not hit if self.exclude else hit

    def _entry_matches(self, entry: ListEntry, name: str, port: int | None) -> bool:
        if self.exact:
            if name != entry.name:
                return False
        elif not name.startswith(entry.name):
            return False
        return port is None or entry.port is None or entry.port == port

    def entry_matches(self, entry: ListEntry, name: str) -> bool:
        return name == entry.name if self.exact else name.startswith(entry.name)


def parse_nccl_list(text: str) -> NcclList:
    """Parse ``[^][=]entry,entry,...`` the way NCCL's ``parseStringList`` and its callers do."""
    rest = text
    exclude = rest.startswith("^")
    if exclude:
        rest = rest[1:]
    exact = rest.startswith("=")
    if exact:
        rest = rest[1:]
    entries: list[ListEntry] = []
    skipped: list[str] = []
    for piece in rest.split(","):
        name, sep, fields = piece.partition(":")
        if not name:
            skipped.append(piece)
            continue
        if not sep:
            entries.append(ListEntry(piece, name))
            continue
        parts = fields.split(":")
        port = parts[0]
        rail = parts[1] if len(parts) > 1 else None
        plane = parts[2] if len(parts) > 2 else None
        entries.append(ListEntry(piece, name, port, rail, plane))
    return NcclList(text, exclude, exact, tuple(entries), tuple(skipped))


_VERSION_RE = re.compile(r"(\d+)(?:\s*[.,]\s*(\d+))?(?:\s*[.,]\s*(\d+))?")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """``"2.21.5"``, ``"2.21.5+cuda12.4"``, ``"(2, 21, 5)"``, ``"2.13.0+cpu"`` -> (2, 21, 5); None if unreadable."""
    if not text:
        return None
    match = _VERSION_RE.search(str(text))
    if not match:
        return None
    major, minor, patch = (int(g) if g else 0 for g in match.groups())
    return (major, minor, patch)


def version_at_least(version: tuple[int, int, int] | None, wanted: str) -> bool | None:
    """True/False when ``version`` is known, None when it is not (never guess)."""
    if version is None:
        return None
    target = parse_version(wanted)
    return target is not None and version >= target


def ib_timeout_seconds(exponent: int) -> float:
    """The IB Local Ack Timeout for an exponent: 4.096 µs x 2^exponent (IB spec vol. 1, 12.7.34)."""
    return 4.096e-6 * (2**exponent)


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def is_loopback_address(address: str) -> bool:
    """True for loopback names/addresses and the wildcard (which connects to the local host)."""
    import ipaddress

    text = address.strip().strip("[]").lower()
    if text in _LOOPBACK_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified
