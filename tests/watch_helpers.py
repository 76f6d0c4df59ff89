"""What the watch tests that run real jobs share."""

from __future__ import annotations

from typing import Any


def watcher_said(events: list[dict[str, Any]], output: str) -> str:
    """A failed watch test's message: every event the watcher wrote and the end of what the ranks printed,
    whole (pytest cuts a long repr to one line, which hid the event's title when a timing test failed)."""
    return "\n".join([f"{e.get('code')} {e.get('status')} at {e.get('at')}: {e.get('title')}"
                      + (f" (readings' ages: {e['detail']['read_age_s']})" if "read_age_s" in (e.get("detail") or {}) else "")
                      for e in events]
                     + ["ranks' output (end):", output[-4000:]])
