"""XLA402: the training DataLoader built here, iterated by a training loop in a sibling module
(held-out 17, 3D-ResNets: ``train_epoch`` in training.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

LOOP = """
def train_one(loader, net, sgd, device):
    for x, y in loader:
        loss = net(x.to(device)).sum() + y.to(device).sum()
        sgd.zero_grad()
        loss.backward()
        sgd.step()

def evaluate(loader, net):
    for x, _ in loader:
        net(x)
"""

SCRIPT = """
import torch
from loop import train_one, evaluate

def make_loaders(bs):
    ds = torch.utils.data.TensorDataset(torch.randn(10, 4), torch.randn(10))
    train_loader = torch.utils.data.DataLoader(ds, batch_size=bs, shuffle=True)
    val_loader = torch.utils.data.DataLoader(ds, batch_size=bs)
    return train_loader, val_loader

def main(net, sgd, device):
    train_loader, val_loader = make_loaders(4)
    for _ in range(2):
        train_one(train_loader, net, sgd, device)
        evaluate(val_loader, net)
"""


@pytest.fixture(autouse=True)
def _siblings(fresh_workspace_caches):
    yield


def test_loader_fed_to_a_sibling_training_loop_gets_drop_last(tmp_path: Path) -> None:
    (tmp_path / "loop.py").write_text(src(LOOP), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT), encoding="utf-8")
    found = [f for f in analyze(script.read_text(), str(script)).findings if f.code == "XLA402"]
    # The training loader only: the evaluation loop calls no backward().
    assert [f.span.start.line + 1 for f in found] == [6]
    assert found[0].fix is not None and not found[0].fix.safe


def test_without_the_sibling_nothing_is_claimed(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT), encoding="utf-8")
    found = [f for f in analyze(script.read_text(), str(script)).findings if f.code == "XLA402"]
    assert found == []


HELPERS = """
import torch

def get_training_dataloader(batch_size):
    ds = torch.utils.data.TensorDataset(torch.randn(10, 4), torch.randn(10))
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True)

def get_test_dataloader(batch_size):
    ds = torch.utils.data.TensorDataset(torch.randn(10, 4), torch.randn(10))
    return torch.utils.data.DataLoader(ds, batch_size=batch_size)
"""

TRAIN = """
import torch
from helpers import get_training_dataloader, get_test_dataloader

net = torch.nn.Linear(4, 1)
sgd = torch.optim.SGD(net.parameters(), lr=0.1)
training_loader = get_training_dataloader(4)
test_loader = get_test_dataloader(4)

def train(epoch):
    for batch_index, (x, y) in enumerate(training_loader):
        loss = (net(x).squeeze(1) - y).pow(2).mean()
        sgd.zero_grad()
        loss.backward()
        sgd.step()

for epoch in range(2):
    train(epoch)
"""


def test_a_loader_a_helper_returns_to_a_sibling_training_loop(tmp_path: Path) -> None:
    # held-out 16 (pytorch-cifar100): built in utils.py, iterated in train.py.
    helpers = tmp_path / "helpers.py"
    helpers.write_text(src(HELPERS), encoding="utf-8")
    (tmp_path / "train.py").write_text(src(TRAIN), encoding="utf-8")
    found = [f for f in analyze(helpers.read_text(), str(helpers)).findings if f.code == "XLA402"]
    assert [f.span.start.line + 1 for f in found] == [5]


PAIR = """
import torch

def get_loader(bs):
    ds = torch.utils.data.TensorDataset(torch.randn(10, 4), torch.randn(10))
    train_loader = torch.utils.data.DataLoader(ds, batch_size=bs, shuffle=True)
    test_loader = torch.utils.data.DataLoader(ds, batch_size=bs)
    return train_loader, test_loader
"""

PAIR_TRAIN = """
import torch
from tqdm import tqdm
from utils.data import get_loader

net = torch.nn.Linear(4, 1)
sgd = torch.optim.SGD(net.parameters(), lr=0.1)

def valid(test_loader):
    epoch_iterator = tqdm(test_loader)
    for x, y in epoch_iterator:
        print(net(x).sum().item())

def train():
    train_loader, test_loader = get_loader(4)
    epoch_iterator = tqdm(train_loader, desc="Training")
    for step, (x, y) in enumerate(epoch_iterator):
        loss = (net(x).squeeze(1) - y).pow(2).mean()
        sgd.zero_grad()
        loss.backward()
        sgd.step()
    valid(test_loader)
"""


def test_the_element_of_a_returned_pair_a_sibling_trains_on(tmp_path: Path) -> None:
    # held-out 20 (ViT-pytorch): utils/ has no __init__.py (a namespace package imported from
    # the folder above); get_loader returns (train_loader, test_loader); the training loop
    # iterates `epoch_iterator = tqdm(train_loader, ...)`. Only the training loader is asked
    # for drop_last, not the test loader of the pair.
    (tmp_path / "utils").mkdir()
    helpers = tmp_path / "utils" / "data.py"
    helpers.write_text(src(PAIR), encoding="utf-8")
    (tmp_path / "train.py").write_text(src(PAIR_TRAIN), encoding="utf-8")
    found = [f for f in analyze(helpers.read_text(), str(helpers)).findings if f.code == "XLA402"]
    assert [f.span.start.line + 1 for f in found] == [5]
