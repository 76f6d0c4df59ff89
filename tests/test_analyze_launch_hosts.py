"""A launch command pasted above its output, naming the one host its processes ran on (``mpirun --host node1 …``,
``srun -w node001 …``, ``#SBATCH --nodelist=node001``): the lines below it that name no place ran there
(syncdoctor.analyze.lastlook.launched_on, pure; then the whole analysis on real pastes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyze_helpers import diagnose_paste
from syncdoctor.analyze.lastlook import launched_on


def test_a_launch_that_names_one_host_places_its_output_up_to_the_next_command() -> None:
    text = ("shell$ mpirun -n 1 --host node1.example.com mpi_hello\n"
            "prted: error while loading shared libraries: libimf.so\n"
            "...more error messages...\n"
            "\n"
            "shell$ mpirun -n 1 -H node2:4 mpi_hello\n"
            "prted: error while loading shared libraries: libpgcc.so\n")
    assert launched_on(text) == [(2, 4, "node1.example.com"), (6, 6, "node2")]
    # Slurm's node list, a batch script's directive, a prompt ending a command's output
    assert launched_on("[root@login1 ~]# srun -N 1 -w node001 --container-image=x bash run.sh\n\nerror\n")[0][2] == "node001"
    assert launched_on("#SBATCH --nodelist=gpu-17\npython train.py\n")[0][2] == "gpu-17"
    assert launched_on("$ srun -w node3 hostname\nnode3\nuser@login:~$ ls\nfile\n") == [(2, 2, "node3")]


@pytest.mark.parametrize("command", [
    "mpirun -np 8 --host node1,node2 python train.py",  # two hosts: whose is a line is unknown
    "srun -w node[01-04] python train.py",  # a Slurm range
    "srun -w $SLURM_JOB_NODELIST python train.py",  # a variable
    "python -m vllm.entrypoints.openai.api_server --host 0.0.0.0",  # no launcher: a server's address
    "torchrun --nnodes 2 --rdzv-endpoint node1:29500 train.py",  # the store, not where a line ran
    "srun -H python train.py",  # srun's -H is --hold: no host after it
    "mpirun -w node1 python train.py",  # Slurm's option, not mpirun's
])
def test_what_is_no_launch_on_one_host(command: str) -> None:
    assert launched_on(command + "\nRuntimeError: boom\n") == []


# real: NVIDIA/pyxis (r75c): srun on one named node, the container's start failing there
_PYXIS = """\
[root@bright88 mxnet]# srun --export="NCCL_DEBUG=INFO" -N 1 -G 4 --ntasks-per-node=4 -w node001 \
--container-image=192.168.61.4:5000#/cosmoflow-nvidia:0.4 bash ./run_and_time.sh



pyxis: imported docker image: 192.168.61.4:5000#/cosmoflow-nvidia:0.4
slurmstepd: error: pyxis: container start failed with error code: 1
slurmstepd: error: pyxis:     [ERROR] Command not found: nvidia-container-cli, see https://github.com/NVIDIA/libnvidia-container
"""


def test_the_failure_below_a_launch_on_one_node_is_that_node_s(tmp_path: Path) -> None:
    top = diagnose_paste(tmp_path, _PYXIS).hypotheses[0]
    assert top.culprit_hosts == ("node001",), (top.title, top.culprit_hosts)
    # the same output under a launch on two nodes names none of them
    top = diagnose_paste(tmp_path, _PYXIS.replace("-w node001", "-w node001,node002")).hypotheses[0]
    assert top.culprit_hosts == (), (top.title, top.culprit_hosts)
    # and Open MPI's daemon that could not load its libraries on the one host mpirun named
    top = diagnose_paste(tmp_path, "shell$ mpirun -n 1 --host node1.example.com mpi_hello\nprted: error while loading "
                                   "shared libraries: libimf.so: cannot open shared object file: No such file or "
                                   "directory\n").hypotheses[0]
    assert top.culprit_hosts == ("node1.example.com",) and "on node1.example.com" in top.title, top.title
