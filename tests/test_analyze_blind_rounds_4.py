"""Readings added after the twentieth blind harvest (the r23* cases of the real corpus), one behaviour per test,
each with the look-alike it must not catch: NCCL's socket devices on a container bridge, the store client's
connect retries and unresolvable or malformed store addresses, Lightning's ranks taken twice, Slurm's step daemon
and cgroup OOM, a network plugin's own error, Open MPI's TCP transport reaching the wrong process. Lines are
written as the tools print them."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_SOCKETS = ("ip-172-31-12-104:28053:17123 [0] NCCL INFO NET/Socket : Using [0]eth0:172.31.12.104<0> "
            "[1]br-8a9e04832258:172.18.0.1<0> [2]veth23bc2d7:fe80::d41a:9ff:febe:1c16%veth23bc2d7<0>\n")


def test_a_connection_over_a_container_bridge_that_nccl_listed_is_the_container_address(tmp_path: Path) -> None:
    # real: dmlc/xgboost#7982 (NCCL 2.12 sockets on an EC2 host with Docker: br-* and veth listed as devices)
    failed = ("ip-172-31-12-104:28056:39685 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from "
              "172.18.0.1<34483> failed : Broken pipe\n")
    top = diagnose(tmp_path, _SOCKETS + failed).hypotheses[0]
    assert top.category is Category.LOOPBACK_ADDRESS and top.culprit_hosts == ("ip-172-31-12-104",)
    assert "br-8a9e04832258 (172.18.0.1)" in top.title and "NCCL_SOCKET_IFNAME" in top.fix
    # the same failure to the host's own cluster address is no container's
    other = failed.replace("172.18.0.1", "172.31.12.105")
    assert all(h.category is not Category.LOOPBACK_ADDRESS for h in diagnose(tmp_path, _SOCKETS + other).hypotheses)


def test_the_store_clients_connect_retries_name_the_address(tmp_path: Path) -> None:
    # real: vllm-project/vllm-metal#625 (a VPN address picked for the store; c10d retries without end)
    retry = "[W501 10:00:00.1 socket.cpp:937] [c10d] The server socket on [::ffff:10.4.6.125]:63617 has timed out, will retry.\n"
    event = one(retry, Kind.STORE_ERROR)
    assert event.data["store_host"] == "10.4.6.125" and event.data["store_port"] == 63617 and event.data["retrying"]
    top = diagnose(tmp_path, retry * 3).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "10.4.6.125:63617" in top.title
    assert "store client was still retrying" in top.title and "NCCL" not in top.title
    assert not events_of("[c10d] The server socket on [::ffff:10.4.6.125]:63617 is not yet listening, will retry.")


def test_an_unresolvable_or_malformed_store_address_is_the_store_unreachable(tmp_path: Path) -> None:
    # real: pytorch/elastic#31 (old c10d tcputils: the pod's host name did not resolve), vllm-project/vllm#2540
    # (an init_method URL whose port was a function object), the env:// variable left unset
    resolved = diagnose(tmp_path, "Error: Rank -1 received an Exception. Detailed message: host not found: Name or "
                                  "service not known\n").hypotheses[0]
    assert resolved.category is Category.PEER_UNREACHABLE and "did not resolve" in resolved.what
    port = diagnose(tmp_path, "ValueError: Port could not be cast to integer value as '<function get_open_port at "
                              "0x7fc97190a7a0>'\n").hypotheses[0]
    assert port.category is Category.PEER_UNREACHABLE and "init_method port" in port.title
    missing = one("ValueError: Error initializing torch.distributed using tcp:// rendezvous: port number missing",
                  Kind.STORE_ERROR)
    assert missing.data["invalid_address"] and "port number missing" in missing.data["error"]
    # env://'s variable unset is the launcher missing, not an address (the ninety-fifth round's CSDN case)
    unset = "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable " \
            "MASTER_ADDR expected, but not set"
    assert not [e for e in events_of(unset) if e.kind is Kind.STORE_ERROR]
    top = diagnose(tmp_path, unset + "\n").hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "without the launcher" in top.title
    # the source line of the raise, shown in a traceback, is not a second failure
    assert not [e for e in events_of('    raise ValueError(f"Port could not be cast to integer value as {port!r}")')
                if e.kind is Kind.STORE_ERROR]
    # a download's resolver failure is no store's
    hub = diagnose(tmp_path, "requests.exceptions.ConnectionError: Failed to resolve 'huggingface.co' ([Errno -3] "
                             "Temporary failure in name resolution)\n").hypotheses
    assert all(h.category is not Category.PEER_UNREACHABLE for h in hub)


def test_lightning_ranks_taken_twice_leave_the_others_never_started(tmp_path: Path) -> None:
    # real: Lightning-AI/pytorch-lightning#10098 (Slurm tasks against the Trainer's nodes: ranks 0-3 twice of 8)
    lines = "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/8\n" for r in (1, 1, 2, 2, 3, 3, 0, 0))
    top = diagnose(tmp_path, lines + "Traceback (most recent call last):\n").hypotheses[0]
    assert top.category is Category.RANK_NEVER_JOINED and top.culprit_ranks == (4, 5, 6, 7)
    assert "ranks 0-3 twice" in top.title and "--ntasks-per-node" in top.fix
    # every rank once (1.6+ wording), or a log that printed each line twice: nothing is missing
    every = "".join(f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/4\n" for r in range(4))
    assert all(h.category is not Category.RANK_NEVER_JOINED for h in diagnose(tmp_path, every * 2).hypotheses)


def test_slurms_step_daemon_names_the_node_and_srun_its_out_of_memory_task(tmp_path: Path) -> None:
    # real: KNet#30 (a cgroup OOM kill in a Slurm step)
    paste = ("slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your processes "
             "may have been killed by the cgroup out-of-memory handler.\n"
             "srun: error: gpu20-15: task 0: Out Of Memory\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("gpu20-15",)
    event = one("srun: error: gpu20-15: task 0: Out Of Memory", Kind.WORKER_FAILED)
    assert event.data["oom"] and event.data["signal"] == "SIGKILL"
    assert "oom" not in one("srun: error: gpu20-15: task 0: Killed", Kind.WORKER_FAILED).data


def test_a_network_plugins_own_error_comes_before_the_system_error_after_it(tmp_path: Path) -> None:
    # real: aws/aws-ofi-nccl#24 (EFA under Horovod: the address vector could not be opened)
    paste = ("[1,31]<stdout>:ip-172-32-36-209:8800:9549 [7] NCCL INFO include/net.h:24 -> 2\n"
             "[1,23]<stdout>:ip-172-32-45-165:72593:73427 [7] create_nccl_ofi_component:459 NCCL WARN NET/OFI "
             "Couldn't open AV. RC: -22, ERROR: Invalid argument\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "aws-ofi-nccl" in top.title and top.culprit_ranks == (23,)
    assert "fi_info -p efa" in top.fix
    # the plugin's failed registration stays the memlock limit
    reg = diagnose(tmp_path, "host:1:2 [0] NCCL WARN NET/OFI Unable to register memory (type = 1) for device 0. "
                             "RC: 12, Error: Cannot allocate memory\n").hypotheses[0]
    assert reg.category is Category.MEMLOCK_LIMIT


def test_open_mpis_tcp_transport_reaching_another_process_is_the_interface(tmp_path: Path) -> None:
    # real: horovod/horovod#1516 (fixed with -mca btl_tcp_if_include ib0)
    line = ("[second-node][[22157,1],4][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack] received "
            "unexpected process identifier [[22157,1],7]")
    event = one(line, Kind.MPI_TRANSPORT)
    assert event.origin.host == "second-node" and event.origin.rank == 4 and event.data["answered_rank"] == 7
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and "btl_tcp_if_include" in top.fix
    refused = one("[node2][[5233,1],3][btl_tcp_endpoint.c:803:mca_btl_tcp_endpoint_complete_connect] connect() to "
                  "10.1.0.7 failed: Connection refused (111)", Kind.NCCL_CONNECT_FAILED)
    assert refused.data["peer_addr"] == "10.1.0.7" and refused.data["error"] == "Connection refused"
    reset = one("[node2][[5233,1],3][btl_tcp_frag.c:241:mca_btl_tcp_frag_recv] mca_btl_tcp_frag_recv: readv failed: "
                "Connection reset by peer (104)", Kind.PEER_CLOSED)
    assert reset.origin.rank == 3 and reset.data["transport"] == "mpi"


def test_a_line_naming_the_store_names_its_host_for_a_failure_that_does_not(tmp_path: Path) -> None:
    # real: pytorch/elastic#31 (torchelastic 0.x printed where it would connect, then the resolver failed)
    named = "INFO 2020-01-17 00:55:01,702 Rank 1 will conenct to TCPStore server at pytorch-elastic-test-z2b7s:47279\n"
    failed = "Error: Rank -1 received an Exception. Detailed message: host not found: Name or service not known\n"
    top = diagnose(tmp_path, named + failed).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and top.culprit_hosts == ("pytorch-elastic-test-z2b7s",)
    assert "pytorch-elastic-test-z2b7s:47279" in top.title
    for line, host, port in [("export MASTER_ADDR=node01", "node01", None), ("MASTER_ADDR: 10.0.0.1", "10.0.0.1", None),
                             ("torchrun --nnodes 2 --master_addr=10.0.0.1 --master_port 29500 train.py", "10.0.0.1", None),
                             ("torchrun --rdzv-endpoint node7:29400 train.py", "node7", 29400),
                             ("  master_addr=node-3.cluster", "node-3.cluster", None)]:
        event = one(line, Kind.STORE_ENDPOINT)
        assert (event.data["store_host"], event.data["store_port"]) == (host, port), line
    # shell variables and placeholders name nothing
    for line in ("export MASTER_ADDR=$(hostname)", "MASTER_ADDR=${MASTER_ADDR}", "--master_addr <ip>",
                 "MASTER_ADDR=node-$SLURM_JOBID", "--master-addr=$MASTER_ADDR"):
        assert not [e for e in events_of(line) if e.kind is Kind.STORE_ENDPOINT], line
    # two different store hosts in one paste: none is taken
    two = diagnose(tmp_path, "MASTER_ADDR=node01\nMASTER_ADDR=node02\n" + failed).hypotheses[0]
    assert two.category is Category.PEER_UNREACHABLE and two.culprit_hosts == ()
    # a line naming the store alone is no failure
    assert diagnose(tmp_path, "export MASTER_ADDR=node01\n").hypotheses == ()
