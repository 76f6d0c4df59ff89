"""Redaction of secrets in environments and text. Pure: no I/O.

Every report that shows environment variables (check, probe, analyze, watch) passes them through
:func:`redact_env`; free text that may contain ``NAME=value`` pairs goes through :func:`redact_text`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["REDACTED", "is_secret_name", "redact_env", "redact_text"]

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


def redact_text(text: str) -> str:
    """Replace the values of secret-looking ``NAME=value`` assignments and bearer tokens in free text."""

    def _sub(match: re.Match[str]) -> str:
        if is_secret_name(match.group("name")):
            return f"{match.group('name')}{match.group('sep')}{REDACTED}"
        return match.group(0)

    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _ASSIGNMENT.sub(_sub, text)
