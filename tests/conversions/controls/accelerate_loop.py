"""Already-portable control: an accelerate loop. Accelerator picks the device (XLA on a TPU
host), prepares model/optimizer/loader and handles mixed precision and the backward."""

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main(epochs: int = 2) -> None:
    accelerator = Accelerator(mixed_precision="bf16")
    x = torch.randn(256, 16)
    y = (x.sum(dim=1) > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        model.train()
        for inputs, labels in loader:
            optimizer.zero_grad()
            with accelerator.autocast():
                loss = nn.functional.cross_entropy(model(inputs), labels)
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        accelerator.print(f"epoch {epoch} loss {loss.item():.4f}")
    accelerator.wait_for_everyone()
    accelerator.save(accelerator.unwrap_model(model).state_dict(), "model.pt")


if __name__ == "__main__":
    main()
