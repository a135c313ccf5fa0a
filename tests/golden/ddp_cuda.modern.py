"""MNIST-style classifier trained with DistributedDataParallel on CUDA (NCCL).

Launch with torchrun, one process per GPU:
    torchrun --nproc_per_node=2 samples/ddp_cuda.py --steps 20
The data is synthetic (random 1x28x28 images labelled by a fixed linear teacher), so every
rank builds the same dataset without a download and the sampler shards it.
"""

import argparse
import math
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
import torch_xla.distributed.xla_backend
import torch_xla.runtime as xr
import torch_xla
import torch_xla.distributed.parallel_loader as pl
import torch_xla.core.xla_model as xm

BATCH_SIZE = 16
# A multiple of BATCH_SIZE * world size for up to 8 replicas: no short last batch.
NUM_SAMPLES = 512


def make_dataset(seed: int = 0) -> TensorDataset:
    # Every rank must build the same dataset, so it comes from a generator of its own.
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
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "ddp_cuda.pt"))
    # Launchers append arguments of their own (e.g. --local-rank); they must not stop the run.
    args, _ = parser.parse_known_args()

    dist.init_process_group("xla", init_method="xla://")
    local_rank = xr.local_ordinal()
    world_size = dist.get_world_size()
    rank = dist.get_rank()
    device = torch_xla.device()

    # The same seed on every rank gives every replica the same initial weights.
    torch.manual_seed(0)
    torch_xla.manual_seed(0)

    dataset = make_dataset()
    sampler = DistributedSampler(dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
    train_loader = DataLoader(dataset, batch_size=BATCH_SIZE, sampler=sampler)

    model = Net().to(device)
    model = DDP(model)
    # Linear scaling rule: the global batch grows with the number of replicas.
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * world_size, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    model.train()
    steps_per_epoch = len(train_loader)
    epochs = math.ceil(args.steps / steps_per_epoch)
    for epoch in range(epochs):
        # Without this each epoch would see the same shard order.
        sampler.set_epoch(epoch)
        for batch_idx, (images, labels) in enumerate(pl.MpDeviceLoader(train_loader, device)):
            step = epoch * steps_per_epoch + batch_idx
            # Stop before the step, not after it, so each trained step runs its whole body.
            if step >= args.steps:
                break
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            if rank == 0:
                xm.add_step_closure(lambda step, loss: print(f"step={step} loss={loss.item():.6f}"), args=(step, loss))

    if rank == 0:
        xm.save(model.module.state_dict(), args.out)
    dist.destroy_process_group()


def _mp_fn(index):
    main()


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
