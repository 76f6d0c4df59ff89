"""``check``'s prediction of NCCL's interface against what NCCL itself chose on a real GPU host (pure).

tests/fixtures/host/gpu_h200_host.json is ``syncdoctor check --json`` of the GPU host that ran
scripts/gpu-check.sh (1x H200, NCCL 2.28.9); tests/fixtures/analyze/gpu/ holds that run's NCCL logs: a
healthy job (NCCL_SOCKET_IFNAME unset) and one with ``NCCL_SOCKET_IFNAME=nosuch0``. The prediction, made
from the interfaces alone, must name what NCCL logged: the same interface and address, and for a value that
matches nothing, the failure NCCL reported.
"""

from __future__ import annotations

import json
from pathlib import Path

from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Kind
from syncdoctor.checks.predict import predict_nccl
from syncdoctor.host.types import InterfaceFacts

FIXTURES = Path(__file__).parent / "fixtures"
HOST = json.loads((FIXTURES / "host" / "gpu_h200_host.json").read_text())
GPU_LOGS = FIXTURES / "analyze" / "gpu"


def interfaces() -> list[InterfaceFacts]:
    out = []
    for raw in HOST["interfaces"]:
        fields = dict(raw, ipv4=tuple(raw["ipv4"]), ipv6=tuple(raw["ipv6"]))
        out.append(InterfaceFacts(**fields))
    return out


def test_prediction_matches_the_interface_nccl_used() -> None:
    choice = predict_nccl(interfaces(), {})
    timeline = analyze_paths([str(GPU_LOGS / "diag")]).timeline
    (bootstrap,) = timeline.of(Kind.NCCL_BOOTSTRAP)
    sockets = [e for e in timeline.of(Kind.NCCL_NET) if e.data.get("net") == "Socket"]
    assert (choice.interface, choice.address) == (bootstrap.data["ifname"], bootstrap.data["addr"]) == (
        "eth0", "192.0.2.2")
    assert sockets and sockets[0].data["devices"] == [f"{choice.interface}:{choice.address}"]
    assert HOST["predictions"]["nccl"]["interface"] == choice.interface  # what check printed on that host


def test_a_name_that_matches_nothing_is_predicted_to_fail_as_nccl_did() -> None:
    choice = predict_nccl(interfaces(), {"NCCL_SOCKET_IFNAME": "nosuch0"})
    assert choice.interface is None and choice.problem
    log = (GPU_LOGS / "ifname" / "ifname.log").read_text()
    quoted = choice.problem.split("'")[1]  # the message the prediction says NCCL will print
    assert quoted == "Bootstrap : no socket interface found" and quoted in log
