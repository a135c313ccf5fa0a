"""Already-XLA control: XLA FSDP wrapping, per-step logging in a step closure, the string
device "xla", and a rank-0 gated checkpoint with xm.save."""

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP


def log_step(step: int, loss: torch.Tensor) -> None:
    print(f"[{xr.global_ordinal()}] step {step} loss {loss.item():.4f}", flush=True)


def _mp_fn(index: int) -> None:
    device = torch.device("xla")
    model = FSDP(nn.Sequential(nn.Linear(48, 96), nn.SiLU(), nn.Linear(96, 3)).to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    x = torch.randn(384, 48)
    y = torch.randint(0, 3, (384,))
    loader = pl.MpDeviceLoader(DataLoader(TensorDataset(x, y), batch_size=32), device)
    for step, (inputs, targets) in enumerate(loader):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        xm.add_step_closure(log_step, args=(step, loss))
    if xr.global_ordinal() == 0:
        xm.save(model.state_dict(), "fsdp.pt", master_only=False)


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
