"""Already-XLA control: an epoch loop around a per-batch MpDeviceLoader loop (the loader marks
each step; the epoch loop needs no sync of its own), checkpointing with xm.save."""

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

EPOCHS = 3


class Regressor(nn.Module):
    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, width), nn.GELU(), nn.Linear(width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).squeeze(-1)


def main() -> None:
    device = torch_xla.device()
    x = torch.randn(320, 10)
    y = x @ torch.linspace(-1, 1, 10)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, drop_last=True)
    device_loader = pl.MpDeviceLoader(loader, device)
    model = Regressor().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    for epoch in range(EPOCHS):
        running = torch.zeros((), device=device)
        for inputs, targets in device_loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            xm.optimizer_step(optimizer)
            running += loss.detach()
        scheduler.step()
        xm.master_print(f"epoch {epoch} mean loss {running.item() / len(loader):.4f}")
        xm.save(model.state_dict(), f"regressor_{epoch}.pt")


if __name__ == "__main__":
    main()
