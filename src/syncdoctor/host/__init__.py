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
- ``interfaces`` (pure): which interface holds an address, the addresses in ``getifaddrs`` order.
- ``route``: the interface and source address used to reach MASTER_ADDR; ``reach``: TCP connect to the master.

Facts only: what NCCL and Gloo will make of them under an environment, and the rules that judge them, are in
:mod:`syncdoctor.checks` (``predict``, ``preflight``, ``host_rules``), which imports this package, never the
other way round.
"""
