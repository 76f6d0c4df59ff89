"""`syncdoctor recommend` on probe reports of real lab runs: a healthy cluster, a slow link, a late host.

The same function records the reports kept in tests/data/probe (the fast tests in test_recommend.py read
those): ``sudo .venv/bin/python tests/test_recommend_lab.py tests/data/probe``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import requires_root

# Three probe runs; 35-110 s in practice, far longer when the 2 cores are shared with other jobs.
pytestmark = [requires_root, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(900)]

PROBE = ["-m", "syncdoctor", "probe", "--sizes", "64K,4M", "--ops", "all_reduce", "--link-bytes", "1M",
         "--iters", "5", "--join-timeout", "120", "--stage-timeout", "120", "--no-tables"]
LATE_S = 8.0
SCENARIOS = {
    "healthy": {},
    "slow_link": {"throttle": "40mbit"},
    "late_host": {"host_env": {"host1": {"SYNCDOCTOR_PROBE_START_DELAY_S": str(LATE_S)}}},
}


def record_reports(lab, out_dir: Path, run_root: Path) -> dict[str, Path]:
    """Run the probe for each scenario on a 2-host lab (1 rank per host); returns the report paths."""
    reports = {}
    for name, scenario in SCENARIOS.items():
        path = out_dir / f"{name}.json"
        if "throttle" in scenario:
            lab.throttle("host1", scenario["throttle"])
        try:
            job = lab.torchrun([*PROBE, "--json", str(path)], procs_per_host=1, run_dir=run_root / name,
                               host_env=scenario.get("host_env"))
            result = job.wait(timeout=280)
        finally:
            if "throttle" in scenario:
                lab.unthrottle("host1")
        if result.timed_out or not path.exists():
            raise RuntimeError(f"probe run {name} failed:\n{result.summary()}")
        reports[name] = path
    return reports


def test_recommend_on_lab_probe_reports(lab_factory, tmp_path: Path, run_cli) -> None:
    lab = lab_factory(2)
    reports = record_reports(lab, tmp_path, tmp_path / "runs")
    out = {}
    for name, path in reports.items():
        result = run_cli("recommend", str(path), "--json")
        assert result.code == 0, result.out
        out[name] = json.loads(result.out)
    healthy, slow, late = out["healthy"], out["slow_link"], out["late_host"]
    # a slow link raises the steady-state timeout, through the collective term, and only that
    assert slow["steady_timeout_s"] > healthy["steady_timeout_s"]
    assert "slowest rank's bandwidth" in slow["steady_terms"][0]["why"]
    assert slow["steady_terms"][0]["seconds"] > 20 * healthy["steady_terms"][0]["seconds"]
    # a late host raises the start-up timeout, through the skew term, naming the host
    assert late["startup_timeout_s"] > healthy["startup_timeout_s"]
    skew_term = late["startup_terms"][1]
    assert "host1's ranks arrived last" in skew_term["why"] and skew_term["seconds"] >= 4 * (LATE_S - 1)
    # every recommendation names the interface each node used
    assert all(o["env"].get("NCCL_SOCKET_IFNAME") == "=eth0" for o in out.values()), out


if __name__ == "__main__":  # record the fixtures: python tests/test_recommend_lab.py tests/data/probe
    import tempfile

    from syncdoctor.testing.lab import Lab

    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, Lab(hosts=2) as lab:
        for name, path in record_reports(lab, target, Path(tmp)).items():
            print(name, path)
