"""validate_env: one positive and one negative case per E code, table-driven, plus the issue's five variables.

Host facts are plain records (no /sys): a host with lo, eth0, eth1, eth2 (no address), ib0 (down) and
docker0, and RDMA ports mlx5_0/1/10 (IB, active), mlx5_2 (down) and mlx5_3 (RoCE with a GID table).
"""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncdoctor.checks import VARIABLES, lookup, validate_env
from syncdoctor.checks.values import (
    c_strtoll,
    cpp_stoi,
    nccl_level,
    parse_nccl_list,
    parse_version,
    torch_bool,
)
from syncdoctor.host.types import IbPortFacts, InterfaceFacts
from syncdoctor.kb import Finding, Severity, all_rules, get_rule

IFS = (
    InterfaceFacts("lo", operstate="unknown", up=True, running=True, loopback=True, ipv4=("127.0.0.1/8",), kind="loopback"),
    InterfaceFacts("eth0", operstate="up", up=True, running=True, ipv4=("10.0.0.1/24",), kind="ether"),
    InterfaceFacts("eth1", operstate="up", up=True, running=True, ipv4=("10.0.1.1/24",), kind="ether"),
    InterfaceFacts("eth2", operstate="up", up=True, running=True, kind="ether"),
    InterfaceFacts("ib0", operstate="down", up=False, running=False, kind="infiniband"),
    InterfaceFacts("docker0", operstate="up", up=True, running=True, ipv4=("172.17.0.1/16",), kind="docker"),
)
_GIDS = ((0, "fe80:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1", "eth0"),
         (1, "fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2", "eth0"),
         (2, "0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1", "eth0"),
         (3, "0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", "eth0"))
PORTS = (
    IbPortFacts("mlx5_0", 1, state=4, state_name="ACTIVE", link_layer="InfiniBand"),
    IbPortFacts("mlx5_1", 1, state=4, state_name="ACTIVE", link_layer="InfiniBand"),
    IbPortFacts("mlx5_10", 1, state=4, state_name="ACTIVE", link_layer="InfiniBand"),
    IbPortFacts("mlx5_2", 1, state=1, state_name="DOWN", link_layer="InfiniBand"),
    IbPortFacts("mlx5_3", 1, state=4, state_name="ACTIVE", link_layer="Ethernet", gids=_GIDS, roce_v2_index=3),
)
IB_ONLY = PORTS[:3]
HOST: dict[str, Any] = {"interfaces": IFS, "ib_ports": PORTS}
MULTI = {"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8", "RANK": "9", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.1",
         "MASTER_PORT": "29500"}
SINGLE = {"WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "8", "RANK": "1", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1",
          "MASTER_PORT": "29500"}


def run(env: dict[str, str], **kw: Any) -> list[Finding]:
    return validate_env(env, **kw)


def of(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


# (id, env, keyword arguments, code, severity, text that must appear in the title)
POSITIVE: list[tuple[str, dict[str, str], dict[str, Any], str, Severity, str]] = [
    ("ifname-missing", {"NCCL_SOCKET_IFNAME": "eth9"}, HOST, "E101", Severity.ERROR, "eth9 matches no interface"),
    ("ifname-excludes-all", {"NCCL_SOCKET_IFNAME": "^eth,lo,ib,docker"}, HOST, "E101", Severity.ERROR, "excludes every"),
    ("ifname-down", {"NCCL_SOCKET_IFNAME": "=ib0"}, HOST, "E102", Severity.ERROR, "ib0 (down"),
    ("ifname-no-address", {"NCCL_SOCKET_IFNAME": "=eth2"}, HOST, "E102", Severity.ERROR, "eth2 (no address)"),
    ("ifname-family", {"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_SOCKET_FAMILY": "AF_INET6"}, HOST, "E102",
     Severity.ERROR, "no IPv6 address"),
    ("ifname-loopback-multinode", {"NCCL_SOCKET_IFNAME": "lo", **MULTI}, HOST, "E102", Severity.ERROR, "loopback"),
    ("ifname-prefix-broad", {"NCCL_SOCKET_IFNAME": "eth"}, HOST, "E103", Severity.WARNING, "eth0, eth1, eth2"),
    ("hca-prefix-broad", {"NCCL_IB_HCA": "mlx5_1"}, HOST, "E103", Severity.WARNING, "mlx5_1, mlx5_10"),
    ("list-order", {"NCCL_SOCKET_IFNAME": "=^docker0"}, HOST, "E104", Severity.ERROR, "the order is '^='"),
    ("list-blanks", {"NCCL_SOCKET_IFNAME": "eth0, eth1"}, {}, "E104", Severity.ERROR, "blanks"),
    ("list-quotes", {"NCCL_SOCKET_IFNAME": '"eth0"'}, {}, "E104", Severity.ERROR, "quotes"),
    ("list-one-char", {"NCCL_SOCKET_IFNAME": "e"}, {}, "E104", Severity.ERROR, "ignored"),
    ("list-inner-caret", {"NCCL_IB_HCA": "mlx5_0,^mlx5_1"}, {}, "E104", Severity.ERROR, "whole list"),
    ("list-empty-entry", {"NCCL_SOCKET_IFNAME": "eth0,,eth1"}, {}, "E104", Severity.WARNING, "skipped"),
    ("list-port-on-socket", {"NCCL_SOCKET_IFNAME": "eth0:1"}, {}, "E104", Severity.WARNING, "':port' part"),
    ("oob-blanks", {"NCCL_OOB_NET_IFNAME": "mlx5_0, mlx5_1"}, {}, "E104", Severity.ERROR, "blanks"),
    ("hca-missing", {"NCCL_IB_HCA": "mlx5_8"}, HOST, "E105", Severity.ERROR, "selects no RDMA port"),
    ("hca-no-devices", {"NCCL_IB_HCA": "=mlx5_0"}, {"ib_ports": ()}, "E105", Severity.ERROR, "no RDMA devices"),
    ("hca-port-zero", {"NCCL_IB_HCA": "=mlx5_0:0"}, {}, "E106", Severity.ERROR, "not a positive integer"),
    ("hca-port-text", {"NCCL_IB_HCA": "mlx5_0:x"}, {}, "E106", Severity.ERROR, "NCCL reads 0"),
    ("hca-port-absent", {"NCCL_IB_HCA": "=mlx5_0:2"}, HOST, "E106", Severity.ERROR, "has no port 2"),
    ("hca-rail-old-nccl", {"NCCL_IB_HCA": "=mlx5_0::0:0"}, {"nccl_version": "2.21.5"}, "E106", Severity.ERROR,
     "takes port 0"),
    ("hca-rail-ignored", {"NCCL_IB_HCA": "=mlx5_0:1:0:0"}, {"nccl_version": "2.21.5"}, "E106", Severity.WARNING,
     "need NCCL >= 2.30.7"),
    ("hca-all-down", {"NCCL_IB_HCA": "=mlx5_2"}, HOST, "E107", Severity.ERROR, "no selected port is"),
    ("hca-some-down", {"NCCL_IB_HCA": "=mlx5_0,mlx5_2"}, HOST, "E107", Severity.WARNING, "mlx5_2:1 DOWN"),
    ("psk-short", {"NCCL_PSK": "hunter2"}, {}, "E108", Severity.ERROR, "7 characters"),
    ("ib-disabled-hca", {"NCCL_IB_DISABLE": "1", "NCCL_IB_HCA": "=mlx5_0"}, {}, "E109", Severity.WARNING,
     "useless"),
    ("ib-disabled-net-ib", {"NCCL_IB_DISABLE": "1", "NCCL_NET": "IB"}, {}, "E109", Severity.ERROR,
     "Failed to initialize any NET plugin"),
    ("ib-timeout-60", {"NCCL_IB_TIMEOUT": "60"}, {}, "E201", Severity.ERROR, "becomes 28 (18.3 min per try)"),
    ("ib-timeout-90", {"NCCL_IB_TIMEOUT": "90"}, {}, "E201", Severity.ERROR, "becomes 26 (4.6 min per try)"),
    ("ib-timeout-negative", {"NCCL_IB_TIMEOUT": "-1"}, {}, "E201", Severity.ERROR, "outside 0-31"),
    ("ib-timeout-zero", {"NCCL_IB_TIMEOUT": "0"}, {}, "E202", Severity.WARNING, "infinite"),
    ("ib-timeout-22", {"NCCL_IB_TIMEOUT": "22"}, {}, "E203", Severity.INFO,
     "NCCL_IB_TIMEOUT=22 gives 17.2 s per try, ~2.0 min total with retry count 7"),
    ("ib-timeout-short", {"NCCL_IB_TIMEOUT": "8"}, {}, "E203", Severity.WARNING, "1.0 ms per try"),
    ("ib-retry-zero", {"NCCL_IB_RETRY_CNT": "0"}, {}, "E203", Severity.WARNING, "allows no retry"),
    ("ib-retry-default-timeout", {"NCCL_IB_RETRY_CNT": "7"}, {"nccl_version": "2.18.3"}, "E203", Severity.INFO,
     "NCCL_IB_TIMEOUT=18 gives 1.1 s per try"),
    ("ib-retry-32", {"NCCL_IB_RETRY_CNT": "32"}, {}, "E204", Severity.ERROR, "means 0 retries"),
    ("ib-retry-16", {"NCCL_IB_RETRY_CNT": "16"}, {}, "E204", Severity.ERROR, "means 0 retries"),
    ("gid-recent", {"NCCL_IB_GID_INDEX": "3"}, {"nccl_version": "2.21.5"}, "E205", Severity.WARNING,
     "selects the RoCE v2 GID itself"),
    ("gid-unknown-version", {"NCCL_IB_GID_INDEX": "3"}, {}, "E205", Severity.WARNING, "version is unknown"),
    ("gid-ignored-on-ib", {"NCCL_IB_GID_INDEX": "3"}, {"nccl_version": "2.23.4", "ib_ports": IB_ONLY}, "E205",
     Severity.WARNING, "ignored"),
    ("gid-not-in-table", {"NCCL_IB_GID_INDEX": "5", "NCCL_IB_HCA": "=mlx5_3"}, {**HOST, "nccl_version": "2.18.3"},
     "E206", Severity.ERROR, "no GID at index 5"),
    ("socks-product", {"NCCL_SOCKET_NTHREADS": "16", "NCCL_NSOCKS_PERTHREAD": "8"}, {}, "E301", Severity.ERROR,
     "= 128 sockets"),
    ("socks-threads", {"NCCL_SOCKET_NTHREADS": "32"}, {}, "E301", Severity.ERROR, "uses 16"),
    ("socks-alone", {"NCCL_NSOCKS_PERTHREAD": "128"}, {}, "E301", Severity.ERROR, "exceeds the limit"),
    ("buffsize", {"NCCL_BUFFSIZE": "5000000"}, {}, "E302", Severity.WARNING, "not a power of two"),
    ("channels-min-max", {"NCCL_MIN_CTAS": "32", "NCCL_MAX_CTAS": "16"}, {}, "E303", Severity.WARNING,
     "minimum (32) is above the maximum (16)"),
    ("channels-clamp", {"NCCL_MAX_NCHANNELS": "100"}, {}, "E303", Severity.WARNING, "clamps it to 64"),
    ("ctas-old-limit", {"NCCL_MAX_CTAS": "48"}, {"nccl_version": "2.24.3"}, "E303", Severity.WARNING,
     "clamps it to 32"),
    ("nthreads", {"NCCL_NTHREADS": "1024"}, {}, "E304", Severity.ERROR, "not one of 64, 128, 256, 512"),
    ("p2p-level-0", {"NCCL_P2P_LEVEL": "0"}, {}, "E305", Severity.ERROR, "P2P is disabled entirely"),
    ("p2p-level-loc", {"NCCL_P2P_LEVEL": "LOC"}, {}, "E305", Severity.WARNING, "means LOC"),
    ("p2p-level-08", {"NCCL_P2P_LEVEL": "08"}, {}, "E305", Severity.ERROR, "strtol reads '08' as 0"),
    ("gdr-level-0", {"NCCL_NET_GDR_LEVEL": "0"}, {}, "E305", Severity.ERROR, "GPU Direct RDMA is never used"),
    ("level-lowercase", {"NCCL_P2P_LEVEL": "nvl"}, {}, "E306", Severity.ERROR, "silently ignored"),
    ("level-word", {"NCCL_NET_GDR_LEVEL": "NVLINK"}, {}, "E306", Severity.ERROR, "silently ignored"),
    ("level-negative", {"NCCL_P2P_LEVEL": "-1"}, {}, "E306", Severity.ERROR, "silently ignored"),
    ("level-int", {"NCCL_P2P_LEVEL": "2"}, {}, "E307", Severity.WARNING, "read as PXB"),
    ("level-big-int", {"NCCL_NET_GDR_LEVEL": "7"}, {}, "E307", Severity.WARNING, "read as SYS"),
    ("bool-yes", {"NCCL_IB_DISABLE": "yes"}, {}, "E401", Severity.ERROR, "reads it as 0 (off)"),
    ("bool-true", {"NCCL_P2P_DISABLE": "true"}, {}, "E401", Severity.ERROR, "reads it as 0 (off)"),
    ("size-suffix", {"NCCL_BUFFSIZE": "4M"}, {}, "E401", Severity.ERROR, "reads 4 and ignores 'M'"),
    ("float", {"NCCL_IB_QPS_PER_CONNECTION": "1.5"}, {}, "E401", Severity.ERROR, "reads 1 and ignores '.5'"),
    ("empty", {"NCCL_IB_TIMEOUT": ""}, {}, "E401", Severity.WARNING, "uses the default (20)"),
    ("empty-old-default", {"NCCL_IB_TIMEOUT": ""}, {"nccl_version": "2.12.12"}, "E401", Severity.WARNING,
     "uses the default (14)"),
    ("blanks", {"NCCL_IB_TIMEOUT": " 22 "}, {}, "E401", Severity.WARNING, "blanks around"),
    ("overflow", {"NCCL_BUFFSIZE": "99999999999999999999"}, {}, "E401", Severity.ERROR, "64-bit range"),
    ("torch-bool", {"TORCH_NCCL_BLOCKING_WAIT": "on"}, {}, "E401", Severity.ERROR, "Invalid value"),
    ("torch-int", {"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "ten"}, {}, "E401", Severity.ERROR, "Invalid value"),
    ("torch-empty", {"TORCH_NCCL_ASYNC_ERROR_HANDLING": ""}, {}, "E401", Severity.ERROR, "does not start with a number"),
    ("launcher-int", {"RANK": "1.0"}, {}, "E401", Severity.ERROR, "ValueError"),
    ("range-sl", {"NCCL_IB_SL": "16"}, {}, "E402", Severity.ERROR, "outside 0-15"),
    ("range-cross-nic", {"NCCL_CROSS_NIC": "3"}, {}, "E402", Severity.ERROR, "outside 0-2"),
    ("range-async", {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "7"}, {}, "E402", Severity.ERROR, "outside 0-3"),
    ("range-p2p-disable", {"NCCL_P2P_DISABLE": "2"}, {}, "E402", Severity.ERROR, "leaves P2P enabled"),
    ("range-bool", {"NCCL_IB_DISABLE": "2"}, {}, "E402", Severity.WARNING, "non-zero value as on"),
    ("octal", {"NCCL_IB_TIMEOUT": "010"}, {}, "E403", Severity.ERROR, "reads it as octal, i.e. 8, not 10"),
    ("octal-8", {"NCCL_IB_TIMEOUT": "08"}, {}, "E403", Severity.ERROR, "i.e. 0, not 8"),
    ("hex", {"NCCL_IB_TIMEOUT": "0x14"}, {}, "E403", Severity.INFO, "NCCL reads 20"),
    ("choice-family", {"NCCL_SOCKET_FAMILY": "IPv4"}, {}, "E404", Severity.ERROR, "not one of AF_INET, AF_INET6"),
    ("choice-debug", {"TORCH_DISTRIBUTED_DEBUG": "verbose"}, {}, "E404", Severity.ERROR, "must be OFF, INFO, or DETAIL"),
    ("unknown-typo", {"NCCL_SOCKET_IFACE": "eth0"}, {}, "E411", Severity.ERROR, "did you mean NCCL_SOCKET_IFNAME"),
    ("unknown-torch-typo", {"TORCH_NCCL_ASYNC_ERROR_HANDLNG": "1"}, {}, "E411", Severity.ERROR,
     "did you mean TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    ("unknown-gloo-typo", {"GLOO_SOCKET_IFACE": "eth0"}, {}, "E411", Severity.ERROR, "GLOO_SOCKET_IFNAME"),
    ("unknown-lowercase", {"nccl_debug": "INFO"}, {}, "E411", Severity.ERROR, "did you mean NCCL_DEBUG"),
    ("unknown-far", {"NCCL_QWERTY_ZXCV": "1"}, {}, "E411", Severity.WARNING, "not a documented"),
    ("nccl-timeout", {"NCCL_TIMEOUT": "1800"}, {}, "E412", Severity.ERROR, "init_process_group(timeout=...)"),
    ("torch-nccl-timeout", {"TORCH_NCCL_TIMEOUT": "600"}, {}, "E412", Severity.ERROR, "has no effect"),
    ("nccl-timeout-ms", {"NCCL_TIMEOUT_MS": "600000"}, {}, "E412", Severity.ERROR, "600 s = 10 min"),
    ("deprecated-async", {"NCCL_ASYNC_ERROR_HANDLING": "1"}, {}, "E413", Severity.WARNING,
     "use TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    ("deprecated-fr", {"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}, {}, "E413", Severity.WARNING, "TORCH_FR_BUFFER_SIZE"),
    ("deprecated-channels", {"NCCL_MAX_NCHANNELS": "8"}, {}, "E413", Severity.WARNING, "NCCL_MAX_CTAS"),
    ("deprecated-blocking", {"NCCL_BLOCKING_WAIT": "0"}, {}, "E413", Severity.WARNING, "TORCH_NCCL_BLOCKING_WAIT"),
    ("disagree-torch", {"NCCL_ASYNC_ERROR_HANDLING": "0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}, {}, "E414",
     Severity.ERROR, "so 1 is used"),
    ("disagree-max", {"NCCL_MAX_NCHANNELS": "8", "NCCL_MAX_CTAS": "16"}, {}, "E414", Severity.ERROR,
     "the lower value wins, so 8 is used"),
    ("disagree-min", {"NCCL_MIN_NCHANNELS": "4", "NCCL_MIN_CTAS": "8"}, {}, "E414", Severity.ERROR,
     "the higher value wins, so 8 is used"),
    ("debug-p2p-disable", {"NCCL_P2P_DISABLE": "1"}, {}, "E415", Severity.WARNING, "debugging-only"),
    ("debug-algo", {"NCCL_ALGO": "Ring"}, {}, "E415", Severity.WARNING, "debugging-only"),
    ("debug-shm", {"NCCL_SHM_DISABLE": "1"}, {}, "E415", Severity.WARNING, "debugging-only"),
    ("removed-ib-gdr", {"NCCL_IB_GDR_LEVEL": "0"}, {}, "E416", Severity.ERROR, "use NCCL_NET_GDR_LEVEL"),
    ("removed-cuda-support", {"NCCL_IB_CUDA_SUPPORT": "0"}, {}, "E416", Severity.ERROR, "no longer read"),
    ("removed-ll", {"NCCL_LL_THRESHOLD": "0"}, {"nccl_version": "2.18.1"}, "E416", Severity.ERROR, "since 2.5"),
    ("debug-level", {"NCCL_DEBUG": "DEBUG"}, {}, "E421", Severity.WARNING, "NCCL logs nothing"),
    ("debug-attn-old", {"NCCL_DEBUG": "ATTN"}, {"nccl_version": "2.21.5"}, "E421", Severity.WARNING, "since NCCL 2.32"),
    ("debug-attn-unknown", {"NCCL_DEBUG": "attn"}, {}, "E421", Severity.WARNING, "version unknown"),
    ("subsys", {"NCCL_DEBUG_SUBSYS": "INIT,NETWORK"}, {}, "E422", Severity.WARNING, "'NETWORK' is not a subsystem"),
    ("subsys-caret", {"NCCL_DEBUG_SUBSYS": "INIT,^COLL"}, {}, "E422", Severity.WARNING, "only at the start"),
    ("debug-info", {"NCCL_DEBUG": "INFO"}, {}, "E423", Severity.WARNING, "left on"),
    ("debug-trace", {"NCCL_DEBUG": "trace"}, {}, "E423", Severity.WARNING, "every call traced"),
    ("debug-file-shared", {"NCCL_DEBUG": "WARN", "NCCL_DEBUG_FILE": "/shared/nccl.log", **MULTI}, {}, "E424",
     Severity.WARNING, "no %p or %h"),
    ("debug-file-tilde", {"NCCL_DEBUG": "WARN", "NCCL_DEBUG_FILE": "~/nccl.%h.%p"}, {}, "E424", Severity.WARNING,
     "'~' is not expanded"),
    ("debug-file-unused", {"NCCL_DEBUG_FILE": "/tmp/n.%h.%p"}, {}, "E424", Severity.INFO, "the file is not used"),
    ("async-0", {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}, {}, "E501", Severity.WARNING, "never cleaned up"),
    ("async-2", {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "2"}, {}, "E501", Severity.WARNING, "keeps running"),
    ("async-old-0", {"NCCL_ASYNC_ERROR_HANDLING": "0"}, {}, "E501", Severity.WARNING, "NCCL_ASYNC_ERROR_HANDLING=0"),
    ("blocking", {"TORCH_NCCL_BLOCKING_WAIT": "1"}, {}, "E502", Severity.WARNING, "wait() blocks the host"),
    ("blocking-old", {"NCCL_BLOCKING_WAIT": "true"}, {}, "E502", Severity.WARNING, "NCCL_BLOCKING_WAIT is on"),
    ("heartbeat-zero", {"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "0"}, {}, "E503", Severity.ERROR, "as soon as"),
    ("heartbeat-small", {"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "5"}, {}, "E503", Severity.WARNING, "stall of 5 s"),
    ("monitoring-off", {"TORCH_NCCL_ENABLE_MONITORING": "0"}, {}, "E504", Severity.WARNING, "never detected"),
    ("detail", {"TORCH_DISTRIBUTED_DEBUG": "detail"}, {}, "E505", Severity.WARNING, "2.4x"),
    ("desync", {"TORCH_NCCL_DESYNC_DEBUG": "1"}, {}, "E506", Severity.WARNING, "store write"),
    ("timing-old", {"NCCL_ENABLE_TIMING": "1"}, {}, "E506", Severity.WARNING, "start event"),
    ("fr-off", {"TORCH_FR_BUFFER_SIZE": "0"}, {}, "E507", Severity.WARNING, "disables the Flight Recorder"),
    ("fr-off-old", {"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}, {}, "E507", Severity.WARNING, "disables"),
    ("fr-no-dump", {"TORCH_NCCL_DUMP_ON_TIMEOUT": "false"}, {}, "E507", Severity.WARNING, "not dumped"),
    ("gloo-equals", {"GLOO_SOCKET_IFNAME": "=eth0"}, {}, "E601", Severity.ERROR, "exact names only"),
    ("gloo-caret", {"GLOO_SOCKET_IFNAME": "^docker0"}, {}, "E601", Severity.ERROR, "NCCL syntax"),
    ("gloo-blanks", {"GLOO_SOCKET_IFNAME": "eth0, eth1"}, {}, "E601", Severity.ERROR, "blanks"),
    ("gloo-one-char", {"GLOO_SOCKET_IFNAME": "e"}, {}, "E601", Severity.ERROR, "ignored"),
    ("gloo-empty-entry", {"GLOO_SOCKET_IFNAME": "eth0,"}, {}, "E601", Severity.ERROR, "empty entry"),
    ("gloo-missing", {"GLOO_SOCKET_IFNAME": "eth9"}, HOST, "E602", Severity.ERROR, "no interface 'eth9'"),
    ("gloo-prefix", {"GLOO_SOCKET_IFNAME": "eth"}, HOST, "E602", Severity.ERROR, "did you mean eth0"),
    ("gloo-down", {"GLOO_SOCKET_IFNAME": "ib0"}, HOST, "E603", Severity.ERROR, "ib0 is down"),
    ("gloo-loopback", {"GLOO_SOCKET_IFNAME": "lo", **MULTI}, HOST, "E603", Severity.ERROR, "127.0.0.1"),
    ("gloo-several", {"GLOO_SOCKET_IFNAME": "eth0,eth1"}, HOST, "E604", Severity.WARNING, "same number"),
    ("gloo-transport-case", {"GLOO_DEVICE_TRANSPORT": "tcp"}, {}, "E605", Severity.ERROR, "case-sensitive"),
    ("gloo-transport-other", {"GLOO_DEVICE_TRANSPORT": "ibverbs"}, {}, "E605", Severity.ERROR, "not a Gloo transport"),
    ("gloo-tls", {"GLOO_DEVICE_TRANSPORT": "TCP_TLS"}, {}, "E606", Severity.ERROR, "GLOO_DEVICE_TRANSPORT_TCP_TLS_PKEY"),
    ("master-empty", {"MASTER_ADDR": "", "WORLD_SIZE": "2"}, {}, "E701", Severity.ERROR, "empty"),
    ("master-unset", {"RANK": "3", "WORLD_SIZE": "8", "MASTER_PORT": "29500"}, {}, "E701", Severity.ERROR, "not set"),
    ("master-localhost", {**MULTI, "MASTER_ADDR": "localhost"}, {}, "E702", Severity.ERROR, "spans several nodes"),
    ("master-127", {**MULTI, "MASTER_ADDR": "127.0.1.1"}, {}, "E702", Severity.ERROR, "local host"),
    ("master-wildcard", {**MULTI, "MASTER_ADDR": "0.0.0.0"}, {}, "E702", Severity.ERROR, "local host"),
    ("master-slurm", {"MASTER_ADDR": "::1", "SLURM_JOB_NUM_NODES": "2"}, {}, "E702", Severity.ERROR, "local host"),
    ("master-port-in-addr", {"MASTER_ADDR": "10.0.0.1:29500"}, {}, "E703", Severity.ERROR, "bare host name"),
    ("master-scheme", {"MASTER_ADDR": "tcp://10.0.0.1"}, {}, "E703", Severity.ERROR, "bare host name"),
    ("port-high", {"MASTER_PORT": "70000"}, {}, "E704", Severity.ERROR, "not a TCP port"),
    ("port-zero", {"MASTER_PORT": "0"}, {}, "E704", Severity.ERROR, "random port"),
    ("port-low", {"MASTER_PORT": "80"}, {}, "E705", Severity.WARNING, "privileged"),
    ("rank-high", {"RANK": "8", "WORLD_SIZE": "8", "MASTER_ADDR": "h"}, {}, "E706", Severity.ERROR, "RANK=8 is outside"),
    ("local-rank-high", {"LOCAL_RANK": "4", "LOCAL_WORLD_SIZE": "4"}, {}, "E706", Severity.ERROR, "LOCAL_RANK=4"),
    ("rank-negative", {"RANK": "-1", "WORLD_SIZE": "8", "MASTER_ADDR": "h"}, {}, "E706", Severity.ERROR, "RANK=-1"),
    ("world-zero", {"WORLD_SIZE": "0", "MASTER_ADDR": "h"}, {}, "E706", Severity.ERROR, "at least 1"),
    ("local-world-big", {"LOCAL_WORLD_SIZE": "16", "WORLD_SIZE": "8", "MASTER_ADDR": "h"}, {}, "E706",
     Severity.ERROR, "larger than WORLD_SIZE"),
]

# (id, env, keyword arguments, code that must NOT be reported)
NEGATIVE: list[tuple[str, dict[str, str], dict[str, Any], str]] = [
    ("ifname-exact-ok", {"NCCL_SOCKET_IFNAME": "=eth0"}, HOST, "E101"),
    ("ifname-host-unknown", {"NCCL_SOCKET_IFNAME": "eth9"}, {}, "E101"),
    ("ifname-usable", {"NCCL_SOCKET_IFNAME": "=eth0,eth1"}, HOST, "E102"),
    ("ifname-loopback-single-node", {"NCCL_SOCKET_IFNAME": "lo", **SINGLE}, HOST, "E102"),
    ("ifname-exact-not-broad", {"NCCL_SOCKET_IFNAME": "=eth0"}, HOST, "E103"),
    ("hca-exact-not-broad", {"NCCL_IB_HCA": "=mlx5_1"}, HOST, "E103"),
    ("prefix-unique", {"NCCL_SOCKET_IFNAME": "eth1"}, HOST, "E103"),
    ("list-good-order", {"NCCL_SOCKET_IFNAME": "^=docker0"}, HOST, "E104"),
    ("list-good-exact", {"NCCL_SOCKET_IFNAME": "=eth0,eth1"}, {}, "E104"),
    ("hca-good", {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}, HOST, "E105"),
    ("hca-host-unknown", {"NCCL_IB_HCA": "mlx5_8"}, {}, "E105"),
    ("hca-port-ok", {"NCCL_IB_HCA": "=mlx5_0:1"}, HOST, "E106"),
    ("hca-rail-new-nccl", {"NCCL_IB_HCA": "=mlx5_0::0:0"}, {"nccl_version": "2.30.7"}, "E106"),
    ("hca-active", {"NCCL_IB_HCA": "=mlx5_0"}, HOST, "E107"),
    ("psk-long", {"NCCL_PSK": "x" * 44}, {}, "E108"),
    ("ib-enabled", {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0"}, {}, "E109"),
    ("ib-timeout-ok", {"NCCL_IB_TIMEOUT": "22"}, {}, "E201"),
    ("ib-timeout-31", {"NCCL_IB_TIMEOUT": "31"}, {}, "E201"),
    ("ib-timeout-finite", {"NCCL_IB_TIMEOUT": "20"}, {}, "E202"),
    ("ib-unset", {"NCCL_DEBUG": "WARN"}, {}, "E203"),
    ("ib-timeout-bad-no-summary", {"NCCL_IB_TIMEOUT": "60"}, {}, "E203"),
    ("ib-retry-ok", {"NCCL_IB_RETRY_CNT": "7"}, {}, "E204"),
    ("gid-old-nccl", {"NCCL_IB_GID_INDEX": "3"}, {"nccl_version": "2.18.3"}, "E205"),
    ("gid-auto", {"NCCL_IB_GID_INDEX": "-1"}, {"nccl_version": "2.21.5"}, "E205"),
    ("gid-in-table", {"NCCL_IB_GID_INDEX": "3"}, {**HOST, "nccl_version": "2.18.3"}, "E206"),
    ("socks-ok", {"NCCL_SOCKET_NTHREADS": "4", "NCCL_NSOCKS_PERTHREAD": "4"}, {}, "E301"),
    ("buffsize-ok", {"NCCL_BUFFSIZE": "8388608"}, {}, "E302"),
    ("channels-ok", {"NCCL_MIN_CTAS": "8", "NCCL_MAX_CTAS": "16"}, {"nccl_version": "2.25.1"}, "E303"),
    ("nthreads-ok", {"NCCL_NTHREADS": "256"}, {}, "E304"),
    ("p2p-nvl", {"NCCL_P2P_LEVEL": "NVL"}, {}, "E305"),
    ("level-name-ok", {"NCCL_P2P_LEVEL": "SYS"}, {}, "E306"),
    ("level-name-not-int", {"NCCL_P2P_LEVEL": "PXB"}, {}, "E307"),
    ("int-ok", {"NCCL_IB_TIMEOUT": "22", "NCCL_IB_DISABLE": "1"}, {}, "E401"),
    ("torch-bool-ok", {"TORCH_NCCL_BLOCKING_WAIT": "True", "TORCH_NCCL_ENABLE_MONITORING": "y"}, {}, "E401"),
    ("range-ok", {"NCCL_IB_SL": "3", "NCCL_CROSS_NIC": "0"}, {}, "E402"),
    ("decimal", {"NCCL_IB_TIMEOUT": "10", "NCCL_IB_SL": "0"}, {}, "E403"),
    ("octal-same", {"NCCL_IB_TIMEOUT": "00"}, {}, "E403"),
    ("choice-ok", {"NCCL_SOCKET_FAMILY": "AF_INET", "TORCH_DISTRIBUTED_DEBUG": "info"}, {}, "E404"),
    ("known-names", {"NCCL_VERSION": "2.21.5", "NCCL_TESTS_MIN_BW": "10", "NCCL_GRAPH_DUMP_FILE": "/tmp/g",
                     "GLOO_SOMETHING_ELSE_ENTIRELY": "1", "NCCL_DEBUG": "WARN"}, {}, "E411"),
    ("ib-timeout-is-real", {"NCCL_IB_TIMEOUT": "22"}, {}, "E412"),
    ("channels-old-nccl", {"NCCL_MAX_NCHANNELS": "8"}, {"nccl_version": "2.16.5"}, "E413"),
    ("torch-alias-old-torch", {"NCCL_ASYNC_ERROR_HANDLING": "1"}, {"torch_version": "2.1.2"}, "E413"),
    ("agree", {"NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}, {}, "E414"),
    ("debug-default-value", {"NCCL_P2P_DISABLE": "0", "NCCL_SHM_DISABLE": "0"}, {}, "E415"),
    ("debug-dropped-for-error", {"NCCL_P2P_LEVEL": "0"}, {}, "E415"),
    ("removed-still-read", {"NCCL_IB_CUDA_SUPPORT": "1"}, {"nccl_version": "2.3.7"}, "E416"),
    ("debug-ok", {"NCCL_DEBUG": "info"}, {}, "E421"),
    ("debug-attn-new", {"NCCL_DEBUG": "ATTN"}, {"nccl_version": "2.32.1"}, "E421"),
    ("subsys-ok", {"NCCL_DEBUG_SUBSYS": "^COLL,CALL,bootstrap"}, {}, "E422"),
    ("debug-warn", {"NCCL_DEBUG": "WARN"}, {}, "E423"),
    ("debug-file-ok", {"NCCL_DEBUG": "WARN", "NCCL_DEBUG_FILE": "/shared/nccl.%h.%p.log", **MULTI}, {}, "E424"),
    ("debug-file-stderr", {"NCCL_DEBUG": "WARN", "NCCL_DEBUG_FILE": "/dev/stderr", **MULTI}, {}, "E424"),
    ("async-1", {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}, {}, "E501"),
    ("async-3-wins", {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3", "NCCL_ASYNC_ERROR_HANDLING": "0"}, {}, "E501"),
    ("blocking-off", {"TORCH_NCCL_BLOCKING_WAIT": "0"}, {}, "E502"),
    ("heartbeat-ok", {"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "480"}, {}, "E503"),
    ("heartbeat-monitor-off", {"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "5", "TORCH_NCCL_ENABLE_MONITORING": "0"}, {},
     "E503"),
    ("monitoring-on", {"TORCH_NCCL_ENABLE_MONITORING": "1"}, {}, "E504"),
    ("detail-off", {"TORCH_DISTRIBUTED_DEBUG": "INFO"}, {}, "E505"),
    ("desync-off", {"TORCH_NCCL_DESYNC_DEBUG": "0", "TORCH_NCCL_ENABLE_TIMING": "0"}, {}, "E506"),
    ("fr-on", {"TORCH_FR_BUFFER_SIZE": "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}, {}, "E507"),
    ("gloo-ok", {"GLOO_SOCKET_IFNAME": "eth0"}, HOST, "E601"),
    ("gloo-present", {"GLOO_SOCKET_IFNAME": "eth0"}, HOST, "E602"),
    ("gloo-host-unknown", {"GLOO_SOCKET_IFNAME": "eth9"}, {}, "E602"),
    ("gloo-usable", {"GLOO_SOCKET_IFNAME": "eth0", **MULTI}, HOST, "E603"),
    ("gloo-loopback-single", {"GLOO_SOCKET_IFNAME": "lo", **SINGLE}, HOST, "E603"),
    ("gloo-one", {"GLOO_SOCKET_IFNAME": "eth1"}, HOST, "E604"),
    ("gloo-transport-ok", {"GLOO_DEVICE_TRANSPORT": "UV"}, {}, "E605"),
    ("gloo-tls-ok", {"GLOO_DEVICE_TRANSPORT": "TCP_TLS", "GLOO_DEVICE_TRANSPORT_TCP_TLS_PKEY": "/k.pem",
                     "GLOO_DEVICE_TRANSPORT_TCP_TLS_CERT": "/c.pem"}, {}, "E606"),
    ("master-set", MULTI, {}, "E701"),
    ("single-process", {"RANK": "0", "WORLD_SIZE": "1"}, {}, "E701"),
    ("master-localhost-single-node", {**SINGLE, "MASTER_ADDR": "localhost"}, {}, "E702"),
    ("master-name", {"MASTER_ADDR": "node-01.cluster", "MASTER_PORT": "29500"}, {}, "E703"),
    ("master-ipv6", {"MASTER_ADDR": "fd00::1"}, {}, "E703"),
    ("port-ok", {"MASTER_PORT": "29500"}, {}, "E704"),
    ("port-1024", {"MASTER_PORT": "1024"}, {}, "E705"),
    ("ranks-ok", {**MULTI}, {}, "E706"),
]


@pytest.mark.parametrize(("env", "kw", "code", "severity", "text"),
                         [case[1:] for case in POSITIVE], ids=[case[0] for case in POSITIVE])
def test_rule_reports(env: dict[str, str], kw: dict[str, Any], code: str, severity: Severity, text: str) -> None:
    findings = run(env, **kw)
    matching = of(findings, code)
    assert matching, f"{code} not reported; got {[(f.code, f.title) for f in findings]}"
    assert any(f.severity is severity and text in f.title for f in matching), [
        (f.severity.label, f.title) for f in matching]
    for finding in matching:
        assert finding.fix and finding.why, finding
        assert get_rule(finding.code) is not None


@pytest.mark.parametrize(("env", "kw", "code"), [case[1:] for case in NEGATIVE], ids=[case[0] for case in NEGATIVE])
def test_rule_stays_silent(env: dict[str, str], kw: dict[str, Any], code: str) -> None:
    findings = run(env, **kw)
    assert not of(findings, code), [(f.code, f.title) for f in findings]


ENV_FILE_CODES = {"E431", "E432", "E433", "E434", "E435"}  # tested in test_envfile.py


def test_every_env_code_has_a_positive_and_a_negative_case() -> None:
    codes = {r.code for r in all_rules() if r.code.startswith("E")} - ENV_FILE_CODES
    assert codes == {case[3] for case in POSITIVE}
    assert codes == {case[3] for case in NEGATIVE}


def test_the_five_variables_of_the_issue() -> None:
    env = {"NCCL_IB_TIMEOUT": "60", "NCCL_IB_RETRY_CNT": "32", "NCCL_TIMEOUT": "1800", "NCCL_P2P_LEVEL": "0",
           "NCCL_SOCKET_IFNAME": "eth9"}
    interfaces = [i for i in IFS if i.name != "eth9"]
    findings = validate_env(env, interfaces=interfaces, sources=dict.fromkeys(env, "environment"))
    by_code = {f.code: f for f in findings}
    assert {"E101", "E201", "E204", "E305", "E412"} <= set(by_code)
    timeout = by_code["E201"]
    assert "outside 0-31" in timeout.title and "becomes 28" in timeout.title
    assert timeout.evidence["mlx5_uses"] == 28 and timeout.evidence["source"] == "environment"
    assert timeout.fix.startswith("export NCCL_IB_TIMEOUT=22")
    retry = by_code["E204"]
    assert "outside 0-7" in retry.title and "0 retries" in retry.title and retry.evidence["mlx5_uses"] == 0
    assert retry.fix.startswith("export NCCL_IB_RETRY_CNT=7")
    assert "init_process_group(timeout=...)" in by_code["E412"].title
    assert "timedelta(seconds=1800)" in by_code["E412"].fix and "unset NCCL_TIMEOUT" in by_code["E412"].fix
    assert "means LOC" in by_code["E305"].title and "disabled entirely" in by_code["E305"].title
    ifname = by_code["E101"]
    assert ifname.severity is Severity.ERROR and "eth9" in ifname.title
    assert "eth0" in ifname.title and ifname.evidence["interfaces"] == [i.name for i in interfaces]
    assert all(f.severity is Severity.ERROR for f in by_code.values() if f.code in {"E101", "E201", "E204", "E305", "E412"})


def test_sources_shape_evidence_and_fix() -> None:
    env = {"NCCL_IB_TIMEOUT": "60", "NCCL_DEBUG": "INFO", "NCCL_IB_RETRY_CNT": "32"}
    sources = {"NCCL_IB_TIMEOUT": "/etc/nccl.conf", "NCCL_DEBUG": "env-file:job.sh", "NCCL_IB_RETRY_CNT": "environment"}
    findings = {f.code: f for f in validate_env(env, sources=sources)}
    assert findings["E201"].evidence["source"] == "/etc/nccl.conf"
    assert findings["E201"].fix.startswith("in /etc/nccl.conf: NCCL_IB_TIMEOUT=22")
    assert findings["E423"].fix == "in job.sh: export NCCL_DEBUG=WARN"
    assert findings["E204"].fix.startswith("export NCCL_IB_RETRY_CNT=7")


def test_secrets_never_appear() -> None:
    env = {"NCCL_PSK": "hunter2-short", "NCCL_API_TOKEN": "tok-123456789", "NCCL_SOCKT_PASSWORD": "pw-98765"}
    findings = validate_env(env)
    assert of(findings, "E108")
    text = repr([f.to_json() for f in findings])
    for secret in env.values():
        assert secret not in text


def test_unknown_host_facts_skip_host_rules() -> None:
    env = {"NCCL_SOCKET_IFNAME": "eth9", "NCCL_IB_HCA": "mlx5_8", "GLOO_SOCKET_IFNAME": "eth9", "NCCL_IB_GID_INDEX": "7"}
    codes = {f.code for f in validate_env(env, nccl_version="2.18.3")}
    assert not codes & {"E101", "E102", "E103", "E105", "E107", "E206", "E602", "E603"}
    from syncdoctor.checks import skipped_checks

    assert len(skipped_checks(interfaces_known=False, ib_ports_known=False)) == 5
    assert skipped_checks(interfaces_known=True, ib_ports_known=True) == []


def test_clean_environment_has_no_findings() -> None:
    env = {"PATH": "/usr/bin", "NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
           "GLOO_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "WARN", **MULTI}
    assert validate_env(env, interfaces=IFS, ib_ports=PORTS, nccl_version="2.23.4", torch_version="2.13.0") == []


def test_findings_are_sorted_and_deduplicated() -> None:
    findings = validate_env({"NCCL_IB_TIMEOUT": "60", "NCCL_DEBUG": "INFO", "NCCL_IB_TIMEOUT_X": "1"})
    severities = [int(f.severity) for f in findings]
    assert severities == sorted(severities, reverse=True)
    assert len({f.dedup_key() for f in findings}) == len(findings)


# -- the readers that say what NCCL/PyTorch will do --------------------------------------------------------
@pytest.mark.parametrize(("text", "value", "converted", "rest"), [
    ("22", 22, True, ""), ("010", 8, True, ""), ("08", 0, True, "8"), ("0x1f", 31, True, ""), ("0x", 0, True, "x"),
    ("  -3z", -3, True, "z"), ("yes", 0, False, "yes"), ("", 0, False, ""), ("+7", 7, True, ""), ("1.5", 1, True, ".5"),
    ("\t12\n", 12, True, "\n"), ("0X1G", 1, True, "G"),
])
def test_c_strtoll(text: str, value: int, converted: bool, rest: str) -> None:
    parsed = c_strtoll(text)
    assert (parsed.value, parsed.converted, parsed.rest) == (value, converted, rest)


def test_c_strtoll_overflow_clamps() -> None:
    parsed = c_strtoll("9" * 30)
    assert parsed.overflow and parsed.value == 2**63 - 1
    assert c_strtoll("-" + "9" * 30).value == -(2**63)


@pytest.mark.parametrize(("text", "value", "error"), [
    ("12", 12, None), (" 12x", 12, None), ("x", None, "invalid_argument"), ("", None, "invalid_argument"),
    ("99999999999", None, "out_of_range"), ("-5", -5, None), ("010", 10, None),
])
def test_cpp_stoi(text: str, value: int | None, error: str | None) -> None:
    result = cpp_stoi(text)
    assert (result.value, result.error) == (value, error)


@pytest.mark.parametrize(("text", "flag"), [("1", True), ("YES", True), ("t", True), ("False", False), ("n", False),
                                            ("on", None), (" 1", None), ("2", None), ("", None)])
def test_torch_bool(text: str, flag: bool | None) -> None:
    assert torch_bool(text) is flag


@pytest.mark.parametrize(("text", "level", "how"), [
    ("0", "LOC", "integer"), ("1", "PIX", "integer"), ("4", "SYS", "integer"), ("9", "SYS", "integer"),
    ("08", "LOC", "integer"), ("NVL", "NVL", "name"), ("nvl", None, "ignored"), ("", None, "ignored"),
    ("-1", None, "ignored"), ("PXN", "PXN", "name"),
])
def test_nccl_level(text: str, level: str | None, how: str) -> None:
    reading = nccl_level(text)
    assert (reading.level, reading.how) == (level, how)


def test_nccl_list_matching() -> None:
    prefix = parse_nccl_list("mlx5_1")
    assert prefix.matches("mlx5_1") and prefix.matches("mlx5_10") and not prefix.matches("mlx5_2")
    exact = parse_nccl_list("=mlx5_1:1")
    assert exact.matches("mlx5_1", 1) and not exact.matches("mlx5_10", 1) and not exact.matches("mlx5_1", 2)
    exclude = parse_nccl_list("^=docker0,lo")
    assert exclude.exclude and exclude.exact and not exclude.matches("docker0") and exclude.matches("docker1")
    assert parse_nccl_list("mlx5_0::0:0").entries[0].port is None
    assert parse_nccl_list(",:1,eth0").skipped == ("", ":1")


@pytest.mark.parametrize(("text", "version"), [("2.21.5", (2, 21, 5)), ("2.21.5+cuda12.4", (2, 21, 5)),
                                               ("(2, 19, 3)", (2, 19, 3)), ("2.13.0+cpu", (2, 13, 0)), ("2.4", (2, 4, 0)),
                                               ("", None), ("unknown", None)])
def test_parse_version(text: str, version: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == version


def test_table_is_consistent() -> None:
    for name, variable in VARIABLES.items():
        assert lookup(name) is variable and variable.summary
        assert variable.owner in {"NCCL", "PyTorch", "Gloo", "launcher"}
        if variable.alias_of or variable.replaced_by:
            assert (variable.alias_of or variable.replaced_by) in VARIABLES
        if variable.minimum is not None and variable.maximum is not None:
            assert variable.minimum <= variable.maximum
    assert VARIABLES["NCCL_IB_TIMEOUT"].default_for("2.23.4") == "20"
    assert VARIABLES["NCCL_IB_TIMEOUT"].default_for("2.14.3") == "18"
    assert VARIABLES["NCCL_IB_TIMEOUT"].default_for("2.12.12") == "14"
    assert VARIABLES["NCCL_IB_GID_INDEX"].default_for("2.20.5") == "0"


# -- bad input never raises -------------------------------------------------------------------------------
_NAMES = [*sorted(VARIABLES), "NCCL_TIMEOUT", "NCCL_SOCKET_IFACE", "TORCH_NCCL_X", "GLOO_SOCKET_IFACE", "nccl_debug"]
_VALUES = st.one_of(st.text(max_size=40), st.text(alphabet=string.digits + "xX+- .,:^=\t", max_size=12),
                    st.integers(-(2**70), 2**70).map(str), st.sampled_from(["", " ", "0", "08", "0x", "=^", "^=,", ":"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env=st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=12),
       host=st.booleans(), nccl=st.sampled_from([None, "2.18.3", "2.21.5", "2.30.7", "garbage"]))
def test_random_values_never_raise(env: dict[str, str], host: bool, nccl: str | None) -> None:
    kw: dict[str, Any] = {"interfaces": IFS, "ib_ports": PORTS} if host else {}
    findings = validate_env(env, nccl_version=nccl, torch_version=nccl, **kw)
    assert isinstance(findings, list)
    for finding in findings:
        assert isinstance(finding, Finding) and finding.title and get_rule(finding.code) is not None


@pytest.mark.parametrize("name", sorted(VARIABLES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(st.text(max_size=30), st.text(alphabet=string.digits + "x+-. ,:^=", max_size=8)))
def test_every_variable_accepts_any_text(name: str, value: str) -> None:
    for kw in ({}, {"interfaces": IFS, "ib_ports": PORTS, "nccl_version": "2.21.5"}):
        findings = validate_env({name: value}, **kw)
        assert all(isinstance(f, Finding) and get_rule(f.code) for f in findings)
