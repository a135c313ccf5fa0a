"""Callers in other files found through a chain of this file's functions (Chinese-CLIP,
held-out 84: ``get_loss`` asks ``dist.get_rank()``, ``train`` calls it, and main.py imports
``train`` after ``init_process_group``) and through a package that re-exports the function
(TransReID, held-out 83: ``from processor import do_train`` with ``processor/__init__.py``
saying ``from .processor import do_train``; the optimizer built by a helper of another
module before ``do_train`` moves the model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")

LOSSES = """
import torch
import torch.distributed as dist


def get_loss(model, images, texts, args):
    feats = model(images, texts)
    if args.aggregate:
        world_size = dist.get_world_size()
        rank = dist.get_rank()
        feats = feats * world_size + rank
    return feats.pow(2).mean()


def train(model, data, optimizer, args):
    model.train()
    for images, texts in data:
        loss = get_loss(model, images, texts, args)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

MAIN = """
import torch
import torch.distributed as dist
from training.train import train


def main(args, model, data):
    GROUP
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for epoch in range(args.epochs):
        train(model, data, optimizer, args)


if __name__ == "__main__":
    main(None, None, None)
"""


def _xla202(tmp_path: Path, group: str) -> list:
    pkg = tmp_path / "training"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    module = pkg / "train.py"
    module.write_text(src(LOSSES), encoding="utf-8")
    (tmp_path / "main.py").write_text(src(MAIN).replace("GROUP", group), encoding="utf-8")
    result = analyze(module.read_text(), str(module))
    assert not result.rule_errors
    return [f for f in result.findings if f.code == "XLA202"]


def test_rank_queries_reached_from_a_caller_that_builds_the_group_are_fine(tmp_path: Path):
    assert _xla202(tmp_path, 'dist.init_process_group(backend="nccl")') == []


def test_without_the_group_in_the_caller_the_queries_wait_for_review(tmp_path: Path):
    found = _xla202(tmp_path, "pass")
    assert len(found) == 2
    assert all(f.fix is not None and not f.fix.safe for f in found)


PROCESSOR = """
import torch


def do_train(cfg, model, train_loader, optimizer, local_rank):
    model.to(local_rank)
    for epoch in range(cfg.epochs):
        for img, target in train_loader:
            img, target = img.to(local_rank), target.to(local_rank)
            loss = torch.nn.functional.cross_entropy(model(img), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

SOLVER = """
import torch


def make_optimizer(cfg, model):
    return torch.optim.SGD(model.parameters(), lr=cfg.lr)
"""

TRAIN = """
import torch
from processor import do_train
from solver import make_optimizer


def main(cfg, model, train_loader):
    optimizer = make_optimizer(cfg, model)
    do_train(cfg, model, train_loader, optimizer, 0)


if __name__ == "__main__":
    main(None, None, None)
"""


def test_a_caller_through_a_package_reexport_is_found(tmp_path: Path):
    pkg = tmp_path / "processor"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .processor import do_train\n", encoding="utf-8")
    module = pkg / "processor.py"
    module.write_text(src(PROCESSOR), encoding="utf-8")
    (tmp_path / "solver.py").write_text(src(SOLVER), encoding="utf-8")
    (tmp_path / "train.py").write_text(src(TRAIN), encoding="utf-8")
    result = analyze(module.read_text(), str(module))
    (f,) = [f for f in result.findings if f.code == "XLA109"]
    assert "after its caller built an optimizer" in f.message and "(train.py:7)" in f.message
    assert "no caller in this workspace" not in f.message
