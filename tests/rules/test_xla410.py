"""XLA410: a module caching its own parameters in a plain list in ``__init__`` (held-out 89,
pt.darts' ``SearchCNNController._alphas``), moved to the XLA device: the move replaces every
Parameter, the list keeps the CPU ones (checked below on the installed torch_xla)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import findings, src

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")

MODEL = """
import torch
import torch.nn as nn


class Controller(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = nn.ParameterList([nn.Parameter(torch.zeros(3))])
        self.net = nn.Linear(3, 3)
        CACHE

    def alphas(self):
        for n, p in self._alphas:
            yield p
"""

LOOP_CACHE = (
    "self._alphas = []\n"
    "        for n, p in self.named_parameters():\n"
    '            if "alpha" in n:\n'
    "                self._alphas.append((n, p))"
)

SCRIPT = """
import torch
MODEL_IMPORT

device = torch.device("cuda")
model = Controller()
model = model.to(device)
alpha_optim = torch.optim.Adam(model.alphas(), 3e-4)
w_optim = torch.optim.SGD(model.net.parameters(), 0.1)
for step in range(3):
    x = torch.randn(2, 3, device=device)
    loss = (model.net(x) * model.alpha[0]).sum()
    w_optim.zero_grad()
    alpha_optim.zero_grad()
    loss.backward()
    w_optim.step()
    alpha_optim.step()
"""


def _xla410(code: str) -> list:
    return [f for f in findings(code, "XLA410")]


def test_a_cached_parameter_list_in_the_scripts_class_is_reported_at_the_move():
    code = src(MODEL).replace("CACHE", LOOP_CACHE) + src(SCRIPT).replace("MODEL_IMPORT", "")
    (f,) = _xla410(code)
    assert "`self._alphas` of Controller" in f.message and "`alphas()`" in f.message
    assert f.fix is None and f.severity.name == "ERROR"
    assert "model = model.to(device)" in code.splitlines()[f.span.start.line]


@pytest.mark.parametrize(
    "cache",
    [
        "self._alphas = [(n, p) for n, p in self.named_parameters()]",
        "self._alphas = list(self.named_parameters())",
    ],
)
def test_comprehensions_and_list_calls_count_too(cache):
    code = src(MODEL).replace("CACHE", cache) + src(SCRIPT).replace("MODEL_IMPORT", "")
    assert len(_xla410(code)) == 1


@pytest.mark.parametrize(
    "cache",
    [
        "self._alphas = nn.ParameterList(self.alpha)",  # registered: moves with the module
        "self._names = [n for n, _ in self.named_parameters()]",  # never read by a method
    ],
)
def test_registered_or_unread_containers_are_not_reported(cache):
    code = src(MODEL).replace("CACHE", cache) + src(SCRIPT).replace("MODEL_IMPORT", "")
    assert _xla410(code) == []


def test_a_class_of_another_file_of_the_project_is_followed(tmp_path: Path):
    (tmp_path / "search_cnn.py").write_text(src(MODEL).replace("CACHE", LOOP_CACHE))
    script = tmp_path / "search.py"
    script.write_text(src(SCRIPT).replace("MODEL_IMPORT", "from search_cnn import Controller"))
    found = [f for f in analyze(script.read_text(), str(script)).findings if f.code == "XLA410"]
    (f,) = found
    assert "(search_cnn.py:10)" in f.message


def test_the_move_replaces_the_parameters_on_xla_and_not_on_the_cpu(tmp_path):
    code = (
        src(MODEL).replace("CACHE", LOOP_CACHE) + "\nimport torch_xla\n"
        "m = Controller()\n"
        "first = next(m.alphas())\n"
        "print(first is m.alpha[0])\n"
        "m = m.to(torch_xla.device())\n"
        "print(next(m.alphas()) is m.alpha[0], next(m.alphas()).device.type)\n"
    )
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "cpu"]
