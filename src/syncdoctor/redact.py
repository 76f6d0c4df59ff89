"""Redaction of secrets in environments and text. No I/O.

Secrets are redacted where text leaves the program, not at each place that formats it: the command line's
terminal output goes through :class:`RedactingFile`, the HTML pages and the watcher's event files and log
lines through :func:`redact_text` / :func:`redact_json` when they are written. Two things are redacted:

* the values of secret-looking ``NAME=value`` assignments and bearer tokens in free text;
* every value that a secret-named variable holds (``MY_TOKEN=…``) wherever it appears, also when it was
  copied into another variable (``NCCL_SOCKET_IFNAME=$MY_TOKEN``) or a log line: :func:`remember_secrets`
  learns them from the process environment (and from ``--env-file`` inputs).

Reports that show environment variables also pass them through :func:`redact_env`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import IO, Any

__all__ = [
    "REDACTED",
    "RedactingFile",
    "forget_secrets",
    "is_secret_name",
    "redact_env",
    "redact_json",
    "redact_text",
    "remember_secrets",
]

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|PSK|API_?KEY|ACCESS_?KEY|_KEY$|^KEY$|AUTH|COOKIE|SESSION)",
    re.IGNORECASE,
)
# Names that contain a secret-looking word but are harmless and useful to show.
_HARMLESS = frozenset({"GLOO_DEVICE_TRANSPORT_TCP_TLS_PKEY_PATH"})
_ASSIGNMENT = re.compile(r"(?P<name>\b[A-Za-z_][A-Za-z0-9_]*)(?P<sep>\s*[=:]\s*)(?P<value>\"[^\"]*\"|'[^']*'|\S+)")
_BEARER = re.compile(r"(?i)\b(bearer|token)\s+[A-Za-z0-9._\-]{12,}")


def is_secret_name(name: str) -> bool:
    """True for variable names that usually hold secrets (tokens, keys, passwords...)."""
    return name not in _HARMLESS and bool(_SECRET_NAME.search(name))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` with the values of secret-looking names replaced by ``<redacted>``."""
    return {name: (REDACTED if is_secret_name(name) else value) for name, value in env.items()}


_MIN_SECRET = 4  # shorter values ("x", "1") are redacted only as whole values: in NAME=value and quotes
_lock = threading.Lock()
_values: tuple[str, ...] = ()  # the secret values known to this process, longest first
_short: frozenset[str] = frozenset()  # the shorter ones
_short_quoted: re.Pattern[str] | None = None


def remember_secrets(env: Mapping[str, str] | Iterable[tuple[str, str]]) -> None:
    """Learn the values of the secret-named variables of ``env``: from now on they are redacted wherever
    they appear in output."""
    global _values, _short, _short_quoted
    items = env.items() if isinstance(env, Mapping) else env
    secret = {str(value).strip() for name, value in items if is_secret_name(str(name))} - {""}
    fresh = {value for value in secret if len(value) >= _MIN_SECRET}
    short = secret - fresh
    if fresh - set(_values) or short - _short:
        with _lock:
            _values = tuple(sorted(set(_values) | fresh, key=len, reverse=True))
            _short = _short | short
            _short_quoted = re.compile("(['\"])(" + "|".join(re.escape(v) for v in sorted(_short)) + ")\\1") \
                if _short else None


def forget_secrets() -> None:
    """Forget every learned value (tests)."""
    global _values, _short, _short_quoted
    with _lock:
        _values, _short, _short_quoted = (), frozenset(), None


def redact_text(text: str, marker: str = REDACTED) -> str:
    """Replace the values of secret-looking ``NAME=value`` assignments, bearer tokens and every learned secret
    value in free text. ``marker`` replaces them (HTML writers pass an escaped one)."""

    def _sub(match: re.Match[str]) -> str:
        value = match.group("value")
        bare = value.rstrip(",.;:)")
        if is_secret_name(match.group("name")) or bare.strip("'\"") in _short:
            return f"{match.group('name')}{match.group('sep')}{marker}{value[len(bare):]}"  # keep the punctuation
        return match.group(0)

    for value in _values:
        if value in text:
            text = text.replace(value, marker)
    if _short_quoted is not None:
        text = _short_quoted.sub(lambda m: f"{m.group(1)}{marker}{m.group(1)}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {marker}", text)
    return _ASSIGNMENT.sub(_sub, text)


def redact_json(data: Any) -> Any:
    """A copy of a JSON-like value with every string redacted (keys too): safe to serialise."""
    if isinstance(data, str):
        return redact_text(data)
    if isinstance(data, Mapping):
        return {redact_text(str(k)) if isinstance(k, str) else k: redact_json(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_json(v) for v in data]
    return data


class RedactingFile:
    """A text stream that redacts everything written to it before passing it on (the terminal's last step).

    Everything else (``isatty``, ``fileno``, ``encoding``, ``flush``…) is the wrapped stream's, so a terminal
    is still detected as one.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact_text(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
