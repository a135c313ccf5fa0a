"""Already-portable control: a Lightning Fabric loop. Fabric picks the device (XLA on a TPU host
with accelerator="auto"), wraps the set-up loader in an MpDeviceLoader that marks every step,
and runs backward and the optimizer step through its strategy."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def fit(fabric: L.Fabric, model: nn.Module, optimizer, loader, steps_per_log: int = 20) -> None:
    running = torch.zeros((), device=fabric.device)
    for step, (inputs, labels) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(inputs), labels)
        fabric.backward(loss)
        fabric.clip_gradients(model, optimizer, max_norm=1.0)
        optimizer.step()
        optimizer.zero_grad()
        running += loss.detach()
        if step % steps_per_log == 0:
            fabric.print(f"step {step} loss {running.item() / steps_per_log:.4f}")
            running.zero_()


def main() -> None:
    fabric = L.Fabric(accelerator="auto", devices="auto", precision="bf16-mixed")
    fabric.launch()
    fabric.seed_everything(7)
    x = torch.randn(256, 16)
    y = (x.sum(dim=1) > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, drop_last=True)
    model = torch.compile(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer = fabric.setup(model, optimizer)
    loader = fabric.setup_dataloaders(loader)
    fit(fabric, model, optimizer, loader)
    fabric.save("state.ckpt", {"model": model, "optimizer": optimizer})


if __name__ == "__main__":
    main()
