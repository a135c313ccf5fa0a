"""Already XLA, started by torchrun (`torchrun --nproc_per_node=4 torchrun_xla_env.py`): torchrun
sets RANK/LOCAL_RANK/WORLD_SIZE for each process and torch_xla's xla:// rendezvous reads the
same variables, so reading them here is right (no XLA launcher in this script)."""

import os

import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" backend)
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

LAUNCH_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE")


def launch_info() -> dict[str, int]:
    return {key: int(os.environ.get(key, "0")) for key in LAUNCH_KEYS}


def main() -> None:
    dist.init_process_group("xla", init_method="xla://")
    info = launch_info()
    local_rank = int(os.environ["LOCAL_RANK"])
    distributed = int(os.environ.get("WORLD_SIZE", -1)) != -1
    if os.environ.get("RANK"):
        assert info["RANK"] == xr.global_ordinal()
    device = torch_xla.device()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    sampler = None
    if distributed:
        sampler = DistributedSampler(
            data, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True
        )
    loader = DataLoader(data, batch_size=8, sampler=sampler, drop_last=True)
    model = torch.nn.Linear(8, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * info["WORLD_SIZE"])
    for x, y in pl.MpDeviceLoader(loader, device):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
    if local_rank == 0:
        xm.master_print("finished on", device)


if __name__ == "__main__":
    main()
