"""XLA403's removal of cuDNN settings and CUDA seeds waits while the device stays CUDA
(held-out 135, ssl_methods): applied alone, Convert left a script that still trains on CUDA
without its deterministic cuDNN kernels."""

from tests.helpers import findings, fixed

SETUP = """
import torch

def setup(distributed, local_rank):
    if distributed:
        device = torch.device(f"cuda:{local_rank}")
    else:
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    torch.cuda.manual_seed(8)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    return device, local_rank

def train(model, loader, opt, distributed):
    device, _ = setup(distributed, 0)
    model.to(device)
    for x, y in loader:
        loss = (model(x.to(device)) - y.to(device)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_settings_wait_for_the_device_choice_left_for_review():
    device = [f for f in findings(SETUP, "XLA101") if f.fix is not None]
    assert device and not any(f.fix.safe for f in device)
    held = findings(SETUP, "XLA403")
    assert len(held) == 3
    assert all(not f.fix.safe and "waits for review (XLA101)" in f.fix.review_reason for f in held)
    out = fixed(SETUP)
    assert "torch.backends.cudnn.deterministic = True" in out
    assert "torch.cuda.manual_seed(8)" in out
    # torch.manual_seed(8) first seeds CUDA too: the CUDA seed's rewrite changes nothing there.
    seeded = SETUP.replace(
        "    torch.cuda.manual_seed(8)", "    torch.manual_seed(8)\n    torch.cuda.manual_seed(8)"
    )
    seed = [f for f in findings(seeded, "XLA403") if "seeds CUDA only" in f.message]
    assert len(seed) == 1 and seed[0].fix.safe
    # With every device fix reviewed and applied, the settings go too.
    assert "cudnn" not in fixed(SETUP, unsafe=True)


PLAIN = """
import torch

device = torch.device("cuda")
torch.cuda.manual_seed(8)
torch.backends.cudnn.benchmark = True
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_settings_go_with_a_device_choice_convert_applies():
    assert all(f.fix is not None and f.fix.safe for f in findings(PLAIN, "XLA101"))
    settings = findings(PLAIN, "XLA403")
    assert len(settings) == 2 and all(f.fix.safe for f in settings)
    out = fixed(PLAIN)
    assert "cudnn" not in out and "torch.cuda" not in out
