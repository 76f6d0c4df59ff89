"""Readings added in the session of the thirty-sixth blind harvest (the r39* cases of the real corpus), one
behaviour per test, each with the look-alike it must not catch: libc++'s words for an uncaught C++ exception
(macOS and clang builds) cut short by the paste, a NaN the program's own check caught (with the rank and node its
words name), a device-side assertion, a traceback cut before its error line in the program's own code, and an
exception of the program's own read as a crash rather than an unknown error; the Flight Recorder analyser's
report; a paste that starts inside torchrun's rank prefix; the ranks a store barrier's waits leave out; Open
MPI's report with its PID and node masked; a Slurm batch step's OOM kill on the job's node; kubectl exec that
could not reach a node; std::terminate's what() line with the watchdog's rank; a rank logging its own work count
while another times out. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.analyze.parsers.prefixes import split_prefix

diagnose = diagnose_paste


def test_libcxxs_uncaught_exception_is_a_crash_even_cut_short(tmp_path: Path) -> None:
    # real: horovod/horovod#2940 (macOS, gloo; the path of the failed check cut by the paste)
    cut = ("libc++abi.dylib: terminating with uncaught exception of type gloo::EnforceNotMet: [enforce fail at "
           "/private/var/folders/l3/18pljl2s6q3d3h_kk1y5nv8h0000gn/T/pip-...\n")
    top = diagnose(tmp_path, cut).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "uncaught exception" in top.title
    newer = "libc++abi: terminating due to uncaught exception of type std::runtime_error: bad\n"
    assert diagnose(tmp_path, newer).hypotheses
    # an exception that was caught and logged is no termination
    assert not events_of("handled an exception of type std::runtime_error, continuing\n")


def test_a_nan_its_own_check_caught_names_the_rank_and_node_in_its_words(tmp_path: Path) -> None:
    # real: NVIDIA/Megatron-LM#5026 (the rerun state machine's lines name the rank and its node)
    megatron = ("ERROR:megatron.core.rerun_state_machine:Unexpected result nan on rank 3 at iteration #3 invocation #2 "
                "(message='found NaN in local grad norm for bucket #0 in backward pass')\n"
                "ERROR:megatron.core.rerun_state_machine:Rank 3, node gpu-task-1-0, device 3, iteration #3: First rerun: "
                "unexpected result is reproducible within the tolerance (nan = nan).\n")
    top = diagnose(tmp_path, megatron).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,) and top.culprit_hosts == ("gpu-task-1-0",)
    # real: NVIDIA-NeMo#14348 (the rank in torchrun's prefix)
    nemo = ("[default2]:[rank2]: RuntimeError: Rank 2, node dcfai-01, device 2, iteration -1: Unexpected result nan "
            "(message='found NaN in local grad norm')\n")
    top = diagnose(tmp_path, nemo).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (2,)
    # a loss printed as nan in a progress line is no error line, and 'ranks 0 and 1' names no one rank
    assert not diagnose(tmp_path, "step 10 loss nan lr 1e-4\n").hypotheses
    several = diagnose(tmp_path, "ERROR: found NaN on rank 0 and 1\n").hypotheses[0]
    assert several.category is Category.RANK_CRASHED and several.culprit_ranks == ()


def test_a_device_side_assertion_is_the_programs_with_the_rank_a_later_line_gives(tmp_path: Path) -> None:
    # real: pytorch/pytorch#112488 (BCELoss input out of [0, 1] on rank 1; the watchdog's line names the rank)
    paste = ("/opt/conda/work/aten/src/ATen/native/cuda/Loss.cu:94: operator(): block: [117,0,0], thread: [26,0,0] "
             "Assertion `input_val >= zero && input_val <= one` failed.\n"
             "[E ProcessGroupNCCL.cpp:915] [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: "
             "device-side assert triggered\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,)
    # an illegal memory access is the GPU's fault reading, not the program's assertion
    fault = "[Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
    assert diagnose(tmp_path, fault).hypotheses[0].category is Category.GPU_ERROR


def test_a_traceback_cut_before_its_error_in_the_programs_code(tmp_path: Path) -> None:
    # real: tdrussell/diffusion-pipe#333 (rank 1 failed caching its dataset; the paste ends in the traceback)
    frames = ('[rank1]:   File "/code/train_dpo.py", line 443, in <module>\n[rank1]:     dataset_manager.cache()\n'
              '[rank1]:   File "/code/utils/dataset.py", line 567, in cache_metadata\n'
              '[rank1]:     metadata = datasets.load_from_disk(str(grouped_cache_dir))\n')
    top = diagnose(tmp_path, "[rank1]: Traceback (most recent call last):\n" + frames).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,) and "dataset.py:567" in top.title
    # cut inside a collective: where it waited, not a crash of its own
    waiting = ('[rank1]: Traceback (most recent call last):\n[rank1]:   File "/code/train.py", line 9, in <module>\n'
               '[rank1]:     dist.barrier()\n[rank1]:   File "/torch/distributed/distributed_c10d.py", line 3, in barrier\n')
    assert all(h.category is not Category.RANK_CRASHED for h in diagnose(tmp_path, waiting).hypotheses)


def test_an_exception_of_the_programs_own_is_a_crash_not_an_unknown_error(tmp_path: Path) -> None:
    # real: huggingface/transformers#28027 (saving a checkpoint: another rank renamed the folder first)
    paste = ('Traceback (most recent call last):\n  File "/x/trainer.py", line 2383, in _save_checkpoint\n'
             "    os.rename(staging_output_dir, output_dir)\n"
             "FileNotFoundError: [Errno 2] No such file or directory: '/x/tmp-checkpoint-100' -> '/x/checkp\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "FileNotFoundError" in top.title
    # a launcher's variable not set, or a communication library's own error, is no crash of the program
    for plumbing in ("KeyError: 'RANK'\n", "RuntimeError: oneCCL: exec.cpp:134 start_workers: EINVAL\n",
                     "RuntimeError: use_libuv was requested but PyTorch was build without libuv support\n"):
        assert diagnose(tmp_path, plumbing).hypotheses[0].category is Category.UNRECOGNISED, plumbing


_FR_REPORT = """Not all ranks joining collective: sequence number: 31117
internal record id: 31116
group info: 0:default_pg
collective: nccl:all_reduce
missing ranks: {3, 4, 5, 6, 7}
input sizes: [[1571911]]
output sizes: [[1571911]]
world size: 8
expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}
collective state: scheduled
collective stack trace:
 all_reduce at /torch/distributed/distributed_c10d.py:2707
"""


def test_the_flight_recorder_analysers_missing_ranks_are_the_late_ones(tmp_path: Path) -> None:
    # real: pytorch/pytorch#140969 (torchfrtrace over an 8-rank job's dumps)
    top = diagnose(tmp_path, _FR_REPORT).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (3, 4, 5, 6, 7)
    assert top.affected_ranks == (0, 1, 2) and "#31117" in top.title and "allreduce" in top.title
    # 2.5's form (the tutorial's), and the first tool's single line
    older = ("Not all ranks joining collective 5 at entry 4\ngroup info: 0:default_pg\ncollective: nccl:all_reduce\n"
             "missing ranks: {1}\ninput sizes: [[3, 4]]\noutput sizes: [[3, 4]]\nexpected ranks: 2\n"
             "collective state: scheduled\n")
    top = diagnose(tmp_path, older).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (1,) and top.affected_ranks == (0,)
    first = "Not all ranks joining collective for group 0:default_pg collective nccl:broadcast Missing ranks are {2, 3}\n"
    assert diagnose(tmp_path, first).hypotheses[0].culprit_ranks == (2, 3)
    # the header alone names no one
    assert not diagnose(tmp_path, "Not all ranks joining collective: sequence number: 7\n").hypotheses


def test_the_flight_recorder_analysers_culprit_of_a_mismatch(tmp_path: Path) -> None:
    paste = ("Collective sequence number: 5 has errors\ncollective: nccl:all_reduce\n"
             "error msg: Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: "
             "'nccl:all_reduce' does not match found collective type: 'nccl:broadcast'\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and top.culprit_ranks == (1,)
    assert "collective type mismatch" in top.title
    # Horovod's own "[missing ranks: 1]" stays Horovod's
    assert not [e for e in events_of("HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]\n")
                if e.data.get("source") == "fr_trace"]


def test_a_paste_that_starts_inside_torchruns_rank_prefix_keeps_the_rank() -> None:
    # real: vllm-project/vllm#7161 (the paste's first byte, ``[``, lost)
    line = ("rank0]:[E811 01:10:50.482336908 ProcessGroupNCCL.cpp:1515] [PG 3 Rank 0] Process group watchdog thread "
            "terminated with exception: CUDA error: an illegal memory access was encountered")
    assert one(line, Kind.GPU_ERROR).origin.rank == 0
    # a word ending in "rank0]:" inside a line is no prefix
    assert split_prefix("see rank0]: here").origin.rank is None


def test_the_ranks_no_store_barrier_wait_came_from_never_arrived(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning#4420 (each rank waits in the store barrier, 7 of 8; Python logging's
    # default format, every line the same length: no terminal wrap)
    waits = "".join(f"INFO:root:Waiting in store based barrier to initialize process group for rank: {r}, key: "
                    "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)\n"
                    for r in (0, 2, 6, 1, 3, 7, 5))
    top = diagnose(tmp_path, waits).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and top.culprit_ranks == (4,) and "rank 4" in top.title
    # when fewer ranks' waits are pasted than joined, the missing ones are not known
    assert diagnose(tmp_path, "".join(waits.splitlines(keepends=True)[:3])).hypotheses[0].culprit_ranks == ()


def test_open_mpis_report_with_the_pid_and_node_masked(tmp_path: Path) -> None:
    # real: Kay1794/Aware-of-the-history#2 (the poster hid the PID and node)
    line = "mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 (Killed).\n"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_ranks == (1,) and top.culprit_hosts == ()
    # a placeholder that reads as a name stays the name the paste gives
    placeholder = "mpirun noticed that process rank 7 with PID 0 on node HOSTNAME exited on signal 9 (Killed).\n"
    assert diagnose(tmp_path, placeholder).hypotheses[0].culprit_hosts == ("HOSTNAME",)


def test_a_slurm_batch_steps_oom_kill_is_on_the_jobs_node(tmp_path: Path) -> None:
    # real: Visual-AI/3DRS#7 (the batch step runs on the node slurmstepd names for the job)
    lines = ("slurmstepd: error: *** JOB 10609057 ON g002 CANCELLED AT 2025-08-22T01:14:01 ***\n"
             "slurmstepd: error: Detected 1 oom_kill event in StepId=10609057.batch. Some of the step tasks have been "
             "OOM Killed.\n")
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("g002",)
    # another job's node, or a step other than the batch one, says nothing of where
    other = lines.replace("StepId=10609057.batch", "StepId=10609057.0")
    assert diagnose(tmp_path, other).hypotheses[0].culprit_hosts == ()


def test_kubectl_exec_that_could_not_reach_a_nodes_kubelet(tmp_path: Path) -> None:
    # real: kubeflow/mpi-operator#61 (the operator starts orted through kubectl exec)
    paste = ("Error from server: error dialing backend: dial tcp 10.0.3.7:10250: getsockopt: connection timed out\n"
             "ORTE was unable to reliably start one or more daemons.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.culprit_hosts == ("10.0.3.7",)
    assert "10.0.3.7" not in diagnose(tmp_path, "ORTE was unable to reliably start one or more daemons.\n"
                                      ).hypotheses[0].title


def test_std_terminates_what_line_keeps_the_rank_of_the_watchdogs_message() -> None:
    # real: meta-llama/llama-cookbook#290
    line = ("  what():  [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: unspecified launch "
            "failure")
    assert one(line, Kind.GPU_ERROR).origin.rank == 0


def test_a_rank_that_logs_its_own_work_count_while_another_times_out(tmp_path: Path) -> None:
    # real: xiaomi-research/recogdrive#57 (rank 0 still scoring scenarios while rank 1 waits in an allgather)
    work = ("2026-01-29 15:25:45,398 INFO {run_pdm_score_qwen.py:102}  Rank 0 processing scenario 1764 / 3037 in "
            "thread_id=f37e0d60, node_id=0\n")
    timeout = ("[rank1]:[E129 15:25:55.637180923 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=3, OpType=ALLGATHER, NumelIn=1, NumelOut=4, Timeout(ms)=600000) "
               "ran for 600079 milliseconds before timing out.\n")
    top = diagnose(tmp_path, work + timeout).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (0,)
    assert "rank 1 timed out waiting" in top.title
    # a count that is done (3037 / 3037) is no work in progress
    done = work.replace("1764 / 3037", "3037 / 3037")
    assert diagnose(tmp_path, done + timeout).hypotheses[0].culprit_ranks != (0,)
