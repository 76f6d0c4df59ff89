"""The exception tree of syncdoctor. Pure: no I/O.

Library code raises these; only ``syncdoctor.cli`` turns them into messages and exit codes::

    SyncdoctorError
     ├── UsageError          bad arguments or configuration given by the user (exit code 2)
     ├── InputError          an input file or dump that cannot be read or is not what it claims
     ├── EnvironmentNotSupported
     │                       the operation needs something this host lacks (root, iproute2, torch)
     ├── StoreError          the job's c10d store cannot be reached or answered wrongly
     └── ProbeError          a distributed measurement failed (a stage timed out, a peer vanished)
"""

from __future__ import annotations

__all__ = [
    "EnvironmentNotSupported",
    "InputError",
    "ProbeError",
    "StoreError",
    "SyncdoctorError",
    "UsageError",
]


class SyncdoctorError(Exception):
    """Base of every error syncdoctor raises on purpose."""


class UsageError(SyncdoctorError):
    """The user asked for something malformed (an option, a setting, a file that does not exist)."""


class InputError(SyncdoctorError):
    """An input (log, dump, report, env file) cannot be read or has the wrong format."""


class EnvironmentNotSupported(SyncdoctorError):
    """This host lacks what the operation needs (root, iproute2, torch, a free port...)."""


class StoreError(SyncdoctorError):
    """The job's c10d store cannot be reached, or it answered something unexpected."""


class ProbeError(SyncdoctorError):
    """A distributed measurement failed: a stage timed out or a peer disappeared."""
