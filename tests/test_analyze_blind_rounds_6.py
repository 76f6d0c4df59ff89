"""Readings added after the twenty-second blind harvest (the r25* cases of the real corpus), one behaviour per test,
each with the look-alike it must not catch: NCCL's 'unhandled system error' whose quoted last warning names the
failed call (re-flowed by the paste), a store connection reset as init_process_group opens it. (The IPv6 lookup
warning as the only line: tests/test_analyze_blind_rounds_2.py.) Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste
from syncdoctor.analyze.model import Category

diagnose = diagnose_paste

# real: AI-Hypercomputer/xpk#492 (JAX on GKE A3 Mega, no /dev/shm volume), quoted and re-flowed in the issue
_XLA_SHM = """> E0605 09:26:44.248647    1054 pjrt_stream_executor_client.cc:2839] Execution of replica 0
> failed: INTERNAL: NCCL operation ncclGroupEnd() failed: unhandled system error (run with
> NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated)  'Error
> while creating shared memory segment /dev/shm/nccl-TfciGV (size 31850880), error: No space
> left on device (28)'.
"""


def test_a_system_error_whose_quoted_warning_names_the_call_gets_that_cause(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _XLA_SHM).hypotheses[0]
    assert top.category is Category.SHM_EXHAUSTED and "its last warning says shared memory" in top.title
    assert any("/dev/shm/nccl-TfciGV" in e.text for e in top.evidence)
    # the same system error whose warning names nothing known stays a connection, most likely
    vague = _XLA_SHM.replace("while creating shared memory segment /dev/shm/nccl-TfciGV (size 31850880), error: No "
                             "space", "in the proxy thread, error: Success").replace("left on device (28)", "(0)")
    assert diagnose(tmp_path, vague).hypotheses[0].category is Category.PEER_UNREACHABLE


_RESET = """Traceback (most recent call last):
  File "/opt/pytorch-mnist/mnist.py", line 132, in main
    dist.init_process_group(backend=args.backend)
  File "/opt/conda/lib/python3.6/site-packages/torch/distributed/distributed_c10d.py", line 360, in init_process_group
    timeout=timeout)
RuntimeError: Connection reset by peer
"""


def test_a_connection_reset_as_init_process_group_opens_the_store_is_the_store_unreachable(tmp_path: Path) -> None:
    # real: kubeflow/trainer#2008 (the stock PyTorchJob example; the worker's store connection reset)
    top = diagnose(tmp_path, _RESET).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "could not connect to the store" in top.title
    # the same words in a training step's traceback are a lost peer, not the store
    step = _RESET.replace("dist.init_process_group(backend=args.backend)", "loss.backward()").replace(
        "distributed_c10d.py\", line 360, in init_process_group", "distributed_c10d.py\", line 1900, in all_reduce")
    assert all("could not connect to the store" not in h.title for h in diagnose(tmp_path, step).hypotheses)


def test_the_store_name_that_does_not_resolve_for_ipv4_is_the_store_unreachable(tmp_path: Path) -> None:
    # socket.cpp names the family it looked up: IPv6 alone failing is the usual no-IPv6 host, IPv4 is the name
    v4 = ("[W socket.cpp:697] [c10d] The IPv4 network addresses of (pytorch-workers-0-0.pytorch-workers, 3389) cannot "
          "be retrieved (gai error: -2 - Name or service not known).")
    top = diagnose(tmp_path, v4).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.confidence >= 0.5
    assert "pytorch-workers-0-0.pytorch-workers:3389" in top.title and "did not resolve" in top.what
    v6 = diagnose(tmp_path, v4.replace("IPv4", "IPv6")).hypotheses[0]
    assert v6.category is Category.PEER_UNREACHABLE and v6.confidence == 0.2
