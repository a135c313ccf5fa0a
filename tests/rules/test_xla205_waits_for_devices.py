"""XLA205's backend change waits while the script's device change does (held-out 90, Sophia's
nanoGPT-style trainer): `init_process_group(backend="xla")` applied with
`device = f"cuda:{ddp_local_rank}"` left for review made DDP raise "Expected XLA tensor" at
construction, where the original ran. Applied together (`fix --unsafe-fixes`, or once the
device change is in) the backend change is safe again."""

from tests.helpers import findings, fixed, src

SCRIPT = src("""
import os
import torch
from torch.distributed import init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

backend = "nccl"
device = "cuda"
ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend=backend)
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    device = f"cuda:{ddp_local_rank}"
    torch.cuda.set_device(device)
device_type = "cuda" if "cuda" in device else "cpu"
model = torch.nn.Linear(4, 4).to(device)
if ddp:
    model = DDP(model, device_ids=[ddp_local_rank])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(2, 4, device=device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
""")


def _backend(code: str):
    (f,) = [f for f in findings(code, "XLA205") if "NCCL" in f.message]
    return f


def test_the_backend_change_waits_for_the_device_change():
    f = _backend(SCRIPT)
    assert f.fix is not None and not f.fix.safe
    assert "the device change on line 7 (XLA101) waits for review" in f.fix.review_reason
    assert 'backend = "nccl"' in fixed(SCRIPT)


def test_with_the_device_on_xla_the_backend_change_is_safe():
    code = (
        SCRIPT.replace('device = "cuda"', "device = torch_xla.device()")
        .replace('    device = f"cuda:{ddp_local_rank}"\n    torch.cuda.set_device(device)\n', "")
        .replace('device_type = "cuda" if "cuda" in device else "cpu"\n', "")
    )
    code = "import torch_xla\n" + code
    f = _backend(code)
    assert f.fix is not None and f.fix.safe, f.fix.review_reason
