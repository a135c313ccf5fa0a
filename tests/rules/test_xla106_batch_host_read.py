"""A training loop that checks its CPU batch on the host before moving it (held-out 51,
minimal-diffusion: ``assert images.max().item() <= 1`` then ``images.to(device)``): wrapped in
an MpDeviceLoader, the batch would arrive on the device and that check would run a graph of
its own every step. XLA106's wrap waits for review; unwrapped, the read is a CPU read, so
XLA401 says nothing of it."""

from tests.helpers import findings, src

CHECKED = src("""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("nccl")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = DDP(torch.nn.Linear(4, 1).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.rand(64, 4), torch.rand(64, 1)), batch_size=16)
for step, (images, labels) in enumerate(loader):
    assert images.max().item() <= 1 and 0 <= images.min().item()
    images, labels = images.to(device), labels.to(device)
    loss = torch.nn.functional.mse_loss(model(images), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
""")


def _line(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.splitlines()) if text in line)


def test_the_wrap_waits_for_review_and_the_cpu_check_is_no_device_read():
    (wrap,) = findings(CHECKED, "XLA106")
    assert wrap.fix is not None and not wrap.fix.safe
    assert "line 12 reads the batch on the host (`images.max().item()`)" in wrap.fix.review_reason
    assert findings(CHECKED, "XLA401") == []
    (sync,) = findings(CHECKED, "XLA107")  # the loop gets its sync another way
    assert sync.fix is not None


def test_a_read_after_the_move_is_still_a_device_read():
    moved_first = CHECKED.replace(
        "    assert images.max().item() <= 1 and 0 <= images.min().item()\n"
        "    images, labels = images.to(device), labels.to(device)\n",
        "    images, labels = images.to(device), labels.to(device)\n"
        "    assert images.max().item() <= 1 and 0 <= images.min().item()\n",
    )
    reads = findings(moved_first, "XLA401")
    assert {f.span.start.line for f in reads} == {_line(moved_first, "assert images")}
    (wrap,) = findings(moved_first, "XLA106")
    assert wrap.fix is not None and "reads the batch on the host" not in wrap.fix.review_reason
