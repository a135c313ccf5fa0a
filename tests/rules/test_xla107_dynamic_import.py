"""``xm = importlib.import_module("torch_xla.core.xla_model")`` binds ``xm`` like an import
(held-out 68's Diff-VocSep TPU entry): its ``xm.mark_step()`` marks the step, so XLA107 adds
no second sync. A name bound from another module, or also otherwise, is not that."""

from tests.helpers import findings

LOOP = """
import importlib

import torch


def train(model, loader, opt):
    xm = importlib.import_module("torch_xla.core.xla_model")
    device = xm.xla_device()
    model.to(device)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        xm.mark_step()
"""


def test_a_mark_step_through_importlib_marks_the_step():
    assert findings(LOOP, "XLA107") == []


def test_another_module_imported_that_way_is_no_sync():
    other = LOOP.replace('"torch_xla.core.xla_model"', '"my_helpers"')
    assert len(findings(other, "XLA107")) == 1
