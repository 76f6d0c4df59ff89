"""Readings added in the session of the fifty-sixth blind harvest (the r59* cases of the real corpus): Ascend HCCL's
own failure reports, in the formats its fault-diagnosis guide documents (hicann/hccl, docs/en/user_guide/
fault_diagnosis), one behaviour per test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, events_of, one
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category, Kind

diagnose = diagnose_paste

_LOST = ("    Cluster Exception Location[IP/ID]:[90.90.92.240/1], Arrival Time:[Thu Nov 28 11:56:34 2024], "
         "Discoverer:[90.90.92.240/0], ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1. Process has exited, "
         "2. Network Disconnected")
_STUCK = ("[ERROR]HCCL(1219039,all_reduce_test):2025-10-23-21:05:09.859.568[task_exception_handler.cc:610] [1219039]"
          "[TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[127.10.0.1/1], Arrival Time:[Thu Oct 23 "
          "21:03:19 2025], ExceptionType:[Stuck Occurred], Possible Reason:1.Host process is stuck, 2.Device task is stuck")


def test_a_lost_heartbeat_names_the_rank_whose_process_ended(tmp_path: Path) -> None:
    event = one(_LOST, Kind.HCCL_HEARTBEAT)
    assert (event.data["rank"], event.data["host"], event.data["lost"]) == (1, "90.90.92.240", True)
    top = diagnose(tmp_path, _LOST).hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (1,)
    assert top.culprit_hosts == ("90.90.92.240",) and "lost its heartbeat" in top.title


def test_a_stuck_heartbeat_is_a_late_rank(tmp_path: Path) -> None:
    event = one(_STUCK, Kind.HCCL_HEARTBEAT)
    assert event.origin.pid == 1219039 and event.data["stuck"] and not event.data["lost"]
    top = diagnose(tmp_path, _STUCK).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (1,) and "Stuck Occurred" in top.title


def test_a_heartbeat_of_another_kind_names_no_culprit(tmp_path: Path) -> None:
    line = _LOST.replace("Heartbeat Lost Occurred", "Link Down")
    assert one(line, Kind.HCCL_HEARTBEAT).data["exception"] == "Link Down"
    assert not [h for h in diagnose(tmp_path, line).hypotheses if h.culprit_ranks == (1,)]


def _task(pid: int, rank: int, op: str) -> str:
    head = f"    [ERROR] HCCL({pid},all_reduce_test):2025-10-24-11:18:29.499.235 [task_exception_handler.cc:908] [{pid}]"
    return "\n".join((
        f"{head}[TaskExecStage][Timeout][Host]Task run failed, base information is streamID:[2], taskID[21], "
        f"tag[{op}_127.10.0.1%enp_60000_0_1761275812718970], AlgType(level 0-1-2):[fullmesh-ring-NHR].",
        f"{head}[TaskExecStage][Timeout][Host]Task run failed, groupRank information is group:[127.10.0.1%enp_60000_0_"
        f"1761275812718970], user define information[], rankSize[4], rankId[{rank}].",
        f"{head}[TaskExecStage][Timeout][Host]Task run failed, opData information is timeStamp:[2025-10-24-11:16:55.493"
        f".816], deviceId[{rank}], index[21], count[256], reduceType[sum], dataType[float32]."))


def test_timed_out_tasks_are_tied_to_ranks_by_pid_and_compared(tmp_path: Path) -> None:
    for rank, op in ((0, "AllReduce"), (1, "AllGather"), (2, "AllReduce")):
        (tmp_path / f"plog{rank}.txt").write_text(_task(2111665 + rank, rank, op) + "\n")
    analysis = analyze_paths([str(tmp_path)])
    timeouts = analysis.timeline.of(Kind.WATCHDOG_TIMEOUT)
    assert sorted((e.origin.rank, e.op) for e in timeouts) == [(0, "allreduce"), (1, "allgather"), (2, "allreduce")]
    top = analysis.diagnosis.hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and top.culprit_ranks == (1,)


def test_the_same_collective_timing_out_everywhere_is_no_desync(tmp_path: Path) -> None:
    for rank in range(3):
        (tmp_path / f"plog{rank}.txt").write_text(_task(2111665 + rank, rank, "AllReduce") + "\n")
    assert Category.COLLECTIVE_DESYNC not in {h.category for h in analyze_paths([str(tmp_path)]).diagnosis.hypotheses}


def test_a_task_that_failed_without_timing_out_is_no_timeout() -> None:
    line = _task(7, 0, "AllReduce").splitlines()[0].replace("[Timeout]", "[Error]")
    assert not [e for e in events_of(line) if e.kind is Kind.WATCHDOG_TIMEOUT]


def test_the_consistency_check_is_a_desync_in_hccls_words(tmp_path: Path) -> None:
    count = ("EI0005: 2024-04-24-06:32:27.781.599 The arguments for collective communication are inconsistent between "
             "ranks:parameter count, local end 16512, remote end 8320")
    conflict = ("[ERROR] HCCL(3743927,all_reduce_test):2025-10-25-16:11:16.831.640 [rank_consistentcy_checker.cc:429] "
                "[3743951][InitChannelStage][ParameterConflict]CMD information tag check fail. local[AllGather_127.10."
                "0.1%enp_60000_0_1761379874757928], remote[AllReduce_127.10.0.1%enp_60000_0_1761379874757928]")
    assert one(count, Kind.COLLECTIVE_MISMATCH).data["local"] == "16512"
    assert one(conflict, Kind.COLLECTIVE_MISMATCH).origin.pid == 3743927
    top = diagnose(tmp_path, count + "\n" + conflict).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and "HCCL's own check" in top.what and "16512" in top.what


def test_roce_completion_errors_while_operators_ran_are_a_late_link_failure(tmp_path: Path) -> None:
    hccp = ("[ERROR] HCCP(2040034,alltoall_test):2025-09-15-08:38:12.776.650 [ra_hdc_lite.c:794]tid:2040458,"
            "ra_hdc_lite_period_poll_cqe : [create][ra_hdc_period_poll]failed CQE status[12], wr[0]")
    beat = ("[ERROR] HCCL(2040034,alltoall_test):2025-09-15-08:38:13.607.432 [heartbeat.cc:1229] [2040666][TaskExecStage]"
            "[HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[12], time:[2025-09-15 08:38:12.776654],localInfo{server"
            "[127.10.0.1],deviceId[127.10.0.1],deviceIp[127.11.0.1]}, remoteIP{server[127.10.0.2],deviceId[127.10.0.2],"
            "deviceIp[127.11.0.2]}")
    event = one(beat, Kind.IB_COMPLETION_ERROR)
    assert (event.data["status"], event.data["peer_addr"], event.data["stage"]) == (12, "127.10.0.2", "execution")
    assert one(hccp, Kind.IB_COMPLETION_ERROR).data["stage"] is None
    top = diagnose(tmp_path, hccp + "\n" + beat).hypotheses[0]
    assert top.category is Category.IB_LINK_FAILURE and "late in training" in top.title
    # the console's report of the same failure, without its status, does not outrank it
    console = ("[PID: 2040034] 2025-09-15-08:38:12.900.000 Execution Error ROCE CQE(EI0013): An error CQE occurred "
               "during operator execution. Local information: server 127.10.0.1, device ID 0, device IP 127.11.0.1. "
               "Peer information: server 127.10.0.2, device ID 1, device IP 127.11.0.2.")
    (tmp_path / "more").mkdir()
    top = diagnose(tmp_path / "more", "\n".join((console, hccp, beat))).hypotheses[0]
    assert top.category is Category.IB_LINK_FAILURE


def test_a_console_cqe_report_without_its_status_is_still_read(tmp_path: Path) -> None:
    line = ("[PID: 3448331] 2025-12-04-21:59:08.232.310 Execution Error ROCE CQE(EI0013): An error CQE occurred during "
            "operator execution. Local information: server 127.0.0.1, device ID 0, device IP 127.10.0.1. Peer "
            "information: server 127.0.0.2, device ID 1, device IP 127.10.0.2.")
    event = one(line, Kind.IB_COMPLETION_ERROR)
    assert event.data["peer_addr"] == "127.0.0.2" and event.origin.pid == 3448331
    # no status; since 2026-12-05 read as HCCL's guide says an ERROR CQE is, RoCE's retransmissions run out (status
    # 12 assumed), while the operators ran: a link's failure (tests/test_analyze_blind_rounds_26.py)
    assert (event.data["status"], event.data["assumed"]) == (12, True)
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.IB_LINK_FAILURE and "EI0013" in top.title


def test_device_memory_for_queue_pairs_is_out_of_memory(tmp_path: Path) -> None:
    line = ("[PID: 2103452] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to "
            "allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.")
    event = one(line, Kind.CUDA_OOM)
    assert event.origin.pid == 2103452 and event.data["source"] == "hccl"
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.RANK_OUT_OF_MEMORY


def test_the_agents_the_root_never_heard_from_never_joined(tmp_path: Path) -> None:
    line = ('    [ERROR] HCCL(1041085,all_reduce_test):2025-11-21-01:20:01.630.122 [topoinfo_exchange_base.cc:145] '
            '[1041085][InitGroupStage][RanktableDetect] TopoDetect ERROR occur !!! fault_type[1], fault_info["Failed to '
            'connect agent[1,3,5,7,]"]')
    assert one(line, Kind.STORE_ERROR).data["missing_ranks"] == [1, 3, 5, 7]
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RANK_NEVER_JOINED and top.culprit_ranks == (1, 3, 5, 7)


_STALL = ("[2021-02-02 03:23:51. 70957: W /tmp/horovod/common/stall_inspector.cc:105] One or more tensors were submitted "
          "to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than "
          "60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset "
          "of ranks is submitting tensors, which will cause deadlock.")


def test_horovods_stall_warning_alone_is_a_lead(tmp_path: Path) -> None:
    # real: horovod/horovod#1271 (the warning pasted without its list; the ranks' gradient names differed)
    event = one(_STALL, Kind.MONITORED_BARRIER)
    assert event.data["head"] and event.data["tensors"] == []
    top = diagnose(tmp_path, _STALL).hypotheses[0]
    assert top.category is Category.COLLECTIVE_DESYNC and top.confidence < 0.5 and top.culprit_ranks == ()


def test_horovods_stall_warning_with_its_list_names_the_missing_rank(tmp_path: Path) -> None:
    listed = _STALL + "\nMissing ranks:\n3: [DistributedGradientTape_Allreduce/cond_1/HorovodAllreduce_grads_0]\n"
    top = diagnose(tmp_path, listed).hypotheses[0]
    assert top.category is Category.LAGGING_RANK and top.culprit_ranks == (3,)


# --- the fifty-seventh round (r60*): more of HCCL's guide and MindSpore's -------------------------------------

def _entry(pid: int, rank: int, when: str) -> str:
    return (f"    [INFO] HCCL({pid},all_reduce_test):2025-11-20-{when} [op_base.cc:1293] [{pid}]Entry-HcclCommInitRootInfoInner"
            f":ranks[4], rank[{rank}], rootinfo: host ip[127.10.0.1] port[60000] nicDeploy[1] identifier[127.10.0.1%enp_"
            f"60000_0_1763610996711234], deviceLogicId[{rank}]")


def test_a_rank_entering_the_communicators_set_up_minutes_late_never_joined(tmp_path: Path) -> None:
    lines = [_entry(3079955, 3, "11:59:56.716.583")] + [_entry(3079952 + r, r, "11:56:36.711.546") for r in range(3)]
    event = one(lines[0], Kind.PROCESS_MAP)
    assert event.origin.rank == 3 and event.data["entered"] is not None
    top = diagnose(tmp_path, "\n".join(lines)).hypotheses[0]
    assert top.category is Category.RANK_NEVER_JOINED and top.culprit_ranks == (3,) and "200 s after" in top.title


def test_ranks_entering_within_a_minute_are_on_time(tmp_path: Path) -> None:
    lines = [_entry(3079955, 3, "11:57:06.716.583")] + [_entry(3079952 + r, r, "11:56:36.711.546") for r in range(3)]
    assert not diagnose(tmp_path, "\n".join(lines)).hypotheses


def test_an_agent_that_cannot_reach_the_root_server(tmp_path: Path) -> None:
    line = ("[ERROR] HCCL(7988,all_reduce_test):2025-03-19-04:16:13.978.995 [topoinfo_exchange_agent.cc:41] [7988]"
            "[TopoInfoExchangeAgent][Setup]TopoExchangeAgent: connect server[127.10.0.1 : 60000] failed")
    event = one(line, Kind.STORE_ERROR)
    assert (event.data["store_host"], event.data["store_port"]) == ("127.10.0.1", 60000)
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.PEER_UNREACHABLE and "HCCL's root" in top.title and "MASTER_ADDR" not in top.title


def test_a_rank_table_giving_two_ranks_one_device(tmp_path: Path) -> None:
    line = ('EI0004: The ranktable is invalid,Reason:[The ranktable config devId is inconsistent with the local devId.]. '
            'Please check the configured ranktable. [{"server_count":"1","server_list":[{"device":[{"device_id":"1",'
            '"device_ip":"192.168.100.101","rank_id":"0"},{"device_id":"1","device_ip":"192.168.101.101","rank_id":"1"},'
            '{"device_id":"2","device_ip":"192.168.102.101","rank_id":"2"}],"host_nic_ip":"reserve","server_id":"10.0.0.1"}]}]')
    event = one(line, Kind.DUPLICATE_GPU)
    assert (event.data["ranks"], event.data["device"]) == ([0, 1], 1)
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.DUPLICATE_GPU
    # the same device id on two servers is no conflict
    two = ('EI0004: The ranktable is invalid,Reason:[x]. [{"server_list":[{"device":[{"device_id":"0","device_ip":"a",'
           '"rank_id":"0"}],"server_id":"s1"},{"device":[{"device_id":"0","device_ip":"b","rank_id":"1"}],"server_id":"s2"}]}]')
    assert not [e for e in events_of(two) if e.kind is Kind.DUPLICATE_GPU]


def test_an_sdma_copy_failure_is_the_devices_of_that_rank(tmp_path: Path) -> None:
    lines = ("[ERROR] RUNTIME(57096,python3.10):2025-05-12-20:55:44.705.025 [task_info.cc:1170]57288 PrintSdmaErrorInfoFor"
             "FftsPlusTask:fftsplus task execute failed, dev_id=0, stream_id=50, task_id=21, context_id=18, thread_id=0, "
             "err_type=4[fftsplus sdma error]\n" + _task(57096, 0, "AllGather"))
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_ranks == (0,) and "SDMA" in top.title


def test_mindsporess_heartbeat_and_consistency_forms(tmp_path: Path) -> None:
    beat = "        serverId[10.0.0.7], deviceId[0], Heartbeat Lost Occurred, Possible Reason: 1. Process has exited"
    event = one(beat, Kind.HCCL_HEARTBEAT)
    assert (event.data["rank"], event.data["host"], event.data["lost"]) == (0, "10.0.0.7", True)
    check = ("EI0005: The arguments for collective communication are inconsistent between ranks: tag [HcomAllReduce_66294"
             "21139219749105_0], parameter [count], local [9556480], remote [9555712]")
    assert one(check, Kind.COLLECTIVE_MISMATCH).data["remote"] == "9555712"


def test_hccls_address_checks_are_read_in_their_words(tmp_path: Path) -> None:
    line = ("[ERROR] HCCL(144905,python):2025-04-20-00:26:54.435.048 [config.cc:413] [145735][InitGroupStage]"
            "[RanktableCheck]rank[0] device ip family[2] is not same as others[10].")
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.INTERFACE_MISMATCH


# --- the fifty-eighth round (r61*) ---------------------------------------------------------------------------

def test_a_glog_files_header_names_its_machine(tmp_path: Path) -> None:
    # real: PaddlePaddle/Paddle#12510 (paddle_pserver2's glog file)
    text = ("Log file created at: 2018/08/02 16:09:21\nRunning on machine: yq01-ecom-nova0843.yq01.baidu.com\n"
            "Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n"
            "F0802 16:09:21.460726  3821 LightNetwork.cpp:186] Check failed: bind(socket_, (struct sockaddr *)&serv_addr, "
            "sizeof(serv_addr)) >= 0 ERROR on binding 10.182.19.12: Address already in use [98]\n")
    top = diagnose(tmp_path, text).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and top.culprit_hosts == ("yq01-ecom-nova0843.yq01.baidu.com",)
    # the words alone, without glog's header, name no machine
    (tmp_path / "b").mkdir()
    assert diagnose(tmp_path / "b", text.split("\n", 2)[2]).hypotheses[0].culprit_hosts == ()


def test_rays_autoscaler_taking_nodes_away_from_outside(tmp_path: Path) -> None:
    # real: NovaSky-AI/SkyRL#1688 (KubeRay pods terminated mid-run)
    lines = "\n".join(f"(autoscaler +44m27s) Instance k-{n} (node IP: 10.1.140.{n}) will be terminated soon (reason: "
                      "kubernetes-pod-termination)." for n in (1, 2))
    event = one(lines.splitlines()[0], Kind.WORKER_FAILED)
    assert (event.origin.host, event.data["reason"], event.data["ip"]) == ("k-1", "kubernetes-pod-termination", "10.1.140.1")
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("k-1", "k-2")
    assert "were taken down from outside (reason: kubernetes-pod-termination)" in top.title
    assert "kubectl get events" in top.fix


def test_an_idle_node_scaled_down_is_no_failure() -> None:
    line = "(autoscaler +2m) Instance k-3 (node IP: 10.1.1.3) will be terminated soon (reason: idle)."
    assert not [e for e in events_of(line) if e.kind is Kind.WORKER_FAILED]


def test_no_interface_on_the_subnet_of_a_peers_link_local_address(tmp_path: Path) -> None:
    # real: AWS Neuron's runtime troubleshooting guide (an NCCL-derived bootstrap); NCCL's socket code says the same
    lines = ("No interface found in the same subnet as remote address fe80::1461:22ff:fe33:b471<45015>\n"
             "No usable listening interface found\n")
    assert one(lines.splitlines()[0], Kind.NCCL_WARN)
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert top.category is Category.INTERFACE_MISMATCH and "fe80::1461:22ff:fe33:b471" in top.title
    # a routable address on another subnet is no link-local advertisement
    (tmp_path / "b").mkdir()
    other = "No interface found in the same subnet as remote address 10.8.0.7<45015>\n"
    assert not [h for h in diagnose(tmp_path / "b", other).hypotheses if "link-local" in h.title]


def test_a_neuron_device_the_driver_gives_up_on(tmp_path: Path) -> None:
    line = ("NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0592464924bd45322 hostname=ip-172-31-61-252 nd-id=0 "
            "nc-id=0 serial-num=19fcda00f5ff6eb9 action=TERMINATE_INSTANCE")
    event = one(line, Kind.GPU_ERROR)
    assert event.origin.host == "ip-172-31-61-252" and event.data["hardware"]
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.GPU_ERROR and top.culprit_hosts == ("ip-172-31-61-252",)
    assert "TERMINATE_INSTANCE" in top.title


def test_mindspores_group_root_that_never_published_its_id(tmp_path: Path) -> None:
    line = ("RuntimeError: Communicator of group xxx inited: failed. Result: Init communicator for group xxx exception "
            "info: Failed to fetch the unique id of the collective lib from the meta server node. Maybe the root rank "
            "process of this group has exited or has not executed to QueryUniqueID step.")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.RENDEZVOUS_TIMEOUT


def test_rccl_naming_the_kernels_iommu_setting(tmp_path: Path) -> None:
    # real: ROCm's GPU cluster networking guide (troubleshooting; its helper labelled it A028, three earlier labels of
    # RCCL's iommu warning A017: read as peer access, with the kernel setting as its fix)
    lines = 'NCCL WARN hipIpcGetMemHandle failed : invalid argument\n\nNCCL WARN Missing "iommu=pt"\n'
    found = diagnose(tmp_path, lines).hypotheses
    assert found[0].category is Category.PEER_ACCESS and "iommu=pt" in found[0].title and "GRUB" in found[0].fix
    assert [h.category for h in found].count(Category.PEER_ACCESS) == 1  # the IPC failure is its evidence
    # without RCCL's word on the kernel, the failed IPC is read as before
    (tmp_path / "b").mkdir()
    alone = diagnose(tmp_path / "b", "NCCL WARN hipIpcGetMemHandle failed : invalid argument\n").hypotheses
    assert not any("iommu" in h.title for h in alone)


# --- the fifty-ninth round (r62*) ----------------------------------------------------------------------------

def test_a_transfer_engine_that_cannot_register_its_buffers_with_the_nic(tmp_path: Path) -> None:
    # real: kvcache-ai/Mooncake#1382 (the memlock limit against an 80 GiB segment)
    line = "E0115 11:22:06.866998 3663955 rdma_context.cpp:257] Failed to register memory 0x7f7186000000: Cannot allocate memory [12]"
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.MEMLOCK_LIMIT
    # another allocation that failed is no registration with the NIC
    (tmp_path / "b").mkdir()
    other = "E0115 11:22:06.866998 3663955 buffer.cpp:57] Failed to allocate buffer: Cannot allocate memory [12]"
    assert Category.MEMLOCK_LIMIT not in {h.category for h in diagnose(tmp_path / "b", other).hypotheses}


def test_a_time_limit_with_many_launchers_between_sruns_abort_and_the_cancel(tmp_path: Path) -> None:
    # real: bigscience-workshop/bigscience 1809655 (64 nodes: their launchers' lines between srun's and slurmstepd's)
    lines = (["srun: Job step aborted: Waiting up to 62 seconds for job step to finish."]
             + [f"Killing subprocess {4000 + n}\nMain process received SIGTERM, exiting" for n in range(30)]
             + ["slurmstepd: error: *** JOB 1809655 ON r6i4n3 CANCELLED AT 2021-05-24T09:50:34 DUE TO TIME LIMIT ***"])
    top = diagnose(tmp_path, "\n".join(lines)).hypotheses[0]
    assert top.category is Category.RANK_KILLED and "time limit" in top.title
    # as far before it with the job's own output in between (no launcher stopping): another step's abort
    (tmp_path / "b").mkdir()
    other = "\n".join([lines[0], *(f"iteration {n} done" for n in range(60)), lines[-1]])
    assert "ended from outside" not in diagnose(tmp_path / "b", other).hypotheses[0].title


def test_the_launchers_own_traceback_is_no_workers_failure(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed#4459 (DeepSpeed's elastic agent against a newer PyTorch)
    text = "\n".join((
        "rogpt1: Traceback (most recent call last):",
        'rogpt1:   File "/opt/conda/lib/python3.10/site-packages/deepspeed/launcher/launch.py", line 308, in main',
        "rogpt1:     agent.run()",
        'rogpt1:   File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/agent/server/api.py", line 556, '
        "in _rendezvous",
        "rogpt1:     self._set_master_addr_port(",
        "rogpt1: TypeError: DSElasticAgent._set_master_addr_port() takes 3 positional arguments but 4 were given"))
    found = diagnose(tmp_path, text).hypotheses
    assert found[0].category is Category.UNRECOGNISED and found[0].culprit_hosts == ("rogpt1",)
    assert Category.RANK_CRASHED not in {h.category for h in found}
    # the same exception raised in the program's own code is its own failure
    (tmp_path / "b").mkdir()
    own = text.replace("deepspeed/launcher/launch.py", "work/train.py").replace("torch/distributed/elastic/agent/server/"
                                                                                  "api.py", "work/model.py")
    assert diagnose(tmp_path / "b", own).hypotheses[0].category is Category.RANK_CRASHED


def test_an_error_in_a_chinese_locales_words_is_not_silence(tmp_path: Path) -> None:
    # real: deepspeedai/DeepSpeed PR#5878 (pdsh's remote bash in a Chinese locale: a syntax error near "(")
    line = "server22: bash: -c: 行 0: 未预期的符号“(”附近有语法错误"
    event = one(line, Kind.ERROR_LINE)
    assert event.data["word"] == "错误"
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.culprit_hosts == ("server22",)
    assert not [e for e in events_of("server22: 训练开始 (training started)") if e.kind is Kind.ERROR_LINE]


# --- the sixtieth round (r63*, documentation read with fetch alone) --------------------------------------------

def test_slurms_own_memory_accounting_killing_the_job(tmp_path: Path) -> None:
    # real: the University of Bern's HPC documentation (Slurm's jobacct_gather enforcing --mem)
    lines = ("slurmstepd: error: Job 41176 exceeded memory limit (3940736 > 2068480), being killed\n"
             "slurmstepd: error: Exceeded job memory limit\n"
             "slurmstepd: error: *** JOB 41176 ON fnode01 CANCELLED AT 2016-11-30T10:21:37 ***\n")
    event = one(lines.splitlines()[0], Kind.WORKER_FAILED)
    assert event.data["oom"] and event.data["step"] == "41176" and event.data["enforcer"] == "slurm-accounting"
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert top.category is Category.RANK_KILLED and top.culprit_hosts == ("fnode01",)  # the job's node, slurmstepd's
    assert "by Slurm" in top.title
    # the kernel's OOM killer in the job's cgroup, as slurmstepd reports it, is said so
    (tmp_path / "b").mkdir()
    cgroup = ("slurmstepd: error: Detected 1 oom_kill event in StepId=41176.batch. Some of the step tasks have been "
              "OOM Killed.\nslurmstepd: error: *** JOB 41176 ON fnode01 CANCELLED AT 2016-11-30T10:21:37 ***\n")
    assert "kernel's OOM killer" in diagnose(tmp_path / "b", cgroup).hypotheses[0].title
    assert not [e for e in events_of("slurmstepd: error: Job 41176 exceeded time limit, being killed")
                if e.kind is Kind.WORKER_FAILED and e.data.get("oom")]


def test_the_launchers_daemon_without_its_libraries_on_the_other_nodes(tmp_path: Path) -> None:
    # real: Open MPI's documentation (the Intel compiler's runtime not on the nodes' non-interactive library path)
    lines = ("prted: error while loading shared libraries: libimf.so: cannot open shared object file: No such file or "
             "directory\nA daemon (pid 11893) died unexpectedly with status 127 while\nattempting to launch so we are "
             "aborting.\n")
    top = diagnose(tmp_path, lines).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and "libimf.so" in top.title and "LD_LIBRARY_PATH" in top.fix
    # the program's own missing library is no daemon's
    (tmp_path / "b").mkdir()
    own = "python: error while loading shared libraries: libpython3.10.so.1.0: cannot open shared object file\n"
    assert not any("daemon" in h.title for h in diagnose(tmp_path / "b", own).hypotheses)


def test_a_connect_that_failed_with_a_numeric_errno(tmp_path: Path) -> None:
    # real: Open MPI's TCP documentation (errno 113: no route to that peer's address)
    line = "btl_tcp_endpoint.c:572:mca_btl_tcp_endpoint_complete_connect: connect() failed with errno=113"
    assert diagnose(tmp_path, line).hypotheses[0].category is Category.PEER_UNREACHABLE
    (tmp_path / "b").mkdir()
    other = "btl_tcp_endpoint.c:572:mca_btl_tcp_endpoint_complete_connect: connect() failed with errno=12"
    assert diagnose(tmp_path / "b", other).hypotheses[0].category is not Category.PEER_UNREACHABLE


# --- the sixty-first round (r64*, merge commits and committed logs read with fetch alone) -------------------------

_RECORD = """[{n}]:
  time      : 2026-05-19_18:21:02
  host      : devgpu020
  rank      : {rank} (local_rank: {rank})
  exitcode  : 1 (pid: 32170{rank}0)
  error_file: /tmp/torchelastic_4l2j/none_s7/attempt_0/{rank}/error.json
  traceback : Traceback (most recent call last):
    File "/w/torchtitan/trainer.py", line 733, in train_step
      loss = self.forward_backward_step(
  torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {size} MiB. GPU {rank} has a total capacity of 178.35 GiB
"""
_STOPPED = """[{n}]:
  time      : 2026-05-19_18:21:02
  host      : devgpu020
  rank      : {rank} (local_rank: {rank})
  exitcode  : -15 (pid: 32170{rank}0)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 32170{rank}0
"""


def test_a_traceback_inside_torchruns_failure_record_is_that_workers(tmp_path: Path) -> None:
    # real: torchtitan's experiment logs (workers started with @record: their error_file's traceback in the table)
    table = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n" + "=" * 60 + "\ntrain FAILED\n"
             + "-" * 60 + "\nFailures:\n" + _STOPPED.format(n=1, rank=0) + _RECORD.format(n=2, rank=2, size=20)
             + _RECORD.format(n=3, rank=3, size=1536) + "-" * 60 + "\nRoot Cause (first observed failure):\n"
             + _RECORD.format(n=0, rank=5, size=200) + "=" * 60 + "\n")
    top = diagnose(tmp_path, table).hypotheses[0]
    assert top.category is Category.RANK_OUT_OF_MEMORY and top.culprit_ranks == (2, 3, 5)
    # without an error_file the lines after a record are not its worker's
    (tmp_path / "b").mkdir()
    loose = table.replace("error_file: /tmp/torchelastic_4l2j/none_s7/attempt_0/3/error.json", "error_file: <N/A>")
    assert 3 not in diagnose(tmp_path / "b", loose).hypotheses[0].culprit_ranks


def test_nccl_algo_that_leaves_no_algorithm_for_a_collective(tmp_path: Path) -> None:
    # real: torchtitan's experiment logs (NCCL_ALGO=Tree, NCCL 2.29.7: the seed's broadcast at init)
    line = ("[2026-05-19 22:51:56] devgpu020:2243607:2243607 [0] enqueue.cc:1971 NCCL WARN Error : no algorithm/protocol "
            "available for function Broadcast with datatype ncclInt8. NCCL_ALGO was set to Tree.")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.UNRECOGNISED and top.title.startswith("NCCL_ALGO=Tree leaves NCCL no way to run Broadcast")
    assert "Unset NCCL_ALGO" in top.fix


def test_a_zeromq_socket_that_cannot_bind(tmp_path: Path) -> None:
    # real: NVIDIA-NeMo/RL (vLLM's message queue probing a port, then binding it after another process took it)
    line = "zmq.error.ZMQError: Address already in use (addr='tcp://10.65.1.9:7000')"
    event = one(line, Kind.STORE_ERROR)
    assert (event.origin.host, event.data["store_port"], event.data["source"]) == ("10.65.1.9", 7000, "zmq")
    top = diagnose(tmp_path, line).hypotheses[0]
    assert top.category is Category.PORT_IN_USE and top.culprit_hosts == ("10.65.1.9",) and "ZeroMQ" in top.title
    wildcard = one("zmq.error.ZMQError: Address already in use (addr='tcp://*:5555')", Kind.STORE_ERROR)
    assert wildcard.origin.host is None
