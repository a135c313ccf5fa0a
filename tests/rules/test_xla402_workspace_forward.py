"""XLA402 (and XLA118) through a loss module of another file that the training loop calls
(held-out 24, ssd.pytorch: ``criterion = MultiBoxLoss(...)`` from layers/modules, whose forward
selects with boolean masks, some written as ``x.gt(0)`` or reshaped with ``expand_as``)."""

from xla_lens.engine import analyze

from tests.helpers import findings, src

LOSS = """
import torch
import torch.nn as nn


class BoxLoss(nn.Module):
    def __init__(self, use_gpu):
        super().__init__()
        self.use_gpu = use_gpu

    def forward(self, pred, target):
        t = torch.zeros(pred.shape)
        if self.use_gpu:
            t = t.cuda()
        pos = target > 0
        pos_idx = pos.unsqueeze(2).expand_as(pred)
        sel = pred[pos_idx]
        pred[pos] = 0
        keep = pred[(pos + pos).gt(0)]
        return sel.sum() + keep.sum() + t.sum()
"""

TRAIN = """
import torch
from losses import BoxLoss

net = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
criterion = BoxLoss(True)
for it in range(10):
    x = torch.randn(2, 3, 4).cuda()
    loss = criterion(net(x), torch.randn(2, 3).cuda())
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _findings(tmp_path):
    (tmp_path / "losses.py").write_text(src(LOSS))
    script = tmp_path / "train.py"
    script.write_text(src(TRAIN))
    return analyze(script.read_text(), str(script)).findings


def test_dynamic_ops_in_a_loss_module_of_another_file_are_reported_at_the_call(tmp_path):
    (f,) = [x for x in _findings(tmp_path) if x.code == "XLA402"]
    assert f.span.start.line + 1 == 9  # loss = criterion(...)
    assert "`criterion(...)` runs `BoxLoss.forward` of losses.py every training step" in f.message
    assert "line 16: boolean-mask indexing" in f.message  # through expand_as of a mask
    assert "line 17: boolean-mask assignment" in f.message
    assert "line 18: boolean-mask indexing" in f.message  # (pos + pos).gt(0)
    assert f.fix is None and "masked_fill_" in f.manual


def test_the_loss_modules_cuda_moves_are_pointed_at_from_the_call(tmp_path):
    (f,) = [x for x in _findings(tmp_path) if x.code == "XLA118"]
    assert "criterion() (BoxLoss.forward) runs code in losses.py" in f.message


def test_comparison_methods_make_masks_in_this_file_too():
    code = """
    import torch
    net = torch.nn.Linear(4, 4).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for it in range(10):
        out = net(torch.randn(2, 4).cuda())
        loss = out[out.gt(0)].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """
    (f,) = findings(code, "XLA402")
    assert "boolean-mask indexing" in f.message


AGENT = """
import torch
from torch import optim


class Agent:
    def __init__(self, net):
        self.net = net
        self.optimiser = optim.Adam(net.parameters(), lr=1e-3)

    def learn(self, x, y):
        b = self.net(x)
        l, u = b.floor().long(), b.ceil().long()
        l[(u > 0) * (l == u)] -= 1
        loss = (b - y).pow(2).mean()
        self.optimiser.zero_grad()
        loss.backward()
        self.optimiser.step()


class Env:
    def step(self, a):
        import numpy as np
        obs = np.zeros(4)
        obs[obs > 0] = 1
        return obs
"""

MAIN = """
import torch
from agent import Agent, Env

agent = Agent(torch.nn.Linear(4, 4).to("cuda"))
env = Env()
for t in range(100):
    env.step(0)
    if t % 4 == 0:
        agent.learn(torch.randn(2, 4, device="cuda"), torch.randn(2, 4, device="cuda"))
"""


def test_a_training_step_method_of_another_file_is_read_for_mask_ops(tmp_path):
    # Held-out 25 (Rainbow): `dqn.learn(mem)` in main.py; `self.optimiser` (British spelling)
    # built in the class; `l[(u > 0) * (l == u)] -= 1` in learn.
    (tmp_path / "agent.py").write_text(src(AGENT))
    script = tmp_path / "main.py"
    script.write_text(src(MAIN))
    found = analyze(script.read_text(), str(script)).findings
    (ops,) = [f for f in found if f.code == "XLA402"]
    assert ops.span.start.line + 1 == 9  # agent.learn(...), not env.step(0)
    assert "`agent.learn(...)` runs `Agent.learn` of agent.py" in ops.message
    assert "line 13: boolean-mask assignment" in ops.message
    (step,) = [f for f in found if f.code == "XLA105"]
    assert "`self.optimiser.step()` of `Agent`" in step.message
    assert [f.span.start.line + 1 for f in found if f.code == "XLA107"] == [6]
