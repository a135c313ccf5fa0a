"""XLA108 on a checkpoint holding a copy of a module on the device: ``deepcopy(model).half()``
or the EMA copy of one (yolov5's ``{"model": deepcopy(ema.ema).half()}`` with ``ema =
ModelEMA(model) if RANK in {-1, 0} else None``, held-out 38): a copy keeps the device of what it
copies, so after the conversion the file holds XLA tensors."""

from tests.helpers import findings

CODE = """
import torch
from copy import deepcopy
from torch import nn

device = torch.device("cuda")
model = nn.Linear(4, 1).to(device)
ema = ModelEMA(model) if RANK in {-1, 0} else None
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        opt.step()
    ckpt = {"epoch": epoch, "model": SAVED}
    torch.save(ckpt, "last.pt")
"""


def test_a_copy_of_a_module_on_the_device_is_still_on_it():
    for saved in ("deepcopy(model).half()", "deepcopy(ema.ema).half()", "ema.ema"):
        (f,) = findings(CODE.replace("SAVED", saved), "XLA108")
        assert f"holding the module `{saved}`" in f.message, saved


def test_a_cpu_copy_or_an_unmoved_module_is_not():
    assert findings(CODE.replace("SAVED", "deepcopy(model).cpu()"), "XLA108") == []
    unmoved = CODE.replace("nn.Linear(4, 1).to(device)", "nn.Linear(4, 1)").replace(
        "SAVED", "deepcopy(ema.ema).half()"
    )
    assert [f for f in findings(unmoved, "XLA108") if "holding the module" in f.message] == []
