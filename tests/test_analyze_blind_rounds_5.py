"""Readings added after the twenty-first blind harvest (the r24* cases of the real corpus), one behaviour per test,
each with the look-alike it must not catch: ports in use as gloo and Accelerate say it, ROCm's GPU faults, a CUDA
failure in NCCL's P2P transport, a DETAIL fingerprint wrapped by the paste, NCCL's bootstrap hearing a rank twice,
a memory registration cut after the call's name, NCCL 2.2-2.3's transport lines, a data bar still running when
the others timed out early in the job. Lines are written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Event, Kind

diagnose = diagnose_paste


def test_ports_in_use_as_gloo_and_accelerate_say_it(tmp_path: Path) -> None:
    # real: pytorch/pytorch#59256 (500 gloo ranks on one host), huggingface/accelerate#74 (a closing backtick),
    # a RAG project's accelerate launch on a port another run held
    gloo = diagnose(tmp_path, "RuntimeError : [gloo/transport/tcp/pair.cc:176] bind: Address already in use\n")
    assert gloo.hypotheses[0].category is Category.PORT_IN_USE and "gloo could not bind" in gloo.hypotheses[0].title
    bare = diagnose(tmp_path, "RuntimeError: Address already in use`\n").hypotheses[0]
    assert bare.category is Category.PORT_IN_USE
    accelerate = one("ConnectionError: Tried to launch distributed communication on port `29500`, but another process "
                     "is utilizing it. Please specify a different port", Kind.STORE_ERROR)
    assert accelerate.data["what"] == "listen" and accelerate.data["store_port"] == 29500
    # gloo's connect that failed is no port in use
    refused = diagnose(tmp_path, "RuntimeError: [gloo/transport/tcp/pair.cc:799] connect [10.0.0.2]:4000: Connection "
                                 "refused\n").hypotheses
    assert all(h.category is not Category.PORT_IN_USE for h in refused)


def test_rocms_gpu_faults_are_the_gpu(tmp_path: Path) -> None:
    # real: ROCm/ROCm#5259, #4021, #2494, deepspeedai/DeepSpeed#6725 (MI300X, 7900 XTX)
    fault = one("Memory access fault by GPU node-2 (Agent handle: 0x5561f711dfd0) on address 0x7fb7a0d67000. Reason: "
                "Page not present or supervisor privilege.", Kind.GPU_ERROR)
    assert fault.data["hsa_node"] == 2 and "Page not present" in fault.data["message"]
    hang = one("HW Exception by GPU node-9 (Agent handle: 0x64ff272d8ab0) reason :GPU Hang", Kind.GPU_ERROR)
    assert hang.data["hardware"] and "GPU Hang" in hang.data["message"]
    kernel = one("[22340.105480] amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 "
                 "pasid:32776, for process python3 pid 172866 thread python3 pid 172866)", Kind.GPU_ERROR)
    assert kernel.origin.pid == 172866
    top = diagnose(tmp_path, "HW Exception by GPU node-4 (Agent handle: 0x1ebc04e0) reason :GPU Hang\n").hypotheses[0]
    assert top.category is Category.GPU_ERROR and "node-4" in top.title
    # a page fault of another driver, or the word in a process's own text, is not read
    assert not [e for e in events_of("BUG: unable to handle page fault for address: ffff8881") if e.kind is Kind.GPU_ERROR]


def test_a_cuda_failure_in_nccls_p2p_transport_is_peer_access(tmp_path: Path) -> None:
    # real: ROCm/rccl#1454 (hipified p2p.cc), OpenRLHF's weight sync (vllm-project/vllm#5477)
    line = ("UVOSLinux:19402:19419 [0] /usr/src/debug/rccl/build/hipify/src/transport/p2p.cc:237 NCCL WARN Cuda "
            "failure 'invalid argument'\n")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.PEER_ACCESS and "peer-to-peer transport" in top.title
    assert "NCCL_P2P_DISABLE=1" in top.fix
    # the same failure elsewhere in NCCL is the GPU's
    other = diagnose(tmp_path, line.replace("transport/p2p.cc:237", "enqueue.cc:1126")).hypotheses[0]
    assert other.category is Category.GPU_ERROR


def test_a_detail_fingerprint_wrapped_by_the_paste_is_still_a_desync(tmp_path: Path) -> None:
    # real: a repository's issue (jotr#4): TORCH_DISTRIBUTED_DEBUG=DETAIL, the shape on the next line
    paste = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running inconsistent collective: "
             "CollectiveFingerPrint(OpType=ALLGATHER, TensorShape\n=[41, 256, 8, 8, 8], TensorDtypes=Float)\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and "allgather" in top.title


def test_nccls_bootstrap_hearing_a_rank_twice_is_a_rank_given_twice(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning#14986 (Slurm: two processes with rank 1)
    line = "hpc-25-14:18569:18835 [0] bootstrap.cc:131 NCCL WARN Bootstrap Root : rank 1 of 8 ranks has already checked in\n"
    event = one(line, Kind.PROCESS_MAP)
    assert event.data["global_rank"] == 1 and event.data["world_size"] == 8 and event.data["twice"]
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_NEVER_JOINED and "rank 1 checked in twice" in top.title
    assert top.culprit_ranks == () and "--node-rank" in top.fix


def test_a_memory_registration_cut_after_the_calls_name_is_the_memlock_limit(tmp_path: Path) -> None:
    # real: a Slurm cluster's issue (trixie#77): the paste ends inside the WARN line
    top = diagnose(tmp_path, "cn135:30193:30246 [0] misc/ibvwrap.cc:252 NCCL WARN Call to ibv_reg_mr\n").hypotheses[0]
    assert top.category is Category.MEMLOCK_LIMIT
    # a successful registration's INFO line says nothing of the kind
    assert not [e for e in events_of("cn135:30193:30246 [0] NCCL INFO Call to ibv_reg_mr done") if
                e.kind is Kind.MEMLOCK_FAILURE]


def test_nccl_2_2_and_2_3_transport_lines_tell_the_hosts_transports(tmp_path: Path) -> None:
    # real: pytorch/pytorch#14870 (one host on sockets, the other on RoCE; the older build prints no "NCCL")
    paste = ("host-a:39358:39358 [0] NCCL INFO Using internal Network Socket\n"
             "host-b:19123:19123 [2] INFO Using internal Network IB\n")
    networks = {e.origin.host: e.data["network"] for e in diagnose_events(tmp_path, paste) if e.kind is Kind.NCCL_NET}
    assert networks == {"host-a": "Socket", "host-b": "IB"}
    assert diagnose(tmp_path, paste).hypotheses[0].category is Category.SOCKET_FALLBACK


def test_a_data_bar_still_running_when_the_others_timed_out_early_names_its_rank(tmp_path: Path) -> None:
    # real: huggingface/nanotron#204 (rank 0 grouping texts while the others' third collective timed out)
    bar = ("[default0]:Grouping texts in chunks of 2049:   8%|▊         | 726000/9672101 [02:32<30:38, 4866.01 "
           "examples/s]")
    timeout = ("[default3]:[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600892 "
               "milliseconds before timing out.")
    early = diagnose(tmp_path, bar + "\n" + timeout.format(seq=3) + "\n").hypotheses[0]
    assert early.category is Category.LAGGING_RANK and early.culprit_ranks == (0,) and "Grouping texts" in early.title
    # deep in training, a bar's last redraw may be long before the timeout: the training loop's own, not work alone
    late = diagnose(tmp_path, bar + "\n" + timeout.format(seq=211067) + "\n").hypotheses
    assert not any("Grouping texts" in h.title for h in late)


def diagnose_events(tmp_path: Path, text: str) -> list[Event]:
    from syncdoctor.analyze import analyze_paths

    path = tmp_path / "paste.txt"
    path.write_text(text)
    return list(analyze_paths([str(path)]).timeline.events)


def test_a_watchdog_line_wrapped_inside_its_own_words_is_joined() -> None:
    # real: huggingface/nanotron#204 (re-flowed after "Watchdog caught ", behind rank 0's progress bar)
    from analyze_helpers import read

    text = ("[default0]:Grouping texts:   8%|▊         | 726000/9672101 [02:32<30:38, 4866.01 examples/s][default2]:[E "
            "ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught \ncollective operation timeout: WorkNCCL(SeqNum=3, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600888 milliseconds before timing "
            "out.")
    joined = [e for e in read(text) if e.kind is Kind.WATCHDOG_TIMEOUT and e.seq == 3]
    assert joined and joined[0].origin.rank == 2 and joined[0].data["timeout_ms"] == 600000
    # another watchdog message is no cut timeout
    assert not [e for e in events_of("[PG 0 Rank 0] Watchdog caught exception: CUDA error") if
                e.kind is Kind.WATCHDOG_TIMEOUT]
