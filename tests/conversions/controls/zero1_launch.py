"""Already-XLA control: ZeRO-1 (torch_xla's ZeroRedundancyOptimizer) under torch_xla.launch.
Its step() reduce-scatters the gradients itself: xm.optimizer_step around it would all-reduce
every gradient a second time, the traffic ZeRO-1 exists to avoid."""

import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer


def run_epoch(model, optimizer, device_loader):
    for x, y in device_loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def _mp_fn(index):
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    optimizer = ZeroRedundancyOptimizer(model.parameters(), torch.optim.SGD, lr=0.1)
    x = torch.randn(256, 16)
    loader = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=32, drop_last=True)

    def train_nested():
        for x, y in pl.MpDeviceLoader(loader, device):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()

    for _ in range(2):
        run_epoch(model, optimizer, pl.MpDeviceLoader(loader, device))
        train_nested()


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
