"""What every environment rule reads: the environment, host facts, versions, and helpers. Pure: no I/O.

:class:`EnvContext` answers the questions rules keep asking: the value NCCL/PyTorch will *actually*
use for a variable (:meth:`EnvContext.effective_int`), whether the job spans several nodes, whether
the NCCL version is at least X (``None`` when unknown: rules must then say so rather than guess), the
evidence to attach (value, redacted when secret, and where it came from), and the fix line to print
(``export K=V`` for the environment, an edit of the file it came from otherwise).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from syncdoctor.checks.envvars import Variable, lookup
from syncdoctor.checks.values import (
    c_strtoll,
    cpp_stoi,
    is_loopback_address,
    parse_version,
    python_int,
    torch_bool,
    version_at_least,
)
from syncdoctor.host.types import IbPortFacts, InterfaceFacts
from syncdoctor.redact import REDACTED, is_secret_name

__all__ = ["EnvContext"]


@dataclass(frozen=True)
class EnvContext:
    """The inputs of the environment rules.

    Attributes:
        env: the variables to validate (name -> value).
        interfaces / ib_ports: host facts; None means unknown, and host-dependent rules are skipped.
        nccl_version / torch_version: parsed versions, None when unknown.
        sources: where each variable came from ("environment", "/etc/nccl.conf", "env-file:job.sh").
    """

    env: Mapping[str, str]
    interfaces: tuple[InterfaceFacts, ...] | None = None
    ib_ports: tuple[IbPortFacts, ...] | None = None
    nccl_version: tuple[int, int, int] | None = None
    torch_version: tuple[int, int, int] | None = None
    sources: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        env: Mapping[str, str],
        *,
        interfaces: Sequence[InterfaceFacts] | None = None,
        ib_ports: Sequence[IbPortFacts] | None = None,
        nccl_version: str | None = None,
        torch_version: str | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> EnvContext:
        return cls(
            env={str(k): str(v) for k, v in env.items()},
            interfaces=None if interfaces is None else tuple(interfaces),
            ib_ports=None if ib_ports is None else tuple(ib_ports),
            nccl_version=parse_version(nccl_version),
            torch_version=parse_version(torch_version),
            sources=dict(sources or {}),
        )

    # -- values -----------------------------------------------------------------------------------------
    def get(self, name: str) -> str | None:
        return self.env.get(name)

    def shown(self, name: str) -> str:
        """The value as it may appear in output (secrets redacted)."""
        value = self.env.get(name, "")
        variable = lookup(name)
        if is_secret_name(name) or (variable is not None and variable.secret):
            return REDACTED
        return value

    def effective_int(self, name: str) -> int | None:
        """The integer the reader ends up using; None when unset or when the reader would raise.

        NCCL: strtoll base 0, empty or overflow -> the default. PyTorch: std::stoi / the boolean reader
        (0/1). Launcher: int(). Variables not in the table are read like NCCL parameters.
        """
        value = self.env.get(name)
        if value is None:
            return None
        variable = lookup(name)
        reader = variable.reader if variable is not None else "nccl-int"
        if reader == "torch-int":
            return cpp_stoi(value).value
        if reader == "torch-bool":
            flag = torch_bool(value)
            return None if flag is None else int(flag)
        if reader == "python-int":
            return python_int(value)
        parsed = c_strtoll(value)
        if value == "" or parsed.overflow:
            return self.default_int(variable)
        return parsed.value

    def default_int(self, variable: Variable | None) -> int | None:
        if variable is None:
            return None
        default = variable.default_for(self.nccl_version if variable.owner == "NCCL" else self.torch_version)
        if default is None:
            return None
        parsed = c_strtoll(default)
        return parsed.value if parsed.converted and not parsed.rest.strip() else None

    def flag(self, name: str) -> bool | None:
        """A switch as its reader sees it: True/False, None when unset or unreadable."""
        number = self.effective_int(name)
        return None if number is None else number != 0

    def torch_value(self, new: str, old: str | None = None) -> tuple[str, int] | None:
        """PyTorch getCvar* semantics for a name and its deprecated alias: the new name wins."""
        for name in (new, old):
            if name and name in self.env:
                number = self.effective_int(name)
                return (name, number) if number is not None else None
        return None

    # -- versions and topology --------------------------------------------------------------------------
    def nccl_at_least(self, version: str) -> bool | None:
        return version_at_least(self.nccl_version, version)

    @property
    def nccl_version_text(self) -> str:
        return ".".join(str(p) for p in self.nccl_version) if self.nccl_version else "unknown"

    @property
    def multi_node(self) -> bool | None:
        """True when the job spans several nodes, False when it cannot, None when nothing says.

        The launcher variables decide first; otherwise a master on another host (``MASTER_ADDR`` not loopback
        nor localhost) means several nodes, and a loopback master means one: the same reading as the host
        rules' (:func:`syncdoctor.checks.host_rules.is_multi_node`), so both kinds of finding agree.
        """
        world = self._launcher_int("WORLD_SIZE")
        local = self._launcher_int("LOCAL_WORLD_SIZE")
        if world is not None and local is not None and local > 0:
            return world > local
        for name in ("GROUP_WORLD_SIZE", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
            nodes = self._launcher_int(name)
            if nodes is not None:
                return nodes > 1
        master = (self.env.get("MASTER_ADDR") or "").strip().lower()
        if master and "://" not in master and " " not in master:
            return not (master in ("localhost", "localhost.localdomain") or is_loopback_address(master))
        return None

    @property
    def several_ranks(self) -> bool | None:
        world = self._launcher_int("WORLD_SIZE")
        local = self._launcher_int("LOCAL_WORLD_SIZE")
        if world is None and local is None:
            return None
        return (world or 1) > 1 or (local or 1) > 1

    def _launcher_int(self, name: str) -> int | None:
        value = self.env.get(name)
        return None if value is None else python_int(value)

    def interface(self, name: str) -> InterfaceFacts | None:
        if self.interfaces is None:
            return None
        return next((i for i in self.interfaces if i.name == name), None)

    # -- evidence and fixes -----------------------------------------------------------------------------
    def evidence(self, *names: str, **extra: Any) -> dict[str, Any]:
        """``{NAME: value, ..., "source": where}`` for the given variables, plus ``extra``."""
        data: dict[str, Any] = {}
        for name in names:
            if name in self.env:
                data[name] = self.shown(name)
        sources = {name: self.sources[name] for name in names if name in self.env and name in self.sources}
        if len(sources) == 1 and len(names) == 1:
            data["source"] = next(iter(sources.values()))
        elif sources:
            data["sources"] = sources
        data.update(extra)
        return data

    def fix_set(self, name: str, value: str) -> str:
        """The line that sets ``name``: an export, or an edit of the file the variable came from."""
        line = f"{name}={shlex.quote(value)}"
        where = self._file_source(name)
        if where is None:
            return f"export {line}"
        if where.startswith("env-file:"):
            return f"in {where[len('env-file:'):]}: export {line}"
        return f"in {where}: {name}={value} (or export {line}, which overrides the file)"

    def fix_unset(self, name: str) -> str:
        where = self._file_source(name)
        if where is None:
            return f"unset {name}"
        if where.startswith("env-file:"):
            return f"in {where[len('env-file:'):]}: remove the {name} assignment"
        return f"remove the {name} line from {where}"

    def _file_source(self, name: str) -> str | None:
        source = self.sources.get(name)
        if source is None or source == "environment":
            return None
        return source
