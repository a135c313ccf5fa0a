"""XLA107 on a loop that calls a method of a workspace class's instance which runs the whole
step with the optimizer the loop hands it (held-out 78, KnowledgeGraphEmbedding:
``log = kge_model.train_step(kge_model, optimizer, train_iterator, args)``, a static method
of ``KGEModel`` in model.py): the loop is the training-step loop and gets its sync."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze, fix_source

from tests.helpers import src

MODEL = """
import torch


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.lin(x)

    @staticmethod
    def train_step(model, optimizer, batches):
        optimizer.zero_grad()
        x = next(batches)
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        return {"loss": loss.item()}

    def describe(self):
        return "scorer"
"""

SCRIPT = """
import torch
from model import Scorer


def batches():
    while True:
        yield torch.randn(8, 4)


scorer = Scorer()
optimizer = torch.optim.Adam(scorer.parameters(), lr=0.01)
stream = batches()
logs = []
for step in range(100):
    log = scorer.train_step(scorer, optimizer, stream)
    logs.append(log)
for step in range(3):
    print(scorer.describe())
"""

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")


def test_the_loop_calling_the_instance_step_gets_the_sync(tmp_path: Path):
    (tmp_path / "model.py").write_text(src(MODEL))
    script = tmp_path / "train.py"
    text = src(SCRIPT)
    script.write_text(text)
    found = [f for f in analyze(text, path=str(script)).findings if f.code == "XLA107"]
    assert [f.span.start.line + 1 for f in found] == [14]  # the step loop, not the other
    out = fix_source(text, path=str(script), accept=lambda f: f.code == "XLA107").source
    assert "    logs.append(log)\n    torch_xla.sync()\n" in out


def test_without_the_sibling_module_nothing_is_claimed(tmp_path: Path):
    script = tmp_path / "train.py"
    text = src(SCRIPT)
    script.write_text(text)
    assert [f for f in analyze(text, path=str(script)).findings if f.code == "XLA107"] == []
