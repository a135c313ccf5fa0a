"""An optimizer built through a factory handed the optimizer class (held-out 53's hfta
control: ``get_hfta_optim_for(optim.Adam, B=B)(classifier.parameters(), lr=...)``) before
``classifier.to(device)``: with ``--device xla`` the move makes new Parameters and the run
never trains (measured by the probe: the loss stayed 0.94197), so XLA109 reports it."""

from tests.helpers import findings, src

FACTORY = src("""
import torch
import torch.optim as optim
import torch_xla.core.xla_model as xm


def optimizer_for(cls, B=0):
    return cls


def main():
    device = xm.xla_device()
    classifier = torch.nn.Linear(4, 2)
    optimizer = optimizer_for(optim.Adam, B=0)(classifier.parameters(), lr=0.01)
    classifier.to(device)
    for step in range(3):
        optimizer.zero_grad()
        classifier(torch.randn(8, 4, device=device)).sum().backward()
        xm.optimizer_step(optimizer)
""")


def test_an_optimizer_built_by_a_factory_before_the_move_is_reported():
    (f,) = findings(FACTORY, "XLA109")
    assert "`classifier`" in f.message
    assert f.span.start.line == FACTORY.splitlines().index(
        "    optimizer = optimizer_for(optim.Adam, B=0)(classifier.parameters(), lr=0.01)"
    )


def test_a_factory_handed_something_else_is_no_optimizer():
    code = FACTORY.replace("optimizer_for(optim.Adam, B=0)", "optimizer_for(torch.nn.Linear, B=0)")
    assert findings(code, "XLA109") == []
