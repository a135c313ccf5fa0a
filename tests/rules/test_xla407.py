"""XLA407: a per-device loader built once and iterated in every epoch (held-out 49's
already-XLA control): exhausted after the first pass, so later epochs get no batches.
Proven by running: the original trains one epoch's steps, the reviewed fix every epoch's."""

import os
import subprocess
import sys

import pytest

from tests.helpers import findings, fixed, src

CODE = """
import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset

device = torch_xla.device()
torch.manual_seed(0)
model = torch.nn.Linear(3, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 3), torch.randn(64, 1)), batch_size=16)
loader = pl.ParallelLoader(loader, [device]).per_device_loader(device)
steps = 0
for epoch in range(3):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
print("steps", steps)
"""


def test_a_per_device_loader_reused_across_epochs_is_reported_with_a_review_fix():
    (f,) = findings(CODE, "XLA407")
    assert "exhausted after one pass" in f.message and "the loop on line 13" in f.message
    assert f.fix is not None and not f.fix.safe
    assert fixed(CODE, "XLA407") == src(CODE)
    out = fixed(CODE, "XLA407", unsafe=True)
    assert "loader = pl.MpDeviceLoader(loader, device)" in out


def test_built_inside_the_epoch_loop_or_iterated_once_is_quiet():
    inside = (
        CODE.replace("loader = pl.ParallelLoader(loader, [device]).per_device_loader(device)\n", "")
        .replace(
            "for epoch in range(3):\n",
            "for epoch in range(3):\n"
            "    per_device = pl.ParallelLoader(loader, [device]).per_device_loader(device)\n",
        )
        .replace("for x, y in loader:", "for x, y in per_device:")
    )
    assert findings(inside, "XLA407") == []
    once = CODE.replace("for epoch in range(3):\n", "if True:\n")
    assert findings(once, "XLA407") == []


@pytest.mark.xla
def test_the_reviewed_fix_trains_every_epoch(tmp_path):
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONWARNINGS": "ignore"}
    counts = []
    for text in (src(CODE), fixed(CODE, "XLA407", unsafe=True)):
        script = tmp_path / "train.py"
        script.write_text(text, encoding="utf-8")
        run = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
        )
        assert run.returncode == 0, run.stderr[-2000:]
        counts.append(int(run.stdout.split("steps")[-1]))
    assert counts == [4, 12]
