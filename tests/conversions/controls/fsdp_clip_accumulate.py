"""Already-XLA control: torch_xla's FSDP with its own clip_grad_norm_, and a
gradient-accumulation factor named like a loss scale (not fp16 loss scaling)."""

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP

ACCUMULATE = 4


def _mp_fn(index: int) -> None:
    device = torch_xla.device()
    model = FSDP(nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = TensorDataset(torch.randn(128, 16), torch.randint(0, 4, (128,)))
    loader = pl.MpDeviceLoader(DataLoader(data, batch_size=16, drop_last=True), device)
    loss_scale = 1.0 / ACCUMULATE
    for step, (inputs, targets) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(inputs), targets)
        (loss * loss_scale).backward()
        if (step + 1) % ACCUMULATE == 0:
            model.clip_grad_norm_(1.0)
            optimizer.step()
            optimizer.zero_grad()
    xm.master_print("done")


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
