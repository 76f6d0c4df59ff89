"""Finding pages of the watch area (W codes): what ``syncdoctor.watch`` reports while a job runs.

Each rule is registered at import time; the watcher's events carry these codes
(:mod:`syncdoctor.watch.events`) and become findings with ``Event.to_finding()``.
"""

from __future__ import annotations

from syncdoctor.kb.findings import Severity
from syncdoctor.kb.registry import Rule, register

__all__ = [
    "CHRONIC_STRAGGLER",
    "COLLECTIVE_COUNT_DRIFT",
    "COLLECTIVE_MISMATCH",
    "DEAD_RANK",
    "HOST_UNREACHABLE",
    "LATE_RANK",
    "RANK_LEFT_EARLY",
    "TRANSPORT_HANG",
    "WATCH_DEGRADED",
]

_FR = "PyTorch Flight Recorder: torch/csrc/distributed/c10d/FlightRecorder.hpp (pg_status, entries)"
_WATCH_DOC = "docs/watch.md in syncdoctor"

LATE_RANK = register(
    Rule(
        code="W101",
        name="late-rank",
        severity=Severity.WARNING,
        summary="Ranks wait, directly or through a chain of other waiting ranks, for ranks that never arrived.",
        what=(
            "Every rank publishes, once a second, the last collective sequence number it entered and completed "
            "in each process group (read from the Flight Recorder status, or from patched collectives) and its "
            "sends and receives per peer. Members inside collective #S wait for the members that have not "
            "entered it; a rank inside a receive waits for the peer that has not posted the matching send. "
            "The watcher follows these waits across groups and messages to where they end: a rank that waits "
            "for nobody. That rank is late, never one that is itself waiting (in a tensor x data parallel job "
            "the data-parallel peers of a rank that waits in its tensor-parallel pair wait for the pair's late "
            "rank). The event names it with the chain of waits that leads to it and every rank held up; its "
            "own watcher thread captures the Python stack of its main thread, so the event says where it is "
            "(e.g. in load_batch), and measures it: spinning (CPU in the same functions, no I/O) or stuck (no "
            "CPU, the same stack, no I/O). A rank that is working alone instead (its stack changes, or it moves "
            "bytes: a checkpoint, an evaluation) or in a solo phase is W110, not this, until its bound."
        ),
        why=(
            "A collective completes only when every member has entered it. The others wait silently until the "
            "PyTorch timeout (10 minutes for NCCL, 30 for gloo) and then fail with messages such as 'Timed out "
            "waiting 1800000ms for recv operation' that name neither the late rank nor the cause."
        ),
        example=(
            "syncdoctor W101 late-rank warning: rank 3 (host1, pid 4242) has not entered all_reduce "
            "float32[1048576] #57 of group 0; ranks 0-2 have waited 10.4 s for it; it is in load_batch "
            "(train.py:88)\n"
            "syncdoctor W101 late-rank warning: rank 5 (host1, pid 12077) has not entered all_reduce float[256] "
            "#6 of group 3; ranks 0-4,6-7 have waited 3.0 s for it: ranks 0,2,6 wait in all_reduce float[256] #6 "
            "of group 5 for rank 4, which waits in all_reduce float[256] #6 of group 3 for rank 5; ranks 1,3,7 "
            "wait in all_reduce float[256] #6 of group 6 for rank 5; it is in load_batch (shapes.py:117)"
        ),
        fix=(
            "Look at the function named in the event on the late rank: data loading, checkpoint saving or "
            "evaluation done on one rank only, a slower machine, or a rank stuck on I/O. Move the one-rank work "
            "off the critical path (do it on every rank, or asynchronously), or fix the slow host."
        ),
        references=(_FR, _WATCH_DOC),
    )
)

COLLECTIVE_MISMATCH = register(
    Rule(
        code="W102",
        name="collective-mismatch",
        severity=Severity.ERROR,
        summary="Ranks of a group called different collectives (op, sizes or dtypes) at the same sequence number.",
        what=(
            "Every member entered collective #S and none completed it. Each waiting rank records what it "
            "called at #S (from the Flight Recorder entries, read once on suspicion, or from the patched "
            "call): op name, tensor sizes and dtypes. When they differ, the ranks in the minority are named "
            "with both signatures."
        ),
        why=(
            "Mismatched collectives never complete (or, worse, complete with corrupted data when sizes happen to "
            "fit). From outside it looks exactly like a network hang: every rank is inside a collective and "
            "none progresses."
        ),
        example=(
            "syncdoctor W102 collective-mismatch confirmed: rank 1 (host0, pid 311) called broadcast float32[1000] "
            "as collective #5 of group 0 while ranks 0,2-3 called all_reduce float32[1000]"
        ),
        fix=(
            "Find the branch that differs between ranks (a rank-dependent `if`, an exception swallowed on one "
            "rank, a different model or batch shape on one rank) and make every rank issue the same collectives "
            "in the same order with the same shapes."
        ),
        references=(_FR, "torch.distributed.flight_recorder fr_trace: COLLECTIVE_TYPE_MISMATCH, SIZE_OR_SYNTAX_MISMATCH"),
    )
)

COLLECTIVE_COUNT_DRIFT = register(
    Rule(
        code="W103",
        name="collective-count-drift",
        severity=Severity.ERROR,
        summary="Ranks took different paths: different collective counts at the same step, or ranks that wait "
                "for each other (a deadlock).",
        what=(
            "At each training step marker (an optimizer step, seen through a global optimizer hook, or an "
            "explicit `syncdoctor.watch.step(i)`), each rank records the sequence number it has reached in "
            "each group. When members disagree at the same step, a rank skipped or added a collective. The "
            "same code names a cycle of waits (a deadlock): ranks that wait for each other through different "
            "groups or messages, e.g. two groups called in opposite orders on two ranks, a rank that skipped "
            "a collective and waits in the next one of another group, or a pipeline stage that skipped a send. "
            "The ranks named are those that wait for the most others of the cycle (the ones that went ahead); "
            "the chain of the cycle is in the event."
        ),
        why=(
            "After a skipped collective, every later collective of that rank pairs with the wrong partner "
            "collective on the others: same-shaped all_reduces silently mix gradients of different steps, and "
            "the job hangs or fails at the first shape difference or at the end."
        ),
        example=(
            "syncdoctor W103 collective-count-drift confirmed: rank 1 (host0, pid 311) had entered 1 fewer "
            "collective than ranks 0,2-3 in group 0 by step 5\n"
            "syncdoctor W103 collective-count-drift confirmed: rank 1 (host0, pid 11117) never entered all_reduce "
            "float[256] #26 of group 6, where ranks 3,5,7 wait for it, and waits in all_reduce float[1] #26 of "
            "group 0, which they have not entered: the ranks took different paths (a skipped collective or "
            "message); deadlock for 3.5 s"
        ),
        fix=(
            "Find the rank-dependent control flow in that step (a collective inside `if rank == ...`, an "
            "early `continue` on a rank whose batch was empty, a caught exception) and make every rank take it."
        ),
        references=(_WATCH_DOC,),
    )
)

TRANSPORT_HANG = register(
    Rule(
        code="W104",
        name="transport-hang",
        severity=Severity.WARNING,
        summary="Every rank of a group entered the same collective and it does not complete.",
        what=(
            "Every member of the group entered collective #S with the same signature (op, sizes, dtypes), "
            "every member still reports, and #S has not completed for longer than the warning threshold."
        ),
        why=(
            "Nobody is late and nobody called something else: the data does not flow. The cause is the "
            "network or the transport (a cut or flapping link, a wrong interface, an MTU black hole, a firewall "
            "that lets the control connection through but not the data), not the training code. With NCCL "
            "the collective also waits for the GPU work queued before it on the stream: a kernel that never "
            "finishes (a hung GPU, an Xid error) looks the same from the host (seen on an H200: a kernel "
            "spinning ahead of an all_reduce gave W104 after 3 s, before PyTorch's 5 s watchdog)."
        ),
        example=(
            "syncdoctor W104 transport-hang warning: every rank of group 0 (0-3) entered all_reduce "
            "float32[4194304] #812 and it has not completed for 10.2 s"
        ),
        fix=(
            "Run `syncdoctor probe` between the hosts of the group; check NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME "
            "point at the interface that carries the data, the MTU matches end to end, and the links are up; "
            "with NCCL, look at the GPUs of the group too (nvidia-smi, Xid errors in dmesg)."
        ),
        references=(_WATCH_DOC, "syncdoctor probe (docs/probe.md)"),
    )
)

DEAD_RANK = register(
    Rule(
        code="W105",
        name="dead-rank",
        severity=Severity.ERROR,
        summary="A rank stopped reporting: killed, crashed without an exception, frozen, or cut off.",
        what=(
            "Each rank's watcher publishes a heartbeat every interval. When a rank's heartbeat has not moved for "
            "the dead threshold (measured on the monitor's clock), the rank is reported with what it was doing "
            "last. A rank on the same host reads the silent process's state: 'stopped' (SIGSTOP, a debugger), "
            "'gone' (SIGKILL, OOM killer). A frozen process freezes its watcher too, which is why only that "
            "state tells it apart from a dead one. When the first rank of a gloo job dies of an exception, it "
            "waits briefly to name the rank that vanished without one."
        ),
        why=(
            "The other ranks wait for the dead one in their next collective until the timeout (NCCL), or fail "
            "at once with 'Connection closed by peer' (gloo) without saying which rank died first."
        ),
        example=(
            "syncdoctor W105 dead-rank confirmed: rank 3 (host1, pid 4242) stopped reporting 10.3 s ago: its "
            "process is gone (killed, OOM-killed or crashed without an exception); ranks 0-2 wait for it in "
            "all_reduce #58 of group 0"
        ),
        fix=(
            "Check the host of the rank: `dmesg` for the OOM killer, the job scheduler's log for a kill, the "
            "rank's own log for a native crash. Requeue the job without the node if it is faulty."
        ),
        references=(_WATCH_DOC,),
    )
)

HOST_UNREACHABLE = register(
    Rule(
        code="W106",
        name="host-unreachable",
        severity=Severity.ERROR,
        summary="All ranks of one host stopped reporting together while the other hosts still report.",
        what=(
            "Every rank of the host went silent within a couple of intervals of each other, while ranks on other "
            "hosts still publish: the host went down or its network link to the job's store was cut."
        ),
        why=(
            "The other hosts' ranks wait in their next collective for ranks that can no longer send; with a cut "
            "link, TCP does not notice and they wait until the PyTorch timeout."
        ),
        example=(
            "syncdoctor W106 host-unreachable confirmed: host host1: all its ranks (2-3) stopped reporting "
            "together 10.1 s ago while other hosts still report"
        ),
        fix=(
            "Check the host and its link (`ip link`, the switch port, `syncdoctor probe` from another host). "
            "Requeue the job without the host."
        ),
        references=(_WATCH_DOC,),
    )
)

CHRONIC_STRAGGLER = register(
    Rule(
        code="W107",
        name="chronic-straggler",
        severity=Severity.WARNING,
        summary="One rank arrives last at most collectives and the others keep waiting for it.",
        what=(
            "Each rank measures how long it waits in each collective (sampled every 50 ms). For every "
            "collective with a measurable wait, the member that waited least arrived last. Over a sliding "
            "window, a rank that arrived last at most such collectives is reported with its lag percentiles "
            "and the time the others spent waiting for it."
        ),
        why=(
            "Data parallel training runs at the speed of the slowest rank: every step, every other rank idles "
            "for the straggler's lag. The job works, only slower; nothing in PyTorch reports it."
        ),
        example=(
            "syncdoctor W107 chronic-straggler warning: rank 3 (host1) arrived last at 47 of 50 collectives "
            "with a measurable wait in the last 120 s; lag p50 0.31 s, p90 0.45 s; the others spent 43.2 s "
            "waiting for it"
        ),
        fix=(
            "Compare the straggler's host with the others (CPU frequency and throttling, other processes, "
            "data loader workers, a slower GPU or link, NUMA placement); balance its data or move the job off it."
        ),
        references=(_WATCH_DOC,),
    )
)

RANK_LEFT_EARLY = register(
    Rule(
        code="W108",
        name="rank-left-early",
        severity=Severity.ERROR,
        summary="A rank exited, or died of an exception, while the others still needed it in a collective.",
        what=(
            "The rank said goodbye (clean exit, destroy_process_group, or an uncaught exception whose text is "
            "reported) before entering the collective its group waits in. When the first rank of a job to fail "
            "died of an exception that is not a peer's connection error, it is named as the origin."
        ),
        why=(
            "The others wait for a rank that will never come (NCCL) or fail with connection errors (gloo); "
            "the first real error is buried in one rank's log among N secondary ones."
        ),
        example=(
            "syncdoctor W108 rank-left-early confirmed: rank 2 (host1, pid 515) failed first: ValueError: "
            "bad batch"
        ),
        fix=(
            "Read the named rank's error and fix it; make every rank leave the training loop at the same step "
            "(agree on the number of steps or batches, e.g. with an all_reduce of a stop flag)."
        ),
        references=(_WATCH_DOC,),
    )
)

WATCH_DEGRADED = register(
    Rule(
        code="W109",
        name="watch-degraded",
        severity=Severity.INFO,
        summary="The watcher cannot see everything: the store is unreachable or a rank's progress is unknown.",
        what=(
            "The monitor could not reach the job's store, or records are missing or unreadable, or progress "
            "comes from the hooks fallback (collectives called through references taken before start(), and "
            "DDP models whose comm hook is not ours, are then invisible)."
        ),
        why="A blind watcher must say so, so that silence is not read as health.",
        example="syncdoctor W109 watch-degraded info: store 10.0.0.1:29500 unreachable (Connection refused); retrying",
        fix=(
            "Check that --master HOST:PORT is the job's MASTER_ADDR:MASTER_PORT and reachable from here; "
            "call syncdoctor.watch.start() before building DDP models and before importing collectives by name."
        ),
        references=(_WATCH_DOC,),
    )
)

SOLO_WORK = register(
    Rule(
        code="W110",
        name="solo-work",
        severity=Severity.INFO,
        summary="The others wait for a rank that is working alone (a checkpoint, an evaluation, data preparation): "
                "expected, for up to a bound.",
        what=(
            "Every late rank is either in a solo phase (marked with syncdoctor.watch.solo(), or recognised on its "
            "stack: torch.save, torch.distributed.checkpoint, safetensors, transformers/Lightning/DeepSpeed "
            "checkpoints) or working, as its own watcher measured over the last few seconds: its stack changes "
            "(by function) while it uses CPU, or it reads or writes bytes. A rank that spins (CPU in the same "
            "functions, no I/O), is stuck (no CPU, the same stack, no I/O), stopped or dead is not: that is W101 "
            "or W105 as ever."
        ),
        why=(
            "Rank 0 saving, evaluating or logging while the others wait at the next barrier or broadcast is the "
            "commonest pattern in training scripts, and a healthy one: a watcher that confirmed it as a hang "
            "would end good jobs in fail-fast mode. The event is never confirmed while the work lasts less than "
            "its bound (the phase's up_to_s, else busy_after_s, 1800 s by default); past it the rank is late "
            "(W101) and confirmed confirm_after_s - warn_after_s later."
        ),
        example=(
            "syncdoctor W110 solo-work info: rank 0 (host0, pid 4242) is working alone (working: torch.save, "
            "87% CPU, 540 MB/s read or written) (in save_checkpoint (train.py:88)); ranks 1-3 have waited 12.1 s "
            "for it in barrier #5 of group 0: expected for up to 1800 s"
        ),
        fix=(
            "Nothing, if the work is meant to be there. To bound it, mark it: `with syncdoctor.watch.solo("
            "'checkpoint', up_to_s=900):`; to spare the others the wait, let every rank save its shard "
            "(torch.distributed.checkpoint) or move the work off the critical path (async checkpointing)."
        ),
        references=(_WATCH_DOC,),
    )
)
