"""The syncdoctor pytest plugin, registered through the ``pytest11`` entry point (installing syncdoctor
makes it available).

* ``@pytest.mark.distributed(world_size=2, timeout=60)``: the test function runs on ``world_size`` real
  processes joined in a gloo process group on 127.0.0.1 (``torch.distributed`` is initialised inside
  it); the test fails with the failing rank's traceback, or, when ranks hang, their stacks and the
  collective they wait in, and never outlives its timeout (counted once every rank has started and joined
  the process group; ``startup_timeout``, default 120 s, bounds that start): every rank process is
  killed and reaped.
  Fixture values the test requests (``tmp_path``...) are pickled and passed to every rank.
* the ``multirank`` fixture: ``multirank.run(fn, world_size=2, args=...)`` for tests that want each
  rank's return value (see :mod:`syncdoctor.testing.multirank`).
* options in their own group: ``--syncdoctor-timeout`` (default hard timeout of multi-rank tests,
  also the ``syncdoctor_timeout`` ini value; 60 s otherwise).

Cheap to import: no torch at import time; the runner is imported when a multi-rank test runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

__all__ = [
    "MultiRankFixture",
    "lab_factory",
    "multirank",
    "pytest_addoption",
    "pytest_configure",
    "pytest_pyfunc_call",
]

_DEFAULT_TIMEOUT_S = 60.0
_MARKER_KEYS = {"world_size", "timeout", "startup_timeout", "backend", "env", "grace_s"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("syncdoctor", "syncdoctor distributed testing")
    group.addoption(
        "--syncdoctor-timeout",
        type=float,
        default=None,
        help="Default hard timeout in seconds for multi-rank tests (a marker's timeout= wins)",
    )
    parser.addini("syncdoctor_timeout", "Default hard timeout in seconds for multi-rank tests", default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "distributed(world_size=2, timeout=60, backend='gloo', env=None): run the test function on "
        "world_size real ranks (gloo on 127.0.0.1), killing every rank after timeout seconds",
    )


def _default_timeout(config: pytest.Config) -> float:
    value = config.getoption("--syncdoctor-timeout", default=None)
    if value is None:
        value = config.getini("syncdoctor_timeout") or None
    try:
        return float(value) if value is not None else _DEFAULT_TIMEOUT_S
    except ValueError:
        raise pytest.UsageError(f"syncdoctor_timeout must be a number of seconds, got {value!r}") from None


def _marker_settings(item: pytest.Function, marker: pytest.Mark) -> dict[str, Any]:
    settings: dict[str, Any] = dict(marker.kwargs)
    unknown = sorted(set(settings) - _MARKER_KEYS)
    if unknown:
        pytest.fail(f"@pytest.mark.distributed: unknown argument(s) {', '.join(unknown)}", pytrace=False)
    if marker.args:
        settings.setdefault("world_size", marker.args[0])
    world_size = settings.get("world_size", 2)
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        pytest.fail(f"@pytest.mark.distributed: world_size must be a positive integer, got {world_size!r}",
                    pytrace=False)
    settings["world_size"] = world_size
    settings["timeout"] = float(settings.get("timeout") or _default_timeout(item.config))
    return settings


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run tests marked ``distributed`` on real ranks instead of in this process."""
    marker = pyfuncitem.get_closest_marker("distributed")
    if marker is None:
        return None
    from syncdoctor.errors import UsageError
    from syncdoctor.testing.multirank import run_multirank

    settings = _marker_settings(pyfuncitem, marker)
    argnames = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in argnames}
    try:
        result = run_multirank(pyfuncitem.obj, kwargs=kwargs, **settings)
    except UsageError as exc:
        problem = str(exc)
    else:
        problem = ""
    if problem:  # outside the except block: one message, no chained exception
        pytest.fail(f"@pytest.mark.distributed: {problem}", pytrace=False)
    if not result.ok:
        pytest.fail(result.report(), pytrace=False)
    return True


class MultiRankFixture:
    """What the ``multirank`` fixture gives: ``run`` with the session's default timeout."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def run(
        self,
        fn: Callable[..., Any],
        world_size: int = 2,
        *,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        check: bool = True,
        **options: Any,
    ) -> Any:
        """Run ``fn`` on ``world_size`` ranks; the values by rank, or (``check=False``) the full result.

        With ``check`` a failing or hanging run fails the test with the report.
        """
        from syncdoctor.testing.multirank import run_multirank

        result = run_multirank(
            fn, world_size, args=args, kwargs=kwargs, timeout=timeout or self.timeout, **options
        )
        if not check:
            return result
        if not result.ok:
            pytest.fail(result.report(), pytrace=False)
        return result.values


@pytest.fixture
def multirank(request: pytest.FixtureRequest) -> MultiRankFixture:
    """Run module-level functions on N real gloo ranks: ``multirank.run(fn, world_size=2, args=...)``."""
    return MultiRankFixture(_default_timeout(request.config))


# The lab fixture (lab.py imports neither torch nor anything heavy).
from syncdoctor.testing.lab import lab_factory  # noqa: E402
