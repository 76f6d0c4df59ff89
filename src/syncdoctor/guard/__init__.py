"""The start-up guard: call ``syncdoctor.guard.assert_ready()`` right after ``init_process_group``.

    import torch.distributed as dist
    import syncdoctor.guard

    dist.init_process_group("nccl")
    syncdoctor.guard.assert_ready()      # raises NotReadyError naming the bad rank(s) and host(s)

It validates every rank's environment, checks that the settings which must agree do agree across ranks
(exchanged through the job's store, not a collective), and times a check all_reduce whose result is
compared element by element. Budget: about 2 s on 2 hosts. Finding codes G1xx/G2xx
(``syncdoctor explain G101``). Importing this package does not import torch.
"""

from __future__ import annotations

from syncdoctor.guard.consistency import evaluate
from syncdoctor.guard.facts import RankFacts
from syncdoctor.guard.ready import GuardReport, NotReadyError, assert_ready

__all__ = ["GuardReport", "NotReadyError", "RankFacts", "assert_ready", "evaluate"]
