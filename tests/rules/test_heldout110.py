"""Held-out 110's control (an MLPerf UNet3D fork already on XLA): its loader helper switches
on ``flags.device`` itself (``if flags.device == "xla": ... elif flags.device == "cuda": ...``);
the CUDA side of that switch is no reason to convert the helper."""

from __future__ import annotations

from xla_lens.engine.analysis import analyze

from tests.helpers import findings, src

LOADERS = src("""
import torch


def get_data_loaders(flags, dataset):
    if flags.device == "xla":
        return torch.utils.data.DataLoader(dataset, batch_size=2)
    elif flags.device == "cuda":
        stream = torch.cuda.Stream()
        return [(x.cuda(non_blocking=True), stream) for x in dataset]
    raise ValueError(flags.device)
""")

MAIN = src("""
import torch
from loaders import get_data_loaders


def main(flags):
    loader = get_data_loaders(flags, list(range(8)))
    return loader
""")


def _xla118(tmp_path, loaders: str) -> list:
    (tmp_path / "loaders.py").write_text(loaders)
    script = tmp_path / "main.py"
    script.write_text(MAIN)
    return [f for f in analyze(MAIN, str(script)).findings if f.code == "XLA118"]


def test_the_cuda_side_of_a_helpers_own_device_switch_is_no_evidence(tmp_path):
    assert _xla118(tmp_path, LOADERS) == []


def test_the_same_cuda_code_without_the_switch_is(tmp_path):
    plain = LOADERS.replace(
        '    if flags.device == "xla":\n        return torch.utils.data.DataLoader(dataset, batch_size=2)\n    elif flags.device == "cuda":\n',
        "    if flags.fast:\n",
    )
    assert [f.code for f in _xla118(tmp_path, plain)] == ["XLA118"]


ZOE = src("""
import torch
from base_trainer import BaseTrainer


class Trainer(BaseTrainer):
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler("cuda")

    def train_on_batch(self, batch):
        loss = self.model(batch).sum()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad()
        return loss
""")


def test_an_amp_step_method_run_by_a_base_class_loop_elsewhere_gets_its_sync():
    """ZoeDepth: ``BaseTrainer.train`` (another module) loops over ``self.train_on_batch``;
    the subclass's method steps through its GradScaler."""
    (f,) = findings(ZOE, "XLA107")
    assert "train_on_batch() runs a whole training step" in f.message
    assert f.fix is not None and not f.fix.safe
