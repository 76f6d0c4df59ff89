"""The detector's rules, one module per family: pure functions ``(Context) -> list[Condition]`` over one
cycle's snapshot. Pure: no I/O.

=====================  ====================================================================  ============
module                 what it tells apart                                                    codes
=====================  ====================================================================  ============
:mod:`.waits`          who waits for whom across groups and send/recv; the root is late,      W101, W103,
                       gone, dead, a cycle, or a hung collective                              W108
:mod:`.hang`           every side entered and it does not complete: a mismatch or the         W102, W104
                       transport
:mod:`.dead`           a rank or a whole host that stopped reporting                          W105, W106
:mod:`.drift`          different collective counts at the same training step                  W103
=====================  ====================================================================  ============

Chronic stragglers (W107) are in :mod:`syncdoctor.watch.straggler`, which the monitor's fast path uses too.
:mod:`.edges` builds the wait-for graph that :mod:`.waits` reads; :mod:`.context` is what every rule reads.
"""

from syncdoctor.watch.rules.context import Condition, Context
from syncdoctor.watch.rules.dead import dead_conditions
from syncdoctor.watch.rules.drift import drift_conditions
from syncdoctor.watch.rules.waits import wait_conditions

__all__ = ["Condition", "Context", "dead_conditions", "drift_conditions", "wait_conditions"]
