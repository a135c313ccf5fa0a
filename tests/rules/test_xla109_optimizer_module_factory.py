"""A trainer that builds its optimizer through a factory handed ``torch.optim`` and the
parameters (held-out 152's DBNet: ``self._initialize('optimizer', torch.optim,
model.parameters())``, whose helper returns ``getattr(module, config_type)(*args)``), then moves
the model with ``self.model.to(self.device)``: on XLA the move makes new Parameters and the
optimizer keeps the old ones, so nothing trains."""

from tests.helpers import findings, src

TRAINER = src("""
import torch


class Trainer:
    def __init__(self, config, model):
        self.config = config
        self.model = model
        self.device = torch.device("cuda")
        self.optimizer = self._initialize("optimizer", torch.optim, model.parameters())
        self.model.to(self.device)

    def _initialize(self, name, module, *args, **kwargs):
        return getattr(module, self.config[name]["type"])(*args, **self.config[name]["args"])
""")


def test_the_factory_built_optimizer_before_the_move_is_reported():
    (found,) = findings(TRAINER, "XLA109")
    assert found.span.start.line == 8
    assert "before `self.model.to(self.device)` (line 10)" in found.message
    assert found.fix is not None


def test_a_factory_handed_another_module_is_no_optimizer():
    code = TRAINER.replace("torch.optim, model", "torch.nn, model")
    assert not findings(code, "XLA109")
