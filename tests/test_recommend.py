"""`syncdoctor recommend`: the pure derivation on plain data, the probe-report reader on reports recorded
from real lab runs (tests/data/probe, see test_recommend_lab.py), the CLI, and the emitted snippet
actually applying the timeouts to a real process group."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from syncdoctor.errors import InputError
from syncdoctor.recommend import DEFAULT_BUCKET_BYTES, Measurements, measurements_from_probe, recommend

DATA = Path(__file__).parent / "data" / "probe"


def _report(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _from(name: str, **kw: float) -> object:
    return recommend(measurements_from_probe(_report(name), name, **kw))


def _worst_all_reduce_bw(doc: dict) -> float:
    rows = [r for r in doc["collectives"] if r["op"] == "all_reduce"]
    largest = max(rows, key=lambda r: r["size"])
    return largest["size"] / largest["time_max_s"]


def test_lab_reports_give_different_justified_numbers() -> None:
    healthy, slow, late = _from("healthy"), _from("slow_link"), _from("late_host")
    assert (healthy.startup_timeout_s, healthy.steady_timeout_s) != (slow.startup_timeout_s, slow.steady_timeout_s)
    assert slow.steady_timeout_s > healthy.steady_timeout_s  # the slow link
    assert late.startup_timeout_s > healthy.startup_timeout_s  # the late host
    # the collective term is recomputed here from the report's own rows
    for name, result in (("healthy", healthy), ("slow_link", slow)):
        bw = _worst_all_reduce_bw(_report(name))
        assert result.steady_terms[0].seconds == pytest.approx(10 * DEFAULT_BUCKET_BYTES / bw, rel=0.01)
        assert f"{bw / 1e6:.3g} MB/s" in result.steady_terms[0].why
    skew = max(s["last_s"] for s in _report("late_host")["clock"]["skew"])
    assert late.startup_terms[1].seconds == pytest.approx(4 * skew, abs=0.01)
    assert "host1's ranks arrived last" in late.startup_terms[1].why and skew > 6
    assert healthy.env == {"NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0"}
    assert "reach the master" in healthy.env_reasons["NCCL_SOCKET_IFNAME"]


def test_user_measurements_replace_the_allowances() -> None:
    result = _from("healthy", load_time_s=45.0, step_time_s=2.0)
    assert [t.measured for t in result.startup_terms] == [True, True, False]
    assert result.startup_terms[0].seconds == 90.0 and result.steady_terms[1].seconds == 6.0
    assert result.startup_timeout_s == 160  # 90 + 4 x skew + 60, rounded up to 10 s
    assert "pass --load-time" in _from("healthy").startup_terms[0].why


def test_floors_rounding_and_the_steady_timeout_never_exceeding_start_up() -> None:
    bare = recommend(Measurements(source="nothing"))
    assert (bare.startup_timeout_s, bare.steady_timeout_s) == (660, 60)  # 600 + 60; 30 + 30
    assert [t.measured for t in bare.steady_terms] == [False, False]
    assert any("start-up skew not measured" in n for n in bare.notes)
    quick = recommend(Measurements(source="x", nodes=2, startup_skew_s=0.0, load_time_s=1.0, step_time_s=0.1,
                                   all_reduce_bytes=1 << 20, all_reduce_worst_bw=1e9))
    assert (quick.startup_timeout_s, quick.steady_timeout_s) == (120, 60)
    slow = recommend(Measurements(source="x", nodes=2, load_time_s=1.0, slowest_link_bw=1e6, slowest_link="a - b"))
    assert "twice a 25M gradient bucket over the slowest link (a - b, 1 MB/s)" in slow.steady_terms[0].why
    assert slow.steady_timeout_s == 560 and slow.startup_timeout_s == 560
    assert "raised to the steady-state timeout" in slow.startup_rule


def test_reader_rejects_what_is_not_a_probe_report() -> None:
    with pytest.raises(InputError, match=r"schema syncdoctor\.probe/1"):
        measurements_from_probe({"schema": "syncdoctor.check/1"}, "x.json")
    with pytest.raises(InputError, match="JSON object"):
        measurements_from_probe([], "x.json")  # type: ignore[arg-type]
    partial = measurements_from_probe({"schema": "syncdoctor.probe/1", "collectives": "garbage"}, "p")
    assert partial.all_reduce_bytes is None and "did not finish" in partial.notes[0]


def test_cli_text_and_emitted_files(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "job.env"
    result = run_cli("recommend", str(DATA / "slow_link.json"), "--step-time", "1.5", "--emit-env", str(target))
    assert result.code == 0, result.out
    expected = _from("slow_link", step_time_s=1.5)
    assert f"steady-state timeout: {expected.steady_timeout_s} s" in result.out
    assert f"= {expected.steady_terms[0].seconds:g} s: 10 x " in result.out
    assert "+ 4.5 s: 3 x the measured step time 1.5 s" in result.out
    assert "NCCL_SOCKET_IFNAME==eth0   # the interface every node used to reach the master" in result.out
    env = dict(line.split("=", 1) for line in target.read_text().splitlines() if line and not line.startswith("#"))
    assert env == {"NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0",
                   "SYNCDOCTOR_STARTUP_TIMEOUT_S": str(expected.startup_timeout_s),
                   "SYNCDOCTOR_STEADY_TIMEOUT_S": str(expected.steady_timeout_s)}
    assert (tmp_path / "job.env.py").read_text() == expected.python_snippet().replace(
        "slow_link", f"the probe report {DATA / 'slow_link.json'}")


def test_cli_errors(run_cli, tmp_path: Path) -> None:
    assert run_cli("recommend", str(tmp_path / "none.json")).code == 3
    (tmp_path / "bad.json").write_text("{not json")
    bad = run_cli("recommend", str(tmp_path / "bad.json"))
    assert bad.code == 3 and "is not JSON" in bad.out
    assert run_cli("recommend", str(DATA / "healthy.json"), "--step-time", "-1").code == 2
    assert run_cli("recommend", str(DATA / "healthy.json"), "--bucket-bytes", "lots").code == 2


def test_the_snippet_applies_both_timeouts(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from syncdoctor.probe.local import free_port

    snippet = recommend(Measurements(source="test", load_time_s=10.0, step_time_s=100.0)).python_snippet()
    check = (
        "import torch\n"
        "b = dist.group.WORLD._get_backend(torch.device('cpu'))\n"
        "print('STEADY', b.options._timeout.total_seconds())\n"
        "dist.destroy_process_group()\n"
    )
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    (tmp_path / "apply.py").write_text(snippet + check)
    done = subprocess.run([sys.executable, str(tmp_path / "apply.py")], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "STEADY 330.0" in done.stdout  # 30 s collective allowance + 3 x the 100 s step


def test_without_a_report_it_measures_this_host(run_cli) -> None:
    result = run_cli("recommend", "--json")
    assert result.code == 0, result.out
    data = json.loads(result.out[result.out.index("{"):])
    assert data["source"].startswith("a quick local measurement")
    assert data["steady_terms"][0]["measured"] is True and "2 ranks" in data["steady_terms"][0]["why"]
    assert any("measured on one node" in note for note in data["notes"])


def test_a_real_nccl_report_from_a_gpu(run_cli, tmp_path: Path) -> None:
    # `syncdoctor probe --backend nccl --local 1 --quick` on one H200 (scripts/gpu-check.sh, NCCL 2.28.9)
    report = json.loads((DATA / "nccl_h200_one_rank.json").read_text())
    assert report["backend"] == "nccl" and all(s["status"] == "ok" for s in report["stages"])
    assert {c["op"] for c in report["collectives"]} == {
        "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"}
    assert all(c["wrong"] == 0 for c in report["collectives"])
    # one rank: all_reduce's bus bandwidth is 0 (factor 2(n-1)/n), broadcast's equals its algbw (factor 1)
    assert all(c["busbw"] == 0 for c in report["collectives"] if c["op"] == "all_reduce")
    assert all(c["busbw"] == c["algbw"] > 0 for c in report["collectives"] if c["op"] == "broadcast")
    assert report["facts"]["nodes"][0]["gpus"] == ["NVIDIA H200"]
    result = run_cli("recommend", str(DATA / "nccl_h200_one_rank.json"), "--json")
    assert result.code == 0
    advice = json.loads(result.out)
    assert advice["startup_timeout_s"] >= advice["steady_timeout_s"] > 0
    html = tmp_path / "probe.html"
    assert run_cli("report", str(DATA / "nccl_h200_one_rank.json"), "-o", str(html)).code == 0
    assert "NVIDIA H200" in html.read_text() and "nccl" in html.read_text()


def test_probe_and_recommend_write_the_same_snippet_for_the_same_settings(tmp_path: Path) -> None:
    """One writer for --emit-env: the probe's recommendations and `syncdoctor recommend` on the probe's report
    give the same Python (apart from the line that says who wrote it) and the same file names."""
    from syncdoctor.probe.recommend import Recommendations
    from syncdoctor.recommend import emit_paths

    expected = _from("slow_link")
    probe_side = Recommendations(env=dict(expected.env), startup_timeout_s=expected.startup_timeout_s,
                                 steady_timeout_s=expected.steady_timeout_s, backend=expected.backend)
    assert probe_side.python_snippet().splitlines()[1:] == expected.python_snippet().splitlines()[1:]
    probe_env = [line for line in probe_side.env_file().splitlines() if not line.startswith("#")]
    recommend_env = [line for line in expected.env_file().splitlines() if not line.startswith("#")]
    assert probe_env == recommend_env
    assert emit_paths(tmp_path / "probe.env") == (tmp_path / "probe.env", tmp_path / "probe.env.py")
    assert emit_paths(tmp_path / "run.py") == (tmp_path / "run.py", tmp_path / "run_timeouts.py")
