"""Readings added in the session of the sixty-fifth blind harvest (the r68* cases of the real corpus), one behaviour
per test, each with the look-alike it must not catch."""

from __future__ import annotations

import json
from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind
from syncdoctor.watch.events import Event as WatchEvent

diagnose = diagnose_paste

_SLICE = ("E0724 03:14:20.702001 104002 worker_pool.cpp:245] Worker: Process failed for slice (opcode: 1, source_addr: "
          "0x7f61fc000f00, length: 65536, dest_addr: 0x7f2a00000000, local_nic: mlx5_bond_2, peer_nic: "
          "10.0.2.98:15992@mlx5_bond_1, dest_rkey: 2146656, retry_cnt: 0): local protection error")
_INACTIVE = ("W0724 03:14:20.702893 104002 worker_pool.cpp:303] Too many errors found in local RNIC "
             "10.0.2.69:15858@mlx5_bond_2, mark it inactive")


def test_a_transfer_engines_failed_slice_is_an_ib_completion_error_placed_by_the_nic_it_gives_up(tmp_path: Path) -> None:
    event = one(_SLICE, Kind.IB_COMPLETION_ERROR)
    assert event.data["status"] == 4 and event.data["hca"] == "mlx5_bond_2" and event.data["transport"] == "mooncake"
    # a paste that cut the line before ``Process failed for slice (`` keeps the slice's fields
    cut = one("f00, local_nic: mlx5_bond_2, peer_nic: 10.0.2.98:15992@mlx5_bond_1, dest_rkey: 2146656, retry_cnt: 0): "
              "remote access error", Kind.IB_COMPLETION_ERROR)
    assert cut.data["status"] == 10
    # the older engine's fields (no peer, no local NIC): still its status
    older = one("E0101 worker.cpp:88] Process failed for slice (opcode: 0, source_addr: 0x7f00, length: 4096, dest_addr: "
                "140012): Work Request Flushed Error", Kind.IB_COMPLETION_ERROR)
    assert older.data["status"] == 5 and older.data["hca"] is None
    top = diagnose(tmp_path, f"{_SLICE}\n{_INACTIVE}\n").hypotheses[0]
    assert top.category is Category.IB_COMPLETION and "status 4" not in top.title and "local protection" in top.title
    assert top.culprit_hosts == ("10.0.2.69",) and "--disaggregation-ib-device" in top.fix
    # a completion of another NIC, in another process, is not placed by the NIC marked inactive (the same process's
    # would be: its pid places it)
    other = _SLICE.replace("local_nic: mlx5_bond_2", "local_nic: mlx5_bond_0").replace(" 104002 ", " 207001 ")
    assert diagnose(tmp_path, f"{other}\n{_INACTIVE}\n").hypotheses[0].culprit_hosts == ()
    # a success, and a slice line without an ibv_wc_status_str word, are no completion errors
    for text in ("I0724 worker_pool.cpp:200] Process failed for slice (opcode: 1, local_nic: mlx5_0): retrying later",
                 "I0724 transfer ok (local_nic: mlx5_0, length: 64)"):
        assert not [e for e in events_of(text) if e.kind is Kind.IB_COMPLETION_ERROR]


def test_a_queue_pair_refused_in_an_rdma_programs_own_words_is_a_modify_qp_failure(tmp_path: Path) -> None:
    plog = ("E0903 rdma_endpoint.cpp:1033] [Handshake] Failed to modify QP to RTR, check mtu, gid, peer lid, peer qp "
            "num: Connection timed out [110]")
    event = one(plog, Kind.IB_MODIFY_QP)
    assert event.data["errno"] == 110 and event.data["transport"] == "mooncake"
    elided = one("rdma_endpoint.cpp:1033] [Handshake] Failed to modify QP to RTR ... Connection timed out [110]",
                 Kind.IB_MODIFY_QP)
    assert elided.data["errno"] == 110
    other = one("Failed to modify QP to RTR: reason: Invalid argument", Kind.IB_MODIFY_QP)
    assert other.data["errno"] == 22 and other.data["transport"] == "verbs"
    top = diagnose(tmp_path, plog + "\nKVTransferError: Failed to get kvcache from prefill instance, it might be dead\n"
                   ).hypotheses[0]
    assert top.category is Category.IB_MODIFY_QP and "Mooncake" in top.title and "MC_GID_INDEX" in top.fix
    # NCCL's own words keep NCCL's fix
    nccl = ("node1:42:42 [0] NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, "
            "curr state INIT, next state RTR, local GID index 3")
    assert "NCCL_CROSS_NIC" in (diagnose(tmp_path, nccl).hypotheses[0].fix or "")
    # a state word that is no queue pair's transition
    assert not [e for e in events_of("ERROR Failed to modify QPSK modulation table") if e.kind is Kind.IB_MODIFY_QP]


def test_a_job_steps_oom_kill_is_placed_on_the_host_srun_reports_even_where_the_paste_cut_its_line(tmp_path: Path) -> None:
    cut = one("srun: error: nid006190: task", Kind.WORKER_FAILED)
    assert cut.origin.host == "nid006190" and cut.data["unknown_exit"]
    paste = ("slurmstepd: error: Detected 1 oom_kill event in StepId=9178265.0. Some of the step tasks have been OOM "
             "Killed.\nsrun: error: nid006190: task")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("nid006190",), top.title
    # the tasks srun terminated itself on other hosts do not place it; two failing hosts leave it unplaced
    both = paste + "\nsrun: error: nid006191: task 4: Terminated\n"
    assert diagnose(tmp_path, both).hypotheses[0].culprit_hosts == ("nid006190",)
    two = paste + "\nsrun: error: nid006191: task 4: Exited with exit code 1\n"
    killed = [h for h in diagnose(tmp_path, two).hypotheses if "OOM killer" in h.title]
    assert killed and killed[0].culprit_hosts == (), killed


def test_an_exception_without_a_place_is_placed_by_the_exit_srun_reports_after_it(tmp_path: Path) -> None:
    paste = ("OSError: Failed to read ~/.sky_run_done_12_0 after 10 attempts\n"
             "srun: error: node-0: task 7: Exited with exit code 1\nsrun: error: node-11: task 5: Terminated\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_hosts == ("node-0",), top.title
    # two hosts exiting with an error code: which one raised is not known
    two = paste.replace("task 5: Terminated", "task 5: Exited with exit code 1")
    assert diagnose(tmp_path, two).hypotheses[0].culprit_hosts == ()


_REG_MR = ("[1613401128.440695] [nid001192:11838:0] ib_md.c:325 UCX ERROR ibv_reg_mr(address=0xabcf12c0, length=26400, "
           "access=0xf) failed: Cannot allocate memory")
_MPICH_OLD = ("MPICH ERROR [Rank 1534] [job id 114930.0] [Mon Feb 15 14:58:48 2021] [unknown] [nid001192] - "
              "Abort(672797967) (rank 1534 in comm 0): Fatal error in PMPI_Isend: Other MPI error, error stack:")


def test_ucx_refused_a_registration_for_memory_and_the_rank_mpich_names_on_that_host_is_its_process(tmp_path: Path) -> None:
    event = one(_REG_MR, Kind.MEMLOCK_FAILURE)
    assert event.origin.host == "nid001192" and event.origin.pid == 11838 and event.data["transport"] == "ucx"
    abort = one(_MPICH_OLD, Kind.EXCEPTION)  # the older release's extra field before the host
    assert abort.origin.rank == 1534 and abort.origin.host == "nid001192"
    top = diagnose(tmp_path, f"{_REG_MR}\n{_MPICH_OLD}\n").hypotheses[0]
    assert top.category is Category.MEMLOCK_LIMIT and "UCX" in top.title and "UCX_IB_REG_METHODS" in top.fix
    assert top.culprit_ranks == (1534,) and top.culprit_hosts == ("nid001192",)
    # another process's lines on that host: which of the two is rank 1534 is not known
    other = _REG_MR.replace("[nid001192:11838:0]", "[nid001192:11840:0]").replace("0xabcf12c0", "0xbbcf12c0")
    two = diagnose(tmp_path, f"{_REG_MR}\n{other}\n{_MPICH_OLD}\n").hypotheses[0]
    assert two.category is Category.MEMLOCK_LIMIT and two.culprit_ranks == ()
    # another errno of the same call is no locked-memory limit
    assert not [e for e in events_of(_REG_MR.replace("Cannot allocate memory", "Bad address"))
                if e.kind is Kind.MEMLOCK_FAILURE]


def test_a_ucx_status_a_program_reports_in_its_words_is_a_peer_not_reached(tmp_path: Path) -> None:
    line = "W0613 08:28:11.555796    7053 ucx_utils.cpp:43] Unexpected UCX error: Endpoint timeout"
    event = one(line, Kind.NCCL_CONNECT_FAILED)
    assert event.data == {"error": "Endpoint timeout", "transport": "ucx"}
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_UNREACHABLE
    # a UCX status that says nothing of the peer
    assert not [e for e in events_of("E0613 nixl.cpp:10] Unexpected UCX error: Invalid parameter")
                if e.kind is Kind.NCCL_CONNECT_FAILED]


def test_a_log_that_starts_with_a_trainers_metric_dicts_is_read_as_text(tmp_path: Path) -> None:
    metrics = "".join(f"{{'loss': 0.{i}, 'learning_rate': 0.0002, 'epoch': 0.2{i}}}\n" for i in range(5))
    tail = ("WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers\n"
            "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 109511 closing signal SIGHUP\n")
    top = diagnose(tmp_path, metrics + tail).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "SIGHUP" in top.title
    # a file of the watcher's own events is still read as events
    late = WatchEvent("W101", "confirmed", "rank 3 has not reached all_reduce #57 of group 0 for 31.0 s", ranks=(3,),
                      group="0", seq=57, waiting_ranks=(0, 1, 2), waited_s=31.0, at=1_800_000_000.0)
    path = tmp_path / "watch-events.jsonl"
    path.write_text(f"{json.dumps(late.to_json())}\n{json.dumps(late.to_json())}\n")
    root = analyze_paths([str(path)]).diagnosis.root_cause
    assert root is not None and root.category is Category.LAGGING_RANK and root.culprit_ranks == (3,)


def test_torchruns_death_signal_number_is_the_signal_and_sighup_is_a_closed_terminal(tmp_path: Path) -> None:
    line = "WARNING:torch.distributed.elastic.agent.server.api:Received {} death signal, shutting down workers"
    assert one(line.format(1), Kind.AGENT_SIGNAL).data["signal"] == "SIGHUP"
    assert one(line.format(15), Kind.AGENT_SIGNAL).data["signal"] == "SIGTERM"
    assert one(line.format("Signals.SIGINT"), Kind.AGENT_SIGNAL).data["signal"] == "SIGINT"
    hup = diagnose(tmp_path, line.format(1)).hypotheses[0]
    assert hup.category is Category.RANK_KILLED and "setsid" in hup.fix and "nohup` does not protect" in hup.what
    term = diagnose(tmp_path, line.format(15)).hypotheses[0]
    assert "SIGTERM" in term.title and "setsid nohup" not in term.fix


def test_a_debuggers_backtrace_through_abort_is_a_process_that_aborted(tmp_path: Path) -> None:
    paste = ("(gdb) bt\n#0  __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:50\n"
             "#1  0x00007ffff7c4b859 in __GI_abort () at abort.c:79\n"
             "#2  0x00007fffc237535a in __cxxabiv1::__terminate (handler=<optimized out>)\n")
    assert one("#1  0x00007ffff7c4b859 in __GI_abort () at abort.c:79", Kind.FATAL_SIGNAL).data["signal"] == "SIGABRT"
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and "SIGABRT" in top.title and "debugger" in top.what
    # a frame of a function that merely has abort in its name, or a program's own words
    for text in ("#3  0x0000 in my_abort () at x.c:3", "the run will abort () at the next step"):
        assert not [e for e in events_of(text) if e.kind is Kind.FATAL_SIGNAL]


def test_collective_libraries_refusing_the_machine_in_their_own_words(tmp_path: Path) -> None:
    reverse = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
               "internal error - please report this issue to the NCCL developers, NCCL version 2.19.3\n"
               "ncclInternalError: Internal check failed.\nLast error:\n"
               "Failed to find reverse path from remNode 0/41000 nlinks 2 to node 0/61000NCCL error in: x\n")
    top = diagnose(tmp_path, reverse).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "0/41000 to 0/61000 " in top.title and "NCCL_TOPO_FILE" in top.fix
    # NCCL's own exception type is its report, not the program's error
    assert not [h for h in diagnose(tmp_path, "ncclInternalError: Internal check failed.\n").hypotheses
                if h.category is Category.RANK_CRASHED]
    ub = ("[rank0]: AssertionError: CUDA device, driver and/or toolkit version does not support comm+GEMM overlap with "
          "CUDA Multicast. Launch app with UB_SKIPMC=1 to try CUDA IPC instead.\n")
    top = diagnose(tmp_path, ub).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "multicast" in top.title and "UB_SKIPMC=1" in top.fix
    te = ("RuntimeError: /src/TransformerEngine/transformer_engine/pytorch/csrc/userbuffers/userbuffers-host.cpp:208 in "
          "function create_communicator_grouped2: CUDA Error: operation not supported\n")
    assert "multicast" in diagnose(tmp_path, te).hypotheses[0].title
    lccl = ("[2025-09-28 20:14:33.202857] [error] [710583] [lcal_comm.cpp:444] do not support pcie > 2 rank! rankSize_ = 4\n"
            "[2025-09-28 20:14:33.202893] [error] [710583] [lcal_comm.cpp:241] EnablePeerAccess failed!\n")
    top = diagnose(tmp_path, lccl).hypotheses[0]
    assert top.category is Category.PEER_ACCESS and "4 ranks over PCIe" in top.title and "HCCL" in top.fix
    # another CUDA call refused with the same words is not the userbuffers' multicast
    assert "multicast" not in diagnose(tmp_path, "RuntimeError: foo.cpp:12: CUDA Error: operation not supported\n"
                                       ).hypotheses[0].title


def test_oneccls_bootstrap_without_an_interface_is_a_missing_interface_with_its_own_setting(tmp_path: Path) -> None:
    line = ("2025:02:17-17:20:51:( 2399) |CCL_ERROR| internal_kvs.cpp:289 fill_local_host_ip: can't find interface  to "
            "get host IP")
    assert one(line, Kind.INTERFACE_MISSING).data["transport"] == "oneccl"
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.INTERFACE_MISSING and "oneCCL" in top.title and "CCL_KVS_IFACE" in top.fix
    assert not [e for e in events_of("|CCL_ERROR| internal_kvs.cpp:474 kvs_init: init main server address error")
                if e.kind is Kind.INTERFACE_MISSING]


def test_srun_tasks_are_ranks_unless_another_launchers_agent_speaks(tmp_path: Path) -> None:
    paste = ("slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. Some of your processes may have been killed "
             "by the cgroup out-of-memory handler.\nsrun: error: gpu20-15: task 3: Out Of Memory\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_ranks == (3,) and top.culprit_hosts == ("gpu20-15",)
    # torchrun under srun (its agent's records in the inputs): task 3 is the fourth node's agent, not rank 3
    agent = ("[2024-01-01 00:00:00,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
             "local_rank: 0 (pid: 12) of binary: /usr/bin/python\n")
    under = diagnose(tmp_path, agent + paste).hypotheses
    assert not [h for h in under if 3 in h.culprit_ranks and "gpu20-15" in h.culprit_hosts], [h.title for h in under]


def test_windows_refusing_the_stores_port_in_its_own_language_is_a_port_in_use(tmp_path: Path) -> None:
    paste = ("[W socket.cpp:436] [c10d] The server socket has failed to bind to [DESKTOP-L9L2GVM]:10086 (system error: "
             "10048 - 通常每个套接字地址(协议/网络地址/端口)只允许使用一次。).\n"
             "[E socket.cpp:472] [c10d] The server socket has failed to listen on any local network address.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and "10086" in top.title
    # another Windows error on the same line is not a port in use
    other = paste.replace("10048", "10013").split("\n")[0]
    assert not [e for e in events_of(other) if e.kind is Kind.STORE_ERROR and "in use" in str(e.data.get("error"))]


def test_the_shells_report_of_a_signal_is_a_death_and_a_bus_error_is_dev_shm(tmp_path: Path) -> None:
    bus = diagnose(tmp_path, "2019-04-16 11:58:14  Initializing global model...\nBus error (core dumped)\n").hypotheses[0]
    assert bus.category is Category.SHM_EXHAUSTED
    script = one("./run.sh: line 12:  4242 Segmentation fault      (core dumped) python train.py", Kind.FATAL_SIGNAL)
    assert script.data["signal"] == "SIGSEGV" and script.origin.pid == 4242
    # a launcher's report of the same death names it better: the shell's line beside it is not a second death
    paste = ("/soft/tools/gpu_tile_compact.sh: line 47: 38240 Aborted                 \"$@\"\n"
             "x4616c3s4b0n0: rank 2355 exited with code 134\nx4616c3s4b0n0: rank 2358 died from signal 15\n")
    assert diagnose(tmp_path, paste).hypotheses[0].culprit_ranks == (2355,)
    # the words inside a sentence are no report
    assert not [e for e in events_of("the loader saw a Bus error (core dumped) in an earlier run") if
                e.kind is Kind.FATAL_SIGNAL]


def test_an_rpc_barrier_that_timed_out_names_the_workers_that_never_answered(tmp_path: Path) -> None:
    line = ("ERROR:root:Failed to respond to 'global_barrier' in time, got error Followers ['trainer-1', 'trainer-3'] "
            "timed out in _all_gather after 15.00 seconds. The first exception is RuntimeError('timeout')")
    event = one(line, Kind.STORE_ERROR)
    assert event.data["followers"] == ["trainer-1", "trainer-3"] and event.data["source"] == "rpc"
    top = diagnose(tmp_path, line + "\n").hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT and "trainer-1, trainer-3" in top.title


def test_a_users_ctrl_c_is_the_launcher_stopped_from_outside_and_its_teardown_the_aftermath(tmp_path: Path) -> None:
    paste = ("Epoch 00000 | Batch 040 | Train Loss: 0.3333 | Time: 9.5225\n^CProcess Process-1:\n"
             "Called process error Command 'ssh -p 2222 172.31.11.170 python train.py' returned non-zero exit status 255.\n")
    top = diagnose(tmp_path, paste).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "SIGINT" in top.title and "left behind" in top.fix
    # a caret inside a line is no terminal's echo
    assert not [e for e in events_of("x ^C y: Error in regex") if e.kind is Kind.AGENT_SIGNAL]


_TABLE = "".join(f"#  Rank {r:2d} Group  0 Pid {63755 if r < 2 else 914454:6d} on {'gpu-b' if r < 2 else 'gpu-a'} device  "
                 f"{r % 2} [0x1b] NVIDIA GeForce RTX 4090\n" for r in range(4))
_CLOSED = ("gpu-b:63755:63755 [0] NCCL INFO Bootstrap : Using eno1:10.102.0.233<0>\n"
           "gpu-b:63755:63768 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer "
           "10.102.0.232<40318>\n")


def test_a_peer_address_no_line_names_is_the_one_host_whose_address_is_not_known(tmp_path: Path) -> None:
    top = diagnose(tmp_path, _TABLE + _CLOSED).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_hosts == ("gpu-a",), top.title
    # a job whose ranks the inputs do not all place may have other hosts: the address stays an address
    larger = "gpu-b:63755:63755 [0] NCCL INFO comm 0x55d1 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE\n"
    assert diagnose(tmp_path, _TABLE + larger + _CLOSED).hypotheses[0].culprit_hosts == ("10.102.0.232",)
