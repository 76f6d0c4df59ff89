"""Readings of the hundred-and-twentieth round and after (macOS and Windows, weights moved between a trainer and an
inference engine, addresses and name resolution): one behaviour per test, each with the look-alike it must not
catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of
from syncdoctor.analyze.model import Category, Kind

# real: pytorch/pytorch#149537 (init_process_group without a backend on an Apple silicon Mac, PyTorch 2.6)
_MPS = ("ValueError: We detected accelerator mps on your machine. But we don't know which communication backend to "
        "use for this accelerator. Please specify the `backend` argument in the `init_process_group` call.\n")


def test_no_backend_for_the_device_is_the_calls_setup(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _MPS).hypotheses[0]
    assert top.category is Category.UNRECOGNISED
    assert "no backend" in top.title and "gloo" in top.title


def test_negative_another_value_error_of_the_process_is_its_own_failure(tmp_path: Path) -> None:
    paste = "ValueError: We detected a mismatch in the batch: expected 8 samples, got 7\n"
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_CRASHED


# real: OpenRLHF/OpenRLHF#957 (CUDA IPC of weights to vLLM with expandable segments on, a 3.x kernel)
_PIDFD = ("RuntimeError: The kernel on this machine does not support the pidfd_open syscall needed to use IPC for CUDA "
          "tensors when expandable_segments:True is set. Consider using expandable_segments:False via "
          "torch.cuda.memory._set_allocator_settings('expandable_segments:False') for this allocation.\n")


def test_cuda_ipc_with_expandable_segments_on_an_old_kernel_is_the_hosts_setup(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _PIDFD).hypotheses[0]
    assert top.category is Category.UNRECOGNISED
    assert "pidfd_open" in top.title and "expandable_segments off" in top.title


def test_negative_expandable_segments_advice_under_an_oom_is_still_the_oom(tmp_path: Path) -> None:
    paste = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
             "79.15 GiB of which 1.02 GiB is free. If reserved but unallocated memory is large try setting "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n")
    assert diagnose_paste(tmp_path, paste).hypotheses[0].category is Category.RANK_OUT_OF_MEMORY


# real: hpcaitech/ColossalAI#2199 (an IPv6 address written into tcp://ADDR:PORT without brackets, Python 3.7's urllib)
_V6_PORT = """  File "/usr/local/lib/python3.7/dist-packages/torch/distributed/rendezvous.py", line 169, in _tcp_rendezvous_handler
    if not result.port:
  File "/usr/lib/python3.7/urllib/parse.py", line 169, in port
    port = int(port, 10)
ValueError: invalid literal for int() with base 10: 'fdbd:dc03:9:222:4300::55:29500'.
"""


def test_an_ipv6_address_read_as_the_port_is_an_invalid_store_address(tmp_path: Path) -> None:
    (store,) = [e for e in events_of(_V6_PORT) if e.kind is Kind.STORE_ERROR]
    assert store.data["invalid_address"] and "without its brackets" in store.data["error"]
    assert diagnose_paste(tmp_path, _V6_PORT).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_negative_another_int_literal_is_no_address() -> None:
    for text in ("ValueError: invalid literal for int() with base 10: 'abc'\n",
                 "ValueError: invalid literal for int() with base 10: '12:30'\n"):  # one colon: a time, no IPv6
        assert not [e for e in events_of(text) if e.kind is Kind.STORE_ERROR]


# real: verl-project/verl#2550 (MASTER_ADDR set to a Ray node's IPv6 address in brackets: every worker loops in the
# store's creation)
_BRACKETS = ("[W715 20:00:39.842901446 socket.cpp:752] [c10d] The IPv6 network addresses of "
             "([2605:340:cd51:4900:73e8:12cb:cfe2:1540], 59699) cannot be retrieved (gai error: -2 - Name or service "
             "not known).\n")
_STUCK = """ Thread 206492 (idle): "MainThread"
    _create_c10d_store (torch/distributed/rendezvous.py:189)
    _env_rendezvous_handler (torch/distributed/rendezvous.py:269)
    init_process_group (torch/distributed/distributed_c10d.py:1520)
"""


def test_a_bracketed_ipv6_store_address_is_no_host_name(tmp_path: Path) -> None:
    (store,) = [e for e in events_of(_BRACKETS) if e.kind is Kind.STORE_ERROR]
    assert store.data["store_host"].startswith("[2605:") and "in brackets" in store.data["error"]
    top = diagnose_paste(tmp_path, _BRACKETS + _STUCK).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE  # the store's address, not a member that never arrived


def test_negative_a_host_names_ipv6_lookup_is_still_the_harmless_warning() -> None:
    line = _BRACKETS.replace("[2605:340:cd51:4900:73e8:12cb:cfe2:1540]", "node-0")
    events = events_of(line)
    assert [e.kind for e in events if e.kind in (Kind.STORE_ERROR, Kind.STORE_NAME_UNRESOLVED)] == [
        Kind.STORE_NAME_UNRESOLVED]
