"""Already-XLA control: DDP over the xla process-group backend, launched per device."""

import argparse

import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" backend)
import torch_xla.runtime as xr
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_loader(batch_size: int) -> DataLoader:
    x = torch.randn(256, 20)
    y = (x[:, :4].sum(dim=1) > 0).long()
    data = TensorDataset(x, y)
    sampler = DistributedSampler(
        data, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True
    )
    return DataLoader(data, batch_size=batch_size, sampler=sampler, drop_last=True)


def _mp_fn(index: int, args: argparse.Namespace) -> None:
    dist.init_process_group("xla", init_method="xla://")
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
    ddp_model = DDP(model, gradient_as_bucket_view=True)
    optimizer = torch.optim.AdamW(ddp_model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    loader = pl.MpDeviceLoader(build_loader(args.batch_size), device)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = loss_fn(ddp_model(x), y)
            loss.backward()
            optimizer.step()
            if step % 10 == 0:
                xm.add_step_closure(
                    lambda e, s, v: print(f"epoch {e} step {s} loss {v.item():.4f}"),
                    args=(epoch, step, loss),
                )
    xm.save(model.state_dict(), args.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--out", default="ddp_xla.pt")
    torch_xla.launch(_mp_fn, args=(parser.parse_args(),))
