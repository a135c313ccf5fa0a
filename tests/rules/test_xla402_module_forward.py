"""XLA401/XLA402 in the ``forward`` of a module of the script that the training loop calls
(held-out 21, a2c-ppo's recurrent policy: ``nonzero`` on the masks, ``.cpu()``, ``.item()``
and ``.tolist()`` to cut the sequence, every update step)."""

from tests.helpers import findings, src

SPLIT = """
import torch
import torch.nn as nn


class Base(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.cell = nn.GRU(d, d)

    def forward(self, x, h, masks):
        cuts = (masks[1:] == 0.0).any(dim=-1).nonzero().squeeze().cpu()
        return self._run(x, h, cuts.tolist())

    def _run(self, x, h, cuts):
        return x


class SeqNet(Base):
    pass


def main():
    dev = torch.device("cuda")
    net = SeqNet(8).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for _ in range(5):
        x = torch.randn(6, 3, 8, device=dev)
        masks = (torch.rand(6, 3, device=dev) > 0.2).float()
        loss = net(x, torch.zeros(3, 8, device=dev), masks).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_data_dependent_op_in_the_forward_of_a_module_the_loop_calls():
    (f,) = findings(SPLIT, "XLA402")
    assert f.span.start.line + 1 == 11
    assert ".nonzero() has a data-dependent output shape in `forward`" in f.message
    assert "through `net(...)`" in f.message


def test_host_read_in_the_forward_of_a_module_the_loop_calls():
    (f,) = findings(SPLIT, "XLA401")
    assert f.span.start.line + 1 == 11 and f.message.startswith(".cpu() reads a device tensor")
    assert "in `forward`, which the training loop on line 26 calls every step" in f.message


def test_forward_of_a_module_called_outside_any_training_loop_is_not_followed():
    code = SPLIT.replace(
        "net(x, torch.zeros(3, 8, device=dev), masks).pow(2).mean()", "x.pow(2).mean()"
    ).replace(
        "    for _ in range(5):",
        "    net(torch.zeros(6, 3, 8), None, None)\n    for _ in range(5):",
    )
    assert "net(torch.zeros(6, 3, 8), None, None)" in code
    assert findings(code, "XLA402") == [] and findings(code, "XLA401") == []


def test_a_forward_fed_cpu_tensors_makes_no_device_read():
    # Nothing placed on a device (XLA117's business): the .cpu() reads a CPU tensor, while
    # the data-dependent shape still matters once the module is on the XLA device.
    code = src(SPLIT).replace("net = SeqNet(8).to(dev)", "net = SeqNet(8)")
    code = code.replace(", device=dev", "").replace('    dev = torch.device("cuda")\n', "")
    assert findings(code, "XLA401") == []
    assert [f.code for f in findings(code, "XLA402")] == ["XLA402"]
