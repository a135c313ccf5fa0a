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


def test_a_batch_read_in_the_statement_that_rebinds_it_is_a_cpu_read():
    # Pointnet2's classification loop (held-out 173): `points = points.data.numpy()`, the
    # augmentation on NumPy, then the move. The read comes before the rebinding: a CPU batch
    # (the loop is single-device, so no wrap), no crash to predict.
    code = src("""
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from tqdm import tqdm

    model = torch.nn.Linear(3, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(32, 3), torch.randint(0, 2, (32,)))
    loader = DataLoader(data, batch_size=8)
    for batch_id, (points, target) in tqdm(enumerate(loader, 0), total=len(loader)):
        opt.zero_grad()
        points = points.data.numpy()
        points = torch.Tensor(points * 2)
        points, target = points.cuda(), target.cuda()
        loss = torch.nn.functional.cross_entropy(model(points), target)
        loss.backward()
        opt.step()
    """)
    assert findings(code, "XLA401") == []
    # Read after the move it is a device tensor again: the crash is said.
    moved = code.replace(
        "    points = points.data.numpy()\n    points = torch.Tensor(points * 2)\n"
        "    points, target = points.cuda(), target.cuda()\n",
        "    points, target = points.cuda(), target.cuda()\n"
        "    points = torch.Tensor(points.data.numpy() * 2)\n",
    )
    assert moved != code
    assert [f for f in findings(moved, "XLA401") if "runs only on a CPU tensor" in f.message]
