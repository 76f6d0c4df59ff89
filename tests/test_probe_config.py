"""Probe configuration and launcher environments: sizes, collectives, torchrun/srun/explicit launches."""

from __future__ import annotations

import pytest

from syncdoctor.errors import UsageError
from syncdoctor.probe.config import ProbeConfig, parse_bytes, parse_ops, parse_sizes
from syncdoctor.probe.launch import expand_nodelist, parse_tasks_per_node, resolve_launch
from syncdoctor.units import format_bytes


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4096", 4096), ("64K", 65536), ("16M", 16 << 20), ("1G", 1 << 30), ("1.5K", 1536), ("2MiB", 2 << 20)],
)
def test_parse_bytes(text: str, expected: int) -> None:
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "x", "-1", "0", "1.3", "4Q"])
def test_parse_bytes_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_bytes(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1K:16K", (1024, 4096, 16384)),
        ("1K:8K:2", (1024, 2048, 4096, 8192)),
        ("1K:10K", (1024, 4096)),
        ("16M,4K,4K", (4096, 16 << 20)),
        ("64K", (65536,)),
    ],
)
def test_parse_sizes(text: str, expected: tuple[int, ...]) -> None:
    assert parse_sizes(text) == expected


@pytest.mark.parametrize("text", ["16K:1K", "1K:4K:1", "1K:2K:3:4", "1K:4K:x", " "])
def test_parse_sizes_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_sizes(text)


def test_parse_ops_accepts_spellings_and_keeps_canonical_order() -> None:
    assert parse_ops("broadcast,allreduce,all-to-all") == ("all_reduce", "broadcast", "all_to_all")
    assert parse_ops("all") == ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
    with pytest.raises(UsageError, match="unknown collective"):
        parse_ops("all_reduce,scan")


def test_format_bytes() -> None:
    assert [format_bytes(v) for v in (512, 1024, 1536, 16 << 20, 1 << 30)] == ["512B", "1K", "1.5K", "16M", "1G"]


def test_config_validation_and_quick() -> None:
    with pytest.raises(UsageError):
        ProbeConfig(backend="mpi")
    with pytest.raises(UsageError):
        ProbeConfig(slow_ratio=1.5)
    quick = ProbeConfig().quickened()
    assert quick.quick and max(quick.sizes) <= 1 << 20 and quick.link_passes == 1
    assert ProbeConfig().hook_applies("all_gather@1,broadcast", "all_gather", 1)
    assert not ProbeConfig().hook_applies("all_gather@1", "all_gather", 0)
    assert ProbeConfig().hook_applies("broadcast", "broadcast", 7)
    assert not ProbeConfig().hook_applies(None, "broadcast", 0)


TORCHRUN = {
    "RANK": "3", "WORLD_SIZE": "6", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1",
    "GROUP_WORLD_SIZE": "3", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29400", "TORCHELASTIC_RUN_ID": "job7",
    "TORCHELASTIC_USE_AGENT_STORE": "True",
}


def test_torchrun_environment() -> None:
    info = resolve_launch(TORCHRUN)
    assert (info.launcher, info.rank, info.world_size, info.node_rank, info.nnodes) == ("torchrun", 3, 6, 1, 3)
    assert info.agent_store and not info.hosts_store
    assert info.run_id == "job7" and info.expected_nodes is None
    assert info.node_of_rank(5) == 2 and info.ranks_of_node(1) == (2, 3)


def test_elastic_torchrun_with_more_nodes_expected() -> None:
    info = resolve_launch(TORCHRUN, nnodes=4)
    assert info.expected_nodes == 4 and info.nnodes == 3


def test_slurm_environment_with_uneven_tasks() -> None:
    env = {
        "SLURM_PROCID": "4", "SLURM_NTASKS": "5", "SLURM_LOCALID": "0", "SLURM_NODEID": "2", "SLURM_NNODES": "3",
        "SLURM_JOB_NODELIST": "gpu[01-02],cpu7", "SLURM_TASKS_PER_NODE": "2(x2),1", "SLURM_JOB_ID": "12345",
    }
    info = resolve_launch(env)
    assert info.launcher == "slurm" and info.master_addr == "gpu01"
    assert info.host_names == ("gpu01", "gpu02", "cpu7")
    assert info.local_world_size == 1 and info.node_of_rank(4) == 2 and info.node_of_rank(2) == 1
    assert info.master_port == 20000 + 12345 % 20000
    assert info.node_name(2) == "cpu7"


def test_explicit_launch_overrides_torchrun_standalone() -> None:
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "localhost",
           "MASTER_PORT": "1234", "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RUN_ID": "x"}
    info = resolve_launch(env, nnodes=3, node_rank=2, master_addr="10.0.0.1", master_port=29555)
    assert (info.launcher, info.rank, info.world_size, info.node_rank) == ("explicit", 5, 6, 2)
    assert info.master_addr == "10.0.0.1" and info.master_port == 29555 and not info.agent_store


@pytest.mark.parametrize(
    ("env", "kwargs", "message"),
    [
        ({}, {}, "no launcher environment"),
        ({}, {"node_rank": 0}, "needs --nnodes"),
        ({}, {"node_rank": 0, "nnodes": 2}, "needs --master-addr"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, {}, "outside the world"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, {}, "not an integer"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "70000"}, {}, "not a TCP port"),
    ],
)
def test_bad_launch_environments_are_usage_errors(env: dict[str, str], kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_launch(env, **kwargs)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("node1", ("node1",)),
        ("gpu[1-3]", ("gpu1", "gpu2", "gpu3")),
        ("gpu[08-10,12],login", ("gpu08", "gpu09", "gpu10", "gpu12", "login")),
        ("r[1-2]n[1-2]", ("r1n1", "r1n2", "r2n1", "r2n2")),
    ],
)
def test_expand_nodelist(text: str, expected: tuple[str, ...]) -> None:
    assert expand_nodelist(text) == expected


def test_tasks_per_node() -> None:
    assert parse_tasks_per_node("2(x3),1") == (2, 2, 2, 1)
    with pytest.raises(UsageError):
        parse_tasks_per_node("2(y3)")
    with pytest.raises(UsageError):
        expand_nodelist("gpu[a-c]")
