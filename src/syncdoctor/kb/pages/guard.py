"""Finding pages of the guard area (G): start-up checks made inside the training job by
``syncdoctor.guard.assert_ready()`` right after ``init_process_group``.

Each rule is registered at import time and used as ``RULE.finding(...)`` by :mod:`syncdoctor.guard`.
"""

from __future__ import annotations

from syncdoctor.kb.findings import Severity
from syncdoctor.kb.registry import Rule, register

__all__ = [
    "ALL_REDUCE_FAILED",
    "ALL_REDUCE_WRONG",
    "GUARD_SLOW",
    "INTERFACE_SETTING_ON_SOME_HOSTS",
    "INVALID_SETTING_ON_RANK",
    "RANK_MISSING",
    "SETTING_DIFFERS",
    "TIMEOUT_DIFFERS",
    "VERSIONS_DIFFER",
]

_GUARD_DOC = "docs/guard.md (syncdoctor.guard.assert_ready)"
_INIT_DOC = "https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group"
_NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"

SETTING_DIFFERS = register(
    Rule(
        code="G101",
        name="setting-differs-between-ranks",
        severity=Severity.ERROR,
        summary="A setting that every rank must share has different values on different ranks.",
        what=(
            "Each rank posts its NCCL_*, GLOO_* and TORCH_* settings to the job's store; the guard compares "
            "the variables that change the protocol, the algorithm, the transport or PyTorch's own behaviour "
            "(NCCL_PROTO, NCCL_ALGO, NCCL_IB_DISABLE, NCCL_NET, NCCL_BUFFSIZE, NCCL_IB_TIMEOUT, "
            "TORCH_DISTRIBUTED_DEBUG, TORCH_NCCL_BLOCKING_WAIT...) and names the hosts whose value differs "
            "from the majority (from rank 0's host when there is no majority). Unset counts as a value."
        ),
        why=(
            "Ranks that disagree on the protocol, algorithm or transport set up incompatible connections: "
            "the first collective hangs or fails with an unhelpful transport error. "
            "TORCH_DISTRIBUTED_DEBUG=DETAIL on some ranks only wraps their process groups with extra "
            "fingerprint collectives the others never issue, which hangs the job. The variable is usually "
            "exported by a node's profile, a container image or a launcher script on one host only."
        ),
        example=(
            "host1 exports NCCL_PROTO=LL in its container image; host0 does not: `G101 NCCL_PROTO differs "
            "between ranks: host1 (ranks 2, 3) has NCCL_PROTO=LL, host0 (ranks 0, 1) leaves it unset`."
        ),
        fix=(
            "Set the variable to the same value on every host (put it in the launcher's environment, not a "
            "node's profile), or unset it everywhere."
        ),
        references=(_NCCL_ENV, _GUARD_DOC),
    )
)

INTERFACE_SETTING_ON_SOME_HOSTS = register(
    Rule(
        code="G102",
        name="interface-setting-on-some-hosts",
        severity=Severity.WARNING,
        summary="An interface or HCA selection (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, NCCL_IB_HCA) is set "
        "on some hosts only.",
        what=(
            "The values of these variables may legitimately differ between hosts (interface names differ), "
            "so the guard only checks that every host sets them or none does, and names the hosts without."
        ),
        why=(
            "A host without the setting falls back to its own choice: Gloo uses the address its hostname "
            "resolves to (often 127.0.1.1), NCCL picks an interface by its own preference order (docker0, "
            "a management network). Connections between hosts that chose differently hang or fail at the "
            "first collective, which for NCCL is after init_process_group returned."
        ),
        example=(
            "host0 sets NCCL_SOCKET_IFNAME=eth1, host1 sets nothing and NCCL picks its eth0 on another "
            "subnet: the first all_reduce hangs."
        ),
        fix=(
            "Set the same kind of selection on every host, e.g. `export NCCL_SOCKET_IFNAME=eth1` "
            "(`syncdoctor recommend` derives the list from a probe of the links)."
        ),
        references=(_NCCL_ENV, "https://pytorch.org/docs/stable/distributed.html#choosing-the-network-interface-to-use"),
    )
)

VERSIONS_DIFFER = register(
    Rule(
        code="G103",
        name="versions-differ-between-ranks",
        severity=Severity.ERROR,
        summary="Ranks run different torch, NCCL, CUDA or Python versions.",
        what=(
            "Compares the torch, NCCL (torch.cuda.nccl.version()), CUDA and Python versions every rank "
            "reports. torch and NCCL must be identical (error); CUDA and Python should be (warning)."
        ),
        why=(
            "Different torch releases can issue different internal collectives (DDP's start-up checks, "
            "object collectives' size exchange) and different NCCL releases can pick incompatible protocols "
            "or fail the connection handshake, so mixed nodes hang or fail at the first collective. Python "
            "minor versions differ in pickle details used by the object collectives."
        ),
        example="host1 runs an older image: torch 2.12.1 on ranks 2-3, 2.13.0 on ranks 0-1.",
        fix="Run the same image or environment on every node (pin torch and its CUDA/NCCL build).",
        references=(_GUARD_DOC,),
    )
)

INVALID_SETTING_ON_RANK = register(
    Rule(
        code="G104",
        name="invalid-setting-on-rank",
        severity=Severity.ERROR,
        summary="Environment validation (the E rules of `syncdoctor check`) found a problem on some ranks.",
        what=(
            "Every rank runs syncdoctor's environment validation on its own environment and host interfaces "
            "(the same rules as `syncdoctor check`); the guard collects the findings and says on which hosts "
            "and ranks each occurs. Its severity is the worst of the underlying E findings."
        ),
        why=(
            "A malformed or out-of-range value (NCCL_IB_TIMEOUT=60, an interface that does not exist on "
            "that host) is usually present on the one node that is configured differently, and it shows up "
            "only when that node's ranks communicate: minutes into the job, as a hang."
        ),
        example=(
            "`G104 E-code on host1 (ranks 2, 3): NCCL_IB_TIMEOUT=60 is out of range (0-31)`: the value was "
            "copied from a forum answer into one node's profile."
        ),
        fix="Apply the fix of the underlying E finding on the hosts named (`syncdoctor explain <E code>`).",
        references=(_GUARD_DOC,),
    )
)

TIMEOUT_DIFFERS = register(
    Rule(
        code="G105",
        name="timeout-differs-between-ranks",
        severity=Severity.WARNING,
        summary="The process group's collective timeout is not the same on every rank.",
        what=(
            "Reads the timeout of the group's backend (the `timeout=` given to init_process_group or "
            "new_group, or PyTorch's default) on every rank and compares them."
        ),
        why=(
            "On a hang the rank with the shortest timeout aborts first and the others report 'connection "
            "closed by peer' about it, pointing at the wrong rank; ranks with a longer timeout keep the job "
            "allocated for nothing."
        ),
        example="ranks 2-3 pass timeout=timedelta(minutes=5) from an older launcher; ranks 0-1 use 30 min.",
        fix=(
            "Pass the same `timeout=` to init_process_group on every rank (`syncdoctor recommend` computes "
            "one from measurements)."
        ),
        references=(_INIT_DOC,),
    )
)

RANK_MISSING = register(
    Rule(
        code="G201",
        name="rank-missing-at-guard",
        severity=Severity.ERROR,
        summary="Some ranks did not reach the guard within the wait limit.",
        what=(
            "Each rank posts its facts to the job's store and waits for the others up to the guard's wait "
            "limit; ranks whose facts never arrived are named."
        ),
        why=(
            "A rank that does not reach the line after init_process_group is stuck or dead (a hung import, a "
            "slow filesystem, a crash before the guard) or does not call the guard at all; a collective "
            "issued now would wait for it until the process group's timeout."
        ),
        example="ranks 6 and 7 (host3) did not post within 60 s: host3 still loads its dataset index.",
        fix=(
            "Look at the named ranks' logs; make sure every rank calls assert_ready() the same number of times; "
            "raise `wait_s` if the ranks legitimately start far apart."
        ),
        references=(_GUARD_DOC,),
    )
)

ALL_REDUCE_WRONG = register(
    Rule(
        code="G202",
        name="check-all-reduce-wrong-result",
        severity=Severity.ERROR,
        summary="The guard's check all_reduce returned wrong values.",
        what=(
            "After the consistency checks pass, every rank all_reduces a known tensor (rank-dependent values "
            "whose sum is known exactly) and compares every element with the expected result."
        ),
        why=(
            "A wrong sum means silent corruption: a broken transport, mismatched settings the guard could not "
            "see, or faulty hardware. Training would continue on corrupted gradients."
        ),
        example="element 17 of the check tensor is 3.0 instead of 6.0 on rank 2.",
        fix="Run `syncdoctor probe` to find the link or node that corrupts data; exclude it from the job.",
        references=(_GUARD_DOC,),
    )
)

ALL_REDUCE_FAILED = register(
    Rule(
        code="G203",
        name="check-all-reduce-failed",
        severity=Severity.ERROR,
        summary="The guard's check all_reduce raised or did not complete within the guard's limit.",
        what="The check all_reduce is issued asynchronously and waited for with a time limit.",
        why=(
            "The first collective is where NCCL connects the ranks: an interface that does not route between "
            "hosts, a firewall or a wrong HCA shows up here as an error or a hang."
        ),
        example="`Timed out waiting 5000ms for recv operation to complete` on ranks 0-1.",
        fix="Run `syncdoctor check` on every host and `syncdoctor probe` between them.",
        references=(_GUARD_DOC,),
    )
)

GUARD_SLOW = register(
    Rule(
        code="G204",
        name="guard-over-budget",
        severity=Severity.WARNING,
        summary="The guard took longer than its budget once every rank had arrived.",
        what=(
            "Measures the guard's own time on each rank, excluding the wait for other ranks to arrive, and "
            "compares it with `budget_s` (default 2 s)."
        ),
        why=(
            "A slow guard is itself a symptom: a slow store (an overloaded TCPStore on a large job) or a "
            "slow first collective (NCCL connection set-up over a poor link)."
        ),
        example="the check all_reduce took 3.2 s of a 2 s budget on 2 hosts.",
        fix="Look at the phase times in the finding's evidence; run `syncdoctor probe` if the all_reduce dominates.",
        references=(_GUARD_DOC,),
    )
)
