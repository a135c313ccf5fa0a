"""A device picker whose CUDA side is the configured device (held-out 54, simple_task_pytorch:
``device = cfg.device if torch.cuda.is_available() else "cpu"``): on an XLA host it picks the
CPU. XLA101 reports it without a fix (what the configuration names is not in the file)."""

from tests.helpers import findings, src

CONFIGURED = src("""
import torch

def main(cfg):
    device = cfg.device if torch.cuda.is_available() else "cpu"
    model = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        model(torch.randn(8, 4, device=device)).sum().backward()
        opt.step()
""")


def test_the_configured_picker_is_reported_without_a_fix():
    (f,) = [f for f in findings(CONFIGURED, "XLA101") if "device picker" in f.message]
    assert f.span.start.line == 3
    assert f.fix is None and "`cfg.device`" in f.message and "torch_xla.device()" in f.manual


def test_a_configured_device_without_the_availability_test_is_no_picker():
    code = CONFIGURED.replace('cfg.device if torch.cuda.is_available() else "cpu"', "cfg.device")
    assert [f for f in findings(code, "XLA101") if "device picker" in f.message] == []
