"""``syncdoctor probe``: a distributed preflight run by every rank of a job (or ``--local N`` ranks here).

Under torchrun: ``torchrun --nnodes N --nproc-per-node G ... -m syncdoctor probe [options]``; under Slurm:
``srun python -m syncdoctor probe``; one host: ``syncdoctor probe --local 4``; several hosts without a
launcher: ``syncdoctor probe --local G --nnodes N --node-rank K --master-addr HOST0`` on each host.
Rank 0 prints progress per stage and the report; exit code 0 when nothing is wrong or only warnings were
found, 1 with error findings (``--fail-on`` sets the severity), 4 when a stage failed, 3 when the store
cannot be reached or a stage hung past its watchdog.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from rich.console import Console
from rich.text import Text

from syncdoctor.cli import finite
from syncdoctor.cli.exclusion import (
    add_exclusion_options,
    add_history_options,
    checked_exclusion,
    record_history,
    write_exclusion,
)
from syncdoctor.errors import EnvironmentNotSupported, UsageError
from syncdoctor.outputs import check_output

__all__ = ["build_config", "register", "run"]

_HOOKS = {
    "inject_wrong": "SYNCDOCTOR_PROBE_INJECT_WRONG",
    "clock_offset_s": "SYNCDOCTOR_PROBE_CLOCK_OFFSET_S",
    "start_delay_s": "SYNCDOCTOR_PROBE_START_DELAY_S",
    "hang_stage": "SYNCDOCTOR_PROBE_HANG_STAGE",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="measure the nodes, links and collectives of a job; name the slow or misconfigured node",
        description="A distributed preflight: join and start-up skew, cross-node consistency of host facts and "
        "variables, point-to-point links between every pair of nodes, collectives over a size sweep with "
        "element checks, a verdict and recommended settings. Run it as every rank of a job (torchrun, srun) "
        "or with --local N.",
    )
    measure = parser.add_argument_group("what to measure")
    measure.add_argument("--backend", choices=("gloo", "nccl", "auto"), default="auto",
                         help="process group backend (auto: nccl with CUDA, else gloo)")
    measure.add_argument("--sizes", default=None,
                         help="collective sizes: FIRST:LAST[:FACTOR] (x4 steps) or a list (default 1K:16M)")
    measure.add_argument("--ops", default="all", help="collectives, comma separated (default: all five)")
    measure.add_argument("--quick", action="store_true", help="sizes up to 1M and fewer iterations")
    measure.add_argument("--iters", type=int, default=20, help="most timed iterations per size (default 20)")
    measure.add_argument("--link-bytes", default="16M", help="largest point-to-point message (default 16M)")
    timing = parser.add_argument_group("timeouts and thresholds")
    timing.add_argument("--join-timeout", type=finite, default=60.0, metavar="SECONDS",
                        help="how long to wait for every rank to join (default 60)")
    timing.add_argument("--stage-timeout", type=finite, default=120.0, metavar="SECONDS",
                        help="limit of each measuring stage (default 120)")
    timing.add_argument("--skew-warn", type=finite, default=10.0, metavar="SECONDS",
                        help="report nodes that start later than this (default 10)")
    timing.add_argument("--slow-ratio", type=finite, default=0.5,
                        help="a link below this fraction of its reference is slow (default 0.5)")
    where = parser.add_argument_group("launch")
    where.add_argument("--local", type=int, default=None, metavar="N", help="start N ranks on this host")
    where.add_argument("--nnodes", type=int, default=None,
                       help="nodes the job should have (default $NNODES; with --node-rank: this probe's own "
                       "multi-node launch)")
    where.add_argument("--node-rank", type=int, default=None, help="this host's node rank (with --nnodes)")
    where.add_argument("--master-addr", default=None, help="address of node 0 (the probe's store)")
    where.add_argument("--master-port", type=int, default=None, help="port of the probe's store")
    where.add_argument("--hosts", default=None, help="node names in node-rank order, to name missing nodes")
    output = parser.add_argument_group("output")
    output.add_argument("--json", dest="json_path", default=None, metavar="FILE",
                        help="write the report as JSON (schema syncdoctor.probe/1), updated after every stage")
    output.add_argument("--html", dest="html_path", default=None, metavar="FILE",
                        help="also write the report as one self-contained HTML page (see docs/report.md)")
    output.add_argument("--fail-on", choices=("error", "warning"), default="error",
                        help="the lowest finding severity that makes the reporting rank exit 1 (default error: "
                             "warnings are printed, and the probe exits 0, so torchrun reports no failure)")
    output.add_argument("--emit-env", dest="emit_env", default=None, metavar="FILE",
                        help="write recommended settings as an env file, and a Python snippet next to it")
    output.add_argument("--no-tables", action="store_true", help="leave the nccl-tests tables out of the report")
    add_exclusion_options(output)
    add_history_options(output)
    parser.set_defaults(func=run)


def _float_env(name: str) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return 0.0
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"{name}={value!r} is not a number") from None


def build_config(args: argparse.Namespace) -> Any:
    """The :class:`ProbeConfig` for these options (test hooks from SYNCDOCTOR_PROBE_* variables)."""
    from syncdoctor.probe.config import (
        DEFAULT_SIZES,
        ProbeConfig,
        parse_bytes,
        parse_ops,
        parse_sizes,
        split_names,
    )

    if args.iters < 1:
        raise UsageError("--iters must be at least 1")
    config = ProbeConfig(
        backend=args.backend,
        sizes=parse_sizes(args.sizes) if args.sizes else DEFAULT_SIZES,
        ops=parse_ops(args.ops),
        join_timeout_s=args.join_timeout,
        stage_timeout_s=args.stage_timeout,
        max_iters=args.iters,
        link_bytes=parse_bytes(args.link_bytes),
        slow_ratio=args.slow_ratio,
        skew_warn_s=args.skew_warn,
        host_names=split_names(args.hosts),
        expected_nodes=args.nnodes,
        json_path=args.json_path,
        emit_env_path=args.emit_env,
        fail_on=args.fail_on,
        inject_wrong=os.environ.get(_HOOKS["inject_wrong"]) or None,
        clock_offset_s=_float_env(_HOOKS["clock_offset_s"]),
        start_delay_s=_float_env(_HOOKS["start_delay_s"]),
        hang_stage=os.environ.get(_HOOKS["hang_stage"]) or None,
    )
    if args.quick:
        config = config.quickened()
        if args.sizes:
            from dataclasses import replace

            config = replace(config, sizes=parse_sizes(args.sizes))
    return config


def _hang_exit() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(3)


def run(args: argparse.Namespace, console: Console) -> int:
    started = time.time()
    for option, path in (("--json", args.json_path), ("--html", args.html_path)):
        check_output(path, option)  # before the ranks start and measure
    if args.emit_env:
        from syncdoctor.recommend import emit_paths

        for path in emit_paths(args.emit_env):
            check_output(path, "--emit-env")
    exclude_out, hostfile = checked_exclusion(args)
    config = build_config(args)
    if args.local is not None:
        if args.local < 1:
            raise UsageError("--local needs at least 1 rank")
        from syncdoctor.probe.local import spawn_local

        argv = _rebuild_argv(args)
        nnodes = args.nnodes if args.node_rank is not None else 1
        budget = config.join_timeout_s + 8 * config.stage_timeout_s + 120
        err = Console(stderr=True, highlight=False)
        return spawn_local(
            args.local, argv, out=lambda line: console.print(Text(line), soft_wrap=True), err=lambda line: err.print(Text(line)),
            nnodes=nnodes or 1, node_rank=args.node_rank or 0, master_addr=args.master_addr or "127.0.0.1",
            master_port=args.master_port, timeout_s=budget, columns=console.width,
        )
    try:
        import torch  # noqa: F401
    except ImportError:
        raise EnvironmentNotSupported("probe needs torch: pip install 'syncdoctor[torch]'") from None
    from syncdoctor.probe.launch import resolve_launch
    from syncdoctor.probe.report import ProbeReport
    from syncdoctor.probe.runner import run_probe
    from syncdoctor.report.terminal_probe import render_probe

    if not console.is_terminal and console.width < 120:
        console.width = 120  # logs of torchrun/srun ranks: wide enough for the tables
    nnodes = args.nnodes
    if nnodes is None and args.node_rank is None and os.environ.get("NNODES", "").strip().isdecimal():
        nnodes = int(os.environ["NNODES"])  # job scripts often export the node count they launched for
    launch = resolve_launch(os.environ, nnodes=nnodes, node_rank=args.node_rank,
                            master_addr=args.master_addr, master_port=args.master_port)
    outcome = run_probe(
        config, launch, progress=lambda message: console.print(Text(f"[probe] {message}")),
        started_wall=started + config.clock_offset_s, on_hang=_hang_exit, command=list(sys.argv),
    )
    if outcome.report is not None:
        report = ProbeReport.from_json(outcome.report)  # the document as written: parsed once, rendered twice
        console.print()
        render_probe(report, console, show_tables=not args.no_tables)
        if args.html_path:
            from syncdoctor.report.html import render_probe_html, write_html

            written = write_html(args.html_path, render_probe_html(report))
            console.print(Text(f"HTML report written to {written}"), soft_wrap=True)
        suspects = report.suspect_nodes
        if exclude_out is not None:
            chosen = [s for s in suspects if s.confidence >= args.min_confidence]
            console.print(Text(write_exclusion(exclude_out, chosen, args.exclude_format, hostfile)), soft_wrap=True)
        warning = record_history(args, f"probe:{launch.run_id}:{report.created}", "probe", suspects)
        if warning:
            console.print(Text(warning, style="yellow"), soft_wrap=True)
    _leave(console, outcome.exit_code)
    return outcome.exit_code  # not reached


def _leave(console: Console, code: int) -> None:
    """End a rank now, without the interpreter's teardown: torch's store and gloo threads can abort the
    process while C++ objects are destroyed at exit ("terminate called without an active exception", seen on
    one rank of a probe under srun), which srun --kill-on-bad-exit and torchrun count as a failed rank, and
    which then ends the others before rank 0 has printed its report. Everything is written by now."""
    import logging

    console.file.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def _rebuild_argv(args: argparse.Namespace) -> list[str]:
    """The command line of the ranks ``--local`` starts: the parsed options, without ``--local``."""
    argv = ["--backend", args.backend, "--ops", args.ops, "--iters", str(args.iters), "--link-bytes", args.link_bytes,
            "--join-timeout", str(args.join_timeout), "--stage-timeout", str(args.stage_timeout),
            "--skew-warn", str(args.skew_warn), "--slow-ratio", str(args.slow_ratio)]
    for flag, value in (("--sizes", args.sizes), ("--nnodes", args.nnodes), ("--node-rank", args.node_rank),
                        ("--master-addr", args.master_addr), ("--master-port", args.master_port),
                        ("--hosts", args.hosts), ("--json", args.json_path), ("--emit-env", args.emit_env),
                        ("--html", args.html_path), ("--exclude-out", args.exclude_out),
                        ("--hostfile", args.hostfile)):
        if value is not None:
            argv += [flag, str(value)]
    argv += ["--exclude-format", args.exclude_format, "--min-confidence", str(args.min_confidence)]
    if args.history:
        argv += ["--history", args.history]
    if args.no_history:
        argv.append("--no-history")
    if args.fail_on != "error":
        argv += ["--fail-on", args.fail_on]
    if args.quick:
        argv.append("--quick")
    if args.no_tables:
        argv.append("--no-tables")
    return argv
