"""Secrets never leave the program: random secret-named variables, their values copied into other variables
(an interface name, a log line, an env file), go through every command's outputs (terminal, JSON, HTML, env
files, the watcher's events and log lines) and none of their values comes out."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncdoctor.redact import REDACTED, RedactingFile, forget_secrets, redact_text, remember_secrets

NAMES = st.sampled_from(["MY_TOKEN", "HF_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "WANDB_API_KEY",
                         "OPENAI_API_KEY", "SLACK_WEBHOOK_SECRET"])
VALUES = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=8, max_size=24)


@pytest.fixture(autouse=True)
def _forget() -> object:
    forget_secrets()
    yield
    forget_secrets()


def _leaks(value: str, *texts: str) -> list[str]:
    return [t[max(0, t.find(value) - 80):t.find(value) + 80] for t in texts if value in t]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES, value=VALUES)
def test_check_terminal_json_and_env_file(run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path_factory,
                                          name: str, value: str) -> None:
    tmp = tmp_path_factory.mktemp("check")
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", value)  # a secret's value copied into an interface name
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", value)
    env_file = tmp / "job.env"
    env_file.write_text(f"export OTHER_SECRET_TOKEN={value}x\nexport NCCL_IB_HCA={value}x\nMASTER_ADDR={value}x\n")
    outputs = [run_cli("check").out, run_cli("check", "--json").out, run_cli("check", "--show-env").out,
               run_cli("check", "--env-file", str(env_file)).out]
    assert not _leaks(value, *outputs)
    forget_secrets()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES, value=VALUES)
def test_analyze_terminal_json_html_and_report(run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path_factory,
                                               name: str, value: str) -> None:
    tmp = tmp_path_factory.mktemp("analyze")
    monkeypatch.setenv(name, value)
    log = tmp / "rank0.log"
    log.write_text(f"host0:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to {value}\n"
                   f"host0:1:1 [0] bootstrap.cc:37 NCCL WARN Bootstrap : no socket interface found\n"
                   f"[rank0]: RuntimeError: cannot reach https://user:{value}@example.com/x\n")
    page = tmp / "verdict.html"
    text = run_cli("analyze", str(log), "--html", str(page)).out
    doc = run_cli("analyze", str(log), "--json").out
    (tmp / "verdict.json").write_text(doc)
    report = tmp / "report.html"
    run_cli("report", str(tmp / "verdict.json"), "-o", str(report))
    assert REDACTED in text or "&lt;redacted&gt;" in page.read_text()  # the value was there to redact
    assert not _leaks(value, text, doc, page.read_text(), report.read_text())
    json.loads(doc)  # still a valid document
    forget_secrets()


def test_recommend_env_file_and_terminal(run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # the lab report's interface is eth0: a token that happens to hold the same text must not come out
    monkeypatch.setenv("MY_TOKEN", "eth0")
    report = Path(__file__).parent / "data" / "probe" / "slow_link.json"
    emitted = tmp_path / "job.env"
    out = run_cli("recommend", str(report), "--emit-env", str(emitted)).out
    assert "NCCL_SOCKET_IFNAME=" in out and REDACTED in out
    assert not _leaks("eth0", out, emitted.read_text(), (tmp_path / "job.env.py").read_text())


def test_the_watchers_events_and_log_lines(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from syncdoctor.watch.events import Event
    from syncdoctor.watch.sinks import JsonlSink, LogSink

    value = "hunter2hunter2"
    remember_secrets({"DB_PASSWORD": value})
    event = Event("W101", "warning", f"rank 3 is late; it is in connect(password={value})", ranks=(3,),
                  detail={"where": f"login ({value})"}, key="k")
    JsonlSink(tmp_path / "events.jsonl").emit(event)
    with caplog.at_level(logging.WARNING):
        LogSink().emit(event)
    assert not _leaks(value, (tmp_path / "events.jsonl").read_text(), caplog.text)
    assert REDACTED in caplog.text


def test_short_values_are_redacted_as_whole_values_only() -> None:
    remember_secrets({"MY_PASSWORD": "x"})
    assert redact_text("GLOO_SOCKET_IFNAME=x, no interface 'x'; 4 x 5") == \
        f"GLOO_SOCKET_IFNAME={REDACTED}, no interface '{REDACTED}'; 4 x 5"


def test_the_redacting_stream_is_still_the_terminal_it_wraps(tmp_path: Path) -> None:
    remember_secrets({"MY_TOKEN": "abcdefgh1234"})
    with (tmp_path / "out.txt").open("w") as handle:
        stream = RedactingFile(handle)
        stream.write("token abcdefgh1234 here\n")
        assert stream.isatty() is False and stream.fileno() == handle.fileno()
    assert (tmp_path / "out.txt").read_text() == f"token {REDACTED} here\n"


def test_probe_terminal_json_html_and_env_file(run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    value = "Zq8vL2mN4pR7sT1u"
    monkeypatch.setenv("WANDB_API_KEY", value)
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", value)  # copied into a variable the probe reports (gloo ignores it)
    out = run_cli("probe", "--local", "2", "--quick", "--sizes", "4K", "--ops", "all_reduce", "--link-bytes", "1M",
                  "--json", str(tmp_path / "p.json"), "--html", str(tmp_path / "p.html"),
                  "--emit-env", str(tmp_path / "p.env")).out
    written = [p.read_text() for p in sorted(tmp_path.iterdir()) if p.is_file()]
    assert len(written) == 4  # json, html, env file and its snippet
    assert "NCCL_SOCKET_IFNAME" in (tmp_path / "p.json").read_text()  # the variable is reported, its value is not
    assert not _leaks(value, out, *written)
