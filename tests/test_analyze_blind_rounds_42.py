"""Readings of the hundred-and-seventy-sixth round and after (``r179*``: forum-sized pastes, the machine-written
summaries of Chinese blogs), and the culprits the corpus' lines name that the reports did not. One behaviour per
test, each with the look-alike it must not catch."""

from __future__ import annotations

from pathlib import Path

from analyze_helpers import diagnose_paste, top_of
from syncdoctor.analyze import analyze_paths
from syncdoctor.analyze.model import Category


def test_a_pg_prefix_whose_bracket_the_paste_cut_still_names_the_rank(tmp_path: Path) -> None:
    # real: pytorch/pytorch#137268 (r175d): the copy began inside PyTorch's ``[PG ID … Rank 1]`` prefix
    stuck = ("PG ID 0 PG GUID 0(default_pg) Rank 1] ProcessGroupNCCL's watchdog got stuck for 480 seconds without "
             "making progress in monitoring enqueued collectives.\n")
    top = top_of(tmp_path, stuck)
    assert top.category is Category.WATCHDOG_STUCK and top.culprit_ranks == (1,), top
    # a rank named in the middle of a sentence without the prefix's shape is no prefix
    prose = ("The job hangs on Rank 1] and ProcessGroupNCCL's watchdog got stuck for 480 seconds without making "
             "progress in monitoring enqueued collectives.\n")
    assert top_of(tmp_path, prose).culprit_ranks == (), top_of(tmp_path, prose)


_PYXIS = ("slurmstepd: error: pyxis: container start failed with error code: 1\n"
          "slurmstepd: error: pyxis: couldn't start container\n")


def test_an_error_no_rule_explains_takes_the_rank_of_the_task_srun_then_reports_failing(tmp_path: Path) -> None:
    # real: CSCS's Alps docs (r55e): srun started the processes itself, one host, task 0
    top = top_of(tmp_path, _PYXIS + "srun: error: nid001234: task 0: Exited with exit code 1\n")
    assert top.category is Category.UNRECOGNISED and top.culprit_hosts == ("nid001234",), top
    assert top.culprit_ranks == (0,), top
    # with torchrun under srun (its agent speaking), a task is a node's agent: its number is no rank
    agent = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 4242) of "
             "binary: /usr/bin/python\n")
    under = top_of(tmp_path, _PYXIS + agent + "srun: error: nid001234: task 3: Exited with exit code 1\n")
    assert 3 not in under.culprit_ranks, under


def test_a_failure_record_the_terminal_wrapped_between_its_key_and_value_is_read(tmp_path: Path) -> None:
    # real: BEVFormer_segmentation_detection#18 (r173c): mmcv's progress bar with the agent's record glued to it,
    # wrapped by the terminal right after ``local_rank: ``
    bar = "[" + " " * 50 + "] 0/6019, elapsed: 0s, ETA:"
    record = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: "
    rest = "0 (pid: 1801442) of binary: /home/lide/anaconda3/envs/bevformer/bin/python\n"
    top = top_of(tmp_path, "2024-01-05 13:21:28,371 - mmdet - INFO - Saving checkpoint at 1 epochs\n"
                 + bar + record + "\n" + rest + "Traceback (most recent call last):\n")
    assert top.category is Category.RANK_KILLED and top.culprit_local_ranks == (0,), top
    assert "1801442" in top.title, top.title
    # a line of the same width ending in a key, followed by a line of its own opening with a number (a date), is not
    # joined: the number is no value of that key
    own = top_of(tmp_path, bar + record + "\n" + "2024-01-05 13:21:29,000 - mmdet - INFO - done\n")
    assert "1801442" not in own.title and own.culprit_local_ranks == (), own


def test_a_rank_whose_traceback_was_cut_before_the_exception_others_died_of_failed_of_it(tmp_path: Path) -> None:
    # real: pytorch/pytorch#173679 (r117a): ranks 9 and 13 raised InductorError; rank 19's traceback, pasted from
    # another part of the log, ends raising it with its error line cut
    cut = tmp_path / "rank19.txt"
    cut.write_text("[rank19]: Traceback (most recent call last):\n...\n"
                   '[rank19]:   File "/usr/lib/python3.10/site-packages/torch/_inductor/compile_fx.py", line 1019, in '
                   "_compile_fx_inner\n"
                   "[rank19]:     raise InductorError(e, currentframe()).with_traceback(\n")
    ends = tmp_path / "end.txt"
    ends.write_text("".join(f"[rank{r}]: torch._inductor.exc.InductorError: ImportError: cuda_utils.so: cannot read "
                            "file data: Stale file handle\n" for r in (9, 13)))
    top = analyze_paths([str(cut), str(ends)]).diagnosis.hypotheses[0]
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (9, 13, 19), top
    assert "Rank 19's traceback" in top.what and "InductorError" in top.what, top.what
    # a cut traceback raising something else is not the same failure
    cut.write_text(cut.read_text().replace("raise InductorError(", "raise ValueError("))
    other = analyze_paths([str(cut), str(ends)]).diagnosis.hypotheses[0]
    assert other.culprit_ranks == (9, 13), other


_NIXL = "zmq.error.ZMQError: Cannot assign requested address (addr='tcp://172.17.0.5:34762')\n"
_RAY = "(RayWorkerWrapper pid=438, ip=172.17.0.6) "


def test_an_errors_words_without_a_place_take_the_one_host_the_other_error_lines_name(tmp_path: Path) -> None:
    # real: ai-dynamo/dynamo#2706 (r86a): the error quoted first without its Ray prefix, its traceback below with it
    paste = _NIXL + "".join(_RAY + line for line in (
        "Exception in thread nixl_handshake_listener:\n", "Traceback (most recent call last):\n",
        '  File "/usr/lib/python3.12/threading.py", line 1075, in _bootstrap_inner\n'))
    top = top_of(tmp_path, paste)
    assert top.culprit_hosts == ("172.17.0.6",) and "bind" in top.title, top
    # the confidence stays that of words without a place: the place is the other lines'
    alone = top_of(tmp_path, _NIXL)
    assert alone.confidence == top.confidence and not alone.culprit_hosts, (alone, top)
    # lines of two hosts name no one place
    two = paste + "(RayWorkerWrapper pid=91, ip=172.17.0.9) Traceback (most recent call last):\n"
    assert not top_of(tmp_path, two).culprit_hosts, top_of(tmp_path, two)


def test_a_work_completions_status_and_vendor_code_in_any_words_is_a_completion_error(tmp_path: Path) -> None:
    # real: a summary of NVIDIA/nccl's thread (r179h, blog.gitcode.com): the error in other words than NCCL's
    top = top_of(tmp_path, "work request complete err: status 5 and vendor err 249\n")
    assert top.category is Category.IB_COMPLETION, top
    # status 12 (the transport's retries exceeded) is read as that, not as another completion error
    retry = top_of(tmp_path, "work request complete err: status 12 and vendor err 129\n")
    assert retry.category is not Category.IB_COMPLETION, retry
    # a vendor field of zero with a success status is no error line
    assert not diagnose_paste(tmp_path, "NET/IB: completion status 0, vendor_err 0 (ok)\n").hypotheses


def test_ncclss_topology_attribute_not_found_is_never_silent(tmp_path: Path) -> None:
    # real: a summary of NVIDIA/nccl's thread (r179h): ppc64le containers on the host network, the NIC's bus id missing
    top = top_of(tmp_path, "Attribute busid of node nic not found\n")
    assert top.category is Category.UNRECOGNISED and "busid" in top.title, top
    # the same words about something else than an attribute are no error
    assert not diagnose_paste(tmp_path, "Attribute lookup of node labels finished\n").hypotheses


def test_the_store_clients_oldest_connect_timeout_is_the_store_not_reached(tmp_path: Path) -> None:
    # real: DeepDriveMD-pipeline#14 (r179b): PyTorch 1.7's TCPStore constructor, no timeout in the message
    paste = ('  File "/lib/python3.7/site-packages/torch/distributed/rendezvous.py", line 172, in _env_rendezvous_handler\n'
             "    store = TCPStore(master_addr, master_port, world_size, start_daemon, timeout)\n"
             "RuntimeError: connect() timed out.\n")
    top = top_of(tmp_path, "Traceback (most recent call last):\n" + paste)
    assert top.category is Category.PEER_UNREACHABLE and "store" in top.title, top
    # a connect that timed out inside a longer sentence of another library is not the store's
    other = top_of(tmp_path, "RuntimeError: [enforce fail at pair.cc:720] connect() timed out while the peer was busy\n")
    assert "store" not in other.title, other


_HANG = "".join(f"HW Exception by GPU node-9 (Agent handle: 0x64ff272d8ab{i}) reason :GPU Hang\n" for i in range(3))


def test_the_lines_above_a_terminals_one_prompt_are_its_hosts(tmp_path: Path) -> None:
    # real: ROCm/ROCm#4021 (r117c): the output, then the prompt the shell returned to (with the exit status a theme
    # shows before it), the watchdog's lines printed after it
    prompt = "(axolotl) 134 hotaisle@ENC1-CLS01-SVR14:~/train$ "
    top = top_of(tmp_path, _HANG + "Aborted (core dumped)\n" + prompt + "\n")
    assert top.category is Category.GPU_ERROR and top.culprit_hosts == ("ENC1-CLS01-SVR14",), top
    # prompts of two hosts in one paste (an ssh session in it): the lines above the first belong to neither
    two = top_of(tmp_path, _HANG + "user@node-1:~$ ssh node-2\n" + "user@node-2:~$ nvidia-smi\n")
    assert not two.culprit_hosts, two
    # a line that names its own host keeps it
    own = top_of(tmp_path, "gpu7:4775:4775 [0] bootstrap.cc:37 NCCL WARN Bootstrap : no socket interface found\n"
                 + "user@login-1:~$ \n")
    assert own.culprit_hosts == ("gpu7",), own


def test_hydras_prefix_names_the_node_its_launcher_or_proxy_runs_on(tmp_path: Path) -> None:
    # real: zhijian-liu/torchpack#36 (r175e): MPICH's mpiexec refusing an Open MPI option
    top = top_of(tmp_path, "[mpiexec@cappuccino-Super-Server] match_arg (utils/args/args.c:163): unrecognized argument "
                 "allow-run-as-root\n[mpiexec@cappuccino-Super-Server] HYDU_parse_array (utils/args/args.c:178): "
                 "argument matching returned error\n")
    assert top.culprit_hosts == ("cappuccino-Super-Server",), top
    # the proxy ending badly on another node is that node's, not the launcher's (the message names it)
    down = top_of(tmp_path, "[mpiexec@node-0] wait_proxies_to_terminate (../i_mpiexec.c:537): downstream from host "
                  "node-3 exited with status 1\n")
    assert down.culprit_hosts == ("node-3",), down


def test_a_launchers_report_of_a_remote_command_names_the_host_its_ssh_went_to(tmp_path: Path) -> None:
    # real: dmlc/dgl#7543 (r134e): the remote trainer's ModuleNotFoundError and DGL's launcher's report on one line
    line = ("Traceback (most recent call last): File \u201cnode_classification.py\u201d, line 5, in import dgl "
            "ModuleNotFoundError: No module named \u2018dgl\u2019 Called process error Command \u2018ssh -o "
            "StrictHostKeyChecking=no -p 22 192.168.85.128 \u2018cd /home/ubuntu/workspace; python3 x.py\n")
    top = top_of(tmp_path, line)
    assert top.culprit_hosts == ("192.168.85.128",), top
    # the argument list form of subprocess' report names it too
    listed = top_of(tmp_path, "ModuleNotFoundError: No module named 'dgl'. subprocess.CalledProcessError: Command "
                    "'['ssh', '-o', 'StrictHostKeyChecking=no', 'worker-3', 'python3 x.py']' returned non-zero exit "
                    "status 1.\n")
    assert listed.culprit_hosts == ("worker-3",), listed
    # many options, each read one way (a line of them was read in exponential time before)
    many = top_of(tmp_path, "ModuleNotFoundError: No module named 'dgl' Command 'ssh " + "-o x " * 60 + "node-9 ls'\n")
    assert many.culprit_hosts == ("node-9",), many
    unended = top_of(tmp_path, "ModuleNotFoundError: No module named 'dgl' Command 'ssh " + "-o x " * 60 + "\n")
    assert not unended.culprit_hosts or unended.culprit_hosts == ("x",), unended
    # a command that is not ssh names no host
    local = top_of(tmp_path, "ModuleNotFoundError: No module named 'dgl'. Command 'python3 x.py' returned non-zero\n")
    assert not local.culprit_hosts, local


_RECV = ("[W514 18:33:36.536327028 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=3, "
         "addr=[localhost]:34658, remote=[localhost]:1234): Failed to recv, got 0 bytes. Connection was likely closed. "
         "Did the remote server shutdown or crash?\n")


def test_a_store_client_that_lost_the_store_names_the_stores_process_not_localhost(tmp_path: Path) -> None:
    # real: pytorch/pytorch#153586 (r29k): rank 0 held the store and exited while rank 1 waited in it
    top = top_of(tmp_path, _RECV)
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (0,), top
    assert "localhost" not in top.culprit_hosts and "store's server" in top.title, top
    # rank 0 itself losing the store (the agent of its node held it) does not name itself
    own = top_of(tmp_path, "[rank0]:" + _RECV)
    assert own.culprit_ranks != (0,), own
    # a peer lost over NCCL's sockets is that peer's host, as before
    nccl = top_of(tmp_path, "node1:123:456 [0] misc/socket.cc:49 NCCL WARN Net : Connection closed by remote peer "
                  "node2<51362>\n")
    assert "node2" in " ".join(nccl.culprit_hosts) and nccl.culprit_ranks != (0,), nccl


def test_torch_xlas_mesh_master_not_reached_is_the_store_not_reached(tmp_path: Path) -> None:
    # real: pytorch/xla#4115, #2342, #2341 (r181h): XRT's client could not reach the mesh service on the first worker
    frames = ('  File "/lib/python3.7/site-packages/torch_xla/core/xla_model.py", line 21, in <lambda>\n'
              "    _DEVICES = xu.LazyProperty(lambda: torch_xla._XLAC._xla_get_devices())\n")
    waited = top_of(tmp_path, "Traceback (most recent call last):\n" + frames + "RuntimeError: tensorflow/compiler/xla/"
                    "xla_client/mesh_service.cc:329 : Check failed: impl_->channel->WaitForConnected( std::chrono::"
                    "system_clock::now() + std::chrono::seconds(connect_wait_seconds))\n")
    assert waited.category is Category.PEER_UNREACHABLE and "mesh master" in waited.title, waited
    # the check cut by the paste right after ``impl_->channel->`` is the same
    cut = top_of(tmp_path, "2020-07-11 06:43:09 10.164.0.3 [2] RuntimeError: tensorflow/compiler/xla/xla_client/"
                 "mesh_service.cc:316 : Check failed: impl_->channel->\n")
    assert cut.category is Category.PEER_UNREACHABLE, cut
    # the configuration the master could not be asked for (gRPC's UNAVAILABLE, 14): its connection reset
    reset = top_of(tmp_path, "Exception in device=TPU:6: tensorflow/compiler/xla/xla_client/mesh_service.cc:331 : Failed "
                   "to retrieve mesh configuration: Connection reset by peer (14)\n")
    assert reset.category is Category.PEER_UNREACHABLE and "Connection reset by peer" in reset.title, reset
    # the service's own error (another status, INTERNAL 13) is not a connection that failed
    internal = top_of(tmp_path, "2020-07-12 03:12:53.542777: E    3489 tensorflow/compiler/xla/xla_client/tf_logging.cc:11]"
                      " Failed to retrieve mesh configuration: ordinal (13)\n")
    assert internal.category is not Category.PEER_UNREACHABLE, internal


def test_an_npus_report_of_a_fault_of_its_own_engines_is_the_devices(tmp_path: Path) -> None:
    # real: Ascend/pytorch#166 (r181h): CANN's device error report, a DMA engine's error, as a new HCCL group was made
    report = ("EE9999[PID: 43311] The error from device(chipId:1, dieId:0), serial number is 6.\n"
              "there is a fftsplus sdma error, sdma channel is 2,\n"
              "sdmaState=0x6, sdmaTslotid=0x4, sdmaCxtid=0x1, sdmaThreadid=0x0,\n")
    assert top_of(tmp_path, report).category is Category.GPU_ERROR, top_of(tmp_path, report)
    # the same report of a collective's task that timed out on the device is a wait, not the device's fault
    wait = ("EI9999: 2024-07-03-11:28:40.419.527  The error from device(chipId:0, dieId:0), serial number is 1, hccl "
            "fftsplus task timeout occurred during task execution, stream_id:4, sq_id:4, task_id:5,\n")
    assert top_of(tmp_path, wait).category is not Category.GPU_ERROR, top_of(tmp_path, wait)


def test_a_type_errors_words_alone_are_the_programs_own_error(tmp_path: Path) -> None:
    # real: SimpleTuner#1408 (r181g): the ranks' cache warnings, then the error's words without its class, cut
    paste = ("2025-04-18 21:05:49,361 [WARNING] No cache file was found: output/all_image_files.json\n"
             "'NoneType' object is not\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED, top
    assert top_of(tmp_path, "'Trainer' object has no attribute 'accelerator'\n").category is Category.RANK_CRASHED
    # behind a log collector's stamp too (the paste's forms: scripts/pasted_forms.py)
    stamped = top_of(tmp_path, "2024-05-01T12:00:00.123Z 'NoneType' object is not\n")
    assert stamped.category is Category.RANK_CRASHED, stamped
    # a sentence quoting an object's name is no error
    assert not diagnose_paste(tmp_path, "loaded 'model' object from the cache in 2.1 s\n").hypotheses


def test_a_cpu_tensor_handed_to_ncclss_collective_is_the_programs_call(tmp_path: Path) -> None:
    # real: facebookresearch/SlowFast#549 (r182d): the test loop's all_gather of CPU tensors on the NCCL backend
    paste = ("-- Process 1 terminated with the following error:\nTraceback (most recent call last):\n"
             '  File "/lib/python3.8/site-packages/torch/distributed/distributed_c10d.py", line 1863, in all_gather\n'
             "    work = default_pg.allgather([tensor_list], [tensor])\nRuntimeError: Tensors must be CUDA and dense\n")
    top = top_of(tmp_path, paste)
    assert top.category is Category.RANK_CRASHED and "CPU tensor" in top.title, top
    newer = top_of(tmp_path, "RuntimeError: No backend type associated with device type cpu\n")
    assert newer.category is Category.RANK_CRASHED and "CPU tensor" in newer.title, newer
    # NCCL refusing a tensor for its type is another reading
    dtype = top_of(tmp_path, "RuntimeError: Input tensor data type is not supported for NCCL process group: ComplexFloat\n")
    assert "CPU tensor" not in dtype.title, dtype


def test_slurms_step_daemon_failing_to_read_its_oom_accounting_is_no_oom_kill(tmp_path: Path) -> None:
    # a sweep of Slurm's srun and slurmstepd messages (SchedMD/slurm): its own OOM accounting not read or set
    for line in ("slurmstepd: error: Cannot read step's oom_kill counter from memory.events file.\n",
                 "slurmstepd: error: cannot read oom-kill counts.\n",
                 "slurmstepd: error: Resource spec: unable to disable OOM Killer in system memory cgroup: nid001234\n"):
        top = top_of(tmp_path, line)
        assert top.category is not Category.RANK_KILLED, (line, top)
    # the step's tasks killed by the OOM killer stay that
    killed = top_of(tmp_path, "slurmstepd: error: Detected 1 oom_kill event in StepId=8538204.0. Some of the step tasks "
                    "have been OOM Killed.\n")
    assert killed.category is Category.RANK_KILLED, killed


_DOOM = "0.345s: flux-shell[0]: FATAL: doom: python: task rank 3 on host tioga12 exited (Exit 1) and exit-timeout=30s has expired\n"


def test_fluxs_shell_names_the_first_task_that_exited_and_its_host(tmp_path: Path) -> None:
    # Flux (flux-framework/flux-core, src/shell/doom.c): the job ended for the first task to exit, the others killed
    top = top_of(tmp_path, _DOOM + "flux-job: task(s) exited with exit code 1\n")
    assert top.category is Category.RANK_CRASHED and top.culprit_ranks == (3,) and top.culprit_hosts == ("tioga12",), top
    assert "Flux task 3" in top.title and "flux-job" not in top.culprit_hosts, top.title
    # exit-on-error, the task killed: a kill from outside; before 0.50 without the command and ``task``
    killed = top_of(tmp_path, "12.511s: job.exception fQ6wVcLn1 type=exec severity=0 python: task rank 1 on host "
                    "corona171 failed (Killed) and exit-on-error is set\n")
    assert killed.category is Category.RANK_KILLED and killed.culprit_ranks == (1,), killed
    old = top_of(tmp_path, "2.102s: flux-shell[1]: FATAL: doom: rank 1 on host corona171 exited and exit-timeout=30s has "
                 "expired\n")
    assert old.culprit_hosts == ("corona171",) and old.culprit_ranks == (1,), old
    oldest = top_of(tmp_path, "flux-shell[0]: FATAL: doom: rank 1 exited and exit-timeout=30s has expired\n")
    assert oldest.culprit_ranks == (1,), oldest  # (before 0.70: no host)
    # a shell lost (its node gone): the host, and its number is the node's, no task's rank
    shell = top_of(tmp_path, "flux-shell[0]: FATAL: doom: python: shell rank 2 on host tioga14 exited and exit-timeout=30s "
                   "has expired\n")
    assert shell.culprit_hosts == ("tioga14",) and 2 not in shell.culprit_ranks, shell
    # torchrun under Flux (its agent speaking): a task is a node's launcher, its number no rank
    agent = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 4242) of "
             "binary: /usr/bin/python\n")
    under = top_of(tmp_path, agent + _DOOM.replace("python: task rank 3", "torchrun: task rank 1"))
    assert 1 not in under.culprit_ranks, under


def test_fluxs_job_summary_and_time_limit_are_read_and_its_commands_are_no_hosts(tmp_path: Path) -> None:
    summary = top_of(tmp_path, "flux-job: task(s) exited with exit code 1\n")
    assert summary.category is Category.RANK_CRASHED and not summary.culprit_hosts, summary
    assert top_of(tmp_path, "flux-job: task(s) Killed\n").category is Category.RANK_KILLED
    limit = top_of(tmp_path, "1.234s: job.exception f2Ny4Vn7X1F type=timeout severity=0 resource allocation expired\n")
    assert limit.category is Category.RANK_KILLED and "scheduler" in limit.title, limit
    # another exception type (a task that could not start) is no time limit
    start = top_of(tmp_path, "0.215s: job.exception f2dW4GvW9 type=exec severity=0 task 0 (host corona212): start failed: "
                   "torchrun: No such file or directory\n")
    assert start.category is not Category.RANK_KILLED, start


def test_fluxs_lines_are_lines_of_their_own_and_its_summary_yields_to_the_error_above(tmp_path: Path) -> None:
    # real: flux-framework/flux-core#4451 (r104b): two long exceptions of one width, then flux-job's summary: no wrap
    error = ("job.exception type=exec severity=0 MPI_Abort: Fatal error in MPI_Init: Other MPI error, error stack: "
             "MPIR_Init_thread(493)....:  MPID_Init(419)...........: channel initialization failed MPIDI_CH3_Init(550)"
             "......:  MPIDI_CH3I_RDMA_init(446):  rdma_iba_hca_init(1636)..: cannot create cq\n")
    paste = "0.260s: " + error + "0.261s: " + error + "flux-job: task(s) exited with exit code 1\n"
    top = top_of(tmp_path, paste)
    assert top.category is Category.MEMLOCK_LIMIT and "flux-job" not in top.culprit_hosts, top
    # the summary alone still says a task failed
    assert top_of(tmp_path, "flux-job: task(s) exited with exit code 1\n").category is Category.RANK_CRASHED


def test_a_launchers_words_naming_the_host_it_failed_on_place_an_error_no_rule_explains(tmp_path: Path) -> None:
    # Flux's shell that could not start a task (flux-core src/shell/shell.c), in its job exception
    start = top_of(tmp_path, "0.215s: job.exception f2dW4GvW9 type=exec severity=0 task 0 (host corona212): start "
                   "failed: torchrun: No such file or directory\n")
    assert start.culprit_hosts == ("corona212",), start
    # DeepSpeed's runner asking the first host of its hostfile for its address (r140d, DeepSpeed#4649)
    ssh = top_of(tmp_path, "subprocess.CalledProcessError: Command '['ssh deepspeed-helloworld-worker-0 hostname -I']' "
                 "returned non-zero exit status 255.\n")
    assert ssh.culprit_hosts == ("deepspeed-helloworld-worker-0",), ssh
    # a host the line's words merely mention is no place
    mention = top_of(tmp_path, "RuntimeError: could not reach the host corona212 to start\n")
    assert not mention.culprit_hosts, mention
