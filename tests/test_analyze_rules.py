"""Every A code: a positive case (right category, culprit and fix) and a negative case (a look-alike that
must not trigger it), on small synthetic multi-rank logs written the way the real tools write them."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Diagnosis
from syncdoctor.kb import get_rule

NCCL_TIMEOUT = ("[rank{r}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={n}, NumelOut={n}, Timeout(ms)=600000)"
                " ran for 600060 milliseconds before timing out.")
NCCL_STATUS = ("[rank{r}]:[E321 02:07:08.409 ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
               "Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: "
               "{enq}, last completed NCCL work: {comp}.")
GLOO_TIMEOUT = ("[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
                "waiting 5000ms for recv operation to complete")
CLOSED = ("[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
          "[10.0.0.{peer}]:4000. This is typically caused by a remote worker crashing.")


def write(tmp_path: Path, files: dict[str, list[str]]) -> Diagnosis:
    for name, lines in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    return analyze_paths([str(tmp_path)]).diagnosis


def categories(diagnosis: Diagnosis) -> set[Category]:
    return {h.category for h in diagnosis.hypotheses}


def root(diagnosis: Diagnosis):
    assert diagnosis.root_cause is not None, [h.title for h in diagnosis.hypotheses]
    return diagnosis.root_cause


# --- A001 lagging rank ---------------------------------------------------------------------------------------

def test_a001_rank_behind_in_sequence_numbers(tmp_path) -> None:
    files = {f"node{r // 2}/rank{r}.log": [NCCL_TIMEOUT.format(r=r, seq=1580, op="ALLREDUCE", n=1024),
                                           NCCL_STATUS.format(r=r, seq=1580, enq=1582, comp=1579)] for r in range(3)}
    files["node1/rank3.log"] = ["[rank3]:[E321 02:07:09.0 ProcessGroupNCCL.cpp:1600] [PG ID 0 PG GUID 0(default_pg) "
                                "Rank 3] Received a dump signal due to a collective timeout from  rank 0 and we will "
                                "try our best to dump the debug info. Last enqueued NCCL work: 1579, last completed "
                                "NCCL work: 1579."]
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.code == "A001"
    assert hypothesis.culprit_ranks == (3,) and hypothesis.culprit_hosts == ("node1",)
    assert hypothesis.affected_ranks == (0, 1, 2)
    assert "#1582" in hypothesis.title or "#1580" in hypothesis.title


def test_a001_quiet_rank_in_gloo_logs(tmp_path) -> None:
    files = {f"host{r // 2}/rank{r}.log": ["step 3", GLOO_TIMEOUT.format(r=r)] for r in range(3)}
    files["host1/rank3.log"] = ["step 3"]
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.LAGGING_RANK and hypothesis.culprit_ranks == (3,)


def test_a001_desync_report_and_monitored_barrier(tmp_path) -> None:
    diagnosis = write(tmp_path, {"rank0.log": [
        "\t - [0] Timeout at collective: ALLREDUCE, #12",
        "\t - To our best knowledge, ranks [2] are the lagging ranks that caused this timeout. They never joined any "
        "collectives"]})
    assert root(diagnosis).culprit_ranks == (2,)
    other = tmp_path / "b"
    diagnosis = write(other, {"rank0.log": ["RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in "
                                            "2000 ms"]})
    assert root(diagnosis).culprit_ranks == (1, 3)


def test_a001_negative_all_ranks_in_the_same_collective(tmp_path) -> None:
    files = {f"rank{r}.log": [NCCL_TIMEOUT.format(r=r, seq=80, op="ALLREDUCE", n=8),
                              NCCL_STATUS.format(r=r, seq=80, enq=80, comp=79)] for r in range(4)}
    diagnosis = write(tmp_path, files)
    assert Category.LAGGING_RANK not in categories(diagnosis)
    assert diagnosis.root_cause is None and Category.UNEXPLAINED_TIMEOUT in categories(diagnosis)  # A019


# --- A002 collective desync ----------------------------------------------------------------------------------

def test_a002_different_op_at_the_same_seq(tmp_path) -> None:
    files = {f"rank{r}.log": [NCCL_TIMEOUT.format(r=r, seq=80078, op="ALLREDUCE", n=1024)] for r in range(4)}
    files["rank7.log"] = [NCCL_TIMEOUT.format(r=7, seq=80078, op="BROADCAST", n=1024)]
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.COLLECTIVE_DESYNC and hypothesis.culprit_ranks == (7,)
    assert "broadcast" in hypothesis.title


def test_a002_negative_straggler_is_not_a_desync(tmp_path) -> None:
    # rank 3 is alive (its communicator formed) and never timed out: it never entered #9, where the others wait
    files = {f"rank{r}.log": [NCCL_TIMEOUT.format(r=r, seq=9, op="ALLREDUCE", n=64)] for r in range(3)}
    files["rank3.log"] = ["[rank3]:node1:1234:1290 [3] NCCL INFO comm 0x1 rank 3 nranks 4 cudaDev 3 busId 1000 - "
                          "Init COMPLETE"]
    diagnosis = write(tmp_path, files)
    assert Category.COLLECTIVE_DESYNC not in categories(diagnosis)
    assert root(diagnosis).category is Category.LAGGING_RANK and root(diagnosis).culprit_ranks == (3,)


@pytest.mark.parametrize("ops", [("SEND", "RECV"), ("SEND", "RECV", "RECV", "COALESCED")])
def test_a002_negative_a_pipelines_send_and_its_peers_recv_are_a_pair(tmp_path, ops) -> None:
    # a pipeline's stages time out in point-to-point work at one number: the send of one stage and the recv of the
    # next are the two halves of one transfer (and batched ones are COALESCED), not ranks running different calls
    files = {f"rank{r}.log": [NCCL_TIMEOUT.format(r=r, seq=12, op=op, n=4096)] for r, op in enumerate(ops)}
    diagnosis = write(tmp_path, files)
    assert Category.COLLECTIVE_DESYNC not in categories(diagnosis)
    assert diagnosis.root_cause is None
    assert diagnosis.hypotheses[0].category is Category.UNEXPLAINED_TIMEOUT
    # the same ranks in a collective that differs still read as the desync
    files["rank0.log"] = [NCCL_TIMEOUT.format(r=0, seq=13, op="ALLREDUCE", n=64)]
    files["rank1.log"] = [NCCL_TIMEOUT.format(r=1, seq=13, op="BROADCAST", n=64)]
    files["rank2.log"] = [NCCL_TIMEOUT.format(r=2, seq=13, op="ALLREDUCE", n=64)]
    assert Category.COLLECTIVE_DESYNC in categories(write(tmp_path, files))


def test_a002_every_rank_stuck_inside_a_different_collective_numbered_different_calls(tmp_path) -> None:
    # real: open-mmlab/mmsegmentation#2137, rank 0 timed out in #7559 while rank 1 had passed it (in #7561):
    # #7559 cannot have completed on rank 1 without rank 0
    files = {f"rank{r}.log": [NCCL_TIMEOUT.format(r=r, seq=seq, op="_ALLGATHER_BASE", n=64)]
             for r, seq in ((0, 7559), (1, 7561))}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.COLLECTIVE_DESYNC and hypothesis.affected_ranks == (0, 1)
    assert "rank 0 in #7559; rank 1 in #7561" in hypothesis.title
    assert Category.LAGGING_RANK not in categories(write(tmp_path, files))


def test_a002_detail_fingerprints(tmp_path) -> None:
    line = ("RuntimeError: Detected mismatch between collectives on ranks. Rank {a} is running collective: "
            "CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE, TensorShape=[10]), but Rank 2 is running "
            "collective: CollectiveFingerPrint(SequenceNumber=5, OpType=BROADCAST, TensorShape=[10]).")
    diagnosis = write(tmp_path, {f"rank{a}.log": [line.format(a=a)] for a in (0, 1, 3)})
    assert root(diagnosis).category is Category.COLLECTIVE_DESYNC and root(diagnosis).culprit_ranks == (2,)


LIGHTNING_DONE = "`Trainer.fit` stopped: `max_epochs=20` reached."


@pytest.mark.parametrize("done", [LIGHTNING_DONE, "[rank: 0] `Trainer.fit` stopped: `max_steps=5000` reached."])
def test_a002_a_collective_after_training_ended_on_one_rank(tmp_path, done: str) -> None:
    """Rank 0 ends its training loop, then times out alone in a one-element all_reduce: end-of-run code only it
    runs (a save with a barrier inside). Rank 0 is the culprit, not a victim of an unseen late rank."""
    diagnosis = write(tmp_path, {"job.log": ["Epoch 19: 100%|##########| 782/782 [00:05<00:00, loss=0.45]", done,
                                             NCCL_TIMEOUT.format(r=0, seq=9001, op="ALLREDUCE", n=1)]})
    top = root(diagnosis)
    assert top.category == Category.COLLECTIVE_DESYNC and top.culprit_ranks == (0,), top.title
    assert "after training had ended" in top.title and "1 elements" in top.title
    assert [e.note for e in top.evidence] == ["training loop ended", "then timed out"]


def test_a002_after_training_needs_the_timeout_after_the_end_and_one_rank(tmp_path) -> None:
    # the timeout came first, then the end of training was printed: a late rank as ever, not this rule
    before = write(tmp_path / "before", {"job.log": [NCCL_TIMEOUT.format(r=0, seq=9, op="ALLREDUCE", n=1),
                                                      LIGHTNING_DONE]})
    assert not any("after training had ended" in h.title for h in before.hypotheses)
    # two ranks timed out after it: they wait together for someone else (a final barrier), no culprit among them
    both = write(tmp_path / "both", {"job.log": [LIGHTNING_DONE, NCCL_TIMEOUT.format(r=1, seq=9, op="BARRIER", n=1),
                                                 NCCL_TIMEOUT.format(r=2, seq=9, op="BARRIER", n=1)]})
    assert not any("after training had ended" in h.title for h in both.hypotheses)


# --- A003 crash / A004 OOM: the cause vs the cascade ---------------------------------------------------------

def test_a003_crash_before_the_cascade(tmp_path) -> None:
    files = {f"host0/rank{r}.log": [CLOSED.format(r=r, peer=2)] for r in range(2)}
    files["host1/rank2.log"] = ["[rank2]: Traceback (most recent call last):",
                                '[rank2]:   File "train.py", line 88, in step', "[rank2]:     x = batch['y']",
                                "[rank2]: KeyError: 'y'"]
    files["host1/rank3.log"] = [CLOSED.format(r=3, peer=2)]
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.RANK_CRASHED and hypothesis.culprit_ranks == (2,)
    assert hypothesis.culprit_hosts == ("host1",) and hypothesis.affected_ranks == (0, 1, 3)
    assert hypothesis.evidence[0].ref.source.endswith("rank2.log") and "KeyError" in hypothesis.evidence[0].text
    assert "train.py:88 in step" in hypothesis.what


def test_a003_negative_victim_that_raised_during_cleanup(tmp_path) -> None:
    files = {"rank0.log": [CLOSED.format(r=0, peer=1), "[rank0]: ValueError: cannot save checkpoint"],
             "rank1.log": ["[rank1]: SystemExit: 1"]}
    diagnosis = write(tmp_path, files)
    assert not any(h.category is Category.RANK_CRASHED and 0 in h.culprit_ranks for h in diagnosis.hypotheses)


def test_a003_peer_named_by_the_cascade(tmp_path) -> None:
    warn = ("[2025-03-01 10:00:0{s}] node{h}:10{r}:20{r} [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection "
            "closed by remote peer node2<43021>")
    files = {f"node{h}/rank{r}.log": [warn.format(s=r, h=h, r=r)] for h, r in ((0, 0), (0, 1), (1, 2), (1, 3))}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.RANK_CRASHED and hypothesis.culprit_hosts == ("node2",)
    assert hypothesis.affected_ranks == (0, 1, 2, 3)


def test_a003_one_lost_peer_is_a_hedge_not_a_verdict(tmp_path) -> None:
    # one process's word: its peer went away, or the network between them did
    files = {"node0/rank0.log": [CLOSED.format(r=0, peer=9)]}
    diagnosis = write(tmp_path, files)
    assert diagnosis.root_cause is None  # too little to call it one
    hypothesis = diagnosis.hypotheses[0]
    assert hypothesis.category is Category.RANK_CRASHED and hypothesis.confidence <= 0.4
    assert hypothesis.culprit_hosts == ("10.0.0.9",) and "network" in hypothesis.title
    assert hypothesis.culprit_ranks == () and hypothesis.affected_ranks == (0,)


def test_a025_sigkill_from_the_launcher_summary(tmp_path) -> None:
    diagnosis = analyze_paths([str(Path(__file__).parent / "fixtures" / "analyze" / "lab" / "sigkill")]).diagnosis
    hypothesis = root(diagnosis)
    assert hypothesis.category is Category.RANK_KILLED and hypothesis.code == "A025"
    assert hypothesis.culprit_ranks == (2,) and "OOM killer" in hypothesis.fix


def test_a003_first_failure_across_hosts_is_a_hint(tmp_path) -> None:
    files = {"a/host0/rank0.log": ["2024-05-01 10:00:05,000 [rank0]: ValueError: bad shard"],
             "a/host1/rank1.log": ["2024-05-01 10:00:01,000 [rank1]: ValueError: bad shard"]}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.culprit_ranks == (0, 1)
    assert "rank 1 failed first" in hypothesis.what and "clocks may differ" in hypothesis.what


def test_a004_out_of_memory(tmp_path) -> None:
    files = {f"rank{r}.log": [NCCL_TIMEOUT.format(r=r, seq=6, op="ALLREDUCE", n=8)] for r in range(4)}
    files["rank5.log"] = ["[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 5; "
                          "79.15 GiB total capacity)"]
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.RANK_OUT_OF_MEMORY and hypothesis.code == "A004"
    assert hypothesis.culprit_ranks == (5,) and set(hypothesis.affected_ranks) == {0, 1, 2, 3}


def test_a004_negative_no_oom(tmp_path) -> None:
    diagnosis = write(tmp_path, {"rank0.log": ["[rank0]: RuntimeError: CUDA error: an illegal memory access"]})
    assert Category.RANK_OUT_OF_MEMORY not in categories(diagnosis)
    assert root(diagnosis).category is Category.GPU_ERROR  # A021: the GPU's fault, not a plain crash


# --- A005 network partition ----------------------------------------------------------------------------------

def test_a005_host_that_cannot_reach_the_store(tmp_path) -> None:
    hypothesis = root(analyze_paths([str(Path(__file__).parent / "fixtures" / "analyze" / "lab" / "cut")]).diagnosis)
    assert hypothesis.category is Category.NETWORK_PARTITION and hypothesis.culprit_hosts == ("host2",)


def test_a005_a_rendezvous_shutdown_after_the_store_went_is_not_a_cut_link(tmp_path) -> None:
    """A real lab run of the cut (tests/test_analyze_e2e.py::test_cut_link, 1 run in 9): host0's agent, which
    served the store, exited first; host1's agent then "failed to shutdown the rendezvous" (a
    RendezvousConnectionError). Only host2's link was cut."""
    lab = Path(__file__).parent / "fixtures" / "analyze" / "lab" / "cut-shutdown-race"
    diagnosis = analyze_paths([str(lab)]).diagnosis
    hypothesis = root(diagnosis)
    assert hypothesis.category is Category.NETWORK_PARTITION and hypothesis.culprit_hosts == ("host2",)
    assert not [h for h in diagnosis.hypotheses if "host1" in h.culprit_hosts], [h.title for h in diagnosis.hypotheses]


def test_a005_negative_store_errors_everywhere(tmp_path) -> None:
    files = {f"host{r}/rank{r}.log": [GLOO_TIMEOUT.format(r=r),
                                      "[W1129 14:00:21.6 socket.cpp:494] [c10d] waitForInput: socket SocketImpl(fd=4) "
                                      "timed out after 5000ms"] for r in range(3)}
    assert Category.NETWORK_PARTITION not in categories(write(tmp_path, files))


# --- A006-A009 interfaces --------------------------------------------------------------------------------------

def _nccl_host(host: str, rank: int, net: str, bootstrap: str = "eth0:10.1.0.{r}<0>") -> list[str]:
    p = f"{host}:10{rank}:20{rank} [0] NCCL INFO "
    lines = [p + "Bootstrap : Using " + bootstrap.format(r=rank + 1)]
    lines += [p + "NET/IB : No device found."] if net == "Socket" else [p + "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:x"]
    lines += [p + f"Using network {net}",
              p + f"comm 0x55 rank {rank} nranks 3 cudaDev 0 busId 1b000 - Init COMPLETE",
              NCCL_TIMEOUT.format(r=rank, seq=2, op="ALLREDUCE", n=8)]
    return lines


def test_a006_socket_fallback(tmp_path) -> None:
    files = {"node0.log": _nccl_host("node0", 0, "IB"), "node1.log": _nccl_host("node1", 1, "IB"),
             "node2.log": _nccl_host("node2", 2, "Socket")}
    diagnosis = write(tmp_path, files)
    fallback = next(h for h in diagnosis.hypotheses if h.category is Category.SOCKET_FALLBACK)
    assert fallback.culprit_hosts == ("node2",) and fallback.culprit_ranks == (2,) and fallback.code == "A006"


def test_a006_negative_all_ib(tmp_path) -> None:
    files = {f"node{r}.log": _nccl_host(f"node{r}", r, "IB") for r in range(3)}
    assert Category.SOCKET_FALLBACK not in categories(write(tmp_path, files))


def test_a007_host_on_another_subnet(tmp_path) -> None:
    files = {f"node{r}.log": _nccl_host(f"node{r}", r, "IB") for r in range(3)}
    files["node3.log"] = _nccl_host("node3", 3, "IB", bootstrap="eth1:192.168.5.3<0>")
    hypothesis = next(h for h in write(tmp_path, files).hypotheses if h.category is Category.INTERFACE_MISMATCH)
    assert hypothesis.culprit_hosts == ("node3",) and "192.168.5.0/24" in hypothesis.title


def test_a007_negative_same_subnet(tmp_path) -> None:
    files = {f"node{r}.log": _nccl_host(f"node{r}", r, "IB") for r in range(4)}
    assert Category.INTERFACE_MISMATCH not in categories(write(tmp_path, files))


def test_a008_nccl_bootstrap_on_loopback_or_docker(tmp_path) -> None:
    files = {"node0.log": _nccl_host("node0", 0, "IB"), "node1.log": _nccl_host("node1", 1, "IB", "docker0:172.17.0.1<0>"),
             "node2.log": _nccl_host("node2", 2, "IB", "lo:127.0.0.1<0>")}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.LOOPBACK_ADDRESS and hypothesis.culprit_hosts == ("node1", "node2")
    assert "NCCL_SOCKET_IFNAME" in hypothesis.fix


def test_a008_gloo_hostname_on_loopback_real_lab_logs() -> None:
    hypothesis = root(analyze_paths([str(Path(__file__).parent / "fixtures" / "analyze" / "lab" / "loopback")]).diagnosis)
    assert hypothesis.category is Category.LOOPBACK_ADDRESS and hypothesis.culprit_hosts == ("host0", "host1")
    assert "GLOO_SOCKET_IFNAME" in hypothesis.fix


def test_a008_one_host_on_loopback_is_named_by_its_peers(tmp_path) -> None:
    # host1 advertises 127.0.0.1; host0 is healthy and dials it. gloo does not bind the dialling socket, so
    # host0's lines show local=127.0.0.1 too: that is no evidence against host0
    line = ("[.../gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, willRetry=0, retry=4, retryLimit=3, "
            "rank={r}, size=4, local=[127.0.0.1]:4000, remote=[127.0.0.1]:9612$1, error=SO_ERROR: Connection refused")
    files = {f"host0/rank{r}.log": [line.format(r=r)] for r in (0, 1)}
    files["host1/rank2.log"] = ["[rank2]: RuntimeError: Gloo connectFullMesh failed with [../pair.h:311] Connect "
                                "timeout [none]"]
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.LOOPBACK_ADDRESS and hypothesis.culprit_hosts == ("host1",)
    assert "syncdoctor check" in hypothesis.fix  # the dialling host may advertise loopback too: say how to look


def test_a008_hosts_dialling_each_others_loopback_are_both_named(tmp_path) -> None:
    line = ("[.../gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, willRetry=0, retry=4, retryLimit=3, "
            "rank={r}, size=4, local=[127.0.0.1]:4000, remote=[127.0.0.1]:9612$1, error=SO_ERROR: Connection refused")
    files = {f"host{r // 2}/rank{r}.log": [line.format(r=r)] for r in (1, 3)}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.LOOPBACK_ADDRESS and hypothesis.culprit_hosts == ("host0", "host1")
    assert "syncdoctor check" not in hypothesis.fix


def test_a008_negative_normal_bootstrap(tmp_path) -> None:
    files = {f"node{r}.log": _nccl_host(f"node{r}", r, "IB") for r in range(2)}
    assert Category.LOOPBACK_ADDRESS not in categories(write(tmp_path, files))


def test_a009_interface_missing_real_lab_logs() -> None:
    hypothesis = root(analyze_paths([str(Path(__file__).parent / "fixtures" / "analyze" / "lab" / "ifmissing")]).diagnosis)
    assert hypothesis.category is Category.INTERFACE_MISSING and hypothesis.culprit_hosts == ("host1",)
    assert hypothesis.culprit_ranks == (2, 3) and "ens9" in hypothesis.fix


def test_a009_negative(tmp_path) -> None:
    assert Category.INTERFACE_MISSING not in categories(write(tmp_path, {"r.log": [GLOO_TIMEOUT.format(r=0)]}))


def _nccl_no_iface(host: str, rank: int, value: str | None) -> list[str]:
    pid = 700 + rank
    setting = f"{host}:{pid}:{pid} [{rank % 2}] NCCL INFO NCCL_SOCKET_IFNAME set by environment to {value}"
    return [*([setting] if value else []),
            f"[2026-11-29 19:38:22] {host}:{pid}:{pid} [{rank % 2}] bootstrap.cc:114 NCCL WARN Bootstrap : no "
            "socket interface found",
            f"[rank{rank}]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3135, "
            "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9"]


def test_a009_nccl_socket_ifname_on_one_host(tmp_path) -> None:
    files = {f"host1/rank{r}.log": _nccl_no_iface("node1", r, "ens9") for r in (2, 3)}
    files |= {f"host0/rank{r}.log": [f"node0:{700 + r}:{700 + r} [{r}] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>"]
              for r in (0, 1)}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.code == "A009" and hypothesis.culprit_ranks == (2, 3) and hypothesis.culprit_hosts == ("host1",)
    assert "NCCL_SOCKET_IFNAME=ens9" in hypothesis.title and "NCCL_SOCKET_IFNAME=ens9" in hypothesis.fix
    assert [e.note for e in hypothesis.evidence][:2] == ["NCCL found no socket interface"] * 2


def test_a009_nccl_value_not_in_the_logs(tmp_path) -> None:
    hypothesis = root(write(tmp_path, {"rank0.log": _nccl_no_iface("vm", 0, None)}))
    assert hypothesis.code == "A009" and "no usable socket interface" in hypothesis.title
    assert hypothesis.confidence < 0.9


def test_a009_nccl_negative_interface_found(tmp_path) -> None:
    files = {"rank0.log": ["vm:700:700 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
                           "vm:700:700 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>"]}
    assert Category.INTERFACE_MISSING not in categories(write(tmp_path, files))


# --- A010 never joined ----------------------------------------------------------------------------------------

def test_a010_rank_never_joined(tmp_path) -> None:
    files = {f"rank{r}.log": [f"[rank{r}]: torch.distributed.DistStoreError: wait timeout after 30000ms, keys: "
                              "/default_pg/0//cpu//0/3"] for r in range(3)}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.RANK_NEVER_JOINED and hypothesis.culprit_ranks == (3,)


def test_a010_negative(tmp_path) -> None:
    files = {"rank0.log": ["[rank0]: torch.distributed.DistNetworkError: The client socket has timed out after "
                           "1800000ms while trying to connect to (10.0.0.1, 29500)."]}
    assert Category.RANK_NEVER_JOINED not in categories(write(tmp_path, files))


# --- A011/A012 IB retry exceeded at init vs late -----------------------------------------------------------

IB_WARN = ("[2025-03-01 10:00:40] node{h}:10{r}:30{r} [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion "
           "from peer 10.1.0.{peer}<43021> with status=12 opcode=0 len=0 vendor err 129 (Recv)")


def _ib_files(seq: int, completed: int) -> dict[str, list[str]]:
    files = {}
    for r in range(3):
        p = f"node{r}:10{r}:20{r} [0] NCCL INFO "
        files[f"node{r}.log"] = [p + f"Bootstrap : Using eth0:10.1.0.{r + 1}<0>",
                                 p + f"comm 0x55 rank {r} nranks 3 cudaDev 0 busId 1b000 - Init COMPLETE",
                                 NCCL_TIMEOUT.format(r=r, seq=seq, op="ALLREDUCE", n=8),
                                 NCCL_STATUS.format(r=r, seq=seq, enq=seq, comp=completed)]
    files["node0.log"].insert(2, IB_WARN.format(h=0, r=0, peer=3))
    files["node1.log"].insert(2, IB_WARN.format(h=1, r=1, peer=3))
    return files


def test_a011_retry_exceeded_right_after_init(tmp_path) -> None:
    hypothesis = root(write(tmp_path, _ib_files(seq=1, completed=0)))
    assert hypothesis.category is Category.IB_UNREACHABLE_AT_INIT and hypothesis.code == "A011"
    assert hypothesis.culprit_hosts == ("node2",)  # named as the peer by two other hosts
    assert "will not" in hypothesis.what and "NCCL_IB_TIMEOUT=" not in hypothesis.fix


def test_a012_retry_exceeded_late_in_training(tmp_path) -> None:
    hypothesis = root(write(tmp_path, _ib_files(seq=5001, completed=5000)))
    assert hypothesis.category is Category.IB_LINK_FAILURE and hypothesis.code == "A012"
    assert "NCCL_IB_TIMEOUT=22" in hypothesis.fix and "0-31" in hypothesis.fix


def test_a011_a012_negative_other_completion_status(tmp_path) -> None:
    line = ("node0:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.1.0.2<1> with error "
            "5, opcode 0, len 0, vendor err 249 (Recv)")
    diagnosis = write(tmp_path, {"node0.log": [line]})
    assert not categories(diagnosis) & {Category.IB_UNREACHABLE_AT_INIT, Category.IB_LINK_FAILURE}


# --- A013-A018: local NCCL failures and the stuck watchdog -----------------------------------------------------

W = "node{h}:1{h}:2{h} [0] misc/x.cc:1 NCCL WARN "
LOCAL = [
    ("Call to ibv_modify_qp failed with 22 Invalid argument, on dev mlx5_0:1, local GID index 3",
     Category.IB_MODIFY_QP, "NCCL_IB_GID_INDEX"),
    ("Call to ibv_modify_qp failed with 110 Connection timed out", Category.IB_MODIFY_QP, "NCCL_CROSS_NIC=0"),
    ("Error: failed to extend /dev/shm/nccl-Fs7rW9 to 9637892 bytes", Category.SHM_EXHAUSTED, "--shm-size"),
    ("Call to ibv_reg_mr failed with error Cannot allocate memory", Category.MEMLOCK_LIMIT, "memlock"),
    ("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000", Category.DUPLICATE_GPU, "set_device"),
    ("Cuda failure 217 'peer access is not supported between these two devices'", Category.PEER_ACCESS,
     "NCCL_P2P_DISABLE=1"),
]


@pytest.mark.parametrize(("message", "category", "fix_word"), LOCAL)
def test_a013_to_a017_local_failures(tmp_path, message, category, fix_word) -> None:
    files = {"node0.log": [W.format(h=0) + message], "node1.log": [CLOSED.format(r=1, peer=1)]}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is category and hypothesis.culprit_hosts == ("node0",)
    assert fix_word in hypothesis.fix
    assert get_rule(hypothesis.code) is not None


@pytest.mark.parametrize(("message", "category", "fix_word"), LOCAL)
def test_a013_to_a017_negative(tmp_path, message, category, fix_word) -> None:
    files = {"node0.log": [W.format(h=0) + "Some other NCCL warning", "node0:1:2 [0] NCCL INFO " + message]}
    assert category not in categories(write(tmp_path, files))


def test_a018_heartbeat(tmp_path) -> None:
    files = {"rank4.log": ["[rank4]:[E1129 10:00:00.0 ProcessGroupNCCL.cpp:1300] [PG 0 Rank 4] Heartbeat monitor timed "
                           "out! Process will be terminated after dumping debug info. workMetaList_.size()=2"]}
    hypothesis = root(write(tmp_path, files))
    assert hypothesis.category is Category.WATCHDOG_STUCK and hypothesis.culprit_ranks == (4,)


def test_a018_negative(tmp_path) -> None:
    assert Category.WATCHDOG_STUCK not in categories(write(tmp_path, {"r.log": ["[PG 0 Rank 4] Heartbeat is fine"]}))


def test_a019_is_never_a_root_cause(tmp_path) -> None:
    files = {f"rank{r}.log": [GLOO_TIMEOUT.format(r=r)] for r in range(3)}
    diagnosis = write(tmp_path, files)
    assert diagnosis.root_cause is None
    (hypothesis,) = diagnosis.hypotheses
    assert hypothesis.category is Category.UNEXPLAINED_TIMEOUT and not hypothesis.root_cause


def test_nothing_wrong_means_no_hypotheses(tmp_path) -> None:
    diagnosis = write(tmp_path, {"rank0.log": ["step 1 loss 0.5", "step 2 loss 0.4"]})
    assert diagnosis.hypotheses == () and diagnosis.root_cause is None



def test_a_rule_that_breaks_is_contained_and_named(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import syncdoctor.analyze.rules as rules

    def broken(tl: object) -> list:
        raise KeyError("boom")

    monkeypatch.delenv("SYNCDOCTOR_STRICT_RULES", raising=False)
    monkeypatch.setattr(rules, "RULES", (broken, *rules.RULES))
    files = {"rank1.log": ["[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]}
    diagnosis = write(tmp_path, files)
    assert root(diagnosis).category is Category.RANK_OUT_OF_MEMORY
    assert any("broken failed" in note and "KeyError" in note for note in diagnosis.notes)
    monkeypatch.setenv("SYNCDOCTOR_STRICT_RULES", "1")
    with pytest.raises(KeyError):
        write(tmp_path, files)


@pytest.mark.parametrize(("addr", "link_local", "unroutable"), [
    ("127.0.0.1", False, True), ("127.0.1.1", False, True), ("::1", False, True),
    ("169.254.3.1", True, True), ("fe80::1%eth0", True, True),
    ("10.0.0.7", False, False), ("2001:db8::1", False, False), ("node-7", False, False), ("", False, False),
])
def test_one_reading_of_an_address_no_other_host_reaches(addr: str, link_local: bool, unroutable: bool) -> None:
    """The peer-unreachable rule (setup) and the loopback/interface rules (network) share one helper: a peer
    address one of them leaves to the other is always read by that other."""
    from syncdoctor.analyze.rules import common

    assert common.is_link_local(addr) is link_local
    assert common.unroutable(addr) is unroutable
