"""Readings of the hundred-and-sixty-seventh to -seventy-first rounds (``r170*``: PyTorch's newer distributed APIs and
symmetric memory, Transformer Engine and FP8 stacks, virtual machines and containers, unusual rendezvous and stores,
scientific ML at small labs, distributed evaluation; ``r171*``: training wrappers, inference engines, embedding
training, data pipelines, quantization, NCCL's variables; ``r172*``: late failures, MLPerf, PyTorch's CI, GPU sharing,
divergent code paths, heterogeneous clusters; ``r173*``: other schedulers, domestic accelerators, 3D vision,
tutorials, downstream CI, checkpoint conversion; ``r174*``: Spark, code LLMs, hyperparameter search, mixed precision,
elastic training) and of the culprits their in-log cases missed. One behaviour per test, each with the look-alike it
must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze.model import Category

_REVERSE = "[W521 13:07:59.801469723 socket.cpp:204] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"


def test_c10d_s_failed_reverse_lookups_alone_are_a_lead_not_silence(tmp_path: Path) -> None:
    # real: deepseek-ai/DeepEP#172, pytorch/pytorch#159007 (r170d): the warning every rank prints in a container whose
    # resolver has no name for its address, and nothing after it
    top = top_of(tmp_path, "root@5d23d6366618:/sgl-workspace/DeepEP# python3 tests/test_intranode.py\n" + _REVERSE * 8)
    assert top.category is Category.UNRECOGNISED and top.confidence == 0.2, top
    assert "err=-3: EAI_AGAIN" in top.title and "8 lines" in top.title, top.title
    assert "/etc/hosts" in (top.fix or "") and "MASTER_ADDR" in (top.fix or "")
    # (older releases' words)
    assert "1 line)" in top_of(tmp_path, "[c10d] The hostname of the client socket cannot be retrieved, error code: -3.\n").title
    # with a communicator formed after it, the warning says nothing about what failed: no lead of it
    formed = _REVERSE + "h1:1:1 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
    assert not any("reverse lookups" in h.title for h in diagnose_paste(tmp_path, formed).hypotheses)


def test_a_docker_bridge_address_is_no_suspect_where_nccl_warned_of_another_failure_first(tmp_path: Path) -> None:
    # real: Purkialo/CrowdDet#86 (r170c): one container on one machine, NCCL 2.4.8 failing its topology detection
    boot = "d13186ffee3a:57:57 [0] NCCL INFO Bootstrap : Using [0]eth0:172.17.0.2<0>\n"
    chain = "".join(f"d13186ffee3a:57:75 [0] NCCL INFO {at} -> 2\n" for at in ("init.cc:876", "init.cc:909"))
    warn = ("d13186ffee3a:57:75 [0] misc/topo.cc:22 NCCL WARN Could not find real path of "
            "/sys/class/pci_bus/0000:02/../../0000:02:00.0\n")
    top = top_of(tmp_path, boot + warn + chain)
    assert top.category is Category.UNRECOGNISED and "PCI tree" in top.title, top.title
    # the same 'unhandled system error' with no warning of its own before it: the bridge's address is the suspect
    assert top_of(tmp_path, boot + chain).category is Category.LOOPBACK_ADDRESS
    # (a warning after the error chain explains nothing of it)
    assert top_of(tmp_path, boot + chain + warn.replace("57:75", "57:57")).category is Category.LOOPBACK_ADDRESS


def test_a_tensor_shared_by_file_descriptor_that_could_not_be_mapped_is_shared_memory(tmp_path: Path) -> None:
    # real: tomotwin-cryoet#51 (r170e): an hour into an embedding run, torch.multiprocessing's rebuild_storage_fd
    error = ("RuntimeError: unable to mmap 512 bytes from file <filename not specified>: Cannot allocate memory (12)\n")
    top = top_of(tmp_path, error)
    assert top.category is Category.SHM_EXHAUSTED, top.title
    # a file of PyTorch's own name, as before; another mmap's ENOMEM is no shared memory
    assert top_of(tmp_path, error.replace("<filename not specified>", "</torch_77102_1846612178_0>")).category \
        is Category.SHM_EXHAUSTED
    assert top_of(tmp_path, error.replace("file <filename not specified>", "file </data/model.bin>")).category \
        is not Category.SHM_EXHAUSTED


def test_nccl_asked_for_without_a_gpu_is_read_where_the_paste_cut_the_message(tmp_path: Path) -> None:
    # real: pytorch/pytorch#117746 (r170a): DeviceMesh on a CPU-only host, the paste ending inside the message
    top = top_of(tmp_path, "RuntimeError: ProcessGroupNCCL is only supported with GP\n")
    assert top.category is Category.UNRECOGNISED and "sees no GPU" in top.title, top.title
    assert "sees no GPU" not in top_of(tmp_path, "RuntimeError: ProcessGroupNCCL is only supported within a group\n").title


def test_symmetric_memory_refusing_one_device_index_is_the_placement(tmp_path: Path) -> None:
    # real: vllm-project/vllm#45729 (r154b) and volcengine/verl#4503 (r170a): Ray's workers each see their GPU as cuda:0
    top = top_of(tmp_path, "RuntimeError: CUDASymmetricMemoryAllocator::rendezvous: detected allocations from "
                         "overlapping devices from different ranks.\n")
    assert top.category is Category.UNRECOGNISED and "CUDA_VISIBLE_DEVICES" in top.title, top.title
    assert top.category is not Category.DUPLICATE_GPU


def test_nccl_s_local_socket_refused_is_the_node_s_namespaces_not_the_network(tmp_path: Path) -> None:
    # real: NVIDIA/TransformerEngine#801 (r170b): userbuffers passing a CUDA IPC handle over NCCL's abstract socket
    line = "UDS: Sending data over socket /tmp/nccl-socket-3-deadcafebeef failed : **Connection refused** (111)\n"
    top = top_of(tmp_path, line)
    assert top.category is Category.UNRECOGNISED and "network namespace" in top.title, top.title
    # a TCP connection refused stays a peer that could not be reached
    assert top_of(tmp_path, "NCCL WARN Net : Connect to 10.0.0.2<43521> failed : Connection refused\n").category \
        is Category.PEER_UNREACHABLE


def test_a_client_that_could_not_connect_to_a_server_s_port_is_a_peer_not_reached(tmp_path: Path) -> None:
    # real: ggml-org/llama.cpp#12385 (r171b): the RPC backend's client and its rpc-servers
    top = top_of(tmp_path, "Failed to connect to 192.168.1.20:50052\n")
    assert top.category is Category.PEER_UNREACHABLE, top.title
    # a server of another version named first is the builds on the hosts, not the network (ggml-org/llama.cpp#26392)
    top = top_of(tmp_path, "ERROR: RPC server version mismatch: 4.0.1\nFailed to connect to 10.0.0.185:50052\n")
    assert top.category is Category.UNRECOGNISED and "different versions" in top.title, top.title
    # without a port, the words are too loose to say so
    assert top_of(tmp_path, "Failed to connect to the wandb service\n").category is not Category.PEER_UNREACHABLE


def test_invalid_device_function_is_a_build_without_the_gpu_s_architecture(tmp_path: Path) -> None:
    # real: beir-cellar/beir#67 (r171c): NCCL 2.4.8 of CUDA 10.1 on a GPU of compute capability 8
    top = top_of(tmp_path, "ubuntu:107848:107848 [0] NCCL INFO comm 0x7fab rank 1 nranks 2 cudaDev 0 - Init COMPLETE\n"
                         "ubuntu:107848:107848 [0] enqueue.cc:197 NCCL WARN Cuda failure 'invalid device function'\n")
    assert top.category is Category.UNRECOGNISED and "architecture" in top.title and top.culprit_ranks == (1,), top
    # ROCm's words (ROCm/rccl#2189) read alike; an illegal memory access stays the GPU's fault
    assert top_of(tmp_path, "[FATAL ERROR]: HIP failure: 'invalid device function'\n").category is Category.UNRECOGNISED
    assert top_of(tmp_path, "[FATAL ERROR]: HIP failure: 'an illegal memory access was encountered'\n").category \
        is Category.GPU_ERROR


def test_nvjpeg_s_allocator_failure_is_memory_run_out(tmp_path: Path) -> None:
    # real: NVIDIA/DALI#486 (r171d): DALI's decoder in one of the DDP processes
    top = top_of(tmp_path, 'RuntimeError: Critical error in pipeline: Error in thread 4: [/opt/dali/dali/pipeline/operators/'
                         'decoder/nvjpeg/nvjpeg_decoder_decoupled_api.h:351] NVJPEG error "5" : '
                         'NVJPEG_STATUS_ALLOCATOR_FAILURE n04418357/n04418357_26036.JPEG\n')
    assert top.category is Category.RANK_OUT_OF_MEMORY, top.title
    assert top_of(tmp_path, 'RuntimeError: NVJPEG error "2" : NVJPEG_STATUS_INVALID_PARAMETER\n').category \
        is not Category.RANK_OUT_OF_MEMORY


_FORWARDED = ("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 102241 closing signal {sig}\n"
              "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 102242 closing signal {sig}\n"
              "Traceback (most recent call last):\n"
              '  File "/home/u/lib/python3.8/site-packages/torch/distributed/launch.py", line 193, in <module>\n'
              "    main()\n"
              '  File "/hom\n')


def test_the_agent_passing_on_a_hangup_to_its_workers_was_stopped_from_outside(tmp_path: Path) -> None:
    # real: pytorch/pytorch#67538 (r172a): the paste cut before the agent's own SignalException
    top = top_of(tmp_path, _FORWARDED.format(sig="SIGHUP"))
    assert top.category is Category.RANK_KILLED and "SIGHUP" in top.title, top.title
    assert top_of(tmp_path, _FORWARDED.format(sig="SIGINT")).category is Category.RANK_KILLED
    # SIGTERM is what the agent sends the others after a worker failed: nothing says it was stopped from outside
    assert top_of(tmp_path, _FORWARDED.format(sig="SIGTERM")).category is not Category.RANK_KILLED


def test_cuda_unloading_at_exit_is_no_fault_of_the_gpu_and_no_cause_over_a_timeout(tmp_path: Path) -> None:
    # real: pytorch/pytorch#56390 (r172c): PyTorch's NCCL cleanup thread at the process's exit
    crash = ("terminate called after throwing an instance of 'c10::Error'\n  what():  CUDA error: driver shutting down\n"
             "frame #2: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x104 (0x7f75 in x.so)\n")
    top = top_of(tmp_path, crash)
    assert top.category is Category.RANK_CRASHED, top.title
    # after gloo's read timeout (SentimentDiscovery#43, r39e), the exit path stays under the wait it ended
    timeout = "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/buffer.cc:76] Read timeout [127.0.0.1]:32444\n"
    top = top_of(tmp_path, timeout + "terminate called after throwing an instance of 'c10::Error'\n"
                                   "  what():  CUDA error: driver shutting down\n")
    assert top.category is Category.LAGGING_RANK, top.title


def test_torchelastic_s_own_port_check_names_the_host(tmp_path: Path) -> None:
    # real: pytorch/pytorch#64789 (r172c): create_c10d_store in a CI container
    top = top_of(tmp_path, "RuntimeError: Address already in use\n\nThe above exception was the direct cause of the "
                         "following exception:\n\nOSError: on ca788e26754c, port: 45925 already in use\n")
    assert top.category is Category.PORT_IN_USE and "ca788e26754c" in top.culprit_hosts, top
    assert "45925" in top.title


def test_pytorch_s_test_harness_reporting_a_process_s_exit_code_is_that_process_dying(tmp_path: Path) -> None:
    # real: pytorch/pytorch#48500 (r173e): MultiProcessTestCase's check of its spawned ranks' exit codes
    frames = ('  File "/opt/conda/lib/python3.6/site-packages/torch/testing/_internal/common_distributed.py", line 450, '
              "in _check_return_codes\n")
    top = top_of(tmp_path, "Traceback (most recent call last):\n" + frames +
               "AssertionError: False is not true : Expected zero exit code but got -11 for pid: 2718941\n")
    assert top.category is Category.RANK_CRASHED and "SIGSEGV" in top.title, top.title
    # the newer words, naming the process's index
    top = top_of(tmp_path, "AssertionError: Expect process 1 exit code to match Process 0 exit code of 0, but got -6\n")
    assert top.category is Category.RANK_CRASHED and "SIGABRT" in top.title and top.culprit_local_ranks == (1,), top
    # a test that expected the exit code it got says nothing failed
    assert not any("died" in h.title for h in diagnose_paste(
        tmp_path, "Expect process 1 exit code to match Process 0 exit code of 0, but got 0\n").hypotheses)


def test_a_loss_scale_at_its_minimum_is_the_run_diverging(tmp_path: Path) -> None:
    # real: microsoft/DeepSpeed#5426 and DeepSpeedExamples#418 (r174e): fp16 training under DeepSpeed's loss scaler
    top = top_of(tmp_path, "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.\n")
    assert top.category is Category.RANK_CRASHED and "diverged" in top.title, top.title


def test_horovod_s_rendezvous_store_not_reached_through_a_path_pip_built(tmp_path: Path) -> None:
    # real: horovod/horovod#2955 (r174a): the source path of a Horovod that pip built holds 'pip-install', which is no
    # download: the driver's HTTP store was not reached
    line = ("Mon Jun  7 11:51:57 2021[1]<stderr>:[2021-06-07 11:51:57.963853: E /tmp/pip-install-s04s9x1l/horovod_dec38/"
            "horovod/common/gloo/http_store.cc:96] HTTP GET request failed too many times, aborting. See exception "
            "message above.\n")
    top = top_of(tmp_path, line + "Mon Jun  7 11:51:57 2021[1]<stderr>:terminate called after throwing an instance of "
                                "'std::runtime_error'\n")
    assert top.category is Category.PEER_UNREACHABLE and "HTTP store" in top.title, top.title
    # a refused connection of pip itself stays a download's, not the job's peer
    assert top_of(tmp_path, "ERROR: pip install failed: Connection refused\n").category is not Category.PEER_UNREACHABLE


def test_nccl_tests_failure_after_a_collector_s_timestamp(tmp_path: Path) -> None:
    # real: NVIDIA/nccl-tests#98 (r172f) under scripts/pasted_forms.py's timestamps form (kubectl logs --timestamps)
    line = " Test CUDA failure common.cu:1045 'CUDA driver version is insufficient for CUDA runtime version'\n"
    for paste in (line, "2026-12-01T10:00:00.123456789Z " + line):
        top = top_of(tmp_path, paste)
        assert top.category is Category.UNRECOGNISED and "driver is older" in top.title, (paste, top.title)


_SPAWNED = """Traceback (most recent call last):
  File "/home/u/train.py", line 1651, in <module>
    main()
  File "/home/u/train.py", line 1642, in main
    mp.spawn(run, args=(world_size, args), nprocs={nprocs}, join=True)
  File "/home/u/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 184, in join
    raise ProcessExitedException(
torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT
"""


def test_a_process_of_a_world_spawned_on_one_machine_is_its_rank(tmp_path: Path) -> None:
    # real: k2-fsa/icefall#1764 (r169d): mp.spawn(…, nprocs=world_size) starts every rank there, so process 1 is rank 1
    top = top_of(tmp_path, _SPAWNED.format(nprocs="world_size"))
    assert top.culprit_ranks == (1,), top
    # spawning a node's share (nprocs=ngpus_per_node, the ImageNet example's multi-node form) names the local rank only
    top = top_of(tmp_path, _SPAWNED.format(nprocs="ngpus_per_node"))
    assert not top.culprit_ranks and top.culprit_local_ranks == (1,), top
