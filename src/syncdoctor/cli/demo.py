"""``syncdoctor demo``: the mission's scenario, for real, in under a minute.

A 4-rank gloo DDP job on two machines (lab network namespaces when root, else two torchrun agents on this
machine labelled as two hosts; the demo says which). At step 5, rank 3 on the second machine spends 20 s in
its data-loading function before it reaches the gradient all_reduce. ``syncdoctor.watch`` runs in every
rank (warning after 3 s); the job's collective timeout is 15 s, so plain PyTorch reports the same fault
its own way. The demo prints both, side by side, and exits 0 when syncdoctor named rank 3, its host and
the function.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncdoctor.cli import EXIT_FINDINGS, EXIT_OK, finite

__all__ = ["register", "run"]

_LATE_STEP = 5
_ERROR_LINE = re.compile(r"^(?:\[rank\d+\]: )?([A-Z]\w*(?:Error|Exception): .*)$", re.MULTILINE)
_ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):(.*?)={10}", re.DOTALL)
_SOURCE_PATH = re.compile(r"\[[^\]\s]*\.(?:cc|cpp|h|hpp):\d+\]\s*")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="run the demonstration scenario: a late rank, named within seconds")
    parser.add_argument("--mode", choices=("auto", "lab", "local"), default="auto",
                        help="lab: network namespaces (root); local: two agents on this machine (default auto)")
    parser.add_argument("--late", type=finite, default=20.0, metavar="SECONDS", help="how late rank 3 is (default 20)")
    parser.add_argument("--warn-after", type=finite, default=3.0, metavar="SECONDS",
                        help="syncdoctor's warning threshold (default 3)")
    parser.add_argument("--timeout", type=finite, default=15.0, metavar="SECONDS",
                        help="the job's collective timeout, i.e. when plain PyTorch speaks (default 15)")
    parser.add_argument("--keep", metavar="DIR", default=None, help="keep the job's logs in DIR")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from syncdoctor.testing.lab import Lab, lab_available

    available, reason = lab_available()
    mode = {"auto": "netns" if available else "loopback", "lab": "netns", "local": "loopback"}[args.mode]
    run_dir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="syncdoctor-demo-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    events_file = run_dir / "events.jsonl"
    events_file.unlink(missing_ok=True)
    fault = {"rank": 3, "kind": "late", "at": _LATE_STEP, "seconds": args.late, "where": "load_batch"}
    env = {
        "SYNCDOCTOR_WATCH": "1",
        "SYNCDOCTOR_WATCH_WARN_AFTER": str(args.warn_after),
        "SYNCDOCTOR_WATCH_SUSPECT_AFTER": str(min(1.0, args.warn_after / 2)),
        "SYNCDOCTOR_WATCH_EVENTS_FILE": str(events_file),
    }
    console.print("[bold]syncdoctor demo[/bold]: 4 ranks of a gloo DDP job on two machines, host0 (ranks 0, 1) "
                  "and host1 (ranks 2, 3).")
    if mode == "netns":
        console.print("Machines: two network namespaces joined by a virtual switch (the lab), one torchrun agent "
                      "each, talking over their own addresses.")
    else:
        console.print(f"Machines: two torchrun agents on this machine, labelled host0 and host1 (no network "
                      f"namespaces here: {reason or 'local mode asked for'}).")
    console.print(f"Fault: at step {_LATE_STEP}, rank 3 (host1) spends {args.late:.0f} s in load_batch before the "
                  f"gradient all_reduce. Collective timeout {args.timeout:.0f} s; syncdoctor warns after "
                  f"{args.warn_after:.0f} s.\n")
    started = time.monotonic()
    with Lab(hosts=2, mode=mode) as lab:
        job = lab.torchrun(
            ["-m", "syncdoctor.testing.workload", "--steps", "12", "--grad-sync", "manual", "--log-ranks", "all",
             "--collective-timeout", str(args.timeout), "--fault", json.dumps(fault)],
            procs_per_host=2, env=env, run_dir=run_dir / "job",
        )
        console.print("starting the job (importing torch on 4 ranks takes a while on a small machine)...")
        if not job.wait_for_output(0, rf"step={_LATE_STEP - 1} ", timeout=180):
            job.kill()
            console.print("[red]the job did not start training; logs in[/red] " + str(run_dir), markup=True)
            return EXIT_FINDINGS
        console.print(f"training; rank 3 is now in load_batch at step {_LATE_STEP} (t = {time.monotonic() - started:.0f} s)")
        waiting_since = time.time()
        event = _wait_event(events_file, job, timeout=args.late + args.timeout + 30)
        found_at = time.time()
        if event is not None:
            console.print(Text.assemble(("syncdoctor", "bold green"),
                                        f" (+{found_at - waiting_since:.1f} s): {event['code']} {event['title']}"),
                          soft_wrap=True)
        console.print("waiting for plain PyTorch to report the same fault (its collective timeout)...")
        pytorch_at = _wait_error(job, timeout=args.late + args.timeout + 30)
        result = job.wait(timeout=args.late + args.timeout + 60)
    errors = _pytorch_errors(result)
    roots = _root_causes(result)
    table = Table(title="The same fault, two reports", show_lines=True)
    table.add_column("plain PyTorch + torchrun", ratio=1)
    table.add_column("syncdoctor.watch", ratio=1)
    left = "\n".join(f"rank {rank}: {text}" for rank, text in sorted(errors.items())) or "(no error text)"
    for host, rank in roots:
        left += f"\ntorchrun on {host}, 'Root Cause (first observed failure)': rank {rank}"
    when = f"after {pytorch_at - waiting_since:.0f} s" if pytorch_at else "never"
    left += f"\n\n({when}; C++ source paths shortened. No line names rank 3 as the cause, nor load_batch.)"
    if event is None:
        right = "no event (unexpected: see the logs in " + str(run_dir) + ")"
    else:
        right = (
            f"{event['code']} {event['kind']}, {found_at - waiting_since:.1f} s after the others started waiting:\n"
            f"culprit: rank {', '.join(map(str, event['ranks']))} on {', '.join(event['hosts'])}\n"
            f"where: {event['detail'].get('where', '?')}\n"
            f"collective: {_signature_text(event.get('signature'))} #{event.get('seq')} of group {event.get('group')}\n"
            f"waiting: ranks {', '.join(map(str, event['waiting_ranks']))} for {event['waited_s']} s"
        )
    table.add_row(Text(left), Text(right))
    console.print(table)
    console.print(f"took {time.monotonic() - started:.0f} s; logs and events in {run_dir}")
    ok = (
        event is not None and event["ranks"] == [3] and event["hosts"] == ["host1"]
        and "load_batch" in str(event["detail"].get("where", ""))
    )
    return EXIT_OK if ok else EXIT_FINDINGS


def _wait_event(path: Path, job: Any, timeout: float) -> dict[str, Any] | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("code") == "W101" and event.get("status") in ("warning", "confirmed"):
                    return event
        if job.poll() is not None:
            return None
        time.sleep(0.1)
    return None


def _signature_text(data: Any) -> str:
    from syncdoctor.watch.records import Signature

    signature = Signature.from_json(data)
    return signature.short() if signature else "?"


def _wait_error(job: Any, timeout: float) -> float | None:
    """Wall time at which the first rank printed an error (plain PyTorch speaking), or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in job.rank_logs().values():
            if _ERROR_LINE.search(path.read_text(errors="replace")):
                return time.time()
        if job.poll() is not None:
            return None
        time.sleep(0.1)
    return None


def _pytorch_errors(result: Any) -> dict[int, str]:
    """The first error line each rank printed (what the user of plain PyTorch gets)."""
    out = {}
    for rank, path in result.rank_logs.items():
        match = _ERROR_LINE.search(path.read_text(errors="replace"))
        if match:
            out[rank] = _SOURCE_PATH.sub("", match.group(1))[:160]
    return out


def _root_causes(result: Any) -> list[tuple[str, str]]:
    """(host, rank) of each torchrun agent's "Root Cause (first observed failure)"."""
    out = []
    for host, path in sorted(result.host_logs.items()):
        match = _ROOT_CAUSE.search(path.read_text(errors="replace"))
        rank = re.search(r"rank\s*:\s*(\d+)", match.group(1)) if match else None
        if rank:
            out.append((host, rank.group(1)))
    return out
