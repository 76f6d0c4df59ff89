"""The training loop's own end, as PyTorch Lightning prints it. Pure: no I/O.

``\\`Trainer.fit\\` stopped: \\`max_epochs=3\\` reached.`` (also ``max_steps``; written by rank 0 only,
``rank_zero_info`` in the fit loop). What comes after it on a rank is end-of-run code (saving, a last metric,
a closing barrier). A collective that times out there is one the ranks disagree on
(:mod:`syncdoctor.analyze.rules.desync`).

Lightning's ``initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8`` (1.x; ``Initializing distributed: …`` from 1.6), one
line per process as it joins: where two processes print the same global rank and others never do, the launcher
and the Trainer disagree on the number of nodes or tasks (:func:`syncdoctor.analyze.rules.progress.
rank_never_joined`). Its ``Multi-processing is handled by Slurm.`` says srun's tasks are the processes: the joining lines
of every rank are then in the job's one output, and ranks that never print theirs never started.

TensorFlow's note of the host whose GPU would not start (``cuda_diagnostics.cc:163] retrieving CUDA diagnostic
information for host: ywlhk13``, printed right after ``failed call to cuInit``): that process's host, which a Horovod
or MPI tag on the line ties to its rank.

Other frameworks' end-of-training lines (the HF Trainer's ``Training completed. Do not forget to share your
model``) are not read: each line read needs a scanner anchor of its own, a pass over every input
(docs/performance.md), and no pasted failure of that shape was found.
"""

from __future__ import annotations

import re

from syncdoctor.analyze.model import Event, Kind, Origin
from syncdoctor.analyze.parsers.base import Line, make_event

__all__ = ["KEYWORDS", "parse"]

KEYWORDS = ("fit` stopped", "GLOBAL_RANK: ", "diagnostic information for host", "handled by Slurm")

_DONE = re.compile(r"`?Trainer\.fit`? stopped: `?(?P<why>max_(?:epochs|steps|time)=[^`\s]*)`? reached")


_JOINING = re.compile(r"[Ii]nitializing (?:ddp|distributed|world)(?: \(\w+\))?: GLOBAL_RANK: (?P<rank>\d+), "
                      r"MEMBER: (?P<member>\d+)/(?P<world>\d+)")


# Lightning's note that Slurm started the processes (``Multi-processing is handled by Slurm.``, its SLURMEnvironment):
# srun's tasks, all writing to the job's one output, so the joining lines of every rank are in that file
_SLURM_HANDLED = "Multi-processing is handled by Slurm"


_TF_HOST = re.compile(r"retrieving CUDA diagnostic information for host: (?P<host>[A-Za-z0-9][\w.\-]{0,252})\s*$")


def parse(line: Line) -> list[Event]:
    tf_host = _TF_HOST.search(line.body)
    if tf_host is not None:
        return [make_event(Kind.PROCESS_MAP, line, origin=Origin(host=tf_host["host"]), data={"source": "tensorflow"})]
    if _SLURM_HANDLED in line.body:
        return [make_event(Kind.PROCESS_MAP, line, data={"source": "lightning-slurm"})]
    joining = _JOINING.search(line.body)
    if joining is not None:
        return [make_event(Kind.PROCESS_MAP, line, data={
            "source": "lightning", "global_rank": int(joining["rank"]), "world_size": int(joining["world"])})]
    found = _DONE.search(line.body)
    if found is None:
        return []
    return [make_event(Kind.TRAINING_DONE, line, data={"why": found.group("why")})]
