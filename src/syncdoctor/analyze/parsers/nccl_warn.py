"""NCCL WARN lines and NCCL errors surfaced by PyTorch, classified. Pure: no I/O.

WARN prefix: ``<host>:<pid>:<tid> [<dev>] <file>:<line> NCCL WARN <msg>``; since 2.26 with a leading
``[YYYY-MM-DD HH:MM:SS] `` timestamp, since 2.30.7 with ``(<func>) `` before ``NCCL WARN``; up to 2.25 an
empty line precedes it (ignored). Messages recognised:

* IB completion errors: ``NET/IB: Got completion from peer P with status=NAME(12) opcode=NAME(0) vendor_err=129
  … hca mlx5_0`` (2.29+), ``… status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) reqSize=N vendor_err=129 …`` (2.28.7-2.28.9),
  ``NET/IB: … with status=12 opcode=0 len=0 vendor err 129 (Recv) … hca mlx5_0`` (2.22-2.28.3), ``NET/IB : … with
  status=12 …`` (2.20-2.21), ``NET/IB : Got completion from peer P with error 12, opcode 1, len 0, vendor err 129
  (Send)`` (2.10-2.19), ``NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129`` (<= 2.9)
* IB asynchronous events, every wording (see ``_ASYNC``); ``GID table changed`` (2.28.3+)
* ``Call to ibv_modify_qp failed with 22 Invalid argument, … local GID index 3`` (GID), ``… with 110 …`` (rails)
* memlock: ``Call to ibv_reg_mr[_iova2] failed with error Cannot allocate memory``, ``Call to ibv_create_qp failed``,
  aws-ofi-nccl's ``NET/OFI Unable to register memory (type = 1) for device 0. RC: 12, Error: Cannot allocate memory``
* shm: ``failed to extend /dev/shm/nccl-XXXX to N bytes``, ``unlink shared memory /dev/shm/nccl-… failed``
* connect: ``connect to 10.0.0.2<43021> failed : Connection refused`` (also ``Net : Connect to …``,
  ``socketStartConnect: Connect to …``, ``… exceeded error retry count after N attempts``)
* closed: ``socketProgress: Connection closed by remote peer node2<43021>``, ``Net : Connection closed by
  remote peer …`` (no address up to 2.9), ``Call to recv from 10.0.0.2<43021> failed : Connection reset by peer``
  (``Call to recv failed : …`` up to 2.9; ``Call to send to … failed : Broken pipe``)
* ``Bootstrap : no socket interface found`` (bootstrap.cc), ``NET/Socket : no interface found``: no interface
  matches NCCL_SOCKET_IFNAME (or none is usable) on this host
* ``Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000`` (<= 2.29), ``Multiple Ranks are
  using the same GPU/Partition`` (2.30+)
* ``Cuda failure 217 'peer access is not supported between these two devices'``, ``failed to open CUDA IPC
  handle : 217 …`` (<= 2.7)
* PyTorch's ``Last error:`` line (2.x, NCCL >= 2.13's ncclGetLastError): the next line is NCCL's last WARN
  message without its prefix (``Bootstrap : no socket interface found``, ``Duplicate GPU detected : …``,
  ``socketProgressOpt: Call to recv from … failed : Connection reset by peer``), read as that WARN
  (:func:`follow`);
* PyTorch: ``NCCL error in: …ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for
  details), NCCL version 2.19.3``, ``ncclRemoteError: …``, ``remote process exited or there was a network error``
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, replace

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event
from syncdoctor.analyze.parsers.prefixes import split_nccl

__all__ = ["IB_STATUS", "KEYWORDS", "follow", "parse"]

KEYWORDS = ("NCCL WARN", " WARN ", "WARN Socket creation failed", "NCCL error", "ncclSystemError", "ncclRemoteError", "ncclInternalError", "neither AF_INET",
            "ncclInvalidUsage", "ncclUnhandledCudaError", "ncclInvalidArgument", "remote process exited", "unhandled system error", "unhandled cuda error",
            "both on CUDA device", "Duplicate GPU detected", "both attached to GPU device", "shared memory segment", "posix_fallocate", "failed to extend /dev/shm",
            "Unable to allocate shared memory", "Got completion", "completed with error", "Failed to CUDA calloc",
            "Failed to CUDA malloc", "captured in a graph", "in the same subnet as remote", "bootstrap_net_init",
            "interface found")
# NCCL refusing a CUDA graph capture its build or the driver cannot do (misc/strongstream.cc, 2.15+; ncclInvalidUsage)
_GRAPH_CAPTURE = "NCCL cannot be captured in a graph"

# ibv_wc_status values that matter here (nccl:src/include/ibvcore.h)
IB_STATUS = {
    4: "local protection error",
    5: "work request flushed",
    10: "remote access error",
    12: "transport retry counter exceeded",
    13: "RNR retry counter exceeded",
}

_IB = re.compile(
    # (a paste may elide the peer: ``Got completion ... status=IBV_WC_LOC_PROT_ERR(4)``)
    r"NET/IB\w*(?:/GIN)? ?: ?Got completion(?: from peer (?P<peer>\S+))?(?: with |\s*(?:\.\.\.|…)\s*(?:with )?)"
    r"(?:status=(?:(?P<sname>[^()=,]*?)\()?(?P<status>\d+)\)?|error (?P<error>\d+))"
    # the rest may be cut where a paste wrapped the line (``… with error 12, opcode 0, len`` / ``0, vendor err``)
    r"(?:[, ]+opcode[= ](?:(?P<oname>[^()=,]*?)\()?(?P<opcode>\d+)\)?"
    r"(?:[, ]+(?:len|reqSize)[= ](?P<len>\d+))?(?:[, ]+vendor[_ ]err[= ]?(?P<vendor>\d+))?)?"
)
_HCA = re.compile(r"\bhca (?P<hca>[\w.\-]+)")
# NCCL's allocator (alloc.h): ``Failed to CUDA calloc async 1920 bytes``, ``Failed to CUDA malloc 4194304 bytes``
_CUDA_ALLOC = re.compile(r"Failed to CUDA (?:calloc|malloc)(?: async)? \d+ bytes")
# Horovod's and torch 1.x's message of a failed NCCL call: ``ncclAllReduce failed: unhandled cuda error``
# (and PaddlePaddle 1.x's enforce of an NCCL call: ``what():  unhandled cuda error at [/…/paddle/fluid/platform/
# nccl_helper.h:70]``)
_NCCL_CALL_CUDA = re.compile(r"\bnccl\w+ failed: unhandled cuda error|\bunhandled cuda error at \[[^\]\n]{0,300}nccl")
_MODIFY_QP = re.compile(
    r"Call to ibv_modify_qp failed with (?:(?P<errno>\d+)(?: (?P<err>[^,]+))?|error (?P<err_only>[^,]+?)"
    r"(?: errno (?P<errno2>\d+))?(?:,|$))"
)
# errno names as strerror prints them, for messages that give the words only
ERRNO_OF_WORDS = {"Invalid argument": 22, "Connection timed out": 110, "Operation not permitted": 1,
                  "No such device": 19, "Cannot allocate memory": 12}
_GID_INDEX = re.compile(r"GID index (?P<gid>-?\d+)")
_ON_DEV = re.compile(r"on dev (?P<dev>[\w.\-]+(?::\d+)?)")
_MEMLOCK = re.compile(
    r"(?:Call to )?ibv_(?:reg_mr\w*|reg_dmabuf_mr|create_qp|create_cq|alloc_pd)\w* failed(?: with error (?P<err>.+))?"
    r"|Call to ibv_reg_mr\w*\s*$"  # the WARN cut by the paste right after the call's name: only a failure prints it
    # aws-ofi-nccl (EFA): NET/OFI Unable to register memory (type = 1) for device 0. RC: 12, Error: Cannot allocate memory
    r"|NET/OFI Unable to register memory.*?(?:Error: (?P<ofi_err>.+))?$"
)
# bootstrap.cc: ``Bootstrap Root : rank 1 of 8 ranks has already checked in`` (the rank numbers of that communicator)
_CHECKED_IN = re.compile(r"rank (?P<rank>\d+) of (?P<n>\d+) ranks has already checked in")
_SHM = re.compile(r"failed to extend (?P<path>/dev/shm/\S+) to (?P<bytes>\d+) bytes")
# older releases (include/shm.h): the call and the segment, without /dev/shm in the message
_SHM_OLD = re.compile(
    r"Call to posix_fallocate failed ?: ?(?P<err>.+)|Error while (?:creating|attaching to) shared memory segment "
    r"(?P<path>\S+)(?: \(size (?P<bytes>\d+)\))?|Unable to allocate shared memory \((?P<bytes2>\d+) bytes\)"
)
# ``NET/IB : Got async event : port error`` (<= 2.19), ``NET/IB : mlx5_2:1 Got async event : …`` (2.20-2.22),
# ``… async fatal event: …`` / ``… Got async error event: …`` (2.23+), ``… Got non-fatal async event: port
# error(10)`` (2.28.7+), ``NET/IB : mlx5_2:1 GID table changed`` (2.28.3+)
_ASYNC = re.compile(
    r"NET/IB ?: ?(?:(?P<dev>[\w.\-]+:\d+) )?(?:Got (?:non-fatal )?async (?:error )?event|async fatal event[^:]*?)"
    r" ?: ?(?P<event>[^,(]+?)\s*(?:\(\d+\))?\s*(?:,|$)"
    r"|NET/IB ?: ?(?:(?P<dev2>[\w.\-]+:\d+) )?(?P<gid>GID table changed)"
)
# init's check that every rank runs one release (2.23+): ``Mismatched NCCL version detected : rank 3 version 22703
# rank 0 version 22805`` (NCCL's version codes), and its check of the driver (2.13+): ``CUDA Driver version found is
# 11040. Minimum requirement is 12000``
_RANKS_VERSION = re.compile(r"Mismatched NCCL version detected : rank (?P<r1>\d+) version (?P<v1>\d+) rank (?P<r2>\d+) "
                            r"version (?P<v2>\d+)")
_DRIVER_TOO_OLD = re.compile(r"CUDA Driver version found is (?P<found>\d+)\. Minimum requirement is (?P<need>\d+)")


def _release(code: int) -> str:
    """NCCL's version code as its release: 22703 is 2.27.3 (the check came in 2.23, after the code's change in 2.9)."""
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


# NCCL 2.29+'s IB resiliency failing over from a NIC that failed under it: ``NET/IB: ncclIbResiliencyHandleDeviceFailure:
# Device 0 marked as failed. Initiating recovery? Yes (send comm=0x…`` (the function's name not in every release's
# message), and giving up when none is left: ``NET/IB: Fatal error. Detected 2 failed devices out of 2 devices on the
# send communicator``
_RESILIENCY = re.compile(r"(?:NET/IB: ?|ncclIbResiliencyHandleDeviceFailure: )Device (?P<dev>\d+) marked as failed"
                         r"|NET/IB: ?Fatal error\. Detected (?P<failed>\d+) failed devices? out of (?P<of>\d+)")
_DEVICE_DOWN = re.compile(
    r"Call to ibv_open_device failed|NET/IB ?: ?Unable to open device (?P<dev>\S+)|NET/IB ?: ?No device found|"
    r"Failed to open libibverbs"
)
_OLD_CONNECT = re.compile(r"Call to connect(?: timeout)? ?(?:failed)? ?: ?(?P<err>Connection refused|No route to host|"
                          r"Connection timed out|Network is unreachable)")
# the quote unclosed: a cut paste; RCCL's hipified checks say ``HIP failure``
_GPU = re.compile(r"(?:Cuda|HIP) failure:? (?:(?P<code>\d+) )?'(?P<msg>[^']*)(?:'|$)")
# the same with its words unquoted, as a paste or a note retypes it (``enqueue.cc:1556 NCCL WARN Cuda failure 2 out of
# memory``): quoted before it is read
_UNQUOTED_CUDA = re.compile(r"(?P<head>(?:Cuda|HIP) failure:? \d{1,4}) (?P<msg>[a-z][^'\n]{2,200}?)\s*$")
_SHM_UNLINK = re.compile(r"unlink shared memory (?P<path>/dev/shm/\S+) failed")
_CONNECT = re.compile(
    r"[Cc]onnect to (?P<peer>\S+?) (?:failed ?: ?(?P<err>.+)|returned (?P<err2>[^,]+?)(?:, exceeded error retry count"
    r"(?: after (?P<attempts>\d+) attempts)?|\s+errno\b|\s*$))"
    r"|[Cc]onnect returned (?P<err3>[^,]+), exceeded error retry count(?: \((?P<attempts2>\d+)\))?"
    r"|[Cc]onnect to (?P<peer2>\S+?) failed with error (?P<err4>.+)"
)
# ``socketStartConnect: exceeded retries (20000)`` / ``socketPollConnect: exceeded timeouts (100)`` (2.16-2.23)
_GAVE_UP = re.compile(r"socket(?:Start|Poll)Connect: exceeded (?P<what>retries|timeouts) \((?P<count>\d+)\)")
# ``socketPollConnect poll() returned 1, no POLLOUT events`` (2.2x): the connect's socket never became writable, the
# connection was not made (the destination dropped the SYN, or refused it)
_NO_POLLOUT = re.compile(r"socketPollConnect:? poll\(\) returned \d+, no POLLOUT events")
# RAS: ``NCCL version mismatch with remote peer 10.0.0.3<51234> (local: 2.27.7, remote 2.26.2)``
_PEER_VERSION = re.compile(r"NCCL version mismatch with remote peer (?P<peer>\S+) \(local: (?P<local>[\w.+]+), "
                           r"remote:? (?P<remote>[\w.+]+)\)")
# the proxy of this process could not reach another rank's (2.12+): ``Proxy Call to rank 0 failed (Connect)``
_PROXY_CALL = re.compile(r"Proxy Call to rank (?P<rank>\d+) failed \((?P<op>\w+)\)")
_RETRY_EXCEEDED = re.compile(r"exceeded (?:error )?retry count(?: after (?P<attempts>\d+) attempts)?")
_CLOSED = re.compile(r"Connection closed by remote peer(?: (?P<peer>\S+))?")
_RESET = re.compile(r"Call to (?:recv|send)(?: (?:from|to) (?P<peer>\S+))? failed ?: ?(?:Connection reset by peer|Broken pipe)")
_NO_IFACE = re.compile(r"(?P<where>Bootstrap|NET/Socket) ?: no (?:socket )?interface found")
# (the same message alone on its line, as a blog or an issue's text quotes it: ``Bootstrap: no socket interface found``)
_NO_IFACE_ALONE = re.compile(r"\W{0,4}" + _NO_IFACE.pattern + r"\W{0,4}$")
# NVSHMEM's UID bootstrap (a copy of NCCL's), without a WARN: ``…/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_init:160:
# No socket interface found`` (NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME matched nothing, or the address family has none)
_NVSHMEM_NO_IFACE = re.compile(r"bootstrap_net_init:\d{1,6}: No socket interface found")
# net socket transport (socket.cc / socket.h): ``Net : peer 10.0.0.2<12345> message truncated : receiving 1048576
# bytes instead of 65536``
# (NCCL 2.4 printed it without the peer; a paste may cut it after "truncated :")
_TRUNCATED = re.compile(r"(?:peer (?P<peer>\S+) )?message truncated(?: : receiving (?P<got>\d+) bytes instead of "
                        r"(?P<want>\d+))?")
# NCCL's IB transport finding the receiver's posted buffer smaller than what this rank sends: 2.12+'s ``NET/IB : req
# 0/1 tag 7 peer 10.0.0.2<49736> collective mismatch error, local size 1048576 remote size 524288`` (net_ib.cc),
# 2.4-2.11's ``NET/IB : collective mismatch error local size 1048576 remote 524288 addr … rkey … seq …/…``
_IB_MISMATCH = re.compile(r"(?:peer (?P<peer>\S+) )?collective mismatch error,? local size (?P<local>\d+) remote"
                          r"(?: size)? (?P<remote>-?\d+)")
# NCCL 2.4-2.7's argument check across ranks (init.cc): ``Mismatched collective detected, please check your
# collective calls at and around rank 39. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL …``
_MISMATCHED = re.compile(r"Mismatched collective detected(?:.*?at and around rank (?P<rank>\d+))?")
# also without its WARN prefix and first words, as quoted in notes and summaries
# the device is optional after NCCL's own words: a paste cut inside the line (``rank 5 and rank 0 b``) still names the pair
_DUP = re.compile(r"(?P<words>Duplicate GPU detected : )?\brank (?P<a>\d+) and rank (?P<b>\d+)\b"
                  r"(?: both on CUDA device (?P<dev>\w+))?")


# PyTorch's own check before NCCL's (pytorch/pytorch#68666): ``Duplicated GPU device is not allowed by NCCL. Rank [0]
# and rank [8] both attached to GPU device 0 on the same host learngpu001. Most likely your world_size is larger …``
_ATTACHED = re.compile(r"\bRank \[(?P<a>\d{1,7})\] and rank \[(?P<b>\d{1,7})\] both attached to GPU device (?P<dev>\d{1,3})"
                       r"(?: on the same host (?P<host>[\w\-]+(?:\.[\w\-]+)*))?", re.I)


def _duplicate(match: re.Match[str] | None) -> tuple[list[int], str | None] | None:
    """The two ranks and the device of a duplicate-GPU line, when it is one (NCCL's words or the device)."""
    if match is None or not (match["words"] or match["dev"]):
        return None
    return [int(match["a"]), int(match["b"])], match["dev"]
_CUDA = re.compile(r"(?:Cuda failure|failed to open CUDA IPC handle :) ?(?P<code>\d+) '?(?P<msg>[^']*)'?")
# the P2P transport could not share a buffer with a peer GPU of its host through CUDA (or HIP) IPC: up to 2.7,
# ``rank 1 failed to get CUDA IPC handle to device 0 : 11 invalid argument`` (the peer's GPU; ``device 0(=1b000)``
# with its bus id since 2.4.2), since 2.8 ``cudaIpcGetMemHandle failed : …``, RCCL's ``hipIpcGetMemHandle failed :
# invalid argument``; 217 is read by _CUDA below
_IPC = re.compile(r"failed to (?:get|open) CUDA IPC handle(?: to device (?P<peer>\d+)(?:\(=\w+\))?)? ?: ?(?P<code>\d+)? ?"
                  r"(?P<msg>[^\n]*)|(?:cuda|hip)Ipc(?:Get|Open)MemHandle failed ?:? ?(?P<msg2>[^\n]*)")
# the source files of NCCL's shared-memory transport, whose CUDA calls register the /dev/shm segment
_SHM_FILE = re.compile(r"\bshm(?:utils)?\.(?:h|cc?)\b:|transport/shm")
_TORCH_NCCL = re.compile(
    r"NCCL [Ee]rror(?: in: (?P<where>\S+?),?|(?: \d+)?:) (?P<error>unhandled system error|remote process exited or there was a network "
    r"error|internal error[^,(]*|invalid usage[^,(]*|unhandled cuda error[^,(]*|[^,(]+)"
)
# a program's check of an NCCL call in its own words, the place and NCCL's string quoted (TensorRT-LLM's plugins:
# ``Failed, NCCL error /code/tensorrt_llm/cpp/tensorrt_llm/plugins/common/plugin.cpp:86 'internal error - please report
# this issue to the NCCL developers'``)
_PLUGIN_NCCL = re.compile(r"\bNCCL error (?P<where>/\S{1,300}?:\d{1,6}) '(?P<error>[^'\n]{3,160})'")
_NCCL_CODE = re.compile(r"\b(?P<code>nccl(?:SystemError|RemoteError|InternalError|InvalidUsage|UnhandledCudaError|"
                        r"InvalidArgument))\b")
_NCCL_VERSION = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)")
_NO_FAMILY = re.compile(r"address\s+with family \d+ is neither AF_INET")
# NCCL <= 2.3 (include/socket.h): no interface was found, so the address family stayed unset and socket() failed
# NCCL's socket code (and the bootstraps derived from it: RCCL, AWS Neuron's) finding no local interface on the
# subnet of the address a peer sent: ``Net : No interface found in the same subnet as remote address
# fe80::1461:22ff:fe33:b471<45015>`` (a link-local address the peer advertised, reachable on its own link only)
NO_SUBNET = re.compile(r"No interface found in the same subnet as remote address (?P<addr>[0-9A-Za-z.:%\[\]-]{2,64}?)"
                       r"(?:<(?P<port>\d{1,5})>)?\s*$")
_NO_FAMILY_OLD = re.compile(r"Socket creation failed ?: ?Address family not supported")


def _peer(text: str | None) -> dict[str, object]:
    if not text:
        return {}
    addr, _, port = text.partition("<")
    if "..." in addr or "*" in addr or "x.x" in addr.lower():
        return {}  # masked before pasting (172....<33759>): no address to tie it to
    return {"peer_addr": addr, "peer_port": int(port.rstrip(">,")) if port.rstrip(">,").isdecimal() else None}


# the proxy thread of a process failing a request (2.12+): ``[Proxy Service 93] Failed to execute operation Setup
# from rank 93, retcode 1``: the number after "Proxy Service" is its own process's rank (the top parent
# communicator's since 2.18, the communicator's before)
_PROXY_SERVICE = re.compile(r"\[Proxy Service (?P<rank>\d{1,7})\] Failed to execute operation")


def _proxy_call(line: Line, match: re.Match[str], origin: Origin | None) -> Event:
    return make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
        "error": f"Proxy Call to rank {match['rank']} failed ({match['op']})", "peer_rank": int(match["rank"])})


# aws-ofi-nccl's completion error (libfabric): ``NET/OFI Request 0x7f14cc5b60c0 completed with error. RC: 113. Error: 2
# (UNDELIVERABLE)``; an errno of the network (no route, refused, timed out, unreachable) is a peer it cannot reach
_OFI_COMPLETION = re.compile(r"NET/OFI Request \S+ completed with error\. RC: (?P<rc>-?\d+)\. Error: (?P<err>\d+)"
                             r"(?: \((?P<name>\w+)\))?")
_NETWORK_ERRNO = frozenset((errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.ETIMEDOUT, errno.ENETUNREACH,
                            errno.ECONNRESET))


def _ofi_unreachable(line: Line, message: str, origin: Origin | None) -> list[Event]:
    match = _OFI_COMPLETION.search(message)
    code = abs(int(match["rc"])) if match else None
    if match is None or code not in _NETWORK_ERRNO:
        return []
    return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
        "error": f"{os.strerror(code)} (libfabric {match['name'] or 'error ' + match['err']})", "transport": "ofi"})]


def _warn(line: Line, message: str, origin: Origin | None, level: str) -> list[Event]:
    unreachable = _ofi_unreachable(line, message, origin)
    if unreachable:
        return unreachable
    match = _IB.search(message)
    if match:
        status = int(match["status"] or match["error"])
        hca = _HCA.search(message)
        return [make_event(Kind.IB_COMPLETION_ERROR, line, origin=origin, data={
            "status": status, "status_text": IB_STATUS.get(status, (match["sname"] or "").strip()),
            "opcode": int(match["opcode"]) if match["opcode"] else None,
            "vendor_err": int(match["vendor"]) if match["vendor"] else None,
            "hca": hca["hca"] if hca else None, **_peer(match["peer"])})]
    match = _ASYNC.search(message)
    if match:
        event = "GID table change" if match["gid"] else match["event"].strip()
        return [make_event(Kind.IB_ASYNC_EVENT, line, origin=origin, data={
            "event": event, "dev": match["dev"] or match["dev2"], "fatal": "fatal event" in message})]
    match = _RESILIENCY.search(message)
    if match:
        event = ("device marked as failed" if match["dev"] is not None else
                 f"{match['failed']} of {match['of']} NICs marked as failed")
        return [make_event(Kind.IB_ASYNC_EVENT, line, origin=origin, data={
            "event": event, "dev": match["dev"], "fatal": True, "source": "resiliency"})]
    match = _MODIFY_QP.search(message)
    if match:
        gid = _GID_INDEX.search(message)
        dev = _ON_DEV.search(message)
        text = (match["err"] or match["err_only"] or "").strip()
        return [make_event(Kind.IB_MODIFY_QP, line, origin=origin, data={
            "errno": int(match["errno"] or match["errno2"]) if (match["errno"] or match["errno2"]) else ERRNO_OF_WORDS.get(text),
            "error": text,
            "gid_index": int(gid["gid"]) if gid else None, "dev": dev["dev"] if dev else None})]
    match = _MEMLOCK.search(message)
    err = match and (match["err"] or match["ofi_err"])
    if match and (err is None or "allocate memory" in err or "ENOMEM" in err):
        return [make_event(Kind.MEMLOCK_FAILURE, line, origin=origin, data={"call": match.group(0)[:120]})]
    match = _SHM.search(message) or _SHM_UNLINK.search(message)
    if match:
        data: dict[str, object] = {"path": match["path"], "unlink": "unlink" in match.group(0)}
        if "bytes" in match.groupdict():
            data["bytes"] = int(match["bytes"])
        return [make_event(Kind.SHM_FAILURE, line, origin=origin, data=data)]
    match = _SHM_OLD.search(message)
    if match:
        size = match["bytes"] or match["bytes2"]
        return [make_event(Kind.SHM_FAILURE, line, origin=origin, data={
            "path": match["path"], "unlink": False, "error": (match["err"] or "").strip()[:120],
            **({"bytes": int(size)} if size else {})})]
    match = _DEVICE_DOWN.search(message)
    if match:
        return [make_event(Kind.IB_DEVICE_UNAVAILABLE, line, origin=origin, data={
            "message": message[:200], "dev": match["dev"]})]
    if _NO_FAMILY_OLD.search(message):
        return [make_event(Kind.INTERFACE_MISSING, line, origin=origin, data={
            "ifname": None, "transport": "nccl", "where": "socket", "message": message[:300]})]
    match = _NO_IFACE.search(message)
    if match:
        return [make_event(Kind.INTERFACE_MISSING, line, origin=origin, data={
            "ifname": None, "transport": "nccl", "where": match["where"], "message": message[:300]})]
    match = _TRUNCATED.search(message)
    if match:  # the peer sent more than this rank's collective expected: the ranks ran different collectives
        sizes = {"received_bytes": int(match["got"]), "expected_bytes": int(match["want"])} if match["got"] else {}
        return [make_event(Kind.COLLECTIVE_MISMATCH, line, origin=origin, data={
            "source": "nccl-truncated", **sizes, "sides": [], **_peer(match["peer"])})]
    match = _IB_MISMATCH.search(message)
    if match:  # this rank sends more than its peer's collective posted: the ranks ran different collectives
        return [make_event(Kind.COLLECTIVE_MISMATCH, line, origin=origin, data={
            "source": "nccl-ib-size", "sent_bytes": int(match["local"]), "posted_bytes": int(match["remote"]),
            "sides": [], **_peer(match["peer"])})]
    if "Call to bind failed" in message and "in use" in message:  # NCCL's own listening socket (socket.cc)
        return [make_event(Kind.STORE_ERROR, line, origin=origin, data={
            "what": "listen", "source": "nccl-bind", "error": "Address already in use"})]
    match = _MISMATCHED.search(message)
    if match:
        return [make_event(Kind.COLLECTIVE_MISMATCH, line, origin=origin, data={
            "source": "nccl-check", "sides": [],
            **({"near_rank": int(match["rank"])} if match["rank"] else {})})]
    pair = _duplicate(_DUP.search(message))
    if pair:
        return [make_event(Kind.DUPLICATE_GPU, line, origin=origin, data={
            "ranks": pair[0], "device": pair[1]})]
    match = _CHECKED_IN.search(message)
    if match:  # the bootstrap root heard from one rank twice: two processes were given that rank
        return [make_event(Kind.PROCESS_MAP, line, origin=origin, data={
            "source": "nccl-bootstrap", "global_rank": int(match["rank"]), "world_size": int(match["n"]),
            "twice": True})]
    if "Multiple Ranks are using the same GPU" in message:
        return [make_event(Kind.DUPLICATE_GPU, line, origin=origin, data={"ranks": []})]
    match = _IPC.search(message)
    if match and match["peer"] is not None and origin is not None and origin.device == int(match["peer"]):
        # its peer's GPU is its own: two processes of the host on one device (NCCL 2.1 had no duplicate check)
        return [make_event(Kind.DUPLICATE_GPU, line, origin=origin, data={
            "ranks": [], "device": match["peer"], "source": "ipc-handle"})]
    if match and not (match["code"] == "217" or "peer access" in message):
        return [make_event(Kind.PEER_ACCESS, line, origin=origin, data={
            "cuda_error": int(match["code"]) if match["code"] else None,
            "message": (match["msg"] or match["msg2"] or "").strip()[:160], "source": "p2p-transport"})]
    match = _CUDA.search(message)
    if match and (match["code"] == "217" or "peer access" in message):
        return [make_event(Kind.PEER_ACCESS, line, origin=origin, data={
            "cuda_error": int(match["code"]), "message": match["msg"].strip()})]
    if match and (match["code"] == "711" or "peer mapping resources exhausted" in message):
        # cudaErrorTooManyPeers: one GPU asked to map more peers than CUDA allows (8 on most), a process driving more
        # GPUs than that (nccl-tests -g 10), no fault of a GPU
        return [make_event(Kind.PEER_ACCESS, line, origin=origin, data={
            "cuda_error": 711, "message": match["msg"].strip()[:160], "source": "too-many-peers"})]
    match = _GPU.search(_UNQUOTED_CUDA.sub(r"\g<head> '\g<msg>'", message))
    if (match and "out of memory" in match["msg"]) or _CUDA_ALLOC.search(message):
        # NCCL could not allocate its buffers: the GPU's memory is full (``Failed to CUDA calloc async 1920 bytes``:
        # its allocator's own words, the CUDA error on the line before it when the log has it)
        return [make_event(Kind.CUDA_OOM, line, origin=origin, data={"tried": None, "gpu": None, "source": "nccl"})]
    where = line.body.split("WARN", 1)[0]
    if match and _SHM_FILE.search(where):
        # a CUDA call of NCCL's shared-memory transport (cudaHostRegister of the /dev/shm segment) failed: the
        # segment, not the GPU (NCCL 2.4's shm.h:42 'invalid argument', a too small or unmappable /dev/shm)
        return [make_event(Kind.SHM_FAILURE, line, origin=origin, data={
            "path": None, "unlink": False, "error": f"Cuda failure '{match['msg'].strip()[:100]}'", "cuda": True})]
    if match and "transport/p2p.cc" in where:
        # a CUDA call of NCCL's P2P transport setup (the IPC handle of a peer's buffer, cudaDeviceEnablePeerAccess)
        # failed: the path between the two GPUs, not a fault of either (RCCL's hipified p2p.cc reads the same)
        return [make_event(Kind.PEER_ACCESS, line, origin=origin, data={
            "cuda_error": int(match["code"]) if match["code"] else None, "message": match["msg"].strip()[:160],
            "source": "p2p-transport"})]
    if match:
        return [make_event(Kind.GPU_ERROR, line, origin=origin, data={
            "cuda_error": int(match["code"]) if match["code"] else None, "message": match["msg"].strip()[:160],
            "source": "nccl"})]
    match = _CLOSED.search(message) or _RESET.search(message)
    if match:
        return [make_event(Kind.PEER_CLOSED, line, origin=origin, data={
            "transport": "nccl", "how": "reset" if "reset" in match.group(0) or "Broken pipe" in match.group(0)
            else "closed", **_peer(match["peer"])})]
    match = _OLD_CONNECT.search(message)
    if match:
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={"error": match["err"]})]
    match = _PROXY_CALL.search(message)
    if match:
        return [_proxy_call(line, match, origin)]
    match = _GAVE_UP.search(message)
    if match:  # 2.16-2.23: the connect kept failing (refused or timing out) until NCCL's retries ran out
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
            "error": f"connect timed out (exceeded {match['what']} {match['count']})", "attempts": int(match["count"])})]
    if _NO_POLLOUT.search(message):
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
            "error": "connect timed out (the socket never became writable: no POLLOUT)"})]
    match = _RANKS_VERSION.search(message)
    if match:  # init's check of every rank's NCCL (2.x): two ranks' releases, as NCCL's version codes
        return [make_event(Kind.NCCL_VERSION, line, origin=origin, data={
            "version": _release(int(match["v1"])), "cuda": None, "place": f"rank {match['r1']}",
            "peer_version": _release(int(match["v2"])), "peer_addr": f"rank {match['r2']}"})]
    match = _DRIVER_TOO_OLD.search(message)
    if match:  # NCCL's own check of the CUDA driver: read with the other CUDA software that does not fit
        return [make_event(Kind.GPU_ERROR, line, origin=origin, data={
            "message": f"CUDA driver version is insufficient for this NCCL (driver {match['found']}, NCCL needs "
                       f"{match['need']})", "hardware": False, "source": "nccl"})]
    match = _PEER_VERSION.search(message)
    if match:  # RAS (2.24+): this process and the peer run different NCCL releases
        peer = _peer(match["peer"])
        return [make_event(Kind.NCCL_VERSION, line, origin=origin, data={
            "version": match["local"], "cuda": None, "peer_version": match["remote"],
            "peer_addr": str(peer.get("peer_addr") or match["peer"])})]
    match = _CONNECT.search(message)
    if match:
        retries = _RETRY_EXCEEDED.search(message)
        attempts = (retries["attempts"] if retries else None) or match["attempts2"]
        return [make_event(Kind.NCCL_CONNECT_FAILED, line, origin=origin, data={
            "error": (match["err"] or match["err2"] or match["err3"] or match["err4"] or "").strip()[:120],
            "attempts": int(attempts) if attempts else None, **_peer(match["peer"] or match["peer2"])})]
    if _NO_FAMILY.search(message):  # the WARN itself (2.8+), not only PyTorch's echo of it
        return [make_event(Kind.INTERFACE_MISSING, line, origin=origin, data={
            "ifname": None, "transport": "nccl", "where": "socket", "message": message[:300]})]
    if level not in ("WARN", "LAST"):  # LAST: PyTorch's echo of NCCL's last WARN after its 'Last error:'
        return []
    return [make_event(Kind.NCCL_WARN, line, origin=origin, data={"message": message[:300]})]


def parse(line: Line) -> list[Event]:
    body = line.body
    prefix = split_nccl(body)
    if prefix is not None and prefix.level == "WARN":
        served = _PROXY_SERVICE.match(prefix.message)
        # the proxy thread names its own process's rank (2.12+): the rank of every line of that host and pid
        origin = Origin(host=prefix.host, pid=prefix.pid, device=prefix.device,
                        rank=int(served["rank"]) if served and prefix.host and prefix.pid is not None else None)
        return [event if prefix.time is None else _with_time(event, prefix.time, prefix.time_text)
                for event in _warn(line, prefix.message, origin, "WARN")]
    if prefix is not None:
        return []
    pair = _duplicate(_DUP.search(body))
    if pair:
        return [make_event(Kind.DUPLICATE_GPU, line, data={
            "ranks": pair[0], "device": pair[1]})]
    attached = _ATTACHED.search(body) if "both attached to GPU device" in body else None
    if attached:
        return [make_event(Kind.DUPLICATE_GPU, line, origin=replace(line.origin, host=attached["host"] or line.origin.host),
                           data={"ranks": sorted({int(attached["a"]), int(attached["b"])}), "device": attached["dev"],
                                 "source": "pytorch-check"})]
    if ("Got completion" in body and _IB.search(body)) or _NO_FAMILY_OLD.search(body) or \
            ("same subnet as remote" in body and NO_SUBNET.search(body)):  # copied without its prefix
        return _warn(line, body, Origin(), "WARN")
    unreachable = _ofi_unreachable(line, body, None)  # the plugin's WARN repeated by 'Last error:'
    if unreachable:
        return unreachable
    if _SHM.search(body) or _SHM_OLD.search(body) or _CUDA_ALLOC.search(body) or _GRAPH_CAPTURE in body:
        return _warn(line, body, Origin(), "WARN")  # NCCL's WARN repeated by 'Last error:' (often on its own line)
    if "interface found" in body and _NO_IFACE_ALONE.match(body):  # NCCL's WARN message copied without its prefix
        return _warn(line, body.strip(), Origin(), "WARN")
    if "bootstrap_net_init" in body and _NVSHMEM_NO_IFACE.search(body):  # NVSHMEM's copy of NCCL's bootstrap
        return [make_event(Kind.INTERFACE_MISSING, line, data={
            "ifname": None, "transport": "nvshmem", "where": "Bootstrap", "message": body.strip()[:300]})]
    if _NO_FAMILY.search(body):  # 2.27 'Last error:': NCCL_SOCKET_IFNAME matched nothing, the address stayed empty
        return [make_event(Kind.INTERFACE_MISSING, line, data={
            "ifname": None, "transport": "nccl", "where": "socket", "message": body.strip()[:300]})]
    match = _TORCH_NCCL.search(body) or (_PLUGIN_NCCL.search(body) if "NCCL error " in body else None)
    code = _NCCL_CODE.search(body)
    cuda = _NCCL_CALL_CUDA.search(body)
    if match or code or cuda or "remote process exited" in body or "unhandled system error" in body:
        version = _NCCL_VERSION.search(body)
        error = match["error"].strip() if match else (code["code"] if code else "unhandled system error"
                                                       if "unhandled system error" in body else "unhandled cuda error"
                                                       if cuda else "remote process exited")
        events = [make_event(Kind.NCCL_ERROR, line, data={
            "error": error[:120], "code": code["code"] if code else None,
            "version": version["version"] if version else None})]
        proxy = _PROXY_CALL.search(body)
        if proxy:
            events.append(_proxy_call(line, proxy, None))
        if "unhandled cuda error" in body or "UnhandledCudaError" in body:
            # a CUDA call inside NCCL failed: the GPU or its driver, not the network
            events.append(make_event(Kind.GPU_ERROR, line, data={
                "message": "a CUDA call inside NCCL failed (ncclUnhandledCudaError)", "hardware": False,
                "source": "nccl"}))
        return events
    return []


# (also ``last error:`` where a reporter retyped it; XLA's and JAX's words for the same: ``Last NCCL warning(error) log
# entry (may be unrelated) 'Bootstrap : no socket interface found'``, the message quoted)
_LAST_ERROR = re.compile(r"(?:^|[\s:])(?:[Ll]ast error:|Last NCCL warning\(error\)(?: log entry \(may be unrelated\))?:?)"
                         r"\s*(?P<rest>.*)$")


@dataclass
class LastErrorFollower:
    """PyTorch's ``Last error:`` then NCCL's last WARN message on the next line (or the same one)."""

    head: Line
    max_lines: int = 2
    message: Line | None = None

    def feed(self, line: Line) -> bool:
        if not line.body.strip():
            return True  # a blank line between (some releases)
        self.message = line
        return False

    def finish(self) -> list[Event]:
        line = self.message
        if line is None:
            return []
        text = line.body.strip().strip("`_*'").strip()
        if not text or split_nccl(text) is not None or text.startswith(("Exception raised", "Traceback")):
            return []
        return [replace(event, data={**event.data, "last_error": True}) for event in _warn(line, text, None, "LAST")]


def follow(line: Line) -> LastErrorFollower | None:
    match = _LAST_ERROR.search(line.body)
    if match is None:
        return None
    if match["rest"].strip():  # the message on the same line: read at once
        follower = LastErrorFollower(line)
        follower.message = replace(line, body=match["rest"])
        follower.max_lines = 0
        return follower
    return LastErrorFollower(line)


def _with_time(event: Event, time: float, time_text: str) -> Event:
    return replace(event, time=time, time_text=time_text)
