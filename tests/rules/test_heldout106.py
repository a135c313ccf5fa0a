"""Held-out 106 (ssd.pytorch): unwrapping nn.DataParallel changes no checkpoint when every
save and load names the inner model (``torch.save(ssd_net.state_dict(), ...)`` beside ``net =
torch.nn.DataParallel(ssd_net)``); a save of the wrapper, or of a name bound to it, still
waits for review."""

from __future__ import annotations

from tests.helpers import findings, fixed, src

SSD = src("""
import torch

ssd_net = torch.nn.Linear(4, 2)
net = ssd_net
if torch.cuda.is_available():
    net = torch.nn.DataParallel(ssd_net)
    net = net.cuda()
vgg_weights = torch.load("vgg.pth")
ssd_net.load_state_dict(vgg_weights)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    loss = net(torch.randn(2, 4).cuda()).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(ssd_net.state_dict(), "ssd.pth")
""")


def test_saves_and_loads_of_the_inner_model_leave_the_unwrap_safe():
    (f,) = findings(SSD, "XLA110")
    assert f.fix is not None and f.fix.safe, f.message
    assert "DataParallel" not in fixed(SSD).split("import torch_xla")[-1].split("for step")[0]


def test_a_save_of_the_wrapper_waits_for_review():
    text = SSD.replace(
        'torch.save(ssd_net.state_dict(), "ssd.pth")', 'torch.save(net.state_dict(), "ssd.pth")'
    )
    (f,) = findings(text, "XLA110")
    assert f.fix is not None and not f.fix.safe
    assert "module." in f.message


def test_a_save_of_a_name_bound_to_the_wrapper_waits_for_review():
    text = SSD.replace(
        'torch.save(ssd_net.state_dict(), "ssd.pth")',
        'best = net\ntorch.save(best.state_dict(), "ssd.pth")',
    )
    (f,) = findings(text, "XLA110")
    assert f.fix is not None and not f.fix.safe


def test_a_load_into_the_wrapper_waits_for_review():
    text = SSD.replace("ssd_net.load_state_dict(vgg_weights)", "net.load_state_dict(vgg_weights)")
    (f,) = findings(text, "XLA110")
    assert f.fix is not None and not f.fix.safe
