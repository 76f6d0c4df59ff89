"""Readings of the hundred-and-ninety-seventh round (``r200*``: distributed evaluation and metrics, recommendation
models, diffusion training, Arm and mixed GPUs, PyTorch/XLA and TPUs, open pretraining codebases, training over the
internet, graph neural networks), and of held cases their readings reached. One behaviour per test, each with the
look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.parsers.prefixes import split_prefix


def test_xlas_allocator_out_of_a_tpus_memory_is_the_devices_memory(tmp_path: Path) -> None:
    # real: pytorch/xla (r200e): the HBM of a TPU core exhausted, in XLA's allocator's words
    for line in ("RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to "
                 "allocate 196.00M. That was not possible. There are 134.44M free.; (1x0x0_HBM0)",
                 "2020-10-22 02:48:58 10.128.0.33 [3]   (1) Resource exhausted: Attempting to allocate 180.59M. That was "
                 "not possible. There are 142.58M free.; (0x3x0_HBM1)",
                 "E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   (1) RESOURCE_EXHAUSTED: Attempting to reserve "
                 "6.48G at the bottom of memory. That was not possible. There are 6.78G free, 0B reserved",
                 "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of "
                 "memory in memory space hbm. Used 17.31G of 15.48G hbm."):
        top = top_of(tmp_path, line + "\n")
        assert top.category is Category.RANK_OUT_OF_MEMORY and "XLA device" in top.title, (line, top)
    # a quota or a resource that is no device's memory is not
    quota = ("google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric 'Write requests'\n")
    hypotheses = diagnose_paste(tmp_path, quota).hypotheses
    assert not [h for h in hypotheses if h.category is Category.RANK_OUT_OF_MEMORY], hypotheses


def test_a_port_said_not_available_is_taken(tmp_path: Path) -> None:
    # real: awslabs/dgl-ke (r200h): its KV servers' ports held by an earlier run
    assert top_of(tmp_path, "Error: port 30051 is not available.\n").category is Category.PORT_IN_USE
    # a port a service is not reachable on is no port taken here
    top = top_of(tmp_path, "Error: connection to port 30051 failed: Connection refused\n")
    assert top.category is not Category.PORT_IN_USE, top


def test_cuda_refusing_a_shareable_allocation_is_the_setup(tmp_path: Path) -> None:
    # real: NVIDIA/nvbandwidth (r200d), and MSCCL++ (held, r101c): fabric memory without an IMEX channel
    line = ("[CUDA_ERROR_NOT_PERMITTED] operation not permitted in expression cuMemCreate(&handle, "
            "roundedUpAllocationSize, &prop, 0 ) on worker-0, rank = 0 in MultinodeMemoryAllocationUnicast\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.UNRECOGNISED and "IMEX" in top.title, top
    held = ("mscclpp._mscclpp.CuError: (800, 'Call to cuMemCreate(&memHandle, nbytes, &prop, 0 ) failed./root/mscclpp/"
            "src/gpu_utils.cc:42')\n")
    assert "IMEX" in top_of(tmp_path, held).title
    # the same code from a kernel's launch, no allocation named, is still the GPU's error
    other = "[CUDA_ERROR_NOT_PERMITTED] operation not permitted in expression cuLaunchKernel(f, 1, 1, 1) on worker-0\n"
    assert top_of(tmp_path, other).category is Category.GPU_ERROR


def test_a_tpu_slice_whose_hosts_did_not_all_start(tmp_path: Path) -> None:
    # real: jax-ml/jax (r200e): JAX's warning, the only line of a hang at the start (a UserWarning, read all the same)
    warning = ("/home/u/.local/lib/python3.10/site-packages/jax/_src/xla_bridge.py:146: UserWarning: TPU backend "
               "initialization is taking more than 60.0 seconds. Did you run your code on all TPU hosts? See "
               "https://jax.readthedocs.io/en/latest/multi_process.html for more information.\n  warnings.warn(\n")
    assert top_of(tmp_path, warning).category is Category.RENDEZVOUS_TIMEOUT
    # real: jax-ml/jax (r200e): the same warning, then the host's own segfault in Google's handler's words: the crash
    crash = ("*** SIGSEGV (@(nil)), see gl__________41#s15 received by PID 11743 (TID 12350) on cpu 17; stack trace: ***\n"
             "PC: @     0x7facba4a8de2  (unknown)  (unknown)\n")
    top = top_of(tmp_path, warning + crash)
    assert top.category is Category.RANK_CRASHED and "11743" in top.title, top
    # hivemind's averager that found no group in time: the peers never met
    group = ("Nov 12 20:18:11.061 [ERROR] [hivemind.averaging.averager._step:478] Averaging step failed: could not find "
             "a group\n")
    assert top_of(tmp_path, group).category is Category.RENDEZVOUS_TIMEOUT
    # other UserWarnings stay quiet
    assert not diagnose_paste(tmp_path, "/x/jax/_src/xla_bridge.py:146: UserWarning: Platform 'METAL' is "
                              "experimental and not all JAX functionality may be correctly supported!\n").hypotheses


def test_torch_xlas_mesh_rendezvous_that_lost_its_master(tmp_path: Path) -> None:
    # real: pytorch/xla (r200e): the TPU processes' rendezvous with the mesh master closed by gRPC
    line = ("Exception in device=TPU:3: tensorflow/compiler/xla/xla_client/mesh_service.cc:243 : Failed to meet "
            "rendezvous 'init': Socket closed (14)\n")
    assert top_of(tmp_path, line).category is Category.PEER_UNREACHABLE
    # a rendezvous that only waited (a slow checkpoint) is no lost connection
    slow = ("2023-03-29 13:52:59 10.0.0.1 [1] RuntimeError: mesh_service.cc:364 : Failed to meet rendezvous "
            "'torch_xla.core.xla_model.save': Deadline Exceeded (4)\n")
    hypotheses = diagnose_paste(tmp_path, slow).hypotheses
    assert not [h for h in hypotheses if h.category is Category.PEER_UNREACHABLE], hypotheses


def test_a_warning_that_says_how_the_program_goes_on_is_no_failure(tmp_path: Path) -> None:
    # sweep of Megatron-LM's messages: its warnings that it retries, falls back or binds elsewhere
    for calm in ("[WARNING] [indexed_dataset.py:117] Attempt 1/3 to read data item failed with exception \"timeout\"; "
                 "going to sleep for 2 seconds and then re-try...",
                 "[WARNING] [cached_logits_loader.py:68] >>>>>> KD LOSS FAILED — falling back to LM loss. KeyError: 'x'",
                 "[WARNING] [coordinator.py:112] Unknown error when binding to port 8000. Attempting to bind to a random "
                 "available port instead."):
        assert not diagnose_paste(tmp_path, calm + "\n").hypotheses, calm
    # the same program giving up is its failure
    top = top_of(tmp_path, "[WARNING] [indexed_dataset.py:121] 3 total tries to read data item failed; going to abort "
                 "and re-raise exception \"timeout\"...\n")
    assert top is not None


def test_torch_xlas_pod_runner_names_the_worker_of_each_line(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning#7197 (r200e): one worker of a v2-32 pod found no TPU device
    line = "2021-04-23 18:14:43 10.164.0.29 [3]   File \"/home/u/pl/trainer.py\", line 316, in __init__"
    prefix = split_prefix(line)
    assert prefix.origin.host == "10.164.0.29" and prefix.origin.rank is None and prefix.body.startswith("  File")
    assert prefix.time_text == "2021-04-23 18:14:43"
    top = top_of(tmp_path, "2021-04-23 18:14:43 10.164.0.29 [3] pytorch_lightning.utilities.exceptions."
                 "MisconfigurationException: No TPU devices were found.\n")
    assert top.culprit_hosts == ("10.164.0.29",), top
    # a date, a time and an address without the worker's index is no such prefix (a log line's own words)
    other = split_prefix("2021-04-23 18:14:43 10.164.0.29 connected")
    assert other.origin.host != "10.164.0.29"
