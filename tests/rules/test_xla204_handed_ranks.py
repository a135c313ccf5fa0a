"""XLA204's launcher around an entry handed torchrun's rank read in the main guard (held-out
52: ``rank = int(os.environ["RANK"])`` then ``train(args, rank, world_size)``): accepted as it
is, every replica would get the parent's rank, so the review reason says so and what to take
instead."""

from tests.helpers import findings, src

HANDED = src("""
import os
import torch
import torch.distributed as dist


def train(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = torch.nn.Linear(4, 1).cuda(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        model(torch.randn(8, 4).cuda(rank)).sum().backward()
        opt.step()


if __name__ == "__main__":
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    train(rank, world_size)
""")


def test_a_rank_handed_to_the_entry_is_named_in_the_review():
    (f,) = findings(HANDED, "XLA204")
    assert f.fix is not None and not f.fix.safe
    assert "would be handed to every replica alike" in f.fix.review_reason
    assert "xr.global_ordinal()" in f.fix.review_reason


def test_a_rank_read_the_entry_is_not_handed_is_not_called_handed():
    code = HANDED.replace("    train(rank, world_size)\n", "    print(rank)\n    train(0, 1)\n")
    (f,) = findings(code, "XLA204")
    assert "handed to every replica" not in (f.fix.review_reason if f.fix else f.message)
