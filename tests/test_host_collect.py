"""collect_host_facts on fake trees: everything read, nothing raised, unknowns listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from host_fakes import build_node, fake_resolver, fake_statvfs
from syncdoctor.host import collect
from syncdoctor.host.collect import collect_host_facts


def test_collect_realistic_node(tmp_path: Path) -> None:
    build_node(tmp_path, hostname="gpu-node-7")
    facts = collect_host_facts(
        tmp_path, resolver=fake_resolver({"gpu-node-7": ["127.0.1.1"]}), statvfs=fake_statvfs(64 << 20)
    )
    assert facts.unreadable == ()
    assert [i.name for i in facts.interfaces] == ["lo", "eth0", "docker0", "ib0", "ens1f0"]
    assert facts.interface("eth0").ipv4 == ("10.0.0.7/24",)
    assert [p.device for p in facts.ib_ports] == ["mlx5_0", "mlx5_1", "mlx5_2"]
    assert facts.limits.shm_total_bytes == 64 << 20 and facts.limits.memlock_soft_bytes == 8 << 20
    assert facts.names.hostname == "gpu-node-7" and facts.names.resolved == ("127.0.1.1",)
    assert facts.versions.python
    json.dumps(facts.to_json())  # serialisable as is


def test_collect_empty_root_lists_unknowns(tmp_path: Path) -> None:
    facts = collect_host_facts(tmp_path, resolver=fake_resolver({}), statvfs=fake_statvfs(1 << 30))
    assert facts.interfaces == () and facts.ib_ports == ()
    assert any("network interfaces" in n for n in facts.unreadable)
    assert any("memlock" in n for n in facts.unreadable)


def test_collect_survives_a_crashing_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_node(tmp_path)

    def boom(_root: Path):
        raise RuntimeError("reader bug")

    monkeypatch.setattr(collect, "read_ib_ports", boom)
    facts = collect_host_facts(tmp_path, resolver=fake_resolver({}), statvfs=fake_statvfs(1 << 30))
    assert facts.ib_ports == ()
    assert any("IB/RoCE ports: unexpected error (RuntimeError: reader bug)" in n for n in facts.unreadable)
    assert facts.interfaces  # the other readers still ran
