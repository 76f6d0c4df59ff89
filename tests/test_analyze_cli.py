"""``syncdoctor analyze``: the answer first, JSON schema, exit codes (0 found, 1 not found, 2 usage)."""

from __future__ import annotations

import json

from analyze_helpers import FIXTURES

LAB = FIXTURES / "lab"


def test_answer_first_then_ranks_and_timeline(run_cli) -> None:
    result = run_cli("analyze", str(LAB / "crash"))
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0].startswith("Root cause: rank 3 on host1 died")
    assert lines[1].strip() == "culprit:  rank 3 on host1"
    assert "A003 rank-crashed" in lines[2]
    assert any(line.strip().startswith("what to change:") for line in lines[:8])
    assert "injected fault: rank 3 crashes at step 3" in result.out
    order = [result.out.index(word) for word in ("Root cause", "evidence:", "Ranks (4", "Timeline")]
    assert order == sorted(order)
    assert "rank3.log:25" in result.out


def test_a_culprit_named_by_its_host_alone(run_cli, tmp_path) -> None:
    """A failure the lines tie to a host and no rank: the culprit line names the host as a host, not "on GPU9"."""
    # real: pytorch/pytorch#52916 (r14aj)
    (tmp_path / "node.log").write_text(
        "GPU9:10330:10330 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\n"
        "GPU9:10330:10330 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>\n"
        "GPU9:10330:10399 [0] NCCL INFO Call to connect returned Connection refused, retrying\n")
    result = run_cli("analyze", str(tmp_path))
    lines = result.out.splitlines()
    assert lines[0].startswith("Root cause: host GPU9 advertised a loopback"), lines[0]
    assert "(NCCL_SOCKET_IFNAME=lo, set by the environment, names the loopback)" in lines[0]
    assert "set by environment to lo" in result.out.split("evidence:")[1].split("\n")[2]  # the choice, cited first
    assert lines[1].strip() == "culprit:  host GPU9"
    assert lines[2].strip().startswith("category: A008") and lines[2].rstrip().endswith("explain A008)"), lines[2]


def test_no_root_cause_exits_1(run_cli, tmp_path) -> None:
    for rank in range(3):
        (tmp_path / f"rank{rank}.log").write_text(
            f"[rank{rank}]: RuntimeError: [../gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms for "
            "recv operation to complete\n")
    result = run_cli("analyze", str(tmp_path))
    assert result.code == 1
    assert result.out.startswith("No root cause found.")
    assert "A019" in result.out
    # the second line says what the leads below are, the strongest first, not that nothing was found
    second = result.out.splitlines()[1]
    assert "lead below, none strong enough for a verdict" in second
    assert "A019 unexplained-collective-timeout" in second and "culprit not named by the logs" in second


def test_json_document(run_cli) -> None:
    result = run_cli("analyze", str(LAB / "late"), "--json")
    assert result.code == 0
    doc = json.loads(result.out)
    assert doc["schema"] == "syncdoctor.analyze/1" and doc["root_cause_found"]
    root = doc["root_cause"]
    assert root["category"] == "lagging-rank" and root["culprit_ranks"] == [3] and root["culprit_hosts"] == ["host1"]
    first = doc["hypotheses"][0]
    assert first["hosts"] == ["host1"] and all({"file", "line", "text"} <= set(e) for e in first["evidence"])
    assert {r["rank"]: r["state"] for r in doc["ranks"]} == {0: "timed-out", 1: "timed-out", 2: "timed-out",
                                                           3: "terminated"}
    assert doc["world_size"] == 4 and doc["hosts"] == {"host0": [0, 1], "host1": [2, 3]}
    assert doc["findings"][0]["code"] == "A001"
    assert all({"rank", "host", "kind", "file", "line"} <= set(row) for row in doc["timeline"])
    assert doc["stats"]["lines"] > 0


def test_max_evidence(run_cli) -> None:
    doc = json.loads(run_cli("analyze", str(LAB / "crash"), "--json", "--max-evidence", "1").out)
    assert len(doc["hypotheses"][0]["evidence"]) == 1 and doc["hypotheses"][0]["evidence_total"] > 1
    text = run_cli("analyze", str(LAB / "crash"), "--max-evidence", "1").out
    assert "more (--max-evidence" in text


def test_usage_errors_exit_2(run_cli, tmp_path) -> None:
    assert run_cli("analyze").code == 2
    missing = run_cli("analyze", str(tmp_path / "nope.log"))
    assert missing.code == 2 and "no such file" in missing.out
    assert run_cli("analyze", str(LAB / "crash"), "--max-evidence", "-1").code == 2


def test_unreadable_and_junk_inputs_do_not_stop_the_analysis(run_cli, tmp_path) -> None:
    (tmp_path / "rank0.pkl").write_bytes(b"\x80\x04garbage")
    (tmp_path / "junk.bin").write_bytes(bytes(range(256)) * 100)
    result = run_cli("analyze", str(tmp_path), str(LAB / "sigkill"))
    assert result.code == 0 and "Root cause: rank 2 on host1 was killed by SIGKILL" in result.out
    assert "note:" in result.out


def test_explain_every_analyze_code(run_cli) -> None:
    for number in range(1, 20):
        result = run_cli("explain", f"A{number:03d}")
        assert result.code == 0 and "## Fix" in result.out


def test_analyze_works_without_torch() -> None:
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None\n"  # any `import torch` now raises ImportError
            "from syncdoctor.cli.main import main\n"
            f"sys.exit(main(['analyze', {str(LAB / 'crash')!r}, '--json']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["root_cause"]["culprit_ranks"] == [3]


def test_one_name_per_code_in_json_terminal_and_explain(run_cli, tmp_path) -> None:
    from syncdoctor.analyze.model import LEGACY_CATEGORY_NAMES, Category
    from syncdoctor.kb import get_rule

    (tmp_path / "rank0.log").write_text(
        "host0:1:1 [0] bootstrap.cc:37 NCCL WARN Bootstrap : no socket interface found\n")
    result = run_cli("analyze", str(tmp_path), "--json")
    doc = json.loads(result.out)
    root = doc["root_cause"]
    assert root["code"] == "A009" and root["category"] == get_rule("A009").name == "socket-interface-missing"
    assert doc["findings"][0]["name"] == root["category"]
    text = run_cli("analyze", str(tmp_path)).out
    assert "A009 socket-interface-missing" in text
    for category in Category:  # every category is its page's name
        assert get_rule(category.value).name == category.value
    for old, new in LEGACY_CATEGORY_NAMES.items():  # files in the earlier form are still read
        assert Category(old).value == new
