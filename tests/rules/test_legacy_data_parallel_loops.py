"""torch_xla's old ``DataParallel`` (``dp.DataParallel(net, device_ids=devices)`` then
``model(train_loop_fn, loader)``) hands the loop function a ParallelLoader's per-device loader
that syncs every step and yields ``(step, batch)`` (held-out 85's fashion-kaggle control): the
step index is a Python int, and the loop is not one that "nothing syncs"."""

import pytest

from tests.helpers import findings, src

SCRIPT = src("""
import logging
import torch
import torch.nn as nn
import torch.utils.data as D
import torch_xla.core.xla_model as xm
import torch_xla.distributed.data_parallel as dp


def train_loop_fn(model, loader, device, context):
    loss_fn = nn.CrossEntropyLoss()
    optimizer = context.getattr_or("optimizer", lambda: torch.optim.SGD(model.parameters(), 0.1))
    for x, (data, target) in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        xm.optimizer_step(optimizer)
        if x % 10 == 0:
            logging.info("[{}]({}) step".format(device, x))


def main(devices, ds):
    model = dp.DataParallel(nn.Linear(4, 3), device_ids=devices)
    loader = D.DataLoader(ds, batch_size=8, drop_last=True)
    for epoch in range(3):
        model(train_loop_fn, loader)
""")


@pytest.mark.parametrize(
    "module", ["torch_xla.distributed.data_parallel", "torch_xla_py.data_parallel"]
)
def test_the_step_index_is_a_python_int(module):
    # torch_xla_py: the first releases' name (held-out 87, allenai's tpu_pretrain).
    code = SCRIPT.replace("torch_xla.distributed.data_parallel", module)
    assert findings(code, "XLA404") == []
    assert findings(code, "XLA401") == []


def test_the_per_device_loader_syncs_every_step():
    assert findings(SCRIPT, "XLA107") == []
