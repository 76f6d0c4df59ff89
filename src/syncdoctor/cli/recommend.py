"""``syncdoctor recommend [PROBE_JSON] [--emit-env FILE]``: the timeouts, interfaces and HCAs a job should
use, each number explained by the measurement it comes from.

With a probe report (``syncdoctor probe --json FILE`` run on the job's nodes) the numbers come from that
report; without one, a quick local probe (2 ranks on this host, all_reduce only) is run first and the
recommendation says that it only measured this host. ``--load-time`` and ``--step-time`` add what only the
user can measure (checkpoint loading, one training step). Exit codes: 0, 2 usage, 3 unreadable report or
the local measurement could not run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from syncdoctor.cli import EXIT_OK
from syncdoctor.errors import EnvironmentNotSupported, InputError, UsageError
from syncdoctor.outputs import check_output

if TYPE_CHECKING:
    from syncdoctor.probe.report import ProbeReport

__all__ = ["LOCAL_PROBE_ARGS", "register", "run"]

LOCAL_PROBE_ARGS = ("--local", "2", "--quick", "--ops", "all_reduce", "--link-bytes", "1M", "--no-tables")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {text!r}")
    return value


def _bytes(text: str) -> int:
    from syncdoctor.probe.config import parse_bytes

    try:
        return parse_bytes(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "recommend",
        help="timeouts, interfaces and HCAs to use, from a probe report or a quick local measurement",
        description="The settings a job should use, each number explained by the measurement it comes from.",
    )
    parser.add_argument("report", nargs="?", metavar="PROBE_JSON",
                        help="a report of `syncdoctor probe --json` (default: measure this host quickly)")
    parser.add_argument("--load-time", type=_seconds, metavar="SECONDS",
                        help="how long your job takes to build the model and load its checkpoint")
    parser.add_argument("--step-time", type=_seconds, metavar="SECONDS", help="the time of one training step")
    parser.add_argument("--bucket-bytes", type=_bytes, default=None, metavar="SIZE",
                        help="the largest collective of a step, e.g. 25M (DDP's default bucket)")
    parser.add_argument("--emit-env", metavar="FILE",
                        help="write the settings as an env file, and a Python snippet next to it (FILE.py)")
    parser.add_argument("--json", action="store_true", help="print the recommendation as JSON")
    parser.set_defaults(func=run)


def _read_report(path: str, source: str) -> ProbeReport:
    """The probe report in ``path``, parsed once (InputError when unreadable or not a probe report)."""
    from syncdoctor.probe.report import ProbeReport

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a probe report (a JSON object was expected)")
    return ProbeReport.from_json(data, source)


def _measure_locally(console: Console, source: str) -> ProbeReport:
    console.print("no probe report given: measuring this host with `syncdoctor probe "
                  + " ".join(LOCAL_PROBE_ARGS) + "` ...", markup=False)
    with tempfile.TemporaryDirectory(prefix="syncdoctor-recommend-") as tmp:
        path = Path(tmp) / "probe.json"
        argv = [sys.executable, "-m", "syncdoctor", "probe", *LOCAL_PROBE_ARGS, "--json", str(path)]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            raise EnvironmentNotSupported("the local measurement did not finish within 300 s") from None
        if not path.exists():
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-5:])
            raise EnvironmentNotSupported(f"the local measurement failed (exit code {done.returncode}): {tail}")
        return _read_report(str(path), source)


def _emit(recommendation: Any, target: str) -> list[Path]:
    from syncdoctor.recommend import write_emitted

    try:
        return write_emitted(target, recommendation.env_file(), recommendation.python_snippet())
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace, console: Console) -> int:
    from syncdoctor.recommend import DEFAULT_BUCKET_BYTES, measurements_from_probe, recommend

    if args.emit_env:  # before measuring
        from syncdoctor.recommend import emit_paths

        for path in emit_paths(args.emit_env):
            check_output(path, "--emit-env")
    if args.report:
        source = f"the probe report {args.report}"
        report = _read_report(args.report, source)
    else:
        source = "a quick local measurement (2 ranks on this host)"
        report = _measure_locally(console, source)
    measured = measurements_from_probe(report, source, load_time_s=args.load_time, step_time_s=args.step_time)
    result = recommend(measured, bucket_bytes=args.bucket_bytes or DEFAULT_BUCKET_BYTES)
    written = _emit(result, args.emit_env) if args.emit_env else []
    if args.json:
        console.print_json(json.dumps({**result.to_json(), "written": [str(p) for p in written]}))
        return EXIT_OK
    console.print(f"Recommended settings, from {source} ({measured.nodes} node(s), {measured.ranks} rank(s), "
                  f"{measured.backend})", markup=False)
    console.print("")
    for line in result.explain():
        console.print(line, markup=False)
    console.print("")
    if result.env or result.per_node_env:
        console.print("interfaces and HCAs:", markup=False)
        for name, value in result.env.items():
            reason = result.env_reasons.get(name, "")
            console.print(f"  {name}={value}" + (f"   # {reason}" if reason else ""), markup=False, soft_wrap=True)
        for label, variables in result.per_node_env.items():
            for name, value in variables.items():
                console.print(f"  on {label}: {name}={value}", markup=False, soft_wrap=True)
    else:
        console.print("interfaces and HCAs: nothing to set from this measurement", markup=False)
    for note in result.notes:
        console.print(f"note: {note}", markup=False)
    console.print("")
    console.print("how to apply:", markup=False)
    if written:
        console.print(f"  env file: {written[0]} (load it on every node: set -a; . {written[0]}; set +a)",
                      markup=False)
        console.print(f"  Python:   {written[1]}", markup=False)
    else:
        console.print("  add --emit-env FILE to write the env file and this Python snippet:", markup=False)
    for line in result.python_snippet().splitlines():  # never wrapped: it is copied as it stands
        console.print(f"    {line}", markup=False, soft_wrap=True)
    return EXIT_OK
