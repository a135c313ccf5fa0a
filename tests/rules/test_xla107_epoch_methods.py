"""A method of a project class that loops over the batches and steps in each
(voxceleb_trainer's ``ModelTrainer.train_network``, held-out 103) is an epoch method: the
script's loop around ``trainer.train_network(loader)`` runs epochs, and a sync there would
leave the graph growing for a whole epoch. The missing sync is named at the call, in the
method's loop (XLA118), and the script's own prints of the floats it returns are no reads."""

from pathlib import Path

from xla_lens.engine import analyze

from tests.helpers import src

TRAINER = """
import torch


class ModelTrainer:
    def __init__(self, model, lr):
        self.model = model.cuda()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)

    def train_network(self, loader):
        total = 0.0
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x.cuda()), y.cuda())
            loss.backward()
            self.optimizer.step()
            total += loss.detach().cpu().item()
        return total / len(loader)
"""

SCRIPT = """
import torch
from trainer import ModelTrainer

trainer = ModelTrainer(torch.nn.Linear(4, 1), 0.1)
for epoch in range(3):
    loss = trainer.train_network(loader)
    print(f"epoch {epoch} loss {loss:f}")
"""


def _analyze(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "trainer.py").write_text(src(TRAINER))
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT))
    result = analyze(script.read_text(), str(script))
    assert not result.rule_errors
    return result.findings


def test_the_epoch_loop_around_an_epoch_method_gets_no_sync(tmp_path: Path):
    found = _analyze(tmp_path)
    assert [f for f in found if f.code in ("XLA107", "XLA401")] == []
    (helper,) = [f for f in found if f.code == "XLA118" and "train_network" in f.message]
    assert "line 11: training loop never marks the step" in helper.message
