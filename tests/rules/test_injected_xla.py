"""A module handed torch_xla's modules instead of importing them (held-out 82's TPU-Star:
``self.xm = xm`` / ``self.pl = pl`` from the caller, so the package imports it on machines
without torch_xla): it is written for XLA, and no fix may add a module-level torch_xla import."""

from __future__ import annotations

from tests.helpers import findings, fixed

EXPERIMENT = """
import random
import torch


class TPUExperiment:
    def __init__(self, model, optimizer, xm, pl):
        self.model, self.optimizer = model, optimizer
        self.xm = xm
        self.pl = pl

    def train_epoch(self, loader, device):
        for x, y in self.pl.ParallelLoader(loader, [device]).per_device_loader(device):
            loss = self.model(x).sub(y).pow(2).mean()
            loss.backward()
            self.xm.optimizer_step(self.optimizer)

    def save(self, path, metrics):
        self.xm.save(self.model.state_dict(), path)
        torch.save({"metrics": metrics.state_dict()}, path + ".metrics")

    def export(self, path):
        torch.save(self.model.state_dict(), path)

    def seed_everything(self, seed):
        random.seed(seed)
        torch.cuda.manual_seed(seed)
        self.xm.set_rng_state(seed)
"""


def test_no_conversion_findings_and_no_torch_xla_import():
    found = findings(EXPERIMENT)
    codes = {(f.code, f.span.start.line + 1) for f in found}
    assert ("XLA108", 19) not in codes  # beside self.xm.save: the author's choice
    (seed,) = [f for f in found if f.code == "XLA403"]
    assert "seeded on line 27 already" in seed.message and seed.fix.safe
    (export,) = [f for f in found if f.code == "XLA108"]  # no xm.save in that function
    assert not export.fix.safe and "handed torch_xla's modules" in export.fix.review_reason
    out = fixed(EXPERIMENT)
    assert "import torch_xla" not in out
    assert "torch.cuda.manual_seed" not in out and "self.xm.set_rng_state(seed)" in out


def test_torch_save_beside_an_imported_xm_save_is_the_authors_choice():
    text = """
import torch
import torch_xla.core.xla_model as xm


def save(model, metrics, path):
    xm.save(model.state_dict(), path)
    torch.save({"metrics": metrics.state_dict()}, path + ".metrics")


def export(model, path):
    torch.save(model.state_dict(), path)
"""
    found = [f.span.start.line + 1 for f in findings(text, "XLA108")]
    assert found == [11]  # only the save with no xm.save beside it


def test_an_lr_schedulers_state_is_no_checkpoint_of_device_tensors():
    """Held-out 82's BERT-NER: ``torch.save(scheduler.state_dict(), ...)`` holds step counts
    and learning rates; the optimizer's and the model's states still get the finding."""
    text = """
import torch
from transformers import get_linear_schedule_with_warmup

model = torch.nn.Linear(2, 2).cuda()
optimizer = torch.optim.AdamW(model.parameters())
scheduler = get_linear_schedule_with_warmup(optimizer, 10, 100)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
torch.save(scheduler.state_dict(), "scheduler.pt")
torch.save(plateau.state_dict(), "plateau.pt")
torch.save(optimizer.state_dict(), "optimizer.pt")
"""
    assert [f.span.start.line + 1 for f in findings(text, "XLA108")] == [10]
