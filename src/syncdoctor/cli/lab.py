"""``syncdoctor lab``: run a user's script as a real multi-host torchrun job on this machine, with faults.

    syncdoctor lab --hosts 2 --procs-per-host 2 --throttle host1=50mbit --cut host1@30s+10s \\
        --loopback-hostname host1 --run-dir ./lab-run -- python train.py --epochs 1

Builds a :class:`syncdoctor.testing.lab.Lab` (network namespaces; needs root and iproute2, refused with exit
code 3 otherwise), applies the network faults, starts one torchrun agent per host and keeps every rank's
output in the run directory. Exit code 0 when every host's torchrun exits 0, 1 when the job failed or timed
out, 2 for bad options, 3 when the lab cannot be built here.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from syncdoctor.cli import EXIT_FINDINGS, EXIT_OK, finite
from syncdoctor.errors import EnvironmentNotSupported, UsageError
from syncdoctor.redact import redact_env
from syncdoctor.testing.faults_spec import CutSpec, parse_cut, parse_host_value, parse_rate

if TYPE_CHECKING:
    from syncdoctor.testing.lab import JobResult, Lab, LabJob

__all__ = ["LabPlan", "plan_from_args", "register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="run a script as a real multi-host job in network namespaces, with network faults (root)",
        description="Run COMMAND as a multi-host torchrun job on this machine: each host is a network "
        "namespace with its own address and hostname, joined by a virtual switch. Needs root and iproute2.",
    )
    parser.add_argument("--hosts", type=int, default=2, help="number of hosts (default 2)")
    parser.add_argument("--procs-per-host", type=int, default=1, help="ranks per host (default 1)")
    parser.add_argument("--rdzv", choices=("static", "c10d"), default="static",
                        help="rendezvous: static master on host0 (default) or c10d")
    parser.add_argument("--throttle", action="append", default=[], metavar="HOST=RATE",
                        help="limit HOST's link, e.g. host1=50mbit (repeatable)")
    parser.add_argument("--cut", action="append", default=[], metavar="HOST@TIME[+DURATION]",
                        help="pull HOST's cable TIME after the start (host1@30s), restore after DURATION "
                             "(host1@30s+10s), or when the job touches run_dir/triggers/cut-HOST "
                             "(host1@trigger) (repeatable)")
    parser.add_argument("--mtu", action="append", default=[], metavar="HOST=MTU",
                        help="MTU of HOST's eth0, e.g. host1=9000 (repeatable)")
    parser.add_argument("--switch-mtu", type=int, default=None, help="MTU of the switch (default 1500)")
    parser.add_argument("--loopback-hostname", action="append", default=[], metavar="HOST",
                        help="make HOST's hostname resolve to 127.0.0.1 inside it (repeatable)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="set a variable on every host (repeatable)")
    parser.add_argument("--host-env", action="append", default=[], metavar="HOST:NAME[=VALUE]",
                        help="set NAME on HOST only, or unset it there without =VALUE (repeatable)")
    parser.add_argument("--run-dir", type=Path, default=None,
                        help="where logs go (default ./syncdoctor-lab-YYYYmmdd-HHMMSS)")
    parser.add_argument("--timeout", type=finite, default=600.0,
                        help="kill the job after this many seconds (default 600)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- then the command each rank runs (python is replaced by this interpreter)")
    parser.set_defaults(func=run)


class LabPlan:
    """Everything ``syncdoctor lab`` will do, validated before anything is built."""

    def __init__(self, hosts: int, procs_per_host: int, command: list[str]) -> None:
        self.hosts = hosts
        self.procs_per_host = procs_per_host
        self.command = command
        self.throttles: dict[str, str] = {}
        self.mtus: dict[str, int] = {}
        self.cuts: list[CutSpec] = []
        self.loopback: list[str] = []
        self.env: dict[str, str] = {}
        self.host_env: dict[str, dict[str, str | None]] = {}


def plan_from_args(args: argparse.Namespace) -> LabPlan:
    """Validate the options into a :class:`LabPlan`; raises UsageError with the offending option."""
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("give the command to run after --, e.g. syncdoctor lab --hosts 2 -- python train.py")
    if not 1 <= args.hosts <= 250:
        raise UsageError(f"--hosts must be between 1 and 250, not {args.hosts}")
    if args.procs_per_host < 1:
        raise UsageError("--procs-per-host must be at least 1")
    plan = LabPlan(args.hosts, args.procs_per_host, command)
    names = {f"host{i}" for i in range(args.hosts)}

    def known(host: str, option: str) -> str:
        if host not in names:
            raise UsageError(f"{option}: no host {host!r}; hosts are host0..host{args.hosts - 1}")
        return host

    for item in args.throttle:
        host, rate = parse_host_value(item, "--throttle")
        parse_rate(rate)
        plan.throttles[known(host, "--throttle")] = rate
    for item in args.mtu:
        host, value = parse_host_value(item, "--mtu")
        if not value.isdecimal() or not 576 <= int(value) <= 65535:
            raise UsageError(f"--mtu: {value!r} is not an MTU between 576 and 65535")
        plan.mtus[known(host, "--mtu")] = int(value)
    for item in args.cut:
        cut = parse_cut(item)
        known(cut.host, "--cut")
        plan.cuts.append(cut)
    plan.loopback = [known(host, "--loopback-hostname") for host in args.loopback_hostname]
    for item in args.env:
        name, value = parse_host_value(item, "--env")
        plan.env[name] = value
    for item in args.host_env:
        host, sep, assignment = item.partition(":")
        if not sep or not assignment:
            raise UsageError(f"--host-env expects HOST:NAME=VALUE or HOST:NAME, got {item!r}")
        name, has_value, value = assignment.partition("=")
        plan.host_env.setdefault(known(host, "--host-env"), {})[name] = value if has_value else None
    return plan


def run(args: argparse.Namespace, console: Console) -> int:
    from syncdoctor.testing.lab import Lab, lab_available

    plan = plan_from_args(args)
    available, reason = lab_available()
    if not available:
        raise EnvironmentNotSupported(f"syncdoctor lab cannot build its hosts here: {reason}")
    run_dir = args.run_dir or Path(f"syncdoctor-lab-{time.strftime('%Y%m%d-%H%M%S')}")
    run_dir = run_dir.resolve()
    with Lab(plan.hosts, mode="netns", switch_mtu=args.switch_mtu) as lab:
        for host, rate in plan.throttles.items():
            lab.throttle(host, rate)
        for host, mtu in plan.mtus.items():
            lab.set_mtu(host, mtu)
        for host in plan.loopback:
            lab.hostname_to_loopback(host)
        _print_layout(console, lab, plan, run_dir)
        job = lab.torchrun(plan.command, procs_per_host=plan.procs_per_host, env=plan.env,
                           host_env=plan.host_env, run_dir=run_dir, rdzv=args.rdzv)
        for cut in plan.cuts:
            _schedule_cut(lab, job, cut, console)
        result = job.wait(timeout=args.timeout)
        _print_result(console, result)
    return EXIT_OK if result.ok else EXIT_FINDINGS


def _schedule_cut(lab: Lab, job: LabJob, cut: CutSpec, console: Console) -> None:
    def do_cut() -> None:
        lab.cut(cut.host)
        console.print(f"lab: cut {cut.host}'s link", markup=False)
        if cut.duration is not None:
            lab.after(cut.duration, do_restore)

    def do_restore() -> None:
        lab.restore(cut.host)
        console.print(f"lab: restored {cut.host}'s link", markup=False)

    if cut.at is None:
        job.on_trigger(f"cut-{cut.host}", do_cut)
    else:
        lab.after(cut.at, do_cut)


def _faults_of(plan: LabPlan, host: str) -> list[str]:
    faults = []
    if host in plan.throttles:
        faults.append(f"throttled to {plan.throttles[host]}")
    if host in plan.mtus:
        faults.append(f"mtu {plan.mtus[host]}")
    for cut in plan.cuts:
        if cut.host == host:
            when = "on trigger cut-" + host if cut.at is None else f"at {cut.at:g}s"
            faults.append(f"cut {when}" + (f" for {cut.duration:g}s" if cut.duration is not None else ""))
    if host in plan.loopback:
        faults.append("hostname -> 127.0.0.1")
    for name, value in redact_env({k: v for k, v in plan.host_env.get(host, {}).items() if v is not None}).items():
        faults.append(f"{name}={value}")
    faults += [f"{name} unset" for name, value in plan.host_env.get(host, {}).items() if value is None]
    return faults


def _print_layout(console: Console, lab: Lab, plan: LabPlan, run_dir: Path) -> None:
    table = Table(title=f"lab: {plan.hosts} hosts x {plan.procs_per_host} ranks", title_justify="left")
    for column in ("host", "address", "namespace", "faults and settings"):
        table.add_column(column)
    for host in lab.hosts:
        table.add_row(host.name, host.addr, host.netns or "-", ", ".join(_faults_of(plan, host.name)) or "-")
    console.print(table)
    if plan.env:
        shown = " ".join(f"{k}={v}" for k, v in redact_env(plan.env).items())
        console.print(f"every host: {shown}", markup=False)
    console.print(f"command: {' '.join(plan.command)}", markup=False)
    console.print(f"run dir: {run_dir}", markup=False)


def _print_result(console: Console, result: JobResult) -> None:
    table = Table(title="result", title_justify="left")
    for column in ("rank", "host", "log", "last line"):
        table.add_column(column, overflow="fold")
    for rank, path in result.rank_logs.items():
        lines = result.output(rank).strip().splitlines()
        table.add_row(str(rank), result.rank_hosts.get(rank, "?"), str(path), lines[-1][:100] if lines else "")
    console.print(table)
    codes = ", ".join(f"{host}={code}" for host, code in result.returncodes.items())
    status = "timed out and was killed" if result.timed_out else ("succeeded" if result.ok else "failed")
    console.print(f"job {status} after {result.duration:.1f}s (torchrun exit codes: {codes})", markup=False)

