"""XLA102's autocast fix when a module of the project keeps a region in fp32 by switching
CUDA autocast off (held-out 87, DeLA's ``@autocast(False)`` on ``calc_pwd``, the pairwise
distances of its kNN search): that switch names CUDA autocast only, so under
``torch.autocast("xla")`` the region ran in bfloat16 (three neighbours in four changed,
nothing raised). The script's fix waits for review and names the switch."""

from __future__ import annotations

from pathlib import Path

import pytest
from xla_lens.engine import analyze

from tests.helpers import src

pytestmark = pytest.mark.usefixtures("fresh_workspace_caches")

MODEL = """
import torch
import torch.nn as nn
from torch.cuda.amp import autocast


SWITCH
def calc_pwd(x):
    x2 = x.square().sum(dim=2, keepdim=True)
    return x2 + x2.transpose(1, 2) + torch.bmm(x, x.transpose(1, 2).mul(-2))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x) + calc_pwd(x).mean()
"""

TRAIN = """
import torch
from torch.cuda.amp import autocast, GradScaler
from model import Net


def main(loader):
    net = Net().cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x in loader:
        with autocast():
            loss = net(x.cuda()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def _autocast_fix(tmp_path: Path, switch: str):
    (tmp_path / "model.py").write_text(src(MODEL).replace("SWITCH", switch), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(src(TRAIN), encoding="utf-8")
    result = analyze(script.read_text(), str(script))
    (f,) = [f for f in result.findings if f.code == "XLA102" and f.fix is not None]
    return f.fix


@pytest.mark.parametrize(
    "switch", ["@autocast(False)", "@autocast(enabled=False)", "@torch.cuda.amp.custom_fwd()"]
)
def test_a_sibling_fp32_region_makes_the_autocast_fix_wait_for_review(tmp_path, switch):
    fix = _autocast_fix(tmp_path, switch)
    assert not fix.safe
    assert f"model.py line 6 `{switch}`" in fix.review_reason
    assert 'torch.autocast("xla", enabled=False)' in fix.review_reason


def test_without_such_a_region_the_fix_stays_safe(tmp_path):
    assert _autocast_fix(tmp_path, "").safe
