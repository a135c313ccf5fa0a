"""XLA107 on loops whose XLA machinery lives in another module of the project (held-out 90):
resnet18_pytorch_jax_tpu's trainer draws from `create_parallel_loader(loader, device)` (a
`pl.MpDeviceLoader` in utils/tpu_utils.py) and calls `sync_step()` (`xm.mark_step()` there);
mini-sd-scripts hands `accelerator.prepare` the DataLoader its own helper module builds. All
three loops already sync; the tool added a sync and said they never mark the step."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")

TPU_UTILS = """
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def create_parallel_loader(dataloader, device):
    return pl.MpDeviceLoader(dataloader, device)


def sync_step():
    xm.mark_step()


def optimizer_step(optimizer):
    xm.optimizer_step(optimizer)
"""

TRAINER = """
import torch
from tpu_utils import create_parallel_loader, optimizer_step, sync_step


def train_epoch(model, criterion, optimizer, trainloader, device):
    model.train()
    LOADER
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer_step(optimizer)
        SYNC
"""


def _xla107(tmp_path: Path, loader: str, sync: str) -> list:
    (tmp_path / "tpu_utils.py").write_text(src(TPU_UTILS), encoding="utf-8")
    script = tmp_path / "trainer.py"
    code = src(TRAINER).replace("LOADER", loader).replace("SYNC", sync)
    script.write_text(code, encoding="utf-8")
    return [f for f in analyze(code, str(script)).findings if f.code == "XLA107"]


def test_a_loader_a_helper_wraps_in_mp_device_loader_syncs_each_step(tmp_path):
    assert _xla107(tmp_path, "loader = create_parallel_loader(trainloader, device)", "pass") == []


def test_a_helper_that_marks_the_step_is_the_loops_sync(tmp_path):
    assert _xla107(tmp_path, "loader = trainloader", "sync_step()") == []


def test_without_either_the_loop_still_needs_its_sync(tmp_path):
    assert len(_xla107(tmp_path, "loader = trainloader", "pass")) == 1


DATALOADERS = """
from torch.utils.data import DataLoader


def build_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)
"""

ACCELERATED = """
import torch
from accelerate import Accelerator
from dataloaders import build_dataloader


def train(model, dataset):
    accelerator = Accelerator()
    dataloader = build_dataloader(dataset, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    model, dataloader, optimizer = accelerator.prepare(model, dataloader, optimizer)
    for batch in dataloader:
        loss = model(batch).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_helper_built_dataloader_prepared_by_accelerate_syncs_each_step(tmp_path):
    (tmp_path / "dataloaders.py").write_text(src(DATALOADERS), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(src(ACCELERATED), encoding="utf-8")
    found = analyze(script.read_text(), str(script)).findings
    assert [f for f in found if f.code == "XLA107"] == []
