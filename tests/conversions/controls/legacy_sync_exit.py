"""Already-XLA control in the older style: xm.xla_device(), an explicit sync per step, logging
in step closures, CPU copies before saving, and an accuracy gate that exits the process.
Deprecated spellings may get modernisation findings, never conversion ones."""

import sys

import torch
import torch_xla
import torch_xla.core.xla_model as xm
from torch import nn

TARGET_ACCURACY = 0.5


def train_update(step: int, loss: torch.Tensor) -> None:
    print(f"step {step} loss {loss.item():.4f}", flush=True)


def main(steps: int = 40) -> float:
    device = xm.xla_device()
    torch.manual_seed(0)
    x = torch.randn(256, 6)
    y = (x[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    inputs, targets = x.to(device), y.to(device)
    for step in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        if step % 10 == 0:
            xm.add_step_closure(train_update, args=(step, loss))
    accuracy = (model(inputs).argmax(dim=1) == targets).float().mean().item()
    state = {k: v.to("cpu") for k, v in model.state_dict().items()}
    torch.save(state, "legacy.pt")
    return accuracy


if __name__ == "__main__":
    accuracy = main()
    print(f"accuracy {accuracy:.3f}")
    if accuracy < TARGET_ACCURACY:
        print("accuracy below target", file=sys.stderr)
        sys.exit(21)
