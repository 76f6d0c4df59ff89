"""Catch collective hangs in CI: run the training step on 2 real ranks (gloo on 127.0.0.1, CPU only)."""

import pytest
import torch
import torch.distributed as dist

from syncdoctor.testing.symmetry import assert_collectives_symmetric


def train_step(steps: int) -> None:
    """Stand-in for your step: anything that issues torch.distributed collectives from Python."""
    torch.manual_seed(dist.get_rank())
    model = torch.nn.Linear(8, 1)
    for _ in range(steps):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        for param in model.parameters():
            dist.all_reduce(param.grad)
        if loss.item() > 100.0:  # a rank-dependent branch around a collective: the classic hang
            dist.barrier()
        dist.all_reduce(loss.detach().reshape(1))


def test_every_rank_issues_the_same_collectives():
    # Fails with the first divergence (rank, op, sizes, call site) instead of hanging.
    assert_collectives_symmetric(train_step, world_size=2, args=(3,), timeout=60)


@pytest.mark.distributed(world_size=2, timeout=60)
def test_ranks_agree_on_the_metric():
    # Runs on 2 ranks; a hang fails after 60 s naming the rank, its stack and the collective.
    metric = torch.tensor([float(dist.get_rank())])
    dist.all_reduce(metric)
    assert metric.item() == 1.0
