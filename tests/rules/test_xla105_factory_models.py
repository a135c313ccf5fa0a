"""A training loop whose model comes from a workspace factory that picks its class by an
option (KAIR's ``model = define_Model(opt)``, importing ``ModelPlain``/``ModelGAN``... inside
the function, held-out 31; CycleGAN's ``create_model(opt)``): the loop calls
``model.optimize_parameters()``, whose optimizer step is in the class's file. The loop was
not seen as a training loop: no sync, no step finding."""

from pathlib import Path

from xla_lens.engine import analyze

from tests.helpers import src

SELECT = """
def define_model(opt):
    kind = opt["model"]
    if kind == "plain":
        from models.plain import PlainModel as M
    elif kind == "gan":
        from models.gan import GanModel as M
    else:
        raise NotImplementedError(kind)
    m = M(opt)
    print("created", m)
    return m
"""

PLAIN = """
import torch


class PlainModel:
    def __init__(self, opt):
        self.net = torch.nn.Linear(4, 1).to("cuda")
        self.G_optimizer = torch.optim.Adam(self.net.parameters())

    def feed_data(self, batch):
        self.x = batch.to("cuda")

    def optimize_parameters(self, step):
        self.G_optimizer.zero_grad()
        loss = self.net(self.x).pow(2).mean()
        loss.backward()
        self.G_optimizer.step()
"""

GAN = """
import torch


class GanModel:
    def __init__(self, opt):
        self.net = torch.nn.Linear(4, 1).to("cuda")

    def feed_data(self, batch):
        self.x = batch.to("cuda")

    def optimize_parameters(self, step):
        return self.net(self.x).sum()
"""

MAIN = """
import torch
from models.select_model import define_model

opt = {"model": "plain"}
model = define_model(opt)
loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8)
for epoch in range(3):
    for i, batch in enumerate(loader):
        model.feed_data(batch)
        model.optimize_parameters(i)
"""


def _workspace(tmp_path: Path, select: str = SELECT) -> list:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "select_model.py").write_text(src(select))
    (tmp_path / "models" / "plain.py").write_text(src(PLAIN))
    (tmp_path / "models" / "gan.py").write_text(src(GAN))
    script = tmp_path / "train.py"
    script.write_text(src(MAIN))
    return analyze(script.read_text(), str(script)).findings


def test_the_batch_loop_over_a_factory_model_is_the_training_loop(tmp_path: Path) -> None:
    found = _workspace(tmp_path)
    assert [f.span.start.line for f in found if f.code == "XLA107"] == [7]
    (step,) = [f for f in found if f.code == "XLA105"]
    assert "`self.G_optimizer.step()` of `PlainModel`" in step.message
    assert "GanModel" not in step.message  # its method steps nothing


def test_a_factory_returning_something_unseen_proves_nothing(tmp_path: Path) -> None:
    unseen = SELECT.replace(
        "        raise NotImplementedError(kind)",
        "        from external_lib import Other as M",
    )
    found = _workspace(tmp_path, unseen)
    assert not [f for f in found if f.code in ("XLA105", "XLA107")]
