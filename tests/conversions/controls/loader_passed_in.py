"""Already-XLA control: the caller wraps the loader in MpDeviceLoader and passes it to the
train function, which therefore needs no explicit step sync."""

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train_one_epoch(model, loader, optimizer, loss_fn, log_every=20):
    model.train()
    for step, (images, labels) in enumerate(loader):
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        xm.optimizer_step(optimizer)
        if step % log_every == 0:
            xm.add_step_closure(lambda v: print(f"loss {v.item():.4f}"), args=(loss,))


def evaluate(model, loader):
    model.eval()
    correct = torch.zeros((), device=torch_xla.device())
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(dim=1) == labels).sum()
    return correct


def main():
    device = torch_xla.device()
    images = torch.randn(512, 1, 28, 28)
    labels = torch.randint(0, 10, (512,))
    train = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True, drop_last=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(2):
        train_one_epoch(model, pl.MpDeviceLoader(train, device), optimizer, loss_fn)
        xm.master_print(f"epoch {epoch} done")
    correct = evaluate(model, pl.MpDeviceLoader(train, device))
    print("accuracy", correct.item() / len(train.dataset))


if __name__ == "__main__":
    main()
