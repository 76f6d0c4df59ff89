"""Who wrote a line and when: rank/host from line prefixes and file names, and timestamps. Pure: no I/O.

Prefixes recognised at the start of a line (several may be stacked, in any order):

====================================  =========================================================
``[rank3]:``                          PyTorch (excepthook and C++ log prefix): global rank
``[default0]:`` / ``[trainer1]:``     torchrun ``--tee``: role name and **local** rank
``3: ``                               Slurm ``srun --label``: task id = global rank
``[1,3]<stdout>:``                    Open MPI ``--tag-output``: job id, rank
``Tue Nov 10 10:05:04 2020[3]<stderr>:`` horovodrun (Gloo), also ``…2020[1,3]<stderr>:`` (mpirun
                                      ``--timestamp-output``): the time (optional) and the rank
``2024-05-01T12:00:00.123Z``          a log collector's timestamp (ISO 8601); after it, a container
                                      runtime's stream and tag (``stderr F ``, /var/log/pods)
``[E1129 12:59:46.221 file.cpp:67]``  c10 (glog-style) log prefix: severity, month-day, time
``E1129 12:59:46.221000 1234 f.py:1]`` torch elastic's Python log format: severity, time, pid
``host:pid:tid [dev] NCCL INFO``      NCCL's own prefix (optionally ``[YYYY-MM-DD HH:MM:SS] `` first)
``worker-1: ``                        pdsh (DeepSpeed's multi-node launcher), ``mpirun --tag-output``
                                      variants: the host (a name with a digit, ``-`` or ``.``)
``[pod/trainer-worker-0/pytorch] ``   ``kubectl logs --prefix``: the pod, read as the host
``(RayWorkerWrapper pid=11305, ip=…)`` Ray's actor prefix: pid and host address
``Aug 26 15:28:16 node7 kernel: ``    syslog / ``journalctl``: the time and the host
``[1652739463.05] [cn22:4071:0] ``   UCX's and UCC's log prefix: the host and the pid
``[node3:07661] ``                     Open MPI's own prefix: the host and the pid
``[mpiexec@node-0] ``                  MPICH's and Intel MPI's Hydra (``[proxy:0:1@node-3] ``): the host
``trainer-worker-1  | ``               ``docker compose logs``: the service (or container name), the host unless a prefix after it names one
``logs/rank_3.node2.log:``            ``grep -H`` over log files: the file's name, read as below
``[WARNING] [node-3] [workload:13(5) …]`` NVIDIA's resiliency extension (ft_launcher): the node, the global and
                                      local rank (after its stamp)
``libfabric:48213:…::cxi:…<warn> nid1: `` libfabric's log: the pid, and the node CXI's lines name
``\tnode-3:0\tolmo_core.x:7\tWARNING\t`` OLMo's tab-separated format (after its stamp): the host, the local rank
``[NeMo W 2026-12-05 06:53:11 f:886]`` NeMo's logger: its level and time
``<info>  [2021-12-07 10:43:05] 087c0ee7 || `` Determined AI's trial log: the level, the time, the container (read
                                      as the host)
``trainer/0 [1]:``                    TorchX: the role and its replica (read as the host), the worker's local rank
``2021-04-23 18:14:43 10.164.0.29 [3] `` torch_xla's pod runner (xla_dist): the time and the worker's address
``E           ``                        pytest's marker before a failed test's exception lines
====================================  =========================================================

File names: ``rank3.log``, ``rank_3``, ``rank-3``, ``nccl_trace_rank_3``, ``attempt_0/3/stderr.log``
(torchrun's log dir: local rank 3), a directory named for a rank (``rank3/``, ``rank_3-node1/``; not a longer name
that mentions one, ``run-without-rank3-fix/``), and a directory or file part naming a host (``host1``, ``node-07``,
``worker3``, ``nid001234``, ``gpu-12``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from syncdoctor.analyze.model import Origin

__all__ = [
    "REDACTED_HOST",
    "NcclPrefix",
    "Prefix",
    "clean",
    "log_dir_attempt",
    "origin_from_path",
    "parse_iso_time",
    "split_nccl",
    "split_prefix",
]

_RANK = re.compile(r"\[rank(\d{1,6})\]:[ ]?")
_RANK_CUT = re.compile(r"rank(\d{1,6})\]:(?=\[| )")  # a paste that starts one byte into ``[rank0]:[E811 …``
_MPI = re.compile(r"\[\d+,(\d{1,6})\]<(?:stdout|stderr)>:[ ]?")
# Lightning's (and Fabric's) messages of each rank, ``[rank: 3] Seed set to 42``: the global rank
_LIGHTNING = re.compile(r"\[rank: (\d{1,6})\] ")
# SageMaker's MPI launcher rewriting Open MPI's tag with the rank and the host (``[1,mpirank:11,algo-2]<stderr>:``)
_SAGEMAKER = re.compile(r"\[\d+,mpirank:(?P<rank>\d{1,6}),(?P<host>algo-\d{1,4})\]<(?:stdout|stderr)>:[ ]?")
# mpirun's --timestamp-output (and horovodrun's) date before the rank's tag: ``Fri Jul 10 01:13:30 2020[1,22]<stderr>:``
# (Open MPI's job and rank), ``Wed Jun 12 10:00:00 2019[0]<stderr>:`` (horovodrun's rank)
_HOROVOD = re.compile(r"(?:[A-Z][a-z]{2} (?P<mon>[A-Z][a-z]{2}) {1,2}(?P<d>\d{1,2}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d) "
                      r"\d{4})?\[(?:\d+,)?(?P<rank>\d{1,6})\]<(?:stdout|stderr)>:[ ]?")
_MONTHS = {name: number for number, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}
_ROLE = re.compile(r"\[([A-Za-z_][A-Za-z_-]{0,30}?)(\d{1,5})\]:[ ]?")
_SLURM = re.compile(r" {0,5}(\d{1,6}): ")
_PID_MAX = 4_194_304  # Linux's PID_MAX_LIMIT: a larger number is no process id (a thread's, in torch's log format)
# syslog / journalctl's short format: "Aug 26 15:28:16 ailcm-ai1 kernel: " (the host, then the program)
_SYSLOG = re.compile(r"(?P<mon>[A-Z][a-z]{2}) {1,2}(?P<d>\d{1,2}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d) "
                     r"(?P<host>[A-Za-z0-9][A-Za-z0-9_.-]{0,62}) [A-Za-z][\w./@-]{0,40}(?:\[\d{1,10}\])?: ")
# pdsh: ``worker-1: ``, ``9.91.4.251: ``; a host name has a digit, a dot or a hyphen (``RuntimeError: `` has none);
# the line after it keeps its indentation (``worker-1:   File "train.py", line 3, in <module>``)
# pytest's report of a failed test: ``E           RuntimeError: …`` (the exception's lines under its ``E`` marker)
_PYTEST = re.compile(r"E {3,}(?=\S)")
# TorchX's local and cloud schedulers: ``trainer/0 [1]:`` before a worker's line (the role, its replica, the worker's
# local rank), ``trainer/0 `` before the launcher's own (torchrun's ``ERROR:torch.distributed.elastic…``); the replica
# is one node of the role, read as its host
_TORCHX = re.compile(r"(?P<role>[A-Za-z_][\w\-]{0,60})/(?P<replica>\d{1,5}) (?:\[(?P<local>\d{1,4})\]:"
                     r"|(?=(?:ERROR|WARNING|INFO|DEBUG|CRITICAL)[: ]|Traceback|\s+File \"|[EWIF]\d{4} ))")
_PDSH = re.compile(r"(?P<host>(?=[A-Za-z0-9_.-]*[0-9.-])[A-Za-z0-9][A-Za-z0-9_.-]{0,62}): (?= *\S)")
# after a pipeline's timestamp, a host as pdsh prints it, not a logger's dotted name (``torch.distributed.run: ``)
_STAMPED_HOST = re.compile(r"[A-Za-z][A-Za-z0-9_-]*[0-9][A-Za-z0-9_-]*$")
# ``grep -H`` (``-r``, several files) over log files: ``rank_604.s12gn3064.4031852.log:`` (``-n``: ``…log:12:``)
_GREP = re.compile(r"(?P<file>[\w.\-/]{1,200}\.(?:log|txt|out|err))(?::\d{1,9})?:(?=\S)")
_NOT_HOST = re.compile(r"^\d+(?:\.\d+)?s?$|(?:Error|Exception|Warning|Info)$|^(?:step|epoch|iter|loss)|"
                       r"^E[A-Z0-9]\d{4}$|"  # Ascend CANN's error codes: EI0002: …, EE9999: …, E39999: …
                       r"^mlx\d(?:_\d+)?$|"  # libmlx5's own messages: ``mlx5:  got completion with error:``
                       r"^AMD-Vi$|"  # the kernel's AMD IOMMU driver: ``AMD-Vi: Event logged [IO_PAGE_FAULT …]``
                       # Flux's commands and its job shell (``flux-job: task(s) exited with exit code 1``,
                       # ``flux-shell[0]: FATAL: …``): programs, not hosts
                       r"^flux-[a-z]+$|"
                       # a key in camelCase with a digit (libuv's store message broken by a paste after its port:
                       # ``useIpv6: false, code: -98, name: EADDRINUSE``): no host is written so
                       r"(?-i:^[a-z]+[A-Z][A-Za-z]*\d+$)|"
                       # a Python exception's qualified type whatever its name ends in (``torch._dynamo.exc.
                       # BackendCompilerFailed: …``): lower-case modules, then a class in CamelCase
                       r"(?-i:^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*\.[A-Z][A-Z0-9_]*[a-z]\w*$)|"  # (its case counts; ``FSTimeOut``)
                       # (and a systemd unit: ``nvidia-fabricmanager.service: Main process exited, …``)
                       r"\.(?:py|cc|cpp|cu|h|hpp|sh|log|txt|json|ya?ml|so(?:\.\d+)*|service|socket|mount|timer)$", re.I)
# docker compose's service prefix, ``deepspeed-worker-2-1  | `` (v2) or ``worker_1  | `` (v1): the container;
# a container named by ``container_name`` has no number (``mistralrs-headnode  | ``): then a dash or an underscore
# in the name and two spaces of padding, so a table's first column (``loss     | 0.5``) is not taken for one
_COMPOSE = re.compile(r"(?P<svc>[A-Za-z][\w.\-]{0,100}[-_]\d{1,4}) +\| "
                      r"|(?P<named>(?=[A-Za-z0-9.]*[-_])[A-Za-z][\w.\-]{0,100}[A-Za-z0-9]) {2,}\| ")
# a platform's pod or node name in brackets before the line's own stamp (Alibaba PAI-DLC, some job schedulers):
# "[dlc1mtq58q0821ib-master-0] [2026-03-30 19:24:42,731] torch.distributed…": a DNS label with a dash and a digit
_BRACKET_HOST = re.compile(r"\[(?P<host>(?=[a-z0-9-]*-)(?=[a-z-]*[0-9])(?!rank)[a-z][a-z0-9-]{1,61}[a-z0-9])\] "
                           r"(?=\[|\d{4}-\d\d-\d\d|[IWEF]\d{4} )")
# UCX's (and UCC's) log prefix, ``[1652739463.054681] [cn0022:4071024:0]        ib_iface.c:1035 UCX  ERROR …``: the
# epoch stamp (not read: a clock no other prefix shares), then the host, the pid and UCX's thread index, before the
# source file that logged; the older form without the stamp, ``[compute001:31180:0:31180] ib_mlx5_log.c:143 …``
_UCX = re.compile(r"(?:\[\d{9,10}\.\d{1,9}\] +)?\[(?P<host>[A-Za-z0-9][\w.\-]{0,62}):(?P<pid>\d{1,10}) ?:\d{1,6}(?::\d{1,10})?\]"
                  r"\s+(?=[\w.]{1,60}\.(?:c|cc|cpp|h):\d{1,6}\s)")
# Open MPI's own prefix (opal_output, its error handlers, show_help's aggregated lines): the node and the pid, the pid
# printed with at least five digits (``[h06c0901:07661] *** Process received signal ***``, ``[histamine0:1224050]
# pml_ucx.c:477  Error: Failed to resolve UCX endpoint for rank 1``)
# MPICH's and Intel MPI's Hydra: the launcher and its proxies name the node they run on (``[mpiexec@node-0] …``,
# ``[proxy:0:1@node-3] …``)
_HYDRA = re.compile(r"\[(?:mpiexec|proxy:\d{1,6}(?::\d{1,6})?)@(?P<host>[A-Za-z0-9][\w.\-]{0,252})\] ")
_OPAL = re.compile(r"\[(?P<host>(?![Rr]ank|RANK|[Ee]poch|[Ss]tep|[Ii]ter)[A-Za-z][\w.\-]{0,62}):(?P<pid>\d{5,10})\] ")
# Determined AI's trial log (its web UI and ``det trial logs``): the level in angle brackets (empty for the process's
# own output), the time, the container's id, then ``||``: ``<info>    [2021-12-07 10:43:05] 087c0ee7 || INFO: …``
_DETERMINED = re.compile(r"<(?P<lvl>info|warning|error|critical|debug|)> +\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] "
                         r"(?P<cid>[0-9a-f]{8}) \|\| ")
# ``cat -n`` / ``nl``'s line number before each line (right-aligned, then a tab): the paste's numbering, no rank
_CAT_N = re.compile(r" {0,8}\d{1,9}\t")
# after a collector's or journalctl's ISO stamp (``journalctl -o short-iso``), the host and the program as syslog
# writes them: ``2024-05-01T10:00:00+0000 gpu-node-07 kernel: …`` (a host with a digit: not a logger's words)
# (the program not an exception's class: ``pix2pix TypeError: …`` is a paste's words before an error, no host)
_ISO_SYSLOG = re.compile(r"(?P<host>[A-Za-z][A-Za-z0-9_-]*[0-9][A-Za-z0-9_.-]*) "
                         r"(?![\w.]*(?:Error|Exception|Warning|Interrupt|Exit)(?:\[|: ))[A-Za-z][\w./@-]{0,40}(?:\[\d{1,10}\])?: ")
# loguru's default format after its stamp (``2024-05-01 10:00:00.123 | ERROR    | __main__:train:88 - …``): its
# level, then where it was logged
_LOGURU = re.compile(r" ?\| (?P<lvl>TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL) *\| [\w.<>\-]{1,200}:[\w.<>\-]{1,200}:\d{1,6} - ")
# a container runtime's own log file (/var/log/pods, /var/log/containers: CRI's format) after its stamp: the stream
# and whether the line is whole (F) or a part cut at 16 KiB (P), ``2024-05-01T10:00:00.123456789Z stderr F …``
_CRI = re.compile(r"(?:stdout|stderr) [PF] ")
# NVIDIA's resiliency extension (nvidia-resiliency-ext: ft_launcher, its rank monitors, in-process restart) after its
# stamp: ``[WARNING] [node-3] [workload:13(5) infra:1(5)] rank_monitor_server.py:497 ``: the level, the node, the
# workload's global rank and local rank (``?`` where none is known yet) and its launcher's; its log file writes the
# launcher's (infra) rank before each line as srun -l would, which is no rank of the workload's
_NVRX = re.compile(r"\[(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] \[(?P<host>[A-Za-z0-9][\w.\-]{0,252})\] "
                   r"\[workload:(?P<rank>\d{1,6}|\?)\((?P<local>\d{1,5}|\?)\) infra:(?:\d{1,6}|\?)\((?:\d{1,5}|\?)\)\] "
                   r"(?:[\w.\-]{1,100}\.py:\d{1,6} )?")
# libfabric's own log lines (FI_LOG_LEVEL, seen under aws-ofi-nccl and on HPE Slingshot):
# ``libfabric:48213:1733380292::efa:cq:efa_rdm_cq_process_prov_errno():631<warn> ``: the pid, then the provider's
# subsystem and function; CXI's (Slingshot) then name the node, ``nid001234: ``
_LIBFABRIC = re.compile(r"libfabric:(?P<pid>\d{1,10}):\d{0,12}::\w{1,20}:\w{1,30}:\w{1,100}\(\):\d{1,6}"
                        r"<(?P<lvl>warn|info|debug|trace)> (?:(?P<host>(?=[\w.\-]*\d)[A-Za-z][\w.\-]{0,62}): (?=\S))?")
# OLMo-core's and OLMo's log format after the stamp, tab-separated: ``\tnode-3:0\tolmo_core.train.trainer:707\tWARNING\t``
# (the host and the local rank, the logger and its line, the level)
_OLMO = re.compile(r"\t(?P<host>[A-Za-z0-9][\w.\-]{0,252}):(?P<local>\d{1,5})\t[\w.]{1,200}:\d{1,6}\t"
                   r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)\t")
# NeMo's logger: ``[NeMo W 2026-12-05 06:53:11 exp_manager:886] `` (its level's letter, the time, where)
_NEMO = re.compile(r"\[NeMo (?P<sev>[DIWEC]) (?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
                   r" [\w.\-]{1,100}:\d{1,6}\] ")
_NEMO_LEVELS = {"D": "", "I": "info", "W": "warning", "E": "error", "C": "fatal"}
# torch_xla's pod runner (``python -m torch_xla.distributed.xla_dist``) before each line of a TPU VM's worker: the time,
# the worker's address and its index among the pod's hosts (``2021-04-23 18:14:43 10.164.0.29 [3] …``; the index is
# the host's, not a rank)
_XLA_DIST = re.compile(r"(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<host>\d{1,3}(?:\.\d{1,3}){3}) \[\d{1,5}\] ")
_KUBECTL = re.compile(r"\[pod/(?P<pod>[A-Za-z0-9][A-Za-z0-9_.-]{0,252})/[A-Za-z0-9_.-]{1,63}\] ")
_RAY = re.compile(r"\((?:(?P<actor>[A-Za-z_][\w.]{0,80}) )?(?:rank=(?P<rank>\d{1,6}) )?pid=(?P<pid>\d{1,10})"
                  r"(?:, ip=(?P<ip>[0-9a-fA-F.:]{3,45}))?\) ")
# Ray's own daemons on a node, forwarded to the driver's console: ``(raylet, ip=10.0.1.36) [2025-11-20 08:14:04,892 E
# 18591 18625] (raylet) file_system_monitor.cc:116: …`` (the node's address; the pid in the bracket is the daemon's)
_RAY_DAEMON = re.compile(r"\((?:raylet|gcs_server|dashboard_agent|log_monitor|monitor), ip=(?P<ip>[0-9a-fA-F.:]{3,45})\) ")
# vLLM's worker processes name their place: "(VllmWorker rank=3 pid=…)" (0.8-0.9), "(Worker_TP1 pid=…)",
# "(Worker_DP0_TP1_EP1 pid=…)" (0.10+): the worker's index among its engine's, the local rank where one engine runs
# on the node (a data-parallel rank other than 0 leaves it unknown)
_VLLM_TP = re.compile(r"Worker(?:_DP0)?(?:_PP0)?_TP(?P<tp>\d{1,4})(?:_EP\d+)?$")
# (SGLang's scheduler and workers write their parallel ranks inside the stamp's brackets: ``[2025-01-30 18:11:28
# TP8]``, ``[… DP3 TP3 EP3]``: a rank within a group, not the job's)
_ISO = re.compile(
    r"\[?(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T _](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<f>\d{1,9}))?"
    r"(?:Z|[+-]\d\d:?\d\d)?(?P<par>(?: (?:DP|PP|TP|EP|CP)\d{1,4}){1,5}(?=\]))?\]?:?[ ]?"
)
# MPICH/Intel MPI ``-prepend-rank``: ``[155] `` before a line; taken as the rank only where NCCL's own
# ``host:pid:tid [dev]`` prefix follows (a bare ``[3] include/shm.h`` is NCCL's device, the host part lost)
_PREPEND = re.compile(r"\[(\d{1,6})\] (?=[A-Za-z0-9_.\-]{1,253}:\d{1,10}:\d{1,10} \[-?\d{1,4}\] )")
_GLOG = re.compile(
    r"\[(?P<sev>[IWEF])(?:(?P<md>\d{3,4}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\.(?P<f>\d{1,9}))?"
    r"(?: (?P<tid>\d+))? ?(?:(?P<file>[^\]\s]{1,200}:\d{1,6})\][ ]?"
    # (the prefix alone, a paste cut before its ``]``: ``[rank1]:[E528 08:54:10.938727404 ProcessGroupNCCL.cpp:629``,
    # the line's words gone)
    r"|(?P<cut>[^\]\s]{1,200}\.\w{1,4}:\d{0,6})\s*$)"
)
_PYLOG = re.compile(
    r"(?P<sev>[IWEF])(?P<md>\d{3,4}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\.(?P<f>\d{1,9}) "
    r"(?P<pid>\d+) (?P<file>[^\]]{1,300}:\d{1,6})\][ ]?"
)
# vLLM's logger (also SGLang's and LMCache's that copy it): ``ERROR 06-11 19:21:45 [worker_base.py:622] `` (0.6+),
# ``INFO 03-14 10:11:12 worker.py:123] `` (before); its date has no year
_VLLM_LOG = re.compile(
    r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:\.(?P<f>\d{1,6}))? \[?(?P<file>[\w.\-]{1,100}\.py):\d{1,6}\] "
)
# a host name a reporter replaced by a placeholder (``<cluster_name>``, ``<node-name>``, ``[hostname]``): no host
REDACTED_HOST = r"<[\w.\- ]{1,40}>|\[[\w.\- ]{1,40}\]"
_NCCL = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?)\] )?"
    # (a host the reporter redacted, ``<cluster_name>:919:1150 [0]``, ``[hostname]:…``: no host, the process still told
    # apart by its pid)
    r"(?:(?P<host>[A-Za-z0-9_.\-]{1,253})|" + REDACTED_HOST + r")"
    r":(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) \[(?P<dev>-?\d{1,4})\] "
    r"(?:(?P<file>[\w./\-]{1,200}):(?P<fline>\d{1,6}) (?:\((?P<func>[\w:~]{1,100})\) )?)?"
    # aws-ofi-nccl logs its function's full signature instead of a file (``int cm_req_handle_error_entry(
    # nccl_net_ofi_context_t*, fid_cq*, fi_cq_err_entry*, uint16_t):46 NCCL WARN NET/OFI …``)
    r"(?:[\w:~<>*& ]{1,120}\([^()\n]{0,300}\):\d{1,6} )?"
    # NCCL 2.2 and earlier printed the level without "NCCL " (``host:1:1 [0] include/socket.h:311 WARN ...``)
    r"(?:NCCL )?(?P<level>INFO|WARN|CALL|TRACE|ABORT|VERSION)\b ?"
)
# the same with the pid and tid taken out (a paste that redacts them, ``gpu-server320 [5] misc/socket.cc:46 NCCL WARN``):
# the host, at the start of the line only (a word before ``[N]`` elsewhere is no host)
_NCCL_NO_PID = re.compile(
    r"^(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?)\] )?"
    r"(?P<host>[A-Za-z][A-Za-z0-9_.\-]{0,252}) \[(?P<dev>-?\d{1,4})\] "
    # (NCCL 2.2 and earlier: the level without "NCCL ", after the source file)
    r"(?:(?P<file>[\w./\-]{1,200}\.(?:cc|cu|c|h|hpp|cpp)):(?P<fline>\d{1,6}) (?:NCCL )?|NCCL )(?P<level>INFO|WARN|ABORT)\b ?"
)
_NCCL_BARE = re.compile(
    r"(?:^|(?<=[\s\]:]))(?:\[(?P<dev>\d{1,4})\] )?"
    r"(?:(?P<file>[\w./\-]{1,200}\.(?:cc|cu|c|h|hpp|cpp)):(?P<fline>\d{1,6}) (?:NCCL )?|NCCL )"
    r"(?P<level>INFO|WARN|ABORT)\b ?"
)
# Python logging's level (and logger) before the message, in the formats scripts configure most: BASIC_FORMAT's
# ``ERROR:root:``, the cookbook's ``- root - ERROR - `` (after its stamp) and ``ERROR - ``, Hydra's ``[__main__][ERROR] -
# ``, a pipe's ``| ERROR | ``, a bracketed ``[ERROR] `` (DeepSpeed's with where it logged: ``[ERROR] [engine.py:12:step]
# ``), where an exception logged at ERROR or CRITICAL follows: its line is read from its start, as the parsers read
# an exception's (``ValueError: …``); other messages keep the level in their body, where the readings of their
# formats look for it (DeepSpeed's launcher's ``[ERROR] [launch.py:324:sigkill_handler]``, HCCL's ``[ERROR] HCCL(…)``)
_PY_LEVEL = re.compile(
    r"(?P<a>DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.<>\-]{1,200}:(?=\S)"
    r"|-? ?(?:[\w.<>\-]{1,100} - )?(?P<b>DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
    r"|\[[\w.<>\-]{1,100}\]\[(?P<c>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] - "
    r"|\| ?(?P<d>DEBUG|INFO|WARNING|ERROR|CRITICAL) *\| "
    r"|\[(?P<e>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] (?:\[[\w.\-]{1,200}:\d{1,6}:[\w<>]{1,100}\] )?"
)
_EXCEPTION_AHEAD = re.compile(r"(?:[a-z_][\w]{0,60}\.){0,8}[A-Z]\w{0,100}(?:Error|Exception|Interrupt|Exit)\b"
                              r"|Traceback \(most recent call last\)")
_SEVERITY = {"I": "info", "W": "warning", "E": "error", "F": "fatal"}
_LEVELS = {"DEBUG": "", "INFO": "info", "WARNING": "warning", "ERROR": "error", "CRITICAL": "fatal"}
# what pasting a log into an issue or a chat does to it: colour codes (or their remains once the ESC byte is
# lost), markdown fences, inline code, quotes and emphasis, and GitHub's autolinks of ``launch.py:318``
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_ANSI_REMAINS = re.compile(r"(?:^|(?<=\s))\[(?:\d{1,3};)*\d{1,3}m")
# where a bare reset is left too, every code lost its escape byte: ``[36m(RayWorker pid=1)[0m [rank0]:…``
_ANSI_BARE = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m")
_ANSI_CARET = re.compile(r"\^\[\[[0-9;?]{0,12}[A-Za-z]")
# rsyslog's escape of control characters (journald forwarded to syslog, a cloud's log agent): ESC as ``#033``
_ANSI_SYSLOG = re.compile(r"#033\[[0-9;?]{0,12}[A-Za-z]")
_FENCE = re.compile(r"^\s*(?:>\s?)*(?:```|~~~)[\w+-]*\s*")
_QUOTE = re.compile(r"^(?:>\s?)+")
# a markdown list item's mark (an issue's ``- RuntimeError: …`` among the reporter's bullets), not glibc's ``*** …``
_BULLET = re.compile(r"^[-*+] (?=[^\s*+-])")
# a markdown ordered list's mark before a line of the log (an issue's ``1. [W socket.cpp:663] …``, ``2. train.py: error:
# …`` in a numbered list of the errors seen): only where the rest starts as a log's line does
_ORDERED = re.compile(r"^\d{1,2}\. (?=\[[A-Z][\w ]|\[rank\d|\[\d{4}-\d\d|Traceback \(|[\w.\-]{1,80}\.py: error: |"
                      r"(?:[a-z_]\w*\.)*[A-Z]\w{0,60}(?:Error|Exception): )")
_AUTOLINK = re.compile(r"\[([^\[\]]{1,200})\]\((?:https?://|mailto:)[^()\s]{0,300}\)")
_NESTED_LINK = re.compile(r"\[\[([^\[\]]{1,200})\]\]")


def clean(text: str) -> str:
    """``text`` without what a paste adds: ANSI colour codes, markdown fences, quote marks, a list item's mark,
    backticks around the whole line, ``**`` emphasis and autolinked file names. Plain log lines come back unchanged."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "m" in text and "[" in text:
        text = _ANSI_REMAINS.sub("", text)
        if "^[[" in text:  # the escape byte written in caret notation (a terminal's `cat -v`, less, a copy of it)
            text = _ANSI_CARET.sub("", text)
        if "#033[" in text:
            text = _ANSI_SYSLOG.sub("", text)
        if "[0m" in text:
            text = _ANSI_BARE.sub("", text)
    if text[:1] in (">", "`", "~", " ", "-", "*", "+") or "```" in text:
        text = _FENCE.sub("", text)
        text = _QUOTE.sub("", text)
        text = _BULLET.sub("", text)
        if text.endswith("```"):
            text = text[:-3]
        stripped = text.strip()
        if len(stripped) > 2 and stripped[0] == "`" and stripped[-1] in "`.":
            text = stripped.strip("`.") if stripped.endswith("`.") else stripped.strip("`")
        elif stripped[:1] == "`" and stripped.count("`") == 1:  # an inline code span opened here, closed lines below
            text = stripped[1:]
    elif text.endswith("`") and text.count("`") == 1:  # … and closed at the end of a line below
        text = text[:-1]
    if "](" in text:
        for _ in range(4):
            changed = _AUTOLINK.sub(r"\1", text)
            changed = _NESTED_LINK.sub(r"[\1]", changed)
            if changed == text:
                break
            text = changed
    if text.startswith("**") or text.endswith("**"):
        text = text.strip("*")
    if text[:1].isdigit() and ". " in text[1:4]:
        text = _ORDERED.sub("", text)
    return text
_MAX_PREFIXES = 6


def _year_less(mo: int, d: int, h: int, mi: int, s: int, frac: str | None) -> float | None:
    """Seconds since an arbitrary year start: comparable for ordering on one clock (31-day months)."""
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 61):
        return None
    seconds = ((mo - 1) * 31 + (d - 1)) * 86400 + h * 3600 + mi * 60 + s
    if frac:
        seconds += int(frac) / 10 ** len(frac)
    return float(seconds)


def _month_day_time(g: dict[str, str]) -> float | None:
    """Year-less seconds of a c10/glog ``MMDD hh:mm:ss.ffffff`` stamp (the month may lack its leading 0)."""
    md = g["md"]
    return _year_less(int(md[:-2]), int(md[-2:]), int(g["h"]), int(g["mi"]), int(g["s"]), g["f"])


def parse_iso_time(text: str) -> tuple[float | None, str]:
    """Find an ISO-like ``YYYY-MM-DD[ T_]HH:MM:SS[.fff]`` anywhere in ``text``: (year-less seconds, text)."""
    match = _ISO.search(text)
    if not match:
        return None, ""
    g = match.groupdict()
    value = _year_less(int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"]), g["f"])
    return value, match.group(0).strip(" []") if value is not None else ""


@dataclass(frozen=True, slots=True)
class Prefix:
    """What the prefixes of one line said, and the rest of the line (``body``)."""

    origin: Origin
    body: str
    time: float | None = None
    time_text: str = ""
    severity: str = ""  # from a c10/glog prefix: info, warning, error, fatal
    glog_file: str = ""  # "ProcessGroupNCCL.cpp:607" from a c10 prefix


def split_prefix(text: str) -> Prefix:
    """Strip the known prefixes of ``text`` (see module docstring)."""
    rank = local_rank = pid = None
    host: str | None = None
    time: float | None = None
    time_text = severity = glog_file = ""
    ray_pid = stamped = False
    pos = start = 0  # start: where the prefixes that open a line may be (after a container's)
    compose = None
    match = _COMPOSE.match(text)
    if match:
        compose, pos = match["svc"] or match["named"], match.end()
        start = pos
    match = _XLA_DIST.match(text, pos)
    if match:
        host, pos = match["host"], match.end()
        time, time_text = parse_iso_time(match["ts"])
        start = pos
    for _ in range(_MAX_PREFIXES):
        match = _RANK.match(text, pos)
        if match:
            rank = int(match[1]) if rank is None else rank
            pos = match.end()
            continue
        match = _MPI.match(text, pos) or _PREPEND.match(text, pos) or _LIGHTNING.match(text, pos)
        if match:
            rank = int(match[1]) if rank is None else rank
            pos = match.end()
            continue
        match = _SAGEMAKER.match(text, pos)
        if match:
            rank = int(match["rank"]) if rank is None else rank
            host = match["host"] if host is None else host
            pos = match.end()
            continue
        match = _HOROVOD.match(text, pos)
        if match:
            rank = int(match["rank"]) if rank is None else rank
            month = _MONTHS.get(match["mon"] or "")
            if month and time is None:
                time = _year_less(month, int(match["d"]), int(match["h"]), int(match["mi"]), int(match["s"]), None)
                time_text = text[match.start():text.rfind("[", 0, match.start("rank"))] if time is not None else ""
            pos = match.end()
            continue
        match = _ROLE.match(text, pos)
        if match and match[1].lower() != "rank":
            local_rank = int(match[2]) if local_rank is None else local_rank
            pos = match.end()
            continue
        if pos == start:
            match = _CAT_N.match(text, pos) if pos == 0 else None
            if match:
                pos = start = match.end()
                continue
            match = _RANK_CUT.match(text, pos) if rank is None else None
            if match:
                rank = int(match[1])
                pos = match.end()
                continue
            match = _GREP.match(text, pos)
            if match:  # ``grep -H`` over the ranks' log files: each line names its file
                named = origin_from_path(match["file"])
                rank = named.rank if rank is None else rank
                local_rank = named.local_rank if local_rank is None else local_rank
                host = named.host if host is None else host
                pos = match.end()
                continue
            match = _SLURM.match(text, pos)
            if match:
                rank = int(match[1])
                pos = match.end()
                continue
            match = _SYSLOG.match(text, pos)
            if match and _MONTHS.get(match["mon"]):
                host = match["host"]
                time = _year_less(_MONTHS[match["mon"]], int(match["d"]), int(match["h"]), int(match["mi"]),
                                  int(match["s"]), None)
                time_text = text[:match.start("host") - 1] if time is not None else ""
                pos = match.end()
                continue
            match = _PYTEST.match(text, pos)
            if match:
                pos = match.end()
                continue
            match = _TORCHX.match(text, pos)
            if match:
                host = f"{match['role']}/{match['replica']}"
                local_rank = int(match["local"]) if match["local"] is not None and local_rank is None else local_rank
                pos = match.end()
                continue
            match = _BRACKET_HOST.match(text, pos)
            if match:
                host = match["host"]
                pos = match.end()
                continue
            match = _UCX.match(text, pos) or _OPAL.match(text, pos)
            if match:
                host, pid = match["host"], int(match["pid"])
                pos = match.end()
                continue
            match = _HYDRA.match(text, pos)
            if match:
                host = match["host"]
                pos = match.end()
                continue
            match = _PDSH.match(text, pos)
            if match and not _NOT_HOST.search(match["host"]) and not (stamped and not _STAMPED_HOST.match(match["host"])):
                host = match["host"]
                # Slurm's step daemon names itself after the node: "slurmstepd-gpu20-15: error: …"
                host = host[len("slurmstepd-"):] if host.startswith("slurmstepd-") and len(host) > 11 else host
                pos = match.end()
                continue
        match = _NVRX.match(text, pos)
        if match:
            severity = severity or _LEVELS[match["lvl"]]
            host = host or match["host"]
            rank = None if match["rank"] == "?" else int(match["rank"])  # (not its log file's launcher rank)
            local_rank = local_rank if match["local"] == "?" else int(match["local"])
            pos = match.end()
            continue
        match = _DETERMINED.match(text, pos)
        if match:  # (its level first, then its clock, then the container: the host that ran the process)
            severity = severity or {"warning": "warning", "error": "error", "critical": "fatal"}.get(match["lvl"], "")
            if time is None:
                time, time_text = parse_iso_time(match["ts"])
            host = host or match["cid"]
            pos = match.end()
            continue
        match = _LIBFABRIC.match(text, pos)
        if match:
            pid = pid or int(match["pid"])
            host = host or match["host"]
            severity = severity or ("warning" if match["lvl"] == "warn" else "")
            pos = match.end()
            continue
        match = _OLMO.match(text, pos) if stamped else None
        if match:
            severity = severity or _LEVELS[match["lvl"]]
            host = host or match["host"]
            local_rank = int(match["local"]) if local_rank is None else local_rank
            pos = match.end()
            continue
        match = _NEMO.match(text, pos)
        if match:
            g = match.groupdict()
            severity = severity or _NEMO_LEVELS[g["sev"]]
            value = _year_less(int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"]), None)
            if value is not None and time is None:
                time, time_text = value, f"{g['y']}-{g['mo']}-{g['d']} {g['h']}:{g['mi']}:{g['s']}"
            pos = match.end()
            continue
        match = _KUBECTL.match(text, pos)
        if match:
            host = host or match["pod"]
            pos = match.end()
            continue
        match = _RAY_DAEMON.match(text, pos) if text.startswith("(", pos) else None
        if match:
            host = host or match["ip"]
            pos = match.end()
            continue
        match = _RAY.match(text, pos)
        if match:  # nested actors, "(vLLMHttpServer pid=6840) (Worker pid=7181) ": the last one printed the line
            pid = int(match["pid"]) if pid is None or ray_pid else pid
            ray_pid = True
            host = host or match["ip"]
            tp = _VLLM_TP.match(match["actor"] or "")
            if match["rank"] is not None or tp:
                local_rank = int(match["rank"] if match["rank"] is not None else tp["tp"])  # type: ignore[index]
            pos = match.end()
            continue
        match = _ISO.match(text, pos)
        if match:
            g = match.groupdict()
            value = _year_less(int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"]), g["f"])
            if value is not None and time is None:
                time, time_text = value, match.group(0)[:match.start("par") - match.start()
                                                         if match["par"] else None].strip(" []")
            end = match.end()
            if pos == start and not stamped:  # a log pipeline's stamp (kubectl --timestamps, ts): the line after it
                stamped = True
                cri = _CRI.match(text, end)
                start = end = cri.end() if cri else end
                logged = _LOGURU.match(text, end)
                if logged:
                    severity = severity or _LEVELS.get(logged["lvl"], "")
                    start = end = logged.end()
                journal = None if logged or host else _ISO_SYSLOG.match(text, end)
                if journal:
                    host = journal["host"]
                    start = end = journal.end()
                elif text.startswith("\t", end) and not _OLMO.match(text, end):  # a tab after it (an export's
                    start = end = end + 1  # columns: ``2024-05-01T12:00:00.123+00:00\tValueError: …``)
            pos = end
            continue
        match = _VLLM_LOG.match(text, pos)
        if match:
            g = match.groupdict()
            severity = severity or _LEVELS[g["lvl"]]
            value = _year_less(int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"]), g["f"])
            if value is not None and time is None:
                time, time_text = value, text[match.start("mo"):match.end("f") if g["f"] else match.end("s")]
            pos = match.end()
            continue
        match = _GLOG.match(text, pos) or _PYLOG.match(text, pos)
        if match:
            g = match.groupdict()
            severity = severity or _SEVERITY[g["sev"]]
            glog_file = glog_file or g.get("file") or g.get("cut") or ""
            if g.get("pid") and int(g["pid"]) <= _PID_MAX:  # 2.x's elastic logs print the thread id there
                pid = int(g["pid"])
            if g["md"] and time is None:
                time = _month_day_time(g)
                if time is not None:
                    time_text = f"{g['md'][:-2]}-{g['md'][-2:]} {g['h']}:{g['mi']}:{g['s']}.{g['f']}"
            pos = match.end()
            continue
        break
    logged = _PY_LEVEL.match(text, pos)
    level = next((lvl for lvl in logged.groups() if lvl), "") if logged else ""
    if logged and level in ("ERROR", "CRITICAL") and _EXCEPTION_AHEAD.match(text, logged.end()):
        # (an exception logged at INFO or WARNING was handled: the program went on, no failure of its own)
        severity = severity or _LEVELS[level]
        pos = logged.end()
    return Prefix(
        origin=Origin(rank=rank, local_rank=local_rank, pid=pid, host=host or compose),
        body=text[pos:],
        time=time,
        time_text=time_text,
        severity=severity,
        glog_file=glog_file,
    )


@dataclass(frozen=True, slots=True)
class NcclPrefix:
    """NCCL's ``[ts ]host:pid:tid [dev] [file:line [(func)] ]NCCL LEVEL`` prefix and the message after it."""

    host: str | None
    pid: int | None
    tid: int | None
    device: int | None
    level: str
    message: str
    source_file: str = ""
    function: str = ""
    time: float | None = None
    time_text: str = ""


def split_nccl(body: str) -> NcclPrefix | None:
    """Parse NCCL's prefix anywhere in ``body`` (PyTorch or mpirun prefixes may come first).

    Pasted logs often lose part of it: ``[3] include/shm.h:28 NCCL WARN ...`` (no ``host:pid:tid``),
    ``misc/shmutils.cc:87 NCCL WARN ...`` or a bare ``NCCL WARN ...``; those give what they have."""
    match = _NCCL.search(body)
    if not match:
        redacted = _NCCL_NO_PID.match(body)
        if redacted:
            stamped, stamp = parse_iso_time(redacted["ts"]) if redacted["ts"] else (None, "")
            return NcclPrefix(
                host=redacted["host"], pid=None, tid=None, device=int(redacted["dev"]), level=redacted["level"],
                message=body[redacted.end():].strip(),
                source_file=f"{redacted['file']}:{redacted['fline']}" if redacted["file"] else "",
                time=stamped, time_text=stamp,
            )
        bare = _NCCL_BARE.search(body)
        if not bare:
            return None
        return NcclPrefix(
            host=None, pid=None, tid=None, device=int(bare["dev"]) if bare["dev"] else None, level=bare["level"],
            message=body[bare.end():].strip(),
            source_file=f"{bare['file']}:{bare['fline']}" if bare["file"] else "",
        )
    time: float | None = None
    time_text = ""
    if match["ts"]:
        time, time_text = parse_iso_time(match["ts"])
    return NcclPrefix(
        host=match["host"],
        pid=int(match["pid"]),
        tid=int(match["tid"]),
        device=int(match["dev"]),
        level=match["level"],
        message=body[match.end():].strip(),
        source_file=f"{match['file']}:{match['fline']}" if match["file"] else "",
        function=match["func"] or "",
        time=time,
        time_text=time_text,
    )


_PATH_RANK = (
    re.compile(r"(?:^|[^a-z])rank[_\-.]?(\d{1,6})(?!\d)", re.IGNORECASE),
    re.compile(r"^(?:nccl|comm_lib)_trace_rank_(\d{1,6})", re.IGNORECASE),
)
# a directory names a rank only by its own name (``logs/rank2/stdout.log``, ``rank_3-node1/``), not by a word inside a
# longer name (``run-without-rank2-fix/``: a description, not the writer)
_DIR_RANK = re.compile(r"^rank[_\-.]?(\d{1,6})(?:$|[_\-.])", re.IGNORECASE)
_PATH_ATTEMPT = re.compile(r"^attempt_\d+$")
_PATH_HOST = re.compile(
    r"^(?:host|node|worker|nid|gpu|compute|server|machine|trainer)[-_]?[A-Za-z]*\d+[A-Za-z0-9\-]*$",
    re.IGNORECASE,
)


def log_dir_attempt(path: str) -> tuple[str, int] | None:
    """For a file of torchrun's --log-dir, ``<dir>/<run_id>/attempt_<n>/<local_rank>/{stdout,stderr}.log``: the
    attempt's directory (one agent's workers) and the file's local rank; None for any other path."""
    parts = PurePath(path).parts
    if len(parts) >= 3 and _PATH_ATTEMPT.match(parts[-3]) and parts[-2].isdecimal():
        return str(PurePath(*parts[:-2])), int(parts[-2])
    return None


def origin_from_path(path: str) -> Origin:
    """Rank, local rank and host that a file's path names (see module docstring); empty when none."""
    parts = [part for part in PurePath(path).parts if part not in ("/", ".", "..")]
    if not parts:
        return Origin()
    rank = local_rank = None
    host = None
    name = parts[-1]
    stem = name.split(".")[0] if not name.startswith(".") else name
    for pattern in _PATH_RANK:
        match = pattern.search(name)
        if match:
            rank = int(match[1])
            break
    attempt = log_dir_attempt(path)
    if attempt is not None:
        local_rank = attempt[1]
    for part in reversed(parts[:-1]):
        if rank is None:
            match = _DIR_RANK.match(part)
            if match:
                rank = int(match[1])
        if host is None and _PATH_HOST.match(part):
            host = part
    if host is None:
        for piece in re.split(r"[._]", stem):
            if _PATH_HOST.match(piece) and not piece.lower().startswith("rank"):
                host = piece
                break
    return Origin(rank=rank, local_rank=local_rank, host=host)
