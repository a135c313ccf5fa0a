"""MNIST-style classifier trained with CUDA automatic mixed precision (autocast + GradScaler).

The data is synthetic (random 1x28x28 images labelled by a fixed linear
teacher) so the script needs no download and gives the same losses on every run.
"""

import argparse
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import torch_xla
import torch_xla.core.xla_model as xm

BATCH_SIZE = 32
# A multiple of BATCH_SIZE: every batch has the same shape, so XLA compiles one graph.
NUM_SAMPLES = 512


def make_dataset(seed: int = 0) -> TensorDataset:
    # A generator of its own keeps the data identical whatever else consumes the global RNG.
    gen = torch.Generator().manual_seed(seed)
    images = torch.randn(NUM_SAMPLES, 1, 28, 28, generator=gen)
    teacher = torch.randn(28 * 28, 10, generator=gen)
    labels = (images.flatten(1) @ teacher).argmax(dim=1)
    return TensorDataset(images, labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1)
        self.fc1 = nn.Linear(8 * 14 * 14, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "mnist_amp.pt"))
    args = parser.parse_args()

    torch.manual_seed(0)
    torch_xla.manual_seed(0)
    device = torch_xla.device()

    train_loader = DataLoader(
        make_dataset(),
        batch_size=BATCH_SIZE,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
    )

    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    model.train()
    steps_per_epoch = len(train_loader)
    epochs = math.ceil(args.steps / steps_per_epoch)
    for epoch in range(epochs):
        for batch_idx, (images, labels) in enumerate(train_loader):
            step = epoch * steps_per_epoch + batch_idx
            # Stop before the step, not after it, so each trained step runs its whole body.
            if step >= args.steps:
                break
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            with torch.autocast("xla", dtype=torch.bfloat16):
                loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            xm.add_step_closure(lambda step, loss: print(f"step={step} loss={loss.item():.6f}"), args=(step, loss))
            torch_xla.sync()

    xm.save(model.state_dict(), args.out)


if __name__ == "__main__":
    main()
