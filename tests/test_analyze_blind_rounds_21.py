"""Readings added in the session of the sixty-second blind harvest (the r65* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste


def test_slurms_prolog_failure_is_the_scheduler_ending_the_job_before_any_task(tmp_path: Path) -> None:
    paste = ("$ srun -N 6 -p compute hostname\nsrun: PrologSlurmctld failed, job killed\nsrun: Force Terminated job 2\n"
             "srun: error: Job allocation 2 has been revoked\n")
    assert one("srun: PrologSlurmctld failed, job killed", Kind.AGENT_SIGNAL).data["reason"] == "prolog failed"
    assert one("[2024-05-01T10:00:00.123] error: [job 4411] prolog failed status=1:0",
               Kind.AGENT_SIGNAL).data["reason"] == "prolog failed"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "prolog failed" in top.title and "resume log" in top.fix
    # a node's prolog (salloc's words, srun's with the step's aftermath) names the node to drain
    for paste, node in (("salloc: Prolog failure on node k003-006\nsalloc: Job allocation 235454 has been revoked.\n"
                         "salloc: error: Job allocation 235454 has been revoked\n", "k003-006"),
                        ("srun: error: Task launch for 23.0 failed on node hpc: Job prolog failed\nsrun: error: "
                         "Application launch failed: Job prolog failed\nsrun: Job step aborted: Waiting up to 32 "
                         "seconds for job step to finish.\nsrun: error: Timed out waiting for job step to complete\n",
                         "hpc")):
        node_top = diagnose(tmp_path, paste).hypotheses[0]
        assert node_top.category is Category.RANK_KILLED and node_top.culprit_hosts == (node,), node_top.title
    # the revoked allocation alone is Slurm's cancellation; a script's own 'prolog failed' message is no Slurm record
    alone = diagnose(tmp_path, "srun: error: Job allocation 7 has been revoked\n").hypotheses[0]
    assert alone.category is Category.RANK_KILLED and "allocation revoked" in alone.title
    assert not [e for e in events_of("RuntimeError: prolog failed to load the dataset") if e.kind is Kind.AGENT_SIGNAL]


def test_enospc_in_a_warning_is_an_error_line_and_not_silence(tmp_path: Path) -> None:
    line = ("W0717 18:50:07.754983 3957032 rdma_context.cpp:199] The buffer length exceeds device max_mr_size, shrink "
            "it to 68719476736: No space left on device [28]")
    assert one(line, Kind.ERROR_LINE).data["word"] == "No space left on device"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_processes and "max_mr_size" in top.title
    assert one("W0717 18:50:08 cache.cc:10] Disk quota exceeded while writing /ckpt/step_100", Kind.ERROR_LINE)
    # a free-space report names the words without an error
    assert not [e for e in events_of("df: 12G used, no space left warnings: none") if e.kind is Kind.ERROR_LINE]


_JAX_CONNECT = """Traceback (most recent call last):
  File "/root/train.py", line 89, in main
    jax.distributed.initialize(coordinator_address="localhost", num_processes=4, process_id=0)
  File "/opt/jax/_src/distributed.py", line 95, in initialize
    self.client.connect()
jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect. Timed out task names:
/job:jax_worker/replica:0/task:3
/job:jax_worker/replica:0/task:1
/job:jax_worker/replica:0/task:2

Additional GRPC error information from remote target unknown_target_for_coordination_leader while calling /tensorflow.CoordinationService/Barrier:
"""


def test_jax_initialize_timing_out_names_the_processes_that_never_connected(tmp_path: Path) -> None:
    event = one(_JAX_CONNECT, Kind.COORDINATION)
    assert event.data["barrier"] == "PjRT_Client_Connect" and event.data["absent_tasks"] == [1, 2, 3]
    top = diagnose(tmp_path, _JAX_CONNECT).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and top.culprit_ranks == (1, 2, 3)
    assert "never connected to JAX's coordinator" in top.title and "process_id" in top.fix


def test_a_later_barrier_in_the_newer_words_names_its_absent_tasks_and_the_count(tmp_path: Path) -> None:
    paste = ("jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: 0_async_write_complete."
             "0.1. This usually happens because a task triggered the barrier too early or too slowly. Please look at "
             "the task logs (both timed out and first task) to debug further.\n# of tasks that reached the barrier: "
             "14/16.\nThe first task at the barrier: /job:jax_worker/replica:0/task:13. Some timed out task names:\n"
             "/job:jax_worker/replica:0/task:6\n/job:jax_worker/replica:0/task:9\n\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and top.culprit_ranks == (6, 9)  # not 13, the first there
    assert "0_async_write_complete.0.1" in top.title and "14 of 16 arrived" in top.title
    # gRPC's record of the same error: the names on one line, "\n" written out between them
    record = ('{"created":"@1706211255.37","description":"Error received from peer ipv4:10.142.0.55:8476","grpc_message":'
              '"Barrier timed out. Barrier_id: multihost_broadcast_sync0. Timed out task names:\\n/job:jax_worker/'
              'replica:0/task:3\\n/job:jax_worker/replica:0/task:0\\n","grpc_status":4}')
    assert one(record, Kind.COORDINATION).data["absent_tasks"] == [0, 3]


def test_a_task_whose_heartbeat_the_service_lost_is_the_crash(tmp_path: Path) -> None:
    line = ("jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: Task /job:jax_worker/replica:0/task:5 heartbeat "
            "timeout. This indicates that the remote task has failed, got preempted, or crashed unexpectedly.")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (5,) and "heartbeats" in top.title
    # a task named in other words (a device string) is no lost task, and a barrier named elsewhere no timeout
    assert not events_of("Using device /job:jax_worker/replica:0/task:5/device:GPU:0")
    assert not [e for e in events_of("logging: barrier timed out? no") if e.kind is Kind.COORDINATION]


def test_cuda_not_initialized_on_an_nvswitch_host_names_the_fabric_manager(tmp_path: Path) -> None:
    warning = ("/opt/conda/lib/python3.9/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: "
               "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
               "NumCudaDevices() that might have already set an error? Error 802: system not yet initialized "
               "(Triggered internally at /opt/conda/c10/cuda/CUDAFunctions.cpp:109.)")
    assert one(warning, Kind.GPU_ERROR).data["message"] == "CUDA could not start: system not yet initialized (error 802)"
    journal = ("Feb 24 09:28:28 ip-172-31-92-157 nv-fabricmanager[1507]: fabric manager NVIDIA GPU driver interface "
               "version 535.183.01 don't match with driver version 535.161.08. Please update with matching NVIDIA "
               "driver package.")
    top = diagnose(tmp_path, journal + "\n" + warning).hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_hosts == ("ip-172-31-92-157",)
    assert "fabric manager" in top.title and "not at fault" in top.title and "nvidia-fabricmanager" in top.fix
    # another CUDA initialization warning keeps its own words (no fabric manager in its title)
    other = warning.replace("Error 802: system not yet initialized", "Error 999: unknown error")
    assert "fabric manager" not in diagnose(tmp_path, other).hypotheses[0].title


def test_intels_engine_reset_and_a_lost_level_zero_device_are_the_gpus_failure(tmp_path: Path) -> None:
    paste = ("xe 0000:2c:00.0: [drm] GT0: Engine reset: engine_class=ccs, logical_mask: 0x1, guc_id=3\n"
             "xe 0000:17:00.0: [drm] Xe device coredump has been created\n"
             "RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)\n")
    assert one(paste.splitlines()[0], Kind.GPU_ERROR).data["pci"] == "0000:2c:00.0"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.GPU_ERROR and "DEVICE_LOST" in top.title
    assert not [e for e in events_of("xe 0000:2c:00.0: [drm] GT0: engine_class=ccs enabled") if e.kind is Kind.GPU_ERROR]


def test_a_checks_expected_but_got_words_are_an_error_line(tmp_path: Path) -> None:
    line = "NET/OFI Unexpected number of remote rails for dev 0. Expected 3 but got 2"
    assert one(line, Kind.ERROR_LINE)
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.UNRECOGNISED
    assert not [e for e in events_of("step 10: loss expected to fall, but it got flatter") if e.kind is Kind.ERROR_LINE]


# --- the sixty-third round (r66*) ---------------------------------------------------------------------------------


def test_a_py_spy_stack_pasted_without_its_headers_is_read(tmp_path: Path) -> None:
    (tmp_path / "tp0.txt").write_text("all_reduce (torch/distributed/distributed_c10d.py:3075)\n"
                                      "  _all_reduce_attn_groups (hiradix_cache.py:196)\n"
                                      "  check_prefetch_progress (hiradix_cache.py:1373)\n")
    (tmp_path / "tp1.txt").write_text("broadcast (torch/distributed/distributed_c10d.py:2974)\n"
                                      "  broadcast_pyobj (utils/common.py:1437)\n")
    analysis = analyze_paths([str(tmp_path)])
    stacks = analysis.timeline.of(Kind.STACK_DUMP)
    assert sorted(str(e.op) for e in stacks) == ["allreduce", "broadcast"]
    assert "hiradix_cache.py:196" in str(next(e for e in stacks if e.op == "allreduce").data["where"])
    assert analysis.diagnosis.hypotheses[0].category is Category.COLLECTIVE_DESYNC
    # a warning printed from that file (path:line: Category) and a frame of another module start no stack
    assert not [e for e in events_of("/opt/torch/distributed/distributed_c10d.py:4631: UserWarning: No device id "
                                     "is provided via init_process_group") if e.kind is Kind.STACK_DUMP]
    assert not [e for e in events_of("train_step (trainer.py:88)\n  main (run.py:12)") if e.kind is Kind.STACK_DUMP]


def test_vllms_logger_prefix_is_taken_off_and_its_expected_error_notice_is_no_error(tmp_path: Path) -> None:
    paste = ("INFO 06-11 19:21:45 [ray_distributed_executor.py:128] Shutting down Ray distributed executor. If you see "
             "error log from logging.cc regarding SIGTERM received, please ignore because this is the expected "
             "termination process in Ray.\n"
             "(RayWorkerWrapper pid=1320, ip=192.168.11.16) ERROR 06-11 19:21:45 [worker_base.py:622] Traceback (most "
             "recent call last):\n"
             "(RayWorkerWrapper pid=1320, ip=192.168.11.16) ERROR 06-11 19:21:45 [worker_base.py:622]   File "
             "\"/workspace/vllm/worker/worker.py\", line 190, in init_device\n"
             "(RayWorkerWrapper pid=1320, ip=192.168.11.16) ERROR 06-11 19:21:45 [worker_base.py:622]     "
             "torch.cuda.set_device(self.device)\n"
             "(RayWorkerWrapper pid=1320, ip=192.168.11.16) ERROR 06-11 19:21:45 [worker_base.py:622] RuntimeError: "
             "CUDA error: invalid device ordinal\n")
    analysis = analyze_paths([str(_write(tmp_path, paste))])
    assert not [e for e in analysis.timeline.of(Kind.ERROR_LINE) if "please ignore" in e.text]
    exception = next(e for e in analysis.timeline.of(Kind.EXCEPTION, Kind.GPU_ERROR) if e.origin.pid == 1320)
    assert exception.origin.host == "192.168.11.16"
    top = analysis.diagnosis.hypotheses[0]
    assert "invalid device ordinal" in top.title and top.culprit_hosts == ("192.168.11.16",), top.title


def test_gins_doca_failure_is_named_with_its_own_fix(tmp_path: Path) -> None:
    line = ("worker-0:862519:862553 [0] transport/net_ib/gdaki/gin_host_gdaki.cc:431 (gdakiConnectQp) NCCL WARN DOCA "
            "failure 21")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "GIN over DOCA GPUNetIO" in top.title
    assert "NCCL_GIN_TYPE" in top.fix and top.culprit_hosts == ("worker-0",)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    return path


def test_a_frame_logged_at_error_is_never_silence_and_no_noise_beside_a_verdict(tmp_path: Path) -> None:
    frames = ('(RayWorkerWrapper pid=26165) ERROR 08-16 05:39:57 worker_base.py:382]   File "/usr/lib/python3.10/torch/'
              'distributed/distributed_c10d.py", line 2220, in all_reduce [repeated 6x across cluster]\n'
              '(RayWorkerWrapper pid=26165) ERROR 08-16 05:39:57 worker_base.py:382]     work = group.allreduce([tensor],'
              ' opts) [repeated 6x across cluster]\n')
    event = one(frames.splitlines()[0], Kind.ERROR_LINE)  # (a frame alone: a traceback cut, read as its follower does)
    assert event.data["headless"] and event.origin.pid == 26165
    source = one(frames.splitlines()[1], Kind.ERROR_LINE)  # its source line alone: an error by its logger's level
    assert source.data["logged"] and source.origin.pid == 26165
    top = diagnose(tmp_path, frames).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_processes
    # beside a reading, such lines are not listed as unexplained
    with_cause = frames + ("(RayWorkerWrapper pid=26165) ERROR 08-16 05:39:58 worker_base.py:382] RuntimeError: CUDA "
                           "driver error: system not yet initialized\n")
    diagnosis = diagnose(tmp_path, with_cause)
    assert "fabric manager" in diagnosis.hypotheses[0].title
    assert not [e for e in diagnosis.unexplained if "work = group.allreduce" in e.text]
    # torch elastic's E-level prefix spells no level: its traceback lines stay no errors of their own
    assert not events_of('E0724 19:33:34.565000 1288 torch/distributed/elastic/multiprocessing/api.py:702]     x = 1')


# --- the sixty-fourth round (r67*) --------------------------------------------------------------------------------


def test_nvshmems_bootstrap_without_an_interface_names_its_own_settings(tmp_path: Path) -> None:
    line = ("/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.8/main_nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:"
            "bootstrap_net_init:160: No socket interface found")
    assert one(line, Kind.INTERFACE_MISSING).data["transport"] == "nvshmem"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.INTERFACE_MISSING and "NVSHMEM" in top.title
    assert "NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME" in top.fix and "NCCL_SOCKET_IFNAME" not in top.fix
    # another line of that function is no missing interface
    assert not [e for e in events_of("bootstrap_uid.cpp:bootstrap_net_init:120: using interface eth0")
                if e.kind is Kind.INTERFACE_MISSING]
