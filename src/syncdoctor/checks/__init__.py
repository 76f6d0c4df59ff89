"""Preflight checks of the environment: the variable table, validation rules and env/config file readers.

- :mod:`~syncdoctor.checks.envvars`: the table of NCCL / PyTorch / Gloo / launcher variables (pure).
- :mod:`~syncdoctor.checks.values`: how each consumer parses a value (strtoll, std::stoi...) (pure).
- :mod:`~syncdoctor.checks.env_rules`: :func:`validate_env`, every E-code rule (pure).
- :mod:`~syncdoctor.checks.envfile`: ``--env-file`` parsing (pure) and the NCCL config files with NCCL's
  precedence (reads files under the ``home``/``etc`` paths it is given).
- :mod:`~syncdoctor.checks.predict`: the interface NCCL's bootstrap and Gloo will advertise (pure).
- :mod:`~syncdoctor.checks.host_rules`: every H/N-code rule on the host's facts (pure).
- :mod:`~syncdoctor.checks.preflight`: the host half of ``check``: facts, predictions, route, reach, host
  findings (I/O through :mod:`syncdoctor.host`).
- :mod:`~syncdoctor.checks.pipeline`: ``check``'s whole pipeline, inputs -> findings, shared by
  ``syncdoctor check``, the probe's node checks and the start-up guard.
"""

from __future__ import annotations

from syncdoctor.checks.env_rules import skipped_checks, validate_env
from syncdoctor.checks.envfile import NcclConf, load_nccl_conf, parse_env_file, read_nccl_conf
from syncdoctor.checks.envvars import VARIABLES, Variable, lookup

__all__ = [
    "VARIABLES",
    "NcclConf",
    "Variable",
    "load_nccl_conf",
    "lookup",
    "parse_env_file",
    "read_nccl_conf",
    "skipped_checks",
    "validate_env",
]
