"""Readings added in the session of the sixty-eighth blind harvest (the r71* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_GLOO_KEYS = ("Tue Jun  9 20:10:40 2020[1]<stderr>:terminate called after throwing an instance of 'gloo::IoException'\n"
              "Tue Jun  9 20:10:40 2020[1]<stderr>:  what():  [horovod/common/gloo/http_store.cc:53] "
              "[horovod/common/gloo/http_store.cc:53] Wait timeout for key(s): 0\n"
              "Tue Jun  9 20:10:40 2020[1]<stderr>:*** Received signal 6 ***\n")


def test_gloos_own_store_timing_out_on_a_ranks_key_is_its_rendezvous_timing_out(tmp_path: Path) -> None:
    event = one("what():  [gloo/rendezvous/file_store.cc:148] Wait timeout for key(s): 3, 5", Kind.STORE_ERROR)
    assert event.data["what"] == "rendezvous-timeout" and event.data["awaited"] == [3, 5]
    top = diagnose(tmp_path, _GLOO_KEYS).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "address of rank 0" in top.title
    assert "HOROVOD_GLOO_TIMEOUT_SECONDS" in top.what and top.culprit_ranks == ()
    # Caffe2's handlers name keys, not ranks: a store wait, not gloo's rendezvous
    caffe2 = one("file_store_handler.cc:132] Wait timeout for name(s): allreduce_0_cw_op/1", Kind.STORE_ERROR)
    assert caffe2.data["what"] == "wait" and caffe2.data["missing_ranks"] == [1]


def _timeouts(ranks: list[int], follow: int) -> str:
    lines = [f"[rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught collective operation timeout: "
             f"WorkNCCL(SeqNum=367201, OpType=ALLREDUCE, NumelIn=443012, NumelOut=443012, Timeout(ms)=600000) ran "
             f"for 6001{r}7 milliseconds before timing out." for r in ranks]
    lines += [f"[rank{ranks[0]}]:[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the "
              "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
              f"[rank{ranks[0]}]:[E ProcessGroupNCCL.cpp:543] To avoid data inconsistency, we are taking the entire "
              "process down."][:follow]
    return "\n".join(lines) + "\n"


def test_a_rank_missing_from_the_middle_of_a_burst_of_timeouts_is_the_one_that_never_arrived(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _timeouts([1, 0, 3], follow=2)).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (2,), top.title
    assert "missing from the burst" in top.title
    # a paste cut right after the burst may simply have left rank 2's line out: the unexplained timeout
    cut = diagnose(tmp_path, _timeouts([1, 0, 3], follow=0)).hypotheses[0]
    assert cut.category is Category.UNEXPLAINED_TIMEOUT
    # two ranks missing from the range: not one rank's absence
    two = diagnose(tmp_path, _timeouts([0, 3, 4], follow=2)).hypotheses[0]
    assert two.culprit_ranks != (1,) and two.culprit_ranks != (2,)
    # timeouts in different collectives are no burst of one (and read as a desync)
    mixed = _timeouts([1, 0, 3], follow=2).replace("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL("
                                                  "SeqNum=367201", "[Rank 3] Watchdog caught collective operation "
                                                  "timeout: WorkNCCL(SeqNum=367202")
    assert diagnose(tmp_path, mixed).hypotheses[0].category is Category.COLLECTIVE_DESYNC
