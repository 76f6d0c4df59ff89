"""Zero-code watching: the start-up hook (``SYNCDOCTOR_WATCH=1``, syncdoctor.autowatch) and ``syncdoctor run``.

Unmodified scripts under a real torchrun (gloo, localhost): a late rank named alone within warn + 2 s,
started both ways; no watcher in DataLoader workers (fork and spawn) or a subprocess; one watcher when the
script also calls ``syncdoctor.watch.start()``; the hook itself off unless switched on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from syncdoctor.autowatch import PTH_LINE, PTH_NAME
from syncdoctor.cli.run import option_name, watch_env
from syncdoctor.errors import UsageError
from watch_helpers import watcher_said

DATA = Path(__file__).parent / "data" / "autowatch"
ROOT = Path(__file__).resolve().parents[1]
WARN_S = 3.0
LATE_S = "7"  # rank 2 sleeps this long before step 3: past the warn + 2 s bound, so still late when named


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCDOCTOR_")}
    env.update(extra)
    return env


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=_clean_env(**env))


# --- the hook -------------------------------------------------------------------------------------------


def test_the_shipped_and_the_installed_hook_are_the_one_line_of_autowatch() -> None:
    assert (ROOT / "src" / PTH_NAME).read_text().strip() == PTH_LINE
    installed = Path(sysconfig.get_paths()["purelib"]) / PTH_NAME
    assert installed.is_file(), "make venv installs the package with its start-up hook"
    assert installed.read_text().strip() == PTH_LINE


@pytest.mark.parametrize("value", ["", "0", "no", "off"])
def test_switched_off_the_hook_imports_nothing(value: str) -> None:
    env = {"SYNCDOCTOR_WATCH": value} if value else {}
    out = _python("import sys; print(sorted(m for m in sys.modules if m.startswith('syncdoctor')))", **env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_switched_on_the_hook_waits_for_torch_distributed_without_importing_torch() -> None:
    code = ("import sys; from syncdoctor.autowatch import installed; "
            "print(installed(), 'torch' in sys.modules, type(sys.meta_path[0]).__name__)")
    out = _python(code, SYNCDOCTOR_WATCH="1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "_AfterImport"]


def test_init_process_group_is_wrapped_under_every_name_and_starts_one_watcher(tmp_path: Path) -> None:
    code = f"""
import json, threading, torch.distributed as dist
from torch.distributed import init_process_group
from torch.distributed import distributed_c10d as c10d
import syncdoctor.watch
wrapped = [getattr(f, "__syncdoctor_autowatch__", False) for f in (dist.init_process_group, init_process_group,
           c10d.init_process_group)]
before = syncdoctor.watch.current()
dist.init_process_group("gloo", init_method="file://{tmp_path}/rendezvous", rank=0, world_size=1)
watcher = syncdoctor.watch.current()
threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("syncdoctor-watch"))
again = syncdoctor.watch.start()
print(json.dumps({{"wrapped": wrapped, "before": before is None, "started": watcher is not None and watcher.started,
                  "threads": threads, "same": again is watcher}}))
dist.destroy_process_group()
"""
    out = _python(code, SYNCDOCTOR_WATCH="1", SYNCDOCTOR_WATCH_STACKS="0")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["wrapped"] == [True, True, True]
    assert result["before"] and result["started"] and result["same"], result
    assert "syncdoctor-watch-sampler" in result["threads"], result


def test_a_bad_setting_is_one_line_and_the_job_runs_unwatched(tmp_path: Path) -> None:
    code = f"""
import torch.distributed as dist, syncdoctor.watch
dist.init_process_group("gloo", init_method="file://{tmp_path}/rendezvous", rank=0, world_size=1)
print("watcher", syncdoctor.watch.current())
dist.destroy_process_group()
"""
    out = _python(code, SYNCDOCTOR_WATCH="1", SYNCDOCTOR_WATCH_WARN_AFTER="soon")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "watcher None"
    lines = [line for line in out.stderr.splitlines() if "syncdoctor" in line]
    assert lines == ["syncdoctor: SYNCDOCTOR_WATCH=1 but not watching this rank: SYNCDOCTOR_WATCH_WARN_AFTER='soon' "
                     "is not a valid float"], out.stderr
    assert "Traceback" not in out.stderr


# --- syncdoctor run: pure parts -------------------------------------------------------------------------


def test_run_options_are_the_watch_variables() -> None:
    assert option_name("warn_after_s") == "--warn-after"
    assert option_name("events_file") == "--events-file"
    assert option_name("fail_fast") == "--fail-fast"
    env = watch_env({"warn_after_s": "3", "fail_fast": True, "events_file": "/x/e.jsonl", "dead_after_s": None},
                    {"PATH": "/bin"})
    assert env == {"PATH": "/bin", "SYNCDOCTOR_WATCH": "1", "SYNCDOCTOR_WATCH_WARN_AFTER": "3",
                   "SYNCDOCTOR_WATCH_FAIL_FAST": "1", "SYNCDOCTOR_WATCH_EVENTS_FILE": "/x/e.jsonl"}


def test_run_names_the_option_of_a_bad_value() -> None:
    with pytest.raises(UsageError, match=r"^syncdoctor run: --dead-after '-1': must be >= 0, got -1.0$"):
        watch_env({"dead_after_s": "-1"}, {})
    with pytest.raises(UsageError, match=r"^syncdoctor run: --metrics-port 'x': must be a TCP port number"):
        watch_env({"metrics_port": "x"}, {})
    assert watch_env({"metrics_port": "9400"}, {})["SYNCDOCTOR_METRICS_PORT"] == "9400"


def _syncdoctor(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "syncdoctor", *args], capture_output=True, text=True, timeout=300,
                          env=_clean_env(**env))


def test_run_passes_the_environment_and_the_exit_code_through() -> None:
    out = _syncdoctor("run", "--warn-after", "3", "--no-stacks", "--", "sh", "-c",
                      'echo "$SYNCDOCTOR_WATCH $SYNCDOCTOR_WATCH_WARN_AFTER $SYNCDOCTOR_WATCH_STACKS"; exit 7')
    assert out.returncode == 7, out.stderr
    assert out.stdout.strip() == "1 3 0"
    killed = _syncdoctor("run", "--", "sh", "-c", "kill -TERM $$")
    assert killed.returncode == 128 + 15


def test_run_usage_errors_exit_2_without_a_traceback() -> None:
    for args, said in ((["run"], "no command"), (["run", "--warn-after", "x", "--", "true"], "--warn-after 'x'"),
                       (["run", "--", "no-such-command-here"], "command not found: no-such-command-here")):
        out = _syncdoctor(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert said in out.stderr and "Traceback" not in out.stderr, out.stderr


# --- real jobs under torchrun ---------------------------------------------------------------------------


def _torchrun(script: str, *args: str, nproc: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            str(DATA / script), *args]


def _lines(text: str) -> list[dict[str, Any]]:
    """The flat JSON objects the processes print (several share one stream: lines may run into each other)."""
    out = []
    for found in re.findall(r"\{[^{}]*\}", text):
        try:
            out.append(json.loads(found))
        except json.JSONDecodeError:
            continue
    return out


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _check_late_rank_named_alone(stdout: str, events_file: Path) -> None:
    lines = _lines(stdout)
    events = _events(events_file)
    late_step = 3
    others_waiting = max(d["at"] for d in lines if d.get("step") == late_step and d["rank"] != 2)
    first = next((e for e in events if e["code"] == "W101"), None)
    assert first is not None, watcher_said(events, stdout)
    assert first["ranks"] == [2], first
    assert not [e for e in events if e["code"] == "W101" and e["ranks"] != [2]], events
    delay = first["at"] - others_waiting
    print(f"zero-code watch: late rank 2 named {delay:.2f} s after the others waited (warn after {WARN_S} s)")
    assert delay <= WARN_S + 2.0, delay
    threads = {d["rank"]: d["watch_threads"] for d in lines if "watch_threads" in d}
    assert sorted(threads) == [0, 1, 2] and all("syncdoctor-watch-sampler" in t for t in threads.values()), threads


@pytest.mark.slow
def test_syncdoctor_run_names_the_late_rank_of_an_unmodified_script(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    out = _syncdoctor("run", "--warn-after", str(WARN_S), "--events-file", str(events), "--",
                      *_torchrun("late_rank.py", "2", "3", LATE_S, nproc=3))
    assert out.returncode == 0, out.stderr[-3000:]
    _check_late_rank_named_alone(out.stdout, events)


@pytest.mark.slow
def test_the_environment_switch_alone_names_the_late_rank(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    out = subprocess.run(_torchrun("late_rank.py", "2", "3", LATE_S, nproc=3), capture_output=True, text=True,
                         timeout=300, env=_clean_env(SYNCDOCTOR_WATCH="1", SYNCDOCTOR_WATCH_WARN_AFTER=str(WARN_S),
                                                     SYNCDOCTOR_WATCH_EVENTS_FILE=str(events)))
    assert out.returncode == 0, out.stderr[-3000:]
    _check_late_rank_named_alone(out.stdout, events)


@pytest.mark.slow
def test_no_watcher_in_processes_that_are_not_ranks_and_never_two(tmp_path: Path) -> None:
    """One job for both cases: rank 0 relies on the start-up hook alone, rank 1's script also calls
    syncdoctor.watch.start() itself (before init_process_group); each has exactly one watcher."""
    out = subprocess.run(_torchrun("children.py", "explicit", "1", nproc=2), capture_output=True, text=True,
                         timeout=300, env=_clean_env(SYNCDOCTOR_WATCH="1", SYNCDOCTOR_WATCH_STACKS="0"))
    assert out.returncode == 0, out.stderr[-3000:]
    lines = _lines(out.stdout)
    ranks = [d for d in lines if d.get("who") == "rank"]
    assert sorted(d["rank"] for d in ranks) == [0, 1], lines
    for rank in ranks:  # one watcher: one sampler and one publisher thread
        assert rank["threads"].count("syncdoctor-watch-sampler") == 1, rank
        assert rank["threads"].count("syncdoctor-watch-publisher") == 1, rank
    hook_only, script_also_starts = sorted(ranks, key=lambda d: d["rank"])
    assert "same_watcher" not in hook_only, hook_only  # rank 0 did not call start() itself
    assert script_also_starts["same_watcher"] is True, script_also_starts  # rank 1's start() is the hook's watcher
    workers = [d for d in lines if str(d.get("who", "")).startswith("dataloader")]
    assert len(workers) == 4 and all(d["threads"] == [0, 0] for d in workers), workers
    assert sorted((d["who"], d["rank"]) for d in workers) == [
        ("dataloader-fork", 0), ("dataloader-fork", 1), ("dataloader-spawn", 0), ("dataloader-spawn", 1)], workers
    subprocesses = [d for d in lines if d.get("who") == "subprocess"]
    assert len(subprocesses) == 2 and all(d["threads"] == [] for d in subprocesses), subprocesses
