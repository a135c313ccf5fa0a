"""XLA110 on ``model.module`` of a model accelerate prepared (held-out 48's Omega-Net): on XLA
accelerate returns the model itself (no DDP wrapper: ``prepare_model`` in accelerate), so
``.module`` raises AttributeError; ``accelerator.unwrap_model(model)`` is the bare model in
every setting (DDP's ``.module`` on several GPUs)."""

from tests.helpers import findings, fixed

CODE = """
import torch
from accelerate import Accelerator


class Experiment:
    def __init__(self):
        self.accelerator = Accelerator()

    def test(self, model, loader):
        model, loader = self.accelerator.prepare(model, loader)
        for x in loader:
            out = model.module.denoise(x)
        if hasattr(model, "module"):
            print(model.module)
        return out


def evaluate(net, loader):
    accelerator = Accelerator()
    net = accelerator.prepare(net)
    return net.module.score(loader)


def other(net):
    return net.module
"""


def test_module_of_a_prepared_model_becomes_unwrap_model():
    found = findings(CODE, "XLA110")
    assert len(found) == 2 and all(f.fix.safe for f in found)
    assert "raises AttributeError" in found[0].message
    out = fixed(CODE, "XLA110")
    assert "out = self.accelerator.unwrap_model(model).denoise(x)" in out
    assert "return accelerator.unwrap_model(net).score(loader)" in out
    assert "print(model.module)" in out and "return net.module\n" in out
