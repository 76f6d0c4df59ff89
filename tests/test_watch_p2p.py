"""Point-to-point traffic: the pure ledger, and the patched torch calls in a real 3-rank gloo job.

The job checks what the wait-for graph relies on: sends and receives are counted per peer (through
``send``, ``isend``, ``batch_isend_irecv`` and ``send_object_list``, with ``P2POp``s built from references
taken before the watcher started), asynchronous ones complete when their work does, and gloo's Flight
Recorder status, which numbers point-to-point calls among its operations, reads as the same collective
count on every rank (it read 4 on the senders and 6 on a middle stage for the same barrier before).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from syncdoctor.watch.p2p import P2PLedger
from syncdoctor.watch.records import P2PProgress


def test_ledger_counts_pending_and_stall_per_channel() -> None:
    ledger = P2PLedger()
    first = ledger.enter(10.0, "0", 2, "recv")
    second = ledger.enter(11.0, "0", 2, "recv")
    ledger.enter(11.5, "0", 3, "send")
    ledger.complete("0", 3, "send", 1)
    assert (first, second) == (1, 2)
    progress = {(p.group, p.peer, p.kind): p for p in ledger.progress(14.0)}
    assert progress[("0", 2, "recv")] == P2PProgress("0", 2, "recv", 2, 0, 4.0)  # the oldest pending one
    assert progress[("0", 3, "send")] == P2PProgress("0", 3, "send", 1, 1, None)
    ledger.complete("0", 2, "recv", 2)  # out of order: #1 is still pending
    assert {p.peer: p for p in ledger.progress(14.0)}[2].completed == 0
    ledger.complete("0", 2, "recv", 1)
    assert {p.peer: p for p in ledger.progress(14.0)}[2] == P2PProgress("0", 2, "recv", 2, 2, None)


def test_ledger_polls_asynchronous_works() -> None:
    class Work:
        def __init__(self) -> None:
            self.done = False

        def is_completed(self) -> bool:
            return self.done

    class Broken:
        def is_completed(self) -> bool:
            raise RuntimeError("the peer went away")

    ledger = P2PLedger()
    work = Work()
    ledger.track("0", 1, "send", ledger.enter(0.0, "0", 1, "send"), work)
    ledger.track("0", 2, "recv", ledger.enter(0.0, "0", 2, "recv"), Broken())
    before = ledger.changes
    ledger.poll()
    pending = {p.peer: p.pending for p in ledger.progress(1.0)}
    assert pending == {1: True, 2: False} and ledger.changes > before  # a failed work waits for nothing
    work.done = True
    ledger.poll()
    assert not any(p.pending for p in ledger.progress(1.0))


def test_ledger_stays_bounded() -> None:
    ledger = P2PLedger(max_channels=4, max_pending=3, max_ids=16)
    for peer in range(10):
        ledger.complete("0", peer, "send", ledger.enter(0.0, "0", peer, "send"))
    assert len(ledger.progress(0.0)) == 4 and ledger.dropped == 6
    for _ in range(5):
        ledger.track("0", 99, "recv", ledger.enter(0.0, "0", 99, "recv"), object())
    assert len(ledger._pending) == 3
    ledger.note_op_ids("0", range(1, 100))
    assert len(ledger._ids["0"].ids) <= 16 and ledger.p2p_ops("0") == 99


def test_operation_ids_become_collective_counts() -> None:
    """gloo numbers every call; a collective's id minus the point-to-point ids below it is its count."""
    ledger = P2PLedger()
    assert ledger.collectives_up_to("0", 7) == 7  # nothing noted: the backend does not number them
    # ops: 1 collective, 2 recv, 3 send, 4 barrier, 5 recv, 6 send, 7 barrier
    ledger.note_op_ids("0", [2, 3])
    ledger.note_op_ids("0", [5, 6])
    assert [ledger.collectives_up_to("0", i) for i in (1, 4, 7)] == [1, 2, 3]
    ledger.forget_ids_below("0", 4)  # every later reading asks about ids above the last completed one
    assert [ledger.collectives_up_to("0", i) for i in (4, 7)] == [2, 3] and ledger.p2p_ops("0") == 4


@given(st.lists(st.booleans(), min_size=1, max_size=80), st.data())
def test_collective_counts_match_a_replay(calls: list[bool], data: st.DataObject) -> None:
    """Any interleaving of collectives (True) and point-to-point calls: each collective's id maps to its count,
    also after the ids below a completed collective were folded away."""
    ledger = P2PLedger()
    count = 0
    expected: dict[int, int] = {}
    for op_id, collective in enumerate(calls, start=1):
        if collective:
            count += 1
            expected[op_id] = count
        else:
            ledger.note_op_ids("0", [op_id])
    completed = data.draw(st.sampled_from([0, *expected]))
    ledger.forget_ids_below("0", completed)
    assert ledger.p2p_ops("0") == calls.count(False)
    for op_id, value in expected.items():
        if op_id >= completed:
            assert ledger.collectives_up_to("0", op_id) == value


JOB = r'''
import json, os, time
import torch, torch.distributed as dist
from torch.distributed import isend as isend_taken_early
import syncdoctor.watch as watch
dist.init_process_group("gloo")
watcher = watch.start(monitor="off")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.zeros(8)
for it in range(3):                                  # a pipeline: recv from the stage before, send on
    if rank > 0: dist.recv(t, rank - 1)
    if rank < world - 1: dist.send(t, rank + 1)
    dist.barrier()
if rank == 0:                                         # isend/irecv with a wait, and objects
    dist.isend(t, 1).wait()
    dist.send_object_list([{"a": 1}], dst=2)
elif rank == 1:
    dist.irecv(t, 0).wait()
elif rank == 2:
    out = [None]; dist.recv_object_list(out, src=0)
peer = (rank + 1) % world, (rank - 1) % world         # a ring through batch_isend_irecv
ops = [dist.P2POp(isend_taken_early, t, peer[0]), dist.P2POp(dist.irecv, torch.zeros(8), peer[1])]
for work in dist.batch_isend_irecv(ops): work.wait()
dist.all_reduce(t)
time.sleep(0.5)                                       # gloo retires the last entry asynchronously
watcher._sample_now()
readings = watcher.source.readings()
print("OUT " + json.dumps({"source": watcher.source.name, "readings": readings,
      "p2p": [list(c) for c in watcher.p2p.progress(time.monotonic())]}), flush=True)
dist.destroy_process_group()
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_real_gloo_job_counts_p2p_and_agrees_on_collective_counts(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    script = tmp_path / "job.py"
    script.write_text(JOB)
    port, world = str(_free_port()), 3
    procs = [
        subprocess.Popen(
            [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                     OMP_NUM_THREADS="1"),
        )
        for r in range(world)
    ]
    outs = [proc.communicate(timeout=120)[0] for proc in procs]
    results = []
    for rank, out in enumerate(outs):
        line = next((x for x in out.splitlines() if x.startswith("OUT ")), None)
        assert line is not None and procs[rank].returncode == 0, out
        results.append(json.loads(line[4:]))
    assert {r["source"] for r in results} == {"flight_recorder"}
    # 3 barriers and an all_reduce on every rank, whatever each did point-to-point in between
    assert [tuple(r["readings"]["0"]) for r in results] == [(4, 4)] * 3
    channels = [{(c[1], c[2]): (c[3], c[4], c[5]) for c in r["p2p"]} for r in results]
    # rank 0: 3 pipeline sends + isend + 2 object sends (size, then data) to 1 and 2, and the ring's send
    assert channels[0][(1, "send")] == (5, 5, None) and channels[0][(2, "send")] == (2, 2, None)
    assert channels[0][(2, "recv")] == (1, 1, None)  # the ring's receive from rank 2
    assert channels[1][(0, "recv")] == (5, 5, None) and channels[1][(2, "send")] == (4, 4, None)
    assert channels[2][(1, "recv")] == (4, 4, None) and channels[2][(0, "recv")] == (2, 2, None)
    assert channels[2][(0, "send")] == (1, 1, None)
