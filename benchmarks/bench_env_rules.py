"""What validating the environment costs, next to what `check` already does with it (redacting it).

Measures side by side in one run, in process: ``redact_env`` of a realistic job environment (the
baseline: every report redacts the environment once), ``validate_env`` of the same environment with
host facts (every E rule), ``parse_env_file`` of the job-script fixture, and ``read_nccl_conf`` of a
temporary home/etc tree. Prints medians and ratios to the baseline.

    .venv/bin/python benchmarks/bench_env_rules.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from syncdoctor.checks import parse_env_file, read_nccl_conf, validate_env
from syncdoctor.host.types import IbPortFacts, InterfaceFacts
from syncdoctor.redact import redact_env

JOB_SCRIPT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "env" / "job.sh"


def _median_us(func: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def _environment() -> dict[str, str]:
    env = {f"SOME_TOOL_SETTING_{i}": f"value-{i}" for i in range(60)}
    env.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/me", "HF_TOKEN": "hf_x" * 8})
    env.update({"NCCL_IB_TIMEOUT": "60", "NCCL_IB_RETRY_CNT": "32", "NCCL_TIMEOUT": "1800", "NCCL_P2P_LEVEL": "0",
                "NCCL_SOCKET_IFNAME": "eth9", "NCCL_IB_HCA": "mlx5_1", "NCCL_DEBUG": "INFO",
                "GLOO_SOCKET_IFNAME": "eth0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "MASTER_ADDR": "10.0.0.1",
                "MASTER_PORT": "29500", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8", "RANK": "9", "LOCAL_RANK": "1"})
    return env


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    env = _environment()
    interfaces = [InterfaceFacts("lo", up=True, running=True, loopback=True, ipv4=("127.0.0.1/8",)),
                  InterfaceFacts("eth0", up=True, running=True, ipv4=("10.0.0.2/24",)),
                  InterfaceFacts("eth1", up=True, running=True, ipv4=("10.0.1.2/24",))]
    ports = [IbPortFacts(f"mlx5_{i}", 1, state=4, state_name="ACTIVE", link_layer="InfiniBand") for i in (0, 1, 10, 11)]
    script = JOB_SCRIPT.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        home, etc = Path(tmp, "home"), Path(tmp, "etc")
        home.mkdir()
        etc.mkdir()
        (etc / "nccl.conf").write_text("NCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME==eth0\nNCCL_IB_TIMEOUT=22\n")
        base = _median_us(lambda: redact_env(env), args.runs)
        validate = _median_us(lambda: validate_env(env, interfaces=interfaces, ib_ports=ports,
                                                   nccl_version="2.21.5", torch_version="2.13.0"), args.runs)
        parse = _median_us(lambda: parse_env_file(script), args.runs)
        conf = _median_us(lambda: read_nccl_conf(env, home=home, etc=etc), args.runs)
    count = len(validate_env(env, interfaces=interfaces, ib_ports=ports, nccl_version="2.21.5"))
    print(f"environment: {len(env)} variables ({sum(k.startswith(('NCCL', 'TORCH', 'GLOO')) for k in env)} "
          f"relevant), {count} findings")
    print(f"redact_env (baseline)            median {base:9.1f} us")
    print(f"validate_env with host facts     median {validate:9.1f} us   {validate / base:6.1f}x baseline")
    print(f"parse_env_file job.sh fixture    median {parse:9.1f} us   {parse / base:6.1f}x baseline")
    print(f"read_nccl_conf (home + etc tree) median {conf:9.1f} us   {conf / base:6.1f}x baseline")


if __name__ == "__main__":
    main()
