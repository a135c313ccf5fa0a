"""Held-out 108 (awesome-semantic-segmentation-pytorch): a loop that moves each batch on to
``self.device``, which the safe fixes leave CPU or CUDA, gets its loader wrap for review: the
wrapped loader would copy every batch to the XLA device and the loop back off it."""

from __future__ import annotations

from tests.helpers import findings, src

TRAINER = src("""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, data):
        self.device = DEVICE
        self.model = model.to(self.device)
        self.loader = DataLoader(data, batch_size=2)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self):
        for images, targets in self.loader:
            images = images.to(self.device)
            targets = targets.to(self.device)
            loss = (self.model(images) - targets).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


dist.init_process_group("xla")
""")


def test_batches_moved_on_to_a_device_left_off_xla_make_the_wrap_wait_for_review():
    (f,) = findings(TRAINER.replace("DEVICE", 'torch.device("cpu")'), "XLA106")
    assert f.fix is not None and not f.fix.safe
    assert "moves each batch on to `self.device`" in f.fix.review_reason


def test_batches_moved_on_to_the_xla_device_keep_the_wrap_safe():
    (f,) = findings(TRAINER.replace("DEVICE", 'torch.device("cuda")'), "XLA106")
    assert f.fix is not None and f.fix.safe, f.fix.review_reason
