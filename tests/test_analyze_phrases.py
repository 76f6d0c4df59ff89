"""What an error line says in plain words when no parser knows its format (rules.phrases), and the fallback
that names it. The lines are from real pastes whose formats no parser had read when they arrived (round 19 to
21 of the blind harvests) or written as the stacks print them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analyze_helpers import diagnose_paste
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.rules.phrases import read_as, strongest


@pytest.mark.parametrize(("line", "category"), [
    # real: facebookresearch/XLM#53 (THD's store, a second job on the port)
    ("RuntimeError: Address already in use at /pytorch/torch/lib/THD/process_group/General.cpp:17",
     Category.PORT_IN_USE),
    ("OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000)", Category.PORT_IN_USE),
    ("ConnectionError: port 29500 is already in use on this host", Category.PORT_IN_USE),
    # real: NVIDIA/semantic-segmentation#33 (THC, PyTorch 1.0)
    ("RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at /pytorch/aten/src/THC/"
     "THCCachingHostAllocator.cpp:265", Category.GPU_ERROR),
    # real: ROCm/ROCm#2494 (the kernel's amdgpu driver)
    ("[22340.220490] amdgpu: sq_intr: error, detail 0x00000000, type 2, sh 1, priv 1, wave_id 0, simd_id 1, "
     "wgp_id 2", Category.GPU_ERROR),
    ("HIP error: an illegal memory access was encountered", Category.GPU_ERROR),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8.00GiB",
     Category.RANK_OUT_OF_MEMORY),
    ("[error] mlx5: cn135: ibv_reg_mr failed: Cannot allocate memory", Category.MEMLOCK_LIMIT),
    ("ERROR: could not open /dev/shm/psm_shm.12: No space left on device", Category.SHM_EXHAUSTED),
    # real: the DETAIL fingerprint of a collate that dropped samples on one rank
    ("RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
     "CollectiveFingerPrint(SequenceNumber=12, OpType=ALLGATHER", Category.COLLECTIVE_DESYNC),
    ("RuntimeError: the shapes do not match across ranks: [41, 1024] on this one", Category.COLLECTIVE_DESYNC),
    ("Error: NCCL version mismatch between rank 0 (2.18.1) and rank 8 (2.14.3)", Category.NCCL_VERSION_MISMATCH),
    ("ERROR: Socket interface eth9 not found on this host", Category.INTERFACE_MISSING),
    ("E1106 tcputils: host not found: Name or service not known", Category.PEER_UNREACHABLE),
    ("RuntimeError: connect() failed: Connection refused (etcd at 10.0.0.5:2379)", Category.PEER_UNREACHABLE),
    ("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", Category.RENDEZVOUS_TIMEOUT),
    ("worker 3 exited with status 137", Category.RANK_KILLED),
    ("Memory cgroup out of memory: Killed process 4242 (python3)", Category.RANK_KILLED),
    ("Fatal Python error: Segmentation fault", Category.RANK_CRASHED),
    ("Aborted (core dumped)", Category.RANK_CRASHED),
    # a checkpoint loaded into another model: the run's inputs (its setup), not the ranks (no desync in "size mismatch")
    ("RuntimeError: Error(s) in loading state_dict for GPT: size mismatch for wte.weight: copying a param with shape",
     Category.UNRECOGNISED),
])
def test_the_words_of_an_error_name_its_category(line: str, category: Category) -> None:
    reading = read_as(line)
    assert reading is not None and reading.category is category


@pytest.mark.parametrize("line", [
    # a download's resolver, not a peer of the job
    "requests.exceptions.ConnectionError: Failed to resolve 'huggingface.co' ([Errno -3] Temporary failure in name "
    "resolution)",
    "urllib3.exceptions.NewConnectionError: Failed to establish a new connection: [Errno 111] Connection refused",
    # a bare timeout: a download, a health check or a collective; the rules read the collectives' formats
    "TimeoutError: timed out",
    "ValueError: bad batch",
    "",
])
def test_words_that_name_no_failure_of_the_job_are_not_read(line: str) -> None:
    assert read_as(line) is None


def test_a_cause_wins_over_outcomes_and_the_first_outcome_over_later_ones() -> None:
    lines = ["Segmentation fault (core dumped)", "Connection refused", "OSError: [Errno 98] Address already in use",
             "uncorrectable ECC error"]
    index, reading = strongest(lines) or (None, None)
    assert index == 2 and reading is not None and reading.category is Category.PORT_IN_USE  # the first cause
    index, reading = strongest(["connect: Connection refused", "Aborted (core dumped)"]) or (None, None)
    assert index == 0 and reading is not None and reading.category is Category.PEER_UNREACHABLE
    assert strongest(["INFO all good", "done"]) is None


@given(st.lists(st.text(max_size=200), max_size=8))
def test_reading_never_fails_and_prefers_a_cause(texts: list[str]) -> None:
    found = strongest(texts)
    readings = [read_as(t) for t in texts]
    if found is None:
        assert all(r is None for r in readings)
        return
    index, reading = found
    assert readings[index] == reading
    if any(r is not None and r.cause for r in readings):
        assert reading.cause


def test_the_fallback_names_what_the_words_say_above_the_bare_quote(tmp_path: Path) -> None:
    # an inference engine's own words about its server's port: a format no parser reads (ZeroMQ's own error,
    # ``ZMQError: Address already in use (addr=…)``, is read since: tests/test_analyze_blind_rounds_20.py)
    paste = """Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/engine/rollout/server.py", line 311, in start
    self._serve(port)
RuntimeError: could not start the rollout server: port 5557 is already in use
"""
    hypotheses = diagnose_paste(tmp_path, paste).hypotheses
    assert [h.category for h in hypotheses[:2]] == [Category.PORT_IN_USE, Category.UNRECOGNISED]
    top = hypotheses[0]
    assert "a port already in use" in top.title and "take it as a lead" in top.what
    assert top.confidence < 0.5 and hypotheses[1].confidence < top.confidence
    assert any("port 5557 is already in use" in e.text for e in top.evidence)


def test_the_fallback_keeps_a_line_whose_words_say_nothing_unrecognised(tmp_path: Path) -> None:
    hypotheses = diagnose_paste(tmp_path, "ERROR: the reward model returned NaN at step 12\n").hypotheses
    assert [h.category for h in hypotheses] == [Category.UNRECOGNISED]


def test_a_rank_that_died_of_an_error_naming_its_cause_gets_that_cause(tmp_path: Path) -> None:
    # the rank is sure (its own exception before the others' timeout); what its error means, from its words
    paste = """node3: [rank1]: Traceback (most recent call last):
node3: [rank1]:   File "train.py", line 88, in step
node3: [rank1]: RuntimeError: hip runtime failed: memory access fault by GPU node-9 (Agent handle: 0x55d1) on address 0x7f00
node1: [rank0]:[E ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, \
OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.
"""
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (1,) and top.culprit_hosts == ("node3",)
    assert "a fault of the GPU" in top.title and 0.5 < top.confidence < 0.9
    # a plain exception stays a crash
    plain = diagnose_paste(tmp_path, paste.replace("hip runtime failed: memory access fault by GPU node-9", "bad value"))
    assert plain.hypotheses[0].category is Category.RANK_CRASHED and plain.hypotheses[0].culprit_ranks == (1,)


def test_a_worker_error_without_its_rank_naming_its_cause_gets_that_cause(tmp_path: Path) -> None:
    paste = """Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/engine/rollout/server.py", line 311, in start
RuntimeError: could not start the rollout server: port 5557 is already in use
[2025-01-02 10:00:01,000] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 4242 closing \
signal SIGTERM
"""
    top = diagnose_paste(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and "a worker failed with its own error" in top.title
    assert "Its words say a port already in use" in top.what


_TIMEOUT = ("[rank4]:[E1107 22:03:59.160250339 ProcessGroupNCCL.cpp:632] [Rank 4] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=9, OpType=_ALLGATHER_BASE, NumelIn=360448, NumelOut=2883584, Timeout(ms)=1800000) "
            "ran for 1800004 milliseconds before timing out.\n")


def test_words_naming_a_cause_lead_over_a_timeout_nobody_explains(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#6725 (MI300X): the runtime's fault, in a wording no parser knows, then the
    # other ranks' timeout; a GPU fault nobody had read that way (the wording is made up here)
    fault = "hip runtime: memory access fault on device 4, queue 0x7f3a (code 0x1016)\n"
    hypotheses = diagnose_paste(tmp_path, fault + _TIMEOUT).hypotheses
    assert hypotheses[0].category is Category.GPU_ERROR and "a fault of the GPU" in hypotheses[0].title
    assert Category.UNEXPLAINED_TIMEOUT in {h.category for h in hypotheses[1:]}
    assert hypotheses[0].confidence <= 0.55
    # an outcome's words (a refused connection) do not: the timeout stays unexplained
    refused = diagnose_paste(tmp_path, "monitor: connect to 10.0.0.9: Connection refused\n" + _TIMEOUT).hypotheses
    assert refused[0].category is Category.UNEXPLAINED_TIMEOUT


def test_words_do_not_override_a_verdict_a_rule_is_sure_of(tmp_path: Path) -> None:
    crash = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 9, in <module>\n"
             "[rank1]: ValueError: bad batch\n")
    noise = "cache: out of memory for key 12, evicting\n"
    top = diagnose_paste(tmp_path, noise + crash + _TIMEOUT.replace("rank4", "rank0").replace("Rank 4", "Rank 0"))
    assert top.hypotheses[0].category is Category.RANK_CRASHED and top.hypotheses[0].culprit_ranks == (1,)
