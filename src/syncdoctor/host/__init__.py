"""Host facts: what this machine has (interfaces, IB/RoCE ports, /dev/shm, memlock, names, versions).

``host.types`` holds the frozen records (pure); the readers in this package read ``/sys``, ``/proc`` and
the standard library under a configurable root so tests run on fake trees. A fact that cannot be read is
``None`` ("unknown"), never a guess.

Modules (I/O unless marked pure):

- ``types`` (pure): HostFacts and its parts, RouteFacts, ReachFacts.
- ``sysfs``: network interfaces from /sys/class/net; ``addresses``: addresses via netlink or /proc/net.
- ``infiniband``: IB/RoCE ports and NCCL's RoCE GID auto-selection (the selection itself is pure).
- ``limits``: /dev/shm and memlock; ``names``: hostname resolution; ``versions``: torch/NCCL/CUDA/driver/GPUs.
- ``collect``: ``collect_host_facts(root)``, never raises.
- ``predict`` (pure): the interface NCCL's bootstrap and Gloo will advertise under an environment.
- ``route``: the interface and source address used to reach MASTER_ADDR; ``reach``: TCP connect to the master.
- ``preflight``: the host half of ``syncdoctor check`` (facts, predictions, route, reach, host findings).
"""
