from syncdoctor.redact import REDACTED, is_secret_name, redact_env, redact_text


def test_secret_names() -> None:
    for name in ("HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GITHUB_TOKEN", "NCCL_PSK"):
        assert is_secret_name(name), name
    for name in ("NCCL_SOCKET_IFNAME", "MASTER_ADDR", "NCCL_IB_HCA", "RANK"):
        assert not is_secret_name(name), name


def test_redact_env_and_text() -> None:
    env = redact_env({"HF_TOKEN": "hf_abcdef123456", "MASTER_ADDR": "10.0.0.1"})
    assert env == {"HF_TOKEN": REDACTED, "MASTER_ADDR": "10.0.0.1"}
    text = redact_text("export HF_TOKEN=hf_abcdef123456 MASTER_ADDR=10.0.0.1 Authorization: Bearer abcdefghijklmnop")
    assert "hf_abcdef123456" not in text
    assert "abcdefghijklmnop" not in text
    assert "MASTER_ADDR=10.0.0.1" in text
