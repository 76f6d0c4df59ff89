"""``check``'s pipeline as a library (syncdoctor.checks.pipeline): the same findings for every caller."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from host_fakes import build_node
from syncdoctor.checks.pipeline import (
    env_findings,
    host_findings,
    ib_ports_unknown,
    merge_findings,
    run_check,
    scrub,
    secret_values,
)
from syncdoctor.checks.preflight import master_from
from syncdoctor.host.collect import collect_host_facts
from syncdoctor.host.types import HostFacts


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("NCCL_", "GLOO_", "TORCH_", "MASTER_")) or name in ("WORLD_SIZE", "LOCAL_WORLD_SIZE"):
            monkeypatch.delenv(name)
    return build_node(tmp_path / "node", hostname="10.0.0.7")


def test_run_check_is_env_rules_plus_host_rules(node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "nosuch")
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.7")
    monkeypatch.setenv("MASTER_PORT", "29500")
    result = run_check(root=node, network=False)
    env = result.env
    facts = result.pre.facts
    by_env = env_findings(env, facts, nccl_version=facts.versions.nccl, torch_version=facts.versions.torch,
                          sources=result.given.sources)
    by_host = host_findings(facts, env, master=master_from(env), route=result.pre.route)
    assert result.findings == merge_findings(env, [*by_env, *result.given.findings], by_host)
    assert any(f.evidence.get("variable") == "NCCL_SOCKET_IFNAME" or "NCCL_SOCKET_IFNAME" in f.evidence
               for f in result.findings)


def test_unknown_facts_are_not_passed_as_empty() -> None:
    blind = HostFacts(unreadable=("IB/RoCE ports: unexpected error (OSError: boom)",))
    assert ib_ports_unknown(blind)
    # no interfaces and no IB ports known: the rules that need them are skipped, not failed
    assert env_findings({"NCCL_SOCKET_IFNAME": "eth9", "NCCL_IB_HCA": "mlx5_9"}, blind, nccl_version=None,
                        torch_version=None) == env_findings(
        {"NCCL_SOCKET_IFNAME": "eth9", "NCCL_IB_HCA": "mlx5_9"}, None, nccl_version=None, torch_version=None)


def test_secrets_are_scrubbed_everywhere() -> None:
    secrets = secret_values({"HF_TOKEN": "hf_abcdefgh", "SHORT_KEY": "abc"})
    assert secrets == ["hf_abcdefgh"]
    assert scrub({"a": ["x hf_abcdefgh y"]}, secrets) == {"a": ["x <redacted> y"]}


def test_pipeline_reads_a_fake_node_like_collect(node: Path) -> None:
    # the free bytes of the filesystem under the fake /dev/shm (the test machine's /tmp) move between two reads
    def settled(facts: HostFacts) -> HostFacts:
        return replace(facts, limits=replace(facts.limits, shm_free_bytes=None))

    assert settled(run_check(root=node, network=False).pre.facts) == settled(collect_host_facts(node))
