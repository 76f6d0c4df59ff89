"""Host facts: what this machine has (interfaces, IB/RoCE ports, /dev/shm, memlock, names, versions).

``host.types`` holds the frozen records (pure); the readers in this package read ``/sys``, ``/proc`` and
the standard library under a configurable root so tests run on fake trees. A fact that cannot be read is
``None`` ("unknown"), never a guess.
"""
