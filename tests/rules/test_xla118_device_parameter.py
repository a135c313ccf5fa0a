"""A helper's autocast whose device comes from the helper's parameter (held-out 66's
timm-face: ``def autocast(device, dtype): device_type = torch.device(device).type; return
torch.autocast(device_type, ...)`` in train.py) is XLA's autocast for a caller that passes the
XLA device: no "CUDA autocast" finding at that call; a caller passing "cuda" keeps it."""

from pathlib import Path

import pytest
from xla_lens.engine.analysis import analyze

from tests.helpers import src

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")

HELPERS = """
import torch


def autocast(device, dtype):
    device_type = torch.device(device).type
    amp_dtype = dict(bfloat16=torch.bfloat16, none=None)[dtype]
    return torch.autocast(device_type, dtype=amp_dtype, enabled=amp_dtype is not None)
"""

SCRIPT = """
import torch
import torch_xla

from amp_helpers import autocast

device = DEVICE
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    with autocast(device, "bfloat16"):
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync()
"""


def _helper_findings(tmp_path: Path, device: str) -> list:
    (tmp_path / "amp_helpers.py").write_text(src(HELPERS), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(src(SCRIPT.replace("DEVICE", device)), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    return [f for f in result.findings if f.code == "XLA118"]


def test_the_xla_device_passed_to_the_helper_makes_its_autocast_xla(tmp_path: Path):
    assert _helper_findings(tmp_path, "torch_xla.device()") == []


def test_a_cuda_device_passed_to_the_helper_keeps_the_finding(tmp_path: Path):
    (f,) = _helper_findings(tmp_path, '"cuda"')
    assert "autocast" in f.message and "CUDA autocast" in f.message
