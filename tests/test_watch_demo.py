"""The demo's readers of plain PyTorch's output (the demo itself runs with `make demo`; the same scenario
is tested in the lab by test_watch_lab.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from syncdoctor.cli.demo import _pytorch_errors, _root_causes, _signature_text

AGENT = """E1129 14:24:43 api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 14426) of binary: sh
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_14:24:43
  host      : host0
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 14426)
============================================================
"""

RANK = """syncdoctor-workload step=4 rank=0 host=host0 start=1 ready=2 end=3 loss=0.5
[rank0]: Traceback (most recent call last):
[rank0]:   File "workload.py", line 10, in <module>
[rank0]: RuntimeError: [/__w/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out waiting 15000ms for send operation to complete
Exception raised from sendBytes at /__w/pytorch/torch/csrc/distributed/c10d/Utils.hpp:653 (most recent call first):
"""


def test_demo_reads_what_plain_pytorch_said(tmp_path: Path) -> None:
    (tmp_path / "agent.log").write_text(AGENT)
    (tmp_path / "rank0.log").write_text(RANK)
    (tmp_path / "rank1.log").write_text("no error here\n")
    result = SimpleNamespace(host_logs={"host0": tmp_path / "agent.log"},
                             rank_logs={0: tmp_path / "rank0.log", 1: tmp_path / "rank1.log"})
    assert _root_causes(result) == [("host0", "1")]
    assert _pytorch_errors(result) == {0: "RuntimeError: Timed out waiting 15000ms for send operation to complete"}
    assert _signature_text(["all_reduce", [[8385]], ["Float"], [[8385]]]) == "all_reduce float[8385]"
    assert _signature_text(None) == "?"
