"""``syncdoctor run [watch settings] -- COMMAND ARGS...``: run a job with the watcher in every rank, no code change.

Runs COMMAND (torchrun, ``python -m torch.distributed.run``, srun, mpirun, ``accelerate launch``, deepspeed or
a script) with ``SYNCDOCTOR_WATCH=1`` and one ``SYNCDOCTOR_WATCH_*`` variable per setting given, so the
start-up hook that the package installs (:mod:`syncdoctor.autowatch`) starts the watcher in each process that
calls ``init_process_group``. The settings are the watcher's (:class:`~syncdoctor.watch.WatchConfig`), one
option each, checked before COMMAND starts. COMMAND's exit code is passed through (128+N when a signal N ended
it); SIGINT and SIGTERM are passed on to it. Launchers that start ranks on other hosts must pass the
environment on (srun does by default; mpirun needs ``-x SYNCDOCTOR_WATCH`` and ``-x`` per setting: see
docs/launchers.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from syncdoctor.autowatch import ENV_SWITCH, PTH_NAME
from syncdoctor.errors import EnvironmentNotSupported, UsageError
from syncdoctor.watch.config import WatchConfig, env_name
from syncdoctor.watch.metrics import ENV_ADDR, ENV_PORT

__all__ = ["hook_paths", "option_name", "register", "run", "watch_env"]

_SKIPPED = ("enabled",)  # `syncdoctor run` is the switch
# the metrics endpoint (syncdoctor.watch.metrics) is set by its own variables: option -> (variable, help)
_METRICS = {
    "metrics_port": (ENV_PORT, f"serve Prometheus metrics on the monitor's rank at this port ({ENV_PORT})"),
    "metrics_addr": (ENV_ADDR, f"address the metrics endpoint binds, default 127.0.0.1 ({ENV_ADDR})"),
}


def option_name(field: str) -> str:
    """``warn_after_s`` -> ``--warn-after`` (the variable's name, as an option)."""
    return "--" + env_name(field)[len("SYNCDOCTOR_WATCH_"):].lower().replace("_", "-")


def _settings() -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(WatchConfig) if f.name not in _SKIPPED]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a job with the watcher in every rank, without editing it: syncdoctor run -- torchrun ...",
        description="Run COMMAND with syncdoctor.watch started in every process that calls "
        "init_process_group (SYNCDOCTOR_WATCH=1 and the settings below as SYNCDOCTOR_WATCH_* variables). "
        "COMMAND's exit code is passed through.",
        usage="syncdoctor run [watch settings] -- COMMAND [ARGS...]",
    )
    for field in _settings():
        doc = _doc(field.name)
        if str(field.type).startswith("bool"):
            parser.add_argument(option_name(field.name), dest=field.name, action=argparse.BooleanOptionalAction,
                                default=None, help=doc)
        else:
            parser.add_argument(option_name(field.name), dest=field.name, default=None, metavar="VALUE", help=doc)
    for name, (_variable, doc) in _METRICS.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, default=None, metavar="VALUE", help=doc)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the job's command line, after --")
    parser.set_defaults(func=run)


def _doc(name: str) -> str:
    """The first sentence of the setting's documentation in WatchConfig."""
    text = WatchConfig.__doc__ or ""
    marker = f"{name}: "
    start = text.find(marker)
    if start < 0:
        return env_name(name)
    body = " ".join(text[start + len(marker):].split("\n\n")[0].split())
    body = body.split("] ", 1)[-1] if body.startswith("[") else body
    sentence = body.split(". ")[0].rstrip(".")
    return f"{sentence} ({env_name(name)})".replace("%", "%%")


def watch_env(settings: Mapping[str, Any], base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the switch on and one variable per given setting. Raises UsageError for a bad value,
    naming the option as the user typed it."""
    env = dict(base)
    env[ENV_SWITCH] = "1"
    variables = {name: _METRICS[name][0] if name in _METRICS else env_name(name) for name in settings}
    for name, value in settings.items():
        if value is None:
            continue
        env[variables[name]] = ("1" if value else "0") if isinstance(value, bool) else str(value)
    try:
        WatchConfig.load(env)
        port = env.get(ENV_PORT, "").strip()
        if port and not (port.isdecimal() and 0 < int(port) < 65536):
            raise UsageError(f"{ENV_PORT}={port!r}: must be a TCP port number (1-65535)")
    except UsageError as exc:
        message = str(exc)
        for name in settings:
            message = message.replace(variables[name] + "=", "--" + name.replace("_", "-").removesuffix("-s") + " ")
        raise UsageError(f"syncdoctor run: {message}") from None
    return env


def hook_paths() -> list[Path]:
    """Where this interpreter would find the start-up hook (its site-packages directories)."""
    dirs = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    return [Path(d) / PTH_NAME for d in sorted(dirs)]


def run(args: argparse.Namespace, console: Console) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("syncdoctor run: no command; usage: syncdoctor run [watch settings] -- COMMAND [ARGS...]")
    if not any(path.is_file() for path in hook_paths()):
        raise EnvironmentNotSupported(
            f"syncdoctor run: the start-up hook {PTH_NAME} is not installed next to this Python's packages "
            f"({', '.join(str(p.parent) for p in hook_paths())}); reinstall syncdoctor with pip, or call "
            "syncdoctor.watch.start() in the script")
    given = {f.name: getattr(args, f.name) for f in _settings()}
    given.update({name: getattr(args, name) for name in _METRICS})
    env = watch_env(given, os.environ)
    return _launch(command, env)


def _launch(command: Sequence[str], env: Mapping[str, str]) -> int:
    try:
        child = subprocess.Popen(list(command), env=dict(env))
    except FileNotFoundError:
        raise UsageError(f"syncdoctor run: command not found: {command[0]}") from None
    except PermissionError:
        raise UsageError(f"syncdoctor run: not executable: {command[0]}") from None

    def forward(signum: int, _frame: Any) -> None:
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.stdout.flush()
    return 128 - code if code < 0 else code
