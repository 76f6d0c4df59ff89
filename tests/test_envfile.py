"""--env-file parsing (a shell's view) and NCCL config files (NCCL's view and precedence), on tmp trees."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncdoctor.checks import load_nccl_conf, parse_env_file, read_nccl_conf, validate_env
from syncdoctor.checks.envfile import parse_nccl_conf
from syncdoctor.kb import Finding, Severity

FIXTURES = Path(__file__).parent / "fixtures" / "env"


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


# -- parse_env_file ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("export A=1\nB=2 # comment\n# A=9\n", {"A": "1", "B": "2"}),
    ("export C='x y'\nexport D=\"q $C\"\n", {"C": "x y", "D": "q x y"}),
    ("export NCCL_SOCKET_IFNAME=\\\neth0\n", {"NCCL_SOCKET_IFNAME": "eth0"}),
    ("NCCL_DEBUG=INFO torchrun train.py --nnodes 2\n", {"NCCL_DEBUG": "INFO"}),
    ("env NCCL_DEBUG=WARN GLOO_SOCKET_IFNAME=eth0 python x.py\n", {"NCCL_DEBUG": "WARN", "GLOO_SOCKET_IFNAME": "eth0"}),
    ("setenv NCCL_DEBUG INFO\n", {"NCCL_DEBUG": "INFO"}),
    ("declare -x NCCL_P2P_LEVEL=NVL\ndeclare LOCAL_ONLY=1\n", {"NCCL_P2P_LEVEL": "NVL"}),
    ("IFACE=eth0\nexport NCCL_SOCKET_IFNAME=${IFACE}\n", {"IFACE": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}),
    ("export NCCL_DEBUG=${LEVEL:-WARN}\n", {"NCCL_DEBUG": "WARN"}),
    ("export A=1; export B=2 && echo hi\n", {"A": "1", "B": "2"}),
    ("export A=1\nexport A=2\n", {"A": "2"}),
    ("export X='it''s' Y=a\\ b Z=\"\\$HOME\"\n", {"X": "its", "Y": "a b", "Z": "$HOME"}),
    ("export PRICE=$5 EMPTY= \n", None),
    ("srun python train.py\nif [ -f x ]; then echo y; fi\n", {}),
])
def test_parse_env_file_values(text: str, expected: dict[str, str] | None) -> None:
    values, findings = parse_env_file(text)
    if expected is not None:
        assert values == expected
        assert findings == []


@pytest.mark.parametrize(("text", "title"), [
    ("export NCCL_DEBUG='INFO\nexport NCCL_IB_TIMEOUT=22\n", "unterminated single quote"),
    ('export NCCL_DEBUG="INFO\n', "unterminated double quote"),
    ("NCCL_DEBUG = INFO\n", "blanks around '='"),
    ("export NCCL-DEBUG=INFO\n", "not a valid variable name"),
    ("NCCL-DEBUG=INFO\n", "not a valid variable name"),
    ("NCCL_DEBUG= INFO\n", "blank after '='"),
    ("export NCCL_DEBUG=INFO\r\nexport NCCL_IB_TIMEOUT=22\r\n", "Windows (CRLF) line endings"),
])
def test_parse_env_file_malformed_lines(text: str, title: str) -> None:
    _, findings = parse_env_file(text)
    assert "E431" in codes(findings)
    assert any(title in f.title for f in findings if f.code == "E431"), [f.title for f in findings]


def test_unterminated_quote_does_not_swallow_the_rest() -> None:
    values, findings = parse_env_file("export A='oops\nexport NCCL_IB_TIMEOUT=22\n")
    assert values == {"NCCL_IB_TIMEOUT": "22"}
    assert findings[0].evidence["line"] == 1


def test_crlf_values_keep_the_carriage_return_like_bash() -> None:
    values, _ = parse_env_file("export NCCL_SOCKET_IFNAME=eth0\r\n")
    assert values["NCCL_SOCKET_IFNAME"] == "eth0\r"
    assert any(f.code == "E104" for f in validate_env(values))


@pytest.mark.parametrize("text", [
    "export NCCL_SOCKET_IFNAME=$IFACE\n", "export MASTER_ADDR=$(hostname -i)\n", "export MASTER_ADDR=`hostname`\n",
    "export RANK=$1\n", "export NCCL_DEBUG=${LEVEL:?unset}\n",
])
def test_unresolved_values_are_left_out_and_reported(text: str) -> None:
    values, findings = parse_env_file(text)
    assert values == {}
    assert codes(findings) == ["E432"]
    assert findings[0].severity is Severity.WARNING and "not validated" in findings[0].title


def test_clean_files_have_no_env_file_findings() -> None:
    _, findings = parse_env_file("# header\nexport NCCL_DEBUG=WARN\n\nexport GLOO_SOCKET_IFNAME=eth0\nsrun python t.py\n")
    assert findings == []


def test_job_script_fixture() -> None:
    values, findings = parse_env_file((FIXTURES / "job.sh").read_text())
    assert values["NCCL_SOCKET_IFNAME"] == "eth0"
    assert values["NCCL_IB_TIMEOUT"] == "60" and values["NCCL_IB_RETRY_CNT"] == "32"
    assert values["NCCL_DEBUG"] == "INFO" and values["NCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert "MASTER_ADDR" not in values
    assert codes(findings) == ["E432"] and "MASTER_ADDR" in findings[0].title
    checked = {f.code for f in validate_env(values, sources=dict.fromkeys(values, "env-file:job.sh"))}
    assert {"E201", "E204", "E412", "E305", "E423", "E413"} <= checked
    assert "hf_abc" not in repr([f.to_json() for f in findings])


def test_secrets_in_malformed_lines_are_redacted() -> None:
    _, findings = parse_env_file("export HF_TOKEN='hf_secretsecretsecret\n")
    assert findings and "hf_secretsecretsecret" not in repr([f.to_json() for f in findings])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("AN_=$'\"\\#{}():-; \t\n\r`x1exportsetenv")), max_size=80))
def test_parse_env_file_never_raises(text: str) -> None:
    values, findings = parse_env_file(text)
    assert isinstance(values, dict) and all(isinstance(v, str) for v in values.values())
    assert all(isinstance(f, Finding) for f in findings)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_parse_env_file_never_raises_on_any_text(text: str) -> None:
    values, findings = parse_env_file(text)
    assert isinstance(values, dict) and isinstance(findings, list)


# -- NCCL config files ------------------------------------------------------------------------------------
def _tree(tmp_path: Path, home: str | None = None, etc: str | None = None) -> tuple[Path, Path]:
    (tmp_path / "home").mkdir()
    (tmp_path / "etc").mkdir()
    if home is not None:
        (tmp_path / "home" / ".nccl.conf").write_text(home)
    if etc is not None:
        (tmp_path / "etc" / "nccl.conf").write_text(etc)
    return tmp_path / "home", tmp_path / "etc"


def test_precedence_environment_then_user_file_then_etc(tmp_path: Path) -> None:
    home, etc = _tree(tmp_path, home="A=home\nB=home\n", etc="A=etc\nB=etc\nC=etc\n")
    env, sources = load_nccl_conf({"A": "env"}, home=home, etc=etc)
    assert env == {"A": "env", "B": "home", "C": "etc"}
    assert sources == {"A": "environment", "B": str(home / ".nccl.conf"), "C": str(etc / "nccl.conf")}
    conf = read_nccl_conf({"A": "env"}, home=home, etc=etc)
    shadowed = [f for f in conf.findings if f.code == "E435"]
    assert len(shadowed) == 3 and all(f.severity is Severity.INFO for f in shadowed)
    assert conf.files == [(str(home / ".nccl.conf"), True), (str(etc / "nccl.conf"), True)]


def test_same_value_is_not_reported_as_shadowed(tmp_path: Path) -> None:
    home, etc = _tree(tmp_path, etc="NCCL_DEBUG=WARN\n")
    conf = read_nccl_conf({"NCCL_DEBUG": "WARN"}, home=home, etc=etc)
    assert conf.findings == []


def test_nccl_conf_file_replaces_the_user_file(tmp_path: Path) -> None:
    home, etc = _tree(tmp_path, home="B=home\n", etc="B=etc\n")
    custom = tmp_path / "custom.conf"
    custom.write_text("B=custom\n")
    env, sources = load_nccl_conf({"NCCL_CONF_FILE": str(custom)}, home=home, etc=etc)
    assert env["B"] == "custom" and sources["B"] == str(custom)


def test_relative_nccl_conf_file_uses_cwd(tmp_path: Path) -> None:
    home, etc = _tree(tmp_path)
    (tmp_path / "rel.conf").write_text("NCCL_DEBUG=WARN\n")
    conf = read_nccl_conf({"NCCL_CONF_FILE": "rel.conf"}, home=home, etc=etc, cwd=tmp_path)
    assert conf.env["NCCL_DEBUG"] == "WARN"


def test_nccl_conf_file_ignored_before_2_23(tmp_path: Path) -> None:
    home, etc = _tree(tmp_path, home="B=home\n")
    custom = tmp_path / "custom.conf"
    custom.write_text("B=custom\n")
    conf = read_nccl_conf({"NCCL_CONF_FILE": str(custom)}, home=home, etc=etc, nccl_version="2.21.5")
    assert conf.env["B"] == "home"
    assert [f.code for f in conf.findings] == ["E434"] and "ignored by NCCL 2.21.5" in conf.findings[0].title


@pytest.mark.parametrize("path", ["/nonexistent/nccl.conf", "~/nccl.conf"])
def test_missing_nccl_conf_file(tmp_path: Path, path: str) -> None:
    home, etc = _tree(tmp_path)
    conf = read_nccl_conf({"NCCL_CONF_FILE": path}, home=home, etc=etc)
    assert [f.code for f in conf.findings] == ["E434"]
    assert ("not expanded" in conf.findings[0].title) == ("~" in path)


def test_present_nccl_conf_file_is_not_reported(tmp_path: Path) -> None:
    home, etc = _tree(tmp_path)
    custom = tmp_path / "ok.conf"
    custom.write_text("NCCL_DEBUG=WARN\n")
    assert read_nccl_conf({"NCCL_CONF_FILE": str(custom)}, home=home, etc=etc).findings == []


def test_missing_files_and_unknown_home(tmp_path: Path) -> None:
    conf = read_nccl_conf({"X": "1"}, home=None, etc=tmp_path / "no-such-dir")
    assert conf.env == {"X": "1"} and conf.findings == []
    assert conf.files == [(str(tmp_path / "no-such-dir" / "nccl.conf"), False)]


def test_etc_may_name_the_file(tmp_path: Path) -> None:
    target = tmp_path / "nccl.conf"
    target.write_text("NCCL_DEBUG=WARN\n")
    env, _ = load_nccl_conf({}, home=tmp_path / "nohome", etc=target)
    assert env == {"NCCL_DEBUG": "WARN"}


@pytest.mark.parametrize(("line", "applied", "title"), [
    ("export NCCL_SOCKET_IFNAME=eth0", {}, "'export' is not understood"),
    ("NCCL_DEBUG = INFO", {}, "no trimming"),
    ('NCCL_SOCKET_IFNAME="eth0"', {"NCCL_SOCKET_IFNAME": '"eth0"'}, "keeps its quotes"),
    ("NCCL_DEBUG=INFO\r", {"NCCL_DEBUG": "INFO\r"}, "carriage return"),
    ("NCCL_DEBUG= INFO", {"NCCL_DEBUG": " INFO"}, "blanks around it"),
    ("NCCL_DEBUG INFO", {}, "no '='"),
    ("  # NCCL_DEBUG=INFO", {}, "indented '#'"),
    ("=INFO", {}, "empty name"),
])
def test_nccl_conf_lines_nccl_reads_differently(line: str, applied: dict[str, str], title: str) -> None:
    pairs, findings = parse_nccl_conf(line + "\n", origin="/etc/nccl.conf")
    assert dict(pairs) == applied
    assert [f.code for f in findings] == ["E433"]
    assert title in findings[0].title and findings[0].evidence["line"] == 1


def test_nccl_conf_clean_lines() -> None:
    pairs, findings = parse_nccl_conf("# site defaults\nNCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME==ens1f0\n\n")
    assert pairs == [("NCCL_DEBUG", "WARN"), ("NCCL_SOCKET_IFNAME", "=ens1f0")]
    assert findings == []


def test_conf_values_are_validated_with_their_file_as_source(tmp_path: Path) -> None:
    home, etc = _tree(tmp_path, etc='NCCL_SOCKET_IFNAME="eth0"\nNCCL_IB_TIMEOUT=60\n')
    conf = read_nccl_conf({}, home=home, etc=etc)
    findings = {f.code: f for f in validate_env(conf.env, sources=conf.sources)}
    assert findings["E104"].evidence["source"] == str(etc / "nccl.conf")
    assert findings["E201"].fix.startswith(f"in {etc / 'nccl.conf'}: NCCL_IB_TIMEOUT=22")


def test_secret_values_in_conf_are_not_shown(tmp_path: Path) -> None:
    home, etc = _tree(tmp_path, etc='NCCL_PSK="0123456789abcdef0123456789abcdef"\nNCCL_API_TOKEN=tok-123456\n')
    conf = read_nccl_conf({"NCCL_API_TOKEN": "tok-999999"}, home=home, etc=etc)
    text = repr([f.to_json() for f in conf.findings])
    assert conf.findings and "0123456789abcdef" not in text and "tok-123456" not in text and "tok-999999" not in text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_parse_nccl_conf_never_raises(text: str) -> None:
    pairs, findings = parse_nccl_conf(text)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in pairs)
    assert all(isinstance(f, Finding) for f in findings)
