"""Readings of the hundred-and-ninety-sixth round (``r199*``: Horovod at run time, computer-vision repositories, LLM
fine-tuning front-ends, Ray Train, mixture-of-experts and NVSHMEM, networks outside the data centre, science and
speech codes, CPU and non-CUDA backends), of the sweeps of Accelerate's and Lightning's messages, and of held cases
their readings reached. One behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category
from syncdoctor.analyze.paste import wrap_width

_TORCHRUN_RECORD = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
                    "============================================================\n"
                    "train.py FAILED\n"
                    "------------------------------------------------------------\n"
                    "Root Cause (first observed failure):\n"
                    "[0]:\n"
                    "  time      : 2026-12-07_10:00:00\n"
                    "  host      : node-1\n"
                    "  rank      : 1 (local_rank: 1)\n"
                    "  exitcode  : 1 (pid: 4242)\n"
                    "  error_file: <N/A>\n"
                    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
                    "============================================================\n")


def test_an_import_that_failed_with_words_of_its_own_is_the_environment(tmp_path: Path) -> None:
    # sweep of Accelerate's messages (and the corpus's labels: 16 of the 19 cases with an ImportError line are the
    # environment's): a package missing or of another version, in the words of the library that checked for it
    for words in ("ImportError: DeepSpeed is not installed => run `pip install deepspeed` or build it from source.",
                  "ImportError: `torchao` was not found on your system or is too old of a version.",
                  "ImportError: cannot import name 'is_torch_greater_or_equal_than_1_13' from "
                  "'transformers.pytorch_utils' (/opt/conda/lib/python3.10/site-packages/transformers/pytorch_utils.py)"):
        top = top_of(tmp_path, "[rank1]: Traceback (most recent call last):\n"
                     "[rank1]:   File \"/work/train.py\", line 3, in <module>\n"
                     f"[rank1]: {words}\n" + _TORCHRUN_RECORD)
        assert top.category is Category.UNRECOGNISED and top.culprit_ranks == (1,), (words, top)
    # a circular import is the program's own error; one that another error wraps (Inductor loading its compiled
    # kernels from a cache on a failing file system) is that error's
    for own in ("ImportError: cannot import name 'Model' from partially initialized module 'model' (most likely due "
                "to a circular import) (/work/model.py)",
                "torch._inductor.exc.InductorError: ImportError: /root/.triton/cache/XU5D/cuda_utils.cpython-310-"
                "x86_64-linux-gnu.so: cannot read file data: Stale file handle"):
        top = top_of(tmp_path, "[rank1]: Traceback (most recent call last):\n"
                     "[rank1]:   File \"/work/train.py\", line 3, in <module>\n"
                     f"[rank1]: {own}\n" + _TORCHRUN_RECORD)
        assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,), (own, top)


def test_a_debuggers_innermost_frame_at_address_zero_is_a_crash(tmp_path: Path) -> None:
    # real: a gdb backtrace of NCCL's verbs loader under Nsight Systems (r198d): the process called a null pointer
    frames = ("#0  0x0000000000000000 in ?? ()\nNo symbol table info available.\n"
              "#1  0x00007ff5c8b0f1da in ?? () from /opt/nsight/libToolsInjection64.so\n"
              "#2  0x00007ff58be01168 in initOnceFunc () at misc/ibvwrap.cc:94\n")
    top = top_of(tmp_path, frames)
    assert top.category is Category.RANK_CRASHED and "SIGSEGV" in top.title, top
    # an unknown frame elsewhere (a live process's backtrace, a hang) is no crash, nor is an outer frame at zero
    # (an unwinder's guess past the last frame)
    for calm in ("#0  0x00007ff5c83ae4df in ?? () from /lib/libc.so.6\n#1  0x00007ff5c885f606 in poll ()\n",
                 "#0  0x00007ff5c83ae4df in epoll_wait ()\n#7  0x0000000000000000 in ?? ()\n"):
        hypotheses = diagnose_paste(tmp_path, calm).hypotheses
        assert not [h for h in hypotheses if h.category is Category.RANK_CRASHED], (calm, hypotheses)


def test_fairseqs_gather_of_workers_that_fell_out_of_sync_is_a_desync(tmp_path: Path) -> None:
    # real: facebookresearch/fairseq (r199g), its message wrapped by the paste: the hypothetical out-of-memory in its
    # list of causes is no out-of-memory
    message = ("Exception: Unable to unpickle data from other workers. all_gather_list requires all \n"
               "workers to enter the function together, so this error usually indicates that the \n"
               "workers have fallen out of sync somehow. Workers can fall out of sync if one of \n"
               "them runs out of memory, or if there are other conditions in your training script \n"
               "that can cause one worker to finish an epoch while other workers are still iterating\n")
    assert top_of(tmp_path, message).category is Category.COLLECTIVE_DESYNC
    # a worker's own CUDA out-of-memory above it is the cause (fairseq skips the batch, the gather then fails)
    oom = ("| WARNING: ran out of memory with exception: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 "
           "GiB total capacity; 9.50 GiB already allocated)\n")
    assert top_of(tmp_path, oom + message).category is Category.RANK_OUT_OF_MEMORY
    # a message that says a worker ran out of memory is one
    assert top_of(tmp_path, "RuntimeError: one of the workers runs out of memory: CUDA out of memory. Tried to "
                  "allocate 2.00 GiB\n").category is Category.RANK_OUT_OF_MEMORY


def test_ray_1x_memory_monitor_refusing_a_task_is_host_memory(tmp_path: Path) -> None:
    # real: ray-project/ray (r199d): RLlib's trainer failed by Ray 1.x's memory monitor
    line = ("ray.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node ip-10-0-1-5 is used (15.98 / "
            "16.82 GB). The top 5 memory consumers are:\n")
    top = top_of(tmp_path, line)
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("ip-10-0-1-5",), top
    assert "host RAM" in top.title and "killed" not in top.title, top
    # a GPU's out-of-memory error is still the GPU's
    assert top_of(tmp_path, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB "
                  "total capacity)\n").category is Category.RANK_OUT_OF_MEMORY


def test_two_openmp_runtimes_in_one_process_are_the_environment(tmp_path: Path) -> None:
    # real: ray-project/raydp (r199d): xgboost_ray's actor aborts; the paste kept OpenMP's hint, not its error line
    hint = ("(_RemoteRayXGBoostActor pid=15183) OMP: Hint This means that multiple copies of the OpenMP runtime have been "
            "linked into the program. That is dangerous, since it can degrade performance or cause incorrect results.\n")
    abort = "(_RemoteRayXGBoostActor pid=15183) *** SIGABRT received at time=1642268188 ***\n"
    top = top_of(tmp_path, hint + abort)
    assert top.category is Category.UNRECOGNISED and "OpenMP" in top.title, top
    error = ("OMP: Error #15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.\n")
    assert "OpenMP" in top_of(tmp_path, error + abort).title
    # OpenMP's other notices are no failure: the abort alone is the process's crash
    notice = "(_RemoteRayXGBoostActor pid=15183) OMP: Info #276: omp_set_nested routine deprecated, please use " \
             "omp_set_max_active_levels instead.\n"
    assert top_of(tmp_path, notice + abort).category is Category.RANK_CRASHED


def test_ray_nodes_known_by_another_address_than_their_own(tmp_path: Path) -> None:
    # real: vllm-project/vllm (r199f): the driver's node asked of Ray by its DNS name
    named = ("(autoscaler +10m11s, ip=172.31.42.4) Error: No available node types can fulfill resource request "
             "{'node:ec2-54-1-2-3.us-west-2.compute.amazonaws.com': 0.001, 'GPU': 1.0}. Add suitable node types to "
             "this cluster to resolve this issue.\n")
    top = top_of(tmp_path, named)
    assert top.category is Category.INTERFACE_MISMATCH and "host name" in top.title, top
    # by an address, the node may exist and lack GPUs: Ray's placement, not the address
    by_ip = named.replace("ec2-54-1-2-3.us-west-2.compute.amazonaws.com", "10.163.194.101")
    assert top_of(tmp_path, by_ip).category is not Category.INTERFACE_MISMATCH
    assert top_of(tmp_path, named.replace("ec2-54-1-2-3.us-west-2.compute.amazonaws.com", "fd00::5")).category \
        is not Category.INTERFACE_MISMATCH
    # real: ray-project/ray (r199f): a worker's node on a VPN found by its Ethernet address
    vpn = ("(raylet, ip=10.19.0.7) [2023-03-21 21:53:44,254 I 76852 76852] global_state_accessor.cc:356: This node has "
           "an IP address of 10.19.0.7, while we can not find the matched Raylet address. This maybe come from when "
           "you connect the Ray cluster with a different IP address or connect a container.\n")
    top = top_of(tmp_path, vpn)
    assert top.category is Category.INTERFACE_MISMATCH and "10.19.0.7" in top.title, top
    # real: ray-project/ray (r199f): a node that found no address but loopback
    alone = "network_util.cc:62] Failed to find other valid local IP. Using 127.0.0.1, not possible to go distributed!\n"
    assert top_of(tmp_path, alone).category is Category.LOOPBACK_ADDRESS
    assert top_of(tmp_path, alone.replace("127.0.0.1", "10.0.0.5")).category is not Category.LOOPBACK_ADDRESS


def test_a_hosts_own_loopback_or_bridge_address_missing_from_the_clusters(tmp_path: Path) -> None:
    # real: skypilot-org/skypilot (r199f): the node's name resolved to 127.0.1.1, or to docker0's address
    for words in ("RuntimeError: IP address 127.0.1.1 not found in cluster IPs: ['10.0.0.4']",
                  "ValueError: '172.17.0.1' is not in list"):
        top = top_of(tmp_path, "Traceback (most recent call last):\n  File \"/sky/executor.py\", line 103, in main\n"
                     f"    node_idx = cluster_ips.index(ip_addr)\n{words}\n")
        assert top.category is Category.LOOPBACK_ADDRESS, (words, top)
    # another address missing from a list is the program's own error
    top = top_of(tmp_path, "Traceback (most recent call last):\n  File \"/sky/executor.py\", line 103, in main\n"
                 "    node_idx = cluster_ips.index(ip_addr)\nValueError: '10.0.0.5' is not in list\n")
    assert top.category is Category.RANK_CRASHED, top


def test_glooss_verbs_completion_wrapped_inside_its_constant(tmp_path: Path) -> None:
    # real: caffe2 (r199h): the enforce line wrapped by the paste inside IBV_WC_SUCCESS
    line = ("  what():  [enforce fail at /src/gloo/gloo/transport/ibverbs/pair.cc:470] wc->status == IBV_    "
            "WC_SUCCESS. 8 vs 0. Memory region send for slot 0: local access error\n")
    top = top_of(tmp_path, "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n" + line)
    assert top.category is Category.IB_COMPLETION and "local access error" in top.title, top


def test_a_mismatch_check_without_an_error_word_is_not_silent(tmp_path: Path) -> None:
    # real: lightseekorg/tokenspeed (r199e): a one-line assertion of its own
    assert diagnose_paste(tmp_path, "hidden_states.shape=(2, H) | local_num_tokens=4 | Mismatched shape\n").hypotheses
    assert not diagnose_paste(tmp_path, "INFO shapes checked: 0 mismatched, all fine\n").hypotheses


def test_one_long_line_wrapped_inside_a_name_after_its_underscore(tmp_path: Path) -> None:
    # pasted forms of r199h's gloo case: a terminal wrapped the enforce line at 100 columns inside IBV_WC_SUCCESS, the
    # rest opening in capitals (one line at that width is no repeated message)
    head = "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
    line = ("  what():  [enforce fail at /home/rengan/gloo/gloo/transport/ibverbs/pair.cc:466] wc->status == IBV_"
            "WC_SUCCESS. 12 vs 0. Memory region send for slot 0: transport retry counter exceeded")
    assert len(line[:100]) == 100 and line[99] == "_"
    top = top_of(tmp_path, head + line[:100] + "\n" + line[100:] + "\n")
    assert top.category is Category.IB_UNREACHABLE_AT_INIT, top
    # a line of its own below one that ends in an underscore after a space (no name cut) stays its own
    own = ("x" * 60 + " the variable is set to _\n" + "Traceback (most recent call last):\n").encode()
    assert wrap_width(own) == 0
