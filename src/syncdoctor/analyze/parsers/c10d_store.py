"""c10d store (TCPStore) failures: waits that timed out, sockets that could not reach the store. Pure.

* ``torch.distributed.DistStoreError: wait timeout after 5000ms, keys: /default_pg/0//cpu//0/2``: a rank
  waited for keys another rank never wrote (here gloo's address of rank 2: the last path element).
* ``Timed out initializing process group in store based barrier on rank 3, for key: store_based_barrier_key:1
  (world_size=4, num_workers_joined=3, timeout=0:30:00)`` (``on rank: 7`` and ``worker_count=4`` before 1.12).
* ``DistStoreError: Timed out after 601 seconds waiting for clients. 1/4 clients joined.`` (the TCPStore
  server's wait for its clients, 2.x); ``RendezvousTimeoutError`` / ``RendezvousConnectionError`` (torchrun).
* ``[1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0',
  but store->get('0') got error: Socket Timeout`` (1.13-2.x; the error may be ``wait timeout after …``): NCCL's
  communicator is created at a group's first collective, and rank 1 waited for rank 0 to publish its id. The
  bracketed numbers are ranks in that group (the global ones for the default group).
* ``[c10d] The hostname of the client socket cannot be retrieved. err=-3``: a reverse lookup of a connection's address
  that failed (a warning: c10d logs the address instead);
* ``[c10d] The IPv6 network addresses of (/root/x.bashrc, 45458) cannot be retrieved (gai error: -3 - …)``:
  a store address that cannot be a host name (a MASTER_ADDR set from the wrong variable); the same warning
  for a real host name is usually harmless (no IPv6): a ``store_name_unresolved`` event, which no rule reads
  unless nothing else is there to read (the fallback's lead). ``The IPv4 network addresses of (node-0, 29500)
  cannot be retrieved``: the name does not resolve at all (a store connect error).
* ``[c10d] waitForInput: socket SocketImpl(…) timed out after 5000ms``, ``The client socket has timed out after
  1800000ms while trying to connect to (10.0.0.1, 29500).``, ``The client socket has failed to connect to
  [node0]:29500 (errno: 111 - Connection refused).``, ``The connection to the C10d store has failed.``
* ``The server socket has failed to listen on any local network address. The server socket has failed to bind to
  [::]:29500 (errno: 98 - Address already in use).`` (1.11-2.x; ``RuntimeError: Address already in use`` before):
  the store's port is taken on that host, by another job or a leftover process of an earlier run.
* ``The server socket on [::ffff:10.4.6.125]:63617 has timed out, will retry.`` (2.2+, c10d's socket.cpp): a client's
  connect to the store timed out and is tried again (repeated for minutes: an address that leads nowhere, a VPN's
  or a RoCE interface's that is gone); ``host not found: Name or service not known`` (c10d's tcputils before 1.13,
  raised as ValueError by the store's connect): the store's host name does not resolve; so does a job script's
  own look-up of it, ``nslookup: can't resolve 'master-0': Name does not resolve`` (busybox; ``(null)``: the
  variable looked up was empty), ``** server can't find master-0: NXDOMAIN`` (bind), ``ping: master-0: Name or
  service not known``.
* ``ValueError: Error initializing torch.distributed using tcp:// rendezvous: port number missing``
  (rendezvous.py, every release), ``Port could not be cast to integer value as '…'`` (urllib, from a ``tcp://``
  init_method whose port is not a number): the store's address is malformed. (env://'s ``environment variable
  MASTER_ADDR expected, but not set`` is no store event: a variable the launcher sets is missing, the script started
  without its launcher, which rules.phrases reads.)
* where the store is, as a paste may show it next to the failure: ``MASTER_ADDR=node01`` (an environment dump, a
  script's echo), torchrun's ``--master_addr=10.0.0.1`` / ``--rdzv_endpoint=node01:29400`` (the command line),
  torchelastic's ``Rank 1 will conenct to TCPStore server at pod-7:47279``: a ``store_endpoint``, the store's
  host for a failure that does not name it (a host name that does not resolve).
* gloo's ``[…/pair.cc:176] bind: Address already in use`` (its own socket: ports run out with hundreds of ranks on
  a host) and Accelerate's ``Tried to launch distributed communication on port `29500`, but another process is
  utilizing it`` (its check of the store's port): a port in use.
* ``torch.distributed.DistNetworkError: Connection reset by peer`` (also ``Broken pipe``, ``failed to recv, got 0
  bytes``): a store client lost the store, whose process (rank 0, or torchrun's agent) went away.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event, masked
from syncdoctor.analyze.parsers.gloo import is_loopback

__all__ = ["KEYWORDS", "parse"]

KEYWORDS = ("Error: Tried to launch distributed communication", "MASTER_ADDR", "aster_addr", "aster-addr", "rdzv", "TCPStore server at",
            "main_process_ip", "main-process-ip",
            "has timed out, will retry", "host not found: ", "Error initializing torch.distributed using",
            "Error: Port could not be cast", "Error: invalid literal for int()", "network addresses of", "ving ncclUniqueId", "ving xcclUniqueId", "wait timeout after", "Wait timeout for name", "for name(s) ", "Wait timeout for key", "Wait timeout after ", "waitForInput", "client socket", "store based barrier", "C10d store",
            "clients joined", "Rendezvous", "Address already in use", "rror: on ", "EADDRINUSE", "specific port[", "rdma init failed", "DistNetworkError", "got 0 bytes",
            "raised from doWait", "connect() timed out", "Failed to connect to client mesh master",
            "Failed to retrieve mesh configuration", "Check failed: impl_->channel->", "Failed to get list of machines",
            "TCP client failed to connect", "reset by peer", "can't resolve '", "server can't find ", "unknown host ",
            ": Name or service not known", ": Name does not resolve", "while the server is not yet listening",
            "not ready endpoints:", "failed to listen on any local", "server socket has failed to bind", "] connect addr=", "Server listening on: ", "system error: 10048",
            "timed out in _all_gather")

# (1.13-2.0 spell it ``retreiving``; a paste may begin after the waiting rank's number; ProcessGroupXCCL says the same
# of its ``xcclUniqueId``)
_UNIQUE_ID = re.compile(r"(?:\[(?P<rank>\d+)\] is )?setting up [NX]CCL communicator and retr(?:ie|ei)ving [nx]cclUniqueId from "
                        r"\[(?P<root>\d+)\](?: via c10d key-value store by key '(?P<key>[^']*)')?"
                        r"(?:, but store->get\('[^']*'\) got error:?\s*(?P<error>.*))?")
_STORE_TIMEOUT = ("timeout", "Timeout", "timed out")
# ``[c10d] The IPv6 network addresses of (node0, 29500) cannot be retrieved (gai error: -2 - …)``: printed by
# every client of a host without IPv6, harmless, unless what it tried to resolve cannot be a host name at all
_RESOLVE = re.compile(r"(?:(?P<family>IPv[46]) )?network addresses of \((?P<host>[^,()]*), (?P<port>\d+)\) cannot be retrieved"
                      r"(?: \(gai error: (?P<err>[^)]*)\))?")
_HOSTNAME = re.compile(r"^[A-Za-z0-9_.:\-%]{1,253}$")
# ``[c10d] The hostname of the client socket cannot be retrieved. err=-3`` (``…, error code: -3.`` in older
# releases): socket.cpp's reverse lookup (getnameinfo) of a connection's address, for its own log line, failed; it
# prints the address instead. Harmless (a container whose resolver knows no name for its address), printed each time a
# client connects or retries a store not listening yet
_REVERSE = re.compile(r"hostname of the client socket cannot be retrieved(?:\. err=|, error code: )(?P<err>-?\d+)")
_WAIT = re.compile(r"wait timeout after (?P<ms>\d+)ms, keys: (?P<keys>.+)"
                   # Caffe2's store handlers (file, Redis): "Wait timeout for name(s): allreduce_0_cw_op/1"
                   r"|Wait timeout for name\(s\):? (?P<names>.+)"
                   # (its second half where the paste wrapped the line after ``Wait timeout``, glog's next line
                   # run on: ``for name(s) allreduce_0_cw_op/1 E1201 18:57:26.106040 19152 net_simple.cc:75]``)
                   r"|^\s*for name\(s\):? (?P<wrapped>\S+(?: \S+)*?)(?= [EWIF]\d{4} |\s*$)"
                   # gloo's own rendezvous stores (file, Redis, Horovod's HTTP store: gloo::IoException): its keys
                   # are the ranks whose addresses it waited for, ``Wait timeout for key(s): 0`` (Horovod's HTTP
                   # store with its timeout: ``Wait timeout after 30 seconds for key(s): 0.``)
                   r"|Wait timeout (?:after \d+ (?:seconds|s|ms) )?for key\(s\): (?P<gloo>[\w, /\[\]-]{1,300})")
# the C++ frame under a bare "RuntimeError: Socket Timeout" (1.x-2.0): the store wait that ran out, keys unnamed
_DO_WAIT = re.compile(r"Exception raised from doWait at \S*TCPStore\.cpp")
# the timeout (``Timed out initializing process group in store based barrier on rank: 3, for key: …``) and, every
# ten seconds before it, ``Waiting in store based barrier to initialize process group for rank: 3, key: …``
_BARRIER = re.compile(
    r"(?P<waiting>Waiting in )?store based barrier (?:on|to initialize process group for) rank:? (?P<rank>\d+)"
    r".{0,160}?world_size=(?P<world>\d+), (?:num_workers_joined|worker_count)=(?P<joined>\d+)"
)
_BARRIER_CUT = re.compile(r"[Tt]imed out initializing process group in store based barrier(?: on rank:? ?(?P<rank>\d+))?")
_CLIENTS = re.compile(r"Timed out after (?P<s>\d+) seconds waiting for clients\. (?P<joined>\d+)/(?P<world>\d+) clients "
                      r"joined")
_RDZV = re.compile(r"\b(?P<kind>Rendezvous(?:Timeout|Connection|Closed)Error)\b")
_SOCKET = re.compile(r"waitForInput: (?:socket .{0,300}? timed out after (?P<ms>\d+)ms|poll for socket .{0,300}? "
                     r"returned 0, likely a timeout)"
                     # 2.0-2.2's words as the store's wait ends (then ``Socket Timeout``): ``While waitForInput,
                     # poolFD failed with (errno: 0 - Success).``
                     r"|While waitForInput, poolFD failed with")
_CONNECT = re.compile(
    r"client socket (?:has )?(?:timed out after (?P<ms>\d+)(?P<unit>ms|s)(?: while trying to connect(?: to \((?P<host>[^,\s]+)"
    r"(?:, (?P<port>\d+)\))?)?)?"  # the port, the address, the rest may be cut off by a wrapped line
    # (a socket of the address's family that could not be opened, 1.11-2.1: ``The client socket cannot be initialized
    # to connect to [localhost]:29501 (errno: 97 - Address family not supported by protocol).``)
    r"|(?:failed|cannot be initialized) to connect to \[?(?P<host2>[^\]\s]+)\]?:(?P<port2>\d+)(?: \((?P<err>[^)]*)\))?)"
)


_ANY_ADDRESS = re.compile(r"failed to connect to any network address of \((?P<host>[^,\s()]{1,253}), (?P<port>\d{1,5})\)")
# the store client's retries (TCPStore.cpp, 2.2+; a warning until the timeout):
# ``TCP client failed to connect/validate to host 100.64.0.1:59782 - retrying (try=6, timeout=1800000ms,
# delay=5241ms): Connection reset by peer``
_CLIENT_RETRY = re.compile(r"TCP client failed to connect(?:/validate)? to host \[?(?P<host>[^\]\s]+?)\]?:(?P<port>\d+)"
                           r" - retrying \(try=(?P<try>\d+)[^)]{0,80}\): ?(?P<err>[^\n]{0,200})")
# PaddlePaddle's store client (paddle/phi/core/distributed/store/tcp_utils.cc): ``Retry to connect to
# 10.0.0.1:63314 while the server is not yet listening.``; its launcher waiting for the trainers' endpoints
# (paddle.distributed.fleet's wait_server_ready): ``not ready endpoints:['10.0.0.2:38149', …]``
_PADDLE_RETRY = re.compile(r"Retry to connect to (?P<host>[^\s:]+|\[[^\]]+\]):(?P<port>\d+) while the server is not yet "
                           r"listening")
# PaddlePaddle exchanging NCCL's unique id between its trainers (gen_comm_id_helper.cc): the trainer that dials,
# ``connect addr=127.0.0.1:6071 failed 1 times with reason: Connection refused retry after 0.5 seconds``, and the one
# that listens, ``Server listening on: 10.19.174.228:6070 successful.`` (its endpoint, as the launcher gave it)
_PADDLE_ID_CONNECT = re.compile(r"gen_comm_id_helper\.cc:\d+\] connect addr=(?P<host>[^\s:]+):(?P<port>\d+) failed "
                                r"(?P<times>\d+) times with reason: (?P<err>[^\n]{1,120}?)(?: retry after|$)")
_PADDLE_ID_LISTEN = re.compile(r"gen_comm_id_helper\.cc:\d+\] Server listening on: (?P<host>[^\s:]+):(?P<port>\d+)")
# (the list may be cut where a terminal wrapped or a paste ended the line: the endpoints before the cut, each whole)
_PADDLE_WAIT = re.compile(r"not ready endpoints:\s*\[(?P<eps>[^\]]*?)(?:\]|(?P<cut>,?\s*'?[^',\]]*)$)")
_RETRY = re.compile(r"The server socket on \[?(?:::ffff:)?(?P<host>[^\]\s]+?)\]?:(?P<port>\d+) has timed out, will retry")
# a job script's own look-up of the master's name (a container's entrypoint waiting for the master pod's DNS
# record): busybox's and bind's nslookup, ping; ``(null)``: the variable it looked up was empty
_LOOKUP = re.compile(r"^nslookup: can't resolve '(?P<a>[^']{0,253})'|^(?:\*\* )?server can't find (?P<b>[^\s:]{1,253}): "
                     r"(?:NXDOMAIN|SERVFAIL)|^ping: (?:unknown host (?P<c>\S{1,253})|(?P<d>[^\s:]{1,253}): (?:Name or "
                     r"service not known|Name does not resolve|Temporary failure in name resolution))")
_NOT_FOUND = re.compile(r"host not found: (?P<err>Name or service not known|Temporary failure in name resolution|"
                        r"No address associated with hostname|nodename nor servname provided[^.]*|Name has no usable "
                        r"address|System error)")

_VALUE = r"['\"]?([A-Za-z0-9][\w.\-]{0,252})(?::(\d{1,5}))?['\"]?(?![\w$}{<>(.\-])"  # a host, then its port
_ENDPOINT = re.compile(r"will con\w{2,5}ct to TCPStore server at " + _VALUE  # torchelastic 0.x's "conenct"
                       + r"|\bMASTER_ADDR\s*[=:]\s*" + _VALUE + r"|--master[_-]addr[= ]" + _VALUE
                       + r"|(?<![\w-])master_addr=" + _VALUE  # torchrun's agent: "Rendezvous complete … master_addr=node-3"
                       + r"|--rdzv[_-]endpoint[= ]" + _VALUE
                       # Accelerate's: its launch option and its config file's key (each node's own copy)
                       + r"|--main[_-]process[_-]ip[= ]" + _VALUE + r"|^\s*main_process_ip:\s*" + _VALUE)
# an address that is empty where the launcher's command line or the environment gives it (``--master_addr=
# --master_port=29500``: DeepSpeed's launcher took it from ``hostname -I``, which gave nothing in its pod; a job
# script's variable unset)
_EMPTY_ENDPOINT = re.compile(r"--master[_-]addr(?:=(?=[\s;'\"]|$)|\s+(?=--|$))|\bMASTER_ADDR=(?=[\s;]|$)")
# env://'s own words for a variable torchrun (or srun, mpirun) sets that is not set: no address at all, the launcher
# missing (``environment variable RANK expected, but not set``)
# (also cut where a paste wrapped it: ``… env:// rendezvous: environment variable RANK`` at the line's end)
_UNSET = re.compile(r"environment variable \w+(?: expected, but not set|\s*$)")
_BAD_ADDRESS = re.compile(r"Error initializing torch\.distributed using (?P<how>\w+://) rendezvous: (?P<what>[^\n]{1,200})"
                          r"|Port could not be cast to integer value as (?P<port>[^\n]{1,120})"
                          # older Pythons' urllib: int() of what follows the first colon of an IPv6 address written
                          # into ``tcp://ADDR:PORT`` without brackets (``'fdbd:dc03:9:222:4300::55:29500'``)
                          r"|invalid literal for int\(\) with base 10: (?P<v6>'[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,8}:\d{1,5}')")


# the store client's connect before 1.13 (c10d's tcputils): ``RuntimeError: connect() timed out. Original timeout
# was 60000 ms.``, raised from TCPStore's constructor (torchrun's c10d rendezvous, init_process_group)
# (and before 1.8 without the timeout: ``RuntimeError: connect() timed out.``)
_CONNECT_OLD = re.compile(r"connect\(\) timed out(?:\. Original timeout was (?P<ms>\d+) ms|\.?\s*$)")


# torchelastic's etcd rendezvous (python-etcd's client): ``ERROR:etcd.client:Failed to get list of machines from
# http://localhost:2379/v2: MaxRetryError(…Connection refused…)``
_ETCD = re.compile(r"Failed to get list of machines from https?://\[?(?P<host>[\w.\-:]+?)\]?:(?P<port>\d+)")
# torch_xla's (XRT) coordination service, its store: ``Failed to connect to client mesh master: host:56419``, and
# the client's own check ``mesh_service.cc:316 : Check failed: impl_->channel->WaitForConnected(…``
# (that check cut by the paste after ``impl_->channel->``), and the mesh configuration it could not fetch from the master
# for want of a connection (gRPC's UNAVAILABLE, 14, or DEADLINE_EXCEEDED, 4: ``Failed to retrieve mesh configuration:
# Connection reset by peer (14)``; another status, ``ordinal (13)``, is the service's own error)
_MESH_MASTER = re.compile(r"Failed to connect to client mesh master: (?P<host>[\w.\-]+):(?P<port>\d+)|"
                          r"mesh_service\.cc:\d+ : Check failed: impl_->channel->(?:WaitForConnected|\s*$)|"
                          r"Failed to retrieve mesh configuration: (?P<reason>[^()\n]{1,120}?) \((?:14|4)\)")


# keys whose last number is a counter, not a rank: vLLM's StatelessProcessGroup (``broadcast_from/{src}/{n}``,
# ``send_to/{dst}/{n}``: the weight-sync groups of RL trainers)
_COUNTER_KEY = re.compile(r"(?:^|/)(?:broadcast_from|send_to)/\d+/\d+/?$")


def _key_ranks(keys: str) -> list[int]:
    ranks = []
    for key in re.split(r"[,\s]+", keys.strip(" []")):
        tail = key.rstrip("/").rsplit("/", 1)[-1]
        if tail.isdecimal() and "/" in key and not _COUNTER_KEY.search(key):
            ranks.append(int(tail))
    return ranks


# "… bind to [::]:29500 (errno: 98 …)"; 2.4+: "… failed to listen on any local network address. port: 32847, …"
_LISTEN_PORT = re.compile(r"bind to \[?[^\s\]]*\]?:(?P<port>\d+)|listen on any local network address\. port: (?P<port2>\d+)")
# the store's server went away under a client: DistNetworkError, or 2.4+'s warning ``recvValueWithTimeout failed on
# SocketImpl(fd=3, addr=[localhost]:34658, remote=[localhost]:1234): Failed to recv, got 0 bytes. Connection was
# likely closed. Did the remote server shutdown or crash?`` (remote: the store)
_STORE_LOST = re.compile(r"DistNetworkError: (?:Connection reset by peer|Broken pipe)|[Ff]ailed to recv, got 0 bytes"
                         r"|recvValue(?:WithTimeout)? failed on SocketImpl\([^)]{0,300}\): Connection reset by peer")
_REMOTE = re.compile(r"remote=\[(?P<host>[^\]\s]{1,253})\]:(?P<port>\d{1,5})")


# torch.distributed.rpc's barrier (rpc/api.py, its leader gathering every worker's token at init and shutdown):
# ``Followers ['worker1', 'worker3'] timed out in _all_gather after 15.00 seconds. The first exception is …``
_RPC_FOLLOWERS = re.compile(r"Followers \[(?P<names>[^\]]{0,4000})\] timed out in _all_gather after (?P<s>\d+(?:\.\d+)?) seconds")
# the bare message (before 1.11), also with THD's source location (0.3-0.4): "RuntimeError: Address already in
# use at /pytorch/torch/lib/THD/process_group/General.cpp:17"
_BARE_IN_USE = re.compile(r"RuntimeError: Address already in use(?: at \S+)?[\s`'\"]*$")  # a paste's closing backtick
# gloo's own listening socket (every pair listens on an ephemeral port), not the store's: ``[…/pair.cc:176] bind:
# Address already in use`` (hundreds of ranks on one host run out of ports)
_GLOO_BIND = re.compile(r"pair\.cc:\d+\] (?:bind|listen): Address already in use")
# Accelerate's own check before it launches: ``ConnectionError: Tried to launch distributed communication on port
# `29500`, but another process is utilizing it.``
# the second line of 2.4+'s listen failure when a paste breaks the message there (its first line, "The server socket
# has failed to listen on any local network address.", names no reason): ``port: 29500, useIpv6: false, code: -98,
# name: EADDRINUSE, message: address already in use``, from ``useIpv6`` where the break comes after the port (vLLM's
# PR #39405's paste), or its last part alone where the paste wraps it again
_LIBUV_IN_USE = re.compile(r"^\W*(?:(?:port: (?P<port>\d{1,5}), )?useIpv6: \w+, code: -98,\s*)?name: EADDRINUSE\b"
                           r"|\bEADDRINUSE, message: address already in use"  # (a wrap may cut inside "name")
                           # (2.4's libuv store's own line: ``[c10d] UV Store listen failed. useIpv6:0 code:-98
                           # name:EADDRINUSE message:address already in use``)
                           r"|UV Store (?:listen|bind) failed\.[^\n]{0,80}\bname: ?EADDRINUSE\b")
# the message without any reason after it (a paste or a note that quotes the words only): ``The server socket has
# failed to listen on any local network address`` / ``The server socket has failed to bind to [::]:19936``
_UNSAID = re.compile(r"The server socket has failed to (?:listen on any local network address|bind to \S{1,300}?)\.?\s*$")
# the same message whole on one line, or cut inside its code (``… port: 46571, useIpv6: 0, code: -9``)
_LIBUV_CODE = re.compile(r"listen on any local network address\. port: (?P<port>\d{1,5}), useIpv6: \w+, code: -(?P<code>\d+)\b")
# Ascend HCCL's own listening socket (its plog): ``[HcclSocket][Listen] socket type[1], listen on ip[192.168.20.160]
# and specific port[16666] fail. Please check the port status and whether the port is been using by other process.``
_HCCL_LISTEN = re.compile(r"listen on ip\[(?P<ip>[^\]\s]{2,64})\] and specific port\[(?P<port>\d{1,5})\] fail")
_HCCL_RDMA = re.compile(r"ra rdma init failed, devid\[(?P<dev>\d{1,3})\] ip\[(?P<ip>[^\]\s]{2,64})\]")
# ZeroMQ's bind refused (the message queues vLLM and SGLang set up between their ranks and engines):
# ``zmq.error.ZMQError: Address already in use (addr='tcp://10.65.1.9:7000')``: that host's port is taken
_ZMQ_BIND = re.compile(r"ZMQError: Address already in use \(addr='tcp://(?P<host>\[[^\]]{2,64}\]|[^:'\s]{1,253}):"
                       r"(?P<port>\d{1,5})'\)")
# torchelastic's own check of the store's port (elastic/utils/distributed.py, create_c10d_store): ``OSError: on
# ca788e26754c, port: 45925 already in use``, the host that could not listen named
_ELASTIC_IN_USE = re.compile(r"Error: on (?P<host>[\w.\-]{1,253}), port: (?P<port>\d{1,5}) already in use")
_ACCELERATE_PORT = re.compile(r"Tried to launch distributed communication on port `?(?P<port>\d+)`?, but another "
                              r"process is utilizing it")


# torchrun asked for a rendezvous through the c10d or etcd backend of several nodes without its endpoint (``torchrun
# --nnodes=2 --rdzv_backend=c10d --master_addr=10.0.0.1 … train.py``; torchrun warns that ``master_addr is only used
# for static rdzv_backend``): the endpoint is then localhost:29400 on every node, each node's agent serves a rendezvous
# of its own and none gathers the others
_RDZV_BACKEND = re.compile(r"--rdzv[_-]backend(?:=|\s+)['\"]?(?P<backend>c10d|etcd(?:-v2)?)\b")
_NNODES = re.compile(r"--nnodes(?:=|\s+)['\"]?(?:\d{1,6}:)?(?P<most>\d{1,6})\b")
_TORCHRUN = re.compile(r"\btorchrun\b|\btorch\.distributed\.(?:run|launch)\b")
# (or with an endpoint on the loopback, ``--rdzv_endpoint=localhost:29400``: each node's own again)
_RDZV_ENDPOINT = re.compile(r"--rdzv[_-]endpoint(?:=|\s+)['\"]?\$?(?P<host>[^\s:'\",\]]*)|--standalone\b")


# (a line the paste cut inside an option, ``… --rdzv_backend=c10d --rdzv_endpoi``: what it said is not known)
_CUT_IN_AN_OPTION = re.compile(r"\s--?[\w\-]*\s*$")


def _rendezvous_without_endpoint(line: Line) -> list[Event]:
    body = line.body
    backend = _RDZV_BACKEND.search(body)
    nodes = _NNODES.search(body) if backend else None
    if backend is None or nodes is None or int(nodes["most"]) < 2 or not _TORCHRUN.search(body) \
            or _CUT_IN_AN_OPTION.search(body):
        return []
    endpoint = _RDZV_ENDPOINT.search(body)
    host = endpoint["host"] if endpoint else None
    if endpoint is not None and (host is None or not is_loopback(host)):
        return []  # (an endpoint of a host's own address, or --standalone: one node, its own)
    return [make_event(Kind.STORE_ENDPOINT, line, data={
        "store_host": host or "localhost", "store_port": None if host else 29400, "rdzv_no_endpoint": True,
        "rdzv_backend": backend["backend"], "nnodes": int(nodes["most"]), "loopback_endpoint": bool(host)})]


def _store_endpoint(line: Line) -> list[Event]:
    """The last store address ``line`` names (a command line may name the master and the endpoint both)."""
    found: tuple[str, int | None] | None = None
    for match in _ENDPOINT.finditer(line.body):
        groups = match.groups()
        for at in range(0, len(groups), 2):
            if groups[at]:
                found = (groups[at], int(groups[at + 1]) if groups[at + 1] else None)
    if found is None:
        if _EMPTY_ENDPOINT.search(line.body):
            return [make_event(Kind.STORE_ENDPOINT, line, data={"store_host": "", "store_port": None, "empty": True})]
        return []
    return [make_event(Kind.STORE_ENDPOINT, line, data={"store_host": found[0], "store_port": found[1]})]


def parse(line: Line) -> list[Event]:
    body = line.body
    named = ("TCPStore server at" in body or "MASTER_ADDR" in body or "aster_addr" in body or "aster-addr" in body
             or "rdzv" in body or "main_process_ip" in body or "main-process-ip" in body)
    return _errors(line) + (_store_endpoint(line) + _rendezvous_without_endpoint(line) if named else [])


def _errors(line: Line) -> list[Event]:
    body = line.body
    if _GLOO_BIND.search(body):
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "listen", "source": "gloo-bind", "store_port": None, "error": "Address already in use"})]
    match = _HCCL_RDMA.search(body)
    if match:  # the NPU's RDMA NIC could not start (HCCP): its listen and links fail after it
        return [make_event(Kind.IB_DEVICE_UNAVAILABLE, line, origin=Origin(host=match["ip"]), data={
            "message": body.strip()[:200], "dev": f"npu{match['dev']}", "library": "HCCL"})]
    match = _HCCL_LISTEN.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, origin=Origin(host=match["ip"]), data={
            "what": "listen", "source": "hccl-listen", "store_port": int(match["port"]), "listen_ip": match["ip"],
            "error": "HCCL could not listen"})]
    match = _ZMQ_BIND.search(body) if "ZMQError" in body else None
    if match:
        host = match["host"].strip("[]")
        return [make_event(Kind.STORE_ERROR, line, origin=None if host in ("*", "0.0.0.0", "::") else Origin(host=host),
                           data={"what": "listen", "source": "zmq", "store_port": int(match["port"]),
                                 "error": "address already in use"})]
    match = _ELASTIC_IN_USE.search(body) if "already in use" in body else None
    if match:
        return [make_event(Kind.STORE_ERROR, line, origin=Origin(host=match["host"]), data={
            "what": "listen", "store_port": int(match["port"]), "error": "Address already in use"})]
    match = _ACCELERATE_PORT.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "listen", "store_port": int(match["port"]), "error": "another process holds the port"})]
    if ("ddress already in use" in body and ("server socket" in body or _BARE_IN_USE.search(body))) or \
            ("server socket" in body and "system error: 10048" in body):  # Windows' WSAEADDRINUSE, in its language
        bound = _LISTEN_PORT.search(body)
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "listen", "store_port": int(bound["port"] or bound["port2"]) if bound else None, "error": "Address already in use"})]
    if "server socket" in body and ("errno: 13 - Permission denied" in body or "name: EACCES" in body):
        # a port below 1024 for a user without the right to bind it: the store cannot listen there either
        bound = _LISTEN_PORT.search(body)
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "listen", "store_port": int(bound["port"] or bound["port2"]) if bound else None,
            "error": "Permission denied"})]
    if "server socket" in body and "system error: 10013" in body:
        # Windows' WSAEACCES, in its language: a port in a range Windows reserves (Hyper-V's, WinNAT's), or held
        # exclusively by another program
        bound = _LISTEN_PORT.search(body)
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "listen", "store_port": int(bound["port"] or bound["port2"]) if bound else None,
            "error": "Windows refused the port (10013)"})]
    match = _UNSAID.search(body) if "server socket" in body else None
    if match:  # the paste ends before its reason (or the line was quoted without it): a port in use most often
        bound = _LISTEN_PORT.search(body)
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "listen", "store_port": int(bound["port"] or bound["port2"]) if bound else None,
            "error": "no reason given", "unsaid": True})]
    match = _LIBUV_CODE.search(body) if "server socket" in body else None
    if match and (match["code"] == "98" or (match["code"] == "9" and match.end() >= len(body.rstrip()))):
        # 2.4+'s listen failure with its code and no name: -98 is EADDRINUSE; a paste cut at "-9" most often was
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "listen", "store_port": int(match["port"]), "error": "Address already in use",
            **({"cut": True} if match["code"] == "9" else {})})]
    match = _LIBUV_IN_USE.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "listen", "store_port": int(match["port"]) if match["port"] else None,
            "error": "Address already in use"})]
    match = _ETCD.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "connect", "store_host": match["host"], "store_port": int(match["port"]),
            "error": "the etcd rendezvous server could not be reached", "rendezvous": True})]
    match = _MESH_MASTER.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "connect", "error": match["reason"] or "not reached", "source": "xla-mesh",
            **({"store_host": match["host"], "store_port": int(match["port"])} if match["host"] else {})})]
    match = _PADDLE_ID_CONNECT.search(body) if "connect addr=" in body else None
    if match:  # read by rules.setup (a trainer's endpoint at a loopback address in a job across hosts)
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "connect", "store_host": match["host"], "store_port": int(match["port"]),
            "error": match["err"].strip(), "retrying": True, "source": "paddle-comm-id"})]
    match = _PADDLE_ID_LISTEN.search(body) if "Server listening on: " in body else None
    if match:
        return [make_event(Kind.STORE_ENDPOINT, line, data={
            "store_host": match["host"], "store_port": int(match["port"]), "source": "paddle-comm-id",
            "listening": True})]
    match = _PADDLE_RETRY.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "connect", "store_host": match["host"].strip("[]"), "store_port": int(match["port"]),
            "error": "the store's server is not listening there, retrying", "retrying": True, "source": "paddle"})]
    match = _PADDLE_WAIT.search(body)
    endpoints = [e.strip(" '\"") for e in match["eps"].split(",") if e.strip(" '\"")] if match else []
    if endpoints:
        hosts = sorted({e.rpartition(":")[0] for e in endpoints if ":" in e})
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "connect", "store_host": hosts[0] if len(hosts) == 1 else None,
            "error": f"the launcher waits for endpoints that do not answer: {', '.join(endpoints[:4])}",
            "retrying": True, "source": "paddle-launch", "endpoints": endpoints[:16]})]
    match = _RETRY.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "connect", "store_host": match["host"], "store_port": int(match["port"]),
            "error": "connect timed out, retrying", "retrying": True})]
    match = _BAD_ADDRESS.search(body)
    if match and match["what"] and _UNSET.search(match["what"]):
        match = None  # (a launcher's variable not set: the script started without its launcher, rules.phrases')
    if match and "raise " not in body:  # not the source line of the raise, shown in the traceback
        what = (f"{match['how']} {match['what'].strip()}" if match["how"]
                else f"init_method port {match['port'].strip()[:60]}" if match["port"]
                else f"init_method port {match['v6'][:60]} (an IPv6 address without its brackets)")
        return [make_event(Kind.STORE_ERROR, line, data={"what": "connect", "invalid_address": True,
                                                          "error": f"invalid address: {what}"})]
    match = _LOOKUP.search(body.strip())
    if match:
        host = match["a"] if match["a"] is not None else (match["b"] or match["c"] or match["d"])
        if not host or host == "(null)":
            return [make_event(Kind.STORE_ERROR, line, data={"what": "connect", "invalid_address": True,
                                                              "error": "invalid address: an empty name"})]
        return [make_event(Kind.STORE_ERROR, line, data={"what": "connect", "store_host": host,
                                                          "error": "host not found: the name does not resolve"})]
    match = _NOT_FOUND.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={"what": "connect", "error": f"host not found: {match['err']}"})]
    match = _CONNECT_OLD.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={"what": "connect", "ms": int(match["ms"]) if match["ms"] else None,
                                                          "error": "timed out"})]
    if _DO_WAIT.search(body):
        return [make_event(Kind.STORE_ERROR, line, data={"what": "wait", "ms": None, "keys": "", "missing_ranks": []})]
    if _STORE_LOST.search(body):
        remote = _REMOTE.search(body)
        if remote and masked(remote["host"]):  # ``remote=[<redacted>]:58159``: no host
            remote = None
        return [make_event(Kind.PEER_CLOSED, line, data={
            "transport": "store", "how": "reset",
            **({"peer_addr": remote["host"], "peer_port": int(remote["port"])} if remote else {})})]
    match = _REVERSE.search(body) if "client socket cannot" in body else None
    if match:
        return [make_event(Kind.STORE_NAME_UNRESOLVED, line, data={"reverse": True, "error": int(match["err"])})]
    match = _RESOLVE.search(body)
    if match:
        host = match["host"].strip()
        # the printed host between "(" and ", " is exactly what was resolved: a space around it (MASTER_ADDR
        # set as " 10.0.5.4") makes it no host name at all, and every lookup fails
        spaced = host != match["host"] and bool(host)
        if _HOSTNAME.match(host) and not spaced and match["family"] == "IPv4":
            # the IPv4 lookup failed too (socket.cpp names the family since 2.x): the name does not resolve
            return [make_event(Kind.STORE_ERROR, line, data={
                "what": "connect", "store_host": host, "store_port": int(match["port"]),
                "error": f"host not found ({(match['err'] or 'cannot be resolved').strip()})"})]
        if _HOSTNAME.match(host) and not spaced:
            # IPv6 (or a release that does not say): usually harmless (a host without IPv6); kept for when
            # nothing else explains a hang at the start
            return [make_event(Kind.STORE_NAME_UNRESOLVED, line, data={
                "store_host": host, "store_port": int(match["port"]), "error": (match["err"] or "").strip()})]
        why = ("a space around the host name, " if spaced
               # getaddrinfo takes an IPv6 address bare: the brackets belong in a URL (``tcp://[fd00::1]:29500``),
               # not in MASTER_ADDR
               else "an IPv6 address in brackets, which MASTER_ADDR takes without them, " if host.startswith("[")
               else "")
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "connect", "store_host": host, "store_port": int(match["port"]),
            "error": f"not a host name ({why}{(match['err'] or 'cannot be resolved').strip()})"})]
    match = _CLIENT_RETRY.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "connect", "store_host": match["host"], "store_port": int(match["port"]),
            "error": match["err"].strip() or "could not connect", "retrying": True, "tries": int(match["try"])})]
    match = _UNIQUE_ID.search(body)
    if match:
        error = (match["error"] or "").strip()[:200]
        events = [make_event(Kind.STORE_ERROR, line, data={
            "what": "nccl-unique-id", "group_rank": int(match["rank"]) if match["rank"] else None,
            "waiting_for": int(match["root"]),
            "key": match["key"], "error": error, "timeout": any(word in error for word in _STORE_TIMEOUT)})]
        if any(word in error for word in ("reset by peer", "Broken pipe", "closed by peer", "got 0 bytes")):
            # the store itself went away while this rank waited: its server (rank 0, or the agent) ended
            events.append(make_event(Kind.PEER_CLOSED, line, data={"transport": "store", "how": "reset"}))
        return events
    match = _WAIT.search(body)
    if match:
        keys = (match["keys"] or match["names"] or match["gloo"] or match["wrapped"]).strip()[:300]
        if match["gloo"]:
            # gloo's full-mesh setup: the ranks whose addresses did not arrive in time, often a setup that
            # outlasted the store's timeout at scale (Horovod's 30 s at 50 hosts), not ranks that never started
            return [make_event(Kind.STORE_ERROR, line, data={
                "what": "rendezvous-timeout", "source": "gloo", "keys": keys,
                "awaited": [int(k) for k in re.split(r"[,\s\[\]]+", keys) if k.isdecimal()][:64]})]
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "wait", "ms": int(match["ms"]) if match["ms"] else None, "keys": keys,
            "missing_ranks": _key_ranks(keys)})]
    match = _BARRIER.search(body)
    if match:  # the rank it names is its writer's own
        return [make_event(Kind.STORE_ERROR, line, origin=Origin(rank=int(match["rank"])) if line.origin.rank is None
                           else None, data={
            "what": "barrier", "world_size": int(match["world"]), "joined": int(match["joined"]),
            "waiting": bool(match["waiting"])})]
    match = _BARRIER_CUT.search(body) if "store based barrier" in body else None
    if match:  # the timeout's line cut before its rank and counts (a paste, a title): how many joined is lost
        rank = int(match["rank"]) if match["rank"] else None
        return [make_event(Kind.STORE_ERROR, line, origin=Origin(rank=rank) if rank is not None and
                           line.origin.rank is None else None, data={"what": "barrier", "waiting": False})]
    match = _RPC_FOLLOWERS.search(body) if "timed out in _all_gather" in body else None
    if match:  # torch.distributed.rpc's barrier: the workers it names never answered the leader
        names = re.findall(r"'([^']{1,200})'", match["names"])[:64]
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "rendezvous-timeout", "source": "rpc", "followers": names, "seconds": float(match["s"])})]
    match = _CLIENTS.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={
            "what": "clients", "world_size": int(match["world"]), "joined": int(match["joined"]),
            "seconds": int(match["s"])})]
    match = _SOCKET.search(body)
    if match:
        return [make_event(Kind.STORE_ERROR, line, data={"what": "socket-timeout",
                                                          "ms": int(match["ms"]) if match["ms"] else None})]
    match = _CONNECT.search(body)
    every = _ANY_ADDRESS.search(body) if match is None and "any network address of (" in body else None
    if match or every:
        # socket.cpp's summary after each address it tried (2.x): ``The client socket has failed to connect to any
        # network address of (node-0, 29500).``, on its own line where the per-address ones were warnings not kept
        host = (match["host"] or match["host2"]) if match else every["host"]  # type: ignore[index]
        port = (match["port"] or match["port2"]) if match else every["port"]  # type: ignore[index]
        found: dict[str, object] = {"what": "connect", "error": (match["err"] if match else None) or
                                    ("timeout" if match else "no address of the store could be connected to")}
        if host:
            found["store_host"] = host.strip()
        if port:
            found["store_port"] = int(port)
        if every:
            found["summary"] = True  # (the per-address errors, where kept, say why)
        if match and line.severity == "warning":
            # socket.cpp's warning for one address it tried (1.12+): the client goes on to the next address and
            # retries until its timeout, whose error (``The client socket has timed out after …``) is the failure
            found["retrying"] = found["per_address"] = True
            if any(f"errno: {n}" in str(found["error"]) for n in (97, 99)) and \
                    is_loopback(str(found.get("store_host", ""))):
                # localhost's IPv6 address tried first where IPv6 is off (99: no such address here; 97: no IPv6
                # sockets at all): printed by runs that then connect over IPv4
                found["ipv6_loopback"] = True
        return [make_event(Kind.STORE_ERROR, line, data=found)]
    if "connection to the C10d store has failed" in body:
        return [make_event(Kind.STORE_ERROR, line, data={"what": "connect"})]
    match = _RDZV.search(body)
    if match:
        kind = {"RendezvousTimeoutError": "rendezvous-timeout", "RendezvousConnectionError": "connect",
                "RendezvousClosedError": "rendezvous-closed"}[match["kind"]]
        data: dict[str, object] = {"what": kind, "rendezvous": True}
        if "failed to shutdown the rendezvous" in body:
            # torchrun's agent closing the rendezvous after its workers ended: the store may be gone with the
            # agent that served it (it exits first), so this says nothing about this host's link
            data["at_shutdown"] = True
        return [make_event(Kind.STORE_ERROR, line, data=data)]
    return []
