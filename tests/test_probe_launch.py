"""Who a process is, from the environments launchers really set: a Kubeflow PyTorchJob pod (with and without
torchrun inside), Open MPI's mpirun. (torchrun and srun: tests/test_probe_config.py; the real srun and mpirun
on lab hosts: tests/test_launchers_lab.py.)"""

from __future__ import annotations

import pytest

from syncdoctor.errors import UsageError
from syncdoctor.probe.launch import resolve_launch

# What the Kubeflow training operator sets in the pods of a PyTorchJob with one master and two workers
# (its pytorch controller: MASTER_ADDR is the master replica's service, RANK the replica's global index).
PYTORCHJOB_WORKER_1 = {
    "MASTER_ADDR": "llama-ft-master-0", "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": "2",
    "PYTHONUNBUFFERED": "1", "HOSTNAME": "llama-ft-worker-1",
}
# The same job with an elasticPolicy (or nprocPerNode): the operator sets torchrun's PET_* defaults, and the
# workers torchrun starts see torchrun's variables (here: node 1 of 3, its local rank 3 of 4).
PYTORCHJOB_ELASTIC_WORKER = {
    "PET_NNODES": "3", "PET_NPROC_PER_NODE": "4", "PET_NODE_RANK": "1", "PET_MASTER_ADDR": "llama-ft-master-0",
    "PET_MASTER_PORT": "23456", "MASTER_ADDR": "llama-ft-master-0", "MASTER_PORT": "23456", "RANK": "7",
    "WORLD_SIZE": "12", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "3",
    "TORCHELASTIC_RUN_ID": "llama-ft", "TORCHELASTIC_USE_AGENT_STORE": "True",
}
# What Open MPI 4.1's mpirun sets in rank 5 of `mpirun -np 8 --host a:4,b:4`, plus the two the job script adds.
OPENMPI_RANK_5 = {
    "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "OMPI_COMM_WORLD_NODE_RANK": "1", "OMPI_UNIVERSE_SIZE": "8",
    "MASTER_ADDR": "a", "MASTER_PORT": "29500",
}


def test_a_pytorchjob_pod_is_one_rank_of_the_env_launcher() -> None:
    info = resolve_launch(PYTORCHJOB_WORKER_1)
    assert (info.launcher, info.rank, info.world_size) == ("env", 2, 3)
    assert (info.local_rank, info.local_world_size, info.node_rank, info.nnodes) == (0, 1, 2, 3)
    assert (info.master_addr, info.master_port, info.agent_store) == ("llama-ft-master-0", 23456, False)


def test_a_pytorchjob_with_torchrun_inside_is_torchrun() -> None:
    info = resolve_launch(PYTORCHJOB_ELASTIC_WORKER)
    assert (info.launcher, info.rank, info.world_size) == ("torchrun", 7, 12)
    assert (info.local_rank, info.local_world_size, info.node_rank, info.nnodes) == (3, 4, 1, 3)
    assert info.agent_store and info.run_id == "llama-ft"


def test_an_open_mpi_rank_is_read_from_ompi_variables() -> None:
    info = resolve_launch(OPENMPI_RANK_5)
    assert (info.launcher, info.rank, info.world_size) == ("mpirun", 5, 8)
    assert (info.local_rank, info.local_world_size, info.node_rank, info.nnodes) == (1, 4, 1, 2)
    assert (info.master_addr, info.master_port) == ("a", 29500)


def test_torch_variables_win_over_open_mpi_ones() -> None:
    # a job script that maps OMPI_* to RANK/WORLD_SIZE itself: torch's own variables are the truth
    info = resolve_launch({**OPENMPI_RANK_5, "RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1",
                           "LOCAL_WORLD_SIZE": "4"})
    assert info.launcher == "env" and info.rank == 5


def test_open_mpi_without_a_master_address_says_what_to_set() -> None:
    env = {k: v for k, v in OPENMPI_RANK_5.items() if k != "MASTER_ADDR"}
    with pytest.raises(UsageError, match="under mpirun set MASTER_ADDR"):
        resolve_launch(env)


def test_a_malformed_open_mpi_variable_names_itself() -> None:
    with pytest.raises(UsageError, match="OMPI_COMM_WORLD_SIZE='eight' is not an integer"):
        resolve_launch({**OPENMPI_RANK_5, "OMPI_COMM_WORLD_SIZE": "eight"})
