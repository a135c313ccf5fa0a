"""XLA109 and optimizers a helper builds, steps and drops: leimao's QAT script (held-out 129)
calls ``train_model(model, ...)``, which moves the model, builds SGD and trains, then moves the
model back with ``model.to(cpu_device)`` (``torch.device("cpu:0")``) for int8 conversion. The
safe reorder put that move before the training call, so ``torch.quantization.convert`` ran on
device tensors and failed. An optimizer that does not outlive its function cannot go stale by a
later move, and a move to a CPU device under a name is no move onto the device."""

import pytest

from tests.helpers import findings, fixed, src

QAT = """
import torch
from torch import optim


def train_model(model, loader, device):
    model.to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[100])
    for x in loader:
        optimizer.zero_grad()
        model(x.to(device)).sum().backward()
        optimizer.step()
        scheduler.step()
    HANDS_OUT


cuda_device = torch.device("cuda:0")
cpu_device = torch.device("cpu:0")
model = torch.nn.Linear(2, 2)
train_model(model, [], cuda_device)
model.to(MOVE_TO)
quantized = torch.quantization.convert(model, inplace=True)
"""


def _code(hands_out: str, move_to: str) -> str:
    return src(QAT).replace("HANDS_OUT", hands_out).replace("MOVE_TO", move_to)


def test_an_optimizer_built_stepped_and_dropped_by_a_helper_is_no_stale_build():
    code = _code("return model", "cuda_device")
    assert findings(code, "XLA109") == []
    assert "train_model(model, [], cuda_device)\nmodel.to(" in fixed(code)


@pytest.mark.parametrize(
    "hands_out",
    [
        "return optimizer",
        "return scheduler",
        "OPTIMIZERS.append(optimizer)",
        "model.opt = optimizer",
    ],
)
def test_an_optimizer_that_outlives_the_helper_still_is(hands_out):
    code = _code(hands_out, "cuda_device")
    assert [f.code for f in findings(code, "XLA109")] == ["XLA109"]


def test_a_move_to_a_cpu_device_under_a_name_is_no_move():
    code = _code("return optimizer", "cpu_device")
    assert findings(code, "XLA109") == []
