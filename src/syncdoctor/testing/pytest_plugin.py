"""The syncdoctor pytest plugin, registered through the ``pytest11`` entry point.

Cheap to import: no torch at import time. Multi-rank fixtures live in :mod:`syncdoctor.testing.multirank`
and are imported lazily.
"""

from __future__ import annotations

import pytest

__all__ = ["lab_factory", "pytest_addoption", "pytest_configure"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("syncdoctor", "syncdoctor distributed testing")
    group.addoption(
        "--syncdoctor-timeout",
        type=float,
        default=None,
        help="Default hard timeout in seconds for multi-rank tests",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "distributed(world_size=2, timeout=60): run the test function on world_size real gloo ranks",
    )


# The lab fixture (lab.py imports neither torch nor anything heavy).
from syncdoctor.testing.lab import lab_factory  # noqa: E402
