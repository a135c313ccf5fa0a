"""XLA107 on a loop whose optimizer step is a method inherited from a base class in another
module (held-out 47's spoter2: ``ClassificationTrainer(BaseTrainer)`` loops over batches and
calls ``self.backward_pass(loss)``, which base.py defines as ``scaler.scale(loss).backward();
scaler.step(self.optimizer)``): the loop is a training-step loop and gets its sync."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze, fix_source

from tests.helpers import src

BASE = """
import torch


class BaseTrainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def backward_pass(self, loss):
        loss.backward()
        self.optimizer.step()

    def log(self, value):
        print(value)
"""

SCRIPT = """
import torch
from base import BaseTrainer


class Trainer(BaseTrainer):
    def train_epoch(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.backward_pass(loss)
            self.log("step")

    def validate(self, loader):
        for x, y in loader:
            self.log(self.model(x).sum())
"""

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")


def _write(tmp_path: Path, base: str = BASE) -> Path:
    (tmp_path / "base.py").write_text(src(base), encoding="utf-8")
    script = tmp_path / "trainer.py"
    script.write_text(src(SCRIPT), encoding="utf-8")
    return script


def test_the_loop_calling_an_inherited_step_gets_its_sync(tmp_path: Path):
    script = _write(tmp_path)
    result = analyze(script.read_text(), str(script))
    syncs = [f for f in result.findings if f.code == "XLA107"]
    assert [f.span.start.line + 1 for f in syncs] == [7]  # the training loop only
    out = fix_source(script.read_text(), str(script)).source
    assert '            self.log("step")\n            torch_xla.sync()\n' in out


def test_an_inherited_method_that_steps_nothing_makes_no_training_loop(tmp_path: Path):
    script = _write(
        tmp_path,
        BASE.replace("self.optimizer.step()", "pass").replace("loss.backward()", "print(loss)"),
    )
    result = analyze(script.read_text(), str(script))
    assert [f for f in result.findings if f.code == "XLA107"] == []
