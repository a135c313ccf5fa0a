"""XLA106 over a dataset whose samples already live on the device: the wrap would collate XLA
tensors on pl.MpDeviceLoader's loader thread and fail, so it waits for review, saying why; the
batches of such a loader count as on the device when DDP's device_ids are dropped (XLA205)."""

from tests.helpers import findings

TENSOR_DATASET = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def main(rank):
    dist.init_process_group("nccl")
    device = torch.device("cuda", rank)
    model = DDP(torch.nn.Linear(4, 2).to(device), device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(64, 4).to(device)
    y = {Y}
    loader = DataLoader(TensorDataset(x, y), batch_size=8)
    for xb, yb in loader:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

GETITEM = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __init__(self, device):
        self.x = torch.randn(64, 4)
        self.device = device

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {RETURN}


def main(rank):
    dist.init_process_group("nccl")
    device = torch.device("cuda", rank)
    model = torch.nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ds = Pairs(device)
    loader = DataLoader(ds, batch_size=8)
    for xb in loader:
        loss = model(xb).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

PLACED_INIT = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Cached(Dataset):
    def __init__(self, device):
        self.x = torch.randn(64, 4, device=device)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return self.x[i]


def main(rank):
    dist.init_process_group("nccl")
    device = torch.device("cuda", rank)
    model = torch.nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Cached(device), batch_size=8)
    for xb in loader:
        model(xb).sum().backward()
        opt.step()
"""


def _wrap(code: str):
    (f,) = findings(code, "XLA106")
    return f


def test_tensor_dataset_of_device_tensors_is_wrapped_for_review_only():
    f = _wrap(TENSOR_DATASET.replace("{Y}", "torch.randn(64, 2).to(device)"))
    assert not f.fix.safe
    assert "already puts its samples on the device" in f.fix.review_reason
    assert "`torch.randn(64, 4).to(device)`" in f.fix.review_reason
    # Every tensor of the batch is on the device: dropping device_ids moves nothing less.
    ddp = [
        f
        for f in findings(TENSOR_DATASET.replace("{Y}", "torch.randn(64, 2).to(device)"), "XLA205")
        if "device_ids" in f.message
    ]
    assert ddp and ddp[0].fix.safe


def test_partly_placed_tensor_dataset_keeps_the_ddp_drop_for_review():
    code = TENSOR_DATASET.replace("{Y}", "torch.randn(64, 2)")
    assert not _wrap(code).fix.safe  # x is on the device: the wrap still fails
    ddp = [f for f in findings(code, "XLA205") if "device_ids" in f.message]
    assert ddp and not ddp[0].fix.safe  # yb stays on the CPU without device_ids


def test_getitem_that_moves_its_sample_is_named():
    f = _wrap(GETITEM.replace("{RETURN}", "self.x[i].to(self.device)"))
    assert not f.fix.safe
    assert "`self.x[i].to(self.device)`" in f.fix.review_reason


def test_attribute_placed_in_init_and_read_in_getitem_is_named():
    f = _wrap(PLACED_INIT)
    assert not f.fix.safe
    assert "`torch.randn(64, 4, device=device)`" in f.fix.review_reason


def test_cpu_datasets_keep_the_safe_wrap():
    for ret in ("self.x[i]", 'self.x[i].to("cpu")', "self.x[i].to(torch.float32)"):
        f = _wrap(GETITEM.replace("{RETURN}", ret))
        assert f.fix.safe, ret
    f = _wrap(
        TENSOR_DATASET.replace("torch.randn(64, 4).to(device)", "torch.randn(64, 4)").replace(
            "{Y}", "torch.randn(64, 2)"
        )
    )
    assert "already puts its samples" not in (f.fix.review_reason or "")
