"""Readings added in the session of the fortieth blind harvest (the r43* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 52.00 MiB. GPU 0 has a total capacty of "
        "31.74 GiB of which 39.62 MiB is free. {procs}Including non-PyTorch memory, this process has 13.82 GiB memory "
        "in use. Of the allocated memory 11.54 GiB is allocated by PyTorch.")


def _procs(pids: list[int], size: str) -> str:
    return "".join(f"Process {pid} has {size} memory in use. " for pid in pids)


def test_an_out_of_memory_message_listing_the_jobs_ranks_on_its_gpu_says_they_share_one_device(
        tmp_path: Path) -> None:
    # real: rwth-i6/returnn#1469 (every worker on GPU 0: the message lists 15 processes of 1.19 GiB each on a 32 GiB
    # GPU; PyTorch 2.1 spells "capacty"; the NCCL line that gives the host is cut after "- Init")
    pids = list(range(101549, 101564))
    event = one(_OOM.format(procs=_procs(pids, "1.19 GiB")), Kind.CUDA_OOM)
    assert event.data["gpu"] == 0 and event.data["sharers"] == pids
    assert event.data["capacity_bytes"] == int(31.74 * 2**30)
    init = ("nd20-01:101560:130074 [12] NCCL INFO comm 0x66a0bb80 rank 12 nranks 16 cudaDev 12 busId e0000 "
            "commId 0x66b9ae567fdb3d69 - Init")
    assert one(init, Kind.NCCL_INIT_START).origin.host == "nd20-01"
    top = diagnose(tmp_path, _OOM.format(procs=_procs(pids, "1.19 GiB")) + "\n\n" + init).hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_hosts == ("nd20-01",)
    assert "15 processes holding memory on that GPU" in top.title and "set_device(local_rank)" in top.fix
    # three other ranks' stray CUDA contexts (474 MiB each on 63 GiB): not the cause, the usual advice stands
    small = _OOM.replace("31.74 GiB", "63.42 GiB").format(procs=_procs([7, 8, 9], "474.00 MiB"))
    top = diagnose(tmp_path, small).hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and "holding memory" not in top.title
    assert "set_device" not in top.fix
    # one other process (a monitor, a second job) is not a shared device either
    top = diagnose(tmp_path, _OOM.format(procs=_procs([7], "20.00 GiB"))).hypotheses[0]
    assert "holding memory" not in top.title
