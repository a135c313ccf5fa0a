"""Already XLA, started by torchrun (`torchrun --nproc_per_node=4 torchrun_xla_sampler.py`): the
script builds its xla process group first, so DistributedSampler's defaults (asked of
torch.distributed) are the XLA replicas' rank and count and need no num_replicas/rank."""

import argparse

import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" backend)
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def init_distributed() -> int:
    dist.init_process_group(backend="xla", init_method="xla://")
    return dist.get_rank()


def make_loader(batch_size: int, seed: int) -> tuple[DataLoader, DistributedSampler]:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(512, 16, generator=generator)
    labels = (features[:, :3].sum(dim=1) > 0).long()
    dataset = TensorDataset(features, labels)
    sampler = DistributedSampler(dataset, seed=seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, drop_last=True)
    return loader, sampler


def main(args: argparse.Namespace) -> None:
    rank = init_distributed()
    device = torch_xla.device()
    loader, sampler = make_loader(args.batch_size, args.seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 2)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    device_loader = pl.MpDeviceLoader(loader, device)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new shuffle per epoch, the same on every replica
        model.train()
        for step, (x, y) in enumerate(device_loader):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            xm.optimizer_step(optimizer)
            if step % 8 == 0:
                xm.add_step_closure(
                    lambda e, s, v: print(f"epoch {e} step {s} loss {v.item():.4f}"),
                    args=(epoch, step, loss),
                )
    if rank == 0:
        xm.save(model.state_dict(), args.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="torchrun_xla_sampler.pt")
    main(parser.parse_args())
