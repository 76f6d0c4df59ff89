"""Readings added in the session of the seventy-seventh blind harvest (the r80* cases of the real corpus) and of a
sweep over the messages of NCCL's and gloo's sources, one behaviour per test, each with the look-alike it must not
catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_PAIR = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/{}] {}"


@pytest.mark.parametrize(("where", "message", "addr"), [
    ("buffer.cc:76", "Read timeout [10.0.0.2]:32444", "10.0.0.2"),
    ("pair.cc:316", "Write timeout [10.0.0.7]:41235", "10.0.0.7"),
])
def test_a_gloo_pairs_own_timeout_names_the_process_it_waited_for(tmp_path: Path, where: str, message: str,
                                                                   addr: str) -> None:
    line = _PAIR.format(where, message)
    assert one(line, Kind.GLOO_TIMEOUT).data["peer_addr"] == addr
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.LAGGING_RANK and addr in top.title and top.culprit_hosts == (addr,), top
    # on one host (the loopback address) the address is named, not taken for a host
    local = diagnose(tmp_path, _PAIR.format(where, "Read timeout [127.0.0.1]:32444") + "\n").hypotheses[0]
    assert local.category is Category.LAGGING_RANK and "127.0.0.1" in local.title and not local.culprit_hosts


@pytest.mark.parametrize("message", ["Socket closed [10.0.0.2]:41235", "Socket unexpectedly closed [10.0.0.2]:41235",
                                     "writev [10.0.0.2]:41235: Broken pipe",
                                     "writev [10.0.0.2]:41235: Connection reset by peer"])
def test_a_gloo_pair_whose_peer_went_away_in_its_other_words(tmp_path: Path, message: str) -> None:
    line = _PAIR.format("pair.cc:812", message)
    assert one(line, Kind.PEER_CLOSED).data["peer_addr"] == "10.0.0.2"
    assert diagnose(tmp_path, line + "\n").hypotheses[0].category is Category.RANK_CRASHED
    # a write that failed for another reason is no peer gone away
    other = _PAIR.format("pair.cc:339", "writev [10.0.0.2]:41235: Bad address")
    assert not [e for e in events_of(other) if e.kind is Kind.PEER_CLOSED]


def test_a_gloo_pairs_connect_timeout_is_a_peer_that_could_not_be_reached(tmp_path: Path) -> None:
    line = _PAIR.format("pair.cc:900", "Connect timeout [10.0.0.2]:41235")
    assert one(line, Kind.GLOO_CONNECT_FAILED).data["remote_addr"] == "10.0.0.2"
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "10.0.0.2" in top.title, top.title


@pytest.mark.parametrize("line", [
    "node1:12345:12400 [0] include/nvmlwrap.h:30 NCCL WARN NVML failure 'Driver/library version mismatch'",
    "node1:12345:12400 [0] misc/nvmlwrap.cc:60 NCCL WARN nvmlInit_v2() failed: Driver/library version mismatch",
    "Failed to initialize NVML: Driver/library version mismatch",
])
def test_nvmls_driver_library_mismatch_is_a_driver_updated_without_a_reboot(tmp_path: Path, line: str) -> None:
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.GPU_ERROR and "without a reboot" in top.title, top.title

