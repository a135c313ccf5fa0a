"""XLA109: the model moves inside a method of the object that holds it (held-out 135,
ssl_methods: ``trainer = Trainer(cfg, model, ema_model, optimizer)`` keeps ``self.model =
model`` through ``super().__init__``; ``trainer._set_device(device)`` runs ``self.model =
self.model.to(device)``), after the optimizer was built from ``model.parameters()``."""

from pathlib import Path

import pytest
from xla_lens.engine import analyze
from xla_lens.semantic import workspace, workspace_calls, workspace_classes

from tests.helpers import findings, src

HOLDER = """
import torch


class Base:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model

    def set_device(self, device):
        self.model = self.model.to(device)


class Trainer(Base):
    def __init__(self, cfg, model, optimizer):
        super().__init__(cfg, model)
        self.optimizer = optimizer

    def step(self, x):
        loss = self.model(x).sum()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
"""

MAIN = """
def main(cfg):
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = Trainer(cfg, model, optimizer)
    trainer.set_device(device)
    for _ in range(3):
        trainer.step(torch.randn(2, 4, device=device))
"""


@pytest.fixture(autouse=True)
def _fresh_caches():
    workspace_calls.clear_cache()
    workspace.clear_cache()
    workspace_classes.clear_cache()
    yield


def test_a_move_in_a_method_of_the_holder_makes_the_optimizer_stale():
    (f,) = findings(HOLDER + MAIN, "XLA109")
    assert f.fix is None and "before `trainer.set_device(device)`" in f.message
    assert "move `model` to the device before building the optimizer" in f.manual
    # Convert must not move the device alone: the optimizer would step stale copies.
    device = [d for d in findings(HOLDER + MAIN, "XLA101") if d.fix is not None]
    assert device and not any(d.fix.safe for d in device)


def test_a_model_moved_before_the_optimizer_is_not_stale():
    moved = MAIN.replace("torch.nn.Linear(4, 1)", "torch.nn.Linear(4, 1).to(device)")
    assert findings(HOLDER + moved, "XLA109") == []
    # A method that moves something else of the holder is no move of the model.
    other = HOLDER.replace("self.model = self.model.to(device)", "self.buf = self.cfg.to(device)")
    assert findings(other + MAIN, "XLA109") == []


def test_the_holder_class_of_a_workspace_module(tmp_path: Path):
    (tmp_path / "meanteacher.py").write_text(src(HOLDER), encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text("import torch\nfrom meanteacher import Trainer\n" + src(MAIN), "utf-8")
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA109"]
    assert "(in meanteacher.py:10)" in f.message and f.fix is None
