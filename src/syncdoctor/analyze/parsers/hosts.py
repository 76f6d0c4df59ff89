"""A host's name resolution, pasted next to the logs. Pure: no I/O.

* a line of ``/etc/hosts`` or of ``getent hosts $(hostname)`` that maps a name to a loopback address:
  ``127.0.1.1   node1`` (Debian and Ubuntu map the machine's hostname to 127.0.1.1). Whatever resolves that
  name (gloo, NCCL's bootstrap, a store's ``MASTER_ADDR``) advertises loopback to the other hosts. The usual
  local names (``localhost``, ``ip6-…``) are left out: only a host's own name on loopback is an event.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "parse"]

KEYWORDS = ("127.0.",)

_HOSTS_ENTRY = re.compile(r"^\s*(?P<addr>127\.\d{1,3}\.\d{1,3}\.\d{1,3})\s+(?P<names>[A-Za-z][\w.\-]*(?:[ \t]+[\w.\-#]+)*)\s*$")
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "localhost4", "localhost4.localdomain4", "loopback"}


def parse(line: Line) -> list[Event]:
    named = _HOSTS_ENTRY.match(line.body)
    if not named:
        return []
    names = [n for n in named["names"].split() if n not in _LOCAL_NAMES and not n.startswith(("ip6-", "#"))]
    if not names:
        return []
    return [make_event(Kind.HOSTNAME_LOOPBACK, line, origin=Origin(host=names[0]),
                       data={"addr": named["addr"], "names": names[:4]})]
