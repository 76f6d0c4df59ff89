"""Readings added after the twenty-seventh blind harvest (the r30* cases of the real corpus), one behaviour per
test, each with the look-alike it must not catch: an exception whose reason is on the lines below it, a network
plugin that failed in some processes only, a failure record copied from a rendered page, NCCL's duplicate-GPU line
cut in a paste, rank 0 missing from a burst of the others' timeouts, the bottom of a traceback pasted without its
header, pdsh's prefix before an indented line, RCCL's ``HIP failure``, oneCCL's level tags and libfabric's shm
provider, NCCL's old uncounted connect retry in markdown, and a missing InfiniBand library. Lines are written as
the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one, read
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_an_exceptions_reason_on_the_lines_below_it(tmp_path: Path) -> None:
    # real: vllm-project/vllm-ascend#405 (two vLLM programs on one host: HCCL's listen port taken)
    paste = ("[rank0]: RuntimeError: createHCCLComm:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1479 HCCL "
             "function error: HcclGetRootInfo(&hcclID), error code is 11\n"
             "[rank0]: [ERROR] 2025-03-26-17:01:03 (PID:159, Device:0, RankID:-1) ERR02200 DIST call hccl api failed.\n"
             "[rank0]: EJ0003: [PID: 159] 2025-03-26-17:01:02.816.428 Failed to bind the IP port. Reason: The IP "
             "address and port have been bound already.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and top.culprit_ranks == (0,)
    assert any("bound already" in e.text for e in top.evidence)  # the line that says it is shown
    # the same words from another rank are that rank's, not the reason of rank 0's exception
    other = paste.replace("[rank0]: EJ0003", "[rank1]: EJ0003")
    assert diagnose(tmp_path, other).hypotheses[0].category is not Category.PORT_IN_USE or \
        diagnose(tmp_path, other).hypotheses[0].culprit_ranks != (0,)


def test_a_network_plugin_that_failed_in_some_processes_only(tmp_path: Path) -> None:
    # real: aws/aws-ofi-nccl#715 (SageMaker, two p4d: local ranks 1 and 7 on sockets, local rank 0 on EFA)
    failed = ("algo-1:17774:17853 [1] nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI aws-ofi-nccl initialization "
              "failed\n"
              "algo-1:17774:17853 [1] NCCL INFO NET/Socket : Using [0]eth0:10.0.227.37<0>\n"
              "algo-1:17774:17853 [1] NCCL INFO Using network Socket\n")
    working = "algo-1:17773:17846 [0] NCCL INFO NET/OFI Setting NCCL_PROTO to \"simple\"\n"
    assert one(working, Kind.NCCL_NET).data == {"plugin_at_work": "NET/OFI"}
    top = diagnose(tmp_path, failed + working).hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK and "pid 17774" in top.title and "pid 17773" in top.title
    # failing in every process shown is the plugin's own error, not two transports
    assert diagnose(tmp_path, failed).hypotheses[0].category is Category.UNRECOGNISED


def test_a_failure_record_copied_from_a_rendered_page() -> None:
    # real: a GitHub issue whose ChildFailedError table lost its newlines and underscores (markdown emphasis)
    paste = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
             "train.py FAILED\nFailures:\n<NO OTHER FAILURES>\nRoot Cause (first observed failure) :\n[0]:\n"
             "time\nhost\n2023-09-14 01:45:50\nding-X10DRG\n"
             "rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>\n"
             "traceback : signal 9 (SIGKILL) received by PID 36071\n")
    failed = [e for e in read(paste) if e.kind is Kind.WORKER_FAILED and e.data.get("source") == "summary"]
    assert [(e.origin.rank, e.origin.local_rank, e.origin.pid, e.data["exitcode"], e.data["table_host"])
            for e in failed] == [(2, 2, 36071, -9, "ding-X10DRG")]
    # the well-formed table still reads its own fields
    table = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nFailures:\n<NO_OTHER_FAILURES>\n"
             "Root Cause (first observed failure):\n[0]:\n  time      : 2024-05-01_12:00:00\n  host      : node1\n"
             "  rank      : 3 (local_rank: 1)\n  exitcode  : -9 (pid: 1235)\n  error_file: <N/A>\n")
    rows = [e for e in read(table) if e.kind is Kind.WORKER_FAILED and e.data.get("source") == "summary"]
    assert [(e.origin.rank, e.data["table_host"]) for e in rows] == [(3, "node1")]


def test_ncclS_duplicate_gpu_line_cut_in_a_paste(tmp_path: Path) -> None:
    # real: facebookresearch/metaseq#554 (torchrun without LOCAL_RANK: every process on one GPU)
    cut = "Duplicate GPU detected : rank 5 and rank 0 b\n"
    assert one(cut, Kind.DUPLICATE_GPU).data["ranks"] == [5, 0]
    assert diagnose(tmp_path, "ncclInternalError: Internal check failed.\nLast error:\n" + cut).hypotheses[0] \
        .category is Category.DUPLICATE_GPU
    # two ranks named without NCCL's words are no duplicate GPU
    assert not [e for e in events_of("rank 5 and rank 0 failed to connect") if e.kind is Kind.DUPLICATE_GPU]


_BURST = "".join(
    f"[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=10792, "
    f"OpType=BROADCAST, Timeout(ms)=1800000) ran for 18007{r}4 milliseconds before timing out.\n" for r in (1, 3, 2))


def test_the_first_rank_missing_from_a_burst_of_the_others_timeouts(tmp_path: Path) -> None:
    # real: ultralytics/ultralytics#2023 (four GPUs on one console: ranks 1-3 time out, rank 0 prints nothing)
    went_on = _BURST + "Traceback (most recent call last):\nTraceback (most recent call last):\n"
    top = diagnose(tmp_path, went_on).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,) and 0.35 <= top.confidence < 0.5
    # a paste that ends with the burst may have left rank 0's line out: the unexplained timeout comes first
    assert diagnose(tmp_path, _BURST).hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT
    # and so does a burst where the others waited in different collectives
    mixed = went_on.replace("[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=10792",
                            "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=10793")
    assert diagnose(tmp_path, mixed).hypotheses[0].culprit_ranks != (0,) or \
        diagnose(tmp_path, mixed).hypotheses[0].confidence < 0.35


def test_the_bottom_of_a_traceback_pasted_without_its_header() -> None:
    # real: Ascend/pytorch#43 (pdsh's prefix on every line; the paste starts at a frame)
    paste = ('worker-1:   File "loader.py", line 163, in get_dataset\n'
             'worker-1:     with training_args.main_process_first(desc="pre-process dataset"):\n'
             'worker-1:   File "/usr/lib/python3.10/site-packages/transformers/training_args.py", line 2363, in '
             'main_process_first\n'
             "worker-1:     dist.barrier()\n"
             'worker-1:   File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3703, '
             "in barrier\n"
             "worker-1:     work.wait()\n"
             "worker-1: RuntimeError: npuSynchronizeDevice:NPUStream.cpp:363 NPU error, error code is 107020\n")
    exception = next(e for e in read(paste) if e.kind is Kind.EXCEPTION)
    assert exception.origin.host == "worker-1" and exception.data["collective"] == "barrier"
    assert exception.data["frames"][-2:] == ["training_args.py:2363 in main_process_first",
                                             "distributed_c10d.py:3703 in barrier"]
    # an exception under other lines (no frame right above it) gets no frames
    alone = "worker-1: loading the dataset\nworker-1: RuntimeError: NPU error, error code is 107020\n"
    assert "frames" not in next(e for e in read(alone) if e.kind is Kind.EXCEPTION).data
    # with its header, the traceback's follower reads it once
    whole = "Traceback (most recent call last):\n" + paste
    assert len([e for e in read(whole) if e.kind is Kind.EXCEPTION]) == 1


def test_a_barrier_in_main_process_first_whose_timeout_is_said_below(tmp_path: Path) -> None:
    paste = ('worker-1:   File "/usr/lib/python3.10/site-packages/transformers/training_args.py", line 2363, in '
             'main_process_first\n'
             "worker-1:     dist.barrier()\n"
             'worker-1:   File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3703, '
             "in barrier\n"
             "worker-1:     work.wait()\n"
             "worker-1: RuntimeError: npuSynchronizeDevice:NPUStream.cpp:363 NPU error, error code is 107020\n"
             "worker-1: [ERROR] 2024-07-03-11:28:40 (PID:639, Device:0, RankID:16) ERR00100 PTA call acl api failed.\n"
             "worker-1: EI9999: The error from device(chipId:0, dieId:0), hccl fftsplus task timeout occurred during "
             "task execution\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and "main_process_first" in top.title
    # the same barrier failing of something else is no wait for rank 0
    other = paste.replace("hccl fftsplus task timeout occurred", "device memory ran out")
    assert diagnose(tmp_path, other).hypotheses[0].category is not Category.LAGGING_RANK


def test_pdsh_prefix_before_an_indented_line() -> None:
    event = next(e for e in read('worker-1: Traceback (most recent call last):\n'
                                 'worker-1:   File "train.py", line 3, in <module>\n'
                                 "worker-1:     main()\n"
                                 "worker-1: ValueError: bad\n") if e.kind is Kind.EXCEPTION)
    assert event.origin.host == "worker-1" and event.data["where"] == "train.py:3 in <module>"


def test_rccls_hip_failure_oneccls_level_and_libfabrics_shm_provider(tmp_path: Path) -> None:
    # real: ROCm/rocm-systems#8178 (MI325X, RCCL at init)
    hip = diagnose(tmp_path, "[FATAL ERROR]: HIP failure: 'invalid device pointer'\n").hypotheses[0]
    assert hip.category is Category.GPU_ERROR
    warn = one("node1:123:456 [2] NCCL WARN HIP failure 'invalid device pointer'", Kind.GPU_ERROR)
    assert warn.data["message"] == "invalid device pointer"
    # real: intel/ipex-llm#11877 (Arc GPUs in Docker without --shm-size: oneCCL's ATL over libfabric's shm)
    shm = ("2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_helper.cpp:907 atl_ofi_get_prov_list: can't create "
           "providers for name shm\n")
    assert one(shm, Kind.ERROR_LINE).data["word"] == "|CCL_ERROR|"
    assert diagnose(tmp_path, shm).hypotheses[0].category is Category.SHM_EXHAUSTED
    # oneCCL's warnings are no errors
    assert not events_of("2024:08:21-10:24:26:( 7746) |CCL_WARN| fallback to 'sockets' mode of ze exchange")


def test_ncclS_old_uncounted_connect_retry_in_markdown(tmp_path: Path) -> None:
    # real: horovod/horovod#1408 (a firewall that lets MPI's port range through, not NCCL's)
    line = "**hostname:26407:26474 NCCL INFO Call to connect returned Connection refused, retrying...**\n"
    assert one(line, Kind.NCCL_CONNECT_FAILED).data == {"error": "Connection refused", "retrying": True}
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_UNREACHABLE


def test_a_missing_infiniband_library_is_a_lead_not_a_verdict(tmp_path: Path) -> None:
    # real: pytorch/pytorch#73790 (two GPUs in one workstation; the hang was the IOMMU, not the network)
    paste = ("john-trx40:115664:115664 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
             "john-trx40:115664:115664 [0] NCCL INFO NET/Socket : Using [0]enp68s0:99.153.71.9<0>\n"
             "john-trx40:115664:115664 [0] NCCL INFO Using network Socket\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.SOCKET_FALLBACK and top.confidence < 0.5 and "only if" in top.title
    # an HCA NCCL found and could not open is the fallback itself
    opened = paste.replace("misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
                           "NCCL WARN NET/IB : Unable to open device mlx5_0")
    assert diagnose(tmp_path, opened).hypotheses[0].confidence >= 0.7
