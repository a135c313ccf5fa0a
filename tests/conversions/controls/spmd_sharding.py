"""Already-XLA control: SPMD data parallelism (use_spmd, a mesh, mark_sharding, a sharded
MpDeviceLoader) with a plain optimizer.step() and an explicit torch_xla.sync()."""

import numpy as np
import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

xr.use_spmd()


def main(steps: int = 20) -> None:
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices, 1), ("data", "model"))
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8)).to(device)
    xs.mark_sharding(model[0].weight, mesh, ("model", None))
    xs.mark_sharding(model[2].weight, mesh, (None, "model"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(512, 64)
    y = torch.randint(0, 8, (512,))
    loader = DataLoader(TensorDataset(x, y), batch_size=64, drop_last=True)
    train_loader = pl.MpDeviceLoader(
        loader, device, input_sharding=xs.ShardingSpec(mesh, ("data", None))
    )
    for step, (inputs, targets) in enumerate(train_loader):
        if step == steps:
            break
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        if step % 5 == 0:
            print(step, loss.item())


if __name__ == "__main__":
    main()
