"""Control: a script that already runs on XLA or on CUDA, as --xla says (written for
xla-lens). Its CUDA side (DDP over NCCL, CUDA timing under ``use_cuda``) runs only without
--xla, so a conversion has nothing left to do here."""

import argparse

import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def build_model(use_xla: bool, gpu: int) -> nn.Module:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    if use_xla:
        return model.to(torch_xla.device())
    return DDP(model.to(torch.device(f"cuda:{gpu}")), device_ids=[gpu])


def train(args: argparse.Namespace) -> None:
    device = torch_xla.device() if args.xla else torch.device("cuda", args.gpu)
    if not args.xla:
        dist.init_process_group("nccl")
        torch.cuda.set_device(args.gpu)
    model = build_model(args.xla, args.gpu)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 16), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=8, drop_last=True)
    if args.xla:
        loader = pl.MpDeviceLoader(loader, device)
    use_cuda = device.type == "cuda"
    if use_cuda:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
    for x, y in loader:
        if not args.xla:
            x, y = x.cuda(args.gpu, non_blocking=True), y.cuda(args.gpu, non_blocking=True)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if args.xla:
            xm.optimizer_step(opt)
        else:
            opt.step()
    if use_cuda:
        end.record()
        torch.cuda.synchronize()
        print(f"epoch took {start.elapsed_time(end):.1f} ms")
        print(f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--xla", action="store_true")
    parser.add_argument("--gpu", type=int, default=0)
    train(parser.parse_args())
