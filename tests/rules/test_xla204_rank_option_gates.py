"""The launcher fix's review reason names work gated on a rank option the XLA launcher never
sets (held-outs 156 and 157: ``--local_rank`` with ``default=-1``): ``== 0`` is never true under
torch_xla's launcher, so nothing is saved or logged; ``in [-1, 0]`` is true in every replica."""

from tests.helpers import findings, src

TRAIN = src("""
import argparse

import torch
import torch.distributed as dist


def train(args):
    local_rank = args.local_rank
    model = torch.nn.Linear(4, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = model(torch.randn(2, 4).cuda()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if local_rank == 0:
            torch.save(model.state_dict(), "ckpt.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", default=-1, type=int)
    args = parser.parse_args()
    dist.init_process_group(backend="nccl")
    train(args)
""")


def _launcher(code: str):
    (f,) = findings(code, "XLA204")
    return f


def test_a_rank_zero_gate_on_a_default_of_minus_one_is_named():
    f = _launcher(TRAIN)
    assert f.fix is not None and not f.fix.safe
    assert "--local_rank defaults to -1" in f.fix.review_reason
    assert "`local_rank == 0` (line 16) is never true" in f.fix.review_reason


def test_a_master_set_holding_minus_one_is_named():
    code = TRAIN.replace("if local_rank == 0:", "if args.local_rank in [-1, 0]:")
    f = _launcher(code)
    assert "is true in every replica, so each acts as the master" in f.fix.review_reason


def test_another_default_says_nothing():
    code = TRAIN.replace("default=-1, type=int", "default=0, type=int")
    f = _launcher(code)
    assert "defaults to -1" not in (f.fix.review_reason if f.fix else f.manual)
