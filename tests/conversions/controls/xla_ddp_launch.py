"""Control: an already-XLA script (DDP over the xla backend, torch_xla.launch, runtime ordinals,
an argparse --device that already says xla). Device and launch rules must stay quiet."""

import argparse
import os

import torch
import torch.distributed as dist
import torch_xla
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" backend)
import torch_xla.runtime as xr
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

STEPS = int(os.environ.get("XLA_LENS_STEPS", "3"))


def train(index: int, args: argparse.Namespace) -> None:
    dist.init_process_group("xla", init_method="xla://")
    device = torch_xla.device()
    rank, world = xr.global_ordinal(), xr.world_size()
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True)
    loader = pl.MpDeviceLoader(DataLoader(data, batch_size=8, sampler=sampler), device)
    model = DDP(nn.Linear(4, 1).to(device), gradient_as_bucket_view=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    if dist.get_rank() == 0:
        print(f"training on {device} with {world} replicas")
    for step, (x, y) in enumerate(loader):
        if step >= STEPS:
            break
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="xla")
    parser.add_argument("--lr", type=float, default=0.1)
    torch_xla.launch(train, args=(parser.parse_args(),))
