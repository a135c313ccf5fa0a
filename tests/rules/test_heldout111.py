"""Held-out 111 (Torch-Pruning's reproduce/main.py): ``train_model(model, ...)`` builds its
optimizer before ``model.to(device)``, but every call hands it a model the caller moved to a
device already; a move onto the device a model is on keeps its Parameters (measured on PJRT
CPU: the same objects after a second ``.to(xla)``, new ones after ``.to(xla)`` from the CPU),
so "never trains" holds only if the devices differ: a warning that says so, not an error."""

from __future__ import annotations

from xla_lens.rules.base import Severity

from tests.helpers import findings, src

PRUNING = src("""
import torch


def train_model(model, epochs, device=None):
    if device is None:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to(device)
    for epoch in range(epochs):
        loss = model(torch.randn(2, 4, device=device)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(device):
    model = torch.nn.Linear(4, 2)
    model = model.to(device)
    train_model(model, 3, device=device)
""")


def test_a_model_every_caller_moved_first_gets_a_warning_that_says_so():
    (f,) = findings(PRUNING, "XLA109")
    assert f.severity == Severity.WARNING
    assert "every call in this file hands it a model moved to a device first (line 18)" in f.message
    assert f.fix is not None


def test_a_caller_that_does_not_move_it_keeps_the_error():
    text = PRUNING.replace("    model = model.to(device)\n", "")
    (f,) = findings(text, "XLA109")
    assert f.severity == Severity.ERROR
    assert "unless" not in f.message


def test_a_caller_that_binds_the_name_again_after_the_move_keeps_the_error():
    text = PRUNING.replace(
        "    train_model(model, 3, device=device)\n",
        "    model = torch.nn.Linear(4, 2)\n    train_model(model, 3, device=device)\n",
    )
    (f,) = findings(text, "XLA109")
    assert f.severity == Severity.ERROR
