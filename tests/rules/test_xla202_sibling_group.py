"""XLA202 / launch safety, held-out 14 (vicreg): a script whose process group a sibling
module starts (``init_distributed_mode(args)`` in distributed.py) may ask torch.distributed
for its rank and world size — in an autograd Function's forward/backward, which every
replica runs through the model — and that code is no launcher-parent code."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

SIBLING = """
import os
import torch
import torch.distributed as dist

def init_distributed_mode(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.rank = int(os.environ["RANK"])
        args.world_size = int(os.environ["WORLD_SIZE"])
    else:
        return
    dist.init_process_group(backend="nccl", init_method="env://",
                            world_size=args.world_size, rank=args.rank)
"""

SCRIPT = """
import argparse
import torch
import torch.distributed as dist
import torch.nn as nn
from distributed import init_distributed_mode

class GatherAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(out, x)
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        g = torch.stack(grads)
        dist.all_reduce(g)
        return g[dist.get_rank()]

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cat(GatherAll.apply(self.fc(x))).pow(2).mean()

def main(args):
    init_distributed_mode(args)
    model = nn.parallel.DistributedDataParallel(Net().cuda(), device_ids=[0])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        loss = model(torch.randn(8, 4).cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    main(p.parse_args())
"""


pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")


def test_rank_queries_under_a_sibling_started_group_are_fine(tmp_path: Path):
    (tmp_path / "distributed.py").write_text(src(SIBLING), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    assert [f for f in result.findings if f.code == "XLA202"] == []
    assert not any("parent process" in f.message for f in result.findings)


def test_without_the_sibling_the_queries_are_reported(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    queries = [f for f in result.findings if f.code == "XLA202"]
    assert len(queries) == 2
    assert not any("parent process" in f.message for f in queries)
